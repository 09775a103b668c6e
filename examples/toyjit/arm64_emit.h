/*
 * arm64_emit.h - a tiny AArch64 encoder: the few instructions the toy JIT
 * needs on arm64.
 *
 * General registers are x0-x30 by number (also their DWARF numbers);
 * ARM64_SP (31) names the stack pointer where an instruction allows it,
 * ARM64_ZR (also 31) the zero register where it does not.  Vector registers
 * are d0-d31 by number.  Offsets are in bytes and must suit the form (a
 * multiple of 8 for pairs and scaled 64-bit offsets).  Every instruction is
 * one 32-bit word appended to a code_buf (see code_buf.h).
 */
#ifndef TOYJIT_ARM64_EMIT_H
#define TOYJIT_ARM64_EMIT_H

#include <stddef.h>
#include <stdint.h>
#include "code_buf.h"

enum {
	ARM64_X0 = 0, ARM64_X1 = 1, ARM64_X2 = 2, ARM64_IP0 = 16, ARM64_IP1 = 17,
	ARM64_FP = 29, ARM64_LR = 30, ARM64_SP = 31, ARM64_ZR = 31
};

/* Addressing of loads and stores. */
enum arm64_index {
	ARM64_OFFSET,       /* [base, #off] */
	ARM64_PRE,          /* [base, #off]!  (base += off first) */
	ARM64_POST          /* [base], #off   (base += off after) */
};

/* Pad with brk #0 up to a multiple of `align` (a power of two, >= 4). */
void arm64_align(code_buf *b, size_t align);

/* stp/ldp of two x (or, with fp set, d) registers. */
void arm64_stp(code_buf *b, int fp, unsigned r1, unsigned r2, unsigned base, int32_t off,
               enum arm64_index idx);
void arm64_ldp(code_buf *b, int fp, unsigned r1, unsigned r2, unsigned base, int32_t off,
               enum arm64_index idx);
/* str/ldr of one x (or d) register; ARM64_OFFSET takes an unsigned multiple of 8. */
void arm64_str(code_buf *b, int fp, unsigned r, unsigned base, int32_t off, enum arm64_index idx);
void arm64_ldr(code_buf *b, int fp, unsigned r, unsigned base, int32_t off, enum arm64_index idx);
/* str/ldr of a w register at [base, #off] (off: an unsigned multiple of 4). */
void arm64_str_w(code_buf *b, unsigned r, unsigned base, uint32_t off);
void arm64_ldr_w(code_buf *b, unsigned r, unsigned base, uint32_t off);

/* add/sub xd|sp, xn|sp, #imm: imm < 4096, or a multiple of 4096 below 2^24. */
void arm64_add_imm(code_buf *b, unsigned rd, unsigned rn, uint32_t imm);
void arm64_sub_imm(code_buf *b, unsigned rd, unsigned rn, uint32_t imm);
/* 32-bit forms: add/sub wd, wn, #imm (imm < 4096). */
void arm64_add_w_imm(code_buf *b, unsigned rd, unsigned rn, uint32_t imm);
void arm64_sub_w_imm(code_buf *b, unsigned rd, unsigned rn, uint32_t imm);
void arm64_cmp_w(code_buf *b, unsigned rn, unsigned rm);           /* cmp wn, wm */
void arm64_mov(code_buf *b, unsigned rd, unsigned rm);             /* mov xd, xm (not sp) */
void arm64_mov_imm(code_buf *b, unsigned rd, uint64_t imm);        /* movz + movk as needed */
void arm64_fmov_dx(code_buf *b, unsigned dd, unsigned xn);         /* fmov dd, xn */

void arm64_blr(code_buf *b, unsigned rn);
void arm64_ret(code_buf *b);
void arm64_paciasp(code_buf *b);
void arm64_autiasp(code_buf *b);
void arm64_brk(code_buf *b, uint16_t imm);

/* PC-relative forms: emit with a zero displacement, patch once the target is known. */
size_t arm64_b(code_buf *b);                                       /* b label */
size_t arm64_bl(code_buf *b);                                      /* bl label */
size_t arm64_cbz_w(code_buf *b, unsigned rt);                      /* cbz wt, label */
size_t arm64_b_eq(code_buf *b);                                    /* b.eq label */
size_t arm64_adr(code_buf *b, unsigned rd);                        /* adr xd, label */
/* Point the instruction at `at` (an offset these returned) to offset `target`. */
void arm64_patch(code_buf *b, size_t at, size_t target);

#endif /* TOYJIT_ARM64_EMIT_H */
