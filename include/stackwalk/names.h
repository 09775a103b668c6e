/*
 * names.h - sw_names: the names a person reads for a code address.
 *
 * A walk gives addresses; a person wants "ns::Box<int>::wait() at
 * box.cc:7", and the functions inlined at that address.  A symbolizer
 * holds a set of modules (ELF files at their load bias); for an address
 * it returns the ELF symbol (raw and demangled) with the offset into it,
 * and the chain of source-level frames at that address, innermost first:
 * each inlined call, then the function that holds the code, each with its
 * source file and line.
 *
 * The DWARF is read by elfutils' libdwfl and libdw, which find separate
 * debug files as gdb does: by build-id under the debug directories, by
 * .gnu_debuglink (its CRC checked), MiniDebugInfo (.gnu_debugdata), and
 * debuginfod when DEBUGINFOD_URLS is set.  Names are demangled by
 * libiberty (C++, Rust legacy and v0).
 *
 * Naming reads files and allocates: it is never part of a walk, and never
 * safe in a signal handler.  Walk first, keep the addresses, name them
 * afterwards.  A symbolizer is used by one thread at a time.  See
 * sw_names(3).
 */
#ifndef STACKWALK_NAMES_H
#define STACKWALK_NAMES_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_names sw_names;

/* One source-level frame at an address (strings owned by the sw_names). */
typedef struct sw_name_frame {
	const char *function;           /* demangled (as is when not mangled), or NULL */
	const char *raw;                /* the linkage name or symbol as in the file, or NULL */
	const char *file;               /* the source file, or NULL */
	unsigned line, column;          /* 0 when unknown */
	int inlined;                    /* 1: an inlined call; the next frame is its caller */
} sw_name_frame;

/* What is known about one address (strings owned by the sw_names). */
typedef struct sw_name {
	const char *module;             /* the module's path, or NULL when no module holds it */
	const char *symbol;             /* the ELF symbol holding the address, raw, or NULL */
	const char *symbol_demangled;   /* the same demangled (as is when not mangled) */
	uint64_t symbol_start;          /* the symbol's loaded address */
	uint64_t offset;                /* address - symbol_start */
	size_t frames;                  /* source-level frames at the address (may exceed `max`) */
} sw_name;

/*
 * sw_names_create - an empty symbolizer.  `debug_dirs` is where separate
 * debug files are looked for, colon-separated as elfutils and gdb take
 * them (a relative entry such as ".debug" is taken beside the module);
 * NULL for the default ":.debug:/usr/lib/debug".
 */
SW_API sw_status sw_names_create(const char *debug_dirs, sw_names **out);

/* sw_names_free - free it and every string it returned. */
SW_API void sw_names_free(sw_names *n);

/*
 * sw_names_add_module - add the ELF file at `path`, loaded at `load_bias`
 * (0 for a non-PIE executable, the load address of a shared object: the
 * bias sw_module_load takes).  SW_E_NOTFOUND if it cannot be read as ELF.
 */
SW_API sw_status sw_names_add_module(sw_names *n, const char *path, uint64_t load_bias);

/*
 * sw_names_add_process - add every file mapped in process `pid` (its
 * /proc/PID/maps; getpid() for the calling process), the vDSO too.
 */
SW_API sw_status sw_names_add_process(sw_names *n, int pid);

/*
 * sw_names_add_core - add every file mapped in the core file at `core`
 * (its NT_FILE notes and the dynamic linker's list; the files themselves
 * are read from where the notes say, or found by build-id; the vDSO from
 * the core), `executable` (optional) the program's when the core does not
 * name it.  One core per symbolizer: SW_E_EXISTS for a second.
 * SW_E_NOTFOUND if the core cannot be read as ELF, SW_E_BADMETA if
 * libdwfl finds no modules in it.
 */
SW_API sw_status sw_names_add_core(sw_names *n, const char *core, const char *executable);

/*
 * sw_names_lookup - name `address`.  For a return address pass the
 * address one byte back (in the call), as debuggers do.  `*out` receives
 * the module and symbol; `frames` (up to `max`, may be NULL when max is 0)
 * the source-level frames innermost first, the last one the function
 * that holds the code; out->frames says how many there are.
 * SW_E_NOTFOUND when no module holds the address (*out is still filled).
 */
SW_API sw_status sw_names_lookup(sw_names *n, uint64_t address, sw_name *out,
                                 sw_name_frame *frames, size_t max);

/*
 * sw_names_symbol - sw_names_lookup without the DWARF: `*out`'s module and
 * ELF symbol (from .symtab, .dynsym, MiniDebugInfo or the separate debug
 * file's .symtab), out->frames 0.  No line table or inline frame is read,
 * so a compressed debug file is not inflated.  *debug_file (optional)
 * receives the separate debug file the symbols were read from, NULL when
 * they are the module's own (it has a .symtab, or no debug file was
 * found).  SW_E_NOTFOUND when no module holds the address.
 */
SW_API sw_status sw_names_symbol(sw_names *n, uint64_t address, sw_name *out,
                                 const char **debug_file);

/*
 * sw_names_demangle - `name` demangled (C++, Rust legacy and v0), or
 * `name` itself when it is not a mangled name.  The result is owned by
 * the sw_names.  NULL only when `name` is NULL.
 */
SW_API const char *sw_names_demangle(sw_names *n, const char *name);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_NAMES_H */
