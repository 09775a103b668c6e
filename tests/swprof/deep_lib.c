/*
 * deep_lib.c - a deep stack in a shared library, for swprof-shlib.test.
 *
 * Built twice by the test: with -DDEEP_LIB as libdeep.so (a chain of
 * twelve functions, then deep_rec recursing twenty times, then deep_leaf
 * spinning), and without it as the program that links the library and
 * calls deep_entry from main.  Compiled with -fomit-frame-pointer, so
 * only the CFI describes the library's frames.
 */
#include <stdlib.h>

#ifdef DEEP_LIB
volatile unsigned long deep_sink;

__attribute__((noinline)) unsigned long deep_leaf(unsigned long n)
{
	unsigned long x = 0;

	for (unsigned long i = 0; i < n; i++)
		deep_sink = x += i * 2654435761u;
	return x;
}

/* Not a tail call: the addition keeps each level's frame. */
__attribute__((noinline)) unsigned long deep_rec(int depth, unsigned long n)
{
	if (depth == 0)
		return deep_leaf(n);
	return deep_rec(depth - 1, n) + (unsigned long)deep_sink;
}

#define LINK(name, next) \
	__attribute__((noinline)) unsigned long name(unsigned long n) \
	{ \
		return next + (unsigned long)deep_sink; \
	}
LINK(deep_l, deep_rec(20, n))
LINK(deep_k, deep_l(n))
LINK(deep_j, deep_k(n))
LINK(deep_i, deep_j(n))
LINK(deep_h, deep_i(n))
LINK(deep_g, deep_h(n))
LINK(deep_f, deep_g(n))
LINK(deep_e, deep_f(n))
LINK(deep_d, deep_e(n))
LINK(deep_c, deep_d(n))
LINK(deep_b, deep_c(n))
LINK(deep_entry, deep_b(n))
#else
unsigned long deep_entry(unsigned long n);

int main(int argc, char **argv)
{
	unsigned long n = argc > 1 ? strtoul(argv[1], NULL, 10) : 200000000ul;

	return deep_entry(n) == 1;
}
#endif
