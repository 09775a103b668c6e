/*
 * iter_unwind.c - the virtual unwind of one managed frame.
 *
 * Find the method's SWU rule at the IP's offset, its body rule or the
 * decoder's, and unwind by it (iter_unwind.h: swi_unwind_body, the step
 * every walk shares).  Nothing here knows an architecture: the rule and
 * the swi_arch table say it all.
 */
#include "iter_unwind.h"

__attribute__((noinline)) sw_status swi_read_word_slow(const sw_memory *m, unsigned p, uint64_t addr,
                                                      uint64_t *out)
{
	return swi_read_ptr(m, p, addr, out);
}

sw_status swi_unwind_managed(struct swi_iter *it)
{
	const struct swi_arch *a = it->arch;
	const sw_code_info *code = it->code;
	uint64_t ip = it->rd.cur.regs[a->ip_reg];
	const uint32_t *saved;
	const struct swu_body_rule *br = swi_body_rule_of(code, &saved);
	struct swu_body_rule decoded_br;
	struct swi_body_unwind u;
	uint32_t offset;
	sw_swu_rule rule;
	sw_status st;

	if (ip < code->start || ip - code->start > code->size)
		return SW_E_BADIP;
	offset = (uint32_t)(ip - code->start);
	swi_body_unwind_init(it, &u);
	/* Every frame but the active one stopped at a return address: in the body, its rule is at hand. */
	if (!it->active && ((offset >= br->lo && offset < br->hi) || (offset >= br->lo2 && offset < br->hi2)))
		return swi_unwind_body(it, &u, br, saved, NULL, NULL, 0, 0);
	st = it->active ? sw_swu_decode(code->unwind, code->unwind_size, offset, &rule)
	                : sw_swu_decode_return_address(code->unwind, code->unwind_size, offset, &rule);
	if (st != SW_OK)
		return st;
	swu_body_rule_fields(&rule, &decoded_br);
	return swi_unwind_body(it, &u, &decoded_br, NULL, &rule, NULL, 0, 0);
}
