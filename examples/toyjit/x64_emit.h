/*
 * x64_emit.h - a tiny x86-64 encoder: the few instructions the toy JIT needs.
 *
 * Registers are named by their hardware encoding (X64_RAX = 0 ... X64_R15
 * = 15), which is not the DWARF numbering the library uses; x64_dwarf_reg()
 * converts.  Memory operands are always [base + disp]: no index register,
 * no RIP-relative form except x64_lea_rip().  Every emitter appends to an
 * x64_buf (a code_buf: see code_buf.h for overflow and instruction
 * boundaries).
 */
#ifndef TOYJIT_X64_EMIT_H
#define TOYJIT_X64_EMIT_H

#include <stddef.h>
#include <stdint.h>
#include "code_buf.h"

enum x64_reg {
	X64_RAX = 0, X64_RCX = 1, X64_RDX = 2, X64_RBX = 3,
	X64_RSP = 4, X64_RBP = 5, X64_RSI = 6, X64_RDI = 7,
	X64_R8 = 8, X64_R9 = 9, X64_R10 = 10, X64_R11 = 11,
	X64_R12 = 12, X64_R13 = 13, X64_R14 = 14, X64_R15 = 15
};

/* Condition codes for x64_jcc (the low nibble of the 0F 8x opcode). */
enum x64_cond {
	X64_CC_E = 0x4,     /* equal / zero */
	X64_CC_NE = 0x5     /* not equal / not zero */
};

typedef code_buf x64_buf;

void x64_buf_init(x64_buf *b, void *mem, size_t cap);
/* Pad with int3 up to a multiple of `align` (a power of two). */
void x64_align(x64_buf *b, size_t align);

/* x64_dwarf_reg - the DWARF (and libstackwalk) number of hardware register `r`. */
unsigned x64_dwarf_reg(unsigned r);
/* x64_reg_name - "rax" ... "r15". */
const char *x64_reg_name(unsigned r);

void x64_push(x64_buf *b, unsigned r);
void x64_pop(x64_buf *b, unsigned r);
void x64_ret(x64_buf *b);
void x64_int3(x64_buf *b);

void x64_mov_rr(x64_buf *b, unsigned dst, unsigned src);          /* mov dst, src (64-bit) */
void x64_mov_ri64(x64_buf *b, unsigned dst, uint64_t imm);         /* mov dst, imm64 */
void x64_mov_rm(x64_buf *b, unsigned dst, unsigned base, int32_t disp);  /* mov dst, [base+disp] */
void x64_mov_mr(x64_buf *b, unsigned base, int32_t disp, unsigned src);  /* mov [base+disp], src */
void x64_mov_m64_i32(x64_buf *b, unsigned base, int32_t disp, int32_t imm); /* mov qword [..], simm32 */
void x64_mov_m32_i32(x64_buf *b, unsigned base, int32_t disp, uint32_t imm); /* mov dword [..], imm32 */
void x64_lea(x64_buf *b, unsigned dst, unsigned base, int32_t disp);     /* lea dst, [base+disp] */
/* lea dst, [rip + disp32]; returns the offset of the disp32 field for x64_patch_rel32. */
size_t x64_lea_rip(x64_buf *b, unsigned dst);

void x64_add_ri(x64_buf *b, unsigned r, int32_t imm);              /* add r, simm32 (64-bit) */
void x64_add_rr(x64_buf *b, unsigned dst, unsigned src);            /* add dst, src (64-bit) */
void x64_add_mr(x64_buf *b, unsigned base, int32_t disp, unsigned src); /* add qword [base+disp], src */
void x64_mov_r32_r32(x64_buf *b, unsigned dst, unsigned src);       /* mov dst32, src32 (zero-extends) */
void x64_sub_ri(x64_buf *b, unsigned r, int32_t imm);              /* sub r, simm32 (64-bit) */
void x64_and_ri(x64_buf *b, unsigned r, int32_t imm);              /* and r, simm32 (64-bit) */
void x64_sub_m64_i8(x64_buf *b, unsigned base, int32_t disp, int8_t imm); /* sub qword [..], simm8 */
void x64_sub_r32_i8(x64_buf *b, unsigned r, int8_t imm);           /* sub r32, simm8 */
void x64_test_r32(x64_buf *b, unsigned r);                         /* test r32, r32 */
void x64_cmp_r32_m(x64_buf *b, unsigned r, unsigned base, int32_t disp); /* cmp r32, [base+disp] */
void x64_test_m32_r32(x64_buf *b, unsigned base, int32_t disp, unsigned r); /* test [base+disp], r32 */

void x64_call_r(x64_buf *b, unsigned r);                           /* call r */
void x64_call_m(x64_buf *b, unsigned base, int32_t disp);          /* call qword [base+disp] */

/* Forward branches: emit with a zero displacement, patch once the target is known. */
size_t x64_jmp(x64_buf *b);                                        /* jmp rel32 */
size_t x64_jcc(x64_buf *b, enum x64_cond cc);                      /* jcc rel32 */
/* Point the rel32 field at `field` (which ends the instruction) to offset `target`. */
void x64_patch_rel32(x64_buf *b, size_t field, size_t target);

#endif /* TOYJIT_X64_EMIT_H */
