/*
 * epoch.h (internal) - deferred reclamation with an async-signal-safe
 * reader side.
 *
 * Lock-free readers follow pointers that a writer may unlink at any time;
 * the writer must not free what it unlinked while a reader may still hold
 * it.  This is the classic two-counter epoch scheme:
 *
 *   - a global period E whose parity (E & 1) tells readers which of two
 *     counters to enter;
 *   - a reader adds one to readers[E & 1] on entry and subtracts one from
 *     the same counter on exit (the parity is its token, so sections nest
 *     and may start in a signal handler that interrupted another);
 *   - a writer unlinks an object, then retires it.  An object retired at
 *     time U may be freed once, after U, readers[0] and readers[1] have
 *     each been seen at zero: every reader that could have found it has
 *     left by then, and every reader that entered later cannot find it.
 *   - so that a steady stream of overlapping readers cannot keep a counter
 *     above zero forever, the writer flips E once the old parity has
 *     drained: new readers go to the other counter and the old one empties.
 *
 * The reader side is two atomic read-modify-writes and a fence: no lock,
 * no allocation, no system call.  The writer side (retire, poll,
 * synchronize) serializes on a mutex of its own and never runs in a signal
 * handler.
 *
 * Why not per-thread reader records (userspace RCU style)?  They need
 * registration and thread-local storage, neither of which a signal handler
 * interrupting an unknown thread can count on.  Two shared counters cost one
 * contended cache line per read section; walks hold one section for their
 * whole length, so that cost is paid once per walk, not per frame.
 */
#ifndef SW_LIB_EPOCH_H
#define SW_LIB_EPOCH_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define SWI_CACHE_LINE 64

/*
 * The link a retired object carries.  It lives in the object itself (no
 * allocation when retiring, so retiring cannot fail) in a field that
 * readers never look at.
 */
struct swi_epoch_node {
	struct swi_epoch_node *next;
	void (*free_fn)(struct swi_epoch_node *node);
	uint64_t stamp;                 /* the first poll that may free it */
};

struct swi_epoch {
	/* Reader side: each on its own cache line so readers entering one
	 * counter do not bounce the line holding the other or E. */
	_Alignas(SWI_CACHE_LINE) atomic_uint period;            /* E */
	_Alignas(SWI_CACHE_LINE) atomic_ulong readers0;
	_Alignas(SWI_CACHE_LINE) atomic_ulong readers1;

	/* Writer side, under `lock`. */
	_Alignas(SWI_CACHE_LINE) pthread_mutex_t lock;
	struct swi_epoch_node *head, *tail;     /* retired, oldest first */
	uint64_t next_poll;             /* number of the next poll */
	uint64_t zero_seen[2];          /* last poll that saw readers[p] == 0 */
};

/* swi_epoch_init - an epoch with nothing retired; 0 or an errno value. */
int swi_epoch_init(struct swi_epoch *ep);

/* swi_epoch_destroy - free everything still retired; no reader may remain. */
void swi_epoch_destroy(struct swi_epoch *ep);

static inline atomic_ulong *swi_epoch_counter(struct swi_epoch *ep, unsigned parity)
{
	return parity ? &ep->readers1 : &ep->readers0;
}

/*
 * swi_epoch_read_begin - enter a read section; returns the token for
 * swi_epoch_read_end.  Async-signal-safe and nestable.
 */
static inline unsigned swi_epoch_read_begin(struct swi_epoch *ep)
{
	unsigned token = atomic_load_explicit(&ep->period, memory_order_relaxed) & 1u;

	atomic_fetch_add_explicit(swi_epoch_counter(ep, token), 1, memory_order_relaxed);
	/*
	 * Pairs with the fence in swi_epoch_poll (store-buffering / Dekker):
	 * either the writer sees our increment, or every load we make after
	 * this fence sees what the writer unlinked before its fence.  A
	 * seq_cst RMW alone does not order our later acquire loads in the C11
	 * model, so the fence is explicit.
	 */
	atomic_thread_fence(memory_order_seq_cst);
	return token;
}

/* swi_epoch_read_end - leave the section entered with `token`. */
static inline void swi_epoch_read_end(struct swi_epoch *ep, unsigned token)
{
	/* Release: our reads of protected memory happen before the writer's
	 * observation of zero and hence before the free. */
	atomic_fetch_sub_explicit(swi_epoch_counter(ep, token & 1u), 1, memory_order_release);
}

/*
 * swi_epoch_retire - `node`'s object is no longer reachable by new readers;
 * call free_fn(node) once no reader can hold it.  The object must have been
 * unlinked (with a store) before this call.
 */
void swi_epoch_retire(struct swi_epoch *ep, struct swi_epoch_node *node,
                      void (*free_fn)(struct swi_epoch_node *node));

/* swi_epoch_poll - free whatever is safe to free now; never waits. */
void swi_epoch_poll(struct swi_epoch *ep);

/*
 * swi_epoch_synchronize - wait until everything retired before the call
 * has been freed.  Must not be called inside a read section of `ep`
 * (it would wait for itself).
 */
void swi_epoch_synchronize(struct swi_epoch *ep);

#endif /* SW_LIB_EPOCH_H */
