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

/*
 * One instruction reduced to what it does to the frame: the first pass of
 * the analysis, which the verifier (verify.c) also reads, so that both
 * understand the machine code alike.  Registers are the library's numbers.
 */
#define SWI_NOREG 0xff

enum swi_effect_op {
	SWI_EFF_GENERIC,            /* only `writes` */
	SWI_EFF_NOP,                /* padding */
	SWI_EFF_STORE,              /* [base + addr_off] = r1 (, [.. + 8] = r2); base += wb */
	SWI_EFF_LOAD,               /* r1 (, r2) = [base + addr_off]; base += wb */
	SWI_EFF_SET,                /* r1 = base + imm (+ or - the constant in kreg) */
	SWI_EFF_CONST,              /* r1 = kval (mov, movz) */
	SWI_EFF_CONST_PART,         /* r1's 16 bits at kshift = kval (movk) */
	SWI_EFF_LEAVE,              /* SP = FP; pop FP */
	SWI_EFF_CALL,
	SWI_EFF_RET,
	SWI_EFF_JMP,                /* direct, unconditional */
	SWI_EFF_JCC,                /* direct, conditional */
	SWI_EFF_IJMP,               /* indirect: a jump table, or a tail call */
	SWI_EFF_STOP,               /* hlt, ud2, int3, brk: no successor */
	SWI_EFF_PTRAUTH,            /* paciasp & co (kval: the hint number): cannot be described */
	SWI_EFF_BAD                 /* undecodable */
};

struct swi_effect {
	uint32_t off;
	uint8_t len;
	uint8_t op;             /* enum swi_effect_op */
	uint8_t r1, r2;         /* registers stored or loaded (SWI_NOREG: none); r1 also SET's target */
	uint8_t base;           /* SET's source, a memory access's base register */
	uint8_t full;           /* the stored register is whole (a save candidate) */
	int32_t imm;            /* SET's addend, a memory access's offset from the old base */
	int32_t wb;             /* added to base after the access */
	uint8_t kreg;           /* SET: a register holding a known constant, or SWI_NOREG */
	int8_t ksign;           /* SET: +1 or -1 times that constant */
	uint8_t kshift;         /* CONST_PART: the bit position */
	int64_t kval;           /* CONST, CONST_PART: the value */
	uint64_t writes;        /* other registers written (their value becomes unknown) */
	uint64_t target;        /* direct branch target (absolute) */
};

/*
 * Decode the `size` bytes at `code` (loaded at `addr`) into one effect per
 * instruction, in order; bytes Capstone cannot decode become one
 * SWI_EFF_BAD (on x86, everything from there on).  *out is malloc'd (free
 * it).  SW_E_LIMIT beyond SWI_ANALYZE_MAX_INSNS, SW_E_NOMEM, SW_E_INVAL,
 * SW_E_UNSUPPORTED.
 */
sw_status swi_decode(sw_arch arch, const uint8_t *code, size_t size, uint64_t addr,
                     struct swi_effect **out, size_t *n);

/* Capstone's text of the instruction at `code` ("push rbx"), or "(bad)". */
void swi_insn_text(sw_arch arch, const uint8_t *code, size_t size, uint64_t addr,
                   char *buf, size_t len);

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
	uint64_t modified;              /* bit r: tracked r no longer holds the caller's value */
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
