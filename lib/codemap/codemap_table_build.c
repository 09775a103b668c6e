/*
 * codemap_table_build.c - making a code table (codemap_table.h) from a
 * list of functions: what a module and an SWU image register.
 *
 * The steps: the distinct blobs, end to end (the owner's own bytes when
 * they already are, else a copy); each function's start and blob; each
 * blob's body rule, split into the offsets it covers and a shape kept
 * once.  Whatever does not fit a table (functions not sorted or
 * overlapping, a blob whose code size is not its function's, more than
 * 4 GiB of code) leaves the table empty, and the owner registers its
 * functions one by one instead.
 */
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "body_shape.h"
#include "codemap_table.h"

/* A distinct blob: where the owner has it, its size, its place in the table. */
struct blob_ref {
	uint32_t offset, size, id;
};

static int blob_cmp(const void *pa, const void *pb)
{
	const struct blob_ref *a = pa, *b = pb;

	if (a->offset != b->offset)
		return a->offset < b->offset ? -1 : 1;
	return (a->size > b->size) - (a->size < b->size);
}

/* The SW_CODE_* flags of a function, as its table entry's bits. */
static uint32_t fn_bits(uint32_t flags)
{
	return ((flags & SW_CODE_ANALYZED) ? SWI_TABLE_FN_ANALYZED : 0) |
	       ((flags & SW_CODE_SIGNAL_TRAMPOLINE) ? SWI_TABLE_FN_TRAMPOLINE : 0) |
	       ((flags & SW_CODE_OUTERMOST) ? SWI_TABLE_FN_OUTERMOST : 0) |
	       ((flags & SW_CODE_PERSONALITY) ? SWI_TABLE_FN_PERSONALITY : 0);
}

/* ---- body rules: offsets per blob, shapes once ---- */

static int same_shape(const struct swi_code_table_store *s, uint32_t id,
                      const struct swu_body_rule *br, const uint32_t *saved)
{
	return swi_body_shape_same(&s->shape[id], s->saved + s->saved_at[id], br, saved);
}

/* Keep `br` (its offsets 0) with its saved[] as a new shape. */
static sw_status add_shape(struct swi_code_table_store *s, const struct swu_body_rule *br,
                           const uint32_t *saved)
{
	uint32_t id = s->table.nshape;
	uint32_t *grown = realloc(s->saved, sizeof(*grown) * (s->nsaved + br->nsaved + 1));

	if (!grown)
		return SW_E_NOMEM;
	s->saved = grown;
	if (br->nsaved)
		memcpy(s->saved + s->nsaved, saved, sizeof(saved[0]) * br->nsaved);
	s->shape[id] = *br;
	s->saved_at[id] = (uint32_t)s->nsaved;
	s->nsaved += br->nsaved;
	s->table.nshape = id + 1;
	return SW_OK;
}

/* The body rule of each distinct blob, as the code map decodes one for each method. */
static sw_status make_body_rules(struct swi_code_table_store *s, const uint8_t *bytes,
                                 uint32_t nblob)
{
	uint32_t saved[SWU_BODY_MAX_SAVED];
	size_t cap = 16;
	uint32_t *slot;
	sw_status st = SW_OK;

	while (cap < 2 * (size_t)nblob)
		cap *= 2;
	s->runs = malloc(sizeof(*s->runs) * nblob);
	s->shape = malloc(sizeof(*s->shape) * nblob);
	s->saved_at = malloc(sizeof(*s->saved_at) * nblob);
	slot = malloc(sizeof(*slot) * cap);
	if (!s->runs || !s->shape || !s->saved_at || !slot) {
		free(slot);
		return SW_E_NOMEM;
	}
	memset(slot, 0xff, sizeof(*slot) * cap);
	for (uint32_t i = 0; i < nblob && st == SW_OK; i++) {
		const uint32_t *at = s->table.blob_at;
		struct swu_body_rule br;
		size_t k;

		if (swu_validate_body_rule(bytes + at[i], at[i + 1] - at[i], &br, saved) != SW_OK ||
		    br.lo >= br.hi)
			memset(&br, 0, sizeof br);
		s->runs[i] = (struct swi_body_runs){ br.lo, br.hi, br.lo2, br.hi2, 0 };
		br.lo = br.hi = br.lo2 = br.hi2 = 0;
		for (k = swi_body_shape_hash(&br, saved) & (cap - 1); slot[k] != UINT32_MAX; k = (k + 1) & (cap - 1))
			if (same_shape(s, slot[k], &br, saved))
				break;
		if (slot[k] == UINT32_MAX) {
			slot[k] = s->table.nshape;
			st = add_shape(s, &br, saved);
		}
		s->runs[i].shape = slot[k];
	}
	free(slot);
	return st;
}

/* ---- the blobs ---- */

/*
 * The distinct blobs of `in`, sorted by where the owner has them: refs[]
 * (n of them, ids set) and blob_at[] (nblob + 1).  0 with *nblob = 0 when
 * they overlap.
 */
static sw_status distinct_blobs(struct swi_code_table_store *s, const struct swi_code_table_input *in,
                                size_t n, struct blob_ref *refs, uint32_t *nblob)
{
	uint32_t k = 0;

	for (size_t i = 0; i < n; i++)
		refs[i] = (struct blob_ref){ in[i].blob_offset, in[i].blob_size, 0 };
	qsort(refs, n, sizeof(*refs), blob_cmp);
	for (size_t i = 0; i < n; i++)
		if (i == 0 || blob_cmp(&refs[i], &refs[i - 1]) != 0)
			refs[k++] = refs[i];
	*nblob = 0;
	for (uint32_t i = 0; i < k; i++) {
		/* Two blobs over the same bytes: not a set of distinct blobs. */
		if (refs[i].size == 0 || (i > 0 && refs[i].offset < refs[i - 1].offset + refs[i - 1].size))
			return SW_OK;
		refs[i].id = i;
	}
	s->blob_at = malloc(sizeof(*s->blob_at) * (k + 1));
	if (!s->blob_at)
		return SW_E_NOMEM;
	*nblob = k;
	return SW_OK;
}

/*
 * Lay the distinct blobs end to end: in place when the owner's bytes
 * already are (and `copy` is not asked for), else in a copy.
 */
static sw_status place_blobs(struct swi_code_table_store *s, const struct blob_ref *refs,
                             uint32_t nblob, const uint8_t *bytes, int copy)
{
	int in_place = !copy && refs[0].offset == 0;
	uint32_t at = 0;

	for (uint32_t i = 0; in_place && i + 1 < nblob; i++)
		in_place = refs[i].offset + refs[i].size == refs[i + 1].offset;
	if (in_place) {
		for (uint32_t i = 0; i < nblob; i++)
			s->blob_at[i] = refs[i].offset;
		s->blob_at[nblob] = refs[nblob - 1].offset + refs[nblob - 1].size;
		s->table.bytes = bytes;
		return SW_OK;
	}
	for (uint32_t i = 0; i < nblob; i++) {
		if (refs[i].size > UINT32_MAX - at)
			return SW_E_LIMIT;
		at += refs[i].size;
	}
	if (!(s->bytes = malloc(at)))
		return SW_E_NOMEM;
	at = 0;
	for (uint32_t i = 0; i < nblob; i++) {
		s->blob_at[i] = at;
		memcpy(s->bytes + at, bytes + refs[i].offset, refs[i].size);
		at += refs[i].size;
	}
	s->blob_at[nblob] = at;
	s->table.bytes = s->bytes;
	return SW_OK;
}

/* ---- the table ---- */

/*
 * The block index: blocks of 2^shift bytes, the smallest of at least 256
 * bytes that give at most one block per four functions (a search then
 * looks at a handful), so it costs at most a byte a function.
 */
static sw_status make_blocks(struct swi_code_table_store *s)
{
	struct swi_code_table *t = &s->table;
	uint64_t span = t->hi - t->lo;
	uint32_t shift = 8, i = 0;

	if (t->nfn < 16)
		return SW_OK;
	while (((span - 1) >> shift) + 2 > t->nfn / 4)
		shift++;
	t->nblock = (uint32_t)((span - 1) >> shift) + 2;
	if (!(s->block = malloc(sizeof(*s->block) * t->nblock)))
		return SW_E_NOMEM;
	for (uint32_t k = 0; k < t->nblock; k++) {
		uint64_t at = t->lo + ((uint64_t)k << shift);

		while (i < t->nfn && t->base + t->fn[i].start + swi_code_table_size(t, i) <= at)
			i++;
		s->block[k] = i < t->nfn ? i : t->nfn - 1;
	}
	t->block = s->block;
	t->block_shift = shift;
	return SW_OK;
}

sw_status swi_code_table_build(struct swi_code_table_store *s, const struct swi_code_table_input *in,
                               size_t n, const uint8_t *bytes, int copy, const void *method_base,
                               size_t method_stride, uint32_t flags)
{
	struct swi_code_table *t = &s->table;
	struct blob_ref *refs = NULL;
	uint32_t nblob = 0;
	uint64_t lo, hi;
	sw_status st;

	memset(s, 0, sizeof *s);
	if (n == 0 || n > UINT32_MAX)
		return SW_OK;
	lo = in[0].start;
	hi = in[n - 1].start + in[n - 1].size;
	if (hi <= lo || hi - lo > UINT32_MAX)
		return SW_OK;
	for (size_t i = 1; i < n; i++)
		if (in[i].start < in[i - 1].start + in[i - 1].size)
			return SW_OK;   /* not sorted, or overlapping */
	refs = malloc(sizeof(*refs) * n);
	s->fn = malloc(sizeof(*s->fn) * n);
	if (!refs || !s->fn) {
		st = SW_E_NOMEM;
		goto out;
	}
	if ((st = distinct_blobs(s, in, n, refs, &nblob)) != SW_OK || nblob == 0 ||
	    nblob > SWI_TABLE_BLOB_MASK || (st = place_blobs(s, refs, nblob, bytes, copy)) != SW_OK)
		goto out;
	t->blob_at = s->blob_at;
	t->nblob = nblob;
	for (size_t i = 0; i < n; i++) {
		struct blob_ref key = { in[i].blob_offset, in[i].blob_size, 0 };
		const struct blob_ref *found = bsearch(&key, refs, nblob, sizeof(*refs), blob_cmp);

		s->fn[i] = (struct swi_code_table_fn){ (uint32_t)(in[i].start - lo),
		                                        found->id | fn_bits(in[i].flags) };
	}
	if ((st = make_body_rules(s, t->bytes, nblob)) != SW_OK)
		goto out;
	t->base = t->lo = lo;
	t->hi = hi;
	t->nfn = (uint32_t)n;
	t->fn = s->fn;
	t->runs = s->runs;
	t->shape = s->shape;
	t->saved_at = s->saved_at;
	t->saved = s->saved;
	t->method_base = method_base;
	t->method_stride = method_stride;
	t->flags = flags;
	/* A function's size is its blob's code size; the check does the rest. */
	for (size_t i = 0; i < n && t->nfn; i++)
		if (swi_code_table_size(t, (uint32_t)i) != in[i].size)
			t->nfn = 0;
	if (t->nfn && (st = make_blocks(s)) != SW_OK)
		goto out;
	if (t->nfn && swi_code_table_check(t) != SW_OK)
		t->nfn = 0;
out:
	free(refs);
	/* Nothing kept of a table that does not fit either. */
	if (st != SW_OK || !t->nfn)
		swi_code_table_store_free(s);
	return st;
}

size_t swi_code_table_store_bytes(const struct swi_code_table_store *s, size_t *rule_bytes,
                                  size_t *copied)
{
	const struct swi_code_table *t = &s->table;

	*rule_bytes = t->nfn ? (size_t)t->nblob * sizeof(t->runs[0]) +
	                       (size_t)t->nshape * (sizeof(t->shape[0]) + sizeof(t->saved_at[0])) +
	                       s->nsaved * sizeof(t->saved[0]) : 0;
	*copied = s->bytes && t->nfn ? t->blob_at[t->nblob] : 0;
	if (!t->nfn)
		return 0;
	return sizeof(*t) + (size_t)t->nfn * sizeof(t->fn[0]) + ((size_t)t->nblob + 1) * sizeof(t->blob_at[0]) +
	       (t->block ? (size_t)t->nblock * sizeof(t->block[0]) : 0);
}

void swi_code_table_store_free(struct swi_code_table_store *s)
{
	free(s->fn);
	free(s->block);
	free(s->blob_at);
	free(s->bytes);
	free(s->runs);
	free(s->shape);
	free(s->saved_at);
	free(s->saved);
	memset(s, 0, sizeof *s);
}
