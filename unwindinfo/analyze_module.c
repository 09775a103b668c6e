/*
 * analyze_module.c - the code of an ELF module that instruction analysis
 * describes, once the CFI import is done.
 *
 * Candidates are the FDEs the importer skipped for a rule SWU cannot say
 * (a DWARF expression, a register rule), the function symbols no FDE
 * covers (hand-written assembly without CFI), and the PLT, cut into its
 * entries: each is a stub that jumps through the GOT with CFA = SP + one
 * pointer throughout (on AArch64 SP and LR untouched), the lazy path
 * pushing one more word, and PLT0 pushing one (on AArch64 x16 and x30).
 * A symbol named _start that no FDE covers is the outermost
 * frame: it gets an SWU blob of no frame and SW_CODE_OUTERMOST, for the
 * walker to stop (the importer does the same for an FDE whose return
 * address is undefined from its first instruction).
 *
 * Every load runs it, not only an eager one (SW_MODULE_ANALYZE), because
 * the walk cannot: Capstone allocates, and a walk may run in a signal
 * handler of the process it walks, where nothing may allocate, lock or make
 * a syscall.  So code that neither CFI nor a frame pointer describes (-Os
 * code built without unwind tables, assembly) is analyzed here, once, and
 * the walk only decodes the SWU it gave.  The cost is bounded per load: the
 * whole PLT (a thread stopped in a stub is common, AArch64's PLT has no CFI,
 * and an entry is a few instructions), then at most `code_budget` bytes of
 * the rest, in address order; what is left stays unknown code, which the
 * walk's frame-pointer fallback validates or stops at with a reason.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include "util.h"
#include "array_grow.h"
#include "cfi_import.h"
#include "analyze.h"

#define MAX_CODE_SECTIONS 256
/* PLT entries analyzed in one module: a hostile .plt of the file's whole
 * size would otherwise cost every load seconds (real ones hold thousands). */
#define MAX_PLT_ENTRIES   (1u << 18)
/* What one candidate costs of the budget at least: a tiny function still
 * costs a disassembler's set-up. */
#define MIN_CANDIDATE_COST 64
/* Candidates analyzed between two progress reports (sw_module_load_progress). */
#define ANALYSIS_PROGRESS_EVERY 16

/*
 * A code section, by its place in the file: the analysis reads only the
 * bytes of what it analyzes (the PLT and a budget), never a whole .text,
 * which in a big library is tens of megabytes a load would copy.
 */
struct code_section {
	uint64_t addr, size;
	uint64_t offset;                /* in the file */
	bool plt;
	unsigned plt0, entry;           /* PLT: the first entry's size and the others' */
};

struct candidate {
	uint64_t start, size;
	unsigned mode;                  /* SWI_ANALYZE_* */
	bool outermost;
};

/* A skipped FDE's start, and the furthest end of it and every one before (sorted by start). */
struct skip_reach {
	uint64_t start, reach;
};

struct amod {
	Elf *elf;
	sw_arch arch;
	struct swi_cfi_import *imp;
	struct code_section secs[MAX_CODE_SECTIONS];
	const uint8_t *plt_bytes[MAX_CODE_SECTIONS];    /* a PLT's, read whole at its first entry */
	size_t nsecs;
	struct candidate *cands;
	size_t ncands, cands_cap;
	size_t imported;                /* imp->fns[0 .. imported) came from CFI, sorted */
	struct skip_reach *skips;       /* imp->skips, for covered(): every load asks it per symbol */
	uint64_t fn_start;              /* the function being added */
};

/* PLT sections and the size of their entries (PLT0 first in .plt). */
static void plt_layout(sw_arch arch, const char *name, struct code_section *s)
{
	s->plt = strcmp(name, ".plt") == 0 || strcmp(name, ".plt.sec") == 0 ||
	         strcmp(name, ".plt.got") == 0 || strcmp(name, ".iplt") == 0;
	if (!s->plt)
		return;
	s->entry = 16;
	s->plt0 = strcmp(name, ".plt") == 0 ? (arch == SW_ARCH_ARM64 ? 32 : 16) : 0;
	/* .plt.got without IBT: jmp *GOT and a 2-byte nop. */
	if (arch != SW_ARCH_ARM64 && strcmp(name, ".plt.got") == 0 && s->size % 16 != 0)
		s->entry = 8;
}

/* The code sections. */
static void read_sections(Elf *elf, struct amod *am)
{
	size_t shstrndx;

	if (elf_getshdrstrndx(elf, &shstrndx) != 0)
		return;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL && am->nsecs < MAX_CODE_SECTIONS;) {
		struct code_section *s = &am->secs[am->nsecs];
		const char *name;
		GElf_Shdr sh;

		if (!swi_code_section(scn, &sh) || (sh.sh_flags & SHF_COMPRESSED))
			continue;
		name = elf_strptr(elf, shstrndx, sh.sh_name);
		memset(s, 0, sizeof *s);
		s->size = sh.sh_size;
		plt_layout(am->arch, name ? name : "", s);
		s->addr = sh.sh_addr;
		s->offset = sh.sh_offset;
		am->nsecs++;
	}
}

/* The code section holding all of [start, start + size), or NULL. */
static const struct code_section *section_of(const struct amod *am, uint64_t start, uint64_t size)
{
	for (size_t i = 0; i < am->nsecs; i++) {
		const struct code_section *s = &am->secs[i];

		if (start >= s->addr && start - s->addr < s->size && size <= s->size - (start - s->addr))
			return s;
	}
	return NULL;
}

static bool in_plt(const struct amod *am, uint64_t start)
{
	const struct code_section *s = section_of(am, start, 1);

	return s && s->plt;
}

static sw_status add_candidate(struct amod *am, uint64_t start, uint64_t size, unsigned mode,
                               bool outermost)
{
	sw_status st;

	if (size == 0 || !section_of(am, start, size))
		return SW_OK;
	if ((st = swi_array_grow((void **)&am->cands, &am->cands_cap,
	                         am->ncands + 1, sizeof *am->cands)) != SW_OK)
		return st;
	am->cands[am->ncands++] = (struct candidate){ start, size, mode, outermost };
	return SW_OK;
}

/* Does [lo, hi) overlap a function imported from CFI? */
static bool covered_by_imported(const struct amod *am, uint64_t lo, uint64_t hi)
{
	return swi_cfi_overlaps(am->imp, am->imported, lo, hi);
}

static int skip_reach_cmp(const void *pa, const void *pb)
{
	const struct skip_reach *a = pa, *b = pb;

	return a->start < b->start ? -1 : a->start > b->start;
}

/*
 * The skipped FDEs sorted, each with the furthest end up to it, so that
 * covered() is a binary search: a linear scan per symbol would cost a
 * hostile file's symbols times its FDEs at every load.
 */
static sw_status index_skips(struct amod *am)
{
	const struct swi_cfi_import *imp = am->imp;
	uint64_t reach = 0;

	if (imp->nskips == 0)
		return SW_OK;
	am->skips = malloc(imp->nskips * sizeof *am->skips);
	if (!am->skips)
		return SW_E_NOMEM;
	for (size_t i = 0; i < imp->nskips; i++)
		am->skips[i] = (struct skip_reach){ imp->skips[i].start,
		                                    imp->skips[i].start + imp->skips[i].size };
	qsort(am->skips, imp->nskips, sizeof *am->skips, skip_reach_cmp);
	for (size_t i = 0; i < imp->nskips; i++) {
		if (am->skips[i].reach < reach)
			am->skips[i].reach = reach;
		reach = am->skips[i].reach;
	}
	return SW_OK;
}

/* ... or a skipped FDE? */
static bool covered(const struct amod *am, uint64_t lo, uint64_t hi)
{
	size_t below;

	if (covered_by_imported(am, lo, hi))
		return true;
	/* below: how many skipped FDEs start before hi; the last of them reaches furthest. */
	SWI_SEARCH(below, am->imp->nskips, mid, am->skips[mid].start < hi);
	return below > 0 && am->skips[below - 1].reach > lo;
}

/* The PLT, entry by entry. */
static sw_status gather_plt(struct amod *am)
{
	sw_status st = SW_OK;

	for (size_t i = 0; i < am->nsecs && st == SW_OK; i++) {
		const struct code_section *s = &am->secs[i];
		uint64_t off = 0;

		if (!s->plt)
			continue;
		if (s->plt0 && s->plt0 <= s->size) {
			st = add_candidate(am, s->addr, s->plt0, SWI_ANALYZE_STUB, false);
			off = s->plt0;
		}
		for (; st == SW_OK && off + s->entry <= s->size && am->ncands < MAX_PLT_ENTRIES;
		     off += s->entry)
			st = add_candidate(am, s->addr + off, s->entry, SWI_ANALYZE_STUB, false);
	}
	return st;
}

/* The rest: what the CFI import skipped, and functions no FDE covers. */
static sw_status gather_rest(struct amod *am, const struct swi_symbol_range *syms, size_t nsyms)
{
	const struct swi_cfi_import *imp = am->imp;
	sw_status st = SW_OK;

	/* FDEs with rules SWU cannot say; outermost frames. */
	for (size_t i = 0; i < imp->nskips && st == SW_OK; i++) {
		const struct swi_cfi_skip *k = &imp->skips[i];

		switch (k->reason) {
		case SW_SKIP_EXPRESSION:
		case SW_SKIP_REGISTER_RULE:
		case SW_SKIP_UNKNOWN_REGISTER:
		case SW_SKIP_BAD_CFI:
			if (!in_plt(am, k->start))
				st = add_candidate(am, k->start, k->size, 0, false);
			break;
		default:
			break;          /* too big, or overlapping: not ours to guess */
		}
	}
	/* Functions no FDE covers. */
	if (st == SW_OK)
		st = index_skips(am);
	for (size_t i = 0; i < nsyms && st == SW_OK; i++) {
		const struct swi_symbol_range *y = &syms[i];

		if (y->size == 0 || y->start + y->size < y->start || in_plt(am, y->start) ||
		    covered(am, y->start, y->start + y->size))
			continue;
		st = add_candidate(am, y->start, y->size, 0, y->name && strcmp(y->name, "_start") == 0);
	}
	return st;
}

static int cand_cmp(const void *pa, const void *pb)
{
	const struct candidate *a = pa, *b = pb;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	return 0;
}

static sw_status add_piece(void *ctx, uint32_t offset, uint32_t size, const uint8_t *blob,
                           size_t blob_size)
{
	struct amod *am = ctx;
	sw_status st = swi_cfi_add_fn(am->imp, am->fn_start + offset, size, SW_CFI_ANALYSIS,
	                      SW_CODE_ANALYZED, blob, blob_size);

	if (st == SW_OK)
		am->imp->stats.analyzed_entries++;
	return st;
}

/* `size` bytes of the file at `offset`, kept by libelf until the ELF handle ends; or NULL. */
static const uint8_t *file_bytes(Elf *elf, uint64_t offset, uint64_t size)
{
	Elf_Data *d;

	if (offset > INT64_MAX || size > SIZE_MAX)
		return NULL;
	d = elf_getdata_rawchunk(elf, (int64_t)offset, (size_t)size, ELF_T_BYTE);
	return d && d->d_buf && d->d_size == size ? d->d_buf : NULL;
}

/*
 * The candidate's bytes, or NULL where the file does not hold them: a
 * PLT is read once whole (its entries are many and small), other code one
 * candidate at a time.
 */
static const uint8_t *candidate_bytes(struct amod *am, const struct candidate *k)
{
	const struct code_section *s = section_of(am, k->start, k->size);
	const uint8_t **plt;

	if (!s)
		return NULL;
	if (!s->plt)
		return file_bytes(am->elf, s->offset + (k->start - s->addr), k->size);
	plt = &am->plt_bytes[s - am->secs];
	if (!*plt)
		*plt = file_bytes(am->elf, s->offset, s->size);
	return *plt ? *plt + (k->start - s->addr) : NULL;
}

static sw_status analyze_one(struct amod *am, const struct candidate *k)
{
	struct swi_analysis an;
	size_t before = am->imp->nfns;
	const uint8_t *code;
	sw_status st;

	if (k->size > SW_SWU_MAX_CODE_SIZE)
		return SW_OK;
	if (k->outermost) {
		st = swi_cfi_add_frameless(am->imp, am->arch, k->start, k->size, SW_CFI_EH_FRAME, SW_CODE_OUTERMOST);
		if (st == SW_OK)
			am->imp->stats.outermost++;
		return st;
	}
	if (!(code = candidate_bytes(am, k))) {
		am->imp->stats.analysis_failed++;
		return SW_OK;
	}
	st = swi_analyze(am->arch, code, (size_t)k->size, k->start, k->mode, &an);
	if (st == SW_E_NOMEM)
		return st;
	if (st != SW_OK || an.fail) {
		am->imp->stats.analysis_failed++;
		return SW_OK;
	}
	am->fn_start = k->start;
	st = swi_analysis_pieces(&an, am->arch, (uint32_t)k->size, add_piece, am);
	swi_analysis_free(&an);
	if (st == SW_E_NOMEM)
		return st;
	if (st != SW_OK || am->imp->nfns == before) {
		/* Beyond a limit of the format: none of it, rather than a part. */
		am->imp->stats.analyzed_entries -= (uint32_t)(am->imp->nfns - before);
		am->imp->nfns = before;
		am->imp->stats.analysis_failed++;
		return SW_OK;
	}
	am->imp->stats.analyzed++;
	return SW_OK;
}

/* Analyze the PLT, then the rest while the budget lasts. */
sw_status swi_analyze_module(Elf *elf, sw_arch arch, const struct swi_symbol_range *syms,
                             size_t nsyms, uint64_t code_budget, struct swi_cfi_import *imp)
{
	struct amod *am;
	uint64_t end = 0;
	sw_status st;

	if (!elf || !imp)
		return SW_E_INVAL;
	am = calloc(1, sizeof *am);
	if (!am)
		return SW_E_NOMEM;
	am->elf = elf;
	am->arch = arch;
	am->imp = imp;
	am->imported = imp->nfns;
	read_sections(elf, am);
	st = gather_plt(am);
	if (st == SW_OK)
		st = gather_rest(am, syms, nsyms);
	if (st == SW_OK && am->ncands > 1)
		qsort(am->cands, am->ncands, sizeof *am->cands, cand_cmp);
	for (size_t i = 0; i < am->ncands && st == SW_OK; i++) {
		const struct candidate *k = &am->cands[i];
		uint64_t cost = k->size > MIN_CANDIDATE_COST ? k->size : MIN_CANDIDATE_COST;

		if (i % ANALYSIS_PROGRESS_EVERY == 0)
			swi_progress_report(imp->progress, SW_MODULE_STAGE_ANALYSIS, i, am->ncands);

		/* The first of overlapping candidates wins; CFI beats them all. */
		if (k->start < end || covered_by_imported(am, k->start, k->start + k->size))
			continue;
		end = k->start + k->size;
		if (k->mode != SWI_ANALYZE_STUB && !k->outermost) {
			if (cost > code_budget) {
				imp->stats.analysis_failed++;
				continue;
			}
			code_budget -= cost;
		}
		st = analyze_one(am, k);
	}
	if (st == SW_OK)
		swi_progress_report(imp->progress, SW_MODULE_STAGE_ANALYSIS, am->ncands, am->ncands);
	/* Sorted again only if analysis added to it (a big module's CFI alone is sorted). */
	if (st == SW_OK && imp->nfns > am->imported)
		qsort(imp->fns, imp->nfns, sizeof *imp->fns, swi_cfi_fn_cmp);
	free(am->skips);
	free(am->cands);
	free(am);
	return st;
}
