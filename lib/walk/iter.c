/*
 * iter.c - the stack frame iterator (the CLR's StackFrameIterator).
 *
 * The walk alternates between managed frames, unwound with their SWU
 * metadata, and the thread's Frames, which carry it across unmanaged code.
 * Which comes next is one address comparison: a Frame that lies below a
 * managed frame's caller SP lives inside that frame (or a deeper one) and
 * is handled before it.
 *
 * Every walk terminates: managed unwinds must raise SP, Frames must ascend
 * the stack, and the number of steps is bounded.
 */
#include "iter_unwind.h"
#include "frames_internal.h"
#include "call_site.h"

_Static_assert(sizeof(struct swi_iter) <= sizeof(sw_iter), "sw_iter too small");
_Static_assert(SWI_RULES / 2 <= 8 && SWI_RULES <= 32, "rules_turn and rules_filled have a bit per pair and slot");
_Static_assert(_Alignof(struct swi_iter) <= _Alignof(sw_iter), "sw_iter misaligned");

#define BIT(r) (1ULL << (r))

static struct swi_iter *iter_of(sw_iter *it)
{
	return (struct swi_iter *)(void *)it;
}

static const struct swi_iter *citer_of(const sw_iter *it)
{
	return (const struct swi_iter *)(const void *)it;
}

static void leave_read_section(struct swi_iter *it)
{
	if (it->in_read_section) {
		sw_codemap_read_end(it->thread->codemap, it->map_token);
		it->in_read_section = 0;
	}
}

static int fail(struct swi_iter *it, sw_status st)
{
	const sw_context *cur = &it->rd.cur;

	it->err.status = st;
	it->err.depth = it->depth;
	it->err.ip = (cur->valid & BIT(it->arch->ip_reg)) ? cur->regs[it->arch->ip_reg] : 0;
	it->err.sp = (cur->valid & BIT(it->arch->sp_reg)) ? cur->regs[it->arch->sp_reg] : 0;
	it->err.frame = it->frame;
	it->step = SWI_STEP_FAILED;
	leave_read_section(it);
	return st;
}

static int done(struct swi_iter *it)
{
	it->step = SWI_STEP_DONE;
	leave_read_section(it);
	return 0;
}

/*
 * The walk cannot go on from this native frame: the Frames take over
 * (native unwinding is best effort), and unless one of them resumes the
 * walk in code, it ends with `st` (step_frames).
 */
static void native_dead_end(struct swi_iter *it, sw_status st)
{
	it->native_dead_end = 1;
	it->stopped_by = st;
	it->rd.caller_valid = 0;
}

static uint64_t cur_reg(const struct swi_iter *it, unsigned r)
{
	return it->rd.cur.regs[r];
}

/*
 * Where a funclet's parent is.  CoreCLR finds it by stack position, not by
 * method: vm/exinfo.cpp, ExInfo::FindParentStackFrameHelper, takes the
 * caller SP of the enclosing clause's frame from the exception tracker (or,
 * for a finally called straight from its method, the funclet's caller's
 * caller SP), and ExInfo::IsUnwoundToTargetParentFrame matches it against
 * each frame's own caller SP (GetStackFrameForParentCheck).  Here the
 * funclet's PSP slot (swu(5); vm/eetwain.cpp keeps the parent's frame in
 * the PSPSym the same way) holds that value, so a method that recurses
 * gets the right invocation as the parent.  A funclet without a PSP slot,
 * or active in its prolog or an epilog, where the slot does not hold it,
 * names its parent by method handle (funclet_parent_sp 0).
 */
static sw_status note_funclet_parent(struct swi_iter *it, const sw_code_info *code)
{
	uint64_t cfa = it->rd.caller.regs[it->arch->sp_reg], parent_sp;
	int32_t psp;
	sw_status st;

	it->funclet_parent = code->parent;
	it->funclet_parent_sp = 0;
	if ((st = swu_read_psp_slot(code->unwind, code->unwind_size, &psp)) != SW_OK)
		return st;
	if (!psp)
		return SW_OK;
	if (it->active) {
		uint64_t ip = cur_reg(it, it->arch->ip_reg);
		sw_swu_rule rule;

		if ((st = sw_swu_decode(code->unwind, code->unwind_size,
		                        (uint32_t)(ip - code->start), &rule)) != SW_OK)
			return st;
		if (rule.region != SW_SWU_BODY)
			return SW_OK;
	}
	if ((st = swi_read_ptr(it->thread->memory, it->arch->ptr_size, cfa + (uint64_t)(int64_t)psp,
	                       &parent_sp)) != SW_OK)
		return st;
	/* The parent called into the funclet's caller: its caller SP lies above the funclet's. */
	if (parent_sp <= cfa || parent_sp > it->thread->stack_hi)
		return SW_E_BADSP;
	it->funclet_parent_sp = parent_sp;
	it->cf.parent_cfa = parent_sp;
	return SW_OK;
}

/*
 * Is this frame (not a funclet) the parent funclet_parent names?  A
 * parent known by caller SP that the walk has gone past was never on this
 * stack: the PSP slot held garbage.
 */
static sw_status is_funclet_parent(const struct swi_iter *it, const sw_code_info *code, int *yes)
{
	uint64_t caller_sp = it->rd.caller.regs[it->arch->sp_reg];

	*yes = 0;
	if (!it->funclet_parent_sp) {
		*yes = it->funclet_parent && code->method == it->funclet_parent;
		return SW_OK;
	}
	if (caller_sp > it->funclet_parent_sp)
		return SW_E_BADSP;
	*yes = caller_sp == it->funclet_parent_sp;
	return SW_OK;
}

/*
 * Funclets (exception handlers registered apart from their method): note
 * the parent to flag.  SKIPFUNCLETS, FUNCTIONSONLY and
 * GC_FUNCLET_REFERENCE_REPORTING skip what lies between a funclet and its
 * parent: once a (non-filter) handler runs, the frames it was called over
 * are dead.  A filter runs in the first pass, while they still live, so
 * nothing is skipped for it.  The first two also hide a handler funclet
 * itself, but not a filter (CoreCLR, vm/stackwalk.cpp,
 * StackFrameIterator::Filter: FindParentStackFrameForStackWalk gives a
 * filter no parent to skip to, so its callback is made); for the GC the
 * funclet reports the references it shares with its parent (its own slots
 * and, through its PSP slot, the parent's: SW_GC_PARENT_FRAME), and the
 * parent then reports none (StackFrameIterator::Filter sets
 * fShouldParentToFuncletSkipReportingGCReferences on the frame it matched).
 * A filter's parent still reports, since it lives (Filter clears that
 * mark for a filter's parent); the crawl frame keeps the filter's blob
 * so that the slots both report are reported pinned (gc_roots.c).
 */
static sw_status see_managed_frame(struct swi_iter *it)
{
	const sw_code_info *code = it->code;
	unsigned skippers = SW_WALK_SKIPFUNCLETS | SW_WALK_FUNCTIONSONLY |
	                    SW_WALK_GC_FUNCLET_REFERENCE_REPORTING;
	sw_status st;
	int parent;

	it->cf.is_parent_of_funclet = 0;
	it->cf.skip_gc_report = 0;
	it->cf.parent_cfa = 0;
	it->report_funclet = 0;
	if (code->flags & SW_CODE_FUNCLET) {
		int filter = (code->flags & SW_CODE_FILTER) != 0;

		/* Inside a region being skipped, a funclet is as dead as the rest. */
		if (it->skip_to_parent)
			return SW_OK;
		if ((st = note_funclet_parent(it, code)) != SW_OK)
			return st;
		it->report_funclet = 1;
		it->funclet_was_filter = (uint8_t)filter;
		if (filter) {
			it->cf.filter_unwind = code->unwind;
			it->cf.filter_unwind_size = code->unwind_size;
		}
		if (!filter && (it->flags & skippers) && (it->funclet_parent || it->funclet_parent_sp))
			it->skip_to_parent = 1;
		return SW_OK;
	}
	if ((st = is_funclet_parent(it, code, &parent)) != SW_OK || !parent)
		return st;
	it->cf.is_parent_of_funclet = 1;
	it->cf.parent_of_filter = it->funclet_was_filter;
	it->cf.skip_gc_report = (it->flags & SW_WALK_GC_FUNCLET_REFERENCE_REPORTING) &&
	                        !it->funclet_was_filter;
	it->funclet_parent = NULL;
	it->funclet_parent_sp = 0;
	it->skip_to_parent = 0;
	return SW_OK;
}

/*
 * Set the frame's flags with one store: report() reads them back at once,
 * and a wide load from several narrow stores cannot be forwarded from the
 * store buffer (it waits for them to reach the cache, every frame).
 */
_Static_assert(offsetof(struct swi_iter, is_interrupted) == offsetof(struct swi_iter, is_first) + 1 &&
               offsetof(struct swi_iter, has_faulted) == offsetof(struct swi_iter, is_first) + 2 &&
               offsetof(struct swi_iter, reserved) == offsetof(struct swi_iter, is_first) + 3,
               "the frame flags are four adjacent bytes");

static void set_frame_flags(struct swi_iter *it, uint8_t first, uint8_t interrupted, uint8_t faulted)
{
	const uint8_t flags[4] = { first, interrupted, faulted, it->reserved };

	memcpy(&it->is_first, flags, sizeof flags);
}

/* Does this frame get reported at all, given the funclet rules? */
static int reportable(const struct swi_iter *it, sw_frame_state state)
{
	if (state == SW_STATE_NATIVE_FRAME && (it->flags & SW_WALK_FUNCTIONSONLY))
		return 0;
	if (state == SW_STATE_FRAMELESS && (it->code->flags & SW_CODE_FUNCLET))
		return it->report_funclet && ((it->code->flags & SW_CODE_FILTER) ||
		       !(it->flags & (SW_WALK_SKIPFUNCLETS | SW_WALK_FUNCTIONSONLY)));
	return !it->skip_to_parent;
}

/* Fill the crawl frame and count it as reported; -1 when the rules hide it. */
static int report(struct swi_iter *it, sw_frame_state state, void *method)
{
	struct sw_crawl_frame *cf = &it->cf;

	if (!reportable(it, state))
		return -1;

	cf->state = state;
	if (it->quiet) {
		it->depth++;
		return 1;
	}
	cf->method = method;
	cf->rd = &it->rd;
	cf->ip = (it->rd.cur.valid >> it->arch->ip_reg) & 1 ? cur_reg(it, it->arch->ip_reg) : 0;
	cf->thread = it->thread;
	cf->depth = it->depth++;
	cf->is_first = it->is_first;
	cf->is_interrupted = it->is_interrupted;
	cf->has_faulted = it->has_faulted;
	if (state != SW_STATE_FRAMELESS) {
		cf->is_parent_of_funclet = cf->skip_gc_report = 0;
		cf->parent_cfa = 0;
	}
	cf->code = NULL;
	cf->frame = 0;
	cf->frame_type = SW_FRAME_TYPE_NONE;
	cf->trust = SW_TRUST_NONE;
	if (state == SW_STATE_FRAMELESS || state == SW_STATE_NATIVE_FRAME) {
		cf->code = it->code == &it->fp.info ? NULL : it->code;
		cf->trust = it->trust;
	} else if (state == SW_STATE_NATIVE_MARKER || state == SW_STATE_INITIAL_NATIVE) {
		cf->trust = it->trust;
	} else if (state == SW_STATE_FRAME || state == SW_STATE_SKIPPED_FRAME) {
		cf->frame = it->view.addr;
		cf->frame_type = it->view.type;
	} else if (state == SW_STATE_NO_FRAME_TRANSITION) {
		cf->frame = it->tracker;
	}
	return 1;
}

/* Read the current Frame's header into it->view. */
static sw_status load_frame(struct swi_iter *it)
{
	return swi_frame_read(it->thread, it->frame, &it->view, &it->ops);
}

/*
 * Move past the current Frame (unlinking it with POPFRAMES).  Frames are
 * pushed deeper as calls nest, so the list must ascend: anything else is a
 * cycle or garbage.
 */
static sw_status advance_frame(struct swi_iter *it)
{
	uint64_t next = it->view.next;
	sw_status st;

	if (next != 0 && next <= it->frame)
		return SW_E_FRAMECYCLE;
	if (it->flags & SW_WALK_POPFRAMES) {
		if (!it->thread->frame_head)
			return SW_E_READONLY;
		st = swi_write_ptr(it->thread->memory, it->arch->ptr_size,
		                   it->thread->frame_head, next);
		if (st != SW_OK)
			return st;
	}
	if (it->kept_frame == it->frame)
		it->kept_frame = 0;
	if (it->reported_frame == it->frame)
		it->reported_frame = 0;
	it->frame = next;
	return SW_OK;
}

/*
 * Exception trackers (the CLR's ExInfo) form a second list, newest first,
 * on the stacks of the code handling each exception; each holds the
 * context of a faulted managed frame for which no Frame was pushed.  Like
 * Frames, they must ascend the stack.
 */
static sw_status tracker_field(const struct swi_iter *it, unsigned index, uint64_t *out)
{
	unsigned p = it->arch->ptr_size;
	uint64_t a = it->tracker;

	if ((a & (p - 1)) || a < it->thread->stack_lo || a >= it->thread->stack_hi ||
	    it->thread->stack_hi - a < 2 * p)
		return SW_E_BADFRAME;
	return swi_read_ptr(it->thread->memory, p, a + (uint64_t)index * p, out);
}

/*
 * A tracker an exception dispatch linked (SW_TRACKER_DISPATCH, its record
 * inside it): the frames between it and its record are the dispatch's own
 * and the ones it has unwound.  Both marks are asked for because a tracker
 * already dealt with may hold anything, and the walk only passes those.
 */
static sw_status tracker_is_dispatch(const struct swi_iter *it, int *yes)
{
	uint64_t record;
	sw_status st = tracker_field(it, 1, &record);

	*yes = st == SW_OK && (record & SW_TRACKER_DISPATCH) &&
	       (record & ~(uint64_t)SW_TRACKER_FLAG_MASK) == it->tracker + SW_TRACKER_DISPATCH_RECORD;
	return st;
}

static sw_status advance_tracker(struct swi_iter *it)
{
	uint64_t next;
	sw_status st = tracker_field(it, 0, &next);

	if (st != SW_OK)
		return st;
	if (next != 0 && next <= it->tracker)
		return SW_E_FRAMECYCLE;
	it->tracker = next;
	return SW_OK;
}

/* Did a look-up of addr find nothing, earlier in this walk or in the last one (missed[])? */
static inline int known_miss(const struct swi_iter *it, uint64_t addr)
{
	return ((it->missed_valid & 1) && it->missed[0] == addr) || ((it->missed_valid & 2) && it->missed[1] == addr);
}

/*
 * The code map's code for ip, from the recent ones when it is there, and
 * NULL without a look-up when a look-up of it found nothing before
 * (known_miss).  A code table's function comes back as recent[]'s copy:
 * valid until the next lookup, so whoever keeps it takes it through
 * swi_set_code.
 */
static const sw_code_info *cached_lookup(struct swi_iter *it, uint64_t ip)
{
	const sw_code_info *c;
	unsigned i;

	for (i = 0; i < SWI_RECENT; i++)
		if (ip - it->recent[i].start < it->recent[i].size)
			return it->recent[i].code;
	if (known_miss(it, ip))
		return NULL;
	i = it->recent_next % SWI_RECENT;
	/* The slot's copy may be overwritten even on a miss: forget the slot first. */
	it->recent[i].size = 0;
	c = swi_codemap_lookup(it->thread->codemap, ip, &it->recent[i].copy);
	if (c) {
		it->recent_next++;
		it->recent[i].start = c->start;
		it->recent[i].size = c->size;
		it->recent[i].code = c;
	} else {
		it->missed[it->missed_next] = ip;
		it->missed_valid |= (uint8_t)(1u << it->missed_next);
		it->missed_next ^= 1;
	}
	return c;
}

static const sw_code_info *lookup(struct swi_iter *it, uint64_t ip, int exact)
{
	const sw_code_info *c;

	/* A return address may lie just past a call that ends its method. */
	if (!exact) {
		if (ip == 0)
			return NULL;
		ip -= 1;
	}
	c = cached_lookup(it, ip);
	/* Without NATIVE_FRAMES native code is not walked, only marked. */
	if (c && (c->flags & SW_CODE_NATIVE) && !(it->flags & SW_WALK_NATIVE_FRAMES))
		return NULL;
	return c;
}

/*
 * The code a return address goes back to.  The kernel's signal trampoline
 * is the exception: nothing called it, the handler "returns" to its very
 * first byte, so its own address finds it.
 */
static const sw_code_info *lookup_return(struct swi_iter *it, uint64_t ip)
{
	if (it->flags & SW_WALK_NATIVE_FRAMES) {
		const sw_code_info *c = cached_lookup(it, ip);

		if (c && (c->flags & SW_CODE_SIGNAL_TRAMPOLINE))
			return c;
	}
	return lookup(it, ip, 0);
}

static int is_native(const sw_code_info *code)
{
	return code && (code->flags & SW_CODE_NATIVE);
}

/*
 * Code nothing describes.  With NATIVE_FRAMES and FRAME_POINTER_FALLBACK it
 * is stepped as a native frame by its frame pointer, the last resort;
 * otherwise the walk passes it as unmanaged code (NULL).
 */
static const sw_code_info *unknown_code(struct swi_iter *it, uint64_t ip)
{
	unsigned both = SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK;

	if ((it->flags & both) != both)
		return NULL;
	memset(&it->fp, 0, sizeof it->fp);
	it->fp.info.start = ip;
	it->fp.info.size = 1;
	it->fp.info.flags = SW_CODE_NATIVE;
	it->fp.body = &swi_no_body_rule;
	return &it->fp.info;
}

/*
 * Where a frame-pointer step may land.  Code without a frame pointer
 * leaves FP as its caller had it, pointing at the record of a frame further
 * out: stepping by it would skip the frames between without a trace (the
 * PostgreSQL backend whose LLVM JIT code lost ExecScan).  Nothing at the
 * record itself tells the two apart, so its return address must be one:
 * in code the walk knows (a module's function, a registered method), or
 * else right after a call instruction (unknown code calling unknown code).
 * Code that cannot be read is not judged, the record is taken as it is: a
 * core file holds no text of a library it does not name (qemu's name
 * none).  Where the call before it is a direct one, its callee must be
 * what called us: known code there can
 * only have been a stub on the way to us (a PLT entry), any other known
 * callee means the record is another frame's.  Each failure is
 * SW_E_NOCALLER.  A known function that tail-calls into unknown code fails
 * the last test too: a stop with a reason, never a frame skipped.
 */
static sw_status check_frame_record_caller(struct swi_iter *it, uint64_t ra)
{
	const sw_code_info *callee;
	uint64_t target;

	if (!lookup_return(it, ra) && swi_follows_call(it->thread, ra) == SWI_CALL_NONE)
		return SW_E_NOCALLER;
	target = swi_direct_call_target(it->thread, ra);
	if (target == 0 || !(callee = cached_lookup(it, target)) || callee->start != target ||
	    swi_is_jump_stub(it->thread, target))
		return SW_OK;
	return SW_E_NOCALLER;
}

/*
 * An active frame (its IP exact: the seed, code a signal interrupted) on an
 * architecture with a link register may not have saved it yet (a leaf, or
 * any function at its first instructions, as ld.so's resolver is when PLT0
 * jumps to it).  FP's record is then its caller's own, and LR the only
 * trace of the caller.  Where LR leads into known code and differs from the
 * record's return address, the record is not this frame's (one that saved
 * LR in its record has the two equal; one that made a call since has LR
 * inside itself, unknown code): SW_E_NOCALLER.  Stepping to LR instead
 * would be a guess: SP may have moved (PLT0 pushes 16 bytes before the
 * resolver runs), and nothing says by how much.
 */
static sw_status check_link_register(struct swi_iter *it, uint64_t record_ra)
{
	const struct swi_arch *a = it->arch;
	const sw_context *cur = &it->rd.cur;
	uint64_t lr;

	if (!it->active || a->lr_reg < 0 || !(cur->valid & (1ULL << a->lr_reg)))
		return SW_OK;
	lr = cur->regs[a->lr_reg] & ~it->thread->ptrauth_mask;
	if (lr == 0 || lr == record_ra || !lookup_return(it, lr))
		return SW_OK;
	return SW_E_NOCALLER;
}

/*
 * One frame-pointer step: the frame record at FP holds the caller's FP and
 * the return address (x64, x86 and arm64 alike).  Only IP, SP and FP are
 * known afterwards.  The record must lie on the stack, at or above SP, so
 * the step moves toward the base, and lead to the frame's real caller
 * (check_frame_record_caller, check_link_register); else the frame fails
 * with the reason and the walk stops there (stopped_by), never past a
 * frame it could not see.  A record whose return address is 0 gives a
 * caller at 0, where the walk stops with a reason (step_after_managed).
 */
static sw_status frame_pointer_step(struct swi_iter *it)
{
	const struct swi_arch *a = it->arch;
	const sw_context *cur = &it->rd.cur;
	sw_context *caller = &it->rd.caller;
	unsigned p = a->ptr_size;
	uint64_t fp = cur->regs[a->fp_reg], sp = cur->regs[a->sp_reg], ra, next_fp;
	sw_status st;

	if (!(cur->valid & (1ULL << a->fp_reg)))
		return SW_E_NOREG;
	if ((fp & (p - 1)) || fp < sp || fp > it->thread->stack_hi - 2 * (uint64_t)p)
		return SW_E_BADSP;
	if ((st = swi_read_ptr(it->thread->memory, p, fp, &next_fp)) != SW_OK ||
	    (st = swi_read_ptr(it->thread->memory, p, fp + p, &ra)) != SW_OK)
		return st;
	ra &= ~it->thread->ptrauth_mask;
	if (ra != 0 && ((st = check_frame_record_caller(it, ra)) != SW_OK ||
	                (st = check_link_register(it, ra)) != SW_OK))
		return st;
	caller->arch = cur->arch;
	caller->valid = (1ULL << a->ip_reg) | (1ULL << a->sp_reg) | (1ULL << a->fp_reg);
	caller->regs[a->ip_reg] = ra;
	it->rd.caller_loc[a->ip_reg] = fp + p;
	caller->regs[a->sp_reg] = fp + 2 * (uint64_t)p;
	it->rd.caller_loc[a->sp_reg] = 0;
	caller->regs[a->fp_reg] = next_fp;
	it->rd.caller_loc[a->fp_reg] = fp;
	it->rd.caller_valid = 1;
	it->caller_trust = SW_TRUST_FRAME_POINTER;
	it->caller_active = 0;
	return SW_OK;
}

static uint8_t trust_of(const sw_code_info *code)
{
	return swi_code_trust(code);
}

/*
 * A handler on an alternate signal stack (sigaltstack(2)) returns to the
 * stack the signal interrupted, which may lie anywhere, below the signal
 * frame at sp too.  The frame must say so (its uc_stack: the handler's
 * stack holds sp, and the interrupted SP isp lay off it); a frame that
 * records no uc_stack (i386's sigframe) must at least leave the current
 * stack.  The stack holding isp bounds the walk from there on: the current
 * one, where the alternate stack lies inside it, else the thread's
 * stack_bounds.  A hostile stack may name any address: a walk switches at
 * most SWI_MAX_STACK_SWITCHES times and SP rises on each stack, so its
 * work stays bounded by the stacks' sizes.
 */
/*
 * The loop steps a walk may take on the stack [lo, hi).  Every frame but
 * the first holds at least its return address, so the stack holds at most
 * (hi - lo) / pointer-size frames above the first; Frames and exception
 * trackers lie in it aligned and ascending, each passed once, so at most
 * as many of each.  A frame that moves SP by less than a pointer is not
 * one a compiler makes: a hostile stack full of them meets the bound and
 * fails with SW_E_DEPTH.
 */
static uint32_t step_bound(const struct swi_arch *a, uint64_t lo, uint64_t hi)
{
	uint64_t slots = hi > lo ? (hi - lo) / a->ptr_size : 0;
	uint64_t records = 3 * slots + SWI_MAX_STACK_SWITCHES + 2;

	if (slots >= SWI_MAX_STEPS || records >= SWI_MAX_STEPS / SWI_STEPS_PER_RECORD)
		return SWI_MAX_STEPS;
	return (uint32_t)(SWI_STEPS_PER_RECORD * records);
}

static sw_status leave_alternate_stack(struct swi_iter *it, uint64_t sp, uint64_t isp,
                                       const struct swi_signal_stack *alt)
{
	const sw_thread *t = it->thread;
	int on_current = isp >= t->stack_lo && isp < t->stack_hi;
	uint64_t lo = t->stack_lo, hi = t->stack_hi;

	if (alt->known ? (alt->flags & (SWI_SS_ONSTACK | SWI_SS_DISABLE)) || sp < alt->lo || sp >= alt->hi ||
	                         (isp >= alt->lo && isp < alt->hi)
	               : on_current)
		return SW_E_BADSP;
	if (it->stack_switches >= SWI_MAX_STACK_SWITCHES)
		return SW_E_BADSP;
	if (!on_current && (!t->stack_bounds || t->stack_bounds(t->stack_bounds_ctx, isp, &lo, &hi) != SW_OK ||
	                    isp < lo || isp >= hi))
		return SW_E_BADSP;
	if (t != &it->switched)
		it->switched = *t;
	it->switched.stack_lo = lo;
	it->switched.stack_hi = hi;
	it->thread = &it->switched;
	it->stack_switches++;
	/* The new stack's frames get their own budget. */
	it->max_steps += step_bound(it->arch, lo, hi);
	if (it->max_steps > SWI_MAX_STEPS)
		it->max_steps = SWI_MAX_STEPS;
	return SW_OK;
}

/*
 * Unwind the frame in rd.cur into rd.caller: with its SWU, or, for the
 * signal trampoline, from the interrupted context the kernel saved.
 */
static sw_status unwind_frame(struct swi_iter *it)
{
	const struct swi_arch *a = it->arch;
	uint64_t sp = it->rd.cur.regs[a->sp_reg], top;
	struct swi_signal_stack alt = { 0, 0, 0, 0 };
	sw_status st;

	if (it->code == &it->fp.info)
		return frame_pointer_step(it);
	/* A lazy module's function this walk could not import (module.h). */
	if (it->code->flags & SW_CODE_NOT_IMPORTED)
		return SW_E_NOTIMPORTED;
	/* Nothing called a thread's first function: the walk ends with it. */
	if (it->code->flags & SW_CODE_OUTERMOST) {
		sw_context_init(&it->rd.caller, (sw_arch)it->thread->arch);
		it->rd.caller.regs[a->ip_reg] = 0;
		it->rd.caller.regs[a->sp_reg] = it->thread->stack_hi;
		it->rd.caller.valid = (1ULL << a->ip_reg) | (1ULL << a->sp_reg);
		it->rd.caller_valid = 1;
		it->caller_trust = trust_of(it->code);
		it->caller_active = 0;
		return SW_OK;
	}
	/*
	 * An interpreted method, brought in by an InterpreterFrame: the
	 * interpreter's code manager unwinds it to its parent context frame
	 * or, past the last, out through the Frame's transition block
	 * (vm/eetwain.cpp, InterpreterCodeManager::UnwindStackFrame and
	 * VirtualUnwindInterpreterCallFrame; vm/stackwalk.cpp, NextRaw on
	 * DummyCallerIP).
	 */
	if (it->interp_frame) {
		int left;

		if ((st = swi_interpreter_unwind(it->thread, it->interp_frame, &it->rd, &left)) != SW_OK)
			return st;
		it->rd.caller_valid = 1;
		it->caller_trust = SW_TRUST_FRAME;
		it->caller_active = 0;
		if (left) {
			it->interp_ref_sp = it->interp_frame;
			it->interp_frame = 0;
		}
		return SW_OK;
	}
	if (!(it->code->flags & SW_CODE_SIGNAL_TRAMPOLINE)) {
		it->caller_trust = trust_of(it->code);
		it->caller_active = 0;
		return swi_unwind_managed(it);
	}
	if (!a->signal_frame_restore)
		return SW_E_UNSUPPORTED;
	sw_context_init(&it->rd.caller, (sw_arch)it->thread->arch);
	st = a->signal_frame_restore(it->thread, sp, it->rd.cur.regs[a->ip_reg], &it->rd.caller,
	                             it->rd.caller_loc, &alt);
	if (st != SW_OK)
		return st;
	if (!(it->rd.caller.valid & (1ULL << a->sp_reg)) || !(it->rd.caller.valid & (1ULL << a->ip_reg)))
		return SW_E_BADSP;
	/*
	 * The interrupted code's SP lies above the signal frame, or on another
	 * stack: the kernel builds the frame below that SP, so on the same
	 * stack it lies above every register the frame saved (and each signal
	 * frame a hostile stack repeats costs the walk a frame's size).
	 */
	top = sp;
	for (uint64_t m = it->rd.caller.valid; m; m &= m - 1)
		if (it->rd.caller_loc[__builtin_ctzll(m)] > top)
			top = it->rd.caller_loc[__builtin_ctzll(m)];
	if (!swi_cfa_moves_up(it->rd.caller.regs[a->sp_reg], top, it->thread->stack_hi, 0) &&
	    (st = leave_alternate_stack(it, sp, it->rd.caller.regs[a->sp_reg], &alt)) != SW_OK)
		return st;
	it->rd.caller_valid = 1;
	it->caller_trust = SW_TRUST_SIGNAL;
	it->caller_active = 1;
	return SW_OK;
}

static void *frame_method(const struct swi_iter *it)
{
	void *m = NULL;

	if (it->ops->method && it->ops->method(&it->view, &m) != SW_OK)
		m = NULL;
	return m;
}

static int functions_only(const struct swi_iter *it)
{
	return (it->flags & SW_WALK_FUNCTIONSONLY) != 0;
}

/* A context must have its IP and SP, and SP must lie on the stack. */
static sw_status check_context(const struct swi_iter *it, const sw_context *c)
{
	uint64_t need = BIT(it->arch->ip_reg) | BIT(it->arch->sp_reg);
	uint64_t sp;

	if ((c->valid & need) != need)
		return SW_E_NOREG;
	sp = c->regs[it->arch->sp_reg];
	if (sp < it->thread->stack_lo || sp > it->thread->stack_hi)
		return SW_E_BADSP;
	return SW_OK;
}

/* sw_iter_init's work, once its arguments are checked. */
static sw_status iter_setup(struct swi_iter *it, const sw_thread *t, const struct swi_arch *a,
                            const sw_context *start, uint64_t start_frame, unsigned flags)
{
	sw_status st;

	memset(it, 0, offsetof(struct swi_iter, rd));
	/*
	 * An empty slot matches no address whatever its start; the start is
	 * cleared too so that valgrind does not see cached_lookup's test
	 * depend on an uninitialised value.
	 */
	for (unsigned i = 0; i < SWI_RECENT; i++)
		it->recent[i].start = it->recent[i].size = 0;
	it->magic = SWI_ITER_MAGIC;
	it->flags = flags;
	it->thread = t;
	it->arch = a;
	it->max_steps = step_bound(a, t->stack_lo, t->stack_hi);
	/*
	 * Whatever is reported first is "first" (CoreCLR, vm/stackwalk.cpp:
	 * StackFrameIterator::ResetCrawlFrame sets isFirst, and only moving
	 * past a frame clears it): the seed frame, the initial native context,
	 * or the first Frame of a walk from the Frames.
	 */
	it->is_first = 1;
	it->cf.sp_reg = (uint8_t)a->sp_reg;
	it->rd.caller_valid = 0;
	if (start) {
		it->rd.cur = *start;
		memset(it->rd.cur_loc, 0, sizeof it->rd.cur_loc);
		it->have_start = 1;
	} else {
		sw_context_init(&it->rd.cur, t->arch);
	}

	if (start_frame) {
		it->frame = start_frame;
	} else if (t->frame_head) {
		st = swi_read_ptr(t->memory, a->ptr_size, t->frame_head, &it->frame);
		if (st != SW_OK)
			return st;
	}
	if (t->exception_head) {
		st = swi_read_ptr(t->memory, a->ptr_size, t->exception_head, &it->tracker);
		if (st != SW_OK)
			return st;
	}
	if (start && (st = check_context(it, start)) != SW_OK)
		return st;
	/*
	 * Walking a thread of this process other than the calling one (or from
	 * another stack, such as a signal stack) must be asked for, as in the
	 * CLR: that thread may move under the walk.
	 */
	if (swi_memory_is_local(t->memory) && !(flags & SW_WALK_ALLOW_ASYNC_STACK_WALK)) {
		uint64_t here = (uintptr_t)&st;

		if (here < t->stack_lo || here >= t->stack_hi)
			return SW_E_INVAL;
	}
	it->step = SWI_STEP_START;
	return SW_OK;
}

SW_API sw_status sw_iter_init(sw_iter *pub, const sw_thread *t, const sw_context *start,
                              uint64_t start_frame, unsigned flags)
{
	struct swi_iter *it = iter_of(pub);
	const struct swi_arch *a;
	unsigned token;
	sw_status st;

	if (!pub || !t || !t->codemap || !t->memory)
		return SW_E_INVAL;
	if (flags & ~SW_WALK_KNOWN_FLAGS)
		return SW_E_INVAL;
	if (!(a = swi_arch_get(t->arch)))
		return SW_E_UNSUPPORTED;
	if (start && start->arch != t->arch)
		return SW_E_INVAL;

	/*
	 * The read section first: entering it is a locked instruction, which
	 * waits for every store before it to drain, and the setup below makes
	 * a kilobyte of them.
	 */
	token = sw_codemap_read_begin(t->codemap);
	if ((st = iter_setup(it, t, a, start, start_frame, flags)) != SW_OK) {
		sw_codemap_read_end(t->codemap, token);
		return st;
	}
	it->map_token = token;
	it->in_read_section = 1;
	return SW_OK;
}

/* The seed context: managed, or native (then the Frames take over). */
static int step_start(struct swi_iter *it)
{
	if (!it->have_start) {
		it->step = SWI_STEP_FRAMES;
		return -1;
	}
	it->trust = SW_TRUST_CONTEXT;
	swi_set_code(it, lookup(it, cur_reg(it, it->arch->ip_reg), 1));
	if (!it->code && !(it->flags & SW_WALK_THREAD_EXECUTING_MANAGED_CODE))
		it->code = unknown_code(it, cur_reg(it, it->arch->ip_reg));
	if (!it->code && (it->flags & SW_WALK_NATIVE_FRAMES))
		it->stopped_by = SW_E_NOTFOUND;
	if (it->code) {
		it->is_first = 1;
		it->active = 1;
		it->step = SWI_STEP_UNWIND;
		/* A native seed walked as a native frame is still an initial native context. */
		if (is_native(it->code) && (it->flags & SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT))
			return report(it, SW_STATE_INITIAL_NATIVE, NULL);
		return -1;
	}
	/* The caller vouched for managed code; it was wrong. */
	if (it->flags & SW_WALK_THREAD_EXECUTING_MANAGED_CODE)
		return fail(it, SW_E_BADIP);
	it->step = SWI_STEP_FRAMES;
	if (it->flags & SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT)
		return report(it, SW_STATE_INITIAL_NATIVE, NULL);
	return -1;
}

/*
 * Frames below the managed frame's caller SP live inside it (an inactive
 * InlinedCallFrame) or in frames already gone: report them before the
 * method, unless HANDLESKIPPEDFRAMES passes over them.  Returns 1 with a
 * frame to report, -1 to go on, or an error.
 */
static int step_skipped(struct swi_iter *it)
{
	uint64_t caller_sp = it->rd.caller.regs[it->arch->sp_reg];
	sw_status st;

	/* A native frame that could not be unwound has no caller SP to compare. */
	if (it->native_dead_end)
		caller_sp = 0;
	/* The last interpreted method's caller SP is its InterpreterFrame (unwind_frame). */
	if (it->interp_ref_sp)
		caller_sp = it->interp_ref_sp;
	/*
	 * A tracker inside this frame or deeper has been dealt with: its fault
	 * is gone.  But a dispatch's tracker in this frame (a walk that
	 * unwound the dispatch's native frames up to the one holding it)
	 * says where the walk goes on: at the frame the dispatch stands at,
	 * past the frames it has unwound, as CoreCLR's walker skips to the
	 * ExInfo's frame iterator instead of unwinding the dispatch's frames.
	 */
	while (it->tracker != 0 && it->tracker < caller_sp) {
		int dispatch;

		if ((st = tracker_is_dispatch(it, &dispatch)) != SW_OK)
			return fail(it, st);
		if (dispatch && it->tracker >= it->rd.cur.regs[it->arch->sp_reg]) {
			it->skip_to_tracker = 1;
			break;
		}
		if ((st = advance_tracker(it)) != SW_OK)
			return fail(it, st);
	}
	while (it->frame != 0 && it->frame < caller_sp) {
		int silent;

		if ((st = load_frame(it)) != SW_OK)
			return fail(it, st);
		/*
		 * An active InlinedCallFrame that brought the walk into this
		 * method is still the current Frame, and CoreCLR reports it a
		 * second time here, as a skipped Frame, unless
		 * HANDLESKIPPEDFRAMES (vm/stackwalk.cpp: NextRaw keeps the
		 * Frame while its call is active, and CheckForSkippedFrames
		 * then finds it below the method's caller SP).
		 */
		silent = it->frame == it->reported_frame ||
		         (it->flags & SW_WALK_HANDLESKIPPEDFRAMES);
		if (!silent) {
			void *m = it->quiet && !functions_only(it) ? NULL : frame_method(it);

			if (m || !functions_only(it)) {
				/* Report it now; the next call passes it silently. */
				it->reported_frame = it->frame;
				return report(it, SW_STATE_SKIPPED_FRAME, m);
			}
		}
		if ((st = advance_frame(it)) != SW_OK)
			return fail(it, st);
	}
	it->step = SWI_STEP_AFTER_MANAGED;
	if (is_native(it->code))
		return report(it, SW_STATE_NATIVE_FRAME, it->code->method);
	if ((st = see_managed_frame(it)) != SW_OK)
		return fail(it, st);
	return report(it, SW_STATE_FRAMELESS, it->code->method);
}

/* The caller's registers become the current frame's (only the known ones: the arrays are mostly stale slots). */
static inline __attribute__((always_inline)) void caller_becomes_current(sw_regdisplay *rd)
{
	rd->cur.valid = rd->caller.valid;
	for (uint64_t m = rd->caller.valid; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);
		rd->cur.regs[r] = rd->caller.regs[r];
		rd->cur_loc[r] = rd->caller_loc[r];
	}
	rd->caller_valid = 0;
}

/* Become the caller: managed again, or a native marker and then Frames. */
static int step_after_managed(struct swi_iter *it)
{
	sw_regdisplay *rd = &it->rd;
	int from_native = is_native(it->code);
	uint64_t ip;

	/* The frame just reported holds a dispatch's tracker: the tracker comes next. */
	if (it->skip_to_tracker) {
		it->skip_to_tracker = 0;
		it->is_first = it->is_interrupted = it->has_faulted = 0;
		it->rd.caller_valid = 0;
		it->step = SWI_STEP_FRAMES;
		return -1;
	}
	/*
	 * Native unwinding is best effort: a native frame that cannot be
	 * unwound hands the walk to the Frames, as if it had not been walked.
	 */
	if (it->native_dead_end) {
		sw_status st;

		it->native_dead_end = 0;
		it->is_first = it->is_interrupted = it->has_faulted = 0;
		it->step = SWI_STEP_FRAMES;
		/*
		 * A Frame inside this frame resumed the walk here (IN_CALLER):
		 * it has been followed, and would bring the walk back to the
		 * same dead end for ever.  The walk goes on from the next one.
		 */
		if (it->frame != 0 && it->frame == it->kept_frame && (st = advance_frame(it)) != SW_OK)
			return fail(it, st);
		return -1;
	}

	caller_becomes_current(rd);
	it->interp_ref_sp = 0;
	/* Code a signal interrupted resumes at its exact IP. */
	it->active = it->caller_active;
	set_frame_flags(it, 0, it->caller_active, 0);
	it->trust = it->caller_trust;

	ip = cur_reg(it, it->arch->ip_reg);
	/*
	 * In a native walk only a thread's first function ends the walk with
	 * no caller.  A return address of 0 read from any other frame is a
	 * zeroed or damaged stack (gdb's "zero PC"): no code holds it, and
	 * the walk stops there with that reason (SW_E_NOTFOUND), never as a
	 * whole stack.  Managed code returning to 0 is the base of a stack
	 * the runtime (or sw_synth) built without native frames.
	 */
	if (ip == 0 && ((it->code->flags & SW_CODE_OUTERMOST) || !(it->flags & SW_WALK_NATIVE_FRAMES)))
		return done(it);
	/*
	 * An interpreted caller's IP is where it stands in its bytecode, not a
	 * return address (CoreCLR's ProcessIp takes it as it is); it must be
	 * the interpreter's code.
	 */
	if (it->interp_frame) {
		swi_set_code(it, lookup(it, ip, 1));
		if (!it->code)
			return fail(it, SW_E_BADFRAME);
		it->step = SWI_STEP_UNWIND;
		return -1;
	}
	swi_set_code(it, it->active ? lookup(it, ip, 1) : lookup_return(it, ip));
	if (!it->code && ip != 0)
		it->code = unknown_code(it, ip);
	if (!it->code && (it->flags & SW_WALK_NATIVE_FRAMES))
		it->stopped_by = SW_E_NOTFOUND;
	it->step = it->code ? SWI_STEP_UNWIND : SWI_STEP_FRAMES;
	/* Leaving managed code for native code: the marker, whether it is walked or not. */
	if (!from_native && (!it->code || is_native(it->code)) &&
	    (it->flags & SW_WALK_NOTIFY_ON_U2M_TRANSITIONS))
		return report(it, SW_STATE_NATIVE_MARKER, NULL);
	return -1;
}

/*
 * The code a return address goes back to, as the walk finds it, when the
 * fast step may step into it: found (a signal trampoline is not), not a
 * funclet or a trampoline.  NULL otherwise.
 */
static const sw_code_info *return_code(struct swi_iter *it, uint64_t ip)
{
	const sw_code_info *code;

	if (ip == 0)
		return NULL;
	/* lookup_return: the signal trampoline is found by its own address. */
	if (it->flags & SW_WALK_NATIVE_FRAMES) {
		code = cached_lookup(it, ip);
		if (code && (code->flags & SW_CODE_SIGNAL_TRAMPOLINE))
			return NULL;
	}
	code = lookup(it, ip, 0);
	if (!code || (code->flags & (SW_CODE_FUNCLET | SW_CODE_SIGNAL_TRAMPOLINE)))
		return NULL;
	return code;
}

/*
 * return_code's code, when it is not an outermost function either and the
 * address lies inside its body rule's runs, which *br and *saved get.
 * NULL otherwise.
 */
static const sw_code_info *body_return(struct swi_iter *it, uint64_t ip, const struct swu_body_rule **br,
                                       const uint32_t **saved)
{
	const sw_code_info *code = return_code(it, ip);
	const struct swu_body_rule *rule;
	uint32_t offset;

	*br = NULL;
	if (!code || (code->flags & SW_CODE_OUTERMOST))
		return NULL;
	rule = swi_body_rule_of(code, saved);
	offset = (uint32_t)(ip - code->start);
	if (!((offset >= rule->lo && offset < rule->hi) || (offset >= rule->lo2 && offset < rule->hi2)))
		return NULL;
	*br = rule;
	return code;
}

/*
 * return_code's code when its body rule does not cover the return
 * address, with the decoder's rule there in its quick form, when a quick
 * step can take that rule (swi_quick_rule_of_decoded).  NULL otherwise.
 */
static const sw_code_info *decoded_return(struct swi_iter *it, uint64_t ip, struct swi_quick_rule *q)
{
	const sw_code_info *code = return_code(it, ip);
	uint64_t offset;
	sw_swu_rule r;

	if (!code || (code->flags & SW_CODE_OUTERMOST))
		return NULL;
	offset = ip - code->start;
	if (offset > code->size ||
	    sw_swu_decode_return_address(code->unwind, code->unwind_size, (uint32_t)offset, &r) != SW_OK ||
	    !swi_quick_rule_of_decoded(&r, swi_code_trust(code), it->arch, q))
		return NULL;
	return code;
}

/*
 * The fast step's state while it runs frame after frame (swi_walk_fast),
 * or for one frame (step_fast).  It keeps in registers what each frame
 * reads of the last one: the unwind's IP, SP and frame pointer
 * (swi_body_unwind), and the iterator's counters and trust, which it
 * writes back to the iterator only when the run ends (fast_leave).  A
 * frame then costs the stores its report needs, and no load waits for the
 * store the frame before made.
 */
/*
 * rules[slot]'s code, copied out of the walk's cache the first time the
 * walk needs it (fast_rules_from_cache leaves it there).  The cache is
 * written only when the walk ends (keep_rules), so its copy holds until
 * then; a fill of the slot makes the iterator's own copy current.
 */
static inline __attribute__((always_inline)) struct swi_code_copy *fast_rule_code(struct swi_iter *it,
                                                                                  unsigned slot)
{
	if (SWI_UNLIKELY((it->rules_in_cache >> slot) & 1)) {
		swi_code_copy_assign(&it->rules[slot].copy, &it->cache->rule[slot].copy);
		it->rules_in_cache &= ~(1u << slot);
	}
	return &it->rules[slot].copy;
}

/* fast_run's slot before the run made a frame current, and when it->code holds that frame's code. */
#define SWI_SLOT_NONE SWI_RULES
#define SWI_SLOT_CODE (SWI_RULES + 1)

struct fast_run {
	/* A caller SP above this lowest Frame or tracker still ahead ends the run (~0: none). */
	uint64_t frames_above;
	struct swi_body_unwind u;       /* of rd.caller: the next frame */
	/*
	 * A run counts its frames, not its steps: every frame it reports
	 * takes three (swi_iter_next's, the UNWIND step's, the SKIPPED
	 * step's), so that at the start of a frame the iterator's count is
	 * step_base + 3 * depth (modulo 2^32), and one compare of depth with
	 * depth_end keeps the bound: a frame at depth_end would pass it.
	 */
	uint32_t step_base, depth, depth_end;
	uint8_t trust, caller_trust;
	uint8_t entered;                /* fast_enter ran */
	/*
	 * A run into arrays (sw_backtrace, ADDRESSES_ONLY: IP, SP and FP are all
	 * it keeps) holds the next frame in u alone, not in rd.caller, and
	 * the current one's code as its rules[] slot, not in it->code:
	 * fast_leave writes them back once, when the run ends
	 * (fast_materialize).  slot is SWI_SLOT_NONE before the run made a
	 * frame current, SWI_SLOT_CODE when it->code holds the current
	 * frame's code already (a fill moved it out of its slot).
	 */
	uint8_t quick;
	uint8_t slot;
	uint64_t quick_hi;              /* the highest CFA a quick step takes: the stack's top, or a Frame or tracker */
};

static inline __attribute__((always_inline)) void fast_run_init(const struct swi_iter *it, struct fast_run *run)
{
	const struct swi_arch *a = it->arch;
	const sw_context *caller = &it->rd.caller;
	uint64_t t = it->tracker ? it->tracker : ~0ull, f = it->frame ? it->frame : ~0ull;

	run->frames_above = t < f ? t : f;
	swi_body_unwind_init(it, &run->u);
	run->u.ip = caller->regs[a->ip_reg];
	run->u.sp = caller->regs[a->sp_reg];
	run->u.fp = caller->regs[a->fp_reg];
	run->u.valid = caller->valid;
	run->step_base = it->steps - 3 * it->depth;
	run->depth = it->depth;
	run->depth_end = it->depth;
	if (it->steps + 3 <= it->max_steps)
		run->depth_end += (it->max_steps - 3 - it->steps) / 3 + 1;
	run->trust = it->trust;
	run->caller_trust = it->caller_trust;
	run->entered = 0;
	run->quick = 0;
	run->slot = SWI_SLOT_NONE;
	/* Which registers rd.caller got from the generic unwind is not known: take them all. */
	run->u.written = ~0ull;
}

/*
 * Can the run's first frame be stepped: its IP is known?  After that,
 * every unwind the fast step makes writes the IP.
 */
static inline __attribute__((always_inline)) int fast_run_usable(const struct fast_run *run)
{
	return (run->u.valid >> run->u.ip_reg) & 1;
}

/* Can the fast step take the frame after the one just reported at all? */
static inline int fast_step_allowed(const struct swi_iter *it)
{
	return !(it->native_dead_end | it->caller_active | it->skip_to_tracker) && !it->skip_to_parent &&
	       !it->funclet_parent && !it->interp_frame && !it->interp_ref_sp &&
	       !it->funclet_parent_sp;
}

/*
 * What every fast frame sets the same way, set once, when the first one
 * goes through: the frame is not the active one or interrupted, nor is its
 * caller, and the crawl frame's fields that only the generic report sets.
 */
static void fast_enter(struct swi_iter *it)
{
	struct sw_crawl_frame *cf = &it->cf;

	it->active = 0;
	set_frame_flags(it, 0, 0, 0);
	it->caller_active = 0;
	it->rd.caller.arch = it->rd.cur.arch;
	it->rd.caller.reserved = 0;
	cf->rd = &it->rd;
	cf->thread = it->thread;
	cf->is_first = cf->is_interrupted = cf->has_faulted = 0;
	cf->is_parent_of_funclet = cf->skip_gc_report = 0;
	cf->parent_cfa = 0;
	cf->frame = 0;
	cf->frame_type = SW_FRAME_TYPE_NONE;
}

/*
 * The run ends: the iterator gets what the run kept to itself.  taken:
 * the steps of a frame the run did not finish (fast_run).
 */
/*
 * What a quick run kept in locals, written back as the generic steps would
 * have left it after the frame made current last: its code in it->code,
 * its caller (next) in rd.caller.  Only IP, SP and FP are known, as the
 * ADDRESSES_ONLY walk keeps no other register.  rd.cur is not written: the
 * next step replaces it with rd.caller before anything reads it (a quick
 * run never stops inside a frame: quick_step).
 */
static __attribute__((noinline)) void fast_materialize(struct swi_iter *it, unsigned slot, const uint64_t next[4],
                                                       unsigned ip_reg, unsigned sp_reg, unsigned fp_reg)
{
	sw_regdisplay *rd = &it->rd;

	if (slot < SWI_RULES)
		it->code = &fast_rule_code(it, slot)->info;
	rd->caller.valid = next[3] & (BIT(ip_reg) | BIT(sp_reg) | BIT(fp_reg));
	rd->caller.regs[ip_reg] = next[0];
	rd->caller.regs[sp_reg] = next[1];
	rd->caller.regs[fp_reg] = next[2];
	rd->caller_loc[ip_reg] = rd->caller_loc[sp_reg] = rd->caller_loc[fp_reg] = 0;
	rd->caller_valid = 1;
}

static inline __attribute__((always_inline)) void fast_leave(struct swi_iter *it, const struct fast_run *run,
                                                             unsigned taken)
{
	if (run->quick && run->slot != SWI_SLOT_NONE) {
		/* By value: the run's address, passed out of line, would keep it in memory. */
		const uint64_t next[4] = { run->u.ip, run->u.sp, run->u.fp, run->u.valid };

		fast_materialize(it, run->slot, next, run->u.ip_reg, run->u.sp_reg, run->u.fp_reg);
		/*
		 * A quick run keeps no trust but its rules': the frame's own
		 * (how the frame was found is not read in a walk into arrays).
		 */
		it->trust = it->caller_trust = it->rule_quick[run->slot].trust;
		it->depth = run->depth;
		it->steps = run->step_base + 3 * run->depth + taken;
		return;
	}
	it->steps = run->step_base + 3 * run->depth + taken;
	it->depth = run->depth;
	it->trust = run->trust;
	it->caller_trust = run->caller_trust;
}

/*
 * caller_becomes_current for the fast step.  After an unwind in place,
 * rd.caller differs from rd.cur only in the registers that unwind wrote
 * (IP, SP and those it restored): only those are copied.
 */
static inline __attribute__((always_inline)) void fast_caller_becomes_current(sw_regdisplay *rd,
                                                                              const struct fast_run *run)
{
	unsigned ip_reg = run->u.ip_reg, sp_reg = run->u.sp_reg;

	/* IP and SP are always written, and the run has their values at hand. */
	rd->cur.valid = run->u.valid;
	rd->cur.regs[ip_reg] = run->u.ip;
	rd->cur_loc[ip_reg] = rd->caller_loc[ip_reg];
	rd->cur.regs[sp_reg] = run->u.sp;
	rd->cur_loc[sp_reg] = rd->caller_loc[sp_reg];
	for (uint64_t m = run->u.valid & run->u.written & ~(BIT(ip_reg) | BIT(sp_reg)); m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		rd->cur.regs[r] = rd->caller.regs[r];
		rd->cur_loc[r] = rd->caller_loc[r];
	}
}

/* The slot of rules[] a return address hashes to; the other way is its pair's other slot (slot ^ 1). */
static inline __attribute__((always_inline)) unsigned fast_rule_slot(uint64_t ra)
{
	return (unsigned)((ra * 0x9e3779b97f4a7c15ull) >> 60) & (SWI_RULES - 1);
}

/*
 * A return address rules[] does not hold: resolve it into one of the two
 * slots of its pair, an empty one or the one the pair did not fill last,
 * and return that slot.  Where a fast step cannot take the address, the
 * slot says so (SWI_TRUST_GENERIC), so that the address is not resolved
 * again.  u's fields come by value: its address, passed to a function not
 * inlined, would keep the loop's copy in memory and lose its constant
 * registers.
 */
static __attribute__((noinline)) unsigned fast_rule_fill(struct swi_iter *it, uint64_t ip, unsigned slot,
                                                    uint64_t keep, uint64_t win_lo, uint64_t win_last)
{
	const struct swu_body_rule *br = NULL;
	const uint32_t *saved = NULL;
	const sw_code_info *code;
	struct swi_quick_rule decoded;
	unsigned pair = slot >> 1;

	/* A return address is looked up one byte back (return_code): known to be in no code, it has no rule. */
	code = known_miss(it, ip - 1) ? NULL : body_return(it, ip, &br, &saved);
	if (!code && !br) {
		/*
		 * Outside the body rule's runs (compiled code whose CFI moves
		 * the CFA around its calls): a walk that keeps IP, SP and FP
		 * alone takes the rule the decoder gives there, once, in its
		 * quick form; the full fast step leaves such a slot to the
		 * generic path (SWI_TRUST_QUICK_ONLY).
		 */
		if (!(keep & ~BIT(it->arch->fp_reg)) && !known_miss(it, ip - 1))
			code = decoded_return(it, ip, &decoded);
	} else if (br->arch != it->thread->arch || br->cfa_reg >= it->arch->nregs) {
		/* A rule swi_unwind_body would refuse goes the generic way, which reports why. */
		code = NULL;
		br = NULL;
	}
	slot = pair * 2;
	if (it->rules[slot].ra != 0)
		slot += it->rules[slot + 1].ra == 0 ? 1 : (it->rules_turn >> pair) & 1;
	it->rules_turn = (uint8_t)((it->rules_turn & ~(1u << pair)) | ((~slot & 1u) << pair));
	/*
	 * The code found is a copy the next lookup may overwrite: the slot
	 * keeps one.  The current frame's code may be the slot's old one
	 * (fast_step does not copy it out): it moves to code_copy first.
	 */
	if (it->code == &it->rules[slot].copy.info) {
		swi_code_copy_assign(&it->code_copy, &it->rules[slot].copy);
		it->code = &it->code_copy.info;
	}
	it->rules[slot].ra = ip;
	it->rules_in_cache &= ~(1u << slot);
	if (!code) {
		/*
		 * No rule a fast step takes (no code, outermost code, a
		 * funclet, a rule it cannot use): the slot says so, and a
		 * later walk goes the generic way without looking again while
		 * no method is added (swi_iter_use_cache).
		 */
		it->rule_quick[slot] = (struct swi_quick_rule){ .bits = SWI_QUICK_NO | SWI_QUICK_GENERIC };
		it->rule_trust[slot] = SWI_TRUST_GENERIC;
	} else if (!br) {
		swi_code_copy_assign(&it->rules[slot].copy, (const struct swi_code_copy *)(const void *)code);
		it->rule_quick[slot] = decoded;
		it->rule_trust[slot] = SWI_TRUST_QUICK_ONLY;
	} else {
		swi_code_copy_assign(&it->rules[slot].copy, (const struct swi_code_copy *)(const void *)code);
		/*
		 * The slot's rule is its own, at a fixed place beside its
		 * address: fast_step then reads it without first loading a
		 * pointer, one load less on the chain from one frame's return
		 * address to the next.
		 */
		if (it->rules[slot].copy.body != &it->rules[slot].copy.rule) {
			it->rules[slot].copy.rule = *it->rules[slot].copy.body;
			it->rules[slot].copy.body = &it->rules[slot].copy.rule;
		}
		it->rule_trust[slot] = swi_code_trust(&it->rules[slot].copy.info);
		it->rule_quick[slot] = swi_quick_rule_of(it->rules[slot].copy.body, saved, it->rule_trust[slot],
		                                         it->arch);
	}
	it->rule_span[slot] = swi_read_span_in(swi_rule_read_extent(&it->rules[slot].copy, &it->rule_quick[slot], keep),
	                                       win_lo, win_last);
	it->rules_filled |= 1u << slot;
	return slot;
}

/*
 * The common step in one pass: the frame just reported returns to a
 * method (managed, or native under NATIVE_FRAMES) at a return address its
 * body rule covers, and no Frame, tracker or funclet rule is in play.  It
 * does what step_after_managed, the UNWIND step and step_skipped do for
 * such a frame, with the same results, but without the state machine's
 * round trips and the generic lookups and report.  Anything else returns
 * -2 before changing the iterator, for the generic path.  Otherwise the
 * result is step_skipped's: 1 with the frame reported, -1 to go on with
 * the generic path from the state set, or an error.  The caller has
 * checked fast_run_usable, and made sure that the three steps the generic
 * path would count for this frame (swi_iter_next's and two more) stay
 * within max_steps; it calls fast_leave when the run ends, but for -1
 * and errors, where this does.
 */
/*
 * fast_step's frame in a quick run (into arrays, ADDRESSES_ONLY): the same
 * frame, the same checks, with IP, SP and FP in the run's locals.  It
 * changes nothing before it knows the frame steps: anything else (a native
 * frame the flags stop at, a rule the locals cannot take, a CFA off the
 * stack or above a Frame or tracker, a read that fails) returns -2, and
 * the generic path takes the frame again from the start, and reports what
 * it finds there the way it always does.
 *
 * in_window: the run's loop over the frames it guesses (quick_run_loop)
 * knows that every read of a rule without SWI_QUICK_FAR lies in the
 * memory's window (quick_in_window), and has worked out in `stop` the
 * rule bits that need more than the unwind (quick_stop_bits): such a
 * frame returns -2 there too, and fast_step takes it again with these
 * checks made one by one.
 */
static inline __attribute__((always_inline)) int quick_step(struct swi_iter *it, struct fast_run *run,
                                                            unsigned slot, int in_window, unsigned stop)
{
	const struct swi_quick_rule *q = &it->rule_quick[slot];
	uint64_t cfa, ra, fp;

	if (in_window) {
		if (q->bits & stop)
			return -2;
	} else {
		if (q->bits & SWI_QUICK_NO)
			return -2;
		if ((q->bits & SWI_QUICK_NATIVE) &&
		    ((it->flags & SW_WALK_FUNCTIONSONLY) ||
		     (it->rule_quick[run->slot].trust == SW_TRUST_JIT &&
		      (it->flags & SW_WALK_NOTIFY_ON_U2M_TRANSITIONS))))
			return -2;
	}
	if (swi_unwind_quick(it, &run->u, q, it->rule_span[slot], run->quick_hi, in_window, &cfa, &ra, &fp) !=
	    SW_OK)
		return -2;
	run->slot = (uint8_t)slot;
	/*
	 * see_managed_frame: the funclet rules leave a quick run's frames
	 * alone (fast_step_allowed).  In the window's loop, stop keeps JIT
	 * frames out while report_funclet is set.
	 */
	if (!in_window && SWI_UNLIKELY(it->report_funclet) && !(q->bits & SWI_QUICK_NATIVE))
		it->report_funclet = 0;
	run->u.ip = ra;
	run->u.sp = cfa;
	run->u.fp = fp;
	/* run->depth: the run counts the frames it stores (fast_run_loop). */
	return 1;
}

/*
 * The rule bits that send a frame from the window's loop (quick_run_loop)
 * to the step that checks each case: no quick rule, reads far from the
 * CFA, native code where the flags look at it, and JIT code while a
 * funclet's report is pending (quick_step).
 */
static inline unsigned quick_stop_bits(const struct swi_iter *it)
{
	unsigned stop = SWI_QUICK_NO | SWI_QUICK_FAR;

	if (it->flags & (SW_WALK_FUNCTIONSONLY | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS))
		stop |= SWI_QUICK_NATIVE;
	if (it->report_funclet)
		stop |= SWI_QUICK_JIT;
	return stop;
}

/*
 * Does every read of a rule without SWI_QUICK_FAR lie in the memory's
 * window, for each frame from here to the run's end?  A frame's CFA lies
 * above its SP and at most at quick_hi (swi_unwind_quick), and such a rule
 * reads between CFA - SWI_QUICK_NEAR and CFA - the pointer size: that is
 * within the window when SP lies SWI_QUICK_NEAR above its start and
 * quick_hi at most at its end.  SP only grows, so it stays true for the
 * rest of the run.
 */
static inline __attribute__((always_inline)) int quick_in_window(const struct fast_run *run, unsigned ptr_size)
{
	const struct swi_body_unwind *u = &run->u;

	return u->lo <= u->last && u->sp >= u->lo && u->sp - u->lo >= SWI_QUICK_NEAR &&
	       run->quick_hi >= ptr_size && run->quick_hi - ptr_size <= u->last;
}

static inline __attribute__((always_inline)) int fast_step(struct swi_iter *it, struct fast_run *run)
{
	sw_regdisplay *rd = &it->rd;
	const sw_code_info *code;
	struct sw_crawl_frame *cf = &it->cf;
	unsigned slot;
	int native;
	uint8_t trust;
	uint64_t ip = run->u.ip;
	sw_status st;

	if (ip == 0)
		return -2;
	/*
	 * A quick run tries the slot that followed the last frame's the last
	 * time first (rule_next), and learns it when that was wrong; then two
	 * ways: the slot the address hashes to, and its pair's other one.
	 */
	slot = run->quick ? it->rule_next[run->slot] : 0;
	if (!run->quick || it->rules[slot].ra != ip) {
		slot = fast_rule_slot(ip);
		if (it->rules[slot].ra != ip && it->rules[slot ^= 1].ra != ip) {
			/* The fill moves the current frame's code out of a slot it refills (it->code). */
			if (run->quick && run->slot < SWI_RULES) {
				it->code = &fast_rule_code(it, run->slot)->info;
				it->rule_quick[SWI_SLOT_CODE] = it->rule_quick[run->slot];
				run->slot = SWI_SLOT_CODE;
			}
			slot = fast_rule_fill(it, ip, slot, run->u.keep, run->u.lo, run->u.last);
		}
		if (run->quick)
			it->rule_next[run->slot] = (uint8_t)slot;
	}
	if (run->quick)
		return quick_step(it, run, slot, 0, 0);
	trust = it->rule_trust[slot];
	/* No rule, or one kept for quick steps alone (fast_rule_fill): the generic path's. */
	if (trust >= SWI_TRUST_GENERIC)
		return -2;
	code = &fast_rule_code(it, slot)->info;
	native = trust != SW_TRUST_JIT;
	if (native &&
	    ((it->flags & SW_WALK_FUNCTIONSONLY) ||
	     /* The frame before is native when its code's trust is not the JIT's. */
	     (run->caller_trust == SW_TRUST_JIT && (it->flags & SW_WALK_NOTIFY_ON_U2M_TRANSITIONS))))
		return -2;

	/* step_after_managed: the caller becomes the current frame. */
	if (!run->entered) {
		fast_enter(it);
		run->entered = 1;
	}
	fast_caller_becomes_current(rd, run);
	run->trust = run->caller_trust;
	/* Not copied out: fast_rule_fill moves it before it refills the slot. */
	it->code = code;

	/* The UNWIND step (unwind_frame, then swi_unwind_managed's body case). */
	run->caller_trust = trust;
	/* fast_rule_code made the slot's code the iterator's own. */
	st = swi_unwind_body(it, &run->u, &it->rules[slot].copy.rule, it->rules[slot].copy.saved, NULL,
	                     &it->rule_span[slot], 1, 1);
	if (st != SW_OK) {
		fast_leave(it, run, 2);
		it->step = SWI_STEP_SKIPPED;
		it->rd.caller_valid = 0;
		if (!native)
			return fail(it, st);
		native_dead_end(it, st);
		return -1;
	}

	/* step_skipped: a tracker or Frame inside this frame goes the generic way. */
	if (run->frames_above < run->u.sp) {
		fast_leave(it, run, 2);
		it->step = SWI_STEP_SKIPPED;
		return -1;
	}
	/* see_managed_frame and report, for a frame the funclet rules leave alone. */
	if (!native && it->report_funclet)
		it->report_funclet = 0;
	cf->state = native ? SW_STATE_NATIVE_FRAME : SW_STATE_FRAMELESS;
	/* The method and the offset come from code and ip (crawl_frame.c). */
	cf->depth = run->depth++;
	cf->code = code;
	cf->ip = ip;
	cf->trust = run->trust;
	return 1;
}

/*
 * The walk flags a rule depends on: what body_return finds (lookup,
 * return_code).  The others change only the kept registers, which
 * the table's header holds apart.
 */
#define SWI_RULE_FLAGS SW_WALK_NATIVE_FRAMES

/* Empty `rt` and say what its rules will be made under. */
static void rule_table_reset(struct swi_rule_table *rt, const sw_codemap *map, uint64_t version, unsigned flags,
                             uint32_t arch, uint64_t keep)
{
	rt->magic = SWI_RULES_MAGIC;
	rt->self = rt;
	rt->map = map;
	rt->version = version;
	rt->flags = flags;
	rt->arch = arch;
	rt->keep = keep;
	rt->held = 0;
	for (unsigned i = 0; i < SWI_RULES; i++)
		rt->rule[i].ra = 0;
	rt->missed_valid = 0;
	rt->seed_valid = 0;
	memset(rt->next, 0, sizeof rt->next);
	/* No window: every walk works its spans out. */
	rt->span_lo = 1;
	rt->span_last = 0;
}

void swi_rule_table_init(struct swi_rule_table *rt)
{
	rule_table_reset(rt, NULL, 0, 0, 0, 0);
}

sw_status swi_iter_use_cache(struct swi_iter *it, struct swi_rule_table *rt)
{
	const sw_codemap *map = it->thread->codemap;
	uint64_t version, keep = swi_kept_registers(it);

	if (rt->magic != SWI_RULES_MAGIC || it->step != SWI_STEP_START)
		return SW_E_INVAL;
	/* Inside the read section: an unchanged version keeps every entry the table holds (swi_codemap_version). */
	version = swi_codemap_version(map);
	if (rt->self != rt || rt->map != map || rt->version != version || rt->flags != (it->flags & SWI_RULE_FLAGS) ||
	    rt->arch != it->thread->arch || rt->keep != keep)
		rule_table_reset(rt, map, version, it->flags & SWI_RULE_FLAGS, it->thread->arch, keep);
	/*
	 * The addresses the last walk did not find, while no method was added
	 * since it began.  A method added while this walk runs may be missed,
	 * as a walk that looked just before it was added would miss it.
	 */
	it->cache_additions = swi_codemap_additions(map);
	if (rt->additions == it->cache_additions) {
		if (rt->missed_valid) {
			it->missed[0] = rt->missed[0];
			it->missed[1] = rt->missed[1];
			it->missed_valid = rt->missed_valid;
		}
	} else {
		/* A method added may be where a slot found none (fast_rule_fill): those slots go. */
		for (unsigned i = 0; i < SWI_RULES; i++)
			if ((rt->held >> i) & 1 && (rt->quick[i].bits & SWI_QUICK_GENERIC)) {
				rt->held &= ~(1u << i);
				rt->rule[i].ra = 0;
			}
	}
	it->cache = rt;
	return SW_OK;
}

/* Hand the rules the walk added to its cache, if it has one (before sw_iter_end). */
static void keep_rules(struct swi_iter *it)
{
	struct swi_rule_table *rt = it->cache;

	if (!rt)
		return;
	for (uint32_t m = it->rules_filled; m; m &= m - 1) {
		unsigned i = (unsigned)__builtin_ctz(m);

		rt->rule[i].ra = it->rules[i].ra;
		swi_code_copy_assign(&rt->rule[i].copy, &it->rules[i].copy);
		/* Inside the read section still: the rule's saved[] is there to read. */
		rt->quick[i] = it->rule_quick[i];
		rt->trust[i] = it->rule_trust[i];
		rt->extent[i] = swi_rule_read_extent(&rt->rule[i].copy, &rt->quick[i], rt->keep);
	}
	if (it->rules_ready) {
		memcpy(rt->next, it->rule_next, sizeof rt->next);
		/* Unless they are the table's already: no slot filled, the same window. */
		if (it->rules_filled || rt->span_lo != it->rules_lo || rt->span_last != it->rules_last) {
			memcpy(rt->span, it->rule_span, sizeof rt->span);
			rt->span_lo = it->rules_lo;
			rt->span_last = it->rules_last;
		}
	}
	rt->held |= it->rules_filled;
	it->rules_filled = 0;
	/* Stamped with the count at the walk's start: a method added since then empties them. */
	rt->missed[0] = it->missed[0];
	rt->missed[1] = it->missed[1];
	rt->missed_valid = it->missed_valid;
	rt->additions = it->cache_additions;
}

/*
 * rules[], set the first time the fast step runs in a walk: empty, or
 * what the walk's cache holds, with spans for this walk's window.  A
 * slot's code stays in the cache until the walk needs it
 * (fast_rule_code): a walk into arrays steps most frames by their quick
 * rules alone, and copying every slot's code took a tenth of a short
 * walk's instructions.
 */
static __attribute__((noinline)) void fast_rules_from_cache(struct swi_iter *it, uint64_t win_lo,
                                                          uint64_t win_last)
{
	const struct swi_rule_table *rt = it->cache;

	it->rules_in_cache = rt->held;
	/* A slot the table does not hold has address 0, which no frame returns to (fast_step). */
#pragma GCC unroll 16
	for (unsigned i = 0; i < SWI_RULES; i++)
		it->rules[i].ra = rt->rule[i].ra;
	memcpy(it->rule_quick, rt->quick, sizeof rt->quick);
	memcpy(it->rule_trust, rt->trust, sizeof rt->trust);
	if (rt->span_lo == win_lo && rt->span_last == win_last) {
		memcpy(it->rule_span, rt->span, sizeof rt->span);
	} else {
		for (uint32_t m = rt->held; m; m &= m - 1) {
			unsigned i = (unsigned)__builtin_ctz(m);

			it->rule_span[i] = swi_read_span_in(rt->extent[i], win_lo, win_last);
		}
	}
	memcpy(it->rule_next, rt->next, sizeof it->rule_next);
}

static inline __attribute__((always_inline)) void fast_rules(struct swi_iter *it, uint64_t win_lo,
                                                             uint64_t win_last)
{
	if (SWI_UNLIKELY(!it->rules_ready)) {
		if (it->cache) {
			fast_rules_from_cache(it, win_lo, win_last);
		} else {
			it->rules_in_cache = 0;
			for (unsigned i = 0; i < SWI_RULES; i++)
				it->rules[i].ra = 0;
			memset(it->rule_next, 0, sizeof it->rule_next);
		}
		it->rules_lo = win_lo;
		it->rules_last = win_last;
		it->rules_ready = 1;
	}
}

/*
 * The code a Frame's return address goes back to, from the fast step's
 * rules, in a walk that keeps them between walks: the cache then learns
 * the address too, and the next walk finds the first method below the
 * Frame without a lookup.  It fills a slot as the fast step would.  The
 * code is a rules[] slot's (fast_rule_fill moves it out before it refills
 * that slot), and what lookup(it, ra, 0) would find.  NULL where no rule
 * covers the address (funclets among others): the caller looks it up.
 */
static const sw_code_info *frame_return_rule(struct swi_iter *it, uint64_t ra)
{
	uint64_t lo, last;
	unsigned slot;

	if (!it->cache || ra == 0)
		return NULL;
	swi_body_window(it, &lo, &last);
	fast_rules(it, lo, last);
	slot = fast_rule_slot(ra);
	if (it->rules[slot].ra != ra && it->rules[slot ^= 1].ra != ra)
		slot = fast_rule_fill(it, ra, slot, swi_kept_registers(it), lo, last);
	return it->rule_trust[slot] == SWI_TRUST_GENERIC ? NULL : &fast_rule_code(it, slot)->info;
}

/* fast_step from the state machine, one frame at a time. */
static int step_fast(struct swi_iter *it)
{
	struct fast_run run;
	int r;

	/* The generic path takes two more loop steps for this frame: keep the bound exact. */
	if (!fast_step_allowed(it) || it->steps + 2 > it->max_steps)
		return -2;
	fast_run_init(it, &run);
	/* swi_iter_next has counted this frame's first step. */
	run.step_base--;
	fast_rules(it, run.u.lo, run.u.last);
	if (!fast_run_usable(&run))
		return -2;
	r = fast_step(it, &run);
	if (r == 1)
		fast_leave(it, &run, 0);
	return r;
}

/*
 * Hand the frame just reported to the sink: 1 when the walk stops there
 * (the callback said so, or the arrays are full).  Inlined into the run's
 * loops for each kind of sink, so that the test of the kind folds away.
 */
static inline __attribute__((always_inline)) int sink_put(struct swi_iter *it, struct swi_sink *sink,
                                                          int to_arrays, uint64_t ip, uint64_t sp)
{
	if (!to_arrays)
		return sink->cb(&it->cf, sink->data) != SW_CONTINUE;
	sink->ips[sink->n] = ip;
	if (sink->sps)
		sink->sps[sink->n] = sp;
	return ++sink->n >= sink->max;
}

/*
 * The run of fast steps after a frame the generic path reported.  The
 * register numbers, pointer size and register count come as constants for
 * each architecture (fast_run_for_arch), so that the inlined steps index
 * the register display at fixed offsets and keep fewer values live from one
 * frame to the next.  Returns 0 to go on with swi_iter_next, 1 when the
 * sink stopped the walk, or the walk's error when it failed.
 */
static inline __attribute__((always_inline)) int fast_run_loop(struct swi_iter *it, struct swi_sink *sink,
                                                               int to_arrays, unsigned ip_reg,
                                                               unsigned sp_reg, unsigned fp_reg,
                                                               unsigned ptr_size, unsigned nregs,
                                                               int ptrauth)
{
	struct fast_run run;
	uint32_t depth0, stop;
	uint64_t ip, sp, *ips, *sps, *end;
	sw_walk_callback cb;
	void *data;
	int r;

	fast_run_init(it, &run);
	fast_rules(it, run.u.lo, run.u.last);
	run.u.ip_reg = ip_reg;
	run.u.sp_reg = sp_reg;
	run.u.fp_reg = fp_reg;
	run.u.ptr_size = ptr_size;
	run.u.nregs = nregs;
	if (!fast_run_usable(&run))
		return 0;
	depth0 = run.depth;
	if (to_arrays) {
		/*
		 * Into arrays the walk is ADDRESSES_ONLY (sw_backtrace): IP, SP
		 * and FP are all it keeps, and a quick run holds them in
		 * locals (struct fast_run), FP known from the start.  It counts
		 * its frames by where the next IP goes, bounded by both the
		 * arrays and the steps.
		 */
		if ((run.u.keep & ~BIT(fp_reg)) || !(run.u.valid & BIT(fp_reg)))
			return 0;
		run.quick = 1;
		/* No signed return address where the architecture has none (swi_quick_rule_of): no mask to apply. */
		if (!ptrauth)
			run.u.ptrauth_mask = 0;
		run.quick_hi = run.u.stack_hi < run.frames_above ? run.u.stack_hi : run.frames_above;
		it->rule_quick[SWI_SLOT_NONE].trust = run.caller_trust;
		fast_enter(it);
		run.entered = 1;
		ips = sink->ips + sink->n;
		sps = to_arrays == 2 ? sink->sps + sink->n : NULL;
		stop = run.depth_end - depth0;
		end = ips + (sink->max - sink->n < stop ? sink->max - sink->n : stop);
		for (;;) {
			if (ips == end) {
				/* The arrays are full, or the generic path takes the frame that passes the bound. */
				r = sink->max - sink->n == (size_t)(end - (sink->ips + sink->n));
				break;
			}
			/*
			 * The frames whose slot the last walks' order guesses
			 * (rule_next), while the window holds every read: no
			 * call and no check beyond the unwind's, so that IP, SP
			 * and FP stay in registers from frame to frame.  Any
			 * other frame is fast_step's, with its checks.
			 */
			if (quick_in_window(&run, ptr_size)) {
				unsigned quick_stop = quick_stop_bits(it);

				for (;;) {
					unsigned slot = it->rule_next[run.slot];

					ip = run.u.ip;
					sp = run.u.sp;
					if (ip == 0 || it->rules[slot].ra != ip ||
					    quick_step(it, &run, slot, 1, quick_stop) != 1)
						break;
					*ips++ = ip;
					if (to_arrays == 2)
						*sps++ = sp;
					if (ips == end)
						break;
				}
				if (ips == end)
					continue;
			}
			ip = run.u.ip;
			sp = run.u.sp;
			r = fast_step(it, &run);
			if (r != 1)
				break;
			*ips++ = ip;
			if (to_arrays == 2)
				*sps++ = sp;
		}
		run.depth = depth0 + (uint32_t)(ips - (sink->ips + sink->n));
		sink->n = (size_t)(ips - sink->ips);
		/* A quick step stops before it changes anything (quick_step): -2, or a full count. */
		fast_leave(it, &run, 0);
		return r == 1;
	}
	/* In locals: the callback might change *sink for all the compiler knows, and it would load them at every frame. */
	cb = sink->cb;
	data = sink->data;
	for (;;) {
		/*
		 * swi_iter_next's count of its loop, and the two steps more
		 * the generic path would take for this frame: past the bound,
		 * the generic path takes the frame and fails.
		 */
		if (run.depth >= run.depth_end) {
			r = 0;
			break;
		}
		r = fast_step(it, &run);
		if (r != 1) {
			if (r == -2)
				fast_leave(it, &run, 0);
			return it->step == SWI_STEP_FAILED ? it->err.status : 0;
		}
		if (cb(&it->cf, data) != SW_CONTINUE) {
			r = 1;
			break;
		}
	}
	fast_leave(it, &run, 0);
	return r;
}

static inline __attribute__((always_inline)) int fast_run_for_arch(struct swi_iter *it, struct swi_sink *sink,
                                                                   int to_arrays)
{
	const struct swi_arch *a = it->arch;

	if (it->step != SWI_STEP_AFTER_MANAGED || !fast_step_allowed(it))
		return 0;
	switch (it->thread->arch) {
	case SW_ARCH_X64:
		return fast_run_loop(it, sink, to_arrays, SW_X64_RIP, SW_X64_RSP, SW_X64_RBP, 8, SW_X64_NREGS, 0);
	case SW_ARCH_ARM64:
		return fast_run_loop(it, sink, to_arrays, SW_ARM64_PC, SW_ARM64_SP, SW_ARM64_FP, 8, SW_ARM64_NREGS, 1);
	case SW_ARCH_X86:
		return fast_run_loop(it, sink, to_arrays, SW_X86_EIP, SW_X86_ESP, SW_X86_EBP, 4, SW_X86_NREGS, 0);
	default:
		return fast_run_loop(it, sink, to_arrays, a->ip_reg, a->sp_reg, a->fp_reg, a->ptr_size, a->nregs,
		                     a->has_ptrauth);
	}
}

/*
 * Each kind of run in a function of its own: inlined into the walk's loop,
 * the runs of every architecture share one function's registers, and the
 * fast step's values spill to the stack at every frame.
 */
static __attribute__((noinline)) int fast_run_into_arrays(struct swi_iter *it, struct swi_sink *sink)
{
	/* With SPs or not: one value less to keep at every frame. */
	return sink->sps ? fast_run_for_arch(it, sink, 2) : fast_run_for_arch(it, sink, 1);
}

static __attribute__((noinline)) int fast_run_into_callback(struct swi_iter *it, struct swi_sink *sink)
{
	return fast_run_for_arch(it, sink, 0);
}

/*
 * The seed of a walk into arrays, taken as the generic first steps would
 * take it (step_start, the UNWIND step, step_skipped, report), when it
 * lies in code whose rule at that exact IP a quick step can use, kept in
 * the walk's cache by IP: -1 when it is not (the generic path takes it,
 * nothing has changed), 0 when it was reported and the walk goes on from
 * its caller (AFTER_MANAGED), 1 when that filled the arrays.
 */
static int quick_seed(struct swi_iter *it, struct swi_sink *sink)
{
	const struct swi_arch *a = it->arch;
	struct swi_rule_table *rt = it->cache;
	const sw_context *cur = &it->rd.cur;
	uint64_t ip = cur->regs[a->ip_reg], sp = cur->regs[a->sp_reg], fp = cur->regs[a->fp_reg];
	uint64_t fp_bit = BIT(a->fp_reg), hi = it->thread->stack_hi, cfa, ra;
	unsigned i = (unsigned)((ip * 0x9e3779b97f4a7c15ull) >> 59) & (SWI_SEEDS - 1);
	const struct swi_quick_rule *q;
	sw_status st;

	if (!rt || it->step != SWI_STEP_START || !it->have_start || ip == 0 || !(cur->valid & fp_bit) ||
	    (swi_kept_registers(it) & ~fp_bit))
		return -1;
	if (!((rt->seed_valid >> i) & 1) || rt->seed[i].ip != ip) {
		const sw_code_info *code = lookup(it, ip, 1);
		sw_swu_rule r;

		/* step_start and unwind_frame: these take other ways; a native seed may be reported apart. */
		if (!code || (code->flags & (SW_CODE_FUNCLET | SW_CODE_OUTERMOST | SW_CODE_SIGNAL_TRAMPOLINE)) ||
		    ((code->flags & SW_CODE_NATIVE) &&
		     (it->flags & (SW_WALK_FUNCTIONSONLY | SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT))) ||
		    ip - code->start > code->size ||
		    sw_swu_decode(code->unwind, code->unwind_size, (uint32_t)(ip - code->start), &r) != SW_OK ||
		    !swi_quick_rule_of_decoded(&r, swi_code_trust(code), a, &rt->seed[i].q))
			return -1;
		rt->seed[i].ip = ip;
		swi_code_copy_assign(&rt->seed[i].code, (const struct swi_code_copy *)(const void *)code);
		rt->seed_valid |= 1u << i;
	}
	q = &rt->seed[i].q;
	/* step_skipped: a Frame or tracker inside the seed's frame is the generic path's. */
	if (it->frame && it->frame < hi)
		hi = it->frame;
	if (it->tracker && it->tracker < hi)
		hi = it->tracker;
	cfa = ((q->bits & SWI_QUICK_CFA_FP) ? fp : sp) + (uint64_t)(int64_t)q->cfa_offset;
	if (!swi_cfa_moves_up(cfa, sp, hi, 0) ||
	    (st = swi_read_ptr(it->thread->memory, a->ptr_size, cfa + (uint64_t)(int64_t)q->ra_offset, &ra)) != SW_OK ||
	    ((q->bits & SWI_QUICK_FP_SAVED) &&
	     swi_read_ptr(it->thread->memory, a->ptr_size, cfa + (uint64_t)(int64_t)q->fp_offset, &fp) != SW_OK))
		return -1;
	if (q->bits & SWI_QUICK_RA_SIGNED)
		ra &= ~it->thread->ptrauth_mask;
	/* The seed reported (FRAMELESS or NATIVE_FRAME), its caller unwound into rd.caller. */
	swi_code_copy_assign(&it->code_copy, &rt->seed[i].code);
	it->code = &it->code_copy.info;
	it->is_first = 1;
	it->active = 1;
	it->trust = SW_TRUST_CONTEXT;
	it->caller_trust = q->trust;
	it->caller_active = 0;
	it->report_funclet = 0;
	it->rd.caller.arch = cur->arch;
	it->rd.caller.reserved = 0;
	it->rd.caller.valid = BIT(a->ip_reg) | BIT(a->sp_reg) | fp_bit;
	it->rd.caller.regs[a->ip_reg] = ra;
	it->rd.caller.regs[a->sp_reg] = cfa;
	it->rd.caller.regs[a->fp_reg] = fp;
	it->rd.caller_loc[a->ip_reg] = it->rd.caller_loc[a->sp_reg] = it->rd.caller_loc[a->fp_reg] = 0;
	it->rd.caller_valid = 1;
	it->cf.state = (q->bits & SWI_QUICK_NATIVE) ? SW_STATE_NATIVE_FRAME : SW_STATE_FRAMELESS;
	it->depth = 1;
	/* swi_iter_next's count for the START, UNWIND and SKIPPED steps. */
	it->steps = 3;
	it->step = SWI_STEP_AFTER_MANAGED;
	return sink_put(it, sink, 1, ip, sp);
}

/*
 * The whole walk into one kind of sink: each frame swi_iter_next reports,
 * then the fast steps that follow it.  Into arrays only frames with code
 * count (what sw_backtrace returns), and nobody reads the crawl frame.
 */
static inline __attribute__((always_inline)) int run_into(struct swi_iter *it, struct swi_sink *sink,
                                                          int to_arrays)
{
	int r;

	if (to_arrays && sink->n >= sink->max)
		return 1;
	if (to_arrays && (r = quick_seed(it, sink)) >= 0) {
		if (r > 0 || (r = fast_run_into_arrays(it, sink)) > 0)
			return 1;
		if (r < 0)
			return r;
	}
	while ((r = swi_iter_next(it)) > 0) {
		if (to_arrays && it->cf.state != SW_STATE_FRAMELESS && it->cf.state != SW_STATE_NATIVE_FRAME)
			continue;
		if (sink_put(it, sink, to_arrays, it->rd.cur.regs[it->arch->ip_reg],
		             it->rd.cur.regs[it->arch->sp_reg]) ||
		    (r = to_arrays ? fast_run_into_arrays(it, sink) : fast_run_into_callback(it, sink)) > 0)
			return 1;
		if (r < 0)
			return r;
	}
	return r;
}

int swi_iter_run(struct swi_iter *it, struct swi_sink *sink)
{
	int r;

	if (sink->ips) {
		/* Nobody reads the crawl frame but its state: a report fills in only that. */
		it->quiet = 1;
		r = run_into(it, sink, 1);
	} else {
		r = run_into(it, sink, 0);
	}
	keep_rules(it);
	return r;
}

/* Is this address below the current SP, on a part of the stack already left? */
static int below_sp(const struct swi_iter *it, uint64_t addr)
{
	unsigned sp = it->arch->sp_reg;

	return (it->rd.cur.valid & (1ULL << sp)) && addr < it->rd.cur.regs[sp];
}

static int step_frames(struct swi_iter *it)
{
	sw_status st;
	void *m;

	/* An exception tracker nearer the top of the stack comes first. */
	if (it->tracker != 0 && (it->frame == 0 || it->tracker < it->frame)) {
		it->step = SWI_STEP_AFTER_TRACKER;
		if (it->flags & SW_WALK_NOTIFY_ON_NO_FRAME_TRANSITIONS)
			return report(it, SW_STATE_NO_FRAME_TRANSITION, NULL);
		return -1;
	}
	/* Out of Frames: the end of the thread, unless native code stopped the walk short of it. */
	if (it->frame == 0)
		return it->stopped_by != SW_OK ? fail(it, it->stopped_by) : done(it);
	if ((st = load_frame(it)) != SW_OK)
		return fail(it, st);
	/*
	 * Out of managed code, a Frame below SP lies where the thread no longer
	 * is: it should have been popped, and the transition Frame that brings
	 * the walk back is missing.
	 */
	if (below_sp(it, it->frame)) {
		if (!(it->flags & SW_WALK_DISABLE_MISSING_FRAME_DETECTION))
			return fail(it, SW_E_BADFRAME);
		if ((st = advance_frame(it)) != SW_OK)
			return fail(it, st);
		return -1;
	}
	it->step = SWI_STEP_AFTER_FRAME;
	m = it->quiet && !functions_only(it) ? NULL : frame_method(it);
	if (m || !functions_only(it))
		return report(it, SW_STATE_FRAME, m);
	return -1;
}

/* Resume where the Frame says, if that is managed code; else the next Frame. */
static int step_after_frame(struct swi_iter *it)
{
	uint32_t attrs = it->view.attributes;
	uint64_t ra, old_sp = 0;
	int old_sp_known;
	sw_status st;

	it->is_first = (attrs & SW_FRAME_ATTR_RESUMABLE) != 0;
	it->is_interrupted = (attrs & SW_FRAME_ATTR_EXCEPTION) != 0;
	it->has_faulted = it->is_interrupted && (attrs & SW_FRAME_ATTR_FAULTED) != 0;

	if ((st = it->ops->return_address(&it->view, &ra)) != SW_OK)
		return fail(it, st);
	if (ra != 0) {
		int exact = it->is_first || it->is_interrupted;
		const sw_code_info *code = exact ? NULL : frame_return_rule(it, ra);

		if (!code)
			code = lookup(it, ra, exact);

		if (code) {
			/*
			 * A RESUMABLE Frame makes the code it returns to the
			 * active frame, which CoreCLR unwinds once more to find
			 * its caller, and that may take a lock: a walk of a
			 * thread stopped anywhere fails here instead
			 * (vm/stackwalk.cpp, StackFrameIterator::NextRaw, the
			 * FRAME_FUNCTION case: SWA_FAILED under
			 * THREAD_IS_SUSPENDED).  The Frame itself has been
			 * reported.
			 */
			if (it->is_first && (it->flags & SW_WALK_THREAD_IS_SUSPENDED))
				return fail(it, SW_E_UNSAFE);
			old_sp_known = (it->rd.cur.valid & BIT(it->arch->sp_reg)) != 0;
			old_sp = it->rd.cur.regs[it->arch->sp_reg];
			if ((st = it->ops->update_regdisplay(&it->view, &it->rd)) != SW_OK)
				return fail(it, st);
			if ((st = check_context(it, &it->rd.cur)) != SW_OK)
				return fail(it, st);
			if (old_sp_known && it->rd.cur.regs[it->arch->sp_reg] < old_sp)
				return fail(it, SW_E_BADSP);
			if (it->rd.cur.regs[it->arch->ip_reg] != ra)
				return fail(it, SW_E_BADFRAME);
			swi_set_code(it, code);
			it->stopped_by = SW_OK;
			it->active = exact;
			it->trust = SW_TRUST_FRAME;
			it->step = SWI_STEP_UNWIND;
			/*
			 * The walk is now in the interpreted methods this Frame
			 * runs (vm/stackwalk.cpp, NextRaw: "Switching to
			 * interpreted frames"); unwind_frame takes them.
			 */
			if (it->view.type == SW_FRAME_INTERPRETER)
				it->interp_frame = it->frame;
			if (it->ops->flags & SW_FRAME_OPS_IN_CALLER) {
				/* It lies inside the method: pass it when that is unwound. */
				it->kept_frame = it->frame;
				return -1;
			}
			if ((st = advance_frame(it)) != SW_OK)
				return fail(it, st);
			return -1;
		}
	}
	if ((st = advance_frame(it)) != SW_OK)
		return fail(it, st);
	it->step = SWI_STEP_FRAMES;
	return -1;
}

/*
 * Resume the frame the tracker holds: a faulted frame (interrupted,
 * faulted, exact), or, with SW_TRACKER_AT_CALL, the frame an exception
 * dispatch has unwound to, stopped at a call like any caller.  The latter
 * is how a walk during a dispatch passes over the frames the dispatch has
 * already unwound: CoreCLR's stack walker skips to the ExInfo's own frame
 * iterator (ExInfo::m_frameIter, which the second pass advances in
 * ExceptionHandling.cs InvokeSecondPass) instead of walking them again.
 */
static int step_after_tracker(struct swi_iter *it)
{
	uint64_t record, old_sp = it->rd.cur.regs[it->arch->sp_reg];
	int old_sp_known = (it->rd.cur.valid & (1ULL << it->arch->sp_reg)) != 0;
	const sw_code_info *code;
	int at_call;
	sw_status st;

	if ((st = tracker_field(it, 1, &record)) != SW_OK)
		return fail(it, st);
	at_call = (record & SW_TRACKER_AT_CALL) != 0;
	record &= ~(uint64_t)SW_TRACKER_FLAG_MASK;
	if ((st = swi_context_record_restore(it->thread, record, &it->rd)) != SW_OK ||
	    (st = check_context(it, &it->rd.cur)) != SW_OK)
		return fail(it, st);
	if (old_sp_known && it->rd.cur.regs[it->arch->sp_reg] < old_sp)
		return fail(it, SW_E_BADSP);
	if ((st = advance_tracker(it)) != SW_OK)
		return fail(it, st);
	it->is_first = 0;
	it->is_interrupted = it->has_faulted = !at_call;
	code = lookup(it, it->rd.cur.regs[it->arch->ip_reg], !at_call);
	if (!code) {
		it->step = SWI_STEP_FRAMES;
		return -1;
	}
	swi_set_code(it, code);
	it->stopped_by = SW_OK;
	it->active = !at_call;
	it->trust = SW_TRUST_CONTEXT;
	it->step = SWI_STEP_UNWIND;
	return -1;
}

int swi_iter_next(struct swi_iter *it)
{
	sw_status st;
	int r;

	for (;;) {
		if (++it->steps > it->max_steps)
			return fail(it, SW_E_DEPTH);
		switch (it->step) {
		case SWI_STEP_START:
			r = step_start(it);
			break;
		case SWI_STEP_UNWIND:
			if ((st = unwind_frame(it)) != SW_OK) {
				if (!is_native(it->code))
					return fail(it, st);
				native_dead_end(it, st);
			}
			it->step = SWI_STEP_SKIPPED;
			r = -1;
			break;
		case SWI_STEP_SKIPPED:
			r = step_skipped(it);
			break;
		case SWI_STEP_AFTER_MANAGED:
			r = step_fast(it);
			if (r == -2)
				r = step_after_managed(it);
			break;
		case SWI_STEP_FRAMES:
			r = step_frames(it);
			break;
		case SWI_STEP_AFTER_FRAME:
			r = step_after_frame(it);
			break;
		case SWI_STEP_AFTER_TRACKER:
			r = step_after_tracker(it);
			break;
		case SWI_STEP_DONE:
			return 0;
		case SWI_STEP_FAILED:
			return it->err.status;
		default:
			return fail(it, SW_E_STATE);
		}
		if (r >= 0)
			return r;
		if (it->step == SWI_STEP_FAILED)
			return it->err.status;
	}
}

SW_API int sw_iter_next(sw_iter *pub)
{
	struct swi_iter *it;

	if (!pub)
		return SW_E_INVAL;
	it = iter_of(pub);
	if (it->magic != SWI_ITER_MAGIC)
		return SW_E_STATE;
	return swi_iter_next(it);
}

SW_API const sw_crawl_frame *sw_iter_frame(const sw_iter *pub)
{
	const struct swi_iter *it = citer_of(pub);

	if (!pub || it->magic != SWI_ITER_MAGIC || it->depth == 0 ||
	    it->step == SWI_STEP_DONE || it->step == SWI_STEP_FAILED)
		return NULL;
	return &it->cf;
}

SW_API void sw_iter_error(const sw_iter *pub, sw_walk_error *err)
{
	const struct swi_iter *it = citer_of(pub);

	if (!err)
		return;
	if (!pub || it->magic != SWI_ITER_MAGIC) {
		memset(err, 0, sizeof *err);
		err->status = SW_E_STATE;
		return;
	}
	*err = it->err;
}

SW_API void sw_iter_end(sw_iter *pub)
{
	struct swi_iter *it;

	if (!pub)
		return;
	it = iter_of(pub);
	if (it->magic != SWI_ITER_MAGIC)
		return;
	leave_read_section(it);
	if (it->step != SWI_STEP_FAILED)
		it->step = SWI_STEP_DONE;
}
