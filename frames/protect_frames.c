/*
 * protect_frames.c - ProtectByRefsFrame and ProtectValueClassFrame: Frames
 * that only protect references, in lists the runtime builds on its stack.
 *
 * Neither resumes anything: as in CoreCLR (vm/frames.h) they keep the
 * Frame defaults (no return address, no function, no transition), so the
 * walk reports them and goes on to the next Frame.  What they add is their
 * GcScanRoots (vm/frames.cpp):
 *
 * - ProtectByRefsFrame::GcScanRoots walks its ByRefInfo list; an entry
 *   of a primitive type (CorIsPrimitiveType) reports nothing, one of a
 *   value type reports the references inside the copy
 *   (ReportPointersFromValueType), any other reports the copy's slot
 *   itself as an object reference.
 * - ProtectValueClassFrame::GcScanRoots walks its ValueClassInfo list and
 *   reports each value's references (ReportPointersFromValueType).
 *
 * ReportPointersFromValueType (vm/siginfo.cpp) reads the type's GCDesc;
 * here the runtime describes the type by an sw_value_layout (frame.h),
 * whose series are reported in order, each slot with the series' flags.
 *
 * Everything is read through the walk's memory reader, and every count is
 * bounded: a cyclic list gives SW_E_FRAMECYCLE, an endless one or too many
 * roots SW_E_LIMIT, a layout that cannot be garbage-free SW_E_BADFRAME.
 */
#include "frames_internal.h"

/* One Frame's report: the callback, whether it stopped, the roots left. */
struct protect_report {
	const sw_frame_view *f;
	int (*fn)(void *data, uint64_t slot, uint32_t flags);
	void *data;
	int stopped;
	uint64_t budget;
};

static sw_status report_slot(struct protect_report *r, uint64_t slot, uint32_t flags)
{
	if (r->budget == 0)
		return SW_E_LIMIT;
	r->budget--;
	r->stopped = r->fn(r->data, slot, flags);
	return SW_OK;
}

/* The references inside the value at `value`, as the layout at `layout` places them. */
static sw_status report_value(struct protect_report *r, uint64_t layout, uint64_t value)
{
	unsigned p = swi_pointer_size(r->f->thread->arch);
	const sw_memory *m = r->f->thread->memory;
	uint64_t nseries, series_bytes = 3ULL * p;
	sw_status st;

	if (layout == 0)
		return SW_OK;       /* no references */
	if ((st = swi_read_ptr(m, p, layout, &nseries)) != SW_OK)
		return st;
	if (nseries > SWI_FRAME_MAX_PROTECTED || layout > UINT64_MAX - p - nseries * series_bytes)
		return SW_E_BADFRAME;
	for (uint64_t i = 0; i < nseries && !r->stopped; i++) {
		uint64_t entry = layout + p + i * series_bytes, offset, slots, flags, first;

		if ((st = swi_read_ptr(m, p, entry, &offset)) != SW_OK ||
		    (st = swi_read_ptr(m, p, entry + p, &slots)) != SW_OK ||
		    (st = swi_read_ptr(m, p, entry + 2ULL * p, &flags)) != SW_OK)
			return st;
		if ((flags & ~(uint64_t)SW_GC_INTERIOR) != 0)
			return SW_E_BADFRAME;
		if (slots > r->budget)
			return SW_E_LIMIT;
		first = value + offset;
		if (first < value || first > UINT64_MAX - slots * p)
			return SW_E_BADFRAME;
		for (uint64_t k = 0; k < slots && !r->stopped; k++)
			if ((st = report_slot(r, first + k * p, (uint32_t)flags)) != SW_OK)
				return st;
	}
	return SW_OK;
}

/* The Frame's list: call `entry` for each node, guarded against cycles and endless lists. */
static sw_status walk_list(struct protect_report *r, unsigned head_field,
                           sw_status (*entry)(struct protect_report *r, uint64_t node))
{
	unsigned p = swi_pointer_size(r->f->thread->arch);
	struct swi_list_guard g;
	uint64_t node;
	sw_status st;

	if ((st = sw_frame_read_field(r->f, head_field, &node)) != SW_OK)
		return st;
	swi_list_guard_init(&g);
	while (node != 0 && !r->stopped) {
		if ((st = swi_list_visit(&g, node, SWI_FRAME_MAX_PROTECTED)) != SW_OK ||
		    (st = entry(r, node)) != SW_OK ||
		    (st = swi_read_ptr(r->f->thread->memory, p, node, &node)) != SW_OK)
			return st;
	}
	return SW_OK;
}

static sw_status run_report(const sw_frame_view *f, unsigned head_field,
                            sw_status (*entry)(struct protect_report *r, uint64_t node),
                            int (*fn)(void *data, uint64_t slot, uint32_t flags), void *data)
{
	struct protect_report r = { f, fn, data, 0, SWI_FRAME_MAX_ROOTS };

	return walk_list(&r, head_field, entry);
}

/* A ByRefInfo: next, kind, layout, then the copy. */
static sw_status byref_entry(struct protect_report *r, uint64_t node)
{
	unsigned p = swi_pointer_size(r->f->thread->arch);
	uint64_t kind, layout, copy = node + 3ULL * p;
	sw_status st;

	if (node > UINT64_MAX - 4ULL * p)
		return SW_E_BADFRAME;
	if ((st = swi_read_ptr(r->f->thread->memory, p, node + p, &kind)) != SW_OK)
		return st;
	switch (kind) {
	case SW_BYREF_PRIMITIVE:
		return SW_OK;
	case SW_BYREF_OBJECT:
		return report_slot(r, copy, 0);
	case SW_BYREF_VALUE:
		if ((st = swi_read_ptr(r->f->thread->memory, p, node + 2ULL * p, &layout)) != SW_OK)
			return st;
		return report_value(r, layout, copy);
	default:
		return SW_E_BADFRAME;
	}
}

static sw_status pbrf_gc_roots(const sw_frame_view *f,
                               int (*fn)(void *data, uint64_t slot, uint32_t flags), void *data)
{
	return run_report(f, SW_PBRF_BYREFS, byref_entry, fn, data);
}

/* A ValueClassInfo: next, layout, the value's address. */
static sw_status value_class_entry(struct protect_report *r, uint64_t node)
{
	unsigned p = swi_pointer_size(r->f->thread->arch);
	uint64_t layout, value;
	sw_status st;

	if (node > UINT64_MAX - 3ULL * p)
		return SW_E_BADFRAME;
	if ((st = swi_read_ptr(r->f->thread->memory, p, node + p, &layout)) != SW_OK ||
	    (st = swi_read_ptr(r->f->thread->memory, p, node + 2ULL * p, &value)) != SW_OK)
		return st;
	return report_value(r, layout, value);
}

static sw_status pvcf_gc_roots(const sw_frame_view *f,
                               int (*fn)(void *data, uint64_t slot, uint32_t flags), void *data)
{
	return run_report(f, SW_PVCF_VALUES, value_class_entry, fn, data);
}

const sw_frame_ops swi_protect_byrefs_frame_ops = {
	.type = SW_FRAME_PROTECT_BYREFS,
	.flags = 0,
	.name = "ProtectByRefsFrame",
	.return_address = swi_frame_no_return_address,
	.update_regdisplay = swi_frame_no_regdisplay,
	.method = NULL,
	.transition = NULL,
	.gc_roots = pbrf_gc_roots,
};

const sw_frame_ops swi_protect_value_class_frame_ops = {
	.type = SW_FRAME_PROTECT_VALUE_CLASS,
	.flags = 0,
	.name = "ProtectValueClassFrame",
	.return_address = swi_frame_no_return_address,
	.update_regdisplay = swi_frame_no_regdisplay,
	.method = NULL,
	.transition = NULL,
	.gc_roots = pvcf_gc_roots,
};
