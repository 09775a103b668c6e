/*
 * module_layout.c - a target's mapped files grouped into modules
 * (module_layout.h): pure, nothing loaded, every file read through the
 * caller's bias callback.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "module_layout.h"

struct builder {
	struct module_layout *ml;       /* its mods hold a module per mapping at the most */
	module_bias_fn bias;
	void *arg;
};

static struct layout_module *add_module(struct builder *b, const sw_mapped_file *f, size_t index)
{
	struct layout_module *m = &b->ml->mods[b->ml->count++];

	memset(m, 0, sizeof *m);
	m->path = f->path;
	m->first = index;
	m->lo = f->start;
	m->hi = f->end;
	m->offset = f->offset;
	return m;
}

/*
 * A module's first mapping ends where its file's segments do, at the
 * most: a hostile core (or a remapping) may list libc's offset 0 over a
 * TiB, and the file's symbols and CFI describe nothing past its segments,
 * so the rest is in no module, where the JIT lists and perf maps may name
 * it.  Segments that end at or below the mapping's start (program headers
 * that do not fit this mapping at all) leave it as it is.
 */
static void clip_to_segments(uint64_t *hi, uint64_t lo, uint64_t load_end)
{
	if (load_end > lo && *hi > load_end)
		*hi = load_end;
}

/*
 * A module's load bias, and where its segments end, from the callback,
 * asked once: the mappings that lie within them are its own.  m->no_bias
 * says why there are none.  Only for a module that is loaded or that a
 * later mapping may join: a file mapped 20,000 times is not read 20,000
 * times.  -1: out of memory.
 */
static int place_module(struct builder *b, struct layout_module *m)
{
	const char *why;

	if (m->placed)
		return 0;
	m->placed = 1;
	why = b->bias(b->arg, m->path, m->lo, m->offset, &m->bias, &m->load_end);
	if (why)
		return !(m->no_bias = strdup(why)) ? -1 : 0;
	clip_to_segments(&m->hi, m->lo, m->load_end);
	return 0;
}

/*
 * Does mapping f continue the module before it?  Not from below its start
 * (a list out of address order: a hostile core's), which the module's
 * range would not cover.  -1: out of memory.
 */
static int continues_module(struct builder *b, const sw_mapped_file *f)
{
	struct module_layout *ml = b->ml;
	struct layout_module *m;

	if (ml->count == 0 || f->offset == 0 || strcmp(ml->mods[ml->count - 1].path, f->path) != 0)
		return 0;
	m = &ml->mods[ml->count - 1];
	if (f->start < m->lo)
		return 0;
	if (place_module(b, m) != 0)
		return -1;
	return m->no_bias || f->start < m->load_end;
}

/*
 * The mapped files, in the target's order (by address): consecutive
 * mappings of one path are one module, placed by its lowest mapping (file
 * offset 0, normally), up to where its file's segments end.  A mapping of
 * the same file beyond that is another copy: V8 maps node's embedded
 * builtins a second time, next to its JIT code, and taking that into the
 * first copy would make the module span the JIT's memory (its frames then
 * named after node).  The segments' own vaddr - offset need not be one
 * (lli's text lies a page further on), so the span is the test, not the
 * bias of each mapping.  A placed module's range never passes that span:
 * its first mapping is clipped to it when placed, and a mapping that
 * starts inside it and ends beyond it joins up to the span's end only.
 */
static int group(struct builder *b, const sw_mapped_file *files, size_t nfiles)
{
	for (size_t i = 0; i < nfiles; i++) {
		const sw_mapped_file *f = &files[i];
		struct layout_module *m;
		int code, joins;

		/*
		 * Pseudo-files such as "[vdso]" or "[heap]" have no file to read;
		 * an empty or wrapping range (a hostile core's) maps nothing.
		 */
		if (!f->path || !f->path[0] || f->path[0] == '[' || f->end <= f->start)
			continue;
		code = f->prot == 0 || (f->prot & SW_PROT_EXEC);
		if ((joins = continues_module(b, f)) < 0)
			return -1;
		if (joins) {
			uint64_t end = f->end;

			m = &b->ml->mods[b->ml->count - 1];
			/*
			 * It started inside the file's segments; what of it lies
			 * beyond where they end (a mapping that does not fit the
			 * file's program headers: a hostile core's, or one the
			 * process remapped) is in no module.  The file's symbols
			 * and CFI describe nothing there, so naming its frames after
			 * the file would be wrong; as no module's, the JIT lists and
			 * the perf map may name them.  A file without a bias has no
			 * known end and takes the whole mapping.
			 */
			if (!m->no_bias && end > m->load_end)
				end = m->load_end;
			if (end > m->hi)
				m->hi = end;
			m->code |= code;
			m->segments++;
			continue;
		}
		m = add_module(b, f, i);
		m->code = code;
		m->segments = 1;
	}
	return 0;
}

static int cmp_path_then_address(const void *a, const void *b)
{
	const struct layout_module *x = *(struct layout_module *const *)a;
	const struct layout_module *y = *(struct layout_module *const *)b;
	int c = strcmp(x->path, y->path);

	return c ? c : (x->lo > y->lo) - (x->lo < y->lo);
}

/*
 * A file mapped at several places (a process that maps one ELF file
 * thousands of times, or a core that lists it so) is loaded at one of
 * them: the one with the most segments, which is the dynamic loader's
 * (the lowest on a tie).  Loading every copy would cost time and memory in
 * the count of mappings, and their code would overlap in the map; the
 * others still name their frames' module.  Sorting by path keeps this
 * O(n log n).
 */
static int pick_one_per_file(struct module_layout *ml)
{
	struct layout_module **by_path = malloc((ml->count ? ml->count : 1) * sizeof *by_path);
	size_t end;

	if (!by_path)
		return -1;
	ml->by_path = by_path;
	for (size_t i = 0; i < ml->count; i++)
		by_path[i] = &ml->mods[i];
	qsort(by_path, ml->count, sizeof *by_path, cmp_path_then_address);
	for (size_t i = 0; i < ml->count; i = end) {
		struct layout_module *best = by_path[i];
		size_t others_with_code = 0;

		for (end = i; end < ml->count && strcmp(by_path[end]->path, best->path) == 0; end++)
			if (by_path[end]->segments > best->segments)
				best = by_path[end];
		for (size_t k = i; k < end; k++) {
			by_path[k]->duplicate = by_path[k] != best;
			others_with_code += by_path[k]->duplicate && by_path[k]->code;
		}
		for (size_t k = i; k < end; k++) {
			by_path[k]->copies = end - i;
			by_path[k]->copies_with_code = others_with_code;
		}
	}
	return 0;
}

int swi_module_layout_build(struct module_layout *ml, const sw_mapped_file *files, size_t nfiles,
                        size_t max_placed, module_bias_fn bias, void *arg)
{
	struct builder b = { ml, bias, arg };
	size_t placed = 0;

	memset(ml, 0, sizeof *ml);
	/* As many as the list the target already holds: no more than one per mapping. */
	if (nfiles > SIZE_MAX / sizeof *ml->mods ||
	    !(ml->mods = malloc((nfiles ? nfiles : 1) * sizeof *ml->mods)) ||
	    group(&b, files, nfiles) != 0 || pick_one_per_file(ml) != 0)
		goto fail;
	for (size_t i = 0; i < ml->count && placed < max_placed; i++) {
		if (ml->mods[i].duplicate)
			continue;
		placed++;
		if (place_module(&b, &ml->mods[i]) != 0)
			goto fail;
	}
	return 0;
fail:
	swi_module_layout_free(ml);
	return -1;
}

void swi_module_layout_free(struct module_layout *ml)
{
	for (size_t i = 0; i < ml->count; i++)
		free(ml->mods[i].no_bias);
	free(ml->mods);
	free(ml->by_path);
	memset(ml, 0, sizeof *ml);
}
