/*
 * swu_format.h (internal) - the SWU byte format, and what its readers share.
 *
 * A blob is a header and up to three tables, every number a ULEB128 varint
 * unless said otherwise (swu(5) documents each byte):
 *
 *   magic (1 byte, SWU_MAGIC)
 *   version << 4 | arch (1 byte)
 *   flags              SWU_FLAG_*: which optional sections are present
 *   code size          bytes of code the blob describes
 *   prolog size        the body starts at this offset
 *   prolog op count
 *   epilog count
 *   body op count      only with SWU_FLAG_BODY_OPS
 *   PSP slot           only with SWU_FLAG_PSP: SLEB128 CFA offset / pointer size
 *   GC location count  only with SWU_FLAG_GC
 *   unwind op bytes    only with SWU_FLAG_GC: where the GC section begins
 *   EH bytes           only with SWU_FLAG_EH: the EH section's size
 *   EH section         only with SWU_FLAG_EH: version, clauses (swu_eh.c)
 *   prolog ops         end delta, opcode byte, operands
 *   epilogs            start delta, length, op count, op bytes, ops
 *   body ops           only with SWU_FLAG_BODY_OPS: end delta, opcode, size
 *   GC locations       only with SWU_FLAG_GC: kind byte, register or slot,
 *                      range count, ranges (start delta, length)
 *
 * The row form (SWU_FLAG_ROWS), for imported CFI, replaces everything from
 * the prolog size to the body ops with one list of row ops:
 *
 *   magic, version << 4 | arch, flags, code size
 *   row op count
 *   GC location count, unwind op bytes   only with SWU_FLAG_GC
 *   row ops            end delta (0 allowed: several rules change at one
 *                      offset), opcode, operands
 *   GC locations       only with SWU_FLAG_GC
 *
 * The compact row form (SWU_FLAG_COMPACT, only with SWU_FLAG_ROWS) writes
 * the same row ops in fewer bytes, since imported CFI is mostly pushes and
 * pops: an item's first byte says it all for the common cases, and the
 * reader tracks the CFA offset (the operand of the last def_cfa,
 * def_cfa_offset or def_cfa_deref; the architecture's entry SP offset
 * before any) and the largest it has been, so that items say how the
 * offset changes, not what it becomes.  b is an item's first byte, d its
 * end delta, W the pointer size, CFA the tracked offset:
 *
 *   0x00-0x0f       reserved
 *   0x10-0x15       a full row op with this opcode: d (ULEB128), operands
 *   0x16-0x1f       reserved
 *   0x20-0x2f       saved_at (b & 15) at -CFA, d 0 (a push's save)
 *   0x30            def_cfa_offset to the largest CFA, d (ULEB128)
 *   0x31-0x3f       the same, d = b & 15 (an epilog's end: the frame is back)
 *   0x40-0x4f       def_cfa_offset CFA + W, d = b & 15
 *   0x50-0x5f       def_cfa_offset CFA - W, d = b & 15
 *   0x60-0x7f       def_cfa_offset CFA + k * W, k = (b & 31) - 16, d (ULEB128);
 *                   for 0x70 (k 0) d (ULEB128) and k (SLEB128) follow
 *   0x80-0xff       a push, two ops: def_cfa_offset CFA + W, d = b & 7,
 *                   then saved_at ((b >> 3) & 15) at -(CFA + W), d 0
 *
 * The row op count still counts ops, so a push byte counts two.
 *
 * Offsets are deltas, so that a typical prolog op is three bytes: an op's
 * end is relative to the previous op's end (the first: to 0 in the prolog,
 * to the epilog's start in an epilog, to the prolog size in the body), an
 * epilog's start relative to the previous epilog's end (the first: to the
 * prolog size).  An epilog records the byte size of its ops so that a
 * decoder looking for the body can skip it without parsing it.  Body ops
 * come last because only an offset in the body needs them: a decoder whose
 * offset lies in the prolog or an epilog stops before them.  The GC section
 * comes last; the header says how many bytes of ops precede it, so that
 * sw_swu_gc_live() goes straight to it without reading a single op.
 */
#ifndef SW_UNWINDINFO_SWU_FORMAT_H
#define SW_UNWINDINFO_SWU_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stackwalk/swu.h>
#include "arch.h"

#define SWU_MAGIC    0xE5
#define SWU_VERSION  1

/* Header flags: the optional sections present. */
#define SWU_FLAG_BODY_OPS  0x01u        /* body op count in the header, body ops at the end */
#define SWU_FLAG_GC        0x02u        /* GC location count and op bytes in the header, GC section last */
#define SWU_FLAG_ROWS      0x04u        /* row form: code size, row op count, row ops (no prolog, epilogs) */
#define SWU_FLAG_COMPACT   0x08u        /* with SWU_FLAG_ROWS: row ops in the compact encoding */
/*
 * A funclet's PSP slot (CoreCLR's PSPSym): the frame slot where the
 * funclet keeps its parent's CFA, through which the walker finds the
 * parent by stack position and the funclet reports the parent's slots
 * (SW_GC_PARENT_FRAME).  Not with SWU_FLAG_ROWS.  A decoder older than the
 * flag rejects such a blob as unsupported, as it does any unknown flag.
 */
#define SWU_FLAG_PSP       0x10u
/*
 * Exception handling clauses (swu_eh.c): an EH byte count in the header,
 * after every other field, and the EH section right after the header,
 * before the ops, so that neither the op bytes of SWU_FLAG_GC nor the GC
 * section at the end move.  The section starts with its own version.
 */
#define SWU_FLAG_EH        0x20u
#define SWU_FLAGS_KNOWN    (SWU_FLAG_BODY_OPS | SWU_FLAG_GC | SWU_FLAG_ROWS | SWU_FLAG_COMPACT | \
                            SWU_FLAG_PSP | SWU_FLAG_EH)
/* The smallest EH section: its version byte and a clause count. */
#define SWU_EH_MIN_BYTES   2

/* The compact row encoding's first bytes (see above). */
#define SWU_C_FULL_OP      0x10u        /* 0x10-0x15: opcode, then d, operands */
#define SWU_C_SAVE_SLOT    0x20u        /* + reg */
#define SWU_C_RESTORE      0x30u        /* + d (1-15); 0x30: d follows */
#define SWU_C_CFA_INC      0x40u        /* + d */
#define SWU_C_CFA_DEC      0x50u        /* + d */
#define SWU_C_CFA_ADD      0x60u        /* + k + 16 (k -16..15), d follows */
#define SWU_C_CFA_ADD_ANY  0x70u        /* d and k follow */
#define SWU_C_PUSH         0x80u        /* + reg << 3 + d (0-7) */

/*
 * Opcodes.  0 is never valid, so that zeroed memory is not a blob.  Values
 * not listed are reserved: 0x09-0x0f and 0x16-0x1f for more
 * architecture-neutral ops,
 * 0x24-0x27 and 0x2c-0x3f for arm64, 0x43-0x5f for x86.  A decoder rejects
 * them as corrupt.  The arm64 ops need an architecture with register pairs
 * (or pointer authentication); body ops may describe any architecture.
 */
enum swu_opcode {
	SWU_OP_PUSH         = 0x01,   /* reg */
	SWU_OP_ALLOC        = 0x02,   /* size */
	SWU_OP_SET_FRAME    = 0x03,   /* reg, SP offset */
	SWU_OP_SAVE_REG     = 0x04,   /* reg, SP offset */
	SWU_OP_FREE         = 0x05,   /* size */
	SWU_OP_RESTORE_SP   = 0x06,   /* frame offset (SLEB128) */
	SWU_OP_POP          = 0x07,   /* reg */
	SWU_OP_RESTORE_REG  = 0x08,   /* reg */

	/* rows (the row form only): generic rules at any offset */
	SWU_OP_DEF_CFA      = 0x10,   /* reg, offset (SLEB128): CFA = reg + offset */
	SWU_OP_CFA_OFFSET   = 0x11,   /* offset (SLEB128): CFA = the same register + offset */
	SWU_OP_SAVED_AT     = 0x12,   /* reg, CFA offset (SLEB128): reg saved at [CFA + offset] */
	SWU_OP_SAME_VALUE   = 0x13,   /* reg: reg holds its caller's value */
	SWU_OP_CFA_DEREF    = 0x14,   /* reg, offset (SLEB128): CFA = [reg + offset] */
	SWU_OP_SAVED_AT_REG = 0x15,   /* reg, base reg, offset (SLEB128): reg saved at [base + offset] */

	/* arm64 prolog */
	SWU_OP_PUSH_PAIR    = 0x20,   /* reg1, reg2, size: stp reg1, reg2, [sp, #-size]! */
	SWU_OP_PUSH_SIZED   = 0x21,   /* reg, size: str reg, [sp, #-size]! */
	SWU_OP_SAVE_PAIR    = 0x22,   /* reg1, reg2, SP offset: stp reg1, reg2, [sp, #off] */
	SWU_OP_SIGN_RA      = 0x23,   /* (none): paciasp */
	/* arm64 epilog */
	SWU_OP_POP_PAIR     = 0x28,   /* reg1, reg2, size: ldp reg1, reg2, [sp], #size */
	SWU_OP_POP_SIZED    = 0x29,   /* reg, size: ldr reg, [sp], #size */
	SWU_OP_RESTORE_PAIR = 0x2a,   /* reg1, reg2: ldp reg1, reg2, [sp, #off] */
	SWU_OP_AUTH_RA      = 0x2b,   /* (none): autiasp */

	/* body (x86 ESP frames) */
	SWU_OP_PUSH_ARGS    = 0x40,   /* size */
	SWU_OP_POP_ARGS     = 0x41,   /* size */
	SWU_OP_CALL_POPS    = 0x42,   /* size: the call ending here pops its arguments */
};

static inline bool swu_op_is_prolog(unsigned code)
{
	return (code >= SWU_OP_PUSH && code <= SWU_OP_SAVE_REG) ||
	       (code >= SWU_OP_PUSH_PAIR && code <= SWU_OP_SIGN_RA);
}

static inline bool swu_op_is_epilog(unsigned code)
{
	return (code >= SWU_OP_FREE && code <= SWU_OP_RESTORE_REG) ||
	       (code >= SWU_OP_POP_PAIR && code <= SWU_OP_AUTH_RA);
}

static inline bool swu_op_is_body(unsigned code)
{
	return code >= SWU_OP_PUSH_ARGS && code <= SWU_OP_CALL_POPS;
}

static inline bool swu_op_is_row(unsigned code)
{
	return code >= SWU_OP_DEF_CFA && code <= SWU_OP_SAVED_AT_REG;
}

/* One decoded unwind operation; `end` is absolute within the method. */
struct swu_op {
	uint32_t end;
	uint32_t code;          /* enum swu_opcode */
	uint32_t reg;           /* the register (the first of a pair) */
	uint32_t reg2;          /* the second register of a pair; saved_at_reg's base */
	int64_t arg;            /* size or offset */
};

/* What follows an opcode: the operands it has, in this order, each a LEB128. */
enum swu_operand {
	SWU_OPND_REG    = 1,    /* reg (ULEB128) */
	SWU_OPND_REG2   = 2,    /* reg2 (ULEB128) */
	SWU_OPND_SIZE   = 4,    /* arg (ULEB128): a size or an SP offset */
	SWU_OPND_OFFSET = 8,    /* arg (SLEB128, an int32_t) */
};

/* The mnemonic of an opcode ("push", ...), or NULL for a reserved one. */
const char *swu_op_name(unsigned code);

/* The operands of an opcode (SWU_OPND_*); 0 for none or a reserved one. */
unsigned swu_op_operands(unsigned code);

/* One op in swdump's words ("push rbx"); restore_sp reads `fp_reg` (dump.c). */
void swu_op_text(sw_arch arch, uint32_t fp_reg, const struct swu_op *op, char *text, size_t len);

/* ---- Reading: every read is bounded by `end`. ---- */

struct swu_reader {
	const uint8_t *p;
	const uint8_t *end;
};

/* An unsigned 32-bit ULEB128: at most 5 bytes, no bits beyond bit 31. */
static inline sw_status swu_read_uleb(struct swu_reader *r, uint32_t *out)
{
	uint32_t v = 0;

	for (unsigned shift = 0; shift < 35; shift += 7) {
		unsigned b;

		if (r->p >= r->end)
			return SW_E_TRUNCATED;
		b = *r->p++;
		/* The fifth byte holds bits 28-31 only. */
		if (shift == 28 && b > 0x0f)
			return SW_E_BADMETA;
		v |= (uint32_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*out = v;
			return SW_OK;
		}
	}
	return SW_E_BADMETA;
}

/* A signed 32-bit SLEB128: at most 5 bytes, value within int32_t. */
static inline sw_status swu_read_sleb(struct swu_reader *r, int32_t *out)
{
	int64_t v = 0;
	unsigned shift = 0;
	unsigned b;

	do {
		if (shift >= 35)
			return SW_E_BADMETA;
		if (r->p >= r->end)
			return SW_E_TRUNCATED;
		b = *r->p++;
		v |= (int64_t)(b & 0x7f) << shift;
		shift += 7;
	} while (b & 0x80);
	if (b & 0x40)
		v -= (int64_t)1 << shift;
	if (v < INT32_MIN || v > INT32_MAX)
		return SW_E_BADMETA;
	*out = (int32_t)v;
	return SW_OK;
}

/*
 * Read one op whose end is at least `prev_end` + `min_delta`; the end delta
 * is added to `prev_end`.  Opcode and operand syntax are checked here, the
 * meaning by swu_state_apply().
 */
sw_status swu_read_op(struct swu_reader *r, uint32_t prev_end, uint32_t min_delta,
                      struct swu_op *op);

/*
 * The fixed part of a header, checked against the limits.  On success `r`
 * covers the unwind part: from the first op to the GC section, and
 * *flags (if not NULL) holds the SWU_FLAG_* bits.
 */
sw_status swu_read_header(struct swu_reader *r, const void *blob, size_t size,
                          sw_swu_header *h, const struct swi_arch **arch, uint32_t *flags);

/*
 * The blob's PSP slot (SWU_FLAG_PSP): *cfa_offset receives its CFA offset,
 * or 0 when the blob has none (a PSP slot is always below the CFA).  The
 * header is checked as swu_read_header checks it, nothing more.
 */
sw_status swu_read_psp_slot(const void *blob, size_t size, int32_t *cfa_offset);

/*
 * The blob's EH section (SWU_FLAG_EH): *eh covers exactly its bytes, or
 * is empty (p == end == NULL) when the blob has none; *code_size is the
 * header's.  The header is checked as swu_read_header checks it.
 */
sw_status swu_read_eh_section(const void *blob, size_t size, struct swu_reader *eh,
                              uint32_t *code_size);

/*
 * Row ops, plain or compact.  A compact push byte is two ops: the reader
 * keeps the second for the next call.  Once the header's count of ops is
 * read, `pending` must be false, or the last byte held more ops than the
 * count said.
 */
struct swu_row_reader {
	struct swu_reader r;
	bool compact;
	bool pending;                   /* `next` is the next op */
	int32_t word;                   /* the pointer size */
	int32_t cfa;                    /* the CFA offset the ops so far set */
	int32_t max_cfa;                /* the largest it has been */
	struct swu_op next;
};

void swu_row_reader_init(struct swu_row_reader *rr, const struct swu_reader *r,
                         const struct swi_arch *arch, uint32_t flags);

/* Read one row op after `prev_end` (several may share an offset). */
sw_status swu_read_row_op(struct swu_row_reader *rr, uint32_t prev_end, struct swu_op *op);

/*
 * GC locations.  The kind byte holds the SW_GC_* flags in bits 0-1 and 3
 * (SW_GC_PARENT_FRAME: a slot in the parent's frame, only in a blob with a
 * PSP slot) and SWU_GC_REGISTER in bit 2; bits 4-7 are reserved (zero).
 * A register is a
 * ULEB128 number; a stack slot is its CFA offset divided by the pointer
 * size, an SLEB128.  Locations ascend by (registers before slots, register
 * number or offset, flags), so none repeats.  The smallest location is 5
 * bytes: kind, register, count 1, start delta, length.
 */
#define SWU_GC_FLAGS        0x0bu       /* SW_GC_INTERIOR | SW_GC_PINNED | SW_GC_PARENT_FRAME */
#define SWU_GC_REGISTER     0x04u
#define SWU_GC_MIN_BYTES    5

/* One GC location's head; its ranges follow in `ranges`. */
struct swu_gc_loc {
	sw_swu_gc_slot slot;
	uint32_t nranges;
};

/* The GC section: from the end of the unwind part (`r`'s end, as
 * swu_read_header() left it) to the blob's end; empty without GC info. */
struct swu_reader swu_gc_section(const void *blob, size_t size, const struct swu_reader *r);

/* May a method of `a` keep a reference in this location?  (Registers but
 * SP and IP; slots pointer-aligned, not the return address's, within
 * SW_SWU_MAX_FRAME of the CFA.)  SW_OK, SW_E_INVAL or SW_E_LIMIT. */
sw_status swu_gc_check_register(const struct swi_arch *a, uint32_t reg);
sw_status swu_gc_check_slot(const struct swi_arch *a, int64_t cfa_offset);

/*
 * The order of locations: registers (by number) before stack slots (by CFA
 * offset), then by flags.  Without `flags`, 0 means the same place: a slot
 * in the parent's frame (SW_GC_PARENT_FRAME, the highest flag, so a
 * place's variants stay adjacent) is not the funclet's slot at that offset.
 */
int swu_gc_cmp(const sw_swu_gc_slot *a, const sw_swu_gc_slot *b, bool flags);

/* Read a location's head (kind, where, range count), syntax and limits checked. */
sw_status swu_read_gc_loc(struct swu_reader *r, const struct swi_arch *a, struct swu_gc_loc *loc);

/*
 * Read one range after `prev_end` (the previous range's end, 0 before the
 * first): [*start, *end), non-empty, within `code_size`; after the first
 * range (`first` false) at least one offset past the previous one.
 */
sw_status swu_read_gc_range(struct swu_reader *r, uint32_t prev_end, bool first,
                            uint32_t code_size, uint32_t *start, uint32_t *end);

/* Skip `n` varints without decoding them (SW_E_TRUNCATED if they run off). */
sw_status swu_skip_varints(struct swu_reader *r, uint64_t n);

/* One epilog's table entry; `start` and `end` absolute. */
struct swu_epilog {
	uint32_t start, end;
	uint32_t nops;
	struct swu_reader ops;          /* exactly its op bytes */
};

/* Read the entry of the epilog that follows `prev_end` (bounds-checked). */
sw_status swu_read_epilog(struct swu_reader *r, const sw_swu_header *h,
                          uint32_t prev_end, struct swu_epilog *e);

/* ---- Writing: counts every byte, stores those that fit. ---- */

struct swu_writer {
	uint8_t *buf;
	size_t cap;
	size_t len;
};

static inline void swu_put_byte(struct swu_writer *w, unsigned b)
{
	if (w->len < w->cap)
		w->buf[w->len] = (uint8_t)b;
	w->len++;
}

static inline void swu_put_uleb(struct swu_writer *w, uint32_t v)
{
	do {
		unsigned b = v & 0x7f;

		v >>= 7;
		swu_put_byte(w, v ? b | 0x80 : b);
	} while (v);
}

static inline void swu_put_sleb(struct swu_writer *w, int32_t v)
{
	int64_t x = v;

	for (;;) {
		unsigned b = (unsigned)(x & 0x7f);

		/* An arithmetic shift, spelled without shifting a negative value. */
		x = x < 0 ? ~(~x >> 7) : x >> 7;
		if ((x == 0 && !(b & 0x40)) || (x == -1 && (b & 0x40))) {
			swu_put_byte(w, b);
			return;
		}
		swu_put_byte(w, b | 0x80);
	}
}

/* Encode one op after `prev_end` (the caller has checked it). */
void swu_put_op(struct swu_writer *w, uint32_t prev_end, const struct swu_op *op);

/* Encode `n` row ops in the compact form (SWU_FLAG_COMPACT), from offset 0. */
void swu_put_row_ops(struct swu_writer *w, const struct swi_arch *arch,
                     const struct swu_op *ops, uint32_t n);

/* Encode one GC location's head (the caller has checked it). */
void swu_put_gc_loc(struct swu_writer *w, const struct swi_arch *a, const sw_swu_gc_slot *slot,
                    uint32_t nranges);

/*
 * The body rule: what a return address in a method's body needs, decoded
 * once when the method is registered instead of at every frame.  A blob
 * with neither rows nor body ops has one rule for every offset from the
 * end of its prolog to the start of its first epilog (sw_swu_decode
 * replays the whole prolog to find it); a walk spends most frames there.
 * A row blob (imported CFI) gets the rule of its longest run of offsets
 * between two row changes, and of the longest other run with that same
 * rule.  Offsets outside these runs go through the decoder as before.
 *
 * saved[] (nsaved of them, in ascending register order) packs each saved
 * register as (CFA offset << 8) | register; the offset fits in 24 bits
 * or the blob gets no body rule.
 */
struct swu_body_rule {
	uint32_t lo, hi;                /* offsets it covers; lo == hi: none */
	uint32_t lo2, hi2;              /* and a second run with the same rule (compiled
	                                 * code with an early return), or lo2 == hi2 */
	int32_t cfa_offset;             /* CFA = regs[cfa_reg] + cfa_offset */
	int32_t ra_offset;              /* return address at [CFA + ra_offset] unless ra_in_reg */
	uint8_t arch;                   /* an sw_arch */
	uint8_t cfa_reg;
	uint8_t ra_in_reg, ra_reg, ra_signed;
	uint8_t nsaved;
	uint64_t saved_mask;            /* the registers in saved[] */
};

#define SWU_BODY_MAX_SAVED SW_MAX_REGS

static inline unsigned swu_body_saved_reg(uint32_t packed)
{
	return packed & 0xffu;
}

static inline int32_t swu_body_saved_offset(uint32_t packed)
{
	/* The low byte is cleared first, so the division is exact. */
	return (int32_t)(packed & 0xffffff00u) / 256;
}

/*
 * The fields of rule's body form but its runs and saved[] (lo == hi,
 * nsaved 0): a number too wide for its byte becomes 0xff, which no
 * architecture accepts as an arch or a register.
 */
void swu_body_rule_fields(const sw_swu_rule *rule, struct swu_body_rule *out);

/*
 * Decode the body rule of a blob the validator accepted.  *out gets lo ==
 * hi (no body rule) when the blob has rows or body ops, when no offset
 * lies between prolog and first epilog, or when the rule needs more than
 * the packed form says; saved[] must hold SWU_BODY_MAX_SAVED items.
 */
sw_status swu_body_rule_decode(const void *blob, size_t size, struct swu_body_rule *out,
                               uint32_t *saved);

/*
 * sw_swu_validate and swu_body_rule_decode in one: validate the blob and,
 * if it is valid, give its body rule; a blob in prolog form is read once,
 * its body rule taken from the validator's own replay of the prolog.
 */
sw_status swu_validate_body_rule(const void *blob, size_t size, struct swu_body_rule *out,
                                 uint32_t *saved);

#endif /* SW_UNWINDINFO_SWU_FORMAT_H */
