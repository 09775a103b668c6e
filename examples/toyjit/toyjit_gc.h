/*
 * toyjit_gc.h - a tiny moving collector for the toy JIT's heap.
 *
 * Two semispaces of fixed-size objects (toyjit.h: TOYJIT_OBJ_*).  A
 * collection walks the thread with sw_walk_frames for the GC
 * (SW_WALK_GC_FUNCLET_REFERENCE_REPORTING, every register restored), asks
 * every frame for its roots (sw_crawl_frame_enum_gc_roots), copies each
 * object they reach to the other semispace (Cheney: the reference fields of
 * the copies are forwarded too), writes each root's new value where the
 * root lives (a stack slot, a callee's save slot, a Frame's slot, or a
 * register of the context the thread resumes with), then poisons the old
 * space, so that a reference the collector missed reads garbage.
 *
 * Uses only the public API; allocates nothing (async-signal-safe).
 */
#ifndef TOYJIT_GC_H
#define TOYJIT_GC_H

#include "toyjit.h"

/* The pattern the old space is filled with: a stale reference reads it. */
#define TOYJIT_GC_POISON 0xdbu

typedef struct toyjit_gc_stats {
	unsigned collections;
	unsigned frames;            /* frames whose roots were enumerated */
	unsigned skipped;           /* frames the walk reported with should_report_gc 0 */
	unsigned unsafe_frames;     /* managed frames where CoreCLR would not collect (sw_crawl_frame_is_gc_safe 0) */
	unsigned funclets;          /* funclet frames seen (they report their parent's references) */
	unsigned parent_roots;      /* roots funclets reported in their parent's frame (SW_GC_PARENT_FRAME) */
	unsigned roots;             /* root locations updated, of which: */
	unsigned slot_roots;        /*   stack slots of managed frames */
	unsigned saved_roots;       /*   registers a callee saved (updated in its save slot) */
	unsigned reg_roots;         /*   registers of the seed context (updated in the context) */
	unsigned frame_roots;       /*   slots a Frame protects */
	unsigned moved;             /* objects copied */
	unsigned bad;               /* roots outside the old space, or a walk that failed */
	sw_status status;           /* the first error */
	const char *what;           /* ... described */
	unsigned long long value;   /* ... and the address, register or offset concerned */
} toyjit_gc_stats;

/*
 * toyjit_gc_collect - collect jit's heap for thread `t`, walked from
 * `ctx` (a context the thread will resume with, e.g. from a signal) or,
 * when ctx is NULL, from its newest Frame.  Roots held in the seed
 * context's registers (root address 0) are updated in *ctx; with ctx NULL
 * there must be none.  Stats accumulate into *stats.  Returns SW_OK, or
 * SW_E_MISMATCH (stats->what says why), or the walk's error.
 */
sw_status toyjit_gc_collect(toyjit *jit, const sw_thread *t, sw_context *ctx,
                            toyjit_gc_stats *stats);

/* toyjit_gc_in_heap - 1 if p points at an object of the current semispace. */
int toyjit_gc_in_heap(const toyjit *jit, uintptr_t p);

#endif /* TOYJIT_GC_H */
