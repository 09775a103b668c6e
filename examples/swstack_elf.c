/*
 * swstack_elf.c - the ELF reading swstack does itself (see swstack_elf.h).
 * The library loads modules and reads cores; what it does not expose is
 * where a file's first segment sits and the core's auxiliary vector, so
 * swstack reads those few fields here, with explicit bounds.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "swstack_elf.h"

#define PT_LOAD_TYPE 1
#define PT_NOTE_TYPE 4
#define NT_AUXV_TYPE 6

/* An ELF file's header, the fields used here, in one shape for both classes. */
struct elf_header {
	unsigned word;          /* 4 or 8 */
	uint64_t phoff, shoff;
	unsigned phentsize, phnum, shentsize, shnum;
};

/* One program header. */
struct elf_phdr {
	uint32_t type;
	uint64_t offset, vaddr, filesz, memsz;
};

static uint64_t get(const unsigned char *p, unsigned n)
{
	uint64_t v = 0;

	while (n--)
		v = (v << 8) | p[n];
	return v;
}

static int read_header(const unsigned char *buf, size_t len, struct elf_header *h)
{
	if (len < 52 || memcmp(buf, "\177ELF", 4) != 0 || buf[5] != 1)
		return -1;
	if (buf[4] == 2) {
		if (len < 64)
			return -1;
		h->word = 8;
		h->phoff = get(buf + 32, 8);
		h->shoff = get(buf + 40, 8);
		h->phentsize = (unsigned)get(buf + 54, 2);
		h->phnum = (unsigned)get(buf + 56, 2);
		h->shentsize = (unsigned)get(buf + 58, 2);
		h->shnum = (unsigned)get(buf + 60, 2);
	} else if (buf[4] == 1) {
		h->word = 4;
		h->phoff = get(buf + 28, 4);
		h->shoff = get(buf + 32, 4);
		h->phentsize = (unsigned)get(buf + 42, 2);
		h->phnum = (unsigned)get(buf + 44, 2);
		h->shentsize = (unsigned)get(buf + 46, 2);
		h->shnum = (unsigned)get(buf + 48, 2);
	} else {
		return -1;
	}
	/* Program headers must be at least as large as the fields read below. */
	if (h->phnum > SWSTACK_ELF_MAX_PHDRS || h->phentsize < (h->word == 8 ? 56u : 32u))
		return -1;
	return 0;
}

/* Program header `i`, which must lie within `len` bytes. */
static int read_phdr(const unsigned char *buf, size_t len, const struct elf_header *h,
                     unsigned i, struct elf_phdr *ph)
{
	uint64_t at = h->phoff + (uint64_t)i * h->phentsize;
	const unsigned char *p;

	if (h->phoff > len || at > len || len - at < h->phentsize)
		return -1;
	p = buf + at;
	ph->type = (uint32_t)get(p, 4);
	if (h->word == 8) {
		ph->offset = get(p + 8, 8);
		ph->vaddr = get(p + 16, 8);
		ph->filesz = get(p + 32, 8);
		ph->memsz = get(p + 40, 8);
	} else {
		ph->offset = get(p + 4, 4);
		ph->vaddr = get(p + 8, 4);
		ph->filesz = get(p + 16, 4);
		ph->memsz = get(p + 20, 4);
	}
	return 0;
}

size_t swstack_elf_headers_size(const unsigned char *buf, size_t len)
{
	struct elf_header h;
	uint64_t end;

	if (read_header(buf, len, &h) != 0 || h.phoff > SWSTACK_ELF_MAX_IMAGE)
		return 0;
	end = h.phoff + (uint64_t)h.phnum * h.phentsize;
	return end > SWSTACK_ELF_MAX_IMAGE ? 0 : (size_t)end;
}

int swstack_elf_delta(const unsigned char *buf, size_t len, uint64_t off, uint64_t *delta)
{
	struct elf_header h;

	if (read_header(buf, len, &h) != 0)
		return -1;
	for (unsigned i = 0; i < h.phnum; i++) {
		struct elf_phdr ph;

		if (read_phdr(buf, len, &h, i, &ph) != 0)
			return -1;
		/*
		 * The segment that holds `off`; a mapping starts on the page
		 * where its segment does, so `off` may lie just before it.
		 */
		if (ph.type == PT_LOAD_TYPE && ph.filesz > 0 && off >= ph.offset &&
		    off - ph.offset < ph.filesz) {
			*delta = ph.vaddr - ph.offset;
			return 0;
		}
		if (ph.type == PT_LOAD_TYPE && ph.filesz > 0 && off < ph.offset &&
		    ph.offset - off < 65536) {
			*delta = ph.vaddr - ph.offset;
			return 0;
		}
	}
	return -1;
}

int swstack_elf_load_end(const unsigned char *buf, size_t len, uint64_t *end)
{
	struct elf_header h;
	uint64_t top = 0;

	if (read_header(buf, len, &h) != 0)
		return -1;
	for (unsigned i = 0; i < h.phnum; i++) {
		struct elf_phdr ph;

		if (read_phdr(buf, len, &h, i, &ph) != 0)
			return -1;
		if (ph.type != PT_LOAD_TYPE)
			continue;
		if (ph.vaddr + ph.memsz < ph.vaddr)
			return -1;
		if (ph.vaddr + ph.memsz > top)
			top = ph.vaddr + ph.memsz;
	}
	if (top == 0)
		return -1;
	*end = top;
	return 0;
}

size_t swstack_elf_image_size(const unsigned char *buf, size_t len)
{
	struct elf_header h;
	uint64_t end;

	if (read_header(buf, len, &h) != 0)
		return 0;
	end = h.phoff + (uint64_t)h.phnum * h.phentsize;
	if (h.shnum > 0 && h.shoff < SWSTACK_ELF_MAX_IMAGE) {
		uint64_t sh_end = h.shoff + (uint64_t)h.shnum * h.shentsize;

		if (sh_end > end)
			end = sh_end;
	}
	for (unsigned i = 0; i < h.phnum; i++) {
		struct elf_phdr ph;

		if (read_phdr(buf, len, &h, i, &ph) != 0)
			return 0;
		if (ph.type != PT_LOAD_TYPE)
			continue;
		if (ph.offset > SWSTACK_ELF_MAX_IMAGE || ph.filesz > SWSTACK_ELF_MAX_IMAGE)
			return 0;
		if (ph.offset + ph.filesz > end)
			end = ph.offset + ph.filesz;
	}
	return end > SWSTACK_ELF_MAX_IMAGE ? 0 : (size_t)end;
}

int swstack_auxv_find(const unsigned char *auxv, size_t len, unsigned word, uint64_t type,
                      uint64_t *value)
{
	for (size_t at = 0; at + 2 * (size_t)word <= len; at += 2 * (size_t)word) {
		uint64_t t = get(auxv + at, word);

		if (t == 0)
			break;          /* AT_NULL */
		if (t == type) {
			*value = get(auxv + at + word, word);
			return 0;
		}
	}
	return -1;
}

/* Reads exactly `len` bytes at offset `off` of a core: 0, or -1 past its end. */
typedef int (*core_reader)(const void *src, void *buf, size_t len, uint64_t off);

/* From a file descriptor: pread until done. */
static int read_fd(const void *src, void *buf, size_t len, uint64_t off)
{
	int fd = *(const int *)src;
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));

		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

/* A core in memory. */
struct core_bytes {
	const unsigned char *p;
	size_t len;
};

static int read_bytes(const void *src, void *buf, size_t len, uint64_t off)
{
	const struct core_bytes *c = src;

	if (off > c->len || c->len - off < len)
		return -1;
	memcpy(buf, c->p + off, len);
	return 0;
}

/* The NT_AUXV descriptor among the notes in `notes`, copied; NULL if absent. */
static unsigned char *find_auxv(const unsigned char *notes, size_t len, size_t *out_len)
{
	size_t at = 0;

	while (len - at >= 12) {
		uint64_t namesz = get(notes + at, 4), descsz = get(notes + at + 4, 4);
		uint64_t type = get(notes + at + 8, 4);
		uint64_t name_end = at + 12 + ((namesz + 3) & ~3ull);
		uint64_t desc_end = name_end + ((descsz + 3) & ~3ull);

		if (name_end > len || desc_end > len)
			return NULL;
		/* Core notes are named "CORE" (or "LINUX"); NT_AUXV is "CORE"'s. */
		if (type == NT_AUXV_TYPE && descsz > 0) {
			unsigned char *copy = malloc((size_t)descsz);

			if (copy) {
				memcpy(copy, notes + name_end, (size_t)descsz);
				*out_len = (size_t)descsz;
			}
			return copy;
		}
		at = (size_t)desc_end;
	}
	return NULL;
}

/* The NT_AUXV note of the core `rd` reads from `src`, as swstack_core_auxv says. */
static unsigned char *core_auxv(core_reader rd, const void *src, size_t *len, unsigned *word)
{
	unsigned char head[64], *phdrs = NULL, *auxv = NULL;
	struct elf_header h;
	size_t phsize;

	if (rd(src, head, sizeof head, 0) != 0 || read_header(head, sizeof head, &h) != 0)
		return NULL;
	phsize = (size_t)h.phnum * h.phentsize;
	if (h.phoff > SWSTACK_ELF_MAX_IMAGE || phsize > SWSTACK_ELF_MAX_IMAGE ||
	    !(phdrs = malloc(phsize + 1)) || rd(src, phdrs, phsize, h.phoff) != 0)
		goto out;
	/* read_phdr() takes offsets from the file's start: shift the table to 0. */
	h.phoff = 0;
	for (unsigned i = 0; i < h.phnum && !auxv; i++) {
		struct elf_phdr ph;
		unsigned char *notes;

		if (read_phdr(phdrs, phsize, &h, i, &ph) != 0)
			break;
		if (ph.type != PT_NOTE_TYPE || ph.filesz == 0 || ph.filesz > SWSTACK_ELF_MAX_NOTES)
			continue;
		if (!(notes = malloc((size_t)ph.filesz)))
			break;
		if (rd(src, notes, (size_t)ph.filesz, ph.offset) == 0)
			auxv = find_auxv(notes, (size_t)ph.filesz, len);
		free(notes);
	}
	*word = h.word;
out:
	free(phdrs);
	return auxv;
}

unsigned char *swstack_core_auxv(const char *path, size_t *len, unsigned *word)
{
	unsigned char *auxv;
	int fd = open(path, O_RDONLY);

	if (fd < 0)
		return NULL;
	auxv = core_auxv(read_fd, &fd, len, word);
	close(fd);
	return auxv;
}

unsigned char *swstack_core_auxv_image(const unsigned char *core, size_t core_len, size_t *len,
                                       unsigned *word)
{
	struct core_bytes c = { core, core_len };

	return core && core_len ? core_auxv(read_bytes, &c, len, word) : NULL;
}

/*
 * Why a perf jitdump file has no bias: a JIT maps it executable only so
 * that perf record sees its name (perf's jitdump convention); no code runs
 * there, so the tools list it with -v alone.
 */
const char swstack_elf_jitdump[] = "a perf jitdump file (its JIT's marker for perf; no code)";

/*
 * A jitdump file, by the name perf's jit_detect looks for (jit-PID.dump:
 * its JIT may not have written the header yet) or by the magic it
 * begins with, in its writer's byte order ("JiTD").
 */
static int is_jitdump(const char *file, const unsigned char *head, ssize_t len)
{
	const char *base = strrchr(file, '/');
	char tail[8];
	unsigned pid;

	base = base ? base + 1 : file;
	if (sscanf(base, "jit-%u%7s", &pid, tail) == 2 && strcmp(tail, ".dump") == 0)
		return 1;
	return len >= 4 && (memcmp(head, "DTiJ", 4) == 0 || memcmp(head, "JiTD", 4) == 0);
}

/*
 * The load bias of `file` mapped at `start` from file offset `off`: NULL,
 * or why there is none (the file cannot be opened, is not an ELF file,
 * is a jitdump file: swstack_elf_jitdump).
 */
const char *swstack_elf_file_bias(const char *file, uint64_t start, uint64_t off, uint64_t *bias,
                                  uint64_t *end)
{
	unsigned char head[64], *hdrs;
	const char *why = "cannot read its ELF program headers";
	uint64_t delta, top;
	ssize_t got = 0;
	size_t size;
	/* A core may name a FIFO, whose plain open() would wait for a writer forever. */
	int fd = open(file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	struct stat sb;

	if (fd < 0)
		return strerror(errno);
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode))
		why = "not a regular file";
	else if ((got = pread(fd, head, sizeof head, 0)) >= 0 && is_jitdump(file, head, got))
		why = swstack_elf_jitdump;
	else if (got != (ssize_t)sizeof head || memcmp(head, "\177ELF", 4) != 0)
		why = "not an ELF file";
	else if ((size = swstack_elf_headers_size(head, sizeof head)) >= sizeof head &&
	         (hdrs = malloc(size)) != NULL) {
		if (pread(fd, hdrs, size, 0) == (ssize_t)size &&
		    swstack_elf_delta(hdrs, size, off, &delta) == 0 &&
		    (!end || swstack_elf_load_end(hdrs, size, &top) == 0)) {
			*bias = start - off - delta;
			if (end)
				*end = *bias + top;
			why = NULL;
		}
		free(hdrs);
	}
	close(fd);
	return why;
}
