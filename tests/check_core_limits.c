/*
 * check_core_limits.c - core files whose counts and sizes are hostile:
 * an NT_FILE note that repeats one entry thousands of times, a note table
 * past the hard limit, a megabyte of empty notes, more notes than a core
 * may hold.  The cores are synthesized here, byte by byte, in
 * the layout the kernel writes (one PT_NOTE: NT_PRSTATUS, then NT_FILE),
 * so that each test says exactly which count it is about; real cores of
 * real programs are check_targets' and swstack-manymaps.test's.
 */
#include <check.h>
#include <elf.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>

#define PRSTATUS_X64_SIZE 336           /* struct elf_prstatus on x86-64 */
#define PRSTATUS_X64_REGS 112           /* where pr_reg starts in it */
#define NT_FILE_TYPE 0x46494c45         /* "FILE" */

/* A core being written: bytes appended in order. */
struct core_buf {
	unsigned char *p;
	size_t len;
};

static void put(struct core_buf *b, const void *src, size_t n)
{
	b->p = realloc(b->p, b->len + n);
	ck_assert_ptr_nonnull(b->p);
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void put_u64(struct core_buf *b, uint64_t v)
{
	put(b, &v, sizeof v);
}

/* One note named "CORE" (4-byte aligned, as the kernel's PT_NOTE). */
static void put_note(struct core_buf *b, uint32_t type, const void *desc, uint32_t descsz)
{
	Elf64_Nhdr nh = { 5, descsz, type };
	static const char name[8] = "CORE";
	static const unsigned char pad[4];

	put(b, &nh, sizeof nh);
	put(b, name, sizeof name);
	put(b, desc, descsz);
	put(b, pad, (4 - descsz % 4) % 4);
}

/*
 * An x86-64 core with one thread and an NT_FILE note of `entries` entries,
 * entry i mapping `path` at start(i) = 0x400000 + (repeat ? 0 : i) pages.
 */
static struct core_buf core_with_files(uint64_t entries, int repeat, const char *path)
{
	struct core_buf b = { 0 }, files = { 0 };
	unsigned char prstatus[PRSTATUS_X64_SIZE] = { 0 };
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph = { 0 };
	uint64_t rsp = 0x7ffe0000, rip = 0x401000;

	/* Registers: rip is slot 16 of user_regs_struct, rsp slot 19. */
	memcpy(prstatus + PRSTATUS_X64_REGS + 16 * 8, &rip, 8);
	memcpy(prstatus + PRSTATUS_X64_REGS + 19 * 8, &rsp, 8);
	put_u64(&files, entries);
	put_u64(&files, 4096);
	for (uint64_t i = 0; i < entries; i++) {
		uint64_t start = 0x400000 + (repeat ? 0 : i) * 4096;

		put_u64(&files, start);
		put_u64(&files, start + 4096);
		put_u64(&files, 0);
	}
	for (uint64_t i = 0; i < entries; i++)
		put(&files, path, strlen(path) + 1);

	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_CORE;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_phoff = sizeof eh;
	eh.e_ehsize = sizeof eh;
	eh.e_phentsize = sizeof ph;
	eh.e_phnum = 1;
	put(&b, &eh, sizeof eh);
	ph.p_type = PT_NOTE;
	ph.p_offset = sizeof eh + sizeof ph;
	ph.p_align = 4;
	put(&b, &ph, sizeof ph);
	put_note(&b, NT_PRSTATUS, prstatus, sizeof prstatus);
	put_note(&b, NT_FILE_TYPE, files.p, (uint32_t)files.len);
	free(files.p);
	/* The note segment's size, now known. */
	ph.p_filesz = b.len - ph.p_offset;
	memcpy(b.p + sizeof eh, &ph, sizeof ph);
	return b;
}

/*
 * A core whose NT_FILE note lists one file 10,000 times, all at one place
 * (`repeat`) or each at its own: it opens with `mappings` mappings, by
 * address, the last at `last_start`, and one thread.
 */
static void open_file_entries(int repeat, unsigned mappings, uint64_t last_start)
{
	struct core_buf b = core_with_files(10000, repeat, "/usr/lib/libexample.so");
	sw_mapped_file f;
	sw_core *c = NULL;

	ck_assert_int_eq(sw_core_open_memory(b.p, b.len, 0, &c), SW_OK);
	ck_assert_uint_eq(sw_core_thread_count(c), 1);
	ck_assert_uint_eq(sw_core_module_count(c), mappings);
	ck_assert_int_eq(sw_core_module(c, mappings - 1, &f), SW_OK);
	ck_assert_uint_eq(f.start, last_start);
	ck_assert_str_eq(f.path, "/usr/lib/libexample.so");
	sw_core_close(c);
	free(b.p);
}

/* One entry listed 10,000 times is one mapping. */
START_TEST(repeated_file_entries_fold)
{
	open_file_entries(1, 1, 0x400000);
}
END_TEST

/* 10,000 distinct entries of one file stay 10,000 mappings. */
START_TEST(distinct_file_entries_kept)
{
	open_file_entries(0, 10000, 0x400000 + 9999 * 4096);
}
END_TEST

/* Past the documented hard limit of NT_FILE entries: SW_E_LIMIT, nothing allocated by the count. */
START_TEST(file_entries_over_limit)
{
	struct core_buf b = core_with_files(1, 1, "/x");
	sw_core *c = NULL;
	/* The count field is the NT_FILE descriptor's first word. */
	size_t at = b.len - (2 * 8 + 3 * 8 + 3) - 1;
	uint64_t huge = (1u << 20) + 1;

	ck_assert_uint_eq(b.p[at + 16 + 24], '/');
	memcpy(b.p + at, &huge, 8);
	ck_assert_int_eq(sw_core_open_memory(b.p, b.len, 0, &c), SW_E_LIMIT);
	ck_assert_ptr_null(c);
	free(b.p);
}
END_TEST

/* Append bytes to the note segment, which core_with_files puts last in the file. */
static void grow_notes(struct core_buf *b, const void *bytes, size_t n)
{
	Elf64_Phdr ph;

	put(b, bytes, n);
	memcpy(&ph, b->p + sizeof(Elf64_Ehdr), sizeof ph);
	ph.p_filesz += n;
	memcpy(b->p + sizeof(Elf64_Ehdr), &ph, sizeof ph);
}

/*
 * A megabyte of zeros after the notes: empty notes, skipped at once with
 * whatever follows them (here a second thread, which is not read).
 */
START_TEST(empty_notes_skipped)
{
	struct core_buf b = core_with_files(1, 1, "/x");
	unsigned char prstatus[PRSTATUS_X64_SIZE] = { 0 };
	struct core_buf tail = { 0 };
	unsigned char *zeros = calloc(1, 1u << 20);
	sw_core *c = NULL;

	ck_assert_ptr_nonnull(zeros);
	grow_notes(&b, zeros, 1u << 20);
	put_note(&tail, NT_PRSTATUS, prstatus, sizeof prstatus);
	grow_notes(&b, tail.p, tail.len);
	ck_assert_int_eq(sw_core_open_memory(b.p, b.len, 0, &c), SW_OK);
	ck_assert_uint_eq(sw_core_thread_count(c), 1);
	ck_assert_uint_eq(sw_core_module_count(c), 1);
	sw_core_close(c);
	free(zeros);
	free(tail.p);
	free(b.p);
}
END_TEST

/* More notes than any kernel writes for the threads a core may hold: SW_E_LIMIT. */
START_TEST(note_count_limit)
{
	struct core_buf b = core_with_files(1, 1, "/x"), many = { 0 };
	const size_t count = (1u << 16) * 8 + 100;
	/* An unknown note type, named "CORE", no descriptor: 20 bytes each. */
	Elf64_Nhdr nh = { 5, 0, 0x7777 };
	unsigned char one[20] = { 0 };
	sw_core *c = NULL;

	memcpy(one, &nh, sizeof nh);
	memcpy(one + sizeof nh, "CORE", 5);
	many.p = malloc(count * sizeof one);
	ck_assert_ptr_nonnull(many.p);
	for (size_t i = 0; i < count; i++)
		memcpy(many.p + i * sizeof one, one, sizeof one);
	grow_notes(&b, many.p, count * sizeof one);
	ck_assert_int_eq(sw_core_open_memory(b.p, b.len, 0, &c), SW_E_LIMIT);
	ck_assert_ptr_null(c);
	free(many.p);
	free(b.p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("core_limits");
	TCase *tc = tcase_create("notes");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, repeated_file_entries_fold);
	tcase_add_test(tc, distinct_file_entries_kept);
	tcase_add_test(tc, file_entries_over_limit);
	tcase_add_test(tc, empty_notes_skipped);
	tcase_add_test(tc, note_count_limit);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
