/*
 * codemap_page.h (internal) - the code map's entries and page nodes, and
 * the search inside a node (the read side, inline for lookups).
 *
 * A page node lists, sorted by start, every method that overlaps one
 * 4 KiB page of code; codemap.c finds it by hashing the page and
 * explains how nodes change under lock-free readers.  The writer's
 * operations on nodes are codemap_page.c's.
 */
#ifndef SW_LIB_CODEMAP_PAGE_H
#define SW_LIB_CODEMAP_PAGE_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stackwalk/codemap.h>
#include "swu_format.h"
#include "codemap_slab.h"

#define CODEMAP_PAGE_SHIFT 12
#define CODEMAP_PAGE_MASK  ((1 << CODEMAP_PAGE_SHIFT) - 1)
/*
 * A registered method.  Immutable once published; the map owns it.
 *
 * It keeps only what its page items (below) and its shape (the body
 * rule's shape, codemap_shapes.h, kept once per map) do not: a lookup
 * copies the method out into an sw_code_info and its body rule
 * (swi_codemap_lookup), with the start and size from the item it found.
 * So a method costs this header, its blob and a 16-byte item in each page
 * it spans, where an sw_code_info, a body rule and saved[] cost 100 bytes
 * and more.
 *
 * The header ends at CODEMAP_ENTRY_HEAD, before sizeof's padding.  What
 * follows it, in this order, unaligned: the parent's handle when
 * CODEMAP_ENTRY_PARENT, the method's size as 32 bits when
 * CODEMAP_ENTRY_SIZE (else it is the blob's code size, as a JIT's blob
 * describes its method exactly), the body rule's lo, hi, lo2 and hi2 as
 * 32 bits when CODEMAP_ENTRY_RUNS, then the blob.  (The size serves a
 * copy made from the entry alone, entry_method_size; a lookup takes it
 * from the item it found.)  A JIT's blob has one run of
 * offsets below 64 KiB (the body between its prolog and first epilog), so
 * run[] holds it.
 */
struct codemap_entry {
	void *method;
	uint32_t unwind_size;           /* the blob's bytes */
	uint32_t bits;                  /* shape, SW_CODE_* flags, what follows (CODEMAP_ENTRY_*) */
	uint16_t run[2];                /* the body rule's lo and hi, unless RUNS */
};

#define CODEMAP_ENTRY_HEAD (offsetof(struct codemap_entry, run) + sizeof(((struct codemap_entry *)0)->run))

#define CODEMAP_ENTRY_SHAPE      0x003fffffu    /* the shape's number + 1; 0: no body rule */
#define CODEMAP_ENTRY_SIZE       (UINT32_C(1) << 22)    /* the size is not the blob's code size */
#define CODEMAP_ENTRY_PERSONALITY (UINT32_C(1) << 23)   /* SW_CODE_PERSONALITY, past the mask */
#define CODEMAP_ENTRY_FLAG_SHIFT 24             /* SW_CODE_* in bits 24-29 */
#define CODEMAP_ENTRY_FLAG_MASK  0x3fu
#define CODEMAP_ENTRY_RUNS       (UINT32_C(1) << 30)    /* a second run, or an offset above 0xffff */
#define CODEMAP_ENTRY_PARENT     (UINT32_C(1) << 31)    /* a parent handle follows */

_Static_assert((SW_CODE_FUNCLET | SW_CODE_FILTER | SW_CODE_NATIVE | SW_CODE_ANALYZED |
                SW_CODE_SIGNAL_TRAMPOLINE | SW_CODE_OUTERMOST) <= CODEMAP_ENTRY_FLAG_MASK,
               "every SW_CODE_* flag fits the entry's bits");

/* The parent handle, or NULL. */
static inline void *entry_parent(const struct codemap_entry *e)
{
	void *parent = NULL;

	if (e->bits & CODEMAP_ENTRY_PARENT)
		memcpy(&parent, (const uint8_t *)e + CODEMAP_ENTRY_HEAD, sizeof parent);
	return parent;
}

/* The size, when CODEMAP_ENTRY_SIZE. */
static inline const uint8_t *entry_size_field(const struct codemap_entry *e)
{
	return (const uint8_t *)e + CODEMAP_ENTRY_HEAD +
	       ((e->bits & CODEMAP_ENTRY_PARENT) ? sizeof(void *) : 0);
}

/* The four offsets, when CODEMAP_ENTRY_RUNS. */
static inline const uint8_t *entry_runs(const struct codemap_entry *e)
{
	return entry_size_field(e) + ((e->bits & CODEMAP_ENTRY_SIZE) ? sizeof(uint32_t) : 0);
}

/* The blob. */
static inline const uint8_t *entry_blob(const struct codemap_entry *e)
{
	return entry_runs(e) + ((e->bits & CODEMAP_ENTRY_RUNS) ? 4 * sizeof(uint32_t) : 0);
}

/* The bytes of entry `e` (its slab size). */
static inline size_t entry_size(const struct codemap_entry *e)
{
	return (size_t)(entry_blob(e) - (const uint8_t *)e) + e->unwind_size;
}

/* A method as page nodes list it: [start, end) and its entry. */
struct codemap_span {
	uint64_t start, end;
	const struct codemap_entry *entry;
};

/*
 * One method in one page node: [start, end) relative to the page's first
 * byte.  A method is at most SW_SWU_MAX_CODE_SIZE (2^30) bytes long, so
 * both fit 32 bits even for a method that begins pages earlier.  end is
 * the only field a writer changes after publishing: set to start, the
 * item is dead (removed in place).
 */
struct codemap_item {
	int32_t start;
	_Atomic int32_t end;
	const struct codemap_entry *entry;
};

/* The methods overlapping one page, sorted by start. */
struct codemap_page {
	uint64_t page;
	_Atomic uint32_t n;             /* items, dead ones included; only grows */
	uint16_t dead;                  /* items removed in place (writer only) */
	uint16_t cap;                   /* items there is room for (writer only) */
	struct codemap_item item[];
};

/* Nodes are made with room for a multiple of this many items. */
#define CODEMAP_NODE_ROOM 4

/* At most one method reaches into a page from before and the others are
 * at least a byte long, and a node's room is that rounded up: dead and
 * cap fit 16 bits. */
_Static_assert((1 << CODEMAP_PAGE_SHIFT) + 1 + CODEMAP_NODE_ROOM <= UINT16_MAX,
               "a node's items fit 16 bits");

/* The slab's kinds of objects (codemap_slab.h). */
enum { CODEMAP_SLAB_ENTRY, CODEMAP_SLAB_PAGE };

/* Where a page had a node that is gone; no address has page UINT64_MAX. */
extern const struct codemap_page swi_codemap_tombstone;

static inline uint64_t page_of(uint64_t addr)
{
	return addr >> CODEMAP_PAGE_SHIFT;
}

/* `addr` relative to the first byte of `page`; the caller keeps it within
 * a method's reach of the page, so that it fits 32 bits. */
static inline int32_t page_rel(uint64_t page, uint64_t addr)
{
	return (int32_t)(int64_t)(addr - (page << CODEMAP_PAGE_SHIFT));
}

static inline int item_dead(const struct codemap_item *it)
{
	return atomic_load_explicit(&it->end, memory_order_relaxed) == it->start;
}

/* The bytes of a page node with room for `cap` items. */
static inline size_t page_size(uint32_t cap)
{
	return sizeof(struct codemap_page) + sizeof(struct codemap_item) * cap;
}

/* How many items node `p` holds (writer side: only the writer changes it). */
static inline uint32_t page_count(const struct codemap_page *p)
{
	return atomic_load_explicit(&p->n, memory_order_relaxed);
}

/*
 * The index of the last item in item[lo, lo + n) with start <= addr, or
 * lo - 1 if none.  The search halves the range without a data-dependent
 * branch (the compiler makes the choice a conditional move): random
 * addresses would mispredict most steps of a branching binary search.
 */
static inline long items_search(const struct codemap_item *item, uint32_t lo, uint32_t n, int32_t addr)
{
	const struct codemap_item *base = item + lo;

	if (n == 0)
		return (long)lo - 1;
	while (n > 1) {
		uint32_t half = n / 2;

		base = base[half].start <= addr ? base + half : base;
		n -= half;
	}
	return base->start <= addr ? (long)(base - item) : (long)lo - 1;
}

/*
 * The index of the last item of `p` with start <= addr, or -1 if none,
 * among its first n items (a count the reader loaded with acquire).
 *
 * Methods tend to fill a page evenly, so the item holding an address is
 * usually the one at the same fraction of the array as the address is of
 * the page, or a neighbour (99% of the time with methods of 64 to 256
 * bytes): look there first, and binary search only the side the guess
 * missed on.  In a map larger than the caches, every step of a binary
 * search over the node is another cache miss; the guess is about one.
 */
static inline long page_search_in(const struct codemap_page *p, uint32_t n, int32_t addr)
{
	const struct codemap_item *item = p->item;
	uint32_t g;
	int32_t a = addr < 0 ? 0 : addr > CODEMAP_PAGE_MASK ? CODEMAP_PAGE_MASK : addr;

	if (n == 0)
		return -1;
	g = (uint32_t)(((uint64_t)(uint32_t)a * n) >> CODEMAP_PAGE_SHIFT);     /* < n */
	if (item[g].start <= addr) {
		if (g + 1 == n || item[g + 1].start > addr)
			return g;
		if (g + 2 == n || item[g + 2].start > addr)
			return g + 1;
		return items_search(item, g + 2, n - g - 2, addr);
	}
	if (g == 0 || item[g - 1].start <= addr)
		return (long)g - 1;
	return items_search(item, 0, g - 1, addr);
}

/* page_search_in with the node's own count. */
static inline long page_search(const struct codemap_page *p, int32_t addr)
{
	/* Acquire: the items below the count are written before it is raised. */
	return page_search_in(p, atomic_load_explicit(&p->n, memory_order_acquire), addr);
}

/*
 * The writer's side (codemap_page.c), under the map's writer lock; nodes
 * and entries come from `slab`.
 */

/* swi_codemap_page_with - a copy of `old` (NULL: an empty page) with `m`
 * inserted in order and without old's dead items; NULL if out of memory. */
struct codemap_page *swi_codemap_page_with(struct swi_slab *slab, const struct codemap_page *old,
                                           uint64_t page, const struct codemap_span *m);

/* swi_codemap_page_can_append - whether a method starting at `start`
 * (relative to the page) can be appended to `p` in place. */
int swi_codemap_page_can_append(const struct codemap_page *p, int32_t start);

/* swi_codemap_page_append - append `m` to `p` (can_append said yes) and
 * publish it. */
void swi_codemap_page_append(struct codemap_page *p, const struct codemap_span *m);

/* swi_codemap_page_overlaps - whether [start, end) overlaps a live method
 * listed in `p`. */
int swi_codemap_page_overlaps(const struct codemap_page *p, uint64_t start, uint64_t end);

/* swi_codemap_page_item_of - the live item of the method starting at
 * `start`, which `p` lists. */
struct codemap_item *swi_codemap_page_item_of(const struct codemap_page *p, uint64_t start);

/*
 * swi_codemap_page_after_remove - what removing `e` from `p` takes: NULL
 * when its item can die in place, or the node to install instead (the
 * tombstone, or a copy without the dead items once half of `p` would be
 * dead).  *failed on running out of memory.
 */
const struct codemap_page *swi_codemap_page_after_remove(struct swi_slab *slab,
                                                         const struct codemap_page *p,
                                                         const struct codemap_entry *e,
                                                         int *failed);

/* swi_codemap_page_free - free a node no reader can hold (NULL and the
 * tombstone: nothing). */
void swi_codemap_page_free(struct swi_slab *slab, const struct codemap_page *p);

#endif /* SW_LIB_CODEMAP_PAGE_H */
