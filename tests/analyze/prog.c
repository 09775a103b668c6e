/*
 * prog.c - a small static program for check_analyze: a call chain whose
 * bottom either waits (blocked in read, for gcore) or aborts (qemu-user
 * writes a core).  Its core is walked twice: natively, with the CFI and
 * instruction analysis registered as native code, and through the managed
 * path, with the same imported as an SWU image; both give the same frames.
 */
#include <alloca.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

volatile int sink;

__attribute__((noinline)) static void bottom(int do_abort)
{
	char c;

	if (do_abort)
		abort();
	printf("ready\n");
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		sink++;
	sink++;
}

__attribute__((noinline)) void level3(int do_abort, int n)
{
	char *p = alloca((size_t)n);

	memset(p, 1, (size_t)n);
	sink += p[n - 1];
	bottom(do_abort);
	sink += p[0];
}

__attribute__((noinline)) void level2(int do_abort, int a, int b, int c, int d)
{
	int v[8];

	for (int i = 0; i < 8; i++)
		v[i] = sink + a * i + b;
	level3(do_abort, 16 + (c & 15));
	for (int i = 0; i < 8; i++)
		sink += v[i] * d + c;
}

__attribute__((noinline)) void level1(int do_abort)
{
	level2(do_abort, 1, 2, 3, 4);
	sink++;
}

int main(int argc, char **argv)
{
	level1(argc > 1 && strcmp(argv[1], "abort") == 0);
	return 0;
}
