/*
 * swu_parent_slots.h (internal) - the stack slots a funclet's blob names
 * in its parent's frame (SW_GC_PARENT_FRAME), read in ascending order.
 *
 * The walker needs them when it reports the parent of a filter funclet:
 * a filter runs in the exception's first pass, while its parent still
 * lives, so both frames report, and a slot both name is reported twice.
 * CoreCLR lets that happen only for pinned references (vm/gcenv.ee.common.cpp,
 * CheckDoubleReporting), and its JIT encodes every stack slot live in a
 * filter as pinned (docs/design/coreclr/botr/clr-abi.md, "Filter GC
 * semantics").  The parent's live slots come in its GC section's order,
 * by ascending CFA offset, and so do the filter's: one pass over each, no
 * matter how many there are (lib/walk/gc_roots.c).
 */
#ifndef SW_UNWINDINFO_SWU_PARENT_SLOTS_H
#define SW_UNWINDINFO_SWU_PARENT_SLOTS_H

#include <stdbool.h>
#include "swu_format.h"

struct swu_parent_slots {
	struct swu_reader gc;           /* the funclet's GC locations not read yet */
	const struct swi_arch *arch;
	uint32_t left;                  /* how many of them */
	int32_t next;                   /* the next parent-frame slot's CFA offset ... */
	bool have_next;                 /* ... if there is one */
};

/* Start before the first location of `blob`'s GC section (none without one). */
sw_status swu_parent_slots_begin(struct swu_parent_slots *ps, const void *blob, size_t size);

/*
 * Does the blob name a parent-frame slot at `cfa_offset`?  Successive
 * calls must ask offsets that never decrease.  A blob the code map
 * validated reads without error; a damaged one gives its SW_E_* status.
 */
sw_status swu_parent_slots_has(struct swu_parent_slots *ps, int32_t cfa_offset, bool *yes);

#endif
