/*
 * toyjit_check.h - walk the toy JIT's stack and compare the walk with the
 * shadow stack and with the frames the scenario must show: from the stub's
 * helper (synchronous), or from any instruction of any method, stopped by a
 * signal (asynchronous: see toyjit_async.h).
 *
 * Used by the demo and the tests; uses only the public API.
 */
#ifndef TOYJIT_CHECK_H
#define TOYJIT_CHECK_H

#include "toyjit.h"

#define TOYJIT_WALK_MAX (TOYJIT_MAX_DEPTH + 16)

/* One reported frame, copied out of the crawl frame. */
typedef struct toyjit_walked {
	uint32_t state;             /* an sw_frame_state */
	uint32_t frame_type;
	void *method;
	uint64_t frame;             /* the Frame's address */
	uint64_t ip, sp;            /* 0 when not known */
	uint32_t offset;            /* relative offset (managed frames) */
	uint64_t ambient_sp;        /* sw_crawl_frame_ambient_sp */
	int has_code;               /* code info present */
	int is_funclet, is_filter;  /* sw_crawl_frame_is_funclet, _is_filter_funclet */
	int is_parent_of_funclet;   /* sw_crawl_frame_is_parent_of_funclet */
	int report_gc;              /* sw_crawl_frame_should_report_gc */
	uint32_t trust;             /* sw_crawl_frame_trust: how its registers were found */
	int no_frame_transition;    /* sw_crawl_frame_is_no_frame_transition */
	sw_code_info code;
	uint64_t valid;             /* rd->cur */
	uint64_t regs[SW_MAX_REGS];
	int caller_valid;           /* rd->caller, once the frame is unwound */
	uint64_t caller_mask;
	uint64_t caller_regs[SW_MAX_REGS];
} toyjit_walked;

/* A recorded walk.  Large: allocate it ahead of time, not on the JIT's stack. */
typedef struct toyjit_walk {
	unsigned flags;
	sw_walk_action result;
	sw_walk_error err;
	size_t n;                   /* frames reported; only the first TOYJIT_WALK_MAX are kept */
	toyjit_walked frames[TOYJIT_WALK_MAX];
} toyjit_walk;

/* Where a walk started and what the stack held there: what a check compares against. */
/*
 * toyjit_frame_in_call - whether the Frame at `frame` (0: none) is an
 * InlinedCallFrame whose call is in progress (its return address is set).
 * Async-signal-safe: it reads the Frame in place.
 */
int toyjit_frame_in_call(uint64_t frame);

typedef struct toyjit_point {
	const toyjit_shadow_entry *shadow;  /* the shadow stack then, outermost first */
	size_t depth;                       /* its entries */
	uint64_t head;                      /* the thread's newest Frame then */
	int head_in_call;                   /* it is an InlinedCallFrame whose call is in progress */
	uint64_t pc;                        /* asynchronous: where the code stopped; 0: from the stub */
	uint64_t sp;                        /* asynchronous: the SP there */
} toyjit_point;

/*
 * toyjit_walk_record - walk `t` from its newest Frame with `flags` into w.
 * Async-signal-safe (it is the walk plus copies).
 */
void toyjit_walk_record(const sw_thread *t, unsigned flags, toyjit_walk *w);

/* toyjit_walk_record_from - the same from the context `start`. */
void toyjit_walk_record_from(const sw_thread *t, const sw_context *start, unsigned flags,
                             toyjit_walk *w);

/*
 * toyjit_walk_check - compare a walk recorded in the helper of the current
 * toyjit_run with what it must be: the managed frames are the shadow stack
 * reversed, each at a call site of its method, with the SPs the methods ran
 * with and, for every register the walker reports as known, the same
 * callee-saved values; the TransitionFrame, the native markers and the
 * InlinedCallFrame appear where the flags say; the C caller's registers come
 * out at the end.  Returns SW_OK or SW_E_MISMATCH with a description in
 * msg.  *managed gets the number of managed frames walked (may be NULL).
 */
sw_status toyjit_walk_check(const toyjit *jit, const toyjit_walk *w,
                            char *msg, size_t cap, unsigned *managed);

/*
 * toyjit_walk_check_at - the same for a walk that started at `pt`: from
 * the stub (pt->pc == 0) or from the instruction at pt->pc, where the
 * method stopped there is the active frame whether or not its shadow entry
 * is pushed yet, and an InlinedCallFrame it has linked is a skipped Frame.
 */
sw_status toyjit_walk_check_at(const toyjit *jit, const toyjit_point *pt, const toyjit_walk *w,
                               char *msg, size_t cap, unsigned *managed);

/*
 * toyjit_backtrace_check - sw_backtrace of `t` from `start` (NULL: the
 * newest Frame) with w's flags, right after w was recorded from there:
 * it must give the IP and SP of each frame with code in w, in order, and
 * end as w ended; and sw_codemap_find_batch of those IPs must find the
 * code w found for each.  `cache` may be NULL.  Returns SW_OK or SW_E_MISMATCH
 * with a description in msg.  Async-signal-safe but for the description.
 */
sw_status toyjit_backtrace_check(const sw_thread *t, const sw_context *start, const toyjit_walk *w,
                                 sw_walk_cache *cache, char *msg, size_t cap);

/* toyjit_state_name - "FRAMELESS", "FRAME", "NATIVE_MARKER", ... */
const char *toyjit_state_name(uint32_t state);

#endif /* TOYJIT_CHECK_H */
