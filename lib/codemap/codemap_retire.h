/*
 * codemap_retire.h (internal) - retiring what code-map writers unlink, in
 * batches, and giving it back to the slab.
 *
 * A writer that unlinks an entry or a page node may not free it while a
 * reader can hold it (epoch.h).  Retiring each object on its own would cost
 * the epoch's lock and a 24-byte link in every object.  Instead the writer
 * drops the objects' addresses into a batch (64 of them), and the batch is
 * retired to the epoch as one node: when it is full, at each reclamation
 * poll, and before a synchronize.
 *
 * The objects come from the writers' slabs, which only a writer holding the
 * map's lock may touch; but the epoch frees a batch on whichever writer's
 * thread polls, maybe outside that lock.  So the epoch's callback only
 * pushes the batch on a lock-free stack (`reclaimed`), and the next writer
 * gives its objects back (swi_retire_drain, through `release`).  Those
 * objects were unlinked in random order and are cold: the drain touches a
 * few ahead to overlap their cache misses.
 *
 * Everything but the callback runs under the map's writer lock.
 */
#ifndef SW_LIB_CODEMAP_RETIRE_H
#define SW_LIB_CODEMAP_RETIRE_H

#include <stdatomic.h>
#include <stdint.h>
#include <stackwalk/status.h>
#include "epoch.h"

#define SWI_RETIRE_BATCH 64
#define SWI_RETIRE_TAGS  7u             /* low bits of an object's address free for a tag */

struct swi_retirer;

struct swi_retire_batch {
	struct swi_epoch_node link;     /* first: the epoch's link, then reclaimed's */
	struct swi_retirer *owner;
	struct swi_retire_batch *next;  /* reserved batches after the one being filled */
	unsigned n;
	uintptr_t obj[SWI_RETIRE_BATCH]; /* addresses, tagged in SWI_RETIRE_TAGS */
};

struct swi_retirer {
	struct swi_epoch *epoch;
	/* Free a retired object, given its tagged address; no reader holds it. */
	void (*release)(void *ctx, uintptr_t obj);
	void *ctx;
	struct swi_retire_batch *head;  /* being filled; reserved empty ones follow */
	size_t room;                    /* free places in head and the reserved ones */
	struct swi_retire_batch *spare; /* an empty batch kept for reuse */
	_Atomic(struct swi_epoch_node *) reclaimed;     /* batches no reader can hold */
};

/* swi_retire_init - a retirer calling release(ctx, obj) once `epoch` allows. */
void swi_retire_init(struct swi_retirer *r, struct swi_epoch *epoch,
                     void (*release)(void *ctx, uintptr_t obj), void *ctx);

/*
 * swi_retire_reserve - make sure `k` more objects can be pushed without
 * allocating, so that a change can fail before it publishes anything.
 * SW_OK, or SW_E_NOMEM with nothing changed.
 */
sw_status swi_retire_reserve(struct swi_retirer *r, size_t k);

/* swi_retire_push - retire an unlinked object (8-byte aligned, maybe
 * tagged); room was reserved. */
void swi_retire_push(struct swi_retirer *r, uintptr_t obj);

/* swi_retire_flush - hand the batch being filled to the epoch. */
void swi_retire_flush(struct swi_retirer *r);

/* swi_retire_drain - release what the epoch no longer protects. */
void swi_retire_drain(struct swi_retirer *r);

/*
 * swi_retire_destroy - free every object retired, released or not, and the
 * batches.  After swi_epoch_destroy; no reader may remain.
 */
void swi_retire_destroy(struct swi_retirer *r);

#endif /* SW_LIB_CODEMAP_RETIRE_H */
