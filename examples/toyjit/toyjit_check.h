/*
 * toyjit_check.h - walk the toy JIT's stack from its helper and compare the
 * walk with the shadow stack and with the frames the scenario must show.
 *
 * Used by the demo and the test; uses only the public API.
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
	int has_code;               /* code info present */
	sw_code_info code;
	uint64_t valid;             /* rd->cur */
	uint64_t regs[SW_X64_NREGS];
	int caller_valid;           /* rd->caller, once the frame is unwound */
	uint64_t caller_mask;
	uint64_t caller_regs[SW_X64_NREGS];
} toyjit_walked;

/* A recorded walk.  Large: allocate it ahead of time, not on the JIT's stack. */
typedef struct toyjit_walk {
	unsigned flags;
	sw_walk_action result;
	sw_walk_error err;
	size_t n;                   /* frames reported; only the first TOYJIT_WALK_MAX are kept */
	toyjit_walked frames[TOYJIT_WALK_MAX];
} toyjit_walk;

/* toyjit_walk_record - walk `t` from its newest Frame with `flags` into w. */
void toyjit_walk_record(const sw_thread *t, unsigned flags, toyjit_walk *w);

/*
 * toyjit_walk_check - compare a walk recorded in the helper of the current
 * toyjit_run with what it must be: the managed frames are the shadow stack
 * reversed, with the same SPs and, for every register the walker reports as
 * known, the same callee-saved values; each IP lies in its method's body;
 * the TransitionFrame, the native markers and the InlinedCallFrame appear
 * where the flags say; the C caller's registers come out at the end.
 * Returns SW_OK or SW_E_MISMATCH with a description in msg.  *managed gets
 * the number of managed frames walked (may be NULL).
 */
sw_status toyjit_walk_check(const toyjit *jit, const toyjit_walk *w,
                            char *msg, size_t cap, unsigned *managed);

/* toyjit_state_name - "FRAMELESS", "FRAME", "NATIVE_MARKER", ... */
const char *toyjit_state_name(uint32_t state);

#endif /* TOYJIT_CHECK_H */
