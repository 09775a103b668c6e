# remote-toyjit.sh - sourced by remote-toyjit-x86-64.test, -i686.test and
# -arm64.test with $arch set: swstack reads the toy JIT's published code
# map (stackwalk-remote(5)) from a stopped process and from its core, and
# finds the managed frames and Frames the runtime's own walk found.
#
# examples/toyjit-remote (x86-64: the one make built; i686 and arm64:
# cross-built statically here, as tests/cross-toyjit.sh builds the toy
# JIT) runs a chain of managed methods with a P/Invoke, walks its own
# stack in the stub's helper, checks that walk against its shadow stack,
# prints it ("method NAME PC", "frame TYPE ADDRESS", innermost first) and
# "ready PID TID", and waits; a second thread adds and removes methods all
# the while, so the map is read while it changes.  Then, where the program
# runs natively (x86-64; i686 where the kernel execs it):
#
#  1. swstack -p PID: its methods (the frames it names after the toy JIT's
#     methods) with their PCs, and its Frame lines, in order, are the
#     runtime's walk;
#  2. gdb's gcore of the same process, and swstack --core: the same;
#  3. swdeadlock -a, on the process and on the core: the same methods
#     with the same PCs in its stack of the thread (it prints no Frames);
#
# and under qemu-user (arm64; i686 where the kernel cannot exec it), where
# no debugger attaches to the program, the program aborts when ready and
# swstack --core reads qemu's core.  Each at two depths, and with -m, the
# publisher left as if stopped mid-update (its generation odd): swstack
# says "caught mid-update" and still finds the same.
#
# Nothing is timed: the test reads the program's lines from a FIFO, which
# blocks until they come (or ends if the program dies).  Skipped (77)
# where ptrace is not permitted or a tool is missing (gdb for gcore, the
# cross compiler, qemu), except under CI=true, where it fails.
# Everything stays in tests/remote-toyjit-$arch.d/ when the test fails.

# In tests/heavy.list: run by the plain make check only; in the ASan
# build gdb's gcore of the sanitized toy JIT would also write its shadow
# memory (tens of GB).
: "${top_srcdir:=.}" "${top_builddir:=.}"
for env_file in "$top_builddir/tests/swstack-gdb.env" "$top_builddir/tests/cross-toyjit.env"; do
	# shellcheck source=/dev/null # written by make
	[ -f "$env_file" ] && . "$env_file"
done
: "${GDB:=gdb-multiarch}" "${QEMU_AARCH64:=qemu-aarch64}" "${QEMU_I386:=qemu-i386}"

swstack="$top_builddir/examples/swstack"
swdeadlock="$top_builddir/examples/swdeadlock"
# shellcheck disable=SC2154 # $arch is set by the .test that sources this
work="$top_builddir/tests/remote-toyjit-$arch.d"

missing() {
	if [ "${CI:-}" = true ]; then
		echo "remote-toyjit ($arch): $1; CI must run this test"
		exit 1
	fi
	echo "remote-toyjit ($arch): $1; skipped"
	exit 77
}

for p in "$swstack" "$swdeadlock"; do
	[ -x "$p" ] || { echo "remote-toyjit: $p is missing"; exit 99; }
done
rm -rf "$work"
mkdir -p "$work" || exit 99
work=$(cd "$work" && pwd)

# The program, and how it runs: natively ("") or under qemu.
qemu=''
case $arch in
x86-64)
	prog="$top_builddir/examples/toyjit-remote"
	[ -x "$prog" ] || { echo "remote-toyjit: $prog is missing"; exit 99; } ;;
i686|arm64)
	[ -n "${CROSS_CORE_SOURCES:-}" ] || { echo "remote-toyjit: tests/cross-toyjit.env is missing"; exit 99; }
	if [ "$arch" = i686 ]; then
		cc=$CROSS_CC_I686 backend=$CROSS_TOYJIT_X86
	else
		cc=$CROSS_CC_AARCH64 backend=$CROSS_TOYJIT_ARM64 qemu="$QEMU_AARCH64 -cpu max,sve=off"
	fi
	command -v "$cc" >/dev/null 2>&1 || missing "no $cc"
	srcs=''
	for f in $CROSS_CORE_SOURCES $CROSS_TOYJIT_SOURCES $backend examples/toyjit/toyjit_remote.c; do
		[ "$f" = tests/cross_toyjit.c ] || srcs="$srcs $top_srcdir/$f"
	done
	prog="$work/toyjit-remote"
	# shellcheck disable=SC2086 # word splitting of the flag and file lists is meant
	if ! "$cc" -static -std=gnu11 -O1 -g $CROSS_CFLAGS -DSW_BUILDING_LIBRARY \
		-I"$top_builddir" -I"$top_srcdir/include" $CROSS_INCLUDES \
		-I"$top_srcdir/unwindinfo" -I"$top_srcdir/frames" -I"$top_srcdir/examples/toyjit" \
		-o "$prog" $srcs -lpthread >"$work/build.log" 2>&1; then
		echo "remote-toyjit ($arch): the cross build failed:"
		cat "$work/build.log"
		exit 1
	fi
	if [ "$arch" = i686 ]; then
		i386=$(sh "$top_srcdir/tests/i386-host.sh" "$cc" "$QEMU_I386")
		case $i386 in
		native) ;;
		qemu:*) echo "remote-toyjit (i686): ${i386#qemu: }"; qemu=$QEMU_I386 ;;
		noexec:*) missing "${i386#noexec: }" ;;
		*) echo "remote-toyjit (i686): ${i386#error: }"; exit 99 ;;
		esac
	fi ;;
*)
	echo "remote-toyjit: unknown arch '$arch'"
	exit 99 ;;
esac
if [ -n "$qemu" ]; then
	command -v "${qemu%% *}" >/dev/null 2>&1 || missing "no ${qemu%% *}"
else
	command -v "$GDB" >/dev/null 2>&1 || missing "no $GDB"
fi

victim=''
cleanup() {
	[ -n "$victim" ] && kill -9 "$victim" 2>/dev/null
	exec 3<&- 2>/dev/null
}
trap cleanup EXIT

# What swstack found: the toy JIT's methods it named, with their PCs (its
# zero padding dropped), and its Frame lines.
swstack_view() {
	sed -n -e 's/^#[0-9]* *0x0*\([0-9a-f][0-9a-f]*\) in \(M[0-9]*_[a-z0-9_]*\)+0x[0-9a-f]* .*/method \2 0x\1/p' \
	       -e 's/^    \[Frame type \([0-9]*\) at \(0x[0-9a-f]*\)\]$/frame \1 \2/p' "$1"
}

# What swdeadlock -a found: the toy JIT's methods in its stacks, with their PCs.
deadlock_view() {
	sed -n 's/^ *#[0-9]* *0x0*\([0-9a-f][0-9a-f]*\) in \(M[0-9]*_[a-z0-9_]*\)+0x[0-9a-f]* .*/method \2 0x\1/p' "$1"
}

# check_deadlock NAME KIND ARGS: swdeadlock -a ARGS names the runtime's methods as it walked them.
check_deadlock() {
	name=$1 kind=$2
	shift 2
	"$swdeadlock" -a --sample 0 "$@" >"$work/$name.$kind" 2>"$work/$name.$kind.err"
	rc=$?
	# 0: no deadlock, or 3: no deadlock but a walk stopped (at the entry
	# thunk, as swstack's); 1 would be a deadlock, which the toy JIT has not.
	[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "$name $kind: swdeadlock exited $rc: $(cat "$work/$name.$kind.err")"
	grep '^method' "$work/$name.oracle" >"$work/$name.oracle.methods"
	deadlock_view "$work/$name.$kind" >"$work/$name.$kind.view"
	if cmp -s "$work/$name.oracle.methods" "$work/$name.$kind.view"; then
		echo "remote-toyjit ($arch): $name $kind: $(grep -c . "$work/$name.$kind.view") methods," \
		     "as the runtime walked them"
	else
		fail "$name $kind: swdeadlock's methods differ from the runtime's walk:"
		diff "$work/$name.oracle.methods" "$work/$name.$kind.view"
	fi
}

failed=0
fail() {
	echo "remote-toyjit ($arch): FAIL: $*"
	failed=1
}

# run NAME OPTIONS: start the program, check swstack -p and --core on it.
run() {
	name=$1
	shift
	rm -f "$work/$name.fifo"
	mkfifo "$work/$name.fifo" || exit 99
	"$prog" "$@" >"$work/$name.fifo" 2>"$work/$name.err" &
	victim=$!
	exec 3<"$work/$name.fifo"
	: >"$work/$name.oracle"
	ready=''
	while read -r line <&3; do
		case $line in
		ready*) ready=$line; break ;;
		*) echo "$line" >>"$work/$name.oracle" ;;
		esac
	done
	exec 3<&-
	if [ -z "$ready" ]; then
		fail "$name: toyjit-remote never got ready: $(cat "$work/$name.oracle" "$work/$name.err")"
		return
	fi
	grep -q '^frame' "$work/$name.oracle" || fail "$name: the runtime's walk found no Frame"
	"$swstack" -v -p "$victim" >"$work/$name.live" 2>"$work/$name.live.err"
	rc=$?
	if grep -q 'Operation not permitted' "$work/$name.live.err"; then
		missing "ptrace is not permitted"
	fi
	check "$name" live "$rc" "$@"
	check_deadlock "$name" deadlock-live -p "$victim"
	"$GDB" -batch -nx -p "$victim" -ex "gcore $work/$name.core" >"$work/$name.gcore.log" 2>&1
	kill -9 "$victim" 2>/dev/null
	wait "$victim" 2>/dev/null
	victim=''
	if [ ! -s "$work/$name.core" ]; then
		fail "$name: gcore wrote no core: $(tail -3 "$work/$name.gcore.log")"
		return
	fi
	"$swstack" -v --core "$work/$name.core" >"$work/$name.corewalk" 2>"$work/$name.corewalk.err"
	check "$name" corewalk $? "$@"
	check_deadlock "$name" deadlock-core --core "$work/$name.core"
}

# run_qemu NAME OPTIONS: under qemu the program aborts when ready, and qemu
# writes its core (qemu_PROG_DATE-PID.core, in the working directory).
run_qemu() {
	name=$1
	shift
	# shellcheck disable=SC2086 # $qemu is a command and its options
	(cd "$work" && { ulimit -c unlimited 2>/dev/null || ulimit -c "$(ulimit -H -c)"; } &&
		{ echo 0 >/proc/self/coredump_filter; } 2>/dev/null
		exec $qemu "$prog" "$@" -a) >"$work/$name.out" 2>"$work/$name.err"
	sed -n '/^ready/q;p' "$work/$name.out" >"$work/$name.oracle"
	grep -q '^ready' "$work/$name.out" ||
		{ fail "$name: toyjit-remote never got ready: $(cat "$work/$name.out" "$work/$name.err")"; return; }
	core=''
	for c in "$work"/qemu_toyjit-remote_*.core; do
		[ -f "$c" ] && core=$c
	done
	rm -f "$work/core" "$work"/core.[0-9]*
	if [ -z "$core" ]; then
		[ "$(ulimit -H -c)" = 0 ] && missing "core dumps are disabled (ulimit -c)"
		fail "$name: qemu wrote no core"
		return
	fi
	mv "$core" "$work/$name.core"
	"$swstack" -v --core "$work/$name.core" --exe "$prog" >"$work/$name.corewalk" \
		2>"$work/$name.corewalk.err"
	check "$name" corewalk $? "$@"
	check_deadlock "$name" deadlock-core --core "$work/$name.core" --exe "$prog"
}

# check NAME KIND RC OPTIONS: swstack's view equals the runtime's walk.
check() {
	name=$1 kind=$2 rc=$3
	shift 3
	# 0, or 3: a thread's walk stopped (the toy JIT's entry thunk has no unwind data).
	[ "$rc" -eq 0 ] || [ "$rc" -eq 3 ] || fail "$name $kind: swstack exited $rc: $(cat "$work/$name.$kind.err")"
	grep -q 'publishes a code map' "$work/$name.$kind.err" ||
		fail "$name $kind: swstack found no published code map"
	case " $* " in
	*" -m "*) grep -q 'caught mid-update' "$work/$name.$kind.err" ||
		fail "$name $kind: swstack did not say the map was caught mid-update" ;;
	esac
	swstack_view "$work/$name.$kind" >"$work/$name.$kind.view"
	if cmp -s "$work/$name.oracle" "$work/$name.$kind.view"; then
		echo "remote-toyjit ($arch): $name $kind: $(grep -c '^method' "$work/$name.oracle") methods," \
		     "$(grep -c '^frame' "$work/$name.oracle") Frames, as the runtime walked them"
	else
		fail "$name $kind: swstack's frames differ from the runtime's walk:"
		diff "$work/$name.oracle" "$work/$name.$kind.view"
	fi
}

scenario() {
	if [ -n "$qemu" ]; then
		run_qemu "$@"
	else
		run "$@"
	fi
}
scenario pinvoke -d 12 -p 4
scenario deep -d 40 -p 30
scenario midupdate -d 12 -p 4 -m

[ "$failed" -eq 0 ] || exit 1
rm -rf "$work"
exit 0
