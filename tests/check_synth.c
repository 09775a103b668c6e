/*
 * check_synth.c - walk thousands of synthetic stacks and compare each walk
 * with the frames the generator's model machine predicts.
 *
 * Every walk test runs on each architecture the generator knows (x64, x86,
 * arm64), walked from this host: loop test number _i is the arch index.
 * Every seed is reproducible: a failure prints the arch, the seed, the
 * flags and the features, and `swsynth -a ARCH -s SEED -f FLAGS -F
 * FEATURES` shows the stack.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>

#define SEED_BASE 0x5eed0000ULL

static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };
#define NARCHES (int)(sizeof arches / sizeof arches[0])

/* How many failures to print before only counting them. */
#define MAX_PRINTED 8

/*
 * Create and check `count` stacks of `arch` from seeds first.. with
 * `flags`.  Returns the number of failures; the first few are printed with
 * their seeds.
 */
static unsigned check_seeds(sw_arch arch, uint64_t first, unsigned count, unsigned flags,
                            unsigned features, char *first_msg, size_t msg_size)
{
	sw_synth_params p;
	unsigned failures = 0;
	char msg[512];

	sw_synth_params_default(&p);
	p.features = features;
	for (unsigned i = 0; i < count; i++) {
		uint64_t seed = first + i;
		sw_synth *s = NULL;
		sw_status st = sw_synth_create(&s, arch, seed, &p);

		if (st != SW_OK) {
			snprintf(msg, sizeof msg, "%s seed %#" PRIx64 ": sw_synth_create: %s",
			         sw_arch_name(arch), seed, sw_strerror(st));
		} else {
			st = sw_synth_check(s, flags, msg, sizeof msg);
			sw_synth_destroy(s);
		}
		if (st == SW_OK)
			continue;
		if (failures < MAX_PRINTED)
			fprintf(stderr, "check_synth: %s [%s]; reproduce: swsynth -a %s -s %#" PRIx64
			        " -f %#x -F %#x\n", msg, sw_strerror(st), sw_arch_name(arch), seed,
			        flags, features);
		if (failures == 0 && first_msg)
			snprintf(first_msg, msg_size, "%s", msg);
		failures++;
	}
	return failures;
}

static void run_seeds(sw_arch arch, uint64_t first, unsigned count, unsigned flags,
                      unsigned features)
{
	char msg[512] = "";
	unsigned failures = check_seeds(arch, first, count, flags, features, msg, sizeof msg);

	ck_assert_msg(failures == 0, "%s: %u of %u stacks failed (flags %#x, features %#x); first: %s",
	              sw_arch_name(arch), failures, count, flags, features, msg);
}

/* ---- the walk against the model, flag by flag ----------------------------- */

START_TEST(test_flags_none)
{
	run_seeds(arches[_i], SEED_BASE, 10000, 0, SW_SYNTH_ALL);
}
END_TEST

START_TEST(test_functions_only)
{
	run_seeds(arches[_i], SEED_BASE + 100000, 1000, SW_WALK_FUNCTIONSONLY, SW_SYNTH_ALL);
}
END_TEST

START_TEST(test_notify)
{
	run_seeds(arches[_i], SEED_BASE + 200000, 1000,
	          SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT,
	          SW_SYNTH_ALL);
}
END_TEST

START_TEST(test_handle_skipped)
{
	run_seeds(arches[_i], SEED_BASE + 300000, 1000, SW_WALK_HANDLESKIPPEDFRAMES, SW_SYNTH_ALL);
}
END_TEST

START_TEST(test_quick_unwind)
{
	run_seeds(arches[_i], SEED_BASE + 400000, 1000, SW_WALK_QUICKUNWIND, SW_SYNTH_ALL);
}
END_TEST

/* LIGHTUNWIND assumes bodies only: seeds never stop in a prolog or epilog. */
START_TEST(test_light_unwind)
{
	run_seeds(arches[_i], SEED_BASE + 500000, 1000, SW_WALK_LIGHTUNWIND,
	          SW_SYNTH_ALL & ~SW_SYNTH_ANY_OFFSET);
}
END_TEST

START_TEST(test_pop_frames)
{
	run_seeds(arches[_i], SEED_BASE + 600000, 1000, SW_WALK_POPFRAMES, SW_SYNTH_ALL);
	/* d8-d15 are restored on arm64 only with UNWIND_FLOATS. */
	run_seeds(arches[_i], SEED_BASE + 650000, 1000, SW_WALK_UNWIND_FLOATS, SW_SYNTH_ALL);
}
END_TEST

/* The profiler's combination (DoStackSnapshot). */
START_TEST(test_snapshot_flags)
{
	run_seeds(arches[_i], SEED_BASE + 700000, 1000,
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
		SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT,
		SW_WALK_SKIPFUNCLETS, SW_WALK_UNWIND_FLOATS
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
		failures += check_seeds(arches[_i], SEED_BASE + 950000 + i, 1, flags, features,
		                        failures ? NULL : msg, sizeof msg);
	}
	ck_assert_msg(failures == 0, "%s: %u of 1000 stacks failed; first: %s",
	              sw_arch_name(arches[_i]), failures, msg);
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

	int arch = _i / 7, k = _i % 7;

	run_seeds(arches[arch], SEED_BASE + 800000 + 1000 * (uint64_t)k, 300, 0, features[k]);
}
END_TEST

/* A stack walked twice with POPFRAMES: the check restores the list. */
START_TEST(test_pop_frames_restores)
{
	for (unsigned i = 0; i < 200; i++) {
		sw_synth *s;
		char msg[512];
		sw_status st;

		ck_assert_int_eq(sw_synth_create(&s, arches[_i], SEED_BASE + 900000 + i, NULL), SW_OK);
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

		ck_assert_int_eq(sw_synth_create(&a, arches[_i], seed, NULL), SW_OK);
		ck_assert_int_eq(sw_synth_create(&b, arches[_i], seed, NULL), SW_OK);
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

		ck_assert_int_eq(sw_synth_create(&a, arches[_i], SEED_BASE * 3 + 2 * i, NULL), SW_OK);
		ck_assert_int_eq(sw_synth_create(&b, arches[_i], SEED_BASE * 3 + 2 * i + 1, NULL), SW_OK);
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

	ck_assert_int_eq(sw_synth_create(&s, arches[_i], 42, NULL), SW_OK);
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
	sw_arch arch = arches[_i];
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

		ck_assert_int_eq(sw_synth_create(&s, arch, 1000 + i, &p), SW_OK);
		n = sw_synth_expected(s, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, f, 16);
		ck_assert_uint_ge(n, 7);
		ck_assert_uint_le(n, 8);            /* perhaps a marker at the bottom */
		for (size_t k = 0; k < 7; k++) {
			ck_assert_uint_eq(f[k].state, SW_STATE_FRAMELESS);
			ck_assert_uint_eq(f[k].is_first, k == 0);
		}
		if (n == 8)
			ck_assert_uint_eq(f[7].state, SW_STATE_NATIVE_MARKER);
		ck_assert_uint_eq(sw_synth_thread(s)->arch, arch);
		ck_assert_uint_eq(sw_synth_context(s)->arch, arch);
		sw_synth_destroy(s);
	}

	/* Zero managed frames: an unmanaged seed and nothing else. */
	p.min_frames = p.max_frames = 0;
	p.features = SW_SYNTH_ALL;
	ck_assert_int_eq(sw_synth_create(&s, arch, 5, &p), SW_OK);
	ck_assert_uint_eq(sw_synth_expected(s, 0, NULL, 0), 0);
	ck_assert_uint_eq(sw_synth_expected(s, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, NULL, 0), 1);
	ck_assert_int_eq(sw_synth_check(s, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, NULL, 0), SW_OK);
	sw_synth_destroy(s);

	/* Bad arguments. */
	sw_synth_params_default(&p);
	p.min_frames = 5;
	p.max_frames = 4;
	s = (sw_synth *)&p;
	ck_assert_int_eq(sw_synth_create(&s, arch, 1, &p), SW_E_INVAL);
	ck_assert_ptr_null(s);
	sw_synth_params_default(&p);
	p.features = 0x100;
	ck_assert_int_eq(sw_synth_create(&s, arch, 1, &p), SW_E_INVAL);
	ck_assert_int_eq(sw_synth_create(NULL, arch, 1, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_NONE, 1, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_synth_create(&s, (sw_arch)99, 1, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_synth_check(NULL, 0, NULL, 0), SW_E_INVAL);
	ck_assert_ptr_null(sw_synth_thread(NULL));
	ck_assert_ptr_null(sw_synth_context(NULL));
	sw_synth_destroy(NULL);
}
END_TEST

/* ---- per-arch facts the tests below need ------------------------------------ */

static unsigned ip_reg(sw_arch arch)
{
	return arch == SW_ARCH_X86 ? SW_X86_EIP : arch == SW_ARCH_ARM64 ? SW_ARM64_PC : SW_X64_RIP;
}

static unsigned sp_reg(sw_arch arch)
{
	return arch == SW_ARCH_X86 ? SW_X86_ESP : arch == SW_ARCH_ARM64 ? SW_ARM64_SP : SW_X64_RSP;
}

/* Callee-saved registers other than the frame register; returns how many. */
static unsigned saved_regs(sw_arch arch, unsigned *regs)
{
	static const unsigned x64[] = { SW_X64_RBX, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15 };
	static const unsigned x86[] = { SW_X86_EBX, SW_X86_ESI, SW_X86_EDI };
	unsigned n = 0;

	switch (arch) {
	case SW_ARCH_X86:
		memcpy(regs, x86, sizeof x86);
		return 3;
	case SW_ARCH_ARM64:
		for (unsigned r = SW_ARM64_X19; r <= SW_ARM64_X28; r++)
			regs[n++] = r;
		for (unsigned r = SW_ARM64_D8; r <= SW_ARM64_D15; r++)
			regs[n++] = r;
		return n;
	default:
		memcpy(regs, x64, sizeof x64);
		return 5;
	}
}

/* A target pointer at addr, little-endian, of the arch's width. */
static uint64_t read_ptr(const sw_thread *t, uint64_t addr)
{
	unsigned char b[8];
	unsigned p = sw_arch_pointer_size(t->arch);
	uint64_t v = 0;

	ck_assert_int_eq(sw_memory_read(t->memory, addr, b, p), SW_OK);
	for (unsigned i = p; i-- > 0;)
		v = (v << 8) | b[i];
	return v;
}

static void write_ptr(const sw_thread *t, uint64_t addr, uint64_t v)
{
	unsigned char b[8];
	unsigned p = sw_arch_pointer_size(t->arch);

	for (unsigned i = 0; i < p; i++, v >>= 8)
		b[i] = (unsigned char)v;
	ck_assert_int_eq(sw_memory_write(t->memory, addr, b, p), SW_OK);
}

/*
 * The check can fail: overwrite one callee-saved register's save slot
 * (a location the walk reports) and the walk must disagree.
 */
START_TEST(test_corruption_detected)
{
	sw_arch arch = arches[_i];
	unsigned regs[SW_MAX_REGS], nregs = saved_regs(arch, regs);
	uint64_t flip = sw_arch_pointer_size(arch) == 8 ? 0x100000001ULL : 0x10001ULL;
	unsigned corrupted = 0;

	for (uint64_t seed = 1; seed < 400 && corrupted < 50; seed++) {
		sw_synth_frame f[64];
		sw_synth *s;
		const sw_thread *t;
		uint64_t loc = 0, value;
		size_t n;
		char msg[512];

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, NULL), SW_OK);
		t = sw_synth_thread(s);
		n = sw_synth_expected(s, 0, f, 64);
		for (size_t k = 1; k < n && k < 64 && !loc; k++) {
			if (f[k].state != SW_STATE_FRAMELESS)
				continue;
			for (unsigned j = 0; j < nregs && !loc; j++)
				if ((f[k].valid >> regs[j]) & 1)
					loc = f[k].locs[regs[j]];
		}
		if (loc) {
			ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_OK);
			value = read_ptr(t, loc);
			write_ptr(t, loc, value ^ flip);
			ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_E_MISMATCH);
			ck_assert_msg(strstr(msg, "seed") && strstr(msg, "expected"), "message: %s", msg);
			ck_assert_msg(strstr(msg, sw_arch_name(arch)) != NULL, "message: %s", msg);
			write_ptr(t, loc, value);
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
	sw_arch arch = arches[_i];
	unsigned ip = ip_reg(arch), tried = 0;

	for (uint64_t seed = 1000; seed < 1200; seed++) {
		sw_synth_frame f[64];
		sw_synth *s;
		const sw_thread *t;
		size_t n;

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, NULL), SW_OK);
		t = sw_synth_thread(s);
		n = sw_synth_expected(s, 0, f, 64);
		if (n >= 2 && n <= 64 && f[1].state == SW_STATE_FRAMELESS && f[1].locs[ip]) {
			write_ptr(t, f[1].locs[ip], 0);
			ck_assert_int_ne(sw_synth_check(s, 0, NULL, 0), SW_OK);
			tried++;
		}
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(tried, 10);
}
END_TEST

/* ---- what each arch's stacks must contain -------------------------------------- */

/* x86 is a 32-bit target: every address and register value fits in 32 bits. */
START_TEST(test_x86_values_are_32_bit)
{
	for (uint64_t seed = 1; seed <= 300; seed++) {
		const sw_context *c;
		sw_synth_frame f[128];
		sw_synth *s;
		size_t n;

		ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X86, seed, NULL), SW_OK);
		c = sw_synth_context(s);
		ck_assert_uint_le(sw_synth_thread(s)->stack_hi, UINT32_MAX);
		for (unsigned r = 0; r < SW_X86_NREGS; r++)
			ck_assert_uint_le(c->regs[r], UINT32_MAX);
		n = sw_synth_expected(s, 0, f, 128);
		for (size_t k = 0; k < n && k < 128; k++) {
			ck_assert_uint_le(f[k].ip, UINT32_MAX);
			ck_assert_uint_le(f[k].sp, UINT32_MAX);
			ck_assert_uint_le(f[k].frame, UINT32_MAX);
			for (unsigned r = 0; r < SW_X86_NREGS; r++) {
				ck_assert_uint_le(f[k].regs[r], UINT32_MAX);
				ck_assert_uint_le(f[k].locs[r], UINT32_MAX);
			}
		}
		sw_synth_destroy(s);
	}
}
END_TEST

/*
 * x86 walks must meet stdcall calls in progress: frames whose IP returns
 * from a callee that pops its arguments, where the return-address rule
 * (arguments still pushed) differs from the rule after the call.
 */
START_TEST(test_x86_callee_popped_args)
{
	unsigned differ = 0, frames = 0;

	for (uint64_t seed = 1; seed <= 500; seed++) {
		sw_synth_frame f[128];
		const sw_thread *t;
		sw_synth *s;
		size_t n;

		ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_X86, seed, NULL), SW_OK);
		t = sw_synth_thread(s);
		n = sw_synth_expected(s, 0, f, 128);
		for (size_t k = 1; k < n && k < 128; k++) {
			sw_swu_rule at_ra, after;
			sw_code_info ci;

			if (f[k].state != SW_STATE_FRAMELESS ||
			    sw_codemap_find(t->codemap, f[k].ip - 1, &ci) != SW_OK)
				continue;
			frames++;
			ck_assert_int_eq(sw_swu_decode_return_address(ci.unwind, ci.unwind_size,
			                                              (uint32_t)(f[k].ip - ci.start),
			                                              &at_ra), SW_OK);
			ck_assert_int_eq(sw_swu_decode(ci.unwind, ci.unwind_size,
			                               (uint32_t)(f[k].ip - ci.start), &after), SW_OK);
			differ += at_ra.cfa_offset != after.cfa_offset || at_ra.sp_offset != after.sp_offset;
		}
		sw_synth_destroy(s);
	}
	ck_assert_uint_gt(frames, 1000);
	ck_assert_uint_ge(differ, 20);
}
END_TEST

/*
 * arm64 stacks must contain leaf seeds (the return address still in lr),
 * return addresses signed with pointer authentication, and SP 16-aligned
 * in every frame.
 */
START_TEST(test_arm64_lr_and_pac)
{
	unsigned in_lr = 0, signed_ra = 0;

	for (uint64_t seed = 1; seed <= 1000; seed++) {
		sw_synth_frame f[128];
		const sw_thread *t;
		sw_synth *s;
		size_t n;

		ck_assert_int_eq(sw_synth_create(&s, SW_ARCH_ARM64, seed, NULL), SW_OK);
		t = sw_synth_thread(s);
		n = sw_synth_expected(s, 0, f, 128);
		/* The frame right after a managed seed got its IP from lr or a slot. */
		if (n >= 2 && f[0].state == SW_STATE_FRAMELESS && f[1].state == SW_STATE_FRAMELESS &&
		    f[1].locs[SW_ARM64_PC] == 0)
			in_lr++;
		for (size_t k = 0; k < n && k < 128; k++) {
			uint64_t ra;

			if (f[k].state != SW_STATE_FRAMELESS)
				continue;
			ck_assert_uint_eq(f[k].sp % 16, 0);
			if (!f[k].locs[SW_ARM64_PC])
				continue;
			ra = read_ptr(t, f[k].locs[SW_ARM64_PC]);
			/* The walk strips the code: the IP is the slot's low 48 bits. */
			ck_assert_uint_eq(ra & ~SW_ARM64_PTRAUTH_MASK, f[k].ip);
			signed_ra += (ra & SW_ARM64_PTRAUTH_MASK) != 0;
		}
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(in_lr, 20);
	ck_assert_uint_ge(signed_ra, 100);
}
END_TEST

/* Seeds, stacks and the generated code differ per arch; IP and SP come from the context. */
START_TEST(test_context_matches_first_frame)
{
	sw_arch arch = arches[_i];

	for (uint64_t seed = 1; seed <= 200; seed++) {
		sw_synth_frame f[1];
		sw_synth *s;
		const sw_context *c;

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, NULL), SW_OK);
		c = sw_synth_context(s);
		ck_assert_uint_eq(c->arch, arch);
		ck_assert_uint_eq(sw_context_ip(c), c->regs[ip_reg(arch)]);
		ck_assert_uint_eq(sw_context_sp(c), c->regs[sp_reg(arch)]);
		if (sw_synth_expected(s, 0, f, 1) >= 1 && f[0].is_first) {
			ck_assert_uint_eq(f[0].ip, sw_context_ip(c));
			ck_assert_uint_eq(f[0].sp, sw_context_sp(c));
		}
		sw_synth_destroy(s);
	}
}
END_TEST

static Suite *synth_suite(void)
{
	Suite *s = suite_create("synth");
	TCase *gen = tcase_create("generator");
	TCase *walk = tcase_create("walk");

	tcase_add_loop_test(gen, test_deterministic, 0, NARCHES);
	tcase_add_loop_test(gen, test_seeds_differ, 0, NARCHES);
	tcase_add_loop_test(gen, test_expected_capacity, 0, NARCHES);
	tcase_add_loop_test(gen, test_params, 0, NARCHES);
	tcase_add_loop_test(gen, test_corruption_detected, 0, NARCHES);
	tcase_add_loop_test(gen, test_corrupt_return_address, 0, NARCHES);
	tcase_add_loop_test(gen, test_context_matches_first_frame, 0, NARCHES);
	tcase_add_test(gen, test_x86_values_are_32_bit);
	tcase_add_test(gen, test_x86_callee_popped_args);
	tcase_add_test(gen, test_arm64_lr_and_pac);
	tcase_set_timeout(gen, 60);
	suite_add_tcase(s, gen);

	tcase_add_loop_test(walk, test_flags_none, 0, NARCHES);
	tcase_add_loop_test(walk, test_functions_only, 0, NARCHES);
	tcase_add_loop_test(walk, test_notify, 0, NARCHES);
	tcase_add_loop_test(walk, test_handle_skipped, 0, NARCHES);
	tcase_add_loop_test(walk, test_quick_unwind, 0, NARCHES);
	tcase_add_loop_test(walk, test_light_unwind, 0, NARCHES);
	tcase_add_loop_test(walk, test_pop_frames, 0, NARCHES);
	tcase_add_loop_test(walk, test_snapshot_flags, 0, NARCHES);
	tcase_add_loop_test(walk, test_flag_combinations, 0, NARCHES);
	tcase_add_loop_test(walk, test_features_alone, 0, 7 * NARCHES);
	tcase_add_loop_test(walk, test_pop_frames_restores, 0, NARCHES);
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
