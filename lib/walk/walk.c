/*
 * walk.c - the walks that run the iterator to its end on its own step
 * (iter.c: swi_iter_run): sw_walk_frames, the CLR's StackWalkFramesEx,
 * one callback per frame; sw_walk_frames_cached, the same with the step's
 * rules kept from one walk to the next; and sw_backtrace, a profiler's
 * ADDRESSES_ONLY walk into arrays of IPs and SPs.  They differ only in the
 * sink the run reports to.
 *
 * sw_backtrace takes no allocation, lock or system call: a signal handler
 * may run it.
 */
#include <limits.h>
#include "iter.h"

_Static_assert(sizeof(struct swi_rule_table) <= sizeof(sw_walk_cache), "sw_walk_cache too small");
_Static_assert(_Alignof(struct swi_rule_table) <= _Alignof(sw_walk_cache), "sw_walk_cache misaligned");

static struct swi_rule_table *rule_table_of(sw_walk_cache *c)
{
	return (struct swi_rule_table *)(void *)c;
}

SW_API void sw_walk_cache_init(sw_walk_cache *c)
{
	if (c)
		swi_rule_table_init(rule_table_of(c));
}

/*
 * Set up the walk of `t` and its cache (may be NULL) into `it`: SW_OK, or
 * why it cannot start (and then there is nothing to end).
 */
static sw_status walk_begin(sw_iter *it, const sw_thread *t, const sw_context *start, uint64_t start_frame,
                            unsigned flags, sw_walk_cache *cache)
{
	sw_status st = sw_iter_init(it, t, start, start_frame, flags);

	if (st != SW_OK)
		return st;
	if (cache && (st = swi_iter_use_cache((struct swi_iter *)(void *)it, rule_table_of(cache))) != SW_OK)
		sw_iter_end(it);
	return st;
}

/* Run it into `sink` and end it: swi_iter_run's result, the error in *err. */
static int walk_run(sw_iter *it, struct swi_sink *sink, sw_walk_error *err)
{
	int r = swi_iter_run((struct swi_iter *)(void *)it, sink);

	if (r < 0 && err)
		sw_iter_error(it, err);
	sw_iter_end(it);
	return r;
}

SW_API sw_walk_action sw_walk_frames_cached(const sw_thread *t, const sw_context *start,
                                            uint64_t start_frame, sw_walk_callback cb, void *data,
                                            unsigned flags, sw_walk_cache *cache, sw_walk_error *err)
{
	struct swi_sink sink = { .cb = cb, .data = data };
	sw_iter it;
	sw_status st;
	int r;

	if (err)
		memset(err, 0, sizeof *err);
	if (!cb)
		st = SW_E_INVAL;
	else
		st = walk_begin(&it, t, start, start_frame, flags, cache);
	if (st != SW_OK) {
		if (err)
			err->status = st;
		return SW_FAILED;
	}
	r = walk_run(&it, &sink, err);
	/* Anything but SW_CONTINUE from the callback stops the walk, as in the CLR. */
	return r < 0 ? SW_FAILED : r > 0 ? SW_ABORT : SW_CONTINUE;
}

SW_API sw_walk_action sw_walk_frames(const sw_thread *t, const sw_context *start,
                                     uint64_t start_frame, sw_walk_callback cb,
                                     void *data, unsigned flags, sw_walk_error *err)
{
	return sw_walk_frames_cached(t, start, start_frame, cb, data, flags, NULL, err);
}

SW_API int sw_backtrace(const sw_thread *t, const sw_context *start, uint64_t start_frame,
                        unsigned flags, uint64_t *ips, uint64_t *sps, size_t max,
                        sw_walk_cache *cache, sw_walk_error *err)
{
	struct swi_sink sink = { .ips = ips, .sps = sps, .max = max < INT_MAX ? max : INT_MAX };
	sw_iter it;
	sw_status st;

	if (err)
		memset(err, 0, sizeof *err);
	if (!ips && max)
		return SW_E_INVAL;
	st = walk_begin(&it, t, start, start_frame, flags | SW_WALK_ADDRESSES_ONLY, cache);
	if (st != SW_OK)
		return st;
	if (max == 0)
		sw_iter_end(&it);
	else
		walk_run(&it, &sink, err);
	return (int)sink.n;
}
