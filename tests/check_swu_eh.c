/*
 * check_swu_eh.c - exception handling clauses in SWU: the builder, the
 * EH section's bytes, the queries, the validator's rules, and the funclet
 * check against a code map.
 *
 * The rules are CoreCLR's, cited where each is tested:
 *  - CORINFO_EH_CLAUSE (src/coreclr/inc/corinfo.h) as CodeGen::genReportEH
 *    (src/coreclr/jit/codegencommon.cpp) fills it: native offsets from the
 *    method's start, [start, end) regions, kinds CORINFO_EH_CLAUSE_FLAGS;
 *  - a try covers o when start <= o < end (ContainsCodeOffset,
 *    ExceptionHandling.cs);
 *  - funclets after the main body, clauses inside-out, duplicated clauses
 *    for funclets pulled out of a try (the comment at the top of
 *    src/coreclr/vm/exceptionhandling.cpp; genReportEH's comment, whose
 *    example "D -> G" is eh_good's duplicated clause);
 *  - a filter runs up to its handler (EHblkDsc::BBFilterLast, jiteh.cpp).
 *
 * Bad tables are written byte by byte here, by an encoder of swu(5)'s EH
 * section independent of the library's, each breaking one rule of a
 * table that is otherwise valid.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "eh_clauses.h"

#define CODE EH_CODE    /* the main body of every method here */

/* ---- Blobs in exact-size malloc blocks ---- */

struct blob {
	uint8_t *p;
	size_t len;
};

static struct blob blob_of(const uint8_t *bytes, size_t len)
{
	struct blob b = { malloc(len ? len : 1), len };

	ck_assert_ptr_nonnull(b.p);
	memcpy(b.p, bytes, len);
	return b;
}

static struct blob build(sw_arch arch, const sw_eh_clause *c, unsigned n, sw_status *st)
{
	sw_swu_builder *b;
	uint8_t buf[1024];
	size_t len = 0;

	ck_assert_int_eq(sw_swu_builder_create(&b, arch), SW_OK);
	*st = SW_OK;
	for (unsigned i = 0; i < n && *st == SW_OK; i++)
		*st = sw_swu_eh_clause(b, &c[i]);
	if (*st == SW_OK)
		*st = sw_swu_finish(b, CODE, buf, sizeof buf, &len);
	sw_swu_builder_destroy(b);
	return blob_of(buf, *st == SW_OK ? len : 0);
}

/* ---- An encoder of the EH section, from swu(5) ---- */

struct raw {
	uint8_t b[4096];
	size_t n;
};

static void put(struct raw *r, unsigned v)
{
	ck_assert_uint_lt(r->n, sizeof r->b);
	r->b[r->n++] = (uint8_t)v;
}

static void uleb(struct raw *r, uint32_t v)
{
	do {
		put(r, (v & 0x7f) | (v > 0x7f ? 0x80 : 0));
		v >>= 7;
	} while (v);
}

static void raw_clause(struct raw *r, const sw_eh_clause *c)
{
	put(r, c->kind | c->flags);
	uleb(r, c->try_start);
	uleb(r, c->try_end - c->try_start);
	uleb(r, c->handler_start);
	uleb(r, c->handler_end - c->handler_start);
	if (c->kind == SW_EH_CATCH)
		uleb(r, c->type_token);
	else if (c->kind == SW_EH_FILTER)
		uleb(r, c->filter_start);
}

/* An x64 blob of CODE bytes with no ops and this EH section. */
static struct blob raw_blob(const struct raw *sec)
{
	struct raw r = { { 0 }, 0 };

	put(&r, 0xe5);
	put(&r, 0x11);
	put(&r, 0x20);          /* flags: EH */
	uleb(&r, CODE);
	put(&r, 0);             /* prolog size, prolog ops, epilogs */
	put(&r, 0);
	put(&r, 0);
	uleb(&r, (uint32_t)sec->n);
	memcpy(r.b + r.n, sec->b, sec->n);
	return blob_of(r.b, r.n + sec->n);
}

static struct raw raw_section(const sw_eh_clause *c, unsigned n)
{
	struct raw s = { { 0 }, 0 };

	put(&s, 1);
	uleb(&s, n);
	for (unsigned i = 0; i < n; i++)
		raw_clause(&s, &c[i]);
	return s;
}

/* A valid table (eh_clauses.h). */
#define eh_good eh_nested
#define NGOOD EH_NESTED

/* ---- Collecting what the queries report ---- */

struct seen {
	uint32_t index[64];
	sw_eh_clause c[64];
	unsigned n;
};

static int collect(void *data, uint32_t index, const sw_eh_clause *c)
{
	struct seen *s = data;

	ck_assert_uint_lt(s->n, 64);
	s->index[s->n] = index;
	s->c[s->n++] = *c;
	return 0;
}

static void assert_clause_eq(const sw_eh_clause *a, const sw_eh_clause *b)
{
	ck_assert_int_eq(memcmp(a, b, sizeof *a), 0);
}

/* ---- Tests ---- */

/* The example of swu(5)'s EH section, byte for byte, from the builder and from the encoder above. */
START_TEST(eh_example_bytes)
{
	static const uint8_t want[] = {
		0xe5, 0x11, 0x20, 0x40, 0x00, 0x00, 0x00, 0x0b,
		0x01, 0x01, 0x00, 0x08, 0x0c, 0x50, 0x20, 0x81, 0x80, 0x80, 0x10
	};
	struct raw sec = raw_section(eh_good, 1);
	struct blob built, raw;
	sw_status st;

	built = build(SW_ARCH_X64, eh_good, 1, &st);
	ck_assert_int_eq(st, SW_OK);
	raw = raw_blob(&sec);
	ck_assert_uint_eq(built.len, sizeof want);
	ck_assert_int_eq(memcmp(built.p, want, sizeof want), 0);
	ck_assert_uint_eq(raw.len, sizeof want);
	ck_assert_int_eq(memcmp(raw.p, want, sizeof want), 0);
	ck_assert_int_eq(sw_swu_validate(built.p, built.len), SW_OK);
	free(built.p);
	free(raw.p);
}
END_TEST

START_TEST(eh_roundtrip)
{
	static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };

	for (unsigned a = 0; a < 3; a++) {
		struct seen s = { .n = 0 };
		struct blob b;
		sw_status st;

		b = build(arches[a], eh_good, NGOOD, &st);
		ck_assert_int_eq(st, SW_OK);
		ck_assert_int_eq(sw_swu_validate(b.p, b.len), SW_OK);
		ck_assert_int_eq(sw_swu_eh_clauses(b.p, b.len, collect, &s), SW_OK);
		ck_assert_uint_eq(s.n, NGOOD);
		for (unsigned i = 0; i < NGOOD; i++) {
			ck_assert_uint_eq(s.index[i], i);
			assert_clause_eq(&s.c[i], &eh_good[i]);
		}
		free(b.p);
	}
}
END_TEST

/* Clauses covering an offset, innermost first: table order, try [start, end). */
START_TEST(eh_covering)
{
	static const struct {
		uint32_t offset;
		const char *want;       /* indexes, in order */
	} cases[] = {
		{ 0, "" }, { 3, "" }, { 4, "2" }, { 7, "2" }, { 8, "012" }, { 19, "012" },
		{ 20, "2" }, { 39, "2" }, { 40, "" }, { 44, "3" }, { 59, "3" }, { 60, "" },
		{ 63, "" }, { 80, "5" }, { 84, "45" }, { 95, "45" }, { 96, "5" }, { 111, "5" },
		{ 112, "" }, { 130, "" }, { 500, "" }, { UINT32_MAX, "" },
	};
	struct blob b;
	sw_status st;

	b = build(SW_ARCH_X64, eh_good, NGOOD, &st);
	ck_assert_int_eq(st, SW_OK);
	for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		struct seen s = { .n = 0 };
		char got[16] = "";

		ck_assert_int_eq(sw_swu_eh_covering(b.p, b.len, cases[k].offset, collect, &s), SW_OK);
		for (unsigned i = 0; i < s.n; i++) {
			got[i] = (char)('0' + s.index[i]);
			assert_clause_eq(&s.c[i], &eh_good[s.index[i]]);
		}
		ck_assert_msg(strcmp(got, cases[k].want) == 0, "offset %u: clauses \"%s\", want \"%s\"",
		              cases[k].offset, got, cases[k].want);
	}
	free(b.p);
}
END_TEST

START_TEST(eh_handler_at)
{
	static const struct {
		uint32_t offset;
		sw_status st;
		uint32_t index, in_filter;
	} cases[] = {
		{ 0, SW_E_NOTFOUND, 0, 0 }, { 63, SW_E_NOTFOUND, 0, 0 }, { 79, SW_E_NOTFOUND, 0, 0 },
		{ 80, SW_OK, 0, 0 }, { 111, SW_OK, 0, 0 }, { 112, SW_E_NOTFOUND, 0, 0 },
		{ 120, SW_OK, 1, 1 }, { 127, SW_OK, 1, 1 }, { 128, SW_OK, 1, 0 }, { 139, SW_OK, 1, 0 },
		/* The finally's funclet: the duplicated clause 5 shares it, clause 2 is reported. */
		{ 144, SW_OK, 2, 0 }, { 159, SW_OK, 2, 0 },
		{ 160, SW_OK, 3, 0 }, { 176, SW_OK, 4, 0 }, { 191, SW_OK, 4, 0 },
		{ 192, SW_E_NOTFOUND, 0, 0 },
	};
	struct blob b;
	sw_status st;

	b = build(SW_ARCH_X64, eh_good, NGOOD, &st);
	ck_assert_int_eq(st, SW_OK);
	for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		sw_eh_handler h;

		st = sw_swu_eh_handler_at(b.p, b.len, cases[k].offset, &h);
		ck_assert_msg(st == cases[k].st, "offset %u: %s", cases[k].offset, sw_strerror(st));
		if (st != SW_OK)
			continue;
		ck_assert_uint_eq(h.index, cases[k].index);
		ck_assert_uint_eq(h.in_filter, cases[k].in_filter);
		assert_clause_eq(&h.clause, &eh_good[h.index]);
	}
	ck_assert_int_eq(sw_swu_eh_handler_at(b.p, b.len, 80, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_eh_clauses(b.p, b.len, NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_eh_covering(b.p, b.len, 8, NULL, NULL), SW_E_INVAL);
	free(b.p);
}
END_TEST

/* The rule at every offset, with and without clauses: the EH section changes no unwinding. */
static void describe(sw_swu_builder *b)
{
	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_set_frame(b, 4, SW_X64_RBP, 0), SW_OK);
	ck_assert_int_eq(sw_swu_alloc_stack(b, 8, 32), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 8), SW_OK);
	ck_assert_int_eq(sw_swu_gc_stack_slot(b, -24, 0, 8, 40), SW_OK);
	ck_assert_int_eq(sw_swu_gc_register(b, SW_X64_RBX, 0, 10, 20), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 56), SW_OK);
	ck_assert_int_eq(sw_swu_restore_sp_from_frame(b, 60, 0), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 61, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 62), SW_OK);
}

static int count_gc(void *data, const sw_swu_gc_slot *slot)
{
	(void)slot;
	++*(unsigned *)data;
	return 0;
}

START_TEST(eh_old_blobs)
{
	uint8_t plain[256], with_eh[256];
	size_t plain_len, eh_len;
	sw_swu_builder *b;
	struct seen s = { .n = 0 };
	sw_eh_handler h;
	sw_swu_header hp, he;

	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	describe(b);
	ck_assert_int_eq(sw_swu_finish(b, CODE, plain, sizeof plain, &plain_len), SW_OK);
	sw_swu_builder_reset(b);
	describe(b);
	for (unsigned i = 0; i < NGOOD; i++)
		ck_assert_int_eq(sw_swu_eh_clause(b, &eh_good[i]), SW_OK);
	ck_assert_int_eq(sw_swu_finish(b, CODE, with_eh, sizeof with_eh, &eh_len), SW_OK);
	sw_swu_builder_destroy(b);

	/* Without clauses: flags 0x02 only, no EH byte, no clause. */
	ck_assert_uint_eq(plain[2], 0x02);
	ck_assert_uint_eq(with_eh[2], 0x22);
	ck_assert_int_eq(sw_swu_validate(plain, plain_len), SW_OK);
	ck_assert_int_eq(sw_swu_validate(with_eh, eh_len), SW_OK);
	ck_assert_int_eq(sw_swu_eh_clauses(plain, plain_len, collect, &s), SW_OK);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(sw_swu_eh_handler_at(plain, plain_len, 80, &h), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_swu_decode_header(plain, plain_len, &hp), SW_OK);
	ck_assert_int_eq(sw_swu_decode_header(with_eh, eh_len, &he), SW_OK);
	ck_assert_int_eq(memcmp(&hp, &he, sizeof hp), 0);
	for (uint32_t off = 0; off <= CODE; off++) {
		sw_swu_rule rp, re;
		unsigned np = 0, ne = 0;

		ck_assert_int_eq(sw_swu_decode(plain, plain_len, off, &rp), SW_OK);
		ck_assert_int_eq(sw_swu_decode(with_eh, eh_len, off, &re), SW_OK);
		ck_assert_int_eq(memcmp(&rp, &re, sizeof rp), 0);
		ck_assert_int_eq(sw_swu_decode_return_address(with_eh, eh_len, off, &re), SW_OK);
		ck_assert_int_eq(sw_swu_gc_live(plain, plain_len, off, count_gc, &np), SW_OK);
		ck_assert_int_eq(sw_swu_gc_live(with_eh, eh_len, off, count_gc, &ne), SW_OK);
		ck_assert_uint_eq(np, ne);
	}
}
END_TEST

/* What the library does not understand is refused as unsupported, not misread. */
START_TEST(eh_unknown)
{
	static const uint8_t kinds[] = { 3, 5, 6, 7, 0x10, 0x80 };
	struct raw sec = raw_section(eh_good, 1);
	struct blob b;
	struct seen s = { .n = 0 };
	sw_eh_handler h;

	/* A later EH section version. */
	sec.b[0] = 2;
	b = raw_blob(&sec);
	ck_assert_int_eq(sw_swu_validate(b.p, b.len), SW_E_UNSUPPORTED);
	ck_assert_int_eq(sw_swu_eh_clauses(b.p, b.len, collect, &s), SW_E_UNSUPPORTED);
	ck_assert_int_eq(sw_swu_eh_handler_at(b.p, b.len, 80, &h), SW_E_UNSUPPORTED);
	free(b.p);
	/* Kinds CORINFO_EH_CLAUSE_FLAGS does not define, and flags past DUPLICATE (0x10 SAMETRY). */
	for (unsigned k = 0; k < sizeof kinds; k++) {
		sec = raw_section(eh_good, 1);
		sec.b[2] = kinds[k];
		b = raw_blob(&sec);
		ck_assert_int_eq(sw_swu_validate(b.p, b.len), SW_E_UNSUPPORTED);
		ck_assert_int_eq(sw_swu_eh_covering(b.p, b.len, 8, collect, &s), SW_E_UNSUPPORTED);
		free(b.p);
	}
	/* A header flag past EH. */
	sec = raw_section(eh_good, 1);
	b = raw_blob(&sec);
	b.p[2] |= 0x40;
	ck_assert_int_eq(sw_swu_validate(b.p, b.len), SW_E_UNSUPPORTED);
	free(b.p);
}
END_TEST

/* Hostile counts and ranges: errors, no big allocation, no long loop. */
START_TEST(eh_hostile)
{
	struct raw sec;
	struct blob b;
	sw_eh_clause c = eh_good[0];
	struct seen s = { .n = 0 };

	/* A count of 0, beyond the limit, more than the bytes hold. */
	static const uint32_t counts[] = { 0, SW_SWU_MAX_EH_CLAUSES + 1, 0xffffffffu, 2, 100 };
	for (unsigned k = 0; k < sizeof counts / sizeof counts[0]; k++) {
		sec = (struct raw){ { 0 }, 0 };
		put(&sec, 1);
		uleb(&sec, counts[k]);
		raw_clause(&sec, &c);
		b = raw_blob(&sec);
		ck_assert_int_ne(sw_swu_validate(b.p, b.len), SW_OK);
		ck_assert_int_ne(sw_swu_eh_clauses(b.p, b.len, collect, &s), SW_OK);
		free(b.p);
	}
	ck_assert_uint_eq(s.n, 0);
	/* A try of length 0, a range past 2^30. */
	sec = raw_section(&c, 1);
	sec.b[4] = 0;           /* try length */
	b = raw_blob(&sec);
	ck_assert_int_eq(sw_swu_validate(b.p, b.len), SW_E_BADMETA);
	ck_assert_int_eq(sw_swu_eh_clauses(b.p, b.len, collect, &s), SW_E_BADMETA);
	free(b.p);
	c.handler_start = SW_SWU_MAX_CODE_SIZE - 8;
	c.handler_end = SW_SWU_MAX_CODE_SIZE + 8;
	sec = raw_section(&c, 1);
	b = raw_blob(&sec);
	ck_assert_int_eq(sw_swu_validate(b.p, b.len), SW_E_BADMETA);
	free(b.p);
	/* An EH byte count past the blob, one too small, a trailing byte. */
	sec = raw_section(eh_good, 1);
	b = raw_blob(&sec);
	b.p[7] = 0x7f;
	ck_assert_int_eq(sw_swu_validate(b.p, b.len), SW_E_TRUNCATED);
	b.p[7] = 1;
	ck_assert_int_eq(sw_swu_validate(b.p, b.len), SW_E_BADMETA);
	free(b.p);
	put(&sec, 0);
	b = raw_blob(&sec);
	ck_assert_int_eq(sw_swu_validate(b.p, b.len), SW_E_BADMETA);
	free(b.p);
	/* Every truncation of a good blob: an error from every call. */
	{
		struct blob good;
		sw_status st;

		good = build(SW_ARCH_X64, eh_good, NGOOD, &st);
		ck_assert_int_eq(st, SW_OK);
		for (size_t len = 0; len < good.len; len++) {
			struct blob t = blob_of(good.p, len);
			sw_eh_handler h;

			s.n = 0;
			ck_assert_int_ne(sw_swu_validate(t.p, t.len), SW_OK);
			ck_assert_int_ne(sw_swu_eh_clauses(t.p, t.len, collect, &s), SW_OK);
			ck_assert_int_ne(sw_swu_eh_handler_at(t.p, t.len, 176, &h), SW_OK);
			free(t.p);
		}
		free(good.p);
	}
}
END_TEST

/*
 * The two errors of a short table, as swu(5) draws the line: the blob
 * ending before the EH byte count the header gives is SW_E_TRUNCATED
 * (the bytes are missing); a clause count, or a clause, that runs past
 * that byte count while the bytes are all there is SW_E_BADMETA (the
 * count and the section's size cannot both be right).
 */
static void expect_eh_error(const struct blob *b, sw_status want, const char *what)
{
	struct seen s = { .n = 0 };
	sw_eh_handler h;
	sw_status st;

	st = sw_swu_validate(b->p, b->len);
	ck_assert_msg(st == want, "%s: validate gives %s", what, sw_strerror(st));
	st = sw_swu_eh_clauses(b->p, b->len, collect, &s);
	ck_assert_msg(st == want, "%s: eh_clauses gives %s", what, sw_strerror(st));
	st = sw_swu_eh_covering(b->p, b->len, 8, collect, &s);
	ck_assert_msg(st == want, "%s: eh_covering gives %s", what, sw_strerror(st));
	st = sw_swu_eh_handler_at(b->p, b->len, CODE + 1, &h);
	ck_assert_msg(st == want, "%s: eh_handler_at gives %s", what, sw_strerror(st));
}

START_TEST(eh_truncated_or_badmeta)
{
	/* One clause of 12 bytes: handler start, length and token take 3 each. */
	sw_eh_clause big = { .kind = SW_EH_CATCH, .try_start = 8, .try_end = 12,
	                     .handler_start = 0x4000, .handler_end = 0x8000, .type_token = 0x4000 };
	struct raw sec;
	struct blob b;

	/* A count of 100 where the section holds one clause: fewer than 5 bytes each. */
	sec = (struct raw){ { 0 }, 0 };
	put(&sec, 1);
	uleb(&sec, 100);
	raw_clause(&sec, &big);
	b = raw_blob(&sec);
	expect_eh_error(&b, SW_E_BADMETA, "count 100, one clause");
	free(b.p);
	/* A count of 2: 5 bytes each are there, but the second clause is not. */
	sec = (struct raw){ { 0 }, 0 };
	put(&sec, 1);
	uleb(&sec, 2);
	raw_clause(&sec, &big);
	ck_assert_uint_eq(sec.n, 2 + 12);
	b = raw_blob(&sec);
	expect_eh_error(&b, SW_E_BADMETA, "count 2, one clause");
	free(b.p);
	/* The blob cut inside the EH section: its byte count says more than there is. */
	sec = raw_section(&big, 1);
	b = raw_blob(&sec);
	for (size_t cut = 1; cut < sec.n; cut++) {
		struct blob t = blob_of(b.p, b.len - cut);

		expect_eh_error(&t, SW_E_TRUNCATED, "blob cut in the section");
		free(t.p);
	}
	free(b.p);
}
END_TEST

/*
 * Each bad table breaks one rule of swu(5)'s EH section; the validator
 * refuses the blob (SW_E_BADMETA) and the builder the table (SW_E_INVAL,
 * from sw_swu_eh_clause for a clause bad on its own, else from finish).
 */
static const struct bad_table {
	const char *rule;
	unsigned n;
	sw_eh_clause c[3];
} bad_tables[] = {
	{ "handler inside the main body", 1,
	  { { SW_EH_CATCH, 0, 8, 20, 40, 60, 0, 1 } } },
	{ "filter inside the main body", 1,
	  { { SW_EH_FILTER, 0, 8, 20, 80, 90, 50, 0 } } },
	{ "try across the main body's end", 1,
	  { { SW_EH_FINALLY, 0, 60, 70, 80, 90, 0, 0 } } },
	{ "try past the main body in no funclet", 2,
	  { { SW_EH_FINALLY, 0, 8, 20, 80, 90, 0, 0 }, { SW_EH_FAULT, 0, 100, 110, 120, 130, 0, 0 } } },
	{ "try holding its own handler", 2,
	  { { SW_EH_CATCH, 0, 8, 20, 80, 120, 0, 1 }, { SW_EH_FAULT, 0, 84, 100, 90, 96, 0, 0 } } },
	{ "filter not before its handler", 1,
	  { { SW_EH_FILTER, 0, 8, 20, 80, 90, 90, 0 } } },
	{ "tries overlapping", 2,
	  { { SW_EH_CATCH, 0, 8, 20, 80, 90, 0, 1 }, { SW_EH_CATCH, 0, 15, 30, 90, 100, 0, 2 } } },
	{ "outer clause first", 2,
	  { { SW_EH_FINALLY, 0, 4, 40, 80, 90, 0, 0 }, { SW_EH_CATCH, 0, 8, 20, 90, 100, 0, 2 } } },
	{ "handlers overlapping", 2,
	  { { SW_EH_CATCH, 0, 8, 20, 80, 100, 0, 1 }, { SW_EH_CATCH, 0, 30, 40, 90, 110, 0, 2 } } },
	{ "a filter overlapping a handler", 2,
	  { { SW_EH_CATCH, 0, 8, 20, 80, 100, 0, 1 }, { SW_EH_FILTER, 0, 30, 40, 110, 120, 90, 0 } } },
	{ "handler nested in another", 2,
	  { { SW_EH_CATCH, 0, 8, 20, 80, 120, 0, 1 }, { SW_EH_CATCH, 0, 30, 40, 90, 100, 0, 2 } } },
	{ "try across two funclets", 3,
	  { { SW_EH_CATCH, 0, 8, 20, 80, 100, 0, 1 }, { SW_EH_CATCH, 0, 30, 40, 100, 120, 0, 2 },
	    { SW_EH_FAULT, 0, 90, 110, 120, 130, 0, 0 } } },
	{ "handler shared without DUPLICATED", 2,
	  { { SW_EH_FINALLY, 0, 8, 20, 80, 100, 0, 0 }, { SW_EH_FINALLY, 0, 30, 40, 80, 100, 0, 0 } } },
	{ "DUPLICATED sharing no handler", 2,
	  { { SW_EH_CATCH, 0, 8, 20, 80, 100, 0, 1 }, { SW_EH_FINALLY, SW_EH_DUPLICATED, 80, 100, 100, 110, 0, 0 } } },
	{ "DUPLICATED before the clause it repeats", 3,
	  { { SW_EH_CATCH, 0, 8, 20, 80, 100, 0, 1 }, { SW_EH_FINALLY, SW_EH_DUPLICATED, 80, 100, 100, 110, 0, 0 },
	    { SW_EH_FINALLY, 0, 4, 40, 100, 110, 0, 0 } } },
	{ "empty handler", 1,
	  { { SW_EH_CATCH, 0, 8, 20, 80, 80, 0, 1 } } },
};

START_TEST(eh_rules)
{
	const struct bad_table *t = &bad_tables[_i];
	struct raw sec = raw_section(t->c, t->n);
	struct blob raw, built;
	sw_status st;

	raw = raw_blob(&sec);
	ck_assert_msg(sw_swu_validate(raw.p, raw.len) == SW_E_BADMETA, "%s: validate gives %s",
	              t->rule, sw_strerror(sw_swu_validate(raw.p, raw.len)));
	built = build(SW_ARCH_X64, t->c, t->n, &st);
	ck_assert_msg(st == SW_E_INVAL, "%s: builder gives %s", t->rule, sw_strerror(st));
	free(raw.p);
	free(built.p);
}
END_TEST

/* Tables the rules allow, each next to one they refuse. */
START_TEST(eh_allowed)
{
	static const struct {
		unsigned n;
		sw_eh_clause c[3];
	} ok[] = {
		/* Mutually protecting catches: one try, two handlers. */
		{ 2, { { SW_EH_CATCH, 0, 8, 20, 80, 90, 0, 1 }, { SW_EH_CATCH, 0, 8, 20, 90, 100, 0, 2 } } },
		/* Inner clause first. */
		{ 2, { { SW_EH_CATCH, 0, 8, 20, 90, 100, 0, 2 }, { SW_EH_FINALLY, 0, 4, 40, 80, 90, 0, 0 } } },
		/* A try touching the main body's end; a handler right at it. */
		{ 1, { { SW_EH_FAULT, 0, 0, CODE, CODE, CODE + 1, 0, 0 } } },
		/* genReportEH's "D -> G": a duplicated clause for a catch pulled out of a finally's try. */
		{ 3, { { SW_EH_CATCH, 0, 8, 20, 80, 100, 0, 1 }, { SW_EH_FINALLY, 0, 4, 40, 100, 110, 0, 0 },
		       { SW_EH_FINALLY, SW_EH_DUPLICATED, 80, 100, 100, 110, 0, 0 } } },
	};

	for (unsigned k = 0; k < sizeof ok / sizeof ok[0]; k++) {
		struct raw sec = raw_section(ok[k].c, ok[k].n);
		struct blob raw = raw_blob(&sec), built;
		sw_status st;

		ck_assert_msg(sw_swu_validate(raw.p, raw.len) == SW_OK, "table %u", k);
		built = build(SW_ARCH_X64, ok[k].c, ok[k].n, &st);
		ck_assert_int_eq(st, SW_OK);
		ck_assert_uint_eq(built.len, raw.len);
		ck_assert_int_eq(memcmp(built.p, raw.p, raw.len), 0);
		free(raw.p);
		free(built.p);
	}
}
END_TEST

START_TEST(eh_builder_misuse)
{
	sw_swu_builder *b;
	sw_eh_clause c = eh_good[0];
	uint8_t buf[64];
	size_t len;

	ck_assert_int_eq(sw_swu_eh_clause(NULL, &c), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_eh_clause(b, NULL), SW_E_INVAL);
	/* A finally with a type token is bad on its own; the error sticks. */
	c.kind = SW_EH_FINALLY;
	ck_assert_int_eq(sw_swu_eh_clause(b, &c), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_eh_clause(b, &eh_good[0]), SW_E_INVAL);
	ck_assert_int_eq(sw_swu_finish(b, CODE, buf, sizeof buf, &len), SW_E_INVAL);
	/* More clauses than the limit. */
	sw_swu_builder_reset(b);
	for (unsigned i = 0; i < SW_SWU_MAX_EH_CLAUSES; i++)
		ck_assert_int_eq(sw_swu_eh_clause(b, &eh_good[3]), SW_OK);
	ck_assert_int_eq(sw_swu_eh_clause(b, &eh_good[3]), SW_E_LIMIT);
	/* Reset forgets the clauses. */
	sw_swu_builder_reset(b);
	ck_assert_int_eq(sw_swu_finish(b, CODE, buf, sizeof buf, &len), SW_OK);
	ck_assert_uint_eq(buf[2], 0);
	sw_swu_builder_destroy(b);
}
END_TEST

/* The largest table: validated in bounded time, every clause listed. */
START_TEST(eh_many)
{
	static sw_eh_clause c[SW_SWU_MAX_EH_CLAUSES];
	static uint8_t buf[32768];
	sw_swu_builder *b;
	struct seen s = { .n = 0 };
	size_t len;

	for (unsigned i = 0; i < SW_SWU_MAX_EH_CLAUSES; i++)
		c[i] = (sw_eh_clause){ SW_EH_FAULT, 0, i % CODE, i % CODE + 1,
		                       CODE + 2 * i, CODE + 2 * i + 2, 0, 0 };
	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	for (unsigned i = 0; i < SW_SWU_MAX_EH_CLAUSES; i++)
		ck_assert_int_eq(sw_swu_eh_clause(b, &c[i]), SW_OK);
	ck_assert_int_eq(sw_swu_finish(b, CODE, buf, sizeof buf, &len), SW_OK);
	sw_swu_builder_destroy(b);
	ck_assert_int_eq(sw_swu_validate(buf, len), SW_OK);
	ck_assert_int_eq(sw_swu_eh_covering(buf, len, 5, collect, &s), SW_OK);
	ck_assert_uint_eq(s.n, SW_SWU_MAX_EH_CLAUSES / CODE);
}
END_TEST

/* ---- Funclets registered where the clauses say ---- */

static uint8_t method_handle, other_handle;

static void add(sw_codemap *map, void *method, uint64_t start, uint32_t size, uint32_t flags,
                void *parent, const uint8_t *blob, size_t len)
{
	sw_code_info info = { method, start, size, blob, (uint32_t)len, flags, parent };

	ck_assert_int_eq(sw_codemap_add(map, &info), SW_OK);
}

/* A blob of `size` bytes of code with no ops. */
static size_t plain_blob(uint32_t size, uint8_t *buf, size_t cap)
{
	sw_swu_builder *b;
	size_t len;

	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_finish(b, size, buf, cap, &len), SW_OK);
	sw_swu_builder_destroy(b);
	return len;
}

START_TEST(eh_codemap)
{
	/* The catch at [80, 112) and the filter [120, 128) + handler [128, 140) of eh_good. */
	static const struct {
		const char *what;
		uint32_t catch_size, catch_flags, filter_flags;
		void *parent;
		sw_status want;
	} cases[] = {
		{ "as the clauses say", 32, SW_CODE_FUNCLET, SW_CODE_FUNCLET | SW_CODE_FILTER, &method_handle, SW_OK },
		{ "a funclet too short", 31, SW_CODE_FUNCLET, SW_CODE_FUNCLET | SW_CODE_FILTER, &method_handle, SW_E_MISMATCH },
		{ "not flagged a funclet", 32, 0, SW_CODE_FUNCLET | SW_CODE_FILTER, &method_handle, SW_E_MISMATCH },
		{ "a filter not flagged", 32, SW_CODE_FUNCLET, SW_CODE_FUNCLET, &method_handle, SW_E_MISMATCH },
		{ "another parent", 32, SW_CODE_FUNCLET, SW_CODE_FUNCLET | SW_CODE_FILTER, &other_handle, SW_E_MISMATCH },
	};
	const uint64_t base = 0x10000;
	uint8_t fb[3][64];
	size_t flen[3];
	struct blob m;
	sw_status st;

	m = build(SW_ARCH_X64, eh_good, 2, &st);
	ck_assert_int_eq(st, SW_OK);
	for (unsigned k = 0; k < sizeof cases / sizeof cases[0]; k++) {
		sw_codemap *map;
		uint32_t bad = 99;

		ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
		flen[0] = plain_blob(cases[k].catch_size, fb[0], sizeof fb[0]);
		flen[1] = plain_blob(8, fb[1], sizeof fb[1]);
		flen[2] = plain_blob(12, fb[2], sizeof fb[2]);
		add(map, &method_handle, base, CODE, 0, NULL, m.p, m.len);
		add(map, &fb[0], base + 80, cases[k].catch_size, cases[k].catch_flags, cases[k].parent,
		    fb[0], flen[0]);
		add(map, &fb[1], base + 120, 8, cases[k].filter_flags, &method_handle, fb[1], flen[1]);
		add(map, &fb[2], base + 128, 12, SW_CODE_FUNCLET, &method_handle, fb[2], flen[2]);
		st = sw_codemap_check_eh(map, base, &bad);
		ck_assert_msg(st == cases[k].want, "%s: %s", cases[k].what, sw_strerror(st));
		if (st == SW_E_MISMATCH)
			ck_assert_uint_eq(bad, cases[k].filter_flags & SW_CODE_FILTER ? 0 : 1);
		/* Not a method's start; a missing funclet. */
		ck_assert_int_eq(sw_codemap_check_eh(map, base + 1, NULL), SW_E_NOTFOUND);
		ck_assert_int_eq(sw_codemap_remove(map, base + 128), SW_OK);
		ck_assert_int_eq(sw_codemap_check_eh(map, base, &bad), SW_E_MISMATCH);
		sw_codemap_destroy(map);
	}
	ck_assert_int_eq(sw_codemap_check_eh(NULL, base, NULL), SW_E_INVAL);
	free(m.p);
}
END_TEST

/* ---- The dump ---- */

START_TEST(eh_dump)
{
	struct blob b;
	sw_status st;
	char *text = NULL;
	size_t tlen = 0;
	FILE *f;

	b = build(SW_ARCH_X64, eh_good, NGOOD, &st);
	ck_assert_int_eq(st, SW_OK);
	f = open_memstream(&text, &tlen);
	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(sw_swu_dump(f, b.p, b.len), SW_OK);
	fclose(f);
	ck_assert_ptr_nonnull(strstr(text, "eh clauses: 6, innermost first\n"));
	ck_assert_ptr_nonnull(strstr(text, "0: catch   try [8, 20) handler [80, 112) type 0x2000001\n"));
	ck_assert_ptr_nonnull(strstr(text, "1: filter  try [8, 20) filter [120, 128) handler [128, 140)\n"));
	ck_assert_ptr_nonnull(strstr(text, "5: finally try [80, 112) handler [144, 160) duplicated\n"));
	free(text);
	free(b.p);
}
END_TEST

static Suite *eh_suite(void)
{
	Suite *s = suite_create("swu_eh");
	TCase *tc = tcase_create("eh");

	tcase_add_test(tc, eh_example_bytes);
	tcase_add_test(tc, eh_roundtrip);
	tcase_add_test(tc, eh_covering);
	tcase_add_test(tc, eh_handler_at);
	tcase_add_test(tc, eh_old_blobs);
	tcase_add_test(tc, eh_unknown);
	tcase_add_test(tc, eh_hostile);
	tcase_add_test(tc, eh_truncated_or_badmeta);
	tcase_add_loop_test(tc, eh_rules, 0, sizeof bad_tables / sizeof bad_tables[0]);
	tcase_add_test(tc, eh_allowed);
	tcase_add_test(tc, eh_builder_misuse);
	tcase_add_test(tc, eh_many);
	tcase_add_test(tc, eh_codemap);
	tcase_add_test(tc, eh_dump);
	tcase_set_timeout(tc, 0);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(eh_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
