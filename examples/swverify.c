/*
 * swverify - check SWU unwind metadata against the machine code it describes.
 *
 *   swverify [-q] [-v] [--progress | --no-progress] IMAGE ELF
 *                                       an SWU image and the ELF file it was imported from
 *   swverify [-q] [-v] [--progress | --no-progress] -c CODE IMAGE
 *                                       an SWU image and a dump of the code it describes
 *                                       (CODE's first byte at the image's base)
 *   swverify [-q] [-v] -t               the toy JIT (x86-64 builds): each method
 *                                       verified right after it is emitted
 *
 * Every function is checked with sw_unwind_verify(3): the first mismatch
 * of each is printed with its offset, the SWU op expected and the
 * instruction found.  Functions that cannot be verified are counted by
 * reason; entries made by instruction analysis (SW_CODE_ANALYZED) are
 * skipped, since they were derived from the very code they would be
 * checked against.  The exit status is 1 if any function mismatched, 2 if
 * something could not be done.  A large library takes most of a minute:
 * a progress line is drawn on stderr when it is a terminal (and not -q),
 * or always with --progress.
 */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elf.h>
#include <stackwalk.h>
#include "tool_options.h"
#include "read_bounded.h"
#include "progress.h"
#include "escape.h"
#ifdef SWVERIFY_TOYJIT
#include "toyjit.h"
#endif

/* Skipped before verification: the reasons after the SW_VERIFY_* ones. */
enum {
	SKIP_ANALYZED = SW_VERIFY_REASON_COUNT,     /* made by instruction analysis */
	SKIP_TRAMPOLINE,                            /* a signal trampoline: unwound from the kernel's frame */
	SKIP_NO_CODE,                               /* its bytes are not in the file */
	SKIP_COUNT
};

struct tally {
	unsigned functions, verified, mismatched, errors;
	unsigned skipped[SKIP_COUNT];
	uint64_t ops, instructions, insns_skipped;
	unsigned clauses;               /* EH clauses checked (the toy JIT) */
	int verbose, quiet;
	struct progress progress;       /* of an image's functions */
	int stdout_tty;                 /* the progress line is blanked before each line printed */
};

/*
 * A line about one function: "WORD NAME", the name escaped (it is the
 * file's data), after blanking the progress line should it share the
 * terminal with stdout.
 */
static void begin_line(struct tally *t, const char *word, const char *name)
{
	if (t->stdout_tty)
		progress_clear(&t->progress);
	printf("%s ", word);
	print_escaped(stdout, name ? name : "?");
}

static const char *skip_name(unsigned r)
{
	switch (r) {
	case SKIP_ANALYZED:   return "made by instruction analysis";
	case SKIP_TRAMPOLINE: return "signal trampoline";
	case SKIP_NO_CODE:    return "code not in the file";
	default:              return sw_verify_reason_name(r);
	}
}

static void print_usage(FILE *f)
{
	fprintf(f, "usage: swverify [-q] [-v] [--progress | --no-progress] IMAGE ELF\n"
	           "       swverify [-q] [-v] [--progress | --no-progress] -c CODE IMAGE\n"
	           "       swverify [-q] [-v] -t\n"
	           "       swverify --help | --version\n");
}

static void usage(void)
{
	print_usage(stderr);
	exit(2);
}

/* Verify one function and count the outcome. */
static void verify_one(struct tally *t, const char *name, sw_arch arch, const uint8_t *code,
                       uint64_t size, uint64_t address, const void *blob, size_t blob_size)
{
	sw_verify_result r;
	sw_status st;

	t->functions++;
	st = sw_unwind_verify(arch, code, size, address, blob, blob_size, &r);
	t->ops += r.ops;
	t->instructions += r.instructions;
	t->insns_skipped += r.skipped;
	if (st == SW_OK) {
		t->verified++;
		if (t->verbose) {
			begin_line(t, "ok", name);
			printf(": %u ops, %u instructions checked, %u skipped\n", r.ops, r.instructions,
			       r.skipped);
		}
	} else if (st == SW_E_MISMATCH) {
		t->mismatched++;
		begin_line(t, "MISMATCH", name);
		printf(" (%#" PRIx64 ") +%#" PRIx32 " (%s): SWU \"%s\", code \"%s\" at +%#" PRIx32
		       ": %s\n", address, r.offset, r.rows ? "rows" : r.region == SW_SWU_PROLOG ? "prolog" :
		       r.region == SW_SWU_EPILOG ? "epilog" : "body",
		       r.expected, r.found, r.insn_offset, r.why);
	} else if (st == SW_E_UNSUPPORTED && r.reason < SW_VERIFY_REASON_COUNT) {
		t->skipped[r.reason]++;
		if (t->verbose) {
			begin_line(t, "skipped", name);
			printf(": %s\n", sw_verify_reason_name(r.reason));
		}
	} else {
		t->errors++;
		begin_line(t, "ERROR", name);
		printf(": %s\n", sw_strerror(st));
	}
}

static void skip(struct tally *t, const char *name, unsigned reason)
{
	t->functions++;
	t->skipped[reason]++;
	if (t->verbose) {
		begin_line(t, "skipped", name);
		printf(": %s\n", skip_name(reason));
	}
}

static int summary(const struct tally *t, const char *what)
{
	unsigned skipped = 0;

	for (unsigned r = 1; r < SKIP_COUNT; r++)
		skipped += t->skipped[r];
	if (!t->quiet) {
		print_escaped(stdout, what);
		printf(": %u functions: %u verified, %u mismatched, %u skipped", t->functions,
		       t->verified, t->mismatched, skipped);
		for (unsigned r = 1; r < SKIP_COUNT; r++)
			if (t->skipped[r])
				printf(" (%u %s)", t->skipped[r], skip_name(r));
		if (t->errors)
			printf(", %u errors", t->errors);
		printf("; %" PRIu64 " ops and %" PRIu64 " instructions checked, %" PRIu64
		       " instructions skipped\n", t->ops, t->instructions, t->insns_skipped);
	}
	/* As diff and grep: 1 when a problem was found, 2 when something could not be done. */
	return t->errors ? 2 : t->mismatched ? 1 : 0;
}

/* An input file, whole (read_bounded.h); NULL with a message on failure. */
static void *read_file(const char *path, size_t *len)
{
	const char *why;
	unsigned char *buf = read_bounded(path, len, &why);

	if (!buf)
		fprintf(stderr, "%s: %s\n", path, why);
	return buf;
}

/* ---- Where the code bytes come from ---- */

/* An ELF file's PT_LOAD segments (file bytes only), or a plain dump at `base`. */
struct code_source {
	const uint8_t *file;
	size_t size;
	unsigned nseg;
	struct { uint64_t vaddr, filesz, offset; } seg[64];
};

static int read_phdrs(struct code_source *cs, const char *path)
{
	const uint8_t *f = cs->file;
	int is64;
	uint64_t phoff;
	unsigned phnum, phentsize;

	if (cs->size < EI_NIDENT || memcmp(f, ELFMAG, SELFMAG) != 0 || f[EI_DATA] != ELFDATA2LSB) {
		fprintf(stderr, "%s: not a little-endian ELF file\n", path);
		return -1;
	}
	is64 = f[EI_CLASS] == ELFCLASS64;
	if (cs->size < (is64 ? sizeof(Elf64_Ehdr) : sizeof(Elf32_Ehdr)))
		return -1;
	if (is64) {
		Elf64_Ehdr eh;

		memcpy(&eh, f, sizeof eh);
		phoff = eh.e_phoff;
		phnum = eh.e_phnum;
		phentsize = eh.e_phentsize;
	} else {
		Elf32_Ehdr eh;

		memcpy(&eh, f, sizeof eh);
		phoff = eh.e_phoff;
		phnum = eh.e_phnum;
		phentsize = eh.e_phentsize;
	}
	if (phentsize < (is64 ? sizeof(Elf64_Phdr) : sizeof(Elf32_Phdr)))
		return -1;
	for (unsigned i = 0; i < phnum && cs->nseg < 64; i++) {
		uint64_t at = phoff + (uint64_t)i * phentsize, type, vaddr, filesz, offset;

		if (at > cs->size || cs->size - at < phentsize)
			break;
		if (is64) {
			Elf64_Phdr ph;

			memcpy(&ph, f + at, sizeof ph);
			type = ph.p_type, vaddr = ph.p_vaddr, filesz = ph.p_filesz, offset = ph.p_offset;
		} else {
			Elf32_Phdr ph;

			memcpy(&ph, f + at, sizeof ph);
			type = ph.p_type, vaddr = ph.p_vaddr, filesz = ph.p_filesz, offset = ph.p_offset;
		}
		if (type != PT_LOAD || offset > cs->size || cs->size - offset < filesz)
			continue;
		cs->seg[cs->nseg].vaddr = vaddr;
		cs->seg[cs->nseg].filesz = filesz;
		cs->seg[cs->nseg].offset = offset;
		cs->nseg++;
	}
	return 0;
}

/* The file bytes of [addr, addr + size), or NULL. */
static const uint8_t *code_at(const struct code_source *cs, uint64_t addr, uint64_t size)
{
	for (unsigned i = 0; i < cs->nseg; i++) {
		uint64_t v = cs->seg[i].vaddr, n = cs->seg[i].filesz;

		if (addr >= v && addr - v <= n && n - (addr - v) >= size)
			return cs->file + cs->seg[i].offset + (addr - v);
	}
	return NULL;
}

/* ---- An SWU image against its code ---- */

/* The image's base (swu-image(5): the u64 at offset 16). */
static uint64_t image_base(const uint8_t *img, size_t len)
{
	uint64_t base = 0;

	if (len >= 24)
		for (int i = 7; i >= 0; i--)
			base = base << 8 | img[16 + i];
	return base;
}

static int verify_image(struct tally *t, const char *image_path, const char *code_path, int raw)
{
	size_t ilen = 0;
	uint8_t *img = read_file(image_path, &ilen);
	struct code_source cs;
	const sw_image_method *ms;
	sw_codemap *map = NULL;
	sw_image *image = NULL;
	size_t n = 0;
	sw_status st;
	int rc = 2;

	memset(&cs, 0, sizeof cs);
	if (!img)
		return 2;
	cs.file = read_file(code_path, &cs.size);
	if (!cs.file)
		goto out;
	if (raw) {
		cs.nseg = 1;
		cs.seg[0].vaddr = image_base(img, ilen);
		cs.seg[0].filesz = cs.size;
	} else if (read_phdrs(&cs, code_path) != 0) {
		goto out;
	}
	if ((st = sw_codemap_create(&map)) != SW_OK ||
	    (st = sw_codemap_add_image(map, img, ilen, 0, 0, &image)) != SW_OK ||
	    (st = sw_image_methods(image, &ms, &n)) != SW_OK) {
		fprintf(stderr, "%s: %s\n", image_path, sw_strerror(st));
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *code = code_at(&cs, ms[i].start, ms[i].size);
		sw_code_info info;

		progress_update(&t->progress, "functions checked", i, n);
		if (ms[i].flags & SW_CODE_ANALYZED) {
			skip(t, ms[i].name, SKIP_ANALYZED);
		} else if (ms[i].flags & SW_CODE_SIGNAL_TRAMPOLINE) {
			skip(t, ms[i].name, SKIP_TRAMPOLINE);
		} else if (!code) {
			skip(t, ms[i].name, SKIP_NO_CODE);
		} else if ((st = sw_codemap_find(map, ms[i].start, &info)) != SW_OK) {
			t->functions++;
			t->errors++;
			begin_line(t, "ERROR", ms[i].name);
			printf(": %s\n", sw_strerror(st));
		} else {
			verify_one(t, ms[i].name, sw_image_arch(image), code, ms[i].size, ms[i].start,
			           info.unwind, info.unwind_size);
		}
	}
	progress_end(&t->progress);
	rc = summary(t, image_path);
out:
	if (image)
		sw_image_free(image);
	if (map)
		sw_codemap_destroy(map);
	free((void *)cs.file);
	free(img);
	return rc;
}

/* ---- The toy JIT, in process ---- */

#ifdef SWVERIFY_TOYJIT
static __thread sw_frame *frame_head;

struct clause_check {
	struct tally *t;
	const toyjit_method *m;
};

/* A clause's boundary must be where an instruction of the JIT's code starts. */
static int clause_edge_ok(const toyjit_method *m, const char *what, uint32_t index, uint32_t off,
                          int may_end)
{
	if (toyjit_insn_start(m->jit, m->start + off) || (may_end && off == m->size))
		return 1;
	printf("ERROR %s: EH clause %" PRIu32 ": its %s (offset %" PRIu32 ") is not an instruction's start\n",
	       m->name, index, what, off);
	return 0;
}

struct find_clause {
	uint32_t index;
	int found;
};

static int find_clause(void *data, uint32_t index, const sw_eh_clause *c)
{
	struct find_clause *f = data;

	(void)c;
	f->found |= index == f->index;
	return f->found;   /* no need to go on */
}

/*
 * The queries a dispatcher asks must find the clause where the table puts
 * it: sw_swu_eh_covering at its try's first byte, sw_swu_eh_handler_at at
 * its handler's (a duplicated clause's handler is an earlier clause's).
 */
static int clause_queries_ok(const toyjit_method *m, uint32_t index, const sw_eh_clause *c)
{
	struct find_clause f = { index, 0 };
	sw_eh_handler h;

	if (sw_swu_eh_covering(m->swu, m->swu_size, c->try_start, find_clause, &f) != SW_OK || !f.found) {
		printf("ERROR %s: EH clause %" PRIu32 ": sw_swu_eh_covering does not list it at its try\n",
		       m->name, index);
		return 0;
	}
	if (!(c->flags & SW_EH_DUPLICATED) &&
	    (sw_swu_eh_handler_at(m->swu, m->swu_size, c->handler_start, &h) != SW_OK || h.index != index ||
	     h.in_filter)) {
		printf("ERROR %s: EH clause %" PRIu32 ": sw_swu_eh_handler_at does not find it at its handler\n",
		       m->name, index);
		return 0;
	}
	return 1;
}

static int check_clause(void *data, uint32_t index, const sw_eh_clause *c)
{
	struct clause_check *cc = data;
	const toyjit_method *m = cc->m;
	int ok = clause_edge_ok(m, "try start", index, c->try_start, 0) &
	         clause_edge_ok(m, "try end", index, c->try_end, 1) &
	         clause_edge_ok(m, "handler", index, c->handler_start, 0);

	if (c->kind == SW_EH_FILTER)
		ok &= clause_edge_ok(m, "filter", index, c->filter_start, 0);
	ok &= clause_queries_ok(m, index, c);
	cc->t->clauses++;
	if (!ok)
		cc->t->errors++;
	return 0;
}

/*
 * The clauses against the code: every region starts (and a try ends) at
 * an instruction; sw_swu_validate, which sw_unwind_verify ran, has
 * checked their nesting and that funclets lie past the main body.
 */
static void check_clauses(struct tally *t, const toyjit_method *m)
{
	struct clause_check cc = { t, m };
	sw_status st = sw_swu_eh_clauses(m->swu, m->swu_size, check_clause, &cc);

	if (st != SW_OK) {
		t->errors++;
		printf("ERROR %s: its EH clauses: %s\n", m->name, sw_strerror(st));
	}
}

static void verify_emitted(const toyjit_method *m, const uint8_t *code, void *data)
{
	sw_swu_header h;

	if (sw_swu_decode_header(m->swu, m->swu_size, &h) != SW_OK) {
		struct tally *t = data;

		t->functions++;
		t->errors++;
		printf("ERROR %s: its blob has no header\n", m->name);
		return;
	}
	verify_one(data, m->name, (sw_arch)h.arch, code, m->size, m->start, m->swu, m->swu_size);
	check_clauses(data, m);
}

static void no_helper(toyjit *jit, sw_transition_frame *tf)
{
	(void)jit;
	(void)tf;
}

static int verify_toyjit(struct tally *t)
{
	toyjit_shape shapes[TOYJIT_NSHAPES];
	sw_codemap *map = NULL;
	toyjit *jit = NULL;
	sw_status st;

	for (unsigned k = 0; k < TOYJIT_NSHAPES; k++)
		shapes[k] = k;
	toyjit_set_emit_hook(verify_emitted, t);
	st = sw_codemap_create(&map);
	if (st == SW_OK)
		st = toyjit_create(&jit, map, &frame_head, shapes, TOYJIT_NSHAPES, no_helper, NULL);
	toyjit_set_emit_hook(NULL, NULL);
	if (st != SW_OK) {
		fprintf(stderr, "swverify: the toy JIT: %s\n", sw_strerror(st));
		sw_codemap_destroy(map);
		return 2;
	}
	/* The funclets the thrower's clauses name, registered as the clauses say. */
	if (jit->thrower.size) {
		uint32_t bad = 0;

		st = sw_codemap_check_eh(map, jit->thrower.start, &bad);
		if (st != SW_OK) {
			t->errors++;
			printf("ERROR %s: EH clause %" PRIu32 ": its funclets: %s\n", jit->thrower.name,
			       bad, sw_strerror(st));
		}
	}
	if (!t->quiet)
		printf("%u EH clauses checked against the code and the code map\n", t->clauses);
	toyjit_destroy(jit);
	sw_codemap_destroy(map);
	return summary(t, "toy JIT");
}
#endif

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "progress", no_argument, NULL, 'P' },
		{ "no-progress", no_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 }
	};
	enum progress_mode pmode = PROGRESS_AUTO;
	struct tally t;
	const char *code = NULL;
	int toy = 0, c;

	memset(&t, 0, sizeof t);
	tool_standard_options(argc, argv, "swverify", print_usage);
	while ((c = getopt_long(argc, argv, "c:qtvh", longopts, NULL)) != -1) {
		switch (c) {
		case 'P': pmode = PROGRESS_ON; break;
		case 'N': pmode = PROGRESS_OFF; break;
		case 'c': code = optarg; break;
		case 'q': t.quiet = 1; break;
		case 't': toy = 1; break;
		case 'v': t.verbose = 1; break;
		default: usage();
		}
	}
	progress_init(&t.progress, "swverify", pmode, t.quiet);
	t.stdout_tty = isatty(STDOUT_FILENO);
	if (toy) {
		if (optind != argc || code)
			usage();
#ifdef SWVERIFY_TOYJIT
		return verify_toyjit(&t);
#else
		fprintf(stderr, "swverify: built without the toy JIT (x86-64 builds have it)\n");
		return 2;
#endif
	}
	if (code && optind == argc - 1)
		return verify_image(&t, argv[optind], code, 1);
	if (!code && optind == argc - 2)
		return verify_image(&t, argv[optind], argv[optind + 1], 0);
	usage();
	return 2;
}
