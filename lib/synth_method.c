/*
 * synth_method.c - invent random x64 methods and register them.
 *
 * A method is a list of instructions with unwind effects: a prolog (pushes
 * of callee-saved registers, an allocation, an RBP frame, saves into the
 * allocated area), bodies, and 1 to 3 epilogs that mirror the prolog.  The
 * same list is described to the SWU builder and, in synth_gen.c, executed
 * on the model machine.
 */
#include <stdlib.h>
#include "synth_gen.h"

const uint8_t swi_synth_callee_saved[6] = {
	SW_X64_RBX, SW_X64_RBP, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15
};

static void shuffle(struct swi_synth_gen *g, uint8_t *a, unsigned n)
{
	for (unsigned i = n; i > 1; i--) {
		unsigned j = rnd(g, i);
		uint8_t t = a[i - 1];

		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* The length of one more instruction; sometimes one without an unwind effect first. */
static uint32_t next_insn(struct swi_synth_gen *g, uint32_t *pc, int filler)
{
	if (filler && rnd(g, 8) == 0)
		*pc += 1 + rnd(g, 7);
	*pc += 1 + rnd(g, 7);
	return *pc;
}

static void prolog_op(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc,
                      unsigned kind, unsigned reg, int64_t arg)
{
	struct swi_synth_op *op = &m->ops[m->nops++];

	op->kind = (uint8_t)kind;
	op->reg = (uint8_t)reg;
	op->arg = arg;
	op->end = next_insn(g, pc, 1);
}

static void epilog_op(struct swi_synth_gen *g, struct swi_synth_epilog *e, uint32_t *pc,
                      unsigned kind, unsigned reg, int64_t arg)
{
	struct swi_synth_op *op = &e->ops[e->nops++];

	op->kind = (uint8_t)kind;
	op->reg = (uint8_t)reg;
	op->arg = arg;
	op->end = next_insn(g, pc, 0);
}

static void add_body(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc)
{
	struct swi_synth_range *b = &m->bodies[m->nbodies++];

	b->lo = *pc;
	/* At least 2 bytes, so a call can return strictly inside it. */
	b->hi = *pc + 2 + (rnd(g, 4) ? rnd(g, 96) : rnd(g, 1200));
	*pc = b->hi;
}

/*
 * Lay out the allocated area: save slots and up to two 48-byte holes for
 * InlinedCallFrames, in random order with random gaps.
 */
static void layout_area(struct swi_synth_gen *g, struct swi_synth_method *m, unsigned nsave,
                        uint32_t *save_off, unsigned nregions)
{
	uint8_t order[SWI_SYNTH_MAX_PROLOG_OPS];
	unsigned n = 0, ri = 0;
	uint32_t total = 8 * nsave + SWI_SYNTH_ICF_SIZE * nregions;
	uint32_t slack = m->alloc - total, pos = 0;

	for (unsigned i = 0; i < nsave; i++)
		order[n++] = (uint8_t)i;
	for (unsigned i = 0; i < nregions; i++)
		order[n++] = (uint8_t)(0x80 | i);
	shuffle(g, order, n);
	for (unsigned i = 0; i < n; i++) {
		uint32_t gap = 8 * rnd(g, slack / 8 + 1);

		slack -= gap;
		pos += gap;
		if (order[i] & 0x80) {
			m->regions[ri++] = pos;
			pos += SWI_SYNTH_ICF_SIZE;
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

/* Invent one method's instructions (no address yet). */
static void invent_method(struct swi_synth_gen *g, struct swi_synth_method *m, int want_region)
{
	uint8_t regs[6];
	uint8_t saves[6];
	uint32_t save_off[6];
	unsigned npush, nsave = 0, fp_pos = 0, nregions;
	int empty = !want_region && rnd(g, 16) == 0;
	int64_t sp_rel = 0, fp_rel = 0, sp_pushed;
	uint32_t pc = 0;

	memcpy(regs, swi_synth_callee_saved, sizeof regs);
	shuffle(g, regs, 6);
	npush = empty ? 0 : rnd(g, 7);
	m->has_frame = !empty && rnd(g, 2);
	if (m->has_frame) {
		/* The frame register is callee-saved: push it before overwriting it. */
		unsigned idx = 0;

		while (regs[idx] != SW_X64_RBP)
			idx++;
		if (npush == 0)
			npush = 1;
		if (idx >= npush) {
			unsigned j = rnd(g, npush);

			regs[idx] = regs[j];
			regs[j] = SW_X64_RBP;
		}
	}
	if (!empty)
		for (unsigned i = npush; i < 6; i++)
			if (rnd(g, 4) == 0)
				saves[nsave++] = regs[i];
	nregions = want_region ? 1 + rnd(g, 2) : rnd(g, 3);
	m->alloc = choose_alloc(g, npush, 8 * nsave + (want_region ? SWI_SYNTH_ICF_SIZE : 0), empty);
	while (nregions && 8 * nsave + SWI_SYNTH_ICF_SIZE * nregions > m->alloc)
		nregions--;
	while (8 * nsave > m->alloc)
		nsave--;
	layout_area(g, m, nsave, save_off, nregions);

	if (m->has_frame) {
		unsigned idx = 0;

		while (regs[idx] != SW_X64_RBP)
			idx++;
		/* After push number idx+1 .. npush, or (npush + 1) after the allocation. */
		fp_pos = idx + 1 + rnd(g, npush - idx + (m->alloc ? 1 : 0));
	}

	/* Prolog. */
	for (unsigned i = 0; i < npush; i++) {
		prolog_op(g, m, &pc, SWI_OP_PUSH, regs[i], 0);
		sp_rel -= 8;
		if (m->has_frame && fp_pos == i + 1) {
			int64_t off = rnd(g, 4) ? 0 : 16 * (int64_t)rnd(g, (uint32_t)(-sp_rel / 16) + 1);

			prolog_op(g, m, &pc, SWI_OP_SET_FRAME, SW_X64_RBP, off);
			fp_rel = sp_rel + off;
		}
	}
	sp_pushed = sp_rel;
	if (m->alloc) {
		uint8_t post[7];
		unsigned npost = 0;

		prolog_op(g, m, &pc, SWI_OP_ALLOC, 0, m->alloc);
		sp_rel -= m->alloc;
		for (unsigned i = 0; i < nsave; i++)
			post[npost++] = (uint8_t)i;
		if (m->has_frame && fp_pos == npush + 1)
			post[npost++] = 0xff;
		shuffle(g, post, npost);
		for (unsigned i = 0; i < npost; i++) {
			if (post[i] == 0xff) {
				uint32_t lim = m->alloc / 16 < 15 ? m->alloc / 16 : 15;
				int64_t off = 16 * (int64_t)rnd(g, lim + 1);

				prolog_op(g, m, &pc, SWI_OP_SET_FRAME, SW_X64_RBP, off);
				fp_rel = sp_rel + off;
			} else {
				prolog_op(g, m, &pc, SWI_OP_SAVE, saves[post[i]], save_off[post[i]]);
			}
		}
	}
	if (rnd(g, 8) == 0)
		pc += 1 + rnd(g, 7);    /* a trailing prolog instruction with no unwind effect */
	m->prolog_end = pc;

	/* Body, then epilogs that mirror the prolog, with more body between them. */
	add_body(g, m, &pc);
	m->nepilogs = 1 + rnd(g, SWI_SYNTH_MAX_EPILOGS);
	for (unsigned k = 0; k < m->nepilogs; k++) {
		struct swi_synth_epilog *e = &m->epilogs[k];
		uint8_t order[6];

		e->start = pc;
		for (unsigned i = 0; i < nsave; i++)
			order[i] = saves[i];
		shuffle(g, order, nsave);
		for (unsigned i = 0; i < nsave; i++)
			epilog_op(g, e, &pc, SWI_OP_RESTORE, order[i], 0);
		/*
		 * A frame method resets SP from RBP ("lea rsp") or, half the
		 * time, frees its locals with "add rsp, n" (or nothing) before
		 * popping RBP: both are real JIT epilogs.
		 */
		if (m->has_frame && rnd(g, 2))
			epilog_op(g, e, &pc, SWI_OP_SP_FROM_FRAME, SW_X64_RBP, sp_pushed - fp_rel);
		else if (m->alloc)
			epilog_op(g, e, &pc, SWI_OP_FREE, 0, m->alloc);
		for (unsigned i = npush; i-- > 0;)
			epilog_op(g, e, &pc, SWI_OP_POP, regs[i], 0);
		e->end = next_insn(g, &pc, 0);      /* ret */
		if (k + 1 < m->nepilogs || rnd(g, 4) == 0)
			add_body(g, m, &pc);
	}
	m->size = pc;
}

/* Describe `m` through the SWU builder and register it in the code map. */
static sw_status register_method(struct swi_synth_gen *g, const struct swi_synth_method *m)
{
	sw_swu_builder *b = g->builder;
	unsigned char small[2048], *blob = small;
	size_t len = 0;
	sw_code_info ci;
	sw_status st = SW_OK;

	sw_swu_builder_reset(b);
	for (unsigned i = 0; i < m->nops && st == SW_OK; i++) {
		const struct swi_synth_op *op = &m->ops[i];

		switch (op->kind) {
		case SWI_OP_PUSH:
			st = sw_swu_push_reg(b, op->end, op->reg);
			break;
		case SWI_OP_ALLOC:
			st = sw_swu_alloc_stack(b, op->end, (uint32_t)op->arg);
			break;
		case SWI_OP_SET_FRAME:
			st = sw_swu_set_frame(b, op->end, op->reg, (uint32_t)op->arg);
			break;
		default:
			st = sw_swu_save_reg(b, op->end, op->reg, (uint32_t)op->arg);
			break;
		}
	}
	if (st == SW_OK)
		st = sw_swu_end_prolog(b, m->prolog_end);
	for (unsigned k = 0; k < m->nepilogs && st == SW_OK; k++) {
		const struct swi_synth_epilog *e = &m->epilogs[k];

		st = sw_swu_epilog_begin(b, e->start);
		for (unsigned i = 0; i < e->nops && st == SW_OK; i++) {
			const struct swi_synth_op *op = &e->ops[i];

			switch (op->kind) {
			case SWI_OP_RESTORE:
				st = sw_swu_restore_reg(b, op->end, op->reg);
				break;
			case SWI_OP_FREE:
				st = sw_swu_free_stack(b, op->end, (uint32_t)op->arg);
				break;
			case SWI_OP_SP_FROM_FRAME:
				st = sw_swu_restore_sp_from_frame(b, op->end, (int32_t)op->arg);
				break;
			default:
				st = sw_swu_pop_reg(b, op->end, op->reg);
				break;
			}
		}
		if (st == SW_OK)
			st = sw_swu_epilog_end(b, e->end);
	}
	if (st == SW_OK) {
		st = sw_swu_finish(b, m->size, small, sizeof small, &len);
		if (st == SW_E_LIMIT && len > sizeof small) {
			blob = malloc(len);
			if (!blob)
				return SW_E_NOMEM;
			st = sw_swu_finish(b, m->size, blob, len, &len);
		}
	}
	if (st == SW_OK) {
		memset(&ci, 0, sizeof ci);
		ci.method = m->handle;
		ci.start = m->start;
		ci.size = m->size;
		ci.unwind = blob;
		ci.unwind_size = (uint32_t)len;
		st = sw_codemap_add(g->s->map, &ci);
	}
	if (blob != small)
		free(blob);
	return st;
}

/* Invent a method, give it an address and a handle, and register it. */
static unsigned new_method(struct swi_synth_gen *g, int want_region)
{
	sw_synth *s = g->s;
	struct swi_synth_method *m;
	sw_status st;

	if (s->nmethods == g->methods_cap) {
		unsigned cap = g->methods_cap ? 2 * g->methods_cap : 16;
		void *p = realloc(s->methods, cap * sizeof *s->methods);

		if (!p) {
			fail(g, SW_E_NOMEM);
			return 0;
		}
		s->methods = p;
		g->methods_cap = cap;
	}
	m = &s->methods[s->nmethods];
	memset(m, 0, sizeof *m);
	invent_method(g, m, want_region);
	/* Sometimes adjacent to the previous method, so IP - 1 lookups matter. */
	if (rnd(g, 4))
		g->code_cursor = ((g->code_cursor + 15) & ~15ULL) + 16 * rnd(g, 256);
	m->start = g->code_cursor;
	g->code_cursor += m->size;
	m->handle = (void *)(uintptr_t)(0x5a0000000000ULL + ((uint64_t)s->nmethods << 8) + 8 * rnd(g, 32));
	st = register_method(g, m);
	if (st != SW_OK) {
		fail(g, st);
		return 0;
	}
	return s->nmethods++;
}

/* Often a method already on the stack (recursion). */
unsigned swi_synth_pick_method(struct swi_synth_gen *g, int want_region)
{
	sw_synth *s = g->s;

	while (rnd(g, 8) == 0)
		new_method(g, 0);           /* a decoy: registered, never on the stack */
	if (g->err == SW_OK && s->nmethods && rnd(g, 3) == 0) {
		for (unsigned tries = 0; tries < 4; tries++) {
			unsigned i = rnd(g, s->nmethods);

			if (!want_region || s->methods[i].nregions)
				return i;
		}
	}
	return new_method(g, want_region);
}
