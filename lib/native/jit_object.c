/*
 * jit_object.c - a JIT's relocatable object placed at its sections'
 * addresses (see jit_object.h).
 *
 * Only what a walk and a name need is relocated: the CFI sections, whose
 * FDEs point at code through relocations (R_X86_64_PC64 against .text in
 * LLVM's objects), and the symbols, whose values an ET_REL file gives
 * relative to their section.  The code itself is left as the object has
 * it: nothing reads it but the instruction analysis of code without CFI,
 * which does not follow a call's target.  Raw bytes, not libelf: every
 * offset is checked here against the object's size.
 */
#include <stdbool.h>
#include <string.h>
#include "util.h"
#include "jit_object.h"

enum {
	ET_REL_TYPE = 1, ET_EXEC_TYPE = 2, ET_DYN_TYPE = 3,
	EM_386_MACHINE = 3, EM_X86_64_MACHINE = 62, EM_AARCH64_MACHINE = 183,
	SHT_SYMTAB_TYPE = 2, SHT_RELA_TYPE = 4, SHT_REL_TYPE = 9,
	SHF_ALLOC_FLAG = 2,
	SHN_UNDEF_INDEX = 0, SHN_LORESERVE_INDEX = 0xff00, SHN_ABS_INDEX = 0xfff1
};

/* What a relocation computes, and how wide the field is. */
enum reloc_kind { R_NONE, R_ABS64, R_ABS32, R_ABS32S, R_PC64, R_PC32, R_UNKNOWN };

struct object {
	unsigned char *p;
	size_t size;
	bool is64;
	unsigned machine;
	uint64_t shoff, shentsize, shnum;
};

struct section {
	uint64_t name, type, flags, addr, offset, size, link, info, entsize;
};

static bool in_file(const struct object *o, uint64_t off, uint64_t len)
{
	return off <= o->size && len <= o->size - off;
}

static sw_status get_section(const struct object *o, uint64_t i, struct section *s)
{
	const unsigned char *h;

	if (i >= o->shnum)
		return SW_E_BADMETA;
	h = o->p + o->shoff + i * o->shentsize;
	if (o->is64)
		*s = (struct section){ swi_load_le(h, 4), swi_load_le(h + 4, 4), swi_load_le(h + 8, 8),
		                       swi_load_le(h + 16, 8), swi_load_le(h + 24, 8), swi_load_le(h + 32, 8),
		                       swi_load_le(h + 40, 4), swi_load_le(h + 44, 4), swi_load_le(h + 56, 8) };
	else
		*s = (struct section){ swi_load_le(h, 4), swi_load_le(h + 4, 4), swi_load_le(h + 8, 4),
		                       swi_load_le(h + 12, 4), swi_load_le(h + 16, 4), swi_load_le(h + 20, 4),
		                       swi_load_le(h + 24, 4), swi_load_le(h + 28, 4), swi_load_le(h + 36, 4) };
	return SW_OK;
}

/* A section the JIT loaded: allocated, and given an address (an empty .text may have none). */
static bool placed(const struct section *s)
{
	return (s->flags & SHF_ALLOC_FLAG) && s->addr != 0;
}

/* Is section `i` named `want` (by the section-name table `names`)? */
static bool named(const struct object *o, const struct section *names, const struct section *s,
                  const char *want)
{
	size_t n = strlen(want) + 1;

	return in_file(o, names->offset, names->size) && s->name < names->size &&
	       names->size - s->name >= n && memcmp(o->p + names->offset + s->name, want, n) == 0;
}

static enum reloc_kind reloc_kind(unsigned machine, uint64_t type)
{
	switch (machine) {
	case EM_X86_64_MACHINE:
		switch (type) {
		case 0: return R_NONE;
		case 1: return R_ABS64;         /* R_X86_64_64 */
		case 2: return R_PC32;          /* R_X86_64_PC32 */
		case 10: return R_ABS32;        /* R_X86_64_32 */
		case 11: return R_ABS32S;       /* R_X86_64_32S */
		case 24: return R_PC64;         /* R_X86_64_PC64 */
		}
		break;
	case EM_386_MACHINE:
		switch (type) {
		case 0: return R_NONE;
		case 1: return R_ABS32;         /* R_386_32 */
		case 2: return R_PC32;          /* R_386_PC32 */
		}
		break;
	case EM_AARCH64_MACHINE:
		switch (type) {
		case 0: case 256: return R_NONE;
		case 257: return R_ABS64;       /* R_AARCH64_ABS64 */
		case 258: return R_ABS32;       /* R_AARCH64_ABS32 */
		case 260: return R_PC64;        /* R_AARCH64_PREL64 */
		case 261: return R_PC32;        /* R_AARCH64_PREL32 */
		}
		break;
	}
	return R_UNKNOWN;
}

/* The address symbol `index` of the symbol table `symtab` stands for. */
static sw_status symbol_address(const struct object *o, const struct section *symtab, uint64_t index,
                                uint64_t *out)
{
	uint64_t entsize = o->is64 ? 24 : 16, shndx, value;
	const unsigned char *s;
	struct section target;

	if (index == 0) {
		*out = 0;
		return SW_OK;
	}
	if (index >= symtab->size / entsize)
		return SW_E_BADMETA;
	s = o->p + symtab->offset + index * entsize;
	shndx = swi_load_le(s + (o->is64 ? 6 : 14), 2);
	value = o->is64 ? swi_load_le(s + 8, 8) : swi_load_le(s + 4, 4);
	if (shndx == SHN_ABS_INDEX) {
		*out = value;
		return SW_OK;
	}
	/* An undefined symbol would need the JIT's own symbol resolution: not done here. */
	if (shndx == SHN_UNDEF_INDEX || shndx >= SHN_LORESERVE_INDEX ||
	    get_section(o, shndx, &target) != SW_OK || !placed(&target))
		return SW_E_UNSUPPORTED;
	*out = target.addr + value;
	return SW_OK;
}

/* Store `v`, computed for a field of `kind`, if it fits. */
static sw_status store(const struct object *o, unsigned char *field, enum reloc_kind kind, uint64_t v)
{
	unsigned width = kind == R_ABS64 || kind == R_PC64 ? 8 : 4;

	/* i386's arithmetic is modulo 2^32; a 64-bit target's 32-bit fields must hold the value. */
	if (width == 4 && o->is64) {
		if (kind == R_ABS32 && v > UINT32_MAX)
			return SW_E_BADMETA;
		if (kind != R_ABS32 && (int64_t)v != (int64_t)(int32_t)(uint32_t)v)
			return SW_E_BADMETA;
	}
	swi_store_le(field, width, v);
	return SW_OK;
}

/* Apply the relocation section `rel` to its target section, whose address is `target`. */
static sw_status relocate(const struct object *o, const struct section *rel, const struct section *target)
{
	bool rela = rel->type == SHT_RELA_TYPE;
	uint64_t entsize = o->is64 ? (rela ? 24 : 16) : (rela ? 12 : 8);
	struct section symtab;
	sw_status st;

	if (!in_file(o, rel->offset, rel->size) || !in_file(o, target->offset, target->size) ||
	    (st = get_section(o, rel->link, &symtab)) != SW_OK ||
	    symtab.type != SHT_SYMTAB_TYPE || !in_file(o, symtab.offset, symtab.size))
		return SW_E_BADMETA;
	for (uint64_t at = 0; at + entsize <= rel->size; at += entsize) {
		const unsigned char *r = o->p + rel->offset + at;
		uint64_t off = o->is64 ? swi_load_le(r, 8) : swi_load_le(r, 4);
		uint64_t info = o->is64 ? swi_load_le(r + 8, 8) : swi_load_le(r + 4, 4);
		uint64_t type = o->is64 ? info & 0xffffffffu : info & 0xffu;
		uint64_t sym = o->is64 ? info >> 32 : info >> 8;
		enum reloc_kind kind = reloc_kind(o->machine, type);
		unsigned width = kind == R_ABS64 || kind == R_PC64 ? 8 : 4;
		uint64_t s, a, v;
		unsigned char *field;

		if (kind == R_NONE)
			continue;
		if (kind == R_UNKNOWN)
			return SW_E_UNSUPPORTED;
		if (off > target->size || width > target->size - off)
			return SW_E_BADMETA;
		field = o->p + target->offset + off;
		if (rela)
			a = o->is64 ? swi_load_le(r + 16, 8) : (uint64_t)(int64_t)(int32_t)swi_load_le(r + 8, 4);
		else    /* REL: the addend is the field's own content */
			a = width == 8 ? swi_load_le(field, 8) : (uint64_t)(int64_t)(int32_t)swi_load_le(field, 4);
		if ((st = symbol_address(o, &symtab, sym, &s)) != SW_OK)
			return st;
		v = s + a;
		if (kind == R_PC32 || kind == R_PC64)
			v -= target->addr + off;
		if ((st = store(o, field, kind, v)) != SW_OK)
			return st;
	}
	return SW_OK;
}

/* Symbols of placed sections get their addresses; those of sections never loaded are dropped. */
static sw_status place_symbols(const struct object *o, const struct section *symtab)
{
	uint64_t entsize = o->is64 ? 24 : 16;

	if (!in_file(o, symtab->offset, symtab->size))
		return SW_E_BADMETA;
	for (uint64_t at = entsize; at + entsize <= symtab->size; at += entsize) {
		unsigned char *s = o->p + symtab->offset + at;
		unsigned char *value = s + (o->is64 ? 8 : 4);
		unsigned vsize = o->is64 ? 8 : 4;
		uint64_t shndx = swi_load_le(s + (o->is64 ? 6 : 14), 2);
		struct section sec;

		if (shndx == SHN_UNDEF_INDEX || shndx >= SHN_LORESERVE_INDEX)
			continue;
		if (get_section(o, shndx, &sec) == SW_OK && placed(&sec))
			swi_store_le(value, vsize, swi_load_le(value, vsize) + sec.addr);
		else
			swi_store_le(s + (o->is64 ? 6 : 14), 2, SHN_UNDEF_INDEX);
	}
	return SW_OK;
}

sw_status swi_jit_object_place(unsigned char *elf, size_t size)
{
	struct object o = { elf, size, false, 0, 0, 0, 0 };
	struct section names;
	uint64_t type, shstrndx;
	sw_status st;

	if (!elf || size < 52 || memcmp(elf, "\177ELF", 4) != 0 || elf[5] != 1 ||
	    (elf[4] != 1 && elf[4] != 2))
		return size >= 4 && elf && memcmp(elf, "\177ELF", 4) == 0 ? SW_E_UNSUPPORTED : SW_E_BADMETA;
	o.is64 = elf[4] == 2;
	if (o.is64 && size < 64)
		return SW_E_TRUNCATED;
	type = swi_load_le(elf + 16, 2);
	o.machine = (unsigned)swi_load_le(elf + 18, 2);
	if (type == ET_EXEC_TYPE || type == ET_DYN_TYPE)
		return SW_OK;
	if (type != ET_REL_TYPE)
		return SW_E_UNSUPPORTED;
	o.shoff = o.is64 ? swi_load_le(elf + 40, 8) : swi_load_le(elf + 32, 4);
	o.shentsize = swi_load_le(elf + (o.is64 ? 58 : 46), 2);
	o.shnum = swi_load_le(elf + (o.is64 ? 60 : 48), 2);
	shstrndx = swi_load_le(elf + (o.is64 ? 62 : 50), 2);
	/* Extended section numbering: no JIT object needs 65280 sections. */
	if (o.shnum == 0 || o.shentsize < (o.is64 ? 64u : 40u))
		return SW_E_UNSUPPORTED;
	if (!in_file(&o, o.shoff, o.shnum * o.shentsize))
		return SW_E_TRUNCATED;
	if (get_section(&o, shstrndx, &names) != SW_OK)
		return SW_E_BADMETA;
	/* The CFI's relocations first: they read the symbols' section-relative values. */
	for (uint64_t i = 1; i < o.shnum; i++) {
		struct section rel, target;

		if (get_section(&o, i, &rel) != SW_OK ||
		    (rel.type != SHT_RELA_TYPE && rel.type != SHT_REL_TYPE) ||
		    get_section(&o, rel.info, &target) != SW_OK ||
		    (!named(&o, &names, &target, ".eh_frame") && !named(&o, &names, &target, ".debug_frame")))
			continue;
		if ((st = relocate(&o, &rel, &target)) != SW_OK)
			return st;
	}
	for (uint64_t i = 1; i < o.shnum; i++) {
		struct section symtab;

		if (get_section(&o, i, &symtab) == SW_OK && symtab.type == SHT_SYMTAB_TYPE &&
		    (st = place_symbols(&o, &symtab)) != SW_OK)
			return st;
	}
	swi_store_le(elf + 16, 2, ET_EXEC_TYPE);
	return SW_OK;
}
