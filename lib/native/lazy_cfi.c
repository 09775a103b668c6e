/*
 * lazy_cfi.c - a module's CFI imported one function at a time, the first
 * time a lookup lands in it (lazy_cfi.h says why and how it stays
 * async-signal-safe).
 *
 * Registration costs the .eh_frame_hdr table and one FDE header per
 * function: every entry is checked (sorted, inside .eh_frame, at an FDE
 * that starts where the entry says) because a lookup trusts them
 * afterwards.  The PLT's stubs, and in a small module sigreturn code
 * without CFI, are described eagerly as a full load does, since no FDE
 * leads to them.  An FDE whose import is skipped (a rule SWU cannot say)
 * goes to the instruction analysis when it is imported, again as a full
 * load does.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "util.h"
#include "arch.h"
#include "array_grow.h"
#include "cfi_import.h"
#include "swu_format.h"
#include "lazy_cfi.h"

/* A slot a lookup asked for but could not import. */
#define SLOT_NOTED ((uintptr_t)1)

/* The index a placeholder's lookup gives: no function's (a table spans less than 4 GiB). */
#define PLACEHOLDER_INDEX (UINT32_MAX - 1)

/* What the view holds: its mapping only, its .eh_frame_hdr, or nothing after a load failed. */
enum { VIEW_PLACEHOLDER, VIEW_OPEN, VIEW_FAILED };

/* .eh_frame_hdr's encodings this reads: what GNU ld, gold and lld write. */
#define HDR_FRAME_PTR_ENC (DW_EH_PE_pcrel | DW_EH_PE_sdata4)
#define HDR_COUNT_ENC     DW_EH_PE_udata4
#define HDR_TABLE_ENC     (DW_EH_PE_datarel | DW_EH_PE_sdata4)

/* One function as the arena keeps it. */
struct lazy_fn {
	sw_native_function fn;          /* the method handle a lookup gives */
	struct swu_body_rule rule;      /* its blob's, decoded once */
	bool none;                      /* the import skipped it and analysis did not describe it */
	uint32_t saved[];               /* rule.nsaved items; the blob follows */
};

/* Published for a function whose CFI the import skipped. */
static const struct lazy_fn no_function = { .none = true };

struct swi_lazy_cfi {
	struct swi_code_source source;  /* the table's source: the ops below */
	struct swi_code_table table;
	const sw_module *module;
	sw_arch arch;
	uint64_t bias;
	uint64_t base;                  /* ELF address the starts are relative to */
	uint64_t abs_base, abs_lo, abs_hi;      /* base + bias; the functions' range (loaded) */
	_Atomic int state;              /* VIEW_*: published with a release store */
	sw_status load_error;           /* VIEW_FAILED's reason */
	_Atomic bool asked;             /* a lookup landed in the placeholder */
	_Atomic uint32_t noted_next;    /* of noted_pc[], taken so far */
	_Atomic uint64_t noted_pc[SWI_LAZY_NOTED_PCS];  /* where lookups landed in the placeholder */
	bool walks_import;
	uint64_t budget;                /* instruction analysis's, for each FDE the import skips */
	uint32_t n;                     /* functions the .eh_frame_hdr lists */
	uint32_t *start;                /* relative to base, ascending */
	uint32_t *size;                 /* 0: no code there (discarded, or overlapping the one before) */
	uint32_t *fde;                  /* its FDE's offset in .eh_frame */
	_Atomic uintptr_t *slot;        /* 0, SLOT_NOTED, or its struct lazy_fn (published once) */
	struct lazy_fn **extra;         /* described at load: PLT stubs, sigreturn code; by start */
	uint32_t nextra;
	size_t extra_cap;
	uint8_t *arena;
	size_t arena_cap, arena_used;   /* under lock */
	pthread_mutex_t lock;           /* serializes imports: libdw's CFI is not thread-safe */
	sw_module_import_stats stats;   /* under lock */
	_Atomic uint32_t not_imported;  /* lookups answered SW_CODE_NOT_IMPORTED */
	Elf *elf;
	int fd;
	Dwarf_CFI *cfi;
	struct swi_eh_frame ef;
};

/* ---- The arena ---- */

/* A record of the function `f` (ELF addresses) with its blob, or NULL when the arena is full. */
static struct lazy_fn *arena_record(struct swi_lazy_cfi *z, const struct swi_cfi_fn *f,
                                    const uint8_t *blob)
{
	uint32_t saved[SWU_BODY_MAX_SAVED];
	struct swu_body_rule rule;
	struct lazy_fn *r;
	size_t need;

	/* A blob the validator rejects is no function, as a full load's table would refuse it. */
	if (swu_validate_body_rule(blob, f->blob_size, &rule, saved) != SW_OK)
		return (struct lazy_fn *)&no_function;
	need = sizeof *r + rule.nsaved * sizeof saved[0] + f->blob_size;
	need = (need + _Alignof(struct lazy_fn) - 1) & ~(size_t)(_Alignof(struct lazy_fn) - 1);
	if (need > z->arena_cap - z->arena_used)
		return NULL;
	r = (struct lazy_fn *)(z->arena + z->arena_used);
	z->arena_used += need;
	memset(r, 0, sizeof *r);
	memcpy(r->saved, saved, rule.nsaved * sizeof saved[0]);
	memcpy(&r->saved[rule.nsaved], blob, f->blob_size);
	r->rule = rule;
	r->fn = (sw_native_function){
		.module = z->module,
		.name = swi_module_name_at(z->module, f->start + z->bias),
		.start = f->start + z->bias,
		.size = f->size,
		.unwind = (const uint8_t *)&r->saved[rule.nsaved],
		.unwind_size = f->blob_size,
		.source = f->source,
		.flags = f->flags,
	};
	return r;
}

/* ---- Importing (lock held) ---- */

static void add_stats(sw_module_import_stats *to, const sw_module_import_stats *s)
{
	to->functions += s->functions;
	to->from_eh_frame += s->from_eh_frame;
	to->signal_trampolines += s->signal_trampolines;
	to->outermost += s->outermost;
	to->skipped += s->skipped;
	for (unsigned k = 0; k < SW_MODULE_SKIP_MAX; k++)
		to->skipped_by[k] += s->skipped_by[k];
	to->row_ops += s->row_ops;
	to->unwind_bytes += s->unwind_bytes;
}

/*
 * An FDE [lo, hi) the import skipped for a rule SWU cannot say (`one`
 * holds the skip) is described by its instructions, as a full load
 * describes it: swi_analyze_module given that skip alone.  *out is the
 * record of the function the analysis finds at lo (within the range: the
 * rest of it stays without rules, a slot being one function); an error
 * for memory, SW_E_LIMIT when the arena is full.
 */
static sw_status analyze_skipped(struct swi_lazy_cfi *z, struct swi_cfi_import *one, uint64_t lo,
                                 uint64_t hi, const struct lazy_fn **out)
{
	sw_module_import_stats kept = one->stats;
	const struct swi_cfi_fn *f = NULL;
	sw_status st = swi_analyze_module(z->elf, z->arch, NULL, 0, z->budget, one);

	/* It analyzes the PLT's stubs again too: only the function published counts. */
	one->stats = kept;
	if (st != SW_OK)
		return st;
	for (size_t k = 0; k < one->nfns; k++)
		if (one->fns[k].start == lo && one->fns[k].size <= hi - lo &&
		    one->fns[k].source == SW_CFI_ANALYSIS)
			f = &one->fns[k];
	if (f && !(*out = arena_record(z, f, one->blobs + f->blob)))
		return SW_E_LIMIT;
	if (f && !(*out)->none) {
		z->stats.analyzed++;
		z->stats.analyzed_entries++;
	}
	return SW_OK;
}

/* Import function i and publish it; SW_E_LIMIT when the arena is full. */
static sw_status import_fn(struct swi_lazy_cfi *z, uint32_t i)
{
	struct swi_cfi_import one;
	const struct lazy_fn *r = &no_function;
	uint64_t lo, hi;
	size_t bytes;
	sw_status st;

	if (atomic_load_explicit(&z->slot[i], memory_order_relaxed) > SLOT_NOTED)
		return SW_OK;
	/* Checked at load; read again for its size in bytes. */
	if (swi_eh_frame_fde(&z->ef, z->fde[i], &lo, &hi, &bytes) != SW_OK)
		goto publish;
	if ((st = swi_cfi_import_one(z->cfi, z->arch, lo, hi, bytes, z->ef.fde_flags, &one)) != SW_OK) {
		swi_cfi_import_free(&one);
		return st;
	}
	if (one.nfns == 1 && !(r = arena_record(z, &one.fns[0], one.blobs + one.fns[0].blob))) {
		swi_cfi_import_free(&one);
		return SW_E_LIMIT;
	}
	if (one.nfns == 0 && one.nskips == 1 && (st = analyze_skipped(z, &one, lo, hi, &r)) != SW_OK) {
		swi_cfi_import_free(&one);
		return st;
	}
	add_stats(&z->stats, &one.stats);
	z->stats.lazy_imported++;
	swi_cfi_import_free(&one);
publish:
	/* Readers acquire it: the record is written before it is seen. */
	atomic_store_explicit(&z->slot[i], (uintptr_t)r, memory_order_release);
	return SW_OK;
}

/* ---- Lookups (async-signal-safe unless walks_import) ---- */

/* The extra function holding ip, or -1. */
static long extra_find(const struct swi_lazy_cfi *z, uint64_t ip)
{
	uint32_t lo = 0, n = z->nextra;

	if (n == 0)
		return -1;
	while (n > 1) {
		uint32_t half = n / 2;

		if (z->extra[lo + half]->fn.start <= ip)
			lo += half;
		n -= half;
	}
	return ip - z->extra[lo]->fn.start < z->extra[lo]->fn.size ? (long)lo : -1;
}

/* The listed function holding ip (ELF address + bias), or -1; ip >= the table's base. */
static long listed_find(const struct swi_lazy_cfi *z, uint64_t ip)
{
	uint64_t rel = ip - z->abs_base;
	uint32_t lo = 0, n = z->n;

	while (n > 1) {
		uint32_t half = n / 2;

		if (z->start[lo + half] <= rel)
			lo += half;
		n -= half;
	}
	return rel - z->start[lo] < z->size[lo] ? (long)lo : -1;
}

static long lazy_find(const struct swi_code_source *s, uint64_t ip)
{
	/* The source is the view's first member; an import changes it. */
	struct swi_lazy_cfi *z = (struct swi_lazy_cfi *)(uintptr_t)s;
	int state = atomic_load_explicit(&z->state, memory_order_acquire);
	const struct lazy_fn *r;
	uintptr_t v;
	long i;

	if (state == VIEW_PLACEHOLDER) {
		/* Noted for sw_module_import_noted, which loads the module; lock-free. */
		uint32_t k = atomic_fetch_add_explicit(&z->noted_next, 1, memory_order_relaxed);

		if (k < SWI_LAZY_NOTED_PCS)
			atomic_store_explicit(&z->noted_pc[k], ip, memory_order_relaxed);
		atomic_store_explicit(&z->asked, true, memory_order_relaxed);
		atomic_fetch_add_explicit(&z->not_imported, 1, memory_order_relaxed);
		return (long)PLACEHOLDER_INDEX;
	}
	if (state != VIEW_OPEN || ip < z->abs_lo || ip >= z->abs_hi)
		return -1;
	if ((i = extra_find(z, ip)) >= 0)
		return (long)z->n + i;
	if ((i = listed_find(z, ip)) < 0)
		return -1;
	v = atomic_load_explicit(&z->slot[i], memory_order_acquire);
	if (v <= SLOT_NOTED && z->walks_import) {
		pthread_mutex_lock(&z->lock);
		(void)import_fn(z, (uint32_t)i);        /* failing, it stays to be noted below */
		pthread_mutex_unlock(&z->lock);
		v = atomic_load_explicit(&z->slot[i], memory_order_acquire);
	}
	if (v <= SLOT_NOTED) {
		uintptr_t unasked = 0;

		/* For sw_module_import_noted; lock-free. */
		atomic_compare_exchange_strong_explicit(&z->slot[i], &unasked, SLOT_NOTED,
		                                        memory_order_relaxed, memory_order_relaxed);
		atomic_fetch_add_explicit(&z->not_imported, 1, memory_order_relaxed);
		return i;
	}
	/* Analysis may describe less of the FDE's range than it covers (analyze_skipped). */
	r = (const struct lazy_fn *)v;
	return r->none || ip - r->fn.start >= r->fn.size ? -1 : i;
}

static void lazy_info(const struct swi_code_source *s, uint32_t i, struct swi_code_copy *out)
{
	const struct swi_lazy_cfi *z = (const struct swi_lazy_cfi *)s;
	const struct lazy_fn *r;

	if (i == PLACEHOLDER_INDEX) {
		/* The module is not loaded: its whole mapping is code without rules yet. */
		out->info = (sw_code_info){ NULL, z->table.lo, z->table.hi - z->table.lo, NULL, 0,
		                            SW_CODE_NATIVE | SW_CODE_NOT_IMPORTED, NULL };
		out->rule = swi_no_body_rule;
		out->body = &out->rule;
		out->saved = NULL;
		return;
	}
	if (i >= z->n) {
		r = z->extra[i - z->n];
	} else {
		uintptr_t v = atomic_load_explicit(&z->slot[i], memory_order_acquire);

		r = v > SLOT_NOTED ? (const struct lazy_fn *)v : NULL;
		if (!r || r->none) {
			/* Its range is known, its rules are not: the walk stops here and says why. */
			out->info = (sw_code_info){ NULL, z->abs_base + z->start[i], z->size[i], NULL, 0,
			                            SW_CODE_NATIVE | SW_CODE_NOT_IMPORTED, NULL };
			out->rule = swi_no_body_rule;
			out->body = &out->rule;
			out->saved = NULL;
			return;
		}
	}
	out->info = (sw_code_info){ (void *)(uintptr_t)&r->fn, r->fn.start, r->fn.size, r->fn.unwind,
	                            r->fn.unwind_size, SW_CODE_NATIVE | r->fn.flags, NULL };
	out->rule = r->rule;
	out->body = &out->rule;
	out->saved = r->saved;
}

/* ---- Registration ---- */

static uint64_t addr_wrap(const struct swi_lazy_cfi *z, uint64_t a)
{
	return swi_arch_get(z->arch)->ptr_size == 4 ? a & 0xffffffffu : a;
}

static uint64_t sext32(const uint8_t *p)
{
	return (uint64_t)(int64_t)(int32_t)(uint32_t)swi_load_le(p, 4);
}

/* Executable sections: the lowest address and their bytes. */
struct code_layout {
	uint64_t lo, hi, bytes;
	bool debug_frame, has_hdr;
	Elf_Data *hdr;
	uint64_t hdr_addr, hdr_offset, hdr_size;
};

/* `hdr`: read .eh_frame_hdr's bytes too (a placeholder only asks whether it is there). */
static void read_layout(Elf *elf, bool hdr, struct code_layout *l)
{
	size_t shstrndx;

	memset(l, 0, sizeof *l);
	l->lo = UINT64_MAX;
	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		if (!name)
			continue;
		if (strcmp(name, ".debug_frame") == 0)
			l->debug_frame = true;
		if (strcmp(name, ".eh_frame_hdr") == 0 && !(sh.sh_flags & SHF_COMPRESSED)) {
			l->has_hdr = true;
			l->hdr = hdr ? elf_getdata(scn, NULL) : NULL;
			l->hdr_addr = sh.sh_addr;
			l->hdr_offset = sh.sh_offset;
			l->hdr_size = sh.sh_size;
		}
		if (!(sh.sh_flags & SHF_EXECINSTR) || sh.sh_addr + sh.sh_size < sh.sh_addr)
			continue;
		if (sh.sh_addr < l->lo)
			l->lo = sh.sh_addr;
		if (sh.sh_addr + sh.sh_size > l->hi)
			l->hi = sh.sh_addr + sh.sh_size;
		l->bytes += sh.sh_size;
	}
}

/* The table's entry k: its function's start and FDE (ELF addresses). */
static void hdr_entry(const struct swi_lazy_cfi *z, const uint8_t *t, uint64_t hdr_addr, uint32_t k,
                      uint64_t *loc, uint64_t *fde)
{
	*loc = addr_wrap(z, hdr_addr + sext32(t + 8 * (uint64_t)k));
	*fde = addr_wrap(z, hdr_addr + sext32(t + 8 * (uint64_t)k + 4));
}

/* The .eh_frame_hdr's header: its table and count; SW_E_UNSUPPORTED for another form. */
static sw_status read_hdr(struct swi_lazy_cfi *z, const struct code_layout *l, const uint8_t **table,
                          uint32_t *count)
{
	const uint8_t *h;
	size_t len;

	if (!l->hdr || !l->hdr->d_buf)
		return SW_E_UNSUPPORTED;
	h = l->hdr->d_buf;
	len = l->hdr->d_size;
	if (len < 4)
		return SW_E_TRUNCATED;
	if (h[0] != 1)
		return SW_E_BADMETA;
	if (h[1] != HDR_FRAME_PTR_ENC || h[2] != HDR_COUNT_ENC || h[3] != HDR_TABLE_ENC)
		return SW_E_UNSUPPORTED;
	if (len < 12)
		return SW_E_TRUNCATED;
	if (addr_wrap(z, l->hdr_addr + 4 + sext32(h + 4)) != z->ef.addr)
		return SW_E_BADMETA;    /* it describes another .eh_frame */
	*count = (uint32_t)swi_load_le(h + 8, 4);
	*table = h + 12;
	if (*count == 0)
		return SW_E_UNSUPPORTED;
	if (*count > SWI_LAZY_MAX_FDES)
		return SW_E_LIMIT;
	if (*count > (len - 12) / 8)
		return SW_E_TRUNCATED;
	if (z->ef.data->d_size > UINT32_MAX)
		return SW_E_LIMIT;
	return SW_OK;
}

/*
 * Every entry, checked: ascending, at an FDE inside .eh_frame whose range
 * starts where the entry says.  An FDE without code, or overlapping the
 * function before it, lists no function (size 0), as a full load drops it.
 */
static sw_status read_entries(struct swi_lazy_cfi *z, const struct code_layout *l,
                              const uint8_t *t, uint64_t *hi_out)
{
	uint64_t prev_loc = 0, prev_end = 0, fde, loc;

	hdr_entry(z, t, l->hdr_addr, 0, &loc, &fde);
	z->base = loc < l->lo ? loc : l->lo;
	for (uint32_t k = 0; k < z->n; k++) {
		uint64_t lo, hi;
		size_t bytes;

		hdr_entry(z, t, l->hdr_addr, k, &loc, &fde);
		if (k > 0 && loc <= prev_loc)
			return SW_E_BADMETA;            /* unsorted: a bisection would miss */
		if (fde < z->ef.addr || fde - z->ef.addr >= z->ef.data->d_size)
			return SW_E_BADMETA;            /* outside .eh_frame */
		if (swi_eh_frame_fde(&z->ef, fde - z->ef.addr, &lo, &hi, &bytes) != SW_OK || lo != loc)
			return SW_E_BADMETA;
		if (hi - z->base > UINT32_MAX)
			return SW_E_UNSUPPORTED;        /* beyond a table's 4 GiB: a full load */
		prev_loc = loc;
		z->start[k] = (uint32_t)(loc - z->base);
		z->fde[k] = (uint32_t)(fde - z->ef.addr);
		z->stats.fdes++;
		if (lo == hi || lo == 0) {
			z->stats.ignored++;
			continue;
		}
		if (lo < prev_end) {
			z->stats.skipped++;
			z->stats.skipped_by[SW_SKIP_OVERLAP]++;
			continue;
		}
		z->size[k] = (uint32_t)(hi - lo);
		z->stats.lazy++;
		prev_end = hi;
	}
	*hi_out = prev_end;
	return SW_OK;
}

/*
 * What no FDE covers, described now as a full load does (no FDE leads a
 * lookup to it): the PLT's stubs, code without CFI within the analysis
 * budget, and in a small module sigreturn code.  The analysis sees every
 * FDE's range, so that CFI always wins over it.
 */
static sw_status describe_extras(struct swi_lazy_cfi *z, Elf *elf, const struct code_layout *l,
                                 const struct swi_lazy_analysis *analysis, uint64_t *hi)
{
	bool small = l->bytes <= SWI_LAZY_SMALL_CODE;
	struct swi_cfi_import imp;
	sw_status st = SW_OK;

	memset(&imp, 0, sizeof imp);
	for (uint32_t k = 0; k < z->n && st == SW_OK; k++) {
		uint64_t lo = z->base + z->start[k];

		if (!z->size[k])
			continue;
		st = swi_array_grow((void **)&imp.fns, &imp.fns_cap, imp.nfns + 1, sizeof *imp.fns);
		if (st == SW_OK)
			imp.fns[imp.nfns++] = (struct swi_cfi_fn){ lo, z->size[k], SW_CFI_EH_FRAME, 0, 0, 0 };
	}
	if (st == SW_OK && small)
		st = swi_find_sigreturn_code(elf, z->arch, &imp);
	if (st == SW_OK)
		st = swi_analyze_module(elf, z->arch, analysis->syms, analysis->nsyms, analysis->budget,
		                        &imp);
	for (size_t i = 0; i < imp.nfns && st == SW_OK; i++) {
		const struct swi_cfi_fn *f = &imp.fns[i];
		struct lazy_fn *r;

		if (f->source == SW_CFI_EH_FRAME)
			continue;
		if (f->start < z->base || f->start + f->size - z->base > UINT32_MAX) {
			st = SW_E_UNSUPPORTED;
			break;
		}
		if (!(r = arena_record(z, f, imp.blobs + f->blob))) {
			st = SW_E_NOMEM;
			break;
		}
		if (r->none)
			continue;
		st = swi_array_grow((void **)&z->extra, &z->extra_cap, (size_t)z->nextra + 1,
		                    sizeof *z->extra);
		if (st != SW_OK)
			break;
		z->extra[z->nextra++] = r;
		if (f->start + f->size > *hi)
			*hi = f->start + f->size;
	}
	z->stats.analyzed = imp.stats.analyzed;
	z->stats.analyzed_entries = imp.stats.analyzed_entries;
	z->stats.analysis_failed = imp.stats.analysis_failed;
	z->stats.sigreturn_code = imp.stats.sigreturn_code;
	z->stats.unwind_bytes += imp.blobs_len;
	swi_cfi_import_free(&imp);
	return st;
}

const struct swi_code_table *swi_lazy_cfi_table(const struct swi_lazy_cfi *z)
{
	return &z->table;
}

static size_t arena_size(uint32_t n)
{
	uint64_t want = (uint64_t)n * SWI_LAZY_ARENA_PER_FN;

	return want < SWI_LAZY_ARENA_MIN ? SWI_LAZY_ARENA_MIN
	       : want > SWI_LAZY_ARENA_MAX ? SWI_LAZY_ARENA_MAX : (size_t)want;
}

/* The arrays for n functions; the arena's pages are touched only as it fills. */
static sw_status allocate(struct swi_lazy_cfi *z, uint32_t n)
{
	z->n = n;
	z->start = malloc(n * sizeof *z->start);
	z->size = calloc(n, sizeof *z->size);
	z->fde = malloc(n * sizeof *z->fde);
	z->slot = calloc(n, sizeof *z->slot);
	z->arena_cap = arena_size(n);
	z->arena = malloc(z->arena_cap);
	return z->start && z->size && z->fde && z->slot && z->arena ? SW_OK : SW_E_NOMEM;
}

static sw_status open_view(struct swi_lazy_cfi *z, Elf *elf, const struct swi_lazy_analysis *analysis)
{
	struct code_layout l;
	const uint8_t *table = NULL;
	uint32_t count = 0;
	uint64_t hi = 0;
	sw_status st;

	read_layout(elf, true, &l);
	/* .debug_frame may describe code .eh_frame does not: a full load reads both. */
	if (l.debug_frame || l.lo == UINT64_MAX)
		return SW_E_UNSUPPORTED;
	if ((st = swi_eh_frame_open(elf, z->arch, &z->ef)) != SW_OK)
		return st == SW_E_NOTFOUND ? SW_E_UNSUPPORTED : st;
	if ((st = read_hdr(z, &l, &table, &count)) != SW_OK || (st = allocate(z, count)) != SW_OK ||
	    (st = read_entries(z, &l, table, &hi)) != SW_OK ||
	    (st = describe_extras(z, elf, &l, analysis, &hi)) != SW_OK)
		return st;
	if (hi <= z->base)
		return SW_E_UNSUPPORTED;        /* no code at all */
	if (z->base + z->bias < z->base || hi + z->bias < hi)
		return SW_E_INVAL;              /* a bias may not wrap an address around */
	if (!(z->cfi = dwarf_getcfi_elf(elf)))
		return SW_E_UNSUPPORTED;
	z->abs_base = z->abs_lo = z->base + z->bias;
	z->abs_hi = hi + z->bias;
	/* A placeholder's table is registered already, with its mapping's range: it stays. */
	if (atomic_load_explicit(&z->state, memory_order_relaxed) != VIEW_PLACEHOLDER) {
		z->source = (struct swi_code_source){ lazy_find, lazy_info };
		z->table = (struct swi_code_table){
			.base = z->abs_base, .lo = z->abs_lo, .hi = z->abs_hi,
			.nfn = z->n + z->nextra, .flags = SW_CODE_NATIVE, .source = &z->source
		};
	}
	z->stats.index_bytes = (uint64_t)z->n * (sizeof *z->start + sizeof *z->size +
	                                         sizeof *z->fde + sizeof *z->slot);
	return SW_OK;
}

/* A view of nothing yet, in `state`; NULL for no memory. */
static struct swi_lazy_cfi *view_new(sw_arch arch, uint64_t bias, int walks_import, const sw_module *m,
                                     int state)
{
	struct swi_lazy_cfi *z = calloc(1, sizeof *z);

	if (!z)
		return NULL;
	z->arch = arch;
	z->bias = bias;
	z->module = m;
	z->walks_import = walks_import != 0;
	z->fd = -1;
	atomic_init(&z->state, state);
	if (pthread_mutex_init(&z->lock, NULL) != 0) {
		free(z);
		return NULL;
	}
	return z;
}

sw_status swi_lazy_cfi_open(Elf *elf, int fd, sw_arch arch, uint64_t bias, int walks_import,
                            const sw_module *m, const struct swi_lazy_analysis *analysis,
                            struct swi_lazy_cfi **out)
{
	struct swi_lazy_cfi *z;
	sw_status st;

	*out = NULL;
	if (!elf || !swi_arch_get(arch))
		return SW_E_INVAL;
	if (!(z = view_new(arch, bias, walks_import, m, VIEW_OPEN)))
		return SW_E_NOMEM;
	z->budget = analysis ? analysis->budget : 0;
	if ((st = open_view(z, elf, analysis)) != SW_OK) {
		swi_lazy_cfi_free(z);
		return st;
	}
	z->elf = elf;
	z->fd = fd;
	*out = z;
	return SW_OK;
}

sw_status swi_lazy_cfi_placeholder(Elf *elf, int fd, sw_arch arch, uint64_t bias, int walks_import,
                                   const sw_module *m, struct swi_lazy_cfi **out)
{
	struct swi_lazy_cfi *z;
	struct code_layout l;
	const uint8_t *p;
	Elf_Data *h;

	*out = NULL;
	if (!elf || !swi_arch_get(arch))
		return SW_E_INVAL;
	/* What open_view would refuse, known from the section headers and the table's header. */
	read_layout(elf, false, &l);
	if (l.debug_frame || !l.has_hdr || l.lo >= l.hi || l.hdr_size < 12 ||
	    !(h = elf_getdata_rawchunk(elf, (int64_t)l.hdr_offset, 12, ELF_T_BYTE)) || !h->d_buf)
		return SW_E_UNSUPPORTED;
	p = h->d_buf;
	if (p[0] != 1 || p[1] != HDR_FRAME_PTR_ENC || p[2] != HDR_COUNT_ENC || p[3] != HDR_TABLE_ENC ||
	    swi_load_le(p + 8, 4) == 0)
		return SW_E_UNSUPPORTED;
	if (l.hi - l.lo > UINT32_MAX)
		return SW_E_UNSUPPORTED;        /* beyond a table's 4 GiB: a full load */
	if (l.lo + bias < l.lo || l.hi + bias < l.hi)
		return SW_E_INVAL;              /* a bias may not wrap an address around */
	if (!(z = view_new(arch, bias, walks_import, m, VIEW_PLACEHOLDER)))
		return SW_E_NOMEM;
	z->source = (struct swi_code_source){ lazy_find, lazy_info };
	/* No function counted (nfn): the map's count stays what it was when the table leaves it. */
	z->table = (struct swi_code_table){
		.base = l.lo + bias, .lo = l.lo + bias, .hi = l.hi + bias,
		.nfn = 0, .flags = SW_CODE_NATIVE, .source = &z->source
	};
	z->elf = elf;
	z->fd = fd;
	*out = z;
	return SW_OK;
}

bool swi_lazy_cfi_pending(struct swi_lazy_cfi *z, bool *asked)
{
	if (asked)
		*asked = atomic_load_explicit(&z->asked, memory_order_relaxed);
	return atomic_load_explicit(&z->state, memory_order_acquire) == VIEW_PLACEHOLDER;
}

Elf *swi_lazy_cfi_elf(const struct swi_lazy_cfi *z)
{
	return z->elf;
}

/* Import the functions lookups landed in while the view was a placeholder.  Lock held. */
static size_t import_landed(struct swi_lazy_cfi *z)
{
	uint32_t taken = atomic_load_explicit(&z->noted_next, memory_order_relaxed);
	size_t done = 0;

	if (taken > SWI_LAZY_NOTED_PCS)
		taken = SWI_LAZY_NOTED_PCS;
	for (uint32_t k = 0; k < taken; k++) {
		uint64_t pc = atomic_load_explicit(&z->noted_pc[k], memory_order_relaxed);
		long i = pc >= z->abs_lo && pc < z->abs_hi ? listed_find(z, pc) : -1;

		if (i >= 0 && atomic_load_explicit(&z->slot[i], memory_order_relaxed) <= SLOT_NOTED &&
		    import_fn(z, (uint32_t)i) == SW_OK)
			done++;
	}
	return done;
}

sw_status swi_lazy_cfi_load(struct swi_lazy_cfi *z, const struct swi_lazy_analysis *analysis,
                            size_t *imported)
{
	sw_status st;

	*imported = 0;
	pthread_mutex_lock(&z->lock);
	switch (atomic_load_explicit(&z->state, memory_order_relaxed)) {
	case VIEW_PLACEHOLDER:
		z->budget = analysis ? analysis->budget : 0;
		st = open_view(z, z->elf, analysis);
		if (st != SW_OK) {
			/* Walks find no code there from now on, as in a module without CFI. */
			z->load_error = st;
			atomic_store_explicit(&z->state, VIEW_FAILED, memory_order_release);
			break;
		}
		/* Readers acquire it: the view is complete before they see it open. */
		atomic_store_explicit(&z->state, VIEW_OPEN, memory_order_release);
		/* The load itself counts: the walks it stopped go further now. */
		*imported = 1 + import_landed(z);
		break;
	case VIEW_FAILED:
		st = z->load_error;
		break;
	default:
		st = SW_OK;
	}
	pthread_mutex_unlock(&z->lock);
	return st;
}

void swi_lazy_cfi_stats(struct swi_lazy_cfi *z, sw_module_import_stats *out)
{
	pthread_mutex_lock(&z->lock);
	*out = z->stats;
	out->arena_bytes = z->arena_used;
	pthread_mutex_unlock(&z->lock);
	out->lazy_not_imported = atomic_load_explicit(&z->not_imported, memory_order_relaxed);
}

sw_status swi_lazy_cfi_import(struct swi_lazy_cfi *z, uint64_t address, size_t *imported)
{
	sw_status st = SW_OK;
	size_t done = 0;

	pthread_mutex_lock(&z->lock);
	if (atomic_load_explicit(&z->state, memory_order_relaxed) == VIEW_FAILED) {
		st = z->load_error;                     /* the placeholder's load failed */
	} else if (atomic_load_explicit(&z->state, memory_order_relaxed) != VIEW_OPEN) {
		st = address ? SW_E_NOTFOUND : SW_OK;   /* nothing to import from yet */
	} else if (address) {
		long i = address >= z->abs_lo && address < z->abs_hi ? listed_find(z, address) : -1;

		if (i < 0)
			st = extra_find(z, address) >= 0 ? SW_OK : SW_E_NOTFOUND;
		else if (atomic_load_explicit(&z->slot[i], memory_order_relaxed) <= SLOT_NOTED &&
		         (st = import_fn(z, (uint32_t)i)) == SW_OK)
			done++;
	} else {
		for (uint32_t i = 0; i < z->n && st == SW_OK; i++)
			if (atomic_load_explicit(&z->slot[i], memory_order_relaxed) == SLOT_NOTED &&
			    (st = import_fn(z, i)) == SW_OK)
				done++;
	}
	pthread_mutex_unlock(&z->lock);
	if (imported)
		*imported = done;
	return st;
}

void swi_lazy_cfi_set_arena(struct swi_lazy_cfi *z, size_t bytes)
{
	pthread_mutex_lock(&z->lock);
	if (bytes < z->arena_cap - z->arena_used)
		z->arena_cap = z->arena_used + bytes;
	pthread_mutex_unlock(&z->lock);
}

void swi_lazy_cfi_free(struct swi_lazy_cfi *z)
{
	if (!z)
		return;
	if (z->cfi)
		dwarf_cfi_end(z->cfi);
	if (z->elf)
		elf_end(z->elf);
	if (z->fd >= 0)
		close(z->fd);
	pthread_mutex_destroy(&z->lock);
	free(z->start);
	free(z->size);
	free(z->fde);
	free(z->slot);
	free(z->extra);
	free(z->arena);
	free(z);
}
