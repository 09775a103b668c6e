/*
 * check_codemap.c - the code map: registration, lookups at every boundary,
 * hostile arguments, removal in place and the reuse of removed entries'
 * memory, a million methods, a reference model, and readers (threads and
 * a signal handler) racing writers.
 *
 * No test asserts on time; the concurrent ones are bounded by iterations.
 */
#include <check.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stackwalk.h>
#include "rounds.h"
#include "util.h"
#include "codemap_lookup.h"
#include "codemap_table.h"
#include "codemap_slab.h"
#include "codemap_shapes.h"
#include "codemap_validated.h"
#include "swu_format.h"

/* ---- helpers ---- */

static uint8_t blob[256];       /* one valid SWU blob, built once per test */
static size_t blob_len;

static void build_blob(void)
{
	sw_swu_builder *b;

	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	/* push rbp; mov rbp, rsp */
	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_set_frame(b, 4, SW_X64_RBP, 0), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 4), SW_OK);
	ck_assert_int_eq(sw_swu_finish(b, 64, blob, sizeof(blob), &blob_len), SW_OK);
	sw_swu_builder_destroy(b);
	ck_assert_uint_gt(blob_len, 0);
	ck_assert_int_eq(sw_swu_validate(blob, blob_len), SW_OK);
}

/* The method handle and parent encode start and size so any found entry
 * can be checked against what was registered. */
static sw_code_info method(uint64_t start, uint64_t size)
{
	sw_code_info ci = {
		.method = (void *)(uintptr_t)(start ^ 0x5a5a5a5a),
		.start = start,
		.size = size,
		.unwind = blob,
		.unwind_size = (uint32_t)blob_len,
		.flags = 0,
		.parent = (void *)(uintptr_t)size,
	};
	return ci;
}

/* Whether `ci` is exactly the entry registered by method(start, size). */
static int entry_ok(const sw_code_info *ci, uint64_t start, uint64_t size)
{
	return ci->start == start && ci->size == size &&
	       ci->method == (void *)(uintptr_t)(start ^ 0x5a5a5a5a) &&
	       ci->parent == (void *)(uintptr_t)size &&
	       ci->unwind_size == blob_len && ci->unwind != blob;
}

/* Whether the map-owned blob matches ours (a plain loop: signal-safe). */
static int blob_ok(const sw_code_info *ci)
{
	for (size_t i = 0; i < blob_len; i++)
		if (ci->unwind[i] != blob[i])
			return 0;
	return 1;
}

static sw_codemap *new_map(void)
{
	sw_codemap *map = NULL;

	build_blob();
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_ptr_nonnull(map);
	return map;
}

static int add(sw_codemap *map, uint64_t start, uint64_t size)
{
	sw_code_info ci = method(start, size);

	return sw_codemap_add(map, &ci);
}

static void expect_found(sw_codemap *map, uint64_t ip, uint64_t start, uint64_t size)
{
	sw_code_info out;

	ck_assert_int_eq(sw_codemap_find(map, ip, &out), SW_OK);
	ck_assert_msg(entry_ok(&out, start, size), "ip %#llx: found [%#llx, +%#llx)",
	              (unsigned long long)ip, (unsigned long long)out.start,
	              (unsigned long long)out.size);
}

static void expect_missing(sw_codemap *map, uint64_t ip)
{
	sw_code_info out;

	ck_assert_msg(sw_codemap_find(map, ip, &out) == SW_E_NOTFOUND,
	              "ip %#llx should not be found", (unsigned long long)ip);
}

/* Whether two lookups' results are the same, field by field. */
static int same_info(const sw_code_info *a, const sw_code_info *b)
{
	return a->method == b->method && a->start == b->start && a->size == b->size &&
	       a->unwind == b->unwind && a->unwind_size == b->unwind_size && a->flags == b->flags &&
	       a->parent == b->parent;
}

/*
 * sw_codemap_find_batch over ips[0..n) gives for each IP what
 * sw_codemap_find gives, all zeros where that finds nothing, and counts
 * the IPs found.  Every out[i] must be written: it starts as garbage.
 */
static void expect_batch_agrees(const sw_codemap *map, const uint64_t *ips, size_t n)
{
	sw_code_info *out = malloc(n * sizeof *out + 1), one;
	const sw_code_info none = { 0 };
	size_t found = SIZE_MAX, want = 0;

	ck_assert_ptr_nonnull(out);
	memset(out, 0xa5, n * sizeof *out);
	ck_assert_int_eq(sw_codemap_find_batch(map, ips, n, out, &found), SW_OK);
	for (size_t i = 0; i < n; i++) {
		sw_status st = sw_codemap_find(map, ips[i], &one);

		want += st == SW_OK;
		if (!same_info(&out[i], st == SW_OK ? &one : &none))
			ck_abort_msg("batch of %zu, ip %zu (%#llx): start %#llx size %#llx, not %s", n, i,
			             (unsigned long long)ips[i], (unsigned long long)out[i].start,
			             (unsigned long long)out[i].size, st == SW_OK ? "the lone lookup's" : "zeros");
	}
	ck_assert_uint_eq(found, want);
	free(out);
}

/* xorshift64*: small, deterministic, per thread. */
static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/* ---- basics ---- */

/*
 * The parent of a funclet (swi_codemap_funclet_parent): the nearest
 * method below it, past its parent's other funclets and gaps, as CoreCLR
 * lays a method's funclets after its body in one block (the rule
 * EECodeInfo::GetRelOffset, vm/codeman.h, measures from).
 */
static sw_code_info funclet_of(uint64_t start, uint64_t size, const sw_code_info *parent)
{
	sw_code_info f = method(start, size);

	f.flags = SW_CODE_FUNCLET;
	f.parent = parent->method;
	return f;
}

static uint64_t parent_of(sw_codemap *map, const sw_code_info *f)
{
	unsigned token = sw_codemap_read_begin(map);
	uint64_t start = swi_codemap_funclet_parent(map, f);

	sw_codemap_read_end(map, token);
	return start;
}

START_TEST(test_funclet_parent)
{
	const uint64_t base = 0x7fc9d199b000ull;
	sw_codemap *map = new_map();
	sw_code_info p = method(base, 0x63), f1 = funclet_of(base + 0x110, 59, &p);
	sw_code_info f2 = funclet_of(base + 0x1000 - 8, 64, &p), far = funclet_of(base + 0x80000, 16, &p);
	sw_code_info other = method(base + 0x200, 16), not_funclet = f1;

	ck_assert_int_eq(sw_codemap_add(map, &p), SW_OK);
	ck_assert_int_eq(sw_codemap_add(map, &f1), SW_OK);
	ck_assert_int_eq(sw_codemap_add(map, &f2), SW_OK);
	ck_assert_int_eq(sw_codemap_add(map, &far), SW_OK);
	/* In the parent's page, and past a funclet of it across a page boundary. */
	ck_assert_uint_eq(parent_of(map, &f1), base);
	ck_assert_uint_eq(parent_of(map, &f2), base);
	/* 128 pages above: more than the search visits. */
	ck_assert_uint_eq(parent_of(map, &far), 0);
	/* Not a funclet, no parent, another parent: none. */
	not_funclet.flags = 0;
	ck_assert_uint_eq(parent_of(map, &not_funclet), 0);
	not_funclet = f1;
	not_funclet.parent = NULL;
	ck_assert_uint_eq(parent_of(map, &not_funclet), 0);
	not_funclet.parent = other.method;
	ck_assert_uint_eq(parent_of(map, &not_funclet), 0);
	ck_assert_uint_eq(parent_of(NULL, &f1), 0);
	ck_assert_uint_eq(parent_of(map, NULL), 0);
	/* Another method between F1 and F2: F2's parent is no longer found. */
	ck_assert_int_eq(sw_codemap_add(map, &other), SW_OK);
	ck_assert_uint_eq(parent_of(map, &f2), 0);
	ck_assert_uint_eq(parent_of(map, &f1), base);
	/* Removed, it leaves a dead item, passed over. */
	ck_assert_int_eq(sw_codemap_remove(map, other.start), SW_OK);
	ck_assert_uint_eq(parent_of(map, &f2), base);
	/* The parent removed: none. */
	ck_assert_int_eq(sw_codemap_remove(map, base), SW_OK);
	ck_assert_uint_eq(parent_of(map, &f1), 0);
	ck_assert_uint_eq(parent_of(map, &f2), 0);
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_add_find_remove)
{
	sw_codemap *map = new_map();
	uint8_t mine[sizeof(blob)];
	sw_code_info ci, out;

	ck_assert_uint_eq(sw_codemap_count(map), 0);
	expect_missing(map, 0x1000);

	/* The map copies the blob: the caller may scribble on its own. */
	memcpy(mine, blob, blob_len);
	ci = method(0x401000, 0x80);
	ci.unwind = mine;
	ci.flags = SW_CODE_FUNCLET | SW_CODE_FILTER;
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_OK);
	memset(mine, 0xee, sizeof(mine));
	ck_assert_uint_eq(sw_codemap_count(map), 1);

	ck_assert_int_eq(sw_codemap_find(map, 0x401000, &out), SW_OK);
	ck_assert_uint_eq(out.start, 0x401000);
	ck_assert_uint_eq(out.size, 0x80);
	ck_assert_uint_eq(out.flags, SW_CODE_FUNCLET | SW_CODE_FILTER);
	ck_assert_ptr_eq(out.method, ci.method);
	ck_assert_ptr_eq(out.parent, ci.parent);
	ck_assert_ptr_ne(out.unwind, mine);
	ck_assert(blob_ok(&out));

	/* Boundaries: first byte, last byte, one past, one before. */
	expect_found(map, 0x401040, 0x401000, 0x80);
	ck_assert_int_eq(sw_codemap_find(map, 0x40107f, &out), SW_OK);
	expect_missing(map, 0x401080);
	expect_missing(map, 0x400fff);

	/* The internal lookup returns the map's own entry. */
	{
		unsigned token = sw_codemap_read_begin(map);
		struct swi_code_copy scratch;
		const sw_code_info *p = swi_codemap_lookup(map, 0x401001, &scratch);

		ck_assert_ptr_nonnull(p);
		ck_assert_uint_eq(p->start, 0x401000);
		ck_assert_ptr_eq(swi_codemap_lookup(map, 0x401080, &scratch), NULL);
		sw_codemap_read_end(map, token);
	}

	ck_assert_int_eq(sw_codemap_remove(map, 0x401001), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_codemap_remove(map, 0x401000), SW_OK);
	ck_assert_uint_eq(sw_codemap_count(map), 0);
	expect_missing(map, 0x401000);
	ck_assert_int_eq(sw_codemap_remove(map, 0x401000), SW_E_NOTFOUND);
	sw_codemap_synchronize(map);

	/* Re-adding after removal works. */
	ck_assert_int_eq(add(map, 0x401000, 0x80), SW_OK);
	expect_found(map, 0x40107f, 0x401000, 0x80);
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_neighbours_in_one_page)
{
	sw_codemap *map = new_map();

	/* Back to back, one byte each and larger, all inside one page. */
	for (uint64_t a = 0x7000; a < 0x7100; a++)
		ck_assert_int_eq(add(map, a, 1), SW_OK);
	ck_assert_int_eq(add(map, 0x7100, 0xf00), SW_OK);
	for (uint64_t a = 0x7000; a < 0x7100; a++)
		expect_found(map, a, a, 1);
	expect_found(map, 0x7fff, 0x7100, 0xf00);
	expect_missing(map, 0x6fff);
	expect_missing(map, 0x8000);
	ck_assert_uint_eq(sw_codemap_count(map), 0x101);
	for (uint64_t a = 0x7001; a < 0x7100; a += 2)
		ck_assert_int_eq(sw_codemap_remove(map, a), SW_OK);
	for (uint64_t a = 0x7000; a < 0x7100; a++) {
		if (a & 1)
			expect_missing(map, a);
		else
			expect_found(map, a, a, 1);
	}
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_overlap)
{
	sw_codemap *map = new_map();

	ck_assert_int_eq(add(map, 0x10000, 0x100), SW_OK);
	ck_assert_int_eq(add(map, 0x10000, 0x100), SW_E_EXISTS);   /* same */
	ck_assert_int_eq(add(map, 0x10000, 1), SW_E_EXISTS);       /* same start */
	ck_assert_int_eq(add(map, 0x100ff, 1), SW_E_EXISTS);       /* last byte */
	ck_assert_int_eq(add(map, 0x10080, 0x10), SW_E_EXISTS);    /* inside */
	ck_assert_int_eq(add(map, 0xff00, 0x101), SW_E_EXISTS);    /* reaches first byte */
	ck_assert_int_eq(add(map, 0x0, 0x100000), SW_E_EXISTS);    /* engulfs, many pages */
	ck_assert_int_eq(add(map, 0x100ff, 0x1000), SW_E_EXISTS);  /* from last byte on */
	ck_assert_uint_eq(sw_codemap_count(map), 1);
	ck_assert_int_eq(add(map, 0xff00, 0x100), SW_OK);          /* ends where it starts */
	ck_assert_int_eq(add(map, 0x10100, 0x1000), SW_OK);        /* starts where it ends */
	ck_assert_uint_eq(sw_codemap_count(map), 3);
	expect_found(map, 0xffff, 0xff00, 0x100);
	expect_found(map, 0x10000, 0x10000, 0x100);
	expect_found(map, 0x10100, 0x10100, 0x1000);
	/* A multi-page method overlapping one that starts pages later. */
	ck_assert_int_eq(add(map, 0x1000, 0xef01), SW_E_EXISTS);
	ck_assert_int_eq(add(map, 0x1000, 0xef00), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_bad_args)
{
	sw_codemap *map = new_map();
	sw_code_info ci, out;
	uint8_t junk[32];

	ci = method(0x1000, 0x10);
	ck_assert_int_eq(sw_codemap_create(NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_codemap_add(NULL, &ci), SW_E_INVAL);
	ck_assert_int_eq(sw_codemap_add(map, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_codemap_remove(NULL, 0), SW_E_INVAL);
	ck_assert_int_eq(sw_codemap_find(NULL, 0, &out), SW_E_INVAL);
	ck_assert_int_eq(sw_codemap_find(map, 0, NULL), SW_E_INVAL);
	{
		uint64_t ip = 0x1000;
		size_t found = 7;

		ck_assert_int_eq(sw_codemap_find_batch(NULL, &ip, 1, &out, &found), SW_E_INVAL);
		ck_assert_uint_eq(found, 0);
		ck_assert_int_eq(sw_codemap_find_batch(map, NULL, 1, &out, NULL), SW_E_INVAL);
		ck_assert_int_eq(sw_codemap_find_batch(map, &ip, 1, NULL, NULL), SW_E_INVAL);
		/* Nothing to look up: nothing is read or written. */
		ck_assert_int_eq(sw_codemap_find_batch(map, NULL, 0, NULL, &found), SW_OK);
		ck_assert_uint_eq(found, 0);
	}
	ck_assert_uint_eq(sw_codemap_count(NULL), 0);
	sw_codemap_destroy(NULL);
	sw_codemap_synchronize(NULL);
	sw_codemap_read_end(NULL, sw_codemap_read_begin(NULL));

	ci = method(0x1000, 0);
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_INVAL);          /* size 0 */
	ci = method(UINT64_MAX - 0x10, 0x20);
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_INVAL);          /* wraps */
	ci = method(1, UINT64_MAX);
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_INVAL);          /* wraps */
	ci = method(0x1000, 0x10);
	ci.unwind = NULL;
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_INVAL);
	ci = method(0x1000, 0x10);
	ci.unwind_size = 0;
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_INVAL);
	ci = method(0x1000, 0x10);
	ci.flags = 0x100;
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_INVAL);          /* unknown flag */
	ci = method(0x1000, 0x10);
	ci.flags = SW_CODE_PERSONALITY;
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_INVAL);          /* only on native code */
	/* Kept, and given back, on native code. */
	ci = method(0x1000, 0x10);
	ci.flags = SW_CODE_NATIVE | SW_CODE_PERSONALITY;
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_OK);
	memset(&out, 0, sizeof out);
	ck_assert_int_eq(sw_codemap_find(map, 0x1008, &out), SW_OK);
	ck_assert_uint_eq(out.flags, SW_CODE_NATIVE | SW_CODE_PERSONALITY);
	ck_assert_int_eq(sw_codemap_remove(map, 0x1000), SW_OK);
	ci = method(0x1000, (uint64_t)SW_SWU_MAX_CODE_SIZE + 1);
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_LIMIT);
	memset(junk, 0xff, sizeof(junk));
	ci = method(0x1000, 0x10);
	ci.unwind = junk;
	ci.unwind_size = sizeof(junk);
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_BADMETA);        /* bad blob */
	ci.unwind = blob;
	ci.unwind_size = 1;
	ck_assert_int_eq(sw_codemap_add(map, &ci), SW_E_BADMETA);        /* truncated */
	ck_assert_uint_eq(sw_codemap_count(map), 0);
	expect_missing(map, 0x1000);
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_hostile_ips)
{
	static const uint64_t ips[] = {
		0, 1, 0xfff, 0x1000, UINT64_MAX, UINT64_MAX - 1, UINT64_MAX >> 1,
		UINT64_C(1) << 63, UINT64_C(0xfffffffffffff000), 0x7fffffffffff,
	};
	sw_codemap *map = new_map();

	for (size_t i = 0; i < sizeof(ips) / sizeof(ips[0]); i++)
		expect_missing(map, ips[i]);
	expect_batch_agrees(map, ips, sizeof(ips) / sizeof(ips[0]));
	/* Methods at the very bottom and the very top of the address space. */
	ck_assert_int_eq(add(map, 0, 0x10), SW_OK);
	ck_assert_int_eq(add(map, UINT64_MAX - 0x2000, 0x2000), SW_OK);
	expect_batch_agrees(map, ips, sizeof(ips) / sizeof(ips[0]));
	expect_found(map, 0, 0, 0x10);
	expect_found(map, 0xf, 0, 0x10);
	expect_missing(map, 0x10);
	expect_found(map, UINT64_MAX - 1, UINT64_MAX - 0x2000, 0x2000);
	expect_found(map, UINT64_MAX - 0x2000, UINT64_MAX - 0x2000, 0x2000);
	expect_missing(map, UINT64_MAX);
	expect_missing(map, UINT64_MAX - 0x2001);
	expect_missing(map, 0x1000);
	expect_missing(map, UINT64_MAX >> 1);
	expect_missing(map, UINT64_C(1) << 63);
	ck_assert_int_eq(sw_codemap_remove(map, UINT64_MAX), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_codemap_remove(map, UINT64_MAX - 0x2000), SW_OK);
	expect_missing(map, UINT64_MAX - 1);
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_many_pages)
{
	const uint64_t start = 0x10000123, size = (UINT64_C(1) << 20) + 0x321;
	sw_codemap *map = new_map();

	ck_assert_int_eq(add(map, start, size), SW_OK);
	/* Every page boundary inside, and its neighbours. */
	for (uint64_t a = (start + 0xfff) & ~UINT64_C(0xfff); a < start + size; a += 0x1000) {
		expect_found(map, a, start, size);
		expect_found(map, a - 1, start, size);
	}
	expect_found(map, start, start, size);
	expect_found(map, start + size - 1, start, size);
	expect_missing(map, start - 1);
	expect_missing(map, start + size);
	/* Nothing fits inside; neighbours sharing its first and last page do. */
	ck_assert_int_eq(add(map, start + 0x5000, 1), SW_E_EXISTS);
	ck_assert_int_eq(add(map, start - 0x100, 0x100), SW_OK);
	ck_assert_int_eq(add(map, start + size, 0x10), SW_OK);
	expect_found(map, start - 1, start - 0x100, 0x100);
	expect_found(map, start + size, start + size, 0x10);
	ck_assert_int_eq(sw_codemap_remove(map, start), SW_OK);
	for (uint64_t a = start; a < start + size; a += 0x777)
		expect_missing(map, a);
	expect_found(map, start - 1, start - 0x100, 0x100);
	expect_found(map, start + size, start + size, 0x10);
	/* And the space is free again. */
	ck_assert_int_eq(add(map, start + 0x5000, 1), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

/* ---- a million methods ---- */

#define MILLION 1000000u
#define M_BASE  UINT64_C(0x7f0000000000)
#define M_STEP  48u

static uint64_t m_size(uint64_t k)
{
	return 16 + k % 29;     /* at most 44 < M_STEP: gaps between methods */
}

/*
 * Every method's first and last byte and the byte after it, looked up in
 * batches of M_BATCH (many read sections each, and a last, shorter one):
 * with `odd_only`, only the odd methods are left.
 */
#define M_BATCH 100000u
static void expect_million_batch(const sw_codemap *map, int odd_only)
{
	static uint64_t ips[3 * MILLION];
	static sw_code_info out[M_BATCH];
	size_t found, total = 0;

	for (uint64_t k = 0; k < MILLION; k++) {
		uint64_t s = M_BASE + k * M_STEP;

		ips[3 * k] = s, ips[3 * k + 1] = s + m_size(k) - 1, ips[3 * k + 2] = s + m_size(k);
	}
	for (size_t at = 0; at < 3 * MILLION; at += M_BATCH) {
		size_t n = 3 * MILLION - at < M_BATCH ? 3 * MILLION - at : M_BATCH;

		ck_assert_int_eq(sw_codemap_find_batch(map, ips + at, n, out, &found), SW_OK);
		total += found;
		for (size_t i = 0; i < n; i++) {
			uint64_t k = (at + i) / 3, s = M_BASE + k * M_STEP;
			int want = (at + i) % 3 != 2 && (!odd_only || (k & 1));

			if (want ? !entry_ok(&out[i], s, m_size(k)) : out[i].size != 0)
				ck_abort_msg("batch: ip %#llx looked up wrong", (unsigned long long)ips[at + i]);
		}
	}
	ck_assert_uint_eq(total, odd_only ? MILLION : 2 * MILLION);
}

START_TEST(test_million)
{
	sw_codemap *map = new_map();

	for (uint64_t k = 0; k < MILLION; k++)
		ck_assert_int_eq(add(map, M_BASE + k * M_STEP, m_size(k)), SW_OK);
	ck_assert_uint_eq(sw_codemap_count(map), MILLION);
	for (uint64_t k = 0; k < MILLION; k++) {
		uint64_t s = M_BASE + k * M_STEP, z = m_size(k);
		sw_code_info out;

		/* Unrolled ck_asserts would dominate the run time here. */
		if (sw_codemap_find(map, s, &out) != SW_OK || !entry_ok(&out, s, z) ||
		    sw_codemap_find(map, s + z - 1, &out) != SW_OK || !entry_ok(&out, s, z) ||
		    sw_codemap_find(map, s + z, &out) != SW_E_NOTFOUND)
			ck_abort_msg("method %llu looked up wrong", (unsigned long long)k);
	}
	expect_million_batch(map, 0);
	/* Remove every other one; the rest stay found. */
	for (uint64_t k = 0; k < MILLION; k += 2)
		ck_assert_int_eq(sw_codemap_remove(map, M_BASE + k * M_STEP), SW_OK);
	ck_assert_uint_eq(sw_codemap_count(map), MILLION / 2);
	expect_million_batch(map, 1);
	for (uint64_t k = 0; k < MILLION; k++) {
		uint64_t s = M_BASE + k * M_STEP, z = m_size(k);
		sw_code_info out;
		sw_status st = sw_codemap_find(map, s + z / 2, &out);

		if ((k & 1) ? st != SW_OK || !entry_ok(&out, s, z) : st != SW_E_NOTFOUND)
			ck_abort_msg("after removal, method %llu looked up wrong", (unsigned long long)k);
	}
	sw_codemap_synchronize(map);
	sw_codemap_destroy(map);
}
END_TEST

/* ---- the page window: grown both ways, dropped after mass removal ---- */

#define W_BASE  UINT64_C(0x600000000000)
#define W_STEP  160u
#define W_UP    20000u          /* methods from W_BASE upwards */
#define W_DOWN  2000u           /* and below it, added downwards */

/* Method k: k < W_UP above W_BASE, the others below it. */
static uint64_t w_start(unsigned k)
{
	return k < W_UP ? W_BASE + (uint64_t)k * W_STEP : W_BASE - (uint64_t)(k - W_UP + 1) * W_STEP;
}

/* Every method's first and last byte, the gap after it, and batches of them, against `live` (NULL: all). */
static void expect_w(sw_codemap *map, const uint8_t *live)
{
	static uint64_t ips[3 * (W_UP + W_DOWN)];
	size_t n = 0;

	for (unsigned k = 0; k < W_UP + W_DOWN; k++) {
		uint64_t s = w_start(k);
		sw_code_info out;
		int want = !live || live[k];

		if ((sw_codemap_find(map, s, &out) == SW_OK) != want || (want && !entry_ok(&out, s, 100)) ||
		    (sw_codemap_find(map, s + 99, &out) == SW_OK) != want ||
		    sw_codemap_find(map, s + 100, &out) != SW_E_NOTFOUND)
			ck_abort_msg("method %u at %#llx looked up wrong", k, (unsigned long long)s);
		ips[n++] = s;
		ips[n++] = s + 99;
		ips[n++] = s + 100;
	}
	for (size_t at = 0; at < n; at += 4096)
		expect_batch_agrees(map, ips + at, n - at < 4096 ? n - at : 4096);
}

START_TEST(test_window)
{
	static uint8_t live[W_UP + W_DOWN];
	sw_codemap *map = new_map();
	unsigned k;

	/* Upwards as a JIT allocates, then downwards: the window grows at both ends. */
	for (k = 0; k < W_UP + W_DOWN; k++)
		ck_assert_int_eq(add(map, w_start(k), 100), SW_OK);
	expect_w(map, NULL);
	/*
	 * All but methods 5000-5099 go, from both ends towards them: the
	 * table shrinks, and the window, now too sparse, is made again for
	 * the pages left.
	 */
	for (k = 0; k < W_UP + W_DOWN; k++)
		live[k] = k >= 5000 && k < 5100;
	for (k = W_UP + W_DOWN; k-- > 5100;)
		ck_assert_int_eq(sw_codemap_remove(map, w_start(k)), SW_OK);
	for (k = 0; k < 5000; k++)
		ck_assert_int_eq(sw_codemap_remove(map, w_start(k)), SW_OK);
	expect_w(map, live);
	/* Methods far away (2^44 bytes), then the first ones back. */
	for (k = 0; k < 3000; k++)
		ck_assert_int_eq(add(map, W_BASE + (UINT64_C(1) << 44) + (uint64_t)k * W_STEP, 100), SW_OK);
	for (k = 0; k < W_UP + W_DOWN; k++) {
		if (!live[k])
			ck_assert_int_eq(add(map, w_start(k), 100), SW_OK);
	}
	expect_w(map, NULL);
	/* All but one in a thousand go: too sparse for any window, which is dropped. */
	for (k = 0; k < W_UP + W_DOWN; k++) {
		live[k] = k % 1000 == 7;
		if (!live[k])
			ck_assert_int_eq(sw_codemap_remove(map, w_start(k)), SW_OK);
	}
	expect_w(map, live);
	for (k = 0; k < W_UP + W_DOWN; k++) {
		if (!live[k])
			ck_assert_int_eq(add(map, w_start(k), 100), SW_OK);
	}
	expect_w(map, NULL);
	for (k = 0; k < 3000; k++)
		expect_found(map, W_BASE + (UINT64_C(1) << 44) + (uint64_t)k * W_STEP + 50,
		             W_BASE + (UINT64_C(1) << 44) + (uint64_t)k * W_STEP, 100);
	/* Everything goes. */
	for (k = 0; k < W_UP + W_DOWN; k++)
		ck_assert_int_eq(sw_codemap_remove(map, w_start(k)), SW_OK);
	memset(live, 0, sizeof live);
	expect_w(map, live);
	sw_codemap_synchronize(map);
	sw_codemap_destroy(map);
}
END_TEST

/* ---- random operations against a reference model ---- */

#define MODEL_MAX  2048
#define MODEL_SPAN 0x40000u     /* 256 KiB: 64 pages */

struct model {
	uint64_t start[MODEL_MAX], size[MODEL_MAX];
	unsigned n;
};

static int model_find(const struct model *m, uint64_t ip)
{
	for (unsigned i = 0; i < m->n; i++)
		if (ip - m->start[i] < m->size[i])
			return (int)i;
	return -1;
}

static int model_overlaps(const struct model *m, uint64_t start, uint64_t size)
{
	for (unsigned i = 0; i < m->n; i++)
		if (start < m->start[i] + m->size[i] && m->start[i] < start + size)
			return 1;
	return 0;
}

/*
 * Loop 0: methods in one range of 64 pages, which the map's page window
 * holds.  Loop 1: in three ranges far apart (2^36 and 2^40 bytes), which
 * no window can hold together, so that most lookups go through the hash
 * table, and the window is made, grown and dropped as the ranges fill
 * and empty.
 */
static const uint64_t model_bases[] = { 0x55550000, 0x55550000 + (UINT64_C(1) << 36), 0x55550000 + (UINT64_C(1) << 40) };

START_TEST(test_random_model)
{
	static struct model m;
	sw_codemap *map = new_map();
	uint64_t seed = 0x9e3779b97f4a7c15 + (uint64_t)_i, base = model_bases[0];
	unsigned regions = _i ? 3 : 1;

	m.n = 0;
	for (unsigned op = 0; op < test_rounds(40000); op++) {
		uint64_t r = rnd(&seed);

		base = model_bases[(r >> 40) % regions];

		if (r % 8 < 4 && m.n < MODEL_MAX) {
			/* Mostly short methods, some spanning several pages. */
			uint64_t start = base + rnd(&seed) % MODEL_SPAN;
			uint64_t size = (r >> 8) % 16 ? 1 + rnd(&seed) % 256 : 1 + rnd(&seed) % 0x5000;
			sw_status want = model_overlaps(&m, start, size) ? SW_E_EXISTS : SW_OK;

			ck_assert_int_eq(add(map, start, size), want);
			if (want == SW_OK) {
				m.start[m.n] = start;
				m.size[m.n++] = size;
			}
		} else if (r % 8 < 7) {
			/* Remove a registered method, or try an address that may not start one. */
			uint64_t start = m.n && (r >> 8) % 4 ? m.start[rnd(&seed) % m.n]
			                                     : base + rnd(&seed) % MODEL_SPAN;
			int i = model_find(&m, start);

			if (i >= 0 && m.start[i] == start) {
				ck_assert_int_eq(sw_codemap_remove(map, start), SW_OK);
				m.start[i] = m.start[m.n - 1];
				m.size[i] = m.size[--m.n];
			} else {
				ck_assert_int_eq(sw_codemap_remove(map, start), SW_E_NOTFOUND);
			}
		} else {
			/* Lone lookups against the model; a batch of up to 300 against them. */
			uint64_t ips[300];
			size_t n = 1 + rnd(&seed) % 300;

			for (size_t j = 0; j < n; j++) {
				uint64_t ip = model_bases[rnd(&seed) % regions] - 0x100 + rnd(&seed) % (MODEL_SPAN + 0x6000);
				int i = model_find(&m, ip);

				if (i >= 0)
					expect_found(map, ip, m.start[i], m.size[i]);
				else
					expect_missing(map, ip);
				ips[j] = ip;
			}
			expect_batch_agrees(map, ips, n);
		}
		ck_assert_uint_eq(sw_codemap_count(map), m.n);
		if (op % 5000 == 0)
			sw_codemap_synchronize(map);
	}
	sw_codemap_destroy(map);
}
END_TEST

/* ---- removal in place, compaction, and memory reuse ---- */

#define P_BASE  UINT64_C(0x20000)
#define P_N     64u             /* 64 methods of 64 bytes: exactly one page */

/* Check every method of the page (and the one reaching in from before)
 * against `live`: first and last byte found, or both missing. */
static void expect_page(sw_codemap *map, const int *live)
{
	for (unsigned k = 0; k < P_N; k++) {
		uint64_t s = P_BASE + k * 64;

		if (live[k]) {
			expect_found(map, s, s, 64);
			expect_found(map, s + 63, s, 64);
		} else {
			expect_missing(map, s);
			expect_missing(map, s + 63);
		}
	}
}

START_TEST(test_remove_in_place)
{
	sw_codemap *map = new_map();
	int live[P_N];
	unsigned order[P_N];

	/* A method from the page before reaches 0x100 bytes into this one. */
	ck_assert_int_eq(add(map, P_BASE - 0x100, 0x100), SW_OK);
	for (unsigned k = 0; k < P_N; k++) {
		ck_assert_int_eq(add(map, P_BASE + k * 64, 64), SW_OK);
		live[k] = 1;
		order[k] = (k * 37u) % P_N;     /* 37 is odd: a permutation */
	}
	/* Each removal is seen at once, whether the item dies in place or
	 * the node is compacted (half dead) or becomes a tombstone. */
	for (unsigned i = 0; i < P_N; i++) {
		ck_assert_int_eq(sw_codemap_remove(map, P_BASE + order[i] * 64), SW_OK);
		ck_assert_int_eq(sw_codemap_remove(map, P_BASE + order[i] * 64), SW_E_NOTFOUND);
		live[order[i]] = 0;
		expect_page(map, live);
		expect_found(map, P_BASE - 1, P_BASE - 0x100, 0x100);
		/* Halfway: put back every removed one (adds over dead items)... */
		if (i == P_N / 3) {
			for (unsigned j = 0; j <= i; j++) {
				ck_assert_int_eq(add(map, P_BASE + order[j] * 64, 64), SW_OK);
				live[order[j]] = 1;
			}
			expect_page(map, live);
			/* ...and the page's items are all live again: remove the
			 * first third once more. */
			for (unsigned j = 0; j <= i; j++) {
				ck_assert_int_eq(sw_codemap_remove(map, P_BASE + order[j] * 64), SW_OK);
				live[order[j]] = 0;
			}
			expect_page(map, live);
		}
	}
	ck_assert_uint_eq(sw_codemap_count(map), 1);
	/* The method reaching in from before dies in this page in place too. */
	ck_assert_int_eq(sw_codemap_remove(map, P_BASE - 0x100), SW_OK);
	expect_missing(map, P_BASE - 1);
	ck_assert_uint_eq(sw_codemap_count(map), 0);
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_overlap_with_dead_items)
{
	sw_codemap *map = new_map();

	/* Three neighbours; the middle one removed in place (a third dead). */
	ck_assert_int_eq(add(map, 0x30000, 0x100), SW_OK);
	ck_assert_int_eq(add(map, 0x30100, 0x100), SW_OK);
	ck_assert_int_eq(add(map, 0x30200, 0x100), SW_OK);
	ck_assert_int_eq(add(map, 0x30300, 0x100), SW_OK);
	ck_assert_int_eq(sw_codemap_remove(map, 0x30200), SW_OK);
	/* The freed space takes a method of any shape inside it... */
	ck_assert_int_eq(add(map, 0x30280, 0x80), SW_OK);
	/* ...but not one reaching a live neighbour, whatever dead item
	 * lies between. */
	ck_assert_int_eq(sw_codemap_remove(map, 0x30280), SW_OK);
	ck_assert_int_eq(add(map, 0x301ff, 0x10), SW_E_EXISTS);
	ck_assert_int_eq(add(map, 0x30200, 0x101), SW_E_EXISTS);
	ck_assert_int_eq(add(map, 0x30100, 0x10), SW_E_EXISTS);
	ck_assert_int_eq(add(map, 0x30200, 0x100), SW_OK);
	expect_found(map, 0x302ff, 0x30200, 0x100);
	expect_found(map, 0x30300, 0x30300, 0x100);
	expect_found(map, 0x301ff, 0x30100, 0x100);
	/* A removed multi-page method frees every page it spanned. */
	ck_assert_int_eq(add(map, 0x30400, 0x3000), SW_OK);
	ck_assert_int_eq(add(map, 0x33400, 0x10), SW_OK);
	ck_assert_int_eq(sw_codemap_remove(map, 0x30400), SW_OK);
	expect_missing(map, 0x31000);
	expect_missing(map, 0x333ff);
	ck_assert_int_eq(add(map, 0x33000, 0x400), SW_OK);
	ck_assert_int_eq(add(map, 0x303ff, 0x2), SW_E_EXISTS);
	ck_assert_int_eq(add(map, 0x30400, 0x2c00), SW_OK);
	expect_found(map, 0x32fff, 0x30400, 0x2c00);
	expect_found(map, 0x33000, 0x33000, 0x400);
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_append_in_place)
{
	sw_codemap *map = new_map();
	const uint64_t base = 0x50000;

	/* Ascending, 0x40 apart with gaps of 0x20: appends in place while
	 * the node has room, copies when it is full; every step is seen. */
	for (uint64_t k = 0; k < 40; k++) {
		ck_assert_int_eq(add(map, base + k * 0x60, 0x40), SW_OK);
		for (uint64_t j = 0; j <= k; j++) {
			expect_found(map, base + j * 0x60, base + j * 0x60, 0x40);
			expect_found(map, base + j * 0x60 + 0x3f, base + j * 0x60, 0x40);
			expect_missing(map, base + j * 0x60 + 0x40);
		}
		expect_missing(map, base + (k + 1) * 0x60);
	}
	/* Into the gaps (not last: copied), then after dead items (appended
	 * past them), then over the range of a dead item. */
	ck_assert_int_eq(add(map, base + 0x40, 0x20), SW_OK);
	ck_assert_int_eq(add(map, base + 5 * 0x60 + 0x40, 0x20), SW_OK);
	ck_assert_int_eq(sw_codemap_remove(map, base + 39 * 0x60), SW_OK);
	ck_assert_int_eq(sw_codemap_remove(map, base + 38 * 0x60), SW_OK);
	ck_assert_int_eq(add(map, base + 40 * 0x60, 0x40), SW_OK);
	ck_assert_int_eq(add(map, base + 39 * 0x60, 0x60), SW_OK);
	ck_assert_int_eq(add(map, base + 39 * 0x60 - 1, 2), SW_E_EXISTS);
	expect_found(map, base + 0x5f, base + 0x40, 0x20);
	expect_found(map, base + 5 * 0x60 + 0x5f, base + 5 * 0x60 + 0x40, 0x20);
	expect_missing(map, base + 38 * 0x60);
	expect_found(map, base + 39 * 0x60 + 0x5f, base + 39 * 0x60, 0x60);
	expect_found(map, base + 40 * 0x60, base + 40 * 0x60, 0x40);
	expect_found(map, base + 37 * 0x60 + 0x3f, base + 37 * 0x60, 0x40);
	ck_assert_uint_eq(sw_codemap_count(map), 42);
	sw_codemap_destroy(map);
}
END_TEST

#define R_N 3000u

/*
 * The memory of removed entries is reused once no reader can hold it:
 * after removing every method but one and synchronizing, methods
 * registered anew are stored where the old ones were, and read back
 * intact.  Once the last one goes, the memory goes back to malloc.
 */
/* What malloc has handed out: its heap, and the large blocks it maps apart. */
static size_t malloc_held(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

START_TEST(test_entry_reuse)
{
	static const uint8_t *old_blob[R_N], *new_blob[R_N];
	sw_codemap *map = new_map();
	unsigned reused = 0;
	size_t held;

	ck_assert_int_eq(add(map, 0x3f000000, 0x10), SW_OK);    /* the one kept */
	for (unsigned round = 0; round < 3; round++) {
		uint64_t base = 0x40000000 + (uint64_t)round * 0x1000000;

		for (unsigned k = 0; k < R_N; k++)
			ck_assert_int_eq(add(map, base + k * 0x40, 0x30), SW_OK);
		for (unsigned k = 0; k < R_N; k++) {
			sw_code_info out;

			ck_assert_int_eq(sw_codemap_find(map, base + k * 0x40 + 0x2f, &out), SW_OK);
			ck_assert(entry_ok(&out, base + k * 0x40, 0x30));
			ck_assert(blob_ok(&out));
			if (round > 0)
				for (unsigned j = 0; j < R_N; j++)
					if (old_blob[j] == out.unwind) {
						reused++;
						break;
					}
			new_blob[k] = out.unwind;
		}
		memcpy(old_blob, new_blob, sizeof old_blob);
		/* Remove in an order unlike the one they were added in. */
		for (unsigned k = 0; k < R_N; k++)
			ck_assert_int_eq(sw_codemap_remove(map, base + ((k * 7u) % R_N) * 0x40), SW_OK);
		ck_assert_uint_eq(sw_codemap_count(map), 1);
		sw_codemap_synchronize(map);
	}
	/* Every entry of rounds 1 and 2 took the place of one removed before. */
	ck_assert_uint_eq(reused, 2 * R_N);
	held = malloc_held();
	ck_assert_int_eq(sw_codemap_remove(map, 0x3f000000), SW_OK);
	sw_codemap_synchronize(map);
	/* Not under sanitizers, whose allocators mallinfo2 does not see. */
	if (held > 0)
		ck_assert_uint_ge(held - malloc_held(), R_N * sizeof(sw_code_info));
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_slab)
{
	struct swi_slab s;
	void *p[SWI_SLAB_MAX + 200];

	swi_slab_init(&s);
	/* Every size, aligned, usable to its last byte, and disjoint. */
	for (size_t size = 1; size < SWI_SLAB_MAX + 200; size++) {
		p[size] = swi_slab_alloc(&s, size & 1, size);
		ck_assert_ptr_nonnull(p[size]);
		ck_assert_uint_eq((uintptr_t)p[size] % SWI_SLAB_GRAIN, 0);
		memset(p[size], (int)(size & 0xff), size);
	}
	for (size_t size = 1; size < SWI_SLAB_MAX + 200; size++)
		for (size_t i = 0; i < size; i++)
			ck_assert_uint_eq(((uint8_t *)p[size])[i], size & 0xff);
	/* A freed object comes back for its kind and size (rounded to the
	 * grain), last freed first; larger ones go back to malloc. */
	swi_slab_free(&s, 1, p[17], 17);
	swi_slab_free(&s, 0, p[100], 100);
	ck_assert_ptr_ne(swi_slab_alloc(&s, 0, 17), p[17]);     /* another kind's */
	ck_assert_ptr_eq(swi_slab_alloc(&s, 0, 98), p[100]);
	ck_assert_ptr_eq(swi_slab_alloc(&s, 1, 24), p[17]);
	swi_slab_free(&s, 1, p[SWI_SLAB_MAX + 1], SWI_SLAB_MAX + 1);
	swi_slab_free(&s, 0, NULL, 8);
	ck_assert_ptr_null(swi_slab_alloc(&s, 0, 0));
	for (size_t size = SWI_SLAB_MAX + 2; size < SWI_SLAB_MAX + 200; size++)
		swi_slab_free(&s, size & 1, p[size], size);
	swi_slab_destroy(&s);
}
END_TEST

/*
 * Past SWI_SLAB_HUGE_AFTER bytes the slab maps 2 MiB blocks of its own:
 * objects from them are as usable as the others, of both kinds, and every
 * block goes back once the last object is freed (under ASan, a block left
 * mapped or poisoned shows up as a leak or a bad access here or later).
 */
START_TEST(test_slab_huge_blocks)
{
	enum { SIZE = SWI_SLAB_MAX, N = (SWI_SLAB_HUGE_AFTER + 2 * SWI_SLAB_HUGE_BLOCK) / SIZE };
	struct swi_slab s;
	uint8_t **p = malloc(sizeof(*p) * N);
	size_t k;

	ck_assert_ptr_nonnull(p);
	swi_slab_init(&s);
	for (k = 0; k < N; k++) {
		p[k] = swi_slab_alloc(&s, k & 1, SIZE);
		ck_assert_ptr_nonnull(p[k]);
		ck_assert_uint_eq((uintptr_t)p[k] % SWI_SLAB_GRAIN, 0);
		memset(p[k], (int)(k & 0xff), SIZE);
		/* Nothing is mapped before the threshold (small maps waste nothing). */
		if (k < SWI_SLAB_HUGE_AFTER / SIZE / 2)
			ck_assert_uint_eq(s.mapped, 0);
	}
	/* The mmap may fail (a tight RLIMIT_AS): then blocks come from malloc. */
	ck_assert_uint_ge(s.held, (size_t)N * SIZE);
	if (s.mapped) {
		/* The newest block is mapped, aligned for a huge page. */
		ck_assert_uint_ge(s.mapped, SWI_SLAB_HUGE_BLOCK);
		ck_assert_uint_eq((uintptr_t)s.blocks % SWI_SLAB_HUGE_BLOCK, 0);
	}
	for (k = 0; k < N; k++)
		ck_assert_uint_eq(p[k][0], k & 0xff);
	/* Freed objects come back from a huge block as from any other. */
	swi_slab_free(&s, 1, p[N - 1], SIZE);
	ck_assert_ptr_eq(swi_slab_alloc(&s, 1, SIZE), p[N - 1]);
	/* Freeing the last object gives every block back. */
	for (k = 0; k < N; k++)
		swi_slab_free(&s, k & 1, p[k], SIZE);
	ck_assert_ptr_null(s.blocks);
	ck_assert_uint_eq(s.held, 0);
	ck_assert_uint_eq(s.mapped, 0);
	/* And the slab starts over, from malloc. */
	p[0] = swi_slab_alloc(&s, 0, 8);
	ck_assert_ptr_nonnull(p[0]);
	ck_assert_uint_eq(s.mapped, 0);
	swi_slab_destroy(&s);
	free(p);
}
END_TEST

/* ---- concurrency: reader threads against writer threads ---- */

/*
 * A fixed universe of slots, each with its own range: slot k is the method
 * [C_BASE + k * C_STRIDE, + c_size(k)).  Writers toggle their own slots;
 * pinned slots are registered before the race and never touched, so
 * readers must always find them.  Sizes up to C_STRIDE - 1 make many
 * methods cross page boundaries.
 */
#define C_SLOTS   2048u
#define C_STRIDE  6000u
#define C_BASE    UINT64_C(0x200000000)
#define C_PINNED(k) ((k) % 16 == 0)
#define R_BATCH   100u          /* a reader's batch: longer than the pipeline's 80 steps */
#define C_WRITERS 2
#define C_READERS 2
#define C_WRITER_OPS 60000u
/* Writer 0 also grows and shrinks the table with bursts out here. */
#define C_BURST_BASE UINT64_C(0x900000000)
#define C_BURST 3000u

static uint64_t c_size(uint64_t k)
{
	return 1 + (k * 2654435761u) % (C_STRIDE - 1);
}

struct race {
	sw_codemap *map;
	atomic_int writers_done;
	atomic_ulong failures;
	atomic_ulong lookups, hits;
};

/* Check one lookup result for `ip`; returns 0 when it is wrong. */
static int race_check(const sw_code_info *ci, uint64_t ip, int deep)
{
	uint64_t size;

	if (!ci)
		return 1;
	if (ip - ci->start >= ci->size)
		return 0;
	if (ci->start >= C_BURST_BASE) {
		if ((ci->start - C_BURST_BASE) % 4096)
			return 0;
		size = 32;
	} else {
		uint64_t k = (ci->start - C_BASE) / C_STRIDE;

		if (ci->start < C_BASE || (ci->start - C_BASE) % C_STRIDE || k >= C_SLOTS)
			return 0;
		size = c_size(k);
	}
	if (!entry_ok(ci, ci->start, size))
		return 0;
	return !deep || blob_ok(ci);
}

static void *race_reader(void *arg)
{
	struct race *r = arg;
	uint64_t seed = (uintptr_t)&seed | 1;
	unsigned long lookups = 0, hits = 0;

	while (!atomic_load(&r->writers_done) && lookups < 20000000ul) {
		uint64_t k = rnd(&seed) % C_SLOTS;
		uint64_t ip = C_BASE + k * C_STRIDE + rnd(&seed) % C_STRIDE;

		if (lookups % 16 == 15) {
			/* A batch of IPs around this one: its lookups overlap the writers'. */
			uint64_t ips[R_BATCH];
			sw_code_info out[R_BATCH];
			size_t found;

			for (unsigned j = 0; j < R_BATCH; j++) {
				k = rnd(&seed) % C_SLOTS;
				ips[j] = C_BASE + k * C_STRIDE + rnd(&seed) % C_STRIDE;
			}
			if (sw_codemap_find_batch(r->map, ips, R_BATCH, out, &found) != SW_OK)
				atomic_fetch_add(&r->failures, 1);
			for (unsigned j = 0; j < R_BATCH; j++) {
				uint64_t kj = (ips[j] - C_BASE) / C_STRIDE;

				if (out[j].size ? !race_check(&out[j], ips[j], 0) : out[j].method != NULL)
					atomic_fetch_add(&r->failures, 1);
				if (C_PINNED(kj) && ips[j] - (C_BASE + kj * C_STRIDE) < c_size(kj) && !out[j].size)
					atomic_fetch_add(&r->failures, 1);
				found -= out[j].size != 0;
				hits += out[j].size != 0;
			}
			if (found != 0)
				atomic_fetch_add(&r->failures, 1);
		} else if (lookups % 2) {
			/* The walker's way: a section, the map's own entry, the blob. */
			unsigned token = sw_codemap_read_begin(r->map);
			struct swi_code_copy scratch;
			const sw_code_info *ci = swi_codemap_lookup(r->map, ip, &scratch);

			if (!race_check(ci, ip, 1))
				atomic_fetch_add(&r->failures, 1);
			if (C_PINNED(k) && ip - (C_BASE + k * C_STRIDE) < c_size(k) && !ci)
				atomic_fetch_add(&r->failures, 1);
			hits += ci != NULL;
			sw_codemap_read_end(r->map, token);
		} else {
			sw_code_info out;
			sw_status st = sw_codemap_find(r->map, ip, &out);

			if (st != SW_OK && st != SW_E_NOTFOUND)
				atomic_fetch_add(&r->failures, 1);
			if (st == SW_OK && !race_check(&out, ip, 0))
				atomic_fetch_add(&r->failures, 1);
			if (C_PINNED(k) && ip - (C_BASE + k * C_STRIDE) < c_size(k) && st != SW_OK)
				atomic_fetch_add(&r->failures, 1);
			hits += st == SW_OK;
		}
		lookups++;
	}
	atomic_fetch_add(&r->lookups, lookups);
	atomic_fetch_add(&r->hits, hits);
	return NULL;
}

struct writer_arg {
	struct race *race;
	unsigned id;
};

static void *race_writer(void *arg)
{
	struct writer_arg *w = arg;
	sw_codemap *map = w->race->map;
	unsigned char present[C_SLOTS] = { 0 };
	uint64_t seed = 0x1234567 + w->id;

	for (unsigned op = 0; op < C_WRITER_OPS; op++) {
		uint64_t k = rnd(&seed) % C_SLOTS;
		sw_status st;

		if (C_PINNED(k) || k % C_WRITERS != w->id)
			continue;
		if (present[k])
			st = sw_codemap_remove(map, C_BASE + k * C_STRIDE);
		else
			st = add(map, C_BASE + k * C_STRIDE, c_size(k));
		if (st != SW_OK)
			atomic_fetch_add(&w->race->failures, 1);
		present[k] ^= 1;
		if (op % 4096 == 0)
			sw_codemap_synchronize(map);
		if (w->id == 0 && op % 20000 == 10000) {
			/* Force resizes: many new pages, then none. */
			for (uint64_t b = 0; b < C_BURST; b++)
				if (add(map, C_BURST_BASE + b * 4096, 32) != SW_OK)
					atomic_fetch_add(&w->race->failures, 1);
			for (uint64_t b = 0; b < C_BURST; b++)
				if (sw_codemap_remove(map, C_BURST_BASE + b * 4096) != SW_OK)
					atomic_fetch_add(&w->race->failures, 1);
		}
	}
	return NULL;
}

START_TEST(test_concurrent)
{
	struct race r = { .map = new_map() };
	pthread_t readers[C_READERS], writers[C_WRITERS];
	struct writer_arg wa[C_WRITERS];

	for (uint64_t k = 0; k < C_SLOTS; k += 16)
		ck_assert_int_eq(add(r.map, C_BASE + k * C_STRIDE, c_size(k)), SW_OK);
	for (int i = 0; i < C_READERS; i++)
		ck_assert_int_eq(pthread_create(&readers[i], NULL, race_reader, &r), 0);
	for (unsigned i = 0; i < C_WRITERS; i++) {
		wa[i].race = &r;
		wa[i].id = i;
		ck_assert_int_eq(pthread_create(&writers[i], NULL, race_writer, &wa[i]), 0);
	}
	for (int i = 0; i < C_WRITERS; i++)
		pthread_join(writers[i], NULL);
	atomic_store(&r.writers_done, 1);
	for (int i = 0; i < C_READERS; i++)
		pthread_join(readers[i], NULL);

	if (getenv("SW_TEST_VERBOSE"))
		fprintf(stderr, "concurrent: %lu lookups, %lu hits\n",
		        atomic_load(&r.lookups), atomic_load(&r.hits));
	ck_assert_uint_eq(atomic_load(&r.failures), 0);
	ck_assert_uint_gt(atomic_load(&r.lookups), 0);
	ck_assert_uint_gt(atomic_load(&r.hits), 0);
	sw_codemap_synchronize(r.map);
	sw_codemap_destroy(r.map);
}
END_TEST

/* ---- a reader in a signal handler, interrupting the writer ---- */

#define S_OPS_MIN   50000u
#define S_OPS_MAX   2000000u
#define S_SIGNALS   500ul

static sw_codemap *sig_map;
static atomic_ulong sig_runs, sig_failures;
static atomic_int sig_stop;
static uint64_t sig_seed = 42;  /* only the handler uses it */

static void sig_reader(int signo)
{
	/* A nested section, as when a signal interrupts a walk. */
	unsigned outer = sw_codemap_read_begin(sig_map);
	unsigned inner = sw_codemap_read_begin(sig_map);

	(void)signo;
	for (int i = 0; i < 64; i++) {
		uint64_t k = rnd(&sig_seed) % C_SLOTS;
		uint64_t ip = C_BASE + k * C_STRIDE + rnd(&sig_seed) % C_STRIDE;
		struct swi_code_copy scratch;
		const sw_code_info *ci = swi_codemap_lookup(sig_map, ip, &scratch);

		if (!race_check(ci, ip, 1))
			atomic_fetch_add(&sig_failures, 1);
		if (C_PINNED(k) && ip - (C_BASE + k * C_STRIDE) < c_size(k) && !ci)
			atomic_fetch_add(&sig_failures, 1);
	}
	/* And a batch, which opens sections of its own inside these. */
	{
		uint64_t ips[R_BATCH];
		sw_code_info out[R_BATCH];

		for (unsigned j = 0; j < R_BATCH; j++) {
			uint64_t k = rnd(&sig_seed) % C_SLOTS;

			ips[j] = C_BASE + k * C_STRIDE + rnd(&sig_seed) % C_STRIDE;
		}
		if (sw_codemap_find_batch(sig_map, ips, R_BATCH, out, NULL) != SW_OK)
			atomic_fetch_add(&sig_failures, 1);
		for (unsigned j = 0; j < R_BATCH; j++) {
			uint64_t k = (ips[j] - C_BASE) / C_STRIDE;

			if (!race_check(out[j].size ? &out[j] : NULL, ips[j], 1))
				atomic_fetch_add(&sig_failures, 1);
			if (C_PINNED(k) && ips[j] - (C_BASE + k * C_STRIDE) < c_size(k) && !out[j].size)
				atomic_fetch_add(&sig_failures, 1);
		}
	}
	sw_codemap_read_end(sig_map, inner);
	sw_codemap_read_end(sig_map, outer);
	atomic_fetch_add(&sig_runs, 1);
}

static void *sig_sender(void *arg)
{
	pthread_t target = *(pthread_t *)arg;

	/* Often enough to land inside adds and removes, not so often that
	 * the handler starves the writer. */
	struct timespec pause = { 0, 20000 };

	while (!atomic_load(&sig_stop)) {
		pthread_kill(target, SIGUSR1);
		nanosleep(&pause, NULL);
	}
	return NULL;
}

START_TEST(test_signal_reader)
{
	struct sigaction sa;
	pthread_t self = pthread_self(), sender;
	unsigned char present[C_SLOTS] = { 0 };
	uint64_t seed = 7;
	unsigned op;

	sig_map = new_map();
	for (uint64_t k = 0; k < C_SLOTS; k += 16)
		ck_assert_int_eq(add(sig_map, C_BASE + k * C_STRIDE, c_size(k)), SW_OK);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = sig_reader;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	ck_assert_int_eq(pthread_create(&sender, NULL, sig_sender, &self), 0);

	for (op = 0; op < S_OPS_MAX && (op < S_OPS_MIN || atomic_load(&sig_runs) < S_SIGNALS); op++) {
		uint64_t k = rnd(&seed) % C_SLOTS;
		sw_status st;

		if (C_PINNED(k))
			continue;
		st = present[k] ? sw_codemap_remove(sig_map, C_BASE + k * C_STRIDE)
		                : add(sig_map, C_BASE + k * C_STRIDE, c_size(k));
		ck_assert_int_eq(st, SW_OK);
		present[k] ^= 1;
		if (op % 8192 == 0)
			sw_codemap_synchronize(sig_map);
	}
	atomic_store(&sig_stop, 1);
	pthread_join(sender, NULL);
	signal(SIGUSR1, SIG_IGN);

	if (getenv("SW_TEST_VERBOSE"))
		fprintf(stderr, "signal reader: %u writer ops, %lu handler runs\n",
		        op, atomic_load(&sig_runs));
	ck_assert_uint_eq(atomic_load(&sig_failures), 0);
	ck_assert_uint_gt(atomic_load(&sig_runs), 0);
	sw_codemap_synchronize(sig_map);
	sw_codemap_destroy(sig_map);
}
END_TEST

/* ---- compact entries: what a lookup copies out is what was registered ---- */

/* A blob of `size` bytes of code: push rbp; mov rbp, rsp; sub rsp, frame; no epilog when frame is 0. */
static size_t frame_blob(uint8_t *out, size_t cap, uint32_t size, uint32_t frame)
{
	sw_swu_builder *b;
	size_t len = 0;

	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_set_frame(b, 4, SW_X64_RBP, 0), SW_OK);
	if (frame)
		ck_assert_int_eq(sw_swu_alloc_stack(b, 8, frame), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 8), SW_OK);
	if (frame) {
		ck_assert_int_eq(sw_swu_epilog_begin(b, size - 6), SW_OK);
		ck_assert_int_eq(sw_swu_free_stack(b, size - 2, frame), SW_OK);
		ck_assert_int_eq(sw_swu_pop_reg(b, size - 1, SW_X64_RBP), SW_OK);
		ck_assert_int_eq(sw_swu_epilog_end(b, size), SW_OK);
	}
	ck_assert_int_eq(sw_swu_finish(b, size, out, cap, &len), SW_OK);
	sw_swu_builder_destroy(b);
	return len;
}

/* A row blob (as imported CFI) whose body rule has two runs: an early return at 20. */
static size_t two_run_blob(uint8_t *out, size_t cap, uint32_t size)
{
	sw_swu_builder *b;
	size_t len = 0;

	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_def_cfa_offset(b, 1, 16), SW_OK);
	ck_assert_int_eq(sw_swu_saved_at(b, 1, SW_X64_RBP, -16), SW_OK);
	ck_assert_int_eq(sw_swu_def_cfa_offset(b, 20, 8), SW_OK);
	ck_assert_int_eq(sw_swu_def_cfa_offset(b, 21, 16), SW_OK);
	ck_assert_int_eq(sw_swu_def_cfa_offset(b, size - 1, 8), SW_OK);
	ck_assert_int_eq(sw_swu_finish(b, size, out, cap, &len), SW_OK);
	sw_swu_builder_destroy(b);
	return len;
}

/* Register `ci`, look it up inside a read section and check every field and the body rule. */
static void expect_copied_out(sw_codemap *map, const sw_code_info *ci)
{
	struct swu_body_rule want;
	uint32_t want_saved[SWU_BODY_MAX_SAVED];
	struct swi_code_copy scratch;
	const sw_code_info *got;
	unsigned token;

	ck_assert_int_eq(sw_codemap_add(map, ci), SW_OK);
	ck_assert_int_eq(swu_validate_body_rule(ci->unwind, ci->unwind_size, &want, want_saved), SW_OK);
	token = sw_codemap_read_begin(map);
	got = swi_codemap_lookup(map, ci->start + ci->size - 1, &scratch);
	ck_assert_ptr_nonnull(got);
	ck_assert_ptr_eq(got->method, ci->method);
	ck_assert_ptr_eq(got->parent, ci->parent);
	ck_assert_uint_eq(got->start, ci->start);
	ck_assert_uint_eq(got->size, ci->size);
	ck_assert_uint_eq(got->flags, ci->flags);
	ck_assert_uint_eq(got->unwind_size, ci->unwind_size);
	ck_assert_int_eq(memcmp(got->unwind, ci->unwind, ci->unwind_size), 0);
	ck_assert_ptr_nonnull(scratch.entry);
	ck_assert_uint_eq(scratch.index, SWI_COPY_ENTRY);
	if (want.lo >= want.hi) {
		ck_assert_uint_eq(scratch.body->lo, scratch.body->hi);
	} else {
		struct swu_body_rule a = *scratch.body, b = want;

		ck_assert_uint_eq(a.lo, b.lo);
		ck_assert_uint_eq(a.hi, b.hi);
		ck_assert_uint_eq(a.lo2, b.lo2);
		ck_assert_uint_eq(a.hi2, b.hi2);
		ck_assert_int_eq(memcmp(&a, &b, sizeof a), 0);
		ck_assert_int_eq(memcmp(scratch.saved, want_saved, sizeof(want_saved[0]) * want.nsaved), 0);
	}
	/* A batch copies out the same (every flag, parent, size and run layout). */
	{
		const uint64_t ips[] = { ci->start, ci->start + ci->size - 1, ci->start + ci->size };
		sw_code_info out[3];
		size_t found;

		ck_assert_int_eq(sw_codemap_find_batch(map, ips, 3, out, &found), SW_OK);
		ck_assert(same_info(&out[0], &scratch.info));
		ck_assert(same_info(&out[1], &scratch.info));
		expect_batch_agrees(map, ips, 3);
	}
	sw_codemap_read_end(map, token);
	ck_assert_int_eq(sw_codemap_remove(map, ci->start), SW_OK);
}

START_TEST(test_compact_entries)
{
	static uint8_t small[256], big[256], none[256], runs[256];
	sw_codemap *map = new_map();
	uint64_t at = 0x7000000000ull;
	struct swu_body_rule br;
	uint32_t saved[SWU_BODY_MAX_SAVED];
	sw_code_info ci = { .method = (void *)0x1234 };

	/* The common case: one run below 64 KiB, in the header's 16-bit run[]. */
	ci.unwind = small, ci.unwind_size = (uint32_t)frame_blob(small, sizeof small, 0x200, 0x40);
	ci.start = at, ci.size = 0x200;
	/* Every SW_CODE_* flag, with and without a parent. */
	for (uint32_t flags = 0; flags <= (SW_CODE_FUNCLET | SW_CODE_FILTER | SW_CODE_NATIVE | SW_CODE_ANALYZED |
	                                    SW_CODE_SIGNAL_TRAMPOLINE | SW_CODE_OUTERMOST); flags++) {
		ci.flags = flags;
		ci.parent = (flags & 1) ? (void *)(uintptr_t)(0x9000 + flags) : NULL;
		expect_copied_out(map, &ci);
	}
	ci.flags = 0, ci.parent = NULL;
	/* A size other than the blob's code size (longer, shorter), with and without a parent. */
	for (unsigned k = 0; k < 4; k++) {
		ci.size = (k & 1) ? 0x1000 : 0x100;
		ci.parent = (k & 2) ? (void *)0x55 : NULL;
		expect_copied_out(map, &ci);
	}
	ci.parent = NULL;
	/* A body past 64 KiB: the offsets follow the header as 32 bits. */
	ci.unwind = big, ci.unwind_size = (uint32_t)frame_blob(big, sizeof big, 0x30000, 0);
	ci.size = 0x30000;
	ck_assert_int_eq(swu_validate_body_rule(big, ci.unwind_size, &br, saved), SW_OK);
	ck_assert_uint_gt(br.hi, 0xffff);
	expect_copied_out(map, &ci);
	ci.parent = (void *)0x77;
	expect_copied_out(map, &ci);
	ci.size = 0x30010;      /* and a size of its own between them */
	expect_copied_out(map, &ci);
	ci.parent = NULL;
	expect_copied_out(map, &ci);
	/* Two runs with the same rule (an early return): the 32-bit offsets too. */
	ci.unwind = runs, ci.unwind_size = (uint32_t)two_run_blob(runs, sizeof runs, 0x80);
	ci.size = 0x80;
	ck_assert_int_eq(swu_validate_body_rule(runs, ci.unwind_size, &br, saved), SW_OK);
	ck_assert_uint_lt(br.lo2, br.hi2);
	expect_copied_out(map, &ci);
	/* No body rule at all: no shape; the walk decodes the blob. */
	{
		sw_swu_builder *b;
		size_t len = 0;

		ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
		/* Body ops (arguments pushed for a call) leave a blob without one. */
		ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RBP), SW_OK);
		ck_assert_int_eq(sw_swu_end_prolog(b, 1), SW_OK);
		ck_assert_int_eq(sw_swu_push_args(b, 4, 16), SW_OK);
		ck_assert_int_eq(sw_swu_pop_args(b, 8, 16), SW_OK);
		ck_assert_int_eq(sw_swu_finish(b, 0x10, none, sizeof none, &len), SW_OK);
		sw_swu_builder_destroy(b);
		ck_assert_int_eq(swu_validate_body_rule(none, len, &br, saved), SW_OK);
		ck_assert_uint_ge(br.lo, br.hi);
		ci.unwind = none, ci.unwind_size = (uint32_t)len, ci.size = 0x10;
		expect_copied_out(map, &ci);
	}
	/* Many frame sizes: as many shapes, each method still gets its own. */
	for (uint32_t k = 1; k <= 300; k++) {
		uint8_t one[256];

		ci.unwind = one, ci.unwind_size = (uint32_t)frame_blob(one, sizeof one, 0x100, 8 * k);
		ci.size = 0x100, ci.start = at + 0x100000 + k * 0x100;
		expect_copied_out(map, &ci);
	}
	ck_assert_uint_eq(sw_codemap_count(map), 0);
	sw_codemap_destroy(map);
}
END_TEST

START_TEST(test_shapes)
{
	struct swi_shapes s;
	struct swu_body_rule br = { .arch = SW_ARCH_X64, .cfa_reg = 6, .nsaved = 2, .saved_mask = 0x41 };
	uint32_t saved[2] = { 0x1000 | 6, 0x2000 };
	uint32_t id, again;

	swi_shapes_init(&s);
	/* The offsets do not make a shape; everything else does. */
	for (int32_t k = 0; k < 5000; k++) {
		br.cfa_offset = 16 + 8 * k;
		br.lo = (uint32_t)k, br.hi = (uint32_t)k + 10;
		ck_assert_int_eq(swi_shapes_intern(&s, &br, saved, &id), SW_OK);
		ck_assert_uint_eq(id, (uint32_t)k);
	}
	for (int32_t k = 4999; k >= 0; k--) {
		const struct swi_shape *sh;

		br.cfa_offset = 16 + 8 * k;
		br.lo = 99, br.hi = 200, br.lo2 = 300, br.hi2 = 400;
		ck_assert_int_eq(swi_shapes_intern(&s, &br, saved, &again), SW_OK);
		ck_assert_uint_eq(again, (uint32_t)k);
		sh = swi_shapes_get(&s, again);
		ck_assert_int_eq(sh->rule.cfa_offset, br.cfa_offset);
		ck_assert_uint_eq(sh->rule.lo | sh->rule.hi | sh->rule.lo2 | sh->rule.hi2, 0);
		ck_assert_int_eq(memcmp(sh->saved, saved, sizeof saved), 0);
	}
	/* saved[] is part of the shape. */
	saved[1] = 0x3000;
	ck_assert_int_eq(swi_shapes_intern(&s, &br, saved, &id), SW_OK);
	ck_assert_uint_eq(id, 5000);
	/* A full store says so and keeps what it has. */
	{
		uint32_t n = s.n;

		s.n = SWI_SHAPES_MAX;
		br.cfa_offset = -8;
		ck_assert_int_eq(swi_shapes_intern(&s, &br, saved, &id), SW_E_LIMIT);
		s.n = n;
	}
	ck_assert_uint_gt(s.bytes, 5000 * sizeof(struct swi_shape));
	swi_shapes_destroy(&s);
}
END_TEST

/* The cache of validated blobs gives what the validator gives, and never passes a bad blob. */
static void expect_same_validation(const uint8_t *b, uint32_t size)
{
	struct swu_body_rule want, got;
	uint32_t want_saved[SWU_BODY_MAX_SAVED], got_saved[SWU_BODY_MAX_SAVED];
	sw_status st = swu_validate_body_rule(b, size, &want, want_saved);

	/* Twice: the first may fill the cache, the second may hit it. */
	for (int k = 0; k < 2; k++) {
		ck_assert_int_eq(swi_validate_cached(b, size, &got, got_saved), st);
		if (st != SW_OK)
			continue;
		ck_assert_int_eq(memcmp(&got, &want, sizeof got), 0);
		ck_assert_int_eq(memcmp(got_saved, want_saved, sizeof(got_saved[0]) * want.nsaved), 0);
	}
}

START_TEST(test_validated_cache)
{
	uint8_t good[256], bad[256];
	size_t len;

	/* Blobs of many sizes and shapes, some sharing the cache's slots. */
	for (uint32_t frame = 0; frame <= 64; frame += 8)
		for (uint32_t size = 0x40; size <= 0x60; size += 4) {
			len = frame_blob(good, sizeof good, size, frame);
			expect_same_validation(good, (uint32_t)len);
		}
	/* A blob one byte off a cached one, of the same size, is validated again. */
	len = frame_blob(good, sizeof good, 0x80, 16);
	expect_same_validation(good, (uint32_t)len);
	for (size_t i = 0; i < len; i++)
		for (unsigned bit = 0; bit < 8; bit++) {
			memcpy(bad, good, len);
			bad[i] ^= (uint8_t)(1u << bit);
			expect_same_validation(bad, (uint32_t)len);
			expect_same_validation(good, (uint32_t)len);
		}
	/* Cut short: a prefix of a cached blob is not the blob. */
	for (size_t cut = 0; cut < len; cut++)
		expect_same_validation(good, (uint32_t)cut);
	/* Larger than the cache keeps, and many saved registers: validated each time. */
	{
		sw_swu_builder *b;
		/* arm64 saves many: fp and lr, x19-x28, d8-d15, in pairs. */
		static const unsigned pairs[][2] = {
			{ SW_ARM64_FP, SW_ARM64_LR }, { SW_ARM64_X19, SW_ARM64_X20 },
			{ SW_ARM64_X21, SW_ARM64_X22 }, { SW_ARM64_X23, SW_ARM64_X24 },
			{ SW_ARM64_X25, SW_ARM64_X26 }, { SW_ARM64_X27, SW_ARM64_X28 },
			{ SW_ARM64_D8, SW_ARM64_D9 }, { SW_ARM64_D10, SW_ARM64_D11 },
			{ SW_ARM64_D12, SW_ARM64_D13 }, { SW_ARM64_D14, SW_ARM64_D15 },
		};
		struct swu_body_rule br;
		uint32_t saved[SWU_BODY_MAX_SAVED], at = 0;

		ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_ARM64), SW_OK);
		for (size_t k = 0; k < sizeof pairs / sizeof pairs[0]; k++)
			ck_assert_msg(sw_swu_push_reg_pair(b, at += 4, pairs[k][0], pairs[k][1], 16) == SW_OK,
			              "pair %zu", k);
		ck_assert_int_eq(sw_swu_end_prolog(b, at), SW_OK);
		/* GC slots make the blob larger than the cache keeps. */
		for (int32_t slot = 0; slot < 24; slot++)
			ck_assert_int_eq(sw_swu_gc_stack_slot(b, -8 * (slot + 21), 0, 0x100, 0x300), SW_OK);
		ck_assert_int_eq(sw_swu_finish(b, 0x400, good, sizeof good, &len), SW_OK);
		sw_swu_builder_destroy(b);
		ck_assert_uint_gt(len, SWI_VALIDATED_BLOB);
		ck_assert_int_eq(swu_validate_body_rule(good, len, &br, saved), SW_OK);
		ck_assert_uint_gt(br.nsaved, SWI_VALIDATED_SAVED);
		expect_same_validation(good, (uint32_t)len);
		expect_same_validation(good, (uint32_t)len - 1);
	}
}
END_TEST

static Suite *codemap_suite(void)
{
	Suite *s = suite_create("codemap");
	TCase *tc = tcase_create("basic");
	TCase *big = tcase_create("big");
	TCase *race = tcase_create("race");

	tcase_add_test(tc, test_add_find_remove);
	tcase_add_test(tc, test_funclet_parent);
	tcase_add_test(tc, test_neighbours_in_one_page);
	tcase_add_test(tc, test_overlap);
	tcase_add_test(tc, test_bad_args);
	tcase_add_test(tc, test_hostile_ips);
	tcase_add_test(tc, test_many_pages);
	tcase_add_test(tc, test_remove_in_place);
	tcase_add_test(tc, test_overlap_with_dead_items);
	tcase_add_test(tc, test_append_in_place);
	tcase_add_test(tc, test_entry_reuse);
	tcase_add_test(tc, test_slab);
	tcase_add_test(tc, test_compact_entries);
	tcase_add_test(tc, test_shapes);
	tcase_add_test(tc, test_validated_cache);
	tcase_add_test(tc, test_slab_huge_blocks);
	tcase_add_test(tc, test_window);
	suite_add_tcase(s, tc);

	/* Generous limits: sanitizer and valgrind runs are many times slower;
	 * nothing here measures time. */
	tcase_set_timeout(big, 300);
	tcase_add_test(big, test_million);
	tcase_add_loop_test(big, test_random_model, 0, 2);
	suite_add_tcase(s, big);

	tcase_set_timeout(race, 300);
	tcase_add_test(race, test_concurrent);
	tcase_add_test(race, test_signal_reader);
	suite_add_tcase(s, race);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(codemap_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
