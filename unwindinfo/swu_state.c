/*
 * swu_state.c - what each unwind operation does to the frame state.
 *
 * Every check lives here, once: the builder refuses what the validator
 * would refuse, and the decoder, which replays the same function, cannot
 * be led outside the saved-register array or into a negative frame.
 */
#include "internal.h"
#include "swu_state.h"

#define BIT(r) (1ULL << (r))

void swu_state_init(struct swu_state *s, const struct swi_arch *arch)
{
	s->arch = arch;
	s->sp_depth = arch->entry_sp_offset;
	s->fp_depth = 0;
	s->fp_reg = 0;
	s->fp_live = false;
	s->cfa_on_fp = false;
	s->saved_mask = 0;
}

/* Registers whose caller values a method may save: callee-saved ones, and
 * the link register where the return address arrives in one. */
static uint64_t savable_regs(const struct swi_arch *a)
{
	uint64_t m = a->callee_saved;

	if (a->lr_reg >= 0 && a->lr_reg < 64)
		m |= BIT(a->lr_reg);
	return m;
}

/* Also keeps every index below SW_MAX_REGS and 64 (the mask width). */
static bool reg_in(const struct swi_arch *a, uint32_t reg, uint64_t set)
{
	return reg < a->nregs && reg < SW_MAX_REGS && reg < 64 && (set & BIT(reg));
}

/* Is every slot still holding a caller's value at or above SP? */
static bool slots_live(const struct swu_state *s, int64_t sp_depth)
{
	for (uint64_t m = s->saved_mask; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		if (s->saved[r] < -sp_depth)
			return false;
	}
	return true;
}

/* Does [slot, slot + pointer size) overlap a slot already in use? */
static bool slot_taken(const struct swu_state *s, int64_t slot)
{
	int64_t ptr = s->arch->ptr_size;

	for (uint64_t m = s->saved_mask; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		if (slot < s->saved[r] + ptr && s->saved[r] < slot + ptr)
			return true;
	}
	return false;
}

/*
 * SP may not rise above the return address: the slots at and above
 * CFA - entry_sp_offset belong to the caller.
 */
static bool sp_depth_ok(const struct swu_state *s, int64_t d)
{
	return d >= s->arch->entry_sp_offset && d <= (int64_t)SW_SWU_MAX_FRAME;
}

static sw_status push(struct swu_state *s, uint32_t reg)
{
	int64_t d = (int64_t)s->sp_depth + s->arch->ptr_size;

	if (!reg_in(s->arch, reg, savable_regs(s->arch)) || (s->saved_mask & BIT(reg)))
		return SW_E_INVAL;
	if (d > (int64_t)SW_SWU_MAX_FRAME)
		return SW_E_LIMIT;
	s->sp_depth = (int32_t)d;
	s->saved[reg] = (int32_t)-d;
	s->saved_mask |= BIT(reg);
	return SW_OK;
}

static sw_status alloc(struct swu_state *s, int64_t size)
{
	if (size <= 0)
		return SW_E_INVAL;
	if (size > (int64_t)SW_SWU_MAX_FRAME - s->sp_depth)
		return SW_E_LIMIT;
	s->sp_depth += (int32_t)size;
	return SW_OK;
}

/* reg = SP + off: the CFA is reg + (sp_depth - off) from now on. */
static sw_status set_frame(struct swu_state *s, uint32_t reg, int64_t off)
{
	if (s->fp_live || !reg_in(s->arch, reg, s->arch->frame_regs))
		return SW_E_INVAL;
	/* The caller's value must be safe before the register is overwritten. */
	if (!(s->saved_mask & BIT(reg)))
		return SW_E_INVAL;
	if (off < 0 || off > s->sp_depth)
		return SW_E_INVAL;
	s->fp_reg = reg;
	s->fp_depth = (int32_t)(s->sp_depth - off);
	s->fp_live = true;
	s->cfa_on_fp = true;
	return SW_OK;
}

/* [SP + off] = reg, inside this frame and clear of the other slots. */
static sw_status save_reg(struct swu_state *s, uint32_t reg, int64_t off)
{
	int64_t slot = off - s->sp_depth;

	if (!reg_in(s->arch, reg, savable_regs(s->arch)) || (s->saved_mask & BIT(reg)))
		return SW_E_INVAL;
	if (off < 0 || slot + s->arch->ptr_size > -(int64_t)s->arch->entry_sp_offset)
		return SW_E_INVAL;
	if (slot_taken(s, slot))
		return SW_E_INVAL;
	s->saved[reg] = (int32_t)slot;
	s->saved_mask |= BIT(reg);
	return SW_OK;
}

static sw_status free_stack(struct swu_state *s, int64_t size)
{
	int64_t d = (int64_t)s->sp_depth - size;

	if (size <= 0 || !sp_depth_ok(s, d) || !slots_live(s, d))
		return SW_E_INVAL;
	s->sp_depth = (int32_t)d;
	return SW_OK;
}

/* SP = frame register + off, so CFA - SP = fp_depth - off. */
static sw_status restore_sp(struct swu_state *s, int64_t off)
{
	int64_t d = (int64_t)s->fp_depth - off;

	if (!s->fp_live || !sp_depth_ok(s, d) || !slots_live(s, d))
		return SW_E_INVAL;
	s->sp_depth = (int32_t)d;
	s->cfa_on_fp = false;
	return SW_OK;
}

/* The register gets its caller's value back: forget its slot. */
static sw_status reload(struct swu_state *s, uint32_t reg)
{
	if (!reg_in(s->arch, reg, s->saved_mask))
		return SW_E_INVAL;
	if (s->fp_live && reg == s->fp_reg) {
		/*
		 * The CFA cannot stay on a register that no longer holds the
		 * frame.  SP's depth is known statically (SWU has no dynamic
		 * allocation; a method with one must reset SP from the frame
		 * register first), so the CFA moves to SP: "add rsp, n; pop rbp"
		 * and "pop rbp" alone are what JITs emit without localloc.
		 */
		s->cfa_on_fp = false;
		s->fp_live = false;
	}
	s->saved_mask &= ~BIT(reg);
	return SW_OK;
}

static sw_status pop(struct swu_state *s, uint32_t reg)
{
	int64_t d = (int64_t)s->sp_depth - s->arch->ptr_size;
	sw_status st;

	/* Pops must undo the pushes in reverse: the top slot must be reg's. */
	if (!reg_in(s->arch, reg, s->saved_mask) || s->saved[reg] != -s->sp_depth)
		return SW_E_INVAL;
	if (!sp_depth_ok(s, d))
		return SW_E_INVAL;
	st = reload(s, reg);
	if (st == SW_OK)
		s->sp_depth = (int32_t)d;
	return st;
}

sw_status swu_state_apply(struct swu_state *s, const struct swu_op *op)
{
	switch (op->code) {
	case SWU_OP_PUSH:        return push(s, op->reg);
	case SWU_OP_ALLOC:       return alloc(s, op->arg);
	case SWU_OP_SET_FRAME:   return set_frame(s, op->reg, op->arg);
	case SWU_OP_SAVE_REG:    return save_reg(s, op->reg, op->arg);
	case SWU_OP_FREE:        return free_stack(s, op->arg);
	case SWU_OP_RESTORE_SP:  return restore_sp(s, op->arg);
	case SWU_OP_POP:         return pop(s, op->reg);
	case SWU_OP_RESTORE_REG: return reload(s, op->reg);
	default:                 return SW_E_INVAL;
	}
}

bool swu_state_is_entry(const struct swu_state *s)
{
	return s->sp_depth == s->arch->entry_sp_offset && s->saved_mask == 0 &&
	       !s->cfa_on_fp && !s->fp_live;
}

void swu_state_rule(const struct swu_state *s, sw_swu_region region, sw_swu_rule *out)
{
	const struct swi_arch *a = s->arch;

	out->arch = a->arch;
	out->region = region;
	if (s->cfa_on_fp) {
		out->cfa_reg = s->fp_reg;
		out->cfa_offset = s->fp_depth;
	} else {
		out->cfa_reg = a->sp_reg;
		out->cfa_offset = s->sp_depth;
	}
	out->ra_in_reg = 0;
	out->ra_reg = 0;
	out->ra_offset = a->entry_ra_offset;
	if (a->entry_ra_in_lr && a->lr_reg >= 0) {
		/* Until the link register is saved, the return address is in it. */
		if (s->saved_mask & BIT(a->lr_reg)) {
			out->ra_offset = s->saved[a->lr_reg];
		} else {
			out->ra_in_reg = 1;
			out->ra_reg = (uint32_t)a->lr_reg;
			out->ra_offset = 0;
		}
	}
	out->sp_offset = s->sp_depth;
	out->saved_mask = s->saved_mask;
	for (unsigned r = 0; r < SW_MAX_REGS; r++)
		out->saved_offset[r] = (s->saved_mask & BIT(r)) ? s->saved[r] : 0;
}
