/*
 * check_snapshot.c - sw_snapshot's DoStackSnapshot semantics on hand-built
 * x64 stacks: managed frames and one report per unmanaged block, leaf to
 * root; the callback's stop; unmanaged seeds; registers on request; native
 * frames one by one in mixed mode.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "stack_builder.h"

#define A_START 0x10001000ull
#define B_START 0x10002000ull
#define S0 (SB_STACK_HI - 0x400)

static int method_a, method_b;

struct seen {
	void *method[16];
	uint64_t ip[16];
	int has_context[16];
	uint32_t state[16];
	int n, stop_at;
};

static sw_walk_action snap_cb(const sw_snapshot_frame *f, void *data)
{
	struct seen *s = data;

	ck_assert_int_lt(s->n, 16);
	ck_assert_uint_eq(f->depth, (uint32_t)s->n);
	s->method[s->n] = f->method;
	s->ip[s->n] = f->ip;
	s->has_context[s->n] = f->context != NULL;
	s->state[s->n] = f->state;
	s->n++;
	return s->stop_at && s->n == s->stop_at ? SW_ABORT : SW_CONTINUE;
}

/*
 * A made a P/Invoke (active ICF with a datum) into native code that called B;
 * B is stopped in its body.  A itself was called from native code.
 */
static void lay_out(sb_world *w)
{
	uint64_t icf = S0 - 80, fields[4] = { 0x1cf, S0 - 88, A_START + 25, S0 - 8 };
	sb_method b;

	sb_init(w);
	sb_add_method_a(w, A_START, &method_a);
	b = sb_add_method_b(w, B_START, &method_b);
	sb_put(w, S0, SB_NATIVE_IP);
	sb_put(w, S0 - 8, 0x5000);
	sb_put(w, S0 - 16, 0x5001);
	sb_frame(w, icf, 0, SW_FRAME_INLINED_CALL, 0, fields, 4);
	sb_put(w, SB_HEAD_SLOT, icf);
	sb_put(w, S0 - 408, SB_NATIVE_IP + 0x40);
	sw_context_set(&w->seed, SW_X64_RIP, B_START + b.body);
	sw_context_set(&w->seed, SW_X64_RSP, S0 - 440);
}

START_TEST(managed_frames_and_unmanaged_blocks)
{
	sb_world w;
	struct seen s;

	lay_out(&w);
	memset(&s, 0, sizeof s);
	ck_assert_int_eq(sw_snapshot(&w.thread, &w.seed, 0, snap_cb, &s), SW_OK);
	/*
	 * B, the native block B was called from, A, A's native caller.  Not the
	 * P/Invoke's Frame, though the walk stops at it with its method: CoreCLR's
	 * ProfilerStackWalkCallback (vm/proftoeeinterfaceimpl.cpp) passes over
	 * what is neither frameless nor a native marker.
	 */
	ck_assert_int_eq(s.n, 4);
	ck_assert_ptr_eq(s.method[0], &method_b);
	ck_assert_uint_eq(s.ip[0], B_START + 20);
	ck_assert_uint_eq(s.state[0], SW_STATE_FRAMELESS);
	ck_assert_ptr_null(s.method[1]);
	ck_assert_uint_eq(s.ip[1], SB_NATIVE_IP + 0x40);
	ck_assert_uint_eq(s.state[1], SW_STATE_NATIVE_MARKER);
	ck_assert_ptr_eq(s.method[2], &method_a);
	ck_assert_uint_eq(s.ip[2], A_START + 25);
	ck_assert_uint_eq(s.state[2], SW_STATE_FRAMELESS);
	ck_assert_ptr_null(s.method[3]);
	ck_assert_uint_eq(s.state[3], SW_STATE_NATIVE_MARKER);
	ck_assert_int_eq(s.has_context[0], 0);

	/* Registers on request. */
	memset(&s, 0, sizeof s);
	ck_assert_int_eq(sw_snapshot(&w.thread, &w.seed, SW_SNAPSHOT_REGISTER_CONTEXT, snap_cb, &s), SW_OK);
	ck_assert_int_eq(s.has_context[0], 1);

	/* Synchronous use: no seed, from the newest Frame, which is not reported. */
	memset(&s, 0, sizeof s);
	ck_assert_int_eq(sw_snapshot(&w.thread, NULL, 0, snap_cb, &s), SW_OK);
	ck_assert_int_eq(s.n, 2);
	ck_assert_ptr_eq(s.method[0], &method_a);
	sb_fini(&w);
}
END_TEST

START_TEST(abort_and_unmanaged_seed)
{
	sb_world w;
	struct seen s;

	lay_out(&w);
	memset(&s, 0, sizeof s);
	s.stop_at = 2;
	ck_assert_int_eq(sw_snapshot(&w.thread, &w.seed, 0, snap_cb, &s), SW_E_ABORTED);
	ck_assert_int_eq(s.n, 2);

	sw_context_set(&w.seed, SW_X64_RIP, SB_NATIVE_IP + 0x77);
	memset(&s, 0, sizeof s);
	ck_assert_int_eq(sw_snapshot(&w.thread, &w.seed, 0, snap_cb, &s), SW_E_UNMANAGED_CTX);
	ck_assert_int_eq(s.n, 0);
	ck_assert_int_eq(sw_snapshot(&w.thread, NULL, 0x80, snap_cb, &s), SW_E_INVAL);
	ck_assert_int_eq(sw_snapshot(&w.thread, NULL, 0, NULL, &s), SW_E_INVAL);
	sb_fini(&w);
}
END_TEST

START_TEST(native_frames_one_by_one)
{
	sb_world w;
	struct seen s;
	sw_code_info ci;
	unsigned char blob[256];

	lay_out(&w);
	/* The native code below B is now a registered native function N, shape A's rule is
	 * not needed: register a leaf-shaped blob over SB_NATIVE_IP + 0x40's function. */
	ck_assert_int_eq(sw_codemap_find(w.map, B_START, &ci), SW_OK);
	memcpy(blob, ci.unwind, ci.unwind_size);
	ci.unwind = blob;
	ci.start = SB_NATIVE_IP;
	ci.size = 0x100;
	ci.method = (void *)0xaa;
	ci.flags = SW_CODE_NATIVE;
	ck_assert_int_eq(sw_codemap_add(w.map, &ci), SW_OK);
	memset(&s, 0, sizeof s);
	/* N cannot be unwound (B's rule over other code): the snapshot says it stopped there. */
	ck_assert_int_eq(sw_snapshot(&w.thread, &w.seed, SW_SNAPSHOT_NATIVE_FRAMES, snap_cb, &s), SW_E_BADSP);
	/* B, then N as a native frame (no marker report), unmanaged: method NULL. */
	ck_assert_int_ge(s.n, 2);
	ck_assert_ptr_eq(s.method[0], &method_b);
	ck_assert_uint_eq(s.state[1], SW_STATE_NATIVE_FRAME);
	ck_assert_ptr_null(s.method[1]);
	for (int i = 0; i < s.n; i++)
		ck_assert_uint_ne(s.state[i], SW_STATE_NATIVE_MARKER);
	sb_fini(&w);
}
END_TEST

static Suite *snapshot_suite(void)
{
	Suite *s = suite_create("snapshot");
	TCase *tc = tcase_create("DoStackSnapshot semantics");

	tcase_add_test(tc, managed_frames_and_unmanaged_blocks);
	tcase_add_test(tc, abort_and_unmanaged_seed);
	tcase_add_test(tc, native_frames_one_by_one);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(snapshot_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
