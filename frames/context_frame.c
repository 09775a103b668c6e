/*
 * context_frame.c - Frames that hold a whole register context:
 * FaultingExceptionFrame, ResumableFrame, RedirectedThreadFrame,
 * SoftwareExceptionFrame and FuncEvalFrame (and the HelperMethodFrame's
 * machine state, which has the same record).
 *
 * The record has sw_context's layout in target memory (see frame.h), so a
 * runtime simply points the Frame at an sw_context it filled, for instance
 * with sw_context_from_ucontext in a fault handler.  What the kinds differ
 * in is their attributes (set by the pusher in the Frame header) and
 * transition kind; the walk resumes at the record's IP in every case.
 */
#include "frames_internal.h"

#define RECORD_VALID_OFFSET 8
#define RECORD_REGS_OFFSET 16

sw_status swi_context_record_restore(const sw_thread *t, uint64_t record, sw_regdisplay *rd)
{
	const struct swi_arch *a = swi_arch_get(t->arch);
	unsigned char head[RECORD_REGS_OFFSET];
	uint64_t valid, need;
	sw_status st;

	if (!a)
		return SW_E_UNSUPPORTED;
	if (record > UINT64_MAX - RECORD_REGS_OFFSET - 8 * SW_MAX_REGS)
		return SW_E_BADFRAME;
	if ((st = swi_read(t->memory, record, head, sizeof head)) != SW_OK)
		return st;
	valid = swi_load_le(head + RECORD_VALID_OFFSET, 8);
	need = (1ULL << a->ip_reg) | (1ULL << a->sp_reg);
	/* A record of another architecture, or naming registers it has not, is garbage. */
	if (swi_load_le(head, 4) != t->arch || (valid >> a->nregs) != 0 || (valid & need) != need)
		return SW_E_BADFRAME;

	rd->cur.valid = 0;
	for (uint64_t m = valid; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);
		uint64_t slot = record + RECORD_REGS_OFFSET + 8 * (uint64_t)r;

		if ((st = swi_read(t->memory, slot, head, 8)) != SW_OK)
			return st;
		rd->cur.regs[r] = swi_load_le(head, 8);
		rd->cur_loc[r] = slot;
	}
	rd->cur.valid = valid;
	/* SP and IP were taken by the kernel or the runtime, not spilled by code. */
	rd->cur_loc[a->sp_reg] = 0;
	return SW_OK;
}

static sw_status context_record_ip(const sw_thread *t, uint64_t record, uint64_t *ip)
{
	const struct swi_arch *a = swi_arch_get(t->arch);
	unsigned char b[8];
	uint64_t valid;
	sw_status st;

	if (!a)
		return SW_E_UNSUPPORTED;
	if (record > UINT64_MAX - RECORD_REGS_OFFSET - 8 * SW_MAX_REGS)
		return SW_E_BADFRAME;
	if ((st = swi_read(t->memory, record + RECORD_VALID_OFFSET, b, 8)) != SW_OK)
		return st;
	valid = swi_load_le(b, 8);
	if (!(valid & (1ULL << a->ip_reg))) {
		*ip = 0;            /* not captured (yet): nothing to resume */
		return SW_OK;
	}
	if ((st = swi_read(t->memory, record + RECORD_REGS_OFFSET + 8 * (uint64_t)a->ip_reg, b, 8)) != SW_OK)
		return st;
	*ip = swi_load_le(b, 8);
	return SW_OK;
}

sw_status swi_context_field_ip(const sw_frame_view *f, unsigned field, uint64_t *ip)
{
	uint64_t record;
	sw_status st = sw_frame_read_field(f, field, &record);

	if (st != SW_OK)
		return st;
	if (record == 0) {
		*ip = 0;            /* no record yet: nothing to resume */
		return SW_OK;
	}
	return context_record_ip(f->thread, record, ip);
}

sw_status swi_context_field_restore(const sw_frame_view *f, unsigned field, sw_regdisplay *rd)
{
	uint64_t record;
	sw_status st = sw_frame_read_field(f, field, &record);

	return st != SW_OK ? st : swi_context_record_restore(f->thread, record, rd);
}

static sw_status ctxf_return_address(const sw_frame_view *f, uint64_t *ra)
{
	return swi_context_field_ip(f, SW_CTXF_CONTEXT, ra);
}

static sw_status ctxf_update_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
{
	return swi_context_field_restore(f, SW_CTXF_CONTEXT, rd);
}

static sw_status ctxf_method(const sw_frame_view *f, void **method)
{
	/* Only a FuncEvalFrame names a method: the function being evaluated. */
	if (f->type == SW_FRAME_FUNC_EVAL)
		return swi_frame_method_field(f, SW_CTXF_METHOD, method);
	*method = NULL;
	return SW_OK;
}

static sw_transition ctxf_transition(const sw_frame_view *f)
{
	return f->type == SW_FRAME_FUNC_EVAL ? SW_TRANSITION_U2M : SW_TRANSITION_NONE;
}

#define CONTEXT_FRAME_OPS(sym, kind, label)                  \
	const sw_frame_ops sym = {                               \
		.type = kind,                                        \
		.flags = 0,                                          \
		.name = label,                                       \
		.return_address = ctxf_return_address,               \
		.update_regdisplay = ctxf_update_regdisplay,         \
		.method = ctxf_method,                               \
		.transition = ctxf_transition,                       \
	}

CONTEXT_FRAME_OPS(swi_faulting_exception_frame_ops, SW_FRAME_FAULTING_EXCEPTION, "FaultingExceptionFrame");
CONTEXT_FRAME_OPS(swi_resumable_frame_ops, SW_FRAME_RESUMABLE, "ResumableFrame");
CONTEXT_FRAME_OPS(swi_redirected_thread_frame_ops, SW_FRAME_REDIRECTED_THREAD, "RedirectedThreadFrame");
CONTEXT_FRAME_OPS(swi_software_exception_frame_ops, SW_FRAME_SOFTWARE_EXCEPTION, "SoftwareExceptionFrame");
CONTEXT_FRAME_OPS(swi_func_eval_frame_ops, SW_FRAME_FUNC_EVAL, "FuncEvalFrame");
