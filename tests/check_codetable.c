/*
 * check_codetable.c - code tables (lib/codemap/codemap_table.h): many functions
 * registered as one sorted array.  What a table must be to be accepted,
 * what a lookup finds in it, and readers (threads and a signal handler)
 * looking up while writers add and remove tables.
 */
#include <check.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <time.h>
#include <stackwalk.h>
#include "util.h"
#include "codemap_lookup.h"
#include "swu_format.h"
#include "codemap_table.h"

/*
 * A synthetic module: NFN functions of three sizes (48, 64, 80 bytes,
 * one blob each), 16 bytes of padding after every fourth one.
 */
#define NFN 600
#define NBLOB 3

struct fake_module {
	uint8_t bytes[NBLOB * 64];
	uint32_t blob_at[NBLOB + 1];
	struct swu_body_rule body[NBLOB];       /* each blob's, as decoded */
	struct swi_body_runs runs[NBLOB];
	struct swu_body_rule shape[NBLOB];      /* one shape a blob: offsets 0 */
	uint32_t saved_at[NBLOB];
	uint32_t saved[NBLOB * SWU_BODY_MAX_SAVED];
	struct swi_code_table_fn fn[NFN];
	uint64_t start[NFN], size[NFN];
	char handles[NFN];
	struct swi_code_table table;
};

static uint32_t fn_size(unsigned i)
{
	return 48 + 16 * (i % NBLOB);
}

static void make_module(struct fake_module *m, uint64_t base)
{
	uint32_t at = 0, nsaved = 0;
	uint64_t pc = base;

	memset(m, 0, sizeof *m);
	for (unsigned b = 0; b < NBLOB; b++) {
		sw_swu_builder *bld;
		size_t len;

		m->blob_at[b] = at;
		ck_assert_int_eq(sw_swu_builder_create(&bld, SW_ARCH_X64), SW_OK);
		ck_assert_int_eq(sw_swu_push_reg(bld, 1, SW_X64_RBP), SW_OK);
		ck_assert_int_eq(sw_swu_set_frame(bld, 4, SW_X64_RBP, 0), SW_OK);
		ck_assert_int_eq(sw_swu_end_prolog(bld, 4), SW_OK);
		ck_assert_int_eq(sw_swu_finish(bld, fn_size(b), m->bytes + at, sizeof m->bytes - at, &len),
		                 SW_OK);
		sw_swu_builder_destroy(bld);
		ck_assert_int_eq(swu_validate_body_rule(m->bytes + at, len, &m->body[b], m->saved + nsaved),
		                 SW_OK);
		m->saved_at[b] = nsaved;
		nsaved += m->body[b].nsaved;
		m->runs[b] = (struct swi_body_runs){ m->body[b].lo, m->body[b].hi, m->body[b].lo2,
		                                     m->body[b].hi2, b };
		m->shape[b] = m->body[b];
		m->shape[b].lo = m->shape[b].hi = m->shape[b].lo2 = m->shape[b].hi2 = 0;
		at += (uint32_t)len;
	}
	m->blob_at[NBLOB] = at;
	for (unsigned i = 0; i < NFN; i++) {
		m->start[i] = pc;
		m->size[i] = fn_size(i);
		m->fn[i] = (struct swi_code_table_fn){ (uint32_t)(pc - base), i % NBLOB };
		pc += fn_size(i) + (i % 4 == 3 ? 16 : 0);
	}
	m->table = (struct swi_code_table){
		.base = base, .lo = base, .hi = m->start[NFN - 1] + m->size[NFN - 1],
		.nfn = NFN, .nblob = NBLOB, .fn = m->fn, .blob_at = m->blob_at, .bytes = m->bytes,
		.runs = m->runs, .shape = m->shape, .nshape = NBLOB, .saved_at = m->saved_at,
		.saved = m->saved,
		.method_base = m->handles, .method_stride = 1, .flags = SW_CODE_NATIVE
	};
}

/* Whether ci is function i of m, as a lookup must give it. */
static int is_function(const struct fake_module *m, const sw_code_info *ci, unsigned i)
{
	return ci->start == m->start[i] && ci->size == m->size[i] &&
	       ci->method == (const void *)&m->handles[i] && ci->flags == SW_CODE_NATIVE &&
	       ci->unwind == m->bytes + m->blob_at[i % NBLOB] &&
	       ci->unwind_size == m->blob_at[i % NBLOB + 1] - m->blob_at[i % NBLOB] && !ci->parent;
}

static struct fake_module mod_a, mod_b;

START_TEST(table_lookups)
{
	const struct swi_code_table *t = &mod_a.table;
	struct swi_code_copy c;

	make_module(&mod_a, 0x10000000);
	ck_assert_int_eq(swi_code_table_check(t), SW_OK);
	for (unsigned i = 0; i < NFN; i++) {
		ck_assert_int_eq(swi_code_table_find(t, mod_a.start[i]), (long)i);
		ck_assert_int_eq(swi_code_table_find(t, mod_a.start[i] + mod_a.size[i] - 1), (long)i);
		swi_code_table_info(t, i, &c);
		ck_assert(is_function(&mod_a, &c.info, i));
		/* The body rule: the blob's own, offsets and shape put together. */
		ck_assert_ptr_eq(c.body, &c.rule);
		ck_assert_int_eq(memcmp(c.body, &mod_a.body[i % NBLOB], sizeof c.rule), 0);
		ck_assert_ptr_eq(c.saved, mod_a.saved + mod_a.saved_at[i % NBLOB]);
		ck_assert_ptr_eq(c.table, t);
		ck_assert_uint_eq(c.index, i);
		if (i % 4 == 3 && i + 1 < NFN) {
			ck_assert_int_eq(swi_code_table_find(t, mod_a.start[i] + mod_a.size[i]), -1);
			ck_assert_int_eq(swi_code_table_find(t, mod_a.start[i + 1] - 1), -1);
		}
	}
	ck_assert_int_eq(swi_code_table_find(t, t->lo - 1), -1);
	ck_assert_int_eq(swi_code_table_find(t, t->hi), -1);
	ck_assert_int_eq(swi_code_table_find(t, 0), -1);
	ck_assert_int_eq(swi_code_table_find(t, UINT64_MAX), -1);
	/* Flags ride in the blob word. */
	mod_a.fn[5].blob |= SWI_TABLE_FN_OUTERMOST | SWI_TABLE_FN_ANALYZED;
	swi_code_table_info(t, 5, &c);
	ck_assert_uint_eq(c.info.flags, SW_CODE_NATIVE | SW_CODE_OUTERMOST | SW_CODE_ANALYZED);
}
END_TEST

/* Every way a table can be wrong is refused; the good one again passes. */
START_TEST(table_checks)
{
	struct swi_code_table *t = &mod_a.table;
	uint8_t keep;

	make_module(&mod_a, 0x10000000);
	ck_assert_int_eq(swi_code_table_check(NULL), SW_E_INVAL);
	mod_a.fn[7].start = mod_a.fn[6].start + 8;           /* overlaps its neighbour */
	ck_assert_int_eq(swi_code_table_check(t), SW_E_INVAL);
	make_module(&mod_a, 0x10000000);
	mod_a.fn[7].start = mod_a.fn[8].start;               /* unsorted, same start */
	ck_assert_int_eq(swi_code_table_check(t), SW_E_INVAL);
	make_module(&mod_a, 0x10000000);
	mod_a.fn[9].blob = NBLOB;                         /* no such blob */
	ck_assert_int_eq(swi_code_table_check(t), SW_E_INVAL);
	make_module(&mod_a, 0x10000000);
	t->hi += 1;                                     /* hi is not the last function's end */
	ck_assert_int_eq(swi_code_table_check(t), SW_E_INVAL);
	make_module(&mod_a, 0x10000000);
	t->lo += 16;                                    /* lo is not the first function's start */
	ck_assert_int_eq(swi_code_table_check(t), SW_E_INVAL);
	make_module(&mod_a, 0x10000000);
	mod_a.blob_at[2] = mod_a.blob_at[1];            /* an empty blob */
	ck_assert_int_eq(swi_code_table_check(t), SW_E_INVAL);
	make_module(&mod_a, 0x10000000);
	keep = mod_a.bytes[mod_a.blob_at[1]];
	mod_a.bytes[mod_a.blob_at[1]] = 0;              /* not SWU */
	ck_assert_int_eq(swi_code_table_check(t), SW_E_BADMETA);
	mod_a.bytes[mod_a.blob_at[1]] = keep;
	ck_assert_int_eq(swi_code_table_check(t), SW_OK);
	t->hi = t->base + UINT64_C(0x100000000);        /* beyond 32-bit offsets */
	ck_assert_int_eq(swi_code_table_check(t), SW_E_LIMIT);
	make_module(&mod_a, 0x10000000);
	mod_a.runs[1].shape = NBLOB;                    /* no such shape */
	ck_assert_int_eq(swi_code_table_check(t), SW_E_INVAL);
	make_module(&mod_a, 0x10000000);
	t->flags |= SW_CODE_FUNCLET;
	ck_assert_int_eq(swi_code_table_check(t), SW_E_INVAL);
	make_module(&mod_a, 0x10000000);
	ck_assert_int_eq(swi_code_table_check(t), SW_OK);
}
END_TEST

/*
 * A batch of IPs in both modules (functions and the gaps between them),
 * around them and in the method between them gives what lone lookups give.
 */
static void expect_batch_in_tables(const sw_codemap *map)
{
	static uint64_t ips[4 * NFN + 4];
	static sw_code_info out[4 * NFN + 4];
	size_t n = 0, found, want = 0;

	for (unsigned i = 0; i < NFN; i++) {
		ips[n++] = mod_a.start[i] + 3;
		ips[n++] = mod_a.start[i] + mod_a.size[i];      /* a gap, or the next function */
		ips[n++] = mod_b.start[i];
		ips[n++] = mod_b.start[i] + mod_b.size[i] - 1;
	}
	ips[n++] = 0x18000010;
	ips[n++] = 0x18000040;
	ips[n++] = mod_a.start[0] - 1;
	ips[n++] = 0;
	ck_assert_int_eq(sw_codemap_find_batch(map, ips, n, out, &found), SW_OK);
	for (size_t i = 0; i < n; i++) {
		sw_code_info one;

		if (sw_codemap_find(map, ips[i], &one) != SW_OK) {
			ck_assert_uint_eq(out[i].size, 0);
			ck_assert_ptr_null(out[i].method);
			continue;
		}
		want++;
		ck_assert_ptr_eq(out[i].method, one.method);
		ck_assert_uint_eq(out[i].start, one.start);
		ck_assert_uint_eq(out[i].size, one.size);
		ck_assert_ptr_eq(out[i].unwind, one.unwind);
		ck_assert_uint_eq(out[i].unwind_size, one.unwind_size);
		ck_assert_uint_eq(out[i].flags, one.flags);
		ck_assert_ptr_eq(out[i].parent, one.parent);
	}
	ck_assert_uint_eq(found, want);
	ck_assert_uint_gt(want, 2 * NFN);
}

/* In a map: found like methods, apart from methods, added and removed whole. */
START_TEST(tables_in_map)
{
	sw_codemap *map;
	sw_code_info out, m;

	make_module(&mod_a, 0x10000000);
	make_module(&mod_b, 0x20000000);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(swi_codemap_add_table(map, &mod_b.table), SW_OK);
	ck_assert_int_eq(swi_codemap_add_table(map, &mod_a.table), SW_OK);
	ck_assert_int_eq(swi_codemap_add_table(map, &mod_a.table), SW_E_EXISTS);
	ck_assert_uint_eq(sw_codemap_count(map), 2 * NFN);
	for (unsigned i = 0; i < NFN; i += 7) {
		ck_assert_int_eq(sw_codemap_find(map, mod_a.start[i] + 3, &out), SW_OK);
		ck_assert(is_function(&mod_a, &out, i));
		ck_assert_int_eq(sw_codemap_find(map, mod_b.start[i] + mod_b.size[i] - 1, &out), SW_OK);
		ck_assert(is_function(&mod_b, &out, i));
	}
	/* A method between the two modules is fine; one in a module's gap is not. */
	m = (sw_code_info){ .method = &m, .start = 0x18000000, .size = 64,
	                    .unwind = mod_a.bytes, .unwind_size = mod_a.blob_at[1] };
	ck_assert_int_eq(sw_codemap_add(map, &m), SW_OK);
	ck_assert_int_eq(sw_codemap_find(map, 0x18000010, &out), SW_OK);
	ck_assert_ptr_eq(out.method, &m);
	expect_batch_in_tables(map);
	m.start = mod_a.start[3] + mod_a.size[3];
	ck_assert_int_eq(sw_codemap_add(map, &m), SW_E_EXISTS);
	ck_assert_int_eq(swi_codemap_remove_table(map, &mod_a.table), SW_OK);
	ck_assert_int_eq(swi_codemap_remove_table(map, &mod_a.table), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_codemap_find(map, mod_a.start[10], &out), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_codemap_add(map, &m), SW_OK);
	ck_assert_int_eq(swi_codemap_add_table(map, &mod_a.table), SW_E_EXISTS);
	ck_assert_int_eq(sw_codemap_remove(map, m.start), SW_OK);
	ck_assert_int_eq(swi_codemap_add_table(map, &mod_a.table), SW_OK);
	ck_assert_uint_eq(sw_codemap_count(map), 2 * NFN + 1);
	ck_assert_int_eq(swi_codemap_remove_table(map, &mod_a.table), SW_OK);
	ck_assert_int_eq(swi_codemap_remove_table(map, &mod_b.table), SW_OK);
	ck_assert_uint_eq(sw_codemap_count(map), 1);
	sw_codemap_synchronize(map);
	sw_codemap_destroy(map);
}
END_TEST

/*
 * The builder: the functions of mod_a given as a list, their blobs where
 * the module has them (end to end: kept in place) or spread out with
 * duplicates (copied, once each); lists that do not fit a table give none.
 */
START_TEST(table_build)
{
	struct swi_code_table_input in[NFN];
	struct swi_code_table_store st;
	static uint8_t spread[NBLOB * 200];
	uint32_t spread_at[NBLOB];
	size_t rules, copied;
	struct swi_code_copy c;

	make_module(&mod_a, 0x10000000);
	for (unsigned i = 0; i < NFN; i++)
		in[i] = (struct swi_code_table_input){ mod_a.start[i], mod_a.size[i],
		                                        mod_a.blob_at[i % NBLOB],
		                                        mod_a.blob_at[i % NBLOB + 1] - mod_a.blob_at[i % NBLOB],
		                                        i == 7 ? SW_CODE_OUTERMOST : 0 };
	ck_assert_int_eq(swi_code_table_build(&st, in, NFN, mod_a.bytes, 0, mod_a.handles, 1,
	                                      SW_CODE_NATIVE), SW_OK);
	ck_assert_uint_eq(st.table.nfn, NFN);
	ck_assert_uint_eq(st.table.nblob, NBLOB);
	ck_assert_ptr_eq(st.table.bytes, mod_a.bytes);          /* in place */
	ck_assert_ptr_nonnull(st.table.block);
	ck_assert_uint_le(st.table.nblock, NFN / 4);
	ck_assert_uint_eq(swi_code_table_store_bytes(&st, &rules, &copied),
	                  sizeof st.table + 8 * NFN + 4 * (NBLOB + 1) + 4 * st.table.nblock);
	/* The block index finds what the whole search finds, at every address and around. */
	{
		struct swi_code_table whole = st.table;

		whole.block = NULL;
		for (uint64_t ip = st.table.lo - 2; ip < st.table.hi + 2; ip++)
			ck_assert_int_eq(swi_code_table_find(&st.table, ip), swi_code_table_find(&whole, ip));
		ck_assert_int_eq(swi_code_table_check(&st.table), SW_OK);
		((uint32_t *)st.block)[1] += 1;                 /* a wrong block entry is refused */
		ck_assert_int_eq(swi_code_table_check(&st.table), SW_E_INVAL);
		((uint32_t *)st.block)[1] -= 1;
	}
	ck_assert_uint_eq(copied, 0);
	ck_assert_uint_gt(rules, 0);
	for (unsigned i = 0; i < NFN; i++) {
		swi_code_table_info(&st.table, i, &c);
		if (i == 7) {
			ck_assert_uint_eq(c.info.flags, SW_CODE_NATIVE | SW_CODE_OUTERMOST);
			c.info.flags = SW_CODE_NATIVE;
		}
		ck_assert(is_function(&mod_a, &c.info, i));
		ck_assert_int_eq(memcmp(c.body, &mod_a.body[i % NBLOB], sizeof c.rule), 0);
	}
	swi_code_table_store_free(&st);

	/* Blobs apart, each given again further on: copied once each. */
	memset(spread, 0, sizeof spread);
	for (unsigned b = 0; b < NBLOB; b++) {
		spread_at[b] = 200 * (NBLOB - 1 - b) + 7;
		memcpy(spread + spread_at[b], mod_a.bytes + mod_a.blob_at[b], mod_a.blob_at[b + 1] - mod_a.blob_at[b]);
	}
	for (unsigned i = 0; i < NFN; i++)
		in[i].blob_offset = spread_at[i % NBLOB];
	ck_assert_int_eq(swi_code_table_build(&st, in, NFN, spread, 0, mod_a.handles, 1,
	                                      SW_CODE_NATIVE), SW_OK);
	ck_assert_uint_eq(st.table.nfn, NFN);
	ck_assert_ptr_ne(st.table.bytes, spread);
	swi_code_table_store_bytes(&st, &rules, &copied);
	ck_assert_uint_eq(copied, mod_a.blob_at[NBLOB]);
	memset(spread, 0, sizeof spread);                       /* not kept */
	for (unsigned i = 0; i < NFN; i += 5) {
		swi_code_table_info(&st.table, i, &c);
		ck_assert_uint_eq(c.info.start, mod_a.start[i]);
		ck_assert_uint_eq(c.info.size, mod_a.size[i]);
		ck_assert_int_eq(memcmp(c.info.unwind, mod_a.bytes + mod_a.blob_at[i % NBLOB], c.info.unwind_size), 0);
	}
	swi_code_table_store_free(&st);

	/* What does not fit a table gives none, and keeps nothing. */
	for (unsigned i = 0; i < NFN; i++)
		in[i].blob_offset = mod_a.blob_at[i % NBLOB];
	in[10].size += 1;                                       /* not its blob's code size */
	ck_assert_int_eq(swi_code_table_build(&st, in, NFN, mod_a.bytes, 0, mod_a.handles, 1, 0), SW_OK);
	ck_assert_uint_eq(st.table.nfn, 0);
	ck_assert_ptr_null(st.fn);
	in[10].size -= 1;
	in[11].start = in[10].start;                            /* overlapping */
	ck_assert_int_eq(swi_code_table_build(&st, in, NFN, mod_a.bytes, 0, mod_a.handles, 1, 0), SW_OK);
	ck_assert_uint_eq(st.table.nfn, 0);
	in[11].start = mod_a.start[11];
	in[12].blob_offset += 1;                                /* inside another blob */
	ck_assert_int_eq(swi_code_table_build(&st, in, NFN, mod_a.bytes, 0, mod_a.handles, 1, 0), SW_OK);
	ck_assert_uint_eq(st.table.nfn, 0);
	in[12].blob_offset -= 1;
	ck_assert_int_eq(swi_code_table_build(&st, in, 0, mod_a.bytes, 0, mod_a.handles, 1, 0), SW_OK);
	ck_assert_uint_eq(st.table.nfn, 0);
	ck_assert_int_eq(swi_code_table_build(&st, in, NFN, mod_a.bytes, 0, mod_a.handles, 1, 0), SW_OK);
	ck_assert_uint_eq(st.table.nfn, NFN);
	swi_code_table_store_free(&st);
}
END_TEST

/* ---- readers while writers add and remove tables ---- */

static sw_codemap *race_map;
static atomic_int race_done, race_failures;
static atomic_long race_found;

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * UINT64_C(2685821657736338717);
}

/*
 * One lookup of a random address of either module: nothing, or exactly
 * the function there.  Module a stays registered throughout: its
 * functions are always found.  Signal-safe (no allocation, no lock).
 */
static int race_lookup(uint64_t *seed)
{
	const struct fake_module *m = (rnd(seed) & 1) ? &mod_a : &mod_b;
	unsigned i = (unsigned)(rnd(seed) % NFN);
	uint64_t ip = m->start[i] + rnd(seed) % (m->size[i] + 16);
	int in_fn = ip - m->start[i] < m->size[i];
	struct swi_code_copy scratch;
	const sw_code_info *ci;
	unsigned token;
	int ok;

	/* Past the function: padding, or the next function. */
	if (!in_fn && i + 1 < NFN && ip >= m->start[i + 1]) {
		i++;
		in_fn = 1;
	}
	token = sw_codemap_read_begin(race_map);
	ci = swi_codemap_lookup(race_map, ip, &scratch);
	if (ci)
		ok = in_fn && is_function(m, ci, i);
	else
		ok = !(in_fn && m == &mod_a);
	sw_codemap_read_end(race_map, token);
	return ok;
}

static void *race_reader(void *arg)
{
	uint64_t seed = (uintptr_t)arg * 7919 + 1;

	while (!atomic_load(&race_done)) {
		if (!race_lookup(&seed))
			atomic_fetch_add(&race_failures, 1);
		atomic_fetch_add_explicit(&race_found, 1, memory_order_relaxed);
	}
	return NULL;
}

static uint64_t sig_seed = 99;

static void race_signal(int signo)
{
	(void)signo;
	for (int i = 0; i < 32; i++)
		if (!race_lookup(&sig_seed))
			atomic_fetch_add(&race_failures, 1);
}

START_TEST(tables_concurrent)
{
	pthread_t readers[2];
	struct sigaction sa;
	uint64_t seed = 5;
	int present = 0;
	struct timespec t0, now;

	make_module(&mod_a, 0x10000000);
	make_module(&mod_b, 0x20000000);
	ck_assert_int_eq(sw_codemap_create(&race_map), SW_OK);
	ck_assert_int_eq(swi_codemap_add_table(race_map, &mod_a.table), SW_OK);
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = race_signal;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	atomic_store(&race_done, 0);
	atomic_store(&race_failures, 0);
	for (unsigned k = 0; k < 2; k++)
		ck_assert_int_eq(pthread_create(&readers[k], NULL, race_reader, (void *)(uintptr_t)(k + 1)), 0);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	/* Add and remove module b, and methods beside both, for a second. */
	for (unsigned n = 0;; n++) {
		sw_code_info m = { .method = &m, .start = 0x30000000 + (n % 64) * 256, .size = 64,
		                   .unwind = mod_a.bytes, .unwind_size = mod_a.blob_at[1] };

		if (present)
			ck_assert_int_eq(swi_codemap_remove_table(race_map, &mod_b.table), SW_OK);
		else
			ck_assert_int_eq(swi_codemap_add_table(race_map, &mod_b.table), SW_OK);
		present = !present;
		if (sw_codemap_add(race_map, &m) == SW_E_EXISTS)
			ck_assert_int_eq(sw_codemap_remove(race_map, m.start), SW_OK);
		if (rnd(&seed) % 8 == 0)
			raise(SIGUSR1);
		if (n % 256 == 0)
			sw_codemap_synchronize(race_map);
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec - t0.tv_sec >= 2 || (now.tv_sec - t0.tv_sec == 1 && now.tv_nsec >= t0.tv_nsec))
			break;
	}
	atomic_store(&race_done, 1);
	for (unsigned k = 0; k < 2; k++)
		pthread_join(readers[k], NULL);
	signal(SIGUSR1, SIG_DFL);
	ck_assert_int_eq(atomic_load(&race_failures), 0);
	ck_assert_int_gt(atomic_load(&race_found), 1000);
	if (present)
		ck_assert_int_eq(swi_codemap_remove_table(race_map, &mod_b.table), SW_OK);
	ck_assert_int_eq(swi_codemap_remove_table(race_map, &mod_a.table), SW_OK);
	sw_codemap_synchronize(race_map);
	sw_codemap_destroy(race_map);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("codetable");
	TCase *tc = tcase_create("table");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, table_lookups);
	tcase_add_test(tc, table_checks);
	tcase_add_test(tc, tables_in_map);
	tcase_add_test(tc, table_build);
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, tables_concurrent);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
