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
 * Frame's transition block.  That unwind belongs to the walker; this file
 * gives the Frame's part: where the walk resumes and with what.
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
	rd->cur.valid = (1ULL << a->ip_reg) | (1ULL << a->sp_reg) | (1ULL << a->fp_reg);
	rd->cur.regs[a->ip_reg] = c.ip;
	rd->cur_loc[a->ip_reg] = c.addr + (uint64_t)SW_IMCF_IP * p;
	rd->cur.regs[a->sp_reg] = c.addr;
	rd->cur_loc[a->sp_reg] = 0;
	rd->cur.regs[a->fp_reg] = c.stack;
	rd->cur_loc[a->fp_reg] = c.addr + (uint64_t)SW_IMCF_STACK * p;
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
