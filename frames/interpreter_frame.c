/*
 * interpreter_frame.c - InterpreterFrame: managed methods an interpreter
 * runs, each with a context frame linked to its caller's.
 *
 * CoreCLR's interpreter (FEATURE_INTERPRETER, vm/frames.h and
 * vm/frames.cpp, InterpreterFrame; vm/interpexec.h,
 * InterpMethodContextFrame) keeps in the Frame a hint at the innermost
 * context frame.  InterpreterFrame::GetTopInterpMethodContextFrame finds
 * the innermost active one from it: from an active hint (ip set) it
 * follows next while the next one is active too; from an inactive one it
 * follows parent until one is active.  The walker reports the Frame (it
 * names no function: the Frame is made with no MethodDesc; its transition
 * is managed to unmanaged) and, through
 * InterpreterFrame::SetContextToInterpMethodContextFrame, goes on into
 * that context frame as into managed code: IP = its ip (the bytecode's
 * address), SP = the context frame's address, the frame pointer = its
 * stack (its locals).  Each interpreted method is then a frame of the
 * interpreter's code manager, unwound to its parent
 * (VirtualUnwindInterpreterCallFrame, vm/eetwain.cpp); when no active
 * parent is left the walk returns to the interpreter's caller through the
 * Frame's transition block.  The walker's single step does that unwind
 * (lib/walk/iter.c: unwind_frame) with swi_interpreter_unwind below, the
 * Frame's ops give where the walk first resumes and with what.
 *
 * The chains are in target memory: read through the walk's reader, and
 * bounded (a cycle gives SW_E_FRAMECYCLE, an endless chain SW_E_LIMIT).
 */
#include "frames_internal.h"

/* Deeper interpreted call chains than this under one Frame are garbage. */
#define MAX_INTERP_DEPTH 65536

struct context_frame {
	uint64_t addr, parent, ip, stack, next;
};

static sw_status read_context_frame(const sw_frame_view *f, uint64_t addr, struct context_frame *c)
{
	unsigned p = swi_pointer_size(f->thread->arch);
	uint64_t words[SW_IMCF_WORDS];
	sw_status st;

	if (addr > UINT64_MAX - (uint64_t)SW_IMCF_WORDS * p)
		return SW_E_BADFRAME;
	for (unsigned i = 0; i < SW_IMCF_WORDS; i++)
		if ((st = swi_read_ptr(f->thread->memory, p, addr + (uint64_t)i * p, &words[i])) != SW_OK)
			return st;
	c->addr = addr;
	c->parent = words[SW_IMCF_PARENT];
	c->ip = words[SW_IMCF_IP];
	c->stack = words[SW_IMCF_STACK];
	c->next = words[SW_IMCF_NEXT];
	return SW_OK;
}

/* The innermost context frame, as GetTopInterpMethodContextFrame finds it; c->addr 0 if none. */
static sw_status top_context_frame(const sw_frame_view *f, struct context_frame *c)
{
	struct swi_list_guard g;
	uint64_t hint;
	sw_status st;

	c->addr = c->ip = 0;
	if ((st = sw_frame_read_field(f, SW_INTF_TOP, &hint)) != SW_OK)
		return st;
	if (hint == 0)
		return SW_OK;
	if ((st = read_context_frame(f, hint, c)) != SW_OK)
		return st;
	swi_list_guard_init(&g);
	if ((st = swi_list_visit(&g, c->addr, MAX_INTERP_DEPTH)) != SW_OK)
		return st;
	if (c->ip != 0) {
		/* Active: seek inwards while the method it called is active too. */
		while (c->next != 0) {
			struct context_frame inner;

			if ((st = read_context_frame(f, c->next, &inner)) != SW_OK)
				return st;
			if (inner.ip == 0)
				break;
			if ((st = swi_list_visit(&g, inner.addr, MAX_INTERP_DEPTH)) != SW_OK)
				return st;
			*c = inner;
		}
	} else {
		/* Inactive: seek outwards to the first active caller. */
		while (c->parent != 0 && c->ip == 0) {
			if ((st = read_context_frame(f, c->parent, c)) != SW_OK ||
			    (st = swi_list_visit(&g, c->addr, MAX_INTERP_DEPTH)) != SW_OK)
				return st;
		}
	}
	return SW_OK;
}

static sw_status intf_return_address(const sw_frame_view *f, uint64_t *ra)
{
	struct context_frame c;
	sw_status st = top_context_frame(f, &c);

	*ra = st == SW_OK ? c.ip : 0;
	return st;
}

/*
 * An interpreted method's registers from its context frame `c`: IP its ip,
 * SP the context frame's address, FP its stack (the interpreter's
 * SetContextToInterpMethodContextFrame), with where IP and FP are kept.
 */
static void set_context_frame_regs(const struct swi_arch *a, unsigned p, const struct context_frame *c,
                                   sw_context *regs, uint64_t *loc)
{
	regs->valid |= (1ULL << a->ip_reg) | (1ULL << a->sp_reg) | (1ULL << a->fp_reg);
	regs->regs[a->ip_reg] = c->ip;
	loc[a->ip_reg] = c->addr + (uint64_t)SW_IMCF_IP * p;
	regs->regs[a->sp_reg] = c->addr;
	loc[a->sp_reg] = 0;
	regs->regs[a->fp_reg] = c->stack;
	loc[a->fp_reg] = c->addr + (uint64_t)SW_IMCF_STACK * p;
}

/* SetContextToInterpMethodContextFrame: IP, SP and FP of the innermost interpreted method. */
static sw_status intf_update_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
{
	const struct swi_arch *a = swi_arch_get(f->thread->arch);
	unsigned p = swi_pointer_size(f->thread->arch);
	struct context_frame c;
	sw_status st;

	if (!a)
		return SW_E_UNSUPPORTED;
	if ((st = top_context_frame(f, &c)) != SW_OK)
		return st;
	if (c.addr == 0 || c.ip == 0)
		return SW_E_BADFRAME;       /* asked only when there is one */
	rd->cur.valid = 0;
	set_context_frame_regs(a, p, &c, &rd->cur, rd->cur_loc);
	return SW_OK;
}

static sw_transition intf_transition(const sw_frame_view *f)
{
	SWI_UNUSED(f);
	return SW_TRANSITION_M2U;
}

const sw_frame_ops swi_interpreter_frame_ops = {
	.type = SW_FRAME_INTERPRETER,
	.flags = 0,
	.name = "InterpreterFrame",
	.return_address = intf_return_address,
	.update_regdisplay = intf_update_regdisplay,
	.method = NULL,
	.transition = intf_transition,
	.gc_roots = NULL,
};

/*
 * One interpreted method's unwind: CoreCLR's VirtualUnwindInterpreterCallFrame
 * (vm/eetwain.cpp, run by InterpreterCodeManager::UnwindStackFrame and
 * EnsureCallerContextIsValid).  The current context frame is at SP.  With
 * an active parent (the cDAC's FrameHelpers.VirtualUnwindInterpreterCallFrame
 * also stops at an inactive one), the caller is that parent: IP its ip, SP
 * its address, FP its stack, every other register as it was (the
 * interpreter's methods run in no machine register: CoreCLR copies the
 * context and sets those three).  With none the interpreter's methods under
 * this Frame are exhausted: CoreCLR sets IP to DummyCallerIP and SP to the
 * InterpreterFrame, and StackFrameIterator::NextRaw (vm/stackwalk.cpp),
 * seeing that IP, restores the Frame's transition block
 * (InterpreterFrame::UpdateRegDisplay, a FramedMethodFrame's): here the
 * same in one step, *left set.
 *
 * Child context frames are alloca'd by InterpExecMethod (vm/interpexec.cpp)
 * below their parents, so each parent lies above its child: a parent at or
 * below it is a cycle or garbage (SW_E_FRAMECYCLE), which keeps every walk
 * finite.  The transition block's caller must lie above the context frame
 * too, and on the stack.
 */
sw_status swi_interpreter_unwind(const sw_thread *t, uint64_t frame, sw_regdisplay *rd, int *left)
{
	const struct swi_arch *a = swi_arch_get(t->arch);
	unsigned p = swi_pointer_size(t->arch);
	const sw_frame_ops *ops;
	sw_frame_view view;
	struct context_frame c, parent = { 0, 0, 0, 0, 0 };
	uint64_t sp, block;
	sw_regdisplay out;
	sw_status st;

	*left = 0;
	if (!a)
		return SW_E_UNSUPPORTED;
	if ((st = swi_frame_read(t, frame, &view, &ops)) != SW_OK)
		return st;
	if (view.type != SW_FRAME_INTERPRETER)
		return SW_E_BADFRAME;
	sp = rd->cur.regs[a->sp_reg];
	if ((st = read_context_frame(&view, sp, &c)) != SW_OK)
		return st;
	if (c.parent != 0) {
		if (c.parent <= sp)
			return SW_E_FRAMECYCLE;
		if (c.parent > t->stack_hi)
			return SW_E_BADSP;
		if ((st = read_context_frame(&view, c.parent, &parent)) != SW_OK)
			return st;
	}
	if (parent.ip != 0) {
		rd->caller = rd->cur;
		memcpy(rd->caller_loc, rd->cur_loc, sizeof rd->caller_loc);
		set_context_frame_regs(a, p, &parent, &rd->caller, rd->caller_loc);
		return SW_OK;
	}
	/* The last one: out through the transition block of the call into the interpreter. */
	if ((st = sw_frame_read_field(&view, SW_INTF_TRANSITION_BLOCK, &block)) != SW_OK)
		return st;
	if (block == 0)
		return SW_E_BADFRAME;
	sw_context_init(&out.cur, (sw_arch)t->arch);
	if ((st = swi_transition_block_restore(&view, block, &out)) != SW_OK)
		return st;
	if (!(out.cur.valid & (1ULL << a->ip_reg)))
		return SW_E_BADFRAME;
	if (out.cur.regs[a->sp_reg] <= sp || out.cur.regs[a->sp_reg] > t->stack_hi)
		return SW_E_BADSP;
	rd->caller = out.cur;
	memcpy(rd->caller_loc, out.cur_loc, sizeof rd->caller_loc);
	*left = 1;
	return SW_OK;
}
