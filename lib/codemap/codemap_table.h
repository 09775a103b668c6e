/*
 * codemap_table.h (internal) - many functions registered as one table.
 *
 * A native module holds thousands of functions (libcublasLt: 171,046)
 * whose unwind programs are mostly the same (10,905 distinct).  As code-map
 * entries each would cost its sw_code_info, body rule, page item and a
 * copy of its blob: 150 bytes and more a function, and a registration per
 * function.  A code table is what .eh_frame_hdr is to .eh_frame instead:
 * a sorted array of the functions' starts, 8 bytes each, pointing into
 * one array of the distinct blobs, owned by whoever registered it (the
 * module) and registered in one step.  The code map keeps a short sorted
 * list of tables beside its hash (codemap.c); a lookup that lands in a
 * table's range searches it by binary search and fills in an sw_code_info
 * for the function found.
 *
 * Each distinct blob has its body rule decoded beforehand, as a method's
 * entry has (the walk's common step reads it instead of decoding the
 * blob): the offsets it covers, and its shape (CFA, return address and
 * saved registers), which few blobs do not share with others (libc: 213
 * shapes for 2,230 blobs), kept once.  What the walk gives up: the info found is a copy, with the body
 * rule beside it (struct swi_code_copy), not a pointer into the map, so
 * whoever keeps it beyond the next lookup copies it (iter.h:
 * swi_set_code).
 */
#ifndef SW_LIB_CODEMAP_TABLE_H
#define SW_LIB_CODEMAP_TABLE_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>
#include "swu_format.h"

/*
 * A function: it starts at base + start, and its blob's code size is its
 * size (a blob describes exactly its function: the FDE's range, as
 * .eh_frame_hdr leaves a function's extent to its FDE).
 */
struct swi_code_table_fn {
	uint32_t start;
	uint32_t blob;          /* index into blob_at[], and SWI_TABLE_FN_* flags above it */
};

/*
 * The SW_CODE_* flags a function may carry, as bits 28-31 of its blob
 * word (2^28 blobs: more than a module's SWI_CFI_MAX_BLOB_BYTES can hold).
 */
#define SWI_TABLE_FN_SHIFT      28
#define SWI_TABLE_BLOB_MASK     ((UINT32_C(1) << SWI_TABLE_FN_SHIFT) - 1)
#define SWI_TABLE_FN_PERSONALITY (UINT32_C(1) << 28)
#define SWI_TABLE_FN_ANALYZED   (UINT32_C(1) << 29)
#define SWI_TABLE_FN_TRAMPOLINE (UINT32_C(1) << 30)
#define SWI_TABLE_FN_OUTERMOST  (UINT32_C(1) << 31)

/* Where a blob's body rule holds, and which shape it has. */
struct swi_body_runs {
	uint32_t lo, hi, lo2, hi2;
	uint32_t shape;
};

/*
 * The owner fills it in and keeps it, and everything it points at,
 * unchanged while it is registered and until the map has reclaimed it
 * (sw_codemap_synchronize after the removal).  The distinct blobs lie
 * end to end in `bytes`: blob i is bytes[blob_at[i]] up to
 * bytes[blob_at[i + 1]], so a blob costs the index 4 bytes.
 */
struct swi_code_table {
	uint64_t base;                  /* functions' starts are relative to it */
	uint64_t lo, hi;                /* first function's start, last one's end (absolute) */
	uint32_t nfn, nblob;
	const struct swi_code_table_fn *fn;     /* nfn, sorted by start, not overlapping */
	/*
	 * Where to search (as ORC's lookup table): block[k] is the first
	 * function that ends past lo + (k << block_shift); the function holding
	 * an address of block k is one of block[k] .. block[k + 1].  nblock =
	 * ((hi - lo - 1) >> block_shift) + 2 entries; NULL: search them all.
	 */
	const uint32_t *block;
	uint32_t block_shift, nblock;
	const uint32_t *blob_at;        /* nblob + 1, increasing */
	const uint8_t *bytes;           /* blob_at[nblob] bytes */
	/*
	 * Blob i's body rule: the offsets runs[i] covers (lo == hi: none),
	 * with shape[runs[i].shape], whose saved[] is at saved +
	 * saved_at[runs[i].shape].
	 */
	const struct swi_body_runs *runs;       /* nblob */
	const struct swu_body_rule *shape;      /* nshape, their offsets 0 */
	const uint32_t *saved_at;               /* nshape */
	const uint32_t *saved;
	uint32_t nshape;
	/* The method handle of function i: method_base + i * method_stride. */
	const void *method_base;
	size_t method_stride;
	uint32_t flags;                 /* SW_CODE_* of every function (SW_CODE_NATIVE) */
	/*
	 * A table whose functions are described on demand (a module registered
	 * from its .eh_frame_hdr, lib/native/lazy_cfi.c): its source finds and
	 * describes them, and only base, lo, hi, nfn and flags above are used.
	 * NULL for a built table.
	 */
	const struct swi_code_source *source;
};

/*
 * Both ops are async-signal-safe and bounded, as the table's own search.
 * info may describe a function not yet imported: SW_CODE_NOT_IMPORTED, no
 * blob, no body rule.
 */
struct swi_code_copy;
struct swi_code_source {
	long (*find)(const struct swi_code_source *s, uint64_t ip);
	void (*info)(const struct swi_code_source *s, uint32_t i, struct swi_code_copy *out);
};

/*
 * What a lookup of a code table's function gives: its info, and the body
 * rule of its blob (never NULL).  info comes first: a pointer to it is a
 * pointer to the copy.
 */
struct swi_code_copy {
	sw_code_info info;
	const struct swu_body_rule *body;       /* &rule, or a rule that outlives the copy */
	const uint32_t *saved;
	/*
	 * Where it came from: code table `table`'s function `index`, or, when
	 * index is SWI_COPY_ENTRY, the map's entry of a method (codemap.c);
	 * NULL for neither (the iterator's frame-pointer stand-in).
	 */
	union {
		const struct swi_code_table *table;
		const void *entry;
	};
	uint32_t index;
	struct swu_body_rule rule;      /* the shape with its blob's offsets */
};

/* No function index reaches it: a table spans at most 4 GiB - 1 (swi_code_table_check). */
#define SWI_COPY_ENTRY UINT32_MAX

/* *dst = *src, body pointing at dst's own rule when src's did at its. */
static inline void swi_code_copy_assign(struct swi_code_copy *dst, const struct swi_code_copy *src)
{
	*dst = *src;
	if (src->body == &src->rule)
		dst->body = &dst->rule;
}

/*
 * A blob's code size: the fourth field of every SWU header (magic,
 * version and arch, flags, code size: swu(5)).  0 when the bytes end
 * first; for blobs the map validated when they were registered.
 */
static inline uint32_t swi_blob_code_size(const uint8_t *p, const uint8_t *end)
{
	uint32_t v = 0;

	if (end - p < 3)
		return 0;
	p += 2;
	while (*p & 0x80)               /* the flags: one byte today, skipped as a varint */
		if (++p == end)
			return 0;
	p++;
	for (unsigned shift = 0; p < end && shift < 32; shift += 7, p++) {
		v |= (uint32_t)(*p & 0x7f) << shift;
		if (!(*p & 0x80))
			return v;
	}
	return 0;
}

/* The body rule of code with none (lo == hi). */
extern const struct swu_body_rule swi_no_body_rule;

/*
 * swi_code_table_find - the index of the function of `t` holding ip, or
 * -1.  Async-signal-safe; bounded by log2(nfn) steps.
 */
long swi_code_table_find(const struct swi_code_table *t, uint64_t ip);

/* swi_code_table_size - function i's size: its blob's code size (0: bad blob). */
uint32_t swi_code_table_size(const struct swi_code_table *t, uint32_t i);

/* swi_code_table_info - function i's sw_code_info and body rule, into *out. */
void swi_code_table_info(const struct swi_code_table *t, uint32_t i, struct swi_code_copy *out);

/*
 * swi_code_table_check - whether `t` is a table the map may register:
 * functions sorted and apart, from lo to hi, valid SWU blobs.  SW_OK,
 * SW_E_INVAL, SW_E_LIMIT or SW_E_BADMETA.
 */
sw_status swi_code_table_check(const struct swi_code_table *t);

/* ---- Building one (codemap_table_build.c) ---- */

/* A function as its owner lists it; its blob at bytes + blob_offset. */
struct swi_code_table_input {
	uint64_t start, size;
	uint32_t blob_offset, blob_size;
	uint32_t flags;                 /* SW_CODE_ANALYZED, _SIGNAL_TRAMPOLINE, _OUTERMOST */
};

/* A table and the arrays it points at, owned together. */
struct swi_code_table_store {
	struct swi_code_table table;    /* table.nfn == 0: none */
	struct swi_code_table_fn *fn;
	uint32_t *block;
	uint32_t *blob_at;
	uint8_t *bytes;                 /* the blobs' copy, when one was made */
	struct swi_body_runs *runs;
	struct swu_body_rule *shape;
	uint32_t *saved_at, *saved;
	size_t nsaved;
};

/*
 * swi_code_table_build - the table of `in` (n functions sorted by start,
 * blobs in `bytes`), method handle i at method_base + i * method_stride,
 * `flags` (0 or SW_CODE_NATIVE) on every function.  The distinct blobs
 * stay in `bytes` when they lie end to end there and `copy` is 0 (the
 * owner keeps them while the table is registered); otherwise they are
 * copied.  SW_OK with table.nfn == 0 when the functions do not fit a table
 * (the owner registers them one by one); an error only for memory.
 */
sw_status swi_code_table_build(struct swi_code_table_store *s, const struct swi_code_table_input *in,
                               size_t n, const uint8_t *bytes, int copy, const void *method_base,
                               size_t method_stride, uint32_t flags);

/*
 * swi_code_table_store_bytes - the bytes of the index (the table, its
 * functions and blob offsets), and in *rule_bytes those of the body rules,
 * in *copied those of the blobs' copy.
 */
size_t swi_code_table_store_bytes(const struct swi_code_table_store *s, size_t *rule_bytes,
                                  size_t *copied);

/* swi_code_table_store_free - free what build allocated (NULL-safe fields). */
void swi_code_table_store_free(struct swi_code_table_store *s);

/*
 * In the code map (codemap.c).  Adding fails with SW_E_EXISTS when the
 * table's range overlaps another table's or a method's; removing with
 * SW_E_NOTFOUND when `t` is not registered.  Observers hear of every
 * function.  Writers only: takes the map's writer lock.
 */
sw_status swi_codemap_add_table(sw_codemap *map, const struct swi_code_table *t);
sw_status swi_codemap_remove_table(sw_codemap *map, const struct swi_code_table *t);

#endif /* SW_LIB_CODEMAP_TABLE_H */
