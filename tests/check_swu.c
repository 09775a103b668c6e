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
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "rounds.h"

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

static unsigned reg_by_name(sw_arch arch, const char *name, size_t len)
{
	for (unsigned r = 0; r < SW_MAX_REGS; r++) {
		const char *n = sw_arch_reg_name(arch, r);

		if (n && strlen(n) == len && !strncmp(n, name, len))
			return r;
	}
	ck_abort_msg("unknown register in expectation: %.*s", (int)len, name);
	return 0;
}

/* Parse "rbp:-16 rbx:-24" into a mask and offsets. */
static uint64_t parse_saved(sw_arch arch, const char *s, int32_t off[SW_MAX_REGS])
{
	uint64_t mask = 0;

	memset(off, 0, sizeof(int32_t) * SW_MAX_REGS);
	while (s && *s) {
		const char *colon = strchr(s, ':');
		char *end;
		unsigned r;

		ck_assert_ptr_nonnull(colon);
		r = reg_by_name(arch, s, (size_t)(colon - s));
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

/* One row of a table for any architecture; `ra` says where the return address is. */
struct arow {
	uint32_t from;
	sw_swu_region region;
	unsigned cfa_reg;
	int32_t cfa_offset;
	int32_t sp_offset;
	const char *ra;         /* "lr" or "-8" (at CFA - 8); a trailing '!': signed */
	const char *saved;
};

/* Where decode_return_address differs: at `at`, `extra` more bytes of arguments. */
struct ra_diff {
	uint32_t at;
	int32_t extra;
};

static void check_row(const struct blob *bl, sw_arch arch, uint32_t off, const struct arow *e)
{
	int32_t want[SW_MAX_REGS];
	uint64_t mask = parse_saved(arch, e->saved, want);
	const char *ra = e->ra;
	int in_lr = !strncmp(ra, "lr", 2);
	int32_t ra_off = in_lr ? 0 : (int32_t)strtol(ra, NULL, 10);
	int sign = strchr(ra, '!') != NULL;
	sw_swu_rule r;

	memset(&r, 0x5a, sizeof r);
	ck_assert_msg(sw_swu_decode(bl->p, bl->len, off, &r) == SW_OK, "decode at %u", off);
	ck_assert_msg(r.arch == (uint32_t)arch, "arch at %u", off);
	ck_assert_msg(r.region == e->region, "region at %u: %u, want %u", off, r.region, e->region);
	ck_assert_msg(r.cfa_reg == e->cfa_reg && r.cfa_offset == e->cfa_offset,
	              "cfa at %u: r%u+%d, want r%u+%d", off, r.cfa_reg, r.cfa_offset,
	              e->cfa_reg, e->cfa_offset);
	ck_assert_msg(r.sp_offset == e->sp_offset, "sp at %u: %d, want %d", off,
	              r.sp_offset, e->sp_offset);
	if (in_lr)
		ck_assert_msg(r.ra_in_reg == 1 && r.ra_reg == SW_ARM64_LR && r.ra_offset == 0,
		              "ra at %u: want lr", off);
	else
		ck_assert_msg(r.ra_in_reg == 0 && r.ra_reg == 0 && r.ra_offset == ra_off,
		              "ra at %u: in reg %u, [cfa %+d], want [cfa %+d]", off, r.ra_in_reg,
		              r.ra_offset, ra_off);
	ck_assert_msg(r.ra_signed == (uint32_t)sign, "ra signed at %u: %u", off, r.ra_signed);
	ck_assert_msg(r.reserved == 0, "reserved at %u", off);
	ck_assert_msg(r.saved_mask == mask, "saved mask at %u: %#llx, want %#llx", off,
	              (unsigned long long)r.saved_mask, (unsigned long long)mask);
	for (unsigned reg = 0; reg < SW_MAX_REGS; reg++)
		ck_assert_msg(r.saved_offset[reg] == want[reg], "saved %s at %u: %d, want %d",
		              sw_arch_reg_name(arch, reg), off, r.saved_offset[reg], want[reg]);
}

/*
 * The rule at every offset 0..code_size must match the table, and the rule
 * for a return address must be the same except at the listed offsets,
 * where exactly `extra` more bytes are on the stack.
 */
static void check_arch_rules(const struct blob *bl, sw_arch arch, uint32_t code_size,
                             const struct arow *rows, size_t nrows,
                             const struct ra_diff *diffs, size_t ndiffs)
{
	size_t i = 0;
	sw_swu_header h;
	int rows_form;

	ck_assert_int_eq(sw_swu_decode_header(bl->p, bl->len, &h), SW_OK);
	rows_form = h.row_ops > 0;
	ck_assert_uint_eq(rows[0].from, 0);
	for (uint32_t off = 0; off <= code_size; off++) {
		sw_swu_rule r, ra;
		int32_t extra = 0;

		while (i + 1 < nrows && rows[i + 1].from <= off)
			i++;
		check_row(bl, arch, off, &rows[i]);
		for (size_t d = 0; d < ndiffs; d++)
			if (diffs[d].at == off)
				extra = diffs[d].extra;
		memset(&r, 0, sizeof r);
		memset(&ra, 0x5a, sizeof ra);
		/* A row blob's return address has its call's rule: at off - 1. */
		ck_assert_int_eq(sw_swu_decode(bl->p, bl->len, rows_form && off ? off - 1 : off, &r),
		                 SW_OK);
		ck_assert_int_eq(sw_swu_decode_return_address(bl->p, bl->len, off, &ra), SW_OK);
		r.sp_offset += extra;
		if (r.cfa_reg == (arch == SW_ARCH_X86 ? SW_X86_ESP : arch == SW_ARCH_ARM64 ?
		                  SW_ARM64_SP : SW_X64_RSP))
			r.cfa_offset += extra;
		ck_assert_msg(!memcmp(&r, &ra, sizeof r),
		              "return-address rule at %u: sp %d cfa %d, want sp %d cfa %d",
		              off, ra.sp_offset, ra.cfa_offset, r.sp_offset, r.cfa_offset);
	}
	ck_assert_int_eq(sw_swu_decode(bl->p, bl->len, code_size + 1, &(sw_swu_rule){ 0 }),
	                 SW_E_BADIP);
	ck_assert_int_eq(sw_swu_decode_return_address(bl->p, bl->len, code_size + 1,
	                                              &(sw_swu_rule){ 0 }), SW_E_BADIP);
}

/* x64 tables: the return address is always at CFA - 8. */
static void check_rules(const struct blob *bl, uint32_t code_size,
                        const struct row *rows, size_t nrows)
{
	struct arow *a = calloc(nrows, sizeof *a);

	ck_assert_ptr_nonnull(a);
	for (size_t i = 0; i < nrows; i++)
		a[i] = (struct arow){ rows[i].from, rows[i].region, rows[i].cfa_reg,
		                      rows[i].cfa_offset, rows[i].sp_offset, "-8", rows[i].saved };
	check_arch_rules(bl, SW_ARCH_X64, code_size, a, nrows, NULL, 0);
	free(a);
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

/* ---- arm64 and x86 shapes ---- */

#define FP  SW_ARM64_FP
#define LR  SW_ARM64_LR
#define SP  SW_ARM64_SP
#define X19 SW_ARM64_X19
#define X20 SW_ARM64_X20
#define X21 SW_ARM64_X21
#define X22 SW_ARM64_X22
#define X27 SW_ARM64_X27
#define X28 SW_ARM64_X28
#define D8  SW_ARM64_D8
#define D9  SW_ARM64_D9
#define D14 SW_ARM64_D14
#define D15 SW_ARM64_D15
#define ESP SW_X86_ESP
#define EBP SW_X86_EBP
#define EBX SW_X86_EBX
#define ESI SW_X86_ESI
#define EDI SW_X86_EDI

static sw_swu_builder *new_builder_for(sw_arch arch)
{
	sw_swu_builder *b = NULL;

	ck_assert_int_eq(sw_swu_builder_create(&b, arch), SW_OK);
	ck_assert_ptr_nonnull(b);
	return b;
}

/*
 *   0: stp fp, lr, [sp, #-96]!     16: stp x27, x28, [sp, #48]
 *   4: mov fp, sp                  20: stp d8, d9, [sp, #64]
 *   8: stp x19, x20, [sp, #16]     24: stp d14, d15, [sp, #80]
 *  12: stp x21, x22, [sp, #32]     28: mov x16, #0x12340; sub sp, sp, x16
 * Epilog 1 at 100: mov sp, fp; ldp (five pairs, in reverse); ldp fp, lr, [sp], #96; ret.
 * Epilog 2 at 140: add sp, sp, #0x12, lsl 12; add sp, sp, #0x340; ldp (forward); ldp fp, lr; ret.
 */
static struct blob shape_arm64_frame(void)
{
	static const unsigned pairs[5][2] = { { X19, X20 }, { X21, X22 }, { X27, X28 },
	                                      { D8, D9 }, { D14, D15 } };
	sw_swu_builder *b = new_builder_for(SW_ARCH_ARM64);
	struct blob bl;

	OK(sw_swu_push_reg_pair(b, 4, FP, LR, 96));
	OK(sw_swu_set_frame(b, 8, FP, 0));
	for (uint32_t i = 0; i < 5; i++)
		OK(sw_swu_save_reg_pair(b, 12 + 4 * i, pairs[i][0], pairs[i][1], 16 + 16 * i));
	OK(sw_swu_alloc_stack(b, 36, 0x12340));
	OK(sw_swu_end_prolog(b, 36));

	OK(sw_swu_epilog_begin(b, 100));
	OK(sw_swu_restore_sp_from_frame(b, 104, 0));
	for (uint32_t i = 0; i < 5; i++)
		OK(sw_swu_restore_reg_pair(b, 108 + 4 * i, pairs[4 - i][0], pairs[4 - i][1]));
	OK(sw_swu_pop_reg_pair(b, 128, FP, LR, 96));
	OK(sw_swu_epilog_end(b, 132));

	OK(sw_swu_epilog_begin(b, 140));
	OK(sw_swu_free_stack(b, 144, 0x12000));
	OK(sw_swu_free_stack(b, 148, 0x340));
	for (uint32_t i = 0; i < 5; i++)
		OK(sw_swu_restore_reg_pair(b, 152 + 4 * i, pairs[i][0], pairs[i][1]));
	OK(sw_swu_pop_reg_pair(b, 172, FP, LR, 96));
	OK(sw_swu_epilog_end(b, 176));
	bl = finish(b, 180);
	sw_swu_builder_destroy(b);
	return bl;
}

#define A_ALL "fp:-96 lr:-88 x19:-80 x20:-72 x21:-64 x22:-56 x27:-48 x28:-40 d8:-32 d9:-24 d14:-16 d15:-8"

START_TEST(arm64_frame)
{
	static const struct arow rows[] = {
		{   0, SW_SWU_PROLOG, SP,  0,  0, "lr",  "" },
		{   4, SW_SWU_PROLOG, SP, 96, 96, "-88", "fp:-96 lr:-88" },
		{   8, SW_SWU_PROLOG, FP, 96, 96, "-88", "fp:-96 lr:-88" },
		{  12, SW_SWU_PROLOG, FP, 96, 96, "-88", "fp:-96 lr:-88 x19:-80 x20:-72" },
		{  16, SW_SWU_PROLOG, FP, 96, 96, "-88", "fp:-96 lr:-88 x19:-80 x20:-72 x21:-64 x22:-56" },
		{  20, SW_SWU_PROLOG, FP, 96, 96, "-88", "fp:-96 lr:-88 x19:-80 x20:-72 x21:-64 x22:-56 "
		                                         "x27:-48 x28:-40" },
		{  24, SW_SWU_PROLOG, FP, 96, 96, "-88", "fp:-96 lr:-88 x19:-80 x20:-72 x21:-64 x22:-56 "
		                                         "x27:-48 x28:-40 d8:-32 d9:-24" },
		{  28, SW_SWU_PROLOG, FP, 96, 96, "-88", A_ALL },
		{  36, SW_SWU_BODY,   FP, 96, 96 + 0x12340, "-88", A_ALL },
		{ 100, SW_SWU_EPILOG, FP, 96, 96 + 0x12340, "-88", A_ALL },
		{ 104, SW_SWU_EPILOG, SP, 96, 96, "-88", A_ALL },
		{ 108, SW_SWU_EPILOG, SP, 96, 96, "-88", "fp:-96 lr:-88 x19:-80 x20:-72 x21:-64 x22:-56 "
		                                         "x27:-48 x28:-40 d8:-32 d9:-24" },
		{ 112, SW_SWU_EPILOG, SP, 96, 96, "-88", "fp:-96 lr:-88 x19:-80 x20:-72 x21:-64 x22:-56 "
		                                         "x27:-48 x28:-40" },
		{ 116, SW_SWU_EPILOG, SP, 96, 96, "-88", "fp:-96 lr:-88 x19:-80 x20:-72 x21:-64 x22:-56" },
		{ 120, SW_SWU_EPILOG, SP, 96, 96, "-88", "fp:-96 lr:-88 x19:-80 x20:-72" },
		{ 124, SW_SWU_EPILOG, SP, 96, 96, "-88", "fp:-96 lr:-88" },
		{ 128, SW_SWU_EPILOG, SP,  0,  0, "lr",  "" },
		{ 132, SW_SWU_BODY,   FP, 96, 96 + 0x12340, "-88", A_ALL },
		{ 140, SW_SWU_EPILOG, FP, 96, 96 + 0x12340, "-88", A_ALL },
		{ 144, SW_SWU_EPILOG, FP, 96, 96 + 0x340, "-88", A_ALL },
		{ 148, SW_SWU_EPILOG, FP, 96, 96, "-88", A_ALL },
		{ 152, SW_SWU_EPILOG, FP, 96, 96, "-88", "fp:-96 lr:-88 x21:-64 x22:-56 x27:-48 x28:-40 "
		                                         "d8:-32 d9:-24 d14:-16 d15:-8" },
		{ 156, SW_SWU_EPILOG, FP, 96, 96, "-88", "fp:-96 lr:-88 x27:-48 x28:-40 d8:-32 d9:-24 "
		                                         "d14:-16 d15:-8" },
		{ 160, SW_SWU_EPILOG, FP, 96, 96, "-88", "fp:-96 lr:-88 d8:-32 d9:-24 d14:-16 d15:-8" },
		{ 164, SW_SWU_EPILOG, FP, 96, 96, "-88", "fp:-96 lr:-88 d14:-16 d15:-8" },
		{ 168, SW_SWU_EPILOG, FP, 96, 96, "-88", "fp:-96 lr:-88" },
		{ 172, SW_SWU_EPILOG, SP,  0,  0, "lr",  "" },
		{ 176, SW_SWU_BODY,   FP, 96, 96 + 0x12340, "-88", A_ALL },
	};
	struct blob bl = shape_arm64_frame();
	sw_swu_header h;

	check_arch_rules(&bl, SW_ARCH_ARM64, 180, rows, NROWS(rows), NULL, 0);
	OK(sw_swu_decode_header(bl.p, bl.len, &h));
	ck_assert_uint_eq(h.arch, SW_ARCH_ARM64);
	ck_assert_uint_eq(h.prolog_ops, 8);
	ck_assert_uint_eq(h.epilogs, 2);
	ck_assert_uint_eq(h.body_ops, 0);
	/* No body ops: no optional section, flags 0. */
	ck_assert_uint_eq(bl.p[2], 0);
	free(bl.p);
}
END_TEST

/* A leaf that never saves lr: sub sp, sp, #32; str x19, [sp, #8] / ldr x19; add sp; ret. */
static struct blob shape_arm64_leaf(void)
{
	sw_swu_builder *b = new_builder_for(SW_ARCH_ARM64);
	struct blob bl;

	OK(sw_swu_alloc_stack(b, 4, 32));
	OK(sw_swu_save_reg(b, 8, X19, 8));
	OK(sw_swu_end_prolog(b, 8));
	OK(sw_swu_epilog_begin(b, 20));
	OK(sw_swu_restore_reg(b, 24, X19));
	OK(sw_swu_free_stack(b, 28, 32));
	OK(sw_swu_epilog_end(b, 32));
	bl = finish(b, 32);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(arm64_leaf)
{
	static const struct arow rows[] = {
		{  0, SW_SWU_PROLOG, SP,  0,  0, "lr", "" },
		{  4, SW_SWU_PROLOG, SP, 32, 32, "lr", "" },
		{  8, SW_SWU_BODY,   SP, 32, 32, "lr", "x19:-24" },
		{ 20, SW_SWU_EPILOG, SP, 32, 32, "lr", "x19:-24" },
		{ 24, SW_SWU_EPILOG, SP, 32, 32, "lr", "" },
		{ 28, SW_SWU_EPILOG, SP,  0,  0, "lr", "" },
		{ 32, SW_SWU_BODY,   SP, 32, 32, "lr", "x19:-24" },
	};
	static const struct arow bare_rows[] = {
		{  0, SW_SWU_BODY,   SP,  0,  0, "lr", "" },
	};
	struct blob bl = shape_arm64_leaf();
	sw_swu_builder *b = new_builder_for(SW_ARCH_ARM64);
	struct blob bare;

	check_arch_rules(&bl, SW_ARCH_ARM64, 32, rows, NROWS(rows), NULL, 0);
	/* No stack at all: CFA = SP, the return address in lr throughout. */
	bare = finish(b, 12);
	check_arch_rules(&bare, SW_ARCH_ARM64, 12, bare_rows, 1, NULL, 0);
	sw_swu_builder_destroy(b);
	free(bl.p);
	free(bare.p);
}
END_TEST

/*
 *  0: paciasp; stp fp, lr, [sp, #-16]!; mov fp, sp; str x19, [sp, #-16]!
 * Epilog A at 40: ldr x19, [sp], #16; ldp fp, lr, [sp], #16; autiasp; ret.
 * Epilog B at 60: ldr x19, [sp], #16; ldp fp, lr, [sp], #16; retaa.
 */
static struct blob shape_arm64_pac(void)
{
	sw_swu_builder *b = new_builder_for(SW_ARCH_ARM64);
	struct blob bl;

	OK(sw_swu_sign_return_address(b, 4));
	OK(sw_swu_push_reg_pair(b, 8, FP, LR, 16));
	OK(sw_swu_set_frame(b, 12, FP, 0));
	OK(sw_swu_push_reg_sized(b, 16, X19, 16));
	OK(sw_swu_end_prolog(b, 16));
	OK(sw_swu_epilog_begin(b, 40));
	OK(sw_swu_pop_reg_sized(b, 44, X19, 16));
	OK(sw_swu_pop_reg_pair(b, 48, FP, LR, 16));
	OK(sw_swu_auth_return_address(b, 52));
	OK(sw_swu_epilog_end(b, 56));
	OK(sw_swu_epilog_begin(b, 60));
	OK(sw_swu_pop_reg_sized(b, 64, X19, 16));
	OK(sw_swu_pop_reg_pair(b, 68, FP, LR, 16));
	OK(sw_swu_epilog_end(b, 72));
	bl = finish(b, 80);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(arm64_pac)
{
	static const struct arow rows[] = {
		{  0, SW_SWU_PROLOG, SP,  0,  0, "lr",  "" },
		{  4, SW_SWU_PROLOG, SP,  0,  0, "lr!", "" },
		{  8, SW_SWU_PROLOG, SP, 16, 16, "-8!", "fp:-16 lr:-8" },
		{ 12, SW_SWU_PROLOG, FP, 16, 16, "-8!", "fp:-16 lr:-8" },
		{ 16, SW_SWU_BODY,   FP, 16, 32, "-8!", "fp:-16 lr:-8 x19:-32" },
		{ 40, SW_SWU_EPILOG, FP, 16, 32, "-8!", "fp:-16 lr:-8 x19:-32" },
		{ 44, SW_SWU_EPILOG, FP, 16, 16, "-8!", "fp:-16 lr:-8" },
		{ 48, SW_SWU_EPILOG, SP,  0,  0, "lr!", "" },
		{ 52, SW_SWU_EPILOG, SP,  0,  0, "lr",  "" },
		{ 56, SW_SWU_BODY,   FP, 16, 32, "-8!", "fp:-16 lr:-8 x19:-32" },
		{ 60, SW_SWU_EPILOG, FP, 16, 32, "-8!", "fp:-16 lr:-8 x19:-32" },
		{ 64, SW_SWU_EPILOG, FP, 16, 16, "-8!", "fp:-16 lr:-8" },
		{ 68, SW_SWU_EPILOG, SP,  0,  0, "lr!", "" },
		{ 72, SW_SWU_BODY,   FP, 16, 32, "-8!", "fp:-16 lr:-8 x19:-32" },
	};
	struct blob bl = shape_arm64_pac();

	check_arch_rules(&bl, SW_ARCH_ARM64, 80, rows, NROWS(rows), NULL, 0);
	free(bl.p);
}
END_TEST

/*
 * x86 EBP frame: push ebp; mov ebp, esp; push esi; push edi; sub esp, 20 /
 * push eax; push 5; call f; add esp, 8 (cdecl: the caller pops) /
 * lea esp, [ebp - 8]; pop edi; pop esi; pop ebp; ret.
 */
static struct blob shape_x86_ebp(void)
{
	sw_swu_builder *b = new_builder_for(SW_ARCH_X86);
	struct blob bl;

	OK(sw_swu_push_reg(b, 1, EBP));
	OK(sw_swu_set_frame(b, 3, EBP, 0));
	OK(sw_swu_push_reg(b, 4, ESI));
	OK(sw_swu_push_reg(b, 5, EDI));
	OK(sw_swu_alloc_stack(b, 8, 20));
	OK(sw_swu_end_prolog(b, 8));
	OK(sw_swu_push_args(b, 21, 4));
	OK(sw_swu_push_args(b, 23, 4));
	OK(sw_swu_pop_args(b, 31, 8));          /* call f at 23..28 */
	OK(sw_swu_epilog_begin(b, 40));
	OK(sw_swu_restore_sp_from_frame(b, 43, -8));
	OK(sw_swu_pop_reg(b, 44, EDI));
	OK(sw_swu_pop_reg(b, 45, ESI));
	OK(sw_swu_pop_reg(b, 46, EBP));
	OK(sw_swu_epilog_end(b, 47));
	bl = finish(b, 50);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(x86_ebp_frame)
{
	static const struct arow rows[] = {
		{  0, SW_SWU_PROLOG, ESP,  4,  4, "-4", "" },
		{  1, SW_SWU_PROLOG, ESP,  8,  8, "-4", "ebp:-8" },
		{  3, SW_SWU_PROLOG, EBP,  8,  8, "-4", "ebp:-8" },
		{  4, SW_SWU_PROLOG, EBP,  8, 12, "-4", "ebp:-8 esi:-12" },
		{  5, SW_SWU_PROLOG, EBP,  8, 16, "-4", "ebp:-8 esi:-12 edi:-16" },
		{  8, SW_SWU_BODY,   EBP,  8, 36, "-4", "ebp:-8 esi:-12 edi:-16" },
		{ 21, SW_SWU_BODY,   EBP,  8, 40, "-4", "ebp:-8 esi:-12 edi:-16" },
		{ 23, SW_SWU_BODY,   EBP,  8, 44, "-4", "ebp:-8 esi:-12 edi:-16" },
		{ 31, SW_SWU_BODY,   EBP,  8, 36, "-4", "ebp:-8 esi:-12 edi:-16" },
		{ 40, SW_SWU_EPILOG, EBP,  8, 36, "-4", "ebp:-8 esi:-12 edi:-16" },
		{ 43, SW_SWU_EPILOG, ESP, 16, 16, "-4", "ebp:-8 esi:-12 edi:-16" },
		{ 44, SW_SWU_EPILOG, ESP, 12, 12, "-4", "ebp:-8 esi:-12" },
		{ 45, SW_SWU_EPILOG, ESP,  8,  8, "-4", "ebp:-8" },
		{ 46, SW_SWU_EPILOG, ESP,  4,  4, "-4", "" },
		{ 47, SW_SWU_BODY,   EBP,  8, 36, "-4", "ebp:-8 esi:-12 edi:-16" },
	};
	struct blob bl = shape_x86_ebp();
	sw_swu_header h;

	/* A cdecl call: at its return address the arguments are pushed either way. */
	check_arch_rules(&bl, SW_ARCH_X86, 50, rows, NROWS(rows), NULL, 0);
	OK(sw_swu_decode_header(bl.p, bl.len, &h));
	ck_assert_uint_eq(h.body_ops, 3);
	ck_assert_uint_eq(bl.p[2], 1);          /* the body op section's flag */
	free(bl.p);
}
END_TEST

/*
 * x86 ESP frame: push ebx; push esi; push edi; push ebp; sub esp, 12 /
 * push eax; push ecx; call cdecl_f (12..17); add esp, 8 /
 * push 1; push 2; call stdcall_g (24..29, pops 8) /
 * sub esp, 16; call stdcall_h (33..38, pops 16), and the epilog right after:
 * add esp, 12; pop ebp; pop edi; pop esi; pop ebx; ret /
 * push eax; call stdcall_k (49..54, pops 4).
 */
static struct blob shape_x86_esp(void)
{
	sw_swu_builder *b = new_builder_for(SW_ARCH_X86);
	struct blob bl;

	OK(sw_swu_push_reg(b, 1, EBX));
	OK(sw_swu_push_reg(b, 2, ESI));
	OK(sw_swu_push_reg(b, 3, EDI));
	OK(sw_swu_push_reg(b, 4, EBP));
	OK(sw_swu_alloc_stack(b, 7, 12));
	OK(sw_swu_end_prolog(b, 7));
	OK(sw_swu_push_args(b, 11, 4));
	OK(sw_swu_push_args(b, 12, 4));
	OK(sw_swu_pop_args(b, 20, 8));
	OK(sw_swu_push_args(b, 22, 4));
	OK(sw_swu_push_args(b, 24, 4));
	OK(sw_swu_call_pops_args(b, 29, 8));
	OK(sw_swu_push_args(b, 33, 16));
	OK(sw_swu_call_pops_args(b, 38, 16));
	OK(sw_swu_epilog_begin(b, 38));
	OK(sw_swu_free_stack(b, 41, 12));
	OK(sw_swu_pop_reg(b, 42, EBP));
	OK(sw_swu_pop_reg(b, 43, EDI));
	OK(sw_swu_pop_reg(b, 44, ESI));
	OK(sw_swu_pop_reg(b, 45, EBX));
	OK(sw_swu_epilog_end(b, 46));
	OK(sw_swu_push_args(b, 49, 4));
	OK(sw_swu_call_pops_args(b, 54, 4));
	bl = finish(b, 60);
	sw_swu_builder_destroy(b);
	return bl;
}

#define X_ALL "ebx:-8 esi:-12 edi:-16 ebp:-20"

START_TEST(x86_esp_frame)
{
	static const struct arow rows[] = {
		{  0, SW_SWU_PROLOG, ESP,  4,  4, "-4", "" },
		{  1, SW_SWU_PROLOG, ESP,  8,  8, "-4", "ebx:-8" },
		{  2, SW_SWU_PROLOG, ESP, 12, 12, "-4", "ebx:-8 esi:-12" },
		{  3, SW_SWU_PROLOG, ESP, 16, 16, "-4", "ebx:-8 esi:-12 edi:-16" },
		{  4, SW_SWU_PROLOG, ESP, 20, 20, "-4", X_ALL },
		{  7, SW_SWU_BODY,   ESP, 32, 32, "-4", X_ALL },
		{ 11, SW_SWU_BODY,   ESP, 36, 36, "-4", X_ALL },
		{ 12, SW_SWU_BODY,   ESP, 40, 40, "-4", X_ALL },
		{ 20, SW_SWU_BODY,   ESP, 32, 32, "-4", X_ALL },
		{ 22, SW_SWU_BODY,   ESP, 36, 36, "-4", X_ALL },
		{ 24, SW_SWU_BODY,   ESP, 40, 40, "-4", X_ALL },
		{ 29, SW_SWU_BODY,   ESP, 32, 32, "-4", X_ALL },
		{ 33, SW_SWU_BODY,   ESP, 48, 48, "-4", X_ALL },
		{ 38, SW_SWU_EPILOG, ESP, 32, 32, "-4", X_ALL },
		{ 41, SW_SWU_EPILOG, ESP, 20, 20, "-4", X_ALL },
		{ 42, SW_SWU_EPILOG, ESP, 16, 16, "-4", "ebx:-8 esi:-12 edi:-16" },
		{ 43, SW_SWU_EPILOG, ESP, 12, 12, "-4", "ebx:-8 esi:-12" },
		{ 44, SW_SWU_EPILOG, ESP,  8,  8, "-4", "ebx:-8" },
		{ 45, SW_SWU_EPILOG, ESP,  4,  4, "-4", "" },
		{ 46, SW_SWU_BODY,   ESP, 32, 32, "-4", X_ALL },
		{ 49, SW_SWU_BODY,   ESP, 36, 36, "-4", X_ALL },
		{ 54, SW_SWU_BODY,   ESP, 32, 32, "-4", X_ALL },
	};
	/* At each callee-pops call's return address the call is still in progress. */
	static const struct ra_diff diffs[] = { { 29, 8 }, { 38, 16 }, { 54, 4 } };
	struct blob bl = shape_x86_esp();
	sw_swu_rule r;

	check_arch_rules(&bl, SW_ARCH_X86, 60, rows, NROWS(rows), diffs, NROWS(diffs));
	/* The call before the epilog: still an epilog offset, with the arguments pushed. */
	OK(sw_swu_decode_return_address(bl.p, bl.len, 38, &r));
	ck_assert_uint_eq(r.region, SW_SWU_EPILOG);
	ck_assert_int_eq(r.cfa_offset, 48);
	free(bl.p);
}
END_TEST

/* Where the transition blocks' return address lies, as the generic Frame code reads it. */
START_TEST(arch_tables)
{
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_X86, SW_X86_EBP), "ebp");
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_X86, SW_X86_EIP), "eip");
	ck_assert_ptr_null(sw_arch_reg_name(SW_ARCH_X86, SW_X86_NREGS));
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_ARM64, SW_ARM64_X19), "x19");
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_ARM64, FP), "fp");
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_ARM64, LR), "lr");
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_ARM64, SP), "sp");
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_ARM64, SW_ARM64_PC), "pc");
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_ARM64, D8), "d8");
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_ARM64, D15), "d15");
	ck_assert_ptr_null(sw_arch_reg_name(SW_ARCH_ARM64, SW_ARM64_NREGS));
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
	PATCH(1, 0x12, SW_OK);                          /* x86: push esi */
	PATCH(1, 0x13, SW_E_BADMETA);                   /* arm64: push x6, not callee-saved */
	PATCH(1, 0x14, SW_E_UNSUPPORTED);               /* no arch 4 */
	PATCH(1, 0x1f, SW_E_UNSUPPORTED);               /* unknown arch */
	PATCH(1, 0x10, SW_E_UNSUPPORTED);               /* arch none */
	PATCH(2, 0x02, SW_E_TRUNCATED);                 /* GC: 16 locations after 1 op byte */
	PATCH(2, 0x40, SW_E_UNSUPPORTED);               /* unknown flags (0x20 is EH clauses) */
	PATCH(2, 0x08, SW_E_BADMETA);                   /* compact without rows */
	PATCH(2, 0x7f, SW_E_UNSUPPORTED);
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

/* Run `call` on a fresh builder of `arch` prepared by `setup`; expect `want`. */
#define MISUSE_ON(arch, want, setup, call) do { \
	sw_swu_builder *b = new_builder_for(arch); \
	setup; \
	ck_assert_int_eq((call), (want)); \
	sw_swu_builder_destroy(b); \
} while (0)
#define MISUSE_A(want, setup, call) MISUSE_ON(SW_ARCH_ARM64, want, setup, call)
#define MISUSE_X(want, setup, call) MISUSE_ON(SW_ARCH_X86, want, setup, call)

/* stp fp, lr, [sp, #-32]!; mov fp, sp; stp x19, x20, [sp, #16] */
#define A_FRAME OK(sw_swu_push_reg_pair(b, 4, FP, LR, 32)); OK(sw_swu_set_frame(b, 8, FP, 0)); \
                OK(sw_swu_save_reg_pair(b, 12, X19, X20, 16)); OK(sw_swu_end_prolog(b, 12))
/* push ebx; sub esp, 8 */
#define X_FRAME OK(sw_swu_push_reg(b, 1, EBX)); OK(sw_swu_alloc_stack(b, 4, 8)); \
                OK(sw_swu_end_prolog(b, 4))

START_TEST(builder_misuse_arch)
{
	sw_swu_builder *nb = NULL;
	size_t len;

	/* Every architecture has a builder now. */
	OK(sw_swu_builder_create(&nb, SW_ARCH_X86));
	sw_swu_builder_destroy(nb);
	OK(sw_swu_builder_create(&nb, SW_ARCH_ARM64));
	sw_swu_builder_destroy(nb);
	ck_assert_int_eq(sw_swu_push_reg_pair(NULL, 4, FP, LR, 16), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_sign_return_address(NULL, 4), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_pop_reg_pair(NULL, 4, FP, LR, 16), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_auth_return_address(NULL, 4), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_push_args(NULL, 4, 4), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_call_pops_args(NULL, 4, 4), SW_E_INVAL);

	/* Wrong architecture: pairs and pointer authentication are arm64's. */
	MISUSE(SW_E_INVAL, , sw_swu_push_reg_pair(b, 1, RBX, RBP, 16));
	MISUSE(SW_E_INVAL, , sw_swu_push_reg_sized(b, 1, RBX, 16));
	MISUSE(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 32)), sw_swu_save_reg_pair(b, 8, RBX, RBP, 0));
	MISUSE(SW_E_INVAL, , sw_swu_sign_return_address(b, 1));
	MISUSE(SW_E_INVAL, FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_auth_return_address(b, 21));
	MISUSE(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, RBX)); OK(sw_swu_push_reg(b, 2, RBP));
	       OK(sw_swu_end_prolog(b, 2)); OK(sw_swu_epilog_begin(b, 10)),
	       sw_swu_pop_reg_pair(b, 11, RBP, RBX, 16));
	MISUSE_X(SW_E_INVAL, , sw_swu_push_reg_pair(b, 1, EBX, ESI, 8));
	MISUSE_X(SW_E_INVAL, , sw_swu_sign_return_address(b, 1));
	MISUSE_X(SW_E_INVAL, , sw_swu_push_reg(b, 1, SW_X86_EAX));
	MISUSE_X(SW_E_INVAL, , sw_swu_push_reg(b, 1, ESP));
	MISUSE_X(SW_E_INVAL, , sw_swu_push_reg(b, 1, SW_X86_NREGS));
	/* x86's only frame register is ebp. */
	MISUSE_X(SW_E_INVAL, OK(sw_swu_push_reg(b, 1, EBX)), sw_swu_set_frame(b, 3, EBX, 0));

	/* arm64 registers: callee-saved (and lr), distinct, not saved yet. */
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_pair(b, 4, SW_ARM64_X0, LR, 16));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_pair(b, 4, FP, SP, 16));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_pair(b, 4, FP, SW_ARM64_PC, 16));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_pair(b, 4, X19, X19, 16));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_pair(b, 4, X19, 1000, 16));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_pair(b, 4, X19, UINT32_MAX, 16));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_sized(b, 4, SW_ARM64_X0 + 18, 16));
	MISUSE_A(SW_E_INVAL, OK(sw_swu_push_reg_pair(b, 4, FP, LR, 16)),
	         sw_swu_push_reg_pair(b, 8, X19, LR, 16));
	/* arm64 SP moves in multiples of 16, and a pair needs 16 bytes. */
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg(b, 4, X19));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_pair(b, 4, FP, LR, 8));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_pair(b, 4, FP, LR, 24));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_pair(b, 4, FP, LR, 0));
	MISUSE_A(SW_E_INVAL, , sw_swu_push_reg_sized(b, 4, X19, 8));
	MISUSE_A(SW_E_INVAL, , sw_swu_alloc_stack(b, 4, 8));
	MISUSE_A(SW_E_INVAL, , sw_swu_alloc_stack(b, 4, 40));
	MISUSE_A(SW_E_LIMIT, , sw_swu_push_reg_pair(b, 4, FP, LR, SW_SWU_MAX_FRAME + 16));
	MISUSE_A(SW_E_LIMIT, , sw_swu_alloc_stack(b, 4, SW_SWU_MAX_FRAME + 16));
	/* Slots: 8-aligned, inside the frame, clear of each other. */
	MISUSE_A(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 32)), sw_swu_save_reg_pair(b, 8, X19, X20, 4));
	MISUSE_A(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 32)), sw_swu_save_reg(b, 8, X19, 12));
	MISUSE_A(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 32)), sw_swu_save_reg_pair(b, 8, X19, X20, 24));
	MISUSE_A(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 32)); OK(sw_swu_save_reg(b, 8, X21, 8)),
	         sw_swu_save_reg_pair(b, 12, X19, X20, 0));
	MISUSE_A(SW_E_INVAL, OK(sw_swu_alloc_stack(b, 4, 32)), sw_swu_save_reg_pair(b, 8, X19, X19, 0));
	/* A failed pair saves neither register. */
	MISUSE_A(SW_OK, OK(sw_swu_alloc_stack(b, 4, 32));
	         ck_assert_int_eq(sw_swu_save_reg_pair(b, 8, X19, X20, 24), SW_E_INVAL);
	         sw_swu_builder_reset(b); OK(sw_swu_alloc_stack(b, 4, 32)),
	         sw_swu_save_reg_pair(b, 8, X19, X20, 16));
	/* The frame register must be fp, saved first; SP from it stays aligned. */
	MISUSE_A(SW_E_INVAL, OK(sw_swu_push_reg_pair(b, 4, X19, LR, 16)), sw_swu_set_frame(b, 8, X19, 0));
	MISUSE_A(SW_E_INVAL, , sw_swu_set_frame(b, 4, FP, 0));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20)),
	         sw_swu_restore_sp_from_frame(b, 24, -8));
	/* Pointer authentication: sign lr before saving it, once; authenticate it once reloaded. */
	MISUSE_A(SW_E_INVAL, OK(sw_swu_push_reg_pair(b, 4, FP, LR, 16)), sw_swu_sign_return_address(b, 8));
	MISUSE_A(SW_E_INVAL, OK(sw_swu_sign_return_address(b, 4)), sw_swu_sign_return_address(b, 8));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_auth_return_address(b, 24));
	MISUSE_A(SW_E_INVAL, OK(sw_swu_sign_return_address(b, 2)); A_FRAME; OK(sw_swu_epilog_begin(b, 20)),
	         sw_swu_auth_return_address(b, 24));
	MISUSE_A(SW_E_STATE, OK(sw_swu_end_prolog(b, 0)), sw_swu_sign_return_address(b, 4));
	MISUSE_A(SW_E_STATE, , sw_swu_auth_return_address(b, 4));
	/* Pops: top slots, in order, sizes as pushed, aligned; restores: adjacent pairs. */
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_pop_reg_pair(b, 24, FP, LR, 32));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20));
	         OK(sw_swu_restore_reg_pair(b, 24, X19, X20)), sw_swu_pop_reg_pair(b, 28, LR, FP, 32));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20));
	         OK(sw_swu_restore_reg_pair(b, 24, X19, X20)), sw_swu_pop_reg_pair(b, 28, FP, LR, 48));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20));
	         OK(sw_swu_restore_reg_pair(b, 24, X19, X20)), sw_swu_pop_reg_pair(b, 28, FP, LR, 24));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20));
	         OK(sw_swu_restore_reg_pair(b, 24, X19, X20)), sw_swu_pop_reg_pair(b, 28, FP, LR, 8));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20));
	         OK(sw_swu_restore_reg_pair(b, 24, X19, X20)), sw_swu_pop_reg_sized(b, 28, FP, 16));
	/* The pair's other slots are still live above SP: not popped past them. */
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_pop_reg_pair(b, 24, FP, LR, 32));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_restore_reg_pair(b, 24, X20, X19));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_restore_reg_pair(b, 24, FP, X19));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_restore_reg_pair(b, 24, X19, X21));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_free_stack(b, 24, 8));
	MISUSE_A(SW_E_STATE, A_FRAME, sw_swu_pop_reg_pair(b, 24, FP, LR, 32));
	MISUSE_A(SW_E_STATE, A_FRAME, sw_swu_restore_reg_pair(b, 24, X19, X20));
	MISUSE_A(SW_E_STATE, A_FRAME; OK(sw_swu_epilog_begin(b, 20)), sw_swu_push_reg_pair(b, 24, X21, X22, 16));
	/* An epilog may return with retaa: lr still signed at its end. */
	MISUSE_A(SW_OK, OK(sw_swu_sign_return_address(b, 4)); OK(sw_swu_push_reg_pair(b, 8, FP, LR, 16));
	         OK(sw_swu_end_prolog(b, 8)); OK(sw_swu_epilog_begin(b, 20));
	         OK(sw_swu_pop_reg_pair(b, 24, FP, LR, 16)), sw_swu_epilog_end(b, 28));
	/* But lr may not be left saved, nor SP moved above its slot. */
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20));
	         OK(sw_swu_restore_reg_pair(b, 24, X19, X20)); OK(sw_swu_restore_reg(b, 28, FP)),
	         sw_swu_free_stack(b, 32, 32));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20));
	         OK(sw_swu_restore_reg_pair(b, 24, X19, X20)); OK(sw_swu_restore_reg(b, 28, FP));
	         OK(sw_swu_restore_reg(b, 32, LR)), sw_swu_epilog_end(b, 36));
	MISUSE_A(SW_E_INVAL, A_FRAME; OK(sw_swu_epilog_begin(b, 20));
	         OK(sw_swu_restore_reg_pair(b, 24, X19, X20)); OK(sw_swu_restore_reg(b, 28, FP)),
	         sw_swu_epilog_end(b, 36));

	/* Body ops: after the prolog, outside epilogs, ascending, whole slots, never below the body. */
	MISUSE_X(SW_E_STATE, , sw_swu_push_args(b, 1, 4));
	MISUSE_X(SW_E_STATE, OK(sw_swu_push_reg(b, 1, EBX)), sw_swu_push_args(b, 2, 4));
	MISUSE_X(SW_E_STATE, X_FRAME; OK(sw_swu_epilog_begin(b, 10)), sw_swu_push_args(b, 11, 4));
	MISUSE_X(SW_E_INVAL, X_FRAME, sw_swu_push_args(b, 4, 4));
	MISUSE_X(SW_E_INVAL, X_FRAME; OK(sw_swu_push_args(b, 6, 4)), sw_swu_pop_args(b, 6, 4));
	MISUSE_X(SW_E_INVAL, X_FRAME; OK(sw_swu_epilog_begin(b, 10)); OK(sw_swu_free_stack(b, 13, 8));
	         OK(sw_swu_pop_reg(b, 14, EBX)); OK(sw_swu_epilog_end(b, 15)), sw_swu_push_args(b, 15, 4));
	MISUSE_X(SW_E_INVAL, X_FRAME, sw_swu_push_args(b, 6, 0));
	MISUSE_X(SW_E_INVAL, X_FRAME, sw_swu_push_args(b, 6, 2));
	MISUSE_X(SW_E_INVAL, X_FRAME, sw_swu_push_args(b, 6, 6));
	MISUSE_X(SW_E_LIMIT, X_FRAME, sw_swu_push_args(b, 6, SW_SWU_MAX_FRAME));
	MISUSE_X(SW_E_INVAL, X_FRAME, sw_swu_pop_args(b, 6, 4));
	MISUSE_X(SW_E_INVAL, X_FRAME, sw_swu_call_pops_args(b, 6, 4));
	MISUSE_X(SW_E_INVAL, X_FRAME; OK(sw_swu_push_args(b, 6, 4)), sw_swu_pop_args(b, 8, 8));
	MISUSE_X(SW_E_INVAL, X_FRAME; OK(sw_swu_push_args(b, 6, 4)), sw_swu_call_pops_args(b, 8, 8));
	MISUSE_X(SW_E_LIMIT, X_FRAME, sw_swu_push_args(b, SW_SWU_MAX_CODE_SIZE + 1, 4));
	MISUSE_A(SW_E_INVAL, A_FRAME, sw_swu_push_args(b, 16, 8));
	MISUSE_A(SW_OK, A_FRAME, sw_swu_push_args(b, 16, 16));
	MISUSE(SW_E_INVAL, FRAME, sw_swu_push_args(b, 12, 4));
	MISUSE(SW_OK, FRAME, sw_swu_push_args(b, 12, 8));
	/* Each epilog starts, and the method ends, with its arguments popped. */
	MISUSE_X(SW_E_INVAL, X_FRAME; OK(sw_swu_push_args(b, 6, 4)), sw_swu_epilog_begin(b, 10));
	MISUSE_X(SW_E_INVAL, X_FRAME; OK(sw_swu_push_args(b, 6, 4)), sw_swu_finish(b, 20, NULL, 0, &len));
	MISUSE_X(SW_E_INVAL, X_FRAME; OK(sw_swu_push_args(b, 6, 4)); OK(sw_swu_pop_args(b, 9, 4)),
	         sw_swu_finish(b, 8, NULL, 0, &len));
	/* ...which does not stick: pop them and finish. */
	MISUSE_X(SW_E_LIMIT, X_FRAME; OK(sw_swu_push_args(b, 6, 4));
	         ck_assert_int_eq(sw_swu_finish(b, 20, NULL, 0, &len), SW_E_INVAL);
	         OK(sw_swu_call_pops_args(b, 11, 4)), sw_swu_finish(b, 20, NULL, 0, &len));
	/* Errors stick for the new ops too. */
	MISUSE_A(SW_E_INVAL, ck_assert_int_eq(sw_swu_push_reg_pair(b, 4, FP, LR, 8), SW_E_INVAL),
	         sw_swu_push_reg_pair(b, 4, FP, LR, 16));
}
END_TEST

/* Hand-made x86 blobs with a body op section, and what the validator says. */
START_TEST(bad_body_ops)
{
	/*
	 * v1 x86, flags 1, code 20, prolog 1, 1 op, 1 epilog, 2 body ops;
	 * end 1: push ebx; epilog at 10, 3 bytes, 1 op in 3 bytes: pop ebx at +1;
	 * body: end 4: push_args 4, end 8: call_pops_args 4.
	 */
	static const unsigned char good[] = { 0xe5, 0x12, 1, 20, 1, 1, 1, 2, 1, 0x01, 3,
	                                      9, 3, 1, 3, 1, 0x07, 3,
	                                      3, 0x40, 4, 4, 0x42, 4 };
	unsigned char b[sizeof good + 4];
	sw_swu_rule r;

	ck_assert_int_eq(validate_bytes(good, sizeof good), SW_OK);
	OK(sw_swu_decode(good, sizeof good, 8, &r));
	ck_assert_int_eq(r.sp_offset, 8);
	OK(sw_swu_decode_return_address(good, sizeof good, 8, &r));
	ck_assert_int_eq(r.sp_offset, 12);
	OK(sw_swu_decode_return_address(good, sizeof good, 7, &r));
	ck_assert_int_eq(r.sp_offset, 12);
	OK(sw_swu_decode_return_address(good, sizeof good, 9, &r));
	ck_assert_int_eq(r.sp_offset, 8);

#define PATCH(i, v, want) do { memcpy(b, good, sizeof good); b[i] = (v); \
	ck_assert_int_eq(validate_bytes(b, sizeof good), (want)); } while (0)
	PATCH(2, 0, SW_E_BADMETA);              /* no flag: the count is read as ops */
	PATCH(2, 0x41, SW_E_UNSUPPORTED);       /* an unknown section */
	PATCH(2, 9, SW_E_BADMETA);              /* compact without rows */
	PATCH(2, 5, SW_E_BADMETA);              /* rows cannot have body ops */
	PATCH(7, 3, SW_E_TRUNCATED);            /* a third body op that is not there */
	PATCH(7, 1, SW_E_BADMETA);              /* one op: trailing bytes, args left pushed */
	PATCH(7, 20, SW_E_BADMETA);             /* more ops than body bytes */
	PATCH(18, 0, SW_E_BADMETA);             /* ends at the prolog's end */
	PATCH(18, 10, SW_E_BADMETA);            /* ends inside the epilog */
	PATCH(18, 12, SW_E_BADMETA);            /* ends at the epilog's return */
	PATCH(18, 9, SW_E_BADMETA);             /* pushed at the epilog's start */
	PATCH(21, 6, SW_OK);                    /* the call ends where the epilog starts */
	PATCH(21, 7, SW_E_BADMETA);             /* ends inside the epilog */
	PATCH(21, 9, SW_E_BADMETA);             /* ends at the epilog's end */
	PATCH(21, 12, SW_E_BADMETA);            /* after the epilog: pushed across it */
	PATCH(19, 0x01, SW_E_BADMETA);          /* a prolog op in the body */
	PATCH(19, 0x05, SW_E_BADMETA);          /* an epilog op in the body */
	PATCH(19, 0x20, SW_E_BADMETA);          /* push_pair in the body */
	PATCH(19, 0x43, SW_E_BADMETA);          /* a reserved x86 opcode */
	PATCH(20, 2, SW_E_BADMETA);             /* not a whole slot */
	PATCH(20, 0, SW_E_BADMETA);             /* nothing */
	PATCH(20, 8, SW_E_BADMETA);             /* 4 bytes left pushed at the end */
	PATCH(23, 8, SW_E_BADMETA);             /* pops more than pushed */
	PATCH(22, 0x41, SW_OK);                 /* pop_args: fine too */
	PATCH(21, 17, SW_E_BADMETA);            /* beyond the code size */
	/* A body op in an epilog's op list, and an arm64 op in an x86 prolog. */
	PATCH(16, 0x41, SW_E_BADMETA);
	PATCH(9, 0x21, SW_E_BADMETA);
#undef PATCH

	/* Both after the epilog, the second at the code size. */
	memcpy(b, good, sizeof good);
	b[18] = 13;
	b[21] = 6;
	ck_assert_int_eq(validate_bytes(b, sizeof good), SW_OK);
	OK(sw_swu_decode_return_address(b, sizeof good, 20, &r));
	ck_assert_int_eq(r.sp_offset, 12);
	OK(sw_swu_decode(b, sizeof good, 20, &r));
	ck_assert_int_eq(r.sp_offset, 8);
	b[21] = 7;
	ck_assert_int_eq(validate_bytes(b, sizeof good), SW_E_BADMETA);
	/* The call ending at the epilog's start: a return address there has the arguments. */
	memcpy(b, good, sizeof good);
	b[21] = 6;
	OK(sw_swu_decode_return_address(b, sizeof good, 10, &r));
	ck_assert_int_eq(r.region, SW_SWU_EPILOG);
	ck_assert_int_eq(r.sp_offset, 12);
	OK(sw_swu_decode(b, sizeof good, 10, &r));
	ck_assert_int_eq(r.region, SW_SWU_EPILOG);
	ck_assert_int_eq(r.sp_offset, 8);
	OK(sw_swu_decode_return_address(b, sizeof good, 11, &r));
	ck_assert_int_eq(r.sp_offset, 4);

	/* Trailing bytes after the body ops. */
	memcpy(b, good, sizeof good);
	b[sizeof good] = 0;
	ck_assert_int_eq(validate_bytes(b, sizeof good + 1), SW_E_BADMETA);
	/* Flag set, no body ops: nothing to read, still valid. */
	{
		static const unsigned char none[] = { 0xe5, 0x12, 1, 20, 1, 1, 0, 0, 1, 0x01, 3 };
		sw_swu_header h;

		ck_assert_int_eq(validate_bytes(none, sizeof none), SW_OK);
		OK(sw_swu_decode_header(none, sizeof none, &h));
		ck_assert_uint_eq(h.body_ops, 0);
	}
	/* arm64 ops that x64 has no use for. */
	{
		/* v1 x64, code 16, prolog 4, 1 op: sign_ra at 4 */
		static const unsigned char sign[] = { 0xe5, 0x11, 0, 16, 4, 1, 0, 4, 0x23 };
		static const unsigned char asign[] = { 0xe5, 0x13, 0, 16, 4, 1, 0, 4, 0x23 };

		ck_assert_int_eq(validate_bytes(sign, sizeof sign), SW_E_BADMETA);
		ck_assert_int_eq(validate_bytes(asign, sizeof asign), SW_OK);
		OK(sw_swu_decode(asign, sizeof asign, 4, &r));
		ck_assert_uint_eq(r.ra_signed, 1);
		ck_assert_uint_eq(r.ra_in_reg, 1);
		OK(sw_swu_decode(asign, sizeof asign, 3, &r));
		ck_assert_uint_eq(r.ra_signed, 0);
	}
}
END_TEST

/* ---- GC information ---- */

#define RAX SW_X64_RAX
#define RDI SW_X64_RDI
#define RIP SW_X64_RIP
#define EAX SW_X86_EAX
#define ECX SW_X86_ECX
#define EIP SW_X86_EIP
#define X0  SW_ARM64_X0

/* Up to this many live locations at one offset in the tests. */
#define GC_MAX_LIVE 256

struct gc_set {
	unsigned n;
	int stop_after;         /* stop the enumeration after this many (0: never) */
	sw_swu_gc_slot s[GC_MAX_LIVE];
};

static int gc_collect(void *data, const sw_swu_gc_slot *slot)
{
	struct gc_set *g = data;

	if (g->n < GC_MAX_LIVE)
		g->s[g->n] = *slot;
	g->n++;
	return g->stop_after && g->n >= (unsigned)g->stop_after;
}

/* The live set as swdump prints it: "rbx, [cfa - 24] interior pinned". */
static void gc_text(sw_arch arch, const struct gc_set *g, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = 0;
	for (unsigned i = 0; i < g->n && i < GC_MAX_LIVE; i++) {
		const sw_swu_gc_slot *s = &g->s[i];
		char where[32];

		if (s->in_register)
			snprintf(where, sizeof where, "%s", sw_arch_reg_name(arch, s->reg));
		else
			snprintf(where, sizeof where, "[cfa %c %d]", s->cfa_offset < 0 ? '-' : '+',
			         abs(s->cfa_offset));
		at += (size_t)snprintf(buf + at, len - at, "%s%s%s%s", i ? ", " : "", where,
		                       s->flags & SW_GC_INTERIOR ? " interior" : "",
		                       s->flags & SW_GC_PINNED ? " pinned" : "");
		ck_assert_uint_lt(at, len);
	}
}

/* The documented order, computed independently: registers, slots, flags. */
static int64_t gc_key(const sw_swu_gc_slot *s)
{
	int64_t where = s->in_register ? (int64_t)s->reg - ((int64_t)1 << 40) : s->cfa_offset;

	return where * 4 + s->flags;
}

/* Registers that may hold a reference: all but SP and IP. */
static int gc_reg_ok(sw_arch arch, unsigned reg)
{
	switch (arch) {
	case SW_ARCH_X64: return reg != RSP && reg != RIP;
	case SW_ARCH_X86: return reg != ESP && reg != EIP;
	default:          return reg != SP && reg != SW_ARM64_PC;
	}
}

/* One row of a GC table: the live set from `from` to the next row. */
struct gcrow {
	uint32_t from;
	const char *live;
};

/* The live set at EVERY offset 0..code_size must match the table. */
static void check_gc_table(const struct blob *bl, sw_arch arch, uint32_t code_size,
                           const struct gcrow *rows, size_t nrows)
{
	size_t i = 0;
	char text[1024];

	ck_assert_uint_eq(rows[0].from, 0);
	for (uint32_t off = 0; off <= code_size; off++) {
		struct gc_set g = { 0 };

		while (i + 1 < nrows && rows[i + 1].from <= off)
			i++;
		ck_assert_int_eq(sw_swu_gc_live(bl->p, bl->len, off, gc_collect, &g), SW_OK);
		gc_text(arch, &g, text, sizeof text);
		ck_assert_msg(!strcmp(text, rows[i].live), "live at %u: \"%s\", want \"%s\"",
		              off, text, rows[i].live);
		/* Stopping after the first: exactly one call, still SW_OK. */
		if (g.n) {
			struct gc_set one = { 0 };

			one.stop_after = 1;
			ck_assert_int_eq(sw_swu_gc_live(bl->p, bl->len, off, gc_collect, &one), SW_OK);
			ck_assert_uint_eq(one.n, 1);
			ck_assert(!memcmp(&one.s[0], &g.s[0], sizeof one.s[0]));
		}
	}
	ck_assert_int_eq(sw_swu_gc_live(bl->p, bl->len, code_size + 1, gc_collect,
	                                &(struct gc_set){ 0 }), SW_E_BADIP);
}

/* The unwind rules of two blobs agree at every offset (GC info changes none). */
static void check_same_rules(const struct blob *a, const struct blob *b, uint32_t code_size)
{
	for (uint32_t off = 0; off <= code_size; off++) {
		sw_swu_rule ra, rb;

		memset(&ra, 0, sizeof ra);
		memset(&rb, 0, sizeof rb);
		OK(sw_swu_decode(a->p, a->len, off, &ra));
		OK(sw_swu_decode(b->p, b->len, off, &rb));
		ck_assert_msg(!memcmp(&ra, &rb, sizeof ra), "rule at %u differs", off);
		OK(sw_swu_decode_return_address(a->p, a->len, off, &ra));
		OK(sw_swu_decode_return_address(b->p, b->len, off, &rb));
		ck_assert_msg(!memcmp(&ra, &rb, sizeof ra), "return-address rule at %u differs", off);
	}
}

/* shape_rbp_frame's unwind ops (40 bytes of code), with or without GC info. */
static void rbp_frame_ops(sw_swu_builder *b)
{
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
}

/*
 * x64: rbp frame, rbx saved at cfa - 24, locals at cfa - 32 .. cfa - 48,
 * stack arguments at cfa + 0 and cfa + 8.  Ranges come in no order, some
 * touching (merged), and cfa - 48 holds an object then a byref.
 */
static struct blob shape_gc_x64(void)
{
	sw_swu_builder *b = new_builder();
	struct blob bl;

	/* Before any unwind op: GC calls may come at any time. */
	OK(sw_swu_gc_stack_slot(b, -32, 0, 20, 30));
	OK(sw_swu_gc_register(b, RDI, 0, 0, 3));
	rbp_frame_ops(b);
	OK(sw_swu_gc_stack_slot(b, -32, 0, 9, 15));
	OK(sw_swu_gc_register(b, RBX, 0, 16, 20));
	OK(sw_swu_gc_register(b, RBX, 0, 25, 28));
	OK(sw_swu_gc_register(b, RBX, 0, 12, 16));     /* joins [16, 20) */
	OK(sw_swu_gc_register(b, RAX, SW_GC_INTERIOR, 14, 16));
	OK(sw_swu_gc_stack_slot(b, -40, SW_GC_PINNED, 9, 30));
	OK(sw_swu_gc_stack_slot(b, -48, SW_GC_INTERIOR, 15, 20));
	OK(sw_swu_gc_stack_slot(b, -48, 0, 10, 15));
	OK(sw_swu_gc_stack_slot(b, 8, SW_GC_INTERIOR, 0, 9));
	OK(sw_swu_gc_stack_slot(b, 0, 0, 0, 40));
	bl = finish(b, 40);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(gc_x64)
{
	static const struct gcrow rows[] = {
		{  0, "rdi, [cfa + 0], [cfa + 8] interior" },
		{  3, "[cfa + 0], [cfa + 8] interior" },
		{  9, "[cfa - 40] pinned, [cfa - 32], [cfa + 0]" },
		{ 10, "[cfa - 48], [cfa - 40] pinned, [cfa - 32], [cfa + 0]" },
		{ 12, "rbx, [cfa - 48], [cfa - 40] pinned, [cfa - 32], [cfa + 0]" },
		{ 14, "rax interior, rbx, [cfa - 48], [cfa - 40] pinned, [cfa - 32], [cfa + 0]" },
		{ 15, "rax interior, rbx, [cfa - 48] interior, [cfa - 40] pinned, [cfa + 0]" },
		{ 16, "rbx, [cfa - 48] interior, [cfa - 40] pinned, [cfa + 0]" },
		{ 20, "[cfa - 40] pinned, [cfa - 32], [cfa + 0]" },
		{ 25, "rbx, [cfa - 40] pinned, [cfa - 32], [cfa + 0]" },
		{ 28, "[cfa - 40] pinned, [cfa - 32], [cfa + 0]" },
		{ 30, "[cfa + 0]" },
		{ 40, "" },
	};
	struct blob bl = shape_gc_x64(), plain;
	sw_swu_builder *b = new_builder();
	sw_swu_header h;

	check_gc_table(&bl, SW_ARCH_X64, 40, rows, NROWS(rows));
	OK(sw_swu_decode_header(bl.p, bl.len, &h));
	ck_assert_uint_eq(h.gc_locations, 9);
	ck_assert_uint_eq(h.code_size, 40);
	ck_assert_uint_eq(h.epilogs, 1);
	/* The same method without GC info: the very blob of shape_rbp_frame. */
	rbp_frame_ops(b);
	plain = finish(b, 40);
	check_same_rules(&bl, &plain, 40);
	OK(sw_swu_decode_header(plain.p, plain.len, &h));
	ck_assert_uint_eq(h.gc_locations, 0);
	{
		struct blob old = shape_rbp_frame();

		ck_assert_uint_eq(old.len, plain.len);
		ck_assert(!memcmp(old.p, plain.p, old.len));
		free(old.p);
	}
	/* Without GC info: no call, at any offset. */
	for (uint32_t off = 0; off <= 40; off++) {
		struct gc_set g = { 0 };

		OK(sw_swu_gc_live(plain.p, plain.len, off, gc_collect, &g));
		ck_assert_uint_eq(g.n, 0);
	}
	ck_assert_int_eq(sw_swu_gc_live(plain.p, plain.len, 41, gc_collect, &(struct gc_set){ 0 }),
	                 SW_E_BADIP);
	ck_assert_int_eq(sw_swu_gc_live(plain.p, plain.len, 0, NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_gc_live(NULL, 10, 0, gc_collect, &(struct gc_set){ 0 }), SW_E_INVAL);
	free(plain.p);
	free(bl.p);
	sw_swu_builder_destroy(b);
}
END_TEST

/* The encoding, byte by byte (the example in swu(5)). */
START_TEST(gc_bytes)
{
	static const unsigned char want[] = {
		0xe5, 0x11, 0x02, 0x0a, 0x00, 0x00, 0x00,       /* header: x64, flags GC, code 10 */
		0x02, 0x00,                                     /* 2 locations after 0 bytes of ops */
		0x04, 0x03, 0x02, 0x02, 0x02, 0x02, 0x02,       /* rbx: [2, 4), [6, 8) */
		0x01, 0x7e, 0x01, 0x00, 0x0a,                   /* [cfa - 16] interior: [0, 10) */
	};
	static const struct gcrow rows[] = {
		{ 0, "[cfa - 16] interior" },
		{ 2, "rbx, [cfa - 16] interior" },
		{ 4, "[cfa - 16] interior" },
		{ 6, "rbx, [cfa - 16] interior" },
		{ 8, "[cfa - 16] interior" },
		{ 10, "" },
	};
	sw_swu_builder *b = new_builder();
	struct blob bl;

	OK(sw_swu_gc_stack_slot(b, -16, SW_GC_INTERIOR, 0, 10));
	OK(sw_swu_gc_register(b, RBX, 0, 6, 8));
	OK(sw_swu_gc_register(b, RBX, 0, 2, 4));
	bl = finish(b, 10);
	ck_assert_uint_eq(bl.len, sizeof want);
	ck_assert(!memcmp(bl.p, want, sizeof want));
	check_gc_table(&bl, SW_ARCH_X64, 10, rows, NROWS(rows));
	free(bl.p);
	sw_swu_builder_destroy(b);
}
END_TEST

/* x86 ebp frame: push ebp; mov ebp, esp; push esi; sub esp, 8 / ... /
 * lea esp, [ebp - 4]; pop esi; pop ebp; ret. */
static void x86_gc_ops(sw_swu_builder *b)
{
	OK(sw_swu_push_reg(b, 1, EBP));
	OK(sw_swu_set_frame(b, 3, EBP, 0));
	OK(sw_swu_push_reg(b, 4, ESI));
	OK(sw_swu_alloc_stack(b, 7, 8));
	OK(sw_swu_end_prolog(b, 7));
	OK(sw_swu_epilog_begin(b, 20));
	OK(sw_swu_restore_sp_from_frame(b, 23, -4));
	OK(sw_swu_pop_reg(b, 24, ESI));
	OK(sw_swu_pop_reg(b, 25, EBP));
	OK(sw_swu_epilog_end(b, 26));
}

static struct blob shape_gc_x86(void)
{
	sw_swu_builder *b = new_builder_for(SW_ARCH_X86);
	struct blob bl;

	x86_gc_ops(b);
	OK(sw_swu_gc_register(b, EAX, 0, 8, 10));
	OK(sw_swu_gc_register(b, ECX, SW_GC_INTERIOR, 9, 12));
	OK(sw_swu_gc_register(b, ESI, 0, 10, 20));
	OK(sw_swu_gc_stack_slot(b, -20, SW_GC_PINNED, 16, 18));
	OK(sw_swu_gc_stack_slot(b, -20, SW_GC_PINNED, 12, 14));
	OK(sw_swu_gc_stack_slot(b, -16, 0, 7, 26));
	OK(sw_swu_gc_stack_slot(b, 0, 0, 0, 7));
	OK(sw_swu_gc_stack_slot(b, 4, SW_GC_INTERIOR, 0, 28));
	bl = finish(b, 28);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(gc_x86)
{
	static const struct gcrow rows[] = {
		{  0, "[cfa + 0], [cfa + 4] interior" },
		{  7, "[cfa - 16], [cfa + 4] interior" },
		{  8, "eax, [cfa - 16], [cfa + 4] interior" },
		{  9, "eax, ecx interior, [cfa - 16], [cfa + 4] interior" },
		{ 10, "ecx interior, esi, [cfa - 16], [cfa + 4] interior" },
		{ 12, "esi, [cfa - 20] pinned, [cfa - 16], [cfa + 4] interior" },
		{ 14, "esi, [cfa - 16], [cfa + 4] interior" },
		{ 16, "esi, [cfa - 20] pinned, [cfa - 16], [cfa + 4] interior" },
		{ 18, "esi, [cfa - 16], [cfa + 4] interior" },
		{ 20, "[cfa - 16], [cfa + 4] interior" },
		{ 26, "[cfa + 4] interior" },
		{ 28, "" },
	};
	struct blob bl = shape_gc_x86(), plain;
	sw_swu_builder *b = new_builder_for(SW_ARCH_X86);

	check_gc_table(&bl, SW_ARCH_X86, 28, rows, NROWS(rows));
	x86_gc_ops(b);
	plain = finish(b, 28);
	check_same_rules(&bl, &plain, 28);
	free(plain.p);
	free(bl.p);
	sw_swu_builder_destroy(b);
}
END_TEST

/* arm64: stp fp, lr, [sp, #-48]!; mov fp, sp; stp x19, x20, [sp, #16] /
 * ... / ldp x19, x20, [sp, #16]; ldp fp, lr, [sp], #48; ret.  Locals at
 * cfa - 16 and cfa - 8. */
static void arm64_gc_ops(sw_swu_builder *b)
{
	OK(sw_swu_push_reg_pair(b, 4, FP, LR, 48));
	OK(sw_swu_set_frame(b, 8, FP, 0));
	OK(sw_swu_save_reg_pair(b, 12, X19, X20, 16));
	OK(sw_swu_end_prolog(b, 12));
	OK(sw_swu_epilog_begin(b, 40));
	OK(sw_swu_restore_reg_pair(b, 44, X19, X20));
	OK(sw_swu_pop_reg_pair(b, 48, FP, LR, 48));
	OK(sw_swu_epilog_end(b, 52));
}

static struct blob shape_gc_arm64(void)
{
	sw_swu_builder *b = new_builder_for(SW_ARCH_ARM64);
	struct blob bl;

	arm64_gc_ops(b);
	OK(sw_swu_gc_register(b, X0, 0, 0, 16));
	OK(sw_swu_gc_register(b, X19, 0, 16, 40));
	OK(sw_swu_gc_register(b, SW_ARM64_X0 + 1, SW_GC_INTERIOR, 20, 24));
	OK(sw_swu_gc_stack_slot(b, -16, 0, 12, 40));
	OK(sw_swu_gc_stack_slot(b, -8, SW_GC_PINNED, 24, 32));
	OK(sw_swu_gc_stack_slot(b, 0, 0, 0, 56));
	bl = finish(b, 56);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(gc_arm64)
{
	static const struct gcrow rows[] = {
		{  0, "x0, [cfa + 0]" },
		{ 12, "x0, [cfa - 16], [cfa + 0]" },
		{ 16, "x19, [cfa - 16], [cfa + 0]" },
		{ 20, "x1 interior, x19, [cfa - 16], [cfa + 0]" },
		{ 24, "x19, [cfa - 16], [cfa - 8] pinned, [cfa + 0]" },
		{ 32, "x19, [cfa - 16], [cfa + 0]" },
		{ 40, "[cfa + 0]" },
		{ 56, "" },
	};
	struct blob bl = shape_gc_arm64(), plain;
	sw_swu_builder *b = new_builder_for(SW_ARCH_ARM64);

	check_gc_table(&bl, SW_ARCH_ARM64, 56, rows, NROWS(rows));
	arm64_gc_ops(b);
	plain = finish(b, 56);
	check_same_rules(&bl, &plain, 56);
	free(plain.p);
	free(bl.p);
	sw_swu_builder_destroy(b);
}
END_TEST

/* An x86 ESP frame with body ops and GC info: the sections coexist. */
static struct blob shape_gc_x86_body(void)
{
	sw_swu_builder *b = new_builder_for(SW_ARCH_X86);
	struct blob bl;

	OK(sw_swu_push_reg(b, 1, EBX));
	OK(sw_swu_end_prolog(b, 1));
	OK(sw_swu_gc_register(b, EBX, 0, 1, 8));
	OK(sw_swu_push_args(b, 3, 4));
	OK(sw_swu_call_pops_args(b, 8, 4));
	OK(sw_swu_epilog_begin(b, 8));
	OK(sw_swu_pop_reg(b, 9, EBX));
	OK(sw_swu_epilog_end(b, 10));
	OK(sw_swu_gc_stack_slot(b, -8, SW_GC_INTERIOR, 3, 9));
	bl = finish(b, 10);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(gc_with_body_ops)
{
	static const struct gcrow rows[] = {
		{ 0, "" },
		{ 1, "ebx" },
		{ 3, "ebx, [cfa - 8] interior" },
		{ 8, "[cfa - 8] interior" },
		{ 9, "" },
	};
	struct blob bl = shape_gc_x86_body();
	sw_swu_rule r;

	check_gc_table(&bl, SW_ARCH_X86, 10, rows, NROWS(rows));
	OK(sw_swu_decode_return_address(bl.p, bl.len, 8, &r));
	ck_assert_int_eq(r.sp_offset, 12);
	OK(sw_swu_decode(bl.p, bl.len, 8, &r));
	ck_assert_int_eq(r.sp_offset, 8);
	free(bl.p);
}
END_TEST

START_TEST(gc_builder_misuse)
{
	size_t len;

	ck_assert_int_eq(sw_swu_gc_stack_slot(NULL, -16, 0, 0, 1), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_gc_register(NULL, RBX, 0, 0, 1), SW_E_INVAL);
	/* Overlapping ranges of one location, in either order, nested or equal. */
	MISUSE(SW_E_INVAL, OK(sw_swu_gc_stack_slot(b, -24, 0, 5, 10)),
	       sw_swu_gc_stack_slot(b, -24, 0, 8, 12));
	MISUSE(SW_E_INVAL, OK(sw_swu_gc_stack_slot(b, -24, 0, 5, 10)),
	       sw_swu_gc_stack_slot(b, -24, 0, 1, 6));
	MISUSE(SW_E_INVAL, OK(sw_swu_gc_stack_slot(b, -24, 0, 5, 10)),
	       sw_swu_gc_stack_slot(b, -24, 0, 6, 7));
	MISUSE(SW_E_INVAL, OK(sw_swu_gc_stack_slot(b, -24, 0, 5, 10)),
	       sw_swu_gc_stack_slot(b, -24, 0, 0, 20));
	MISUSE(SW_E_INVAL, OK(sw_swu_gc_register(b, RBX, 0, 5, 10)),
	       sw_swu_gc_register(b, RBX, 0, 5, 10));
	/* One place holds one reference: its flag variants may not overlap either. */
	MISUSE(SW_E_INVAL, OK(sw_swu_gc_stack_slot(b, -24, 0, 5, 10)),
	       sw_swu_gc_stack_slot(b, -24, SW_GC_INTERIOR, 9, 11));
	MISUSE(SW_E_INVAL, OK(sw_swu_gc_register(b, RBX, SW_GC_PINNED, 5, 10)),
	       sw_swu_gc_register(b, RBX, SW_GC_INTERIOR, 0, 6));
	MISUSE(SW_OK, OK(sw_swu_gc_stack_slot(b, -24, 0, 5, 10)),
	       sw_swu_gc_stack_slot(b, -24, SW_GC_INTERIOR, 10, 11));
	/* Different places never conflict. */
	MISUSE(SW_OK, OK(sw_swu_gc_stack_slot(b, -24, 0, 5, 10)), sw_swu_gc_stack_slot(b, -32, 0, 5, 10));
	MISUSE(SW_OK, OK(sw_swu_gc_register(b, RBX, 0, 5, 10)), sw_swu_gc_register(b, RAX, 0, 5, 10));
	/* Empty or reversed ranges. */
	MISUSE(SW_E_INVAL, , sw_swu_gc_stack_slot(b, -16, 0, 5, 5));
	MISUSE(SW_E_INVAL, , sw_swu_gc_register(b, RBX, 0, 6, 5));
	MISUSE(SW_E_LIMIT, , sw_swu_gc_register(b, RBX, 0, 0, SW_SWU_MAX_CODE_SIZE + 1));
	MISUSE(SW_OK, , sw_swu_gc_register(b, RBX, 0, 0, SW_SWU_MAX_CODE_SIZE));
	/* Flags. */
	MISUSE(SW_E_INVAL, , sw_swu_gc_register(b, RBX, 4, 0, 1));
	MISUSE(SW_OK, , sw_swu_gc_stack_slot(b, -16, SW_GC_INTERIOR | SW_GC_PINNED, 0, 1));
	/* Registers: any but SP and IP, below the register count. */
	MISUSE(SW_E_INVAL, , sw_swu_gc_register(b, RSP, 0, 0, 1));
	MISUSE(SW_E_INVAL, , sw_swu_gc_register(b, RIP, 0, 0, 1));
	MISUSE(SW_E_INVAL, , sw_swu_gc_register(b, SW_X64_NREGS, 0, 0, 1));
	MISUSE(SW_E_INVAL, , sw_swu_gc_register(b, 1000, 0, 0, 1));
	MISUSE(SW_OK, , sw_swu_gc_register(b, R15, 0, 0, 1));
	MISUSE(SW_OK, , sw_swu_gc_register(b, RBP, 0, 0, 1));
	MISUSE_X(SW_E_INVAL, , sw_swu_gc_register(b, ESP, 0, 0, 1));
	MISUSE_X(SW_E_INVAL, , sw_swu_gc_register(b, EIP, 0, 0, 1));
	MISUSE_X(SW_E_INVAL, , sw_swu_gc_register(b, SW_X86_NREGS, 0, 0, 1));
	MISUSE_X(SW_OK, , sw_swu_gc_register(b, EDI, 0, 0, 1));
	MISUSE_A(SW_E_INVAL, , sw_swu_gc_register(b, SP, 0, 0, 1));
	MISUSE_A(SW_E_INVAL, , sw_swu_gc_register(b, SW_ARM64_PC, 0, 0, 1));
	MISUSE_A(SW_E_INVAL, , sw_swu_gc_register(b, SW_ARM64_NREGS, 0, 0, 1));
	MISUSE_A(SW_OK, , sw_swu_gc_register(b, LR, 0, 0, 1));
	MISUSE_A(SW_OK, , sw_swu_gc_register(b, X28, 0, 0, 1));
	/* Slots: pointer-aligned, not the return address's, within the frame limit. */
	MISUSE(SW_E_INVAL, , sw_swu_gc_stack_slot(b, -20, 0, 0, 1));
	MISUSE(SW_E_INVAL, , sw_swu_gc_stack_slot(b, 4, 0, 0, 1));
	MISUSE(SW_E_INVAL, , sw_swu_gc_stack_slot(b, -8, 0, 0, 1));    /* the return address */
	MISUSE(SW_OK, , sw_swu_gc_stack_slot(b, -16, 0, 0, 1));
	MISUSE(SW_OK, , sw_swu_gc_stack_slot(b, 0, 0, 0, 1));
	MISUSE(SW_OK, , sw_swu_gc_stack_slot(b, -(int32_t)SW_SWU_MAX_FRAME, 0, 0, 1));
	MISUSE(SW_E_LIMIT, , sw_swu_gc_stack_slot(b, -(int32_t)SW_SWU_MAX_FRAME - 8, 0, 0, 1));
	MISUSE(SW_OK, , sw_swu_gc_stack_slot(b, (int32_t)SW_SWU_MAX_FRAME - 8, 0, 0, 1));
	MISUSE(SW_E_LIMIT, , sw_swu_gc_stack_slot(b, (int32_t)SW_SWU_MAX_FRAME, 0, 0, 1));
	MISUSE(SW_E_LIMIT, , sw_swu_gc_stack_slot(b, INT32_MIN, 0, 0, 1));
	MISUSE_X(SW_E_INVAL, , sw_swu_gc_stack_slot(b, -6, 0, 0, 1));
	MISUSE_X(SW_E_INVAL, , sw_swu_gc_stack_slot(b, -4, 0, 0, 1));  /* the return address */
	MISUSE_X(SW_OK, , sw_swu_gc_stack_slot(b, -8, 0, 0, 1));
	MISUSE_X(SW_OK, , sw_swu_gc_stack_slot(b, 4, 0, 0, 1));
	MISUSE_A(SW_E_INVAL, , sw_swu_gc_stack_slot(b, -12, 0, 0, 1));
	MISUSE_A(SW_OK, , sw_swu_gc_stack_slot(b, -8, 0, 0, 1));       /* arm64: lr arrives in a register */
	/* Errors stick, GC calls included; reset clears them and the ranges. */
	{
		sw_swu_builder *b = new_builder();
		struct blob bl;

		OK(sw_swu_gc_register(b, RBX, 0, 0, 4));
		ck_assert_int_eq(sw_swu_gc_register(b, RSP, 0, 0, 1), SW_E_INVAL);
		ck_assert_int_eq(sw_swu_gc_register(b, RBX, 0, 10, 12), SW_E_INVAL);
		ck_assert_int_eq(sw_swu_push_reg(b, 1, RBP), SW_E_INVAL);
		ck_assert_int_eq(sw_swu_finish(b, 20, NULL, 0, &len), SW_E_INVAL);
		sw_swu_builder_reset(b);
		OK(sw_swu_gc_register(b, RBX, 0, 2, 3));
		bl = finish(b, 4);
		{
			static const struct gcrow rows[] = { { 0, "" }, { 2, "rbx" }, { 3, "" } };

			check_gc_table(&bl, SW_ARCH_X64, 4, rows, NROWS(rows));
		}
		free(bl.p);
		/* A range past the code size is refused at finish (and not stuck). */
		OK(sw_swu_gc_stack_slot(b, -16, 0, 3, 9));
		ck_assert_int_eq(sw_swu_finish(b, 8, NULL, 0, &len), SW_E_INVAL);
		ck_assert_int_eq(sw_swu_finish(b, 9, NULL, 0, &len), SW_E_LIMIT);
		bl = finish(b, 9);
		free(bl.p);
		/* GC calls inside an epilog do not disturb it. */
		sw_swu_builder_reset(b);
		OK(sw_swu_push_reg(b, 1, RBP));
		OK(sw_swu_end_prolog(b, 1));
		OK(sw_swu_epilog_begin(b, 4));
		OK(sw_swu_gc_stack_slot(b, -16, 0, 1, 4));
		OK(sw_swu_pop_reg(b, 5, RBP));
		OK(sw_swu_epilog_end(b, 6));
		bl = finish(b, 6);
		free(bl.p);
		sw_swu_builder_destroy(b);
	}
}
END_TEST

START_TEST(gc_builder_limits)
{
	sw_swu_builder *b = new_builder();
	struct blob bl;
	struct gc_set g = { 0 };
	uint32_t code = 2 * SW_SWU_MAX_GC_RANGES + 2;

	/* SW_SWU_MAX_GC_LOCATIONS locations: half registers' flag variants, the rest slots. */
	for (uint32_t i = 0; i < SW_SWU_MAX_GC_LOCATIONS; i++)
		OK(sw_swu_gc_stack_slot(b, -16 - 8 * (int32_t)i, i % 4, i % 7, i % 7 + 1));
	ck_assert_int_eq(sw_swu_gc_register(b, RBX, 0, 0, 1), SW_E_LIMIT);
	sw_swu_builder_reset(b);
	for (uint32_t i = 0; i < SW_SWU_MAX_GC_LOCATIONS; i++)
		OK(sw_swu_gc_stack_slot(b, -16 - 8 * (int32_t)i, i % 4, i % 7, i % 7 + 1));
	/* More ranges for a location that exists are fine. */
	OK(sw_swu_gc_stack_slot(b, -16, 0, 20, 21));
	bl = finish(b, 21);
	OK(sw_swu_gc_live(bl.p, bl.len, 3, gc_collect, &g));
	ck_assert_uint_eq(g.n, (SW_SWU_MAX_GC_LOCATIONS + 6 - 3) / 7);
	free(bl.p);

	/* SW_SWU_MAX_GC_RANGES ranges for one location, then no more, unless it only joins one. */
	sw_swu_builder_reset(b);
	for (uint32_t i = 0; i < SW_SWU_MAX_GC_RANGES; i++)
		OK(sw_swu_gc_register(b, RBX, 0, 2 * i, 2 * i + 1));
	OK(sw_swu_gc_register(b, RBX, 0, 1, 2));        /* joins [0, 1) and [2, 3) */
	OK(sw_swu_gc_register(b, RBX, 0, 2 * SW_SWU_MAX_GC_RANGES, code));
	bl = finish(b, code);
	g.n = 0;
	OK(sw_swu_gc_live(bl.p, bl.len, 1, gc_collect, &g));
	ck_assert_uint_eq(g.n, 1);
	free(bl.p);
	sw_swu_builder_reset(b);
	for (uint32_t i = 0; i < SW_SWU_MAX_GC_RANGES; i++)
		OK(sw_swu_gc_register(b, RBX, 0, 2 * i, 2 * i + 1));
	ck_assert_int_eq(sw_swu_gc_register(b, RBX, 0, code, code + 1), SW_E_LIMIT);
	sw_swu_builder_reset(b);
	/* Added backwards: every insertion is at the front. */
	for (uint32_t i = 4096; i-- > 0;)
		OK(sw_swu_gc_register(b, RBX, 0, 2 * i, 2 * i + 1));
	bl = finish(b, 8192);
	for (uint32_t off = 0; off <= 8192; off += 7) {
		g.n = 0;
		OK(sw_swu_gc_live(bl.p, bl.len, off, gc_collect, &g));
		ck_assert_uint_eq(g.n, off % 2 == 0 && off < 8192);
	}
	free(bl.p);
	sw_swu_builder_destroy(b);
}
END_TEST

START_TEST(gc_bad_blobs)
{
	/* The gc_bytes blob: rbx [2, 4) [6, 8); [cfa - 16] interior [0, 10). */
	static const unsigned char good[] = {
		0xe5, 0x11, 0x02, 0x0a, 0x00, 0x00, 0x00, 0x02, 0x00,
		0x04, 0x03, 0x02, 0x02, 0x02, 0x02, 0x02,
		0x01, 0x7e, 0x01, 0x00, 0x0a,
	};
	unsigned char b[sizeof good + 8];

	ck_assert_int_eq(validate_bytes(good, sizeof good), SW_OK);
#define PATCH(i, v, want) do { memcpy(b, good, sizeof good); b[i] = (v); \
	ck_assert_int_eq(validate_bytes(b, sizeof good), (want)); } while (0)
	PATCH(2, 0x42, SW_E_UNSUPPORTED);       /* an unknown section */
	PATCH(2, 0x0a, SW_E_BADMETA);           /* compact without rows */
	PATCH(7, 0x00, SW_E_BADMETA);           /* the flag, no location */
	PATCH(7, 0x03, SW_E_TRUNCATED);         /* 3 locations cannot fit in 12 bytes */
	PATCH(7, 0x01, SW_E_BADMETA);           /* one location: the other is trailing */
	PATCH(8, 0x01, SW_E_BADMETA);           /* a byte of ops that are not there */
	PATCH(8, 0x03, SW_E_TRUNCATED);         /* 2 locations in 9 bytes */
	PATCH(8, 0x0d, SW_E_TRUNCATED);         /* more than the blob holds */
	PATCH(9, 0x08, SW_E_BADMETA);           /* reserved kind bit */
	PATCH(9, 0x80, SW_E_BADMETA);
	PATCH(9, 0x07, SW_OK);                  /* rbx interior pinned */
	PATCH(9, 0x00, SW_E_BADMETA);           /* a slot at cfa + 24 after one at cfa - 16 */
	PATCH(10, 0x07, SW_E_BADMETA);          /* rsp */
	PATCH(10, 0x10, SW_E_BADMETA);          /* rip */
	PATCH(10, 0x11, SW_E_BADMETA);          /* no such register */
	PATCH(10, 0x00, SW_OK);                 /* rax */
	PATCH(11, 0x00, SW_E_BADMETA);          /* no range */
	PATCH(11, 0x01, SW_E_BADMETA);          /* one range: bytes left over */
	PATCH(11, 0x03, SW_E_BADMETA);          /* three: reads the next location as ranges */
	PATCH(13, 0x00, SW_E_BADMETA);          /* empty range */
	PATCH(14, 0x00, SW_E_BADMETA);          /* touching ranges are one */
	PATCH(15, 0x03, SW_OK);                 /* [6, 9) */
	PATCH(15, 0x05, SW_E_BADMETA);          /* [6, 11): past the code */
	PATCH(17, 0x7f, SW_E_BADMETA);          /* cfa - 8: the return address */
	PATCH(17, 0x00, SW_OK);                 /* cfa + 0 */
	PATCH(17, 0x40, SW_OK);                 /* cfa - 512 */
	PATCH(18, 0x00, SW_E_BADMETA);
	PATCH(19, 0x01, SW_E_BADMETA);          /* [1, 11) */
	PATCH(20, 0x00, SW_E_BADMETA);
	PATCH(20, 0x80, SW_E_TRUNCATED);        /* a varint off the end */
#undef PATCH
	/* A trailing byte after the GC section. */
	memcpy(b, good, sizeof good);
	b[sizeof good] = 0;
	ck_assert_int_eq(validate_bytes(b, sizeof good + 1), SW_E_BADMETA);
	/* Locations out of order, repeated, or overlapping at one place. */
	{
		/* x64, code 10, no ops, 2 locations */
		static const unsigned char two[] = {
			0xe5, 0x11, 0x02, 0x0a, 0x00, 0x00, 0x00, 0x02, 0x00,
			0x04, 0x03, 0x01, 0x00, 0x05,   /* rbx [0, 5) */
			0x05, 0x03, 0x01, 0x05, 0x05,   /* rbx interior [5, 10) */
		};
		unsigned char t[sizeof two];

		ck_assert_int_eq(validate_bytes(two, sizeof two), SW_OK);
#define PATCH2(i, v, want) do { memcpy(t, two, sizeof two); t[i] = (v); \
	ck_assert_int_eq(validate_bytes(t, sizeof two), (want)); } while (0)
		PATCH2(14, 0x04, SW_E_BADMETA);         /* rbx twice */
		PATCH2(9, 0x05, SW_E_BADMETA);          /* rbx interior twice */
		PATCH2(9, 0x06, SW_E_BADMETA);          /* pinned before interior: descending */
		PATCH2(15, 0x00, SW_E_BADMETA);         /* rax after rbx */
		PATCH2(15, 0x0f, SW_OK);                /* r15 */
		PATCH2(17, 0x04, SW_E_BADMETA);         /* [4, 9): rbx holds two at 4 */
		PATCH2(13, 0x06, SW_E_BADMETA);         /* [0, 6) meets [5, 10) */
		PATCH2(14, 0x00, SW_OK);                /* a slot (cfa + 24) after a register */
		PATCH2(16, 0x02, SW_E_TRUNCATED);       /* two ranges declared, one there */
#undef PATCH2
		/* The slot variant: [cfa - 16] [0, 5) and [cfa - 16] pinned [3, 8). */
		memcpy(t, two, sizeof two);
		t[9] = 0x00; t[10] = 0x7e; t[14] = 0x02; t[15] = 0x7e; t[17] = 0x03; t[18] = 0x05;
		ck_assert_int_eq(validate_bytes(t, sizeof two), SW_E_BADMETA);
		t[17] = 0x05;
		ck_assert_int_eq(validate_bytes(t, sizeof two), SW_OK);
	}
}
END_TEST

/* ---- Truncation ---- */

typedef struct blob (*shape_fn)(void);
static const shape_fn shapes[] = {
	shape_rbp_frame, shape_pushes, shape_lea_rbp, shape_large_save, shape_epilogs, shape_leaf,
	shape_arm64_frame, shape_arm64_leaf, shape_arm64_pac, shape_x86_ebp, shape_x86_esp,
	shape_gc_x64, shape_gc_x86, shape_gc_arm64, shape_gc_x86_body
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
				st = sw_swu_decode_return_address(p, len, off, &r);
				ck_assert(st == SW_OK || st == SW_E_TRUNCATED);
				/* A cut GC blob reports nothing: its header names more bytes. */
				st = sw_swu_gc_live(p, len, off, gc_collect, &(struct gc_set){ 0 });
				ck_assert_msg(full.gc_locations ? st == SW_E_TRUNCATED :
				              st == SW_OK || st == SW_E_TRUNCATED,
				              "shape %zu cut at %zu, offset %u: gc_live %d", s, len, off, st);
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

static unsigned long fuzz_valid, fuzz_valid_gc;

/* The depth at entry: CFA - SP before the first instruction. */
static int32_t entry_depth(uint32_t arch)
{
	return arch == SW_ARCH_ARM64 ? 0 : arch == SW_ARCH_X86 ? 4 : 8;
}

/* A decoded rule must be in range for its architecture. */
static int rule_sane(const sw_swu_header *h, const sw_swu_rule *r)
{
	return r->arch == h->arch && r->region <= SW_SWU_EPILOG &&
	       sw_arch_reg_name((sw_arch)h->arch, r->cfa_reg) != NULL &&
	       r->sp_offset >= entry_depth(h->arch) && r->sp_offset <= (int32_t)SW_SWU_MAX_FRAME &&
	       r->ra_signed <= (h->arch == SW_ARCH_ARM64) &&
	       (r->ra_in_reg ? h->arch == SW_ARCH_ARM64 && r->ra_reg == SW_ARM64_LR : r->ra_offset < 0) &&
	       r->reserved == 0;
}

/* The return-address rule differs at most by arguments still pushed. */
static int ra_rule_consistent(const sw_swu_rule *r, const sw_swu_rule *ra)
{
	sw_swu_rule a = *r, b = *ra;
	int32_t extra = ra->sp_offset - r->sp_offset;

	if (extra < 0)
		return 0;
	if (extra && a.cfa_reg == (uint32_t)(a.arch == SW_ARCH_X86 ? SW_X86_ESP :
	                                     a.arch == SW_ARCH_ARM64 ? SW_ARM64_SP : SW_X64_RSP))
		a.cfa_offset += extra;
	a.sp_offset = b.sp_offset;
	return !memcmp(&a, &b, sizeof a);
}

static void fuzz_one(const unsigned char *bytes, size_t len, FILE *null)
{
	unsigned char *p = malloc(len ? len : 1);
	sw_swu_header h;
	sw_swu_rule r, ra;
	sw_status v, st, st2;
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
			st2 = sw_swu_decode_return_address(p, len, off, &ra);
			if (v == SW_OK) {
				REQUIRE(st == SW_OK);
				REQUIRE(st2 == SW_OK);
				REQUIRE(ra_rule_consistent(&r, &ra));
			} else {
				REQUIRE(st == SW_OK || st == SW_E_BADMETA || st == SW_E_TRUNCATED);
				REQUIRE(st2 == SW_OK || st2 == SW_E_BADMETA || st2 == SW_E_TRUNCATED);
			}
			if (st == SW_OK)
				REQUIRE(rule_sane(&h, &r));
			if (st2 == SW_OK)
				REQUIRE(rule_sane(&h, &ra));
			if (off + step < off)
				break;
		}
		REQUIRE(sw_swu_decode(p, len, h.code_size, &r) == SW_OK || v != SW_OK);
		/* GC: a valid blob reports valid locations, in order, each once. */
		for (uint32_t off = 0; off <= h.code_size; off += step) {
			struct gc_set g = { 0 };

			off_now = off;
			st = sw_swu_gc_live(p, len, off, gc_collect, &g);
			if (v == SW_OK)
				REQUIRE(st == SW_OK);
			else
				REQUIRE(st == SW_OK || st == SW_E_BADMETA || st == SW_E_TRUNCATED);
			if (st != SW_OK)
				continue;
			REQUIRE(g.n <= h.gc_locations);
			for (unsigned i = 0; i < g.n && i < GC_MAX_LIVE; i++) {
				const sw_swu_gc_slot *s = &g.s[i];

				/* SW_GC_PARENT_FRAME: stack slots of a blob with a PSP slot only. */
				REQUIRE((s->flags & ~(uint32_t)SW_GC_PARENT_FRAME) <= 3 && s->in_register <= 1);
				REQUIRE(!(s->flags & SW_GC_PARENT_FRAME) || !s->in_register);
				if (s->in_register)
					REQUIRE(s->reg < SW_MAX_REGS && gc_reg_ok((sw_arch)h.arch, s->reg) &&
					        sw_arch_reg_name((sw_arch)h.arch, s->reg) != NULL);
				else
					REQUIRE(s->cfa_offset % (int32_t)sw_arch_pointer_size((sw_arch)h.arch) == 0);
				if (v == SW_OK && i > 0)
					REQUIRE(gc_key(&g.s[i - 1]) < gc_key(s));
			}
			if (off + step < off)
				break;
		}
		if (v == SW_OK && h.gc_locations)
			fuzz_valid_gc++;
	}
	if (v == SW_OK)
		fuzz_valid++;
	free(p);
}

/* A byte that is often meaningful in an op: an opcode, a small delta or register, a size. */
static unsigned char op_byte(void)
{
	static const unsigned char opcodes[] = {
		0x01, 0x02, 0x03, 0x04, 0x05, 0x06, 0x07, 0x08, 0x20, 0x21, 0x22, 0x23,
		0x28, 0x29, 0x2a, 0x2b, 0x40, 0x41, 0x42
	};

	switch (rnd() % 8) {
	case 0:  return opcodes[rnd() % sizeof opcodes];
	case 1:  return (unsigned char)(16 * (rnd() % 4));
	case 2:  return (unsigned char)(19 + rnd() % 12);      /* arm64 x19-lr */
	default: return (unsigned char)(rnd() % 16);
	}
}

START_TEST(random_blobs)
{
	FILE *null = devnull();
	unsigned char buf[80];
	unsigned long valid[4] = { 0 };

	rng_state = 0x9e3779b97f4a7c15ULL;
	fuzz_valid_gc = 0;
	for (unsigned i = 0; i < test_rounds(100000); i++) {
		size_t len = rnd() % sizeof buf;
		unsigned arch = 1 + rnd() % 3;

		for (size_t j = 0; j < len; j++)
			buf[j] = (unsigned char)rnd();
		/* Mostly a plausible header, so the fuzz reaches the ops. */
		if (len >= 8 && rnd() % 8) {
			size_t j = 3;
			int body = rnd() % 3 == 0, gc = rnd() % 3 == 0;

			buf[0] = 0xe5;
			buf[1] = (unsigned char)(0x10 | arch);
			buf[2] = (unsigned char)(body | gc << 1);
			buf[j++] = (unsigned char)(rnd() % 100 + 1);
			buf[j] = (unsigned char)(rnd() % (buf[3] + 1u));
			j++;
			buf[j++] = (unsigned char)(rnd() % 6);
			buf[j++] = (unsigned char)(rnd() % 3);
			if (body)
				buf[j++] = (unsigned char)(rnd() % 4);
			size_t ops_end = len;

			if (gc && j + 2 + 5 <= len) {
				/* Plausible locations in the blob's last bytes. */
				unsigned char sec[64];
				size_t n = 0;
				unsigned nloc = 0;

				int no_ops = !body && rnd() % 2, slots = 0;

				while (n + 7 <= sizeof sec && n + 7 <= len - j - 2 && (nloc == 0 || rnd() % 3)) {
					/* Registers first, then slots, ascending. */
					unsigned reg = !slots && rnd() % 2;

					slots |= !reg;

					sec[n++] = (unsigned char)(rnd() % 8 ? (reg ? 4 : 0) | rnd() % 4 : rnd());
					sec[n++] = (unsigned char)(reg ? 1 + nloc * 2 + rnd() % 2 :
					                           0x70 + nloc * 2 + rnd() % 2);
					sec[n++] = (unsigned char)(rnd() % 8 ? 1 : rnd() % 4);
					sec[n++] = (unsigned char)(rnd() % 4);
					sec[n++] = (unsigned char)(1 + rnd() % 8);
					nloc++;
				}
				buf[j++] = (unsigned char)(rnd() % 8 ? nloc : rnd() % 4);
				if (no_ops) {
					buf[5] = buf[6] = 0;    /* no prolog op, no epilog */
					len = j + 1 + n;
				}
				ops_end = len - n;
				buf[j] = (unsigned char)(rnd() % 8 ? ops_end - j - 1 : rnd() % 16);
				j++;
				memcpy(buf + ops_end, sec, n);
			}
			for (; j < ops_end; j++)
				if (rnd() % 2)
					buf[j] = op_byte();
		}
		fuzz_valid = 0;
		fuzz_one(buf, len, null);
		/* A valid blob must end exactly after its last op: try the prefix that does. */
		for (size_t cut = 8; cut < len && buf[0] == 0xe5; cut++) {
			if (sw_swu_validate(buf, cut) == SW_OK) {
				fuzz_one(buf, cut, null);
				break;
			}
		}
		valid[len >= 2 && buf[0] == 0xe5 ? (buf[1] & 3) : 0] += fuzz_valid;
	}
	fprintf(stderr, "random_blobs: of 100000, valid x64 %lu, x86 %lu, arm64 %lu, with GC %lu\n",
	        valid[1], valid[2], valid[3], fuzz_valid_gc);
	fclose(null);
}
END_TEST

START_TEST(mutated_blobs)
{
	FILE *null = devnull();
	struct blob bl[NSHAPES];
	unsigned char buf[256];

	fuzz_valid = fuzz_valid_gc = 0;
	rng_state = 0x2545f4914f6cdd1dULL;
	for (size_t s = 0; s < NSHAPES; s++)
		bl[s] = shapes[s]();
	for (unsigned i = 0; i < test_rounds(100000); i++) {
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
	fprintf(stderr, "mutated_blobs: %lu of 100000 still valid, %lu with GC info\n",
	        fuzz_valid, fuzz_valid_gc);
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
	for (unsigned iter = 0; iter < test_rounds(20000); iter++) {
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

/*
 * Random x86 ESP frames: argument pushes, pops and callee-pops calls in the
 * body, epilogs between them, against a model of ESP's depth at every body
 * offset and at every epilog's start, both as the active frame and at a
 * return address.
 */
struct body_event {
	uint32_t end;
	int32_t delta;          /* bytes pushed (negative: popped) */
	int call;               /* a callee-pops call */
};

struct x86_model {
	uint32_t prolog_size;
	int32_t body;
	struct body_event ev[64];
	unsigned nev;
	uint32_t ep_start[16], ep_end[16];
	unsigned nep;
};

/* Depth at `off`, or -1 inside an epilog past its start (checked elsewhere). */
static int32_t x86_model_depth(const struct x86_model *m, uint32_t off, int at_return,
                               sw_swu_region *region)
{
	int32_t d = m->body;

	*region = SW_SWU_BODY;
	for (unsigned e = 0; e < m->nep; e++) {
		if (off >= m->ep_start[e] && off < m->ep_end[e]) {
			*region = SW_SWU_EPILOG;
			if (off > m->ep_start[e])
				return -1;
		}
	}
	for (unsigned i = 0; i < m->nev && m->ev[i].end <= off; i++)
		if (!(at_return && m->ev[i].call && m->ev[i].end == off))
			d += m->ev[i].delta;
	return d;
}

START_TEST(random_x86_body)
{
	static const unsigned callee[] = { EBX, ESI, EDI, EBP };
	sw_swu_builder *b = new_builder_for(SW_ARCH_X86);
	unsigned long checked = 0;

	rng_state = 0x5bd1e9955bd1e995ULL;
	for (unsigned iter = 0; iter < test_rounds(4000); iter++) {
		struct x86_model m;
		unsigned npush = rnd() % 5;
		int32_t args = 0;
		uint32_t pos = 0, code_size;
		struct blob bl;
		uint32_t off_now = 0;

		memset(&m, 0, sizeof m);
		sw_swu_builder_reset(b);
		for (unsigned i = 0; i < npush; i++)
			OK(sw_swu_push_reg(b, ++pos, callee[i]));
		m.body = 4 + 4 * (int32_t)npush;
		if (rnd() % 2) {
			int32_t a = 4 * (int32_t)(1 + rnd() % 8);

			OK(sw_swu_alloc_stack(b, pos += 3, (uint32_t)a));
			m.body += a;
		}
		OK(sw_swu_end_prolog(b, pos));
		m.prolog_size = pos;
		while (m.nev < 60 && m.nep < 16) {
			unsigned what = rnd() % 6;
			struct body_event ev = { 0, 0, 0 };

			if (what == 5)
				break;
			if (what == 4) {
				if (args)
					continue;
				/* An epilog, maybe right after the last body op. */
				pos += rnd() % 3;
				m.ep_start[m.nep] = pos;
				OK(sw_swu_epilog_begin(b, pos));
				if (m.body > 4 + 4 * (int32_t)npush)
					OK(sw_swu_free_stack(b, pos += 3,
					                     (uint32_t)(m.body - 4 - 4 * (int32_t)npush)));
				for (unsigned i = npush; i-- > 0;)
					OK(sw_swu_pop_reg(b, ++pos, callee[i]));
				OK(sw_swu_epilog_end(b, ++pos));
				m.ep_end[m.nep++] = pos;
				continue;
			}
			ev.end = pos += 1 + rnd() % 5;
			if (what <= 1 || args == 0) {
				ev.delta = 4 * (int32_t)(1 + rnd() % 3);
				OK(sw_swu_push_args(b, pos, (uint32_t)ev.delta));
			} else {
				ev.delta = -4 * (int32_t)(1 + rnd() % (uint32_t)(args / 4));
				ev.call = what == 3;
				if (ev.call)
					OK(sw_swu_call_pops_args(b, pos, (uint32_t)-ev.delta));
				else
					OK(sw_swu_pop_args(b, pos, (uint32_t)-ev.delta));
			}
			args += ev.delta;
			m.ev[m.nev++] = ev;
		}
		if (args) {
			struct body_event ev = { pos += 2, -args, 1 };

			OK(sw_swu_call_pops_args(b, pos, (uint32_t)args));
			m.ev[m.nev++] = ev;
		}
		code_size = pos + rnd() % 4;
		if (code_size == 0)
			code_size = 1;
		bl = finish(b, code_size);
		for (uint32_t off = m.prolog_size; off <= code_size; off++) {
			sw_swu_region region, ra_region;
			int32_t want = x86_model_depth(&m, off, 0, &region);
			int32_t ra_want = x86_model_depth(&m, off, 1, &ra_region);
			sw_swu_rule r, ra;

			off_now = off;
			REQUIRE(sw_swu_decode(bl.p, bl.len, off, &r) == SW_OK);
			REQUIRE(sw_swu_decode_return_address(bl.p, bl.len, off, &ra) == SW_OK);
			REQUIRE(r.region == region && ra.region == ra_region);
			if (want < 0)
				continue;
			REQUIRE(r.cfa_reg == ESP && r.cfa_offset == want && r.sp_offset == want);
			REQUIRE(ra.cfa_reg == ESP && ra.cfa_offset == ra_want && ra.sp_offset == ra_want);
			checked++;
		}
		free(bl.p);
	}
	fprintf(stderr, "random_x86_body: %lu offsets checked\n", checked);
	sw_swu_builder_destroy(b);
}
END_TEST

/*
 * Random GC tables on every architecture against a reference: random
 * places, each with random disjoint ranges under random flags, added in a
 * random order (some split in touching halves), alongside a few unwind
 * ops; the live set at every offset must be exactly the reference's, in
 * the documented order, and the unwind rules those of the same method
 * without GC info.
 */
struct gc_add {
	sw_swu_gc_slot slot;
	uint32_t start, end;
};

static int gc_add_cmp(const void *a, const void *b)
{
	int64_t ka = gc_key(&((const struct gc_add *)a)->slot);
	int64_t kb = gc_key(&((const struct gc_add *)b)->slot);

	return (ka > kb) - (ka < kb);
}

static void random_unwind_ops(sw_swu_builder *b, sw_arch arch, uint32_t code_size, uint32_t pick)
{
	if (pick % 2 == 0 || code_size < 12)
		return;
	if (arch == SW_ARCH_X64)
		OK(sw_swu_push_reg(b, 1, RBP));
	else if (arch == SW_ARCH_X86)
		OK(sw_swu_push_reg(b, 1, EBP));
	else
		OK(sw_swu_push_reg_pair(b, 4, FP, LR, 16));
	OK(sw_swu_end_prolog(b, 4));
	if (arch == SW_ARCH_X86 && pick % 4 == 1) {
		OK(sw_swu_push_args(b, 6, 8));
		OK(sw_swu_call_pops_args(b, 11, 8));
	}
}

START_TEST(random_gc)
{
	static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };
	static const unsigned nregs[] = { SW_X64_NREGS, SW_X86_NREGS, SW_ARM64_NREGS };
	static struct gc_add adds[600], model[600];
	sw_swu_builder *bs[3], *b0s[3];
	unsigned long checked = 0, refused = 0;
	FILE *null = devnull();

	for (unsigned a = 0; a < 3; a++) {
		bs[a] = new_builder_for(arches[a]);
		b0s[a] = new_builder_for(arches[a]);
	}
	rng_state = 0x0ddc0ffeebadf00dULL;
	for (unsigned iter = 0; iter < test_rounds(3000); iter++) {
		unsigned ai = rnd() % 3, nplaces = rnd() % 24, nadd = 0, nmodel = 0, nloc = 0;
		sw_arch arch = arches[ai];
		sw_swu_builder *b = bs[ai], *b0 = b0s[ai];
		int32_t ptr = (int32_t)sw_arch_pointer_size(arch);
		uint32_t code_size = 1 + rnd() % 200, pick = rnd();
		sw_swu_gc_slot places[24];
		struct blob bl, bl0;
		sw_swu_header h;
		uint32_t off_now = 0;

		sw_swu_builder_reset(b);
		sw_swu_builder_reset(b0);
		random_unwind_ops(b, arch, code_size, pick);
		random_unwind_ops(b0, arch, code_size, pick);
		for (unsigned p = 0; p < nplaces; p++) {
			sw_swu_gc_slot s = { 0, 0, 0, 0 };
			uint32_t pos = rnd() % 8;
			int dup = 0;

			places[p].in_register = 2;      /* matches no place */
			if (rnd() % 2) {
				s.in_register = 1;
				s.reg = rnd() % nregs[ai];
				if (!gc_reg_ok(arch, s.reg))
					continue;
			} else {
				s.cfa_offset = ptr * ((int32_t)(rnd() % 80) - 64);
				if (s.cfa_offset < 0 && s.cfa_offset >= -(arch == SW_ARCH_ARM64 ? 0 : ptr))
					continue;
			}
			for (unsigned q = 0; q < p && !dup; q++)
				dup = places[q].in_register == s.in_register && places[q].reg == s.reg &&
				      places[q].cfa_offset == s.cfa_offset;
			if (dup)
				continue;
			places[p] = s;
			while (pos < code_size && nadd + 2 < NROWS(adds)) {
				uint32_t end = pos + 1 + rnd() % 20;

				if (end > code_size)
					end = code_size;
				s.flags = rnd() % 8 < 5 ? 0 : rnd() % 4;
				model[nmodel++] = (struct gc_add){ s, pos, end };
				if (end - pos >= 2 && rnd() % 4 == 0) {
					uint32_t mid = pos + 1 + rnd() % (end - pos - 1);

					adds[nadd++] = (struct gc_add){ s, pos, mid };
					adds[nadd++] = (struct gc_add){ s, mid, end };
				} else {
					adds[nadd++] = (struct gc_add){ s, pos, end };
				}
				pos = end + rnd() % 15;
			}
		}
		for (unsigned i = nadd; i > 1; i--) {
			unsigned j = rnd() % i;
			struct gc_add t = adds[i - 1];

			adds[i - 1] = adds[j];
			adds[j] = t;
		}
		for (unsigned i = 0; i < nadd; i++) {
			const struct gc_add *x = &adds[i];

			if (x->slot.in_register)
				OK(sw_swu_gc_register(b, x->slot.reg, x->slot.flags, x->start, x->end));
			else
				OK(sw_swu_gc_stack_slot(b, x->slot.cfa_offset, x->slot.flags, x->start, x->end));
		}
		/* Now and then one overlapping range more: refused, and the error sticks. */
		if (nmodel && rnd() % 16 == 0) {
			const struct gc_add *x = &model[rnd() % nmodel];
			uint32_t flags = rnd() % 4;
			size_t len;

			if (x->slot.in_register)
				ck_assert_int_eq(sw_swu_gc_register(b, x->slot.reg, flags, x->end - 1,
				                                    x->end + 1), SW_E_INVAL);
			else
				ck_assert_int_eq(sw_swu_gc_stack_slot(b, x->slot.cfa_offset, flags,
				                                      x->end - 1, x->end + 1), SW_E_INVAL);
			ck_assert_int_eq(sw_swu_finish(b, code_size, NULL, 0, &len), SW_E_INVAL);
			refused++;
			continue;
		}
		bl = finish(b, code_size);
		bl0 = finish(b0, code_size);
		check_same_rules(&bl, &bl0, code_size);
		free(bl0.p);
		/* Distinct (place, flags) pairs are the locations. */
		qsort(model, nmodel, sizeof *model, gc_add_cmp);
		for (unsigned i = 0; i < nmodel; i++)
			nloc += i == 0 || gc_key(&model[i].slot) != gc_key(&model[i - 1].slot);
		OK(sw_swu_decode_header(bl.p, bl.len, &h));
		ck_assert_uint_eq(h.gc_locations, nloc);
		ck_assert_int_eq(sw_swu_dump(null, bl.p, bl.len), SW_OK);
		for (uint32_t off = 0; off <= code_size; off++) {
			struct gc_set g = { 0 };
			unsigned n = 0;

			off_now = off;
			g.stop_after = rnd() % 32 == 0 ? 1 + (int)(rnd() % 3) : 0;
			REQUIRE(sw_swu_gc_live(bl.p, bl.len, off, gc_collect, &g) == SW_OK);
			for (unsigned i = 0; i < nmodel; i++) {
				if (off < model[i].start || off >= model[i].end)
					continue;
				if (g.stop_after && n >= (unsigned)g.stop_after)
					break;
				REQUIRE(n < g.n);
				REQUIRE(!memcmp(&g.s[n], &model[i].slot, sizeof g.s[n]));
				n++;
			}
			REQUIRE(n == g.n);
			checked++;
		}
		free(bl.p);
	}
	fprintf(stderr, "random_gc: %lu offsets checked, %lu misuses refused\n", checked, refused);
	for (unsigned a = 0; a < 3; a++) {
		sw_swu_builder_destroy(bs[a]);
		sw_swu_builder_destroy(b0s[a]);
	}
	fclose(null);
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

/* The new ops, the body section and where the return address is, in the dump. */
START_TEST(dump_text_arch)
{
	static const char *const arm64[] = {
		"SWU version 1, arm64, ",
		"         4         sign_ra                          ; cfa = sp + 0, sp = cfa - 0, ra = lr (signed)\n",
		"         8         push_pair fp, lr, 16             ; cfa = sp + 16, sp = cfa - 16, ra = [cfa - 8] (signed)\n",
		"        16         push_sized x19, 16               ; cfa = fp + 16, sp = cfa - 32, ra = [cfa - 8] (signed)\n",
		"        44 (+4)    pop_sized x19, 16                ; cfa = fp + 16, sp = cfa - 16, ra = [cfa - 8] (signed)\n",
		"        48 (+8)    pop_pair fp, lr, 16              ; cfa = sp + 0, sp = cfa - 0, ra = lr (signed)\n",
		"        52 (+12)   auth_ra                          ; cfa = sp + 0, sp = cfa - 0, ra = lr\n",
	};
	static const char *const frame_lines[] = {
		"        12         save_pair x19, x20 at [sp + 16]  ; cfa = fp + 96, sp = cfa - 96, ra = [cfa - 88]\n",
		"       108 (+8)    restore_pair d14, d15            ; cfa = sp + 96, sp = cfa - 96, ra = [cfa - 88]\n",
	};
	static const char *const x86[] = {
		"SWU version 1, x86, ",
		"code size 60, prolog size 7, 5 prolog ops, 1 epilog, 10 body ops\n",
		"         1         push ebx                         ; cfa = esp + 8, sp = cfa - 8\n",
		"body ops (after the prolog, outside the epilogs):\n",
		"        11         push_args 4                      ; cfa = esp + 36, sp = cfa - 36\n",
		"        20         pop_args 8                       ; cfa = esp + 32, sp = cfa - 32\n",
		"        38         call_pops_args 16                ; cfa = esp + 32, sp = cfa - 32\n",
	};
	struct blob bl = shape_arm64_pac();
	sw_status st;
	char *text = dump_to_string(&bl, &st);

	OK(st);
	for (size_t i = 0; i < NROWS(arm64); i++)
		ck_assert_msg(strstr(text, arm64[i]) != NULL, "missing: %s\nin:\n%s", arm64[i], text);
	free(text);
	free(bl.p);

	bl = shape_arm64_frame();
	text = dump_to_string(&bl, &st);
	OK(st);
	for (size_t i = 0; i < NROWS(frame_lines); i++)
		ck_assert_msg(strstr(text, frame_lines[i]) != NULL, "missing: %s\nin:\n%s",
		              frame_lines[i], text);
	free(text);
	free(bl.p);

	bl = shape_x86_esp();
	text = dump_to_string(&bl, &st);
	OK(st);
	for (size_t i = 0; i < NROWS(x86); i++)
		ck_assert_msg(strstr(text, x86[i]) != NULL, "missing: %s\nin:\n%s", x86[i], text);
	/* The body ops come after the epilog. */
	ck_assert_ptr_nonnull(strstr(strstr(text, "epilog 0 [38, 46)"), "body ops"));
	free(text);
	/* Cut in the body section: the dump stops there. */
	bl.len -= 1;
	text = dump_to_string(&bl, &st);
	ck_assert_int_eq(st, SW_E_TRUNCATED);
	ck_assert_ptr_nonnull(strstr(text, "        49         push_args 4"));
	ck_assert_ptr_null(strstr(text, "        54 "));
	ck_assert_ptr_nonnull(strstr(text, "error at byte"));
	free(text);
	free(bl.p);
}
END_TEST

/* The GC section in the dump, after the unwind ops. */
START_TEST(dump_text_gc)
{
	static const char want[] =
		"code size 40, prolog size 9, 4 prolog ops, 1 epilog, 9 GC locations\n"
		"prolog [0, 9):\n"
		"         1         push rbp                         ; cfa = rsp + 16, sp = cfa - 16\n"
		"         4         set_frame rbp = rsp + 0          ; cfa = rbp + 16, sp = cfa - 16\n"
		"         5         push rbx                         ; cfa = rbp + 16, sp = cfa - 24\n"
		"         9         alloc 24                         ; cfa = rbp + 16, sp = cfa - 48\n"
		"epilog 0 [30, 37): 3 ops\n"
		"        34 (+4)    restore_sp rsp = rbp - 8         ; cfa = rsp + 24, sp = cfa - 24\n"
		"        35 (+5)    pop rbx                          ; cfa = rsp + 16, sp = cfa - 16\n"
		"        36 (+6)    pop rbp                          ; cfa = rsp + 8, sp = cfa - 8\n"
		"GC locations (live ranges [start, end)):\n"
		"  rax         interior           [14, 16)\n"
		"  rbx                            [12, 20) [25, 28)\n"
		"  rdi                            [0, 3)\n"
		"  [cfa - 48]                     [10, 15)\n"
		"  [cfa - 48]  interior           [15, 20)\n"
		"  [cfa - 40]            pinned   [9, 30)\n"
		"  [cfa - 32]                     [9, 15) [20, 30)\n"
		"  [cfa + 0]                      [0, 40)\n"
		"  [cfa + 8]   interior           [0, 9)\n";
	struct blob bl = shape_gc_x64();
	sw_status st;
	char *text = dump_to_string(&bl, &st);

	OK(st);
	ck_assert_ptr_nonnull(strstr(text, "SWU version 1, x64, "));
	ck_assert_str_eq(strchr(text, '\n') + 1, want);
	free(text);
	/* A bad range: the dump stops before the location and names its byte. */
	bl.p[bl.len - 1] = 0x7f;                /* [cfa + 8] for 127 bytes */
	text = dump_to_string(&bl, &st);
	ck_assert_int_eq(st, SW_E_BADMETA);
	ck_assert_ptr_nonnull(strstr(text, "  [cfa + 0]                      [0, 40)\n"));
	ck_assert_ptr_null(strstr(text, "[cfa + 8]"));
	ck_assert_ptr_nonnull(strstr(text, "error at byte 79: "));
	free(text);
	free(bl.p);
}
END_TEST

/* ---- Funclets: the PSP slot and slots in the parent's frame ---- */

/*
 * A funclet: push rbp; sub rsp, 16; (7 bytes storing its parent's CFA at
 * [rsp]) | body | add rsp, 16; pop rbp; ret.  CFA - 32 is the PSP slot;
 * the parent's [CFA - 24] is live in [12, 20).
 */
static void funclet_frame_ops(sw_swu_builder *b)
{
	OK(sw_swu_push_reg(b, 1, RBP));
	OK(sw_swu_alloc_stack(b, 5, 16));
	OK(sw_swu_end_prolog(b, 12));
	OK(sw_swu_epilog_begin(b, 30));
	OK(sw_swu_free_stack(b, 34, 16));
	OK(sw_swu_pop_reg(b, 35, RBP));
	OK(sw_swu_epilog_end(b, 36));
}

static void funclet_ops(sw_swu_builder *b)
{
	OK(sw_swu_psp_slot(b, -32));
	funclet_frame_ops(b);
}

static struct blob shape_funclet(void)
{
	sw_swu_builder *b = new_builder();
	struct blob bl;

	funclet_ops(b);
	OK(sw_swu_gc_stack_slot(b, -24, SW_GC_PARENT_FRAME, 12, 20));
	OK(sw_swu_gc_stack_slot(b, -24, 0, 12, 14));    /* the funclet's own, at the same offset */
	bl = finish(b, 40);
	sw_swu_builder_destroy(b);
	return bl;
}

START_TEST(psp_slot)
{
	/* swu(5): flags GC | PSP, code 40, prolog 12, 2 ops, 1 epilog, PSP slot -32 / 8. */
	static const unsigned char head[] = { 0xe5, 0x11, 0x12, 0x28, 0x0c, 0x02, 0x01, 0x7c, 0x02 };
	struct blob bl = shape_funclet(), plain;
	sw_swu_builder *b = new_builder();
	sw_status st;
	char *text;

	ck_assert(!memcmp(bl.p, head, sizeof head));
	/* Own slot first, the parent's after it (bit 3 is the highest flag). */
	for (uint32_t off = 0; off <= 40; off++) {
		struct gc_set g = { 0 };

		OK(sw_swu_gc_live(bl.p, bl.len, off, gc_collect, &g));
		ck_assert_uint_eq(g.n, off >= 12 && off < 14 ? 2 : off >= 12 && off < 20 ? 1 : 0);
		if (g.n) {
			ck_assert_int_eq(g.s[g.n - 1].cfa_offset, -24);
			ck_assert_uint_eq(g.s[g.n - 1].flags, SW_GC_PARENT_FRAME);
		}
		if (g.n == 2)
			ck_assert_uint_eq(g.s[0].flags, 0);
	}
	text = dump_to_string(&bl, &st);
	OK(st);
	ck_assert_ptr_nonnull(strstr(text, "funclet: parent's CFA (PSP slot) at [cfa - 32]\n"));
	ck_assert_ptr_nonnull(strstr(text, "  [cfa - 24]                     [12, 14)\n"));
	ck_assert_ptr_nonnull(strstr(text, "  [parent cfa - 24]" "                   [12, 20)\n"));
	free(text);

	/* Without the PSP slot the blob is the one it always was: no flag 0x10. */
	funclet_frame_ops(b);
	plain = finish(b, 40);
	ck_assert_uint_eq(plain.p[2], 0x00);
	check_same_rules(&bl, &plain, 40);
	free(plain.p);
	free(bl.p);
	sw_swu_builder_destroy(b);
}
END_TEST

START_TEST(psp_builder_misuse)
{
	static const struct {
		int psp;
		uint32_t start, end;
		sw_status want;
	} parent_slots[] = {
		{ 1, 12, 20, SW_OK },
		{ 0, 12, 20, SW_E_INVAL },      /* no PSP slot */
		{ 1, 10, 20, SW_E_INVAL },      /* in the prolog */
		{ 1, 25, 31, SW_E_INVAL },      /* into the epilog */
	};
	sw_swu_builder *b = new_builder();
	unsigned char buf[128];
	size_t len;

	ck_assert_int_eq(sw_swu_psp_slot(NULL, -32), SW_E_INVAL);
	/* Not below the CFA, the return address's slot, misaligned. */
	ck_assert_int_eq(sw_swu_psp_slot(b, 0), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_psp_slot(b, -8), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_psp_slot(b, -20), SW_E_INVAL);
	sw_swu_builder_reset(b);
	/* A register is the funclet's own. */
	ck_assert_int_eq(sw_swu_gc_register(b, RBX, SW_GC_PARENT_FRAME, 12, 20), SW_E_INVAL);
	sw_swu_builder_reset(b);
	/* A slot in the parent's frame needs the PSP slot, and is live only in the body outside the epilogs. */
	for (unsigned i = 0; i < NROWS(parent_slots); i++) {
		if (parent_slots[i].psp)
			funclet_ops(b);
		else
			funclet_frame_ops(b);
		OK(sw_swu_gc_stack_slot(b, -24, SW_GC_PARENT_FRAME, parent_slots[i].start, parent_slots[i].end));
		ck_assert_int_eq(sw_swu_finish(b, 40, buf, sizeof buf, &len), parent_slots[i].want);
		sw_swu_builder_reset(b);
	}
	/* The PSP slot is the funclet's own: not rbp's save slot, not below SP. */
	funclet_ops(b);
	OK(sw_swu_psp_slot(b, -16));
	ck_assert_int_eq(sw_swu_finish(b, 40, buf, sizeof buf, &len), SW_E_INVAL);
	OK(sw_swu_psp_slot(b, -40));
	ck_assert_int_eq(sw_swu_finish(b, 40, buf, sizeof buf, &len), SW_E_INVAL);
	sw_swu_builder_reset(b);
	/* Row operations describe imported native code, never a funclet. */
	OK(sw_swu_psp_slot(b, -16));
	OK(sw_swu_def_cfa_offset(b, 1, 16));
	ck_assert_int_eq(sw_swu_finish(b, 8, buf, sizeof buf, &len), SW_E_INVAL);
	sw_swu_builder_destroy(b);
}
END_TEST

START_TEST(psp_bad_blobs)
{
	struct blob bl = shape_funclet();
	unsigned char b[128];
	size_t n = bl.len;

	ck_assert_uint_le(n, sizeof b);
#define PATCH(i, v, want) do { memcpy(b, bl.p, n); b[i] = (v); \
	ck_assert_int_eq(validate_bytes(b, n), (want)); } while (0)
	PATCH(7, 0x7d, SW_OK);                  /* cfa - 24: free in the body frame */
	PATCH(7, 0x00, SW_E_BADMETA);           /* at the CFA */
	PATCH(7, 0x01, SW_E_BADMETA);           /* above it */
	PATCH(7, 0x7f, SW_E_BADMETA);           /* the return address */
	PATCH(7, 0x7e, SW_E_BADMETA);           /* where the prolog saved rbp */
	PATCH(7, 0x7b, SW_E_BADMETA);           /* below the body's SP */
	PATCH(2, 0x16, SW_E_BADMETA);           /* with rows */
	/* The parent's range (the last two bytes: start delta, length) in the prolog or an epilog. */
	PATCH(n - 2, 4, SW_E_BADMETA);
	PATCH(n - 1, 20, SW_E_BADMETA);
	PATCH(n - 1, 17, SW_OK);                /* [12, 29): up to the epilog */
	/* The parent's slot without the PSP slot: flag and byte gone. */
	memcpy(b, bl.p, 7);
	memcpy(b + 7, bl.p + 8, n - 8);
	b[2] = 0x02;
	ck_assert_int_eq(validate_bytes(b, n - 1), SW_E_BADMETA);
	ck_assert_int_eq(sw_swu_gc_live(b, n - 1, 15, gc_collect, &(struct gc_set){ 0 }), SW_E_BADMETA);
	/* A register in the parent's frame: the kind byte of the first of the two 5-byte locations. */
	memcpy(b, bl.p, n);
	ck_assert_uint_eq(b[n - 10], 0x00);
	b[n - 10] = 0x0c;
	ck_assert_int_eq(validate_bytes(b, n), SW_E_BADMETA);
#undef PATCH
	free(bl.p);
}
END_TEST

/* ---- Row operations (imported CFI) ---- */

/* The x64 example of swu(5): push rbp; mov rbp, rsp; ... leave; ret. */
static struct blob shape_rows_x64(void)
{
	sw_swu_builder *b = new_builder();
	struct blob bl;

	OK(sw_swu_def_cfa_offset(b, 1, 16));
	OK(sw_swu_saved_at(b, 1, RBP, -16));
	OK(sw_swu_def_cfa(b, 4, RBP, 16));
	OK(sw_swu_def_cfa(b, 21, RSP, 8));
	OK(sw_swu_same_value(b, 21, RBP));
	bl = finish(b, 22);
	sw_swu_builder_destroy(b);
	return bl;
}

/* A copy of `len` bytes in a block of exactly that size. */
static struct blob blob_of(const unsigned char *bytes, size_t len)
{
	struct blob bl = { malloc(len ? len : 1), len };

	ck_assert_ptr_nonnull(bl.p);
	memcpy(bl.p, bytes, len);
	return bl;
}

START_TEST(rows_x64)
{
	/* The compact form the builder writes: a push byte, then full ops. */
	static const unsigned char bytes[] = {
		0xe5, 0x11, 0x0c, 0x16, 0x05,
		0xb1,                                   /* push rbp, end delta 1 */
		0x10, 0x03, 0x06, 0x10,                 /* def_cfa rbp + 16 */
		0x10, 0x11, 0x07, 0x08,                 /* def_cfa rsp + 8 */
		0x13, 0x00, 0x06,                       /* same_value rbp */
	};
	/* The plain form of the same ops, as blobs written before the compact one. */
	static const unsigned char plain[] = {
		0xe5, 0x11, 0x04, 0x16, 0x05,
		0x01, 0x11, 0x10,
		0x00, 0x12, 0x06, 0x70,
		0x03, 0x10, 0x06, 0x10,
		0x11, 0x10, 0x07, 0x08,
		0x00, 0x13, 0x06,
	};
	/* While the CFA is on rbp, SP's depth is the last one known (16). */
	static const struct row rows[] = {
		{ 0,  SW_SWU_BODY, RSP, 8,  8,  "" },
		{ 1,  SW_SWU_BODY, RSP, 16, 16, "rbp:-16" },
		{ 4,  SW_SWU_BODY, RBP, 16, 16, "rbp:-16" },
		{ 21, SW_SWU_BODY, RSP, 8,  8,  "" },
	};
	struct blob bl = shape_rows_x64();
	sw_swu_header h;

	ck_assert_uint_eq(bl.len, sizeof bytes);
	ck_assert_int_eq(memcmp(bl.p, bytes, sizeof bytes), 0);
	ck_assert_int_eq(sw_swu_decode_header(bl.p, bl.len, &h), SW_OK);
	ck_assert_uint_eq(h.row_ops, 5);
	ck_assert_uint_eq(h.code_size, 22);
	ck_assert_uint_eq(h.prolog_size + h.prolog_ops + h.epilogs + h.body_ops, 0);
	check_rules(&bl, 22, rows, NROWS(rows));
	free(bl.p);
	bl = blob_of(plain, sizeof plain);
	ck_assert_int_eq(sw_swu_validate(bl.p, bl.len), SW_OK);
	ck_assert_int_eq(sw_swu_decode_header(bl.p, bl.len, &h), SW_OK);
	ck_assert_uint_eq(h.row_ops, 5);
	check_rules(&bl, 22, rows, NROWS(rows));
	free(bl.p);
}
END_TEST

/*
 * Rows that the prolog form cannot say: a cold part entered with a frame
 * (ops at 0), the return address moved (x86), any register as the CFA,
 * a CFA offset below the frame register, GC information with rows.
 */
START_TEST(rows_x86_and_arm64)
{
	static const struct arow x86[] = {
		{ 0, SW_SWU_BODY, SW_X86_ESP, 24, 24, "-4", "ebx:-8 esi:-12" },
		{ 3, SW_SWU_BODY, SW_X86_ECX, -4, 24, "-12", "ebx:-8 esi:-12" },
		{ 5, SW_SWU_BODY, SW_X86_ECX, -4, 24, "-12", "esi:-12" },
		{ 9, SW_SWU_BODY, SW_X86_ESP, 4, 4, "-4", "" },
	};
	static const struct arow arm64[] = {
		{ 0,  SW_SWU_BODY, SW_ARM64_SP, 0,  0,  "lr", "" },
		{ 4,  SW_SWU_BODY, SW_ARM64_SP, 32, 32, "-24", "fp:-32 lr:-24" },
		{ 8,  SW_SWU_BODY, SW_ARM64_FP, 32, 32, "-24", "fp:-32 lr:-24 d8:-16" },
		{ 24, SW_SWU_BODY, SW_ARM64_SP, 0,  0,  "lr", "" },
	};
	sw_swu_builder *b = new_builder_for(SW_ARCH_X86);
	struct blob bl;

	OK(sw_swu_def_cfa_offset(b, 0, 24));
	OK(sw_swu_saved_at(b, 0, SW_X86_EBX, -8));
	OK(sw_swu_saved_at(b, 0, SW_X86_ESI, -12));
	OK(sw_swu_def_cfa(b, 3, SW_X86_ECX, -4));
	OK(sw_swu_saved_at(b, 3, SW_X86_EIP, -12));
	OK(sw_swu_same_value(b, 5, SW_X86_EBX));
	OK(sw_swu_def_cfa(b, 9, SW_X86_ESP, 4));
	OK(sw_swu_saved_at(b, 9, SW_X86_EIP, -4));
	OK(sw_swu_same_value(b, 9, SW_X86_ESI));
	OK(sw_swu_gc_register(b, SW_X86_EAX, 0, 2, 6));
	bl = finish(b, 12);
	check_arch_rules(&bl, SW_ARCH_X86, 12, x86, NROWS(x86), NULL, 0);
	free(bl.p);
	sw_swu_builder_destroy(b);

	b = new_builder_for(SW_ARCH_ARM64);
	OK(sw_swu_def_cfa_offset(b, 4, 32));
	OK(sw_swu_saved_at(b, 4, SW_ARM64_FP, -32));
	OK(sw_swu_saved_at(b, 4, SW_ARM64_LR, -24));
	OK(sw_swu_def_cfa(b, 8, SW_ARM64_FP, 32));
	OK(sw_swu_saved_at(b, 8, SW_ARM64_D8, -16));
	OK(sw_swu_def_cfa(b, 24, SW_ARM64_SP, 0));
	OK(sw_swu_same_value(b, 24, SW_ARM64_FP));
	OK(sw_swu_same_value(b, 24, SW_ARM64_LR));
	OK(sw_swu_same_value(b, 24, SW_ARM64_D8));
	bl = finish(b, 28);
	check_arch_rules(&bl, SW_ARCH_ARM64, 28, arm64, NROWS(arm64), NULL, 0);
	free(bl.p);
	sw_swu_builder_destroy(b);
}
END_TEST

START_TEST(rows_misuse)
{
	sw_swu_builder *b = new_builder();
	unsigned char buf[64];
	size_t len;

	/* Bad registers and offsets stick like any error. */
	ck_assert_int_eq(sw_swu_def_cfa(b, 0, SW_X64_RIP, 8), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_def_cfa_offset(b, 0, 8), SW_E_INVAL);
	sw_swu_builder_reset(b);
	/* CFI's word even for a CFA below SP; but within the frame limit. */
	OK(sw_swu_def_cfa(b, 0, RSP, -8));
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_def_cfa(b, 0, RSP, -(int32_t)SW_SWU_MAX_FRAME - 8), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_def_cfa(b, 0, 17, 8), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_saved_at(b, 0, RSP, -8), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_same_value(b, 0, SW_X64_RIP), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_saved_at(b, 0, RBX, (int32_t)SW_SWU_MAX_FRAME + 8), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_def_cfa(b, 0, RBP, INT32_MIN), SW_E_INVAL);
	sw_swu_builder_reset(b);
	/* Ends never decrease; equal ends are fine. */
	OK(sw_swu_def_cfa_offset(b, 5, 16));
	OK(sw_swu_saved_at(b, 5, RBX, -16));
	ck_assert_int_eq(sw_swu_same_value(b, 4, RBX), SW_E_INVAL);
	sw_swu_builder_reset(b);
	/* Not mixed with the prolog form, either way. */
	OK(sw_swu_def_cfa_offset(b, 1, 16));
	ck_assert_int_eq(sw_swu_push_reg(b, 2, RBX), SW_E_STATE);
	sw_swu_builder_reset(b);
	OK(sw_swu_def_cfa_offset(b, 1, 16));
	ck_assert_int_eq(sw_swu_end_prolog(b, 2), SW_E_STATE);
	sw_swu_builder_reset(b);
	OK(sw_swu_push_reg(b, 1, RBX));
	ck_assert_int_eq(sw_swu_def_cfa_offset(b, 1, 16), SW_E_STATE);
	sw_swu_builder_reset(b);
	OK(sw_swu_end_prolog(b, 0));
	ck_assert_int_eq(sw_swu_saved_at(b, 1, RBX, -16), SW_E_STATE);
	sw_swu_builder_reset(b);
	/* The code must hold every op; arm64 has no instruction-pointer column. */
	OK(sw_swu_def_cfa_offset(b, 10, 16));
	ck_assert_int_eq(sw_swu_finish(b, 9, buf, sizeof buf, &len), SW_E_INVAL);
	OK(sw_swu_finish(b, 10, buf, sizeof buf, &len));
	sw_swu_builder_destroy(b);
	b = new_builder_for(SW_ARCH_ARM64);
	ck_assert_int_eq(sw_swu_saved_at(b, 0, SW_ARM64_PC, -8), SW_E_INVAL);
	sw_swu_builder_destroy(b);
	/* The op limit. */
	b = new_builder();
	for (unsigned i = 0; i < SW_SWU_MAX_ROW_OPS; i++)
		OK(sw_swu_def_cfa_offset(b, i, 8 + 8 * (int32_t)(i & 1)));
	ck_assert_int_eq(sw_swu_def_cfa_offset(b, SW_SWU_MAX_ROW_OPS, 8), SW_E_LIMIT);
	sw_swu_builder_destroy(b);
}
END_TEST

/*
 * GCC's i386 main realigning its stack: the CFA read from [ebp - 12],
 * registers saved relative to ebp (its CFI's DW_CFA_def_cfa_expression and
 * DW_CFA_expression), then torn down.
 */
static struct blob shape_rows_deref(sw_swu_builder *b)
{
	OK(sw_swu_def_cfa(b, 4, SW_X86_ECX, 0));
	OK(sw_swu_saved_at_reg(b, 9, SW_X86_EBP, SW_X86_EBP, 0));
	OK(sw_swu_def_cfa_deref(b, 12, SW_X86_EBP, -12));
	OK(sw_swu_saved_at_reg(b, 12, SW_X86_ESI, SW_X86_EBP, -4));
	OK(sw_swu_saved_at_reg(b, 12, SW_X86_EBX, SW_X86_EBP, -8));
	OK(sw_swu_def_cfa(b, 20, SW_X86_ECX, 0));
	OK(sw_swu_same_value(b, 21, SW_X86_EBX));
	OK(sw_swu_saved_at(b, 22, SW_X86_ESI, -8));     /* back to CFA-relative */
	OK(sw_swu_same_value(b, 23, SW_X86_EBP));
	OK(sw_swu_same_value(b, 23, SW_X86_ESI));
	OK(sw_swu_def_cfa(b, 26, SW_X86_ESP, 4));
	return finish(b, 27);
}

START_TEST(rows_deref)
{
	/* Compact: every op full, its opcode before its end delta. */
	static const unsigned char bytes[] = {
		0xe5, 0x12, 0x0c, 0x1b, 0x0b,
		0x10, 0x04, 0x01, 0x00,                 /* def_cfa ecx + 0 */
		0x15, 0x05, 0x05, 0x05, 0x00,           /* saved_at_reg ebp at [ebp + 0] */
		0x14, 0x03, 0x05, 0x74,                 /* def_cfa_deref [ebp - 12] */
		0x15, 0x00, 0x06, 0x05, 0x7c,           /* saved_at_reg esi at [ebp - 4] */
		0x15, 0x00, 0x03, 0x05, 0x78,           /* saved_at_reg ebx at [ebp - 8] */
		0x10, 0x08, 0x01, 0x00,
		0x13, 0x01, 0x03,
		0x12, 0x01, 0x06, 0x78,                 /* saved_at esi at -8: the CFA is 0, no slot */
		0x13, 0x01, 0x05,
		0x13, 0x00, 0x06,
		0x10, 0x03, 0x04, 0x04,
	};
	static const unsigned char plain[] = {
		0xe5, 0x12, 0x04, 0x1b, 0x0b,
		0x04, 0x10, 0x01, 0x00,
		0x05, 0x15, 0x05, 0x05, 0x00,
		0x03, 0x14, 0x05, 0x74,
		0x00, 0x15, 0x06, 0x05, 0x7c,
		0x00, 0x15, 0x03, 0x05, 0x78,
		0x08, 0x10, 0x01, 0x00,
		0x01, 0x13, 0x03,
		0x01, 0x12, 0x06, 0x78,
		0x01, 0x13, 0x05,
		0x00, 0x13, 0x06,
		0x03, 0x10, 0x04, 0x04,
	};
	unsigned char *old = malloc(sizeof plain);
	const uint8_t C = SW_SWU_BASE_CFA, E = SW_X86_EBP;
	/* At each offset: CFA, deref, then ebx, esi, ebp: base (C: the CFA) and offset. */
	static const struct {
		uint32_t from;
		unsigned cfa_reg;
		int32_t cfa_offset;
		unsigned deref;
		int saved[3];           /* ebx, esi, ebp: 1 saved */
		uint8_t base[3];
		int32_t off[3];
	} want[] = {
		{ 0,  SW_X86_ESP, 4,   0, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } },
		{ 4,  SW_X86_ECX, 0,   0, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } },
		{ 9,  SW_X86_ECX, 0,   0, { 0, 0, 1 }, { 0, 0, 1 }, { 0, 0, 0 } },
		{ 12, SW_X86_EBP, -12, 1, { 1, 1, 1 }, { 1, 1, 1 }, { -8, -4, 0 } },
		{ 20, SW_X86_ECX, 0,   0, { 1, 1, 1 }, { 1, 1, 1 }, { -8, -4, 0 } },
		{ 21, SW_X86_ECX, 0,   0, { 0, 1, 1 }, { 0, 1, 1 }, { 0, -4, 0 } },
		{ 22, SW_X86_ECX, 0,   0, { 0, 1, 1 }, { 0, 0, 1 }, { 0, -8, 0 } },
		{ 23, SW_X86_ECX, 0,   0, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } },
		{ 26, SW_X86_ESP, 4,   0, { 0, 0, 0 }, { 0, 0, 0 }, { 0, 0, 0 } },
	};
	static const unsigned regs[3] = { SW_X86_EBX, SW_X86_ESI, SW_X86_EBP };
	sw_swu_builder *b = new_builder_for(SW_ARCH_X86);
	struct blob bl = shape_rows_deref(b);
	size_t i = 0;
	char *text = NULL;
	size_t text_len = 0;
	FILE *mem;

	ck_assert_uint_eq(bl.len, sizeof bytes);
	ck_assert_int_eq(memcmp(bl.p, bytes, sizeof bytes), 0);
	ck_assert_ptr_nonnull(old);
	memcpy(old, plain, sizeof plain);
	ck_assert_int_eq(sw_swu_validate(old, sizeof plain), SW_OK);
	for (uint32_t off = 0; off <= 27; off++) {
		sw_swu_rule r, ra, o;
		uint64_t mask = 0;

		while (i + 1 < NROWS(want) && want[i + 1].from <= off)
			i++;
		memset(&r, 0x5a, sizeof r);
		OK(sw_swu_decode(bl.p, bl.len, off, &r));
		/* The plain form says the same. */
		memset(&o, 0x5a, sizeof o);
		OK(sw_swu_decode(old, sizeof plain, off, &o));
		ck_assert_int_eq(memcmp(&r, &o, sizeof r), 0);
		ck_assert_msg(r.cfa_reg == want[i].cfa_reg && r.cfa_offset == want[i].cfa_offset &&
		              r.cfa_deref == want[i].deref, "cfa at %u: %u%+d deref %u", off,
		              r.cfa_reg, r.cfa_offset, r.cfa_deref);
		ck_assert_int_eq(r.ra_in_reg, 0);
		ck_assert_int_eq(r.ra_offset, -4);
		ck_assert_uint_eq(r.reserved, 0);
		for (unsigned k = 0; k < 3; k++) {
			unsigned reg = regs[k];

			if (want[i].saved[k])
				mask |= 1ULL << reg;
			ck_assert_msg(r.saved_offset[reg] == want[i].off[k], "%s at %u: %d", 
			              sw_arch_reg_name(SW_ARCH_X86, reg), off, r.saved_offset[reg]);
			ck_assert_msg(r.saved_base[reg] == (want[i].base[k] ? E : C),
			              "%s base at %u: %u", sw_arch_reg_name(SW_ARCH_X86, reg), off,
			              r.saved_base[reg]);
		}
		ck_assert_msg(r.saved_mask == mask, "saved at %u: %#llx", off,
		              (unsigned long long)r.saved_mask);
		for (unsigned reg = 0; reg < SW_MAX_REGS; reg++)
			if (!(mask & (1ULL << reg)))
				ck_assert_uint_eq(r.saved_base[reg], C);
		/* A return address: the rule at off - 1. */
		OK(sw_swu_decode(bl.p, bl.len, off ? off - 1 : 0, &r));
		memset(&ra, 0x5a, sizeof ra);
		OK(sw_swu_decode_return_address(bl.p, bl.len, off, &ra));
		ck_assert_int_eq(memcmp(&r, &ra, sizeof r), 0);
	}
	/* The dump names both. */
	mem = open_memstream(&text, &text_len);
	ck_assert_ptr_nonnull(mem);
	OK(sw_swu_dump(mem, bl.p, bl.len));
	fclose(mem);
	ck_assert_msg(strstr(text, "def_cfa_deref [ebp - 12]") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "saved_at_reg esi at [ebp - 4]") != NULL, "%s", text);
	ck_assert_msg(strstr(text, "cfa = [ebp - 12]") != NULL, "%s", text);
	free(text);
	free(bl.p);
	free(old);

	/* Misuse. */
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_def_cfa_deref(b, 0, SW_X86_EIP, 0), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_def_cfa_deref(b, 0, SW_X86_EBP, (int32_t)SW_SWU_MAX_FRAME + 4),
	                 SW_E_INVAL);
	sw_swu_builder_reset(b);
	OK(sw_swu_def_cfa_deref(b, 0, SW_X86_ESP, 8));          /* [esp + 8] is sayable */
	ck_assert_int_eq(sw_swu_def_cfa_offset(b, 1, 8), SW_E_INVAL);
	sw_swu_builder_reset(b);
	OK(sw_swu_def_cfa_deref(b, 0, SW_X86_EBP, -4));
	OK(sw_swu_def_cfa(b, 1, SW_X86_EBP, 8));
	OK(sw_swu_def_cfa_offset(b, 2, 12));                     /* a plain CFA again */
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_saved_at_reg(b, 0, SW_X86_EIP, SW_X86_EBP, 0), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_saved_at_reg(b, 0, SW_X86_ESP, SW_X86_EBP, 0), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_saved_at_reg(b, 0, SW_X86_EBX, SW_X86_EIP, 0), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_saved_at_reg(b, 0, SW_X86_EBX, 200, 0), SW_E_INVAL);
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_saved_at_reg(b, 0, SW_X86_EBX, SW_X86_EBP, INT32_MIN), SW_E_INVAL);
	sw_swu_builder_reset(b);
	OK(sw_swu_saved_at_reg(b, 0, SW_X86_EBX, SW_X86_ESP, 4));
	sw_swu_builder_destroy(b);
	b = new_builder_for(SW_ARCH_ARM64);
	ck_assert_int_eq(sw_swu_saved_at_reg(b, 0, SW_ARM64_LR, SW_ARM64_FP, 8), SW_E_INVAL);
	sw_swu_builder_reset(b);
	OK(sw_swu_saved_at_reg(b, 0, SW_ARM64_X19, SW_ARM64_FP, 8));
	sw_swu_builder_destroy(b);
}
END_TEST

START_TEST(rows_deref_bad_blobs)
{
	sw_swu_builder *b = new_builder_for(SW_ARCH_X86);
	struct blob bl = shape_rows_deref(b);
	unsigned char *p;
	sw_swu_rule r;

	sw_swu_builder_destroy(b);
	p = malloc(bl.len);
	ck_assert_ptr_nonnull(p);
#define PATCH(i, v, want) do { memcpy(p, bl.p, bl.len); p[i] = (v); \
	ck_assert_int_eq(validate_bytes(p, bl.len), (want)); } while (0)
	PATCH(16, 0x08, SW_E_BADMETA);          /* def_cfa_deref eip */
	PATCH(16, 0x04, SW_OK);                 /* def_cfa_deref [esp - 12] */
	PATCH(11, 0x08, SW_E_BADMETA);          /* saved_at_reg eip */
	PATCH(11, 0x04, SW_E_BADMETA);          /* saved_at_reg esp */
	PATCH(12, 0x08, SW_E_BADMETA);          /* based on eip */
	PATCH(12, 0x7f, SW_E_BADMETA);          /* based on register 127 */
	PATCH(12, 0x04, SW_OK);                 /* based on esp */
	PATCH(29, 0x11, SW_E_BADMETA);          /* def_cfa_offset while the CFA is read */
	PATCH(15, 0x16, SW_E_BADMETA);          /* reserved */
#undef PATCH
	for (size_t cut = 0; cut < bl.len; cut++) {
		ck_assert_int_ne(sw_swu_validate(bl.p, cut), SW_OK);
		for (uint32_t off = 0; off <= 27; off++)
			sw_swu_decode(bl.p, cut, off, &r);
	}
	for (unsigned iter = 0; iter < test_rounds(20000); iter++) {
		sw_status v;

		memcpy(p, bl.p, bl.len);
		p[5 + rand() % (bl.len - 5)] = (unsigned char)rand();
		if (iter & 1)
			p[5 + rand() % (bl.len - 5)] = (unsigned char)rand();
		v = sw_swu_validate(p, bl.len);
		for (uint32_t off = 0; off <= 28; off++) {
			sw_status d = sw_swu_decode(p, bl.len, off, &r);

			if (v == SW_OK && off <= 27)
				ck_assert_int_eq(d, SW_OK);
			if (d == SW_OK) {
				ck_assert_uint_lt(r.cfa_reg, SW_X86_NREGS);
				ck_assert_uint_le(r.cfa_deref, 1);
				for (unsigned reg = 0; reg < SW_MAX_REGS; reg++)
					ck_assert(r.saved_base[reg] == SW_SWU_BASE_CFA ||
					          r.saved_base[reg] < SW_X86_NREGS);
			}
		}
	}
	free(p);
	free(bl.p);
}
END_TEST

/*
 * A good row blob of `len` bytes (valid up to offset 22): each cut of it is
 * refused, and 20,000 blobs with a byte or two changed past the header
 * either validate and decode everywhere or are refused, the decoder never
 * straying.
 */
static void check_hostile_rows(const unsigned char *good, size_t len)
{
	sw_swu_rule r;

	for (size_t cut = 0; cut < len; cut++) {
		unsigned char *p = malloc(cut ? cut : 1);

		memcpy(p, good, cut);
		ck_assert_int_ne(sw_swu_validate(p, cut), SW_OK);
		for (uint32_t off = 0; off <= 22; off++)
			sw_swu_decode(p, cut, off, &r);
		free(p);
	}
	for (unsigned iter = 0; iter < test_rounds(20000); iter++) {
		unsigned char *p = malloc(len);
		sw_status v;

		memcpy(p, good, len);
		p[5 + rand() % (len - 5)] = (unsigned char)rand();
		if (iter & 1)
			p[5 + rand() % (len - 5)] = (unsigned char)rand();
		v = sw_swu_validate(p, len);
		for (uint32_t off = 0; off <= 24; off++) {
			sw_status d = sw_swu_decode(p, len, off, &r);

			/* What validates, decodes. */
			if (v == SW_OK && off <= 22)
				ck_assert_int_eq(d, SW_OK);
			if (d == SW_OK)
				ck_assert_uint_lt(r.cfa_reg, SW_X64_NREGS);
		}
		free(p);
	}
}

START_TEST(rows_bad_blobs)
{
	static const unsigned char good[] = {
		0xe5, 0x11, 0x04, 0x16, 0x05,
		0x01, 0x11, 0x10, 0x00, 0x12, 0x06, 0x70, 0x03, 0x10, 0x06, 0x10,
		0x11, 0x10, 0x07, 0x08, 0x00, 0x13, 0x06,
	};
	unsigned char b[sizeof good];

	ck_assert_int_eq(validate_bytes(good, sizeof good), SW_OK);
#define PATCH(i, v, want) do { memcpy(b, good, sizeof good); b[i] = (v); \
	ck_assert_int_eq(validate_bytes(b, sizeof good), (want)); } while (0)
	PATCH(2, 0x05, SW_E_BADMETA);           /* rows with body ops */
	PATCH(4, 0x00, SW_E_BADMETA);           /* no row op */
	PATCH(4, 0x06, SW_E_TRUNCATED);         /* one more than there is */
	PATCH(4, 0x04, SW_E_BADMETA);           /* one byte too many */
	PATCH(3, 0x14, SW_E_BADMETA);           /* an op beyond the code */
	PATCH(6, 0x01, SW_E_BADMETA);           /* a prolog op among rows */
	PATCH(6, 0x16, SW_E_BADMETA);           /* a reserved opcode */
	PATCH(10, 0x07, SW_E_BADMETA);          /* saved_at rsp */
	PATCH(14, 0x10, SW_E_BADMETA);          /* def_cfa rip */
	PATCH(18, 0x11, SW_E_BADMETA);          /* def_cfa register 17 */
	PATCH(19, 0x78, SW_OK);                 /* def_cfa rsp, -8: as CFI may say */
	PATCH(22, 0x10, SW_E_BADMETA);          /* same_value rip */
	PATCH(16, 0x00, SW_OK);                 /* end 4: rules may change anywhere */
#undef PATCH
	/* Hostile rows never lead the decoder astray. */
	check_hostile_rows(good, sizeof good);
}
END_TEST

/* ---- The compact row form: round trips and hostile bytes ---- */

/* One row op as a JIT or the CFI importer gives it to the builder. */
struct rop {
	uint32_t end;
	unsigned code;                  /* the plain opcode: ROP_* */
	unsigned reg, reg2;
	int32_t arg;
};

enum {
	ROP_DEF_CFA = 0x10, ROP_CFA_OFFSET = 0x11, ROP_SAVED_AT = 0x12,
	ROP_SAME_VALUE = 0x13, ROP_CFA_DEREF = 0x14, ROP_SAVED_AT_REG = 0x15,
};

static void put_uleb(unsigned char *buf, size_t *len, uint32_t v)
{
	do {
		unsigned char b = v & 0x7f;

		v >>= 7;
		buf[(*len)++] = v ? b | 0x80 : b;
	} while (v);
}

static void put_sleb(unsigned char *buf, size_t *len, int32_t v)
{
	int64_t x = v;

	for (;;) {
		unsigned char b = (unsigned char)(x & 0x7f);

		x = x < 0 ? ~(~x >> 7) : x >> 7;
		if ((x == 0 && !(b & 0x40)) || (x == -1 && (b & 0x40))) {
			buf[(*len)++] = b;
			return;
		}
		buf[(*len)++] = b | 0x80;
	}
}

/* The header the builder writes before row ops: flags 0x04 plain, 0x0c compact. */
static size_t rows_header(unsigned char *buf, sw_arch arch, unsigned flags, uint32_t code_size,
                          size_t nops)
{
	size_t len = 0;

	buf[len++] = 0xe5;
	buf[len++] = (unsigned char)(0x10 | arch);
	buf[len++] = (unsigned char)flags;
	put_uleb(buf, &len, code_size);
	put_uleb(buf, &len, (uint32_t)nops);
	return len;
}

/* The plain row form of `ops`, the way every row blob was written before the compact one. */
static struct blob plain_rows(sw_arch arch, const struct rop *ops, size_t n, uint32_t code_size)
{
	unsigned char buf[1024];
	size_t len = rows_header(buf, arch, 0x04, code_size, n);
	uint32_t prev = 0;

	for (size_t i = 0; i < n; i++) {
		put_uleb(buf, &len, ops[i].end - prev);
		buf[len++] = (unsigned char)ops[i].code;
		if (ops[i].code != ROP_CFA_OFFSET)
			put_uleb(buf, &len, ops[i].reg);
		if (ops[i].code == ROP_SAVED_AT_REG)
			put_uleb(buf, &len, ops[i].reg2);
		if (ops[i].code != ROP_SAME_VALUE)
			put_sleb(buf, &len, ops[i].arg);
		prev = ops[i].end;
		ck_assert_uint_lt(len, sizeof buf - 16);
	}
	return blob_of(buf, len);
}

static struct blob built_rows(sw_arch arch, const struct rop *ops, size_t n, uint32_t code_size)
{
	sw_swu_builder *b = new_builder_for(arch);
	struct blob bl;

	for (size_t i = 0; i < n; i++) {
		const struct rop *o = &ops[i];
		sw_status st = SW_E_INVAL;

		switch (o->code) {
		case ROP_DEF_CFA:      st = sw_swu_def_cfa(b, o->end, o->reg, o->arg); break;
		case ROP_CFA_OFFSET:   st = sw_swu_def_cfa_offset(b, o->end, o->arg); break;
		case ROP_SAVED_AT:     st = sw_swu_saved_at(b, o->end, o->reg, o->arg); break;
		case ROP_SAME_VALUE:   st = sw_swu_same_value(b, o->end, o->reg); break;
		case ROP_CFA_DEREF:    st = sw_swu_def_cfa_deref(b, o->end, o->reg, o->arg); break;
		case ROP_SAVED_AT_REG: st = sw_swu_saved_at_reg(b, o->end, o->reg, o->reg2, o->arg); break;
		}
		ck_assert_msg(st == SW_OK, "op %zu (%#x at %u): %s", i, o->code, o->end, sw_strerror(st));
	}
	bl = finish(b, code_size);
	sw_swu_builder_destroy(b);
	return bl;
}

/* The dump without its first line (which counts the bytes). */
static char *dump_ops(const struct blob *bl)
{
	char *text = NULL, *nl;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(sw_swu_dump(f, bl->p, bl->len), SW_OK);
	fclose(f);
	nl = strchr(text, '\n');
	ck_assert_ptr_nonnull(nl);
	memmove(text, nl + 1, strlen(nl + 1) + 1);
	return text;
}

/*
 * Built with the builder, `ops` must give exactly `header + compact`; that
 * blob and the plain one must hold the same ops (the dump prints each op
 * the validator read) and the same rule at every offset.
 */
static void same_as_plain(sw_arch arch, const struct rop *ops, size_t n, uint32_t code_size,
                          const struct blob *compact)
{
	const struct blob c = *compact;
	struct blob p = plain_rows(arch, ops, n, code_size);
	char *ct, *pt;

	ck_assert_int_eq(sw_swu_validate(p.p, p.len), SW_OK);
	ck_assert_uint_le(c.len, p.len);
	ct = dump_ops(&c);
	pt = dump_ops(&p);
	ck_assert_str_eq(ct, pt);
	for (uint32_t off = 0; off <= code_size; off++) {
		sw_swu_rule rc, rp;

		memset(&rc, 0x5a, sizeof rc);
		memset(&rp, 0xa5, sizeof rp);
		OK(sw_swu_decode(c.p, c.len, off, &rc));
		OK(sw_swu_decode(p.p, p.len, off, &rp));
		ck_assert_msg(memcmp(&rc, &rp, sizeof rc) == 0, "rules differ at %u", off);
		memset(&rc, 0x5a, sizeof rc);
		memset(&rp, 0xa5, sizeof rp);
		OK(sw_swu_decode_return_address(c.p, c.len, off, &rc));
		OK(sw_swu_decode_return_address(p.p, p.len, off, &rp));
		ck_assert_msg(memcmp(&rc, &rp, sizeof rc) == 0, "return rules differ at %u", off);
	}
	free(ct);
	free(pt);
	free(p.p);
}

static void check_compact(sw_arch arch, const struct rop *ops, size_t n, uint32_t code_size,
                          const unsigned char *compact, size_t compact_len)
{
	unsigned char want[256];
	size_t len = rows_header(want, arch, 0x0c, code_size, n);
	struct blob c = built_rows(arch, ops, n, code_size);

	memcpy(want + len, compact, compact_len);
	len += compact_len;
	for (size_t i = 0; i < len && i < c.len; i++)
		ck_assert_msg(c.p[i] == want[i], "byte %zu: %#x, want %#x", i, c.p[i], want[i]);
	ck_assert_uint_eq(c.len, len);
	same_as_plain(arch, ops, n, code_size, &c);
	free(c.p);
}

#define CHECK_COMPACT(arch, ops, code_size, ...) do { \
	static const unsigned char bytes_[] = { __VA_ARGS__ }; \
	check_compact(arch, ops, NROWS(ops), code_size, bytes_, sizeof bytes_); } while (0)

/* Pushes (one byte for two ops) and single-word steps, at their end-delta bounds. */
START_TEST(compact_push_and_steps)
{
	static const struct rop ops[] = {
		{ 0,  ROP_CFA_OFFSET, 0, 0, 16 }, { 0, ROP_SAVED_AT, RBX, 0, -16 },
		{ 7,  ROP_CFA_OFFSET, 0, 0, 24 }, { 7, ROP_SAVED_AT, R15, 0, -24 },
		{ 15, ROP_CFA_OFFSET, 0, 0, 32 }, { 15, ROP_SAVED_AT, RBP, 0, -32 },
		{ 16, ROP_CFA_OFFSET, 0, 0, 24 },
		{ 17, ROP_CFA_OFFSET, 0, 0, 16 },
		{ 17, ROP_CFA_OFFSET, 0, 0, 8 },
		{ 32, ROP_CFA_OFFSET, 0, 0, 16 },
		{ 48, ROP_CFA_OFFSET, 0, 0, 8 },
		{ 64, ROP_CFA_OFFSET, 0, 0, 16 },
		{ 65, ROP_CFA_OFFSET, 0, 0, 8 },
	};

	CHECK_COMPACT(SW_ARCH_X64, ops, 70,
		0x98,                   /* push rbx, end delta 0 */
		0xff,                   /* push r15, end delta 7 */
		0x48, 0x26,             /* end delta 8: no push byte; CFA + 8, then rbp's save at the slot */
		0x51,                   /* CFA - 8, end delta 1 */
		0x51,
		0x50,                   /* end delta 0 */
		0x4f,                   /* CFA + 8, end delta 15 */
		0x6f, 0x10,             /* CFA - 8, end delta 16: k = -1 with a delta byte */
		0x71, 0x10,             /* CFA + 8, end delta 16 */
		0x51);
}
END_TEST

/* Other multiples of the word, and returns to the largest CFA offset. */
START_TEST(compact_multiples_and_restore)
{
	static const struct rop ops[] = {
		{ 4,  ROP_CFA_OFFSET, 0, 0, 24 },               /* k 2 */
		{ 8,  ROP_CFA_OFFSET, 0, 0, 144 },              /* k 15 */
		{ 9,  ROP_CFA_OFFSET, 0, 0, 272 },              /* k 16 */
		{ 10, ROP_CFA_OFFSET, 0, 0, 136 },              /* k -17 */
		{ 11, ROP_CFA_OFFSET, 0, 0, 8 },                /* k -16 */
		{ 12, ROP_CFA_OFFSET, 0, 0, 12 },               /* no multiple */
		{ 13, ROP_CFA_OFFSET, 0, 0, 272 },              /* the largest, delta 1 */
		{ 14, ROP_CFA_OFFSET, 0, 0, 8 },                /* k -33 */
		{ 29, ROP_CFA_OFFSET, 0, 0, 272 },              /* the largest, delta 15 */
		{ 30, ROP_CFA_OFFSET, 0, 0, 16 },               /* k -32 */
		{ 46, ROP_CFA_OFFSET, 0, 0, 272 },              /* the largest, delta 16 */
		{ 46, ROP_CFA_OFFSET, 0, 0, 16 },
		{ 46, ROP_CFA_OFFSET, 0, 0, 272 },              /* the largest, delta 0 */
		{ 47, ROP_CFA_OFFSET, 0, 0, 280 },              /* + 8: a new largest */
		{ 48, ROP_CFA_OFFSET, 0, 0, 272 },
		{ 49, ROP_CFA_OFFSET, 0, 0, 280 },              /* + 8 and the largest: the step */
		{ 50, ROP_CFA_OFFSET, 0, 0, 8 },
		{ 51, ROP_CFA_OFFSET, 0, 0, 136 },              /* k 16, below the largest */
	};

	CHECK_COMPACT(SW_ARCH_X64, ops, 60,
		0x72, 0x04,             /* k = 0x72 - 0x70 = 2, end delta 4 */
		0x7f, 0x04,             /* k 15 */
		0x70, 0x01, 0x10,       /* k 16: the SLEB128 form */
		0x70, 0x01, 0x6f,       /* k -17 */
		0x60, 0x01,             /* k -16 */
		0x11, 0x01, 0x0c,       /* def_cfa_offset 12, a full op */
		0x31,                   /* back to 272, end delta 1 */
		0x70, 0x01, 0x5f,       /* k -33 */
		0x3f,                   /* back to 272, end delta 15 */
		0x70, 0x01, 0x60,       /* k -32 */
		0x30, 0x10,             /* back to 272, end delta 16 */
		0x70, 0x00, 0x60,       /* k -32, end delta 0 */
		0x30, 0x00,             /* back to 272, end delta 0 */
		0x41,
		0x51,
		0x41,
		0x70, 0x01, 0x5e,       /* k -34 */
		0x70, 0x01, 0x10);      /* k 16 */
}
END_TEST

/* Saves at the slot the CFA reached, full ops, and the CFA offset they set. */
START_TEST(compact_slots_and_full_ops)
{
	static const struct rop ops[] = {
		{ 1,  ROP_CFA_OFFSET, 0, 0, 16 }, { 1, ROP_SAVED_AT, RBP, 0, -16 },
		{ 4,  ROP_DEF_CFA, RBP, 0, 16 },
		{ 5,  ROP_SAVED_AT, RBX, 0, -24 },              /* delta 1: no slot byte */
		{ 6,  ROP_DEF_CFA, RSP, 0, 32 },
		{ 6,  ROP_SAVED_AT, R13, 0, -32 },              /* the slot of def_cfa's offset */
		{ 8,  ROP_CFA_OFFSET, 0, 0, 40 }, { 8, ROP_SAVED_AT, R14, 0, -40 },
		{ 8,  ROP_SAVED_AT, R12, 0, -40 },              /* the same slot again */
		{ 9,  ROP_SAME_VALUE, RBX, 0, 0 },
		{ 20, ROP_DEF_CFA, RSP, 0, 8 },
		{ 21, ROP_CFA_OFFSET, 0, 0, 40 },               /* back to the largest */
	};

	CHECK_COMPACT(SW_ARCH_X64, ops, 24,
		0xb1,                   /* push rbp, end delta 1 */
		0x10, 0x03, 0x06, 0x10, /* def_cfa rbp + 16 */
		0x12, 0x01, 0x03, 0x68, /* saved_at rbx at -24 */
		0x10, 0x01, 0x07, 0x20, /* def_cfa rsp + 32 */
		0x2d,                   /* saved_at r13 at -32 */
		0xf2,                   /* push r14, end delta 2 */
		0x2c,                   /* saved_at r12 at -40 */
		0x13, 0x01, 0x03,       /* same_value rbx */
		0x10, 0x0b, 0x07, 0x08, /* def_cfa rsp + 8 */
		0x31);
}
END_TEST

/* The word is the architecture's: 4 on x86; arm64 registers above 15 take full ops. */
START_TEST(compact_x86_and_arm64)
{
	static const struct rop x86[] = {
		{ 1,  ROP_CFA_OFFSET, 0, 0, 8 },  { 1, ROP_SAVED_AT, SW_X86_EBP, 0, -8 },
		{ 3,  ROP_CFA_OFFSET, 0, 0, 12 }, { 3, ROP_SAVED_AT, SW_X86_ESI, 0, -12 },
		{ 10, ROP_CFA_OFFSET, 0, 0, 8 },
		{ 11, ROP_CFA_OFFSET, 0, 0, 4 },
		{ 12, ROP_CFA_OFFSET, 0, 0, 12 },
	};
	static const struct rop arm64[] = {
		{ 4,  ROP_CFA_OFFSET, 0, 0, 16 },
		{ 4,  ROP_SAVED_AT, SW_ARM64_FP, 0, -16 },
		{ 4,  ROP_SAVED_AT, SW_ARM64_LR, 0, -8 },
		{ 12, ROP_CFA_OFFSET, 0, 0, 0 },
		{ 12, ROP_SAME_VALUE, SW_ARM64_FP, 0, 0 },
		{ 12, ROP_SAME_VALUE, SW_ARM64_LR, 0, 0 },
	};

	CHECK_COMPACT(SW_ARCH_X86, x86, 16,
		0xa9,                   /* push ebp, end delta 1: CFA + 4 */
		0xb2,                   /* push esi, end delta 2 */
		0x57,                   /* CFA - 4, end delta 7 */
		0x51,
		0x31);                  /* back to 12 */
	CHECK_COMPACT(SW_ARCH_ARM64, arm64, 16,
		0x72, 0x04,             /* k 2: CFA 0 + 16 */
		0x12, 0x00, 0x1d, 0x70, /* saved_at x29 at -16 */
		0x12, 0x00, 0x1e, 0x78, /* saved_at x30 at -8 */
		0x6e, 0x08,             /* k -2 */
		0x13, 0x00, 0x1d,
		0x13, 0x00, 0x1e);
}
END_TEST

/* A random row op for compact_random_rows, biased to what the compact form says in a byte. */
static struct rop random_rop(sw_arch arch, uint32_t end, int32_t *cfa, int32_t *max, bool *deref)
{
	static const unsigned x64_saved[] = { RBX, RBP, R12, R13, R14, R15, SW_X64_RAX };
	static const unsigned x86_saved[] = { SW_X86_EBX, SW_X86_EBP, SW_X86_ESI, SW_X86_EDI };
	static const unsigned arm64_saved[] = { SW_ARM64_X19, SW_ARM64_X20, SW_ARM64_FP, SW_ARM64_LR, 3 };
	const unsigned *saved = arch == SW_ARCH_X64 ? x64_saved : arch == SW_ARCH_X86 ? x86_saved : arm64_saved;
	unsigned nsaved = arch == SW_ARCH_X64 ? 7 : arch == SW_ARCH_X86 ? 4 : 5;
	int32_t w = arch == SW_ARCH_X86 ? 4 : 8;
	unsigned sp = arch == SW_ARCH_X64 ? RSP : arch == SW_ARCH_X86 ? SW_X86_ESP : SW_ARM64_SP;
	unsigned fp = arch == SW_ARCH_X64 ? RBP : arch == SW_ARCH_X86 ? SW_X86_EBP : SW_ARM64_FP;
	struct rop op = { end, ROP_CFA_OFFSET, 0, 0, 0 };
	unsigned pick = (unsigned)rand() % 100;

	if (*deref) {
		/* def_cfa_offset is invalid until a def_cfa ends the deref. */
		op.code = ROP_DEF_CFA;
		op.reg = sp;
		op.arg = w * (1 + rand() % 8);
	} else if (pick < 35) {
		op.arg = *cfa + (rand() % 3 ? w : -w);
	} else if (pick < 45) {
		op.arg = *cfa + w * (rand() % 41 - 20);
	} else if (pick < 50) {
		op.arg = *max;
	} else if (pick < 53) {
		op.arg = *cfa + rand() % 7 - 3;
	} else if (pick < 55) {
		op.arg = *cfa + w * (rand() % 2000000 - 1000000);
	} else if (pick < 75) {
		op.code = ROP_SAVED_AT;
		op.reg = saved[(unsigned)rand() % nsaved];
		op.arg = rand() % 4 ? -(int64_t)*cfa : -w * (rand() % 16);
	} else if (pick < 83) {
		op.code = ROP_SAME_VALUE;
		op.reg = saved[(unsigned)rand() % nsaved];
	} else if (pick < 93) {
		op.code = ROP_DEF_CFA;
		op.reg = rand() % 2 ? sp : fp;
		op.arg = w * (rand() % 8);
	} else if (pick < 97) {
		op.code = ROP_CFA_DEREF;
		op.reg = fp;
		op.arg = -w * (rand() % 4);
	} else {
		op.code = ROP_SAVED_AT_REG;
		op.reg = saved[(unsigned)rand() % nsaved];
		op.reg2 = fp;
		op.arg = -w * (rand() % 4);
	}
	if (op.code == ROP_DEF_CFA || op.code == ROP_CFA_OFFSET || op.code == ROP_CFA_DEREF) {
		*cfa = op.arg;
		if (*cfa > *max)
			*max = *cfa;
		*deref = op.code == ROP_CFA_DEREF;
	}
	return op;
}

/*
 * Random row ops (pushes and pops at random end deltas, other multiples,
 * returns to the largest offset, saves at and off the slot, full ops):
 * what the builder writes in the compact form holds the same ops as the
 * plain form, and the same rule at every offset.
 */
START_TEST(compact_random_rows)
{
	static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };
	unsigned built = 0;

	srand(7);
	for (unsigned iter = 0; iter < 2400; iter++) {
		sw_arch arch = arches[iter % 3];
		int32_t cfa = arch == SW_ARCH_X64 ? 8 : arch == SW_ARCH_X86 ? 4 : 0, max = cfa;
		bool deref = false;
		struct rop ops[48];
		size_t n = 1 + (unsigned)rand() % 48;
		uint32_t end = 0;
		sw_swu_builder *b = new_builder_for(arch);
		sw_status st = SW_OK;
		struct blob c;
		size_t need = 0;

		for (size_t i = 0; i < n && st == SW_OK; i++) {
			unsigned r = (unsigned)rand() % 10;

			end += r < 4 ? 0 : r < 9 ? (unsigned)rand() % 17 : (unsigned)rand() % 100;
			ops[i] = random_rop(arch, end, &cfa, &max, &deref);
			switch (ops[i].code) {
			case ROP_DEF_CFA:      st = sw_swu_def_cfa(b, end, ops[i].reg, ops[i].arg); break;
			case ROP_CFA_OFFSET:   st = sw_swu_def_cfa_offset(b, end, ops[i].arg); break;
			case ROP_SAVED_AT:     st = sw_swu_saved_at(b, end, ops[i].reg, ops[i].arg); break;
			case ROP_SAME_VALUE:   st = sw_swu_same_value(b, end, ops[i].reg); break;
			case ROP_CFA_DEREF:    st = sw_swu_def_cfa_deref(b, end, ops[i].reg, ops[i].arg); break;
			default:
				st = sw_swu_saved_at_reg(b, end, ops[i].reg, ops[i].reg2, ops[i].arg);
				break;
			}
		}
		/* Ops the builder refuses (a CFA offset out of bounds, ...) make no blob. */
		if (st != SW_OK || sw_swu_finish(b, end + 1, NULL, 0, &need) != SW_E_LIMIT) {
			sw_swu_builder_destroy(b);
			continue;
		}
		c = finish(b, end + 1);
		sw_swu_builder_destroy(b);
		same_as_plain(arch, ops, n, end + 1, &c);
		free(c.p);
		built++;
	}
	/* Most sequences are valid: the test covers what it means to. */
	ck_assert_uint_gt(built, 2000);
}
END_TEST

/* A compact blob of `n` bytes of ops after an x64 header (code size 22, `count` ops). */
static sw_status compact_bytes(uint32_t count, const unsigned char *ops, size_t n, sw_swu_rule *r)
{
	unsigned char buf[64];
	size_t len = rows_header(buf, SW_ARCH_X64, 0x0c, 22, count);
	sw_status st;
	struct blob bl;

	ck_assert_uint_le(len + n, sizeof buf);
	memcpy(buf + len, ops, n);
	bl = blob_of(buf, len + n);
	st = sw_swu_validate(bl.p, bl.len);
	/* The decoder checks less than the validator, but never reads beyond the blob. */
	for (uint32_t off = 0; off <= 23; off++)
		if (sw_swu_decode(bl.p, bl.len, off, r) == SW_OK)
			ck_assert_uint_lt(r->cfa_reg, SW_X64_NREGS);
	free(bl.p);
	return st;
}

#define COMPACT(count, want, ...) do { \
	static const unsigned char ops_[] = { __VA_ARGS__ }; \
	ck_assert_int_eq(compact_bytes(count, ops_, sizeof ops_, &r), (want)); } while (0)

START_TEST(compact_bad_blobs)
{
	/* rows_x64's compact bytes. */
	static const unsigned char good[] = {
		0xe5, 0x11, 0x0c, 0x16, 0x05,
		0xb1, 0x10, 0x03, 0x06, 0x10, 0x10, 0x11, 0x07, 0x08, 0x13, 0x00, 0x06,
	};
	unsigned char b[sizeof good];
	sw_swu_rule r;

	ck_assert_int_eq(validate_bytes(good, sizeof good), SW_OK);
#define PATCH(i, v, want) do { memcpy(b, good, sizeof good); b[i] = (v); \
	ck_assert_int_eq(validate_bytes(b, sizeof good), (want)); } while (0)
	PATCH(2, 0x08, SW_E_BADMETA);           /* compact without rows */
	PATCH(2, 0x04, SW_E_BADMETA);           /* the same bytes read as plain ops */
	PATCH(4, 0x01, SW_E_BADMETA);           /* the count ends inside the push */
	PATCH(4, 0x04, SW_E_BADMETA);           /* one op too few: trailing bytes */
	PATCH(4, 0x06, SW_E_TRUNCATED);         /* one more than there is */
	PATCH(5, 0x00, SW_E_BADMETA);           /* reserved first bytes */
	PATCH(5, 0x0f, SW_E_BADMETA);
	PATCH(5, 0x16, SW_E_BADMETA);
	PATCH(5, 0x1f, SW_E_BADMETA);
	PATCH(5, 0xb9, SW_E_BADMETA);           /* push with a save of rsp */
	PATCH(5, 0x81, SW_OK);                  /* push rax: CFI may save any other register */
	PATCH(5, 0xb7, SW_E_BADMETA);           /* push at 7: the last op ends past the code */
	PATCH(5, 0xb0, SW_OK);                  /* push at 0 */
	PATCH(6, 0x11, SW_E_BADMETA);           /* def_cfa_offset 3: the rest is trailing */
	PATCH(10, 0x01, SW_E_BADMETA);          /* a plain prolog opcode as a full op */
#undef PATCH
	/* Truncated operands: every form that has one. */
	COMPACT(1, SW_E_TRUNCATED, 0x30);                       /* restore's end delta */
	COMPACT(1, SW_E_TRUNCATED, 0x61);                       /* k -15's end delta */
	COMPACT(1, SW_E_TRUNCATED, 0x70);                       /* any k: end delta */
	COMPACT(1, SW_E_TRUNCATED, 0x70, 0x01);                 /* any k: k */
	COMPACT(1, SW_E_TRUNCATED, 0x70, 0x01, 0x80);           /* any k: k cut */
	COMPACT(1, SW_E_TRUNCATED, 0x10, 0x01, 0x06);           /* def_cfa's offset */
	COMPACT(1, SW_E_TRUNCATED, 0x11);                       /* a full op's end delta */
	COMPACT(2, SW_E_TRUNCATED, 0x41);                       /* a second op that is not there */
	/* Values out of range. */
	COMPACT(1, SW_E_BADMETA, 0x70, 0x00, 0x80, 0x80, 0x80, 0x80, 0x01);  /* 2^28 words */
	COMPACT(1, SW_E_BADMETA, 0x70, 0x00, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01); /* 6-byte k */
	COMPACT(1, SW_E_BADMETA, 0x71, 0x17);                   /* ends at 23, past the code */
	COMPACT(1, SW_E_BADMETA, 0x30, 0xff, 0xff, 0xff, 0xff, 0x0f);        /* end delta 2^32-1 */
	COMPACT(1, SW_E_BADMETA, 0x30, 0x80, 0x80, 0x80, 0x80, 0x80);        /* 6-byte end delta */
	/* What the reader tracks: 0x7fffffff after a full def_cfa_offset; a word more overflows. */
	COMPACT(2, SW_E_BADMETA, 0x11, 0x00, 0xff, 0xff, 0xff, 0xff, 0x07, 0x41);
	COMPACT(2, SW_E_BADMETA, 0x11, 0x00, 0x80, 0x80, 0x80, 0x80, 0x78, 0x20); /* -INT32_MIN */
	/* Well-formed items that make a good rule. */
	COMPACT(1, SW_OK, 0x41);
	COMPACT(2, SW_OK, 0x98);
	COMPACT(3, SW_OK, 0x98, 0x31);                          /* "back" to the largest: no change */
	COMPACT(3, SW_OK, 0x41, 0x23, 0x51);                    /* a slot save on its own */
#undef COMPACT
	/* Every cut of the good blob is refused; the decoder never strays. */
	check_hostile_rows(good, sizeof good);
}
END_TEST

START_TEST(rows_dump)
{
	struct blob bl = shape_rows_x64();
	char *text = NULL;
	size_t size = 0;
	FILE *f = open_memstream(&text, &size);

	ck_assert_int_eq(sw_swu_dump(f, bl.p, bl.len), SW_OK);
	fclose(f);
	ck_assert_str_eq(text,
		"SWU version 1, x64, 17 bytes\n"
		"code size 22, 5 row ops\n"
		"rows:\n"
		"         1         def_cfa_offset 16                ; cfa = rsp + 16, sp = cfa - 16\n"
		"         1         saved_at rbp at [cfa - 16]       ; cfa = rsp + 16, sp = cfa - 16\n"
		"         4         def_cfa rbp + 16                 ; cfa = rbp + 16, sp unknown\n"
		"        21         def_cfa rsp + 8                  ; cfa = rsp + 8, sp = cfa - 8\n"
		"        21         same_value rbp                   ; cfa = rsp + 8, sp = cfa - 8\n");
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
	tcase_add_test(tc, arm64_frame);
	tcase_add_test(tc, arm64_leaf);
	tcase_add_test(tc, arm64_pac);
	tcase_add_test(tc, x86_ebp_frame);
	tcase_add_test(tc, x86_esp_frame);
	tcase_add_test(tc, arch_tables);
	tcase_add_test(tc, builder_misuse);
	tcase_add_test(tc, builder_limits);
	tcase_add_test(tc, builder_misuse_arch);
	tcase_add_test(tc, dump_text);
	tcase_add_test(tc, dump_text_arch);
	tcase_add_test(tc, dump_text_gc);
	tcase_add_test(tc, gc_x64);
	tcase_add_test(tc, gc_bytes);
	tcase_add_test(tc, gc_x86);
	tcase_add_test(tc, gc_arm64);
	tcase_add_test(tc, gc_with_body_ops);
	tcase_add_test(tc, gc_builder_misuse);
	tcase_add_test(tc, gc_builder_limits);
	tcase_add_test(tc, psp_slot);
	tcase_add_test(tc, psp_builder_misuse);
	tcase_add_test(tc, rows_x64);
	tcase_add_test(tc, rows_x86_and_arm64);
	tcase_add_test(tc, rows_misuse);
	tcase_add_test(tc, rows_deref);
	tcase_add_test(tc, rows_dump);
	tcase_add_test(tc, compact_push_and_steps);
	tcase_add_test(tc, compact_multiples_and_restore);
	tcase_add_test(tc, compact_slots_and_full_ops);
	tcase_add_test(tc, compact_x86_and_arm64);
	tcase_add_test(tc, compact_random_rows);
	suite_add_tcase(s, tc);

	tcase_add_test(fz, bad_headers);
	tcase_add_test(fz, bad_body_ops);
	tcase_add_test(fz, truncated);
	tcase_add_test(fz, random_blobs);
	tcase_add_test(fz, mutated_blobs);
	tcase_add_test(fz, random_builds);
	tcase_add_test(fz, random_x86_body);
	tcase_add_test(fz, gc_bad_blobs);
	tcase_add_test(fz, psp_bad_blobs);
	tcase_add_test(fz, random_gc);
	tcase_add_test(fz, rows_bad_blobs);
	tcase_add_test(fz, compact_bad_blobs);
	tcase_add_test(fz, rows_deref_bad_blobs);
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
