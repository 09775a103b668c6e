/*
 * swprof_main.c - the swprof command: its options, and the mode they
 * choose.  -p PID attaches to a running process (swprof_attach.c); a
 * program is profiled from its start by LD_PRELOAD of libswprof.so
 * instead (swprof.c), which takes its options from the environment.
 * See swprof(1).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "swprof_attach.h"
#include "tool_options.h"

#define DEFAULT_STACK_BYTES 32768u
#define MAX_STACK_BYTES 65528u      /* perf_event_open: below 64 KiB, a multiple of 8 */

static const char progname[] = "swprof";

static void usage(FILE *f)
{
	fprintf(f, "usage: %s -p PID [-d SECONDS] [-F HZ] [-o OUT] [--format folded|pprof|svg]\n"
	        "              [--stack-size BYTES] [--threads] [-v]\n"
	        "  -p PID            sample every thread of the running process PID (perf_event_open)\n"
	        "  -d SECONDS        stop after SECONDS (default: Ctrl-C, SIGTERM or the process's end)\n"
	        "  -F HZ             samples per second of each thread's CPU time (default 1000)\n"
	        "  -o OUT            write the profile to OUT (%%p: the pid); default swprof.PID.folded,\n"
	        "                    .svg and .pb.gz\n"
	        "  --format FORMAT   folded, pprof or svg (default: from OUT's name, else all three)\n"
	        "  --stack-size N    bytes of user stack copied with each sample (8 to %u, default %u)\n"
	        "  --threads         start each folded stack (and the flame graph's) with its thread,\n"
	        "                    name-PID/TID (pprof's samples always carry tid and thread_comm)\n"
	        "  -v                say which modules could not be loaded, more counts, the threads\n"
	        "To profile a program from its start: LD_PRELOAD=libswprof.so program (see swprof(1)).\n",
	        progname, MAX_STACK_BYTES, DEFAULT_STACK_BYTES);
}

/* A number within [lo, hi], or -1 with a message. */
static double number(const char *arg, const char *what, double lo, double hi)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(arg, &end);
	if (errno || end == arg || *end || !(v >= lo && v <= hi)) {
		fprintf(stderr, "%s: %s must be a number from %g to %g, not '%s'\n", progname, what, lo,
		        hi, arg);
		return -1;
	}
	return v;
}

static int format_named(const char *name, enum attach_format *f)
{
	static const struct { const char *name; enum attach_format f; } formats[] = {
		{ "folded", FORMAT_FOLDED }, { "pprof", FORMAT_PPROF }, { "svg", FORMAT_SVG },
	};

	for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
		if (strcmp(name, formats[i].name) == 0) {
			*f = formats[i].f;
			return 0;
		}
	return -1;
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), t = strlen(tail);

	return n >= t && strcmp(s + n - t, tail) == 0;
}

int main(int argc, char **argv)
{
	static const struct option longs[] = {
		{ "format", required_argument, NULL, 'f' },
		{ "stack-size", required_argument, NULL, 's' },
		{ "threads", no_argument, NULL, 't' },
		{ NULL, 0, NULL, 0 },
	};
	attach_options o = { .hz = 1000, .stack_bytes = DEFAULT_STACK_BYTES, .format = FORMAT_ALL };
	int have_format = 0, c;
	double v;

	tool_standard_options(argc, argv, progname, usage);
	while ((c = getopt_long(argc, argv, "+p:d:F:o:v", longs, NULL)) != -1) {
		switch (c) {
		case 'p':
			if ((v = number(optarg, "-p", 1, 0x7fffffff)) < 0 || v != (double)(long)v)
				return 2;
			o.pid = (pid_t)v;
			break;
		case 'd':
			if ((v = number(optarg, "-d", 0.001, 1e9)) < 0)
				return 2;
			o.seconds = v;
			break;
		case 'F':
			if ((v = number(optarg, "-F", 1, 100000)) < 0)
				return 2;
			o.hz = (unsigned)v;
			break;
		case 'o':
			o.out = optarg;
			break;
		case 'f':
			if (format_named(optarg, &o.format) != 0) {
				fprintf(stderr, "%s: --format is folded, pprof or svg, not '%s'\n", progname, optarg);
				return 2;
			}
			have_format = 1;
			break;
		case 's':
			if ((v = number(optarg, "--stack-size", 8, MAX_STACK_BYTES)) < 0)
				return 2;
			/* The kernel takes a multiple of 8. */
			o.stack_bytes = (unsigned)v & ~7u;
			break;
		case 't':
			o.threads = 1;
			break;
		case 'v':
			o.verbose = 1;
			break;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (o.pid == 0 || optind != argc) {
		usage(stderr);
		return 2;
	}
	if (o.out && !have_format)
		o.format = ends_with(o.out, ".svg") ? FORMAT_SVG :
		           ends_with(o.out, ".pb.gz") || ends_with(o.out, ".pb") ? FORMAT_PPROF : FORMAT_FOLDED;
	return swprof_attach(&o);
}
