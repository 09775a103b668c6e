/*
 * codemap_table.c - searching and checking a code table (codemap_table.h).
 */
#include "util.h"
#include "codemap_table.h"

const struct swu_body_rule swi_no_body_rule;

uint32_t swi_code_table_size(const struct swi_code_table *t, uint32_t i)
{
	uint32_t b = t->fn[i].blob & SWI_TABLE_BLOB_MASK;

	return swi_blob_code_size(t->bytes + t->blob_at[b], t->bytes + t->blob_at[b + 1]);
}

long swi_code_table_find(const struct swi_code_table *t, uint64_t ip)
{
	const struct swi_code_table_fn *fn = t->fn;
	uint64_t rel;
	uint32_t lo = 0, n = t->nfn;

	if (ip < t->lo || ip >= t->hi)
		return -1;
	if (t->source)
		return t->source->find(t->source, ip);
	rel = ip - t->base;
	if (t->block) {
		uint64_t k = (ip - t->lo) >> t->block_shift;

		lo = t->block[k];
		n = t->block[k + 1] - lo + 1;
	}
	/* The last function starting at or before rel: n halves each step. */
	while (n > 1) {
		uint32_t half = n / 2;

		if (fn[lo + half].start <= rel)
			lo += half;
		n -= half;
	}
	/* Before the first function, or in the padding after this one. */
	if (rel - fn[lo].start >= swi_code_table_size(t, lo))
		return -1;
	return (long)lo;
}

/* Function i of a built table. */
static void built_info(const struct swi_code_table *t, uint32_t i, struct swi_code_copy *copy)
{
	sw_code_info *out = &copy->info;
	const struct swi_code_table_fn *f = &t->fn[i];
	uint32_t b = f->blob & SWI_TABLE_BLOB_MASK;
	uint32_t flags = t->flags;

	if (f->blob & SWI_TABLE_FN_ANALYZED)
		flags |= SW_CODE_ANALYZED;
	if (f->blob & SWI_TABLE_FN_TRAMPOLINE)
		flags |= SW_CODE_SIGNAL_TRAMPOLINE;
	if (f->blob & SWI_TABLE_FN_OUTERMOST)
		flags |= SW_CODE_OUTERMOST;
	if (f->blob & SWI_TABLE_FN_PERSONALITY)
		flags |= SW_CODE_PERSONALITY;
	out->method = (void *)((uintptr_t)t->method_base + (uintptr_t)i * t->method_stride);
	out->start = t->base + f->start;
	out->size = swi_code_table_size(t, i);
	out->unwind = t->bytes + t->blob_at[b];
	out->unwind_size = t->blob_at[b + 1] - t->blob_at[b];
	out->flags = flags;
	out->parent = NULL;
	{
		const struct swi_body_runs *r = &t->runs[b];

		copy->rule = t->shape[r->shape];
		copy->rule.lo = r->lo;
		copy->rule.hi = r->hi;
		copy->rule.lo2 = r->lo2;
		copy->rule.hi2 = r->hi2;
		copy->body = &copy->rule;
		copy->saved = t->saved + t->saved_at[r->shape];
	}
}

void swi_code_table_info(const struct swi_code_table *t, uint32_t i, struct swi_code_copy *copy)
{
	if (t->source)
		t->source->info(t->source, i, copy);
	else
		built_info(t, i, copy);
	copy->table = t;
	copy->index = i;
}

/* The block index, when there is one, is exactly what its comment says. */
static sw_status check_blocks(const struct swi_code_table *t)
{
	uint32_t i = 0;

	if (!t->block)
		return SW_OK;
	if (t->block_shift > 31 || t->nblock != ((t->hi - t->lo - 1) >> t->block_shift) + 2)
		return SW_E_INVAL;
	for (uint32_t k = 0; k < t->nblock; k++) {
		uint64_t at = t->lo + ((uint64_t)k << t->block_shift);

		while (i < t->nfn && t->base + t->fn[i].start + swi_code_table_size(t, i) <= at)
			i++;
		if (t->block[k] != (i < t->nfn ? i : t->nfn - 1))
			return SW_E_INVAL;
	}
	return SW_OK;
}

/* A table with a source: its range and flags, the rest is the source's. */
static sw_status check_sourced(const struct swi_code_table *t)
{
	if (!t->source->find || !t->source->info || t->lo >= t->hi || t->lo < t->base ||
	    (t->flags & ~(uint32_t)SW_CODE_NATIVE))
		return SW_E_INVAL;
	return t->hi - t->base > UINT32_MAX ? SW_E_LIMIT : SW_OK;
}

sw_status swi_code_table_check(const struct swi_code_table *t)
{
	uint64_t end = 0;

	if (t && t->source)
		return check_sourced(t);

	if (!t || !t->fn || !t->blob_at || !t->bytes || !t->runs || !t->shape || !t->saved_at ||
	    !t->saved || t->nfn == 0 || t->nblob == 0 || t->nshape == 0 ||
	    t->nblob > SWI_TABLE_BLOB_MASK || t->lo >= t->hi || t->lo < t->base ||
	    (t->flags & ~(uint32_t)SW_CODE_NATIVE))
		return SW_E_INVAL;
	if (t->hi - t->base > UINT32_MAX)
		return SW_E_LIMIT;
	for (uint32_t i = 0; i < t->nblob; i++) {
		if (t->blob_at[i + 1] <= t->blob_at[i])
			return SW_E_INVAL;
		if (sw_swu_validate(t->bytes + t->blob_at[i], t->blob_at[i + 1] - t->blob_at[i]) != SW_OK)
			return SW_E_BADMETA;
		if (t->runs[i].shape >= t->nshape)
			return SW_E_INVAL;
	}
	for (uint32_t i = 0; i < t->nfn; i++) {
		const struct swi_code_table_fn *f = &t->fn[i];
		uint64_t start = t->base + f->start;

		/* Sorted, apart, and covering exactly lo..hi. */
		if ((f->blob & SWI_TABLE_BLOB_MASK) >= t->nblob || start < end ||
		    (i == 0 && start != t->lo))
			return SW_E_INVAL;
		end = start + swi_code_table_size(t, i);
	}
	if (end != t->hi)
		return SW_E_INVAL;
	return check_blocks(t);
}
