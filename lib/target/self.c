/*
 * self.c - the calling thread as a walk target.  Host-only: it asks the C
 * library where this thread's stack is.
 */
#define _GNU_SOURCE
#include "config.h"
#include <pthread.h>
#include "util.h"

static sw_status self_stack_bounds(uint64_t *lo, uint64_t *hi)
{
#ifdef HAVE_PTHREAD_GETATTR_NP
	pthread_attr_t attr;
	void *addr;
	size_t size;

	if (pthread_getattr_np(pthread_self(), &attr) != 0)
		return SW_E_UNSUPPORTED;
	if (pthread_attr_getstack(&attr, &addr, &size) != 0) {
		pthread_attr_destroy(&attr);
		return SW_E_UNSUPPORTED;
	}
	pthread_attr_destroy(&attr);
	*lo = (uintptr_t)addr;
	*hi = (uintptr_t)addr + size;
	return SW_OK;
#else
	SWI_UNUSED(lo); SWI_UNUSED(hi);
	return SW_E_UNSUPPORTED;
#endif
}

SW_API sw_status sw_thread_init_self(sw_thread *t, const sw_codemap *map,
                                     sw_memory *mem, sw_frame **head)
{
	uint64_t lo, hi;
	sw_status st;

	if (!t || !map || !mem)
		return SW_E_INVAL;
	if (sw_arch_host() == SW_ARCH_NONE)
		return SW_E_UNSUPPORTED;
	st = self_stack_bounds(&lo, &hi);
	if (st != SW_OK)
		return st;
	st = sw_memory_init_local(mem, lo, hi, 0);
	if (st != SW_OK)
		return st;
	if (head) {
		st = sw_memory_local_allow(mem, (uintptr_t)head, (uintptr_t)head + sizeof *head);
		if (st != SW_OK)
			return st;
	}
	return sw_thread_init(t, sw_arch_host(), map, mem, (uintptr_t)head, lo, hi);
}
