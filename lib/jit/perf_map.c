/*
 * perf_map.c - /tmp/perf-PID.map, the simplest thing perf reads.
 *
 * One line per method, "START SIZE NAME" with both numbers in hexadecimal
 * without a prefix; perf report reads the file after the run and names
 * samples in anonymous executable memory from it.  Each line is flushed
 * as it is written, so a JIT that crashes still leaves a usable map.
 */
#include <errno.h>
#include <inttypes.h>
#include "util.h"
#include "perf_files.h"

sw_status swi_perf_map_open(struct swi_perf_map *m, const char *dir, long pid)
{
	int n = snprintf(m->path, sizeof(m->path), "%s/perf-%ld.map", dir, pid);

	if (n < 0 || (size_t)n >= sizeof(m->path)) {
		errno = ENAMETOOLONG;
		return SW_E_IO;
	}
	m->f = fopen(m->path, "w");
	return m->f ? SW_OK : SW_E_IO;
}

sw_status swi_perf_map_add(struct swi_perf_map *m, uint64_t start, uint64_t size, const char *name)
{
	/* A name is one field to the end of the line: no line breaks in it. */
	if (fprintf(m->f, "%" PRIx64 " %" PRIx64 " ", start, size) < 0)
		return SW_E_IO;
	for (const char *c = name; *c; c++)
		if (fputc(*c == '\n' || *c == '\r' ? ' ' : *c, m->f) == EOF)
			return SW_E_IO;
	if (fputc('\n', m->f) == EOF || fflush(m->f) != 0)
		return SW_E_IO;
	return SW_OK;
}

void swi_perf_map_close(struct swi_perf_map *m)
{
	if (m->f)
		fclose(m->f);
	m->f = NULL;
}
