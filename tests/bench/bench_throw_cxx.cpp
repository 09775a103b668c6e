/*
 * bench_throw_cxx.cpp - the C++ peer of bench-throw: `throw` caught
 * DEPTH frames up, through plain C++ frames (no destructors: libgcc's
 * unwinder calls no personality routine in them), with g++'s exceptions
 * and libgcc's two-phase unwinder.  Prints, for each depth given:
 *
 *   cxx DEPTH NS_PER_THROW
 *
 * the best of 7 runs, as bench_common.h times the library's side.
 */
#include <cstdio>
#include <cstdlib>
#include <ctime>

static volatile int sink;

/* n frames of it, the innermost throws; the work after the call keeps each frame. */
__attribute__((noinline)) static int recurse(unsigned n)
{
	int r;

	if (n <= 1)
		throw 1;
	r = recurse(n - 1);
	sink = r;
	return r + 1;
}

__attribute__((noinline)) static int catcher(unsigned n)
{
	try {
		return recurse(n);
	} catch (int e) {
		return e;
	}
}

static double now_ns()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
	for (int a = 1; a < argc; a++) {
		unsigned depth = (unsigned)strtoul(argv[a], NULL, 10);
		unsigned iters = depth >= 100 ? 300 : 3000;
		double best = 1e300;

		if (depth == 0)
			return 1;
		for (int run = 0; run < 7; run++) {
			double t0 = now_ns(), per;

			for (unsigned i = 0; i < iters; i++)
				if (catcher(depth) != 1)
					return 1;
			per = (now_ns() - t0) / iters;
			if (per < best)
				best = per;
		}
		printf("cxx %u %.1f\n", depth, best);
	}
	return 0;
}
