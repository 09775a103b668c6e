/*
 * module_layout.h - a target's mapped files grouped into the modules a
 * debugger loads, without loading anything: the one rule for the hang
 * analysis's stack set (stack_set.c) and swstack, which compiles this
 * file into itself (it is not in the library's interface).
 *
 * The input is the target's list of mappings (sw_mapped_file: from a
 * core's NT_FILE note or /proc/PID/maps, so hostile in a core) and a
 * callback that gives a file's load bias and the end of its segments (for
 * swstack, its program headers: swstack_elf_file_bias).  The output is one
 * module per group of consecutive mappings of a file, which of a file's
 * modules is the one to load, and the bias of those the grouping or the
 * loading needs; a tool then loads them, warns and names frames by them.
 */
#ifndef SW_TARGET_MODULE_LAYOUT_H
#define SW_TARGET_MODULE_LAYOUT_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/core.h>     /* sw_mapped_file */

/*
 * The load bias of `path` mapped at `start` from file offset `offset`, and
 * where its segments end in the target at that bias: NULL, or why there is
 * none (a string the layout copies).
 */
typedef const char *(*module_bias_fn)(void *arg, const char *path, uint64_t start, uint64_t offset,
                                      uint64_t *bias, uint64_t *load_end);

/* One module: consecutive mappings of one file. */
struct layout_module {
	const char *path;               /* its mappings' path (the input's, not a copy) */
	size_t first;                   /* the input index of its first mapping */
	uint64_t lo, hi;                /* the target addresses its mappings cover; once placed,
	                                 * within its file's segments at its bias */
	uint64_t offset;                /* the file offset mapped at `lo` */
	unsigned segments;              /* the mappings that make it up */
	int code;                       /* a mapping of it is executable, or the target does not say */
	int duplicate;                  /* another module of the same file is the one to load */
	size_t copies;                  /* modules of its file, this one included */
	size_t copies_with_code;        /* those of them that are duplicates with code */
	int placed;                     /* the bias callback ran for it; then: */
	uint64_t bias;
	uint64_t load_end;              /* where its segments end at that bias */
	char *no_bias;                  /* why it has no bias, or NULL */
};

struct module_layout {
	struct layout_module *mods;     /* in the order of their first mappings */
	size_t count;
	struct layout_module **by_path; /* the same, by path then address */
};

/*
 * swi_module_layout_build - group files[0..nfiles) into modules, in *ml (what
 * it held before is not freed).  Mappings without a path, of a pseudo-file
 * ("[vdso]", "[heap]") or with an empty or wrapping range are skipped; a
 * mapping below a module's start does not join it.  Every module that is
 * not a duplicate is placed, the first `max_placed` of them only; the
 * callback runs at most once per module.  0, or -1 when out of memory (ml then holds nothing).
 */
int swi_module_layout_build(struct module_layout *ml, const sw_mapped_file *files, size_t nfiles,
                        size_t max_placed, module_bias_fn bias, void *arg);

/* swi_module_layout_free - free what swi_module_layout_build made. */
void swi_module_layout_free(struct module_layout *ml);

#endif /* SW_TARGET_MODULE_LAYOUT_H */
