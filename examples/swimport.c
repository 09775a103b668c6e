/*
 * swimport - turn an ELF file's unwind information into an SWU image.
 *
 *   swimport [-C] [-q] [-v] [--progress | --no-progress] [-o OUT] ELF
 *
 * The CFI of the file (.eh_frame, .debug_frame) is imported into SWU, and
 * the code it does not describe (PLT entries, assembly without CFI, stack
 * realignment) by instruction analysis unless -C; the module's functions,
 * with their names, are written as one SWU image (swu-image(5)) that
 * sw_codemap_add_image(3) registers in one call.  OUT defaults to ELF.swui.
 * A summary goes to stderr unless -q; -v also names each function whose
 * CFI was skipped, with why, and whether analysis described it instead.
 * A large library takes seconds: a progress line is drawn on stderr when
 * it is a terminal (and not -q), or always with --progress.
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stackwalk.h>
#include "tool_options.h"
#include "progress.h"

static void print_usage(FILE *f)
{
	fprintf(f, "usage: swimport [-C] [-q] [-v] [--progress | --no-progress] [-o OUT] ELF\n"
	        "       swimport --help | --version\n");
}

static void usage(void)
{
	print_usage(stderr);
	exit(2);
}

static int write_file(const char *path, const void *buf, size_t len)
{
	FILE *f = fopen(path, "wb");
	int ok;

	if (!f) {
		perror(path);
		return -1;
	}
	ok = fwrite(buf, 1, len, f) == len;
	ok = (fclose(f) == 0) && ok;
	if (!ok) {
		perror(path);
		unlink(path);
		return -1;
	}
	return 0;
}

static void summary(const char *in, const char *out, sw_arch arch, const sw_module_import_stats *s,
                    size_t n, size_t len)
{
	fprintf(stderr, "%s: %s, %u FDEs: %u imported, %u ignored, %u skipped", in, sw_arch_name(arch),
	        s->fdes, s->functions, s->ignored, s->skipped);
	for (unsigned r = 0; r < SW_SKIP_COUNT; r++)
		if (s->skipped_by[r])
			fprintf(stderr, " (%u %s)", s->skipped_by[r], sw_module_skip_name(r));
	fprintf(stderr, "; analysis: %u functions in %u entries, %u failed; %u outermost\n",
	        s->analyzed, s->analyzed_entries, s->analysis_failed, s->outermost);
	fprintf(stderr, "%s: %zu entries, %zu bytes\n", out, n, len);
}

/* The analyzed function holding `addr`, if any (fns by ascending address). */
static const sw_native_function *analyzed_at(const sw_native_function *fns, size_t n, uint64_t addr)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (fns[mid].start <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo == 0 || addr - fns[lo - 1].start >= fns[lo - 1].size ||
	    !(fns[lo - 1].flags & SW_CODE_ANALYZED))
		return NULL;
	return &fns[lo - 1];
}

/* -v: each function whose CFI was skipped, by name, and why. */
static void list_skips(const char *in, const sw_module *m, const sw_native_function *fns, size_t n)
{
	const sw_module_skip *k;
	size_t nk;

	if (sw_module_skips(m, &k, &nk) != SW_OK)
		return;
	for (size_t i = 0; i < nk; i++)
		fprintf(stderr, "%s: skipped %s (0x%llx, %llu bytes) at +0x%llx: %s%s\n", in,
		        k[i].name ? k[i].name : "??", (unsigned long long)k[i].start,
		        (unsigned long long)k[i].size, (unsigned long long)(k[i].where - k[i].start),
		        sw_module_skip_name(k[i].reason),
		        analyzed_at(fns, n, k[i].where) ? "; described by analysis" : "");
}

/* The load's stages on the progress line (sw_module_load_progress). */
static void load_progress(void *data, unsigned stage, uint64_t done, uint64_t total)
{
	progress_update(data, stage == SW_MODULE_STAGE_CFI ? "CFI bytes read" : "code ranges analyzed",
	                done, total);
}

int main(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "progress", no_argument, NULL, 'P' },
		{ "no-progress", no_argument, NULL, 'N' },
		{ NULL, 0, NULL, 0 }
	};
	enum progress_mode pmode = PROGRESS_AUTO;
	struct progress prog;
	const char *out = NULL;
	unsigned flags = SW_MODULE_ANALYZE;
	int quiet = 0, verbose = 0, c, rc = 1;
	char *def = NULL;
	void *buf = NULL;
	size_t len = 0, n = 0;
	const sw_native_function *fns;
	sw_module_import_stats s;
	sw_module *m = NULL;
	sw_arch arch;
	sw_status st;

	tool_standard_options(argc, argv, "swimport", print_usage);
	while ((c = getopt_long(argc, argv, "Cqvo:h", longopts, NULL)) != -1) {
		switch (c) {
		case 'P': pmode = PROGRESS_ON; break;
		case 'N': pmode = PROGRESS_OFF; break;
		case 'C': flags = 0; break;
		case 'q': quiet = 1; break;
		case 'v': verbose = 1; break;
		case 'o': out = optarg; break;
		default: usage();
		}
	}
	if (optind != argc - 1)
		usage();
	if (!out) {
		size_t l = strlen(argv[optind]);

		if (!(def = malloc(l + 6)))
			return 1;
		memcpy(def, argv[optind], l);
		memcpy(def + l, ".swui", 6);
		out = def;
	}
	progress_init(&prog, "swimport", pmode, quiet);
	st = sw_module_load_progress(argv[optind], 0, flags, load_progress, &prog, &arch, &m);
	progress_end(&prog);
	if (st != SW_OK) {
		fprintf(stderr, "swimport: %s: %s\n", argv[optind], sw_strerror(st));
		goto done;
	}
	st = sw_module_write_image(m, NULL, 0, &len);
	if (st == SW_E_LIMIT && len > 0 && (buf = malloc(len)) != NULL)
		st = sw_module_write_image(m, buf, len, &len);
	if (st == SW_OK)
		st = sw_image_validate(buf, len);
	if (st != SW_OK) {
		fprintf(stderr, "swimport: %s: cannot write an image: %s\n", argv[optind], sw_strerror(st));
		goto done;
	}
	if (write_file(out, buf, len) != 0)
		goto done;
	if (!quiet && sw_module_stats(m, &s) == SW_OK && sw_module_functions(m, &fns, &n) == SW_OK) {
		summary(argv[optind], out, arch, &s, n, len);
		if (verbose)
			list_skips(argv[optind], m, fns, n);
	}
	rc = 0;
done:
	free(buf);
	free(def);
	sw_module_free(m);
	return rc;
}
