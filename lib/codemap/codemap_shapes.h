/*
 * codemap_shapes.h (internal) - the body-rule shapes of a code map's
 * methods, each kept once (body_shape.h says what a shape is).
 *
 * A method's entry names its shape by a number instead of holding
 * a 40-byte body rule and its saved[]: with a JIT's few prologs, a million
 * methods share a few hundred shapes.  The store only grows while the map
 * lives, so a number stays valid as long as any entry can hold it, and a
 * reader needs no read section beyond the entry's own.
 *
 * Shapes live in chunks that never move: chunk k holds 16 << k shapes
 * (16, 32, 64, ...), so a small map spends little and a number finds its
 * shape in two loads.  At most SWI_SHAPES_MAX shapes: a method whose shape
 * would be one more is registered with no body rule (its frames are then
 * decoded from the blob, which is slower, not wrong).
 *
 * Writers (under the map's writer lock) add; readers look up without a
 * lock: a shape is written before the entry that names it is published,
 * and readers reach entries through acquire loads.
 */
#ifndef SW_LIB_CODEMAP_SHAPES_H
#define SW_LIB_CODEMAP_SHAPES_H

#include <stdint.h>
#include "swu_format.h"

#define SWI_SHAPE_CHUNK0  16
#define SWI_SHAPE_CHUNKS  17                    /* enough for SWI_SHAPES_MAX */
#define SWI_SHAPES_MAX    ((uint32_t)SWI_SHAPE_CHUNK0 << (SWI_SHAPE_CHUNKS - 1))    /* 2^20 */

/* A shape: the rule with its offsets 0, and its saved[]. */
struct swi_shape {
	struct swu_body_rule rule;
	const uint32_t *saved;          /* rule.nsaved of them (NULL when none) */
};

struct swi_shapes {
	struct swi_shape *chunk[SWI_SHAPE_CHUNKS];
	uint32_t n;                     /* shapes kept (writer only) */
	uint32_t last;                  /* the number intern gave last, + 1 (writer only): tried first */
	/* Writer only: open addressing over shape numbers + 1 (0: empty), by hash. */
	uint32_t *index;
	uint32_t index_cap;             /* a power of two, or 0 */
	size_t bytes;                   /* what the store allocated (chunks, saved[], index) */
};

/* swi_shapes_init - an empty store; it allocates nothing yet. */
void swi_shapes_init(struct swi_shapes *s);

/* swi_shapes_destroy - free everything; no reader may be left. */
void swi_shapes_destroy(struct swi_shapes *s);

/*
 * swi_shapes_intern - the number of the shape of `br` (its offsets
 * ignored) with saved[], added if new: SW_OK, SW_E_NOMEM, or SW_E_LIMIT
 * when the store is full.  Writers only.
 */
sw_status swi_shapes_intern(struct swi_shapes *s, const struct swu_body_rule *br,
                            const uint32_t *saved, uint32_t *id);

/* swi_shapes_get - shape `id`, which swi_shapes_intern gave.  Async-signal-safe. */
static inline const struct swi_shape *swi_shapes_get(const struct swi_shapes *s, uint32_t id)
{
	uint32_t b = id + SWI_SHAPE_CHUNK0;
	unsigned k = (unsigned)(31 - __builtin_clz(b)) - 4;  /* log2(SWI_SHAPE_CHUNK0) */

	return &s->chunk[k][b - (SWI_SHAPE_CHUNK0 << k)];
}

#endif /* SW_LIB_CODEMAP_SHAPES_H */
