/*
 * toyjit.c - the toy JIT: emits methods of five prolog shapes, their SWU
 * metadata, an entry thunk and a TransitionFrame stub (see toyjit.h).
 *
 * Stack alignment: every method keeps the System V rule (rsp is 16-byte
 * aligned at each call it makes), so the C functions it calls get an aligned
 * stack.  That is why the frame sizes below are what they are.
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "toyjit.h"
#include "x64_emit.h"

#define CODE_CAP        (64 * 1024)
#define METHOD_ALIGN    16
#define PAGE            4096

/* Bytes of locals every method keeps for an InlinedCallFrame. */
#define LOCALS_SIZE     ((int32_t)sizeof(sw_inlined_call_frame))

/* Emission state for one method: the buffer, the builder, the first error. */
struct emit {
	toyjit *jit;
	x64_buf *b;
	sw_swu_builder *sb;
	size_t start;           /* the method's offset in the buffer */
	sw_status err;
};

/* Offset just past the last emitted instruction, relative to the method. */
static uint32_t here(const struct emit *e)
{
	return (uint32_t)(e->b->len - e->start);
}

static void note(struct emit *e, sw_status st)
{
	if (st != SW_OK && e->err == SW_OK)
		e->err = st;
}

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
static int32_t emit_prolog(struct emit *e, toyjit_shape shape)
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
	case TOYJIT_NSHAPES:
		break;
	}
	note(e, SW_E_INVAL);
	return 0;
}

static void emit_epilog(struct emit *e, toyjit_shape shape)
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
	case TOYJIT_NSHAPES:
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

static uint64_t shape_saved_mask(toyjit_shape shape)
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

uint64_t toyjit_clobber_value(unsigned index, unsigned reg)
{
	return 0x7a17000000000000ull | (uint64_t)index << 16 | (uint64_t)reg << 8 | 0xc5;
}

/*
 * The P/Invoke target: unmanaged code that calls managed code back (a
 * reverse P/Invoke).  The store after the call keeps the compiler from
 * turning it into a tail call, which would hide this native frame.
 */
static void toyjit_pinvoke_target(int32_t n, void (*entry)(int32_t), toyjit *jit)
{
	jit->pinvoke_calls++;
	entry(n);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	jit->pinvoke_calls++;
}

/* Record this method and its registers on the shadow stack: *top++ = { ... }. */
static void emit_shadow_push(x64_buf *b, toyjit *jit, const void *handle)
{
	static const struct { unsigned reg; int32_t off; } saved[] = {
		{ X64_RSP, offsetof(toyjit_shadow_entry, sp) },
		{ X64_RBX, offsetof(toyjit_shadow_entry, rbx) },
		{ X64_RBP, offsetof(toyjit_shadow_entry, rbp) },
		{ X64_R12, offsetof(toyjit_shadow_entry, r12) },
		{ X64_R13, offsetof(toyjit_shadow_entry, r13) },
		{ X64_R14, offsetof(toyjit_shadow_entry, r14) },
		{ X64_R15, offsetof(toyjit_shadow_entry, r15) },
	};

	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->shadow_top);
	x64_mov_rm(b, X64_RCX, X64_RAX, 0);
	x64_mov_ri64(b, X64_RDX, (uintptr_t)handle);
	x64_mov_mr(b, X64_RCX, (int32_t)offsetof(toyjit_shadow_entry, method), X64_RDX);
	for (size_t i = 0; i < sizeof(saved) / sizeof(saved[0]); i++)
		x64_mov_mr(b, X64_RCX, saved[i].off, saved[i].reg);
	x64_add_ri(b, X64_RCX, (int32_t)sizeof(toyjit_shadow_entry));
	x64_mov_mr(b, X64_RAX, 0, X64_RCX);
}

static void emit_shadow_pop(x64_buf *b, toyjit *jit)
{
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->shadow_top);
	x64_sub_m64_i8(b, X64_RAX, 0, (int8_t)sizeof(toyjit_shadow_entry));
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
static void emit_body(struct emit *e, const toyjit_method *m, int32_t L, unsigned next)
{
	x64_buf *b = e->b;
	toyjit *jit = e->jit;
	unsigned char regs[5];
	size_t nregs = shape_clobbers(m->shape, regs);
	size_t to_stub, to_pinvoke, done[2];

	for (size_t i = 0; i < nregs; i++)
		x64_mov_ri64(b, regs[i], toyjit_clobber_value(m->index, x64_dwarf_reg(regs[i])));
	emit_shadow_push(b, jit, m);

	x64_test_r32(b, X64_RDI);
	to_stub = x64_jcc(b, X64_CC_E);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->pinvoke_n);
	x64_cmp_r32_m(b, X64_RDI, X64_RAX, 0);
	to_pinvoke = x64_jcc(b, X64_CC_E);

	x64_sub_r32_i8(b, X64_RDI, 1);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->entries[next]);
	x64_call_m(b, X64_RAX, 0);
	done[0] = x64_jmp(b);

	x64_patch_rel32(b, to_stub, b->len);
	x64_mov_ri64(b, X64_RAX, (uintptr_t)&jit->stub_entry);
	x64_call_m(b, X64_RAX, 0);
	done[1] = x64_jmp(b);

	x64_patch_rel32(b, to_pinvoke, b->len);
	emit_pinvoke(e, L, next);

	x64_patch_rel32(b, done[0], b->len);
	x64_patch_rel32(b, done[1], b->len);
	emit_shadow_pop(b, jit);
}

static sw_status emit_method(toyjit *jit, x64_buf *b, sw_swu_builder *sb, unsigned k)
{
	toyjit_method *m = &jit->methods[k];
	struct emit e = { jit, b, sb, 0, SW_OK };
	uint8_t blob[512];
	size_t blob_len = 0;
	int32_t L;

	x64_align(b, METHOD_ALIGN);
	e.start = b->len;
	sw_swu_builder_reset(sb);

	L = emit_prolog(&e, m->shape);
	note(&e, sw_swu_end_prolog(sb, here(&e)));
	m->prolog_size = here(&e);
	emit_body(&e, m, L, (k + 1) % jit->nmethods);
	emit_epilog(&e, m->shape);
	if (b->overflow)
		return SW_E_LIMIT;
	if (e.err != SW_OK)
		return e.err;

	m->start = (uintptr_t)(b->code + e.start);
	m->size = here(&e);
	note(&e, sw_swu_finish(sb, m->size, blob, sizeof(blob), &blob_len));
	if (e.err != SW_OK)
		return e.err;
	m->swu = malloc(blob_len);
	if (!m->swu)
		return SW_E_NOMEM;
	memcpy(m->swu, blob, blob_len);
	m->swu_size = blob_len;
	jit->entries[k] = (void *)(uintptr_t)m->start;
	return SW_OK;
}

/*
 * The entry thunk, native code: thunk(n, entry) saves the C caller's
 * callee-saved registers, loads jit->entry_regs into them (rbp = 0 ends the
 * frame-pointer chain), calls entry(n), restores and returns.
 */
static const unsigned char thunk_regs[] = { X64_RBP, X64_RBX, X64_R12, X64_R13, X64_R14, X64_R15 };

static void emit_thunk(toyjit *jit, x64_buf *b)
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
static void emit_stub(toyjit *jit, x64_buf *b)
{
	const int32_t tf_size = (int32_t)sizeof(sw_transition_frame);

	x64_align(b, METHOD_ALIGN);
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

static const char *const shape_names[TOYJIT_NSHAPES] = {
	"rbp_frame", "no_fp", "big_frame", "mov_saves", "offset_fp"
};

const char *toyjit_shape_name(toyjit_shape shape)
{
	return (unsigned)shape < TOYJIT_NSHAPES ? shape_names[shape] : "?";
}

static sw_status register_methods(toyjit *jit)
{
	for (unsigned k = 0; k < jit->nmethods; k++) {
		const toyjit_method *m = &jit->methods[k];
		sw_code_info info;
		sw_status st;

		memset(&info, 0, sizeof(info));
		info.method = (void *)m;
		info.start = m->start;
		info.size = m->size;
		info.unwind = m->swu;
		info.unwind_size = (uint32_t)m->swu_size;
		st = sw_codemap_add(jit->map, &info);
		if (st != SW_OK) {
			while (k-- > 0)
				sw_codemap_remove(jit->map, jit->methods[k].start);
			return st;
		}
	}
	return SW_OK;
}

sw_status toyjit_create(toyjit **out, sw_codemap *map, sw_frame **head,
                        const toyjit_shape *shapes, unsigned n,
                        toyjit_helper_fn helper, void *user)
{
	sw_swu_builder *sb = NULL;
	toyjit *jit;
	x64_buf b;
	sw_status st;
	void *mem;

	if (!out || !map || !head || !shapes || n == 0 || n > TOYJIT_MAX_METHODS || !helper)
		return SW_E_INVAL;
	for (unsigned k = 0; k < n; k++)
		if ((unsigned)shapes[k] >= TOYJIT_NSHAPES)
			return SW_E_INVAL;
	jit = calloc(1, sizeof(*jit));
	if (!jit)
		return SW_E_NOMEM;
	mem = mmap(NULL, CODE_CAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED) {
		free(jit);
		return SW_E_NOMEM;
	}
	jit->code = mem;
	jit->code_cap = CODE_CAP;
	jit->map = map;
	jit->head = head;
	jit->helper = helper;
	jit->user = user;
	jit->nmethods = n;
	jit->shadow_top = jit->shadow;
	jit->pinvoke_n = -1;
	snprintf(jit->native_target.name, sizeof(jit->native_target.name), "toyjit_pinvoke_target");
	jit->native_target.native = 1;
	jit->native_target.jit = jit;
	jit->native_target.start = (uintptr_t)toyjit_pinvoke_target;
	for (unsigned k = 0; k < n; k++) {
		toyjit_method *m = &jit->methods[k];

		m->index = k;
		m->shape = shapes[k];
		m->jit = jit;
		m->saved_regs = shape_saved_mask(shapes[k]);
		snprintf(m->name, sizeof(m->name), "M%u_%s", k, toyjit_shape_name(shapes[k]));
	}

	x64_buf_init(&b, mem, CODE_CAP);
	emit_thunk(jit, &b);
	emit_stub(jit, &b);
	st = sw_swu_builder_create(&sb, SW_ARCH_X64);
	for (unsigned k = 0; st == SW_OK && k < n; k++)
		st = emit_method(jit, &b, sb, k);
	sw_swu_builder_destroy(sb);
	if (st == SW_OK && b.overflow)
		st = SW_E_LIMIT;
	if (st == SW_OK && mprotect(mem, CODE_CAP, PROT_READ | PROT_EXEC) != 0)
		st = SW_E_NOMEM;
	if (st == SW_OK)
		st = register_methods(jit);
	if (st != SW_OK) {
		for (unsigned k = 0; k < n; k++)
			free(jit->methods[k].swu);
		munmap(mem, CODE_CAP);
		free(jit);
		return st;
	}
	*out = jit;
	return SW_OK;
}

void toyjit_destroy(toyjit *jit)
{
	if (!jit)
		return;
	for (unsigned k = 0; k < jit->nmethods; k++) {
		sw_codemap_remove(jit->map, jit->methods[k].start);
		free(jit->methods[k].swu);
	}
	/* No walk may still be looking at the code once it is unmapped. */
	sw_codemap_synchronize(jit->map);
	munmap(jit->code, jit->code_cap);
	free(jit);
}

sw_status toyjit_run(toyjit *jit, unsigned depth, int pinvoke_at)
{
	void (*thunk)(int32_t, void *);

	if (!jit || depth == 0 || depth > TOYJIT_MAX_DEPTH)
		return SW_E_INVAL;
	if (pinvoke_at >= 0 && (unsigned)pinvoke_at >= depth - 1)
		return SW_E_INVAL;
	/* Frame i runs with n = depth - 1 - i. */
	jit->pinvoke_n = pinvoke_at >= 0 ? (int32_t)(depth - 1 - (unsigned)pinvoke_at) : -1;
	jit->run_depth = depth;
	jit->run_pinvoke_at = pinvoke_at;
	jit->shadow_top = jit->shadow;
	thunk = (void (*)(int32_t, void *))(uintptr_t)jit->thunk_start;
	thunk((int32_t)(depth - 1), jit->entries[0]);
	return jit->shadow_top == jit->shadow ? SW_OK : SW_E_MISMATCH;
}

size_t toyjit_shadow_depth(const toyjit *jit)
{
	return (size_t)(jit->shadow_top - jit->shadow);
}

uint64_t toyjit_shadow_reg(const toyjit_shadow_entry *e, unsigned reg)
{
	switch (reg) {
	case SW_X64_RSP: return e->sp;
	case SW_X64_RBX: return e->rbx;
	case SW_X64_RBP: return e->rbp;
	case SW_X64_R12: return e->r12;
	case SW_X64_R13: return e->r13;
	case SW_X64_R14: return e->r14;
	case SW_X64_R15: return e->r15;
	default: return 0;
	}
}

const toyjit_method *toyjit_frame_method(const toyjit *jit, unsigned i)
{
	return &jit->methods[i % jit->nmethods];
}

const toyjit_method *toyjit_method_of(const toyjit *jit, const void *handle)
{
	for (unsigned k = 0; k < jit->nmethods; k++)
		if (handle == &jit->methods[k])
			return &jit->methods[k];
	if (handle == &jit->native_target)
		return &jit->native_target;
	return NULL;
}

int toyjit_is_native(const toyjit *jit, uint64_t ip)
{
	return (ip >= jit->thunk_start && ip < jit->thunk_start + jit->thunk_size) ||
	       (ip >= jit->stub_start && ip < jit->stub_start + jit->stub_size);
}
