/*
 * fuzz.h - what the fuzz targets share: reading structured values from the
 * fuzzer's bytes.
 *
 * Every target is a libFuzzer entry point (LLVMFuzzerTestOneInput).  The
 * same sources build two ways: with clang -fsanitize=fuzzer for `make
 * fuzz`, and with tests/fuzz/standalone_main.c, which replays the corpus
 * and runs a bounded number of random inputs, for `make check`.
 *
 * Input is consumed front to back; once it runs out every read gives 0, so
 * any byte string is a valid input.
 */
#ifndef SW_TESTS_FUZZ_H
#define SW_TESTS_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct fz {
	const uint8_t *p;
	size_t n;
};

static inline void fz_init(struct fz *f, const uint8_t *data, size_t size)
{
	f->p = data;
	f->n = size;
}

static inline uint8_t fz_u8(struct fz *f)
{
	if (!f->n)
		return 0;
	f->n--;
	return *f->p++;
}

/* `bytes` little-endian bytes (at most 8). */
static inline uint64_t fz_le(struct fz *f, unsigned bytes)
{
	uint64_t v = 0;

	for (unsigned i = 0; i < bytes; i++)
		v |= (uint64_t)fz_u8(f) << (8 * i);
	return v;
}

static inline uint16_t fz_u16(struct fz *f) { return (uint16_t)fz_le(f, 2); }
static inline uint32_t fz_u32(struct fz *f) { return (uint32_t)fz_le(f, 4); }
static inline uint64_t fz_u64(struct fz *f) { return fz_le(f, 8); }

/* Copy up to len bytes into out; returns how many were there. */
static inline size_t fz_bytes(struct fz *f, void *out, size_t len)
{
	if (len > f->n)
		len = f->n;
	memcpy(out, f->p, len);
	f->p += len;
	f->n -= len;
	return len;
}

/* One of the three architectures. */
static inline unsigned fz_arch(struct fz *f)
{
	return 1 + fz_u8(f) % 3;     /* SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#endif /* SW_TESTS_FUZZ_H */
