/*
 * swu_eh.c - exception handling clauses in SWU: the EH section read,
 * written, checked and printed, and the queries a dispatcher asks.
 *
 * The meaning follows CoreCLR:
 *  - a clause is CORINFO_EH_CLAUSE as the JIT reports it
 *    (src/coreclr/inc/corinfo.h; CodeGen::genReportEH in
 *    src/coreclr/jit/codegencommon.cpp): native offsets from the method's
 *    start, each region [start, end); the kind byte has the values of
 *    CORINFO_EH_CLAUSE_FLAGS;
 *  - a try covers an offset o when try_start <= o < try_end
 *    (ContainsCodeOffset in the runtime's ExceptionHandling.cs);
 *  - funclets lie after the main body, each handler apart
 *    (src/coreclr/vm/exceptionhandling.cpp, the comment at its top);
 *  - a filter funclet runs up to its handler's first byte
 *    (EHblkDsc::BBFilterLast, src/coreclr/jit/jiteh.cpp);
 *  - clauses are ordered inside-out, which the dispatch relies on
 *    (exceptionhandling.cpp; ECMA-335 Partition II, 19);
 *  - a handler moved out of a try is covered by a duplicated clause whose
 *    try is the whole funclet and whose handler is the enclosing clause's
 *    (genReportEH's comment, CORINFO_EH_CLAUSE_DUPLICATE).
 *
 * Nothing here allocates: the queries may run where a walk runs.  A blob's
 * table is read clause by clause; the checks of the whole table read it
 * again for each clause, at most SW_SWU_MAX_EH_CLAUSES^2 clause reads.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <string.h>
#include "swu_eh_format.h"

/* ---- Reading ---- */

sw_status swu_eh_open(const void *blob, size_t size, struct swu_eh_reader *er)
{
	sw_status st;

	memset(er, 0, sizeof *er);
	if ((st = swu_read_eh_section(blob, size, &er->r, &er->code_size)) != SW_OK)
		return st;
	if (!er->r.p)
		return SW_OK;
	/* A later encoding is refused, not misread. */
	if (*er->r.p != SWU_EH_VERSION)
		return SW_E_UNSUPPORTED;
	er->r.p++;
	if ((st = swu_read_uleb(&er->r, &er->count)) != SW_OK)
		return st;
	/*
	 * The flag says there is a clause; the bytes must hold them all.
	 * They are all there (swu_read_eh_section found the blob long enough
	 * for the section's byte count, else SW_E_TRUNCATED): a count they
	 * cannot hold contradicts that byte count, as epilog ops overrunning
	 * theirs do in decoder.c, so the metadata is bad.
	 */
	if (er->count == 0 || er->count > SW_SWU_MAX_EH_CLAUSES)
		return SW_E_BADMETA;
	if ((size_t)(er->r.end - er->r.p) < (size_t)er->count * SWU_EH_CLAUSE_MIN_BYTES)
		return SW_E_BADMETA;
	return SW_OK;
}

/* A region's start and length: its end within the largest method. */
static sw_status read_range(struct swu_reader *r, uint32_t *start, uint32_t *end)
{
	uint32_t len;
	sw_status st;

	if ((st = swu_read_uleb(r, start)) != SW_OK || (st = swu_read_uleb(r, &len)) != SW_OK)
		return st;
	if (len == 0 || (uint64_t)*start + len > SW_SWU_MAX_CODE_SIZE)
		return SW_E_BADMETA;
	*end = *start + len;
	return SW_OK;
}

static bool kind_known(uint32_t kind)
{
	return kind == SW_EH_CATCH || kind == SW_EH_FILTER || kind == SW_EH_FINALLY ||
	       kind == SW_EH_FAULT;
}

/* Do [a, b) and [c, d) share an offset? */
static bool overlap(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	return a < d && c < b;
}

sw_status swu_eh_check_clause(const sw_eh_clause *c)
{
	if (!kind_known(c->kind) || (c->flags & ~SWU_EH_FLAGS_KNOWN))
		return SW_E_UNSUPPORTED;
	if (c->try_start >= c->try_end || c->try_end > SW_SWU_MAX_CODE_SIZE ||
	    c->handler_start >= c->handler_end || c->handler_end > SW_SWU_MAX_CODE_SIZE)
		return SW_E_BADMETA;
	if (c->kind == SW_EH_FILTER ? c->filter_start >= c->handler_start : c->filter_start != 0)
		return SW_E_BADMETA;
	if (c->kind != SW_EH_CATCH && c->type_token != 0)
		return SW_E_BADMETA;
	/* A clause's funclets are not part of what it protects. */
	if (overlap(c->try_start, c->try_end, c->handler_start, c->handler_end) ||
	    (c->kind == SW_EH_FILTER &&
	     overlap(c->try_start, c->try_end, c->filter_start, c->handler_start)))
		return SW_E_BADMETA;
	return SW_OK;
}

/*
 * A clause runs past the section's byte count: not the blob's end, which
 * swu_eh_open checked, but a count or a clause the section's size
 * contradicts.
 */
static sw_status overran(sw_status st)
{
	return st == SW_E_TRUNCATED ? SW_E_BADMETA : st;
}

sw_status swu_eh_next(struct swu_eh_reader *er, sw_eh_clause *c)
{
	struct swu_reader *r = &er->r;
	uint32_t operand = 0;
	unsigned b;
	sw_status st;

	if (er->index >= er->count)
		return SW_E_NOTFOUND;
	if (r->p >= r->end)
		return SW_E_BADMETA;
	b = *r->p++;
	memset(c, 0, sizeof *c);
	c->kind = b & SWU_EH_KIND_MASK;
	c->flags = b & ~SWU_EH_KIND_MASK;
	if (!kind_known(c->kind) || (c->flags & ~SWU_EH_FLAGS_KNOWN))
		return SW_E_UNSUPPORTED;
	if ((st = read_range(r, &c->try_start, &c->try_end)) != SW_OK ||
	    (st = read_range(r, &c->handler_start, &c->handler_end)) != SW_OK)
		return overran(st);
	if ((c->kind == SW_EH_CATCH || c->kind == SW_EH_FILTER) &&
	    (st = swu_read_uleb(r, &operand)) != SW_OK)
		return overran(st);
	if (c->kind == SW_EH_CATCH)
		c->type_token = operand;
	else if (c->kind == SW_EH_FILTER)
		c->filter_start = operand;
	er->index++;
	return swu_eh_check_clause(c);
}

/* ---- The whole table ---- */

/* The clauses in order, from the builder's array or from the blob. */
struct eh_cursor {
	const sw_eh_clause *clauses;
	struct swu_eh_reader r;
	uint32_t index;
};

static void cursor_start(struct eh_cursor *cur, const sw_eh_clause *clauses,
                         const struct swu_eh_reader *er)
{
	cur->clauses = clauses;
	if (er)
		cur->r = *er;
	cur->index = 0;
}

static sw_status cursor_next(struct eh_cursor *cur, sw_eh_clause *c)
{
	if (cur->clauses) {
		*c = cur->clauses[cur->index++];
		return SW_OK;
	}
	return swu_eh_next(&cur->r, c);
}

/* [a, b) and [c, d) nest (either way, or equal) or are disjoint. */
static bool nest_or_apart(uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	return !overlap(a, b, c, d) || (a <= c && d <= b) || (c <= a && b <= d);
}

/* Does a funclet of c (its handler, or its filter) hold [start, end)? */
static bool funclet_holds(const sw_eh_clause *c, uint32_t start, uint32_t end)
{
	if (c->handler_start <= start && end <= c->handler_end)
		return true;
	return c->kind == SW_EH_FILTER && c->filter_start <= start && end <= c->handler_start;
}

static bool same_funclets(const sw_eh_clause *a, const sw_eh_clause *b)
{
	return a->handler_start == b->handler_start && a->handler_end == b->handler_end &&
	       a->kind == b->kind && a->filter_start == b->filter_start;
}

/* The funclets of a and b: apart, or the very same (*shared). */
static bool funclets_apart(const sw_eh_clause *a, const sw_eh_clause *b, bool *shared)
{
	uint32_t af = a->kind == SW_EH_FILTER ? a->filter_start : a->handler_start;
	uint32_t bf = b->kind == SW_EH_FILTER ? b->filter_start : b->handler_start;

	if (same_funclets(a, b)) {
		*shared = true;
		return true;
	}
	/* A filter and its handler are contiguous: one span covers both. */
	return !overlap(af, a->handler_end, bf, b->handler_end);
}

/* Every try against every funclet: nested, or apart. */
static bool try_vs_funclets(const sw_eh_clause *t, const sw_eh_clause *f)
{
	if (!nest_or_apart(t->try_start, t->try_end, f->handler_start, f->handler_end))
		return false;
	return f->kind != SW_EH_FILTER ||
	       nest_or_apart(t->try_start, t->try_end, f->filter_start, f->handler_start);
}

/*
 * An earlier clause `a` and a later one `b`: blocks nest or are apart,
 * and b's try does not lie strictly inside a's (inner clauses first).
 */
static bool pair_ok(const sw_eh_clause *a, const sw_eh_clause *b, bool *shared)
{
	if (!nest_or_apart(a->try_start, a->try_end, b->try_start, b->try_end))
		return false;
	if (a->try_start <= b->try_start && b->try_end <= a->try_end &&
	    (a->try_start != b->try_start || a->try_end != b->try_end))
		return false;
	return try_vs_funclets(a, b) && try_vs_funclets(b, a) && funclets_apart(a, b, shared);
}

/* Funclets beyond the main body; a try in it, or in a funclet (checked by the caller). */
static bool placed_ok(const sw_eh_clause *c, uint32_t code_size)
{
	if (c->handler_start < code_size || (c->kind == SW_EH_FILTER && c->filter_start < code_size))
		return false;
	return c->try_start >= code_size || c->try_end <= code_size;
}

sw_status swu_eh_check_table(const sw_eh_clause *clauses, const struct swu_eh_reader *er,
                             uint32_t count, uint32_t code_size)
{
	struct eh_cursor outer, inner;
	sw_eh_clause ci, cj;
	sw_status st;

	cursor_start(&outer, clauses, er);
	for (uint32_t i = 0; i < count; i++) {
		bool housed, shared = false;

		if ((st = cursor_next(&outer, &ci)) != SW_OK)
			return st;
		if (!placed_ok(&ci, code_size))
			return SW_E_BADMETA;
		housed = ci.try_start < code_size;
		cursor_start(&inner, clauses, er);
		for (uint32_t j = 0; j < count; j++) {
			if ((st = cursor_next(&inner, &cj)) != SW_OK)
				return st;
			if (j == i)
				continue;
			if (funclet_holds(&cj, ci.try_start, ci.try_end))
				housed = true;
			if (j < i && !pair_ok(&cj, &ci, &shared))
				return SW_E_BADMETA;
		}
		/* A try past the main body protects code of a funclet. */
		if (!housed)
			return SW_E_BADMETA;
		/* Only a duplicated clause reuses an earlier clause's handler. */
		if (shared != ((ci.flags & SW_EH_DUPLICATED) != 0))
			return SW_E_BADMETA;
	}
	return SW_OK;
}

sw_status swu_eh_validate(const void *blob, size_t size, const uint8_t **where)
{
	struct swu_eh_reader er, all;
	sw_eh_clause c;
	sw_status st;

	*where = blob;
	st = swu_eh_open(blob, size, &er);
	if (er.r.p)
		*where = er.r.p;
	if (st != SW_OK)
		return st;
	/* Each clause on its own first, so that the section's last byte is known. */
	all = er;
	for (uint32_t i = 0; i < er.count; i++) {
		*where = all.r.p;
		if ((st = swu_eh_next(&all, &c)) != SW_OK)
			return st;
	}
	*where = all.r.p;
	if (all.r.p != all.r.end)
		return SW_E_BADMETA;
	/* A rule between clauses: the table's first clause. */
	*where = er.r.p;
	return swu_eh_check_table(NULL, &er, er.count, er.code_size);
}

/* ---- Writing ---- */

static void put_clause(struct swu_writer *w, const sw_eh_clause *c)
{
	swu_put_byte(w, c->kind | c->flags);
	swu_put_uleb(w, c->try_start);
	swu_put_uleb(w, c->try_end - c->try_start);
	swu_put_uleb(w, c->handler_start);
	swu_put_uleb(w, c->handler_end - c->handler_start);
	if (c->kind == SW_EH_CATCH)
		swu_put_uleb(w, c->type_token);
	else if (c->kind == SW_EH_FILTER)
		swu_put_uleb(w, c->filter_start);
}

static void put_body(struct swu_writer *w, const sw_eh_clause *clauses, uint32_t n)
{
	swu_put_byte(w, SWU_EH_VERSION);
	swu_put_uleb(w, n);
	for (uint32_t i = 0; i < n; i++)
		put_clause(w, &clauses[i]);
}

void swu_eh_put_section(struct swu_writer *w, const sw_eh_clause *clauses, uint32_t n)
{
	struct swu_writer count = { NULL, 0, 0 };

	put_body(&count, clauses, n);
	swu_put_uleb(w, (uint32_t)count.len);
	put_body(w, clauses, n);
}

/* ---- Queries ---- */

/* Call fn for each clause, or (covering) for each whose try holds `offset`, in table order. */
static sw_status each_clause(const void *blob, size_t size, bool covering, uint32_t offset,
                             sw_swu_eh_fn fn, void *data)
{
	struct swu_eh_reader er;
	sw_eh_clause c;
	sw_status st;

	if (!fn)
		return SW_E_INVAL;
	if ((st = swu_eh_open(blob, size, &er)) != SW_OK)
		return st;
	for (uint32_t i = 0; i < er.count; i++) {
		if ((st = swu_eh_next(&er, &c)) != SW_OK)
			return st;
		if (covering && (offset < c.try_start || offset >= c.try_end))
			continue;
		if (fn(data, i, &c))
			break;
	}
	return SW_OK;
}

SW_API sw_status sw_swu_eh_clauses(const void *blob, size_t size, sw_swu_eh_fn fn, void *data)
{
	return each_clause(blob, size, false, 0, fn, data);
}

/* The table is ordered inside-out: its order is innermost first. */
SW_API sw_status sw_swu_eh_covering(const void *blob, size_t size, uint32_t offset,
                                    sw_swu_eh_fn fn, void *data)
{
	return each_clause(blob, size, true, offset, fn, data);
}

SW_API sw_status sw_swu_eh_handler_at(const void *blob, size_t size, uint32_t offset,
                                      sw_eh_handler *out)
{
	struct swu_eh_reader er;
	sw_eh_clause c;
	sw_status st;

	if (!out)
		return SW_E_INVAL;
	if ((st = swu_eh_open(blob, size, &er)) != SW_OK)
		return st;
	for (uint32_t i = 0; i < er.count; i++) {
		bool in_handler, in_filter;

		if ((st = swu_eh_next(&er, &c)) != SW_OK)
			return st;
		in_handler = c.handler_start <= offset && offset < c.handler_end;
		in_filter = c.kind == SW_EH_FILTER && c.filter_start <= offset &&
		            offset < c.handler_start;
		if (in_handler || in_filter) {
			out->index = i;
			out->in_filter = in_filter;
			out->clause = c;
			return SW_OK;
		}
	}
	return SW_E_NOTFOUND;
}

/* ---- Printing ---- */

static const char *kind_name(uint32_t kind)
{
	switch (kind) {
	case SW_EH_CATCH:   return "catch";
	case SW_EH_FILTER:  return "filter";
	case SW_EH_FINALLY: return "finally";
	case SW_EH_FAULT:   return "fault";
	default:            return "?";
	}
}

static int print_clause(void *data, uint32_t index, const sw_eh_clause *c)
{
	FILE *out = data;

	fprintf(out, "  %4" PRIu32 ": %-7s try [%" PRIu32 ", %" PRIu32 ")", index,
	        kind_name(c->kind), c->try_start, c->try_end);
	if (c->kind == SW_EH_FILTER)
		fprintf(out, " filter [%" PRIu32 ", %" PRIu32 ")", c->filter_start, c->handler_start);
	fprintf(out, " handler [%" PRIu32 ", %" PRIu32 ")", c->handler_start, c->handler_end);
	if (c->kind == SW_EH_CATCH)
		fprintf(out, " type 0x%" PRIx32, c->type_token);
	fprintf(out, "%s\n", c->flags & SW_EH_DUPLICATED ? " duplicated" : "");
	return 0;
}

sw_status swu_eh_dump(FILE *out, const void *blob, size_t size)
{
	struct swu_eh_reader er;
	sw_status st;

	if ((st = swu_eh_open(blob, size, &er)) != SW_OK || er.count == 0)
		return st;
	fprintf(out, "eh clauses: %" PRIu32 ", innermost first\n", er.count);
	return sw_swu_eh_clauses(blob, size, print_clause, out);
}
