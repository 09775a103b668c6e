/*
 * codemap_slab.c - size-segregated free lists over bump-allocated blocks,
 * for code-map entries (see codemap_slab.h for why).
 */
#include <stdint.h>
#include <stdlib.h>
#include "codemap_slab.h"
#include "huge_pages.h"

/*
 * Under AddressSanitizer, memory not handed out is poisoned, so that a use
 * of an entry after its reclamation is caught as it would be with malloc.
 */
#if defined(__SANITIZE_ADDRESS__)
#define SLAB_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define SLAB_ASAN 1
#endif
#endif
#ifdef SLAB_ASAN
#include <sanitizer/asan_interface.h>
#define slab_poison(p, n)   ASAN_POISON_MEMORY_REGION((p), (n))
#define slab_unpoison(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define slab_poison(p, n)   ((void)(p), (void)(n))
#define slab_unpoison(p, n) ((void)(p), (void)(n))
#endif

/* A block's header; its objects follow. */
struct swi_slab_block {
	struct swi_slab_block *next;
	size_t size;                    /* bytes, this header included */
};

_Static_assert(sizeof(struct swi_slab_block) % SWI_SLAB_GRAIN == 0,
               "objects after the header keep their alignment");
/* A block's size says where it came from: blocks from malloc, doubled only
 * until one object fits, never outgrow SWI_SLAB_LAST_BLOCK. */
_Static_assert(SWI_SLAB_MAX + sizeof(struct swi_slab_block) <= SWI_SLAB_LAST_BLOCK &&
               SWI_SLAB_LAST_BLOCK < SWI_SLAB_HUGE_BLOCK,
               "no block from malloc is as large as a mapped one");

static int block_is_mapped(const struct swi_slab_block *b)
{
	return b->size == SWI_SLAB_HUGE_BLOCK;
}

void swi_slab_init(struct swi_slab *s)
{
	for (unsigned kind = 0; kind < SWI_SLAB_KINDS; kind++)
		for (size_t k = 0; k < sizeof s->free[0] / sizeof s->free[0][0]; k++)
			s->free[kind][k] = NULL;
	s->bump = s->end = NULL;
	s->blocks = NULL;
	s->next_block = SWI_SLAB_FIRST_BLOCK;
	s->live = 0;
	s->held = 0;
	s->mapped = 0;
}

void swi_slab_destroy(struct swi_slab *s)
{
	while (s->blocks) {
		struct swi_slab_block *next = s->blocks->next;

		slab_unpoison(s->blocks, s->blocks->size);
		if (block_is_mapped(s->blocks)) {
			swi_huge_unmap(s->blocks, SWI_SLAB_HUGE_BLOCK);
		} else {
			free(s->blocks);
		}
		s->blocks = next;
	}
	swi_slab_init(s);
}

static size_t round_grain(size_t size)
{
	return (size + SWI_SLAB_GRAIN - 1) & ~(size_t)(SWI_SLAB_GRAIN - 1);
}

/* Put `p` (handed out or poisoned, `rounded` bytes) on its free list. */
static void push_free(struct swi_slab *s, unsigned kind, void *p, size_t rounded)
{
	void **link = p;

	slab_unpoison(p, rounded);
	*link = s->free[kind][rounded / SWI_SLAB_GRAIN - 1];
	s->free[kind][rounded / SWI_SLAB_GRAIN - 1] = p;
	slab_poison(p, rounded);
}

/* A SWI_SLAB_HUGE_BLOCK block that one huge page can back (huge_pages.h), or NULL. */
static struct swi_slab_block *map_huge_block(void)
{
	return swi_huge_map(SWI_SLAB_HUGE_BLOCK);
}

/* Start a new block for an object of `rounded` bytes; 0 or -1. */
static int new_block(struct swi_slab *s, size_t rounded)
{
	size_t size = s->next_block;
	struct swi_slab_block *b = NULL;
	size_t tail = (size_t)(s->end - s->bump);

	/* A large slab: huge pages pay (see codemap_slab.h); else malloc. */
	if (s->held >= SWI_SLAB_HUGE_AFTER && (b = map_huge_block()) != NULL) {
		size = SWI_SLAB_HUGE_BLOCK;
		s->mapped += size;
	} else {
		while (size - sizeof(*b) < rounded)
			size *= 2;
		b = malloc(size);
		if (!b)
			return -1;
	}
	s->held += size;
	/* The old block's tail is too small for this object, not for others. */
	if (tail >= SWI_SLAB_GRAIN)
		push_free(s, 0, s->bump, tail);
	b->next = s->blocks;
	b->size = size;
	s->blocks = b;
	s->bump = (char *)(b + 1);
	s->end = (char *)b + size;
	slab_poison(s->bump, (size_t)(s->end - s->bump));
	if (s->next_block < SWI_SLAB_LAST_BLOCK)
		s->next_block *= 2;
	return 0;
}

void *swi_slab_alloc(struct swi_slab *s, unsigned kind, size_t size)
{
	size_t rounded = round_grain(size);
	void *p;

	if (size == 0 || size > SWI_SLAB_MAX)
		return size ? malloc(size) : NULL;
	p = s->free[kind][rounded / SWI_SLAB_GRAIN - 1];
	if (p) {
		slab_unpoison(p, rounded);
		s->free[kind][rounded / SWI_SLAB_GRAIN - 1] = *(void **)p;
		s->live++;
		return p;
	}
	if ((size_t)(s->end - s->bump) < rounded && new_block(s, rounded) != 0)
		return NULL;
	p = s->bump;
	s->bump += rounded;
	slab_unpoison(p, rounded);
	s->live++;
	return p;
}

void swi_slab_free(struct swi_slab *s, unsigned kind, void *p, size_t size)
{
	if (!p)
		return;
	if (size > SWI_SLAB_MAX) {
		free(p);
		return;
	}
	push_free(s, kind, p, round_grain(size));
	/* Nothing left in the blocks: give them all back. */
	if (--s->live == 0)
		swi_slab_destroy(s);
}
