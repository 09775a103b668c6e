/*
 * check_toyjit.c - live walks of real machine code.
 *
 * The toy JIT emits methods of five prolog shapes and keeps a shadow stack
 * of what each frame really holds (method, SP, callee-saved registers).  From
 * inside the stub it calls, these tests walk the thread with several flag
 * sets and check that the walk is the shadow stack reversed, that Frames and
 * native markers sit where the scenario puts them, and that the registers
 * the walker reports are the ones the code had.  Then the same from every
 * instruction of every method, stopped by a breakpoint and walked from the
 * signal context.  Also: the x64 encoder's bytes, the emitted SWU blobs,
 * the iterator and an aborted walk.
 *
 * The moving collector (toyjit_gc.h) runs from the stub's helper, from the
 * thrower's catch funclet and at every instruction: the objects move, the
 * old space is poisoned, and the program's result must stay what it is
 * without a collection.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toyjit.h"
#include "toyjit_check.h"
#include "toyjit_async.h"
#include "toyjit_gc.h"
#include "x64_emit.h"

#define BIT(r) (1ull << (r))
#define MAX_WALKS 12

/* The thread's list heads side by side, as a runtime's thread block holds them. */
static __thread struct {
	sw_frame *frames;
	uintptr_t trackers;     /* exception trackers (test_dispatch) */
} heads;
#define frame_head heads.frames

/* What the helper does on each call: one recorded walk per flag set. */
static struct {
	sw_thread thread;
	sw_memory memory;
	unsigned flags[MAX_WALKS];
	unsigned nflags;
	toyjit_walk *walks[MAX_WALKS];
	sw_status status[MAX_WALKS];
	char msg[MAX_WALKS][512];
	int calls;
	sw_transition_frame *tf;
	/* for the iterator and abort tests */
	int iter_frames, iter_status;
	sw_walk_action abort_result;
	int abort_seen;
	/* the collector */
	int gc;                     /* collect in the helper, after the walks */
	toyjit_gc_stats gc_stats;
	sw_status gc_status;
	uintptr_t stale;            /* an object address from before the last collection */
	int in_funclet;             /* the helper ran under the funclet */
} g;

static sw_codemap *map;

static void helper(toyjit *jit, sw_transition_frame *tf)
{
	g.calls++;
	g.tf = tf;
	g.in_funclet = jit->funclet_active;
	for (unsigned i = 0; i < g.nflags; i++) {
		toyjit_walk_record(&g.thread, g.flags[i], g.walks[i]);
		/* Under the funclet the shadow stack is not the whole story: the test checks. */
		if (!jit->funclet_active)
			g.status[i] = toyjit_walk_check(jit, g.walks[i], g.msg[i], sizeof(g.msg[i]), NULL);
		/* The profiler's walk of the same stack gives its frames, funclets or not. */
		if (g.status[i] == SW_OK)
			g.status[i] = toyjit_backtrace_check(&g.thread, NULL, g.walks[i], NULL, g.msg[i],
			                                     sizeof(g.msg[i]));
	}
	if (g.gc) {
		/* The stub's protected argument: its old address must be poisoned afterwards. */
		g.stale = *(uintptr_t *)tf->protected_refs ? **(uintptr_t **)tf->protected_refs : 0;
		g.gc_status = toyjit_gc_collect(jit, &g.thread, NULL, &g.gc_stats);
	}
}

static void setup(void)
{
	memset(&g, 0, sizeof(g));
	for (unsigned i = 0; i < MAX_WALKS; i++) {
		g.walks[i] = malloc(sizeof(*g.walks[i]));
		ck_assert_ptr_nonnull(g.walks[i]);
	}
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_thread_init_self(&g.thread, map, &g.memory, &frame_head), SW_OK);
	ck_assert_int_eq(sw_memory_local_allow(&g.memory, (uintptr_t)&heads, (uintptr_t)(&heads + 1)),
	                 SW_OK);
	g.thread.exception_head = (uintptr_t)&heads.trackers;
}

static void teardown(void)
{
	for (unsigned i = 0; i < MAX_WALKS; i++)
		free(g.walks[i]);
	sw_codemap_destroy(map);
	map = NULL;
}

static toyjit *make_jit(const toyjit_shape *shapes, unsigned n, toyjit_helper_fn fn)
{
	toyjit *jit = NULL;

	ck_assert_int_eq(toyjit_create(&jit, map, &frame_head, shapes, n, fn, NULL), SW_OK);
	/* The methods, the thrower and its funclet. */
	ck_assert_uint_eq(sw_codemap_count(map), n + 2);
	return jit;
}

static const unsigned all_flags[] = {
	0,
	SW_WALK_FUNCTIONSONLY,
	SW_WALK_QUICKUNWIND,
	SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_FUNCTIONSONLY | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_QUICKUNWIND | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_LIGHTUNWIND,
	SW_WALK_ADDRESSES_ONLY | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_HANDLESKIPPEDFRAMES | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
};

static void use_all_flags(void)
{
	g.nflags = sizeof(all_flags) / sizeof(all_flags[0]);
	memcpy(g.flags, all_flags, sizeof(all_flags));
}

/* Run one scenario and require every walk to match. */
static void run_and_check(toyjit *jit, unsigned depth, int pinvoke_at, const char *what)
{
	int calls = g.calls;

	ck_assert_int_eq(toyjit_run(jit, depth, pinvoke_at), SW_OK);
	ck_assert_msg(g.calls == calls + 1, "%s: the helper ran %d times", what, g.calls - calls);
	ck_assert_ptr_null(frame_head);
	for (unsigned i = 0; i < g.nflags; i++)
		ck_assert_msg(g.status[i] == SW_OK, "%s, depth %u, P/Invoke at %d, flags %#x: %s",
		              what, depth, pinvoke_at, g.flags[i], g.msg[i]);
}

static const toyjit_shape five[] = {
	TOYJIT_RBP_FRAME, TOYJIT_NO_FP, TOYJIT_BIG_FRAME, TOYJIT_MOV_SAVES, TOYJIT_OFFSET_FP
};

START_TEST(test_depths)
{
	static const unsigned depths[] = { 1, 2, 3, 5, 10, 12, 17, 20, 64 };
	toyjit *jit = make_jit(five, 5, helper);

	use_all_flags();
	for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		unsigned d = depths[i];

		run_and_check(jit, d, -1, "no P/Invoke");
		if (d >= 2) {
			run_and_check(jit, d, 0, "P/Invoke outermost");
			run_and_check(jit, d, (int)(d - 2), "P/Invoke innermost");
			run_and_check(jit, d, (int)(d - 1) / 2, "P/Invoke midway");
		}
	}
	toyjit_destroy(jit);
}
END_TEST

/* Every shape at every position: orders, repeats, a single shape. */
START_TEST(test_orders)
{
	static const toyjit_shape orders[][5] = {
		{ TOYJIT_OFFSET_FP, TOYJIT_MOV_SAVES, TOYJIT_BIG_FRAME, TOYJIT_NO_FP, TOYJIT_RBP_FRAME },
		{ TOYJIT_NO_FP, TOYJIT_NO_FP, TOYJIT_MOV_SAVES, TOYJIT_MOV_SAVES, TOYJIT_BIG_FRAME },
		{ TOYJIT_MOV_SAVES, TOYJIT_OFFSET_FP, TOYJIT_RBP_FRAME, TOYJIT_BIG_FRAME, TOYJIT_NO_FP },
	};
	char what[64];

	use_all_flags();
	for (size_t o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
		toyjit *jit = make_jit(orders[o], 5, helper);

		snprintf(what, sizeof(what), "order %zu", o);
		for (unsigned d = 1; d <= 15; d += 7) {
			run_and_check(jit, d, -1, what);
			for (int p = 0; p + 1 < (int)d; p += 3)
				run_and_check(jit, d, p, what);
		}
		toyjit_destroy(jit);
	}
	for (int s = 0; s < TOYJIT_NSHAPES; s++) {
		toyjit_shape one = (toyjit_shape)s;
		toyjit *jit = make_jit(&one, 1, helper);

		snprintf(what, sizeof(what), "only %s", toyjit_shape_name(one));
		run_and_check(jit, 6, -1, what);
		run_and_check(jit, 6, 2, what);
		toyjit_destroy(jit);
	}
}
END_TEST

static size_t count_state(const toyjit_walk *w, uint32_t state)
{
	size_t n = 0;

	for (size_t k = 0; k < w->n; k++)
		n += w->frames[k].state == state;
	return n;
}

/* The shape of the walk spelled out, independently of toyjit_walk_check. */
START_TEST(test_markers_and_frames)
{
	toyjit *jit = make_jit(five, 5, helper);
	const toyjit_walk *w;
	sw_code_info ci;
	uint64_t tf, icf;

	g.nflags = 3;
	g.flags[0] = SW_WALK_NOTIFY_ON_U2M_TRANSITIONS;
	g.flags[1] = 0;
	g.flags[2] = SW_WALK_FUNCTIONSONLY;

	/*
	 * 10 frames, P/Invoke at frame 3: TF, M9..M4, marker, ICF, the ICF
	 * again as a skipped Frame (CoreCLR's CheckForSkippedFrames finds the
	 * active ICF inside M3's frame), M3..M0, marker.
	 */
	ck_assert_int_eq(toyjit_run(jit, 10, 3), SW_OK);
	w = g.walks[0];
	tf = (uint64_t)(uintptr_t)g.tf;
	ck_assert_int_eq(w->result, SW_CONTINUE);
	ck_assert_uint_eq(w->n, 1 + 6 + 1 + 1 + 1 + 4 + 1);
	ck_assert_uint_eq(w->frames[0].state, SW_STATE_FRAME);
	ck_assert_uint_eq(w->frames[0].frame_type, SW_FRAME_TRANSITION);
	ck_assert_uint_eq(w->frames[0].frame, tf);
	ck_assert_ptr_null(w->frames[0].method);
	for (int k = 1; k <= 6; k++) {
		ck_assert_uint_eq(w->frames[k].state, SW_STATE_FRAMELESS);
		ck_assert_ptr_eq(w->frames[k].method, toyjit_frame_method(jit, (unsigned)(10 - k)));
	}
	/* The innermost method resumes at the stub's return address, SP just above the block. */
	ck_assert_uint_eq(w->frames[1].ip, ((uint64_t *)(uintptr_t)g.tf->transition_block)[6]);
	ck_assert_uint_eq(w->frames[1].sp, g.tf->transition_block + 56);
	ck_assert_uint_eq(w->frames[7].state, SW_STATE_NATIVE_MARKER);
	ck_assert_int_eq(sw_codemap_find(map, w->frames[7].ip, &ci), SW_E_NOTFOUND);
	ck_assert_uint_eq(w->frames[8].state, SW_STATE_FRAME);
	ck_assert_uint_eq(w->frames[8].frame_type, SW_FRAME_INLINED_CALL);
	icf = w->frames[8].frame;
	/* The InlinedCallFrame lives in the P/Invoking method's locals: between its SP and its caller's. */
	ck_assert_uint_ge(icf, w->frames[10].sp);
	ck_assert_uint_lt(icf, w->frames[11].sp);
	ck_assert_ptr_eq(w->frames[8].method, &jit->native_target);
	ck_assert_uint_eq(w->frames[9].state, SW_STATE_SKIPPED_FRAME);
	ck_assert_uint_eq(w->frames[9].frame, icf);
	ck_assert_ptr_eq(w->frames[9].method, &jit->native_target);
	for (int k = 10; k <= 13; k++) {
		ck_assert_uint_eq(w->frames[k].state, SW_STATE_FRAMELESS);
		ck_assert_ptr_eq(w->frames[k].method, toyjit_frame_method(jit, (unsigned)(13 - k)));
	}
	ck_assert_uint_eq(w->frames[14].state, SW_STATE_NATIVE_MARKER);
	ck_assert(toyjit_is_native(jit, w->frames[14].ip));

	/* Without NOTIFY_ON_U2M_TRANSITIONS: the same minus the markers. */
	w = g.walks[1];
	ck_assert_uint_eq(w->n, 13);
	ck_assert_uint_eq(count_state(w, SW_STATE_NATIVE_MARKER), 0);
	ck_assert_uint_eq(count_state(w, SW_STATE_SKIPPED_FRAME), 1);
	ck_assert_uint_eq(count_state(w, SW_STATE_FRAME), 2);
	ck_assert_uint_eq(count_state(w, SW_STATE_FRAMELESS), 10);

	/* FUNCTIONSONLY: the method-less TransitionFrame goes, the ICF (with a datum) stays, twice. */
	w = g.walks[2];
	ck_assert_uint_eq(w->n, 12);
	ck_assert_uint_eq(w->frames[0].state, SW_STATE_FRAMELESS);
	ck_assert_uint_eq(count_state(w, SW_STATE_FRAME), 1);
	ck_assert_uint_eq(w->frames[6].frame_type, SW_FRAME_INLINED_CALL);

	/* No P/Invoke: one marker, at the end, in the entry thunk. */
	ck_assert_int_eq(toyjit_run(jit, 7, -1), SW_OK);
	w = g.walks[0];
	ck_assert_uint_eq(w->n, 1 + 7 + 1);
	ck_assert_uint_eq(count_state(w, SW_STATE_NATIVE_MARKER), 1);
	ck_assert_uint_eq(w->frames[8].state, SW_STATE_NATIVE_MARKER);
	toyjit_destroy(jit);
}
END_TEST

/* The C caller's callee-saved registers come back out of a full unwind. */
START_TEST(test_caller_registers)
{
	static const unsigned regs[] = {
		SW_X64_RBX, SW_X64_RBP, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15
	};
	toyjit *jit = make_jit(five, 5, helper);
	const toyjit_walked *last;

	g.nflags = 2;
	g.flags[0] = SW_WALK_NOTIFY_ON_U2M_TRANSITIONS;
	g.flags[1] = SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_ADDRESSES_ONLY;
	ck_assert_int_eq(toyjit_run(jit, 9, -1), SW_OK);
	last = &g.walks[0]->frames[g.walks[0]->n - 1];
	ck_assert_uint_eq(last->state, SW_STATE_NATIVE_MARKER);
	for (size_t i = 0; i < sizeof(regs) / sizeof(regs[0]); i++) {
		unsigned r = regs[i];

		ck_assert_msg(last->valid & BIT(r), "%s unknown", sw_arch_reg_name(SW_ARCH_X64, r));
		ck_assert_uint_eq(last->regs[r], jit->entry_regs[r]);
		/* Each frame's values: what the method itself had (the shadow stack). */
		for (size_t k = 1; k + 1 < g.walks[0]->n; k++) {
			const toyjit_walked *f = &g.walks[0]->frames[k];
			const toyjit_shadow_entry *s = &jit->shadow[g.walks[0]->n - 2 - k];

			ck_assert_uint_eq(f->state, SW_STATE_FRAMELESS);
			ck_assert_msg(f->valid & BIT(r), "frame %zu: %s unknown", k, sw_arch_reg_name(SW_ARCH_X64, r));
			ck_assert_uint_eq(f->regs[r], toyjit_shadow_reg(s, r));
		}
	}
	/* ADDRESSES_ONLY restores only IP, SP and the frame pointer. */
	last = &g.walks[1]->frames[g.walks[1]->n - 1];
	ck_assert(last->valid & BIT(SW_X64_RBP));
	ck_assert_uint_eq(last->regs[SW_X64_RBP], jit->entry_regs[SW_X64_RBP]);
	ck_assert_uint_eq(g.status[0], SW_OK);
	ck_assert_uint_eq(g.status[1], SW_OK);
	toyjit_destroy(jit);
}
END_TEST

static sw_walk_action abort_at_third(const sw_crawl_frame *cf, void *data)
{
	(void)data;
	g.abort_seen++;
	return sw_crawl_frame_depth(cf) == 2 ? SW_ABORT : SW_CONTINUE;
}

/* The same walk through sw_iter, and one the callback stops. */
static void iter_helper(toyjit *jit, sw_transition_frame *tf)
{
	sw_iter it;
	int r;

	(void)jit;
	(void)tf;
	g.calls++;
	ck_assert_int_eq(sw_iter_init(&it, &g.thread, NULL, 0, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS), SW_OK);
	while ((r = sw_iter_next(&it)) > 0) {
		const sw_crawl_frame *cf = sw_iter_frame(&it);

		ck_assert_ptr_nonnull(cf);
		ck_assert_uint_eq(sw_crawl_frame_depth(cf), (uint32_t)g.iter_frames);
		g.iter_frames++;
	}
	g.iter_status = r;
	sw_iter_end(&it);
	g.abort_result = sw_walk_frames(&g.thread, NULL, 0, abort_at_third, NULL, 0, NULL);
}

START_TEST(test_iterator_and_abort)
{
	toyjit *jit = make_jit(five, 5, iter_helper);

	ck_assert_int_eq(toyjit_run(jit, 8, 2), SW_OK);
	ck_assert_int_eq(g.calls, 1);
	ck_assert_int_eq(g.iter_status, 0);
	/* TF, M7..M3, marker, ICF, the ICF skipped (inside M2), M2..M0, marker. */
	ck_assert_int_eq(g.iter_frames, 1 + 5 + 1 + 1 + 1 + 3 + 1);
	ck_assert_int_eq(g.abort_result, SW_ABORT);
	ck_assert_int_eq(g.abort_seen, 3);
	toyjit_destroy(jit);
}
END_TEST

/* The emitted metadata is valid and says what the code does at the body's start. */
START_TEST(test_swu_blobs)
{
	/* CFA - SP in the body, per shape (entry: 8 for the return address). */
	static const int32_t body_frame[TOYJIT_NSHAPES] = {
		[TOYJIT_RBP_FRAME] = 8 + 16 + 56,
		[TOYJIT_NO_FP] = 8 + 40 + 64,
		[TOYJIT_BIG_FRAME] = 8 + 8 + 3 * 4096,
		[TOYJIT_MOV_SAVES] = 8 + 88,
		[TOYJIT_OFFSET_FP] = 8 + 16 + 72,
	};
	toyjit *jit = make_jit(five, 5, helper);

	for (unsigned k = 0; k < jit->nmethods; k++) {
		const toyjit_method *m = &jit->methods[k];
		sw_swu_header h;
		sw_swu_rule rule, entry;

		ck_assert_int_eq(sw_swu_validate(m->swu, m->swu_size), SW_OK);
		ck_assert_int_eq(sw_swu_decode_header(m->swu, m->swu_size, &h), SW_OK);
		ck_assert_uint_eq(h.code_size, m->size);
		ck_assert_uint_eq(h.prolog_size, m->prolog_size);
		ck_assert_uint_eq(h.epilogs, 1);
		ck_assert_int_eq(sw_swu_decode(m->swu, m->swu_size, 0, &entry), SW_OK);
		ck_assert_uint_eq(entry.cfa_reg, SW_X64_RSP);
		ck_assert_int_eq(entry.cfa_offset, 8);
		ck_assert_int_eq(sw_swu_decode(m->swu, m->swu_size, m->prolog_size, &rule), SW_OK);
		ck_assert_uint_eq(rule.region, SW_SWU_BODY);
		ck_assert_msg(rule.sp_offset == body_frame[m->shape], "%s: sp_offset %d, want %d",
		              m->name, rule.sp_offset, body_frame[m->shape]);
		ck_assert_uint_eq(rule.saved_mask & m->saved_regs, m->saved_regs);
		/* Every frame-pointer shape unwinds from rbp in its body. */
		if (m->shape == TOYJIT_RBP_FRAME || m->shape == TOYJIT_BIG_FRAME || m->shape == TOYJIT_OFFSET_FP)
			ck_assert_uint_eq(rule.cfa_reg, SW_X64_RBP);
		else
			ck_assert_uint_eq(rule.cfa_reg, SW_X64_RSP);
	}
	toyjit_destroy(jit);
}
END_TEST

/* The encoder's bytes for the awkward operands (SIB for rsp/r12, disp8 0 for rbp/r13). */
START_TEST(test_encoder)
{
	static const struct {
		const char *what;
		uint8_t bytes[16];
		size_t len;
	} want[] = {
		{ "push r12", { 0x41, 0x54 }, 2 },
		{ "pop rbx", { 0x5b }, 1 },
		{ "mov [rsp+16], rbx", { 0x48, 0x89, 0x5c, 0x24, 0x10 }, 5 },
		{ "mov r12, [rsp+24]", { 0x4c, 0x8b, 0x64, 0x24, 0x18 }, 5 },
		{ "lea rbp, [rsp+32]", { 0x48, 0x8d, 0x6c, 0x24, 0x20 }, 5 },
		{ "lea rsp, [rbp-8]", { 0x48, 0x8d, 0x65, 0xf8 }, 4 },
		{ "mov rbx, [r13]", { 0x49, 0x8b, 0x5d, 0x00 }, 4 },
		{ "mov [r12], rax", { 0x49, 0x89, 0x04, 0x24 }, 4 },
		{ "sub rsp, 0x3000", { 0x48, 0x81, 0xec, 0x00, 0x30, 0x00, 0x00 }, 7 },
		{ "test [rsp-0x1000], eax", { 0x85, 0x84, 0x24, 0x00, 0xf0, 0xff, 0xff }, 7 },
		{ "mov rbp, rsp", { 0x48, 0x89, 0xe5 }, 3 },
		{ "call [rax]", { 0xff, 0x10 }, 2 },
		{ "mov r15, imm64", { 0x49, 0xbf, 1, 2, 3, 4, 5, 6, 7, 8 }, 10 },
	};
	uint8_t mem[256];
	x64_buf b;
	size_t at = 0;

	x64_buf_init(&b, mem, sizeof(mem));
	x64_push(&b, X64_R12);
	x64_pop(&b, X64_RBX);
	x64_mov_mr(&b, X64_RSP, 16, X64_RBX);
	x64_mov_rm(&b, X64_R12, X64_RSP, 24);
	x64_lea(&b, X64_RBP, X64_RSP, 32);
	x64_lea(&b, X64_RSP, X64_RBP, -8);
	x64_mov_rm(&b, X64_RBX, X64_R13, 0);
	x64_mov_mr(&b, X64_R12, 0, X64_RAX);
	x64_sub_ri(&b, X64_RSP, 0x3000);
	x64_test_m32_r32(&b, X64_RSP, -0x1000, X64_RAX);
	x64_mov_rr(&b, X64_RBP, X64_RSP);
	x64_call_m(&b, X64_RAX, 0);
	x64_mov_ri64(&b, X64_R15, 0x0807060504030201ull);
	ck_assert(!b.overflow);
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		ck_assert_msg(at + want[i].len <= b.len && memcmp(mem + at, want[i].bytes, want[i].len) == 0,
		              "%s: wrong encoding", want[i].what);
		at += want[i].len;
	}
	ck_assert_uint_eq(at, b.len);
	/* The forms the allocation and the result need. */
	x64_buf_init(&b, mem, sizeof(mem));
	x64_mov_r32_r32(&b, X64_RAX, X64_RDI);
	x64_add_rr(&b, X64_RAX, X64_R12);
	x64_add_mr(&b, X64_RDX, 0, X64_RAX);
	x64_add_mr(&b, X64_RSP, 8, X64_R13);
	{
		static const uint8_t more[] = {
			0x89, 0xf8,                     /* mov eax, edi */
			0x4c, 0x01, 0xe0,               /* add rax, r12 */
			0x48, 0x01, 0x02,               /* add [rdx], rax */
			0x4c, 0x01, 0x6c, 0x24, 0x08,   /* add [rsp+8], r13 */
		};
		ck_assert_uint_eq(b.len, sizeof(more));
		ck_assert(memcmp(mem, more, sizeof(more)) == 0);
	}
	ck_assert_uint_eq(x64_dwarf_reg(X64_RSP), SW_X64_RSP);
	ck_assert_uint_eq(x64_dwarf_reg(X64_RDX), SW_X64_RDX);
	ck_assert_uint_eq(x64_dwarf_reg(X64_RSI), SW_X64_RSI);

	/* A full buffer stops writing and says so. */
	x64_buf_init(&b, mem, 3);
	x64_mov_ri64(&b, X64_RAX, 1);
	x64_ret(&b);
	ck_assert(b.overflow);
	ck_assert_uint_le(b.len, 3);
}
END_TEST

START_TEST(test_bad_arguments)
{
	toyjit *jit = make_jit(five, 5, helper);
	toyjit_shape bad = TOYJIT_NSHAPES;
	toyjit *other = NULL;

	ck_assert_int_eq(toyjit_run(jit, 0, -1), SW_E_INVAL);
	ck_assert_int_eq(toyjit_run(jit, 3, 2), SW_E_INVAL);
	ck_assert_int_eq(toyjit_run(jit, TOYJIT_MAX_DEPTH + 1, -1), SW_E_INVAL);
	ck_assert_int_eq(toyjit_create(&other, map, &frame_head, &bad, 1, helper, NULL), SW_E_INVAL);
	ck_assert_int_eq(toyjit_create(&other, map, &frame_head, five, 0, helper, NULL), SW_E_INVAL);
	ck_assert_int_eq(g.calls, 0);
	toyjit_destroy(jit);
	ck_assert_uint_eq(sw_codemap_count(map), 0);
}
END_TEST

struct live_count {
	int slot, reg;
};

static int count_live(void *data, const sw_swu_gc_slot *slot)
{
	struct live_count *seen = data;

	if (slot->in_register)
		seen->reg++;
	else
		seen->slot++;
	return 0;
}

/* Without a collector the program computes its expected result, P/Invoke or not. */
START_TEST(test_results)
{
	toyjit *jit = make_jit(five, 5, helper);

	for (unsigned d = 1; d <= 21; d += 4) {
		ck_assert_int_eq(toyjit_run(jit, d, -1), SW_OK);
		ck_assert_uint_eq(jit->result, toyjit_expected_result(jit, d, 0));
		ck_assert_uint_ne(jit->result, 0);
		if (d >= 2) {
			ck_assert_int_eq(toyjit_run(jit, d, (int)d / 2 - 1 >= 0 ? (int)d / 2 - 1 : 0), SW_OK);
			ck_assert_uint_eq(jit->result, toyjit_expected_result(jit, d, 0));
		}
	}
	ck_assert_int_eq(toyjit_run_throw(jit, 6), SW_OK);
	ck_assert_uint_eq(jit->result, toyjit_expected_result(jit, 6, 1));
	toyjit_destroy(jit);
}
END_TEST

/* The GC information each method carries: A's slot and B's register across every call. */
START_TEST(test_gc_info)
{
	toyjit *jit = make_jit(five, 5, helper);

	for (unsigned k = 0; k < jit->nmethods; k++) {
		const toyjit_method *m = &jit->methods[k];
		sw_swu_header h;

		ck_assert_int_eq(sw_swu_decode_header(m->swu, m->swu_size, &h), SW_OK);
		ck_assert_uint_ge(h.gc_locations, 4);   /* the slot, rsi, rax, rcx (+ B's register) */
		ck_assert(m->allocates);
		ck_assert_uint_lt(m->gc_unsafe_start, m->gc_unsafe_end);
		ck_assert_int_eq(m->gc_reg >= 0, m->shape != TOYJIT_BIG_FRAME);
		for (uint32_t c = 0; c < m->ncalls; c++) {
			struct live_count seen = { 0, 0 };

			ck_assert_int_eq(sw_swu_gc_live(m->swu, m->swu_size, m->calls[c].ret_offset,
			                                count_live, &seen), SW_OK);
			ck_assert_msg(seen.slot == 1, "%s call %u: %d slots live", m->name, c, seen.slot);
			ck_assert_int_eq(seen.reg, m->gc_reg >= 0);
		}
	}
	ck_assert_uint_eq(sw_swu_validate(jit->thrower.swu, jit->thrower.swu_size), SW_OK);
	ck_assert_uint_eq(sw_swu_validate(jit->funclet.swu, jit->funclet.swu_size), SW_OK);
	toyjit_destroy(jit);
}
END_TEST

/* A collection at the deepest point, from the stub's helper, at many depths and orders. */
START_TEST(test_gc_at_stub)
{
	static const toyjit_shape orders[][5] = {
		{ TOYJIT_RBP_FRAME, TOYJIT_NO_FP, TOYJIT_BIG_FRAME, TOYJIT_MOV_SAVES, TOYJIT_OFFSET_FP },
		{ TOYJIT_BIG_FRAME, TOYJIT_BIG_FRAME, TOYJIT_NO_FP, TOYJIT_MOV_SAVES, TOYJIT_RBP_FRAME },
		{ TOYJIT_MOV_SAVES, TOYJIT_OFFSET_FP, TOYJIT_BIG_FRAME, TOYJIT_NO_FP, TOYJIT_NO_FP },
	};
	unsigned runs = 0;

	g.nflags = 1;
	g.flags[0] = SW_WALK_NOTIFY_ON_U2M_TRANSITIONS;
	g.gc = 1;
	for (size_t o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
		toyjit *jit = make_jit(orders[o], 5, helper);

		for (unsigned d = 1; d <= 40; d += (d < 12 ? 1 : 9)) {
			unsigned moved = g.gc_stats.moved, colls = g.gc_stats.collections;

			ck_assert_int_eq(toyjit_run(jit, d, -1), SW_OK);
			ck_assert_msg(g.gc_status == SW_OK, "order %zu depth %u: %s: %s (%#llx)", o, d,
			              sw_strerror(g.gc_status), g.gc_stats.what ? g.gc_stats.what : "",
			              g.gc_stats.value);
			ck_assert_uint_eq(g.status[0], SW_OK);
			ck_assert_uint_eq(g.gc_stats.collections, colls + 1);
			/* Every object of the run is alive at the deepest point: 2 per frame. */
			ck_assert_uint_eq(g.gc_stats.moved - moved, 2 * d);
			ck_assert_msg(jit->result == toyjit_expected_result(jit, d, 0),
			              "order %zu depth %u: result %#llx, expected %#llx", o, d,
			              (unsigned long long)jit->result,
			              (unsigned long long)toyjit_expected_result(jit, d, 0));
			/* The stale address now holds the poison. */
			ck_assert_uint_eq(*(const uint8_t *)g.stale, TOYJIT_GC_POISON);
			runs++;
		}
		toyjit_destroy(jit);
	}
	/* Below the stub every register comes from a save slot: none is in the context. */
	ck_assert_uint_eq(g.gc_stats.reg_roots, 0);
	ck_assert_uint_gt(g.gc_stats.saved_roots, 0);
	ck_assert_uint_gt(g.gc_stats.slot_roots, 0);
	ck_assert_uint_eq(g.gc_stats.frame_roots, runs);
	ck_assert_uint_eq(g.gc_stats.bad, 0);
	/* Collected from a helper's Frame: every managed frame stands at a call, a safe point. */
	ck_assert_uint_eq(g.gc_stats.unsafe_frames, 0);
	printf("x64 GC at the stub: %u collections, %u objects moved, %u roots updated "
	       "(%u stack slots, %u saved registers, %u Frame slots)\n", g.gc_stats.collections,
	       g.gc_stats.moved, g.gc_stats.roots, g.gc_stats.slot_roots, g.gc_stats.saved_roots,
	       g.gc_stats.frame_roots);
	fflush(stdout);
}
END_TEST

static const toyjit_walked *find_method(const toyjit_walk *w, const void *m, size_t *at)
{
	for (size_t k = 0; k < w->n; k++)
		if (w->frames[k].method == m && w->frames[k].state == SW_STATE_FRAMELESS) {
			*at = k;
			return &w->frames[k];
		}
	return NULL;
}

/*
 * The thrower's catch funclet runs (called by the dispatch over the throw
 * stub's TransitionFrame) and calls the stub: walks with each funclet rule,
 * and a collection under it.
 */
static int one_clause(void *data, uint32_t index, const sw_eh_clause *c)
{
	sw_eh_clause *out = data;

	ck_assert_uint_eq(index, 0);
	*out = *c;
	return 0;
}

/*
 * The thrower's catch clause, as the walk finds its frames: the clause
 * that covers the thrower's call is the one whose handler is the funclet
 * running.  CoreCLR looks a frame's clauses up at its return address
 * minus one, the call (STACKWALK_CONTROLPC_ADJUST_OFFSET in SfiInit and
 * SfiNext, src/coreclr/vm/exceptionhandling.cpp): the return address
 * itself lies past the try.
 */
static void check_thrower_clause(const toyjit *jit, const toyjit_walked *parent,
                                 const toyjit_walked *funclet)
{
	const toyjit_method *t = &jit->thrower;
	uint32_t call = (uint32_t)(parent->ip - t->start) - 1;
	sw_eh_clause c = { 99, 0, 0, 0, 0, 0, 0, 0 };
	sw_eh_handler h;

	ck_assert_int_eq(sw_swu_eh_covering(t->swu, t->swu_size, call, one_clause, &c), SW_OK);
	ck_assert_uint_eq(c.kind, SW_EH_CATCH);
	ck_assert_uint_eq(c.type_token, TOYJIT_CATCH_TYPE);
	ck_assert_uint_eq(t->start + c.handler_start, funclet->code.start);
	ck_assert_uint_eq(c.handler_end - c.handler_start, funclet->code.size);
	c.kind = 99;
	ck_assert_int_eq(sw_swu_eh_covering(t->swu, t->swu_size, call + 1, one_clause, &c), SW_OK);
	ck_assert_uint_eq(c.kind, 99);
	ck_assert_int_eq(sw_swu_eh_handler_at(t->swu, t->swu_size,
	                                      (uint32_t)(funclet->ip - t->start), &h), SW_OK);
	ck_assert_uint_eq(h.index, 0);
	ck_assert_uint_eq(h.in_filter, 0);
}

START_TEST(test_funclet)
{
	toyjit *jit = make_jit(five, 5, helper);
	const unsigned depth = 7;
	const toyjit_walk *w;
	const toyjit_walked *f;
	size_t fk, pk, k;

	g.nflags = 5;
	g.flags[0] = 0;
	g.flags[1] = SW_WALK_NOTIFY_ON_U2M_TRANSITIONS;
	g.flags[2] = SW_WALK_SKIPFUNCLETS;
	g.flags[3] = SW_WALK_FUNCTIONSONLY;
	g.flags[4] = SW_WALK_GC_FUNCLET_REFERENCE_REPORTING;
	g.gc = 1;
	ck_assert_int_eq(toyjit_run_throw(jit, depth), SW_OK);
	ck_assert_int_eq(g.calls, 1);
	ck_assert(g.in_funclet);
	ck_assert_ptr_null(frame_head);

	/* Default: stub's TF, funclet, throw stub's TF, the parent flagged, the chain. */
	w = g.walks[0];
	ck_assert_int_eq(w->result, SW_CONTINUE);
	ck_assert_uint_eq(w->n, 1 + 1 + 1 + 1 + depth);
	ck_assert_uint_eq(w->frames[0].frame_type, SW_FRAME_TRANSITION);
	f = &w->frames[1];
	ck_assert_ptr_eq(f->method, &jit->funclet);
	ck_assert(f->is_funclet && !f->is_filter && !f->is_parent_of_funclet);
	ck_assert(f->has_code && (f->code.flags & SW_CODE_FUNCLET) && f->code.parent == &jit->thrower);
	ck_assert(toyjit_call_site_at(&jit->funclet, f->ip) != NULL);
	/*
	 * Its relative offset is from the thrower's start, the method whose
	 * block holds it (CoreCLR: CrawlFrame::GetRelOffset, vm/stackwalk.h,
	 * is EECodeInfo::GetRelOffset, vm/codeman.h, ip minus the method's
	 * start); the toy JIT emits the funclet after the thrower's body.
	 */
	ck_assert_uint_gt(jit->funclet.start, jit->thrower.start);
	ck_assert_uint_eq(f->offset, f->ip - jit->thrower.start);
	ck_assert_uint_eq(w->frames[2].state, SW_STATE_FRAME);
	ck_assert_uint_eq(w->frames[2].frame_type, SW_FRAME_TRANSITION);
	f = &w->frames[3];
	ck_assert_ptr_eq(f->method, &jit->thrower);
	ck_assert(f->is_parent_of_funclet && !f->is_funclet && f->report_gc);
	/* The funclet's rbp was the parent's frame pointer: the establisher frame. */
	ck_assert_uint_eq(w->frames[1].regs[SW_X64_RBP], f->regs[SW_X64_RBP]);
	check_thrower_clause(jit, f, &w->frames[1]);
	for (k = 0; k < depth; k++) {
		ck_assert_ptr_eq(w->frames[4 + k].method, toyjit_frame_method(jit, depth - 1 - (unsigned)k));
		ck_assert(!w->frames[4 + k].is_parent_of_funclet);
	}

	/* With markers: one for the dispatch's native frames, one for the entry thunk. */
	w = g.walks[1];
	ck_assert_uint_eq(w->n, 1 + 1 + 1 + 1 + 1 + depth + 1);
	ck_assert_uint_eq(w->frames[2].state, SW_STATE_NATIVE_MARKER);
	ck_assert_uint_eq(w->frames[3].frame_type, SW_FRAME_TRANSITION);

	/* SKIPFUNCLETS: no funclet, nothing up to the parent, which is flagged. */
	w = g.walks[2];
	ck_assert_uint_eq(w->n, 1 + 1 + depth);
	ck_assert_uint_eq(w->frames[0].frame_type, SW_FRAME_TRANSITION);
	ck_assert_ptr_eq(w->frames[1].method, &jit->thrower);
	ck_assert(w->frames[1].is_parent_of_funclet);
	ck_assert_ptr_null(find_method(w, &jit->funclet, &fk));

	/* FUNCTIONSONLY: the same without the method-less Frames. */
	w = g.walks[3];
	ck_assert_uint_eq(w->n, 1 + depth);
	ck_assert_ptr_eq(w->frames[0].method, &jit->thrower);
	ck_assert(w->frames[0].is_parent_of_funclet);

	/* For the GC: the funclet reports, the frames between are gone, the parent reports nothing. */
	w = g.walks[4];
	ck_assert_uint_eq(w->n, 1 + 1 + 1 + depth);
	ck_assert_ptr_nonnull(find_method(w, &jit->funclet, &fk));
	ck_assert(w->frames[fk].is_funclet && w->frames[fk].report_gc);
	ck_assert_ptr_nonnull(f = find_method(w, &jit->thrower, &pk));
	ck_assert_uint_eq(pk, fk + 1);
	ck_assert(f->is_parent_of_funclet && !f->report_gc);
	ck_assert(w->frames[pk + 1].report_gc);

	/* The collection under the funclet moved everything, and the result is right. */
	ck_assert_msg(g.gc_status == SW_OK, "%s: %s", sw_strerror(g.gc_status),
	              g.gc_stats.what ? g.gc_stats.what : "");
	ck_assert_uint_eq(g.gc_stats.funclets, 1);
	/* The thrower's reference: reported by its funclet, in the thrower's frame, once. */
	ck_assert_uint_eq(g.gc_stats.parent_roots, 1);
	ck_assert_uint_eq(g.gc_stats.skipped, 1);
	ck_assert_uint_eq(g.gc_stats.moved, 2 * depth + 1);
	ck_assert_uint_eq(g.gc_stats.reg_roots, 0);
	ck_assert_uint_eq(jit->result, toyjit_expected_result(jit, depth, 1));
	ck_assert_uint_eq(*(const uint8_t *)g.stale, TOYJIT_GC_POISON);

	/* Deeper and shallower. */
	for (unsigned d = 1; d <= 30; d += 6) {
		ck_assert_int_eq(toyjit_run_throw(jit, d), SW_OK);
		ck_assert(g.gc_status == SW_OK);
		ck_assert_uint_eq(jit->result, toyjit_expected_result(jit, d, 1));
	}
	printf("x64 GC under a catch funclet: %u collections, %u objects moved, %u roots updated\n",
	       g.gc_stats.collections, g.gc_stats.moved, g.gc_stats.roots);
	fflush(stdout);
	toyjit_destroy(jit);
}
END_TEST

/*
 * The throw through sw_exception_dispatch: the first pass finds the
 * thrower's catch through the throw stub's TransitionFrame, the second
 * pops that Frame and runs the funclet, and the thrower resumes after its
 * try (the throw stub never returns).  A walk from inside the funclet
 * leaves it into the dispatch's C code and goes on at the tracker: the
 * thrower, its parent, found once.
 */
START_TEST(test_dispatch)
{
	toyjit *jit = make_jit(five, 5, helper);
	const unsigned depth = 7;
	const toyjit_walk *w;
	size_t fk, pk;

	jit->exception_head = &heads.trackers;
	g.nflags = 2;
	g.flags[0] = 0;
	g.flags[1] = SW_WALK_GC_FUNCLET_REFERENCE_REPORTING;
	g.gc = 1;
	ck_assert_int_eq(toyjit_run_throw(jit, depth), SW_OK);
	ck_assert_int_eq(jit->dispatch_status, SW_OK);
	ck_assert_uint_eq(jit->dispatched, 1);
	ck_assert_int_eq(g.calls, 1);
	ck_assert(g.in_funclet);
	ck_assert_ptr_null(frame_head);
	ck_assert_uint_eq(heads.trackers, 0);

	/* The stub's TF, the funclet, then the thrower (no throw stub's TF: popped), the chain. */
	w = g.walks[0];
	ck_assert_int_eq(w->result, SW_CONTINUE);
	ck_assert_uint_eq(w->n, 1 + 1 + 1 + depth);
	ck_assert_uint_eq(w->frames[0].frame_type, SW_FRAME_TRANSITION);
	ck_assert_ptr_eq(w->frames[1].method, &jit->funclet);
	ck_assert_ptr_eq(w->frames[2].method, &jit->thrower);
	ck_assert(w->frames[2].is_parent_of_funclet && w->frames[2].trust == SW_TRUST_CONTEXT);
	ck_assert_uint_eq(w->frames[1].regs[SW_X64_RBP], w->frames[2].regs[SW_X64_RBP]);
	for (unsigned k = 0; k < depth; k++)
		ck_assert_ptr_eq(w->frames[3 + k].method, toyjit_frame_method(jit, depth - 1 - k));

	/* For the GC: the funclet reports, its parent (once) does not. */
	w = g.walks[1];
	ck_assert_ptr_nonnull(find_method(w, &jit->funclet, &fk));
	ck_assert_ptr_nonnull(find_method(w, &jit->thrower, &pk));
	ck_assert_uint_eq(pk, fk + 1);
	ck_assert(!w->frames[pk].report_gc);
	ck_assert_msg(g.gc_status == SW_OK, "%s: %s", sw_strerror(g.gc_status),
	              g.gc_stats.what ? g.gc_stats.what : "");
	ck_assert_uint_eq(g.gc_stats.parent_roots, 1);
	/* The thrower went on after its try with the object the collector moved. */
	ck_assert_uint_eq(jit->result, toyjit_expected_result(jit, depth, 1));

	for (unsigned d = 1; d <= 30; d += 6) {
		ck_assert_int_eq(toyjit_run_throw(jit, d), SW_OK);
		ck_assert_int_eq(jit->dispatch_status, SW_OK);
		ck_assert(g.gc_status == SW_OK);
		ck_assert_uint_eq(jit->result, toyjit_expected_result(jit, d, 1));
	}
	ck_assert_uint_eq(jit->dispatched, 6);
	toyjit_destroy(jit);
}
END_TEST

static void quiet_helper(toyjit *jit, sw_transition_frame *tf)
{
	(void)jit;
	(void)tf;
	g.calls++;
}

/*
 * Every instruction offset of every method: a breakpoint there, a walk from
 * the trap's context, checked against the shadow stack as it was then.
 */
START_TEST(test_every_offset)
{
	static const unsigned flags[] = {
		SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
		SW_WALK_FUNCTIONSONLY,
	};
	static const toyjit_shape orders[][5] = {
		{ TOYJIT_RBP_FRAME, TOYJIT_NO_FP, TOYJIT_BIG_FRAME, TOYJIT_MOV_SAVES, TOYJIT_OFFSET_FP },
		{ TOYJIT_OFFSET_FP, TOYJIT_MOV_SAVES, TOYJIT_BIG_FRAME, TOYJIT_NO_FP, TOYJIT_RBP_FRAME },
	};
	toyjit_async_stats total = { 0 };

	for (size_t o = 0; o < sizeof(orders) / sizeof(orders[0]); o++) {
		toyjit *jit = make_jit(orders[o], 5, quiet_helper);
		toyjit_async_stats st;
		sw_status r;

		r = toyjit_async_check_all(jit, &g.thread, flags, sizeof(flags) / sizeof(flags[0]),
		                           stdout, 20, &st);
		total.offsets += st.offsets;
		total.walks += st.walks;
		total.passed += st.passed;
		total.failed += st.failed;
		toyjit_destroy(jit);
		ck_assert_msg(r == SW_OK || r == SW_E_MISMATCH, "the sweep stopped: %s", sw_strerror(r));
	}
	printf("x64 every-offset: %u offsets, %u walks: %u passed, %u failed\n",
	       total.offsets, total.walks, total.passed, total.failed);
	fflush(stdout);
	ck_assert_uint_gt(total.offsets, 100);
	ck_assert_uint_eq(total.failed, 0);
}
END_TEST

/*
 * A collection at every instruction offset of every method (outside the
 * allocation sequences): references in the registers of the stopped
 * context are updated in the ucontext the thread resumes with.
 */
START_TEST(test_every_offset_gc)
{
	static const unsigned flags[] = { SW_WALK_NOTIFY_ON_U2M_TRANSITIONS };
	toyjit *jit = make_jit(five, 5, quiet_helper);
	toyjit_async_stats st;
	sw_status r;

	r = toyjit_async_gc_all(jit, &g.thread, flags, 1, stdout, 20, &st);
	toyjit_destroy(jit);
	printf("x64 every-offset GC: %u offsets, %u collections (%u stops not at a safe point, "
	       "%u in a prolog or epilog), %u objects moved, %u roots updated (%u in the "
	       "context's registers, %u saved, %u stack slots, %u Frame slots), %u runs: "
	       "%u wrong results\n",
	       st.offsets, st.gc_stops, st.gc_unsafe, st.gc.unsafe_frames, st.gc.moved, st.gc.roots,
	       st.gc.reg_roots, st.gc.saved_roots, st.gc.slot_roots, st.gc.frame_roots, st.results,
	       st.results_bad);
	fflush(stdout);
	ck_assert_msg(r == SW_OK, "the sweep: %s", sw_strerror(r));
	ck_assert_uint_eq(st.failed, 0);
	ck_assert_uint_eq(st.results_bad, 0);
	ck_assert_uint_gt(st.gc_stops, 100);
	ck_assert_uint_gt(st.gc.reg_roots, 0);
	ck_assert_uint_eq(st.gc.bad, 0);
	/*
	 * Stopped at every offset, the leaf is sometimes in a prolog or an
	 * epilog, where CoreCLR would not collect (sw_crawl_frame_is_gc_safe);
	 * only the leaf can be, once per collection at most.
	 */
	ck_assert_uint_gt(st.gc.unsafe_frames, 0);
	ck_assert_uint_le(st.gc.unsafe_frames, st.gc_stops);
}
END_TEST

static Suite *toyjit_suite(void)
{
	Suite *s = suite_create("toyjit");
	TCase *tc = tcase_create("live");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_encoder);
	tcase_add_test(tc, test_swu_blobs);
	tcase_add_test(tc, test_bad_arguments);
	tcase_add_test(tc, test_depths);
	tcase_add_test(tc, test_orders);
	tcase_add_test(tc, test_markers_and_frames);
	tcase_add_test(tc, test_caller_registers);
	tcase_add_test(tc, test_iterator_and_abort);
	tcase_add_test(tc, test_every_offset);
	tcase_add_test(tc, test_results);
	tcase_add_test(tc, test_gc_info);
	tcase_add_test(tc, test_gc_at_stub);
	tcase_add_test(tc, test_funclet);
	tcase_add_test(tc, test_dispatch);
	tcase_add_test(tc, test_every_offset_gc);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(toyjit_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
