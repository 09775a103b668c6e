/*
 * toyjit_async.h - stop the toy JIT's code at every instruction of every
 * method and check a walk from the signal context there.
 *
 * For each method (and the leaf) and each instruction the JIT recorded, a
 * breakpoint (int3, brk #0) is planted there and a scenario that executes
 * it is run.  The SIGTRAP handler puts the original bytes back, turns the
 * ucontext into an sw_context (sw_context_from_ucontext), walks from it,
 * copies the shadow stack and the Frame list head, and resumes at the same
 * instruction.  Once the run is over the walk is checked against that
 * snapshot (toyjit_walk_check_at): the decoder must be exact at every
 * offset, in prologs, bodies and epilogs alike.  With a collection at each
 * stop, so must the GC information be.
 */
#ifndef TOYJIT_ASYNC_H
#define TOYJIT_ASYNC_H

#include <stdio.h>
#include "toyjit.h"
#include "toyjit_gc.h"

typedef struct toyjit_async_stats {
	unsigned methods;           /* methods visited (the leaf included) */
	unsigned offsets;           /* instruction offsets tried */
	unsigned walks;             /* walks checked (one per flag set per offset) */
	unsigned passed, failed;    /* walks; an offset no scenario reached counts as failed */
	unsigned unreached;
	unsigned results, results_bad;  /* runs whose jit->result was checked; wrong ones */
	unsigned gc_stops;              /* stops where the collector ran (toyjit_async_gc_all) */
	unsigned gc_unsafe;             /* stops where it did not: an allocation, or a P/Invoke run */
	toyjit_gc_stats gc;             /* what the collections did */
} toyjit_async_stats;

/*
 * toyjit_async_check_all - the whole sweep on `jit`, whose helper must
 * leave the stack alone.  `t` describes this thread (sw_thread_init_self,
 * with jit's Frame list head).  Each of flags[0..nflags) (at most 4) gives
 * one walk per offset.  Failures are described on `log` (the first
 * `max_report`), after each run, never from the handler.  Returns SW_OK
 * when every walk matched, SW_E_MISMATCH when one did not, or the error
 * that stopped the sweep.
 */
sw_status toyjit_async_check_all(toyjit *jit, const sw_thread *t, const unsigned *flags,
                                 unsigned nflags, FILE *log, unsigned max_report,
                                 toyjit_async_stats *stats);

/*
 * toyjit_async_gc_all - the same sweep, and at every stop outside an
 * allocation sequence (toyjit_method.gc_unsafe_*) of a run without a
 * P/Invoke, a collection (toyjit_gc_collect) from the signal context: roots
 * in registers are updated in the ucontext the thread resumes with.  Every
 * run's jit->result must still be toyjit_expected_result.  Host back ends
 * without GC information collect nothing and still check the results.
 */
sw_status toyjit_async_gc_all(toyjit *jit, const sw_thread *t, const unsigned *flags,
                              unsigned nflags, FILE *log, unsigned max_report,
                              toyjit_async_stats *stats);

#endif /* TOYJIT_ASYNC_H */
