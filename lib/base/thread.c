/* thread.c - describing the thread a walk runs over. */
#include "util.h"
#include "arch.h"

SW_API sw_status sw_thread_init(sw_thread *t, sw_arch arch, const sw_codemap *map,
                                const sw_memory *mem, uint64_t frame_head,
                                uint64_t stack_lo, uint64_t stack_hi)
{
	if (!t || !map || !mem || !mem->read || stack_lo >= stack_hi)
		return SW_E_INVAL;
	if (!swi_arch_get(arch))
		return SW_E_UNSUPPORTED;
	memset(t, 0, sizeof *t);
	t->arch = arch;
	t->codemap = map;
	t->memory = mem;
	t->frame_head = frame_head;
	t->stack_lo = stack_lo;
	t->stack_hi = stack_hi;
	t->ptrauth_mask = arch == SW_ARCH_ARM64 ? SW_ARM64_PTRAUTH_MASK : 0;
	return SW_OK;
}
