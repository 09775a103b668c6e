/*
 * cfi_import.h (internal) - DWARF CFI into SWU, one function per FDE.
 *
 * The importer reads .eh_frame and .debug_frame with elfutils' libdw, asks
 * it for the rule row at every change across each FDE's range, and writes
 * the same rules as SWU row ops (swu(5)): CFA = register + offset, the
 * registers saved at CFA offsets, the return address.  What SWU cannot
 * express (expressions, register-in-register) is skipped and counted,
 * never guessed.  Only module loading calls it, never a walk.
 */
#ifndef SW_UNWINDINFO_CFI_IMPORT_H
#define SW_UNWINDINFO_CFI_IMPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include <stackwalk/module.h>

/* Hard limits against hostile CFI. */
#define SWI_CFI_MAX_FDE_BYTES  (64u << 10)     /* one FDE's size */
#define SWI_CFI_MAX_ROWS       (4u * SW_SWU_MAX_ROW_OPS)  /* libdw rows walked in one FDE */
#define SWI_CFI_MAX_WORK       (1u << 26)      /* rows x FDE bytes: libdw replays each row */
#define SWI_CFI_MAX_BLOB_BYTES (1u << 30)      /* SWU bytes in one module */

/* One imported function: ELF addresses (no load bias) and its blob. */
struct swi_cfi_fn {
	uint64_t start, size;
	uint32_t source;                /* SW_CFI_* */
	uint32_t flags;                 /* SW_CODE_SIGNAL_TRAMPOLINE, _ANALYZED, _OUTERMOST or 0,
	                                 * and SW_CODE_PERSONALITY where its CIE names one */
	size_t blob;                    /* offset of its SWU in `blobs` */
	uint32_t blob_size;
};

/* An FDE that was skipped, for instruction analysis to take over. */
struct swi_cfi_skip {
	uint64_t start, size;           /* ELF addresses */
	uint64_t where;                 /* the address whose row made it unimportable */
	uint32_t reason;                /* SW_SKIP_* */
};

/* Where a full load reports its progress (sw_module_load_progress); fn NULL for nowhere. */
struct swi_progress {
	sw_module_progress_fn fn;
	void *data;
};

/* Report `done` of `total` of `stage` to `p` (which may be NULL). */
static inline void swi_progress_report(const struct swi_progress *p, unsigned stage, uint64_t done,
                                       uint64_t total)
{
	if (p && p->fn)
		p->fn(p->data, stage, done, total);
}

struct swi_cfi_import {
	struct swi_cfi_fn *fns;         /* by ascending start, never overlapping */
	size_t nfns, fns_cap;
	struct swi_cfi_skip *skips;     /* FDEs skipped with a known range, in section order */
	size_t nskips, skips_cap;
	uint8_t *blobs;
	size_t blobs_len, blobs_cap;
	/*
	 * Each distinct blob is kept once (swi_cfi_keep_blob): most functions
	 * of a large module share their unwind program with others.  An
	 * open-addressed table of offsets into `blobs`, by content.
	 */
	struct swi_cfi_blob_ref {
		size_t offset;
		uint32_t size, hash;    /* size 0: an empty slot */
	} *dedup;
	size_t dedup_cap, dedup_used;   /* dedup_cap a power of two, or 0 */
	sw_module_import_stats stats;   /* all but `symbols` */
	const struct swi_progress *progress;  /* or NULL (swi_cfi_import sets it) */
};

/*
 * The blob just written at blobs + blobs_len (`len` bytes): its offset in
 * `blobs`, an earlier identical blob's or its own (then kept: blobs_len
 * grows).  Without memory for the index the blob is simply kept.
 */
size_t swi_cfi_keep_blob(struct swi_cfi_import *imp, uint32_t len);

/*
 * Import the CFI of `elf` (already checked to be of `arch`).  A function
 * whose CFI cannot be expressed is skipped and counted; an error is
 * returned only for memory, or for sections libelf cannot read at all.
 * Free with swi_cfi_import_free(), also after an error.
 */
sw_status swi_cfi_import(Elf *elf, sw_arch arch, const struct swi_progress *progress,
                         struct swi_cfi_import *out);
void swi_cfi_import_free(struct swi_cfi_import *imp);

/*
 * .eh_frame read one FDE at a time, for a module registered from its
 * .eh_frame_hdr (lib/native/lazy_cfi.c): the section's bytes and the
 * last CIE read (FDEs of one object share it).
 */
struct swi_eh_frame {
	Elf_Data *data;
	uint64_t addr;                  /* sh_addr: the base of PC-relative pointers */
	const unsigned char *ident;     /* the file's e_ident */
	sw_arch arch;
	uint64_t cie_offset;            /* the CIE read last, (uint64_t)-1 for none */
	bool cie_valid;
	unsigned cie_fde_enc;
	bool cie_personality;           /* its augmentation names a personality routine ('P') */
	unsigned cie_lsda_enc;          /* and encodes the FDEs' LSDA pointers so ('L'), or omit */
	uint32_t fde_flags;             /* the FDE read last: SW_CODE_PERSONALITY or 0 (fde_range) */
};

/* The .eh_frame of `elf`: SW_E_NOTFOUND without one (or a compressed one). */
sw_status swi_eh_frame_open(Elf *elf, sw_arch arch, struct swi_eh_frame *out);

/*
 * The FDE at byte `offset` of .eh_frame: its range [*lo, *hi) (ELF
 * addresses) and its size in bytes; ef->fde_flags then holds
 * SW_CODE_PERSONALITY when its personality routine has work there (a
 * CIE with 'P', and an LSDA pointer not 0 or none in the CIE).
 * SW_E_BADMETA when no FDE that decodes starts there.  Reads only the
 * FDE's header and its CIE.
 */
sw_status swi_eh_frame_fde(struct swi_eh_frame *ef, uint64_t offset, uint64_t *lo, uint64_t *hi,
                           size_t *bytes);

/*
 * Import the function of one .eh_frame FDE, [lo, hi), alone, as
 * swi_cfi_import would: into a fresh *out holding one function (imported,
 * outermost or a signal trampoline, with `flags`: swi_eh_frame_fde's
 * fde_flags) or one skip, with their statistics.  An error only for memory or bad arguments; free
 * *out after either.
 */
sw_status swi_cfi_import_one(Dwarf_CFI *cfi, sw_arch arch, uint64_t lo, uint64_t hi,
                             size_t fde_bytes, uint32_t flags, struct swi_cfi_import *out);

/*
 * Append one function (ELF addresses) with a copy of its blob, after the
 * import: the caller sorts imp->fns again.  SW_E_LIMIT past
 * SWI_CFI_MAX_BLOB_BYTES.
 */
sw_status swi_cfi_add_fn(struct swi_cfi_import *imp, uint64_t start, uint64_t size, uint32_t source,
                         uint32_t flags, const uint8_t *blob, size_t len);

/*
 * Whether `scn` is an executable PROGBITS section with bytes, its header
 * in *sh: the code a scan or an analysis reads.
 */
bool swi_code_section(Elf_Scn *scn, GElf_Shdr *sh);

/*
 * The bytes of such a section, whole and in memory, and its header in
 * *sh; NULL for any other section or one that cannot be read.
 */
Elf_Data *swi_code_section_data(Elf_Scn *scn, GElf_Shdr *sh);

/* qsort's order for imp->fns: by start, the larger first where two start together. */
int swi_cfi_fn_cmp(const void *pa, const void *pb);

/*
 * Is [lo, hi) covered, even in part, by one of imp->fns[0 .. n), sorted by
 * start and not overlapping one another?
 */
bool swi_cfi_overlaps(const struct swi_cfi_import *imp, size_t n, uint64_t lo, uint64_t hi);

/*
 * Add a function of no frame (an empty SWU blob): an outermost function
 * (SW_CODE_OUTERMOST) or a signal trampoline,
 * whose caller the walker finds without unwind rules.  An error only for
 * memory or the import's size limit.
 */
sw_status swi_cfi_add_frameless(struct swi_cfi_import *imp, sw_arch arch, uint64_t start, uint64_t size,
                                uint32_t source, uint32_t flags);

/*
 * Signal trampolines no CFI describes, known by their instructions
 * (sigreturn_code.c): glibc's i386 __restore and __restore_rt, musl's.
 * Each becomes a function of source SW_CFI_SIGRETURN_CODE with
 * SW_CODE_SIGNAL_TRAMPOLINE and a blob of no frame, counted in
 * stats.sigreturn_code; imp->fns stays sorted.  Run after the import,
 * before analysis; an error only for memory.
 */
sw_status swi_find_sigreturn_code(Elf *elf, sw_arch arch, struct swi_cfi_import *imp);

/* A function symbol (ELF address) for instruction analysis to consider. */
struct swi_symbol_range {
	uint64_t start, size;
	const char *name;
};

/*
 * Instruction analysis of what the CFI import left (analyze_module.c):
 * PLT entries, then FDEs skipped for a rule SWU cannot say and function
 * symbols no FDE covers, of at most `code_budget` bytes of code in all
 * (the rest is counted in analysis_failed; SWI_ANALYZE_ALL for no limit);
 * a symbol _start no FDE covers is an outermost function
 * (swi_cfi_add_frameless).  Adds to imp->fns (sorted again) and imp's
 * analysis statistics; an error only for memory.
 */
#define SWI_ANALYZE_ALL UINT64_MAX
sw_status swi_analyze_module(Elf *elf, sw_arch arch, const struct swi_symbol_range *syms,
                             size_t nsyms, uint64_t code_budget, struct swi_cfi_import *imp);

#endif /* SW_UNWINDINFO_CFI_IMPORT_H */
