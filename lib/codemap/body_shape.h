/*
 * body_shape.h (internal) - a body rule's shape: what two body rules
 * (swu_format.h) share when they unwind the same way, whatever offsets
 * they cover.
 *
 * Methods compiled by one JIT, like the functions of one module, mostly
 * have a handful of prologs: the same frame size, the same registers
 * saved in the same slots.  Their body rules then differ only in lo, hi,
 * lo2 and hi2.  Code tables (codemap_table_build.c) and the code map's
 * methods (codemap_shapes.h) keep each shape once and each function's
 * offsets beside it.
 */
#ifndef SW_LIB_BODY_SHAPE_H
#define SW_LIB_BODY_SHAPE_H

#include <stdint.h>
#include <string.h>
#include "swu_format.h"

/*
 * The hash of a shape: `br` with its offsets cleared, and its saved[].
 * The rule's bytes are hashed as they are, padding included: rules come
 * from swu_validate_body_rule or swu_body_rule_decode, which clear them
 * whole first.
 */
static inline uint64_t swi_body_shape_hash(const struct swu_body_rule *br, const uint32_t *saved)
{
	uint64_t h = 1469598103934665603ull;
	const uint8_t *p = (const uint8_t *)br;

	for (size_t i = 0; i < sizeof *br; i++)
		h = (h ^ p[i]) * 1099511628211ull;
	for (unsigned i = 0; i < br->nsaved; i++)
		h = (h ^ saved[i]) * 1099511628211ull;
	return h;
}

/* Whether shape a (with a_saved[]) is shape b (with b_saved[]); offsets cleared in both. */
static inline int swi_body_shape_same(const struct swu_body_rule *a, const uint32_t *a_saved,
                                      const struct swu_body_rule *b, const uint32_t *b_saved)
{
	return !memcmp(a, b, sizeof *a) &&
	       (a->nsaved == 0 || !memcmp(a_saved, b_saved, sizeof(a_saved[0]) * a->nsaved));
}

#endif /* SW_LIB_BODY_SHAPE_H */
