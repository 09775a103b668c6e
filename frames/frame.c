/*
 * frame.c - the Frame base: push and pop for runtimes, field access and
 * header reads for the walker.
 */
#include "frames_internal.h"

SW_API void sw_frame_push(sw_frame **head, sw_frame *f, uint32_t type, uint32_t attributes)
{
	if (!head || !f)
		return;
	f->type = type;
	f->attributes = attributes;
	f->next = *head;
	/* Publish last: a walker interrupting us sees a complete Frame or none. */
	__atomic_store_n(head, f, __ATOMIC_RELEASE);
}

SW_API sw_status sw_frame_pop(sw_frame **head, sw_frame *f)
{
	if (!head || !f)
		return SW_E_INVAL;
	if (*head != f)
		return SW_E_BADFRAME;
	__atomic_store_n(head, f->next, __ATOMIC_RELEASE);
	return SW_OK;
}

SW_API uint64_t sw_frame_field_address(const sw_frame_view *f, unsigned index)
{
	unsigned p;

	if (!f || !f->thread)
		return 0;
	p = swi_pointer_size(f->thread->arch);
	return f->addr + swi_frame_fields_offset(p) + (uint64_t)index * p;
}

SW_API sw_status sw_frame_read_field(const sw_frame_view *f, unsigned index, uint64_t *out)
{
	uint64_t addr;
	unsigned p;

	if (!f || !f->thread || !out)
		return SW_E_INVAL;
	p = swi_pointer_size(f->thread->arch);
	addr = f->addr + swi_frame_fields_offset(p) + (uint64_t)index * p;
	if (addr < f->addr)
		return SW_E_BADFRAME;       /* wrapped around: a hostile address */
	return swi_read_ptr(f->thread->memory, p, addr, out);
}

sw_status swi_frame_read(const sw_thread *t, uint64_t addr, sw_frame_view *view,
                         const sw_frame_ops **ops)
{
	unsigned p = swi_pointer_size(t->arch);
	unsigned char raw[16];
	sw_status st;

	if (p != 4 && p != 8)
		return SW_E_UNSUPPORTED;
	/* A Frame lives on the walked thread's stack, aligned to a pointer. */
	if ((addr & (p - 1)) || addr < t->stack_lo || addr >= t->stack_hi ||
	    t->stack_hi - addr < p + 8)
		return SW_E_BADFRAME;
	/* Constant sizes: the copy is then two loads, not a call. */
	st = p == 8 ? swi_read(t->memory, addr, raw, 16) : swi_read(t->memory, addr, raw, 12);
	if (st != SW_OK)
		return st;
	view->addr = addr;
	view->next = swi_load_le(raw, p);
	view->type = (uint32_t)swi_load_le(raw + p, 4);
	view->attributes = (uint32_t)swi_load_le(raw + p + 4, 4);
	view->thread = t;
	*ops = sw_frame_type_ops(view->type);
	return *ops ? SW_OK : SW_E_BADFRAME;
}

sw_status swi_frame_protected_roots(const sw_frame_view *f, unsigned array, unsigned count,
                                    int (*fn)(void *data, uint64_t slot, uint32_t flags),
                                    void *data)
{
	unsigned p = swi_pointer_size(f->thread->arch);
	uint64_t base, n, slot;
	sw_status st;

	if ((st = sw_frame_read_field(f, array, &base)) != SW_OK ||
	    (st = sw_frame_read_field(f, count, &n)) != SW_OK)
		return st;
	if (base == 0 || n == 0)
		return SW_OK;
	if (n > SWI_FRAME_MAX_PROTECTED || base > UINT64_MAX - n * p)
		return SW_E_BADFRAME;
	for (uint64_t i = 0; i < n; i++) {
		if ((st = swi_read_ptr(f->thread->memory, p, base + i * p, &slot)) != SW_OK)
			return st;
		if (fn(data, slot, 0))
			break;
	}
	return SW_OK;
}
