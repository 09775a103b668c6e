/*
 * check_sampler_rules.c - the sampler's refusals, made to happen on cue,
 * and threads that exit while the sampler walks them.
 *
 * To stop a thread at a chosen point inside the registry, this program
 * defines pthread_mutex_lock and pthread_mutex_unlock itself (they forward
 * to the C library's through dlsym(RTLD_NEXT)); a per-thread hook makes
 * the next call unblock the sampling signal while the registry's lock is
 * held, or park before the second lock of sw_registry_remove_self.  The
 * signal is kept blocked until then, so the sampler's request waits for
 * exactly that point.  Nothing depends on timing.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <stackwalk.h>
#include <stackwalk/sampler.h>

/* --- the interposed lock functions ------------------------------------------------ */

enum {
	HOOK_NONE,
	HOOK_UNBLOCK_WHEN_LOCKED,   /* the next lock: unblock SIGPROF once it is held */
	HOOK_PARK_ON_SECOND_LOCK    /* the second lock from now: wait for `release` first */
};

static __thread int hook;
static __thread int lock_calls;
static int parked, release;     /* atomic */
static int (*next_lock)(pthread_mutex_t *);
static int (*next_unlock)(pthread_mutex_t *);

static int get(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }
static void set(int *p, int v) { __atomic_store_n(p, v, __ATOMIC_RELEASE); }

static void resolve(void)
{
	if (!next_lock)
		next_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
	if (!next_unlock)
		next_unlock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
}

static void unblock_sigprof(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	pthread_sigmask(SIG_UNBLOCK, &s, NULL);
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	int r;

	resolve();
	if (hook == HOOK_PARK_ON_SECOND_LOCK && ++lock_calls == 2) {
		hook = HOOK_NONE;
		set(&parked, 1);
		while (!get(&release))
			sched_yield();
	}
	r = next_lock(m);
	if (hook == HOOK_UNBLOCK_WHEN_LOCKED) {
		hook = HOOK_NONE;
		unblock_sigprof();      /* the pending request is answered here, lock held */
	}
	return r;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	resolve();
	return next_unlock(m);
}

/* --- a thread the tests steer ------------------------------------------------------ */

typedef struct steered {
	sw_registry *reg;
	sw_codemap *map;
	uint64_t id;
	int registered;             /* atomic */
	int go;                     /* atomic: what to do (0: spin) */
	int done;                   /* atomic */
	sw_status result;
	uint64_t sampler_id;
} steered;

enum { GO_SPIN, GO_COUNT_WHEN_ASKED, GO_REMOVE_PARKED, GO_SAMPLE_THE_SAMPLER, GO_EXIT };

static void block_sigprof(void)
{
	sigset_t s;

	sigemptyset(&s);
	sigaddset(&s, SIGPROF);
	pthread_sigmask(SIG_BLOCK, &s, NULL);
}

static int sigprof_pending(void)
{
	sigset_t s;

	sigpending(&s);
	return sigismember(&s, SIGPROF);
}

static void *steered_main(void *arg)
{
	steered *t = arg;
	int go;

	t->result = sw_registry_add_self(t->reg, t->map, NULL, &t->id);
	set(&t->registered, 1);
	while ((go = get(&t->go)) == GO_SPIN)
		sched_yield();
	switch (go) {
	case GO_COUNT_WHEN_ASKED:
		/* The sampler's signal is pending: take the registry's lock, then let it in. */
		block_sigprof();
		set(&t->done, 1);
		while (!sigprof_pending())
			sched_yield();
		hook = HOOK_UNBLOCK_WHEN_LOCKED;
		t->result = sw_registry_count(t->reg) == 1 ? SW_OK : SW_E_STATE;
		set(&t->done, 2);
		while (get(&t->go) != GO_EXIT)
			sched_yield();
		sw_registry_remove_self(t->reg);
		break;
	case GO_REMOVE_PARKED:
		lock_calls = 0;
		hook = HOOK_PARK_ON_SECOND_LOCK;
		t->result = sw_registry_remove_self(t->reg);
		break;
	case GO_SAMPLE_THE_SAMPLER:
		t->result = sw_sampler_sample(t->reg, t->sampler_id, NULL, NULL);
		if (t->result == SW_E_UNSAFE && sw_sampler_sample_all(t->reg, NULL, NULL, NULL) != SW_E_UNSAFE)
			t->result = SW_E_STATE;
		sw_registry_remove_self(t->reg);
		break;
	}
	set(&t->done, 1);
	return NULL;
}

static void start_steered(steered *t, pthread_t *th, sw_registry *reg, sw_codemap *map)
{
	*t = (steered){ .reg = reg, .map = map };
	ck_assert_int_eq(pthread_create(th, NULL, steered_main, t), 0);
	while (!get(&t->registered))
		sched_yield();
	ck_assert_int_eq(t->result, SW_OK);
}

static sw_walk_action count_call(const sw_sample *s, void *data)
{
	(void)s;
	++*(unsigned *)data;
	return SW_CONTINUE;
}

static sw_walk_action abort_call(const sw_sample *s, void *data)
{
	(void)s;
	++*(unsigned *)data;
	return SW_ABORT;
}

/* --- SW_E_UNSAFE, SW_E_ABORTED ------------------------------------------------------ */

/*
 * The target takes the registry's lock (the walker's own) while the
 * sampler's request is pending: the handler must refuse to stop it there,
 * for the sampler's next step, or its callback, may need that lock.
 */
START_TEST(holding_the_walkers_lock_is_unsafe)
{
	/* Long enough never to be what ends the request, even on a loaded machine. */
	sw_sampler_options opt = { .timeout_ms = 120000 };
	sw_registry *reg;
	sw_codemap *map;
	steered t;
	pthread_t th;
	unsigned calls = 0;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg), SW_OK);
	start_steered(&t, &th, reg, map);
	ck_assert_int_eq(sw_sampler_start(reg, &opt), SW_OK);
	set(&t.go, GO_COUNT_WHEN_ASKED);
	while (get(&t.done) != 1)   /* it has blocked the signal */
		sched_yield();
	ck_assert_int_eq(sw_sampler_sample(reg, t.id, count_call, &calls), SW_E_UNSAFE);
	ck_assert_uint_eq(calls, 0);
	/* Once it let go of the lock it is sampled as usual, and a callback may stop the sample. */
	while (get(&t.done) != 2)
		sched_yield();
	ck_assert_int_eq(t.result, SW_OK);
	ck_assert_int_eq(sw_sampler_sample(reg, t.id, count_call, &calls), SW_OK);
	ck_assert_int_eq(sw_sampler_sample(reg, t.id, abort_call, &calls), SW_E_ABORTED);
	ck_assert_uint_eq(calls, 2);
	set(&t.go, GO_EXIT);
	pthread_join(th, NULL);
	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

/* A thread inside sw_registry_remove_self, still listed, is exiting: refused, not signalled. */
START_TEST(an_exiting_thread_is_unsafe)
{
	sw_registry *reg;
	sw_codemap *map;
	steered t;
	pthread_t th;
	unsigned calls = 0, n;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg), SW_OK);
	start_steered(&t, &th, reg, map);
	ck_assert_int_eq(sw_sampler_start(reg, NULL), SW_OK);
	ck_assert_int_eq(sw_sampler_sample(reg, t.id, count_call, &calls), SW_OK);
	set(&parked, 0);
	set(&release, 0);
	set(&t.go, GO_REMOVE_PARKED);
	while (!get(&parked))
		sched_yield();
	ck_assert_uint_eq(sw_registry_count(reg), 1);
	ck_assert_int_eq(sw_sampler_sample(reg, t.id, count_call, &calls), SW_E_UNSAFE);
	ck_assert_int_eq(sw_sampler_sample_all(reg, count_call, &calls, &n), SW_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(calls, 1);
	set(&release, 1);
	pthread_join(th, NULL);
	ck_assert_int_eq(t.result, SW_OK);
	ck_assert_uint_eq(sw_registry_count(reg), 0);
	ck_assert_int_eq(sw_sampler_sample(reg, t.id, count_call, &calls), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

/* A thread that would suspend the sampler (which may be suspending it) is refused. */
START_TEST(no_thread_suspends_the_sampler)
{
	sw_registry *reg;
	sw_codemap *map;
	steered t;
	pthread_t th;
	uint64_t self;
	unsigned calls = 0;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_registry_create(&reg), SW_OK);
	ck_assert_int_eq(sw_registry_add_self(reg, map, NULL, &self), SW_OK);
	start_steered(&t, &th, reg, map);
	ck_assert_int_eq(sw_sampler_start(reg, NULL), SW_OK);
	t.sampler_id = self;
	set(&t.go, GO_SAMPLE_THE_SAMPLER);
	/* Meanwhile the sampler samples it: the two can never be suspending each other. */
	while (!get(&t.done)) {
		sw_status st = sw_sampler_sample(reg, t.id, count_call, &calls);

		ck_assert(st == SW_OK || st == SW_E_UNSAFE || st == SW_E_NOTFOUND);
	}
	pthread_join(th, NULL);
	ck_assert_int_eq(t.result, SW_E_UNSAFE);
	ck_assert_int_eq(sw_sampler_stop(reg), SW_OK);
	ck_assert_int_eq(sw_registry_remove_self(reg), SW_OK);
	ck_assert_int_eq(sw_registry_destroy(reg), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

/* --- threads exiting while they are walked ------------------------------------------ */

enum { LIFETIMES = 400, AT_ONCE = 3, RECURSION = 40 };

typedef struct churn {
	sw_registry *reg;
	sw_codemap *map;
	int started, finished;      /* atomic */
	unsigned samples, walked_frames, bad;
} churn;

typedef struct life {
	churn *c;
	unsigned index;
	int sampled;                /* atomic: set by the sampler's callback */
	uint64_t id;
} life;

static life lives[LIFETIMES];

/* Deep enough that a walk reads a good part of the stack; stays until it was sampled. */
static __attribute__((noinline)) unsigned recurse(life *l, unsigned depth)
{
	volatile unsigned here = depth;

	if (depth == 0) {
		/* Spin in this frame, not in the C library: the walk starts here. */
		while (!get(&l->sampled))
			__atomic_signal_fence(__ATOMIC_SEQ_CST);
		return here;
	}
	return recurse(l, depth - 1) + here;
}

/*
 * Half the threads unregister themselves, half just return: the registry
 * unregisters those at their exit.  Either way the exit waits for a walk.
 */
static void *life_main(void *arg)
{
	life *l = arg;

	if (sw_registry_add_self(l->c->reg, l->c->map, NULL, &l->id) != SW_OK) {
		__atomic_add_fetch(&l->c->bad, 1, __ATOMIC_RELAXED);
		return NULL;
	}
	recurse(l, RECURSION);
	if (l->index % 2 == 0 && sw_registry_remove_self(l->c->reg) != SW_OK)
		__atomic_add_fetch(&l->c->bad, 1, __ATOMIC_RELAXED);
	return NULL;
}

static void *spawner_main(void *arg)
{
	churn *c = arg;
	pthread_t th[AT_ONCE];

	for (unsigned i = 0; i < LIFETIMES; i += AT_ONCE) {
		unsigned n = LIFETIMES - i < AT_ONCE ? LIFETIMES - i : AT_ONCE;

		for (unsigned k = 0; k < n; k++) {
			lives[i + k] = (life){ .c = c, .index = i + k };
			if (pthread_create(&th[k], NULL, life_main, &lives[i + k]) != 0)
				__atomic_add_fetch(&c->bad, 1, __ATOMIC_RELAXED);
		}
		for (unsigned k = 0; k < n; k++)
			pthread_join(th[k], NULL);
		__atomic_add_fetch(&c->finished, n, __ATOMIC_RELEASE);
	}
	return NULL;
}

static sw_walk_action count_frame(const sw_crawl_frame *cf, void *data)
{
	(void)cf;
	++*(unsigned *)data;
	return SW_CONTINUE;
}

/* The whole native stack, through the program's CFI: reads it from top to bottom. */
static sw_walk_action walk_and_release(const sw_sample *s, void *data)
{
	churn *c = data;
	unsigned frames = 0;
	sw_walk_action act;

	act = sw_walk_frames(s->thread, s->seed, 0, count_frame, &frames,
	                     s->walk_flags | SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK |
	                     SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, NULL);
	if (act != SW_CONTINUE && act != SW_FAILED)
		c->bad++;
	c->samples++;
	c->walked_frames += frames;
	for (unsigned i = 0; i < LIFETIMES; i++)
		if (lives[i].id == s->id && lives[i].c)
			set(&lives[i].sampled, 1);
	return SW_CONTINUE;
}

static sw_module *program;

/* The program's own native code, so that walks unwind its frames by their CFI. */
static int add_program(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	if (info->dlpi_name && *info->dlpi_name)
		return 0;       /* the program itself is the one with no name */
	if (sw_module_load("/proc/self/exe", info->dlpi_addr, NULL, &program) == SW_OK &&
	    sw_module_register(program, data) != SW_OK) {
		sw_module_free(program);
		program = NULL;
	}
	return 1;
}

START_TEST(threads_exit_while_walked)
{
	churn c = { 0 };
	pthread_t spawner;
	unsigned n;

	ck_assert_int_eq(sw_codemap_create(&c.map), SW_OK);
	dl_iterate_phdr(add_program, c.map);
	ck_assert_ptr_nonnull(program);
	ck_assert_int_eq(sw_registry_create(&c.reg), SW_OK);
	ck_assert_int_eq(sw_sampler_start(c.reg, NULL), SW_OK);
	ck_assert_int_eq(pthread_create(&spawner, NULL, spawner_main, &c), 0);
	while ((unsigned)get(&c.finished) < LIFETIMES)
		ck_assert_int_eq(sw_sampler_sample_all(c.reg, walk_and_release, &c, &n), SW_OK);
	pthread_join(spawner, NULL);
	printf("%u thread lifetimes, %u samples of them, %u frames walked\n", (unsigned)LIFETIMES, c.samples,
	       c.walked_frames);
	ck_assert_uint_eq(c.bad, 0);
	ck_assert_uint_ge(c.samples, LIFETIMES);
	ck_assert_uint_gt(c.walked_frames, (unsigned)LIFETIMES * RECURSION);
	ck_assert_uint_eq(sw_registry_count(c.reg), 0);
	ck_assert_int_eq(sw_sampler_stop(c.reg), SW_OK);
	ck_assert_int_eq(sw_registry_destroy(c.reg), SW_OK);
	ck_assert_int_eq(sw_module_unregister(program, c.map), SW_OK);
	sw_module_free(program);
	sw_codemap_destroy(c.map);
}
END_TEST

static Suite *rules_suite(void)
{
	Suite *s = suite_create("sampler rules");
	TCase *tc = tcase_create("refusals and exits");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, holding_the_walkers_lock_is_unsafe);
	tcase_add_test(tc, an_exiting_thread_is_unsafe);
	tcase_add_test(tc, no_thread_suspends_the_sampler);
	tcase_add_test(tc, threads_exit_while_walked);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(rules_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
