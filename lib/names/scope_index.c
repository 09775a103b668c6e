/*
 * scope_index.c - the function scopes of a compile unit, indexed by
 * address (scope_index.h says why).
 *
 * A unit is indexed the first time an address in it is named: one walk
 * of its DIE tree collects every address range of every subprogram and
 * inlined call.  Sorted by start (the outer of two that start together
 * first), each range gets the nearest range before it that still holds
 * its start: with ranges nested as a unit's scopes are, that is the
 * scope it lies in.  A lookup takes the last range that starts at or
 * before the address and steps out until a range holds it: the innermost
 * scope there; its outer ranges are the callers of each inlined call.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include "util.h"
#include "array_grow.h"
#include "scope_index.h"

/* Bounds a hostile or enormous unit cannot pass: past them, libdw is asked instead. */
#define MAX_TREE_DEPTH   256            /* DIE nesting walked */
#define MAX_UNIT_DIES    (8u << 20)     /* DIEs visited in one unit */
#define MAX_UNIT_RANGES  (1u << 20)     /* ranges kept for one unit */
#define MAX_ALL_RANGES   (4u << 20)     /* ranges kept for every unit together (32 bytes each) */
#define NO_SCOPE         UINT32_MAX
#define MAX_INLINE_DEPTH 1024          /* inlined calls libdw's chain follows at one address */

struct scope_range {
	uint64_t lo, hi;                /* [lo, hi), DWARF addresses */
	Dwarf_Off die;                  /* the subprogram or inlined call */
	uint32_t outer;                 /* the range it lies in, or NO_SCOPE */
	uint32_t depth;                 /* its DIE's depth in the unit: the outer of equal ranges first */
};

struct unit_index {
	const void *key;                /* the unit (Dwarf_Die.cu) */
	Dwarf *dwarf;
	struct scope_range *v;          /* NULL: the unit could not be indexed */
	uint32_t n;
};

struct swi_scope_units {
	struct unit_index *units;       /* by key */
	size_t n, cap;
	size_t ranges;                  /* kept in all units */
};

struct swi_scope_units *swi_scope_units_create(void)
{
	return calloc(1, sizeof(struct swi_scope_units));
}

void swi_scope_units_free(struct swi_scope_units *u)
{
	if (!u)
		return;
	for (size_t i = 0; i < u->n; i++)
		free(u->units[i].v);
	free(u->units);
	free(u);
}

struct builder {
	struct scope_range *v;
	size_t n, cap, limit;
	int failed;
};

static void add_range(struct builder *b, uint64_t lo, uint64_t hi, Dwarf_Off die, unsigned depth)
{
	if (b->failed || lo >= hi)
		return;
	if (b->n == b->limit) {
		b->failed = 1;
		return;
	}
	if (swi_array_grow((void **)&b->v, &b->cap, b->n + 1, sizeof *b->v) != SW_OK) {
		b->failed = 1;
		return;
	}
	b->v[b->n++] = (struct scope_range){ lo, hi, die, NO_SCOPE, depth };
}

static void add_scope(struct builder *b, Dwarf_Die *die, unsigned depth)
{
	int tag = dwarf_tag(die);
	Dwarf_Addr base, lo, hi;
	ptrdiff_t at = 0;

	if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
		return;
	while ((at = dwarf_ranges(die, at, &base, &lo, &hi)) > 0)
		add_range(b, lo, hi, dwarf_dieoffset(die), depth);
}

/* Every DIE of the unit, depth first, without recursion. */
static void collect(struct builder *b, Dwarf_Die *cu)
{
	Dwarf_Die stack[MAX_TREE_DEPTH];
	unsigned depth = 0;
	size_t visited = 0;

	if (dwarf_child(cu, &stack[0]) != 0)
		return;
	while (!b->failed) {
		Dwarf_Die next;

		add_scope(b, &stack[depth], depth);
		if (++visited == MAX_UNIT_DIES) {
			b->failed = 1;
			return;
		}
		if (dwarf_haschildren(&stack[depth]) && depth + 1 < MAX_TREE_DEPTH &&
		    dwarf_child(&stack[depth], &stack[depth + 1]) == 0) {
			depth++;
			continue;
		}
		/* The next sibling, here or in a DIE further out. */
		while (dwarf_siblingof(&stack[depth], &next) != 0) {
			if (depth == 0)
				return;
			depth--;
		}
		stack[depth] = next;
	}
}

static int range_cmp(const void *pa, const void *pb)
{
	const struct scope_range *a = pa, *b = pb;

	if (a->lo != b->lo)
		return a->lo < b->lo ? -1 : 1;
	if (a->hi != b->hi)
		return a->hi > b->hi ? -1 : 1;
	return a->depth < b->depth ? -1 : a->depth > b->depth;
}

/* Each range's outer one: the nearest before it that has not ended at its start. */
static int link_outer(struct scope_range *v, size_t n)
{
	uint32_t *open = malloc((n + 1) * sizeof *open);
	size_t top = 0;

	if (!open)
		return 0;
	for (size_t i = 0; i < n; i++) {
		while (top > 0 && v[open[top - 1]].hi <= v[i].lo)
			top--;
		v[i].outer = top > 0 ? open[top - 1] : NO_SCOPE;
		open[top++] = (uint32_t)i;
	}
	free(open);
	return 1;
}

static void build(struct swi_scope_units *u, struct unit_index *ui, Dwarf_Die *cu)
{
	struct builder b = { NULL, 0, 0, MAX_UNIT_RANGES, 0 };

	if (u->ranges < MAX_ALL_RANGES && MAX_ALL_RANGES - u->ranges < b.limit)
		b.limit = MAX_ALL_RANGES - u->ranges;
	if (u->ranges >= MAX_ALL_RANGES)
		b.failed = 1;
	else
		collect(&b, cu);
	if (!b.failed && b.n > 1)
		qsort(b.v, b.n, sizeof *b.v, range_cmp);
	if (b.failed || !link_outer(b.v, b.n)) {
		free(b.v);
		return;
	}
	ui->v = b.v ? b.v : malloc(sizeof *b.v);        /* an empty unit is indexed too */
	ui->n = (uint32_t)b.n;
	u->ranges += b.n;
}

/* The unit's index, made on first use; NULL when there is no memory to keep it. */
static struct unit_index *unit(struct swi_scope_units *u, Dwarf_Die *cu)
{
	const void *key = cu->cu;
	size_t lo;

	SWI_SEARCH(lo, u->n, mid, (uintptr_t)u->units[mid].key < (uintptr_t)key);
	if (lo < u->n && u->units[lo].key == key)
		return &u->units[lo];
	if (swi_array_grow((void **)&u->units, &u->cap, u->n + 1, sizeof *u->units) != SW_OK)
		return NULL;
	memmove(&u->units[lo + 1], &u->units[lo], (u->n - lo) * sizeof *u->units);
	u->n++;
	u->units[lo] = (struct unit_index){ key, dwarf_cu_getdwarf(cu->cu), NULL, 0 };
	build(u, &u->units[lo], cu);
	return &u->units[lo];
}

int swi_scope_chain(struct swi_scope_units *u, Dwarf_Die *cu, uint64_t address,
                    struct swi_scope_chain *out)
{
	struct unit_index *ui = u && cu ? unit(u, cu) : NULL;
	size_t lo, steps = 0;
	uint32_t at;

	out->n = 0;
	if (!ui || !ui->v || !ui->dwarf)
		return 0;
	/* The last range that starts at or before the address. */
	SWI_SEARCH(lo, ui->n, mid, ui->v[mid].lo <= address);
	at = lo > 0 ? (uint32_t)(lo - 1) : NO_SCOPE;
	/* Out to the innermost range that holds it, then out through its callers. */
	while (at != NO_SCOPE && steps++ < ui->n) {
		const struct scope_range *r = &ui->v[at];
		Dwarf_Die *die = &out->die[out->n];

		if (address >= r->lo && address < r->hi) {
			if (!dwarf_offdie(ui->dwarf, r->die, die))
				return 0;
			out->n++;
			if (dwarf_tag(die) != DW_TAG_inlined_subroutine || out->n == SWI_SCOPE_CHAIN_MAX)
				return 1;
		}
		at = r->outer;
	}
	return out->n ? 1 : -1;
}

/*
 * The function scopes at `address` as libdw finds them, innermost first,
 * out to the first subprogram: for a unit the index could not take.
 * dwarf_getscopes goes on from an inlined call into the scopes of its
 * abstract definition, not into its caller: the caller's scopes are
 * those that contain the inlined call's own DIE (dwarf_getscopes_die).
 * Lexical blocks between them are not frames.
 */
int swi_scope_chain_libdw(Dwarf_Die *cu, uint64_t address, struct swi_scope_chain *out)
{
	Dwarf_Die *scopes = NULL;
	int nscopes = dwarf_getscopes(cu, address, &scopes);
	unsigned depth = 0;

	out->n = 0;
	if (nscopes < 0)
		return 0;
	for (int i = 0; i < nscopes && depth < MAX_INLINE_DEPTH &&
	                out->n < SWI_SCOPE_CHAIN_MAX; i++) {
		int tag = dwarf_tag(&scopes[i]);
		Dwarf_Die *outer = NULL;

		if (tag != DW_TAG_subprogram && tag != DW_TAG_inlined_subroutine)
			continue;
		out->die[out->n++] = scopes[i];
		if (tag != DW_TAG_inlined_subroutine)
			break;
		/* [0] is the inlined call itself; its caller's scopes follow. */
		nscopes = dwarf_getscopes_die(&scopes[i], &outer);
		free(scopes);
		if (nscopes < 0)
			return 0;
		scopes = outer;
		i = 0;
		depth++;
	}
	free(scopes);
	return out->n ? 1 : -1;
}
