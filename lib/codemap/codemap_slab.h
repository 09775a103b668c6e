/*
 * codemap_slab.h (internal) - the allocator of code-map entries.
 *
 * A code map holds up to millions of small entries (an sw_code_info, the
 * body rule and the blob: 100 to 200 bytes each), allocated and freed one
 * at a time, and freed in whatever order the runtime unloads code.  malloc
 * spends 8 to 24 bytes on each for its header and rounding, and its free
 * coalesces with neighbours that, in random order, are cold: most of the
 * cost of a removal from a large map.  This allocator instead:
 *
 *   - carves objects, rounded to 8 bytes, from blocks it takes from malloc
 *     (1 KiB at first, doubling to 16 KiB, so a small map wastes little);
 *   - once its blocks hold SWI_SLAB_HUGE_AFTER bytes, takes 2 MiB blocks
 *     aligned to 2 MiB straight from mmap instead, and asks for transparent
 *     huge pages on them (see below);
 *   - keeps freed objects on one list per kind and size (8, 16, ...
 *     SWI_SLAB_MAX bytes), linked through their first word, and reuses
 *     them first;
 *   - hands objects larger than SWI_SLAB_MAX to malloc.
 *
 * The price: memory freed to one size is reused only for that size, and
 * blocks go back to malloc only once every object is free again (or when
 * the slab is destroyed).  A runtime that unloads code and loads code of
 * similar sizes (the usual case) reuses it, one that unloads all of it
 * gets it all back, and in between the slab never holds more than the
 * peak of each size.
 *
 * Kinds (the code map's entries and page nodes) share blocks but not free
 * lists.  Sharing blocks keeps what is allocated together (a method's
 * entry and its page's node) together, as malloc would; separate free lists
 * keep a freed node from taking an entry's place far from its neighbours,
 * or the other way round, which matters to lookups in a map larger than
 * the caches (measured on 1M methods: with one list per size for both
 * kinds, lookups were 50% slower).
 *
 * Why huge pages: in a map larger than the caches, a lookup is a few
 * dependent loads at random places (the table's slot, the page node, the
 * entry), and every one may miss the TLB, which under nested paging (a
 * guest VM) costs more than the cache miss itself.  One 2 MiB page holds
 * ~15k entries where a 4 KiB page holds 30, and one fault maps all of them
 * (a fault costs thousands of cycles in a guest).  With THP in "madvise"
 * mode (the usual default) only memory given MADV_HUGEPAGE gets them, and
 * malloc gives none.  Small maps do not pay for it: a 2 MiB block is taken
 * only once the slab already holds SWI_SLAB_HUGE_AFTER bytes, so at most
 * half as much again is untouched tail in the last block, less as the map
 * grows.  Without THP (or if mmap fails) the slab works as before, on 4 KiB
 * pages.  Measured in a KVM guest, 1M methods (bench-walk --only map, best
 * of 14 runs): 8x fewer page faults, registration 2.3M/s -> 3.0M/s,
 * lookups 206 -> 196 ns (median 262 -> 227), 7 fewer resident bytes per
 * method (no malloc header); at 100k methods, 13 more (the last block).
 *
 * Not thread-safe: the code map calls it under its writer lock.  Nothing
 * here is on the read side (so the syscalls above are allowed).
 */
#ifndef SW_LIB_CODEMAP_SLAB_H
#define SW_LIB_CODEMAP_SLAB_H

#include <stddef.h>

#define SWI_SLAB_GRAIN       8          /* object sizes are multiples of this */
#define SWI_SLAB_MAX         1024       /* larger objects come from malloc */
#define SWI_SLAB_FIRST_BLOCK 1024
#define SWI_SLAB_LAST_BLOCK  16384      /* at most 16 KiB unused in the last block */
#define SWI_SLAB_KINDS       2          /* kinds of objects with lists of their own */
#define SWI_SLAB_HUGE_BLOCK  (2u << 20) /* a mapped block: one x86-64/arm64 huge page */
#define SWI_SLAB_HUGE_AFTER  (4u << 20) /* bytes in blocks before blocks are mapped */

struct swi_slab_block;

struct swi_slab {
	/* free[kind][k]: freed objects of that kind and (k + 1) * GRAIN bytes */
	void *free[SWI_SLAB_KINDS][SWI_SLAB_MAX / SWI_SLAB_GRAIN];
	char *bump, *end;               /* the current block's unused tail */
	struct swi_slab_block *blocks;  /* every block, newest first */
	size_t next_block;              /* bytes of the next block */
	size_t live;                    /* objects from blocks not freed yet */
	size_t held;                    /* bytes in every block */
	size_t mapped;                  /* of which in blocks from mmap */
};

/* swi_slab_init - an empty slab; it allocates nothing yet. */
void swi_slab_init(struct swi_slab *s);

/* swi_slab_destroy - give every block back; objects still allocated from
 * blocks become invalid (larger ones, from malloc, must be freed first). */
void swi_slab_destroy(struct swi_slab *s);

/* swi_slab_alloc - `size` bytes (> 0), 8-byte aligned, for an object of
 * `kind` (< SWI_SLAB_KINDS), or NULL. */
void *swi_slab_alloc(struct swi_slab *s, unsigned kind, size_t size);

/* swi_slab_free - give back `p` (NULL: nothing), allocated with this kind
 * and size. */
void swi_slab_free(struct swi_slab *s, unsigned kind, void *p, size_t size);

#endif /* SW_LIB_CODEMAP_SLAB_H */
