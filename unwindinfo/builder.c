/*
 * builder.c - the SWU encoder a JIT drives while it emits a method.
 *
 * Each call is checked at once against the frame state it changes (the
 * same swu_state_apply() the validator replays), so a JIT learns about a
 * bad description at the instruction that caused it.  The first error
 * sticks: every later call, sw_swu_finish() included, returns it until the
 * builder is reset, so a JIT that checks only the final status still never
 * gets a blob that silently lacks an op.
 *
 * Row ops (imported CFI) make the other form of blob: the first one turns
 * a builder that has described nothing yet into a row builder, which
 * then refuses prolog, epilog and body ops (and they refuse it).
 *
 * GC live ranges may come in any order: each location keeps its ranges
 * sorted, touching ones merged, and the locations stay in the order the
 * format wants (swu_gc_cmp), so finish only writes them out.
 *
 * A funclet's PSP slot (sw_swu_psp_slot) may be named at any time; finish
 * checks what depends on the whole method: that slots in the parent's
 * frame have it, and are live only where it holds the parent's CFA.
 *
 * Exception handling clauses (sw_swu_eh_clause) come in table order and
 * are kept as given; each is checked on arrival, the table as a whole by
 * finish, which knows the code size (swu_eh.c).
 */
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "array_grow.h"
#include "arch.h"
#include "swu_format.h"
#include "swu_state.h"
#include "swu_eh_format.h"

enum builder_phase {
	IN_PROLOG,              /* before sw_swu_end_prolog */
	IN_BODY,                /* between epilogs */
	IN_EPILOG,              /* between epilog_begin and epilog_end */
	IN_ROWS                 /* after the first row op */
};

struct builder_epilog {
	uint32_t start, end;
	uint32_t first_op, nops;        /* in b->eops */
};

struct gc_range {
	uint32_t start, end;
};

/* One GC location (a place and its flags) and its live ranges, sorted. */
struct gc_entry {
	sw_swu_gc_slot slot;
	struct gc_range *ranges;
	size_t nranges, cap;
};

struct sw_swu_builder {
	const struct swi_arch *arch;
	enum builder_phase phase;
	sw_status error;                /* the first error; sticks until reset */
	uint32_t last_end;              /* end of the last op (or epilog start) */
	uint32_t prolog_size;
	struct swu_state body;          /* the state after the prolog ops so far */
	struct swu_state epilog;        /* inside the open epilog */
	size_t nprolog;
	struct swu_op prolog[SW_SWU_MAX_OPS];
	struct builder_epilog *epilogs;
	size_t nepilogs, epilogs_cap;
	struct swu_op *eops;            /* every epilog's ops, in order */
	size_t neops, eops_cap;
	struct swu_state args;          /* the body state with the body ops so far */
	struct swu_op *bops;            /* body ops (argument pushes and pops) */
	size_t nbops, bops_cap;
	struct swu_state rows;          /* the state after the row ops so far */
	struct swu_op *rops;            /* row ops */
	size_t nrops, rops_cap;
	/* GC locations in swu_gc_cmp order; entries from ngc to gc_cap are
	 * spares that keep their range arrays for reuse. */
	struct gc_entry *gc;
	size_t ngc, gc_cap;
	int32_t psp;                    /* the PSP slot's CFA offset, 0 for none */
	sw_eh_clause *eh;               /* exception handling clauses, in table order */
	size_t neh, eh_cap;
};

SW_API sw_status sw_swu_builder_create(sw_swu_builder **out, sw_arch arch)
{
	const struct swi_arch *a;
	sw_swu_builder *b;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	a = swi_arch_get(arch);
	if (!a)
		return SW_E_INVAL;
	b = calloc(1, sizeof *b);
	if (!b)
		return SW_E_NOMEM;
	b->arch = a;
	sw_swu_builder_reset(b);
	*out = b;
	return SW_OK;
}

SW_API void sw_swu_builder_destroy(sw_swu_builder *b)
{
	if (!b)
		return;
	free(b->epilogs);
	free(b->eops);
	free(b->bops);
	free(b->rops);
	for (uint32_t i = 0; i < b->gc_cap; i++)
		free(b->gc[i].ranges);
	free(b->gc);
	free(b->eh);
	free(b);
}

SW_API void sw_swu_builder_reset(sw_swu_builder *b)
{
	if (!b)
		return;
	b->phase = IN_PROLOG;
	b->error = SW_OK;
	b->last_end = 0;
	b->prolog_size = 0;
	b->nprolog = 0;
	b->nepilogs = 0;
	b->neops = 0;
	b->nbops = 0;
	b->nrops = 0;
	for (uint32_t i = 0; i < b->ngc; i++)
		b->gc[i].nranges = 0;
	b->ngc = 0;
	b->psp = 0;
	b->neh = 0;
	swu_state_init(&b->body, b->arch);
	b->args = b->body;
	b->rows = b->body;
}

/* Remember the first error: later calls return it. */
static sw_status fail(sw_swu_builder *b, sw_status st)
{
	if (b->error == SW_OK)
		b->error = st;
	return st;
}

/* Grow *arr (of `size`-byte elements) to hold one more than `n`. */
static sw_status reserve(void **arr, size_t *cap, size_t n, size_t size)
{
	return swi_array_grow(arr, cap, n + 1, size);
}

/*
 * What every call that describes code checks first, in this order: a
 * builder, no earlier error, the phase the call belongs to, and an offset
 * `at` inside the largest method.  A builder that has described nothing
 * yet is in IN_PROLOG, and may still become a row builder.  SW_OK, or the
 * status to return.
 */
static sw_status enter(sw_swu_builder *b, enum builder_phase phase, uint32_t at)
{
	if (!b)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (b->phase != phase && !(phase == IN_ROWS && b->phase == IN_PROLOG && b->nprolog == 0))
		return fail(b, SW_E_STATE);
	if (at > SW_SWU_MAX_CODE_SIZE)
		return fail(b, SW_E_LIMIT);
	return SW_OK;
}

/*
 * Check `op` against a copy of *state, and keep both only if it holds: the
 * new state, and the op at ops[(*n)++] (the caller has made room).  So a
 * refused op changes nothing but the sticky error.
 */
static sw_status keep_op(sw_swu_builder *b, struct swu_state *state, struct swu_op *ops,
                         size_t *n, const struct swu_op *op)
{
	struct swu_state s = *state;
	sw_status st = swu_state_apply(&s, op);

	if (st != SW_OK)
		return fail(b, st);
	*state = s;
	ops[(*n)++] = *op;
	b->last_end = op->end;
	return SW_OK;
}

static sw_status prolog_op(sw_swu_builder *b, uint32_t code, uint32_t end,
                           uint32_t reg, uint32_t reg2, int64_t arg)
{
	struct swu_op op = { .end = end, .code = code, .reg = reg, .reg2 = reg2, .arg = arg };
	sw_status st;

	if ((st = enter(b, IN_PROLOG, end)) != SW_OK)
		return st;
	/* Each instruction ends past the previous one. */
	if (end <= b->last_end)
		return fail(b, SW_E_INVAL);
	if (b->nprolog >= SW_SWU_MAX_OPS)
		return fail(b, SW_E_LIMIT);
	return keep_op(b, &b->body, b->prolog, &b->nprolog, &op);
}

static sw_status epilog_op(sw_swu_builder *b, uint32_t code, uint32_t end,
                           uint32_t reg, uint32_t reg2, int64_t arg)
{
	struct swu_op op = { .end = end, .code = code, .reg = reg, .reg2 = reg2, .arg = arg };
	struct builder_epilog *e;
	sw_status st;

	if ((st = enter(b, IN_EPILOG, end)) != SW_OK)
		return st;
	e = &b->epilogs[b->nepilogs];
	/* Past the epilog's start; an equal end describes one instruction
	 * doing two things, such as leave (restore SP from RBP, pop RBP). */
	if (end <= e->start || end < b->last_end)
		return fail(b, SW_E_INVAL);
	if (e->nops >= SW_SWU_MAX_OPS)
		return fail(b, SW_E_LIMIT);
	if ((st = reserve((void **)&b->eops, &b->eops_cap, b->neops, sizeof *b->eops)) != SW_OK)
		return fail(b, st);
	if ((st = keep_op(b, &b->epilog, b->eops, &b->neops, &op)) != SW_OK)
		return st;
	e->nops++;
	return SW_OK;
}

SW_API sw_status sw_swu_push_reg(sw_swu_builder *b, uint32_t end, unsigned reg)
{
	return prolog_op(b, SWU_OP_PUSH, end, reg, 0, 0);
}

SW_API sw_status sw_swu_alloc_stack(sw_swu_builder *b, uint32_t end, uint32_t size)
{
	return prolog_op(b, SWU_OP_ALLOC, end, 0, 0, size);
}

SW_API sw_status sw_swu_set_frame(sw_swu_builder *b, uint32_t end, unsigned reg, uint32_t sp_offset)
{
	return prolog_op(b, SWU_OP_SET_FRAME, end, reg, 0, sp_offset);
}

SW_API sw_status sw_swu_save_reg(sw_swu_builder *b, uint32_t end, unsigned reg, uint32_t sp_offset)
{
	return prolog_op(b, SWU_OP_SAVE_REG, end, reg, 0, sp_offset);
}

SW_API sw_status sw_swu_push_reg_pair(sw_swu_builder *b, uint32_t end, unsigned reg1,
                                      unsigned reg2, uint32_t size)
{
	return prolog_op(b, SWU_OP_PUSH_PAIR, end, reg1, reg2, size);
}

SW_API sw_status sw_swu_push_reg_sized(sw_swu_builder *b, uint32_t end, unsigned reg, uint32_t size)
{
	return prolog_op(b, SWU_OP_PUSH_SIZED, end, reg, 0, size);
}

SW_API sw_status sw_swu_save_reg_pair(sw_swu_builder *b, uint32_t end, unsigned reg1,
                                      unsigned reg2, uint32_t sp_offset)
{
	return prolog_op(b, SWU_OP_SAVE_PAIR, end, reg1, reg2, sp_offset);
}

SW_API sw_status sw_swu_sign_return_address(sw_swu_builder *b, uint32_t end)
{
	return prolog_op(b, SWU_OP_SIGN_RA, end, 0, 0, 0);
}

SW_API sw_status sw_swu_end_prolog(sw_swu_builder *b, uint32_t end)
{
	sw_status st;

	if ((st = enter(b, IN_PROLOG, end)) != SW_OK)
		return st;
	if (end < b->last_end)
		return fail(b, SW_E_INVAL);
	b->prolog_size = end;
	b->last_end = end;
	b->args = b->body;
	b->phase = IN_BODY;
	return SW_OK;
}

SW_API sw_status sw_swu_epilog_begin(sw_swu_builder *b, uint32_t start)
{
	struct builder_epilog *e;
	sw_status st;

	if ((st = enter(b, IN_BODY, start)) != SW_OK)
		return st;
	/* After the prolog and after the previous epilog's end. */
	if (start < b->last_end)
		return fail(b, SW_E_INVAL);
	/* The epilog starts from the body state: its arguments are popped. */
	if (b->args.args != 0)
		return fail(b, SW_E_INVAL);
	if (b->nepilogs >= SW_SWU_MAX_EPILOGS)
		return fail(b, SW_E_LIMIT);
	st = reserve((void **)&b->epilogs, &b->epilogs_cap, b->nepilogs, sizeof *b->epilogs);
	if (st != SW_OK)
		return fail(b, st);
	e = &b->epilogs[b->nepilogs];
	e->start = start;
	e->end = start;
	e->first_op = b->neops;
	e->nops = 0;
	b->epilog = b->body;
	b->last_end = start;
	b->phase = IN_EPILOG;
	return SW_OK;
}

SW_API sw_status sw_swu_free_stack(sw_swu_builder *b, uint32_t end, uint32_t size)
{
	return epilog_op(b, SWU_OP_FREE, end, 0, 0, size);
}

SW_API sw_status sw_swu_restore_sp_from_frame(sw_swu_builder *b, uint32_t end, int32_t frame_offset)
{
	return epilog_op(b, SWU_OP_RESTORE_SP, end, 0, 0, frame_offset);
}

SW_API sw_status sw_swu_pop_reg(sw_swu_builder *b, uint32_t end, unsigned reg)
{
	return epilog_op(b, SWU_OP_POP, end, reg, 0, 0);
}

SW_API sw_status sw_swu_restore_reg(sw_swu_builder *b, uint32_t end, unsigned reg)
{
	return epilog_op(b, SWU_OP_RESTORE_REG, end, reg, 0, 0);
}

SW_API sw_status sw_swu_pop_reg_pair(sw_swu_builder *b, uint32_t end, unsigned reg1,
                                     unsigned reg2, uint32_t size)
{
	return epilog_op(b, SWU_OP_POP_PAIR, end, reg1, reg2, size);
}

SW_API sw_status sw_swu_pop_reg_sized(sw_swu_builder *b, uint32_t end, unsigned reg, uint32_t size)
{
	return epilog_op(b, SWU_OP_POP_SIZED, end, reg, 0, size);
}

SW_API sw_status sw_swu_restore_reg_pair(sw_swu_builder *b, uint32_t end, unsigned reg1, unsigned reg2)
{
	return epilog_op(b, SWU_OP_RESTORE_PAIR, end, reg1, reg2, 0);
}

SW_API sw_status sw_swu_auth_return_address(sw_swu_builder *b, uint32_t end)
{
	return epilog_op(b, SWU_OP_AUTH_RA, end, 0, 0, 0);
}

SW_API sw_status sw_swu_epilog_end(sw_swu_builder *b, uint32_t end)
{
	struct builder_epilog *e;
	sw_status st;

	if ((st = enter(b, IN_EPILOG, end)) != SW_OK)
		return st;
	e = &b->epilogs[b->nepilogs];
	/* The return (or tail jump) is one more instruction after the last op. */
	if (end <= b->last_end || end <= e->start)
		return fail(b, SW_E_INVAL);
	/* By the return, every push is popped and every saved register reloaded. */
	if (!swu_state_is_entry(&b->epilog))
		return fail(b, SW_E_INVAL);
	e->end = end;
	b->nepilogs++;
	b->last_end = end;
	b->phase = IN_BODY;
	return SW_OK;
}

/* A body op: after the prolog, between epilogs, each past the last. */
static sw_status body_op(sw_swu_builder *b, uint32_t code, uint32_t end, uint32_t size)
{
	struct swu_op op = { .end = end, .code = code, .arg = size };
	sw_status st;

	if ((st = enter(b, IN_BODY, end)) != SW_OK)
		return st;
	if (end <= b->last_end)
		return fail(b, SW_E_INVAL);
	if ((st = reserve((void **)&b->bops, &b->bops_cap, b->nbops, sizeof *b->bops)) != SW_OK)
		return fail(b, st);
	return keep_op(b, &b->args, b->bops, &b->nbops, &op);
}

SW_API sw_status sw_swu_push_args(sw_swu_builder *b, uint32_t end, uint32_t size)
{
	return body_op(b, SWU_OP_PUSH_ARGS, end, size);
}

SW_API sw_status sw_swu_pop_args(sw_swu_builder *b, uint32_t end, uint32_t size)
{
	return body_op(b, SWU_OP_POP_ARGS, end, size);
}

SW_API sw_status sw_swu_call_pops_args(sw_swu_builder *b, uint32_t end, uint32_t size)
{
	return body_op(b, SWU_OP_CALL_POPS, end, size);
}

/* A row op: at or after the last one, before any other kind of op. */
static sw_status row_op2(sw_swu_builder *b, uint32_t code, uint32_t end, uint32_t reg,
                         uint32_t reg2, int64_t arg)
{
	struct swu_op op = { .end = end, .code = code, .reg = reg, .reg2 = reg2, .arg = arg };
	sw_status st;

	if ((st = enter(b, IN_ROWS, end)) != SW_OK)
		return st;
	if (end < b->last_end)
		return fail(b, SW_E_INVAL);
	if (b->nrops >= SW_SWU_MAX_ROW_OPS)
		return fail(b, SW_E_LIMIT);
	if ((st = reserve((void **)&b->rops, &b->rops_cap, b->nrops, sizeof *b->rops)) != SW_OK)
		return fail(b, st);
	if ((st = keep_op(b, &b->rows, b->rops, &b->nrops, &op)) != SW_OK)
		return st;
	b->phase = IN_ROWS;
	return SW_OK;
}

static sw_status row_op(sw_swu_builder *b, uint32_t code, uint32_t end, uint32_t reg, int64_t arg)
{
	return row_op2(b, code, end, reg, 0, arg);
}

SW_API sw_status sw_swu_def_cfa(sw_swu_builder *b, uint32_t end, unsigned reg, int32_t offset)
{
	return row_op(b, SWU_OP_DEF_CFA, end, reg, offset);
}

SW_API sw_status sw_swu_def_cfa_offset(sw_swu_builder *b, uint32_t end, int32_t offset)
{
	return row_op(b, SWU_OP_CFA_OFFSET, end, 0, offset);
}

SW_API sw_status sw_swu_saved_at(sw_swu_builder *b, uint32_t end, unsigned reg, int32_t cfa_offset)
{
	return row_op(b, SWU_OP_SAVED_AT, end, reg, cfa_offset);
}

SW_API sw_status sw_swu_same_value(sw_swu_builder *b, uint32_t end, unsigned reg)
{
	return row_op(b, SWU_OP_SAME_VALUE, end, reg, 0);
}

SW_API sw_status sw_swu_def_cfa_deref(sw_swu_builder *b, uint32_t end, unsigned reg, int32_t offset)
{
	return row_op(b, SWU_OP_CFA_DEREF, end, reg, offset);
}

SW_API sw_status sw_swu_saved_at_reg(sw_swu_builder *b, uint32_t end, unsigned reg,
                                     unsigned base_reg, int32_t offset)
{
	return row_op2(b, SWU_OP_SAVED_AT_REG, end, reg, base_reg, offset);
}

/* ---- GC information ---- */

/* The first entry not ordered before `slot` (with or without flags). */
static uint32_t gc_find(const sw_swu_builder *b, const sw_swu_gc_slot *slot, bool flags)
{
	size_t i;

	SWI_SEARCH(i, b->ngc, mid, swu_gc_cmp(&b->gc[mid].slot, slot, flags) < 0);
	return (uint32_t)i;
}

/* The first range of `e` that ends after `start`. */
static uint32_t range_find(const struct gc_entry *e, uint32_t start)
{
	size_t i;

	SWI_SEARCH(i, e->nranges, mid, e->ranges[mid].end <= start);
	return (uint32_t)i;
}

static bool range_overlaps(const struct gc_entry *e, uint32_t start, uint32_t end)
{
	uint32_t i = range_find(e, start);

	return i < e->nranges && e->ranges[i].start < end;
}

/*
 * Add [start, end) to entry `e`, merging with the ranges it touches; the
 * caller has checked that it overlaps none and that one more fits.
 */
static void range_insert(struct gc_entry *e, uint32_t start, uint32_t end)
{
	uint32_t i = range_find(e, start);     /* ranges before i end at or before start */
	bool join_prev = i > 0 && e->ranges[i - 1].end == start;
	bool join_next = i < e->nranges && e->ranges[i].start == end;

	if (join_prev && join_next) {
		e->ranges[i - 1].end = e->ranges[i].end;
		memmove(e->ranges + i, e->ranges + i + 1, (e->nranges - i - 1) * sizeof *e->ranges);
		e->nranges--;
	} else if (join_prev) {
		e->ranges[i - 1].end = end;
	} else if (join_next) {
		e->ranges[i].start = start;
	} else {
		memmove(e->ranges + i + 1, e->ranges + i, (e->nranges - i) * sizeof *e->ranges);
		e->ranges[i] = (struct gc_range){ start, end };
		e->nranges++;
	}
}

/* Room for one more entry; new spares start empty. */
static sw_status gc_reserve(sw_swu_builder *b)
{
	size_t old = b->gc_cap;
	sw_status st;

	if (b->ngc < b->gc_cap)
		return SW_OK;
	if ((st = reserve((void **)&b->gc, &b->gc_cap, b->ngc, sizeof *b->gc)) != SW_OK)
		return st;
	memset(b->gc + old, 0, (b->gc_cap - old) * sizeof *b->gc);
	return SW_OK;
}

static sw_status gc_add(sw_swu_builder *b, const sw_swu_gc_slot *slot, uint32_t start, uint32_t end)
{
	uint32_t at, i;
	struct gc_entry *e;
	sw_status st;

	/* Every other place with these flags' place: one value at a time. */
	for (i = gc_find(b, slot, false); i < b->ngc && !swu_gc_cmp(&b->gc[i].slot, slot, false); i++)
		if (range_overlaps(&b->gc[i], start, end))
			return fail(b, SW_E_INVAL);
	at = gc_find(b, slot, true);
	if (at < b->ngc && !swu_gc_cmp(&b->gc[at].slot, slot, true)) {
		e = &b->gc[at];
	} else {
		struct gc_entry spare;

		if (b->ngc >= SW_SWU_MAX_GC_LOCATIONS)
			return fail(b, SW_E_LIMIT);
		if ((st = gc_reserve(b)) != SW_OK)
			return fail(b, st);
		/* The spare past the end, with room for a range, moves into place:
		 * no entry is ever left without one. */
		spare = b->gc[b->ngc];
		if ((st = reserve((void **)&spare.ranges, &spare.cap, 0, sizeof *spare.ranges)) != SW_OK)
			return fail(b, st);
		memmove(b->gc + at + 1, b->gc + at, (b->ngc - at) * sizeof *b->gc);
		spare.slot = *slot;
		spare.nranges = 0;
		b->gc[at] = spare;
		b->ngc++;
		e = &b->gc[at];
	}
	/* A range that touches another only extends it. */
	i = range_find(e, start);
	if (e->nranges >= SW_SWU_MAX_GC_RANGES &&
	    !(i > 0 && e->ranges[i - 1].end == start) && !(i < e->nranges && e->ranges[i].start == end))
		return fail(b, SW_E_LIMIT);
	if ((st = reserve((void **)&e->ranges, &e->cap, e->nranges, sizeof *e->ranges)) != SW_OK)
		return fail(b, st);
	range_insert(e, start, end);
	return SW_OK;
}

/* What both GC calls check first. */
static sw_status gc_args(sw_swu_builder *b, uint32_t flags, uint32_t start, uint32_t end)
{
	if (!b)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (flags & ~(uint32_t)SWU_GC_FLAGS)
		return fail(b, SW_E_INVAL);
	if (end > SW_SWU_MAX_CODE_SIZE)
		return fail(b, SW_E_LIMIT);
	if (start >= end)
		return fail(b, SW_E_INVAL);
	return SW_OK;
}

SW_API sw_status sw_swu_gc_stack_slot(sw_swu_builder *b, int32_t cfa_offset, uint32_t flags,
                                      uint32_t start, uint32_t end)
{
	sw_swu_gc_slot slot = { 0, 0, cfa_offset, flags };
	sw_status st;

	if ((st = gc_args(b, flags, start, end)) != SW_OK)
		return st;
	if ((st = swu_gc_check_slot(b->arch, cfa_offset)) != SW_OK)
		return fail(b, st);
	return gc_add(b, &slot, start, end);
}

SW_API sw_status sw_swu_gc_register(sw_swu_builder *b, unsigned reg, uint32_t flags,
                                    uint32_t start, uint32_t end)
{
	sw_swu_gc_slot slot = { 1, reg, 0, flags };
	sw_status st;

	if ((st = gc_args(b, flags, start, end)) != SW_OK)
		return st;
	/* A register is the funclet's own; only a stack slot lies in the parent's frame. */
	if (flags & SW_GC_PARENT_FRAME)
		return fail(b, SW_E_INVAL);
	if ((st = swu_gc_check_register(b->arch, reg)) != SW_OK)
		return fail(b, st);
	return gc_add(b, &slot, start, end);
}

SW_API sw_status sw_swu_psp_slot(sw_swu_builder *b, int32_t cfa_offset)
{
	sw_status st;

	if (!b)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	/* The slot is the funclet's own: below the CFA, and not the return address's. */
	if (cfa_offset >= 0)
		return fail(b, SW_E_INVAL);
	if ((st = swu_gc_check_slot(b->arch, cfa_offset)) != SW_OK)
		return fail(b, st);
	b->psp = cfa_offset;
	return SW_OK;
}

/*
 * Slots in the parent's frame need the PSP slot, and are live only where
 * it holds the parent's CFA: in the body, outside the epilogs.
 */
static bool parent_slots_ok(const sw_swu_builder *b, uint32_t prolog_size)
{
	for (uint32_t i = 0; i < b->ngc; i++) {
		const struct gc_entry *e = &b->gc[i];

		if (!(e->slot.flags & SW_GC_PARENT_FRAME))
			continue;
		if (!b->psp || e->ranges[0].start < prolog_size)
			return false;
		for (uint32_t j = 0; j < b->nepilogs; j++)
			for (uint32_t k = 0; k < e->nranges; k++)
				if (e->ranges[k].start < b->epilogs[j].end &&
				    b->epilogs[j].start < e->ranges[k].end)
					return false;
	}
	return true;
}

/* The GC section: each location's head, then its ranges as deltas. */
static void encode_gc(const sw_swu_builder *b, struct swu_writer *w)
{
	for (uint32_t i = 0; i < b->ngc; i++) {
		const struct gc_entry *e = &b->gc[i];
		uint32_t prev = 0;

		swu_put_gc_loc(w, b->arch, &e->slot, e->nranges);
		for (uint32_t j = 0; j < e->nranges; j++) {
			swu_put_uleb(w, e->ranges[j].start - prev);
			swu_put_uleb(w, e->ranges[j].end - e->ranges[j].start);
			prev = e->ranges[j].end;
		}
	}
}

SW_API sw_status sw_swu_eh_clause(sw_swu_builder *b, const sw_eh_clause *clause)
{
	sw_status st;

	if (!b || !clause)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (swu_eh_check_clause(clause) != SW_OK)
		return fail(b, SW_E_INVAL);
	if (b->neh >= SW_SWU_MAX_EH_CLAUSES)
		return fail(b, SW_E_LIMIT);
	if ((st = reserve((void **)&b->eh, &b->eh_cap, b->neh, sizeof *b->eh)) != SW_OK)
		return fail(b, st);
	b->eh[b->neh++] = *clause;
	return SW_OK;
}

/* The unwind ops: prolog ops, epilog table, body ops; or the row ops. */
static void encode_ops(const sw_swu_builder *b, struct swu_writer *w)
{
	uint32_t prev = 0;

	if (b->nrops)
		swu_put_row_ops(w, b->arch, b->rops, b->nrops);

	for (uint32_t i = 0; i < b->nprolog; i++) {
		swu_put_op(w, prev, &b->prolog[i]);
		prev = b->prolog[i].end;
	}
	prev = b->prolog_size;
	for (uint32_t i = 0; i < b->nepilogs; i++) {
		const struct builder_epilog *e = &b->epilogs[i];
		/* An epilog of a lone return has no ops (and eops may be NULL). */
		const struct swu_op *ops = e->nops ? b->eops + e->first_op : NULL;
		struct swu_writer count = { NULL, 0, 0 };
		uint32_t op_prev = e->start;

		/* The op bytes' size comes first: measure them. */
		for (uint32_t j = 0; j < e->nops; j++) {
			swu_put_op(&count, op_prev, &ops[j]);
			op_prev = ops[j].end;
		}
		swu_put_uleb(w, e->start - prev);
		swu_put_uleb(w, e->end - e->start);
		swu_put_uleb(w, e->nops);
		swu_put_uleb(w, (uint32_t)count.len);
		op_prev = e->start;
		for (uint32_t j = 0; j < e->nops; j++) {
			swu_put_op(w, op_prev, &ops[j]);
			op_prev = ops[j].end;
		}
		prev = e->end;
	}
	prev = b->prolog_size;
	for (uint32_t i = 0; i < b->nbops; i++) {
		swu_put_op(w, prev, &b->bops[i]);
		prev = b->bops[i].end;
	}
}

/* Encode everything; the writer counts the bytes even past its capacity. */
static void encode(const sw_swu_builder *b, uint32_t code_size, struct swu_writer *w)
{
	swu_put_byte(w, SWU_MAGIC);
	swu_put_byte(w, SWU_VERSION << 4 | (unsigned)b->arch->arch);
	swu_put_uleb(w, (b->nbops ? SWU_FLAG_BODY_OPS : 0) | (b->ngc ? SWU_FLAG_GC : 0) |
	             (b->nrops ? SWU_FLAG_ROWS | SWU_FLAG_COMPACT : 0) | (b->psp ? SWU_FLAG_PSP : 0) |
	             (b->neh ? SWU_FLAG_EH : 0));
	swu_put_uleb(w, code_size);
	if (b->nrops) {
		swu_put_uleb(w, b->nrops);
	} else {
		swu_put_uleb(w, b->prolog_size);
		swu_put_uleb(w, b->nprolog);
		swu_put_uleb(w, b->nepilogs);
	}
	if (b->nbops)
		swu_put_uleb(w, b->nbops);
	if (b->psp)
		swu_put_sleb(w, b->psp / (int32_t)b->arch->ptr_size);
	if (b->ngc) {
		/* Where the GC section begins: measure the ops. */
		struct swu_writer count = { NULL, 0, 0 };

		encode_ops(b, &count);
		swu_put_uleb(w, b->ngc);
		swu_put_uleb(w, (uint32_t)count.len);
	}
	if (b->neh)
		swu_eh_put_section(w, b->eh, (uint32_t)b->neh);
	encode_ops(b, w);
	encode_gc(b, w);
}

SW_API sw_status sw_swu_finish(sw_swu_builder *b, uint32_t code_size,
                               void *buf, size_t cap, size_t *len)
{
	struct swu_writer w = { buf, buf ? cap : 0, 0 };
	uint32_t prolog_size;

	if (!b || !len)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (b->phase == IN_EPILOG)
		return SW_E_STATE;
	/* A method with no prolog ops need not call sw_swu_end_prolog. */
	if (b->phase == IN_PROLOG && b->nprolog > 0)
		return SW_E_STATE;
	if (code_size > SW_SWU_MAX_CODE_SIZE)
		return SW_E_LIMIT;
	prolog_size = b->phase == IN_PROLOG || b->phase == IN_ROWS ? 0 : b->prolog_size;
	if (code_size == 0 || code_size < prolog_size ||
	    (b->nrops && code_size < b->rops[b->nrops - 1].end) ||
	    (b->nepilogs && code_size < b->epilogs[b->nepilogs - 1].end) ||
	    (b->nbops && code_size < b->bops[b->nbops - 1].end))
		return SW_E_INVAL;
	/* The method ends with its outgoing arguments popped. */
	if (b->args.args != 0)
		return SW_E_INVAL;
	/* Every live range lies inside the method. */
	for (uint32_t i = 0; i < b->ngc; i++)
		if (b->gc[i].ranges[b->gc[i].nranges - 1].end > code_size)
			return SW_E_INVAL;
	/* A PSP slot belongs to a method described in the prolog form, in its body frame. */
	if (b->psp && (b->nrops || !swu_state_free_slot(&b->body, b->psp)))
		return SW_E_INVAL;
	if (!parent_slots_ok(b, prolog_size))
		return SW_E_INVAL;
	/* The clauses against the main body: funclets past it, nesting, order. */
	if (b->neh && swu_eh_check_table(b->eh, NULL, (uint32_t)b->neh, code_size) != SW_OK)
		return SW_E_INVAL;
	/* finish leaves the builder as it was, so it may be called again. */
	encode(b, code_size, &w);
	*len = w.len;
	return w.len <= w.cap ? SW_OK : SW_E_LIMIT;
}
