/*
 * perf_files.h (internal) - the two files perf reads about JIT code.
 *
 * sw_perf (perf.c) owns one of each, opened or not, and calls these as
 * methods are registered, under its own lock.
 */
#ifndef SW_LIB_PERF_FILES_H
#define SW_LIB_PERF_FILES_H

#include <stdio.h>
#include <stdint.h>
#include <stackwalk/codemap.h>

/* perf-PID.map: one text line per method. */
struct swi_perf_map {
	FILE *f;
	char path[4096];
};

sw_status swi_perf_map_open(struct swi_perf_map *m, const char *dir, long pid);
sw_status swi_perf_map_add(struct swi_perf_map *m, uint64_t start, uint64_t size, const char *name);
void swi_perf_map_close(struct swi_perf_map *m);

/* jit-PID.dump: a header, then records (jitdump.c says which). */
struct swi_jitdump {
	FILE *f;
	void *marker;                   /* the executable mapping perf record logs */
	size_t marker_size;
	uint64_t code_index;            /* JIT_CODE_LOAD's running number */
	long pid;
	char path[4096];
};

sw_status swi_jitdump_open(struct swi_jitdump *j, const char *dir, long pid);
/*
 * An unwinding record (when info->unwind is set) and a code load record.
 * `room`: free bytes after the code (rounded up to 8) that perf may map
 * the unwind tables over without covering other code.
 */
sw_status swi_jitdump_add(struct swi_jitdump *j, const sw_code_info *info, const char *name,
                          uint64_t room);
void swi_jitdump_close(struct swi_jitdump *j);

#endif /* SW_LIB_PERF_FILES_H */
