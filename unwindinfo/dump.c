/*
 * dump.c - print an SWU blob for people.
 *
 * The dump is the validator with a printing visitor: it prints each item
 * once it has been checked, so output stops at the first bad byte, which
 * the last line names.  Offsets printed are absolute code offsets; after
 * each op comes the CFA rule and SP depth that hold from its offset on.
 */
#include <inttypes.h>
#include <stdlib.h>
#include "util.h"
#include "swu_format.h"
#include "swu_state.h"
#include "swu_eh_format.h"

struct dump_ctx {
	FILE *out;
	const void *blob;
	size_t size;
	sw_arch arch;
	uint32_t code_size;
};

static const char *reg_name(const struct dump_ctx *d, uint32_t reg, char *buf, size_t len)
{
	const char *name = sw_arch_reg_name(d->arch, reg);

	if (name)
		return name;
	snprintf(buf, len, "r%" PRIu32, reg);
	return buf;
}

static void dump_header(void *ctx, const sw_swu_header *h)
{
	struct dump_ctx *d = ctx;
	const char *arch = sw_arch_name((sw_arch)h->arch);
	int32_t psp;

	d->arch = (sw_arch)h->arch;
	fprintf(d->out, "SWU version %" PRIu32 ", %s, %zu bytes\n",
	        h->version, arch ? arch : "?", d->size);
	if (h->row_ops) {
		fprintf(d->out, "code size %" PRIu32 ", %" PRIu32 " row op%s",
		        h->code_size, h->row_ops, h->row_ops == 1 ? "" : "s");
		if (h->gc_locations)
			fprintf(d->out, ", %" PRIu32 " GC location%s", h->gc_locations,
			        h->gc_locations == 1 ? "" : "s");
		fprintf(d->out, "\nrows:\n");
		return;
	}
	fprintf(d->out, "code size %" PRIu32 ", prolog size %" PRIu32
	        ", %" PRIu32 " prolog op%s, %" PRIu32 " epilog%s",
	        h->code_size, h->prolog_size, h->prolog_ops, h->prolog_ops == 1 ? "" : "s",
	        h->epilogs, h->epilogs == 1 ? "" : "s");
	if (h->body_ops)
		fprintf(d->out, ", %" PRIu32 " body op%s", h->body_ops, h->body_ops == 1 ? "" : "s");
	if (h->gc_locations)
		fprintf(d->out, ", %" PRIu32 " GC location%s", h->gc_locations,
		        h->gc_locations == 1 ? "" : "s");
	fputc('\n', d->out);
	/* The header was read whole before this call: the PSP slot reads too. */
	if (swu_read_psp_slot(d->blob, d->size, &psp) == SW_OK && psp)
		fprintf(d->out, "funclet: parent's CFA (PSP slot) at [cfa - %ld]\n", labs((long)psp));
	fprintf(d->out, "prolog [0, %" PRIu32 "):\n", h->prolog_size);
}

static void dump_epilog(void *ctx, unsigned index, const struct swu_epilog *e)
{
	struct dump_ctx *d = ctx;

	fprintf(d->out, "epilog %u [%" PRIu32 ", %" PRIu32 "): %" PRIu32 " op%s\n",
	        index, e->start, e->end, e->nops, e->nops == 1 ? "" : "s");
}

static void dump_body(void *ctx, const sw_swu_header *h)
{
	struct dump_ctx *d = ctx;

	fprintf(d->out, "body ops (after the prolog, outside the epilogs):\n");
	SWI_UNUSED(h);
}

static void dump_gc(void *ctx, const sw_swu_header *h)
{
	struct dump_ctx *d = ctx;

	fprintf(d->out, "GC locations (live ranges [start, end)):\n");
	d->code_size = h->code_size;
}

static void dump_gc_loc(void *ctx, const struct swu_gc_loc *loc, const struct swu_reader *ranges)
{
	struct dump_ctx *d = ctx;
	struct swu_reader r = *ranges;
	uint32_t start, end = 0;
	char b1[24], where[64];

	if (loc->slot.in_register)
		snprintf(where, sizeof where, "%s", reg_name(d, loc->slot.reg, b1, sizeof b1));
	else
		snprintf(where, sizeof where, "[%scfa %c %ld]",
		         loc->slot.flags & SW_GC_PARENT_FRAME ? "parent " : "",
		         loc->slot.cfa_offset < 0 ? '-' : '+', labs((long)loc->slot.cfa_offset));
	fprintf(d->out, "  %-12s%-10s%-8s", where,
	        loc->slot.flags & SW_GC_INTERIOR ? "interior" : "",
	        loc->slot.flags & SW_GC_PINNED ? "pinned" : "");
	/* Checked already: these reads succeed. */
	for (uint32_t i = 0; i < loc->nranges; i++) {
		if (swu_read_gc_range(&r, end, i == 0, d->code_size, &start, &end) != SW_OK)
			break;
		fprintf(d->out, " [%" PRIu32 ", %" PRIu32 ")", start, end);
	}
	fputc('\n', d->out);
}

/* Where the return address is, on architectures where it moves (arm64). */
static void ra_text(const struct dump_ctx *d, const struct swu_state *s, char *buf, size_t len)
{
	sw_swu_rule r;
	char b1[24];

	swu_state_rule(s, SW_SWU_BODY, &r);
	if (r.ra_in_reg)
		snprintf(buf, len, ", ra = %s%s", reg_name(d, r.ra_reg, b1, sizeof b1),
		         r.ra_signed ? " (signed)" : "");
	else
		snprintf(buf, len, ", ra = [cfa - %ld]%s", -(long)r.ra_offset,
		         r.ra_signed ? " (signed)" : "");
}

/* "name op1, op2": an op that reads as its mnemonic and operands, in order. */
static void plain_text(const struct swu_op *op, const char *r, const char *r2, char *text, size_t len)
{
	unsigned o = swu_op_operands(op->code);
	char arg[24] = "";

	if (o & (SWU_OPND_SIZE | SWU_OPND_OFFSET))
		snprintf(arg, sizeof arg, "%s%" PRId64, o & SWU_OPND_REG ? ", " : " ", op->arg);
	snprintf(text, len, "%s%s%s%s%s%s", swu_op_name(op->code), o & SWU_OPND_REG ? " " : "",
	         o & SWU_OPND_REG ? r : "", o & SWU_OPND_REG2 ? ", " : "", o & SWU_OPND_REG2 ? r2 : "",
	         arg);
}

/*
 * One op as a person reads it ("push rbx", "set_frame rbp = rsp + 0"):
 * what swdump prints and the verifier names.  `fp_reg` is the frame
 * register restore_sp reads.  Ops that place a register or the CFA say
 * where; the others read as plain_text().
 */
void swu_op_text(sw_arch arch, uint32_t fp_reg, const struct swu_op *op, char *text, size_t len)
{
	const struct dump_ctx dc = { NULL, NULL, 0, arch, 0 };
	const struct dump_ctx *d = &dc;
	const struct swi_arch *a = swi_arch_get(arch);
	char b1[24], b2[24], b3[24];
	const char *r = reg_name(d, op->reg, b1, sizeof b1);
	const char *r2 = reg_name(d, op->reg2, b3, sizeof b3);
	const char *sp = a ? reg_name(d, a->sp_reg, b2, sizeof b2) : "sp";
	int64_t arg = op->arg;
	/* An offset that may be negative reads "- 8", not "+ -8". */
	char sign = arg < 0 ? '-' : '+';
	int64_t abs_arg = arg < 0 ? -arg : arg;

	switch (op->code) {
	case SWU_OP_SAVE_PAIR:
		snprintf(text, len, "save_pair %s, %s at [%s + %" PRId64 "]", r, r2, sp, arg);
		break;
	case SWU_OP_SET_FRAME:
		snprintf(text, len, "set_frame %s = %s + %" PRId64, r, sp, arg);
		break;
	case SWU_OP_SAVE_REG:
		snprintf(text, len, "save_reg %s at [%s + %" PRId64 "]", r, sp, arg);
		break;
	case SWU_OP_DEF_CFA:
		snprintf(text, len, "def_cfa %s + %" PRId64, r, arg);
		break;
	case SWU_OP_SAVED_AT:
		snprintf(text, len, "saved_at %s at [cfa %c %" PRId64 "]", r, sign, abs_arg);
		break;
	case SWU_OP_CFA_DEREF:
		snprintf(text, len, "def_cfa_deref [%s %c %" PRId64 "]", r, sign, abs_arg);
		break;
	case SWU_OP_SAVED_AT_REG:
		snprintf(text, len, "saved_at_reg %s at [%s %c %" PRId64 "]", r, r2, sign, abs_arg);
		break;
	case SWU_OP_RESTORE_SP:
		snprintf(text, len, "restore_sp %s = %s %c %" PRId64, sp,
		         reg_name(d, fp_reg, b1, sizeof b1), sign, abs_arg);
		break;
	default:
		if (swu_op_name(op->code))
			plain_text(op, r, r2, text, len);
		else
			snprintf(text, len, "op 0x%02" PRIx32, op->code);
		break;
	}
}

static void dump_op(void *ctx, const struct swu_epilog *e, const struct swu_op *op,
                    const struct swu_state *s)
{
	struct dump_ctx *d = ctx;
	const struct swi_arch *a = s->arch;
	char b2[24], text[128], ra[64] = "";
	char rel[24] = "", spd[32];
	int32_t cfa_off = s->cfa_on_fp ? s->fp_depth : s->sp_depth;

	swu_op_text(d->arch, s->fp_reg, op, text, sizeof text);
	if (e)
		snprintf(rel, sizeof rel, " (+%" PRIu32 ")", op->end - e->start);
	/* The return address moves only where it arrives in a link register. */
	if (a->entry_ra_in_lr || s->ra_signed || s->ra_offset != a->entry_ra_offset)
		ra_text(d, s, ra, sizeof ra);
	/* Rows say where SP is only while the CFA is computed from it. */
	if (swu_op_is_row(op->code) && s->cfa_on_fp)
		snprintf(spd, sizeof spd, "sp unknown");
	else
		snprintf(spd, sizeof spd, "sp = cfa - %" PRId32, s->sp_depth);
	fprintf(d->out, "  %8" PRIu32 "%-8s %-32s ; cfa = %s%s %c %" PRId32 "%s, %s%s\n",
	        op->end, rel, text, s->cfa_deref ? "[" : "",
	        reg_name(d, s->cfa_on_fp ? s->fp_reg : a->sp_reg, b2, sizeof b2),
	        cfa_off < 0 ? '-' : '+', cfa_off < 0 ? -cfa_off : cfa_off,
	        s->cfa_deref ? "]" : "", spd, ra);
}

SW_API sw_status sw_swu_dump(FILE *out, const void *blob, size_t size)
{
	static const struct swu_visitor printer = {
		dump_header, dump_op, dump_epilog, dump_body, dump_gc, dump_gc_loc
	};
	struct dump_ctx d = { out, blob, size, SW_ARCH_NONE, 0 };
	size_t where = 0;
	sw_status st;

	if (!out || !blob)
		return SW_E_INVAL;
	st = swu_walk(blob, size, &printer, &d, &where);
	if (st == SW_OK)
		st = swu_eh_dump(out, blob, size);
	if (st != SW_OK)
		fprintf(out, "error at byte %zu: %s\n", where, sw_strerror(st));
	return st;
}
