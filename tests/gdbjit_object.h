/*
 * gdbjit_object.h - the in-memory objects LLVM registers with gdb, made up
 * for tests (tests/check_gdbjit_read.c, tests/fuzz/fuzz_gdbjit_read.c): a
 * relocatable ELF64 object whose section headers carry the addresses its
 * sections were loaded at, its FDE's pc_begin left for an unapplied
 * relocation to fill, as MCJIT and ORC leave theirs.
 */
#ifndef SW_TESTS_GDBJIT_OBJECT_H
#define SW_TESTS_GDBJIT_OBJECT_H

#include <stdint.h>
#include <string.h>

enum { FN_SIZE = 16, PC_BEGIN_AT = 32 };

/* The room build_object_for needs. */
#define GDBJIT_OBJECT_SIZE (296u + 7u * 64u)

static inline void put(unsigned char *p, size_t off, unsigned size, uint64_t v)
{
	for (unsigned i = 0; i < size; i++, v >>= 8)
		p[off + i] = (unsigned char)v;
}

static inline void section(unsigned char *o, size_t shoff, unsigned i, uint32_t name, uint32_t type,
                    uint64_t flags, uint64_t addr, uint64_t off, uint64_t size, uint32_t link,
                    uint32_t info, uint64_t entsize)
{
	size_t h = shoff + 64u * i;

	put(o, h, 4, name);
	put(o, h + 4, 4, type);
	put(o, h + 8, 8, flags);
	put(o, h + 16, 8, addr);
	put(o, h + 24, 8, off);
	put(o, h + 32, 8, size);
	put(o, h + 40, 4, link);
	put(o, h + 44, 4, info);
	put(o, h + 48, 8, 8);
	put(o, h + 56, 8, entsize);
}

/*
 * An x86-64 (or with `arm64`, AArch64) ET_REL with one function "jit_fn"
 * (16 bytes at `text`), its FDE's pc_begin left 0 for the relocation of
 * type `rtype` to fill; its size.  Layout: header, .text, .eh_frame,
 * .rela.eh_frame, .symtab, .strtab, .shstrtab, section headers.
 */
static inline size_t build_object_for(unsigned char *o, uint64_t text, uint64_t eh, uint32_t rtype, int arm64)
{
	static const unsigned char cie_x64[] = {
		0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78, 0x10, 1, 0x1b,
		0x0c, 7, 8, 0x90, 1, 0, 0                       /* def_cfa rsp+8; rip at cfa-8 */
	};
	static const unsigned char cie_arm64[] = {
		0x14, 0, 0, 0, 0, 0, 0, 0, 1, 'z', 'R', 0, 4, 0x78, 0x1e, 1, 0x1b,
		0x0c, 31, 0, 0, 0, 0, 0                         /* def_cfa sp+0; return address in x30 */
	};
	const unsigned char *cie = arm64 ? cie_arm64 : cie_x64;
	static const unsigned char fde[] = {
		0x10, 0, 0, 0, 28, 0, 0, 0, 0, 0, 0, 0, FN_SIZE, 0, 0, 0, 0,
		0x41, 0x0e, 0x10                                /* advance 1; cfa = rsp+16 */
	};
	static const char strtab[] = "\0jit_fn";
	static const char shstr[] = "\0.text\0.eh_frame\0.rela.eh_frame\0.symtab\0.strtab\0.shstrtab";
	size_t cie_size = sizeof cie_x64, text_off = 64, eh_off = 80, eh_size = cie_size + sizeof fde + 4;
	size_t rela_off = 128, sym_off = 152, str_off = 224, shstr_off = 232, shoff = 296;

	memset(o, 0, shoff + 7 * 64);
	memcpy(o, "\177ELF\2\1\1", 7);
	put(o, 16, 2, 1);                       /* ET_REL */
	put(o, 18, 2, arm64 ? 183 : 62);        /* EM_AARCH64, EM_X86_64 */
	put(o, 20, 4, 1);
	put(o, 40, 8, shoff);
	put(o, 52, 2, 64);
	put(o, 58, 2, 64);
	put(o, 60, 2, 7);
	put(o, 62, 2, 6);
	memset(o + text_off, 0x90, FN_SIZE);
	memcpy(o + eh_off, cie, cie_size);
	memcpy(o + eh_off + cie_size, fde, sizeof fde);
	put(o, rela_off, 8, PC_BEGIN_AT);       /* .text's section symbol (1), addend 0 */
	put(o, rela_off + 8, 8, (1ull << 32) | rtype);
	put(o, sym_off + 24 + 4, 1, 3);         /* STT_SECTION, local */
	put(o, sym_off + 24 + 6, 2, 1);
	put(o, sym_off + 48, 4, 1);             /* "jit_fn": FUNC, global, .text + 0 */
	put(o, sym_off + 48 + 4, 1, 0x12);
	put(o, sym_off + 48 + 6, 2, 1);
	put(o, sym_off + 48 + 16, 8, FN_SIZE);
	memcpy(o + str_off, strtab, sizeof strtab);
	memcpy(o + shstr_off, shstr, sizeof shstr);
	section(o, shoff, 1, 1, 1, 6, text, text_off, FN_SIZE, 0, 0, 0);
	section(o, shoff, 2, 7, 1, 2, eh, eh_off, eh_size, 0, 0, 0);
	section(o, shoff, 3, 17, 4, 0x40, 0, rela_off, 24, 4, 2, 24);
	section(o, shoff, 4, 32, 2, 0, 0, sym_off, 72, 5, 2, 24);
	section(o, shoff, 5, 40, 3, 0, 0, str_off, sizeof strtab, 0, 0, 0);
	section(o, shoff, 6, 48, 3, 0, 0, shstr_off, sizeof shstr, 0, 0, 0);
	return shoff + 7 * 64;
}

#endif /* SW_TESTS_GDBJIT_OBJECT_H */
