/* stopped_target.c - the thread list and mapping table of a stopped target (stopped_target.h). */
#include <stdlib.h>
#include "array_grow.h"
#include "stopped_target.h"

sw_status swi_thread_regs_reserve(struct swi_thread_regs **threads, size_t n, size_t *cap,
                                  size_t limit)
{
	if (n < *cap)
		return SW_OK;
	if (n >= limit)
		return SW_E_LIMIT;
	return swi_array_grow((void **)threads, cap, n + 1, sizeof **threads);
}

sw_status swi_thread_regs_get(const struct swi_thread_regs *threads, size_t n, unsigned index,
                              sw_context *ctx, int *tid)
{
	if (!ctx || index >= n)
		return SW_E_INVAL;
	*ctx = threads[index].ctx;
	if (tid)
		*tid = threads[index].tid;
	return SW_OK;
}

const void *swi_mapping_find(const void *table, size_t n, size_t stride, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const sw_mapped_file *m = (const void *)((const char *)table + mid * stride);

		if (addr < m->start)
			hi = mid;
		else if (addr >= m->end)
			lo = mid + 1;
		else
			return m;
	}
	return NULL;
}
