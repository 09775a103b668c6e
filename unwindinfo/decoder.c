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
 *
 * A row blob (imported CFI) is one list of rules in offset order: the
 * decoder replays them from the method's entry state up to the offset,
 * and stops at the first that lies beyond it.
 *
 * sw_swu_gc_live() is on the walk path too (GC root reporting): the header
 * says how many bytes of ops precede the GC section, so it goes straight
 * there, and reads each location's ranges only until they pass the
 * offset, skipping the rest byte by byte.
 */
#include "util.h"
#include "arch.h"
#include "swu_format.h"
#include "swu_state.h"
#include "swu_eh_format.h"

SW_API sw_status sw_swu_decode_header(const void *blob, size_t size, sw_swu_header *out)
{
	struct swu_reader r;
	const struct swi_arch *arch;
	sw_swu_header h;
	sw_status st;

	if (!out)
		return SW_E_INVAL;
	st = swu_read_header(&r, blob, size, &h, &arch, NULL);
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

/*
 * Read one row op after `prev` (several may share an offset), checked for
 * syntax and place; swu_state_apply() checks its meaning.
 */
static sw_status read_row_op(struct swu_row_reader *r, const sw_swu_header *h, uint32_t prev,
                             struct swu_op *op)
{
	sw_status st = swu_read_row_op(r, prev, op);

	if (st != SW_OK)
		return st;
	if (op->end > h->code_size || !swu_op_is_row(op->code))
		return SW_E_BADMETA;
	return SW_OK;
}

/* The rule of a row blob: every row op at or before `offset`, in order. */
static sw_status decode_rows(struct swu_row_reader *r, const sw_swu_header *h,
                             struct swu_state *s, uint32_t offset, sw_swu_rule *out)
{
	uint32_t prev = 0;
	struct swu_op op;

	for (uint32_t i = 0; i < h->row_ops; i++) {
		sw_status st = read_row_op(r, h, prev, &op);

		if (st != SW_OK)
			return st;
		if (op.end > offset)
			break;
		if (swu_state_apply(s, &op) != SW_OK)
			return SW_E_BADMETA;
		prev = op.end;
	}
	swu_state_rule(s, SW_SWU_BODY, out);
	return SW_OK;
}

static sw_status decode(const void *blob, size_t size, uint32_t offset, bool at_return,
                        sw_swu_rule *out)
{
	const struct swi_arch *arch;
	struct swu_row_reader rows;
	struct swu_reader r;
	struct swu_state s;
	struct swu_epilog e;
	struct swu_op op;
	sw_swu_header h;
	sw_swu_region region = SW_SWU_BODY;
	uint32_t prev = 0, i, flags;
	sw_status st;

	if (!out)
		return SW_E_INVAL;
	if ((st = swu_read_header(&r, blob, size, &h, &arch, &flags)) != SW_OK)
		return st;
	if (offset > h.code_size)
		return SW_E_BADIP;

	swu_state_init(&s, arch);
	/*
	 * A return address may follow a call that ends its function's last
	 * row (a call that never returns, before the rows of code that comes
	 * after it): the rule of the call instruction is the one at
	 * offset - 1, as DWARF unwinders look it up.
	 */
	if (h.row_ops) {
		swu_row_reader_init(&rows, &r, arch, flags);
		return decode_rows(&rows, &h, &s, at_return && offset > 0 ? offset - 1 : offset, out);
	}
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

/*
 * The offsets of return addresses that one rule covers in a row blob: a
 * return address takes the rule of the call before it (offset - 1), so
 * the rows ending at `at` hold for return addresses in (at, next row's
 * end].  Up to `max` such runs, in order.
 */
struct row_run {
	uint32_t lo, hi;
};

static sw_status row_runs(struct swu_row_reader *r, const sw_swu_header *h, struct row_run *runs,
                          unsigned max, unsigned *n)
{
	uint32_t prev = 0, at = 0;
	struct swu_op op;

	*n = 0;
	for (uint32_t i = 0; i < h->row_ops && *n < max; i++) {
		sw_status st = read_row_op(r, h, prev, &op);

		if (st != SW_OK)
			return st;
		if (op.end != at) {
			runs[(*n)++] = (struct row_run){ at + 1, op.end + 1 };
			at = op.end;
		}
		prev = op.end;
	}
	if (*n < max)
		runs[(*n)++] = (struct row_run){ at + 1, h->code_size + 1 };
	return SW_OK;
}

/* Do two rules unwind a return address the same way? */
static bool same_return_rule(const sw_swu_rule *a, const sw_swu_rule *b)
{
	if (a->cfa_reg != b->cfa_reg || a->cfa_offset != b->cfa_offset || a->cfa_deref != b->cfa_deref ||
	    a->ra_in_reg != b->ra_in_reg || a->ra_reg != b->ra_reg || a->ra_offset != b->ra_offset ||
	    a->ra_signed != b->ra_signed || a->saved_mask != b->saved_mask)
		return false;
	for (uint64_t m = a->saved_mask; m; m &= m - 1) {
		unsigned reg = (unsigned)__builtin_ctzll(m);

		if (reg >= SW_MAX_REGS || a->saved_offset[reg] != b->saved_offset[reg] ||
		    a->saved_base[reg] != b->saved_base[reg])
			return false;
	}
	return true;
}

/* Runs of rows looked at for a body rule: compiled functions have a few. */
#define SWU_BODY_MAX_RUNS 64

/*
 * The longest run, and the longest other run with the same rule (*lo2 ==
 * *hi2 if none).  Runs the decoder refuses are left out.
 */
static sw_status longest_row_runs(const void *blob, size_t size, struct swu_row_reader *r,
                                  const sw_swu_header *h, uint32_t *lo, uint32_t *hi,
                                  uint32_t *lo2, uint32_t *hi2)
{
	struct row_run runs[SWU_BODY_MAX_RUNS];
	sw_swu_rule best, other;
	unsigned n, k = 0;
	sw_status st;

	*lo = *hi = *lo2 = *hi2 = 0;
	if ((st = row_runs(r, h, runs, SWU_BODY_MAX_RUNS, &n)) != SW_OK)
		return st;
	for (unsigned i = 1; i < n; i++)
		if (runs[i].hi - runs[i].lo > runs[k].hi - runs[k].lo)
			k = i;
	if (n == 0 || runs[k].lo >= runs[k].hi ||
	    decode(blob, size, runs[k].lo, true, &best) != SW_OK)
		return SW_OK;
	*lo = runs[k].lo;
	*hi = runs[k].hi;
	for (unsigned i = 0; i < n; i++) {
		if (i == k || runs[i].lo >= runs[i].hi || runs[i].hi - runs[i].lo <= *hi2 - *lo2)
			continue;
		if (decode(blob, size, runs[i].lo, true, &other) == SW_OK && same_return_rule(&best, &other)) {
			*lo2 = runs[i].lo;
			*hi2 = runs[i].hi;
		}
	}
	return SW_OK;
}

/*
 * Store `rule` for return addresses in [lo, hi) and [lo2, hi2) in the
 * packed form; out stays empty (lo == hi) if the form cannot hold it.
 */
/* A number of the rule in a byte of the body form: one out of range stays out of range. */
static uint8_t narrow(uint32_t v)
{
	return v < 0xff ? (uint8_t)v : 0xff;
}

void swu_body_rule_fields(const sw_swu_rule *rule, struct swu_body_rule *out)
{
	memset(out, 0, sizeof *out);
	out->cfa_offset = rule->cfa_offset;
	out->ra_offset = rule->ra_offset;
	out->arch = narrow(rule->arch);
	out->cfa_reg = narrow(rule->cfa_reg);
	out->ra_in_reg = (uint8_t)(rule->ra_in_reg != 0);
	out->ra_reg = narrow(rule->ra_reg);
	out->ra_signed = (uint8_t)(rule->ra_signed != 0);
	out->saved_mask = rule->saved_mask;
}

static void pack_body_rule(const sw_swu_rule *rule, uint32_t lo, uint32_t hi, uint32_t lo2,
                           uint32_t hi2, struct swu_body_rule *out, uint32_t *saved)
{
	unsigned nsaved = 0;

	memset(out, 0, sizeof *out);
	if (rule->cfa_deref || rule->cfa_reg > 0xff || rule->ra_reg > 0xff || rule->arch > 0xff)
		return;
	for (uint64_t m = rule->saved_mask; m; m &= m - 1) {
		unsigned reg = (unsigned)__builtin_ctzll(m);
		int32_t off;

		if (reg >= SW_MAX_REGS || nsaved >= SWU_BODY_MAX_SAVED)
			return;
		off = rule->saved_offset[reg];
		if (rule->saved_base[reg] != SW_SWU_BASE_CFA || off < -(1 << 23) || off >= (1 << 23))
			return;
		saved[nsaved++] = ((uint32_t)off << 8) | reg;
	}
	swu_body_rule_fields(rule, out);
	out->nsaved = (uint8_t)nsaved;
	out->lo = lo;
	out->hi = hi;
	out->lo2 = lo2;
	out->hi2 = hi2;
}

sw_status swu_body_rule_decode(const void *blob, size_t size, struct swu_body_rule *out,
                               uint32_t *saved)
{
	const struct swi_arch *arch;
	struct swu_reader r;
	struct swu_epilog e;
	sw_swu_header h;
	sw_swu_rule rule;
	uint32_t lo, hi, lo2 = 0, hi2 = 0, flags;
	sw_status st;

	memset(out, 0, sizeof *out);
	if ((st = swu_read_header(&r, blob, size, &h, &arch, &flags)) != SW_OK)
		return st;
	if (h.row_ops) {
		struct swu_row_reader rows;

		swu_row_reader_init(&rows, &r, arch, flags);
		if ((st = longest_row_runs(blob, size, &rows, &h, &lo, &hi, &lo2, &hi2)) != SW_OK)
			return st;
	} else {
		if (h.body_ops)
			return SW_OK;
		/* Skip the prolog ops to reach the first epilog's start. */
		for (uint32_t i = 0, prev = 0; i < h.prolog_ops; i++) {
			struct swu_op op;

			if ((st = swu_read_op(&r, prev, 1, &op)) != SW_OK)
				return st;
			prev = op.end;
		}
		lo = h.prolog_size;
		hi = h.code_size + 1;
		if (h.epilogs) {
			if ((st = swu_read_epilog(&r, &h, h.prolog_size, &e)) != SW_OK)
				return st;
			hi = e.start;
		}
	}
	if (lo >= hi)
		return SW_OK;
	/* The decoder itself says what the rule is: the two cannot disagree. */
	if ((st = decode(blob, size, lo, true, &rule)) != SW_OK)
		return st;
	pack_body_rule(&rule, lo, hi, lo2, hi2, out, saved);
	return SW_OK;
}

/* Called once every prolog op is checked, with the state the body starts in. */
typedef void (*swu_prolog_end_fn)(void *ctx, const sw_swu_header *h, const struct swu_state *body);

static sw_status walk_blob(const void *blob, size_t size, const struct swu_visitor *v,
                           void *ctx, size_t *where, swu_prolog_end_fn prolog_end);

/* What swu_validate_body_rule's visitor gathers while the validator runs. */
struct body_visit {
	sw_swu_header h;
	/*
	 * Apart from the rest: it is half a kilobyte, written whole by
	 * visit_prolog_end, so it is not cleared first.
	 */
	sw_swu_rule *rule;
	uint32_t first_epilog;
	bool have_rule;
};

static void visit_prolog_end(void *ctx, const sw_swu_header *h, const struct swu_state *body)
{
	struct body_visit *bv = ctx;

	bv->h = *h;
	bv->first_epilog = h->code_size + 1;
	swu_state_rule(body, SW_SWU_BODY, bv->rule);
	bv->have_rule = true;
}

static void visit_epilog(void *ctx, unsigned index, const struct swu_epilog *e)
{
	struct body_visit *bv = ctx;

	if (index == 0)
		bv->first_epilog = e->start;
}

sw_status swu_validate_body_rule(const void *blob, size_t size, struct swu_body_rule *out,
                                 uint32_t *saved)
{
	static const struct swu_visitor v = { .epilog = visit_epilog };
	sw_swu_rule rule;
	struct body_visit bv = { .rule = &rule };
	sw_status st;

	memset(out, 0, sizeof *out);
	if ((st = walk_blob(blob, size, &v, &bv, NULL, visit_prolog_end)) != SW_OK)
		return st;
	/* Row blobs, with their runs, take the decoder's way. */
	if (!bv.have_rule)
		return swu_body_rule_decode(blob, size, out, saved);
	/*
	 * The validator replays the prolog exactly as the decoder does, so
	 * its body state is the decoder's rule anywhere between the prolog
	 * and the first epilog, as long as no body op moves SP there.
	 */
	if (!bv.h.body_ops && bv.h.prolog_size < bv.first_epilog)
		pack_body_rule(bv.rule, bv.h.prolog_size, bv.first_epilog, 0, 0, out, saved);
	return SW_OK;
}

SW_API sw_status sw_swu_gc_live(const void *blob, size_t size, uint32_t offset,
                                sw_swu_gc_fn fn, void *data)
{
	const struct swi_arch *arch;
	struct swu_reader r, gc;
	sw_swu_header h;
	uint32_t flags;
	sw_status st;

	if (!fn)
		return SW_E_INVAL;
	if ((st = swu_read_header(&r, blob, size, &h, &arch, &flags)) != SW_OK)
		return st;
	if (offset > h.code_size)
		return SW_E_BADIP;
	gc = swu_gc_section(blob, size, &r);
	for (uint32_t i = 0; i < h.gc_locations; i++) {
		struct swu_gc_loc loc;
		uint32_t start, end, prev = 0, j = 0;
		bool live = false;

		if ((st = swu_read_gc_loc(&gc, arch, &loc)) != SW_OK)
			return st;
		/* A slot in the parent's frame is reached through the PSP slot only. */
		if ((loc.slot.flags & SW_GC_PARENT_FRAME) && !(flags & SWU_FLAG_PSP))
			return SW_E_BADMETA;
		/* Ranges ascend: stop at the first that ends past the offset. */
		while (j < loc.nranges) {
			st = swu_read_gc_range(&gc, prev, j == 0, h.code_size, &start, &end);
			if (st != SW_OK)
				return st;
			j++;
			if (offset < end) {
				live = offset >= start;
				break;
			}
			prev = end;
		}
		/* Two varints per range left. */
		if ((st = swu_skip_varints(&gc, 2 * (uint64_t)(loc.nranges - j))) != SW_OK)
			return st;
		if (live && fn(data, &loc.slot))
			return SW_OK;
	}
	return SW_OK;
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

/* Do two locations' sorted, disjoint range lists share an offset? */
static bool ranges_meet(struct swu_reader a, uint32_t na, struct swu_reader b, uint32_t nb,
                        uint32_t code_size)
{
	uint32_t as = 0, ae = 0, bs = 0, be = 0, ia = 0, ib = 0;

	/* Both lists were checked already: these reads cannot fail. */
	if (swu_read_gc_range(&a, 0, true, code_size, &as, &ae) != SW_OK ||
	    swu_read_gc_range(&b, 0, true, code_size, &bs, &be) != SW_OK)
		return false;
	for (;;) {
		if (ae <= bs) {
			if (++ia == na || swu_read_gc_range(&a, ae, false, code_size, &as, &ae) != SW_OK)
				return false;
		} else if (be <= as) {
			if (++ib == nb || swu_read_gc_range(&b, be, false, code_size, &bs, &be) != SW_OK)
				return false;
		} else {
			return true;
		}
	}
}

/* The locations of one place, with different flags (at most four). */
struct gc_group {
	unsigned n;
	struct {
		struct swu_reader ranges;
		uint32_t nranges;
	} v[4];
};

/* A place holds one reference at a time: its flag variants may not overlap. */
static bool group_ok(const struct gc_group *g, uint32_t code_size)
{
	for (unsigned i = 0; i < g->n; i++)
		for (unsigned j = i + 1; j < g->n; j++)
			if (ranges_meet(g->v[i].ranges, g->v[i].nranges,
			                g->v[j].ranges, g->v[j].nranges, code_size))
				return false;
	return true;
}

/*
 * A slot in the parent's frame is found through the PSP slot, which holds
 * the parent's CFA only in the body outside the epilogs: its ranges must
 * lie there.  Both lists ascend: one pass over each.
 */
static sw_status parent_ranges_ok(struct swu_reader ranges, uint32_t nranges,
                                  const sw_swu_header *h, struct epilog_cursor c)
{
	uint32_t start, end = 0;
	sw_status st;

	if ((st = cursor_next(&c)) != SW_OK)
		return st;
	for (uint32_t i = 0; i < nranges; i++) {
		if ((st = swu_read_gc_range(&ranges, end, i == 0, h->code_size, &start, &end)) != SW_OK)
			return st;
		if (start < h->prolog_size)
			return SW_E_BADMETA;
		while (c.have && c.e.end <= start)
			if ((st = cursor_next(&c)) != SW_OK)
				return st;
		if (c.have && c.e.start < end)
			return SW_E_BADMETA;
	}
	return SW_OK;
}

/*
 * The GC section: locations strictly ascending (so none repeats), each
 * with sorted, disjoint, non-touching ranges inside the code, and the
 * section exactly as long as the header says; slots in the parent's frame
 * only with a PSP slot, live where it holds (parent_ranges_ok).
 */
static sw_status walk_gc(struct swu_walk_ctx *w, struct swu_reader *r, const sw_swu_header *h,
                         const struct swi_arch *arch, int32_t psp,
                         const struct epilog_cursor *epilogs)
{
	struct gc_group g = { 0 };
	sw_swu_gc_slot prev = { 0 };
	sw_status st;

	if (w->v && w->v->gc)
		w->v->gc(w->ctx, h);
	for (uint32_t i = 0; i < h->gc_locations; i++) {
		struct swu_gc_loc loc;
		struct swu_reader ranges;
		uint32_t start, end = 0;

		w->item = r->p;
		if ((st = swu_read_gc_loc(r, arch, &loc)) != SW_OK)
			return st;
		if (i > 0 && swu_gc_cmp(&prev, &loc.slot, true) >= 0)
			return SW_E_BADMETA;
		if (i > 0 && swu_gc_cmp(&prev, &loc.slot, false) != 0) {
			if (!group_ok(&g, h->code_size))
				return SW_E_BADMETA;
			g.n = 0;
		}
		ranges = *r;
		for (uint32_t j = 0; j < loc.nranges; j++)
			if ((st = swu_read_gc_range(r, end, j == 0, h->code_size, &start, &end)) != SW_OK)
				return st;
		ranges.end = r->p;
		if (loc.slot.flags & SW_GC_PARENT_FRAME) {
			if (!psp)
				return SW_E_BADMETA;
			if ((st = parent_ranges_ok(ranges, loc.nranges, h, *epilogs)) != SW_OK)
				return st;
		}
		/* Flags ascend within a place and have two bits: four variants at most. */
		if (g.n >= sizeof g.v / sizeof g.v[0])
			return SW_E_BADMETA;
		g.v[g.n].ranges = ranges;
		g.v[g.n].nranges = loc.nranges;
		g.n++;
		if (w->v && w->v->gc_loc)
			w->v->gc_loc(w->ctx, &loc, &ranges);
		prev = loc.slot;
	}
	w->item = r->p;
	if (!group_ok(&g, h->code_size) || r->p != r->end)
		return SW_E_BADMETA;
	return SW_OK;
}

/*
 * Row ops ascend (several may share an offset) within the code; a compact
 * push may not be cut in two by the end of the count.
 */
static sw_status walk_rows(struct swu_walk_ctx *w, struct swu_reader *r, const sw_swu_header *h,
                           const struct swi_arch *arch, uint32_t flags)
{
	struct swu_row_reader rows;
	uint32_t prev = 0;
	struct swu_op op;
	sw_status st;

	swu_row_reader_init(&rows, r, arch, flags);
	for (uint32_t i = 0; i < h->row_ops; i++) {
		w->item = rows.r.p;
		if ((st = read_row_op(&rows, h, prev, &op)) != SW_OK)
			return st;
		if ((st = swu_state_apply(&w->body, &op)) != SW_OK)
			return bad(st);
		if (w->v && w->v->op)
			w->v->op(w->ctx, NULL, &op, &w->body);
		prev = op.end;
	}
	w->item = rows.r.p;
	*r = rows.r;
	return rows.pending ? SW_E_BADMETA : SW_OK;
}

/* swu_walk, and for swu_validate_body_rule a call once the prolog is checked. */
static sw_status walk_blob(const void *blob, size_t size, const struct swu_visitor *v,
                           void *ctx, size_t *where, swu_prolog_end_fn prolog_end)
{
	struct epilog_cursor cursor, first_epilog;
	struct swu_walk_ctx w = { v, ctx, blob, blob, { 0 } };
	const struct swi_arch *arch;
	struct swu_reader r;
	struct swu_epilog e;
	struct swu_op op;
	sw_swu_header h;
	uint32_t prev = 0, flags = 0;
	int32_t psp = 0;
	sw_status st;

	if ((st = swu_read_header(&r, blob, size, &h, &arch, &flags)) != SW_OK ||
	    (st = swu_read_psp_slot(blob, size, &psp)) != SW_OK) {
		if (blob)
			w.item = r.p;
		goto out;
	}
	/* The exception handling clauses, before the ops they do not depend on. */
	if ((flags & SWU_FLAG_EH) && (st = swu_eh_validate(blob, size, &w.item)) != SW_OK)
		goto out;
	if (v && v->header)
		v->header(ctx, &h);
	swu_state_init(&w.body, arch);
	if (h.row_ops && (st = walk_rows(&w, &r, &h, arch, flags)) != SW_OK)
		goto out;
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
	if (prolog_end && !h.row_ops)
		prolog_end(ctx, &h, &w.body);
	prev = h.prolog_size;
	/* The PSP slot is the funclet's own, in its body frame. */
	if (psp && !swu_state_free_slot(&w.body, psp)) {
		st = SW_E_BADMETA;
		goto out;
	}
	cursor = (struct epilog_cursor){ .r = r, .h = &h, .left = h.epilogs, .prev = prev };
	first_epilog = cursor;
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
	/* The ops must end exactly where the GC section (or the blob) does. */
	if (r.p != r.end) {
		st = SW_E_BADMETA;
		goto out;
	}
	if (h.gc_locations) {
		struct swu_reader gc = swu_gc_section(blob, size, &r);

		if ((st = walk_gc(&w, &gc, &h, arch, psp, &first_epilog)) != SW_OK)
			goto out;
	}
	st = SW_OK;
out:
	if (where)
		*where = st == SW_OK ? size : (size_t)(w.item - w.base);
	return st;
}

sw_status swu_walk(const void *blob, size_t size, const struct swu_visitor *v,
                   void *ctx, size_t *where)
{
	return walk_blob(blob, size, v, ctx, where, NULL);
}

SW_API sw_status sw_swu_validate(const void *blob, size_t size)
{
	return swu_walk(blob, size, NULL, NULL, NULL);
}
