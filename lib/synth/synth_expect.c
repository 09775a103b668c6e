/*
 * synth_expect.c - the frames a correct walk of a synthetic stack reports.
 *
 * This replays the CLR's walk rules (managed frame, skipped Frames, native
 * marker, Frame processing, exception trackers, stale Frames below SP) over
 * what the generator's model machine recorded.  Register values come from the machine's records, never from
 * the stack image or an SWU blob.  The arch table names IP, SP, the frame
 * register and the callee-saved set; the rules are the same on every arch.
 */
#include <stdlib.h>
#include "array_grow.h"
#include "synth_internal.h"
#include "util.h"

/* A register context with the target address each value came from. */
struct expect_regs {
	uint64_t valid;
	uint64_t regs[SWI_SYNTH_NREGS];
	uint64_t locs[SWI_SYNTH_NREGS];
};

struct expect {
	const sw_synth *s;
	const struct swi_synth_arch *a;
	unsigned flags;
	sw_synth_frame *out;
	size_t cap, n;
	int consistent;
	struct swi_synth_roots *roots;  /* or NULL */
	/* The funclet rules (see sw_walk_frames(3)), as the walk keeps them. */
	void *skip_to_parent;           /* nothing is reported until this parent */
	void *funclet_parent;           /* the parent to flag when it is reached */
	int funclet_was_filter;
};

void swi_synth_roots_free(struct swi_synth_roots *r)
{
	free(r->roots);
	free(r->frames);
	memset(r, 0, sizeof *r);
}

/* Frame number e->n - 1 was just reported: it has no roots yet. */
static void roots_frame(struct expect *e)
{
	struct swi_synth_roots *r = e->roots;

	if (!r || r->nomem)
		return;
	if (swi_array_grow((void **)&r->frames, &r->frames_cap, r->nframes + 1,
	                   sizeof *r->frames) != SW_OK) {
		r->nomem = 1;
		return;
	}
	r->frames[r->nframes].first = r->nroots;
	r->frames[r->nframes].count = 0;
	r->frames[r->nframes].status = SW_OK;
	r->nframes++;
}

static void add_root(struct expect *e, uint64_t addr, uint64_t value, uint32_t reg, uint32_t flags)
{
	struct swi_synth_roots *r = e->roots;

	if (!r || r->nomem || !r->nframes)
		return;
	if (swi_array_grow((void **)&r->roots, &r->roots_cap, r->nroots + 1,
	                   sizeof *r->roots) != SW_OK) {
		r->nomem = 1;
		return;
	}
	r->roots[r->nroots].addr = addr;
	r->roots[r->nroots].value = value;
	r->roots[r->nroots].reg = reg;
	r->roots[r->nroots].flags = flags;
	r->nroots++;
	r->frames[r->nframes - 1].count++;
}

/* The enumeration of the frame just reported fails with st: its roots do not count. */
static void roots_fail(struct expect *e, sw_status st)
{
	struct swi_synth_roots *r = e->roots;

	if (!r || r->nomem || !r->nframes)
		return;
	r->nroots = r->frames[r->nframes - 1].first;
	r->frames[r->nframes - 1].count = 0;
	r->frames[r->nframes - 1].status = st;
}

const struct swi_synth_method *swi_synth_method_at(const sw_synth *s, uint64_t addr)
{
	size_t at;

	/* Methods are generated at ascending addresses: the first that ends past addr may hold it. */
	SWI_SEARCH(at, s->nmethods, mid, addr - s->methods[mid].start >= s->methods[mid].size &&
	                                 addr >= s->methods[mid].start);
	return at < s->nmethods && addr >= s->methods[at].start ? &s->methods[at] : NULL;
}

const char *swi_synth_state_name(uint32_t state)
{
	return sw_frame_state_name((sw_frame_state)state);
}

/* A return address is managed when the call instruction before it is. */
static int managed_return(const sw_synth *s, uint64_t ra)
{
	return ra != 0 && swi_synth_method_at(s, ra - 1) != NULL;
}

/*
 * Report a frame: the next one in out[], or only counted.  Between a
 * funclet and its parent nothing is, unless `decided` (managed frames,
 * which the funclet rules judge).
 */
static sw_synth_frame *emit(struct expect *e, uint32_t state, int decided, int *reported)
{
	sw_synth_frame *f;

	*reported = 0;
	if (e->skip_to_parent && !decided)
		return NULL;
	f = e->n < e->cap ? &e->out[e->n] : NULL;
	e->n++;
	*reported = 1;
	roots_frame(e);
	if (f) {
		memset(f, 0, sizeof *f);
		f->state = state;
		f->should_report_gc = 1;
	}
	return f;
}

static void emit_frame(struct expect *e, const struct swi_synth_fr *fr, uint32_t state)
{
	sw_synth_frame *f;
	int reported;

	if ((e->flags & SW_WALK_FUNCTIONSONLY) && !fr->method)
		return;
	f = emit(e, state, 0, &reported);
	if (f) {
		f->frame_type = fr->type;
		f->method = (void *)(uintptr_t)fr->method;
		f->frame = fr->addr;
	}
	/* TransitionFrames and HelperMethodFrames protect their argument slots. */
	for (unsigned i = 0; reported && i < fr->nprotected; i++)
		add_root(e, fr->protected_slot[i], fr->protected_value[i], ~0u, 0);
}

static void emit_native(struct expect *e, uint32_t state, const struct expect_regs *cur)
{
	int reported;
	sw_synth_frame *f = emit(e, state, 0, &reported);

	if (f) {
		f->ip = cur->regs[e->a->ip];
		f->sp = cur->regs[e->a->sp];
	}
}

/* An exception tracker's transition (NO_FRAME_TRANSITION): the tracker and where the walk is. */
static void emit_tracker(struct expect *e, const struct swi_synth_fr *t, const struct expect_regs *cur)
{
	int reported;
	sw_synth_frame *f = emit(e, SW_STATE_NO_FRAME_TRANSITION, 0, &reported);

	if (f) {
		f->frame = t->addr;
		f->ip = cur->regs[e->a->ip];
		f->sp = cur->regs[e->a->sp];
	}
}

/*
 * The funclet rules for a managed frame of method m: returns whether it is
 * reported; *parent_of and *no_gc say whether it is the parent of a funclet
 * walked below and whether it then reports no roots.
 */
static int funclet_rules(struct expect *e, const struct swi_synth_method *m, int *parent_of,
                         int *no_gc)
{
	unsigned hide = SW_WALK_SKIPFUNCLETS | SW_WALK_FUNCTIONSONLY;
	unsigned skippers = hide | SW_WALK_GC_FUNCLET_REFERENCE_REPORTING;

	*parent_of = *no_gc = 0;
	if (m->code_flags & SW_CODE_FUNCLET) {
		int filter = (m->code_flags & SW_CODE_FILTER) != 0;
		void *parent = e->s->methods[m->parent].handle;

		/* Inside a region already skipped, a funclet is as dead as the rest. */
		if (e->skip_to_parent)
			return 0;
		e->funclet_parent = parent;
		e->funclet_was_filter = filter;
		/*
		 * A handler's callees are dead; a filter's still live, and a filter
		 * is reported even when handlers are hidden (CoreCLR's
		 * FindParentStackFrameForStackWalk gives no parent to skip to).
		 */
		if (!filter && (e->flags & skippers))
			e->skip_to_parent = parent;
		return filter || !(e->flags & hide);
	}
	if (e->funclet_parent && m->handle == e->funclet_parent) {
		*parent_of = 1;
		*no_gc = (e->flags & SW_WALK_GC_FUNCLET_REFERENCE_REPORTING) && !e->funclet_was_filter;
		e->funclet_parent = NULL;
		if (e->skip_to_parent == m->handle)
			e->skip_to_parent = NULL;
	}
	return !e->skip_to_parent;
}

/*
 * A managed frame's roots: each location its GC table says is live at the
 * offset CoreCLR reports (vm/eetwain.cpp, EECodeManager::EnumGcRefs, with
 * the flags of vm/stackwalk.h, CrawlFrame::GetCodeManagerFlags): the active
 * frame's own offset; a frame that faulted, its own; any other frame, the
 * one before its return address, inside the call.  A slot at CFA + offset
 * holds what the generator stored; a register is reported where the walk
 * restored it from (or an error if it lost it), and a scratch register
 * only in the active frame (GcInfoDecoder's reportScratchSlots).
 */
static void managed_roots(struct expect *e, const struct swi_synth_inst *in,
                          const struct expect_regs *cur, const unsigned marks[3])
{
	const struct swi_synth_method *m = &e->s->methods[in->method];
	int active = marks[0] != 0, at_call = !marks[0] && !marks[2];
	uint32_t off = in->offset;

	if (at_call && off == 0) {
		roots_fail(e, SW_E_BADIP);
		return;
	}
	off -= (uint32_t)at_call;
	for (unsigned k = 0; k < m->ngc; k++) {
		const struct swi_synth_gc *gc = &m->gc[k];

		if (!swi_synth_gc_live(gc, off))
			continue;
		if (gc->in_reg && !active && !(e->a->callee_saved & SWI_BIT(gc->reg)))
			continue;
		if (!gc->in_reg) {
			add_root(e, in->cfa + (uint64_t)(int64_t)gc->cfa_offset, in->gc_value[k], ~0u,
			         gc->flags);
			continue;
		}
		if (!(cur->valid & SWI_BIT(gc->reg))) {
			roots_fail(e, SW_E_NOREG);
			return;
		}
		if (cur->regs[gc->reg] != in->regs[gc->reg])
			e->consistent = 0;
		add_root(e, cur->locs[gc->reg], cur->regs[gc->reg], gc->reg, gc->flags);
	}
}

static void emit_managed(struct expect *e, const struct swi_synth_inst *in,
                         const struct expect_regs *cur, const unsigned marks[3])
{
	const struct swi_synth_method *m = &e->s->methods[in->method];
	int parent_of, no_gc, reported;
	sw_synth_frame *f;

	if (!funclet_rules(e, m, &parent_of, &no_gc))
		return;
	f = emit(e, SW_STATE_FRAMELESS, 1, &reported);
	if (reported && !no_gc)
		managed_roots(e, in, cur, marks);
	if (!f)
		return;
	f->is_funclet = (m->code_flags & SW_CODE_FUNCLET) != 0;
	f->is_filter_funclet = (m->code_flags & SW_CODE_FILTER) != 0;
	f->is_parent_of_funclet = (uint32_t)parent_of;
	f->should_report_gc = !no_gc;
	f->method = m->handle;
	f->ip = cur->regs[e->a->ip];
	f->sp = cur->regs[e->a->sp];
	f->is_first = marks[0];
	f->is_interrupted = marks[1];
	f->has_faulted = marks[2];
	f->valid = cur->valid & swi_synth_compared(e->a);
	for (unsigned r = 0; r < e->a->nregs; r++) {
		if (f->valid & SWI_BIT(r)) {
			f->regs[r] = cur->regs[r];
			f->locs[r] = cur->locs[r];
		}
	}
}

/*
 * Unwind one managed frame: the caller's IP from the return address (its
 * slot, or the link register), its SP from the CFA, each callee-saved
 * register the method still has in a slot from there, every other one
 * passed through (or, quick, dropped but the frame register), floating-point
 * ones as the others (swi_kept_registers).
 */
static void unwind(struct expect *e, const struct swi_synth_inst *in,
                   const struct expect_regs *cur, struct expect_regs *caller)
{
	const struct swi_synth_arch *a = e->a;
	int quick = swi_walk_addresses_only(e->flags, swi_arch_get(a->arch));

	memset(caller, 0, sizeof *caller);
	caller->valid = SWI_BIT(a->ip) | SWI_BIT(a->sp);
	caller->regs[a->ip] = in->ra;
	/* An RA still in the link register comes from wherever lr did. */
	caller->locs[a->ip] = in->ra_loc ? in->ra_loc : (a->lr >= 0 ? cur->locs[a->lr] : 0);
	caller->regs[a->sp] = in->cfa;
	for (unsigned r = 0; r < a->nregs; r++) {
		uint64_t bit = SWI_BIT(r);

		if (!(a->callee_saved & bit) || (quick && r != a->fp))
			continue;
		if (in->saved_at[r]) {
			caller->regs[r] = in->caller_regs[r];
			caller->locs[r] = in->saved_at[r];
			caller->valid |= bit;
			continue;
		}
		/* Not saved: still the caller's value in the register. */
		if (in->regs[r] != in->caller_regs[r])
			e->consistent = 0;
		if (cur->valid & bit) {
			if (cur->regs[r] != in->regs[r])
				e->consistent = 0;
			caller->regs[r] = cur->regs[r];
			caller->locs[r] = cur->locs[r];
			caller->valid |= bit;
		}
	}
}

static void context_from_frame(const struct swi_synth_fr *fr, struct expect_regs *cur)
{
	memset(cur, 0, sizeof *cur);
	cur->valid = fr->valid;
	memcpy(cur->regs, fr->regs, sizeof cur->regs);
	memcpy(cur->locs, fr->locs, sizeof cur->locs);
}

/* The walk must stop with st at the Frame fr, having reported e->n frames. */
static void expect_failure(const struct expect *e, sw_walk_error *err, sw_status st,
                           const struct swi_synth_fr *fr, const struct expect_regs *cur)
{
	unsigned ip = e->a->ip, sp = e->a->sp;

	err->status = st;
	err->depth = (uint32_t)e->n;
	err->ip = (cur->valid & SWI_BIT(ip)) ? cur->regs[ip] : 0;
	err->sp = (cur->valid & SWI_BIT(sp)) ? cur->regs[sp] : 0;
	err->frame = fr->addr;
}

size_t swi_synth_expect(const sw_synth *s, unsigned flags, sw_synth_frame *out,
                        size_t cap, int *consistent, struct swi_synth_roots *roots,
                        sw_walk_error *err)
{
	struct expect e = { s, s->a, flags, out, cap, 0, 1, roots, NULL, NULL, 0 };
	const unsigned ip = s->a->ip, sp = s->a->sp;
	struct expect_regs cur, caller;
	sw_walk_error end;
	unsigned fi = 0, ii = 0, ti = 0;
	unsigned marks[3] = { 0, 0, 0 };   /* is_first, is_interrupted, has_faulted */
	int managed;

	memset(&end, 0, sizeof end);
	memset(&cur, 0, sizeof cur);
	cur.valid = s->ctx.valid;
	memcpy(cur.regs, s->ctx.regs, sizeof cur.regs);

	managed = !s->native_seed;
	if (swi_synth_method_at(s, cur.regs[ip]) == NULL) {
		if (managed)
			e.consistent = 0;
		if (flags & SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT)
			emit_native(&e, SW_STATE_INITIAL_NATIVE, &cur);
	} else {
		marks[0] = 1;
	}

	for (;;) {
		if (managed) {
			const struct swi_synth_inst *in;
			uint64_t caller_sp;

			if (ii >= s->ninsts || s->insts[ii].ip != cur.regs[ip] ||
			    s->insts[ii].sp != cur.regs[sp]) {
				e.consistent = 0;
				break;
			}
			in = &s->insts[ii++];
			caller_sp = in->cfa;
			/* Trackers inside this frame or deeper: their exceptions are gone, silently. */
			for (; ti < s->ntrackers && s->trackers[ti].addr < caller_sp; ti++)
				if (!s->trackers[ti].stale)
					e.consistent = 0;
			/* Frames inside this method's frame: skipped Frames. */
			for (; fi < s->nframes && s->frames[fi].addr < caller_sp; fi++) {
				/*
				 * An active InlinedCallFrame that led here is
				 * reported again (CoreCLR's CheckForSkippedFrames).
				 */
				if (flags & SW_WALK_HANDLESKIPPEDFRAMES)
					continue;
				emit_frame(&e, &s->frames[fi], SW_STATE_SKIPPED_FRAME);
			}
			emit_managed(&e, in, &cur, marks);
			marks[0] = marks[1] = marks[2] = 0;
			unwind(&e, in, &cur, &caller);
			cur = caller;
			if (cur.regs[ip] == 0)
				break;
			if (managed_return(s, cur.regs[ip]))
				continue;
			if (flags & SW_WALK_NOTIFY_ON_U2M_TRANSITIONS)
				emit_native(&e, SW_STATE_NATIVE_MARKER, &cur);
			managed = 0;
			continue;
		}
		/* An exception tracker nearer the top than the next Frame comes first. */
		if (ti < s->ntrackers && (fi >= s->nframes || s->trackers[ti].addr < s->frames[fi].addr)) {
			const struct swi_synth_fr *t = &s->trackers[ti++];

			if (t->stale || !swi_synth_method_at(s, t->ra) || t->regs[sp] < cur.regs[sp])
				e.consistent = 0;
			if (flags & SW_WALK_NOTIFY_ON_NO_FRAME_TRANSITIONS)
				emit_tracker(&e, t, &cur);
			/* The faulted frame: interrupted, faulted, at its exact IP. */
			context_from_frame(t, &cur);
			marks[0] = 0;
			marks[1] = marks[2] = 1;
			managed = 1;
			continue;
		}
		/* Frames: the next one holds the state where managed code resumes. */
		if (fi >= s->nframes)
			break;
		{
			const struct swi_synth_fr *fr = &s->frames[fi];

			int exact;

			/* Below SP: a Frame that should have been popped. */
			if ((cur.valid & SWI_BIT(sp)) && fr->addr < cur.regs[sp]) {
				if (!fr->stale)
					e.consistent = 0;
				if (flags & SW_WALK_DISABLE_MISSING_FRAME_DETECTION) {
					fi++;
					continue;
				}
				expect_failure(&e, &end, SW_E_BADFRAME, fr, &cur);
				break;
			}
			if (fr->stale)
				e.consistent = 0;
			emit_frame(&e, fr, SW_STATE_FRAME);
			marks[0] = (fr->attributes & SW_FRAME_ATTR_RESUMABLE) != 0;
			marks[1] = (fr->attributes & SW_FRAME_ATTR_EXCEPTION) != 0;
			marks[2] = marks[1] && (fr->attributes & SW_FRAME_ATTR_FAULTED) != 0;
			/* An active or interrupted frame's IP is exact, not a return address. */
			exact = marks[0] || marks[1];
			if (exact ? fr->ra && swi_synth_method_at(s, fr->ra) : managed_return(s, fr->ra)) {
				/* CoreCLR's NextRaw: a RESUMABLE Frame into managed code fails a suspended walk. */
				if (marks[0] && (flags & SW_WALK_THREAD_IS_SUSPENDED)) {
					expect_failure(&e, &end, SW_E_UNSAFE, fr, &cur);
					break;
				}
				context_from_frame(fr, &cur);
				/* An InlinedCallFrame stays current until its method. */
				if (fr->type != SW_FRAME_INLINED_CALL)
					fi++;
				managed = 1;
			} else {
				fi++;
			}
		}
	}
	/* A complete walk passes every managed frame, every Frame and every tracker. */
	if (end.status == SW_OK && (ii != s->ninsts || fi != s->nframes || ti != s->ntrackers))
		e.consistent = 0;
	if (end.status == SW_OK)
		end.depth = (uint32_t)e.n;
	if (consistent)
		*consistent = e.consistent;
	if (err)
		*err = end;
	return e.n;
}
