/*
 * codemap_lookup.h (internal) - the code map as the walker reads it: one
 * lookup that copies a method out, and the counters that say whether what
 * an earlier read section found still holds.
 */
#ifndef SW_LIB_CODEMAP_LOOKUP_H
#define SW_LIB_CODEMAP_LOOKUP_H

#include "util.h"

/*
 * The code containing `ip`, or NULL.  A method's entry is returned in
 * place, valid while the caller holds a read section; a function of a code
 * table (codemap_table.h) is filled into *scratch, and &scratch->info
 * returned.
 */
struct swi_code_copy;
const sw_code_info *swi_codemap_lookup(const sw_codemap *map, uint64_t ip,
                                       struct swi_code_copy *scratch);

/*
 * The start of the parent method of `funclet` (flagged SW_CODE_FUNCLET,
 * found by a lookup of this map), or 0 when it is not found: the nearest
 * method registered below the funclet, if its handle is the funclet's
 * parent's and only that parent's funclets lie between (codemap.c, where
 * the rule is explained).  At most SWI_FUNCLET_PARENT_STEPS items passed
 * and pages visited.  The caller holds a read section.
 * Async-signal-safe: no allocation, lock or system call.
 */
#define SWI_FUNCLET_PARENT_STEPS 64
uint64_t swi_codemap_funclet_parent(const sw_codemap *map, const sw_code_info *funclet);

/*
 * The map's version: it grows with every method removed, and starts at a
 * value no other map of the process had.  Read inside a read section, an
 * unchanged version proves that every entry found in an earlier section of
 * this map is still registered, and this section keeps it so: the writer
 * counts before it retires an entry, and the read section's fence pairs
 * with the fence of the reclamation poll that could free it (epoch.h), so
 * either the reader sees the new version or the poll sees the reader.
 * Async-signal-safe.
 */
uint64_t swi_codemap_version(const sw_codemap *map);

/*
 * How many methods the map has added: what was not found in it stays
 * unfound while this does not change.  Async-signal-safe.
 */
uint64_t swi_codemap_additions(const sw_codemap *map);

#endif /* SW_LIB_CODEMAP_LOOKUP_H */
