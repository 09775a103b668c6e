/*
 * check_dispatch.c - sw_exception_dispatch and sw_context_resume.
 *
 * Random nested try programs (1 to 4 frames, each 0 to 3 nested blocks of
 * catch, filter, finally or fault around its call, and a block that does
 * not cover the call) are laid out as hand-built x64 stacks with the
 * clauses in each method's SWU, and dispatched.  What the dispatcher does
 * (the funclets it asks for, in order, and the frame it resumes) is
 * compared with an interpreter of the same program that knows nothing of
 * clause tables, offsets or walks: it runs the blocks recursively, keeps
 * the active try blocks on its own stack, searches them at the throw
 * (running filters), and runs finally and fault blocks as the exception
 * leaves them on the way back to the catching one.
 *
 * Inside every funclet the test walks the stack from beneath the tracker,
 * as a GC would, and checks that it sees exactly the frames not yet
 * unwound.
 */
#include <check.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "stack_builder.h"

#define MAX_FRAMES 4
#define MAX_DEPTH  3
#define METHOD_AT(i) (0x400000ull + 0x100ull * (i))
#define SITE 24                 /* the call (or throw) every block covers */
#define CFA0 (SB_STACK_HI - 0x100)
#define CFA(i) (CFA0 - 96ull * (i))
#define RBX(i) (0x1000ull + (i))
#define EXC_SLOT (SB_STACK_HI - 16)
#define CONTINUATION 36         /* where every catch says to go on */

/* ---- the program ---- */

enum { K_CATCH, K_FILTER, K_FINALLY, K_FAULT, K_NKINDS };

struct block {
	int kind;
	uint32_t token;             /* K_CATCH: the type caught */
	int filter_says;            /* K_FILTER: the filter's answer */
	uint32_t throws;            /* its funclet throws this type (0: no; RETHROW: a catch rethrows) */
};
#define RETHROW 3
#define MAX_NEST 3              /* exceptions thrown from funclets while one is dispatched */

struct frame_prog {
	int n;                      /* blocks around the call, b[0] outermost */
	struct block b[MAX_DEPTH];
	int noise;                  /* a block beside the call, covering no call */
	struct block noise_block;
};

struct prog {
	int nframes;                /* frame 0 outermost, nframes-1 throws */
	uint32_t type;              /* the exception's type */
	struct frame_prog f[MAX_FRAMES];
};

/* What the runtime was asked to run: a filter, a finally/fault, a handler. */
enum { E_FILTER = 1, E_FINALLY, E_FAULT, E_HANDLER };
struct event {
	int what, frame, depth;
};
struct events {
	int n;
	struct event e[64];
};

static void add_event(struct events *ev, int what, int frame, int depth)
{
	ck_assert_int_lt(ev->n, 64);
	ev->e[ev->n++] = (struct event){ what, frame, depth };
}

static unsigned rnd(unsigned *s)
{
	*s = *s * 1103515245u + 12345u;
	return (*s >> 16) & 0x7fff;
}

static void random_block(unsigned *s, struct block *b)
{
	b->kind = (int)(rnd(s) % K_NKINDS);
	b->token = 1 + rnd(s) % 2;
	b->filter_says = (int)(rnd(s) % 2);
}

static void random_prog(unsigned *s, struct prog *p)
{
	memset(p, 0, sizeof *p);
	p->nframes = 1 + (int)(rnd(s) % MAX_FRAMES);
	p->type = 1 + rnd(s) % 2;
	for (int i = 0; i < p->nframes; i++) {
		p->f[i].n = (int)(rnd(s) % (MAX_DEPTH + 1));
		for (int d = 0; d < p->f[i].n; d++)
			random_block(s, &p->f[i].b[d]);
		p->f[i].noise = p->f[i].n > 0 && rnd(s) % 2;
		random_block(s, &p->f[i].noise_block);
	}
}

/* ---- the oracle: an interpreter of the program ---- */

struct interp {
	const struct prog *p;
	uint32_t type;              /* the exception in flight */
	int level;                  /* how many funclets have thrown (filters' exceptions end in them) */
	int active_f[MAX_FRAMES * MAX_DEPTH], active_d[MAX_FRAMES * MAX_DEPTH], nactive;
	int target_f, target_d;     /* the catching block, once the search found it */
	struct events ev;
};

/* The throw: search the active blocks, innermost first, running filters. */
static int interp_throw(struct interp *in)
{
	for (int i = in->nactive - 1; i >= 0; i--) {
		const struct block *b = &in->p->f[in->active_f[i]].b[in->active_d[i]];

		if (b->kind == K_CATCH && b->token == in->type) {
			in->target_f = in->active_f[i], in->target_d = in->active_d[i];
			return 1;
		}
		if (b->kind == K_FILTER) {
			add_event(&in->ev, E_FILTER, in->active_f[i], in->active_d[i]);
			/* A filter that throws says no. */
			if (b->filter_says && !(b->throws && in->level < MAX_NEST)) {
				in->target_f = in->active_f[i], in->target_d = in->active_d[i];
				return 1;
			}
		}
	}
	return -1;      /* unhandled: nothing more runs */
}

/* Does the block's funclet throw now?  Then its exception is the one in flight. */
static int interp_funclet_throws(struct interp *in, const struct block *b)
{
	if (!b->throws || in->level >= MAX_NEST)
		return 0;
	in->level++;
	if (b->throws != RETHROW)
		in->type = b->throws;
	return 1;
}

/* Run block d of frame f (d == n: the call inside them); 1 when an exception comes out. */
static int interp_run(struct interp *in, int f, int d)
{
	const struct frame_prog *fp = &in->p->f[f];
	int r;

	if (d == fp->n)
		return f + 1 < in->p->nframes ? interp_run(in, f + 1, 0) : interp_throw(in);
	in->active_f[in->nactive] = f, in->active_d[in->nactive] = d;
	in->nactive++;
	r = interp_run(in, f, d + 1);
	in->nactive--;
	if (r != 1)
		return r;
	if (fp->b[d].kind == K_FINALLY || fp->b[d].kind == K_FAULT) {
		add_event(&in->ev, fp->b[d].kind == K_FINALLY ? E_FINALLY : E_FAULT, f, d);
		/* A finally or fault that throws: the new exception leaves the block instead. */
		return interp_funclet_throws(in, &fp->b[d]) ? interp_throw(in) : 1;
	}
	if (f == in->target_f && d == in->target_d) {
		add_event(&in->ev, E_HANDLER, f, d);
		/* A catch that throws (or rethrows): the exception leaves the block. */
		return interp_funclet_throws(in, &fp->b[d]) ? interp_throw(in) : 0;
	}
	return 1;
}

/* ---- the program as methods and a stack ---- */

static int method_handles[MAX_FRAMES];
static const struct frame_prog *building;

/* Offsets: block d's try is [10+2d, 38-2d); the noise block's [26, 30), inside them all. */
static sw_eh_clause clause_of(const struct block *b, uint32_t try_start, uint32_t try_end, unsigned j)
{
	sw_eh_clause c = { 0, 0, try_start, try_end, 48 + 16 * j, 64 + 16 * j, 0, 0 };

	c.kind = b->kind == K_CATCH ? SW_EH_CATCH : b->kind == K_FILTER ? SW_EH_FILTER :
	         b->kind == K_FINALLY ? SW_EH_FINALLY : SW_EH_FAULT;
	if (b->kind == K_CATCH)
		c.type_token = b->token;
	if (b->kind == K_FILTER) {
		c.filter_start = c.handler_start;
		c.handler_start += 8;
	}
	return c;
}

/* Clauses innermost first: the noise block, then the blocks from the innermost out. */
static void add_clauses(sw_swu_builder *b)
{
	unsigned j = 0;
	sw_eh_clause c;

	if (building->noise) {
		c = clause_of(&building->noise_block, 26, 30, j++);
		ck_assert_int_eq(sw_swu_eh_clause(b, &c), SW_OK);
	}
	for (int d = building->n - 1; d >= 0; d--) {
		c = clause_of(&building->b[d], 10 + 2 * (uint32_t)d, 38 - 2 * (uint32_t)d, j++);
		ck_assert_int_eq(sw_swu_eh_clause(b, &c), SW_OK);
	}
}

/* Block depth of a clause index in frame f's table. */
static int depth_of(const struct prog *p, int f, uint32_t index)
{
	int d = p->f[f].n - 1 - ((int)index - p->f[f].noise);

	ck_assert_msg(d >= 0 && d < p->f[f].n, "clause %u of frame %d covers no call", index, f);
	return d;
}

/*
 * The native function that holds the tracker (the runtime's throw helper):
 * push rbp; mov rbp,rsp; sub rsp,0x600, its frame right beneath the
 * throwing frame's SP, so that a walk unwinding native frames reaches the
 * tracker inside it.
 */
#define NATIVE_AT 0x600000ull
static int native_handle;

static void add_native(sb_world *w, const struct prog *p)
{
	uint64_t cfa = CFA(p->nframes - 1) - 96;
	unsigned char blob[256];
	size_t len = 0;
	sw_swu_builder *b;
	sw_code_info ci;

	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_set_frame(b, 4, SW_X64_RBP, 0), SW_OK);
	ck_assert_int_eq(sw_swu_alloc_stack(b, 11, 0x600), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 11), SW_OK);
	ck_assert_int_eq(sw_swu_finish(b, 32, blob, sizeof blob, &len), SW_OK);
	sw_swu_builder_destroy(b);
	memset(&ci, 0, sizeof ci);
	ci.method = &native_handle;
	ci.start = NATIVE_AT;
	ci.size = 32;
	ci.unwind = blob;
	ci.unwind_size = (uint32_t)len;
	ci.flags = SW_CODE_NATIVE;
	ck_assert_int_eq(sw_codemap_add(w->map, &ci), SW_OK);
	sb_put(w, cfa - 8, METHOD_AT(p->nframes - 1) + SITE + 1);
	sb_put(w, cfa - 16, CFA(p->nframes - 1) - 16);
}

/*
 * Every frame runs method shape "A" (stack_builder.h): at a body IP, CFA
 * = rbp + 16, rbp saved at CFA-16, rbx at CFA-24, SP = CFA - 96.  Frame i
 * is stopped at SITE, the return address SITE + 1 into it; the innermost
 * faulted at SITE.
 */
static void lay_out(sb_world *w, const struct prog *p)
{
	for (int i = 0; i < p->nframes; i++) {
		building = &p->f[i];
		sb_add_method_a_ex(w, METHOD_AT(i), &method_handles[i], add_clauses);
		if (i == 0) {
			sb_put(w, CFA(0) - 8, 0);       /* the outermost frame: nothing called it */
			sb_put(w, CFA(0) - 16, 0);
			sb_put(w, CFA(0) - 24, 0);
		} else {
			sb_put(w, CFA(i) - 8, METHOD_AT(i - 1) + SITE + 1);
			sb_put(w, CFA(i) - 16, CFA(i - 1) - 16);
			sb_put(w, CFA(i) - 24, RBX(i - 1));
		}
	}
	add_native(w, p);
	sb_put(w, EXC_SLOT, 0);
	w->thread.exception_head = EXC_SLOT;
	sw_context_init(&w->seed, SW_ARCH_X64);
	sw_context_set(&w->seed, SW_X64_RIP, METHOD_AT(p->nframes - 1) + SITE);
	sw_context_set(&w->seed, SW_X64_RSP, CFA(p->nframes - 1) - 96);
	sw_context_set(&w->seed, SW_X64_RBP, CFA(p->nframes - 1) - 16);
	sw_context_set(&w->seed, SW_X64_RBX, RBX(p->nframes - 1));
}

/* ---- the runtime's callbacks ---- */

struct runtime {
	sb_world *w;
	const struct prog *p;
	uint64_t tracker;
	struct events ev;
	int unwound_to;             /* the innermost frame not yet unwound */
	int fail_at;                /* return an error at this event (0: never) */
	int damaged;                /* the stack is broken on purpose: no walk checks */
	int walks;
	/* Exceptions thrown from funclets: each a dispatch of its own, nested. */
	int level, max_level;       /* dispatches in progress beneath the first, the most seen */
	int hostile;                /* every funclet throws, for ever */
	int resumed;                /* a nested dispatch found a catch: where a runtime would jump */
	sw_exception_result final;
	uint64_t head_at_resume;    /* the tracker list then */
};

/*
 * The code of every funclet that throws (shape "B", registered as a
 * funclet): a nested dispatch starts in it, at its body's offset.  The
 * hostile one has a finally of its own around that offset, which throws
 * again.
 */
#define FUNCLET_AT 0x500000ull
#define HOSTILE_AT 0x500100ull
#define FUNCLET_BODY 20
static int funclet_handle, hostile_handle;

static void add_hostile_finally(sw_swu_builder *b)
{
	sw_eh_clause c = { SW_EH_FINALLY, 0, 15, 25, 40, 48, 0, 0 };

	ck_assert_int_eq(sw_swu_eh_clause(b, &c), SW_OK);
}

static void add_funclets(sb_world *w)
{
	sb_add_method_b(w, FUNCLET_AT, &funclet_handle);
	sb_reregister(w, FUNCLET_AT, &funclet_handle, SW_CODE_FUNCLET, NULL);
	sb_add_method_b_ex(w, HOSTILE_AT, &hostile_handle, add_hostile_finally);
	sb_reregister(w, HOSTILE_AT, &hostile_handle, SW_CODE_FUNCLET, NULL);
}

/* A world with program p laid out, and a runtime for it with its tracker beneath the throw. */
static void set_up(sb_world *w, struct runtime *rt, const struct prog *p)
{
	sb_init(w);
	lay_out(w, p);
	add_funclets(w);
	memset(rt, 0, sizeof *rt);
	rt->w = w;
	rt->p = p;
	rt->tracker = CFA(p->nframes - 1) - 96 - 0x400;
}

static int frame_index(const sw_eh_site *site)
{
	for (int i = 0; i < MAX_FRAMES; i++)
		if (site->code->method == &method_handles[i])
			return i;
	ck_abort_msg("a site in no method of the program");
	return -1;
}

/*
 * Walk as a GC inside the funclet would: from native code beneath the
 * tracker.  It must find the tracker, resume at the frame the dispatch
 * stands at and see that frame and its callers only, once each.  Twice:
 * from code no one describes (the walk crosses to the tracker), and,
 * unwinding native frames, from the native function that holds the
 * tracker (the walk skips from it to the tracker's frame).
 */
static void walk_one(struct runtime *rt, int first, int faulted, int native)
{
	sw_context seed;
	sw_iter it;
	int r, n = 0, expect = first;

	sw_context_init(&seed, SW_ARCH_X64);
	sw_context_set(&seed, SW_X64_RIP, native ? NATIVE_AT + 20 : SB_NATIVE_IP);
	sw_context_set(&seed, SW_X64_RSP, rt->tracker - 0x100);
	sw_context_set(&seed, SW_X64_RBP, CFA(rt->p->nframes - 1) - 96 - 16);
	ck_assert_int_eq(sw_iter_init(&it, &rt->w->thread, &seed, 0,
	                              native ? SW_WALK_NATIVE_FRAMES : 0), SW_OK);
	while ((r = sw_iter_next(&it)) == 1) {
		const sw_crawl_frame *cf = sw_iter_frame(&it);

		if (sw_crawl_frame_state(cf) == SW_STATE_NATIVE_FRAME)
			ck_assert_ptr_eq(sw_crawl_frame_method(cf), &native_handle);
		if (sw_crawl_frame_state(cf) != SW_STATE_FRAMELESS)
			continue;
		ck_assert_int_ge(expect, 0);
		ck_assert_ptr_eq(sw_crawl_frame_method(cf), &method_handles[expect]);
		ck_assert_uint_eq(sw_crawl_frame_sp(cf), CFA(expect) - 96);
		if (n == 0)
			ck_assert_int_eq(sw_crawl_frame_has_faulted(cf), faulted);
		expect--, n++;
	}
	/* A native walk takes the outermost frame's return address 0 for a damaged stack. */
	ck_assert_int_eq(r, native ? SW_E_NOTFOUND : 0);
	ck_assert_int_eq(expect, -1);
	sw_iter_end(&it);
}

static void walk_from_funclet(struct runtime *rt, int first, int faulted)
{
	if (rt->damaged)
		return;
	walk_one(rt, first, faulted, 0);
	/* The native function holds the first tracker only. */
	if (rt->level == 0)
		walk_one(rt, first, faulted, 1);
	rt->walks++;
}

static const sw_exception_ops ops;

/*
 * A funclet throws: lay out its frame beneath the current tracker, called
 * from native code (the runtime's funclet call), and dispatch the new
 * exception from it with a tracker beneath it, as the runtime's throw
 * helper would.  A dispatch that finds a catch is where a runtime would
 * jump (sw_context_resume): the test keeps what it would jump to and
 * unwinds the older dispatches with an error instead.
 */
static sw_status nested_throw(struct runtime *rt, uint64_t type, uint64_t code)
{
	uint64_t saved = rt->tracker, sp = rt->tracker - 0x40, cfa = sp + 40;
	sw_exception_result res;
	sw_context seed;
	sw_status st;

	sb_put(rt->w, cfa - 8, SB_NATIVE_IP);
	sb_put(rt->w, cfa - 16, 0x1212);
	sb_put(rt->w, cfa - 24, 0x3434);
	sw_context_init(&seed, SW_ARCH_X64);
	sw_context_set(&seed, SW_X64_RIP, code + FUNCLET_BODY);
	sw_context_set(&seed, SW_X64_RSP, sp);
	sw_context_set(&seed, SW_X64_RBX, 0x5656);
	rt->tracker = sp - 0x1c0;
	if (++rt->level > rt->max_level)
		rt->max_level = rt->level;
	st = sw_exception_dispatch(&rt->w->thread, &seed, type, &ops, rt, rt->tracker, 0, &res);
	rt->level--;
	rt->tracker = saved;
	if (st == SW_OK && !rt->resumed) {
		rt->resumed = 1;
		rt->final = res;
		rt->head_at_resume = sb_get(rt->w, EXC_SLOT);
		return SW_E_ABORTED;
	}
	return st;
}

static void check_site(struct runtime *rt, const sw_eh_site *site, int f)
{
	ck_assert_uint_eq(sw_context_sp(site->regs), CFA(f) - 96);
	ck_assert_uint_eq(site->caller_sp, CFA(f));
	ck_assert_uint_eq(site->offset, SITE);
	/* The filter's funclet while it decides, else the handler's. */
	ck_assert_uint_eq(site->funclet, site->code->start +
	                  (site->pass == 1 && site->clause.kind == SW_EH_FILTER ?
	                   site->clause.filter_start : site->clause.handler_start));
	ck_assert_int_eq(sw_crawl_frame_is_frameless(site->frame), 1);
	(void)rt;
}

static int type_matches(void *data, uint64_t exception, const sw_eh_site *site)
{
	struct runtime *rt = data;

	check_site(rt, site, frame_index(site));
	return site->clause.type_token == exception;
}

static int run_filter(void *data, uint64_t exception, const sw_eh_site *site)
{
	struct runtime *rt = data;
	int f = frame_index(site), d = depth_of(rt->p, f, site->index);

	(void)exception;
	check_site(rt, site, f);
	ck_assert_int_eq(site->pass, 1);
	add_event(&rt->ev, E_FILTER, f, d);
	if (rt->fail_at == rt->ev.n)
		return SW_E_ABORTED;
	/* Nothing unwound yet: the walk sees the throw's frame, faulted, and all its callers. */
	if (rt->level == 0)
		walk_from_funclet(rt, rt->p->nframes - 1, 1);
	if (rt->p->f[f].b[d].throws && rt->level < MAX_NEST) {
		/* Its exception ends at the filter's frame, and the filter says no. */
		ck_assert_int_eq(nested_throw(rt, rt->p->f[f].b[d].throws, FUNCLET_AT), SW_E_NOTFOUND);
		return 0;
	}
	return rt->p->f[f].b[d].filter_says;
}

static sw_status run_handler(void *data, uint64_t exception, const sw_eh_site *site,
                             uint64_t *resume_ip)
{
	struct runtime *rt = data;
	int f, d, k;

	if (rt->hostile)
		return nested_throw(rt, exception, HOSTILE_AT);
	f = frame_index(site), d = depth_of(rt->p, f, site->index);
	k = rt->p->f[f].b[d].kind;
	check_site(rt, site, f);
	ck_assert_int_eq(site->pass, 2);
	add_event(&rt->ev, k == K_FINALLY ? E_FINALLY : k == K_FAULT ? E_FAULT : E_HANDLER, f, d);
	if (rt->fail_at == rt->ev.n)
		return SW_E_ABORTED;
	/* Frames below f are unwound: the walk starts at f, faulted only if it threw. */
	walk_from_funclet(rt, f, f == rt->p->nframes - 1);
	if (rt->p->f[f].b[d].throws && rt->level < MAX_NEST)
		return nested_throw(rt, rt->p->f[f].b[d].throws == RETHROW ? exception :
		                    rt->p->f[f].b[d].throws, FUNCLET_AT);
	*resume_ip = site->code->start + CONTINUATION;
	return SW_OK;
}

static const sw_exception_ops ops = { type_matches, run_filter, run_handler };

static void expect_same_events(const struct events *want, const struct events *got, unsigned seed)
{
	ck_assert_msg(want->n == got->n, "program %u: %d funclet calls, the interpreter %d",
	              seed, got->n, want->n);
	for (int i = 0; i < want->n; i++)
		ck_assert_msg(want->e[i].what == got->e[i].what && want->e[i].frame == got->e[i].frame &&
		              want->e[i].depth == got->e[i].depth,
		              "program %u, call %d: %d in frame %d depth %d, the interpreter %d/%d/%d",
		              seed, i, got->e[i].what, got->e[i].frame, got->e[i].depth,
		              want->e[i].what, want->e[i].frame, want->e[i].depth);
}

static unsigned handled, unhandled, funclet_calls;

/* Funclets that throw: half the blocks, a catch's by rethrowing or with a new type. */
static void add_throws(unsigned *s, struct prog *p)
{
	for (int i = 0; i < p->nframes; i++)
		for (int d = 0; d < p->f[i].n; d++) {
			struct block *b = &p->f[i].b[d];

			if (rnd(s) % 2)
				b->throws = b->kind == K_CATCH && rnd(s) % 2 ? RETHROW : 1 + rnd(s) % 2;
		}
}

static unsigned nested_resumed, by_depth[MAX_NEST + 1];

/* One program: interpret, dispatch, compare. */
static void run_program(unsigned seed, int nested)
{
	struct interp in;
	struct runtime rt;
	struct prog p;
	sw_exception_result res;
	sb_world w;
	unsigned s = seed;
	sw_status st;
	int r;

	random_prog(&s, &p);
	if (nested)
		add_throws(&s, &p);
	memset(&in, 0, sizeof in);
	in.p = &p;
	in.type = p.type;
	in.target_f = in.target_d = -1;
	r = interp_run(&in, 0, 0);

	set_up(&w, &rt, &p);
	st = sw_exception_dispatch(&w.thread, &w.seed, p.type, &ops, &rt, rt.tracker, 0, &res);
	expect_same_events(&in.ev, &rt.ev, seed);
	ck_assert_uint_eq(sb_get(&w, EXC_SLOT), 0);             /* the tracker is unlinked */
	if (r < 0) {
		ck_assert_msg(st == SW_E_NOTFOUND, "program %u: unhandled, dispatch says %d", seed, st);
	} else {
		if (rt.resumed) {
			/* A nested dispatch found the catch; every tracker beneath it is gone. */
			ck_assert_msg(st == SW_E_ABORTED, "program %u: dispatch says %d", seed, st);
			ck_assert_uint_eq(rt.head_at_resume, 0);
			res = rt.final;
			nested_resumed++;
		} else {
			ck_assert_msg(st == SW_OK, "program %u: dispatch says %d", seed, st);
			ck_assert_uint_eq(res.frames, (unsigned)(p.nframes - in.target_f));
		}
		ck_assert_ptr_eq(res.method, &method_handles[in.target_f]);
		ck_assert_uint_eq(sw_context_ip(&res.resume), METHOD_AT(in.target_f) + CONTINUATION);
		ck_assert_uint_eq(sw_context_sp(&res.resume), CFA(in.target_f) - 96);
		ck_assert_uint_eq(res.resume.regs[SW_X64_RBP], CFA(in.target_f) - 16);
		ck_assert_uint_eq(res.resume.regs[SW_X64_RBX], RBX(in.target_f));
		ck_assert_uint_eq(depth_of(&p, in.target_f, res.clause), (unsigned)in.target_d);
	}
	ck_assert_int_eq(rt.level, 0);
	by_depth[rt.max_level]++;
	if (!nested)
		ck_assert_int_eq(rt.walks, rt.ev.n);
	funclet_calls += (unsigned)rt.ev.n;
	if (r < 0)
		unhandled++;
	else
		handled++;
	sb_fini(&w);
}

START_TEST(dispatch_matches_interpreter)
{
	for (unsigned seed = 1; seed <= 3000; seed++)
		run_program(seed, 0);
	printf("3000 programs: %u handled, %u unhandled, %u filter and funclet calls\n",
	       handled, unhandled, funclet_calls);
	fflush(stdout);
}
END_TEST

/*
 * The same programs with funclets that throw: finally, fault, catch and
 * filter funclets throw a new exception or (a catch) rethrow the one they
 * caught, up to MAX_NEST exceptions deep.  Each throw is a dispatch of its
 * own, started in the funclet's frame while the older ones are in
 * progress; the interpreter just raises the new exception where the block
 * is.  Funclet order and the resumed frame must agree.
 */
START_TEST(dispatch_nested_matches_interpreter)
{
	handled = unhandled = funclet_calls = nested_resumed = 0;
	memset(by_depth, 0, sizeof by_depth);
	for (unsigned seed = 1; seed <= 3000; seed++)
		run_program(seed, 1);
	printf("3000 programs with throwing funclets: %u handled (%u by a nested dispatch), "
	       "%u unhandled, %u filter and funclet calls; nested 0-3 deep: %u %u %u %u\n",
	       handled, nested_resumed, unhandled, funclet_calls,
	       by_depth[0], by_depth[1], by_depth[2], by_depth[3]);
	fflush(stdout);
	/* Every depth is exercised. */
	for (int i = 0; i <= MAX_NEST; i++)
		ck_assert_uint_gt(by_depth[i], 50);
}
END_TEST

/* A catch rethrows, then an outer one catches: written out by hand. */
START_TEST(dispatch_rethrow_by_hand)
{
	struct prog p = { 2, 1, {
		{ 2, { { K_CATCH, 1, 0, 0 }, { K_FINALLY, 0, 0, 0 } }, 0, { 0, 0, 0, 0 } },
		{ 2, { { K_FAULT, 0, 0, 0 }, { K_CATCH, 1, 0, RETHROW } }, 0, { 0, 0, 0, 0 } } } };
	/* Frame 1 catches; its rethrow leaves by the fault around it, the finally, to frame 0's catch. */
	static const struct event want[] = {
		{ E_HANDLER, 1, 1 }, { E_FAULT, 1, 0 }, { E_FINALLY, 0, 1 }, { E_HANDLER, 0, 0 },
	};
	struct runtime rt;
	sw_exception_result res;
	sb_world w;

	set_up(&w, &rt, &p);
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, rt.tracker, 0, &res),
	                 SW_E_ABORTED);
	ck_assert_int_eq(rt.resumed, 1);
	ck_assert_int_eq(rt.ev.n, 4);
	for (int i = 0; i < 4; i++)
		ck_assert(memcmp(&rt.ev.e[i], &want[i], sizeof want[i]) == 0);
	ck_assert_ptr_eq(rt.final.method, &method_handles[0]);
	ck_assert_uint_eq(sw_context_sp(&rt.final.resume), CFA(0) - 96);
	ck_assert_uint_eq(sw_context_ip(&rt.final.resume), METHOD_AT(0) + CONTINUATION);
	ck_assert_uint_eq(rt.head_at_resume, 0);
	ck_assert_uint_eq(sb_get(&w, EXC_SLOT), 0);
	sb_fini(&w);
}
END_TEST

/*
 * Hostile: every finally throws, and the funclet it throws from has a
 * finally of its own that throws again, for ever.  The chain of trackers
 * ends it with SW_E_LIMIT, which every dispatch gives back; and a tracker
 * list that loops is refused before anything runs.
 */
START_TEST(dispatch_nesting_bounded)
{
	struct prog p = { 1, 1, {
		{ 2, { { K_CATCH, 1, 0, 0 }, { K_FINALLY, 0, 0, 0 } }, 0, { 0, 0, 0, 0 } } } };
	struct runtime rt;
	sw_exception_result res;
	sb_world w;

	set_up(&w, &rt, &p);
	rt.hostile = 1;
	rt.damaged = 1;
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, rt.tracker, 0, &res),
	                 SW_E_LIMIT);
	ck_assert_int_eq(rt.max_level, SW_EXCEPTION_MAX_NESTING + 1);
	ck_assert_int_eq(rt.level, 0);
	ck_assert_uint_eq(sb_get(&w, EXC_SLOT), 0);
	/* A tracker whose next is itself. */
	sb_put(&w, rt.tracker + 0x200, rt.tracker + 0x200);
	sb_put(&w, EXC_SLOT, rt.tracker + 0x200);
	rt.hostile = 0;
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, rt.tracker, 0, &res),
	                 SW_E_FRAMECYCLE);
	ck_assert_int_eq(rt.ev.n, 0);
	sb_fini(&w);
}
END_TEST

/* A fixed program: the shapes the issue names, order written out by hand. */
START_TEST(dispatch_nested_by_hand)
{
	struct prog p = { 3, 2, {
		{ 2, { { K_CATCH, 2, 0, 0 }, { K_FINALLY, 0, 0, 0 } }, 0, { 0, 0, 0, 0 } },
		{ 3, { { K_FAULT, 0, 0, 0 }, { K_FILTER, 0, 0, 0 }, { K_CATCH, 1, 0, 0 } }, 1, { K_FINALLY, 0, 0, 0 } },
		{ 2, { { K_FILTER, 0, 0, 0 }, { K_FAULT, 0, 0, 0 } }, 0, { 0, 0, 0, 0 } } } };
	struct runtime rt;
	sw_exception_result res;
	sb_world w;
	/* Filters in frames 2 then 1 say no; frame 0's catch takes it; then unwind. */
	static const struct event want[] = {
		{ E_FILTER, 2, 0 }, { E_FILTER, 1, 1 },
		{ E_FAULT, 2, 1 }, { E_FAULT, 1, 0 }, { E_FINALLY, 0, 1 }, { E_HANDLER, 0, 0 },
	};

	set_up(&w, &rt, &p);
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 2, &ops, &rt, rt.tracker, 0, &res),
	                 SW_OK);
	ck_assert_int_eq(rt.ev.n, 6);
	for (int i = 0; i < 6; i++)
		ck_assert(memcmp(&rt.ev.e[i], &want[i], sizeof want[i]) == 0);
	ck_assert_ptr_eq(res.method, &method_handles[0]);
	sb_fini(&w);
}
END_TEST

/*
 * The Frames the second pass pops: only those below the SP the catch
 * resumes on.  Frame 1 has a finally and an InlinedCallFrame, frame 0 the
 * catch and an InlinedCallFrame of its own: frame 1's is unlinked, frame
 * 0's stays, inactive (frame 1 called directly), or active (frame 0 is in
 * a P/Invoke whose native code called frame 1), and then made inactive.
 */
#define ICF_IN(i) (CFA(i) - 80)

START_TEST(dispatch_pops_frames_below_resume_sp)
{
	struct prog p = { 2, 1, {
		{ 1, { { K_CATCH, 1, 0, 0 } }, 0, { 0, 0, 0, 0 } },
		{ 1, { { K_FINALLY, 0, 0, 0 } }, 0, { 0, 0, 0, 0 } } } };
	static const struct event want[] = { { E_FINALLY, 1, 0 }, { E_HANDLER, 0, 0 } };

	for (int active = 0; active < 2; active++) {
		uint64_t none[SW_ICF_FIELDS] = { 0, 0, 0, 0 };
		uint64_t in_call[SW_ICF_FIELDS] = { 0x1c8, CFA(0) - 96, METHOD_AT(0) + SITE + 1,
		                                    CFA(0) - 16 };
		struct runtime rt;
		sw_exception_result res;
		sb_world w;

		set_up(&w, &rt, &p);
		sb_frame(&w, ICF_IN(0), 0, SW_FRAME_INLINED_CALL, 0, active ? in_call : none,
		         SW_ICF_FIELDS);
		sb_frame(&w, ICF_IN(1), ICF_IN(0), SW_FRAME_INLINED_CALL, 0, none, SW_ICF_FIELDS);
		sb_put(&w, SB_HEAD_SLOT, ICF_IN(1));
		if (active) {
			/* Frame 1 returns into the native code frame 0's P/Invoke called. */
			sb_put(&w, CFA(1) - 8, SB_NATIVE_IP + 0x40);
			rt.damaged = 1;         /* walk_one's expectations assume direct calls */
		}
		ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, rt.tracker, 0,
		                                       &res), SW_OK);
		ck_assert_int_eq(rt.ev.n, 2);
		for (int i = 0; i < 2; i++)
			ck_assert(memcmp(&rt.ev.e[i], &want[i], sizeof want[i]) == 0);
		ck_assert_ptr_eq(res.method, &method_handles[0]);
		ck_assert_uint_eq(sw_context_sp(&res.resume), CFA(0) - 96);
		ck_assert_msg(sb_get(&w, SB_HEAD_SLOT) == ICF_IN(0),
		              "%s ICF in the handling frame: head %#llx, want %#llx",
		              active ? "active" : "inactive",
		              (unsigned long long)sb_get(&w, SB_HEAD_SLOT),
		              (unsigned long long)ICF_IN(0));
		ck_assert_uint_eq(sb_get(&w, ICF_IN(0)), 0);
		/*
		 * The active one is reset, as PopExplicitFrames does: its call is
		 * over, its return address cleared; the rest kept.
		 */
		ck_assert_uint_eq(sb_get(&w, ICF_IN(0) + 16 + 8 * SW_ICF_RETURN_ADDRESS), 0);
		ck_assert_uint_eq(sb_get(&w, ICF_IN(0) + 16 + 8 * SW_ICF_CALL_SITE_SP),
		                  active ? CFA(0) - 96 : 0);
		sb_fini(&w);
	}
}
END_TEST

/*
 * A native frame between the throw and the catch whose personality
 * routine has work there (a C++ frame with destructors): the dispatch
 * cannot run it, and stops in the first pass before any funclet runs
 * rather than unwind past the destructors.  The same frame without a
 * personality is unwound like any native frame.
 */
START_TEST(dispatch_stops_at_personality)
{
	struct prog p = { 3, 1, {
		{ 1, { { K_CATCH, 1, 0, 0 } }, 0, { 0, 0, 0, 0 } },
		{ 0, { { 0, 0, 0, 0 } }, 0, { 0, 0, 0, 0 } },
		{ 1, { { K_FINALLY, 0, 0, 0 } }, 0, { 0, 0, 0, 0 } } } };
	static const struct event want[] = { { E_FINALLY, 2, 0 }, { E_HANDLER, 0, 0 } };
	struct runtime rt;
	sw_exception_result res;
	sb_world w;

	set_up(&w, &rt, &p);
	rt.damaged = 1;                 /* walk_one takes every native frame for the throw helper */
	sb_reflag(&w, METHOD_AT(1), SW_CODE_NATIVE | SW_CODE_PERSONALITY);
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, rt.tracker,
	                                       SW_WALK_NATIVE_FRAMES, &res), SW_E_UNSUPPORTED);
	ck_assert_int_eq(rt.ev.n, 0);
	ck_assert_uint_eq(sb_get(&w, EXC_SLOT), 0);
	sb_reflag(&w, METHOD_AT(1), SW_CODE_NATIVE);
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, rt.tracker,
	                                       SW_WALK_NATIVE_FRAMES, &res), SW_OK);
	ck_assert_int_eq(rt.ev.n, 2);
	for (int i = 0; i < 2; i++)
		ck_assert(memcmp(&rt.ev.e[i], &want[i], sizeof want[i]) == 0);
	ck_assert_ptr_eq(res.method, &method_handles[0]);
	ck_assert_uint_eq(res.frames, 2);       /* managed frames: the native one is not counted */
	sb_fini(&w);
}
END_TEST

/* ---- native frames' personality routines, from a real module's CFI ---- */

#ifndef DISPATCH_SRCDIR
#define DISPATCH_SRCDIR "tests/dispatch"
#endif
#define PERS_DIR  "tests/check_dispatch.d"
#define PERS_SO   PERS_DIR "/personality.so"
#define PERS_BIAS 0x10000000ull

/*
 * tests/dispatch/personality.cpp (g++: destructors, a catch) and plain.c
 * (gcc) as one shared object; 0 (a skip, or a failure under CI=true)
 * without g++ or readelf.
 */
static int pers_build(void)
{
	const char *ci = getenv("CI");

	if (system("command -v g++ >/dev/null 2>&1 && command -v gcc >/dev/null 2>&1 && "
	           "command -v readelf >/dev/null 2>&1") != 0) {
		if (ci && strcmp(ci, "true") == 0)
			ck_abort_msg("g++, gcc or readelf not found (CI=true: they are required)");
		printf("SKIP: g++, gcc or readelf not found: no native frames with personality\n");
		return 0;
	}
	ck_assert_int_eq(system("mkdir -p " PERS_DIR " && gcc -O2 -fPIC -c -o " PERS_DIR "/plain.o "
	                        DISPATCH_SRCDIR "/plain.c && g++ -O2 -fPIC -shared -o " PERS_SO " "
	                        DISPATCH_SRCDIR "/personality.cpp " PERS_DIR "/plain.o"), 0);
	return 1;
}

/* An FDE as readelf lists it, and whether its personality routine has work there. */
struct pers_fde {
	uint64_t lo, hi;
	int personality;
};

/*
 * The oracle: readelf --debug-dump=frames.  A frame has work for its
 * personality routine when its CIE's augmentation has 'P', and either no
 * 'L' or an LSDA pointer (the FDE's augmentation data) that is not 0.
 */
static size_t readelf_fdes(const char *path, struct pers_fde *out, size_t cap)
{
	struct { unsigned long off; char aug[16]; } cie[16];
	size_t ncie = 0, n = 0;
	int in_fde = 0, cie_p = 0, cie_l = 0;
	char line[512];
	FILE *p;

	snprintf(line, sizeof line, "readelf --debug-dump=frames %s 2>/dev/null", path);
	p = popen(line, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof line, p)) {
		unsigned long off, at;
		unsigned long long lo, hi;
		const char *d;

		if (strstr(line, " FDE cie=")) {
			ck_assert_int_eq(sscanf(line, "%lx %*x %*x FDE cie=%lx pc=%llx..%llx", &off, &at, &lo,
			                        &hi), 4);
			ck_assert_uint_lt(n, cap);
			cie_p = cie_l = 0;
			for (size_t i = 0; i < ncie; i++)
				if (cie[i].off == at) {
					cie_p = strchr(cie[i].aug, 'P') != NULL;
					cie_l = strchr(cie[i].aug, 'L') != NULL;
				}
			out[n++] = (struct pers_fde){ lo, hi, cie_p && !cie_l };
			in_fde = 1;
		} else if (strstr(line, " CIE\n") && sscanf(line, "%lx", &off) == 1) {
			ck_assert_uint_lt(ncie, 16);
			cie[ncie].off = off;
			cie[ncie++].aug[0] = '\0';
			in_fde = 0;
		} else if (!in_fde && ncie && strstr(line, "Augmentation: ")) {
			ck_assert_int_eq(sscanf(line, " Augmentation: \"%15[^\"]\"", cie[ncie - 1].aug), 1);
		} else if (in_fde && cie_p && cie_l && (d = strstr(line, "Augmentation data:"))) {
			unsigned byte;
			int used;

			/* The LSDA pointer's bytes: any that is not 0. */
			for (d += strlen("Augmentation data:"); sscanf(d, " %x%n", &byte, &used) == 1; d += used)
				if (byte != 0)
					out[n - 1].personality = 1;
		}
	}
	pclose(p);
	return n;
}

static const char *pers_name(const sw_module *m, uint64_t at)
{
	const char *name = NULL;
	uint64_t off;

	return sw_module_symbolize(m, at, &name, &off) == SW_OK && off == 0 ? name : "";
}

/*
 * The import flags SW_CODE_PERSONALITY on exactly the functions whose FDE
 * readelf shows with a 'P' CIE and an LSDA: the C++ ones with a
 * destructor or a catch (and their .cold parts), not the C ones nor the
 * C runtime's; a full load and a lazy one, whose functions are imported
 * as lookups land in them.
 */
START_TEST(personality_flag_matches_readelf)
{
	static const unsigned modes[] = { 0, SW_MODULE_LAZY };
	struct pers_fde fdes[64];
	size_t n, want = 0;

	if (!pers_build())
		return;
	n = readelf_fdes(PERS_SO, fdes, 64);
	ck_assert_uint_ge(n, 6);
	for (size_t i = 0; i < n; i++)
		want += (size_t)fdes[i].personality;
	/* pers_with_cleanup, pers_with_catch, and their .cold parts. */
	ck_assert_uint_ge(want, 2);
	for (unsigned k = 0; k < sizeof modes / sizeof modes[0]; k++) {
		int seen_cleanup = 0, seen_catch = 0, seen_plain = 0;
		size_t flagged = 0;
		sw_codemap *map;
		sw_module *m;

		ck_assert_int_eq(sw_module_load_flags(PERS_SO, PERS_BIAS, modes[k], NULL, &m), SW_OK);
		ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
		ck_assert_int_eq(sw_module_register(m, map), SW_OK);
		for (size_t i = 0; i < n; i++) {
			const char *name = pers_name(m, fdes[i].lo + PERS_BIAS);
			sw_code_info info;
			sw_status st = sw_codemap_find(map, fdes[i].lo + PERS_BIAS, &info);

			/* The PLT's FDE (an expression) is described by analysis, or not at all. */
			if (st != SW_OK && !fdes[i].personality)
				continue;
			ck_assert_int_eq(st, SW_OK);
			ck_assert_uint_eq(info.start, fdes[i].lo + PERS_BIAS);
			ck_assert_msg(!!(info.flags & SW_CODE_PERSONALITY) == fdes[i].personality,
			              "%s mode %u: %s at %#llx flags %#x, readelf says %s", PERS_SO, modes[k],
			              name, (unsigned long long)fdes[i].lo, info.flags,
			              fdes[i].personality ? "a personality" : "none");
			flagged += (info.flags & SW_CODE_PERSONALITY) != 0;
			if (strcmp(name, "pers_with_cleanup") == 0)
				seen_cleanup = fdes[i].personality;
			if (strcmp(name, "pers_with_catch") == 0)
				seen_catch = fdes[i].personality;
			if (strcmp(name, "plain_function") == 0)
				seen_plain = !fdes[i].personality;
		}
		ck_assert_uint_eq(flagged, want);
		ck_assert(seen_cleanup && seen_catch && seen_plain);
		ck_assert_int_eq(sw_module_unregister(m, map), SW_OK);
		sw_codemap_destroy(map);
		sw_module_free(m);
	}
}
END_TEST

#if defined(__x86_64__)
/*
 * A managed exception thrown through a real native frame: frame 1 (shape
 * "A", no clauses) throws, called from the compiled module's function
 * `native`, at its first instruction (CFA = SP + 8: the return address
 * only, right beneath frame 0's SP), called from frame 0, whose catch
 * takes it.  Through pers_with_cleanup (a destructor: its CIE has a
 * personality, readelf says) the dispatch stops before any funclet;
 * through plain_function it reaches the catch.
 */
static sw_status dispatch_through(sw_module *m, const char *native, struct runtime *rt,
                                  sw_exception_result *res)
{
	static const struct prog p = { 2, 1, {
		{ 1, { { K_CATCH, 1, 0, 0 } }, 0, { 0, 0, 0, 0 } },
		{ 0, { { 0, 0, 0, 0 } }, 0, { 0, 0, 0, 0 } } } };
	struct pers_fde fdes[64];
	size_t n = readelf_fdes(PERS_SO, fdes, 64);
	uint64_t c1 = CFA(0) - 96 - 8, fn = 0;
	sw_status st;
	sb_world w;

	for (size_t i = 0; i < n; i++)
		if (strcmp(pers_name(m, fdes[i].lo + PERS_BIAS), native) == 0)
			fn = fdes[i].lo + PERS_BIAS;
	ck_assert_msg(fn != 0, "%s: no FDE for %s", PERS_SO, native);
	sb_init(&w);
	for (int i = 0; i < 2; i++) {
		building = &p.f[i];
		sb_add_method_a_ex(&w, METHOD_AT(i), &method_handles[i], add_clauses);
	}
	ck_assert_int_eq(sw_module_register(m, w.map), SW_OK);
	sb_put(&w, CFA(0) - 8, 0);              /* frame 0: the outermost */
	sb_put(&w, CFA(0) - 16, 0);
	sb_put(&w, CFA(0) - 24, 0);
	sb_put(&w, c1, METHOD_AT(0) + SITE + 1);        /* the native frame's return address */
	sb_put(&w, c1 - 8, fn + 1);                     /* frame 1's, into `native` */
	sb_put(&w, c1 - 16, CFA(0) - 16);               /* frame 0's rbp, kept by `native` */
	sb_put(&w, c1 - 24, RBX(0));
	sb_put(&w, EXC_SLOT, 0);
	w.thread.exception_head = EXC_SLOT;
	sw_context_init(&w.seed, SW_ARCH_X64);
	sw_context_set(&w.seed, SW_X64_RIP, METHOD_AT(1) + SITE);
	sw_context_set(&w.seed, SW_X64_RSP, c1 - 96);
	sw_context_set(&w.seed, SW_X64_RBP, c1 - 16);
	sw_context_set(&w.seed, SW_X64_RBX, RBX(1));
	memset(rt, 0, sizeof *rt);
	rt->w = &w;
	rt->p = &p;
	rt->damaged = 1;                /* no GC walks: the test's frames are not the harness's */
	rt->tracker = c1 - 96 - 0x400;
	st = sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, rt, rt->tracker, SW_WALK_NATIVE_FRAMES,
	                           res);
	/* Nothing of the exception stays linked once the dispatch has failed. */
	if (st != SW_OK)
		ck_assert_uint_eq(sb_get(&w, EXC_SLOT), 0);
	ck_assert_int_eq(sw_module_unregister(m, w.map), SW_OK);
	sb_fini(&w);
	return st;
}

START_TEST(dispatch_stops_at_cfi_personality)
{
	static const unsigned modes[] = { 0, SW_MODULE_LAZY };
	static const struct event caught = { E_HANDLER, 0, 0 };
	struct runtime rt;
	sw_exception_result res;

	if (!pers_build())
		return;
	for (unsigned k = 0; k < sizeof modes / sizeof modes[0]; k++) {
		sw_module *m;

		ck_assert_int_eq(sw_module_load_flags(PERS_SO, PERS_BIAS, modes[k], NULL, &m), SW_OK);
		ck_assert_int_eq(dispatch_through(m, "pers_with_cleanup", &rt, &res), SW_E_UNSUPPORTED);
		ck_assert_int_eq(rt.ev.n, 0);
		ck_assert_int_eq(dispatch_through(m, "pers_with_catch", &rt, &res), SW_E_UNSUPPORTED);
		ck_assert_int_eq(rt.ev.n, 0);
		ck_assert_int_eq(dispatch_through(m, "plain_function", &rt, &res), SW_OK);
		ck_assert_int_eq(rt.ev.n, 1);
		ck_assert(memcmp(&rt.ev.e[0], &caught, sizeof caught) == 0);
		ck_assert_ptr_eq(res.method, &method_handles[0]);
		ck_assert_uint_eq(res.frames, 2);
		sw_module_free(m);
	}
}
END_TEST
#endif

START_TEST(dispatch_errors)
{
	struct prog p = { 2, 1, {
		{ 1, { { K_CATCH, 1, 0, 0 } }, 0, { 0, 0, 0, 0 } },
		{ 2, { { K_FINALLY, 0, 0, 0 }, { K_FILTER, 0, 0, 0 } }, 0, { 0, 0, 0, 0 } } } };
	sw_exception_ops no_filter = { type_matches, NULL, run_handler };
	struct runtime rt;
	sw_exception_result res;
	sb_world w;
	uint64_t tr = CFA(1) - 96 - 0x400;

	set_up(&w, &rt, &p);
	ck_assert_int_eq(sw_exception_dispatch(NULL, &w.seed, 1, &ops, &rt, tr, 0, &res), SW_E_INVAL);
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &no_filter, &rt, tr, 0, &res),
	                 SW_E_INVAL);
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, tr + 4, 0, &res),
	                 SW_E_INVAL);                               /* misaligned */
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, CFA(0), 0, &res),
	                 SW_E_INVAL);                               /* above the throw */
	ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, tr,
	                                       SW_WALK_POPFRAMES, &res), SW_E_INVAL);
	/* A callback's error stops the dispatch, in either pass, and unlinks the tracker. */
	for (int at = 1; at <= 3; at++) {
		memset(&rt.ev, 0, sizeof rt.ev);
		rt.fail_at = at;
		ck_assert_int_eq(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, tr, 0, &res),
		                 SW_E_ABORTED);
		ck_assert_int_eq(rt.ev.n, at);
		ck_assert_uint_eq(sb_get(&w, EXC_SLOT), 0);
	}
	/* A damaged return address: the walk's error. */
	rt.fail_at = 0;
	rt.damaged = 1;
	memset(&rt.ev, 0, sizeof rt.ev);
	sb_put(&w, CFA(1) - 8, 0x1234);
	ck_assert_int_ne(sw_exception_dispatch(&w.thread, &w.seed, 1, &ops, &rt, tr, 0, &res), SW_OK);
	ck_assert_uint_eq(sb_get(&w, EXC_SLOT), 0);
	sb_fini(&w);
}
END_TEST

/* ---- sw_context_resume on the host ---- */

#if defined(__x86_64__)
static jmp_buf resumed;
uint64_t check_dispatch_seen[17];
void check_dispatch_landing(void);
void check_dispatch_landed(void) __attribute__((noreturn, used));
void check_dispatch_landed(void)
{
	longjmp(resumed, 1);
}

/* Where the resumed context lands: record every register, then go back to the test. */
__asm__(
	".text\n"
	".globl check_dispatch_landing\n"
	".type check_dispatch_landing, @function\n"
	"check_dispatch_landing:\n"
	"	movq %rax, check_dispatch_seen+0(%rip)\n"
	"	movq %rdx, check_dispatch_seen+8(%rip)\n"
	"	movq %rcx, check_dispatch_seen+16(%rip)\n"
	"	movq %rbx, check_dispatch_seen+24(%rip)\n"
	"	movq %rsi, check_dispatch_seen+32(%rip)\n"
	"	movq %rdi, check_dispatch_seen+40(%rip)\n"
	"	movq %rbp, check_dispatch_seen+48(%rip)\n"
	"	movq %rsp, check_dispatch_seen+56(%rip)\n"
	"	movq %r8, check_dispatch_seen+64(%rip)\n"
	"	movq %r9, check_dispatch_seen+72(%rip)\n"
	"	movq %r10, check_dispatch_seen+80(%rip)\n"
	"	movq %r11, check_dispatch_seen+88(%rip)\n"
	"	movq %r12, check_dispatch_seen+96(%rip)\n"
	"	movq %r13, check_dispatch_seen+104(%rip)\n"
	"	movq %r14, check_dispatch_seen+112(%rip)\n"
	"	movq %r15, check_dispatch_seen+120(%rip)\n"
	"	andq $-16, %rsp\n"
	"	call check_dispatch_landed\n"
	"	.size check_dispatch_landing, .-check_dispatch_landing\n");

static uint64_t landing_stack[4096] __attribute__((aligned(16)));

START_TEST(resume_loads_every_register)
{
	static sw_context ctx;
	uint64_t top = (uintptr_t)&landing_stack[4096 - 16];

	sw_context_init(&ctx, SW_ARCH_X64);
	for (unsigned r = 0; r < 16; r++)
		sw_context_set(&ctx, r, 0x1111111111111111ull * (r + 1));
	sw_context_set(&ctx, SW_X64_RSP, top);
	sw_context_set(&ctx, SW_X64_RIP, (uintptr_t)check_dispatch_landing);
	memset(check_dispatch_seen, 0, sizeof check_dispatch_seen);
	if (setjmp(resumed) == 0) {
		sw_context_resume(&ctx);
		ck_abort_msg("sw_context_resume returned");
	}
	for (unsigned r = 0; r < 16; r++)
		ck_assert_uint_eq(check_dispatch_seen[r], r == SW_X64_RSP ? top : 0x1111111111111111ull * (r + 1));
}
END_TEST
#endif

START_TEST(resume_refuses)
{
	sw_context ctx;

	ck_assert_int_eq(sw_context_resume(NULL), SW_E_INVAL);
	sw_context_init(&ctx, SW_ARCH_X64);
	sw_context_set(&ctx, SW_X64_RIP, 0x1000);
#if defined(__x86_64__)
	ck_assert_int_eq(sw_context_resume(&ctx), SW_E_NOREG);  /* no SP */
#endif
	/* A context of another architecture than the host's. */
	sw_context_init(&ctx, sw_arch_host() == SW_ARCH_ARM64 ? SW_ARCH_X64 : SW_ARCH_ARM64);
	ck_assert_int_eq(sw_context_resume(&ctx), SW_E_UNSUPPORTED);
}
END_TEST

static Suite *dispatch_suite(void)
{
	Suite *s = suite_create("dispatch");
	TCase *tc = tcase_create("dispatch");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, dispatch_matches_interpreter);
	tcase_add_test(tc, dispatch_nested_by_hand);
	tcase_add_test(tc, dispatch_nested_matches_interpreter);
	tcase_add_test(tc, dispatch_rethrow_by_hand);
	tcase_add_test(tc, dispatch_nesting_bounded);
	tcase_add_test(tc, dispatch_pops_frames_below_resume_sp);
	tcase_add_test(tc, dispatch_stops_at_personality);
	tcase_add_test(tc, personality_flag_matches_readelf);
#if defined(__x86_64__)
	tcase_add_test(tc, dispatch_stops_at_cfi_personality);
#endif
	tcase_add_test(tc, dispatch_errors);
#if defined(__x86_64__)
	tcase_add_test(tc, resume_loads_every_register);
#endif
	tcase_add_test(tc, resume_refuses);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(dispatch_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
