/*
 * analyze.c - unwind rules by instruction analysis (Capstone), as SWU.
 *
 * Three passes.  Decode: Capstone disassembles the function once, and
 * each instruction is reduced to an effect on the frame (a store or load
 * relative to a register, SP or another register set from a register plus
 * a constant, a call, a branch, a write of something unknown).  Follow: a
 * worklist carries the frame state from the entry along every direct
 * branch and fall-through, meeting states where paths join.  Code no path
 * reaches is a jump table's target (it gets the state of the function's
 * indirect jump) or padding.  Describe: each instruction's state becomes a
 * rule, and runs of expressible rules become SWU row blobs.
 *
 * The state is what CFI would say, derived instead of declared: which
 * registers hold the CFA plus a constant, which callee-saved registers were
 * stored while they still held the caller's value (and where), whether the
 * return address is still where it arrived.  A call's fall-through is
 * "weak": the callee may never return (abort), and the code after it may
 * belong to another path, whose state then wins where they meet.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <capstone/capstone.h>
#include "util.h"
#include "array_grow.h"
#include "arch.h"
#include "analyze.h"

#define BIT(r) (1ULL << (r))
#define NOREG SWI_NOREG

/* ---- State ---- */

struct astate {
	uint8_t reached, weak, ra_lost, fp_frame;
	uint64_t rel_mask;              /* r holds CFA + rel[r] */
	uint64_t saved_mask;            /* the caller's r is at [CFA + saved[r]] */
	uint64_t modified;              /* tracked registers no longer holding the caller's value */
	uint64_t konst_mask;            /* r holds the constant konst[r] (a large frame's size) */
	int32_t rel[SW_MAX_REGS];
	int32_t saved[SW_MAX_REGS];
	int64_t konst[SW_MAX_REGS];
};

struct actx {
	sw_arch arch;
	const struct swi_arch *a;
	unsigned p;                     /* pointer size */
	unsigned sp, fp;
	int lr;                         /* arm64's lr, else -1 */
	uint64_t track;                 /* callee-saved registers (and lr) whose saves are followed */
	struct swi_effect *fx;
	size_t n;
	struct astate *st;              /* in-state of each instruction */
	uint64_t addr;
	size_t size;
	int fail;
};

static void entry_state(const struct actx *c, struct astate *s)
{
	memset(s, 0, sizeof *s);
	s->reached = 1;
	s->rel_mask = BIT(c->sp);
	s->rel[c->sp] = -c->a->entry_sp_offset;
}

static void kill_reg(const struct actx *c, struct astate *s, unsigned r)
{
	if (r >= SW_MAX_REGS)
		return;
	s->rel_mask &= ~BIT(r);
	s->konst_mask &= ~BIT(r);
	if (r == c->fp)
		s->fp_frame = 0;
	if (c->track & BIT(r)) {
		s->modified |= BIT(r);
		/* lr held the return address and nothing saved it: it is gone. */
		if (c->lr >= 0 && r == (unsigned)c->lr && !(s->saved_mask & BIT(r)))
			s->ra_lost = 1;
	}
}

static bool rel_of(const struct astate *s, unsigned r, int32_t *out)
{
	if (r >= SW_MAX_REGS || !(s->rel_mask & BIT(r)))
		return false;
	*out = s->rel[r];
	return true;
}

static void set_rel(struct astate *s, unsigned r, int64_t v)
{
	if (v < -(int64_t)SW_SWU_MAX_FRAME || v > (int64_t)SW_SWU_MAX_FRAME) {
		s->rel_mask &= ~BIT(r);
		return;
	}
	s->rel[r] = (int32_t)v;
	s->rel_mask |= BIT(r);
}

/* A store of r at CFA + slot: a save when r still holds the caller's value. */
static void store_reg(const struct actx *c, struct astate *s, unsigned r, int64_t slot)
{
	if (r >= SW_MAX_REGS || !(c->track & BIT(r)) || (s->saved_mask & BIT(r)) ||
	    (s->modified & BIT(r)) || slot < -(int64_t)SW_SWU_MAX_FRAME || slot >= 0)
		return;
	s->saved[r] = (int32_t)slot;
	s->saved_mask |= BIT(r);
}

/* A load of r from CFA + slot (known or not): its own slot restores it. */
static void load_reg(const struct actx *c, struct astate *s, unsigned r, bool known, int64_t slot)
{
	if (r >= SW_MAX_REGS)
		return;
	if (known && (s->saved_mask & BIT(r)) && s->saved[r] == slot) {
		s->saved_mask &= ~BIT(r);
		s->modified &= ~BIT(r);
		s->rel_mask &= ~BIT(r);
		if (r == c->fp)
			s->fp_frame = 0;
		return;
	}
	kill_reg(c, s, r);
}

static void mem_access(const struct actx *c, struct astate *s, const struct swi_effect *e)
{
	int32_t b = 0;
	bool known = rel_of(s, e->base, &b);
	int64_t addr = (int64_t)b + e->imm;

	if (e->op == SWI_EFF_STORE) {
		if (known && e->full) {
			if (e->r1 != NOREG)
				store_reg(c, s, e->r1, addr);
			if (e->r2 != NOREG)
				store_reg(c, s, e->r2, addr + 8);
		}
	} else {
		if (e->r1 != NOREG)
			load_reg(c, s, e->r1, known && e->full, addr);
		if (e->r2 != NOREG)
			load_reg(c, s, e->r2, known && e->full, addr + 8);
	}
	if (e->wb && e->base != NOREG && e->base != e->r1 && e->base != e->r2) {
		if (rel_of(s, e->base, &b))
			set_rel(s, e->base, (int64_t)b + e->wb);
	}
}

/* The state after instruction `e`, from the state before it. */
static void transfer(const struct actx *c, const struct swi_effect *e, const struct astate *in,
                     struct astate *out)
{
	int32_t v;

	*out = *in;
	switch (e->op) {
	case SWI_EFF_STORE:
	case SWI_EFF_LOAD:
		mem_access(c, out, e);
		break;
	case SWI_EFF_SET:
		if (e->kreg != NOREG && !(out->konst_mask & BIT(e->kreg))) {
			kill_reg(c, out, e->r1);
		} else if (rel_of(out, e->base, &v)) {
			int64_t k = e->kreg != NOREG ? e->ksign * out->konst[e->kreg] : 0;

			if (k < -(int64_t)SW_SWU_MAX_FRAME || k > (int64_t)SW_SWU_MAX_FRAME) {
				kill_reg(c, out, e->r1);
				break;
			}
			set_rel(out, e->r1, (int64_t)v + e->imm + k);
			out->konst_mask &= ~BIT(e->r1);
			if (c->track & BIT(e->r1))
				out->modified |= BIT(e->r1);
			if (e->r1 == c->fp)
				out->fp_frame = e->base == c->sp;
		} else {
			kill_reg(c, out, e->r1);
		}
		break;
	case SWI_EFF_CONST:
		kill_reg(c, out, e->r1);
		out->konst[e->r1] = e->kval;
		out->konst_mask |= BIT(e->r1);
		break;
	case SWI_EFF_CONST_PART:
		if (out->konst_mask & BIT(e->r1)) {
			uint64_t k = (uint64_t)out->konst[e->r1] & ~(0xffffULL << e->kshift);

			kill_reg(c, out, e->r1);
			out->konst[e->r1] = (int64_t)(k | ((uint64_t)e->kval << e->kshift));
			out->konst_mask |= BIT(e->r1);
		} else {
			kill_reg(c, out, e->r1);
		}
		break;
	case SWI_EFF_LEAVE:
		if (rel_of(out, c->fp, &v)) {
			struct swi_effect pop = { .op = SWI_EFF_LOAD, .r1 = (uint8_t)c->fp, .r2 = NOREG,
			                      .base = (uint8_t)c->sp, .full = 1, .imm = 0,
			                      .wb = (int32_t)c->p };

			set_rel(out, c->sp, v);
			mem_access(c, out, &pop);
		} else {
			kill_reg(c, out, c->sp);
			kill_reg(c, out, c->fp);
		}
		break;
	case SWI_EFF_CALL:
		/* The callee may change any register it need not preserve. */
		for (unsigned r = 0; r < c->a->nregs; r++)
			if (r != c->sp && !(c->a->callee_saved & BIT(r)))
				kill_reg(c, out, r);
		out->weak = 1;
		break;
	default:
		break;
	}
	for (uint64_t m = e->writes; m; m &= m - 1)
		kill_reg(c, out, (unsigned)__builtin_ctzll(m));
}

/* Do two states describe the same frame (ignoring what meeting may drop)? */
static bool same_frame(const struct actx *c, const struct astate *x, const struct astate *y)
{
	int32_t a, b;
	bool ka = rel_of(x, c->sp, &a), kb = rel_of(y, c->sp, &b);

	if (ka != kb || (ka && a != b) || x->ra_lost != y->ra_lost || x->fp_frame != y->fp_frame ||
	    x->saved_mask != y->saved_mask)
		return false;
	if (x->fp_frame) {
		ka = rel_of(x, c->fp, &a);
		kb = rel_of(y, c->fp, &b);
		if (ka != kb || (ka && a != b))
			return false;
	}
	for (uint64_t m = x->saved_mask; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		if (x->saved[r] != y->saved[r])
			return false;
	}
	return true;
}

/* Meet `in` into instruction i's state; true when it changed. */
static bool meet(struct actx *c, size_t i, const struct astate *in)
{
	struct astate *d = &c->st[i];
	uint64_t rel, kon, mod;
	uint8_t weak;

	if (!d->reached) {
		*d = *in;
		d->reached = 1;
		return true;
	}
	if (!same_frame(c, d, in)) {
		if (d->weak && !in->weak) {
			*d = *in;
			return true;
		}
		if (!d->weak && in->weak)
			return false;
		c->fail = SWI_AFAIL_MERGE;
		return false;
	}
	rel = d->rel_mask & in->rel_mask;
	for (uint64_t m = rel; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		if (d->rel[r] != in->rel[r])
			rel &= ~BIT(r);
	}
	kon = d->konst_mask & in->konst_mask;
	for (uint64_t m = kon; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		if (d->konst[r] != in->konst[r])
			kon &= ~BIT(r);
	}
	mod = d->modified | in->modified;
	weak = d->weak && in->weak;
	if (rel == d->rel_mask && kon == d->konst_mask && mod == d->modified && weak == d->weak)
		return false;
	d->rel_mask = rel;
	d->konst_mask = kon;
	d->modified = mod;
	d->weak = weak;
	return true;
}

/* The index of the instruction at `off`, or -1. */
static long find_insn(const struct actx *c, uint64_t off)
{
	size_t lo;

	SWI_SEARCH(lo, c->n, mid, c->fx[mid].off < off);
	return lo < c->n && c->fx[lo].off == off ? (long)lo : -1;
}

/* Follow every path from the instructions queued in `work`. */
static void propagate(struct actx *c, uint32_t *work, size_t nwork)
{
	uint64_t budget = 64 * (uint64_t)c->n + 64;

	while (nwork > 0 && !c->fail) {
		size_t i = work[--nwork];
		const struct swi_effect *e = &c->fx[i];
		struct astate out;
		long succ[2];
		int ns = 0;

		if (budget-- == 0) {
			c->fail = SWI_AFAIL_LIMIT;
			return;
		}
		if (e->op == SWI_EFF_BAD) {
			c->fail = SWI_AFAIL_DECODE;
			return;
		}
		if (e->op == SWI_EFF_PTRAUTH) {
			c->fail = SWI_AFAIL_PTRAUTH;
			return;
		}
		transfer(c, e, &c->st[i], &out);
		if (e->op == SWI_EFF_JMP || e->op == SWI_EFF_JCC) {
			if (e->target >= c->addr && e->target - c->addr < c->size) {
				succ[ns] = find_insn(c, e->target - c->addr);
				if (succ[ns] < 0) {
					c->fail = SWI_AFAIL_BRANCH;
					return;
				}
				ns++;
			}
		}
		if (e->op != SWI_EFF_JMP && e->op != SWI_EFF_RET && e->op != SWI_EFF_IJMP && e->op != SWI_EFF_STOP &&
		    i + 1 < c->n)
			succ[ns++] = (long)(i + 1);
		for (int k = 0; k < ns; k++)
			if (meet(c, (size_t)succ[k], &out))
				work[nwork++] = (uint32_t)succ[k];
	}
}

static bool is_padding(const struct swi_effect *e)
{
	return e->op == SWI_EFF_NOP || e->op == SWI_EFF_STOP;
}

/*
 * The state unreached code starts from: in a stub the entry's; else the
 * state of the function's indirect jumps that are not tail calls (all
 * alike), or the entry's when every indirect jump is one.
 */
static bool unreached_seed(const struct actx *c, unsigned mode, struct astate *seed)
{
	struct astate entry;
	bool have = false;

	entry_state(c, &entry);
	*seed = entry;
	if (mode & SWI_ANALYZE_STUB)
		return true;
	for (size_t i = 0; i < c->n; i++) {
		const struct astate *s = &c->st[i];

		if (c->fx[i].op != SWI_EFF_IJMP || !s->reached || same_frame(c, s, &entry))
			continue;
		if (have && !same_frame(c, s, seed))
			return false;
		*seed = *s;
		have = true;
	}
	if (!have) {
		for (size_t i = 0; i < c->n; i++)
			if (c->fx[i].op == SWI_EFF_IJMP && c->st[i].reached)
				return true;
		return false;
	}
	seed->weak = 0;
	return true;
}

/* ---- Decoding: effects both architectures describe ---- */

/*
 * d = base + imm: what moves SP and FP.  transfer() follows d from here
 * on, so it no longer counts among the registers the instruction clobbers.
 */
static void set_effect(struct swi_effect *e, unsigned d, unsigned base, int32_t imm)
{
	e->op = SWI_EFF_SET;
	e->r1 = (uint8_t)d;
	e->base = (uint8_t)base;
	e->imm = imm;
	e->writes &= ~BIT(d);
}

/* d = base + sign * k, k a register that holds a known constant (a large frame). */
static void set_known_effect(struct swi_effect *e, unsigned d, unsigned base, unsigned k, int sign)
{
	set_effect(e, d, base, 0);
	e->kreg = (uint8_t)k;
	e->ksign = (int8_t)sign;
}

/* d = v: remembered, for a later set_known_effect() that reads d. */
static void const_effect(struct swi_effect *e, unsigned d, int64_t v)
{
	e->op = SWI_EFF_CONST;
	e->r1 = (uint8_t)d;
	e->kval = v;
	e->writes &= ~BIT(d);
}

/* ---- Decoding: x86 and x86-64 ---- */

/* Capstone x86 register -> AMD64 encoding (0-15) and width in bits, or -1. */
static int x86_family(unsigned reg, unsigned *bits)
{
	static const struct { uint16_t reg; uint8_t fam, bits; } map[] = {
		{ X86_REG_RAX, 0, 64 }, { X86_REG_EAX, 0, 32 }, { X86_REG_AX, 0, 16 }, { X86_REG_AL, 0, 8 }, { X86_REG_AH, 0, 8 },
		{ X86_REG_RCX, 1, 64 }, { X86_REG_ECX, 1, 32 }, { X86_REG_CX, 1, 16 }, { X86_REG_CL, 1, 8 }, { X86_REG_CH, 1, 8 },
		{ X86_REG_RDX, 2, 64 }, { X86_REG_EDX, 2, 32 }, { X86_REG_DX, 2, 16 }, { X86_REG_DL, 2, 8 }, { X86_REG_DH, 2, 8 },
		{ X86_REG_RBX, 3, 64 }, { X86_REG_EBX, 3, 32 }, { X86_REG_BX, 3, 16 }, { X86_REG_BL, 3, 8 }, { X86_REG_BH, 3, 8 },
		{ X86_REG_RSP, 4, 64 }, { X86_REG_ESP, 4, 32 }, { X86_REG_SP, 4, 16 }, { X86_REG_SPL, 4, 8 },
		{ X86_REG_RBP, 5, 64 }, { X86_REG_EBP, 5, 32 }, { X86_REG_BP, 5, 16 }, { X86_REG_BPL, 5, 8 },
		{ X86_REG_RSI, 6, 64 }, { X86_REG_ESI, 6, 32 }, { X86_REG_SI, 6, 16 }, { X86_REG_SIL, 6, 8 },
		{ X86_REG_RDI, 7, 64 }, { X86_REG_EDI, 7, 32 }, { X86_REG_DI, 7, 16 }, { X86_REG_DIL, 7, 8 },
	};
	static const uint16_t rn[4][8] = {
		{ X86_REG_R8, X86_REG_R9, X86_REG_R10, X86_REG_R11, X86_REG_R12, X86_REG_R13, X86_REG_R14, X86_REG_R15 },
		{ X86_REG_R8D, X86_REG_R9D, X86_REG_R10D, X86_REG_R11D, X86_REG_R12D, X86_REG_R13D, X86_REG_R14D, X86_REG_R15D },
		{ X86_REG_R8W, X86_REG_R9W, X86_REG_R10W, X86_REG_R11W, X86_REG_R12W, X86_REG_R13W, X86_REG_R14W, X86_REG_R15W },
		{ X86_REG_R8B, X86_REG_R9B, X86_REG_R10B, X86_REG_R11B, X86_REG_R12B, X86_REG_R13B, X86_REG_R14B, X86_REG_R15B },
	};

	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (map[i].reg == reg) {
			*bits = map[i].bits;
			return map[i].fam;
		}
	for (unsigned w = 0; w < 4; w++)
		for (int i = 0; i < 8; i++)
			if (reg == rn[w][i]) {
				*bits = 64u >> w;
				return 8 + i;
			}
	return -1;
}

/*
 * Capstone x86 register -> the library's number, or NOREG.  *whole: it is
 * the register at the architecture's full width (a push or store of it
 * saves it; a write of a part only destroys it).
 */
static unsigned x86_lreg(const struct actx *c, unsigned reg, bool *whole)
{
	/* AMD64 encoding order -> DWARF numbers (i386's are the encoding order). */
	static const uint8_t x64[16] = { 0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15 };
	unsigned bits = 0;
	int fam = x86_family(reg, &bits);

	*whole = false;
	if (fam < 0 || (c->arch == SW_ARCH_X86 && fam >= 8))
		return NOREG;
	*whole = bits == 8 * c->p;
	return c->arch == SW_ARCH_X64 ? x64[fam] : (unsigned)fam;
}

/* Registers an instruction writes, in the library's numbering (all when unknown). */
static unsigned map_reg(const struct actx *c, unsigned reg, bool *whole);

static uint64_t written_regs(const struct actx *c, csh h, const cs_insn *in)
{
	cs_regs rd, wr;
	uint8_t nr = 0, nw = 0;
	uint64_t m = 0;

	if (cs_regs_access(h, in, rd, &nr, wr, &nw) != CS_ERR_OK)
		return c->a->nregs >= 64 ? ~0ULL : BIT(c->a->nregs) - 1;
	for (unsigned i = 0; i < nw; i++) {
		bool whole;
		unsigned r = map_reg(c, wr[i], &whole);

		if (r != NOREG && r != c->a->ip_reg)
			m |= BIT(r);
	}
	return m;
}

static void x86_effect(const struct actx *c, csh h, const cs_insn *in, struct swi_effect *e)
{
	const cs_x86 *x = &in->detail->x86;
	const cs_x86_op *o = x->operands;
	int32_t p = (int32_t)c->p;
	bool w0 = false, w1 = false;
	unsigned d, s;

	switch (in->id) {
	case X86_INS_PUSH:
	case X86_INS_PUSHF: case X86_INS_PUSHFD: case X86_INS_PUSHFQ:
		if (in->id == X86_INS_PUSH && (x->op_count != 1 || o[0].size != c->p))
			return;         /* a 16-bit push: left to the generic rule */
		e->op = SWI_EFF_STORE;
		e->base = (uint8_t)c->sp;
		e->imm = e->wb = -p;
		e->full = 1;
		if (in->id == X86_INS_PUSH && o[0].type == X86_OP_REG)
			e->r1 = (uint8_t)x86_lreg(c, o[0].reg, &w0);
		e->writes = 0;
		return;
	case X86_INS_POP:
	case X86_INS_POPF: case X86_INS_POPFD: case X86_INS_POPFQ:
		if (in->id == X86_INS_POP && (x->op_count != 1 || o[0].size != c->p))
			return;
		e->op = SWI_EFF_LOAD;
		e->base = (uint8_t)c->sp;
		e->imm = 0;
		e->wb = p;
		e->full = 1;
		if (in->id == X86_INS_POP && o[0].type == X86_OP_REG) {
			e->r1 = (uint8_t)x86_lreg(c, o[0].reg, &w0);
			if (e->r1 == c->sp)
				e->op = SWI_EFF_GENERIC;    /* pop rsp */
		}
		/* The load itself writes the register: load_reg() decides what it means. */
		if (e->op == SWI_EFF_LOAD)
			e->writes &= ~(BIT(c->sp) | (e->r1 < SW_MAX_REGS ? BIT(e->r1) : 0));
		return;
	case X86_INS_ADD:
	case X86_INS_SUB:
		if (x->op_count == 2 && o[0].type == X86_OP_REG && o[1].type == X86_OP_IMM &&
		    (d = x86_lreg(c, o[0].reg, &w0)) != NOREG && w0 &&
		    o[1].imm >= -(int64_t)SW_SWU_MAX_FRAME && o[1].imm <= (int64_t)SW_SWU_MAX_FRAME) {
			set_effect(e, d, d, (int32_t)(in->id == X86_INS_SUB ? -o[1].imm : o[1].imm));
		} else if (x->op_count == 2 && o[0].type == X86_OP_REG && o[1].type == X86_OP_REG &&
		           (d = x86_lreg(c, o[0].reg, &w0)) != NOREG && w0 &&
		           (s = x86_lreg(c, o[1].reg, &w1)) != NOREG && w1) {
			/* sub %rax, %rsp after mov $N, %eax: a known size. */
			set_known_effect(e, d, d, s, in->id == X86_INS_SUB ? -1 : 1);
		}
		return;
	case X86_INS_LEA:
		/* lea 0(%esi,%eiz,1), %esi: padding. */
		if (x->op_count == 2 && o[0].type == X86_OP_REG && o[1].type == X86_OP_MEM &&
		    o[1].mem.base == o[0].reg && o[1].mem.disp == 0 &&
		    (o[1].mem.index == X86_REG_INVALID || o[1].mem.index == X86_REG_EIZ ||
		     o[1].mem.index == X86_REG_RIZ)) {
			e->op = SWI_EFF_NOP;
			e->writes = 0;
			return;
		}
		if (x->op_count == 2 && o[0].type == X86_OP_REG && o[1].type == X86_OP_MEM &&
		    o[1].mem.index == X86_REG_INVALID && o[1].mem.segment == X86_REG_INVALID &&
		    (d = x86_lreg(c, o[0].reg, &w0)) != NOREG && w0 &&
		    (s = x86_lreg(c, o[1].mem.base, &w1)) != NOREG && w1 &&
		    o[1].mem.disp >= -(int64_t)SW_SWU_MAX_FRAME && o[1].mem.disp <= (int64_t)SW_SWU_MAX_FRAME) {
			set_effect(e, d, s, (int32_t)o[1].mem.disp);
		}
		return;
	case X86_INS_MOV:
		if (x->op_count != 2)
			return;
		if (o[0].type == X86_OP_REG && o[1].type == X86_OP_IMM) {
			d = x86_lreg(c, o[0].reg, &w0);
			if (d != NOREG && w0)
				const_effect(e, d, o[1].imm);
			return;
		}
		if (o[0].type == X86_OP_REG && o[1].type == X86_OP_REG) {
			d = x86_lreg(c, o[0].reg, &w0);
			s = x86_lreg(c, o[1].reg, &w1);
			if (d != NOREG && w0 && s != NOREG && w1)
				set_effect(e, d, s, 0);
			return;
		}
		if ((o[0].type == X86_OP_MEM && o[1].type == X86_OP_REG) ||
		    (o[0].type == X86_OP_REG && o[1].type == X86_OP_MEM)) {
			const cs_x86_op *m = o[0].type == X86_OP_MEM ? &o[0] : &o[1];
			const cs_x86_op *r = o[0].type == X86_OP_MEM ? &o[1] : &o[0];

			e->op = o[0].type == X86_OP_MEM ? SWI_EFF_STORE : SWI_EFF_LOAD;
			e->r1 = (uint8_t)x86_lreg(c, r->reg, &w0);
			e->r2 = NOREG;
			e->full = w0 && r->size == c->p;
			e->base = NOREG;
			if (m->mem.index == X86_REG_INVALID && m->mem.segment == X86_REG_INVALID &&
			    m->mem.disp >= -(int64_t)SW_SWU_MAX_FRAME && m->mem.disp <= (int64_t)SW_SWU_MAX_FRAME) {
				s = x86_lreg(c, m->mem.base, &w1);
				e->base = (uint8_t)(w1 ? s : NOREG);
				e->imm = (int32_t)m->mem.disp;
			}
			e->writes = 0;
		}
		return;
	case X86_INS_LEAVE:
		e->op = SWI_EFF_LEAVE;
		e->writes = 0;
		return;
	case X86_INS_CALL:
	case X86_INS_LCALL:
		if (x->op_count == 1 && o[0].type == X86_OP_IMM &&
		    (uint64_t)o[0].imm == in->address + in->size) {
			/* call 1f; 1: pop ebx - a push of the return address. */
			e->op = SWI_EFF_STORE;
			e->base = (uint8_t)c->sp;
			e->imm = e->wb = -p;
			e->writes = 0;
			return;
		}
		e->op = SWI_EFF_CALL;
		e->writes &= ~BIT(c->sp);
		return;
	case X86_INS_RET: case X86_INS_RETF: case X86_INS_RETFQ:
	case X86_INS_IRET: case X86_INS_IRETD: case X86_INS_IRETQ:
		e->op = SWI_EFF_RET;
		return;
	case X86_INS_JMP:
		if (x->op_count == 1 && o[0].type == X86_OP_IMM) {
			e->op = SWI_EFF_JMP;
			e->target = (uint64_t)o[0].imm;
		} else {
			e->op = SWI_EFF_IJMP;
		}
		return;
	case X86_INS_LJMP:
		e->op = SWI_EFF_IJMP;
		return;
	case X86_INS_HLT: case X86_INS_UD2: case X86_INS_UD0: case X86_INS_INT3:
		e->op = SWI_EFF_STOP;
		return;
	case X86_INS_NOP: case X86_INS_ENDBR64: case X86_INS_ENDBR32:
		e->op = SWI_EFF_NOP;
		e->writes = 0;
		return;
	default:
		if (cs_insn_group(h, in, CS_GRP_JUMP) && x->op_count >= 1 &&
		    o[x->op_count - 1].type == X86_OP_IMM) {
			e->op = SWI_EFF_JCC;
			e->target = (uint64_t)o[x->op_count - 1].imm;
		}
		return;
	}
}

/* ---- Decoding: arm64 ---- */

static unsigned a64_reg(unsigned reg, bool *whole)
{
	*whole = true;
	if (reg >= ARM64_REG_X0 && reg <= ARM64_REG_X28)
		return reg - ARM64_REG_X0;
	if (reg == ARM64_REG_X29)
		return SW_ARM64_FP;
	if (reg == ARM64_REG_X30)
		return SW_ARM64_LR;
	if (reg == ARM64_REG_SP)
		return SW_ARM64_SP;
	if (reg >= ARM64_REG_D8 && reg <= ARM64_REG_D15)
		return SW_ARM64_D8 + (reg - ARM64_REG_D8);
	*whole = false;
	if (reg >= ARM64_REG_W0 && reg <= ARM64_REG_W30)
		return reg - ARM64_REG_W0;
	if (reg == ARM64_REG_WSP)
		return SW_ARM64_SP;
	/* Other views of v8-v15: writing them destroys d8-d15. */
	if (reg >= ARM64_REG_Q8 && reg <= ARM64_REG_Q15)
		return SW_ARM64_D8 + (reg - ARM64_REG_Q8);
	if (reg >= ARM64_REG_S8 && reg <= ARM64_REG_S15)
		return SW_ARM64_D8 + (reg - ARM64_REG_S8);
	if (reg >= ARM64_REG_H8 && reg <= ARM64_REG_H15)
		return SW_ARM64_D8 + (reg - ARM64_REG_H8);
	if (reg >= ARM64_REG_B8 && reg <= ARM64_REG_B15)
		return SW_ARM64_D8 + (reg - ARM64_REG_B8);
	if (reg >= ARM64_REG_V8 && reg <= ARM64_REG_V15)
		return SW_ARM64_D8 + (reg - ARM64_REG_V8);
	return NOREG;
}

static unsigned map_reg(const struct actx *c, unsigned reg, bool *whole)
{
	return c->arch == SW_ARCH_ARM64 ? a64_reg(reg, whole) : x86_lreg(c, reg, whole);
}

/* ldp/stp/ldr/str/ldur/stur with an immediate offset: pre-, post- or no index. */
static void a64_mem(const cs_insn *in, bool store, struct swi_effect *e)
{
	const cs_arm64 *x = &in->detail->arm64;
	const cs_arm64_op *o = x->operands;
	unsigned k = 0, b;
	bool w0 = false, w1 = true, wb = false;

	while (k < x->op_count && o[k].type == ARM64_OP_REG)
		k++;
	if (k < 1 || k > 2 || k >= x->op_count || o[k].type != ARM64_OP_MEM ||
	    o[k].mem.index != ARM64_REG_INVALID)
		return;
	b = a64_reg(o[k].mem.base, &wb);
	if (b == NOREG || !wb)
		return;
	e->op = store ? SWI_EFF_STORE : SWI_EFF_LOAD;
	e->base = (uint8_t)b;
	e->r1 = (uint8_t)a64_reg(o[0].reg, &w0);
	e->r2 = k == 2 ? (uint8_t)a64_reg(o[1].reg, &w1) : NOREG;
	e->full = w0 && w1;
	e->imm = o[k].mem.disp;
	if (k + 1 < x->op_count && o[k + 1].type == ARM64_OP_IMM)
		e->wb = (int32_t)o[k + 1].imm;          /* post-index: [base], #imm */
	else if (x->writeback)
		e->wb = o[k].mem.disp;                  /* pre-index: [base, #imm]! */
	e->writes &= ~BIT(b);
	if (!store) {
		if (e->r1 != NOREG)
			e->writes &= ~BIT(e->r1);
		if (e->r2 != NOREG)
			e->writes &= ~BIT(e->r2);
	}
}

static void a64_effect(const struct actx *c, csh h, const cs_insn *in, struct swi_effect *e)
{
	const cs_arm64 *x = &in->detail->arm64;
	const cs_arm64_op *o = x->operands;
	bool w0 = false, w1 = false;
	unsigned d, s;

	SWI_UNUSED(c);
	SWI_UNUSED(h);
	switch (in->id) {
	case ARM64_INS_STP: case ARM64_INS_STR: case ARM64_INS_STUR:
		a64_mem(in, true, e);
		return;
	case ARM64_INS_LDP: case ARM64_INS_LDR: case ARM64_INS_LDUR:
		a64_mem(in, false, e);
		return;
	case ARM64_INS_ADD:
	case ARM64_INS_SUB:
		if (x->op_count == 3 && o[0].type == ARM64_OP_REG && o[1].type == ARM64_OP_REG &&
		    o[2].type == ARM64_OP_IMM && o[2].imm >= 0 && o[2].imm < (1 << 24) &&
		    (d = a64_reg(o[0].reg, &w0)) != NOREG && w0 &&
		    (s = a64_reg(o[1].reg, &w1)) != NOREG && w1) {
			int64_t v = o[2].imm;

			if (o[2].shift.type == ARM64_SFT_LSL && o[2].shift.value == 12)
				v <<= 12;
			else if (o[2].shift.type != ARM64_SFT_INVALID)
				return;
			set_effect(e, d, s, (int32_t)(in->id == ARM64_INS_SUB ? -v : v));
		} else if (x->op_count == 3 && o[0].type == ARM64_OP_REG && o[1].type == ARM64_OP_REG &&
		           o[2].type == ARM64_OP_REG && o[2].shift.type == ARM64_SFT_INVALID &&
		           o[2].ext == ARM64_EXT_INVALID &&
		           (d = a64_reg(o[0].reg, &w0)) != NOREG && w0 &&
		           (s = a64_reg(o[1].reg, &w1)) != NOREG && w1) {
			unsigned k = a64_reg(o[2].reg, &w1);

			/* sub sp, sp, x12 after mov x12, #N: a large frame. */
			if (k == NOREG || !w1)
				return;
			set_known_effect(e, d, s, k, in->id == ARM64_INS_SUB ? -1 : 1);
		}
		return;
	case ARM64_INS_MOVZ:
	case ARM64_INS_MOVK:
		if (x->op_count == 2 && o[0].type == ARM64_OP_REG && o[1].type == ARM64_OP_IMM &&
		    (d = a64_reg(o[0].reg, &w0)) != NOREG && w0 && d < SW_ARM64_SP) {
			unsigned sh = o[1].shift.type == ARM64_SFT_LSL ? o[1].shift.value : 0;

			if (sh > 48)
				return;
			e->op = in->id == ARM64_INS_MOVZ ? SWI_EFF_CONST : SWI_EFF_CONST_PART;
			e->r1 = (uint8_t)d;
			e->kval = in->id == ARM64_INS_MOVZ ? (int64_t)((uint64_t)o[1].imm << sh) : o[1].imm;
			e->kshift = (uint8_t)sh;
			e->writes &= ~BIT(d);
		}
		return;
	case ARM64_INS_MOV:
		if (x->op_count == 2 && o[0].type == ARM64_OP_REG && o[1].type == ARM64_OP_IMM &&
		    (d = a64_reg(o[0].reg, &w0)) != NOREG && w0 && d < SW_ARM64_SP) {
			const_effect(e, d, o[1].imm);
			return;
		}
		if (x->op_count == 2 && o[0].type == ARM64_OP_REG && o[1].type == ARM64_OP_REG &&
		    (d = a64_reg(o[0].reg, &w0)) != NOREG && w0 &&
		    (s = a64_reg(o[1].reg, &w1)) != NOREG && w1 && d < SW_ARM64_PC && s < SW_ARM64_PC)
			set_effect(e, d, s, 0);
		return;
	case ARM64_INS_BL:
	case ARM64_INS_BLR:
		e->op = SWI_EFF_CALL;
		e->writes |= BIT(SW_ARM64_LR);
		return;
	case ARM64_INS_B:
		e->op = x->cc == ARM64_CC_INVALID || x->cc == ARM64_CC_AL ? SWI_EFF_JMP : SWI_EFF_JCC;
		if (x->op_count >= 1 && o[0].type == ARM64_OP_IMM)
			e->target = (uint64_t)o[0].imm;
		else
			e->op = SWI_EFF_BAD;
		return;
	case ARM64_INS_CBZ: case ARM64_INS_CBNZ: case ARM64_INS_TBZ: case ARM64_INS_TBNZ:
		e->op = SWI_EFF_JCC;
		if (x->op_count >= 2 && o[x->op_count - 1].type == ARM64_OP_IMM)
			e->target = (uint64_t)o[x->op_count - 1].imm;
		else
			e->op = SWI_EFF_BAD;
		return;
	case ARM64_INS_BR:
		e->op = SWI_EFF_IJMP;
		return;
	case ARM64_INS_RET:
		e->op = SWI_EFF_RET;
		return;
	case ARM64_INS_BRK: case ARM64_INS_HLT:
		e->op = SWI_EFF_STOP;
		return;
	case ARM64_INS_NOP:
		e->op = SWI_EFF_NOP;
		e->writes = 0;
		return;
	case ARM64_INS_HINT:
		/* paciasp, pacibsp, autiasp, autibsp: a signed return address. */
		if (x->op_count == 1 && o[0].type == ARM64_OP_IMM &&
		    (o[0].imm == 25 || o[0].imm == 27 || o[0].imm == 29 || o[0].imm == 31)) {
			e->op = SWI_EFF_PTRAUTH;
			e->kval = o[0].imm;
		} else {
			e->op = SWI_EFF_NOP;
		}
		e->writes = 0;
		return;
	default:
		return;
	}
}

/* ---- The driver ---- */

/* Capstone for `arch`, with instruction details when `detail`. */
static sw_status open_disassembler(sw_arch arch, bool detail, csh *h)
{
	bool arm = arch == SW_ARCH_ARM64;

	if (arch != SW_ARCH_ARM64 && arch != SW_ARCH_X64 && arch != SW_ARCH_X86)
		return SW_E_UNSUPPORTED;
	if (cs_open(arm ? CS_ARCH_ARM64 : CS_ARCH_X86,
	            arm ? CS_MODE_ARM : arch == SW_ARCH_X64 ? CS_MODE_64 : CS_MODE_32, h) != CS_ERR_OK)
		return SW_E_UNSUPPORTED;
	if (detail)
		cs_option(*h, CS_OPT_DETAIL, CS_OPT_ON);
	return SW_OK;
}

static sw_status decode(struct actx *c, const uint8_t *code)
{
	csh h;
	cs_insn *in;
	const uint8_t *p = code;
	size_t left = c->size, cap = 0;
	uint64_t pc = c->addr;
	sw_status st;
	bool arm = c->arch == SW_ARCH_ARM64;

	if ((st = open_disassembler(c->arch, true, &h)) != SW_OK)
		return st;
	in = cs_malloc(h);
	if (!in) {
		cs_close(&h);
		return SW_E_NOMEM;
	}
	while (left > 0) {
		struct swi_effect *e;
		uint64_t at = pc;

		if (c->n >= SWI_ANALYZE_MAX_INSNS) {
			c->fail = SWI_AFAIL_LIMIT;
			break;
		}
		if (swi_array_grow((void **)&c->fx, &cap, c->n + 1, sizeof *c->fx) != SW_OK) {
			st = SW_E_NOMEM;
			break;
		}
		e = &c->fx[c->n++];
		memset(e, 0, sizeof *e);
		e->off = (uint32_t)(at - c->addr);
		e->r1 = e->r2 = e->base = e->kreg = NOREG;
		if (!cs_disasm_iter(h, &p, &left, &pc, in)) {
			/* arm64 goes on at the next word; x86 cannot know where that is. */
			e->op = SWI_EFF_BAD;
			e->len = arm && left >= 4 ? 4 : (uint32_t)left;
			p += e->len;
			left -= e->len;
			pc += e->len;
			continue;
		}
		e->len = in->size;
		e->writes = written_regs(c, h, in);
		if (arm)
			a64_effect(c, h, in, e);
		else
			x86_effect(c, h, in, e);
	}
	cs_free(in, 1);
	cs_close(&h);
	return st;
}

/* The first pass alone, for the verifier. */
sw_status swi_decode(sw_arch arch, const uint8_t *code, size_t size, uint64_t addr,
                     struct swi_effect **out, size_t *n)
{
	struct actx c;
	sw_status st;

	if (!out || !n)
		return SW_E_INVAL;
	*out = NULL;
	*n = 0;
	memset(&c, 0, sizeof c);
	c.arch = arch;
	c.a = swi_arch_get(arch);
	if (!c.a || !code || size == 0 || addr + size < addr)
		return SW_E_INVAL;
	c.p = c.a->ptr_size;
	c.sp = c.a->sp_reg;
	c.fp = c.a->fp_reg;
	c.lr = c.a->lr_reg;
	c.addr = addr;
	c.size = size;
	st = decode(&c, code);
	if (st == SW_OK && c.fail)
		st = SW_E_LIMIT;
	if (st != SW_OK) {
		free(c.fx);
		return st;
	}
	*out = c.fx;
	*n = c.n;
	return SW_OK;
}

void swi_insn_text(sw_arch arch, const uint8_t *code, size_t size, uint64_t addr,
                   char *buf, size_t len)
{
	cs_insn *in = NULL;
	csh h;

	if (len == 0)
		return;
	snprintf(buf, len, "(bad)");
	if (!code || size == 0 || open_disassembler(arch, false, &h) != SW_OK)
		return;
	if (cs_disasm(h, code, size, addr, 1, &in) == 1)
		snprintf(buf, len, "%s%s%s", in->mnemonic, in->op_str[0] ? " " : "", in->op_str);
	if (in)
		cs_free(in, 1);
	cs_close(&h);
}

/* The rule of a state; not ok when SWU cannot say it. */
static void make_rule(const struct actx *c, const struct astate *s, struct swi_arule *r)
{
	int32_t v;
	unsigned base = NOREG;

	r->reached = s->reached;
	r->weak = s->weak;
	r->rel_mask = s->rel_mask;
	r->saved_mask = s->saved_mask;
	r->modified = s->modified;
	memcpy(r->rel, s->rel, sizeof r->rel);
	memcpy(r->saved, s->saved, sizeof r->saved);
	r->ra_in_lr = c->lr >= 0 && !(s->saved_mask & BIT(c->lr));
	if (c->arch != SW_ARCH_ARM64 && s->fp_frame && rel_of(s, c->fp, &v))
		base = c->fp;
	else if (rel_of(s, c->sp, &v))
		base = c->sp;
	else if (rel_of(s, c->fp, &v))
		base = c->fp;
	else if (s->rel_mask)
		base = (unsigned)__builtin_ctzll(s->rel_mask);
	r->ok = base != NOREG && !s->ra_lost;
	if (!r->ok)
		return;
	r->cfa_reg = base;
	r->cfa_offset = -s->rel[base];
	/* SP above the return address's slot: it has been popped. */
	if (base == c->sp && r->cfa_offset < c->a->entry_sp_offset)
		r->ok = 0;
}

static sw_status run(struct actx *c, const uint8_t *code, unsigned mode, struct swi_analysis *out)
{
	struct astate seed;
	uint32_t *work;
	sw_status st;

	if ((st = decode(c, code)) != SW_OK || c->fail || c->n == 0)
		return st;
	c->st = calloc(c->n, sizeof *c->st);
	work = malloc(c->n * sizeof *work);
	out->rules = calloc(c->n, sizeof *out->rules);
	if (!c->st || !work || !out->rules) {
		free(work);
		return SW_E_NOMEM;
	}
	entry_state(c, &c->st[0]);
	work[0] = 0;
	propagate(c, work, 1);
	/* Code no path reaches: jump-table targets (or stubs' lazy paths), or padding. */
	for (size_t i = 0; i < c->n && !c->fail; i++) {
		if (c->st[i].reached || is_padding(&c->fx[i]) || c->fx[i].op == SWI_EFF_BAD)
			continue;
		if (!unreached_seed(c, mode, &seed)) {
			c->fail = SWI_AFAIL_UNREACHED;
			break;
		}
		c->st[i] = seed;
		c->st[i].reached = 1;
		work[0] = (uint32_t)i;
		propagate(c, work, 1);
	}
	free(work);
	if (c->fail)
		return SW_OK;
	for (size_t i = 0; i < c->n; i++) {
		struct swi_arule *r = &out->rules[i];

		if (c->st[i].reached) {
			make_rule(c, &c->st[i], r);
		} else if (i > 0) {
			*r = out->rules[i - 1];         /* padding: as the code before it */
			r->reached = 0;
		} else {
			entry_state(c, &seed);
			make_rule(c, &seed, r);
			r->reached = 0;
		}
		r->offset = c->fx[i].off;
		r->length = c->fx[i].len;
	}
	out->n = c->n;
	return SW_OK;
}

sw_status swi_analyze(sw_arch arch, const uint8_t *code, size_t size, uint64_t addr,
                      unsigned mode, struct swi_analysis *out)
{
	struct actx c;
	sw_status st;

	if (!out)
		return SW_E_INVAL;
	memset(out, 0, sizeof *out);
	memset(&c, 0, sizeof c);
	c.arch = arch;
	c.a = swi_arch_get(arch);
	if (!c.a || !code || size == 0 || addr + size < addr)
		return SW_E_INVAL;
	if (size > SWI_ANALYZE_MAX_CODE) {
		out->fail = SWI_AFAIL_LIMIT;
		return SW_OK;
	}
	c.p = c.a->ptr_size;
	c.sp = c.a->sp_reg;
	c.fp = c.a->fp_reg;
	c.lr = c.a->lr_reg;
	c.track = c.a->callee_saved | (c.lr >= 0 ? BIT(c.lr) : 0);
	c.addr = addr;
	c.size = size;
	st = run(&c, code, mode, out);
	if (st == SW_OK && c.fail)
		out->fail = c.fail;
	else if (st == SW_OK && out->n == 0)
		out->fail = SWI_AFAIL_DECODE;
	if (st != SW_OK || out->fail) {
		free(out->rules);
		out->rules = NULL;
		out->n = 0;
	}
	free(c.fx);
	free(c.st);
	return st;
}

void swi_analysis_free(struct swi_analysis *an)
{
	if (!an)
		return;
	free(an->rules);
	memset(an, 0, sizeof *an);
}

/* ---- Pieces as SWU row blobs ---- */

static sw_status rule_diff(sw_swu_builder *b, uint32_t at, const struct swi_arule *prev,
                           const struct swi_arule *cur)
{
	sw_status st = SW_OK;

	if (cur->cfa_reg != prev->cfa_reg)
		st = sw_swu_def_cfa(b, at, cur->cfa_reg, cur->cfa_offset);
	else if (cur->cfa_offset != prev->cfa_offset)
		st = sw_swu_def_cfa_offset(b, at, cur->cfa_offset);
	for (uint64_t m = cur->saved_mask | prev->saved_mask; st == SW_OK && m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		if (!(cur->saved_mask & BIT(r)))
			st = sw_swu_same_value(b, at, r);
		else if (!(prev->saved_mask & BIT(r)) || prev->saved[r] != cur->saved[r])
			st = sw_swu_saved_at(b, at, r, cur->saved[r]);
	}
	return st;
}

static sw_status emit_piece(sw_swu_builder *b, const struct swi_analysis *an, const struct swi_arch *a,
                            size_t from, size_t to, uint32_t end, swi_piece_fn piece, void *ctx)
{
	struct swi_arule prev;
	uint32_t base = an->rules[from].offset;
	size_t need = 0, len = 0;
	uint8_t *buf;
	sw_status st;

	memset(&prev, 0, sizeof prev);
	prev.cfa_reg = a->sp_reg;
	prev.cfa_offset = a->entry_sp_offset;
	sw_swu_builder_reset(b);
	for (size_t k = from; k < to; k++) {
		if ((st = rule_diff(b, an->rules[k].offset - base, &prev, &an->rules[k])) != SW_OK)
			return st;
		prev = an->rules[k];
	}
	st = sw_swu_finish(b, end - base, NULL, 0, &need);
	if (st != SW_E_LIMIT || need == 0)
		return st == SW_OK ? SW_E_BADMETA : st;
	if (!(buf = malloc(need)))
		return SW_E_NOMEM;
	st = sw_swu_finish(b, end - base, buf, need, &len);
	if (st == SW_OK)
		st = piece(ctx, base, end - base, buf, len);
	free(buf);
	return st;
}

sw_status swi_analysis_pieces(const struct swi_analysis *an, sw_arch arch, uint32_t code_size,
                              swi_piece_fn piece, void *ctx)
{
	const struct swi_arch *a = swi_arch_get(arch);
	sw_swu_builder *b;
	sw_status st = SW_OK;
	size_t i = 0;

	if (!an || !a || !piece || an->n == 0)
		return SW_E_INVAL;
	if ((st = sw_swu_builder_create(&b, arch)) != SW_OK)
		return st;
	while (i < an->n && st == SW_OK) {
		size_t j = i;

		if (!an->rules[i].ok) {
			i++;
			continue;
		}
		while (j < an->n && an->rules[j].ok)
			j++;
		st = emit_piece(b, an, a, i, j, j < an->n ? an->rules[j].offset : code_size, piece, ctx);
		i = j;
	}
	sw_swu_builder_destroy(b);
	return st;
}
