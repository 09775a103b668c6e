/*
 * analyze.h (internal) - unwind rules from the instructions themselves.
 *
 * For code that has no CFI, or CFI that SWU cannot express (PLT entries,
 * hand-written assembly, stack realignment), Capstone disassembles the
 * function and a small abstract interpreter follows every path from the
 * entry: which registers hold the CFA plus a known offset (SP, FP, or any
 * other), which callee-saved registers have been stored into the frame
 * while they still held the caller's value, and where the return address
 * is.  The result is one rule per instruction; the instructions whose rule
 * SWU can say become row blobs (swu(5)), the others are left out.
 *
 * Nothing is guessed where the code is unclear: a jump into the middle of
 * an instruction, paths that meet with different frames, an instruction
 * Capstone cannot decode on a path, pointer authentication: the function
 * (or the instructions where the CFA is lost) is left out.
 */
#ifndef SW_UNWINDINFO_ANALYZE_H
#define SW_UNWINDINFO_ANALYZE_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/swu.h>

/* Hard limits against hostile or huge code. */
#define SWI_ANALYZE_MAX_CODE   (256u << 10)    /* bytes of one function */
#define SWI_ANALYZE_MAX_INSNS  65536           /* instructions of one function */

/* Modes of swi_analyze(). */
enum {
	/*
	 * A PLT entry or similar stub: code after an indirect jump that no
	 * path reaches is entered afresh (lazy binding jumps back into the
	 * entry), so it starts from the entry state.
	 */
	SWI_ANALYZE_STUB = 1
};

/* Why an analysis failed (counted by the caller). */
enum {
	SWI_AFAIL_DECODE = 1,           /* bytes Capstone cannot decode on a path, or truncated */
	SWI_AFAIL_BRANCH,               /* a branch into the middle of an instruction */
	SWI_AFAIL_MERGE,                /* paths meet with different frames */
	SWI_AFAIL_UNREACHED,            /* code no path reaches and no jump table explains */
	SWI_AFAIL_PTRAUTH,              /* pointer authentication (the row form has no signed RA) */
	SWI_AFAIL_LIMIT,                /* too big */
	SWI_AFAIL_NOTHING               /* no instruction has an expressible rule */
};

/* The rule at one instruction (before it executes). */
struct swi_arule {
	uint32_t offset;                /* of the instruction, from the function's start */
	uint32_t length;
	uint8_t reached;                /* a path reaches it (else padding: its neighbour's rule) */
	uint8_t ok;                     /* the rule is expressible in SWU */
	uint8_t ra_in_lr;               /* arm64: the return address is still in lr */
	uint8_t weak;                   /* reached only past calls (which may not return) */
	uint32_t cfa_reg;               /* CFA = cfa_reg + cfa_offset (when ok) */
	int32_t cfa_offset;
	uint64_t saved_mask;            /* bit r: the caller's r is at [CFA + saved[r]] */
	int32_t saved[SW_MAX_REGS];
	uint64_t rel_mask;              /* bit r: r holds CFA + rel[r] (SP among them) */
	int32_t rel[SW_MAX_REGS];
};

struct swi_analysis {
	struct swi_arule *rules;        /* one per instruction, by offset */
	size_t n;
	int fail;                       /* 0, or SWI_AFAIL_* when nothing could be described */
};

/*
 * Analyze the `size` bytes of code at `code`, loaded at `addr` (branch
 * targets are absolute).  SW_OK with out->fail == 0 and a rule per
 * instruction, SW_OK with out->fail set when the function cannot be
 * described, SW_E_NOMEM, SW_E_INVAL.  Free with swi_analysis_free().
 */
sw_status swi_analyze(sw_arch arch, const uint8_t *code, size_t size, uint64_t addr,
                      unsigned mode, struct swi_analysis *out);
void swi_analysis_free(struct swi_analysis *an);

/*
 * The pieces of an analysis: maximal runs of instructions whose rule is
 * expressible, each as an SWU row blob.  `piece` is called for each with
 * its offset and size within the function and the blob (valid during the
 * call); a non-zero status from it stops.
 */
typedef sw_status (*swi_piece_fn)(void *ctx, uint32_t offset, uint32_t size,
                                  const uint8_t *blob, size_t blob_size);
sw_status swi_analysis_pieces(const struct swi_analysis *an, sw_arch arch, uint32_t code_size,
                              swi_piece_fn piece, void *ctx);

#endif /* SW_UNWINDINFO_ANALYZE_H */
