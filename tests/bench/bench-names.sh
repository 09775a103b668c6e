#!/bin/sh
# bench-names.sh - naming 10,000 samples of a C++ program: sw_names
# (tests/bench/bench-names) beside eu-addr2line -f -i -C, which prints the
# same things (function demangled, inlined frames, file:line) for the same
# addresses.  Times are CPU seconds (user + system), memory the peak
# resident set; the load average is printed beside them, since the
# machine may be shared.  Never run as a test: nothing is asserted.
#
#   bench-names.sh BENCH_NAMES_BINARY [WORKDIR]
#
# The program is generated: 400 instances of a class template in 20
# namespaces, each calling helpers inlined into it, built with g++ -O2 -g.
# The samples are addresses inside its functions, drawn with a fixed seed
# (awk's srand(27)), 10,000 of them over the program's whole text.
set -e
bench=${1:?usage: bench-names.sh BENCH_NAMES_BINARY [WORKDIR]}
work=${2:-bench-names.d}
: "${CXX:=g++}"
mkdir -p "$work"
src="$work/prog.cc"
{
	echo '#include <cstdio>'
	echo 'template <int N> struct Acc { long v; __attribute__((always_inline)) inline long step(long x) { return v = v * 31 + x + N; } };'
	ns=0
	while [ $ns -lt 20 ]; do
		echo "namespace n$ns {"
		i=0
		while [ $i -lt 20 ]; do
			echo "template <typename T> struct Worker$i { T acc; __attribute__((noinline)) long run(long x) { for (int k = 0; k < 8; k++) x = acc.step(x) ^ (x >> 3); return x; } };"
			echo "__attribute__((noinline)) long call$i(long x) { Worker$i<Acc<$((ns * 20 + i))>> w{}; return w.run(x); }"
			i=$((i + 1))
		done
		echo "}"
		ns=$((ns + 1))
	done
	echo 'int main(int argc, char **) { long x = argc;'
	ns=0
	while [ $ns -lt 20 ]; do
		i=0
		while [ $i -lt 20 ]; do
			echo "x = n$ns::call$i(x);"
			i=$((i + 1))
		done
		ns=$((ns + 1))
	done
	echo 'std::printf("%ld\n", x); }'
} >"$src"
"$CXX" -O2 -g -o "$work/prog" "$src"
nm --defined-only -S "$work/prog" | awk '$3 ~ /^[TtW]$/ && $2 != "" { print $1, $2 }' >"$work/functions"
awk 'BEGIN { srand(27) }
	{ start[NR] = $1; size[NR] = $2 }
	END {
		for (i = 0; i < 10000; i++) {
			k = 1 + int(rand() * NR)
			s = 0; n = 0
			for (j = 1; j <= length(start[k]); j++)
				s = s * 16 + index("0123456789abcdef", substr(start[k], j, 1)) - 1
			for (j = 1; j <= length(size[k]); j++)
				n = n * 16 + index("0123456789abcdef", substr(size[k], j, 1)) - 1
			printf "%x\n", s + int(rand() * n)
		}
	}' "$work/functions" >"$work/samples"
echo "load: $(uptime)"
echo "program: $(wc -l <"$work/functions") functions, $(sort -u "$work/samples" | wc -l) distinct addresses in 10000 samples"
# GNU time (Debian: time) reports eu-addr2line's CPU time and memory.
if [ -x /usr/bin/time ]; then
	/usr/bin/time -f "eu-addr2line -f -i -C: %U s user, %S s system, peak RSS %M KiB" \
		eu-addr2line -e "$work/prog" -f -i -C -a <"$work/samples" >"$work/eu-addr2line.out"
	/usr/bin/time -f "bench-names: %U s user, %S s system, peak RSS %M KiB" \
		"$bench" "$work/prog" "$work/samples"
else
	echo "no /usr/bin/time (Debian: time): eu-addr2line's cost is not measured"
	"$bench" "$work/prog" "$work/samples"
fi
echo "load: $(uptime)"
