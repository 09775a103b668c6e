/*
 * check_synth.c - walk thousands of synthetic stacks and compare each walk
 * with the frames the generator's model machine predicts.
 *
 * Every seed is reproducible: a failure prints the seed, the flags and the
 * features, and `swsynth -s SEED -f FLAGS -F FEATURES` shows the stack.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>

#define SEED_BASE 0x5eed0000ULL

/* How many failures to print before only counting them. */
#define MAX_PRINTED 8

/*
 * Create and check `count` stacks from seeds first.. with `flags`.  Returns
 * the number of failures; the first few are printed with their seeds.
 */
static unsigned check_seeds(uint64_t first, unsigned count, unsigned flags, unsigned features,
                            char *first_msg, size_t msg_size)
{
	sw_synth_params p;
	unsigned failures = 0;
	char msg[512];

	sw_synth_params_default(&p);
	p.features = features;
	for (unsigned i = 0; i < count; i++) {
		uint64_t seed = first + i;
		sw_synth *s = NULL;
		sw_status st = sw_synth_create(&s, SW_ARCH_X64, seed, &p);

		if (st != SW_OK) {
			snprintf(msg, sizeof msg, "seed %#" PRIx64 ": sw_synth_create: %s", seed,
			         sw_strerror(st));
		} else {
			st = sw_synth_check(s, flags, msg, sizeof msg);
			sw_synth_destroy(s);
		}
		if (st == SW_OK)
			continue;
		if (failures < MAX_PRINTED)
			fprintf(stderr, "check_synth: %s [%s]; reproduce: swsynth -s %#" PRIx64
			        " -f %#x -F %#x\n", msg, sw_strerror(st), seed, flags, features);
		if (failures == 0 && first_msg)
			snprintf(first_msg, msg_size, "%s", msg);
		failures++;
	}
	return failures;
}

static void run_seeds(uint64_t first, unsigned count, unsigned flags, unsigned features)
{
	char msg[512] = "";
	unsigned failures = check_seeds(first, count, flags, features, msg, sizeof msg);

	ck_assert_msg(failures == 0, "%u of %u stacks failed (flags %#x, features %#x); first: %s",
	              failures, count, flags, features, msg);
}

/* ---- the walk against the model, flag by flag ----------------------------- */

START_TEST(test_flags_none)
{
	run_seeds(SEED_BASE, 10000, 0, SW_SYNTH_ALL);
}
END_TEST

START_TEST(test_functions_only)
{
	run_seeds(SEED_BASE + 100000, 1000, SW_WALK_FUNCTIONSONLY, SW_SYNTH_ALL);
}
END_TEST

START_TEST(test_notify)
{
	run_seeds(SEED_BASE + 200000, 1000,
	          SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT,
	          SW_SYNTH_ALL);
}
END_TEST

START_TEST(test_handle_skipped)
{
	run_seeds(SEED_BASE + 300000, 1000, SW_WALK_HANDLESKIPPEDFRAMES, SW_SYNTH_ALL);
}
END_TEST

START_TEST(test_quick_unwind)
{
	run_seeds(SEED_BASE + 400000, 1000, SW_WALK_QUICKUNWIND, SW_SYNTH_ALL);
}
END_TEST

/* LIGHTUNWIND assumes bodies only: seeds never stop in a prolog or epilog. */
START_TEST(test_light_unwind)
{
	run_seeds(SEED_BASE + 500000, 1000, SW_WALK_LIGHTUNWIND,
	          SW_SYNTH_ALL & ~SW_SYNTH_ANY_OFFSET);
}
END_TEST

START_TEST(test_pop_frames)
{
	run_seeds(SEED_BASE + 600000, 1000, SW_WALK_POPFRAMES, SW_SYNTH_ALL);
}
END_TEST

/* The profiler's combination (DoStackSnapshot). */
START_TEST(test_snapshot_flags)
{
	run_seeds(SEED_BASE + 700000, 1000,
	          SW_WALK_FUNCTIONSONLY | SW_WALK_HANDLESKIPPEDFRAMES |
	          SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, SW_SYNTH_ALL);
}
END_TEST

/* Random combinations of every flag the walk knows (LIGHTUNWIND with body seeds only). */
START_TEST(test_flag_combinations)
{
	static const unsigned bits[] = {
		SW_WALK_FUNCTIONSONLY, SW_WALK_POPFRAMES, SW_WALK_QUICKUNWIND,
		SW_WALK_HANDLESKIPPEDFRAMES, SW_WALK_LIGHTUNWIND,
		SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT
	};
	unsigned failures = 0;
	char msg[512] = "";

	for (unsigned i = 0; i < 1000; i++) {
		unsigned flags = 0, features = SW_SYNTH_ALL;
		uint64_t x = (i + 1) * 0x9e3779b97f4a7c15ULL;

		for (unsigned b = 0; b < sizeof bits / sizeof bits[0]; b++)
			if ((x >> (17 + 3 * b)) & 1)
				flags |= bits[b];
		if (flags & SW_WALK_LIGHTUNWIND)
			features &= ~(unsigned)SW_SYNTH_ANY_OFFSET;
		failures += check_seeds(SEED_BASE + 950000 + i, 1, flags, features,
		                        failures ? NULL : msg, sizeof msg);
	}
	ck_assert_msg(failures == 0, "%u of 1000 stacks failed; first: %s", failures, msg);
}
END_TEST

/* Each feature alone, and none: the simpler shapes must work too. */
START_TEST(test_features_alone)
{
	static const unsigned features[] = {
		0, SW_SYNTH_NATIVE_BLOCKS, SW_SYNTH_TRANSITION_FRAMES, SW_SYNTH_INACTIVE_ICFS,
		SW_SYNTH_ANY_OFFSET, SW_SYNTH_NATIVE_BLOCKS | SW_SYNTH_NATIVE_SEED,
		SW_SYNTH_TRANSITION_FRAMES | SW_SYNTH_NATIVE_SEED
	};

	run_seeds(SEED_BASE + 800000 + 1000 * (uint64_t)_i, 300, 0, features[_i]);
}
END_TEST

/* A stack walked twice with POPFRAMES: the check restores the list. */
START_TEST(test_pop_frames_restores)
{
	for (unsigned i = 0; i < 200; i++) {
		sw_synth *s;
		char msg[512];
		sw_status st;

		ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X64, SEED_BASE + 900000 + i, NULL), SW_OK);
		st = sw_synth_check(s, SW_WALK_POPFRAMES, msg, sizeof msg);
		ck_assert_msg(st == SW_OK, "%s", msg);
		st = sw_synth_check(s, SW_WALK_POPFRAMES, msg, sizeof msg);
		ck_assert_msg(st == SW_OK, "second walk: %s", msg);
		st = sw_synth_check(s, 0, msg, sizeof msg);
		ck_assert_msg(st == SW_OK, "walk after POPFRAMES: %s", msg);
		sw_synth_destroy(s);
	}
}
END_TEST

/* ---- the generator itself --------------------------------------------------- */

static int same_expectation(const sw_synth *a, const sw_synth *b, unsigned flags)
{
	size_t na = sw_synth_expected(a, flags, NULL, 0);
	size_t nb = sw_synth_expected(b, flags, NULL, 0);
	sw_synth_frame *fa, *fb;
	int same;

	if (na != nb)
		return 0;
	fa = calloc(na + 1, sizeof *fa);
	fb = calloc(nb + 1, sizeof *fb);
	ck_assert_ptr_nonnull(fa);
	ck_assert_ptr_nonnull(fb);
	ck_assert_uint_eq(sw_synth_expected(a, flags, fa, na), na);
	ck_assert_uint_eq(sw_synth_expected(b, flags, fb, nb), nb);
	same = memcmp(fa, fb, na * sizeof *fa) == 0;
	free(fa);
	free(fb);
	return same;
}

static int same_stack(const sw_synth *a, const sw_synth *b)
{
	const sw_thread *ta = sw_synth_thread(a), *tb = sw_synth_thread(b);
	size_t size = (size_t)(ta->stack_hi - ta->stack_lo);
	unsigned char *ba, *bb;
	int same;

	if (ta->stack_lo != tb->stack_lo || ta->stack_hi != tb->stack_hi ||
	    ta->frame_head != tb->frame_head)
		return 0;
	ba = malloc(size);
	bb = malloc(size);
	ck_assert_ptr_nonnull(ba);
	ck_assert_ptr_nonnull(bb);
	ck_assert_int_eq(sw_memory_read(ta->memory, ta->stack_lo, ba, size), SW_OK);
	ck_assert_int_eq(sw_memory_read(tb->memory, tb->stack_lo, bb, size), SW_OK);
	same = memcmp(ba, bb, size) == 0;
	free(ba);
	free(bb);
	return same;
}

START_TEST(test_deterministic)
{
	for (unsigned i = 0; i < 100; i++) {
		sw_synth *a, *b;
		uint64_t seed = SEED_BASE * 7 + i;

		ck_assert_int_eq(sw_synth_create(&a, SW_ARCH_X64, seed, NULL), SW_OK);
		ck_assert_int_eq(sw_synth_create(&b, SW_ARCH_X64, seed, NULL), SW_OK);
		ck_assert_msg(same_expectation(a, b, 0), "seed %#" PRIx64 ": expectations differ", seed);
		ck_assert_msg(same_expectation(a, b, SW_WALK_QUICKUNWIND |
		                               SW_WALK_NOTIFY_ON_U2M_TRANSITIONS),
		              "seed %#" PRIx64 ": quick expectations differ", seed);
		ck_assert_msg(same_stack(a, b), "seed %#" PRIx64 ": stack images differ", seed);
		ck_assert(memcmp(sw_synth_context(a), sw_synth_context(b), sizeof(sw_context)) == 0);
		sw_synth_destroy(a);
		sw_synth_destroy(b);
	}
}
END_TEST

START_TEST(test_seeds_differ)
{
	unsigned same = 0;

	for (unsigned i = 0; i < 100; i++) {
		sw_synth *a, *b;

		ck_assert_int_eq(sw_synth_create(&a, SW_ARCH_X64, SEED_BASE * 3 + 2 * i, NULL), SW_OK);
		ck_assert_int_eq(sw_synth_create(&b, SW_ARCH_X64, SEED_BASE * 3 + 2 * i + 1, NULL), SW_OK);
		same += same_expectation(a, b, 0);
		sw_synth_destroy(a);
		sw_synth_destroy(b);
	}
	ck_assert_uint_eq(same, 0);
}
END_TEST

/* The count is the same whatever the capacity, and out[] beyond cap is untouched. */
START_TEST(test_expected_capacity)
{
	sw_synth *s;
	sw_synth_frame f[2];
	size_t n;

	ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X64, 42, NULL), SW_OK);
	n = sw_synth_expected(s, 0, NULL, 0);
	ck_assert_uint_ge(n, 1);
	memset(f, 0xa5, sizeof f);
	ck_assert_uint_eq(sw_synth_expected(s, 0, f, 1), n);
	ck_assert_uint_eq(f[1].state, 0xa5a5a5a5u);
	ck_assert_uint_eq(sw_synth_expected(NULL, 0, f, 2), 0);
	sw_synth_destroy(s);
}
END_TEST

/* The frame counts the parameters ask for, and what they contain. */
START_TEST(test_params)
{
	sw_synth_params p;
	sw_synth *s;

	sw_synth_params_default(&p);
	ck_assert_uint_eq(p.min_frames, 1);
	ck_assert_uint_eq(p.max_frames, 24);
	ck_assert_uint_eq(p.features, SW_SYNTH_ALL);

	/* No features: exactly n managed frames, no Frames, no markers. */
	p.min_frames = p.max_frames = 7;
	p.features = 0;
	for (unsigned i = 0; i < 50; i++) {
		sw_synth_frame f[16];
		size_t n;

		ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X64, 1000 + i, &p), SW_OK);
		n = sw_synth_expected(s, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, f, 16);
		ck_assert_uint_ge(n, 7);
		ck_assert_uint_le(n, 8);            /* perhaps a marker at the bottom */
		for (size_t k = 0; k < 7; k++) {
			ck_assert_uint_eq(f[k].state, SW_STATE_FRAMELESS);
			ck_assert_uint_eq(f[k].is_first, k == 0);
		}
		if (n == 8)
			ck_assert_uint_eq(f[7].state, SW_STATE_NATIVE_MARKER);
		ck_assert_uint_eq(sw_synth_thread(s)->arch, SW_ARCH_X64);
		sw_synth_destroy(s);
	}

	/* Zero managed frames: an unmanaged seed and nothing else. */
	p.min_frames = p.max_frames = 0;
	p.features = SW_SYNTH_ALL;
	ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X64, 5, &p), SW_OK);
	ck_assert_uint_eq(sw_synth_expected(s, 0, NULL, 0), 0);
	ck_assert_uint_eq(sw_synth_expected(s, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, NULL, 0), 1);
	ck_assert_int_eq(sw_synth_check(s, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, NULL, 0), SW_OK);
	sw_synth_destroy(s);

	/* Bad arguments. */
	sw_synth_params_default(&p);
	p.min_frames = 5;
	p.max_frames = 4;
	s = (sw_synth *)&p;
	ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X64, 1, &p), SW_E_INVAL);
	ck_assert_ptr_null(s);
	sw_synth_params_default(&p);
	p.features = 0x100;
	ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X64, 1, &p), SW_E_INVAL);
	ck_assert_int_eq(sw_synth_create(NULL, SW_ARCH_X64, 1, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_ARM64, 1, NULL), SW_E_UNSUPPORTED);
	ck_assert_int_eq(sw_synth_create(&s, (sw_arch)99, 1, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_synth_check(NULL, 0, NULL, 0), SW_E_INVAL);
	ck_assert_ptr_null(sw_synth_thread(NULL));
	ck_assert_ptr_null(sw_synth_context(NULL));
	sw_synth_destroy(NULL);
}
END_TEST

/*
 * The check can fail: overwrite one callee-saved register's save slot
 * (a location the walk reports) and the walk must disagree.
 */
START_TEST(test_corruption_detected)
{
	unsigned corrupted = 0;

	for (uint64_t seed = 1; seed < 400 && corrupted < 50; seed++) {
		static const unsigned regs[] = { SW_X64_RBX, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15 };
		sw_synth_frame f[64];
		sw_synth *s;
		const sw_thread *t;
		uint64_t loc = 0, value;
		size_t n;
		char msg[512];

		ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X64, seed, NULL), SW_OK);
		t = sw_synth_thread(s);
		n = sw_synth_expected(s, 0, f, 64);
		for (size_t k = 1; k < n && k < 64 && !loc; k++) {
			if (f[k].state != SW_STATE_FRAMELESS)
				continue;
			for (unsigned j = 0; j < 5 && !loc; j++)
				if ((f[k].valid >> regs[j]) & 1)
					loc = f[k].locs[regs[j]];
		}
		if (loc) {
			ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_OK);
			ck_assert_int_eq(sw_memory_read(t->memory, loc, &value, 8), SW_OK);
			value ^= 0x100000001ULL;
			ck_assert_int_eq(sw_memory_write(t->memory, loc, &value, 8), SW_OK);
			ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_E_MISMATCH);
			ck_assert_msg(strstr(msg, "seed") && strstr(msg, "expected"), "message: %s", msg);
			value ^= 0x100000001ULL;
			ck_assert_int_eq(sw_memory_write(t->memory, loc, &value, 8), SW_OK);
			ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_OK);
			corrupted++;
		}
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(corrupted, 10);
}
END_TEST

/* A corrupted return address changes the frames: also a mismatch or a walk error, never OK. */
START_TEST(test_corrupt_return_address)
{
	unsigned tried = 0;

	for (uint64_t seed = 1000; seed < 1200; seed++) {
		sw_synth_frame f[64];
		sw_synth *s;
		const sw_thread *t;
		uint64_t value;
		size_t n;

		ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X64, seed, NULL), SW_OK);
		t = sw_synth_thread(s);
		n = sw_synth_expected(s, 0, f, 64);
		if (n >= 2 && n <= 64 && f[1].state == SW_STATE_FRAMELESS && f[1].locs[SW_X64_RIP]) {
			value = 0;
			ck_assert_int_eq(sw_memory_write(t->memory, f[1].locs[SW_X64_RIP], &value, 8), SW_OK);
			ck_assert_int_ne(sw_synth_check(s, 0, NULL, 0), SW_OK);
			tried++;
		}
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(tried, 10);
}
END_TEST

static Suite *synth_suite(void)
{
	Suite *s = suite_create("synth");
	TCase *gen = tcase_create("generator");
	TCase *walk = tcase_create("walk");

	tcase_add_test(gen, test_deterministic);
	tcase_add_test(gen, test_seeds_differ);
	tcase_add_test(gen, test_expected_capacity);
	tcase_add_test(gen, test_params);
	tcase_add_test(gen, test_corruption_detected);
	tcase_add_test(gen, test_corrupt_return_address);
	tcase_set_timeout(gen, 60);
	suite_add_tcase(s, gen);

	tcase_add_test(walk, test_flags_none);
	tcase_add_test(walk, test_functions_only);
	tcase_add_test(walk, test_notify);
	tcase_add_test(walk, test_handle_skipped);
	tcase_add_test(walk, test_quick_unwind);
	tcase_add_test(walk, test_light_unwind);
	tcase_add_test(walk, test_pop_frames);
	tcase_add_test(walk, test_snapshot_flags);
	tcase_add_test(walk, test_flag_combinations);
	tcase_add_loop_test(walk, test_features_alone, 0, 7);
	tcase_add_test(walk, test_pop_frames_restores);
	tcase_set_timeout(walk, 120);
	suite_add_tcase(s, walk);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(synth_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
