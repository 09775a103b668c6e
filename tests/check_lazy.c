/*
 * check_lazy.c - modules registered from their .eh_frame_hdr and imported
 * one function at a time (SW_MODULE_LAZY).
 *
 * The authority is the full load of the same file: every function it
 * describes is looked up in the lazy module at its first, middle and last
 * byte and must come back with the same range, flags, name and SWU bytes,
 * and what it leaves undescribed stays so; on the C libraries of all three
 * architectures when their files are there.  Then what a lookup that may
 * not import is told (SW_CODE_NOT_IMPORTED), a full arena, hostile
 * .eh_frame_hdr tables, written over a copy of libc, and a placeholder
 * (SW_MODULE_PLACEHOLDER) that reads nothing of the file but its headers
 * until it is loaded.
 */
#define _GNU_SOURCE 1   /* dl_iterate_phdr */
#include <check.h>
#include <fcntl.h>
#include <link.h>
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stackwalk.h>

/* Internal (lib/native/lazy_cfi.h): leave a lazy module's arena `bytes` for imports. */
void swi_module_limit_arena(sw_module *m, size_t bytes);

#define BIAS 0x7f0000000000ull

static char host_libc[4096];

static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so")) {
		snprintf(host_libc, sizeof host_libc, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

static const char *const cross_libcs[] = {
	"/usr/i686-linux-gnu/lib/libc.so.6",
	"/usr/aarch64-linux-gnu/lib/libc.so.6",
};

static void load_both(const char *path, unsigned lazy_flag, sw_module **full, sw_module **lazy,
                      sw_codemap **map)
{
	sw_module_import_stats s;

	ck_assert_int_eq(sw_module_load(path, BIAS, NULL, full), SW_OK);
	ck_assert_int_eq(sw_module_load_flags(path, BIAS, lazy_flag, NULL, lazy), SW_OK);
	ck_assert_int_eq(sw_module_stats(*lazy, &s), SW_OK);
	ck_assert_msg(s.lazy > 1000, "%s: %u functions registered lazily", path, s.lazy);
	ck_assert_uint_eq(s.lazy_imported, 0);
	ck_assert_int_eq(sw_codemap_create(map), SW_OK);
	ck_assert_int_eq(sw_module_register(*lazy, *map), SW_OK);
}

static void drop_both(sw_module *full, sw_module *lazy, sw_codemap *map)
{
	ck_assert_int_eq(sw_module_unregister(lazy, map), SW_OK);
	sw_codemap_synchronize(map);
	sw_codemap_destroy(map);
	sw_module_free(lazy);
	sw_module_free(full);
}

/* What the lazy map says at `at` is what the full load's function f says. */
static void same_function(const sw_codemap *map, const sw_native_function *f, uint64_t at)
{
	const sw_native_function *g;
	sw_code_info info;

	ck_assert_int_eq(sw_codemap_find(map, at, &info), SW_OK);
	ck_assert_msg(info.start == f->start && info.size == f->size,
	              "0x%llx: [0x%llx, +0x%llx) lazily, [0x%llx, +0x%llx) in full",
	              (unsigned long long)at, (unsigned long long)info.start,
	              (unsigned long long)info.size, (unsigned long long)f->start,
	              (unsigned long long)f->size);
	ck_assert_uint_eq(info.flags, SW_CODE_NATIVE | f->flags);
	ck_assert_uint_eq(info.unwind_size, f->unwind_size);
	ck_assert_msg(memcmp(info.unwind, f->unwind, f->unwind_size) == 0, "0x%llx (%s): other SWU",
	              (unsigned long long)f->start, f->name ? f->name : "?");
	g = info.method;
	ck_assert_ptr_nonnull(g);
	ck_assert_uint_eq(g->start, f->start);
	ck_assert_uint_eq(g->source, f->source);
	ck_assert(g->name == f->name || (g->name && f->name && strcmp(g->name, f->name) == 0));
}

/* The FDE whose import the full load skipped that holds `at`, or NULL. */
static const sw_module_skip *skipped_fde(const sw_module_skip *skips, size_t nskips, uint64_t at)
{
	for (size_t i = 0; i < nskips; i++)
		if (at >= skips[i].start && at - skips[i].start < skips[i].size)
			return &skips[i];
	return NULL;
}

/*
 * Every function of the full load, and the gaps between them, through the
 * lazy module.  The code of an FDE the import skips is analyzed by both;
 * the lazy module keeps one function per FDE, the one the analysis finds
 * at the FDE's start, and leaves the rest of it undescribed (the walk's
 * checked frame-pointer fallback takes it).
 */
static void compare_modules(const char *path, const sw_module *full, const sw_module *lazy,
                            const sw_codemap *map, uint32_t not_imported)
{
	const sw_native_function *fns;
	const sw_module_skip *skips;
	sw_module_import_stats full_s, lazy_s;
	sw_code_info info;
	size_t n, nskips, gaps = 0, analyzed_in_skips = 0;

	ck_assert_int_eq(sw_module_functions(full, &fns, &n), SW_OK);
	ck_assert_int_eq(sw_module_skips(full, &skips, &nskips), SW_OK);
	for (size_t i = 0; i < n; i++) {
		const sw_module_skip *k = skipped_fde(skips, nskips, fns[i].start);

		if (fns[i].source == SW_CFI_ANALYSIS && k && k->start != fns[i].start) {
			ck_assert_int_eq(sw_codemap_find(map, fns[i].start, &info), SW_E_NOTFOUND);
			analyzed_in_skips++;
			continue;
		}
		same_function(map, &fns[i], fns[i].start);
		same_function(map, &fns[i], fns[i].start + fns[i].size / 2);
		same_function(map, &fns[i], fns[i].start + fns[i].size - 1);
		if (i + 1 < n && fns[i].start + fns[i].size < fns[i + 1].start) {
			ck_assert_int_eq(sw_codemap_find(map, fns[i].start + fns[i].size, &info), SW_E_NOTFOUND);
			gaps++;
		}
	}
	/* Where the import skipped a function's CFI, only the analysis at its start describes it. */
	for (size_t i = 0; i < nskips; i++)
		if (sw_codemap_find(map, skips[i].where, &info) == SW_OK)
			ck_assert_uint_eq(info.start, skips[i].start);
	ck_assert_int_eq(sw_module_stats(full, &full_s), SW_OK);
	ck_assert_int_eq(sw_module_stats(lazy, &lazy_s), SW_OK);
	ck_assert_uint_eq(lazy_s.functions, full_s.functions);
	ck_assert_uint_eq(lazy_s.outermost, full_s.outermost);
	ck_assert_uint_eq(lazy_s.signal_trampolines, full_s.signal_trampolines);
	ck_assert_uint_eq(lazy_s.sigreturn_code, full_s.sigreturn_code);
	ck_assert_uint_eq(lazy_s.analyzed_entries + analyzed_in_skips, full_s.analyzed_entries);
	ck_assert_uint_eq(lazy_s.lazy_not_imported, not_imported);
	ck_assert_uint_gt(lazy_s.arena_bytes, 0);
	printf("%s: %zu functions and %zu gaps alike (%zu analyzed in skipped FDEs, past their start, only in full);"
	       " %u of %u imported, %llu arena bytes\n", path, n - analyzed_in_skips, gaps,
	       analyzed_in_skips, lazy_s.lazy_imported, lazy_s.lazy,
	       (unsigned long long)lazy_s.arena_bytes);
}

static void compare_with_full(const char *path)
{
	sw_module *full, *lazy;
	sw_codemap *map;

	load_both(path, SW_MODULE_LAZY, &full, &lazy, &map);
	compare_modules(path, full, lazy, map, 0);
	drop_both(full, lazy, map);
}

START_TEST(same_as_full_load)
{
	ck_assert_int_eq(dl_iterate_phdr(find_libc, NULL), 1);
	compare_with_full(host_libc);
	for (size_t i = 0; i < sizeof cross_libcs / sizeof cross_libcs[0]; i++) {
		if (access(cross_libcs[i], R_OK) != 0) {
			printf("%s: not installed, not compared\n", cross_libcs[i]);
			continue;
		}
		compare_with_full(cross_libcs[i]);
	}
}
END_TEST

/* A function in the middle of libc that has CFI. */
static const sw_native_function *some_function(const sw_module *full, size_t k)
{
	const sw_native_function *fns;
	size_t n;

	ck_assert_int_eq(sw_module_functions(full, &fns, &n), SW_OK);
	for (size_t i = n / 2 + k; i < n; i++)
		if (fns[i].source == SW_CFI_EH_FRAME && fns[i].flags == 0)
			return &fns[i];
	ck_abort_msg("no function with CFI");
	return NULL;
}

/* This process's libc, in full and lazily, and two functions with CFI past its middle. */
static void load_libc(unsigned lazy_flag, sw_module **full, sw_module **lazy, sw_codemap **map,
                      size_t k, size_t l, const sw_native_function **f, const sw_native_function **g)
{
	ck_assert_int_eq(dl_iterate_phdr(find_libc, NULL), 1);
	load_both(host_libc, lazy_flag, full, lazy, map);
	*f = some_function(*full, k);
	*g = some_function(*full, l);
}

static void not_imported(const sw_codemap *map, const sw_native_function *f)
{
	sw_code_info info;

	ck_assert_int_eq(sw_codemap_find(map, f->start + 1, &info), SW_OK);
	ck_assert_uint_eq(info.flags, SW_CODE_NATIVE | SW_CODE_NOT_IMPORTED);
	ck_assert_ptr_null(info.unwind);
	ck_assert_uint_eq(info.start, f->start);
	ck_assert_uint_eq(info.size, f->size);
}

/* A module whose walks may not import: lookups note, sw_module_import_noted imports. */
START_TEST(signal_safe_notes)
{
	const sw_native_function *f, *g;
	sw_module_import_stats s;
	sw_module *full, *lazy;
	sw_codemap *map;
	size_t n = 99;

	load_libc(SW_MODULE_LAZY_SIGNAL_SAFE, &full, &lazy, &map, 0, 50, &f, &g);
	not_imported(map, f);
	not_imported(map, f);
	ck_assert_int_eq(sw_module_stats(lazy, &s), SW_OK);
	ck_assert_uint_eq(s.lazy_not_imported, 2);
	ck_assert_uint_eq(s.lazy_imported, 0);
	ck_assert_uint_eq(s.functions, 0);

	ck_assert_int_eq(sw_module_import_noted(lazy, 0, &n), SW_OK);
	ck_assert_uint_eq(n, 1);
	same_function(map, f, f->start);
	/* One address, noted or not. */
	ck_assert_int_eq(sw_module_import_noted(lazy, g->start + 2, &n), SW_OK);
	ck_assert_uint_eq(n, 1);
	same_function(map, g, g->start);
	ck_assert_int_eq(sw_module_import_noted(lazy, 0, &n), SW_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(sw_module_import_noted(lazy, 8, &n), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_module_stats(lazy, &s), SW_OK);
	ck_assert_uint_eq(s.lazy_imported, 2);
	ck_assert_uint_eq(s.functions, 2);
	ck_assert_uint_eq(s.lazy_not_imported, 2);
	/* A full load has nothing to import. */
	ck_assert_int_eq(sw_module_import_noted(full, 0, &n), SW_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(sw_module_import_noted(NULL, 0, &n), SW_E_INVAL);
	drop_both(full, lazy, map);
}
END_TEST

/* A full arena: the walk is told "not imported", and so is the caller that would import. */
START_TEST(arena_full)
{
	const sw_native_function *f, *g;
	sw_module_import_stats s;
	sw_module *full, *lazy;
	sw_codemap *map;
	size_t n = 99;

	load_libc(SW_MODULE_LAZY, &full, &lazy, &map, 0, 10, &f, &g);
	same_function(map, f, f->start);        /* imported by the lookup */
	swi_module_limit_arena(lazy, 0);
	not_imported(map, g);
	same_function(map, f, f->start);        /* what was imported stays */
	ck_assert_int_eq(sw_module_import_noted(lazy, 0, &n), SW_E_LIMIT);
	ck_assert_uint_eq(n, 0);
	ck_assert_int_eq(sw_module_stats(lazy, &s), SW_OK);
	ck_assert_uint_eq(s.lazy_imported, 1);
	ck_assert_uint_eq(s.lazy_not_imported, 1);
	drop_both(full, lazy, map);
}
END_TEST

/* ---- Hostile tables ---- */

struct libc_copy {
	unsigned char *img;
	size_t len;
	size_t hdr, hdr_size;           /* .eh_frame_hdr's file offset and size */
};

static void read_libc(struct libc_copy *c)
{
	FILE *f;
	Elf *elf;
	size_t shstrndx;

	ck_assert_int_eq(dl_iterate_phdr(find_libc, NULL), 1);
	ck_assert_ptr_nonnull(f = fopen(host_libc, "rb"));
	fseek(f, 0, SEEK_END);
	c->len = (size_t)ftell(f);
	fseek(f, 0, SEEK_SET);
	ck_assert_ptr_nonnull(c->img = malloc(c->len));
	ck_assert_uint_eq(fread(c->img, 1, c->len, f), c->len);
	fclose(f);
	elf_version(EV_CURRENT);
	ck_assert_ptr_nonnull(elf = elf_memory((char *)c->img, c->len));
	ck_assert_int_eq(elf_getshdrstrndx(elf, &shstrndx), 0);
	c->hdr = 0;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;
		const char *name;

		if (gelf_getshdr(scn, &sh) && (name = elf_strptr(elf, shstrndx, sh.sh_name)) &&
		    strcmp(name, ".eh_frame_hdr") == 0) {
			c->hdr = sh.sh_offset;
			c->hdr_size = sh.sh_size;
		}
	}
	elf_end(elf);
	ck_assert_uint_gt(c->hdr, 0);
	/* What the cases below assume: GNU ld's encodings, a table of more than 20 entries. */
	ck_assert_uint_eq(c->img[c->hdr + 3], 0x3b);
	ck_assert_uint_gt(c->hdr_size, 12 + 8 * 20);
}

static uint32_t get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void put32(unsigned char *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (unsigned char)(v >> (8 * i));
}

/* Load the copy, changed, from a file as a lazy module; the status. */
static sw_status load_changed(const struct libc_copy *c, unsigned char *img, sw_module_import_stats *s)
{
	char path[] = "lazy-hostile-XXXXXX";
	int fd = mkstemp(path);
	sw_module *m = NULL;
	sw_status st;

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, img, c->len), (ssize_t)c->len);
	close(fd);
	st = sw_module_load_flags(path, BIAS, SW_MODULE_LAZY, NULL, &m);
	unlink(path);
	if (st == SW_OK) {
		sw_codemap *map;
		sw_code_info info;

		if (s)
			ck_assert_int_eq(sw_module_stats(m, s), SW_OK);
		/* Whatever it registered, lookups across its code stay in bounds. */
		ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
		if (sw_module_register(m, map) == SW_OK) {
			for (uint64_t a = 0; a < 0x200000; a += 0x1003)
				(void)sw_codemap_find(map, BIAS + a, &info);
			sw_module_unregister(m, map);
		}
		sw_codemap_synchronize(map);
		sw_codemap_destroy(map);
		sw_module_free(m);
	} else {
		ck_assert_ptr_null(m);
	}
	return st;
}

START_TEST(hostile_tables)
{
	struct libc_copy c;
	sw_module_import_stats s;
	unsigned char *img, *h, *t;
	uint32_t count;
	uint64_t seed = 12345;
	unsigned loaded = 0;

	read_libc(&c);
	ck_assert_ptr_nonnull(img = malloc(c.len));
	h = img + c.hdr;
	t = h + 12;
	count = get32(c.img + c.hdr + 8);

	memcpy(img, c.img, c.len);
	ck_assert_int_eq(load_changed(&c, img, &s), SW_OK);
	ck_assert_uint_gt(s.lazy, 1000);

	/* Another version. */
	memcpy(img, c.img, c.len);
	h[0] = 2;
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_BADMETA);
	/* A count the section cannot hold: truncated. */
	memcpy(img, c.img, c.len);
	put32(h + 8, count + 1 + (uint32_t)((c.hdr_size - 12) / 8 - count));
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_TRUNCATED);
	put32(h + 8, 0xffffffffu);
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_LIMIT);
	/* Unsorted: two entries swapped. */
	memcpy(img, c.img, c.len);
	memcpy(t + 8 * 10, c.img + c.hdr + 12 + 8 * 11, 8);
	memcpy(t + 8 * 11, c.img + c.hdr + 12 + 8 * 10, 8);
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_BADMETA);
	/* Two entries at one address. */
	memcpy(img, c.img, c.len);
	memcpy(t + 8 * 11, t + 8 * 10, 8);
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_BADMETA);
	/* An FDE pointer before .eh_frame, and far past it. */
	memcpy(img, c.img, c.len);
	put32(t + 8 * 5 + 4, (uint32_t)-(int32_t)0x1000000);
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_BADMETA);
	put32(t + 8 * 5 + 4, 0x7ffffff0u);
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_BADMETA);
	/* Another entry's FDE, and the middle of an FDE. */
	memcpy(img, c.img, c.len);
	put32(t + 8 * 5 + 4, get32(t + 8 * 6 + 4));
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_BADMETA);
	memcpy(img, c.img, c.len);
	put32(t + 8 * 5 + 4, get32(t + 8 * 5 + 4) + 4);
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_BADMETA);
	/* A table for another .eh_frame. */
	memcpy(img, c.img, c.len);
	put32(h + 4, get32(h + 4) + 16);
	ck_assert_int_eq(load_changed(&c, img, NULL), SW_E_BADMETA);
	/* An encoding the lazy path does not read: a full load instead. */
	memcpy(img, c.img, c.len);
	h[3] = 0x1b;
	ck_assert_int_eq(load_changed(&c, img, &s), SW_OK);
	ck_assert_uint_eq(s.lazy, 0);
	ck_assert_uint_gt(s.fdes, 1000);        /* (libdw's own lookups misread such a table) */

	/* Random bytes in the header and the table's first entries: an answer, never a crash. */
	for (int i = 0; i < 300; i++) {
		size_t span = 12 + 8 * 32;

		memcpy(img, c.img, c.len);
		for (int k = 0; k < 1 + i % 4; k++) {
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			h[(seed >> 33) % span] ^= (unsigned char)(1u << ((seed >> 29) & 7));
		}
		if (load_changed(&c, img, NULL) == SW_OK)
			loaded++;
	}
	printf("%u of 300 changed tables still load\n", loaded);
	free(img);
	free(c.img);
}
END_TEST

/* The copy written to a file of its own, for a module to keep open: its path. */
static void write_copy(const struct libc_copy *c, char *path)
{
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, c->img, c->len), (ssize_t)c->len);
	close(fd);
}

/* Write `byte` at `offset` of the file, as another program may change it after the load. */
static void poke(const char *path, uint64_t offset, unsigned char byte)
{
	int fd = open(path, O_WRONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, &byte, 1, (off_t)offset), 1);
	close(fd);
}

/*
 * A placeholder (SW_MODULE_PLACEHOLDER) of a copy of libc: a lookup
 * anywhere in its code is "not imported" and says so without symbols or
 * .eh_frame_hdr read (the copy's table, broken on disk after the load,
 * is what the later load finds); once sw_module_import_noted loads it,
 * every function and gap is as the full load of libc describes it.
 */
START_TEST(placeholder)
{
	const unsigned flags = SW_MODULE_PLACEHOLDER | SW_MODULE_LAZY_SIGNAL_SAFE;
	char path[] = "lazy-placeholder-XXXXXX";
	const sw_native_function *f, *named = NULL, *fns;
	const char *name, *full_name;
	struct libc_copy c;
	sw_module_import_stats s;
	sw_module *full, *ph;
	sw_codemap *map;
	sw_code_info info;
	size_t n = 99, nfns;

	ck_assert_int_eq(dl_iterate_phdr(find_libc, NULL), 1);
	ck_assert_int_eq(sw_module_load(host_libc, BIAS, NULL, &full), SW_OK);
	f = some_function(full, 0);
	read_libc(&c);
	write_copy(&c, path);

	/* The table read at the load would be good: broken after it, the import finds it broken. */
	ck_assert_int_eq(sw_module_load_flags(path, BIAS, flags, NULL, &ph), SW_OK);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_module_register(ph, map), SW_OK);
	ck_assert_int_eq(sw_codemap_find(map, f->start, &info), SW_OK);
	ck_assert_uint_eq(info.flags, SW_CODE_NATIVE | SW_CODE_NOT_IMPORTED);
	poke(path, c.hdr, 2);
	ck_assert_int_eq(sw_module_import_noted(ph, 0, &n), SW_E_BADMETA);
	ck_assert_uint_eq(n, 0);
	/* The load failed: no code there any more, and the same answer again. */
	ck_assert_int_eq(sw_codemap_find(map, f->start, &info), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_module_import_noted(ph, 0, &n), SW_E_BADMETA);
	ck_assert_int_eq(sw_module_unregister(ph, map), SW_OK);
	sw_codemap_synchronize(map);
	sw_module_free(ph);
	poke(path, c.hdr, 1);

	/* Nothing read but the headers: no symbols, no functions. */
	ck_assert_int_eq(sw_module_load_flags(path, BIAS, flags, NULL, &ph), SW_OK);
	ck_assert_int_eq(sw_module_stats(ph, &s), SW_OK);
	ck_assert_uint_eq(s.symbols, 0);
	ck_assert_uint_eq(s.fdes, 0);
	ck_assert_uint_eq(s.lazy, 0);
	ck_assert_int_eq(sw_module_symbolize(ph, f->start, &name, NULL), SW_E_NOTIMPORTED);
	ck_assert_int_eq(sw_module_register(ph, map), SW_OK);
	/* Anywhere in its code: not imported, the whole code's range, no rules. */
	ck_assert_int_eq(sw_codemap_find(map, f->start + 1, &info), SW_OK);
	ck_assert_uint_eq(info.flags, SW_CODE_NATIVE | SW_CODE_NOT_IMPORTED);
	ck_assert_ptr_null(info.unwind);
	ck_assert_uint_le(info.start, f->start);
	ck_assert_uint_ge(info.start + info.size, f->start + f->size);
	ck_assert_int_eq(sw_module_stats(ph, &s), SW_OK);
	ck_assert_uint_eq(s.lazy_not_imported, 1);
	ck_assert_uint_eq(s.lazy, 0);
	/* Loaded, and the function the lookup landed in imported: two. */
	ck_assert_int_eq(sw_module_import_noted(ph, 0, &n), SW_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_int_eq(sw_module_stats(ph, &s), SW_OK);
	ck_assert_uint_eq(s.lazy_imported, 1);
	ck_assert_uint_gt(s.symbols, 1000);
	same_function(map, f, f->start);
	/* Its symbols are read now: a named function's name is the full load's. */
	for (size_t k = 0; !named; k++)
		if (some_function(full, k)->name)
			named = some_function(full, k);
	ck_assert_int_eq(sw_module_symbolize(full, named->start + 1, &full_name, NULL), SW_OK);
	ck_assert_int_eq(sw_module_symbolize(ph, named->start + 1, &name, NULL), SW_OK);
	ck_assert_str_eq(name, full_name);
	/* Loaded once: nothing more to do. */
	ck_assert_int_eq(sw_module_import_noted(ph, 0, &n), SW_OK);
	ck_assert_uint_eq(n, 0);
	/* Signal-safe: walks do not import, so every function is asked for first. */
	ck_assert_int_eq(sw_module_functions(full, &fns, &nfns), SW_OK);
	for (size_t i = 0; i < nfns; i++)
		(void)sw_module_import_noted(ph, fns[i].start, NULL);
	compare_modules(path, full, ph, map, 1);
	unlink(path);
	drop_both(full, ph, map);
	free(c.img);

	/* Loaded for an address asked for, no walk having landed there. */
	ck_assert_int_eq(sw_module_load_flags(host_libc, BIAS, flags, NULL, &ph), SW_OK);
	ck_assert_int_eq(sw_module_import_noted(ph, 8, &n), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_module_stats(ph, &s), SW_OK);
	ck_assert_uint_gt(s.lazy, 1000);
	sw_module_free(ph);
}
END_TEST

/* Flags: an unknown bit is an error; an image is loaded in full, lazy or not. */
START_TEST(flags_and_images)
{
	struct libc_copy c;
	sw_module_import_stats s;
	sw_module *m = NULL;

	ck_assert_int_eq(dl_iterate_phdr(find_libc, NULL), 1);
	ck_assert_int_eq(sw_module_load_flags(host_libc, 0, 16, NULL, &m), SW_E_INVAL);
	ck_assert_ptr_null(m);
	read_libc(&c);
	ck_assert_int_eq(sw_module_load_image_flags(c.img, c.len, 0, SW_MODULE_LAZY, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &s), SW_OK);
	ck_assert_uint_eq(s.lazy, 0);
	ck_assert_uint_gt(s.functions, 1000);
	sw_module_free(m);
	/* With SW_MODULE_ANALYZE, in full. */
	ck_assert_int_eq(sw_module_load_flags(host_libc, 0, SW_MODULE_LAZY | SW_MODULE_ANALYZE, NULL, &m),
	                 SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &s), SW_OK);
	ck_assert_uint_eq(s.lazy, 0);
	sw_module_free(m);
	free(c.img);
	ck_assert_str_eq(sw_strerror(SW_E_NOTIMPORTED), "unwind rules not imported yet");
}
END_TEST

static Suite *lazy_suite(void)
{
	Suite *s = suite_create("lazy");
	TCase *tc = tcase_create("lazy");

	tcase_set_timeout(tc, 0);
	tcase_add_test(tc, same_as_full_load);
	tcase_add_test(tc, signal_safe_notes);
	tcase_add_test(tc, arena_full);
	tcase_add_test(tc, hostile_tables);
	tcase_add_test(tc, flags_and_images);
	tcase_add_test(tc, placeholder);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(lazy_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
