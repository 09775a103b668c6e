/*
 * builder.c - the SWU encoder a JIT drives while it emits a method.
 *
 * Each call is checked at once against the frame state it changes (the
 * same swu_state_apply() the validator replays), so a JIT learns about a
 * bad description at the instruction that caused it.  The first error
 * sticks: every later call, sw_swu_finish() included, returns it until the
 * builder is reset, so a JIT that checks only the final status still never
 * gets a blob that silently lacks an op.
 */
#include <stdlib.h>
#include "internal.h"
#include "swu_format.h"
#include "swu_state.h"

enum builder_phase {
	IN_PROLOG,              /* before sw_swu_end_prolog */
	IN_BODY,                /* between epilogs */
	IN_EPILOG               /* between epilog_begin and epilog_end */
};

struct builder_epilog {
	uint32_t start, end;
	uint32_t first_op, nops;        /* in b->eops */
};

struct sw_swu_builder {
	const struct swi_arch *arch;
	enum builder_phase phase;
	sw_status error;                /* the first error; sticks until reset */
	uint32_t last_end;              /* end of the last op (or epilog start) */
	uint32_t prolog_size;
	struct swu_state body;          /* the state after the prolog ops so far */
	struct swu_state epilog;        /* inside the open epilog */
	uint32_t nprolog;
	struct swu_op prolog[SW_SWU_MAX_OPS];
	struct builder_epilog *epilogs;
	uint32_t nepilogs, epilogs_cap;
	struct swu_op *eops;            /* every epilog's ops, in order */
	uint32_t neops, eops_cap;
	struct swu_state args;          /* the body state with the body ops so far */
	struct swu_op *bops;            /* body ops (argument pushes and pops) */
	uint32_t nbops, bops_cap;
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
	swu_state_init(&b->body, b->arch);
	b->args = b->body;
}

/* Remember the first error: later calls return it. */
static sw_status fail(sw_swu_builder *b, sw_status st)
{
	if (b->error == SW_OK)
		b->error = st;
	return st;
}

/* Grow *arr (of `size`-byte elements) to hold one more than `n`. */
static sw_status reserve(void **arr, uint32_t *cap, uint32_t n, size_t size)
{
	uint32_t ncap;
	void *p;

	if (n < *cap)
		return SW_OK;
	ncap = *cap ? *cap * 2 : 8;
	p = realloc(*arr, (size_t)ncap * size);
	if (!p)
		return SW_E_NOMEM;
	*arr = p;
	*cap = ncap;
	return SW_OK;
}

static sw_status prolog_op(sw_swu_builder *b, uint32_t code, uint32_t end,
                           uint32_t reg, uint32_t reg2, int64_t arg)
{
	struct swu_op op = { .end = end, .code = code, .reg = reg, .reg2 = reg2, .arg = arg };
	struct swu_state s;
	sw_status st;

	if (!b)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (b->phase != IN_PROLOG)
		return fail(b, SW_E_STATE);
	if (end > SW_SWU_MAX_CODE_SIZE)
		return fail(b, SW_E_LIMIT);
	/* Each instruction ends past the previous one. */
	if (end <= b->last_end)
		return fail(b, SW_E_INVAL);
	if (b->nprolog >= SW_SWU_MAX_OPS)
		return fail(b, SW_E_LIMIT);
	s = b->body;
	if ((st = swu_state_apply(&s, &op)) != SW_OK)
		return fail(b, st);
	b->body = s;
	b->prolog[b->nprolog++] = op;
	b->last_end = end;
	return SW_OK;
}

static sw_status epilog_op(sw_swu_builder *b, uint32_t code, uint32_t end,
                           uint32_t reg, uint32_t reg2, int64_t arg)
{
	struct swu_op op = { .end = end, .code = code, .reg = reg, .reg2 = reg2, .arg = arg };
	struct builder_epilog *e;
	struct swu_state s;
	sw_status st;

	if (!b)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (b->phase != IN_EPILOG)
		return fail(b, SW_E_STATE);
	e = &b->epilogs[b->nepilogs];
	if (end > SW_SWU_MAX_CODE_SIZE)
		return fail(b, SW_E_LIMIT);
	/* Past the epilog's start; an equal end describes one instruction
	 * doing two things, such as leave (restore SP from RBP, pop RBP). */
	if (end <= e->start || end < b->last_end)
		return fail(b, SW_E_INVAL);
	if (e->nops >= SW_SWU_MAX_OPS)
		return fail(b, SW_E_LIMIT);
	if ((st = reserve((void **)&b->eops, &b->eops_cap, b->neops, sizeof *b->eops)) != SW_OK)
		return fail(b, st);
	s = b->epilog;
	if ((st = swu_state_apply(&s, &op)) != SW_OK)
		return fail(b, st);
	b->epilog = s;
	b->eops[b->neops++] = op;
	e->nops++;
	b->last_end = end;
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
	if (!b)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (b->phase != IN_PROLOG)
		return fail(b, SW_E_STATE);
	if (end > SW_SWU_MAX_CODE_SIZE)
		return fail(b, SW_E_LIMIT);
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

	if (!b)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (b->phase != IN_BODY)
		return fail(b, SW_E_STATE);
	if (start > SW_SWU_MAX_CODE_SIZE)
		return fail(b, SW_E_LIMIT);
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

	if (!b)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (b->phase != IN_EPILOG)
		return fail(b, SW_E_STATE);
	e = &b->epilogs[b->nepilogs];
	if (end > SW_SWU_MAX_CODE_SIZE)
		return fail(b, SW_E_LIMIT);
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
	struct swu_state s;
	sw_status st;

	if (!b)
		return SW_E_INVAL;
	if (b->error != SW_OK)
		return b->error;
	if (b->phase != IN_BODY)
		return fail(b, SW_E_STATE);
	if (end > SW_SWU_MAX_CODE_SIZE)
		return fail(b, SW_E_LIMIT);
	if (end <= b->last_end)
		return fail(b, SW_E_INVAL);
	s = b->args;
	if ((st = swu_state_apply(&s, &op)) != SW_OK)
		return fail(b, st);
	if ((st = reserve((void **)&b->bops, &b->bops_cap, b->nbops, sizeof *b->bops)) != SW_OK)
		return fail(b, st);
	b->args = s;
	b->bops[b->nbops++] = op;
	b->last_end = end;
	return SW_OK;
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

/* Encode everything; the writer counts the bytes even past its capacity. */
static void encode(const sw_swu_builder *b, uint32_t code_size, struct swu_writer *w)
{
	uint32_t prev = 0;

	swu_put_byte(w, SWU_MAGIC);
	swu_put_byte(w, SWU_VERSION << 4 | (unsigned)b->arch->arch);
	swu_put_uleb(w, b->nbops ? SWU_FLAG_BODY_OPS : 0);
	swu_put_uleb(w, code_size);
	swu_put_uleb(w, b->prolog_size);
	swu_put_uleb(w, b->nprolog);
	swu_put_uleb(w, b->nepilogs);
	if (b->nbops)
		swu_put_uleb(w, b->nbops);
	for (uint32_t i = 0; i < b->nprolog; i++) {
		swu_put_op(w, prev, &b->prolog[i]);
		prev = b->prolog[i].end;
	}
	prev = b->prolog_size;
	for (uint32_t i = 0; i < b->nepilogs; i++) {
		const struct builder_epilog *e = &b->epilogs[i];
		const struct swu_op *ops = b->eops + e->first_op;
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
	prolog_size = b->phase == IN_PROLOG ? 0 : b->prolog_size;
	if (code_size == 0 || code_size < prolog_size ||
	    (b->nepilogs && code_size < b->epilogs[b->nepilogs - 1].end) ||
	    (b->nbops && code_size < b->bops[b->nbops - 1].end))
		return SW_E_INVAL;
	/* The method ends with its outgoing arguments popped. */
	if (b->args.args != 0)
		return SW_E_INVAL;
	/* finish leaves the builder as it was, so it may be called again. */
	encode(b, code_size, &w);
	*len = w.len;
	return w.len <= w.cap ? SW_OK : SW_E_LIMIT;
}
