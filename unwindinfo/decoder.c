/*
 * decoder.c - the unwind rule at an instruction offset, and the validator.
 *
 * sw_swu_decode() is on the walk's hot path: it runs once per frame, maybe
 * in a signal handler.  It allocates nothing and reads the blob once, front
 * to back, stopping as soon as it knows the answer: in the prolog at the
 * first op that has not executed yet; in the body at the first epilog that
 * starts beyond the offset, skipping the ops of the epilogs before it (a
 * blob with body ops is read on to them, skipping every epilog).  It
 * checks what it reads but not what it skips; sw_swu_validate(), which the
 * code map runs at registration, checks everything.
 */
#include "internal.h"
#include "swu_format.h"
#include "swu_state.h"

SW_API sw_status sw_swu_decode_header(const void *blob, size_t size, sw_swu_header *out)
{
	struct swu_reader r;
	const struct swi_arch *arch;
	sw_swu_header h;
	sw_status st;

	if (!out)
		return SW_E_INVAL;
	st = swu_read_header(&r, blob, size, &h, &arch);
	if (st == SW_OK)
		*out = h;
	return st;
}

/* Replay an epilog's ops that end at or before `offset` over the body state. */
static sw_status replay_epilog(struct swu_state *s, const struct swu_epilog *e,
                               uint32_t offset)
{
	struct swu_reader ops = e->ops;
	uint32_t prev = e->start;
	struct swu_op op;
	sw_status st;

	for (uint32_t i = 0; i < e->nops; i++) {
		/* An epilog's first op ends past its start; `leave` may share an end. */
		st = swu_read_op(&ops, prev, i == 0, &op);
		if (st != SW_OK)
			return st == SW_E_TRUNCATED ? SW_E_BADMETA : st;
		if (op.end >= e->end || !swu_op_is_epilog(op.code))
			return SW_E_BADMETA;
		if (op.end > offset)
			break;
		if (swu_state_apply(s, &op) != SW_OK)
			return SW_E_BADMETA;
		prev = op.end;
	}
	return SW_OK;
}

/*
 * Apply the body ops that have executed at `offset`: those ending at or
 * before it, except, for a return address (`at_return`), a callee-pops
 * call ending exactly there, since that call has not returned yet.
 */
static sw_status replay_body(struct swu_reader *r, const sw_swu_header *h,
                             struct swu_state *s, uint32_t offset, bool at_return)
{
	uint32_t prev = h->prolog_size;
	struct swu_op op;
	sw_status st;

	for (uint32_t i = 0; i < h->body_ops; i++) {
		if ((st = swu_read_op(r, prev, 1, &op)) != SW_OK)
			return st;
		if (op.end > h->code_size || !swu_op_is_body(op.code))
			return SW_E_BADMETA;
		if (op.end > offset || (op.end == offset && at_return && op.code == SWU_OP_CALL_POPS))
			break;
		if (swu_state_apply(s, &op) != SW_OK)
			return SW_E_BADMETA;
		prev = op.end;
	}
	return SW_OK;
}

static sw_status decode(const void *blob, size_t size, uint32_t offset, bool at_return,
                        sw_swu_rule *out)
{
	const struct swi_arch *arch;
	struct swu_reader r;
	struct swu_state s;
	struct swu_epilog e;
	struct swu_op op;
	sw_swu_header h;
	sw_swu_region region = SW_SWU_BODY;
	uint32_t prev = 0, i;
	sw_status st;

	if (!out)
		return SW_E_INVAL;
	if ((st = swu_read_header(&r, blob, size, &h, &arch)) != SW_OK)
		return st;
	if (offset > h.code_size)
		return SW_E_BADIP;

	swu_state_init(&s, arch);
	for (i = 0; i < h.prolog_ops; i++) {
		if ((st = swu_read_op(&r, prev, 1, &op)) != SW_OK)
			return st;
		if (op.end > h.prolog_size || !swu_op_is_prolog(op.code))
			return SW_E_BADMETA;
		if (op.end > offset)
			break;          /* in the prolog, before this instruction ran */
		if (swu_state_apply(&s, &op) != SW_OK)
			return SW_E_BADMETA;
		prev = op.end;
	}
	if (offset < h.prolog_size) {
		swu_state_rule(&s, SW_SWU_PROLOG, out);
		return SW_OK;
	}

	/* Body state; now find whether an epilog holds the offset. */
	prev = h.prolog_size;
	for (i = 0; i < h.epilogs;) {
		if ((st = swu_read_epilog(&r, &h, prev, &e)) != SW_OK)
			return st;
		prev = e.end;
		i++;            /* epilogs read so far */
		if (offset < e.start)
			break;          /* epilogs ascend: none further can hold it */
		if (offset >= e.end)
			continue;
		/*
		 * A callee-pops call may end right where an epilog starts: as a
		 * return address the offset still has its arguments pushed,
		 * which only the body ops say.  Everywhere else in an epilog the
		 * arguments are gone, and the body ops do not matter.
		 */
		if (!(at_return && offset == e.start && h.body_ops)) {
			if ((st = replay_epilog(&s, &e, offset)) != SW_OK)
				return st;
			swu_state_rule(&s, SW_SWU_EPILOG, out);
			return SW_OK;
		}
		region = SW_SWU_EPILOG;
		break;
	}
	if (h.body_ops) {
		/* The body ops follow the epilog table: skip the rest of it. */
		for (; i < h.epilogs; i++) {
			if ((st = swu_read_epilog(&r, &h, prev, &e)) != SW_OK)
				return st;
			prev = e.end;
		}
		if ((st = replay_body(&r, &h, &s, offset, at_return)) != SW_OK)
			return st;
	}
	swu_state_rule(&s, region, out);
	return SW_OK;
}

SW_API sw_status sw_swu_decode(const void *blob, size_t size, uint32_t offset, sw_swu_rule *out)
{
	return decode(blob, size, offset, false, out);
}

SW_API sw_status sw_swu_decode_return_address(const void *blob, size_t size, uint32_t offset,
                                              sw_swu_rule *out)
{
	return decode(blob, size, offset, true, out);
}

/* Map a state error (meant for builder callers) to a metadata error. */
static sw_status bad(sw_status st)
{
	return st == SW_E_TRUNCATED || st == SW_E_UNSUPPORTED ? st : SW_E_BADMETA;
}

/* What swu_walk carries between its helpers. */
struct swu_walk_ctx {
	const struct swu_visitor *v;
	void *ctx;
	const uint8_t *base;
	const uint8_t *item;            /* where the item being checked starts */
	struct swu_state body;
};

static sw_status walk_epilog(struct swu_walk_ctx *w, unsigned index, struct swu_epilog *e)
{
	struct swu_state s = w->body;
	uint32_t prev = e->start;
	struct swu_op op;
	sw_status st;

	if (w->v && w->v->epilog)
		w->v->epilog(w->ctx, index, e);
	for (uint32_t i = 0; i < e->nops; i++) {
		w->item = e->ops.p;
		if ((st = swu_read_op(&e->ops, prev, i == 0, &op)) != SW_OK)
			return st == SW_E_TRUNCATED ? SW_E_BADMETA : st;  /* overran its byte count */
		if (op.end >= e->end || !swu_op_is_epilog(op.code))
			return SW_E_BADMETA;
		if ((st = swu_state_apply(&s, &op)) != SW_OK)
			return bad(st);
		if (w->v && w->v->op)
			w->v->op(w->ctx, e, &op, &s);
		prev = op.end;
	}
	w->item = e->ops.p;
	/* The byte count must match the ops, and the frame must be gone by the return. */
	if (e->ops.p != e->ops.end || !swu_state_is_entry(&s))
		return SW_E_BADMETA;
	return SW_OK;
}

/* The epilogs in order, read a second time while the body ops are checked. */
struct epilog_cursor {
	struct swu_reader r;
	const sw_swu_header *h;
	uint32_t left, prev;
	bool have;                      /* e is the next epilog */
	struct swu_epilog e;
};

static sw_status cursor_next(struct epilog_cursor *c)
{
	sw_status st;

	c->have = false;
	if (c->left == 0)
		return SW_OK;
	if ((st = swu_read_epilog(&c->r, c->h, c->prev, &c->e)) != SW_OK)
		return st;
	c->left--;
	c->prev = c->e.end;
	c->have = true;
	return SW_OK;
}

/*
 * Body ops lie outside the prolog and the epilogs, ascending, and never pop
 * more than they pushed; every epilog starts, and the method ends, with
 * nothing pushed, so the epilogs' states (from the body state) hold.
 */
static sw_status walk_body(struct swu_walk_ctx *w, struct swu_reader *r, const sw_swu_header *h,
                           struct epilog_cursor *c)
{
	struct swu_state s = w->body;
	uint32_t prev = h->prolog_size;
	struct swu_op op;
	sw_status st;

	if (w->v && w->v->body)
		w->v->body(w->ctx, h);
	if ((st = cursor_next(c)) != SW_OK)
		return st;
	for (uint32_t i = 0; i < h->body_ops; i++) {
		w->item = r->p;
		if ((st = swu_read_op(r, prev, 1, &op)) != SW_OK)
			return st;
		if (op.end > h->code_size || !swu_op_is_body(op.code))
			return SW_E_BADMETA;
		/* Epilogs before this instruction: it may not end inside one. */
		while (c->have && c->e.start < op.end) {
			if (op.end <= c->e.end || s.args != 0)
				return SW_E_BADMETA;
			if ((st = cursor_next(c)) != SW_OK)
				return st;
		}
		if ((st = swu_state_apply(&s, &op)) != SW_OK)
			return bad(st);
		if (w->v && w->v->op)
			w->v->op(w->ctx, NULL, &op, &s);
		prev = op.end;
	}
	w->item = r->p;
	if (s.args != 0)
		return SW_E_BADMETA;
	return SW_OK;
}

sw_status swu_walk(const void *blob, size_t size, const struct swu_visitor *v,
                   void *ctx, size_t *where)
{
	struct epilog_cursor cursor;
	struct swu_walk_ctx w = { v, ctx, blob, blob, { 0 } };
	const struct swi_arch *arch;
	struct swu_reader r;
	struct swu_epilog e;
	struct swu_op op;
	sw_swu_header h;
	uint32_t prev = 0;
	sw_status st;

	if ((st = swu_read_header(&r, blob, size, &h, &arch)) != SW_OK) {
		if (blob)
			w.item = r.p;
		goto out;
	}
	if (v && v->header)
		v->header(ctx, &h);
	swu_state_init(&w.body, arch);
	for (uint32_t i = 0; i < h.prolog_ops; i++) {
		w.item = r.p;
		if ((st = swu_read_op(&r, prev, 1, &op)) != SW_OK)
			goto out;
		st = SW_E_BADMETA;
		if (op.end > h.prolog_size || !swu_op_is_prolog(op.code))
			goto out;
		if ((st = swu_state_apply(&w.body, &op)) != SW_OK) {
			st = bad(st);
			goto out;
		}
		if (v && v->op)
			v->op(ctx, NULL, &op, &w.body);
		prev = op.end;
	}
	prev = h.prolog_size;
	cursor = (struct epilog_cursor){ .r = r, .h = &h, .left = h.epilogs, .prev = prev };
	for (uint32_t i = 0; i < h.epilogs; i++) {
		w.item = r.p;
		if ((st = swu_read_epilog(&r, &h, prev, &e)) != SW_OK)
			goto out;
		if ((st = walk_epilog(&w, i, &e)) != SW_OK)
			goto out;
		prev = e.end;
	}
	if (h.body_ops && (st = walk_body(&w, &r, &h, &cursor)) != SW_OK)
		goto out;
	w.item = r.p;
	st = r.p == r.end ? SW_OK : SW_E_BADMETA;       /* trailing bytes */
out:
	if (where)
		*where = st == SW_OK ? size : (size_t)(w.item - w.base);
	return st;
}

SW_API sw_status sw_swu_validate(const void *blob, size_t size)
{
	return swu_walk(blob, size, NULL, NULL, NULL);
}
