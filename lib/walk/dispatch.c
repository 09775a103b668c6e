/*
 * dispatch.c - sw_exception_dispatch: CoreCLR's two-pass exception
 * dispatch over the iterator (sw_iter), and the tracker that shows other
 * walks how far it has gone.
 *
 * The passes follow ExceptionHandling.cs (shared by NativeAOT and, since
 * .NET 9, CoreCLR): DispatchEx drives them, FindFirstPassHandler tries a
 * frame's clauses in the first, InvokeSecondPass runs a frame's finally
 * and fault funclets in the second.  Each pass is a walk of its own with
 * the ordinary iterator: this file never steps a frame itself.
 *
 * A throw out of a funclet is another dispatch, called from inside it:
 * the iterator takes its walks from the funclet to the older tracker's
 * frame, and this file finds that frame by the tracker's record and
 * starts its clauses after the older tracker's clause (collided(),
 * skip_clause()).
 */
#include <string.h>
#include "util.h"
#include "arch.h"
#include "frames_internal.h"
#include <stackwalk/dispatch.h>

/* Tracker layout (dispatch.h): fixed offsets past the two pointer fields. */
#define TRACKER_EXCEPTION 16
#define TRACKER_PASS      24
#define TRACKER_CLAUSE    28
#define TRACKER_RECORD    SW_TRACKER_DISPATCH_RECORD

struct dispatch {
	const sw_thread *t;
	const struct swi_arch *a;
	const sw_exception_ops *ops;
	void *data;
	uint64_t exception;
	uint64_t tracker;
	uint32_t pass;
	sw_status st;               /* the first error a clause callback met */
	/* The frame being searched or unwound. */
	sw_eh_site site;
	/* First pass: the handling clause, once found. */
	int found;
	uint32_t found_index;
	uint64_t found_sp;          /* the handling frame's SP: a frame is known by it (handlingFrameSP) */
	sw_eh_clause found_clause;
	/* Second pass: in the handling frame, only clauses before the catching one run. */
	uint32_t limit;
	/*
	 * Nested exceptions.  `older` is the newest tracker linked before
	 * this dispatch's (0: none), `depth` how many there were.  In the
	 * frame an older dispatch stands at (a collided frame), clauses up
	 * to `start_idx` and those protecting the same try as it are passed
	 * over (SW_TRACKER_NO_CLAUSE: none); `last_try_*` the last passed.
	 * `escaped`: the first pass reached the frame of a dispatch still in
	 * its first pass, the one whose filter threw.
	 */
	uint64_t older;
	unsigned depth;
	uint32_t start_idx;
	uint32_t last_try_start, last_try_end;
	int escaped;
};

/* Write the tracker's fields through the thread's memory; in-process, plain stores. */
static sw_status tracker_put32(const struct dispatch *d, unsigned off, uint32_t v)
{
	unsigned char b[4];

	swi_store_le(b, 4, v);
	return sw_memory_write(d->t->memory, d->tracker + off, b, 4);
}

static sw_status tracker_init(const struct dispatch *d, uint64_t next)
{
	unsigned char b[8];
	sw_status st;

	swi_store_le(b, 8, d->exception);
	if ((st = swi_write_ptr(d->t->memory, d->a->ptr_size, d->tracker, next)) != SW_OK ||
	    (st = swi_write_ptr(d->t->memory, d->a->ptr_size, d->tracker + d->a->ptr_size, 0)) != SW_OK ||
	    (st = sw_memory_write(d->t->memory, d->tracker + TRACKER_EXCEPTION, b, 8)) != SW_OK ||
	    (st = tracker_put32(d, TRACKER_CLAUSE, SW_TRACKER_NO_CLAUSE)) != SW_OK)
		return st;
	return tracker_put32(d, TRACKER_PASS, d->pass);
}

/*
 * The frame the dispatch stands at, for walks from its funclets: the
 * record holds its registers, at a call unless it faulted there or is the
 * throw's own frame (CoreCLR's ExInfo keeps the same in m_frameIter).
 * The record is written before the address is published.
 */
static sw_status tracker_at(const struct dispatch *d, const sw_context *regs, int at_call)
{
	uint64_t record = d->tracker + TRACKER_RECORD;
	unsigned char b[16];
	sw_status st;

	/* Only the registers the mask names are ever read: a frame has a handful. */
	for (uint64_t m = regs->valid & (SW_MAX_REGS < 64 ? (1ULL << SW_MAX_REGS) - 1 : ~0ULL);
	     m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		swi_store_le(b, 8, regs->regs[r]);
		if ((st = sw_memory_write(d->t->memory, record + 16 + 8 * (uint64_t)r, b, 8)) != SW_OK)
			return st;
	}
	swi_store_le(b, 4, regs->arch);
	swi_store_le(b + 4, 4, 0);
	swi_store_le(b + 8, 8, regs->valid);
	if ((st = sw_memory_write(d->t->memory, record, b, sizeof b)) != SW_OK ||
	    (st = tracker_put32(d, TRACKER_PASS, d->pass)) != SW_OK)
		return st;
	return swi_write_ptr(d->t->memory, d->a->ptr_size, d->tracker + d->a->ptr_size,
	                     record | SW_TRACKER_DISPATCH | (at_call ? SW_TRACKER_AT_CALL : 0));
}

/*
 * The handling frame's registers, read back from the tracker's record
 * after the catch funclet ran: a GC inside it found the frame through the
 * tracker and updated the references it holds there, as CoreCLR's GC
 * updates the ExInfo's context through its frame iterator's register
 * display before ResumeAtCatch reads it.
 */
static sw_status tracker_resume_regs(const struct dispatch *d, sw_context *out)
{
	unsigned char b[16 + 8 * SW_MAX_REGS];
	sw_status st;

	if ((st = sw_memory_read(d->t->memory, d->tracker + TRACKER_RECORD, b, sizeof b)) != SW_OK)
		return st;
	sw_context_init(out, d->t->arch);
	out->valid = swi_load_le(b + 8, 8) & d->site.regs->valid;
	for (unsigned r = 0; r < SW_MAX_REGS; r++)
		out->regs[r] = (out->valid >> r) & 1 ? swi_load_le(b + 16 + 8 * r, 8) : 0;
	return SW_OK;
}

/*
 * The older trackers, newest first: each must lie higher on the stack
 * than the one before (the list ascends, as Frames do), and there may be
 * no more than SW_EXCEPTION_MAX_NESTING of them, so a chain of nested
 * throws, or garbage, ends in an error, not in a walk of unbounded
 * length.  `*next` receives the tracker after `tr`.
 */
static sw_status older_next(const struct dispatch *d, uint64_t tr, uint64_t *next)
{
	unsigned p = d->a->ptr_size;
	sw_status st;

	if ((tr & (p - 1)) || tr < d->t->stack_lo || tr > d->t->stack_hi - 2 * p)
		return SW_E_BADFRAME;
	if ((st = swi_read_ptr(d->t->memory, p, tr, next)) != SW_OK)
		return st;
	if (*next != 0 && *next <= tr)
		return SW_E_FRAMECYCLE;
	return SW_OK;
}

static sw_status count_older(struct dispatch *d)
{
	uint64_t tr = d->older;
	sw_status st;

	for (d->depth = 0; tr != 0; d->depth++) {
		if (d->depth >= SW_EXCEPTION_MAX_NESTING)
			return SW_E_LIMIT;
		if ((st = older_next(d, tr, &tr)) != SW_OK)
			return st;
	}
	return SW_OK;
}

/*
 * Is the frame at `regs` the one an older dispatch stands at?  That is
 * where a walk out of one of its funclets goes on (the iterator skips to
 * the tracker's record, past the funclet's callers and the frames that
 * dispatch unwound): CoreCLR's collided unwind, where the
 * StackFrameIterator reaches the older ExInfo, goes on from its frame
 * iterator and hands DispatchEx its _idxCurClause as the frame's
 * idxStart (ExceptionHandling.cs, DispatchEx; RhRethrow rethrows the
 * same way, from the catch funclet).  *pass receives that dispatch's pass
 * (0: none), *clause the clause whose funclet runs.
 */
static sw_status collided(const struct dispatch *d, const sw_context *regs, uint32_t *pass,
                          uint32_t *clause)
{
	unsigned p = d->a->ptr_size, sp = d->a->sp_reg, ip = d->a->ip_reg;
	uint64_t tr = d->older, next, rec;
	unsigned char b[16];
	sw_status st;

	*pass = 0;
	for (unsigned n = 0; tr != 0 && n < d->depth; n++, tr = next) {
		if ((st = older_next(d, tr, &next)) != SW_OK ||
		    (st = swi_read_ptr(d->t->memory, p, tr + p, &rec)) != SW_OK)
			return st;
		/* Only a dispatch's tracker, its record inside it, stands at a frame. */
		if (!(rec & SW_TRACKER_DISPATCH) ||
		    (rec & ~(uint64_t)SW_TRACKER_FLAG_MASK) != tr + TRACKER_RECORD)
			continue;
		rec = tr + TRACKER_RECORD;
		if ((st = sw_memory_read(d->t->memory, rec + 8, b, 8)) != SW_OK)
			return st;
		if (!((swi_load_le(b, 8) >> sp) & 1) || !((swi_load_le(b, 8) >> ip) & 1))
			continue;
		if ((st = sw_memory_read(d->t->memory, rec + 16 + 8 * (uint64_t)sp, b, 8)) != SW_OK ||
		    (st = sw_memory_read(d->t->memory, rec + 16 + 8 * (uint64_t)ip, b + 8, 8)) != SW_OK)
			return st;
		if (swi_load_le(b, 8) != sw_context_sp(regs) || swi_load_le(b + 8, 8) != sw_context_ip(regs))
			continue;
		if ((st = sw_memory_read(d->t->memory, tr + TRACKER_PASS, b, 8)) != SW_OK)
			return st;
		*pass = (uint32_t)swi_load_le(b, 4);
		*clause = (uint32_t)swi_load_le(b + 4, 4);
		return SW_OK;
	}
	return SW_OK;
}

/*
 * The offset a frame's clauses are matched at: the IP where it faulted or
 * is active, else the call instruction's, the return address minus one
 * (CoreCLR's SfiInit/SfiNext adjust the control PC the same way, so that a
 * call that ends a try is still inside it).  0 when that is not in the
 * method's main body (no clause can cover it).
 */
static int frame_offset(const sw_crawl_frame *cf, const sw_code_info *code, uint32_t *offset)
{
	uint64_t ip = sw_crawl_frame_ip(cf);
	int exact = sw_crawl_frame_is_first(cf) || sw_crawl_frame_has_faulted(cf);

	if (ip < code->start + !exact || ip - code->start - !exact >= code->size)
		return 0;
	*offset = (uint32_t)(ip - code->start) - !exact;
	return 1;
}

/*
 * Fill the site for the frame the iterator stands on; 0 if it is not a
 * managed frame whose clauses matter, or an error.
 */
static sw_status frame_site(struct dispatch *d, const sw_crawl_frame *cf, int *usable)
{
	const sw_code_info *code;
	const sw_regdisplay *rd;

	*usable = 0;
	/*
	 * A native frame whose personality routine has cleanups or catches
	 * (C++ destructors): libgcc's unwinder would call it in both phases,
	 * this dispatcher cannot, and unwinding past it would skip them.
	 */
	if (sw_crawl_frame_state(cf) == SW_STATE_NATIVE_FRAME) {
		code = sw_crawl_frame_code_info(cf);
		return code && (code->flags & SW_CODE_PERSONALITY) ? SW_E_UNSUPPORTED : SW_OK;
	}
	if (sw_crawl_frame_state(cf) != SW_STATE_FRAMELESS)
		return SW_OK;
	if (!(code = sw_crawl_frame_code_info(cf)) || !code->unwind)
		return SW_OK;
	rd = sw_crawl_frame_regdisplay(cf);
	/*
	 * A throw out of a funclet (a nested exception, or a rethrow from a
	 * catch) reaches the frame its dispatch stands at: there the search
	 * goes on after that funclet's clause.  A funclet frame itself is
	 * searched like any other, its own clauses (if its blob has any).
	 */
	d->start_idx = SW_TRACKER_NO_CLAUSE;
	if (!sw_crawl_frame_is_first(cf)) {
		uint32_t pass, clause = SW_TRACKER_NO_CLAUSE;
		sw_status st = collided(d, &rd->cur, &pass, &clause);

		if (st != SW_OK)
			return st;
		/* An older dispatch between two callbacks runs no code that could throw. */
		if (pass != 0 && clause == SW_TRACKER_NO_CLAUSE)
			return SW_E_STATE;
		/*
		 * Its first pass: the exception left a filter, which swallows it
		 * (FindFirstPassHandler's catch around RhpCallFilterFunclet, in
		 * NativeAOT's build of ExceptionHandling.cs): it is handled
		 * there, at the filter's frame, and goes no further.
		 */
		if (pass == 1) {
			d->escaped = 1;
			d->site.regs = &rd->cur;
			*usable = 1;
			return SW_OK;
		}
		if (pass == 2)
			d->start_idx = clause;
	}
	if (!frame_offset(cf, code, &d->site.offset))
		return SW_OK;
	d->site.frame = cf;
	d->site.code = code;
	d->site.regs = &rd->cur;
	d->site.caller_sp = rd->caller_valid ? sw_context_sp(&rd->caller) : 0;
	d->site.pass = d->pass;
	*usable = 1;
	return SW_OK;
}

/* Fill the clause part of the site. */
static void clause_site(struct dispatch *d, uint32_t index, const sw_eh_clause *c, int filter)
{
	d->site.index = index;
	d->site.clause = *c;
	d->site.funclet = d->site.code->start + (filter ? c->filter_start : c->handler_start);
}

/* A callback's answer: negative is an error that stops the dispatch. */
static int answer(struct dispatch *d, int r)
{
	if (r < 0) {
		d->st = (sw_status)r;
		return 1;
	}
	return 0;
}

/*
 * In a collided frame, pass over the clauses up to the one whose funclet
 * threw, then those protecting the same try (FindFirstPassHandler and
 * InvokeSecondPass skip the same way from idxStart: the clauses of a try
 * whose handler has been left are done with).  Clauses come innermost
 * first, so what follows encloses the funclet's clause.
 */
static int skip_clause(struct dispatch *d, uint32_t index, const sw_eh_clause *c)
{
	if (d->start_idx == SW_TRACKER_NO_CLAUSE)
		return 0;
	if (index <= d->start_idx) {
		d->last_try_start = c->try_start;
		d->last_try_end = c->try_end;
		return 1;
	}
	if (c->try_start == d->last_try_start && c->try_end == d->last_try_end)
		return 1;
	d->start_idx = SW_TRACKER_NO_CLAUSE;
	return 0;
}

/*
 * First pass, one clause (FindFirstPassHandler): a typed catch whose type
 * matches, or a filter whose funclet takes the exception, handles it.
 * Finally and fault clauses do nothing yet.  Duplicated clauses cover
 * funclet code only, which this pass does not search.
 */
static int first_pass_clause(void *data, uint32_t index, const sw_eh_clause *c)
{
	struct dispatch *d = data;
	int r;

	if (skip_clause(d, index, c) || (c->flags & SW_EH_DUPLICATED))
		return 0;
	if (c->kind == SW_EH_CATCH) {
		clause_site(d, index, c, 0);
		r = d->ops->type_matches(d->data, d->exception, &d->site);
	} else if (c->kind == SW_EH_FILTER) {
		clause_site(d, index, c, 1);
		if ((d->st = tracker_put32(d, TRACKER_CLAUSE, index)) != SW_OK)
			return 1;
		r = d->ops->run_filter(d->data, d->exception, &d->site);
		if ((d->st = tracker_put32(d, TRACKER_CLAUSE, SW_TRACKER_NO_CLAUSE)) != SW_OK)
			return 1;
	} else {
		return 0;
	}
	if (answer(d, r))
		return 1;
	if (r) {
		d->found = 1;
		d->found_index = index;
		d->found_clause = *c;
		d->found_sp = sw_context_sp(d->site.regs);
		return 1;
	}
	return 0;
}

/*
 * Second pass, one clause (InvokeSecondPass): run a finally or fault
 * funclet.  In the handling frame only clauses before the catching one
 * (nested in its try) run: idxLimit.
 */
static int second_pass_clause(void *data, uint32_t index, const sw_eh_clause *c)
{
	struct dispatch *d = data;
	uint64_t ignored = 0;
	sw_status st;

	if (index >= d->limit)
		return 1;
	if (skip_clause(d, index, c) || (c->flags & SW_EH_DUPLICATED) ||
	    (c->kind != SW_EH_FINALLY && c->kind != SW_EH_FAULT))
		return 0;
	clause_site(d, index, c, 0);
	if ((d->st = tracker_put32(d, TRACKER_CLAUSE, index)) != SW_OK)
		return 1;
	st = d->ops->run_handler(d->data, d->exception, &d->site, &ignored);
	if (answer(d, st))
		return 1;
	if ((d->st = tracker_put32(d, TRACKER_CLAUSE, SW_TRACKER_NO_CLAUSE)) != SW_OK)
		return 1;
	return 0;
}

/*
 * Unlink the Frames below `sp` from the thread's list.  As CoreCLR's
 * PopExplicitFrames (vm/exceptionhandling.cpp), called from
 * CallCatchFunclet with the SP the catch resumes on, the bound is the
 * frame's own SP: a Frame that lies inside the frame, between its SP and
 * its caller's (an InlinedCallFrame its prolog linked, active or not),
 * belongs to code that goes on running and stays linked.  The list
 * ascends the stack, so the Frames to pop are its first ones.
 */
static sw_status pop_frames_below(const struct dispatch *d, uint64_t sp)
{
	unsigned p = d->a->ptr_size;
	uint64_t frame, next;
	sw_status st;

	if (!d->t->frame_head)
		return SW_OK;               /* no Frame list */
	if ((st = swi_read_ptr(d->t->memory, p, d->t->frame_head, &frame)) != SW_OK)
		return st;
	while (frame != 0 && frame < sp) {
		/* The walk passed these Frames; still, garbage may have come in since. */
		if ((frame & (p - 1)) || frame < d->t->stack_lo || frame >= d->t->stack_hi)
			return SW_E_BADFRAME;
		if ((st = swi_read_ptr(d->t->memory, p, frame, &next)) != SW_OK)
			return st;
		if (next != 0 && next <= frame)
			return SW_E_FRAMECYCLE;
		if ((st = swi_write_ptr(d->t->memory, p, d->t->frame_head, next)) != SW_OK)
			return st;
		frame = next;
	}
	return SW_OK;
}

/*
 * After the catch funclet: an InlinedCallFrame still active inside the
 * handling frame (between the resume SP and its caller's) belongs to a
 * P/Invoke the exception left; the method goes on at the catch's
 * continuation, not at that call's return.  CoreCLR's PopExplicitFrames
 * (vm/exceptionhandling.cpp, from CallCatchFunclet) resets it
 * (InlinedCallFrame::Reset clears m_pCallerReturnAddress, which is what
 * FrameHasActiveCall tests), or pops it where the code links one per
 * P/Invoke (ReadyToRun); here every such Frame is linked by its method's
 * prolog (pop_frames_below keeps it), so it is reset: its return address
 * cleared.
 */
static sw_status reset_inlined_call(const struct dispatch *d, uint64_t sp, uint64_t caller_sp)
{
	const sw_frame_ops *fops;
	sw_frame_view view;
	uint64_t frame, ra;
	unsigned char zero[8] = { 0 };
	sw_status st;

	if (!d->t->frame_head)
		return SW_OK;
	if ((st = swi_read_ptr(d->t->memory, d->a->ptr_size, d->t->frame_head, &frame)) != SW_OK)
		return st;
	if (frame == 0 || frame < sp || frame >= caller_sp)
		return SW_OK;
	if ((st = swi_frame_read(d->t, frame, &view, &fops)) != SW_OK)
		return st;
	if (view.type != SW_FRAME_INLINED_CALL)
		return SW_OK;
	if ((st = sw_frame_read_field(&view, SW_ICF_RETURN_ADDRESS, &ra)) != SW_OK || ra == 0)
		return st;
	return sw_memory_write(d->t->memory, sw_frame_field_address(&view, SW_ICF_RETURN_ADDRESS),
	                       zero, d->a->ptr_size);
}

/* The walk's own end: an error, or SW_E_NOTFOUND when it ran out of frames. */
static sw_status walk_end(sw_iter *it, int r)
{
	sw_walk_error err;

	if (r == 0)
		return SW_E_NOTFOUND;
	sw_iter_error(it, &err);
	return err.status != SW_OK ? err.status : (sw_status)r;
}

/* First pass: find the handling frame and clause, running filters. */
static sw_status first_pass(struct dispatch *d, const sw_context *start, unsigned flags)
{
	sw_iter it;
	sw_status st;
	int r, usable;

	d->pass = 1;
	if ((st = sw_iter_init(&it, d->t, start, 0, flags)) != SW_OK)
		return st;
	while ((r = sw_iter_next(&it)) == 1) {
		const sw_crawl_frame *cf = sw_iter_frame(&it);

		if ((st = frame_site(d, cf, &usable)) != SW_OK)
			break;
		if (!usable)
			continue;
		/* Out of a filter: handled at its frame, with no clause. */
		if (d->escaped) {
			d->found = 1;
			d->found_index = SW_TRACKER_NO_CLAUSE;
			d->found_sp = sw_context_sp(d->site.regs);
			break;
		}
		st = sw_swu_eh_covering(d->site.code->unwind, d->site.code->unwind_size,
		                        d->site.offset, first_pass_clause, d);
		if (st == SW_OK)
			st = d->st;
		if (st != SW_OK || d->found)
			break;
	}
	if (st == SW_OK && !d->found)
		st = walk_end(&it, r);
	sw_iter_end(&it);
	return st;
}

/*
 * Second pass: unwind frame by frame to the handling one, running finally
 * and fault funclets, then run the catch and give back where to resume.
 * Before a managed frame's funclets run, the Frames below its SP are
 * popped (pop_frames_below), not every Frame the walk passes
 * (POPFRAMES would unlink those inside the handling frame too).
 */
static sw_status second_pass(struct dispatch *d, const sw_context *start, unsigned flags,
                             sw_exception_result *out)
{
	uint64_t resume_ip = 0;
	sw_iter it;
	sw_status st;
	int r, usable;

	d->pass = 2;
	if ((st = sw_iter_init(&it, d->t, start, 0, flags)) != SW_OK)
		return st;
	out->frames = 0;
	while ((r = sw_iter_next(&it)) == 1) {
		const sw_crawl_frame *cf = sw_iter_frame(&it);
		int handling;

		if ((st = frame_site(d, cf, &usable)) != SW_OK)
			break;
		if (!usable)
			continue;
		/* A frame above the first pass's handler: the stack changed between the passes. */
		if (sw_context_sp(d->site.regs) > d->found_sp) {
			st = SW_E_STATE;
			break;
		}
		/*
		 * Back at the frame whose filter threw: the funclets below it
		 * have run, and the runtime goes on as if the filter said no.
		 */
		if (d->escaped && sw_context_sp(d->site.regs) == d->found_sp) {
			st = SW_E_NOTFOUND;
			break;
		}
		out->frames++;
		handling = sw_context_sp(d->site.regs) == d->found_sp;
		/*
		 * Frames up to here are unwound: their Frames go, and walks from
		 * these funclets start at this one.  In the handling frame its SP
		 * is the one the catch resumes on.
		 */
		if ((st = pop_frames_below(d, sw_context_sp(d->site.regs))) != SW_OK)
			break;
		if ((st = tracker_at(d, d->site.regs, !sw_crawl_frame_is_first(cf) &&
		                     !sw_crawl_frame_has_faulted(cf))) != SW_OK)
			break;
		d->limit = handling ? d->found_index : UINT32_MAX;
		st = sw_swu_eh_covering(d->site.code->unwind, d->site.code->unwind_size,
		                        d->site.offset, second_pass_clause, d);
		if (st == SW_OK)
			st = d->st;
		if (st != SW_OK)
			break;
		if (!handling)
			continue;
		/* The catch (or the filter's handler) funclet says where to go on. */
		clause_site(d, d->found_index, &d->found_clause, 0);
		if ((st = tracker_put32(d, TRACKER_CLAUSE, d->found_index)) != SW_OK)
			break;
		if ((st = d->ops->run_handler(d->data, d->exception, &d->site, &resume_ip)) != SW_OK ||
		    (st = tracker_resume_regs(d, &out->resume)) != SW_OK ||
		    (st = reset_inlined_call(d, sw_context_sp(d->site.regs), d->site.caller_sp)) != SW_OK)
			break;
		out->resume.regs[d->a->ip_reg] = resume_ip;
		out->method = d->site.code->method;
		out->clause = d->found_index;
		break;
	}
	if (st == SW_OK && r != 1)
		st = r == 0 ? SW_E_STATE : walk_end(&it, r);
	sw_iter_end(&it);
	return st;
}

SW_API sw_status sw_exception_dispatch(const sw_thread *t, const sw_context *start,
                                       uint64_t exception, const sw_exception_ops *ops,
                                       void *data, uint64_t tracker, unsigned flags,
                                       sw_exception_result *out)
{
	const unsigned allowed = SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK |
	                         SW_WALK_UNWIND_FLOATS;
	struct dispatch d;
	uint64_t old_head = 0;
	sw_status st, unlink;

	if (!t || !start || !ops || !ops->type_matches || !ops->run_filter || !ops->run_handler ||
	    !out || (flags & ~allowed) || !t->exception_head || !t->memory)
		return SW_E_INVAL;
	memset(&d, 0, sizeof d);
	if (!(d.a = swi_arch_get(t->arch)) || start->arch != t->arch)
		return SW_E_INVAL;
	/* The tracker lies on the thread's stack, beneath the throw, where walks look for it. */
	if ((tracker & (d.a->ptr_size - 1)) || tracker < t->stack_lo ||
	    tracker > t->stack_hi - SW_EXCEPTION_TRACKER_SIZE ||
	    t->stack_hi < SW_EXCEPTION_TRACKER_SIZE || tracker >= sw_context_sp(start))
		return SW_E_INVAL;
	d.t = t;
	d.ops = ops;
	d.data = data;
	d.exception = exception;
	d.tracker = tracker;
	d.pass = 1;
	d.start_idx = SW_TRACKER_NO_CLAUSE;
	memset(out, 0, sizeof *out);
	flags |= SW_WALK_HANDLESKIPPEDFRAMES;

	/*
	 * Link the tracker, newest first (ExInfo's m_pPrevExInfo), whole
	 * before it is reachable: nothing is unwound yet, so walks from a
	 * filter see every frame from the throw.
	 */
	if ((st = swi_read_ptr(t->memory, d.a->ptr_size, t->exception_head, &old_head)) != SW_OK)
		return st;
	/* Older trackers (nested exceptions) lie above this one, and are few. */
	d.older = old_head;
	if (old_head != 0 && old_head <= tracker)
		return SW_E_FRAMECYCLE;
	if ((st = count_older(&d)) != SW_OK)
		return st;
	if ((st = tracker_init(&d, old_head)) != SW_OK || (st = tracker_at(&d, start, 0)) != SW_OK)
		return st;
	if ((st = swi_write_ptr(t->memory, d.a->ptr_size, t->exception_head, tracker)) != SW_OK)
		return st;
	st = first_pass(&d, start, flags);
	/*
	 * An unhandled exception runs no second pass (DispatchEx fails fast
	 * there); one that left a filter does, up to the filter's frame.
	 */
	if (st == SW_OK)
		st = second_pass(&d, start, flags, out);
	/*
	 * The tracker goes as the catch is entered, and with it every older
	 * one below the SP the catch resumes on: the dispatches of exceptions
	 * this one replaced, whose frames the resume releases (CoreCLR's
	 * CallCatchFunclet pops the ExInfos below the resume SP,
	 * ExInfo::PopExInfos in vm/exinfo.cpp).
	 */
	if (st == SW_OK) {
		uint64_t sp = sw_context_sp(&out->resume);

		for (unsigned n = 0; old_head != 0 && old_head < sp && n < d.depth; n++)
			if ((st = older_next(&d, old_head, &old_head)) != SW_OK)
				break;
	}
	unlink = swi_write_ptr(t->memory, d.a->ptr_size, t->exception_head, old_head);
	return st != SW_OK ? st : unlink;
}
