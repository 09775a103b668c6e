/*
 * snapshot.c - DoStackSnapshot's semantics over the walker.
 *
 * The CLR's profiler snapshot walks with FUNCTIONSONLY,
 * HANDLESKIPPEDFRAMES and NOTIFY_ON_U2M_TRANSITIONS, reports each managed
 * frame, and turns each native marker into one report with no method for
 * the run of unmanaged frames it stands for.  The walk also stops at
 * Frames that stand for a method (a P/Invoke's InlinedCallFrame); the
 * snapshot does not report them (vm/proftoeeinterfaceimpl.cpp,
 * ProfilerStackWalkCallback: neither frameless nor a native marker).
 * Mixed mode reports the native frames one by one instead of markers.
 */
#include "iter.h"
#include "codemap_table.h"

static int unmanaged(const sw_crawl_frame *cf)
{
	return sw_crawl_frame_state(cf) == SW_STATE_NATIVE_MARKER ||
	       sw_crawl_frame_state(cf) == SW_STATE_NATIVE_FRAME;
}

SW_API sw_status sw_snapshot(const sw_thread *t, const sw_context *seed, unsigned flags,
                             sw_snapshot_callback cb, void *data)
{
	unsigned walk_flags = SW_WALK_FUNCTIONSONLY | SW_WALK_HANDLESKIPPEDFRAMES |
	                      SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_PROFILER_DO_STACK_SNAPSHOT;
	int native_frames = (flags & SW_SNAPSHOT_NATIVE_FRAMES) != 0;
	const sw_crawl_frame *cf;
	sw_snapshot_frame f;
	sw_iter it;
	uint32_t depth = 0;
	sw_status st;
	int r;

	if (!t || !cb || (flags & ~(unsigned)(SW_SNAPSHOT_REGISTER_CONTEXT | SW_SNAPSHOT_NATIVE_FRAMES |
	                                      SW_SNAPSHOT_ASYNC)))
		return SW_E_INVAL;
	/* Only the caller knows that another thread stands still: it must say so. */
	if (flags & SW_SNAPSHOT_ASYNC)
		walk_flags |= SW_WALK_ALLOW_ASYNC_STACK_WALK;
	if (seed) {
		unsigned token = sw_codemap_read_begin(t->codemap);
		struct swi_code_copy scratch;
		const sw_code_info *code = swi_codemap_lookup(t->codemap, sw_context_ip(seed), &scratch);
		int managed = code && !(code->flags & SW_CODE_NATIVE);

		sw_codemap_read_end(t->codemap, token);
		if (!managed)
			return SW_E_UNMANAGED_CTX;
		walk_flags |= SW_WALK_ALLOW_ASYNC_STACK_WALK;
	}
	if (native_frames)
		walk_flags = (walk_flags & ~(unsigned)SW_WALK_FUNCTIONSONLY) |
		             SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK;

	if ((st = sw_iter_init(&it, t, seed, 0, walk_flags)) != SW_OK)
		return st;
	while ((r = sw_iter_next(&it)) > 0) {
		sw_frame_state state;

		cf = sw_iter_frame(&it);
		state = sw_crawl_frame_state(cf);
		/* Managed frames, and unmanaged code as markers or, in mixed mode, as itself. */
		if (state != SW_STATE_FRAMELESS &&
		    state != (native_frames ? SW_STATE_NATIVE_FRAME : SW_STATE_NATIVE_MARKER))
			continue;
		memset(&f, 0, sizeof f);
		f.method = unmanaged(cf) ? NULL : sw_crawl_frame_method(cf);
		f.ip = sw_context_ip(&sw_crawl_frame_regdisplay(cf)->cur);
		f.code = sw_crawl_frame_code_info(cf);
		f.state = state;
		f.depth = depth++;
		if (flags & SW_SNAPSHOT_REGISTER_CONTEXT)
			f.context = &sw_crawl_frame_regdisplay(cf)->cur;
		if (cb(&f, data) != SW_CONTINUE) {
			sw_iter_end(&it);
			return SW_E_ABORTED;
		}
	}
	sw_iter_end(&it);
	return r < 0 ? r : SW_OK;
}
