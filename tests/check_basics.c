/*
 * check_basics.c - status names, architectures and their tables, contexts,
 * memory accessors, Frame push and pop.
 */
#include <check.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "arch.h"

START_TEST(status_names)
{
	for (int s = 0; s >= SW_E_NOCALLER; s--) {
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

/* A register of `a`'s: below nregs. */
static void ck_valid_reg(const struct swi_arch *a, unsigned r)
{
	ck_assert_msg(r < a->nregs, "%s: register %u out of range", a->name, r);
}

/* DWARF numbers translate both ways, every register CFI can save has one. */
static void ck_dwarf_numbers(const struct swi_arch *a)
{
	uint64_t needs_dwarf = a->callee_saved | (1ULL << a->sp_reg);

	for (unsigned r = 0; r < a->nregs; r++) {
		int dw = swi_reg_to_dwarf(a, r);

		if (dw >= 0)
			ck_assert_int_eq(swi_dwarf_to_reg(a, (unsigned)dw), (int)r);
		else
			ck_assert_msg(!(needs_dwarf & (1ULL << r)), "%s: %s has no DWARF number",
			              a->name, a->reg_names[r]);
	}
	for (unsigned dw = 0; dw < 256; dw++) {
		int r = swi_dwarf_to_reg(a, dw);

		if (r >= 0) {
			ck_valid_reg(a, (unsigned)r);
			ck_assert_int_eq(swi_reg_to_dwarf(a, (unsigned)r), (int)dw);
		}
	}
	ck_assert_int_eq(swi_dwarf_to_reg(a, UINT64_MAX), -1);
	ck_assert_int_eq(swi_reg_to_dwarf(a, a->nregs), -1);
	/* The return address column is the register it arrives in at entry. */
	ck_assert_int_eq(swi_dwarf_to_reg(a, a->dwarf_ra_column),
	                 a->entry_ra_in_lr ? a->lr_reg : (int)a->ip_reg);
}

/* Registers: names unique, the special ones in range. */
static void ck_registers(const struct swi_arch *a)
{
	ck_assert_uint_le(a->nregs, SW_MAX_REGS);
	for (unsigned r = 0; r < a->nregs; r++) {
		ck_assert_ptr_nonnull(a->reg_names[r]);
		ck_assert_str_eq(sw_arch_reg_name(a->arch, r), a->reg_names[r]);
		for (unsigned q = 0; q < r; q++)
			ck_assert_str_ne(a->reg_names[q], a->reg_names[r]);
	}
	ck_valid_reg(a, a->ip_reg);
	ck_valid_reg(a, a->sp_reg);
	ck_valid_reg(a, a->fp_reg);
	if (a->lr_reg >= 0)
		ck_valid_reg(a, (unsigned)a->lr_reg);
	ck_assert_uint_eq(a->callee_saved >> a->nregs, 0);
	ck_assert_uint_eq(a->ptrauth_mask != 0, a->has_ptrauth != 0);
}

/* System calls: a futex number, six distinct argument registers. */
static void ck_syscalls(const struct swi_arch *a)
{
	const unsigned nargs = sizeof a->syscall_arg_regs / sizeof a->syscall_arg_regs[0];

	ck_assert_uint_ge(a->nfutex_syscalls, 1);
	ck_assert_uint_le(a->nfutex_syscalls, sizeof a->futex_syscalls / sizeof a->futex_syscalls[0]);
	for (unsigned i = 0; i < a->nfutex_syscalls; i++)
		ck_assert_int_gt(a->futex_syscalls[i], 0);
	for (unsigned i = 0; i < nargs; i++) {
		unsigned r = a->syscall_arg_regs[i];

		ck_valid_reg(a, r);
		ck_assert_uint_ne(r, a->sp_reg);
		ck_assert_uint_ne(r, a->ip_reg);
		for (unsigned j = 0; j < i; j++)
			ck_assert_uint_ne(a->syscall_arg_regs[j], r);
	}
}

START_TEST(arch_tables)
{
	unsigned machines[SW_ARCH_ARM64 + 1] = { 0 };

	ck_assert_ptr_null(swi_arch_get(SW_ARCH_NONE));
	ck_assert_ptr_null(swi_arch_get((sw_arch)(SW_ARCH_ARM64 + 1)));
	for (int arch = SW_ARCH_X64; arch <= SW_ARCH_ARM64; arch++) {
		const struct swi_arch *a = swi_arch_get((sw_arch)arch);

		ck_assert_ptr_nonnull(a);
		ck_assert_int_eq(a->arch, arch);
		ck_assert_str_eq(sw_arch_name(a->arch), a->name);
		ck_assert_uint_eq(sw_arch_pointer_size(a->arch), a->ptr_size);
		ck_registers(a);
		ck_dwarf_numbers(a);
		ck_syscalls(a);
		/* glibc's __cur_writer follows __readers, __wrphase_futex, __writers_futex. */
		ck_assert_uint_ge(a->rwlock_cur_writer_offset, 16);
		ck_assert_uint_eq(a->rwlock_cur_writer_offset % 4, 0);
		machines[arch] = a->elf_machine;
		ck_assert_uint_ne(machines[arch], 0);
		for (int other = SW_ARCH_X64; other < arch; other++)
			ck_assert_uint_ne(machines[other], machines[arch]);
	}
	/* A few numbers from the psABIs, to catch a run off by one. */
	ck_assert_int_eq(swi_dwarf_to_reg(&swi_arch_arm64, 72), SW_ARM64_D8);
	ck_assert_int_eq(swi_dwarf_to_reg(&swi_arch_arm64, 79), SW_ARM64_D15);
	ck_assert_int_eq(swi_dwarf_to_reg(&swi_arch_arm64, 80), -1);
	ck_assert_int_eq(swi_reg_to_dwarf(&swi_arch_arm64, SW_ARM64_PC), -1);
	ck_assert_int_eq(swi_dwarf_to_reg(&swi_arch_x64, 16), SW_X64_RIP);
	ck_assert_int_eq(swi_dwarf_to_reg(&swi_arch_x64, 17), -1);
	ck_assert_int_eq(swi_dwarf_to_reg(&swi_arch_x86, 8), SW_X86_EIP);
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
	tcase_add_test(tc, arch_tables);
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
