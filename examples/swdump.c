/*
 * swdump - print SWU unwind metadata in readable form.
 *
 *   swdump [-r] [FILE...]
 *
 * Reads each blob (standard input when no FILE or FILE is "-"), prints its
 * header and ops with sw_swu_dump(), and with -r the rule that
 * sw_swu_decode() gives at every code offset, followed, where it differs,
 * by the rule for a return address (sw_swu_decode_return_address(): a
 * callee-pops call still in progress), and, in a blob with GC
 * information, the locations sw_swu_gc_live() reports live there.  Uses
 * only the public API.  See swdump(1).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "tool_options.h"

/* No blob is this large; stop reading garbage early. */
#define MAX_BLOB (64u << 20)

static const char *progname = "swdump";

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [-r] [FILE...]\n"
	        "Print SWU unwind metadata (standard input when no FILE or FILE is -).\n"
	        "  -r, --rules   also print the decoded rule (and live GC locations) at every code offset\n"
	        "  -h, --help    print this help\n", progname);
}

/* Read all of `f` into a malloc'd buffer; NULL (errno set) on failure. */
static unsigned char *read_all(FILE *f, size_t *len)
{
	size_t cap = 4096, n = 0;
	unsigned char *buf = malloc(cap);

	while (buf) {
		size_t got = fread(buf + n, 1, cap - n, f);
		unsigned char *p;

		n += got;
		if (n < cap) {
			if (ferror(f)) {
				free(buf);
				return NULL;
			}
			*len = n;
			return buf;
		}
		if (cap >= MAX_BLOB) {
			free(buf);
			errno = EFBIG;
			return NULL;
		}
		p = realloc(buf, cap * 2);
		if (!p)
			free(buf);
		buf = p;
		cap *= 2;
	}
	return NULL;
}

static const char *reg(sw_arch arch, unsigned r, char *buf, size_t len)
{
	const char *name = sw_arch_reg_name(arch, r);

	if (name)
		return name;
	snprintf(buf, len, "r%u", r);
	return buf;
}

static void print_rule(sw_arch arch, const char *where, const sw_swu_rule *r)
{
	static const char *const regions[] = { "prolog", "body", "epilog" };
	char b[16];

	printf("  %8s  %-6s  cfa = %s + %" PRId32, where,
	       r->region < 3 ? regions[r->region] : "?",
	       reg(arch, r->cfa_reg, b, sizeof b), r->cfa_offset);
	if (r->ra_in_reg)
		printf(", ra = %s", reg(arch, r->ra_reg, b, sizeof b));
	else
		printf(", ra = [cfa %c %d]", r->ra_offset < 0 ? '-' : '+', abs(r->ra_offset));
	if (r->ra_signed)
		printf(" (signed)");
	printf(", sp = cfa - %" PRId32, r->sp_offset);
	for (unsigned i = 0; i < SW_MAX_REGS && i < 64; i++) {
		int32_t off = r->saved_offset[i];

		if (r->saved_mask & (1ULL << i))
			printf(", %s = [cfa %c %ld]", reg(arch, i, b, sizeof b),
			       off < 0 ? '-' : '+', labs((long)off));
	}
	putchar('\n');
}

/* Collects the live GC locations at one offset as text. */
struct gc_line {
	sw_arch arch;
	char text[1024];
	size_t len;
	unsigned n;
};

static int add_gc(void *data, const sw_swu_gc_slot *slot)
{
	struct gc_line *g = data;
	char b[16], where[64];
	int n;

	if (slot->in_register)
		snprintf(where, sizeof where, "%s", reg(g->arch, slot->reg, b, sizeof b));
	else
		snprintf(where, sizeof where, "[%scfa %c %ld]",
		         slot->flags & SW_GC_PARENT_FRAME ? "parent " : "",
		         slot->cfa_offset < 0 ? '-' : '+', labs((long)slot->cfa_offset));
	n = snprintf(g->text + g->len, sizeof g->text - g->len, "%s%s%s%s", g->n ? ", " : "",
	             where, slot->flags & SW_GC_INTERIOR ? " interior" : "",
	             slot->flags & SW_GC_PINNED ? " pinned" : "");
	g->n++;
	if (n < 0 || (size_t)n >= sizeof g->text - g->len) {
		/* Too many to print on one line. */
		snprintf(g->text + g->len, sizeof g->text - g->len, ", ...");
		return 1;
	}
	g->len += (size_t)n;
	return 0;
}

/* Print the GC locations live at `off`; 0, or 1 on a decoding error. */
static int print_gc(const unsigned char *blob, size_t len, sw_arch arch, uint32_t off)
{
	struct gc_line g = { arch, "", 0, 0 };
	sw_status st = sw_swu_gc_live(blob, len, off, add_gc, &g);

	if (st != SW_OK) {
		printf("  %8" PRIu32 "  error: %s\n", off, sw_strerror(st));
		return 1;
	}
	printf("  %8s  gc      %s\n", "", g.n ? g.text : "-");
	return 0;
}

/* Dump one blob; 0 if it is valid, 1 if not. */
static int dump_blob(const unsigned char *blob, size_t len, int rules)
{
	sw_swu_header h;
	sw_swu_rule r, ra;
	sw_status st;
	char where[16];

	st = sw_swu_dump(stdout, blob, len);
	if (st != SW_OK)
		return 1;
	if (!rules)
		return 0;
	if (sw_swu_decode_header(blob, len, &h) != SW_OK)
		return 1;
	printf("rules:\n");
	for (uint32_t off = 0; off <= h.code_size; off++) {
		st = sw_swu_decode(blob, len, off, &r);
		if (st != SW_OK) {
			printf("  %8" PRIu32 "  error: %s\n", off, sw_strerror(st));
			return 1;
		}
		snprintf(where, sizeof where, "%" PRIu32, off);
		print_rule((sw_arch)h.arch, where, &r);
		/* At a return address a callee-pops call has not popped its arguments yet. */
		st = sw_swu_decode_return_address(blob, len, off, &ra);
		if (st != SW_OK) {
			printf("  %8" PRIu32 "  error: %s\n", off, sw_strerror(st));
			return 1;
		}
		if (memcmp(&r, &ra, sizeof r) != 0)
			print_rule((sw_arch)h.arch, "as ra", &ra);
		if (h.gc_locations && print_gc(blob, len, (sw_arch)h.arch, off))
			return 1;
		if (off == UINT32_MAX)
			break;
	}
	return 0;
}

int main(int argc, char **argv)
{
	int rules = 0, nfiles = 0, status = 0, i;

	if (argc > 0 && argv[0] && argv[0][0])
		progname = argv[0];
	tool_standard_options(argc, argv, "swdump", usage);
	for (i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-r") || !strcmp(argv[i], "--rules")) {
			rules = 1;
		} else if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--")) {
			i++;
			break;
		} else if (argv[i][0] == '-' && argv[i][1]) {
			fprintf(stderr, "%s: unknown option %s\n", progname, argv[i]);
			usage(stderr);
			return 2;
		} else {
			break;
		}
	}
	nfiles = argc - i;

	for (int n = 0; n == 0 || i < argc; n++, i++) {
		const char *name = i < argc ? argv[i] : "-";
		int is_stdin = !strcmp(name, "-");
		FILE *f = is_stdin ? stdin : fopen(name, "rb");
		unsigned char *blob;
		size_t len = 0;

		if (!f) {
			fprintf(stderr, "%s: %s: %s\n", progname, name, strerror(errno));
			status = 2;
			if (nfiles == 0)
				break;
			continue;
		}
		blob = read_all(f, &len);
		if (!blob)
			fprintf(stderr, "%s: %s: %s\n", progname, name, strerror(errno));
		if (!is_stdin)
			fclose(f);
		if (!blob) {
			status = 2;
		} else {
			if (nfiles > 1)
				printf("%s%s:\n", n ? "\n" : "", name);
			if (dump_blob(blob, len, rules) && status == 0)
				status = 1;
			free(blob);
		}
		if (nfiles == 0)
			break;
	}
	return status;
}
