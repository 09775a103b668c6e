/*
 * lazy_cfi.h (internal) - a module's CFI imported one function at a time.
 *
 * A big module's CFI costs seconds to import whole (libLLVM: 95,000
 * FDEs), and a walk needs a handful of its functions.  The module's
 * .eh_frame_hdr already lists every FDE by address, so registration
 * reads that table (and each FDE's address range, a few header bytes),
 * and a function's rules are imported into SWU the first time a lookup
 * lands in it.  The module is one code table with a source
 * (codemap_table.h): a lookup bisects the function starts and reads the
 * function's slot.
 *
 * Async-signal safety: a slot is published once, with a release store,
 * pointing to a record in an arena allocated at load, so readers take no
 * lock.  Only an import allocates (libdw) and locks (libdw is not
 * thread-safe); a module whose walks must not do either (SW_MODULE_LAZY_
 * SIGNAL_SAFE) never imports in a lookup: it marks the slot "noted" with
 * a compare-and-swap and describes the function as SW_CODE_NOT_IMPORTED,
 * and sw_module_import_noted imports what was noted, outside the walks.
 * A full arena gives the same answer.
 */
#ifndef SW_LIB_NATIVE_LAZY_CFI_H
#define SW_LIB_NATIVE_LAZY_CFI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <gelf.h>
#include <stackwalk.h>
#include "codemap_table.h"

struct swi_lazy_cfi;

/* Hard limits against hostile tables. */
#define SWI_LAZY_MAX_FDES     (1u << 24)        /* entries of one .eh_frame_hdr */
#define SWI_LAZY_SMALL_CODE   (8u << 20)        /* executable bytes scanned for sigreturn code */

/* Where lookups landed in a placeholder, kept for its load to import those functions first. */
#define SWI_LAZY_NOTED_PCS    8

/* The arena's size for n functions: room for them all (a record is 150-250 bytes), within bounds. */
#define SWI_LAZY_ARENA_MIN    (256u << 10)
#define SWI_LAZY_ARENA_MAX    (64u << 20)
#define SWI_LAZY_ARENA_PER_FN 256u

/*
 * Open the lazy view of `elf` (of `arch`, loaded at `bias`): read and
 * check .eh_frame_hdr, each FDE's range, and describe the PLT's stubs
 * (and, in a module of at most SWI_LAZY_SMALL_CODE bytes of code,
 * sigreturn code) eagerly.  `walks_import`: may a lookup import.  On
 * success the view owns `elf` and `fd` (closed by swi_lazy_cfi_free).
 * SW_E_UNSUPPORTED: the module has no table this can use (no
 * .eh_frame_hdr, another encoding, .debug_frame beside it, an empty
 * table): load it eagerly.  SW_E_BADMETA or SW_E_TRUNCATED for a table
 * that is unsorted, cut short, or points outside .eh_frame or at an FDE
 * that does not start where it says; SW_E_NOMEM.
 */
struct swi_symbol_range;

/*
 * What instruction analysis may describe at the open, as a full load's:
 * the PLT, then the symbols no FDE covers within `budget` bytes of code
 * (swi_analyze_module).
 */
struct swi_lazy_analysis {
	const struct swi_symbol_range *syms;
	size_t nsyms;
	uint64_t budget;
};

sw_status swi_lazy_cfi_open(Elf *elf, int fd, sw_arch arch, uint64_t bias, int walks_import,
                            const sw_module *m, const struct swi_lazy_analysis *analysis,
                            struct swi_lazy_cfi **out);

/*
 * A placeholder (SW_MODULE_PLACEHOLDER): a view of `elf`'s code range
 * only, from its section headers, whose lookups land in one function
 * without rules (SW_CODE_NOT_IMPORTED) and are noted; swi_lazy_cfi_load
 * opens it later as swi_lazy_cfi_open would have, while it stays
 * registered.  Owns `elf` and `fd` on success.  SW_E_UNSUPPORTED where
 * swi_lazy_cfi_open would refuse the file for its sections (no
 * .eh_frame_hdr, .debug_frame beside it, no code).
 */
sw_status swi_lazy_cfi_placeholder(Elf *elf, int fd, sw_arch arch, uint64_t bias, int walks_import,
                                   const sw_module *m, struct swi_lazy_cfi **out);

/* Is the view still a placeholder?  *asked (optional): has a lookup landed in it. */
bool swi_lazy_cfi_pending(struct swi_lazy_cfi *z, bool *asked);

/* The file the view reads. */
Elf *swi_lazy_cfi_elf(const struct swi_lazy_cfi *z);

/*
 * Open a placeholder's view (the module's symbols read first, for
 * `analysis` and the names), then import the functions lookups landed
 * in; *imported: those, plus one for the load itself (0 when the view was
 * open already).  A view that cannot be opened describes no code from
 * then on and gives the error again.  Not from a signal handler.
 */
sw_status swi_lazy_cfi_load(struct swi_lazy_cfi *z, const struct swi_lazy_analysis *analysis,
                            size_t *imported);

/* The code table to register (its source is the view). */
const struct swi_code_table *swi_lazy_cfi_table(const struct swi_lazy_cfi *z);

/* The statistics so far: what registration found, and what imports added. */
void swi_lazy_cfi_stats(struct swi_lazy_cfi *z, sw_module_import_stats *out);

/*
 * Import every function a lookup noted (or, with address != 0, the one
 * holding `address`); *imported (optional) counts those imported now.
 * SW_E_LIMIT when the arena is full, SW_E_NOMEM.  Not from a signal
 * handler.
 */
sw_status swi_lazy_cfi_import(struct swi_lazy_cfi *z, uint64_t address, size_t *imported);

/*
 * Leave at most `bytes` of the arena to imports (tests of a full arena);
 * swi_module_limit_arena is the same for a module, a no-op for a full one.
 */
void swi_lazy_cfi_set_arena(struct swi_lazy_cfi *z, size_t bytes);
void swi_module_limit_arena(sw_module *m, size_t bytes);

void swi_lazy_cfi_free(struct swi_lazy_cfi *z);

/* From module.c: the name of the function symbol starting at `address` (loaded), or NULL. */
const char *swi_module_name_at(const sw_module *m, uint64_t address);

#endif /* SW_LIB_NATIVE_LAZY_CFI_H */
