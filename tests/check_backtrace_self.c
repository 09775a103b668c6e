/*
 * check_backtrace_self.c - sw_backtrace_self against glibc's backtrace(),
 * called side by side at the same depth: the same return addresses,
 * frame for frame, but the first (the two calls' own sites in one
 * function).  Shallow and deep (past the walk's on-stack buffer), and
 * through a library compiled now and dlopen'ed, dlclose'd and opened again
 * (its module must follow: registered, dropped, registered at its new
 * address).
 */
#define _GNU_SOURCE 1
#include <check.h>
#include <dlfcn.h>
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stackwalk.h>

#define MAX 1024

static void *glibc_ips[MAX], *sw_ips[MAX];
static int glibc_n, sw_n;

/* Both stacks, from the same function. */
static __attribute__((noinline)) void take_both(void)
{
	glibc_n = backtrace(glibc_ips, MAX);
	sw_n = sw_backtrace_self(sw_ips, MAX);
}

static __attribute__((noinline)) int descend(int depth)
{
	if (depth > 0)
		return descend(depth - 1) + 1;
	take_both();
	return 0;
}

/* Under AddressSanitizer backtrace() is intercepted: its first frame is then the interceptor's. */
static void drop_interceptor_frame(void)
{
	uintptr_t fn = (uintptr_t)(void *)take_both;

	if (glibc_n > 1 && (uintptr_t)glibc_ips[0] - fn >= 256 && (uintptr_t)glibc_ips[1] - fn < 256) {
		memmove(glibc_ips, glibc_ips + 1, (size_t)(glibc_n - 1) * sizeof *glibc_ips);
		glibc_n--;
	}
}

static void compare(const char *what)
{
	drop_interceptor_frame();
	ck_assert_msg(sw_n == glibc_n, "%s: %d frames, glibc's backtrace %d", what, sw_n, glibc_n);
	ck_assert_int_gt(sw_n, 3);
	for (int i = 1; i < sw_n; i++)
		ck_assert_msg(sw_ips[i] == glibc_ips[i], "%s: #%d %p, glibc's backtrace %p", what, i,
		              sw_ips[i], glibc_ips[i]);
	/* The first: both in take_both, a call apart. */
	ck_assert_uint_lt((uintptr_t)glibc_ips[0] - (uintptr_t)(void *)take_both, 256);
	ck_assert_uint_lt((uintptr_t)sw_ips[0] - (uintptr_t)(void *)take_both, 256);
}

START_TEST(same_as_glibc)
{
	descend(5);
	compare("depth 5");
	descend(5);
	compare("depth 5, warm");
	descend(600);
	compare("depth 600");
	ck_assert_int_eq(sw_backtrace_self(NULL, 4), 0);
	ck_assert_int_eq(sw_backtrace_self(sw_ips, 0), 0);
	/* Fewer than the stack has: the innermost ones. */
	descend(20);
	ck_assert_int_eq(sw_backtrace_self(sw_ips, 3), 3);
}
END_TEST

/* A library that calls back, built now, so that it is loaded only by dlopen. */
static const char lib_source[] =
	"__attribute__((noinline)) int lib_inner(void (*cb)(void)) { cb(); return 1; }\n"
	"int lib_call(void (*cb)(void)) { return lib_inner(cb) + 1; }\n";

static int build_lib(const char *so)
{
	char cmd[512];
	FILE *f = fopen("bt-self-lib.c", "w");

	if (!f)
		return -1;
	fputs(lib_source, f);
	fclose(f);
	snprintf(cmd, sizeof cmd, "${CC:-cc} -O1 -shared -fPIC -o %s bt-self-lib.c", so);
	return system(cmd) == 0 ? 0 : -1;
}

static void through_library(const char *so, const char *what)
{
	void *h = dlopen(so, RTLD_NOW | RTLD_LOCAL);
	int (*call)(void (*)(void));

	ck_assert_msg(h != NULL, "dlopen: %s", dlerror());
	*(void **)&call = dlsym(h, "lib_call");
	ck_assert_ptr_nonnull(call);
	ck_assert_int_eq(call(take_both), 2);
	compare(what);
	/* The library's two frames are among them. */
	{
		Dl_info di;
		int in_lib = 0;

		for (int i = 0; i < sw_n; i++)
			if (dladdr(sw_ips[i], &di) && di.dli_fname && strstr(di.dli_fname, so + 2))
				in_lib++;
		ck_assert_int_eq(in_lib, 2);
	}
	ck_assert_int_eq(dlclose(h), 0);
}

START_TEST(follows_dlopen)
{
	const char *so = "./bt-self-lib.so";

	if (build_lib(so) != 0) {
		printf("no C compiler: the dlopen case is not run\n");
		return;
	}
	through_library(so, "dlopen'ed");
	/* Closed: a walk goes on without it. */
	descend(3);
	compare("after dlclose");
	/* Opened again, maybe elsewhere: its new place is found. */
	through_library(so, "dlopen'ed again");
	unlink(so);
	unlink("bt-self-lib.c");
}
END_TEST

static Suite *backtrace_self_suite(void)
{
	Suite *s = suite_create("backtrace_self");
	TCase *tc = tcase_create("backtrace_self");

	tcase_set_timeout(tc, 0);
	tcase_add_test(tc, same_as_glibc);
	tcase_add_test(tc, follows_dlopen);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(backtrace_self_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
