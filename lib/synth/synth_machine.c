/*
 * synth_machine.c - the model machine that runs synthetic methods.
 *
 * Registers, the slot holding each caller value a method saved, and a byte
 * image of the target's stack that grows down on demand (new bytes are
 * garbage).  run_to executes a method's instructions up to an offset
 * exactly as the real code would: each push or store writes the register's
 * value, each pop or reload reads it back.  It knows no architecture: the
 * swi_synth_arch table gives the pointer size, SP, the frame register and
 * the link register.
 */
#include <stdlib.h>
#include "synth_gen.h"

/* ---- the stack image ------------------------------------------------- */

/* Make [addr, window_hi) backed; new bytes are garbage. */
int swi_synth_reserve(struct swi_synth_gen *g, uint64_t addr)
{
	size_t need, size;
	unsigned char *m;

	if (addr >= g->mem_lo)
		return 1;
	if (addr < g->window_hi - SYNTH_MAX_IMAGE) {
		fail(g, SW_E_LIMIT);
		return 0;
	}
	need = (size_t)(g->window_hi - addr);
	size = g->mem_size ? g->mem_size : 16384;
	while (size < need)
		size *= 2;
	if (size > SYNTH_MAX_IMAGE)
		size = SYNTH_MAX_IMAGE;
	m = malloc(size);
	if (!m) {
		fail(g, SW_E_NOMEM);
		return 0;
	}
	for (size_t i = 0; i + 8 <= size - g->mem_size; i += 8) {
		uint64_t v = swi_synth_rand(&g->junk);

		memcpy(m + i, &v, 8);
	}
	if (g->mem_size)
		memcpy(m + (size - g->mem_size), g->mem, g->mem_size);
	free(g->mem);
	g->mem = m;
	g->mem_size = size;
	g->mem_lo = g->window_hi - size;
	return 1;
}

/* Make the stack below the machine's SP reach down to addr. */
void swi_synth_stack_touch(struct swi_synth_gen *g, uint64_t addr)
{
	if (swi_synth_reserve(g, addr) && addr < g->low)
		g->low = addr;
}

void swi_synth_store(struct swi_synth_gen *g, uint64_t addr, unsigned size, uint64_t v)
{
	if (addr + size > g->window_hi || !swi_synth_reserve(g, addr)) {
		fail(g, SW_E_STATE);
		return;
	}
	swi_store_le(g->mem + (addr - g->mem_lo), size, v);
	if (addr < g->low)
		g->low = addr;
}

void swi_synth_store_ptr(struct swi_synth_gen *g, uint64_t addr, uint64_t v)
{
	swi_synth_store(g, addr, g->a->ptr, v);
}

static uint64_t load_ptr(struct swi_synth_gen *g, uint64_t addr)
{
	if (addr < g->mem_lo || addr + g->a->ptr > g->window_hi) {
		fail(g, SW_E_STATE);
		return 0;
	}
	return swi_load_le(g->mem + (addr - g->mem_lo), g->a->ptr);
}

/* ---- values ---------------------------------------------------------- */

uint64_t swi_synth_value(struct swi_synth_gen *g)
{
	return rnd64(g) & g->a->value_mask;
}

void swi_synth_randomize(struct swi_synth_gen *g, uint64_t mask)
{
	for (; mask; mask &= mask - 1)
		g->mc.r[__builtin_ctzll(mask)] = swi_synth_value(g);
}

uint64_t swi_synth_object(struct swi_synth_gen *g)
{
	uint64_t r = rnd64(g);

	/* "Objects" live at 0x4f..., 8-aligned: easy to spot in a dump. */
	if (g->a->ptr == 4)
		return 0x4f000000ULL + ((r & 0x1fffffULL) << 3);
	return 0x4f0000000000ULL + ((r & 0xffffffffULL) << 3);
}

/*
 * paciasp: a random non-zero authentication code in the arch's code bits,
 * the sign bit aside (for arm64 user space, bits 48-62).
 */
static uint64_t sign_address(struct swi_synth_gen *g, uint64_t v)
{
	uint64_t mask = g->a->ptrauth_mask & (g->a->ptrauth_mask >> 1);
	uint64_t code;

	do
		code = rnd64(g) & mask;
	while (code == 0 && mask != 0);
	return (v & ~g->a->ptrauth_mask) | code;
}

/* ---- running a method on the model machine ---------------------------- */

/* Restore reg from where the prolog saved it (the slot must be `slot` when non-zero). */
static void reload(struct swi_synth_gen *g, unsigned reg, uint64_t slot)
{
	struct swi_synth_machine *mc = &g->mc;

	/* Our epilogs mirror the prolog: the slot must hold this register. */
	if (!mc->saved_at[reg] || (slot && mc->saved_at[reg] != slot))
		fail(g, SW_E_STATE);
	mc->r[reg] = load_ptr(g, mc->saved_at[reg]);
	mc->saved_at[reg] = 0;
}

static void save(struct swi_synth_gen *g, unsigned reg, uint64_t slot)
{
	swi_synth_store_ptr(g, slot, g->mc.r[reg]);
	g->mc.saved_at[reg] = slot;
}

static void exec_op(struct swi_synth_gen *g, const struct swi_synth_op *op)
{
	struct swi_synth_machine *mc = &g->mc;
	uint64_t *sp = &mc->r[g->a->sp];
	uint64_t size = op->arg ? (uint64_t)op->arg : g->a->ptr;

	switch (op->kind) {
	case SWI_OP_PUSH:
		*sp -= size;
		save(g, op->reg, *sp);
		break;
	case SWI_OP_PUSH_PAIR:
		*sp -= (uint64_t)op->arg;
		save(g, op->reg, *sp);
		save(g, op->reg2, *sp + 8);
		break;
	case SWI_OP_ALLOC:
	case SWI_OP_PUSH_ARGS:
		*sp -= (uint64_t)op->arg;
		swi_synth_stack_touch(g, *sp);
		break;
	case SWI_OP_SET_FRAME:
		mc->r[op->reg] = *sp + (uint64_t)op->arg;
		break;
	case SWI_OP_SAVE:
		save(g, op->reg, *sp + (uint64_t)op->arg);
		break;
	case SWI_OP_SAVE_PAIR:
		save(g, op->reg, *sp + (uint64_t)op->arg);
		save(g, op->reg2, *sp + (uint64_t)op->arg + 8);
		break;
	case SWI_OP_SIGN:
		mc->r[g->a->lr] = sign_address(g, mc->r[g->a->lr]);
		break;
	case SWI_OP_RESTORE:
		reload(g, op->reg, 0);
		break;
	case SWI_OP_RESTORE_PAIR:
		reload(g, op->reg, 0);
		reload(g, op->reg2, 0);
		break;
	case SWI_OP_FREE:
	case SWI_OP_POP_ARGS:
	case SWI_OP_CALL_POPS:
		*sp += (uint64_t)op->arg;
		break;
	case SWI_OP_SP_FROM_FRAME:
		*sp = mc->r[g->a->fp] + (uint64_t)op->arg;
		break;
	case SWI_OP_POP:
		reload(g, op->reg, *sp);
		*sp += size;
		break;
	case SWI_OP_POP_PAIR:
		reload(g, op->reg, *sp);
		reload(g, op->reg2, *sp + 8);
		*sp += (uint64_t)op->arg;
		break;
	case SWI_OP_AUTH:
		mc->r[g->a->lr] &= ~g->a->ptrauth_mask;
		break;
	case SWI_OP_CALL:
		break;
	}
	*sp &= g->a->value_mask;
}

/*
 * Execute `m` from its entry up to code offset `off` (the instructions that
 * end at or before it).  ra_view: `off` is the return address of a call in
 * progress, so a callee that pops its arguments has not done so yet.
 * *frame_sp gets the SP the prolog left.  Returns 1 when `off` lies in a body.
 */
int swi_synth_run_to(struct swi_synth_gen *g, const struct swi_synth_method *m, uint32_t off,
                     int ra_view, uint64_t *frame_sp)
{
	struct swi_synth_machine *mc = &g->mc;
	const struct swi_synth_arch *a = g->a;
	uint64_t mine;

	*frame_sp = 0;
	for (unsigned i = 0; i < m->nops; i++) {
		if (m->ops[i].end > off)
			return 0;
		exec_op(g, &m->ops[i]);
	}
	if (off < m->prolog_end)
		return 0;
	*frame_sp = mc->r[a->sp];
	/* The body works: registers the method saved now hold its own values. */
	mine = 0;
	for (unsigned r = 0; r < a->nregs; r++)
		if (mc->saved_at[r] && !(r == a->fp && m->has_frame))
			mine |= SWI_BIT(r);
	swi_synth_randomize(g, mine | a->volatile_regs);
	for (unsigned k = 0; k < m->nepilogs; k++) {
		const struct swi_synth_epilog *e = &m->epilogs[k];

		if (off < e->start || off >= e->end)
			continue;
		for (unsigned i = 0; i < e->nops && e->ops[i].end <= off; i++)
			exec_op(g, &e->ops[i]);
		return 0;
	}
	/* The registers that hold a live reference here hold an object. */
	for (unsigned i = 0; i < m->ngc; i++)
		if (m->gc[i].in_reg && swi_synth_gc_live_near(&m->gc[i], off))
			mc->r[m->gc[i].reg] = swi_synth_object(g);
	/* Arguments pushed for calls (x86); each body ends with none pushed. */
	for (unsigned i = 0; i < m->nbody_ops && m->body_ops[i].end <= off; i++) {
		const struct swi_synth_op *op = &m->body_ops[i];

		if (!(ra_view && op->kind == SWI_OP_CALL_POPS && op->end == off))
			exec_op(g, op);
	}
	return 1;
}
