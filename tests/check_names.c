/*
 * check_names.c - sw_names through the API: demangling (C++, Rust legacy
 * and v0), this process's own code named with its source line, the
 * symbol alone (sw_names_symbol), bad
 * arguments, files that are not ELF or not cores, corrupted copies.  The inline chains and debug
 * files of real programs are compared with eu-stack in swstack-names.test.
 */
#define _GNU_SOURCE     /* dl_iterate_phdr */
#include <check.h>
#include <fcntl.h>
#include <link.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <stackwalk.h>

/*
 * LeakSanitizer (the ASan build): libdw keeps allocations it makes while
 * reading some of the corrupted copies below and never frees them (seen as
 * 105 blocks allocated inside libdw.so.1, with no frame of ours between).
 * They are libdw's; a leak from this library's own code still fails.
 */
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void)
{
	return "leak:libdw.so.1\n";
}

START_TEST(demangles_cxx_and_rust)
{
	sw_names *n;
	const char *d;

	ck_assert_int_eq(sw_names_create(NULL, &n), SW_OK);
	ck_assert_str_eq(sw_names_demangle(n, "_ZN2ns3BoxIiE4waitEv"), "ns::Box<int>::wait()");
	ck_assert_str_eq(sw_names_demangle(n, "_Z5outerRN2ns3BoxIiEE"), "outer(ns::Box<int>&)");
	/* Rust legacy: the hash goes, as gdb drops it. */
	ck_assert_str_eq(sw_names_demangle(n, "_ZN4core3fmt5write17h0123456789abcdefE"),
	                 "core::fmt::write");
	ck_assert_str_eq(sw_names_demangle(n, "_RNvCs15kBYyAo9fc_7mycrate7example"),
	                 "mycrate::example");
	ck_assert_str_eq(sw_names_demangle(n, "main"), "main");
	ck_assert_str_eq(sw_names_demangle(n, "_Zgarbage"), "_Zgarbage");
	ck_assert_str_eq(sw_names_demangle(n, ""), "");
	/* Demangled once: the same string the next time. */
	d = sw_names_demangle(n, "_ZN2ns3BoxIiE4waitEv");
	ck_assert_ptr_eq(d, sw_names_demangle(n, "_ZN2ns3BoxIiE4waitEv"));
	ck_assert_ptr_null(sw_names_demangle(n, NULL));
	sw_names_free(n);
}
END_TEST

START_TEST(demangles_many)
{
	sw_names *n;
	char raw[64], want[64];

	/* Enough distinct names to grow the table several times. */
	ck_assert_int_eq(sw_names_create(NULL, &n), SW_OK);
	for (int i = 0; i < 5000; i++) {
		snprintf(raw, sizeof raw, "_Z%zuf%dv", strlen("f") + (size_t)snprintf(NULL, 0, "%d", i), i);
		snprintf(want, sizeof want, "f%d()", i);
		ck_assert_str_eq(sw_names_demangle(n, raw), want);
	}
	snprintf(want, sizeof want, "f%d()", 17);
	ck_assert_str_eq(sw_names_demangle(n, "_Z3f17v"), want);
	sw_names_free(n);
}
END_TEST

static __attribute__((noinline)) uintptr_t caller_pc(void)
{
	uintptr_t pc = (uintptr_t)__builtin_return_address(0);

	__asm__ volatile("" ::: "memory");
	return pc;
}

/* The call and its line on one line: the return address is on it. */
static __attribute__((noinline)) int line_of_call(uintptr_t *pc)
{
	*pc = caller_pc(); return __LINE__;
}

START_TEST(names_own_code)
{
	sw_names *n;
	sw_name nm;
	sw_name_frame f[8];
	uintptr_t pc;
	int line = line_of_call(&pc);
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);

	ck_assert_int_gt(len, 0);
	exe[len] = '\0';
	ck_assert_int_eq(sw_names_create(NULL, &n), SW_OK);
	ck_assert_int_eq(sw_names_add_process(n, getpid()), SW_OK);
	ck_assert_int_eq(sw_names_lookup(n, pc - 1, &nm, f, 8), SW_OK);
	ck_assert_str_eq(nm.module, exe);
	ck_assert_str_eq(nm.symbol, "line_of_call");
	ck_assert_str_eq(nm.symbol_demangled, "line_of_call");
	ck_assert_uint_eq(nm.symbol_start + nm.offset, pc - 1);
	ck_assert_uint_eq(nm.symbol_start, (uintptr_t)line_of_call);
	ck_assert_uint_ge(nm.frames, 1);
	ck_assert_uint_le(nm.frames, 8);
	ck_assert_str_eq(f[nm.frames - 1].function, "line_of_call");
	ck_assert_int_eq(f[nm.frames - 1].inlined, 0);
	ck_assert_ptr_nonnull(f[0].file);
	ck_assert_str_eq(strrchr(f[0].file, '/') ? strrchr(f[0].file, '/') + 1 : f[0].file,
	                 "check_names.c");
	ck_assert_uint_eq(f[0].line, (unsigned)line);
	/* Only the count, when there is no room. */
	ck_assert_int_eq(sw_names_lookup(n, pc - 1, &nm, NULL, 0), SW_OK);
	ck_assert_uint_ge(nm.frames, 1);
	/* No module at 0. */
	ck_assert_int_eq(sw_names_lookup(n, 0, &nm, f, 8), SW_E_NOTFOUND);
	ck_assert_ptr_null(nm.module);
	ck_assert_uint_eq(nm.frames, 0);
	sw_names_free(n);
}
END_TEST

/* The main program's load bias: dl_iterate_phdr reports it first. */
static int first_bias(struct dl_phdr_info *info, size_t size, void *data)
{
	*(uintptr_t *)data = (uintptr_t)info->dlpi_addr;
	return 1;
}

START_TEST(names_a_module_by_path)
{
	sw_names *n;
	sw_name nm;
	sw_name_frame f[4];
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	uintptr_t pc, bias = 0;
	int line = line_of_call(&pc);

	ck_assert_int_gt(len, 0);
	exe[len] = '\0';
	dl_iterate_phdr(first_bias, &bias);
	ck_assert_int_eq(sw_names_create(NULL, &n), SW_OK);
	ck_assert_int_eq(sw_names_add_module(n, exe, bias), SW_OK);
	ck_assert_int_eq(sw_names_lookup(n, pc - 1, &nm, f, 4), SW_OK);
	ck_assert_str_eq(nm.symbol, "line_of_call");
	ck_assert_uint_eq(nm.symbol_start, (uintptr_t)line_of_call);
	ck_assert_uint_ge(nm.frames, 1);
	ck_assert_uint_eq(f[0].line, (unsigned)line);
	sw_names_free(n);
}
END_TEST

/* The symbol only: the same symbol as sw_names_lookup's, no frames, and the debug file it came from. */
START_TEST(names_symbol_only)
{
	sw_names *n;
	sw_name nm, full;
	uintptr_t pc;
	const char *debug_file = "unset";
	uintptr_t in_libc = (uintptr_t)&getpid;

	line_of_call(&pc);
	ck_assert_int_eq(sw_names_create(NULL, &n), SW_OK);
	ck_assert_int_eq(sw_names_add_process(n, getpid()), SW_OK);
	ck_assert_int_eq(sw_names_symbol(n, pc - 1, &nm, &debug_file), SW_OK);
	ck_assert_str_eq(nm.symbol, "line_of_call");
	ck_assert_uint_eq(nm.symbol_start, (uintptr_t)line_of_call);
	ck_assert_uint_eq(nm.frames, 0);
	/* The program's own .symtab: no separate file. */
	ck_assert_ptr_null(debug_file);
	/* libc: the symbol lookup gives, from its debug file where there is one. */
	ck_assert_int_eq(sw_names_symbol(n, in_libc, &nm, &debug_file), SW_OK);
	ck_assert_int_eq(sw_names_lookup(n, in_libc, &full, NULL, 0), SW_OK);
	ck_assert_ptr_nonnull(nm.symbol);
	ck_assert_str_eq(nm.symbol, full.symbol);
	ck_assert_uint_eq(nm.symbol_start, full.symbol_start);
	ck_assert_uint_eq(nm.frames, 0);
	if (debug_file) {
		ck_assert_int_eq(access(debug_file, R_OK), 0);
		ck_assert_str_ne(debug_file, nm.module);
	}
	ck_assert_int_eq(sw_names_symbol(n, pc - 1, &nm, NULL), SW_OK);
	ck_assert_str_eq(nm.symbol, "line_of_call");
	ck_assert_int_eq(sw_names_symbol(n, 0, &nm, &debug_file), SW_E_NOTFOUND);
	ck_assert_ptr_null(nm.module);
	ck_assert_ptr_null(debug_file);
	ck_assert_int_eq(sw_names_symbol(n, pc, NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_names_symbol(NULL, pc, &nm, NULL), SW_E_INVAL);
	sw_names_free(n);
}
END_TEST

START_TEST(bad_input)
{
	sw_names *n;
	sw_name nm;
	char path[] = "/tmp/check_names_XXXXXX";
	int fd = mkstemp(path);
	static const char junk[] = "\177ELF this is not an ELF file at all, only its magic";

	ck_assert_int_eq(sw_names_create(NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_names_create("-:/nonexistent", &n), SW_OK);
	ck_assert_int_eq(sw_names_add_module(n, NULL, 0), SW_E_INVAL);
	ck_assert_int_eq(sw_names_add_module(NULL, "/bin/sh", 0), SW_E_INVAL);
	ck_assert_int_eq(sw_names_add_module(n, "/nonexistent/file", 0), SW_E_NOTFOUND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, junk, sizeof junk), (ssize_t)sizeof junk);
	close(fd);
	ck_assert_int_eq(sw_names_add_module(n, path, 0), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_names_add_core(n, path, NULL), SW_E_NOTFOUND);
	unlink(path);
	ck_assert_int_eq(sw_names_add_core(n, NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_names_add_core(NULL, "/bin/sh", NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_names_add_core(n, "/nonexistent/core", NULL), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_names_add_process(n, 0), SW_E_INVAL);
	ck_assert_int_eq(sw_names_add_process(NULL, 1), SW_E_INVAL);
	ck_assert_int_eq(sw_names_lookup(n, 0x1000, NULL, NULL, 0), SW_E_INVAL);
	ck_assert_int_eq(sw_names_lookup(n, 0x1000, &nm, NULL, 1), SW_E_INVAL);
	ck_assert_int_eq(sw_names_lookup(NULL, 0x1000, &nm, NULL, 0), SW_E_INVAL);
	ck_assert_int_eq(sw_names_lookup(n, 0x1000, &nm, NULL, 0), SW_E_NOTFOUND);
	sw_names_free(n);
	sw_names_free(NULL);
}
END_TEST

START_TEST(not_a_core)
{
	sw_names *n;
	char exe[4096];
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	sw_status st;

	ck_assert_int_gt(len, 0);
	exe[len] = '\0';
	ck_assert_int_eq(sw_names_create(NULL, &n), SW_OK);
	/* An executable is ELF, but has no notes of mapped files. */
	st = sw_names_add_core(n, exe, NULL);
	ck_assert(st == SW_E_BADMETA || st == SW_OK);
	ck_assert_int_eq(sw_names_add_core(n, exe, NULL), SW_E_EXISTS);
	sw_names_free(n);
}
END_TEST

/*
 * Copies of this program with bytes changed at random (a fixed seed), its
 * DWARF and symbol tables among them, named at addresses all over its
 * code: each lookup must end, with a name or without, and never crash.
 */
START_TEST(corrupted_files)
{
	char exe[4096], path[] = "/tmp/check_names_mut_XXXXXX";
	ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);
	unsigned char *orig, *copy;
	size_t size = 0, named = 0;
	unsigned seed = 27;
	struct stat sb;
	int fd;

	ck_assert_int_gt(len, 0);
	exe[len] = '\0';
	ck_assert_int_ge(fd = open(exe, O_RDONLY), 0);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	size = (size_t)sb.st_size;
	orig = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
	ck_assert(orig != MAP_FAILED);
	close(fd);
	ck_assert_ptr_nonnull(copy = malloc(size));
	ck_assert_int_ge(fd = mkstemp(path), 0);
	close(fd);
	for (int round = 0; round < 40; round++) {
		sw_names *n;
		sw_name nm;
		sw_name_frame f[8];
		FILE *out;

		memcpy(copy, orig, size);
		for (int k = 0; k < 64; k++)
			copy[rand_r(&seed) % size] = (unsigned char)rand_r(&seed);
		ck_assert_ptr_nonnull(out = fopen(path, "wb"));
		ck_assert_uint_eq(fwrite(copy, 1, size, out), size);
		fclose(out);
		ck_assert_int_eq(sw_names_create("-:/nonexistent", &n), SW_OK);
		if (sw_names_add_module(n, path, 0) == SW_OK)
			for (uint64_t a = 0; a < size; a += 509)
				named += sw_names_lookup(n, a, &nm, f, 8) == SW_OK && nm.frames > 0;
		sw_names_free(n);
	}
	unlink(path);
	free(copy);
	munmap(orig, size);
	ck_assert_uint_gt(named, 0);
}
END_TEST

static Suite *names_suite(void)
{
	Suite *s = suite_create("names");
	TCase *tc = tcase_create("names");

	tcase_add_test(tc, demangles_cxx_and_rust);
	tcase_add_test(tc, demangles_many);
	tcase_add_test(tc, names_own_code);
	tcase_add_test(tc, names_a_module_by_path);
	tcase_add_test(tc, names_symbol_only);
	tcase_add_test(tc, bad_input);
	tcase_add_test(tc, not_a_core);
	tcase_add_test(tc, corrupted_files);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(names_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
