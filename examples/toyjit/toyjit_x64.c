/*
 * toyjit_x64.c - the toy JIT's x86-64 back end: five prolog shapes, the
 * body, the entry thunk and the TransitionFrame stub in x86-64 machine code.
 *
 * Stack alignment: every method keeps the System V rule (rsp is 16-byte
 * aligned at each call it makes), so the C functions it calls get an aligned
 * stack.  That is why the frame sizes below are what they are.
 */
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
	case TOYJIT_NO_FP:              /* 8 + 40 + 48 = 96 */
		for (size_t i = 0; i < sizeof(no_fp_saves); i++)
			push_reg(e, no_fp_saves[i]);
		alloc_stack(e, 48);
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
		free_stack(e, 48);
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
 * The body: clobber the saved registers; shadow push; then by the argument
 * n in edi: n == 0 calls the stub, n == pinvoke_n makes the P/Invoke, any
 * other n calls the next method with n - 1; shadow pop.
 */
static void x64_body(struct emit *e, int32_t L, unsigned next)
{
	const toyjit_method *m = e->m;
	x64_buf *b = e->b;
	toyjit *jit = e->jit;
	unsigned char regs[5];
	size_t nregs = shape_clobbers(m->shape, regs);
	size_t to_stub, to_pinvoke, done[2];

	for (size_t i = 0; i < nregs; i++)
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

	x64_patch_rel32(b, to_stub, b->len);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->stub_entry);
	x64_call_m(b, X64_RAX, 0);
	tj_call_site(e, 0);
	done[1] = x64_jmp(b);

	x64_patch_rel32(b, to_pinvoke, b->len);
	emit_pinvoke(e, L, next);

	x64_patch_rel32(b, done[0], b->len);
	x64_patch_rel32(b, done[1], b->len);
	emit_shadow_pop(e);
}

/*
 * The entry thunk, native code: thunk(n, entry) saves the C caller's
 * callee-saved registers, loads jit->entry_regs into them (rbp = 0 ends the
 * frame-pointer chain), calls entry(n), restores and returns.
 */
static const unsigned char thunk_regs[] = { X64_RBP, X64_RBX, X64_R12, X64_R13, X64_R14, X64_R15 };

static void x64_thunk(toyjit *jit, x64_buf *b)
{
	jit->thunk_start = (uintptr_t)(b->code + b->len);
	for (size_t i = 0; i < sizeof(thunk_regs); i++)
		x64_push(b, thunk_regs[i]);
	x64_sub_ri(b, X64_RSP, 8);                          /* 8 + 48 + 8: aligned */
	x64_mov_rr(b, X64_RAX, X64_RSI);
	for (size_t i = 0; i < sizeof(thunk_regs); i++) {
		unsigned r = x64_dwarf_reg(thunk_regs[i]);

		jit->entry_regs[r] = thunk_regs[i] == X64_RBP ? 0 : 0x5eed000000000000ull | (uint64_t)r << 8 | 0x11;
		jit->entry_regs_mask |= 1ull << r;
		x64_mov_ri64(b, thunk_regs[i], jit->entry_regs[r]);
	}
	x64_call_r(b, X64_RAX);
	x64_add_ri(b, X64_RSP, 8);
	for (size_t i = sizeof(thunk_regs); i-- > 0;)
		x64_pop(b, thunk_regs[i]);
	x64_ret(b);
	jit->thunk_size = (uintptr_t)(b->code + b->len) - jit->thunk_start;
}

/*
 * The stub, native code.  It pushes the x64 transition block after the
 * return address (rbp, rbx, r12, r13, r14, r15, so that at B: r15 r14 r13
 * r12 rbx rbp ra) and builds a TransitionFrame below it:
 *
 *   rbp = B + 40 (the saved rbp: a normal frame-pointer frame)
 *   tf  = B - 32 = { next = *head, TRANSITION, 0, method 0, B }
 *
 * then links it, calls helper(jit, &tf) on an aligned stack, unlinks it
 * and returns to the method that called it.
 */
static void x64_stub(toyjit *jit, x64_buf *b)
{
	const int32_t tf_size = (int32_t)sizeof(sw_transition_frame);

	x64_align(b, 16);
	jit->stub_start = (uintptr_t)(b->code + b->len);
	for (size_t i = 0; i < sizeof(thunk_regs); i++)
		x64_push(b, thunk_regs[i]);
	x64_lea(b, X64_RBP, X64_RSP, 40);
	x64_sub_ri(b, X64_RSP, tf_size);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)jit->head);
	x64_mov_rm(b, X64_RCX, X64_RAX, 0);
	x64_mov_mr(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, base.next), X64_RCX);
	x64_mov_m32_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, base.type), SW_FRAME_TRANSITION);
	x64_mov_m32_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, base.attributes), 0);
	x64_mov_m64_i32(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, method), 0);
	x64_lea(b, X64_RCX, X64_RSP, tf_size);
	x64_mov_mr(b, X64_RSP, (int32_t)offsetof(sw_transition_frame, transition_block), X64_RCX);
	x64_mov_mr(b, X64_RAX, 0, X64_RSP);                 /* head = &tf */

	x64_mov_rr(b, X64_RSI, X64_RSP);
	x64_mov_ri64(b, X64_RDI, (uintptr_t)jit);
	x64_and_ri(b, X64_RSP, -16);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->helper);
	x64_call_m(b, X64_RAX, 0);

	x64_lea(b, X64_RSP, X64_RBP, -40 - tf_size);       /* back to tf */
	x64_mov_rm(b, X64_RCX, X64_RSP, (int32_t)offsetof(sw_transition_frame, base.next));
	x64_mov_ri64(b, X64_RAX, (uintptr_t)jit->head);
	x64_mov_mr(b, X64_RAX, 0, X64_RCX);                 /* head = tf.next */
	x64_add_ri(b, X64_RSP, tf_size);
	for (size_t i = sizeof(thunk_regs); i-- > 0;)
		x64_pop(b, thunk_regs[i]);
	x64_ret(b);
	jit->stub_size = (uintptr_t)(b->code + b->len) - jit->stub_start;
	jit->stub_entry = (void *)(uintptr_t)jit->stub_start;
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
	.emit_prolog = x64_prolog,
	.emit_body = x64_body,
	.emit_epilog = x64_epilog,
	.align = x64_align,
};
