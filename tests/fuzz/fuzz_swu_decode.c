/*
 * fuzz_swu_decode.c - the SWU decoder, validator and dumper over hostile
 * blobs.
 *
 * The input is a blob, either as it is (first byte even) or derived: a
 * method of a synthetic stack (arch and seed from the input), or with
 * first byte EH_MODE a method with exception handling clauses the input
 * picks from a table of nested ones, whose blob the rest of the input
 * patches and truncates, so that random runs reach deep into well-formed
 * blobs and clause tables too.  Every entry point runs on it: header,
 * validation, the dump, decoding at every offset (both views), the GC
 * enumeration and the EH clause queries.  Beyond "never crash", what
 * swu(5) promises is checked, and a broken promise aborts:
 *   - a blob that validates decodes (and enumerates) at every offset up to
 *     its code size, and the rules it gives name real registers;
 *   - a blob that validates lists its clauses, each with a known kind and
 *     non-empty regions, and the clauses said to cover an offset, or to
 *     hold it in a funclet, do;
 *   - the dump accepts exactly the blobs the validator accepts.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stackwalk.h>
#include "fuzz.h"
#include "../eh_clauses.h"

#define MAX_BLOB      65536
#define MAX_OFFSETS   2048    /* offsets decoded per blob: all of them, or a spread */
#define EH_MODE       0x45    /* first byte: a blob built with EH clauses, then patched */

static FILE *null_stream(void)
{
	static FILE *f;

	if (!f)
		f = fopen("/dev/null", "w");
	return f;
}

struct gc_count {
	unsigned n;
	int bad;
};

static int count_slot(void *data, const sw_swu_gc_slot *slot)
{
	struct gc_count *c = data;

	/* SW_GC_PARENT_FRAME: a funclet's stack slot in its parent's frame, never a register. */
	if (slot->in_register > 1 || (slot->in_register && slot->reg >= SW_MAX_REGS) ||
	    (slot->flags & ~(uint32_t)(SW_GC_INTERIOR | SW_GC_PINNED | SW_GC_PARENT_FRAME)) ||
	    (slot->in_register && (slot->flags & SW_GC_PARENT_FRAME)))
		c->bad = 1;
	return ++c->n > SW_SWU_MAX_GC_LOCATIONS;
}

/* What a rule from a successful decode must satisfy, whatever the blob said. */
static void check_rule(const sw_swu_rule *r, const sw_swu_header *h)
{
	if (r->arch != h->arch || r->region > SW_SWU_EPILOG || r->cfa_reg >= SW_MAX_REGS ||
	    r->ra_in_reg > 1 || (r->ra_in_reg && r->ra_reg >= SW_MAX_REGS) || r->ra_signed > 1 ||
	    (SW_MAX_REGS < 64 && (r->saved_mask >> SW_MAX_REGS)))
		abort();
	for (unsigned reg = 0; reg < SW_MAX_REGS; reg++)
		if (!(r->saved_mask & (1ULL << reg)) && r->saved_offset[reg] != 0)
			abort();
}

static void decode_at(const uint8_t *blob, size_t size, const sw_swu_header *h,
                      uint32_t off, int valid)
{
	sw_swu_rule r;
	struct gc_count c = { 0, 0 };
	sw_status st;

	st = sw_swu_decode(blob, size, off, &r);
	if (st == SW_OK)
		check_rule(&r, h);
	else if (valid)
		abort();        /* "a blob that validates decodes successfully at every offset" */
	st = sw_swu_decode_return_address(blob, size, off, &r);
	if (st == SW_OK)
		check_rule(&r, h);
	else if (valid)
		abort();
	st = sw_swu_gc_live(blob, size, off, count_slot, &c);
	if (valid && (st != SW_OK || c.bad))
		abort();
}

/* What every clause the queries report must be, whatever the blob said. */
static void check_clause(const sw_eh_clause *c)
{
	if ((c->kind != SW_EH_CATCH && c->kind != SW_EH_FILTER && c->kind != SW_EH_FINALLY &&
	     c->kind != SW_EH_FAULT) || (c->flags & ~(uint32_t)SW_EH_DUPLICATED) ||
	    c->try_start >= c->try_end || c->handler_start >= c->handler_end ||
	    c->try_end > SW_SWU_MAX_CODE_SIZE || c->handler_end > SW_SWU_MAX_CODE_SIZE ||
	    (c->kind == SW_EH_FILTER && c->filter_start >= c->handler_start))
		abort();
}

struct eh_seen {
	uint32_t offset;
	uint32_t n, last;
};

static int eh_listed(void *data, uint32_t index, const sw_eh_clause *c)
{
	struct eh_seen *seen = data;

	check_clause(c);
	if (index >= SW_SWU_MAX_EH_CLAUSES || (seen->n && index <= seen->last))
		abort();        /* indexes ascend within the limit */
	seen->last = index;
	seen->n++;
	return 0;
}

static int eh_covers(void *data, uint32_t index, const sw_eh_clause *c)
{
	struct eh_seen *seen = data;

	if (c->try_start > seen->offset || seen->offset >= c->try_end)
		abort();
	return eh_listed(data, index, c);
}

/* The EH queries: errors only where the validator refused the blob. */
static void eh_queries(const uint8_t *blob, size_t size, uint32_t code_size, int valid)
{
	struct eh_seen all = { 0, 0, 0 };
	sw_eh_handler h;
	sw_status st;

	st = sw_swu_eh_clauses(blob, size, eh_listed, &all);
	if (valid && st != SW_OK)
		abort();
	if (st != SW_OK)
		return;
	/* Offsets in the main body and the funclets beyond it. */
	for (uint32_t off = 0; off < 2 * code_size + 64 && off < MAX_OFFSETS; off++) {
		struct eh_seen cov = { off, 0, 0 };

		st = sw_swu_eh_covering(blob, size, off, eh_covers, &cov);
		if (st != SW_OK || cov.n > all.n)
			abort();        /* the table read once reads again */
		st = sw_swu_eh_handler_at(blob, size, off, &h);
		if (st == SW_OK) {
			check_clause(&h.clause);
			if (h.index >= all.n || off >= h.clause.handler_end ||
			    off < (h.in_filter ? h.clause.filter_start : h.clause.handler_start))
				abort();
		} else if (st != SW_E_NOTFOUND) {
			abort();
		}
	}
}

static void run_blob(const uint8_t *blob, size_t size)
{
	sw_swu_header h;
	sw_status valid, dumped;
	uint32_t n, step;

	valid = sw_swu_validate(blob, size);
	dumped = null_stream() ? sw_swu_dump(null_stream(), blob, size) : valid;
	if ((valid == SW_OK) != (dumped == SW_OK))
		abort();        /* the dump performs the validator's checks */
	if (sw_swu_decode_header(blob, size, &h) != SW_OK) {
		if (valid == SW_OK)
			abort();
		/* Still try the decoders: they must refuse, not crash. */
		memset(&h, 0, sizeof h);
		h.code_size = 64;
	}
	/* Every offset of a small method, a spread of a large one, and just past it. */
	n = h.code_size < MAX_OFFSETS ? h.code_size + 1 : MAX_OFFSETS;
	step = h.code_size < MAX_OFFSETS ? 1 : h.code_size / (MAX_OFFSETS - 1);
	for (uint32_t i = 0; i < n; i++)
		decode_at(blob, size, &h, i * step, valid == SW_OK);
	if (h.code_size >= MAX_OFFSETS)
		decode_at(blob, size, &h, h.code_size, valid == SW_OK);
	decode_at(blob, size, &h, h.code_size + 1, 0);
	decode_at(blob, size, &h, UINT32_MAX, 0);
	eh_queries(blob, size, h.code_size, valid == SW_OK);
}

/* A blob with a prefix of eh_nested (at least one clause), built by the builder. */
static size_t eh_blob(struct fz *f, uint8_t *out, size_t cap)
{
	static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };
	unsigned n = 1 + fz_u8(f) % (EH_NESTED);
	sw_swu_builder *b;
	size_t len = 0;

	if (sw_swu_builder_create(&b, arches[fz_u8(f) % 3]) != SW_OK)
		return 0;
	for (unsigned i = 0; i < n; i++)
		sw_swu_eh_clause(b, &eh_nested[i]);
	/* Every prefix of the table is valid; a refusal would leave nothing to patch. */
	if (sw_swu_finish(b, EH_CODE, out, cap, &len) != SW_OK)
		len = 0;
	sw_swu_builder_destroy(b);
	return len;
}

/* A well-formed blob to start from: a method on a small synthetic stack. */
static size_t derived_blob(struct fz *f, uint8_t *out, size_t cap)
{
	sw_synth_params p;
	sw_synth *s;
	sw_synth_frame fr[8];
	sw_code_info info;
	size_t n, len = 0;
	sw_arch arch = (sw_arch)fz_arch(f);
	uint64_t seed = fz_u32(f);
	unsigned pick = fz_u8(f);

	sw_synth_params_default(&p);
	p.max_frames = 6;
	if (sw_synth_create(&s, arch, seed, &p) != SW_OK)
		return 0;
	n = sw_synth_expected(s, 0, fr, 8);
	if (n > 8)
		n = 8;
	for (size_t i = 0; i < n; i++) {
		const sw_synth_frame *e = &fr[(pick + i) % n];

		if (e->state != SW_STATE_FRAMELESS ||
		    sw_codemap_find(sw_synth_thread(s)->codemap, e->ip, &info) != SW_OK)
			continue;
		len = info.unwind_size < cap ? info.unwind_size : cap;
		memcpy(out, info.unwind, len);
		break;
	}
	sw_synth_destroy(s);
	return len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t blob[MAX_BLOB];
	struct fz f;
	size_t len;

	fz_init(&f, data, size);
	if (!(fz_u8(&f) & 1)) {
		/* A fresh copy, exactly the input's size: reads past it are caught. */
		uint8_t *copy = malloc(f.n ? f.n : 1);

		if (!copy)
			return 0;
		memcpy(copy, f.p, f.n);
		run_blob(copy, f.n);
		free(copy);
		return 0;
	}
	len = data[0] == EH_MODE ? eh_blob(&f, blob, sizeof blob) : derived_blob(&f, blob, sizeof blob);
	/* Then patches: (position, xor) pairs; a final odd byte truncates. */
	while (f.n >= 3 && len) {
		uint16_t pos = fz_u16(&f);

		blob[pos % len] ^= fz_u8(&f);
	}
	if (f.n && len)
		len -= fz_u8(&f) % (len + 1) ? 1 + fz_u8(&f) % len : 0;
	{
		uint8_t *copy = malloc(len ? len : 1);

		if (!copy)
			return 0;
		memcpy(copy, blob, len);
		run_blob(copy, len);
		free(copy);
	}
	return 0;
}
