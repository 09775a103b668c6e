/*
 * fuzz_gdbjit_read.c - the reader of another process's GDB JIT list
 * (sw_gdbjit_read) over target memory the input makes up.
 *
 * The input lays out a descriptor and up to four entries, each with an
 * LLVM-style relocatable object (tests/gdbjit_object.h: x86-64 or AArch64,
 * a relocation type from the input) or a size and address of its choosing,
 * links them in an order it picks (cycles included), then flips bytes
 * anywhere in the memory, and reads it as one of the three architectures.
 * The read must give a list or an error, never crash, hang or read outside
 * the buffer; every module it loaded then goes into a code map and out.
 */
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "fuzz.h"
#include "../gdbjit_object.h"

#define BASE      0x00300000u           /* valid for every pointer width */
#define IMAGE     0x4000u
#define MAX_E     4u
#define OBJ_AT(i) (0x400u + 0x800u * (i))
#define MAX_FLIPS 64u

static const uint32_t rtypes[] = { 2, 24, 1, 10, 261, 260, 257, 9 };

/* The list the input describes: entries at 0x40 + 32 * i, objects at OBJ_AT(i). */
static void lay_out(struct fz *f, uint8_t *img)
{
	unsigned n = fz_u8(f) % (MAX_E + 1);

	memset(img, 0, IMAGE);
	put(img, 0, 4, fz_u8(f) < 250 ? 1 : fz_u8(f));
	put(img, 16, 8, n ? BASE + 0x40 : 0);
	for (unsigned i = 0; i < n; i++) {
		size_t e = 0x40 + 32u * i, size;
		uint8_t next = fz_u8(f), rtype = fz_u8(f), arm64 = fz_u8(f) & 1;
		uint64_t text = 0x7f0000001000ull + 0x10000ull * i;

		size = build_object_for(img + OBJ_AT(i), text, text - 0x1000, rtypes[rtype % 8], arm64);
		/* Mostly the next entry; sometimes back to one before (a cycle), or anywhere. */
		put(img, e, 8, i + 1 == n ? (next < 200 ? 0 : BASE + 0x40 + 32u * (next % MAX_E)) :
		               next < 200 ? BASE + 0x40 + 32u * (i + 1) : fz_u32(f));
		put(img, e + 8, 8, i ? BASE + 0x40 + 32u * (i - 1) : 0);
		put(img, e + 16, 8, fz_u8(f) < 230 ? BASE + OBJ_AT(i) : fz_u64(f));
		put(img, e + 24, 8, fz_u8(f) < 230 ? size : fz_u64(f));
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t img[IMAGE];
	static sw_codemap *map;
	const sw_gdbjit_object *o;
	sw_gdbjit_list *l = NULL;
	unsigned flips;
	sw_memory mem;
	size_t n = 0;
	struct fz f;
	sw_arch arch;

	if (!map && sw_codemap_create(&map) != SW_OK)
		abort();
	fz_init(&f, data, size);
	arch = (sw_arch)fz_arch(&f);
	lay_out(&f, img);
	flips = fz_u8(&f) % (MAX_FLIPS + 1);
	for (unsigned i = 0; i < flips; i++) {
		uint16_t at = fz_u16(&f);

		img[at % IMAGE] ^= fz_u8(&f);
	}
	if (sw_memory_init_buffer(&mem, img, IMAGE, BASE) != SW_OK)
		abort();
	(void)sw_gdbjit_read(&mem, arch, BASE, 0, &l);
	if (l && (sw_gdbjit_list_objects(l, &o, &n) != SW_OK || n > SW_GDBJIT_MAX_ENTRIES))
		abort();
	for (size_t i = 0; i < n; i++) {
		sw_code_info ci;

		if (!o[i].module)
			continue;
		if (sw_module_register(o[i].module, map) == SW_OK) {
			(void)sw_codemap_find(map, 0x7f0000001000ull + 0x10000ull * i, &ci);
			sw_module_unregister(o[i].module, map);
		}
	}
	sw_codemap_synchronize(map);
	sw_gdbjit_list_free(l);
	return 0;
}
