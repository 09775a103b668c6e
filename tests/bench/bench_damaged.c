/*
 * bench_damaged.c - the worst case of one walk: a damaged 8 MB stack that
 * keeps the walk going until its step bound stops it (sw_walk_frames(3),
 * "Termination").  Built with the tree, run by `make bench-damaged` and
 * `make bench`, never as a test: no time is asserted.
 *
 * The damage (damaged_stack.h): every frame returns into the same method
 * one byte higher, far more frames than the bound allows, each one a real
 * lookup, decode and unwind.  The walk is timed the three ways a walk
 * runs (a callback, the iterator, arrays), best of RUNS: the machine
 * is shared, and the fastest run is the one least disturbed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <stackwalk.h>
#include "damaged_stack.h"

#define STACK_SIZE (8u << 20)
#define STACK_BASE 0x7f0000000000ull
#define RUNS 7

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static sw_walk_action count_cb(const sw_crawl_frame *cf, void *data)
{
	(void)cf;
	++*(size_t *)data;
	return SW_CONTINUE;
}

static size_t walk_callback(const sw_thread *t, const sw_context *seed, sw_status *st)
{
	sw_walk_error err;
	size_t n = 0;

	sw_walk_frames(t, seed, 0, count_cb, &n, 0, &err);
	*st = err.status;
	return n;
}

static size_t walk_iterator(const sw_thread *t, const sw_context *seed, sw_status *st)
{
	sw_iter it;
	size_t n = 0;
	int r = sw_iter_init(&it, t, seed, 0, 0);

	if (r == SW_OK) {
		while ((r = sw_iter_next(&it)) > 0)
			n++;
		sw_iter_end(&it);
	}
	*st = r;
	return n;
}

static uint64_t ips[1u << 21];

static size_t walk_arrays(const sw_thread *t, const sw_context *seed, sw_status *st)
{
	sw_walk_error err;
	int n = sw_backtrace(t, seed, 0, SW_WALK_QUICKUNWIND, ips, NULL, sizeof ips / sizeof ips[0],
	                     NULL, &err);

	*st = err.status;
	return n > 0 ? (size_t)n : (size_t)err.depth;
}

int main(void)
{
	static const struct {
		const char *name;
		size_t (*walk)(const sw_thread *, const sw_context *, sw_status *);
	} ways[] = {
		{ "sw_walk_frames", walk_callback },
		{ "sw_iter_next", walk_iterator },
		{ "sw_backtrace", walk_arrays },
	};
	unsigned char *stack = malloc(STACK_SIZE);
	sw_codemap *map = NULL;
	sw_memory mem;
	sw_thread t;
	sw_context seed;

	if (!stack || sw_codemap_create(&map) != SW_OK || damaged_stack_method(map) != SW_OK ||
	    sw_memory_init_buffer(&mem, stack, STACK_SIZE, STACK_BASE) != SW_OK ||
	    sw_thread_init(&t, SW_ARCH_X64, map, &mem, 0, STACK_BASE, STACK_BASE + STACK_SIZE) != SW_OK) {
		fprintf(stderr, "bench-damaged: setup failed\n");
		return 1;
	}
	damaged_stack_fill(stack, STACK_SIZE, STACK_BASE, &seed);

	printf("bench-damaged: one walk of a damaged %u MB stack, best of %d\n", STACK_SIZE >> 20, RUNS);
	for (size_t w = 0; w < sizeof ways / sizeof ways[0]; w++) {
		uint64_t best = UINT64_MAX;
		sw_status st = SW_OK;
		size_t frames = 0;

		for (int run = 0; run < RUNS; run++) {
			uint64_t t0 = now_ns(), took;

			frames = ways[w].walk(&t, &seed, &st);
			took = now_ns() - t0;
			if (took < best)
				best = took;
		}
		printf("  %-15s %8zu frames, %7.2f ms, %5.1f ns/frame, ended: %s\n", ways[w].name, frames,
		       best / 1e6, frames ? (double)best / (double)frames : 0.0, sw_strerror(st));
	}
	sw_codemap_destroy(map);
	free(stack);
	return 0;
}
