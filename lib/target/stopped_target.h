/*
 * stopped_target.h (internal) - what both debugger targets keep of a
 * stopped process, and the lookups over it: a core file (core_file.c)
 * and a live process under ptrace (ptrace.c) each hold a list of threads
 * with their registers, and a table of mappings sorted by address.
 */
#ifndef SW_LIB_TARGET_STOPPED_TARGET_H
#define SW_LIB_TARGET_STOPPED_TARGET_H

#include <stddef.h>
#include <stackwalk.h>

/* One thread as the target stopped it. */
struct swi_thread_regs {
	sw_context ctx;
	int tid;
	int pending_signal;     /* ptrace: arrived while attached, handed back at detach */
};

/*
 * Make room for threads[n] in *threads (capacity *cap), for at most
 * `limit` threads: SW_OK, SW_E_LIMIT or SW_E_NOMEM (*threads unchanged).
 */
sw_status swi_thread_regs_reserve(struct swi_thread_regs **threads, size_t n, size_t *cap,
                                  size_t limit);

/*
 * Thread `index` of the `n` in `threads`: its registers into *ctx, its id
 * into *tid (may be NULL).  SW_E_INVAL for a NULL ctx or an index past n.
 */
sw_status swi_thread_regs_get(const struct swi_thread_regs *threads, size_t n, unsigned index,
                              sw_context *ctx, int *tid);

/*
 * The element of `table` whose mapping holds `addr`, or NULL, as bsearch()
 * finds one: `table` has `n` elements of `stride` bytes, each starting
 * with a sw_mapped_file, sorted by address and not overlapping.
 */
const void *swi_mapping_find(const void *table, size_t n, size_t stride, uint64_t addr);

#endif
