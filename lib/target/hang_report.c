/*
 * hang_report.c - sw_hang_report: its storage, accessors, and the byte
 * form in which the watchdog's helper process hands it back.
 *
 * The byte form is only ever read by the process that forked the writer
 * (the same library, the same ABI), so the records are copied as they
 * are; still every count, index and string offset is checked on the way
 * in, so a short or corrupt buffer gives SW_E_BADMETA, never a bad read.
 */
#include "config.h"
#include <stdlib.h>
#include <string.h>
#include "array_grow.h"
#include "hang_report.h"

#define REPORT_MAGIC 0x47484e53u        /* "SNHG" */
#define REPORT_VERSION 1

struct wire_header {
	uint32_t magic, version, arch, reserved;
	uint64_t nthreads, nframes, ncycles, nmembers, pool_len;
};

sw_hang_report *swi_hang_report_new(sw_arch arch, size_t nthreads)
{
	sw_hang_report *r = calloc(1, sizeof *r);

	if (!r)
		return NULL;
	r->arch = arch;
	r->nthreads = nthreads;
	r->threads = calloc(nthreads ? nthreads : 1, sizeof *r->threads);
	r->pool = malloc(256);
	if (!r->threads || !r->pool) {
		sw_hang_report_free(r);
		return NULL;
	}
	r->pool[0] = '\0';
	r->pool_len = 1;
	r->pool_cap = 256;
	for (size_t i = 0; i < nthreads; i++) {
		r->threads[i].syscall = -1;
		r->threads[i].cycle = -1;
		r->threads[i].behind = -1;
	}
	return r;
}

uint32_t swi_hang_report_string(sw_hang_report *r, const char *s, int *failed)
{
	size_t n, off;

	if (!s)
		return 0;
	n = strlen(s) + 1;
	if (r->pool_len + n > UINT32_MAX / 2 ||
	    swi_array_grow((void **)&r->pool, &r->pool_cap, r->pool_len + n, 1) != SW_OK) {
		*failed = 1;
		return 0;
	}
	off = r->pool_len;
	memcpy(r->pool + off, s, n);
	r->pool_len += n;
	return (uint32_t)off;
}

sw_status swi_hang_report_add_frame(sw_hang_report *r, const struct swi_hang_frame *f)
{
	if (swi_array_grow((void **)&r->frames, &r->frames_cap, r->nframes + 1,
	                   sizeof *r->frames) != SW_OK)
		return SW_E_NOMEM;
	r->frames[r->nframes++] = *f;
	return SW_OK;
}

void sw_hang_report_free(sw_hang_report *r)
{
	if (!r)
		return;
	free(r->threads);
	free(r->frames);
	free(r->cycles);
	free(r->members);
	free(r->member_locks);
	free(r->pool);
	free(r);
}

sw_arch sw_hang_report_arch(const sw_hang_report *r)
{
	return r ? (sw_arch)r->arch : SW_ARCH_NONE;
}

size_t sw_hang_report_thread_count(const sw_hang_report *r)
{
	return r ? r->nthreads : 0;
}

static const char *pool_string(const sw_hang_report *r, uint32_t off)
{
	return off && off < r->pool_len ? r->pool + off : NULL;
}

sw_status sw_hang_report_thread(const sw_hang_report *r, size_t index, sw_hang_thread *out)
{
	const struct swi_hang_thread *t;

	if (!r || !out || index >= r->nthreads)
		return SW_E_INVAL;
	t = &r->threads[index];
	memset(out, 0, sizeof *out);
	out->tid = t->tid;
	out->state = (char)t->state;
	out->syscall = (long)t->syscall;
	out->wchan = pool_string(r, t->wchan);
	out->cpu_ns = t->cpu_ns;
	out->cpu_permille = t->cpu_permille;
	out->cls = (sw_hang_class)t->cls;
	out->lock_kind = (sw_lock_kind)t->lock_kind;
	out->lock = t->lock;
	out->owner = t->owner;
	out->cycle = t->cycle;
	out->behind = t->behind;
	out->frames = t->nframes;
	out->walk_status = (sw_status)t->walk_status;
	return SW_OK;
}

sw_status sw_hang_report_frame(const sw_hang_report *r, size_t index, size_t level,
                               sw_hang_frame *out)
{
	const struct swi_hang_frame *f;

	if (!r || !out || index >= r->nthreads || level >= r->threads[index].nframes)
		return SW_E_INVAL;
	f = &r->frames[r->threads[index].first_frame + level];
	out->pc = f->pc;
	out->offset = f->offset;
	out->function = pool_string(r, f->function);
	out->module = pool_string(r, f->module);
	return SW_OK;
}

size_t sw_hang_report_cycle_count(const sw_hang_report *r)
{
	return r ? r->ncycles : 0;
}

sw_status sw_hang_report_cycle(const sw_hang_report *r, size_t index, size_t *threads,
                               uint64_t *locks, size_t cap, size_t *length)
{
	const struct swi_hang_cycle *c;

	if (!r || index >= r->ncycles)
		return SW_E_INVAL;
	c = &r->cycles[index];
	for (size_t i = 0; i < c->length && i < cap; i++) {
		if (threads)
			threads[i] = r->members[c->first + i];
		if (locks)
			locks[i] = r->member_locks[c->first + i];
	}
	if (length)
		*length = c->length;
	return SW_OK;
}

const char *sw_hang_class_name(sw_hang_class cls)
{
	static const char *const names[] = {
		"unknown", "running", "busy", "deadlocked", "lock-wait", "lock-no-owner",
		"io-wait", "idle"
	};

	return (unsigned)cls < sizeof names / sizeof names[0] ? names[cls] : NULL;
}

const char *sw_lock_kind_name(sw_lock_kind kind)
{
	static const char *const names[] = { "none", "mutex", "rwlock-read", "rwlock-write" };

	return (unsigned)kind < sizeof names / sizeof names[0] ? names[kind] : NULL;
}

/* ---- byte form ------------------------------------------------------------ */

sw_status swi_hang_report_serialize(const sw_hang_report *r, unsigned char **buf, size_t *len)
{
	struct wire_header h = { REPORT_MAGIC, REPORT_VERSION, r->arch, 0, r->nthreads,
	                         r->nframes, r->ncycles, r->nmembers, r->pool_len };
	size_t sizes[] = { sizeof h, r->nthreads * sizeof *r->threads,
	                   r->nframes * sizeof *r->frames, r->ncycles * sizeof *r->cycles,
	                   r->nmembers * sizeof *r->members, r->nmembers * sizeof *r->member_locks,
	                   r->pool_len };
	const void *parts[] = { &h, r->threads, r->frames, r->cycles, r->members,
	                        r->member_locks, r->pool };
	size_t total = 0;
	unsigned char *p;

	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
		total += sizes[i];
	if (total > SWI_HANG_MAX_BYTES)
		return SW_E_LIMIT;
	if (!(p = malloc(total)))
		return SW_E_NOMEM;
	*buf = p;
	*len = total;
	for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
		if (sizes[i])
			memcpy(p, parts[i], sizes[i]);
		p += sizes[i];
	}
	return SW_OK;
}

/* Copy `n` records of `size` bytes from the buffer into a fresh array; NULL sets *bad. */
static void *take(const unsigned char **p, size_t *left, size_t n, size_t size, int *bad)
{
	size_t bytes = n * size;
	void *out;

	if (*bad || (size && n > SWI_HANG_MAX_BYTES / size) || bytes > *left ||
	    !(out = malloc(bytes ? bytes : 1))) {
		*bad = 1;
		return NULL;
	}
	if (bytes)
		memcpy(out, *p, bytes);
	*p += bytes;
	*left -= bytes;
	return out;
}

static int report_is_consistent(const sw_hang_report *r)
{
	if (r->pool_len == 0 || r->pool[r->pool_len - 1] != '\0' || r->nthreads > SWI_HANG_MAX_THREADS)
		return 0;
	for (size_t i = 0; i < r->nthreads; i++) {
		const struct swi_hang_thread *t = &r->threads[i];

		if (t->wchan >= r->pool_len || t->first_frame > r->nframes ||
		    t->nframes > r->nframes - t->first_frame || t->cycle < -1 ||
		    (t->cycle >= 0 && (size_t)t->cycle >= r->ncycles) || t->behind < -1 ||
		    (t->behind >= 0 && (size_t)t->behind >= r->ncycles))
			return 0;
	}
	for (size_t i = 0; i < r->nframes; i++)
		if (r->frames[i].function >= r->pool_len || r->frames[i].module >= r->pool_len)
			return 0;
	for (size_t i = 0; i < r->ncycles; i++)
		if (r->cycles[i].first > r->nmembers ||
		    r->cycles[i].length > r->nmembers - r->cycles[i].first)
			return 0;
	for (size_t i = 0; i < r->nmembers; i++)
		if (r->members[i] >= r->nthreads)
			return 0;
	return 1;
}

sw_status swi_hang_report_deserialize(const unsigned char *buf, size_t len, sw_hang_report **out)
{
	struct wire_header h;
	sw_hang_report *r;
	const unsigned char *p;
	size_t left;
	int bad = 0;

	*out = NULL;
	if (!buf || len < sizeof h)
		return SW_E_TRUNCATED;
	memcpy(&h, buf, sizeof h);
	p = buf + sizeof h;
	if (h.magic != REPORT_MAGIC || h.version != REPORT_VERSION)
		return SW_E_BADMETA;
	if (h.nthreads > SWI_HANG_MAX_THREADS || h.pool_len > SWI_HANG_MAX_BYTES ||
	    h.nframes > SWI_HANG_MAX_BYTES || h.ncycles > SWI_HANG_MAX_THREADS ||
	    h.nmembers > SWI_HANG_MAX_THREADS)
		return SW_E_LIMIT;
	if (!(r = calloc(1, sizeof *r)))
		return SW_E_NOMEM;
	left = len - sizeof h;
	r->arch = h.arch;
	r->nthreads = (size_t)h.nthreads;
	r->nframes = r->frames_cap = (size_t)h.nframes;
	r->ncycles = (size_t)h.ncycles;
	r->nmembers = (size_t)h.nmembers;
	r->pool_len = r->pool_cap = (size_t)h.pool_len;
	r->threads = take(&p, &left, r->nthreads, sizeof *r->threads, &bad);
	r->frames = take(&p, &left, r->nframes, sizeof *r->frames, &bad);
	r->cycles = take(&p, &left, r->ncycles, sizeof *r->cycles, &bad);
	r->members = take(&p, &left, r->nmembers, sizeof *r->members, &bad);
	r->member_locks = take(&p, &left, r->nmembers, sizeof *r->member_locks, &bad);
	r->pool = take(&p, &left, r->pool_len, 1, &bad);
	if (bad || left != 0 || !report_is_consistent(r)) {
		sw_hang_report_free(r);
		return bad ? SW_E_TRUNCATED : SW_E_BADMETA;
	}
	*out = r;
	return SW_OK;
}
