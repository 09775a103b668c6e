/*
 * toyjit_dump.c - the toy JIT's methods as an SWU image and a code dump,
 * for swverify on another host.
 *
 *   toyjit-dump PREFIX      writes PREFIX.code and PREFIX.swui
 *
 * Cross-built (like tests/cross_toyjit.c) for the hosts whose back ends
 * cannot run where Capstone is: i386 natively (or under qemu-i386 where
 * the kernel cannot exec i386 programs), arm64 under qemu-user.  As
 * the JIT emits each method (toyjit_set_emit_hook), its bytes are appended
 * to the dump and its blob kept; the image (swu-image(5), base 0) then
 * lists every method at its offset in the dump, so that
 * `swverify -c PREFIX.code PREFIX.swui` verifies them on the build host.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toyjit.h"

#define MAX_DUMPED (TOYJIT_MAX_METHODS + 3)

static struct {
	FILE *code;
	uint32_t offset;                /* bytes written to the dump */
	unsigned n;
	sw_arch arch;
	struct {
		uint32_t rva, size;
		uint8_t *blob;
		uint32_t blob_size;
		char name[40];
	} m[MAX_DUMPED];
	int failed;
} d;

static __thread sw_frame *frame_head;

static void dump_method(const toyjit_method *m, const uint8_t *code, void *data)
{
	sw_swu_header h;

	(void)data;
	if (d.n >= MAX_DUMPED || sw_swu_decode_header(m->swu, m->swu_size, &h) != SW_OK ||
	    fwrite(code, 1, m->size, d.code) != m->size || !(d.m[d.n].blob = malloc(m->swu_size))) {
		d.failed = 1;
		return;
	}
	d.arch = (sw_arch)h.arch;
	d.m[d.n].rva = d.offset;
	d.m[d.n].size = m->size;
	memcpy(d.m[d.n].blob, m->swu, m->swu_size);
	d.m[d.n].blob_size = (uint32_t)m->swu_size;
	snprintf(d.m[d.n].name, sizeof d.m[d.n].name, "%s", m->name);
	d.offset += m->size;
	d.n++;
}

static void put(uint8_t *p, unsigned bytes, uint64_t v)
{
	for (unsigned i = 0; i < bytes; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* swu-image(5): header, table, blobs, strings. */
static int write_image(const char *path)
{
	uint32_t blob_bytes = 0, str_bytes = 0, bo = 0, so = 0;
	uint8_t head[40] = { 'S', 'W', 'U', 'I', 1 }, entry[24];
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f)
		return -1;
	for (unsigned i = 0; i < d.n; i++) {
		blob_bytes += d.m[i].blob_size;
		str_bytes += (uint32_t)strlen(d.m[i].name) + 1;
	}
	head[5] = (uint8_t)d.arch;
	put(head + 6, 2, 40);
	put(head + 12, 4, d.n);
	put(head + 24, 4, blob_bytes);
	put(head + 28, 4, str_bytes);
	put(head + 32, 4, 24);
	ok = fwrite(head, 1, sizeof head, f) == sizeof head;
	for (unsigned i = 0; i < d.n && ok; i++) {
		put(entry, 4, d.m[i].rva);
		put(entry + 4, 4, d.m[i].size);
		put(entry + 8, 4, bo);
		put(entry + 12, 4, d.m[i].blob_size);
		put(entry + 16, 4, so);
		put(entry + 20, 4, 0);
		bo += d.m[i].blob_size;
		so += (uint32_t)strlen(d.m[i].name) + 1;
		ok = fwrite(entry, 1, sizeof entry, f) == sizeof entry;
	}
	for (unsigned i = 0; i < d.n && ok; i++)
		ok = fwrite(d.m[i].blob, 1, d.m[i].blob_size, f) == d.m[i].blob_size;
	for (unsigned i = 0; i < d.n && ok; i++)
		ok = fwrite(d.m[i].name, 1, strlen(d.m[i].name) + 1, f) == strlen(d.m[i].name) + 1;
	ok = fclose(f) == 0 && ok;
	return ok ? 0 : -1;
}

static void no_helper(toyjit *jit, sw_transition_frame *tf)
{
	(void)jit;
	(void)tf;
}

int main(int argc, char **argv)
{
	toyjit_shape shapes[TOYJIT_NSHAPES];
	char path[4096];
	sw_codemap *map;
	toyjit *jit;
	sw_status st;

	if (argc != 2) {
		fprintf(stderr, "usage: toyjit-dump PREFIX\n");
		return 2;
	}
	snprintf(path, sizeof path, "%s.code", argv[1]);
	if (!(d.code = fopen(path, "wb"))) {
		perror(path);
		return 1;
	}
	for (unsigned k = 0; k < TOYJIT_NSHAPES; k++)
		shapes[k] = k;
	toyjit_set_emit_hook(dump_method, NULL);
	st = sw_codemap_create(&map);
	if (st == SW_OK)
		st = toyjit_create(&jit, map, &frame_head, shapes, TOYJIT_NSHAPES, no_helper, NULL);
	toyjit_set_emit_hook(NULL, NULL);
	if (fclose(d.code) != 0 || d.failed || st != SW_OK) {
		fprintf(stderr, "toyjit-dump: %s\n", st != SW_OK ? sw_strerror(st) : "cannot write the dump");
		return 1;
	}
	toyjit_destroy(jit);
	sw_codemap_destroy(map);
	snprintf(path, sizeof path, "%s.swui", argv[1]);
	if (write_image(path) != 0) {
		perror(path);
		return 1;
	}
	printf("toyjit-dump: %s: %u methods, %u bytes of code\n", sw_arch_name(d.arch), d.n, d.offset);
	for (unsigned i = 0; i < d.n; i++)
		free(d.m[i].blob);
	return 0;
}
