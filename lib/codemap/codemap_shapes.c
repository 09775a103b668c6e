/*
 * codemap_shapes.c - the code map's store of body-rule shapes (see
 * codemap_shapes.h for why).
 */
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "body_shape.h"
#include "codemap_shapes.h"

_Static_assert(SWI_SHAPE_CHUNK0 == 16, "swi_shapes_get's shift is log2(SWI_SHAPE_CHUNK0)");

void swi_shapes_init(struct swi_shapes *s)
{
	memset(s, 0, sizeof *s);
}

void swi_shapes_destroy(struct swi_shapes *s)
{
	for (uint32_t id = 0; id < s->n; id++)
		free((uint32_t *)swi_shapes_get(s, id)->saved);
	for (unsigned k = 0; k < SWI_SHAPE_CHUNKS; k++)
		free(s->chunk[k]);
	free(s->index);
	swi_shapes_init(s);
}

/* Place number `id` in `index` (cap slots, a power of two) by its hash. */
static void index_place(uint32_t *index, uint32_t cap, uint64_t hash, uint32_t id)
{
	uint32_t k = (uint32_t)hash & (cap - 1);

	while (index[k])
		k = (k + 1) & (cap - 1);
	index[k] = id + 1;
}

/* Room in the index for one more shape, at a load of at most 1/2. */
static sw_status index_grow(struct swi_shapes *s)
{
	uint32_t cap = s->index_cap ? s->index_cap * 2 : 64, *index;

	if ((s->n + 1) * 2 <= s->index_cap)
		return SW_OK;
	index = calloc(cap, sizeof(*index));
	if (!index)
		return SW_E_NOMEM;
	for (uint32_t id = 0; id < s->n; id++) {
		const struct swi_shape *sh = swi_shapes_get(s, id);

		index_place(index, cap, swi_body_shape_hash(&sh->rule, sh->saved), id);
	}
	free(s->index);
	s->bytes += sizeof(*index) * ((size_t)cap - s->index_cap);
	s->index = index;
	s->index_cap = cap;
	return SW_OK;
}

/* Room for shape number s->n: its chunk, made when it is the chunk's first. */
static sw_status chunk_for_next(struct swi_shapes *s)
{
	uint32_t b = s->n + SWI_SHAPE_CHUNK0;
	unsigned k = (unsigned)(31 - __builtin_clz(b)) - 4;
	/* Chunk k holds the numbers whose b lies in [16 << k, 16 << (k + 1)). */
	size_t count = (size_t)SWI_SHAPE_CHUNK0 << k;

	if (s->chunk[k])
		return SW_OK;
	s->chunk[k] = malloc(sizeof(*s->chunk[k]) * count);
	if (!s->chunk[k])
		return SW_E_NOMEM;
	s->bytes += sizeof(*s->chunk[k]) * count;
	return SW_OK;
}

sw_status swi_shapes_intern(struct swi_shapes *s, const struct swu_body_rule *br,
                            const uint32_t *saved, uint32_t *id)
{
	struct swu_body_rule shape = *br;
	struct swi_shape *sh;
	uint32_t *copy = NULL;
	uint64_t hash;
	uint32_t k;
	sw_status st;

	shape.lo = shape.hi = shape.lo2 = shape.hi2 = 0;
	/* A JIT registers runs of methods with one shape: one compare, no hash. */
	if (s->last) {
		const struct swi_shape *old = swi_shapes_get(s, s->last - 1);

		if (swi_body_shape_same(&old->rule, old->saved, &shape, saved)) {
			*id = s->last - 1;
			return SW_OK;
		}
	}
	hash = swi_body_shape_hash(&shape, saved);
	if (s->index_cap) {
		for (k = (uint32_t)hash & (s->index_cap - 1); s->index[k]; k = (k + 1) & (s->index_cap - 1)) {
			const struct swi_shape *old = swi_shapes_get(s, s->index[k] - 1);

			if (swi_body_shape_same(&old->rule, old->saved, &shape, saved)) {
				*id = s->index[k] - 1;
				s->last = *id + 1;
				return SW_OK;
			}
		}
	}
	if (s->n >= SWI_SHAPES_MAX)
		return SW_E_LIMIT;
	if ((st = index_grow(s)) != SW_OK || (st = chunk_for_next(s)) != SW_OK)
		return st;
	if (shape.nsaved) {
		copy = malloc(sizeof(*copy) * shape.nsaved);
		if (!copy)
			return SW_E_NOMEM;
		memcpy(copy, saved, sizeof(*copy) * shape.nsaved);
		s->bytes += sizeof(*copy) * shape.nsaved;
	}
	sh = (struct swi_shape *)swi_shapes_get(s, s->n);
	sh->rule = shape;
	sh->saved = copy;
	index_place(s->index, s->index_cap, hash, s->n);
	*id = s->n++;
	s->last = s->n;
	return SW_OK;
}
