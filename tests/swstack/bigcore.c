/*
 * bigcore.c - the program tests/swstack-bigcore.test dumps: it reserves
 * 6 GiB of anonymous memory, touches one page of it, and aborts two calls
 * below main.  The kernel's core then claims 6 GiB but is sparse (it
 * skips pages never touched), a few hundred KiB of disk.
 */
#include <stdlib.h>
#include <sys/mman.h>

#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

NOIPA static void big_crash(volatile char *p)
{
	p[0] = 1;
	abort();
}

NOIPA static void big_touch(char *p, size_t n)
{
	big_crash(p + n / 2);
}

int main(void)
{
	size_t n = (size_t)6 << 30;
	char *p = mmap(NULL, n, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
	               -1, 0);

	if (p == MAP_FAILED)
		return 2;
	big_touch(p, n);
	return 0;
}
