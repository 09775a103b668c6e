/*
 * synth_arm64.c - the shapes of synthetic AArch64 methods.
 *
 * A method saves some of x19-x28 and d8-d15 in pairs (stp) or alone (str),
 * and, unless it is a leaf, lr: with fp as the frame record (stp fp, lr)
 * when fp is its frame register, else with another register or alone.
 * Three layouts, all seen in real JITs and compilers:
 *
 *   pushes     stp x19, x20, [sp, #-16]!  ...  mov fp, sp;  sub sp, sp, #L
 *   big first  stp fp, lr, [sp, #-S]!;  stp x19, x20, [sp, #16] ...;  sub sp, sp, #L
 *   sub first  sub sp, sp, #F;  stp fp, lr, [sp, #n] ...;  add fp, sp, #n
 *
 * Sometimes paciasp first and autiasp before the ret (the saved lr then
 * carries an authentication code).  A leaf never saves lr: its return
 * address stays in lr, so only the seed frame may be one.  Epilogs mirror
 * the prolog; every instruction is 4 bytes and SP moves by multiples of 16.
 */
#include "synth_gen.h"

#define NONE 0xff               /* no second register: a single save */
#define MAX_UNITS 20

struct unit {
	uint8_t r1, r2;
	uint32_t off;               /* from SP after the SP-moving store (big first, sub first) */
};

enum { PUSHES, BIG_FIRST, SUB_FIRST };

/* What the epilogs mirror. */
struct arm64_shape {
	struct unit units[MAX_UNITS];
	unsigned nunits;
	int style, pac;
	uint32_t save_size;         /* S: the save area, a multiple of 16 */
	uint32_t locals;            /* L */
	int64_t sp_saved;           /* SP after the saves, relative to the CFA */
	int64_t fp_rel;             /* fp, relative to the CFA */
};

static unsigned unit_bytes(const struct unit *u)
{
	return u->r2 == NONE ? 8 : 16;
}

static int has_reg(const struct unit *u, unsigned r)
{
	return u->r1 == r || u->r2 == r;
}

/* Pair registers of one class (x or d); sometimes leave one alone. */
static void add_units(struct swi_synth_gen *g, struct arm64_shape *sh, const uint8_t *regs,
                      unsigned n)
{
	for (unsigned i = 0; i < n && sh->nunits < MAX_UNITS;) {
		struct unit *u = &sh->units[sh->nunits++];

		u->r1 = regs[i];
		u->r2 = NONE;
		if (i + 1 < n && rnd(g, 4)) {
			u->r2 = regs[i + 1];
			i += 2;
		} else {
			i++;
		}
	}
}

static void choose_units(struct swi_synth_gen *g, struct swi_synth_method *m,
                         struct arm64_shape *sh, int leaf)
{
	uint8_t xs[10], ds[8];
	unsigned nx, nd;
	int save_fp = m->has_frame || rnd(g, 5) == 0;

	for (unsigned i = 0; i < 10; i++)
		xs[i] = (uint8_t)(SW_ARM64_X19 + i);
	for (unsigned i = 0; i < 8; i++)
		ds[i] = (uint8_t)(SW_ARM64_D8 + i);
	swi_synth_shuffle(g, xs, 10);
	swi_synth_shuffle(g, ds, 8);
	nx = rnd(g, 4) ? rnd(g, 5) : rnd(g, 11);
	if (m->saves_all)
		nx = 10;
	nd = rnd(g, 5) == 0 ? 1 + rnd(g, 8) : 0;

	sh->nunits = 0;
	if (!leaf) {
		struct unit *u = &sh->units[sh->nunits++];

		/* lr is the second register of its pair, as in "stp fp, lr". */
		u->r2 = SW_ARM64_LR;
		if (save_fp)
			u->r1 = SW_ARM64_FP;
		else if (nx && rnd(g, 2))
			u->r1 = xs[--nx];
		else {
			u->r1 = SW_ARM64_LR;
			u->r2 = NONE;
		}
	} else if (save_fp) {
		sh->units[sh->nunits].r1 = SW_ARM64_FP;
		sh->units[sh->nunits++].r2 = NONE;
	}
	add_units(g, sh, xs, nx);
	add_units(g, sh, ds, nd);
	for (unsigned i = sh->nunits; i > 1; i--) {
		unsigned j = rnd(g, i);
		struct unit t = sh->units[i - 1];

		sh->units[i - 1] = sh->units[j];
		sh->units[j] = t;
	}
}

static uint32_t choose_locals(struct swi_synth_gen *g, int want_region)
{
	uint32_t min = 2 * swi_synth_frame_size(g->a, SW_ICF_FIELDS) + 16;
	unsigned k = rnd(g, 100);
	uint32_t l;

	if (k < 20 && !want_region)
		return 0;
	if (k < 30)
		l = 4096 + 16 * (1 + rnd(g, 768));              /* large: > one page */
	else
		l = 16 * (1 + rnd(g, rnd(g, 4) ? 8 : 64));
	if (want_region && l < min)
		l = min + 16 * rnd(g, 8);
	return l;
}

/* The fp slot of unit u, relative to the CFA, once u is stored with SP at sp. */
static void set_frame(struct swi_synth_gen *g, struct swi_synth_method *m, struct arm64_shape *sh,
                      uint32_t *pc, int64_t sp, int64_t fp_slot)
{
	/* Usually fp points at the frame record; sometimes "mov fp, sp". */
	int64_t off = rnd(g, 4) ? fp_slot - sp : 0;

	swi_synth_prolog_op(g, m, pc, SWI_OP_SET_FRAME, SW_ARM64_FP, 0, off);
	sh->fp_rel = sp + off;
}

static void store_unit(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc,
                       const struct unit *u, unsigned kind_single, unsigned kind_pair, int64_t arg)
{
	if (u->r2 == NONE)
		swi_synth_prolog_op(g, m, pc, kind_single, u->r1, 0, arg);
	else
		swi_synth_prolog_op(g, m, pc, kind_pair, u->r1, u->r2, arg);
}

/* Lay out the units from `first` on at increasing offsets from `base`. */
static uint32_t pack_units(struct arm64_shape *sh, unsigned first, uint32_t base)
{
	for (unsigned i = first; i < sh->nunits; i++) {
		sh->units[i].off = base;
		base += unit_bytes(&sh->units[i]);
	}
	return base;
}

static void arm64_prolog(struct swi_synth_gen *g, struct swi_synth_method *m,
                         struct arm64_shape *sh, uint32_t *pc)
{
	unsigned n = sh->nunits, fp_unit = MAX_UNITS;
	int64_t sp = 0;

	for (unsigned i = 0; i < n; i++)
		if (m->has_frame && has_reg(&sh->units[i], SW_ARM64_FP))
			fp_unit = i;
	if (sh->pac)
		swi_synth_prolog_op(g, m, pc, SWI_OP_SIGN, 0, 0, 0);
	switch (sh->style) {
	case PUSHES: {
		/* fp is set once its unit is pushed, or after a later push. */
		unsigned fp_at = fp_unit < n ? fp_unit + rnd(g, n - fp_unit) : MAX_UNITS;
		int64_t fp_slot = 0;

		for (unsigned i = 0; i < n; i++) {
			sp -= 16;
			store_unit(g, m, pc, &sh->units[i], SWI_OP_PUSH, SWI_OP_PUSH_PAIR, 16);
			if (i == fp_unit)
				fp_slot = sp;
			if (i == fp_at)
				set_frame(g, m, sh, pc, sp, fp_slot);
		}
		break;
	}
	case BIG_FIRST: {
		uint32_t order[MAX_UNITS];

		/* stp r1, r2, [sp, #-S]! makes room for all; the others go above. */
		sp -= sh->save_size;
		store_unit(g, m, pc, &sh->units[0], SWI_OP_PUSH, SWI_OP_PUSH_PAIR, sh->save_size);
		if (fp_unit == 0)
			set_frame(g, m, sh, pc, sp, sp);
		for (unsigned i = 1; i < n; i++)
			order[i - 1] = i;
		for (unsigned i = n - 1; i > 1; i--) {
			unsigned j = rnd(g, i), t = order[i - 1];

			order[i - 1] = order[j];
			order[j] = t;
		}
		for (unsigned k = 0; k + 1 < n; k++) {
			const struct unit *u = &sh->units[order[k]];

			store_unit(g, m, pc, u, SWI_OP_SAVE, SWI_OP_SAVE_PAIR, u->off);
			if (order[k] == fp_unit)
				set_frame(g, m, sh, pc, sp, sp + u->off);
		}
		break;
	}
	default:
		sp -= sh->save_size + sh->locals;
		swi_synth_prolog_op(g, m, pc, SWI_OP_ALLOC, 0, 0, sh->save_size + sh->locals);
		for (unsigned i = 0; i < n; i++) {
			const struct unit *u = &sh->units[i];

			store_unit(g, m, pc, u, SWI_OP_SAVE, SWI_OP_SAVE_PAIR, u->off);
			if (i == fp_unit)
				set_frame(g, m, sh, pc, sp, sp + u->off);
		}
		break;
	}
	sh->sp_saved = sp;
	if (sh->style != SUB_FIRST && sh->locals)
		swi_synth_prolog_op(g, m, pc, SWI_OP_ALLOC, 0, 0, sh->locals);
	m->alloc = sh->save_size + sh->locals;
}

static void restore_units(struct swi_synth_gen *g, struct swi_synth_epilog *e, uint32_t *pc,
                          const struct arm64_shape *sh, unsigned first)
{
	uint8_t order[MAX_UNITS];
	unsigned n = 0;

	for (unsigned i = first; i < sh->nunits; i++)
		order[n++] = (uint8_t)i;
	swi_synth_shuffle(g, order, n);
	for (unsigned k = 0; k < n; k++) {
		const struct unit *u = &sh->units[order[k]];

		if (u->r2 == NONE)
			swi_synth_epilog_op(g, e, pc, SWI_OP_RESTORE, u->r1, 0, 0);
		else
			swi_synth_epilog_op(g, e, pc, SWI_OP_RESTORE_PAIR, u->r1, u->r2, 0);
	}
}

static void pop_unit(struct swi_synth_gen *g, struct swi_synth_epilog *e, uint32_t *pc,
                     const struct unit *u, uint32_t size)
{
	if (u->r2 == NONE)
		swi_synth_epilog_op(g, e, pc, SWI_OP_POP, u->r1, 0, size);
	else
		swi_synth_epilog_op(g, e, pc, SWI_OP_POP_PAIR, u->r1, u->r2, size);
}

static void arm64_epilog(struct swi_synth_gen *g, struct swi_synth_method *m,
                         struct swi_synth_epilog *e, uint32_t *pc, void *ctx)
{
	const struct arm64_shape *sh = ctx;

	/* Back to SP after the saves: "mov sp, fp" / "sub sp, fp, #n", or "add sp, sp, #L". */
	if (m->has_frame && rnd(g, 2))
		swi_synth_epilog_op(g, e, pc, SWI_OP_SP_FROM_FRAME, SW_ARM64_FP, 0,
		                    sh->sp_saved - sh->fp_rel);
	else if (sh->style != SUB_FIRST && sh->locals)
		swi_synth_epilog_op(g, e, pc, SWI_OP_FREE, 0, 0, sh->locals);
	switch (sh->style) {
	case PUSHES:
		for (unsigned i = sh->nunits; i-- > 0;)
			pop_unit(g, e, pc, &sh->units[i], 16);
		break;
	case BIG_FIRST:
		restore_units(g, e, pc, sh, 1);
		pop_unit(g, e, pc, &sh->units[0], sh->save_size);
		break;
	default:
		restore_units(g, e, pc, sh, 0);
		swi_synth_epilog_op(g, e, pc, SWI_OP_FREE, 0, 0, sh->save_size + sh->locals);
		break;
	}
	if (sh->pac)
		swi_synth_epilog_op(g, e, pc, SWI_OP_AUTH, 0, 0, 0);
}

static void arm64_invent(struct swi_synth_gen *g, struct swi_synth_method *m, int want_region,
                         int leaf_ok)
{
	struct arm64_shape sh;
	int leaf = leaf_ok && !want_region && rnd(g, 4) == 0;
	uint32_t pc = 0;

	memset(&sh, 0, sizeof sh);
	m->can_call = !leaf;
	m->saves_all = swi_synth_saves_all(g, want_region);
	m->has_frame = !leaf && rnd(g, 4) != 0;
	sh.pac = rnd(g, 4) == 0;
	choose_units(g, m, &sh, leaf);
	sh.locals = leaf && rnd(g, 2) ? 0 : choose_locals(g, want_region);
	sh.style = sh.nunits ? (int)rnd(g, 3) : PUSHES;
	if (sh.style == BIG_FIRST) {
		/* The first store moves SP: a pair if there is one (stp reaches farther). */
		for (unsigned i = 1; i < sh.nunits && sh.units[0].r2 == NONE; i++) {
			if (sh.units[i].r2 != NONE) {
				struct unit t = sh.units[0];

				sh.units[0] = sh.units[i];
				sh.units[i] = t;
			}
		}
		sh.save_size = (pack_units(&sh, 1, unit_bytes(&sh.units[0])) + 15) & ~15u;
	} else if (sh.style == SUB_FIRST) {
		uint32_t used = pack_units(&sh, 0, 0), room, base;

		sh.save_size = (used + 15) & ~15u;
		/* The saves sit together somewhere in the low 256 bytes of the frame. */
		room = sh.locals < 256 ? sh.locals : 256;
		base = 16 * rnd(g, room / 16 + 1);
		pack_units(&sh, 0, base);
	} else {
		sh.save_size = 16 * sh.nunits;
	}
	arm64_prolog(g, m, &sh, &pc);
	swi_synth_end_prolog(g, m, &pc);
	swi_synth_place_regions(g, m, want_region ? 1 + rnd(g, 2) : rnd(g, 3));
	swi_synth_bodies_and_epilogs(g, m, &pc, NULL, arm64_epilog, &sh);
}

static const uint8_t arm64_block[11] = {
	SW_ARM64_X19, SW_ARM64_X20, SW_ARM64_X21, SW_ARM64_X22, SW_ARM64_X23, SW_ARM64_X24,
	SW_ARM64_X25, SW_ARM64_X26, SW_ARM64_X27, SW_ARM64_X28, SW_ARM64_FP
};

#define ARM64_RANGE(lo, hi) ((SWI_BIT((hi) - (lo) + 1) - 1) << (lo))

const struct swi_synth_arch swi_synth_arm64 = {
	.arch = SW_ARCH_ARM64,
	.ptr = 8,
	.nregs = SW_ARM64_NREGS,
	.ip = SW_ARM64_PC,
	.sp = SW_ARM64_SP,
	.fp = SW_ARM64_FP,
	.lr = SW_ARM64_LR,
	.value_mask = ~0ULL,
	.ptrauth_mask = SW_ARM64_PTRAUTH_MASK,
	.callee_saved = ARM64_RANGE(SW_ARM64_X19, SW_ARM64_FP) | ARM64_RANGE(SW_ARM64_D8, SW_ARM64_D15),
	.float_regs = ARM64_RANGE(SW_ARM64_D8, SW_ARM64_D15),
	.volatile_regs = ARM64_RANGE(SW_ARM64_X0, 18),
	/* The stub stores x19-x28, fp, then lr (the return address) at ascending addresses. */
	.block_regs = arm64_block,
	.nblock_regs = 11,
	.insn_align = 4,
	.window_hi = 0x7ffe00000000ULL,
	.code_base = 0x10000000ULL,
	.native_base = 0x7f0000000000ULL,
	.native_mask = 0xffffffffcULL,
	.handle_base = 0x6b0000000000ULL,
	.invent = arm64_invent,
};
