/*
 * lib.c - a shared object for check_cfi: position-independent code, PLT
 * calls, exported and local functions.
 */
#include <stdio.h>
#include <string.h>

static int cfi_lib_local(const char *s, int n)
{
	char buf[64];

	snprintf(buf, sizeof buf, "%s:%d", s, n);
	return (int)strlen(buf) + n;
}

int cfi_lib_exported(int n)
{
	int s = 0;

	for (int i = 0; i < n; i++)
		s += cfi_lib_local("x", i * n);
	return s;
}

int cfi_lib_recurse(int n)
{
	return n < 2 ? cfi_lib_exported(n) : cfi_lib_recurse(n - 1) + cfi_lib_recurse(n - 2);
}
