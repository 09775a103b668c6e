/*
 * bench_libgcc.c - the libgcc peers of bench-walk, in a program of their
 * own: libunwind defines _Unwind_Backtrace too, and linked into bench-walk
 * its definition would interpose on libgcc's.  bench-walk runs this
 * program and reads its lines:
 *
 *   managed DEPTH FRAMES NS_UNWIND_BACKTRACE NS_GLIBC_BACKTRACE
 *   native  DEPTH FRAMES NS_UNWIND_BACKTRACE NS_GLIBC_BACKTRACE
 *   lookup  FUNCTIONS NS_PER_LOOKUP FOUND
 *   register FUNCTIONS NS_REGISTER NS_FIRST_LOOKUP NS_DEREGISTER
 *
 * (ns per frame for the walks; the register line's are total times for
 * all the functions: see bench_lookup).  The managed stack is the toy
 * JIT's, as bench-walk walks it; so that libgcc can walk it too, every
 * method and the stub are registered with __register_frame, with CFI
 * written from the very SWU rules the library walks by (one row per
 * offset where the rule changes).  glibc's backtrace() walks through
 * libgcc as well.
 */
#include "config.h"
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unwind.h>
#include "toyjit.h"
#include "bench_common.h"

#define MAX_IPS 12000

void __register_frame(void *begin);
void __deregister_frame(void *begin);
struct dwarf_eh_bases {
	void *tbase, *dbase, *func;
};
const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

static __thread sw_frame *frame_head;
static void *ips[MAX_IPS];

/* ---- CFI from SWU ---- */

struct cfi_buf {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct cfi_buf *b, const void *v, size_t n)
{
	if (b->len + n > b->cap) {
		b->cap = (b->len + n) * 2 + 64;
		b->p = realloc(b->p, b->cap);
		if (!b->p) {
			perror("bench-libgcc");
			exit(2);
		}
	}
	memcpy(b->p + b->len, v, n);
	b->len += n;
}

static void put_u8(struct cfi_buf *b, unsigned v)
{
	uint8_t c = (uint8_t)v;

	put(b, &c, 1);
}

static void put_u32(struct cfi_buf *b, uint32_t v)
{
	put(b, &v, 4);
}

static void put_u64(struct cfi_buf *b, uint64_t v)
{
	put(b, &v, 8);
}

static void put_uleb(struct cfi_buf *b, uint64_t v)
{
	do {
		unsigned c = v & 0x7f;

		v >>= 7;
		put_u8(b, c | (v ? 0x80 : 0));
	} while (v);
}

static void pad8(struct cfi_buf *b, size_t from)
{
	while ((b->len - from) % 8)
		put_u8(b, 0);   /* DW_CFA_nop */
}

static void patch_u32(struct cfi_buf *b, size_t at, uint32_t v)
{
	memcpy(b->p + at, &v, 4);
}

/* x86-64 callee-saved registers (DWARF numbers, as the library's). */
static const unsigned callee_saved[] = { SW_X64_RBX, SW_X64_RBP, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15 };

static int same_rule(const sw_swu_rule *a, const sw_swu_rule *b)
{
	if (a->cfa_reg != b->cfa_reg || a->cfa_offset != b->cfa_offset || a->saved_mask != b->saved_mask)
		return 0;
	for (unsigned i = 0; i < 6; i++)
		if (a->saved_offset[callee_saved[i]] != b->saved_offset[callee_saved[i]])
			return 0;
	return 1;
}

static void put_rule(struct cfi_buf *b, const sw_swu_rule *r)
{
	put_u8(b, 0x0c);                        /* DW_CFA_def_cfa */
	put_uleb(b, r->cfa_reg);
	put_uleb(b, (uint64_t)r->cfa_offset);
	for (unsigned i = 0; i < 6; i++) {
		unsigned reg = callee_saved[i];

		if (r->saved_mask & (1ULL << reg)) {
			put_u8(b, 0x80 | reg);          /* DW_CFA_offset, factored by -8 */
			put_uleb(b, (uint64_t)(-r->saved_offset[reg] / 8));
		} else {
			put_u8(b, 0xc0 | reg);          /* DW_CFA_restore */
		}
	}
}

/*
 * A .eh_frame of one CIE and one FDE for [start, start + size), then the
 * terminator; `rules(offset, &rule)` gives the rule at each offset.
 */
typedef int (*rule_fn)(const void *ctx, uint32_t offset, sw_swu_rule *out);

static void *make_eh_frame(uint64_t start, uint64_t size, rule_fn rules, const void *ctx)
{
	struct cfi_buf b = { 0 };
	size_t cie, fde;
	sw_swu_rule prev, cur;
	uint32_t last = 0;

	cie = b.len;
	put_u32(&b, 0);                         /* length, patched */
	put_u32(&b, 0);                         /* CIE id */
	put_u8(&b, 1);                          /* version */
	put(&b, "zR", 3);
	put_uleb(&b, 1);                        /* code alignment */
	put_u8(&b, 0x78);                       /* data alignment: SLEB -8 */
	put_uleb(&b, 16);                       /* return address column */
	put_uleb(&b, 1);                        /* augmentation data: */
	put_u8(&b, 0x00);                       /* DW_EH_PE_absptr */
	put_u8(&b, 0x0c);                       /* DW_CFA_def_cfa rsp+8 */
	put_uleb(&b, 7);
	put_uleb(&b, 8);
	put_u8(&b, 0x90);                       /* DW_CFA_offset r16 (RA), cfa-8 */
	put_uleb(&b, 1);
	pad8(&b, cie);
	patch_u32(&b, cie, (uint32_t)(b.len - cie - 4));

	fde = b.len;
	put_u32(&b, 0);
	put_u32(&b, (uint32_t)(b.len - cie));   /* CIE pointer: back to the CIE */
	put_u64(&b, start);
	put_u64(&b, size);
	put_uleb(&b, 0);                        /* augmentation data length */
	memset(&prev, 0, sizeof prev);
	prev.cfa_reg = SW_X64_RSP;
	prev.cfa_offset = 8;
	for (uint32_t off = 0; off < size; off++) {
		if (!rules(ctx, off, &cur) || same_rule(&prev, &cur))
			continue;
		if (off > last) {
			put_u8(&b, 0x04);       /* DW_CFA_advance_loc4 */
			put_u32(&b, off - last);
			last = off;
		}
		put_rule(&b, &cur);
		prev = cur;
	}
	pad8(&b, fde);
	patch_u32(&b, fde, (uint32_t)(b.len - fde - 4));
	put_u32(&b, 0);                         /* terminator */
	return b.p;
}

static int swu_rules(const void *ctx, uint32_t offset, sw_swu_rule *out)
{
	const sw_code_info *ci = ctx;

	return sw_swu_decode(ci->unwind, ci->unwind_size, offset, out) == SW_OK;
}

/*
 * The stub has no SWU (the TransitionFrame carries the library's walk
 * across it).  While it calls the helper it is a frame-pointer frame over
 * the six registers it pushed (toyjit_x64.c); that row is the one libgcc
 * needs at the call, so it stands for the whole stub.
 */
static int stub_rules(const void *ctx, uint32_t offset, sw_swu_rule *out)
{
	static const unsigned pushed[] = { SW_X64_RBP, SW_X64_RBX, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15 };

	(void)ctx;
	(void)offset;
	memset(out, 0, sizeof *out);
	out->cfa_reg = SW_X64_RBP;
	out->cfa_offset = 16;
	for (unsigned i = 0; i < 6; i++) {
		out->saved_mask |= 1ULL << pushed[i];
		out->saved_offset[pushed[i]] = -16 - 8 * (int32_t)i;
	}
	return 1;
}

static int register_jit(toyjit *jit, const sw_codemap *map)
{
	for (unsigned i = 0; i < jit->nmethods; i++) {
		sw_code_info ci;

		if (jit->methods[i].native || sw_codemap_find(map, jit->methods[i].start, &ci) != SW_OK)
			continue;
		__register_frame(make_eh_frame(ci.start, ci.size, swu_rules, &ci));
	}
	__register_frame(make_eh_frame(jit->stub_start, jit->stub_size, stub_rules, NULL));
	return 1;
}

/* ---- the walkers ---- */

static _Unwind_Reason_Code count_frame(struct _Unwind_Context *ctx, void *data)
{
	size_t *n = data;

	if (*n < MAX_IPS)
		ips[*n] = (void *)_Unwind_GetIP(ctx);
	(*n)++;
	return _URC_NO_REASON;
}

static size_t unwind_backtrace(void)
{
	size_t n = 0;

	_Unwind_Backtrace(count_frame, &n);
	return n;
}

static size_t glibc_backtrace(void)
{
	return (size_t)backtrace(ips, MAX_IPS);
}

static void time_both(const char *what, unsigned depth)
{
	double ns_u, ns_g;
	size_t fu, fg;
	unsigned iters = bench_iters(depth + 8, 80);

	/* Warm: the first walk finds and sorts the FDEs. */
	unwind_backtrace();
	glibc_backtrace();
	BENCH_BEST(ns_u, fu, iters, unwind_backtrace());
	BENCH_BEST(ns_g, fg, iters, glibc_backtrace());
	printf("%s %u %zu %.2f %.2f\n", what, depth, fu > fg ? fu : fg, ns_u, ns_g);
	(void)fg;
}

static void managed_helper(toyjit *jit, sw_transition_frame *tf)
{
	(void)tf;
	time_both("managed", jit->run_depth);
}

static void native_leaf(void *arg)
{
	time_both("native", *(unsigned *)arg);
}

/* ---- libgcc's lookup among many registered functions ---- */

static int fake_rules(const void *ctx, uint32_t offset, sw_swu_rule *out)
{
	(void)ctx;
	memset(out, 0, sizeof *out);
	out->cfa_reg = SW_X64_RSP;
	out->cfa_offset = offset ? 16 : 8;
	return 1;
}

/*
 * libgcc's registration, lookup and removal with `n` functions, one
 * .eh_frame (a CIE and an FDE) each, as a JIT that registers every method
 * with __register_frame has them.  bench-walk sets its code map's rates of
 * registration and removal with as many methods against these.
 *
 * The .eh_frame data is built before the clock starts: what a JIT writes
 * for its methods is not what the registry costs (bench-walk's blobs are
 * built beforehand too).  Both sides register in ascending address order,
 * as a JIT allocates its code, and remove in the same shuffled order.
 *
 * Registration.  libgcc up to GCC 12 (lists, under one mutex):
 * __register_frame only pushes the object on a list of unseen objects; the
 * work of making its functions findable (reading the FDEs for the address
 * range, sorting them, and placing the object in the address-ordered list
 * that lookups search) waits for the first _Unwind_Find_FDE, which
 * classifies unseen objects until it meets the IP's.  A method added to
 * the code map is findable when sw_codemap_add returns, so libgcc's
 * registration is timed until its functions are findable too:
 * __register_frame for every function, plus a first lookup of the
 * function registered first (the last of the unseen list, so that every
 * object is classified).  Both parts are printed; the calls alone, a
 * malloc and a list push each, make a row that is not a goal.  Registered
 * in ascending order, each object lands at the far end of the ordered
 * list: O(n^2) in all, which is libgcc's real cost for a JIT that
 * registers its methods one by one.  GCC 13's libgcc instead finds each
 * object's range and puts it in a b-tree inside __register_frame (and
 * takes it out in __deregister_frame), so there the first lookup costs
 * little and these ratios come out far smaller.
 *
 * Removal.  __deregister_frame after the lookups, so from the list that
 * lookups search, as a JIT frees code that has run.
 */
static void bench_lookup(unsigned n)
{
	const uint64_t base = 0x7e0000000000ull, size = 128;
	struct dwarf_eh_bases bases;
	unsigned lookups = 256, found = 0;
	uint64_t x = 88172645463325252ull, t0, t_reg, t_first, t_dereg;
	double best = 1e300;
	void **frames = malloc(sizeof(void *) * n);

	if (!frames) {
		perror("bench-libgcc");
		exit(2);
	}
	for (unsigned i = 0; i < n; i++)
		frames[i] = make_eh_frame(base + i * size, size, fake_rules, NULL);
	t0 = bench_now_ns();
	for (unsigned i = 0; i < n; i++)
		__register_frame(frames[i]);
	t_reg = bench_now_ns() - t0;
	/* The first lookup classifies every registered object. */
	t0 = bench_now_ns();
	found += _Unwind_Find_FDE((void *)(uintptr_t)(base + 1), &bases) != NULL;
	t_first = bench_now_ns() - t0;
	for (int run = 0; run < 3; run++) {
		t0 = bench_now_ns();

		for (unsigned i = 0; i < lookups; i++) {
			uint64_t ip;

			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			ip = base + (x % n) * size + x % size;
			found += _Unwind_Find_FDE((void *)(uintptr_t)ip, &bases) != NULL;
		}
		double per = (double)(bench_now_ns() - t0) / lookups;
		if (per < best)
			best = per;
	}
	printf("lookup %u %.1f %u\n", n, best, found);

	/* Remove in a shuffled order, as bench-walk removes from its code map. */
	for (unsigned i = n - 1; i > 0; i--) {
		unsigned j;
		void *tmp;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		j = (unsigned)(x % (i + 1));
		tmp = frames[i], frames[i] = frames[j], frames[j] = tmp;
	}
	t0 = bench_now_ns();
	for (unsigned i = 0; i < n; i++)
		__deregister_frame(frames[i]);
	t_dereg = bench_now_ns() - t0;
	/* Every function is gone: a lookup finds none. */
	if (_Unwind_Find_FDE((void *)(uintptr_t)(base + 1), &bases) != NULL) {
		fprintf(stderr, "bench-libgcc: a function is still registered after __deregister_frame\n");
		exit(1);
	}
	printf("register %u %llu %llu %llu\n", n, (unsigned long long)t_reg, (unsigned long long)t_first,
	       (unsigned long long)t_dereg);
	for (unsigned i = 0; i < n; i++)
		free(frames[i]);
	free(frames);
}

int main(int argc, char **argv)
{
	static const toyjit_shape shapes[] = { TOYJIT_RBP_FRAME, TOYJIT_RBP_FRAME, TOYJIT_BIG_FRAME };
	sw_codemap *map = NULL;
	toyjit *jit = NULL;
	sw_status st;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if ((st = sw_codemap_create(&map)) != SW_OK ||
	    (st = toyjit_create(&jit, map, &frame_head, shapes, 3, managed_helper, NULL)) != SW_OK) {
		fprintf(stderr, "bench-libgcc: setup failed: %s\n", sw_strerror(st));
		return 1;
	}
	register_jit(jit, map);
	/* Arguments: managed depths, then "native" and native depths, then "lookup N". */
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "native")) {
			for (i++; i < argc && strcmp(argv[i], "lookup"); i++) {
				unsigned d = (unsigned)atoi(argv[i]);

				if (d >= 1 && d < MAX_IPS - 16)
					bench_native_recurse(d, native_leaf, &d);
			}
			i--;
		} else if (!strcmp(argv[i], "lookup") && i + 1 < argc) {
			bench_lookup((unsigned)atoi(argv[++i]));
		} else {
			unsigned d = (unsigned)atoi(argv[i]);

			if (d >= 1 && d <= TOYJIT_MAX_DEPTH && toyjit_run(jit, d, -1) != SW_OK)
				return 1;
		}
	}
	/* The registered CFI stays: the process ends here. */
	toyjit_destroy(jit);
	sw_codemap_destroy(map);
	return 0;
}
