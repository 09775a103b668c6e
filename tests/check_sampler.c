/*
 * check_sampler.c - the thread registry and the signal sampler: a sample
 * stops its target for the whole callback, only the sampler thread may
 * suspend, unsafe and exiting threads are refused, threads may come and go
 * while the sampler runs.  Nothing here depends on timing.
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stackwalk.h>
#include <stackwalk/sampler.h>

enum { WORKERS = 3 };

typedef struct worker {
	sw_registry *reg;
	sw_codemap *map;
	uint64_t id;
	volatile uint64_t counter;      /* moves only while the worker runs */
	uintptr_t marker;               /* its spinning frame's address */
	int registered;                 /* atomic */
	int stop;                       /* atomic */
	int unsafe;                     /* atomic: 1 asks it to unsafe_enter, 2 = entered */
	int block;                      /* atomic: 1 asks it to block SIGPROF, 2 = blocked */
} worker;

static int get(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void set(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

static __attribute__((noinline)) void spin(worker *w)
{
	w->marker = (uintptr_t)__builtin_frame_address(0);
	while (!get(&w->stop)) {
		w->counter++;
		if (get(&w->unsafe) == 1) {
			sw_registry_unsafe_enter();
			set(&w->unsafe, 2);
		} else if (get(&w->unsafe) == 3) {
			sw_registry_unsafe_leave();
			set(&w->unsafe, 0);
		}
		if (get(&w->block) == 1) {
			sigset_t s;

			sigemptyset(&s);
			sigaddset(&s, SIGPROF);
			pthread_sigmask(SIG_BLOCK, &s, NULL);
			set(&w->block, 2);
		} else if (get(&w->block) == 3) {
			sigset_t s;

			sigemptyset(&s);
			sigaddset(&s, SIGPROF);
			pthread_sigmask(SIG_UNBLOCK, &s, NULL);
			set(&w->block, 0);
		}
	}
}

static void *worker_main(void *arg)
{
	worker *w = arg;
	static sw_frame *head;  /* no Frames: the list stays empty */

	ck_assert_int_eq(sw_registry_add_self(w->reg, w->map, &head, &w->id), SW_OK);
	set(&w->registered, 1);
	spin(w);
	ck_assert_int_eq(sw_registry_remove_self(w->reg), SW_OK);
	return NULL;
}

typedef struct check_data {
	worker *workers;
	unsigned calls;
	unsigned walked;
	unsigned bad;           /* checks that failed inside callbacks */
} check_data;

static sw_walk_action count_frame(const sw_crawl_frame *cf, void *data)
{
	(void)cf;
	++*(unsigned *)data;
	return SW_CONTINUE;
}

/*
 * Callbacks run while the target is stopped, perhaps inside Check's own
 * ck_assert (which takes a mutex): they must not call Check themselves,
 * so they count what is wrong and the test asserts afterwards.
 */
static sw_walk_action no_report(const sw_snapshot_frame *f, void *data)
{
	(void)f;
	++*(unsigned *)data;
	return SW_ABORT;
}

/* The target stands still during the callback, stopped inside its spin loop. */
static sw_walk_action check_sample(const sw_sample *s, void *data)
{
	check_data *d = data;
	worker *w = NULL;
	uint64_t before, sp = sw_context_sp(s->seed);
	unsigned frames = 0, reported = 0;
	sw_walk_action act;

	for (int i = 0; i < WORKERS; i++)
		if (d->workers[i].id == s->id)
			w = &d->workers[i];
	if (!w) {
		d->bad++;
		return SW_CONTINUE;
	}
	if (sw_context_ip(s->seed) == 0 || sp < s->thread->stack_lo || sp >= s->thread->stack_hi ||
	    sp > w->marker)
		d->bad++;
	before = w->counter;
	for (volatile int i = 0; i < 20000; i++)
		;
	if (w->counter != before)
		d->bad++;
	/* Nothing is managed here: the snapshot refuses, the walk reports the native seed. */
	if (sw_snapshot(s->thread, s->seed, 0, no_report, &reported) != SW_E_UNMANAGED_CTX ||
	    reported)
		d->bad++;
	act = sw_walk_frames(s->thread, s->seed, 0, count_frame, &frames,
	                     s->walk_flags | SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, NULL);
	if (act != SW_CONTINUE && act != SW_FAILED)
		d->bad++;
	d->walked += frames;
	d->calls++;
	return SW_CONTINUE;
}

static void start_workers(sw_registry *reg, sw_codemap *map, worker *w, pthread_t *th)
{
	for (int i = 0; i < WORKERS; i++) {
		w[i] = (worker){ .reg = reg, .map = map };
		ck_assert_int_eq(pthread_create(&th[i], NULL, worker_main, &w[i]), 0);
	}
	for (int i = 0; i < WORKERS; i++)
		while (!get(&w[i].registered))
			sched_yield();
}

static void stop_workers(worker *w, pthread_t *th)
{
	for (int i = 0; i < WORKERS; i++)
		set(&w[i].stop, 1);
	for (int i = 0; i < WORKERS; i++)
		pthread_join(th[i], NULL);
}

START_TEST(samples_stop_their_target)
{
	sw_registry *reg;
	sw_codemap *map;
	worker w[WORKERS];
	pthread_t th[WORKERS];
	check_data d = { .workers = w };
	unsigned n, total = 0;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg), SW_OK);
	start_workers(reg, map, w, th);
	ck_assert_uint_eq(sw_registry_count(reg), WORKERS);
	ck_assert_int_eq(sw_sampler_start(reg, NULL), SW_OK);
	for (int round = 0; round < 50; round++) {
		ck_assert_int_eq(sw_sampler_sample_all(reg, check_sample, &d, &n), SW_OK);
		total += n;
	}
	ck_assert_uint_eq(total, 50 * WORKERS);
	ck_assert_uint_eq(d.calls, total);
	ck_assert_uint_eq(d.bad, 0);
	ck_assert_uint_gt(d.walked, 0);
	ck_assert_int_eq(sw_sampler_sample(reg, w[1].id, check_sample, &d), SW_OK);
	ck_assert_int_eq(sw_sampler_sample(reg, 999, check_sample, &d), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_E_STATE);
	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	stop_workers(w, th);
	ck_assert_uint_eq(sw_registry_count(reg), 0);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

typedef struct other_args {
	sw_registry *reg;
	uint64_t id;
	sw_status sample, stop, start;
} other_args;

static void *other_thread(void *arg)
{
	other_args *a = arg;

	a->sample = sw_sampler_sample(a->reg, a->id, NULL, NULL);
	a->stop = sw_sampler_stop(a->reg);
	a->start = sw_sampler_start(a->reg, NULL);
	return NULL;
}

static sw_walk_action stop_here(const sw_sample *s, void *data)
{
	(void)s; (void)data;
	return SW_ABORT;
}

START_TEST(only_the_sampler_suspends)
{
	sw_registry *reg, *reg2;
	sw_codemap *map;
	worker w[WORKERS];
	pthread_t th[WORKERS], t;
	other_args a;
	uint64_t self_id;
	static sw_frame *head;
	unsigned n;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg2), SW_OK);
	ck_assert_int_eq(sw_sampler_sample(reg, 1, NULL, NULL), SW_E_STATE);
	ck_assert_int_eq(sw_registry_add_self(reg, map, &head, &self_id), SW_OK);
	ck_assert_int_eq(sw_registry_add_self(reg, map, &head, &self_id), SW_E_EXISTS);
	start_workers(reg, map, w, th);
	ck_assert_int_eq(sw_sampler_start(reg, NULL), SW_OK);
	ck_assert_int_eq(sw_sampler_start(reg, NULL), SW_E_STATE);
	ck_assert_int_eq(sw_sampler_start(reg2, NULL), SW_E_EXISTS);

	a = (other_args){ .reg = reg, .id = w[0].id };
	ck_assert_int_eq(pthread_create(&t, NULL, other_thread, &a), 0);
	pthread_join(t, NULL);
	ck_assert_int_eq(a.sample, SW_E_UNSAFE);
	ck_assert_int_eq(a.stop, SW_E_UNSAFE);
	ck_assert_int_eq(a.start, SW_E_STATE);

	/* The sampler cannot stop itself; sample_all passes over it. */
	ck_assert_int_eq(sw_sampler_sample(reg, self_id, NULL, NULL), SW_E_UNSAFE);
	ck_assert_int_eq(sw_sampler_sample_all(reg, NULL, NULL, &n), SW_OK);
	ck_assert_uint_eq(n, WORKERS);
	ck_assert_int_eq(sw_sampler_sample_all(reg, stop_here, NULL, &n), SW_E_ABORTED);
	ck_assert_uint_eq(n, 1);

	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	ck_assert_int_eq(sw_sampler_sample(reg, w[0].id, NULL, NULL), SW_E_STATE);
	ck_assert_int_eq(sw_sampler_start(reg2, NULL), SW_OK);  /* the signal is free again */
	ck_assert_int_eq(sw_sampler_stop(reg2), SW_OK);
	stop_workers(w, th);
	ck_assert_int_eq(sw_registry_remove_self(reg), SW_OK);
	ck_assert_int_eq(sw_registry_remove_self(reg), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_OK);
	ck_assert_int_eq(sw_registry_destroy(reg2), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(unsafe_and_unresponsive_threads_are_refused)
{
	sw_registry *reg;
	sw_codemap *map;
	worker w[WORKERS];
	pthread_t th[WORKERS];
	/*
	 * A thread that answers may take long on a loaded machine: only the
	 * refusal of the thread that never answers waits for a short timeout.
	 */
	sw_sampler_options opt = { .signo = SIGRTMIN + 1, .timeout_ms = 600000 };
	check_data d = { .workers = w };

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg), SW_OK);
	start_workers(reg, map, w, th);
	ck_assert_int_eq(sw_sampler_start(reg, &opt), SW_OK);

	set(&w[0].unsafe, 1);
	while (get(&w[0].unsafe) != 2)
		sched_yield();
	ck_assert_int_eq(sw_sampler_sample(reg, w[0].id, check_sample, &d), SW_E_UNSAFE);
	set(&w[0].unsafe, 3);
	while (get(&w[0].unsafe) != 0)
		sched_yield();
	ck_assert_int_eq(sw_sampler_sample(reg, w[0].id, check_sample, &d), SW_OK);

	/* A thread with the signal blocked never answers: withdrawn, not hung. */
	opt.signo = SIGPROF;
	opt.timeout_ms = 50;
	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	ck_assert_int_eq(sw_sampler_start(reg, &opt), SW_OK);
	set(&w[1].block, 1);
	while (get(&w[1].block) != 2)
		sched_yield();
	ck_assert_int_eq(sw_sampler_sample(reg, w[1].id, check_sample, &d), SW_E_UNSAFE);
	set(&w[1].block, 3);   /* the stale signal arrives now and is ignored */
	while (get(&w[1].block) != 0)
		sched_yield();
	opt.timeout_ms = 600000;
	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	ck_assert_int_eq(sw_sampler_start(reg, &opt), SW_OK);
	ck_assert_int_eq(sw_sampler_sample(reg, w[1].id, check_sample, &d), SW_OK);
	ck_assert_uint_eq(d.calls, 2);
	ck_assert_uint_eq(d.bad, 0);

	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	stop_workers(w, th);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

/* Threads registering, unregistering and exiting while the sampler samples them. */
typedef struct churn {
	sw_registry *reg;
	sw_codemap *map;
	int stop;
	unsigned cycles;
} churn;

static void *churn_main(void *arg)
{
	churn *c = arg;
	uint64_t id;

	for (unsigned i = 0; i < 200 && !get(&c->stop); i++) {
		ck_assert_int_eq(sw_registry_add_self(c->reg, c->map, NULL, &id), SW_OK);
		for (volatile int k = 0; k < 1000; k++)
			;
		ck_assert_int_eq(sw_registry_remove_self(c->reg), SW_OK);
		__atomic_add_fetch(&c->cycles, 1, __ATOMIC_RELAXED);
	}
	return NULL;
}

typedef struct bounds_data {
	unsigned calls, bad;
} bounds_data;

static sw_walk_action check_bounds(const sw_sample *s, void *data)
{
	bounds_data *b = data;
	uint64_t sp = sw_context_sp(s->seed);

	if (sp < s->thread->stack_lo || sp >= s->thread->stack_hi)
		b->bad++;
	b->calls++;
	return SW_CONTINUE;
}

START_TEST(threads_come_and_go)
{
	churn c = { 0 };
	pthread_t th[4];
	bounds_data b = { 0, 0 };
	unsigned n;

	ck_assert_int_eq(sw_codemap_create(&c.map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&c.reg), SW_OK);
	ck_assert_int_eq(sw_sampler_start(c.reg, NULL), SW_OK);
	for (int i = 0; i < 4; i++)
		ck_assert_int_eq(pthread_create(&th[i], NULL, churn_main, &c), 0);
	for (int round = 0; round < 2000 && __atomic_load_n(&c.cycles, __ATOMIC_RELAXED) < 800;
	     round++)
		if (sw_sampler_sample_all(c.reg, check_bounds, &b, &n) != SW_OK)
			b.bad++;
	set(&c.stop, 1);
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	ck_assert_uint_eq(b.bad, 0);
	ck_assert_uint_eq(sw_registry_count(c.reg), 0);
	ck_assert_int_eq(sw_sampler_stop(c.reg), SW_OK);
	ck_assert_int_eq(sw_registry_destroy(c.reg), SW_OK);
	sw_codemap_destroy(c.map);
}
END_TEST

/* A registered thread that does not run: blocked on a mutex the test holds. */
typedef struct sleeper {
	sw_registry *reg;
	sw_codemap *map;
	pthread_mutex_t *lock;
	uint64_t id;
	int registered;         /* atomic */
} sleeper;

static void *sleeper_main(void *arg)
{
	sleeper *z = arg;

	ck_assert_int_eq(sw_registry_add_self(z->reg, z->map, NULL, &z->id), SW_OK);
	set(&z->registered, 1);
	pthread_mutex_lock(z->lock);
	pthread_mutex_unlock(z->lock);
	ck_assert_int_eq(sw_registry_remove_self(z->reg), SW_OK);
	return NULL;
}

typedef struct tick_data {
	check_data check;
	uint64_t sleeper_id;
	unsigned per_worker[WORKERS], sleeper_samples, bad_ticks;
} tick_data;

static sw_walk_action count_tick(const sw_sample *s, void *data)
{
	tick_data *t = data;

	if (s->ticks == 0)
		t->bad_ticks++;
	if (s->id == t->sleeper_id) {
		t->sleeper_samples++;
		return SW_CONTINUE;
	}
	for (int i = 0; i < WORKERS; i++)
		if (t->check.workers[i].id == s->id)
			t->per_worker[i]++;
	return check_sample(s, &t->check);
}

/*
 * CPU-time mode: threads registered before and after the start are
 * stopped by their own CPU clocks' ticks, exactly as a requested sample
 * stops them; a thread that does not run is never sampled.  No time
 * limits: the loop ends when every spinning worker has been sampled.
 */
START_TEST(cpu_time_ticks_stop_running_threads)
{
	sw_registry *reg;
	sw_codemap *map;
	worker w[WORKERS];
	pthread_t th[WORKERS], zt;
	pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	sw_sampler_options opt = { .signo = SIGRTMIN + 2, .cpu_period_ns = 2000000 };
	tick_data t = { .check = { .workers = w } };
	sleeper z;
	unsigned n, least = 0;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg), SW_OK);
	z = (sleeper){ .reg = reg, .map = map, .lock = &lock };
	pthread_mutex_lock(&lock);
	ck_assert_int_eq(pthread_create(&zt, NULL, sleeper_main, &z), 0);
	while (!get(&z.registered))
		sched_yield();
	t.sleeper_id = z.id;
	ck_assert_int_eq(sw_sampler_wait(reg, count_tick, &t, 1, &n), SW_E_STATE);
	ck_assert_int_eq(sw_sampler_start(reg, &opt), SW_OK);
	start_workers(reg, map, w, th);
	while (least < 10) {
		ck_assert_int_eq(sw_sampler_wait(reg, count_tick, &t, 100, &n), SW_OK);
		least = t.per_worker[0];
		for (int i = 1; i < WORKERS; i++)
			if (t.per_worker[i] < least)
				least = t.per_worker[i];
	}
	/* A requested sample still works beside the ticks. */
	ck_assert_int_eq(sw_sampler_sample(reg, w[0].id, check_sample, &t.check), SW_OK);
	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	ck_assert_int_eq(sw_sampler_wait(reg, count_tick, &t, 1, &n), SW_E_STATE);
	stop_workers(w, th);
	pthread_mutex_unlock(&lock);
	pthread_join(zt, NULL);
	ck_assert_uint_eq(t.sleeper_samples, 0);
	ck_assert_uint_eq(t.bad_ticks, 0);
	ck_assert_uint_eq(t.check.bad, 0);
	ck_assert_uint_gt(t.check.walked, 0);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

static Suite *sampler_suite(void)
{
	Suite *s = suite_create("sampler");
	TCase *tc = tcase_create("registry and sampler");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, samples_stop_their_target);
	tcase_add_test(tc, only_the_sampler_suspends);
	tcase_add_test(tc, unsafe_and_unresponsive_threads_are_refused);
	tcase_add_test(tc, threads_come_and_go);
	tcase_add_test(tc, cpu_time_ticks_stop_running_threads);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sampler_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
