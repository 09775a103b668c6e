/*
 * swprof_walk.c - one sample's walk, the same for the LD_PRELOAD agent
 * (a thread stopped by the sampler, swprof.c) and for attach mode (a
 * copy of a thread's registers and stack the kernel took,
 * swprof_attach.c): native frames through the modules' CFI, managed
 * frames through the runtime's code map, joined where one leads to the
 * other; and the raw sample kept in prof.buf.
 *
 * It may run while the target is stopped: it allocates nothing.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <string.h>
#include <stackwalk.h>
#include "swprof.h"

static sw_walk_action add_frame(const sw_crawl_frame *cf, void *data)
{
	walk_buf *w = data;
	sw_frame_state st = sw_crawl_frame_state(cf);

	if (st == SW_STATE_NATIVE_MARKER) {
		w->native_caller = sw_crawl_frame_regdisplay(cf)->cur;
		w->has_native_caller = 1;
		return SW_CONTINUE;
	}
	if (st != SW_STATE_FRAMELESS && st != SW_STATE_NATIVE_FRAME && st != SW_STATE_INITIAL_NATIVE)
		return SW_CONTINUE;
	/* A managed frame after the marker: its native caller comes later, if at all. */
	if (st == SW_STATE_FRAMELESS)
		w->has_native_caller = 0;
	if (w->managed_only && st != SW_STATE_FRAMELESS)
		return SW_CONTINUE;
	/* The agent's own frames (a thread's start, a wrapper) are not the program's. */
	if (st != SW_STATE_FRAMELESS && agent_code(sw_crawl_frame_ip(cf)))
		return SW_CONTINUE;
	if (w->n == MAX_DEPTH)
		return SW_ABORT;
	/* Managed frames are recorded by method handle, tagged. */
	if (st == SW_STATE_FRAMELESS && sw_crawl_frame_method(cf)) {
		w->ip[w->n++] = (uint64_t)(uintptr_t)sw_crawl_frame_method(cf) | MANAGED_TAG;
	} else {
		uint64_t ip = NATIVE_KEY(sw_crawl_frame_ip(cf));

		/* Past the modules (a runtime's stub, say): the Frame list goes on from here. */
		if (w->native_until_unknown && st == SW_STATE_NATIVE_FRAME && !sw_crawl_frame_code_info(cf)) {
			w->unknown_code = sw_crawl_frame_regdisplay(cf)->cur;
			w->has_unknown_code = 1;
			return SW_ABORT;
		}
		/* The seed is reported as the initial context, then as its native frame. */
		if (st == SW_STATE_NATIVE_FRAME && w->n == 1 && w->seed_only && w->ip[0] == ip) {
			w->seed_only = 0;
			return SW_CONTINUE;
		}
		w->seed_only = st == SW_STATE_INITIAL_NATIVE;
		w->ip[w->n++] = ip;
	}
	return SW_CONTINUE;
}

static int is_managed(const sw_codemap *map, uint64_t ip)
{
	sw_code_info ci;

	return sw_codemap_find(map, ip, &ci) == SW_OK && !(ci.flags & SW_CODE_NATIVE);
}

/*
 * Three cases.  Stopped in managed code: walk the runtime's code map from
 * there.  Stopped in native code of a thread with a Frame list: its native
 * frames, as far as the modules' CFI knows them, then the managed frames
 * the Frame list leads to.  Otherwise native frames, and the runtime's
 * code map when the native walk found nothing to go on with.
 */
/*
 * The walks' rules, kept from one sample to the next (the sampler thread
 * walks one sample at a time): one table for the runtime's map, one for
 * the modules', as a table empties itself when the map changes.
 */
static sw_walk_cache managed_rules, native_rules;

void walk_caches_init(void)
{
	sw_walk_cache_init(&managed_rules);
	sw_walk_cache_init(&native_rules);
}

/*
 * Walk with `flags` into `w`.  A walk that could not go on says why in
 * w->stopped, and the frame it could not unwind (the error's IP) ends the
 * stack: a managed walk reports a frame only once it has unwound it.
 */
static void walk_into(const sw_thread *t, const sw_context *seed, walk_buf *w, unsigned flags,
                      sw_walk_cache *rules)
{
	sw_walk_error err;
	sw_code_info ci;
	uint64_t last;

	if (sw_walk_frames_cached(t, seed, 0, add_frame, w, flags, rules, &err) != SW_FAILED)
		return;
	w->stopped = err.status;
	if (err.ip == 0 || w->n == MAX_DEPTH || agent_code(err.ip))
		return;
	last = NATIVE_KEY(err.ip);
	if (sw_codemap_find(t->codemap, err.ip, &ci) == SW_OK && !(ci.flags & SW_CODE_NATIVE) &&
	    ci.method)
		last = (uint64_t)(uintptr_t)ci.method | MANAGED_TAG;
	if (w->n == 0 || w->ip[w->n - 1] != last)
		w->ip[w->n++] = last;
}

/*
 * The native frames under the outermost managed chain (the thread's
 * start, the runtime's entry into managed code): walked from the
 * context the managed walk left managed code with, through the modules.
 */
static void walk_native_callers(sw_thread *t, walk_buf *w, unsigned flags)
{
	sw_context caller = w->native_caller;

	if (!w->has_native_caller || w->stopped != SW_OK)
		return;
	t->codemap = prof.map;
	w->managed_only = w->native_until_unknown = w->seed_only = w->has_native_caller = 0;
	walk_into(t, &caller, w, flags, &native_rules);
}

void walk_sample(const sw_sample *s, walk_buf *w)
{
	const unsigned native = s->walk_flags | SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK;
	const unsigned managed = s->walk_flags | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS;
	const sw_codemap *rt = __atomic_load_n(&prof.runtime_map, __ATOMIC_ACQUIRE);
	sw_thread t = *s->thread;

	if (rt && is_managed(rt, sw_context_ip(s->seed))) {
		t.codemap = rt;
		walk_into(&t, s->seed, w, managed, &managed_rules);
		walk_native_callers(&t, w, native);
		return;
	}
	w->native_until_unknown = rt && t.frame_head;
	walk_into(&t, s->seed, w, native | SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, &native_rules);
	if (rt && t.frame_head) {
		/*
		 * Both walks make the stack: either one stopping leaves a hole in
		 * it.  Where the native walk reached managed code (through a stub
		 * the runtime described), the managed walk goes on from there;
		 * else the Frame list leads it to the managed frames.
		 */
		const sw_context *from = s->seed;

		if (w->has_unknown_code && is_managed(rt, sw_context_ip(&w->unknown_code)))
			from = &w->unknown_code;
		t.codemap = rt;
		w->managed_only = 1;
		walk_into(&t, from, w, managed, &managed_rules);
		walk_native_callers(&t, w, native);
	} else if (rt && w->n <= 1 && w->stopped != SW_E_NOTIMPORTED) {
		/*
		 * The native walk found nothing: the managed walk replaces it,
		 * where it finds more (else the native walk's stop stands).
		 */
		walk_buf m;

		memset(&m, 0, sizeof m);
		t.codemap = rt;
		walk_into(&t, s->seed, &m, managed | SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT,
		          &managed_rules);
		walk_native_callers(&t, &m, native);
		if (m.n > w->n)
			*w = m;
	}
}

/* Keep a walked sample in prof.buf (the target may be stopped: no allocation). */
void record_sample(const walk_buf *w, unsigned ticks, pid_t tid)
{
	if (w->n == 0) {
		prof.failed++;
		return;
	}
	if (prof.used + 2 + w->n > BUFFER_WORDS) {
		prof.dropped++;
		return;
	}
	prof.buf[prof.used] = HEADER(w->n, ticks, w->stopped);
	prof.buf[prof.used + 1] = (uint64_t)(uint32_t)tid;
	memcpy(SAMPLE_IPS(&prof.buf[prof.used]), w->ip, w->n * sizeof w->ip[0]);
	prof.used += SAMPLE_WORDS(prof.buf[prof.used]);
	thread_sampled(tid);
	prof.samples++;
	if (w->stopped != SW_OK)
		prof.stopped++;
}
