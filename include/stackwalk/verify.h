/*
 * verify.h - check SWU metadata against the machine code it describes.
 *
 * A JIT that describes its prologs and epilogs by hand can describe them
 * wrongly: a push of the wrong register, an allocation of the wrong size,
 * an op at an offset one instruction off.  The walker cannot tell; it
 * unwinds to a wrong frame.  sw_unwind_verify() disassembles the method
 * (Capstone: x86, x86-64, arm64) and checks every unwind operation against
 * the instruction that ends at its offset, and every instruction of the
 * prolog and the epilogs against the operations: the register pushed or
 * stored and its slot, the stack adjustment, the frame register set, the
 * restores and the return.  Blobs of row operations (imported CFI), and
 * blobs with no operation at all, are checked rule by rule against the
 * library's instruction analysis.
 */
#ifndef STACKWALK_VERIFY_H
#define STACKWALK_VERIFY_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Why a method could not be verified at all (sw_verify_result.reason). */
enum {
	SW_VERIFY_CHECKED = 0,          /* it was verified (or a mismatch was found) */
	SW_VERIFY_UNDECODABLE = 1,      /* bytes Capstone cannot decode where they matter */
	SW_VERIFY_BRANCH = 2,           /* a branch into the middle of an instruction */
	SW_VERIFY_MERGE = 3,            /* paths meet with different frames */
	SW_VERIFY_UNREACHED = 4,        /* code no path reaches and no jump table explains */
	SW_VERIFY_PTRAUTH = 5,          /* pointer authentication, which the analysis does not follow */
	SW_VERIFY_LIMIT = 6,            /* too big to analyse */
	SW_VERIFY_NO_RULE = 7,          /* the analysis finds no instruction with a describable frame */
	SW_VERIFY_NOT_ENTRY = 8,        /* rows that do not start at a function's entry (a split-off part) */
	SW_VERIFY_REASON_COUNT = 9
};

/* What sw_unwind_verify() found. */
typedef struct sw_verify_result {
	uint32_t offset;                /* code offset of the first mismatch: the end of the op (and
	                                 * instruction) in prolog and epilog form, the instruction's
	                                 * start in row form */
	uint32_t insn_offset;           /* where the instruction found there starts */
	uint32_t region;                /* an sw_swu_region: prolog, body or epilog */
	uint32_t reason;                /* SW_VERIFY_*: why it could not be verified */
	uint32_t ops;                   /* unwind operations matched with an instruction */
	uint32_t instructions;          /* instructions checked */
	uint32_t skipped;               /* instructions whose frame the analysis could not follow (rows) */
	uint32_t rows;                  /* 1: checked rule by rule (a row blob, or one with no ops) */
	char expected[128];             /* what the SWU says there: its ops ("push rbx"), or its rule */
	char found[128];                /* the instruction there, as Capstone prints it */
	char why[192];                  /* how they differ */
} sw_verify_result;

/*
 * sw_unwind_verify - check the SWU blob of a method against its `code_size`
 * bytes of machine code at `code`, loaded at `address` (branch targets are
 * absolute; any address works for code that is not running).  The blob's
 * architecture must be `arch`; its code size at most `code_size`.
 *
 * Returns SW_OK when everything matches; SW_E_MISMATCH with the first
 * mismatch in *result; SW_E_UNSUPPORTED when the method cannot be
 * verified (result->reason says why) or Capstone lacks the architecture;
 * SW_E_BADMETA or SW_E_TRUNCATED for a blob sw_swu_validate() refuses;
 * SW_E_INVAL for bad arguments; SW_E_NOMEM.  *result is filled in every
 * case (counts so far).
 */
SW_API sw_status sw_unwind_verify(sw_arch arch, const void *code, size_t code_size,
                                  uint64_t address, const void *blob, size_t blob_size,
                                  sw_verify_result *result);

/* sw_verify_reason_name - a short name for an SW_VERIFY_* reason, or NULL. */
SW_API const char *sw_verify_reason_name(unsigned reason);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_VERIFY_H */
