/*
 * swprof_victim.c - a program for swprof.test to profile: two threads and
 * the main thread burn CPU in recognisable functions for a moment.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void burn_leaf(void)
{
	for (int i = 0; i < 10000; i++)
		sink += (unsigned long)i * 7;
}

__attribute__((noinline)) static void burn_cpu(double seconds)
{
	double end = now() + seconds;

	while (now() < end)
		burn_leaf();
}

static void *worker(void *arg)
{
	(void)arg;
	burn_cpu(0.3);
	return NULL;
}

int main(void)
{
	pthread_t t[2];

	for (int i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	burn_cpu(0.3);
	for (int i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	printf("%d\n", sink != 0);
	return 0;
}
