/*
 * swwatchdog - how a runtime uses the watchdog: its main loop is armed
 * with a timeout and answers each ping; after a few rounds the loop takes
 * two locks in the opposite order from a worker thread, and deadlocks.
 * The watchdog's callback prints what the analysis found, as swdeadlock
 * prints it, and ends the process.
 *
 *   swwatchdog [TIMEOUT_MS]
 *
 * Exit status 1 when the callback saw the deadlock, 2 when the analysis
 * failed (errno's reason on standard error: ptrace not permitted, say).
 * See sw_watchdog(3).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <stackwalk.h>
#include "tool_options.h"
#include "escape.h"

static void print_usage(FILE *f)
{
	fprintf(f, "usage: swwatchdog [TIMEOUT_MS]\n       swwatchdog --help | --version\n");
}

static pthread_mutex_t accounts = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t journal = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both_hold_one;
static sw_watchdog *wd;

static void print_thread(const sw_hang_report *r, size_t i)
{
	sw_hang_thread t;

	if (sw_hang_report_thread(r, i, &t) != SW_OK)
		return;
	printf("  thread %d (%s)", t.tid, sw_hang_class_name(t.cls));
	if (t.lock_kind != SW_LOCK_NONE)
		printf(" waits on %s 0x%" PRIx64 " held by %d", sw_lock_kind_name(t.lock_kind), t.lock,
		       t.owner);
	printf("\n");
	for (size_t k = 0; k < t.frames; k++) {
		sw_hang_frame f;

		if (sw_hang_report_frame(r, i, k, &f) != SW_OK)
			continue;
		printf("    #%-2zu 0x%" PRIx64 " in ", k, f.pc);
		print_escaped(stdout, f.function ? f.function : "??");
		putchar('\n');
	}
}

/* Called on the watchdog's thread: the main loop missed its deadline. */
static void on_hang(sw_watchdog *w, int tid, const sw_hang_report *r, sw_status st, void *arg)
{
	size_t members[64], len;

	(void)w;
	(void)arg;
	printf("watchdog: thread %d did not answer\n", tid);
	if (st != SW_OK) {
		fprintf(stderr, "swwatchdog: analysis failed: %s\n", sw_strerror(st));
		_exit(2);
	}
	for (size_t c = 0; c < sw_hang_report_cycle_count(r); c++) {
		if (sw_hang_report_cycle(r, c, members, NULL, 64, &len) != SW_OK)
			continue;
		printf("deadlock:");
		for (size_t k = 0; k < len && k < 64; k++) {
			sw_hang_thread t;

			if (sw_hang_report_thread(r, members[k], &t) == SW_OK)
				printf(" %d", t.tid);
		}
		printf("\n");
		for (size_t k = 0; k < len && k < 64; k++)
			print_thread(r, members[k]);
	}
	fflush(stdout);
	/* The deadlocked threads can never be joined: end the process here. */
	_exit(sw_hang_report_cycle_count(r) ? 1 : 0);
}

static void *worker(void *arg)
{
	(void)arg;
	pthread_mutex_lock(&journal);
	pthread_barrier_wait(&both_hold_one);
	pthread_mutex_lock(&accounts);
	return NULL;
}

int main(int argc, char **argv)
{
	unsigned timeout_ms = argc > 1 ? (unsigned)strtoul(argv[1], NULL, 10) : 500;
	struct timespec tick = { 0, 20 * 1000000L };
	pthread_t t;
	sw_status st;

	tool_standard_options(argc, argv, "swwatchdog", print_usage);
	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((st = sw_watchdog_create(on_hang, NULL, NULL, &wd)) != SW_OK ||
	    (st = sw_watchdog_arm(wd, 0, timeout_ms, NULL, NULL)) != SW_OK) {
		fprintf(stderr, "swwatchdog: %s\n", sw_strerror(st));
		return 2;
	}
	pthread_barrier_init(&both_hold_one, NULL, 2);
	pthread_create(&t, NULL, worker, NULL);
	/* The main loop: some healthy rounds, each answering the watchdog. */
	for (int round = 0; round < 10; round++) {
		sw_watchdog_answer(wd);
		nanosleep(&tick, NULL);
	}
	pthread_mutex_lock(&accounts);
	pthread_barrier_wait(&both_hold_one);
	pthread_mutex_lock(&journal);   /* never returns: the worker holds it */
	sw_watchdog_destroy(wd);
	return 0;
}
