/*
 * cfi_expr.c - evaluate a CFI rule's DWARF expression symbolically, to a
 * register (or the CFA) plus an offset (cfi_expr.h says which and why).
 *
 * Every value is "base + offset", base nothing (a constant), the CFA or
 * one register; arithmetic is done in the target's pointer width.  Only
 * constants may meet in anything but addition and subtraction, so the
 * result is always one base plus a constant, or not expressible.
 */
#include <dwarf.h>
#include "cfi_expr.h"

struct value {
	enum swi_cfi_expr_base base;
	uint64_t reg;
	uint64_t offset;                /* kept within the pointer width */
};

struct machine {
	const struct swi_cfi_expr_env *env;
	struct value stack[SWI_CFI_EXPR_STACK];
	unsigned depth;
};

static uint64_t width_mask(const struct machine *m)
{
	return m->env->ptr_size == 4 ? 0xffffffffu : UINT64_MAX;
}

/* A value of the pointer width as a signed number (DWARF's generic type is signed). */
static int64_t as_signed(const struct machine *m, uint64_t v)
{
	return m->env->ptr_size == 4 ? (int64_t)(int32_t)(uint32_t)v : (int64_t)v;
}

static bool push(struct machine *m, enum swi_cfi_expr_base base, uint64_t reg, uint64_t offset)
{
	if (m->depth >= SWI_CFI_EXPR_STACK)
		return false;
	m->stack[m->depth++] = (struct value){ base, reg, offset & width_mask(m) };
	return true;
}

static bool push_const(struct machine *m, uint64_t v)
{
	return push(m, SWI_CFI_EXPR_CONST, 0, v);
}

/* A register's value: the IP is known (the address evaluated at), the others are not. */
static bool push_register(struct machine *m, uint64_t dw, uint64_t offset)
{
	if (dw == m->env->ip_dwarf)
		return push_const(m, m->env->ip + offset);
	return push(m, SWI_CFI_EXPR_REG, dw, offset);
}

static bool pop(struct machine *m, struct value *v)
{
	if (m->depth == 0)
		return false;
	*v = m->stack[--m->depth];
	return true;
}

/* The n-th value from the top (0: the top) pushed again: DW_OP_dup, over, pick. */
static bool pick(struct machine *m, uint64_t n)
{
	struct value v;

	if (n >= m->depth)
		return false;
	v = m->stack[m->depth - 1 - n];
	return push(m, v.base, v.reg, v.offset);
}

/* a OP b where both must be constants; false for any other op. */
static bool const_binary(const struct machine *m, unsigned atom, uint64_t a, uint64_t b,
                         uint64_t *out)
{
	unsigned bits = 8 * m->env->ptr_size;

	switch (atom) {
	case DW_OP_and:   *out = a & b; return true;
	case DW_OP_or:    *out = a | b; return true;
	case DW_OP_xor:   *out = a ^ b; return true;
	case DW_OP_mul:   *out = a * b; return true;
	case DW_OP_shl:   *out = b >= bits ? 0 : a << b; return true;
	case DW_OP_shr:   *out = b >= bits ? 0 : (a & width_mask(m)) >> b; return true;
	case DW_OP_shra:
		*out = (uint64_t)(as_signed(m, a) >> (b >= bits ? bits - 1 : b));
		return true;
	case DW_OP_eq:    *out = as_signed(m, a) == as_signed(m, b); return true;
	case DW_OP_ne:    *out = as_signed(m, a) != as_signed(m, b); return true;
	case DW_OP_ge:    *out = as_signed(m, a) >= as_signed(m, b); return true;
	case DW_OP_gt:    *out = as_signed(m, a) > as_signed(m, b); return true;
	case DW_OP_le:    *out = as_signed(m, a) <= as_signed(m, b); return true;
	case DW_OP_lt:    *out = as_signed(m, a) < as_signed(m, b); return true;
	default:          return false;
	}
}

/* A binary op on the top two values (b the top). */
static bool binary(struct machine *m, unsigned atom)
{
	struct value a, b;
	uint64_t r;

	if (!pop(m, &b) || !pop(m, &a))
		return false;
	if (atom == DW_OP_plus) {
		/* A register plus a register is no single base. */
		if (a.base != SWI_CFI_EXPR_CONST && b.base != SWI_CFI_EXPR_CONST)
			return false;
		if (a.base == SWI_CFI_EXPR_CONST)
			return push(m, b.base, b.reg, a.offset + b.offset);
		return push(m, a.base, a.reg, a.offset + b.offset);
	}
	if (atom == DW_OP_minus) {
		/* The same register on both sides cancels out. */
		if (b.base == SWI_CFI_EXPR_CONST)
			return push(m, a.base, a.reg, a.offset - b.offset);
		if (a.base == b.base && a.reg == b.reg)
			return push_const(m, a.offset - b.offset);
		return false;
	}
	if (a.base != SWI_CFI_EXPR_CONST || b.base != SWI_CFI_EXPR_CONST ||
	    !const_binary(m, atom, a.offset, b.offset, &r))
		return false;
	return push_const(m, r);
}

static bool unary(struct machine *m, unsigned atom)
{
	struct value v;

	if (!pop(m, &v) || v.base != SWI_CFI_EXPR_CONST)
		return false;
	return push_const(m, atom == DW_OP_neg ? 0 - v.offset : ~v.offset);
}

static bool is_binary(unsigned atom)
{
	switch (atom) {
	case DW_OP_plus: case DW_OP_minus: case DW_OP_and: case DW_OP_or: case DW_OP_xor:
	case DW_OP_mul: case DW_OP_shl: case DW_OP_shr: case DW_OP_shra:
	case DW_OP_eq: case DW_OP_ne: case DW_OP_ge: case DW_OP_gt: case DW_OP_le: case DW_OP_lt:
		return true;
	default:
		return false;
	}
}

/* One op that is not the expression's last deref or stack_value. */
static bool step(struct machine *m, const Dwarf_Op *op)
{
	unsigned atom = op->atom;
	struct value a, b;

	if (atom >= DW_OP_lit0 && atom <= DW_OP_lit31)
		return push_const(m, atom - DW_OP_lit0);
	if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31)
		return push_register(m, atom - DW_OP_breg0, op->number);
	if (is_binary(atom))
		return binary(m, atom);
	switch (atom) {
	case DW_OP_const1u: case DW_OP_const1s: case DW_OP_const2u: case DW_OP_const2s:
	case DW_OP_const4u: case DW_OP_const4s: case DW_OP_const8u: case DW_OP_const8s:
	case DW_OP_constu: case DW_OP_consts:
		return push_const(m, op->number);       /* libdw has sign-extended the signed ones */
	case DW_OP_bregx:
		return push_register(m, op->number, op->number2);
	case DW_OP_call_frame_cfa:
		return push(m, SWI_CFI_EXPR_CFA, 0, 0);
	case DW_OP_plus_uconst:
		return push_const(m, op->number) && binary(m, DW_OP_plus);
	case DW_OP_neg: case DW_OP_not:
		return unary(m, atom);
	case DW_OP_dup:
		return pick(m, 0);
	case DW_OP_over:
		return pick(m, 1);
	case DW_OP_pick:
		return pick(m, op->number);
	case DW_OP_drop:
		return pop(m, &a);
	case DW_OP_swap:
		if (!pop(m, &b) || !pop(m, &a))
			return false;
		m->stack[m->depth++] = b;       /* two were just popped: room for them */
		m->stack[m->depth++] = a;
		return true;
	case DW_OP_nop:
		return true;
	default:
		/* Memory, branches, calls, typed and TLS ops: nothing SWU can say. */
		return false;
	}
}

bool swi_cfi_expr_reads(const Dwarf_Op *ops, size_t nops, uint64_t dw)
{
	for (size_t i = 0; i < nops; i++) {
		if (ops[i].atom >= DW_OP_breg0 && ops[i].atom <= DW_OP_breg31 &&
		    (uint64_t)(ops[i].atom - DW_OP_breg0) == dw)
			return true;
		if (ops[i].atom == DW_OP_bregx && ops[i].number == dw)
			return true;
	}
	return false;
}

bool swi_cfi_expr_eval(const Dwarf_Op *ops, size_t nops, const struct swi_cfi_expr_env *env,
                       struct swi_cfi_expr_value *out)
{
	struct machine m = { .env = env, .depth = 0 };
	struct value top;
	bool deref = false, stack_value = false;
	size_t n = nops;

	if (!ops || nops == 0 || nops > SWI_CFI_EXPR_MAX_OPS ||
	    (env->ptr_size != 4 && env->ptr_size != 8))
		return false;
	/* A load and "this is a value" may end the expression, in that order. */
	if (ops[n - 1].atom == DW_OP_stack_value) {
		stack_value = true;
		n--;
	}
	if (n > 0 && ops[n - 1].atom == DW_OP_deref) {
		deref = true;
		n--;
	}
	for (size_t i = 0; i < n; i++)
		if (!step(&m, &ops[i]))
			return false;
	if (!pop(&m, &top) || (deref && top.base == SWI_CFI_EXPR_CONST))
		return false;           /* nothing left, or a load from a fixed address */
	*out = (struct swi_cfi_expr_value){
		.base = top.base,
		.reg = top.reg,
		.offset = as_signed(&m, top.offset),
		.deref = deref,
		.stack_value = stack_value
	};
	return true;
}
