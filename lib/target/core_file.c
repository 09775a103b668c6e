/*
 * core_file.c - an ELF core file as a walk target: threads from its
 * NT_PRSTATUS notes, memory from its PT_LOAD segments, mapped files from
 * its NT_FILE note (or, for a core without one, from the executable a
 * tool names and the dynamic linker its PT_INTERP names, at AT_BASE).  Host-only (it opens and reads files), but it reads
 * cores of every supported architecture on any host.
 *
 * The core is never mapped or read whole (core_bytes.h): it may be larger
 * than the address space allowed (`ulimit -v`), and sparse.  It is parsed
 * once, at open, through a fixed window; every offset and size in it is
 * checked against the file there, so that the memory accessor, on the
 * walk path, only binary-searches a sorted segment table and copies the
 * bytes asked for (no allocation, no lock; a pread() from the core, or
 * from a mapped file for bytes the core omitted).
 *
 * A core cut at its end (RLIMIT_CORE does that) opens as long as its
 * headers and notes are whole, as gdb reads it: the memory the file still
 * holds is read, the rest gives SW_E_BADADDR, and a walk stops there.
 */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <stdlib.h>
#include <unistd.h>
#include <gelf.h>
#include "util.h"
#include "core_bytes.h"
#include "core_elf.h"
#include "core_notes.h"
#include "regular_file.h"
#include "stopped_target.h"

/* Hard limits against hostile cores. */
#define CORE_MAX_SEGMENTS SWI_CORE_MAX_SEGMENTS
#define CORE_MAX_THREADS  (1u << 16)
#define CORE_MAX_FILES    256   /* distinct mapped files kept open */
/*
 * Notes read from a core: the kernel writes a handful per thread (status,
 * registers, extended state, signal info), so this allows every thread
 * CORE_MAX_THREADS permits eight and a few per process.
 */
#define CORE_MAX_NOTES    (CORE_MAX_THREADS * 8u + 64u)
/*
 * The one note read whole, NT_FILE: SWI_NT_FILE_MAX_ENTRIES entries of
 * three words and a path.  65530 mappings with long paths take a few MiB.
 */
#define CORE_MAX_FILE_NOTE (64u << 20)
/*
 * Of the other notes the decoders need a few hundred bytes (registers,
 * the auxiliary vector): longer descriptors are read only this far.
 */
#define CORE_MAX_NOTE_DESC 4096u

struct core_segment {
	uint64_t start, end;            /* [p_vaddr, p_vaddr + p_memsz) */
	uint64_t dumped_end;            /* p_vaddr + p_filesz: later bytes were omitted */
	uint64_t present_end;           /* up to dumped_end: what a truncated file still holds */
	uint64_t offset;                /* p_offset: where the dumped bytes lie in the file */
	unsigned prot;                  /* SW_PROT_* from p_flags */
};

struct core_mapping {
	sw_mapped_file m;
	int fd;                         /* -1: its bytes cannot be read */
};

struct open_file {
	const char *path;
	int fd;                         /* -1: opening it failed; not retried */
};

struct sw_core {
	sw_memory mem;                  /* what sw_core_memory hands out; ctx is the core */
	sw_arch arch;
	unsigned word;                  /* the target's pointer size */
	unsigned flags;                 /* SW_CORE_* */
	struct swi_core_bytes bytes;    /* the file: an image, or a descriptor we own */
	unsigned char *file_note;       /* the NT_FILE descriptor: the mappings' paths */
	struct core_segment *segs;      /* sorted by start, disjoint */
	size_t nsegs;
	struct swi_thread_regs *threads;
	size_t nthreads, threads_cap;
	struct core_mapping *maps;      /* sorted by start, disjoint */
	size_t nmaps;
	struct open_file files[CORE_MAX_FILES];
	unsigned nfiles;
	char **owned;                   /* paths copied by sw_core_add_executable */
	size_t nowned;
	uint64_t entry;                 /* AT_ENTRY from NT_AUXV, when has_entry */
	int has_entry;
	uint64_t vdso;                  /* AT_SYSINFO_EHDR from NT_AUXV, or 0 */
	uint64_t base;                  /* AT_BASE from NT_AUXV: the dynamic linker's bias, or 0 */
	int exe_file;                   /* files[] index of sw_core_add_executable's file, or -1 */
	int seen_file_note;
	/* From the first well-formed NT_PRPSINFO note: the process's id and name. */
	int has_process;
	int process_pid;
	char process_name[SWI_PRPSINFO_NAME];
};

static unsigned prot_from_pflags(GElf_Word f)
{
	return ((f & PF_R) ? SW_PROT_READ : 0) | ((f & PF_W) ? SW_PROT_WRITE : 0) |
	       ((f & PF_X) ? SW_PROT_EXEC : 0);
}

/*
 * Binary searches over the sorted, disjoint tables: the walk path.
 * first_segment_after: the index of the first segment that ends after addr.
 */
static size_t first_segment_after(const sw_core *c, uint64_t addr)
{
	size_t i;

	SWI_SEARCH(i, c->nsegs, mid, c->segs[mid].end <= addr);
	return i;
}

static const struct core_segment *find_segment(const sw_core *c, uint64_t addr)
{
	size_t i = first_segment_after(c, addr);

	return i < c->nsegs && c->segs[i].start <= addr ? &c->segs[i] : NULL;
}

static const struct core_mapping *find_mapping(const sw_core *c, uint64_t addr)
{
	return swi_mapping_find(c->maps, c->nmaps, sizeof *c->maps, addr);
}

/* Bytes the core omitted, from the file mapped there. */
static sw_status read_omitted(const sw_core *c, uint64_t addr, unsigned char *out, size_t len)
{
	while (len > 0) {
		const struct core_mapping *f = find_mapping(c, addr);
		uint64_t off;
		size_t n;
		ssize_t got;

		if (!f || f->fd < 0)
			return SW_E_BADADDR;
		n = f->m.end - addr < len ? (size_t)(f->m.end - addr) : len;
		off = f->m.offset + (addr - f->m.start);
		if (off < f->m.offset || off > (uint64_t)INT64_MAX - n)
			return SW_E_BADADDR;
		got = pread(f->fd, out, n, (off_t)off);
		if (got <= 0)
			return SW_E_BADADDR;
		/* Past the file's end a mapping shows zeros (to its page's end). */
		if ((size_t)got < n)
			memset(out + got, 0, n - (size_t)got);
		addr += n;
		out += n;
		len -= n;
	}
	return SW_OK;
}

/*
 * Dumped bytes [addr, addr + n) of segment s, n > 0, from the core.  Those
 * a truncated core lost are unreadable: the core says they were written
 * (they may differ from any file's), so nothing else stands in for them.
 */
static sw_status read_dumped(const sw_core *c, const struct core_segment *s, uint64_t addr,
                             unsigned char *out, size_t n)
{
	if (addr >= s->present_end || s->present_end - addr < n)
		return SW_E_BADADDR;
	if (swi_core_bytes_read(&c->bytes, s->offset + (addr - s->start), out, n) != SW_OK)
		return SW_E_BADADDR;
	return SW_OK;
}

/*
 * Dumped bytes are read from the core.  Bytes the core omitted - past a
 * segment's p_filesz (the kernel, qemu), or with no segment at all (gdb
 * leaves read-only file mappings out) - come from the mapped files.
 */
static sw_status core_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const sw_core *c = ctx;
	unsigned char *out = buf;

	if (addr + len < addr)
		return SW_E_BADADDR;
	/* A read may span adjacent segments. */
	while (len > 0) {
		size_t i = first_segment_after(c, addr), n = len;
		const struct core_segment *s = i < c->nsegs ? &c->segs[i] : NULL;

		if (s && s->start <= addr) {
			if (s->end - addr < n)
				n = (size_t)(s->end - addr);
			if (addr < s->dumped_end) {
				size_t d = s->dumped_end - addr < n ? (size_t)(s->dumped_end - addr) : n;

				if (read_dumped(c, s, addr, out, d) != SW_OK ||
				    (d < n && read_omitted(c, addr + d, out + d, n - d) != SW_OK))
					return SW_E_BADADDR;
			} else if (read_omitted(c, addr, out, n) != SW_OK) {
				return SW_E_BADADDR;
			}
		} else {
			/* In no segment: up to the next one, if from a file at all. */
			if (s && s->start - addr < n)
				n = (size_t)(s->start - addr);
			if (read_omitted(c, addr, out, n) != SW_OK)
				return SW_E_BADADDR;
		}
		addr += n;
		out += n;
		len -= n;
	}
	return SW_OK;
}

/* ---- opening ---------------------------------------------------------- */

/* The ELF header of a little-endian ELF file of one of our architectures. */
static sw_status check_ehdr(Elf *elf, size_t size, GElf_Ehdr *eh, sw_arch *arch)
{
	if (size < EI_NIDENT)
		return SW_E_TRUNCATED;
	if (elf_kind(elf) != ELF_K_ELF)
		return SW_E_UNSUPPORTED;        /* not an ELF file */
	if (!gelf_getehdr(elf, eh))
		return SW_E_TRUNCATED;
	if (eh->e_ident[EI_DATA] != ELFDATA2LSB)
		return SW_E_UNSUPPORTED;
	*arch = swi_core_elf_arch(eh->e_ident[EI_CLASS], eh->e_machine);
	if (*arch == SW_ARCH_NONE)
		return SW_E_UNSUPPORTED;
	return SW_OK;
}

static sw_status add_thread(sw_core *c, const unsigned char *desc, size_t len)
{
	struct swi_thread_regs *t;
	sw_status st = swi_thread_regs_reserve(&c->threads, c->nthreads, &c->threads_cap,
	                                       CORE_MAX_THREADS);

	if (st != SW_OK)
		return st;
	t = &c->threads[c->nthreads];
	t->pending_signal = 0;
	st = swi_prstatus_decode(c->arch, desc, len, &t->ctx, &t->tid);
	if (st == SW_OK)
		c->nthreads++;
	return st;
}

static int cmp_mapping(const void *a, const void *b)
{
	const struct core_mapping *x = a, *y = b;

	return x->m.start < y->m.start ? -1 : x->m.start > y->m.start;
}

/*
 * An entry repeated in the note (the same range, offset and path; a
 * rewritten core may list one thousands of times) is one mapping.  The
 * table is sorted by start, so repeats are neighbours: O(n).  Entries that
 * overlap without being equal stay an error.
 */
static size_t fold_repeated_mappings(struct core_mapping *maps, size_t n)
{
	size_t kept = n ? 1 : 0;

	for (size_t i = 1; i < n; i++) {
		const sw_mapped_file *prev = &maps[kept - 1].m, *m = &maps[i].m;

		if (m->start != prev->start || m->end != prev->end || m->offset != prev->offset ||
		    strcmp(m->path, prev->path) != 0)
			maps[kept++] = maps[i];
	}
	return kept;
}

static sw_status add_file_note(sw_core *c, const unsigned char *desc, size_t len)
{
	sw_mapped_file *tmp;
	size_t n;
	sw_status st;

	st = swi_nt_file_decode(c->word, desc, len, NULL, &n);
	if (st != SW_OK || n == 0)
		return st;
	tmp = calloc(n, sizeof *tmp);
	c->maps = calloc(n, sizeof *c->maps);
	if (!tmp || !c->maps) {
		free(tmp);
		return SW_E_NOMEM;
	}
	st = swi_nt_file_decode(c->word, desc, len, tmp, &n);
	for (size_t i = 0; st == SW_OK && i < n; i++) {
		c->maps[i].m = tmp[i];
		c->maps[i].fd = -1;
	}
	free(tmp);
	if (st != SW_OK)
		return st;
	qsort(c->maps, n, sizeof *c->maps, cmp_mapping);
	c->nmaps = fold_repeated_mappings(c->maps, n);
	for (size_t i = 1; i < c->nmaps; i++)
		if (c->maps[i].m.start < c->maps[i - 1].m.end)
			return SW_E_BADMETA;
	return SW_OK;
}

/* Only notes named "CORE" are read ("LINUX" ones hold extended register state). */
static int is_core_name(struct swi_core_window *w, const struct swi_core_phdr *ph,
                        uint32_t namesz, uint64_t name)
{
	sw_status st;
	const unsigned char *p = namesz == 5 ? swi_core_window_get(w, ph->offset + name, 5, &st) : NULL;

	return p && memcmp(p, "CORE", 5) == 0;
}

/* A "CORE" note other than NT_FILE; `desc` holds its first `len` bytes. */
static sw_status read_note(sw_core *c, uint32_t type, const unsigned char *desc, size_t len)
{
	uint64_t v;

	switch (type) {
	case SWI_NT_PRSTATUS:
		return add_thread(c, desc, len);
	case SWI_NT_PRFPREG:
		/* Per-thread notes follow their thread's NT_PRSTATUS. */
		if (c->nthreads == 0)
			return SW_OK;
		return swi_prfpreg_decode(c->arch, desc, len, &c->threads[c->nthreads - 1].ctx);
	case SWI_NT_PRPSINFO:
		/* The first that decodes: a repeated or malformed one names nothing. */
		if (!c->has_process &&
		    swi_prpsinfo_decode(c->arch, desc, len, c->process_name, &c->process_pid) == SW_OK)
			c->has_process = 1;
		return SW_OK;
	case SWI_NT_AUXV:
		if (swi_auxv_find(c->word, desc, len, SWI_AT_ENTRY, &v) == SW_OK) {
			c->entry = v;
			c->has_entry = 1;
		}
		if (swi_auxv_find(c->word, desc, len, SWI_AT_SYSINFO_EHDR, &v) == SW_OK)
			c->vdso = v;
		if (swi_auxv_find(c->word, desc, len, SWI_AT_BASE, &v) == SW_OK)
			c->base = v;
		return SW_OK;
	default:
		return SW_OK;
	}
}

/*
 * The NT_FILE note, read whole (its paths are the mappings' names until
 * sw_core_close), within CORE_MAX_FILE_NOTE.  One per core: a second one
 * is ignored.
 */
static sw_status read_file_note(sw_core *c, uint64_t off, uint32_t len)
{
	if (c->seen_file_note)
		return SW_OK;
	c->seen_file_note = 1;
	if (len > CORE_MAX_FILE_NOTE)
		return SW_E_LIMIT;
	c->file_note = malloc(len ? len : 1);
	if (!c->file_note)
		return SW_E_NOMEM;
	if (swi_core_bytes_read(&c->bytes, off, c->file_note, len) != SW_OK)
		return SW_E_TRUNCATED;
	return add_file_note(c, c->file_note, len);
}

/* Where one note's parts lie, as offsets into its segment. */
struct note_at {
	uint32_t namesz, descsz, type;
	uint64_t name, desc, next;
};

static uint64_t align_up(uint64_t v, unsigned a)
{
	return (v + a - 1) & ~(uint64_t)(a - 1);
}

/*
 * The note at `off` of a note segment: its header, and its name and
 * descriptor checked to lie inside the segment.  Name and descriptor are
 * padded to 4 bytes, or 8 in a segment aligned so.
 */
static sw_status locate_note(struct swi_core_window *w, const struct swi_core_phdr *ph,
                             uint64_t off, struct note_at *n)
{
	unsigned align = ph->align == 8 ? 8 : 4;
	const unsigned char *h;
	sw_status st;

	if (ph->filesz - off < 12)
		return SW_E_BADMETA;
	h = swi_core_window_get(w, ph->offset + off, 12, &st);
	if (!h)
		return st;
	n->namesz = (uint32_t)swi_load_le(h, 4);
	n->descsz = (uint32_t)swi_load_le(h + 4, 4);
	n->type = (uint32_t)swi_load_le(h + 8, 4);
	n->name = off + 12;
	if (ph->filesz - n->name < n->namesz)
		return SW_E_BADMETA;
	n->desc = align_up(n->name + n->namesz, align);
	if (n->desc > ph->filesz || ph->filesz - n->desc < n->descsz)
		return SW_E_BADMETA;
	n->next = align_up(n->desc + n->descsz, align);
	return SW_OK;
}

/*
 * A note whose header is all zeros (no name, no descriptor, type 0) is no
 * note anyone writes: the rest of the segment is padding or damage, and
 * is skipped at once rather than twelve bytes at a time.
 */
static int is_empty_note(const struct note_at *n)
{
	return n->namesz == 0 && n->descsz == 0 && n->type == 0;
}

/* The notes of one PT_NOTE segment, which lies inside the file. */
static sw_status read_notes(sw_core *c, struct swi_core_window *w, const struct swi_core_phdr *ph,
                            unsigned *notes)
{
	for (uint64_t off = 0; off < ph->filesz;) {
		struct note_at n = { 0 };
		const unsigned char *desc;
		size_t len;
		sw_status st = locate_note(w, ph, off, &n);

		if (st != SW_OK)
			return st;
		if (is_empty_note(&n))
			return SW_OK;
		if (++*notes > CORE_MAX_NOTES)
			return SW_E_LIMIT;
		off = n.next;
		if (!is_core_name(w, ph, n.namesz, n.name))
			continue;
		if (n.type == SWI_NT_FILE) {
			st = read_file_note(c, ph->offset + n.desc, n.descsz);
		} else {
			len = n.descsz < CORE_MAX_NOTE_DESC ? n.descsz : CORE_MAX_NOTE_DESC;
			desc = swi_core_window_get(w, ph->offset + n.desc, len, &st);
			if (desc)
				st = read_note(c, n.type, desc, len);
		}
		if (st != SW_OK)
			return st;
	}
	return SW_OK;
}

static int cmp_segment(const void *a, const void *b)
{
	const struct core_segment *x = a, *y = b;

	return x->start < y->start ? -1 : x->start > y->start;
}

/*
 * The part of a segment's dumped bytes the file holds: all of them, or,
 * in a core cut at its end, those before the cut.
 */
static uint64_t bytes_held(const sw_core *c, const struct swi_core_phdr *ph)
{
	if (ph->offset >= c->bytes.size)
		return 0;
	return c->bytes.size - ph->offset < ph->filesz ? c->bytes.size - ph->offset : ph->filesz;
}

/* PT_LOAD segments: none overlapping; those past the file's end are kept, unreadable. */
static sw_status read_segments(sw_core *c, struct swi_core_window *w,
                               const struct swi_core_ehdr *eh)
{
	uint64_t addr_max = c->word == 8 ? UINT64_MAX : UINT32_MAX;
	size_t n = 0;

	c->segs = calloc(eh->phnum ? eh->phnum : 1, sizeof *c->segs);
	if (!c->segs)
		return SW_E_NOMEM;
	for (size_t i = 0; i < eh->phnum; i++) {
		struct swi_core_phdr ph;
		struct core_segment *s;
		sw_status st = swi_core_read_phdr(w, eh, i, &ph);

		if (st != SW_OK)
			return st;
		if (ph.type != PT_LOAD || ph.memsz == 0)
			continue;
		if (ph.filesz > ph.memsz || ph.vaddr > addr_max ||
		    addr_max - ph.vaddr < ph.memsz - 1 || ph.offset > UINT64_MAX - ph.filesz)
			return SW_E_BADMETA;
		s = &c->segs[n++];
		s->start = ph.vaddr;
		s->end = ph.vaddr + ph.memsz;
		/* Ending at the very top of a 64-bit space: its last byte is lost. */
		if (s->end == 0)
			s->end = UINT64_MAX;
		s->dumped_end = ph.vaddr + ph.filesz;
		s->present_end = ph.vaddr + bytes_held(c, &ph);
		s->offset = ph.offset;
		s->prot = prot_from_pflags(ph.flags);
	}
	c->nsegs = n;
	qsort(c->segs, n, sizeof *c->segs, cmp_segment);
	for (size_t i = 1; i < n; i++)
		if (c->segs[i].start < c->segs[i - 1].end)
			return SW_E_BADMETA;
	return SW_OK;
}

/* One descriptor per distinct path; failures are remembered, not retried. */
static int file_fd(sw_core *c, const char *path)
{
	int fd;

	for (unsigned i = 0; i < c->nfiles; i++)
		if (strcmp(c->files[i].path, path) == 0)
			return c->files[i].fd;
	if (c->nfiles == CORE_MAX_FILES)
		return -1;
	/* A hostile core may name a FIFO or a terminal: never block, never adopt it. */
	fd = swi_open_regular(path, NULL);
	if (fd < 0)
		fd = -1;
	c->files[c->nfiles].path = path;
	c->files[c->nfiles].fd = fd;
	c->nfiles++;
	return fd;
}

/* Does the core omit any byte of [lo, hi)? */
static int omits(const sw_core *c, uint64_t lo, uint64_t hi)
{
	uint64_t a = lo;

	for (size_t i = first_segment_after(c, lo); a < hi; i++) {
		const struct core_segment *s = &c->segs[i];

		if (i == c->nsegs || s->start > a || s->dumped_end < (s->end < hi ? s->end : hi))
			return 1;       /* a hole before this segment, or a short one */
		a = s->end;
	}
	return 0;
}

static void open_mapped_files(sw_core *c)
{
	for (size_t i = 0; i < c->nmaps; i++) {
		struct core_mapping *f = &c->maps[i];
		const struct core_segment *s = find_segment(c, f->m.start);

		if (s)
			f->m.prot = s->prot;
		if ((c->flags & SW_CORE_MAPPED_FILES) && omits(c, f->m.start, f->m.end))
			f->fd = file_fd(c, f->m.path);
	}
}

/* The headers, segments and notes, through a window onto the file. */
static sw_status parse_headers(sw_core *c, struct swi_core_window *w)
{
	struct swi_core_ehdr eh;
	unsigned notes = 0;
	sw_status st = swi_core_read_ehdr(w, &eh);

	if (st != SW_OK)
		return st;
	c->arch = eh.arch;
	c->word = eh.word;
	st = read_segments(c, w, &eh);
	for (size_t i = 0; st == SW_OK && i < eh.phnum; i++) {
		struct swi_core_phdr ph;

		st = swi_core_read_phdr(w, &eh, i, &ph);
		if (st != SW_OK || ph.type != PT_NOTE)
			continue;
		/* Notes are never cut: a core without all of them is refused. */
		if (ph.offset > c->bytes.size || c->bytes.size - ph.offset < ph.filesz)
			return SW_E_TRUNCATED;
		st = read_notes(c, w, &ph, &notes);
	}
	return st;
}

static sw_status core_parse(sw_core *c)
{
	struct swi_core_window *w = malloc(sizeof *w);
	sw_status st;

	if (!w)
		return SW_E_NOMEM;
	swi_core_window_init(w, &c->bytes);
	st = parse_headers(c, w);
	free(w);
	if (st != SW_OK)
		return st;
	/* A core without registers gives a walk nothing to start from. */
	if (c->nthreads == 0)
		return SW_E_BADMETA;
	open_mapped_files(c);
	c->mem.read = core_read;
	c->mem.ctx = c;
	return SW_OK;
}

/* A core read from `image` (NULL: from `fd`, which it then owns) of `size` bytes. */
static sw_status core_open_bytes(const void *image, int fd, uint64_t size, unsigned flags,
                                 sw_core **out)
{
	sw_core *c = calloc(1, sizeof *c);
	sw_status st;

	if (!c) {
		if (fd >= 0)
			close(fd);
		return SW_E_NOMEM;
	}
	c->bytes.image = image;
	c->bytes.fd = fd;
	c->bytes.size = size;
	c->flags = flags;
	c->exe_file = -1;
	if (size < EI_NIDENT)
		st = SW_E_TRUNCATED;
	else
		st = core_parse(c);
	if (st != SW_OK) {
		sw_core_close(c);
		return st;
	}
	*out = c;
	return SW_OK;
}

SW_API sw_status sw_core_open_memory(const void *image, size_t size, unsigned flags,
                                     sw_core **core)
{
	if (!core || (!image && size) || (flags & ~(unsigned)SW_CORE_MAPPED_FILES))
		return SW_E_INVAL;
	*core = NULL;
	if (size < EI_NIDENT)
		return SW_E_TRUNCATED;
	return core_open_bytes(image, -1, size, flags, core);
}

SW_API sw_status sw_core_open(const char *path, sw_core **core)
{
	off_t size;
	int fd;

	if (!path || !core)
		return SW_E_INVAL;
	*core = NULL;
	fd = swi_open_regular(path, &size);
	if (fd < 0)
		return SW_E_INVAL;
	/*
	 * Read, not mapped: a core may be larger than the address space we
	 * may use, and a walk reads little of it.  A file cut while it is
	 * open makes reads fail, not raise SIGBUS.
	 */
	return core_open_bytes(NULL, fd, (uint64_t)size, SW_CORE_MAPPED_FILES, core);
}

SW_API void sw_core_close(sw_core *c)
{
	if (!c)
		return;
	if (c->bytes.fd >= 0)
		close(c->bytes.fd);
	for (unsigned i = 0; i < c->nfiles; i++)
		if (c->files[i].fd >= 0)
			close(c->files[i].fd);
	for (size_t i = 0; i < c->nowned; i++)
		free(c->owned[i]);
	free(c->owned);
	free(c->segs);
	free(c->threads);
	free(c->maps);
	free(c->file_note);
	free(c);
}

/* ---- queries ---------------------------------------------------------- */

SW_API sw_arch sw_core_arch(const sw_core *c)
{
	return c ? c->arch : SW_ARCH_NONE;
}

SW_API const char *sw_core_process_name(const sw_core *c, int *pid)
{
	if (!c || !c->has_process)
		return NULL;
	if (pid)
		*pid = c->process_pid;
	return c->process_name;
}

SW_API unsigned sw_core_thread_count(const sw_core *c)
{
	return c ? (unsigned)c->nthreads : 0;
}

SW_API sw_status sw_core_thread(const sw_core *c, unsigned index, sw_context *ctx, int *tid)
{
	return c ? swi_thread_regs_get(c->threads, c->nthreads, index, ctx, tid) : SW_E_INVAL;
}

SW_API const sw_memory *sw_core_memory(const sw_core *c)
{
	return c ? &c->mem : NULL;
}

SW_API unsigned sw_core_module_count(const sw_core *c)
{
	return c ? (unsigned)c->nmaps : 0;
}

SW_API sw_status sw_core_module(const sw_core *c, unsigned index, sw_mapped_file *file)
{
	if (!c || !file || index >= c->nmaps)
		return SW_E_INVAL;
	*file = c->maps[index].m;
	return SW_OK;
}

SW_API sw_status sw_core_stack_bounds(const sw_core *c, uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	const struct core_segment *s;

	if (!c || !lo || !hi)
		return SW_E_INVAL;
	s = find_segment(c, sp);
	if (!s)
		return SW_E_BADADDR;
	*lo = s->start;
	*hi = s->end;
	return SW_OK;
}

/* ---- the executable, for cores that do not name it --------------------- */

static int overlaps_mapping(const sw_core *c, size_t n, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < n; i++)
		if (c->maps[i].m.start < hi && lo < c->maps[i].m.end)
			return 1;
	return 0;
}

/* Load bias of the executable: 0 for ET_EXEC, from AT_ENTRY for PIE. */
static sw_status exec_bias(const sw_core *c, const GElf_Ehdr *eh, uint64_t *bias)
{
	if (eh->e_type == ET_EXEC) {
		/* The wrong program's file would supply the wrong code. */
		if (c->has_entry && c->entry != eh->e_entry)
			return SW_E_MISMATCH;
		*bias = 0;
		return SW_OK;
	}
	if (eh->e_type == ET_DYN && c->has_entry) {
		*bias = c->entry - eh->e_entry;
		return SW_OK;
	}
	return SW_E_UNSUPPORTED;
}

/*
 * The executable's PT_LOAD segments become mappings, except where the core
 * already names a file.  They are staged past the table's end and counted
 * in only when all are valid, so that a failure leaves the core unchanged.
 */
static sw_status add_exec_segments(sw_core *c, Elf *elf, uint64_t bias, const char *path, int fd)
{
	uint64_t mask = c->word == 8 ? UINT64_MAX : UINT32_MAX;
	struct core_mapping *maps;
	size_t phnum, added = 0;

	if (elf_getphdrnum(elf, &phnum) != 0)
		return SW_E_BADMETA;
	if (phnum > CORE_MAX_SEGMENTS)
		return SW_E_LIMIT;
	maps = realloc(c->maps, (c->nmaps + phnum + 1) * sizeof *maps);
	if (!maps)
		return SW_E_NOMEM;
	c->maps = maps;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;
		struct core_mapping *f;
		uint64_t start;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return SW_E_BADMETA;
		if (ph.p_type != PT_LOAD || ph.p_filesz == 0)
			continue;
		start = (ph.p_vaddr + bias) & mask;
		if (ph.p_filesz > mask - start)
			return SW_E_BADMETA;
		if (overlaps_mapping(c, c->nmaps + added, start, start + ph.p_filesz))
			continue;
		f = &c->maps[c->nmaps + added++];
		memset(f, 0, sizeof *f);
		f->m.start = start;
		f->m.end = start + ph.p_filesz;
		f->m.offset = ph.p_offset;
		f->m.path = path;
		f->m.prot = prot_from_pflags(ph.p_flags);
		f->fd = fd;
	}
	if (added == 0)
		return SW_E_EXISTS;
	c->nmaps += added;
	qsort(c->maps, c->nmaps, sizeof *c->maps, cmp_mapping);
	return SW_OK;
}

static sw_status keep_path(sw_core *c, const char *path, char **copy)
{
	char **owned = realloc(c->owned, (c->nowned + 1) * sizeof *owned);

	if (!owned)
		return SW_E_NOMEM;
	c->owned = owned;
	*copy = strdup(path);
	if (!*copy)
		return SW_E_NOMEM;
	c->owned[c->nowned++] = *copy;
	return SW_OK;
}

/*
 * Open `path`, a little-endian ELF file of the core's architecture: its
 * descriptor and libelf handle, both released on failure.
 */
static sw_status open_elf(const sw_core *c, const char *path, int *fd, Elf **elf, GElf_Ehdr *eh)
{
	off_t size;
	sw_arch arch;
	sw_status st;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return SW_E_UNSUPPORTED;
	*fd = swi_open_regular(path, &size);
	if (*fd < 0)
		return SW_E_INVAL;
	*elf = elf_begin(*fd, ELF_C_READ_MMAP, NULL);
	if (!*elf) {
		close(*fd);
		return SW_E_UNSUPPORTED;
	}
	st = check_ehdr(*elf, (size_t)size, eh, &arch);
	if (st == SW_OK && arch != c->arch)
		st = SW_E_MISMATCH;
	if (st != SW_OK) {
		elf_end(*elf);
		close(*fd);
	}
	return st;
}

/*
 * The PT_LOAD segments of `elf` (open as `fd`) at `bias`, named `path` (the
 * target's name for the file): on success the core keeps `fd` and gives
 * the file's index in files[]; on failure the core is unchanged.
 */
static sw_status add_file(sw_core *c, Elf *elf, int fd, uint64_t bias, const char *path,
                          unsigned *index)
{
	char *copy;
	sw_status st = keep_path(c, path, &copy);

	if (st == SW_OK)
		st = add_exec_segments(c, elf, bias, copy, fd);
	if (st != SW_OK)
		return st;
	*index = c->nfiles;
	c->files[c->nfiles].path = copy;
	c->files[c->nfiles].fd = fd;
	c->nfiles++;
	return SW_OK;
}

SW_API sw_status sw_core_add_executable(sw_core *c, const char *path)
{
	GElf_Ehdr eh;
	uint64_t bias;
	unsigned index;
	Elf *elf;
	sw_status st;
	int fd;

	if (!c || !path)
		return SW_E_INVAL;
	if (c->nfiles == CORE_MAX_FILES)
		return SW_E_LIMIT;
	st = open_elf(c, path, &fd, &elf, &eh);
	if (st != SW_OK)
		return st;
	st = exec_bias(c, &eh, &bias);
	if (st == SW_OK)
		st = add_file(c, elf, fd, bias, path, &index);
	elf_end(elf);
	if (st != SW_OK) {
		close(fd);
		return st;
	}
	c->exe_file = (int)index;
	return SW_OK;
}

/* ---- the dynamic linker, for cores that do not name it ----------------- */

/* The longest PT_INTERP path read (PATH_MAX), and the longest sysroot-prefixed one. */
#define INTERP_MAX      4096u
#define INTERP_HOST_MAX (2 * INTERP_MAX)

/*
 * The executable's PT_INTERP path into interp[INTERP_MAX]: SW_E_NOTFOUND
 * without one (a static program), SW_E_LIMIT when longer, SW_E_BADMETA
 * when empty, not NUL-terminated at its end or cut by the file's end.
 */
static sw_status exec_interp(const sw_core *c, char *interp)
{
	int fd = c->files[c->exe_file].fd;
	Elf *elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	size_t phnum;
	sw_status st = SW_E_NOTFOUND;

	if (!elf)
		return SW_E_UNSUPPORTED;
	if (elf_getphdrnum(elf, &phnum) != 0 || phnum > CORE_MAX_SEGMENTS) {
		elf_end(elf);
		return SW_E_BADMETA;
	}
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph)) {
			st = SW_E_BADMETA;
			break;
		}
		if (ph.p_type != PT_INTERP)
			continue;
		if (ph.p_filesz > INTERP_MAX)
			st = SW_E_LIMIT;
		else if (ph.p_filesz < 2 || ph.p_offset > (uint64_t)INT64_MAX - ph.p_filesz ||
		         pread(fd, interp, (size_t)ph.p_filesz, (off_t)ph.p_offset) != (ssize_t)ph.p_filesz ||
		         memchr(interp, '\0', (size_t)ph.p_filesz) != interp + ph.p_filesz - 1)
			st = SW_E_BADMETA;
		else
			st = SW_OK;
		break;
	}
	elf_end(elf);
	return st;
}

/* The ELF header's size for the core's class: what is compared with the core's copy. */
static size_t ehdr_size(const sw_core *c)
{
	return c->word == 8 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr);
}

/*
 * A file said to be loaded at `at` (the linker's AT_BASE, a library's
 * link_map entry) checked against the core: some segment must hold `at`
 * (every mapping the kernel or qemu had has one, dumped or not;
 * SW_E_BADADDR otherwise), and where the core dumped its first bytes they
 * must be the file's ELF header (SW_E_MISMATCH: another file was mapped
 * there).
 */
static sw_status check_header_at(const sw_core *c, int fd, uint64_t at)
{
	const struct core_segment *s = find_segment(c, at);
	unsigned char want[sizeof(Elf64_Ehdr)], got[sizeof(Elf64_Ehdr)];
	size_t n = ehdr_size(c);

	if (!s)
		return SW_E_BADADDR;
	if (at >= s->dumped_end || s->dumped_end - at < n || read_dumped(c, s, at, got, n) != SW_OK)
		return SW_OK;   /* omitted (qemu leaves code out) or lost: nothing to compare */
	if (pread(fd, want, n, 0) != (ssize_t)n || memcmp(want, got, n) != 0)
		return SW_E_MISMATCH;
	return SW_OK;
}

/*
 * The target's path under `sysroot` (NULL or "": as named) into
 * host[INTERP_HOST_MAX]; SW_E_LIMIT when longer.
 */
static sw_status host_path(const char *sysroot, const char *path, char *host, const char **out)
{
	*out = path;
	if (!sysroot || !*sysroot)
		return SW_OK;
	if ((size_t)snprintf(host, INTERP_HOST_MAX, "%s%s", sysroot, path) >= INTERP_HOST_MAX)
		return SW_E_LIMIT;
	*out = host;
	return SW_OK;
}

/*
 * Where a shared object loaded at `bias` has its ELF header: the segment
 * that maps file offset 0, at its address; 0 if none does (nothing to
 * check).  SW_E_BADMETA for unreadable program headers.
 */
static sw_status header_address(Elf *elf, uint64_t bias, unsigned word, uint64_t *at)
{
	size_t phnum;

	*at = 0;
	if (elf_getphdrnum(elf, &phnum) != 0 || phnum > CORE_MAX_SEGMENTS)
		return SW_E_BADMETA;
	for (size_t i = 0; i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			return SW_E_BADMETA;
		if (ph.p_type == PT_LOAD && ph.p_offset == 0) {
			*at = (bias + ph.p_vaddr) & (word == 8 ? UINT64_MAX : UINT32_MAX);
			break;
		}
	}
	return SW_OK;
}

/*
 * The shared object at `path` (the target's name; opened under `sysroot`)
 * added at load bias `bias`, its ELF header checked against the core.
 * The core keeps the descriptor; on failure it is unchanged.
 */
static sw_status add_shared_object(sw_core *c, const char *sysroot, const char *path, uint64_t bias)
{
	char host[INTERP_HOST_MAX];
	const char *open_path;
	uint64_t header;
	GElf_Ehdr eh;
	unsigned index;
	Elf *elf;
	sw_status st;
	int fd;

	if (c->nfiles == CORE_MAX_FILES)
		return SW_E_LIMIT;
	if ((st = host_path(sysroot, path, host, &open_path)) != SW_OK)
		return st;
	/*
	 * Not under the sysroot: as named, where qemu-user (QEMU_LD_PREFIX)
	 * found it too, as a program's own libraries usually are.
	 */
	st = open_elf(c, open_path, &fd, &elf, &eh);
	if (st == SW_E_INVAL && open_path != path)
		st = open_elf(c, path, &fd, &elf, &eh);
	if (st != SW_OK)
		return st;
	if (eh.e_type != ET_DYN)
		st = SW_E_UNSUPPORTED;
	if (st == SW_OK)
		st = header_address(elf, bias, c->word, &header);
	if (st == SW_OK && header)
		st = check_header_at(c, fd, header);
	if (st == SW_OK)
		st = add_file(c, elf, fd, bias, path, &index);
	elf_end(elf);
	if (st != SW_OK)
		close(fd);
	return st;
}

SW_API sw_status sw_core_add_loader(sw_core *c, const char *sysroot)
{
	char interp[INTERP_MAX];
	sw_status st;

	if (!c)
		return SW_E_INVAL;
	if (c->exe_file < 0 || c->base == 0)
		return SW_E_NOTFOUND;
	if (find_mapping(c, c->base))
		return SW_E_EXISTS;
	if (c->nfiles == CORE_MAX_FILES)
		return SW_E_LIMIT;
	if ((st = exec_interp(c, interp)) != SW_OK)
		return st;
	/* AT_BASE is the linker's load bias: the kernel maps it as an ET_DYN file. */
	return add_shared_object(c, sysroot, interp, c->base);
}

/* ---- the shared libraries, for cores that do not name them ------------- */

/*
 * Hard limits: entries of the executable's dynamic section read, and of
 * the linker's list followed (glibc's own limit is memory; 4096 libraries
 * is far past any real program).
 */
#define DYNAMIC_MAX  4096u
#define LINK_MAP_MAX 4096u

#define DT_NULL_TAG  0
#define DT_DEBUG_TAG 21

/*
 * The linker's r_debug, from the executable's DT_DEBUG entry as the core
 * holds it (the linker writes it there at start-up, as glibc's and musl's
 * do for debuggers: gdb's solib-svr4 reads it so).  SW_E_NOTFOUND without
 * a dynamic section or a DT_DEBUG, or with one still 0 (the linker had not
 * run); SW_E_BADADDR where the core lacks the section's bytes.
 */
static sw_status exec_r_debug(const sw_core *c, uint64_t *r_debug)
{
	Elf *elf = elf_begin(c->files[c->exe_file].fd, ELF_C_READ_MMAP, NULL);
	uint64_t bias = 0, dyn = 0, count = 0;
	size_t phnum;
	GElf_Ehdr eh;
	sw_status st = SW_OK;

	if (!elf)
		return SW_E_UNSUPPORTED;
	if (!gelf_getehdr(elf, &eh) || elf_getphdrnum(elf, &phnum) != 0 || phnum > CORE_MAX_SEGMENTS)
		st = SW_E_BADMETA;
	if (st == SW_OK)
		st = exec_bias(c, &eh, &bias);
	for (size_t i = 0; st == SW_OK && i < phnum; i++) {
		GElf_Phdr ph;

		if (!gelf_getphdr(elf, (int)i, &ph))
			st = SW_E_BADMETA;
		else if (ph.p_type == PT_DYNAMIC) {
			dyn = (bias + ph.p_vaddr) & (c->word == 8 ? UINT64_MAX : UINT32_MAX);
			count = ph.p_memsz / (2u * c->word);
			break;
		}
	}
	elf_end(elf);
	if (st != SW_OK)
		return st;
	if (count > DYNAMIC_MAX)
		count = DYNAMIC_MAX;
	for (uint64_t i = 0; i < count; i++) {
		uint64_t tag, val, at = dyn + i * 2u * c->word;

		if (swi_read_ptr(&c->mem, c->word, at, &tag) != SW_OK ||
		    swi_read_ptr(&c->mem, c->word, at + c->word, &val) != SW_OK)
			return SW_E_BADADDR;
		if (tag == DT_NULL_TAG)
			break;
		if (tag == DT_DEBUG_TAG) {
			*r_debug = val;
			return val ? SW_OK : SW_E_NOTFOUND;
		}
	}
	return SW_E_NOTFOUND;
}

/* The NUL-terminated string at `addr` into out[INTERP_MAX]: SW_E_LIMIT when longer. */
static sw_status read_target_string(const sw_core *c, uint64_t addr, char *out)
{
	for (size_t n = 0; n < INTERP_MAX; n += 64) {
		size_t chunk = INTERP_MAX - n < 64 ? INTERP_MAX - n : 64;

		/* Byte by byte where a chunk would cross into unreadable memory. */
		if (swi_read(&c->mem, addr + n, out + n, chunk) != SW_OK) {
			for (size_t k = 0; k < chunk; k++) {
				if (swi_read(&c->mem, addr + n + k, out + n + k, 1) != SW_OK)
					return SW_E_BADADDR;
				if (!out[n + k])
					return SW_OK;
			}
		}
		if (memchr(out + n, '\0', chunk))
			return SW_OK;
	}
	return SW_E_LIMIT;
}

/* One entry of the linker's list, as glibc's <link.h> lays it out (struct link_map's public head). */
struct link_entry {
	uint64_t addr, name, ld, next, prev;
};

static sw_status read_link_entry(const sw_core *c, uint64_t at, struct link_entry *e)
{
	uint64_t *fields[] = { &e->addr, &e->name, &e->ld, &e->next, &e->prev };

	for (unsigned i = 0; i < sizeof fields / sizeof fields[0]; i++)
		if (swi_read_ptr(&c->mem, c->word, at + i * c->word, fields[i]) != SW_OK)
			return SW_E_BADADDR;
	return SW_OK;
}

SW_API sw_status sw_core_add_libraries(sw_core *c, const char *sysroot, sw_core_skipped_fn *skipped,
                                       void *arg, unsigned *added)
{
	uint64_t r_debug, at, prev = 0;
	sw_status st;

	if (added)
		*added = 0;
	if (!c)
		return SW_E_INVAL;
	if (c->exe_file < 0)
		return SW_E_NOTFOUND;
	if ((st = exec_r_debug(c, &r_debug)) != SW_OK)
		return st;
	/* struct r_debug: an int r_version, then r_map, aligned to a pointer. */
	if (swi_read_ptr(&c->mem, c->word, r_debug + c->word, &at) != SW_OK)
		return SW_E_BADADDR;
	for (unsigned i = 0; at; i++) {
		char name[INTERP_MAX];
		struct link_entry e;

		if (i == LINK_MAP_MAX)
			return SW_E_LIMIT;
		if ((st = read_link_entry(c, at, &e)) != SW_OK)
			return st;
		/*
		 * Each entry's l_prev names the one before (the head's none):
		 * a list that loops back breaks that, at the latest where it
		 * first returns to an entry it passed.
		 */
		if (e.prev != prev)
			return SW_E_BADMETA;
		if ((st = read_target_string(c, e.name, name)) != SW_OK)
			return st;
		/*
		 * Passed over: the executable (no name), the vDSO (a name with no
		 * directory, no file to open), and a file whose dynamic section
		 * the core already maps (the linker, or a file the core names).
		 */
		if (strchr(name, '/') && !find_mapping(c, e.ld)) {
			st = add_shared_object(c, sysroot, name, e.addr);
			if (st == SW_OK && added)
				(*added)++;
			else if (st == SW_E_LIMIT && c->nfiles == CORE_MAX_FILES)
				return st;
			else if (st != SW_OK && st != SW_E_EXISTS && skipped)
				skipped(arg, name, st);
		}
		prev = at;
		at = e.next;
	}
	return SW_OK;
}

/* The vDSO's address the core's auxiliary vector records, or 0 (core_notes.h). */
uint64_t swi_core_vdso(const sw_core *c)
{
	return c ? c->vdso : 0;
}
