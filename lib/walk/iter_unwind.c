/*
 * iter_unwind.c - the virtual unwind of one managed frame.
 *
 * Decode the method's SWU rule at the IP's offset, compute the CFA (the
 * caller's SP), and read the return address and every register the method
 * saved.  Nothing here knows an architecture: the rule and the swi_arch
 * table say it all.
 */
#include "iter_unwind.h"

__attribute__((noinline)) sw_status swi_read_word_slow(const sw_memory *m, unsigned p, uint64_t addr,
                                                      uint64_t *out)
{
	return swi_read_ptr(m, p, addr, out);
}

/*
 * Read one target pointer: the walk's most frequent operation.  In the
 * direct window of a little-endian host this is one load of the pointer's
 * width, without swi_read's copy; anything else goes through swi_read_ptr.
 */
static inline sw_status read_word(const struct swi_iter *it, uint64_t addr, uint64_t *out)
{
	const sw_memory *m = it->thread->memory;
	unsigned p = it->arch->ptr_size;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t end = addr + p;

	if (SWI_LIKELY(end >= addr && addr >= m->direct_lo && end <= m->direct_hi)) {
		if (p == 8 || p == 4) {
			*out = swi_load_le(m->direct_host + (addr - m->direct_lo), p);
			return SW_OK;
		}
	}
#endif
	return swi_read_word_slow(m, p, addr, out);
}

/*
 * Callee-saved registers the method did not touch keep their values: copy
 * them to the caller.  Returns the registers kept.
 */
static SWI_ALWAYS_INLINE uint64_t keep_registers(struct swi_iter *it)
{
	sw_regdisplay *rd = &it->rd;
	uint64_t keep = swi_kept_registers(it);

	rd->caller.arch = rd->cur.arch;
	rd->caller.reserved = 0;
	rd->caller.valid = rd->cur.valid & keep;
	for (uint64_t m = rd->caller.valid; m; m &= m - 1) {
		unsigned r = (unsigned)__builtin_ctzll(m);
		rd->caller.regs[r] = rd->cur.regs[r];
		rd->caller_loc[r] = rd->cur_loc[r];
	}
	return keep;
}

/* Read a register the method saved at `slot` into the caller's context. */
static SWI_ALWAYS_INLINE sw_status restore_saved(struct swi_iter *it, unsigned r, uint64_t slot)
{
	sw_status st = read_word(it, slot, &it->rd.caller.regs[r]);

	if (st != SW_OK)
		return st;
	it->rd.caller_loc[r] = slot;
	it->rd.caller.valid |= BIT(r);
	return SW_OK;
}

/* The return address and the CFA complete the caller's context. */
static SWI_ALWAYS_INLINE sw_status finish_caller(struct swi_iter *it, uint64_t cfa, int ra_in_reg, unsigned ra_reg,
                               int32_t ra_offset, int ra_signed)
{
	const struct swi_arch *a = it->arch;
	sw_regdisplay *rd = &it->rd;
	uint64_t ra, ra_loc;
	sw_status st;

	if (ra_in_reg) {
		if (ra_reg >= a->nregs || !(rd->cur.valid & BIT(ra_reg)))
			return SW_E_NOREG;
		ra = rd->cur.regs[ra_reg];
		ra_loc = rd->cur_loc[ra_reg];
	} else {
		ra_loc = cfa + (uint64_t)(int64_t)ra_offset;
		st = read_word(it, ra_loc, &ra);
		if (st != SW_OK)
			return st;
	}
	if (ra_signed)
		ra &= ~it->thread->ptrauth_mask;
	rd->caller.regs[a->ip_reg] = ra;
	rd->caller_loc[a->ip_reg] = ra_loc;
	rd->caller.regs[a->sp_reg] = cfa;
	rd->caller_loc[a->sp_reg] = 0;
	rd->caller.valid |= BIT(a->ip_reg) | BIT(a->sp_reg);
	rd->caller_valid = 1;
	return SW_OK;
}


sw_status swi_unwind_managed(struct swi_iter *it)
{
	const struct swi_arch *a = it->arch;
	const sw_thread *t = it->thread;
	const sw_code_info *code = it->code;
	const sw_context *cur = &it->rd.cur;
	uint64_t ip = cur->regs[a->ip_reg], sp = cur->regs[a->sp_reg];
	uint64_t keep, cfa;
	uint32_t offset;
	sw_swu_rule rule;
	sw_status st;

	if (ip < code->start || ip - code->start > code->size)
		return SW_E_BADIP;
	offset = (uint32_t)(ip - code->start);
	/* Every frame but the active one stopped at a return address. */
	if (it->active) {
		st = sw_swu_decode(code->unwind, code->unwind_size, offset, &rule);
	} else {
		const uint32_t *saved;
		const struct swu_body_rule *br = swi_body_rule_of(code, &saved);

		if ((offset >= br->lo && offset < br->hi) || (offset >= br->lo2 && offset < br->hi2))
		{
			struct swi_body_unwind u;

			swi_body_unwind_init(it, &u);
			return swi_unwind_body(it, &u, br, saved, NULL, 0, 0);
		}
		st = sw_swu_decode_return_address(code->unwind, code->unwind_size, offset, &rule);
	}
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
	/* Only an active leaf that has not touched the stack (its return address still in a register) may stay. */
	if (!swi_cfa_moves_up(cfa, sp, it->thread->stack_hi, rule.ra_in_reg && it->active))
		return SW_E_BADSP;

	keep = keep_registers(it);
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
		if ((st = restore_saved(it, r, slot)) != SW_OK)
			return st;
	}
	return finish_caller(it, cfa, (int)rule.ra_in_reg, rule.ra_reg, rule.ra_offset,
	                     (int)rule.ra_signed);
}
