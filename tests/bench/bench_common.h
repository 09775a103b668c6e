/*
 * bench_common.h - what the benchmark programs share: a clock, a
 * best-of-runs timer, and the native call chain they all walk.
 *
 * Numbers are the best of RUNS runs: the machine is shared, and the
 * fastest run is the one least disturbed by the others.
 */
#ifndef BENCH_COMMON_H
#define BENCH_COMMON_H

#include <stdint.h>
#include <time.h>

#define BENCH_RUNS 7

static inline uint64_t bench_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Iterations so that one run of a walk of `frames` frames takes about 2 ms. */
static inline unsigned bench_iters(unsigned frames, double ns_per_frame_guess)
{
	double per = (double)frames * ns_per_frame_guess;
	double n = 2e6 / (per > 1 ? per : 1);

	return n < 3 ? 3 : n > 200000 ? 200000 : (unsigned)n;
}

/*
 * Best time of one evaluation of `expr` (a walk returning its frame count),
 * in ns per frame, into `out`; `frames_out` receives the count.
 */
#define BENCH_BEST(out, frames_out, iters, expr) do { \
		double best_ = 1e300; \
		size_t frames_ = 0; \
		for (int run_ = 0; run_ < BENCH_RUNS; run_++) { \
			uint64_t t0_ = bench_now_ns(); \
			for (unsigned i_ = 0; i_ < (iters); i_++) \
				frames_ = (expr); \
			double per_ = (double)(bench_now_ns() - t0_) / (iters); \
			if (per_ < best_) \
				best_ = per_; \
		} \
		(frames_out) = frames_; \
		(out) = frames_ ? best_ / (double)frames_ : 0; \
	} while (0)

/*
 * The native stack: `n` frames of bench_native_recurse (kept apart by
 * -fno-omit-frame-pointer and by work after the call, so that no frame is
 * a tail call or inlined), then `leaf`.
 */
typedef void (*bench_leaf_fn)(void *arg);

static __attribute__((noinline)) int bench_native_recurse(unsigned n, bench_leaf_fn leaf, void *arg)
{
	int r;

	if (n == 0) {
		leaf(arg);
		return 0;
	}
	r = bench_native_recurse(n - 1, leaf, arg);
	__asm__ volatile("" : "+r"(r));
	return r + 1;
}

/* Depths of the depth-scaling curve. */
static const unsigned bench_depths[] = { 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000 };
#define BENCH_NDEPTHS (sizeof bench_depths / sizeof bench_depths[0])

#endif /* BENCH_COMMON_H */
