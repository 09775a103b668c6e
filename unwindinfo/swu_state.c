/*
 * swu_state.c - what each unwind operation does to the frame state.
 *
 * Every check lives here, once: the builder refuses what the validator
 * would refuse, and the decoder, which replays the same function, cannot
 * be led outside the saved-register array or into a negative frame.
 */
#include "util.h"
#include "arch.h"
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
	s->ra_signed = false;
	s->args = 0;
	s->ra_offset = arch->entry_ra_offset;
	s->saved_mask = 0;
	s->cfa_deref = false;
	s->based_mask = 0;
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

/* arm64 keeps SP 16-byte aligned: every move, and every depth, is a multiple of 16. */
static bool sp_aligned(const struct swu_state *s, int64_t n)
{
	return s->arch->sp_move_align == 0 || n % s->arch->sp_move_align == 0;
}

/* A slot (CFA-relative) at the alignment the architecture's stores need. */
static bool slot_aligned(const struct swu_state *s, int64_t slot)
{
	return s->arch->slot_align == 0 || slot % s->arch->slot_align == 0;
}

static bool can_save(const struct swu_state *s, uint32_t reg)
{
	return reg_in(s->arch, reg, swi_savable_regs(s->arch)) && !(s->saved_mask & BIT(reg));
}

static bool lr_saved(const struct swu_state *s)
{
	int lr = s->arch->lr_reg;

	return lr >= 0 && lr < 64 && (s->saved_mask & BIT(lr));
}

/*
 * SP -= size, then reg1 (and reg2, one pointer above, unless it is
 * SWU_NO_REG) saved at the new SP: push, str pre-index, stp pre-index.
 */
#define SWU_NO_REG UINT32_MAX

static sw_status push_slots(struct swu_state *s, uint32_t reg1, uint32_t reg2, int64_t size)
{
	int64_t ptr = s->arch->ptr_size;
	int64_t d = (int64_t)s->sp_depth + size;

	if (!can_save(s, reg1) || (reg2 != SWU_NO_REG && (reg2 == reg1 || !can_save(s, reg2))))
		return SW_E_INVAL;
	if (size < (reg2 != SWU_NO_REG ? 2 * ptr : ptr) || !sp_aligned(s, size))
		return SW_E_INVAL;
	if (d > (int64_t)SW_SWU_MAX_FRAME)
		return SW_E_LIMIT;
	s->sp_depth = (int32_t)d;
	s->saved[reg1] = (int32_t)-d;
	s->saved_mask |= BIT(reg1);
	if (reg2 != SWU_NO_REG) {
		s->saved[reg2] = (int32_t)(-d + ptr);
		s->saved_mask |= BIT(reg2);
	}
	return SW_OK;
}

static sw_status push(struct swu_state *s, uint32_t reg)
{
	return push_slots(s, reg, SWU_NO_REG, s->arch->ptr_size);
}

static sw_status alloc(struct swu_state *s, int64_t size)
{
	if (size <= 0 || !sp_aligned(s, size))
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

	if (!can_save(s, reg))
		return SW_E_INVAL;
	if (off < 0 || slot + s->arch->ptr_size > -(int64_t)s->arch->entry_sp_offset)
		return SW_E_INVAL;
	if (!slot_aligned(s, slot) || slot_taken(s, slot))
		return SW_E_INVAL;
	s->saved[reg] = (int32_t)slot;
	s->saved_mask |= BIT(reg);
	return SW_OK;
}

/* stp reg1, reg2, [sp, #off]: two save_regs, both or neither. */
static sw_status save_pair(struct swu_state *s, uint32_t reg1, uint32_t reg2, int64_t off)
{
	struct swu_state t = *s;
	sw_status st;

	if ((st = save_reg(&t, reg1, off)) != SW_OK ||
	    (st = save_reg(&t, reg2, off + s->arch->ptr_size)) != SW_OK)
		return st;
	*s = t;
	return SW_OK;
}

/* paciasp signs lr in place: before lr is saved, and once. */
static sw_status sign_ra(struct swu_state *s)
{
	if (!s->arch->has_ptrauth || s->ra_signed || lr_saved(s))
		return SW_E_INVAL;
	s->ra_signed = true;
	return SW_OK;
}

static sw_status free_stack(struct swu_state *s, int64_t size)
{
	int64_t d = (int64_t)s->sp_depth - size;

	if (size <= 0 || !sp_aligned(s, size) || !sp_depth_ok(s, d) || !slots_live(s, d))
		return SW_E_INVAL;
	s->sp_depth = (int32_t)d;
	return SW_OK;
}

/* SP = frame register + off, so CFA - SP = fp_depth - off. */
static sw_status restore_sp(struct swu_state *s, int64_t off)
{
	int64_t d = (int64_t)s->fp_depth - off;

	if (!s->fp_live || !sp_aligned(s, d) || !sp_depth_ok(s, d) || !slots_live(s, d))
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

/*
 * reg1 (and reg2 one pointer above it, unless SWU_NO_REG) reloaded from the
 * top of the stack, then SP += size: pop, ldr post-index, ldp post-index.
 * Pops undo the pushes in reverse: the top slots must be theirs.
 */
/*
 * What reload() changes, so that an op that fails after reloading can put
 * the state back (ops leave the state unchanged on error) without copying
 * the whole of it first.
 */
struct reload_undo {
	uint64_t saved_mask;
	bool cfa_on_fp, fp_live;
};

static struct reload_undo reload_mark(const struct swu_state *s)
{
	return (struct reload_undo){ s->saved_mask, s->cfa_on_fp, s->fp_live };
}

static sw_status undo_reload(struct swu_state *s, const struct reload_undo *u, sw_status st)
{
	s->saved_mask = u->saved_mask;
	s->cfa_on_fp = u->cfa_on_fp;
	s->fp_live = u->fp_live;
	return st;
}

static sw_status pop_slots(struct swu_state *s, uint32_t reg1, uint32_t reg2, int64_t size)
{
	int64_t ptr = s->arch->ptr_size;
	int64_t d = (int64_t)s->sp_depth - size;
	struct reload_undo u = reload_mark(s);
	sw_status st;

	if (!reg_in(s->arch, reg1, s->saved_mask) || s->saved[reg1] != -s->sp_depth)
		return SW_E_INVAL;
	if (reg2 != SWU_NO_REG &&
	    (!reg_in(s->arch, reg2, s->saved_mask) || s->saved[reg2] != -s->sp_depth + ptr))
		return SW_E_INVAL;
	if (size < (reg2 != SWU_NO_REG ? 2 * ptr : ptr) || !sp_aligned(s, size) || !sp_depth_ok(s, d))
		return SW_E_INVAL;
	if ((st = reload(s, reg1)) != SW_OK ||
	    (reg2 != SWU_NO_REG && (st = reload(s, reg2)) != SW_OK))
		return undo_reload(s, &u, st);
	if (!slots_live(s, d))
		return undo_reload(s, &u, SW_E_INVAL);
	s->sp_depth = (int32_t)d;
	return SW_OK;
}

static sw_status pop(struct swu_state *s, uint32_t reg)
{
	return pop_slots(s, reg, SWU_NO_REG, s->arch->ptr_size);
}

/* ldp reg1, reg2, [sp, #n]: two adjacent slots, reg1 below. */
static sw_status restore_pair(struct swu_state *s, uint32_t reg1, uint32_t reg2)
{
	struct reload_undo u = reload_mark(s);
	sw_status st;

	if (!s->arch->has_reg_pairs || !reg_in(s->arch, reg1, s->saved_mask) ||
	    !reg_in(s->arch, reg2, s->saved_mask) ||
	    (int64_t)s->saved[reg2] != (int64_t)s->saved[reg1] + s->arch->ptr_size)
		return SW_E_INVAL;
	if ((st = reload(s, reg1)) != SW_OK || (st = reload(s, reg2)) != SW_OK)
		return undo_reload(s, &u, st);
	return SW_OK;
}

/* autiasp authenticates lr in place: it must be back in lr. */
static sw_status auth_ra(struct swu_state *s)
{
	if (!s->arch->has_ptrauth || !s->ra_signed || lr_saved(s))
		return SW_E_INVAL;
	s->ra_signed = false;
	return SW_OK;
}

/* Outgoing arguments move SP by whole stack slots (arm64: 16 bytes). */
static bool args_size_ok(const struct swu_state *s, int64_t size)
{
	unsigned unit = s->arch->sp_move_align ? s->arch->sp_move_align : s->arch->ptr_size;

	return size > 0 && size % unit == 0;
}

static sw_status push_args(struct swu_state *s, int64_t size)
{
	if (!args_size_ok(s, size))
		return SW_E_INVAL;
	if (size > (int64_t)SW_SWU_MAX_FRAME - s->sp_depth)
		return SW_E_LIMIT;
	s->sp_depth += (int32_t)size;
	s->args += (int32_t)size;
	return SW_OK;
}

/* pop_args, and call_pops_args once the call has returned: never more than was pushed. */
static sw_status pop_args(struct swu_state *s, int64_t size)
{
	if (!args_size_ok(s, size) || size > s->args)
		return SW_E_INVAL;
	s->sp_depth -= (int32_t)size;
	s->args -= (int32_t)size;
	return SW_OK;
}

/* ---- Row ops: the rules of imported CFI, at any offset ---- */

/* A register a rule may name: any of the architecture's but SP. */
static bool row_reg(const struct swu_state *s, uint32_t reg)
{
	const struct swi_arch *a = s->arch;

	return reg < a->nregs && reg < SW_MAX_REGS && reg < 64 && reg != a->sp_reg;
}

static bool row_offset_ok(int64_t off)
{
	return off >= -(int64_t)SW_SWU_MAX_FRAME && off <= (int64_t)SW_SWU_MAX_FRAME;
}

/*
 * CFA = reg + off: SP, a frame pointer, or a scratch register during stack
 * realignment.  Even a negative offset on SP is taken as the CFI says it
 * (hand-written assembly has such rows); the walker refuses a CFA below SP
 * where it meets one.  The IP never computes a CFA.  With `deref`, CFA =
 * [reg + off]: the caller's SP as the prolog stored it (i386 main
 * realigning its stack keeps it at [ebp - 4]); SP's depth is then unknown.
 */
static sw_status def_cfa(struct swu_state *s, uint32_t reg, int64_t off, bool deref)
{
	if (!row_reg(s, reg) && reg != s->arch->sp_reg)
		return SW_E_INVAL;
	if (reg == s->arch->ip_reg || !row_offset_ok(off))
		return SW_E_INVAL;
	s->cfa_deref = deref;
	if (reg == s->arch->sp_reg && !deref) {
		s->cfa_on_fp = false;
		s->fp_live = false;
		s->sp_depth = (int32_t)off;
	} else {
		s->cfa_on_fp = true;
		s->fp_live = true;
		s->fp_reg = reg;
		s->fp_depth = (int32_t)off;
	}
	return SW_OK;
}

/* A new offset for a CFA read from memory is not a CFA offset: refused. */
static sw_status def_cfa_offset(struct swu_state *s, int64_t off)
{
	if (s->cfa_deref)
		return SW_E_INVAL;
	if (s->cfa_on_fp)
		return def_cfa(s, s->fp_reg, off, false);
	return def_cfa(s, s->arch->sp_reg, off, false);
}

/* The return address column is the IP where it arrives on the stack,
 * the link register (an ordinary saved register here) where it does not. */
static bool is_ra_column(const struct swu_state *s, uint32_t reg)
{
	return reg == s->arch->ip_reg && !s->arch->entry_ra_in_lr;
}

static sw_status saved_at(struct swu_state *s, uint32_t reg, int64_t off)
{
	if (!row_reg(s, reg) || !row_offset_ok(off))
		return SW_E_INVAL;
	if (is_ra_column(s, reg)) {
		s->ra_offset = (int32_t)off;
		return SW_OK;
	}
	if (reg == s->arch->ip_reg)
		return SW_E_INVAL;
	s->saved[reg] = (int32_t)off;
	s->saved_mask |= BIT(reg);
	s->based_mask &= ~BIT(reg);
	return SW_OK;
}

/*
 * reg saved at [base + off], base's value in this frame.  Not the return
 * address: its slot is CFA-relative (on arm64, lr's slot is where the
 * return address is, so lr is refused too).  The base may be any register
 * but the IP, SP included, reg itself too (i386: ebp saved at [ebp]).
 */
static sw_status saved_at_reg(struct swu_state *s, uint32_t reg, uint32_t base, int64_t off)
{
	const struct swi_arch *a = s->arch;

	if (!row_reg(s, reg) || reg == a->ip_reg || !row_offset_ok(off))
		return SW_E_INVAL;
	if (a->entry_ra_in_lr && a->lr_reg >= 0 && reg == (uint32_t)a->lr_reg)
		return SW_E_INVAL;
	if ((!row_reg(s, base) && base != a->sp_reg) || base == a->ip_reg)
		return SW_E_INVAL;
	s->saved[reg] = (int32_t)off;
	s->saved_mask |= BIT(reg);
	s->based_mask |= BIT(reg);
	s->base[reg] = (uint8_t)base;
	return SW_OK;
}

/* The return address always has a slot: it cannot become "the same value". */
static sw_status same_value(struct swu_state *s, uint32_t reg)
{
	if (!row_reg(s, reg) || reg == s->arch->ip_reg)
		return SW_E_INVAL;
	s->saved_mask &= ~BIT(reg);
	s->based_mask &= ~BIT(reg);
	return SW_OK;
}

static bool has_pairs(const struct swu_state *s)
{
	return s->arch->has_reg_pairs;
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
	case SWU_OP_PUSH_PAIR:
		return has_pairs(s) && op->reg2 != SWU_NO_REG ?
		       push_slots(s, op->reg, op->reg2, op->arg) : SW_E_INVAL;
	case SWU_OP_PUSH_SIZED:
		return has_pairs(s) ? push_slots(s, op->reg, SWU_NO_REG, op->arg) : SW_E_INVAL;
	case SWU_OP_SAVE_PAIR:
		return has_pairs(s) ? save_pair(s, op->reg, op->reg2, op->arg) : SW_E_INVAL;
	case SWU_OP_SIGN_RA:     return sign_ra(s);
	case SWU_OP_POP_PAIR:
		return has_pairs(s) && op->reg2 != SWU_NO_REG ?
		       pop_slots(s, op->reg, op->reg2, op->arg) : SW_E_INVAL;
	case SWU_OP_POP_SIZED:
		return has_pairs(s) ? pop_slots(s, op->reg, SWU_NO_REG, op->arg) : SW_E_INVAL;
	case SWU_OP_RESTORE_PAIR: return restore_pair(s, op->reg, op->reg2);
	case SWU_OP_AUTH_RA:     return auth_ra(s);
	case SWU_OP_PUSH_ARGS:   return push_args(s, op->arg);
	case SWU_OP_POP_ARGS:
	case SWU_OP_CALL_POPS:   return pop_args(s, op->arg);
	case SWU_OP_DEF_CFA:     return def_cfa(s, op->reg, op->arg, false);
	case SWU_OP_CFA_OFFSET:  return def_cfa_offset(s, op->arg);
	case SWU_OP_SAVED_AT:    return saved_at(s, op->reg, op->arg);
	case SWU_OP_SAME_VALUE:  return same_value(s, op->reg);
	case SWU_OP_CFA_DEREF:   return def_cfa(s, op->reg, op->arg, true);
	case SWU_OP_SAVED_AT_REG: return saved_at_reg(s, op->reg, op->reg2, op->arg);
	default:                 return SW_E_INVAL;
	}
}

bool swu_state_is_entry(const struct swu_state *s)
{
	return s->sp_depth == s->arch->entry_sp_offset && s->saved_mask == 0 &&
	       !s->cfa_on_fp && !s->fp_live && s->args == 0 && !s->cfa_deref;
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
	out->ra_offset = s->ra_offset;
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
	out->ra_signed = s->ra_signed;
	out->reserved = 0;
	out->sp_offset = s->sp_depth;
	out->saved_mask = s->saved_mask;
	out->cfa_deref = s->cfa_deref;
	out->reserved2 = 0;
	/* Most registers are not saved: clear them all, then fill the saved few. */
	memset(out->saved_offset, 0, sizeof out->saved_offset);
	memset(out->saved_base, SW_SWU_BASE_CFA, sizeof out->saved_base);
	for (uint64_t m = s->saved_mask; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);

		if (r >= SW_MAX_REGS)
			break;
		out->saved_offset[r] = s->saved[r];
		if (s->based_mask & BIT(r))
			out->saved_base[r] = s->base[r];
	}
}

bool swu_state_free_slot(const struct swu_state *s, int32_t cfa_offset)
{
	if (cfa_offset >= 0 || cfa_offset < -s->sp_depth)
		return false;
	for (uint64_t m = s->saved_mask & ~s->based_mask; m; m &= m - 1)
		if (s->saved[__builtin_ctzll(m)] == cfa_offset)
			return false;
	return true;
}
