/*
 * check_hostile.c - the walker over garbage: random bytes as the Frame list
 * and as the stack under real methods.  Every walk must end, with frames or
 * with an SW_E_* error, and never read outside the target's memory (run it
 * under valgrind or ASan to see that).
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "damaged_stack.h"
#include "stack_builder.h"

#define ITERATIONS 20000

static uint64_t rng_state;

static uint64_t rnd(void)
{
	/* splitmix64: reproducible from the seed printed on failure */
	uint64_t z = (rng_state += 0x9e3779b97f4a7c15ull);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

static sw_walk_action count_cb(const sw_crawl_frame *cf, void *data)
{
	(void)cf;
	++*(unsigned *)data;
	return SW_CONTINUE;
}

/* Fill the stack with random words, biased toward plausible values. */
static void fill_garbage(sb_world *w, uint64_t lo, uint64_t hi)
{
	for (uint64_t a = lo; a + 8 <= hi; a += 8) {
		uint64_t v = rnd();

		switch (v & 7) {
		case 0: v = SB_STACK_BASE + (rnd() % SB_STACK_SIZE); break;          /* stack address */
		case 1: v = SB_STACK_BASE + (rnd() % SB_STACK_SIZE) / 8 * 8; break;  /* aligned one */
		case 2: v = 0x10001000ull + rnd() % 0x2000; break;                   /* code address */
		case 3: v = (rnd() & 3) | ((rnd() % 4) << 32); break;               /* small type/attrs */
		default: break;
		}
		sb_put(w, a, v);
	}
}

START_TEST(random_frame_lists)
{
	sb_world w;
	unsigned counts[8] = { 0 };

	sb_init(&w);
	sb_add_method_a(&w, 0x10001000ull, (void *)1);
	sb_add_method_b(&w, 0x10002000ull, (void *)2);
	for (unsigned i = 0; i < ITERATIONS; i++) {
		sw_walk_error err;
		unsigned n = 0;
		sw_walk_action a;
		unsigned flags = (unsigned)(rnd() & (SW_WALK_FUNCTIONSONLY | SW_WALK_HANDLESKIPPEDFRAMES |
		                                     SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_POPFRAMES));

		rng_state = 0x5eed0000ull + i;
		fill_garbage(&w, SB_STACK_BASE, SB_STACK_HI - 16);
		sb_put(&w, SB_HEAD_SLOT, SB_STACK_BASE + (rnd() % SB_STACK_SIZE) / 8 * 8);
		a = sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, flags, &err);
		/* Plain ifs: a passing ck_assert costs a pipe write in fork mode. */
		if (!(a == SW_CONTINUE || (a == SW_FAILED && err.status < 0)))
			ck_abort_msg("seed %u: result %d status %d", i, a, err.status);
		counts[a == SW_CONTINUE ? 0 : (unsigned)(-err.status) % 8]++;
	}
	/* Garbage must mostly be caught as such. */
	ck_assert_uint_gt(counts[(unsigned)-SW_E_BADFRAME % 8] + counts[(unsigned)-SW_E_FRAMECYCLE % 8], ITERATIONS / 2);
	sb_fini(&w);
}
END_TEST

START_TEST(random_stacks_under_real_methods)
{
	sb_world w;
	unsigned completed = 0;

	sb_init(&w);
	sb_add_method_a(&w, 0x10001000ull, (void *)1);
	sb_add_method_b(&w, 0x10002000ull, (void *)2);
	for (unsigned i = 0; i < ITERATIONS; i++) {
		sw_context seed;
		sw_walk_error err;
		unsigned n = 0;
		sw_walk_action a;

		rng_state = 0xbad0000ull + i;
		fill_garbage(&w, SB_STACK_BASE, SB_STACK_HI - 16);
		sb_put(&w, SB_HEAD_SLOT, (rnd() & 1) ? 0 : SB_STACK_BASE + (rnd() % SB_STACK_SIZE));
		sw_context_init(&seed, SW_ARCH_X64);
		sw_context_set(&seed, SW_X64_RIP, ((rnd() & 1) ? 0x10001000ull : 0x10002000ull) + rnd() % 48);
		sw_context_set(&seed, SW_X64_RSP, SB_STACK_BASE + rnd() % (SB_STACK_SIZE - 16));
		sw_context_set(&seed, SW_X64_RBP, (rnd() & 1) ? rnd() : SB_STACK_BASE + rnd() % SB_STACK_SIZE);
		a = sw_walk_frames(&w.thread, &seed, 0, count_cb, &n,
		                   (unsigned)(rnd() & (SW_WALK_QUICKUNWIND | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS)), &err);
		if (!(a == SW_CONTINUE || (a == SW_FAILED && err.status < 0)))
			ck_abort_msg("seed %u: result %d status %d", i, a, err.status);
		completed += a == SW_CONTINUE;
		/* A walk's depth is bounded by the stack it climbs. */
		if (n > SB_STACK_SIZE / 8 * 2)
			ck_abort_msg("seed %u: %u frames from a %u-byte stack", i, n, SB_STACK_SIZE);
	}
	(void)completed;
	sb_fini(&w);
}
END_TEST

/*
 * The step bound: a million and a half inactive InlinedCallFrames, each
 * reported and passed, make more steps than any walk may take.  The walk
 * must stop with SW_E_DEPTH, not run on.
 */
START_TEST(step_bound)
{
	const unsigned nframes = 1600000, stride = 48;
	size_t size = (size_t)nframes * stride + 64;
	unsigned char *buf = calloc(1, size);
	uint64_t base = 0x100000000ull, head = base + size - 8;
	sw_codemap *map;
	sw_memory mem;
	sw_thread t;
	sw_walk_error err;
	unsigned n = 0;

	ck_assert_ptr_nonnull(buf);
	for (unsigned i = 0; i < nframes; i++) {
		unsigned char *f = buf + (size_t)i * stride;
		uint64_t next = i + 1 < nframes ? base + (uint64_t)(i + 1) * stride : 0;

		for (int k = 0; k < 8; k++)
			f[k] = (unsigned char)(next >> (8 * k));
		f[8] = SW_FRAME_INLINED_CALL;      /* type; attributes and fields stay 0 */
	}
	for (int k = 0; k < 8; k++)
		buf[size - 8 + k] = (unsigned char)(base >> (8 * k));
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_memory_init_buffer(&mem, buf, size, base), SW_OK);
	ck_assert_int_eq(sw_thread_init(&t, SW_ARCH_X64, map, &mem, head, base, head), SW_OK);
	ck_assert_int_eq(sw_walk_frames(&t, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_DEPTH);
	ck_assert_uint_lt(n, nframes);
	sw_codemap_destroy(map);
	free(buf);
}
END_TEST

/*
 * The step bound on a managed stack: 800,000 frames of method B, each
 * returning into the one above it, walked the three ways a walk can
 * take them: sw_walk_frames (the fast step's loop), sw_walk_frames_cached
 * and sw_iter_next (the fast step one frame at a time, with its own check
 * of the bound).  All three must stop at the same frame with SW_E_DEPTH:
 * of the 2^21 steps stackwalk(7) allows, each frame takes three, the
 * seed's too, so 2^21 / 3 frames are reported.
 */
START_TEST(managed_step_bound)
{
	const unsigned nframes = 800000, stride = 40, expected = (1u << 21) / 3;
	size_t size = (size_t)nframes * stride + 64;
	unsigned char *buf = calloc(1, size);
	uint64_t base = 0x100000000ull, hi = base + size;
	sw_walk_cache cache;
	sb_world w;
	sb_method b;
	sw_memory mem;
	sw_thread t;
	sw_context seed;
	sw_walk_error err;
	sw_iter it;
	unsigned n;
	int r;

	ck_assert_ptr_nonnull(buf);
	sb_init(&w);
	b = sb_add_method_b(&w, 0x10002000ull, (void *)2);
	/* B's body frame, from SP up: 16 bytes of locals, RBX, R12, the return address. */
	for (unsigned i = 0; i < nframes; i++) {
		unsigned char *f = buf + (size_t)i * stride;
		uint64_t ra = b.start + b.body;

		for (int k = 0; k < 8; k++)
			f[32 + k] = (unsigned char)(ra >> (8 * k));
	}
	ck_assert_int_eq(sw_memory_init_buffer(&mem, buf, size, base), SW_OK);
	/* No Frame list. */
	ck_assert_int_eq(sw_thread_init(&t, SW_ARCH_X64, w.map, &mem, 0, base, hi), SW_OK);
	sw_context_init(&seed, SW_ARCH_X64);
	sw_context_set(&seed, SW_X64_RIP, b.start + b.body);
	sw_context_set(&seed, SW_X64_RSP, base);
	sw_context_set(&seed, SW_X64_RBP, 0);

	n = 0;
	ck_assert_int_eq(sw_walk_frames(&t, &seed, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_DEPTH);
	ck_assert_uint_eq(n, expected);

	sw_walk_cache_init(&cache);
	for (int pass = 0; pass < 2; pass++) {
		n = 0;
		ck_assert_int_eq(sw_walk_frames_cached(&t, &seed, 0, count_cb, &n, 0, &cache, &err), SW_FAILED);
		ck_assert_int_eq(err.status, SW_E_DEPTH);
		ck_assert_uint_eq(n, expected);
	}

	n = 0;
	ck_assert_int_eq(sw_iter_init(&it, &t, &seed, 0, 0), SW_OK);
	while ((r = sw_iter_next(&it)) > 0)
		n++;
	ck_assert_int_eq(r, SW_E_DEPTH);
	ck_assert_uint_eq(n, expected);
	sw_iter_end(&it);

	sb_fini(&w);
	free(buf);
}
END_TEST

/*
 * The step bound follows the stack: 64 KiB hold at most 8192 frames of a
 * pointer or more, and as many Frames and trackers.  On a damaged stack
 * (damaged_stack.h) every frame moves SP by one byte: 65,536 frames would
 * fit, 2^21 steps would walk them all, and the bound the stack's size
 * gives must stop the walk with SW_E_DEPTH well before.
 */
START_TEST(step_bound_follows_stack)
{
	const unsigned per_record = 4, slots = SB_STACK_SIZE / 8;
	sw_context seed;
	sw_walk_error err;
	sb_world w;
	unsigned n = 0;

	sb_init(&w);
	ck_assert_int_eq(damaged_stack_method(w.map), SW_OK);
	damaged_stack_fill(w.buf, SB_STACK_SIZE, SB_STACK_BASE, &seed);
	w.thread.frame_head = 0;
	ck_assert_int_eq(sw_walk_frames(&w.thread, &seed, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_msg(err.status == SW_E_DEPTH, "status %d after %u frames", err.status, n);
	/* Each frame takes three steps: the bound is reached at a third of it. */
	ck_assert_uint_le(n, per_record * (3 * slots + 6) / 3);
	ck_assert_uint_gt(n, slots);
	sb_fini(&w);
}
END_TEST

static Suite *hostile_suite(void)
{
	Suite *s = suite_create("hostile");
	TCase *tc = tcase_create("garbage");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, random_frame_lists);
	tcase_add_test(tc, random_stacks_under_real_methods);
	tcase_add_test(tc, step_bound);
	tcase_add_test(tc, managed_step_bound);
	tcase_add_test(tc, step_bound_follows_stack);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hostile_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
