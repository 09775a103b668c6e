/*
 * check_verify.c - sw_unwind_verify(): SWU against machine code.
 *
 * Hand-assembled functions of x86-64, i386 and arm64 (the bytes and their
 * disassembly side by side) are described correctly and must verify;
 * then described wrongly, one way at a time (a push of the wrong
 * register, an allocation of the wrong size, an op ending inside an
 * instruction, no frame register set, the wrong register restored, an
 * arm64 save of the wrong register, an argument push ending in the middle
 * of an instruction), and each must be caught at the offset where the
 * description departs from the code.  Row blobs: the CFI of this very
 * program and of the C library it runs with, imported and verified
 * function by function against the code in memory (this program's must
 * all match; the C library's assembly has a few CFI bugs of its own).  Bad arguments and
 * hostile bytes give statuses, never crashes.
 */
#define _GNU_SOURCE
#include <check.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>

/* ---- x86-64: an RBP frame ---- */

static const uint8_t x64_rbp_code[] = {
	0x55,                           /*  0 push rbp */
	0x48, 0x89, 0xe5,               /*  1 mov rbp, rsp */
	0x53,                           /*  4 push rbx */
	0x48, 0x83, 0xec, 0x38,         /*  5 sub rsp, 0x38 */
	0x90,                           /*  9 nop (the body) */
	0x48, 0x8d, 0x65, 0xf8,         /* 10 lea rsp, [rbp - 8] */
	0x5b,                           /* 14 pop rbx */
	0x5d,                           /* 15 pop rbp */
	0xc3,                           /* 16 ret */
};

/* What to get wrong in a description. */
enum corruption {
	GOOD,
	WRONG_PUSH_REG,         /* push r12 for push rbx */
	WRONG_ALLOC,            /* alloc 64 for sub rsp, 56 */
	OP_INSIDE_INSN,         /* push rbx's op ending inside mov rbp, rsp */
	NO_SET_FRAME,           /* mov rbp, rsp not described */
	WRONG_RESTORE,          /* the reloads of rbx and r12 swapped */
	WRONG_PAIR_REG,         /* arm64: x20 saved for x19 */
	ARGS_INSIDE_INSN        /* x86: an argument push ending inside its instruction */
};

struct blob {
	uint8_t buf[256];
	size_t len;
};

static void finish(sw_swu_builder *b, uint32_t size, struct blob *out)
{
	ck_assert_int_eq(sw_swu_finish(b, size, out->buf, sizeof out->buf, &out->len), SW_OK);
	sw_swu_builder_destroy(b);
}

static sw_swu_builder *builder(sw_arch arch)
{
	sw_swu_builder *b;

	ck_assert_int_eq(sw_swu_builder_create(&b, arch), SW_OK);
	return b;
}

static void describe_x64_rbp(enum corruption c, struct blob *out)
{
	sw_swu_builder *b = builder(SW_ARCH_X64);
	unsigned saved = c == WRONG_PUSH_REG ? SW_X64_R12 : SW_X64_RBX;

	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RBP), SW_OK);
	if (c == OP_INSIDE_INSN) {
		ck_assert_int_eq(sw_swu_push_reg(b, 3, saved), SW_OK);
		ck_assert_int_eq(sw_swu_set_frame(b, 4, SW_X64_RBP, 0), SW_OK);
	} else {
		if (c != NO_SET_FRAME)
			ck_assert_int_eq(sw_swu_set_frame(b, 4, SW_X64_RBP, 0), SW_OK);
		ck_assert_int_eq(sw_swu_push_reg(b, 5, saved), SW_OK);
	}
	ck_assert_int_eq(sw_swu_alloc_stack(b, 9, c == WRONG_ALLOC ? 64 : 56), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 9), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 10), SW_OK);
	if (c == NO_SET_FRAME)
		ck_assert_int_eq(sw_swu_free_stack(b, 14, 56), SW_OK);
	else if (c == WRONG_ALLOC)
		ck_assert_int_eq(sw_swu_free_stack(b, 14, 64), SW_OK);
	else if (c == OP_INSIDE_INSN)
		ck_assert_int_eq(sw_swu_restore_sp_from_frame(b, 14, 0), SW_OK);   /* its frame is 8 higher */
	else
		ck_assert_int_eq(sw_swu_restore_sp_from_frame(b, 14, -8), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 15, saved), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 16, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 17), SW_OK);
	finish(b, sizeof x64_rbp_code, out);
}

/* ---- x86-64: saves by mov, no frame register ---- */

static const uint8_t x64_mov_code[] = {
	0x48, 0x83, 0xec, 0x28,         /*  0 sub rsp, 0x28 */
	0x48, 0x89, 0x5c, 0x24, 0x10,   /*  4 mov [rsp + 0x10], rbx */
	0x4c, 0x89, 0x64, 0x24, 0x18,   /*  9 mov [rsp + 0x18], r12 */
	0x90,                           /* 14 nop */
	0x48, 0x8b, 0x5c, 0x24, 0x10,   /* 15 mov rbx, [rsp + 0x10] */
	0x4c, 0x8b, 0x64, 0x24, 0x18,   /* 20 mov r12, [rsp + 0x18] */
	0x48, 0x83, 0xc4, 0x28,         /* 25 add rsp, 0x28 */
	0xc3,                           /* 29 ret */
};

static void describe_x64_mov(enum corruption c, struct blob *out)
{
	sw_swu_builder *b = builder(SW_ARCH_X64);
	int swap = c == WRONG_RESTORE;

	ck_assert_int_eq(sw_swu_alloc_stack(b, 4, 40), SW_OK);
	ck_assert_int_eq(sw_swu_save_reg(b, 9, SW_X64_RBX, 16), SW_OK);
	ck_assert_int_eq(sw_swu_save_reg(b, 14, SW_X64_R12, 24), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 14), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 15), SW_OK);
	ck_assert_int_eq(sw_swu_restore_reg(b, 20, swap ? SW_X64_R12 : SW_X64_RBX), SW_OK);
	ck_assert_int_eq(sw_swu_restore_reg(b, 25, swap ? SW_X64_RBX : SW_X64_R12), SW_OK);
	ck_assert_int_eq(sw_swu_free_stack(b, 29, 40), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 30), SW_OK);
	finish(b, sizeof x64_mov_code, out);
}

/* ---- arm64: a frame record, a save, locals ---- */

static const uint8_t a64_code[] = {
	0xfd, 0x7b, 0xbe, 0xa9,         /*  0 stp x29, x30, [sp, #-32]! */
	0xfd, 0x03, 0x00, 0x91,         /*  4 mov x29, sp */
	0xf3, 0x0b, 0x00, 0xf9,         /*  8 str x19, [sp, #16] */
	0xff, 0x83, 0x00, 0xd1,         /* 12 sub sp, sp, #32 */
	0x1f, 0x20, 0x03, 0xd5,         /* 16 nop */
	0xff, 0x83, 0x00, 0x91,         /* 20 add sp, sp, #32 */
	0xf3, 0x0b, 0x40, 0xf9,         /* 24 ldr x19, [sp, #16] */
	0xfd, 0x7b, 0xc2, 0xa8,         /* 28 ldp x29, x30, [sp], #32 */
	0xc0, 0x03, 0x5f, 0xd6,         /* 32 ret */
};

static void describe_a64(enum corruption c, struct blob *out)
{
	sw_swu_builder *b = builder(SW_ARCH_ARM64);
	unsigned saved = c == WRONG_PAIR_REG ? SW_ARM64_X20 : SW_ARM64_X19;

	ck_assert_int_eq(sw_swu_push_reg_pair(b, 4, SW_ARM64_FP, SW_ARM64_LR, 32), SW_OK);
	ck_assert_int_eq(sw_swu_set_frame(b, 8, SW_ARM64_FP, 0), SW_OK);
	ck_assert_int_eq(sw_swu_save_reg(b, 12, saved, 16), SW_OK);
	ck_assert_int_eq(sw_swu_alloc_stack(b, 16, 32), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 16), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 20), SW_OK);
	ck_assert_int_eq(sw_swu_free_stack(b, 24, 32), SW_OK);
	ck_assert_int_eq(sw_swu_restore_reg(b, 28, saved), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg_pair(b, 32, SW_ARM64_FP, SW_ARM64_LR, 32), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 36), SW_OK);
	finish(b, sizeof a64_code, out);
}

/* ---- i386: an EBP frame pushing its callees' arguments ---- */

static const uint8_t x86_code[] = {
	0x55,                           /*  0 push ebp */
	0x89, 0xe5,                     /*  1 mov ebp, esp */
	0x53,                           /*  3 push ebx */
	0x6a, 0x07,                     /*  4 push 7 */
	0xe8, 0x5f, 0x00, 0x00, 0x00,   /*  6 call 0x6a (stdcall: pops its argument) */
	0x6a, 0x01,                     /* 11 push 1 */
	0x6a, 0x02,                     /* 13 push 2 */
	0xe8, 0x5f, 0x00, 0x00, 0x00,   /* 15 call 0x73 (cdecl) */
	0x83, 0xc4, 0x08,               /* 20 add esp, 8 */
	0x5b,                           /* 23 pop ebx */
	0x5d,                           /* 24 pop ebp */
	0xc2, 0x04, 0x00,               /* 25 ret 4 */
};

static void describe_x86(enum corruption c, struct blob *out)
{
	sw_swu_builder *b = builder(SW_ARCH_X86);

	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X86_EBP), SW_OK);
	ck_assert_int_eq(sw_swu_set_frame(b, 3, SW_X86_EBP, 0), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 4, SW_X86_EBX), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 4), SW_OK);
	ck_assert_int_eq(sw_swu_push_args(b, c == ARGS_INSIDE_INSN ? 5 : 6, 4), SW_OK);
	ck_assert_int_eq(sw_swu_call_pops_args(b, 11, 4), SW_OK);
	ck_assert_int_eq(sw_swu_push_args(b, 13, 4), SW_OK);
	ck_assert_int_eq(sw_swu_push_args(b, 15, 4), SW_OK);
	ck_assert_int_eq(sw_swu_pop_args(b, 23, 8), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 23), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 24, SW_X86_EBX), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 25, SW_X86_EBP), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 28), SW_OK);
	finish(b, sizeof x86_code, out);
}

/* ---- The cases ---- */

struct vcase {
	const char *name;
	sw_arch arch;
	const uint8_t *code;
	size_t size;
	void (*describe)(enum corruption c, struct blob *out);
	enum corruption corruption;
	uint32_t offset;                /* where the mismatch must be found */
	unsigned region;
	const char *expected, *found;   /* substrings of the report */
};

static const struct vcase cases[] = {
	{ "x64 rbp frame", SW_ARCH_X64, x64_rbp_code, sizeof x64_rbp_code, describe_x64_rbp, GOOD, 0, 0, NULL, NULL },
	{ "x64 mov saves", SW_ARCH_X64, x64_mov_code, sizeof x64_mov_code, describe_x64_mov, GOOD, 0, 0, NULL, NULL },
	{ "arm64 frame record", SW_ARCH_ARM64, a64_code, sizeof a64_code, describe_a64, GOOD, 0, 0, NULL, NULL },
	{ "x86 argument pushes", SW_ARCH_X86, x86_code, sizeof x86_code, describe_x86, GOOD, 0, 0, NULL, NULL },
	{ "wrong register pushed", SW_ARCH_X64, x64_rbp_code, sizeof x64_rbp_code, describe_x64_rbp,
	  WRONG_PUSH_REG, 5, SW_SWU_PROLOG, "push r12", "push rbx" },
	{ "wrong allocation size", SW_ARCH_X64, x64_rbp_code, sizeof x64_rbp_code, describe_x64_rbp,
	  WRONG_ALLOC, 9, SW_SWU_PROLOG, "alloc 64", "sub rsp, 0x38" },
	{ "op inside an instruction", SW_ARCH_X64, x64_rbp_code, sizeof x64_rbp_code, describe_x64_rbp,
	  OP_INSIDE_INSN, 3, SW_SWU_PROLOG, "push rbx", "mov rbp, rsp" },
	{ "frame register not set", SW_ARCH_X64, x64_rbp_code, sizeof x64_rbp_code, describe_x64_rbp,
	  NO_SET_FRAME, 4, SW_SWU_PROLOG, "(no op)", "mov rbp, rsp" },
	{ "wrong register restored", SW_ARCH_X64, x64_mov_code, sizeof x64_mov_code, describe_x64_mov,
	  WRONG_RESTORE, 20, SW_SWU_EPILOG, "restore_reg r12", "mov rbx, qword ptr [rsp + 0x10]" },
	{ "arm64 wrong register saved", SW_ARCH_ARM64, a64_code, sizeof a64_code, describe_a64,
	  WRONG_PAIR_REG, 12, SW_SWU_PROLOG, "save_reg x20", "str x19, [sp, #0x10]" },
	{ "x86 argument push inside its instruction", SW_ARCH_X86, x86_code, sizeof x86_code, describe_x86,
	  ARGS_INSIDE_INSN, 5, SW_SWU_BODY, "push_args 4", "push 7" },
};
#define NCASES (sizeof cases / sizeof cases[0])

START_TEST(described_code)
{
	const struct vcase *c = &cases[_i];
	sw_verify_result r;
	struct blob b;
	sw_status st;

	c->describe(c->corruption, &b);
	st = sw_unwind_verify(c->arch, c->code, c->size, 0x401000, b.buf, b.len, &r);
	printf("%-42s %s", c->name, sw_strerror(st));
	if (st == SW_E_MISMATCH)
		printf(" at +%u: SWU \"%s\", code \"%s\": %s", r.offset, r.expected, r.found, r.why);
	printf("\n");
	if (c->corruption == GOOD) {
		ck_assert_int_eq(st, SW_OK);
		ck_assert_uint_gt(r.ops, 0);
		ck_assert_uint_gt(r.instructions, 0);
		return;
	}
	ck_assert_int_eq(st, SW_E_MISMATCH);
	ck_assert_uint_eq(r.offset, c->offset);
	ck_assert_uint_eq(r.rows, 0);
	ck_assert_uint_eq(r.region, c->region);
	ck_assert_msg(strstr(r.expected, c->expected), "expected \"%s\" in \"%s\"", c->expected, r.expected);
	ck_assert_msg(strstr(r.found, c->found), "expected \"%s\" in \"%s\"", c->found, r.found);
	ck_assert(r.why[0] != '\0');
}
END_TEST

/*
 * A funclet that stores its parent's CFA in its PSP slot at the end of its
 * prolog (as the toy JIT's does): swverify's check takes the slot the
 * blob names only where it is the funclet's own.
 */
static const uint8_t x64_funclet_code[] = {
	0x55,                           /*  0 push rbp */
	0x48, 0x83, 0xec, 0x10,         /*  1 sub rsp, 16 */
	0x48, 0x89, 0xfd,               /*  5 mov rbp, rdi */
	0x48, 0x8d, 0x45, 0x10,         /*  8 lea rax, [rbp + 16] */
	0x48, 0x89, 0x04, 0x24,         /* 12 mov [rsp], rax: the PSP slot */
	0x90,                           /* 16 nop (the body) */
	0x48, 0x83, 0xc4, 0x10,         /* 17 add rsp, 16 */
	0x5d,                           /* 21 pop rbp */
	0xc3,                           /* 22 ret */
};

static void describe_x64_funclet(int32_t psp, struct blob *out)
{
	sw_swu_builder *b = builder(SW_ARCH_X64);

	ck_assert_int_eq(sw_swu_psp_slot(b, psp), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_alloc_stack(b, 5, 16), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 16), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 17), SW_OK);
	ck_assert_int_eq(sw_swu_free_stack(b, 21, 16), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 22, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 23), SW_OK);
	ck_assert_int_eq(sw_swu_gc_stack_slot(b, -24, SW_GC_PARENT_FRAME, 16, 17), SW_OK);
	finish(b, sizeof x64_funclet_code, out);
}

START_TEST(funclet_psp_slot)
{
	sw_verify_result r;
	struct blob b;
	size_t at;

	describe_x64_funclet(-32, &b);
	ck_assert_int_eq(sw_unwind_verify(SW_ARCH_X64, x64_funclet_code, sizeof x64_funclet_code, 0,
	                                  b.buf, b.len, &r), SW_OK);
	/* The PSP slot's byte (after magic, arch, flags, code size, prolog size, 2 counts): rbp's save slot. */
	at = 7;
	ck_assert_uint_eq(b.buf[at], 0x7c);
	b.buf[at] = 0x7e;
	ck_assert_int_eq(sw_unwind_verify(SW_ARCH_X64, x64_funclet_code, sizeof x64_funclet_code, 0,
	                                  b.buf, b.len, &r), SW_E_BADMETA);
	/* Below the body's SP. */
	b.buf[at] = 0x7b;
	ck_assert_int_eq(sw_unwind_verify(SW_ARCH_X64, x64_funclet_code, sizeof x64_funclet_code, 0,
	                                  b.buf, b.len, &r), SW_E_BADMETA);
}
END_TEST

/* An epilog must end with its return: here the code has a nop where the ret was. */
START_TEST(epilog_without_return)
{
	uint8_t code[sizeof x64_mov_code];
	sw_verify_result r;
	struct blob b;

	memcpy(code, x64_mov_code, sizeof code);
	code[29] = 0x90;
	describe_x64_mov(GOOD, &b);
	ck_assert_int_eq(sw_unwind_verify(SW_ARCH_X64, code, sizeof code, 0, b.buf, b.len, &r),
	                 SW_E_MISMATCH);
	ck_assert_uint_eq(r.offset, 30);
	ck_assert_uint_eq(r.region, SW_SWU_EPILOG);
	ck_assert_str_eq(r.found, "nop");
}
END_TEST

START_TEST(bad_arguments)
{
	sw_verify_result r;
	struct blob b;
	uint8_t junk[64];
	sw_status st;

	describe_x64_rbp(GOOD, &b);
	ck_assert_int_eq(sw_unwind_verify(SW_ARCH_X64, x64_rbp_code, sizeof x64_rbp_code, 0, b.buf, b.len, NULL),
	                 SW_E_INVAL);
	ck_assert_int_eq(sw_unwind_verify(SW_ARCH_X64, NULL, sizeof x64_rbp_code, 0, b.buf, b.len, &r), SW_E_INVAL);
	ck_assert_int_eq(sw_unwind_verify(SW_ARCH_X64, x64_rbp_code, sizeof x64_rbp_code, 0, NULL, 4, &r), SW_E_INVAL);
	/* Another architecture than the blob's; less code than it describes. */
	ck_assert_int_eq(sw_unwind_verify(SW_ARCH_ARM64, x64_rbp_code, sizeof x64_rbp_code, 0, b.buf, b.len, &r),
	                 SW_E_INVAL);
	ck_assert_int_eq(sw_unwind_verify(SW_ARCH_X64, x64_rbp_code, 16, 0, b.buf, b.len, &r), SW_E_INVAL);
	ck_assert_int_eq(sw_unwind_verify((sw_arch)99, x64_rbp_code, sizeof x64_rbp_code, 0, b.buf, b.len, &r),
	                 SW_E_INVAL);
	/* A truncated or corrupt blob is refused before any disassembly. */
	st = sw_unwind_verify(SW_ARCH_X64, x64_rbp_code, sizeof x64_rbp_code, 0, b.buf, b.len - 1, &r);
	ck_assert(st == SW_E_BADMETA || st == SW_E_TRUNCATED);
	memset(junk, 0xff, sizeof junk);
	ck_assert_int_lt(sw_unwind_verify(SW_ARCH_X64, x64_rbp_code, sizeof x64_rbp_code, 0, junk, sizeof junk, &r),
	                 0);
	ck_assert_str_eq(sw_verify_reason_name(SW_VERIFY_MERGE), "paths meet with different frames");
	ck_assert_ptr_null(sw_verify_reason_name(SW_VERIFY_REASON_COUNT));
}
END_TEST

/* Any bytes under a valid blob: a status, never a crash or a read past the code. */
START_TEST(hostile_code)
{
	static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };
	unsigned seed = 12345, mismatches = 0;

	for (unsigned round = 0; round < 3000; round++) {
		sw_arch arch = arches[round % 3];
		const struct vcase *c = &cases[arch == SW_ARCH_X64 ? 0 : arch == SW_ARCH_ARM64 ? 2 : 3];
		uint8_t *code = malloc(c->size);
		sw_verify_result r;
		struct blob b;
		sw_status st;

		ck_assert_ptr_nonnull(code);
		memcpy(code, c->code, c->size);
		for (unsigned k = 0; k < 1 + round % 4; k++) {
			seed = seed * 1103515245u + 12345u;
			code[(seed >> 8) % c->size] = (uint8_t)(seed >> 20);
		}
		c->describe(GOOD, &b);
		st = sw_unwind_verify(arch, code, c->size, 0x1000, b.buf, b.len, &r);
		ck_assert_msg(st == SW_OK || st == SW_E_MISMATCH || st == SW_E_UNSUPPORTED,
		              "round %u: %s", round, sw_strerror(st));
		mismatches += st == SW_E_MISMATCH;
		free(code);
	}
	printf("hostile code: %u of 3000 mutations mismatched\n", mismatches);
	ck_assert_uint_gt(mismatches, 1000);
}
END_TEST

/* ---- Rows: imported CFI against the code in memory ---- */

struct object {
	char path[4096];
	uint64_t bias;
	int found;
	const char *want;               /* a substring of the path, or "" for the executable */
};

static int find_object(struct dl_phdr_info *info, size_t size, void *data)
{
	struct object *o = data;

	(void)size;
	if (o->found)
		return 0;
	if (o->want[0] == '\0' ? info->dlpi_name[0] == '\0' : strstr(info->dlpi_name, o->want) != NULL) {
		snprintf(o->path, sizeof o->path, "%s", o->want[0] ? info->dlpi_name : "/proc/self/exe");
		o->bias = info->dlpi_addr;
		o->found = 1;
	}
	return 0;
}

/*
 * Verify every function of a loaded object; at most `max_mismatched` may
 * mismatch (the C library's hand-written assembly has CFI bugs of its own:
 * see tests/swverify-elf.test), and they are printed.
 */
static void verify_loaded(const char *want, unsigned min_verified, unsigned max_mismatched)
{
	struct object o = { .want = want };
	const sw_native_function *fns;
	unsigned verified = 0, mismatched = 0, skipped = 0, insns = 0;
	sw_module *m;
	size_t n;

	dl_iterate_phdr(find_object, &o);
	ck_assert_msg(o.found, "no loaded object matches \"%s\"", want);
	ck_assert_int_eq(sw_module_load(o.path, o.bias, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
	for (size_t i = 0; i < n; i++) {
		sw_verify_result r;
		sw_status st;

		if (fns[i].flags & (SW_CODE_SIGNAL_TRAMPOLINE | SW_CODE_ANALYZED)) {
			skipped++;
			continue;
		}
		st = sw_unwind_verify(sw_arch_host(), (const void *)(uintptr_t)fns[i].start, fns[i].size,
		                      fns[i].start, fns[i].unwind, fns[i].unwind_size, &r);
		insns += r.instructions;
		if (st == SW_OK) {
			ck_assert_uint_eq(r.rows, 1);   /* imported CFI is rows */
			verified++;
		} else if (st == SW_E_UNSUPPORTED) {
			skipped++;
		} else {
			mismatched++;
			printf("  %s (%#lx): %s at +%u: SWU \"%s\", code \"%s\": %s\n",
			       fns[i].name ? fns[i].name : "?", (unsigned long)fns[i].start, sw_strerror(st),
			       r.offset, r.expected, r.found, r.why);
		}
	}
	printf("%s: %zu functions: %u verified, %u mismatched, %u skipped; %u instructions checked\n",
	       o.path, n, verified, mismatched, skipped, insns);
	ck_assert_uint_le(mismatched, max_mismatched);
	ck_assert_uint_ge(verified, min_verified);
	sw_module_free(m);
}

START_TEST(cfi_of_this_program)
{
	verify_loaded("", 5, 0);
}
END_TEST

START_TEST(cfi_of_libc)
{
	verify_loaded("libc.so", 500, 10);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("verify");
	TCase *tc = tcase_create("verify");

	tcase_add_loop_test(tc, described_code, 0, NCASES);
	tcase_add_test(tc, epilog_without_return);
	tcase_add_test(tc, funclet_psp_slot);
	tcase_add_test(tc, bad_arguments);
	tcase_add_test(tc, hostile_code);
	if (sw_arch_host() == SW_ARCH_X64) {
		tcase_add_test(tc, cfi_of_this_program);
		tcase_add_test(tc, cfi_of_libc);
	}
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	int failed;

	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
