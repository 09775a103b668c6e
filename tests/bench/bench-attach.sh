#!/bin/sh
# bench-attach.sh - what unwinding one sample costs swprof -p beside perf,
# on the same run: swprof -p and perf record -p --call-graph dwarf sample
# attach_victim (three threads, stacks of 7 to 46 frames) at once, with the
# same stack copy.  swprof's cost is the CPU its walks took (-v), perf's
# the CPU perf report takes on the same perf.data with callchains (-g
# caller) less without (-g none): its unwinding and what goes with it.
# Prints both per sample and their ratio (swprof / perf; below 1 is
# cheaper), with the load average: on a loaded machine one timing says
# little.
#
# usage: bench-attach.sh swprof attach_victim [seconds] [hz]
# A benchmark, not a test: it asserts nothing and exits 0 when perf is missing.

swprof=${1:?usage: bench-attach.sh swprof attach_victim [seconds]}
victim=${2:?usage: bench-attach.sh swprof attach_victim [seconds]}
seconds=${3:-5}
hz=${4:-4000}   # many samples: perf report's start-up (its symbols) is the same either way
for tool in perf /usr/bin/time; do
	command -v "$tool" >/dev/null 2>&1 || { echo "bench-attach: $tool is missing; nothing measured"; exit 0; }
done
dir=$(mktemp -d "${TMPDIR:-/tmp}/bench-attach.XXXXXX") || exit 1
pid=
cleanup() {
	[ -n "$pid" ] && kill "$pid" 2>/dev/null
	rm -rf "$dir"
}
trap cleanup EXIT INT TERM
mkfifo "$dir/ready"
"$victim" >"$dir/ready" &
pid=$!
read -r line <"$dir/ready"

perf record -q -p "$pid" -e cpu-clock -F "$hz" --call-graph dwarf,32768 -o "$dir/perf.data" \
	-- sleep "$seconds" >"$dir/perf.out" 2>&1 &
perf_pid=$!
"$swprof" -v -p "$pid" -d "$seconds" -F "$hz" --stack-size 32768 -o "$dir/swprof.folded" 2>"$dir/swprof.err"
if ! wait "$perf_pid"; then
	echo "bench-attach: perf record cannot record here: $(tail -n 1 "$dir/perf.out")"
	exit 0
fi
kill "$pid"
pid=

ours=$(sed -n 's/.* \([0-9.]*\) us CPU per sample walked.*/\1/p' "$dir/swprof.err")
our_samples=$(sed -n 's/^swprof: \([0-9]*\) sample records.*/\1/p' "$dir/swprof.err")
samples=$(perf script -F tid -i "$dir/perf.data" 2>/dev/null | wc -l)
cpu() {     # user + system seconds of a command
	/usr/bin/time -f '%U %S' -o "$dir/time" "$@" >/dev/null 2>&1
	awk '{ print $1 + $2 }' "$dir/time"
}
with=$(cpu perf report -i "$dir/perf.data" --stdio --no-children -g caller)
without=$(cpu perf report -i "$dir/perf.data" --stdio --no-children -g none)
theirs=$(awk -v w="$with" -v n="$without" -v s="$samples" 'BEGIN { printf "%.2f", s ? (w - n) * 1e6 / s : 0 }')
echo "bench-attach: load average $(cut -d' ' -f1-3 /proc/loadavg)"
printf '  %-44s %8s us  (%s samples)\n' "swprof -p, one sample's walk" "$ours" "$our_samples"
printf '  %-44s %8s us  (%s samples; %.2f s with, %.2f s without)\n' \
	"perf report -g caller less -g none, per sample" "$theirs" "$samples" "$with" "$without"
awk -v o="$ours" -v t="$theirs" 'BEGIN {
	if (t > 0) printf "  ratio swprof / perf: %.3f\n", o / t
	else print "  no ratio: perf report\047s unwinding was lost in its noise (too few samples?)" }'
