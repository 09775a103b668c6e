#!/bin/sh
# The shared library exports exactly the functions the headers mark SW_API,
# and nothing without the sw_ prefix.
set -eu
top_srcdir=${top_srcdir:-.}
top_builddir=${top_builddir:-.}
so=$(ls "$top_builddir"/.libs/libstackwalk.so.*.*.* 2>/dev/null | head -n 1)
if [ -z "$so" ]; then
	echo "SKIP: no shared library built"
	exit 77
fi
tmp=${TMPDIR:-/tmp}/sw-abi.$$
trap 'rm -f "$tmp".*' EXIT
# gdb's JIT interface has fixed names (include/stackwalk/gdbjit.h): the
# only exports without the prefix.
nm -D --defined-only "$so" | awk '$2 ~ /^[TDBR]$/ { print $3 }' |
	grep -v -x -e __jit_debug_register_code -e __jit_debug_descriptor -e '__odr_asan[.].*' | sort -u >"$tmp.exported"
# Declarations only: drop preprocessor lines and comments first.  Functions,
# then variables ("SW_API extern TYPE name;").
cat "$top_srcdir"/include/stackwalk/*.h | grep -v '^[[:space:]]*#' | tr '\n' ' ' |
	sed -E 's:/\*([^*]|\*+[^*/])*\*+/: :g' >"$tmp.headers"
{ grep -oE 'SW_API [^;(]*[ *][a-z_][a-z0-9_]*[[:space:]]*\(' "$tmp.headers" |
	sed -E 's/.*[ *]([a-z_][a-z0-9_]*)[[:space:]]*\($/\1/'
  grep -oE 'SW_API extern [^;(]*[ *][a-z_][a-z0-9_]*[[:space:]]*;' "$tmp.headers" |
	sed -E 's/.*[ *]([a-z_][a-z0-9_]*)[[:space:]]*;$/\1/'
} | grep -v -x -e __jit_debug_register_code -e __jit_debug_descriptor | sort -u >"$tmp.declared"
bad=$(grep -v '^sw_' "$tmp.exported" || true)
if [ -n "$bad" ]; then
	echo "FAIL: exported symbols without the sw_ prefix:"; echo "$bad"; exit 1
fi
if ! diff -u "$tmp.declared" "$tmp.exported"; then
	echo "FAIL: exported symbols differ from the SW_API declarations (- declared, + exported)"
	exit 1
fi
echo "PASS: $(wc -l <"$tmp.exported") exported symbols, all declared SW_API with the sw_ prefix"
