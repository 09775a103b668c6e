/*
 * lli-rec.c - a program for lli (tests/swstack-lli.test, swprof-lli.test):
 * main recurses through jit_even and jit_odd six times to jit_leaf, which
 * creates the file named by argv[1] and blocks in pause(), or with a
 * second argument "burn" spins in JIT code for a profiler.  Compiled to IR with
 * clang -O1 -fomit-frame-pointer, so the JIT frames are unwound by the
 * CFI lli registers with gdb, not by frame pointers.
 */
#include <fcntl.h>
#include <unistd.h>

static volatile int sink;
static int burn;

__attribute__((noinline)) int jit_leaf(int n, const char *ready)
{
	close(creat(ready, 0644));
	while (burn)
		sink++;
	for (;;)
		pause();
	return n + sink;
}

__attribute__((noinline)) int jit_odd(int n, const char *ready);

__attribute__((noinline)) int jit_even(int n, const char *ready)
{
	int r = n == 0 ? jit_leaf(n, ready) : jit_odd(n - 1, ready);

	sink += r;
	return r + 1;
}

__attribute__((noinline)) int jit_odd(int n, const char *ready)
{
	int r = n == 0 ? jit_leaf(n, ready) : jit_even(n - 1, ready);

	sink += r;
	return r + 2;
}

int main(int argc, char **argv)
{
	burn = argc > 2;
	return argc > 1 ? jit_even(5, argv[1]) & 1 : 2;
}
