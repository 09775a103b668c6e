/*
 * codemap_validated.h (internal) - the blobs this thread validated last,
 * and what validating them gave.
 *
 * sw_codemap_add validates every blob it is given, and reads its body
 * rule in the same pass: about two thirds of a registration's
 * instructions.  A JIT often emits the very same blob again: methods of
 * one size with the same prolog and epilogs (accessors, stubs, generic
 * instantiations sharing code shape).  The validator's answer depends on
 * the blob's bytes alone, so a blob byte for byte equal to one validated
 * before gets the same answer without running the validator again.
 *
 * The cache is per thread (no lock: validation runs outside the map's
 * writer lock, so that JIT threads validate in parallel), direct mapped,
 * and small; it keeps a copy of each blob it holds, up to
 * SWI_VALIDATED_BLOB bytes, and of rules with up to SWI_VALIDATED_SAVED
 * saved registers.  Only valid blobs are kept: a bad blob is always
 * validated again, and refused again.
 */
#ifndef SW_LIB_CODEMAP_VALIDATED_H
#define SW_LIB_CODEMAP_VALIDATED_H

#include <stdint.h>
#include "swu_format.h"

#define SWI_VALIDATED_SLOTS 8           /* a power of two */
#define SWI_VALIDATED_BLOB  96
#define SWI_VALIDATED_SAVED 12

/*
 * swi_validate_cached - swu_validate_body_rule(blob, size, body, saved),
 * from this thread's cache when the same bytes were validated before.
 * saved[] must hold SWU_BODY_MAX_SAVED items.  Not async-signal-safe
 * (the first use in a thread may allocate its TLS).
 */
sw_status swi_validate_cached(const uint8_t *blob, uint32_t size, struct swu_body_rule *body,
                              uint32_t *saved);

#endif /* SW_LIB_CODEMAP_VALIDATED_H */
