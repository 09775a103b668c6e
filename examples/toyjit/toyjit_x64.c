/*
 * toyjit_x64.c - the toy JIT's x86-64 back end: five prolog shapes, the
 * body (with its objects and their GC information), the entry thunk, the
 * TransitionFrame stubs, the thrower and its catch funclet in x86-64
 * machine code.
 *
 * Stack alignment: every method keeps the System V rule (rsp is 16-byte
 * aligned at each call it makes), so the C functions it calls get an aligned
 * stack.  That is why the frame sizes below are what they are.
 */
#include <stdlib.h>
#include <string.h>
#include "toyjit_backend.h"
#include "x64_emit.h"

#define PAGE            4096

/* Bytes of locals every method keeps for an InlinedCallFrame. */
#define LOCALS_SIZE     ((int32_t)sizeof(sw_inlined_call_frame))

#define emit tj_emit
#define here tj_here
#define note tj_note

/* Emit-and-describe helpers: one instruction, then its builder call. */
static void push_reg(struct emit *e, unsigned r)
{
	x64_push(e->b, r);
	note(e, sw_swu_push_reg(e->sb, here(e), x64_dwarf_reg(r)));
}

static void pop_reg(struct emit *e, unsigned r)
{
	x64_pop(e->b, r);
	note(e, sw_swu_pop_reg(e->sb, here(e), x64_dwarf_reg(r)));
}

static void alloc_stack(struct emit *e, int32_t size)
{
	x64_sub_ri(e->b, X64_RSP, size);
	note(e, sw_swu_alloc_stack(e->sb, here(e), (uint32_t)size));
}

static void free_stack(struct emit *e, int32_t size)
{
	x64_add_ri(e->b, X64_RSP, size);
	note(e, sw_swu_free_stack(e->sb, here(e), (uint32_t)size));
}

static void set_frame(struct emit *e, int32_t sp_offset)
{
	if (sp_offset == 0)
		x64_mov_rr(e->b, X64_RBP, X64_RSP);
	else
		x64_lea(e->b, X64_RBP, X64_RSP, sp_offset);
	note(e, sw_swu_set_frame(e->sb, here(e), SW_X64_RBP, (uint32_t)sp_offset));
}

static void restore_sp_from_frame(struct emit *e, int32_t frame_offset)
{
	if (frame_offset == 0)
		x64_mov_rr(e->b, X64_RSP, X64_RBP);
	else
		x64_lea(e->b, X64_RSP, X64_RBP, frame_offset);
	note(e, sw_swu_restore_sp_from_frame(e->sb, here(e), frame_offset));
}

static void save_reg(struct emit *e, unsigned r, int32_t sp_offset)
{
	x64_mov_mr(e->b, X64_RSP, sp_offset, r);
	note(e, sw_swu_save_reg(e->sb, here(e), x64_dwarf_reg(r), (uint32_t)sp_offset));
}

static void restore_reg(struct emit *e, unsigned r, int32_t sp_offset)
{
	x64_mov_rm(e->b, r, X64_RSP, sp_offset);
	note(e, sw_swu_restore_reg(e->sb, here(e), x64_dwarf_reg(r)));
}

static void ret(struct emit *e)
{
	x64_ret(e->b);
	note(e, sw_swu_epilog_end(e->sb, here(e)));
}

/* The registers each shape saves and then clobbers in its body (hardware numbers). */
static const unsigned char no_fp_saves[] = { X64_R15, X64_R14, X64_R13, X64_R12, X64_RBX };

/*
 * Prolog of each shape.  Returns the rsp-relative offset of the method's
 * LOCALS_SIZE bytes of locals.  Frame sizes keep rsp 16-byte aligned in the
 * body: on entry rsp = 8 (mod 16).
 */
static int32_t x64_prolog(struct emit *e, toyjit_shape shape)
{
	switch (shape) {
	case TOYJIT_RBP_FRAME:          /* 8 + 8 + 8 + 56 = 80 */
		push_reg(e, X64_RBP);
		set_frame(e, 0);
		push_reg(e, X64_RBX);
		alloc_stack(e, 56);
		return 0;
	case TOYJIT_NO_FP:              /* 8 + 40 + 64 = 112 */
		for (size_t i = 0; i < sizeof(no_fp_saves); i++)
			push_reg(e, no_fp_saves[i]);
		alloc_stack(e, 64);
		return 0;
	case TOYJIT_BIG_FRAME:          /* 8 + 8 + 0x3000 */
		push_reg(e, X64_RBP);
		set_frame(e, 0);
		/*
		 * Touch each page of the new frame, top down, before rsp moves
		 * over it, as a JIT must where a guard page protects the stack.
		 * The probes move nothing, so they need no unwind description.
		 */
		for (int32_t k = 1; k <= 3; k++)
			x64_test_m32_r32(e->b, X64_RSP, -k * PAGE, X64_RAX);
		alloc_stack(e, 3 * PAGE);
		return 0;
	case TOYJIT_MOV_SAVES:          /* 8 + 88 = 96 */
		alloc_stack(e, 88);
		save_reg(e, X64_RBX, 16);
		save_reg(e, X64_R12, 24);
		return 32;
	case TOYJIT_OFFSET_FP:          /* 8 + 16 + 72 = 96 */
		push_reg(e, X64_RBP);
		push_reg(e, X64_RBX);
		alloc_stack(e, 72);
		set_frame(e, 32);
		return 0;
	default:
		break;
	}
	note(e, SW_E_INVAL);
	return 0;
}

static void x64_epilog(struct emit *e, toyjit_shape shape)
{
	note(e, sw_swu_epilog_begin(e->sb, here(e)));
	switch (shape) {
	case TOYJIT_RBP_FRAME:
		restore_sp_from_frame(e, -8);
		pop_reg(e, X64_RBX);
		pop_reg(e, X64_RBP);
		break;
	case TOYJIT_NO_FP:
		free_stack(e, 64);
		for (size_t i = sizeof(no_fp_saves); i-- > 0;)
			pop_reg(e, no_fp_saves[i]);
		break;
	case TOYJIT_BIG_FRAME:
		restore_sp_from_frame(e, 0);
		pop_reg(e, X64_RBP);
		break;
	case TOYJIT_MOV_SAVES:
		restore_reg(e, X64_RBX, 16);
		restore_reg(e, X64_R12, 24);
		free_stack(e, 88);
		break;
	case TOYJIT_OFFSET_FP:
		restore_sp_from_frame(e, 40);   /* rbp - 32 + 72: the saved rbx */
		pop_reg(e, X64_RBX);
		pop_reg(e, X64_RBP);
		break;
	default:
		break;
	}
	ret(e);
}

/* CFA - rsp in the body of each shape (what its prolog pushed and allocated, and the return address). */
static int32_t body_depth(toyjit_shape shape)
{
	switch (shape) {
	case TOYJIT_RBP_FRAME: return 8 + 16 + 56;
	case TOYJIT_NO_FP: return 8 + 40 + 64;
	case TOYJIT_BIG_FRAME: return 8 + 8 + 3 * PAGE;
	case TOYJIT_MOV_SAVES: return 8 + 88;
	case TOYJIT_OFFSET_FP: return 8 + 16 + 72;
	default: return 0;
	}
}

/* Where each shape keeps object A: an rsp-relative slot clear of the InlinedCallFrame and the saves. */
static int32_t gc_slot(toyjit_shape shape)
{
	return shape == TOYJIT_MOV_SAVES ? 8 : LOCALS_SIZE;
}

/* The callee-saved register (hardware number) that holds object B, or -1: none is free. */
static int gc_reg(toyjit_shape shape)
{
	switch (shape) {
	case TOYJIT_RBP_FRAME:
	case TOYJIT_OFFSET_FP:
		return X64_RBX;
	case TOYJIT_NO_FP:
		return X64_R13;
	case TOYJIT_MOV_SAVES:
		return X64_R12;
	default:
		return -1;      /* big_frame saves only rbp, its frame pointer */
	}
}

/* GC information: hardware register r holds a reference in [start, end). */
static void gc_live_reg(struct emit *e, unsigned r, uint32_t start, uint32_t end)
{
	note(e, sw_swu_gc_register(e->sb, x64_dwarf_reg(r), 0, start, end));
}

/* ... the slot at [CFA + cfa_offset] does. */
static void gc_live_slot(struct emit *e, int32_t cfa_offset, uint32_t start, uint32_t end)
{
	note(e, sw_swu_gc_stack_slot(e->sb, cfa_offset, 0, start, end));
}

/* Add the payload in hardware register r to jit->result (clobbers rdx). */
static void add_to_result(struct emit *e, unsigned r)
{
	x64_mov_ri64(e->b, X64_RDX, (uintptr_t)&e->jit->result);
	x64_add_mr(e->b, X64_RDX, 0, r);
}

/*
 * The inline allocation of `count` objects (1 or 2): rcx = the first, rdx
 * = the second; headers and reference fields zeroed; rax clobbered.  The
 * new objects sit in scratch registers no GC information describes, so no
 * collection may stop the method inside: the caller records the range.
 */
static void emit_alloc(struct emit *e, int count)
{
	x64_buf *b = e->b;

	x64_mov_ri64(b, X64_RAX, (uintptr_t)&e->jit->heap_alloc);
	x64_mov_rm(b, X64_RCX, X64_RAX, 0);
	x64_lea(b, X64_RDX, X64_RCX, count * TOYJIT_OBJ_SIZE);
	x64_mov_mr(b, X64_RAX, 0, X64_RDX);                 /* heap_alloc += count objects */
	x64_mov_m64_i32(b, X64_RCX, TOYJIT_OBJ_HEADER * 8, 0);
	x64_mov_m64_i32(b, X64_RCX, TOYJIT_OBJ_REF * 8, 0);
	if (count > 1) {
		x64_lea(b, X64_RDX, X64_RCX, TOYJIT_OBJ_SIZE);
		x64_mov_m64_i32(b, X64_RDX, TOYJIT_OBJ_HEADER * 8, 0);
		x64_mov_m64_i32(b, X64_RDX, TOYJIT_OBJ_REF * 8, 0);
	}
}

/* Callee-saved registers (hardware numbers) a shape saves, other than its frame pointer. */
static size_t shape_clobbers(toyjit_shape shape, unsigned char out[5])
{
	switch (shape) {
	case TOYJIT_RBP_FRAME:
	case TOYJIT_OFFSET_FP:
		out[0] = X64_RBX;
		return 1;
	case TOYJIT_NO_FP:
		memcpy(out, no_fp_saves, sizeof(no_fp_saves));
		return sizeof(no_fp_saves);
	case TOYJIT_MOV_SAVES:
		out[0] = X64_RBX;
		out[1] = X64_R12;
		return 2;
	default:
		return 0;
	}
}

static uint64_t x64_saved_mask(toyjit_shape shape)
{
	unsigned char regs[5];
	size_t n = shape_clobbers(shape, regs);
	uint64_t mask = 0;

	for (size_t i = 0; i < n; i++)
		mask |= 1ull << x64_dwarf_reg(regs[i]);
	if (shape != TOYJIT_NO_FP && shape != TOYJIT_MOV_SAVES)
		mask |= 1ull << SW_X64_RBP;
	return mask;
}

/* The callee-saved registers a shadow entry records (DWARF numbers), in its order. */
static const unsigned char x64_shadow_regs[] = {
	SW_X64_RBX, SW_X64_RBP, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15
};
/* The same, as hardware numbers. */
static const unsigned char x64_shadow_hw[] = { X64_RBX, X64_RBP, X64_R12, X64_R13, X64_R14, X64_R15 };

#define SHADOW_REG(i) ((int32_t)(offsetof(toyjit_shadow_entry, regs) + (i) * sizeof(uintptr_t)))

/* Record this method and its registers on the shadow stack: *top++ = { ... }. */
static void emit_shadow_push(struct emit *e, const void *handle)
{
	x64_buf *b = e->b;

	x64_mov_ri64(b, X64_RAX, (uintptr_t)&e->jit->shadow_top);
	x64_mov_rm(b, X64_RCX, X64_RAX, 0);
	x64_mov_ri64(b, X64_RDX, (uintptr_t)handle);
	x64_mov_mr(b, X64_RCX, (int32_t)offsetof(toyjit_shadow_entry, method), X64_RDX);
	x64_mov_mr(b, X64_RCX, (int32_t)offsetof(toyjit_shadow_entry, sp), X64_RSP);
	for (size_t i = 0; i < sizeof(x64_shadow_hw); i++)
		x64_mov_mr(b, X64_RCX, SHADOW_REG(i), x64_shadow_hw[i]);
	x64_add_ri(b, X64_RCX, (int32_t)sizeof(toyjit_shadow_entry));
	x64_mov_mr(b, X64_RAX, 0, X64_RCX);
	tj_shadow_pushed(e);
}

static void emit_shadow_pop(struct emit *e)
{
	x64_mov_ri64(e->b, X64_RAX, (uintptr_t)&e->jit->shadow_top);
	x64_sub_m64_i8(e->b, X64_RAX, 0, (int8_t)sizeof(toyjit_shadow_entry));
	tj_shadow_popped(e);
}

/*
 * The P/Invoke: an InlinedCallFrame at [rsp + L] in this method's locals,
 * linked for the duration of the call to toyjit_pinvoke_target(n - 1,
 * entries[next], jit).  Its return address is written last, so an observer
 * sees the Frame either inactive or complete.
 */
static void emit_pinvoke(struct emit *e, int32_t L, unsigned next)
{
	x64_buf *b = e->b;
	toyjit *jit = e->jit;
	size_t ra_field;

	x64_mov_ri64(b, X64_RAX, (uintptr_t)jit->head);
	x64_mov_rm(b, X64_RCX, X64_RAX, 0);
	x64_mov_mr(b, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, base.next), X64_RCX);
	x64_mov_m32_i32(b, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, base.type), SW_FRAME_INLINED_CALL);
	x64_mov_m32_i32(b, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, base.attributes), 0);
	x64_mov_ri64(b, X64_RCX, (uintptr_t)&jit->native_target);
	x64_mov_mr(b, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, datum), X64_RCX);
	x64_mov_mr(b, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, call_site_sp), X64_RSP);
	x64_mov_mr(b, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, callee_saved_fp), X64_RBP);
	x64_mov_m64_i32(b, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, return_address), 0);
	x64_lea(b, X64_RCX, X64_RSP, L);
	x64_mov_mr(b, X64_RAX, 0, X64_RCX);                 /* head = &icf */

	/* Arguments: edi = n - 1 (already in edi: n), rsi = entry, rdx = jit. */
	x64_sub_r32_i8(b, X64_RDI, 1);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->entries[next]);
	x64_mov_rm(b, X64_RSI, X64_RAX, 0);
	x64_mov_ri64(b, X64_RDX, (uintptr_t)jit);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)toyjit_pinvoke_target);
	ra_field = x64_lea_rip(b, X64_RCX);
	x64_mov_mr(b, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, return_address), X64_RCX);
	x64_call_r(b, X64_RAX);
	tj_call_site(e, 0);
	x64_patch_rel32(b, ra_field, b->len);               /* rcx = the address after the call */

	x64_mov_m64_i32(b, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, return_address), 0);
	x64_mov_rm(b, X64_RCX, X64_RSP, L + (int32_t)offsetof(sw_inlined_call_frame, base.next));
	x64_mov_ri64(b, X64_RAX, (uintptr_t)jit->head);
	x64_mov_mr(b, X64_RAX, 0, X64_RCX);                 /* head = icf.next */
}

/*
 * The body: allocate A and B (A.ref = B), A into its stack slot and B into
 * the shape's GC register; clobber the other saved registers; shadow push;
 * then by the argument n in edi: n == 0 calls jit->last_call (the stub, or
 * the thrower) with A as its second argument, n == pinvoke_n makes the
 * P/Invoke, any other n calls the next method with n - 1; then add A's,
 * A.ref's and B's payloads to jit->result; shadow pop.  The GC information
 * covers every offset at which each reference is live, the call sites
 * included; the allocation itself is no safe point (gc_unsafe_*).
 */
static void x64_body(struct emit *e, int32_t L, unsigned next)
{
	toyjit_method *m = e->m;
	x64_buf *b = e->b;
	toyjit *jit = e->jit;
	unsigned char regs[5];
	size_t nregs = shape_clobbers(m->shape, regs);
	int g = gc_reg(m->shape);
	int32_t S = gc_slot(m->shape), slot_cfa = S - body_depth(m->shape);
	size_t to_stub, to_pinvoke, done[2];
	uint32_t slot_from, reg_from, use, ref_from, arg_from;

	m->allocates = 1;
	m->gc_reg = g >= 0 ? (int)x64_dwarf_reg((unsigned)g) : -1;
	m->gc_unsafe_start = here(e);
	emit_alloc(e, 2);
	x64_mov_r32_r32(b, X64_RAX, X64_RDI);               /* rax = n */
	x64_lea(b, X64_R8, X64_RAX, (int32_t)((m->index + 1) << 12));
	x64_mov_mr(b, X64_RCX, TOYJIT_OBJ_PAYLOAD * 8, X64_R8);
	x64_lea(b, X64_R8, X64_RAX, (int32_t)((m->index + 1) << 20));
	x64_mov_mr(b, X64_RDX, TOYJIT_OBJ_PAYLOAD * 8, X64_R8);
	x64_mov_mr(b, X64_RCX, TOYJIT_OBJ_REF * 8, X64_RDX); /* A.ref = B */
	x64_mov_mr(b, X64_RSP, S, X64_RCX);
	slot_from = here(e);
	reg_from = 0;
	if (g >= 0) {
		x64_mov_rr(b, (unsigned)g, X64_RDX);
		reg_from = here(e);
	}
	m->gc_unsafe_end = here(e);

	for (size_t i = 0; i < nregs; i++)
		if ((int)regs[i] != g)
			x64_mov_ri64(b, regs[i], toyjit_clobber_value(m->index, x64_dwarf_reg(regs[i])));
	emit_shadow_push(e, m);

	x64_test_r32(b, X64_RDI);
	to_stub = x64_jcc(b, X64_CC_E);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->pinvoke_n);
	x64_cmp_r32_m(b, X64_RDI, X64_RAX, 0);
	to_pinvoke = x64_jcc(b, X64_CC_E);

	x64_sub_r32_i8(b, X64_RDI, 1);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->entries[next]);
	x64_call_m(b, X64_RAX, 0);
	tj_call_site(e, 0);
	done[0] = x64_jmp(b);

	/* A is the stub's reference argument: live in rsi up to the call, not at its return. */
	x64_patch_rel32(b, to_stub, b->len);
	x64_mov_rm(b, X64_RSI, X64_RSP, S);
	arg_from = here(e);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->last_call);
	x64_call_m(b, X64_RAX, 0);
	tj_call_site(e, 0);
	gc_live_reg(e, X64_RSI, arg_from, here(e));
	done[1] = x64_jmp(b);

	x64_patch_rel32(b, to_pinvoke, b->len);
	emit_pinvoke(e, L, next);

	x64_patch_rel32(b, done[0], b->len);
	x64_patch_rel32(b, done[1], b->len);
	/* The objects are used after the calls: a stale reference reads the poisoned old space. */
	x64_mov_rm(b, X64_RAX, X64_RSP, S);                 /* rax = A */
	use = here(e);
	gc_live_slot(e, slot_cfa, slot_from, use);
	x64_mov_rm(b, X64_RCX, X64_RAX, TOYJIT_OBJ_REF * 8); /* rcx = A.ref (B) */
	ref_from = here(e);
	x64_mov_rm(b, X64_RAX, X64_RAX, TOYJIT_OBJ_PAYLOAD * 8);
	gc_live_reg(e, X64_RAX, use, here(e));
	x64_mov_rm(b, X64_RCX, X64_RCX, TOYJIT_OBJ_PAYLOAD * 8);
	gc_live_reg(e, X64_RCX, ref_from, here(e));
	x64_add_rr(b, X64_RAX, X64_RCX);
	if (g >= 0) {
		x64_mov_rm(b, X64_RCX, (unsigned)g, TOYJIT_OBJ_PAYLOAD * 8);
		gc_live_reg(e, (unsigned)g, reg_from, here(e));
		x64_add_rr(b, X64_RAX, X64_RCX);
	}
	add_to_result(e, X64_RAX);
	emit_shadow_pop(e);
}

/*
 * SWU for the native code (toyjit.h, toyjit_native_code): no walk reads
 * it, the code map does not hold it; gdb and perf get it as CFI.  A
 * description that fails is left out, never fatal: the walks do not
 * depend on it.
 */
struct native_swu {
	sw_swu_builder *sb;
	size_t start;                   /* the code's offset in the buffer */
	x64_buf *b;
};

static void native_begin(struct native_swu *n, x64_buf *b)
{
	n->b = b;
	n->start = b->len;
	if (sw_swu_builder_create(&n->sb, SW_ARCH_X64) != SW_OK)
		n->sb = NULL;
}

/* The offset just past the instruction emitted last. */
static uint32_t native_here(const struct native_swu *n)
{
	return (uint32_t)(n->b->len - n->start);
}

static void native_end(toyjit *jit, struct native_swu *n, const char *name)
{
	toyjit_native_code *c = &jit->native[jit->nnative];
	uint8_t blob[256];
	size_t len = 0;

	if (n->sb && jit->nnative < TOYJIT_MAX_NATIVE && !n->b->overflow &&
	    sw_swu_finish(n->sb, native_here(n), blob, sizeof(blob), &len) == SW_OK &&
	    (c->swu = malloc(len)) != NULL) {
		memcpy(c->swu, blob, len);
		c->swu_size = len;
		c->name = name;
		c->start = (uintptr_t)(n->b->code + n->start);
		c->size = native_here(n);
		jit->nnative++;
	}
	sw_swu_builder_destroy(n->sb);
}

/* A builder call's result: after a failure the code goes undescribed. */
static void native_note(struct native_swu *n, sw_status st)
{
	if (st != SW_OK && n->sb) {
		sw_swu_builder_destroy(n->sb);
		n->sb = NULL;
	}
}

/*
 * The entry thunk, native code: thunk(n, entry) saves the C caller's
 * callee-saved registers, loads jit->entry_regs into them (rbp = 0 ends the
 * frame-pointer chain), calls entry(n), restores and returns.
 */
static const unsigned char thunk_regs[] = { X64_RBP, X64_RBX, X64_R12, X64_R13, X64_R14, X64_R15 };

static void x64_thunk(toyjit *jit, x64_buf *b)
{
	struct native_swu n;

	jit->thunk_start = (uintptr_t)(b->code + b->len);
	native_begin(&n, b);
	for (size_t i = 0; i < sizeof(thunk_regs); i++) {
		x64_push(b, thunk_regs[i]);
		native_note(&n, sw_swu_push_reg(n.sb, native_here(&n), x64_dwarf_reg(thunk_regs[i])));
	}
	x64_sub_ri(b, X64_RSP, 8);                          /* 8 + 48 + 8: aligned */
	native_note(&n, sw_swu_alloc_stack(n.sb, native_here(&n), 8));
	native_note(&n, sw_swu_end_prolog(n.sb, native_here(&n)));
	x64_mov_rr(b, X64_RAX, X64_RSI);
	for (size_t i = 0; i < sizeof(thunk_regs); i++) {
		unsigned r = x64_dwarf_reg(thunk_regs[i]);

		jit->entry_regs[r] = thunk_regs[i] == X64_RBP ? 0 : 0x5eed000000000000ull | (uint64_t)r << 8 | 0x11;
		jit->entry_regs_mask |= 1ull << r;
		x64_mov_ri64(b, thunk_regs[i], jit->entry_regs[r]);
	}
	x64_call_r(b, X64_RAX);
	native_note(&n, sw_swu_epilog_begin(n.sb, native_here(&n)));
	x64_add_ri(b, X64_RSP, 8);
	native_note(&n, sw_swu_free_stack(n.sb, native_here(&n), 8));
	for (size_t i = sizeof(thunk_regs); i-- > 0;) {
		x64_pop(b, thunk_regs[i]);
		native_note(&n, sw_swu_pop_reg(n.sb, native_here(&n), x64_dwarf_reg(thunk_regs[i])));
	}
	x64_ret(b);
	native_note(&n, sw_swu_epilog_end(n.sb, native_here(&n)));
	jit->thunk_size = (uintptr_t)(b->code + b->len) - jit->thunk_start;
	native_end(jit, &n, "toyjit_entry_thunk");
}

/*
 * The stubs, native code.  A stub pushes the x64 transition block after the
 * return address (rbp, rbx, r12, r13, r14, r15, so that at B: r15 r14 r13
 * r12 rbx rbp ra) and builds a TransitionFrame below it:
 *
 *   rbp = B + 40 (the saved rbp: a normal frame-pointer frame)
 *   tf  = B - 72 = { next = *head, TRANSITION, 0, method 0, B, SW_TF_GENERIC,
 *                    protected, count }
 *   B - 16: the reference argument (rsi) as the stub keeps it; B - 8: the
 *   one-entry array of protected slots, { B - 16 }
 *
 * then links it, calls the C function in *fn_slot on an aligned stack
 * (jit, &tf, and, for the throw stub, the caller's rbp: the establisher
 * frame), unlinks it and returns to the method that called it.  The stub
 * proper protects its reference argument (protected = &array, count 1) and
 * adds its payload to jit->result after the call, through the slot the
 * collector updated; the throw stub's call carries none (0, 0).
 */
#define STUB_LOCALS 16          /* the argument slot and the protected array */

static void emit_stub_common(toyjit *jit, x64_buf *b, void *fn_slot, int protect, int pass_fp,
                             const char *name)
{
	const int32_t tf_size = (int32_t)sizeof(sw_transition_frame);
	const int32_t frame = tf_size + STUB_LOCALS;
	const int32_t arg = tf_size, array = tf_size + 8;
	struct native_swu n;

	/* Its SWU: the CFA stays on rbp from the lea to the final pop rbp,
	 * which is what makes the dynamic "and rsp, -16" harmless. */
	native_begin(&n, b);
	for (size_t i = 0; i < sizeof(thunk_regs); i++) {
		x64_push(b, thunk_regs[i]);
		native_note(&n, sw_swu_push_reg(n.sb, native_here(&n), x64_dwarf_reg(thunk_regs[i])));
	}
	x64_lea(b, X64_RBP, X64_RSP, 40);
	native_note(&n, sw_swu_set_frame(n.sb, native_here(&n), SW_X64_RBP, 40));
	x64_sub_ri(b, X64_RSP, frame);
	native_note(&n, sw_swu_alloc_stack(n.sb, native_here(&n), (uint32_t)frame));
	native_note(&n, sw_swu_end_prolog(n.sb, native_here(&n)));
	x64_mov_ri64(b, X64_RAX, (uintptr_t)jit->head);
	x64_mov_rm(b, X64_RCX, X64_RAX, 0);
	x64_mov_mr(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, base.next), X64_RCX);
	x64_mov_m32_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, base.type), SW_FRAME_TRANSITION);
	x64_mov_m32_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, base.attributes), 0);
	x64_mov_m64_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, method), 0);
	x64_lea(b, X64_RCX, X64_RSP, frame);
	x64_mov_mr(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, transition_block), X64_RCX);
	x64_mov_m64_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, subtype), SW_TF_GENERIC);
	if (protect) {
		x64_mov_mr(b, X64_RSP, arg, X64_RSI);
		x64_lea(b, X64_RCX, X64_RSP, arg);
		x64_mov_mr(b, X64_RSP, array, X64_RCX);
		x64_lea(b, X64_RCX, X64_RSP, array);
		x64_mov_mr(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, protected_refs), X64_RCX);
		x64_mov_m64_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, protected_count), 1);
	} else {
		x64_mov_m64_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, protected_refs), 0);
		x64_mov_m64_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, protected_count), 0);
	}
	x64_mov_mr(b, X64_RAX, 0, X64_RSP);                 /* head = &tf */

	x64_mov_rr(b, X64_RSI, X64_RSP);
	x64_mov_ri64(b, X64_RDI, (uintptr_t)jit);
	if (pass_fp)
		x64_mov_rm(b, X64_RDX, X64_RBP, 0);         /* the caller's rbp */
	x64_and_ri(b, X64_RSP, -16);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)fn_slot);
	x64_call_m(b, X64_RAX, 0);

	x64_lea(b, X64_RSP, X64_RBP, -40 - frame);          /* back to tf */
	if (protect) {
		x64_mov_rm(b, X64_RAX, X64_RSP, arg);       /* the argument, moved or not */
		x64_mov_rm(b, X64_RAX, X64_RAX, TOYJIT_OBJ_PAYLOAD * 8);
		x64_mov_ri64(b, X64_RCX, (uintptr_t)&jit->result);
		x64_add_mr(b, X64_RCX, 0, X64_RAX);
	}
	x64_mov_rm(b, X64_RCX, X64_RSP, (int32_t)offsetof(sw_transition_frame, base.next));
	x64_mov_ri64(b, X64_RAX, (uintptr_t)jit->head);
	x64_mov_mr(b, X64_RAX, 0, X64_RCX);                 /* head = tf.next */
	native_note(&n, sw_swu_epilog_begin(n.sb, native_here(&n)));
	x64_add_ri(b, X64_RSP, frame);
	native_note(&n, sw_swu_free_stack(n.sb, native_here(&n), (uint32_t)frame));
	for (size_t i = sizeof(thunk_regs); i-- > 0;) {
		x64_pop(b, thunk_regs[i]);
		native_note(&n, sw_swu_pop_reg(n.sb, native_here(&n), x64_dwarf_reg(thunk_regs[i])));
	}
	x64_ret(b);
	native_note(&n, sw_swu_epilog_end(n.sb, native_here(&n)));
	native_end(jit, &n, name);
}

static void x64_stub(toyjit *jit, x64_buf *b)
{
	toyjit_leave_gap(b, &toyjit_backend_x64, TOYJIT_CODE_GAP);
	jit->stub_start = (uintptr_t)(b->code + b->len);
	emit_stub_common(jit, b, &jit->helper, 1, 0, "toyjit_stub");
	jit->stub_size = (uintptr_t)(b->code + b->len) - jit->stub_start;
	jit->stub_entry = (void *)(uintptr_t)jit->stub_start;
	jit->last_call = jit->stub_entry;
}

static void x64_throw_stub(toyjit *jit, x64_buf *b)
{
	toyjit_leave_gap(b, &toyjit_backend_x64, TOYJIT_CODE_GAP);
	jit->throw_stub_start = (uintptr_t)(b->code + b->len);
	emit_stub_common(jit, b, &jit->dispatch, 0, 1, "toyjit_throw_stub");
	jit->throw_stub_size = (uintptr_t)(b->code + b->len) - jit->throw_stub_start;
	jit->throw_stub_entry = (void *)(uintptr_t)jit->throw_stub_start;
	jit->dispatch = toyjit_dispatch;
}

/*
 * The thrower, a managed method with a try/catch:
 *
 *   push rbp; mov rbp, rsp; sub rsp, 16           (CFA = rbp + 16)
 *   allocate A (payload TOYJIT_THROW_PAYLOAD); [rbp - 8] = A
 *   call [throw_stub_entry]                       the "try": it throws
 *   rax = [rbp - 8]; result += rax->payload       after the catch
 *   mov rsp, rbp; pop rbp; ret
 *
 * The catch funclet reaches A through the establisher frame (its rbp).
 */
#define THROWER_SLOT (-8)       /* rbp-relative */

static void x64_thrower(struct emit *e)
{
	toyjit_method *m = e->m;
	x64_buf *b = e->b;
	uint32_t slot_from, use;

	push_reg(e, X64_RBP);
	set_frame(e, 0);
	alloc_stack(e, 16);
	note(e, sw_swu_end_prolog(e->sb, here(e)));
	m->prolog_size = here(e);

	m->allocates = 1;
	m->gc_unsafe_start = here(e);
	emit_alloc(e, 1);
	x64_mov_ri64(b, X64_RAX, TOYJIT_THROW_PAYLOAD);
	x64_mov_mr(b, X64_RCX, TOYJIT_OBJ_PAYLOAD * 8, X64_RAX);
	x64_mov_mr(b, X64_RBP, THROWER_SLOT, X64_RCX);
	slot_from = here(e);
	m->gc_unsafe_end = here(e);

	/* The try region: the call that throws, its catch clause's (toyjit.c). */
	m->try_start = here(e);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&e->jit->throw_stub_entry);
	x64_call_m(b, X64_RAX, 0);
	tj_call_site(e, 0);
	m->try_end = here(e);

	x64_mov_rm(b, X64_RAX, X64_RBP, THROWER_SLOT);
	use = here(e);
	gc_live_slot(e, THROWER_SLOT - 16, slot_from, use);    /* CFA = rbp + 16 */
	x64_mov_rm(b, X64_RAX, X64_RAX, TOYJIT_OBJ_PAYLOAD * 8);
	gc_live_reg(e, X64_RAX, use, here(e));
	add_to_result(e, X64_RAX);

	note(e, sw_swu_epilog_begin(e->sb, here(e)));
	restore_sp_from_frame(e, 0);
	pop_reg(e, X64_RBP);
	ret(e);
}

/*
 * The thrower's catch handler, a funclet called by the dispatcher with the
 * establisher frame (the thrower's rbp) in rdi:
 *
 *   push rbp; sub rsp, 16                         (CFA = rsp + 32)
 *   mov rbp, rdi                                  the parent's frame
 *   lea rax, [rbp + 16]; [rsp] = rax              the PSP slot: the parent's CFA;
 *                                                 the prolog ends here
 *   call [stub_entry] with rsi = [rbp - 8]        the walk and the GC happen there
 *   rax = [rbp - 8]; result += rax->payload       A, where the GC left it
 *   add rsp, 16; pop rbp; ret
 *
 * A walk for the GC reports the funclet and not its parent: the funclet's
 * GC information names the parent's slot (SW_GC_PARENT_FRAME), which the
 * walker finds from the PSP slot, as CoreCLR's funclets reach their
 * parent's frame through the PSPSym.
 */
#define FUNCLET_PSP (-32)       /* CFA-relative: [rsp] in the body */

static void x64_funclet(struct emit *e)
{
	x64_buf *b = e->b;
	uint32_t psp_from, arg_from, use;

	/* The prolog ends once the PSP slot is written: from there on it holds the parent's CFA. */
	note(e, sw_swu_psp_slot(e->sb, FUNCLET_PSP));
	push_reg(e, X64_RBP);
	alloc_stack(e, 16);
	x64_mov_rr(b, X64_RBP, X64_RDI);
	x64_lea(b, X64_RAX, X64_RBP, 16);
	x64_mov_mr(b, X64_RSP, 0, X64_RAX);
	psp_from = here(e);
	note(e, sw_swu_end_prolog(e->sb, psp_from));
	e->m->prolog_size = psp_from;
	x64_mov_rm(b, X64_RSI, X64_RBP, THROWER_SLOT);
	arg_from = here(e);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&e->jit->stub_entry);
	x64_call_m(b, X64_RAX, 0);
	tj_call_site(e, 0);
	gc_live_reg(e, X64_RSI, arg_from, here(e));

	x64_mov_rm(b, X64_RAX, X64_RBP, THROWER_SLOT);
	use = here(e);
	/* The parent's slot, CFA-relative in its frame (its CFA = rbp + 16). */
	note(e, sw_swu_gc_stack_slot(e->sb, THROWER_SLOT - 16, SW_GC_PARENT_FRAME, psp_from, use));
	x64_mov_rm(b, X64_RCX, X64_RAX, TOYJIT_OBJ_PAYLOAD * 8);
	add_to_result(e, X64_RCX);
	gc_live_reg(e, X64_RAX, use, here(e));

	note(e, sw_swu_epilog_begin(e->sb, here(e)));
	free_stack(e, 16);
	pop_reg(e, X64_RBP);
	ret(e);
}

static const char *const x64_shape_names[TOYJIT_NSHAPES] = {
	"rbp_frame", "no_fp", "big_frame", "mov_saves", "offset_fp"
};

#define BIT(r) (1ull << (r))

const struct toyjit_backend toyjit_backend_x64 = {
	.host = {
		.arch = SW_ARCH_X64,
		.trap = { 0xcc },
		.trap_len = 1,
		.ip_reg = SW_X64_RIP,
		.sp_reg = SW_X64_RSP,
		.fp_reg = SW_X64_RBP,
		.callee_saved = BIT(SW_X64_RBX) | BIT(SW_X64_RBP) | BIT(SW_X64_R12) |
		                BIT(SW_X64_R13) | BIT(SW_X64_R14) | BIT(SW_X64_R15),
	},
	.shape_names = x64_shape_names,
	.shadow_regs = x64_shadow_regs,
	.nshadow_regs = sizeof(x64_shadow_regs),
	.method_align = 16,
	.saved_mask = x64_saved_mask,
	.emit_thunk = x64_thunk,
	.emit_stub = x64_stub,
	.emit_leaf = NULL,
	.emit_throw_stub = x64_throw_stub,
	.emit_thrower = x64_thrower,
	.emit_funclet = x64_funclet,
	.emit_prolog = x64_prolog,
	.emit_body = x64_body,
	.emit_epilog = x64_epilog,
	.align = x64_align,
};
