/*
 * jit_object.h - a JIT's in-memory object file made loadable as a module.
 *
 * JITs that register code with gdb (LLVM's MCJIT and ORC among them) hand
 * it a relocatable object (ET_REL) whose allocated sections' sh_addr they
 * patched to where they loaded each section, with its relocations left
 * unapplied.  gdb relocates such an object itself; the module loader reads
 * only linked files, so swi_jit_object_place does the same work on a copy.
 */
#ifndef SW_NATIVE_JIT_OBJECT_H
#define SW_NATIVE_JIT_OBJECT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stackwalk/status.h>
#include <stackwalk/module.h>

/*
 * swi_jit_object_place - rewrite the object at `elf` (`size` bytes,
 * writable) in place as an executable at its sections' addresses: the
 * relocations of its CFI sections (.eh_frame, .debug_frame) applied, its
 * symbols' values made addresses, e_type ET_EXEC.  An ET_EXEC or ET_DYN
 * object is left as it is.  SW_E_UNSUPPORTED for another kind of file or
 * a relocation this does not know; SW_E_TRUNCATED or SW_E_BADMETA for a
 * malformed one.  Never reads or writes outside the `size` bytes.
 */
sw_status swi_jit_object_place(unsigned char *elf, size_t size);

/*
 * From module.c: the module's i-th function symbol (by start), its loaded
 * start and size (0: its first byte only); false past the last.
 */
bool swi_module_symbol_span(const sw_module *m, size_t i, uint64_t *start, uint64_t *size);

#endif /* SW_NATIVE_JIT_OBJECT_H */
