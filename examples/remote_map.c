/*
 * remote_map.c - find and use a runtime's published code map (see
 * remote_map.h).  The descriptor is a dynamic symbol of the library or
 * program that links libstackwalk (of a static program, a symbol of its
 * symbol table), found in the file the target maps;
 * everything else is read from the target through sw_remote_read.
 */
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "remote_map.h"

enum { SHT_SYMTAB_TYPE = 2, SHT_DYNSYM_TYPE = 11, SHN_UNDEF_INDEX = 0 };

static uint64_t le(const unsigned char *p, unsigned size)
{
	uint64_t v = 0;

	for (unsigned i = size; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

/* `len` bytes at file offset `off`, all within a file of `size` bytes; NULL if not. */
static unsigned char *read_at(int fd, uint64_t size, uint64_t off, uint64_t len)
{
	unsigned char *buf;

	if (len == 0 || len > REMOTE_MAP_MAX_TABLE || off > size || len > size - off)
		return NULL;
	if (!(buf = malloc(len)))
		return NULL;
	if (pread(fd, buf, len, (off_t)off) != (ssize_t)len) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Search one symbol table (`syms`, `nsyms` bytes) with its string table. */
static int search(const unsigned char *syms, uint64_t nsyms, uint64_t entsize, int is64,
                  const unsigned char *strs, uint64_t nstrs, const char *name, uint64_t *value)
{
	size_t want = strlen(name) + 1;

	for (uint64_t at = 0; at + entsize <= nsyms; at += entsize) {
		const unsigned char *s = syms + at;
		uint64_t str = le(s, 4);
		uint64_t shndx = is64 ? le(s + 6, 2) : le(s + 14, 2);

		if (shndx == SHN_UNDEF_INDEX || str >= nstrs || nstrs - str < want ||
		    memcmp(strs + str, name, want) != 0)
			continue;
		*value = is64 ? le(s + 8, 8) : le(s + 4, 4);
		return 0;
	}
	return -1;
}

int remote_map_symbol(const char *path, const char *name, uint64_t *value)
{
	unsigned char eh[64], *shdrs = NULL;
	uint64_t shoff, shentsize, shnum;
	struct stat sb;
	int is64, rc = -1;
	/* A core may name a FIFO, whose plain open() would wait for a writer forever. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || pread(fd, eh, sizeof eh, 0) != (ssize_t)sizeof eh ||
	    memcmp(eh, "\177ELF", 4) != 0 || eh[5] != 1 || (eh[4] != 1 && eh[4] != 2))
		goto out;
	is64 = eh[4] == 2;
	shoff = is64 ? le(eh + 40, 8) : le(eh + 32, 4);
	shentsize = is64 ? le(eh + 58, 2) : le(eh + 46, 2);
	shnum = is64 ? le(eh + 60, 2) : le(eh + 48, 2);
	if (shentsize < (is64 ? 64u : 40u) ||
	    !(shdrs = read_at(fd, (uint64_t)sb.st_size, shoff, shentsize * shnum)))
		goto out;
	/* The dynamic symbols first; a static program has only its symbol table. */
	for (uint64_t j = 0; j < 2 * shnum && rc != 0; j++) {
		uint64_t i = j % shnum;
		const unsigned char *sh = shdrs + i * shentsize, *link;
		uint64_t off, size, entsize, link_index;
		unsigned char *syms, *strs;

		if (le(sh + 4, 4) != (j < shnum ? SHT_DYNSYM_TYPE : SHT_SYMTAB_TYPE))
			continue;
		off = is64 ? le(sh + 24, 8) : le(sh + 16, 4);
		size = is64 ? le(sh + 32, 8) : le(sh + 20, 4);
		link_index = le(sh + (is64 ? 40 : 24), 4);
		entsize = is64 ? le(sh + 56, 8) : le(sh + 36, 4);
		if (link_index >= shnum || entsize < (is64 ? 24u : 16u))
			continue;
		link = shdrs + link_index * shentsize;
		syms = read_at(fd, (uint64_t)sb.st_size, off, size);
		strs = read_at(fd, (uint64_t)sb.st_size, is64 ? le(link + 24, 8) : le(link + 16, 4),
		               is64 ? le(link + 32, 8) : le(link + 20, 4));
		if (syms && strs)
			rc = search(syms, size, entsize, is64, strs,
			            is64 ? le(link + 32, 8) : le(link + 20, 4), name, value);
		free(syms);
		free(strs);
	}
out:
	free(shdrs);
	close(fd);
	return rc;
}

sw_status remote_map_open(struct remote_map *rm, const sw_memory *mem, sw_arch arch, sw_codemap *map)
{
	sw_status st;

	if ((st = sw_remote_read(mem, arch, rm->descriptor, &rm->r)) != SW_OK)
		return st;
	if ((st = sw_remote_register(rm->r, map)) != SW_OK) {
		sw_remote_free(rm->r);
		rm->r = NULL;
		return st;
	}
	rm->map = map;
	return SW_OK;
}

void remote_map_close(struct remote_map *rm)
{
	if (rm->map) {
		sw_remote_unregister(rm->r, rm->map);
		sw_codemap_synchronize(rm->map);
	}
	sw_remote_free(rm->r);
	rm->r = NULL;
	rm->map = NULL;
}

void remote_map_thread(const struct remote_map *rm, int tid, sw_thread *t)
{
	sw_remote_thread rt;

	if (rm->r && sw_remote_thread_find(rm->r, (uint64_t)tid, &rt) == SW_OK) {
		t->frame_head = rt.frame_head;
		t->exception_head = rt.exception_head;
	}
}

const char *remote_map_name(const struct remote_map *rm, uint64_t pc, uint64_t *offset)
{
	sw_remote_method m;

	if (!rm->r || sw_remote_find(rm->r, pc, &m) != SW_OK || !m.name)
		return NULL;
	*offset = pc - m.start;
	return m.name;
}
