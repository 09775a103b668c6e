/*
 * bench_walk.c - how fast sw_walk_frames walks a live stack of JIT code,
 * next to a plain frame-pointer walk of the very same frames (and
 * libunwind's unw_backtrace when it is available), in one process.
 *
 * The toy JIT builds a chain of `depth` methods that all keep an rbp frame
 * chain; its stub (also an rbp frame) calls the helper below, which times
 * each walker many times and reports the best run, in ns per frame.
 * Numbers are printed, never asserted: this is not a test.
 */
#include "config.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "toyjit.h"
#ifdef HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define RUNS 7
#define MAX_IPS (TOYJIT_MAX_DEPTH + 64)

static __thread sw_frame *frame_head;

static struct {
	sw_thread thread;
	sw_memory memory;
	int ok;
} g;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The same minimal work per frame for every walker: store its IP. */
struct sink {
	uint64_t ips[MAX_IPS];
	size_t n;
};

static sw_walk_action store_ip(const sw_crawl_frame *cf, void *data)
{
	struct sink *s = data;
	const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);

	if (s->n < MAX_IPS)
		s->ips[s->n] = sw_context_ip(&rd->cur);
	s->n++;
	return SW_CONTINUE;
}

static size_t sw_walk_once(unsigned flags, struct sink *s)
{
	s->n = 0;
	if (sw_walk_frames(&g.thread, NULL, 0, store_ip, s, flags, NULL) != SW_CONTINUE)
		return 0;
	return s->n;
}

/*
 * A frame-pointer walk: [fp] is the caller's fp, [fp + 8] the return
 * address.  Each link must go up the stack and stay on it, as any careful
 * fp unwinder checks.  Collects `want` return addresses.
 */
static __attribute__((noinline)) size_t fp_walk(const uint64_t *fp, uint64_t *ips, size_t want)
{
	size_t n = 0;

	while (n < want && fp) {
		const uint64_t *next = (const uint64_t *)(uintptr_t)fp[0];

		ips[n++] = fp[1];
		if ((uintptr_t)next <= (uintptr_t)fp || (uintptr_t)next >= g.thread.stack_hi)
			break;
		fp = next;
	}
	return n;
}

struct timing {
	double ns_per_frame;
	size_t frames;
};

#define TIME_BEST(out, iters, expr) do { \
		double best_ = 1e300; \
		size_t frames_ = 0; \
		for (int run_ = 0; run_ < RUNS; run_++) { \
			uint64_t t0_ = now_ns(); \
			for (unsigned i_ = 0; i_ < (iters); i_++) \
				frames_ = (expr); \
			double per_ = (double)(now_ns() - t0_) / (iters); \
			if (per_ < best_) \
				best_ = per_; \
		} \
		(out).frames = frames_; \
		(out).ns_per_frame = frames_ ? best_ / (double)frames_ : 0; \
	} while (0)

static struct sink sink;

static void bench_helper(toyjit *jit, sw_transition_frame *tf)
{
	const uint64_t *fp = __builtin_frame_address(0);
	unsigned depth = jit->run_depth;
	unsigned iters = 400000 / (depth + 1);
	struct timing full, quick, fpw;
	size_t frames = sw_walk_once(0, &sink);
	uint64_t sw_ips[MAX_IPS], fp_ips[MAX_IPS];
	size_t nfp;
	int agree;

	(void)tf;
	if (frames != depth + 1 || frames > MAX_IPS) {
		printf("%6u  sw_walk_frames reported %zu frames, expected %u: not timed\n",
		       depth, frames, depth + 1);
		return;
	}
	/* Walk once each way: the fp walk must see the same frames. */
	memcpy(sw_ips, sink.ips, frames * sizeof(sw_ips[0]));
	nfp = fp_walk(fp, fp_ips, frames + 1);
	/*
	 * fp_ips[0] returns into the stub (the TransitionFrame, sw_ips[0], has
	 * no IP of its own); from 1 on both list the managed frames.
	 */
	agree = nfp == frames + 1;
	for (size_t k = 1; agree && k < frames; k++)
		agree = fp_ips[k] == sw_ips[k];

	TIME_BEST(full, iters, sw_walk_once(0, &sink));
	TIME_BEST(quick, iters, sw_walk_once(SW_WALK_QUICKUNWIND, &sink));
	/* The same frames: the helper's own, the stub's, then the methods'. */
	TIME_BEST(fpw, iters, fp_walk(fp, sink.ips, frames + 1));

	printf("%6u  %6zu  %10.1f  %10.1f  %9.2f  %9.1fx  %9.1fx  %s",
	       depth, frames, full.ns_per_frame, quick.ns_per_frame, fpw.ns_per_frame,
	       full.ns_per_frame / fpw.ns_per_frame, quick.ns_per_frame / fpw.ns_per_frame,
	       agree ? "same" : "DIFFER");
#ifdef HAVE_LIBUNWIND
	{
		struct timing lu;
		void *buf[MAX_IPS];

		TIME_BEST(lu, iters / 4 + 1, (size_t)unw_backtrace(buf, MAX_IPS));
		printf("  %10.1f (%zu frames)", lu.ns_per_frame, lu.frames);
	}
#endif
	printf("\n");
	g.ok = agree;
}

int main(int argc, char **argv)
{
	static const toyjit_shape shapes[] = { TOYJIT_RBP_FRAME, TOYJIT_RBP_FRAME, TOYJIT_BIG_FRAME };
	static const unsigned default_depths[] = { 8, 32, 128 };
	sw_codemap *map = NULL;
	toyjit *jit = NULL;
	sw_status st;
	int ok = 1;

	if ((st = sw_codemap_create(&map)) != SW_OK ||
	    (st = toyjit_create(&jit, map, &frame_head, shapes, 3, bench_helper, NULL)) != SW_OK ||
	    (st = sw_thread_init_self(&g.thread, map, &g.memory, &frame_head)) != SW_OK) {
		fprintf(stderr, "bench-walk: setup failed: %s\n", sw_strerror(st));
		return 1;
	}
	printf("bench-walk: ns per frame, best of %d runs; walks of the same live JIT stack\n", RUNS);
	printf("%6s  %6s  %10s  %10s  %9s  %10s  %10s  %s", "depth", "frames", "sw_walk", "sw_quick",
	       "fp-walk", "walk/fp", "quick/fp", "frames");
#ifdef HAVE_LIBUNWIND
	printf("  %10s", "libunwind");
#endif
	printf("\n");
	for (int i = 0; i < (argc > 1 ? argc - 1 : 3); i++) {
		unsigned depth = argc > 1 ? (unsigned)atoi(argv[i + 1]) : default_depths[i];

		if (depth < 1 || depth > TOYJIT_MAX_DEPTH) {
			fprintf(stderr, "bench-walk: depth %u out of range\n", depth);
			ok = 0;
			continue;
		}
		g.ok = 0;
		if (toyjit_run(jit, depth, -1) != SW_OK || !g.ok)
			ok = 0;
	}
	toyjit_destroy(jit);
	sw_codemap_destroy(map);
	return ok ? 0 : 1;
}
