/*
 * swprof_cputime.c - a program for swprof-cputime.test: the main thread
 * waits in wait_for_spinner (no CPU) while a thread it started late
 * spins in spin_cpu for 0.3 s of that thread's CPU time.  CPU-time
 * sampling finds the spinner and (almost) never the waiter; wall-clock
 * sampling finds both.
 */
#include <pthread.h>
#include <stdio.h>
#include <time.h>

static volatile unsigned long sink;
/* Read at run time: no specialised copy of spin_cpu under another name. */
static volatile double spin_seconds = 0.3;

static double thread_cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_cpu(double seconds)
{
	double end = thread_cpu_seconds() + seconds;

	while (thread_cpu_seconds() < end)
		for (int i = 0; i < 1000; i++)
			sink += (unsigned long)i;
}

static void *spinner(void *arg)
{
	(void)arg;
	spin_cpu(spin_seconds);
	return NULL;
}

__attribute__((noinline)) static void wait_for_spinner(pthread_t t)
{
	pthread_join(t, NULL);
	sink++;         /* not a tail call: the frame stays on the stack */
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, spinner, NULL) != 0)
		return 1;
	wait_for_spinner(t);
	printf("%d\n", sink != 0);
	return 0;
}
