/*
 * toyjit_workload.c - threads running toy-JIT call chains (toyjit_workload.h).
 */
#define _GNU_SOURCE
#include <sched.h>
#include <string.h>
#include <time.h>
#include "toyjit_workload.h"

static int get(const int *p) { return __atomic_load_n(p, __ATOMIC_ACQUIRE); }

/* xorshift32: the same varied chains on every run of a program. */
static uint32_t next_random(toyjit_worker *w)
{
	uint32_t x = w->rng;

	x ^= x << 13;
	x ^= x >> 17;
	x ^= x << 5;
	return w->rng = x;
}

/*
 * The stub's helper: a TransitionFrame is linked, so from here on the
 * Frame list finds every managed frame: the thread is preemptive.  The
 * compiler barriers keep the flag's stores where they are written; a
 * sampler reads it while the thread is stopped in its signal handler.
 */
static void burn_helper(toyjit *jit, sw_transition_frame *tf)
{
	toyjit_worker *w = jit->user;
	uint64_t acc = w->helper_work;

	(void)tf;
	w->preemptive = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	for (unsigned i = 0; i < w->load->opt.helper_spin; i++)
		acc = acc * 6364136223846793005ull + i;
	w->helper_work = acc;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	w->preemptive = 0;
}

/* Each thread gets its own mix and order of prolog shapes. */
static unsigned pick_shapes(unsigned index, toyjit_shape *shapes)
{
	unsigned n = 3 + index % 3;

	for (unsigned k = 0; k < n; k++)
		shapes[k] = (toyjit_shape)((index + k) % TOYJIT_NSHAPES);
	return n;
}

static sw_status one_run(toyjit_worker *w)
{
	const toyjit_workload_options *o = &w->load->opt;
	unsigned span = o->max_depth - o->min_depth + 1;
	unsigned depth = o->min_depth + next_random(w) % span;
	int pinvoke_at = -1;
	sw_status st;

	if (o->pinvoke && depth >= 2 && (next_random(w) & 1))
		pinvoke_at = (int)(next_random(w) % (depth - 1));
	w->preemptive = 0;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	st = toyjit_run(w->jit, depth, pinvoke_at);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	w->preemptive = 1;
	return st;
}

static uint64_t now_ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *worker_main(void *arg)
{
	toyjit_worker *w = arg;
	toyjit_workload *load = (toyjit_workload *)(uintptr_t)w->load;
	const toyjit_workload_options *o = &load->opt;
	toyjit_shape shapes[TOYJIT_NSHAPES];
	unsigned n = pick_shapes(w->index, shapes);

	w->preemptive = 1;
	w->status = toyjit_create(&w->jit, load->map, &w->head, shapes, n, burn_helper, w);
	if (w->status == SW_OK && o->started)
		o->started(w, o->hook_data);
	__atomic_add_fetch(&load->ready, 1, __ATOMIC_ACQ_REL);
	while (w->status == SW_OK && !get(&load->stop) && (!o->runs || w->runs < o->runs)) {
		sw_status st = one_run(w);

		if (st != SW_OK)
			w->status = st;
		w->runs++;
	}
	w->cpu_ns = now_ns(CLOCK_THREAD_CPUTIME_ID);
	if (w->jit && o->stopping)
		o->stopping(w, o->hook_data);
	return NULL;
}

sw_status toyjit_workload_start(toyjit_workload *load, sw_codemap *map,
                                const toyjit_workload_options *opt)
{
	unsigned started = 0;

	if (!load || !map || !opt || opt->threads == 0 || opt->threads > TOYJIT_WORKLOAD_MAX_THREADS ||
	    opt->min_depth == 0 || opt->min_depth > opt->max_depth || opt->max_depth > TOYJIT_MAX_DEPTH)
		return SW_E_INVAL;
	memset(load, 0, sizeof *load);
	load->opt = *opt;
	load->map = map;
	for (unsigned i = 0; i < opt->threads; i++) {
		toyjit_worker *w = &load->workers[i];

		w->index = i;
		w->rng = 0x9e3779b9u * (i + 1);
		w->load = load;
		if (pthread_create(&w->thread, NULL, worker_main, w) != 0)
			break;
		started++;
	}
	load->opt.threads = started;
	while ((unsigned)get(&load->ready) < started)
		sched_yield();
	for (unsigned i = 0; i < started; i++)
		if (load->workers[i].status != SW_OK) {
			toyjit_workload_stop(load);
			toyjit_workload_free(load);
			return load->workers[i].status;
		}
	if (started < opt->threads) {
		toyjit_workload_stop(load);
		toyjit_workload_free(load);
		return SW_E_NOMEM;
	}
	return SW_OK;
}

sw_status toyjit_workload_stop(toyjit_workload *load)
{
	sw_status st = SW_OK;

	if (!load)
		return SW_E_INVAL;
	__atomic_store_n(&load->stop, 1, __ATOMIC_RELEASE);
	for (unsigned i = 0; i < load->opt.threads; i++) {
		if (load->workers[i].joined)
			continue;
		pthread_join(load->workers[i].thread, NULL);
		load->workers[i].joined = 1;
		if (st == SW_OK)
			st = load->workers[i].status;
	}
	return st;
}

void toyjit_workload_free(toyjit_workload *load)
{
	if (!load)
		return;
	for (unsigned i = 0; i < TOYJIT_WORKLOAD_MAX_THREADS; i++) {
		toyjit_destroy(load->workers[i].jit);
		load->workers[i].jit = NULL;
	}
}

const char *toyjit_workload_method_name(void *method)
{
	return method ? ((const toyjit_method *)method)->name : NULL;
}
