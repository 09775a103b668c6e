/*
 * swprof_write.c - the profile of this process, written once when it ends:
 * folded stacks, the flame graph (swprof_svg.c) and pprof
 * (swprof_pprof.c), all from the same named samples (swprof_names.c),
 * under names that take the pid; then a one-line summary.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <stackwalk.h>
#include "swprof.h"

/*
 * An output name: %p is the pid, followed by ".N" in the N-th image an
 * exec started in the same process, so no image overwrites another's
 * profile; %% is a percent sign.
 */
void output_name(const char *template, char *out, size_t size)
{
	size_t len = 0;

	for (const char *t = template; *t && len + 1 < size; t++) {
		int n = 0;

		if (t[0] == '%' && t[1] == 'p' && prof.exec_generation)
			n = snprintf(out + len, size - len, "%ld.%u", (long)prof.pid, prof.exec_generation);
		else if (t[0] == '%' && t[1] == 'p')
			n = snprintf(out + len, size - len, "%ld", (long)prof.pid);
		else if (t[0] == '%' && t[1] == '%')
			out[len++] = '%';
		else
			out[len++] = *t;
		if (t[0] == '%' && (t[1] == 'p' || t[1] == '%'))
			t++;
		len += n > 0 ? (size_t)n : 0;
	}
	out[len < size ? len : size - 1] = 0;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/*
 * With prof.fold_threads, the thread a stack was sampled on as its root
 * frame, as stackcollapse-perf.pl --tid writes it: "name-pid/tid", its
 * name made folded-safe, "[unknown]" for a thread that ended before its
 * name could be read.
 */
static void thread_frame(const profile_stack *st, char *out, size_t size)
{
	const char *name = thread_name(st->tid);

	snprintf(out, size, "%s-%ld/%ld", name ? name : "[unknown]", (long)prof.pid, (long)st->tid);
	folded_safe(out);
}

/* A stack as a folded line: its names, root first, separated by ';'. */
static char *folded_line(const named_profile *np, const profile_stack *st)
{
	char thread[THREAD_NAME_MAX + 48] = "";
	size_t len = 0;
	char *line;

	if (prof.fold_threads)
		thread_frame(st, thread, sizeof thread);
	len = strlen(thread) + 1;
	for (uint32_t i = 0; i < st->depth; i++)
		len += strlen(np->frames[st->frames[i]].name) + 1;
	line = malloc(len + 1);
	if (!line)
		return NULL;
	len = strlen(thread);
	memcpy(line, thread, len);
	for (uint32_t i = 0; i < st->depth; i++) {
		const char *name = np->frames[st->frames[i]].name;
		size_t n = strlen(name);

		if (i || *thread)
			line[len++] = ';';
		memcpy(line + len, name, n);
		len += n;
	}
	line[len] = 0;
	return line;
}

/*
 * The folded lines, sorted, with stacks that read the same (different
 * addresses of the same functions) merged: *nuniq lines and their counts
 * in CPU periods (samples, in wall-clock mode).
 */
static int fold(const named_profile *np, char ***lines_out, unsigned long **counts_out,
                size_t *nuniq)
{
	char **lines = calloc(np->nstacks + 1, sizeof *lines);
	unsigned long *counts = calloc(np->nstacks + 1, sizeof *counts);
	size_t n = 0;

	*lines_out = lines;
	*counts_out = counts;
	*nuniq = 0;
	if (!lines || !counts)
		return 0;
	/* The count travels with its line through the sort: kept after the line's end. */
	for (; n < np->nstacks; n++) {
		char *line = folded_line(np, &np->stacks[n]), *tagged;
		size_t len;

		if (!line)
			break;
		len = strlen(line);
		tagged = realloc(line, len + 1 + sizeof(unsigned long));
		if (!tagged) {
			free(line);
			break;
		}
		memcpy(tagged + len + 1, &np->stacks[n].ticks, sizeof(unsigned long));
		lines[n] = tagged;
	}
	qsort(lines, n, sizeof *lines, cmp_str);
	for (size_t i = 0; i < n; i++) {
		unsigned long c;

		memcpy(&c, lines[i] + strlen(lines[i]) + 1, sizeof c);
		if (*nuniq && !strcmp(lines[*nuniq - 1], lines[i])) {
			counts[*nuniq - 1] += c;
			free(lines[i]);
			continue;
		}
		lines[*nuniq] = lines[i];
		counts[(*nuniq)++] = c;
	}
	return n == np->nstacks;
}

static int write_folded(const char *path, char **lines, size_t nuniq, const unsigned long *counts)
{
	FILE *f = fopen(path, "w");
	int ok;

	if (!f)
		return 0;
	for (size_t i = 0; i < nuniq; i++)
		fprintf(f, "%s %lu\n", lines[i], counts[i]);
	ok = !ferror(f);
	return fclose(f) == 0 && ok;
}

/* The process's CPU time so far, user and system, in milliseconds. */
static double run_cpu_ms(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) != 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) * 1e3 +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e3;
}

static void output_path(const char *variable, const char *fallback, char *out, size_t size)
{
	const char *template = getenv(variable);

	output_name(template && *template ? template : fallback, out, size);
}

/*
 * Name the samples and write them to those of `folded`, `svg` and `pb`
 * (pprof) that are not NULL: 1 if all were written, else 0 with errno
 * set (0: out of memory).  *w says what was written.  No sampling runs.
 */
int write_profile_files(const char *folded, const char *svg, const char *pb, profile_written *w)
{
	char heading[200];
	named_profile np;
	char **lines = NULL;
	unsigned long *counts = NULL;
	size_t nuniq = 0;
	int ok;

	memset(w, 0, sizeof *w);
	read_thread_names(1);       /* the names of threads still there as they are now */
	errno = 0;
	ok = name_profile(&np) && fold(&np, &lines, &counts, &nuniq);
	ok = ok && (!folded || write_folded(folded, lines, nuniq, counts));
	snprintf(heading, sizeof heading, "swprof: %lu samples (%lu %s periods) of %lu threads at "
	         "%u Hz (%lu stopped early), %zu distinct stacks", prof.samples, np.ticks,
	         prof.wall_clock ? "wall-clock" : "CPU", prof.threads_seen, prof.hz, prof.stopped,
	         nuniq);
	ok = ok && (!svg || write_svg(svg, lines, nuniq, counts, np.ticks, heading));
	w->pprof = ok && pb ? write_pprof(pb, &np) : 0;
	ok = ok && (!pb || w->pprof != 0);
	w->stacks = nuniq;
	w->frames = np.nframes;
	w->ticks = np.ticks;
	w->naming_cpu_ms = np.naming_cpu_ms;
	for (size_t i = 0; lines && i < nuniq; i++)
		free(lines[i]);
	free(lines);
	free(counts);
	free_named_profile(&np);
	return ok;
}

/*
 * The agent's profile: the folded stacks, the flame graph and pprof,
 * and where they went, once per process (and again only after a failed
 * exec).  The sampler thread has ended.
 */
void write_profile(void)
{
	char out[4096], svg[4096], pb[4096];
	profile_written w;
	double run_ms;
	int ok;

	if (__atomic_exchange_n(&prof.written, 1, __ATOMIC_ACQ_REL))
		return;
	run_ms = run_cpu_ms();
	output_path("SWPROF_OUT", "swprof.%p.folded", out, sizeof out);
	output_path("SWPROF_SVG", "swprof.%p.svg", svg, sizeof svg);
	output_path("SWPROF_PPROF", "swprof.%p.pb.gz", pb, sizeof pb);
	ok = write_profile_files(out, svg, pb, &w);
	if (ok)
		fprintf(stderr, "swprof: %lu samples (%lu %s periods) of %lu threads at %u Hz "
		        "(%lu unwalkable, %lu stopped early, %lu dropped), %zu distinct stacks, "
		        "%zu distinct frames named in %.1f ms CPU (%.2f%% of the run's %.0f ms) "
		        "-> %s, %s%s%s\n", prof.samples, w.ticks,
		        prof.wall_clock ? "wall-clock" : "CPU", prof.threads_seen, prof.hz,
		        prof.failed, prof.stopped, prof.dropped, w.stacks, w.frames, w.naming_cpu_ms,
		        run_ms > 0 ? 100.0 * w.naming_cpu_ms / run_ms : 0.0, run_ms, out, svg,
		        w.pprof > 0 ? ", " : "", w.pprof > 0 ? pb : "");
	else
		fprintf(stderr, "swprof: cannot write the profile to %s, %s and %s: %s\n", out, svg,
		        pb, errno ? strerror(errno) : "out of memory");
	prof.write_failed = !ok;
}
