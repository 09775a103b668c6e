/*
 * walk.c - sw_walk_frames, the CLR's StackWalkFramesEx: the iterator driven
 * to the end, one callback per frame; sw_walk_frames_cached, the same with
 * the fast step's rules kept from one walk to the next.
 */
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

static sw_walk_action walk_failed(sw_walk_error *err, sw_status st)
{
	if (err)
		err->status = st;
	return SW_FAILED;
}

SW_API sw_walk_action sw_walk_frames_cached(const sw_thread *t, const sw_context *start,
                                            uint64_t start_frame, sw_walk_callback cb, void *data,
                                            unsigned flags, sw_walk_cache *cache, sw_walk_error *err)
{
	sw_iter it;
	struct swi_iter *in;
	sw_status st;
	int r;

	if (err)
		memset(err, 0, sizeof *err);
	if (!cb)
		return walk_failed(err, SW_E_INVAL);
	st = sw_iter_init(&it, t, start, start_frame, flags);
	if (st != SW_OK)
		return walk_failed(err, st);
	/*
	 * The iterator's internals directly: sw_iter_next and sw_iter_frame
	 * would check what sw_iter_init just set up, through the PLT, at
	 * every frame.
	 */
	in = (struct swi_iter *)(void *)&it;
	if (cache && (st = swi_iter_use_cache(in, rule_table_of(cache))) != SW_OK) {
		sw_iter_end(&it);
		return walk_failed(err, st);
	}
	while ((r = swi_iter_next(in)) > 0) {
		/* Anything but SW_CONTINUE stops the walk, as in the CLR. */
		if (cb(&in->cf, data) != SW_CONTINUE || (r = swi_walk_fast(in, cb, data)) > 0) {
			swi_iter_keep_rules(in);
			sw_iter_end(&it);
			return SW_ABORT;
		}
		if (r < 0)
			break;
	}
	swi_iter_keep_rules(in);
	if (r < 0) {
		if (err)
			sw_iter_error(&it, err);
		sw_iter_end(&it);
		return SW_FAILED;
	}
	sw_iter_end(&it);
	return SW_CONTINUE;
}

SW_API sw_walk_action sw_walk_frames(const sw_thread *t, const sw_context *start,
                                     uint64_t start_frame, sw_walk_callback cb,
                                     void *data, unsigned flags, sw_walk_error *err)
{
	return sw_walk_frames_cached(t, start, start_frame, cb, data, flags, NULL, err);
}
