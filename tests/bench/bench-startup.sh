#!/bin/sh
# bench-startup.sh - what one walk of a process with a big library loaded
# costs from a cold start: swstack -p beside eu-stack -p and gdb, on the
# same lli process (lli links libLLVM; its interpreter runs a loop, so the
# stack goes through libLLVM), in the same run.  Prints each tool's median
# wall time and largest resident set over the runs, and swstack's ratios to
# eu-stack's (the goals: time at most 2x, memory at most 4x), with the load
# average beside them: on a loaded machine one timing says little.
#
# usage: bench-startup.sh [swstack] [runs] [libswprof.so]   (default examples/swstack, 5, none)
# With libswprof.so it also times the profiler's start-up on clang --version.
# A benchmark, not a test: it asserts nothing and exits 0 when a tool is missing.

swstack=${1:-examples/swstack}
runs=${2:-5}
swprof=${3:-}
lli=$(command -v lli || command -v lli-14)

for tool in "$lli" eu-stack gdb /usr/bin/time; do
	if [ -z "$tool" ] || ! command -v "$tool" >/dev/null 2>&1; then
		echo "bench-startup: ${tool:-lli} is missing; nothing measured"
		exit 0
	fi
done

dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-startup.XXXXXX") || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM

# A loop that never ends, run by libLLVM's interpreter (no JIT code, which
# eu-stack cannot walk and swstack would stop in).
cat > "$dir/loop.ll" <<'EOF'
define i32 @main() {
entry:
  br label %loop
loop:
  %i = phi i32 [ 0, %entry ], [ %j, %loop ]
  %j = add i32 %i, 1
  br label %loop
}
EOF
"$lli" -jit-kind=mcjit -force-interpreter "$dir/loop.ll" &
pid=$!
# Until libLLVM is mapped and the interpreter runs (bounded; no timing is judged).
i=0
while [ $i -lt 100 ] && ! grep -q libLLVM "/proc/$pid/maps" 2>/dev/null; do
	sleep 0.1
	i=$((i + 1))
done
sleep 0.5
if ! grep -q libLLVM "/proc/$pid/maps" 2>/dev/null; then
	echo "bench-startup: lli did not load libLLVM; nothing measured"
	exit 0
fi
llvm=$(grep -m1 -o '/[^ ]*libLLVM[^ ]*' "/proc/$pid/maps")

# One run of a tool: "seconds max-rss-KiB".
measure() {
	t0=$(date +%s%N)
	/usr/bin/time -f '%M' -o "$dir/rss" "$@" >/dev/null 2>&1
	t1=$(date +%s%N)
	echo "$(( (t1 - t0) / 1000000 )) $(tail -n 1 "$dir/rss")"
}

# Median time (ms) and largest RSS (KiB) of `runs` runs.
bench() {
	: > "$dir/runs"
	n=0
	while [ $n -lt "$runs" ]; do
		measure "$@" >> "$dir/runs"
		n=$((n + 1))
	done
	ms=$(cut -d' ' -f1 "$dir/runs" | sort -n | sed -n "$(( (runs + 1) / 2 ))p")
	kb=$(cut -d' ' -f2 "$dir/runs" | sort -n | tail -n 1)
	echo "$ms $kb"
}

# In a build tree examples/swstack is libtool's wrapper script, which runs a
# shell and sed before the program (about 0.1 s here): time the program
# itself, with the uninstalled library, as an installed swstack would run.
sw_libdir=
if head -n 1 "$swstack" | grep -q '^#!' && grep -q 'libtool' "$swstack" &&
	[ -x "$(dirname "$swstack")/.libs/$(basename "$swstack")" ]; then
	sw_libdir=$(cd "$(dirname "$swstack")/../.libs" && pwd)
	swstack="$(dirname "$swstack")/.libs/$(basename "$swstack")"
fi
set -- $(if [ -n "$sw_libdir" ]; then LD_LIBRARY_PATH=$sw_libdir; export LD_LIBRARY_PATH; fi
	bench "$swstack" -p "$pid"); sw_ms=$1; sw_kb=$2
set -- $(bench eu-stack -p "$pid"); eu_ms=$1; eu_kb=$2
set -- $(bench gdb -nx -batch -p "$pid" -ex 'thread apply all bt'); gdb_ms=$1; gdb_kb=$2

ratio() { awk -v a="$1" -v b="$2" 'BEGIN { if (b > 0) printf "%.2f", a / b; else print "-" }'; }
verdict() { awk -v r="$1" -v g="$2" 'BEGIN { print (r != "-" && r <= g) ? "met" : "missed" }'; }

t_ratio=$(ratio "$sw_ms" "$eu_ms")
m_ratio=$(ratio "$sw_kb" "$eu_kb")
echo "start-up of one walk: lli process $pid with $llvm, median of $runs runs"
printf '  %-10s %8s ms %8s KiB max RSS\n' swstack "$sw_ms" "$sw_kb" eu-stack "$eu_ms" "$eu_kb" gdb "$gdb_ms" "$gdb_kb"
echo "  swstack / eu-stack: time ${t_ratio}x (goal 2x: $(verdict "$t_ratio" 2)), RSS ${m_ratio}x (goal 4x: $(verdict "$m_ratio" 4))"
echo "  swstack / gdb: time $(ratio "$sw_ms" "$gdb_ms")x, RSS $(ratio "$sw_kb" "$gdb_kb")x"
echo "  load: $(uptime)"

# The profiler's start-up: clang --version (libLLVM and libclang-cpp
# loaded) under libswprof.so, beside the bare run and perf record's
# DWARF mode, in the same run.  The goal: at most 1.2x the bare run.
clang=$(command -v clang)
if [ -n "$swprof" ] && [ -f "$swprof" ] && [ -n "$clang" ]; then
	set -- $(bench "$clang" --version); bare_ms=$1; bare_kb=$2
	set -- $(bench env SWPROF_OUT="$dir/folded" SWPROF_SVG=/dev/null SWPROF_PPROF=/dev/null \
		LD_PRELOAD="$swprof" "$clang" --version); prof_ms=$1; prof_kb=$2
	echo "profiling clang --version, median of $runs runs"
	printf '  %-22s %8s ms %8s KiB max RSS\n' bare "$bare_ms" "$bare_kb" "under libswprof.so" "$prof_ms" "$prof_kb"
	if command -v perf >/dev/null 2>&1 && perf record -q -o "$dir/perf.data" true >/dev/null 2>&1; then
		set -- $(bench perf record -q -o "$dir/perf.data" --call-graph dwarf "$clang" --version)
		printf '  %-22s %8s ms %8s KiB max RSS\n' "perf record (dwarf)" "$1" "$2"
	fi
	p_ratio=$(ratio "$prof_ms" "$bare_ms")
	echo "  under libswprof.so / bare: time ${p_ratio}x (goal 1.2x: $(verdict "$p_ratio" 1.2))"
	echo "  load: $(uptime)"
fi
exit 0
