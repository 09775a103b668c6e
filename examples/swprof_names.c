/*
 * swprof_names.c - the samples, named once per distinct frame.  At exit
 * the raw samples (see swprof.h) become distinct stacks with their
 * weights, and every distinct frame address is named once.  Native code
 * is named first from the module's own symbol table, which the walk's
 * import has already read (sw_module_symbolize), demangled.  libdw
 * (sw_names) is asked only where it adds something: the calls inlined at
 * the address as frames of their own, from DWARF the module holds itself
 * (or any module's, separate debug files too, with SWPROF_INLINE=1; none
 * with SWPROF_INLINE=0), since a profile without them blames the function
 * they were inlined into; and the symbol of an address the module's own
 * tables do not name, from its separate debug file's .symtab (found as gdb
 * finds it) without reading its DWARF (a compressed one, as libc's, cost
 * a tenth of a short run to inflate).  Where nothing knows a name,
 * stripped code is named "module+0xSTART", with the function's start from
 * the code map the modules' CFI filled (every address of a function so
 * makes one frame), else "0x...".  No dladdr: it cost the run 72% of its
 * CPU on a large C++ program.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <fcntl.h>
#include <unistd.h>
#include <gelf.h>
#include <stackwalk.h>
#include "swprof.h"
#include "perf_map.h"

/* ';' separates frames in the folded format, ' ' ends the stack: neither may be in a name. */
/*
 * Nor may a control character (a symbol is the target's data: a newline
 * in one would split a folded line, an escape would reach a terminal).
 */
void folded_safe(char *name)
{
	for (char *c = name; *c; c++) {
		unsigned char u = (unsigned char)*c;

		if (*c == ';' || *c == ' ')
			*c = '_';
		else if (u < 0x20 || u == 0x7f)
			*c = '?';
	}
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The address a frame is named by.  A caller's IP is the return address,
 * the instruction after the call, which may already be in the next
 * function (after a call that does not return): its call is one byte
 * before.  The leaf's IP is the instruction itself.  Addresses are never
 * rounded (x86 has no spare low bit).
 */
static uint64_t frame_key(const uint64_t *ips, size_t i)
{
	uint64_t raw = ips[i];

	if (raw & (MANAGED_TAG | STOPPED_TAG) || i == 0)
		return raw;
	return raw - 1;
}

static uint64_t stopped_key(sw_status stopped)
{
	return STOPPED_TAG | (uint32_t)-stopped;
}

static const loaded_module *module_of(uint64_t address)
{
	for (unsigned i = 0; i < prof.nmodules; i++)
		if (address >= prof.modules[i].lo && address < prof.modules[i].hi)
			return &prof.modules[i];
	return NULL;
}

/* The runtime's stub at `address`: the newest, where code was generated there again. */
static const runtime_stub *stub_of(uint64_t address)
{
	for (unsigned i = __atomic_load_n(&prof.nstubs, __ATOMIC_ACQUIRE); i-- > 0;)
		if (address - prof.stubs[i].start < prof.stubs[i].size)
			return &prof.stubs[i];
	return NULL;
}

/*
 * The modules' symbolizer, made when the profile is named.  A module is
 * added when a frame is first in it: reading a library's symbols and
 * debug files costs, and most modules have no frame in a profile.
 */
static sw_names *names;
static unsigned char names_added[MAX_MODULES];

/* What libdw can add to a module's own symbols, found when a frame is first in it. */
enum {
	LIBDW_UNKNOWN,
	LIBDW_SCOPES,           /* inline frames: DWARF first (the module's own, or SWPROF_INLINE=1) */
	LIBDW_SYMBOLS,          /* perhaps symbols its own tables lack (a separate debug file) */
	LIBDW_NOTHING           /* no debug file: its symbols are the module's own */
};
static unsigned char libdw_use[MAX_MODULES];
static int inline_wanted;       /* SWPROF_INLINE: -1 never, 0 the modules' own DWARF, 1 any */

/* A JIT's perf map (/tmp/perf-PID.map), read at naming time, when it lists all the code run. */
static struct perf_map jit_map;

static void open_names(void)
{
	char path[64];
	const char *why;

	const char *inl = getenv("SWPROF_INLINE");

	memset(names_added, 0, sizeof names_added);
	memset(libdw_use, LIBDW_UNKNOWN, sizeof libdw_use);
	inline_wanted = inl && *inl ? (atoi(inl) > 0 ? 1 : -1) : 0;
	if (sw_names_create(NULL, &names) != SW_OK)
		names = NULL;
	snprintf(path, sizeof path, "/tmp/perf-%ld.map", (long)prof.pid);
	/* No map is the common case; a bad one names nothing, as none would. */
	if (access(path, F_OK) != 0 || perf_map_load(&jit_map, path, &why) != 0)
		memset(&jit_map, 0, sizeof jit_map);
}

/* Whether the ELF file at `path` has DWARF of its own (section headers only). */
static int has_own_dwarf(const char *path)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), found = 0;
	size_t shstrndx;
	Elf *elf;

	if (fd < 0)
		return 0;
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf && elf_getshdrstrndx(elf, &shstrndx) == 0) {
		for (Elf_Scn *scn = NULL; !found && (scn = elf_nextscn(elf, scn)) != NULL;) {
			GElf_Shdr sh;
			const char *name;

			if (gelf_getshdr(scn, &sh) && sh.sh_type != SHT_NOBITS &&
			    (name = elf_strptr(elf, shstrndx, sh.sh_name)) != NULL)
				found = !strcmp(name, ".debug_info") || !strcmp(name, ".zdebug_info");
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

/* Module m in the symbolizer, and what libdw adds to its own symbols. */
static unsigned libdw_for(const loaded_module *lm)
{
	size_t m = (size_t)(lm - prof.modules);

	if (!names)
		return LIBDW_NOTHING;
	if (!names_added[m]) {
		names_added[m] = 1;
		sw_names_add_module(names, lm->path, lm->bias);
	}
	if (libdw_use[m] == LIBDW_UNKNOWN)
		libdw_use[m] = inline_wanted > 0 || (inline_wanted == 0 && has_own_dwarf(lm->path)) ?
		               LIBDW_SCOPES : LIBDW_SYMBOLS;
	return libdw_use[m];
}

/*
 * The symbol at f->key from libdwfl's tables (a separate debug file's
 * .symtab, where the module's own lack it), no DWARF read.  A module
 * whose symbols libdwfl found in no separate file is not asked again.
 */
static int name_by_debug_symbol(frame_entry *f, const loaded_module *lm)
{
	const char *debug_file;
	sw_name nm;

	if (sw_names_symbol(names, f->key, &nm, &debug_file) != SW_OK)
		return 0;
	if (!debug_file)
		libdw_use[lm - prof.modules] = LIBDW_NOTHING;
	if (!nm.symbol_demangled || !(f->names[0] = strdup(nm.symbol_demangled)))
		return 0;
	folded_safe(f->names[0]);
	f->nnames = 1;
	return 1;
}

/* The source-level frames at f->key (in module lm) from sw_names, innermost first, into f->names. */
static int name_by_debug_info(frame_entry *f)
{
	sw_name_frame frames[4 * MAX_INLINED];
	size_t all;
	sw_name nm;
	uint32_t n;

	if (sw_names_lookup(names, f->key, &nm, frames, 4 * MAX_INLINED) != SW_OK)
		return 0;
	all = nm.frames < 4 * MAX_INLINED ? nm.frames : 4 * MAX_INLINED;
	if (all == 0 || !frames[0].function)
		return 0;
	n = all < MAX_INLINED ? (uint32_t)all : MAX_INLINED;
	/* Past MAX_INLINED frames the innermost are kept, and the function that holds the code. */
	frames[n - 1] = frames[all - 1];
	for (uint32_t k = 0; k < n; k++) {
		const char *fn = frames[k].function ? frames[k].function : "??";

		if (!(f->names[f->nnames] = strdup(fn)))
			return f->nnames > 0;
		folded_safe(f->names[f->nnames++]);
	}
	return 1;
}

static void name_native(frame_entry *f, char *out, size_t size)
{
	const loaded_module *lm = module_of(f->key);
	const runtime_stub *stub;
	const char *sym, *base;
	sw_code_info ci;
	unsigned use;
	sw_status st;

	if (!lm) {
		uint64_t off;

		if ((stub = stub_of(f->key)) != NULL)
			snprintf(out, size, "%s", stub->name);
		else if (prof.jit_code_name && (sym = prof.jit_code_name(f->key, &off)) != NULL)
			snprintf(out, size, "%s", sym);         /* JIT code, as gdb names it */
		else if ((sym = perf_map_name(&jit_map, f->key, &off)) != NULL)
			snprintf(out, size, "%s", sym);         /* JIT code, as perf names it */
		else
			snprintf(out, size, "0x%llx", (unsigned long long)f->key);
		return;
	}
	f->module = (uint32_t)(lm - prof.modules) + 1;
	use = libdw_for(lm);
	if (use == LIBDW_SCOPES && name_by_debug_info(f))
		return;
	st = sw_module_symbolize(lm->m, f->key, &sym, NULL);
	/* A placeholder no walk loaded (a sample that could not be walked again): load it now. */
	if (st == SW_E_NOTIMPORTED && sw_module_import_noted(lm->m, f->key, NULL) != SW_E_NOMEM)
		st = sw_module_symbolize(lm->m, f->key, &sym, NULL);
	if (st == SW_OK) {
		/* As sw_names demangles, parameters and all: the same function has one name either way. */
		const char *d = names ? sw_names_demangle(names, sym) : sym;

		snprintf(out, size, "%s", d ? d : sym);
		return;
	}
	if (use == LIBDW_SYMBOLS && name_by_debug_symbol(f, lm))
		return;
	base = strrchr(lm->path, '/');
	base = base ? base + 1 : lm->path;
	/* Stripped: the function's start, from its CFI, stands for all its addresses. */
	if (sw_codemap_find(prof.map, f->key, &ci) == SW_OK && (ci.flags & SW_CODE_NATIVE))
		snprintf(out, size, "%s+0x%llx", base, (unsigned long long)(ci.start - lm->bias));
	else
		snprintf(out, size, "%s+0x%llx", base, (unsigned long long)(f->key - lm->bias));
}

/* Names f->names (innermost first) of one frame, then f->name, folded, root first. */
static void name_frame(frame_entry *f, char *out, size_t size)
{
	if (f->key & MANAGED_TAG) {
		const char *(*fn)(void *) = __atomic_load_n(&prof.method_name, __ATOMIC_ACQUIRE);
		void *method = (void *)(uintptr_t)(f->key & ~MANAGED_TAG);
		const char *name = fn ? fn(method) : NULL;

		if (name)
			snprintf(out, size, "%s", name);
		else
			snprintf(out, size, "method@%p", method);
	} else if (f->key == NOT_CODE_KEY) {
		snprintf(out, size, "[not a user-space address]");
	} else if (f->key & STOPPED_TAG) {
		/* Where the frames the walk did not reach would be: apart from every complete stack. */
		snprintf(out, size, "[stopped: %s]", sw_strerror(-(sw_status)(uint32_t)f->key));
	} else {
		name_native(f, out, size);
	}
	folded_safe(out);
}

/* f->names and f->name: the frames sw_names gave, or `one` name. */
static int set_names(frame_entry *f, const char *one)
{
	size_t len = 0;

	if (f->nnames == 0) {
		if (!(f->names[0] = strdup(one)))
			return 0;
		f->nnames = 1;
	}
	for (uint32_t k = 0; k < f->nnames; k++)
		len += strlen(f->names[k]) + 1;
	if (!(f->name = malloc(len)))
		return 0;
	len = 0;
	for (uint32_t k = f->nnames; k-- > 0;) {
		size_t n = strlen(f->names[k]);

		memcpy(f->name + len, f->names[k], n);
		len += n;
		f->name[len++] = k ? ';' : 0;
	}
	return 1;
}

static const uint64_t *sample_at(size_t offset)
{
	return &prof.buf[offset];
}

/* Raw samples in an order that puts equal stacks side by side. */
static int cmp_samples(const void *a, const void *b)
{
	const uint64_t *x = sample_at(*(const size_t *)a), *y = sample_at(*(const size_t *)b);
	size_t nx = HEADER_DEPTH(x[0]), ny = HEADER_DEPTH(y[0]);
	sw_status sx = HEADER_STATUS(x[0]), sy = HEADER_STATUS(y[0]);

	if (nx != ny)
		return nx < ny ? -1 : 1;
	if (sx != sy)
		return sx < sy ? -1 : 1;
	/* The thread too: a stack of each thread is a pprof sample of its own, with its labels. */
	for (size_t i = 1; i < SAMPLE_WORDS(x[0]); i++)
		if (x[i] != y[i])
			return x[i] < y[i] ? -1 : 1;
	return 0;
}

static uint32_t frame_index(const named_profile *np, uint64_t key)
{
	const frame_entry *lo = np->frames, *f;
	size_t n = np->nframes;

	while (n > 0) {
		f = lo + n / 2;
		if (f->key == key)
			return (uint32_t)(f - np->frames);
		if (f->key < key) {
			lo = f + 1;
			n -= n / 2 + 1;
		} else {
			n /= 2;
		}
	}
	return 0;       /* every key was entered: not reached */
}

/* A source-level frame: frame_entry i's name k, packed as i * MAX_INLINED + k. */
static const char *packed_name(const frame_entry *frames, uint64_t at)
{
	return frames[at / MAX_INLINED].names[at % MAX_INLINED];
}

static int cmp_frame_names(const void *a, const void *b, void *frames)
{
	return strcmp(packed_name(frames, *(const uint64_t *)a), packed_name(frames, *(const uint64_t *)b));
}

/* Distinct names of source-level frames become functions (pprof's), numbered in name order. */
static int number_functions(named_profile *np)
{
	size_t total = 0, n = 0;
	uint64_t *order;

	for (size_t i = 0; i < np->nframes; i++)
		total += np->frames[i].nnames;
	order = malloc((total + 1) * sizeof *order);
	np->functions = malloc((total + 1) * sizeof *np->functions);
	if (!order || !np->functions) {
		free(order);
		return 0;
	}
	for (size_t i = 0; i < np->nframes; i++)
		for (uint32_t k = 0; k < np->frames[i].nnames; k++)
			order[n++] = (uint64_t)i * MAX_INLINED + k;
	qsort_r(order, n, sizeof *order, cmp_frame_names, np->frames);
	for (size_t i = 0; i < n; i++) {
		frame_entry *f = &np->frames[order[i] / MAX_INLINED];
		const char *name = packed_name(np->frames, order[i]);

		if (!np->nfunctions || strcmp(np->functions[np->nfunctions - 1], name))
			np->functions[np->nfunctions++] = name;
		f->function[order[i] % MAX_INLINED] = (uint32_t)np->nfunctions - 1;
	}
	free(order);
	return 1;
}

static double thread_cpu_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

/* The distinct raw stacks, each with its sample count and CPU periods. */
static int collect_stacks(named_profile *np, size_t **order_out, size_t *nsamples)
{
	size_t *order = malloc((prof.samples + 1) * sizeof *order), n = 0;

	*order_out = order;
	np->stacks = calloc(prof.samples + 1, sizeof *np->stacks);
	if (!order || !np->stacks)
		return 0;
	for (size_t at = 0; at < prof.used && n < prof.samples; at += SAMPLE_WORDS(prof.buf[at]))
		order[n++] = at;
	qsort(order, n, sizeof *order, cmp_samples);
	for (size_t i = 0; i < n; i++) {
		const uint64_t *s = sample_at(order[i]);
		profile_stack *st;

		if (!np->nstacks || cmp_samples(&order[i], &order[i - 1])) {
			np->stacks[np->nstacks].tid = SAMPLE_TID(s);
			np->stacks[np->nstacks++].raw = order[i];
		}
		st = &np->stacks[np->nstacks - 1];
		st->samples++;
		st->ticks += HEADER_TICKS(s[0]);
		np->ticks += HEADER_TICKS(s[0]);
	}
	*nsamples = n;
	return 1;
}

/* Every frame key of the distinct stacks, once, sorted. */
static int collect_frames(named_profile *np)
{
	size_t total = 0, n = 0;
	uint64_t *keys;

	for (size_t i = 0; i < np->nstacks; i++)
		total += HEADER_DEPTH(prof.buf[np->stacks[i].raw]) + 1;
	keys = malloc((total + 1) * sizeof *keys);
	np->frame_ids = malloc((total + 1) * sizeof *np->frame_ids);
	if (!keys || !np->frame_ids) {
		free(keys);
		return 0;
	}
	for (size_t i = 0; i < np->nstacks; i++) {
		const uint64_t *s = sample_at(np->stacks[i].raw);
		size_t depth = HEADER_DEPTH(s[0]);

		if (HEADER_STATUS(s[0]) != SW_OK)
			keys[n++] = stopped_key(HEADER_STATUS(s[0]));
		for (size_t k = 0; k < depth; k++)
			keys[n++] = frame_key(SAMPLE_IPS(s), k);
	}
	qsort(keys, n, sizeof *keys, cmp_u64);
	np->frames = calloc(n + 1, sizeof *np->frames);
	if (!np->frames) {
		free(keys);
		return 0;
	}
	for (size_t i = 0; i < n; i++)
		if (!np->nframes || np->frames[np->nframes - 1].key != keys[i])
			np->frames[np->nframes++].key = keys[i];
	free(keys);
	return 1;
}

/* Each stack's frames, root first, as indices into np->frames. */
static void link_stacks(named_profile *np)
{
	uint32_t *next = np->frame_ids;

	for (size_t i = 0; i < np->nstacks; i++) {
		profile_stack *st = &np->stacks[i];
		const uint64_t *s = sample_at(st->raw);
		size_t depth = HEADER_DEPTH(s[0]);

		st->frames = next;
		if (HEADER_STATUS(s[0]) != SW_OK)
			st->frames[st->depth++] = frame_index(np, stopped_key(HEADER_STATUS(s[0])));
		for (size_t k = depth; k-- > 0;)
			st->frames[st->depth++] = frame_index(np, frame_key(SAMPLE_IPS(s), k));
		next += st->depth;
	}
}

int name_profile(named_profile *np)
{
	double started = thread_cpu_ms();
	size_t *order = NULL, nsamples = 0;
	int ok;

	memset(np, 0, sizeof *np);
	ok = collect_stacks(np, &order, &nsamples) && collect_frames(np);
	free(order);
	if (ok)
		open_names();
	for (size_t i = 0; ok && i < np->nframes; i++) {
		char name[256];

		name[0] = 0;
		name_frame(&np->frames[i], name, sizeof name);
		ok = set_names(&np->frames[i], name);
	}
	sw_names_free(names);
	names = NULL;
	perf_map_free(&jit_map);
	if (ok) {
		link_stacks(np);
		ok = number_functions(np);
	}
	np->naming_cpu_ms = thread_cpu_ms() - started;
	return ok;
}

void free_named_profile(named_profile *np)
{
	for (size_t i = 0; np->frames && i < np->nframes; i++) {
		free(np->frames[i].name);
		for (uint32_t k = 0; k < np->frames[i].nnames; k++)
			free(np->frames[i].names[k]);
	}
	free(np->frames);
	free(np->functions);
	free(np->stacks);
	free(np->frame_ids);
	memset(np, 0, sizeof *np);
}
