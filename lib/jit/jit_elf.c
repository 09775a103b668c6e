/*
 * jit_elf.c - an in-memory ELF object for one JIT method.
 *
 * The object is an ET_EXEC of the method's architecture holding:
 *
 *   .text          SHT_NOBITS at the code's address: the code itself stays
 *                  where the JIT put it, the object only says where it is
 *   .debug_frame   CFI from the SWU blob, absolute addresses (optional)
 *   .eh_frame      the same as a jitdump's unwinding record carries, at
 *   .eh_frame_hdr  the code's end rounded up to 8, as perf inject places
 *                  them (optional)
 *   .symtab        one global function symbol: the method, its size
 *   .strtab, .shstrtab
 *
 * Every address is absolute, as gdb's JIT reader expects of an object a
 * JIT made for the code it already placed.  No program headers: nothing
 * loads this object, debuggers only read it.  Fields are written byte by
 * byte in the target's order (little-endian), for 32- and 64-bit classes.
 */
#include <stdlib.h>
#include "util.h"
#include "jit_elf.h"
#include "swu_to_cfi.h"

/* ELF constants (the gABI's), spelled here so the core needs no <elf.h>. */
enum {
	ELFCLASS32 = 1, ELFCLASS64 = 2, ELFDATA2LSB = 1, EV_CURRENT = 1, ET_EXEC = 2,
	SHT_PROGBITS = 1, SHT_SYMTAB = 2, SHT_STRTAB = 3, SHT_NOBITS = 8,
	SHF_ALLOC = 2, SHF_EXECINSTR = 4,
	STB_GLOBAL = 1, STT_FUNC = 2
};

enum jit_section { S_NULL, S_TEXT, S_DEBUG_FRAME, S_EH_FRAME, S_EH_FRAME_HDR,
                   S_SYMTAB, S_STRTAB, S_SHSTRTAB, S_COUNT };

static const char *const section_name[S_COUNT] = {
	"", ".text", ".debug_frame", ".eh_frame", ".eh_frame_hdr",
	".symtab", ".strtab", ".shstrtab"
};

struct section {
	uint32_t type, name;
	uint64_t flags, addr, offset, size, align, entsize;
	uint32_t link, info;
	unsigned index;                 /* in the object, 0 when left out */
};

struct elf_out {
	struct swu_writer w;
	unsigned word;                  /* 4 or 8: the class's address size */
};

static void put(struct elf_out *o, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++)
		swu_put_byte(&o->w, (unsigned)(v >> (8 * i)) & 0xff);
}

static void put_bytes(struct elf_out *o, const void *p, size_t n)
{
	const uint8_t *b = p;

	for (size_t i = 0; i < n; i++)
		swu_put_byte(&o->w, b[i]);
}

static void align_to(struct elf_out *o, unsigned a)
{
	while (o->w.len % a)
		swu_put_byte(&o->w, 0);
}

static void put_header(struct elf_out *o, unsigned machine, uint64_t shoff, unsigned shnum,
                       unsigned shstrndx)
{
	static const uint8_t magic[4] = { 0x7f, 'E', 'L', 'F' };
	unsigned ehsize = o->word == 8 ? 64 : 52, shentsize = o->word == 8 ? 64 : 40;

	put_bytes(o, magic, 4);
	put(o, o->word == 8 ? ELFCLASS64 : ELFCLASS32, 1);
	put(o, ELFDATA2LSB, 1);
	put(o, EV_CURRENT, 1);
	for (unsigned i = 7; i < 16; i++)
		put(o, 0, 1);                           /* OS ABI, padding */
	put(o, ET_EXEC, 2);
	put(o, machine, 2);
	put(o, EV_CURRENT, 4);
	put(o, 0, o->word);                             /* entry */
	put(o, 0, o->word);                             /* no program headers */
	put(o, shoff, o->word);
	put(o, 0, 4);                                   /* flags */
	put(o, ehsize, 2);
	put(o, 0, 2);
	put(o, 0, 2);
	put(o, shentsize, 2);
	put(o, shnum, 2);
	put(o, shstrndx, 2);
}

static void put_section_header(struct elf_out *o, const struct section *s)
{
	put(o, s->name, 4);
	put(o, s->type, 4);
	put(o, s->flags, o->word);
	put(o, s->addr, o->word);
	put(o, s->offset, o->word);
	put(o, s->size, o->word);
	put(o, s->link, 4);
	put(o, s->info, 4);
	put(o, s->align, o->word);
	put(o, s->entsize, o->word);
}

static void put_symbol(struct elf_out *o, uint32_t name, uint64_t value, uint64_t size,
                       unsigned info, unsigned shndx)
{
	if (o->word == 8) {
		put(o, name, 4);
		put(o, info, 1);
		put(o, 0, 1);
		put(o, shndx, 2);
		put(o, value, 8);
		put(o, size, 8);
	} else {
		put(o, name, 4);
		put(o, value, 4);
		put(o, size, 4);
		put(o, info, 1);
		put(o, 0, 1);
		put(o, shndx, 2);
	}
}

/* Section contents first, then the headers; one pass counts, the next stores. */
static sw_status lay_out(struct elf_out *o, const sw_code_info *info, const char *name,
                         unsigned what, unsigned machine)
{
	struct section s[S_COUNT];
	unsigned n = 0;
	size_t name_len = strlen(name), eh_size = 0;
	uint64_t shoff;
	sw_status st;

	memset(s, 0, sizeof(s));
	for (unsigned k = 0; k < S_COUNT; k++) {
		bool used = k != S_DEBUG_FRAME && k != S_EH_FRAME && k != S_EH_FRAME_HDR;

		used |= k == S_DEBUG_FRAME && (what & SWI_JIT_ELF_DEBUG_FRAME);
		used |= (k == S_EH_FRAME || k == S_EH_FRAME_HDR) && (what & SWI_JIT_ELF_EH_FRAME);
		s[k].index = used ? n++ : 0;
	}
	/* .shstrtab's names are laid out first, at their final offsets. */
	for (unsigned k = 1, at = 1; k < S_COUNT; k++) {
		if (!s[k].index)
			continue;
		s[k].name = at;
		at += (unsigned)strlen(section_name[k]) + 1;
	}
	put_header(o, machine, 0, n, s[S_SHSTRTAB].index);      /* e_shoff patched below */

	s[S_TEXT] = (struct section){ .type = SHT_NOBITS, .name = s[S_TEXT].name,
		.flags = SHF_ALLOC | SHF_EXECINSTR, .addr = info->start, .offset = o->w.len,
		.size = info->size, .align = 16, .index = s[S_TEXT].index };
	if (s[S_DEBUG_FRAME].index) {
		size_t start = o->w.len;
		struct swu_writer w = { o->w.buf ? o->w.buf + start : NULL,
		                        o->w.buf ? o->w.cap - start : 0, 0 };

		st = swu_to_cfi(info->unwind, info->unwind_size, SWU_CFI_DEBUG_FRAME, info->start, 0, &w, NULL);
		if (st != SW_OK)
			return st;
		o->w.len += w.len;
		s[S_DEBUG_FRAME].type = SHT_PROGBITS;
		s[S_DEBUG_FRAME].offset = start;
		s[S_DEBUG_FRAME].size = w.len;
		s[S_DEBUG_FRAME].align = o->word;
		align_to(o, 8);
	}
	if (s[S_EH_FRAME].index) {
		size_t start = o->w.len;
		struct swu_writer w = { o->w.buf ? o->w.buf + start : NULL,
		                        o->w.buf ? o->w.cap - start : 0, 0 };
		uint64_t eh_addr = info->start + ((info->size + 7) & ~(uint64_t)7);

		st = swu_cfi_eh_payload(info->unwind, info->unwind_size, info->start, &w, &eh_size);
		if (st != SW_OK)
			return st;
		o->w.len += w.len;
		s[S_EH_FRAME].type = s[S_EH_FRAME_HDR].type = SHT_PROGBITS;
		s[S_EH_FRAME].flags = s[S_EH_FRAME_HDR].flags = SHF_ALLOC;
		s[S_EH_FRAME].addr = eh_addr;
		s[S_EH_FRAME].offset = start;
		s[S_EH_FRAME].size = eh_size;
		s[S_EH_FRAME].align = 8;
		s[S_EH_FRAME_HDR].addr = eh_addr + eh_size;
		s[S_EH_FRAME_HDR].offset = start + eh_size;
		s[S_EH_FRAME_HDR].size = w.len - eh_size;
		s[S_EH_FRAME_HDR].align = 4;
		align_to(o, 8);
	}
	/* The symbol table: the null symbol, then the method. */
	s[S_SYMTAB].type = SHT_SYMTAB;
	s[S_SYMTAB].offset = o->w.len;
	put_symbol(o, 0, 0, 0, 0, 0);
	put_symbol(o, 1, info->start, info->size, (STB_GLOBAL << 4) | STT_FUNC, s[S_TEXT].index);
	s[S_SYMTAB].size = o->w.len - s[S_SYMTAB].offset;
	s[S_SYMTAB].align = o->word;
	s[S_SYMTAB].entsize = o->word == 8 ? 24 : 16;
	s[S_SYMTAB].link = s[S_STRTAB].index;
	s[S_SYMTAB].info = 1;                           /* the first global symbol */
	s[S_STRTAB].type = SHT_STRTAB;
	s[S_STRTAB].offset = o->w.len;
	put(o, 0, 1);
	put_bytes(o, name, name_len + 1);
	s[S_STRTAB].size = o->w.len - s[S_STRTAB].offset;
	s[S_STRTAB].align = 1;
	s[S_SHSTRTAB].type = SHT_STRTAB;
	s[S_SHSTRTAB].offset = o->w.len;
	put(o, 0, 1);
	for (unsigned k = 1; k < S_COUNT; k++)
		if (s[k].index)
			put_bytes(o, section_name[k], strlen(section_name[k]) + 1);
	s[S_SHSTRTAB].size = o->w.len - s[S_SHSTRTAB].offset;
	s[S_SHSTRTAB].align = 1;

	align_to(o, o->word);
	shoff = o->w.len;
	for (unsigned k = 0; k < S_COUNT; k++)
		if (k == S_NULL || s[k].index)
			put_section_header(o, &s[k]);
	/* e_shoff, now known: after e_ident (16), type, machine, version, entry, phoff. */
	if (o->w.buf) {
		size_t at = 16 + 2 + 2 + 4 + 2 * (size_t)o->word;

		for (unsigned i = 0; i < o->word; i++)
			o->w.buf[at + i] = (uint8_t)(shoff >> (8 * i));
	}
	return SW_OK;
}

sw_status swi_jit_elf_build(const sw_code_info *info, const char *name, unsigned what,
                            uint8_t **out, size_t *size)
{
	sw_swu_header h;
	struct elf_out o;
	unsigned machine;
	sw_status st;

	if (!info || !name || !out || !size || !info->unwind)
		return SW_E_INVAL;
	*out = NULL;
	*size = 0;
	if ((st = sw_swu_decode_header(info->unwind, info->unwind_size, &h)) != SW_OK)
		return st;
	machine = swu_cfi_elf_machine((sw_arch)h.arch);
	if (!machine || h.code_size != info->size)
		return machine ? SW_E_INVAL : SW_E_UNSUPPORTED;
	o = (struct elf_out){ { NULL, 0, 0 }, sw_arch_pointer_size((sw_arch)h.arch) };
	/* Count, then store. */
	if ((st = lay_out(&o, info, name, what, machine)) != SW_OK)
		return st;
	o.w.cap = o.w.len;
	o.w.len = 0;
	o.w.buf = malloc(o.w.cap);
	if (!o.w.buf)
		return SW_E_NOMEM;
	if ((st = lay_out(&o, info, name, what, machine)) != SW_OK) {
		free(o.w.buf);
		return st;
	}
	*out = o.w.buf;
	*size = o.w.len;
	return SW_OK;
}
