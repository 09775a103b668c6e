/*
 * codemap_window.h (internal) - the code map's page window: an array,
 * indexed by page, of the page nodes of one dense range of code.
 *
 * A JIT allocates its code in a few reserved regions, upwards, so that
 * most pages between its lowest and highest method hold code.  For those
 * pages the window replaces the hash table's probe: a lookup indexes the
 * array with the page, and the word it reads holds the node's address and
 * its item count together.  So it neither checks the node's page nor reads
 * the node's header, one load less on its way to the method (two cache
 * misses instead of three in a map larger than the caches), and the array
 * (8 bytes a page) is smaller than the table's slots.  Pages outside the
 * window, and every page when a map has none, go through the hash table,
 * which lists every page either way (codemap.c).
 *
 * Readers load the map's window once (acquire), then a word (acquire): a
 * writer stores a word with release after the node's items below its count
 * are written, as it raises a node's count.  A window that is replaced is
 * never written again, like a replaced table, and is retired to the epoch.
 *
 * The word packs the address in its low 48 bits: a node whose address
 * does not fit (tagged pointers, a 57-bit address space) turns the map's
 * window off for good.  On a host without lock-free 64-bit atomics there
 * is no window.
 */
#ifndef SW_LIB_CODEMAP_WINDOW_H
#define SW_LIB_CODEMAP_WINDOW_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include "epoch.h"
#include "codemap_page.h"

#if ATOMIC_LLONG_LOCK_FREE == 2
#define CODEMAP_WINDOW 1
#else
#define CODEMAP_WINDOW 0
#endif

#define CODEMAP_WINDOW_ADDR_BITS 48
#define CODEMAP_WINDOW_ADDR_MASK ((UINT64_C(1) << CODEMAP_WINDOW_ADDR_BITS) - 1)

/* A node's count fits the word's top 16 bits (codemap_page.h bounds it). */
_Static_assert((1 << CODEMAP_PAGE_SHIFT) + 1 + CODEMAP_NODE_ROOM <= UINT16_MAX, "a count in 16 bits");

struct codemap_window {
	struct swi_epoch_node retire;
	uint64_t lo;                    /* its first page */
	uint64_t len;                   /* pages */
	/* Of page lo + i: the node's address | its count << 48; 0: no node. */
	_Atomic uint64_t word[];
};

/* Does `w` (may be NULL) hold `page`?  Its index then. */
static inline int window_holds(const struct codemap_window *w, uint64_t page, uint64_t *index)
{
	if (!w || page - w->lo >= w->len)
		return 0;
	*index = page - w->lo;
	return 1;
}

static inline const struct codemap_page *window_node(uint64_t word)
{
	return (const struct codemap_page *)(uintptr_t)(word & CODEMAP_WINDOW_ADDR_MASK);
}

static inline uint32_t window_count(uint64_t word)
{
	return (uint32_t)(word >> CODEMAP_WINDOW_ADDR_BITS);
}

/* The word of node `p` (NULL or the tombstone: no node); 0 too if its address does not fit. */
static inline uint64_t window_word_of(const struct codemap_page *p)
{
	uint64_t a = (uint64_t)(uintptr_t)p;

	if (!p || p == &swi_codemap_tombstone || (a & ~CODEMAP_WINDOW_ADDR_MASK))
		return 0;
	return a | (uint64_t)page_count(p) << CODEMAP_WINDOW_ADDR_BITS;
}

/* Whether node `p` can be in a window at all. */
static inline int window_fits(const struct codemap_page *p)
{
	return !((uint64_t)(uintptr_t)p & ~CODEMAP_WINDOW_ADDR_MASK);
}

/*
 * The writer's side (codemap.c, under the map's writer lock).
 */

/* swi_window_new - a window of pages [lo, lo + len), every word 0; NULL if out of memory. */
struct codemap_window *swi_window_new(uint64_t lo, uint64_t len);

/* swi_window_free - an epoch callback for a retired window. */
void swi_window_free(struct swi_epoch_node *n);

/* swi_window_set - page's word, where `w` holds the page; release. */
void swi_window_set(struct codemap_window *w, uint64_t page, const struct codemap_page *p);

/*
 * swi_window_range - the pages a window should span so that it holds
 * [first, last], or 0 when a window that large would be too sparse for
 * `live` pages with nodes (more than CODEMAP_WINDOW_SPARSE pages a node).
 * It leaves room on both sides, so that growing code seldom needs a new
 * window.
 */
#define CODEMAP_WINDOW_SPARSE 4
#define CODEMAP_WINDOW_MAX_PAGES (UINT64_C(1) << 24)    /* 128 MiB of words, 64 GiB of code */
int swi_window_range(uint64_t first, uint64_t last, uint64_t live, uint64_t *lo, uint64_t *len);

#endif /* SW_LIB_CODEMAP_WINDOW_H */
