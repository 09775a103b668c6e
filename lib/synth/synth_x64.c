/*
 * synth_x64.c - the shapes of synthetic x86-64 methods.
 *
 * Prolog: 0 to 6 pushes of distinct callee-saved registers, an allocation
 * (sometimes more than a page), saves into the allocated area and an
 * optional RBP frame set after the pushes or after the allocation, at a
 * random offset.  Epilogs mirror it, resetting RSP from RBP or freeing the
 * locals with add.  Instructions are 1 to 7 bytes long.
 */
#include "synth_gen.h"

#define X64_ICF_SIZE (16 + 8 * SW_ICF_FIELDS)

static const uint8_t x64_callee_saved[6] = {
	SW_X64_RBX, SW_X64_RBP, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15
};

/*
 * Lay out the allocated area: save slots and up to two holes for
 * InlinedCallFrames, in random order with random gaps.
 */
static void layout_area(struct swi_synth_gen *g, struct swi_synth_method *m, unsigned nsave,
                        uint32_t *save_off, unsigned nregions)
{
	uint8_t order[8];
	unsigned n = 0, ri = 0;
	uint32_t total = 8 * nsave + X64_ICF_SIZE * nregions;
	uint32_t slack = m->alloc - total, pos = 0;

	for (unsigned i = 0; i < nsave; i++)
		order[n++] = (uint8_t)i;
	for (unsigned i = 0; i < nregions; i++)
		order[n++] = (uint8_t)(0x80 | i);
	swi_synth_shuffle(g, order, n);
	for (unsigned i = 0; i < n; i++) {
		uint32_t gap = 8 * rnd(g, slack / 8 + 1);

		slack -= gap;
		pos += gap;
		if (order[i] & 0x80) {
			m->regions[ri++] = pos;
			pos += X64_ICF_SIZE;
		} else {
			save_off[order[i]] = pos;
			pos += 8;
		}
	}
	m->nregions = ri;
	if (ri == 2 && m->regions[0] > m->regions[1]) {
		uint32_t t = m->regions[0];

		m->regions[0] = m->regions[1];
		m->regions[1] = t;
	}
}

static uint32_t choose_alloc(struct swi_synth_gen *g, unsigned npush, uint32_t need, int empty)
{
	unsigned k = rnd(g, 100);
	uint32_t alloc;

	if (empty || (k < 12 && need == 0))
		return 0;
	if (k < 22)
		alloc = 4096 + 8 * (1 + rnd(g, 1536));          /* large: > one page */
	else
		alloc = 8 * (1 + rnd(g, rnd(g, 4) ? 24 : 128));
	if (alloc < need)
		alloc = need + 8 * rnd(g, 8);
	/* Entry SP is 8 mod 16: keep the body's SP 16-aligned most of the time. */
	if ((8 * npush + alloc + 8) % 16 != 0 && rnd(g, 10))
		alloc += 8;
	return alloc;
}

/* What the epilogs mirror. */
struct x64_shape {
	uint8_t regs[6], saves[6];
	unsigned npush, nsave;
	int64_t sp_pushed, fp_rel;
};

static void x64_epilog(struct swi_synth_gen *g, struct swi_synth_method *m,
                       struct swi_synth_epilog *e, uint32_t *pc, void *ctx)
{
	const struct x64_shape *sh = ctx;
	uint8_t order[6];

	memcpy(order, sh->saves, sh->nsave);
	swi_synth_shuffle(g, order, sh->nsave);
	for (unsigned i = 0; i < sh->nsave; i++)
		swi_synth_epilog_op(g, e, pc, SWI_OP_RESTORE, order[i], 0, 0);
	/*
	 * A frame method resets SP from RBP ("lea rsp") or, half the time,
	 * frees its locals with "add rsp, n" (or nothing) before popping
	 * RBP: both are real JIT epilogs.
	 */
	if (m->has_frame && rnd(g, 2))
		swi_synth_epilog_op(g, e, pc, SWI_OP_SP_FROM_FRAME, SW_X64_RBP, 0,
		                    sh->sp_pushed - sh->fp_rel);
	else if (m->alloc)
		swi_synth_epilog_op(g, e, pc, SWI_OP_FREE, 0, 0, m->alloc);
	for (unsigned i = sh->npush; i-- > 0;)
		swi_synth_epilog_op(g, e, pc, SWI_OP_POP, sh->regs[i], 0, 0);
}

static void x64_invent(struct swi_synth_gen *g, struct swi_synth_method *m, int want_region,
                       int leaf_ok)
{
	struct x64_shape sh;
	uint32_t save_off[6];
	unsigned fp_pos = 0, fp_idx = 0, nregions, npush;
	int empty = !want_region && rnd(g, 16) == 0;
	int64_t sp_rel = 0;
	uint32_t pc = 0;

	(void)leaf_ok;                  /* the call pushes the return address: every method may call */
	memset(&sh, 0, sizeof sh);
	m->can_call = 1;
	memcpy(sh.regs, x64_callee_saved, sizeof sh.regs);
	swi_synth_shuffle(g, sh.regs, 6);
	npush = empty ? 0 : rnd(g, 7);
	if ((m->saves_all = swi_synth_saves_all(g, want_region)))
		npush = 6;
	m->has_frame = !empty && rnd(g, 2);
	if (m->has_frame) {
		/* The frame register is callee-saved: push it before overwriting it. */
		while (sh.regs[fp_idx] != SW_X64_RBP)
			fp_idx++;
		if (npush == 0)
			npush = 1;
		if (fp_idx >= npush) {
			unsigned j = rnd(g, npush);

			sh.regs[fp_idx] = sh.regs[j];
			sh.regs[j] = SW_X64_RBP;
			fp_idx = j;
		}
	}
	if (!empty)
		for (unsigned i = npush; i < 6; i++)
			if (rnd(g, 4) == 0)
				sh.saves[sh.nsave++] = sh.regs[i];
	nregions = want_region ? 1 + rnd(g, 2) : rnd(g, 3);
	m->alloc = choose_alloc(g, npush, 8 * sh.nsave + (want_region ? X64_ICF_SIZE : 0), empty);
	while (nregions && 8 * sh.nsave + X64_ICF_SIZE * nregions > m->alloc)
		nregions--;
	while (8 * sh.nsave > m->alloc)
		sh.nsave--;
	layout_area(g, m, sh.nsave, save_off, nregions);

	/* After push number fp_idx+1 .. npush, or (npush + 1) after the allocation. */
	if (m->has_frame)
		fp_pos = fp_idx + 1 + rnd(g, npush - fp_idx + (m->alloc ? 1 : 0));

	/* Prolog. */
	for (unsigned i = 0; i < npush; i++) {
		swi_synth_prolog_op(g, m, &pc, SWI_OP_PUSH, sh.regs[i], 0, 0);
		sp_rel -= 8;
		if (m->has_frame && fp_pos == i + 1) {
			int64_t off = rnd(g, 4) ? 0 : 16 * (int64_t)rnd(g, (uint32_t)(-sp_rel / 16) + 1);

			swi_synth_prolog_op(g, m, &pc, SWI_OP_SET_FRAME, SW_X64_RBP, 0, off);
			sh.fp_rel = sp_rel + off;
		}
	}
	sh.sp_pushed = sp_rel;
	sh.npush = npush;
	if (m->alloc) {
		uint8_t post[7];
		unsigned npost = 0;

		swi_synth_prolog_op(g, m, &pc, SWI_OP_ALLOC, 0, 0, m->alloc);
		sp_rel -= m->alloc;
		for (unsigned i = 0; i < sh.nsave; i++)
			post[npost++] = (uint8_t)i;
		if (m->has_frame && fp_pos == npush + 1)
			post[npost++] = 0xff;
		swi_synth_shuffle(g, post, npost);
		for (unsigned i = 0; i < npost; i++) {
			if (post[i] == 0xff) {
				uint32_t lim = m->alloc / 16 < 15 ? m->alloc / 16 : 15;
				int64_t off = 16 * (int64_t)rnd(g, lim + 1);

				swi_synth_prolog_op(g, m, &pc, SWI_OP_SET_FRAME, SW_X64_RBP, 0, off);
				sh.fp_rel = sp_rel + off;
			} else {
				swi_synth_prolog_op(g, m, &pc, SWI_OP_SAVE, sh.saves[post[i]], 0,
				                    save_off[post[i]]);
			}
		}
	}
	swi_synth_end_prolog(g, m, &pc);
	swi_synth_bodies_and_epilogs(g, m, &pc, NULL, x64_epilog, &sh);
}

static const uint8_t x64_block[6] = {
	SW_X64_R15, SW_X64_R14, SW_X64_R13, SW_X64_R12, SW_X64_RBX, SW_X64_RBP
};

const struct swi_synth_arch swi_synth_x64 = {
	.arch = SW_ARCH_X64,
	.ptr = 8,
	.nregs = SW_X64_NREGS,
	.ip = SW_X64_RIP,
	.sp = SW_X64_RSP,
	.fp = SW_X64_RBP,
	.lr = -1,
	.value_mask = ~0ULL,
	.callee_saved = SWI_BIT(SW_X64_RBX) | SWI_BIT(SW_X64_RBP) | SWI_BIT(SW_X64_R12) |
	                SWI_BIT(SW_X64_R13) | SWI_BIT(SW_X64_R14) | SWI_BIT(SW_X64_R15),
	.volatile_regs = SWI_BIT(SW_X64_RAX) | SWI_BIT(SW_X64_RDX) | SWI_BIT(SW_X64_RCX) |
	                 SWI_BIT(SW_X64_RSI) | SWI_BIT(SW_X64_RDI) | SWI_BIT(SW_X64_R8) |
	                 SWI_BIT(SW_X64_R9) | SWI_BIT(SW_X64_R10) | SWI_BIT(SW_X64_R11),
	/* The stub pushes rbp, rbx, r12-r15 after the call: r15 is lowest. */
	.block_regs = x64_block,
	.nblock_regs = 6,
	.insn_align = 1,
	.window_hi = 0x7ffe00000000ULL,
	.code_base = 0x10000000ULL,
	.native_base = 0x7f0000000000ULL,
	.native_mask = 0xfffffffffULL,
	.handle_base = 0x6b0000000000ULL,
	.invent = x64_invent,
};
