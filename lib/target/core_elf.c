/*
 * core_elf.c - a core file's ELF header and program headers (core_elf.h).
 * The layouts are <elf.h>'s; fields are loaded little-endian at their
 * offsets, so that any host reads any target's core.
 */
#include "config.h"
#include <elf.h>
#include <stddef.h>
#include "util.h"
#include "core_elf.h"

/* Field `f` of the ELF structure `T` laid out at `p`. */
#define FIELD(p, T, f) swi_load_le((p) + offsetof(T, f), sizeof(((T *)0)->f))

/* What read_ehdr needs of an ELF header at `p`, of either class. */
#define EHDR_FIELDS(p, Ehdr, Phdr) do {                                 \
		type = (unsigned)FIELD(p, Ehdr, e_type);                \
		machine = (unsigned)FIELD(p, Ehdr, e_machine);          \
		eh->phoff = FIELD(p, Ehdr, e_phoff);                    \
		shoff = FIELD(p, Ehdr, e_shoff);                        \
		eh->phentsize = (unsigned)FIELD(p, Ehdr, e_phentsize);  \
		phnum = (unsigned)FIELD(p, Ehdr, e_phnum);              \
		entsize = sizeof(Phdr);                                 \
	} while (0)

/* A program header at `p`, of either class, into *ph. */
#define PHDR_FIELDS(p, Phdr) do {                                       \
		ph->type = (uint32_t)FIELD(p, Phdr, p_type);            \
		ph->flags = (uint32_t)FIELD(p, Phdr, p_flags);          \
		ph->offset = FIELD(p, Phdr, p_offset);                  \
		ph->vaddr = FIELD(p, Phdr, p_vaddr);                    \
		ph->filesz = FIELD(p, Phdr, p_filesz);                  \
		ph->memsz = FIELD(p, Phdr, p_memsz);                    \
		ph->align = FIELD(p, Phdr, p_align);                    \
	} while (0)

sw_arch swi_core_elf_arch(unsigned char class, unsigned machine)
{
	if (class == ELFCLASS64 && machine == EM_X86_64)
		return SW_ARCH_X64;
	if (class == ELFCLASS32 && machine == EM_386)
		return SW_ARCH_X86;
	if (class == ELFCLASS64 && machine == EM_AARCH64)
		return SW_ARCH_ARM64;
	return SW_ARCH_NONE;        /* x32 (ELFCLASS32 x86-64) included */
}

/*
 * More than 65534 program headers: e_phnum is PN_XNUM and the count is
 * the sh_info of section header 0 (the kernel writes it so).
 */
static sw_status extended_phnum(struct swi_core_window *w, unsigned word, uint64_t shoff,
                                size_t *phnum)
{
	size_t size = word == 8 ? sizeof(Elf64_Shdr) : sizeof(Elf32_Shdr);
	const unsigned char *sh;
	sw_status st;

	if (shoff == 0)
		return SW_E_BADMETA;
	sh = swi_core_window_get(w, shoff, size, &st);
	if (!sh)
		return st;
	*phnum = word == 8 ? (size_t)FIELD(sh, Elf64_Shdr, sh_info)
	                   : (size_t)FIELD(sh, Elf32_Shdr, sh_info);
	return SW_OK;
}

sw_status swi_core_read_ehdr(struct swi_core_window *w, struct swi_core_ehdr *eh)
{
	unsigned type, machine, phnum, entsize;
	uint64_t shoff;
	sw_status st;
	const unsigned char *p = swi_core_window_get(w, 0, EI_NIDENT, &st);

	if (!p)
		return st;
	if (memcmp(p, ELFMAG, SELFMAG) != 0)
		return SW_E_UNSUPPORTED;        /* not an ELF file */
	if (p[EI_CLASS] != ELFCLASS32 && p[EI_CLASS] != ELFCLASS64)
		return SW_E_UNSUPPORTED;
	eh->word = p[EI_CLASS] == ELFCLASS64 ? 8 : 4;
	if (p[EI_DATA] != ELFDATA2LSB)
		return SW_E_UNSUPPORTED;
	/* An ELF file cut inside its header. */
	p = swi_core_window_get(w, 0, eh->word == 8 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr), &st);
	if (!p)
		return st;
	if (eh->word == 8)
		EHDR_FIELDS(p, Elf64_Ehdr, Elf64_Phdr);
	else
		EHDR_FIELDS(p, Elf32_Ehdr, Elf32_Phdr);
	eh->arch = swi_core_elf_arch(p[EI_CLASS], machine);
	if (eh->arch == SW_ARCH_NONE || type != ET_CORE)
		return SW_E_UNSUPPORTED;
	eh->phnum = phnum;
	if (phnum == PN_XNUM && (st = extended_phnum(w, eh->word, shoff, &eh->phnum)) != SW_OK)
		return st;
	if (eh->phnum == 0)
		return SW_OK;
	if (eh->phentsize != entsize)
		return SW_E_BADMETA;
	if (eh->phnum > SWI_CORE_MAX_SEGMENTS)
		return SW_E_LIMIT;
	if (eh->phoff > w->bytes->size || (w->bytes->size - eh->phoff) / entsize < eh->phnum)
		return SW_E_TRUNCATED;
	return SW_OK;
}

sw_status swi_core_read_phdr(struct swi_core_window *w, const struct swi_core_ehdr *eh,
                             size_t index, struct swi_core_phdr *ph)
{
	sw_status st;
	/* read_ehdr checked that the table lies inside the file. */
	const unsigned char *p = swi_core_window_get(w, eh->phoff + (uint64_t)index * eh->phentsize,
	                                             eh->phentsize, &st);

	if (!p)
		return st;
	if (eh->word == 8)
		PHDR_FIELDS(p, Elf64_Phdr);
	else
		PHDR_FIELDS(p, Elf32_Phdr);
	return SW_OK;
}
