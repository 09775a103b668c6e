/*
 * verify_rows.c - row blobs (imported CFI) against the instruction analysis.
 *
 * Rows are not tied to instructions, so the check is per instruction: the
 * rule the decoder gives at each instruction's offset must agree with
 * what the analysis (analyze.c) derives from the code.  "Agree" allows
 * what CFI may legitimately leave unsaid: the CFA may be computed from any
 * register that holds CFA + a known offset, and a callee-saved register
 * may go unmentioned (or stay "saved" after an epilog's pop) while it
 * still holds its caller's value.  A mismatch is a CFA the code does not
 * have, a slot other than the one the code used, or a register the code
 * has overwritten with no slot SWU knows.
 *
 * Where the analysis has no rule (an instruction it cannot describe, code
 * only reached past a call that may not return) the instruction is
 * skipped and counted; where it fails for the whole function, the
 * function is not verified and the result says why.
 */
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "arch.h"
#include "analyze.h"
#include "swu_format.h"
#include "swu_state.h"
#include "verify_job.h"

#define BIT(r) (1ULL << (r))

/* SWI_AFAIL_* -> SW_VERIFY_* */
static unsigned reason_of(int fail)
{
	switch (fail) {
	case SWI_AFAIL_DECODE:    return SW_VERIFY_UNDECODABLE;
	case SWI_AFAIL_BRANCH:    return SW_VERIFY_BRANCH;
	case SWI_AFAIL_MERGE:     return SW_VERIFY_MERGE;
	case SWI_AFAIL_UNREACHED: return SW_VERIFY_UNREACHED;
	case SWI_AFAIL_PTRAUTH:   return SW_VERIFY_PTRAUTH;
	case SWI_AFAIL_LIMIT:     return SW_VERIFY_LIMIT;
	default:                  return SW_VERIFY_NO_RULE;
	}
}

enum row_verdict { ROW_OK, ROW_SKIP, ROW_MISMATCH };

/* "cfa = rsp + 16" */
static void cfa_text(const struct verify_job *j, const sw_swu_rule *r, char *buf, size_t len)
{
	char b[24];

	snprintf(buf, len, "cfa = %s %c %ld", verify_reg_name(j, r->cfa_reg, b, sizeof b),
	         r->cfa_offset < 0 ? '-' : '+', labs((long)r->cfa_offset));
}

/* The SWU rule at one instruction against the analysis's. */
static enum row_verdict check_row(const struct verify_job *j, const sw_swu_rule *r,
                                  const struct swi_arule *ar, char *expected, size_t elen,
                                  char *why, size_t wlen)
{
	const struct swi_arch *a = j->a;
	uint64_t track = a->callee_saved | (a->lr_reg >= 0 ? BIT(a->lr_reg) : 0);
	char b[24], cfa[64];

	cfa_text(j, r, cfa, sizeof cfa);
	snprintf(expected, elen, "%s", cfa);
	if (r->cfa_deref || (!a->entry_ra_in_lr && r->ra_offset != a->entry_ra_offset))
		return ROW_SKIP;
	if (r->cfa_reg >= SW_MAX_REGS || r->cfa_reg >= 64 || !(ar->rel_mask & BIT(r->cfa_reg)))
		return ROW_SKIP;        /* the analysis does not know that register */
	if (ar->rel[r->cfa_reg] != -r->cfa_offset) {
		const char *name = verify_reg_name(j, r->cfa_reg, b, sizeof b);

		snprintf(why, wlen, "the code has %s = cfa %c %ld, so the CFA is %s %c %ld",
		         name, ar->rel[r->cfa_reg] < 0 ? '-' : '+', labs((long)ar->rel[r->cfa_reg]),
		         name, ar->rel[r->cfa_reg] < 0 ? '+' : '-', labs((long)ar->rel[r->cfa_reg]));
		return ROW_MISMATCH;
	}
	for (uint64_t m = (r->saved_mask | ar->saved_mask) & track; m; m &= m - 1) {
		unsigned reg = (unsigned)__builtin_ctzll(m);
		bool in_s = r->saved_mask & BIT(reg), in_a = ar->saved_mask & BIT(reg);
		bool modified = ar->modified & BIT(reg);
		const char *name = verify_reg_name(j, reg, b, sizeof b);

		if (in_s && r->saved_base[reg] != SW_SWU_BASE_CFA)
			return ROW_SKIP;
		if (in_s && in_a && r->saved_offset[reg] == ar->saved[reg])
			continue;
		if (in_s)
			snprintf(expected, elen, "%s, %s at [cfa - %ld]", cfa, name,
			         -(long)r->saved_offset[reg]);
		if (in_s && in_a) {
			snprintf(why, wlen, "the code saved %s at [cfa - %ld]", name, -(long)ar->saved[reg]);
			return ROW_MISMATCH;
		}
		if (!modified)
			continue;       /* it still holds the caller's value: either way is right */
		if (in_s) {
			snprintf(why, wlen, "the code has overwritten %s and saved it nowhere the analysis sees",
			         name);
		} else {
			snprintf(expected, elen, "%s, %s not saved", cfa, name);
			snprintf(why, wlen, "the code saved %s at [cfa - %ld] and has overwritten it", name,
			         -(long)ar->saved[reg]);
		}
		return ROW_MISMATCH;
	}
	return ROW_OK;
}

/* Rows describe a function from its entry: the rule at offset 0 must be the entry's. */
static bool starts_at_entry(const struct verify_job *j)
{
	struct swu_state s;
	sw_swu_rule want, got;

	swu_state_init(&s, j->a);
	swu_state_rule(&s, SW_SWU_BODY, &want);
	if (sw_swu_decode(j->blob, j->blob_size, 0, &got) != SW_OK)
		return false;
	return got.cfa_reg == want.cfa_reg && got.cfa_offset == want.cfa_offset &&
	       got.saved_mask == want.saved_mask && !got.cfa_deref;
}

sw_status verify_rows(const struct verify_job *j)
{
	struct swi_analysis an;
	sw_status st;

	if (!starts_at_entry(j)) {
		j->res->reason = SW_VERIFY_NOT_ENTRY;
		return SW_E_UNSUPPORTED;
	}
	if ((st = swi_analyze(j->arch, j->code, j->size, j->addr, 0, &an)) != SW_OK)
		return st;
	if (an.fail) {
		j->res->reason = reason_of(an.fail);
		return SW_E_UNSUPPORTED;
	}
	for (size_t i = 0; i < an.n && st == SW_OK; i++) {
		const struct swi_arule *ar = &an.rules[i];
		char expected[128], why[192];
		enum row_verdict v;
		sw_swu_rule r;

		if (!ar->reached || !ar->ok) {
			j->res->skipped++;
			continue;
		}
		if ((st = sw_swu_decode(j->blob, j->blob_size, ar->offset, &r)) != SW_OK)
			break;
		v = check_row(j, &r, ar, expected, sizeof expected, why, sizeof why);
		/* Past a call that may not return, the analysis may be following the wrong path. */
		if (v == ROW_SKIP || (v == ROW_MISMATCH && ar->weak)) {
			j->res->skipped++;
			continue;
		}
		if (v == ROW_MISMATCH) {
			st = verify_mismatch(j, ar->offset, ar->offset, SW_SWU_BODY, expected, "%s", why);
			break;
		}
		j->res->instructions++;
	}
	swi_analysis_free(&an);
	return st;
}
