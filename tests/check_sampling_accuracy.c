/*
 * check_sampling_accuracy.c - sample a multi-threaded toy-JIT workload with
 * the library's sampler at 1 kHz and at 10 kHz, and hold every sample's
 * managed frames against the sampled thread's shadow stack.
 *
 * The toy JIT's methods push and pop themselves on a shadow stack at known
 * instruction offsets (toyjit.h).  The sampler's callback runs while the
 * target waits in its signal handler, so the shadow stack it copies there
 * is the one of the instant the walk starts from.  The walk is what a
 * profiler calls, sw_snapshot, with DoStackSnapshot's choice of start:
 *
 *   - a seed in managed code: from the seed; the stopped method is the
 *     newest frame whether or not its shadow entry is pushed yet (prologs
 *     and epilogs), and the rest is the shadow stack, newest first;
 *   - a thread in preemptive mode (toyjit_workload.h): no seed, from its
 *     Frame list; the frames are exactly the shadow stack;
 *   - anything else (a stub, the entry thunk, the P/Invoke target): the
 *     seeded snapshot must refuse with SW_E_UNMANAGED_CTX and report
 *     nothing, and the JIT must agree that the IP is not managed code.
 *
 * Each managed frame must have the shadow entry's method and stack
 * pointer.  Any difference, any other error, counts as a mismatch; there
 * must be none, and enough samples of both kinds to mean something.
 * Nothing depends on timing: a slow machine samples for longer.
 */
#define _GNU_SOURCE
#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stackwalk.h>
#include <stackwalk/sampler.h>
#include "toyjit_workload.h"

enum {
	MAX_THREADS = 4,            /* workers: one per CPU, at least 2 (see workers()) */
	SECONDS = 2,                /* per rate, at least */
	MAX_SECONDS = 60,           /* per rate, at most: the minimums below come first */
	MIN_COMPARED = 2000,        /* samples compared, per rate */
	MIN_EACH_KIND = 100,        /* of them from a managed seed, and from a Frame list */
	MIN_IN_RUN = 1000,          /* of them with managed frames on the stack */
	MAX_NOTES = 8
};

typedef struct mismatch_note {
	uint64_t ip;
	unsigned worker;
	sw_status status;
	unsigned want, got;         /* managed frames */
	unsigned at;                /* the first frame that differs */
} mismatch_note;

typedef struct rate_stats {
	unsigned hz;
	double seconds;
	unsigned long rounds, samples, compared, from_seed, from_frames, refused, mismatches;
	unsigned long in_run;        /* compared samples with managed frames on the stack */
	unsigned long frames;       /* managed frames compared */
	unsigned notes;
	mismatch_note note[MAX_NOTES];
} rate_stats;

/* One walk's managed frames, newest first. */
typedef struct walked {
	unsigned n, overflow;
	void *method[TOYJIT_MAX_DEPTH + 8];
	uint64_t sp[TOYJIT_MAX_DEPTH + 8];
} walked;

static toyjit_workload load;
static unsigned threads;
static sw_registry *reg;
static walked got;                      /* the sampler thread's, reused */
static toyjit_shadow_entry shadow[TOYJIT_MAX_DEPTH + 8];

static void register_worker(toyjit_worker *w, void *data)
{
	(void)data;
	w->status = sw_registry_add_self(reg, w->jit->map, &w->head, &w->id);
}

static void unregister_worker(toyjit_worker *w, void *data)
{
	(void)data;
	if (sw_registry_remove_self(reg) != SW_OK && w->status == SW_OK)
		w->status = SW_E_STATE;
}

static sw_walk_action collect(const sw_snapshot_frame *f, void *data)
{
	walked *wk = data;

	if (f->state != SW_STATE_FRAMELESS)
		return SW_CONTINUE;
	if (wk->n == TOYJIT_MAX_DEPTH + 8) {
		wk->overflow = 1;
		return SW_CONTINUE;
	}
	wk->method[wk->n] = f->method;
	wk->sp[wk->n] = f->context ? sw_context_sp(f->context) : 0;
	wk->n++;
	return SW_CONTINUE;
}

static void note(rate_stats *rs, const toyjit_worker *w, uint64_t ip, sw_status st,
                 unsigned want, unsigned at)
{
	rs->mismatches++;
	if (rs->notes < MAX_NOTES)
		rs->note[rs->notes++] = (mismatch_note){ ip, w->index, st, want, got.n, at };
}

/*
 * The comparison: `extra` (the stopped method, when its shadow entry is not
 * there) first, then shadow[depth - 1] .. shadow[0].  Returns the index of
 * the first difference, or -1.
 */
static int compare(const toyjit_method *extra, size_t depth)
{
	unsigned want = (unsigned)depth + (extra != NULL), k = 0;

	if (got.overflow)
		return 0;
	if (extra) {
		if (got.n == 0 || got.method[0] != (const void *)extra)
			return 0;
		k = 1;
	}
	for (size_t i = depth; i-- > 0; k++) {
		if (k >= got.n || got.method[k] != (const void *)shadow[i].method ||
		    got.sp[k] != shadow[i].sp)
			return (int)k;
	}
	return got.n == want ? -1 : (int)k;
}

static sw_walk_action on_sample(const sw_sample *s, void *data)
{
	rate_stats *rs = data;
	toyjit_worker *w = NULL;
	const toyjit_method *m, *extra = NULL;
	uint64_t ip = sw_context_ip(s->seed);
	size_t depth;
	sw_status st;
	int at;

	for (unsigned i = 0; i < threads; i++)
		if (load.workers[i].id == s->id)
			w = &load.workers[i];
	rs->samples++;
	if (!w) {
		note(rs, &load.workers[0], ip, SW_E_NOTFOUND, 0, 0);
		return SW_CONTINUE;
	}
	/* The oracle, copied in the same suspension as the walk. */
	depth = toyjit_shadow_depth(w->jit);
	if (depth > TOYJIT_MAX_DEPTH) {
		note(rs, w, ip, SW_E_LIMIT, 0, 0);
		return SW_CONTINUE;
	}
	memcpy(shadow, w->jit->shadow, depth * sizeof shadow[0]);

	got.n = got.overflow = 0;
	m = toyjit_method_at(w->jit, ip);
	if (m) {
		uint64_t off = ip - m->start;

		if (off < m->shadow_push_end || off >= m->shadow_pop_end)
			extra = m;
		st = sw_snapshot(s->thread, s->seed, SW_SNAPSHOT_REGISTER_CONTEXT, collect, &got);
		rs->from_seed++;
	} else if (w->preemptive) {
		st = sw_snapshot(s->thread, NULL, SW_SNAPSHOT_REGISTER_CONTEXT | SW_SNAPSHOT_ASYNC,
		                 collect, &got);
		rs->from_frames++;
	} else {
		st = sw_snapshot(s->thread, s->seed, SW_SNAPSHOT_REGISTER_CONTEXT, collect, &got);
		if (st == SW_E_UNMANAGED_CTX && got.n == 0)
			rs->refused++;
		else
			note(rs, w, ip, st, 0, 0);
		return SW_CONTINUE;
	}
	rs->compared++;
	if (st != SW_OK) {
		note(rs, w, ip, st, (unsigned)depth + (extra != NULL), 0);
		return SW_CONTINUE;
	}
	at = compare(extra, depth);
	if (at >= 0)
		note(rs, w, ip, SW_E_MISMATCH, (unsigned)depth + (extra != NULL), (unsigned)at);
	rs->frames += got.n;
	rs->in_run += got.n > 0;
	return SW_CONTINUE;
}

/*
 * As many always-running workers as CPUs (2 to 4): more would wait for a
 * time slice at every signal, and the sampler could not keep its rate.
 */
static unsigned workers(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 2 ? 2 : n > MAX_THREADS ? MAX_THREADS : (unsigned)n;
}

static double since(const struct timespec *t0)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (double)(now.tv_sec - t0->tv_sec) + (double)(now.tv_nsec - t0->tv_nsec) * 1e-9;
}

/* Sample every worker `hz` times a second for SECONDS, and on until the minimums are met. */
static void sample_at(unsigned hz, rate_stats *rs)
{
	long period = 1000000000L / (long)hz;
	struct timespec t0, next;
	unsigned n;

	memset(rs, 0, sizeof *rs);
	rs->hz = hz;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	next = t0;
	for (;;) {
		double t;

		ck_assert_int_eq(sw_sampler_sample_all(reg, on_sample, rs, &n), SW_OK);
		ck_assert_uint_eq(n, threads);
		rs->rounds++;
		t = since(&t0);
		if (t >= MAX_SECONDS || (t >= SECONDS && rs->compared >= MIN_COMPARED &&
		                         rs->from_seed >= MIN_EACH_KIND &&
		                         rs->from_frames >= MIN_EACH_KIND && rs->in_run >= MIN_IN_RUN))
			break;
		next.tv_nsec += period;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		/* Behind schedule (a busy machine): go on from now, no burst. */
		if (t > (double)(next.tv_sec - t0.tv_sec) + (double)(next.tv_nsec - t0.tv_nsec) * 1e-9 +
		        0.01)
			clock_gettime(CLOCK_MONOTONIC, &next);
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	rs->seconds = since(&t0);
}

static void print_stats(const rate_stats *rs)
{
	printf("%5u Hz: %.2f s, %lu rounds, %lu samples (%.0f/s): %lu compared (%lu from a managed "
	       "seed, %lu from the Frame list; %lu inside a run, %lu managed frames), %lu refused "
	       "(unmanaged seed), %lu mismatches\n", rs->hz, rs->seconds, rs->rounds, rs->samples,
	       (double)rs->samples / rs->seconds, rs->compared, rs->from_seed, rs->from_frames,
	       rs->in_run, rs->frames, rs->refused, rs->mismatches);
	for (unsigned i = 0; i < rs->notes; i++)
		printf("  mismatch: worker %u ip %#llx: %s, %u managed frames expected, %u walked, "
		       "first difference at %u\n", rs->note[i].worker, (unsigned long long)rs->note[i].ip,
		       sw_strerror(rs->note[i].status), rs->note[i].want, rs->note[i].got, rs->note[i].at);
	fflush(stdout);
}

START_TEST(every_sample_matches_the_shadow_stack)
{
	static const unsigned rates[] = { 1000, 10000 };
	toyjit_workload_options opt = {
		.threads = 0, .min_depth = 1, .max_depth = 48, .pinvoke = 1,
		.helper_spin = 300, .started = register_worker, .stopping = unregister_worker
	};
	sw_codemap *map;
	rate_stats rs[2];
	uint64_t runs = 0;

	threads = opt.threads = workers();
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg), SW_OK);
	ck_assert_int_eq(sw_sampler_start(reg, NULL), SW_OK);
	ck_assert_int_eq(toyjit_workload_start(&load, map, &opt), SW_OK);
	ck_assert_uint_eq(sw_registry_count(reg), threads);
	for (unsigned r = 0; r < 2; r++)
		sample_at(rates[r], &rs[r]);
	ck_assert_int_eq(toyjit_workload_stop(&load), SW_OK);
	for (unsigned i = 0; i < threads; i++)
		runs += load.workers[i].runs;
	printf("workload: %u threads, %llu toy-JIT runs of 1..%u frames\n", threads,
	       (unsigned long long)runs, opt.max_depth);
	for (unsigned r = 0; r < 2; r++)
		print_stats(&rs[r]);
	toyjit_workload_free(&load);
	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	ck_assert_uint_eq(sw_registry_count(reg), 0);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_OK);
	sw_codemap_destroy(map);

	for (unsigned r = 0; r < 2; r++) {
		ck_assert_uint_eq(rs[r].mismatches, 0);
		ck_assert_uint_ge(rs[r].compared, MIN_COMPARED);
		ck_assert_uint_ge(rs[r].from_seed, MIN_EACH_KIND);
		ck_assert_uint_ge(rs[r].from_frames, MIN_EACH_KIND);
		ck_assert_uint_ge(rs[r].in_run, MIN_IN_RUN);
	}
}
END_TEST

/* --- the snapshot's errors on a live, stopped thread -------------------------------- */

typedef struct error_checks {
	unsigned preemptive_seen, managed_seen, bad;
} error_checks;

static sw_walk_action stop_after(const sw_snapshot_frame *f, void *data)
{
	unsigned *left = data;

	(void)f;
	return --*left ? SW_CONTINUE : SW_ABORT;
}

static sw_walk_action count_report(const sw_snapshot_frame *f, void *data)
{
	(void)f;
	++*(unsigned *)data;
	return SW_CONTINUE;
}

static sw_walk_action check_errors(const sw_sample *s, void *data)
{
	error_checks *ec = data;
	toyjit_worker *w = &load.workers[0];
	uint64_t ip = sw_context_ip(s->seed);
	unsigned left, reports = 0;

	if (toyjit_method_at(w->jit, ip)) {
		/* A managed seed: the callback's stop ends the walk, after exactly its reports. */
		left = 1;
		if (sw_snapshot(s->thread, s->seed, 0, stop_after, &left) != SW_E_ABORTED || left)
			ec->bad++;
		ec->managed_seen++;
	} else if (w->preemptive && toyjit_shadow_depth(w->jit) >= 3) {
		left = 3;
		if (sw_snapshot(s->thread, NULL, SW_SNAPSHOT_ASYNC, stop_after, &left) != SW_E_ABORTED ||
		    left)
			ec->bad++;
		/* Its native seed cannot start a snapshot, and nothing is reported. */
		if (sw_snapshot(s->thread, s->seed, 0, count_report, &reports) != SW_E_UNMANAGED_CTX ||
		    reports)
			ec->bad++;
		/* Not the caller's thread: without SW_SNAPSHOT_ASYNC an unseeded snapshot refuses. */
		if (sw_snapshot(s->thread, NULL, 0, count_report, &reports) != SW_E_INVAL || reports)
			ec->bad++;
		ec->preemptive_seen++;
	}
	return SW_CONTINUE;
}

START_TEST(snapshot_errors_on_a_live_thread)
{
	toyjit_workload_options opt = {
		.threads = 1, .min_depth = 12, .max_depth = 12, .helper_spin = 2000,
		.started = register_worker, .stopping = unregister_worker
	};
	error_checks ec = { 0, 0, 0 };
	sw_codemap *map;

	threads = 1;
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg), SW_OK);
	ck_assert_int_eq(sw_sampler_start(reg, NULL), SW_OK);
	ck_assert_int_eq(toyjit_workload_start(&load, map, &opt), SW_OK);
	/* Until both kinds of stop were seen a few times (bounded, not timed). */
	for (unsigned i = 0; i < 1000000 && (ec.preemptive_seen < 20 || ec.managed_seen < 20); i++)
		ck_assert_int_eq(sw_sampler_sample(reg, load.workers[0].id, check_errors, &ec), SW_OK);
	ck_assert_int_eq(toyjit_workload_stop(&load), SW_OK);
	toyjit_workload_free(&load);
	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_OK);
	sw_codemap_destroy(map);
	ck_assert_uint_ge(ec.preemptive_seen, 20);
	ck_assert_uint_ge(ec.managed_seen, 20);
	ck_assert_uint_eq(ec.bad, 0);
}
END_TEST

static Suite *accuracy_suite(void)
{
	Suite *s = suite_create("sampling accuracy");
	TCase *tc = tcase_create("toy JIT workload against its shadow stacks");

	tcase_set_timeout(tc, 2 * MAX_SECONDS + 60);
	tcase_add_test(tc, every_sample_matches_the_shadow_stack);
	tcase_add_test(tc, snapshot_errors_on_a_live_thread);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(accuracy_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
