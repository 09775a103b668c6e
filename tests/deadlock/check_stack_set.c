/*
 * check_stack_set.c - how the hang analysis's stack set (lib/target/
 * stack_set.c) groups a target's mapped files into modules, on a made-up
 * target: this test's own executable mapped at an address of the test's
 * choosing, its program headers read as they are by the stack set.
 *
 * A later mapping of the file that starts inside its segments and ends a
 * GiB beyond them (issue 31: a hostile core's, or a remapping) joins the
 * module up to where the segments end only: a frame in the overhang is in
 * no module, a frame inside the segments is in the file's.  The same when
 * the file's first and only mapping runs on that far (loop index 1).
 */
#include <check.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "stack_set.h"

#define AT 0x10000000ull                /* where the made-up target maps the executable */
#define FAR (AT + (1ull << 30))         /* beyond any test executable's segments */

static char exe[PATH_MAX];
static unsigned char stack_bytes[64];
static const uint64_t pcs[] = { AT + 0x10, FAR + 0x1000 };

static sw_status fake_thread(const void *t, unsigned i, sw_context *c, int *tid)
{
	sw_arch arch = sw_arch_host();
	unsigned ip = arch == SW_ARCH_X64 ? SW_X64_RIP : arch == SW_ARCH_ARM64 ? SW_ARM64_PC : SW_X86_EIP;
	unsigned sp = arch == SW_ARCH_X64 ? SW_X64_RSP : arch == SW_ARCH_ARM64 ? SW_ARM64_SP : SW_X86_ESP;

	if (i >= sizeof pcs / sizeof pcs[0])
		return SW_E_NOTFOUND;
	*tid = (int)i + 1;
	ck_assert_int_eq(sw_context_init(c, arch), SW_OK);
	ck_assert_int_eq(sw_context_set(c, ip, pcs[i]), SW_OK);
	ck_assert_int_eq(sw_context_set(c, sp, 0x1000), SW_OK);
	return SW_OK;
}

/* 1: the executable's first mapping itself runs on to FAR + 1 MiB, as its only one. */
static int first_overhangs;

/* The executable's first page, then "the rest of it": from inside its segments to FAR + 1 MiB. */
static sw_status fake_file(const void *t, unsigned i, sw_mapped_file *f)
{
	memset(f, 0, sizeof *f);
	f->path = exe;
	if (first_overhangs) {
		if (i != 0)
			return SW_E_NOTFOUND;
		f->start = AT;
		f->end = FAR + (1u << 20);
		f->prot = SW_PROT_READ | SW_PROT_EXEC;
		return SW_OK;
	}
	if (i == 0) {
		f->start = AT;
		f->end = AT + 0x1000;
		f->prot = SW_PROT_READ;
		return SW_OK;
	}
	if (i == 1) {
		f->start = AT + 0x1000;
		f->end = FAR + (1u << 20);
		f->offset = 0x1000;
		f->prot = SW_PROT_READ | SW_PROT_EXEC;
		return SW_OK;
	}
	return SW_E_NOTFOUND;
}

static sw_status fake_bounds(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	return SW_E_NOTFOUND;
}

START_TEST(overhang_is_in_no_module)
{
	struct swi_target t;
	swi_stack_set *s;
	sw_memory mem;
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);

	ck_assert_int_gt(len, 0);
	exe[len] = '\0';
	first_overhangs = _i;
	ck_assert_int_eq(sw_memory_init_buffer(&mem, stack_bytes, sizeof stack_bytes, 0x1000), SW_OK);
	t = (struct swi_target){ sw_arch_host(), &mem, 2, first_overhangs ? 1 : 2, fake_thread, fake_file,
	                         fake_bounds, NULL, 0 };
	ck_assert_int_eq(swi_stack_set_open(&t, &s), SW_OK);
	for (unsigned i = 0; i < 2; i++) {
		struct swi_frame frames[4];
		sw_status walk_status;
		sw_context ctx;
		size_t count;
		int tid;

		ck_assert_int_eq(swi_stack_set_walk(s, i, &ctx, &tid, frames, 4, &count, &walk_status), SW_OK);
		ck_assert_uint_ge(count, 1);
		ck_assert_uint_eq(frames[0].pc, pcs[i]);
		if (i == 0)
			ck_assert_str_eq(frames[0].module, exe);        /* inside its segments */
		else
			ck_assert_ptr_null(frames[0].module);           /* the overhang */
	}
	swi_stack_set_close(s);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stack_set");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 0);
	tcase_add_loop_test(tc, overhang_is_in_no_module, 0, 2);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
