/*
 * swu_parent_slots.c - a funclet's SW_GC_PARENT_FRAME slots, in order
 * (see swu_parent_slots.h).  Each location is read once: its head, then
 * its ranges skipped without decoding.
 */
#include "util.h"
#include "arch.h"
#include "swu_parent_slots.h"

sw_status swu_parent_slots_begin(struct swu_parent_slots *ps, const void *blob, size_t size)
{
	struct swu_reader r;
	sw_swu_header h;
	sw_status st;

	memset(ps, 0, sizeof *ps);
	if ((st = swu_read_header(&r, blob, size, &h, &ps->arch, NULL)) != SW_OK)
		return st;
	ps->gc = swu_gc_section(blob, size, &r);
	ps->left = h.gc_locations;
	return SW_OK;
}

/* Read on to the next parent-frame slot, or to the section's end. */
static sw_status advance(struct swu_parent_slots *ps)
{
	ps->have_next = false;
	while (ps->left) {
		struct swu_gc_loc loc;
		sw_status st;

		ps->left--;
		if ((st = swu_read_gc_loc(&ps->gc, ps->arch, &loc)) != SW_OK)
			return st;
		/* Two varints per range. */
		if ((st = swu_skip_varints(&ps->gc, 2 * (uint64_t)loc.nranges)) != SW_OK)
			return st;
		if (loc.slot.flags & SW_GC_PARENT_FRAME) {
			ps->next = loc.slot.cfa_offset;
			ps->have_next = true;
			return SW_OK;
		}
	}
	return SW_OK;
}

sw_status swu_parent_slots_has(struct swu_parent_slots *ps, int32_t cfa_offset, bool *yes)
{
	sw_status st;

	*yes = false;
	/* Before the first question nothing has been read: have_next is false, left is not 0. */
	while ((!ps->have_next && ps->left) || (ps->have_next && ps->next < cfa_offset))
		if ((st = advance(ps)) != SW_OK)
			return st;
	*yes = ps->have_next && ps->next == cfa_offset;
	return SW_OK;
}
