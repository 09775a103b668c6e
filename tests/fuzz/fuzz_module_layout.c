/*
 * fuzz_module_layout.c - the grouping of a target's mapped files into
 * modules (lib/target/module_layout.c, an internal part: swstack's loading
 * layer and the hang analysis's stack set) over a list of mappings made up
 * from the input: unsorted, overlapping, empty and wrapping ranges, empty
 * paths, pseudo-files, one path many times, huge offsets; and a bias
 * callback whose answers (a bias, the end of the segments, or no bias) the
 * input chooses per path.
 *
 * Aborts when the layout breaks a promise: every usable mapping belongs to
 * exactly one module, in order, and a module is its mappings (first
 * address and offset, highest end, code flag) and lies within them; a
 * mapping joins the module before it only as a later segment within its
 * file's segments, and a new module of the same file starts for a reason;
 * each file has exactly one module that is not a duplicate, the one with
 * the most segments (the lowest on a tie), so no two modules of a file
 * are loaded over each other; the bias callback runs at most once per
 * module, for the modules that are loaded (up to the limit) and those a
 * later mapping may join, and its answer is what the module says.
 *
 * A placed module's range stays within its file's segments at its bias:
 * its first mapping is cut at their end, and a mapping that starts inside
 * them and ends beyond them joins up to their end only.
 *
 * The first run also checks hand-made cases: node's second mapping of
 * itself beyond its segments is a module of its own, a mapping (the
 * first too) that overhangs its file's segments leaves the overhang to no
 * module, and a
 * file mapped 20,000 times costs one callback per module, not per mapping.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "fuzz.h"
#include "module_layout.h"

#define MAX_FILES 256
#define PAGE 0x1000u

static const char *const paths[] = {
	"/usr/bin/node", "/lib/libc.so.6", "", "[vdso]", "[heap]", "/x", "x", NULL,
};
#define NPATHS (sizeof paths / sizeof paths[0])

/* The fake program headers of each path: its answers to the bias callback. */
struct answer {
	int fail;                       /* no bias: "not an ELF file" */
	uint64_t delta;                 /* bias = start - offset + delta */
	int absolute;                   /* load_end = end, else start + span */
	uint64_t end, span;
};

struct oracle {
	struct answer answers[NPATHS];
	size_t calls;
};

static size_t path_index(const char *path)
{
	for (size_t i = 0; i < NPATHS; i++)
		if (paths[i] == path)
			return i;
	abort();                        /* the layout passed a path that is not the input's */
}

static const char *answer(const struct answer *a, uint64_t start, uint64_t offset, uint64_t *bias,
                          uint64_t *load_end)
{
	if (a->fail)
		return "not an ELF file";
	*bias = start - offset + a->delta;
	*load_end = a->absolute ? a->end : start + a->span;
	return NULL;
}

static const char *fake_bias(void *arg, const char *path, uint64_t start, uint64_t offset,
                             uint64_t *bias, uint64_t *load_end)
{
	struct oracle *o = arg;

	o->calls++;
	return answer(&o->answers[path_index(path)], start, offset, bias, load_end);
}

static int usable(const sw_mapped_file *f)
{
	return f->path && f->path[0] && f->path[0] != '[' && f->start < f->end;
}

static int is_code(const sw_mapped_file *f)
{
	return f->prot == 0 || (f->prot & SW_PROT_EXEC) != 0;
}

#define CHECK(cond) do { if (!(cond)) { \
	fprintf(stderr, "fuzz_module_layout: %s:%d: broken: %s\n", __FILE__, __LINE__, #cond); \
	abort(); } } while (0)

/* Every module is its consecutive usable mappings, each one joined or split for a reason. */
static void check_modules(const struct module_layout *ml, const sw_mapped_file *files, size_t n)
{
	size_t k = 0, i = 0, usable_count = 0;

	for (size_t j = 0; j < n; j++)
		usable_count += usable(&files[j]);
	CHECK(ml->count <= usable_count);
	while (i < n && !usable(&files[i]))
		i++;
	while (i < n) {
		const struct layout_module *m;
		uint64_t hi, end;
		int code;

		CHECK(k < ml->count);
		m = &ml->mods[k];
		CHECK(m->first == i && m->path == files[i].path);
		CHECK(m->lo == files[i].start && m->offset == files[i].offset);
		CHECK(m->segments >= 1 && m->segments <= usable_count);
		CHECK(m->copies >= 1 && m->copies <= ml->count && m->copies_with_code < m->copies);
		hi = files[i].end;
		/* Placed, its first mapping ends where its segments do, at the most. */
		if (m->placed && !m->no_bias && m->load_end > m->lo && hi > m->load_end)
			hi = m->load_end;
		code = is_code(&files[i]);
		for (unsigned s = 1; s < m->segments; s++) {
			const sw_mapped_file *f;

			for (i++; i < n && !usable(&files[i]); i++)
				;
			CHECK(i < n);
			f = &files[i];
			/* Joined: a later segment of the same file, within its segments. */
			CHECK(strcmp(f->path, m->path) == 0 && f->offset != 0);
			CHECK(m->placed && (m->no_bias || f->start < m->load_end));
			/* It lies within the module: at or above its start. */
			CHECK(f->start >= m->lo && f->end > f->start);
			/* Up to where the file's segments end: what lies beyond is in no module. */
			end = !m->no_bias && f->end > m->load_end ? m->load_end : f->end;
			hi = end > hi ? end : hi;
			code |= is_code(f);
		}
		/*
		 * Its range stays within its file's segments at its bias: its
		 * first mapping is cut at their end, and a mapping that joins it
		 * (starting inside them) adds no more than up to where they end,
		 * however far beyond either ends itself.
		 */
		if (m->placed && !m->no_bias && m->load_end > m->lo)
			CHECK(m->hi <= m->load_end);
		CHECK(m->hi == hi && m->code == code);
		/* A module lies within its mappings, and is not empty. */
		CHECK(m->lo < m->hi);
		for (i++; i < n && !usable(&files[i]); i++)
			;
		/* The next mapping of the same file starts a module of its own for a reason. */
		if (i < n && strcmp(files[i].path, m->path) == 0 && files[i].offset != 0 &&
		    files[i].start >= m->lo && files[i].end > files[i].start)
			CHECK(m->placed && !m->no_bias && files[i].start >= m->load_end);
		k++;
	}
	CHECK(k == ml->count);
}

/* One module per file is loaded, the one with the most segments (the lowest on a tie). */
static void check_duplicates(const struct module_layout *ml)
{
	for (size_t i = 0; i < ml->count; i++) {
		const struct layout_module *x = ml->by_path[i];

		CHECK(x >= ml->mods && x < ml->mods + ml->count);
		if (i > 0) {
			const struct layout_module *w = ml->by_path[i - 1];
			int c = strcmp(w->path, x->path);

			CHECK(c < 0 || (c == 0 && w->lo <= x->lo && w != x));
		}
	}
	for (size_t i = 0, end; i < ml->count; i = end) {
		const struct layout_module *best = NULL;
		size_t with_code = 0;

		for (end = i; end < ml->count && strcmp(ml->by_path[end]->path, ml->by_path[i]->path) == 0; end++) {
			const struct layout_module *x = ml->by_path[end];

			if (!x->duplicate) {
				CHECK(!best);
				best = x;
			}
			with_code += x->duplicate && x->code;
		}
		CHECK(best);
		for (size_t k = i; k < end; k++) {
			const struct layout_module *x = ml->by_path[k];

			CHECK(x->segments < best->segments || (x->segments == best->segments && x->lo >= best->lo));
			CHECK(x->copies == end - i && x->copies_with_code == with_code);
		}
	}
}

/* The callback ran once per placed module, and each says what it answered. */
static void check_placed(const struct module_layout *ml, const sw_mapped_file *files, size_t n,
                         const struct oracle *o, size_t max_placed)
{
	size_t placed = 0, loadable = 0;

	for (size_t k = 0; k < ml->count; k++) {
		const struct layout_module *m = &ml->mods[k];
		uint64_t bias = 0, load_end = 0;
		const char *why;

		if (!m->duplicate && loadable++ < max_placed)
			CHECK(m->placed);
		if (!m->placed) {
			CHECK(m->bias == 0 && m->load_end == 0 && !m->no_bias);
			continue;
		}
		placed++;
		why = answer(&o->answers[path_index(m->path)], m->lo, m->offset, &bias, &load_end);
		CHECK(why ? m->no_bias && strcmp(m->no_bias, why) == 0 : !m->no_bias);
		CHECK(why || (m->bias == bias && m->load_end == load_end));
		/* A duplicate is placed only to ask whether the mapping after it joins it. */
		if (m->duplicate || loadable > max_placed) {
			size_t i = m->first;

			for (unsigned s = 0; s < m->segments; s++)
				for (i++; i < n && !usable(&files[i]); i++)
					;
			CHECK(m->segments > 1 ||
			      (i < n && strcmp(files[i].path, m->path) == 0 && files[i].offset != 0));
		}
	}
	CHECK(o->calls == placed);
}

static void check_layout(const sw_mapped_file *files, size_t n, struct oracle *o, size_t max_placed)
{
	struct module_layout ml;

	o->calls = 0;
	if (swi_module_layout_build(&ml, files, n, max_placed, fake_bias, o) != 0)
		abort();                /* out of memory, with inputs this small */
	check_modules(&ml, files, n);
	check_duplicates(&ml);
	check_placed(&ml, files, n, o, max_placed);
	swi_module_layout_free(&ml);
}

/* ---- hand-made cases ------------------------------------------------------------ */

#define MAP(start_, end_, offset_, prot_, path_) \
	((sw_mapped_file){ .start = (start_), .end = (end_), .offset = (offset_), .path = (path_), .prot = (prot_) })

static struct module_layout build(const sw_mapped_file *files, size_t n, struct oracle *o)
{
	struct module_layout ml;

	o->calls = 0;
	if (swi_module_layout_build(&ml, files, n, 4096, fake_bias, o) != 0)
		abort();
	check_modules(&ml, files, n);
	check_duplicates(&ml);
	check_placed(&ml, files, n, o, 4096);
	return ml;
}

/* node: V8 maps its embedded builtins again, far beyond node's segments, next to the JIT's code. */
static void case_node(void)
{
	const char *node = paths[0];
	const sw_mapped_file files[] = {
		MAP(0x400000, 0x800000, 0, SW_PROT_READ, node),
		MAP(0x800000, 0x2000000, 0x400000, SW_PROT_READ | SW_PROT_EXEC, node),
		MAP(0x2000000, 0x2800000, 0x1c00000, SW_PROT_READ, node),
		MAP(0x2800000, 0x2900000, 0x2400000, SW_PROT_READ | SW_PROT_WRITE, node),
		MAP(0x2900000, 0x3000000, 0, SW_PROT_READ | SW_PROT_WRITE, paths[4]),   /* [heap] */
		MAP(0x10000000, 0x20000000, 0, SW_PROT_READ | SW_PROT_EXEC, paths[2]),  /* the JIT's code */
		MAP(0x20000000, 0x20400000, 0x400000, SW_PROT_READ | SW_PROT_EXEC, node),
		MAP(0x7f0000000000, 0x7f0000200000, 0, SW_PROT_READ, paths[1]),
		MAP(0x7f0000200000, 0x7f0000300000, 0x200000, SW_PROT_READ | SW_PROT_EXEC, paths[1]),
	};
	struct oracle o = { .answers = { [0] = { .absolute = 1, .end = 0x2a00000 },
	                                 [1] = { .span = 0x400000 } } };
	struct module_layout ml = build(files, sizeof files / sizeof files[0], &o);

	CHECK(ml.count == 3);
	CHECK(ml.mods[0].lo == 0x400000 && ml.mods[0].hi == 0x2900000 && ml.mods[0].segments == 4);
	CHECK(!ml.mods[0].duplicate && ml.mods[0].placed && ml.mods[0].code);
	CHECK(ml.mods[1].lo == 0x20000000 && ml.mods[1].hi == 0x20400000 && ml.mods[1].segments == 1);
	CHECK(ml.mods[1].duplicate && !ml.mods[1].placed && ml.mods[1].path == node);
	CHECK(ml.mods[0].copies == 2 && ml.mods[0].copies_with_code == 1);
	CHECK(ml.mods[2].segments == 2 && !ml.mods[2].duplicate);
	CHECK(o.calls == 2);
	swi_module_layout_free(&ml);
}

/*
 * A later mapping of libc that starts inside its segments and ends far
 * beyond them (issue 31): the module ends where the segments do, and the
 * rest is in no module, not a copy of libc.
 */
static void case_overhang(void)
{
	const char *libc = paths[1];
	const sw_mapped_file files[] = {
		MAP(0x7f0000000000, 0x7f0000200000, 0, SW_PROT_READ, libc),
		MAP(0x7f0000200000, 0x7f0040000000, 0x200000, SW_PROT_READ | SW_PROT_EXEC, libc),
		MAP(0x7f0040000000, 0x7f0040001000, 0, SW_PROT_READ | SW_PROT_WRITE, paths[5]),
	};
	struct oracle o = { .answers = { [1] = { .span = 0x400000 }, [5] = { .span = PAGE } } };
	struct module_layout ml = build(files, sizeof files / sizeof files[0], &o);

	CHECK(ml.count == 2);
	CHECK(ml.mods[0].lo == 0x7f0000000000 && ml.mods[0].hi == 0x7f0000400000);
	CHECK(ml.mods[0].segments == 2 && ml.mods[0].code && !ml.mods[0].duplicate);
	CHECK(ml.mods[1].lo == 0x7f0040000000 && ml.mods[1].path == paths[5]);
	swi_module_layout_free(&ml);
	/* A file without a bias has no known end: the mapping joins whole, as before. */
	o.answers[1].fail = 1;
	ml = build(files, sizeof files / sizeof files[0], &o);
	CHECK(ml.count == 2 && ml.mods[0].hi == 0x7f0040000000 && ml.mods[0].no_bias);
	swi_module_layout_free(&ml);
	/* Its first mapping alone overhangs: cut where the segments end, too. */
	o.answers[1].fail = 0;
	ml = build(files + 1, 2, &o);
	CHECK(ml.count == 2 && ml.mods[0].lo == 0x7f0000200000 && ml.mods[0].hi == 0x7f0000600000);
	CHECK(ml.mods[0].segments == 1 && ml.mods[0].placed && !ml.mods[0].duplicate);
	swi_module_layout_free(&ml);
}

#define MANY 20000

/* One file mapped MANY times: one callback per module, never one per mapping. */
static void case_many(void)
{
	sw_mapped_file *files = calloc(MANY, sizeof *files);
	struct oracle o = { .answers = { [5] = { .absolute = 1, .end = 0x100000000 } } };
	struct module_layout ml;

	if (!files)
		abort();
	/* MANY segments of one module: one callback. */
	for (size_t i = 0; i < MANY; i++)
		files[i] = MAP(0x10000000 + i * PAGE, 0x10000000 + (i + 1) * PAGE, i * PAGE, SW_PROT_READ,
		               paths[5]);
	ml = build(files, MANY, &o);
	CHECK(ml.count == 1 && ml.mods[0].segments == MANY && o.calls == 1);
	swi_module_layout_free(&ml);
	/* MANY copies of its first page: MANY modules, one loaded, one callback. */
	for (size_t i = 0; i < MANY; i++)
		files[i].offset = 0;
	ml = build(files, MANY, &o);
	CHECK(ml.count == MANY && o.calls == 1 && ml.mods[0].copies == MANY);
	swi_module_layout_free(&ml);
	/* MANY / 2 copies of two segments: one callback per copy, asked once. */
	o.answers[5] = (struct answer){ .span = 2 * PAGE };
	for (size_t i = 0; i < MANY; i++)
		files[i].offset = (i % 2) * PAGE;
	ml = build(files, MANY, &o);
	CHECK(ml.count == MANY / 2 && o.calls == MANY / 2);
	swi_module_layout_free(&ml);
	free(files);
}

/* ---- the fuzzer's input --------------------------------------------------------- */

static uint64_t fz_range_end(struct fz *f, uint8_t op, uint64_t start)
{
	if (op & 0x10)
		return fz_u64(f);
	return start + (uint64_t)PAGE * (fz_u8(f) % 16);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int cases_done;
	static sw_mapped_file files[MAX_FILES];
	struct oracle o;
	struct fz f;
	size_t n = 0, max_placed;
	uint64_t prev_end = 0x400000;

	if (!cases_done) {
		case_node();
		case_overhang();
		case_many();
		cases_done = 1;
	}
	fz_init(&f, data, size);
	memset(&o, 0, sizeof o);
	max_placed = fz_u8(&f) % 8;
	max_placed = max_placed ? max_placed : SIZE_MAX;
	for (size_t i = 0; i < NPATHS; i++) {
		uint8_t kind = fz_u8(&f);
		struct answer *a = &o.answers[i];

		a->fail = kind % 5 == 0;
		a->delta = kind & 0x10 ? fz_u64(&f) : (uint64_t)PAGE * (fz_u8(&f) % 4);
		a->absolute = (kind & 0x20) != 0;
		if (a->absolute)
			a->end = kind & 0x40 ? fz_u64(&f) : 0x400000 + (uint64_t)PAGE * fz_u16(&f);
		else
			a->span = kind & 0x40 ? fz_u64(&f) : (uint64_t)PAGE * fz_u8(&f);
	}
	while (f.n && n < MAX_FILES) {
		uint8_t op = fz_u8(&f);
		sw_mapped_file *m = &files[n++];

		m->path = paths[op % NPATHS];
		m->start = op & 0x08 ? fz_u64(&f) : prev_end + (uint64_t)PAGE * (fz_u8(&f) % 4);
		m->end = fz_range_end(&f, op, m->start);
		if (op & 0x20)
			m->offset = fz_u64(&f);
		else
			m->offset = op & 0x40 ? 0 : (uint64_t)PAGE * fz_u8(&f);
		m->prot = op & 0x80 ? 0 : fz_u8(&f) & 7;
		prev_end = m->end;
	}
	check_layout(files, n, &o, max_placed);
	return 0;
}
