/*
 * synth_method.c - what every synthetic method has, whatever its arch.
 *
 * A method is a list of instructions with unwind effects: a prolog, bodies
 * (with argument pushes and calls on x86), and 1 to 3 epilogs that mirror
 * the prolog.  The per-arch files invent the shapes (synth_x64.c,
 * synth_x86.c, synth_arm64.c) with the helpers here; the same list is
 * described to the SWU builder here and, in synth_gen.c, executed on the
 * model machine.
 */
#include <stdlib.h>
#include "synth_gen.h"

void swi_synth_shuffle(struct swi_synth_gen *g, uint8_t *a, unsigned n)
{
	for (unsigned i = n; i > 1; i--) {
		unsigned j = rnd(g, i);
		uint8_t t = a[i - 1];

		a[i - 1] = a[j];
		a[j] = t;
	}
}

/* One instruction's length: 1 to 7 bytes, or the fixed 4. */
static uint32_t insn_length(struct swi_synth_gen *g)
{
	return g->a->insn_align == 1 ? 1 + rnd(g, 7) : g->a->insn_align;
}

uint32_t swi_synth_next_insn(struct swi_synth_gen *g, uint32_t *pc, int filler)
{
	if (filler && rnd(g, 8) == 0)
		*pc += insn_length(g) * (1 + rnd(g, 2));
	*pc += insn_length(g);
	return *pc;
}

static void set_op(struct swi_synth_op *op, unsigned kind, unsigned reg, unsigned reg2,
                   int64_t arg, uint32_t end)
{
	op->kind = (uint8_t)kind;
	op->reg = (uint8_t)reg;
	op->reg2 = (uint8_t)reg2;
	op->arg = arg;
	op->end = end;
}

void swi_synth_prolog_op(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc,
                         unsigned kind, unsigned reg, unsigned reg2, int64_t arg)
{
	if (m->nops >= SWI_SYNTH_MAX_PROLOG_OPS) {
		fail(g, SW_E_STATE);
		return;
	}
	set_op(&m->ops[m->nops++], kind, reg, reg2, arg, swi_synth_next_insn(g, pc, 1));
}

void swi_synth_epilog_op(struct swi_synth_gen *g, struct swi_synth_epilog *e, uint32_t *pc,
                         unsigned kind, unsigned reg, unsigned reg2, int64_t arg)
{
	if (e->nops >= SWI_SYNTH_MAX_EPILOG_OPS) {
		fail(g, SW_E_STATE);
		return;
	}
	set_op(&e->ops[e->nops++], kind, reg, reg2, arg, swi_synth_next_insn(g, pc, 0));
}

void swi_synth_body_op(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t end,
                       unsigned kind, int64_t arg)
{
	if (m->nbody_ops >= SWI_SYNTH_MAX_BODY_OPS) {
		fail(g, SW_E_STATE);
		return;
	}
	set_op(&m->body_ops[m->nbody_ops++], kind, 0, 0, arg, end);
}

void swi_synth_end_prolog(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc)
{
	if (rnd(g, 8) == 0)
		*pc += insn_length(g);  /* a trailing prolog instruction with no unwind effect */
	m->prolog_end = *pc;
}

static void add_body(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc,
                     swi_synth_body_fn body)
{
	struct swi_synth_range *b = &m->bodies[m->nbodies++];
	unsigned unit = g->a->insn_align, div = unit == 1 ? 1 : 4;
	uint32_t hi;

	b->lo = *pc;
	/* At least 2 instructions, so a call can return strictly inside it. */
	hi = *pc + unit * (2 + (rnd(g, 4) ? rnd(g, 96 / div) : rnd(g, 1200 / div)));
	if (body) {
		body(g, m, pc);
		/* Something after the last body op: its end is no epilog's start. */
		if (*pc + unit > hi)
			hi = *pc + unit * (1 + rnd(g, 8));
	}
	b->hi = hi;
	*pc = hi;
}

void swi_synth_bodies_and_epilogs(struct swi_synth_gen *g, struct swi_synth_method *m,
                                  uint32_t *pc, swi_synth_body_fn body,
                                  swi_synth_epilog_fn emit, void *ctx)
{
	add_body(g, m, pc, body);
	m->nepilogs = 1 + rnd(g, SWI_SYNTH_MAX_EPILOGS);
	for (unsigned k = 0; k < m->nepilogs; k++) {
		struct swi_synth_epilog *e = &m->epilogs[k];

		e->start = *pc;
		e->nops = 0;
		emit(g, m, e, pc, ctx);
		e->end = swi_synth_next_insn(g, pc, 0);     /* ret */
		if (k + 1 < m->nepilogs || rnd(g, 4) == 0)
			add_body(g, m, pc, body);
	}
	m->size = *pc;
}

/* ---- holes for InlinedCallFrames ------------------------------------------ */

#define REGION_WINDOW 4096

/*
 * Mark the slots the prolog stores into, as offsets from the body's SP;
 * returns the size of the frame area within the window.  *moved (if not
 * NULL) gets how far the prolog moves SP.
 */
static uint32_t frame_slots(const struct swi_synth_gen *g, const struct swi_synth_method *m,
                            uint8_t *used, uint32_t window, int64_t *moved)
{
	int64_t sp = 0, stores[2 * SWI_SYNTH_MAX_PROLOG_OPS];
	unsigned n = 0, p = g->a->ptr;

	for (unsigned i = 0; i < m->nops; i++) {
		const struct swi_synth_op *op = &m->ops[i];

		switch (op->kind) {
		case SWI_OP_PUSH:
			sp -= op->arg ? op->arg : p;
			stores[n++] = sp;
			break;
		case SWI_OP_PUSH_PAIR:
			sp -= op->arg;
			stores[n++] = sp;
			stores[n++] = sp + 8;
			break;
		case SWI_OP_ALLOC:
			sp -= op->arg;
			break;
		case SWI_OP_SAVE:
			stores[n++] = sp + op->arg;
			break;
		case SWI_OP_SAVE_PAIR:
			stores[n++] = sp + op->arg;
			stores[n++] = sp + op->arg + 8;
			break;
		default:
			break;
		}
	}
	for (unsigned i = 0; i < n; i++) {
		int64_t off = stores[i] - sp;

		if (off >= 0 && off < window)
			used[off / p] = 1;
	}
	if (moved)
		*moved = -sp;
	return (uint32_t)(-sp < window ? -sp : window);
}

static int region_free(const uint8_t *used, uint32_t pos, uint32_t size, unsigned p,
                       const struct swi_synth_method *m)
{
	for (uint32_t o = pos; o < pos + size; o += p)
		if (used[o / p])
			return 0;
	for (unsigned i = 0; i < m->nregions; i++)
		if (pos < m->regions[i] + size && m->regions[i] < pos + size)
			return 0;
	return 1;
}

void swi_synth_place_regions(struct swi_synth_gen *g, struct swi_synth_method *m, unsigned n)
{
	uint8_t used[REGION_WINDOW / 4];
	unsigned p = g->a->ptr;
	uint32_t size = swi_synth_frame_size(g->a, SW_ICF_FIELDS), area, npos;

	memset(used, 0, sizeof used);
	m->nregions = 0;
	area = frame_slots(g, m, used, REGION_WINDOW, NULL);
	if (area < size)
		return;
	npos = (area - size) / p + 1;
	while (m->nregions < n && m->nregions < SWI_SYNTH_MAX_REGIONS) {
		uint32_t pos = 0;
		int found = 0;

		for (unsigned t = 0; t < 8 && !found; t++) {
			pos = p * rnd(g, npos);
			found = region_free(used, pos, size, p, m);
		}
		for (uint32_t k = 0, start = rnd(g, npos); k < npos && !found; k++) {
			pos = p * ((start + k) % npos);
			found = region_free(used, pos, size, p, m);
		}
		if (!found)
			break;
		m->regions[m->nregions++] = pos;
	}
	if (m->nregions == 2 && m->regions[0] > m->regions[1]) {
		uint32_t t = m->regions[0];

		m->regions[0] = m->regions[1];
		m->regions[1] = t;
	}
}

/* ---- GC information ------------------------------------------------------------- */

/* A random live range inside body `b`: all of it, or a part. */
static void gc_range(struct swi_synth_gen *g, const struct swi_synth_range *b,
                     struct swi_synth_gc *gc)
{
	unsigned unit = g->a->insn_align;
	uint32_t n = (b->hi - b->lo) / unit, first, len;

	if (rnd(g, 3) == 0) {
		gc->lo = b->lo;
		gc->hi = b->hi;
		return;
	}
	first = rnd(g, n);
	len = 1 + rnd(g, n - first);
	gc->lo = b->lo + unit * first;
	gc->hi = gc->lo + unit * len;
}

/* One location live in 1 or 2 distinct bodies, the first `skip` bodies aside. */
static void gc_location(struct swi_synth_gen *g, struct swi_synth_method *m,
                        const struct swi_synth_gc *loc, unsigned skip)
{
	unsigned nb = m->nbodies - skip, k, b0;

	if (m->nbodies <= skip)
		return;
	k = 1 + rnd(g, nb < 2 ? 1 : 2);
	b0 = rnd(g, nb);
	for (unsigned i = 0; i < k && m->ngc < SWI_SYNTH_MAX_GC; i++) {
		struct swi_synth_gc *gc = &m->gc[m->ngc++];

		*gc = *loc;
		gc_range(g, &m->bodies[skip + (b0 + i) % nb], gc);
	}
}

static uint16_t gc_flags(struct swi_synth_gen *g)
{
	switch (rnd(g, 10)) {
	case 0:
		return SW_GC_INTERIOR;
	case 1:
		return SW_GC_PINNED;
	default:
		return 0;
	}
}

/*
 * Where the method keeps references: stack slots of its frame area that
 * no save and no Frame hole uses, and callee-saved registers it saved
 * (and so may change), the frame register aside.  Live only in bodies.
 */
static void choose_gc(struct swi_synth_gen *g, struct swi_synth_method *m)
{
	const struct swi_synth_arch *a = g->a;
	uint8_t used[REGION_WINDOW / 4];
	unsigned p = a->ptr, nslots = rnd(g, 5);
	uint32_t icf = swi_synth_frame_size(a, SW_ICF_FIELDS), area;
	int64_t moved, entry = a->lr >= 0 ? 0 : p;
	uint64_t saved = 0, regs;

	m->ngc = 0;
	memset(used, 0, sizeof used);
	area = frame_slots(g, m, used, REGION_WINDOW, &moved);
	for (unsigned i = 0; i < m->nregions; i++)
		for (uint32_t o = m->regions[i]; o < m->regions[i] + icf && o / p < sizeof used; o += p)
			used[o / p] = 1;
	for (unsigned i = 0; i < nslots && area >= p; i++) {
		struct swi_synth_gc loc = { 0, 0, gc_flags(g), 0, 0, 0 };
		uint32_t pos = p * rnd(g, area / p);

		if (used[pos / p])
			continue;
		used[pos / p] = 1;
		loc.cfa_offset = (int32_t)((int64_t)pos - moved - entry);
		gc_location(g, m, &loc, 0);
	}
	for (unsigned i = 0; i < m->nops; i++) {
		const struct swi_synth_op *op = &m->ops[i];

		if (op->kind == SWI_OP_PUSH || op->kind == SWI_OP_SAVE)
			saved |= SWI_BIT(op->reg);
		else if (op->kind == SWI_OP_PUSH_PAIR || op->kind == SWI_OP_SAVE_PAIR)
			saved |= SWI_BIT(op->reg) | SWI_BIT(op->reg2);
	}
	regs = saved & a->callee_saved & ~a->float_regs;
	if (m->has_frame)
		regs &= ~SWI_BIT(a->fp);
	for (; regs; regs &= regs - 1) {
		struct swi_synth_gc loc = { 1, 0, gc_flags(g), 0, 0, 0 };

		if (rnd(g, 2))
			continue;
		loc.reg = (uint8_t)__builtin_ctzll(regs);
		/*
		 * A method that calls through an InlinedCallFrame spills its
		 * references around that call: its first body keeps none in
		 * registers (see quiet_offset in synth_gen.c).
		 */
		gc_location(g, m, &loc, m->saves_all ? 1 : 0);
	}
}

static sw_status describe_gc(sw_swu_builder *b, const struct swi_synth_method *m)
{
	sw_status st = SW_OK;

	for (unsigned i = 0; i < m->ngc && st == SW_OK; i++) {
		const struct swi_synth_gc *gc = &m->gc[i];

		if (gc->in_reg)
			st = sw_swu_gc_register(b, gc->reg, gc->flags, gc->lo, gc->hi);
		else
			st = sw_swu_gc_stack_slot(b, gc->cfa_offset, gc->flags, gc->lo, gc->hi);
	}
	return st;
}

/* ---- the SWU description ---------------------------------------------------- */

static sw_status describe_prolog_op(sw_swu_builder *b, const struct swi_synth_op *op)
{
	uint32_t end = op->end, arg = (uint32_t)op->arg;

	switch (op->kind) {
	case SWI_OP_PUSH:
		return arg ? sw_swu_push_reg_sized(b, end, op->reg, arg) : sw_swu_push_reg(b, end, op->reg);
	case SWI_OP_PUSH_PAIR:
		return sw_swu_push_reg_pair(b, end, op->reg, op->reg2, arg);
	case SWI_OP_ALLOC:
		return sw_swu_alloc_stack(b, end, arg);
	case SWI_OP_SET_FRAME:
		return sw_swu_set_frame(b, end, op->reg, arg);
	case SWI_OP_SAVE:
		return sw_swu_save_reg(b, end, op->reg, arg);
	case SWI_OP_SAVE_PAIR:
		return sw_swu_save_reg_pair(b, end, op->reg, op->reg2, arg);
	case SWI_OP_SIGN:
		return sw_swu_sign_return_address(b, end);
	default:
		return SW_E_STATE;
	}
}

static sw_status describe_epilog_op(sw_swu_builder *b, const struct swi_synth_op *op)
{
	uint32_t end = op->end, arg = (uint32_t)op->arg;

	switch (op->kind) {
	case SWI_OP_RESTORE:
		return sw_swu_restore_reg(b, end, op->reg);
	case SWI_OP_RESTORE_PAIR:
		return sw_swu_restore_reg_pair(b, end, op->reg, op->reg2);
	case SWI_OP_FREE:
		return sw_swu_free_stack(b, end, arg);
	case SWI_OP_SP_FROM_FRAME:
		return sw_swu_restore_sp_from_frame(b, end, (int32_t)op->arg);
	case SWI_OP_POP:
		return arg ? sw_swu_pop_reg_sized(b, end, op->reg, arg) : sw_swu_pop_reg(b, end, op->reg);
	case SWI_OP_POP_PAIR:
		return sw_swu_pop_reg_pair(b, end, op->reg, op->reg2, arg);
	case SWI_OP_AUTH:
		return sw_swu_auth_return_address(b, end);
	default:
		return SW_E_STATE;
	}
}

static sw_status describe_body_op(sw_swu_builder *b, const struct swi_synth_op *op)
{
	uint32_t arg = (uint32_t)op->arg;

	switch (op->kind) {
	case SWI_OP_PUSH_ARGS:
		return sw_swu_push_args(b, op->end, arg);
	case SWI_OP_POP_ARGS:
		return sw_swu_pop_args(b, op->end, arg);
	case SWI_OP_CALL_POPS:
		return sw_swu_call_pops_args(b, op->end, arg);
	case SWI_OP_CALL:
		return SW_OK;           /* no unwind effect */
	default:
		return SW_E_STATE;
	}
}

/* Describe `m` to the builder: prolog, then body ops and epilogs in code order. */
static sw_status describe(sw_swu_builder *b, const struct swi_synth_method *m)
{
	unsigned bi = 0;
	sw_status st = SW_OK;

	sw_swu_builder_reset(b);
	for (unsigned i = 0; i < m->nops && st == SW_OK; i++)
		st = describe_prolog_op(b, &m->ops[i]);
	if (st == SW_OK)
		st = sw_swu_end_prolog(b, m->prolog_end);
	for (unsigned k = 0; k <= m->nepilogs && st == SW_OK; k++) {
		const struct swi_synth_epilog *e = k < m->nepilogs ? &m->epilogs[k] : NULL;

		for (; bi < m->nbody_ops && st == SW_OK && (!e || m->body_ops[bi].end <= e->start); bi++)
			st = describe_body_op(b, &m->body_ops[bi]);
		if (!e || st != SW_OK)
			break;
		st = sw_swu_epilog_begin(b, e->start);
		for (unsigned i = 0; i < e->nops && st == SW_OK; i++)
			st = describe_epilog_op(b, &e->ops[i]);
		if (st == SW_OK)
			st = sw_swu_epilog_end(b, e->end);
	}
	return st;
}

/* Describe `m` through the SWU builder and register it in the code map. */
static sw_status register_method(struct swi_synth_gen *g, const struct swi_synth_method *m)
{
	sw_swu_builder *b = g->builder;
	unsigned char small[2048], *blob = small;
	size_t len = 0;
	sw_code_info ci;
	sw_status st = describe(b, m);

	if (st == SW_OK)
		st = describe_gc(b, m);
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
		ci.flags = m->code_flags;
		if (m->code_flags & SW_CODE_FUNCLET)
			ci.parent = g->s->methods[m->parent].handle;
		st = sw_codemap_add(g->s->map, &ci);
	}
	if (blob != small)
		free(blob);
	return st;
}

/* Invent a method (a funclet of `parent` with code_flags), give it an address and a handle, and register it. */
static unsigned new_method(struct swi_synth_gen *g, int want_region, int leaf_ok,
                           uint32_t code_flags, unsigned parent)
{
	sw_synth *s = g->s;
	struct swi_synth_method *m;
	sw_status st;

	if (!grow(g, (void **)&s->methods, &g->methods_cap, s->nmethods, sizeof *s->methods))
		return 0;
	m = &s->methods[s->nmethods];
	memset(m, 0, sizeof *m);
	g->a->invent(g, m, want_region, leaf_ok);
	if (g->err != SW_OK)
		return 0;
	m->code_flags = code_flags;
	m->parent = parent;
	if (g->s->params.features & SW_SYNTH_GC_INFO)
		choose_gc(g, m);
	/* Sometimes adjacent to the previous method, so IP - 1 lookups matter. */
	if (rnd(g, 4))
		g->code_cursor = ((g->code_cursor + 15) & ~15ULL) + 16 * rnd(g, 256);
	m->start = g->code_cursor;
	g->code_cursor += m->size;
	/* Handles fit the target's pointers: Frames hold them too. */
	m->handle = (void *)(uintptr_t)((g->a->ptr == 4 ? 0x5a000000ULL : 0x5a0000000000ULL) +
	                                ((uint64_t)s->nmethods << 8) + 8 * rnd(g, 32));
	st = register_method(g, m);
	if (st != SW_OK) {
		fail(g, st);
		return 0;
	}
	return s->nmethods++;
}

/* Often a method already on the stack (recursion). */
unsigned swi_synth_pick_method(struct swi_synth_gen *g, int want_region, int leaf_ok)
{
	sw_synth *s = g->s;

	while (g->err == SW_OK && rnd(g, 8) == 0)
		new_method(g, 0, 1, 0, 0);  /* a decoy: registered, never on the stack */
	if (g->err == SW_OK && s->nmethods && rnd(g, 3) == 0) {
		for (unsigned tries = 0; tries < 4; tries++) {
			const struct swi_synth_method *m = &s->methods[rnd(g, s->nmethods)];

			/* A funclet runs only above its parent. */
			if ((!want_region || m->nregions) && (leaf_ok || m->can_call) && !m->code_flags &&
			    (m->saves_all || !swi_synth_saves_all(g, want_region)))
				return (unsigned)(m - s->methods);
		}
	}
	return new_method(g, want_region, leaf_ok, 0, 0);
}

/* A funclet of method `parent`: one it already has, or a new one (sometimes a filter). */
unsigned swi_synth_pick_funclet(struct swi_synth_gen *g, unsigned parent, int want_region,
                                int leaf_ok)
{
	sw_synth *s = g->s;

	if (g->err == SW_OK && rnd(g, 2)) {
		for (unsigned i = 0; i < s->nmethods; i++) {
			const struct swi_synth_method *m = &s->methods[i];

			if ((m->code_flags & SW_CODE_FUNCLET) && m->parent == parent &&
			    (!want_region || m->nregions) && (leaf_ok || m->can_call) &&
			    (m->saves_all || !swi_synth_saves_all(g, want_region)))
				return i;
		}
	}
	return new_method(g, want_region, leaf_ok,
	                  SW_CODE_FUNCLET | (rnd(g, 3) == 0 ? SW_CODE_FILTER : 0), parent);
}
