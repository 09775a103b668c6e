/*
 * module.h - sw_module: native ELF code, its unwind rules and its symbols.
 *
 * A native module (an executable or a shared library, of any of the
 * library's architectures) is loaded once: its DWARF CFI (.eh_frame, and
 * .debug_frame where present) is imported into SWU function by function,
 * and its function symbols (.symtab and .dynsym) are kept for
 * symbolization.  Registering the module then adds its functions to a
 * code map as one table, so that the walker unwinds native frames with
 * the same decoder as managed ones.  A lazy load (SW_MODULE_LAZY) reads
 * only the .eh_frame_hdr index and imports a function's CFI the first
 * time a lookup lands in it.
 * See sw_module(3).
 */
#ifndef STACKWALK_MODULE_H
#define STACKWALK_MODULE_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>
#include <stackwalk/codemap.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_module sw_module;

/* Where a native function's unwind rules came from. */
enum {
	SW_CFI_EH_FRAME    = 1,         /* .eh_frame (found through .eh_frame_hdr when present) */
	SW_CFI_DEBUG_FRAME = 2,         /* .debug_frame */
	SW_CFI_ANALYSIS    = 3,         /* no usable CFI: instruction analysis */
	SW_CFI_SIGRETURN_CODE = 4       /* no CFI: a signal trampoline known by its instructions */
};

/*
 * One imported function.  A code-map entry registered by
 * sw_module_register() has the flags SW_CODE_NATIVE and `flags`, and its
 * method handle points to this record (owned by the module).  A signal
 * trampoline (its CIE has the 'S' augmentation; or, without CFI, its
 * instructions are a sigreturn sequence: source SW_CFI_SIGRETURN_CODE) is
 * registered with SW_CODE_SIGNAL_TRAMPOLINE and an SWU blob of no frame:
 * the walker unwinds it from the kernel's signal frame.
 */
typedef struct sw_native_function {
	const sw_module *module;
	const char *name;               /* the function symbol at `start`, or NULL */
	uint64_t start;                 /* first byte: ELF address + load bias */
	uint64_t size;                  /* bytes, the FDE's address range */
	const uint8_t *unwind;          /* its SWU blob (see swu(5)) */
	uint32_t unwind_size;
	uint32_t source;                /* SW_CFI_* */
	uint32_t flags;                 /* more SW_CODE_* flags: SIGNAL_TRAMPOLINE, ANALYZED, OUTERMOST,
	                                 * PERSONALITY (its CIE's personality routine has work here) */
} sw_native_function;

/* Why a function's CFI was not imported. */
enum {
	SW_SKIP_EXPRESSION = 0,         /* the CFA or a register is a DWARF expression (PLT, stack realignment) */
	SW_SKIP_REGISTER_RULE = 1,      /* a register held in another register, or a val_offset rule */
	SW_SKIP_OUTERMOST = 2,          /* the return address is undefined: an outermost frame (_start) */
	SW_SKIP_UNKNOWN_REGISTER = 3,   /* a rule for a register the library does not track */
	SW_SKIP_LIMIT = 4,              /* beyond a hard limit (code size, rows, CFI size) */
	SW_SKIP_OVERLAP = 5,            /* overlaps another function's CFI */
	SW_SKIP_BAD_CFI = 6,            /* the CFI is malformed; libdw could not evaluate it */
	SW_SKIP_COUNT = 7
};
#define SW_MODULE_SKIP_MAX 16           /* room in sw_module_import_stats.skipped_by */

/* What loading a module found (sw_module_stats). */
typedef struct sw_module_import_stats {
	uint32_t fdes;                  /* FDEs read from .eh_frame and .debug_frame */
	uint32_t functions;             /* functions imported into SWU */
	uint32_t from_eh_frame;         /* of which from .eh_frame */
	uint32_t from_debug_frame;      /* of which from .debug_frame */
	uint32_t signal_trampolines;    /* of which signal trampolines */
	uint32_t ignored;               /* FDEs for no code, or .debug_frame FDEs for code .eh_frame covers */
	uint32_t skipped;               /* FDEs not imported: the sum of skipped_by */
	uint32_t skipped_by[SW_MODULE_SKIP_MAX];  /* indexed by SW_SKIP_* */
	uint32_t symbols;               /* function symbols kept from .symtab and .dynsym */
	uint32_t row_ops;               /* SWU row ops written */
	uint64_t unwind_bytes;          /* SWU bytes kept, CFI and analysis (each distinct blob once) */
	/* Instruction analysis (every load; see SW_MODULE_ANALYZE): */
	uint32_t analyzed;              /* functions described (wholly or in part) by instruction analysis */
	uint32_t analyzed_entries;      /* the functions they gave (a function described in part gives
	                                 * one per run of describable instructions) */
	uint32_t analysis_failed;       /* candidates analysis could not describe, or beyond the limit */
	/* Outermost functions (_start, clone's child), flagged SW_CODE_OUTERMOST, not in `functions`:
	 * FDEs whose return address is undefined from the start, and a _start symbol no FDE covers. */
	uint32_t outermost;
	uint64_t index_bytes;           /* the table a code map searches (sw_module_register): 8 bytes
	                                 * a function, 4 a distinct blob, a block index of at most
	                                 * a byte a function */
	uint64_t rule_bytes;            /* the body rules decoded beforehand, one per distinct blob */
	uint32_t sigreturn_code;        /* signal trampolines without CFI, known by their
	                                 * instructions (SW_CFI_SIGRETURN_CODE; not in functions) */
	/*
	 * A lazy module (SW_MODULE_LAZY): fdes, ignored and skipped_by[SW_SKIP_OVERLAP]
	 * are .eh_frame_hdr's entries; functions, the other skips, row_ops and
	 * unwind_bytes grow as functions are imported.  0 for a full load.
	 */
	uint32_t lazy;                  /* functions registered to be imported when first looked up */
	uint32_t lazy_imported;         /* of them, imported so far (or found not importable) */
	uint32_t lazy_not_imported;     /* lookups answered SW_CODE_NOT_IMPORTED */
	uint64_t arena_bytes;           /* bytes of the module's arena in use */
} sw_module_import_stats;

/* Options of sw_module_load_flags() and sw_module_load_image_flags(). */
enum {
	/*
	 * Describe all the code that has no usable CFI by instruction
	 * analysis (Capstone): FDEs skipped for expressions or register rules,
	 * function symbols no FDE covers, a symbol _start no FDE covers as
	 * outermost (SW_CODE_OUTERMOST).  Every load does so for the PLT and
	 * at most 256 KiB of the rest; the option lifts that limit.  See
	 * sw_module(3).
	 */
	SW_MODULE_ANALYZE = 1,
	/*
	 * Register the module from its .eh_frame_hdr, in time and memory
	 * proportional to its functions, and import a function's CFI the first
	 * time a lookup lands in it (kept in an arena the load allocates).  A
	 * walk then imports: it allocates and takes the module's lock, so this
	 * is for walks of another process or a core file, or in-process walks
	 * outside signal handlers.  A module without .eh_frame_hdr, with
	 * .debug_frame, loaded from an image or with SW_MODULE_ANALYZE is
	 * loaded in full.  Walks give the same frames either way.
	 */
	SW_MODULE_LAZY = 2,
	/*
	 * SW_MODULE_LAZY whose walks never import (async-signal-safe): a
	 * function not imported yet is noted, and a walk stops in it with
	 * SW_E_NOTIMPORTED; sw_module_import_noted() imports what walks noted.
	 * So does a walk of a SW_MODULE_LAZY module whose arena is full.
	 */
	SW_MODULE_LAZY_SIGNAL_SAFE = 4,
	/*
	 * A lazy load deferred further: the load reads the file's headers and
	 * keeps it open; the module's code range is registered as one
	 * function without rules, where a walk stops with SW_E_NOTIMPORTED
	 * and notes it.  sw_module_import_noted() then reads the symbols and
	 * the .eh_frame_hdr (as SW_MODULE_LAZY's load) and imports the
	 * functions walks landed in.  Until then sw_module_symbolize() gives
	 * SW_E_NOTIMPORTED.  Lookups take no lock and allocate nothing;
	 * after the load, walks import only without SW_MODULE_LAZY_SIGNAL_SAFE.
	 * A file SW_MODULE_LAZY would load in full is loaded now, lazily or in
	 * full as that flag says.
	 */
	SW_MODULE_PLACEHOLDER = 8
};

/*
 * sw_module_load - read the ELF file at `path` (ET_EXEC or ET_DYN, x86-64,
 * i386 or AArch64, little-endian), import its CFI, describe its PLT
 * stubs (by their instructions) and read its symbols.
 * Addresses become ELF address + `load_bias` (0 for a non-PIE executable,
 * the load address of a shared object).  *arch_out (optional) receives
 * the file's architecture.  SW_E_UNSUPPORTED for another kind of file,
 * SW_E_BADMETA or SW_E_TRUNCATED for a malformed one, SW_E_NOTFOUND if
 * the file cannot be opened.  A function whose CFI the library cannot
 * express is skipped and counted, not an error.
 */
SW_API sw_status sw_module_load(const char *path, uint64_t load_bias, sw_arch *arch_out,
                                sw_module **out);

/*
 * sw_module_register - add one code-map entry (flag SW_CODE_NATIVE) per
 * imported function.  All or nothing: on error (SW_E_EXISTS when code is
 * already registered there) the entries added so far are removed.
 */
SW_API sw_status sw_module_register(sw_module *m, sw_codemap *map);

/* sw_module_unregister - remove the entries sw_module_register added. */
SW_API sw_status sw_module_unregister(sw_module *m, sw_codemap *map);

/*
 * sw_module_symbolize - the function symbol containing `address` (loaded
 * address): *name (owned by the module) and *offset (optional), the
 * distance from the symbol's start.  SW_E_NOTFOUND if none contains it.
 */
SW_API sw_status sw_module_symbolize(const sw_module *m, uint64_t address, const char **name,
                                     uint64_t *offset);

/*
 * sw_module_load_image - the same from an ELF image in memory (`size`
 * bytes, such as a vDSO copied out of a process); the image is not kept.
 */
SW_API sw_status sw_module_load_image(const void *image, size_t size, uint64_t load_bias,
                                      sw_arch *arch_out, sw_module **out);

/*
 * sw_module_load_flags, sw_module_load_image_flags - sw_module_load and
 * sw_module_load_image with options (SW_MODULE_*); an unknown bit is SW_E_INVAL.
 */
SW_API sw_status sw_module_load_flags(const char *path, uint64_t load_bias, unsigned flags,
                                      sw_arch *arch_out, sw_module **out);
SW_API sw_status sw_module_load_image_flags(const void *image, size_t size, uint64_t load_bias,
                                            unsigned flags, sw_arch *arch_out, sw_module **out);

/* The stages of a full load that a progress callback hears about. */
enum {
	SW_MODULE_STAGE_CFI = 0,        /* reading the FDEs: done and total are bytes of
	                                 * .eh_frame and .debug_frame together */
	SW_MODULE_STAGE_ANALYSIS = 1    /* instruction analysis: code ranges analyzed (or
	                                 * passed over) of those found */
};

/*
 * What a long load reports as it goes (sw_module_load_progress): `done`
 * of `total` units of `stage` (SW_MODULE_STAGE_*), `data` the caller's.
 */
typedef void (*sw_module_progress_fn)(void *data, unsigned stage, uint64_t done, uint64_t total);

/*
 * sw_module_load_progress - sw_module_load_flags that calls `progress`
 * (when not NULL) as it works: once as each stage starts, every few dozen
 * units, and once as it ends (done == total), on the calling thread.  A
 * large library takes seconds (libLLVM, 8 s); a tool can show how far it is.
 */
SW_API sw_status sw_module_load_progress(const char *path, uint64_t load_bias, unsigned flags,
                                         sw_module_progress_fn progress, void *data,
                                         sw_arch *arch_out, sw_module **out);

/* sw_module_functions - the imported functions, by ascending address (none for a lazy module). */
SW_API sw_status sw_module_functions(const sw_module *m, const sw_native_function **fns,
                                     size_t *count);

/*
 * A function whose CFI the import skipped, by name where a symbol gives
 * one: a frame in it is walked only by instruction analysis
 * (SW_MODULE_ANALYZE, and the PLT at every load) or not at all, and a
 * tool can say which function it could not walk and why.
 */
typedef struct sw_module_skip {
	const char *name;               /* the function symbol holding `start`, or NULL */
	uint64_t start;                 /* the FDE's first byte: ELF address + load bias */
	uint64_t size;                  /* bytes, the FDE's address range */
	uint64_t where;                 /* the address whose CFI row could not be imported (+ bias) */
	uint32_t reason;                /* SW_SKIP_* */
} sw_module_skip;

/*
 * sw_module_skips - the functions whose CFI was skipped, in section order:
 * every skipped FDE that had an address range (stats.skipped also counts
 * FDEs too malformed to have one).  Owned by the module; none for a lazy
 * module, whose statistics count what its imports skipped.
 */
SW_API sw_status sw_module_skips(const sw_module *m, const sw_module_skip **skips, size_t *count);

/* sw_module_stats - what loading found: functions imported, skipped and why. */
SW_API sw_status sw_module_stats(const sw_module *m, sw_module_import_stats *out);

/* sw_module_skip_name - a short name for an SW_SKIP_* reason, or NULL. */
SW_API const char *sw_module_skip_name(unsigned reason);

/*
 * sw_module_import_noted - import the functions of a lazy module that
 * walks noted but could not import (SW_MODULE_LAZY_SIGNAL_SAFE, or a full
 * arena), or with `address` != 0 the function holding it; *imported
 * (optional) counts them.  A placeholder (SW_MODULE_PLACEHOLDER) a walk
 * landed in, or asked for with an address, is loaded first, which counts
 * one more.  SW_E_LIMIT when the arena is full, SW_E_NOTFOUND for an
 * address no function holds; SW_OK and 0 for a module loaded in full.
 * Not from a signal handler.
 */
SW_API sw_status sw_module_import_noted(sw_module *m, uint64_t address, size_t *imported);

/* sw_module_free - free the module; unregister it from every code map first. */
SW_API void sw_module_free(sw_module *m);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_MODULE_H */
