#!/bin/sh
# run.sh ARCH - swdeadlock against real deadlocked, spinning and healthy
# programs of one architecture (x86-64, i686 or aarch64); the
# tests/deadlock-ARCH.test scripts call it.
#
# tests/deadlock/victim.c is built for ARCH (x86-64: the host's compiler,
# dynamically linked; i686 and aarch64: the cross compilers, -static) and
# run once per scenario: abba, three, rwlock (a cycle through mutexes and
# an rwlock, and a fourth thread blocked on the rwlock outside the cycle),
# multi (two deadlocks at once: an ABBA pair and a thread relocking its
# own mutex, a cycle of one),
# spin (a thread in an endless loop, one asleep, one blocked in read(),
# one waiting on a mutex whose owner has exited)
# and healthy (four threads sharing a mutex, forever).  The victim prints
# what swdeadlock must find ("expect: ..." lines: the cycle's thread ids
# from the lowest, each waiter's lock kind, address and owner, and some
# threads' classes), then "ready".
#
#  - x86-64 and i686 run natively: `swdeadlock -p PID` on the live
#    process, then `swdeadlock --core` on a core gcore takes of it
#    (deterministic whatever the kernel's core_pattern); the deadlocked
#    scenarios also abort once ready, and the kernel's core is read too
#    where the core_pattern writes one in the working directory.
#  - aarch64 runs under qemu-aarch64, where ptrace cannot see the guest:
#    the victim aborts once ready and qemu writes the core itself
#    (qemu_victim_DATE-PID.core in its working directory), read with
#    `swdeadlock --core CORE --exe VICTIM`.
#  - So does i686 where the kernel cannot exec i386 programs
#    (tests/i386-host.sh): it runs under qemu-i386, its cores are qemu's,
#    and a line says the live runs were not made and why.
#
# Verdicts checked for every run: the exit status (1 with a deadlock, 0
# without), exactly the expected "deadlock:" lines and no other, each
# expected "waits on KIND ADDR held by TID" and each expected class.  Live
# runs sample CPU for a second (--sample 1000) and call a thread busy from
# half a percent of a CPU (--busy 5): the sleeping and blocked threads use
# next to none, and the spinning one gets far more even on a machine
# loaded many times over (a tenth of a CPU, the bound before, failed at
# load 13 on 2 cores); cores have no CPU times, so "busy" is checked
# live only.  The rwlock scenario's core is then damaged in a dozen places
# and cut in half (damage_core): swdeadlock must still exit 0, 1, 2 or 3.
# Everything stays in tests/deadlock-ARCH.d/ when a check fails.
#
# Skips (77) only where a tool is missing (a cross compiler, qemu-aarch64,
# qemu-i386 where i686 programs need it, gcore for the core half) or ptrace
# is not permitted; under CI=true a missing tool fails instead (CI installs
# them).

arch=$1
: "${top_srcdir:=.}" "${top_builddir:=.}"
env_file="$top_builddir/tests/deadlock.env"
[ -f "$env_file" ] && . "$env_file"
: "${DEADLOCK_CC:=gcc}" "${CROSS_CC_I686:=i686-linux-gnu-gcc}"
: "${CROSS_CC_AARCH64:=aarch64-linux-gnu-gcc}" "${QEMU_AARCH64:=qemu-aarch64}"
: "${QEMU_I386:=qemu-i386}" "${GCORE:=gcore}"

swdeadlock="$top_builddir/examples/swdeadlock"
src="$top_srcdir/tests/deadlock/victim.c"
work="$top_builddir/tests/deadlock-$arch.d"
failed=0
checked=0
pids=

cleanup() {
	for p in $pids; do
		kill -KILL "$p" 2>/dev/null
	done
}
trap cleanup EXIT INT TERM

missing() {
	echo "deadlock-$arch: $1"
	[ "$CI" = true ] && exit 1
	exit 77
}

fail() {
	echo "FAIL: $*"
	failed=$((failed + 1))
}

rm -rf "$work"
mkdir -p "$work" || exit 1
work=$(cd "$work" && pwd)

# qemu: the emulator that runs the victim (and writes its cores), if any.
case $arch in
x86-64) cc=$DEADLOCK_CC; extra='' qemu='' ;;
i686) cc=$CROSS_CC_I686; extra=-static qemu='' ;;
aarch64) cc=$CROSS_CC_AARCH64; extra=-static qemu="$QEMU_AARCH64 -cpu max,sve=off"
	command -v "$QEMU_AARCH64" >/dev/null 2>&1 || missing "no $QEMU_AARCH64" ;;
*) echo "usage: run.sh x86-64|i686|aarch64"; exit 1 ;;
esac
command -v "$cc" >/dev/null 2>&1 || missing "no $cc"
if [ "$arch" = i686 ]; then
	i386=$(sh "$top_srcdir/tests/i386-host.sh" "$cc" "$QEMU_I386")
	case $i386 in
	native) ;;
	qemu:*) qemu=$QEMU_I386
		echo "deadlock-i686: ${i386#qemu: }: the live runs (swdeadlock -p, gcore, the kernel's" \
			"core) NOT RUN, ptrace cannot see a program under qemu-i386; qemu-i386's cores instead" ;;
	noexec:*) missing "${i386#noexec: }" ;;
	*) echo "deadlock-i686: ${i386#error: }"; exit 1 ;;
	esac
fi
# shellcheck disable=SC2086 # $extra is meant to split
$cc -O1 -g $extra -pthread -o "$work/victim" "$src" >"$work/victim.build" 2>&1 ||
	{ cat "$work/victim.build"; missing "$cc cannot build the victim"; }

# Check swdeadlock's output $2 (exit status $3) against the victim's expectations $1.
check() {
	expect=$1 out=$2 status=$3 what=$4
	checked=$((checked + 1))
	want=$(grep -c '^expect: deadlock:' "$expect")
	got=$(grep -c '^deadlock:' "$out")
	if [ "$want" -gt 0 ]; then want_status=1; else want_status=0; fi
	[ "$status" = "$want_status" ] || fail "$what: exit status $status, want $want_status"
	[ "$got" = "$want" ] || fail "$what: $got deadlock lines, want $want"
	grep '^expect: deadlock:' "$expect" | sed 's/^expect: //' | while IFS= read -r line; do
		grep -qxF "$line" "$out" || { echo "FAIL: $what: no line '$line'"; echo x >>"$work/fails"; }
	done
	grep '^expect: thread ' "$expect" | while read -r _ _ tid _ _ kind addr _ _ owner; do
		grep -Eq "^  $tid [a-z-]+ waits on $kind $addr held by $owner( |\$)" "$out" || {
			echo "FAIL: $what: thread $tid should wait on $kind $addr held by $owner"
			echo x >>"$work/fails"
		}
	done
	grep '^expect-class: ' "$expect" | while read -r _ tid class; do
		[ "$class" = busy ] && [ "${what#*core}" != "$what" ] && continue
		grep -Eq "^  $tid $class( |\$)" "$out" || {
			echo "FAIL: $what: thread $tid should be $class"
			echo x >>"$work/fails"
		}
	done
	grep '^expect-behind: ' "$expect" | while read -r _ tid first; do
		grep -Eq "^  $tid .*\(behind the deadlock of $first\)" "$out" || {
			echo "FAIL: $what: thread $tid should be behind the deadlock of $first"
			echo x >>"$work/fails"
		}
	done
	if [ -f "$work/fails" ]; then
		failed=$((failed + $(wc -l <"$work/fails")))
		rm -f "$work/fails"
	fi
}

# The file offset of address $2 in core $1 (its PT_LOAD segments), or nothing.
core_offset() {
	readelf -lW "$1" 2>/dev/null | awk '$1 == "LOAD" { print $2, $3, $5 }' |
	while read -r o v n; do
		if [ $(($2)) -ge $((v)) ] && [ $(($2)) -lt $((v + n)) ]; then
			echo $((o + $2 - v))
			break
		fi
	done
}

# Overwrite $3 bytes of core $1 at offset $2 with the victim's code (seed $4),
# run swdeadlock on it (executable $5), and put the bytes back.
damage_at() {
	dd if="$1" of="$work/saved" bs=1 skip="$2" count="$3" 2>/dev/null
	dd if="$work/victim" of="$1" bs=1 skip=$((4096 + $4 * 64)) seek="$2" count="$3" \
		conv=notrunc 2>/dev/null
	"$swdeadlock" --core "$1" ${5:+--exe "$5"} >/dev/null 2>&1
	status=$?
	checked=$((checked + 1))
	[ $status -le 3 ] || fail "core damaged at $2: exit status $status"
	dd if="$work/saved" of="$1" bs=1 seek="$2" count="$3" conv=notrunc 2>/dev/null
}

# Hostile cores: core $1 (of executable $2, or "") damaged in place, each
# time restored afterwards: in its headers and notes, spread over the
# file, and over every lock the victim named (the lock words and owners
# the analysis reads); then cut to half its size.  swdeadlock must
# answer 0, 1 or 2: never crash or hang.
damage_core() {
	core=$1 exe=$2 expect=$3
	size=$(wc -c <"$core")
	for k in 1 2 3 4 5 6 7 8 9 10 11 12; do
		if [ $k -le 6 ]; then off=$((k * 1536)); else off=$((size / 7 * (k - 6))); fi
		damage_at "$core" $off 512 $k "$exe"
	done
	k=20
	for addr in $(grep '^expect: thread ' "$expect" | awk '{ print $7 }' | sort -u); do
		off=$(core_offset "$core" "$addr")
		[ -n "$off" ] || { fail "lock $addr is in no segment of $core"; continue; }
		damage_at "$core" $((off - 16)) 64 $k "$exe"
		k=$((k + 1))
	done
	head -c $((size / 2)) "$core" >"$work/half.core"
	"$swdeadlock" --core "$work/half.core" ${exe:+--exe "$exe"} >/dev/null 2>&1
	status=$?
	checked=$((checked + 1))
	[ $status -le 3 ] || fail "core cut in half: exit status $status"
	rm -f "$work/half.core" "$work/saved"
}

# Start the victim in scenario $1; wait until it is "ready" or gone.
start_victim() {
	"$work/victim" "$1" wait >"$work/$1.expect" 2>&1 &
	pid=$!
	pids="$pids $pid"
	while ! grep -q '^ready' "$work/$1.expect" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do
		sleep 0.1
	done
	grep -q '^ready' "$work/$1.expect"
}

scenarios="abba three rwlock multi spin healthy"
have_gcore=0
command -v "$GCORE" >/dev/null 2>&1 && have_gcore=1

for s in $scenarios; do
	if [ -n "$qemu" ]; then
		# shellcheck disable=SC2086 # $qemu: the command and its options
		(cd "$work" && { ulimit -c unlimited 2>/dev/null || ulimit -c "$(ulimit -H -c)"; } &&
			{ echo 0 >/proc/self/coredump_filter; } 2>/dev/null;
			$qemu ./victim "$s" abort >"$s.expect" 2>&1; true) \
			>/dev/null 2>&1
		rm -f "$work/core" "$work"/core.[0-9]*
		core=$(ls "$work"/qemu_victim_*.core 2>/dev/null | head -1)
		if [ -z "$core" ]; then
			[ "$(ulimit -H -c)" = 0 ] && missing "core dumps are disabled (ulimit -c)"
			fail "$s: qemu wrote no core"
			continue
		fi
		mv "$core" "$work/$s.core"
		"$swdeadlock" --core "$work/$s.core" --exe "$work/victim" >"$work/$s.core.out" 2>&1
		check "$work/$s.expect" "$work/$s.core.out" $? "$s core"
		[ "$s" = rwlock ] && damage_core "$work/$s.core" "$work/victim" "$work/$s.expect"
		continue
	fi
	if ! start_victim "$s"; then
		fail "$s: the victim did not get ready"
		continue
	fi
	"$swdeadlock" -p "$pid" --sample 1000 --busy 5 >"$work/$s.out" 2>&1
	status=$?
	if [ $status = 2 ] && grep -q 'Operation not permitted' "$work/$s.out"; then
		echo "deadlock-$arch: ptrace is not permitted"
		exit 77
	fi
	check "$work/$s.expect" "$work/$s.out" $status "$s live"
	if [ "$s" = abba ] && command -v python3 >/dev/null 2>&1; then
		# The JSON form names the same cycle and locks.
		"$swdeadlock" -p "$pid" --json --sample 0 >"$work/$s.json" 2>&1
		python3 - "$work/$s.json" "$work/$s.expect" <<'EOF' || fail "$s live: JSON"
import json, sys
doc = json.load(open(sys.argv[1]))
want = [l.split()[2:] for l in open(sys.argv[2]) if l.startswith("expect: deadlock:")]
got = [[str(t) for t in d["threads"]] for d in doc["deadlocks"]]
assert got == want, (got, want)
locks = {t["tid"]: t["lock"]["address"] for t in doc["threads"] if t["lock"]}
for l in open(sys.argv[2]):
    f = l.split()
    if l.startswith("expect: thread "):
        assert locks[int(f[2])] == f[6], (f, locks)
EOF
	fi
	if [ $have_gcore = 1 ]; then
		"$GCORE" -o "$work/$s.gcore" "$pid" >"$work/$s.gcore.log" 2>&1
		if [ -f "$work/$s.gcore.$pid" ]; then
			"$swdeadlock" --core "$work/$s.gcore.$pid" >"$work/$s.core.out" 2>&1
			check "$work/$s.expect" "$work/$s.core.out" $? "$s core"
			[ "$s" = rwlock ] && damage_core "$work/$s.gcore.$pid" "" "$work/$s.expect"
			rm -f "$work/$s.gcore.$pid"
		else
			fail "$s: gcore wrote no core"
		fi
	fi
	kill -KILL "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	# The kernel's own core, where its core_pattern writes one here.
	case $s in abba|three|rwlock|multi) ;; *) continue ;; esac
	rm -f "$work/core" "$work"/core.[0-9]*
	(cd "$work" && ulimit -c unlimited 2>/dev/null && ./victim "$s" abort >"$s.kexpect" 2>&1; true) \
		>/dev/null 2>&1
	kcore=$(ls "$work/core" "$work"/core.[0-9]* 2>/dev/null | head -1)
	if [ -n "$kcore" ]; then
		"$swdeadlock" --core "$kcore" >"$work/$s.kcore.out" 2>&1
		check "$work/$s.kexpect" "$work/$s.kcore.out" $? "$s kernel core"
		rm -f "$kcore"
	else
		echo "deadlock-$arch: $s: the kernel wrote no core here (core_pattern), not checked"
	fi
done

echo "deadlock-$arch: $checked runs checked, $failed failures"
if [ $failed -eq 0 ]; then
	rm -rf "$work"
	exit 0
fi
exit 1
