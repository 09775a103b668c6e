/*
 * gdbjit.h - gdb sees JIT methods: the GDB JIT compilation interface.
 *
 * gdb looks, in every program it debugs, for a function
 * __jit_debug_register_code and a descriptor __jit_debug_descriptor.  It
 * breaks on the function; a JIT links an in-memory object file onto the
 * descriptor's list, sets the action and calls the function, and gdb
 * reads the object: symbols for `bt`, `break` and `disassemble`, CFI to
 * unwind.  The layout below is gdb's (see "JIT Compilation Interface" in
 * its manual) and must not change.
 *
 * An sw_gdbjit makes one ELF object per method (a symbol with the
 * method's name, CFI derived from its SWU) and registers it.  Attached to
 * a code map, it registers each method the map adds and unregisters it
 * when it is removed.  Registration allocates and calls into the
 * debugger: never on a walk's path.  Objects live in this process's
 * memory and describe its own code.
 *
 * The other side, a debugger's: sw_gdbjit_read reads the list of any JIT
 * that registers with gdb (LLVM's MCJIT and ORC, V8, ...) out of another
 * process or a core through an sw_memory, and loads each object's
 * symbols and CFI as an sw_module at the addresses the JIT gave it.
 */
#ifndef STACKWALK_GDBJIT_H
#define STACKWALK_GDBJIT_H

#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/codemap.h>
#include <stackwalk/memory.h>
#include <stackwalk/module.h>

#ifdef __cplusplus
extern "C" {
#endif

/* gdb's action codes. */
enum {
	SW_GDBJIT_NOACTION = 0,
	SW_GDBJIT_REGISTER = 1,         /* relevant_entry was just linked */
	SW_GDBJIT_UNREGISTER = 2        /* relevant_entry is about to be unlinked */
};

/* One registered object (gdb's struct jit_code_entry). */
typedef struct sw_gdbjit_entry {
	struct sw_gdbjit_entry *next_entry;
	struct sw_gdbjit_entry *prev_entry;
	const char *symfile_addr;       /* the object file, in memory */
	uint64_t symfile_size;
} sw_gdbjit_entry;

/* The list gdb reads (gdb's struct jit_descriptor); version 1. */
typedef struct sw_gdbjit_descriptor {
	uint32_t version;
	uint32_t action_flag;           /* SW_GDBJIT_* */
	sw_gdbjit_entry *relevant_entry;
	sw_gdbjit_entry *first_entry;
} sw_gdbjit_descriptor;

/* The names gdb looks for.  Only the library changes them, under its lock. */
SW_API extern sw_gdbjit_descriptor __jit_debug_descriptor;
SW_API void __jit_debug_register_code(void);

typedef struct sw_gdbjit sw_gdbjit;

/*
 * sw_gdbjit_create - a registrar whose methods are named by `name`
 * (called with `data`; NULL: "jit_<address>").
 */
SW_API sw_status sw_gdbjit_create(sw_gdbjit **out, sw_method_name_fn name, void *data);

/* sw_gdbjit_destroy - detach, unregister every object it registered, free them. */
SW_API void sw_gdbjit_destroy(sw_gdbjit *g);

/*
 * sw_gdbjit_attach - register each method `map` adds from now on, and
 * unregister each one it removes (an sw_codemap observer).  One map per
 * registrar: SW_E_EXISTS if attached already.
 */
SW_API sw_status sw_gdbjit_attach(sw_gdbjit *g, sw_codemap *map);

/* sw_gdbjit_detach - stop observing the map (registered objects stay). */
SW_API sw_status sw_gdbjit_detach(sw_gdbjit *g);

/*
 * sw_gdbjit_add - register one method directly, by name: code the code
 * map does not hold (a JIT's stubs) or a registrar not attached to a map.
 * info->unwind is its SWU blob.  SW_E_EXISTS if a method at that start is
 * registered already, SW_E_BADMETA for a bad blob.
 */
SW_API sw_status sw_gdbjit_add(sw_gdbjit *g, const sw_code_info *info, const char *name);

/* sw_gdbjit_remove - unregister the method at `start`; SW_E_NOTFOUND if none. */
SW_API sw_status sw_gdbjit_remove(sw_gdbjit *g, uint64_t start);

/*
 * sw_gdbjit_status - SW_OK, or the first error a registration made for
 * the attached map met (an observer cannot return one).
 */
SW_API sw_status sw_gdbjit_status(const sw_gdbjit *g);

/* ---- Reading another process's list (a debugger's side) ---- */

/* Hard limits on what sw_gdbjit_read takes from a target (sw_gdbjit_read(3)). */
#define SW_GDBJIT_MAX_ENTRIES 65536u            /* entries followed on one list */
#define SW_GDBJIT_MAX_OBJECT  (64u << 20)       /* bytes of one object file */

/* One entry of the list, and what was made of its object. */
typedef struct sw_gdbjit_object {
	uint64_t entry;                 /* the jit_code_entry's address in the target */
	uint64_t symfile_addr;          /* the object file's address and size there */
	uint64_t symfile_size;
	sw_module *module;              /* its symbols and CFI at their load addresses, or NULL */
	sw_status status;               /* SW_OK, or why `module` is NULL */
} sw_gdbjit_object;

typedef struct sw_gdbjit_list sw_gdbjit_list;

/*
 * sw_gdbjit_read - read the jit_descriptor at `descriptor` (the address
 * of __jit_debug_descriptor in the target whose memory `mem` reads; its
 * pointers `arch`'s width) and load every object on its list with
 * sw_module_load_image_flags(`flags`), a relocatable object (LLVM's) first
 * placed at the addresses its section headers give.  An object that cannot
 * be read or loaded has its status and no module; the list goes on.
 * SW_OK: the whole list was read.  SW_E_UNSUPPORTED: not version 1.
 * The list was cut short, and *out holds the objects before the fault
 * (perhaps none), on SW_E_BADADDR (the descriptor or an entry unreadable),
 * SW_E_BADMETA (an entry seen before: a cycle) and SW_E_LIMIT (over
 * SW_GDBJIT_MAX_ENTRIES entries); on other errors *out is NULL.  Free
 * with sw_gdbjit_list_free.
 */
SW_API sw_status sw_gdbjit_read(const sw_memory *mem, sw_arch arch, uint64_t descriptor,
                                unsigned flags, sw_gdbjit_list **out);

/* sw_gdbjit_list_objects - the objects read, in list order (owned by the list). */
SW_API sw_status sw_gdbjit_list_objects(const sw_gdbjit_list *l, const sw_gdbjit_object **objects,
                                        size_t *count);

/*
 * sw_gdbjit_list_symbolize - the function symbol of the list's objects
 * that holds `address`: *name (owned by the object's module) and *offset
 * (optional), as sw_module_symbolize gives them.  Where objects overlap
 * (code freed and compiled again, or registered twice), the one nearest
 * the list's head wins: the one registered last, for JITs that link new
 * entries at the head (LLVM's, sw_gdbjit).  O(log n) in the symbols read
 * (an index sw_gdbjit_read builds).  SW_E_NOTFOUND if none holds it.
 */
SW_API sw_status sw_gdbjit_list_symbolize(const sw_gdbjit_list *l, uint64_t address, const char **name,
                                          uint64_t *offset);

/* sw_gdbjit_list_free - free the list and its modules; unregister them from every map first. */
SW_API void sw_gdbjit_list_free(sw_gdbjit_list *l);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_GDBJIT_H */
