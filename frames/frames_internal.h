/*
 * frames_internal.h - how the walker reads Frames.
 */
#ifndef SW_FRAMES_INTERNAL_H
#define SW_FRAMES_INTERNAL_H

#include "util.h"
#include "arch.h"

/* Offset of the first type-specific field: next, then type and attributes. */
static inline uint64_t swi_frame_fields_offset(unsigned ptr_size)
{
	return (uint64_t)ptr_size + 8;
}

/*
 * Read the Frame header at `addr` into `view`.  SW_E_BADFRAME if the
 * address is misaligned or outside the thread's stack, or the type has no
 * registered ops (`*ops` receives them).
 */
sw_status swi_frame_read(const sw_thread *t, uint64_t addr, sw_frame_view *view,
                         const sw_frame_ops **ops);

/* A context record (sw_context's layout in target memory): restore it into rd->cur. */
sw_status swi_context_record_restore(const sw_thread *t, uint64_t record, sw_regdisplay *rd);

/*
 * The same for the record whose address the Frame's field `field` holds,
 * or read just its IP (0 when there is no record or it has no IP yet).
 */
sw_status swi_context_field_restore(const sw_frame_view *f, unsigned field, sw_regdisplay *rd);
sw_status swi_context_field_ip(const sw_frame_view *f, unsigned field, uint64_t *ip);

/* The method handle the Frame's field `field` holds (NULL when it cannot be read). */
static inline sw_status swi_frame_method_field(const sw_frame_view *f, unsigned field, void **method)
{
	uint64_t m;
	sw_status st = sw_frame_read_field(f, field, &m);

	*method = st == SW_OK ? (void *)(uintptr_t)m : NULL;
	return st;
}

/* A hard bound on the references one Frame may protect, against garbage. */
#define SWI_FRAME_MAX_PROTECTED 4096

/*
 * Report the protected references of a Frame whose fields `array` and
 * `count` hold an array of slot addresses and its length.
 */
sw_status swi_frame_protected_roots(const sw_frame_view *f, unsigned array, unsigned count,
                                    int (*fn)(void *data, uint64_t slot, uint32_t flags),
                                    void *data);

/*
 * A transition block (the TransitionFrame's per-architecture layout) at
 * `block`: its return address, and the caller's state after the return.
 */
sw_status swi_transition_block_return_address(const sw_frame_view *f, uint64_t block, uint64_t *ra);
sw_status swi_transition_block_restore(const sw_frame_view *f, uint64_t block, sw_regdisplay *rd);

/* Ops shared by the Frames that never resume managed code (marker_frames.c). */
sw_status swi_frame_no_return_address(const sw_frame_view *f, uint64_t *ra);
sw_status swi_frame_no_regdisplay(const sw_frame_view *f, sw_regdisplay *rd);

/* A hard bound on the roots one Frame's lists and layouts may report, against garbage. */
#define SWI_FRAME_MAX_ROOTS 65536

/*
 * A guard for a list in target memory (Brent's cycle detection): call
 * swi_list_visit for each node in order.  SW_E_FRAMECYCLE when a node
 * comes round again, SW_E_LIMIT past `max` nodes.  No allocation: a
 * cyclic list is found within about twice its length.
 */
struct swi_list_guard {
	uint64_t saved;
	uint64_t power, run;
	uint64_t visited;
};

static inline void swi_list_guard_init(struct swi_list_guard *g)
{
	g->saved = 0;
	g->power = 1;
	g->run = 0;
	g->visited = 0;
}

static inline sw_status swi_list_visit(struct swi_list_guard *g, uint64_t node, uint64_t max)
{
	if (node == g->saved)
		return SW_E_FRAMECYCLE;
	if (++g->visited > max)
		return SW_E_LIMIT;
	if (++g->run == g->power) {
		g->saved = node;
		g->power <<= 1;
		g->run = 0;
	}
	return SW_OK;
}

/*
 * Unwind the interpreted method whose context frame is at rd->cur's SP,
 * under the InterpreterFrame at `frame`, into rd->caller: to its active
 * parent, or (*left set) out of the interpreter through the Frame's
 * transition block (interpreter_frame.c).
 */
sw_status swi_interpreter_unwind(const sw_thread *t, uint64_t frame, sw_regdisplay *rd, int *left);

extern const sw_frame_ops swi_inlined_call_frame_ops;
extern const sw_frame_ops swi_transition_frame_ops;
extern const sw_frame_ops swi_faulting_exception_frame_ops;
extern const sw_frame_ops swi_resumable_frame_ops;
extern const sw_frame_ops swi_redirected_thread_frame_ops;
extern const sw_frame_ops swi_software_exception_frame_ops;
extern const sw_frame_ops swi_func_eval_frame_ops;
extern const sw_frame_ops swi_helper_method_frame_ops;
extern const sw_frame_ops swi_unmanaged_to_managed_frame_ops;
extern const sw_frame_ops swi_debugger_class_init_frame_ops;
extern const sw_frame_ops swi_debugger_exit_frame_ops;
extern const sw_frame_ops swi_debugger_u2m_catch_frame_ops;
extern const sw_frame_ops swi_hijack_frame_ops;
extern const sw_frame_ops swi_protect_byrefs_frame_ops;
extern const sw_frame_ops swi_protect_value_class_frame_ops;
extern const sw_frame_ops swi_tail_call_frame_ops;
extern const sw_frame_ops swi_exception_filter_frame_ops;
extern const sw_frame_ops swi_interpreter_frame_ops;

#endif /* SW_FRAMES_INTERNAL_H */
