/*
 * toyjit_gc.c - the toy JIT's moving collector (see toyjit_gc.h).
 */
#include <string.h>
#include "toyjit_gc.h"

#define WORD ((uintptr_t)sizeof(uintptr_t))

struct collection {
	toyjit *jit;
	toyjit_gc_stats *stats;
	size_t nroots;
	int overflow;
	uintptr_t from, from_end;   /* the old space, up to its allocation pointer */
	uintptr_t to, to_next;      /* the new space and its allocation pointer */
};

static void failed(struct collection *c, sw_status st, const char *what, unsigned long long v)
{
	toyjit_gc_stats *s = c->stats;

	s->bad++;
	if (s->status != SW_OK)
		return;
	s->status = st;
	s->what = what;
	s->value = v;
}

int toyjit_gc_in_heap(const toyjit *jit, uintptr_t p)
{
	uintptr_t base = (uintptr_t)jit->heap[jit->heap_cur];

	return p >= base && p < jit->heap_alloc && (p - base) % (uintptr_t)TOYJIT_OBJ_SIZE == 0;
}

/* The object's new address: copied on first sight, its header then forwards. */
static uintptr_t forward(struct collection *c, uintptr_t obj)
{
	uintptr_t *old = (uintptr_t *)obj, *copy;

	if (obj == 0)
		return 0;
	if (obj < c->from || obj >= c->from_end || (obj - c->from) % (uintptr_t)TOYJIT_OBJ_SIZE) {
		failed(c, SW_E_MISMATCH, "a reference outside the old space", obj);
		return obj;
	}
	if (old[TOYJIT_OBJ_HEADER] & 1)
		return old[TOYJIT_OBJ_HEADER] & ~(uintptr_t)1;
	copy = (uintptr_t *)c->to_next;
	c->to_next += (uintptr_t)TOYJIT_OBJ_SIZE;
	for (unsigned i = 0; i < TOYJIT_OBJ_WORDS; i++)
		copy[i] = old[i];
	copy[TOYJIT_OBJ_HEADER] = 0;
	old[TOYJIT_OBJ_HEADER] = (uintptr_t)copy | 1;
	c->stats->moved++;
	return (uintptr_t)copy;
}

/* Keep each root until the walk is over: the walk reads the slots it would change. */
static sw_walk_action keep_root(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	struct collection *c = data;
	toyjit_gc_root *r;

	if (c->nroots >= TOYJIT_GC_MAX_ROOTS) {
		c->overflow = 1;
		return SW_ABORT;
	}
	r = &c->jit->gc_roots[c->nroots++];
	r->addr = root->addr;
	r->value = root->value;
	r->reg = root->reg;
	r->kind = sw_crawl_frame_state(cf);
	if (root->flags & (SW_GC_INTERIOR | SW_GC_PINNED))
		failed(c, SW_E_MISMATCH, "the toy JIT reports no interior or pinned reference", root->addr);
	if (root->flags & SW_GC_PARENT_FRAME)
		c->stats->parent_roots++;
	return SW_CONTINUE;
}

static sw_walk_action gc_frame(const sw_crawl_frame *cf, void *data)
{
	struct collection *c = data;
	sw_status st;

	if (sw_crawl_frame_is_funclet(cf))
		c->stats->funclets++;
	/*
	 * The toy JIT describes every offset, its prologs and epilogs too, so
	 * it collects there; CoreCLR would let the thread run on instead.
	 */
	if (sw_crawl_frame_is_frameless(cf) && !sw_crawl_frame_is_gc_safe(cf))
		c->stats->unsafe_frames++;
	if (!sw_crawl_frame_should_report_gc(cf)) {
		c->stats->skipped++;
		return SW_CONTINUE;
	}
	c->stats->frames++;
	st = sw_crawl_frame_enum_gc_roots(cf, keep_root, c);
	if (st != SW_OK && !c->overflow) {
		failed(c, st, sw_strerror(st), sw_crawl_frame_relative_offset(cf));
		return SW_ABORT;
	}
	return c->overflow ? SW_ABORT : SW_CONTINUE;
}

/* Write the new value where the root lives. */
static void update_root(struct collection *c, const toyjit_gc_root *r, sw_context *ctx)
{
	toyjit_gc_stats *s = c->stats;
	uintptr_t moved = forward(c, (uintptr_t)r->value);

	s->roots++;
	if (r->addr) {
		*(uintptr_t *)(uintptr_t)r->addr = moved;
		if (r->kind != SW_STATE_FRAMELESS)
			s->frame_roots++;
		else if (r->reg != ~0u)
			s->saved_roots++;
		else
			s->slot_roots++;
		return;
	}
	s->reg_roots++;
	if (!ctx) {
		failed(c, SW_E_MISMATCH, "a root in a register of the seed context, and no context", r->reg);
		return;
	}
	if (sw_context_set(ctx, r->reg, moved) != SW_OK)
		failed(c, SW_E_MISMATCH, "a root in a register the context cannot hold", r->reg);
}

sw_status toyjit_gc_collect(toyjit *jit, const sw_thread *t, sw_context *ctx,
                            toyjit_gc_stats *stats)
{
	struct collection c;
	sw_walk_error err;
	sw_walk_action r;
	unsigned other = jit->heap_cur ^ 1;

	memset(&c, 0, sizeof(c));
	c.jit = jit;
	c.stats = stats;
	c.from = (uintptr_t)jit->heap[jit->heap_cur];
	c.from_end = jit->heap_alloc;
	c.to = c.to_next = (uintptr_t)jit->heap[other];
	stats->collections++;

	r = sw_walk_frames(t, ctx, 0, gc_frame, &c, SW_WALK_GC_FUNCLET_REFERENCE_REPORTING, &err);
	if (r == SW_FAILED)
		failed(&c, err.status, "the GC walk failed", err.ip);
	if (c.overflow)
		failed(&c, SW_E_LIMIT, "too many roots", c.nroots);
	if (r != SW_CONTINUE)
		return stats->status != SW_OK ? stats->status : SW_E_MISMATCH;

	for (size_t i = 0; i < c.nroots; i++)
		update_root(&c, &jit->gc_roots[i], ctx);
	/* Cheney's scan: the copies' reference fields move too. */
	for (uintptr_t p = c.to; p < c.to_next; p += (uintptr_t)TOYJIT_OBJ_SIZE) {
		uintptr_t *o = (uintptr_t *)p;

		o[TOYJIT_OBJ_REF] = forward(&c, o[TOYJIT_OBJ_REF]);
	}
	/* Poison the old space: any reference the roots missed now reads garbage. */
	for (uintptr_t p = c.from; p < c.from_end; p++)
		*(volatile uint8_t *)p = TOYJIT_GC_POISON;
	jit->heap_cur = other;
	jit->heap_alloc = c.to_next;
	return stats->status;
}
