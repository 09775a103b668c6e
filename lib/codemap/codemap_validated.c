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

sw_status swi_validate_cached(const uint8_t *blob, uint32_t size, struct swu_body_rule *body,
                              uint32_t *saved)
{
	uint64_t hash;
	struct validated *v;
	sw_status st;

	if (size > SWI_VALIDATED_BLOB)
		return swu_validate_body_rule(blob, size, body, saved);
	hash = swi_blob_hash(blob, size);
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
