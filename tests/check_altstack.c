/*
 * check_altstack.c - the walk across a signal frame whose handler ran on an
 * alternate signal stack (sigaltstack), on hand-built x64 stacks: the
 * interrupted SP may lie below the frame, on another stack, only where the
 * frame's uc_stack says so and the thread's stack_bounds (or its own
 * bounds) hold it; a hostile one ends the walk with SW_E_BADSP, and signal
 * frames that send the walk back and forth between two stacks cannot
 * loop.  The real programs are tests/swstack-altstack.test's.
 */
#include <check.h>
#include <string.h>
#include "stack_builder.h"

/*
 * The buffer's lower half is the alternate stack, its upper half the
 * thread's.  The trampoline is registered code; A is the interrupted
 * method, the thread's first function.
 */
#define ALT_LO SB_STACK_BASE
#define ALT_HI (SB_STACK_BASE + SB_STACK_SIZE / 2)
#define OWN_LO ALT_HI
#define OWN_HI (SB_STACK_HI - 16)
#define T_START 0x10006000ull
#define A_START 0x10001000ull
/* The kernel's ss_flags (its values, whatever the host's headers say). */
#define K_SS_ONSTACK 1
#define K_SS_DISABLE 2

/* The kernel's x64 ucontext at the trampoline's SP: uc_stack, then the mcontext's rsp and rip. */
static void signal_frame(sb_world *w, uint64_t u, uint64_t ss_sp, uint64_t ss_flags, uint64_t ss_size,
                         uint64_t rsp, uint64_t rip)
{
	sb_put(w, u + 16, ss_sp);
	sb_put(w, u + 24, ss_flags);
	sb_put(w, u + 32, ss_size);
	sb_put(w, u + 40 + 8 * 15, rsp);
	sb_put(w, u + 40 + 8 * 16, rip);
}

/* Which of the two stacks holds sp; counts its calls. */
static unsigned bounds_calls;

static sw_status two_stacks(const void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	(void)ctx;
	bounds_calls++;
	if (sp >= ALT_LO && sp < ALT_HI) {
		*lo = ALT_LO;
		*hi = ALT_HI;
	} else if (sp >= OWN_LO && sp < OWN_HI) {
		*lo = OWN_LO;
		*hi = OWN_HI;
	} else {
		return SW_E_BADADDR;
	}
	return SW_OK;
}

static void setup(sb_world *w)
{
	sw_swu_builder *bld;
	static unsigned char blob[64], a_blob[256];
	size_t len;
	sw_code_info ci;

	sb_init(w);
	/* The trampoline: native, no rule of its own is needed. */
	ck_assert_int_eq(sw_swu_builder_create(&bld, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_finish(bld, 16, blob, sizeof blob, &len), SW_OK);
	sw_swu_builder_destroy(bld);
	ci = (sw_code_info){ .method = (void *)0x7e57, .start = T_START, .size = 16, .unwind = blob,
	                     .unwind_size = (uint32_t)len,
	                     .flags = SW_CODE_SIGNAL_TRAMPOLINE };
	ck_assert_int_eq(sw_codemap_add(w->map, &ci), SW_OK);
	ck_assert_int_eq(sb_add_method_a(w, A_START, (void *)0xa).start, A_START);
	ck_assert_int_eq(sw_codemap_find(w->map, A_START, &ci), SW_OK);
	ck_assert_uint_le(ci.unwind_size, sizeof a_blob);
	memcpy(a_blob, ci.unwind, ci.unwind_size);
	ck_assert_int_eq(sw_codemap_remove(w->map, A_START), SW_OK);
	ci.unwind = a_blob;
	ci.flags |= SW_CODE_OUTERMOST;
	ck_assert_int_eq(sw_codemap_add(w->map, &ci), SW_OK);
	/* The walk starts on the alternate stack, at the trampoline. */
	w->thread.stack_lo = ALT_LO;
	w->thread.stack_hi = ALT_HI;
	w->thread.stack_bounds = two_stacks;
	sw_context_init(&w->seed, SW_ARCH_X64);
	sw_context_set(&w->seed, SW_X64_RIP, T_START);
	sw_context_set(&w->seed, SW_X64_RSP, ALT_LO + 0x4000);
	bounds_calls = 0;
}

struct seen {
	unsigned n;
	uint64_t sp[16];
};

static sw_walk_action record(const sw_crawl_frame *cf, void *data)
{
	struct seen *s = data;

	if (s->n < 16)
		s->sp[s->n] = sw_context_sp(&sw_crawl_frame_regdisplay(cf)->cur);
	s->n++;
	return SW_CONTINUE;
}

/* Walk from the seed; the walk's error status (SW_OK when it completed). */
static sw_status walk(sb_world *w, struct seen *s)
{
	sw_walk_error err;
	int r;

	memset(s, 0, sizeof *s);
	memset(&err, 0, sizeof err);
	r = sw_walk_frames(&w->thread, &w->seed, 0, record, s, SW_WALK_NATIVE_FRAMES, &err);
	if (r == SW_CONTINUE)
		return SW_OK;
	ck_assert_int_eq(r, SW_FAILED);
	ck_assert_int_lt(err.status, 0);
	return err.status;
}

/* The handler's stack ends at the signal frame; the walk goes on on the thread's own. */
START_TEST(leaves_the_alternate_stack)
{
	sb_world w;
	struct seen s;
	uint64_t u = ALT_LO + 0x4000, isp = OWN_LO + 0x1000;

	setup(&w);
	signal_frame(&w, u, ALT_LO, 0, ALT_HI - ALT_LO, isp, A_START + 30);
	ck_assert_int_eq(walk(&w, &s), SW_OK);
	ck_assert_uint_eq(s.n, 2);
	ck_assert_uint_eq(s.sp[1], isp);
	ck_assert_uint_eq(bounds_calls, 1);
	/* Below the frame too (a thread stack mapped under the alternate one). */
	w.thread.stack_lo = OWN_LO;
	w.thread.stack_hi = OWN_HI;
	u = OWN_LO + 0x4000;
	isp = ALT_LO + 0x1000;
	w.seed.regs[SW_X64_RSP] = u;
	signal_frame(&w, u, OWN_LO, 0, OWN_HI - OWN_LO, isp, A_START + 30);
	ck_assert_int_eq(walk(&w, &s), SW_OK);
	ck_assert_uint_eq(s.sp[1], isp);
	sb_fini(&w);
}
END_TEST

/* An alternate stack inside the thread's stack: no stack_bounds needed. */
START_TEST(alternate_stack_inside_the_thread_stack)
{
	sb_world w;
	struct seen s;
	uint64_t u = ALT_LO + 0x6000, isp = ALT_LO + 0x1000;

	setup(&w);
	w.thread.stack_lo = SB_STACK_BASE;
	w.thread.stack_hi = OWN_HI;
	w.thread.stack_bounds = NULL;
	w.seed.regs[SW_X64_RSP] = u;
	signal_frame(&w, u, ALT_LO + 0x4000, 0, 0x4000, isp, A_START + 30);
	ck_assert_int_eq(walk(&w, &s), SW_OK);
	ck_assert_uint_eq(s.sp[1], isp);
	sb_fini(&w);
}
END_TEST

/* Interrupted SPs the frame does not vouch for, or no stack holds. */
START_TEST(hostile_interrupted_sp)
{
	static const struct {
		uint64_t ss_sp, ss_flags, ss_size, isp;
		int no_bounds;
	} cases[] = {
		{ ALT_LO, K_SS_ONSTACK, ALT_HI - ALT_LO, ALT_LO + 0x100, 0 },     /* nested, yet below the frame */
		{ ALT_LO, K_SS_ONSTACK, ALT_HI - ALT_LO, OWN_LO + 0x100, 0 },     /* nested, yet off the stack */
		{ ALT_LO, K_SS_DISABLE, ALT_HI - ALT_LO, OWN_LO + 0x100, 0 },     /* no alternate stack */
		{ OWN_LO, 0, 0x100, OWN_LO + 0x1000, 0 },                       /* the frame is not on it */
		{ ALT_LO, 0, ALT_HI - ALT_LO, ALT_LO + 0x100, 0 },              /* still on it, below */
		{ ALT_LO, 0, ALT_HI - ALT_LO, 0x1234, 0 },                      /* on no stack */
		{ ALT_LO, 0, ALT_HI - ALT_LO, UINT64_MAX - 7, 0 },              /* at the top of memory */
		{ ALT_LO, 0, ALT_HI - ALT_LO, OWN_LO + 0x100, 1 },              /* no stack_bounds */
		{ UINT64_MAX - 0xff, 0, 0x1000, OWN_LO + 0x100, 0 },            /* a size that wraps */
	};
	sb_world w;
	struct seen s;
	uint64_t u = ALT_LO + 0x4000;

	for (unsigned i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		sw_status st;

		setup(&w);
		if (cases[i].no_bounds)
			w.thread.stack_bounds = NULL;
		signal_frame(&w, u, cases[i].ss_sp, cases[i].ss_flags, cases[i].ss_size, cases[i].isp,
		             A_START + 30);
		st = walk(&w, &s);
		ck_assert_msg(st == SW_E_BADSP, "case %u: %s after %u frames", i, sw_strerror(st), s.n);
		ck_assert_uint_le(s.n, 1);      /* at most the trampoline's frame, then the error */
		sb_fini(&w);
	}
}
END_TEST

/*
 * Two signal frames that each name the other's stack as the one they
 * interrupted: the walk would go back and forth for ever.
 */
START_TEST(stacks_that_point_at_each_other)
{
	sb_world w;
	struct seen s;
	uint64_t u = ALT_LO + 0x4000, v = OWN_LO + 0x4000;

	setup(&w);
	signal_frame(&w, u, ALT_LO, 0, ALT_HI - ALT_LO, v, T_START);
	signal_frame(&w, v, OWN_LO, 0, OWN_HI - OWN_LO, u, T_START);
	ck_assert_int_eq(walk(&w, &s), SW_E_BADSP);
	ck_assert_uint_le(s.n, 8);
	ck_assert_uint_ge(bounds_calls, 2);     /* it did go back and forth, up to the bound */
	ck_assert_uint_le(bounds_calls, 8);
	sb_fini(&w);
}
END_TEST

static Suite *altstack_suite(void)
{
	Suite *s = suite_create("altstack");
	TCase *tc = tcase_create("altstack");

	tcase_add_test(tc, leaves_the_alternate_stack);
	tcase_add_test(tc, alternate_stack_inside_the_thread_stack);
	tcase_add_test(tc, hostile_interrupted_sp);
	tcase_add_test(tc, stacks_that_point_at_each_other);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(altstack_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
