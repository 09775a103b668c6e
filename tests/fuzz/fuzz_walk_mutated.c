/*
 * fuzz_walk_mutated.c - the walker over a synthetic stack the input
 * corrupts.
 *
 * A few bytes choose the stack (arch, seed, size, features) and how to
 * walk it (flags, callback or iterator, from the context or from a Frame,
 * GC roots or not).  The rest is a list of edits to a copy of everything
 * the walk reads: the stack image, the Frames on the thread's list, the
 * methods' SWU blobs and code ranges, the seed context and the thread's
 * description.  Every method is then registered afresh in a new code map
 * (sw_codemap_add validates the edited blobs; the ones it refuses are
 * simply missing) and the walk runs over the copy.  It may fail in any
 * way it likes; it must not crash, hang or read outside the buffers.
 * Only the public API is used.
 */
#include <stdlib.h>
#include <stackwalk.h>
#include "fuzz.h"

#define MAX_IMAGE    (1u << 20)
#define MAX_METHODS  64
#define MAX_FRAMES   32
#define MAX_EXPECTED 256

struct method {
	sw_code_info info;
	uint8_t *blob;
};

struct world {
	sw_arch arch;
	unsigned ptr;
	uint8_t *image;
	size_t size;
	uint64_t base;                  /* target address of image[0] */
	struct method m[MAX_METHODS];
	unsigned nm;
	uint64_t frames[MAX_FRAMES];    /* Frame addresses, newest first */
	unsigned nf;
	sw_context ctx;
	sw_thread thread;
	sw_memory mem;
	sw_codemap *map;
};

static uint64_t load(const struct world *w, uint64_t addr)
{
	uint64_t v = 0;

	if (addr < w->base || addr - w->base > w->size - w->ptr)
		return 0;
	for (unsigned i = 0; i < w->ptr; i++)
		v |= (uint64_t)w->image[addr - w->base + i] << (8 * i);
	return v;
}

static void add_method(struct world *w, const sw_code_info *info)
{
	struct method *m;

	for (unsigned i = 0; i < w->nm; i++)
		if (w->m[i].info.start == info->start)
			return;
	if (w->nm == MAX_METHODS)
		return;
	m = &w->m[w->nm];
	m->blob = malloc(info->unwind_size ? info->unwind_size : 1);
	if (!m->blob)
		return;
	memcpy(m->blob, info->unwind, info->unwind_size);
	m->info = *info;
	m->info.unwind = m->blob;
	w->nm++;
}

/* Copy what the walk reads out of the synthetic stack. */
static int copy_world(struct world *w, const sw_synth *s)
{
	const sw_thread *t = sw_synth_thread(s);
	sw_synth_frame *exp;
	sw_code_info info;
	size_t n;
	uint64_t f;

	w->size = (size_t)(t->memory->direct_hi - t->memory->direct_lo);
	w->base = t->memory->direct_lo;
	if (w->size < w->ptr || w->size > MAX_IMAGE)
		return 0;
	w->image = malloc(w->size);
	if (!w->image)
		return 0;
	memcpy(w->image, t->memory->direct_host, w->size);
	w->thread = *t;
	w->ctx = *sw_synth_context(s);

	/* Every method the correct walk meets, and every Frame on the list. */
	exp = calloc(MAX_EXPECTED, sizeof *exp);
	if (!exp)
		return 0;
	n = sw_synth_expected(s, 0, exp, MAX_EXPECTED);
	for (size_t i = 0; i < n && i < MAX_EXPECTED; i++) {
		if (exp[i].method && exp[i].ip &&
		    sw_codemap_find(t->codemap, exp[i].ip, &info) == SW_OK)
			add_method(w, &info);
	}
	free(exp);
	for (f = load(w, t->frame_head); f && w->nf < MAX_FRAMES; f = load(w, f))
		w->frames[w->nf++] = f;
	return 1;
}

static void write_bytes(struct world *w, uint64_t addr, struct fz *f, unsigned len)
{
	for (unsigned i = 0; i < len; i++) {
		uint8_t b = fz_u8(f);

		if (addr + i >= w->base && addr + i - w->base < w->size)
			w->image[addr + i - w->base] = b;
	}
}

/* A value that is likely to mean something: an image address, a code address, or raw. */
static uint64_t some_value(struct world *w, struct fz *f)
{
	switch (fz_u8(f) % 4) {
	case 0:
		return w->base + fz_u32(f) % (w->size ? w->size : 1);
	case 1:
		if (w->nm) {
			const sw_code_info *ci = &w->m[fz_u8(f) % w->nm].info;

			return ci->start + fz_u16(f) % (ci->size + 2);
		}
		return fz_u64(f);
	case 2:
		return fz_u16(f);
	default:
		return fz_u64(f);
	}
}

static void edit(struct world *w, struct fz *f)
{
	unsigned op = fz_u8(f) % 9, len;
	struct method *m;

	switch (op) {
	case 0:         /* bytes of the stack image */
		len = 1 + fz_u8(f) % 8;
		write_bytes(w, w->base + fz_u32(f) % w->size, f, len);
		break;
	case 1:         /* a Frame's header or fields */
		if (!w->nf)
			break;
		len = 1 + fz_u8(f) % 8;
		write_bytes(w, w->frames[fz_u8(f) % w->nf] + fz_u8(f) % (10 * w->ptr), f, len);
		break;
	case 2:         /* a pointer-sized value in a Frame: next, a field */
		if (!w->nf) {
			break;
		} else {
			uint64_t at = w->frames[fz_u8(f) % w->nf] + w->ptr * (fz_u8(f) % 8);
			uint64_t v = some_value(w, f);

			for (unsigned i = 0; i < w->ptr; i++)
				if (at + i >= w->base && at + i - w->base < w->size)
					w->image[at + i - w->base] = (uint8_t)(v >> (8 * i));
		}
		break;
	case 3:         /* a byte of a blob */
		if (!w->nm)
			break;
		m = &w->m[fz_u8(f) % w->nm];
		if (m->info.unwind_size)
			m->blob[fz_u16(f) % m->info.unwind_size] ^= fz_u8(f);
		break;
	case 4:         /* a shorter blob */
		if (!w->nm)
			break;
		m = &w->m[fz_u8(f) % w->nm];
		m->info.unwind_size -= m->info.unwind_size ? fz_u8(f) % (m->info.unwind_size + 1) : 0;
		break;
	case 5:         /* a method's range, flags or parent */
		if (!w->nm)
			break;
		m = &w->m[fz_u8(f) % w->nm];
		switch (fz_u8(f) % 4) {
		case 0:
			m->info.flags ^= fz_u8(f) & 0x1f;
			break;
		case 1:
			m->info.size = 1 + fz_u16(f);
			break;
		case 2:
			m->info.start += (int8_t)fz_u8(f);
			break;
		default:
			m->info.parent = w->m[fz_u8(f) % w->nm].info.method;
			break;
		}
		break;
	case 6:         /* the seed context */
		len = fz_u8(f);
		if (len & 0x80)
			w->ctx.valid ^= 1ULL << (len % SW_MAX_REGS);
		else
			w->ctx.regs[len % SW_MAX_REGS] = some_value(w, f);
		break;
	case 7:         /* the thread: list heads and bounds */
		switch (fz_u8(f) % 5) {
		case 0:
			w->thread.frame_head = some_value(w, f);
			break;
		case 1:
			w->thread.exception_head = some_value(w, f);
			break;
		case 2:
			w->thread.stack_lo = some_value(w, f);
			break;
		case 3:
			w->thread.stack_hi = some_value(w, f);
			break;
		default:
			w->thread.ptrauth_mask = fz_u64(f);
			break;
		}
		break;
	default:        /* a pointer-sized value anywhere in the image */
		{
			uint64_t at = w->base + (fz_u32(f) % w->size & ~(uint64_t)(w->ptr - 1));
			uint64_t v = some_value(w, f);

			for (unsigned i = 0; i < w->ptr; i++)
				if (at + i - w->base < w->size)
					w->image[at + i - w->base] = (uint8_t)(v >> (8 * i));
		}
		break;
	}
}

static sw_walk_action count_root(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	unsigned *n = data;

	(void)cf;
	(void)root;
	return ++*n > 100000 ? SW_ABORT : SW_CONTINUE;
}

struct visit {
	unsigned frames, roots;
	int gc;
};

/* Everything a callback may ask of a crawl frame. */
static void look_at(const sw_crawl_frame *cf, struct visit *v)
{
	const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);
	const sw_code_info *ci = sw_crawl_frame_code_info(cf);
	volatile uint64_t sink = 0;

	sink += (uint64_t)sw_crawl_frame_state(cf);
	sink += (uintptr_t)sw_crawl_frame_method(cf);
	sink += sw_crawl_frame_frame(cf) + sw_crawl_frame_frame_type(cf);
	sink += (uint64_t)sw_crawl_frame_is_frameless(cf) + (uint64_t)sw_crawl_frame_is_first(cf);
	sink += (uint64_t)sw_crawl_frame_is_interrupted(cf) + (uint64_t)sw_crawl_frame_has_faulted(cf);
	sink += (uint64_t)sw_crawl_frame_is_native_marker(cf);
	sink += (uint64_t)sw_crawl_frame_is_no_frame_transition(cf);
	sink += sw_crawl_frame_relative_offset(cf) + sw_crawl_frame_depth(cf);
	sink += (uint64_t)sw_crawl_frame_is_funclet(cf) + (uint64_t)sw_crawl_frame_is_filter_funclet(cf);
	sink += (uint64_t)sw_crawl_frame_is_parent_of_funclet(cf);
	sink += (uint64_t)sw_crawl_frame_should_report_gc(cf);
	sink += (uint64_t)sw_crawl_frame_trust(cf);
	if (!sw_frame_trust_name(sw_crawl_frame_trust(cf)) ||
	    !sw_frame_state_name(sw_crawl_frame_state(cf)))
		abort();
	if (rd)
		sink += rd->cur.valid + rd->cur.regs[0] + rd->cur_loc[SW_MAX_REGS - 1];
	if (ci)
		sink += ci->start + ci->size + (ci->unwind_size ? ci->unwind[ci->unwind_size - 1] : 0);
	if (v->gc) {
		(void)sw_crawl_frame_enum_gc_roots(cf, count_root, &v->roots);
		sink += (unsigned)sw_crawl_frame_is_gc_safe(cf);
	}
	v->frames++;
	(void)sink;
}

static sw_walk_action on_frame(const sw_crawl_frame *cf, void *data)
{
	look_at(cf, data);
	return SW_CONTINUE;
}

static void walk(struct world *w, unsigned flags, unsigned mode)
{
	const sw_context *start = (mode & 2) ? NULL : &w->ctx;
	uint64_t start_frame = 0;
	struct visit v = { 0, 0, (int)(mode & 4) };
	sw_walk_error err;

	if ((mode & 2) && w->nf && (mode & 8))
		start_frame = w->frames[(mode >> 4) % w->nf];
	if (mode & 1) {
		sw_iter it;
		int r;

		if (sw_iter_init(&it, &w->thread, start, start_frame, flags) != SW_OK)
			return;
		while ((r = sw_iter_next(&it)) == 1)
			look_at(sw_iter_frame(&it), &v);
		sw_iter_error(&it, &err);
		sw_iter_end(&it);
		sw_iter_end(&it);
		if (sw_iter_next(&it) == 1)
			abort();        /* a finished walk stays finished */
	} else {
		(void)sw_walk_frames(&w->thread, start, start_frame, on_frame, &v, flags, &err);
	}
}

/* The IPs and SPs of the frames with code, as the ADDRESSES_ONLY callback walk reports them. */
#define BT_MAX 256
struct code_frames {
	uint64_t ip[BT_MAX], sp[BT_MAX];
	size_t n;
};

static sw_walk_action record_code_frame(const sw_crawl_frame *cf, void *data)
{
	struct code_frames *c = data;
	sw_frame_state st = sw_crawl_frame_state(cf);

	if (st != SW_STATE_FRAMELESS && st != SW_STATE_NATIVE_FRAME)
		return SW_CONTINUE;
	if (c->n == BT_MAX)
		return SW_ABORT;
	c->ip[c->n] = sw_context_ip(&sw_crawl_frame_regdisplay(cf)->cur);
	c->sp[c->n] = sw_context_sp(&sw_crawl_frame_regdisplay(cf)->cur);
	c->n++;
	return SW_CONTINUE;
}

/*
 * Differential: sw_backtrace (its fast loop, its rule table) must give the
 * callback walk's frames and end as it ends, whatever the damage.  The
 * table outlives the input, as a profiler's does: maps come and go under it.
 */
static void backtrace_agrees(struct world *w, unsigned flags, unsigned mode)
{
	static sw_walk_cache cache;
	static int cache_ready;
	const sw_context *start = (mode & 2) ? NULL : &w->ctx;
	struct code_frames want, got;
	sw_walk_error want_err, got_err;
	sw_walk_action a;
	int n;

	if (!cache_ready) {
		sw_walk_cache_init(&cache);
		cache_ready = 1;
	}
	flags &= ~(unsigned)SW_WALK_POPFRAMES;          /* a walk that unlinks changes the next */
	want.n = 0;
	a = sw_walk_frames(&w->thread, start, 0, record_code_frame, &want, flags | SW_WALK_ADDRESSES_ONLY,
	                   &want_err);
	for (int pass = 0; pass < 2; pass++) {
		n = sw_backtrace(&w->thread, start, 0, flags, got.ip, got.sp, BT_MAX,
		                 (mode & 32) || pass ? &cache : NULL, &got_err);
		if (n < 0) {
			if (a != SW_FAILED || want.n || n != (int)want_err.status)
				abort();
			continue;
		}
		if (want.n == BT_MAX)           /* deeper than held: compare the frames held */
			got_err = want_err;
		if ((size_t)n != want.n || memcmp(got.ip, want.ip, want.n * sizeof got.ip[0]) ||
		    memcmp(got.sp, want.sp, want.n * sizeof got.sp[0]) ||
		    memcmp(&got_err, &want_err, sizeof got_err))
			abort();
	}
}

/* A walk's frames, folded: what it reported of each, in order, up to DIGEST_FRAMES. */
#define DIGEST_FRAMES 4096
struct walk_digest {
	uint64_t hash;
	size_t n;
};

static void digest_add(struct walk_digest *d, const void *p, size_t len)
{
	const unsigned char *b = p;

	for (size_t i = 0; i < len; i++)
		d->hash = (d->hash ^ b[i]) * 0x100000001b3ull;
}

static sw_walk_action digest_frame(const sw_crawl_frame *cf, void *data)
{
	struct walk_digest *d = data;
	const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);
	uint64_t head[4] = { (uint64_t)sw_crawl_frame_state(cf), (uint64_t)(uintptr_t)sw_crawl_frame_method(cf),
		             sw_crawl_frame_frame(cf), rd ? rd->cur.valid : 0 };

	digest_add(d, head, sizeof head);
	for (unsigned r = 0; rd && r < SW_MAX_REGS; r++)
		if (rd->cur.valid & (1ULL << r)) {
			digest_add(d, &rd->cur.regs[r], sizeof rd->cur.regs[r]);
			digest_add(d, &rd->cur_loc[r], sizeof rd->cur_loc[r]);
		}
	/* Enough to compare, and a walk that runs into its step bound is not walked twice more. */
	return ++d->n < DIGEST_FRAMES ? SW_CONTINUE : SW_ABORT;
}

/*
 * Differential: sw_walk_frames_cached reports what sw_walk_frames does,
 * cold and warm.  Its table outlives the input too, as a runtime's does.
 */
static void cached_agrees(struct world *w, unsigned flags, unsigned mode)
{
	static sw_walk_cache cache;
	static int cache_ready;
	const sw_context *start = (mode & 2) ? NULL : &w->ctx;
	struct walk_digest want = { 0xcbf29ce484222325ull, 0 }, got;
	sw_walk_error want_err, got_err;
	sw_walk_action a, b;

	if (!cache_ready) {
		sw_walk_cache_init(&cache);
		cache_ready = 1;
	}
	flags &= ~(unsigned)SW_WALK_POPFRAMES;          /* a walk that unlinks changes the next */
	a = sw_walk_frames(&w->thread, start, 0, digest_frame, &want, flags, &want_err);
	/* A walk that ran into the step bound took seconds under the fuzzing build: not twice more. */
	if (a == SW_FAILED && want_err.status == SW_E_DEPTH)
		return;
	for (int pass = 0; pass < 2; pass++) {
		got.hash = 0xcbf29ce484222325ull;
		got.n = 0;
		b = sw_walk_frames_cached(&w->thread, start, 0, digest_frame, &got, flags, &cache, &got_err);
		if (a != b || got.n != want.n || got.hash != want.hash || memcmp(&got_err, &want_err, sizeof got_err))
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct world w;
	struct fz f;
	sw_synth_params p;
	sw_synth *s;
	uint64_t seed;
	unsigned flags, mode;

	fz_init(&f, data, size);
	memset(&w, 0, sizeof w);
	w.arch = (sw_arch)fz_arch(&f);
	w.ptr = sw_arch_pointer_size(w.arch);
	seed = fz_u32(&f);
	sw_synth_params_default(&p);
	p.max_frames = 1 + fz_u8(&f) % 32;
	p.features = fz_u16(&f) & SW_SYNTH_ALL;
	flags = fz_u32(&f) & SW_WALK_KNOWN_FLAGS;
	mode = fz_u8(&f);
	if (sw_synth_create(&s, w.arch, seed, &p) != SW_OK)
		return 0;
	if (copy_world(&w, s)) {
		while (f.n)
			edit(&w, &f);
		if (sw_codemap_create(&w.map) == SW_OK) {
			for (unsigned i = 0; i < w.nm; i++)
				(void)sw_codemap_add(w.map, &w.m[i].info);
			sw_memory_init_buffer(&w.mem, w.image, w.size, w.base);
			w.thread.codemap = w.map;
			w.thread.memory = &w.mem;
			walk(&w, flags, mode);
			backtrace_agrees(&w, flags, mode);
			cached_agrees(&w, flags, mode);
			sw_codemap_destroy(w.map);
		}
	}
	for (unsigned i = 0; i < w.nm; i++)
		free(w.m[i].blob);
	free(w.image);
	sw_synth_destroy(s);
	return 0;
}
