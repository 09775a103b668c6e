/*
 * module.c - native ELF modules: their CFI as SWU, their symbols, their
 * code-map entries.
 *
 * Loading does all the work, once: libelf reads the file, the CFI
 * importer (unwindinfo/cfi_import.c) turns every FDE it can into an SWU
 * blob, signal trampolines without CFI are found by their code
 * (unwindinfo/sigreturn_code.c), the PLT's stubs and the code CFI does not
 * describe by theirs (unwindinfo/analyze_module.c: within a budget, or
 * all of it with SW_MODULE_ANALYZE), and the function symbols of .symtab and
 * .dynsym are copied and sorted.  Afterwards the file is closed; the module owns everything a
 * code-map entry points to (the sw_native_function records and the blobs).
 *
 * A lazy load (SW_MODULE_LAZY) reads the symbols alike but leaves the CFI
 * to lazy_cfi.c, which keeps the file open and imports a function when a
 * lookup first lands in it.  Since libelf's copy of the file's strings
 * then lives as long as the module, the first symbol table's names are
 * used where libelf read them instead of copied (libLLVM's .dynstr: 3 MB).
 *
 * A placeholder (SW_MODULE_PLACEHOLDER) is a lazy module whose load
 * stops after the file's headers: its view (lazy_cfi.c) covers the code's
 * range and answers every lookup "not imported", and the symbols and
 * the .eh_frame_hdr are read by the first sw_module_import_noted after a
 * walk landed there, under the module's load lock, then published.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <gelf.h>
#include "util.h"
#include "array_grow.h"
#include "cfi_import.h"
#include "image_format.h"
#include "codemap_table.h"
#include "regular_file.h"
#include "lazy_cfi.h"
#include "jit_object.h"

/* Hard limits against hostile files. */
#define MODULE_MAX_SYMBOLS   (1u << 22)
#define MODULE_MAX_NAMES     (1u << 28)         /* bytes of symbol names */
#define SYMBOLIZE_MAX_BACK   256                /* symbols looked at below an address */
/*
 * Bytes of code without CFI that a load without SW_MODULE_ANALYZE
 * analyzes, besides the PLT: a small program's built without unwind
 * tables, and the assembly and skipped FDEs of an ordinary library.  The
 * analysis reads about 1 MB of x86-64 code a second on a loaded machine
 * (2 MB of -O2 code in 2.7-3.3 s at a load average of 13), so a module
 * without CFI does not make every load slow; SW_MODULE_ANALYZE has no limit.
 */
#define MODULE_ANALYSIS_BUDGET (256u << 10)

struct module_symbol {
	uint64_t start, size;           /* loaded addresses */
	size_t name;                    /* offset in `names` */
	unsigned rank;                  /* which of several at one address to prefer: 0 best */
};

struct sw_module {
	sw_arch arch;
	uint64_t bias;
	uint64_t base;                  /* the lowest PT_LOAD address (ELF address) */
	sw_native_function *fns;
	size_t nfns;
	sw_module_skip *skips;          /* the FDEs the import skipped (sw_module_skips) */
	size_t nskips;
	uint8_t *blobs;
	struct module_symbol *syms;
	size_t nsyms, syms_cap;
	char *names;
	size_t names_len, names_cap;
	bool names_borrowed;            /* `names` is libelf's data of a lazy module's file: not ours */
	sw_module_import_stats stats;
	/* What sw_module_register hands the code map; table.nfn == 0 when the functions do not fit one. */
	struct swi_code_table_store table;
	struct swi_lazy_cfi *lazy;      /* a lazy load's CFI, instead of fns and table */
	_Atomic bool symbols_read;      /* syms and names are there (a placeholder's: once loaded) */
	bool placeholder;               /* load_lock is initialised */
	pthread_mutex_t load_lock;      /* a placeholder's load */
};

#define MODULE_LAZY_FLAGS (SW_MODULE_LAZY | SW_MODULE_LAZY_SIGNAL_SAFE | SW_MODULE_PLACEHOLDER)
#define MODULE_FLAGS (SW_MODULE_ANALYZE | MODULE_LAZY_FLAGS)

/* ---- The file ---- */

/* The architecture of an ELF file the library can load. */
static sw_status elf_arch(Elf *elf, sw_arch *arch)
{
	GElf_Ehdr eh;

	if (elf_kind(elf) != ELF_K_ELF) {
		size_t size = 0;
		/* The ELF magic but no ELF: a header cut short. */
		const char *raw = elf_rawfile(elf, &size);

		if (raw && size >= 4 && memcmp(raw, ELFMAG, SELFMAG) == 0)
			return SW_E_TRUNCATED;
		return SW_E_UNSUPPORTED;
	}
	if (!gelf_getehdr(elf, &eh))
		return SW_E_TRUNCATED;
	if (eh.e_ident[EI_DATA] != ELFDATA2LSB)
		return SW_E_UNSUPPORTED;        /* every target of the library is little-endian */
	if (eh.e_type != ET_EXEC && eh.e_type != ET_DYN)
		return SW_E_UNSUPPORTED;        /* relocatable objects have no final addresses */
	switch (eh.e_machine) {
	case EM_X86_64:
		*arch = SW_ARCH_X64;
		return eh.e_ident[EI_CLASS] == ELFCLASS64 ? SW_OK : SW_E_UNSUPPORTED;
	case EM_386:
		*arch = SW_ARCH_X86;
		return eh.e_ident[EI_CLASS] == ELFCLASS32 ? SW_OK : SW_E_UNSUPPORTED;
	case EM_AARCH64:
		*arch = SW_ARCH_ARM64;
		return eh.e_ident[EI_CLASS] == ELFCLASS64 ? SW_OK : SW_E_UNSUPPORTED;
	default:
		return SW_E_UNSUPPORTED;
	}
}

/*
 * Do the program headers, the section headers and every section's bytes
 * lie inside the file's `size` bytes?  libelf would only find fewer
 * sections in a truncated file; it is an error instead.
 */
static sw_status check_layout(Elf *elf, uint64_t size)
{
	GElf_Ehdr eh;
	size_t shnum = 0, phnum = 0;

	if (!gelf_getehdr(elf, &eh))
		return SW_E_TRUNCATED;
	/* The header's own counts: libelf gives 0 for a table it cannot read.
	 * (0 with an offset: extended numbering, whose entry 0 must be there.) */
	if (elf_getshdrnum(elf, &shnum) != 0 || shnum < eh.e_shnum)
		shnum = eh.e_shnum;
	if (shnum == 0 && eh.e_shoff)
		shnum = 1;
	if (elf_getphdrnum(elf, &phnum) != 0 || phnum < eh.e_phnum)
		phnum = eh.e_phnum;
	if (shnum && (eh.e_shoff > size || (size - eh.e_shoff) / shnum < eh.e_shentsize))
		return SW_E_TRUNCATED;
	if (phnum && (eh.e_phoff > size || (size - eh.e_phoff) / phnum < eh.e_phentsize))
		return SW_E_TRUNCATED;
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh))
			return SW_E_BADMETA;
		if (sh.sh_type != SHT_NOBITS && (sh.sh_offset > size || sh.sh_size > size - sh.sh_offset))
			return SW_E_TRUNCATED;
	}
	return SW_OK;
}

/* ---- Symbols ---- */

/*
 * Borrowed names copied into the module's own buffer, with a NUL after
 * them as copy_strings leaves each table: before another table joins
 * them, or when the file is closed after all (a full load).
 */
static sw_status own_names(sw_module *m)
{
	char *copy;

	if (!m->names_borrowed)
		return SW_OK;
	if (!(copy = malloc(m->names_len + 1)))
		return SW_E_NOMEM;
	memcpy(copy, m->names, m->names_len);
	copy[m->names_len] = '\0';
	m->names = copy;
	m->names_len++;
	m->names_cap = m->names_len;
	m->names_borrowed = false;
	return SW_OK;
}

/* Global symbols before weak ones before local ones, .symtab's first. */
static unsigned symbol_rank(const GElf_Sym *sym, bool dynsym)
{
	unsigned bind = GELF_ST_BIND(sym->st_info);
	unsigned r = bind == STB_GLOBAL ? 0 : bind == STB_WEAK ? 2 : 4;

	return r + (dynsym ? 1 : 0);
}

/*
 * A symbol table's strings, copied whole into the module's names (with a
 * NUL after them, so that no name runs past the copy): one copy per
 * table rather than one per symbol.  Its first byte's offset in `names`,
 * and in *terminated the bytes up to its last NUL: a name that starts
 * beyond ends outside the section, which elf_strptr refuses too.
 * SW_E_NOTFOUND when there are no strings.
 */
static sw_status copy_strings(sw_module *m, Elf *elf, size_t strndx, bool borrow, size_t *base,
                              size_t *terminated)
{
	Elf_Scn *scn = elf_getscn(elf, strndx);
	size_t last;
	Elf_Data *d;
	GElf_Shdr sh;
	sw_status st;

	if (!scn || !gelf_getshdr(scn, &sh) || sh.sh_type != SHT_STRTAB)
		return SW_E_NOTFOUND;
	if ((sh.sh_flags & SHF_COMPRESSED) && elf_compress(scn, 0, 0) < 0)
		return SW_E_NOTFOUND;
	if (!(d = elf_getdata(scn, NULL)) || !d->d_buf || d->d_size == 0)
		return SW_E_NOTFOUND;
	if (d->d_size >= MODULE_MAX_NAMES - m->names_len)
		return SW_E_LIMIT;
	if (borrow && !m->names) {
		/* The first table's, where libelf read them (see the top). */
		m->names = d->d_buf;
		m->names_len = d->d_size;
		m->names_borrowed = true;
		*base = 0;
	} else {
		if ((st = own_names(m)) != SW_OK ||
		    (st = swi_array_grow((void **)&m->names, &m->names_cap, m->names_len + d->d_size + 1,
		                         1)) != SW_OK)
			return st;
		*base = m->names_len;
		memcpy(m->names + m->names_len, d->d_buf, d->d_size);
		m->names[m->names_len + d->d_size] = '\0';
		m->names_len += d->d_size + 1;
	}
	/* A name must end at a NUL of the section itself: the last one bounds them. */
	last = d->d_size;
	while (last > 0 && ((const char *)d->d_buf)[last - 1] != '\0')
		last--;
	*terminated = last;
	return SW_OK;
}

/* The function symbols of one symbol table. */
static sw_status read_symtab(sw_module *m, Elf *elf, Elf_Scn *scn, const GElf_Shdr *sh, bool borrow)
{
	bool dynsym = sh->sh_type == SHT_DYNSYM;
	Elf_Data *d = elf_getdata(scn, NULL);
	size_t entsize = gelf_fsize(elf, ELF_T_SYM, 1, EV_CURRENT);
	size_t n, base, terminated;
	sw_status st;

	if (!d || entsize == 0)
		return SW_OK;           /* unreadable: no symbols from it */
	n = d->d_size / entsize;
	if (n > MODULE_MAX_SYMBOLS - m->nsyms)
		return SW_E_LIMIT;
	if ((st = copy_strings(m, elf, sh->sh_link, borrow, &base, &terminated)) != SW_OK)
		return st == SW_E_NOTFOUND ? SW_OK : st;        /* no names: no symbols from it */
	/* At most n: one allocation, however many are functions. */
	if ((st = swi_array_grow((void **)&m->syms, &m->syms_cap, m->nsyms + n, sizeof *m->syms)) != SW_OK)
		return st;
	for (size_t i = 1; i < n; i++) {
		GElf_Sym sym;
		unsigned type;

		if (!gelf_getsym(d, (int)i, &sym))
			break;
		type = GELF_ST_TYPE(sym.st_info);
		if ((type != STT_FUNC && type != STT_GNU_IFUNC) || sym.st_shndx == SHN_UNDEF)
			continue;
		if (sym.st_name >= terminated || m->names[base + sym.st_name] == '\0')
			continue;       /* no name, or one that runs off the section */
		m->syms[m->nsyms++] = (struct module_symbol){ sym.st_value + m->bias, sym.st_size,
		                                              base + sym.st_name,
		                                              symbol_rank(&sym, dynsym) };
	}
	return SW_OK;
}

static size_t leading_underscores(const char *s)
{
	return strspn(s, "_");
}

/*
 * By start, then preference (rank), then the larger, then the name with
 * fewer leading underscores (the public one of aliases such as libc's
 * read and __read, as perf and gdb choose), then by name.
 */
static int symbol_cmp_names(const struct module_symbol *a, const struct module_symbol *b,
                            const char *names)
{
	size_t ua, ub;

	if (a->start != b->start)
		return a->start < b->start ? -1 : 1;
	if (a->rank != b->rank)
		return a->rank < b->rank ? -1 : 1;
	if (a->size != b->size)
		return a->size > b->size ? -1 : 1;
	ua = leading_underscores(names + a->name);
	ub = leading_underscores(names + b->name);
	if (ua != ub)
		return ua < ub ? -1 : 1;
	return strcmp(names + a->name, names + b->name);
}

/* A merge sort (stable, no global state): symbols by start, then preference. */
static void sort_symbols(struct module_symbol *v, struct module_symbol *tmp, size_t n,
                         const char *names)
{
	size_t h, i, j, k;

	if (n < 2)
		return;
	h = n / 2;
	sort_symbols(v, tmp, h, names);
	sort_symbols(v + h, tmp, n - h, names);
	for (i = 0, j = h, k = 0; i < h && j < n;)
		tmp[k++] = symbol_cmp_names(&v[j], &v[i], names) < 0 ? v[j++] : v[i++];
	while (i < h)
		tmp[k++] = v[i++];
	while (j < n)
		tmp[k++] = v[j++];
	memcpy(v, tmp, n * sizeof *v);
}

/* `borrow`: the file stays open as long as the module (a lazy load), and its names may stay libelf's. */
static sw_status read_symbols(sw_module *m, Elf *elf, bool borrow)
{
	struct module_symbol *tmp;
	size_t keep = 0;
	sw_status st;

	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || (sh.sh_type != SHT_SYMTAB && sh.sh_type != SHT_DYNSYM))
			continue;
		if ((st = read_symtab(m, elf, scn, &sh, borrow)) != SW_OK)
			return st;
	}
	if (m->nsyms < 2)
		goto done;
	tmp = malloc(m->nsyms * sizeof *tmp);
	if (!tmp)
		return SW_E_NOMEM;
	sort_symbols(m->syms, tmp, m->nsyms, m->names);
	free(tmp);
	/* The same symbol in .symtab and .dynsym is kept once. */
	for (size_t i = 0; i < m->nsyms; i++) {
		const struct module_symbol *p = keep ? &m->syms[keep - 1] : NULL;

		if (p && p->start == m->syms[i].start && p->size == m->syms[i].size &&
		    strcmp(m->names + p->name, m->names + m->syms[i].name) == 0)
			continue;
		m->syms[keep++] = m->syms[i];
	}
	m->nsyms = keep;
done:
	m->stats.symbols = (uint32_t)m->nsyms;
	return SW_OK;
}

static bool symbol_contains(const struct module_symbol *s, uint64_t address)
{
	/* A symbol without a size (hand-written assembly) names its first byte only. */
	return s->size ? address - s->start < s->size : address == s->start;
}

/* The symbol containing `address`, or NULL. */
static const struct module_symbol *find_symbol(const sw_module *m, uint64_t address)
{
	size_t lo, seen = 0;

	/* The first symbol that starts after the address. */
	SWI_SEARCH(lo, m->nsyms, mid, m->syms[mid].start <= address);
	/* The nearest start below that contains it; of several at that start, the first. */
	while (lo > 0 && seen++ < SYMBOLIZE_MAX_BACK) {
		const struct module_symbol *s = &m->syms[--lo];

		if (!symbol_contains(s, address))
			continue;
		while (lo > 0 && m->syms[lo - 1].start == s->start) {
			if (symbol_contains(&m->syms[lo - 1], address))
				s = &m->syms[lo - 1];
			lo--;
		}
		return s;
	}
	return NULL;
}

bool swi_module_symbol_span(const sw_module *m, size_t i, uint64_t *start, uint64_t *size)
{
	if (i >= m->nsyms)
		return false;
	*start = m->syms[i].start;
	*size = m->syms[i].size;
	return true;
}

const char *swi_module_name_at(const sw_module *m, uint64_t address)
{
	const struct module_symbol *s = find_symbol(m, address);

	return s && s->start == address ? m->names + s->name : NULL;
}

/* ---- Functions ---- */

static sw_status take_functions(sw_module *m, struct swi_cfi_import *imp)
{
	if (imp->nfns == 0)
		return SW_OK;
	m->fns = calloc(imp->nfns, sizeof *m->fns);
	if (!m->fns)
		return SW_E_NOMEM;
	for (size_t i = 0; i < imp->nfns; i++) {
		const struct swi_cfi_fn *f = &imp->fns[i];
		sw_native_function *n = &m->fns[i];
		const struct module_symbol *s;

		/* A load bias may not wrap an address around. */
		if (f->start + m->bias < f->start || f->start + m->bias + f->size < f->start + m->bias)
			return SW_E_INVAL;
		n->module = m;
		n->start = f->start + m->bias;
		n->size = f->size;
		n->unwind = imp->blobs + f->blob;
		n->unwind_size = f->blob_size;
		n->source = f->source;
		n->flags = f->flags;
		s = find_symbol(m, n->start);
		n->name = s && s->start == n->start ? m->names + s->name : NULL;
	}
	m->nfns = imp->nfns;
	m->blobs = imp->blobs;
	imp->blobs = NULL;
	return SW_OK;
}

/* The FDEs the import skipped, named and moved by the load bias as the functions are. */
static sw_status take_skips(sw_module *m, const struct swi_cfi_import *imp)
{
	if (imp->nskips == 0)
		return SW_OK;
	if (!(m->skips = calloc(imp->nskips, sizeof *m->skips)))
		return SW_E_NOMEM;
	for (size_t i = 0; i < imp->nskips; i++) {
		const struct swi_cfi_skip *k = &imp->skips[i];
		const struct module_symbol *s;

		if (k->start + m->bias < k->start || k->start + m->bias + k->size < k->start + m->bias)
			return SW_E_INVAL;
		s = find_symbol(m, k->start + m->bias);
		m->skips[i] = (sw_module_skip){ s ? m->names + s->name : NULL, k->start + m->bias, k->size,
		                                k->where + m->bias, k->reason };
	}
	m->nskips = imp->nskips;
	return SW_OK;
}

/*
 * The code table sw_module_register hands the map (codemap_table.h): the
 * functions' starts and their distinct blobs, which the importer already
 * keeps end to end (swi_cfi_keep_blob), so the table points at them.
 */
static sw_status make_table(sw_module *m, const struct swi_cfi_import *imp)
{
	struct swi_code_table_input *in;
	size_t rules, copied;
	sw_status st;

	if (m->nfns == 0)
		return SW_OK;
	if (!(in = malloc(sizeof(*in) * m->nfns)))
		return SW_E_NOMEM;
	for (size_t i = 0; i < m->nfns; i++)
		in[i] = (struct swi_code_table_input){
			m->fns[i].start, m->fns[i].size, (uint32_t)imp->fns[i].blob, imp->fns[i].blob_size,
			m->fns[i].flags
		};
	st = swi_code_table_build(&m->table, in, m->nfns, m->blobs, 0, m->fns, sizeof(*m->fns),
	                          SW_CODE_NATIVE);
	free(in);
	m->stats.index_bytes = swi_code_table_store_bytes(&m->table, &rules, &copied);
	m->stats.rule_bytes = rules;
	/* Counted should the blobs ever need a copy (the importer keeps them end to end). */
	m->stats.index_bytes += copied;
	return st;
}

/* The lowest address a PT_LOAD segment asks for: an SWU image's base. */
static uint64_t load_base(Elf *elf)
{
	uint64_t base = UINT64_MAX;
	size_t n = 0;

	if (elf_getphdrnum(elf, &n) != 0)
		return 0;
	for (size_t i = 0; i < n && i < 65536; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(elf, (int)i, &ph) && ph.p_type == PT_LOAD && ph.p_vaddr < base)
			base = ph.p_vaddr;
	}
	return base == UINT64_MAX ? 0 : base;
}

/* The module's symbols as the analysis takes them (ELF addresses), or NULL for none or no memory. */
static struct swi_symbol_range *symbol_ranges(const sw_module *m)
{
	struct swi_symbol_range *r = m->nsyms ? calloc(m->nsyms, sizeof *r) : NULL;

	for (size_t i = 0; r && i < m->nsyms; i++)
		r[i] = (struct swi_symbol_range){ m->syms[i].start - m->bias, m->syms[i].size,
		                                  m->names + m->syms[i].name };
	return r;
}

/* Instruction analysis of what the CFI did not describe: all of it with SW_MODULE_ANALYZE. */
static sw_status analyze(sw_module *m, Elf *elf, unsigned flags, struct swi_cfi_import *imp)
{
	struct swi_symbol_range *r = symbol_ranges(m);
	sw_status st;

	if (m->nsyms && !r)
		return SW_E_NOMEM;
	st = swi_analyze_module(elf, m->arch, r, m->nsyms,
	                        (flags & SW_MODULE_ANALYZE) ? SWI_ANALYZE_ALL : MODULE_ANALYSIS_BUDGET, imp);
	free(r);
	return st;
}

/* Is a load with these flags of this file (-1: an image) tried lazily? */
static bool lazy_flags(unsigned flags, int fd)
{
	return (flags & MODULE_LAZY_FLAGS) && !(flags & SW_MODULE_ANALYZE) && fd >= 0;
}

/*
 * The lazy view of the module, which then owns `elf` and `fd` (*kept);
 * SW_E_UNSUPPORTED when the module is to be loaded in full.
 */
static sw_status load_lazy(sw_module *m, Elf *elf, int fd, unsigned flags, bool *kept)
{
	struct swi_lazy_analysis analysis = { NULL, m->nsyms, MODULE_ANALYSIS_BUDGET };
	struct swi_symbol_range *r;
	sw_status st;

	if (!lazy_flags(flags, fd))
		return SW_E_UNSUPPORTED;
	/* Code without CFI is analyzed at the open, as a full load does it (see analyze). */
	if (!(r = symbol_ranges(m)) && m->nsyms)
		return SW_E_NOMEM;
	analysis.syms = r;
	st = swi_lazy_cfi_open(elf, fd, m->arch, m->bias, !(flags & SW_MODULE_LAZY_SIGNAL_SAFE), m,
	                       &analysis, &m->lazy);
	free(r);
	*kept = st == SW_OK;
	return st;
}

/*
 * A placeholder of the module, which then owns `elf` and `fd` (*kept);
 * SW_E_UNSUPPORTED when it is to be loaded now (lazily or in full).
 */
static sw_status load_placeholder(sw_module *m, Elf *elf, int fd, unsigned flags, bool *kept)
{
	sw_status st;

	if (!(flags & SW_MODULE_PLACEHOLDER) || !lazy_flags(flags, fd))
		return SW_E_UNSUPPORTED;
	if (pthread_mutex_init(&m->load_lock, NULL) != 0)
		return SW_E_NOMEM;
	m->placeholder = true;
	st = swi_lazy_cfi_placeholder(elf, fd, m->arch, m->bias, !(flags & SW_MODULE_LAZY_SIGNAL_SAFE), m,
	                              &m->lazy);
	*kept = st == SW_OK;
	return st;
}

/* Forget the symbols read so far (a placeholder's load that failed may be tried again). */
static void drop_symbols(sw_module *m)
{
	free(m->syms);
	if (!m->names_borrowed)
		free(m->names);
	m->syms = NULL;
	m->names = NULL;
	m->nsyms = m->syms_cap = m->names_len = m->names_cap = 0;
	m->names_borrowed = false;
	m->stats.symbols = 0;
}

/*
 * Load a placeholder: its symbols, then its view (lazy_cfi.c), once.
 * *loaded: what swi_lazy_cfi_load counts.  Not from a signal handler.
 */
static sw_status load_now(sw_module *m, size_t *loaded)
{
	struct swi_lazy_analysis analysis = { NULL, 0, MODULE_ANALYSIS_BUDGET };
	struct swi_symbol_range *r = NULL;
	sw_status st = SW_OK;

	*loaded = 0;
	pthread_mutex_lock(&m->load_lock);
	if (!atomic_load_explicit(&m->symbols_read, memory_order_relaxed)) {
		if ((st = read_symbols(m, swi_lazy_cfi_elf(m->lazy), true)) != SW_OK)
			drop_symbols(m);
		else
			/* Readers (sw_module_symbolize) acquire it. */
			atomic_store_explicit(&m->symbols_read, true, memory_order_release);
	}
	if (st == SW_OK && !(r = symbol_ranges(m)) && m->nsyms)
		st = SW_E_NOMEM;
	if (st == SW_OK) {
		analysis.syms = r;
		analysis.nsyms = m->nsyms;
		st = swi_lazy_cfi_load(m->lazy, &analysis, loaded);
	}
	free(r);
	pthread_mutex_unlock(&m->load_lock);
	return st;
}

static sw_status load_elf(Elf *elf, int fd, uint64_t file_size, uint64_t load_bias, unsigned flags,
                          const struct swi_progress *progress, sw_arch *arch_out, sw_module **out,
                          bool *kept)
{
	struct swi_cfi_import imp;
	sw_module *m;
	sw_arch arch = SW_ARCH_NONE;
	sw_status st;

	if (!elf)
		return SW_E_BADMETA;
	if ((st = elf_arch(elf, &arch)) != SW_OK || (st = check_layout(elf, file_size)) != SW_OK)
		return st;
	m = calloc(1, sizeof *m);
	if (!m)
		return SW_E_NOMEM;
	m->arch = arch;
	m->bias = load_bias;
	m->base = load_base(elf);
	if ((st = load_placeholder(m, elf, fd, flags, kept)) != SW_E_UNSUPPORTED) {
		if (st != SW_OK) {
			sw_module_free(m);
			return st;
		}
		if (arch_out)
			*arch_out = arch;
		*out = m;
		return SW_OK;
	}
	/* Symbols first: imported functions take their names. */
	if ((st = read_symbols(m, elf, lazy_flags(flags, fd))) != SW_OK) {
		sw_module_free(m);
		return st;
	}
	atomic_store_explicit(&m->symbols_read, true, memory_order_release);
	st = load_lazy(m, elf, fd, flags, kept);
	if (st != SW_E_UNSUPPORTED) {
		if (st != SW_OK) {
			sw_module_free(m);
			return st;
		}
		if (arch_out)
			*arch_out = arch;
		*out = m;
		return SW_OK;
	}
	/* Loaded in full after all: the file is closed when the load ends. */
	if ((st = own_names(m)) != SW_OK) {
		sw_module_free(m);
		return st;
	}
	st = swi_cfi_import(elf, arch, progress, &imp);
	if (st == SW_OK)
		st = swi_find_sigreturn_code(elf, arch, &imp);
	/* At every load: the walk may not allocate, so it cannot analyze code itself (analyze_module.c). */
	if (st == SW_OK)
		st = analyze(m, elf, flags, &imp);
	if (st == SW_OK)
		st = take_functions(m, &imp);
	if (st == SW_OK)
		st = take_skips(m, &imp);
	if (st == SW_OK) {
		uint32_t symbols = m->stats.symbols;

		m->stats = imp.stats;
		m->stats.symbols = symbols;
		st = make_table(m, &imp);
	}
	swi_cfi_import_free(&imp);
	if (st != SW_OK) {
		sw_module_free(m);
		return st;
	}
	if (arch_out)
		*arch_out = arch;
	*out = m;
	return SW_OK;
}

SW_API sw_status sw_module_load(const char *path, uint64_t load_bias, sw_arch *arch_out,
                                sw_module **out)
{
	return sw_module_load_flags(path, load_bias, 0, arch_out, out);
}

SW_API sw_status sw_module_load_flags(const char *path, uint64_t load_bias, unsigned flags,
                                      sw_arch *arch_out, sw_module **out)
{
	return sw_module_load_progress(path, load_bias, flags, NULL, NULL, arch_out, out);
}

SW_API sw_status sw_module_load_progress(const char *path, uint64_t load_bias, unsigned flags,
                                         sw_module_progress_fn progress, void *data,
                                         sw_arch *arch_out, sw_module **out)
{
	struct swi_progress report = { progress, data };
	bool kept = false;
	off_t size;
	sw_status st;
	Elf *elf;
	int fd;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!path || (flags & ~(unsigned)MODULE_FLAGS))
		return SW_E_INVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return SW_E_UNSUPPORTED;
	/* Never a FIFO (whose open would wait for a writer) or a device. */
	fd = swi_open_regular(path, &size);
	if (fd == -2)
		return SW_E_UNSUPPORTED;
	if (fd < 0)
		return errno == ENOMEM ? SW_E_NOMEM : SW_E_NOTFOUND;
	/* Read, not mapped: a file truncated while we read it cannot fault us. */
	elf = elf_begin(fd, ELF_C_READ, NULL);
	st = load_elf(elf, fd, (uint64_t)size, load_bias, flags, &report, arch_out, out, &kept);
	/* A lazy module keeps the file to import from (its imports read the file, not the target). */
	if (kept)
		return st;
	if (elf)
		elf_end(elf);
	close(fd);
	return st;
}

SW_API sw_status sw_module_load_image(const void *image, size_t size, uint64_t load_bias,
                                      sw_arch *arch_out, sw_module **out)
{
	return sw_module_load_image_flags(image, size, load_bias, 0, arch_out, out);
}

SW_API sw_status sw_module_load_image_flags(const void *image, size_t size, uint64_t load_bias,
                                            unsigned flags, sw_arch *arch_out, sw_module **out)
{
	bool kept = false;
	sw_status st;
	char *copy;
	Elf *elf;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!image || size == 0 || (flags & ~(unsigned)MODULE_FLAGS))
		return SW_E_INVAL;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return SW_E_UNSUPPORTED;
	/* libelf may convert data in place: give it a copy, kept until elf_end. */
	copy = malloc(size);
	if (!copy)
		return SW_E_NOMEM;
	memcpy(copy, image, size);
	elf = elf_memory(copy, size);
	/* Not kept: an image (a vDSO, small) is loaded in full, lazy or not (fd -1). */
	st = load_elf(elf, -1, size, load_bias, flags, NULL, arch_out, out, &kept);
	if (elf)
		elf_end(elf);
	free(copy);
	return st;
}

/* ---- Registration and queries ---- */

SW_API sw_status sw_module_register(sw_module *m, sw_codemap *map)
{
	if (!m || !map)
		return SW_E_INVAL;
	if (m->lazy)
		return swi_codemap_add_table(map, swi_lazy_cfi_table(m->lazy));
	if (m->table.table.nfn)
		return swi_codemap_add_table(map, &m->table.table);
	for (size_t i = 0; i < m->nfns; i++) {
		const sw_native_function *f = &m->fns[i];
		sw_code_info info = {
			.method = &m->fns[i],
			.start = f->start,
			.size = f->size,
			.unwind = f->unwind,
			.unwind_size = f->unwind_size,
			.flags = SW_CODE_NATIVE | f->flags,
			.parent = NULL
		};

		sw_status st = sw_codemap_add(map, &info);

		if (st != SW_OK) {
			/* All or nothing. */
			while (i-- > 0)
				sw_codemap_remove(map, m->fns[i].start);
			return st;
		}
	}
	return SW_OK;
}

SW_API sw_status sw_module_unregister(sw_module *m, sw_codemap *map)
{
	sw_status first = SW_OK;

	if (!m || !map)
		return SW_E_INVAL;
	if (m->lazy)
		return swi_codemap_remove_table(map, swi_lazy_cfi_table(m->lazy));
	if (m->table.table.nfn)
		return swi_codemap_remove_table(map, &m->table.table);
	for (size_t i = 0; i < m->nfns; i++) {
		sw_status st = sw_codemap_remove(map, m->fns[i].start);

		if (st != SW_OK && first == SW_OK)
			first = st;
	}
	return first;
}

SW_API sw_status sw_module_symbolize(const sw_module *m, uint64_t address, const char **name,
                                     uint64_t *offset)
{
	const struct module_symbol *s;

	if (!m || !name)
		return SW_E_INVAL;
	/* A placeholder's symbols are read when it is loaded (sw_module_import_noted). */
	if (!atomic_load_explicit(&m->symbols_read, memory_order_acquire))
		return SW_E_NOTIMPORTED;
	s = find_symbol(m, address);
	if (!s)
		return SW_E_NOTFOUND;
	*name = m->names + s->name;
	if (offset)
		*offset = address - s->start;
	return SW_OK;
}

SW_API sw_status sw_module_functions(const sw_module *m, const sw_native_function **fns,
                                     size_t *count)
{
	if (!m || !fns || !count)
		return SW_E_INVAL;
	*fns = m->fns;
	*count = m->nfns;
	return SW_OK;
}

SW_API sw_status sw_module_skips(const sw_module *m, const sw_module_skip **skips, size_t *count)
{
	if (!m || !skips || !count)
		return SW_E_INVAL;
	*skips = m->skips;
	*count = m->nskips;
	return SW_OK;
}

SW_API sw_status sw_module_stats(const sw_module *m, sw_module_import_stats *out)
{
	if (!m || !out)
		return SW_E_INVAL;
	if (m->lazy) {
		swi_lazy_cfi_stats(m->lazy, out);
		out->symbols = m->stats.symbols;
		return SW_OK;
	}
	*out = m->stats;
	return SW_OK;
}

SW_API sw_status sw_module_import_noted(sw_module *m, uint64_t address, size_t *imported)
{
	size_t loaded = 0, n = 0;
	bool asked = false;
	sw_status st;

	if (imported)
		*imported = 0;
	if (!m)
		return SW_E_INVAL;
	if (!m->lazy)
		return SW_OK;
	/* A placeholder is loaded once a walk landed in it, or for an address asked for. */
	if (swi_lazy_cfi_pending(m->lazy, &asked) && (asked || address) &&
	    (st = load_now(m, &loaded)) != SW_OK)
		return st;
	st = swi_lazy_cfi_import(m->lazy, address, &n);
	if (imported)
		*imported = loaded + n;
	return st;
}

SW_API const char *sw_module_skip_name(unsigned reason)
{
	static const char *const names[SW_SKIP_COUNT] = {
		[SW_SKIP_EXPRESSION] = "expression",
		[SW_SKIP_REGISTER_RULE] = "register rule",
		[SW_SKIP_OUTERMOST] = "outermost frame",
		[SW_SKIP_UNKNOWN_REGISTER] = "unknown register",
		[SW_SKIP_LIMIT] = "limit",
		[SW_SKIP_OVERLAP] = "overlap",
		[SW_SKIP_BAD_CFI] = "bad CFI",
	};

	return reason < SW_SKIP_COUNT ? names[reason] : NULL;
}

void swi_module_limit_arena(sw_module *m, size_t bytes)
{
	if (m && m->lazy)
		swi_lazy_cfi_set_arena(m->lazy, bytes);
}

void swi_module_image_info(const sw_module *m, sw_arch *arch, uint64_t *base, uint64_t *bias)
{
	*arch = m->arch;
	*base = m->base;
	*bias = m->bias;
}

SW_API void sw_module_free(sw_module *m)
{
	if (!m)
		return;
	swi_lazy_cfi_free(m->lazy);
	if (m->placeholder)
		pthread_mutex_destroy(&m->load_lock);
	free(m->fns);
	free(m->skips);
	free(m->blobs);
	swi_code_table_store_free(&m->table);
	free(m->syms);
	if (!m->names_borrowed)
		free(m->names);
	free(m);
}
