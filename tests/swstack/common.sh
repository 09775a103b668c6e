# common.sh - what the swstack tests (tests/swstack-*.test) share: how
# i686 programs run here, a program's core dump (gdb's gcore, or
# qemu-user's), gdb's and swstack's frames reduced to "LWP LEVEL PC" lines,
# the frame-by-frame rule that compares them (see swstack-gdb.test), and
# the SWU images of a program's shared libraries for swstack --image.
# Sourced by those tests (POSIX sh); they set $top_srcdir, $work, $GDB,
# $CROSS_CC_I686, $QEMU_AARCH64, $QEMU_I386 and $swimport.
#
# gdb's output is expected in two parts, each after a marker line:
#   @@ bt   thread apply all bt                       (where gdb gave up)
#   @@ pc   thread apply all frame apply all p/x $pc  (every frame's PC)
# shellcheck disable=SC2154 # $work, $GDB, $gdb_flags, $QEMU_AARCH64, $QEMU_I386, $swimport: the test's
# shellcheck disable=SC2034 # i686_qemu, i686_why: for the test

# Wait until process $1 (qemu-user started with -g $2) listens on TCP port
# $2 for gdb, or is gone (then return 1).  The kernel's socket tables say
# when: no clock decides, however slowly a loaded machine starts qemu.
gdbstub_listening() {
	hexport=$(printf ':%04X ' "$2")
	while kill -0 "$1" 2>/dev/null; do
		# Field 4 is the state: 0A is LISTEN.
		cat /proc/net/tcp /proc/net/tcp6 2>/dev/null |
			awk -v p="$hexport" 'index($2 " ", p) && $4 == "0A" { found = 1 } END { exit !found }' &&
			return 0
		sleep 0.1
	done
	return 1
}

# How i686 programs run here (tests/i386-host.sh): natively, i686_qemu
# empty; or, where the kernel cannot exec i386 programs, under qemu-i386:
# i686_qemu=$QEMU_I386, and i686_why says why.  Returns 1 where they cannot
# run at all, 2 where the probe failed (i686_why says why).
i686_runner() {
	i386=$(sh "$top_srcdir/tests/i386-host.sh" "$CROSS_CC_I686" "$QEMU_I386")
	i686_qemu=''
	i686_why=${i386#*: }
	case $i386 in
	native) i686_why='' ;;
	qemu:*) i686_qemu=$QEMU_I386 ;;
	noexec:*) return 1 ;;
	*) return 2 ;;
	esac
	return 0
}

# Dump $work/$1, a build of tests/swstack/prog.c for arch $2, to a core;
# print the core's path.  gdb's gcore takes it from the blocked program;
# under qemu-user (aarch64, and i686 where i686_runner said so) the
# program aborts instead and qemu writes the core itself.
dump_core() {
	case $2 in
	aarch64) qemu=$QEMU_AARCH64 ;;
	i686) qemu=${i686_qemu:-} ;;
	*) qemu= ;;
	esac
	if [ -n "$qemu" ]; then
		# qemu writes qemu_PROG_DATE-PID.core in its working directory
		# when RLIMIT_CORE allows; the kernel's core of qemu itself is
		# kept small (coredump_filter) and removed.  No SVE: gdb 13 loops
		# on a signal frame with an SVE record in a core without SVE.
		(cd "$work" && { ulimit -c unlimited 2>/dev/null || ulimit -c "$(ulimit -H -c)"; } &&
			{ echo 0 >/proc/self/coredump_filter; } 2>/dev/null;
			if [ "$2" = aarch64 ]; then
				"$qemu" -cpu max,sve=off "./$1" abort
			else
				"$qemu" "./$1" abort
			fi; true) >/dev/null 2>&1
		for c in "$work"/qemu_"$1"_*.core; do
			[ -f "$c" ] && echo "$c"
		done
		rm -f "$work/core" "$work"/core.[0-9]*
		return 0
	fi
	"$work/$1" wait >"$work/$1.ready" 2>&1 &
	pid=$!
	# Until it is ready or gone: no clock decides (a loaded machine may be slow).
	while ! grep -q ready "$work/$1.ready" 2>/dev/null && kill -0 "$pid" 2>/dev/null; do
		sleep 0.1
	done
	sleep 0.2
	eval "$GDB" -batch -nx -p "$pid" -ex "'gcore $work/$1.core'" >"$work/$1.gcore" 2>&1
	kill -9 "$pid" 2>/dev/null
	wait "$pid" 2>/dev/null
	[ -s "$work/$1.core" ] && echo "$work/$1.core"
}

# The kernel's core of $work/$1, run with the arguments after it, moved to
# $work/$1.core.  Returns 1 (kernel_core_why says why)
# where the kernel does not write cores to the working directory
# (core_pattern not "core" or "core.%p"), or wrote none (RLIMIT_CORE).
kernel_core() {
	kernel_core_why=$(cat /proc/sys/kernel/core_pattern 2>/dev/null)
	case $kernel_core_why in
	core | core.%p) ;;
	*) kernel_core_why="core_pattern is \"$kernel_core_why\", not \"core\""; return 1 ;;
	esac
	kc_prog=$1
	shift
	(cd "$work" && ulimit -c unlimited 2>/dev/null && exec "./$kc_prog" "$@") >/dev/null 2>&1
	for c in "$work/core" "$work"/core.[0-9]*; do
		[ -f "$c" ] && mv "$c" "$work/$kc_prog.core" && return 0
	done
	kernel_core_why="the kernel wrote no core (RLIMIT_CORE?)"
	return 1
}

# gdb's view of program $1's core $2, in the two parts gdb_frames reads,
# into $3 (gdb run with the test's $gdb_flags).
gdb_core_dump() {
	{
		echo "@@ bt"
		eval "$GDB" "$gdb_flags" -ex "'thread apply all bt'" "'$1'" "'$2'" 2>&1
		echo "@@ pc"
		eval "$GDB" "$gdb_flags" -ex "'thread apply all frame apply all p/x \$pc'" "'$1'" "'$2'" 2>&1
	} >"$3"
}

# gdb's frames: "LWP LEVEL PC" lines, and "LWP stopped" where gdb gave up.
gdb_frames() {
	awk '
	/^@@ bt/ { part = 1; next }
	/^@@ pc/ { part = 2; next }
	/^Thread [0-9]+ .*LWP [0-9]+/ {
		match($0, /LWP [0-9]+/)
		lwp = substr($0, RSTART + 4, RLENGTH - 4)
		next
	}
	lwp == "" { next }
	part == 1 && /^Backtrace stopped/ { print lwp, "stopped"; next }
	part == 2 && /^#[0-9]+ / { level = substr($1, 2); next }
	part == 2 && /^\$[0-9]+ = 0x/ { pc = $3; sub(/^0x0*/, "0x", pc); print lwp, level, pc }
	' "$1"
}

# swstack's frames, the same way.  gdb runs without separate debug files
# here, and so without libc's inlined calls: swstack's inlined frames
# (marked "inlined") are left out and the others numbered as gdb does.
swstack_frames() {
	awk '
	/^Thread [0-9]+ \(LWP [0-9]+\):/ { lwp = $4; sub(/\):$/, "", lwp); level = 0; next }
	/^#[0-9]+ +0x/ {
		if ($0 ~ /\] inlined( |$)/) next
		pc = $2; sub(/^0x0*/, "0x", pc)
		print lwp, level++, pc
	}
	' "$1"
}

# Images of the shared libraries program $1 links (none for static ones),
# made once per arch in $2; prints "--image NAME=IMAGE" arguments.
library_images() {
	ldd "$1" 2>/dev/null | awk '$2 == "=>" && $3 ~ /^\// { print $3; next } $1 ~ /^\// { print $1 }' |
	while read -r lib; do
		base=${lib##*/}
		if [ ! -s "$2/$base.swui" ]; then
			mkdir -p "$2" || continue
			"$swimport" -q -o "$2/$base.swui" "$lib" >"$2/$base.err" 2>&1 || continue
		fi
		printf ' --image %s=%s' "$base" "$2/$base.swui"
	done
}

# Compare; prints "passed failed unchecked threads frames" last, failures before.
compare() {
	awk -v prog="$3" '
	FNR == NR {
		if ($2 == "stopped") { stopped[$1] = 1; next }
		g[$1, $2] = $3; glwp[$1] = 1
		if ($2 + 1 > gn[$1]) gn[$1] = $2 + 1
		next
	}
	{ s[$1, $2] = $3; slwp[$1] = 1; if ($2 + 1 > sn[$1]) sn[$1] = $2 + 1 }
	END {
		for (l in slwp)
			if (!(l in glwp)) { print prog ": LWP " l ": not in gdb'"'"'s output"; fail++ }
		for (l in glwp) {
			threads++
			n = gn[l]; m = sn[l] + 0
			for (i = 0; i < n; i++) {
				frames++
				if (i >= m) {
					print prog ": LWP " l " #" i ": swstack stopped early (gdb: " g[l, i] ")"
					fail++
				} else if (g[l, i] == s[l, i]) {
					pass++
				} else {
					print prog ": LWP " l " #" i ": gdb " g[l, i] ", swstack " s[l, i]
					fail++
				}
			}
			if (m > n && stopped[l]) {
				unchecked += m - n
			} else if (m > n) {
				print prog ": LWP " l ": " m - n " frame(s) past gdb'"'"'s outermost, from " s[l, n]
				fail += m - n
			}
		}
		print pass + 0, fail + 0, unchecked + 0, threads + 0, frames + 0
	}' "$1" "$2"
}
