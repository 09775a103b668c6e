/*
 * perf.h - perf sees JIT methods: perf-PID.map and jitdump files.
 *
 * Linux perf names samples in anonymous executable memory from
 * /tmp/perf-PID.map ("START SIZE name" lines, hexadecimal), and does more
 * with a jitdump file: `perf inject --jit` turns each method's record into
 * a small ELF object with its code, a symbol and unwind tables, so that
 * `perf report` names, annotates and (with --call-graph dwarf) unwinds
 * JIT code.  An sw_perf writes either or both, one record per method as
 * it is registered; attached to a code map it follows the map's adds.
 *
 * The jitdump is jit-PID.dump in the directory given (/tmp by default).
 * It is mapped once, executable, so that `perf record` logs its path for
 * perf inject to find; its timestamps are CLOCK_MONOTONIC, so record with
 * `perf record -k mono`.  Each method gets a JIT_CODE_UNWINDING_INFO record
 * (an .eh_frame and .eh_frame_hdr derived from its SWU) and then a
 * JIT_CODE_LOAD record with its name and a copy of its code, which must
 * be in this process's memory at info->start.  Registration writes files:
 * never on a walk's path.
 *
 * perf maps each method's object over its code and, right after it (from
 * the code's end rounded up to 8), its unwind tables, where its DWARF
 * unwinder (perf record --call-graph dwarf) reads them.  A JIT that wants
 * perf to unwind its methods leaves that much room free after each one
 * (a toy-JIT method's tables take about 120 bytes).  Where the room is
 * taken by code written already, the tables are not mapped, so that the
 * other code's samples keep their names.
 */
#ifndef STACKWALK_PERF_H
#define STACKWALK_PERF_H

#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/codemap.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What to write (sw_perf_create's `what`). */
enum {
	SW_PERF_MAP = 1,        /* perf-PID.map */
	SW_PERF_JITDUMP = 2     /* jit-PID.dump */
};

typedef struct sw_perf sw_perf;

/*
 * sw_perf_create - create the files `what` asks for in `dir` (NULL: /tmp;
 * perf reads perf-PID.map only from /tmp), for methods named by `name`
 * (called with `data`; NULL: "jit_<address>").  SW_E_IO when a file
 * cannot be created or mapped (errno says why), SW_E_INVAL.
 */
SW_API sw_status sw_perf_create(sw_perf **out, unsigned what, const char *dir,
                                sw_method_name_fn name, void *data);

/* sw_perf_destroy - detach, end the jitdump (JIT_CODE_CLOSE), close and unmap. */
SW_API void sw_perf_destroy(sw_perf *p);

/*
 * sw_perf_attach - write a record for each method `map` adds from now on
 * (an sw_codemap observer).  perf has no record for code that goes away:
 * removals are not written.  SW_E_EXISTS if attached already.
 */
SW_API sw_status sw_perf_attach(sw_perf *p, sw_codemap *map);

/* sw_perf_detach - stop observing the map. */
SW_API sw_status sw_perf_detach(sw_perf *p);

/*
 * sw_perf_add - write the records of one method directly, by name: code
 * the code map does not hold (a JIT's stubs).  info->unwind (optional
 * for the map file) is its SWU blob.  SW_E_IO, SW_E_BADMETA.
 */
SW_API sw_status sw_perf_add(sw_perf *p, const sw_code_info *info, const char *name);

/*
 * sw_perf_path - the path of the file `what` names (SW_PERF_MAP or
 * SW_PERF_JITDUMP), or NULL if it was not asked for.
 */
SW_API const char *sw_perf_path(const sw_perf *p, unsigned what);

/* sw_perf_status - SW_OK, or the first error a record for the attached map met. */
SW_API sw_status sw_perf_status(const sw_perf *p);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_PERF_H */
