/*
 * check_synth.c - walk thousands of synthetic stacks and compare each walk
 * with the frames the generator's model machine predicts.
 *
 * Every walk test runs on each architecture the generator knows (x64, x86,
 * arm64), walked from this host: loop test number _i is the arch index.
 * Every seed is reproducible: a failure prints the arch, the seed, the
 * flags and the features, and `swsynth -a ARCH -s SEED -f FLAGS -F
 * FEATURES` shows the stack (with -g and -t TYPE for the GC-root and
 * Frame-kind tests: the expected roots under each frame).
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>

#include "rounds.h"

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

/*
 * Counts of seeds below are the plain check's; the sanitized check and
 * distcheck walk a tenth of them (tests/rounds.h), and a count that such a
 * run must reach, at_least(), shrinks with it.
 */
static unsigned at_least(unsigned full_run_count)
{
	return test_rounds(full_run_count);
}

static void run_seeds(sw_arch arch, uint64_t first, unsigned count, unsigned flags,
                      unsigned features)
{
	char msg[512] = "";
	unsigned failures;

	count = test_rounds(count);
	failures = check_seeds(arch, first, count, flags, features, msg, sizeof msg);

	ck_assert_msg(failures == 0, "%s: %u of %u stacks failed (flags %#x, features %#x); first: %s",
	              sw_arch_name(arch), failures, count, flags, features, msg);
}

/* What a root-checked run met, summed over its stacks. */
struct root_stats {
	unsigned long frames, roots, reg_roots, noreg, funclets, filters, parents, no_gc;
	unsigned long interrupted, faulted, resumed, with_type, no_frame;
	unsigned long type_roots;       /* roots the Frames of the counted type report */
};

/* Count what the expectation holds for one stack (type: a Frame type to count, or 0). */
static void add_stats(const sw_synth *s, unsigned flags, uint32_t type, struct root_stats *rs)
{
	size_t n = sw_synth_expected(s, flags, NULL, 0);
	sw_synth_frame *f = calloc(n + 1, sizeof *f);
	sw_gc_root roots[64];

	ck_assert_ptr_nonnull(f);
	sw_synth_expected(s, flags, f, n);
	for (size_t k = 0; k < n; k++) {
		size_t nr = 0;
		sw_status st = sw_synth_expected_roots(s, flags, k, roots, 64, &nr);

		ck_assert(st == SW_OK || st == SW_E_NOREG);
		rs->frames++;
		rs->noreg += st == SW_E_NOREG;
		rs->roots += nr;
		for (size_t r = 0; r < nr && r < 64; r++)
			rs->reg_roots += roots[r].reg != ~0u;
		rs->funclets += f[k].is_funclet;
		rs->filters += f[k].is_filter_funclet;
		rs->parents += f[k].is_parent_of_funclet;
		rs->no_gc += !f[k].should_report_gc;
		rs->interrupted += f[k].is_interrupted;
		rs->faulted += f[k].has_faulted;
		rs->resumed += f[k].is_first && k > 0;
		rs->no_frame += f[k].state == SW_STATE_NO_FRAME_TRANSITION;
		rs->with_type += type && f[k].frame_type == type &&
		                 (f[k].state == SW_STATE_FRAME || f[k].state == SW_STATE_SKIPPED_FRAME);
		if (type && f[k].frame_type == type && f[k].state == SW_STATE_FRAME)
			rs->type_roots += nr;
	}
	free(f);
}

/*
 * Create `count` stacks and walk each with sw_synth_check_roots: frames
 * and every frame's GC roots must match.  With `type`, every stack must
 * hold a Frame of that type (params.frame_type) and show it to a walk
 * without flags.  Sums what was met into *rs when not NULL.
 */
static void run_root_seeds(sw_arch arch, uint64_t first, unsigned count, unsigned flags,
                           unsigned features, uint32_t type, struct root_stats *rs)
{
	struct root_stats local;
	sw_synth_params p;
	unsigned failures = 0, missing_type = 0;
	char msg[512], first_msg[512] = "";

	if (!rs)
		rs = &local;
	count = test_rounds(count);
	memset(rs, 0, sizeof *rs);
	sw_synth_params_default(&p);
	p.features = features;
	p.frame_type = type;
	for (unsigned i = 0; i < count; i++) {
		uint64_t seed = first + i;
		sw_synth *s = NULL;
		sw_status st = sw_synth_create(&s, arch, seed, &p);

		if (st != SW_OK) {
			snprintf(msg, sizeof msg, "%s seed %#" PRIx64 ": sw_synth_create: %s",
			         sw_arch_name(arch), seed, sw_strerror(st));
		} else {
			st = sw_synth_check_roots(s, flags, msg, sizeof msg);
			add_stats(s, flags, type, rs);
			if (type) {
				struct root_stats all;

				memset(&all, 0, sizeof all);
				add_stats(s, 0, type, &all);
				missing_type += all.with_type == 0;
			}
			sw_synth_destroy(s);
		}
		if (st == SW_OK)
			continue;
		if (failures < MAX_PRINTED)
			fprintf(stderr, "check_synth: %s [%s]; reproduce: swsynth -g -a %s -s %#" PRIx64
			        " -f %#x -F %#x -t %u\n", msg, sw_strerror(st), sw_arch_name(arch), seed,
			        flags, features, type);
		if (failures == 0)
			snprintf(first_msg, sizeof first_msg, "%s", msg);
		failures++;
	}
	ck_assert_msg(failures == 0, "%s: %u of %u stacks failed the root check (flags %#x, "
	              "features %#x, type %u); first: %s", sw_arch_name(arch), failures, count,
	              flags, features, type, first_msg);
	ck_assert_msg(missing_type == 0, "%s: %u of %u stacks lack a Frame of type %u",
	              sw_arch_name(arch), missing_type, count, type);
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
	/* arm64's d8-d15 are restored either way; the flag only changes what a Frame does with them. */
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
		SW_WALK_SKIPFUNCLETS, SW_WALK_UNWIND_FLOATS, SW_WALK_NOTIFY_ON_NO_FRAME_TRANSITIONS,
		SW_WALK_DISABLE_MISSING_FRAME_DETECTION, SW_WALK_ALLOW_ASYNC_STACK_WALK,
		SW_WALK_THREAD_IS_SUSPENDED
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

static const unsigned feature_sets[] = {
	0, SW_SYNTH_NATIVE_BLOCKS, SW_SYNTH_TRANSITION_FRAMES, SW_SYNTH_INACTIVE_ICFS,
	SW_SYNTH_ANY_OFFSET, SW_SYNTH_NATIVE_BLOCKS | SW_SYNTH_NATIVE_SEED,
	SW_SYNTH_TRANSITION_FRAMES | SW_SYNTH_NATIVE_SEED,
	SW_SYNTH_CONTEXT_FRAMES, SW_SYNTH_HELPER_FRAMES, SW_SYNTH_NATIVE_BLOCKS | SW_SYNTH_ENTRY_FRAMES,
	SW_SYNTH_TRANSITION_FRAMES | SW_SYNTH_DEBUGGER_MARKERS, SW_SYNTH_FUNCLETS, SW_SYNTH_GC_INFO,
	SW_SYNTH_FUNCLETS | SW_SYNTH_GC_INFO | SW_SYNTH_CONTEXT_FRAMES, SW_SYNTH_TRACKERS,
	SW_SYNTH_TRACKERS | SW_SYNTH_NATIVE_SEED | SW_SYNTH_GC_INFO,
	SW_SYNTH_NATIVE_BLOCKS | SW_SYNTH_NATIVE_SEED | SW_SYNTH_STALE_FRAMES
};
#define NFEATURE_SETS (int)(sizeof feature_sets / sizeof feature_sets[0])

/* Each feature alone, and none: the simpler shapes must work too. */
START_TEST(test_features_alone)
{
	int arch = _i / NFEATURE_SETS, k = _i % NFEATURE_SETS;

	run_seeds(arches[arch], SEED_BASE + 800000 + 1000 * (uint64_t)k, 300, 0, feature_sets[k]);
	run_root_seeds(arches[arch], SEED_BASE + 850000 + 1000 * (uint64_t)k, 300, 0,
	               feature_sets[k], 0, NULL);
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

/* ---- GC roots --------------------------------------------------------------------- */

static uint64_t read_ptr(const sw_thread *t, uint64_t addr);
static void write_ptr(const sw_thread *t, uint64_t addr, uint64_t v);
static unsigned ip_reg(sw_arch arch);

/*
 * The GC's walk over 10,000 stacks per arch: every frame's roots exactly
 * as the model predicts, none missing, none extra; and the stacks hold
 * what a GC walk must meet (slots, registers, funclets, Frames).
 */
START_TEST(test_gc_roots_10000)
{
	struct root_stats rs;

	run_root_seeds(arches[_i], SEED_BASE + 2000000, 10000, 0, SW_SYNTH_ALL, 0, &rs);
	fprintf(stderr, "check_synth: %s: %u stacks, %lu frames, %lu roots (%lu in registers),"
	        " %lu funclets\n", sw_arch_name(arches[_i]), test_rounds(10000), rs.frames, rs.roots,
	        rs.reg_roots, rs.funclets);
	ck_assert_uint_ge(rs.roots, at_least(50000));
	ck_assert_uint_ge(rs.reg_roots, at_least(10000));
	ck_assert_uint_ge(rs.funclets, at_least(1000));
	ck_assert_uint_eq(rs.noreg, 0);     /* a full unwind loses no register */
}
END_TEST

/* One test per walk flag, frames and roots on every arch. */
static const unsigned walk_flags[] = {
	SW_WALK_FUNCTIONSONLY, SW_WALK_SKIPFUNCLETS, SW_WALK_POPFRAMES, SW_WALK_QUICKUNWIND,
	SW_WALK_HANDLESKIPPEDFRAMES, SW_WALK_LIGHTUNWIND, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, SW_WALK_GC_FUNCLET_REFERENCE_REPORTING,
	SW_WALK_UNWIND_FLOATS, SW_WALK_ADDRESSES_ONLY
};
#define NWALK_FLAGS (int)(sizeof walk_flags / sizeof walk_flags[0])

START_TEST(test_walk_flag)
{
	sw_arch arch = arches[_i % NARCHES];
	unsigned flags = walk_flags[_i / NARCHES];
	unsigned features = SW_SYNTH_ALL;
	struct root_stats rs, none;

	/* LIGHTUNWIND promises bodies only. */
	if (flags & SW_WALK_LIGHTUNWIND)
		features &= ~(unsigned)SW_SYNTH_ANY_OFFSET;
	run_root_seeds(arch, SEED_BASE + 3000000 + 10000 * (uint64_t)(_i / NARCHES), 1000, flags,
	               features, 0, &rs);
	run_root_seeds(arch, SEED_BASE + 3000000 + 10000 * (uint64_t)(_i / NARCHES), 1000, 0,
	               features, 0, &none);
	switch (flags) {
	case SW_WALK_QUICKUNWIND:
	case SW_WALK_LIGHTUNWIND:
		/*
		 * CoreCLR's: QUICKUNWIND loses registers on x86 alone (64-bit
		 * targets unwind in full), LIGHTUNWIND on x64 alone
		 * (HAS_LIGHTUNWIND, inc/eetwain.h).
		 */
		if (flags == SW_WALK_QUICKUNWIND ? sw_arch_pointer_size(arch) == 8 : arch != SW_ARCH_X64) {
			ck_assert_uint_eq(rs.noreg, none.noreg);
			ck_assert_uint_eq(rs.frames, none.frames);
			break;
		}
		/* fall through */
	case SW_WALK_ADDRESSES_ONLY:
		/* Live references in lost callee-saved registers: SW_E_NOREG, predicted. */
		ck_assert_uint_ge(rs.noreg, at_least(100));
		break;
	case SW_WALK_FUNCTIONSONLY:
	case SW_WALK_SKIPFUNCLETS:
		/* Handlers hidden; filters reported (CoreCLR's StackFrameIterator::Filter). */
		ck_assert_uint_eq(rs.funclets, rs.filters);
		ck_assert_uint_ge(rs.filters, at_least(50));
		ck_assert_uint_ge(rs.parents, at_least(100));
		ck_assert_uint_lt(rs.frames, none.frames);
		break;
	case SW_WALK_GC_FUNCLET_REFERENCE_REPORTING:
		ck_assert_uint_ge(rs.funclets, at_least(100));
		ck_assert_uint_ge(rs.no_gc, at_least(50));
		ck_assert_uint_lt(rs.frames, none.frames);
		ck_assert_uint_eq(rs.noreg, 0);
		break;
	default:
		ck_assert_uint_eq(rs.noreg, 0);
		ck_assert_uint_eq(rs.no_gc, 0);
		break;
	}
}
END_TEST

/* One test per Frame kind: a stack generator option forces it into every stack. */
static const uint32_t frame_kinds[] = {
	SW_FRAME_INLINED_CALL, SW_FRAME_TRANSITION, SW_FRAME_FAULTING_EXCEPTION,
	SW_FRAME_RESUMABLE, SW_FRAME_REDIRECTED_THREAD, SW_FRAME_SOFTWARE_EXCEPTION,
	SW_FRAME_HELPER_METHOD, SW_FRAME_UNMANAGED_TO_MANAGED, SW_FRAME_FUNC_EVAL,
	SW_FRAME_DEBUGGER_CLASS_INIT, SW_FRAME_DEBUGGER_EXIT, SW_FRAME_DEBUGGER_U2M_CATCH,
	SW_FRAME_EXCEPTION_FILTER, SW_FRAME_PROTECT_BYREFS, SW_FRAME_PROTECT_VALUE_CLASS
};
#define NFRAME_KINDS (int)(sizeof frame_kinds / sizeof frame_kinds[0])

START_TEST(test_frame_kind)
{
	sw_arch arch = arches[_i % NARCHES];
	uint32_t type = frame_kinds[_i / NARCHES];
	uint64_t first = SEED_BASE + 4000000 + 10000 * (uint64_t)(_i / NARCHES);
	struct root_stats rs;

	run_root_seeds(arch, first, 300, 0, SW_SYNTH_ALL, type, &rs);
	ck_assert_uint_ge(rs.with_type, at_least(300));
	switch (type) {
	case SW_FRAME_FAULTING_EXCEPTION:
		ck_assert_uint_ge(rs.faulted, at_least(100));
		ck_assert_uint_eq(rs.faulted, rs.interrupted);
		break;
	case SW_FRAME_SOFTWARE_EXCEPTION:
		ck_assert_uint_ge(rs.interrupted, at_least(100));
		ck_assert_uint_eq(rs.faulted, 0);
		break;
	case SW_FRAME_RESUMABLE:
	case SW_FRAME_REDIRECTED_THREAD:
	case SW_FRAME_FUNC_EVAL:
		ck_assert_uint_ge(rs.resumed, at_least(100));
		ck_assert_uint_eq(rs.interrupted, 0);
		break;
	case SW_FRAME_PROTECT_BYREFS:
		/*
		 * Half of them protect one object by its ByRefInfo entry, which
		 * GcScanRoots reports (vm/frames.cpp): the walk must too.
		 */
		ck_assert_uint_ge(rs.type_roots, at_least(50));
		break;
	case SW_FRAME_EXCEPTION_FILTER:
	case SW_FRAME_PROTECT_VALUE_CLASS:
		ck_assert_uint_eq(rs.type_roots, 0);
		break;
	default:
		break;
	}
	/* And the profiler's and the GC's flags over the same stacks. */
	run_root_seeds(arch, first, 300, SW_WALK_FUNCTIONSONLY | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	               SW_SYNTH_ALL, type, NULL);
	run_root_seeds(arch, first, 300, SW_WALK_GC_FUNCLET_REFERENCE_REPORTING | SW_WALK_POPFRAMES,
	               SW_SYNTH_ALL, type, NULL);
}
END_TEST

/* ---- the flags the walk of a synthetic stack needs trackers or stale Frames for ---- */

/* How many trackers the thread's list holds. */
static unsigned count_trackers(const sw_thread *t)
{
	unsigned n = 0;

	if (!t->exception_head)
		return 0;
	for (uint64_t a = read_ptr(t, t->exception_head); a && n < 10000; a = read_ptr(t, a))
		n++;
	return n;
}

/*
 * NOTIFY_ON_NO_FRAME_TRANSITIONS over 1,000 stacks per arch, frames and
 * roots: each exception tracker reported before its faulted frame, which
 * is interrupted and faulted either way; stale trackers (deeper than a
 * managed frame's caller SP) passed silently.
 */
START_TEST(test_no_frame_transitions)
{
	sw_arch arch = arches[_i];
	uint64_t first = SEED_BASE + 5000000;
	unsigned flags = SW_WALK_NOTIFY_ON_NO_FRAME_TRANSITIONS;
	unsigned long listed = 0;
	struct root_stats rs, none;
	sw_synth_params p;

	run_root_seeds(arch, first, 1000, flags, SW_SYNTH_ALL, 0, &rs);
	run_root_seeds(arch, first, 1000, 0, SW_SYNTH_ALL, 0, &none);
	sw_synth_params_default(&p);
	for (unsigned i = 0; i < test_rounds(1000); i++) {
		sw_synth *s;

		ck_assert_int_eq(sw_synth_create(&s, arch, first + i, &p), SW_OK);
		listed += count_trackers(sw_synth_thread(s));
		sw_synth_destroy(s);
	}
	fprintf(stderr, "check_synth: %s: NO_FRAME_TRANSITIONS: %lu trackers reported, %lu stale"
	        " passed, %lu faulted frames\n", sw_arch_name(arch), rs.no_frame,
	        listed - rs.no_frame, rs.faulted);
	ck_assert_uint_ge(rs.no_frame, at_least(100));
	ck_assert_uint_eq(none.no_frame, 0);
	/* The flag adds the transitions and changes nothing else. */
	ck_assert_uint_eq(rs.frames, none.frames + rs.no_frame);
	ck_assert_uint_eq(rs.faulted, none.faulted);
	ck_assert_uint_ge(rs.faulted, rs.no_frame);
	ck_assert_uint_eq(rs.noreg, 0);
	/* Trackers the walk passed without a word. */
	ck_assert_uint_ge(listed - rs.no_frame, at_least(50));
	/* And with the profiler's and the GC's flags. */
	run_root_seeds(arch, first, 300, flags | SW_WALK_FUNCTIONSONLY |
	               SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, SW_SYNTH_ALL, 0, NULL);
	run_root_seeds(arch, first, 300, flags | SW_WALK_GC_FUNCLET_REFERENCE_REPORTING |
	               SW_WALK_POPFRAMES, SW_SYNTH_ALL, 0, NULL);
}
END_TEST

/*
 * The tracker check can fail: change a callee-saved register or the IP in
 * the context record of a tracker the walk follows.
 */
START_TEST(test_tracker_corruption_detected)
{
	sw_arch arch = arches[_i];
	unsigned p = sw_arch_pointer_size(arch), ip = ip_reg(arch);
	uint64_t flip = p == 8 ? 0x100000001ULL : 0x10001ULL;
	uint64_t ip_flip = arch == SW_ARCH_ARM64 ? 4 : 1;
	unsigned reg_tried = 0, ip_tried = 0, ip_mismatch = 0;

	for (uint64_t seed = 1; seed < 400 && (reg_tried < 30 || ip_tried < 30); seed++) {
		sw_synth_frame f[128];
		const sw_thread *t;
		sw_synth *s;
		size_t n;
		char msg[512];

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, NULL), SW_OK);
		t = sw_synth_thread(s);
		n = sw_synth_expected(s, SW_WALK_NOTIFY_ON_NO_FRAME_TRANSITIONS, f, 128);
		for (size_t k = 0; k + 1 < n && k + 1 < 128; k++) {
			uint64_t record, slot = 0, value;
			const sw_synth_frame *ff;
			size_t j = k + 1;
			sw_status st;

			if (f[k].state != SW_STATE_NO_FRAME_TRANSITION)
				continue;
			/* The faulted frame, after the Frames skipped in its area. */
			while (j < n && j < 128 && f[j].state == SW_STATE_SKIPPED_FRAME)
				j++;
			if (j >= n || j >= 128)
				break;
			ff = &f[j];
			ck_assert_uint_eq(ff->state, SW_STATE_FRAMELESS);
			ck_assert(ff->is_interrupted && ff->has_faulted && !ff->is_first);
			record = read_ptr(t, f[k].frame + p);
			/* The faulted frame's registers are the record's slots (SP aside). */
			ck_assert_uint_eq(ff->locs[ip], record + 16 + 8 * (uint64_t)ip);
			for (unsigned r = 0; r < SW_MAX_REGS && !slot; r++)
				if (r != ip && ff->locs[r] && ((ff->valid >> r) & 1))
					slot = ff->locs[r];
			if (seed & 1) {
				slot = record + 16 + 8 * (uint64_t)ip;
				ip_tried++;
			} else if (slot) {
				reg_tried++;
			} else {
				break;
			}
			value = read_ptr(t, slot);
			ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_OK);
			write_ptr(t, slot, value ^ (seed & 1 ? ip_flip : flip));
			st = sw_synth_check(s, 0, msg, sizeof msg);
			if (seed & 1) {
				/* A wrong IP: a wrong frame, or a walk that cannot go on. */
				ck_assert_int_ne(st, SW_OK);
				ip_mismatch += st == SW_E_MISMATCH;
			} else {
				ck_assert_int_eq(st, SW_E_MISMATCH);
				ck_assert_msg(strstr(msg, "expected") != NULL, "message: %s", msg);
			}
			write_ptr(t, slot, value);
			ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_OK);
			break;
		}
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(reg_tried, 30);
	ck_assert_uint_ge(ip_tried, 30);
	ck_assert_uint_ge(ip_mismatch, 10);
}
END_TEST

/*
 * DISABLE_MISSING_FRAME_DETECTION over 1,000 stacks with stale Frames
 * below unmanaged seeds: without the flag the walk must fail with
 * SW_E_BADFRAME exactly where predicted (sw_synth_check accepts that
 * failure and no other), with it the stale Frames are passed and the rest
 * matches, roots included.
 */
START_TEST(test_missing_frame_detection)
{
	sw_arch arch = arches[_i];
	unsigned features = SW_SYNTH_ALL | SW_SYNTH_STALE_FRAMES, failing = 0, stale = 0;
	unsigned disable = SW_WALK_DISABLE_MISSING_FRAME_DETECTION, failures = 0;
	uint64_t first = SEED_BASE + 5100000;
	char first_msg[512] = "";
	sw_synth_params p;

	sw_synth_params_default(&p);
	p.features = features;
	for (unsigned i = 0; i < 1000; i++) {
		static const unsigned also[] = {
			0, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT | SW_WALK_POPFRAMES,
			SW_WALK_FUNCTIONSONLY | SW_WALK_NOTIFY_ON_NO_FRAME_TRANSITIONS
		};
		unsigned more = also[i % 3];
		const sw_thread *t;
		const sw_context *c;
		sw_walk_error want, with;
		sw_synth *s;
		sw_status st;
		char msg[512];

		ck_assert_int_eq(sw_synth_create(&s, arch, first + i, &p), SW_OK);
		t = sw_synth_thread(s);
		c = sw_synth_context(s);
		if (sw_synth_expected_error(s, more, &want) != SW_OK) {
			unsigned below = 0;

			ck_assert_int_eq(want.status, SW_E_BADFRAME);
			ck_assert_uint_lt(want.frame, sw_context_sp(c));
			ck_assert_uint_eq(want.depth, sw_synth_expected(s, more, NULL, 0));
			for (uint64_t a = read_ptr(t, t->frame_head); a; a = read_ptr(t, a))
				below += a < sw_context_sp(c);
			ck_assert_uint_ge(below, 1);
			/* The head of the list is the stale Frame the walk stops at. */
			ck_assert_uint_eq(read_ptr(t, t->frame_head), want.frame);
			failing++;
			stale += below;
		}
		ck_assert_int_eq(sw_synth_expected_error(s, more | disable, &with), SW_OK);
		st = sw_synth_check(s, more, msg, sizeof msg);
		if (st == SW_OK)
			st = sw_synth_check_roots(s, more | disable, msg, sizeof msg);
		if (st != SW_OK) {
			if (failures++ == 0)
				snprintf(first_msg, sizeof first_msg, "%s", msg);
			fprintf(stderr, "check_synth: %s [%s]; reproduce: swsynth -g -a %s -s %#" PRIx64
			        " -f %#x -F %#x\n", msg, sw_strerror(st), sw_arch_name(arch), first + i,
			        more, features);
		}
		sw_synth_destroy(s);
	}
	fprintf(stderr, "check_synth: %s: DISABLE_MISSING_FRAME_DETECTION: %u walks fail without"
	        " it, %u stale Frames passed with it\n", sw_arch_name(arch), failing, stale);
	ck_assert_msg(failures == 0, "%s: %u of 1000 stacks failed; first: %s", sw_arch_name(arch),
	              failures, first_msg);
	ck_assert_uint_ge(failing, 100);
	ck_assert_uint_ge(stale, failing);
}
END_TEST

/*
 * The expected failure is checked, not assumed: unlink the stale Frames
 * (the head slot pointing past them) and a walk that completes is a
 * mismatch; a wrong expectation the other way round too.
 */
START_TEST(test_expected_failure_checked)
{
	sw_arch arch = arches[_i];
	unsigned tried = 0;
	sw_synth_params p;

	sw_synth_params_default(&p);
	p.features = SW_SYNTH_ALL | SW_SYNTH_STALE_FRAMES;
	for (uint64_t seed = 1; seed < 400 && tried < 20; seed++) {
		const sw_thread *t;
		sw_walk_error want;
		uint64_t head, a, sp;
		sw_synth *s;
		char msg[512];

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, &p), SW_OK);
		if (sw_synth_expected_error(s, 0, &want) == SW_OK) {
			sw_synth_destroy(s);
			continue;
		}
		t = sw_synth_thread(s);
		sp = sw_context_sp(sw_synth_context(s));
		head = read_ptr(t, t->frame_head);
		for (a = head; a && a < sp; a = read_ptr(t, a))
			;
		ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_OK);
		write_ptr(t, t->frame_head, a);
		ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_E_MISMATCH);
		ck_assert_msg(strstr(msg, "expected it to fail") || strstr(msg, "extra frame"),
		              "message: %s", msg);
		write_ptr(t, t->frame_head, head);
		ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_OK);
		tried++;
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(tried, 20);
	ck_assert_int_eq(sw_synth_expected_error(NULL, 0, NULL), SW_E_INVAL);
}
END_TEST

/*
 * ALLOW_ASYNC_STACK_WALK changes nothing on a buffer: 1,000 stacks per
 * arch, the expectation exactly that of a walk without flags, frames and
 * roots.  (A walk of this process's own memory off the caller's stack is
 * refused without ALLOW_ASYNC: that is check_walk's.  THREAD_IS_SUSPENDED
 * fails a walk at a RESUMABLE Frame into managed code: check_walk's
 * suspended_thread_and_resumable_frame, and the flag combinations here.)
 */
/* Do walks of s with flags fa and fb report the same frames and end the same way? */
static int same_expectation_flags(const sw_synth *s, unsigned fa, unsigned fb)
{
	size_t na = sw_synth_expected(s, fa, NULL, 0), nb = sw_synth_expected(s, fb, NULL, 0);
	sw_walk_error ea, eb;
	sw_synth_frame *a, *b;
	int same;

	if (na != nb)
		return 0;
	a = calloc(na + 1, sizeof *a);
	b = calloc(nb + 1, sizeof *b);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	sw_synth_expected(s, fa, a, na);
	sw_synth_expected(s, fb, b, nb);
	same = memcmp(a, b, na * sizeof *a) == 0;
	same &= sw_synth_expected_error(s, fa, &ea) == sw_synth_expected_error(s, fb, &eb);
	same &= memcmp(&ea, &eb, sizeof ea) == 0;
	free(a);
	free(b);
	return same;
}

static const unsigned no_effect_flags[] = {
	SW_WALK_ALLOW_ASYNC_STACK_WALK
};
#define NNO_EFFECT_FLAGS (int)(sizeof no_effect_flags / sizeof no_effect_flags[0])

START_TEST(test_no_effect_flag)
{
	sw_arch arch = arches[_i % NARCHES];
	unsigned flags = no_effect_flags[_i / NARCHES];
	uint64_t first = SEED_BASE + 5200000 + 10000 * (uint64_t)(_i / NARCHES);
	unsigned long frames = 0;
	struct root_stats rs, none;

	for (unsigned i = 0; i < test_rounds(1000); i++) {
		sw_synth *s;

		ck_assert_int_eq(sw_synth_create(&s, arch, first + i, NULL), SW_OK);
		ck_assert_msg(same_expectation_flags(s, flags, 0),
		              "%s seed %#" PRIx64 ": flags %#x change the expectation",
		              sw_arch_name(arch), first + i, flags);
		frames += sw_synth_expected(s, flags, NULL, 0);
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(frames, at_least(5000));
	run_root_seeds(arch, first, 1000, flags, SW_SYNTH_ALL, 0, &rs);
	run_root_seeds(arch, first, 1000, 0, SW_SYNTH_ALL, 0, &none);
	ck_assert(memcmp(&rs, &none, sizeof rs) == 0);
	/* With every other flag too. */
	run_seeds(arch, first, 300, flags | SW_WALK_FUNCTIONSONLY | SW_WALK_QUICKUNWIND |
	          SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_NOTIFY_ON_NO_FRAME_TRANSITIONS,
	          SW_SYNTH_ALL);
}
END_TEST

/* The expected roots: the count whatever the capacity; bad frames refused. */
START_TEST(test_expected_roots_api)
{
	sw_synth *s;
	sw_gc_root r[2];
	size_t count, n, checked = 0;

	for (uint64_t seed = 1; seed < 200 && checked < 10; seed++) {
		ck_assert_int_eq(sw_synth_create(&s, arches[_i], seed, NULL), SW_OK);
		n = sw_synth_expected(s, 0, NULL, 0);
		ck_assert_int_eq(sw_synth_expected_roots(s, 0, n, r, 2, &count), SW_E_INVAL);
		ck_assert_uint_eq(count, 0);
		ck_assert_int_eq(sw_synth_expected_roots(NULL, 0, 0, r, 2, &count), SW_E_INVAL);
		ck_assert_int_eq(sw_synth_expected_roots(s, 0, 0, r, 2, NULL), SW_E_INVAL);
		for (size_t k = 0; k < n; k++) {
			ck_assert_int_eq(sw_synth_expected_roots(s, 0, k, NULL, 0, &count), SW_OK);
			if (count > 2) {
				memset(r, 0xa5, sizeof r);
				ck_assert_int_eq(sw_synth_expected_roots(s, 0, k, r, 1, &n), SW_OK);
				ck_assert_uint_eq(n, count);
				ck_assert_uint_eq(r[1].addr, 0xa5a5a5a5a5a5a5a5ULL);
				checked++;
				break;
			}
		}
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(checked, 5);
}
END_TEST

/* The first expected root of a frame that is a stack slot (or a register's save slot). */
static int find_slot_root(const sw_synth *s, int want_reg, size_t *frame, sw_gc_root *out)
{
	size_t n = sw_synth_expected(s, 0, NULL, 0);

	for (size_t k = 0; k < n; k++) {
		sw_gc_root r[64];
		size_t c;

		if (sw_synth_expected_roots(s, 0, k, r, 64, &c) != SW_OK)
			continue;
		for (size_t i = 0; i < c && i < 64; i++) {
			if (r[i].addr && (r[i].reg != ~0u) == want_reg) {
				*frame = k;
				*out = r[i];
				return 1;
			}
		}
	}
	return 0;
}

/*
 * The root check can fail: overwrite a live reference (a stack slot, a
 * Frame's protected slot or a register's save slot) and the root check
 * must disagree, while the frame check alone may still pass.
 */
START_TEST(test_root_corruption_detected)
{
	sw_arch arch = arches[_i];
	uint64_t flip = sw_arch_pointer_size(arch) == 8 ? 0x100000001ULL : 0x10001ULL;
	unsigned corrupted[2] = { 0, 0 };

	for (uint64_t seed = 1; seed < 400 && (corrupted[0] < 20 || corrupted[1] < 20); seed++) {
		for (int want_reg = 0; want_reg < 2; want_reg++) {
			sw_synth *s;
			const sw_thread *t;
			sw_gc_root root;
			size_t frame;
			char msg[512];

			ck_assert_int_eq(sw_synth_create(&s, arch, seed, NULL), SW_OK);
			t = sw_synth_thread(s);
			if (find_slot_root(s, want_reg, &frame, &root)) {
				ck_assert_int_eq(sw_synth_check_roots(s, 0, msg, sizeof msg), SW_OK);
				write_ptr(t, root.addr, root.value ^ flip);
				ck_assert_int_eq(sw_synth_check_roots(s, 0, msg, sizeof msg), SW_E_MISMATCH);
				ck_assert_msg(strstr(msg, "root") || strstr(msg, "expected"), "message: %s", msg);
				if (!want_reg)      /* a slot only the GC information names */
					ck_assert_int_eq(sw_synth_check(s, 0, msg, sizeof msg), SW_OK);
				write_ptr(t, root.addr, root.value);
				ck_assert_int_eq(sw_synth_check_roots(s, 0, msg, sizeof msg), SW_OK);
				corrupted[want_reg]++;
			}
			sw_synth_destroy(s);
		}
	}
	ck_assert_uint_ge(corrupted[0], 20);
	ck_assert_uint_ge(corrupted[1], 20);
}
END_TEST

/*
 * Dropping a Frame's protected slots (its count set to 0) loses roots:
 * "missing" root.
 */
START_TEST(test_root_missing_detected)
{
	sw_arch arch = arches[_i];
	unsigned p = sw_arch_pointer_size(arch), tried = 0;
	sw_synth_params params;

	sw_synth_params_default(&params);
	params.frame_type = SW_FRAME_TRANSITION;
	for (uint64_t seed = 1; seed < 300 && tried < 20; seed++) {
		sw_synth *s;
		sw_synth_frame f[128];
		size_t n;
		char msg[512];

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, &params), SW_OK);
		n = sw_synth_expected(s, 0, f, 128);
		for (size_t k = 0; k < n && k < 128; k++) {
			size_t c;

			if (f[k].state != SW_STATE_FRAME || f[k].frame_type != SW_FRAME_TRANSITION ||
			    sw_synth_expected_roots(s, 0, k, NULL, 0, &c) != SW_OK || c == 0)
				continue;
			/* Field 4, protected_count, at P + 8 + 4 P. */
			write_ptr(sw_synth_thread(s), f[k].frame + p + 8 + 4 * p, 0);
			ck_assert_int_eq(sw_synth_check_roots(s, 0, msg, sizeof msg), SW_E_MISMATCH);
			ck_assert_msg(strstr(msg, "missing") != NULL, "message: %s", msg);
			tried++;
			break;
		}
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(tried, 10);
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
	ck_assert_uint_eq(p.frame_type, 0);

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
	p.features = (SW_SYNTH_ALL | SW_SYNTH_STALE_FRAMES) + 1;
	ck_assert_int_eq(sw_synth_create(&s, arch, 1, &p), SW_E_INVAL);
	sw_synth_params_default(&p);
	p.frame_type = SW_FRAME_TYPE_USER;
	ck_assert_int_eq(sw_synth_create(&s, arch, 1, &p), SW_E_INVAL);
	/* Built in, but not a kind the generator makes. */
	p.frame_type = SW_FRAME_HIJACK;
	ck_assert_int_eq(sw_synth_create(&s, arch, 1, &p), SW_E_INVAL);
	p.frame_type = SW_FRAME_INTERPRETER;
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

/*
 * A memory's direct window is a shortcut, not a limit: with the window
 * narrowed from below or from above, so that reads fall outside it and go
 * through the read callback (here one that reads the whole buffer), every walk
 * must report exactly what it did with the whole window.  The walk's fast
 * step checks a frame's reads against the window once, and takes the
 * checked reads when any lies outside: the edges sweep across every frame
 * of the stack, word by word.  The narrowed window is a copy of the stack
 * whose bytes outside it are poisoned, so that a read of them that does
 * not go through the callback shows.
 */
struct window_walk {
	struct {
		sw_frame_state state;
		void *method;
		uint64_t frame;
		sw_regdisplay rd;
	} f[64];
	size_t n;
	sw_walk_action end;
	sw_walk_error err;
};

static sw_walk_action window_record(const sw_crawl_frame *cf, void *data)
{
	struct window_walk *w = data;

	if (w->n < sizeof w->f / sizeof w->f[0]) {
		const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);

		w->f[w->n].state = sw_crawl_frame_state(cf);
		w->f[w->n].method = sw_crawl_frame_method(cf);
		w->f[w->n].frame = sw_crawl_frame_frame(cf);
		memset(&w->f[w->n].rd, 0, sizeof w->f[w->n].rd);
		/* Only what is known: the rest of the display is not part of the result. */
		w->f[w->n].rd.cur.valid = rd->cur.valid;
		w->f[w->n].rd.caller_valid = rd->caller_valid;
		if (rd->caller_valid)
			w->f[w->n].rd.caller.valid = rd->caller.valid;
		for (unsigned r = 0; r < SW_MAX_REGS; r++) {
			if (rd->cur.valid & (1ULL << r)) {
				w->f[w->n].rd.cur.regs[r] = rd->cur.regs[r];
				w->f[w->n].rd.cur_loc[r] = rd->cur_loc[r];
			}
			if (rd->caller_valid && (rd->caller.valid & (1ULL << r))) {
				w->f[w->n].rd.caller.regs[r] = rd->caller.regs[r];
				w->f[w->n].rd.caller_loc[r] = rd->caller_loc[r];
			}
		}
	}
	w->n++;
	return SW_CONTINUE;
}

/* The read callback of the narrowed memories: the whole buffer, from the original window. */
static sw_status whole_buffer_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const sw_memory *whole = ctx;

	if (addr < whole->direct_lo || addr > whole->direct_hi || len > whole->direct_hi - addr)
		return SW_E_BADADDR;
	memcpy(buf, whole->direct_host + (addr - whole->direct_lo), len);
	return SW_OK;
}

static void window_walk(const sw_thread *t, const sw_context *c, unsigned flags, struct window_walk *w)
{
	memset(w, 0, sizeof *w);
	w->end = sw_walk_frames(t, c, 0, window_record, w, flags, &w->err);
}

START_TEST(test_narrow_windows)
{
	sw_arch arch = arches[_i];
	static const unsigned flags[] = { 0, SW_WALK_UNWIND_FLOATS, SW_WALK_QUICKUNWIND };
	unsigned failures = 0, walks = 0, fast_frames = 0;
	sw_synth_params p;

	sw_synth_params_default(&p);
	for (uint64_t i = 0; i < 24; i++) {
		uint64_t seed = SEED_BASE + 6000000 + i;
		unsigned fl = flags[i % 3];
		static struct window_walk want, got;
		const sw_thread *t;
		const sw_context *c;
		sw_synth *s;
		uint64_t lo, hi, sp, start;
		unsigned char *poisoned;
		unsigned step;

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, &p), SW_OK);
		t = sw_synth_thread(s);
		c = sw_synth_context(s);
		lo = t->memory->direct_lo;
		hi = t->memory->direct_hi;
		sp = sw_context_sp(c);
		step = arch == SW_ARCH_X86 ? 4 : 8;
		window_walk(t, c, fl, &want);
		ck_assert_uint_ge(want.n, 1);
		ck_assert_uint_le(want.n, sizeof want.f / sizeof want.f[0]);
		for (size_t k = 0; k < want.n; k++)
			fast_frames += want.f[k].state == SW_STATE_FRAMELESS;
		ck_assert_uint_ge(sp, lo);
		ck_assert_uint_le(sp, hi);
		poisoned = malloc((size_t)(hi - lo));
		ck_assert_ptr_nonnull(poisoned);
		start = sp - lo > 64 ? sp - 64 : lo;
		/* The low edge from below SP to the top, then the high edge from the top down to SP. */
		for (unsigned side = 0; side < 2; side++) {
			memcpy(poisoned, t->memory->direct_host, (size_t)(hi - lo));
			for (uint64_t edge = start; edge <= hi; edge += step) {
				sw_memory m = *t->memory;
				sw_thread nt = *t;

				m.read = whole_buffer_read;
				m.ctx = (void *)(uintptr_t)t->memory;
				m.direct_host = poisoned;
				if (side == 0) {
					memset(poisoned, 0xa5, (size_t)(edge - lo));
					m.direct_host += edge - lo;
					m.direct_lo = edge;
				} else {
					m.direct_hi = hi - (edge - start);
					if (m.direct_hi < m.direct_lo)
						break;
					memset(poisoned + (m.direct_hi - lo), 0xa5, (size_t)(hi - m.direct_hi));
				}
				nt.memory = &m;
				window_walk(&nt, c, fl, &got);
				walks++;
				if (got.end == want.end && got.n == want.n &&
				    memcmp(&got.err, &want.err, sizeof got.err) == 0 &&
				    memcmp(got.f, want.f, want.n * sizeof want.f[0]) == 0)
					continue;
				if (failures++ < MAX_PRINTED)
					fprintf(stderr, "check_synth: %s seed %#" PRIx64 " flags %#x: window [%#" PRIx64
					        ", %#" PRIx64 ") walks differently (%zu frames, want %zu)\n",
					        sw_arch_name(arch), seed, fl, m.direct_lo, m.direct_hi, got.n,
					        want.n);
			}
		}
		free(poisoned);
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(fast_frames, 100);
	ck_assert_msg(failures == 0, "%s: %u of %u walks with a narrowed window differ",
	              sw_arch_name(arch), failures, walks);
}
END_TEST

/* The walk with the rules of `cache` (sw_walk_frames_cached). */
static void cached_walk(const sw_thread *t, const sw_context *c, unsigned flags, sw_walk_cache *cache,
                        struct window_walk *w)
{
	memset(w, 0, sizeof *w);
	w->end = sw_walk_frames_cached(t, c, 0, window_record, w, flags, cache, &w->err);
}

/* The first frame where two walks differ (their frame count when none does). */
static size_t first_difference(const struct window_walk *a, const struct window_walk *b)
{
	size_t k = 0;

	while (k < a->n && k < b->n && k < sizeof a->f / sizeof a->f[0] && memcmp(&a->f[k], &b->f[k], sizeof a->f[k]) == 0)
		k++;
	return k;
}

/* The same result, and the same frames as far as they were recorded. */
static int same_walk(const struct window_walk *a, const struct window_walk *b)
{
	size_t kept = sizeof a->f / sizeof a->f[0];

	return a->end == b->end && a->n == b->n && memcmp(&a->err, &b->err, sizeof a->err) == 0 &&
	       memcmp(a->f, b->f, (a->n < kept ? a->n : kept) * sizeof a->f[0]) == 0;
}

/*
 * LIGHTUNWIND where CoreCLR has a light unwind and where it has none:
 * inc/eetwain.h defines HAS_LIGHTUNWIND for TARGET_AMD64 alone, and
 * StackFrameIterator (vm/stackwalk.cpp) uses the light schema only under
 * it; on x86 and arm64 the frame is unwound in full whatever the flag.
 * So there a walk with the flag equals the walk without it, frame by
 * frame and register by register, and on x64 some frame of some stack
 * lacks a callee-saved register the full walk has.  Bodies only: the flag
 * promises that (sw_walk_frames(3)).
 */
START_TEST(test_light_unwind_where_coreclr_has_it)
{
	sw_arch arch = arches[_i];
	unsigned differ = 0;
	sw_synth_params p;

	sw_synth_params_default(&p);
	p.features = SW_SYNTH_ALL & ~SW_SYNTH_ANY_OFFSET;
	for (uint64_t i = 0; i < test_rounds(200); i++) {
		static struct window_walk full, light;
		uint64_t seed = SEED_BASE + 6100000 + i;
		sw_synth *s;

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, &p), SW_OK);
		window_walk(sw_synth_thread(s), sw_synth_context(s), 0, &full);
		window_walk(sw_synth_thread(s), sw_synth_context(s), SW_WALK_LIGHTUNWIND, &light);
		if (arch == SW_ARCH_X64)
			differ += !same_walk(&full, &light);
		else
			ck_assert_msg(same_walk(&full, &light), "%s seed %#" PRIx64 ": LIGHTUNWIND changed "
			              "the walk (frame %zu of %zu)", sw_arch_name(arch), seed,
			              first_difference(&full, &light), full.n);
		sw_synth_destroy(s);
	}
	if (arch == SW_ARCH_X64)
		ck_assert_uint_gt(differ, 0);
}
END_TEST

/*
 * One cache through walks that must each equal the walk without it: cold
 * and warm, other flags, another synthetic stack (another map), a narrowed
 * memory window whose outside is poisoned, a copy of the cache, a method
 * removed from the map after the cache learnt its rule, and the same
 * method added back after the cache learnt that its addresses are in no
 * code.
 */
START_TEST(test_cached_walks)
{
	sw_arch arch = arches[_i];
	static const unsigned flags[] = { 0, SW_WALK_UNWIND_FLOATS, SW_WALK_QUICKUNWIND,
		                          SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK };
	const unsigned nflags = sizeof flags / sizeof flags[0];
	static struct window_walk want, got;
	static sw_walk_cache cache, copy;
	unsigned failures = 0, walks = 0, removals = 0, narrowed = 0;
	sw_synth_params every, long_runs;

	/* Every feature, and long runs of managed frames, which the cache's fast step takes. */
	sw_synth_params_default(&every);
	long_runs = every;
	long_runs.min_frames = 16;
	long_runs.max_frames = 48;
	long_runs.features = SW_SYNTH_TRANSITION_FRAMES | SW_SYNTH_GC_INFO;
	sw_walk_cache_init(&cache);
	for (uint64_t i = 0; i < 48; i++) {
		uint64_t seed = SEED_BASE + 7000000 + i;
		unsigned fl = flags[i % nflags], other = flags[(i + 1) % nflags];
		const char *what = NULL;
		const sw_thread *t;
		const sw_context *c;
		sw_code_info ci;
		sw_synth *s;

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, i % 2 ? &long_runs : &every), SW_OK);
		t = sw_synth_thread(s);
		c = sw_synth_context(s);
		window_walk(t, c, fl, &want);
		for (unsigned k = 0; k < 3 && !what; k++, walks++) {
			cached_walk(t, c, fl, &cache, &got);
			if (!same_walk(&got, &want))
				what = k ? "warm" : "cold";
		}
		/* Other flags, then back. */
		if (!what) {
			static struct window_walk want_other;

			window_walk(t, c, other, &want_other);
			cached_walk(t, c, other, &cache, &got);
			walks++;
			if (!same_walk(&got, &want_other))
				what = "other flags";
			cached_walk(t, c, fl, &cache, &got);
			walks++;
			if (!what && !same_walk(&got, &want))
				what = "flags back";
		}
		/* A window without the stack's top eighth, its bytes poisoned: the read callback has them. */
		if (!what) {
			static struct window_walk want_narrow;
			const sw_memory *whole = t->memory;
			uint64_t cut = ((whole->direct_hi - sw_context_sp(c)) / 8) & ~(uint64_t)7;
			unsigned char *poisoned = malloc((size_t)(whole->direct_hi - whole->direct_lo));
			sw_memory m = *whole;
			sw_thread nt = *t;

			ck_assert_ptr_nonnull(poisoned);
			memcpy(poisoned, whole->direct_host, (size_t)(whole->direct_hi - whole->direct_lo));
			m.read = whole_buffer_read;
			m.ctx = (void *)(uintptr_t)whole;
			m.direct_host = poisoned;
			m.direct_hi = whole->direct_hi - cut;
			memset(poisoned + (m.direct_hi - m.direct_lo), 0xa5, (size_t)cut);
			nt.memory = &m;
			window_walk(&nt, c, fl, &want_narrow);
			cached_walk(&nt, c, fl, &cache, &got);
			walks++;
			narrowed += cut > 0;
			if (!same_walk(&got, &want_narrow))
				what = "narrowed window";
			free(poisoned);
		}
		/* A copy of the warm cache works on its own; the original, garbled, is refused. */
		if (!what) {
			cached_walk(t, c, fl, &cache, &got);
			copy = cache;
			memset(&cache, 0xa5, sizeof cache);
			cached_walk(t, c, fl, &copy, &got);
			walks++;
			if (!same_walk(&got, &want))
				what = "copied cache";
			cached_walk(t, c, fl, &cache, &got);
			ck_assert_int_eq(got.end, SW_FAILED);
			ck_assert_int_eq(got.err.status, SW_E_INVAL);
			ck_assert_uint_eq(got.n, 0);
			sw_walk_cache_init(&cache);
		}
		/* The method of the second managed frame removed, after the cache learnt its rule. */
		for (size_t k = 1; !what && k < want.n; k++) {
			const sw_regdisplay *rd = &want.f[k].rd;
			unsigned ipr = arch == SW_ARCH_X64 ? SW_X64_RIP : arch == SW_ARCH_X86 ? SW_X86_EIP : SW_ARM64_PC;

			if (want.f[k].state != SW_STATE_FRAMELESS || !(rd->cur.valid & (1ULL << ipr)) ||
			    sw_codemap_find(t->codemap, rd->cur.regs[ipr] - 1, &ci) != SW_OK)
				continue;
			static unsigned char blob[4096];
			static struct window_walk want_before;

			ck_assert_uint_le(ci.unwind_size, sizeof blob);
			memcpy(blob, ci.unwind, ci.unwind_size);
			ci.unwind = blob;
			want_before = want;
			cached_walk(t, c, fl, &cache, &got);
			ck_assert_int_eq(sw_codemap_remove((sw_codemap *)(uintptr_t)t->codemap, ci.start), SW_OK);
			removals++;
			window_walk(t, c, fl, &want);
			/* Twice: the second walk starts from what the first found missing. */
			for (unsigned n = 0; n < 2 && !what; n++, walks++) {
				cached_walk(t, c, fl, &cache, &got);
				if (!same_walk(&got, &want))
					what = "method removed";
			}
			/* Added back: the cache's memory of that address in no code must go. */
			ck_assert_int_eq(sw_codemap_add((sw_codemap *)(uintptr_t)t->codemap, &ci), SW_OK);
			want = want_before;
			cached_walk(t, c, fl, &cache, &got);
			walks++;
			if (!what && !same_walk(&got, &want))
				what = "method added back";
			break;
		}
		if (what && failures++ < MAX_PRINTED)
			fprintf(stderr, "check_synth: %s seed %#" PRIx64 " flags %#x: cached walk differs (%s) from frame %zu: "
			        "%zu frames, want %zu\n", sw_arch_name(arch), seed, fl, what, first_difference(&got, &want),
			        got.n, want.n);
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(removals, 24);
	ck_assert_uint_ge(narrowed, 24);
	ck_assert_msg(failures == 0, "%s: %u of 48 stacks walk differently with a cache (%u walks)",
	              sw_arch_name(arch), failures, walks);
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
	tcase_add_loop_test(walk, test_light_unwind_where_coreclr_has_it, 0, NARCHES);
	tcase_add_loop_test(walk, test_pop_frames, 0, NARCHES);
	tcase_add_loop_test(walk, test_snapshot_flags, 0, NARCHES);
	tcase_add_loop_test(walk, test_flag_combinations, 0, NARCHES);
	tcase_add_loop_test(walk, test_features_alone, 0, NFEATURE_SETS * NARCHES);
	tcase_add_loop_test(walk, test_pop_frames_restores, 0, NARCHES);
	tcase_add_loop_test(walk, test_gc_roots_10000, 0, NARCHES);
	tcase_add_loop_test(walk, test_walk_flag, 0, NWALK_FLAGS * NARCHES);
	tcase_add_loop_test(walk, test_frame_kind, 0, NFRAME_KINDS * NARCHES);
	tcase_add_loop_test(walk, test_no_frame_transitions, 0, NARCHES);
	tcase_add_loop_test(walk, test_missing_frame_detection, 0, NARCHES);
	tcase_add_loop_test(walk, test_no_effect_flag, 0, NNO_EFFECT_FLAGS * NARCHES);
	tcase_add_loop_test(walk, test_narrow_windows, 0, NARCHES);
	tcase_add_loop_test(walk, test_cached_walks, 0, NARCHES);
	tcase_add_loop_test(gen, test_tracker_corruption_detected, 0, NARCHES);
	tcase_add_loop_test(gen, test_expected_failure_checked, 0, NARCHES);
	tcase_add_loop_test(gen, test_expected_roots_api, 0, NARCHES);
	tcase_add_loop_test(gen, test_root_corruption_detected, 0, NARCHES);
	tcase_add_loop_test(gen, test_root_missing_detected, 0, NARCHES);
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
