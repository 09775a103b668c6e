/*
 * x86_emit.c - encodings for the handful of 32-bit x86 instructions the toy
 * JIT emits (the x86-64 forms without REX prefixes).  Intel SDM volume 2
 * has the tables; the comments give the opcode form each function produces.
 */
#include "x86_emit.h"

#define put8 code_put8
#define put32 code_put32

void x86_align(code_buf *b, size_t align)
{
	while (!b->overflow && (b->len & (align - 1)))
		put8(b, 0xcc);
}

/*
 * ModRM (and SIB, displacement) for [base + disp] with `reg` in the reg
 * field.  esp as a base needs a SIB byte; ebp has no displacement-free
 * form, so disp8 0 is used for it.
 */
static void modrm_mem(code_buf *b, unsigned reg, unsigned base, int32_t disp)
{
	unsigned mod;

	if (disp == 0 && base != X86_EBP)
		mod = 0;
	else if (disp >= -128 && disp <= 127)
		mod = 1;
	else
		mod = 2;
	put8(b, (uint8_t)(mod << 6 | (reg & 7) << 3 | (base & 7)));
	if (base == X86_ESP)
		put8(b, 0x24);          /* SIB: no index, base = esp */
	if (mod == 1)
		put8(b, (uint8_t)disp);
	else if (mod == 2)
		put32(b, (uint32_t)disp);
}

static void modrm_reg(code_buf *b, unsigned reg, unsigned rm)
{
	put8(b, (uint8_t)(0xc0 | (reg & 7) << 3 | (rm & 7)));
}

/* One instruction: opcode byte, then a register-or-memory operand. */
static void op_mem(code_buf *b, uint8_t opcode, unsigned reg, unsigned base, int32_t disp)
{
	code_insn(b);
	put8(b, opcode);
	modrm_mem(b, reg, base, disp);
}

static void op_reg(code_buf *b, uint8_t opcode, unsigned reg, unsigned rm)
{
	code_insn(b);
	put8(b, opcode);
	modrm_reg(b, reg, rm);
}

void x86_push(code_buf *b, unsigned r)         /* 50+r */
{
	code_insn(b);
	put8(b, (uint8_t)(0x50 | (r & 7)));
}

void x86_pop(code_buf *b, unsigned r)          /* 58+r */
{
	code_insn(b);
	put8(b, (uint8_t)(0x58 | (r & 7)));
}

void x86_push_i32(code_buf *b, uint32_t imm)   /* 68 id */
{
	code_insn(b);
	put8(b, 0x68);
	put32(b, imm);
}

void x86_ret(code_buf *b)                      /* C3 */
{
	code_insn(b);
	put8(b, 0xc3);
}

void x86_ret_n(code_buf *b, uint16_t n)        /* C2 iw */
{
	code_insn(b);
	put8(b, 0xc2);
	code_put16(b, n);
}

void x86_int3(code_buf *b)                     /* CC */
{
	code_insn(b);
	put8(b, 0xcc);
}

void x86_mov_rr(code_buf *b, unsigned dst, unsigned src)  /* 89 /r */
{
	op_reg(b, 0x89, src, dst);
}

size_t x86_mov_ri(code_buf *b, unsigned dst, uint32_t imm) /* B8+r id */
{
	code_insn(b);
	put8(b, (uint8_t)(0xb8 | (dst & 7)));
	put32(b, imm);
	return b->len - 4;
}

void x86_mov_rm(code_buf *b, unsigned dst, unsigned base, int32_t disp) /* 8B /r */
{
	op_mem(b, 0x8b, dst, base, disp);
}

void x86_mov_mr(code_buf *b, unsigned base, int32_t disp, unsigned src) /* 89 /r */
{
	op_mem(b, 0x89, src, base, disp);
}

void x86_mov_m_i32(code_buf *b, unsigned base, int32_t disp, uint32_t imm) /* C7 /0 id */
{
	op_mem(b, 0xc7, 0, base, disp);
	put32(b, imm);
}

void x86_lea(code_buf *b, unsigned dst, unsigned base, int32_t disp) /* 8D /r */
{
	op_mem(b, 0x8d, dst, base, disp);
}

/* The 83 /digit ib and 81 /digit id group (add /0, and /4, sub /5). */
static void alu_ri(code_buf *b, unsigned digit, unsigned r, int32_t imm)
{
	if (imm >= -128 && imm <= 127) {
		op_reg(b, 0x83, digit, r);
		put8(b, (uint8_t)imm);
	} else {
		op_reg(b, 0x81, digit, r);
		put32(b, (uint32_t)imm);
	}
}

void x86_add_ri(code_buf *b, unsigned r, int32_t imm)
{
	alu_ri(b, 0, r, imm);
}

void x86_sub_ri(code_buf *b, unsigned r, int32_t imm)
{
	alu_ri(b, 5, r, imm);
}

void x86_and_ri(code_buf *b, unsigned r, int32_t imm)
{
	alu_ri(b, 4, r, imm);
}

void x86_sub_m_i8(code_buf *b, unsigned base, int32_t disp, int8_t imm) /* 83 /5 ib */
{
	op_mem(b, 0x83, 5, base, disp);
	put8(b, (uint8_t)imm);
}

void x86_test_rr(code_buf *b, unsigned r)      /* 85 /r */
{
	op_reg(b, 0x85, r, r);
}

void x86_cmp_rm(code_buf *b, unsigned r, unsigned base, int32_t disp) /* 3B /r */
{
	op_mem(b, 0x3b, r, base, disp);
}

void x86_test_mr(code_buf *b, unsigned base, int32_t disp, unsigned r) /* 85 /r */
{
	op_mem(b, 0x85, r, base, disp);
}

void x86_call_r(code_buf *b, unsigned r)       /* FF /2 */
{
	op_reg(b, 0xff, 2, r);
}

void x86_call_m(code_buf *b, unsigned base, int32_t disp) /* FF /2 */
{
	op_mem(b, 0xff, 2, base, disp);
}

size_t x86_jmp(code_buf *b)                    /* E9 cd */
{
	code_insn(b);
	put8(b, 0xe9);
	put32(b, 0);
	return b->len - 4;
}

size_t x86_jcc(code_buf *b, enum x86_cond cc)  /* 0F 80+cc cd */
{
	code_insn(b);
	put8(b, 0x0f);
	put8(b, (uint8_t)(0x80 | cc));
	put32(b, 0);
	return b->len - 4;
}

void x86_patch_rel32(code_buf *b, size_t field, size_t target)
{
	code_patch32(b, field, (uint32_t)(int32_t)((int64_t)target - (int64_t)(field + 4)));
}
