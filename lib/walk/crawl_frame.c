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

SW_API uint32_t sw_crawl_frame_relative_offset(const sw_crawl_frame *cf)
{
	/* A frame with code has its IP (iter.c: report and the fast step). */
	return cf && cf->code ? (uint32_t)(cf->ip - cf->code->start) : 0;
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
