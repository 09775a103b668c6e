/*
 * toyjit_x86.c - the toy JIT's 32-bit x86 back end: five prolog shapes,
 * the body, the entry thunk and the TransitionFrame stub in i386 code.
 *
 * Managed methods are stdcall: n is on the stack above the return address
 * and `ret 4` pops it.  A body calls the next method as
 *
 *   sub esp,12; push n-1; call [next]; add esp,12
 *
 * so SP moves in the body: each push and pop is described with
 * sw_swu_push_args / sw_swu_pop_args, and the call, whose callee pops its
 * argument, with sw_swu_call_pops_args.  The P/Invoke pushes its three
 * cdecl arguments (and 4 bytes of padding) the same way.
 *
 * Stack alignment: the i386 System V rule as gcc keeps it (esp 16-byte
 * aligned at every call instruction, arguments pushed), so on entry
 * esp = 12 (mod 16), and each frame below allocates 12 (mod 16) bytes.
 */
#include <string.h>
#include "toyjit_backend.h"
#include "x86_emit.h"

#define PAGE            4096
#define SLOT            4

#define emit tj_emit
#define here tj_here
#define note tj_note

/* Per shape: bytes pushed and allocated below the return address. */
static const int32_t x86_frame[TOYJIT_NSHAPES] = {
	[TOYJIT_X86_EBP_FRAME] = 4 + 4 + 36,
	[TOYJIT_X86_ESP_FRAME] = 12 + 32,
	[TOYJIT_X86_BIG_FRAME] = 4 + 3 * PAGE + 8,
	[TOYJIT_X86_MOV_SAVES] = 44,
	[TOYJIT_X86_OFFSET_FP] = 8 + 52,
};

/* Emit-and-describe helpers: one instruction, then its builder call. */
static void push_reg(struct emit *e, unsigned r)
{
	x86_push(e->b, r);
	note(e, sw_swu_push_reg(e->sb, here(e), r));
}

static void pop_reg(struct emit *e, unsigned r)
{
	x86_pop(e->b, r);
	note(e, sw_swu_pop_reg(e->sb, here(e), r));
}

static void alloc_stack(struct emit *e, int32_t size)
{
	x86_sub_ri(e->b, X86_ESP, size);
	note(e, sw_swu_alloc_stack(e->sb, here(e), (uint32_t)size));
}

static void free_stack(struct emit *e, int32_t size)
{
	x86_add_ri(e->b, X86_ESP, size);
	note(e, sw_swu_free_stack(e->sb, here(e), (uint32_t)size));
}

static void set_frame(struct emit *e, int32_t sp_offset)
{
	if (sp_offset == 0)
		x86_mov_rr(e->b, X86_EBP, X86_ESP);
	else
		x86_lea(e->b, X86_EBP, X86_ESP, sp_offset);
	note(e, sw_swu_set_frame(e->sb, here(e), SW_X86_EBP, (uint32_t)sp_offset));
}

static void restore_sp_from_frame(struct emit *e, int32_t frame_offset)
{
	if (frame_offset == 0)
		x86_mov_rr(e->b, X86_ESP, X86_EBP);
	else
		x86_lea(e->b, X86_ESP, X86_EBP, frame_offset);
	note(e, sw_swu_restore_sp_from_frame(e->sb, here(e), frame_offset));
}

static void save_reg(struct emit *e, unsigned r, int32_t sp_offset)
{
	x86_mov_mr(e->b, X86_ESP, sp_offset, r);
	note(e, sw_swu_save_reg(e->sb, here(e), r, (uint32_t)sp_offset));
}

static void restore_reg(struct emit *e, unsigned r, int32_t sp_offset)
{
	x86_mov_rm(e->b, r, X86_ESP, sp_offset);
	note(e, sw_swu_restore_reg(e->sb, here(e), r));
}

/* Body: outgoing arguments. */
static void push_arg_reg(struct emit *e, unsigned r)
{
	x86_push(e->b, r);
	note(e, sw_swu_push_args(e->sb, here(e), SLOT));
}

static void push_arg_imm(struct emit *e, uint32_t imm)
{
	x86_push_i32(e->b, imm);
	note(e, sw_swu_push_args(e->sb, here(e), SLOT));
}

static void reserve_args(struct emit *e, int32_t size)
{
	x86_sub_ri(e->b, X86_ESP, size);
	note(e, sw_swu_push_args(e->sb, here(e), (uint32_t)size));
}

static void drop_args(struct emit *e, int32_t size)
{
	x86_add_ri(e->b, X86_ESP, size);
	note(e, sw_swu_pop_args(e->sb, here(e), (uint32_t)size));
}

/* The registers each shape saves and then clobbers in its body. */
static const unsigned char esp_frame_saves[] = { X86_EBX, X86_ESI, X86_EDI };

/* Prolog of each shape.  Returns the esp-relative offset of the method's locals. */
static int32_t x86_prolog(struct emit *e, toyjit_shape shape)
{
	switch (shape) {
	case TOYJIT_X86_EBP_FRAME:
		push_reg(e, X86_EBP);
		set_frame(e, 0);
		push_reg(e, X86_EBX);
		alloc_stack(e, 36);
		return 0;
	case TOYJIT_X86_ESP_FRAME:
		for (size_t i = 0; i < sizeof(esp_frame_saves); i++)
			push_reg(e, esp_frame_saves[i]);
		alloc_stack(e, 32);
		return 0;
	case TOYJIT_X86_BIG_FRAME:
		push_reg(e, X86_EBP);
		set_frame(e, 0);
		/* Touch each page of the new frame before esp moves over it; nothing moves. */
		for (int32_t k = 1; k <= 3; k++)
			x86_test_mr(e->b, X86_ESP, -k * PAGE, X86_EAX);
		alloc_stack(e, 3 * PAGE + 8);
		return 0;
	case TOYJIT_X86_MOV_SAVES:
		alloc_stack(e, 44);
		save_reg(e, X86_EBX, 32);
		save_reg(e, X86_ESI, 36);
		return 0;
	case TOYJIT_X86_OFFSET_FP:
		push_reg(e, X86_EBP);
		push_reg(e, X86_EBX);
		alloc_stack(e, 52);
		set_frame(e, 32);
		return 0;
	default:
		break;
	}
	note(e, SW_E_INVAL);
	return 0;
}

static void x86_epilog(struct emit *e, toyjit_shape shape)
{
	note(e, sw_swu_epilog_begin(e->sb, here(e)));
	switch (shape) {
	case TOYJIT_X86_EBP_FRAME:
		restore_sp_from_frame(e, -4);
		pop_reg(e, X86_EBX);
		pop_reg(e, X86_EBP);
		break;
	case TOYJIT_X86_ESP_FRAME:
		free_stack(e, 32);
		for (size_t i = sizeof(esp_frame_saves); i-- > 0;)
			pop_reg(e, esp_frame_saves[i]);
		break;
	case TOYJIT_X86_BIG_FRAME:
		restore_sp_from_frame(e, 0);
		pop_reg(e, X86_EBP);
		break;
	case TOYJIT_X86_MOV_SAVES:
		restore_reg(e, X86_EBX, 32);
		restore_reg(e, X86_ESI, 36);
		free_stack(e, 44);
		break;
	case TOYJIT_X86_OFFSET_FP:
		restore_sp_from_frame(e, 20);   /* ebp - 32 + 52: the saved ebx */
		pop_reg(e, X86_EBX);
		pop_reg(e, X86_EBP);
		break;
	default:
		break;
	}
	x86_ret_n(e->b, SLOT);                  /* stdcall: pop n */
	note(e, sw_swu_epilog_end(e->sb, here(e)));
}

/* Callee-saved registers a shape saves, other than its frame pointer. */
static size_t shape_clobbers(toyjit_shape shape, unsigned char out[3])
{
	switch (shape) {
	case TOYJIT_X86_EBP_FRAME:
	case TOYJIT_X86_OFFSET_FP:
		out[0] = X86_EBX;
		return 1;
	case TOYJIT_X86_ESP_FRAME:
		memcpy(out, esp_frame_saves, sizeof(esp_frame_saves));
		return sizeof(esp_frame_saves);
	case TOYJIT_X86_MOV_SAVES:
		out[0] = X86_EBX;
		out[1] = X86_ESI;
		return 2;
	default:
		return 0;
	}
}

static uint64_t x86_saved_mask(toyjit_shape shape)
{
	unsigned char regs[3];
	size_t n = shape_clobbers(shape, regs);
	uint64_t mask = 0;

	for (size_t i = 0; i < n; i++)
		mask |= 1ull << regs[i];
	if (shape == TOYJIT_X86_EBP_FRAME || shape == TOYJIT_X86_BIG_FRAME ||
	    shape == TOYJIT_X86_OFFSET_FP)
		mask |= 1ull << SW_X86_EBP;
	return mask;
}

/* The callee-saved registers a shadow entry records, in its order. */
static const unsigned char x86_shadow_regs[] = { SW_X86_EBX, SW_X86_EBP, SW_X86_ESI, SW_X86_EDI };

#define SHADOW_REG(i) ((int32_t)(offsetof(toyjit_shadow_entry, regs) + (i) * sizeof(uintptr_t)))
#define ADDR(p) ((uint32_t)(uintptr_t)(p))

/* Record this method and its registers on the shadow stack: *top++ = { ... }. */
static void emit_shadow_push(struct emit *e, const void *handle)
{
	code_buf *b = e->b;

	x86_mov_ri(b, X86_EAX, ADDR(&e->jit->shadow_top));
	x86_mov_rm(b, X86_EDX, X86_EAX, 0);
	x86_mov_m_i32(b, X86_EDX, (int32_t)offsetof(toyjit_shadow_entry, method), ADDR(handle));
	x86_mov_mr(b, X86_EDX, (int32_t)offsetof(toyjit_shadow_entry, sp), X86_ESP);
	for (size_t i = 0; i < sizeof(x86_shadow_regs); i++)
		x86_mov_mr(b, X86_EDX, SHADOW_REG(i), x86_shadow_regs[i]);
	x86_add_ri(b, X86_EDX, (int32_t)sizeof(toyjit_shadow_entry));
	x86_mov_mr(b, X86_EAX, 0, X86_EDX);
	tj_shadow_pushed(e);
}

static void emit_shadow_pop(struct emit *e)
{
	x86_mov_ri(e->b, X86_EAX, ADDR(&e->jit->shadow_top));
	x86_sub_m_i8(e->b, X86_EAX, 0, (int8_t)sizeof(toyjit_shadow_entry));
	tj_shadow_popped(e);
}

#define ICF(field) (L + (int32_t)offsetof(sw_inlined_call_frame, field))

/*
 * The P/Invoke: an InlinedCallFrame at [esp + L] in this method's locals,
 * linked for the duration of the call to toyjit_pinvoke_target(n - 1,
 * entries[next], jit), whose 16 bytes of arguments (padding included) are
 * still pushed at the call site it records.  Its return address is written
 * last, so an observer sees the Frame either inactive or complete.
 */
static void emit_pinvoke(struct emit *e, int32_t L, unsigned next)
{
	code_buf *b = e->b;
	toyjit *jit = e->jit;
	const int32_t args = 16;
	size_t ra_field;

	x86_mov_ri(b, X86_EAX, ADDR(jit->head));
	x86_mov_rm(b, X86_EDX, X86_EAX, 0);
	x86_mov_mr(b, X86_ESP, ICF(base.next), X86_EDX);
	x86_mov_m_i32(b, X86_ESP, ICF(base.type), SW_FRAME_INLINED_CALL);
	x86_mov_m_i32(b, X86_ESP, ICF(base.attributes), 0);
	x86_mov_m_i32(b, X86_ESP, ICF(datum), ADDR(&jit->native_target));
	x86_lea(b, X86_EDX, X86_ESP, -args);
	x86_mov_mr(b, X86_ESP, ICF(call_site_sp), X86_EDX);
	x86_mov_mr(b, X86_ESP, ICF(callee_saved_fp), X86_EBP);
	x86_mov_m_i32(b, X86_ESP, ICF(return_address), 0);
	x86_lea(b, X86_EDX, X86_ESP, L);
	x86_mov_mr(b, X86_EAX, 0, X86_EDX);                 /* head = &icf */

	/* cdecl: padding, jit, entry, n - 1 (n is in ecx). */
	reserve_args(e, SLOT);
	push_arg_imm(e, ADDR(jit));
	x86_mov_ri(b, X86_EAX, ADDR(&jit->entries[next]));
	x86_mov_rm(b, X86_EAX, X86_EAX, 0);
	push_arg_reg(e, X86_EAX);
	x86_sub_ri(b, X86_ECX, 1);
	push_arg_reg(e, X86_ECX);
	ra_field = x86_mov_ri(b, X86_ECX, 0);
	x86_mov_mr(b, X86_ESP, ICF(return_address) + args, X86_ECX);
	x86_mov_ri(b, X86_EAX, ADDR(toyjit_pinvoke_target));
	x86_call_r(b, X86_EAX);
	tj_call_site(e, (uint32_t)args);
	code_patch32(b, ra_field, ADDR(b->code + b->len));  /* ecx = the address after the call */
	drop_args(e, args);

	x86_mov_m_i32(b, X86_ESP, ICF(return_address), 0);
	x86_mov_rm(b, X86_EDX, X86_ESP, ICF(base.next));
	x86_mov_ri(b, X86_EAX, ADDR(jit->head));
	x86_mov_mr(b, X86_EAX, 0, X86_EDX);                 /* head = icf.next */
}

/*
 * The body: n into ecx; clobber the saved registers; shadow push; then by
 * n: n == 0 calls the stub, n == pinvoke_n makes the P/Invoke, any other n
 * calls the next method with n - 1; shadow pop.
 */
static void x86_body(struct emit *e, int32_t L, unsigned next)
{
	const toyjit_method *m = e->m;
	code_buf *b = e->b;
	toyjit *jit = e->jit;
	unsigned char regs[3];
	size_t nregs = shape_clobbers(m->shape, regs);
	size_t to_stub, to_pinvoke, done[2];

	x86_mov_rm(b, X86_ECX, X86_ESP, x86_frame[m->shape] + SLOT);
	for (size_t i = 0; i < nregs; i++)
		x86_mov_ri(b, regs[i], (uint32_t)toyjit_clobber_value(m->index, regs[i]));
	emit_shadow_push(e, m);

	x86_test_rr(b, X86_ECX);
	to_stub = x86_jcc(b, X86_CC_E);
	x86_mov_ri(b, X86_EAX, ADDR(&jit->pinvoke_n));
	x86_cmp_rm(b, X86_ECX, X86_EAX, 0);
	to_pinvoke = x86_jcc(b, X86_CC_E);

	/* stdcall next(n - 1): 12 bytes of padding, the argument, which the callee pops. */
	reserve_args(e, 12);
	x86_sub_ri(b, X86_ECX, 1);
	push_arg_reg(e, X86_ECX);
	x86_mov_ri(b, X86_EAX, ADDR(&jit->entries[next]));
	x86_call_m(b, X86_EAX, 0);
	note(e, sw_swu_call_pops_args(e->sb, here(e), SLOT));
	tj_call_site(e, 12 + SLOT);
	drop_args(e, 12);
	done[0] = x86_jmp(b);

	x86_patch_rel32(b, to_stub, b->len);
	x86_mov_ri(b, X86_EAX, ADDR(&jit->stub_entry));
	x86_call_m(b, X86_EAX, 0);
	tj_call_site(e, 0);
	done[1] = x86_jmp(b);

	x86_patch_rel32(b, to_pinvoke, b->len);
	emit_pinvoke(e, L, next);

	x86_patch_rel32(b, done[0], b->len);
	x86_patch_rel32(b, done[1], b->len);
	emit_shadow_pop(e);
}

/* The registers the thunk and the stub save: the transition block's, pushed in this order. */
static const unsigned char block_regs[] = { X86_EBP, X86_EBX, X86_ESI, X86_EDI };

/*
 * The entry thunk, native code: thunk(n, entry) (cdecl) saves the C
 * caller's callee-saved registers, loads jit->entry_regs into them (ebp = 0
 * ends the frame-pointer chain), calls entry(n) (stdcall), restores and
 * returns.
 */
static void x86_thunk(toyjit *jit, code_buf *b)
{
	jit->thunk_start = (uintptr_t)(b->code + b->len);
	for (size_t i = 0; i < sizeof(block_regs); i++)
		x86_push(b, block_regs[i]);
	x86_mov_rm(b, X86_EAX, X86_ESP, 20);                /* n */
	x86_mov_rm(b, X86_EDX, X86_ESP, 24);                /* entry */
	for (size_t i = 0; i < sizeof(block_regs); i++) {
		unsigned r = block_regs[i];

		jit->entry_regs[r] = r == X86_EBP ? 0 : 0x5eed0011u | r << 8;
		jit->entry_regs_mask |= 1ull << r;
		x86_mov_ri(b, r, (uint32_t)jit->entry_regs[r]);
	}
	x86_sub_ri(b, X86_ESP, 8);                          /* 12 + 16 + 8 + 4: aligned */
	x86_push(b, X86_EAX);
	x86_call_r(b, X86_EDX);                             /* pops n */
	x86_add_ri(b, X86_ESP, 8);
	for (size_t i = sizeof(block_regs); i-- > 0;)
		x86_pop(b, block_regs[i]);
	x86_ret(b);
	jit->thunk_size = (uintptr_t)(b->code + b->len) - jit->thunk_start;
}

/*
 * The stub, native code.  It pushes the x86 transition block after the
 * return address (ebp, ebx, esi, edi, so that at B: edi esi ebx ebp ra,
 * the caller's SP at B + 20) and builds a TransitionFrame below it:
 *
 *   ebp = B + 12 (the saved ebp: a normal frame-pointer frame)
 *   tf  = B - 28 = { next = *head, TRANSITION, 0, method 0, B, SW_TF_GENERIC,
 *                    protected 0, count 0 }
 *
 * then links it, calls helper(jit, &tf) on an aligned stack, unlinks it
 * and returns to the method that called it.
 */
static void x86_stub(toyjit *jit, code_buf *b)
{
	const int32_t tf_size = (int32_t)sizeof(sw_transition_frame);

	x86_align(b, 16);
	jit->stub_start = (uintptr_t)(b->code + b->len);
	for (size_t i = 0; i < sizeof(block_regs); i++)
		x86_push(b, block_regs[i]);
	x86_lea(b, X86_EBP, X86_ESP, 12);
	x86_sub_ri(b, X86_ESP, tf_size);
	x86_mov_ri(b, X86_EAX, ADDR(jit->head));
	x86_mov_rm(b, X86_ECX, X86_EAX, 0);
	x86_mov_mr(b, X86_ESP, (int32_t)offsetof(sw_transition_frame, base.next), X86_ECX);
	x86_mov_m_i32(b, X86_ESP, (int32_t)offsetof(sw_transition_frame, base.type), SW_FRAME_TRANSITION);
	x86_mov_m_i32(b, X86_ESP, (int32_t)offsetof(sw_transition_frame, base.attributes), 0);
	x86_mov_m_i32(b, X86_ESP, (int32_t)offsetof(sw_transition_frame, method), 0);
	x86_mov_m_i32(b, X86_ESP, (int32_t)offsetof(sw_transition_frame, subtype), SW_TF_GENERIC);
	/* Its call carries no reference argument: nothing to protect. */
	x86_mov_m_i32(b, X86_ESP, (int32_t)offsetof(sw_transition_frame, protected_refs), 0);
	x86_mov_m_i32(b, X86_ESP, (int32_t)offsetof(sw_transition_frame, protected_count), 0);
	x86_lea(b, X86_ECX, X86_ESP, tf_size);
	x86_mov_mr(b, X86_ESP, (int32_t)offsetof(sw_transition_frame, transition_block), X86_ECX);
	x86_mov_mr(b, X86_EAX, 0, X86_ESP);                 /* head = &tf */

	x86_mov_rr(b, X86_EDX, X86_ESP);
	x86_and_ri(b, X86_ESP, -16);
	x86_sub_ri(b, X86_ESP, 8);
	x86_push(b, X86_EDX);
	x86_push_i32(b, ADDR(jit));
	x86_mov_ri(b, X86_EAX, ADDR(&jit->helper));
	x86_call_m(b, X86_EAX, 0);

	x86_lea(b, X86_ESP, X86_EBP, -12 - tf_size);       /* back to tf */
	x86_mov_rm(b, X86_ECX, X86_ESP, (int32_t)offsetof(sw_transition_frame, base.next));
	x86_mov_ri(b, X86_EAX, ADDR(jit->head));
	x86_mov_mr(b, X86_EAX, 0, X86_ECX);                 /* head = tf.next */
	x86_add_ri(b, X86_ESP, tf_size);
	for (size_t i = sizeof(block_regs); i-- > 0;)
		x86_pop(b, block_regs[i]);
	x86_ret(b);
	jit->stub_size = (uintptr_t)(b->code + b->len) - jit->stub_start;
	jit->stub_entry = (void *)(uintptr_t)jit->stub_start;
}

static const char *const x86_shape_names[TOYJIT_NSHAPES] = {
	"ebp_frame", "esp_frame", "big_frame", "mov_saves", "offset_fp"
};

#define BIT(r) (1ull << (r))

const struct toyjit_backend toyjit_backend_x86 = {
	.host = {
		.arch = SW_ARCH_X86,
		.trap = { 0xcc },
		.trap_len = 1,
		.ip_reg = SW_X86_EIP,
		.sp_reg = SW_X86_ESP,
		.fp_reg = SW_X86_EBP,
		.callee_saved = BIT(SW_X86_EBX) | BIT(SW_X86_EBP) | BIT(SW_X86_ESI) | BIT(SW_X86_EDI),
	},
	.shape_names = x86_shape_names,
	.shadow_regs = x86_shadow_regs,
	.nshadow_regs = sizeof(x86_shadow_regs),
	.method_align = 16,
	.saved_mask = x86_saved_mask,
	.emit_thunk = x86_thunk,
	.emit_stub = x86_stub,
	.emit_leaf = NULL,
	.emit_prolog = x86_prolog,
	.emit_body = x86_body,
	.emit_epilog = x86_epilog,
	.align = x86_align,
};
