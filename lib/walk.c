/*
 * walk.c - sw_walk_frames, the CLR's StackWalkFramesEx: the iterator driven
 * to the end, one callback per frame.
 */
#include "iter.h"

SW_API sw_walk_action sw_walk_frames(const sw_thread *t, const sw_context *start,
                                     uint64_t start_frame, sw_walk_callback cb,
                                     void *data, unsigned flags, sw_walk_error *err)
{
	sw_iter it;
	struct swi_iter *in;
	sw_status st;
	int r;

	if (err)
		memset(err, 0, sizeof *err);
	if (!cb) {
		if (err)
			err->status = SW_E_INVAL;
		return SW_FAILED;
	}
	st = sw_iter_init(&it, t, start, start_frame, flags);
	if (st != SW_OK) {
		if (err)
			err->status = st;
		return SW_FAILED;
	}
	/*
	 * The iterator's internals directly: sw_iter_next and sw_iter_frame
	 * would check what sw_iter_init just set up, through the PLT, at
	 * every frame.
	 */
	in = (struct swi_iter *)(void *)&it;
	while ((r = swi_iter_next(in)) > 0) {
		/* Anything but SW_CONTINUE stops the walk, as in the CLR. */
		if (cb(&in->cf, data) != SW_CONTINUE || (r = swi_walk_fast(in, cb, data)) > 0) {
			sw_iter_end(&it);
			return SW_ABORT;
		}
		if (r < 0)
			break;
	}
	if (r < 0) {
		if (err)
			sw_iter_error(&it, err);
		sw_iter_end(&it);
		return SW_FAILED;
	}
	sw_iter_end(&it);
	return SW_CONTINUE;
}
