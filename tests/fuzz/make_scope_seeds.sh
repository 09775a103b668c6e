#!/bin/sh
# make_scope_seeds.sh - the seed inputs of fuzz_scope_index: the DWARF
# sections of small programs with inlined calls and hot/cold split
# functions (and one inlined call as large as its caller), built by gcc and clang with DWARF 4 and 5, in the target's
# input format (each section of its list as a 16-bit little-endian length
# and its bytes).  Run from the source tree; writes into
# tests/fuzz/corpus/fuzz_scope_index/.
set -eu
out=tests/fuzz/corpus/fuzz_scope_index
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$out"
cat > "$tmp/p.c" <<'C'
static int leaf(int x) { return x * 3 + 1; }
static inline int mid(int x) { int s = 0; for (int i = 0; i < x; i++) s += leaf(i ^ x); return s; }
static inline int outer(int x) { return mid(x) + mid(x + 1); }
__attribute__((noinline)) int work(int x) { return outer(x) * 2; }
__attribute__((noinline, cold)) int cold_path(int x) { return mid(x) - 1; }
__attribute__((noinline)) int ext(int x) { return x ^ 0x55; }
/* tail() is wrap() and nothing else: an inlined call with its caller's very range. */
static inline int wrap(int x) { return ext(x + 1); }
__attribute__((noinline)) int tail(int x) { return wrap(x); }
int main(int argc, char **argv) { (void)argv; return work(argc) + tail(argc) + (argc > 5 ? cold_path(argc) : 0); }
C
# The target's section order (fuzz_scope_index.c).
sections=".debug_info .debug_abbrev .debug_str .debug_line_str .debug_ranges .debug_rnglists .debug_addr .debug_str_offsets"
u16() { printf "\\$(printf %03o $(($1 & 255)))\\$(printf %03o $(($1 >> 8)))"; }
for cc in gcc clang; do
	command -v $cc >/dev/null || continue
	for v in 4 5; do
		flags="-O2 -g1 -gdwarf-$v -nostdlib -static -Wl,-e,main -fno-asynchronous-unwind-tables"
		[ $cc = gcc ] && flags="$flags -freorder-blocks-and-partition"
		$cc $flags "$tmp/p.c" -o "$tmp/p" 2>/dev/null || continue
		seed="$out/seed-$cc-dwarf$v"
		: > "$seed"
		for s in $sections; do
			: > "$tmp/s"
			if readelf -SW "$tmp/p" | grep -q " $s "; then
				objcopy --dump-section "$s=$tmp/s" "$tmp/p" "$tmp/junk"
			fi
			n=$(wc -c < "$tmp/s")
			[ "$n" -lt 65536 ] || { echo "$s of $cc DWARF $v is too big" >&2; exit 1; }
			u16 "$n" >> "$seed"
			cat "$tmp/s" >> "$seed"
		done
		echo "$seed: $(wc -c < "$seed") bytes"
	done
done
