/*
 * inlined_call_frame.c - InlinedCallFrame: a managed method's P/Invoke.
 *
 * The method pushes it in its own stack frame.  While the unmanaged call is
 * in progress its return address is set; the walk then resumes the method
 * at that address with the call-site SP and the saved frame pointer.  The
 * other callee-saved registers are whatever the unmanaged code left, so
 * they are unknown.
 */
#include "frames_internal.h"

static sw_status icf_return_address(const sw_frame_view *f, uint64_t *ra)
{
	return sw_frame_read_field(f, SW_ICF_RETURN_ADDRESS, ra);
}

static sw_status icf_update_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
{
	const struct swi_arch *a = swi_arch_get(f->thread->arch);
	uint64_t ra, sp, fp;
	sw_status st;

	if (!a)
		return SW_E_UNSUPPORTED;
	if ((st = sw_frame_read_field(f, SW_ICF_RETURN_ADDRESS, &ra)) != SW_OK ||
	    (st = sw_frame_read_field(f, SW_ICF_CALL_SITE_SP, &sp)) != SW_OK ||
	    (st = sw_frame_read_field(f, SW_ICF_CALLEE_SAVED_FP, &fp)) != SW_OK)
		return st;
	rd->cur.valid = (1ULL << a->ip_reg) | (1ULL << a->sp_reg) | (1ULL << a->fp_reg);
	rd->cur.regs[a->ip_reg] = ra;
	rd->cur_loc[a->ip_reg] = sw_frame_field_address(f, SW_ICF_RETURN_ADDRESS);
	rd->cur.regs[a->sp_reg] = sp;
	rd->cur_loc[a->sp_reg] = 0;
	rd->cur.regs[a->fp_reg] = fp;
	rd->cur_loc[a->fp_reg] = sw_frame_field_address(f, SW_ICF_CALLEE_SAVED_FP);
	return SW_OK;
}

static sw_status icf_method(const sw_frame_view *f, void **method)
{
	return swi_frame_method_field(f, SW_ICF_DATUM, method);
}

static sw_transition icf_transition(const sw_frame_view *f)
{
	SWI_UNUSED(f);
	return SW_TRANSITION_M2U;
}

const sw_frame_ops swi_inlined_call_frame_ops = {
	.type = SW_FRAME_INLINED_CALL,
	.flags = SW_FRAME_OPS_IN_CALLER,
	.name = "InlinedCallFrame",
	.return_address = icf_return_address,
	.update_regdisplay = icf_update_regdisplay,
	.method = icf_method,
	.transition = icf_transition,
};
