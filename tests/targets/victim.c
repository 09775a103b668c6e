/*
 * victim.c - the program tests/check_targets.c attaches to or takes core
 * files of.  Built natively by make check and cross-built statically for
 * i686 and aarch64 by the test itself, so it uses nothing but C and POSIX.
 *
 *   victim MODE NTHREADS
 *
 * It starts NTHREADS threads (besides main); each stores a marker on its own
 * stack and blocks.  Then it prints what the test checks, one "key value"
 * per line and "ready" last:
 *
 *   pid P
 *   magic_addr A      address of the global victim_magic
 *   magic V           its value
 *   marker I A V      thread I's stack marker: address and value
 *   ready
 *
 * MODE says what happens next:
 *   wait   main blocks reading stdin; at end of input the threads are
 *          released, joined, and the program exits 0
 *   stop   as wait, but main first stops the process (SIGSTOP to itself)
 *   abort  main calls abort(): the kernel, or qemu-user, writes a core
 *   churn  as wait, with one more thread that starts and joins short-lived
 *          threads until released (threads come and go while a tracer attaches)
 */
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_THREADS 16

volatile uint64_t victim_magic = 0x5357434f52454d41ull;  /* "SWCOREMA" */

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int started, released;
static volatile uint64_t *markers[MAX_THREADS];

static void *short_lived(void *arg)
{
	return arg;
}

static void *churn_main(void *arg)
{
	for (;;) {
		pthread_t t;
		int stop;

		pthread_mutex_lock(&lock);
		stop = released;
		pthread_mutex_unlock(&lock);
		if (stop || pthread_create(&t, NULL, short_lived, arg) != 0)
			return arg;
		pthread_join(t, NULL);
	}
}

static void *thread_main(void *arg)
{
	volatile uint64_t marker = 0x4d41524b00000000ull | (uintptr_t)arg;  /* "MARK" | index */

	pthread_mutex_lock(&lock);
	markers[(uintptr_t)arg] = &marker;
	started++;
	pthread_cond_broadcast(&cond);
	while (!released)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	return (void *)(uintptr_t)(marker & 0xff);
}

int main(int argc, char **argv)
{
	pthread_t threads[MAX_THREADS], churner;
	pthread_attr_t attr;
	char buf[64];
	int n;

	if (argc != 3 || (n = atoi(argv[2])) < 0 || n > MAX_THREADS) {
		fprintf(stderr, "usage: victim wait|stop|abort NTHREADS (0-%d)\n", MAX_THREADS);
		return 2;
	}
	/* Small stacks keep the core files small. */
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 128 * 1024);
	for (int i = 0; i < n; i++)
		if (pthread_create(&threads[i], &attr, thread_main, (void *)(uintptr_t)i) != 0) {
			perror("pthread_create");
			return 1;
		}
	pthread_mutex_lock(&lock);
	while (started < n)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);

	printf("pid %ld\nmagic_addr 0x%llx\nmagic 0x%llx\n", (long)getpid(),
	       (unsigned long long)(uintptr_t)&victim_magic, (unsigned long long)victim_magic);
	for (int i = 0; i < n; i++)
		printf("marker %d 0x%llx 0x%llx\n", i, (unsigned long long)(uintptr_t)markers[i],
		       (unsigned long long)*markers[i]);
	printf("ready\n");
	fflush(stdout);

	if (strcmp(argv[1], "churn") == 0 && pthread_create(&churner, NULL, churn_main, NULL) != 0)
		return 1;
	if (strcmp(argv[1], "abort") == 0)
		abort();
	if (strcmp(argv[1], "stop") == 0)
		raise(SIGSTOP);
	while (fgets(buf, sizeof buf, stdin))
		;
	pthread_mutex_lock(&lock);
	released = 1;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
	if (strcmp(argv[1], "churn") == 0)
		pthread_join(churner, NULL);
	for (int i = 0; i < n; i++) {
		void *ret;

		pthread_join(threads[i], &ret);
		if ((uintptr_t)ret != (uintptr_t)i)
			return 1;
	}
	printf("done\n");
	return 0;
}
