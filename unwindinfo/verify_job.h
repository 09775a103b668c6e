/*
 * verify_job.h (internal) - what the two verifiers share.
 *
 * sw_unwind_verify() (verify.c) sends a blob of prolog and epilog ops to
 * verify_ops.c, which pairs each op with the instruction ending at its
 * offset, and a blob of row ops (imported CFI) to verify_rows.c, which
 * compares its rule at every instruction with the instruction analysis
 * (analyze.c).  Both read the machine code through analyze.c's effects,
 * so that the analysis and the verifier understand instructions alike.
 */
#ifndef SW_UNWINDINFO_VERIFY_JOB_H
#define SW_UNWINDINFO_VERIFY_JOB_H

#include <stdarg.h>
#include <stdint.h>
#include <stackwalk/swu.h>
#include <stackwalk/verify.h>
#include "arch.h"

struct verify_job {
	sw_arch arch;
	const struct swi_arch *a;
	const uint8_t *code;
	uint32_t size;                  /* the blob's code size (<= the caller's) */
	uint64_t addr;
	const uint8_t *blob;
	size_t blob_size;
	sw_verify_result *res;
};

/* Prolog and epilog form: SW_OK, SW_E_MISMATCH, SW_E_UNSUPPORTED, SW_E_NOMEM. */
sw_status verify_ops(const struct verify_job *j);

/* Row form: the same statuses. */
sw_status verify_rows(const struct verify_job *j);

/*
 * Record the first mismatch: where, the instruction found there (Capstone's
 * text of the instruction starting at insn_offset, unless it is past the
 * code), what SWU expected, and why they differ.  Returns SW_E_MISMATCH.
 */
sw_status verify_mismatch(const struct verify_job *j, uint32_t offset, uint32_t insn_offset,
                          unsigned region, const char *expected, const char *fmt, ...)
	__attribute__((format(printf, 6, 7)));

/* A register's name in the job's architecture ("rbx"), or "r<n>". */
const char *verify_reg_name(const struct verify_job *j, unsigned reg, char *buf, size_t len);

#endif /* SW_UNWINDINFO_VERIFY_JOB_H */
