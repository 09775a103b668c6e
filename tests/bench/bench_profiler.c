/*
 * bench_profiler.c - what sampling costs: the CPU time of a multi-threaded
 * toy-JIT workload with and without the library's sampler (in one run, the
 * same fixed work each time), at 1 kHz and at 10 kHz; and the cost of one
 * sample (signal, capture in the handler, the walk, the resume) of a
 * thread stopped under 10, 100 and 1000 managed frames.
 *
 * The sampler's callback does what a profiler does (sw_snapshot from the
 * seed, or from the Frame list for a thread in preemptive mode) and keeps
 * the method handles in a buffer allocated ahead of time.  Numbers are
 * printed, never asserted: this is not a test.
 */
#define _GNU_SOURCE
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stackwalk.h>
#include <stackwalk/sampler.h>
#include "toyjit_workload.h"

#define MAX_FRAMES (TOYJIT_MAX_DEPTH + 16)

static sw_registry *reg;

static uint64_t now_ns(clockid_t clock)
{
	struct timespec t;

	clock_gettime(clock, &t);
	return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

/* --- the profiler's callback ---------------------------------------------------------- */

typedef struct profile {
	const toyjit_workload *load;    /* NULL: every thread is parked in preemptive mode */
	unsigned long samples, frames, unwalkable;
	uint64_t walk_ns;               /* time inside sw_snapshot */
	uint64_t last_walk_ns;          /* the last sample's */
	void *methods[MAX_FRAMES];      /* the last sample's, as a profiler would store them */
	unsigned n;
} profile;

static sw_walk_action keep_method(const sw_snapshot_frame *f, void *data)
{
	profile *p = data;

	if (f->method && p->n < MAX_FRAMES)
		p->methods[p->n++] = f->method;
	return SW_CONTINUE;
}

static const toyjit_worker *worker_of(const toyjit_workload *load, uint64_t id)
{
	for (unsigned i = 0; load && i < load->opt.threads; i++)
		if (load->workers[i].id == id)
			return &load->workers[i];
	return NULL;
}

static sw_walk_action on_sample(const sw_sample *s, void *data)
{
	profile *p = data;
	const toyjit_worker *w = worker_of(p->load, s->id);
	uint64_t t0 = now_ns(CLOCK_MONOTONIC);
	sw_status st;

	p->n = 0;
	if (w && toyjit_method_at(w->jit, sw_context_ip(s->seed)))
		st = sw_snapshot(s->thread, s->seed, 0, keep_method, p);
	else if (!w ? p->load == NULL : w->preemptive)
		st = sw_snapshot(s->thread, NULL, SW_SNAPSHOT_ASYNC, keep_method, p);
	else
		st = SW_E_UNMANAGED_CTX;
	p->last_walk_ns = now_ns(CLOCK_MONOTONIC) - t0;
	p->walk_ns += p->last_walk_ns;
	p->samples++;
	p->frames += p->n;
	p->unwalkable += st != SW_OK;
	return SW_CONTINUE;
}

/* --- overhead: the same work with and without sampling --------------------------------- */

static void register_worker(toyjit_worker *w, void *data)
{
	(void)data;
	if (sw_registry_add_self(reg, w->jit->map, &w->head, &w->id) != SW_OK)
		w->status = SW_E_STATE;
}

static void unregister_worker(toyjit_worker *w, void *data)
{
	(void)data;
	(void)w;
	sw_registry_remove_self(reg);
}

typedef struct phase {
	const char *name;
	unsigned hz;                /* 0: no sampling */
	double worker_cpu, wall, sampler_cpu;
	profile prof;
} phase;

static int all_done(const toyjit_workload *load, uint64_t runs)
{
	for (unsigned i = 0; i < load->opt.threads; i++)
		if (load->workers[i].runs < runs && load->workers[i].status == SW_OK)
			return 0;
	return 1;
}

static void run_phase(sw_codemap *map, unsigned threads, uint64_t runs, phase *ph)
{
	static toyjit_workload load;
	toyjit_workload_options opt = {
		.threads = threads, .min_depth = 1, .max_depth = 48, .pinvoke = 1, .helper_spin = 300,
		.runs = runs, .started = register_worker, .stopping = unregister_worker
	};
	long period = ph->hz ? 1000000000L / (long)ph->hz : 0;
	struct timespec next;
	uint64_t wall0, cpu0, cpu = 0;

	memset(&ph->prof, 0, sizeof ph->prof);
	ph->prof.load = &load;
	wall0 = now_ns(CLOCK_MONOTONIC);
	cpu0 = now_ns(CLOCK_THREAD_CPUTIME_ID);
	if (toyjit_workload_start(&load, map, &opt) != SW_OK) {
		printf("  %s: the workload did not start\n", ph->name);
		return;
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	while (!all_done(&load, runs)) {
		if (!period) {
			struct timespec ms = { 0, 1000000L };

			nanosleep(&ms, NULL);
			continue;
		}
		sw_sampler_sample_all(reg, on_sample, &ph->prof, NULL);
		next.tv_nsec += period;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	toyjit_workload_stop(&load);
	ph->wall = (double)(now_ns(CLOCK_MONOTONIC) - wall0) * 1e-9;
	ph->sampler_cpu = (double)(now_ns(CLOCK_THREAD_CPUTIME_ID) - cpu0) * 1e-9;
	for (unsigned i = 0; i < threads; i++)
		cpu += load.workers[i].cpu_ns;
	ph->worker_cpu = (double)cpu * 1e-9;
	toyjit_workload_free(&load);
}

/*
 * The modes run twice, in mirrored order (none, 1 kHz, 10 kHz, 10 kHz,
 * 1 kHz, none), so that a drift in the machine's load hits all alike.  The
 * baseline is the mean of the two unsampled runs.  A sampler on a busy
 * machine may not reach its rate, so the summary also gives the extra CPU
 * per sample (all sampled runs pooled) and what it makes at each rate.
 */
static void overhead(sw_codemap *map, unsigned threads, uint64_t runs)
{
	static const unsigned order[] = { 0, 1000, 10000, 10000, 1000, 0 };
	enum { NPHASES = sizeof order / sizeof order[0] };
	phase ph[NPHASES];
	double base = 0, cpu[3] = { 0, 0, 0 }, wall[3] = { 0, 0, 0 };
	unsigned long smp[3] = { 0, 0, 0 };
	unsigned nruns[3] = { 0, 0, 0 };

	printf("overhead: %u threads, %llu toy-JIT runs each (1..48 frames, P/Invokes); CPU time "
	       "of the workload's threads\n", threads, (unsigned long long)runs);
	for (unsigned i = 0; i < NPHASES; i++) {
		unsigned m = order[i] == 0 ? 0 : order[i] == 1000 ? 1 : 2;

		memset(&ph[i], 0, sizeof ph[i]);
		ph[i].hz = order[i];
		ph[i].name = m == 0 ? "none" : m == 1 ? "1 kHz" : "10 kHz";
		run_phase(map, threads, runs, &ph[i]);
		cpu[m] += ph[i].worker_cpu;
		wall[m] += ph[i].wall;
		smp[m] += ph[i].prof.samples;
		nruns[m]++;
	}
	base = cpu[0] / nruns[0];
	printf("  %-8s %10s %8s %9s %9s %10s %11s %12s\n", "sampling", "worker CPU", "vs none",
	       "wall", "samples", "samples/s", "sampler CPU", "CPU/sample");
	for (unsigned i = 0; i < NPHASES; i++) {
		const phase *p = &ph[i];

		printf("  %-8s %9.3fs %+7.1f%% %8.3fs %9lu %10.0f %10.3fs", p->name, p->worker_cpu,
		       100.0 * (p->worker_cpu - base) / base, p->wall, p->prof.samples,
		       p->wall > 0 ? (double)p->prof.samples / p->wall : 0.0, p->sampler_cpu);
		if (p->prof.samples)
			printf(" %10.2fus", 1e6 * (p->worker_cpu - base) / (double)p->prof.samples);
		printf("\n");
	}
	if (smp[1] + smp[2] > 0) {
		double per = (cpu[1] + cpu[2] - (nruns[1] + nruns[2]) * base) / (double)(smp[1] + smp[2]);

		printf("  extra worker CPU per sample, sampled runs pooled: %.2fus; a sampled thread "
		       "spends %.2f%% of its CPU at 1 kHz, %.1f%% at 10 kHz\n", 1e6 * per,
		       100.0 * per * 1000, 100.0 * per * 10000);
		for (unsigned m = 1; m < 3; m++)
			printf("  %s: %.1f%% worker CPU against unsampled, at %.0f samples/s achieved "
			       "(%.0f asked)\n", m == 1 ? "1 kHz" : "10 kHz",
			       100.0 * (cpu[m] / nruns[m] - base) / base,
			       wall[m] > 0 ? (double)smp[m] / wall[m] : 0.0,
			       (m == 1 ? 1000.0 : 10000.0) * threads);
	}
}

/* --- one sample under a deep stack ---------------------------------------------------- */

typedef struct parked {
	toyjit *jit;
	sw_frame *head;
	uint64_t id;
	unsigned depth;
	int parked, release;        /* atomic */
	sw_status status;
} parked;

/* The stub's helper: stay here, under `depth` managed frames, until released. */
static void park_helper(toyjit *jit, sw_transition_frame *tf)
{
	parked *p = jit->user;

	(void)tf;
	__atomic_store_n(&p->parked, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&p->release, __ATOMIC_ACQUIRE))
		;
}

static void *parked_main(void *arg)
{
	parked *p = arg;

	p->status = sw_registry_add_self(reg, p->jit->map, &p->head, &p->id);
	if (p->status == SW_OK)
		p->status = toyjit_run(p->jit, p->depth, -1);
	__atomic_store_n(&p->parked, 1, __ATOMIC_RELEASE);   /* also when it failed */
	sw_registry_remove_self(reg);
	return NULL;
}

typedef struct cost {
	double total_ns, walk_ns, frames;   /* medians; frames: the mean */
} cost;

#define MAX_SAMPLES 4000

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* n samples, each timed on its own: the median resists a busy machine's outliers. */
static cost time_samples(uint64_t id, unsigned n, int walk)
{
	static uint64_t total[MAX_SAMPLES], walked[MAX_SAMPLES];
	profile prof;
	cost c = { 0, 0, 0 };

	if (n > MAX_SAMPLES)
		n = MAX_SAMPLES;
	memset(&prof, 0, sizeof prof);
	/* Warm up: the handler's pages, the walker's code and the stack in the caches. */
	for (unsigned i = 0; i < 10; i++)
		sw_sampler_sample(reg, id, walk ? on_sample : NULL, &prof);
	memset(&prof, 0, sizeof prof);
	for (unsigned i = 0; i < n; i++) {
		uint64_t t0 = now_ns(CLOCK_MONOTONIC);

		sw_sampler_sample(reg, id, walk ? on_sample : NULL, &prof);
		total[i] = now_ns(CLOCK_MONOTONIC) - t0;
		walked[i] = prof.last_walk_ns;
	}
	qsort(total, n, sizeof total[0], cmp_u64);
	qsort(walked, n, sizeof walked[0], cmp_u64);
	c.total_ns = (double)total[n / 2];
	c.walk_ns = walk ? (double)walked[n / 2] : 0;
	c.frames = walk ? (double)prof.frames / n : 0;
	return c;
}

static void sample_cost(sw_codemap *map)
{
	static const toyjit_shape shapes[] = {
		TOYJIT_RBP_FRAME, TOYJIT_NO_FP, TOYJIT_BIG_FRAME, TOYJIT_MOV_SAVES, TOYJIT_OFFSET_FP
	};
	static const unsigned depths[] = { 10, 100, 1000 };

	printf("one sample of a thread stopped under N managed frames (median wall time):\n");
	printf("  %6s %8s %14s %12s %14s %12s\n", "depth", "frames", "signal+resume", "walk",
	       "whole sample", "walk/frame");
	for (size_t i = 0; i < sizeof depths / sizeof depths[0]; i++) {
		parked p;
		pthread_t th;
		unsigned n = depths[i] >= 1000 ? 1000 : 3000;
		cost bare, full;

		memset(&p, 0, sizeof p);
		p.depth = depths[i];
		if (toyjit_create(&p.jit, map, &p.head, shapes, 5, park_helper, &p) != SW_OK ||
		    pthread_create(&th, NULL, parked_main, &p) != 0) {
			printf("  %6u: cannot set up\n", depths[i]);
			return;
		}
		while (!__atomic_load_n(&p.parked, __ATOMIC_ACQUIRE))
			sched_yield();
		if (p.status != SW_OK) {
			printf("  %6u: the run failed: %s\n", depths[i], sw_strerror(p.status));
		} else {
			bare = time_samples(p.id, n, 0);
			full = time_samples(p.id, n, 1);
			printf("  %6u %8.0f %12.2fus %10.2fus %12.2fus %10.1fns\n", depths[i], full.frames,
			       bare.total_ns / 1000, full.walk_ns / 1000, full.total_ns / 1000,
			       full.frames > 0 ? full.walk_ns / full.frames : 0.0);
		}
		__atomic_store_n(&p.release, 1, __ATOMIC_RELEASE);
		pthread_join(th, NULL);
		toyjit_destroy(p.jit);
	}
}

int main(int argc, char **argv)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned threads = cpus < 2 ? 2 : cpus > 4 ? 4 : (unsigned)cpus;
	uint64_t runs = argc > 1 ? strtoull(argv[1], NULL, 0) : 2000000;
	sw_codemap *map;

	if (!toyjit_host_info() || sw_codemap_create(&map) != SW_OK ||
	    sw_registry_create(&reg) != SW_OK || sw_sampler_start(reg, NULL) != SW_OK) {
		printf("bench-profiler: cannot set up\n");
		return 1;
	}
	sample_cost(map);
	overhead(map, threads, runs);
	sw_sampler_stop(reg);
	sw_registry_destroy(reg);
	sw_codemap_destroy(map);
	return 0;
}
