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

enum { SHT_SYMTAB_TYPE = 2, SHT_DYNSYM_TYPE = 11, SHT_GNU_HASH_TYPE = 0x6ffffff6, SHN_UNDEF_INDEX = 0 };

/* The longest name looked up through .gnu.hash (the two descriptors' are far shorter). */
#define HASHED_NAME_MAX 64

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

/* `len` bytes at file offset `off` into buf, all within a file of `size` bytes; 0 if read. */
static int read_into(int fd, uint64_t size, uint64_t off, void *buf, size_t len)
{
	if (off > size || len > size - off)
		return -1;
	return pread(fd, buf, len, (off_t)off) == (ssize_t)len ? 0 : -1;
}

/* The dynamic symbol at index `idx` (of the table at `off`) if it is `name` defined; 0 if so. */
static int dynsym_is(int fd, uint64_t fsize, int is64, uint64_t off, uint64_t entsize,
                     uint64_t stroff, uint64_t strsize, uint64_t idx, const char *name,
                     uint64_t *value)
{
	unsigned char sym[24], str[HASHED_NAME_MAX + 1];
	size_t want = strlen(name) + 1;
	uint64_t at;

	if (read_into(fd, fsize, off + idx * entsize, sym, is64 ? 24 : 16) != 0)
		return -1;
	at = le(sym, 4);
	if ((is64 ? le(sym + 6, 2) : le(sym + 14, 2)) == SHN_UNDEF_INDEX || at >= strsize ||
	    strsize - at < want || read_into(fd, fsize, stroff + at, str, want) != 0 ||
	    memcmp(str, name, want) != 0)
		return -1;
	*value = is64 ? le(sym + 8, 8) : le(sym + 4, 4);
	return 0;
}

/*
 * Look `name` up in the dynamic symbols `sh` (strings in `link`) through
 * their GNU hash table `hash`, as the dynamic linker does: a few small
 * reads instead of the whole table, which for a big library (libLLVM's:
 * 1 MB of symbols, 3 MB of names) is most of a lookup's cost.  0: found;
 * 1: not a dynamic symbol; -1: no table this can read (search them all).
 */
static int hash_lookup(int fd, uint64_t fsize, int is64, const unsigned char *hash,
                       const unsigned char *sh, const unsigned char *link, const char *name,
                       uint64_t *value)
{
	uint64_t hoff = is64 ? le(hash + 24, 8) : le(hash + 16, 4);
	uint64_t hsize = is64 ? le(hash + 32, 8) : le(hash + 20, 4);
	uint64_t off = is64 ? le(sh + 24, 8) : le(sh + 16, 4);
	uint64_t entsize = is64 ? le(sh + 56, 8) : le(sh + 36, 4);
	uint64_t nsyms = entsize ? (is64 ? le(sh + 32, 8) : le(sh + 20, 4)) / entsize : 0;
	uint64_t stroff = is64 ? le(link + 24, 8) : le(link + 16, 4);
	uint64_t strsize = is64 ? le(link + 32, 8) : le(link + 20, 4);
	unsigned wsz = is64 ? 8 : 4, bits = wsz * 8;
	unsigned char hdr[16], word[8], b4[4];
	uint64_t nbuckets, symoffset, nbloom, shift, chain, w, idx;
	uint32_t h = 5381;

	if (strlen(name) > HASHED_NAME_MAX || hsize < 16 || read_into(fd, fsize, hoff, hdr, 16) != 0)
		return -1;
	for (const char *c = name; *c; c++)
		h = h * 33 + (unsigned char)*c;
	nbuckets = le(hdr, 4);
	symoffset = le(hdr + 4, 4);
	nbloom = le(hdr + 8, 4);
	shift = le(hdr + 12, 4);
	if (nbuckets == 0 || nbloom == 0 || shift >= bits || nbloom * wsz > hsize - 16 ||
	    nbuckets * 4 > hsize - 16 - nbloom * wsz)
		return -1;
	/* The Bloom filter: two bits the name's hash selects, both set if it may be there. */
	if (read_into(fd, fsize, hoff + 16 + (h / bits) % nbloom * wsz, word, wsz) != 0)
		return -1;
	w = le(word, wsz);
	if (!((w >> (h % bits)) & (w >> ((h >> shift) % bits)) & 1))
		return 1;
	chain = hoff + 16 + nbloom * wsz + nbuckets * 4;
	if (read_into(fd, fsize, chain - nbuckets * 4 + (uint64_t)(h % nbuckets) * 4, b4, 4) != 0)
		return -1;
	if ((idx = le(b4, 4)) == 0)
		return 1;
	if (idx < symoffset)
		return -1;
	/* The bucket's chain: hashes with the low bit set on its last; bounded by the symbols. */
	for (; idx < nsyms; idx++) {
		uint64_t at = chain + (idx - symoffset) * 4, ch;

		if (at > hoff + hsize - 4 || read_into(fd, fsize, at, b4, 4) != 0)
			return -1;
		ch = le(b4, 4);
		if ((ch | 1) == (h | 1u) &&
		    dynsym_is(fd, fsize, is64, off, entsize, stroff, strsize, idx, name, value) == 0)
			return 0;
		if (ch & 1)
			return 1;
	}
	return 1;
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
		if (j < shnum) {
			int found = -1;

			for (uint64_t k = 0; k < shnum && found < 0; k++) {
				const unsigned char *hash = shdrs + k * shentsize;

				if (le(hash + 4, 4) == SHT_GNU_HASH_TYPE && le(hash + (is64 ? 40 : 24), 4) == i)
					found = hash_lookup(fd, (uint64_t)sb.st_size, is64, hash, sh, link, name,
					                    value);
			}
			if (found >= 0) {
				rc = found == 0 ? 0 : -1;
				continue;
			}
		}
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
