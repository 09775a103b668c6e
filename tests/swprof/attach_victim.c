/*
 * attach_victim.c - what swprof-attach.test profiles with swprof -p and
 * perf record -p at once: three threads burning CPU in known functions at
 * known depths, until killed.  "ready" on standard output once they run.
 *
 *   shallow: shallow_a -> shallow_b -> burn_shallow
 *   deep:    deep_start -> descend x DEEP_LEVELS -> burn_deep
 *   wide:    wide_frames (a 4 KiB frame) x 3 -> burn_wide
 *
 * Built without inlining or sibling calls, so that every call is a frame
 * both profilers see.
 */
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#define DEEP_LEVELS 40
#define SPIN 200000

static volatile unsigned long sink;

__attribute__((noinline)) static void spin(void)
{
	for (unsigned i = 0; i < SPIN; i++)
		sink += i;
}

/* Each different, so that no compiler folds them into one. */
__attribute__((noinline)) static void burn_shallow(void) { spin(); sink += 1; }
__attribute__((noinline)) static void burn_deep(void) { spin(); sink += 2; }
__attribute__((noinline)) static void burn_wide(void) { spin(); sink += 3; }

__attribute__((noinline)) static void shallow_b(void) { burn_shallow(); sink++; }
__attribute__((noinline)) static void shallow_a(void) { shallow_b(); sink++; }

__attribute__((noinline)) static void descend(int n)
{
	if (n > 0)
		descend(n - 1);
	else
		burn_deep();
	sink++;
}

/* A frame of 4 KiB that the compiler cannot drop. */
__attribute__((noinline)) static void wide_frames(int n)
{
	volatile char pad[4096];

	pad[n] = (char)n;
	if (n > 0)
		wide_frames(n - 1);
	else
		burn_wide();
	sink += (unsigned long)pad[n];
}

static void *shallow(void *arg) { for (;;) shallow_a(); return arg; }
static void *deep(void *arg) { for (;;) descend(DEEP_LEVELS); return arg; }
static void *wide(void *arg) { for (;;) wide_frames(2); return arg; }

int main(void)
{
	pthread_t t[3];

	if (pthread_create(&t[0], NULL, shallow, NULL) || pthread_create(&t[1], NULL, deep, NULL) ||
	    pthread_create(&t[2], NULL, wide, NULL))
		return 1;
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
