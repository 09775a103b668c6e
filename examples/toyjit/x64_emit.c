/*
 * x64_emit.c - encodings for the handful of x86-64 instructions the toy JIT
 * emits.  Intel SDM volume 2 has the tables; the comments give the opcode
 * form each function produces.
 */
#include "x64_emit.h"

/* REX prefix bits. */
#define REX_W 0x8
#define REX_R 0x4
#define REX_B 0x1

void x64_buf_init(x64_buf *b, void *mem, size_t cap)
{
	code_buf_init(b, mem, cap);
}

#define put8 code_put8
#define put32 code_put32
#define put64 code_put64

void x64_align(x64_buf *b, size_t align)
{
	while (!b->overflow && (b->len & (align - 1)))
		put8(b, 0xcc);
}

unsigned x64_dwarf_reg(unsigned r)
{
	/* DWARF orders them rax rdx rcx rbx rsi rdi rbp rsp, then r8-r15. */
	static const unsigned char dwarf[16] = {
		0, 2, 1, 3, 7, 6, 4, 5, 8, 9, 10, 11, 12, 13, 14, 15
	};

	return dwarf[r & 15];
}

const char *x64_reg_name(unsigned r)
{
	static const char *const names[16] = {
		"rax", "rcx", "rdx", "rbx", "rsp", "rbp", "rsi", "rdi",
		"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15"
	};

	return names[r & 15];
}

/* A REX prefix, left out when it would be empty (the 32-bit forms). */
static void rex(x64_buf *b, unsigned w, unsigned reg, unsigned base)
{
	uint8_t v = (uint8_t)((w ? REX_W : 0) | (reg & 8 ? REX_R : 0) | (base & 8 ? REX_B : 0));

	if (v)
		put8(b, 0x40 | v);
}

/*
 * ModRM (and SIB, displacement) for [base + disp] with `reg` in the reg
 * field.  rsp and r12 as a base need a SIB byte; rbp and r13 have no
 * displacement-free form, so disp8 0 is used for them.
 */
static void modrm_mem(x64_buf *b, unsigned reg, unsigned base, int32_t disp)
{
	unsigned mod;

	if (disp == 0 && (base & 7) != X64_RBP)
		mod = 0;
	else if (disp >= -128 && disp <= 127)
		mod = 1;
	else
		mod = 2;
	put8(b, (uint8_t)(mod << 6 | (reg & 7) << 3 | (base & 7)));
	if ((base & 7) == X64_RSP)
		put8(b, 0x24);          /* SIB: no index, base = rsp/r12 */
	if (mod == 1)
		put8(b, (uint8_t)disp);
	else if (mod == 2)
		put32(b, (uint32_t)disp);
}

static void modrm_reg(x64_buf *b, unsigned reg, unsigned rm)
{
	put8(b, (uint8_t)(0xc0 | (reg & 7) << 3 | (rm & 7)));
}

void x64_push(x64_buf *b, unsigned r)          /* 50+r */
{
	code_insn(b);
	rex(b, 0, 0, r);
	put8(b, (uint8_t)(0x50 | (r & 7)));
}

void x64_pop(x64_buf *b, unsigned r)           /* 58+r */
{
	code_insn(b);
	rex(b, 0, 0, r);
	put8(b, (uint8_t)(0x58 | (r & 7)));
}

void x64_ret(x64_buf *b)
{
	code_insn(b);
	put8(b, 0xc3);
}

void x64_int3(x64_buf *b)
{
	code_insn(b);
	put8(b, 0xcc);
}

void x64_mov_rr(x64_buf *b, unsigned dst, unsigned src)   /* REX.W 89 /r */
{
	code_insn(b);
	rex(b, 1, src, dst);
	put8(b, 0x89);
	modrm_reg(b, src, dst);
}

void x64_mov_ri64(x64_buf *b, unsigned dst, uint64_t imm) /* REX.W B8+r imm64 */
{
	code_insn(b);
	rex(b, 1, 0, dst);
	put8(b, (uint8_t)(0xb8 | (dst & 7)));
	put64(b, imm);
}

void x64_mov_rm(x64_buf *b, unsigned dst, unsigned base, int32_t disp) /* REX.W 8B /r */
{
	code_insn(b);
	rex(b, 1, dst, base);
	put8(b, 0x8b);
	modrm_mem(b, dst, base, disp);
}

void x64_mov_mr(x64_buf *b, unsigned base, int32_t disp, unsigned src) /* REX.W 89 /r */
{
	code_insn(b);
	rex(b, 1, src, base);
	put8(b, 0x89);
	modrm_mem(b, src, base, disp);
}

void x64_mov_m64_i32(x64_buf *b, unsigned base, int32_t disp, int32_t imm) /* REX.W C7 /0 */
{
	code_insn(b);
	rex(b, 1, 0, base);
	put8(b, 0xc7);
	modrm_mem(b, 0, base, disp);
	put32(b, (uint32_t)imm);
}

void x64_mov_m32_i32(x64_buf *b, unsigned base, int32_t disp, uint32_t imm) /* C7 /0 */
{
	code_insn(b);
	rex(b, 0, 0, base);
	put8(b, 0xc7);
	modrm_mem(b, 0, base, disp);
	put32(b, imm);
}

void x64_lea(x64_buf *b, unsigned dst, unsigned base, int32_t disp) /* REX.W 8D /r */
{
	code_insn(b);
	rex(b, 1, dst, base);
	put8(b, 0x8d);
	modrm_mem(b, dst, base, disp);
}

size_t x64_lea_rip(x64_buf *b, unsigned dst)  /* REX.W 8D /r, mod 00 rm 101 */
{
	code_insn(b);
	rex(b, 1, dst, 0);
	put8(b, 0x8d);
	put8(b, (uint8_t)(0x05 | (dst & 7) << 3));
	put32(b, 0);
	return b->len - 4;
}

/* The 81 /digit id group (add /0, and /4, sub /5) on a 64-bit register. */
static void alu_ri(x64_buf *b, unsigned digit, unsigned r, int32_t imm)
{
	code_insn(b);
	rex(b, 1, 0, r);
	if (imm >= -128 && imm <= 127) {
		put8(b, 0x83);
		modrm_reg(b, digit, r);
		put8(b, (uint8_t)imm);
	} else {
		put8(b, 0x81);
		modrm_reg(b, digit, r);
		put32(b, (uint32_t)imm);
	}
}

void x64_add_ri(x64_buf *b, unsigned r, int32_t imm)
{
	alu_ri(b, 0, r, imm);
}

void x64_sub_ri(x64_buf *b, unsigned r, int32_t imm)
{
	alu_ri(b, 5, r, imm);
}

void x64_and_ri(x64_buf *b, unsigned r, int32_t imm)
{
	alu_ri(b, 4, r, imm);
}

void x64_sub_m64_i8(x64_buf *b, unsigned base, int32_t disp, int8_t imm) /* REX.W 83 /5 ib */
{
	code_insn(b);
	rex(b, 1, 0, base);
	put8(b, 0x83);
	modrm_mem(b, 5, base, disp);
	put8(b, (uint8_t)imm);
}

void x64_sub_r32_i8(x64_buf *b, unsigned r, int8_t imm)  /* 83 /5 ib */
{
	code_insn(b);
	rex(b, 0, 0, r);
	put8(b, 0x83);
	modrm_reg(b, 5, r);
	put8(b, (uint8_t)imm);
}

void x64_test_r32(x64_buf *b, unsigned r)      /* 85 /r */
{
	code_insn(b);
	rex(b, 0, r, r);
	put8(b, 0x85);
	modrm_reg(b, r, r);
}

void x64_cmp_r32_m(x64_buf *b, unsigned r, unsigned base, int32_t disp) /* 3B /r */
{
	code_insn(b);
	rex(b, 0, r, base);
	put8(b, 0x3b);
	modrm_mem(b, r, base, disp);
}

void x64_test_m32_r32(x64_buf *b, unsigned base, int32_t disp, unsigned r) /* 85 /r */
{
	code_insn(b);
	rex(b, 0, r, base);
	put8(b, 0x85);
	modrm_mem(b, r, base, disp);
}

void x64_call_r(x64_buf *b, unsigned r)        /* FF /2 */
{
	code_insn(b);
	rex(b, 0, 0, r);
	put8(b, 0xff);
	modrm_reg(b, 2, r);
}

void x64_call_m(x64_buf *b, unsigned base, int32_t disp) /* FF /2 */
{
	code_insn(b);
	rex(b, 0, 0, base);
	put8(b, 0xff);
	modrm_mem(b, 2, base, disp);
}

size_t x64_jmp(x64_buf *b)                     /* E9 cd */
{
	code_insn(b);
	put8(b, 0xe9);
	put32(b, 0);
	return b->len - 4;
}

size_t x64_jcc(x64_buf *b, enum x64_cond cc)   /* 0F 80+cc cd */
{
	code_insn(b);
	put8(b, 0x0f);
	put8(b, (uint8_t)(0x80 | cc));
	put32(b, 0);
	return b->len - 4;
}

void x64_patch_rel32(x64_buf *b, size_t field, size_t target)
{
	code_patch32(b, field, (uint32_t)(int32_t)((int64_t)target - (int64_t)(field + 4)));
}

void x64_mov_r32_r32(x64_buf *b, unsigned dst, unsigned src)  /* 89 /r: zero-extends */
{
	code_insn(b);
	rex(b, 0, src, dst);
	put8(b, 0x89);
	modrm_reg(b, src, dst);
}

void x64_add_rr(x64_buf *b, unsigned dst, unsigned src)      /* REX.W 01 /r */
{
	code_insn(b);
	rex(b, 1, src, dst);
	put8(b, 0x01);
	modrm_reg(b, src, dst);
}

void x64_add_mr(x64_buf *b, unsigned base, int32_t disp, unsigned src) /* REX.W 01 /r */
{
	code_insn(b);
	rex(b, 1, src, base);
	put8(b, 0x01);
	modrm_mem(b, src, base, disp);
}
