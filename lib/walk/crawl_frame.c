/* crawl_frame.c - what a walk callback may ask about the frame it is given. */
#include "iter.h"

SW_API const char *sw_frame_state_name(sw_frame_state state)
{
	switch (state) {
	case SW_STATE_FRAMELESS:      return "FRAMELESS";
	case SW_STATE_FRAME:          return "FRAME";
	case SW_STATE_SKIPPED_FRAME:  return "SKIPPED_FRAME";
	case SW_STATE_NATIVE_MARKER:  return "NATIVE_MARKER";
	case SW_STATE_INITIAL_NATIVE: return "INITIAL_NATIVE";
	case SW_STATE_NO_FRAME_TRANSITION: return "NO_FRAME_TRANSITION";
	case SW_STATE_NATIVE_FRAME:   return "NATIVE_FRAME";
	default:                      return "?";
	}
}

SW_API sw_frame_state sw_crawl_frame_state(const sw_crawl_frame *cf)
{
	return cf ? cf->state : 0;
}

SW_API void *sw_crawl_frame_method(const sw_crawl_frame *cf)
{
	if (!cf)
		return NULL;
	return cf->code ? cf->code->method : cf->method;
}

SW_API uint64_t sw_crawl_frame_frame(const sw_crawl_frame *cf)
{
	return cf ? cf->frame : 0;
}

SW_API uint32_t sw_crawl_frame_frame_type(const sw_crawl_frame *cf)
{
	return cf ? cf->frame_type : SW_FRAME_TYPE_NONE;
}

SW_API const sw_regdisplay *sw_crawl_frame_regdisplay(const sw_crawl_frame *cf)
{
	return cf ? cf->rd : NULL;
}

/*
 * The frame's IP and SP without the walk through sw_context_ip's arch
 * table: a profiler's callback asks for them at every frame.  The report
 * keeps the IP (iter.c: report, fast_step).
 */
SW_API uint64_t sw_crawl_frame_ip(const sw_crawl_frame *cf)
{
	return cf ? cf->ip : 0;
}

SW_API uint64_t sw_crawl_frame_sp(const sw_crawl_frame *cf)
{
	const sw_regdisplay *rd;

	if (!cf || !(rd = cf->rd))
		return 0;
	return (rd->cur.valid >> cf->sp_reg) & 1 ? rd->cur.regs[cf->sp_reg] : 0;
}

SW_API int sw_crawl_frame_is_frameless(const sw_crawl_frame *cf)
{
	return cf && cf->state == SW_STATE_FRAMELESS;
}

SW_API int sw_crawl_frame_is_first(const sw_crawl_frame *cf)
{
	return cf && cf->is_first;
}

SW_API int sw_crawl_frame_is_interrupted(const sw_crawl_frame *cf)
{
	return cf && cf->is_interrupted;
}

SW_API int sw_crawl_frame_has_faulted(const sw_crawl_frame *cf)
{
	return cf && cf->has_faulted;
}

SW_API int sw_crawl_frame_is_native_marker(const sw_crawl_frame *cf)
{
	return cf && cf->state == SW_STATE_NATIVE_MARKER;
}

/*
 * CoreCLR's CrawlFrame::GetRelOffset (vm/stackwalk.h) is its code info's
 * EECodeInfo::GetRelOffset (vm/codeman.h): the IP's offset from the
 * method's start, which for a funclet is its parent's start, since the
 * JIT emits funclets after the main body in one block of code.  Here a
 * funclet is registered on its own: its parent's start is found in the
 * map below it (swi_codemap_funclet_parent).  When it is not there
 * (hostile or incomplete registrations), or too far below for 32 bits,
 * the offset is from the funclet's own start, as documented in
 * sw_crawl_frame(3).  A frame with code has its IP (iter.c: report and
 * the fast step); the walk holds the map's read section while it runs
 * its callback.
 */
SW_API uint32_t sw_crawl_frame_relative_offset(const sw_crawl_frame *cf)
{
	uint64_t start, parent;

	if (!cf || !cf->code)
		return 0;
	start = cf->code->start;
	if ((cf->code->flags & SW_CODE_FUNCLET) && cf->thread &&
	    (parent = swi_codemap_funclet_parent(cf->thread->codemap, cf->code)) != 0 &&
	    cf->ip - parent <= UINT32_MAX)
		start = parent;
	return (uint32_t)(cf->ip - start);
}

/*
 * CoreCLR's CrawlFrame::GetAmbientSPFromCrawlFrame (vm/stackwalk.cpp):
 * on x86, EECodeManager::GetAmbientSP (vm/eetwain.cpp) at the frame's
 * relative offset, with nesting level 0: none (NULL) in a prolog or an
 * epilog; otherwise the SP of the method's body with nothing pushed for a
 * call (an EBP frame's outermost base SP, GetOutermostBaseFP; an ESP
 * frame's SP plus the argument bytes pushed at that offset).  On ARM the
 * current SP, a target this library does not walk; on every other target
 * NULL.  Its readers are the debugger's (x86 locals addressed from it).
 *
 * SWU says the same thing in its own terms: at each offset SP = CFA -
 * sp_offset, argument pushes included, and the body's first offset (the
 * prolog's size) has none pushed.  So the ambient SP is the frame's CFA,
 * found by the rule at its IP (a return address keeps the arguments its
 * callee pops: sw_swu_decode_return_address), minus the sp_offset of the
 * body's start.  A blob in row form (imported CFI, native code) has no
 * prolog to measure from: none.
 */
SW_API uint64_t sw_crawl_frame_ambient_sp(const sw_crawl_frame *cf)
{
	const sw_code_info *code;
	sw_swu_header h;
	sw_swu_rule at, body;
	uint32_t offset;
	sw_status st;

	if (!cf || cf->state != SW_STATE_FRAMELESS || !(code = cf->code) || !cf->thread ||
	    cf->thread->arch != SW_ARCH_X86 || !cf->rd || cf->ip < code->start)
		return 0;
	offset = (uint32_t)(cf->ip - code->start);
	st = swi_stopped_at_call(cf) ?
	     sw_swu_decode_return_address(code->unwind, code->unwind_size, offset, &at) :
	     sw_swu_decode(code->unwind, code->unwind_size, offset, &at);
	if (st != SW_OK || at.region != SW_SWU_BODY || at.cfa_deref || at.cfa_reg >= SW_MAX_REGS ||
	    !((cf->rd->cur.valid >> at.cfa_reg) & 1))
		return 0;
	if (sw_swu_decode_header(code->unwind, code->unwind_size, &h) != SW_OK || h.row_ops ||
	    sw_swu_decode(code->unwind, code->unwind_size, h.prolog_size, &body) != SW_OK ||
	    body.region != SW_SWU_BODY)
		return 0;
	return (uint32_t)(cf->rd->cur.regs[at.cfa_reg] + (uint64_t)(int64_t)at.cfa_offset -
	                  (uint64_t)(int64_t)body.sp_offset);
}

SW_API const sw_code_info *sw_crawl_frame_code_info(const sw_crawl_frame *cf)
{
	return cf ? cf->code : NULL;
}

SW_API uint32_t sw_crawl_frame_depth(const sw_crawl_frame *cf)
{
	return cf ? cf->depth : 0;
}

SW_API int sw_crawl_frame_is_funclet(const sw_crawl_frame *cf)
{
	return cf && cf->code && (cf->code->flags & SW_CODE_FUNCLET) != 0;
}

SW_API int sw_crawl_frame_is_filter_funclet(const sw_crawl_frame *cf)
{
	return sw_crawl_frame_is_funclet(cf) && (cf->code->flags & SW_CODE_FILTER) != 0;
}

SW_API int sw_crawl_frame_is_parent_of_funclet(const sw_crawl_frame *cf)
{
	return cf && cf->state == SW_STATE_FRAMELESS && cf->is_parent_of_funclet;
}

SW_API int sw_crawl_frame_is_no_frame_transition(const sw_crawl_frame *cf)
{
	return cf && cf->state == SW_STATE_NO_FRAME_TRANSITION;
}

SW_API sw_frame_trust sw_crawl_frame_trust(const sw_crawl_frame *cf)
{
	return cf ? (sw_frame_trust)cf->trust : SW_TRUST_NONE;
}

SW_API const char *sw_frame_trust_name(sw_frame_trust trust)
{
	switch (trust) {
	case SW_TRUST_CONTEXT:  return "context";
	case SW_TRUST_FRAME:    return "frame";
	case SW_TRUST_JIT:      return "jit";
	case SW_TRUST_CFI:      return "cfi";
	case SW_TRUST_ANALYSIS: return "analysis";
	case SW_TRUST_SIGNAL:   return "signal";
	case SW_TRUST_FRAME_POINTER: return "fp";
	default:                return "none";
	}
}
