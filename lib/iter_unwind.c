/*
 * iter_unwind.c - the virtual unwind of one managed frame.
 *
 * Decode the method's SWU rule at the IP's offset, compute the CFA (the
 * caller's SP), and read the return address and every register the method
 * saved.  Nothing here knows an architecture: the rule and the swi_arch
 * table say it all.
 */
#include "iter.h"

#define BIT(r) (1ULL << (r))

sw_status swi_unwind_managed(struct swi_iter *it)
{
	const struct swi_arch *a = it->arch;
	const sw_thread *t = it->thread;
	const sw_code_info *code = it->code;
	sw_regdisplay *rd = &it->rd;
	const sw_context *cur = &rd->cur;
	sw_context *caller = &rd->caller;
	uint64_t ip = cur->regs[a->ip_reg], sp = cur->regs[a->sp_reg];
	int quick = (it->flags & (SW_WALK_QUICKUNWIND | SW_WALK_LIGHTUNWIND)) != 0;
	uint64_t keep, cfa, ra, ra_loc;
	sw_swu_rule rule;
	sw_status st;

	if (ip < code->start || ip - code->start > code->size)
		return SW_E_BADIP;
	/* Every frame but the active one stopped at a return address. */
	if (it->active)
		st = sw_swu_decode(code->unwind, code->unwind_size, (uint32_t)(ip - code->start), &rule);
	else
		st = sw_swu_decode_return_address(code->unwind, code->unwind_size,
		                                  (uint32_t)(ip - code->start), &rule);
	if (st != SW_OK)
		return st;
	if (rule.arch != t->arch || rule.cfa_reg >= a->nregs)
		return SW_E_BADMETA;
	if (!(cur->valid & BIT(rule.cfa_reg)))
		return SW_E_NOREG;
	cfa = cur->regs[rule.cfa_reg] + (uint64_t)(int64_t)rule.cfa_offset;
	/* i386 stack realignment: the caller's SP was stored at [reg + offset]. */
	if (rule.cfa_deref && (st = swi_read_ptr(t->memory, a->ptr_size, cfa, &cfa)) != SW_OK)
		return st;

	/*
	 * Prevent a loop on bad metadata: the caller's SP lies above ours, on
	 * the stack.  Only an active leaf that has not touched the stack (its
	 * return address still in the link register) may leave SP unchanged:
	 * its caller, reached by return address, made a call and so has a frame.
	 */
	if (cfa > t->stack_hi || cfa < sp || (cfa == sp && !(rule.ra_in_reg && it->active)))
		return SW_E_BADSP;

	/* Callee-saved registers the method did not touch keep their values. */
	keep = a->callee_saved;
	if (quick)
		keep &= BIT(a->fp_reg);
	/* Floating-point callee-saved registers only when asked (the CLR's default too). */
	if (!(it->flags & SW_WALK_UNWIND_FLOATS))
		keep &= ~a->float_regs;
	caller->arch = cur->arch;
	caller->reserved = 0;
	caller->valid = cur->valid & keep;
	for (uint64_t m = caller->valid; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);
		caller->regs[r] = cur->regs[r];
		rd->caller_loc[r] = rd->cur_loc[r];
	}

	for (uint64_t m = rule.saved_mask & keep; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);
		unsigned base = rule.saved_base[r];
		uint64_t slot = cfa;

		/* A slot relative to a register's value in this frame, not the CFA. */
		if (base != SW_SWU_BASE_CFA) {
			if (base >= a->nregs || !(cur->valid & BIT(base)))
				return SW_E_NOREG;
			slot = cur->regs[base];
		}
		slot += (uint64_t)(int64_t)rule.saved_offset[r];
		st = swi_read_ptr(t->memory, a->ptr_size, slot, &caller->regs[r]);
		if (st != SW_OK)
			return st;
		rd->caller_loc[r] = slot;
		caller->valid |= BIT(r);
	}

	if (rule.ra_in_reg) {
		if (rule.ra_reg >= a->nregs || !(cur->valid & BIT(rule.ra_reg)))
			return SW_E_NOREG;
		ra = cur->regs[rule.ra_reg];
		ra_loc = rd->cur_loc[rule.ra_reg];
	} else {
		ra_loc = cfa + (uint64_t)(int64_t)rule.ra_offset;
		st = swi_read_ptr(t->memory, a->ptr_size, ra_loc, &ra);
		if (st != SW_OK)
			return st;
	}

	if (rule.ra_signed)
		ra &= ~t->ptrauth_mask;
	caller->regs[a->ip_reg] = ra;
	rd->caller_loc[a->ip_reg] = ra_loc;
	caller->regs[a->sp_reg] = cfa;
	rd->caller_loc[a->sp_reg] = 0;
	caller->valid |= BIT(a->ip_reg) | BIT(a->sp_reg);
	rd->caller_valid = 1;
	return SW_OK;
}
