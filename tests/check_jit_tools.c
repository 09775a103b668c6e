/*
 * check_jit_tools.c - what perf and gdb are given about JIT code.
 *
 *  - CFI from SWU: every toy-JIT method (and its described thunk and
 *    stubs), and every method of synthetic stacks of x86-64, i386 and
 *    arm64, is turned into the ELF object gdb gets (.debug_frame) and the
 *    one perf inject makes of a jitdump record (.eh_frame and
 *    .eh_frame_hdr); libdw reads the CFI back, and at EVERY instruction
 *    offset the CFA and every register's rule must be SWU's own rule.
 *  - Code map observers hear every add and remove, in order.
 *  - sw_perf's perf-PID.map and jitdump parse as perf reads them: header,
 *    unwinding record, code load record with the name and the very code
 *    bytes, close record.
 *  - sw_gdbjit links one object per method on __jit_debug_descriptor with
 *    the method's symbol and unlinks it on removal.
 *  - Bad input gives SW_E_* codes.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dwarf.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <elfutils/libdw.h>
#include <stackwalk.h>
#include "arch.h"
#include "jit_elf.h"
#include "swu_to_cfi.h"
#include "toyjit.h"
#include "rounds.h"

#define BIT(r) (1ULL << (r))

static __thread sw_frame *frame_head;

/* ---- CFI read back with libdw, compared with SWU ---- */

struct cfi_reader {
	uint8_t *image;
	Elf *elf;
	Dwarf *dw;
	Dwarf_CFI *cfi;
};

static void reader_open(struct cfi_reader *r, const sw_code_info *info, unsigned what)
{
	size_t size = 0;

	memset(r, 0, sizeof(*r));
	ck_assert_int_eq(swi_jit_elf_build(info, "method", what, &r->image, &size), SW_OK);
	r->elf = elf_memory((char *)r->image, size);
	ck_assert_ptr_nonnull(r->elf);
	if (what == SWI_JIT_ELF_DEBUG_FRAME) {
		r->dw = dwarf_begin_elf(r->elf, DWARF_C_READ, NULL);
		ck_assert_msg(r->dw != NULL, "libdw: %s", dwarf_errmsg(-1));
		r->cfi = dwarf_getcfi(r->dw);
	} else {
		r->cfi = dwarf_getcfi_elf(r->elf);
	}
	ck_assert_msg(r->cfi != NULL, "no CFI: %s", dwarf_errmsg(-1));
}

static void reader_close(struct cfi_reader *r)
{
	if (r->dw)
		dwarf_end(r->dw);
	else
		dwarf_cfi_end(r->cfi);
	elf_end(r->elf);
	free(r->image);
}

/* libdw's form of "saved at [CFA + off]": call_frame_cfa, plus_uconst off. */
static int is_cfa_slot(const Dwarf_Op *ops, size_t n, int32_t off)
{
	return n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst &&
	       (int32_t)(int64_t)ops[1].number == off;
}

/* "Saved at [base + off]" (DW_CFA_expression breg): libdw pushes the CFA first. */
static int is_reg_slot(const Dwarf_Op *ops, size_t n, int base, int32_t off)
{
	if (n != 2 || ops[0].atom != DW_OP_call_frame_cfa)
		return 0;
	if (ops[1].atom >= DW_OP_breg0 && ops[1].atom <= DW_OP_breg31)
		return (int)(ops[1].atom - DW_OP_breg0) == base && (int32_t)(int64_t)ops[1].number == off;
	return ops[1].atom == DW_OP_bregx && (int)ops[1].number == base &&
	       (int32_t)(int64_t)ops[1].number2 == off;
}

static void check_cfa(Dwarf_Frame *f, const sw_swu_rule *rule, sw_arch arch, const char *where)
{
	Dwarf_Op *ops = NULL;
	size_t n = 0;
	int dw = swu_cfi_dwarf_reg(arch, rule->cfa_reg);

	ck_assert_msg(dwarf_frame_cfa(f, &ops, &n) == 0, "%s: no CFA", where);
	if (rule->cfa_deref) {
		ck_assert_msg(n == 2 && ops[1].atom == DW_OP_deref, "%s: CFA is not deref'd", where);
		return;
	}
	ck_assert_msg(n == 1 && ops[0].atom == DW_OP_bregx, "%s: CFA is not reg + offset", where);
	ck_assert_msg((int)ops[0].number == dw && (int32_t)(int64_t)ops[0].number2 == rule->cfa_offset,
	              "%s: CFA is r%d%+" PRId64 ", SWU says r%d%+d", where, (int)ops[0].number,
	              (int64_t)ops[0].number2, dw, rule->cfa_offset);
}

static void check_register(Dwarf_Frame *f, const struct swi_arch *a, const sw_swu_rule *rule,
                           unsigned r, const char *where)
{
	Dwarf_Op mem[3], *ops = NULL;
	size_t n = 0;
	int dw = swu_cfi_dwarf_reg(a->arch, r);

	if (dw < 0 || r == a->sp_reg)
		return;
	ck_assert_msg(dwarf_frame_register(f, dw, mem, &ops, &n) == 0, "%s: r%u unreadable", where, r);
	if (r == a->ip_reg) {
		if (!a->entry_ra_in_lr)
			ck_assert_msg(is_cfa_slot(ops, n, rule->ra_offset),
			              "%s: the return address is not at CFA%+d", where, rule->ra_offset);
		return;
	}
	if (rule->saved_mask & BIT(r)) {
		if (rule->saved_base[r] == SW_SWU_BASE_CFA)
			ck_assert_msg(is_cfa_slot(ops, n, rule->saved_offset[r]),
			              "%s: r%u is not saved at CFA%+d", where, r, rule->saved_offset[r]);
		else
			ck_assert_msg(is_reg_slot(ops, n, swu_cfi_dwarf_reg(a->arch, rule->saved_base[r]),
			                          rule->saved_offset[r]),
			              "%s: r%u is not saved at r%u%+d", where, r, rule->saved_base[r],
			              rule->saved_offset[r]);
	} else if (swi_savable_regs(a) & BIT(r)) {
		ck_assert_msg(n == 0 && ops == NULL, "%s: r%u should hold its caller's value", where, r);
	}
}

/*
 * Every offset of the method: libdw's row against sw_swu_decode's rule.
 * Synthetic methods can be long bodies; with `sparse`, offsets deep in a
 * body of more than 2 KiB are sampled (every 61st) rather than all read.
 */
static unsigned check_method(const sw_code_info *info, unsigned what, const char *name, int sparse)
{
	struct cfi_reader rd;
	sw_swu_header h;
	const struct swi_arch *a;
	unsigned checked = 0;

	ck_assert_int_eq(sw_swu_decode_header(info->unwind, info->unwind_size, &h), SW_OK);
	a = swi_arch_get((sw_arch)h.arch);
	ck_assert_ptr_nonnull(a);
	reader_open(&rd, info, what);
	for (uint32_t off = 0; off < info->size; off++) {
		sw_swu_rule rule;
		Dwarf_Frame *f = NULL;
		Dwarf_Addr start, end;
		bool signal;
		char where[160];

		snprintf(where, sizeof(where), "%s %s +%#x", name,
		         what == SWI_JIT_ELF_DEBUG_FRAME ? ".debug_frame" : ".eh_frame", off);
		ck_assert_int_eq(sw_swu_decode(info->unwind, info->unwind_size, off, &rule), SW_OK);
		if (sparse && rule.region == SW_SWU_BODY && info->size > 2048 && off % 61 &&
		    off > 1024 && off + 1024 < info->size)
			continue;
		ck_assert_msg(dwarf_cfi_addrframe(rd.cfi, info->start + off, &f) == 0,
		              "%s: no FDE: %s", where, dwarf_errmsg(-1));
		ck_assert_msg(dwarf_frame_info(f, &start, &end, &signal) ==
		              (int)(a->entry_ra_in_lr ? (unsigned)a->lr_reg : a->ip_reg),
		              "%s: wrong return address column", where);
		ck_assert_msg(start >= info->start && end <= info->start + info->size,
		              "%s: the row spills outside the method", where);
		check_cfa(f, &rule, a->arch, where);
		for (unsigned r = 0; r < a->nregs && r < 64; r++)
			check_register(f, a, &rule, r, where);
		free(f);
		checked++;
	}
	reader_close(&rd);
	return checked;
}

static void check_both(const sw_code_info *info, const char *name)
{
	ck_assert_uint_eq(check_method(info, SWI_JIT_ELF_DEBUG_FRAME, name, 0), info->size);
	ck_assert_uint_eq(check_method(info, SWI_JIT_ELF_EH_FRAME, name, 0), info->size);
}

static unsigned check_both_sparse(const sw_code_info *info, const char *name)
{
	unsigned n = check_method(info, SWI_JIT_ELF_DEBUG_FRAME, name, 1);

	ck_assert_uint_eq(check_method(info, SWI_JIT_ELF_EH_FRAME, name, 1), n);
	return n;
}

static void quiet_helper(toyjit *jit, sw_transition_frame *tf)
{
	(void)jit;
	(void)tf;
}

static const toyjit_shape all_shapes[] = {
	TOYJIT_RBP_FRAME, TOYJIT_NO_FP, TOYJIT_BIG_FRAME, TOYJIT_MOV_SAVES, TOYJIT_OFFSET_FP
};

START_TEST(cfi_matches_swu_toyjit)
{
	sw_codemap *map;
	toyjit *jit;
	unsigned methods = 0;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(toyjit_create(&jit, map, &frame_head, all_shapes, 5, quiet_helper, NULL), SW_OK);
	for (unsigned k = 0; k < jit->nmethods; k++) {
		sw_code_info info;

		ck_assert_int_eq(sw_codemap_find(map, jit->methods[k].start, &info), SW_OK);
		check_both(&info, jit->methods[k].name);
		methods++;
	}
	if (jit->thrower.size) {
		sw_code_info info;

		ck_assert_int_eq(sw_codemap_find(map, jit->thrower.start, &info), SW_OK);
		check_both(&info, "thrower");
		ck_assert_int_eq(sw_codemap_find(map, jit->funclet.start, &info), SW_OK);
		check_both(&info, "funclet");
		methods += 2;
	}
	/* The thunk and the stubs, which the x86-64 back end describes. */
	ck_assert_uint_ge(jit->nnative, 2);
	for (unsigned k = 0; k < jit->nnative; k++) {
		sw_code_info info = { 0 };

		info.start = jit->native[k].start;
		info.size = jit->native[k].size;
		info.unwind = jit->native[k].swu;
		info.unwind_size = (uint32_t)jit->native[k].swu_size;
		check_both(&info, jit->native[k].name);
	}
	ck_assert_uint_ge(methods, 5);
	toyjit_destroy(jit);
	sw_codemap_destroy(map);
}
END_TEST

/* Synthetic stacks: random method shapes of every architecture. */
static void cfi_matches_swu_synth(sw_arch arch)
{
	sw_synth_params p;
	unsigned methods = 0, offsets = 0;

	sw_synth_params_default(&p);
	/* Six stacks, two in the sanitized run (about ten methods each). */
	for (uint64_t seed = 1; seed <= (test_fast() ? 2 : 6); seed++) {
		sw_synth *s;
		sw_synth_frame frames[64];
		uint64_t seen[64];
		size_t n, nseen = 0;

		ck_assert_int_eq(sw_synth_create(&s, arch, seed, &p), SW_OK);
		n = sw_synth_expected(s, 0, frames, 64);
		for (size_t i = 0; i < n && i < 64; i++) {
			const sw_codemap *map = sw_synth_thread(s)->codemap;
			sw_code_info info;
			size_t k;
			char name[64];

			if (frames[i].state != SW_STATE_FRAMELESS ||
			    sw_codemap_find(map, frames[i].ip, &info) != SW_OK)
				continue;
			for (k = 0; k < nseen && seen[k] != info.start; k++)
				;
			if (k < nseen || nseen == 64)
				continue;
			seen[nseen++] = info.start;
			snprintf(name, sizeof(name), "%s seed %" PRIu64 " method %#" PRIx64,
			         sw_arch_name(arch), seed, info.start);
			offsets += check_both_sparse(&info, name);
			methods++;
		}
		sw_synth_destroy(s);
	}
	ck_assert_uint_ge(methods, 6);
	printf("%s: CFI matches SWU at %u offsets of %u synthetic methods\n", sw_arch_name(arch),
	       offsets, methods);
}

START_TEST(cfi_matches_swu_synth_x64) { cfi_matches_swu_synth(SW_ARCH_X64); }
END_TEST
START_TEST(cfi_matches_swu_synth_x86) { cfi_matches_swu_synth(SW_ARCH_X86); }
END_TEST
START_TEST(cfi_matches_swu_synth_arm64) { cfi_matches_swu_synth(SW_ARCH_ARM64); }
END_TEST

/* ---- A small method of our own: code bytes in memory, a valid blob ---- */

/* push rbp; mov rbp, rsp; push rbx; (body) ; pop rbx; pop rbp; ret */
static const uint8_t tiny_code[] = {
	0x55, 0x48, 0x89, 0xe5, 0x53,
	0x90, 0x90, 0x90, 0x90,
	0x5b, 0x5d, 0xc3
};
static uint8_t tiny_blob[64];
static size_t tiny_blob_size;

static sw_code_info tiny_method(uint64_t start, void *handle)
{
	sw_code_info info;

	if (!tiny_blob_size) {
		sw_swu_builder *b;

		ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
		ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RBP), SW_OK);
		ck_assert_int_eq(sw_swu_set_frame(b, 4, SW_X64_RBP, 0), SW_OK);
		ck_assert_int_eq(sw_swu_push_reg(b, 5, SW_X64_RBX), SW_OK);
		ck_assert_int_eq(sw_swu_end_prolog(b, 5), SW_OK);
		ck_assert_int_eq(sw_swu_epilog_begin(b, 9), SW_OK);
		ck_assert_int_eq(sw_swu_pop_reg(b, 10, SW_X64_RBX), SW_OK);
		ck_assert_int_eq(sw_swu_pop_reg(b, 11, SW_X64_RBP), SW_OK);
		ck_assert_int_eq(sw_swu_epilog_end(b, 12), SW_OK);
		ck_assert_int_eq(sw_swu_finish(b, sizeof(tiny_code), tiny_blob, sizeof(tiny_blob),
		                               &tiny_blob_size), SW_OK);
		sw_swu_builder_destroy(b);
	}
	memset(&info, 0, sizeof(info));
	info.method = handle;
	info.start = start;
	info.size = sizeof(tiny_code);
	info.unwind = tiny_blob;
	info.unwind_size = (uint32_t)tiny_blob_size;
	return info;
}

static void name_from_handle(void *data, const sw_code_info *info, char *buf, size_t cap)
{
	(void)data;
	snprintf(buf, cap, "%s", (const char *)info->method);
}

START_TEST(cfi_tiny_and_bad_blobs)
{
	sw_code_info info = tiny_method(0x400000, NULL);
	uint8_t bad[64], *image = NULL;
	size_t size = 7;
	uint8_t buf[256];
	struct swu_writer w = { buf, sizeof(buf), 0 };

	check_both(&info, "tiny");
	/* A corrupt blob is refused, and nothing is returned. */
	memcpy(bad, tiny_blob, tiny_blob_size);
	bad[0] ^= 0xff;
	info.unwind = bad;
	ck_assert_int_eq(swi_jit_elf_build(&info, "m", SWI_JIT_ELF_DEBUG_FRAME, &image, &size),
	                 SW_E_BADMETA);
	ck_assert_ptr_null(image);
	ck_assert_uint_eq(size, 0);
	ck_assert_int_eq(swu_to_cfi(bad, tiny_blob_size, SWU_CFI_EH_FRAME, 0, 0, &w, NULL), SW_E_BADMETA);
	ck_assert_int_eq(swu_to_cfi(tiny_blob, tiny_blob_size - 1, SWU_CFI_DEBUG_FRAME, 0, 0, &w, NULL) < 0, 1);
	/* A code size that is not the blob's. */
	info = tiny_method(0x400000, NULL);
	info.size = 100;
	ck_assert_int_eq(swi_jit_elf_build(&info, "m", SWI_JIT_ELF_DEBUG_FRAME, &image, &size), SW_E_INVAL);
	/* An .eh_frame more than 2 GiB away from its code cannot be addressed. */
	w.len = 0;
	ck_assert_int_eq(swu_to_cfi(tiny_blob, tiny_blob_size, SWU_CFI_EH_FRAME, 0x400000,
	                            0x400000 + (1ull << 33), &w, NULL), SW_E_LIMIT);
}
END_TEST

/*
 * Corrupted blobs: every single-byte change of the toy JIT's blobs either
 * is refused with a status or still gives CFI that matches the (changed)
 * blob's own rules: never a crash or a read outside the blob.
 */
START_TEST(cfi_corrupted_blobs)
{
	sw_codemap *map;
	toyjit *jit;
	unsigned refused = 0, accepted = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(toyjit_create(&jit, map, &frame_head, all_shapes, 5, quiet_helper, NULL), SW_OK);
	for (unsigned k = 0; k < jit->nmethods; k++) {
		const toyjit_method *m = &jit->methods[k];

		for (unsigned round = 0; round < test_rounds(200); round++) {
			uint8_t *blob = malloc(m->swu_size), *image = NULL;
			sw_code_info info = { 0 };
			size_t size = 0;
			sw_status st;

			memcpy(blob, m->swu, m->swu_size);
			seed = seed * 6364136223846793005ull + 1442695040888963407ull;
			blob[(seed >> 33) % m->swu_size] ^= (uint8_t)(1u << ((seed >> 20) & 7));
			info.start = m->start;
			info.size = m->size;
			info.unwind = blob;
			info.unwind_size = (uint32_t)m->swu_size;
			st = swi_jit_elf_build(&info, "m", SWI_JIT_ELF_DEBUG_FRAME | SWI_JIT_ELF_EH_FRAME,
			                       &image, &size);
			if (st == SW_OK && sw_swu_validate(blob, m->swu_size) == SW_OK) {
				free(image);
				check_both(&info, "corrupted");
				accepted++;
			} else {
				ck_assert_int_lt(st == SW_OK ? sw_swu_validate(blob, m->swu_size) : st, 0);
				free(image);
				refused++;
			}
			free(blob);
		}
	}
	ck_assert_uint_gt(refused, 0);
	printf("corrupted blobs: %u refused, %u still valid (their CFI checked)\n", refused, accepted);
	toyjit_destroy(jit);
	sw_codemap_destroy(map);
}
END_TEST

/* ---- Observers ---- */

struct heard {
	unsigned n;
	sw_codemap_event event[8];
	sw_code_info info[8];
};

static void record(void *data, sw_codemap_event event, const sw_code_info *info)
{
	struct heard *h = data;

	if (h->n < 8) {
		h->event[h->n] = event;
		h->info[h->n] = *info;
		if (event == SW_CODEMAP_ADDED)
			ck_assert_int_eq(sw_swu_validate(info->unwind, info->unwind_size), SW_OK);
	}
	h->n++;
}

START_TEST(observer_hears_adds_and_removes)
{
	sw_codemap *map;
	struct heard h = { 0 }, h2 = { 0 };
	sw_codemap_observer obs = { record, &h, NULL }, obs2 = { record, &h2, NULL };
	sw_code_info a = tiny_method(0x1000, (void *)"a"), b = tiny_method(0x2000, (void *)"b");

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_codemap_observe(NULL, &obs), SW_E_INVAL);
	ck_assert_int_eq(sw_codemap_observe(map, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_codemap_unobserve(map, &obs), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_codemap_observe(map, &obs), SW_OK);
	ck_assert_int_eq(sw_codemap_observe(map, &obs), SW_E_EXISTS);
	ck_assert_int_eq(sw_codemap_add(map, &a), SW_OK);
	ck_assert_int_eq(sw_codemap_observe(map, &obs2), SW_OK);
	ck_assert_int_eq(sw_codemap_add(map, &b), SW_OK);
	/* A failed change is not announced. */
	ck_assert_int_eq(sw_codemap_add(map, &b), SW_E_EXISTS);
	ck_assert_int_eq(sw_codemap_remove(map, 0x1001), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_codemap_remove(map, 0x1000), SW_OK);
	ck_assert_int_eq(sw_codemap_unobserve(map, &obs), SW_OK);
	ck_assert_int_eq(sw_codemap_remove(map, 0x2000), SW_OK);

	ck_assert_uint_eq(h.n, 3);
	ck_assert_int_eq(h.event[0], SW_CODEMAP_ADDED);
	ck_assert_uint_eq(h.info[0].start, 0x1000);
	ck_assert_str_eq((const char *)h.info[0].method, "a");
	ck_assert_int_eq(h.event[1], SW_CODEMAP_ADDED);
	ck_assert_uint_eq(h.info[1].start, 0x2000);
	ck_assert_int_eq(h.event[2], SW_CODEMAP_REMOVED);
	ck_assert_uint_eq(h.info[2].start, 0x1000);
	ck_assert_uint_eq(h.info[2].size, sizeof(tiny_code));
	ck_assert_ptr_null(h.info[2].unwind);
	ck_assert_str_eq((const char *)h.info[2].method, "a");
	/* The second observer came later and stayed. */
	ck_assert_uint_eq(h2.n, 3);
	ck_assert_uint_eq(h2.info[0].start, 0x2000);
	ck_assert_uint_eq(h2.info[2].start, 0x2000);
	ck_assert_int_eq(h2.event[2], SW_CODEMAP_REMOVED);
	ck_assert_int_eq(sw_codemap_unobserve(map, &obs2), SW_OK);
	sw_codemap_destroy(map);
}
END_TEST

/* ---- perf ---- */

static char *read_file(const char *path, size_t *size)
{
	FILE *f = fopen(path, "rb");
	char *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	n = ftell(f);
	rewind(f);
	buf = malloc((size_t)n + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	buf[n] = '\0';
	fclose(f);
	*size = (size_t)n;
	return buf;
}

static uint32_t u32_at(const char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static uint64_t u64_at(const char *p) { uint64_t v; memcpy(&v, p, 8); return v; }

/* Where the perf test's methods are: the managed one at +32, a stub at +0. */
static uint8_t code_area[64];

START_TEST(perf_files_as_perf_reads_them)
{
	char dir[] = "/tmp/sw-perf-XXXXXX", want[256], *text, *dump;
	sw_codemap *map;
	sw_perf *p;
	sw_code_info info = tiny_method((uintptr_t)(code_area + 32), (void *)"tiny_method");
	sw_code_info stub = tiny_method((uintptr_t)code_area, NULL);
	size_t size, off;
	unsigned loads = 0, unwinds = 0, closes = 0;
	uint64_t mapped[2] = { 0, 0 };

	memcpy(code_area, tiny_code, sizeof(tiny_code));
	memcpy(code_area + 32, tiny_code, sizeof(tiny_code));
	ck_assert_ptr_nonnull(mkdtemp(dir));
	ck_assert_int_eq(sw_perf_create(&p, 0, dir, NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_perf_create(&p, 8, dir, NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_perf_create(NULL, SW_PERF_MAP, dir, NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_perf_create(&p, SW_PERF_MAP, "/nonexistent/dir", NULL, NULL), SW_E_IO);
	ck_assert_ptr_null(p);
	ck_assert_str_eq(sw_strerror(SW_E_IO), "a file could not be created or written");

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_perf_create(&p, SW_PERF_MAP | SW_PERF_JITDUMP, dir, name_from_handle, NULL),
	                 SW_OK);
	ck_assert_int_eq(sw_perf_attach(p, map), SW_OK);
	ck_assert_int_eq(sw_perf_attach(p, map), SW_E_EXISTS);
	ck_assert_int_eq(sw_codemap_add(map, &info), SW_OK);
	ck_assert_int_eq(sw_perf_status(p), SW_OK);
	/* A bad blob, and no blob for the jitdump, are refused. */
	{
		sw_code_info bad = stub;
		uint8_t blob[64];

		memcpy(blob, tiny_blob, tiny_blob_size);
		blob[0] = 0;
		bad.unwind = blob;
		ck_assert_int_eq(sw_perf_add(p, &bad, "bad"), SW_E_BADMETA);
		bad.unwind = NULL;
		ck_assert_int_eq(sw_perf_add(p, &bad, "no blob"), SW_E_INVAL);
	}
	/*
	 * A stub given directly, 32 bytes before the method: its unwind tables
	 * would be mapped over the method, so they are not mapped at all.
	 */
	ck_assert_int_eq(sw_perf_add(p, &stub, "the_stub"), SW_OK);
	ck_assert_int_eq(sw_perf_add(NULL, &stub, "x"), SW_E_INVAL);
	ck_assert_ptr_null(sw_perf_path(p, 4));
	ck_assert_int_eq(sw_perf_detach(p), SW_OK);
	ck_assert_int_eq(sw_perf_detach(p), SW_E_NOTFOUND);

	/* perf-PID.map: "start size name", hexadecimal. */
	snprintf(want, sizeof(want), "%s/perf-%ld.map", dir, (long)getpid());
	ck_assert_str_eq(sw_perf_path(p, SW_PERF_MAP), want);
	text = read_file(want, &size);
	snprintf(want, sizeof(want), "%" PRIx64 " %zx tiny_method\n%" PRIx64 " %zx the_stub\n",
	         (uint64_t)(uintptr_t)(code_area + 32), sizeof(tiny_code),
	         (uint64_t)(uintptr_t)code_area, sizeof(tiny_code));
	ck_assert_str_eq(text, want);
	free(text);

	snprintf(want, sizeof(want), "%s/jit-%ld.dump", dir, (long)getpid());
	ck_assert_str_eq(sw_perf_path(p, SW_PERF_JITDUMP), want);
	sw_perf_destroy(p);
	dump = read_file(want, &size);
	ck_assert_uint_ge(size, 40);
	ck_assert_uint_eq(u32_at(dump), 0x4A695444u);
	ck_assert_uint_eq(u32_at(dump + 4), 1);
	ck_assert_uint_eq(u32_at(dump + 8), 40);
	ck_assert_uint_eq(u32_at(dump + 12), 62);       /* EM_X86_64 */
	ck_assert_uint_eq(u32_at(dump + 20), (uint32_t)getpid());
	for (off = 40; off + 16 <= size;) {
		uint32_t id = u32_at(dump + off), total = u32_at(dump + off + 4);
		const char *body = dump + off + 16;

		ck_assert_uint_ge(total, 16);
		ck_assert_uint_le(off + total, size);
		ck_assert_msg(closes == 0, "a record after JIT_CODE_CLOSE");
		if (id == 4) {                          /* JIT_CODE_UNWINDING_INFO */
			uint64_t usize = u64_at(body), hdr = u64_at(body + 8);

			ck_assert_uint_eq(hdr, SWU_CFI_EH_FRAME_HDR_SIZE);
			ck_assert_uint_gt(usize, hdr);
			ck_assert_uint_ge(total, 16 + 24 + usize);
			ck_assert_uint_eq(total % 8, 0);
			ck_assert_uint_eq(unwinds, loads);      /* each precedes its load */
			ck_assert_uint_lt(unwinds, 2);
			mapped[unwinds] = u64_at(body + 16);
			if (mapped[unwinds])
				ck_assert_uint_ge(mapped[unwinds], usize);
			unwinds++;
		} else if (id == 0) {                   /* JIT_CODE_LOAD */
			const char *name = body + 40;
			const uint8_t *at = loads ? code_area : code_area + 32;

			ck_assert_uint_eq(u32_at(body), (uint32_t)getpid());
			ck_assert_uint_eq(u64_at(body + 8), (uintptr_t)at);
			ck_assert_uint_eq(u64_at(body + 16), (uintptr_t)at);
			ck_assert_uint_eq(u64_at(body + 24), sizeof(tiny_code));
			ck_assert_uint_eq(u64_at(body + 32), loads);
			ck_assert_str_eq(name, loads ? "the_stub" : "tiny_method");
			ck_assert_uint_eq(total, 16 + 40 + strlen(name) + 1 + sizeof(tiny_code));
			ck_assert_mem_eq(name + strlen(name) + 1, tiny_code, sizeof(tiny_code));
			loads++;
		} else {
			ck_assert_uint_eq(id, 3);               /* JIT_CODE_CLOSE */
			closes++;
		}
		off += total;
	}
	ck_assert_uint_eq(off, size);
	ck_assert_uint_eq(loads, 2);
	ck_assert_uint_eq(unwinds, 2);
	ck_assert_uint_eq(closes, 1);
	ck_assert_uint_gt(mapped[0], 0);        /* nothing after the method */
	ck_assert_uint_eq(mapped[1], 0);        /* the method after the stub */
	free(dump);
	unlink(want);
	snprintf(want, sizeof(want), "%s/perf-%ld.map", dir, (long)getpid());
	unlink(want);
	rmdir(dir);
	sw_codemap_destroy(map);
}
END_TEST

/* ---- gdb ---- */

static size_t descriptor_length(void)
{
	size_t n = 0;

	for (const sw_gdbjit_entry *e = __jit_debug_descriptor.first_entry; e; e = e->next_entry) {
		ck_assert_ptr_eq(e->next_entry ? e->next_entry->prev_entry : e, e);
		n++;
	}
	return n;
}

/* The object's one function symbol: its name, address and size. */
static void check_symfile(const sw_gdbjit_entry *e, const char *name, uint64_t start, uint64_t size)
{
	Elf *elf = elf_memory((char *)e->symfile_addr, e->symfile_size);
	Elf_Scn *scn = NULL;
	int found = 0;

	ck_assert_ptr_nonnull(elf);
	while ((scn = elf_nextscn(elf, scn)) != NULL) {
		GElf_Shdr sh;
		Elf_Data *d;

		gelf_getshdr(scn, &sh);
		if (sh.sh_type != SHT_SYMTAB)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 1; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;

			gelf_getsym(d, (int)i, &sym);
			ck_assert_str_eq(elf_strptr(elf, sh.sh_link, sym.st_name), name);
			ck_assert_uint_eq(sym.st_value, start);
			ck_assert_uint_eq(sym.st_size, size);
			ck_assert_int_eq(GELF_ST_TYPE(sym.st_info), STT_FUNC);
			found++;
		}
	}
	ck_assert_int_eq(found, 1);
	elf_end(elf);
}

START_TEST(gdbjit_links_objects)
{
	sw_codemap *map;
	sw_gdbjit *g;
	sw_code_info a = tiny_method(0x7000, (void *)"managed_a");
	sw_code_info stub = tiny_method(0x8000, NULL);
	size_t before = descriptor_length();

	ck_assert_uint_eq(__jit_debug_descriptor.version, 1);
	ck_assert_int_eq(sw_gdbjit_create(NULL, NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_gdbjit_create(&g, name_from_handle, NULL), SW_OK);
	ck_assert_int_eq(sw_gdbjit_detach(g), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_gdbjit_attach(g, map), SW_OK);
	ck_assert_int_eq(sw_gdbjit_attach(g, map), SW_E_EXISTS);

	ck_assert_int_eq(sw_codemap_add(map, &a), SW_OK);
	ck_assert_int_eq(sw_gdbjit_status(g), SW_OK);
	ck_assert_uint_eq(descriptor_length(), before + 1);
	ck_assert_int_eq(__jit_debug_descriptor.action_flag, SW_GDBJIT_NOACTION);
	check_symfile(__jit_debug_descriptor.first_entry, "managed_a", 0x7000, sizeof(tiny_code));

	ck_assert_int_eq(sw_gdbjit_add(g, &stub, "the_stub"), SW_OK);
	ck_assert_int_eq(sw_gdbjit_add(g, &stub, "the_stub"), SW_E_EXISTS);
	ck_assert_uint_eq(descriptor_length(), before + 2);
	check_symfile(__jit_debug_descriptor.first_entry, "the_stub", 0x8000, sizeof(tiny_code));
	{
		uint8_t bad[64];
		sw_code_info b = tiny_method(0x9000, NULL);

		memcpy(bad, tiny_blob, tiny_blob_size);
		bad[0] = 0;
		b.unwind = bad;
		ck_assert_int_eq(sw_gdbjit_add(g, &b, "bad"), SW_E_BADMETA);
		ck_assert_uint_eq(descriptor_length(), before + 2);
	}

	/* Removed from the map: unlinked. */
	ck_assert_int_eq(sw_codemap_remove(map, 0x7000), SW_OK);
	ck_assert_uint_eq(descriptor_length(), before + 1);
	ck_assert_int_eq(sw_gdbjit_remove(g, 0x7000), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_gdbjit_remove(g, 0x8000), SW_OK);
	ck_assert_uint_eq(descriptor_length(), before);

	/* Destroy unlinks whatever is left and detaches. */
	ck_assert_int_eq(sw_codemap_add(map, &a), SW_OK);
	ck_assert_uint_eq(descriptor_length(), before + 1);
	sw_gdbjit_destroy(g);
	ck_assert_uint_eq(descriptor_length(), before);
	ck_assert_int_eq(sw_codemap_remove(map, 0x7000), SW_OK);
	sw_codemap_destroy(map);
	__jit_debug_register_code();            /* a plain call, for gdb's breakpoint */
}
END_TEST

static Suite *jit_tools_suite(void)
{
	Suite *s = suite_create("jit_tools");
	TCase *tc = tcase_create("cfi");

	tcase_add_test(tc, cfi_matches_swu_toyjit);
	tcase_add_test(tc, cfi_matches_swu_synth_x64);
	tcase_add_test(tc, cfi_matches_swu_synth_x86);
	tcase_add_test(tc, cfi_matches_swu_synth_arm64);
	tcase_add_test(tc, cfi_tiny_and_bad_blobs);
	tcase_add_test(tc, cfi_corrupted_blobs);
	suite_add_tcase(s, tc);
	tc = tcase_create("tools");
	tcase_add_test(tc, observer_hears_adds_and_removes);
	tcase_add_test(tc, perf_files_as_perf_reads_them);
	tcase_add_test(tc, gdbjit_links_objects);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(jit_tools_suite());
	int failed;

	elf_version(EV_CURRENT);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
