/*
 * scope_index.h - the function scopes of a compile unit, indexed by
 * address: what sw_names asks at every address, read once per unit.
 *
 * dwarf_getscopes walks the unit's DIE tree from its root for every
 * address it is asked, and dwarf_getscopes_die again for each inlined
 * call's caller: in a large unit that is most of a lookup's cost (about
 * 0.4 ms an address in a unit of 800 functions).  The index walks the
 * tree once, keeps each range of every subprogram and inlined call with
 * the range that contains it, and answers with a binary search and a few
 * steps out.
 */
#ifndef SWI_SCOPE_INDEX_H
#define SWI_SCOPE_INDEX_H

#include <stddef.h>
#include <stdint.h>
#include <elfutils/libdw.h>

struct swi_scope_units;         /* every unit indexed so far */

/* What one lookup gives: the scopes at an address, innermost first (DIEs). */
#define SWI_SCOPE_CHAIN_MAX 64
struct swi_scope_chain {
	Dwarf_Die die[SWI_SCOPE_CHAIN_MAX];
	size_t n;
};

struct swi_scope_units *swi_scope_units_create(void);
void swi_scope_units_free(struct swi_scope_units *u);

/*
 * The subprogram and inlined-call DIEs of unit `cu` whose ranges hold
 * `address` (a DWARF address, before the module's bias), innermost
 * first, out to the first subprogram.  0 when the unit cannot be
 * indexed (too large, or out of memory): the caller asks libdw itself.
 * -1 when it was indexed and nothing holds the address.
 */
int swi_scope_chain(struct swi_scope_units *u, Dwarf_Die *cu, uint64_t address,
                    struct swi_scope_chain *out);

/*
 * The same chain as libdw finds it (dwarf_getscopes), for a unit the
 * index could not take; also the reference the index is fuzzed against
 * (tests/fuzz/fuzz_scope_index.c).  Returns as swi_scope_chain does: 0
 * when libdw failed (out->n is then what was found before it failed).
 */
int swi_scope_chain_libdw(Dwarf_Die *cu, uint64_t address, struct swi_scope_chain *out);

#endif /* SWI_SCOPE_INDEX_H */
