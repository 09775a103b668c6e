/*
 * codemap_validated.c - this thread's cache of validated blobs (see
 * codemap_validated.h for why).
 */
#include <string.h>
#include "util.h"
#include "codemap_validated.h"

struct validated {
	uint32_t size;                  /* 0: empty */
	uint64_t hash;
	struct swu_body_rule body;
	uint32_t saved[SWI_VALIDATED_SAVED];
	uint8_t blob[SWI_VALIDATED_BLOB];
};

static _Thread_local struct validated validated[SWI_VALIDATED_SLOTS];

/* A hash of the bytes, eight at a time (blobs are tens of bytes). */
static uint64_t blob_hash(const uint8_t *p, uint32_t size)
{
	uint64_t h = size * UINT64_C(0x9E3779B97F4A7C15);
	uint32_t i = 0;

	for (; i + 8 <= size; i += 8)
		h = (h ^ swi_load_le(p + i, 8)) * UINT64_C(0xff51afd7ed558ccd);
	if (i < size) {
		uint64_t tail = 0;

		memcpy(&tail, p + i, size - i);
		h = (h ^ tail) * UINT64_C(0xff51afd7ed558ccd);
	}
	return h ^ (h >> 29);
}

sw_status swi_validate_cached(const uint8_t *blob, uint32_t size, struct swu_body_rule *body,
                              uint32_t *saved)
{
	uint64_t hash;
	struct validated *v;
	sw_status st;

	if (size > SWI_VALIDATED_BLOB)
		return swu_validate_body_rule(blob, size, body, saved);
	hash = blob_hash(blob, size);
	v = &validated[hash & (SWI_VALIDATED_SLOTS - 1)];
	if (v->size == size && v->hash == hash && !memcmp(v->blob, blob, size)) {
		*body = v->body;
		memcpy(saved, v->saved, sizeof(saved[0]) * body->nsaved);
		return SW_OK;
	}
	st = swu_validate_body_rule(blob, size, body, saved);
	if (st != SW_OK || body->nsaved > SWI_VALIDATED_SAVED)
		return st;
	v->size = size;
	v->hash = hash;
	v->body = *body;
	memcpy(v->saved, saved, sizeof(saved[0]) * body->nsaved);
	memcpy(v->blob, blob, size);
	return SW_OK;
}
