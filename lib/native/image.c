/*
 * image.c - SWU images: parse and validate, register in one call, write
 * from a module.
 *
 * Every field is read through bounds-checked helpers from the caller's
 * buffer, which is never kept: the sw_image copies the names its method
 * records point to, and its methods are registered as one code table
 * (codemap_table.h) with a copy of the distinct blobs (or, when they do
 * not fit a table, one by one, the code map copying each blob).
 * Registration validates the whole image first, so that a bad entry
 * registers nothing.
 */
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "arch.h"
#include "image_format.h"
#include "codemap_table.h"

struct sw_image {
	sw_arch arch;
	size_t n;
	sw_image_method *methods;
	char *names;
	struct swi_code_table_store table;      /* table.nfn == 0: registered one by one */
};

struct img {
	sw_arch arch;
	uint32_t count, blob_bytes, str_bytes;
	uint64_t base;
	const uint8_t *table, *blobs, *strs;
};

struct img_entry {
	uint32_t rva, size, blob_off, blob_size, name_off, flags;
};

static uint32_t u32(const uint8_t *p)
{
	return (uint32_t)swi_load_le(p, 4);
}

static sw_status parse_header(const void *image, size_t size, struct img *h)
{
	const uint8_t *p = image;
	uint64_t need;

	if (!p)
		return SW_E_INVAL;
	if (size < SWI_IMAGE_HEADER)
		return size >= 4 && memcmp(p, SWI_IMAGE_MAGIC, 4) == 0 ? SW_E_TRUNCATED : SW_E_BADMETA;
	if (memcmp(p, SWI_IMAGE_MAGIC, 4) != 0)
		return SW_E_BADMETA;
	if (p[4] != SWI_IMAGE_VERSION)
		return SW_E_UNSUPPORTED;
	h->arch = (sw_arch)p[5];
	if (!swi_arch_get(h->arch) || swi_load_le(p + 6, 2) != SWI_IMAGE_HEADER || u32(p + 8) != 0 ||
	    u32(p + 32) != SWI_IMAGE_ENTRY || u32(p + 36) != 0)
		return SW_E_BADMETA;
	h->count = u32(p + 12);
	h->base = swi_load_le(p + 16, 8);
	h->blob_bytes = u32(p + 24);
	h->str_bytes = u32(p + 28);
	if (h->count > SW_IMAGE_MAX_ENTRIES || h->blob_bytes > SW_IMAGE_MAX_BLOBS ||
	    h->str_bytes > SW_IMAGE_MAX_STRINGS)
		return SW_E_LIMIT;
	/* Each term is bounded above, so the sum cannot wrap in 64 bits. */
	need = SWI_IMAGE_HEADER + (uint64_t)h->count * SWI_IMAGE_ENTRY + h->blob_bytes + h->str_bytes;
	if (size < need)
		return SW_E_TRUNCATED;
	if (size > need)
		return SW_E_BADMETA;    /* trailing bytes */
	h->table = p + SWI_IMAGE_HEADER;
	h->blobs = h->table + (size_t)h->count * SWI_IMAGE_ENTRY;
	h->strs = h->blobs + h->blob_bytes;
	/* The string table ends with a NUL: every name in it is terminated. */
	if (h->str_bytes && h->strs[h->str_bytes - 1] != '\0')
		return SW_E_BADMETA;
	return SW_OK;
}

static void read_entry(const struct img *h, uint32_t i, struct img_entry *e)
{
	const uint8_t *p = h->table + (size_t)i * SWI_IMAGE_ENTRY;

	e->rva = u32(p);
	e->size = u32(p + 4);
	e->blob_off = u32(p + 8);
	e->blob_size = u32(p + 12);
	e->name_off = u32(p + 16);
	e->flags = u32(p + 20);
}

/* One entry on its own: range, flags, name, and its blob against the range. */
static sw_status check_entry(const struct img *h, const struct img_entry *e)
{
	sw_swu_header sh;
	sw_status st;

	if (e->size == 0 || e->size > SW_SWU_MAX_CODE_SIZE || (uint64_t)e->rva + e->size > 0x100000000ULL)
		return SW_E_BADMETA;
	if (e->flags & ~(uint32_t)SWI_IMAGE_ENTRY_FLAGS)
		return SW_E_BADMETA;
	if (e->name_off != SWI_IMAGE_NO_NAME && e->name_off >= h->str_bytes)
		return SW_E_BADMETA;
	if (e->blob_size == 0 || e->blob_off > h->blob_bytes || e->blob_size > h->blob_bytes - e->blob_off)
		return SW_E_BADMETA;
	if ((st = sw_swu_validate(h->blobs + e->blob_off, e->blob_size)) != SW_OK)
		return st == SW_E_TRUNCATED ? SW_E_BADMETA : st;
	if ((st = sw_swu_decode_header(h->blobs + e->blob_off, e->blob_size, &sh)) != SW_OK)
		return st;
	/* The blob describes exactly the entry's code, of the image's arch. */
	if (sh.arch != (uint32_t)h->arch || sh.code_size != e->size)
		return SW_E_BADMETA;
	return SW_OK;
}

static sw_status validate(const struct img *h)
{
	uint64_t end = 0;

	for (uint32_t i = 0; i < h->count; i++) {
		struct img_entry e;
		sw_status st;

		read_entry(h, i, &e);
		if ((st = check_entry(h, &e)) != SW_OK)
			return st;
		/* Ascending, never overlapping. */
		if (i > 0 && e.rva < end)
			return SW_E_BADMETA;
		end = (uint64_t)e.rva + e.size;
	}
	return SW_OK;
}

SW_API sw_status sw_image_validate(const void *image, size_t size)
{
	struct img h;
	sw_status st = parse_header(image, size, &h);

	return st != SW_OK ? st : validate(&h);
}

/* The sw_image of a validated image: method records and a copy of the names. */
static sw_status make_image(const struct img *h, uint64_t load_bias, uint32_t flags, sw_image **out)
{
	sw_image *img = calloc(1, sizeof *img);

	if (!img)
		return SW_E_NOMEM;
	img->arch = h->arch;
	img->n = h->count;
	if ((h->count && !(img->methods = calloc(h->count, sizeof *img->methods))) ||
	    (h->str_bytes && !(img->names = malloc(h->str_bytes)))) {
		sw_image_free(img);
		return SW_E_NOMEM;
	}
	if (h->str_bytes)
		memcpy(img->names, h->strs, h->str_bytes);
	for (uint32_t i = 0; i < h->count; i++) {
		sw_image_method *m = &img->methods[i];
		struct img_entry e;
		uint64_t start;

		read_entry(h, i, &e);
		start = h->base + e.rva;
		/* Neither the base nor the bias may wrap an address around. */
		if (start < h->base || start + load_bias < start || start + load_bias + e.size < start + load_bias) {
			sw_image_free(img);
			return SW_E_INVAL;
		}
		m->image = img;
		m->name = e.name_off == SWI_IMAGE_NO_NAME ? NULL : img->names + e.name_off;
		m->start = start + load_bias;
		m->size = e.size;
		m->flags = e.flags | flags;
		m->index = i;
	}
	*out = img;
	return SW_OK;
}

/* The image's methods as one code table, with its own copy of the distinct blobs. */
static sw_status make_table(sw_image *img, const struct img *h, uint32_t flags)
{
	struct swi_code_table_input *in;
	sw_status st;

	if (img->n == 0)
		return SW_OK;
	if (!(in = malloc(sizeof(*in) * img->n)))
		return SW_E_NOMEM;
	for (size_t i = 0; i < img->n; i++) {
		struct img_entry e;

		read_entry(h, (uint32_t)i, &e);
		in[i] = (struct swi_code_table_input){
			img->methods[i].start, img->methods[i].size, e.blob_off, e.blob_size, e.flags
		};
	}
	st = swi_code_table_build(&img->table, in, img->n, h->blobs, 1, img->methods,
	                          sizeof(*img->methods), flags);
	free(in);
	return st;
}

SW_API sw_status sw_codemap_add_image(sw_codemap *map, const void *image, size_t size,
                                      uint64_t load_bias, uint32_t flags, sw_image **out)
{
	struct img h;
	sw_image *img;
	sw_status st;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!map || !image || (flags & ~(uint32_t)SW_CODE_NATIVE))
		return SW_E_INVAL;
	if ((st = parse_header(image, size, &h)) != SW_OK || (st = validate(&h)) != SW_OK ||
	    (st = make_image(&h, load_bias, flags, &img)) != SW_OK)
		return st;
	if ((st = make_table(img, &h, flags)) != SW_OK) {
		sw_image_free(img);
		return st;
	}
	if (img->table.table.nfn) {
		if ((st = swi_codemap_add_table(map, &img->table.table)) != SW_OK) {
			sw_image_free(img);
			return st;
		}
		*out = img;
		return SW_OK;
	}
	for (size_t i = 0; i < img->n; i++) {
		struct img_entry e;
		sw_code_info info;

		read_entry(&h, (uint32_t)i, &e);
		info = (sw_code_info){
			.method = &img->methods[i],
			.start = img->methods[i].start,
			.size = img->methods[i].size,
			.unwind = h.blobs + e.blob_off,
			.unwind_size = e.blob_size,
			.flags = img->methods[i].flags,
			.parent = NULL
		};
		if ((st = sw_codemap_add(map, &info)) != SW_OK) {
			/* All or nothing. */
			while (i-- > 0)
				sw_codemap_remove(map, img->methods[i].start);
			sw_image_free(img);
			return st;
		}
	}
	*out = img;
	return SW_OK;
}

SW_API sw_status sw_codemap_remove_image(sw_codemap *map, sw_image *img)
{
	sw_status first = SW_OK;

	if (!map || !img)
		return SW_E_INVAL;
	if (img->table.table.nfn)
		return swi_codemap_remove_table(map, &img->table.table);
	for (size_t i = 0; i < img->n; i++) {
		sw_status st = sw_codemap_remove(map, img->methods[i].start);

		if (st != SW_OK && first == SW_OK)
			first = st;
	}
	return first;
}

SW_API sw_status sw_image_methods(const sw_image *img, const sw_image_method **methods,
                                  size_t *count)
{
	if (!img || !methods || !count)
		return SW_E_INVAL;
	*methods = img->methods;
	*count = img->n;
	return SW_OK;
}

SW_API sw_arch sw_image_arch(const sw_image *img)
{
	return img ? img->arch : SW_ARCH_NONE;
}

SW_API void sw_image_free(sw_image *img)
{
	if (!img)
		return;
	free(img->methods);
	free(img->names);
	swi_code_table_store_free(&img->table);
	free(img);
}

/* ---- Writing ---- */

static void put32(uint8_t *p, uint32_t v)
{
	swi_store_le(p, 4, v);
}

SW_API sw_status sw_module_write_image(const sw_module *m, void *buf, size_t cap, size_t *len)
{
	const sw_native_function *fns;
	uint64_t base, bias, blob_bytes = 0, str_bytes = 0, total;
	size_t n;
	sw_arch arch;
	uint8_t *p = buf, *table, *blobs;
	char *strs;
	sw_status st;

	if (!m || !len || (cap && !buf))
		return SW_E_INVAL;
	if ((st = sw_module_functions(m, &fns, &n)) != SW_OK)
		return st;
	swi_module_image_info(m, &arch, &base, &bias);
	if (n > SW_IMAGE_MAX_ENTRIES)
		return SW_E_LIMIT;
	for (size_t i = 0; i < n; i++) {
		uint64_t rva = fns[i].start - bias - base;

		if (fns[i].start - bias < base || rva + fns[i].size > 0x100000000ULL ||
		    fns[i].size > SW_SWU_MAX_CODE_SIZE)
			return SW_E_LIMIT;
		blob_bytes += fns[i].unwind_size;
		if (fns[i].name)
			str_bytes += strlen(fns[i].name) + 1;
	}
	if (blob_bytes > SW_IMAGE_MAX_BLOBS || str_bytes > SW_IMAGE_MAX_STRINGS)
		return SW_E_LIMIT;
	total = SWI_IMAGE_HEADER + (uint64_t)n * SWI_IMAGE_ENTRY + blob_bytes + str_bytes;
	*len = (size_t)total;
	if (cap < total)
		return SW_E_LIMIT;

	memset(p, 0, SWI_IMAGE_HEADER);
	memcpy(p, SWI_IMAGE_MAGIC, 4);
	p[4] = SWI_IMAGE_VERSION;
	p[5] = (uint8_t)arch;
	swi_store_le(p + 6, 2, SWI_IMAGE_HEADER);
	put32(p + 12, (uint32_t)n);
	swi_store_le(p + 16, 8, base);
	put32(p + 24, (uint32_t)blob_bytes);
	put32(p + 28, (uint32_t)str_bytes);
	put32(p + 32, SWI_IMAGE_ENTRY);
	table = p + SWI_IMAGE_HEADER;
	blobs = table + n * SWI_IMAGE_ENTRY;
	strs = (char *)blobs + blob_bytes;
	blob_bytes = str_bytes = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t *e = table + i * SWI_IMAGE_ENTRY;

		put32(e, (uint32_t)(fns[i].start - bias - base));
		put32(e + 4, (uint32_t)fns[i].size);
		put32(e + 8, (uint32_t)blob_bytes);
		put32(e + 12, fns[i].unwind_size);
		put32(e + 16, fns[i].name ? (uint32_t)str_bytes : SWI_IMAGE_NO_NAME);
		put32(e + 20, fns[i].flags & SWI_IMAGE_ENTRY_FLAGS);
		memcpy(blobs + blob_bytes, fns[i].unwind, fns[i].unwind_size);
		blob_bytes += fns[i].unwind_size;
		if (fns[i].name) {
			size_t l = strlen(fns[i].name) + 1;

			memcpy(strs + str_bytes, fns[i].name, l);
			str_bytes += l;
		}
	}
	return SW_OK;
}
