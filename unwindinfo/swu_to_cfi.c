/*
 * swu_to_cfi.c - DWARF CFI (.debug_frame, .eh_frame) from an SWU blob.
 *
 * A rule can only change where an op ends or an epilog begins or ends, so
 * those offsets are collected first (swu_walk's visitor sees each one
 * once), SWU's own decoder gives the rule at each, and the FDE says what
 * differs from the row before: DW_CFA_def_cfa* for the CFA, DW_CFA_offset
 * (or an expression) for a saved register, DW_CFA_same_value once it is
 * live again.  An epilog is bracketed by remember_state and restore_state
 * so that the body's row comes back in one byte after each return.
 *
 * The CIE's initial instructions say the architecture's state at a
 * method's first instruction, the same state the SWU decoder starts from,
 * and that every callee-saved register holds its caller's value there.
 */
#include <stdlib.h>
#include "util.h"
#include "array_grow.h"
#include "arch.h"
#include "swu_state.h"
#include "swu_to_cfi.h"

#define BIT(r) (1ULL << (r))

/* DWARF call frame instructions (DWARF 4, section 6.4.2) used here. */
enum {
	CFA_nop = 0x00,
	CFA_advance_loc1 = 0x02,
	CFA_advance_loc2 = 0x03,
	CFA_advance_loc4 = 0x04,
	CFA_same_value = 0x08,
	CFA_remember_state = 0x0a,
	CFA_restore_state = 0x0b,
	CFA_def_cfa = 0x0c,
	CFA_def_cfa_register = 0x0d,
	CFA_def_cfa_offset = 0x0e,
	CFA_def_cfa_expression = 0x0f,
	CFA_expression = 0x10,
	CFA_offset_extended_sf = 0x11,
	CFA_def_cfa_sf = 0x12,
	CFA_AARCH64_negate_ra_state = 0x2d,
	CFA_advance_loc = 0x40,         /* | delta (6 bits) */
	CFA_offset = 0x80               /* | register (6 bits), factored offset */
};

/* DWARF expression ops and pointer encodings used here. */
enum { OP_deref = 0x06, OP_consts = 0x11, OP_plus = 0x22, OP_breg0 = 0x70, OP_bregx = 0x92 };
enum { PE_udata4 = 0x03, PE_sdata4 = 0x0b, PE_pcrel = 0x10, PE_datarel = 0x30 };

unsigned swu_cfi_elf_machine(sw_arch arch)
{
	const struct swi_arch *a = swi_arch_get(arch);

	return a ? a->elf_machine : 0;
}

int swu_cfi_dwarf_reg(sw_arch arch, unsigned reg)
{
	const struct swi_arch *a = swi_arch_get(arch);

	return a ? swi_reg_to_dwarf(a, reg) : -1;
}

/* ---- The FDE's instructions ---- */

struct cfi_gen {
	struct swu_writer *w;
	const struct swi_arch *a;
	int data_align;                 /* -pointer size: saved slots are factored by it */
	uint32_t loc;                   /* offset the instructions have reached */
	uint32_t want_loc;              /* offset of the row being written */
	bool want_remember;             /* an epilog began: remember the body's row first */
	bool remembered;
};

/* Every instruction goes through here: the advance to the row comes first. */
static void put_insn(struct cfi_gen *g, unsigned opcode)
{
	if (g->want_loc != g->loc) {
		uint32_t d = g->want_loc - g->loc;

		if (d < 0x40) {
			swu_put_byte(g->w, CFA_advance_loc | d);
		} else if (d <= 0xff) {
			swu_put_byte(g->w, CFA_advance_loc1);
			swu_put_byte(g->w, d);
		} else if (d <= 0xffff) {
			swu_put_byte(g->w, CFA_advance_loc2);
			swu_put_byte(g->w, d & 0xff);
			swu_put_byte(g->w, d >> 8);
		} else {
			swu_put_byte(g->w, CFA_advance_loc4);
			for (unsigned i = 0; i < 4; i++)
				swu_put_byte(g->w, (d >> (8 * i)) & 0xff);
		}
		g->loc = g->want_loc;
	}
	if (g->want_remember) {
		g->want_remember = false;
		g->remembered = true;
		swu_put_byte(g->w, CFA_remember_state);
	}
	swu_put_byte(g->w, opcode);
}

/* DW_OP_breg<n> off, or DW_OP_bregx n off: how many bytes it takes, and them. */
static size_t breg_size(unsigned dw, int32_t off)
{
	struct swu_writer count = { NULL, 0, 0 };

	swu_put_sleb(&count, off);
	if (dw >= 32)
		swu_put_uleb(&count, dw);
	return 1 + count.len;
}

static void put_breg(struct swu_writer *w, unsigned dw, int32_t off)
{
	if (dw < 32) {
		swu_put_byte(w, OP_breg0 + dw);
	} else {
		swu_put_byte(w, OP_bregx);
		swu_put_uleb(w, dw);
	}
	swu_put_sleb(w, off);
}

static bool cfa_same(const sw_swu_rule *p, const sw_swu_rule *c)
{
	return p->cfa_reg == c->cfa_reg && p->cfa_offset == c->cfa_offset &&
	       p->cfa_deref == c->cfa_deref;
}

static sw_status put_cfa(struct cfi_gen *g, const sw_swu_rule *p, const sw_swu_rule *c)
{
	int dw = swi_reg_to_dwarf(g->a, c->cfa_reg);

	if (cfa_same(p, c))
		return SW_OK;
	if (dw < 0)
		return SW_E_UNSUPPORTED;
	if (c->cfa_deref) {
		/* CFA = [reg + off]: "breg reg off; deref". */
		put_insn(g, CFA_def_cfa_expression);
		swu_put_uleb(g->w, (uint32_t)(breg_size((unsigned)dw, c->cfa_offset) + 1));
		put_breg(g->w, (unsigned)dw, c->cfa_offset);
		swu_put_byte(g->w, OP_deref);
		return SW_OK;
	}
	if (c->cfa_offset < 0) {
		/* Only the factored form is signed. */
		if (c->cfa_offset % g->data_align)
			return SW_E_UNSUPPORTED;
		put_insn(g, CFA_def_cfa_sf);
		swu_put_uleb(g->w, (uint32_t)dw);
		swu_put_sleb(g->w, c->cfa_offset / g->data_align);
		return SW_OK;
	}
	if (!p->cfa_deref && p->cfa_offset >= 0 && p->cfa_reg == c->cfa_reg) {
		put_insn(g, CFA_def_cfa_offset);
		swu_put_uleb(g->w, (uint32_t)c->cfa_offset);
	} else if (!p->cfa_deref && p->cfa_offset == c->cfa_offset) {
		put_insn(g, CFA_def_cfa_register);
		swu_put_uleb(g->w, (uint32_t)dw);
	} else {
		put_insn(g, CFA_def_cfa);
		swu_put_uleb(g->w, (uint32_t)dw);
		swu_put_uleb(g->w, (uint32_t)c->cfa_offset);
	}
	return SW_OK;
}

/* DWARF register `dw` saved at [CFA + off]. */
static void put_cfa_slot(struct cfi_gen *g, unsigned dw, int32_t off)
{
	if (off % g->data_align == 0) {
		int32_t f = off / g->data_align;

		if (dw < 64 && f >= 0) {
			put_insn(g, CFA_offset | dw);
			swu_put_uleb(g->w, (uint32_t)f);
		} else {
			put_insn(g, CFA_offset_extended_sf);
			swu_put_uleb(g->w, dw);
			swu_put_sleb(g->w, f);
		}
		return;
	}
	/* An odd offset: "CFA + off" as an expression (the CFA is pushed first). */
	{
		struct swu_writer count = { NULL, 0, 0 };

		swu_put_sleb(&count, off);
		put_insn(g, CFA_expression);
		swu_put_uleb(g->w, dw);
		swu_put_uleb(g->w, (uint32_t)(count.len + 2));
		swu_put_byte(g->w, OP_consts);
		swu_put_sleb(g->w, off);
		swu_put_byte(g->w, OP_plus);
	}
}

static bool saved_same(const sw_swu_rule *p, const sw_swu_rule *c, unsigned r)
{
	bool ps = p->saved_mask & BIT(r), cs = c->saved_mask & BIT(r);

	if (ps != cs)
		return false;
	return !cs || (p->saved_offset[r] == c->saved_offset[r] &&
	               p->saved_base[r] == c->saved_base[r]);
}

static sw_status put_saved(struct cfi_gen *g, const sw_swu_rule *p, const sw_swu_rule *c, unsigned r)
{
	int dw = swi_reg_to_dwarf(g->a, r), base;

	if (saved_same(p, c, r))
		return SW_OK;
	if (dw < 0)
		return SW_E_UNSUPPORTED;
	if (!(c->saved_mask & BIT(r))) {
		put_insn(g, CFA_same_value);
		swu_put_uleb(g->w, (uint32_t)dw);
		return SW_OK;
	}
	if (c->saved_base[r] == SW_SWU_BASE_CFA) {
		put_cfa_slot(g, (unsigned)dw, c->saved_offset[r]);
		return SW_OK;
	}
	/* At [base + off], base's value in this frame: "breg base off". */
	base = swi_reg_to_dwarf(g->a, c->saved_base[r]);
	if (base < 0)
		return SW_E_UNSUPPORTED;
	put_insn(g, CFA_expression);
	swu_put_uleb(g->w, (uint32_t)dw);
	swu_put_uleb(g->w, (uint32_t)breg_size((unsigned)base, c->saved_offset[r]));
	put_breg(g->w, (unsigned)base, c->saved_offset[r]);
	return SW_OK;
}

/* The instructions that turn row p into row c. */
static sw_status put_diff(struct cfi_gen *g, const sw_swu_rule *p, const sw_swu_rule *c)
{
	const struct swi_arch *a = g->a;
	sw_status st;

	if ((st = put_cfa(g, p, c)) != SW_OK)
		return st;
	/* Where the return address arrives on the stack, its slot is the IP column's. */
	if (!a->entry_ra_in_lr && p->ra_offset != c->ra_offset)
		put_cfa_slot(g, a->dwarf_ra_column, c->ra_offset);
	if (p->ra_signed != c->ra_signed) {
		if (!a->has_ptrauth)
			return SW_E_UNSUPPORTED;
		put_insn(g, CFA_AARCH64_negate_ra_state);
	}
	for (unsigned r = 0; r < SW_MAX_REGS && r < 64; r++)
		if ((st = put_saved(g, p, c, r)) != SW_OK)
			return st;
	return SW_OK;
}

/* The rule at a method's first instruction: what the CIE says. */
static void entry_rule(const struct swi_arch *a, sw_swu_rule *out)
{
	struct swu_state s;

	swu_state_init(&s, a);
	memset(out, 0, sizeof(*out));
	swu_state_rule(&s, SW_SWU_PROLOG, out);
}

/* ---- Where rules change ---- */

struct change_points {
	uint32_t *at;
	size_t n, cap;
	bool failed;
};

static void add_point(struct change_points *c, uint32_t off)
{
	if (swi_array_grow((void **)&c->at, &c->cap, c->n + 1, sizeof *c->at) != SW_OK) {
		c->failed = true;
		return;
	}
	c->at[c->n++] = off;
}

static void point_header(void *ctx, const sw_swu_header *h)
{
	add_point(ctx, 0);
	add_point(ctx, h->prolog_size);
}

static void point_op(void *ctx, const struct swu_epilog *e, const struct swu_op *op,
                     const struct swu_state *s)
{
	(void)e;
	(void)s;
	add_point(ctx, op->end);
}

static void point_epilog(void *ctx, unsigned index, const struct swu_epilog *e)
{
	(void)index;
	add_point(ctx, e->start);
	add_point(ctx, e->end);
}

static int cmp_u32(const void *x, const void *y)
{
	uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;

	return a < b ? -1 : a > b;
}

static sw_status change_points(const void *blob, size_t size, struct change_points *c)
{
	static const struct swu_visitor v = {
		.header = point_header, .op = point_op, .epilog = point_epilog
	};
	sw_status st = swu_walk(blob, size, &v, c, NULL);

	if (st != SW_OK)
		return st;
	if (c->failed)
		return SW_E_NOMEM;
	qsort(c->at, c->n, sizeof(*c->at), cmp_u32);
	return SW_OK;
}

/* The FDE's instructions: one row per change point. */
static sw_status put_rows(struct cfi_gen *g, const void *blob, size_t size, uint32_t code_size)
{
	struct change_points c = { NULL, 0, 0, false };
	sw_swu_rule prev, cur, body;
	sw_status st;

	if ((st = change_points(blob, size, &c)) != SW_OK)
		goto out;
	entry_rule(g->a, &prev);
	body = prev;
	for (size_t i = 0; i < c.n; i++) {
		uint32_t off = c.at[i];

		if (off >= code_size || (i > 0 && off == c.at[i - 1]))
			continue;
		if ((st = sw_swu_decode(blob, size, off, &cur)) != SW_OK)
			goto out;
		g->want_loc = off;
		if (cur.region != SW_SWU_EPILOG && (g->want_remember || g->remembered)) {
			/* Back in the body after an epilog: its row as it was. */
			if (g->remembered)
				put_insn(g, CFA_restore_state);
			g->want_remember = g->remembered = false;
			prev = body;
		} else if (cur.region == SW_SWU_EPILOG && !g->want_remember && !g->remembered) {
			g->want_remember = true;
			body = prev;
		}
		if ((st = put_diff(g, &prev, &cur)) != SW_OK)
			goto out;
		prev = cur;
	}
	st = SW_OK;
out:
	free(c.at);
	return st;
}

/* ---- CIE and FDE ---- */

static void put_u32(struct swu_writer *w, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		swu_put_byte(w, (v >> (8 * i)) & 0xff);
}

static void put_addr(struct swu_writer *w, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++)
		swu_put_byte(w, (unsigned)(v >> (8 * i)) & 0xff);
}

/* Patch a length field once the entry's end is known (if it was stored). */
static void patch_u32(struct swu_writer *w, size_t at, uint32_t v)
{
	for (unsigned i = 0; i < 4; i++)
		if (at + i < w->cap)
			w->buf[at + i] = (uint8_t)(v >> (8 * i));
}

/* Pad an entry with nops to a multiple of the pointer size, and set its length. */
static void end_entry(struct swu_writer *w, size_t start, unsigned align)
{
	while ((w->len - start) % align)
		swu_put_byte(w, CFA_nop);
	patch_u32(w, start, (uint32_t)(w->len - start - 4));
}

static void put_cie(struct swu_writer *w, const struct swi_arch *a, enum swu_cfi_kind kind)
{
	size_t start = w->len;
	struct cfi_gen g = { w, a, -(int)a->ptr_size, 0, 0, false, false };
	sw_swu_rule none, entry;

	put_u32(w, 0);                                  /* length, patched */
	put_u32(w, kind == SWU_CFI_EH_FRAME ? 0 : 0xffffffffu);
	swu_put_byte(w, 1);                             /* version */
	if (kind == SWU_CFI_EH_FRAME) {
		swu_put_byte(w, 'z');
		swu_put_byte(w, 'R');
	}
	swu_put_byte(w, 0);
	swu_put_uleb(w, 1);                             /* code alignment: any byte */
	swu_put_sleb(w, g.data_align);
	swu_put_byte(w, a->dwarf_ra_column);
	if (kind == SWU_CFI_EH_FRAME) {
		swu_put_uleb(w, 1);                     /* augmentation data: */
		swu_put_byte(w, PE_pcrel | PE_sdata4);  /* the FDEs' address encoding */
	}
	/* The entry state, as a difference from "nothing said". */
	entry_rule(a, &entry);
	none = entry;
	none.cfa_reg = UINT32_MAX;
	none.cfa_offset = INT32_MIN;
	none.ra_offset = entry.ra_offset + 1;
	(void)put_diff(&g, &none, &entry);
	/*
	 * Callee-saved registers hold their callers' values until saved: said
	 * here rather than left to each debugger's defaults, which differ.
	 */
	for (unsigned r = 0; r < 64 && r < SW_MAX_REGS; r++) {
		int dw = swi_reg_to_dwarf(a, r);

		if (dw >= 0 && (swi_savable_regs(a) & BIT(r))) {
			put_insn(&g, CFA_same_value);
			swu_put_uleb(w, (uint32_t)dw);
		}
	}
	end_entry(w, start, a->ptr_size);
}

sw_status swu_to_cfi(const void *blob, size_t size, enum swu_cfi_kind kind, uint64_t pc,
                     uint64_t section_addr, struct swu_writer *w, size_t *fde_offset)
{
	const struct swi_arch *a;
	sw_swu_header h;
	struct cfi_gen g;
	size_t base, fde;
	sw_status st;

	if (!w || (kind != SWU_CFI_DEBUG_FRAME && kind != SWU_CFI_EH_FRAME))
		return SW_E_INVAL;
	if ((st = sw_swu_decode_header(blob, size, &h)) != SW_OK)
		return st;
	a = swi_arch_get((sw_arch)h.arch);
	if (!a)
		return SW_E_BADMETA;
	base = w->len;
	put_cie(w, a, kind);
	fde = w->len;
	put_u32(w, 0);                                  /* length, patched */
	if (kind == SWU_CFI_EH_FRAME) {
		/* The CIE pointer counts back from this field; pc_begin is pc-relative. */
		int64_t rel = (int64_t)(pc - (section_addr + (w->len + 4 - base)));

		put_u32(w, (uint32_t)(w->len - base));
		if (rel < INT32_MIN || rel > INT32_MAX)
			return SW_E_LIMIT;
		put_u32(w, (uint32_t)(int32_t)rel);
		put_u32(w, h.code_size);
		swu_put_uleb(w, 0);                     /* no augmentation data */
	} else {
		/* A .debug_frame CIE pointer is the CIE's offset in the section. */
		if (base > UINT32_MAX)
			return SW_E_LIMIT;
		put_u32(w, (uint32_t)base);
		put_addr(w, pc, a->ptr_size);
		put_addr(w, h.code_size, a->ptr_size);
	}
	g = (struct cfi_gen){ w, a, -(int)a->ptr_size, 0, 0, false, false };
	if ((st = put_rows(&g, blob, size, h.code_size)) != SW_OK)
		return st;
	end_entry(w, fde, a->ptr_size);
	if (kind == SWU_CFI_EH_FRAME)
		put_u32(w, 0);                          /* the terminator */
	if (fde_offset)
		*fde_offset = fde - base;
	return SW_OK;
}

sw_status swu_cfi_eh_frame_hdr(struct swu_writer *w, uint64_t hdr_addr, uint64_t eh_frame_addr,
                               uint64_t fde_addr, uint64_t pc)
{
	int64_t eh = (int64_t)(eh_frame_addr - (hdr_addr + 4));
	int64_t from = (int64_t)(pc - hdr_addr), to = (int64_t)(fde_addr - hdr_addr);

	if (!w)
		return SW_E_INVAL;
	if (eh < INT32_MIN || eh > INT32_MAX || from < INT32_MIN || from > INT32_MAX ||
	    to < INT32_MIN || to > INT32_MAX)
		return SW_E_LIMIT;
	swu_put_byte(w, 1);                             /* version */
	swu_put_byte(w, PE_pcrel | PE_sdata4);          /* eh_frame_ptr */
	swu_put_byte(w, PE_udata4);                     /* fde_count */
	swu_put_byte(w, PE_datarel | PE_sdata4);        /* the table */
	put_u32(w, (uint32_t)(int32_t)eh);
	put_u32(w, 1);
	put_u32(w, (uint32_t)(int32_t)from);
	put_u32(w, (uint32_t)(int32_t)to);
	return SW_OK;
}

sw_status swu_cfi_eh_payload(const void *blob, size_t size, uint64_t pc, struct swu_writer *w,
                             size_t *eh_frame_size)
{
	sw_swu_header h;
	uint64_t eh_addr, hdr_addr;
	size_t start, fde;
	sw_status st;

	if (!w || !eh_frame_size)
		return SW_E_INVAL;
	if ((st = sw_swu_decode_header(blob, size, &h)) != SW_OK)
		return st;
	/* perf inject puts .eh_frame at the code's end rounded up to 8 bytes. */
	eh_addr = pc + (((uint64_t)h.code_size + 7) & ~(uint64_t)7);
	start = w->len;
	if ((st = swu_to_cfi(blob, size, SWU_CFI_EH_FRAME, pc, eh_addr, w, &fde)) != SW_OK)
		return st;
	*eh_frame_size = w->len - start;
	hdr_addr = eh_addr + *eh_frame_size;
	return swu_cfi_eh_frame_hdr(w, hdr_addr, eh_addr, eh_addr + fde, pc);
}
