/*
 * epoch.c - the writer side of deferred reclamation (see epoch.h).
 */
#include <errno.h>
#include <sched.h>
#include <time.h>
#include "epoch.h"

/* A synchronize that has to wait yields this many times before sleeping. */
#define EPOCH_YIELDS 16
/* ... and then sleeps this long per round, in nanoseconds. */
#define EPOCH_SLEEP_NS 100000L

int swi_epoch_init(struct swi_epoch *ep)
{
	atomic_init(&ep->period, 0);
	atomic_init(&ep->readers0, 0);
	atomic_init(&ep->readers1, 0);
	ep->head = ep->tail = NULL;
	/* Stamps start at 1 and zero_seen at 0: nothing is free before a
	 * poll has looked at the counters. */
	ep->next_poll = 1;
	ep->zero_seen[0] = ep->zero_seen[1] = 0;
	return pthread_mutex_init(&ep->lock, NULL);
}

static void free_list(struct swi_epoch_node *n)
{
	while (n) {
		struct swi_epoch_node *next = n->next;

		n->free_fn(n);
		n = next;
	}
}

void swi_epoch_destroy(struct swi_epoch *ep)
{
	free_list(ep->head);
	ep->head = ep->tail = NULL;
	pthread_mutex_destroy(&ep->lock);
}

void swi_epoch_retire(struct swi_epoch *ep, struct swi_epoch_node *node,
                      void (*free_fn)(struct swi_epoch_node *node))
{
	node->free_fn = free_fn;
	node->next = NULL;
	pthread_mutex_lock(&ep->lock);
	/* The first poll that begins after this point may observe the
	 * counters on this node's behalf. */
	node->stamp = ep->next_poll;
	if (ep->tail)
		ep->tail->next = node;
	else
		ep->head = node;
	ep->tail = node;
	pthread_mutex_unlock(&ep->lock);
}

static uint64_t min_u64(uint64_t a, uint64_t b)
{
	return a < b ? a : b;
}

/*
 * One look at the counters, under the lock.  Returns the list of nodes
 * that are now safe to free (detached, to be freed outside the lock).
 */
static struct swi_epoch_node *poll_locked(struct swi_epoch *ep)
{
	uint64_t now = ep->next_poll++;
	unsigned period, cur, old;
	uint64_t safe;
	struct swi_epoch_node *done, *n, *last = NULL;

	/*
	 * Every unlink of a node retired so far happens before this fence;
	 * see swi_epoch_read_begin for the reader's half of the pairing.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	/* Only writers store E, and they hold the lock. */
	period = atomic_load_explicit(&ep->period, memory_order_relaxed);
	cur = period & 1u;
	old = cur ^ 1u;
	if (atomic_load_explicit(swi_epoch_counter(ep, old), memory_order_acquire) == 0) {
		ep->zero_seen[old] = now;
		/* The old parity has drained: send new readers there and let
		 * the current one drain in turn.  Flipping only now (not on
		 * every poll) is what guarantees progress under a steady
		 * stream of readers. */
		atomic_store_explicit(&ep->period, period + 1u, memory_order_relaxed);
	}
	if (atomic_load_explicit(swi_epoch_counter(ep, cur), memory_order_acquire) == 0)
		ep->zero_seen[cur] = now;

	safe = min_u64(ep->zero_seen[0], ep->zero_seen[1]);
	done = ep->head;
	for (n = ep->head; n && n->stamp <= safe; n = n->next)
		last = n;
	if (!last)
		return NULL;
	ep->head = last->next;
	if (!ep->head)
		ep->tail = NULL;
	last->next = NULL;
	return done;
}

void swi_epoch_poll(struct swi_epoch *ep)
{
	struct swi_epoch_node *done;

	pthread_mutex_lock(&ep->lock);
	/* Nothing retired: leave the counters alone. */
	done = ep->head ? poll_locked(ep) : NULL;
	pthread_mutex_unlock(&ep->lock);
	free_list(done);
}

void swi_epoch_synchronize(struct swi_epoch *ep)
{
	uint64_t target;
	struct swi_epoch_node *done;
	int finished;

	pthread_mutex_lock(&ep->lock);
	target = ep->next_poll;
	pthread_mutex_unlock(&ep->lock);

	for (unsigned round = 0;; round++) {
		pthread_mutex_lock(&ep->lock);
		done = poll_locked(ep);
		finished = min_u64(ep->zero_seen[0], ep->zero_seen[1]) >= target;
		pthread_mutex_unlock(&ep->lock);
		free_list(done);
		if (finished)
			return;
		if (round < EPOCH_YIELDS) {
			sched_yield();
		} else {
			struct timespec ts = { 0, EPOCH_SLEEP_NS };

			while (nanosleep(&ts, &ts) == -1 && errno == EINTR)
				;
		}
	}
}
