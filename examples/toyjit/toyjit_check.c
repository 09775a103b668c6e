/*
 * toyjit_check.c - record a walk of the toy JIT's stack and check it against
 * the shadow stack and the scenario's shape (see toyjit_check.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "toyjit_check.h"

#define BIT(r) (1ull << (r))
#define CALLEE_SAVED (BIT(SW_X64_RBX) | BIT(SW_X64_RBP) | BIT(SW_X64_R12) | \
                      BIT(SW_X64_R13) | BIT(SW_X64_R14) | BIT(SW_X64_R15))

const char *toyjit_state_name(uint32_t state)
{
	return sw_frame_state_name((sw_frame_state)state);
}

static sw_walk_action record_frame(const sw_crawl_frame *cf, void *data)
{
	toyjit_walk *w = data;
	const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);
	const sw_code_info *code = sw_crawl_frame_code_info(cf);
	toyjit_walked *f;

	if (w->n++ >= TOYJIT_WALK_MAX)
		return SW_CONTINUE;
	f = &w->frames[w->n - 1];
	memset(f, 0, sizeof(*f));
	f->state = sw_crawl_frame_state(cf);
	f->frame_type = sw_crawl_frame_frame_type(cf);
	f->method = sw_crawl_frame_method(cf);
	f->frame = sw_crawl_frame_frame(cf);
	f->offset = sw_crawl_frame_relative_offset(cf);
	if (code) {
		f->has_code = 1;
		f->code = *code;
	}
	if (rd) {
		f->valid = rd->cur.valid;
		memcpy(f->regs, rd->cur.regs, sizeof(f->regs));
		f->ip = sw_context_ip(&rd->cur);
		f->sp = sw_context_sp(&rd->cur);
		f->caller_valid = rd->caller_valid;
		if (rd->caller_valid) {
			f->caller_mask = rd->caller.valid;
			memcpy(f->caller_regs, rd->caller.regs, sizeof(f->caller_regs));
		}
	}
	return SW_CONTINUE;
}

void toyjit_walk_record(const sw_thread *t, unsigned flags, toyjit_walk *w)
{
	w->flags = flags;
	w->n = 0;
	w->result = sw_walk_frames(t, NULL, 0, record_frame, w, flags, &w->err);
}

/* What one reported frame must be. */
struct expect {
	uint32_t state, frame_type;
	const void *method;
	uint64_t frame;             /* Frames: their address */
	int frame_index;            /* managed: 0 = outermost; -1 otherwise */
	uint64_t required;          /* registers that must be known (managed) */
};

struct checker {
	char *msg;
	size_t cap;
	int failed;
};

static void mismatch(struct checker *c, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

static void mismatch(struct checker *c, const char *fmt, ...)
{
	va_list ap;

	if (c->failed++)
		return;
	va_start(ap, fmt);
	if (c->msg && c->cap)
		vsnprintf(c->msg, c->cap, fmt, ap);
	va_end(ap);
}

static int quick_flags(unsigned flags)
{
	return (flags & (SW_WALK_QUICKUNWIND | SW_WALK_LIGHTUNWIND)) != 0;
}

/* Registers a walk must know at frame i (0 = outermost; i = -1: the C caller). */
static uint64_t required_regs(const toyjit *jit, int i, unsigned flags)
{
	int p = jit->run_pinvoke_at;
	uint64_t req = BIT(SW_X64_RBP);

	if (quick_flags(flags))
		return req;
	/* Below the P/Invoke (or with none) the TransitionFrame gave all of them. */
	if (p < 0 || i > p)
		return CALLEE_SAVED;
	/* Above it the InlinedCallFrame gave only rbp; methods i+1 .. p restored theirs. */
	for (int k = i + 1; k <= p; k++)
		req |= toyjit_frame_method(jit, (unsigned)k)->saved_regs;
	return req;
}

static size_t build_expected(const toyjit *jit, unsigned flags, uint64_t head,
                             struct expect *e, size_t cap)
{
	int depth = (int)jit->run_depth, p = jit->run_pinvoke_at;
	int notify = (flags & SW_WALK_NOTIFY_ON_U2M_TRANSITIONS) != 0;
	int fonly = (flags & SW_WALK_FUNCTIONSONLY) != 0;
	size_t n = 0;

#define ADD(st, ty, m, fr, idx) do { \
		if (n < cap) { \
			e[n].state = (st); e[n].frame_type = (ty); e[n].method = (m); \
			e[n].frame = (fr); e[n].frame_index = (idx); \
			e[n].required = (idx) >= 0 ? required_regs(jit, (idx), flags) : 0; \
		} \
		n++; \
	} while (0)

	/* The stub's TransitionFrame has no method: FUNCTIONSONLY hides it. */
	if (!fonly)
		ADD(SW_STATE_FRAME, SW_FRAME_TRANSITION, NULL, head, -1);
	for (int i = depth - 1; i > p; i--)
		ADD(SW_STATE_FRAMELESS, 0, toyjit_frame_method(jit, (unsigned)i), 0, i);
	if (p >= 0) {
		uint64_t icf = (uint64_t)(uintptr_t)((const sw_frame *)(uintptr_t)head)->next;

		if (notify)
			ADD(SW_STATE_NATIVE_MARKER, 0, NULL, 0, -1);
		/* Its datum names the unmanaged target, so FUNCTIONSONLY keeps it. */
		ADD(SW_STATE_FRAME, SW_FRAME_INLINED_CALL, &jit->native_target, icf, -1);
		for (int i = p; i >= 0; i--)
			ADD(SW_STATE_FRAMELESS, 0, toyjit_frame_method(jit, (unsigned)i), 0, i);
	}
	if (notify)
		ADD(SW_STATE_NATIVE_MARKER, 0, NULL, 0, -1);
#undef ADD
	return n;
}

static const char *method_name(const toyjit *jit, const void *m)
{
	const toyjit_method *d = m ? toyjit_method_of(jit, m) : NULL;

	return d ? d->name : m ? "(unknown)" : "-";
}

/* Registers known at a point must hold what the shadow stack (or the caller) recorded. */
static void check_regs(struct checker *c, size_t k, const char *what, uint64_t valid,
                       const uint64_t *regs, uint64_t required, const uint64_t *want,
                       uint64_t compared)
{
	if ((valid & required) != required)
		mismatch(c, "frame %zu: %s: registers %#llx should be known, only %#llx are",
		         k, what, (unsigned long long)required, (unsigned long long)(valid & required));
	for (unsigned r = 0; r < SW_X64_NREGS; r++) {
		if (!(BIT(r) & compared) || !(valid & BIT(r)))
			continue;
		if (regs[r] != want[r])
			mismatch(c, "frame %zu: %s: %s = %#llx, should be %#llx", k, what,
			         sw_arch_reg_name(SW_ARCH_X64, r) ? sw_arch_reg_name(SW_ARCH_X64, r) : "?",
			         (unsigned long long)regs[r], (unsigned long long)want[r]);
	}
}

static void check_managed(struct checker *c, const toyjit *jit, unsigned flags, size_t k,
                          const toyjit_walked *f, const struct expect *e)
{
	const toyjit_shadow_entry *s = &jit->shadow[e->frame_index];
	const toyjit_method *m = s->method;
	uint64_t want[SW_X64_NREGS] = { 0 };

	if (f->method != m) {
		mismatch(c, "frame %zu: method %s, the shadow stack has %s", k,
		         method_name(jit, f->method), m->name);
		return;
	}
	if (!f->has_code || f->code.method != m || f->code.start != m->start || f->code.size != m->size)
		mismatch(c, "frame %zu (%s): code info does not describe the method", k, m->name);
	/* Every managed IP here is a return address in the body. */
	if (f->ip <= m->start + m->prolog_size || f->ip >= m->start + m->size)
		mismatch(c, "frame %zu (%s): ip %#llx outside the method's body [%#llx, %#llx)", k,
		         m->name, (unsigned long long)f->ip,
		         (unsigned long long)(m->start + m->prolog_size),
		         (unsigned long long)(m->start + m->size));
	if (f->offset != f->ip - m->start)
		mismatch(c, "frame %zu (%s): relative offset %u, ip says %llu", k, m->name,
		         f->offset, (unsigned long long)(f->ip - m->start));
	if (!(f->valid & BIT(SW_X64_RSP)) || f->sp != s->sp)
		mismatch(c, "frame %zu (%s): sp %#llx, the method ran with %#llx", k, m->name,
		         (unsigned long long)f->sp, (unsigned long long)s->sp);
	for (unsigned r = 0; r < SW_X64_NREGS; r++)
		want[r] = toyjit_shadow_reg(s, r);
	check_regs(c, k, m->name, f->valid, f->regs, e->required, want,
	           CALLEE_SAVED | BIT(SW_X64_RSP));

	/* The outermost frame's caller is the C caller: its registers must come back. */
	if (e->frame_index == 0 && f->caller_valid)
		check_regs(c, k, "caller of the outermost method", f->caller_mask, f->caller_regs,
		           required_regs(jit, -1, flags), jit->entry_regs, CALLEE_SAVED);
}

sw_status toyjit_walk_check(const toyjit *jit, const toyjit_walk *w,
                            char *msg, size_t cap, unsigned *managed)
{
	/* Static: the helper runs deep in the JIT's stack.  One check at a time. */
	static struct expect exp[TOYJIT_WALK_MAX];
	struct checker c = { msg, cap, 0 };
	uint64_t head = (uint64_t)(uintptr_t)*jit->head;
	size_t nexp, shadow = toyjit_shadow_depth(jit);
	unsigned nmanaged = 0;

	if (msg && cap)
		msg[0] = 0;
	for (size_t k = 0; k < w->n && k < TOYJIT_WALK_MAX; k++)
		nmanaged += w->frames[k].state == SW_STATE_FRAMELESS;
	if (managed)
		*managed = nmanaged;

	if (w->result != SW_CONTINUE) {
		mismatch(&c, "walk %s after %u frames: %s (ip %#llx sp %#llx frame %#llx)",
		         w->result == SW_ABORT ? "aborted" : "failed", w->err.depth,
		         sw_strerror(w->err.status), (unsigned long long)w->err.ip,
		         (unsigned long long)w->err.sp, (unsigned long long)w->err.frame);
		return SW_E_MISMATCH;
	}
	if (shadow != jit->run_depth) {
		mismatch(&c, "shadow stack holds %zu methods, the run has %u", shadow, jit->run_depth);
		return SW_E_MISMATCH;
	}
	nexp = build_expected(jit, w->flags, head, exp, TOYJIT_WALK_MAX);
	for (size_t k = 0; k < w->n && k < nexp && k < TOYJIT_WALK_MAX && !c.failed; k++) {
		const toyjit_walked *f = &w->frames[k];
		const struct expect *e = &exp[k];

		if (f->state != e->state) {
			mismatch(&c, "frame %zu: %s, should be %s", k, toyjit_state_name(f->state),
			         toyjit_state_name(e->state));
			break;
		}
		switch (e->state) {
		case SW_STATE_FRAMELESS:
			check_managed(&c, jit, w->flags, k, f, e);
			break;
		case SW_STATE_FRAME:
			if (f->frame != e->frame || f->frame_type != e->frame_type || f->method != e->method)
				mismatch(&c, "frame %zu: Frame %#llx type %u method %s, should be %#llx type %u method %s",
				         k, (unsigned long long)f->frame, f->frame_type, method_name(jit, f->method),
				         (unsigned long long)e->frame, e->frame_type, method_name(jit, e->method));
			break;
		case SW_STATE_NATIVE_MARKER:
			if (f->method != NULL)
				mismatch(&c, "frame %zu: a native marker with a method", k);
			if (k + 1 == nexp) {
				/* The last marker is the entry thunk, with the registers it loaded. */
				if (!toyjit_is_native(jit, f->ip))
					mismatch(&c, "frame %zu: last native marker at %#llx, not in the entry thunk",
					         k, (unsigned long long)f->ip);
				check_regs(&c, k, "C caller", f->valid, f->regs,
				           required_regs(jit, -1, w->flags), jit->entry_regs, CALLEE_SAVED);
			}
			break;
		default:
			break;
		}
	}
	if (!c.failed && w->n != nexp)
		mismatch(&c, "%zu frames walked, %zu expected", w->n, nexp);
	if (!c.failed && nmanaged != shadow)
		mismatch(&c, "%u managed frames walked, shadow stack has %zu", nmanaged, shadow);
	return c.failed ? SW_E_MISMATCH : SW_OK;
}
