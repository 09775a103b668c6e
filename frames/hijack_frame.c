/*
 * hijack_frame.c - HijackFrame: a managed method's return the runtime
 * hijacked to stop the thread for a GC.
 *
 * To suspend a thread running managed code a runtime overwrites the
 * return address of its innermost managed frame with a stub; when that
 * method returns, the stub saves the registers the method returned with
 * and its caller's callee-saved registers (CoreCLR's HijackArgs), pushes a
 * HijackFrame and waits for the GC.  The walk goes through the Frame back
 * to where the return was going: the original return address, SP just
 * above the saved block, the callee-saved registers from it (CoreCLR,
 * vm/frames.h, HijackFrame, and per architecture
 * HijackFrame::UpdateRegDisplay_Impl, e.g. vm/amd64/cgenamd64.cpp).  The
 * caller resumes at a call site, not as an active frame: the Frame has no
 * attributes and names no method.  Its references are the returned value
 * (CoreCLR's HijackFrame::GcScanRoots reports the return registers by the
 * method's return kind): the registers the runtime marks in gc_regs, and
 * in byref_regs for interior pointers.
 */
#include "frames_internal.h"

#define RECORD_REGS_OFFSET 16   /* a context record's registers (frame.h) */

static sw_status hjf_return_address(const sw_frame_view *f, uint64_t *ra)
{
	return sw_frame_read_field(f, SW_HJF_RETURN_ADDRESS, ra);
}

/* The saved block, with IP the original return address, read from the Frame. */
static sw_status hjf_update_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
{
	const struct swi_arch *a = swi_arch_get(f->thread->arch);
	uint64_t ra;
	sw_status st;

	if (!a)
		return SW_E_UNSUPPORTED;
	if ((st = sw_frame_read_field(f, SW_HJF_RETURN_ADDRESS, &ra)) != SW_OK ||
	    (st = swi_context_field_restore(f, SW_HJF_SAVED, rd)) != SW_OK)
		return st;
	rd->cur.regs[a->ip_reg] = ra;
	rd->cur_loc[a->ip_reg] = sw_frame_field_address(f, SW_HJF_RETURN_ADDRESS);
	return SW_OK;
}

/* Report the record's slot of each register in `mask`, with `flags`. */
static sw_status report_regs(const sw_frame_view *f, uint64_t record, uint64_t mask, uint32_t flags,
                             int (*fn)(void *data, uint64_t slot, uint32_t flags), void *data,
                             int *stopped)
{
	const struct swi_arch *a = swi_arch_get(f->thread->arch);

	if (!a)
		return SW_E_UNSUPPORTED;
	/* A mask naming registers the architecture has not is garbage. */
	if (a->nregs < 64 && (mask >> a->nregs) != 0)
		return SW_E_BADFRAME;
	for (; mask && !*stopped; mask &= mask - 1)
		*stopped = fn(data, record + RECORD_REGS_OFFSET + 8 * (uint64_t)__builtin_ctzll(mask), flags);
	return SW_OK;
}

static sw_status hjf_gc_roots(const sw_frame_view *f,
                              int (*fn)(void *data, uint64_t slot, uint32_t flags), void *data)
{
	uint64_t record, refs, byrefs;
	int stopped = 0;
	sw_status st;

	if ((st = sw_frame_read_field(f, SW_HJF_SAVED, &record)) != SW_OK ||
	    (st = sw_frame_read_field(f, SW_HJF_GC_REGS, &refs)) != SW_OK ||
	    (st = sw_frame_read_field(f, SW_HJF_BYREF_REGS, &byrefs)) != SW_OK)
		return st;
	if (record == 0 || (refs | byrefs) == 0)
		return SW_OK;
	if (record > UINT64_MAX - RECORD_REGS_OFFSET - 8 * SW_MAX_REGS)
		return SW_E_BADFRAME;
	if ((st = report_regs(f, record, refs, 0, fn, data, &stopped)) != SW_OK)
		return st;
	return report_regs(f, record, byrefs, SW_GC_INTERIOR, fn, data, &stopped);
}

const sw_frame_ops swi_hijack_frame_ops = {
	.type = SW_FRAME_HIJACK,
	.flags = 0,
	.name = "HijackFrame",
	.return_address = hjf_return_address,
	.update_regdisplay = hjf_update_regdisplay,
	.method = NULL,
	.transition = NULL,
	.gc_roots = hjf_gc_roots,
};
