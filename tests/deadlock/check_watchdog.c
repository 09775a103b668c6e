/*
 * check_watchdog.c - the watchdog catches a watched thread that deadlocks.
 *
 * The watched thread answers every ping from its loop for a while, then
 * takes mutex A and waits for mutex B, which another thread holds while
 * it waits for A.  The callback must receive a report with exactly that
 * cycle: the two thread ids from the lowest, each waiting on the lock
 * the other holds, with the watched thread's id.  A report without a
 * cycle (a slow machine that stalled the thread past the timeout before
 * it deadlocked) re-arms the watchdog for another report, five times at
 * most.  Also: the API's argument checks, and the report accessors
 * on the report received.
 *
 * Plain C (the watchdog forks a helper; Check's own fork is not wanted
 * here).  Exit 0 pass, 1 fail, 77 skip when ptrace is not permitted.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <stackwalk.h>
#include "hang_report.h"

#define ANSWERED_ROUNDS 20
#define MAX_REPORTS_WITHOUT_CYCLE 5

static pthread_mutex_t lock_a = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock_b = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t barrier;
static sw_watchdog *wd;
static int watched_tid, other_tid;
static volatile int deadlocking;
static sem_t fired;
static int failures, false_alarms, pings;
static sw_status last_status;

#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "FAIL: %s:%d: %s\n", __FILE__, \
	__LINE__, #cond); failures++; } } while (0)

static int tid_(void)
{
	return (int)syscall(SYS_gettid);
}

static void on_ping(sw_watchdog *w, void *arg)
{
	(void)w;
	__atomic_add_fetch((int *)arg, 1, __ATOMIC_RELAXED);
}

/* The index of thread `tid` in the report, or -1. */
static long thread_index(const sw_hang_report *r, int tid)
{
	for (size_t i = 0; i < sw_hang_report_thread_count(r); i++) {
		sw_hang_thread t;

		if (sw_hang_report_thread(r, i, &t) == SW_OK && t.tid == tid)
			return (long)i;
	}
	return -1;
}

/* Read every thread and frame of a report through the accessors. */
static void read_everything(const sw_hang_report *r)
{
	size_t members[8], len;

	for (size_t i = 0; i < sw_hang_report_thread_count(r); i++) {
		sw_hang_thread t;
		sw_hang_frame f;

		if (sw_hang_report_thread(r, i, &t) != SW_OK)
			continue;
		for (size_t k = 0; k < t.frames; k++)
			if (sw_hang_report_frame(r, i, k, &f) == SW_OK && f.function)
				(void)strlen(f.function);
		if (t.wchan)
			(void)strlen(t.wchan);
	}
	for (size_t c = 0; c < sw_hang_report_cycle_count(r); c++)
		sw_hang_report_cycle(r, c, members, NULL, 8, &len);
}

/*
 * The report crossed from the helper as bytes: the same bytes give the
 * same report, every shorter prefix is refused, and no flipped byte makes
 * a report whose accessors read out of bounds.
 */
static void check_bytes(const sw_hang_report *r)
{
	unsigned char *buf = NULL, *again = NULL;
	size_t len = 0, len2 = 0, refused = 0;
	sw_hang_report *copy = NULL;

	CHECK(swi_hang_report_serialize(r, &buf, &len) == SW_OK);
	if (!buf)
		return;
	CHECK(swi_hang_report_deserialize(buf, len, &copy) == SW_OK);
	CHECK(copy && swi_hang_report_serialize(copy, &again, &len2) == SW_OK);
	CHECK(again && len2 == len && memcmp(buf, again, len) == 0);
	sw_hang_report_free(copy);
	free(again);
	for (size_t n = 0; n < len; n++) {
		copy = NULL;
		refused += swi_hang_report_deserialize(buf, n, &copy) != SW_OK && !copy;
		sw_hang_report_free(copy);
	}
	CHECK(refused == len);
	for (size_t i = 0; i < len; i++) {
		buf[i] ^= 0xa5;
		copy = NULL;
		if (swi_hang_report_deserialize(buf, len, &copy) == SW_OK)
			read_everything(copy);
		sw_hang_report_free(copy);
		buf[i] ^= 0xa5;
	}
	free(buf);
}

static void check_report(const sw_hang_report *r, int tid)
{
	size_t members[4], len = 0;
	uint64_t locks[4];
	sw_hang_thread t0, t1, w;
	sw_hang_frame f;
	int low = watched_tid < other_tid ? watched_tid : other_tid;
	long wi = thread_index(r, watched_tid);

	CHECK(tid == watched_tid);
	CHECK(sw_hang_report_arch(r) == sw_arch_host());
	CHECK(sw_hang_report_cycle_count(r) == 1);
	CHECK(sw_hang_report_cycle(r, 0, members, locks, 4, &len) == SW_OK);
	CHECK(len == 2);
	if (len != 2)
		return;
	CHECK(sw_hang_report_thread(r, members[0], &t0) == SW_OK);
	CHECK(sw_hang_report_thread(r, members[1], &t1) == SW_OK);
	printf("callback: deadlock: %d %d (locks 0x%llx 0x%llx)\n", t0.tid, t1.tid,
	       (unsigned long long)locks[0], (unsigned long long)locks[1]);
	CHECK(t0.tid == low);
	CHECK(t1.tid == (low == watched_tid ? other_tid : watched_tid));
	CHECK(t0.cls == SW_HANG_DEADLOCKED && t1.cls == SW_HANG_DEADLOCKED);
	CHECK(t0.owner == t1.tid && t1.owner == t0.tid);
	CHECK(t0.lock_kind == SW_LOCK_MUTEX && t1.lock_kind == SW_LOCK_MUTEX);
	/* The watched thread holds A and waits on B; the other the reverse. */
	CHECK(wi >= 0);
	if (wi >= 0 && sw_hang_report_thread(r, (size_t)wi, &w) == SW_OK) {
		CHECK(w.lock == (uint64_t)(uintptr_t)&lock_b);
		CHECK(w.owner == other_tid);
		CHECK(w.frames > 0);
		CHECK(sw_hang_report_frame(r, (size_t)wi, 0, &f) == SW_OK && f.pc != 0);
		CHECK(sw_hang_report_frame(r, (size_t)wi, w.frames, &f) == SW_E_INVAL);
	}
	CHECK(locks[0] == t0.lock && locks[1] == t1.lock);
	CHECK(sw_hang_report_cycle(r, 1, NULL, NULL, 0, &len) == SW_E_INVAL);
	CHECK(sw_hang_report_thread(r, sw_hang_report_thread_count(r), &t0) == SW_E_INVAL);
	CHECK(strcmp(sw_hang_class_name(SW_HANG_DEADLOCKED), "deadlocked") == 0);
	CHECK(strcmp(sw_lock_kind_name(SW_LOCK_MUTEX), "mutex") == 0);
	CHECK(sw_hang_class_name((sw_hang_class)99) == NULL);
	check_bytes(r);
}

static void on_hang(sw_watchdog *w, int tid, const sw_hang_report *r, sw_status st, void *arg)
{
	(void)arg;
	CHECK(w == wd);
	last_status = st;
	if (st != SW_OK) {
		sem_post(&fired);
		return;
	}
	if (!deadlocking || sw_hang_report_cycle_count(r) == 0) {
		/*
		 * Stalled before it deadlocked (a loaded machine): arming again
		 * pings again, so the next report comes once the new ping is
		 * left unanswered.  Bounded: a report that never shows the
		 * cycle fails.
		 */
		printf("report without the cycle (deadlocking %d):\n", deadlocking);
		for (size_t i = 0; i < sw_hang_report_thread_count(r); i++) {
			sw_hang_thread t;

			if (sw_hang_report_thread(r, i, &t) == SW_OK)
				printf("  %d %s lock 0x%llx owner %d frames %zu\n", t.tid,
				       sw_hang_class_name(t.cls), (unsigned long long)t.lock, t.owner,
				       t.frames);
		}
		if (++false_alarms <= MAX_REPORTS_WITHOUT_CYCLE &&
		    sw_watchdog_arm(w, watched_tid, 1000, on_ping, &pings) == SW_OK)
			return;
		fprintf(stderr, "FAIL: %d reports without the deadlock\n", false_alarms);
		failures++;
		sem_post(&fired);
		return;
	}
	check_report(r, tid);
	sem_post(&fired);
}

static void sleep_ms(int ms)
{
	struct timespec d = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&d, NULL);
}

static void *watched(void *arg)
{
	(void)arg;
	watched_tid = tid_();
	CHECK(sw_watchdog_arm(wd, 0, 1000, on_ping, &pings) == SW_OK);
	for (int i = 0; i < ANSWERED_ROUNDS; i++) {
		sw_watchdog_answer(wd);
		sleep_ms(10);
	}
	pthread_mutex_lock(&lock_a);
	pthread_barrier_wait(&barrier);
	deadlocking = 1;
	pthread_mutex_lock(&lock_b);
	return NULL;
}

static void *other(void *arg)
{
	(void)arg;
	other_tid = tid_();
	pthread_mutex_lock(&lock_b);
	pthread_barrier_wait(&barrier);
	pthread_mutex_lock(&lock_a);
	return NULL;
}

int main(void)
{
	pthread_t t1, t2;
	struct timespec until;
	sw_status st;
	int rc;

	setvbuf(stdout, NULL, _IOLBF, 0);
	/* Argument checks. */
	CHECK(sw_watchdog_create(NULL, NULL, NULL, &wd) == SW_E_INVAL);
	CHECK(sw_watchdog_create(on_hang, NULL, NULL, NULL) == SW_E_INVAL);
	CHECK(sw_watchdog_arm(NULL, 0, 1000, NULL, NULL) == SW_E_INVAL);
	CHECK(sw_watchdog_disarm(NULL) == SW_E_INVAL);
	sw_watchdog_answer(NULL);
	sw_watchdog_destroy(NULL);
	/* The analysis refuses what it cannot do, and NULL reports are empty. */
	{
		sw_hang_report *r = (sw_hang_report *)&failures;
		sw_hang_thread t;
		sw_hang_frame f;
		size_t len;

		CHECK(sw_hang_analyze_process(0, NULL, &r) == SW_E_INVAL && r == NULL);
		CHECK(sw_hang_analyze_process(-5, NULL, &r) == SW_E_INVAL);
		CHECK(sw_hang_analyze_process(getpid(), NULL, &r) == SW_E_INVAL);
		CHECK(sw_hang_analyze_process(getpid() + 1, NULL, NULL) == SW_E_INVAL);
		CHECK(sw_hang_analyze_core(NULL, NULL, &r) == SW_E_INVAL && r == NULL);
		CHECK(sw_hang_analyze_core(NULL, NULL, NULL) == SW_E_INVAL);
		CHECK(sw_hang_report_thread_count(NULL) == 0);
		CHECK(sw_hang_report_cycle_count(NULL) == 0);
		CHECK(sw_hang_report_arch(NULL) == SW_ARCH_NONE);
		CHECK(sw_hang_report_thread(NULL, 0, &t) == SW_E_INVAL);
		CHECK(sw_hang_report_frame(NULL, 0, 0, &f) == SW_E_INVAL);
		CHECK(sw_hang_report_cycle(NULL, 0, NULL, NULL, 0, &len) == SW_E_INVAL);
		CHECK(sw_lock_kind_name((sw_lock_kind)-1) == NULL);
		sw_hang_report_free(NULL);
	}

	/* Create, arm, disarm and destroy with nothing wrong: no callback. */
	st = sw_watchdog_create(on_hang, NULL, NULL, &wd);
	if (st == SW_E_UNSUPPORTED) {
		printf("SKIP: no ptrace on this host\n");
		return 77;
	}
	CHECK(st == SW_OK);
	CHECK(sw_watchdog_arm(wd, 0, 5, NULL, NULL) == SW_E_INVAL);
	CHECK(sw_watchdog_arm(wd, 0, 1000, NULL, NULL) == SW_OK);
	sw_watchdog_answer(wd);
	CHECK(sw_watchdog_disarm(wd) == SW_OK);
	sw_watchdog_destroy(wd);

	/* The deadlock. */
	sem_init(&fired, 0, 0);
	pthread_barrier_init(&barrier, NULL, 2);
	CHECK(sw_watchdog_create(on_hang, NULL, NULL, &wd) == SW_OK);
	pthread_create(&t1, NULL, watched, NULL);
	pthread_create(&t2, NULL, other, NULL);
	/* Bounded: 10 minutes means the callback never came. */
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += 600;
	while ((rc = sem_timedwait(&fired, &until)) != 0 && errno == EINTR)
		;
	if (rc != 0) {
		fprintf(stderr, "FAIL: the callback never received the deadlock\n");
		failures++;
	} else if (last_status != SW_OK) {
		printf("analysis failed: %s\n", sw_strerror(last_status));
		if (last_status == SW_E_BADADDR) {
			printf("SKIP: ptrace is not permitted\n");
			return 77;
		}
		failures++;
	}
	CHECK(pings > 0);
	printf("pings %d, reports without the cycle %d\n", pings, false_alarms);
	sw_watchdog_destroy(wd);
	printf("%s: %d failures\n", failures ? "FAIL" : "PASS", failures);
	/* The two deadlocked threads stay; exit ends them. */
	return failures ? 1 : 0;
}
