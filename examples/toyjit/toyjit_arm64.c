/*
 * toyjit_arm64.c - the toy JIT's AArch64 back end: five prolog shapes, a
 * leaf method, the body, the entry thunk and the TransitionFrame stub.
 *
 * Managed methods take n in w0.  The shapes save fp and lr as a pair with
 * writeback or at an offset, pairs and single registers of x19-x28 and
 * d8-d11, a frame larger than a page (probed), and a return address signed
 * with paciasp.  Every method first calls the leaf, which never touches the
 * stack: its return address stays in lr.  SP stays 16-byte aligned, as
 * AArch64 requires.
 */
#include <string.h>
#include "toyjit_backend.h"
#include "arm64_emit.h"

#define PAGE            4096
#define LOCALS          48      /* an InlinedCallFrame: 16 + 4 * 8 */

#define emit tj_emit
#define here tj_here
#define note tj_note

/* The library's number of hardware register r (d registers follow the x ones). */
static unsigned reg_num(int fp, unsigned r)
{
	return fp ? SW_ARM64_D8 + (r - 8) : r;
}

/* Emit-and-describe helpers: one instruction, then its builder call. */
static void push_pair(struct emit *e, int fp, unsigned r1, unsigned r2, uint32_t size)
{
	arm64_stp(e->b, fp, r1, r2, ARM64_SP, -(int32_t)size, ARM64_PRE);
	note(e, sw_swu_push_reg_pair(e->sb, here(e), reg_num(fp, r1), reg_num(fp, r2), size));
}

static void pop_pair(struct emit *e, int fp, unsigned r1, unsigned r2, uint32_t size)
{
	arm64_ldp(e->b, fp, r1, r2, ARM64_SP, (int32_t)size, ARM64_POST);
	note(e, sw_swu_pop_reg_pair(e->sb, here(e), reg_num(fp, r1), reg_num(fp, r2), size));
}

static void save_pair(struct emit *e, int fp, unsigned r1, unsigned r2, uint32_t off)
{
	arm64_stp(e->b, fp, r1, r2, ARM64_SP, (int32_t)off, ARM64_OFFSET);
	note(e, sw_swu_save_reg_pair(e->sb, here(e), reg_num(fp, r1), reg_num(fp, r2), off));
}

static void restore_pair(struct emit *e, int fp, unsigned r1, unsigned r2, uint32_t off)
{
	arm64_ldp(e->b, fp, r1, r2, ARM64_SP, (int32_t)off, ARM64_OFFSET);
	note(e, sw_swu_restore_reg_pair(e->sb, here(e), reg_num(fp, r1), reg_num(fp, r2)));
}

static void push_sized(struct emit *e, unsigned r, uint32_t size)
{
	arm64_str(e->b, 0, r, ARM64_SP, -(int32_t)size, ARM64_PRE);
	note(e, sw_swu_push_reg_sized(e->sb, here(e), r, size));
}

static void pop_sized(struct emit *e, unsigned r, uint32_t size)
{
	arm64_ldr(e->b, 0, r, ARM64_SP, (int32_t)size, ARM64_POST);
	note(e, sw_swu_pop_reg_sized(e->sb, here(e), r, size));
}

static void save_reg(struct emit *e, unsigned r, uint32_t off)
{
	arm64_str(e->b, 0, r, ARM64_SP, (int32_t)off, ARM64_OFFSET);
	note(e, sw_swu_save_reg(e->sb, here(e), r, off));
}

static void restore_reg(struct emit *e, unsigned r, uint32_t off)
{
	arm64_ldr(e->b, 0, r, ARM64_SP, (int32_t)off, ARM64_OFFSET);
	note(e, sw_swu_restore_reg(e->sb, here(e), r));
}

static void alloc_stack(struct emit *e, uint32_t size)
{
	arm64_sub_imm(e->b, ARM64_SP, ARM64_SP, size);
	note(e, sw_swu_alloc_stack(e->sb, here(e), size));
}

static void free_stack(struct emit *e, uint32_t size)
{
	arm64_add_imm(e->b, ARM64_SP, ARM64_SP, size);
	note(e, sw_swu_free_stack(e->sb, here(e), size));
}

static void set_frame(struct emit *e, uint32_t sp_offset)
{
	arm64_add_imm(e->b, ARM64_FP, ARM64_SP, sp_offset);
	note(e, sw_swu_set_frame(e->sb, here(e), SW_ARM64_FP, sp_offset));
}

static void restore_sp_from_frame(struct emit *e)
{
	arm64_add_imm(e->b, ARM64_SP, ARM64_FP, 0);
	note(e, sw_swu_restore_sp_from_frame(e->sb, here(e), 0));
}

static void ret(struct emit *e)
{
	arm64_ret(e->b);
	note(e, sw_swu_epilog_end(e->sb, here(e)));
}

/* Prolog of each shape.  Returns the sp-relative offset of the method's locals. */
static int32_t arm64_prolog(struct emit *e, toyjit_shape shape)
{
	switch (shape) {
	case TOYJIT_ARM64_FP_PAIRS:             /* 64 + 48 */
		push_pair(e, 0, ARM64_FP, ARM64_LR, 64);
		set_frame(e, 0);
		save_pair(e, 0, 19, 20, 16);
		save_pair(e, 0, 21, 22, 32);
		save_pair(e, 1, 8, 9, 48);
		alloc_stack(e, LOCALS);
		return 0;
	case TOYJIT_ARM64_PUSH_SIZED:           /* 16 + 16 + 16 + 48 */
		push_sized(e, 28, 16);
		push_pair(e, 0, 25, 26, 16);
		push_pair(e, 0, ARM64_FP, ARM64_LR, 16);
		set_frame(e, 0);
		alloc_stack(e, LOCALS);
		return 0;
	case TOYJIT_ARM64_BIG_FRAME:            /* 32 + 0x3000 */
		push_pair(e, 0, ARM64_FP, ARM64_LR, 32);
		set_frame(e, 0);
		save_reg(e, 19, 16);
		/* Touch each page of the new frame before sp moves over it; nothing moves. */
		for (uint32_t k = 1; k <= 3; k++) {
			arm64_sub_imm(e->b, ARM64_IP0, ARM64_SP, k * PAGE);
			arm64_ldr(e->b, 0, ARM64_IP1, ARM64_IP0, 0, ARM64_OFFSET);
		}
		alloc_stack(e, 3 * PAGE);
		return 0;
	case TOYJIT_ARM64_PAC:                  /* 48 + 48 */
		arm64_paciasp(e->b);
		note(e, sw_swu_sign_return_address(e->sb, here(e)));
		push_pair(e, 0, ARM64_FP, ARM64_LR, 48);
		set_frame(e, 0);
		save_pair(e, 0, 27, 28, 16);
		save_pair(e, 1, 10, 11, 32);
		alloc_stack(e, LOCALS);
		return 0;
	case TOYJIT_ARM64_FP_TOP:               /* 96, fp and lr at the top */
		alloc_stack(e, 96);
		save_pair(e, 0, ARM64_FP, ARM64_LR, 80);
		set_frame(e, 80);
		save_pair(e, 0, 23, 24, 64);
		return 0;
	default:
		break;
	}
	note(e, SW_E_INVAL);
	return 0;
}

static void arm64_epilog(struct emit *e, toyjit_shape shape)
{
	note(e, sw_swu_epilog_begin(e->sb, here(e)));
	switch (shape) {
	case TOYJIT_ARM64_FP_PAIRS:
		free_stack(e, LOCALS);
		restore_pair(e, 1, 8, 9, 48);
		restore_pair(e, 0, 21, 22, 32);
		restore_pair(e, 0, 19, 20, 16);
		pop_pair(e, 0, ARM64_FP, ARM64_LR, 64);
		break;
	case TOYJIT_ARM64_PUSH_SIZED:
		restore_sp_from_frame(e);
		pop_pair(e, 0, ARM64_FP, ARM64_LR, 16);
		pop_pair(e, 0, 25, 26, 16);
		pop_sized(e, 28, 16);
		break;
	case TOYJIT_ARM64_BIG_FRAME:
		restore_sp_from_frame(e);
		restore_reg(e, 19, 16);
		pop_pair(e, 0, ARM64_FP, ARM64_LR, 32);
		break;
	case TOYJIT_ARM64_PAC:
		free_stack(e, LOCALS);
		restore_pair(e, 1, 10, 11, 32);
		restore_pair(e, 0, 27, 28, 16);
		pop_pair(e, 0, ARM64_FP, ARM64_LR, 48);
		arm64_autiasp(e->b);
		note(e, sw_swu_auth_return_address(e->sb, here(e)));
		break;
	case TOYJIT_ARM64_FP_TOP:
		restore_pair(e, 0, 23, 24, 64);
		restore_pair(e, 0, ARM64_FP, ARM64_LR, 80);
		free_stack(e, 96);
		break;
	default:
		break;
	}
	ret(e);
}

/* Registers a shape saves and clobbers (hardware numbers; d registers flagged). */
struct clobber {
	unsigned char reg;
	unsigned char fp;
};

static size_t shape_clobbers(toyjit_shape shape, struct clobber out[6])
{
	static const struct clobber pairs[] = { { 19, 0 }, { 20, 0 }, { 21, 0 }, { 22, 0 }, { 8, 1 }, { 9, 1 } };
	static const struct clobber sized[] = { { 28, 0 }, { 25, 0 }, { 26, 0 } };
	static const struct clobber big[] = { { 19, 0 } };
	static const struct clobber pac[] = { { 27, 0 }, { 28, 0 }, { 10, 1 }, { 11, 1 } };
	static const struct clobber top[] = { { 23, 0 }, { 24, 0 } };
	static const struct { const struct clobber *c; size_t n; } table[TOYJIT_NSHAPES] = {
		[TOYJIT_ARM64_FP_PAIRS] = { pairs, 6 },
		[TOYJIT_ARM64_PUSH_SIZED] = { sized, 3 },
		[TOYJIT_ARM64_BIG_FRAME] = { big, 1 },
		[TOYJIT_ARM64_PAC] = { pac, 4 },
		[TOYJIT_ARM64_FP_TOP] = { top, 2 },
	};

	if (shape >= TOYJIT_NSHAPES)
		return 0;
	memcpy(out, table[shape].c, table[shape].n * sizeof(*out));
	return table[shape].n;
}

static uint64_t arm64_saved_mask(toyjit_shape shape)
{
	struct clobber regs[6];
	size_t n = shape_clobbers(shape, regs);
	uint64_t mask = 1ull << SW_ARM64_FP;    /* every shape saves fp (and lr) */

	for (size_t i = 0; i < n; i++)
		mask |= 1ull << reg_num(regs[i].fp, regs[i].reg);
	return mask;
}

/* The callee-saved registers a shadow entry records, in its order. */
static const unsigned char arm64_shadow_regs[] = {
	19, 20, 21, 22, 23, 24, 25, 26, 27, 28, SW_ARM64_FP
};

#define SHADOW_REG(i) ((int32_t)(offsetof(toyjit_shadow_entry, regs) + (i) * sizeof(uintptr_t)))
#define ADDR(p) ((uint64_t)(uintptr_t)(p))

/* Record this method and its registers on the shadow stack: *top++ = { ... }. */
static void emit_shadow_push(struct emit *e, const void *handle)
{
	code_buf *b = e->b;

	arm64_mov_imm(b, 9, ADDR(&e->jit->shadow_top));
	arm64_ldr(b, 0, 10, 9, 0, ARM64_OFFSET);
	arm64_mov_imm(b, 11, ADDR(handle));
	arm64_str(b, 0, 11, 10, (int32_t)offsetof(toyjit_shadow_entry, method), ARM64_OFFSET);
	arm64_add_imm(b, 11, ARM64_SP, 0);
	arm64_str(b, 0, 11, 10, (int32_t)offsetof(toyjit_shadow_entry, sp), ARM64_OFFSET);
	for (size_t i = 0; i < sizeof(arm64_shadow_regs); i++)
		arm64_str(b, 0, arm64_shadow_regs[i], 10, SHADOW_REG(i), ARM64_OFFSET);
	arm64_add_imm(b, 10, 10, (uint32_t)sizeof(toyjit_shadow_entry));
	arm64_str(b, 0, 10, 9, 0, ARM64_OFFSET);
	tj_shadow_pushed(e);
}

static void emit_shadow_pop(struct emit *e)
{
	code_buf *b = e->b;

	arm64_mov_imm(b, 9, ADDR(&e->jit->shadow_top));
	arm64_ldr(b, 0, 10, 9, 0, ARM64_OFFSET);
	arm64_sub_imm(b, 10, 10, (uint32_t)sizeof(toyjit_shadow_entry));
	arm64_str(b, 0, 10, 9, 0, ARM64_OFFSET);
	tj_shadow_popped(e);
}

#define ICF(field) (L + (int32_t)offsetof(sw_inlined_call_frame, field))

/* Call the function whose address is stored at `slot`. */
static void call_indirect(struct emit *e, const void *slot)
{
	arm64_mov_imm(e->b, ARM64_IP0, ADDR(slot));
	arm64_ldr(e->b, 0, ARM64_IP0, ARM64_IP0, 0, ARM64_OFFSET);
	arm64_blr(e->b, ARM64_IP0);
	tj_call_site(e, 0);
}

/*
 * The P/Invoke: an InlinedCallFrame at [sp + L] in this method's locals,
 * linked for the duration of the call to toyjit_pinvoke_target(n - 1,
 * entries[next], jit).  Its return address is written last, so an observer
 * sees the Frame either inactive or complete.
 */
static void emit_pinvoke(struct emit *e, int32_t L, unsigned next)
{
	code_buf *b = e->b;
	toyjit *jit = e->jit;
	size_t adr;

	arm64_mov_imm(b, 9, ADDR(jit->head));
	arm64_ldr(b, 0, 10, 9, 0, ARM64_OFFSET);
	arm64_str(b, 0, 10, ARM64_SP, ICF(base.next), ARM64_OFFSET);
	arm64_mov_imm(b, 10, SW_FRAME_INLINED_CALL);
	arm64_str_w(b, 10, ARM64_SP, (uint32_t)ICF(base.type));
	arm64_str_w(b, ARM64_ZR, ARM64_SP, (uint32_t)ICF(base.attributes));
	arm64_mov_imm(b, 10, ADDR(&jit->native_target));
	arm64_str(b, 0, 10, ARM64_SP, ICF(datum), ARM64_OFFSET);
	arm64_add_imm(b, 10, ARM64_SP, 0);
	arm64_str(b, 0, 10, ARM64_SP, ICF(call_site_sp), ARM64_OFFSET);
	arm64_str(b, 0, ARM64_FP, ARM64_SP, ICF(callee_saved_fp), ARM64_OFFSET);
	arm64_str(b, 0, ARM64_ZR, ARM64_SP, ICF(return_address), ARM64_OFFSET);
	arm64_add_imm(b, 10, ARM64_SP, (uint32_t)L);
	arm64_str(b, 0, 10, 9, 0, ARM64_OFFSET);            /* head = &icf */

	/* Arguments: w0 = n - 1, x1 = entry, x2 = jit. */
	arm64_sub_w_imm(b, ARM64_X0, ARM64_X0, 1);
	arm64_mov_imm(b, ARM64_X1, ADDR(&jit->entries[next]));
	arm64_ldr(b, 0, ARM64_X1, ARM64_X1, 0, ARM64_OFFSET);
	arm64_mov_imm(b, ARM64_X2, ADDR(jit));
	arm64_mov_imm(b, ARM64_IP0, ADDR(toyjit_pinvoke_target));
	adr = arm64_adr(b, 10);
	arm64_str(b, 0, 10, ARM64_SP, ICF(return_address), ARM64_OFFSET);
	arm64_blr(b, ARM64_IP0);
	tj_call_site(e, 0);
	arm64_patch(b, adr, b->len);                        /* x10 = the address after the call */

	arm64_str(b, 0, ARM64_ZR, ARM64_SP, ICF(return_address), ARM64_OFFSET);
	arm64_ldr(b, 0, 10, ARM64_SP, ICF(base.next), ARM64_OFFSET);
	arm64_mov_imm(b, 9, ADDR(jit->head));
	arm64_str(b, 0, 10, 9, 0, ARM64_OFFSET);            /* head = icf.next */
}

/*
 * The body: clobber the saved registers; shadow push; call the leaf; then
 * by n in w0: n == 0 calls the stub, n == pinvoke_n makes the P/Invoke, any
 * other n calls the next method with n - 1; shadow pop.
 */
static void arm64_body(struct emit *e, int32_t L, unsigned next)
{
	const toyjit_method *m = e->m;
	code_buf *b = e->b;
	toyjit *jit = e->jit;
	struct clobber regs[6];
	size_t nregs = shape_clobbers(m->shape, regs);
	size_t to_stub, to_pinvoke, done[2], leaf;

	for (size_t i = 0; i < nregs; i++) {
		uint64_t v = toyjit_clobber_value(m->index, reg_num(regs[i].fp, regs[i].reg));

		if (regs[i].fp) {
			arm64_mov_imm(b, 9, v);
			arm64_fmov_dx(b, regs[i].reg, 9);
		} else {
			arm64_mov_imm(b, regs[i].reg, v);
		}
	}
	emit_shadow_push(e, m);

	leaf = arm64_bl(b);
	tj_call_site(e, 0);
	arm64_patch(b, leaf, (size_t)(jit->leaf.start - (uintptr_t)b->code));

	to_stub = arm64_cbz_w(b, ARM64_X0);
	arm64_mov_imm(b, 9, ADDR(&jit->pinvoke_n));
	arm64_ldr_w(b, 9, 9, 0);
	arm64_cmp_w(b, ARM64_X0, 9);
	to_pinvoke = arm64_b_eq(b);

	arm64_sub_w_imm(b, ARM64_X0, ARM64_X0, 1);
	call_indirect(e, &jit->entries[next]);
	done[0] = arm64_b(b);

	arm64_patch(b, to_stub, b->len);
	call_indirect(e, &jit->stub_entry);
	done[1] = arm64_b(b);

	arm64_patch(b, to_pinvoke, b->len);
	emit_pinvoke(e, L, next);

	arm64_patch(b, done[0], b->len);
	arm64_patch(b, done[1], b->len);
	emit_shadow_pop(e);
}

/*
 * The leaf: it works on w0 (and gives it back) without a frame, so its
 * return address stays in lr.  Its whole code is body; the ret is a
 * one-instruction epilog.
 */
static void arm64_leaf(struct emit *e)
{
	tj_note(e, sw_swu_end_prolog(e->sb, 0));
	e->m->prolog_size = 0;
	arm64_add_w_imm(e->b, 9, ARM64_X0, 7);
	arm64_add_w_imm(e->b, 10, 9, 5);
	arm64_sub_w_imm(e->b, ARM64_X0, 10, 12);
	note(e, sw_swu_epilog_begin(e->sb, here(e)));
	ret(e);
}

/* The transition block: x19-x28, fp, lr at ascending addresses (12 slots). */
#define BLOCK_SIZE 96

static void save_block(code_buf *b, int load)
{
	for (unsigned r = 19; r < 31; r += 2) {
		if (load)
			arm64_ldp(b, 0, r, r + 1, ARM64_SP, (int32_t)(r - 19) * 8, ARM64_OFFSET);
		else
			arm64_stp(b, 0, r, r + 1, ARM64_SP, (int32_t)(r - 19) * 8, ARM64_OFFSET);
	}
}

/*
 * The entry thunk, native code: thunk(n, entry) saves the C caller's x19-x28,
 * fp and lr, loads jit->entry_regs into x19-x28 (fp = 0 ends the
 * frame-pointer chain), calls entry(n), restores and returns.
 */
static void arm64_thunk(toyjit *jit, code_buf *b)
{
	jit->thunk_start = (uintptr_t)(b->code + b->len);
	arm64_sub_imm(b, ARM64_SP, ARM64_SP, BLOCK_SIZE);
	save_block(b, 0);
	for (unsigned r = 19; r <= 29; r++) {
		jit->entry_regs[r] = r == ARM64_FP ? 0 : 0x5eed000000000000ull | (uint64_t)r << 8 | 0x11;
		jit->entry_regs_mask |= 1ull << r;
		arm64_mov_imm(b, r, jit->entry_regs[r]);
	}
	arm64_blr(b, ARM64_X1);
	save_block(b, 1);
	arm64_add_imm(b, ARM64_SP, ARM64_SP, BLOCK_SIZE);
	arm64_ret(b);
	jit->thunk_size = (uintptr_t)(b->code + b->len) - jit->thunk_start;
}

/*
 * The stub, native code.  It stores the arm64 transition block (B = sp:
 * x19-x28, fp, lr; the caller's SP at B + 96), points fp at its fp slot and
 * builds a TransitionFrame below it:
 *
 *   tf = B - 64 = { next = *head, TRANSITION, 0, method 0, B, SW_TF_GENERIC,
 *                   protected 0, count 0 }
 *
 * then links it, calls helper(jit, &tf), unlinks it and returns to the
 * method that called it.
 */
static void arm64_stub(toyjit *jit, code_buf *b)
{
	/* The Frame's size, rounded up: sp stays 16-byte aligned. */
	const uint32_t tf_size = ((uint32_t)sizeof(sw_transition_frame) + 15) & ~15u;

	arm64_align(b, 16);
	jit->stub_start = (uintptr_t)(b->code + b->len);
	arm64_sub_imm(b, ARM64_SP, ARM64_SP, BLOCK_SIZE);
	save_block(b, 0);
	arm64_add_imm(b, ARM64_FP, ARM64_SP, BLOCK_SIZE - 16);
	arm64_sub_imm(b, ARM64_SP, ARM64_SP, tf_size);
	arm64_mov_imm(b, 9, ADDR(jit->head));
	arm64_ldr(b, 0, 10, 9, 0, ARM64_OFFSET);
	arm64_str(b, 0, 10, ARM64_SP, (int32_t)offsetof(sw_transition_frame, base.next), ARM64_OFFSET);
	arm64_mov_imm(b, 10, SW_FRAME_TRANSITION);
	arm64_str_w(b, 10, ARM64_SP, (uint32_t)offsetof(sw_transition_frame, base.type));
	arm64_str_w(b, ARM64_ZR, ARM64_SP, (uint32_t)offsetof(sw_transition_frame, base.attributes));
	arm64_str(b, 0, ARM64_ZR, ARM64_SP, (int32_t)offsetof(sw_transition_frame, method), ARM64_OFFSET);
	/* SW_TF_GENERIC (0); its call carries no reference argument: nothing to protect. */
	arm64_str(b, 0, ARM64_ZR, ARM64_SP, (int32_t)offsetof(sw_transition_frame, subtype), ARM64_OFFSET);
	arm64_str(b, 0, ARM64_ZR, ARM64_SP, (int32_t)offsetof(sw_transition_frame, protected_refs), ARM64_OFFSET);
	arm64_str(b, 0, ARM64_ZR, ARM64_SP, (int32_t)offsetof(sw_transition_frame, protected_count), ARM64_OFFSET);
	arm64_add_imm(b, 10, ARM64_SP, tf_size);
	arm64_str(b, 0, 10, ARM64_SP, (int32_t)offsetof(sw_transition_frame, transition_block), ARM64_OFFSET);
	arm64_add_imm(b, 10, ARM64_SP, 0);
	arm64_str(b, 0, 10, 9, 0, ARM64_OFFSET);            /* head = &tf */

	arm64_mov_imm(b, ARM64_X0, ADDR(jit));
	arm64_add_imm(b, ARM64_X1, ARM64_SP, 0);
	arm64_mov_imm(b, ARM64_IP0, ADDR(&jit->helper));
	arm64_ldr(b, 0, ARM64_IP0, ARM64_IP0, 0, ARM64_OFFSET);
	arm64_blr(b, ARM64_IP0);

	arm64_ldr(b, 0, 10, ARM64_SP, (int32_t)offsetof(sw_transition_frame, base.next), ARM64_OFFSET);
	arm64_mov_imm(b, 9, ADDR(jit->head));
	arm64_str(b, 0, 10, 9, 0, ARM64_OFFSET);            /* head = tf.next */
	arm64_add_imm(b, ARM64_SP, ARM64_SP, tf_size);
	save_block(b, 1);
	arm64_add_imm(b, ARM64_SP, ARM64_SP, BLOCK_SIZE);
	arm64_ret(b);
	jit->stub_size = (uintptr_t)(b->code + b->len) - jit->stub_start;
	jit->stub_entry = (void *)(uintptr_t)jit->stub_start;
}

static const char *const arm64_shape_names[TOYJIT_NSHAPES] = {
	"fp_pairs", "push_sized", "big_frame", "pac", "fp_top"
};

#define BIT(r) (1ull << (r))

const struct toyjit_backend toyjit_backend_arm64 = {
	.host = {
		.arch = SW_ARCH_ARM64,
		.trap = { 0x00, 0x00, 0x20, 0xd4 },     /* brk #0 */
		.trap_len = 4,
		.ip_reg = SW_ARM64_PC,
		.sp_reg = SW_ARM64_SP,
		.fp_reg = SW_ARM64_FP,
		.callee_saved = 0x3ffull << SW_ARM64_X19 | BIT(SW_ARM64_FP),
	},
	.shape_names = arm64_shape_names,
	.shadow_regs = arm64_shadow_regs,
	.nshadow_regs = sizeof(arm64_shadow_regs),
	.method_align = 16,
	.saved_mask = arm64_saved_mask,
	.emit_thunk = arm64_thunk,
	.emit_stub = arm64_stub,
	.emit_leaf = arm64_leaf,
	.emit_prolog = arm64_prolog,
	.emit_body = arm64_body,
	.emit_epilog = arm64_epilog,
	.align = arm64_align,
};
