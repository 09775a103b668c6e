/*
 * x86_emit.h - a tiny 32-bit x86 encoder: the few instructions the toy JIT
 * needs on i386.
 *
 * Registers are named by their hardware encoding, which for 32-bit x86 is
 * also their DWARF (and libstackwalk) number.  Memory operands are always
 * [base + disp].  Every emitter appends to a code_buf (see code_buf.h for
 * overflow and instruction boundaries).
 */
#ifndef TOYJIT_X86_EMIT_H
#define TOYJIT_X86_EMIT_H

#include <stddef.h>
#include <stdint.h>
#include "code_buf.h"

enum x86_reg {
	X86_EAX = 0, X86_ECX = 1, X86_EDX = 2, X86_EBX = 3,
	X86_ESP = 4, X86_EBP = 5, X86_ESI = 6, X86_EDI = 7
};

/* Condition codes for x86_jcc (the low nibble of the 0F 8x opcode). */
enum x86_cond {
	X86_CC_E = 0x4,     /* equal / zero */
	X86_CC_NE = 0x5     /* not equal / not zero */
};

/* Pad with int3 up to a multiple of `align` (a power of two). */
void x86_align(code_buf *b, size_t align);

void x86_push(code_buf *b, unsigned r);
void x86_pop(code_buf *b, unsigned r);
void x86_push_i32(code_buf *b, uint32_t imm);                      /* push imm32 */
void x86_ret(code_buf *b);
void x86_ret_n(code_buf *b, uint16_t n);                           /* ret n: pops n bytes of arguments */
void x86_int3(code_buf *b);

void x86_mov_rr(code_buf *b, unsigned dst, unsigned src);          /* mov dst, src */
/* mov dst, imm32; returns the offset of the imm32 field (for code_patch32). */
size_t x86_mov_ri(code_buf *b, unsigned dst, uint32_t imm);
void x86_mov_rm(code_buf *b, unsigned dst, unsigned base, int32_t disp);  /* mov dst, [base+disp] */
void x86_mov_mr(code_buf *b, unsigned base, int32_t disp, unsigned src);  /* mov [base+disp], src */
void x86_mov_m_i32(code_buf *b, unsigned base, int32_t disp, uint32_t imm); /* mov dword [..], imm32 */
void x86_lea(code_buf *b, unsigned dst, unsigned base, int32_t disp);     /* lea dst, [base+disp] */

void x86_add_ri(code_buf *b, unsigned r, int32_t imm);
void x86_sub_ri(code_buf *b, unsigned r, int32_t imm);
void x86_and_ri(code_buf *b, unsigned r, int32_t imm);
void x86_sub_m_i8(code_buf *b, unsigned base, int32_t disp, int8_t imm);  /* sub dword [..], simm8 */
void x86_test_rr(code_buf *b, unsigned r);                         /* test r, r */
void x86_cmp_rm(code_buf *b, unsigned r, unsigned base, int32_t disp);   /* cmp r, [base+disp] */
void x86_test_mr(code_buf *b, unsigned base, int32_t disp, unsigned r);  /* test [base+disp], r */

void x86_call_r(code_buf *b, unsigned r);                          /* call r */
void x86_call_m(code_buf *b, unsigned base, int32_t disp);         /* call dword [base+disp] */

/* Forward branches: emit with a zero displacement, patch once the target is known. */
size_t x86_jmp(code_buf *b);                                       /* jmp rel32 */
size_t x86_jcc(code_buf *b, enum x86_cond cc);                     /* jcc rel32 */
/* Point the rel32 field at `field` (which ends the instruction) to offset `target`. */
void x86_patch_rel32(code_buf *b, size_t field, size_t target);

#endif /* TOYJIT_X86_EMIT_H */
