/*
 * prog.c - a program whose only purpose is its CFI: check_cfi compiles it
 * for x86-64, i386 and arm64 at several optimization levels, with and
 * without frame pointers, imports its CFI and compares every address with
 * libdw.  Nothing runs it.  The functions have the shapes that give CFI
 * its variety: many callee-saved registers, dynamic allocation (a frame
 * register even without frame pointers), large frames, recursion,
 * varargs, cold paths split off, several epilogs, tail calls, leaves.
 */
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

volatile int cfi_sink;

__attribute__((noinline)) int cfi_leaf(int x)
{
	return x * 3 + 1;
}

__attribute__((noinline)) int cfi_many_regs(int a, int b, int c, int d)
{
	int v[12];

	for (int i = 0; i < 12; i++)
		v[i] = cfi_leaf(a + i) ^ b;
	for (int i = 0; i < 12; i++)
		c += cfi_leaf(v[i] + d) * v[(i + 5) % 12];
	return c + v[0] * v[11] + v[3] * v[7] + v[1] * v[9];
}

__attribute__((noinline)) int cfi_alloca(int n)
{
	char *p = __builtin_alloca((size_t)(n & 255) + 16);

	memset(p, n, (size_t)(n & 255) + 16);
	return cfi_leaf(p[n & 15]) + (int)p[3];
}

__attribute__((noinline)) int cfi_vla(int n)
{
	int v[(n & 63) + 1];

	for (int i = 0; i <= (n & 63); i++)
		v[i] = cfi_leaf(i);
	return v[n & 63] + cfi_many_regs(n, v[0], 1, 2);
}

__attribute__((noinline)) int cfi_big_frame(int n)
{
	volatile char buf[9000];

	buf[n % 9000] = (char)n;
	return buf[(n * 7) % 9000] + cfi_leaf(n);
}

__attribute__((noinline)) int cfi_recurse(int n)
{
	if (n <= 1)
		return 1;
	return cfi_recurse(n - 1) + cfi_recurse(n - 2) * cfi_leaf(n);
}

__attribute__((noinline)) int cfi_varargs(int n, ...)
{
	va_list ap;
	int s = 0;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		s += va_arg(ap, int) * cfi_leaf(i);
	va_end(ap);
	return s;
}

__attribute__((noinline, cold)) void cfi_fail(const char *why)
{
	cfi_sink = (int)strlen(why);
	abort();
}

__attribute__((noinline)) int cfi_checked(int *p, int n)
{
	int s = 0;

	for (int i = 0; i < n; i++) {
		if (__builtin_expect(p[i] < 0, 0)) {
			cfi_sink = cfi_many_regs(p[i], i, s, n);
			cfi_fail("negative");
		}
		s += cfi_leaf(p[i]);
	}
	return s;
}

__attribute__((noinline)) int cfi_epilogs(int x, int y)
{
	int a = cfi_leaf(x), b = cfi_leaf(y);

	if (x > 10)
		return a + cfi_leaf(b);
	if (y > 10)
		return b * cfi_many_regs(a, b, x, y);
	switch (x & 7) {
	case 0: return cfi_alloca(a);
	case 1: return cfi_vla(b);
	case 2: return cfi_recurse(a & 7) + b;
	case 3: return a - b;
	default: return cfi_leaf(a ^ b);
	}
}

__attribute__((noinline)) int cfi_tail(int x)
{
	if (x & 1)
		return cfi_leaf(x + 1);         /* a tail call at -O2 */
	return cfi_epilogs(x, x >> 1);
}

/* Doubles live across calls: arm64 saves d8 and d9 (callee-saved) to keep them
 * (noipa: or gcc sees which registers cfi_scale leaves alone). */
__attribute__((noinline, noipa)) double cfi_scale(double x)
{
	return x * 1.5 + cfi_sink;
}

__attribute__((noinline)) double cfi_keep_double(double x)
{
	double a = cfi_scale(x), b = cfi_scale(a + x);

	return a * b + x + cfi_scale(b);
}

static int (*const cfi_table[])(int) = { cfi_leaf, cfi_alloca, cfi_vla, cfi_big_frame,
                                         cfi_recurse, cfi_tail };

int main(int argc, char **argv)
{
	int v[4] = { argc, 2, 3, 4 };
	int s = 0;

	for (unsigned i = 0; i < sizeof cfi_table / sizeof cfi_table[0]; i++)
		s += cfi_table[i](argc + (int)i);
	s += cfi_varargs(3, argc, 5, 6) + cfi_checked(v, 4) + (argv[0] ? 1 : 0);
	s += (int)cfi_keep_double(argc);
	cfi_sink = s;
	return 0;
}
