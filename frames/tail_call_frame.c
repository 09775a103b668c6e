/*
 * tail_call_frame.c - TailCallFrame: a stub made a tail call for managed
 * code and kept the caller's state inside the Frame.
 *
 * CoreCLR has it on x86 only (vm/frames.h, TailCallFrame: m_CallerAddress,
 * then m_regs, the callee-saved registers, then m_ReturnAddress).  Its
 * GetReturnAddressPtr is &m_ReturnAddress and NeedsUpdateRegDisplay is
 * always true; TailCallFrame::UpdateRegDisplay_Impl (vm/i386/cgenx86.cpp)
 * resumes at m_ReturnAddress with SP just past it (the end of the Frame)
 * and the callee-saved registers at their slots in m_regs.  It names no
 * function and has no attributes and no references.
 *
 * m_regs followed by m_ReturnAddress is the x86 transition block (edi,
 * esi, ebx, ebp, return address), so fields 1 on are a transition block
 * in the Frame, and the rule is the TransitionFrame's with that block; on
 * x64 and arm64 the same rule applies with their blocks.
 */
#include "frames_internal.h"

static sw_status tcf_block(const sw_frame_view *f, uint64_t *block)
{
	*block = sw_frame_field_address(f, SW_TCF_BLOCK);
	return *block > f->addr ? SW_OK : SW_E_BADFRAME;
}

static sw_status tcf_return_address(const sw_frame_view *f, uint64_t *ra)
{
	uint64_t block;
	sw_status st = tcf_block(f, &block);

	return st != SW_OK ? st : swi_transition_block_return_address(f, block, ra);
}

static sw_status tcf_update_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
{
	uint64_t block;
	sw_status st = tcf_block(f, &block);

	return st != SW_OK ? st : swi_transition_block_restore(f, block, rd);
}

const sw_frame_ops swi_tail_call_frame_ops = {
	.type = SW_FRAME_TAIL_CALL,
	.flags = 0,
	.name = "TailCallFrame",
	.return_address = tcf_return_address,
	.update_regdisplay = tcf_update_regdisplay,
	.method = NULL,
	.transition = NULL,
	.gc_roots = NULL,
};
