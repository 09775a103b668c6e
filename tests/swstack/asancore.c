/*
 * asancore.c - the program tests/swstack-asancore.test dumps, built with
 * -fsanitize=address.  AddressSanitizer reserves its shadow memory (about
 * 20 TiB on x86-64) and marks it MADV_DONTDUMP, so the kernel's core holds
 * PT_LOAD headers that claim terabytes with no bytes in the file.  Three
 * threads park in pause(); main aborts four calls down, holding a heap
 * block that the sanitizer tracks.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <unistd.h>

#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

#define NTHREADS 3

static atomic_int parked;

NOIPA static void asan_park(void)
{
	atomic_fetch_add(&parked, 1);
	for (;;)
		pause();
}

NOIPA static void *asan_worker(void *arg)
{
	(void)arg;
	asan_park();
	return NULL;
}

NOIPA static void asan_crash(volatile char *p)
{
	p[0] = 1;
	abort();
}

NOIPA static void asan_deep(int n)
{
	char *p = malloc(64);

	if (!p)
		exit(2);
	if (n > 0)
		asan_deep(n - 1);
	else
		asan_crash(p);
	free(p);
}

int main(void)
{
	pthread_t t[NTHREADS];

	for (int i = 0; i < NTHREADS; i++)
		if (pthread_create(&t[i], NULL, asan_worker, NULL) != 0)
			return 2;
	/* Every worker in asan_park before the core is written. */
	while (atomic_load(&parked) < NTHREADS)
		usleep(1000);
	usleep(20000);
	asan_deep(3);
	return 0;
}
