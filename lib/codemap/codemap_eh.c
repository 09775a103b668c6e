/*
 * codemap_eh.c - sw_codemap_check_eh: the funclets a method's exception
 * handling clauses name, found registered where the clauses say.
 *
 * A clause names its handler (and a filter's filter) by offsets from its
 * method's start; the runtime registers each funclet on its own, flagged
 * SW_CODE_FUNCLET with its parent's handle, which is how a walk knows a
 * funclet frame from its parent's (CoreCLR's EECodeInfo::IsFunclet, and
 * the funclet parent rules of sw_crawl_frame_is_funclet(3)).  When the
 * two disagree, a dispatcher would run a funclet the walker does not
 * treat as one; this check tells a JIT at registration time.
 */
#include <stdbool.h>
#include <stackwalk/codemap.h>
#include <stackwalk/swu_eh.h>

struct funclet_check {
	const sw_codemap *map;
	const sw_code_info *method;
	uint32_t bad;                   /* the first clause that fails */
	sw_status st;
};

/* Is the funclet [start, end) (offsets in the method) registered as one of it? */
static bool funclet_registered(const struct funclet_check *fc, uint32_t start, uint32_t end,
                               bool filter)
{
	uint64_t at = fc->method->start + start;
	sw_code_info f;

	if (sw_codemap_find(fc->map, at, &f) != SW_OK || f.start != at || f.size != end - start)
		return false;
	if (!(f.flags & SW_CODE_FUNCLET) || f.parent != fc->method->method)
		return false;
	return ((f.flags & SW_CODE_FILTER) != 0) == filter;
}

static int check_clause(void *data, uint32_t index, const sw_eh_clause *c)
{
	struct funclet_check *fc = data;

	if (funclet_registered(fc, c->handler_start, c->handler_end, false) &&
	    (c->kind != SW_EH_FILTER ||
	     funclet_registered(fc, c->filter_start, c->handler_start, true)))
		return 0;
	fc->bad = index;
	fc->st = SW_E_MISMATCH;
	return 1;
}

SW_API sw_status sw_codemap_check_eh(const sw_codemap *map, uint64_t start, uint32_t *bad_clause)
{
	struct funclet_check fc = { map, NULL, 0, SW_OK };
	sw_code_info m;
	unsigned token;
	sw_status st;

	if (!map)
		return SW_E_INVAL;
	/* The method and its funclets stay in place while they are compared. */
	token = sw_codemap_read_begin(map);
	st = sw_codemap_find(map, start, &m);
	if (st == SW_OK && m.start != start)
		st = SW_E_NOTFOUND;
	if (st == SW_OK) {
		fc.method = &m;
		st = sw_swu_eh_clauses(m.unwind, m.unwind_size, check_clause, &fc);
	}
	sw_codemap_read_end(map, token);
	if (st == SW_OK)
		st = fc.st;
	if (st == SW_E_MISMATCH && bad_clause)
		*bad_clause = fc.bad;
	return st;
}
