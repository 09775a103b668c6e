/*
 * swu_eh_format.h (internal) - the EH section of an SWU blob: reading,
 * writing and checking a method's exception handling clauses (swu_eh.c).
 *
 * The section (present with SWU_FLAG_EH, right after the header; swu(5)
 * documents each byte):
 *
 *   version            1 byte, SWU_EH_VERSION
 *   clause count       1 to SW_SWU_MAX_EH_CLAUSES
 *   clauses            each: kind byte (CORINFO_EH_CLAUSE_FLAGS: kind |
 *                      SW_EH_DUPLICATED), try start, try length, handler
 *                      start, handler length, then the type token of a
 *                      catch or the filter start of a filter (varints)
 *
 * A clause is at least SWU_EH_CLAUSE_MIN_BYTES long, so a count the bytes
 * cannot hold is refused before any clause is read.
 */
#ifndef SW_UNWINDINFO_SWU_EH_FORMAT_H
#define SW_UNWINDINFO_SWU_EH_FORMAT_H

#include <stdio.h>
#include <stackwalk/swu_eh.h>
#include "swu_format.h"

#define SWU_EH_VERSION          1
#define SWU_EH_CLAUSE_MIN_BYTES 5
#define SWU_EH_KIND_MASK        0x07u
#define SWU_EH_FLAGS_KNOWN      SW_EH_DUPLICATED

/* Reads a blob's clauses in table order. */
struct swu_eh_reader {
	struct swu_reader r;
	uint32_t code_size;             /* the blob's main body */
	uint32_t count;                 /* clauses in the table (0: none) */
	uint32_t index;                 /* the next clause's */
};

/* Open the blob's table: count 0 when it has no EH section. */
sw_status swu_eh_open(const void *blob, size_t size, struct swu_eh_reader *er);

/*
 * The next clause, checked on its own (swu_eh_check_clause): SW_E_BADMETA
 * or SW_E_TRUNCATED for bad bytes, SW_E_UNSUPPORTED for a kind or flag
 * this library does not know.  SW_E_NOTFOUND past the last.
 */
sw_status swu_eh_next(struct swu_eh_reader *er, sw_eh_clause *c);

/*
 * One clause on its own: a known kind and flags (else SW_E_UNSUPPORTED);
 * non-empty ranges within SW_SWU_MAX_CODE_SIZE, a filter before its
 * handler, no operand its kind lacks, the try apart from its funclets
 * (else SW_E_BADMETA).
 */
sw_status swu_eh_check_clause(const sw_eh_clause *c);

/*
 * The whole table against a main body of `code_size` bytes: funclets
 * beyond it, tries in it or inside a funclet, blocks nested or disjoint,
 * inner clauses first, handlers shared only by duplicated clauses.
 * `clauses` (the builder's) or, when NULL, the blob's table from `er`.
 * SW_E_BADMETA, or a reading error.
 */
sw_status swu_eh_check_table(const sw_eh_clause *clauses, const struct swu_eh_reader *er,
                             uint32_t count, uint32_t code_size);

/*
 * sw_swu_validate's part: the whole section, to its last byte.  *where
 * is the byte an error was found at (a clause's first for a bad clause,
 * the first clause's for a rule between clauses).
 */
sw_status swu_eh_validate(const void *blob, size_t size, const uint8_t **where);

/* Encode the section's size and the section (the caller has checked the clauses). */
void swu_eh_put_section(struct swu_writer *w, const sw_eh_clause *clauses, uint32_t n);

/* sw_swu_dump's part: one line per clause (nothing without clauses). */
sw_status swu_eh_dump(FILE *out, const void *blob, size_t size);

#endif /* SW_UNWINDINFO_SWU_EH_FORMAT_H */
