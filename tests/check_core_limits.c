/*
 * check_core_limits.c - core files whose counts and sizes are hostile:
 * an NT_FILE note that repeats one entry thousands of times, a note table
 * past the hard limit, a megabyte of empty notes, more notes than a core
 * may hold, a sparse core of 64 GiB opened under a 1 GiB address-space
 * limit, a core cut inside its memory, and the dynamic linker of a core
 * without NT_FILE (sw_core_add_loader) at an AT_BASE in no segment or over
 * other bytes, with a PT_INTERP too long, unterminated, cut or missing, and
 * its list of libraries (sw_core_add_libraries) well formed or hostile.  The cores are synthesized here,
 * byte by byte, in the layout the kernel writes (one PT_NOTE: NT_PRSTATUS,
 * then NT_FILE), so that each test says exactly which count it is about;
 * real cores of real programs are check_targets', swstack-manymaps.test's
 * and swstack-truncated.test's.
 */
#define _GNU_SOURCE
#include <check.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stackwalk.h>

#define PRSTATUS_X64_SIZE 336           /* struct elf_prstatus on x86-64 */
#define PRSTATUS_X64_REGS 112           /* where pr_reg starts in it */
#define NT_FILE_TYPE 0x46494c45         /* "FILE" */

/* A core being written: bytes appended in order. */
struct core_buf {
	unsigned char *p;
	size_t len;
	size_t cap;
};

/*
 * Appends n bytes.  The buffer doubles: a note of 10,000 entries is put a
 * few bytes at a time, and growing it by each piece copied it quadratically
 * (two minutes under ASan).
 */
static void put(struct core_buf *b, const void *src, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = b->cap ? b->cap : 4096;
		while (b->len + n > b->cap)
			b->cap *= 2;
		b->p = realloc(b->p, b->cap);
	}
	ck_assert_ptr_nonnull(b->p);
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

/*
 * The bytes, in a block of exactly their length, so that ASan sees a read
 * one byte past the core's end.
 */
static const unsigned char *exact(struct core_buf *b)
{
	b->p = realloc(b->p, b->len);
	ck_assert_ptr_nonnull(b->p);
	b->cap = b->len;
	return b->p;
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

/* The ELF header of an x86-64 core with `phnum` program headers right after it. */
static void core_ehdr(Elf64_Ehdr *eh, unsigned phnum)
{
	memset(eh, 0, sizeof *eh);
	memcpy(eh->e_ident, ELFMAG, SELFMAG);
	eh->e_ident[EI_CLASS] = ELFCLASS64;
	eh->e_ident[EI_DATA] = ELFDATA2LSB;
	eh->e_ident[EI_VERSION] = EV_CURRENT;
	eh->e_type = ET_CORE;
	eh->e_machine = EM_X86_64;
	eh->e_version = EV_CURRENT;
	eh->e_phoff = sizeof *eh;
	eh->e_ehsize = sizeof *eh;
	eh->e_phentsize = sizeof(Elf64_Phdr);
	eh->e_phnum = (Elf64_Half)phnum;
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

	core_ehdr(&eh, 1);
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

	ck_assert_int_eq(sw_core_open_memory(exact(&b), b.len, 0, &c), SW_OK);
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
	ck_assert_int_eq(sw_core_open_memory(exact(&b), b.len, 0, &c), SW_E_LIMIT);
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
	ck_assert_int_eq(sw_core_open_memory(exact(&b), b.len, 0, &c), SW_OK);
	ck_assert_uint_eq(sw_core_thread_count(c), 1);
	ck_assert_uint_eq(sw_core_module_count(c), 1);
	sw_core_close(c);
	free(zeros);
	free(tail.p);
	free(b.p);
}
END_TEST

/* An x86-64 NT_PRPSINFO (136 bytes): pid at 24, pr_fname at 40. */
static void put_prpsinfo(struct core_buf *b, uint32_t size, uint32_t pid, const char *name)
{
	unsigned char d[200] = { 0 };

	memcpy(d + 24, &pid, 4);
	memcpy(d + 40, name, strlen(name) < 16 ? strlen(name) : 16);
	put_note(b, 3, d, size);
}

/*
 * The process's name from NT_PRPSINFO (sw_core_process_name): none
 * without the note; one of the wrong size is passed over, the first
 * well-formed one wins over a repeated one, and a name that fills all 16
 * bytes without a NUL is cut to 15.
 */
START_TEST(process_name_note)
{
	struct core_buf b = core_with_files(1, 1, "/x"), notes = { 0 };
	sw_core *c = NULL;
	const char *name;
	int pid = 0;

	ck_assert_int_eq(sw_core_open_memory(exact(&b), b.len, 0, &c), SW_OK);
	ck_assert_ptr_null(sw_core_process_name(c, &pid));
	sw_core_close(c);
	ck_assert_ptr_null(sw_core_process_name(NULL, &pid));

	put_prpsinfo(&notes, 100, 7, "short");                  /* truncated: ignored */
	put_prpsinfo(&notes, 136, 4242, "0123456789abcdefXYZ");  /* no NUL in 16 bytes */
	put_prpsinfo(&notes, 136, 99, "second");                /* repeated: ignored */
	grow_notes(&b, notes.p, notes.len);
	ck_assert_int_eq(sw_core_open_memory(exact(&b), b.len, 0, &c), SW_OK);
	name = sw_core_process_name(c, &pid);
	ck_assert_ptr_nonnull(name);
	ck_assert_str_eq(name, "0123456789abcde");
	ck_assert_int_eq(pid, 4242);
	ck_assert_ptr_nonnull(sw_core_process_name(c, NULL));
	ck_assert_uint_eq(sw_core_thread_count(c), 1);
	sw_core_close(c);
	free(notes.p);
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
	ck_assert_int_eq(sw_core_open_memory(exact(&b), b.len, 0, &c), SW_E_LIMIT);
	ck_assert_ptr_null(c);
	free(many.p);
	free(b.p);
}
END_TEST

/* ---- cores on disk: sparse, and cut ------------------------------------ */

#define LOAD_VADDR 0x7f0000000000ull
#define NOTES_AT   4096u               /* the note segment's file offset */

/* A file in $TMPDIR (or /tmp) for one core; `path` gets its name. */
static int temp_core(char *path, size_t size)
{
	const char *dir = getenv("TMPDIR");
	int fd;

	snprintf(path, size, "%s/sw-core-limits.XXXXXX", dir && *dir ? dir : "/tmp");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	return fd;
}

static void pwrite_all(int fd, const void *buf, size_t n, uint64_t off)
{
	ck_assert_int_eq(pwrite(fd, buf, n, (off_t)off), (ssize_t)n);
}

/*
 * An x86-64 core on disk: one PT_NOTE at NOTES_AT whose header claims
 * `note_claim` bytes (one thread, its rsp `load_size` - 4096 into the
 * memory, then zeros), one PT_LOAD of `load_size` bytes of memory at
 * LOAD_VADDR right after it, and the file cut (or extended, sparse) to
 * `file_size` bytes; 0 means whole.  Its 8 bytes at rsp are `marker`.
 * Returns the memory's file offset; only the headers and the marker are
 * written, so a claim of gigabytes takes a few blocks of disk.
 */
static uint64_t write_core(int fd, uint64_t note_claim, uint64_t load_size, uint64_t file_size,
                           uint64_t marker)
{
	unsigned char prstatus[PRSTATUS_X64_SIZE] = { 0 };
	struct core_buf notes = { 0 };
	Elf64_Ehdr eh = { 0 };
	Elf64_Phdr ph[2] = { { 0 } };
	uint64_t load_at = NOTES_AT + note_claim, rsp = LOAD_VADDR + load_size - 4096;
	uint64_t rip = 0x401000;

	memcpy(prstatus + PRSTATUS_X64_REGS + 16 * 8, &rip, 8);
	memcpy(prstatus + PRSTATUS_X64_REGS + 19 * 8, &rsp, 8);
	put_note(&notes, NT_PRSTATUS, prstatus, sizeof prstatus);
	ck_assert_uint_le(notes.len, note_claim);
	core_ehdr(&eh, 2);
	ph[0].p_type = PT_NOTE;
	ph[0].p_offset = NOTES_AT;
	ph[0].p_filesz = note_claim;
	ph[0].p_align = 4;
	ph[1].p_type = PT_LOAD;
	ph[1].p_flags = PF_R | PF_W;
	ph[1].p_offset = load_at;
	ph[1].p_vaddr = LOAD_VADDR;
	ph[1].p_filesz = ph[1].p_memsz = load_size;
	ph[1].p_align = 4096;
	pwrite_all(fd, &eh, sizeof eh, 0);
	pwrite_all(fd, ph, sizeof ph, sizeof eh);
	pwrite_all(fd, notes.p, notes.len, NOTES_AT);
	free(notes.p);
	pwrite_all(fd, &marker, sizeof marker, load_at + load_size - 4096);
	ck_assert_int_eq(ftruncate(fd, (off_t)(file_size ? file_size : load_at + load_size)), 0);
	return load_at;
}

static void assert_reads(const sw_core *c, uint64_t addr, uint64_t want)
{
	uint64_t got = ~want;

	ck_assert_int_eq(sw_memory_read(sw_core_memory(c), addr, &got, sizeof got), SW_OK);
	ck_assert_uint_eq(got, want);
}

/*
 * The core: 64 GiB, sparse, its PT_NOTE claiming 32 GiB of which
 * all but the first note is zeros.  It opens under an address-space limit
 * of 1 GiB (the child's: Check's fork would do, but CK_FORK=no would not),
 * and reads its memory at both ends.  Not under AddressSanitizer, whose
 * shadow memory alone is terabytes of address space.
 */
START_TEST(sparse_core_over_address_limit)
{
#if defined(__SANITIZE_ADDRESS__)
	printf("SKIP sparse_core_over_address_limit: AddressSanitizer reserves more than the limit\n");
#else
	const uint64_t gib = 1ull << 30, marker = 0x5ca1ab1e0ddba11ull;
	char path[512];
	int fd = temp_core(path, sizeof path), status;
	struct stat sb;
	pid_t pid;

	write_core(fd, 32 * gib, 32 * gib, 0, marker);
	close(fd);
	/* Sparse: the claim costs no disk (the test must not fill /tmp). */
	ck_assert_int_eq(stat(path, &sb), 0);
	ck_assert_uint_ge((uint64_t)sb.st_size, 64 * gib);
	ck_assert_uint_lt((uint64_t)sb.st_blocks * 512, 1u << 20);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl = { gib, gib };
		sw_core *c = NULL;
		int ok;

		if (setrlimit(RLIMIT_AS, &rl) != 0)
			_exit(2);
		ok = sw_core_open(path, &c) == SW_OK && sw_core_thread_count(c) == 1;
		if (ok) {
			uint64_t v = 1;

			ok = sw_memory_read(sw_core_memory(c), LOAD_VADDR + 32 * gib - 4096, &v, 8) ==
			             SW_OK && v == marker &&
			     sw_memory_read(sw_core_memory(c), LOAD_VADDR, &v, 8) == SW_OK && v == 0;
		}
		sw_core_close(c);
		_exit(ok ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	unlink(path);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	              "a 64 GiB core under a 1 GiB address-space limit: status 0x%x", status);
#endif
}
END_TEST

/*
 * A core cut inside its memory, as RLIMIT_CORE cuts the kernel's: it
 * opens, the bytes the file holds read, those it lost give SW_E_BADADDR,
 * and so does a read that straddles the cut.  Through the file and
 * through an image.
 */
START_TEST(truncated_core_reads_what_it_holds)
{
	const uint64_t marker = 0x1122334455667788ull, note_claim = 4096;
	char path[512];
	int fd = temp_core(path, sizeof path);
	/* 16 KiB of memory, the file cut 4 KiB + 100 bytes into it; the marker is in the lost part. */
	uint64_t load_at = write_core(fd, note_claim, 16384, NOTES_AT + note_claim + 4096 + 100, marker);
	unsigned char *img = malloc(load_at + 4096 + 100), buf[16];
	sw_core *c[2] = { NULL, NULL };
	uint64_t lo, hi;

	ck_assert_ptr_nonnull(img);
	ck_assert_int_eq(pread(fd, img, load_at + 4096 + 100, 0), (ssize_t)(load_at + 4096 + 100));
	close(fd);
	ck_assert_int_eq(sw_core_open(path, &c[0]), SW_OK);
	ck_assert_int_eq(sw_core_open_memory(img, load_at + 4096 + 100, 0, &c[1]), SW_OK);
	for (int i = 0; i < 2; i++) {
		const sw_memory *m = sw_core_memory(c[i]);

		ck_assert_uint_eq(sw_core_thread_count(c[i]), 1);
		/* The whole segment is the stack, as its headers say. */
		ck_assert_int_eq(sw_core_stack_bounds(c[i], LOAD_VADDR + 100, &lo, &hi), SW_OK);
		ck_assert_uint_eq(hi - lo, 16384);
		assert_reads(c[i], LOAD_VADDR, 0);
		ck_assert_int_eq(sw_memory_read(m, LOAD_VADDR + 4096 + 100 - 16, buf, 16), SW_OK);
		ck_assert_int_eq(sw_memory_read(m, LOAD_VADDR + 4096 + 100 - 8, buf, 16), SW_E_BADADDR);
		ck_assert_int_eq(sw_memory_read(m, LOAD_VADDR + 4096 + 100, buf, 1), SW_E_BADADDR);
		ck_assert_int_eq(sw_memory_read(m, LOAD_VADDR + 16384 - 4096, buf, 8), SW_E_BADADDR);
		sw_core_close(c[i]);
	}
	unlink(path);
	free(img);
}
END_TEST

/* Cut inside its notes, a core is refused: its threads are unknown. */
START_TEST(core_cut_in_notes_refused)
{
	char path[512];
	int fd = temp_core(path, sizeof path);
	sw_core *c = NULL;

	write_core(fd, 4096, 16384, NOTES_AT + 100, 0);
	close(fd);
	ck_assert_int_eq(sw_core_open(path, &c), SW_E_TRUNCATED);
	ck_assert_ptr_null(c);
	unlink(path);
}
END_TEST


/* ---- the dynamic linker of a core that names no file ------------------- */

#define LOADER_BASE 0x7f1000000000ull  /* AT_BASE in these cores */
#define EXE_BIAS    0x555555554000ull  /* the executable's bias, by AT_ENTRY */

/*
 * A copy of this test's own executable (a PIE whose PT_INTERP names the
 * host's dynamic linker) in `path`, its PT_INTERP program header patched
 * by `patch` (NULL: none), and its entry point in *entry.
 */
static void exe_copy(char *path, size_t size, void (*patch)(unsigned char *, Elf64_Phdr *),
                     uint64_t *entry)
{
	unsigned char *img = NULL;
	size_t len = 0, cap = 0;
	ssize_t got;
	int in = open("/proc/self/exe", O_RDONLY), out = temp_core(path, size);
	Elf64_Ehdr eh;

	ck_assert_int_ge(in, 0);
	do {
		if (len == cap) {
			cap = cap ? 2 * cap : 1 << 20;
			img = realloc(img, cap);
			ck_assert_ptr_nonnull(img);
		}
		got = read(in, img + len, cap - len);
		ck_assert_int_ge(got, 0);
		len += (size_t)got;
	} while (got > 0);
	close(in);
	ck_assert_uint_ge(len, sizeof eh);
	memcpy(&eh, img, sizeof eh);
	*entry = eh.e_entry;
	for (unsigned i = 0; patch && i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		ck_assert_uint_le(eh.e_phoff + (i + 1) * sizeof ph, len);
		memcpy(&ph, img + eh.e_phoff + i * sizeof ph, sizeof ph);
		if (ph.p_type != PT_INTERP)
			continue;
		patch(img, &ph);
		memcpy(img + eh.e_phoff + i * sizeof ph, &ph, sizeof ph);
	}
	pwrite_all(out, img, len, 0);
	close(out);
	free(img);
}

/* One PT_LOAD of a made-up core: `dumped` of its `size` bytes in the core, `bytes` first. */
struct load {
	uint64_t vaddr, size;
	const void *bytes;
	size_t dumped;
};

/*
 * An x86-64 core of one thread without NT_FILE: its auxiliary vector puts
 * the executable at EXE_BIAS (AT_ENTRY) and, unless `base` is 0, records
 * AT_BASE `base`; then the PT_LOADs `loads` (at most 8), each dumped as
 * its `bytes` (zeros where NULL).
 */
static struct core_buf core_with_loads(uint64_t entry, uint64_t base, const struct load *loads,
                                       unsigned nloads)
{
	struct core_buf b = { 0 }, auxv = { 0 };
	unsigned char prstatus[PRSTATUS_X64_SIZE] = { 0 };
	Elf64_Ehdr eh;
	Elf64_Phdr ph[9] = { { 0 } };
	uint64_t rsp = 0x7ffe0000, rip = EXE_BIAS + entry;
	static const unsigned char zeros[4096];

	ck_assert_uint_le(nloads, 8);
	memcpy(prstatus + PRSTATUS_X64_REGS + 16 * 8, &rip, 8);
	memcpy(prstatus + PRSTATUS_X64_REGS + 19 * 8, &rsp, 8);
	put_u64(&auxv, AT_ENTRY);
	put_u64(&auxv, EXE_BIAS + entry);
	if (base) {
		put_u64(&auxv, AT_BASE);
		put_u64(&auxv, base);
	}
	put_u64(&auxv, AT_NULL);
	put_u64(&auxv, 0);
	core_ehdr(&eh, nloads + 1);
	put(&b, &eh, sizeof eh);
	put(&b, ph, (nloads + 1) * sizeof ph[0]);
	ph[0].p_type = PT_NOTE;
	ph[0].p_offset = b.len;
	ph[0].p_align = 4;
	put_note(&b, NT_PRSTATUS, prstatus, sizeof prstatus);
	put_note(&b, NT_AUXV, auxv.p, (uint32_t)auxv.len);
	free(auxv.p);
	ph[0].p_filesz = b.len - ph[0].p_offset;
	for (unsigned i = 0; i < nloads; i++) {
		Elf64_Phdr *l = &ph[i + 1];

		l->p_type = PT_LOAD;
		l->p_flags = PF_R | PF_X;
		l->p_offset = b.len;
		l->p_vaddr = loads[i].vaddr;
		l->p_filesz = loads[i].dumped;
		l->p_memsz = loads[i].size;
		l->p_align = 4096;
		for (size_t n = 0; n < loads[i].dumped; n += sizeof zeros)
			put(&b, zeros, loads[i].dumped - n < sizeof zeros ? loads[i].dumped - n : sizeof zeros);
		if (loads[i].bytes)
			memcpy(b.p + l->p_offset, loads[i].bytes, loads[i].dumped);
	}
	memcpy(b.p + sizeof eh, ph, (nloads + 1) * sizeof ph[0]);
	return b;
}

/* core_with_loads with one PT_LOAD of 64 KiB at LOADER_BASE, its first `dumped` bytes `header`, then zeros. */
static struct core_buf core_with_base(uint64_t entry, uint64_t base, const void *header,
                                      size_t dumped)
{
	unsigned char bytes[4096] = { 0 };
	struct load l = { LOADER_BASE, 65536, bytes, dumped };

	ck_assert_uint_le(dumped, sizeof bytes);
	if (header)
		memcpy(bytes, header, dumped < 64 ? dumped : 64);
	return core_with_loads(entry, base, &l, 1);
}

/* sw_core_add_loader on a core from core_with_base, the executable `exe` added. */
static sw_status add_loader(const char *exe, uint64_t entry, uint64_t base, const void *header,
                            size_t dumped, const char *sysroot, unsigned *mods)
{
	struct core_buf b = core_with_base(entry, base, header, dumped);
	sw_core *c = NULL;
	sw_status st;

	ck_assert_int_eq(sw_core_open_memory(exact(&b), b.len, 0, &c), SW_OK);
	ck_assert_int_eq(sw_core_add_loader(c, sysroot), SW_E_NOTFOUND);       /* no executable */
	ck_assert_int_eq(sw_core_add_executable(c, exe), SW_OK);
	*mods = sw_core_module_count(c);
	st = sw_core_add_loader(c, sysroot);
	if (st == SW_OK) {
		unsigned char magic[4] = { 0 };
		sw_mapped_file f = { 0 };
		unsigned i;

		/* Its first mapping is at AT_BASE, named as PT_INTERP names it; its bytes are there. */
		for (i = 0; i < sw_core_module_count(c); i++)
			if (sw_core_module(c, i, &f) == SW_OK && f.start == base)
				break;
		ck_assert_uint_lt(i, sw_core_module_count(c));
		ck_assert_ptr_nonnull(strstr(f.path, "ld-linux"));
		ck_assert_int_eq(sw_memory_read(sw_core_memory(c), base, magic, 4), SW_OK);
		ck_assert_int_eq(memcmp(magic, ELFMAG, SELFMAG), 0);
		ck_assert_int_eq(sw_core_add_loader(c, sysroot), SW_E_EXISTS);
	} else {
		/* A refusal leaves the core as it was. */
		ck_assert_uint_eq(sw_core_module_count(c), *mods);
	}
	*mods = sw_core_module_count(c) - *mods;
	sw_core_close(c);
	free(b.p);
	return st;
}

static const char *host_loader(void)
{
	return access("/lib64/ld-linux-x86-64.so.2", R_OK) == 0 ? "/lib64/ld-linux-x86-64.so.2" : NULL;
}

/* AT_BASE where the core has a segment, not dumped (qemu omits code): the linker is added. */
START_TEST(loader_at_base)
{
	char exe[512];
	uint64_t entry;
	unsigned added;

	if (!host_loader())
		return;
	exe_copy(exe, sizeof exe, NULL, &entry);
	ck_assert_int_eq(add_loader(exe, entry, LOADER_BASE, NULL, 0, NULL, &added), SW_OK);
	ck_assert_uint_gt(added, 0);
	/* "" is no sysroot either. */
	ck_assert_int_eq(add_loader(exe, entry, LOADER_BASE, NULL, 0, "", &added), SW_OK);
	unlink(exe);
}
END_TEST

/*
 * Hostile AT_BASEs: none (a static program), one in no segment, one where
 * the core holds other bytes than the linker's ELF header; too long a path
 * under the sysroot (one without the file falls back to the path as named).
 */
START_TEST(loader_hostile_base)
{
	unsigned char other[64] = "\177ELF not the linker";
	char exe[512], longroot[8200];
	uint64_t entry;
	unsigned added;

	if (!host_loader())
		return;
	exe_copy(exe, sizeof exe, NULL, &entry);
	ck_assert_int_eq(add_loader(exe, entry, 0, NULL, 0, NULL, &added), SW_E_NOTFOUND);
	ck_assert_int_eq(add_loader(exe, entry, 0x1000, NULL, 0, NULL, &added), SW_E_BADADDR);
	ck_assert_int_eq(add_loader(exe, entry, LOADER_BASE + 65536, NULL, 0, NULL, &added),
	                 SW_E_BADADDR);
	ck_assert_int_eq(add_loader(exe, entry, LOADER_BASE, other, 4096, NULL, &added),
	                 SW_E_MISMATCH);
	/* Not under the sysroot: as named, where qemu-user falls back to as well. */
	ck_assert_int_eq(add_loader(exe, entry, LOADER_BASE, NULL, 0, "/nonexistent", &added), SW_OK);
	memset(longroot, '/', sizeof longroot - 1);
	longroot[sizeof longroot - 1] = '\0';
	ck_assert_int_eq(add_loader(exe, entry, LOADER_BASE, NULL, 0, longroot, &added), SW_E_LIMIT);
	ck_assert_uint_eq(added, 0);
	unlink(exe);
}
END_TEST

/* PT_INTERP patches: too long, not NUL-terminated, cut by the file's end, gone. */
static void interp_too_long(unsigned char *img, Elf64_Phdr *ph) { (void)img; ph->p_filesz = 5000; }
static void interp_no_nul(unsigned char *img, Elf64_Phdr *ph) { img[ph->p_offset + ph->p_filesz - 1] = 'x'; }
static void interp_past_end(unsigned char *img, Elf64_Phdr *ph) { (void)img; ph->p_offset = 1ull << 40; }
static void interp_gone(unsigned char *img, Elf64_Phdr *ph) { (void)img; ph->p_type = PT_NULL; }

START_TEST(loader_hostile_interp)
{
	static const struct {
		void (*patch)(unsigned char *, Elf64_Phdr *);
		sw_status want;
	} cases[] = {
		{ interp_too_long, SW_E_LIMIT }, { interp_no_nul, SW_E_BADMETA },
		{ interp_past_end, SW_E_BADMETA }, { interp_gone, SW_E_NOTFOUND },
	};
	char exe[512];
	uint64_t entry;
	unsigned added;

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		exe_copy(exe, sizeof exe, cases[i].patch, &entry);
		ck_assert_int_eq(add_loader(exe, entry, LOADER_BASE, NULL, 0, NULL, &added),
		                 cases[i].want);
		ck_assert_uint_eq(added, 0);
		unlink(exe);
	}
}
END_TEST

/* ---- the linker's list of libraries (sw_core_add_libraries) ------------ */

#define LIST_AT 0x7f2000000000ull       /* r_debug, the linker's list and its names */
#define LIB_AT  0x7f3000000000ull       /* where the list places libc */
#define LIST_SIZE (256u << 10)
#define NAMES_AT 0x30000u               /* the names' offset in the list's segment */

/* The list's segment as the linker would leave it: r_debug, then entries, then names. */
struct made_list {
	unsigned char *bytes;           /* LIST_SIZE of them, at LIST_AT */
	size_t names;                   /* where the next name goes */
};

/* Entry i of the list (struct link_map's head: addr, name, ld, next, prev). */
static void list_entry(struct made_list *l, unsigned i, uint64_t addr, const char *name, uint64_t ld,
                       int last)
{
	uint64_t at = 0x100 + i * 40u, f[5];

	ck_assert_uint_le(at + 40, NAMES_AT);
	ck_assert_uint_lt(l->names + strlen(name) + 1, LIST_SIZE);
	f[0] = addr;
	f[1] = LIST_AT + l->names;
	f[2] = ld;
	f[3] = last ? 0 : LIST_AT + at + 40;
	f[4] = i ? LIST_AT + at - 40 : 0;
	memcpy(l->bytes + at, f, sizeof f);
	memcpy(l->bytes + l->names, name, strlen(name) + 1);
	l->names += strlen(name) + 1;
}

static struct made_list list_new(void)
{
	struct made_list l = { calloc(1, LIST_SIZE), NAMES_AT };
	uint64_t r_map = LIST_AT + 0x100;

	ck_assert_ptr_nonnull(l.bytes);
	l.bytes[0] = 1;                         /* r_version */
	memcpy(l.bytes + 8, &r_map, 8);         /* r_map */
	return l;
}

/* The executable's dynamic section (unrelocated address, bytes) and its DT_DEBUG entry's index. */
static unsigned char *exe_dynamic(const char *exe, uint64_t *vaddr, size_t *size, size_t *debug)
{
	int fd = open(exe, O_RDONLY);
	unsigned char *dyn = NULL;
	Elf64_Ehdr eh;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, &eh, sizeof eh, 0), (ssize_t)sizeof eh);
	for (unsigned i = 0; i < eh.e_phnum && !dyn; i++) {
		Elf64_Phdr ph;

		ck_assert_int_eq(pread(fd, &ph, sizeof ph, (off_t)(eh.e_phoff + i * sizeof ph)),
		                 (ssize_t)sizeof ph);
		if (ph.p_type != PT_DYNAMIC)
			continue;
		*vaddr = ph.p_vaddr;
		*size = ph.p_filesz;
		dyn = malloc(ph.p_filesz);
		ck_assert_ptr_nonnull(dyn);
		ck_assert_int_eq(pread(fd, dyn, ph.p_filesz, (off_t)ph.p_offset), (ssize_t)ph.p_filesz);
	}
	close(fd);
	ck_assert_ptr_nonnull(dyn);
	for (*debug = 0; *debug < *size / 16; ++*debug) {
		uint64_t tag;

		memcpy(&tag, dyn + *debug * 16, 8);
		if (tag == DT_DEBUG)
			return dyn;
	}
	ck_abort_msg("the test's executable has no DT_DEBUG");
	return NULL;
}

struct skips {
	unsigned count;
	sw_status last;
	char path[256];
};

static void note_skip(void *arg, const char *path, sw_status why)
{
	struct skips *k = arg;

	k->count++;
	k->last = why;
	snprintf(k->path, sizeof k->path, "%s", path);
}

/*
 * sw_core_add_libraries on a core whose executable's DT_DEBUG holds
 * `r_debug`, with the list `l` at LIST_AT and an undumped 4 MiB segment at
 * LIB_AT; *added and the skips as it reports them; *libc_at: where a
 * mapping named libc.so.6 starts, or 0.
 */
static sw_status add_libraries(const char *exe, uint64_t entry, uint64_t r_debug,
                               const struct made_list *l, unsigned *added, struct skips *k,
                               uint64_t *libc_at)
{
	uint64_t dyn_at;
	size_t dyn_size, debug;
	unsigned char *dyn = exe_dynamic(exe, &dyn_at, &dyn_size, &debug);
	struct load loads[3];
	struct core_buf b;
	sw_core *c = NULL;
	unsigned before;
	sw_status st;

	memcpy(dyn + debug * 16 + 8, &r_debug, 8);
	loads[0] = (struct load){ EXE_BIAS + dyn_at, dyn_size, dyn, dyn_size };
	loads[1] = (struct load){ LIST_AT, LIST_SIZE, l->bytes, LIST_SIZE };
	loads[2] = (struct load){ LIB_AT, 4u << 20, NULL, 0 };
	b = core_with_loads(entry, 0, loads, 3);
	free(dyn);
	memset(k, 0, sizeof *k);
	ck_assert_int_eq(sw_core_open_memory(exact(&b), b.len, 0, &c), SW_OK);
	ck_assert_int_eq(sw_core_add_libraries(c, NULL, note_skip, k, added), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_core_add_executable(c, exe), SW_OK);
	before = sw_core_module_count(c);
	st = sw_core_add_libraries(c, NULL, note_skip, k, added);
	*libc_at = 0;
	for (unsigned i = 0; i < sw_core_module_count(c); i++) {
		sw_mapped_file f;

		ck_assert_int_eq(sw_core_module(c, i, &f), SW_OK);
		if (!*libc_at && strstr(f.path, "libc.so.6"))
			*libc_at = f.start;
	}
	if (*added == 0)
		ck_assert_uint_eq(sw_core_module_count(c), before);
	if (st == SW_OK) {
		unsigned again;
		struct skips k2 = { 0 };

		/* Again: what was added is mapped now and passed over; the missing one is still reported. */
		ck_assert_int_eq(sw_core_add_libraries(c, NULL, note_skip, &k2, &again), SW_OK);
		ck_assert_uint_eq(again, 0);
		ck_assert_uint_eq(k2.count, k->count);
	}
	sw_core_close(c);
	free(b.p);
	return st;
}

static const char *host_libc(void)
{
	return access("/lib/x86_64-linux-gnu/libc.so.6", R_OK) == 0 ? "/lib/x86_64-linux-gnu/libc.so.6"
	                                                            : NULL;
}

/* The list's first three entries, as glibc makes them: the executable (no name), libc, the vDSO. */
static void glibc_like_list(struct made_list *l, int vdso_last)
{
	list_entry(l, 0, EXE_BIAS, "", EXE_BIAS + 0x1000, 0);
	list_entry(l, 1, LIB_AT, host_libc(), LIB_AT + 0x1000, 0);
	list_entry(l, 2, 0x7ffff7fc1000, "linux-vdso.so.1", 0x7ffff7fc1300, vdso_last);
}

/*
 * The list as glibc leaves it: the executable (no name), libc, the vDSO
 * (no directory) and a library whose file is gone.  libc is added at its
 * l_addr, the missing one is reported, the others passed over.
 */
START_TEST(libraries_from_the_linkers_list)
{
	struct made_list l = list_new();
	struct skips k;
	char exe[512];
	uint64_t entry, libc_at;
	unsigned added;

	if (!host_libc())
		return;
	exe_copy(exe, sizeof exe, NULL, &entry);
	glibc_like_list(&l, 0);
	list_entry(&l, 3, 0x7f4000000000, "/nonexistent/libgone.so.1", 0x7f4000001000, 1);
	ck_assert_int_eq(add_libraries(exe, entry, LIST_AT, &l, &added, &k, &libc_at), SW_OK);
	ck_assert_uint_eq(added, 1);
	ck_assert_uint_eq(libc_at, LIB_AT);
	ck_assert_uint_eq(k.count, 1);
	ck_assert_int_eq(k.last, SW_E_INVAL);
	ck_assert_str_eq(k.path, "/nonexistent/libgone.so.1");
	free(l.bytes);
	unlink(exe);
}
END_TEST

/*
 * Hostile lists: no DT_DEBUG value (the linker had not run), an r_debug
 * the core does not hold, a list that loops back, a name with no end,
 * and more entries than any program has.
 */
START_TEST(libraries_hostile_list)
{
	struct made_list l = list_new();
	struct skips k;
	char exe[512], endless[5000];
	uint64_t entry, libc_at, back = LIST_AT + 0x100 + 40;
	unsigned added;

	if (!host_libc())
		return;
	exe_copy(exe, sizeof exe, NULL, &entry);
	glibc_like_list(&l, 1);
	ck_assert_int_eq(add_libraries(exe, entry, 0, &l, &added, &k, &libc_at), SW_E_NOTFOUND);
	ck_assert_int_eq(add_libraries(exe, entry, 0x1000, &l, &added, &k, &libc_at), SW_E_BADADDR);
	/* The vDSO's entry leads back to libc's: libc is added, then the loop refused. */
	memcpy(l.bytes + 0x100 + 2 * 40 + 24, &back, 8);
	ck_assert_int_eq(add_libraries(exe, entry, LIST_AT, &l, &added, &k, &libc_at), SW_E_BADMETA);
	ck_assert_uint_eq(added, 1);
	free(l.bytes);
	/* A name that runs on past 4096 bytes. */
	l = list_new();
	memset(endless, 'x', sizeof endless - 1);
	endless[0] = '/';
	endless[sizeof endless - 1] = '\0';
	list_entry(&l, 0, LIB_AT, endless, LIB_AT + 0x1000, 1);
	ck_assert_int_eq(add_libraries(exe, entry, LIST_AT, &l, &added, &k, &libc_at), SW_E_LIMIT);
	free(l.bytes);
	/* 4100 entries (the limit is 4096), each well linked. */
	l = list_new();
	for (unsigned i = 0; i < 4100; i++)
		list_entry(&l, i, 0, "", 0, i == 4099);
	ck_assert_int_eq(add_libraries(exe, entry, LIST_AT, &l, &added, &k, &libc_at), SW_E_LIMIT);
	ck_assert_uint_eq(added, 0);
	free(l.bytes);
	unlink(exe);
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
	tcase_add_test(tc, process_name_note);
	tcase_add_test(tc, note_count_limit);
	suite_add_tcase(s, tc);
	tc = tcase_create("files");
	tcase_add_test(tc, sparse_core_over_address_limit);
	tcase_add_test(tc, truncated_core_reads_what_it_holds);
	tcase_add_test(tc, core_cut_in_notes_refused);
	suite_add_tcase(s, tc);
	tc = tcase_create("loader");
	tcase_add_test(tc, loader_at_base);
	tcase_add_test(tc, loader_hostile_base);
	tcase_add_test(tc, loader_hostile_interp);
	tcase_add_test(tc, libraries_from_the_linkers_list);
	tcase_add_test(tc, libraries_hostile_list);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
