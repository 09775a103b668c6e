/*
 * bench_names.c - the cost of naming sampled addresses with sw_names.
 *
 *   bench-names [-p] PROGRAM ADDRESSES
 *
 * With -p it also prints what it found for each address, in the form
 * eu-addr2line -f -i -C -a prints it (the address, then each frame's
 * function, "inlined at FILE:LINE:COLUMN in CALLER" for an inlined call,
 * and its FILE:LINE:COLUMN), so the two can be compared line for line.
 *
 * ADDRESSES holds one hexadecimal address of PROGRAM (its ELF addresses:
 * the module is added at bias 0) per line, as a profiler's samples give
 * them.  Each is named as swstack names a frame: the symbol, and every
 * source-level frame (inlined calls, then the function) with its file,
 * line and column, demangled.  Prints the CPU time it took (the
 * symbolizer's set-up, its first reads of the DWARF, included) and the
 * process's peak resident memory.  tests/bench/bench-names.sh runs it
 * beside eu-addr2line on the same addresses.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/resource.h>
#include <stackwalk.h>

#define MAX_FRAMES 64

static double cpu_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_place(const sw_name_frame *f)
{
	if (f->file)
		printf("%s:%u:%u", f->file, f->line, f->column);
	else
		printf("??:0");
}

/* One address as eu-addr2line -f -i -C -a shows it. */
static void print_frames(uint64_t address, const sw_name_frame *frames, size_t n)
{
	printf("0x%016" PRIx64 "\n", address);
	for (size_t k = 0; k < n; k++) {
		const sw_name_frame *f = &frames[k];

		printf("%s", f->function ? f->function : "??");
		if (f->inlined && k + 1 < n) {
			printf(" inlined at ");
			print_place(&frames[k + 1]);
			printf(" in %s", frames[k + 1].function ? frames[k + 1].function : "??");
		}
		printf("\n");
		print_place(f);
		printf("\n");
	}
}

int main(int argc, char **argv)
{
	int print = 0;
	static sw_name_frame frames[MAX_FRAMES];
	uint64_t *addrs = NULL;
	size_t n = 0, cap = 0, named = 0, lines = 0, inlined = 0;
	unsigned long long a;
	struct rusage ru;
	sw_names *names;
	double t0, t1;
	FILE *f;

	if (argc == 4 && strcmp(argv[1], "-p") == 0) {
		print = 1;
		argv++;
		argc--;
	}
	if (argc != 3) {
		fprintf(stderr, "usage: %s [-p] PROGRAM ADDRESSES\n", argv[0]);
		return 2;
	}
	if (!(f = fopen(argv[2], "r"))) {
		perror(argv[2]);
		return 1;
	}
	while (fscanf(f, "%llx", &a) == 1) {
		if (n == cap) {
			uint64_t *p = realloc(addrs, (cap = cap ? cap * 2 : 4096) * sizeof *p);

			if (!p)
				return 1;
			addrs = p;
		}
		addrs[n++] = a;
	}
	fclose(f);
	t0 = cpu_seconds();
	if (sw_names_create(NULL, &names) != SW_OK || sw_names_add_module(names, argv[1], 0) != SW_OK) {
		fprintf(stderr, "%s: cannot read %s\n", argv[0], argv[1]);
		return 1;
	}
	for (size_t i = 0; i < n; i++) {
		sw_name nm;

		if (sw_names_lookup(names, addrs[i], &nm, frames, MAX_FRAMES) != SW_OK || nm.frames == 0) {
			if (print)
				printf("0x%016" PRIx64 "\n??\n??:0\n", addrs[i]);
			continue;
		}
		if (print)
			print_frames(addrs[i], frames, nm.frames < MAX_FRAMES ? nm.frames : MAX_FRAMES);
		named++;
		lines += frames[0].file != NULL;
		inlined += nm.frames - 1;
	}
	t1 = cpu_seconds();
	sw_names_free(names);
	getrusage(RUSAGE_SELF, &ru);
	printf("sw_names: %zu addresses, %zu named, %zu with a line, %zu inlined frames: "
	       "%.3f s CPU, %.1f us an address, peak RSS %ld KiB\n", n, named, lines, inlined,
	       t1 - t0, n ? (t1 - t0) * 1e6 / (double)n : 0.0, ru.ru_maxrss);
	free(addrs);
	return 0;
}
