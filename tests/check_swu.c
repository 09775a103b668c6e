/*
 * check_swu.c - the SWU builder, format, decoder, validator and dumper.
 *
 * Each x64 shape below is built the way a JIT would describe it, then the
 * rule at EVERY offset of the method is compared with a hand-computed
 * table.  The rest checks builder misuse, hostile headers, every truncation
 * of every shape, and random and mutated blobs (which must give an error or
 * a success, never a crash or a read outside the blob: each blob lives in
 * a malloc block of exactly its size so sanitizers and valgrind see any
 * overrun).
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>

#define RBX SW_X64_RBX
#define RBP SW_X64_RBP
#define RSP SW_X64_RSP
#define R12 SW_X64_R12
#define R13 SW_X64_R13
#define R14 SW_X64_R14
#define R15 SW_X64_R15

/* ---- Helpers ---- */

/* One row of an expectation table: holds from `from` to the next row. */
struct row {
	uint32_t from;
	sw_swu_region region;
	unsigned cfa_reg;
	int32_t cfa_offset;
	int32_t sp_offset;
	const char *saved;      /* "rbp:-16 rbx:-24": register name, CFA offset */
};

struct blob {
	unsigned char *p;       /* malloc'd, exactly len bytes */
	size_t len;
};

static unsigned reg_by_name(const char *name, size_t len)
{
	for (unsigned r = 0; r < SW_X64_NREGS; r++) {
		const char *n = sw_arch_reg_name(SW_ARCH_X64, r);

		if (n && strlen(n) == len && !strncmp(n, name, len))
			return r;
	}
	ck_abort_msg("unknown register in expectation: %.*s", (int)len, name);
	return 0;
}

/* Parse "rbp:-16 rbx:-24" into a mask and offsets. */
static uint64_t parse_saved(const char *s, int32_t off[SW_MAX_REGS])
{
	uint64_t mask = 0;

	memset(off, 0, sizeof(int32_t) * SW_MAX_REGS);
	while (s && *s) {
		const char *colon = strchr(s, ':');
		char *end;
		unsigned r;

		ck_assert_ptr_nonnull(colon);
		r = reg_by_name(s, (size_t)(colon - s));
		off[r] = (int32_t)strtol(colon + 1, &end, 10);
		mask |= 1ULL << r;
		s = end;
		while (*s == ' ')
			s++;
	}
	return mask;
}

static struct blob finish(sw_swu_builder *b, uint32_t code_size)
{
	struct blob bl;
	size_t need = 0;

	ck_assert_int_eq(sw_swu_finish(b, code_size, NULL, 0, &need), SW_E_LIMIT);
	ck_assert_uint_gt(need, 0);
	bl.p = malloc(need);
	ck_assert_ptr_nonnull(bl.p);
	ck_assert_int_eq(sw_swu_finish(b, code_size, bl.p, need, &bl.len), SW_OK);
	ck_assert_uint_eq(bl.len, need);
	ck_assert_int_eq(sw_swu_validate(bl.p, bl.len), SW_OK);
	return bl;
}

/* The rule at every offset 0..code_size must match the table. */
static void check_rules(const struct blob *bl, uint32_t code_size,
                        const struct row *rows, size_t nrows)
{
	size_t i = 0;

	ck_assert_uint_eq(rows[0].from, 0);
	for (uint32_t off = 0; off <= code_size; off++) {
		const struct row *e;
		int32_t want[SW_MAX_REGS];
		uint64_t mask;
		sw_swu_rule r;

		while (i + 1 < nrows && rows[i + 1].from <= off)
			i++;
		e = &rows[i];
		mask = parse_saved(e->saved, want);
		memset(&r, 0x5a, sizeof r);
		ck_assert_msg(sw_swu_decode(bl->p, bl->len, off, &r) == SW_OK, "decode at %u", off);
		ck_assert_msg(r.arch == SW_ARCH_X64, "arch at %u", off);
		ck_assert_msg(r.region == e->region, "region at %u: %u, want %u", off,
		              r.region, e->region);
		ck_assert_msg(r.cfa_reg == e->cfa_reg && r.cfa_offset == e->cfa_offset,
		              "cfa at %u: r%u+%d, want r%u+%d", off, r.cfa_reg, r.cfa_offset,
		              e->cfa_reg, e->cfa_offset);
		ck_assert_msg(r.sp_offset == e->sp_offset, "sp at %u: %d, want %d", off,
		              r.sp_offset, e->sp_offset);
		ck_assert_msg(!r.ra_in_reg && r.ra_offset == -8, "ra at %u", off);
		ck_assert_msg(r.saved_mask == mask, "saved mask at %u: %#llx, want %#llx", off,
		              (unsigned long long)r.saved_mask, (unsigned long long)mask);
		for (unsigned reg = 0; reg < SW_MAX_REGS; reg++)
			ck_assert_msg(r.saved_offset[reg] == want[reg],
			              "saved %s at %u: %d, want %d",
			              sw_arch_reg_name(SW_ARCH_X64, reg), off,
			              r.saved_offset[reg], want[reg]);
	}
	ck_assert_int_eq(sw_swu_decode(bl->p, bl->len, code_size + 1, &(sw_swu_rule){ 0 }),
	                 SW_E_BADIP);
}

static sw_swu_builder *new_builder(void)
{
	sw_swu_builder *b = NULL;

	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	ck_assert_ptr_nonnull(b);
	return b;
}

#define OK(call) ck_assert_int_eq((call), SW_OK)
#define NROWS(a) (sizeof(a) / sizeof((a)[0]))

/* ---- The shapes ---- */

/*
 * push rbp; mov rbp, rsp; push rbx; sub rsp, 24 / body /
 * lea rsp, [rbp - 8]; pop rbx; pop rbp; ret / more body.
 */
static struct blob shape_rbp_frame(void)
{
	sw_swu_builder *b = new_builder();
	struct blob bl;

	OK(sw_swu_push_reg(b, 1, RBP));
	OK(sw_swu_set_frame(b, 4, RBP, 0));
	OK(sw_swu_push_reg(b, 5, RBX));
	OK(sw_swu_alloc_stack(b, 9, 24));
	OK(sw_swu_end_prolog(b, 9));
	OK(sw_swu_epilog_begin(b, 30));
	OK(sw_swu_restore_sp_from_frame(b, 34, -8));
	OK(sw_swu_pop_reg(b, 35, RBX));
	OK(sw_swu_pop_reg(b, 36, RBP));
	OK(sw_swu_epilog_end(b, 37));
	bl = finish(b, 40);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(rbp_frame)
{
	static const struct row rows[] = {
		{  0, SW_SWU_PROLOG, RSP,  8,  8, "" },
		{  1, SW_SWU_PROLOG, RSP, 16, 16, "rbp:-16" },
		{  4, SW_SWU_PROLOG, RBP, 16, 16, "rbp:-16" },
		{  5, SW_SWU_PROLOG, RBP, 16, 24, "rbp:-16 rbx:-24" },
		{  9, SW_SWU_BODY,   RBP, 16, 48, "rbp:-16 rbx:-24" },
		{ 30, SW_SWU_EPILOG, RBP, 16, 48, "rbp:-16 rbx:-24" },
		{ 34, SW_SWU_EPILOG, RSP, 24, 24, "rbp:-16 rbx:-24" },
		{ 35, SW_SWU_EPILOG, RSP, 16, 16, "rbp:-16" },
		{ 36, SW_SWU_EPILOG, RSP,  8,  8, "" },
		{ 37, SW_SWU_BODY,   RBP, 16, 48, "rbp:-16 rbx:-24" },
	};
	struct blob bl = shape_rbp_frame();
	sw_swu_header h;

	check_rules(&bl, 40, rows, NROWS(rows));
	OK(sw_swu_decode_header(bl.p, bl.len, &h));
	ck_assert_uint_eq(h.arch, SW_ARCH_X64);
	ck_assert_uint_eq(h.version, 1);
	ck_assert_uint_eq(h.code_size, 40);
	ck_assert_uint_eq(h.prolog_size, 9);
	ck_assert_uint_eq(h.prolog_ops, 4);
	ck_assert_uint_eq(h.epilogs, 1);
	free(bl.p);
}
END_TEST

/* No frame register: six pushes and an alignment slot. */
static struct blob shape_pushes(void)
{
	static const unsigned regs[] = { RBX, RBP, R12, R13, R14, R15 };
	static const uint32_t push_end[] = { 1, 2, 4, 6, 8, 10 };
	static const uint32_t pop_end[] = { 56, 58, 60, 62, 63, 64 };
	sw_swu_builder *b = new_builder();
	struct blob bl;

	for (int i = 0; i < 6; i++)
		OK(sw_swu_push_reg(b, push_end[i], regs[i]));
	OK(sw_swu_alloc_stack(b, 14, 8));
	OK(sw_swu_end_prolog(b, 14));
	OK(sw_swu_epilog_begin(b, 50));
	OK(sw_swu_free_stack(b, 54, 8));
	for (int i = 0; i < 6; i++)
		OK(sw_swu_pop_reg(b, pop_end[i], regs[5 - i]));
	OK(sw_swu_epilog_end(b, 65));
	bl = finish(b, 65);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(many_pushes)
{
	static const struct row rows[] = {
		{  0, SW_SWU_PROLOG, RSP,  8,  8, "" },
		{  1, SW_SWU_PROLOG, RSP, 16, 16, "rbx:-16" },
		{  2, SW_SWU_PROLOG, RSP, 24, 24, "rbx:-16 rbp:-24" },
		{  4, SW_SWU_PROLOG, RSP, 32, 32, "rbx:-16 rbp:-24 r12:-32" },
		{  6, SW_SWU_PROLOG, RSP, 40, 40, "rbx:-16 rbp:-24 r12:-32 r13:-40" },
		{  8, SW_SWU_PROLOG, RSP, 48, 48, "rbx:-16 rbp:-24 r12:-32 r13:-40 r14:-48" },
		{ 10, SW_SWU_PROLOG, RSP, 56, 56, "rbx:-16 rbp:-24 r12:-32 r13:-40 r14:-48 r15:-56" },
		{ 14, SW_SWU_BODY,   RSP, 64, 64, "rbx:-16 rbp:-24 r12:-32 r13:-40 r14:-48 r15:-56" },
		{ 50, SW_SWU_EPILOG, RSP, 64, 64, "rbx:-16 rbp:-24 r12:-32 r13:-40 r14:-48 r15:-56" },
		{ 54, SW_SWU_EPILOG, RSP, 56, 56, "rbx:-16 rbp:-24 r12:-32 r13:-40 r14:-48 r15:-56" },
		{ 56, SW_SWU_EPILOG, RSP, 48, 48, "rbx:-16 rbp:-24 r12:-32 r13:-40 r14:-48" },
		{ 58, SW_SWU_EPILOG, RSP, 40, 40, "rbx:-16 rbp:-24 r12:-32 r13:-40" },
		{ 60, SW_SWU_EPILOG, RSP, 32, 32, "rbx:-16 rbp:-24 r12:-32" },
		{ 62, SW_SWU_EPILOG, RSP, 24, 24, "rbx:-16 rbp:-24" },
		{ 63, SW_SWU_EPILOG, RSP, 16, 16, "rbx:-16" },
		{ 64, SW_SWU_EPILOG, RSP,  8,  8, "" },
		/* The epilog is the method's end: code_size itself is past it. */
		{ 65, SW_SWU_BODY,   RSP, 64, 64, "rbx:-16 rbp:-24 r12:-32 r13:-40 r14:-48 r15:-56" },
	};
	struct blob bl = shape_pushes();

	check_rules(&bl, 65, rows, NROWS(rows));
	free(bl.p);
}
END_TEST

/* push rbp; push rbx; sub rsp, 0x30; lea rbp, [rsp + 0x20] / lea rsp, [rbp + 0x10]; pop; pop. */
static struct blob shape_lea_rbp(void)
{
	sw_swu_builder *b = new_builder();
	struct blob bl;

	OK(sw_swu_push_reg(b, 1, RBP));
	OK(sw_swu_push_reg(b, 2, RBX));
	OK(sw_swu_alloc_stack(b, 6, 0x30));
	OK(sw_swu_set_frame(b, 11, RBP, 0x20));
	OK(sw_swu_end_prolog(b, 11));
	OK(sw_swu_epilog_begin(b, 60));
	OK(sw_swu_restore_sp_from_frame(b, 64, 0x10));
	OK(sw_swu_pop_reg(b, 65, RBX));
	OK(sw_swu_pop_reg(b, 66, RBP));
	OK(sw_swu_epilog_end(b, 67));
	bl = finish(b, 80);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(lea_rbp)
{
	static const struct row rows[] = {
		{  0, SW_SWU_PROLOG, RSP,  8,  8, "" },
		{  1, SW_SWU_PROLOG, RSP, 16, 16, "rbp:-16" },
		{  2, SW_SWU_PROLOG, RSP, 24, 24, "rbp:-16 rbx:-24" },
		{  6, SW_SWU_PROLOG, RSP, 72, 72, "rbp:-16 rbx:-24" },
		{ 11, SW_SWU_BODY,   RBP, 40, 72, "rbp:-16 rbx:-24" },
		{ 60, SW_SWU_EPILOG, RBP, 40, 72, "rbp:-16 rbx:-24" },
		{ 64, SW_SWU_EPILOG, RSP, 24, 24, "rbp:-16 rbx:-24" },
		{ 65, SW_SWU_EPILOG, RSP, 16, 16, "rbp:-16" },
		{ 66, SW_SWU_EPILOG, RSP,  8,  8, "" },
		{ 67, SW_SWU_BODY,   RBP, 40, 72, "rbp:-16 rbx:-24" },
	};
	struct blob bl = shape_lea_rbp();

	check_rules(&bl, 80, rows, NROWS(rows));
	free(bl.p);
}
END_TEST

/* sub rsp, 0x10008; mov [rsp+0x10000], rbx; mov [rsp+8], r12 / reloads; add rsp. */
static struct blob shape_large_save(void)
{
	sw_swu_builder *b = new_builder();
	struct blob bl;

	OK(sw_swu_alloc_stack(b, 7, 0x10008));
	OK(sw_swu_save_reg(b, 15, RBX, 0x10000));
	OK(sw_swu_save_reg(b, 20, R12, 8));
	OK(sw_swu_end_prolog(b, 20));
	OK(sw_swu_epilog_begin(b, 100));
	OK(sw_swu_restore_reg(b, 108, RBX));
	OK(sw_swu_restore_reg(b, 113, R12));
	OK(sw_swu_free_stack(b, 120, 0x10008));
	OK(sw_swu_epilog_end(b, 121));
	bl = finish(b, 121);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(large_alloc_save_reg)
{
	static const struct row rows[] = {
		{   0, SW_SWU_PROLOG, RSP,     8,     8, "" },
		{   7, SW_SWU_PROLOG, RSP, 65552, 65552, "" },
		{  15, SW_SWU_PROLOG, RSP, 65552, 65552, "rbx:-16" },
		{  20, SW_SWU_BODY,   RSP, 65552, 65552, "rbx:-16 r12:-65544" },
		{ 100, SW_SWU_EPILOG, RSP, 65552, 65552, "rbx:-16 r12:-65544" },
		{ 108, SW_SWU_EPILOG, RSP, 65552, 65552, "r12:-65544" },
		{ 113, SW_SWU_EPILOG, RSP, 65552, 65552, "" },
		{ 120, SW_SWU_EPILOG, RSP,     8,     8, "" },
		{ 121, SW_SWU_BODY,   RSP, 65552, 65552, "rbx:-16 r12:-65544" },
	};
	struct blob bl = shape_large_save();

	check_rules(&bl, 121, rows, NROWS(rows));
	free(bl.p);
}
END_TEST

/*
 * push rbp; mov rbp, rsp; sub rsp, 16, then four epilogs: leave; ret at
 * 20, mov rsp, rbp; pop rbp; ret at 30 and 40, leave; ret at 45 right
 * after the third, and body code after each.
 */
static struct blob shape_epilogs(void)
{
	sw_swu_builder *b = new_builder();
	struct blob bl;

	OK(sw_swu_push_reg(b, 1, RBP));
	OK(sw_swu_set_frame(b, 4, RBP, 0));
	OK(sw_swu_alloc_stack(b, 8, 16));
	OK(sw_swu_end_prolog(b, 8));
	OK(sw_swu_epilog_begin(b, 20));         /* leave: two effects, one end */
	OK(sw_swu_restore_sp_from_frame(b, 21, 0));
	OK(sw_swu_pop_reg(b, 21, RBP));
	OK(sw_swu_epilog_end(b, 22));
	for (uint32_t s = 30; s <= 40; s += 10) {
		OK(sw_swu_epilog_begin(b, s));
		OK(sw_swu_restore_sp_from_frame(b, s + 3, 0));
		OK(sw_swu_pop_reg(b, s + 4, RBP));
		OK(sw_swu_epilog_end(b, s + 5));
	}
	OK(sw_swu_epilog_begin(b, 45));
	OK(sw_swu_restore_sp_from_frame(b, 46, 0));
	OK(sw_swu_pop_reg(b, 46, RBP));
	OK(sw_swu_epilog_end(b, 47));
	bl = finish(b, 60);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(several_epilogs)
{
	static const struct row rows[] = {
		{  0, SW_SWU_PROLOG, RSP,  8,  8, "" },
		{  1, SW_SWU_PROLOG, RSP, 16, 16, "rbp:-16" },
		{  4, SW_SWU_PROLOG, RBP, 16, 16, "rbp:-16" },
		{  8, SW_SWU_BODY,   RBP, 16, 32, "rbp:-16" },
		{ 20, SW_SWU_EPILOG, RBP, 16, 32, "rbp:-16" },
		{ 21, SW_SWU_EPILOG, RSP,  8,  8, "" },
		{ 22, SW_SWU_BODY,   RBP, 16, 32, "rbp:-16" },
		{ 30, SW_SWU_EPILOG, RBP, 16, 32, "rbp:-16" },
		{ 33, SW_SWU_EPILOG, RSP, 16, 16, "rbp:-16" },
		{ 34, SW_SWU_EPILOG, RSP,  8,  8, "" },
		{ 35, SW_SWU_BODY,   RBP, 16, 32, "rbp:-16" },
		{ 40, SW_SWU_EPILOG, RBP, 16, 32, "rbp:-16" },
		{ 43, SW_SWU_EPILOG, RSP, 16, 16, "rbp:-16" },
		{ 44, SW_SWU_EPILOG, RSP,  8,  8, "" },
		{ 45, SW_SWU_EPILOG, RBP, 16, 32, "rbp:-16" },
		{ 46, SW_SWU_EPILOG, RSP,  8,  8, "" },
		{ 47, SW_SWU_BODY,   RBP, 16, 32, "rbp:-16" },
	};
	struct blob bl = shape_epilogs();
	sw_swu_header h;

	check_rules(&bl, 60, rows, NROWS(rows));
	OK(sw_swu_decode_header(bl.p, bl.len, &h));
	ck_assert_uint_eq(h.epilogs, 4);
	free(bl.p);
}
END_TEST

/* A leaf with no prolog at all need not call end_prolog. */
static struct blob shape_leaf(void)
{
	sw_swu_builder *b = new_builder();
	struct blob bl;

	OK(sw_swu_end_prolog(b, 0));
	OK(sw_swu_epilog_begin(b, 4));
	OK(sw_swu_epilog_end(b, 5));
	bl = finish(b, 5);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(leaf)
{
	static const struct row rows[] = {
		{ 0, SW_SWU_BODY,   RSP, 8, 8, "" },
		{ 4, SW_SWU_EPILOG, RSP, 8, 8, "" },
		{ 5, SW_SWU_BODY,   RSP, 8, 8, "" },
	};
	struct blob bl = shape_leaf();
	sw_swu_builder *b = new_builder();
	struct blob bare;

	check_rules(&bl, 5, rows, NROWS(rows));
	/* Without end_prolog and without epilogs: all body. */
	bare = finish(b, 3);
	check_rules(&bare, 3, rows, 1);
	sw_swu_builder_destroy(b);
	free(bl.p);
	free(bare.p);
}
END_TEST

/* The same description gives the same bytes every time (and after reset). */
START_TEST(reset_and_repeat)
{
	struct blob a = shape_rbp_frame(), c;
	sw_swu_builder *b = new_builder();
	size_t len;

	OK(sw_swu_push_reg(b, 1, RBX));
	ck_assert_int_eq(sw_swu_push_reg(b, 2, RBX), SW_E_INVAL);
	sw_swu_builder_reset(b);
	OK(sw_swu_push_reg(b, 1, RBP));
	OK(sw_swu_set_frame(b, 4, RBP, 0));
	OK(sw_swu_push_reg(b, 5, RBX));
	OK(sw_swu_alloc_stack(b, 9, 24));
	OK(sw_swu_end_prolog(b, 9));
	OK(sw_swu_epilog_begin(b, 30));
	OK(sw_swu_restore_sp_from_frame(b, 34, -8));
	OK(sw_swu_pop_reg(b, 35, RBX));
	OK(sw_swu_pop_reg(b, 36, RBP));
	OK(sw_swu_epilog_end(b, 37));
	c = finish(b, 40);
	ck_assert_uint_eq(a.len, c.len);
	ck_assert_mem_eq(a.p, c.p, a.len);
	/* finish twice, and into a buffer one byte short. */
	ck_assert_int_eq(sw_swu_finish(b, 40, c.p, c.len - 1, &len), SW_E_LIMIT);
	ck_assert_uint_eq(len, c.len);
	OK(sw_swu_finish(b, 40, c.p, c.len, &len));
	ck_assert_mem_eq(a.p, c.p, a.len);
	sw_swu_builder_destroy(b);
	sw_swu_builder_destroy(NULL);
	free(a.p);
	free(c.p);
}
END_TEST

/* ---- Builder misuse ---- */

/* Run `call` on a fresh builder prepared by `setup`; expect `want`. */
#define MISUSE(want, setup, call) do { \
	sw_swu_builder *b = new_builder(); \
	setup; \
	ck_assert_int_eq((call), (want)); \
	sw_swu_builder_destroy(b); \
} while (0)

#define FRAME  OK(sw_swu_push_reg(b, 1, RBP)); OK(sw_swu_set_frame(b, 4, RBP, 0)); \
               OK(sw_swu_alloc_stack(b, 8, 16)); OK(sw_swu_end_prolog(b, 8))

START_TEST(builder_misuse)
{
	sw_swu_builder *nb = NULL;
	size_t len;

	ck_assert_int_eq(sw_swu_builder_create(NULL, SW_ARCH_X64), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_builder_create(&nb, SW_ARCH_NONE), SW_E_INVAL);
	ck_assert_ptr_null(nb);
	ck_assert_int_eq(sw_swu_builder_create(&nb, (sw_arch)77), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_push_reg(NULL, 1, RBX), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_end_prolog(NULL, 1), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_epilog_begin(NULL, 1), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_epilog_end(NULL, 1), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_finish(NULL, 1, NULL, 0, &len), SW_E_INVAL);
	sw_swu_builder_reset(NULL);

	/* Registers. */
	MISUSE(SW_E_INVAL, , sw_swu_push_reg(b, 1, SW_X64_RAX));
	MISUSE(SW_E_INVAL, , sw_swu_push_reg(b, 1, RSP));
	MISUSE(SW_E_INVAL, , sw_swu_push_reg(b, 1, SW_X64_RIP));
	MISUSE(SW_E_INVAL, , sw_swu_push_reg(b, 1, 200));
	MISUSE(SW_E_INVAL, , sw_swu_push_reg(b, 1, 1000000));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, RBX)), sw_swu_push_reg(b, 2, RBX));
	MISUSE(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 32)), sw_swu_save_reg(b, 8, SW_X64_RDI, 0));
	/* Offsets: strictly increasing, never 0. */
	MISUSE(SW_E_INVAL, , sw_swu_push_reg(b, 0, RBX));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 2, RBX)), sw_swu_push_reg(b, 2, RBP));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 2, RBX)), sw_swu_push_reg(b, 1, RBP));
	MISUSE(SW_E_LIMIT, , sw_swu_push_reg(b, SW_SWU_MAX_CODE_SIZE + 1, RBX));
	/* The frame register must be saved first, set once, inside the frame. */
	MISUSE(SW_E_INVAL, , sw_swu_set_frame(b, 3, RBP, 0));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, RBP)), sw_swu_set_frame(b, 4, RBP, 24));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, RBX)), sw_swu_set_frame(b, 4, SW_X64_RAX, 0));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, RBP)); OK(sw_swu_set_frame(b, 4, RBP, 0));
	       OK(sw_swu_push_reg(b, 5, RBX)), sw_swu_set_frame(b, 8, RBX, 0));
	/* save_reg: not over the return address, not over another slot. */
	MISUSE(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 16)), sw_swu_save_reg(b, 8, RBX, 16));
	MISUSE(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 16)), sw_swu_save_reg(b, 8, RBX, 12));
	MISUSE(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 32)); OK(sw_swu_save_reg(b, 8, RBX, 8)),
	       sw_swu_save_reg(b, 12, R12, 12));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, RBX)); OK(sw_swu_alloc_stack(b, 4, 8)),
	       sw_swu_save_reg(b, 8, R12, 8));
	/* Sizes. */
	MISUSE(SW_E_INVAL, , sw_swu_alloc_stack(b, 4, 0));
	MISUSE(SW_E_LIMIT, , sw_swu_alloc_stack(b, 4, SW_SWU_MAX_FRAME));
	MISUSE(SW_E_LIMIT, OK(sw_swu_alloc_stack(b, 4, SW_SWU_MAX_FRAME / 2)),
	       sw_swu_alloc_stack(b, 8, SW_SWU_MAX_FRAME / 2));
	MISUSE(SW_E_LIMIT, , sw_swu_alloc_stack(b, 4, UINT32_MAX));

	/* Phases. */
	MISUSE(SW_E_STATE, , sw_swu_pop_reg(b, 1, RBX));
	MISUSE(SW_E_STATE, , sw_swu_free_stack(b, 1, 8));
	MISUSE(SW_E_STATE, , sw_swu_epilog_begin(b, 10));
	MISUSE(SW_E_STATE, , sw_swu_epilog_end(b, 10));
	MISUSE(SW_E_STATE, OK(sw_swu_end_prolog(b, 0)), sw_swu_end_prolog(b, 3));
	MISUSE(SW_E_STATE, OK(sw_swu_end_prolog(b, 0)), sw_swu_push_reg(b, 3, RBX));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 3, RBX)), sw_swu_end_prolog(b, 2));
	MISUSE(SW_E_STATE, FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_epilog_begin(b, 21));
	MISUSE(SW_E_STATE, FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_push_reg(b, 21, RBX));
	MISUSE(SW_E_INVAL, FRAME, sw_swu_epilog_begin(b, 7));
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20));
	       OK(sw_swu_restore_sp_from_frame(b, 21, 0)); OK(sw_swu_pop_reg(b, 21, RBP));
	       OK(sw_swu_epilog_end(b, 22)), sw_swu_epilog_begin(b, 21));
	/* Epilog ops: after the start, not decreasing, before the end. */
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20)),
	       sw_swu_restore_sp_from_frame(b, 20, 0));
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20));
	       OK(sw_swu_restore_sp_from_frame(b, 23, 0)), sw_swu_pop_reg(b, 22, RBP));
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20));
	       OK(sw_swu_restore_sp_from_frame(b, 23, 0)); OK(sw_swu_pop_reg(b, 24, RBP)),
	       sw_swu_epilog_end(b, 24));
	/* The frame must be gone by the return. */
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20));
	       OK(sw_swu_restore_sp_from_frame(b, 23, 0)), sw_swu_epilog_end(b, 24));
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_epilog_end(b, 24));
	/* Pops undo pushes in reverse. */
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, RBX)); OK(sw_swu_push_reg(b, 3, R12));
	       OK(sw_swu_end_prolog(b, 3)); OK(sw_swu_epilog_begin(b, 9)),
	       sw_swu_pop_reg(b, 10, RBX));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, RBX)); OK(sw_swu_end_prolog(b, 3));
	       OK(sw_swu_epilog_begin(b, 9)), sw_swu_pop_reg(b, 10, R12));
	/* "add rsp, n; pop rbp" is a real epilog: SP's depth is static, so the CFA moves to SP. */
	{
		sw_swu_builder *b = new_builder();
		unsigned char blob[64];
		size_t n = 0;
		sw_swu_rule r;

		FRAME;
		OK(sw_swu_epilog_begin(b, 20));
		OK(sw_swu_free_stack(b, 24, 16));
		OK(sw_swu_pop_reg(b, 25, RBP));
		OK(sw_swu_epilog_end(b, 26));
		OK(sw_swu_finish(b, 26, blob, sizeof blob, &n));
		OK(sw_swu_decode(blob, n, 25, &r));
		ck_assert_uint_eq(r.cfa_reg, SW_X64_RSP);
		ck_assert_int_eq(r.cfa_offset, 8);
		ck_assert_uint_eq(r.saved_mask, 0);
		sw_swu_builder_destroy(b);
	}
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_restore_reg(b, 25, RBX));
	/* SP: not above the return address, not above a live slot, from a frame that exists. */
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_free_stack(b, 24, 32));
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_free_stack(b, 24, 0));
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20)),
	       sw_swu_restore_sp_from_frame(b, 24, 8));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, RBX)); OK(sw_swu_end_prolog(b, 1));
	       OK(sw_swu_epilog_begin(b, 9)), sw_swu_restore_sp_from_frame(b, 10, 0));
	MISUSE(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 32)); OK(sw_swu_save_reg(b, 8, RBX, 8));
	       OK(sw_swu_end_prolog(b, 8)); OK(sw_swu_epilog_begin(b, 9)),
	       sw_swu_free_stack(b, 12, 32));

	/* finish. */
	MISUSE(SW_E_STATE, OK(sw_swu_push_reg(b, 1, RBX)), sw_swu_finish(b, 10, NULL, 0, &len));
	MISUSE(SW_E_STATE, FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_finish(b, 30, NULL, 0, &len));
	MISUSE(SW_E_INVAL, FRAME, sw_swu_finish(b, 7, NULL, 0, &len));
	MISUSE(SW_E_INVAL, , sw_swu_finish(b, 0, NULL, 0, &len));
	MISUSE(SW_E_INVAL, , sw_swu_finish(b, 10, NULL, 0, NULL));
	MISUSE(SW_E_LIMIT, , sw_swu_finish(b, SW_SWU_MAX_CODE_SIZE + 1, NULL, 0, &len));
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20));
	       OK(sw_swu_restore_sp_from_frame(b, 21, 0)); OK(sw_swu_pop_reg(b, 21, RBP));
	       OK(sw_swu_epilog_end(b, 22)), sw_swu_finish(b, 21, NULL, 0, &len));

	/* Errors stick until reset. */
	MISUSE(SW_E_INVAL, ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RAX), SW_E_INVAL);
	       ck_assert_int_eq(sw_swu_push_reg(b, 1, RBX), SW_E_INVAL),
	       sw_swu_finish(b, 10, NULL, 0, &len));
	MISUSE(SW_OK, ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RAX), SW_E_INVAL);
	       sw_swu_builder_reset(b), sw_swu_push_reg(b, 1, RBX));
}
END_TEST

START_TEST(builder_limits)
{
	sw_swu_builder *b = new_builder();
	uint32_t off = 0;
	size_t len;

	for (int i = 0; i < SW_SWU_MAX_OPS; i++)
		OK(sw_swu_alloc_stack(b, ++off, 8));
	ck_assert_int_eq(sw_swu_alloc_stack(b, ++off, 8), SW_E_LIMIT);
	sw_swu_builder_reset(b);

	/* MAX_EPILOGS epilogs of one `ret` each; one more is refused. */
	OK(sw_swu_end_prolog(b, 0));
	for (uint32_t i = 0; i < SW_SWU_MAX_EPILOGS; i++) {
		OK(sw_swu_epilog_begin(b, i));
		OK(sw_swu_epilog_end(b, i + 1));
	}
	ck_assert_int_eq(sw_swu_epilog_begin(b, SW_SWU_MAX_EPILOGS), SW_E_LIMIT);
	sw_swu_builder_reset(b);

	/* MAX_OPS ops in one epilog: alloc/free pairs. */
	OK(sw_swu_alloc_stack(b, 1, 8 * SW_SWU_MAX_OPS));
	OK(sw_swu_end_prolog(b, 1));
	OK(sw_swu_epilog_begin(b, 1));
	for (uint32_t i = 0; i < SW_SWU_MAX_OPS; i++)
		OK(sw_swu_free_stack(b, 2 + i, 8));
	ck_assert_int_eq(sw_swu_free_stack(b, 300, 8), SW_E_LIMIT);
	sw_swu_builder_reset(b);

	/* The largest blob: everything at its limit still validates. */
	OK(sw_swu_alloc_stack(b, 1, 8 * SW_SWU_MAX_OPS));
	OK(sw_swu_end_prolog(b, 1));
	off = 1;
	for (uint32_t e = 0; e < 8; e++) {
		OK(sw_swu_epilog_begin(b, off));
		for (uint32_t i = 0; i < SW_SWU_MAX_OPS; i++)
			OK(sw_swu_free_stack(b, ++off, 8));
		OK(sw_swu_epilog_end(b, ++off));
	}
	{
		struct blob bl = finish(b, SW_SWU_MAX_CODE_SIZE);
		sw_swu_rule r;

		OK(sw_swu_decode(bl.p, bl.len, SW_SWU_MAX_CODE_SIZE, &r));
		ck_assert_int_eq(r.sp_offset, 8 + 8 * SW_SWU_MAX_OPS);
		OK(sw_swu_decode(bl.p, bl.len, off - 1, &r));
		ck_assert_int_eq(r.sp_offset, 8);
		free(bl.p);
	}
	ck_assert_int_eq(sw_swu_finish(b, SW_SWU_MAX_CODE_SIZE + 1, NULL, 0, &len), SW_E_LIMIT);
	sw_swu_builder_destroy(b);
}
END_TEST

/* ---- Hostile headers and hand-made blobs ---- */

static sw_status validate_bytes(const unsigned char *bytes, size_t len)
{
	unsigned char *p = malloc(len ? len : 1);
	sw_status st;

	memcpy(p, bytes, len);
	st = sw_swu_validate(p, len);
	free(p);
	return st;
}

START_TEST(bad_headers)
{
	/* magic, version 1 | x64, flags, code 16, prolog 1, 1 op, 0 epilogs, push rbp */
	static const unsigned char good[] = { 0xe5, 0x11, 0, 16, 1, 1, 0, 1, 0x01, 6 };
	unsigned char b[sizeof good + 8];
	sw_swu_header h;
	sw_swu_rule r;

	ck_assert_int_eq(validate_bytes(good, sizeof good), SW_OK);
	OK(sw_swu_decode(good, sizeof good, 1, &r));
	ck_assert_int_eq(r.cfa_offset, 16);

#define PATCH(i, v, want) do { memcpy(b, good, sizeof good); b[i] = (v); \
	ck_assert_int_eq(validate_bytes(b, sizeof good), (want)); } while (0)
	PATCH(0, 0x00, SW_E_BADMETA);                   /* magic */
	PATCH(1, 0x21, SW_E_UNSUPPORTED);               /* version 2 */
	PATCH(1, 0x01, SW_E_UNSUPPORTED);               /* version 0 */
	PATCH(1, 0x12, SW_E_UNSUPPORTED);               /* x86: no backend yet */
	PATCH(1, 0x1f, SW_E_UNSUPPORTED);               /* unknown arch */
	PATCH(1, 0x10, SW_E_UNSUPPORTED);               /* arch none */
	PATCH(2, 0x01, SW_E_UNSUPPORTED);               /* unknown flag */
	PATCH(3, 0x00, SW_E_BADMETA);                   /* code size 0 */
	PATCH(4, 17, SW_E_BADMETA);                     /* prolog beyond code */
	PATCH(5, 2, SW_E_BADMETA);                      /* more ops than prolog bytes */
	PATCH(6, 1, SW_E_TRUNCATED);                    /* an epilog that is not there */
	PATCH(7, 0, SW_E_BADMETA);                      /* op ends at 0 */
	PATCH(7, 2, SW_E_BADMETA);                      /* op ends past the prolog */
	PATCH(8, 0x00, SW_E_BADMETA);                   /* opcode 0 */
	PATCH(8, 0x09, SW_E_BADMETA);                   /* reserved opcode */
	PATCH(8, 0x07, SW_E_BADMETA);                   /* epilog op in the prolog */
	PATCH(9, 0, SW_E_BADMETA);                      /* push rax */
	PATCH(9, 7, SW_E_BADMETA);                      /* push rsp */
	PATCH(9, 47, SW_E_BADMETA);                     /* no such register */
	PATCH(9, 0x80, SW_E_TRUNCATED);                 /* varint runs off the end */
#undef PATCH

	/* Trailing byte. */
	memcpy(b, good, sizeof good);
	b[sizeof good] = 0;
	ck_assert_int_eq(validate_bytes(b, sizeof good + 1), SW_E_BADMETA);
	/* Varints: 5 bytes at most, 32 bits at most; longer but in range is fine. */
	{
		static const unsigned char big[] = { 0xe5, 0x11, 0, 0xff, 0xff, 0xff, 0xff, 0x0f, 0, 0, 0 };
		static const unsigned char six[] = { 0xe5, 0x11, 0, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, 0, 0, 0 };
		static const unsigned char pad[] = { 0xe5, 0x11, 0, 0x90, 0x80, 0x80, 0x80, 0x00, 0, 0, 0 };
		static const unsigned char max[] = { 0xe5, 0x11, 0, 0x80, 0x80, 0x80, 0x80, 0x04, 0, 0, 0 };

		ck_assert_int_eq(validate_bytes(big, sizeof big), SW_E_BADMETA);   /* > MAX_CODE_SIZE */
		ck_assert_int_eq(validate_bytes(six, sizeof six), SW_E_BADMETA);
		ck_assert_int_eq(validate_bytes(pad, sizeof pad), SW_OK);
		ck_assert_int_eq(validate_bytes(max, sizeof max), SW_OK);          /* 1 << 30 */
	}
	/* A huge op count with few bytes is refused before any op is read. */
	{
		static const unsigned char many[] = { 0xe5, 0x11, 0, 0x80, 0x80, 0x04, 0xff, 0x01, 0x80, 0x08, 0 };

		ck_assert_int_eq(validate_bytes(many, sizeof many), SW_E_BADMETA);
	}
	/* An epilog whose byte count disagrees with its ops, and one that leaves a frame. */
	{
		/* push rbp (1), end 1; epilog at 5, len 3, 1 op, 3 bytes: pop rbp at +1 */
		static const unsigned char ep[] = { 0xe5, 0x11, 0, 16, 1, 1, 1, 1, 0x01, 6,
		                                    4, 3, 1, 3, 1, 0x07, 6 };
		unsigned char e2[sizeof ep];

		ck_assert_int_eq(validate_bytes(ep, sizeof ep), SW_OK);
		OK(sw_swu_decode(ep, sizeof ep, 6, &r));
		ck_assert_int_eq(r.region, SW_SWU_EPILOG);
		ck_assert_int_eq(r.cfa_offset, 8);
		memcpy(e2, ep, sizeof ep);
		e2[13] = 4;                             /* byte count beyond the blob */
		ck_assert_int_eq(validate_bytes(e2, sizeof e2), SW_E_TRUNCATED);
		memcpy(e2, ep, sizeof ep);
		e2[12] = 0;                             /* no ops but bytes */
		ck_assert_int_eq(validate_bytes(e2, sizeof e2), SW_E_BADMETA);
		memcpy(e2, ep, sizeof ep);
		e2[15] = 0x05;                          /* free instead of pop: rbp stays saved */
		ck_assert_int_eq(validate_bytes(e2, sizeof e2), SW_E_BADMETA);
		memcpy(e2, ep, sizeof ep);
		e2[14] = 3;                             /* op at the epilog's end */
		ck_assert_int_eq(validate_bytes(e2, sizeof e2), SW_E_BADMETA);
		memcpy(e2, ep, sizeof ep);
		e2[11] = 12;                            /* epilog beyond the code */
		ck_assert_int_eq(validate_bytes(e2, sizeof e2), SW_E_BADMETA);
	}

	ck_assert_int_eq(sw_swu_validate(NULL, 10), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_decode(good, sizeof good, 0, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_decode(NULL, 0, 0, &r), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_decode_header(good, sizeof good, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_decode(good, sizeof good, 17, &r), SW_E_BADIP);
	ck_assert_int_eq(sw_swu_decode(good, sizeof good, UINT32_MAX, &r), SW_E_BADIP);
	ck_assert_int_eq(sw_swu_decode_header(good, 0, &h), SW_E_TRUNCATED);
	ck_assert_int_eq(sw_swu_dump(NULL, good, sizeof good), SW_E_INVAL);
}
END_TEST

/* ---- Truncation ---- */

typedef struct blob (*shape_fn)(void);
static const shape_fn shapes[] = {
	shape_rbp_frame, shape_pushes, shape_lea_rbp, shape_large_save, shape_epilogs, shape_leaf
};
#define NSHAPES (sizeof shapes / sizeof shapes[0])

static FILE *devnull(void)
{
	FILE *f = fopen("/dev/null", "w");

	ck_assert_ptr_nonnull(f);
	setvbuf(f, NULL, _IOFBF, 1 << 16);      /* or every line is a write(2) */
	return f;
}

START_TEST(truncated)
{
	FILE *null = devnull();

	for (size_t s = 0; s < NSHAPES; s++) {
		struct blob bl = shapes[s]();
		sw_swu_header h, full;

		OK(sw_swu_decode_header(bl.p, bl.len, &full));
		for (size_t len = 0; len < bl.len; len++) {
			unsigned char *p = malloc(len ? len : 1);
			sw_status st;
			sw_swu_rule r;

			memcpy(p, bl.p, len);
			ck_assert_msg(sw_swu_validate(p, len) == SW_E_TRUNCATED,
			              "shape %zu cut at %zu: %d", s, len, sw_swu_validate(p, len));
			ck_assert_int_eq(sw_swu_dump(null, p, len), SW_E_TRUNCATED);
			st = sw_swu_decode_header(p, len, &h);
			ck_assert(st == SW_OK || st == SW_E_TRUNCATED);
			for (uint32_t off = 0; off <= full.code_size; off++) {
				st = sw_swu_decode(p, len, off, &r);
				ck_assert(st == SW_OK || st == SW_E_TRUNCATED);
				if (off > 200)
					off += 997;     /* the large shape: sample */
			}
			free(p);
		}
		free(bl.p);
	}
	fclose(null);
}
END_TEST

/* ---- Random and mutated blobs ---- */

static uint64_t rng_state = 0x9e3779b97f4a7c15ULL;

static uint32_t rnd(void)
{
	/* xorshift64*: reproducible across runs and hosts. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545f4914f6cdd1dULL) >> 32);
}

/*
 * Feed one blob (copied into a block of exactly its size) to every entry
 * point.  A blob that validates must decode at every offset and dump.
 */
/*
 * Check's assertions record their location on every pass, which would
 * dominate a million-call loop; this one costs nothing until it fails.
 */
#define REQUIRE(cond) do { if (!(cond)) ck_abort_msg("%s (offset %u)", #cond, (unsigned)off_now); } while (0)

static unsigned long fuzz_valid;

static void fuzz_one(const unsigned char *bytes, size_t len, FILE *null)
{
	unsigned char *p = malloc(len ? len : 1);
	sw_swu_header h;
	sw_swu_rule r;
	sw_status v, st;
	uint32_t off_now = 0;

	memcpy(p, bytes, len);
	v = sw_swu_validate(p, len);
	REQUIRE(v == SW_OK || v == SW_E_BADMETA || v == SW_E_TRUNCATED || v == SW_E_UNSUPPORTED);
	st = sw_swu_dump(null, p, len);
	REQUIRE(st == v);
	st = sw_swu_decode_header(p, len, &h);
	if (st == SW_OK) {
		uint32_t step = h.code_size > 512 ? h.code_size / 256 + 1 : 1;

		for (uint32_t off = 0; off <= h.code_size; off += step) {
			off_now = off;
			st = sw_swu_decode(p, len, off, &r);
			if (v == SW_OK)
				REQUIRE(st == SW_OK);
			else
				REQUIRE(st == SW_OK || st == SW_E_BADMETA || st == SW_E_TRUNCATED);
			if (st == SW_OK) {
				REQUIRE(r.region <= SW_SWU_EPILOG);
				REQUIRE(r.cfa_reg < SW_X64_NREGS);
				REQUIRE(r.sp_offset >= 8);
				REQUIRE(r.sp_offset <= (int32_t)SW_SWU_MAX_FRAME);
			}
			if (off + step < off)
				break;
		}
		REQUIRE(sw_swu_decode(p, len, h.code_size, &r) == SW_OK || v != SW_OK);
	}
	if (v == SW_OK)
		fuzz_valid++;
	free(p);
}

START_TEST(random_blobs)
{
	FILE *null = devnull();
	unsigned char buf[80];

	fuzz_valid = 0;
	rng_state = 0x9e3779b97f4a7c15ULL;
	for (int i = 0; i < 100000; i++) {
		size_t len = rnd() % sizeof buf;

		for (size_t j = 0; j < len; j++)
			buf[j] = (unsigned char)rnd();
		/* Mostly a plausible header, so the fuzz reaches the ops. */
		if (len >= 7 && rnd() % 8) {
			buf[0] = 0xe5;
			buf[1] = 0x11;
			buf[2] = 0;
			buf[3] = (unsigned char)(rnd() % 100 + 1);
			buf[4] = (unsigned char)(rnd() % (buf[3] + 1));
			buf[5] = (unsigned char)(rnd() % 6);
			buf[6] = (unsigned char)(rnd() % 3);
			for (size_t j = 7; j < len; j++)
				if (rnd() % 2)
					buf[j] = (unsigned char)(rnd() % 16);
		}
		fuzz_one(buf, len, null);
	}
	fprintf(stderr, "random_blobs: %lu of 100000 valid\n", fuzz_valid);
	fclose(null);
}
END_TEST

START_TEST(mutated_blobs)
{
	FILE *null = devnull();
	struct blob bl[NSHAPES];
	unsigned char buf[256];

	fuzz_valid = 0;
	rng_state = 0x2545f4914f6cdd1dULL;
	for (size_t s = 0; s < NSHAPES; s++)
		bl[s] = shapes[s]();
	for (int i = 0; i < 100000; i++) {
		const struct blob *src = &bl[rnd() % NSHAPES];
		size_t len = src->len;
		int n = 1 + rnd() % 3;

		ck_assert_uint_le(len + 8, sizeof buf);
		memcpy(buf, src->p, len);
		while (n--) {
			size_t at = rnd() % len;

			switch (rnd() % 5) {
			case 0:         /* bit flip */
				buf[at] ^= (unsigned char)(1u << (rnd() % 8));
				break;
			case 1:         /* random byte */
				buf[at] = (unsigned char)rnd();
				break;
			case 2:         /* small change */
				buf[at] = (unsigned char)(buf[at] + (rnd() % 5) - 2);
				break;
			case 3:         /* insert a byte */
				memmove(buf + at + 1, buf + at, len - at);
				buf[at] = (unsigned char)rnd();
				len++;
				break;
			default:        /* delete a byte */
				if (len > 1) {
					memmove(buf + at, buf + at + 1, len - at - 1);
					len--;
				}
				break;
			}
		}
		fuzz_one(buf, len, null);
	}
	fprintf(stderr, "mutated_blobs: %lu of 100000 still valid\n", fuzz_valid);
	for (size_t s = 0; s < NSHAPES; s++)
		free(bl[s].p);
	fclose(null);
}
END_TEST

/* ---- Random JIT-like descriptions against an independent model ---- */

/* The frame as the model sees it from some offset on. */
struct snap {
	uint32_t at;
	unsigned cfa_reg;
	int32_t cfa_offset, sp;
	uint64_t mask;
	int32_t off[SW_X64_NREGS];
};

struct model {
	struct snap cur;
	struct snap prolog[16], epi[4][16];
	unsigned nprolog, nepi[4];
	uint32_t prolog_size, ep_start[4], ep_end[4];
	unsigned nep;
};

static void rec(struct snap *list, unsigned *n, const struct snap *s, uint32_t at)
{
	ck_assert_uint_lt(*n, 16);
	list[*n] = *s;
	list[*n].at = at;
	(*n)++;
}

/* The rule the model expects at `off`. */
static const struct snap *model_at(const struct model *m, uint32_t off, sw_swu_region *region,
                                   const struct snap *entry, const struct snap *body)
{
	const struct snap *s = entry;

	if (off < m->prolog_size) {
		*region = SW_SWU_PROLOG;
		for (unsigned i = 0; i < m->nprolog && m->prolog[i].at <= off; i++)
			s = &m->prolog[i];
		return s;
	}
	for (unsigned e = 0; e < m->nep; e++) {
		if (off >= m->ep_start[e] && off < m->ep_end[e]) {
			*region = SW_SWU_EPILOG;
			s = body;
			for (unsigned i = 0; i < m->nepi[e] && m->epi[e][i].at <= off; i++)
				s = &m->epi[e][i];
			return s;
		}
	}
	*region = SW_SWU_BODY;
	return body;
}

START_TEST(random_builds)
{
	static const unsigned callee[] = { RBX, RBP, R12, R13, R14, R15 };
	sw_swu_builder *b = new_builder();
	unsigned long checked = 0;

	rng_state = 0x1234567887654321ULL;
	for (int iter = 0; iter < 20000; iter++) {
		struct model m;
		struct snap entry = { 0, RSP, 8, 8, 0, { 0 } }, body;
		unsigned order[6], npush = rnd() % 7, nsave = 0, saved_regs[6];
		int frame = 0;
		int32_t push_depth, fp_depth = 0, alloc = 0;
		uint32_t pos = 0, code_size;
		struct blob bl;
		uint32_t off_now = 0;

		memset(&m, 0, sizeof m);
		m.cur = entry;
		sw_swu_builder_reset(b);
		for (unsigned i = 0; i < 6; i++)
			order[i] = callee[i];
		for (unsigned i = 5; i > 0; i--) {
			unsigned j = rnd() % (i + 1), t = order[i];

			order[i] = order[j];
			order[j] = t;
		}
		for (unsigned i = 0; i < npush; i++) {
			pos += 1 + rnd() % 2;
			OK(sw_swu_push_reg(b, pos, order[i]));
			m.cur.sp += 8;
			if (m.cur.cfa_reg == RSP)
				m.cur.cfa_offset = m.cur.sp;
			m.cur.off[order[i]] = -m.cur.sp;
			m.cur.mask |= 1ULL << order[i];
			rec(m.prolog, &m.nprolog, &m.cur, pos);
			/* Sometimes establish RBP as soon as it is saved. */
			if (order[i] == RBP && rnd() % 2) {
				int32_t fo = 8 * (int32_t)(rnd() % (uint32_t)(m.cur.sp / 8 + 1));

				pos += 3;
				OK(sw_swu_set_frame(b, pos, RBP, (uint32_t)fo));
				frame = 1;
				fp_depth = m.cur.sp - fo;
				m.cur.cfa_reg = RBP;
				m.cur.cfa_offset = fp_depth;
				rec(m.prolog, &m.nprolog, &m.cur, pos);
			}
		}
		push_depth = m.cur.sp;
		if (rnd() % 3) {
			alloc = 8 * (int32_t)(1 + rnd() % 40);
			if (rnd() % 10 == 0)
				alloc = 8 * (int32_t)(rnd() % 200000 + 1);
			pos += 4 + rnd() % 4;
			OK(sw_swu_alloc_stack(b, pos, (uint32_t)alloc));
			m.cur.sp += alloc;
			if (m.cur.cfa_reg == RSP)
				m.cur.cfa_offset = m.cur.sp;
			rec(m.prolog, &m.nprolog, &m.cur, pos);
			/* Save some of the other registers in the allocated area. */
			for (unsigned i = npush; i < 6 && (int32_t)(nsave + 1) * 8 <= alloc; i++) {
				if (rnd() % 2)
					continue;
				pos += 5;
				OK(sw_swu_save_reg(b, pos, order[i], 8 * nsave));
				m.cur.off[order[i]] = -m.cur.sp + 8 * (int32_t)nsave;
				m.cur.mask |= 1ULL << order[i];
				saved_regs[nsave++] = order[i];
				rec(m.prolog, &m.nprolog, &m.cur, pos);
			}
		}
		m.prolog_size = pos + rnd() % 3;
		OK(sw_swu_end_prolog(b, m.prolog_size));
		body = m.cur;

		pos = m.prolog_size;
		m.nep = rnd() % 4;
		for (unsigned e = 0; e < m.nep; e++) {
			pos += rnd() % 20;
			m.ep_start[e] = pos;
			OK(sw_swu_epilog_begin(b, pos));
			m.cur = body;
			for (unsigned i = 0; i < nsave; i++) {
				pos += 5;
				OK(sw_swu_restore_reg(b, pos, saved_regs[nsave - 1 - i]));
				m.cur.mask &= ~(1ULL << saved_regs[nsave - 1 - i]);
				m.cur.off[saved_regs[nsave - 1 - i]] = 0;
				rec(m.epi[e], &m.nepi[e], &m.cur, pos);
			}
			if (frame) {
				pos += 4;
				OK(sw_swu_restore_sp_from_frame(b, pos, fp_depth - push_depth));
				m.cur.sp = push_depth;
				m.cur.cfa_reg = RSP;
				m.cur.cfa_offset = push_depth;
				rec(m.epi[e], &m.nepi[e], &m.cur, pos);
			} else if (alloc) {
				pos += 4;
				OK(sw_swu_free_stack(b, pos, (uint32_t)alloc));
				m.cur.sp = m.cur.cfa_offset = push_depth;
				rec(m.epi[e], &m.nepi[e], &m.cur, pos);
			}
			for (unsigned i = npush; i-- > 0;) {
				pos += 1 + rnd() % 2;
				OK(sw_swu_pop_reg(b, pos, order[i]));
				m.cur.sp -= 8;
				m.cur.cfa_offset = m.cur.sp;
				m.cur.mask &= ~(1ULL << order[i]);
				m.cur.off[order[i]] = 0;
				rec(m.epi[e], &m.nepi[e], &m.cur, pos);
			}
			pos += 1;
			OK(sw_swu_epilog_end(b, pos));
			m.ep_end[e] = pos;
		}
		code_size = pos + rnd() % 10;
		if (code_size == 0)
			code_size = 1;
		bl = finish(b, code_size);

		for (uint32_t off = 0; off <= code_size; off++) {
			sw_swu_region region;
			const struct snap *want = model_at(&m, off, &region, &entry, &body);
			sw_swu_rule r;

			off_now = off;
			REQUIRE(sw_swu_decode(bl.p, bl.len, off, &r) == SW_OK);
			REQUIRE(r.region == region);
			REQUIRE(r.cfa_reg == want->cfa_reg && r.cfa_offset == want->cfa_offset);
			REQUIRE(r.sp_offset == want->sp);
			REQUIRE(r.saved_mask == want->mask);
			for (unsigned reg = 0; reg < SW_X64_NREGS; reg++)
				REQUIRE(r.saved_offset[reg] == want->off[reg]);
			checked++;
		}
		free(bl.p);
	}
	fprintf(stderr, "random_builds: %lu offsets checked\n", checked);
	sw_swu_builder_destroy(b);
}
END_TEST

/* ---- The dump ---- */

static char *dump_to_string(const struct blob *bl, sw_status *st)
{
	FILE *f = tmpfile();
	char *text;
	long n;

	ck_assert_ptr_nonnull(f);
	*st = sw_swu_dump(f, bl->p, bl->len);
	n = ftell(f);
	ck_assert_int_ge(n, 0);
	text = calloc(1, (size_t)n + 1);
	rewind(f);
	ck_assert_uint_eq(fread(text, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	return text;
}

START_TEST(dump_text)
{
	static const char want[] =
		"SWU version 1, x64, 33 bytes\n"
		"code size 40, prolog size 9, 4 prolog ops, 1 epilog\n"
		"prolog [0, 9):\n"
		"         1         push rbp                         ; cfa = rsp + 16, sp = cfa - 16\n"
		"         4         set_frame rbp = rsp + 0          ; cfa = rbp + 16, sp = cfa - 16\n"
		"         5         push rbx                         ; cfa = rbp + 16, sp = cfa - 24\n"
		"         9         alloc 24                         ; cfa = rbp + 16, sp = cfa - 48\n"
		"epilog 0 [30, 37): 3 ops\n"
		"        34 (+4)    restore_sp rsp = rbp - 8         ; cfa = rsp + 24, sp = cfa - 24\n"
		"        35 (+5)    pop rbx                          ; cfa = rsp + 16, sp = cfa - 16\n"
		"        36 (+6)    pop rbp                          ; cfa = rsp + 8, sp = cfa - 8\n";
	struct blob bl = shape_rbp_frame();
	sw_status st;
	char *text = dump_to_string(&bl, &st);

	OK(st);
	ck_assert_str_eq(text, want);
	free(text);

	/* Cut inside the epilog: the dump stops there and names the byte. */
	bl.len -= 2;
	text = dump_to_string(&bl, &st);
	ck_assert_int_eq(st, SW_E_TRUNCATED);
	ck_assert_ptr_nonnull(strstr(text, "         9         alloc 24"));
	ck_assert_ptr_nonnull(strstr(text, "error at byte 20: unwind metadata is truncated\n"));
	ck_assert_ptr_null(strstr(text, "epilog 0"));
	free(text);
	free(bl.p);
}
END_TEST

static Suite *swu_suite(void)
{
	Suite *s = suite_create("swu");
	TCase *tc = tcase_create("shapes");
	TCase *fz = tcase_create("hostile");

	tcase_add_test(tc, rbp_frame);
	tcase_add_test(tc, many_pushes);
	tcase_add_test(tc, lea_rbp);
	tcase_add_test(tc, large_alloc_save_reg);
	tcase_add_test(tc, several_epilogs);
	tcase_add_test(tc, leaf);
	tcase_add_test(tc, reset_and_repeat);
	tcase_add_test(tc, builder_misuse);
	tcase_add_test(tc, builder_limits);
	tcase_add_test(tc, dump_text);
	suite_add_tcase(s, tc);

	tcase_add_test(fz, bad_headers);
	tcase_add_test(fz, truncated);
	tcase_add_test(fz, random_blobs);
	tcase_add_test(fz, mutated_blobs);
	tcase_add_test(fz, random_builds);
	tcase_set_timeout(fz, 600);
	suite_add_tcase(s, fz);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(swu_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
