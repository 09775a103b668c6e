/*
 * swu_eh.h - exception handling clauses in SWU: a method's try regions,
 * and the funclets that handle each.
 *
 * A JIT records each method's clauses in its SWU blob (swu(5), "EH
 * section") as CoreCLR's JIT reports them to the runtime
 * (src/coreclr/inc/corinfo.h, CORINFO_EH_CLAUSE; the JIT's
 * CodeGen::genReportEH): offsets from the method's first byte, the try
 * region [try_start, try_end), the handler funclet's [handler_start,
 * handler_end), and for a filter the first byte of its filter funclet,
 * which runs up to the handler.  Funclets follow the method's main body,
 * as CoreCLR lays them out (src/coreclr/vm/exceptionhandling.cpp, the
 * comment at its top), so every handler lies at or beyond the blob's code
 * size; a try region lies in the main body, or inside a funclet (a try
 * nested in a handler, or a duplicated clause).
 *
 * Clauses are listed innermost first: a clause whose try region lies
 * inside another's comes before it (ECMA-335 Partition II, 19; CoreCLR's
 * exception dispatch relies on that order).  Clauses with the same try
 * region are tried in table order.  The decoder reports the clauses that
 * cover an offset in that order.
 */
#ifndef STACKWALK_SWU_EH_H
#define STACKWALK_SWU_EH_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/swu.h>
#include <stackwalk/codemap.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Hard limit against hostile blobs: clauses in one method. */
#define SW_SWU_MAX_EH_CLAUSES 1024

/* sw_eh_clause.kind: the values of CoreCLR's CORINFO_EH_CLAUSE_FLAGS. */
enum {
	SW_EH_CATCH   = 0,      /* a typed catch: type_token names the type (the runtime's token) */
	SW_EH_FILTER  = 1,      /* a filter funclet at filter_start decides; then the handler runs */
	SW_EH_FINALLY = 2,      /* runs when control leaves the try, by exception or not */
	SW_EH_FAULT   = 4       /* runs only when an exception leaves the try */
};

/* sw_eh_clause.flags */
enum {
	/*
	 * CORINFO_EH_CLAUSE_DUPLICATE: a copy of an enclosing clause whose try
	 * region is a funclet pulled out of that try (its handler is an
	 * earlier clause's).  CoreCLR's second-generation dispatch stops its
	 * enumeration at the first of them (EHEnumNext).
	 */
	SW_EH_DUPLICATED = 8
};

/* One clause; offsets from the method's first byte. */
typedef struct sw_eh_clause {
	uint32_t kind;                  /* SW_EH_CATCH, _FILTER, _FINALLY or _FAULT */
	uint32_t flags;                 /* SW_EH_DUPLICATED or 0 */
	uint32_t try_start, try_end;    /* the protected region [try_start, try_end) */
	uint32_t handler_start, handler_end;    /* the handler funclet */
	uint32_t filter_start;          /* SW_EH_FILTER: the filter funclet, [filter_start,
	                                 * handler_start); otherwise 0 */
	uint32_t type_token;            /* SW_EH_CATCH: the caught type; otherwise 0 */
} sw_eh_clause;

/*
 * sw_swu_eh_clause - record the next clause of the method being described,
 * innermost first.  Each clause is checked at once on its own (kind,
 * flags, non-empty ranges, a filter before its handler, a try apart from
 * its handler); sw_swu_finish checks the table against the code size
 * (handlers beyond the main body, nesting, order).  Any time after
 * sw_swu_builder_create.  SW_E_INVAL for a bad clause, SW_E_LIMIT past
 * SW_SWU_MAX_EH_CLAUSES.
 */
SW_API sw_status sw_swu_eh_clause(sw_swu_builder *b, const sw_eh_clause *clause);

/* Called for each clause, with its index in the table; return non-zero to stop. */
typedef int (*sw_swu_eh_fn)(void *data, uint32_t index, const sw_eh_clause *clause);

/*
 * sw_swu_eh_clauses - call `fn` for every clause of the blob, in table
 * order.  A blob without clauses has none (SW_OK).  SW_E_BADMETA or
 * SW_E_TRUNCATED for a damaged table, SW_E_UNSUPPORTED for a clause kind
 * or an EH section version this library does not know.  Never reads
 * outside the blob; allocates nothing.
 */
SW_API sw_status sw_swu_eh_clauses(const void *blob, size_t size, sw_swu_eh_fn fn, void *data);

/*
 * sw_swu_eh_covering - call `fn` for every clause whose try region holds
 * `offset` (try_start <= offset < try_end), innermost first.  For a frame
 * stopped at a return address, CoreCLR looks up the call instruction's
 * offset (the return address minus one); for a faulting instruction, its
 * own.  Errors as sw_swu_eh_clauses.
 */
SW_API sw_status sw_swu_eh_covering(const void *blob, size_t size, uint32_t offset,
                                    sw_swu_eh_fn fn, void *data);

/* Where an offset lies in a handler (sw_swu_eh_handler_at). */
typedef struct sw_eh_handler {
	uint32_t index;                 /* the clause's index in the table */
	uint32_t in_filter;             /* 1: in its filter funclet; 0: in its handler funclet */
	sw_eh_clause clause;
} sw_eh_handler;

/*
 * sw_swu_eh_handler_at - whether `offset` lies in a handler or filter
 * funclet, and whose: the first clause in table order whose handler or
 * filter holds it (a duplicated clause shares an earlier clause's
 * handler, which is the one reported).  SW_E_NOTFOUND if it lies in no
 * funclet; other errors as sw_swu_eh_clauses.
 */
SW_API sw_status sw_swu_eh_handler_at(const void *blob, size_t size, uint32_t offset,
                                      sw_eh_handler *out);

/*
 * sw_codemap_check_eh - check that the funclets the clauses of the method
 * registered at `start` name are registered where the clauses say: for
 * every handler and filter, a method starting exactly there and as long,
 * flagged SW_CODE_FUNCLET (and SW_CODE_FILTER for a filter), whose parent
 * is the method's handle.  On SW_E_MISMATCH *bad_clause (if not NULL) is
 * the first clause that fails.  SW_E_NOTFOUND when no method starts at
 * `start`; the blob's own errors as sw_swu_eh_clauses.  Reads the map
 * as sw_codemap_find does.
 */
SW_API sw_status sw_codemap_check_eh(const sw_codemap *map, uint64_t start, uint32_t *bad_clause);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_SWU_EH_H */
