/* thread.c - describing the thread a walk runs over. */
#include "util.h"
#include "arch.h"

SW_API sw_status sw_thread_init(sw_thread *t, sw_arch arch, const sw_codemap *map,
                                const sw_memory *mem, uint64_t frame_head,
                                uint64_t stack_lo, uint64_t stack_hi)
{
	const struct swi_arch *a = swi_arch_get(arch);

	if (!t || !map || !mem || !mem->read || stack_lo >= stack_hi)
		return SW_E_INVAL;
	if (!a)
		return SW_E_UNSUPPORTED;
	memset(t, 0, sizeof *t);
	t->arch = arch;
	t->codemap = map;
	t->memory = mem;
	t->frame_head = frame_head;
	t->stack_lo = stack_lo;
	t->stack_hi = stack_hi;
	t->ptrauth_mask = a->ptrauth_mask;
	return SW_OK;
}
