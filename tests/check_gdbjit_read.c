/*
 * check_gdbjit_read.c - a debugger's side of the GDB JIT interface
 * (sw_gdbjit_read): synthetic target memory holding a descriptor, its
 * entries and relocatable x86-64 objects laid out as LLVM registers them
 * (sh_addr patched, .eh_frame's FDE pointing at .text through an
 * unapplied R_X86_64_PC32), and the hostile variants: a cyclic list, a
 * list past the entry cap, huge and truncated objects, unreadable memory,
 * unknown relocations, random corruption.  Then the library's own
 * registrar read back from this process, as another process would be.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "gdbjit_object.h"

#define BASE 0x500000u                  /* where the synthetic target memory starts */
#define DESC BASE                       /* the descriptor */
#define ENTRY(i) (BASE + 0x100u + 32u * (i))
#define OBJ(i) (BASE + 0x1000u + 0x1000u * (i))
#define TEXT(i) (0x7f0000001000ull + 0x10000ull * (i))
#define EH(i) (0x7f0000000000ull + 0x10000ull * (i))

static unsigned char mem_bytes[0x10000];
static size_t obj_size;

static size_t build_object(unsigned char *o, uint64_t text, uint64_t eh, uint32_t rtype)
{
	return build_object_for(o, text, eh, rtype, 0);
}

/* A list of `n` entries, each with object i at TEXT(i); entry n-1's next is `last_next`. */
static void build_list(unsigned n, uint64_t last_next, uint32_t rtype)
{
	memset(mem_bytes, 0, sizeof mem_bytes);
	put(mem_bytes, DESC - BASE, 4, 1);
	put(mem_bytes, DESC - BASE + 16, 8, n ? ENTRY(0) : 0);
	for (unsigned i = 0; i < n; i++) {
		size_t e = ENTRY(i) - BASE;

		obj_size = build_object(mem_bytes + (OBJ(i) - BASE), TEXT(i), EH(i), rtype);
		put(mem_bytes, e, 8, i + 1 < n ? ENTRY(i + 1) : last_next);
		put(mem_bytes, e + 8, 8, i ? ENTRY(i - 1) : 0);
		put(mem_bytes, e + 16, 8, OBJ(i));
		put(mem_bytes, e + 24, 8, obj_size);
	}
}

static sw_status read_list(sw_gdbjit_list **l, const sw_gdbjit_object **o, size_t *n)
{
	sw_memory mem;
	sw_status st;

	ck_assert_int_eq(sw_memory_init_buffer(&mem, mem_bytes, sizeof mem_bytes, BASE), SW_OK);
	st = sw_gdbjit_read(&mem, SW_ARCH_X64, DESC, 0, l);
	*n = 0;
	if (*l)
		ck_assert_int_eq(sw_gdbjit_list_objects(*l, o, n), SW_OK);
	return st;
}

/* A list as build_list makes it must read with status `want` and give `count` objects. */
static void expect_list(unsigned entries, uint64_t last_next, sw_status want, size_t count)
{
	const sw_gdbjit_object *o;
	sw_gdbjit_list *l;
	size_t n;

	build_list(entries, last_next, 2);
	ck_assert_int_eq(read_list(&l, &o, &n), want);
	ck_assert_uint_eq(n, count);
	for (size_t i = 0; i < n; i++)
		ck_assert_ptr_nonnull(o[i].module);
	sw_gdbjit_list_free(l);
}

/* Object `o` loaded, "jit_fn" named at `text`, its one FDE relocated to start at `fde`. */
static void check_placed(const sw_gdbjit_object *o, uint64_t text, uint64_t fde)
{
	const sw_native_function *fns;
	const char *name;
	uint64_t off;
	size_t nfns;

	ck_assert_int_eq(o->status, SW_OK);
	ck_assert_ptr_nonnull(o->module);
	ck_assert_int_eq(sw_module_symbolize(o->module, text + 5, &name, &off), SW_OK);
	ck_assert_str_eq(name, "jit_fn");
	ck_assert_uint_eq(off, 5);
	ck_assert_int_eq(sw_module_functions(o->module, &fns, &nfns), SW_OK);
	ck_assert_uint_eq(nfns, 1);
	ck_assert_uint_eq(fns[0].start, fde);
	ck_assert_uint_eq(fns[0].size, FN_SIZE);
}

START_TEST(reads_relocatable_objects)
{
	const sw_gdbjit_object *o;
	sw_gdbjit_list *l;
	sw_codemap *map;
	sw_code_info ci;
	size_t n;

	build_list(3, 0, 2);
	ck_assert_int_eq(read_list(&l, &o, &n), SW_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	for (unsigned i = 0; i < 3; i++) {
		ck_assert_uint_eq(o[i].entry, ENTRY(i));
		ck_assert_uint_eq(o[i].symfile_addr, OBJ(i));
		ck_assert_uint_eq(o[i].symfile_size, obj_size);
		/* The symbol at its section's address, the FDE relocated onto the code. */
		check_placed(&o[i], TEXT(i), TEXT(i));
		ck_assert_int_eq(sw_module_register(o[i].module, map), SW_OK);
	}
	ck_assert_int_eq(sw_codemap_find(map, TEXT(1) + 3, &ci), SW_OK);
	ck_assert_uint_eq(ci.start, TEXT(1));
	ck_assert_int_eq(sw_codemap_find(map, EH(1), &ci), SW_E_NOTFOUND);
	for (unsigned i = 0; i < 3; i++)
		ck_assert_int_eq(sw_module_unregister(o[i].module, map), SW_OK);
	sw_codemap_synchronize(map);
	sw_gdbjit_list_free(l);
	sw_codemap_destroy(map);
}
END_TEST

/*
 * An i386 ET_REL (ELF32, SHT_REL: the addend is the field's content,
 * here 2) with "jit_fn" at `text`, its FDE relocated by R_386_PC32; its size.
 */
static size_t build_object_i386(unsigned char *o, uint32_t text, uint32_t eh)
{
	static const unsigned char cie[] = {
		0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x7c, 8, 1, 0x1b,
		0x0c, 4, 4, 0x88, 1, 0, 0                       /* def_cfa esp+4; eip at cfa-4 */
	};
	static const unsigned char fde[] = {
		0x10, 0, 0, 0, 28, 0, 0, 0, 2, 0, 0, 0, FN_SIZE, 0, 0, 0, 0,
		0x41, 0x0e, 8                                   /* advance 1; cfa = esp+8 */
	};
	static const char strtab[] = "\0jit_fn";
	static const char shstr[] = "\0.text\0.eh_frame\0.rel.eh_frame\0.symtab\0.strtab\0.shstrtab";
	static const uint32_t sec[7][6] = {     /* name, type, flags, addr, offset, size */
		{ 0 }, { 1, 1, 6, 0, 64, FN_SIZE }, { 7, 1, 2, 0, 80, 48 }, { 17, 9, 0x40, 0, 128, 8 },
		{ 31, 2, 0, 0, 136, 48 }, { 39, 3, 0, 0, 184, sizeof strtab },
		{ 47, 3, 0, 0, 192, sizeof shstr }
	};
	static const uint32_t link_info_entsize[7][3] = {
		{ 0 }, { 0 }, { 0 }, { 4, 2, 8 }, { 5, 2, 16 }, { 0 }, { 0 }
	};
	size_t shoff = 252;

	memset(o, 0, shoff + 7 * 40);
	memcpy(o, "\177ELF\1\1\1", 7);
	put(o, 16, 2, 1);                       /* ET_REL */
	put(o, 18, 2, 3);                       /* EM_386 */
	put(o, 20, 4, 1);
	put(o, 32, 4, shoff);
	put(o, 40, 2, 52);
	put(o, 46, 2, 40);
	put(o, 48, 2, 7);
	put(o, 50, 2, 6);
	memset(o + 64, 0x90, FN_SIZE);
	memcpy(o + 80, cie, sizeof cie);
	memcpy(o + 80 + sizeof cie, fde, sizeof fde);
	put(o, 128, 4, PC_BEGIN_AT);            /* .text's section symbol (1), R_386_PC32 */
	put(o, 132, 4, (1u << 8) | 2);
	put(o, 136 + 16 + 12, 1, 3);            /* STT_SECTION, local, .text */
	put(o, 136 + 16 + 14, 2, 1);
	put(o, 136 + 32, 4, 1);                 /* "jit_fn": FUNC, global, .text + 0 */
	put(o, 136 + 32 + 8, 4, FN_SIZE);
	put(o, 136 + 32 + 12, 1, 0x12);
	put(o, 136 + 32 + 14, 2, 1);
	memcpy(o + 184, strtab, sizeof strtab);
	memcpy(o + 192, shstr, sizeof shstr);
	for (unsigned i = 1; i < 7; i++) {
		size_t h = shoff + 40u * i;

		put(o, h, 4, sec[i][0]);
		put(o, h + 4, 4, sec[i][1]);
		put(o, h + 8, 4, sec[i][2]);
		put(o, h + 12, 4, i == 1 ? text : i == 2 ? eh : 0);
		put(o, h + 16, 4, sec[i][4]);
		put(o, h + 20, 4, sec[i][5]);
		put(o, h + 24, 4, link_info_entsize[i][0]);
		put(o, h + 28, 4, link_info_entsize[i][1]);
		put(o, h + 32, 4, 4);
		put(o, h + 36, 4, link_info_entsize[i][2]);
	}
	return shoff + 7 * 40;
}

/* An i386 target: 4-byte pointers, an ELF32 object with REL relocations. */
START_TEST(reads_i386_objects)
{
	const uint32_t text = 0x40001000, eh = 0x40000000;
	const sw_gdbjit_object *o;
	sw_gdbjit_list *l;
	sw_memory mem;
	size_t n, size;

	memset(mem_bytes, 0, sizeof mem_bytes);
	size = build_object_i386(mem_bytes + 0x1000, text, eh);
	put(mem_bytes, 0, 4, 1);
	put(mem_bytes, 12, 4, BASE + 0x100);
	put(mem_bytes, 0x108, 4, BASE + 0x1000);
	put(mem_bytes, 0x10c, 8, size);
	ck_assert_int_eq(sw_memory_init_buffer(&mem, mem_bytes, sizeof mem_bytes, BASE), SW_OK);
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_X86, BASE, 0, &l), SW_OK);
	ck_assert_int_eq(sw_gdbjit_list_objects(l, &o, &n), SW_OK);
	ck_assert_uint_eq(n, 1);
	/* S + A - P, A read from the field: the FDE starts 2 bytes into the code. */
	check_placed(&o[0], text, text + 2);
	sw_gdbjit_list_free(l);
}
END_TEST

/* AArch64's R_AARCH64_PREL32 (and a list read for an arch the object is not of). */
START_TEST(reads_arm64_objects)
{
	const sw_gdbjit_object *o;
	sw_gdbjit_list *l;
	sw_memory mem;
	size_t n;

	build_list(1, 0, 261);
	obj_size = build_object_for(mem_bytes + (OBJ(0) - BASE), TEXT(0), EH(0), 261, 1);
	ck_assert_int_eq(sw_memory_init_buffer(&mem, mem_bytes, sizeof mem_bytes, BASE), SW_OK);
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_ARM64, DESC, 0, &l), SW_OK);
	ck_assert_int_eq(sw_gdbjit_list_objects(l, &o, &n), SW_OK);
	ck_assert_uint_eq(n, 1);
	check_placed(&o[0], TEXT(0), TEXT(0));
	sw_gdbjit_list_free(l);
	/* The same object in an x86-64 target: not its architecture. */
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_X64, DESC, 0, &l), SW_OK);
	ck_assert_int_eq(sw_gdbjit_list_objects(l, &o, &n), SW_OK);
	ck_assert_int_eq(o[0].status, SW_E_UNSUPPORTED);
	ck_assert_ptr_null(o[0].module);
	sw_gdbjit_list_free(l);
}
END_TEST

START_TEST(bad_arguments_and_versions)
{
	const sw_gdbjit_object *o;
	sw_gdbjit_list *l = (sw_gdbjit_list *)1;
	sw_memory mem;
	size_t n;

	build_list(1, 0, 2);
	ck_assert_int_eq(sw_memory_init_buffer(&mem, mem_bytes, sizeof mem_bytes, BASE), SW_OK);
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_X64, DESC, 0, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_gdbjit_read(NULL, SW_ARCH_X64, DESC, 0, &l), SW_E_INVAL);
	ck_assert_ptr_null(l);
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_X64, 0, 0, &l), SW_E_INVAL);
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_NONE, DESC, 0, &l), SW_E_INVAL);
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_X64, DESC, 0x80000000u, &l), SW_OK);
	/* A bad module flag is each object's error, not the list's. */
	ck_assert_int_eq(sw_gdbjit_list_objects(l, &o, &n), SW_OK);
	ck_assert_uint_eq(n, 1);
	ck_assert_int_eq(o[0].status, SW_E_INVAL);
	sw_gdbjit_list_free(l);
	ck_assert_int_eq(sw_gdbjit_list_objects(NULL, &o, &n), SW_E_INVAL);
	sw_gdbjit_list_free(NULL);
	put(mem_bytes, 0, 4, 2);
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_X64, DESC, 0, &l), SW_E_UNSUPPORTED);
	ck_assert_ptr_null(l);
	/* The descriptor itself unreadable: an empty list cut short. */
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_X64, 0x1000, 0, &l), SW_E_BADADDR);
	ck_assert_ptr_nonnull(l);
	ck_assert_int_eq(sw_gdbjit_list_objects(l, &o, &n), SW_OK);
	ck_assert_uint_eq(n, 0);
	sw_gdbjit_list_free(l);
	expect_list(0, 0, SW_OK, 0);   /* no entries */
}
END_TEST

START_TEST(cyclic_lists_end)
{
	/* Back to the first entry (whose prev is 0 as a JIT leaves it), into the middle, onto itself. */
	expect_list(3, ENTRY(0), SW_E_BADMETA, 3);
	expect_list(3, ENTRY(1), SW_E_BADMETA, 3);
	expect_list(1, ENTRY(0), SW_E_BADMETA, 1);
	/* An entry out of the target's memory. */
	expect_list(2, 0x1000, SW_E_BADADDR, 2);
}
END_TEST

/* SW_GDBJIT_MAX_ENTRIES + 1 entries of empty objects: the cap ends the list. */
START_TEST(entry_cap)
{
	size_t count = SW_GDBJIT_MAX_ENTRIES + 1, size = 64 + 32 * count;
	unsigned char *big = calloc(1, size);
	const sw_gdbjit_object *o;
	sw_gdbjit_list *l;
	sw_memory mem;
	size_t n;

	ck_assert_ptr_nonnull(big);
	put(big, 0, 4, 1);
	put(big, 16, 8, BASE + 64);
	for (size_t i = 0; i < count; i++)
		put(big, 64 + 32 * i, 8, i + 1 < count ? BASE + 64 + 32 * (i + 1) : 0);
	ck_assert_int_eq(sw_memory_init_buffer(&mem, big, size, BASE), SW_OK);
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_X64, BASE, 0, &l), SW_E_LIMIT);
	ck_assert_int_eq(sw_gdbjit_list_objects(l, &o, &n), SW_OK);
	ck_assert_uint_eq(n, SW_GDBJIT_MAX_ENTRIES);
	ck_assert_int_eq(o[0].status, SW_E_BADMETA);      /* an empty object */
	ck_assert_ptr_null(o[0].module);
	sw_gdbjit_list_free(l);
	free(big);
}
END_TEST

START_TEST(hostile_objects)
{
	const sw_gdbjit_object *o;
	sw_gdbjit_list *l;
	size_t n;

	build_list(4, 0, 2);
	put(mem_bytes, ENTRY(0) - BASE + 24, 8, 1ull << 40);            /* huge */
	put(mem_bytes, ENTRY(1) - BASE + 24, 8, obj_size / 2);          /* truncated */
	put(mem_bytes, ENTRY(2) - BASE + 16, 8, 0x1000);                /* unreadable */
	put(mem_bytes, ENTRY(3) - BASE + 24, 8, SW_GDBJIT_MAX_OBJECT);  /* within the cap, past memory */
	ck_assert_int_eq(read_list(&l, &o, &n), SW_OK);
	ck_assert_uint_eq(n, 4);
	ck_assert_int_eq(o[0].status, SW_E_LIMIT);
	ck_assert_int_ne(o[1].status, SW_OK);
	ck_assert_int_eq(o[2].status, SW_E_BADADDR);
	ck_assert_int_eq(o[3].status, SW_E_BADADDR);
	for (unsigned i = 0; i < 4; i++)
		ck_assert_ptr_null(o[i].module);
	sw_gdbjit_list_free(l);
	/* A relocation type it does not know (R_X86_64_GOTPCREL): not loaded rather than misplaced. */
	build_list(1, 0, 9);
	ck_assert_int_eq(read_list(&l, &o, &n), SW_OK);
	ck_assert_int_eq(o[0].status, SW_E_UNSUPPORTED);
	sw_gdbjit_list_free(l);
}
END_TEST

/* Random corruption of the list and the objects: any status, no crash, bounded work. */
START_TEST(random_corruption)
{
	unsigned seed = 12345;

	for (unsigned iter = 0; iter < 3000; iter++) {
		const sw_gdbjit_object *o;
		sw_gdbjit_list *l;
		size_t n;

		build_list(2, 0, 2);
		for (unsigned k = 0; k < 1 + iter % 8; k++) {
			size_t at;

			seed = seed * 1103515245u + 12345u;
			at = iter % 3 == 0 ? (ENTRY(0) - BASE) + (seed >> 8) % 64 :
			                     (OBJ(iter % 2) - BASE) + (seed >> 8) % obj_size;
			mem_bytes[at] ^= (unsigned char)(1u << ((seed >> 4) % 8));
		}
		(void)read_list(&l, &o, &n);
		ck_assert_uint_le(n, SW_GDBJIT_MAX_ENTRIES);
		sw_gdbjit_list_free(l);
	}
}
END_TEST

/* The i386 layout: 4-byte pointers, symfile_size 4-aligned at offset 12. */
START_TEST(pointer_width_4)
{
	const sw_gdbjit_object *o;
	sw_gdbjit_list *l;
	sw_memory mem;
	size_t n;

	memset(mem_bytes, 0, sizeof mem_bytes);
	put(mem_bytes, 0, 4, 1);
	put(mem_bytes, 12, 4, BASE + 0x100);
	put(mem_bytes, 0x100, 4, BASE + 0x120);
	put(mem_bytes, 0x108, 4, BASE + 0x1000);
	put(mem_bytes, 0x10c, 8, 0x40);
	put(mem_bytes, 0x124, 4, BASE + 0x100);
	put(mem_bytes, 0x128, 4, BASE + 0x2000);
	put(mem_bytes, 0x12c, 8, 0x80);
	ck_assert_int_eq(sw_memory_init_buffer(&mem, mem_bytes, sizeof mem_bytes, BASE), SW_OK);
	ck_assert_int_eq(sw_gdbjit_read(&mem, SW_ARCH_X86, BASE, 0, &l), SW_OK);
	ck_assert_int_eq(sw_gdbjit_list_objects(l, &o, &n), SW_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_uint_eq(o[0].symfile_addr, BASE + 0x1000);
	ck_assert_uint_eq(o[0].symfile_size, 0x40);
	ck_assert_uint_eq(o[1].entry, BASE + 0x120);
	ck_assert_uint_eq(o[1].symfile_addr, BASE + 0x2000);
	ck_assert_uint_eq(o[1].symfile_size, 0x80);
	ck_assert_int_ne(o[0].status, SW_OK);     /* zeros: no ELF */
	sw_gdbjit_list_free(l);
}
END_TEST

#define LAYOUT_OBJECTS 14u             /* what mem_bytes holds */
#define LAYOUT_TEXT 0x7f0000100000ull   /* the objects' code falls in 512 bytes from here */
#define LAYOUT_WINDOW 512u

static unsigned layout_rand(unsigned *seed)
{
	*seed = *seed * 1103515245u + 12345u;
	return *seed >> 8;
}

/*
 * A list of LAYOUT_OBJECTS objects whose code lands at random in a small
 * window, so that they overlap: each has its "jit_fn" at a random place
 * and size (0 among them: its first byte), and most a second function,
 * also "jit_fn" (the section symbol made one), leaving a gap between
 * them that another object may fill.  Some objects repeat the one before
 * exactly (code registered twice).
 */
static void build_random_layout(unsigned *seed)
{
	uint64_t text = 0, v1 = 0, v2 = 0, s1 = 0, s2 = 0;

	build_list(LAYOUT_OBJECTS, 0, 2);
	for (unsigned i = 0; i < LAYOUT_OBJECTS; i++) {
		unsigned char *obj = mem_bytes + (OBJ(i) - BASE);
		size_t sym = 152;

		if (i == 0 || layout_rand(seed) % 6) {
			text = LAYOUT_TEXT + layout_rand(seed) % (LAYOUT_WINDOW - 128);
			v1 = layout_rand(seed) % 64;
			s1 = layout_rand(seed) % 5 ? layout_rand(seed) % 64 : 0;
			v2 = layout_rand(seed) % 4 ? v1 + s1 + layout_rand(seed) % 32 : UINT64_MAX;
			s2 = layout_rand(seed) % 48;
		}
		obj_size = build_object(obj, text, EH(i), 2);
		put(obj, sym + 48 + 8, 8, v1);
		put(obj, sym + 48 + 16, 8, s1);
		if (v2 != UINT64_MAX) {
			put(obj, sym + 24, 4, 1);               /* "jit_fn" */
			put(obj, sym + 24 + 4, 1, 0x02);        /* FUNC, local */
			put(obj, sym + 24 + 8, 8, v2);
			put(obj, sym + 24 + 16, 8, s2);
		}
	}
}

/* What sw_gdbjit_list_symbolize must equal: each object asked in list order. */
static sw_status symbolize_linear(const sw_gdbjit_object *o, size_t n, uint64_t address,
                                  const char **name, uint64_t *offset)
{
	for (size_t k = 0; k < n; k++)
		if (o[k].module && sw_module_symbolize(o[k].module, address, name, offset) == SW_OK)
			return SW_OK;
	return SW_E_NOTFOUND;
}

/*
 * The index against the linear search on random overlapping layouts, at
 * every address of the window: the same status, the same object's name
 * (names are owned by their modules, so the pointer says which object)
 * and the same offset.
 */
START_TEST(index_agrees_with_linear_search)
{
	unsigned seed = 2026, named = 0, overlapped = 0;

	for (unsigned iter = 0; iter < 300; iter++) {
		const sw_gdbjit_object *o;
		sw_gdbjit_list *l;
		size_t n;

		build_random_layout(&seed);
		ck_assert_int_eq(read_list(&l, &o, &n), SW_OK);
		ck_assert_uint_eq(n, LAYOUT_OBJECTS);
		for (size_t k = 0; k < n; k++)
			ck_assert_ptr_nonnull(o[k].module);
		for (uint64_t a = LAYOUT_TEXT - 4; a < LAYOUT_TEXT + LAYOUT_WINDOW + 4; a++) {
			const char *want = NULL, *got = NULL, *other;
			uint64_t want_off = 0, got_off = 0, other_off;
			sw_status ws = symbolize_linear(o, n, a, &want, &want_off);
			unsigned holders = 0;

			ck_assert_int_eq(sw_gdbjit_list_symbolize(l, a, &got, &got_off), ws);
			if (ws != SW_OK)
				continue;
			ck_assert_ptr_eq(got, want);
			ck_assert_uint_eq(got_off, want_off);
			named++;
			for (size_t k = 0; k < n; k++)
				holders += sw_module_symbolize(o[k].module, a, &other, &other_off) == SW_OK;
			overlapped += holders > 1;
		}
		sw_gdbjit_list_free(l);
	}
	/* The layouts did overlap: many addresses had several objects to choose from. */
	ck_assert_uint_gt(named, 10000);
	ck_assert_uint_gt(overlapped, 10000);
	/* No symbol: the offset is optional, the list and name are not. */
	{
		const sw_gdbjit_object *o;
		sw_gdbjit_list *l;
		const char *name;
		size_t n;

		build_list(2, 0, 2);
		ck_assert_int_eq(read_list(&l, &o, &n), SW_OK);
		ck_assert_int_eq(sw_gdbjit_list_symbolize(l, TEXT(1) + 3, &name, NULL), SW_OK);
		ck_assert_str_eq(name, "jit_fn");
		ck_assert_int_eq(sw_gdbjit_list_symbolize(l, TEXT(1) + FN_SIZE, &name, NULL), SW_E_NOTFOUND);
		ck_assert_int_eq(sw_gdbjit_list_symbolize(l, 0, &name, NULL), SW_E_NOTFOUND);
		ck_assert_int_eq(sw_gdbjit_list_symbolize(l, UINT64_MAX, &name, NULL), SW_E_NOTFOUND);
		ck_assert_int_eq(sw_gdbjit_list_symbolize(NULL, TEXT(1), &name, NULL), SW_E_INVAL);
		ck_assert_int_eq(sw_gdbjit_list_symbolize(l, TEXT(1), NULL, NULL), SW_E_INVAL);
		sw_gdbjit_list_free(l);
	}
}
END_TEST

/* The library's own registrar (sw_gdbjit) read back from this process, as a debugger reads it. */
START_TEST(reads_own_registrar)
{
	const uint64_t start = 0x10000000;
	unsigned char blob[256];
	size_t blob_len, n, found = 0;
	const sw_gdbjit_object *o;
	sw_swu_builder *b;
	sw_gdbjit_list *l;
	sw_gdbjit *g;
	sw_memory mem;
	sw_code_info info;

	ck_assert_int_eq(sw_swu_builder_create(&b, sw_arch_host()), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 0), SW_OK);
	ck_assert_int_eq(sw_swu_finish(b, 64, blob, sizeof blob, &blob_len), SW_OK);
	sw_swu_builder_destroy(b);
	info = (sw_code_info){ NULL, start, 64, blob, (uint32_t)blob_len, 0, NULL };
	ck_assert_int_eq(sw_gdbjit_create(&g, NULL, NULL), SW_OK);
	ck_assert_int_eq(sw_gdbjit_add(g, &info, "own_method"), SW_OK);
	ck_assert_int_eq(sw_memory_init_local(&mem, 0, 0, SW_MEMORY_PROBE), SW_OK);
	ck_assert_int_eq(sw_gdbjit_read(&mem, sw_arch_host(), (uint64_t)(uintptr_t)&__jit_debug_descriptor,
	                                0, &l), SW_OK);
	ck_assert_int_eq(sw_gdbjit_list_objects(l, &o, &n), SW_OK);
	for (size_t i = 0; i < n; i++) {
		const char *name;
		uint64_t off;

		if (o[i].module && sw_module_symbolize(o[i].module, start + 7, &name, &off) == SW_OK) {
			ck_assert_str_eq(name, "own_method");
			ck_assert_uint_eq(off, 7);
			found++;
		}
	}
	ck_assert_uint_eq(found, 1);
	sw_gdbjit_list_free(l);
	sw_gdbjit_destroy(g);
}
END_TEST

static Suite *gdbjit_read_suite(void)
{
	Suite *s = suite_create("gdbjit_read");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, 0);
	tcase_add_test(tc, reads_relocatable_objects);
	tcase_add_test(tc, reads_arm64_objects);
	tcase_add_test(tc, reads_i386_objects);
	tcase_add_test(tc, bad_arguments_and_versions);
	tcase_add_test(tc, cyclic_lists_end);
	tcase_add_test(tc, entry_cap);
	tcase_add_test(tc, hostile_objects);
	tcase_add_test(tc, random_corruption);
	tcase_add_test(tc, pointer_width_4);
	tcase_add_test(tc, reads_own_registrar);
	tcase_add_test(tc, index_agrees_with_linear_search);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(gdbjit_read_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
