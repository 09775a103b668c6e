/*
 * victim.c - a program that deadlocks (or hangs, or works) on purpose, for
 * swdeadlock's tests.  Built for x86-64, i686 and aarch64.
 *
 *   victim SCENARIO [wait|abort]
 *
 * Scenarios:
 *   abba     two threads take two mutexes in opposite orders
 *   three    three threads, three mutexes, a cycle through all of them
 *   rwlock   a writer of an rwlock waits on a mutex whose holder waits on
 *            a mutex whose holder waits to read the rwlock; a fourth
 *            thread waits to write it (blocked, in no cycle)
 *   multi    two deadlocks at once: an ABBA pair, and a thread that locks
 *            its own (normal) mutex again
 *   spin     one thread spins in a loop, one sleeps, one blocks in read(),
 *            one waits on a mutex whose owner has exited
 *   healthy  four threads share a mutex and compute, forever
 *
 * Once every thread that should block is blocked in a futex (read from
 * /proc/self/task/TID/syscall: under qemu-user, the host's futex call),
 * it prints what swdeadlock must say, one "expect: " line each:
 *
 *   expect: deadlock: TID TID ...              (from the lowest id)
 *   expect: thread TID waits on KIND 0xADDR held by TID
 *   expect-class: TID CLASS
 *
 * then "ready", and waits forever ("wait") or aborts ("abort", for a core).
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>

#define MAX_THREADS 8

static pthread_mutex_t mutexes[3] = {
	PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER, PTHREAD_MUTEX_INITIALIZER
};
static pthread_rwlock_t rwlock = PTHREAD_RWLOCK_INITIALIZER;
static pthread_barrier_t barrier;

/* What one thread does: takes `first`, meets the others, waits on `second`. */
struct role {
	volatile int tid;       /* volatile: set before started, read by main */
	void *first, *second;           /* a mutex or &rwlock; second may be NULL */
	int first_write, second_write;  /* for the rwlock: write (1) or read (0) */
	int blocks;                     /* expected to block on `second` */
	volatile int started;
	volatile int past_barrier;      /* set after the barrier, before `second` */
};

static struct role roles[MAX_THREADS];
static int nroles;
static int pipefd[2];

static int gettid_(void)
{
	return (int)syscall(SYS_gettid);
}

static void take(void *lock, int write)
{
	if (lock == &rwlock) {
		if (write)
			pthread_rwlock_wrlock(&rwlock);
		else
			pthread_rwlock_rdlock(&rwlock);
	} else {
		pthread_mutex_lock(lock);
	}
}

static void *role_thread(void *arg)
{
	struct role *r = arg;

	r->tid = gettid_();
	if (r->first)
		take(r->first, r->first_write);
	r->started = 1;
	pthread_barrier_wait(&barrier);
	r->past_barrier = 1;
	if (r->second)
		take(r->second, r->second_write);
	pause();
	return NULL;
}

static void *spin_thread(void *arg)
{
	volatile unsigned long n = 0;

	roles[(intptr_t)arg].tid = gettid_();
	roles[(intptr_t)arg].started = 1;
	for (;;)
		n++;
	return NULL;
}

static void *sleep_thread(void *arg)
{
	roles[(intptr_t)arg].tid = gettid_();
	roles[(intptr_t)arg].started = 1;
	for (;;)
		sleep(100);
	return NULL;
}

static void *read_thread(void *arg)
{
	char c;

	roles[(intptr_t)arg].tid = gettid_();
	roles[(intptr_t)arg].started = 1;
	for (;;)
		if (read(pipefd[0], &c, 1) <= 0)
			pause();
	return NULL;
}

/* Takes a mutex and ends without unlocking it: the mutex names a thread that is gone. */
static void *orphan_thread(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&mutexes[2]);
	return NULL;
}

static void *healthy_thread(void *arg)
{
	static volatile unsigned long shared;

	roles[(intptr_t)arg].tid = gettid_();
	roles[(intptr_t)arg].started = 1;
	for (;;) {
		volatile unsigned long x = 0;

		pthread_mutex_lock(&mutexes[0]);
		shared++;
		pthread_mutex_unlock(&mutexes[0]);
		for (int i = 0; i < 10000; i++)
			x += (unsigned long)i;
	}
	return NULL;
}

/*
 * Is thread `tid` in a futex call on the lock object at `lock` (`size`
 * bytes)?  Any arch's syscall number: under qemu the host's shows.  The
 * futex address must fall inside the lock, so a thread still in the
 * barrier's futex, or in one of qemu's own, does not count.  Under qemu the
 * host address is the guest's plus a page-aligned base, so only the page
 * offset is compared.
 */
static int in_futex_on(int tid, const void *lock, size_t size)
{
	char path[64], buf[256];
	FILE *f;
	char *p;
	long nr;
	unsigned long addr;

	snprintf(path, sizeof path, "/proc/self/task/%d/syscall", tid);
	if (!(f = fopen(path, "r")))
		return 0;
	if (!fgets(buf, sizeof buf, f))
		buf[0] = '\0';
	fclose(f);
	nr = strtol(buf, &p, 10);
	if (!(nr == 202 || nr == 240 || nr == 422 || nr == 98))
		return 0;
	addr = strtoul(p, NULL, 0);
	return ((addr - (unsigned long)(uintptr_t)lock) & 0xfffUL) < size;
}

static void sleep_ms(int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&d, NULL);
}

static void wait_blocked(void)
{
	for (int i = 0; i < nroles; i++) {
		int tries = 0;

		while (!roles[i].started)
			sleep_ms(1);
		/* 60 s at most: a thread that never blocks is a broken scenario. */
		while (roles[i].blocks &&
		       !(roles[i].past_barrier &&
			 in_futex_on(roles[i].tid, roles[i].second,
				     roles[i].second == &rwlock ? sizeof rwlock
								: sizeof mutexes[0]))) {
			if (++tries > 60000) {
				fprintf(stderr, "victim: thread %d never blocked\n", roles[i].tid);
				exit(3);
			}
			sleep_ms(1);
		}
	}
}

static const char *kind(const struct role *r)
{
	if (r->second != &rwlock)
		return "mutex";
	return r->second_write ? "rwlock-write" : "rwlock-read";
}

/* The holder of `lock` among the roles (its first lock), or -1. */
static int holder(void *lock)
{
	for (int i = 0; i < nroles; i++)
		if (roles[i].first == lock && (lock != &rwlock || roles[i].first_write))
			return i;
	return -1;
}

/* Print the expected cycle through roles[first .. first + len), from the lowest thread id. */
static void expect_cycle_at(int first, int len)
{
	int low = 0;

	for (int i = 1; i < len; i++)
		if (roles[first + i].tid < roles[first + low].tid)
			low = i;
	printf("expect: deadlock:");
	for (int k = 0, i = low; k < len; k++, i = (i + 1) % len)
		printf(" %d", roles[first + i].tid);
	printf("\n");
}

static void expect_cycle(int len)
{
	expect_cycle_at(0, len);
}

static void expect_waits(void)
{
	for (int i = 0; i < nroles; i++) {
		int h;

		if (!roles[i].blocks || (h = holder(roles[i].second)) < 0)
			continue;
		printf("expect: thread %d waits on %s 0x%lx held by %d\n", roles[i].tid, kind(&roles[i]),
		       (unsigned long)(uintptr_t)roles[i].second, roles[h].tid);
	}
}

static void start(int n, void *(*fn)(void *))
{
	pthread_t t;

	for (int i = 0; i < n; i++) {
		if (fn)
			pthread_create(&t, NULL, fn, (void *)(intptr_t)nroles);
		else
			pthread_create(&t, NULL, role_thread, &roles[nroles]);
		nroles++;
	}
}

static void role(int i, void *first, int first_write, void *second, int second_write)
{
	roles[i] = (struct role){ .first = first, .second = second, .first_write = first_write,
				  .second_write = second_write, .blocks = second != NULL };
}

int main(int argc, char **argv)
{
	const char *s = argc > 1 ? argv[1] : "";
	int do_abort = argc > 2 && strcmp(argv[2], "abort") == 0;
	pthread_t orphan;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (strcmp(s, "abba") == 0) {
		role(0, &mutexes[0], 0, &mutexes[1], 0);
		role(1, &mutexes[1], 0, &mutexes[0], 0);
		pthread_barrier_init(&barrier, NULL, 2);
		start(2, NULL);
		wait_blocked();
		expect_cycle(2);
	} else if (strcmp(s, "three") == 0) {
		role(0, &mutexes[0], 0, &mutexes[1], 0);
		role(1, &mutexes[1], 0, &mutexes[2], 0);
		role(2, &mutexes[2], 0, &mutexes[0], 0);
		pthread_barrier_init(&barrier, NULL, 3);
		start(3, NULL);
		wait_blocked();
		expect_cycle(3);
	} else if (strcmp(s, "rwlock") == 0) {
		role(0, &rwlock, 1, &mutexes[0], 0);
		role(1, &mutexes[0], 0, &mutexes[1], 0);
		role(2, &mutexes[1], 0, &rwlock, 0);
		role(3, NULL, 0, &rwlock, 1);
		pthread_barrier_init(&barrier, NULL, 4);
		start(4, NULL);
		wait_blocked();
		expect_cycle(3);
		printf("expect-class: %d lock-wait\n", roles[3].tid);
		printf("expect-behind: %d %d\n", roles[3].tid,
		       roles[0].tid < roles[1].tid && roles[0].tid < roles[2].tid ? roles[0].tid :
		       roles[1].tid < roles[2].tid ? roles[1].tid : roles[2].tid);
	} else if (strcmp(s, "multi") == 0) {
		/* Two deadlocks at once: an ABBA pair, and a thread relocking its own mutex. */
		role(0, &mutexes[0], 0, &mutexes[1], 0);
		role(1, &mutexes[1], 0, &mutexes[0], 0);
		role(2, &mutexes[2], 0, &mutexes[2], 0);
		pthread_barrier_init(&barrier, NULL, 3);
		start(3, NULL);
		wait_blocked();
		expect_cycle(2);
		expect_cycle_at(2, 1);
	} else if (strcmp(s, "spin") == 0) {
		if (pipe(pipefd) != 0)
			return 2;
		start(1, spin_thread);
		start(1, sleep_thread);
		start(1, read_thread);
		pthread_create(&orphan, NULL, orphan_thread, NULL);
		pthread_join(orphan, NULL);
		role(3, NULL, 0, &mutexes[2], 0);
		pthread_barrier_init(&barrier, NULL, 1);
		start(1, NULL);
		wait_blocked();
		sleep_ms(100);  /* let the sleeper and the reader reach their calls */
		printf("expect-class: %d busy\n", roles[0].tid);
		printf("expect-class: %d idle\n", roles[1].tid);
		printf("expect-class: %d io-wait\n", roles[2].tid);
		printf("expect-class: %d lock-no-owner\n", roles[3].tid);
	} else if (strcmp(s, "healthy") == 0) {
		start(4, healthy_thread);
		wait_blocked();
	} else {
		fprintf(stderr, "usage: victim abba|three|rwlock|multi|spin|healthy [wait|abort]\n");
		return 2;
	}
	expect_waits();
	printf("ready\n");
	if (do_abort)
		abort();
	for (;;)
		pause();
}
