/*
 * swu_format.c - reading and writing the pieces of an SWU blob.
 *
 * Only syntax and limits are checked here; what the ops mean is checked by
 * swu_state_apply().  Every read is bounded by the reader's end.
 */
#include "internal.h"
#include "swu_format.h"

const char *swu_op_name(unsigned code)
{
	switch (code) {
	case SWU_OP_PUSH:        return "push";
	case SWU_OP_ALLOC:       return "alloc";
	case SWU_OP_SET_FRAME:   return "set_frame";
	case SWU_OP_SAVE_REG:    return "save_reg";
	case SWU_OP_FREE:        return "free";
	case SWU_OP_RESTORE_SP:  return "restore_sp";
	case SWU_OP_POP:         return "pop";
	case SWU_OP_RESTORE_REG: return "restore_reg";
	case SWU_OP_PUSH_PAIR:   return "push_pair";
	case SWU_OP_PUSH_SIZED:  return "push_sized";
	case SWU_OP_SAVE_PAIR:   return "save_pair";
	case SWU_OP_SIGN_RA:     return "sign_ra";
	case SWU_OP_POP_PAIR:    return "pop_pair";
	case SWU_OP_POP_SIZED:   return "pop_sized";
	case SWU_OP_RESTORE_PAIR: return "restore_pair";
	case SWU_OP_AUTH_RA:     return "auth_ra";
	case SWU_OP_PUSH_ARGS:   return "push_args";
	case SWU_OP_POP_ARGS:    return "pop_args";
	case SWU_OP_CALL_POPS:   return "call_pops_args";
	default:                 return NULL;
	}
}

/* One unsigned operand into op->arg. */
static sw_status read_arg(struct swu_reader *r, struct swu_op *op)
{
	uint32_t u = 0;
	sw_status st = swu_read_uleb(r, &u);

	op->arg = u;
	return st;
}

sw_status swu_read_op(struct swu_reader *r, uint32_t prev_end, uint32_t min_delta,
                      struct swu_op *op)
{
	uint32_t delta;
	int32_t s = 0;
	sw_status st;

	if ((st = swu_read_uleb(r, &delta)) != SW_OK)
		return st;
	if (delta < min_delta || delta > SW_SWU_MAX_CODE_SIZE - prev_end)
		return SW_E_BADMETA;
	op->end = prev_end + delta;
	if (r->p >= r->end)
		return SW_E_TRUNCATED;
	op->code = *r->p++;
	op->reg = 0;
	op->reg2 = 0;
	op->arg = 0;

	switch (op->code) {
	case SWU_OP_SIGN_RA:
	case SWU_OP_AUTH_RA:
		return SW_OK;
	case SWU_OP_PUSH:
	case SWU_OP_POP:
	case SWU_OP_RESTORE_REG:
		return swu_read_uleb(r, &op->reg);
	case SWU_OP_ALLOC:
	case SWU_OP_FREE:
	case SWU_OP_PUSH_ARGS:
	case SWU_OP_POP_ARGS:
	case SWU_OP_CALL_POPS:
		return read_arg(r, op);
	case SWU_OP_SET_FRAME:
	case SWU_OP_SAVE_REG:
	case SWU_OP_PUSH_SIZED:
	case SWU_OP_POP_SIZED:
		if ((st = swu_read_uleb(r, &op->reg)) != SW_OK)
			return st;
		return read_arg(r, op);
	case SWU_OP_RESTORE_PAIR:
		if ((st = swu_read_uleb(r, &op->reg)) != SW_OK)
			return st;
		return swu_read_uleb(r, &op->reg2);
	case SWU_OP_PUSH_PAIR:
	case SWU_OP_SAVE_PAIR:
	case SWU_OP_POP_PAIR:
		if ((st = swu_read_uleb(r, &op->reg)) != SW_OK ||
		    (st = swu_read_uleb(r, &op->reg2)) != SW_OK)
			return st;
		return read_arg(r, op);
	case SWU_OP_RESTORE_SP:
		st = swu_read_sleb(r, &s);
		op->arg = s;
		return st;
	default:
		/* Reserved: this decoder cannot know its length. */
		return SW_E_BADMETA;
	}
}

sw_status swu_read_header(struct swu_reader *r, const void *blob, size_t size,
                          sw_swu_header *h, const struct swi_arch **arch)
{
	uint32_t flags;
	sw_status st;

	if (!blob)
		return SW_E_INVAL;
	r->p = blob;
	r->end = r->p + size;
	if (size < 1)
		return SW_E_TRUNCATED;
	if (r->p[0] != SWU_MAGIC)
		return SW_E_BADMETA;
	if (size < 2)
		return SW_E_TRUNCATED;
	h->version = r->p[1] >> 4;
	h->arch = r->p[1] & 0x0f;
	r->p += 2;
	if (h->version != SWU_VERSION)
		return SW_E_UNSUPPORTED;
	*arch = swi_arch_get((sw_arch)h->arch);
	if (!*arch)
		return SW_E_UNSUPPORTED;
	if ((st = swu_read_uleb(r, &flags)) != SW_OK)
		return st;
	if (flags & ~SWU_FLAGS_KNOWN)   /* optional sections this decoder does not know */
		return SW_E_UNSUPPORTED;
	if ((st = swu_read_uleb(r, &h->code_size)) != SW_OK ||
	    (st = swu_read_uleb(r, &h->prolog_size)) != SW_OK ||
	    (st = swu_read_uleb(r, &h->prolog_ops)) != SW_OK ||
	    (st = swu_read_uleb(r, &h->epilogs)) != SW_OK)
		return st;
	h->body_ops = 0;
	h->reserved = 0;
	if ((flags & SWU_FLAG_BODY_OPS) && (st = swu_read_uleb(r, &h->body_ops)) != SW_OK)
		return st;
	if (h->code_size == 0 || h->code_size > SW_SWU_MAX_CODE_SIZE ||
	    h->prolog_size > h->code_size)
		return SW_E_BADMETA;
	/* Prolog ends strictly increase; each epilog covers at least one byte. */
	if (h->prolog_ops > SW_SWU_MAX_OPS || h->prolog_ops > h->prolog_size ||
	    h->epilogs > SW_SWU_MAX_EPILOGS || h->epilogs > h->code_size - h->prolog_size)
		return SW_E_BADMETA;
	/* Body op ends strictly increase beyond the prolog, up to the code size. */
	if (h->body_ops > h->code_size - h->prolog_size)
		return SW_E_BADMETA;
	return SW_OK;
}

/* The smallest op: end delta and opcode (sign_ra, auth_ra have no operand). */
#define SWU_MIN_OP_BYTES 2

sw_status swu_read_epilog(struct swu_reader *r, const sw_swu_header *h,
                          uint32_t prev_end, struct swu_epilog *e)
{
	uint32_t delta, len, nbytes;
	uint64_t start;
	sw_status st;

	if ((st = swu_read_uleb(r, &delta)) != SW_OK ||
	    (st = swu_read_uleb(r, &len)) != SW_OK ||
	    (st = swu_read_uleb(r, &e->nops)) != SW_OK ||
	    (st = swu_read_uleb(r, &nbytes)) != SW_OK)
		return st;
	start = (uint64_t)prev_end + delta;
	if (len == 0 || start + len > h->code_size)
		return SW_E_BADMETA;
	if (e->nops > SW_SWU_MAX_OPS || (uint64_t)e->nops * SWU_MIN_OP_BYTES > nbytes ||
	    (e->nops == 0 && nbytes != 0))
		return SW_E_BADMETA;
	if (nbytes > (size_t)(r->end - r->p))
		return SW_E_TRUNCATED;
	e->start = (uint32_t)start;
	e->end = (uint32_t)(start + len);
	e->ops.p = r->p;
	e->ops.end = r->p + nbytes;
	r->p += nbytes;
	return SW_OK;
}

void swu_put_op(struct swu_writer *w, uint32_t prev_end, const struct swu_op *op)
{
	swu_put_uleb(w, op->end - prev_end);
	swu_put_byte(w, op->code);
	switch (op->code) {
	case SWU_OP_PUSH:
	case SWU_OP_POP:
	case SWU_OP_RESTORE_REG:
		swu_put_uleb(w, op->reg);
		break;
	case SWU_OP_ALLOC:
	case SWU_OP_FREE:
	case SWU_OP_PUSH_ARGS:
	case SWU_OP_POP_ARGS:
	case SWU_OP_CALL_POPS:
		swu_put_uleb(w, (uint32_t)op->arg);
		break;
	case SWU_OP_SET_FRAME:
	case SWU_OP_SAVE_REG:
	case SWU_OP_PUSH_SIZED:
	case SWU_OP_POP_SIZED:
		swu_put_uleb(w, op->reg);
		swu_put_uleb(w, (uint32_t)op->arg);
		break;
	case SWU_OP_RESTORE_PAIR:
		swu_put_uleb(w, op->reg);
		swu_put_uleb(w, op->reg2);
		break;
	case SWU_OP_PUSH_PAIR:
	case SWU_OP_SAVE_PAIR:
	case SWU_OP_POP_PAIR:
		swu_put_uleb(w, op->reg);
		swu_put_uleb(w, op->reg2);
		swu_put_uleb(w, (uint32_t)op->arg);
		break;
	case SWU_OP_RESTORE_SP:
		swu_put_sleb(w, (int32_t)op->arg);
		break;
	}
}
