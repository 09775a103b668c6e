/*
 * jit_elf.h (internal) - a small in-memory ELF object for one JIT method.
 *
 * What a debugger needs to know about a method it cannot find on disk:
 * where its code is (a .text section with no bits, at the code's
 * address), its name (a function symbol) and how to unwind it (CFI from
 * its SWU).  gdb's JIT interface loads exactly such objects.
 */
#ifndef SW_LIB_JIT_ELF_H
#define SW_LIB_JIT_ELF_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/codemap.h>

enum {
	SWI_JIT_ELF_DEBUG_FRAME = 1,    /* .debug_frame, absolute addresses (what gdb is given) */
	SWI_JIT_ELF_EH_FRAME = 2        /* .eh_frame and .eh_frame_hdr laid out as perf inject does */
};

/*
 * swi_jit_elf_build - a relocatable ELF object of the method's
 * architecture's class and machine, in one malloc'ed block (*out, *size;
 * free() it).  SW_E_BADMETA for an invalid blob, SW_E_UNSUPPORTED for an
 * architecture or rule ELF or CFI cannot say, SW_E_NOMEM.
 */
sw_status swi_jit_elf_build(const sw_code_info *info, const char *name, unsigned what,
                            uint8_t **out, size_t *size);

#endif /* SW_LIB_JIT_ELF_H */
