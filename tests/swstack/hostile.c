/*
 * hostile.c - truncated and corrupted copies of a real core file and of
 * its program, fed to what swstack does with them: the library's core
 * reader and walker (sw_core_open_memory, every thread walked with the
 * program's and the vDSO's CFI in the code map, native frames and the frame-pointer
 * fallback), the module loader (sw_module_load_image), and swstack's own
 * ELF reading (examples/swstack_elf.c: the core's auxiliary vector, a
 * file's load bias, an in-memory image's extent).  Run by
 * tests/swstack-hostile.test on cores of tests/swstack/prog.c for
 * x86-64, i686 and aarch64 (qemu-user's).
 *
 *   hostile CORE EXE
 *       The core is cut at every length through its headers and notes
 *       (where every structure the reader parses lies) and at about a
 *       thousand lengths beyond, and corrupted (random bytes, mostly in
 *       the headers and notes, sometimes in the stacks) a few thousand
 *       times; the program is cut at every length through its headers and
 *       at a few hundred beyond, and corrupted a hundred times.  Every
 *       result must be an SW_E_* error or a core, module or walk that
 *       behaves (no crash, no hang: walks are bounded by the library).
 *       The intact core must open and give frames, and most cuts must be
 *       refused, or the test proves nothing.  Prints counts; exit 0 or 1.
 *
 *   hostile --mutate FILE OUT SEED
 *       Write one corrupted or truncated copy of FILE (a core, a program,
 *       an SWU image) to OUT, chosen by SEED, for the test to run the
 *       swstack tool itself on: mostly in its headers and notes (the first
 *       4 KiB of a file that is not ELF).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "swstack_elf.h"          /* examples/: what swstack reads itself */
#include "../rounds.h"             /* a tenth of the rounds in the sanitized run */

#define AT_SYSINFO_EHDR 33
#define CORE_CORRUPTIONS 3000
/* Fewer: each load imports the whole program's CFI (check_cfi corrupts ELF files more). */
#define EXE_CORRUPTIONS 100
#define PT_NOTE 4

static unsigned long long rng = 0x2545f4914f6cdd1dULL;

static unsigned long long next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static unsigned char *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	unsigned char *buf = NULL;
	long size;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (size = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0 &&
	    (buf = malloc((size_t)size)) != NULL && fread(buf, 1, (size_t)size, f) != (size_t)size) {
		free(buf);
		buf = NULL;
	}
	*len = buf ? (size_t)size : 0;
	fclose(f);
	return buf;
}

static uint64_t get(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = (v << 8) | p[n];
	return v;
}

/*
 * The bytes every structure the core reader parses lies in: the ELF and
 * program headers, and the notes (which gdb's gcore puts at the end).
 */
struct hot {
	size_t hdr_end;                 /* [0, hdr_end): the headers */
	size_t note_off, note_end;      /* the (first) PT_NOTE segment */
};

/* 0, or -1 if it is no little-endian ELF file with notes. */
static int find_hot(const unsigned char *img, size_t len, struct hot *h)
{
	int is64;
	uint64_t phoff, end;
	unsigned phentsize, phnum;

	if (len < 64 || memcmp(img, "\177ELF", 4) != 0)
		return -1;
	is64 = img[4] == 2;
	phoff = is64 ? get(img + 32, 8) : get(img + 28, 4);
	phentsize = (unsigned)get(img + (is64 ? 54 : 42), 2);
	phnum = (unsigned)get(img + (is64 ? 56 : 44), 2);
	end = phoff + (uint64_t)phnum * phentsize;
	if (end > len)
		return -1;
	h->hdr_end = (size_t)end;
	for (unsigned i = 0; i < phnum; i++) {
		const unsigned char *ph = img + phoff + (uint64_t)i * phentsize;
		uint64_t off = is64 ? get(ph + 8, 8) : get(ph + 4, 4);
		uint64_t size = is64 ? get(ph + 32, 8) : get(ph + 16, 4);

		if (get(ph, 4) == PT_NOTE && size > 0 && off <= len && size <= len - off) {
			h->note_off = (size_t)off;
			h->note_end = (size_t)(off + size);
			return 0;
		}
	}
	return -1;
}

/* A random hot byte: a third in the headers, the rest in the notes. */
static size_t hot_byte(const struct hot *h)
{
	if (h->note_end == h->note_off || next_random() % 3 == 0)
		return (size_t)(next_random() % h->hdr_end);
	return h->note_off + (size_t)(next_random() % (h->note_end - h->note_off));
}

/* Is this length one to cut at: every one among the hot bytes, ~1000 more (~100 fast). */
static size_t next_cut(const struct hot *h, size_t l, size_t len)
{
	size_t step = len / (test_fast() ? 97 : 997) + 1;

	if (l < h->hdr_end || (l >= h->note_off && l < h->note_end))
		return l + 1;
	if (l < h->note_off && l + step > h->note_off)
		return h->note_off;
	return l + step;
}

struct counts {
	unsigned opened, refused, frames, walks, walk_errors;
};

/* Walk every thread of an opened core, as swstack does; frames counted. */
static void walk_core(sw_core *c, sw_codemap *map, struct counts *n)
{
	sw_arch arch = sw_core_arch(c);

	for (unsigned i = 0; i < sw_core_thread_count(c) && i < 64; i++) {
		sw_context ctx;
		sw_thread th;
		sw_iter it;
		uint64_t lo, hi;
		int tid, rc;

		if (sw_core_thread(c, i, &ctx, &tid) != SW_OK)
			continue;
		if (sw_core_stack_bounds(c, sw_context_sp(&ctx), &lo, &hi) != SW_OK) {
			lo = sw_context_sp(&ctx);
			hi = lo + 1;
		}
		if (sw_thread_init(&th, arch, map, sw_core_memory(c), 0, lo, hi) != SW_OK ||
		    sw_iter_init(&it, &th, &ctx, 0, SW_WALK_NATIVE_FRAMES |
		                 SW_WALK_FRAME_POINTER_FALLBACK |
		                 SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT) != SW_OK)
			continue;
		n->walks++;
		while ((rc = sw_iter_next(&it)) == 1)
			n->frames++;
		if (rc < 0)
			n->walk_errors++;
		sw_iter_end(&it);
	}
	for (unsigned i = 0; i < sw_core_module_count(c) && i < 4096; i++) {
		sw_mapped_file f;

		if (sw_core_module(c, i, &f) == SW_OK && (!f.path || f.start >= f.end)) {
			fprintf(stderr, "hostile: mapped file %u: no path or an empty range\n", i);
			exit(1);
		}
	}
}

/* The core's auxiliary vector as swstack reads it, and the vDSO it points to. */
static void read_auxv(const unsigned char *img, size_t len, sw_core *c)
{
	size_t alen = 0;
	unsigned word = 0;
	unsigned char *auxv = swstack_core_auxv_image(img, len, &alen, &word);
	uint64_t base;

	if (!auxv)
		return;
	if ((word != 4 && word != 8) || alen == 0) {
		fprintf(stderr, "hostile: auxv of %zu bytes, word %u\n", alen, word);
		exit(1);
	}
	if (swstack_auxv_find(auxv, alen, word, AT_SYSINFO_EHDR, &base) == 0 && c) {
		unsigned char head[64];
		size_t size;

		if (sw_memory_read(sw_core_memory(c), base, head, sizeof head) == SW_OK &&
		    (size = swstack_elf_headers_size(head, sizeof head)) >= sizeof head) {
			unsigned char *image = malloc(size);

			if (image && sw_memory_read(sw_core_memory(c), base, image, size) == SW_OK)
				(void)swstack_elf_image_size(image, size);
			free(image);
		}
	}
	free(auxv);
}

static void try_core(const unsigned char *img, size_t len, sw_codemap *map, struct counts *n)
{
	sw_core *c = NULL;
	sw_status st = sw_core_open_memory(img, len, 0, &c);

	if (st == SW_OK) {
		n->opened++;
		read_auxv(img, len, c);
		walk_core(c, map, n);
		sw_core_close(c);
		return;
	}
	if (c || st >= 0) {
		fprintf(stderr, "hostile: a refused core (%d) came with a handle\n", (int)st);
		exit(1);
	}
	n->refused++;
	read_auxv(img, len, NULL);
}

/* A corrupted copy: 1-8 random bytes, 9 times in 10 among the hot bytes. */
static void corrupt(unsigned char *img, size_t len, const struct hot *h)
{
	unsigned k = 1 + (unsigned)(next_random() % 8);

	for (unsigned j = 0; j < k; j++) {
		size_t at = next_random() % 10 ? hot_byte(h) : (size_t)(next_random() % len);
		unsigned r = (unsigned)(next_random() % 4);

		img[at] = r == 0 ? 0xff : r == 1 ? 0 : (unsigned char)next_random();
	}
}

static int hostile_core(const char *path, sw_codemap *map)
{
	size_t len, nhot;
	unsigned char *img = slurp(path, &len), *bad = NULL;
	struct counts whole = { 0 }, cut = { 0 }, bent = { 0 };
	unsigned cuts = 0;
	struct hot hot;

	if (!img || find_hot(img, len, &hot) != 0 || !(bad = malloc(len))) {
		fprintf(stderr, "hostile: %s: cannot read it as an ELF file\n", path);
		free(img);
		return 1;
	}
	try_core(img, len, map, &whole);
	if (whole.opened != 1 || whole.frames == 0) {
		fprintf(stderr, "hostile: %s: the intact core gives no frames\n", path);
		free(bad);
		free(img);
		return 1;
	}
	/* Every length through the headers and notes, then about a thousand more. */
	for (size_t l = 0; l < len; l = next_cut(&hot, l, len), cuts++)
		try_core(img, l, map, &cut);
	for (unsigned i = 0; i < test_rounds(CORE_CORRUPTIONS); i++) {
		memcpy(bad, img, len);
		corrupt(bad, len, &hot);
		try_core(bad, len, map, &bent);
	}
	nhot = hot.hdr_end + hot.note_end - hot.note_off;
	printf("%s: %zu bytes, headers %zu, notes %zu at %zu: intact %u frames in %u threads; "
	       "%u cuts: %u refused, %u opened (%u walks, %u frames, %u walk errors); "
	       "%u corrupted: %u refused, %u opened (%u walks, %u frames, %u walk errors)\n",
	       path, len, hot.hdr_end, hot.note_end - hot.note_off, hot.note_off, whole.frames, whole.walks, cuts, cut.refused, cut.opened, cut.walks,
	       cut.frames, cut.walk_errors, test_rounds(CORE_CORRUPTIONS), bent.refused, bent.opened, bent.walks, bent.frames,
	       bent.walk_errors);
	free(bad);
	free(img);
	/* The reader must see through cuts in its headers and notes at least. */
	if (cut.refused < nhot / 2) {
		fprintf(stderr, "hostile: %s: only %u of %u cuts refused\n", path, cut.refused, cuts);
		return 1;
	}
	return 0;
}

/*
 * The vDSO of the intact core, loaded from its memory as swstack loads it:
 * i386 threads blocked in a system call sit in its __kernel_vsyscall, and
 * without it their walks would end at once.  NULL if there is none.
 */
static sw_module *load_vdso(const char *path, sw_codemap *map)
{
	size_t len, alen = 0, size, whole;
	unsigned char *img = slurp(path, &len), *auxv = NULL, *image = NULL;
	unsigned char head[64];
	unsigned word = 0;
	uint64_t base, delta;
	sw_core *c = NULL;
	sw_module *m = NULL;

	if (img && sw_core_open_memory(img, len, 0, &c) == SW_OK &&
	    (auxv = swstack_core_auxv_image(img, len, &alen, &word)) != NULL &&
	    swstack_auxv_find(auxv, alen, word, AT_SYSINFO_EHDR, &base) == 0 &&
	    sw_memory_read(sw_core_memory(c), base, head, sizeof head) == SW_OK &&
	    (size = swstack_elf_headers_size(head, sizeof head)) >= sizeof head &&
	    (image = malloc(size)) != NULL &&
	    sw_memory_read(sw_core_memory(c), base, image, size) == SW_OK &&
	    (whole = swstack_elf_image_size(image, size)) >= size) {
		unsigned char *all = malloc(whole);

		if (all && sw_memory_read(sw_core_memory(c), base, all, whole) == SW_OK &&
		    swstack_elf_delta(all, whole, 0, &delta) == 0 &&
		    sw_module_load_image(all, whole, base - delta, NULL, &m) == SW_OK &&
		    sw_module_register(m, map) != SW_OK) {
			sw_module_free(m);
			m = NULL;
		}
		free(all);
	}
	free(image);
	free(auxv);
	sw_core_close(c);
	free(img);
	return m;
}

static void try_module(const unsigned char *img, size_t len, unsigned *loaded)
{
	sw_module *m = NULL;
	sw_arch arch;
	size_t hsize = len >= 64 ? swstack_elf_headers_size(img, len) : 0;
	uint64_t delta;

	/* swstack's own reading: the headers' extent, the bias of the first page. */
	if (hsize && hsize <= len)
		(void)swstack_elf_delta(img, hsize, 0, &delta);
	(void)swstack_elf_image_size(img, len);
	if (sw_module_load_image(img, len, 0, &arch, &m) == SW_OK) {
		const sw_native_function *fns;
		size_t n;

		(*loaded)++;
		if (sw_module_functions(m, &fns, &n) != SW_OK) {
			fprintf(stderr, "hostile: a loaded module lists no functions\n");
			exit(1);
		}
		sw_module_free(m);
	} else if (m) {
		fprintf(stderr, "hostile: a refused module came with a handle\n");
		exit(1);
	}
}

static int hostile_exe(const char *path)
{
	size_t len, hot;
	unsigned char *img = slurp(path, &len), *bad;
	unsigned loaded = 0, cuts = 0, cut_loaded;

	if (!img)
		return 1;
	hot = swstack_elf_headers_size(img, len);
	if (hot >= 64 && hot <= len)
		try_module(img, len, &loaded);
	if (loaded != 1 || !(bad = malloc(len))) {
		fprintf(stderr, "hostile: %s: the intact program does not load\n", path);
		free(img);
		return 1;
	}
	loaded = 0;
	/* Every length through the ELF and program headers, then about 300 more. */
	for (size_t l = 0; l < len; l += l < hot ? 1 : len / 300 + 1, cuts++) {
		memcpy(bad, img, l);
		try_module(bad, l, &loaded);
	}
	cut_loaded = loaded;
	loaded = 0;
	for (unsigned i = 0; i < test_rounds(EXE_CORRUPTIONS); i++) {
		memcpy(bad, img, len);
		/* Half in the headers; half anywhere (CFI, symbols, section headers). */
		for (unsigned k = 1 + (unsigned)(next_random() % 8); k > 0; k--) {
			size_t at = i % 2 ? next_random() % hot : next_random() % len;

			bad[at] = (unsigned char)next_random();
		}
		try_module(bad, len, &loaded);
	}
	printf("%s: %zu bytes, headers %zu: %u cuts, %u of them loaded; "
	       "%u corrupted, %u of them loaded\n", path, len, hot, cuts, cut_loaded, test_rounds(EXE_CORRUPTIONS),
	       loaded);
	free(bad);
	free(img);
	/* A program cut short is never whole: its section headers are at its end. */
	if (cut_loaded != 0) {
		fprintf(stderr, "hostile: %s: %u truncated copies loaded\n", path, cut_loaded);
		return 1;
	}
	return 0;
}

static int mutate(const char *in, const char *out, const char *seed)
{
	size_t len;
	unsigned char *img = slurp(in, &len);
	struct hot hot;
	FILE *f;
	int ok;

	rng ^= strtoull(seed, NULL, 10) * 0x9e3779b97f4a7c15ULL;
	next_random();
	if (!img)
		return 1;
	if (find_hot(img, len, &hot) != 0)
		hot = (struct hot){ len < 4096 ? len : 4096, 0, 0 };
	/* One in four a cut (mostly among the hot bytes), else corrupted bytes. */
	if (next_random() % 4 == 0)
		len = next_random() % 2 ? hot_byte(&hot) : (size_t)(next_random() % len);
	else
		corrupt(img, len, &hot);
	if (!(f = fopen(out, "wb")))
		return 1;
	ok = fwrite(img, 1, len, f) == len;
	ok = fclose(f) == 0 && ok;
	free(img);
	return ok ? 0 : 1;
}

int main(int argc, char **argv)
{
	sw_codemap *map = NULL;
	sw_module *m = NULL, *vdso;
	sw_arch arch;
	size_t len;
	unsigned char *exe;
	int rc;

	if (argc == 5 && strcmp(argv[1], "--mutate") == 0)
		return mutate(argv[2], argv[3], argv[4]);
	if (argc != 3) {
		fprintf(stderr, "usage: hostile CORE EXE | hostile --mutate CORE OUT SEED\n");
		return 2;
	}
	/* The program's CFI in the code map, as swstack registers it (a static non-PIE program). */
	if (!(exe = slurp(argv[2], &len)) || sw_codemap_create(&map) != SW_OK ||
	    sw_module_load_image(exe, len, 0, &arch, &m) != SW_OK || sw_module_register(m, map) != SW_OK) {
		fprintf(stderr, "hostile: %s: cannot load it\n", argv[2]);
		return 1;
	}
	free(exe);
	vdso = load_vdso(argv[1], map);
	rc = hostile_core(argv[1], map);
	rc |= hostile_exe(argv[2]);
	sw_module_unregister(m, map);
	if (vdso)
		sw_module_unregister(vdso, map);
	sw_codemap_synchronize(map);
	sw_module_free(vdso);
	sw_module_free(m);
	sw_codemap_destroy(map);
	return rc;
}
