/*
 * codemap_retire.c - batches of unlinked code-map objects, retired to the
 * epoch together and given back to the slab by the next writer (see
 * codemap_retire.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include "codemap_retire.h"

/* How far ahead a drain touches the objects it is about to free. */
#define RETIRE_PREFETCH_AHEAD 8

_Static_assert(offsetof(struct swi_retire_batch, link) == 0, "the epoch's link first");

void swi_retire_init(struct swi_retirer *r, struct swi_epoch *epoch,
                     void (*release)(void *ctx, uintptr_t obj), void *ctx)
{
	r->epoch = epoch;
	r->release = release;
	r->ctx = ctx;
	r->head = NULL;
	r->room = 0;
	r->spare = NULL;
	atomic_init(&r->reclaimed, NULL);
}

/*
 * The epoch's callback: no reader can hold the batch's objects any more.
 * It may run outside the writer lock, so it only pushes the batch on the
 * reclaimed stack (several threads may push at once; one pops all).
 */
static void batch_released(struct swi_epoch_node *n)
{
	struct swi_retirer *r = ((struct swi_retire_batch *)n)->owner;
	struct swi_epoch_node *head = atomic_load_explicit(&r->reclaimed, memory_order_relaxed);

	do
		n->next = head;
	while (!atomic_compare_exchange_weak_explicit(&r->reclaimed, &head, n,
	                                              memory_order_release, memory_order_relaxed));
}

sw_status swi_retire_reserve(struct swi_retirer *r, size_t k)
{
	while (r->room < k) {
		struct swi_retire_batch *b = r->spare ? r->spare : malloc(sizeof(*b));

		if (!b)
			return SW_E_NOMEM;      /* what was reserved stays, for later */
		r->spare = NULL;
		b->owner = r;
		b->n = 0;
		if (r->head) {
			b->next = r->head->next;
			r->head->next = b;
		} else {
			b->next = NULL;
			r->head = b;
		}
		r->room += SWI_RETIRE_BATCH;
	}
	return SW_OK;
}

/* Retire the head batch (every object in it is unlinked) and move on. */
static void retire_head(struct swi_retirer *r)
{
	struct swi_retire_batch *b = r->head;

	r->room -= SWI_RETIRE_BATCH - b->n;
	r->head = b->next;
	swi_epoch_retire(r->epoch, &b->link, batch_released);
}

void swi_retire_push(struct swi_retirer *r, uintptr_t obj)
{
	if (r->head->n == SWI_RETIRE_BATCH)
		retire_head(r);
	r->head->obj[r->head->n++] = obj;
	r->room--;
}

void swi_retire_flush(struct swi_retirer *r)
{
	if (r->head && r->head->n)
		retire_head(r);
}

/* Release the objects of a batch, and keep or free the batch. */
static void free_batch(struct swi_retirer *r, struct swi_retire_batch *b)
{
	unsigned n = b->n;

	for (unsigned i = 0; i < n && i < RETIRE_PREFETCH_AHEAD; i++)
		__builtin_prefetch((void *)(b->obj[i] & ~(uintptr_t)SWI_RETIRE_TAGS), 1);
	for (unsigned i = 0; i < n; i++) {
		if (i + RETIRE_PREFETCH_AHEAD < n)
			__builtin_prefetch((void *)(b->obj[i + RETIRE_PREFETCH_AHEAD] &
			                            ~(uintptr_t)SWI_RETIRE_TAGS), 1);
		r->release(r->ctx, b->obj[i]);
	}
	if (!r->spare) {
		b->n = 0;
		r->spare = b;
	} else {
		free(b);
	}
}

void swi_retire_drain(struct swi_retirer *r)
{
	struct swi_epoch_node *n;

	if (!atomic_load_explicit(&r->reclaimed, memory_order_relaxed))
		return;
	n = atomic_exchange_explicit(&r->reclaimed, NULL, memory_order_acquire);
	while (n) {
		struct swi_epoch_node *next = n->next;

		free_batch(r, (struct swi_retire_batch *)n);
		n = next;
	}
}

void swi_retire_destroy(struct swi_retirer *r)
{
	swi_retire_drain(r);
	while (r->head) {
		struct swi_retire_batch *next = r->head->next;

		free_batch(r, r->head);
		r->head = next;
	}
	free(r->spare);
	r->spare = NULL;
	r->room = 0;
}
