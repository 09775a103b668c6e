/*
 * toyjit_workload.h - a multi-threaded toy-JIT workload for profilers:
 * several threads, each with its own toy JIT (the code bakes in one
 * thread's shadow stack and Frame list head), running chains of managed
 * methods of varied depth, some through a P/Invoke, whose stub calls a
 * helper that burns a little CPU.
 *
 * What a profiler's test needs besides the stack itself: each worker says
 * whether it is in "preemptive mode", as the CLR's threads do: outside the
 * runtime's code, or in native code below a linked transition Frame, where
 * the Frame list alone finds every managed frame.  A sample whose seed is
 * neither managed code nor preemptive (the entry thunk, the stubs before
 * and after they link their Frame, the P/Invoke target) cannot be walked
 * without unwinding native code the runtime has no metadata for;
 * DoStackSnapshot refuses those (CORPROF_E_STACKSNAPSHOT_UNMANAGED_CTX).
 *
 * Used by the sampling accuracy test, the profiler benchmark and the
 * toyjit-workload example; uses only the public API.
 */
#ifndef TOYJIT_WORKLOAD_H
#define TOYJIT_WORKLOAD_H

#include <pthread.h>
#include <stdint.h>
#include "toyjit.h"

#define TOYJIT_WORKLOAD_MAX_THREADS 16

typedef struct toyjit_worker toyjit_worker;

/* Called on a worker thread: after its JIT exists and before its first run; before it exits. */
typedef void (*toyjit_worker_hook)(toyjit_worker *w, void *data);

typedef struct toyjit_workload_options {
	unsigned threads;           /* 1 .. TOYJIT_WORKLOAD_MAX_THREADS */
	unsigned min_depth;         /* each run's depth is drawn from [min_depth, max_depth] */
	unsigned max_depth;         /* <= TOYJIT_MAX_DEPTH */
	int pinvoke;                /* 1: about half the runs go through a P/Invoke */
	unsigned helper_spin;       /* loop iterations the helper burns per run */
	uint64_t runs;              /* runs per thread, then it stops; 0: until toyjit_workload_stop */
	toyjit_worker_hook started, stopping;
	void *hook_data;
} toyjit_workload_options;

struct toyjit_worker {
	unsigned index;
	pthread_t thread;
	toyjit *jit;
	sw_frame *head;             /* this thread's Frame list head (the JIT's code uses it) */
	uint64_t id;                /* free for the hooks (a registry handle) */
	volatile int preemptive;    /* 1: not in managed code or a stub (see above) */
	volatile uint64_t runs;     /* runs completed */
	volatile uint64_t helper_work;   /* what the helper computes, so it is not optimized away */
	sw_status status;           /* the first failed run, or SW_OK */
	uint64_t cpu_ns;            /* the thread's CPU time, once it has stopped */
	uint32_t rng;
	int joined;
	const struct toyjit_workload *load;
};

typedef struct toyjit_workload {
	toyjit_workload_options opt;
	sw_codemap *map;
	int stop;                   /* atomic */
	int ready;                  /* atomic: workers that have started */
	toyjit_worker workers[TOYJIT_WORKLOAD_MAX_THREADS];
} toyjit_workload;

/*
 * toyjit_workload_start - create the JITs over `map` (each thread creates
 * and registers its own) and start the threads; returns once every one
 * has called its `started` hook.  SW_E_INVAL for bad options; on any
 * failure nothing is left running.
 */
sw_status toyjit_workload_start(toyjit_workload *load, sw_codemap *map,
                                const toyjit_workload_options *opt);

/*
 * toyjit_workload_stop - ask the threads to stop (if they have not) and
 * join them; the first failed run's status, or SW_OK.
 */
sw_status toyjit_workload_stop(toyjit_workload *load);

/*
 * toyjit_workload_free - destroy the JITs (after toyjit_workload_stop).
 * Until then their method handles, and so their names, stay valid.
 */
void toyjit_workload_free(toyjit_workload *load);

/* toyjit_workload_method_name - a method handle's name (the toy JIT's), or NULL. */
const char *toyjit_workload_method_name(void *method);

#endif /* TOYJIT_WORKLOAD_H */
