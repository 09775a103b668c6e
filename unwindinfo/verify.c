/*
 * verify.c - sw_unwind_verify(): check an SWU blob against machine code.
 *
 * The blob is validated first (a blob the decoder refuses is not worth
 * disassembling), then handed to the verifier of its form: prolog and
 * epilog ops (verify_ops.c) or rows (verify_rows.c).
 */
#include <stdio.h>
#include <string.h>
#include "util.h"
#include "arch.h"
#include "analyze.h"
#include "verify_job.h"

static const char *const reason_names[SW_VERIFY_REASON_COUNT] = {
	[SW_VERIFY_CHECKED] = "checked",
	[SW_VERIFY_UNDECODABLE] = "undecodable code",
	[SW_VERIFY_BRANCH] = "branch into an instruction",
	[SW_VERIFY_MERGE] = "paths meet with different frames",
	[SW_VERIFY_UNREACHED] = "unreachable code",
	[SW_VERIFY_PTRAUTH] = "pointer authentication",
	[SW_VERIFY_LIMIT] = "too big",
	[SW_VERIFY_NO_RULE] = "no describable frame",
	[SW_VERIFY_NOT_ENTRY] = "not a function entry",
};

SW_API const char *sw_verify_reason_name(unsigned reason)
{
	return reason < SW_VERIFY_REASON_COUNT ? reason_names[reason] : NULL;
}

const char *verify_reg_name(const struct verify_job *j, unsigned reg, char *buf, size_t len)
{
	const char *name = sw_arch_reg_name(j->arch, reg);

	if (name)
		return name;
	snprintf(buf, len, "r%u", reg);
	return buf;
}

sw_status verify_mismatch(const struct verify_job *j, uint32_t offset, uint32_t insn_offset,
                          unsigned region, const char *expected, const char *fmt, ...)
{
	sw_verify_result *r = j->res;
	va_list ap;

	r->offset = offset;
	r->insn_offset = insn_offset;
	r->region = region;
	snprintf(r->expected, sizeof r->expected, "%s", expected);
	if (insn_offset < j->size)
		swi_insn_text(j->arch, j->code + insn_offset, j->size - insn_offset,
		              j->addr + insn_offset, r->found, sizeof r->found);
	else
		snprintf(r->found, sizeof r->found, "(end of code)");
	va_start(ap, fmt);
	vsnprintf(r->why, sizeof r->why, fmt, ap);
	va_end(ap);
	return SW_E_MISMATCH;
}

SW_API sw_status sw_unwind_verify(sw_arch arch, const void *code, size_t code_size,
                                  uint64_t address, const void *blob, size_t blob_size,
                                  sw_verify_result *result)
{
	struct verify_job j;
	sw_swu_header h;
	sw_status st;

	if (!result)
		return SW_E_INVAL;
	memset(result, 0, sizeof *result);
	if (!code || !blob || !swi_arch_get(arch))
		return SW_E_INVAL;
	if ((st = sw_swu_validate(blob, blob_size)) != SW_OK ||
	    (st = sw_swu_decode_header(blob, blob_size, &h)) != SW_OK)
		return st;
	if (h.arch != (uint32_t)arch || h.code_size > code_size || address + h.code_size < address)
		return SW_E_INVAL;
	j.arch = arch;
	j.a = swi_arch_get(arch);
	j.code = code;
	j.size = h.code_size;
	j.addr = address;
	j.blob = blob;
	j.blob_size = blob_size;
	j.res = result;
	/*
	 * A blob with no op at all says the frame never changes (a leaf, or
	 * CFI with a single row): that is checked at every instruction, as rows.
	 */
	result->rows = h.row_ops != 0 || (h.prolog_ops == 0 && h.epilogs == 0 && h.body_ops == 0);
	return result->rows ? verify_rows(&j) : verify_ops(&j);
}
