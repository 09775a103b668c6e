/*
 * synth_check.c - walk a synthetic stack and compare with the expectation.
 *
 * The walk goes through the public iterator and crawl-frame accessors only,
 * as any user's walk would.  The first difference ends the check with a
 * message naming the arch, seed, flags, frame index and field, so that
 * `swsynth -a ARCH -s SEED -f FLAGS` reproduces it.
 */
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include "synth_internal.h"

struct check {
	const sw_synth *s;
	unsigned flags;
	char *msg;
	size_t msg_size;
	const struct swi_synth_roots *roots;    /* compare GC roots too, or NULL */
};

static sw_status report(const struct check *c, sw_status st, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Write "seed S flags F: <text>" into the caller's buffer; return st. */
static sw_status report(const struct check *c, sw_status st, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!c->msg || !c->msg_size)
		return st;
	n = snprintf(c->msg, c->msg_size, "%s seed %#" PRIx64 " flags %#x: ",
	             sw_arch_name(c->s->arch), c->s->seed, c->flags);
	if (n >= 0 && (size_t)n < c->msg_size) {
		va_start(ap, fmt);
		vsnprintf(c->msg + n, c->msg_size - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return st;
}

static const char *reg_name(const struct check *c, unsigned r)
{
	const char *name = sw_arch_reg_name(c->s->arch, r);

	return name ? name : "register";
}

static sw_status differ(const struct check *c, size_t i, const sw_synth_frame *e,
                        const char *field, uint64_t want, uint64_t got)
{
	return report(c, SW_E_MISMATCH, "frame %zu (%s): %s: expected %#" PRIx64 ", got %#" PRIx64,
	              i, swi_synth_state_name(e->state), field, want, got);
}

static sw_status compare_regs(const struct check *c, size_t i, const sw_synth_frame *e,
                              const sw_regdisplay *rd)
{
	uint64_t got_valid = rd->cur.valid & swi_synth_compared(c->s->a);
	char field[32];

	if (got_valid != e->valid)
		return differ(c, i, e, "valid register mask", e->valid, got_valid);
	for (unsigned r = 0; r < c->s->a->nregs; r++) {
		if (!(e->valid & SWI_BIT(r)))
			continue;
		if (rd->cur.regs[r] != e->regs[r]) {
			snprintf(field, sizeof field, "%s", reg_name(c, r));
			return differ(c, i, e, field, e->regs[r], rd->cur.regs[r]);
		}
		if (rd->cur_loc[r] != e->locs[r]) {
			snprintf(field, sizeof field, "location of %s", reg_name(c, r));
			return differ(c, i, e, field, e->locs[r], rd->cur_loc[r]);
		}
	}
	return SW_OK;
}

/* The yes-or-no answers of a managed frame, each beside its expectation. */
static const struct crawl_flag {
	const char *name;
	size_t expected;                                /* a uint32_t in sw_synth_frame */
	int (*get)(const sw_crawl_frame *cf);
} crawl_flags[] = {
#define CRAWL_FLAG(f) { #f, offsetof(sw_synth_frame, f), sw_crawl_frame_##f }
	CRAWL_FLAG(is_first), CRAWL_FLAG(is_interrupted), CRAWL_FLAG(has_faulted),
	CRAWL_FLAG(is_funclet), CRAWL_FLAG(is_filter_funclet), CRAWL_FLAG(is_parent_of_funclet),
	CRAWL_FLAG(should_report_gc),
#undef CRAWL_FLAG
};

static sw_status compare(const struct check *c, size_t i, const sw_synth_frame *e,
                         const sw_crawl_frame *cf)
{
	const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);
	uint32_t state = (uint32_t)sw_crawl_frame_state(cf);
	uint64_t ip = rd ? rd->cur.regs[c->s->a->ip] : 0;
	uint64_t sp = rd ? rd->cur.regs[c->s->a->sp] : 0;

	/* sw_crawl_frame_ip and _sp, on every path that reports, agree with the register display. */
	if (sw_crawl_frame_ip(cf) != (rd ? sw_context_ip(&rd->cur) : 0))
		return differ(c, i, e, "sw_crawl_frame_ip", rd ? sw_context_ip(&rd->cur) : 0, sw_crawl_frame_ip(cf));
	if (sw_crawl_frame_sp(cf) != (rd ? sw_context_sp(&rd->cur) : 0))
		return differ(c, i, e, "sw_crawl_frame_sp", rd ? sw_context_sp(&rd->cur) : 0, sw_crawl_frame_sp(cf));
	if (state != e->state)
		return report(c, SW_E_MISMATCH, "frame %zu: state: expected %s, got %s (%u)", i,
		              swi_synth_state_name(e->state), swi_synth_state_name(state), state);
	switch (e->state) {
	case SW_STATE_FRAME:
	case SW_STATE_SKIPPED_FRAME:
		if (sw_crawl_frame_frame(cf) != e->frame)
			return differ(c, i, e, "frame address", e->frame, sw_crawl_frame_frame(cf));
		if (sw_crawl_frame_frame_type(cf) != e->frame_type)
			return differ(c, i, e, "frame type", e->frame_type, sw_crawl_frame_frame_type(cf));
		if ((uintptr_t)sw_crawl_frame_method(cf) != (uintptr_t)e->method)
			return differ(c, i, e, "method", (uintptr_t)e->method,
			              (uintptr_t)sw_crawl_frame_method(cf));
		return SW_OK;
	case SW_STATE_FRAMELESS:
		if ((uintptr_t)sw_crawl_frame_method(cf) != (uintptr_t)e->method)
			return differ(c, i, e, "method", (uintptr_t)e->method,
			              (uintptr_t)sw_crawl_frame_method(cf));
		if (!rd)
			return report(c, SW_E_MISMATCH, "frame %zu (FRAMELESS): no register display", i);
		break;
	case SW_STATE_NO_FRAME_TRANSITION:
		if (sw_crawl_frame_frame(cf) != e->frame)
			return differ(c, i, e, "tracker address", e->frame, sw_crawl_frame_frame(cf));
		break;
	default:
		break;
	}
	/* Every state but the Frames': IP and SP, then a managed frame's flags and registers. */
	if (ip != e->ip)
		return differ(c, i, e, "ip", e->ip, ip);
	if (sp != e->sp)
		return differ(c, i, e, "sp", e->sp, sp);
	if (e->state != SW_STATE_FRAMELESS)
		return SW_OK;
	for (size_t k = 0; k < sizeof crawl_flags / sizeof crawl_flags[0]; k++) {
		const struct crawl_flag *f = &crawl_flags[k];
		uint32_t want = *(const uint32_t *)((const char *)e + f->expected);
		uint32_t got = !!f->get(cf);

		if (got != want)
			return differ(c, i, e, f->name, want, got);
	}
	return compare_regs(c, i, e, rd);
}

/* Describe an expected frame briefly, for "missing frame" messages. */
static void describe(const sw_synth_frame *e, char *buf, size_t size)
{
	if (e->state == SW_STATE_FRAME || e->state == SW_STATE_SKIPPED_FRAME)
		snprintf(buf, size, "%s at %#" PRIx64 " type %u", swi_synth_state_name(e->state),
		         e->frame, e->frame_type);
	else if (e->state == SW_STATE_NO_FRAME_TRANSITION)
		snprintf(buf, size, "%s tracker %#" PRIx64, swi_synth_state_name(e->state), e->frame);
	else
		snprintf(buf, size, "%s ip %#" PRIx64 " sp %#" PRIx64, swi_synth_state_name(e->state),
		         e->ip, e->sp);
}

/* ---- GC roots ---------------------------------------------------------- */

#define CHECK_MAX_ROOTS 256

struct root_list {
	sw_gc_root r[CHECK_MAX_ROOTS];
	size_t n;           /* may exceed CHECK_MAX_ROOTS: counted, not kept */
};

static sw_walk_action collect_root(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	struct root_list *l = data;

	(void)cf;
	if (l->n < CHECK_MAX_ROOTS)
		l->r[l->n] = *root;
	l->n++;
	return SW_CONTINUE;
}

static int root_cmp(const void *pa, const void *pb)
{
	const sw_gc_root *a = pa, *b = pb;

	if (a->addr != b->addr)
		return a->addr < b->addr ? -1 : 1;
	if (a->reg != b->reg)
		return a->reg < b->reg ? -1 : 1;
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	if (a->flags != b->flags)
		return a->flags < b->flags ? -1 : 1;
	return 0;
}

static int root_in(const sw_gc_root *r, const sw_gc_root *set, size_t n)
{
	return bsearch(r, set, n, sizeof *set, root_cmp) != NULL;
}

static sw_status root_differ(const struct check *c, size_t i, const sw_synth_frame *e,
                             const char *what, const sw_gc_root *r)
{
	return report(c, SW_E_MISMATCH, "frame %zu (%s): %s root addr %#" PRIx64 " value %#" PRIx64
	              " reg %d flags %u", i, swi_synth_state_name(e->state), what, r->addr,
	              r->value, r->reg == ~0u ? -1 : (int)r->reg, r->flags);
}

/* Enumerate the frame's roots and compare them, as sets, with the expectation. */
static sw_status compare_roots(const struct check *c, size_t i, const sw_synth_frame *e,
                               const sw_crawl_frame *cf)
{
	const struct swi_synth_frame_roots *fr = &c->roots->frames[i];
	sw_gc_root want[CHECK_MAX_ROOTS];
	struct root_list got;
	sw_status st;

	got.n = 0;
	st = sw_crawl_frame_enum_gc_roots(cf, collect_root, &got);
	if (st != fr->status)
		return report(c, SW_E_MISMATCH, "frame %zu (%s): GC root enumeration: expected %s, got %s",
		              i, swi_synth_state_name(e->state), sw_strerror(fr->status), sw_strerror(st));
	if (st != SW_OK)
		return SW_OK;
	if (fr->count > CHECK_MAX_ROOTS || got.n > CHECK_MAX_ROOTS)
		return report(c, SW_E_LIMIT, "frame %zu: more than %d roots", i, CHECK_MAX_ROOTS);
	/* No frame may have roots at all: then there is no array to copy from. */
	if (fr->count) {
		memcpy(want, c->roots->roots + fr->first, fr->count * sizeof *want);
		qsort(want, fr->count, sizeof *want, root_cmp);
	}
	if (got.n)
		qsort(got.r, got.n, sizeof *got.r, root_cmp);
	for (size_t k = 0; k < fr->count; k++)
		if (!root_in(&want[k], got.r, got.n))
			return root_differ(c, i, e, "missing", &want[k]);
	for (size_t k = 0; k < got.n; k++)
		if (!root_in(&got.r[k], want, fr->count))
			return root_differ(c, i, e, "extra", &got.r[k]);
	if (got.n != fr->count)
		return report(c, SW_E_MISMATCH, "frame %zu (%s): %zu roots, expected %zu", i,
		              swi_synth_state_name(e->state), got.n, fr->count);
	return SW_OK;
}

/* How the walk ended (r: sw_iter_next's last result) against how it must end. */
static sw_status compare_end(const struct check *c, int r, const sw_walk_error *err,
                             const sw_walk_error *want, size_t i, size_t n,
                             const sw_synth_frame *exp)
{
	char what[96];

	if (r < 0 && want->status == SW_OK)
		return report(c, r, "walk failed after %zu frames (expected %zu): %s at depth %" PRIu32
		              ", ip %#" PRIx64 " sp %#" PRIx64 " frame %#" PRIx64, i, n,
		              sw_strerror(err->status ? err->status : r), err->depth, err->ip, err->sp,
		              err->frame);
	if (r < 0 && (r != want->status || err->status != want->status ||
	              err->depth != want->depth || err->frame != want->frame ||
	              err->ip != want->ip || err->sp != want->sp))
		return report(c, SW_E_MISMATCH, "walk failed with %s at depth %" PRIu32 ", ip %#" PRIx64
		              " sp %#" PRIx64 " frame %#" PRIx64 "; expected %s at depth %" PRIu32
		              ", ip %#" PRIx64 " sp %#" PRIx64 " frame %#" PRIx64,
		              sw_strerror(err->status ? err->status : r), err->depth, err->ip, err->sp,
		              err->frame, sw_strerror(want->status), want->depth, want->ip, want->sp,
		              want->frame);
	if (r == 0 && want->status != SW_OK)
		return report(c, SW_E_MISMATCH, "walk completed after %zu frames; expected it to fail "
		              "with %s at depth %" PRIu32 ", frame %#" PRIx64, i,
		              sw_strerror(want->status), want->depth, want->frame);
	if (i < n) {
		describe(&exp[i], what, sizeof what);
		return report(c, SW_E_MISMATCH, "walk ended after %zu frames, expected %zu; frame %zu: %s",
		              i, n, i, what);
	}
	return SW_OK;
}

static sw_status walk_and_compare(const struct check *c, const sw_synth_frame *exp, size_t n,
                                  const sw_walk_error *want)
{
	const sw_synth *s = c->s;
	sw_iter it;
	sw_walk_error err;
	sw_status st;
	size_t i = 0;
	int r;

	st = sw_iter_init(&it, &s->thread, &s->ctx, 0, c->flags);
	if (st != SW_OK)
		return report(c, st, "sw_iter_init failed: %s", sw_strerror(st));
	while ((r = sw_iter_next(&it)) > 0) {
		const sw_crawl_frame *cf = sw_iter_frame(&it);

		if (i >= n) {
			const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);

			st = report(c, SW_E_MISMATCH,
			            "frame %zu: extra frame %s ip %#" PRIx64 " frame %#" PRIx64
			            " (expected %zu frames)", i,
			            swi_synth_state_name((uint32_t)sw_crawl_frame_state(cf)),
			            rd ? rd->cur.regs[s->a->ip] : 0, sw_crawl_frame_frame(cf), n);
			break;
		}
		st = compare(c, i, &exp[i], cf);
		if (st == SW_OK && c->roots)
			st = compare_roots(c, i, &exp[i], cf);
		if (st != SW_OK)
			break;
		i++;
	}
	if (st == SW_OK) {
		sw_iter_error(&it, &err);
		st = compare_end(c, r, &err, want, i, n, exp);
	}
	sw_iter_end(&it);
	return st;
}

static sw_status check(const sw_synth *s, unsigned flags, char *msg, size_t msg_size, int roots)
{
	struct check c = { s, flags, msg, msg_size, NULL };
	struct swi_synth_roots r;
	sw_walk_error want;
	sw_synth_frame *exp;
	unsigned char *head;
	size_t n;
	sw_status st;

	if (msg && msg_size)
		msg[0] = '\0';
	if (!s)
		return SW_E_INVAL;
	memset(&r, 0, sizeof r);
	n = swi_synth_expect(s, flags, NULL, 0, NULL, NULL, NULL);
	exp = malloc((n ? n : 1) * sizeof *exp);
	if (!exp)
		return report(&c, SW_E_NOMEM, "out of memory");
	swi_synth_expect(s, flags, exp, n, NULL, roots ? &r : NULL, &want);
	if (r.nomem) {
		free(exp);
		swi_synth_roots_free(&r);
		return report(&c, SW_E_NOMEM, "out of memory");
	}
	if (roots)
		c.roots = &r;
	st = walk_and_compare(&c, exp, n, &want);
	free(exp);
	swi_synth_roots_free(&r);

	if (flags & SW_WALK_POPFRAMES) {
		/*
		 * A complete walk passed every Frame, so every Frame was popped;
		 * then undo it.
		 */
		head = s->image + (s->head_slot - s->image_lo);
		if (st == SW_OK && want.status == SW_OK && swi_load_le(head, s->a->ptr) != 0)
			st = report(&c, SW_E_MISMATCH,
			            "POPFRAMES: head slot %#" PRIx64 " holds %#" PRIx64
			            " after the walk, expected 0", s->head_slot,
			            swi_load_le(head, s->a->ptr));
		swi_store_le(head, s->a->ptr, s->head);
	}
	return st;
}

SW_API sw_status sw_synth_check(const sw_synth *s, unsigned flags, char *msg, size_t msg_size)
{
	return check(s, flags, msg, msg_size, 0);
}

SW_API sw_status sw_synth_check_roots(const sw_synth *s, unsigned flags, char *msg,
                                      size_t msg_size)
{
	return check(s, flags, msg, msg_size, 1);
}
