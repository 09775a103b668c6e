/*
 * cfi_expr.h (internal) - a CFI rule's DWARF expression reduced to what
 * SWU can say: a register (or the CFA) plus an offset, maybe loaded from
 * memory.
 *
 * DW_CFA_def_cfa_expression, DW_CFA_expression and DW_CFA_val_expression
 * hold DWARF expressions, which SWU has no room for.  The ones real code
 * uses compute "register + constant", at most loaded once: glibc's and
 * the vDSO's signal frames (breg sp + n, and "breg sp + n; deref" for the
 * CFA), stack realignment ("breg fp - n; deref"), and the PLT, whose CFA
 * depends on where in a 16-byte stub the IP is:
 *
 *   x86-64: rsp + 8 + (((rip & 15) >= 11) << 3)
 *   i386:   esp + 4 + (((eip & 15) >= 11) << 2)
 *
 * So the expression is evaluated symbolically, with the IP known: each
 * value on the stack is a constant or one register plus a constant, and
 * an operation that would mix two registers, scale one, or read memory
 * anywhere but at the end makes the expression one SWU cannot say.  The
 * importer evaluates an expression that reads the IP at every address of
 * its row (cfi_import.c), so the IP's part becomes a row per change.
 *
 * Bounded against hostile CFI: at most SWI_CFI_EXPR_MAX_OPS ops, each run
 * once (no branches are taken), and a stack of SWI_CFI_EXPR_STACK values.
 */
#ifndef SW_UNWINDINFO_CFI_EXPR_H
#define SW_UNWINDINFO_CFI_EXPR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <elfutils/libdw.h>

#define SWI_CFI_EXPR_MAX_OPS 64         /* ops in one expression */
#define SWI_CFI_EXPR_STACK   16         /* values on the evaluation stack */

/* What the expression's result is relative to. */
enum swi_cfi_expr_base {
	SWI_CFI_EXPR_CONST,             /* nothing: a constant */
	SWI_CFI_EXPR_CFA,               /* the CFA (DW_OP_call_frame_cfa) */
	SWI_CFI_EXPR_REG                /* a DWARF register's value */
};

/* The result: base + offset, or the word loaded from there (deref). */
struct swi_cfi_expr_value {
	enum swi_cfi_expr_base base;
	uint64_t reg;                   /* DWARF register, with SWI_CFI_EXPR_REG */
	int64_t offset;                 /* sign-extended from the pointer width */
	bool deref;                     /* the value is [base + offset] */
	bool stack_value;               /* DW_OP_stack_value: a value, not a location */
};

/* What the expression is evaluated at. */
struct swi_cfi_expr_env {
	unsigned ptr_size;              /* 4 or 8: the width of the arithmetic */
	uint64_t ip_dwarf;              /* the IP's DWARF register, or UINT64_MAX if it has none */
	uint64_t ip;                    /* its value: the address the row is evaluated at */
};

/* Does the expression read DWARF register `dw` (a breg of it)? */
bool swi_cfi_expr_reads(const Dwarf_Op *ops, size_t nops, uint64_t dw);

/*
 * Evaluate `ops` (libdw's form: a register rule's expression comes with
 * DW_OP_call_frame_cfa first, a val_expression's with DW_OP_stack_value
 * last).  False when the result is not base + offset (or one load of
 * it), or the expression is malformed or beyond the limits.
 */
bool swi_cfi_expr_eval(const Dwarf_Op *ops, size_t nops, const struct swi_cfi_expr_env *env,
                       struct swi_cfi_expr_value *out);

#endif /* SW_UNWINDINFO_CFI_EXPR_H */
