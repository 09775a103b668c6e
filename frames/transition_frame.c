/*
 * transition_frame.c - TransitionFrame: a stub called from managed code
 * saved the caller's callee-saved registers and calls into the runtime.
 * The block's layout is the architecture's (swi_arch.transition_block_*).
 */
#include "frames_internal.h"

static sw_status tf_block(const sw_frame_view *f, uint64_t *block)
{
	return sw_frame_read_field(f, SW_TF_TRANSITION_BLOCK, block);
}

/* The return address at the end of a transition block at `block`. */
sw_status swi_transition_block_return_address(const sw_frame_view *f, uint64_t block, uint64_t *ra)
{
	const struct swi_arch *a = swi_arch_get(f->thread->arch);
	uint64_t slot;

	if (!a)
		return SW_E_UNSUPPORTED;
	slot = block + (uint64_t)(a->transition_block_slots - 1) * a->ptr_size;
	if (slot < block)
		return SW_E_BADFRAME;
	return swi_read_ptr(f->thread->memory, a->ptr_size, slot, ra);
}

/* The caller's state after its return: the block's registers, SP just above it. */
sw_status swi_transition_block_restore(const sw_frame_view *f, uint64_t block, sw_regdisplay *rd)
{
	const struct swi_arch *a = swi_arch_get(f->thread->arch);
	uint64_t size;
	sw_status st;

	if (!a)
		return SW_E_UNSUPPORTED;
	size = (uint64_t)a->transition_block_slots * a->ptr_size;
	/* The block lies in the target's address space, 32 bits wide on a 32-bit target. */
	if (block > (a->ptr_size == 4 ? UINT32_MAX : UINT64_MAX) - size)
		return SW_E_BADFRAME;
	rd->cur.valid = 0;
	if ((st = swi_restore_reg_block(f->thread, block, a->ptr_size, a->transition_block_regs,
	                                a->transition_block_slots, &rd->cur, rd->cur_loc)) != SW_OK)
		return st;
	rd->cur.regs[a->sp_reg] = block + size;
	rd->cur_loc[a->sp_reg] = 0;
	rd->cur.valid |= 1ULL << a->sp_reg;
	return SW_OK;
}

static sw_status tf_return_address(const sw_frame_view *f, uint64_t *ra)
{
	uint64_t block;
	sw_status st = tf_block(f, &block);

	return st != SW_OK ? st : swi_transition_block_return_address(f, block, ra);
}

static sw_status tf_update_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
{
	uint64_t block;
	sw_status st = tf_block(f, &block);

	return st != SW_OK ? st : swi_transition_block_restore(f, block, rd);
}

static sw_status tf_method(const sw_frame_view *f, void **method)
{
	return swi_frame_method_field(f, SW_TF_METHOD, method);
}

static sw_transition tf_transition(const sw_frame_view *f)
{
	SWI_UNUSED(f);
	return SW_TRANSITION_INTERNAL_CALL;
}

/* The arguments of the call in progress that hold references. */
static sw_status tf_gc_roots(const sw_frame_view *f,
                             int (*fn)(void *data, uint64_t slot, uint32_t flags), void *data)
{
	return swi_frame_protected_roots(f, SW_TF_PROTECTED, SW_TF_PROTECTED_COUNT, fn, data);
}

const sw_frame_ops swi_transition_frame_ops = {
	.type = SW_FRAME_TRANSITION,
	.flags = 0,
	.name = "TransitionFrame",
	.return_address = tf_return_address,
	.update_regdisplay = tf_update_regdisplay,
	.method = tf_method,
	.transition = tf_transition,
	.gc_roots = tf_gc_roots,
};
