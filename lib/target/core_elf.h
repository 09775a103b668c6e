/*
 * core_elf.h (internal) - a core file's ELF header and program headers,
 * decoded from bounded reads (core_bytes.h) instead of through libelf,
 * which would want the whole file in memory (or a chunk the size of a
 * header's length) to hand out its notes.
 */
#ifndef SW_LIB_TARGET_CORE_ELF_H
#define SW_LIB_TARGET_CORE_ELF_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>
#include "core_bytes.h"

/* Hard limit against hostile cores (Linux allows 65530 mappings by default). */
#define SWI_CORE_MAX_SEGMENTS (1u << 17)

/* What the parser needs of the ELF header. */
struct swi_core_ehdr {
	sw_arch arch;
	unsigned word;                  /* 4 or 8: ELFCLASS32 or ELFCLASS64 */
	uint64_t phoff;
	size_t phnum;                   /* from section 0 when e_phnum is PN_XNUM */
	unsigned phentsize;
};

/* One program header, whatever its class. */
struct swi_core_phdr {
	uint32_t type, flags;
	uint64_t offset, vaddr, filesz, memsz, align;
};

/* The architecture of an ELF file of `class` and `machine`, or SW_ARCH_NONE. */
sw_arch swi_core_elf_arch(unsigned char class, unsigned machine);

/*
 * The ELF header of a little-endian core of one of our architectures, its
 * program header table checked to lie inside the file.  SW_E_UNSUPPORTED
 * for another file, SW_E_TRUNCATED for one cut short, SW_E_BADMETA for a
 * header that contradicts itself, SW_E_LIMIT past SWI_CORE_MAX_SEGMENTS.
 */
sw_status swi_core_read_ehdr(struct swi_core_window *w, struct swi_core_ehdr *eh);

/* Program header `index` (< eh->phnum), through the window. */
sw_status swi_core_read_phdr(struct swi_core_window *w, const struct swi_core_ehdr *eh,
                             size_t index, struct swi_core_phdr *ph);

#endif
