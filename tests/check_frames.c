/*
 * check_frames.c - every built-in Frame kind on hand-built x64 stacks: what
 * it reports, where it resumes the walk, with which registers and flags,
 * and how it fails on garbage.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "stack_builder.h"

#define A_START 0x10001000ull
#define S0 (SB_STACK_HI - 0x400)        /* A's SP at entry; [S0] is its return address */
#define RECORD (SB_STACK_BASE + 0x1000) /* a context record, deep in the buffer */
#define FRAME_AT (SB_STACK_BASE + 0x2000)
#define BIT(r) (1ULL << (r))

static int method_a;

typedef struct rec {
	sw_frame_state state;
	void *method;
	uint64_t frame;
	uint32_t type;
	int first, interrupted, faulted;
	sw_regdisplay rd;
} rec;

typedef struct recording {
	rec f[16];
	int n;
} recording;

static sw_walk_action record_cb(const sw_crawl_frame *cf, void *data)
{
	recording *r = data;
	rec *x = &r->f[r->n++];

	x->state = sw_crawl_frame_state(cf);
	x->method = sw_crawl_frame_method(cf);
	x->frame = sw_crawl_frame_frame(cf);
	x->type = sw_crawl_frame_frame_type(cf);
	x->first = sw_crawl_frame_is_first(cf);
	x->interrupted = sw_crawl_frame_is_interrupted(cf);
	x->faulted = sw_crawl_frame_has_faulted(cf);
	x->rd = *sw_crawl_frame_regdisplay(cf);
	return r->n < 16 ? SW_CONTINUE : SW_ABORT;
}

static sw_walk_action count_cb(const sw_crawl_frame *cf, void *data)
{
	(void)cf;
	++*(int *)data;
	return SW_CONTINUE;
}

/* Write an sw_context record (its documented target layout) into the stack buffer. */
static void put_record(sb_world *w, uint64_t addr, const sw_context *c)
{
	sb_put(w, addr, (uint64_t)c->arch | ((uint64_t)c->reserved << 32));
	sb_put(w, addr + 8, c->valid);
	for (unsigned r = 0; r < SW_MAX_REGS; r++)
		sb_put(w, addr + 16 + 8 * r, c->regs[r]);
}

/* A, called from native code, stopped in its body at A+30 with rbx = 0xa1. */
static void lay_out_a(sb_world *w, sw_context *at)
{
	sb_add_method_a(w, A_START, &method_a);
	sb_put(w, S0, SB_NATIVE_IP);
	sb_put(w, S0 - 8, 0x5000);          /* caller's rbp */
	sb_put(w, S0 - 16, 0x5001);         /* caller's rbx */
	sw_context_init(at, SW_ARCH_X64);
	sw_context_set(at, SW_X64_RIP, A_START + 30);
	sw_context_set(at, SW_X64_RSP, S0 - 88);
	sw_context_set(at, SW_X64_RBP, S0 - 8);
	sw_context_set(at, SW_X64_RBX, 0xa1);
	sw_context_set(at, SW_X64_RAX, 0xaa);
}

static void walk_from_head(sb_world *w, unsigned flags, recording *r)
{
	sw_walk_error err;

	memset(r, 0, sizeof *r);
	ck_assert_msg(sw_walk_frames(&w->thread, NULL, 0, record_cb, r, flags, &err) == SW_CONTINUE,
	              "walk failed: %s", sw_strerror(err.status));
}

/* A context Frame of `type` with `attrs`, resuming A at A+30; check what the walk says. */
static void check_context_frame(uint32_t type, uint32_t attrs, int first, int interrupted,
                                int faulted, void *method)
{
	sb_world w;
	sw_context at;
	recording r;
	uint64_t fields[2] = { RECORD, (uintptr_t)method };

	sb_init(&w);
	lay_out_a(&w, &at);
	put_record(&w, RECORD, &at);
	sb_frame(&w, FRAME_AT, 0, type, attrs, fields, 2);
	sb_put(&w, SB_HEAD_SLOT, FRAME_AT);
	walk_from_head(&w, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);
	ck_assert_uint_eq(r.f[0].type, type);
	ck_assert_ptr_eq(r.f[0].method, method);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	ck_assert_int_eq(r.f[1].first, first);
	ck_assert_int_eq(r.f[1].interrupted, interrupted);
	ck_assert_int_eq(r.f[1].faulted, faulted);
	/* The exact IP and every register of the record, with its slot as location. */
	ck_assert_uint_eq(sw_context_ip(&r.f[1].rd.cur), A_START + 30);
	ck_assert_uint_eq(r.f[1].rd.cur_loc[SW_X64_RIP], RECORD + 16 + 8 * SW_X64_RIP);
	ck_assert_uint_eq(r.f[1].rd.cur.regs[SW_X64_RAX], 0xaa);
	ck_assert_uint_eq(r.f[1].rd.cur_loc[SW_X64_RBX], RECORD + 16 + 8 * SW_X64_RBX);
	ck_assert_uint_eq(r.f[1].rd.cur_loc[SW_X64_RSP], 0);
	/* And the unwind out of A from there. */
	ck_assert_int_eq(r.f[2].state, SW_STATE_NATIVE_MARKER);
	ck_assert_uint_eq(r.f[2].rd.cur.regs[SW_X64_RBX], 0x5001);
	sb_fini(&w);
}

START_TEST(faulting_exception_frame)
{
	check_context_frame(SW_FRAME_FAULTING_EXCEPTION, SW_FRAME_ATTR_EXCEPTION | SW_FRAME_ATTR_FAULTED,
	                    0, 1, 1, NULL);
}
END_TEST

START_TEST(resumable_and_redirected_frames)
{
	check_context_frame(SW_FRAME_RESUMABLE, SW_FRAME_ATTR_RESUMABLE, 1, 0, 0, NULL);
	check_context_frame(SW_FRAME_REDIRECTED_THREAD, SW_FRAME_ATTR_RESUMABLE, 1, 0, 0, NULL);
}
END_TEST

START_TEST(software_exception_frame)
{
	check_context_frame(SW_FRAME_SOFTWARE_EXCEPTION, SW_FRAME_ATTR_EXCEPTION, 0, 1, 0, NULL);
}
END_TEST

START_TEST(func_eval_frame)
{
	static int evaluated;
	sw_frame_view v = { .type = SW_FRAME_FUNC_EVAL };

	check_context_frame(SW_FRAME_FUNC_EVAL, SW_FRAME_ATTR_RESUMABLE, 1, 0, 0, &evaluated);
	ck_assert_int_eq(sw_frame_type_ops(SW_FRAME_FUNC_EVAL)->transition(&v), SW_TRANSITION_U2M);
	v.type = SW_FRAME_RESUMABLE;
	ck_assert_int_eq(sw_frame_type_ops(SW_FRAME_RESUMABLE)->transition(&v), SW_TRANSITION_NONE);
}
END_TEST

/* A runtime's lazy filler for the test: writes `state` into the Frame's record. */
struct lazy_fill {
	sb_world *w;
	const sw_context *state;    /* NULL: leave it empty */
	int calls;
	sw_status fail;
};

static sw_status fill_machine_state(const sw_frame_view *f, void *data)
{
	struct lazy_fill *l = data;
	uint64_t record;

	l->calls++;
	if (l->fail != SW_OK)
		return l->fail;
	if (sw_frame_read_field(f, SW_HMF_MACHINE_STATE, &record) != SW_OK)
		return SW_E_BADFRAME;
	if (l->state)
		put_record(l->w, record, l->state);
	return SW_OK;
}

START_TEST(helper_method_frame)
{
	sb_world w;
	sw_context at;
	recording r;
	static int helper, obj_slots;
	uint64_t fields[4] = { (uintptr_t)&helper, RECORD, (uintptr_t)&obj_slots, 0 };

	sb_init(&w);
	lay_out_a(&w, &at);
	/* Captured: A called the helper at A+25; the state is A's at that call. */
	sw_context_set(&at, SW_X64_RIP, A_START + 25);
	at.valid &= ~BIT(SW_X64_RAX);
	put_record(&w, RECORD, &at);
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_HELPER_METHOD, 0, fields, 4);
	sb_put(&w, SB_HEAD_SLOT, FRAME_AT);
	walk_from_head(&w, 0, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_ptr_eq(r.f[0].method, &helper);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	ck_assert_int_eq(r.f[1].first, 0);
	ck_assert_uint_eq(sw_context_ip(&r.f[1].rd.cur), A_START + 25);
	ck_assert_int_eq(sw_frame_type_ops(SW_FRAME_HELPER_METHOD)->transition(&(sw_frame_view){ 0 }),
	                 SW_TRANSITION_INTERNAL_CALL);

	/* Not captured yet: reported, not followed; the walk goes on to the next Frame. */
	{
		sw_context captured = at;
		struct lazy_fill fill = { &w, &captured, 0, SW_OK };
		sw_frame_lazy_init hook = { fill_machine_state, &fill };

		at.valid = 0;
		put_record(&w, RECORD, &at);
		walk_from_head(&w, 0, &r);
		ck_assert_int_eq(r.n, 1);
		ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);

		/*
		 * CoreCLR completes a lazy machine state on the walk path
		 * (vm/frames.h, HelperMethodFrame::InsureInit, from
		 * GetReturnAddress and UpdateRegDisplay), so the walk follows the
		 * Frame into A as if it had been captured: the runtime's hook
		 * fills it here, once per walk that asks.
		 */
		ck_assert_int_eq(sw_frame_set_lazy_init(&hook), SW_OK);
		walk_from_head(&w, 0, &r);
		ck_assert_int_eq(fill.calls, 1);
		ck_assert_int_eq(r.n, 2);
		ck_assert_ptr_eq(r.f[1].method, &method_a);
		ck_assert_uint_eq(sw_context_ip(&r.f[1].rd.cur), A_START + 25);
		/* Captured now: the hook is not asked again. */
		walk_from_head(&w, 0, &r);
		ck_assert_int_eq(fill.calls, 1);
		ck_assert_int_eq(r.n, 2);

		/* A hook that leaves it empty: reported, not followed; one that fails fails the walk. */
		put_record(&w, RECORD, &at);
		fill.state = NULL;
		walk_from_head(&w, 0, &r);
		ck_assert_int_eq(r.n, 1);
		fill.fail = SW_E_BADADDR;
		{
			sw_walk_error err;
			int n = 0;
			ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
			ck_assert_int_eq(err.status, SW_E_BADADDR);
		}
		ck_assert_int_eq(sw_frame_set_lazy_init(&(sw_frame_lazy_init){ NULL, NULL }), SW_E_INVAL);
		ck_assert_int_eq(sw_frame_set_lazy_init(NULL), SW_OK);
		walk_from_head(&w, 0, &r);
		ck_assert_int_eq(r.n, 1);
	}
	sb_fini(&w);
}
END_TEST

struct roots {
	uint64_t addr[8], value[8];
	int n;
};

static sw_walk_action root_cb(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	struct roots *r = data;

	(void)cf;
	ck_assert_int_lt(r->n, 8);
	r->addr[r->n] = root->addr;
	r->value[r->n] = root->value;
	r->n++;
	return SW_CONTINUE;
}

static sw_walk_action enum_cb(const sw_crawl_frame *cf, void *data)
{
	ck_assert_int_eq(sw_crawl_frame_enum_gc_roots(cf, root_cb, data), SW_OK);
	return SW_CONTINUE;
}

/* HelperMethodFrame and TransitionFrame report the slots they protect. */
START_TEST(frames_protect_references)
{
	sb_world w;
	struct roots r;
	uint64_t list = FRAME_AT + 0x100, obj_slot1 = FRAME_AT + 0x200, obj_slot2 = FRAME_AT + 0x208;
	uint64_t hmf[4] = { 0, 0, list, 2 };
	uint64_t tf[5] = { 0, 0, SW_TF_PRESTUB, list, 1 };
	sw_walk_error err;

	sb_init(&w);
	sb_put(&w, list, obj_slot1);
	sb_put(&w, list + 8, obj_slot2);
	sb_put(&w, obj_slot1, 0x0b1ec71);
	sb_put(&w, obj_slot2, 0x0b1ec72);
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_HELPER_METHOD, 0, hmf, 4);
	sb_put(&w, SB_HEAD_SLOT, FRAME_AT);
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, enum_cb, &r, 0, &err), SW_CONTINUE);
	ck_assert_int_eq(r.n, 2);
	ck_assert_uint_eq(r.addr[0], obj_slot1);
	ck_assert_uint_eq(r.value[0], 0x0b1ec71);
	ck_assert_uint_eq(r.addr[1], obj_slot2);

	/* A TransitionFrame's protected arguments; its block has no managed return address here. */
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_TRANSITION, 0, tf, 5);
	sb_put(&w, FRAME_AT + 0x300 + 48, 0);          /* block at +0x300: return address 0 */
	sb_put(&w, FRAME_AT + 16 + 8, FRAME_AT + 0x300);
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, enum_cb, &r, 0, &err), SW_CONTINUE);
	ck_assert_int_eq(r.n, 1);
	ck_assert_uint_eq(r.value[0], 0x0b1ec71);

	/* A garbage count is refused, not followed. */
	hmf[3] = 1u << 30;
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_HELPER_METHOD, 0, hmf, 4);
	{
		sw_iter it;
		ck_assert_int_eq(sw_iter_init(&it, &w.thread, NULL, 0, 0), SW_OK);
		ck_assert_int_eq(sw_iter_next(&it), 1);
		ck_assert_int_eq(sw_crawl_frame_enum_gc_roots(sw_iter_frame(&it), root_cb, &r), SW_E_BADFRAME);
		sw_iter_end(&it);
	}
	sb_fini(&w);
}
END_TEST

struct flagged_roots {
	uint64_t addr[4], value[4];
	uint32_t flags[4];
	int n;
};

static sw_walk_action flagged_root_cb(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	struct flagged_roots *r = data;

	(void)cf;
	ck_assert_int_lt(r->n, 4);
	r->addr[r->n] = root->addr;
	r->value[r->n] = root->value;
	r->flags[r->n] = root->flags;
	r->n++;
	return SW_CONTINUE;
}

static sw_walk_action frame_roots_cb(const sw_crawl_frame *cf, void *data)
{
	if (sw_crawl_frame_state(cf) == SW_STATE_FRAME)
		ck_assert_int_eq(sw_crawl_frame_enum_gc_roots(cf, flagged_root_cb, data), SW_OK);
	return SW_CONTINUE;
}

/*
 * A HijackFrame: A's callee returned into the runtime's hijack stub, which
 * saved its registers and pushed the Frame.  CoreCLR (vm/frames.h,
 * HijackFrame; vm/amd64/cgenamd64.cpp, HijackFrame::UpdateRegDisplay_Impl):
 * the Frame has no attributes and no function (Frame's defaults), so it is
 * reported with no method; the walk resumes A at m_ReturnAddress, the
 * return address the hijack replaced (not whatever IP the saved block
 * holds), with SP just above the saved block and the callee-saved
 * registers from it; A is at a call site, neither first nor interrupted.
 * HijackFrame::GcScanRoots reports the returned value's registers by the
 * return kind: an object in rax, an interior pointer in rdx here.
 */
START_TEST(hijack_frame)
{
	sb_world w;
	sw_context saved;
	recording r;
	struct flagged_roots roots;
	uint64_t fields[4] = { A_START + 25, RECORD, BIT(SW_X64_RAX), BIT(SW_X64_RDX) };

	sb_init(&w);
	lay_out_a(&w, &saved);
	sw_context_set(&saved, SW_X64_RIP, SB_NATIVE_IP + 0x77);    /* the stub: not where A resumes */
	sw_context_set(&saved, SW_X64_RAX, 0x0b1ec7);
	sw_context_set(&saved, SW_X64_RDX, 0x0b1ec7 + 8);
	put_record(&w, RECORD, &saved);
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_HIJACK, 0, fields, 4);
	sb_put(&w, SB_HEAD_SLOT, FRAME_AT);
	walk_from_head(&w, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);
	ck_assert_uint_eq(r.f[0].type, SW_FRAME_HIJACK);
	ck_assert_ptr_null(r.f[0].method);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	ck_assert_int_eq(r.f[1].first, 0);
	ck_assert_int_eq(r.f[1].interrupted, 0);
	ck_assert_uint_eq(sw_context_ip(&r.f[1].rd.cur), A_START + 25);
	ck_assert_uint_eq(r.f[1].rd.cur_loc[SW_X64_RIP], FRAME_AT + 16 + 8 * SW_HJF_RETURN_ADDRESS);
	ck_assert_uint_eq(sw_context_sp(&r.f[1].rd.cur), S0 - 88);
	ck_assert_uint_eq(r.f[1].rd.cur.regs[SW_X64_RBX], 0xa1);
	ck_assert_uint_eq(r.f[1].rd.cur_loc[SW_X64_RBX], RECORD + 16 + 8 * SW_X64_RBX);
	ck_assert_int_eq(r.f[2].state, SW_STATE_NATIVE_MARKER);
	ck_assert_uint_eq(r.f[2].rd.cur.regs[SW_X64_RBX], 0x5001);
	ck_assert_ptr_null(sw_frame_type_ops(SW_FRAME_HIJACK)->transition);

	/* The returned references, at their slots in the saved block. */
	memset(&roots, 0, sizeof roots);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, frame_roots_cb, &roots, 0, NULL), SW_CONTINUE);
	ck_assert_int_eq(roots.n, 2);
	ck_assert_uint_eq(roots.addr[0], RECORD + 16 + 8 * SW_X64_RAX);
	ck_assert_uint_eq(roots.value[0], 0x0b1ec7);
	ck_assert_uint_eq(roots.flags[0], 0);
	ck_assert_uint_eq(roots.addr[1], RECORD + 16 + 8 * SW_X64_RDX);
	ck_assert_uint_eq(roots.flags[1], SW_GC_INTERIOR);

	/* A mask naming registers x64 has not is garbage: refused, not read. */
	fields[2] = 1ULL << 63;
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_HIJACK, 0, fields, 4);
	{
		sw_iter it;
		ck_assert_int_eq(sw_iter_init(&it, &w.thread, NULL, 0, 0), SW_OK);
		ck_assert_int_eq(sw_iter_next(&it), 1);
		ck_assert_int_eq(sw_crawl_frame_enum_gc_roots(sw_iter_frame(&it), flagged_root_cb, &roots),
		                 SW_E_BADFRAME);
		sw_iter_end(&it);
	}
	/* A return address with no saved block is garbage: reported, then the walk fails. */
	fields[1] = 0;
	fields[2] = 0;
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_HIJACK, 0, fields, 4);
	{
		sw_walk_error err;
		int n = 0;
		ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
		ck_assert_int_eq(err.status, SW_E_BADADDR);
		ck_assert_int_eq(n, 1);
	}
	sb_fini(&w);
}
END_TEST

struct many_roots {
	uint64_t addr[32];
	uint32_t flags[32];
	int n;
};

static int many_root_fn(void *data, uint64_t slot, uint32_t flags)
{
	struct many_roots *r = data;

	ck_assert_int_lt(r->n, 32);
	r->addr[r->n] = slot;
	r->flags[r->n] = flags;
	r->n++;
	return 0;
}

static sw_walk_action many_root_cb(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	(void)cf;
	return many_root_fn(data, root->addr, root->flags) ? SW_ABORT : SW_CONTINUE;
}

/* The roots of the Frame at `frame_addr` (the head's first Frame), through the walk. */
static sw_status frame_roots(sb_world *w, struct many_roots *r)
{
	sw_iter it;
	sw_status st;

	memset(r, 0, sizeof *r);
	ck_assert_int_eq(sw_iter_init(&it, &w->thread, NULL, 0, 0), SW_OK);
	ck_assert_int_eq(sw_iter_next(&it), 1);
	ck_assert_int_eq(sw_crawl_frame_state(sw_iter_frame(&it)), SW_STATE_FRAME);
	st = sw_crawl_frame_enum_gc_roots(sw_iter_frame(&it), many_root_cb, r);
	sw_iter_end(&it);
	return st;
}

/* An sw_value_layout at `at`: n series of (offset, slots, flags). */
static void put_layout(sb_world *w, uint64_t at, unsigned n, const uint64_t (*series)[3])
{
	sb_put(w, at, n);
	for (unsigned i = 0; i < n; i++)
		for (unsigned k = 0; k < 3; k++)
			sb_put(w, at + 8 + 24 * i + 8 * k, series[i][k]);
}

/*
 * A value type as CoreCLR lays it out unboxed, and its GCDesc:
 * struct V { int a; object o1; object o2; long b; object o3; } has its
 * references at offsets 8, 16 and 32.  Boxed, a MethodTable pointer comes
 * first, so its GCDesc has two series, (16, 2 slots) and (40, 1 slot);
 * ReportPointersFromValueType (vm/siginfo.cpp) walks them from the highest
 * down, each offset less the MethodTable pointer: V+32, then V+8, V+16.
 * A by-ref-like ref struct R { ref int r; object o; } also reports its
 * by-ref field first, as an interior pointer: R+0 (interior), then R+8.
 */
static const uint64_t layout_v[2][3] = { { 40 - 8, 1, 0 }, { 16 - 8, 2, 0 } };
static const uint64_t layout_r[2][3] = { { 0, 1, SW_GC_INTERIOR }, { 16 - 8, 1, 0 } };

/*
 * ProtectByRefsFrame (vm/frames.h; vm/frames.cpp,
 * ProtectByRefsFrame::GcScanRoots): each ByRefInfo of the list in order;
 * a primitive-typed one reports nothing, a value-typed one its copy's
 * references by ReportPointersFromValueType, any other its copy's slot
 * as an object reference.  As a Frame it has the defaults: no return
 * address (it is reported and the walk goes on to the next Frame), no
 * function (FUNCTIONSONLY drops it), no transition.
 */
START_TEST(protect_byrefs_frame)
{
	sb_world w;
	recording r;
	struct many_roots roots;
	uint64_t e1 = FRAME_AT + 0x100, e2 = FRAME_AT + 0x140, e3 = FRAME_AT + 0x180,
	         e4 = FRAME_AT + 0x200, e5 = FRAME_AT + 0x280;
	uint64_t lv = FRAME_AT + 0x400, lr = FRAME_AT + 0x480, f2 = FRAME_AT + 0x40;
	uint64_t fields[1] = { e1 };

	sb_init(&w);
	put_layout(&w, lv, 2, layout_v);
	put_layout(&w, lr, 2, layout_r);
	/* e1: an int (primitive), e2: a string (object), e3: a V, e4: an R, e5: a V whose type has no layout. */
	sb_put(&w, e1, e2); sb_put(&w, e1 + 8, SW_BYREF_PRIMITIVE); sb_put(&w, e1 + 24, 42);
	sb_put(&w, e2, e3); sb_put(&w, e2 + 8, SW_BYREF_OBJECT); sb_put(&w, e2 + 24, 0x0b1ec7);
	sb_put(&w, e3, e4); sb_put(&w, e3 + 8, SW_BYREF_VALUE); sb_put(&w, e3 + 16, lv);
	sb_put(&w, e4, e5); sb_put(&w, e4 + 8, SW_BYREF_VALUE); sb_put(&w, e4 + 16, lr);
	sb_put(&w, e5, 0); sb_put(&w, e5 + 8, SW_BYREF_VALUE); sb_put(&w, e5 + 16, 0);
	sb_frame(&w, FRAME_AT, f2, SW_FRAME_PROTECT_BYREFS, 0, fields, 1);
	sb_frame(&w, f2, 0, SW_FRAME_DEBUGGER_EXIT, 0, NULL, 0);
	sb_put(&w, SB_HEAD_SLOT, FRAME_AT);

	walk_from_head(&w, 0, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);
	ck_assert_uint_eq(r.f[0].type, SW_FRAME_PROTECT_BYREFS);
	ck_assert_ptr_null(r.f[0].method);
	ck_assert_uint_eq(r.f[1].type, SW_FRAME_DEBUGGER_EXIT);
	walk_from_head(&w, SW_WALK_FUNCTIONSONLY, &r);
	ck_assert_int_eq(r.n, 0);
	ck_assert_ptr_null(sw_frame_type_ops(SW_FRAME_PROTECT_BYREFS)->transition);

	ck_assert_int_eq(frame_roots(&w, &roots), SW_OK);
	ck_assert_int_eq(roots.n, 6);
	ck_assert_uint_eq(roots.addr[0], e2 + 24);          /* the string copy's slot */
	ck_assert_uint_eq(roots.flags[0], 0);
	ck_assert_uint_eq(roots.addr[1], e3 + 24 + 32);     /* V.o3 */
	ck_assert_uint_eq(roots.addr[2], e3 + 24 + 8);      /* V.o1 */
	ck_assert_uint_eq(roots.addr[3], e3 + 24 + 16);     /* V.o2 */
	ck_assert_uint_eq(roots.addr[4], e4 + 24);          /* R.r, interior */
	ck_assert_uint_eq(roots.flags[4], SW_GC_INTERIOR);
	ck_assert_uint_eq(roots.addr[5], e4 + 24 + 8);      /* R.o */
	ck_assert_uint_eq(roots.flags[5], 0);

	/* Garbage: an unknown kind, a cycle, a layout's flags or counts out of bounds. */
	sb_put(&w, e1 + 8, 7);
	ck_assert_int_eq(frame_roots(&w, &roots), SW_E_BADFRAME);
	sb_put(&w, e1 + 8, SW_BYREF_PRIMITIVE);
	sb_put(&w, e3, e2);                                 /* e2 -> e3 -> e2 ... */
	ck_assert_int_eq(frame_roots(&w, &roots), SW_E_FRAMECYCLE);
	sb_put(&w, e3, e3);                                 /* e3 -> e3 */
	ck_assert_int_eq(frame_roots(&w, &roots), SW_E_FRAMECYCLE);
	sb_put(&w, e3, e4);
	sb_put(&w, lr + 8 + 16, 2);                         /* flags other than interior */
	ck_assert_int_eq(frame_roots(&w, &roots), SW_E_BADFRAME);
	sb_put(&w, lr + 8 + 16, SW_GC_INTERIOR);
	sb_put(&w, lv, 1u << 20);                           /* a huge series count */
	ck_assert_int_eq(frame_roots(&w, &roots), SW_E_BADFRAME);
	sb_put(&w, lv, 2);
	sb_put(&w, lv + 8 + 8, 1ULL << 40);                 /* a huge slot count */
	ck_assert_int_eq(frame_roots(&w, &roots), SW_E_LIMIT);
	sb_put(&w, lv + 8 + 8, 1);
	sb_put(&w, lv + 8, UINT64_MAX - 8);                 /* an offset past the address space */
	ck_assert_int_eq(frame_roots(&w, &roots), SW_E_BADFRAME);
	sb_put(&w, lv + 8, 32);
	sb_put(&w, e4, 0x10);                               /* an unreadable entry */
	ck_assert_int_eq(frame_roots(&w, &roots), SW_E_BADADDR);
	sb_fini(&w);
}
END_TEST

static int stop_after_first(void *data, uint64_t slot, uint32_t flags)
{
	many_root_fn(data, slot, flags);
	return 1;
}

/* A reader whose memory past the stack is an endless list of ValueClassInfos, none repeating. */
#define ENDLESS_LO 0x100000000000ull
static sw_status endless_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const sw_memory *stack = ctx;
	unsigned char *out = buf;

	if (addr < ENDLESS_LO)
		return stack->read(stack->ctx, addr, buf, len);
	for (size_t i = 0; i < len; i++) {
		uint64_t a = addr + i, word = (a - ENDLESS_LO) / 8;
		/* node k at ENDLESS_LO + 24k: next = the node after, layout 0, data 0 */
		uint64_t v = word % 3 == 0 ? a - (a - ENDLESS_LO) % 8 + 24 : 0;

		out[i] = (unsigned char)(v >> (8 * ((a - ENDLESS_LO) % 8)));
	}
	return SW_OK;
}

/*
 * ProtectValueClassFrame (vm/frames.cpp, ProtectValueClassFrame::GcScanRoots):
 * each ValueClassInfo in order, the value at pData reported by its type
 * (ReportPointersFromValueType), nothing else; a Frame with defaults.
 */
START_TEST(protect_value_class_frame)
{
	sb_world w;
	recording r;
	struct many_roots roots;
	sw_memory stack;
	uint64_t e1 = FRAME_AT + 0x100, e2 = FRAME_AT + 0x140;
	uint64_t lv = FRAME_AT + 0x400, lr = FRAME_AT + 0x480, v = FRAME_AT + 0x600, rr = FRAME_AT + 0x700;
	uint64_t fields[1] = { e1 };

	sb_init(&w);
	put_layout(&w, lv, 2, layout_v);
	put_layout(&w, lr, 2, layout_r);
	sb_put(&w, e1, e2); sb_put(&w, e1 + 8, lv); sb_put(&w, e1 + 16, v);
	sb_put(&w, e2, 0); sb_put(&w, e2 + 8, lr); sb_put(&w, e2 + 16, rr);
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_PROTECT_VALUE_CLASS, 0, fields, 1);
	sb_put(&w, SB_HEAD_SLOT, FRAME_AT);

	walk_from_head(&w, 0, &r);
	ck_assert_int_eq(r.n, 1);
	ck_assert_uint_eq(r.f[0].type, SW_FRAME_PROTECT_VALUE_CLASS);
	ck_assert_ptr_null(r.f[0].method);
	ck_assert_int_eq(frame_roots(&w, &roots), SW_OK);
	ck_assert_int_eq(roots.n, 5);
	ck_assert_uint_eq(roots.addr[0], v + 32);
	ck_assert_uint_eq(roots.addr[1], v + 8);
	ck_assert_uint_eq(roots.addr[2], v + 16);
	ck_assert_uint_eq(roots.addr[3], rr);
	ck_assert_uint_eq(roots.flags[3], SW_GC_INTERIOR);
	ck_assert_uint_eq(roots.addr[4], rr + 8);

	/* A callback that stops is obeyed: no more roots after it. */
	{
		sw_frame_view view = { FRAME_AT, 0, SW_FRAME_PROTECT_VALUE_CLASS, 0, &w.thread };
		struct many_roots one;

		memset(&one, 0, sizeof one);
		ck_assert_int_eq(sw_frame_type_ops(SW_FRAME_PROTECT_VALUE_CLASS)->gc_roots(&view,
		                 stop_after_first, &one), SW_OK);
		ck_assert_int_eq(one.n, 1);
	}

	/* An endless list that never repeats: refused after a bound, not followed for ever. */
	stack = w.mem;
	w.mem.read = endless_read;
	w.mem.ctx = &stack;
	sb_put(&w, FRAME_AT + 16, ENDLESS_LO);
	ck_assert_int_eq(frame_roots(&w, &roots), SW_E_LIMIT);
	ck_assert_int_eq(roots.n, 0);
	sb_fini(&w);
}
END_TEST

/*
 * TailCallFrame (CoreCLR x86: vm/frames.h, TailCallFrame;
 * TailCallFrame::UpdateRegDisplay_Impl, vm/i386/cgenx86.cpp): the walk
 * resumes the caller at m_ReturnAddress, with SP just past it (the end of
 * the Frame) and the callee-saved registers at their slots in m_regs; A
 * is at a call site, not first; the Frame names no function.  Here on
 * x64 its m_regs hold x64's transition block registers (r15, r14, r13,
 * r12, rbx, rbp).
 */
START_TEST(tail_call_frame)
{
	sb_world w;
	sw_context at;
	recording r;
	uint64_t fields[8] = { SB_NATIVE_IP + 0x40, 0x15, 0x14, 0x13, 0x12, 0xa1, S0 - 8, A_START + 25 };

	sb_init(&w);
	lay_out_a(&w, &at);
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_TAIL_CALL, 0, fields, 8);
	sb_put(&w, SB_HEAD_SLOT, FRAME_AT);
	walk_from_head(&w, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);
	ck_assert_uint_eq(r.f[0].type, SW_FRAME_TAIL_CALL);
	ck_assert_ptr_null(r.f[0].method);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[1].method, &method_a);
	ck_assert_int_eq(r.f[1].first, 0);
	ck_assert_uint_eq(sw_context_ip(&r.f[1].rd.cur), A_START + 25);
	ck_assert_uint_eq(r.f[1].rd.cur_loc[SW_X64_RIP], FRAME_AT + 16 + 8 * 7);
	ck_assert_uint_eq(sw_context_sp(&r.f[1].rd.cur), FRAME_AT + 16 + 8 * 8);
	ck_assert_uint_eq(r.f[1].rd.cur.regs[SW_X64_RBX], 0xa1);
	ck_assert_uint_eq(r.f[1].rd.cur_loc[SW_X64_RBX], FRAME_AT + 16 + 8 * 5);
	ck_assert_uint_eq(r.f[1].rd.cur.regs[SW_X64_R15], 0x15);
	ck_assert_uint_eq(r.f[1].rd.cur_loc[SW_X64_RBP], FRAME_AT + 16 + 8 * 6);
	ck_assert_int_eq(r.f[2].state, SW_STATE_NATIVE_MARKER);
	ck_assert_uint_eq(r.f[2].rd.cur.regs[SW_X64_RBX], 0x5001);
	ck_assert_ptr_null(sw_frame_type_ops(SW_FRAME_TAIL_CALL)->transition);
	ck_assert_ptr_null(sw_frame_type_ops(SW_FRAME_TAIL_CALL)->gc_roots);

	/* A return address into no managed code: reported, then on to the next Frame. */
	sb_put(&w, FRAME_AT + 16 + 8 * 7, SB_NATIVE_IP);
	walk_from_head(&w, 0, &r);
	ck_assert_int_eq(r.n, 1);
	sb_fini(&w);
}
END_TEST

/*
 * The same on x86, CoreCLR's own layout: the Frame's fields are
 * m_CallerAddress, then m_regs (edi, esi, ebx, ebp), then m_ReturnAddress,
 * 4 bytes each after the 12-byte header; UpdateRegDisplay_Impl resumes at
 * m_ReturnAddress with ESP = the end of the Frame (the cDAC's x86 handler
 * says the same: the address just after the TailCallFrame structure) and
 * each callee-saved register at its slot in m_regs.
 */
START_TEST(tail_call_frame_x86)
{
	unsigned char stack[256];
	const uint64_t base = 0x10000, frame = base + 64;
	const uint32_t words[] = { 0, SW_FRAME_TAIL_CALL, 0, 0x401000, 0xd1, 0x51, 0xb1, 0xbf00, 0x402345 };
	const sw_frame_ops *ops = sw_frame_type_ops(SW_FRAME_TAIL_CALL);
	sw_frame_view view;
	sw_memory mem;
	sw_codemap *map;
	sw_thread t;
	sw_regdisplay rd;
	uint64_t ra;

	memset(stack, 0, sizeof stack);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	for (unsigned i = 0; i < sizeof words / sizeof words[0]; i++)
		for (unsigned b = 0; b < 4; b++)
			stack[frame - base + 4 * i + b] = (unsigned char)(words[i] >> (8 * b));
	ck_assert_int_eq(sw_memory_init_buffer(&mem, stack, sizeof stack, base), SW_OK);
	ck_assert_int_eq(sw_thread_init(&t, SW_ARCH_X86, map, &mem, 0, base, base + sizeof stack), SW_OK);
	view = (sw_frame_view){ frame, 0, SW_FRAME_TAIL_CALL, 0, &t };
	ck_assert_int_eq(ops->return_address(&view, &ra), SW_OK);
	ck_assert_uint_eq(ra, 0x402345);
	memset(&rd, 0, sizeof rd);
	ck_assert_int_eq(ops->update_regdisplay(&view, &rd), SW_OK);
	ck_assert_uint_eq(rd.cur.regs[SW_X86_EIP], 0x402345);
	ck_assert_uint_eq(rd.cur.regs[SW_X86_ESP], frame + 36);
	ck_assert_uint_eq(rd.cur.regs[SW_X86_EDI], 0xd1);
	ck_assert_uint_eq(rd.cur_loc[SW_X86_EDI], frame + 16);
	ck_assert_uint_eq(rd.cur.regs[SW_X86_ESI], 0x51);
	ck_assert_uint_eq(rd.cur.regs[SW_X86_EBX], 0xb1);
	ck_assert_uint_eq(rd.cur.regs[SW_X86_EBP], 0xbf00);
	ck_assert_uint_eq(rd.cur_loc[SW_X86_EBP], frame + 28);
	ck_assert_uint_eq(rd.cur.valid, BIT(SW_X86_EIP) | BIT(SW_X86_ESP) | BIT(SW_X86_EDI) |
	                  BIT(SW_X86_ESI) | BIT(SW_X86_EBX) | BIT(SW_X86_EBP));
	sw_codemap_destroy(map);
}
END_TEST

/*
 * ExceptionFilterFrame (vm/frames.h): only its Pop differs from Frame's,
 * so the walk sees Frame's defaults: no return address, no function, no
 * references; it is reported and the walk goes on.
 */
START_TEST(exception_filter_frame)
{
	sb_world w;
	recording r;
	struct many_roots roots;
	uint64_t fields[1] = { S0 - 40 };

	sb_init(&w);
	sb_frame(&w, FRAME_AT, FRAME_AT + 0x40, SW_FRAME_EXCEPTION_FILTER, 0, fields, 1);
	sb_frame(&w, FRAME_AT + 0x40, 0, SW_FRAME_DEBUGGER_EXIT, 0, NULL, 0);
	sb_put(&w, SB_HEAD_SLOT, FRAME_AT);
	walk_from_head(&w, 0, &r);
	ck_assert_int_eq(r.n, 2);
	ck_assert_uint_eq(r.f[0].type, SW_FRAME_EXCEPTION_FILTER);
	ck_assert_ptr_null(r.f[0].method);
	ck_assert_uint_eq(r.f[1].type, SW_FRAME_DEBUGGER_EXIT);
	ck_assert_int_eq(frame_roots(&w, &roots), SW_OK);
	ck_assert_int_eq(roots.n, 0);
	ck_assert_ptr_null(sw_frame_type_ops(SW_FRAME_EXCEPTION_FILTER)->transition);
	ck_assert_str_eq(sw_frame_type_ops(SW_FRAME_EXCEPTION_FILTER)->name, "ExceptionFilterFrame");
	sb_fini(&w);
}
END_TEST

/*
 * InterpreterFrame, CoreCLR's rules for it:
 * - GetTopInterpMethodContextFrame (vm/frames.cpp) finds the innermost
 *   active context frame from the Frame's hint: from an active hint on
 *   through next while the next one is active; from an inactive (stale)
 *   one back through parent to the first active one.
 * - SetContextToInterpMethodContextFrame resumes there: IP = its ip, SP =
 *   its address, FP = its stack.  The Frame names no function; its
 *   transition is managed to unmanaged.
 * - VirtualUnwindInterpreterCallFrame (vm/eetwain.cpp) unwinds each
 *   interpreted method to its parent context frame the same way (IP, SP,
 *   FP; the other registers unchanged), and past the last (no parent; the
 *   cDAC also stops at an inactive one) StackFrameIterator::NextRaw
 *   (vm/stackwalk.cpp) restores the Frame's transition block: the caller
 *   of the interpreter, here managed method A, at the block's return
 *   address with its callee-saved registers and SP just above the block.
 * The interpreter's bytecode is registered as method B, whose own rule
 * (CFA = SP + 40) would unwind somewhere else entirely.
 */
#define I_START 0x10003000ull
#define CTX(i) (FRAME_AT - 0x100 * ((uint64_t)(i) + 1))        /* C0 outermost, highest */
#define XIP(i) (I_START + 10 + 2 * (uint64_t)(i))
#define XSTACK(i) (0x6000 + 0x100 * (uint64_t)(i))
#define BLOCK (S0 - 88 - 56)        /* resumes A with SP = S0 - 88 */

static int interpreted;

static void put_context_frame(sb_world *w, uint64_t at, uint64_t parent, uint64_t ip, uint64_t stack,
                              uint64_t next)
{
	sb_put(w, at + 8 * SW_IMCF_PARENT, parent);
	sb_put(w, at + 8 * SW_IMCF_IP, ip);
	sb_put(w, at + 8 * SW_IMCF_STACK, stack);
	sb_put(w, at + 8 * SW_IMCF_NEXT, next);
}

/* A called by native code, then into the interpreter; C0 .. C(n-1) active, C(n) returned. */
static void lay_out_interpreter(sb_world *w, unsigned n, uint64_t hint)
{
	const uint64_t block[7] = { 0x15, 0x14, 0x13, 0x12, 0xa1, S0 - 8, A_START + 25 };
	uint64_t fields[2] = { hint, BLOCK };

	sb_init(w);
	sb_add_method_a(w, A_START, &method_a);
	sb_add_method_b(w, I_START, &interpreted);
	sb_put(w, S0, SB_NATIVE_IP);
	sb_put(w, S0 - 8, 0x5000);
	sb_put(w, S0 - 16, 0x5001);
	for (unsigned i = 0; i < 7; i++)
		sb_put(w, BLOCK + 8 * i, block[i]);
	for (unsigned i = 0; i <= n; i++)
		put_context_frame(w, CTX(i), i ? CTX(i - 1) : 0, i < n ? XIP(i) : 0, XSTACK(i),
		                  i < n ? CTX(i + 1) : 0);
	sb_frame(w, FRAME_AT, 0, SW_FRAME_INTERPRETER, 0, fields, 2);
	sb_put(w, SB_HEAD_SLOT, FRAME_AT);
}

/* The walk CoreCLR's rules give for n active context frames. */
static void check_interpreted_walk(sb_world *w, unsigned n)
{
	recording r;
	uint64_t ips[8];
	sw_walk_error err;
	int got;

	walk_from_head(w, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS, &r);
	ck_assert_int_eq(r.n, (int)n + 3);
	ck_assert_int_eq(r.f[0].state, SW_STATE_FRAME);
	ck_assert_uint_eq(r.f[0].type, SW_FRAME_INTERPRETER);
	ck_assert_ptr_null(r.f[0].method);
	for (unsigned k = 0; k < n; k++) {
		const rec *x = &r.f[1 + k];
		unsigned i = n - 1 - k;         /* innermost first */

		ck_assert_int_eq(x->state, SW_STATE_FRAMELESS);
		ck_assert_ptr_eq(x->method, &interpreted);
		ck_assert_int_eq(x->first, 0);
		ck_assert_uint_eq(sw_context_ip(&x->rd.cur), XIP(i));
		ck_assert_uint_eq(sw_context_sp(&x->rd.cur), CTX(i));
		ck_assert_uint_eq(x->rd.cur.regs[SW_X64_RBP], XSTACK(i));
		ck_assert_uint_eq(x->rd.cur_loc[SW_X64_RIP], CTX(i) + 8 * SW_IMCF_IP);
		ck_assert_uint_eq(x->rd.cur_loc[SW_X64_RBP], CTX(i) + 8 * SW_IMCF_STACK);
		ck_assert_uint_eq(x->rd.cur.valid, BIT(SW_X64_RIP) | BIT(SW_X64_RSP) | BIT(SW_X64_RBP));
	}
	/* Out through the transition block into A. */
	ck_assert_int_eq(r.f[n + 1].state, SW_STATE_FRAMELESS);
	ck_assert_ptr_eq(r.f[n + 1].method, &method_a);
	ck_assert_uint_eq(sw_context_ip(&r.f[n + 1].rd.cur), A_START + 25);
	ck_assert_uint_eq(r.f[n + 1].rd.cur_loc[SW_X64_RIP], BLOCK + 48);
	ck_assert_uint_eq(sw_context_sp(&r.f[n + 1].rd.cur), S0 - 88);
	ck_assert_uint_eq(r.f[n + 1].rd.cur.regs[SW_X64_RBX], 0xa1);
	ck_assert_uint_eq(r.f[n + 1].rd.cur_loc[SW_X64_RBX], BLOCK + 32);
	ck_assert_uint_eq(r.f[n + 1].rd.cur.regs[SW_X64_R15], 0x15);
	ck_assert_uint_eq(r.f[n + 1].rd.cur.regs[SW_X64_RBP], S0 - 8);
	/* And on out of A by its own rule. */
	ck_assert_int_eq(r.f[n + 2].state, SW_STATE_NATIVE_MARKER);
	ck_assert_uint_eq(r.f[n + 2].rd.cur.regs[SW_X64_RBX], 0x5001);
	ck_assert_uint_eq(r.f[n + 2].rd.cur.regs[SW_X64_RBP], 0x5000);

	/* The addresses-only walk (sw_backtrace's step) finds the same frames. */
	got = sw_backtrace(&w->thread, NULL, 0, 0, ips, NULL, 8, NULL, &err);
	ck_assert_int_eq(got, (int)n + 1);
	ck_assert_int_eq(err.status, SW_OK);
	for (unsigned k = 0; k < n; k++)
		ck_assert_uint_eq(ips[k], XIP(n - 1 - k));
	ck_assert_uint_eq(ips[n], A_START + 25);
}

START_TEST(interpreter_frame)
{
	sb_world w;
	recording r;
	sw_walk_error err;
	sw_frame_view view = { FRAME_AT, 0, SW_FRAME_INTERPRETER, 0, NULL };
	const sw_frame_ops *ops = sw_frame_type_ops(SW_FRAME_INTERPRETER);
	sw_regdisplay rd;
	uint64_t ra;
	int n = 0;

	/* Chains of 1, 2 and 3 active methods, the hint at the outermost: on through next. */
	for (unsigned len = 1; len <= 3; len++) {
		lay_out_interpreter(&w, len, CTX(0));
		check_interpreted_walk(&w, len);
		sb_fini(&w);
	}
	/* A stale hint (C3 has returned): back through parent, C3 skipped. */
	lay_out_interpreter(&w, 3, CTX(3));
	check_interpreted_walk(&w, 3);
	view.thread = &w.thread;
	ck_assert_int_eq(ops->return_address(&view, &ra), SW_OK);
	ck_assert_uint_eq(ra, XIP(2));
	memset(&rd, 0, sizeof rd);
	ck_assert_int_eq(ops->update_regdisplay(&view, &rd), SW_OK);
	ck_assert_uint_eq(rd.cur.regs[SW_X64_RSP], CTX(2));
	ck_assert_uint_eq(rd.cur.valid, BIT(SW_X64_RIP) | BIT(SW_X64_RSP) | BIT(SW_X64_RBP));
	ck_assert_int_eq(ops->transition(&view), SW_TRANSITION_M2U);
	/* A hint in the middle of the chain: on through next to C2. */
	sb_put(&w, FRAME_AT + 16, CTX(1));
	check_interpreted_walk(&w, 3);
	/* An inactive parent ends the interpreted methods (the cDAC's rule): C2, then A. */
	sb_put(&w, CTX(1) + 8 * SW_IMCF_IP, 0);
	sb_put(&w, FRAME_AT + 16, CTX(2));
	walk_from_head(&w, 0, &r);
	ck_assert_int_eq(r.n, 3);
	ck_assert_uint_eq(sw_context_ip(&r.f[1].rd.cur), XIP(2));
	ck_assert_ptr_eq(r.f[2].method, &method_a);
	sb_fini(&w);

	/* Everything returned: nothing to resume; reported, not followed. */
	lay_out_interpreter(&w, 0, CTX(0));
	view.thread = &w.thread;
	ck_assert_int_eq(ops->return_address(&view, &ra), SW_OK);
	ck_assert_uint_eq(ra, 0);
	walk_from_head(&w, 0, &r);
	ck_assert_int_eq(r.n, 1);
	/* No hint at all: the same. */
	sb_put(&w, FRAME_AT + 16, 0);
	ck_assert_int_eq(ops->return_address(&view, &ra), SW_OK);
	ck_assert_uint_eq(ra, 0);
	sb_fini(&w);

	/* Hostile chains fail the walk with an error, never loop. */
	lay_out_interpreter(&w, 3, CTX(2));
	view.thread = &w.thread;
	sb_put(&w, CTX(1) + 8 * SW_IMCF_PARENT, CTX(2));        /* parent: C2 -> C1 -> C2 */
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_FRAMECYCLE);
	sb_put(&w, CTX(1) + 8 * SW_IMCF_PARENT, CTX(1));        /* its own parent */
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_FRAMECYCLE);
	sb_put(&w, CTX(1) + 8 * SW_IMCF_PARENT, SB_STACK_HI + 0x1000);   /* off the stack */
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADSP);
	sb_put(&w, CTX(1) + 8 * SW_IMCF_PARENT, CTX(0));
	sb_put(&w, CTX(0) + 8 * SW_IMCF_IP, SB_NATIVE_IP);      /* a parent in no interpreted code */
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADFRAME);
	sb_put(&w, CTX(0) + 8 * SW_IMCF_IP, XIP(0));
	sb_put(&w, FRAME_AT + 24, 0);                           /* no transition block */
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADFRAME);
	sb_put(&w, FRAME_AT + 24, CTX(2) - 0x80);               /* one that would go back down */
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADSP);
	sb_put(&w, FRAME_AT + 24, BLOCK);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_CONTINUE);
	/* Cycles in the chains the hint is followed along are refused too. */
	sb_put(&w, CTX(2) + 8 * SW_IMCF_NEXT, CTX(1));          /* next: C1 -> C2 -> C1 */
	sb_put(&w, CTX(1) + 8 * SW_IMCF_NEXT, CTX(2));
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_FRAMECYCLE);
	put_context_frame(&w, CTX(0), CTX(1), 0, 0x5100, 0);
	put_context_frame(&w, CTX(1), CTX(0), 0, 0x5200, 0);    /* parent: C0 -> C1 -> C0, all inactive */
	sb_put(&w, FRAME_AT + 16, CTX(0));
	ck_assert_int_eq(ops->return_address(&view, &ra), SW_E_FRAMECYCLE);
	sb_fini(&w);
}
END_TEST

/* An exception tracker (ExInfo) resumes a faulted frame without any Frame. */
START_TEST(exception_tracker_no_frame_transition)
{
	sb_world w;
	sw_context at, seed;
	recording r;
	uint64_t tracker = FRAME_AT, tracker_slot = SB_STACK_HI - 16;
	sw_walk_error err;
	int n = 0;

	sb_init(&w);
	lay_out_a(&w, &at);
	put_record(&w, RECORD, &at);
	sb_put(&w, tracker, 0);             /* next */
	sb_put(&w, tracker + 8, RECORD);    /* the faulted frame's context */
	sb_put(&w, tracker_slot, tracker);
	w.thread.exception_head = tracker_slot;
	sw_context_init(&seed, SW_ARCH_X64);       /* in the exception handling code */
	sw_context_set(&seed, SW_X64_RIP, SB_NATIVE_IP + 0x500);
	sw_context_set(&seed, SW_X64_RSP, tracker - 0x100);

	memset(&r, 0, sizeof r);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &seed, 0, record_cb, &r,
	                                 SW_WALK_NOTIFY_ON_NO_FRAME_TRANSITIONS, &err), SW_CONTINUE);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.f[0].state, SW_STATE_NO_FRAME_TRANSITION);
	ck_assert_uint_eq(r.f[0].frame, tracker);
	ck_assert_int_eq(r.f[1].state, SW_STATE_FRAMELESS);
	ck_assert_int_eq(r.f[1].interrupted, 1);
	ck_assert_int_eq(r.f[1].faulted, 1);
	ck_assert_uint_eq(sw_context_ip(&r.f[1].rd.cur), A_START + 30);

	/* Without the flag the walk goes straight to the faulted frame. */
	memset(&r, 0, sizeof r);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &seed, 0, record_cb, &r, 0, &err), SW_CONTINUE);
	ck_assert_int_eq(r.n, 1);
	ck_assert_ptr_eq(r.f[0].method, &method_a);

	/* A tracker pointing at itself is a cycle. */
	sb_put(&w, tracker, tracker);
	ck_assert_int_eq(sw_walk_frames(&w.thread, &seed, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_FRAMECYCLE);
	sb_fini(&w);
}
END_TEST

START_TEST(entry_and_marker_frames)
{
	sb_world w;
	recording r;
	static int entry;
	uint64_t m[1] = { (uintptr_t)&entry };
	uint64_t f1 = FRAME_AT, f2 = FRAME_AT + 0x40, f3 = FRAME_AT + 0x80, f4 = FRAME_AT + 0xc0;

	sb_init(&w);
	sb_frame(&w, f1, f2, SW_FRAME_UNMANAGED_TO_MANAGED, 0, m, 1);
	sb_frame(&w, f2, f3, SW_FRAME_DEBUGGER_CLASS_INIT, 0, NULL, 0);
	sb_frame(&w, f3, f4, SW_FRAME_DEBUGGER_EXIT, 0, NULL, 0);
	sb_frame(&w, f4, 0, SW_FRAME_DEBUGGER_U2M_CATCH, 0, NULL, 0);
	sb_put(&w, SB_HEAD_SLOT, f1);
	walk_from_head(&w, 0, &r);
	ck_assert_int_eq(r.n, 4);
	ck_assert_ptr_eq(r.f[0].method, &entry);
	ck_assert_uint_eq(r.f[1].type, SW_FRAME_DEBUGGER_CLASS_INIT);
	ck_assert_uint_eq(r.f[3].type, SW_FRAME_DEBUGGER_U2M_CATCH);
	ck_assert_int_eq(sw_frame_type_ops(SW_FRAME_UNMANAGED_TO_MANAGED)->transition(&(sw_frame_view){ 0 }),
	                 SW_TRANSITION_U2M);
	/* FUNCTIONSONLY keeps only the entry Frame, which names a method. */
	walk_from_head(&w, SW_WALK_FUNCTIONSONLY, &r);
	ck_assert_int_eq(r.n, 1);
	ck_assert_ptr_eq(r.f[0].method, &entry);
	sb_fini(&w);
}
END_TEST

START_TEST(bad_context_records)
{
	sb_world w;
	sw_context at;
	sw_walk_error err;
	uint64_t fields[2] = { RECORD, 0 };
	int n = 0;

	sb_init(&w);
	lay_out_a(&w, &at);
	sb_frame(&w, FRAME_AT, 0, SW_FRAME_RESUMABLE, SW_FRAME_ATTR_RESUMABLE, fields, 2);
	sb_put(&w, SB_HEAD_SLOT, FRAME_AT);

	at.arch = SW_ARCH_X86;                       /* another architecture's record */
	put_record(&w, RECORD, &at);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADFRAME);

	at.arch = SW_ARCH_X64;
	at.valid |= BIT(SW_X64_NREGS);               /* a register x64 does not have */
	put_record(&w, RECORD, &at);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADFRAME);

	at.valid &= ~(BIT(SW_X64_NREGS) | BIT(SW_X64_RSP));   /* no SP */
	put_record(&w, RECORD, &at);
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADFRAME);

	sb_put(&w, FRAME_AT + 16, 0x10);             /* a record at an unreadable address */
	ck_assert_int_eq(sw_walk_frames(&w.thread, NULL, 0, count_cb, &n, 0, &err), SW_FAILED);
	ck_assert_int_eq(err.status, SW_E_BADADDR);
	sb_fini(&w);
}
END_TEST

static Suite *frames_suite(void)
{
	Suite *s = suite_create("frames");
	TCase *tc = tcase_create("frame kinds");

	tcase_add_test(tc, faulting_exception_frame);
	tcase_add_test(tc, resumable_and_redirected_frames);
	tcase_add_test(tc, software_exception_frame);
	tcase_add_test(tc, func_eval_frame);
	tcase_add_test(tc, helper_method_frame);
	tcase_add_test(tc, hijack_frame);
	tcase_add_test(tc, protect_byrefs_frame);
	tcase_add_test(tc, protect_value_class_frame);
	tcase_add_test(tc, tail_call_frame);
	tcase_add_test(tc, tail_call_frame_x86);
	tcase_add_test(tc, exception_filter_frame);
	tcase_add_test(tc, interpreter_frame);
	tcase_add_test(tc, entry_and_marker_frames);
	tcase_add_test(tc, frames_protect_references);
	tcase_add_test(tc, exception_tracker_no_frame_transition);
	tcase_add_test(tc, bad_context_records);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(frames_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
