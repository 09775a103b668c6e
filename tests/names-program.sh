#!/bin/sh
# names-program.sh - a C++ program to name, and addresses in it, for the
# symbolizer's test (names-addr2line.test) and benchmark (bench-names.sh).
#
#   names-program.sh WORKDIR NAMESPACES SAMPLES
#
# WORKDIR/prog: NAMESPACES namespaces of 20 class template instances each,
# every one calling a helper inlined into it, built with $CXX (g++) -O2 -g;
# WORKDIR/functions: its functions (nm); WORKDIR/samples: SAMPLES
# addresses inside them, in hexadecimal, one a line, drawn with a fixed
# seed (awk's srand(27)) over the whole text.
set -e
work=${1:?usage: names-program.sh WORKDIR NAMESPACES SAMPLES}
namespaces=${2:?usage: names-program.sh WORKDIR NAMESPACES SAMPLES}
samples=${3:?usage: names-program.sh WORKDIR NAMESPACES SAMPLES}
: "${CXX:=g++}"
mkdir -p "$work"
src="$work/prog.cc"
{
	echo '#include <cstdio>'
	echo 'template <int N> struct Acc { long v; __attribute__((always_inline)) inline long step(long x) { return v = v * 31 + x + N; } };'
	ns=0
	while [ $ns -lt $namespaces ]; do
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
	while [ $ns -lt $namespaces ]; do
		i=0
		while [ $i -lt 20 ]; do
			echo "x = n$ns::call$i(x);"
			i=$((i + 1))
		done
		ns=$((ns + 1))
	done
	# printf, not echo: dash's echo would turn the \n into a line break.
	printf '%s\n' 'std::printf("%ld\n", x); }'
} >"$src"
"$CXX" -O2 -g -o "$work/prog" "$src"
nm --defined-only -S "$work/prog" | awk '$3 ~ /^[TtW]$/ && $2 != "" { print $1, $2 }' >"$work/functions"
awk -v samples="$samples" 'BEGIN { srand(27) }
	{ start[NR] = $1; size[NR] = $2 }
	END {
		for (i = 0; i < samples; i++) {
			k = 1 + int(rand() * NR)
			s = 0; n = 0
			for (j = 1; j <= length(start[k]); j++)
				s = s * 16 + index("0123456789abcdef", substr(start[k], j, 1)) - 1
			for (j = 1; j <= length(size[k]); j++)
				n = n * 16 + index("0123456789abcdef", substr(size[k], j, 1)) - 1
			printf "%x\n", s + int(rand() * n)
		}
	}' "$work/functions" >"$work/samples"
