/*
 * remote_target.h - target memory for the tests of the published-map
 * reader (check_remote.c, fuzz_remote.c): a buffer at a chosen address
 * that counts its reads and, when restless, moves the publisher's
 * generation on every read of it, as a publisher faster than the reader
 * would.
 */
#ifndef SW_TESTS_REMOTE_TARGET_H
#define SW_TESTS_REMOTE_TARGET_H

#include <stdint.h>
#include <string.h>
#include <stackwalk.h>

/*
 * The most reads one sw_remote_read may make of an image of `size` bytes,
 * per try: the generation, the descriptor, the snapshot's header; per
 * method a record, a blob and two pieces of a name; a record per thread;
 * the generation again.  A count a mutation raised claims
 * records up to the image's end and one past it, and no more.
 */
#define REMOTE_RECORDS_MAX(size) ((size) / 32u + 1)
#define REMOTE_READ_BOUND(size) \
	((unsigned long)SW_REMOTE_TRIES * (3 + 5 * REMOTE_RECORDS_MAX(size) + 1))

struct remote_target {
	sw_memory inner;            /* the buffer */
	uint64_t base;              /* its target address: the descriptor's */
	uint8_t *img;
	unsigned long reads;
	int restless;
};

static inline void remote_put(uint8_t *img, size_t at, uint64_t v, unsigned size)
{
	for (unsigned i = 0; i < size; i++, v >>= 8)
		img[at + i] = (uint8_t)v;
}

static inline sw_status remote_target_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct remote_target *t = ctx;

	t->reads++;
	if (t->restless && addr == t->base + 8)
		t->img[8] += 2;     /* the generation, one whole update later */
	return sw_memory_read(&t->inner, addr, buf, len);
}

/* `mem` reads `img` (`size` bytes at `base`) through `t`; both set up in place. */
static inline sw_status remote_target_init(struct remote_target *t, sw_memory *mem, uint8_t *img,
                                           size_t size, uint64_t base)
{
	memset(t, 0, sizeof *t);
	t->base = base;
	t->img = img;
	memset(mem, 0, sizeof *mem);
	mem->read = remote_target_read;
	mem->ctx = t;
	return sw_memory_init_buffer(&t->inner, img, size, base);
}

#endif /* SW_TESTS_REMOTE_TARGET_H */
