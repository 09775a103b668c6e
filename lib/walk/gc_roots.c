/*
 * gc_roots.c - a frame's GC roots: the locations holding live object
 * references, by target address, so that a moving collector can update
 * them.
 *
 * A managed frame's come from its SWU GC information at its IP: stack slots
 * are found from the CFA (the caller's SP, which the walk has just
 * computed), registers through the register display, at the slot a callee
 * saved them to or, when no callee did, in the seed context itself.  A
 * Frame's come from its ops.
 *
 * Which offset's liveness a managed frame reports, and whether its scratch
 * registers count, follow CoreCLR (vm/stackwalk.h,
 * CrawlFrame::GetCodeManagerFlags; vm/eetwain.cpp, EECodeManager::EnumGcRefs):
 * - The active frame (the walk's first, or one a resumable Frame restored)
 *   reports at its own IP, scratch registers included (reportScratchSlots
 *   is set for ActiveStackFrame only).
 * - A frame stopped at a call reports at the return address minus one,
 *   inside the call: at the return address itself a slot live across the
 *   call may already be dead (a call that ends a try block returns to the
 *   jump around its handler).  So does an interrupted frame that did not
 *   fault (ExecutionAborted with AbortingCall: an exception Frame's call to
 *   a throw helper); one that faulted reports at the faulting IP.
 * - No frame but the active one reports a scratch register: its value did
 *   not survive the call or the fault.  A frame other than the active one
 *   still reports its other roots.
 * - A frame a signal interrupted (the kernel's signal frame, which CoreCLR
 *   never walks: it turns such a stop into a Frame) stopped between two
 *   instructions, not at a call, and the kernel gives every register back
 *   from the signal frame when the handler returns: it is reported as the
 *   frame a resumable Frame restored is, at its IP with its scratch
 *   registers, each at its slot in the signal frame.
 * - A funclet reports the slots it shares with its parent where they are,
 *   in the parent's frame (SW_GC_PARENT_FRAME: from the parent's CFA, which
 *   its PSP slot holds, as CoreCLR's funclets reach the parent's frame
 *   through the PSPSym, vm/eetwain.cpp); the parent, marked to skip under
 *   GC_FUNCLET_REFERENCE_REPORTING (iter.c: see_managed_frame), then
 *   reports none, so each is reported once.
 * - A filter funclet runs in the exception's first pass, while its parent
 *   lives: both report, and the slots the filter names in the parent's
 *   frame are reported by both.  CoreCLR allows a slot reported twice only
 *   if pinned (vm/gcenv.ee.common.cpp, CheckDoubleReporting: a moving
 *   collector would otherwise relocate it twice), keeps reporting the
 *   filter's parent (vm/stackwalk.cpp, StackFrameIterator::Filter, the
 *   comment on Dev11 376329), and has its JIT encode every stack slot live
 *   in a filter as pinned (docs/design/coreclr/botr/clr-abi.md, "Filter
 *   GC semantics").  Here the walker does what that encoding does for
 *   the frames that report such a slot twice: the filter reports its
 *   SW_GC_PARENT_FRAME slots pinned, and its parent its own slots at the
 *   same offsets.
 */
#include "iter.h"
#include "frames_internal.h"
#include "swu_parent_slots.h"

#define BIT(r) (1ULL << (r))

struct root_walk {
	const sw_crawl_frame *cf;
	const struct swi_arch *arch;
	uint64_t cfa;
	sw_gc_root_callback cb;
	void *data;
	int scratch_dead;       /* a frame other than the active one: skip scratch registers */
	int filter;             /* a filter funclet: pin its parent-frame slots */
	int filter_parent;      /* a filter's parent: pin the slots in `shared` */
	struct swu_parent_slots shared;
	sw_status status;       /* an error met inside a callback from the decoder */
	int stopped;
};

static int deliver(struct root_walk *w, const sw_gc_root *root)
{
	if (w->cb(w->cf, root, w->data) != SW_CONTINUE) {
		w->stopped = 1;
		return 1;
	}
	return 0;
}

static int managed_slot(void *data, const sw_swu_gc_slot *slot)
{
	struct root_walk *w = data;
	const sw_regdisplay *rd = w->cf->rd;
	sw_gc_root root = { 0, 0, ~0u, slot->flags };

	if (slot->in_register) {
		unsigned r = slot->reg;

		if (w->scratch_dead && r < w->arch->nregs && !(w->arch->callee_saved & BIT(r)))
			return 0;
		/* A reference whose register the walk lost (swi_walk_addresses_only) cannot be reported. */
		if (r >= w->arch->nregs || !(rd->cur.valid & BIT(r))) {
			w->status = SW_E_NOREG;
			return 1;
		}
		root.reg = r;
		root.addr = rd->cur_loc[r];
		root.value = rd->cur.regs[r];
		return deliver(w, &root);
	}
	if (slot->flags & SW_GC_PARENT_FRAME) {
		/* Live only where the PSP slot holds the parent's CFA (swu(5)); not a funclet's frame, else. */
		if (!w->cf->parent_cfa) {
			w->status = SW_E_BADMETA;
			return 1;
		}
		root.addr = w->cf->parent_cfa + (uint64_t)(int64_t)slot->cfa_offset;
		if (w->filter)
			root.flags |= SW_GC_PINNED;
	} else {
		root.addr = w->cfa + (uint64_t)(int64_t)slot->cfa_offset;
		if (w->filter_parent) {
			bool shared;

			/* Slots come in ascending offsets, as the filter's do: one pass over each. */
			if ((w->status = swu_parent_slots_has(&w->shared, slot->cfa_offset, &shared)) != SW_OK)
				return 1;
			if (shared)
				root.flags |= SW_GC_PINNED;
		}
	}
	w->status = swi_read_ptr(w->cf->thread->memory, w->arch->ptr_size, root.addr, &root.value);
	if (w->status != SW_OK)
		return 1;
	return deliver(w, &root);
}

static int frame_slot(void *data, uint64_t slot, uint32_t flags)
{
	struct root_walk *w = data;
	sw_gc_root root = { slot, 0, ~0u, flags };

	w->status = swi_read_ptr(w->cf->thread->memory, w->arch->ptr_size, slot, &root.value);
	if (w->status != SW_OK)
		return 1;
	return deliver(w, &root);
}

/* Is the frame stopped at a call (CoreCLR: neither ActiveStackFrame nor a fault)? */
static int stopped_at_call(const sw_crawl_frame *cf)
{
	return swi_stopped_at_call(cf);
}

/* Does it resume with every register it had (CoreCLR's ActiveStackFrame)? */
static int resumes_with_all_registers(const sw_crawl_frame *cf)
{
	return cf->is_first || cf->trust == SW_TRUST_SIGNAL;
}

/*
 * Could a GC stop the thread with this frame where it is?  CoreCLR's
 * CrawlFrame::IsGcSafe (vm/stackwalk.cpp) asks EECodeManager::IsGcSafe
 * (vm/eetwain.cpp) at the frame's relative offset: true inside one of the
 * method's fully interruptible ranges, or at a call's return address (a
 * safe point; GcInfoDecoder::IsInterruptibleSafePoint, vm/gcinfodecoder.cpp).
 * Prologs and epilogs are no GC safe points (vm/gccover.cpp, DoGcStress,
 * which stops a thread there to check the unwind but not to collect).
 *
 * SWU's GC information says what is live at every offset of the method
 * (swu(5)), so it has no partially interruptible methods and no list of
 * safe points to consult: a method is as if fully interruptible outside
 * its prolog and epilogs.  A frame stopped at a call (neither active nor
 * faulted) is at a safe point; any other is safe in its body only, where
 * sw_swu_decode places its offset.  Frames, markers and native code are
 * not managed frames: CoreCLR asks this of managed frames only.
 */
SW_API int sw_crawl_frame_is_gc_safe(const sw_crawl_frame *cf)
{
	sw_swu_rule rule;

	if (!cf || cf->state != SW_STATE_FRAMELESS || !cf->code || cf->ip < cf->code->start)
		return 0;
	if (stopped_at_call(cf))
		return 1;
	if (sw_swu_decode(cf->code->unwind, cf->code->unwind_size,
	                  (uint32_t)(cf->ip - cf->code->start), &rule) != SW_OK)
		return 0;
	return rule.region == SW_SWU_BODY;
}

SW_API int sw_crawl_frame_should_report_gc(const sw_crawl_frame *cf)
{
	return cf && !cf->skip_gc_report;
}

SW_API sw_status sw_crawl_frame_enum_gc_roots(const sw_crawl_frame *cf, sw_gc_root_callback cb,
                                              void *data)
{
	struct root_walk w;
	sw_status st;

	if (!cf || !cb || !cf->thread)
		return SW_E_INVAL;
	memset(&w, 0, sizeof w);
	w.cf = cf;
	w.cb = cb;
	w.data = data;
	if (!(w.arch = swi_arch_get(cf->thread->arch)))
		return SW_E_UNSUPPORTED;
	if (!sw_crawl_frame_should_report_gc(cf))
		return SW_OK;

	switch (cf->state) {
	case SW_STATE_FRAMELESS: {
		uint64_t ip = cf->rd->cur.regs[w.arch->ip_reg];
		uint32_t offset;

		if (!cf->code || !cf->rd->caller_valid)
			return SW_E_STATE;
		offset = (uint32_t)(ip - cf->code->start);
		w.scratch_dead = !resumes_with_all_registers(cf);
		if (stopped_at_call(cf)) {
			/* A return address at the method's first byte: the call lies outside it. */
			if (offset == 0)
				return SW_E_BADIP;
			offset--;
		}
		w.cfa = cf->rd->caller.regs[w.arch->sp_reg];
		w.filter = (cf->code->flags & (SW_CODE_FUNCLET | SW_CODE_FILTER)) ==
		           (SW_CODE_FUNCLET | SW_CODE_FILTER);
		if (cf->is_parent_of_funclet && cf->parent_of_filter) {
			st = swu_parent_slots_begin(&w.shared, cf->filter_unwind, cf->filter_unwind_size);
			if (st != SW_OK)
				return st;
			w.filter_parent = 1;
		}
		st = sw_swu_gc_live(cf->code->unwind, cf->code->unwind_size, offset, managed_slot, &w);
		break;
	}
	case SW_STATE_FRAME:
	case SW_STATE_SKIPPED_FRAME: {
		sw_frame_view view;
		const sw_frame_ops *ops;

		if ((st = swi_frame_read(cf->thread, cf->frame, &view, &ops)) != SW_OK)
			return st;
		if (!ops->gc_roots)
			return SW_OK;
		st = ops->gc_roots(&view, frame_slot, &w);
		break;
	}
	default:
		return SW_OK;       /* markers hold no references */
	}
	if (st != SW_OK)
		return st;
	if (w.status != SW_OK)
		return w.status;
	return w.stopped ? SW_E_STATE : SW_OK;
}
