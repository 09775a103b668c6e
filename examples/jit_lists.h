/*
 * jit_lists.h - a tool reads the GDB JIT lists of a process or core
 * (sw_gdbjit_read): the objects a JIT registered for gdb (LLVM's lli,
 * MCJIT and ORC) join the tool's code map as modules, and name its frames.
 */
#ifndef JIT_LISTS_H
#define JIT_LISTS_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>

#define JIT_LISTS_SYMBOL "__jit_debug_descriptor"
#define JIT_LISTS_MAX 16                /* descriptors read: one per file that defines the symbol */

struct jit_list {
	uint64_t descriptor;            /* its address in the target */
	const char *module;             /* the mapped file that defines it */
	sw_gdbjit_list *list;           /* what was read, or NULL */
	unsigned char *registered;      /* per object: its module is in the map */
	sw_status status;               /* sw_gdbjit_read's */
	size_t objects, loaded;         /* entries read, and of them loaded as modules */
};

struct jit_lists {
	struct jit_list lists[JIT_LISTS_MAX];
	size_t count;
	sw_codemap *map;
};

/*
 * jit_lists_add - read the list at `descriptor` (the same one once) and
 * register its objects' modules in `map`; the list's status (sw_gdbjit_read's,
 * SW_E_LIMIT past JIT_LISTS_MAX lists).  The entry is kept for its counts
 * and names whenever objects were read.
 */
sw_status jit_lists_add(struct jit_lists *jl, const sw_memory *mem, sw_arch arch, uint64_t descriptor,
                        const char *module, sw_codemap *map);

/*
 * jit_lists_name - the function symbol of a JIT object holding pc, and
 * pc's offset in it; NULL if none.  The lists in the order they were
 * added; in one list, the object nearest its head (sw_gdbjit_list_symbolize).
 */
const char *jit_lists_name(const struct jit_lists *jl, uint64_t pc, uint64_t *offset);

/* jit_lists_close - unregister (the map synchronized first) and free. */
void jit_lists_close(struct jit_lists *jl);

#endif /* JIT_LISTS_H */
