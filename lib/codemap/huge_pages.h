/*
 * huge_pages.h (internal) - memory mapped for transparent huge pages.
 *
 * The code map grows to tens of megabytes for a million methods, read at
 * random: on x86-64 each 4 KiB page is a TLB entry, and a TLB miss walks
 * the page tables (twice over in a virtual machine).  A 2 MiB page covers
 * 512 of them.  Linux backs an anonymous mapping with huge pages when it
 * is aligned to 2 MiB and advised (MADV_HUGEPAGE) where THP is in
 * "madvise" mode, as Debian's kernels are; elsewhere the advice is
 * ignored and the mapping is ordinary pages.  Writers only: this maps.
 */
#ifndef SW_LIB_HUGE_PAGES_H
#define SW_LIB_HUGE_PAGES_H

#include <stddef.h>

#define SWI_HUGE_PAGE (2u << 20)        /* x86-64's and arm64's (4 KiB granule) huge page */

/* swi_huge_round - `size` rounded up to whole huge pages. */
static inline size_t swi_huge_round(size_t size)
{
	return (size + SWI_HUGE_PAGE - 1) & ~(size_t)(SWI_HUGE_PAGE - 1);
}

/*
 * swi_huge_map - `size` bytes (a multiple of SWI_HUGE_PAGE), zeroed,
 * aligned to SWI_HUGE_PAGE and advised for huge pages; NULL if the system
 * will not map them.
 */
void *swi_huge_map(size_t size);

/* swi_huge_unmap - give back what swi_huge_map(size) gave. */
void swi_huge_unmap(void *p, size_t size);

#endif /* SW_LIB_HUGE_PAGES_H */
