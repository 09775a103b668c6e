/*
 * swu_format.c - reading and writing the pieces of an SWU blob.
 *
 * Only syntax and limits are checked here; what the ops mean is checked by
 * swu_state_apply().  Every read is bounded by the reader's end.
 */
#include "util.h"
#include "arch.h"
#include "swu_format.h"

/*
 * Each opcode's mnemonic and operands: the one place that says what follows
 * an opcode, so that the reader, the writer and swdump cannot disagree.  A
 * code without a name is reserved.
 */
static const struct {
	const char *name;
	uint8_t operands;       /* SWU_OPND_* */
} op_syntax[] = {
	[SWU_OP_PUSH]         = { "push",           SWU_OPND_REG },
	[SWU_OP_ALLOC]        = { "alloc",          SWU_OPND_SIZE },
	[SWU_OP_SET_FRAME]    = { "set_frame",      SWU_OPND_REG | SWU_OPND_SIZE },
	[SWU_OP_SAVE_REG]     = { "save_reg",       SWU_OPND_REG | SWU_OPND_SIZE },
	[SWU_OP_FREE]         = { "free",           SWU_OPND_SIZE },
	[SWU_OP_RESTORE_SP]   = { "restore_sp",     SWU_OPND_OFFSET },
	[SWU_OP_POP]          = { "pop",            SWU_OPND_REG },
	[SWU_OP_RESTORE_REG]  = { "restore_reg",    SWU_OPND_REG },
	[SWU_OP_DEF_CFA]      = { "def_cfa",        SWU_OPND_REG | SWU_OPND_OFFSET },
	[SWU_OP_CFA_OFFSET]   = { "def_cfa_offset", SWU_OPND_OFFSET },
	[SWU_OP_SAVED_AT]     = { "saved_at",       SWU_OPND_REG | SWU_OPND_OFFSET },
	[SWU_OP_SAME_VALUE]   = { "same_value",     SWU_OPND_REG },
	[SWU_OP_CFA_DEREF]    = { "def_cfa_deref",  SWU_OPND_REG | SWU_OPND_OFFSET },
	[SWU_OP_SAVED_AT_REG] = { "saved_at_reg",   SWU_OPND_REG | SWU_OPND_REG2 | SWU_OPND_OFFSET },
	[SWU_OP_PUSH_PAIR]    = { "push_pair",      SWU_OPND_REG | SWU_OPND_REG2 | SWU_OPND_SIZE },
	[SWU_OP_PUSH_SIZED]   = { "push_sized",     SWU_OPND_REG | SWU_OPND_SIZE },
	[SWU_OP_SAVE_PAIR]    = { "save_pair",      SWU_OPND_REG | SWU_OPND_REG2 | SWU_OPND_SIZE },
	[SWU_OP_SIGN_RA]      = { "sign_ra",        0 },
	[SWU_OP_POP_PAIR]     = { "pop_pair",       SWU_OPND_REG | SWU_OPND_REG2 | SWU_OPND_SIZE },
	[SWU_OP_POP_SIZED]    = { "pop_sized",      SWU_OPND_REG | SWU_OPND_SIZE },
	[SWU_OP_RESTORE_PAIR] = { "restore_pair",   SWU_OPND_REG | SWU_OPND_REG2 },
	[SWU_OP_AUTH_RA]      = { "auth_ra",        0 },
	[SWU_OP_PUSH_ARGS]    = { "push_args",      SWU_OPND_SIZE },
	[SWU_OP_POP_ARGS]     = { "pop_args",       SWU_OPND_SIZE },
	[SWU_OP_CALL_POPS]    = { "call_pops_args", SWU_OPND_SIZE },
};

const char *swu_op_name(unsigned code)
{
	return code < sizeof op_syntax / sizeof op_syntax[0] ? op_syntax[code].name : NULL;
}

unsigned swu_op_operands(unsigned code)
{
	return swu_op_name(code) ? op_syntax[code].operands : 0;
}

/* The end of an op `delta` after `prev_end`, within the limit. */
static sw_status read_end(struct swu_reader *r, uint32_t prev_end, uint32_t min_delta,
                          struct swu_op *op)
{
	uint32_t delta;
	sw_status st;

	if ((st = swu_read_uleb(r, &delta)) != SW_OK)
		return st;
	if (delta < min_delta || delta > SW_SWU_MAX_CODE_SIZE - prev_end)
		return SW_E_BADMETA;
	op->end = prev_end + delta;
	return SW_OK;
}

/* The operands of op->code, as op_syntax says. */
static sw_status read_operands(struct swu_reader *r, struct swu_op *op)
{
	unsigned operands = swu_op_operands(op->code);
	uint32_t u = 0;
	int32_t s = 0;
	sw_status st = SW_OK;

	op->reg = 0;
	op->reg2 = 0;
	op->arg = 0;
	/* Reserved: this decoder cannot know its length. */
	if (!swu_op_name(op->code))
		return SW_E_BADMETA;
	if ((operands & SWU_OPND_REG) && (st = swu_read_uleb(r, &op->reg)) != SW_OK)
		return st;
	if ((operands & SWU_OPND_REG2) && (st = swu_read_uleb(r, &op->reg2)) != SW_OK)
		return st;
	if (operands & SWU_OPND_SIZE) {
		st = swu_read_uleb(r, &u);
		op->arg = u;
	} else if (operands & SWU_OPND_OFFSET) {
		st = swu_read_sleb(r, &s);
		op->arg = s;
	}
	return st;
}

sw_status swu_read_op(struct swu_reader *r, uint32_t prev_end, uint32_t min_delta,
                      struct swu_op *op)
{
	sw_status st;

	if ((st = read_end(r, prev_end, min_delta, op)) != SW_OK)
		return st;
	if (r->p >= r->end)
		return SW_E_TRUNCATED;
	op->code = *r->p++;
	return read_operands(r, op);
}

/* A PSP slot: in the frame, below the return address (swu_gc_check_slot), never above the CFA. */
static sw_status read_psp(struct swu_reader *r, const struct swi_arch *a, int32_t *cfa_offset)
{
	int32_t index;
	int64_t off;
	sw_status st;

	if ((st = swu_read_sleb(r, &index)) != SW_OK)
		return st;
	off = (int64_t)index * a->ptr_size;
	if (off >= 0 || swu_gc_check_slot(a, off) != SW_OK)
		return SW_E_BADMETA;
	*cfa_offset = (int32_t)off;
	return SW_OK;
}

/*
 * The EH section's size, then the section itself, which the rest of the
 * blob follows: `eh` (if not NULL) receives exactly its bytes.  Its
 * contents are read by swu_eh.c; a walk skips them.
 */
static sw_status read_eh_section(struct swu_reader *r, struct swu_reader *eh)
{
	uint32_t eh_bytes;
	sw_status st;

	if ((st = swu_read_uleb(r, &eh_bytes)) != SW_OK)
		return st;
	if (eh_bytes < SWU_EH_MIN_BYTES)
		return SW_E_BADMETA;
	if (eh_bytes > (size_t)(r->end - r->p))
		return SW_E_TRUNCATED;
	if (eh) {
		eh->p = r->p;
		eh->end = r->p + eh_bytes;
	}
	r->p += eh_bytes;
	return SW_OK;
}

static sw_status read_header(struct swu_reader *r, const void *blob, size_t size,
                             sw_swu_header *h, const struct swi_arch **arch, uint32_t *flags_out,
                             int32_t *psp_out, struct swu_reader *eh_out)
{
	uint32_t flags, unwind_bytes = 0;
	int32_t psp = 0;
	sw_status st;

	if (!blob)
		return SW_E_INVAL;
	r->p = blob;
	r->end = r->p + size;
	if (size < 1)
		return SW_E_TRUNCATED;
	if (r->p[0] != SWU_MAGIC)
		return SW_E_BADMETA;
	if (size < 2)
		return SW_E_TRUNCATED;
	h->version = r->p[1] >> 4;
	h->arch = r->p[1] & 0x0f;
	r->p += 2;
	if (h->version != SWU_VERSION)
		return SW_E_UNSUPPORTED;
	*arch = swi_arch_get((sw_arch)h->arch);
	if (!*arch)
		return SW_E_UNSUPPORTED;
	if ((st = swu_read_uleb(r, &flags)) != SW_OK)
		return st;
	if (flags & ~SWU_FLAGS_KNOWN)   /* optional sections this decoder does not know */
		return SW_E_UNSUPPORTED;
	/* Only row ops have a compact form. */
	if ((flags & SWU_FLAG_COMPACT) && !(flags & SWU_FLAG_ROWS))
		return SW_E_BADMETA;
	if (flags_out)
		*flags_out = flags;
	h->prolog_size = 0;
	h->prolog_ops = 0;
	h->epilogs = 0;
	h->body_ops = 0;
	h->gc_locations = 0;
	h->row_ops = 0;
	if (flags & SWU_FLAG_ROWS) {
		/* The row form has no prolog, epilogs or body ops. */
		if (flags & SWU_FLAG_BODY_OPS)
			return SW_E_BADMETA;
		if ((st = swu_read_uleb(r, &h->code_size)) != SW_OK ||
		    (st = swu_read_uleb(r, &h->row_ops)) != SW_OK)
			return st;
		/* A blob without a row op is written in the prolog form. */
		if (h->row_ops == 0 || h->row_ops > SW_SWU_MAX_ROW_OPS)
			return SW_E_BADMETA;
	} else if ((st = swu_read_uleb(r, &h->code_size)) != SW_OK ||
	           (st = swu_read_uleb(r, &h->prolog_size)) != SW_OK ||
	           (st = swu_read_uleb(r, &h->prolog_ops)) != SW_OK ||
	           (st = swu_read_uleb(r, &h->epilogs)) != SW_OK) {
		return st;
	}
	if ((flags & SWU_FLAG_BODY_OPS) && (st = swu_read_uleb(r, &h->body_ops)) != SW_OK)
		return st;
	if (flags & SWU_FLAG_PSP) {
		/* Funclets are JIT code, described in the prolog form. */
		if (flags & SWU_FLAG_ROWS)
			return SW_E_BADMETA;
		if ((st = read_psp(r, *arch, &psp)) != SW_OK)
			return st;
	}
	if (psp_out)
		*psp_out = psp;
	if (flags & SWU_FLAG_GC) {
		if ((st = swu_read_uleb(r, &h->gc_locations)) != SW_OK ||
		    (st = swu_read_uleb(r, &unwind_bytes)) != SW_OK)
			return st;
		/* The flag says there is at least one location. */
		if (h->gc_locations == 0 || h->gc_locations > SW_SWU_MAX_GC_LOCATIONS)
			return SW_E_BADMETA;
	}
	if (eh_out)
		eh_out->p = eh_out->end = NULL;
	if ((flags & SWU_FLAG_EH) && (st = read_eh_section(r, eh_out)) != SW_OK)
		return st;
	if (flags & SWU_FLAG_GC) {
		/* The ops, then the locations, 5 bytes or more each, must be there. */
		if (unwind_bytes > (size_t)(r->end - r->p) ||
		    (size_t)(r->end - r->p) - unwind_bytes < (size_t)h->gc_locations * SWU_GC_MIN_BYTES)
			return SW_E_TRUNCATED;
		/* The unwind ops end where the GC section begins. */
		r->end = r->p + unwind_bytes;
	}
	if (h->code_size == 0 || h->code_size > SW_SWU_MAX_CODE_SIZE ||
	    h->prolog_size > h->code_size)
		return SW_E_BADMETA;
	/* Prolog ends strictly increase; each epilog covers at least one byte. */
	if (h->prolog_ops > SW_SWU_MAX_OPS || h->prolog_ops > h->prolog_size ||
	    h->epilogs > SW_SWU_MAX_EPILOGS || h->epilogs > h->code_size - h->prolog_size)
		return SW_E_BADMETA;
	/* Body op ends strictly increase beyond the prolog, up to the code size. */
	if (h->body_ops > h->code_size - h->prolog_size)
		return SW_E_BADMETA;
	return SW_OK;
}

sw_status swu_read_header(struct swu_reader *r, const void *blob, size_t size,
                          sw_swu_header *h, const struct swi_arch **arch, uint32_t *flags_out)
{
	return read_header(r, blob, size, h, arch, flags_out, NULL, NULL);
}

sw_status swu_read_psp_slot(const void *blob, size_t size, int32_t *cfa_offset)
{
	struct swu_reader r;
	const struct swi_arch *arch;
	sw_swu_header h;

	return read_header(&r, blob, size, &h, &arch, NULL, cfa_offset, NULL);
}

sw_status swu_read_eh_section(const void *blob, size_t size, struct swu_reader *eh,
                              uint32_t *code_size)
{
	struct swu_reader r;
	const struct swi_arch *arch;
	sw_swu_header h;
	sw_status st;

	if ((st = read_header(&r, blob, size, &h, &arch, NULL, NULL, eh)) != SW_OK)
		return st;
	*code_size = h.code_size;
	return SW_OK;
}

/* ---- Row ops, plain or compact ---- */

void swu_row_reader_init(struct swu_row_reader *rr, const struct swu_reader *r,
                         const struct swi_arch *arch, uint32_t flags)
{
	rr->r = *r;
	rr->compact = (flags & SWU_FLAG_COMPACT) != 0;
	rr->pending = false;
	rr->word = (int32_t)arch->ptr_size;
	rr->cfa = (int32_t)arch->entry_sp_offset;
	rr->max_cfa = rr->cfa;
}

/* A compact item's end: `delta` after `prev_end`, within the limit. */
static sw_status compact_end(uint32_t prev_end, uint32_t delta, struct swu_op *op)
{
	if (delta > SW_SWU_MAX_CODE_SIZE - prev_end)
		return SW_E_BADMETA;
	op->end = prev_end + delta;
	return SW_OK;
}

/* The CFA offset the ops so far set, and the largest it has been. */
static void track_cfa(int32_t *cfa, int32_t *max_cfa, int32_t to)
{
	*cfa = to;
	if (to > *max_cfa)
		*max_cfa = to;
}

/* def_cfa_offset to `cfa` (if it is an int32_t), and track it. */
static sw_status compact_cfa(struct swu_row_reader *rr, int64_t cfa, struct swu_op *op)
{
	if (cfa < INT32_MIN || cfa > INT32_MAX)
		return SW_E_BADMETA;
	op->code = SWU_OP_CFA_OFFSET;
	op->arg = cfa;
	track_cfa(&rr->cfa, &rr->max_cfa, (int32_t)cfa);
	return SW_OK;
}

/* Does the op set the CFA offset (the one a compact reader tracks)? */
static bool sets_cfa(unsigned code)
{
	return code == SWU_OP_DEF_CFA || code == SWU_OP_CFA_OFFSET || code == SWU_OP_CFA_DEREF;
}

/* saved_at `reg` at -CFA, the slot a push just filled. */
static sw_status compact_slot(const struct swu_row_reader *rr, unsigned reg, uint32_t end,
                              struct swu_op *op)
{
	if (rr->cfa == INT32_MIN)
		return SW_E_BADMETA;
	op->end = end;
	op->code = SWU_OP_SAVED_AT;
	op->reg = reg;
	op->reg2 = 0;
	op->arg = -(int64_t)rr->cfa;
	return SW_OK;
}

/* One compact item: the byte `b` read, its operands follow. */
static sw_status read_compact(struct swu_row_reader *rr, unsigned b, uint32_t prev_end,
                              struct swu_op *op)
{
	struct swu_reader *r = &rr->r;
	uint32_t delta;
	int32_t k;
	sw_status st;

	op->reg = 0;
	op->reg2 = 0;
	op->arg = 0;
	if (b >= SWU_C_PUSH) {
		/* Two ops: the CFA moves a word, the register lands at the new top. */
		if ((st = compact_end(prev_end, b & 7, op)) != SW_OK ||
		    (st = compact_cfa(rr, (int64_t)rr->cfa + rr->word, op)) != SW_OK ||
		    (st = compact_slot(rr, (b >> 3) & 15, op->end, &rr->next)) != SW_OK)
			return st;
		rr->pending = true;
		return SW_OK;
	}
	if (b >= SWU_C_CFA_ADD) {
		if ((st = swu_read_uleb(r, &delta)) != SW_OK)
			return st;
		k = (int32_t)(b & 31) - 16;
		if (b == SWU_C_CFA_ADD_ANY && (st = swu_read_sleb(r, &k)) != SW_OK)
			return st;
		if ((st = compact_end(prev_end, delta, op)) != SW_OK)
			return st;
		return compact_cfa(rr, (int64_t)rr->cfa + (int64_t)k * rr->word, op);
	}
	if (b >= SWU_C_CFA_INC) {
		if ((st = compact_end(prev_end, b & 15, op)) != SW_OK)
			return st;
		return compact_cfa(rr, (int64_t)rr->cfa + (b < SWU_C_CFA_DEC ? rr->word : -rr->word), op);
	}
	if (b >= SWU_C_RESTORE) {
		delta = b & 15;
		if (b == SWU_C_RESTORE && (st = swu_read_uleb(r, &delta)) != SW_OK)
			return st;
		if ((st = compact_end(prev_end, delta, op)) != SW_OK)
			return st;
		return compact_cfa(rr, rr->max_cfa, op);
	}
	if (b >= SWU_C_SAVE_SLOT)
		return compact_slot(rr, b & 15, prev_end, op);
	if (b >= SWU_C_FULL_OP && swu_op_is_row(b)) {
		op->code = b;
		if ((st = read_end(r, prev_end, 0, op)) != SW_OK ||
		    (st = read_operands(r, op)) != SW_OK)
			return st;
		/* The operand is an SLEB128 int32_t. */
		if (sets_cfa(op->code))
			track_cfa(&rr->cfa, &rr->max_cfa, (int32_t)op->arg);
		return SW_OK;
	}
	return SW_E_BADMETA;        /* reserved */
}

sw_status swu_read_row_op(struct swu_row_reader *rr, uint32_t prev_end, struct swu_op *op)
{
	struct swu_reader *r = &rr->r;

	if (!rr->compact)
		return swu_read_op(r, prev_end, 0, op);
	if (rr->pending) {
		/* A push's save, at the end of its CFA op (the previous op). */
		*op = rr->next;
		rr->pending = false;
		return SW_OK;
	}
	if (r->p >= r->end)
		return SW_E_TRUNCATED;
	return read_compact(rr, *r->p++, prev_end, op);
}

/* The smallest op: end delta and opcode (sign_ra, auth_ra have no operand). */
#define SWU_MIN_OP_BYTES 2

sw_status swu_read_epilog(struct swu_reader *r, const sw_swu_header *h,
                          uint32_t prev_end, struct swu_epilog *e)
{
	uint32_t delta, len, nbytes;
	uint64_t start;
	sw_status st;

	if ((st = swu_read_uleb(r, &delta)) != SW_OK ||
	    (st = swu_read_uleb(r, &len)) != SW_OK ||
	    (st = swu_read_uleb(r, &e->nops)) != SW_OK ||
	    (st = swu_read_uleb(r, &nbytes)) != SW_OK)
		return st;
	start = (uint64_t)prev_end + delta;
	if (len == 0 || start + len > h->code_size)
		return SW_E_BADMETA;
	if (e->nops > SW_SWU_MAX_OPS || (uint64_t)e->nops * SWU_MIN_OP_BYTES > nbytes ||
	    (e->nops == 0 && nbytes != 0))
		return SW_E_BADMETA;
	if (nbytes > (size_t)(r->end - r->p))
		return SW_E_TRUNCATED;
	e->start = (uint32_t)start;
	e->end = (uint32_t)(start + len);
	e->ops.p = r->p;
	e->ops.end = r->p + nbytes;
	r->p += nbytes;
	return SW_OK;
}

/* The operands of op->code, as read_operands() reads them. */
static void put_operands(struct swu_writer *w, const struct swu_op *op)
{
	unsigned operands = swu_op_operands(op->code);

	if (operands & SWU_OPND_REG)
		swu_put_uleb(w, op->reg);
	if (operands & SWU_OPND_REG2)
		swu_put_uleb(w, op->reg2);
	if (operands & SWU_OPND_SIZE)
		swu_put_uleb(w, (uint32_t)op->arg);
	else if (operands & SWU_OPND_OFFSET)
		swu_put_sleb(w, (int32_t)op->arg);
}

void swu_put_op(struct swu_writer *w, uint32_t prev_end, const struct swu_op *op)
{
	swu_put_uleb(w, op->end - prev_end);
	swu_put_byte(w, op->code);
	put_operands(w, op);
}

/* Is ops[1] a push's save of the slot ops[0] (CFA one word up) just made? */
static bool is_push(const struct swu_op *ops, uint32_t n, int32_t cfa, int32_t word)
{
	return n >= 2 && ops[0].code == SWU_OP_CFA_OFFSET && ops[0].arg == (int64_t)cfa + word &&
	       ops[0].end == ops[1].end && ops[1].code == SWU_OP_SAVED_AT && ops[1].reg < 16 &&
	       ops[1].arg == -ops[0].arg;
}

/*
 * One def_cfa_offset in its shortest compact form, or false if it has
 * none (its change is no multiple of the word).  The reader's order of
 * checks does not matter: each form says exactly what the op is.
 */
static bool put_compact_cfa(struct swu_writer *w, uint32_t delta, int64_t to, int32_t cfa,
                            int32_t max_cfa, int32_t word)
{
	int64_t change = to - cfa, k = change / word;
	bool restore = to == max_cfa && change != 0;

	if (change == word && delta < 16) {
		swu_put_byte(w, SWU_C_CFA_INC | delta);
	} else if (change == -word && delta < 16) {
		swu_put_byte(w, SWU_C_CFA_DEC | delta);
	} else if (restore && delta >= 1 && delta < 16) {
		swu_put_byte(w, SWU_C_RESTORE | delta);
	} else if (change % word == 0 && k >= -16 && k < 16 && k != 0) {
		swu_put_byte(w, SWU_C_CFA_ADD + (unsigned)(k + 16));
		swu_put_uleb(w, delta);
	} else if (restore) {
		swu_put_byte(w, SWU_C_RESTORE);
		swu_put_uleb(w, delta);
	} else if (change % word == 0 && k >= INT32_MIN && k <= INT32_MAX) {
		swu_put_byte(w, SWU_C_CFA_ADD_ANY);
		swu_put_uleb(w, delta);
		swu_put_sleb(w, (int32_t)k);
	} else {
		return false;
	}
	return true;
}

void swu_put_row_ops(struct swu_writer *w, const struct swi_arch *arch,
                     const struct swu_op *ops, uint32_t n)
{
	int32_t word = (int32_t)arch->ptr_size;
	int32_t cfa = (int32_t)arch->entry_sp_offset, max_cfa = cfa;
	uint32_t prev = 0;

	for (uint32_t i = 0; i < n; i++) {
		const struct swu_op *op = &ops[i];
		uint32_t delta = op->end - prev;

		if (delta < 8 && is_push(op, n - i, cfa, word)) {
			swu_put_byte(w, SWU_C_PUSH | ops[i + 1].reg << 3 | delta);
			i++;    /* the save is part of the push */
		} else if (op->code == SWU_OP_SAVED_AT && delta == 0 && op->reg < 16 &&
		           op->arg == -(int64_t)cfa) {
			swu_put_byte(w, SWU_C_SAVE_SLOT | op->reg);
		} else if (op->code != SWU_OP_CFA_OFFSET ||
		           !put_compact_cfa(w, delta, op->arg, cfa, max_cfa, word)) {
			/* The plain op, its opcode first. */
			swu_put_byte(w, op->code);
			swu_put_uleb(w, delta);
			put_operands(w, op);
		}
		if (sets_cfa(op->code))
			track_cfa(&cfa, &max_cfa, (int32_t)op->arg);
		prev = op->end;
	}
}

/* ---- GC locations ---- */

struct swu_reader swu_gc_section(const void *blob, size_t size, const struct swu_reader *r)
{
	struct swu_reader gc = { r->end, (const uint8_t *)blob + size };

	return gc;
}

sw_status swu_gc_check_register(const struct swi_arch *a, uint32_t reg)
{
	/* SP and IP are the frame's own; they never hold a reference. */
	if (reg >= a->nregs || reg >= SW_MAX_REGS || reg == a->sp_reg || reg == a->ip_reg)
		return SW_E_INVAL;
	return SW_OK;
}

sw_status swu_gc_check_slot(const struct swi_arch *a, int64_t cfa_offset)
{
	if (cfa_offset % (int64_t)a->ptr_size != 0)
		return SW_E_INVAL;
	/* x64 and x86: the slot just below the CFA holds the return address. */
	if (cfa_offset < 0 && cfa_offset >= -(int64_t)a->entry_sp_offset)
		return SW_E_INVAL;
	/* Locals below the CFA, or the caller's outgoing arguments above it. */
	if (cfa_offset < -(int64_t)SW_SWU_MAX_FRAME || cfa_offset >= (int64_t)SW_SWU_MAX_FRAME)
		return SW_E_LIMIT;
	return SW_OK;
}

int swu_gc_cmp(const sw_swu_gc_slot *a, const sw_swu_gc_slot *b, bool flags)
{
	if (a->in_register != b->in_register)
		return a->in_register ? -1 : 1;
	if (a->in_register ? a->reg != b->reg : a->cfa_offset != b->cfa_offset) {
		if (a->in_register)
			return a->reg < b->reg ? -1 : 1;
		return a->cfa_offset < b->cfa_offset ? -1 : 1;
	}
	if ((a->flags ^ b->flags) & SW_GC_PARENT_FRAME)
		return (a->flags & SW_GC_PARENT_FRAME) ? 1 : -1;
	if (!flags || a->flags == b->flags)
		return 0;
	return a->flags < b->flags ? -1 : 1;
}

sw_status swu_read_gc_loc(struct swu_reader *r, const struct swi_arch *a, struct swu_gc_loc *loc)
{
	unsigned kind;
	sw_status st;

	if (r->p >= r->end)
		return SW_E_TRUNCATED;
	kind = *r->p++;
	if (kind & ~(SWU_GC_FLAGS | SWU_GC_REGISTER))
		return SW_E_BADMETA;
	loc->slot.flags = kind & SWU_GC_FLAGS;
	loc->slot.in_register = (kind & SWU_GC_REGISTER) != 0;
	/* A register is the funclet's own: only stack slots lie in the parent's frame. */
	if (loc->slot.in_register && (kind & SW_GC_PARENT_FRAME))
		return SW_E_BADMETA;
	loc->slot.reg = 0;
	loc->slot.cfa_offset = 0;
	if (loc->slot.in_register) {
		if ((st = swu_read_uleb(r, &loc->slot.reg)) != SW_OK)
			return st;
		if (swu_gc_check_register(a, loc->slot.reg) != SW_OK)
			return SW_E_BADMETA;
	} else {
		int32_t index;
		int64_t off;

		if ((st = swu_read_sleb(r, &index)) != SW_OK)
			return st;
		off = (int64_t)index * a->ptr_size;
		if (swu_gc_check_slot(a, off) != SW_OK)
			return SW_E_BADMETA;
		loc->slot.cfa_offset = (int32_t)off;
	}
	if ((st = swu_read_uleb(r, &loc->nranges)) != SW_OK)
		return st;
	if (loc->nranges == 0 || loc->nranges > SW_SWU_MAX_GC_RANGES)
		return SW_E_BADMETA;
	return SW_OK;
}

sw_status swu_read_gc_range(struct swu_reader *r, uint32_t prev_end, bool first,
                            uint32_t code_size, uint32_t *start, uint32_t *end)
{
	uint32_t delta, len;
	uint64_t s;
	sw_status st;

	if ((st = swu_read_uleb(r, &delta)) != SW_OK ||
	    (st = swu_read_uleb(r, &len)) != SW_OK)
		return st;
	/* Touching ranges are one range: a gap of at least one offset between them. */
	if ((!first && delta == 0) || len == 0)
		return SW_E_BADMETA;
	s = (uint64_t)prev_end + delta;
	if (s + len > code_size)
		return SW_E_BADMETA;
	*start = (uint32_t)s;
	*end = (uint32_t)(s + len);
	return SW_OK;
}

sw_status swu_skip_varints(struct swu_reader *r, uint64_t n)
{
	/* Each varint ends with the first byte whose high bit is clear. */
	while (n) {
		if (r->p >= r->end)
			return SW_E_TRUNCATED;
		if (!(*r->p++ & 0x80))
			n--;
	}
	return SW_OK;
}

void swu_put_gc_loc(struct swu_writer *w, const struct swi_arch *a, const sw_swu_gc_slot *slot,
                    uint32_t nranges)
{
	swu_put_byte(w, (slot->flags & SWU_GC_FLAGS) | (slot->in_register ? SWU_GC_REGISTER : 0));
	if (slot->in_register)
		swu_put_uleb(w, slot->reg);
	else
		swu_put_sleb(w, slot->cfa_offset / (int32_t)a->ptr_size);
	swu_put_uleb(w, nranges);
}
