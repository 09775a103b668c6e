/*
 * toyjit_check.c - record a walk of the toy JIT's stack and check it against
 * the shadow stack and the scenario's shape (see toyjit_check.h).
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include "toyjit_check.h"

#define BIT(r) (1ull << (r))

/* Frame indexes that are no managed frame of the chain. */
#define IDX_NONE  (-1)          /* a Frame or a marker */
#define IDX_LEAF  (-2)          /* the leaf method, active on top */

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
	f->ambient_sp = sw_crawl_frame_ambient_sp(cf);
	f->is_funclet = sw_crawl_frame_is_funclet(cf);
	f->is_filter = sw_crawl_frame_is_filter_funclet(cf);
	f->is_parent_of_funclet = sw_crawl_frame_is_parent_of_funclet(cf);
	f->report_gc = sw_crawl_frame_should_report_gc(cf);
	f->trust = (uint32_t)sw_crawl_frame_trust(cf);
	f->no_frame_transition = sw_crawl_frame_is_no_frame_transition(cf);
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

void toyjit_walk_record_from(const sw_thread *t, const sw_context *start, unsigned flags,
                             toyjit_walk *w)
{
	w->flags = flags;
	w->n = 0;
	w->result = sw_walk_frames(t, start, 0, record_frame, w, flags, &w->err);
}

void toyjit_walk_record(const sw_thread *t, unsigned flags, toyjit_walk *w)
{
	toyjit_walk_record_from(t, NULL, flags, w);
}

/* Frames resolved in one batch below: a few KiB of stack, even in a signal handler. */
#define METHODS_BATCH 64

/*
 * A profiler's second half: the IPs sw_backtrace gave, resolved to their
 * methods with sw_codemap_find_batch.  Each must find the code the walk
 * found for its frame, looked up at the IP, or at the byte before it where
 * a return address lies just past a call that ends its method (as the
 * walk looks up return addresses).
 */
static sw_status backtrace_methods_check(const sw_thread *t, const toyjit_walk *w, char *msg, size_t cap)
{
	uint64_t ips[METHODS_BATCH];
	const toyjit_walked *of[METHODS_BATCH];
	sw_code_info found[METHODS_BATCH];
	size_t i = 0;

	while (i < w->n) {
		size_t n = 0;
		sw_status st;

		for (; i < w->n && n < METHODS_BATCH; i++) {
			const toyjit_walked *f = &w->frames[i];

			/* Frames with code from the map: not the frame-pointer stand-in. */
			if ((f->state != SW_STATE_FRAMELESS && f->state != SW_STATE_NATIVE_FRAME) ||
			    !f->has_code || !f->code.unwind)
				continue;
			of[n] = f;
			ips[n++] = f->ip - f->code.start < f->code.size ? f->ip : f->ip - 1;
		}
		if ((st = sw_codemap_find_batch(t->codemap, ips, n, found, NULL)) != SW_OK) {
			snprintf(msg, cap, "sw_codemap_find_batch: %s", sw_strerror(st));
			return SW_E_MISMATCH;
		}
		for (size_t k = 0; k < n; k++) {
			const sw_code_info *want = &of[k]->code;

			if (found[k].method != want->method || found[k].start != want->start ||
			    found[k].size != want->size || found[k].unwind != want->unwind ||
			    found[k].flags != want->flags) {
				snprintf(msg, cap, "sw_codemap_find_batch: ip %#llx found [%#llx, +%#llx), "
				         "the walk's frame [%#llx, +%#llx)", (unsigned long long)ips[k],
				         (unsigned long long)found[k].start, (unsigned long long)found[k].size,
				         (unsigned long long)want->start, (unsigned long long)want->size);
				return SW_E_MISMATCH;
			}
		}
	}
	return SW_OK;
}

sw_status toyjit_backtrace_check(const sw_thread *t, const sw_context *start, const toyjit_walk *w,
                                 sw_walk_cache *cache, char *msg, size_t cap)
{
	uint64_t ip[TOYJIT_WALK_MAX], sp[TOYJIT_WALK_MAX];
	sw_walk_error err;
	size_t k = 0;
	int n;

	if (w->n > TOYJIT_WALK_MAX)
		return SW_OK;           /* not all of it was kept */
	n = sw_backtrace(t, start, 0, w->flags, ip, sp, TOYJIT_WALK_MAX, cache, &err);
	if (n < 0) {
		snprintf(msg, cap, "sw_backtrace: %s", sw_strerror(n));
		return SW_E_MISMATCH;
	}
	for (size_t i = 0; i < w->n; i++) {
		const toyjit_walked *f = &w->frames[i];

		if (f->state != SW_STATE_FRAMELESS && f->state != SW_STATE_NATIVE_FRAME)
			continue;
		if (k == (size_t)n || ip[k] != f->ip || sp[k] != f->sp) {
			snprintf(msg, cap, "sw_backtrace's frame %zu (ip %#llx sp %#llx) is not the walk's "
			         "(ip %#llx sp %#llx)", k, k < (size_t)n ? (unsigned long long)ip[k] : 0,
			         k < (size_t)n ? (unsigned long long)sp[k] : 0, (unsigned long long)f->ip,
			         (unsigned long long)f->sp);
			return SW_E_MISMATCH;
		}
		k++;
	}
	if (k != (size_t)n || memcmp(&err, &w->err, sizeof err) != 0) {
		snprintf(msg, cap, "sw_backtrace gave %d frames with code, ending with %s at depth %u; "
		         "the walk %zu, ending with %s at %u", n, sw_strerror(err.status), err.depth, k,
		         sw_strerror(w->err.status), w->err.depth);
		return SW_E_MISMATCH;
	}
	return backtrace_methods_check(t, w, msg, cap);
}

/* What one reported frame must be. */
struct expect {
	uint32_t state, frame_type;
	const void *method;
	uint64_t frame;             /* Frames: their address */
	int frame_index;            /* managed: 0 = outermost; IDX_NONE, IDX_LEAF */
	int active;                 /* the frame the walk started in */
	uint64_t required;          /* registers that must be known (managed) */
};

/* The scenario at the point the walk started. */
struct scene {
	const toyjit *jit;
	const toyjit_host *host;
	const toyjit_point *pt;
	unsigned flags;
	int top;                    /* index of the newest managed frame of the chain */
	int top_active;             /* it is the active frame (asynchronous, not under the leaf) */
	int leaf;                   /* the leaf is active above it */
	int pinvoke;                /* the P/Invoking frame, or -1 */
	uint64_t tf, icf;           /* the Frames on the list, or 0 */
	int icf_in_call;            /* the InlinedCallFrame's call is in progress */
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

/*
 * Does the walk keep only IP, SP and FP?  As CoreCLR's: QUICKUNWIND does
 * so on x86 alone, LIGHTUNWIND on x64 alone (HAS_LIGHTUNWIND, inc/eetwain.h).
 */
static int quick_flags(unsigned flags, sw_arch arch)
{
	return (flags & SW_WALK_ADDRESSES_ONLY) != 0 ||
	       ((flags & SW_WALK_LIGHTUNWIND) && arch == SW_ARCH_X64) ||
	       ((flags & SW_WALK_QUICKUNWIND) && sw_arch_pointer_size(arch) == 4);
}

/*
 * Registers a walk must know at frame i (0 = outermost; i = -1: the C
 * caller).  From the seed context or the TransitionFrame it has all of them;
 * past the InlinedCallFrame only the frame pointer, plus what the methods
 * between it and frame i restored.
 */
static uint64_t required_regs(const struct scene *s, int i)
{
	int p = s->pinvoke;
	uint64_t req = BIT(s->host->fp_reg);

	if (quick_flags(s->flags, s->host->arch))
		return req;
	if (p < 0 || i > p || s->top <= p)
		return s->host->callee_saved;
	for (int k = i + 1; k <= p; k++)
		req |= toyjit_frame_method(s->jit, (unsigned)k)->saved_regs;
	return req & s->host->callee_saved;
}

/* Work out which frame is active and which Frames are linked. */
static int build_scene(const toyjit *jit, const toyjit_point *pt, unsigned flags,
                       struct scene *s, struct checker *c)
{
	memset(s, 0, sizeof(*s));
	s->jit = jit;
	s->host = toyjit_host_info();
	s->pt = pt;
	s->flags = flags;
	s->pinvoke = jit->run_pinvoke_at;
	if (!pt->pc) {
		/* From the stub: every managed frame is on the shadow stack. */
		s->top = (int)pt->depth - 1;
		s->tf = pt->head;
		if (s->pinvoke >= 0 && s->tf) {
			s->icf = (uint64_t)(uintptr_t)((const sw_frame *)(uintptr_t)s->tf)->next;
			s->icf_in_call = 1;     /* the stub runs inside the P/Invoke */
		}
		if ((size_t)jit->run_depth != pt->depth) {
			mismatch(c, "shadow stack holds %zu methods, the run has %u", pt->depth, jit->run_depth);
			return -1;
		}
		return 0;
	}
	{
		const toyjit_method *m = toyjit_method_at(jit, pt->pc);
		uint32_t off;

		if (!m) {
			mismatch(c, "stopped at %#llx, in no method", (unsigned long long)pt->pc);
			return -1;
		}
		off = (uint32_t)(pt->pc - m->start);
		if (m->leaf) {
			s->leaf = 1;
			s->top = (int)pt->depth - 1;
		} else {
			int pushed = off >= m->shadow_push_end && off < m->shadow_pop_end;

			s->top = pushed ? (int)pt->depth - 1 : (int)pt->depth;
			s->top_active = 1;
			if (toyjit_frame_method(jit, (unsigned)s->top) != m) {
				mismatch(c, "stopped in %s+%#x, but frame %d runs %s", m->name, off, s->top,
				         toyjit_frame_method(jit, (unsigned)s->top)->name);
				return -1;
			}
		}
		s->icf = pt->head;
		s->icf_in_call = pt->head_in_call;
	}
	if (s->icf && (s->pinvoke < 0 || s->top < s->pinvoke)) {
		mismatch(c, "a Frame is linked (%#llx) where the scenario has none",
		         (unsigned long long)s->icf);
		return -1;
	}
	return 0;
}

int toyjit_frame_in_call(uint64_t frame)
{
	const sw_inlined_call_frame *icf = (const sw_inlined_call_frame *)(uintptr_t)frame;

	return icf && icf->base.type == SW_FRAME_INLINED_CALL && icf->return_address != 0;
}

static size_t build_expected(const struct scene *s, struct expect *e, size_t cap)
{
	const toyjit *jit = s->jit;
	int p = s->pinvoke;
	int notify = (s->flags & SW_WALK_NOTIFY_ON_U2M_TRANSITIONS) != 0;
	int fonly = (s->flags & SW_WALK_FUNCTIONSONLY) != 0;
	int skipped_silent = (s->flags & SW_WALK_HANDLESKIPPEDFRAMES) != 0;
	size_t n = 0;

#define ADD(st, ty, m, fr, idx, act) do { \
		if (n < cap) { \
			e[n].state = (st); e[n].frame_type = (ty); e[n].method = (m); \
			e[n].frame = (fr); e[n].frame_index = (idx); e[n].active = (act); \
			e[n].required = (idx) >= 0 ? required_regs(s, (idx)) : 0; \
		} \
		n++; \
	} while (0)

	/* The stub's TransitionFrame has no method: FUNCTIONSONLY hides it. */
	if (s->tf && !fonly)
		ADD(SW_STATE_FRAME, SW_FRAME_TRANSITION, NULL, s->tf, IDX_NONE, 0);
	if (s->leaf)
		ADD(SW_STATE_FRAMELESS, 0, &jit->leaf, 0, IDX_LEAF, 1);
	for (int i = s->top; i >= 0; i--) {
		/*
		 * The P/Invoking method's InlinedCallFrame: a Frame inside it,
		 * reported as skipped before it.  Its method while its call is in
		 * progress, else none (CoreCLR's InlinedCallFrame::GetFunction,
		 * vm/frames.h); FUNCTIONSONLY keeps only a Frame with a method.
		 * When the walk came through it from the native code (the call is
		 * in progress), it was reported as a Frame too, and CoreCLR's
		 * CheckForSkippedFrames reports it again here (vm/stackwalk.cpp).
		 */
		int in_call = s->top > p || s->icf_in_call;

		if (i == p && s->icf && !skipped_silent && (in_call || !fonly))
			ADD(SW_STATE_SKIPPED_FRAME, SW_FRAME_INLINED_CALL,
			    in_call ? &jit->native_target : NULL, s->icf, IDX_NONE, 0);
		ADD(SW_STATE_FRAMELESS, 0, toyjit_frame_method(jit, (unsigned)i), 0, i,
		    i == s->top && s->top_active);
		if (i == p + 1 && p >= 0 && s->top > p) {
			if (notify)
				ADD(SW_STATE_NATIVE_MARKER, 0, NULL, 0, IDX_NONE, 0);
			ADD(SW_STATE_FRAME, SW_FRAME_INLINED_CALL, &jit->native_target, s->icf, IDX_NONE, 0);
		}
	}
	if (notify)
		ADD(SW_STATE_NATIVE_MARKER, 0, NULL, 0, IDX_NONE, 0);
#undef ADD
	return n;
}

static const char *method_name(const toyjit *jit, const void *m)
{
	const toyjit_method *d = m ? toyjit_method_of(jit, m) : NULL;

	return d ? d->name : m ? "(unknown)" : "-";
}

/* Registers known at a point must hold what the shadow stack (or the caller) recorded. */
static void check_regs(struct checker *c, const struct scene *s, size_t k, const char *what,
                       uint64_t valid, const uint64_t *regs, uint64_t required,
                       const uint64_t *want, uint64_t compared)
{
	sw_arch arch = s->host->arch;

	if ((valid & required) != required)
		mismatch(c, "frame %zu: %s: registers %#llx should be known, only %#llx are",
		         k, what, (unsigned long long)required, (unsigned long long)(valid & required));
	for (unsigned r = 0; r < SW_MAX_REGS; r++) {
		if (!(BIT(r) & compared) || !(valid & BIT(r)))
			continue;
		if (regs[r] != want[r])
			mismatch(c, "frame %zu: %s: %s = %#llx, should be %#llx", k, what,
			         sw_arch_reg_name(arch, r) ? sw_arch_reg_name(arch, r) : "?",
			         (unsigned long long)regs[r], (unsigned long long)want[r]);
	}
}

static void check_code(struct checker *c, size_t k, const toyjit_walked *f, const toyjit_method *m)
{
	if (!f->has_code || f->code.method != m || f->code.start != m->start || f->code.size != m->size)
		mismatch(c, "frame %zu (%s): code info does not describe the method", k, m->name);
	/*
	 * From the method's start; a funclet's from its parent's, which the
	 * toy JIT emits just below it (CoreCLR's EECodeInfo::GetRelOffset,
	 * vm/codeman.h; sw_crawl_frame(3)).
	 */
	uint64_t base = (m->code_flags & SW_CODE_FUNCLET) && m->parent ? m->parent->start : m->start;

	if (f->offset != f->ip - base)
		mismatch(c, "frame %zu (%s): relative offset %u, ip says %llu", k, m->name,
		         f->offset, (unsigned long long)(f->ip - base));
}

/* The active frame: where the code stopped, with the SP it had. */
static void check_active(struct checker *c, const struct scene *s, size_t k,
                         const toyjit_walked *f, const toyjit_method *m)
{
	if (f->method != m) {
		mismatch(c, "frame %zu: method %s, stopped in %s", k, method_name(s->jit, f->method), m->name);
		return;
	}
	check_code(c, k, f, m);
	if (f->ip != s->pt->pc || f->sp != s->pt->sp)
		mismatch(c, "frame %zu (%s): ip %#llx sp %#llx, stopped at %#llx sp %#llx", k, m->name,
		         (unsigned long long)f->ip, (unsigned long long)f->sp,
		         (unsigned long long)s->pt->pc, (unsigned long long)s->pt->sp);
}

static void check_managed(struct checker *c, const struct scene *s, size_t k,
                          const toyjit_walked *f, const struct expect *e)
{
	const toyjit *jit = s->jit;
	const toyjit_host *h = s->host;
	const toyjit_shadow_entry *se;
	const toyjit_method *m;
	const toyjit_call_site *cs;
	uint64_t want[SW_MAX_REGS] = { 0 };

	if (e->frame_index == IDX_LEAF) {
		check_active(c, s, k, f, &jit->leaf);
		return;
	}
	m = toyjit_frame_method(jit, (unsigned)e->frame_index);
	if (e->active) {
		check_active(c, s, k, f, m);
		return;
	}
	se = &s->pt->shadow[e->frame_index];
	if (se->method != m) {
		mismatch(c, "frame %zu: the shadow stack has %s where the run has %s", k,
		         se->method ? se->method->name : "-", m->name);
		return;
	}
	if (f->method != m) {
		mismatch(c, "frame %zu: method %s, the shadow stack has %s", k,
		         method_name(jit, f->method), m->name);
		return;
	}
	check_code(c, k, f, m);
	/* Every other managed IP is a return address: one of the method's call sites. */
	cs = toyjit_call_site_at(m, f->ip);
	if (!cs) {
		mismatch(c, "frame %zu (%s): ip %#llx (+%#llx) is no call site of the method", k,
		         m->name, (unsigned long long)f->ip, (unsigned long long)(f->ip - m->start));
		return;
	}
	if (!(f->valid & BIT(h->sp_reg)) || f->sp != se->sp - cs->args)
		mismatch(c, "frame %zu (%s): sp %#llx, the method ran with %#llx (%u argument bytes pushed)",
		         k, m->name, (unsigned long long)f->sp, (unsigned long long)(se->sp - cs->args),
		         cs->args);
	/*
	 * The ambient SP (CoreCLR's GetAmbientSPFromCrawlFrame: on x86 the
	 * body's SP with no arguments pushed, GetAmbientSP in eetwain.cpp;
	 * nothing on x86-64 and arm64) is what the body wrote in its shadow
	 * entry, whatever the call site has pushed.
	 */
	{
		uint64_t ambient = h->arch == SW_ARCH_X86 ? se->sp : 0;

		if (f->ambient_sp != ambient)
			mismatch(c, "frame %zu (%s): ambient sp %#llx, the body ran with %#llx", k,
			         m->name, (unsigned long long)f->ambient_sp, (unsigned long long)ambient);
	}
	for (unsigned r = 0; r < SW_MAX_REGS; r++)
		want[r] = toyjit_shadow_reg(se, r);
	check_regs(c, s, k, m->name, f->valid, f->regs, e->required, want, h->callee_saved);

	/* The outermost frame's caller is the C caller: its registers must come back. */
	if (e->frame_index == 0 && f->caller_valid)
		check_regs(c, s, k, "caller of the outermost method", f->caller_mask, f->caller_regs,
		           required_regs(s, -1), jit->entry_regs, h->callee_saved);
}

static void check_frames(struct checker *c, const struct scene *s, const toyjit_walk *w,
                         const struct expect *exp, size_t nexp)
{
	for (size_t k = 0; k < w->n && k < nexp && k < TOYJIT_WALK_MAX && !c->failed; k++) {
		const toyjit_walked *f = &w->frames[k];
		const struct expect *e = &exp[k];

		if (f->state != e->state) {
			mismatch(c, "frame %zu: %s, should be %s", k, toyjit_state_name(f->state),
			         toyjit_state_name(e->state));
			break;
		}
		switch (e->state) {
		case SW_STATE_FRAMELESS:
			check_managed(c, s, k, f, e);
			break;
		case SW_STATE_FRAME:
		case SW_STATE_SKIPPED_FRAME:
			if (f->frame != e->frame || f->frame_type != e->frame_type || f->method != e->method)
				mismatch(c, "frame %zu: Frame %#llx type %u method %s, should be %#llx type %u method %s",
				         k, (unsigned long long)f->frame, f->frame_type,
				         method_name(s->jit, f->method), (unsigned long long)e->frame,
				         e->frame_type, method_name(s->jit, e->method));
			break;
		case SW_STATE_NATIVE_MARKER:
			if (f->method != NULL)
				mismatch(c, "frame %zu: a native marker with a method", k);
			if (k + 1 == nexp) {
				/* The last marker is the entry thunk, with the registers it loaded. */
				if (!toyjit_is_native(s->jit, f->ip))
					mismatch(c, "frame %zu: last native marker at %#llx, not in the entry thunk",
					         k, (unsigned long long)f->ip);
				check_regs(c, s, k, "C caller", f->valid, f->regs, required_regs(s, -1),
				           s->jit->entry_regs, s->host->callee_saved);
			}
			break;
		default:
			break;
		}
	}
}

sw_status toyjit_walk_check_at(const toyjit *jit, const toyjit_point *pt, const toyjit_walk *w,
                               char *msg, size_t cap, unsigned *managed)
{
	/* Static: the helper runs deep in the JIT's stack.  One check at a time. */
	static struct expect exp[TOYJIT_WALK_MAX];
	struct checker c = { msg, cap, 0 };
	struct scene s;
	size_t nexp, want_managed;
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
	if (!toyjit_host_info() || build_scene(jit, pt, w->flags, &s, &c) != 0)
		return SW_E_MISMATCH;
	nexp = build_expected(&s, exp, TOYJIT_WALK_MAX);
	check_frames(&c, &s, w, exp, nexp);
	want_managed = (size_t)(s.top + 1) + (size_t)s.leaf;
	if (!c.failed && w->n != nexp)
		mismatch(&c, "%zu frames walked, %zu expected", w->n, nexp);
	if (!c.failed && nmanaged != want_managed)
		mismatch(&c, "%u managed frames walked, %zu expected", nmanaged, want_managed);
	return c.failed ? SW_E_MISMATCH : SW_OK;
}

sw_status toyjit_walk_check(const toyjit *jit, const toyjit_walk *w,
                            char *msg, size_t cap, unsigned *managed)
{
	toyjit_point pt;

	memset(&pt, 0, sizeof(pt));
	pt.shadow = jit->shadow;
	pt.depth = toyjit_shadow_depth(jit);
	pt.head = (uint64_t)(uintptr_t)*jit->head;
	pt.head_in_call = toyjit_frame_in_call(pt.head);
	return toyjit_walk_check_at(jit, &pt, w, msg, cap, managed);
}
