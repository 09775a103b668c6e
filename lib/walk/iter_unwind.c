/*
 * iter_unwind.c - the virtual unwind of one managed frame.
 *
 * Find the method's SWU rule at the IP's offset, its body rule or the
 * decoder's, and unwind by it (iter_unwind.h: swi_unwind_body, the step
 * every walk shares).  Nothing here knows an architecture: the rule and
 * the swi_arch table say it all.
 */
#include <string.h>
#include "iter_unwind.h"

__attribute__((noinline)) sw_status swi_read_word_slow(const sw_memory *m, unsigned p, uint64_t addr,
                                                      uint64_t *out)
{
	return swi_read_ptr(m, p, addr, out);
}

/* A decoded rule's number in a byte of the body form: one out of range stays out of range. */
static uint8_t narrow(uint32_t v)
{
	return v < 0xff ? (uint8_t)v : 0xff;
}

/*
 * The body form of a rule the decoder gave, for swi_unwind_body, which
 * reads its saved registers from the rule itself (their slots may be
 * relative to a register).
 */
static void body_form_of(const sw_swu_rule *r, struct swu_body_rule *br)
{
	memset(br, 0, sizeof *br);
	br->cfa_offset = r->cfa_offset;
	br->ra_offset = r->ra_offset;
	br->arch = narrow(r->arch);
	br->cfa_reg = narrow(r->cfa_reg);
	br->ra_in_reg = r->ra_in_reg != 0;
	br->ra_reg = narrow(r->ra_reg);
	br->ra_signed = r->ra_signed != 0;
	br->saved_mask = r->saved_mask;
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
	body_form_of(&rule, &decoded_br);
	return swi_unwind_body(it, &u, &decoded_br, NULL, &rule, NULL, 0, 0);
}
