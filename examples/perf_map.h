/*
 * perf_map.h - names from a perf map (/tmp/perf-PID.map), the text file
 * in which JITs (V8 under --perf-basic-prof, the JVM's agents, .NET with
 * DOTNET_PerfMapEnabled, this library's toy JIT) list their code for
 * perf: one "START SIZE NAME" line per function, START and SIZE in hex.
 * It gives names only, for code that no module, image or JIT list
 * describes; how such frames are stepped is the walk's business.
 */
#ifndef PERF_MAP_H
#define PERF_MAP_H

#include <stddef.h>
#include <stdint.h>

struct perf_map_entry {
	uint64_t start, size;
	size_t line;                    /* 0-based: a later line wins over an earlier one */
	const char *name;               /* into the map's text */
};

struct perf_map {
	char *text;                     /* the file, its lines NUL-terminated in place */
	struct perf_map_entry *entries; /* by start, then line */
	size_t count;
	size_t skipped;                 /* lines that are not "START SIZE NAME" */
};

/*
 * perf_map_load - read and index the map at `path` (read_bounded: a
 * regular file of at most 1 GiB).  0, or -1 with *why saying why.  A line
 * that does not parse is counted in `skipped`, not an error: the file is
 * written while the program runs, and its last line may be cut short.
 */
int perf_map_load(struct perf_map *pm, const char *path, const char **why);

/*
 * perf_map_name - the name of the function holding pc, and pc's offset in
 * it; NULL if none.  Where entries overlap (code freed and reused), the
 * one written last that holds pc.
 */
const char *perf_map_name(const struct perf_map *pm, uint64_t pc, uint64_t *offset);

void perf_map_free(struct perf_map *pm);

#endif /* PERF_MAP_H */
