/*
 * remote_read.c - a debugger reads a runtime's published code map
 * (remote.h, stackwalk-remote(5)) through any sw_memory.
 *
 * The snapshot is copied out whole, then checked against the generation
 * read before it: a running publisher may have rewritten it meanwhile,
 * and the read is tried again, at most SW_REMOTE_TRIES times.  A stopped
 * target (ptrace, a core) never changes, and an odd generation there only
 * means the publisher was between two snapshots: the one the descriptor
 * points to is whole all the same (the publisher never writes it).
 *
 * Everything read is checked before it is kept: counts and sizes against
 * hard limits, methods in ascending, disjoint order.  What is kept grows
 * only as the target's memory actually yields it.
 */
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "array_grow.h"
#include <stackwalk/remote.h>

enum {
	DESCRIPTOR_SIZE = 48, HEADER_SIZE = 16, METHOD_SIZE = 56, THREAD_SIZE = 32,
	PAGE = 4096                     /* a name is read up to a page end, then on */
};
/* All the bytes of blobs and names one read may keep. */
#define MAX_BYTES ((size_t)1 << 28)

/* A method as kept: its blob and name as offsets into `bytes` (which moves as it grows). */
struct kept_method {
	uint64_t start, size, handle, parent;
	size_t unwind, name;            /* name == SIZE_MAX: none */
	uint32_t unwind_size, flags;
};

struct sw_remote {
	unsigned flags;
	struct kept_method *methods;
	size_t nmethods, methods_cap;
	sw_remote_thread *threads;
	size_t nthreads, threads_cap;
	unsigned char *bytes;
	size_t nbytes, bytes_cap;
};

static void forget(sw_remote *r)
{
	r->nmethods = 0;
	r->nthreads = 0;
	r->nbytes = 0;
	r->flags = 0;
}

/* Room for `n` more bytes; SW_E_LIMIT past MAX_BYTES. */
static sw_status reserve_bytes(sw_remote *r, size_t n)
{
	if (n > MAX_BYTES - r->nbytes)
		return SW_E_LIMIT;
	return swi_array_grow((void **)&r->bytes, &r->bytes_cap, r->nbytes + n, 1);
}

/* A NUL-terminated name at `addr`, cut at SW_REMOTE_MAX_NAME bytes; its offset in *at. */
static sw_status read_name(sw_remote *r, const sw_memory *mem, uint64_t addr, size_t *at)
{
	size_t len = 0;
	sw_status st;

	if ((st = reserve_bytes(r, SW_REMOTE_MAX_NAME)) != SW_OK)
		return st;
	/* In pieces that end at page ends: a short name may lie just before an unmapped page. */
	while (len < SW_REMOTE_MAX_NAME - 1) {
		uint64_t here = addr + len;
		size_t n = PAGE - (size_t)(here % PAGE);
		unsigned char *dst = r->bytes + r->nbytes + len;
		void *nul;

		if (n > SW_REMOTE_MAX_NAME - 1 - len)
			n = SW_REMOTE_MAX_NAME - 1 - len;
		if ((st = swi_read(mem, here, dst, n)) != SW_OK)
			return st;
		if ((nul = memchr(dst, 0, n)) != NULL) {
			len += (size_t)((unsigned char *)nul - dst);
			break;
		}
		len += n;
	}
	r->bytes[r->nbytes + len] = '\0';
	*at = r->nbytes;
	r->nbytes += len + 1;
	return SW_OK;
}

/* One method record, checked against the one before it, and kept with its blob and name. */
static sw_status keep_method(sw_remote *r, const sw_memory *mem, const unsigned char *rec)
{
	struct kept_method m;
	uint64_t unwind = swi_load_le(rec + 32, 8), name = swi_load_le(rec + 48, 8);
	sw_status st;

	m.start = swi_load_le(rec, 8);
	m.size = swi_load_le(rec + 8, 8);
	m.handle = swi_load_le(rec + 16, 8);
	m.parent = swi_load_le(rec + 24, 8);
	m.unwind_size = (uint32_t)swi_load_le(rec + 40, 4);
	m.flags = (uint32_t)swi_load_le(rec + 44, 4);
	if (m.size == 0 || m.start + m.size < m.start || m.unwind_size == 0)
		return SW_E_BADMETA;
	if (m.unwind_size > SW_REMOTE_MAX_UNWIND)
		return SW_E_LIMIT;
	/* By ascending start and disjoint: what the publisher writes, and what lookups rely on. */
	if (r->nmethods > 0) {
		const struct kept_method *prev = &r->methods[r->nmethods - 1];

		if (m.start < prev->start + prev->size)
			return SW_E_BADMETA;
	}
	if ((st = swi_array_grow((void **)&r->methods, &r->methods_cap, r->nmethods + 1,
	                         sizeof *r->methods)) != SW_OK ||
	    (st = reserve_bytes(r, m.unwind_size)) != SW_OK ||
	    (st = swi_read(mem, unwind, r->bytes + r->nbytes, m.unwind_size)) != SW_OK)
		return st;
	m.unwind = r->nbytes;
	r->nbytes += m.unwind_size;
	m.name = SIZE_MAX;
	/* A name that cannot be read leaves the method nameless, not unread. */
	if (name != 0 && read_name(r, mem, name, &m.name) != SW_OK)
		m.name = SIZE_MAX;
	r->methods[r->nmethods++] = m;
	return SW_OK;
}

/* One thread record, kept. */
static sw_status keep_thread(sw_remote *r, const sw_memory *mem, const unsigned char *rec)
{
	sw_remote_thread *t;
	sw_status st;

	(void)mem;
	if ((st = swi_array_grow((void **)&r->threads, &r->threads_cap, r->nthreads + 1,
	                         sizeof *r->threads)) != SW_OK)
		return st;
	t = &r->threads[r->nthreads++];
	t->tid = swi_load_le(rec, 8);
	t->frame_head = swi_load_le(rec + 8, 8);
	t->exception_head = swi_load_le(rec + 16, 8);
	t->state = swi_load_le(rec + 24, 8);
	return SW_OK;
}

/*
 * `n` records of `size` bytes each from `addr`, each handed to keep().
 * Only the first `known` bytes of each are read: a later layout may
 * append fields this one does not know.
 */
static sw_status read_records(sw_remote *r, const sw_memory *mem, uint64_t addr, uint32_t n,
                              uint32_t size, uint32_t known,
                              sw_status (*keep)(sw_remote *, const sw_memory *, const unsigned char *))
{
	unsigned char rec[METHOD_SIZE > THREAD_SIZE ? METHOD_SIZE : THREAD_SIZE];
	sw_status st;

	for (uint32_t i = 0; i < n; i++)
		if ((st = swi_read(mem, addr + (uint64_t)i * size, rec, known)) != SW_OK ||
		    (st = keep(r, mem, rec)) != SW_OK)
			return st;
	return SW_OK;
}

/* One attempt: the snapshot `snapshot` names, kept whole or not at all. */
static sw_status read_snapshot(sw_remote *r, const sw_memory *mem, uint64_t snapshot)
{
	unsigned char h[HEADER_SIZE];
	uint32_t nmethods, nthreads, msize, tsize;
	sw_status st;

	forget(r);
	if (snapshot == 0)
		return SW_OK;
	if ((st = swi_read(mem, snapshot, h, sizeof h)) != SW_OK)
		return st;
	nmethods = (uint32_t)swi_load_le(h, 4);
	nthreads = (uint32_t)swi_load_le(h + 4, 4);
	msize = (uint32_t)swi_load_le(h + 8, 4);
	tsize = (uint32_t)swi_load_le(h + 12, 4);
	if (msize < METHOD_SIZE || tsize < THREAD_SIZE || msize % 8 || tsize % 8 ||
	    msize > 4096 || tsize > 4096)
		return SW_E_BADMETA;
	if (nmethods > SW_REMOTE_MAX_METHODS || nthreads > SW_REMOTE_MAX_THREADS)
		return SW_E_LIMIT;
	if ((st = read_records(r, mem, snapshot + HEADER_SIZE, nmethods, msize, METHOD_SIZE,
	                       keep_method)) != SW_OK)
		return st;
	return read_records(r, mem, snapshot + HEADER_SIZE + (uint64_t)nmethods * msize, nthreads,
	                    tsize, THREAD_SIZE, keep_thread);
}

/* The descriptor's generation and snapshot, checked. */
static sw_status read_descriptor(const sw_memory *mem, sw_arch arch, uint64_t addr,
                                 uint32_t *gen, uint64_t *snapshot)
{
	unsigned char d[DESCRIPTOR_SIZE];
	sw_status st;

	if ((st = swi_read(mem, addr, d, sizeof d)) != SW_OK)
		return st;
	if (swi_load_le(d, 4) != SW_REMOTE_MAGIC)
		return SW_E_NOTFOUND;
	if (swi_load_le(d + 4, 4) != SW_REMOTE_VERSION)
		return SW_E_UNSUPPORTED;
	if (swi_load_le(d + 12, 4) < DESCRIPTOR_SIZE)
		return SW_E_BADMETA;
	*gen = (uint32_t)swi_load_le(d + 8, 4);
	*snapshot = swi_load_le(d + 16, 8);
	/* An empty descriptor (never attached) has no architecture yet. */
	if (*snapshot != 0 && swi_load_le(d + 24, 4) != (uint64_t)arch)
		return SW_E_MISMATCH;
	return SW_OK;
}

static sw_status read_generation(const sw_memory *mem, uint64_t addr, uint32_t *gen)
{
	unsigned char g[4];
	sw_status st = swi_read(mem, addr + 8, g, sizeof g);

	if (st == SW_OK)
		*gen = (uint32_t)swi_load_le(g, 4);
	return st;
}

SW_API sw_status sw_remote_read(const sw_memory *mem, sw_arch arch, uint64_t descriptor,
                                sw_remote **out)
{
	sw_remote *r;
	sw_status st = SW_E_UNSAFE;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!mem || !mem->read || descriptor == 0)
		return SW_E_INVAL;
	if (!(r = calloc(1, sizeof *r)))
		return SW_E_NOMEM;
	for (unsigned try = 0; try < SW_REMOTE_TRIES; try++) {
		uint32_t before, after;
		uint64_t snapshot;
		sw_status gen_st;

		/* The generation first: whatever is read after it is checked against it. */
		if ((st = read_generation(mem, descriptor, &before)) != SW_OK ||
		    (st = read_descriptor(mem, arch, descriptor, &after, &snapshot)) != SW_OK)
			break;
		if (after != before) {
			st = SW_E_UNSAFE;
			continue;
		}
		st = read_snapshot(r, mem, snapshot);
		if (st == SW_E_NOMEM)
			break;
		/* A snapshot is only as good as the generation that vouches for it. */
		if ((gen_st = read_generation(mem, descriptor, &after)) != SW_OK) {
			st = gen_st;
			break;
		}
		/* Changed under the read: whatever it found, good or bad, may be torn. */
		if (after != before) {
			st = SW_E_UNSAFE;
			continue;
		}
		if (st == SW_OK && (before & 1))
			r->flags |= SW_REMOTE_MID_UPDATE;
		break;
	}
	if (st != SW_OK) {
		sw_remote_free(r);
		return st;
	}
	*out = r;
	return SW_OK;
}

SW_API void sw_remote_free(sw_remote *r)
{
	if (!r)
		return;
	free(r->methods);
	free(r->threads);
	free(r->bytes);
	free(r);
}

SW_API unsigned sw_remote_flags(const sw_remote *r)
{
	return r ? r->flags : 0;
}

SW_API size_t sw_remote_method_count(const sw_remote *r)
{
	return r ? r->nmethods : 0;
}

static void describe(const sw_remote *r, const struct kept_method *m, sw_remote_method *out)
{
	out->start = m->start;
	out->size = m->size;
	out->handle = m->handle;
	out->parent = m->parent;
	out->unwind = r->bytes + m->unwind;
	out->unwind_size = m->unwind_size;
	out->flags = m->flags;
	out->name = m->name == SIZE_MAX ? NULL : (const char *)r->bytes + m->name;
}

SW_API sw_status sw_remote_method_at(const sw_remote *r, size_t index, sw_remote_method *out)
{
	if (!r || !out || index >= r->nmethods)
		return SW_E_INVAL;
	describe(r, &r->methods[index], out);
	return SW_OK;
}

SW_API sw_status sw_remote_find(const sw_remote *r, uint64_t ip, sw_remote_method *out)
{
	size_t lo;

	if (!r || !out)
		return SW_E_INVAL;
	/* The last method that starts at or below ip. */
	SWI_SEARCH(lo, r->nmethods, mid, r->methods[mid].start <= ip);
	if (lo == 0 || ip - r->methods[lo - 1].start >= r->methods[lo - 1].size)
		return SW_E_NOTFOUND;
	describe(r, &r->methods[lo - 1], out);
	return SW_OK;
}

SW_API sw_status sw_remote_thread_find(const sw_remote *r, uint64_t tid, sw_remote_thread *out)
{
	if (!r || !out)
		return SW_E_INVAL;
	for (size_t i = 0; i < r->nthreads; i++) {
		if (r->threads[i].tid == tid) {
			*out = r->threads[i];
			return SW_OK;
		}
	}
	return SW_E_NOTFOUND;
}

static sw_code_info code_info(const sw_remote *r, const struct kept_method *m)
{
	sw_remote_method rm;

	describe(r, m, &rm);
	return (sw_code_info){ (void *)(uintptr_t)rm.handle, rm.start, rm.size, rm.unwind,
	                       rm.unwind_size, rm.flags, (void *)(uintptr_t)rm.parent };
}

SW_API sw_status sw_remote_register(const sw_remote *r, sw_codemap *map)
{
	sw_status st = SW_OK;
	size_t i;

	if (!r || !map)
		return SW_E_INVAL;
	for (i = 0; i < r->nmethods; i++) {
		sw_code_info info = code_info(r, &r->methods[i]);

		if ((st = sw_codemap_add(map, &info)) != SW_OK)
			break;
	}
	if (st != SW_OK)
		while (i-- > 0)
			sw_codemap_remove(map, r->methods[i].start);
	return st;
}

SW_API sw_status sw_remote_unregister(const sw_remote *r, sw_codemap *map)
{
	sw_status first = SW_OK;

	if (!r || !map)
		return SW_E_INVAL;
	for (size_t i = 0; i < r->nmethods; i++) {
		sw_status st = sw_codemap_remove(map, r->methods[i].start);

		if (st != SW_OK && first == SW_OK)
			first = st;
	}
	return first;
}
