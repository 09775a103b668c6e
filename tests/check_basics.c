/*
 * check_basics.c - status names, architectures, contexts, memory accessors,
 * Frame push and pop.
 */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>

START_TEST(status_names)
{
	for (int s = 0; s >= SW_E_UNSAFE; s--) {
		const char *m = sw_strerror(s);
		ck_assert_ptr_nonnull(m);
		ck_assert_str_ne(m, "unknown error");
		for (int t = s + 1; t <= 0; t++)
			ck_assert_str_ne(m, sw_strerror(t));
	}
	ck_assert_str_eq(sw_strerror(-1000), "unknown error");
	ck_assert_str_eq(sw_strerror(5), "unknown error");
}
END_TEST

START_TEST(state_names)
{
	ck_assert_str_eq(sw_frame_state_name(SW_STATE_FRAMELESS), "FRAMELESS");
	ck_assert_str_eq(sw_frame_state_name(SW_STATE_SKIPPED_FRAME), "SKIPPED_FRAME");
	ck_assert_str_eq(sw_frame_state_name(SW_STATE_INITIAL_NATIVE), "INITIAL_NATIVE");
	ck_assert_str_eq(sw_frame_state_name((sw_frame_state)0), "?");
}
END_TEST

START_TEST(architectures)
{
	ck_assert_str_eq(sw_arch_name(SW_ARCH_X64), "x64");
	ck_assert_str_eq(sw_arch_name(SW_ARCH_X86), "x86");
	ck_assert_str_eq(sw_arch_name(SW_ARCH_ARM64), "arm64");
	ck_assert_ptr_null(sw_arch_name(SW_ARCH_NONE));
	ck_assert_uint_eq(sw_arch_pointer_size(SW_ARCH_X64), 8);
	ck_assert_uint_eq(sw_arch_pointer_size(SW_ARCH_X86), 4);
	ck_assert_uint_eq(sw_arch_pointer_size((sw_arch)99), 0);
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_X64, SW_X64_RBX), "rbx");
	ck_assert_str_eq(sw_arch_reg_name(SW_ARCH_X64, SW_X64_RIP), "rip");
	ck_assert_ptr_null(sw_arch_reg_name(SW_ARCH_X64, SW_X64_NREGS));
#if defined(__x86_64__)
	ck_assert_int_eq(sw_arch_host(), SW_ARCH_X64);
#endif
}
END_TEST

START_TEST(contexts)
{
	sw_context c;
	uint64_t v;

	ck_assert_int_eq(sw_context_init(&c, SW_ARCH_NONE), SW_E_INVAL);
	ck_assert_int_eq(sw_context_init(&c, SW_ARCH_X64), SW_OK);
	ck_assert_uint_eq(c.valid, 0);
	ck_assert_int_eq(sw_context_get(&c, SW_X64_RBX, &v), SW_E_NOREG);
	ck_assert_int_eq(sw_context_set(&c, SW_X64_RBX, 42), SW_OK);
	ck_assert_int_eq(sw_context_get(&c, SW_X64_RBX, &v), SW_OK);
	ck_assert_uint_eq(v, 42);
	ck_assert_int_eq(sw_context_set(&c, SW_X64_NREGS, 1), SW_E_INVAL);
	ck_assert_uint_eq(sw_context_ip(&c), 0);
	sw_context_set(&c, SW_X64_RIP, 0x1234);
	sw_context_set(&c, SW_X64_RSP, 0x5678);
	ck_assert_uint_eq(sw_context_ip(&c), 0x1234);
	ck_assert_uint_eq(sw_context_sp(&c), 0x5678);
	ck_assert_uint_eq(sw_context_ip(NULL), 0);
}
END_TEST

START_TEST(buffer_memory)
{
	unsigned char buf[64];
	sw_memory m;
	uint64_t v = 0;

	memset(buf, 0xab, sizeof buf);
	ck_assert_int_eq(sw_memory_init_buffer(&m, buf, sizeof buf, 0x1000), SW_OK);
	ck_assert_int_eq(sw_memory_read(&m, 0x1000, &v, 8), SW_OK);
	ck_assert_uint_eq(v, 0xababababababababull);
	ck_assert_int_eq(sw_memory_read(&m, 0x1000 + 60, &v, 8), SW_E_BADADDR);
	ck_assert_int_eq(sw_memory_read(&m, 0xfff, &v, 8), SW_E_BADADDR);
	ck_assert_int_eq(sw_memory_read(&m, UINT64_MAX - 2, &v, 8), SW_E_BADADDR);
	v = 7;
	ck_assert_int_eq(sw_memory_write(&m, 0x1008, &v, 8), SW_OK);
	ck_assert_uint_eq(buf[8], 7);
	ck_assert_int_eq(sw_memory_write(&m, 0x1040, &v, 8), SW_E_BADADDR);
	ck_assert_int_eq(sw_memory_init_buffer(&m, NULL, 8, 0), SW_E_INVAL);
}
END_TEST

static uint64_t outside_word = 0x600df00d;

START_TEST(local_memory)
{
	uint64_t window[4] = { 1, 2, 3, 4 }, v = 0;
	uint64_t lo = (uintptr_t)window, hi = lo + sizeof window;
	sw_memory m;

	ck_assert_int_eq(sw_memory_init_local(&m, lo, hi, 0), SW_OK);
	ck_assert_int_eq(sw_memory_read(&m, lo + 16, &v, 8), SW_OK);
	ck_assert_uint_eq(v, 3);
	/* Outside the window: refused without PROBE, read safely with it. */
	ck_assert_int_eq(sw_memory_read(&m, (uintptr_t)&outside_word, &v, 8), SW_E_BADADDR);
	ck_assert_int_eq(sw_memory_write(&m, (uintptr_t)&outside_word, &v, 8), SW_E_READONLY);
	ck_assert_int_eq(sw_memory_local_allow(&m, (uintptr_t)&outside_word, (uintptr_t)&outside_word + 8), SW_OK);
	ck_assert_int_eq(sw_memory_read(&m, (uintptr_t)&outside_word, &v, 8), SW_OK);
	ck_assert_uint_eq(v, 0x600df00d);
	ck_assert_int_eq(sw_memory_init_local(&m, lo, hi, SW_MEMORY_PROBE), SW_OK);
	ck_assert_int_eq(sw_memory_read(&m, (uintptr_t)&outside_word, &v, 8), SW_OK);
	ck_assert_uint_eq(v, 0x600df00d);
	ck_assert_int_eq(sw_memory_read(&m, 8, &v, 8), SW_E_BADADDR);          /* unmapped: no fault */
	ck_assert_int_eq(sw_memory_init_local(&m, hi, lo, 0), SW_E_INVAL);
	ck_assert_int_eq(sw_memory_local_allow(NULL, 0, 0), SW_E_INVAL);
}
END_TEST

START_TEST(frame_push_pop)
{
	sw_frame *head = NULL;
	sw_inlined_call_frame icf;
	sw_transition_frame tf;

	sw_frame_push(&head, &icf.base, SW_FRAME_INLINED_CALL, 0);
	sw_frame_push(&head, &tf.base, SW_FRAME_TRANSITION, SW_FRAME_ATTR_RESUMABLE);
	ck_assert_ptr_eq(head, &tf.base);
	ck_assert_ptr_eq(tf.base.next, &icf.base);
	ck_assert_uint_eq(tf.base.type, SW_FRAME_TRANSITION);
	ck_assert_uint_eq(tf.base.attributes, SW_FRAME_ATTR_RESUMABLE);
	ck_assert_int_eq(sw_frame_pop(&head, &icf.base), SW_E_BADFRAME);   /* not the newest */
	ck_assert_int_eq(sw_frame_pop(&head, &tf.base), SW_OK);
	ck_assert_int_eq(sw_frame_pop(&head, &icf.base), SW_OK);
	ck_assert_ptr_null(head);
	/* The documented layout: fields start right after next, type and attributes. */
	ck_assert_uint_eq(offsetof(sw_inlined_call_frame, datum), sizeof(void *) + 8);
	ck_assert_uint_eq(offsetof(sw_transition_frame, transition_block), sizeof(void *) + 8 + sizeof(void *));
	ck_assert_ptr_nonnull(sw_frame_type_ops(SW_FRAME_INLINED_CALL));
	ck_assert_ptr_nonnull(sw_frame_type_ops(SW_FRAME_TRANSITION));
	ck_assert_ptr_null(sw_frame_type_ops(SW_FRAME_TYPE_MAX + 1));
}
END_TEST

START_TEST(self_thread)
{
	sw_codemap *map;
	sw_memory mem;
	sw_thread t;
	sw_frame *head = NULL;
	int local;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_thread_init_self(&t, map, &mem, &head), SW_OK);
	ck_assert_uint_le(t.stack_lo, (uintptr_t)&local);
	ck_assert_uint_gt(t.stack_hi, (uintptr_t)&local);
	ck_assert_uint_eq(t.frame_head, (uintptr_t)&head);
	ck_assert_int_eq(sw_thread_init(&t, SW_ARCH_X64, map, &mem, 0, 10, 5), SW_E_INVAL);
	ck_assert_int_eq(sw_thread_init(&t, SW_ARCH_NONE, map, &mem, 0, 0, 16), SW_E_UNSUPPORTED);
	sw_codemap_destroy(map);
}
END_TEST

static sw_context signal_ctx;
static sw_status signal_status = SW_E_STATE;

static void on_usr1(int sig, siginfo_t *si, void *uc)
{
	(void)sig; (void)si;
	signal_status = sw_context_from_ucontext(&signal_ctx, uc);
}

START_TEST(context_from_signal)
{
	struct sigaction sa;
	int local;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_usr1;
	sa.sa_flags = SA_SIGINFO;
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);
	raise(SIGUSR1);
	ck_assert_int_eq(sw_context_from_ucontext(NULL, &sa), SW_E_INVAL);
	if (sw_arch_host() == SW_ARCH_NONE) {
		ck_assert_int_eq(signal_status, SW_E_UNSUPPORTED);
		return;
	}
	ck_assert_int_eq(signal_status, SW_OK);
	ck_assert_int_eq(signal_ctx.arch, sw_arch_host());
	/* Interrupted inside raise(), on this thread's stack, below our frame. */
	ck_assert_uint_ne(sw_context_ip(&signal_ctx), 0);
	ck_assert_uint_lt(sw_context_sp(&signal_ctx), (uintptr_t)&local);
	ck_assert_uint_gt(sw_context_sp(&signal_ctx), (uintptr_t)&local - (1u << 20));
}
END_TEST

static Suite *basics_suite(void)
{
	Suite *s = suite_create("basics");
	TCase *tc = tcase_create("basics");

	tcase_add_test(tc, status_names);
	tcase_add_test(tc, state_names);
	tcase_add_test(tc, architectures);
	tcase_add_test(tc, contexts);
	tcase_add_test(tc, buffer_memory);
	tcase_add_test(tc, local_memory);
	tcase_add_test(tc, frame_push_pop);
	tcase_add_test(tc, self_thread);
	tcase_add_test(tc, context_from_signal);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(basics_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
