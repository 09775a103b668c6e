/*
 * arm64_emit.c - encodings for the handful of AArch64 instructions the toy
 * JIT emits.  The Arm ARM (DDI 0487), section C6, has the tables; the
 * comments give each base opcode's form.
 */
#include "arm64_emit.h"

#define BRK0 0xd4200000u

static void insn(code_buf *b, uint32_t word)
{
	code_insn(b);
	code_put32(b, word);
}

void arm64_align(code_buf *b, size_t align)
{
	while (!b->overflow && (b->len & (align - 1)))
		insn(b, BRK0);
}

static uint32_t field(int64_t v, unsigned bits, unsigned shift)
{
	return ((uint32_t)v & ((1u << bits) - 1)) << shift;
}

/*
 * Load/store pair, 64-bit: x registers opc 10, V 0 (0xa8...); d registers
 * opc 01, V 1 (0x6c...).  Bits 24-23: 01 post-index, 11 pre-index, 10
 * signed offset; bit 22: load.  imm7 is scaled by 8.
 */
static void pair(code_buf *b, int fp, int load, unsigned r1, unsigned r2, unsigned base,
                 int32_t off, enum arm64_index idx)
{
	static const uint32_t mode[] = { [ARM64_OFFSET] = 2u << 23, [ARM64_PRE] = 3u << 23,
	                                 [ARM64_POST] = 1u << 23 };
	uint32_t w = (fp ? 0x6c000000u : 0xa8000000u) | mode[idx] | (load ? 1u << 22 : 0);

	insn(b, w | field(off / 8, 7, 15) | field(r2, 5, 10) | field(base, 5, 5) | field(r1, 5, 0));
}

void arm64_stp(code_buf *b, int fp, unsigned r1, unsigned r2, unsigned base, int32_t off,
               enum arm64_index idx)
{
	pair(b, fp, 0, r1, r2, base, off, idx);
}

void arm64_ldp(code_buf *b, int fp, unsigned r1, unsigned r2, unsigned base, int32_t off,
               enum arm64_index idx)
{
	pair(b, fp, 1, r1, r2, base, off, idx);
}

/*
 * Single 64-bit load/store: size 11, V for d registers.  Unsigned offset
 * 0xf9000000 (imm12 scaled by 8); pre/post-index 0xf8000c00 / 0xf8000400
 * (imm9 unscaled).  Bit 22: load.
 */
static void single(code_buf *b, int fp, int load, unsigned r, unsigned base, int32_t off,
                   enum arm64_index idx)
{
	uint32_t v = fp ? 1u << 26 : 0, l = load ? 1u << 22 : 0;

	if (idx == ARM64_OFFSET)
		insn(b, 0xf9000000u | v | l | field(off / 8, 12, 10) | field(base, 5, 5) | field(r, 5, 0));
	else
		insn(b, (idx == ARM64_PRE ? 0xf8000c00u : 0xf8000400u) | v | l |
		        field(off, 9, 12) | field(base, 5, 5) | field(r, 5, 0));
}

void arm64_str(code_buf *b, int fp, unsigned r, unsigned base, int32_t off, enum arm64_index idx)
{
	single(b, fp, 0, r, base, off, idx);
}

void arm64_ldr(code_buf *b, int fp, unsigned r, unsigned base, int32_t off, enum arm64_index idx)
{
	single(b, fp, 1, r, base, off, idx);
}

void arm64_str_w(code_buf *b, unsigned r, unsigned base, uint32_t off)   /* b9000000 */
{
	insn(b, 0xb9000000u | field(off / 4, 12, 10) | field(base, 5, 5) | field(r, 5, 0));
}

void arm64_ldr_w(code_buf *b, unsigned r, unsigned base, uint32_t off)   /* b9400000 */
{
	insn(b, 0xb9400000u | field(off / 4, 12, 10) | field(base, 5, 5) | field(r, 5, 0));
}

/* add/sub (immediate): sf op S 100010 sh imm12 Rn Rd. */
static void addsub_imm(code_buf *b, uint32_t base_op, unsigned rd, unsigned rn, uint32_t imm)
{
	uint32_t sh = 0;

	if (imm >= 4096 && (imm & 0xfff) == 0) {
		sh = 1u << 22;
		imm >>= 12;
	}
	insn(b, base_op | sh | field(imm, 12, 10) | field(rn, 5, 5) | field(rd, 5, 0));
}

void arm64_add_imm(code_buf *b, unsigned rd, unsigned rn, uint32_t imm)
{
	addsub_imm(b, 0x91000000u, rd, rn, imm);
}

void arm64_sub_imm(code_buf *b, unsigned rd, unsigned rn, uint32_t imm)
{
	addsub_imm(b, 0xd1000000u, rd, rn, imm);
}

void arm64_add_w_imm(code_buf *b, unsigned rd, unsigned rn, uint32_t imm)
{
	addsub_imm(b, 0x11000000u, rd, rn, imm);
}

void arm64_sub_w_imm(code_buf *b, unsigned rd, unsigned rn, uint32_t imm)
{
	addsub_imm(b, 0x51000000u, rd, rn, imm);
}

void arm64_cmp_w(code_buf *b, unsigned rn, unsigned rm)  /* subs wzr, wn, wm: 6b000000 */
{
	insn(b, 0x6b000000u | field(rm, 5, 16) | field(rn, 5, 5) | 31u);
}

void arm64_mov(code_buf *b, unsigned rd, unsigned rm)    /* orr xd, xzr, xm: aa0003e0 */
{
	insn(b, 0xaa0003e0u | field(rm, 5, 16) | field(rd, 5, 0));
}

void arm64_mov_imm(code_buf *b, unsigned rd, uint64_t imm) /* movz d2800000, movk f2800000 */
{
	insn(b, 0xd2800000u | field((int64_t)(imm & 0xffff), 16, 5) | field(rd, 5, 0));
	for (unsigned hw = 1; hw < 4; hw++) {
		uint64_t chunk = imm >> (16 * hw) & 0xffff;

		if (chunk)
			insn(b, 0xf2800000u | hw << 21 | field((int64_t)chunk, 16, 5) | field(rd, 5, 0));
	}
}

void arm64_fmov_dx(code_buf *b, unsigned dd, unsigned xn)  /* 9e670000 */
{
	insn(b, 0x9e670000u | field(xn, 5, 5) | field(dd, 5, 0));
}

void arm64_blr(code_buf *b, unsigned rn)       /* d63f0000 */
{
	insn(b, 0xd63f0000u | field(rn, 5, 5));
}

void arm64_ret(code_buf *b)                    /* ret x30 */
{
	insn(b, 0xd65f03c0u);
}

void arm64_paciasp(code_buf *b)                /* hint #25 */
{
	insn(b, 0xd503233fu);
}

void arm64_autiasp(code_buf *b)                /* hint #29 */
{
	insn(b, 0xd50323bfu);
}

void arm64_brk(code_buf *b, uint16_t imm)
{
	insn(b, BRK0 | field(imm, 16, 5));
}

static size_t branch(code_buf *b, uint32_t word)
{
	size_t at = b->len;

	insn(b, word);
	return at;
}

size_t arm64_b(code_buf *b)
{
	return branch(b, 0x14000000u);
}

size_t arm64_bl(code_buf *b)
{
	return branch(b, 0x94000000u);
}

size_t arm64_cbz_w(code_buf *b, unsigned rt)
{
	return branch(b, 0x34000000u | field(rt, 5, 0));
}

size_t arm64_b_eq(code_buf *b)
{
	return branch(b, 0x54000000u);             /* cond EQ = 0 */
}

size_t arm64_adr(code_buf *b, unsigned rd)
{
	return branch(b, 0x10000000u | field(rd, 5, 0));
}

void arm64_patch(code_buf *b, size_t at, size_t target)
{
	int64_t rel = (int64_t)target - (int64_t)at;
	uint32_t w = code_get32(b, at);

	if ((w & 0x7c000000u) == 0x14000000u)              /* b, bl: imm26 */
		w |= field(rel / 4, 26, 0);
	else if ((w & 0x9f000000u) == 0x10000000u)         /* adr: immhi:immlo */
		w |= field(rel & 3, 2, 29) | field(rel >> 2, 19, 5);
	else                                               /* cbz, b.cond: imm19 */
		w |= field(rel / 4, 19, 5);
	code_patch32(b, at, w);
}
