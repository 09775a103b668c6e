/*
 * verify_ops.c - prolog and epilog ops against the instructions.
 *
 * Each region is disassembled on its own (prolog, each epilog, and the
 * body where the blob has body ops) and walked instruction by instruction
 * with the SWU frame state of that point.  Two states are computed for
 * every instruction: what the instruction does to the frame (its effect,
 * read from Capstone by analyze.c), and what the ops ending just past it
 * say.  They must agree: SP's depth below the CFA, the frame register and
 * its depth, which callee-saved registers sit in which slots, whether the
 * return address is signed.  An instruction that changes the frame
 * without an op, an op that names another register or size, an op ending
 * inside an instruction, an epilog that does not end with its return:
 * each is a mismatch at its offset.
 *
 * The body is checked only for SP (x86 argument pushes and the calls whose
 * callees pop them): its stores and loads are the method's business.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "array_grow.h"
#include "arch.h"
#include "analyze.h"
#include "swu_format.h"
#include "swu_state.h"
#include "verify_job.h"

#define BIT(r) (1ULL << (r))

/* One op as the blob lists it, with its region. */
struct vop {
	struct swu_op op;
	uint32_t region;                /* sw_swu_region */
};

struct vepilog {
	uint32_t start, end;
	size_t first, nops;             /* its ops in vblob.ops */
};

/* Everything the blob says, in order: prolog ops, epilog ops, body ops. */
struct vblob {
	sw_swu_header h;
	struct vop *ops;
	size_t nops, cap;
	struct vepilog *eps;
	size_t neps;
	unsigned cur_epilog;
	size_t nprolog;                 /* the prolog's ops come first */
	size_t body_first, nbody;       /* the body's, last */
	bool nomem;
};

static void collect_header(void *ctx, const sw_swu_header *h)
{
	struct vblob *b = ctx;

	b->h = *h;
	b->eps = calloc(h->epilogs ? h->epilogs : 1, sizeof *b->eps);
	if (!b->eps)
		b->nomem = true;
}

static void collect_epilog(void *ctx, unsigned index, const struct swu_epilog *e)
{
	struct vblob *b = ctx;

	if (!b->eps || index >= b->h.epilogs)
		return;
	b->eps[index].start = e->start;
	b->eps[index].end = e->end;
	b->eps[index].first = b->nops;
	b->eps[index].nops = 0;
	b->neps = index + 1;
	b->cur_epilog = index;
}

static void collect_op(void *ctx, const struct swu_epilog *e, const struct swu_op *op,
                       const struct swu_state *s)
{
	struct vblob *b = ctx;

	SWI_UNUSED(s);
	if (swi_array_grow((void **)&b->ops, &b->cap, b->nops + 1, sizeof *b->ops) != SW_OK) {
		b->nomem = true;
		return;
	}
	b->ops[b->nops].op = *op;
	b->ops[b->nops].region = e ? SW_SWU_EPILOG : swu_op_is_body(op->code) ? SW_SWU_BODY : SW_SWU_PROLOG;
	if (e && b->eps && b->cur_epilog < b->neps)
		b->eps[b->cur_epilog].nops++;
	else if (!e && b->ops[b->nops].region == SW_SWU_PROLOG)
		b->nprolog++;
	else if (!e && b->nbody++ == 0)
		b->body_first = b->nops;
	b->nops++;
}

/* ---- The state an instruction leaves ---- */

/* What the walk of one region carries. */
struct vregion {
	const struct verify_job *j;
	unsigned region;                /* sw_swu_region */
	struct swu_state s;             /* the SWU state before the instruction */
	uint64_t konst_mask;            /* registers holding a known constant (a big frame's size) */
	int64_t konst[SW_MAX_REGS];
	const struct vop *ops;          /* the region's ops, ascending by end */
	size_t nops, k;                 /* k: the next one not yet matched */
	char why[160];                  /* why an instruction's effect could not be followed */
};

static bool savable(const struct swi_arch *a, unsigned r)
{
	return r < SW_MAX_REGS && r < 64 && (swi_savable_regs(a) & BIT(r));
}

/* The CFA-relative address a register holds, when the SWU state knows it (SP, live frame register). */
static bool reg_rel(const struct swu_state *s, unsigned r, int64_t *rel)
{
	if (r == s->arch->sp_reg) {
		*rel = -(int64_t)s->sp_depth;
		return true;
	}
	if (s->fp_live && r == s->fp_reg) {
		*rel = -(int64_t)s->fp_depth;
		return true;
	}
	return false;
}

static void forget_const(struct vregion *v, uint64_t regs)
{
	v->konst_mask &= ~regs;
}

/* The frame register no longer holds the frame: fine unless the CFA is on it. */
static bool lose_frame_reg(struct vregion *v, struct swu_state *p)
{
	if (p->cfa_on_fp) {
		snprintf(v->why, sizeof v->why, "it overwrites the frame register the CFA is computed from");
		return false;
	}
	p->fp_live = false;
	return true;
}

/* A register loaded from [CFA + addr]: its own slot restores it. */
static bool load_reg(struct vregion *v, struct swu_state *p, unsigned r, bool known, int64_t addr)
{
	if (r >= SW_MAX_REGS || r >= 64)
		return true;
	if (r == p->arch->sp_reg) {
		snprintf(v->why, sizeof v->why, "it loads SP from memory, which SWU cannot say");
		return false;
	}
	forget_const(v, BIT(r));
	if (known && (p->saved_mask & BIT(r)) && p->saved[r] == addr) {
		p->saved_mask &= ~BIT(r);
		if (p->fp_live && r == p->fp_reg) {
			p->fp_live = false;
			p->cfa_on_fp = false;
		}
		return true;
	}
	if (p->fp_live && r == p->fp_reg)
		return lose_frame_reg(v, p);
	return true;
}

static bool mem_access(struct vregion *v, struct swu_state *p, const struct swi_effect *e)
{
	const struct swi_arch *a = p->arch;
	int64_t base = 0, addr;
	bool known = e->base != SWI_NOREG && reg_rel(p, e->base, &base);
	bool frame = v->region != SW_SWU_BODY;

	addr = base + e->imm;
	if (e->op == SWI_EFF_STORE && frame && known && e->full) {
		unsigned regs[2] = { e->r1, e->r2 };

		for (unsigned i = 0; i < 2; i++) {
			unsigned r = regs[i];

			/* A store of a callee-saved register still holding its caller's value saves it. */
			if (r != SWI_NOREG && savable(a, r) && !(p->saved_mask & BIT(r))) {
				p->saved[r] = (int32_t)(addr + 8 * i);
				p->saved_mask |= BIT(r);
			}
		}
	} else if (e->op == SWI_EFF_LOAD) {
		if (e->r1 != SWI_NOREG && frame && !load_reg(v, p, e->r1, known && e->full, addr))
			return false;
		if (e->r2 != SWI_NOREG && frame && !load_reg(v, p, e->r2, known && e->full, addr + 8))
			return false;
		if (!frame) {
			if (e->r1 == a->sp_reg || e->r2 == a->sp_reg) {
				snprintf(v->why, sizeof v->why, "it loads SP from memory, which SWU cannot say");
				return false;
			}
			forget_const(v, (e->r1 != SWI_NOREG ? BIT(e->r1) : 0) |
			                (e->r2 != SWI_NOREG ? BIT(e->r2) : 0));
		}
	}
	if (e->wb && e->base != SWI_NOREG && e->base != e->r1 && e->base != e->r2) {
		if (e->base == a->sp_reg) {
			p->sp_depth -= e->wb;
		} else if (p->fp_live && e->base == p->fp_reg) {
			return lose_frame_reg(v, p);
		}
	}
	return true;
}

/* r1 = base + imm (+ a known constant): SP moved, a frame register set, or nothing of note. */
static bool set_reg(struct vregion *v, struct swu_state *p, const struct swi_effect *e)
{
	const struct swi_arch *a = p->arch;
	int64_t base = 0, k = 0, val;
	bool known = reg_rel(p, e->base, &base);

	if (e->kreg != SWI_NOREG) {
		if (e->kreg >= SW_MAX_REGS || !(v->konst_mask & BIT(e->kreg)))
			known = false;
		else
			k = e->ksign * v->konst[e->kreg];
	}
	val = base + e->imm + k;
	if (e->r1 < SW_MAX_REGS)
		forget_const(v, BIT(e->r1));
	if (e->r1 == a->sp_reg) {
		if (!known || val > 0 || val < -(int64_t)SW_SWU_MAX_FRAME) {
			if (v->region == SW_SWU_BODY && p->cfa_on_fp)
				return true;
			snprintf(v->why, sizeof v->why, "it sets SP from a value SWU does not follow");
			return false;
		}
		p->sp_depth = (int32_t)-val;
		/* SP from the frame register: SWU's restore_sp moves the CFA back to SP. */
		if (e->base != a->sp_reg)
			p->cfa_on_fp = false;
		return true;
	}
	if (v->region == SW_SWU_BODY)
		return true;
	if (v->region == SW_SWU_PROLOG && e->base == a->sp_reg && known && !p->fp_live &&
	    e->r1 < 64 && (a->frame_regs & BIT(e->r1))) {
		p->fp_reg = e->r1;
		p->fp_depth = (int32_t)-val;
		p->fp_live = true;
		p->cfa_on_fp = true;
		return true;
	}
	if (p->fp_live && e->r1 == p->fp_reg)
		return lose_frame_reg(v, p);
	return true;
}

/*
 * The state after instruction `e`, from the state before it (*p).  The
 * ops ending at a call that pops its own arguments (`pops`) are the one
 * thing the instruction cannot show: the callee decides.  False when the
 * instruction does something to the frame SWU cannot say (v->why).
 */
static bool apply_insn(struct vregion *v, struct swu_state *p, const struct swi_effect *e,
                       const struct vop *at, size_t nat)
{
	const struct swi_arch *a = p->arch;
	uint64_t writes = e->writes;

	switch (e->op) {
	case SWI_EFF_STORE:
	case SWI_EFF_LOAD:
		if (!mem_access(v, p, e))
			return false;
		break;
	case SWI_EFF_SET:
		if (!set_reg(v, p, e))
			return false;
		break;
	case SWI_EFF_CONST:
		if (e->r1 < SW_MAX_REGS) {
			v->konst[e->r1] = e->kval;
			v->konst_mask |= BIT(e->r1);
		}
		break;
	case SWI_EFF_CONST_PART:
		if (e->r1 < SW_MAX_REGS && (v->konst_mask & BIT(e->r1))) {
			uint64_t kv = (uint64_t)v->konst[e->r1] & ~(0xffffULL << e->kshift);

			v->konst[e->r1] = (int64_t)(kv | ((uint64_t)e->kval << e->kshift));
		}
		break;
	case SWI_EFF_LEAVE: {
		struct swi_effect mov = { .op = SWI_EFF_SET, .r1 = (uint8_t)a->sp_reg,
		                          .base = (uint8_t)a->fp_reg, .kreg = SWI_NOREG };
		struct swi_effect pop = { .op = SWI_EFF_LOAD, .r1 = (uint8_t)a->fp_reg, .r2 = SWI_NOREG,
		                          .base = (uint8_t)a->sp_reg, .full = 1,
		                          .wb = (int32_t)a->ptr_size };

		if (!set_reg(v, p, &mov) || !mem_access(v, p, &pop))
			return false;
		writes = 0;
		break;
	}
	case SWI_EFF_PTRAUTH:
		/* Hints 25 and 27 sign (paciasp, pacibsp), 29 and 31 authenticate. */
		p->ra_signed = e->kval == 25 || e->kval == 27;
		break;
	case SWI_EFF_CALL:
		for (size_t i = 0; i < nat; i++)
			if (at[i].op.code == SWU_OP_CALL_POPS && swu_state_apply(p, &at[i].op) != SW_OK)
				break;
		writes &= ~BIT(a->sp_reg);
		break;
	case SWI_EFF_RET:
		writes = 0;     /* popping the return address ends the frame: nothing to describe */
		break;
	case SWI_EFF_BAD:
		snprintf(v->why, sizeof v->why, "Capstone cannot decode it");
		return false;
	default:
		break;
	}
	forget_const(v, writes);
	if (writes & BIT(a->sp_reg)) {
		if (v->region == SW_SWU_BODY && p->cfa_on_fp)
			return true;
		snprintf(v->why, sizeof v->why, "it changes SP in a way SWU cannot say");
		return false;
	}
	if (v->region != SW_SWU_BODY && p->fp_live && p->fp_reg < 64 && (writes & BIT(p->fp_reg)))
		return lose_frame_reg(v, p);
	return true;
}

/* ---- Comparing the two states ---- */

static void slot_text(const struct verify_job *j, unsigned r, int32_t slot, char *buf, size_t len)
{
	char b[24];

	snprintf(buf, len, "%s at [cfa - %" PRId32 "]", verify_reg_name(j, r, b, sizeof b), -slot);
}

/* Describe the first difference between what the instruction did (i) and what SWU says (s). */
static bool differ(const struct vregion *v, const struct swu_state *i, const struct swu_state *s,
                   char *why, size_t len)
{
	const struct verify_job *j = v->j;
	char b1[24], b2[24], t1[64], t2[64];

	if (i->sp_depth != s->sp_depth) {
		snprintf(why, len, "the instruction leaves SP at cfa - %" PRId32 ", the SWU at cfa - %" PRId32,
		         i->sp_depth, s->sp_depth);
		return true;
	}
	if (v->region == SW_SWU_BODY)
		return false;
	if (i->fp_live != s->fp_live || i->cfa_on_fp != s->cfa_on_fp ||
	    (i->fp_live && (i->fp_reg != s->fp_reg || i->fp_depth != s->fp_depth))) {
		if (i->fp_live && i->cfa_on_fp && !(s->fp_live && s->cfa_on_fp))
			snprintf(why, len, "the instruction sets the frame register %s = cfa - %" PRId32
			         "; the SWU has no frame register there",
			         verify_reg_name(j, i->fp_reg, b1, sizeof b1), i->fp_depth);
		else if (s->fp_live && s->cfa_on_fp && !(i->fp_live && i->cfa_on_fp))
			snprintf(why, len, "the SWU sets the frame register %s = cfa - %" PRId32
			         "; the instruction does not",
			         verify_reg_name(j, s->fp_reg, b1, sizeof b1), s->fp_depth);
		else if (i->cfa_on_fp != s->cfa_on_fp)
			snprintf(why, len, "the instruction %s SP from the frame register; the SWU %s",
			         i->cfa_on_fp ? "does not restore" : "restores",
			         s->cfa_on_fp ? "does not" : "does");
		else
			snprintf(why, len, "frame register: the instruction has %s = cfa - %" PRId32
			         ", the SWU %s = cfa - %" PRId32,
			         verify_reg_name(j, i->fp_reg, b1, sizeof b1), i->fp_depth,
			         verify_reg_name(j, s->fp_reg, b2, sizeof b2), s->fp_depth);
		return true;
	}
	for (uint64_t m = i->saved_mask | s->saved_mask; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);
		bool in_i = i->saved_mask & BIT(r), in_s = s->saved_mask & BIT(r);

		if (in_i && in_s && i->saved[r] == s->saved[r])
			continue;
		if (in_i && in_s) {
			slot_text(j, r, i->saved[r], t1, sizeof t1);
			snprintf(why, len, "the instruction saves %s, the SWU at [cfa - %" PRId32 "]",
			         t1, -s->saved[r]);
		} else if (in_i) {
			slot_text(j, r, i->saved[r], t1, sizeof t1);
			snprintf(why, len, "the instruction saves %s; the SWU does not", t1);
		} else if (in_s && (i->saved_mask & ~s->saved_mask) == 0 &&
		           (v->s.saved_mask & BIT(r))) {
			snprintf(why, len, "the SWU restores %s here; the instruction does not",
			         verify_reg_name(j, r, b1, sizeof b1));
		} else if (v->s.saved_mask & BIT(r)) {
			snprintf(why, len, "the instruction restores %s; the SWU does not",
			         verify_reg_name(j, r, b1, sizeof b1));
		} else {
			slot_text(j, r, s->saved[r], t2, sizeof t2);
			snprintf(why, len, "the SWU saves %s; the instruction does not", t2);
		}
		return true;
	}
	if (i->ra_signed != s->ra_signed) {
		snprintf(why, len, "the instruction %s the return address; the SWU does not",
		         i->ra_signed ? "signs" : "authenticates");
		return true;
	}
	return false;
}

/* The ops ending at `end`, in swdump's words, or "(no op)". */
static void ops_text(const struct vregion *v, const struct vop *at, size_t nat, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	if (nat == 0)
		snprintf(buf, len, "(no op)");
	for (size_t i = 0; i < nat && used + 1 < len; i++) {
		char t[96];

		swu_op_text(v->j->arch, v->s.fp_reg, &at[i].op, t, sizeof t);
		used += (size_t)snprintf(buf + used, len - used, "%s%s", i ? "; " : "", t);
	}
}

/* ---- Walking a region ---- */

/* A region's instructions, decoded at their offsets within the method. */
static sw_status decode_range(const struct verify_job *j, uint32_t lo, uint32_t hi,
                              struct swi_effect **fx, size_t *n)
{
	sw_status st;

	*fx = NULL;
	*n = 0;
	if (hi <= lo)
		return SW_OK;
	if (hi - lo > SWI_ANALYZE_MAX_CODE) {
		j->res->reason = SW_VERIFY_LIMIT;
		return SW_E_UNSUPPORTED;
	}
	st = swi_decode(j->arch, j->code + lo, hi - lo, j->addr + lo, fx, n);
	if (st == SW_E_LIMIT) {
		j->res->reason = SW_VERIFY_LIMIT;
		return SW_E_UNSUPPORTED;
	}
	if (st != SW_OK)
		return st;
	for (size_t i = 0; i < *n; i++)
		(*fx)[i].off += lo;
	return SW_OK;
}

/* One instruction: its effect against the ops that end just past it. */
static sw_status check_insn(struct vregion *v, const struct swi_effect *e)
{
	const struct verify_job *j = v->j;
	uint32_t end = e->off + e->len;
	struct swu_state pred = v->s, swu = v->s;
	const struct vop *at = v->ops + v->k;
	size_t nat = 0;
	char expected[128], why[192];

	/* An op ending inside this instruction describes no instruction. */
	if (v->k < v->nops && v->ops[v->k].op.end < end) {
		ops_text(v, at, 1, expected, sizeof expected);
		return verify_mismatch(j, v->ops[v->k].op.end, e->off, v->region, expected,
		                       "no instruction ends at offset %" PRIu32 ": it lies inside this one",
		                       v->ops[v->k].op.end);
	}
	while (v->k + nat < v->nops && v->ops[v->k + nat].op.end == end)
		nat++;
	ops_text(v, at, nat, expected, sizeof expected);
	for (size_t i = 0; i < nat; i++) {
		sw_status st = swu_state_apply(&swu, &at[i].op);

		if (st != SW_OK)
			return verify_mismatch(j, end, e->off, v->region, expected,
			                       "the op does not apply to the frame here (%s)", sw_strerror(st));
	}
	if (!apply_insn(v, &pred, e, at, nat))
		return verify_mismatch(j, end, e->off, v->region, expected, "%s", v->why);
	if (differ(v, &pred, &swu, why, sizeof why))
		return verify_mismatch(j, end, e->off, v->region, expected, "%s", why);
	j->res->ops += (uint32_t)nat;
	j->res->instructions++;
	v->k += nat;
	v->s = swu;
	return SW_OK;
}

/*
 * The instructions in [lo, hi) against the region's ops.  An epilog must
 * end with its return, exactly at hi, and return nowhere before.
 */
static sw_status walk_region(struct vregion *v, uint32_t lo, uint32_t hi)
{
	const struct verify_job *j = v->j;
	struct swi_effect *fx;
	char expected[128];
	size_t n;
	sw_status st;
	uint32_t at = lo;

	if ((st = decode_range(j, lo, hi, &fx, &n)) != SW_OK)
		return st;
	for (size_t i = 0; i < n && st == SW_OK; i++) {
		const struct swi_effect *e = &fx[i];
		uint32_t end = e->off + e->len;

		if (e->op == SWI_EFF_BAD || end > hi) {
			if (v->k < v->nops)
				ops_text(v, v->ops + v->k, 1, expected, sizeof expected);
			else
				snprintf(expected, sizeof expected, "(no op)");
			st = verify_mismatch(j, e->op == SWI_EFF_BAD ? e->off : hi, e->off, v->region, expected,
			                     e->op == SWI_EFF_BAD ? "Capstone cannot decode the code here" :
			                     "no instruction ends where the region does");
			break;
		}
		if (v->region == SW_SWU_EPILOG && e->op == SWI_EFF_RET && end != hi) {
			ops_text(v, NULL, 0, expected, sizeof expected);
			st = verify_mismatch(j, end, e->off, v->region, expected,
			                     "a return before the epilog's end (%" PRIu32 ")", hi);
			break;
		}
		if ((st = check_insn(v, e)) != SW_OK)
			break;
		at = end;
		if (v->region == SW_SWU_EPILOG && end == hi && e->op != SWI_EFF_RET) {
			snprintf(expected, sizeof expected, "epilog end at %" PRIu32, hi);
			st = verify_mismatch(j, hi, e->off, v->region, expected,
			                     "the epilog does not end with a return");
		}
	}
	if (st == SW_OK && v->k < v->nops && v->ops[v->k].op.end <= hi) {
		ops_text(v, v->ops + v->k, 1, expected, sizeof expected);
		st = verify_mismatch(j, v->ops[v->k].op.end, at, v->region, expected,
		                     "no instruction ends at offset %" PRIu32, v->ops[v->k].op.end);
	}
	free(fx);
	return st;
}

/* The ops of one region: a run of the collected ones. */
static void region_ops(const struct vblob *b, unsigned region, uint32_t epilog,
                       const struct vop **ops, size_t *n)
{
	if (region == SW_SWU_PROLOG) {
		*ops = b->ops;
		*n = b->nprolog;
	} else if (region == SW_SWU_EPILOG && epilog < b->neps) {
		*ops = b->ops + b->eps[epilog].first;
		*n = b->eps[epilog].nops;
	} else if (region == SW_SWU_BODY) {
		*ops = b->ops + b->body_first;
		*n = b->nbody;
	} else {
		*ops = b->ops;
		*n = 0;
	}
}

static void region_init(struct vregion *v, const struct verify_job *j, const struct vblob *b,
                        unsigned region, uint32_t epilog, const struct swu_state *s)
{
	memset(v, 0, sizeof *v);
	v->j = j;
	v->region = region;
	v->s = *s;
	region_ops(b, region, epilog, &v->ops, &v->nops);
}

/* The body between the prolog and the end, around the epilogs: SP only. */
static sw_status walk_body(const struct verify_job *j, const struct vblob *b,
                           const struct swu_state *body)
{
	struct vregion v;
	uint32_t lo = b->h.prolog_size;
	sw_status st = SW_OK;

	region_init(&v, j, b, SW_SWU_BODY, 0, body);
	for (size_t e = 0; e <= b->neps && st == SW_OK; e++) {
		uint32_t hi = e < b->neps ? b->eps[e].start : b->h.code_size;

		st = walk_region(&v, lo, hi);
		if (e < b->neps)
			lo = b->eps[e].end;
	}
	return st;
}

sw_status verify_ops(const struct verify_job *j)
{
	static const struct swu_visitor collector = {
		collect_header, collect_op, collect_epilog, NULL, NULL, NULL
	};
	struct vblob b;
	struct vregion v;
	struct swu_state entry, body;
	sw_status st;

	memset(&b, 0, sizeof b);
	st = swu_walk(j->blob, j->blob_size, &collector, &b, NULL);
	if (st == SW_OK && b.nomem)
		st = SW_E_NOMEM;
	if (st != SW_OK)
		goto out;
	swu_state_init(&entry, j->a);
	region_init(&v, j, &b, SW_SWU_PROLOG, 0, &entry);
	if ((st = walk_region(&v, 0, b.h.prolog_size)) != SW_OK)
		goto out;
	body = v.s;
	for (size_t e = 0; e < b.neps && st == SW_OK; e++) {
		region_init(&v, j, &b, SW_SWU_EPILOG, (uint32_t)e, &body);
		st = walk_region(&v, b.eps[e].start, b.eps[e].end);
	}
	if (st == SW_OK && b.h.body_ops)
		st = walk_body(j, &b, &body);
out:
	free(b.ops);
	free(b.eps);
	return st;
}
