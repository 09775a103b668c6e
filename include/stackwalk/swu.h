/*
 * swu.h - SWU, the compressed per-method unwind metadata.
 *
 * A JIT describes its prolog and epilogs instruction by instruction through
 * the builder while it emits them; the builder produces a compact blob.
 * The decoder gives the exact unwind rule at any instruction offset: in the
 * prolog, in the body, and inside every epilog.  The format is in swu(5).
 *
 * Every builder call names the code offset just past the instruction it
 * describes: its effect holds for every instruction pointer at or beyond
 * that offset (within its prolog or epilog).
 */
#ifndef STACKWALK_SWU_H
#define STACKWALK_SWU_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Hard limits against hostile blobs. */
#define SW_SWU_MAX_CODE_SIZE  (1u << 30)  /* bytes of code one blob may describe */
#define SW_SWU_MAX_OPS        256         /* unwind operations in one prolog or epilog */
#define SW_SWU_MAX_EPILOGS    1024
#define SW_SWU_MAX_FRAME      (1u << 28)  /* bytes a frame may allocate */
#define SW_SWU_MAX_GC_LOCATIONS 4096      /* GC locations (register or slot, with flags) */
#define SW_SWU_MAX_GC_RANGES  65536       /* live ranges of one GC location */
#define SW_SWU_MAX_ROW_OPS    8192        /* row operations (imported CFI) in one blob */

typedef struct sw_swu_builder sw_swu_builder;

/* sw_swu_builder_create - a builder for methods of `arch`. */
SW_API sw_status sw_swu_builder_create(sw_swu_builder **out, sw_arch arch);
/* sw_swu_builder_destroy - free it. */
SW_API void sw_swu_builder_destroy(sw_swu_builder *b);
/* sw_swu_builder_reset - forget everything described; start a new method. */
SW_API void sw_swu_builder_reset(sw_swu_builder *b);

/* Prolog operations, in the order the instructions execute. */
/* push reg: SP -= pointer size; [SP] = reg. */
SW_API sw_status sw_swu_push_reg(sw_swu_builder *b, uint32_t end, unsigned reg);
/* sub sp, size. */
SW_API sw_status sw_swu_alloc_stack(sw_swu_builder *b, uint32_t end, uint32_t size);
/* Establish the frame register: reg = SP + sp_offset (mov rbp, rsp; lea rbp, [rsp + n]). */
SW_API sw_status sw_swu_set_frame(sw_swu_builder *b, uint32_t end, unsigned reg, uint32_t sp_offset);
/* Save reg without moving SP: [SP + sp_offset] = reg. */
SW_API sw_status sw_swu_save_reg(sw_swu_builder *b, uint32_t end, unsigned reg, uint32_t sp_offset);
/*
 * arm64 prolog operations.  Registers may be x19-x28, fp, lr and d8-d15
 * (8-byte slots).  Pairs store reg1 at the lower address, reg2 8 bytes above.
 */
/* stp reg1, reg2, [sp, #-size]! : SP -= size; [SP] = reg1; [SP + 8] = reg2. */
SW_API sw_status sw_swu_push_reg_pair(sw_swu_builder *b, uint32_t end, unsigned reg1,
                                      unsigned reg2, uint32_t size);
/* str reg, [sp, #-size]! : SP -= size; [SP] = reg. */
SW_API sw_status sw_swu_push_reg_sized(sw_swu_builder *b, uint32_t end, unsigned reg, uint32_t size);
/* stp reg1, reg2, [sp, #sp_offset] : no SP change. */
SW_API sw_status sw_swu_save_reg_pair(sw_swu_builder *b, uint32_t end, unsigned reg1,
                                      unsigned reg2, uint32_t sp_offset);
/* paciasp: the return address in lr is signed from here on (until autiasp). */
SW_API sw_status sw_swu_sign_return_address(sw_swu_builder *b, uint32_t end);

/* The prolog ends at `end`; the body begins there. */
SW_API sw_status sw_swu_end_prolog(sw_swu_builder *b, uint32_t end);

/* Epilogs, any number, in ascending code order, after end_prolog. */
/* The epilog's first instruction starts at `start`. */
SW_API sw_status sw_swu_epilog_begin(sw_swu_builder *b, uint32_t start);
/* add sp, size. */
SW_API sw_status sw_swu_free_stack(sw_swu_builder *b, uint32_t end, uint32_t size);
/* SP = frame register + frame_offset (mov rsp, rbp; lea rsp, [rbp + n]). */
SW_API sw_status sw_swu_restore_sp_from_frame(sw_swu_builder *b, uint32_t end, int32_t frame_offset);
/* pop reg: reg = [SP]; SP += pointer size. */
SW_API sw_status sw_swu_pop_reg(sw_swu_builder *b, uint32_t end, unsigned reg);
/* Reload a register saved with sw_swu_save_reg: its value is live again. */
SW_API sw_status sw_swu_restore_reg(sw_swu_builder *b, uint32_t end, unsigned reg);
/* arm64 epilog operations, the inverses of the prolog's. */
/* ldp reg1, reg2, [sp], #size : both live again; SP += size. */
SW_API sw_status sw_swu_pop_reg_pair(sw_swu_builder *b, uint32_t end, unsigned reg1,
                                     unsigned reg2, uint32_t size);
/* ldr reg, [sp], #size. */
SW_API sw_status sw_swu_pop_reg_sized(sw_swu_builder *b, uint32_t end, unsigned reg, uint32_t size);
/* ldp reg1, reg2, [sp, #n] : both live again. */
SW_API sw_status sw_swu_restore_reg_pair(sw_swu_builder *b, uint32_t end, unsigned reg1, unsigned reg2);
/* autiasp: the return address in lr is authenticated (plain) again. */
SW_API sw_status sw_swu_auth_return_address(sw_swu_builder *b, uint32_t end);

/* The epilog ends at `end`, just past its return instruction. */
SW_API sw_status sw_swu_epilog_end(sw_swu_builder *b, uint32_t end);

/*
 * Body operations (x86 ESP frames): outgoing arguments pushed and popped in
 * the body move SP, so its depth is described at every instruction.  Any
 * number, in ascending order, outside the prolog and the epilogs; at each
 * epilog and at the end of the method the depth is back to the body's.
 */
/* push arg (or sub esp, n before a call): SP -= size. */
SW_API sw_status sw_swu_push_args(sw_swu_builder *b, uint32_t end, uint32_t size);
/* add esp, n after a call: SP += size. */
SW_API sw_status sw_swu_pop_args(sw_swu_builder *b, uint32_t end, uint32_t size);
/*
 * The call instruction ending at `end` calls a function that pops `size`
 * bytes of arguments itself (stdcall): SP += size once it has returned.
 * A frame whose IP is that return address with the call still in
 * progress (see sw_swu_decode_return_address) has them still pushed.
 */
SW_API sw_status sw_swu_call_pops_args(sw_swu_builder *b, uint32_t end, uint32_t size);

/*
 * Row operations: the generic form, for code whose frame is known as a
 * table of rules (DWARF CFI rows) rather than as prolog and epilog
 * instructions.  Each gives one rule that holds from `end` on, until a
 * later row operation changes it: any offset, in ascending order, several
 * at the same offset allowed.  They start from the architecture's state
 * at a method's first instruction; a method described by row operations
 * has no prolog, epilogs or body operations (SW_E_STATE once either kind
 * has begun).  Registers are the library's numbers (sw_arch).
 */
/* CFA = reg + offset (DW_CFA_def_cfa). */
SW_API sw_status sw_swu_def_cfa(sw_swu_builder *b, uint32_t end, unsigned reg, int32_t offset);
/* CFA = (the same register) + offset (DW_CFA_def_cfa_offset). */
SW_API sw_status sw_swu_def_cfa_offset(sw_swu_builder *b, uint32_t end, int32_t offset);
/*
 * The caller's reg is saved at [CFA + cfa_offset] (DW_CFA_offset).  The
 * return address column (x64 rip, x86 eip) moves the return address.
 */
SW_API sw_status sw_swu_saved_at(sw_swu_builder *b, uint32_t end, unsigned reg, int32_t cfa_offset);
/* reg holds its caller's value again (DW_CFA_same_value, DW_CFA_restore). */
SW_API sw_status sw_swu_same_value(sw_swu_builder *b, uint32_t end, unsigned reg);
/*
 * CFA = the pointer stored at [reg + offset] (DW_CFA_def_cfa_expression
 * "DW_OP_breg<reg> offset; DW_OP_deref": i386 stack realignment).
 */
SW_API sw_status sw_swu_def_cfa_deref(sw_swu_builder *b, uint32_t end, unsigned reg, int32_t offset);
/*
 * The caller's reg is saved at [base_reg + offset], base_reg's value in
 * this frame, not the CFA (DW_CFA_expression "DW_OP_breg<base_reg> offset").
 * Not the return address column (nor arm64's lr).
 */
SW_API sw_status sw_swu_saved_at_reg(sw_swu_builder *b, uint32_t end, unsigned reg,
                                     unsigned base_reg, int32_t offset);

/*
 * GC information (optional): where the method keeps object references, and
 * at which code offsets each holds a live one.  A range [start, end) lists
 * the offsets at which the location holds a live reference; a reference
 * live across a call must include the call's return address.  Each call
 * adds one range; a location may have any number.  Any time after
 * sw_swu_builder_create, in any order.
 */
enum {
	SW_GC_INTERIOR = 1,     /* points inside an object (a byref) */
	SW_GC_PINNED   = 2,     /* the object must not move */
	/*
	 * A funclet's stack slot in its parent's frame, at [parent CFA +
	 * cfa_offset]; the parent's CFA is read from the funclet's PSP slot
	 * (sw_swu_psp_slot), which the blob must have.  Stack slots only.
	 */
	SW_GC_PARENT_FRAME = 8
};
/* A stack slot at [CFA + cfa_offset] (pointer-sized) holds a reference in [start, end). */
SW_API sw_status sw_swu_gc_stack_slot(sw_swu_builder *b, int32_t cfa_offset, uint32_t flags,
                                      uint32_t start, uint32_t end);
/* Register `reg` holds a reference in [start, end). */
SW_API sw_status sw_swu_gc_register(sw_swu_builder *b, unsigned reg, uint32_t flags,
                                    uint32_t start, uint32_t end);

/*
 * sw_swu_psp_slot - the method is a funclet that keeps its parent's CFA
 * (the parent's caller SP: CoreCLR's PSPSym, the establisher frame) in the
 * pointer-sized slot at [CFA + cfa_offset] (below the CFA), written by
 * the end of its prolog and kept until its first epilog instruction.  The
 * walker finds the funclet's parent by that value, not by method handle,
 * and reports SW_GC_PARENT_FRAME slots relative to it.  Any time after
 * sw_swu_builder_create; a later call replaces the slot.  Not with row
 * operations.
 */
SW_API sw_status sw_swu_psp_slot(sw_swu_builder *b, int32_t cfa_offset);

/*
 * sw_swu_finish - check the description against a method of `code_size`
 * bytes and encode it into buf (capacity `cap`).  *len receives the blob's
 * size; when cap is too small SW_E_LIMIT is returned and *len says how much
 * is needed.
 */
SW_API sw_status sw_swu_finish(sw_swu_builder *b, uint32_t code_size,
                               void *buf, size_t cap, size_t *len);

/* Where in its method an instruction offset lies. */
typedef enum sw_swu_region {
	SW_SWU_PROLOG = 0,
	SW_SWU_BODY   = 1,
	SW_SWU_EPILOG = 2
} sw_swu_region;

/*
 * The unwind rule at one instruction offset.  CFA ("canonical frame
 * address") is the caller's stack pointer once this frame has returned.
 */
typedef struct sw_swu_rule {
	uint32_t arch;                  /* an sw_arch */
	uint32_t region;                /* an sw_swu_region */
	uint32_t cfa_reg;               /* CFA = regs[cfa_reg] + cfa_offset */
	int32_t cfa_offset;
	uint32_t ra_in_reg;             /* 1: return address is live in ra_reg (arm64 leaf) */
	uint32_t ra_reg;
	int32_t ra_offset;              /* otherwise at [CFA + ra_offset] */
	int32_t sp_offset;              /* SP = CFA - sp_offset where SP is known statically
	                                 * (a row blob knows it only while the CFA is SP-based) */
	uint64_t saved_mask;            /* bit r: register r saved at [CFA + saved_offset[r]] */
	int32_t saved_offset[SW_MAX_REGS];
	uint32_t ra_signed;             /* 1: the return address carries a pointer-authentication code */
	uint32_t reserved;
	/* Row blobs only (imported CFI); appended to keep the fields above in place. */
	uint32_t cfa_deref;             /* 1: CFA = [regs[cfa_reg] + cfa_offset] (one pointer) */
	uint8_t saved_base[SW_MAX_REGS];        /* saved r is at [base + saved_offset[r]]:
	                                         * SW_SWU_BASE_CFA for the CFA, otherwise the
	                                         * register whose value in this frame is base */
	uint32_t reserved2;             /* 0 (no padding: rules compare with memcmp) */
} sw_swu_rule;

/* sw_swu_rule.saved_base: the slot is CFA-relative. */
#define SW_SWU_BASE_CFA 0xffu

typedef struct sw_swu_header {
	uint32_t arch;                  /* an sw_arch */
	uint32_t version;
	uint32_t code_size;
	uint32_t prolog_size;
	uint32_t prolog_ops;
	uint32_t epilogs;
	uint32_t body_ops;              /* x86 argument pushes and pops */
	uint32_t gc_locations;          /* locations with GC live ranges (0: no GC information) */
	uint32_t row_ops;               /* row operations (0: prolog and epilog form) */
} sw_swu_header;

/* sw_swu_decode_header - read the blob's header; SW_E_BADMETA or SW_E_TRUNCATED if bad. */
SW_API sw_status sw_swu_decode_header(const void *blob, size_t size, sw_swu_header *out);

/*
 * sw_swu_decode - the rule at `offset` (0 <= offset <= code size).  Never
 * reads outside [blob, blob + size).
 */
SW_API sw_status sw_swu_decode(const void *blob, size_t size, uint32_t offset, sw_swu_rule *out);

/*
 * sw_swu_decode_return_address - the rule for a frame whose IP, at
 * `offset`, is the return address of a call still in progress (every frame
 * but the active one): identical to sw_swu_decode except that arguments the
 * callee pops on return (sw_swu_call_pops_args) are still on the stack.
 */
SW_API sw_status sw_swu_decode_return_address(const void *blob, size_t size, uint32_t offset,
                                              sw_swu_rule *out);

/* One live GC reference location at an offset, as the decoder reports it. */
typedef struct sw_swu_gc_slot {
	uint32_t in_register;   /* 1: in register `reg`; 0: at [CFA + cfa_offset] */
	uint32_t reg;
	int32_t cfa_offset;
	uint32_t flags;         /* SW_GC_* */
} sw_swu_gc_slot;

/* Called for each live location; return non-zero to stop. */
typedef int (*sw_swu_gc_fn)(void *data, const sw_swu_gc_slot *slot);

/*
 * sw_swu_gc_live - call `fn` for every location that holds a live reference
 * at `offset`.  A blob without GC information has none.  Never reads
 * outside the blob.
 */
SW_API sw_status sw_swu_gc_live(const void *blob, size_t size, uint32_t offset,
                                sw_swu_gc_fn fn, void *data);

/* sw_swu_validate - check the whole blob: every op, offset, register and limit. */
SW_API sw_status sw_swu_validate(const void *blob, size_t size);

/* sw_swu_dump - print the blob in readable form; stops with an error at the first bad byte. */
SW_API sw_status sw_swu_dump(FILE *out, const void *blob, size_t size);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_SWU_H */
