/*
 * fuzz_scope_index.c - the names' per-unit scope index (lib/names/
 * scope_index.c) against libdw's own answer, on DWARF from the input.
 *
 * The input is a list of DWARF sections, each a 16-bit little-endian
 * length and its bytes, in the order of `sections` below; the target
 * wraps them in an ELF image in memory (no file) and opens it with libdw.
 * The corpus holds the sections of small programs built -O2 -g1 with
 * inlined calls and split (hot and cold) functions, DWARF 4 and 5.
 *
 * For every unit (up to a bound) the target probes the addresses at and
 * around each subprogram's and inlined call's ranges, and asks both the
 * index (swi_scope_chain) and libdw (swi_scope_chain_libdw, which the
 * names fall back on).  Always: the index's chain is bounded, and each
 * DIE in it is a subprogram or an inlined call whose ranges hold the
 * address, and all but the last inlined calls.  Where the unit's ranges
 * nest as a compiler writes them (each DIE's ranges, lexical blocks' too,
 * inside those of the DIE above it, the unit's at the top; unrelated DIEs
 * disjoint; none inverted), the two chains must
 * be the same DIEs: the index is only a faster way to libdw's answer.  A
 * broken promise aborts.
 */
#include <config.h>

#include <stdlib.h>
#include <string.h>
#include <dwarf.h>
#include <gelf.h>
#include <elfutils/libdw.h>
#include "scope_index.h"
#include "fuzz.h"

#define MAX_UNITS   16          /* units looked at per input */
#define MAX_DIES    4096        /* DIEs visited per unit */
#define MAX_DEPTH   64          /* DIE nesting followed */
#define MAX_RANGES  512         /* scope ranges compared pairwise per unit */
#define MAX_PROBES  256         /* addresses asked per unit */

static const char *const sections[] = {
	".debug_info", ".debug_abbrev", ".debug_str", ".debug_line_str",
	".debug_ranges", ".debug_rnglists", ".debug_addr", ".debug_str_offsets",
};
#define NSECTIONS (sizeof sections / sizeof sections[0])

/* ---- The ELF image ---- */

struct image {
	uint8_t *p;
	size_t n;
};

static void put(struct image *im, size_t at, const void *v, size_t len)
{
	memcpy(im->p + at, v, len);
}

/*
 * An ELF64 x86-64 executable with no segments: the sections, then
 * .shstrtab, then the section headers.  Returns 0 without memory.
 */
static int make_image(struct fz *f, struct image *im)
{
	const uint8_t *data[NSECTIONS];
	size_t len[NSECTIONS], names[NSECTIONS + 1], off[NSECTIONS + 1];
	size_t shstr_len = 1, at = sizeof(Elf64_Ehdr), shoff;
	Elf64_Ehdr eh;

	for (size_t i = 0; i < NSECTIONS; i++) {
		len[i] = fz_u16(f);
		if (len[i] > f->n)
			len[i] = f->n;
		data[i] = f->p;
		f->p += len[i];
		f->n -= len[i];
		names[i] = shstr_len;
		shstr_len += strlen(sections[i]) + 1;
		off[i] = at;
		at += len[i];
	}
	names[NSECTIONS] = shstr_len;
	shstr_len += sizeof ".shstrtab";
	off[NSECTIONS] = at;
	at += shstr_len;
	shoff = (at + 7) & ~(size_t)7;
	im->n = shoff + (NSECTIONS + 2) * sizeof(Elf64_Shdr);
	if (!(im->p = calloc(1, im->n)))
		return 0;
	memset(&eh, 0, sizeof eh);
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	eh.e_type = ET_EXEC;
	eh.e_machine = EM_X86_64;
	eh.e_version = EV_CURRENT;
	eh.e_ehsize = sizeof eh;
	eh.e_shoff = shoff;
	eh.e_shentsize = sizeof(Elf64_Shdr);
	eh.e_shnum = NSECTIONS + 2;
	eh.e_shstrndx = NSECTIONS + 1;
	put(im, 0, &eh, sizeof eh);
	for (size_t i = 0; i <= NSECTIONS; i++) {
		Elf64_Shdr sh;

		memset(&sh, 0, sizeof sh);
		sh.sh_name = (Elf64_Word)names[i];
		sh.sh_type = i < NSECTIONS ? SHT_PROGBITS : SHT_STRTAB;
		sh.sh_offset = off[i];
		sh.sh_size = i < NSECTIONS ? len[i] : shstr_len;
		sh.sh_addralign = 1;
		if (i < NSECTIONS)
			put(im, off[i], data[i], len[i]);
		put(im, shoff + (i + 1) * sizeof sh, &sh, sizeof sh);
	}
	for (size_t i = 0; i < NSECTIONS; i++)
		put(im, off[NSECTIONS] + names[i], sections[i], strlen(sections[i]) + 1);
	put(im, off[NSECTIONS] + names[NSECTIONS], ".shstrtab", sizeof ".shstrtab");
	return 1;
}

/* ---- The unit's scopes, as the DIE tree gives them ---- */

/* One range of a DIE that has ranges: a scope, a lexical block, ... */
struct span {
	uint64_t lo, hi;
	Dwarf_Off die;
	int parent;             /* the DIE above (its first range's index), -1 for the unit, or BLOCKED */
};
#define BLOCKED (-2)            /* the DIE above has no ranges */

struct unit_scopes {
	struct span v[MAX_RANGES];
	size_t n;
	int complete;           /* every range read and well formed, none dropped for a bound */
};

static int is_scope(Dwarf_Die *d)
{
	int tag = dwarf_tag(d);

	return tag == DW_TAG_subprogram || tag == DW_TAG_inlined_subroutine;
}

/*
 * The ranges of one DIE; its first range's index, or -1 for none.  A DIE
 * whose ranges are all empty holds no address, so libdw never looks
 * below it: with children, the unit is not one to compare.
 */
static int add_ranges(struct unit_scopes *s, Dwarf_Die *d, int parent)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t at = 0;
	int first = -1, empty = 0;

	while ((at = dwarf_ranges(d, at, &base, &lo, &hi)) > 0) {
		if (lo >= hi) {
			empty = 1;
			continue;
		}
		if (s->n == MAX_RANGES) {
			s->complete = 0;
			break;
		}
		if (first < 0)
			first = (int)s->n;
		s->v[s->n++] = (struct span){ lo, hi, dwarf_dieoffset(d), parent };
	}
	if (at < 0 || (empty && first < 0 && dwarf_haschildren(d)))
		s->complete = 0;
	return first;
}

/*
 * Whether a DIE's ranges are as compilers write them: empty ones happen,
 * inverted ones (and unreadable lists) do not, and libdw's scope search
 * gives up on them, whatever DIE holds them (a lexical block too).
 */
static int ranges_well_formed(Dwarf_Die *d)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t at = 0;

	while ((at = dwarf_ranges(d, at, &base, &lo, &hi)) > 0)
		if (lo > hi)
			return 0;
	return at == 0;
}

/*
 * The DIEs with addresses that libdw's scope search goes down into (its
 * may_have_scopes); below any other DIE it finds nothing.
 */
static int searched_below(Dwarf_Die *d)
{
	switch (dwarf_tag(d)) {
	case DW_TAG_module:
	case DW_TAG_lexical_block:
	case DW_TAG_with_stmt:
	case DW_TAG_catch_block:
	case DW_TAG_try_block:
	case DW_TAG_entry_point:
	case DW_TAG_inlined_subroutine:
	case DW_TAG_subprogram:
		return 1;
	default:
		return 0;
	}
}

/*
 * An inlined call's abstract origin is a subprogram of the same unit, as
 * compilers write it: libdw's chain goes on into that subprogram's scopes
 * and finds nothing when it is something else.
 */
static int origin_well_formed(Dwarf_Die *d, Dwarf_Die *cu)
{
	Dwarf_Attribute attr;
	Dwarf_Die origin;

	if (dwarf_tag(d) != DW_TAG_inlined_subroutine)
		return 1;
	return dwarf_attr(d, DW_AT_abstract_origin, &attr) && dwarf_formref_die(&attr, &origin) &&
	       dwarf_tag(&origin) == DW_TAG_subprogram && origin.cu == cu->cu;
}

/*
 * The ranges of every DIE below the unit, depth first, each with the DIE
 * above it: libdw's scope search only goes down through DIEs that hold
 * the address, lexical blocks included, so a DIE with ranges below one
 * without them is out of its reach.
 */
static void read_scopes(Dwarf_Die *cu, struct unit_scopes *s)
{
	Dwarf_Die stack[MAX_DEPTH];
	int ranged_at[MAX_DEPTH];       /* each level's DIE: its first range, or BLOCKED */
	unsigned depth = 0;
	size_t visited = 0;

	Dwarf_Off last = 0;
	int r;

	s->n = 0;
	s->complete = ranges_well_formed(cu);
	if ((r = dwarf_child(cu, &stack[0])) != 0) {
		if (r < 0)
			s->complete = 0;
		return;
	}
	for (;;) {
		int outer = depth > 0 ? ranged_at[depth - 1] : -1;
		Dwarf_Die next;

		/* A compiler's tree is met in the order it is written (no sibling pointer back). */
		if (dwarf_dieoffset(&stack[depth]) <= last)
			s->complete = 0;
		last = dwarf_dieoffset(&stack[depth]);
		ranged_at[depth] = outer;
		if (!ranges_well_formed(&stack[depth]) || !origin_well_formed(&stack[depth], cu))
			s->complete = 0;
		else
			ranged_at[depth] = add_ranges(s, &stack[depth], outer);
		/* libdw goes down only through DIEs that hold the address: none below this one. */
		if (ranged_at[depth] < 0 || !searched_below(&stack[depth]))
			ranged_at[depth] = BLOCKED;
		if (++visited == MAX_DIES) {
			s->complete = 0;
			return;
		}
		if (dwarf_haschildren(&stack[depth])) {
			if (depth + 1 == MAX_DEPTH) {
				s->complete = 0;
				return;
			}
			if ((r = dwarf_child(&stack[depth], &stack[depth + 1])) == 0) {
				depth++;
				continue;
			}
			if (r < 0)
				s->complete = 0;
		}
		while ((r = dwarf_siblingof(&stack[depth], &next)) != 0) {
			if (r < 0)
				s->complete = 0;
			if (depth == 0)
				return;
			depth--;
		}
		stack[depth] = next;
	}
}

/* Whether the DIE of range `anc` (its first range's index) is above range i's DIE. */
static int is_ancestor(const struct unit_scopes *s, int anc, size_t i)
{
	for (int p = s->v[i].parent, steps = 0; p >= 0 && steps < MAX_DEPTH; p = s->v[p].parent, steps++)
		if (s->v[p].die == s->v[anc].die)
			return 1;
	return 0;
}

static int first_range(const struct unit_scopes *s, size_t i)
{
	size_t k = i;

	while (k > 0 && s->v[k - 1].die == s->v[i].die)
		k--;
	return (int)k;
}

/* Whether range i lies inside one of its parent's ranges (or the unit's). */
static int inside_parent(const struct unit_scopes *s, size_t i, Dwarf_Die *cu)
{
	int p = s->v[i].parent;

	if (p == BLOCKED)
		return 0;
	if (p < 0) {
		Dwarf_Addr base, lo, hi;
		ptrdiff_t at = 0;

		while ((at = dwarf_ranges(cu, at, &base, &lo, &hi)) > 0)
			if (lo <= s->v[i].lo && s->v[i].hi <= hi)
				return 1;
		return 0;
	}
	for (size_t k = (size_t)p; k < s->n && s->v[k].die == s->v[p].die; k++)
		if (s->v[k].lo <= s->v[i].lo && s->v[i].hi <= s->v[k].hi)
			return 1;
	return 0;
}

/* The unit's ranges nest as a compiler's do: then the index must equal libdw. */
static int well_nested(const struct unit_scopes *s, Dwarf_Die *cu)
{
	if (!s->complete)
		return 0;
	for (size_t i = 0; i < s->n; i++) {
		if (!inside_parent(s, i, cu))
			return 0;
		for (size_t j = i + 1; j < s->n; j++) {
			const struct span *a = &s->v[i], *b = &s->v[j];

			if (a->hi <= b->lo || b->hi <= a->lo)
				continue;
			if (a->die == b->die)
				return 0;       /* one DIE's ranges overlap */
			if (!is_ancestor(s, first_range(s, i), j) && !is_ancestor(s, first_range(s, j), i))
				return 0;       /* unrelated DIEs overlap */
		}
	}
	return 1;
}

/* ---- The comparison ---- */

/*
 * LeakSanitizer's switch, where the build has it (weak: absent
 * otherwise).  elfutils 0.188's dwarf_getscopes can lose the scope array
 * it allocated when a later pass over hostile DWARF fails (libFuzzer
 * found such inputs), and its caller gets nothing to free: libdw's
 * reference answer is asked with leak checking off, the index's never.
 */
void __lsan_disable(void) __attribute__((weak));
void __lsan_enable(void) __attribute__((weak));

static int libdw_answer(Dwarf_Die *cu, uint64_t address, struct swi_scope_chain *out)
{
	int r;

	if (__lsan_disable)
		__lsan_disable();
	r = swi_scope_chain_libdw(cu, address, out);
	if (__lsan_enable)
		__lsan_enable();
	return r;
}

static void check_chain(const struct swi_scope_chain *c, uint64_t address)
{
	if (c->n == 0 || c->n > SWI_SCOPE_CHAIN_MAX)
		abort();
	for (size_t i = 0; i < c->n; i++) {
		Dwarf_Die d = c->die[i];
		int inlined = dwarf_tag(&d) == DW_TAG_inlined_subroutine;

		if (!is_scope(&d) || dwarf_haspc(&d, address) != 1)
			abort();
		/*
		 * Only the last may be other than an inlined call.  (It may be
		 * one too: when the chain is full, or when in hostile DWARF no
		 * subprogram holds the inlined call.)
		 */
		if (!inlined && i + 1 < c->n)
			abort();
	}
}

static void probe(struct swi_scope_units *units, Dwarf_Die *cu, uint64_t address, int nested)
{
	struct swi_scope_chain a, b;
	int got = swi_scope_chain(units, cu, address, &a), ref;

	if (got < -1 || got > 1)
		abort();
	if (got == 1)
		check_chain(&a, address);
	if (got == 0 || !nested)
		return;
	/*
	 * Where libdw fails (hostile DWARF elsewhere in the unit), it has no
	 * answer; where it finds nothing, mutated DWARF may have stopped its
	 * search early (an attribute renamed in an abbreviation, a sibling
	 * pointer into a DIE) where the index's walk went on: only libdw's
	 * chains are held against the index.
	 */
	if ((ref = libdw_answer(cu, address, &b)) == 0 || (ref == -1 && got == 1))
		return;
	if (got != ref || a.n != b.n)
		abort();
	for (size_t i = 0; got == 1 && i < a.n; i++)
		if (dwarf_dieoffset(&a.die[i]) != dwarf_dieoffset(&b.die[i]))
			abort();
}

static void check_unit(struct swi_scope_units *units, Dwarf_Die *cu, struct fz *f)
{
	static struct unit_scopes s;
	size_t probes = 0;
	int nested;

	read_scopes(cu, &s);
	nested = well_nested(&s, cu);
	for (size_t i = 0; i < s.n && probes < MAX_PROBES; i++) {
		const uint64_t at[] = { s.v[i].lo, s.v[i].hi - 1, s.v[i].lo + (s.v[i].hi - s.v[i].lo) / 2,
		                        s.v[i].hi, s.v[i].lo - 1 };

		for (size_t k = 0; k < sizeof at / sizeof at[0]; k++, probes++)
			probe(units, cu, at[k], nested);
	}
	/* And a few the input picks, anywhere. */
	for (int k = 0; k < 4 && f->n >= 8; k++)
		probe(units, cu, fz_u64(f), nested);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct swi_scope_units *units;
	struct image im;
	struct fz f;
	Dwarf *dw;
	Elf *elf;

	fz_init(&f, data, size);
	if (elf_version(EV_CURRENT) == EV_NONE || !make_image(&f, &im))
		return 0;
	if (!(elf = elf_memory((char *)im.p, im.n))) {
		free(im.p);
		return 0;
	}
	if ((dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL)) && (units = swi_scope_units_create())) {
		Dwarf_Off off = 0, next;
		size_t hsize;

		for (int u = 0; u < MAX_UNITS && dwarf_nextcu(dw, off, &next, &hsize, NULL, NULL, NULL) == 0;
		     u++, off = next) {
			Dwarf_Die cu;

			if (dwarf_offdie(dw, off + hsize, &cu))
				check_unit(units, &cu, &f);
		}
		swi_scope_units_free(units);
	}
	if (dw)
		dwarf_end(dw);
	elf_end(elf);
	free(im.p);
	return 0;
}
