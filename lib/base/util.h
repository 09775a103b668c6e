/*
 * util.h - what every part of the library may use: target memory reads
 * through sw_memory, little-endian loads and stores, branch hints.  It
 * knows no architecture, code map or walk.
 */
#ifndef SW_LIB_UTIL_H
#define SW_LIB_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <stackwalk.h>

#define SWI_UNUSED(x) ((void)(x))
#define SWI_LIKELY(x) __builtin_expect(!!(x), 1)
#define SWI_UNLIKELY(x) __builtin_expect(!!(x), 0)

/*
 * Read target memory: straight from the direct window when the whole range
 * lies inside it, else through the accessor's callback.  This is the walk's
 * only way to touch target memory.
 */
static inline sw_status swi_read(const sw_memory *m, uint64_t addr, void *buf, size_t len)
{
	uint64_t end = addr + len;

	if (SWI_LIKELY(end >= addr && addr >= m->direct_lo && end <= m->direct_hi)) {
		memcpy(buf, m->direct_host + (addr - m->direct_lo), len);
		return SW_OK;
	}
	if (!m->read)
		return SW_E_BADADDR;
	return m->read(m->ctx, addr, buf, len);
}

/* Every supported target is little-endian; pointers are 4 or 8 bytes. */
static inline uint64_t swi_load_le(const unsigned char *p, unsigned size)
{
	uint64_t v = 0;

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	/* One load where the host agrees: compilers do not fuse the byte loop. */
	if (size == 8) {
		memcpy(&v, p, 8);
		return v;
	}
	if (size == 4) {
		uint32_t w;

		memcpy(&w, p, 4);
		return w;
	}
#endif
	for (unsigned i = size; i-- > 0;)
		v = (v << 8) | p[i];
	return v;
}

/* A hash of an unwind blob's bytes, eight at a time (blobs are tens of bytes). */
static inline uint64_t swi_blob_hash(const uint8_t *p, uint32_t size)
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

static inline void swi_store_le(unsigned char *p, unsigned size, uint64_t v)
{
	for (unsigned i = 0; i < size; i++, v >>= 8)
		p[i] = (unsigned char)v;
}

/*
 * Binary search over n elements ordered so that `before`, an expression of
 * the index `mid`, holds for a leading run of them: `at` (a size_t) is set
 * to the length of that run, the index of the first element it fails for.
 */
#define SWI_SEARCH(at, n, mid, before)                          \
	do {                                                    \
		size_t swi_hi_ = (n);                           \
		for ((at) = 0; (at) < swi_hi_;) {               \
			size_t mid = (at) + (swi_hi_ - (at)) / 2; \
			if (before)                             \
				(at) = mid + 1;                 \
			else                                    \
				swi_hi_ = mid;                  \
		}                                               \
	} while (0)

/* Read one target pointer (ptr_size bytes, little-endian). */
static inline sw_status swi_read_ptr(const sw_memory *m, unsigned ptr_size,
                                     uint64_t addr, uint64_t *out)
{
	unsigned char b[8];
	sw_status st;

	/* A copy of a constant size is a load; of a variable one, a call. */
	if (ptr_size == 8)
		st = swi_read(m, addr, b, 8);
	else if (ptr_size == 4)
		st = swi_read(m, addr, b, 4);
	else
		st = swi_read(m, addr, b, ptr_size);
	if (st == SW_OK)
		*out = swi_load_le(b, ptr_size);
	return st;
}

static inline sw_status swi_write_ptr(const sw_memory *m, unsigned ptr_size,
                                      uint64_t addr, uint64_t value)
{
	unsigned char b[8];

	swi_store_le(b, ptr_size, value);
	return sw_memory_write(m, addr, b, ptr_size);
}

/* Is this the built-in accessor for this process's own memory? */
int swi_memory_is_local(const sw_memory *m);

#endif /* SW_LIB_UTIL_H */
