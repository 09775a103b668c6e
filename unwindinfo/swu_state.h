/*
 * swu_state.h (internal) - the frame state that unwind operations change.
 *
 * The builder, the validator, the decoder and the dumper all replay ops
 * through swu_state_apply(), so a blob the builder accepts is exactly a
 * blob the validator accepts, and the decoder cannot be led by a hostile
 * blob into a state the builder would have refused.
 *
 * Depths are measured down from the CFA: sp_depth = CFA - SP.  A saved
 * register's slot is CFA-relative (negative: below the CFA).  Body ops
 * (argument pushes) move SP too; `args` counts what they pushed so that
 * nothing pops more than was pushed.
 *
 * Row ops (imported CFI) set the same fields directly: the CFA on any
 * register (cfa_on_fp with fp_reg, which need not be a frame register),
 * any register saved at any CFA offset, and, where the return address
 * arrives on the stack, its slot (ra_offset).  They check only what keeps
 * the state sane (register numbers, offsets within SW_SWU_MAX_FRAME): the
 * compiler's CFI is the authority on the rest.  Two of them say what GCC's
 * i386 stack realignment needs: a CFA read from memory (cfa_deref) and a
 * register saved relative to another register of this frame (based_mask).
 */
#ifndef SW_UNWINDINFO_SWU_STATE_H
#define SW_UNWINDINFO_SWU_STATE_H

#include <stdbool.h>
#include <stdint.h>
#include <stackwalk/swu.h>
#include "arch.h"
#include "swu_format.h"

struct swu_state {
	const struct swi_arch *arch;
	int32_t sp_depth;               /* CFA - SP */
	int32_t fp_depth;               /* CFA - frame register, while fp_live */
	uint32_t fp_reg;
	bool fp_live;                   /* fp_reg holds this frame's frame pointer */
	bool cfa_on_fp;                 /* the CFA is computed from fp_reg */
	bool ra_signed;                 /* the return address carries an authentication code */
	int32_t args;                   /* bytes of outgoing arguments pushed in the body */
	int32_t ra_offset;              /* the return address is at [CFA + ra_offset] (no link register) */
	uint64_t saved_mask;            /* bit r: r's caller value is at [CFA + saved[r]] */
	int32_t saved[SW_MAX_REGS];
	/* Row ops only: */
	bool cfa_deref;                 /* CFA = [fp_reg + fp_depth] (cfa_on_fp too) */
	uint64_t based_mask;            /* bit r (within saved_mask): the slot is
	                                 * [base[r] + saved[r]], not CFA-relative */
	uint8_t base[SW_MAX_REGS];
};

/* The state at a method's first instruction. */
void swu_state_init(struct swu_state *s, const struct swi_arch *arch);

/*
 * Apply one op.  SW_E_INVAL when it makes no sense in this state (a
 * register that is not callee-saved, a pop of the wrong slot, SP above the
 * return address...), SW_E_LIMIT when the frame would exceed
 * SW_SWU_MAX_FRAME.  On error the state is unchanged.  Whether the op may
 * appear in a prolog or an epilog is the caller's business.
 */
sw_status swu_state_apply(struct swu_state *s, const struct swu_op *op);

/*
 * True when the frame is fully torn down: only the return address is left
 * (possibly still signed: retaa authenticates as it returns).
 */
bool swu_state_is_entry(const struct swu_state *s);

/* Describe the state as a rule. */
void swu_state_rule(const struct swu_state *s, sw_swu_region region, sw_swu_rule *out);

/*
 * Is [CFA + cfa_offset] (below the CFA) a slot of the frame the state
 * describes, at or above SP, that no register was saved to?  What a
 * funclet's PSP slot must be in its body state.
 */
bool swu_state_free_slot(const struct swu_state *s, int32_t cfa_offset);

/*
 * swu_walk - parse and check a whole blob, replaying every op: what
 * sw_swu_validate does.  The visitor (optional, as is each of its hooks)
 * sees each item once it has been checked; *where (optional) receives the
 * byte offset of the item that failed.
 */
struct swu_visitor {
	void (*header)(void *ctx, const sw_swu_header *h);
	/* e is NULL for a prolog or body op; s is the state just after the op. */
	void (*op)(void *ctx, const struct swu_epilog *e, const struct swu_op *op,
	           const struct swu_state *s);
	void (*epilog)(void *ctx, unsigned index, const struct swu_epilog *e);
	/* The body op section begins (only when the blob has one). */
	void (*body)(void *ctx, const sw_swu_header *h);
	/* The GC section begins (only when the blob has one). */
	void (*gc)(void *ctx, const sw_swu_header *h);
	/* One checked GC location; `ranges` holds exactly its range bytes. */
	void (*gc_loc)(void *ctx, const struct swu_gc_loc *loc, const struct swu_reader *ranges);
};

sw_status swu_walk(const void *blob, size_t size, const struct swu_visitor *v,
                   void *ctx, size_t *where);

#endif /* SW_UNWINDINFO_SWU_STATE_H */
