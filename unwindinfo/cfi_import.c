/*
 * cfi_import.c - DWARF CFI (.eh_frame, .debug_frame) into SWU row blobs.
 *
 * The FDEs are listed by reading each section with dwarf_next_cfi() and
 * decoding their address ranges here (libdw does not hand them out); the
 * rules come from libdw itself: dwarf_cfi_addrframe() gives the row that
 * holds at an address and the range it covers, so one call per row walks
 * a function.  Each row is compared with the previous one and only the
 * differences become SWU row ops, so the blob holds, at every offset,
 * exactly the rule libdw computes there.
 *
 * Everything is bounded: FDE size, rows per FDE, the work libdw does for
 * them (it replays the FDE's instructions for every row), code size and
 * blob bytes.  A function beyond a limit, or with a rule SWU cannot say,
 * is skipped and counted under its reason.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "util.h"
#include "arch.h"
#include "array_grow.h"
#include "cfi_expr.h"
#include "cfi_import.h"

#define BIT(r) (1ULL << (r))

/* DWARF registers looked at in each row: every register any of our
 * architectures maps (arm64's v8-v15 are 72-79) and some room beyond. */
#define CFI_SCAN_REGS 128

/* What a register's rule is, from the location description libdw gives. */
enum rule_kind {
	RULE_SAME,              /* same value */
	RULE_UNDEFINED,
	RULE_OFFSET,            /* saved at CFA + offset */
	RULE_VAL_OFFSET,        /* its value is CFA + offset */
	RULE_REGISTER,          /* in another register */
	RULE_AT_REG,            /* saved at [another register + offset] (DW_CFA_expression) */
	RULE_EXPRESSION
};

/* ---- Rows ---- */

/* One CFI row in the library's registers. */
struct cfi_row {
	uint32_t cfa_reg;
	int32_t cfa_offset;
	int32_t ra_offset;              /* where the return address is (x86, x64) */
	bool cfa_deref;                 /* CFA = [cfa_reg + cfa_offset] */
	bool reads_ip;                  /* a rule reads the IP: the row differs by address */
	uint64_t saved_mask;
	uint64_t based_mask;            /* saved at [base[r] + saved[r]] */
	int32_t saved[SW_MAX_REGS];
	uint8_t base[SW_MAX_REGS];
};

struct import_ctx {
	const struct swi_arch *a;
	sw_swu_builder *b;
	struct swi_cfi_import *out;
	uint64_t ip_dwarf;              /* the IP's DWARF register, UINT64_MAX if none */
	uint64_t cfi_done, cfi_total;   /* bytes of the sections before this one, of all (progress) */
};

/* FDEs and CIEs read between two progress reports: a report costs the caller a call, no more. */
#define CFI_PROGRESS_EVERY 64

/*
 * A rule's expression at address `ip` (ELF address), into *v; false when
 * SWU cannot say it.  One that reads the IP is evaluated a page further
 * too: a module loads at a page-aligned bias, so the rule must not change
 * with it (the PLT's reads only the IP's place in its 16-byte stub).
 */
static bool eval_rule(const struct import_ctx *c, const Dwarf_Op *ops, size_t nops, uint64_t ip,
                      struct cfi_row *row, struct swi_cfi_expr_value *v)
{
	struct swi_cfi_expr_env env = { c->a->ptr_size, c->ip_dwarf, ip };
	struct swi_cfi_expr_value moved;

	if (!swi_cfi_expr_eval(ops, nops, &env, v))
		return false;
	if (c->ip_dwarf == UINT64_MAX || !swi_cfi_expr_reads(ops, nops, c->ip_dwarf))
		return true;
	row->reads_ip = true;
	env.ip = ip + 4096;
	return swi_cfi_expr_eval(ops, nops, &env, &moved) && moved.base == v->base &&
	       moved.reg == v->reg && moved.offset == v->offset;
}

/*
 * A register's rule.  libdw gives no op and no array for same value, no
 * op for undefined, one DW_OP_regx for register(r), and expressions for
 * the rest: [call_frame_cfa, plus_uconst n] for offset(n), with
 * stack_value for val_offset(n); DW_CFA_expression's and
 * DW_CFA_val_expression's own ops after a call_frame_cfa (DWARF pushes
 * the CFA first), the latter with stack_value.
 */
static enum rule_kind classify(const struct import_ctx *c, const Dwarf_Op *ops, size_t nops,
                               uint64_t ip, struct cfi_row *row, int64_t *off, Dwarf_Word *base)
{
	struct swi_cfi_expr_value v;

	*off = 0;
	*base = 0;
	if (nops == 0)
		return ops ? RULE_UNDEFINED : RULE_SAME;
	if (nops == 1 && (ops[0].atom == DW_OP_regx ||
	                  (ops[0].atom >= DW_OP_reg0 && ops[0].atom <= DW_OP_reg31)))
		return RULE_REGISTER;
	if (!eval_rule(c, ops, nops, ip, row, &v))
		return RULE_EXPRESSION;
	/* The value loaded from A is the value saved at A. */
	if (v.stack_value && v.deref)
		v.stack_value = v.deref = false;
	if (v.deref)
		return RULE_EXPRESSION;         /* saved at an address read from memory */
	*off = v.offset;
	if (v.base == SWI_CFI_EXPR_CFA)
		return v.stack_value ? RULE_VAL_OFFSET : RULE_OFFSET;
	if (v.base == SWI_CFI_EXPR_REG && !v.stack_value) {
		*base = v.reg;
		return RULE_AT_REG;
	}
	return RULE_EXPRESSION;                 /* a constant, or another register's value plus n */
}

/* The state at a function's first instruction, as SWU starts from it. */
static void entry_row(const struct import_ctx *c, struct cfi_row *row)
{
	row->cfa_reg = c->a->sp_reg;
	row->cfa_offset = c->a->entry_sp_offset;
	row->ra_offset = c->a->entry_ra_offset;
	row->cfa_deref = false;
	row->reads_ip = false;
	row->saved_mask = 0;
	row->based_mask = 0;
}

static bool offset_ok(int64_t off)
{
	return off >= -(int64_t)SW_SWU_MAX_FRAME && off <= (int64_t)SW_SWU_MAX_FRAME;
}

/* The reason an unusable rule makes its function unimportable. */
static int rule_reason(enum rule_kind k)
{
	return k == RULE_EXPRESSION ? SW_SKIP_EXPRESSION : SW_SKIP_REGISTER_RULE;
}

/* One register's rule into `row`; -1, or a skip reason. */
static int read_register(const struct import_ctx *c, Dwarf_Frame *f, unsigned dw, uint64_t ip,
                         struct cfi_row *row)
{
	const struct swi_arch *a = c->a;
	Dwarf_Op mem[3], *ops = NULL;
	size_t nops = 0;
	enum rule_kind k;
	Dwarf_Word base_dw;
	int64_t off;
	int r, base;

	if (dwarf_frame_register(f, (int)dw, mem, &ops, &nops) != 0)
		return SW_SKIP_BAD_CFI;
	k = classify(c, ops, nops, ip, row, &off, &base_dw);
	r = swi_dwarf_to_reg(a, dw);
	if (dw == a->dwarf_ra_column && k == RULE_UNDEFINED)
		return SW_SKIP_OUTERMOST;       /* no caller: _start, a thread's entry */
	if (k == RULE_SAME || k == RULE_UNDEFINED) {
		/*
		 * Either way the caller's value is not in this frame.  Compilers
		 * never make a callee-saved register undefined, but libdw's ABI
		 * defaults do (x86-64: rbx), so "undefined" is not a reason to
		 * refuse; where the return address arrives on the stack it must
		 * have a slot, though.
		 */
		if (dw == a->dwarf_ra_column && !a->entry_ra_in_lr)
			return SW_SKIP_BAD_CFI;
		return -1;
	}
	if (r >= 0 && (unsigned)r == a->sp_reg) {
		/* The caller's SP is the CFA, always: the rule says so or is refused. */
		return k == RULE_VAL_OFFSET && off == 0 ? -1 : rule_reason(k);
	}
	if (k == RULE_AT_REG) {
		/* Not the return address: its slot is CFA-relative in SWU. */
		if (dw == a->dwarf_ra_column || (a->entry_ra_in_lr && r == a->lr_reg))
			return SW_SKIP_EXPRESSION;
		base = swi_dwarf_to_reg(a, base_dw);
		if (r < 0 || r == (int)a->ip_reg || base < 0 || base == (int)a->ip_reg)
			return SW_SKIP_UNKNOWN_REGISTER;
		if (!offset_ok(off))
			return SW_SKIP_LIMIT;
		row->saved[r] = (int32_t)off;
		row->saved_mask |= BIT(r);
		row->based_mask |= BIT(r);
		row->base[r] = (uint8_t)base;
		return -1;
	}
	if (k != RULE_OFFSET)
		return r < 0 && k != RULE_EXPRESSION ? SW_SKIP_UNKNOWN_REGISTER : rule_reason(k);
	if (r < 0 || (r == (int)a->ip_reg && dw != a->dwarf_ra_column))
		return SW_SKIP_UNKNOWN_REGISTER;
	if (!offset_ok(off))
		return SW_SKIP_LIMIT;
	if (dw == a->dwarf_ra_column && !a->entry_ra_in_lr) {
		row->ra_offset = (int32_t)off;
		return -1;
	}
	row->saved[r] = (int32_t)off;
	row->saved_mask |= BIT(r);
	return -1;
}

/* The whole row libdw computed; -1, or the reason it cannot be imported. */
static int read_row(const struct import_ctx *c, Dwarf_Frame *f, uint64_t ip, struct cfi_row *row)
{
	struct swi_cfi_expr_value cfa;
	Dwarf_Op *ops = NULL;
	size_t nops = 0;
	int r;

	entry_row(c, row);
	if (dwarf_frame_cfa(f, &ops, &nops) != 0 || nops == 0)
		return SW_SKIP_BAD_CFI;
	/*
	 * DW_CFA_def_cfa comes as one DW_OP_bregx; DW_CFA_def_cfa_expression
	 * must come to a register plus an offset, or the word stored there
	 * (i386 stack realignment, the vDSO's signal frames).
	 */
	if (!eval_rule(c, ops, nops, ip, row, &cfa) || cfa.base != SWI_CFI_EXPR_REG ||
	    cfa.stack_value)
		return SW_SKIP_EXPRESSION;
	row->cfa_deref = cfa.deref;
	r = swi_dwarf_to_reg(c->a, cfa.reg);
	if (r < 0 || (unsigned)r == c->a->ip_reg)
		return SW_SKIP_UNKNOWN_REGISTER;
	if (!offset_ok(cfa.offset))
		return SW_SKIP_LIMIT;
	row->cfa_reg = (uint32_t)r;
	row->cfa_offset = (int32_t)cfa.offset;
	for (unsigned dw = 0; dw < CFI_SCAN_REGS; dw++) {
		int why = read_register(c, f, dw, ip, row);

		if (why >= 0)
			return why;
	}
	return -1;
}

/* The row ops that turn `prev` into `cur` at offset `at`. */
static sw_status emit_diff(const struct import_ctx *c, uint32_t at,
                           const struct cfi_row *prev, const struct cfi_row *cur)
{
	sw_swu_builder *b = c->b;
	sw_status st = SW_OK;

	if (cur->cfa_deref) {
		if (!prev->cfa_deref || cur->cfa_reg != prev->cfa_reg ||
		    cur->cfa_offset != prev->cfa_offset)
			st = sw_swu_def_cfa_deref(b, at, cur->cfa_reg, cur->cfa_offset);
	} else if (cur->cfa_reg != prev->cfa_reg || prev->cfa_deref) {
		st = sw_swu_def_cfa(b, at, cur->cfa_reg, cur->cfa_offset);
	} else if (cur->cfa_offset != prev->cfa_offset) {
		st = sw_swu_def_cfa_offset(b, at, cur->cfa_offset);
	}
	if (st == SW_OK && cur->ra_offset != prev->ra_offset)
		st = sw_swu_saved_at(b, at, c->a->ip_reg, cur->ra_offset);
	for (uint64_t m = cur->saved_mask | prev->saved_mask; st == SW_OK && m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		bool based = (cur->based_mask & BIT(r)) != 0;

		if (!(cur->saved_mask & BIT(r)))
			st = sw_swu_same_value(b, at, r);
		else if (!(prev->saved_mask & BIT(r)) || prev->saved[r] != cur->saved[r] ||
		         based != ((prev->based_mask & BIT(r)) != 0) ||
		         (based && prev->base[r] != cur->base[r]))
			st = based ? sw_swu_saved_at_reg(b, at, r, cur->base[r], cur->saved[r]) :
			             sw_swu_saved_at(b, at, r, cur->saved[r]);
	}
	return st;
}

/* ---- Functions ---- */

/* Grow the dedup index to twice its size (or its first size), rehashing what it holds. */
static sw_status dedup_grow(struct swi_cfi_import *imp)
{
	size_t cap = imp->dedup_cap ? 2 * imp->dedup_cap : 1024;
	struct swi_cfi_blob_ref *t = calloc(cap, sizeof *t);

	if (!t)
		return SW_E_NOMEM;
	for (size_t i = 0; i < imp->dedup_cap; i++) {
		const struct swi_cfi_blob_ref *r = &imp->dedup[i];
		size_t j;

		if (!r->size)
			continue;
		for (j = r->hash & (cap - 1); t[j].size; j = (j + 1) & (cap - 1))
			;
		t[j] = *r;
	}
	free(imp->dedup);
	imp->dedup = t;
	imp->dedup_cap = cap;
	return SW_OK;
}

size_t swi_cfi_keep_blob(struct swi_cfi_import *imp, uint32_t len)
{
	const uint8_t *blob = imp->blobs + imp->blobs_len;
	size_t at = imp->blobs_len, j;
	uint32_t hash;

	imp->blobs_len += len;
	if (len == 0 || (2 * (imp->dedup_used + 1) > imp->dedup_cap && dedup_grow(imp) != SW_OK))
		return at;
	hash = (uint32_t)swi_blob_hash(blob, len);
	for (j = hash & (imp->dedup_cap - 1); imp->dedup[j].size; j = (j + 1) & (imp->dedup_cap - 1)) {
		const struct swi_cfi_blob_ref *r = &imp->dedup[j];

		if (r->hash == hash && r->size == len && !memcmp(imp->blobs + r->offset, blob, len)) {
			imp->blobs_len = at;            /* the copy just written goes */
			return r->offset;
		}
	}
	imp->dedup[j] = (struct swi_cfi_blob_ref){ at, len, hash };
	imp->dedup_used++;
	return at;
}

sw_status swi_cfi_add_fn(struct swi_cfi_import *imp, uint64_t start, uint64_t size, uint32_t source,
                         uint32_t flags, const uint8_t *blob, size_t len)
{
	size_t before, at;
	sw_status st;

	if (len > SWI_CFI_MAX_BLOB_BYTES - imp->blobs_len)
		return SW_E_LIMIT;
	if ((st = swi_array_grow((void **)&imp->blobs, &imp->blobs_cap,
	                         imp->blobs_len + len, 1)) != SW_OK ||
	    (st = swi_array_grow((void **)&imp->fns, &imp->fns_cap,
	                         imp->nfns + 1, sizeof *imp->fns)) != SW_OK)
		return st;
	memcpy(imp->blobs + imp->blobs_len, blob, len);
	before = imp->blobs_len;
	at = swi_cfi_keep_blob(imp, (uint32_t)len);
	imp->fns[imp->nfns++] = (struct swi_cfi_fn){
		.start = start, .size = size, .source = source, .flags = flags,
		.blob = at, .blob_size = (uint32_t)len
	};
	imp->stats.unwind_bytes += imp->blobs_len - before;
	return SW_OK;
}

sw_status swi_cfi_add_frameless(struct swi_cfi_import *imp, sw_arch arch, uint64_t start, uint64_t size,
                                uint32_t source, uint32_t flags)
{
	sw_swu_builder *b;
	uint8_t blob[16];
	size_t len = 0;
	sw_status st;

	if ((st = sw_swu_builder_create(&b, arch)) != SW_OK)
		return st;
	st = sw_swu_finish(b, (uint32_t)size, blob, sizeof blob, &len);
	sw_swu_builder_destroy(b);
	if (st == SW_OK)
		st = swi_cfi_add_fn(imp, start, size, source, flags, blob, len);
	return st;
}

/* Encode what the builder holds and add the function. */
static sw_status add_function(const struct import_ctx *c, uint64_t lo, uint64_t hi,
                              uint32_t source, uint32_t flags)
{
	struct swi_cfi_import *out = c->out;
	size_t need = 0, len = 0, at;
	sw_status st;

	st = sw_swu_finish(c->b, (uint32_t)(hi - lo), NULL, 0, &need);
	if (st != SW_E_LIMIT || need == 0)
		return st == SW_OK ? SW_E_BADMETA : st;
	if (need > SWI_CFI_MAX_BLOB_BYTES - out->blobs_len)
		return SW_E_LIMIT;
	if ((st = swi_array_grow((void **)&out->blobs, &out->blobs_cap,
	                         out->blobs_len + need, 1)) != SW_OK ||
	    (st = swi_array_grow((void **)&out->fns, &out->fns_cap,
	                         out->nfns + 1, sizeof *out->fns)) != SW_OK)
		return st;
	st = sw_swu_finish(c->b, (uint32_t)(hi - lo), out->blobs + out->blobs_len, need, &len);
	if (st != SW_OK)
		return st;
	at = swi_cfi_keep_blob(out, (uint32_t)len);
	out->fns[out->nfns++] = (struct swi_cfi_fn){
		.start = lo, .size = hi - lo, .source = source, .flags = flags,
		.blob = at, .blob_size = (uint32_t)len
	};
	return SW_OK;
}

/*
 * libdw's row for [addr, end) as row ops into the builder: once, or, where
 * a rule reads the IP (the PLT's CFA), at every address, the ops written
 * only where the rule changes.  -1, or the reason the function cannot be
 * imported with *at its address; *st an error only for memory.
 */
static int import_row(const struct import_ctx *c, Dwarf_Frame *f, uint64_t lo, uint64_t addr,
                      uint64_t end, struct cfi_row *prev, uint64_t *work, uint64_t *at,
                      sw_status *st)
{
	struct cfi_row cur;

	*st = SW_OK;
	for (uint64_t ip = addr; ip < end; ip++) {
		int why;

		*at = ip;
		/* A row per address reads every register again: bound it like libdw's replays. */
		if (ip > addr && (*work += CFI_SCAN_REGS) > SWI_CFI_MAX_WORK)
			return SW_SKIP_LIMIT;
		why = read_row(c, f, ip, &cur);
		if (why >= 0)
			return why;
		*st = emit_diff(c, (uint32_t)(ip - lo), prev, &cur);
		if (*st != SW_OK) {
			why = *st == SW_E_LIMIT ? SW_SKIP_LIMIT : SW_SKIP_BAD_CFI;
			if (*st != SW_E_NOMEM)
				*st = SW_OK;
			return why;
		}
		*prev = cur;
		if (!cur.reads_ip)
			break;
	}
	return -1;
}

/*
 * Walk the rows of the FDE covering [lo, hi) and build its blob, the
 * function added with `flags` (0 or SW_CODE_PERSONALITY).  *why receives
 * -1 when the function was added, else the reason it was not; the status
 * is an error only for memory.
 */
static sw_status import_fde(const struct import_ctx *c, Dwarf_CFI *cfi, uint64_t lo,
                            uint64_t hi, size_t fde_bytes, uint32_t source, uint32_t flags,
                            int *why, uint64_t *where)
{
	struct cfi_row prev;
	uint64_t addr = lo, work = 0;
	unsigned rows = 0;
	sw_status st;

	*why = SW_SKIP_LIMIT;
	*where = lo;
	if (hi - lo > SW_SWU_MAX_CODE_SIZE || fde_bytes > SWI_CFI_MAX_FDE_BYTES)
		return SW_OK;
	*why = SW_SKIP_BAD_CFI;
	if (!cfi)
		return SW_OK;
	sw_swu_builder_reset(c->b);
	entry_row(c, &prev);
	while (addr < hi) {
		Dwarf_Frame *f = NULL;
		Dwarf_Addr start = 0, end = 0;
		bool signal = false;
		int ra, reason;

		/* libdw replays the FDE up to each row: bound rows and that work. */
		work += fde_bytes;
		if (++rows > SWI_CFI_MAX_ROWS || work > SWI_CFI_MAX_WORK) {
			*why = SW_SKIP_LIMIT;
			return SW_OK;
		}
		if (dwarf_cfi_addrframe(cfi, addr, &f) != 0) {
			*why = SW_SKIP_BAD_CFI;
			return SW_OK;
		}
		ra = dwarf_frame_info(f, &start, &end, &signal);
		*where = addr;
		st = SW_OK;
		if (ra < 0 || start > addr || end <= addr)
			reason = SW_SKIP_BAD_CFI;
		else if (start < lo || end > hi)
			reason = SW_SKIP_OVERLAP;       /* the rows of another FDE */
		else if ((unsigned)ra != c->a->dwarf_ra_column)
			reason = SW_SKIP_UNKNOWN_REGISTER;
		else if (signal)
			reason = SW_SKIP_COUNT;         /* below: a signal trampoline */
		else
			reason = import_row(c, f, lo, addr, end, &prev, &work, where, &st);
		free(f);
		if (reason == SW_SKIP_COUNT) {
			/* The walker unwinds it from the kernel's signal frame: no frame here. */
			sw_swu_builder_reset(c->b);
			st = add_function(c, lo, hi, source, flags | SW_CODE_SIGNAL_TRAMPOLINE);
			*why = st == SW_OK ? -1 : SW_SKIP_LIMIT;
			return st == SW_E_NOMEM ? st : SW_OK;
		}
		if (reason >= 0) {
			*why = reason;
			return st;
		}
		addr = end;
	}
	st = add_function(c, lo, hi, source, flags);
	if (st == SW_E_NOMEM)
		return st;
	*why = st == SW_OK ? -1 : SW_SKIP_LIMIT;
	return SW_OK;
}

/* ---- FDE address ranges ---- */

/* An unsigned LEB128 of at most 10 bytes within [*p, end). */
static bool read_uleb(const uint8_t **p, const uint8_t *end, uint64_t *out, bool is_signed)
{
	uint64_t v = 0;
	unsigned shift = 0;
	uint8_t b;

	do {
		if (*p >= end || shift >= 64)
			return false;
		b = *(*p)++;
		v |= (uint64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (is_signed && shift < 64 && (b & 0x40))
		v |= ~(uint64_t)0 << shift;
	*out = v;
	return true;
}

static bool read_fixed(const uint8_t **p, const uint8_t *end, unsigned size, bool is_signed,
                       uint64_t *out)
{
	uint64_t v;

	if ((size_t)(end - *p) < size)
		return false;
	v = swi_load_le(*p, size);
	if (is_signed && size < 8 && (v & (1ULL << (8 * size - 1))))
		v |= ~(uint64_t)0 << (8 * size);
	*p += size;
	*out = v;
	return true;
}

/*
 * A DW_EH_PE-encoded pointer at *p, whose own address is `here`.  FDE
 * ranges use absolute or PC-relative pointers only; `any` accepts the
 * other applications too, for a value that is only skipped (the
 * personality routine).
 */
static bool read_encoded(const uint8_t **p, const uint8_t *end, unsigned enc, unsigned ptr_size,
                         uint64_t here, bool any, uint64_t *out)
{
	uint64_t v;
	bool ok;

	if (enc == DW_EH_PE_omit)
		return false;
	switch (enc & 0x0f) {
	case DW_EH_PE_absptr:  ok = read_fixed(p, end, ptr_size, false, &v); break;
	case DW_EH_PE_uleb128: ok = read_uleb(p, end, &v, false); break;
	case DW_EH_PE_udata2:  ok = read_fixed(p, end, 2, false, &v); break;
	case DW_EH_PE_udata4:  ok = read_fixed(p, end, 4, false, &v); break;
	case DW_EH_PE_udata8:  ok = read_fixed(p, end, 8, false, &v); break;
	case DW_EH_PE_sleb128: ok = read_uleb(p, end, &v, true); break;
	case DW_EH_PE_sdata2:  ok = read_fixed(p, end, 2, true, &v); break;
	case DW_EH_PE_sdata4:  ok = read_fixed(p, end, 4, true, &v); break;
	case DW_EH_PE_sdata8:  ok = read_fixed(p, end, 8, true, &v); break;
	default:               return false;
	}
	if (!ok)
		return false;
	if ((enc & 0x70) == DW_EH_PE_pcrel)
		v += here;
	else if ((enc & 0x70) != DW_EH_PE_absptr && !any)
		return false;
	if ((enc & DW_EH_PE_indirect) && !any)
		return false;
	if (ptr_size == 4)
		v &= 0xffffffffu;
	*out = v;
	return true;
}

/* What an FDE needs from its CIE. */
struct cie_info {
	Dwarf_Off offset;               /* the CIE read last (one-entry cache) */
	bool valid;
	unsigned fde_enc;               /* how initial_location and address_range are encoded */
	bool personality;               /* 'P': a personality routine for its FDEs */
	unsigned lsda_enc;              /* 'L': how each FDE's LSDA pointer is encoded, or omit */
};

/*
 * The FDE pointer encoding from the augmentation ('R'), and whether it
 * names a personality routine ('P': g++ for a function with destructors
 * or catch clauses, gcc -fexceptions for C cleanups); the other letters
 * are only stepped over.  An augmentation without 'z' cannot be sized,
 * unless it is empty.
 */
static bool parse_augmentation(const Dwarf_CIE *cie, unsigned ptr_size, struct cie_info *ci)
{
	const char *aug = cie->augmentation;
	const uint8_t *p = cie->augmentation_data;
	const uint8_t *end = p ? p + cie->augmentation_data_size : NULL;
	uint64_t ignored;

	ci->fde_enc = DW_EH_PE_absptr;
	ci->personality = false;
	ci->lsda_enc = DW_EH_PE_omit;
	if (!aug)
		return false;
	if (aug[0] == '\0')
		return true;
	if (aug[0] != 'z' || !p)
		return false;
	for (size_t i = 1; i < 32 && aug[i]; i++) {
		switch (aug[i]) {
		case 'R':
			if (p >= end)
				return false;
			ci->fde_enc = *p++;
			break;
		case 'L':
			if (p >= end)
				return false;
			ci->lsda_enc = *p++;
			break;
		case 'P': {
			unsigned enc;

			if (p >= end)
				return false;
			enc = *p++;
			if (!read_encoded(&p, end, enc, ptr_size, 0, true, &ignored))
				return false;
			ci->personality = true;
			break;
		}
		case 'S':               /* signal frame: dwarf_frame_info says so */
		case 'B':               /* arm64 BTI */
		case 'G':               /* arm64 MTE */
			break;
		default:
			/* Sized by 'z', but an 'R' after it would be missed. */
			return false;
		}
	}
	return true;
}

struct section {
	Elf_Data *data;
	uint64_t addr;                  /* sh_addr: the base of PC-relative pointers */
	bool eh;
	uint32_t source;
};

static bool load_cie(const unsigned char *ident, const struct section *s, unsigned ptr_size,
                     Dwarf_Off off, struct cie_info *ci)
{
	Dwarf_CFI_Entry e;
	Dwarf_Off next = 0;

	if (ci->offset == off)
		return ci->valid;
	ci->offset = off;
	ci->valid = false;
	if (dwarf_next_cfi(ident, s->data, s->eh, off, &next, &e) != 0 || !dwarf_cfi_cie_p(&e))
		return false;
	if (!parse_augmentation(&e.cie, ptr_size, ci))
		return false;
	/* .debug_frame addresses are target-sized, whatever the augmentation. */
	if (!s->eh)
		ci->fde_enc = DW_EH_PE_absptr;
	ci->valid = true;
	return true;
}

/*
 * The range of an FDE: [*lo, *hi), or false if it cannot be decoded; and
 * in *flags SW_CODE_PERSONALITY when its personality routine has work
 * there: its CIE names one, and gives it no LSDA pointer ('P' without
 * 'L': what the routine does is unknown) or this FDE's is not 0 (0: no
 * cleanups or catches, __gxx_personality_v0 and __gcc_personality_v0 do
 * nothing).  An LSDA pointer that cannot be read counts as work.
 */
static bool fde_range(const struct section *s, const Dwarf_FDE *fde, const struct cie_info *ci,
                      unsigned ptr_size, uint64_t *lo, uint64_t *hi, uint32_t *flags)
{
	const uint8_t *p = fde->start, *end = fde->end;
	const uint8_t *base = s->data->d_buf;
	uint64_t start, len, aug_len, lsda = 1;

	if (!p || !end || p < base || end > base + s->data->d_size || p > end)
		return false;
	if (!read_encoded(&p, end, ci->fde_enc, ptr_size, s->addr + (uint64_t)(fde->start - base),
	                  false, &start) ||
	    !read_encoded(&p, end, ci->fde_enc & 0x0f, ptr_size, 0, false, &len))
		return false;
	if (len > UINT64_MAX - start || (ptr_size == 4 && start + len > 0x100000000ULL))
		return false;
	*lo = start;
	*hi = start + len;
	/* The FDE's augmentation data: its length, then the LSDA pointer, unadjusted. */
	if (ci->personality && ci->lsda_enc != DW_EH_PE_omit &&
	    (!read_uleb(&p, end, &aug_len, false) ||
	     !read_encoded(&p, end, ci->lsda_enc & 0x0f, ptr_size, 0, true, &lsda)))
		lsda = 1;
	*flags = ci->personality && lsda != 0 ? SW_CODE_PERSONALITY : 0;
	return true;
}

static void skip(struct swi_cfi_import *out, int why)
{
	out->stats.skipped++;
	out->stats.skipped_by[why]++;
}

/* Remember a skipped FDE's range (for instruction analysis). */
static sw_status note_skip(struct swi_cfi_import *out, uint64_t lo, uint64_t hi, uint64_t where,
                           int why)
{
	sw_status st = swi_array_grow((void **)&out->skips, &out->skips_cap, out->nskips + 1,
	                              sizeof *out->skips);

	if (st != SW_OK)
		return st;
	out->skips[out->nskips++] = (struct swi_cfi_skip){ lo, hi - lo, where, (uint32_t)why };
	return SW_OK;
}

bool swi_code_section(Elf_Scn *scn, GElf_Shdr *sh)
{
	return gelf_getshdr(scn, sh) && sh->sh_type == SHT_PROGBITS && (sh->sh_flags & SHF_EXECINSTR) &&
	       sh->sh_size != 0 && sh->sh_addr + sh->sh_size >= sh->sh_addr;
}

Elf_Data *swi_code_section_data(Elf_Scn *scn, GElf_Shdr *sh)
{
	Elf_Data *d;

	if (!swi_code_section(scn, sh))
		return NULL;
	d = elf_getdata(scn, NULL);
	if (!d || !d->d_buf || d->d_size != sh->sh_size)
		return NULL;
	return d;
}

bool swi_cfi_overlaps(const struct swi_cfi_import *out, size_t n, uint64_t lo, uint64_t hi)
{
	size_t a = 0, b = n;

	/* The first function that ends after lo. */
	while (a < b) {
		size_t mid = a + (b - a) / 2;

		if (out->fns[mid].start + out->fns[mid].size <= lo)
			a = mid + 1;
		else
			b = mid;
	}
	return a < n && out->fns[a].start < hi;
}

/*
 * Import the FDE of [lo, hi) and file it: a function, an outermost one,
 * or a skip with its reason; a function with `flags` (0, or
 * SW_CODE_PERSONALITY from its CIE).  An error only for memory.
 */
static sw_status import_classified(const struct import_ctx *c, Dwarf_CFI *cfi, uint64_t lo,
                                   uint64_t hi, size_t fde_bytes, uint32_t source, uint32_t flags)
{
	struct swi_cfi_import *out = c->out;
	uint64_t where = 0;
	int why;
	sw_status st = import_fde(c, cfi, lo, hi, fde_bytes, source, flags, &why, &where);

	if (st != SW_OK)
		return st;
	/*
	 * The return address undefined from the first instruction, or from
	 * the second after a 4-byte landing pad (arm64's bti c; x86's
	 * endbr64 and endbr32 under CET, as in Node.js's _start): nothing
	 * called it, and the walk ends there, complete, as gdb and eu-stack
	 * end it.
	 */
	if (why == SW_SKIP_OUTERMOST && where - lo <= 4u)
		return swi_cfi_add_frameless(out, (sw_arch)c->a->arch, lo, hi - lo, source,
		                             flags | SW_CODE_OUTERMOST);
	if (why < 0)
		return SW_OK;
	skip(out, why);
	return note_skip(out, lo, hi, where, why);
}

/*
 * Every FDE of one section.  `sorted` functions imported before (from
 * .eh_frame) take precedence: a .debug_frame FDE for their code is ignored.
 */
static sw_status scan_section(const struct import_ctx *c, Elf *elf, const struct section *s,
                              Dwarf_CFI *cfi, size_t sorted)
{
	const unsigned char *ident = (const unsigned char *)elf_getident(elf, NULL);
	struct swi_cfi_import *out = c->out;
	struct cie_info ci = { (Dwarf_Off)-1, false, 0, false, DW_EH_PE_omit };
	Dwarf_Off off = 0;
	sw_status st;

	if (!ident)
		return SW_E_BADMETA;
	/* Every entry is at least 4 bytes: the section's size bounds the loop. */
	for (size_t n = 0; n <= s->data->d_size / 4; n++) {
		Dwarf_CFI_Entry e;
		Dwarf_Off next = off;
		uint64_t lo, hi;
		uint32_t flags = 0;
		int rc = dwarf_next_cfi(ident, s->data, s->eh, off, &next, &e);

		if (rc > 0)
			break;
		if (rc < 0) {
			/* An unreadable entry; go on only when libdw found its end. */
			out->stats.fdes++;
			skip(out, SW_SKIP_BAD_CFI);
			if (next == (Dwarf_Off)-1 || next <= off)
				break;
			off = next;
			continue;
		}
		if (next <= off)
			break;          /* no progress: a loop in hostile data */
		off = next;
		if (n % CFI_PROGRESS_EVERY == 0)
			swi_progress_report(out->progress, SW_MODULE_STAGE_CFI, c->cfi_done + off,
			                    c->cfi_total);
		if (dwarf_cfi_cie_p(&e))
			continue;
		out->stats.fdes++;
		if (!load_cie(ident, s, c->a->ptr_size, e.fde.CIE_pointer, &ci) ||
		    !fde_range(s, &e.fde, &ci, c->a->ptr_size, &lo, &hi, &flags)) {
			skip(out, SW_SKIP_BAD_CFI);
			continue;
		}
		/* No code: discarded by the linker (start 0), or empty. */
		if (lo == hi || lo == 0 || (sorted && swi_cfi_overlaps(out, sorted, lo, hi))) {
			out->stats.ignored++;
			continue;
		}
		if ((st = import_classified(c, cfi, lo, hi, (size_t)(e.fde.end - e.fde.start), s->source,
		                            flags)) != SW_OK)
			return st;
	}
	return SW_OK;
}

int swi_cfi_fn_cmp(const void *pa, const void *pb)
{
	const struct swi_cfi_fn *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return 0;
}

/* Sort by start; a function overlapping the one before it is dropped. */
static void sort_functions(struct swi_cfi_import *out)
{
	size_t keep = 0;

	if (out->nfns > 1)
		qsort(out->fns, out->nfns, sizeof *out->fns, swi_cfi_fn_cmp);
	for (size_t i = 0; i < out->nfns; i++) {
		if (keep > 0 && out->fns[i].start < out->fns[keep - 1].start + out->fns[keep - 1].size) {
			skip(out, SW_SKIP_OVERLAP);
			continue;
		}
		out->fns[keep++] = out->fns[i];
	}
	out->nfns = keep;
}

static Elf_Scn *find_section(Elf *elf, const char *name, GElf_Shdr *sh)
{
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return NULL;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
		const char *n;

		if (!gelf_getshdr(scn, sh) || sh->sh_type == SHT_NOBITS)
			continue;
		n = elf_strptr(elf, shstrndx, sh->sh_name);
		if (n && strcmp(n, name) == 0)
			return scn;
	}
	return NULL;
}

/* The section's bytes (decompressed when needed), or NULL. */
static Elf_Data *section_data(Elf_Scn *scn, const GElf_Shdr *sh)
{
	Elf_Data *d;

	if ((sh->sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return NULL;
	d = elf_getdata(scn, NULL);
	return d && d->d_buf && d->d_size ? d : NULL;
}

static void finish_stats(struct swi_cfi_import *out)
{
	out->stats.functions = 0;
	out->stats.from_eh_frame = 0;
	out->stats.from_debug_frame = 0;
	out->stats.signal_trampolines = 0;
	out->stats.outermost = 0;
	for (size_t i = 0; i < out->nfns; i++) {
		/* Outermost functions have no rules: stats.outermost counts them. */
		if (out->fns[i].flags & SW_CODE_OUTERMOST) {
			out->stats.outermost++;
			continue;
		}
		out->stats.functions++;
		if (out->fns[i].source == SW_CFI_EH_FRAME)
			out->stats.from_eh_frame++;
		else
			out->stats.from_debug_frame++;
		if (out->fns[i].flags & SW_CODE_SIGNAL_TRAMPOLINE)
			out->stats.signal_trampolines++;
	}
	out->stats.unwind_bytes = out->blobs_len;
}

/* Count the row ops in the blobs (for the statistics). */
static void count_row_ops(struct swi_cfi_import *out)
{
	for (size_t i = 0; i < out->nfns; i++) {
		sw_swu_header h;

		if (sw_swu_decode_header(out->blobs + out->fns[i].blob, out->fns[i].blob_size, &h) == SW_OK)
			out->stats.row_ops += h.row_ops;
	}
}

sw_status swi_cfi_import(Elf *elf, sw_arch arch, const struct swi_progress *progress,
                         struct swi_cfi_import *out)
{
	struct import_ctx c = { swi_arch_get(arch), NULL, out, UINT64_MAX, 0, 0 };
	struct section eh = { NULL, 0, true, SW_CFI_EH_FRAME }, debug = { NULL, 0, false, SW_CFI_DEBUG_FRAME };
	GElf_Shdr sh;
	Elf_Scn *scn;
	sw_status st;
	int ip_dwarf;

	memset(out, 0, sizeof *out);
	out->progress = progress;
	if (!elf || !c.a)
		return SW_E_INVAL;
	if ((ip_dwarf = swi_reg_to_dwarf(c.a, c.a->ip_reg)) >= 0)
		c.ip_dwarf = (uint64_t)ip_dwarf;
	/* Both sections first: progress counts their bytes together. */
	if ((scn = find_section(elf, ".eh_frame", &sh)) != NULL) {
		eh.data = section_data(scn, &sh);
		eh.addr = sh.sh_addr;
	}
	if ((scn = find_section(elf, ".debug_frame", &sh)) != NULL) {
		debug.data = section_data(scn, &sh);
		debug.addr = sh.sh_addr;
	}
	c.cfi_total = (eh.data ? eh.data->d_size : 0) + (debug.data ? debug.data->d_size : 0);
	swi_progress_report(progress, SW_MODULE_STAGE_CFI, 0, c.cfi_total);
	if ((st = sw_swu_builder_create(&c.b, arch)) != SW_OK)
		return st;

	/* .eh_frame first: it is what the program itself unwinds with. */
	if (eh.data) {
		Dwarf_CFI *cfi = dwarf_getcfi_elf(elf);

		st = scan_section(&c, elf, &eh, cfi, 0);
		if (cfi)
			dwarf_cfi_end(cfi);
		if (st != SW_OK)
			goto out;
		c.cfi_done = eh.data->d_size;
	}
	sort_functions(out);

	if (debug.data) {
		Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
		Dwarf_CFI *cfi = dw ? dwarf_getcfi(dw) : NULL;

		st = scan_section(&c, elf, &debug, cfi, out->nfns);
		if (dw)
			dwarf_end(dw);
		if (st != SW_OK)
			goto out;
	}
	sort_functions(out);
	finish_stats(out);
	count_row_ops(out);
	swi_progress_report(progress, SW_MODULE_STAGE_CFI, c.cfi_total, c.cfi_total);
	st = SW_OK;
out:
	sw_swu_builder_destroy(c.b);
	return st;
}

/* ---- One FDE at a time (the lazy path, lib/native/lazy_cfi.c) ---- */

sw_status swi_eh_frame_open(Elf *elf, sw_arch arch, struct swi_eh_frame *out)
{
	const struct swi_arch *a = swi_arch_get(arch);
	GElf_Shdr sh;
	Elf_Scn *scn;

	memset(out, 0, sizeof *out);
	if (!elf || !a || !(out->ident = (const unsigned char *)elf_getident(elf, NULL)))
		return SW_E_INVAL;
	if (!(scn = find_section(elf, ".eh_frame", &sh)) || (sh.sh_flags & SHF_COMPRESSED))
		return SW_E_NOTFOUND;
	if (!(out->data = section_data(scn, &sh)))
		return SW_E_NOTFOUND;
	out->addr = sh.sh_addr;
	out->arch = arch;
	out->cie_offset = (uint64_t)-1;
	return SW_OK;
}

sw_status swi_eh_frame_fde(struct swi_eh_frame *ef, uint64_t offset, uint64_t *lo, uint64_t *hi,
                           size_t *bytes)
{
	const struct swi_arch *a = swi_arch_get(ef->arch);
	struct section s = { ef->data, ef->addr, true, SW_CFI_EH_FRAME };
	struct cie_info ci = { ef->cie_offset, ef->cie_valid, ef->cie_fde_enc, ef->cie_personality,
	                       ef->cie_lsda_enc };
	Dwarf_CFI_Entry e;
	Dwarf_Off next = 0;
	bool ok;

	if (offset >= ef->data->d_size ||
	    dwarf_next_cfi(ef->ident, ef->data, true, offset, &next, &e) != 0 || dwarf_cfi_cie_p(&e))
		return SW_E_BADMETA;
	ok = load_cie(ef->ident, &s, a->ptr_size, e.fde.CIE_pointer, &ci) &&
	     fde_range(&s, &e.fde, &ci, a->ptr_size, lo, hi, &ef->fde_flags);
	ef->cie_offset = ci.offset;
	ef->cie_valid = ci.valid;
	ef->cie_fde_enc = ci.fde_enc;
	ef->cie_personality = ci.personality;
	ef->cie_lsda_enc = ci.lsda_enc;
	if (!ok)
		return SW_E_BADMETA;
	*bytes = (size_t)(e.fde.end - e.fde.start);
	return SW_OK;
}

sw_status swi_cfi_import_one(Dwarf_CFI *cfi, sw_arch arch, uint64_t lo, uint64_t hi,
                             size_t fde_bytes, uint32_t flags, struct swi_cfi_import *out)
{
	struct import_ctx c = { swi_arch_get(arch), NULL, out, UINT64_MAX, 0, 0 };
	sw_status st;
	int ip_dwarf;

	memset(out, 0, sizeof *out);
	if (!c.a || !cfi || lo >= hi)
		return SW_E_INVAL;
	if ((ip_dwarf = swi_reg_to_dwarf(c.a, c.a->ip_reg)) >= 0)
		c.ip_dwarf = (uint64_t)ip_dwarf;
	if ((st = sw_swu_builder_create(&c.b, arch)) != SW_OK)
		return st;
	out->stats.fdes = 1;
	st = import_classified(&c, cfi, lo, hi, fde_bytes, SW_CFI_EH_FRAME, flags);
	sw_swu_builder_destroy(c.b);
	if (st == SW_OK) {
		finish_stats(out);
		count_row_ops(out);
	}
	return st;
}

void swi_cfi_import_free(struct swi_cfi_import *imp)
{
	if (!imp)
		return;
	free(imp->fns);
	free(imp->blobs);
	free(imp->dedup);
	free(imp->skips);
	memset(imp, 0, sizeof *imp);
}
