/*
 * synth_x86.c - the shapes of synthetic 32-bit x86 methods.
 *
 * Prolog: pushes of 0 to 4 distinct callee-saved registers (ebx, ebp, esi,
 * edi), an optional EBP frame ("push ebp; mov ebp, esp", or EBP set after
 * later pushes so that it still points at the saved EBP), then an
 * allocation, sometimes more than a page.  Without EBP the method is an
 * "ESP frame".  Bodies push outgoing arguments (one push per argument, or
 * one "sub esp, n") around calls, sometimes nested; a cdecl call is
 * followed by "add esp, n", a stdcall callee pops its arguments itself
 * ("ret n").  Epilogs mirror the prolog: "lea esp, [ebp - n]" or
 * "add esp, n", then the pops.  Instructions are 1 to 7 bytes long.
 */
#include "synth_gen.h"

static const uint8_t x86_callee_saved[4] = { SW_X86_EBX, SW_X86_EBP, SW_X86_ESI, SW_X86_EDI };

/* What the epilogs mirror. */
struct x86_shape {
	uint8_t regs[4];
	unsigned npush;
	int64_t sp_pushed, fp_rel;
};

/* Room for the ops of one call group: 4 pushes, a call, a pop, and one nested group. */
#define X86_GROUP_OPS 12

/*
 * One call with its arguments: pushes (perhaps with another whole call
 * group between them, as when an argument is itself a call's result),
 * the call, and the pop of a cdecl caller.
 */
static void call_group(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc,
                       int nest)
{
	unsigned nargs = rnd(g, 4) ? rnd(g, 5) : 0;
	uint32_t size = 4 * nargs;

	if (nargs && rnd(g, 4) == 0) {
		*pc += 3;                                       /* sub esp, n */
		swi_synth_body_op(g, m, *pc, SWI_OP_PUSH_ARGS, size);
		*pc += 4 * rnd(g, nargs + 1);                   /* mov [esp + k], ... */
	} else {
		for (unsigned i = 0; i < nargs; i++) {
			if (nest && rnd(g, 6) == 0) {
				call_group(g, m, pc, 0);
				nest = 0;       /* once: X86_GROUP_OPS bounds a group */
			}
			*pc += 1 + rnd(g, 5);                   /* push reg / imm / [mem] */
			swi_synth_body_op(g, m, *pc, SWI_OP_PUSH_ARGS, 4);
		}
	}
	*pc += rnd(g, 3) ? 5 : 2 + rnd(g, 5);                   /* call rel32, call [reg + n] */
	if (nargs && rnd(g, 2)) {
		swi_synth_body_op(g, m, *pc, SWI_OP_CALL_POPS, size);
		return;
	}
	swi_synth_body_op(g, m, *pc, SWI_OP_CALL, 0);
	if (nargs) {
		if (rnd(g, 2))
			*pc += 1 + rnd(g, 6);                   /* mov eax to somewhere first */
		*pc += 3;                                       /* add esp, n */
		swi_synth_body_op(g, m, *pc, SWI_OP_POP_ARGS, size);
	}
}

static void x86_body(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc)
{
	unsigned groups = rnd(g, 4) ? rnd(g, 4) : rnd(g, 8);

	for (unsigned i = 0; i < groups; i++) {
		if (m->nbody_ops + X86_GROUP_OPS > SWI_SYNTH_MAX_BODY_OPS)
			break;
		*pc += 1 + rnd(g, 12);                          /* code without calls */
		call_group(g, m, pc, 1);
	}
}

static void x86_epilog(struct swi_synth_gen *g, struct swi_synth_method *m,
                       struct swi_synth_epilog *e, uint32_t *pc, void *ctx)
{
	const struct x86_shape *sh = ctx;

	if (m->has_frame && rnd(g, 2))
		swi_synth_epilog_op(g, e, pc, SWI_OP_SP_FROM_FRAME, SW_X86_EBP, 0,
		                    sh->sp_pushed - sh->fp_rel);
	else if (m->alloc)
		swi_synth_epilog_op(g, e, pc, SWI_OP_FREE, 0, 0, m->alloc);
	for (unsigned i = sh->npush; i-- > 0;)
		swi_synth_epilog_op(g, e, pc, SWI_OP_POP, sh->regs[i], 0, 0);
}

static uint32_t choose_alloc(struct swi_synth_gen *g, uint32_t need, int empty)
{
	unsigned k = rnd(g, 100);
	uint32_t alloc;

	if (empty || (k < 15 && need == 0))
		return 0;
	if (k < 25)
		alloc = 4096 + 4 * (1 + rnd(g, 3072));          /* large: > one page */
	else
		alloc = 4 * (1 + rnd(g, rnd(g, 4) ? 32 : 256));
	if (alloc < need)
		alloc = need + 4 * rnd(g, 16);
	return alloc;
}

static void x86_invent(struct swi_synth_gen *g, struct swi_synth_method *m, int want_region,
                       int leaf_ok)
{
	uint32_t icf = swi_synth_frame_size(g->a, SW_ICF_FIELDS);
	struct x86_shape sh;
	unsigned fp_pos = 0, idx = 0;
	int empty = !want_region && rnd(g, 16) == 0;
	int64_t sp_rel = 0, fp_off = 0;
	uint32_t pc = 0;

	(void)leaf_ok;                  /* the call pushes the return address: every method may call */
	memset(&sh, 0, sizeof sh);
	m->can_call = 1;
	memcpy(sh.regs, x86_callee_saved, sizeof sh.regs);
	swi_synth_shuffle(g, sh.regs, 4);
	sh.npush = empty ? 0 : rnd(g, 5);
	if ((m->saves_all = swi_synth_saves_all(g, want_region)))
		sh.npush = 4;
	m->has_frame = !empty && rnd(g, 2);
	if (m->has_frame) {
		/* Usually "push ebp; mov ebp, esp" first, as the CLR's x86 JIT does. */
		while (sh.regs[idx] != SW_X86_EBP)
			idx++;
		if (sh.npush == 0)
			sh.npush = 1;
		if (idx >= sh.npush || rnd(g, 4)) {
			unsigned j = rnd(g, 4) ? 0 : rnd(g, sh.npush);

			sh.regs[idx] = sh.regs[j];
			sh.regs[j] = SW_X86_EBP;
			idx = j;
		}
		/* After push number idx+1 (mov ebp, esp) or a later one (lea ebp, [esp + n]). */
		fp_pos = idx + 1 + (rnd(g, 3) ? 0 : rnd(g, sh.npush - idx));
	}
	m->alloc = choose_alloc(g, want_region ? 2 * icf : 0, empty);

	for (unsigned i = 0; i < sh.npush; i++) {
		swi_synth_prolog_op(g, m, &pc, SWI_OP_PUSH, sh.regs[i], 0, 0);
		sp_rel -= 4;
		if (m->has_frame && fp_pos == i + 1) {
			fp_off = rnd(g, 4) ? 4 * (int64_t)(i - idx) : 0;
			swi_synth_prolog_op(g, m, &pc, SWI_OP_SET_FRAME, SW_X86_EBP, 0, fp_off);
			sh.fp_rel = sp_rel + fp_off;
		}
	}
	sh.sp_pushed = sp_rel;
	if (m->alloc)
		swi_synth_prolog_op(g, m, &pc, SWI_OP_ALLOC, 0, 0, m->alloc);
	swi_synth_end_prolog(g, m, &pc);
	swi_synth_place_regions(g, m, want_region ? 1 + rnd(g, 2) : rnd(g, 3));
	swi_synth_bodies_and_epilogs(g, m, &pc, x86_body, x86_epilog, &sh);
}

/* The stub pushes ebp, ebx, esi, edi after the call: edi is lowest. */
static const uint8_t x86_block[4] = { SW_X86_EDI, SW_X86_ESI, SW_X86_EBX, SW_X86_EBP };

const struct swi_synth_arch swi_synth_x86 = {
	.arch = SW_ARCH_X86,
	.ptr = 4,
	.nregs = SW_X86_NREGS,
	.ip = SW_X86_EIP,
	.sp = SW_X86_ESP,
	.fp = SW_X86_EBP,
	.lr = -1,
	.value_mask = 0xffffffffULL,
	.callee_saved = SWI_BIT(SW_X86_EBX) | SWI_BIT(SW_X86_EBP) | SWI_BIT(SW_X86_ESI) |
	                SWI_BIT(SW_X86_EDI),
	.volatile_regs = SWI_BIT(SW_X86_EAX) | SWI_BIT(SW_X86_ECX) | SWI_BIT(SW_X86_EDX),
	.block_regs = x86_block,
	.nblock_regs = 4,
	.insn_align = 1,
	.window_hi = 0xbfff0000ULL,
	.code_base = 0x10000000ULL,
	.native_base = 0xe0000000ULL,
	.native_mask = 0x0fffffffULL,
	.handle_base = 0x6b000000ULL,
	.invent = x86_invent,
};
