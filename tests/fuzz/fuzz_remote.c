/*
 * fuzz_remote.c - the reader of a published code map (sw_remote_read)
 * over target memory the input makes up.
 *
 * The input lays out a published map as stackwalk-remote(5) says (its
 * methods, blobs, names and threads, their number and placement), then
 * flips bytes anywhere in it, and may make the generation move on every
 * read, as a publisher faster than the reader would.  The read must give
 * a snapshot or an error, never crash, hang or read outside the buffer,
 * and make no more reads than the layout allows per try; what it read
 * then goes into a code map and out again.
 */
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "fuzz.h"
#include "remote_target.h"

#define BASE       0x00300000u          /* valid for every pointer width */
#define IMAGE      4096u
#define SNAP       64u
#define MAX_M      8u
#define MAX_T      3u
#define BLOBS      2048u
#define NAMES      3072u
#define MAX_FLIPS  64u
static uint8_t blobs[4][256];
static size_t blob_len[4];

static const uint8_t *blob_for(sw_arch arch)
{
	sw_swu_builder *b;

	if (blob_len[arch])
		return blobs[arch];
	if (sw_swu_builder_create(&b, arch) != SW_OK || sw_swu_end_prolog(b, 0) != SW_OK ||
	    sw_swu_finish(b, 64, blobs[arch], sizeof blobs[arch], &blob_len[arch]) != SW_OK)
		abort();        /* a fixed, known-good blob: the builder is broken */
	sw_swu_builder_destroy(b);
	return blobs[arch];
}

/* The published map the input describes. */
static void lay_out(struct fz *f, uint8_t *img, sw_arch arch)
{
	unsigned nm = fz_u8(f) % (MAX_M + 1), nt = fz_u8(f) % (MAX_T + 1);
	size_t rec = SNAP + 16;
	uint64_t start = 0x400000;

	memset(img, 0, IMAGE);
	remote_put(img, 0, SW_REMOTE_MAGIC, 4);
	remote_put(img, 4, SW_REMOTE_VERSION, 4);
	remote_put(img, 8, fz_u8(f), 4);
	remote_put(img, 12, 48, 4);
	remote_put(img, 16, BASE + SNAP, 8);
	remote_put(img, 24, arch, 4);
	remote_put(img, SNAP, nm, 4);
	remote_put(img, SNAP + 4, nt, 4);
	remote_put(img, SNAP + 8, 56, 4);
	remote_put(img, SNAP + 12, 32, 4);
	memcpy(img + BLOBS, blob_for(arch), blob_len[arch]);
	for (unsigned i = 0; i < nm; i++, rec += 56) {
		start += fz_u16(f);
		remote_put(img, rec, start, 8);
		remote_put(img, rec + 8, 1 + fz_u8(f), 8);
		remote_put(img, rec + 16, fz_u32(f), 8);
		remote_put(img, rec + 32, BASE + BLOBS, 8);
		remote_put(img, rec + 40, blob_len[arch], 4);
		remote_put(img, rec + 44, fz_u8(f) & 3, 4);
		/* A name, none, or one that runs to the image's end without a NUL. */
		switch (fz_u8(f) % 3) {
		case 0: remote_put(img, rec + 48, BASE + NAMES + i * 16, 8); break;
		case 1: break;
		default: remote_put(img, rec + 48, BASE + IMAGE - 8, 8); break;
		}
		memcpy(img + NAMES + i * 16, "method", 7);
	}
	memset(img + IMAGE - 8, 'x', 8);
	for (unsigned i = 0; i < nt; i++, rec += 32) {
		remote_put(img, rec, fz_u16(f), 8);
		remote_put(img, rec + 8, fz_u32(f), 8);
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t img[IMAGE];
	static sw_codemap *map;
	struct remote_target c;
	struct fz f;
	sw_memory mem;
	sw_remote *r = NULL;
	sw_arch arch;
	sw_status st;

	fz_init(&f, data, size);
	if (!map && sw_codemap_create(&map) != SW_OK)
		abort();
	arch = (sw_arch)fz_arch(&f);
	if (remote_target_init(&c, &mem, img, IMAGE, BASE) != SW_OK)
		abort();
	c.restless = fz_u8(&f) == 0xff;
	lay_out(&f, img, arch);
	for (unsigned k = 0; k < MAX_FLIPS && f.n >= 3; k++) {
		uint16_t at = fz_u16(&f);

		img[at % IMAGE] ^= fz_u8(&f);
	}
	st = sw_remote_read(&mem, arch, BASE, &r);
	if (c.reads > REMOTE_READ_BOUND(IMAGE) || (st == SW_OK) != (r != NULL))
		abort();
	if (st != SW_OK)
		return 0;
	for (size_t i = 1; i < sw_remote_method_count(r); i++) {
		sw_remote_method a, b;

		if (sw_remote_method_at(r, i - 1, &a) != SW_OK || sw_remote_method_at(r, i, &b) != SW_OK ||
		    b.start < a.start + a.size || (a.name && strlen(a.name) >= SW_REMOTE_MAX_NAME))
			abort();
	}
	if (sw_remote_register(r, map) == SW_OK && sw_remote_unregister(r, map) != SW_OK)
		abort();
	if (sw_codemap_count(map) != 0)
		abort();
	sw_codemap_synchronize(map);
	sw_remote_free(r);
	return 0;
}
