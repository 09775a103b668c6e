/*
 * huge_pages.c - mappings aligned and advised for transparent huge pages
 * (see huge_pages.h for why).
 */
#include <stdint.h>
#include <sys/mman.h>
#include "huge_pages.h"

#if defined(__SANITIZE_ADDRESS__)
#define HUGE_LSAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define HUGE_LSAN 1
#endif
#endif
#ifdef HUGE_LSAN
#include <sanitizer/lsan_interface.h>
/*
 * LeakSanitizer looks for pointers in malloc's blocks, not in our mappings,
 * yet a mapping may hold the only pointer to a malloc'd object (the code
 * map's slab blocks are listed through them): without this, a map alive
 * at exit would report its malloc'd blocks as leaked.
 */
#define huge_root(p, n)   __lsan_register_root_region((p), (n))
#define huge_unroot(p, n) __lsan_unregister_root_region((p), (n))
#else
#define huge_root(p, n)   ((void)(p), (void)(n))
#define huge_unroot(p, n) ((void)(p), (void)(n))
#endif

void *swi_huge_map(size_t size)
{
	const size_t huge = SWI_HUGE_PAGE;
	char *p, *aligned;

	if (size == 0 || size % huge || size > SIZE_MAX - huge)
		return NULL;
	/* mmap aligns only to pages: map a huge page more and trim both ends. */
	p = mmap(NULL, size + huge, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		return NULL;
	aligned = (char *)(((uintptr_t)p + huge - 1) & ~(uintptr_t)(huge - 1));
	if (aligned > p)
		munmap(p, (size_t)(aligned - p));
	if (aligned + size < p + size + huge)
		munmap(aligned + size, (size_t)(p + size + huge - (aligned + size)));
#ifdef MADV_HUGEPAGE
	/* Only a hint: where THP is off, the mapping is simply 4 KiB pages. */
	madvise(aligned, size, MADV_HUGEPAGE);
#endif
	huge_root(aligned, size);
	return aligned;
}

void swi_huge_unmap(void *p, size_t size)
{
	if (!p)
		return;
	huge_unroot(p, size);
	munmap(p, size);
}
