/*
 * bench_throw.c - the cost of a managed exception caught 1, 10 and 100
 * frames up through sw_exception_dispatch, beside C++'s throw/catch
 * through as many C++ frames (g++ and libgcc's unwinder), in the same
 * run: the peer is tests/bench/bench_throw_cxx.cpp, built by `make
 * bench-throw` when g++ is there and named with --cxx PROGRAM.
 *
 * The managed stack is laid out in an array on this thread's own stack
 * and read as the process's memory (sw_memory_init_local), as a
 * runtime's dispatch reads its thread's stack: frame 0 a method whose catch clause covers its
 * call, frames 1..DEPTH one method without clauses (a recursion), the
 * innermost throwing.  The method shape is stack_builder.h's "A" (push
 * rbp; mov rbp,rsp; push rbx; sub rsp,72), the code never run: the
 * runtime's callbacks match the type and return the catch's
 * continuation.  A dispatch is both passes and the continuation's
 * context; what resuming there costs (sw_context_resume: a register
 * load and a jump) is not counted, nor the exception object's
 * allocation, which C++'s throw includes (__cxa_allocate_exception).
 *
 * Times are ns per throw, each the best of BENCH_RUNS runs
 * (bench_common.h).  The machine's speed drifts by 2x within minutes, so
 * each depth is measured in ROUNDS paired rounds, the peer for that depth
 * then the library, and the ratio printed is the median of the rounds'
 * (the times beside it are the medians of each side).  No timing is
 * asserted anywhere.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "bench_common.h"

#define MAX_DEPTH   100
#define STACK_BYTES (32u << 10)
#define METHOD_R    0x400000ull         /* the recursion: no clauses */
#define METHOD_C    0x400100ull         /* the catcher */
#define SITE        24                  /* the call (or throw) in every frame */
#define CONTINUATION 36
#define CATCH_TYPE  1u
#define FRAME_BYTES 96u                 /* shape "A" at a body IP: SP = CFA - 96 */
#define ROUNDS      5

#define BELOW_BYTES (256u << 10)          /* the thread's stack beneath the array, for the calls */

static uint64_t *stack_buf;             /* STACK_BYTES, an array on this thread's stack */
static int handle_r, handle_c;

struct bench_world {
	sw_memory mem;
	sw_codemap *map;
	sw_thread thread;
	sw_context seed;
	uint64_t tracker, exc_slot;
	unsigned handled;
};

static uint64_t top(void)
{
	return (uint64_t)(uintptr_t)stack_buf + STACK_BYTES;
}

static uint64_t cfa_of(unsigned i)
{
	return top() - 0x1000 - (uint64_t)FRAME_BYTES * i;
}

static void put(uint64_t addr, uint64_t v)
{
	memcpy((void *)(uintptr_t)addr, &v, 8);
}

static void die(const char *what, sw_status st)
{
	fprintf(stderr, "bench-throw: %s: %s\n", what, sw_strerror(st));
	exit(1);
}

/* Method shape "A", with a catch clause around SITE when `catches`. */
static void add_method(sw_codemap *map, uint64_t start, void *handle, int catches)
{
	const sw_eh_clause c = { SW_EH_CATCH, 0, 10, 38, 48, 64, 0, CATCH_TYPE };
	unsigned char blob[512];
	size_t len = 0;
	sw_swu_builder *b;
	sw_code_info ci;
	sw_status st;

	if ((st = sw_swu_builder_create(&b, SW_ARCH_X64)) != SW_OK)
		die("builder", st);
	if ((st = sw_swu_push_reg(b, 1, SW_X64_RBP)) != SW_OK ||
	    (st = sw_swu_set_frame(b, 4, SW_X64_RBP, 0)) != SW_OK ||
	    (st = sw_swu_push_reg(b, 5, SW_X64_RBX)) != SW_OK ||
	    (st = sw_swu_alloc_stack(b, 9, 72)) != SW_OK ||
	    (st = sw_swu_end_prolog(b, 9)) != SW_OK ||
	    (st = sw_swu_epilog_begin(b, 40)) != SW_OK ||
	    (st = sw_swu_restore_sp_from_frame(b, 44, -8)) != SW_OK ||
	    (st = sw_swu_pop_reg(b, 45, SW_X64_RBX)) != SW_OK ||
	    (st = sw_swu_pop_reg(b, 46, SW_X64_RBP)) != SW_OK ||
	    (st = sw_swu_epilog_end(b, 47)) != SW_OK ||
	    (catches && (st = sw_swu_eh_clause(b, &c)) != SW_OK) ||
	    (st = sw_swu_finish(b, 48, blob, sizeof blob, &len)) != SW_OK)
		die("method", st);
	sw_swu_builder_destroy(b);
	memset(&ci, 0, sizeof ci);
	ci.method = handle;
	ci.start = start;
	ci.size = 48;           /* the main body; the handler (never run) lies beyond */
	ci.unwind = blob;
	ci.unwind_size = (uint32_t)len;
	if ((st = sw_codemap_add(map, &ci)) != SW_OK)
		die("sw_codemap_add", st);
}

/* Frames 0 .. depth, the innermost throwing; the seed at its throw. */
static void lay_out(struct bench_world *w, unsigned depth)
{
	memset(stack_buf, 0, STACK_BYTES);
	put(cfa_of(0) - 8, 0);                  /* frame 0: nothing called it */
	for (unsigned i = 1; i <= depth; i++) {
		put(cfa_of(i) - 8, (i == 1 ? METHOD_C : METHOD_R) + SITE + 1);
		put(cfa_of(i) - 16, cfa_of(i - 1) - 16);
		put(cfa_of(i) - 24, 0x1000 + i - 1);
	}
	w->exc_slot = top() - 16;
	w->thread.exception_head = w->exc_slot;
	w->tracker = (cfa_of(depth) - FRAME_BYTES - 0x1000) & ~(uint64_t)15;
	sw_context_init(&w->seed, SW_ARCH_X64);
	sw_context_set(&w->seed, SW_X64_RIP, (depth ? METHOD_R : METHOD_C) + SITE);
	sw_context_set(&w->seed, SW_X64_RSP, cfa_of(depth) - FRAME_BYTES);
	sw_context_set(&w->seed, SW_X64_RBP, cfa_of(depth) - 16);
	sw_context_set(&w->seed, SW_X64_RBX, 0x1000 + depth);
}

static int type_matches(void *data, uint64_t exception, const sw_eh_site *site)
{
	(void)data;
	return site->clause.type_token == exception;
}

static int run_filter(void *data, uint64_t exception, const sw_eh_site *site)
{
	(void)data, (void)exception, (void)site;
	return 0;
}

static sw_status run_handler(void *data, uint64_t exception, const sw_eh_site *site,
                             uint64_t *resume_ip)
{
	struct bench_world *w = data;

	(void)exception;
	w->handled++;
	*resume_ip = site->code->start + CONTINUATION;
	return SW_OK;
}

static const sw_exception_ops ops = { type_matches, run_filter, run_handler };

/* One throw: 1 when it was caught in frame 0 and resumes there. */
static size_t throw_once(struct bench_world *w, unsigned depth)
{
	sw_exception_result res;
	sw_status st;

	put(w->exc_slot, 0);
	st = sw_exception_dispatch(&w->thread, &w->seed, CATCH_TYPE, &ops, w, w->tracker, 0, &res);
	if (st != SW_OK)
		die("sw_exception_dispatch", st);
	if (res.method != &handle_c || res.frames != depth + 1 ||
	    sw_context_ip(&res.resume) != METHOD_C + CONTINUATION ||
	    sw_context_sp(&res.resume) != cfa_of(0) - FRAME_BYTES) {
		fprintf(stderr, "bench-throw: the dispatch resumed the wrong frame\n");
		exit(1);
	}
	return 1;
}

/* The C++ peer's "cxx DEPTH NS" for one depth: ns per throw, 0 when it gave none. */
static double run_cxx(const char *prog, unsigned depth)
{
	char cmd[1024], line[256];
	double ns = 0;
	FILE *p;

	if (!prog)
		return 0;
	if ((size_t)snprintf(cmd, sizeof cmd, "%s %u", prog, depth) >= sizeof cmd ||
	    !(p = popen(cmd, "r"))) {
		fprintf(stderr, "bench-throw: cannot run %s\n", prog);
		return 0;
	}
	while (fgets(line, sizeof line, p)) {
		unsigned d;
		double v;

		if (sscanf(line, "cxx %u %lf", &d, &v) == 2 && d == depth)
			ns = v;
	}
	if (pclose(p) != 0) {
		fprintf(stderr, "bench-throw: %s failed\n", prog);
		return 0;
	}
	return ns;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, unsigned n)
{
	qsort(v, n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/*
 * The thread's own stack: the dispatch walks the calling thread's, as a
 * runtime's does (a local walk of another stack is refused), from the
 * array down to well beneath the calls the dispatch makes.
 */
static __attribute__((noinline)) void run(const char *cxx)
{
	static const unsigned depths[] = { 1, 10, 100 };
	const unsigned n = sizeof depths / sizeof depths[0];
	uint64_t frames[STACK_BYTES / 8] __attribute__((aligned(64)));
	uint64_t lo;
	struct bench_world w;
	sw_status st;

	stack_buf = frames;
	lo = (uint64_t)(uintptr_t)frames - BELOW_BYTES;
	memset(&w, 0, sizeof w);
	if ((st = sw_codemap_create(&w.map)) != SW_OK)
		die("sw_codemap_create", st);
	add_method(w.map, METHOD_R, &handle_r, 0);
	add_method(w.map, METHOD_C, &handle_c, 1);
	if ((st = sw_memory_init_local(&w.mem, lo, top(), 0)) != SW_OK ||
	    (st = sw_thread_init(&w.thread, SW_ARCH_X64, w.map, &w.mem, top() - 8, lo, top() - 16)) != SW_OK)
		die("thread", st);
	printf("A throw caught N frames up: sw_exception_dispatch (both passes, to the catch's context)\n"
	       "beside C++ throw/catch (g++, libgcc's unwinder), ns per throw (best of %d runs),\n"
	       "medians of %d paired rounds; goal: ratio <= 0.2 at 10 frames\n", BENCH_RUNS, ROUNDS);
	printf("%6s %14s %14s %10s\n", "frames", "dispatch", "C++", "ratio");
	for (unsigned i = 0; i < n; i++) {
		unsigned iters = depths[i] >= 100 ? 300 : 3000, nc = 0;
		double ns[ROUNDS], cxx_ns[ROUNDS], ratio[ROUNDS];

		lay_out(&w, depths[i]);
		for (unsigned r = 0; r < ROUNDS; r++) {
			size_t one = 0;
			double c = run_cxx(cxx, depths[i]);

			w.handled = 0;
			BENCH_BEST(ns[r], one, iters, throw_once(&w, depths[i]));
			if (one != 1 || w.handled != (unsigned)BENCH_RUNS * iters)
				die("the catch ran a wrong number of times", SW_E_STATE);
			if (c > 0) {
				ratio[nc] = ns[r] / c;
				cxx_ns[nc++] = c;
			}
		}
		if (nc == ROUNDS)
			printf("%6u %14.1f %14.1f %10.3f\n", depths[i], median(ns, ROUNDS),
			       median(cxx_ns, ROUNDS), median(ratio, ROUNDS));
		else
			printf("%6u %14.1f %14s %10s\n", depths[i], median(ns, ROUNDS), "-", "-");
	}
	if (!cxx)
		printf("(no C++ peer: g++ was not found)\n");
	sw_codemap_destroy(w.map);
}

int main(int argc, char **argv)
{
	const char *cxx = NULL;

	for (int a = 1; a < argc; a++) {
		if (strcmp(argv[a], "--cxx") == 0 && a + 1 < argc) {
			cxx = argv[++a];
		} else {
			fprintf(stderr, "usage: bench-throw [--cxx PROGRAM]\n");
			return 2;
		}
	}
	(void)bench_native_recurse;     /* bench_common.h's native chain: not walked here */
	run(cxx);
	return 0;
}
