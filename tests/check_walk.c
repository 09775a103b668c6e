/*
 * check_walk.c - the walk over hand-built x64 stacks whose every frame,
 * register and location is worked out in the comments: managed frames,
 * skipped and active InlinedCallFrames, TransitionFrames, native seeds,
 * a runtime-defined Frame type, and each walk flag.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "stack_builder.h"

#define A_START 0x10001000ull
#define B_START 0x10002000ull
#define S0 (SB_STACK_HI - 0x400)        /* A's SP at entry; [S0] is its return address */
#define CALLER_RBP 0x5000000000000001ull
#define CALLER_RBX 0x5000000000000002ull
#define CALLER_R12 0x5000000000000003ull
#define R13 0x1313ull
#define R14 0x1414ull
#define R15 0x1515ull
#define A_RBX 0xa1a1ull                  /* what A put in rbx */
#define BIT(r) (1ULL << (r))

static int method_a, method_b;           /* their addresses are the handles */

static sw_walk_action count_cb(const sw_crawl_frame *cf, void *data);
static uint64_t lay_out_transition(sb_world *w, sb_method *a, uint32_t attrs);

typedef struct rec {
	sw_frame_state state;
	void *method;
	uint64_t frame, ip, sp;
	int first, interrupted, faulted;
	sw_regdisplay rd;
} rec;

typedef struct recording {
	rec f[32];
	int n;
	int abort_at;                       /* abort when n reaches this (0: never) */
} recording;

static sw_walk_action record_cb(const sw_crawl_frame *cf, void *data)
{
	recording *r = data;
	rec *x;

	ck_assert_int_lt(r->n, 32);
	x = &r->f[r->n++];
	x->state = sw_crawl_frame_state(cf);
	x->method = sw_crawl_frame_method(cf);
	x->frame = sw_crawl_frame_frame(cf);
	x->rd = *sw_crawl_frame_regdisplay(cf);
	x->ip = sw_context_ip(&x->rd.cur);
	x->sp = sw_context_sp(&x->rd.cur);
	/* The cheaper accessors say what the register display says. */
	ck_assert_uint_eq(sw_crawl_frame_ip(cf), x->ip);
	ck_assert_uint_eq(sw_crawl_frame_sp(cf), x->sp);
	/* No ambient SP off x86 (CoreCLR's GetAmbientSPFromCrawlFrame; ambient_sp_x86). */
	ck_assert_uint_eq(sw_crawl_frame_ambient_sp(cf), 0);
	x->first = sw_crawl_frame_is_first(cf);
	x->interrupted = sw_crawl_frame_is_interrupted(cf);
	x->faulted = sw_crawl_frame_has_faulted(cf);
	ck_assert_int_eq(sw_crawl_frame_is_frameless(cf), x->state == SW_STATE_FRAMELESS);
	ck_assert_int_eq(sw_crawl_frame_is_native_marker(cf), x->state == SW_STATE_NATIVE_MARKER);
	ck_assert_int_eq(sw_crawl_frame_depth(cf), (uint32_t)(r->n - 1));
	if (x->state == SW_STATE_NATIVE_FRAME && !sw_crawl_frame_code_info(cf)) {
		/* Unknown code stepped by its frame pointer: no code info, no method. */
		ck_assert_ptr_null(x->method);
	} else if (x->state == SW_STATE_FRAMELESS || x->state == SW_STATE_NATIVE_FRAME) {
		const sw_code_info *ci = sw_crawl_frame_code_info(cf);
		ck_assert_ptr_nonnull(ci);
		ck_assert_ptr_eq(ci->method, x->method);
		/* A funclet's is from its parent's start (funclet_relative_offset_from_parent). */
		if (!sw_crawl_frame_is_funclet(cf))
			ck_assert_uint_eq(sw_crawl_frame_relative_offset(cf), x->ip - ci->start);
		ck_assert_int_eq(x->rd.caller_valid, 1);
	} else {
		ck_assert_ptr_null(sw_crawl_frame_code_info(cf));
	}
	if (r->abort_at && r->n == r->abort_at)
		return SW_ABORT;
	return SW_CONTINUE;
}

static void walk(sb_world *w, const sw_context *seed, unsigned flags, recording *r)
{
	sw_walk_error err;
	sw_walk_action a;

	memset(r, 0, sizeof *r);
	a = sw_walk_frames(&w->thread, seed, 0, record_cb, r, flags, &err);
	ck_assert_msg(a == SW_CONTINUE, "walk failed: %s at depth %u",
	              sw_strerror(err.status), err.depth);
}

/*
 * A walk that stops short of the thread's outermost frame: it fails with
 * `status`, at the frame whose IP is `ip`, after the frames it recorded.
 */
static void walk_stopped(sb_world *w, const sw_context *seed, unsigned flags, sw_walk_callback cb,
                         recording *r, sw_status status, uint64_t ip)
{
	sw_walk_error err;

	memset(r, 0, sizeof *r);
	ck_assert_int_eq(sw_walk_frames(&w->thread, seed, 0, cb, r, flags, &err), SW_FAILED);
	ck_assert_msg(err.status == status, "stopped by %s, want %s", sw_strerror(err.status),
	              sw_strerror(status));
	ck_assert_uint_eq(err.ip, ip);
}

static void check_reg(const rec *x, unsigned reg, uint64_t value, uint64_t loc)
{
	ck_assert_msg(x->rd.cur.valid & BIT(reg), "%s not valid", sw_arch_reg_name(SW_ARCH_X64, reg));
	ck_assert_msg(x->rd.cur.regs[reg] == value, "%s = %#llx, want %#llx",
	              sw_arch_reg_name(SW_ARCH_X64, reg),
	              (unsigned long long)x->rd.cur.regs[reg], (unsigned long long)value);
	ck_assert_msg(x->rd.cur_loc[reg] == loc, "%s loc = %#llx, want %#llx",
	              sw_arch_reg_name(SW_ARCH_X64, reg),
	              (unsigned long long)x->rd.cur_loc[reg], (unsigned long long)loc);
}

/* A called from native code, with its saves, at entry SP S0. */
static void lay_out_a(sb_world *w, sb_method *a)
{
	*a = sb_add_method_a(w, A_START, &method_a);
	sb_put(w, S0, SB_NATIVE_IP);
	sb_put(w, S0 - 8, CALLER_RBP);
	sb_put(w, S0 - 16, CALLER_RBX);
}

/* Scenario 1: B (active, in its body) called by A at A+25. */
static void lay_out_b_over_a(sb_world *w, sb_method *a, sb_method *b)
{
	lay_out_a(w, a);
	*b = sb_add_method_b(w, B_START, &method_b);
	sb_put(w, S0 - 96, A_START + 25);
	sb_put(w, S0 - 104, CALLER_R12);
	sb_put(w, S0 - 112, A_RBX);
	sw_context_set(&w->seed, SW_X64_RIP, B_START + b->body);
	sw_context_set(&w->seed, SW_X64_RSP, S0 - 128);
	sw_context_set(&w->seed, SW_X64_RBP, S0 - 8);
	sw_context_set(&w->seed, SW_X64_RBX, 0xb1b1);
	sw_context_set(&w->seed, SW_X64_R12, 0xb2b2);
	sw_context_set(&w->seed, SW_X64_R13, R13);
	sw_context_set(&w->seed, SW_X64_R14, R14);
	sw_context_set(&w->seed, SW_X64_R15, R15);
	sw_context_set(&w->seed, SW_X64_RAX, 0xaaaa);
}

START_TEST(managed_frames_and_marker)
{
	sb_world w;
	sb_method a, b;
	recording r;

	sb_init(&w);
	lay_out_b_over_a(&w, &a, &b);
	walk(&w, &w.seed, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 3);

	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[0].method, &method_b);
	ck_assert_uint_eq(r.f[0].ip, B_START + 20);
	ck_assert_int_eq(r.f[0].first, 1);
	check_reg(&r.f[0], SW_X64_RBX, 0xb1b1, 0);
	check_reg(&r.f[0], SW_X64_RAX, 0xaaaa, 0);

	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	ck_assert_int_eq(r.f[1].first, 0);
	check_reg(&r.f[1], SW_X64_RIP, A_START + 25, S0 - 96);
	check_reg(&r.f[1], SW_X64_RSP, S0 - 88, 0);
	check_reg(&r.f[1], SW_X64_RBX, A_RBX, S0 - 112);
	check_reg(&r.f[1], SW_X64_R12, CALLER_R12, S0 - 104);
	check_reg(&r.f[1], SW_X64_RBP, S0 - 8, 0);
	check_reg(&r.f[1], SW_X64_R13, R13, 0);
	/* Volatile registers do not survive a call. */
	ck_assert(!(r.f[1].rd.cur.valid & BIT(SW_X64_RAX)));

	ck_assert_int_eq(r.f[2].state, SW_STATE_NATIVE_MARKER);
	ck_assert_ptr_null(r.f[2].method);
	check_reg(&r.f[2], SW_X64_RIP, SB_NATIVE_IP, S0);
	check_reg(&r.f[2], SW_X64_RSP, S0 + 8, 0);
	check_reg(&r.f[2], SW_X64_RBX, CALLER_RBX, S0 - 16);
	check_reg(&r.f[2], SW_X64_RBP, CALLER_RBP, S0 - 8);
	check_reg(&r.f[2], SW_X64_R12, CALLER_R12, S0 - 104);

	/* Without NOTIFY_ON_U2M_TRANSITIONS there is no marker. */
	walk(&w, &w.seed, 0, &r);
	ck_assert_int_eq(r.n, 2);
	sb_fini(&w);
}
END_TEST

/* FUNCTIONSONLY also skips funclets (their parent is reported in its own right). */
START_TEST(functions_only_skips_funclets)
{
	sb_world w;
	sb_method a, b;
	recording r;
	sw_code_info ci;

	sb_init(&w);
	lay_out_b_over_a(&w, &a, &b);
	/* Re-register B as a funclet of A, with the same code and metadata. */
	ck_assert_int_eq(sw_codemap_find(w.map, B_START, &ci), SW_OK);
	{
		unsigned char blob[256];
		memcpy(blob, ci.unwind, ci.unwind_size);
		ck_assert_int_eq(sw_codemap_remove(w.map, B_START), SW_OK);
		ci.unwind = blob;
		ci.flags = SW_CODE_FUNCLET;
		ci.parent = &method_a;
		ck_assert_int_eq(sw_codemap_add(w.map, &ci), SW_OK);
	}
	walk(&w, &w.seed, SW_WALK_FUNCTIONSONLY, &r);
	ck_assert_int_eq(r.n, 1);
	ck_assert_ptr_eq(r.f[0].method, &method_a);
	walk(&w, &w.seed, 0, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_ptr_eq(r.f[0].method, &method_b);
	sb_fini(&w);
}
END_TEST

/* Re-register the method at F_START as funclet 0xf0f0 of A (same code shape and metadata). */
#define F_START 0x10003000ull
static void make_funclet_of_a(sb_world *w, uint32_t funclet_flags)
{
	sb_reregister(w, F_START, (void *)0xf0f0, funclet_flags, &method_a);
}

/* Put funclet F (shape B, at F_START) on top of B, called at B+20. */
static void lay_out_funclet_over_b(sb_world *w, uint32_t funclet_flags)
{
	sb_method a, b, f;

	lay_out_b_over_a(w, &a, &b);
	f = sb_add_method_b(w, F_START, &method_b);
	make_funclet_of_a(w, funclet_flags);
	sb_put(w, S0 - 136, B_START + 20);
	sb_put(w, S0 - 144, 0xb2b2);
	sb_put(w, S0 - 152, 0xb1b1);
	sw_context_set(&w->seed, SW_X64_RIP, F_START + f.body);
	sw_context_set(&w->seed, SW_X64_RSP, S0 - 168);
}

static sw_walk_action funclet_cb(const sw_crawl_frame *cf, void *data)
{
	recording *r = data;
	rec *x = &r->f[r->n++];

	x->state = sw_crawl_frame_state(cf);
	x->method = sw_crawl_frame_method(cf);
	/* Reuse the flag slots: first = funclet, interrupted = filter, faulted = parent. */
	x->first = sw_crawl_frame_is_funclet(cf);
	x->interrupted = sw_crawl_frame_is_filter_funclet(cf);
	x->faulted = sw_crawl_frame_is_parent_of_funclet(cf);
	return SW_CONTINUE;
}

static void walk_funclets(sb_world *w, unsigned flags, recording *r)
{
	memset(r, 0, sizeof *r);
	ck_assert_int_eq(sw_walk_frames(&w->thread, &w->seed, 0, funclet_cb, r, flags, NULL), SW_CONTINUE);
}

START_TEST(funclets_and_their_parents)
{
	sb_world w;
	recording r;

	sb_init(&w);
	lay_out_funclet_over_b(&w, SW_CODE_FUNCLET);
	/* Reported as they are: the funclet, the frame between, the parent flagged. */
	walk_funclets(&w, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 4);
	ck_assert_ptr_eq(r.f[0].method, (void *)0xf0f0);
	ck_assert_int_eq(r.f[0].first, 1);
	ck_assert_int_eq(r.f[0].interrupted, 0);
	ck_assert_ptr_eq(r.f[1].method, &method_b);
	ck_assert_int_eq(r.f[1].first + r.f[1].faulted, 0);
	ck_assert_ptr_eq(r.f[2].method, &method_a);
	ck_assert_int_eq(r.f[2].faulted, 1);
	ck_assert_int_eq(r.f[3].state, SW_STATE_NATIVE_MARKER);
	ck_assert_int_eq(r.f[3].faulted, 0);

	/* SKIPFUNCLETS and FUNCTIONSONLY: nothing from the funclet up to its parent. */
	walk_funclets(&w, SW_WALK_SKIPFUNCLETS | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_ptr_eq(r.f[0].method, &method_a);
	ck_assert_int_eq(r.f[0].faulted, 1);
	ck_assert_int_eq(r.f[1].state, SW_STATE_NATIVE_MARKER);
	walk_funclets(&w, SW_WALK_FUNCTIONSONLY, &r);
	ck_assert_int_eq(r.n, 1);
	ck_assert_ptr_eq(r.f[0].method, &method_a);

	/* For the GC: the funclet, then its parent, which leaves its roots to it. */
	walk_funclets(&w, SW_WALK_GC_FUNCLET_REFERENCE_REPORTING, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_ptr_eq(r.f[0].method, (void *)0xf0f0);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	ck_assert_int_eq(r.f[1].faulted, 1);
	{
		sw_iter it;
		const sw_crawl_frame *cf;

		ck_assert_int_eq(sw_iter_init(&it, &w.thread, &w.seed, 0,
		                              SW_WALK_GC_FUNCLET_REFERENCE_REPORTING), SW_OK);
		ck_assert_int_eq(sw_iter_next(&it), 1);
		ck_assert_int_eq(sw_crawl_frame_should_report_gc(sw_iter_frame(&it)), 1);
		ck_assert_int_eq(sw_iter_next(&it), 1);
		cf = sw_iter_frame(&it);
		ck_assert_int_eq(sw_crawl_frame_is_parent_of_funclet(cf), 1);
		ck_assert_int_eq(sw_crawl_frame_should_report_gc(cf), 0);
		sw_iter_end(&it);
	}
	sb_fini(&w);

	/*
	 * A filter runs while the frames below its parent live: nothing is
	 * skipped, and SKIPFUNCLETS and FUNCTIONSONLY report the filter itself
	 * (CoreCLR, vm/stackwalk.cpp, StackFrameIterator::Filter, where
	 * FindParentStackFrameForStackWalk gives a filter no parent to skip to).
	 */
	sb_init(&w);
	lay_out_funclet_over_b(&w, SW_CODE_FUNCLET | SW_CODE_FILTER);
	walk_funclets(&w, 0, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.f[0].interrupted, 1);
	walk_funclets(&w, SW_WALK_SKIPFUNCLETS, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_ptr_eq(r.f[0].method, (void *)0xf0f0);
	ck_assert_ptr_eq(r.f[1].method, &method_b);
	ck_assert_ptr_eq(r.f[2].method, &method_a);
	ck_assert_int_eq(r.f[2].faulted, 1);
	walk_funclets(&w, SW_WALK_FUNCTIONSONLY, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_ptr_eq(r.f[0].method, (void *)0xf0f0);
	sb_fini(&w);
}
END_TEST

/*
 * A funclet's relative offset.  CoreCLR's rule (dotnet/runtime,
 * src/coreclr): CrawlFrame::GetRelOffset (vm/stackwalk.h) returns
 * EECodeInfo::GetRelOffset (vm/codeman.h), the IP minus the method's
 * start, and a funclet's method is its parent: the JIT emits funclets
 * after the parent's main body in the same code block
 * (EEJitManager::JitCodeToMethodInfo finds that block's start for any IP
 * in it).  So an IP in a funclet of A gives ip - A's start, whatever
 * funclet it is in.  Here funclets are registered on their own; the walk
 * finds the parent as the nearest method below, past A's other funclets
 * (sw_crawl_frame(3)).  Where that fails (another method between, the
 * parent not registered, too far below), the offset is from the
 * funclet's own start, as the man page says.
 */
static int handle_f1, handle_f2, handle_c;

/* The first frame's relative offset, seeded in a shape-B body at `ip`. */
static uint32_t first_offset_at(sb_world *w, uint64_t ip)
{
	sw_iter it;
	uint32_t off;

	sb_put(w, S0 - 168 + 32, SB_NATIVE_IP);         /* B's return address, at CFA-8 */
	sw_context_set(&w->seed, SW_X64_RIP, ip);
	sw_context_set(&w->seed, SW_X64_RSP, S0 - 168);
	sw_context_set(&w->seed, SW_X64_RBP, S0 - 8);
	for (unsigned r = SW_X64_R12; r <= SW_X64_R15; r++)
		sw_context_set(&w->seed, r, r);
	sw_context_set(&w->seed, SW_X64_RBX, 0xb1b1);
	ck_assert_int_eq(sw_iter_init(&it, &w->thread, &w->seed, 0, 0), SW_OK);
	ck_assert_int_eq(sw_iter_next(&it), 1);
	ck_assert_int_eq(sw_crawl_frame_state(sw_iter_frame(&it)), SW_STATE_FRAMELESS);
	off = sw_crawl_frame_relative_offset(sw_iter_frame(&it));
	sw_iter_end(&it);
	return off;
}

START_TEST(funclet_relative_offset_from_parent)
{
	sb_world w;
	sb_method a, f1, f2, c;

	/* A, then its funclets F1 and F2 right after its body, as a JIT lays them out. */
	sb_init(&w);
	a = sb_add_method_a(&w, A_START, &method_a);
	f1 = sb_add_method_b(&w, A_START + a.size, &handle_f1);
	sb_reregister(&w, f1.start, &handle_f1, SW_CODE_FUNCLET, &method_a);
	f2 = sb_add_method_b(&w, f1.start + f1.size, &handle_f2);
	sb_reregister(&w, f2.start, &handle_f2, SW_CODE_FUNCLET | SW_CODE_FILTER, &method_a);
	ck_assert_uint_eq(first_offset_at(&w, f1.start + f1.body), f1.start + f1.body - A_START);
	ck_assert_uint_eq(first_offset_at(&w, f2.start + f2.body), f2.start + f2.body - A_START);
	/* The parent itself: from its start, as before. */
	ck_assert_uint_eq(first_offset_at(&w, A_START + a.body), a.body);
	/* F2 names another parent: F1, A's, lies between; from F2's own start. */
	sb_reregister(&w, f2.start, &handle_f2, SW_CODE_FUNCLET, &method_b);
	ck_assert_uint_eq(first_offset_at(&w, f2.start + f2.body), f2.body);
	/* A removed: nothing below F1 (the search gives up): from F1's start. */
	ck_assert_int_eq(sw_codemap_remove(w.map, A_START), SW_OK);
	ck_assert_uint_eq(first_offset_at(&w, f1.start + f1.body), f1.body);
	sb_fini(&w);

	/* Across empty pages: F two pages above A. */
	sb_init(&w);
	a = sb_add_method_a(&w, A_START, &method_a);
	f1 = sb_add_method_b(&w, A_START + 0x2000, &handle_f1);
	sb_reregister(&w, f1.start, &handle_f1, SW_CODE_FUNCLET, &method_a);
	ck_assert_uint_eq(first_offset_at(&w, f1.start + f1.body), 0x2000 + f1.body);
	/* Another method C between them: not A's block; from F's own start. */
	c = sb_add_method_b(&w, A_START + 0x1000, &handle_c);
	ck_assert_uint_eq(first_offset_at(&w, f1.start + f1.body), f1.body);
	ck_assert_int_eq(sw_codemap_remove(w.map, c.start), SW_OK);
	ck_assert_uint_eq(first_offset_at(&w, f1.start + f1.body), 0x2000 + f1.body);
	sb_fini(&w);

	/* Too far below (more pages than the search visits, 64): from F's start. */
	sb_init(&w);
	a = sb_add_method_a(&w, A_START, &method_a);
	f1 = sb_add_method_b(&w, A_START + 0x100000, &handle_f1);
	sb_reregister(&w, f1.start, &handle_f1, SW_CODE_FUNCLET, &method_a);
	ck_assert_uint_eq(first_offset_at(&w, f1.start + f1.body), f1.body);
	/* A funclet at the bottom of the address space: nothing below it. */
	f2 = sb_add_method_b(&w, 0x100, &handle_f2);
	sb_reregister(&w, f2.start, &handle_f2, SW_CODE_FUNCLET, &method_a);
	ck_assert_uint_eq(first_offset_at(&w, f2.start + f2.body), f2.body);
	sb_fini(&w);
}
END_TEST

/*
 * The ambient SP on x86.  CoreCLR's rule (dotnet/runtime, src/coreclr):
 * CrawlFrame::GetAmbientSPFromCrawlFrame (vm/stackwalk.cpp) calls, on
 * x86 only, EECodeManager::GetAmbientSP (vm/eetwain.cpp) at the frame's
 * relative offset: NULL in a prolog or an epilog; for an EBP frame its
 * outermost base SP (GetOutermostBaseFP: EBP less the saved registers
 * and locals); for an ESP frame the SP plus the argument bytes pushed
 * at that offset (scanArgRegTable).  Both are the body's SP with no
 * call arguments pushed.  On x86-64 and arm64 it is NULL (record_cb
 * checks 0 at every frame of this file's x64 stacks).
 *
 * X (ESP frame) at X86_X: push ebx (0..1); push esi (1..2); sub esp, 8
 * (2..5) | push (9..10); push (10..11); call Y (11..16, Y pops 8) |
 * epilog at 20: add esp, 8; pop esi; pop ebx; ret (26).  Entered with
 * ESP = X86_E ([X86_E] its return address): its body's SP is
 * X86_E - 16, whatever it has pushed.
 * Z (EBP frame) at X86_Z: push ebp; mov ebp, esp; sub esp, 12 (0..6) |
 * push (8..9); call (9..14); add esp, 4 (14..17) | epilog at 20: mov esp,
 * ebp; pop ebp; ret.  Entered with ESP = X86_E: EBP = X86_E - 4,
 * the body's SP X86_E - 16.
 * Y at X86_Y: no prolog, ret 8.
 */
#define X86_BASE 0x20000ull
#define X86_E    (X86_BASE + 0x180)
#define X86_X    0x401000ull
#define X86_Y    0x402000ull
#define X86_Z    0x403000ull

struct x86_world {
	unsigned char stack[0x200];
	sw_memory mem;
	sw_codemap *map;
	sw_thread t;
};

static void x86_put(struct x86_world *x, uint64_t addr, uint32_t v)
{
	for (unsigned b = 0; b < 4; b++)
		x->stack[addr - X86_BASE + b] = (unsigned char)(v >> (8 * b));
}

static void x86_add(struct x86_world *x, uint64_t start, uint32_t size, sw_swu_builder *b)
{
	unsigned char blob[256];
	size_t len;
	sw_code_info ci;

	ck_assert_int_eq(sw_swu_finish(b, size, blob, sizeof blob, &len), SW_OK);
	sw_swu_builder_destroy(b);
	memset(&ci, 0, sizeof ci);
	ci.method = (void *)(uintptr_t)start;
	ci.start = start;
	ci.size = size;
	ci.unwind = blob;
	ci.unwind_size = (uint32_t)len;
	ck_assert_int_eq(sw_codemap_add(x->map, &ci), SW_OK);
}

static void x86_init(struct x86_world *x)
{
	sw_swu_builder *b;

	memset(x, 0, sizeof *x);
	ck_assert_int_eq(sw_codemap_create(&x->map), SW_OK);
	ck_assert_int_eq(sw_memory_init_buffer(&x->mem, x->stack, sizeof x->stack, X86_BASE), SW_OK);
	ck_assert_int_eq(sw_thread_init(&x->t, SW_ARCH_X86, x->map, &x->mem, 0, X86_BASE,
	                                X86_BASE + sizeof x->stack), SW_OK);
	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X86), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X86_EBX), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 2, SW_X86_ESI), SW_OK);
	ck_assert_int_eq(sw_swu_alloc_stack(b, 5, 8), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 5), SW_OK);
	ck_assert_int_eq(sw_swu_push_args(b, 10, 4), SW_OK);
	ck_assert_int_eq(sw_swu_push_args(b, 11, 4), SW_OK);
	ck_assert_int_eq(sw_swu_call_pops_args(b, 16, 8), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 20), SW_OK);
	ck_assert_int_eq(sw_swu_free_stack(b, 23, 8), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 24, SW_X86_ESI), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 25, SW_X86_EBX), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 26), SW_OK);
	x86_add(x, X86_X, 32, b);
	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X86), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 0), SW_OK);
	x86_add(x, X86_Y, 8, b);
	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X86), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X86_EBP), SW_OK);
	ck_assert_int_eq(sw_swu_set_frame(b, 3, SW_X86_EBP, 0), SW_OK);
	ck_assert_int_eq(sw_swu_alloc_stack(b, 6, 12), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 6), SW_OK);
	ck_assert_int_eq(sw_swu_push_args(b, 9, 4), SW_OK);
	ck_assert_int_eq(sw_swu_pop_args(b, 17, 4), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 20), SW_OK);
	ck_assert_int_eq(sw_swu_restore_sp_from_frame(b, 22, 0), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 23, SW_X86_EBP), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 24), SW_OK);
	x86_add(x, X86_Z, 32, b);
	x86_put(x, X86_E, 0x900000);            /* a caller in no known code */
}

/* The ambient SP of frame `depth` of the walk from eip, esp, ebp. */
static uint64_t x86_ambient(struct x86_world *x, uint64_t eip, uint64_t esp, uint64_t ebp, unsigned depth)
{
	sw_context ctx;
	sw_iter it;
	uint64_t sp;

	ck_assert_int_eq(sw_context_init(&ctx, SW_ARCH_X86), SW_OK);
	sw_context_set(&ctx, SW_X86_EIP, eip);
	sw_context_set(&ctx, SW_X86_ESP, esp);
	sw_context_set(&ctx, SW_X86_EBP, ebp);
	ck_assert_int_eq(sw_iter_init(&it, &x->t, &ctx, 0, 0), SW_OK);
	for (unsigned i = 0; i <= depth; i++)
		ck_assert_int_eq(sw_iter_next(&it), 1);
	ck_assert_int_eq(sw_crawl_frame_state(sw_iter_frame(&it)), SW_STATE_FRAMELESS);
	sp = sw_crawl_frame_ambient_sp(sw_iter_frame(&it));
	sw_iter_end(&it);
	return sp;
}

START_TEST(ambient_sp_x86)
{
	struct x86_world x;
	const uint64_t body = X86_E - 16;

	x86_init(&x);
	/* X active in its body: nothing pushed, one argument, two. */
	ck_assert_uint_eq(x86_ambient(&x, X86_X + 7, body, 0, 0), body);
	ck_assert_uint_eq(x86_ambient(&x, X86_X + 10, body - 4, 0, 0), body);
	ck_assert_uint_eq(x86_ambient(&x, X86_X + 11, body - 8, 0, 0), body);
	/* In its prolog and its epilog: none. */
	ck_assert_uint_eq(x86_ambient(&x, X86_X + 1, X86_E - 4, 0, 0), 0);
	ck_assert_uint_eq(x86_ambient(&x, X86_X + 24, X86_E - 8, 0, 0), 0);
	/* X in its call to Y, its two arguments still pushed (Y pops them on return). */
	x86_put(&x, body - 12, (uint32_t)(X86_X + 16));
	ck_assert_uint_eq(x86_ambient(&x, X86_Y, body - 12, 0, 1), body);
	/* Y itself, which has no body but its whole code: its SP. */
	ck_assert_uint_eq(x86_ambient(&x, X86_Y, body - 12, 0, 0), body - 12);
	/* Z, an EBP frame, active with an argument pushed: EBP less its frame. */
	ck_assert_uint_eq(x86_ambient(&x, X86_Z + 9, body - 4, X86_E - 4, 0), body);
	ck_assert_uint_eq(x86_ambient(&x, X86_Z + 2, X86_E - 4, X86_E - 4, 0), 0);
	sw_codemap_destroy(x.map);
}
END_TEST

/*
 * GC roots.  A: a stack slot at CFA-40 live over its call at +25, rbx live
 * over it too (B saved rbx at S0-112).  B (active at +20): r12 live there,
 * never saved (so it is in the seed's register), a slot live only at 0-5.
 */
static void a_gc(sw_swu_builder *b)
{
	ck_assert_int_eq(sw_swu_gc_stack_slot(b, -40, 0, 20, 30), SW_OK);
	ck_assert_int_eq(sw_swu_gc_register(b, SW_X64_RBX, SW_GC_INTERIOR, 10, 40), SW_OK);
}

static void b_gc(sw_swu_builder *b)
{
	ck_assert_int_eq(sw_swu_gc_register(b, SW_X64_R12, 0, 15, 25), SW_OK);
	ck_assert_int_eq(sw_swu_gc_stack_slot(b, -32, 0, 0, 5), SW_OK);
}

struct gc_seen {
	uint64_t addr[8], value[8];
	uint32_t reg[8], flags[8];
	void *method[8];
	int n;
};

static sw_walk_action gc_root_cb(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	struct gc_seen *g = data;

	ck_assert_int_lt(g->n, 8);
	g->addr[g->n] = root->addr;
	g->value[g->n] = root->value;
	g->reg[g->n] = root->reg;
	g->flags[g->n] = root->flags;
	g->method[g->n] = sw_crawl_frame_method(cf);
	g->n++;
	return SW_CONTINUE;
}

static sw_walk_action gc_walk_cb(const sw_crawl_frame *cf, void *data)
{
	ck_assert_int_eq(sw_crawl_frame_should_report_gc(cf), 1);
	ck_assert_int_eq(sw_crawl_frame_enum_gc_roots(cf, gc_root_cb, data), SW_OK);
	return SW_CONTINUE;
}

/*
 * A method that recurses, M1 -> M2 -> M3 (all shape A, the same handle,
 * each calling the next at A+25); M3 threw through a stub whose
 * TransitionFrame holds its state, and the runtime's (native) dispatcher
 * called funclet F of M2's invocation, active in its body at +20.
 *
 * CoreCLR's rule, from its sources (dotnet/runtime, src/coreclr/vm):
 * - exinfo.cpp, ExInfo::FindParentStackFrameHelper: a funclet called by
 *   the runtime names its parent by the caller SP of the enclosing
 *   clause's frame (m_csfEnclosingClause), i.e. the parent's caller SP;
 *   ExInfo::IsUnwoundToTargetParentFrame matches it against each frame's
 *   caller SP (GetStackFrameForParentCheck).  So the parent is M2, the
 *   frame whose caller SP (CFA) is M2_CFA, not M3, the nearest frame of
 *   the same method (dead: the exception unwound it).
 * - stackwalk.cpp, StackFrameIterator::Filter: SKIPFUNCLETS skips the
 *   funclet and every frame until that parent, which it reports; under
 *   GC_FUNCLET_REFERENCE_REPORTING the funclet is reported, the frames up
 *   to the parent are not, and the parent is reported with
 *   fShouldParentToFuncletSkipReportingGCReferences: it reports no
 *   references, because the funclet (RyuJIT's WantsReportOnlyLeaf) reports
 *   everything it and its parent hold.
 * - eetwain.cpp: a funclet reaches its parent's frame through the PSPSym.
 *   Here F's PSP slot ([F's CFA - 40]) holds M2_CFA, and F's GC
 *   information names M's local at [parent CFA - 40] (SW_GC_PARENT_FRAME):
 *   M2's slot is reported once, by F, at its address in M2's frame; M1,
 *   no funclet's parent, reports its own; M3's, dead, by no one.
 */
#define M1_S   S0                       /* each M's entry SP */
#define M2_S   (M1_S - 96)
#define M3_S   (M2_S - 96)
#define M2_CFA (M2_S + 8)
#define REC_TF (M3_S - 176)             /* M3's stub's TransitionFrame */
#define F_S    (M3_S - 400)             /* F's entry SP; its body SP is F_S - 32 */
#define F_CFA  (F_S + 8)
#define M_REF(s) (0x0b1ec700ull + ((s) & 0xfff))        /* what [CFA - 40] holds in each M */

static int psp_parent_slot;             /* f_gc: also name the PSP slot and M's slot through it */

static void m_gc(sw_swu_builder *b)
{
	ck_assert_int_eq(sw_swu_gc_stack_slot(b, -40, 0, 20, 30), SW_OK);
}

static void f_gc(sw_swu_builder *b)
{
	if (!psp_parent_slot)
		return;
	ck_assert_int_eq(sw_swu_psp_slot(b, -40), SW_OK);
	ck_assert_int_eq(sw_swu_gc_stack_slot(b, -40, SW_GC_PARENT_FRAME, 15, 25), SW_OK);
}

/*
 * M1 -> M2 -> M3 -> stub (TransitionFrame) ... dispatcher -> F, a funclet
 * with `funclet_flags`; F's PSP slot holds `psp`.
 */
static void lay_out_recursion_of(sb_world *w, int with_psp, uint64_t psp, uint32_t funclet_flags)
{
	const uint64_t s[3] = { M1_S, M2_S, M3_S };
	uint64_t block = M3_S - 144;
	uint64_t fields[2] = { 0x7f7f, block };
	sb_method f;

	sb_init(w);
	sb_add_method_a_ex(w, A_START, &method_a, m_gc);
	psp_parent_slot = with_psp;
	f = sb_add_method_b_ex(w, F_START, &method_b, f_gc);
	make_funclet_of_a(w, funclet_flags);

	for (int i = 0; i < 3; i++) {
		sb_put(w, s[i], i == 0 ? SB_NATIVE_IP : A_START + 25);
		sb_put(w, s[i] - 8, i == 0 ? CALLER_RBP : s[i - 1] - 8);       /* rbp */
		sb_put(w, s[i] - 16, i == 0 ? CALLER_RBX : A_RBX);              /* rbx */
		sb_put(w, s[i] + 8 - 40, M_REF(s[i]));
	}
	/* M3's stub: a transition block (r15 .. rbp, return address) and its Frame. */
	sb_put(w, M3_S - 96, A_START + 25);
	sb_put(w, M3_S - 104, M3_S - 8);
	sb_put(w, M3_S - 112, A_RBX);
	sb_put(w, M3_S - 120, CALLER_R12);
	sb_put(w, M3_S - 128, R13);
	sb_put(w, M3_S - 136, R14);
	sb_put(w, M3_S - 144, R15);
	sb_frame(w, REC_TF, 0, SW_FRAME_TRANSITION, 0, fields, 2);
	sb_put(w, SB_HEAD_SLOT, REC_TF);
	/* F, called by native code, with its saves and its PSP slot. */
	sb_put(w, F_S, SB_NATIVE_IP + 0x200);
	sb_put(w, F_S - 8, 0x1212);
	sb_put(w, F_S - 16, 0xb1b1);
	sb_put(w, F_CFA - 40, psp);
	sw_context_set(&w->seed, SW_X64_RIP, F_START + f.body);
	sw_context_set(&w->seed, SW_X64_RSP, F_CFA - 40);
}

static void lay_out_recursion(sb_world *w, int with_psp, uint64_t psp)
{
	lay_out_recursion_of(w, with_psp, psp, SW_CODE_FUNCLET);
}

/* A frame as the funclet tests see it, and the roots it reported. */
struct fun_rec {
	sw_frame_state state;
	void *method;
	uint64_t cfa;
	int funclet, parent, reports;
};

struct fun_walk {
	struct fun_rec f[16];
	int n;
	int enum_roots;
	struct gc_seen *roots;
};

static sw_walk_action fun_cb(const sw_crawl_frame *cf, void *data)
{
	struct fun_walk *fw = data;
	struct fun_rec *x;
	const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);

	ck_assert_int_lt(fw->n, 16);
	x = &fw->f[fw->n++];
	x->state = sw_crawl_frame_state(cf);
	x->method = sw_crawl_frame_method(cf);
	x->cfa = rd->caller_valid ? sw_context_sp(&rd->caller) : 0;
	x->funclet = sw_crawl_frame_is_funclet(cf);
	x->parent = sw_crawl_frame_is_parent_of_funclet(cf);
	x->reports = sw_crawl_frame_should_report_gc(cf);
	/* Managed frames' roots: the stub's Frame here protects nothing it describes. */
	if (fw->enum_roots && x->reports && x->state == SW_STATE_FRAMELESS)
		ck_assert_int_eq(sw_crawl_frame_enum_gc_roots(cf, gc_root_cb, fw->roots), SW_OK);
	return SW_CONTINUE;
}

/* The managed frames of a walk, in order. */
static int fun_walk_managed(sb_world *w, unsigned flags, struct fun_walk *fw, struct fun_rec *out)
{
	int n = 0;

	ck_assert_int_eq(sw_walk_frames(&w->thread, &w->seed, 0, fun_cb, fw, flags, NULL), SW_CONTINUE);
	for (int i = 0; i < fw->n; i++)
		if (fw->f[i].state == SW_STATE_FRAMELESS)
			out[n++] = fw->f[i];
	return n;
}

START_TEST(funclet_parent_by_stack_position)
{
	struct fun_rec m[16];
	struct fun_walk fw;
	struct gc_seen g;
	sb_world w;
	sw_walk_error err;

	lay_out_recursion(&w, 1, M2_CFA);

	/* Every frame: F, M3, then M2 flagged as the parent (its CFA is the one F records), M1. */
	memset(&fw, 0, sizeof fw);
	ck_assert_int_eq(fun_walk_managed(&w, 0, &fw, m), 4);
	ck_assert_ptr_eq(m[0].method, (void *)0xf0f0);
	ck_assert_int_eq(m[0].funclet, 1);
	ck_assert_uint_eq(m[0].cfa, F_CFA);
	ck_assert_uint_eq(m[1].cfa, M3_S + 8);
	ck_assert_int_eq(m[1].parent, 0);
	ck_assert_ptr_eq(m[2].method, &method_a);
	ck_assert_uint_eq(m[2].cfa, M2_CFA);
	ck_assert_int_eq(m[2].parent, 1);
	ck_assert_uint_eq(m[3].cfa, M1_S + 8);
	ck_assert_int_eq(m[3].parent, 0);

	/* SKIPFUNCLETS: the funclet and the dead M3 are skipped; M2 is the first reported. */
	memset(&fw, 0, sizeof fw);
	ck_assert_int_eq(fun_walk_managed(&w, SW_WALK_SKIPFUNCLETS, &fw, m), 2);
	ck_assert_uint_eq(m[0].cfa, M2_CFA);
	ck_assert_int_eq(m[0].parent, 1);
	ck_assert_uint_eq(m[1].cfa, M1_S + 8);

	/*
	 * For the GC: F reports M2's slot, in M2's frame; M3 is not reported;
	 * M2 gets the skip mark and reports nothing; M1 reports its own slot.
	 */
	memset(&fw, 0, sizeof fw);
	memset(&g, 0, sizeof g);
	fw.enum_roots = 1;
	fw.roots = &g;
	ck_assert_int_eq(fun_walk_managed(&w, SW_WALK_GC_FUNCLET_REFERENCE_REPORTING, &fw, m), 3);
	ck_assert_ptr_eq(m[0].method, (void *)0xf0f0);
	ck_assert_int_eq(m[0].reports, 1);
	ck_assert_uint_eq(m[1].cfa, M2_CFA);
	ck_assert_int_eq(m[1].parent, 1);
	ck_assert_int_eq(m[1].reports, 0);
	ck_assert_uint_eq(m[2].cfa, M1_S + 8);
	ck_assert_int_eq(m[2].reports, 1);
	ck_assert_int_eq(g.n, 2);
	ck_assert_ptr_eq(g.method[0], (void *)0xf0f0);
	ck_assert_uint_eq(g.addr[0], M2_CFA - 40);
	ck_assert_uint_eq(g.value[0], M_REF(M2_S));
	ck_assert_uint_eq(g.flags[0], SW_GC_PARENT_FRAME);
	ck_assert_ptr_eq(g.method[1], &method_a);
	ck_assert_uint_eq(g.addr[1], M1_S + 8 - 40);
	ck_assert_uint_eq(g.flags[1], 0);
	sb_fini(&w);

	/*
	 * A funclet without a PSP slot (a blob of before swu(5)'s flag 0x10)
	 * still names its parent by method handle: the nearest M, M3.  This
	 * is the library's old rule, not CoreCLR's (doc/clr.md).
	 */
	lay_out_recursion(&w, 0, 0);
	memset(&fw, 0, sizeof fw);
	ck_assert_int_eq(fun_walk_managed(&w, 0, &fw, m), 4);
	ck_assert_int_eq(m[1].parent, 1);
	ck_assert_uint_eq(m[1].cfa, M3_S + 8);
	ck_assert_int_eq(m[2].parent, 0);
	sb_fini(&w);

	/* A PSP slot naming no frame of the stack fails the walk once it is passed, ... */
	lay_out_recursion(&w, 1, M2_CFA + 8);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, count_cb, &fw.n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADSP);
	sb_fini(&w);
	/* ... and one below the funclet's own CFA at once. */
	lay_out_recursion(&w, 1, F_CFA - 8);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, count_cb, &fw.n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADSP);
	ck_assert_uint_eq(err.ip, F_START + 20);
	sb_fini(&w);
}
END_TEST

/*
 * The same stack in the exception's first pass: F is M2's filter, called
 * while M3, which threw, still lives.  CoreCLR's rule:
 * - vm/stackwalk.cpp, StackFrameIterator::Filter (the comment on Dev11
 *   376329): a filter's parent is reported, not skipped, since it lives;
 *   nothing between them is skipped either.
 * - docs/design/coreclr/botr/clr-abi.md, "Filter GC semantics": so a slot
 *   live in both the filter and its parent is reported twice, which is
 *   harmless only if the object cannot move: the JIT encodes every stack
 *   slot live in a filter as pinned.  vm/gcenv.ee.common.cpp,
 *   CheckDoubleReporting, allows a slot reported twice only when pinned.
 * So F reports M2's slot pinned, M2 reports the same slot pinned, and M3
 * and M1, whose slots no filter shares, report theirs unpinned.
 */
START_TEST(filter_funclet_shared_slots_pinned)
{
	struct fun_rec m[16];
	struct fun_walk fw;
	struct gc_seen g;
	sb_world w;

	lay_out_recursion_of(&w, 1, M2_CFA, SW_CODE_FUNCLET | SW_CODE_FILTER);
	memset(&fw, 0, sizeof fw);
	memset(&g, 0, sizeof g);
	fw.enum_roots = 1;
	fw.roots = &g;
	ck_assert_int_eq(fun_walk_managed(&w, SW_WALK_GC_FUNCLET_REFERENCE_REPORTING, &fw, m), 4);
	ck_assert_int_eq(m[0].funclet, 1);
	ck_assert_uint_eq(m[1].cfa, M3_S + 8);
	ck_assert_uint_eq(m[2].cfa, M2_CFA);
	ck_assert_int_eq(m[2].parent, 1);
	ck_assert_int_eq(m[2].reports, 1);
	ck_assert_uint_eq(m[3].cfa, M1_S + 8);
	ck_assert_int_eq(g.n, 4);
	ck_assert_ptr_eq(g.method[0], (void *)0xf0f0);
	ck_assert_uint_eq(g.addr[0], M2_CFA - 40);
	ck_assert_uint_eq(g.flags[0], SW_GC_PARENT_FRAME | SW_GC_PINNED);
	ck_assert_uint_eq(g.addr[1], M3_S + 8 - 40);
	ck_assert_uint_eq(g.flags[1], 0);
	ck_assert_uint_eq(g.addr[2], M2_CFA - 40);
	ck_assert_uint_eq(g.value[2], M_REF(M2_S));
	ck_assert_uint_eq(g.flags[2], SW_GC_PINNED);
	ck_assert_uint_eq(g.addr[3], M1_S + 8 - 40);
	ck_assert_uint_eq(g.flags[3], 0);
	sb_fini(&w);
}
END_TEST

/*
 * B (active at +20) called by A at +25, with the GC information a_gc and
 * b_gc give them; `slot` at A's CFA + slot_offset holds `ref`.
 */
static void lay_out_gc(sb_world *w, void (*a_gc_info)(sw_swu_builder *),
                       void (*b_gc_info)(sw_swu_builder *), int slot_offset, uint64_t ref)
{
	sb_init(w);
	sb_add_method_a_ex(w, A_START, &method_a, a_gc_info);
	sb_add_method_b_ex(w, B_START, &method_b, b_gc_info);
	sb_put(w, S0, SB_NATIVE_IP);
	sb_put(w, S0 - 8, CALLER_RBP);
	sb_put(w, S0 - 16, CALLER_RBX);
	sb_put(w, S0 - 96, A_START + 25);
	sb_put(w, S0 - 104, CALLER_R12);
	sb_put(w, S0 - 112, A_RBX);
	sb_put(w, S0 + 8 + (uint64_t)(int64_t)slot_offset, ref);
	sw_context_set(&w->seed, SW_X64_RIP, B_START + 20);
	sw_context_set(&w->seed, SW_X64_RSP, S0 - 128);
	sw_context_set(&w->seed, SW_X64_RBP, S0 - 8);
}

START_TEST(gc_roots_of_managed_frames)
{
	sb_world w;
	struct gc_seen g;

	lay_out_gc(&w, a_gc, b_gc, -40, 0x0b1ec7);
	sw_context_set(&w.seed, SW_X64_RBX, 0xb1b1);
	sw_context_set(&w.seed, SW_X64_R12, 0xb2b2);

	memset(&g, 0, sizeof g);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, gc_walk_cb, &g, 0, NULL), SW_CONTINUE);
	ck_assert_int_eq(g.n, 3);
	/* B: r12, live in the seed's register. */
	ck_assert_ptr_eq(g.method[0], &method_b);
	ck_assert_uint_eq(g.addr[0], 0);
	ck_assert_uint_eq(g.reg[0], SW_X64_R12);
	ck_assert_uint_eq(g.value[0], 0xb2b2);
	/* A: its stack slot, and rbx where B saved it. */
	ck_assert_ptr_eq(g.method[1], &method_a);
	ck_assert_ptr_eq(g.method[2], &method_a);
	for (int i = 1; i < 3; i++) {
		if (g.reg[i] == SW_X64_RBX) {
			ck_assert_uint_eq(g.addr[i], S0 - 112);
			ck_assert_uint_eq(g.value[i], A_RBX);
			ck_assert_uint_eq(g.flags[i], SW_GC_INTERIOR);
		} else {
			ck_assert_uint_eq(g.addr[i], S0 + 8 - 40);
			ck_assert_uint_eq(g.value[i], 0x0b1ec7);
		}
	}
	/*
	 * Under ADDRESSES_ONLY rbx is lost above B: A cannot report it.  Under
	 * QUICKUNWIND it is not, on x64: CoreCLR unwinds 64-bit targets in
	 * full whatever the flag (swi_walk_addresses_only).
	 */
	for (int quick = 0; quick <= 1; quick++) {
		sw_iter it;

		ck_assert_int_eq(sw_iter_init(&it, &w.thread, &w.seed, 0,
		                              quick ? SW_WALK_QUICKUNWIND : SW_WALK_ADDRESSES_ONLY), SW_OK);
		ck_assert_int_eq(sw_iter_next(&it), 1);
		ck_assert_int_eq(sw_iter_next(&it), 1);
		memset(&g, 0, sizeof g);
		ck_assert_int_eq(sw_crawl_frame_enum_gc_roots(sw_iter_frame(&it), gc_root_cb, &g),
		                 quick ? SW_OK : SW_E_NOREG);
		sw_iter_end(&it);
	}
	sb_fini(&w);
}
END_TEST

/*
 * CoreCLR's conventions for a frame that is not the active one
 * (vm/eetwain.cpp, EECodeManager::EnumGcRefs; vm/stackwalk.h,
 * CrawlFrame::GetCodeManagerFlags): its liveness is read at the return
 * address minus one, inside the call, and its scratch registers are not
 * reported.  A: a slot at CFA-48 live up to its call only (the call ends
 * at +25, the return address), and rax, a scratch register, live across
 * it.  B, active at +20: rcx, a scratch register, live there.
 */
static void a_gc_to_call(sw_swu_builder *b)
{
	ck_assert_int_eq(sw_swu_gc_stack_slot(b, -48, 0, 20, 25), SW_OK);
	ck_assert_int_eq(sw_swu_gc_register(b, SW_X64_RAX, 0, 10, 40), SW_OK);
}

static void b_gc_scratch(sw_swu_builder *b)
{
	ck_assert_int_eq(sw_swu_gc_register(b, SW_X64_RCX, 0, 15, 25), SW_OK);
}

START_TEST(gc_roots_follow_coreclr_conventions)
{
	sb_world w;
	struct gc_seen g;

	lay_out_gc(&w, a_gc_to_call, b_gc_scratch, -48, 0x0b1ec8);
	sw_context_set(&w.seed, SW_X64_RCX, 0xc1c1);
	sw_context_set(&w.seed, SW_X64_RAX, 0xdead);

	memset(&g, 0, sizeof g);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, gc_walk_cb, &g, 0, NULL), SW_CONTINUE);
	ck_assert_int_eq(g.n, 2);
	/* B, the active frame: its scratch register, from the seed. */
	ck_assert_ptr_eq(g.method[0], &method_b);
	ck_assert_uint_eq(g.reg[0], SW_X64_RCX);
	ck_assert_uint_eq(g.value[0], 0xc1c1);
	/* A, at its call: the slot live up to the call, and not rax. */
	ck_assert_ptr_eq(g.method[1], &method_a);
	ck_assert_uint_eq(g.reg[1], ~0u);
	ck_assert_uint_eq(g.addr[1], S0 + 8 - 48);
	ck_assert_uint_eq(g.value[1], 0x0b1ec8);
	sb_fini(&w);
}
END_TEST

/* Flags that change nothing here, by design (see sw_walk_frames(3)), and the one that checks the seed. */
START_TEST(accepted_and_checking_flags)
{
	sb_world w;
	sb_method a, b;
	recording r;
	sw_walk_error err;
	int n = 0;
	unsigned same[] = {
		SW_WALK_THREAD_IS_SUSPENDED, SW_WALK_ALLOW_INVALID_OBJECTS,   /* no RESUMABLE Frame here */
		SW_WALK_PROFILER_DO_STACK_SNAPSHOT, SW_WALK_SKIP_GSCOOKIE_CHECK,
		SW_WALK_ALLOW_ASYNC_STACK_WALK, SW_WALK_THREAD_EXECUTING_MANAGED_CODE,
		SW_WALK_DISABLE_MISSING_FRAME_DETECTION,
	};

	sb_init(&w);
	lay_out_b_over_a(&w, &a, &b);
	for (unsigned i = 0; i < sizeof same / sizeof same[0]; i++) {
		walk(&w, &w.seed, same[i] | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
		ck_assert_int_eq(r.n, 3);
		ck_assert_uint_eq(r.f[1].rd.cur.regs[SW_X64_RBX], A_RBX);
	}
	/* THREAD_EXECUTING_MANAGED_CODE with a seed that is not managed. */
	sw_context_set(&w.seed, SW_X64_RIP, SB_NATIVE_IP);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, count_cb, &n,
	                                SW_WALK_THREAD_EXECUTING_MANAGED_CODE, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADIP);
	sb_fini(&w);
}
END_TEST

/* A Frame left below SP (never popped) means the transition Frame is missing. */
START_TEST(missing_frame_detection)
{
	sb_world w;
	sb_method a;
	recording r;
	sw_walk_error err;
	uint64_t stale = S0 - 0x300, fields[4] = { 0, 0, 0, 0 };
	int n = 0;

	sb_init(&w);
	lay_out_transition(&w, &a, 0);                        /* TF at S0-176, seed SP S0-300 */
	sb_frame(&w, stale, S0 - 176, SW_FRAME_INLINED_CALL, 0, fields, 4);
	sb_put(&w, SB_HEAD_SLOT, stale);                      /* below the seed's SP */
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADFRAME);
	ck_assert_uint_eq(err.frame, stale);
	walk(&w, &w.seed, SW_WALK_DISABLE_MISSING_FRAME_DETECTION, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	sb_fini(&w);
}
END_TEST

/* Walking a stack of this process the caller is not running on must be asked for. */
START_TEST(async_walks_must_be_asked_for)
{
	uint64_t *other = calloc(1024, sizeof *other);
	sw_codemap *map;
	sw_memory mem;
	sw_thread t;
	sw_iter it;
	uint64_t lo = (uintptr_t)other, hi = lo + 1024 * sizeof *other;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_memory_init_local(&mem, lo, hi, 0), SW_OK);
	ck_assert_int_eq(sw_thread_init(&t, sw_arch_host() == SW_ARCH_NONE ? SW_ARCH_X64 : sw_arch_host(),
	                                map, &mem, 0, lo, hi), SW_OK);
	ck_assert_int_eq(sw_iter_init(&it, &t, NULL, 0, 0), SW_E_INVAL);
	ck_assert_int_eq(sw_iter_init(&it, &t, NULL, 0, SW_WALK_ALLOW_ASYNC_STACK_WALK), SW_OK);
	ck_assert_int_eq(sw_iter_next(&it), 0);
	sw_iter_end(&it);
	sw_codemap_destroy(map);
	free(other);
}
END_TEST

static sw_walk_action trust_cb(const sw_crawl_frame *cf, void *data)
{
	recording *r = data;

	/* Keep the trust in the `faulted` slot, which these tests do not otherwise use. */
	record_cb(cf, data);
	r->f[r->n - 1].faulted = (int)sw_crawl_frame_trust(cf);
	return SW_CONTINUE;
}

/* Native code registered from CFI is walked only with NATIVE_FRAMES. */
START_TEST(native_frames)
{
	sb_world w;
	sb_method a, b;
	recording r;

	sb_init(&w);
	lay_out_b_over_a(&w, &a, &b);
	sb_reflag(&w, A_START, SW_CODE_NATIVE);

	memset(&r, 0, sizeof r);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, trust_cb, &r,
	                                SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, NULL), SW_CONTINUE);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.f[0].faulted, SW_TRUST_CONTEXT);
	ck_assert_int_eq(r.f[1].state, SW_STATE_NATIVE_MARKER);

	/* A returns to native code nothing describes: the walk cannot reach the thread's start. */
	walk_stopped(&w, &w.seed, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_NATIVE_FRAMES, trust_cb, &r,
	             SW_E_NOTFOUND, SB_NATIVE_IP);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.f[1].state, SW_STATE_NATIVE_MARKER);
	ck_assert_int_eq(r.f[2].state, SW_STATE_NATIVE_FRAME);
	ck_assert_ptr_eq(r.f[2].method, &method_a);
	ck_assert_int_eq(r.f[2].faulted, SW_TRUST_JIT);   /* found by unwinding managed B */
	check_reg(&r.f[2], SW_X64_RBX, A_RBX, S0 - 112);
	/* FUNCTIONSONLY keeps managed frames only. */
	walk_stopped(&w, &w.seed, SW_WALK_FUNCTIONSONLY | SW_WALK_NATIVE_FRAMES, trust_cb, &r, SW_E_NOTFOUND,
	             SB_NATIVE_IP);
	ck_assert_int_eq(r.n, 1);
	ck_assert_str_eq(sw_frame_trust_name(SW_TRUST_CFI), "cfi");
	/*
	 * A cache that learnt A's rule under NATIVE_FRAMES (the fast step
	 * takes A then) gives it back as native to the next such walk, and
	 * does not lend it to a walk without, which ends at B (the marker is
	 * not asked for).
	 */
	{
		static sw_walk_cache cache;

		sw_walk_cache_init(&cache);
		for (int k = 0; k < 4; k++) {
			sw_walk_error err;

			memset(&r, 0, sizeof r);
			ck_assert_int_eq(sw_walk_frames_cached(&w.thread, &w.seed, 0, trust_cb, &r,
			                                       SW_WALK_NATIVE_FRAMES, &cache, &err), SW_FAILED);
			ck_assert_int_eq(err.status, SW_E_NOTFOUND);    /* A's caller, as above */
			ck_assert_int_eq(r.n, 2);
			ck_assert_int_eq(r.f[1].state, SW_STATE_NATIVE_FRAME);
			ck_assert_int_eq(r.f[1].faulted, SW_TRUST_JIT);
			/* Cold, then warm. */
			if (k % 2 == 0)
				continue;
			memset(&r, 0, sizeof r);
			ck_assert_int_eq(sw_walk_frames_cached(&w.thread, &w.seed, 0, trust_cb, &r, 0, &cache, NULL),
			                 SW_CONTINUE);
			ck_assert_int_eq(r.n, 1);
			ck_assert_int_eq(r.f[0].state, SW_STATE_FRAMELESS);
		}
	}
	sb_fini(&w);
}
END_TEST

/* A signal handler's frame, the kernel's trampoline, and the interrupted managed code. */
#define H_START 0x10005000ull
#define T_START 0x10006000ull
#define SIG_UC (S0 - 1024)                /* the ucontext */
#define SIG_MC (SIG_UC + 40)                /* its sigcontext */

/*
 * A, with the GC information a_gc_info gives it, interrupted at A+30 by a
 * signal whose handler H (native, shape B) is the seed, on the same stack.
 */
static void lay_out_signal(sb_world *w, sb_extra_fn a_gc_info)
{
	sb_method h;
	sw_swu_builder *bld;
	unsigned char blob[64];
	size_t len;
	sw_code_info ci;

	sb_init(w);
	sb_add_method_a_ex(w, A_START, &method_a, a_gc_info);
	sb_put(w, S0, SB_NATIVE_IP);
	sb_put(w, S0 - 8, CALLER_RBP);
	sb_put(w, S0 - 16, CALLER_RBX);
	/* A was interrupted at A+30; the kernel saved its registers. */
	sb_put(w, SIG_MC + 8 * 10, S0 - 8);          /* rbp */
	sb_put(w, SIG_MC + 8 * 11, 0xa1a1);          /* rbx */
	sb_put(w, SIG_MC + 8 * 13, 0x5a5a);          /* rax */
	sb_put(w, SIG_MC + 8 * 15, S0 - 88);         /* rsp */
	sb_put(w, SIG_MC + 8 * 16, A_START + 30);    /* rip */
	/* The trampoline: native, no unwind rule of its own is needed. */
	ck_assert_int_eq(sw_swu_builder_create(&bld, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_finish(bld, 16, blob, sizeof blob, &len), SW_OK);
	sw_swu_builder_destroy(bld);
	ci = (sw_code_info){ .method = (void *)0x7e57, .start = T_START, .size = 16, .unwind = blob,
	                     .unwind_size = (uint32_t)len,
	                     .flags = SW_CODE_NATIVE | SW_CODE_SIGNAL_TRAMPOLINE };
	ck_assert_int_eq(sw_codemap_add(w->map, &ci), SW_OK);
	/* The handler H (native, shape B) "returns" to the trampoline. */
	h = sb_add_method_b(w, H_START, (void *)0x4a4a);
	sb_reflag(w, H_START, SW_CODE_NATIVE);
	sb_put(w, SIG_UC - 8, T_START);
	sb_put(w, SIG_UC - 16, 0x12);
	sb_put(w, SIG_UC - 24, 0x34);
	sw_context_init(&w->seed, SW_ARCH_X64);
	sw_context_set(&w->seed, SW_X64_RIP, H_START + h.body);
	sw_context_set(&w->seed, SW_X64_RSP, SIG_UC - 40);
}

START_TEST(signal_frames)
{
	sb_world w;
	recording r;
	uint64_t mc = SIG_MC;

	lay_out_signal(&w, NULL);
	walk_stopped(&w, &w.seed, SW_WALK_NATIVE_FRAMES | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, trust_cb, &r,
	             SW_E_NOTFOUND, SB_NATIVE_IP);
	ck_assert_int_eq(r.n, 4);
	ck_assert_int_eq(r.f[0].state, SW_STATE_NATIVE_FRAME);
	ck_assert_int_eq(r.f[1].state, SW_STATE_NATIVE_FRAME);
	ck_assert_ptr_eq(r.f[1].method, (void *)0x7e57);
	ck_assert_int_eq(r.f[1].faulted, SW_TRUST_CFI);
	ck_assert_int_eq(r.f[2].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[2].method, &method_a);
	ck_assert_int_eq(r.f[2].interrupted, 1);
	ck_assert_int_eq(r.f[2].faulted, SW_TRUST_SIGNAL);
	ck_assert_uint_eq(sw_context_ip(&r.f[2].rd.cur), A_START + 30);
	check_reg(&r.f[2], SW_X64_RBX, 0xa1a1, mc + 8 * 11);
	check_reg(&r.f[2], SW_X64_RAX, 0x5a5a, mc + 8 * 13);
	ck_assert_int_eq(r.f[3].state, SW_STATE_NATIVE_MARKER);
	check_reg(&r.f[3], SW_X64_RBX, CALLER_RBX, S0 - 16);
	sb_fini(&w);
}
END_TEST

/*
 * The GC conventions for a frame a signal interrupted.  CoreCLR never
 * walks a kernel signal frame: a thread it stops at an arbitrary
 * instruction to collect is redirected, under a RedirectedThreadFrame
 * (RESUMABLE), and vm/stackwalk.cpp makes the frame after a RESUMABLE
 * Frame the active one (isFirst), which vm/eetwain.cpp,
 * EECodeManager::EnumGcRefs, reports at its own offset with its scratch
 * registers (reportScratchSlots = ActiveStackFrame).  A, interrupted at
 * A+30, resumes there with every register the kernel saved: rax, a
 * scratch register, live over [20, 40), is reported at its slot in the
 * signal frame, and a slot at CFA-40 that becomes live at +30 exactly is
 * reported (at +29, inside a call, it would not be).  +30 lies in A's
 * body: a GC safe point (EECodeManager::IsGcSafe).
 */
static void a_gc_at_signal(sw_swu_builder *b)
{
	ck_assert_int_eq(sw_swu_gc_register(b, SW_X64_RAX, 0, 20, 40), SW_OK);
	ck_assert_int_eq(sw_swu_gc_stack_slot(b, -40, 0, 30, 40), SW_OK);
}

static sw_walk_action managed_roots_cb(const sw_crawl_frame *cf, void *data)
{
	if (!sw_crawl_frame_is_frameless(cf))
		return SW_CONTINUE;
	ck_assert_int_eq(sw_crawl_frame_is_gc_safe(cf), 1);
	ck_assert_int_eq(sw_crawl_frame_enum_gc_roots(cf, gc_root_cb, data), SW_OK);
	return SW_CONTINUE;
}

START_TEST(gc_roots_of_a_frame_a_signal_interrupted)
{
	sb_world w;
	struct gc_seen g;

	lay_out_signal(&w, a_gc_at_signal);
	sb_put(&w, S0 + 8 - 40, 0x0b1ec9);
	memset(&g, 0, sizeof g);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, managed_roots_cb, &g,
	                                SW_WALK_NATIVE_FRAMES, NULL), SW_FAILED);
	ck_assert_int_eq(g.n, 2);
	ck_assert_uint_eq(g.reg[0], SW_X64_RAX);
	ck_assert_uint_eq(g.addr[0], SIG_MC + 8 * 13);
	ck_assert_uint_eq(g.value[0], 0x5a5a);
	ck_assert_uint_eq(g.addr[1], S0 + 8 - 40);
	ck_assert_uint_eq(g.value[1], 0x0b1ec9);
	sb_fini(&w);
}
END_TEST

/*
 * CoreCLR's IsGcSafe (vm/stackwalk.cpp, CrawlFrame::IsGcSafe, asking
 * vm/eetwain.cpp, EECodeManager::IsGcSafe, at the relative offset): safe
 * inside an interruptible range, or at a call's return address, a safe
 * point (vm/gcinfodecoder.cpp, IsInterruptibleSafePoint); a prolog or an
 * epilog is not (vm/gccover.cpp, DoGcStress, collects nowhere there).  B
 * is active at +0 (its prolog), +20 (its body) and +31 (its epilog, which
 * starts at +30); A, its caller, stands at a call each time.
 */
struct safe_seen {
	int safe[4];
	int n;
};

static sw_walk_action gc_safe_cb(const sw_crawl_frame *cf, void *data)
{
	struct safe_seen *s = data;

	if (sw_crawl_frame_is_frameless(cf) && s->n < 4)
		s->safe[s->n++] = sw_crawl_frame_is_gc_safe(cf);
	return SW_CONTINUE;
}

START_TEST(gc_safe_points)
{
	static const struct { uint32_t off; uint64_t sp; int safe; } at[] = {
		{ 0, S0 - 96, 0 },      /* B's entry: its return address at SP */
		{ 20, S0 - 128, 1 },
		{ 31, S0 - 128, 0 },    /* the epilog has freed nothing yet */
	};
	sb_world w;

	lay_out_gc(&w, NULL, NULL, -40, 0);
	for (unsigned i = 0; i < sizeof at / sizeof at[0]; i++) {
		struct safe_seen s = { { 0 }, 0 };

		sw_context_set(&w.seed, SW_X64_RIP, B_START + at[i].off);
		sw_context_set(&w.seed, SW_X64_RSP, at[i].sp);
		ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, gc_safe_cb, &s, 0, NULL), SW_CONTINUE);
		ck_assert_int_eq(s.n, 2);
		ck_assert_msg(s.safe[0] == at[i].safe, "B at +%u: safe %d", at[i].off, s.safe[0]);
		ck_assert_int_eq(s.safe[1], 1);
	}
	ck_assert_int_eq(sw_crawl_frame_is_gc_safe(NULL), 0);
	sb_fini(&w);
}
END_TEST

/* A thread's first function ends the walk: no caller, no marker. */
START_TEST(outermost_function)
{
	sb_world w;
	sb_method a, b;
	recording r;

	sb_init(&w);
	lay_out_b_over_a(&w, &a, &b);
	sb_reflag(&w, A_START, SW_CODE_OUTERMOST);
	walk(&w, &w.seed, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	sb_reflag(&w, A_START, SW_CODE_OUTERMOST | SW_CODE_NATIVE);
	walk(&w, &w.seed, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_NATIVE_FRAMES, &r);
	ck_assert_int_eq(r.n, 3);          /* B, the marker, A */
	ck_assert_int_eq(r.f[2].state, SW_STATE_NATIVE_FRAME);
	sb_fini(&w);
}
END_TEST

/* Unknown native code with a frame-pointer chain, above managed A. */
START_TEST(frame_pointer_fallback)
{
	sb_world w;
	recording r;
	unsigned both = SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK;

	sb_init(&w);
	sb_add_method_a(&w, A_START, &method_a);
	sb_put(&w, S0, SB_NATIVE_IP);
	sb_put(&w, S0 - 8, CALLER_RBP);
	sb_put(&w, S0 - 96, A_START + 25);        /* A called X */
	sb_put(&w, S0 - 104, S0 - 8);             /* X: push rbp; mov rbp, rsp */
	sw_context_set(&w.seed, SW_X64_RIP, SB_NATIVE_IP + 0x900);
	sw_context_set(&w.seed, SW_X64_RSP, S0 - 160);
	sw_context_set(&w.seed, SW_X64_RBP, S0 - 104);

	walk_stopped(&w, &w.seed, both, trust_cb, &r, SW_E_BADSP, SB_NATIVE_IP);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.f[0].state, SW_STATE_NATIVE_FRAME);
	ck_assert_int_eq(r.f[0].faulted, SW_TRUST_CONTEXT);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	ck_assert_int_eq(r.f[1].faulted, SW_TRUST_FRAME_POINTER);
	check_reg(&r.f[1], SW_X64_RIP, A_START + 25, S0 - 96);
	check_reg(&r.f[1], SW_X64_RBP, S0 - 8, S0 - 104);
	check_reg(&r.f[1], SW_X64_RSP, S0 - 88, 0);
	/* A's caller cannot be stepped (its frame pointer is garbage): reported, then the walk stops there. */
	ck_assert_int_eq(r.f[2].state, SW_STATE_NATIVE_FRAME);
	ck_assert_uint_eq(sw_context_ip(&r.f[2].rd.cur), SB_NATIVE_IP);
	ck_assert_str_eq(sw_frame_trust_name(SW_TRUST_FRAME_POINTER), "fp");

	/* Without the fallback nothing describes the seed: no frames, and the walk says it stopped. */
	walk_stopped(&w, &w.seed, SW_WALK_NATIVE_FRAMES, record_cb, &r, SW_E_NOTFOUND, SB_NATIVE_IP + 0x900);
	ck_assert_int_eq(r.n, 0);
	sb_fini(&w);
}
END_TEST

/* Machine code in the buffer (the walker reads code through sw_memory too). */
#define CODE_C    (SB_STACK_BASE + 0x1000)      /* native C: calls at +0x20 */
#define CODE_STUB (SB_STACK_BASE + 0x2000)      /* a PLT-like stub: jmp *[rip + d] */
#define CODE_UNK  (SB_STACK_BASE + 0x3000)      /* unknown code: calls at +0x40 */
#define CODE_D    (SB_STACK_BASE + 0x4000)      /* native D, which C calls (within rel32's reach) */

/* Bytes at addr (at most 8), the rest of their 8-byte slot nops. */
static void put_code(sb_world *w, uint64_t addr, const unsigned char *code, unsigned n)
{
	uint64_t v = 0x9090909090909090ull;

	for (unsigned i = 0; i < n; i++)
		v = (v & ~(0xffull << (8 * i))) | ((uint64_t)code[i] << (8 * i));
	sb_put(w, addr, v);
}

/* call rel32 from addr to target. */
static void put_call(sb_world *w, uint64_t addr, uint64_t target)
{
	uint32_t rel = (uint32_t)(target - (addr + 5));
	unsigned char c[5] = { 0xe8, (unsigned char)rel, (unsigned char)(rel >> 8),
	                       (unsigned char)(rel >> 16), (unsigned char)(rel >> 24) };

	put_code(w, addr, c, 5);
}

/* Unknown code whose frame record is checked: rbp -> [S0 - 144]: next rbp, return address. */
static void seed_unknown(sb_world *w, uint64_t ra)
{
	sb_put(w, S0 - 144, S0 - 8);
	sb_put(w, S0 - 136, ra);
	sw_context_set(&w->seed, SW_X64_RIP, SB_NATIVE_IP + 0x900);
	sw_context_set(&w->seed, SW_X64_RSP, S0 - 160);
	sw_context_set(&w->seed, SW_X64_RBP, S0 - 144);
}

/* The frames of a walk that passes the seed's frame-pointer step, however it ends past it. */
static void walk_past_fallback(sb_world *w, recording *r)
{
	sw_walk_error err;

	memset(r, 0, sizeof *r);
	sw_walk_frames(&w->thread, &w->seed, 0, record_cb, r,
	               SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK, &err);
	ck_assert_int_ge(r->n, 2);
}

/*
 * A frame record must lead to the unknown code's caller, or the walk stops
 * there with SW_E_NOCALLER: never a frame skipped (code that keeps no frame
 * pointer leaves an outer frame's record in it).
 */
START_TEST(frame_pointer_record_checks)
{
	static const unsigned char jmp_got[] = { 0xff, 0x25, 0, 0, 0, 0 };
	unsigned both = SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK;
	sb_world w;
	recording r;

	sb_init(&w);
	sb_add_method_b(&w, CODE_C, NULL);
	sb_reflag(&w, CODE_C, SW_CODE_NATIVE);
	sb_add_method_b(&w, CODE_STUB, NULL);
	sb_reflag(&w, CODE_STUB, SW_CODE_NATIVE);
	sb_add_method_b(&w, CODE_D, NULL);
	sb_reflag(&w, CODE_D, SW_CODE_NATIVE);
	put_code(&w, CODE_STUB, jmp_got, sizeof jmp_got);

	/* The return address goes back from C's direct call to D: the record is D's caller's. */
	put_call(&w, CODE_C + 0x20, CODE_D);
	seed_unknown(&w, CODE_C + 0x25);
	walk_stopped(&w, &w.seed, both, record_cb, &r, SW_E_NOCALLER, SB_NATIVE_IP + 0x900);
	ck_assert_int_eq(r.n, 1);

	/* A direct call to a stub (a PLT entry) may have reached the unknown code. */
	put_call(&w, CODE_C + 0x20, CODE_STUB);
	walk_past_fallback(&w, &r);
	ck_assert_uint_eq(sw_context_ip(&r.f[1].rd.cur), CODE_C + 0x25);

	/* A return address in no known code, and not after a call: no caller. */
	seed_unknown(&w, CODE_UNK + 0x45);
	walk_stopped(&w, &w.seed, both, record_cb, &r, SW_E_NOCALLER, SB_NATIVE_IP + 0x900);
	ck_assert_int_eq(r.n, 1);
	/* After a call (here call *%rax) it is unknown code's return address: stepped. */
	put_code(&w, CODE_UNK + 0x40, (const unsigned char[]){ 0x90, 0x90, 0x90, 0xff, 0xd0 }, 5);
	walk_past_fallback(&w, &r);
	ck_assert_uint_eq(sw_context_ip(&r.f[1].rd.cur), CODE_UNK + 0x45);
	sb_fini(&w);
}
END_TEST

/*
 * ADDRESSES_ONLY and LIGHTUNWIND keep IP, SP and the frame pointer alone;
 * QUICKUNWIND on x64 keeps every callee-saved register, as CoreCLR's
 * 64-bit unwind (vm/stackwalk.cpp: QUICKUNWIND only clears UpdateAllRegs,
 * which x86's unwinder alone reads).
 */
START_TEST(quick_and_light_unwind)
{
	sb_world w;
	sb_method a, b;
	recording r;
	unsigned flags[] = { SW_WALK_ADDRESSES_ONLY, SW_WALK_LIGHTUNWIND };

	sb_init(&w);
	lay_out_b_over_a(&w, &a, &b);
	walk(&w, &w.seed, SW_WALK_QUICKUNWIND | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_uint_eq(r.f[1].rd.cur.valid & (BIT(SW_X64_RBX) | BIT(SW_X64_R12)),
	                  BIT(SW_X64_RBX) | BIT(SW_X64_R12));
	for (unsigned i = 0; i < 2; i++) {
		walk(&w, &w.seed, flags[i] | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
		ck_assert_int_eq(r.n, 3);
		check_reg(&r.f[1], SW_X64_RIP, A_START + 25, S0 - 96);
		check_reg(&r.f[1], SW_X64_RSP, S0 - 88, 0);
		check_reg(&r.f[1], SW_X64_RBP, S0 - 8, 0);
		ck_assert(!(r.f[1].rd.cur.valid & (BIT(SW_X64_RBX) | BIT(SW_X64_R12) | BIT(SW_X64_R13))));
		check_reg(&r.f[2], SW_X64_RBP, CALLER_RBP, S0 - 8);
		check_reg(&r.f[2], SW_X64_RSP, S0 + 8, 0);
	}
	sb_fini(&w);
}
END_TEST

static sw_walk_action count_cb(const sw_crawl_frame *cf, void *data)
{
	(void)cf;
	++*(int *)data;
	return SW_CONTINUE;
}

/*
 * The ICF of active_inlined_call_frame resumes the walk in native code
 * that cannot be unwound from there (its CFA would lie past the stack):
 * the walk stops with that reason at once, rather than come back to the
 * same ICF until its step bound.
 */
START_TEST(icf_into_native_dead_end)
{
	sb_world w;
	sb_method a, b;
	uint64_t icf = S0 - 80;
	uint64_t fields[4] = { 0x1cf, 0, A_START + 25, S0 - 8 };
	sw_walk_error err;
	int n = 0;

	sb_init(&w);
	lay_out_a(&w, &a);
	sb_reflag(&w, A_START, SW_CODE_NATIVE);
	b = sb_add_method_b(&w, B_START, &method_b);
	fields[1] = w.thread.stack_hi - 8;
	sb_frame(&w, icf, 0, SW_FRAME_INLINED_CALL, 0, fields, 4);
	sb_put(&w, SB_HEAD_SLOT, icf);
	sb_put(&w, S0 - 408, SB_NATIVE_IP + 0x40);
	sw_context_set(&w.seed, SW_X64_RIP, B_START + b.body);
	sw_context_set(&w.seed, SW_X64_RSP, S0 - 440);

	/* The frame that could not be unwound is reported without a caller: count, don't check. */
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, count_cb, &n, SW_WALK_NATIVE_FRAMES, &err),
	                 SW_FAILED);
	ck_assert_int_eq(n, 3);         /* B, the ICF, A */
	ck_assert_msg(err.status == SW_E_BADSP, "stopped by %s", sw_strerror(err.status));
	ck_assert_uint_eq(err.ip, A_START + 25);
	(void)a;
	sb_fini(&w);
}
END_TEST

/* An inactive InlinedCallFrame inside A's frame, at S0-80. */
static uint64_t put_inactive_icf(sb_world *w, uint64_t datum)
{
	uint64_t f[4] = { datum, 0, 0, 0 };
	uint64_t addr = S0 - 80;

	sb_frame(w, addr, 0, SW_FRAME_INLINED_CALL, 0, f, 4);
	sb_put(w, SB_HEAD_SLOT, addr);
	return addr;
}

START_TEST(skipped_frames)
{
	sb_world w;
	sb_method a, b;
	recording r;
	uint64_t icf;

	sb_init(&w);
	lay_out_b_over_a(&w, &a, &b);
	icf = put_inactive_icf(&w, 0);

	/* Reported before the method whose frame holds it. */
	walk(&w, &w.seed, 0, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_ptr_eq(r.f[0].method, &method_b);
	ck_assert_int_eq(r.f[1].state, SW_STATE_SKIPPED_FRAME);
	ck_assert_uint_eq(r.f[1].frame, icf);
	ck_assert_ptr_eq(r.f[2].method, &method_a);

	/* HANDLESKIPPEDFRAMES passes over it; FUNCTIONSONLY drops it (no method). */
	walk(&w, &w.seed, SW_WALK_HANDLESKIPPEDFRAMES, &r);
	ck_assert_int_eq(r.n, 2);
	walk(&w, &w.seed, SW_WALK_FUNCTIONSONLY, &r);
	ck_assert_int_eq(r.n, 2);

	/*
	 * A stale datum names no method either: an inactive InlinedCallFrame
	 * stands for none (CoreCLR, vm/frames.h, InlinedCallFrame::GetFunction),
	 * so FUNCTIONSONLY still drops it.
	 */
	put_inactive_icf(&w, 0x1c8);
	walk(&w, &w.seed, 0, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_ptr_null(r.f[1].method);
	walk(&w, &w.seed, SW_WALK_FUNCTIONSONLY, &r);
	ck_assert_int_eq(r.n, 2);

	/* POPFRAMES unlinks it once it has been reported. */
	walk(&w, &w.seed, SW_WALK_POPFRAMES, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_uint_eq(sb_get(&w, SB_HEAD_SLOT), 0);
	sb_fini(&w);
}
END_TEST

/* Scenario 2: A called a stub at A+25 that saved a transition block and pushed a TransitionFrame. */
static uint64_t lay_out_transition(sb_world *w, sb_method *a, uint32_t attrs)
{
	uint64_t block = S0 - 144, tf = S0 - 176;
	uint64_t fields[2] = { 0x7f7f, block };

	if (sw_codemap_count(w->map) == 0)
		lay_out_a(w, a);
	sb_put(w, S0 - 96, A_START + 25);
	sb_put(w, S0 - 104, S0 - 8);        /* rbp */
	sb_put(w, S0 - 112, A_RBX);         /* rbx */
	sb_put(w, S0 - 120, CALLER_R12);    /* r12 */
	sb_put(w, S0 - 128, R13);
	sb_put(w, S0 - 136, R14);
	sb_put(w, S0 - 144, R15);
	sb_frame(w, tf, 0, SW_FRAME_TRANSITION, attrs, fields, 2);
	sb_put(w, SB_HEAD_SLOT, tf);
	sw_context_set(&w->seed, SW_X64_RIP, SB_NATIVE_IP + 0x100);
	sw_context_set(&w->seed, SW_X64_RSP, S0 - 300);
	return tf;
}

START_TEST(transition_frame_from_native_seed)
{
	sb_world w;
	sb_method a;
	recording r;
	uint64_t tf;

	sb_init(&w);
	tf = lay_out_transition(&w, &a, 0);
	walk(&w, &w.seed, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 4);
	ck_assert_int_eq(r.f[0].state, SW_STATE_INITIAL_NATIVE);
	ck_assert_uint_eq(r.f[0].ip, SB_NATIVE_IP + 0x100);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAME);
	ck_assert_uint_eq(r.f[1].frame, tf);
	ck_assert_ptr_eq(r.f[1].method, (void *)0x7f7f);
	ck_assert_int_eq(r.f[2].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[2].method, &method_a);
	ck_assert_int_eq(r.f[2].first, 0);
	check_reg(&r.f[2], SW_X64_RIP, A_START + 25, S0 - 96);
	check_reg(&r.f[2], SW_X64_RSP, S0 - 88, 0);
	check_reg(&r.f[2], SW_X64_RBP, S0 - 8, S0 - 104);
	check_reg(&r.f[2], SW_X64_RBX, A_RBX, S0 - 112);
	check_reg(&r.f[2], SW_X64_R15, R15, S0 - 144);
	ck_assert_int_eq(r.f[3].state, SW_STATE_NATIVE_MARKER);
	check_reg(&r.f[3], SW_X64_RBX, CALLER_RBX, S0 - 16);

	/* Without a seed context the walk starts at the newest Frame. */
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, record_cb, &r, 0, NULL), SW_CONTINUE);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAMELESS);
	/*
	 * What a walk reports first is "first" (CoreCLR, vm/stackwalk.cpp:
	 * ResetCrawlFrame sets isFirst at Init; only NextRaw moving past a
	 * frame clears it, for a Frame to its RESUMABLE attribute): the Frame
	 * an unseeded walk starts at, and the initial native context; the
	 * method the (not RESUMABLE) Frame returns to is not.
	 */
	ck_assert_int_eq(r.f[0].first, 1);
	ck_assert_int_eq(r.f[1].first, 0);
	walk(&w, &w.seed, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, &r);
	ck_assert_int_eq(r.f[0].state, SW_STATE_INITIAL_NATIVE);
	ck_assert_int_eq(r.f[0].first, 1);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAME);
	ck_assert_int_eq(r.f[1].first, 1);
	ck_assert_int_eq(r.f[2].first, 0);

	/* A native seed without NOTIFY_ON_INITIAL_NATIVE_CONTEXT is not reported. */
	walk(&w, &w.seed, 0, &r);
	ck_assert_int_eq(r.n, 2);
	sb_fini(&w);
}
END_TEST

START_TEST(frame_attributes)
{
	sb_world w;
	sb_method a;
	recording r;

	sb_init(&w);
	/* A RESUMABLE Frame makes the next frame the active one: its IP is exact. */
	lay_out_transition(&w, &a, SW_FRAME_ATTR_RESUMABLE);
	walk(&w, &w.seed, 0, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.f[1].first, 1);
	ck_assert_int_eq(r.f[1].interrupted, 0);

	lay_out_transition(&w, &a, SW_FRAME_ATTR_EXCEPTION | SW_FRAME_ATTR_FAULTED);
	walk(&w, &w.seed, 0, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.f[1].first, 0);
	ck_assert_int_eq(r.f[1].interrupted, 1);
	ck_assert_int_eq(r.f[1].faulted, 1);
	sb_fini(&w);
}
END_TEST

/*
 * THREAD_IS_SUSPENDED with a RESUMABLE Frame.  CoreCLR (vm/stackwalk.cpp,
 * StackFrameIterator::NextRaw, FRAME_FUNCTION): the Frame is reported
 * first (ProcessCurrentFrame stopped there); moving past it, when its
 * return address is managed and it is RESUMABLE (isFirst), a walk with
 * THREAD_IS_SUSPENDED returns SWA_FAILED, since the active frame would be
 * unwound once more, which may take a lock.  Without the flag the walk
 * goes on into A as the active frame.  A RESUMABLE Frame whose return
 * address is not managed, or one that is not RESUMABLE, does not fail.
 */
START_TEST(suspended_thread_and_resumable_frame)
{
	sb_world w;
	sb_method a;
	recording r;
	sw_walk_error err;
	uint64_t tf;

	sb_init(&w);
	tf = lay_out_transition(&w, &a, SW_FRAME_ATTR_RESUMABLE);
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, record_cb, &r,
	                                SW_WALK_THREAD_IS_SUSPENDED, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_UNSAFE);
	ck_assert_uint_eq(err.frame, tf);
	ck_assert_int_eq(r.n, 1);
	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);
	ck_assert_uint_eq(r.f[0].frame, tf);
	/* Without the flag: the Frame, then A, active. */
	walk(&w, &w.seed, 0, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.f[1].first, 1);
	/* Not RESUMABLE: the suspended walk goes on. */
	lay_out_transition(&w, &a, 0);
	walk(&w, &w.seed, SW_WALK_THREAD_IS_SUSPENDED, &r);
	ck_assert_int_eq(r.n, 2);
	/* RESUMABLE, but returning to native code: nothing is resumed, no failure. */
	tf = lay_out_transition(&w, &a, SW_FRAME_ATTR_RESUMABLE);
	sb_put(&w, S0 - 96, SB_NATIVE_IP + 0x20);
	walk(&w, &w.seed, SW_WALK_THREAD_IS_SUSPENDED, &r);
	ck_assert_int_eq(r.n, 1);
	ck_assert_uint_eq(r.f[0].frame, tf);
	sb_fini(&w);
}
END_TEST

/* Scenario 3: A made a P/Invoke (active ICF); the native code called B. */
START_TEST(active_inlined_call_frame)
{
	sb_world w;
	sb_method a, b;
	recording r;
	uint64_t icf = S0 - 80;
	/* A method handle with marker bits in its low bits (GetFunction masks them). */
	uint64_t fields[4] = { 0x1ce, S0 - 88, A_START + 25, S0 - 8 };

	sb_init(&w);
	lay_out_a(&w, &a);
	b = sb_add_method_b(&w, B_START, &method_b);
	sb_frame(&w, icf, 0, SW_FRAME_INLINED_CALL, 0, fields, 4);
	sb_put(&w, SB_HEAD_SLOT, icf);
	sb_put(&w, S0 - 408, SB_NATIVE_IP + 0x40);  /* B's return address into native code */
	sb_put(&w, S0 - 416, 0x12);
	sb_put(&w, S0 - 424, 0x34);
	sw_context_set(&w.seed, SW_X64_RIP, B_START + b.body);
	sw_context_set(&w.seed, SW_X64_RSP, S0 - 440);

	walk(&w, &w.seed, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_HANDLESKIPPEDFRAMES, &r);
	ck_assert_int_eq(r.n, 5);
	ck_assert_ptr_eq(r.f[0].method, &method_b);
	ck_assert_int_eq(r.f[1].state, SW_STATE_NATIVE_MARKER);
	check_reg(&r.f[1], SW_X64_RIP, SB_NATIVE_IP + 0x40, S0 - 408);
	check_reg(&r.f[1], SW_X64_RSP, S0 - 400, 0);
	ck_assert_int_eq(r.f[2].state, SW_STATE_FRAME);
	ck_assert_uint_eq(r.f[2].frame, icf);
	ck_assert_ptr_eq(r.f[2].method, (void *)0x1c8);
	/* A resumes from the ICF: IP, SP and the frame pointer only. */
	ck_assert_int_eq(r.f[3].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[3].method, &method_a);
	check_reg(&r.f[3], SW_X64_RIP, A_START + 25, icf + 16 + 2 * 8);
	check_reg(&r.f[3], SW_X64_RSP, S0 - 88, 0);
	check_reg(&r.f[3], SW_X64_RBP, S0 - 8, icf + 16 + 3 * 8);
	ck_assert(!(r.f[3].rd.cur.valid & BIT(SW_X64_RBX)));
	ck_assert_int_eq(r.f[4].state, SW_STATE_NATIVE_MARKER);
	check_reg(&r.f[4], SW_X64_RBX, CALLER_RBX, S0 - 16);

	/*
	 * Without HANDLESKIPPEDFRAMES CoreCLR reports the active ICF twice
	 * (vm/stackwalk.cpp): as FRAME_FUNCTION where the walk leaves the
	 * native code; then NextRaw keeps it as the current Frame while its
	 * call is active (no GotoNextFrame), moves to A at its return address,
	 * and CheckForSkippedFrames finds it below A's caller SP and stops
	 * there as SKIPPED_FRAME_FUNCTION, with GetFunction's method, A's
	 * registers, and the flags the Frame set (not first, not interrupted).
	 * Then A.  So: B, FRAME icf, SKIPPED icf, A.
	 */
	walk(&w, &w.seed, 0, &r);
	ck_assert_int_eq(r.n, 4);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAME);
	ck_assert_int_eq(r.f[2].state, SW_STATE_SKIPPED_FRAME);
	ck_assert_uint_eq(r.f[2].frame, icf);
	ck_assert_ptr_eq(r.f[2].method, (void *)0x1c8);
	check_reg(&r.f[2], SW_X64_RIP, A_START + 25, icf + 16 + 2 * 8);
	ck_assert_int_eq(r.f[2].first, 0);
	ck_assert_int_eq(r.f[2].interrupted, 0);
	ck_assert_int_eq(r.f[3].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[3].method, &method_a);
	/* FUNCTIONSONLY keeps both reports: GetFunction names a method. */
	walk(&w, &w.seed, SW_WALK_FUNCTIONSONLY, &r);
	ck_assert_int_eq(r.n, 4);
	/* HANDLESKIPPEDFRAMES: CheckForSkippedFrames passes it (GotoNextFrame), no callback. */
	walk(&w, &w.seed, SW_WALK_HANDLESKIPPEDFRAMES, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAME);
	ck_assert_ptr_eq(r.f[2].method, &method_a);
	/* A datum with bit 0 set is a calli's, not a method (HasFunction on 64-bit targets). */
	fields[0] = 0x1cf;
	sb_frame(&w, icf, 0, SW_FRAME_INLINED_CALL, 0, fields, 4);
	walk(&w, &w.seed, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 6);
	ck_assert_uint_eq(r.f[2].frame, icf);
	ck_assert_ptr_null(r.f[2].method);
	ck_assert_int_eq(r.f[3].state, SW_STATE_SKIPPED_FRAME);
	ck_assert_ptr_null(r.f[3].method);
	/* With no method, FUNCTIONSONLY drops both (Filter: pFunc NULL). */
	walk(&w, &w.seed, SW_WALK_FUNCTIONSONLY, &r);
	ck_assert_int_eq(r.n, 2);
	/* POPFRAMES leaves the list empty. */
	walk(&w, &w.seed, SW_WALK_POPFRAMES, &r);
	ck_assert_uint_eq(sb_get(&w, SB_HEAD_SLOT), 0);
	sb_fini(&w);
}
END_TEST

/* A runtime-defined Frame: a "resume record" holding IP, SP and RBP directly. */
#define RESUME_FRAME_TYPE 200
static sw_status resume_ra(const sw_frame_view *f, uint64_t *ra)
{
	return sw_frame_read_field(f, 0, ra);
}
static sw_status resume_update(const sw_frame_view *f, sw_regdisplay *rd)
{
	uint64_t ip, sp, fp;
	sw_status st;

	if ((st = sw_frame_read_field(f, 0, &ip)) || (st = sw_frame_read_field(f, 1, &sp)) ||
	    (st = sw_frame_read_field(f, 2, &fp)))
		return st;
	rd->cur.valid = 0;
	sw_context_set(&rd->cur, SW_X64_RIP, ip);
	sw_context_set(&rd->cur, SW_X64_RSP, sp);
	sw_context_set(&rd->cur, SW_X64_RBP, fp);
	rd->cur_loc[SW_X64_RIP] = sw_frame_field_address(f, 0);
	rd->cur_loc[SW_X64_RSP] = 0;
	rd->cur_loc[SW_X64_RBP] = sw_frame_field_address(f, 2);
	return SW_OK;
}
static const sw_frame_ops resume_ops = {
	.type = RESUME_FRAME_TYPE, .name = "ResumeFrame",
	.return_address = resume_ra, .update_regdisplay = resume_update,
};

START_TEST(runtime_defined_frame_type)
{
	sb_world w;
	sb_method a;
	recording r;
	uint64_t fields[3] = { A_START + 25, S0 - 88, S0 - 8 };
	static const sw_frame_ops bad = { .type = 3, .name = "bad" };

	sb_init(&w);
	ck_assert_int_eq(sw_frame_type_register(&bad), SW_E_INVAL);
	if (!sw_frame_type_ops(RESUME_FRAME_TYPE))
		ck_assert_int_eq(sw_frame_type_register(&resume_ops), SW_OK);
	ck_assert_int_eq(sw_frame_type_register(&resume_ops), SW_E_EXISTS);
	ck_assert_ptr_eq(sw_frame_type_ops(RESUME_FRAME_TYPE), &resume_ops);

	lay_out_a(&w, &a);
	sb_frame(&w, S0 - 200, 0, RESUME_FRAME_TYPE, 0, fields, 3);
	sb_put(&w, SB_HEAD_SLOT, S0 - 200);
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, record_cb, &r, 0, NULL), SW_CONTINUE);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	check_reg(&r.f[1], SW_X64_RBP, S0 - 8, S0 - 200 + 16 + 16);
	sb_fini(&w);
}
END_TEST

START_TEST(callback_abort_and_iterator)
{
	sb_world w;
	sb_method a, b;
	recording r;
	sw_iter it;
	int n = 0, rc;

	sb_init(&w);
	lay_out_b_over_a(&w, &a, &b);
	memset(&r, 0, sizeof r);
	r.abort_at = 1;
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, record_cb, &r, 0, NULL), SW_ABORT);
	ck_assert_int_eq(r.n, 1);

	ck_assert_int_eq(sw_iter_init(&it, &w.thread, &w.seed, 0, 0), SW_OK);
	ck_assert_ptr_null(sw_iter_frame(&it));
	while ((rc = sw_iter_next(&it)) > 0) {
		ck_assert_ptr_nonnull(sw_iter_frame(&it));
		n++;
	}
	ck_assert_int_eq(rc, 0);
	ck_assert_int_eq(n, 2);
	ck_assert_int_eq(sw_iter_next(&it), 0);     /* stays done */
	sw_iter_end(&it);
	sw_iter_end(&it);                            /* idempotent */

	/* Bad arguments. */
	ck_assert_int_eq(sw_iter_init(&it, &w.thread, &w.seed, 0, 0x80000000u), SW_E_INVAL);
	ck_assert_int_eq(sw_iter_init(NULL, &w.thread, &w.seed, 0, 0), SW_E_INVAL);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, NULL, NULL, 0, NULL), SW_FAILED);
	sb_fini(&w);
}
END_TEST

START_TEST(failures_say_where_and_why)
{
	sb_world w;
	sb_method a, b;
	sw_walk_error err;
	int n = 0;

	sb_init(&w);
	lay_out_b_over_a(&w, &a, &b);

	/* A's saved return address sends the walk below its own SP: not toward the base. */
	sb_put(&w, S0 - 96, A_START + 25);
	sb_put(&w, S0 - 8, S0 - 2000);        /* A's caller's rbp... harmless */
	sw_context_set(&w.seed, SW_X64_RBP, S0 - 1000);   /* A's CFA would be below B's SP */
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADSP);
	ck_assert_uint_eq(err.depth, 1);
	ck_assert_uint_eq(err.ip, A_START + 25);

	/* A seed SP off the stack. */
	sw_context_set(&w.seed, SW_X64_RSP, 0x1000);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADSP);

	/* A seed without an SP. */
	w.seed.valid &= ~BIT(SW_X64_RSP);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &w.seed, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_NOREG);
	sb_fini(&w);
}
END_TEST

START_TEST(cyclic_and_bad_frame_lists)
{
	sb_world w;
	sw_walk_error err;
	uint64_t f1 = S0 - 304, f2 = S0 - 200, fields[4] = { 0, 0, 0, 0 };
	int n = 0;

	sb_init(&w);
	/* f1 -> f2 -> f1: a cycle. */
	sb_frame(&w, f1, f2, SW_FRAME_INLINED_CALL, 0, fields, 4);
	sb_frame(&w, f2, f1, SW_FRAME_INLINED_CALL, 0, fields, 4);
	sb_put(&w, SB_HEAD_SLOT, f1);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_FRAMECYCLE);
	ck_assert_uint_eq(err.frame, f2);

	/* A Frame pointing to itself. */
	sb_frame(&w, f1, f1, SW_FRAME_INLINED_CALL, 0, fields, 4);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_FRAMECYCLE);

	/* Outside the stack, misaligned, unknown type. */
	sb_put(&w, SB_HEAD_SLOT, 0x1000);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADFRAME);
	sb_put(&w, SB_HEAD_SLOT, f1 + 3);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADFRAME);
	sb_frame(&w, f1, 0, 77, 0, fields, 4);
	sb_put(&w, SB_HEAD_SLOT, f1);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADFRAME);
	sb_fini(&w);
}
END_TEST

static Suite *walk_suite(void)
{
	Suite *s = suite_create("walk");
	TCase *tc = tcase_create("hand-built stacks");

	tcase_add_test(tc, managed_frames_and_marker);
	tcase_add_test(tc, functions_only_skips_funclets);
	tcase_add_test(tc, funclets_and_their_parents);
	tcase_add_test(tc, funclet_relative_offset_from_parent);
	tcase_add_test(tc, ambient_sp_x86);
	tcase_add_test(tc, funclet_parent_by_stack_position);
	tcase_add_test(tc, filter_funclet_shared_slots_pinned);
	tcase_add_test(tc, gc_roots_of_managed_frames);
	tcase_add_test(tc, gc_roots_follow_coreclr_conventions);
	tcase_add_test(tc, accepted_and_checking_flags);
	tcase_add_test(tc, missing_frame_detection);
	tcase_add_test(tc, async_walks_must_be_asked_for);
	tcase_add_test(tc, native_frames);
	tcase_add_test(tc, signal_frames);
	tcase_add_test(tc, gc_roots_of_a_frame_a_signal_interrupted);
	tcase_add_test(tc, gc_safe_points);
	tcase_add_test(tc, frame_pointer_fallback);
	tcase_add_test(tc, frame_pointer_record_checks);
	tcase_add_test(tc, outermost_function);
	tcase_add_test(tc, quick_and_light_unwind);
	tcase_add_test(tc, skipped_frames);
	tcase_add_test(tc, transition_frame_from_native_seed);
	tcase_add_test(tc, frame_attributes);
	tcase_add_test(tc, active_inlined_call_frame);
	tcase_add_test(tc, suspended_thread_and_resumable_frame);
	tcase_add_test(tc, icf_into_native_dead_end);
	tcase_add_test(tc, runtime_defined_frame_type);
	tcase_add_test(tc, callback_abort_and_iterator);
	tcase_add_test(tc, failures_say_where_and_why);
	tcase_add_test(tc, cyclic_and_bad_frame_lists);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(walk_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
