/*
 * check_analyze.c - instruction analysis, SWU images and the managed path.
 *
 * The oracle for analysis is the compilers' own CFI: tests/cfi/prog.c is
 * compiled for x86-64, i386 and arm64 at several levels, and every
 * function the CFI import describes is analyzed too; at every instruction
 * both must give the same CFA (the analysis knows which registers hold
 * CFA + k, so CFA = rbp + 16 and CFA = rsp + 32 agree when rbp = rsp + 16),
 * the same return address and the same saved registers.  The agreement
 * rates are printed and must stay above a floor.  Hand-written functions
 * without CFI (tests/analyze/stubs_x64.S) are checked against the rules
 * written next to them; PLT entries against what a PLT entry is.
 *
 * Images: every module is written as an SWU image, validated, registered
 * and compared entry by entry; corrupted and truncated images and ELF
 * files give errors, never crashes, and register nothing.
 *
 * Walks: a static program (tests/analyze/prog.c) of each architecture is
 * dumped (gcore for x86-64 and i686, qemu-aarch64's own core for arm64;
 * qemu-i386's for i686 where the kernel cannot exec i386 programs, see
 * tests/i386-host.sh) and its core walked twice: natively (the module
 * registered, SW_WALK_NATIVE_FRAMES) and through the managed path (its SWU
 * image registered, no native flag).  Both must give the same frames.
 */
#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <stackwalk.h>
#include "analyze.h"
#include "i386_host.h"

#ifndef ANALYZE_SRCDIR
#define ANALYZE_SRCDIR "tests/analyze"
#endif
#define CFI_SRCDIR ANALYZE_SRCDIR "/../cfi"
#define BIN_DIR "analyze-bin"
#define BIT(r) (1ULL << (r))

struct chain {
	const char *name, *cc;
	sw_arch arch;
	int available;
};

static struct chain chains[] = {
	{ "x64", "gcc", SW_ARCH_X64, 0 },
	{ "x86", "i686-linux-gnu-gcc", SW_ARCH_X86, 0 },
	{ "arm64", "aarch64-linux-gnu-gcc", SW_ARCH_ARM64, 0 },
};
#define NCHAINS (sizeof chains / sizeof chains[0])

static const struct { const char *tag, *flags; } variants[] = {
	{ "O0-fp", "-O0 -fno-omit-frame-pointer" },
	{ "O1-nofp", "-O1 -fomit-frame-pointer" },
	{ "O2-fp", "-O2 -fno-omit-frame-pointer" },
	{ "O2-nofp", "-O2 -fomit-frame-pointer" },
	{ "O3-nofp", "-O3 -fomit-frame-pointer" },
	{ "Os-nofp", "-Os -fomit-frame-pointer" },
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

static int in_ci(void)
{
	const char *ci = getenv("CI");

	return ci && strcmp(ci, "true") == 0;
}

static void build_all(void)
{
	FILE *sh;

	mkdir(BIN_DIR, 0777);
	sh = popen("/bin/sh", "w");
	ck_assert_ptr_nonnull(sh);
	for (unsigned c = 0; c < NCHAINS; c++) {
		char cmd[256];

		snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", chains[c].cc);
		chains[c].available = system(cmd) == 0;
		if (!chains[c].available)
			continue;
		for (unsigned v = 0; v < NVARIANTS; v++)
			fprintf(sh, "%s %s -o " BIN_DIR "/%s-%s %s/prog.c &\n", chains[c].cc,
			        variants[v].flags, chains[c].name, variants[v].tag, CFI_SRCDIR);
		fprintf(sh, "%s -static -O1 -g -o " BIN_DIR "/%s-static %s/prog.c &\n", chains[c].cc,
		        chains[c].name, ANALYZE_SRCDIR);
	}
	if (chains[0].available)
		fprintf(sh, "gcc -shared -nostdlib -o " BIN_DIR "/x64-stubs.so %s/stubs_x64.S &\n",
		        ANALYZE_SRCDIR);
	fprintf(sh, "wait\n");
	pclose(sh);
}

static int have_chain(unsigned c)
{
	static int built;

	if (!built) {
		build_all();
		built = 1;
	}
	if (chains[c].available)
		return 1;
	ck_assert_msg(!in_ci(), "%s not found (CI=true: cross compilers are required)", chains[c].cc);
	printf("SKIP: %s not found: no %s binaries\n", chains[c].cc, chains[c].name);
	return 0;
}

static void *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	void *buf;
	long n;

	ck_assert_msg(f != NULL, "cannot open %s", path);
	ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
	n = ftell(f);
	ck_assert_int_gt(n, 0);
	rewind(f);
	buf = malloc((size_t)n);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)n, f), (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return buf;
}

/* The file bytes of [addr, addr + size) through the section headers. */
static const uint8_t *code_at(Elf *elf, const uint8_t *file, size_t flen, uint64_t addr, uint64_t size)
{
	for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_PROGBITS)
			continue;
		if (addr >= sh.sh_addr && addr + size <= sh.sh_addr + sh.sh_size &&
		    sh.sh_offset + sh.sh_size <= flen)
			return file + sh.sh_offset + (addr - sh.sh_addr);
	}
	return NULL;
}

static uint64_t callee_saved(sw_arch arch)
{
	switch (arch) {
	case SW_ARCH_X64:
		return BIT(SW_X64_RBX) | BIT(SW_X64_RBP) | BIT(12) | BIT(13) | BIT(14) | BIT(15);
	case SW_ARCH_X86:
		return BIT(SW_X86_EBX) | BIT(SW_X86_EBP) | BIT(SW_X86_ESI) | BIT(SW_X86_EDI);
	default:
		return (BIT(SW_ARM64_FP + 1) - BIT(SW_ARM64_X19)) | (0xffULL << SW_ARM64_D8);
	}
}

/* ---- The oracle: analysis against CFI at every instruction ---- */

struct tally {
	uint64_t fns, fns_failed, fragments, insns, cfa, ra, saved, lenient, full;
	uint64_t beyond;        /* instructions whose CFI reads the CFA from memory */
};

/*
 * Rules the analysis cannot state (the CFA read from memory, registers
 * saved relative to another register: i386 stack realignment) are not
 * disagreements; they are counted apart.
 */
static int beyond_analysis(const sw_swu_rule *c)
{
	if (c->cfa_deref)
		return 1;
	for (uint64_t m = c->saved_mask; m; m &= m - 1)
		if (c->saved_base[__builtin_ctzll(m)] != SW_SWU_BASE_CFA)
			return 1;
	return 0;
}

static void compare_function(sw_arch arch, const sw_native_function *f, const uint8_t *code,
                             struct tally *t)
{
	uint64_t mask = callee_saved(arch);
	struct swi_analysis an;
	sw_swu_rule at0;

	/*
	 * A cold part split off its function (foo.cold) starts inside that
	 * function's frame: no analysis of the part alone can know it.
	 */
	ck_assert_int_eq(sw_swu_decode(f->unwind, f->unwind_size, 0, &at0), SW_OK);
	if (at0.cfa_offset != (arch == SW_ARCH_ARM64 ? 0 : (int32_t)sw_arch_pointer_size(arch)) ||
	    at0.saved_mask) {
		t->fragments++;
		return;
	}
	ck_assert_int_eq(swi_analyze(arch, code, f->size, f->start, 0, &an), SW_OK);
	t->fns++;
	if (an.fail) {
		t->fns_failed++;
		return;
	}
	for (size_t i = 0; i < an.n; i++) {
		const struct swi_arule *r = &an.rules[i];
		sw_swu_rule c;
		int cfa, ra, saved = 1, lenient = 1;

		if (!r->reached)
			continue;
		ck_assert_int_eq(sw_swu_decode(f->unwind, f->unwind_size, r->offset, &c), SW_OK);
		if (beyond_analysis(&c)) {
			t->beyond++;
			continue;
		}
		t->insns++;
		cfa = r->ok && c.cfa_reg < SW_MAX_REGS && (r->rel_mask & BIT(c.cfa_reg)) &&
		      r->rel[c.cfa_reg] == -c.cfa_offset;
		if (arch == SW_ARCH_ARM64)
			ra = c.ra_in_reg ? r->ra_in_lr
			                 : !r->ra_in_lr && (c.saved_mask & BIT(SW_ARM64_LR)) &&
			                   r->saved[SW_ARM64_LR] == c.saved_offset[SW_ARM64_LR];
		else
			ra = r->ok;     /* always at CFA - P: the CFA decides */
		for (uint64_t m = mask; m; m &= m - 1) {
			unsigned g = (unsigned)__builtin_ctzll(m);
			int cs = (c.saved_mask & BIT(g)) != 0, as = (r->saved_mask & BIT(g)) != 0;

			if (cs == as && (!cs || c.saved_offset[g] == r->saved[g]))
				continue;
			saved = 0;
			/* CFI that does not say "restored" after a pop: the slot still holds the value. */
			if (!(cs && !as))
				lenient = 0;
		}
		t->cfa += cfa;
		t->ra += cfa && ra;
		t->saved += saved;
		t->lenient += cfa && ra && lenient;
		t->full += cfa && ra && saved;
	}
	swi_analysis_free(&an);
}

static double pct(uint64_t a, uint64_t b)
{
	return b ? 100.0 * (double)a / (double)b : 100.0;
}

START_TEST(analysis_matches_cfi)
{
	unsigned c = (unsigned)_i;
	struct tally all = { 0 };

	if (!have_chain(c))
		return;
	ck_assert_int_ne(elf_version(EV_CURRENT), EV_NONE);
	for (unsigned v = 0; v < NVARIANTS; v++) {
		const sw_native_function *fns;
		struct tally t = { 0 };
		char path[256];
		uint8_t *file;
		size_t flen, n;
		sw_module *m;
		Elf *elf;

		snprintf(path, sizeof path, BIN_DIR "/%s-%s", chains[c].name, variants[v].tag);
		file = read_file(path, &flen);
		elf = elf_memory((char *)file, flen);
		ck_assert_ptr_nonnull(elf);
		ck_assert_int_eq(sw_module_load(path, 0, NULL, &m), SW_OK);
		ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
		for (size_t i = 0; i < n; i++) {
			const uint8_t *code = code_at(elf, file, flen, fns[i].start, fns[i].size);

			if (fns[i].flags || !code)
				continue;
			compare_function(chains[c].arch, &fns[i], code, &t);
		}
		printf("%-16s %3" PRIu64 " functions (%" PRIu64 " not analyzable, %" PRIu64
		       " cold parts left aside), %5" PRIu64 " instructions: CFA %.1f%%, +RA %.1f%%, "
		       "saved %.1f%%, all %.1f%% (%.1f%% counting a popped register as restored)\n",
		       path + sizeof BIN_DIR, t.fns, t.fns_failed, t.fragments, t.insns, pct(t.cfa, t.insns),
		       pct(t.ra, t.insns), pct(t.saved, t.insns), pct(t.full, t.insns),
		       pct(t.lenient, t.insns));
		all.fns += t.fns;
		all.fns_failed += t.fns_failed;
		all.fragments += t.fragments;
		all.insns += t.insns;
		all.cfa += t.cfa;
		all.ra += t.ra;
		all.saved += t.saved;
		all.lenient += t.lenient;
		all.full += t.full;
		sw_module_free(m);
		elf_end(elf);
		free(file);
	}
	printf("%-16s %3" PRIu64 " functions (%" PRIu64 " not analyzable), %5" PRIu64
	       " instructions: CFA %.1f%%, +RA %.1f%%, all %.1f%%, lenient %.1f%%\n",
	       chains[c].name, all.fns, all.fns_failed, all.insns, pct(all.cfa, all.insns),
	       pct(all.ra, all.insns), pct(all.full, all.insns), pct(all.lenient, all.insns));
	ck_assert_uint_gt(all.insns, 1000);
	/* Floors a little below what the analysis achieves: a regression fails. */
	ck_assert_msg(pct(all.ra, all.insns) >= 97.0, "CFA and return address agree at %.1f%%",
	              pct(all.ra, all.insns));
	ck_assert_msg(pct(all.lenient, all.insns) >= 95.0, "rules agree at %.1f%%",
	              pct(all.lenient, all.insns));
	ck_assert_uint_le(all.fns_failed * 10, all.fns);
}
END_TEST

/* ---- Code without CFI ---- */

static const sw_native_function *find_fn(const sw_native_function *fns, size_t n, const char *name,
                                         uint64_t offset)
{
	for (size_t i = 0; i < n; i++)
		if (fns[i].name && strcmp(fns[i].name, name) == 0 && offset < fns[i].size)
			return &fns[i];
	return NULL;
}

/* Hand-checked rules of tests/analyze/stubs_x64.S: function, offset, CFA, saved rbx/rbp/r12. */
static const struct expect {
	const char *fn;
	uint32_t off;
	unsigned cfa_reg;
	int32_t cfa_off, rbx, rbp, r12;         /* 0: not saved */
} stubs_x64[] = {
	{ "asm_frame", 0, SW_X64_RSP, 8, 0, 0, 0 },
	{ "asm_frame", 1, SW_X64_RSP, 16, 0, -16, 0 },
	{ "asm_frame", 4, SW_X64_RBP, 16, 0, -16, 0 },
	{ "asm_frame", 5, SW_X64_RBP, 16, -24, -16, 0 },
	{ "asm_frame", 9, SW_X64_RBP, 16, -24, -16, 0 },
	{ "asm_frame", 14, SW_X64_RBP, 16, -24, -16, 0 },
	{ "asm_frame", 18, SW_X64_RBP, 16, -24, -16, 0 },
	{ "asm_frame", 19, SW_X64_RBP, 16, 0, -16, 0 },
	{ "asm_frame", 20, SW_X64_RSP, 8, 0, 0, 0 },
	{ "asm_leaf", 0, SW_X64_RSP, 8, 0, 0, 0 },
	{ "asm_leaf", 4, SW_X64_RSP, 8, 0, 0, 0 },
	{ "asm_nofp", 0, SW_X64_RSP, 8, 0, 0, 0 },
	{ "asm_nofp", 1, SW_X64_RSP, 16, -16, 0, 0 },
	{ "asm_nofp", 3, SW_X64_RSP, 24, -16, 0, -24 },
	{ "asm_nofp", 7, SW_X64_RSP, 32, -16, 0, -24 },
	{ "asm_nofp", 12, SW_X64_RSP, 32, -16, 0, -24 },
	{ "asm_nofp", 17, SW_X64_RSP, 32, -16, 0, -24 },
	{ "asm_nofp", 21, SW_X64_RSP, 24, -16, 0, -24 },
	{ "asm_nofp", 23, SW_X64_RSP, 16, -16, 0, 0 },
	{ "asm_nofp", 24, SW_X64_RSP, 8, 0, 0, 0 },
	{ "asm_realign", 0, SW_X64_RSP, 8, 0, 0, 0 },
	{ "asm_realign", 1, SW_X64_RSP, 16, 0, -16, 0 },
	{ "asm_realign", 4, SW_X64_RBP, 16, 0, -16, 0 },
	{ "asm_realign", 8, SW_X64_RBP, 16, 0, -16, 0 },
	{ "asm_realign", 17, SW_X64_RBP, 16, 0, -16, 0 },
	{ "asm_realign", 18, SW_X64_RSP, 8, 0, 0, 0 },
	{ "asm_lost", 0, SW_X64_RSP, 8, 0, 0, 0 },
};

START_TEST(stubs_without_cfi)
{
	const sw_native_function *fns, *f;
	sw_module_import_stats s;
	sw_module *m;
	size_t n;

	if (!have_chain(0))
		return;
	ck_assert_int_eq(sw_module_load_flags(BIN_DIR "/x64-stubs.so", 0x10000, SW_MODULE_ANALYZE, NULL, &m),
	                 SW_OK);
	ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &s), SW_OK);
	/* The five functions, PLT0 and the PLT entry of asm_leaf. */
	ck_assert_uint_eq(s.analyzed, 7);
	ck_assert_uint_eq(n, s.functions + s.analyzed_entries + s.outermost);
	for (size_t i = 0; i < sizeof stubs_x64 / sizeof stubs_x64[0]; i++) {
		const struct expect *e = &stubs_x64[i];
		const int32_t want[3] = { e->rbx, e->rbp, e->r12 };
		const unsigned regs[3] = { SW_X64_RBX, SW_X64_RBP, SW_X64_R12 };
		sw_swu_rule r;

		f = find_fn(fns, n, e->fn, e->off);
		ck_assert_msg(f != NULL, "%s not analyzed", e->fn);
		ck_assert_uint_eq(f->flags, SW_CODE_ANALYZED);
		ck_assert_uint_eq(f->source, SW_CFI_ANALYSIS);
		ck_assert_int_eq(sw_swu_decode(f->unwind, f->unwind_size, e->off, &r), SW_OK);
		ck_assert_msg(r.cfa_reg == e->cfa_reg && r.cfa_offset == e->cfa_off,
		              "%s+%u: CFA r%u%+d, want r%u%+d", e->fn, e->off, r.cfa_reg, r.cfa_offset,
		              e->cfa_reg, e->cfa_off);
		ck_assert_int_eq(r.ra_offset, -8);
		for (int k = 0; k < 3; k++) {
			int saved = (r.saved_mask & BIT(regs[k])) != 0;

			ck_assert_msg(saved == (want[k] != 0) && (!saved || r.saved_offset[regs[k]] == want[k]),
			              "%s+%u: register %u", e->fn, e->off, regs[k]);
		}
	}
	/* asm_lost: SP moves by a register with no frame register: only its first instruction. */
	f = find_fn(fns, n, "asm_lost", 0);
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(f->size, 3);
	sw_module_free(m);
}
END_TEST

/*
 * PLT entries of the dynamically linked programs: CFA on SP everywhere,
 * one pointer at the entry and at most two (the lazy path's push, PLT0's
 * push), nothing saved.  AArch64's PLT has no CFI: its entries are
 * analyzed.  x86's PLT has an FDE whose CFA expression reads the IP,
 * which the importer evaluates at every address: its entries of 16 bytes
 * are checked in that nameless function.
 */
START_TEST(plt_entries)
{
	unsigned c = (unsigned)_i;
	unsigned p = sw_arch_pointer_size(chains[c].arch);
	const sw_native_function *fns;
	sw_module_import_stats s;
	unsigned plt = 0;
	char path[256];
	sw_module *m;
	size_t n;

	if (!have_chain(c))
		return;
	snprintf(path, sizeof path, BIN_DIR "/%s-O2-nofp", chains[c].name);
	ck_assert_int_eq(sw_module_load_flags(path, 0, SW_MODULE_ANALYZE, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &s), SW_OK);
	ck_assert_uint_eq(n, s.functions + s.analyzed_entries + s.outermost);
	ck_assert_uint_eq(s.outermost, 1);      /* _start */
	for (size_t i = 0; i < n; i++) {
		const sw_native_function *f = &fns[i];
		int32_t maxd = 0;

		unsigned entry = (unsigned)f->size;

		if (f->flags & SW_CODE_OUTERMOST)
			ck_assert_str_eq(f->name, "_start");
		if (f->name)
			continue;
		if (chains[c].arch == SW_ARCH_ARM64) {
			/* A nameless analyzed stub of at most 32 bytes: a PLT entry. */
			if (!(f->flags & SW_CODE_ANALYZED) || f->size > 32)
				continue;
		} else if (f->flags || f->size % 16 || f->size < 48) {
			continue;       /* not the PLT's FDE: PLT0 and two entries at least */
		} else {
			entry = 16;
		}
		for (uint32_t o = 0; o < f->size; o += chains[c].arch == SW_ARCH_ARM64 ? 4 : 1) {
			sw_swu_rule r;

			/* A nameless stub of at most 32 bytes, or each 16 of the PLT: a PLT entry. */
			if (o % entry == 0) {
				plt++;
				maxd = 0;
			}
			ck_assert_int_eq(sw_swu_decode(f->unwind, f->unwind_size, o, &r), SW_OK);
			ck_assert_uint_eq(r.cfa_reg, chains[c].arch == SW_ARCH_X64 ? SW_X64_RSP :
			                             chains[c].arch == SW_ARCH_X86 ? SW_X86_ESP : SW_ARM64_SP);
			/* x86's PLT0 starts with the entry's push of the relocation index done. */
			int at_entry = chains[c].arch == SW_ARCH_ARM64 ? 0 : plt == 1 ? 2 * (int)p : (int)p;

			if (o % entry == 0)
				ck_assert_int_eq(r.cfa_offset, at_entry);
			ck_assert_int_le(r.cfa_offset, chains[c].arch == SW_ARCH_ARM64 ? 16 : at_entry + (int)p);
			if (r.cfa_offset > maxd)
				maxd = r.cfa_offset;
			/* PLT0 pushes: its rule deepens (x86: one word; arm64: stp x16, x30). */
			if (plt == 1 && (o + (chains[c].arch == SW_ARCH_ARM64 ? 4 : 1)) % entry == 0)
				ck_assert_int_gt(maxd, at_entry);
		}
	}
	printf("%s: %u FDEs skipped, %u analyzed (%u entries), %u failed, %u PLT entries, %u outermost\n",
	       path + sizeof BIN_DIR, s.skipped, s.analyzed, s.analyzed_entries, s.analysis_failed,
	       plt, s.outermost);
	ck_assert_uint_ge(plt, 3);
	sw_module_free(m);
}
END_TEST

/* ---- Images ---- */

static void *module_image(const sw_module *m, size_t *len)
{
	void *buf;

	ck_assert_int_eq(sw_module_write_image(m, NULL, 0, len), SW_E_LIMIT);
	buf = malloc(*len);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(sw_module_write_image(m, buf, *len - 1, len), SW_E_LIMIT);
	ck_assert_int_eq(sw_module_write_image(m, buf, *len, len), SW_OK);
	return buf;
}

START_TEST(image_round_trip)
{
	unsigned c = (unsigned)_i;
	const uint64_t bias = 0x7f0000000000ULL;

	if (!have_chain(c))
		return;
	for (unsigned v = 0; v <= NVARIANTS; v++) {
		const sw_native_function *fns;
		const sw_image_method *ms;
		sw_codemap *map;
		sw_image *img, *again;
		char path[256];
		size_t n, nm, len;
		sw_module *m;
		void *buf;

		if (v < NVARIANTS)
			snprintf(path, sizeof path, BIN_DIR "/%s-%s", chains[c].name, variants[v].tag);
		else
			snprintf(path, sizeof path, BIN_DIR "/%s-static", chains[c].name);
		ck_assert_int_eq(sw_module_load_flags(path, bias, SW_MODULE_ANALYZE, NULL, &m), SW_OK);
		ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
		buf = module_image(m, &len);
		ck_assert_int_eq(sw_image_validate(buf, len), SW_OK);
		ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
		/* The image's RVAs are ELF addresses less its base: the same bias loads it. */
		ck_assert_int_eq(sw_codemap_add_image(map, buf, len, bias, 0, &img), SW_OK);
		ck_assert_int_eq(sw_image_arch(img), chains[c].arch);
		ck_assert_int_eq(sw_image_methods(img, &ms, &nm), SW_OK);
		ck_assert_uint_eq(nm, n);
		ck_assert_uint_eq(sw_codemap_count(map), n);
		memset(buf, 0, len);    /* not kept */
		for (size_t i = 0; i < n; i++) {
			sw_code_info ci;

			ck_assert_uint_eq(ms[i].start, fns[i].start);
			ck_assert_uint_eq(ms[i].size, fns[i].size);
			ck_assert_uint_eq(ms[i].flags, fns[i].flags);
			ck_assert(ms[i].name == fns[i].name || strcmp(ms[i].name, fns[i].name) == 0);
			ck_assert_int_eq(sw_codemap_find(map, fns[i].start + fns[i].size - 1, &ci), SW_OK);
			ck_assert_ptr_eq(ci.method, &ms[i]);
			ck_assert_uint_eq(ci.flags, fns[i].flags);
			ck_assert_uint_eq(ci.unwind_size, fns[i].unwind_size);
			ck_assert_int_eq(memcmp(ci.unwind, fns[i].unwind, ci.unwind_size), 0);
		}
		/* One code table, not a method per function: a function is no method of its own. */
		ck_assert_int_eq(sw_codemap_remove(map, fns[0].start), SW_E_NOTFOUND);
		/* Registered twice: refused, and nothing of the second is left. */
		free(buf);
		buf = module_image(m, &len);
		ck_assert_int_eq(sw_codemap_add_image(map, buf, len, bias, 0, &again), SW_E_EXISTS);
		ck_assert_ptr_null(again);
		ck_assert_uint_eq(sw_codemap_count(map), n);
		ck_assert_int_eq(sw_codemap_add_image(map, buf, len, bias, SW_CODE_FUNCLET, &again), SW_E_INVAL);
		ck_assert_int_eq(sw_codemap_remove_image(map, img), SW_OK);
		ck_assert_uint_eq(sw_codemap_count(map), 0);
		sw_codemap_synchronize(map);
		sw_image_free(img);
		sw_codemap_destroy(map);
		free(buf);
		sw_module_free(m);
	}
}
END_TEST

/* Corrupted and truncated images: an error, never a crash; nothing registered. */
START_TEST(hostile_images)
{
	sw_codemap *map;
	sw_module *m;
	uint8_t *buf, *bad;
	size_t len;
	unsigned ok = 0;

	if (!have_chain(0))
		return;
	ck_assert_int_eq(sw_module_load_flags(BIN_DIR "/x64-O2-fp", 0, SW_MODULE_ANALYZE, NULL, &m), SW_OK);
	buf = module_image(m, &len);
	bad = malloc(len);
	ck_assert_ptr_nonnull(bad);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	for (size_t cut = 0; cut < len; cut += cut < 256 ? 1 : 97) {
		memcpy(bad, buf, cut);
		ck_assert_int_lt(sw_image_validate(bad, cut), 0);
	}
	ck_assert_int_eq(sw_image_validate(NULL, 0), SW_E_INVAL);
	/* One corrupted entry anywhere: the image is refused as a whole, or still valid. */
	srand(7);
	for (unsigned k = 0; k < 20000; k++) {
		sw_image *img = NULL;
		sw_status st;

		memcpy(bad, buf, len);
		for (int flips = 1 + rand() % 3; flips-- > 0;)
			bad[(size_t)rand() % len] ^= (uint8_t)(1u << (rand() % 8));
		st = sw_codemap_add_image(map, bad, len, 0, 0, &img);
		if (st == SW_OK) {
			ok++;
			ck_assert_int_eq(sw_image_validate(bad, len), SW_OK);
			ck_assert_int_eq(sw_codemap_remove_image(map, img), SW_OK);
			sw_image_free(img);
		} else {
			ck_assert_int_lt(st, 0);
			ck_assert_ptr_null(img);
		}
		ck_assert_uint_eq(sw_codemap_count(map), 0);
	}
	printf("hostile images: %u of 20000 corrupted copies still valid\n", ok);
	sw_codemap_destroy(map);
	free(bad);
	free(buf);
	sw_module_free(m);
}
END_TEST

/* Corrupted ELF files through the analysis: errors or fewer functions, never a crash. */
START_TEST(hostile_elf)
{
	static const char *const files[] = { BIN_DIR "/x64-O2-nofp", BIN_DIR "/x86-O2-nofp",
	                                     BIN_DIR "/arm64-O2-nofp" };

	for (unsigned c = 0; c < NCHAINS; c++) {
		uint8_t *file, *bad;
		size_t len;
		unsigned loaded = 0;

		if (!have_chain(c))
			continue;
		file = read_file(files[c], &len);
		bad = malloc(len);
		ck_assert_ptr_nonnull(bad);
		srand(11 + c);
		for (unsigned k = 0; k < 300; k++) {
			const sw_native_function *fns;
			sw_module *m = NULL;
			size_t n, cut = k % 10 == 0 ? (size_t)rand() % len : len;
			sw_status st;

			memcpy(bad, file, len);
			for (int flips = 0; flips < 40; flips++)
				bad[(size_t)rand() % len] ^= (uint8_t)rand();
			st = sw_module_load_image_flags(bad, cut, 0, SW_MODULE_ANALYZE, NULL, &m);
			if (st != SW_OK) {
				ck_assert_int_lt(st, 0);
				continue;
			}
			loaded++;
			ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
			for (size_t i = 0; i < n; i++)
				ck_assert_int_eq(sw_swu_validate(fns[i].unwind, fns[i].unwind_size), SW_OK);
			sw_module_free(m);
		}
		printf("hostile ELF (%s): %u of 300 corrupted copies loaded\n", chains[c].name, loaded);
		free(bad);
		free(file);
	}
}
END_TEST

/* ---- Walks of cores: native path against managed path ---- */

static char tmpdir[256];

/* gcore a waiting victim (x86-64 or i686): the core's path, or NULL. */
static const char *gcore_of(const char *exe, char *core, size_t len)
{
	int in[2], out[2];
	char line[64], pidbuf[32], prefix[300];
	pid_t pid, g;
	FILE *from;
	int status;

	if (system("command -v gcore >/dev/null 2>&1") != 0)
		return NULL;
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[1]);
		close(out[0]);
		execl(exe, exe, "wait", (char *)NULL);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	from = fdopen(out[0], "r");
	ck_assert_ptr_nonnull(from);
	ck_assert_ptr_nonnull(fgets(line, sizeof line, from));
	ck_assert_str_eq(line, "ready\n");
	usleep(100000);         /* into read() */
	snprintf(pidbuf, sizeof pidbuf, "%d", (int)pid);
	snprintf(prefix, sizeof prefix, "%s/gcore", tmpdir);
	g = fork();
	if (g == 0) {
		int devnull = open("/dev/null", O_WRONLY);

		dup2(devnull, 1);
		dup2(devnull, 2);
		execlp("gcore", "gcore", "-o", prefix, pidbuf, (char *)NULL);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(g, &status, 0), g);
	close(in[1]);
	fclose(from);
	waitpid(pid, &status, 0);
	snprintf(core, len, "%s.%d", prefix, (int)pid);
	return access(core, R_OK) == 0 ? core : NULL;
}

/* qemu-user (`qemu`) writes qemu_<prog>_<date>_<pid>.core where the guest aborts. */
static const char *qemu_core_of(const char *qemu, const char *exe, char *core, size_t len)
{
	struct rlimit rl;
	char abs[512], cmd[300], prefix[600];
	pid_t pid;
	DIR *d;
	struct dirent *de;
	int status;

	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", qemu);
	if (system(cmd) != 0)
		return NULL;
	getrlimit(RLIMIT_CORE, &rl);
	if (rl.rlim_max == 0)
		return NULL;
	ck_assert_ptr_nonnull(realpath(exe, abs));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		FILE *f = fopen("/proc/self/coredump_filter", "w");

		if (f) {
			fputs("0", f);  /* the kernel's core of qemu itself: tiny */
			fclose(f);
		}
		rl.rlim_cur = rl.rlim_max;
		setrlimit(RLIMIT_CORE, &rl);
		if (chdir(tmpdir) != 0)
			_exit(126);
		execlp(qemu, qemu, abs, "abort", (char *)NULL);
		_exit(127);
	}
	waitpid(pid, &status, 0);
	d = opendir(tmpdir);
	ck_assert_ptr_nonnull(d);
	core[0] = '\0';
	snprintf(prefix, sizeof prefix, "qemu_%s_", strrchr(abs, '/') ? strrchr(abs, '/') + 1 : abs);
	while ((de = readdir(d)) != NULL)
		if (strncmp(de->d_name, prefix, strlen(prefix)) == 0 && strstr(de->d_name, ".core"))
			snprintf(core, len, "%s/%s", tmpdir, de->d_name);
	closedir(d);
	return core[0] ? core : NULL;
}

struct walked {
	uint64_t pc[64];
	const char *name[64];
	unsigned n;
};

static sw_walk_action collect(const sw_crawl_frame *cf, void *data)
{
	struct walked *w = data;
	const sw_code_info *ci = sw_crawl_frame_code_info(cf);
	sw_frame_state s = sw_crawl_frame_state(cf);

	if ((s != SW_STATE_FRAMELESS && s != SW_STATE_NATIVE_FRAME) || !ci || w->n >= 64)
		return SW_CONTINUE;
	w->pc[w->n] = ci->start + sw_crawl_frame_relative_offset(cf);
	if (s == SW_STATE_NATIVE_FRAME)
		w->name[w->n] = ((const sw_native_function *)ci->method)->name;
	else
		w->name[w->n] = ((const sw_image_method *)ci->method)->name;
	w->n++;
	return SW_CONTINUE;
}

/*
 * The vDSO of the core (i686 makes its system calls through it): loaded
 * from the core's memory, registered natively and as an image.
 */
static sw_module *core_vdso(const sw_core *core, sw_codemap *nmap, sw_codemap *mmap, sw_image **img)
{
	const sw_memory *mem = sw_core_memory(core);
	sw_context ctx;
	uint64_t page;
	int tid;

	/* No file maps it (NT_FILE omits it): find its ELF header below the PC. */
	ck_assert_int_eq(sw_core_thread(core, 0, &ctx, &tid), SW_OK);
	page = sw_context_ip(&ctx) & ~0xfffULL;
	for (unsigned back = 0; back < 8; back++, page -= 0x1000) {
		unsigned char h[64];
		uint64_t shoff, size;
		sw_module *m = NULL;
		uint8_t *elf;
		size_t len;

		if (sw_memory_read(mem, page, h, sizeof h) != SW_OK)
			return NULL;
		if (memcmp(h, "\177ELF", 4) != 0)
			continue;
		/* Up to the end of the section headers (ELF32 or ELF64). */
		if (h[4] == 1) {
			shoff = h[32] | h[33] << 8 | (uint64_t)h[34] << 16 | (uint64_t)h[35] << 24;
			size = shoff + (uint64_t)(h[48] | h[49] << 8) * (h[46] | h[47] << 8);
		} else {
			memcpy(&shoff, h + 40, 8);
			size = shoff + (uint64_t)(h[60] | h[61] << 8) * (h[58] | h[59] << 8);
		}
		if (size == 0 || size > (1u << 20))
			return NULL;
		elf = malloc(size);
		ck_assert_ptr_nonnull(elf);
		if (sw_memory_read(mem, page, elf, size) == SW_OK &&
		    sw_module_load_image_flags(elf, size, page, SW_MODULE_ANALYZE, NULL, &m) == SW_OK) {
			void *buf;

			ck_assert_int_eq(sw_module_register(m, nmap), SW_OK);
			buf = module_image(m, &len);
			ck_assert_int_eq(sw_codemap_add_image(mmap, buf, len, page, 0, img), SW_OK);
			free(buf);
		}
		free(elf);
		return m;
	}
	return NULL;
}

static void walk_core(const sw_core *core, const sw_codemap *map, unsigned flags, struct walked *w)
{
	sw_context ctx;
	sw_thread t;
	sw_walk_error err;
	uint64_t lo, hi;
	int tid;

	memset(w, 0, sizeof *w);
	ck_assert_int_eq(sw_core_thread(core, 0, &ctx, &tid), SW_OK);
	ck_assert_int_eq(sw_core_stack_bounds(core, sw_context_sp(&ctx), &lo, &hi), SW_OK);
	ck_assert_int_eq(sw_thread_init(&t, sw_core_arch(core), map, sw_core_memory(core), 0, lo, hi),
	                 SW_OK);
	ck_assert_int_ne(sw_walk_frames(&t, &ctx, 0, collect, w, flags, &err), SW_FAILED);
}

static int has_name(const struct walked *w, const char *name)
{
	for (unsigned i = 0; i < w->n; i++)
		if (w->name[i] && strcmp(w->name[i], name) == 0)
			return 1;
	return 0;
}

START_TEST(core_walk_managed_path)
{
	static const char *const want[] = { "bottom", "level3", "level2", "level1", "main", NULL };
	unsigned c = (unsigned)_i;
	struct walked native, managed;
	char exe[256], corebuf[600];
	const char *core, *qemu;
	sw_codemap *nmap, *mmap;
	sw_image *img, *vimg = NULL;
	sw_module *m, *vdso;
	sw_core *k;
	size_t len;
	void *buf;

	if (!have_chain(c))
		return;
	snprintf(exe, sizeof exe, BIN_DIR "/%s-static", chains[c].name);
	qemu = chains[c].arch == SW_ARCH_ARM64 ? "qemu-aarch64" : NULL;
	if (chains[c].arch == SW_ARCH_X86) {
		const char *why;

		switch (i386_host(&why)) {
		case I386_NATIVE:
			break;
		case I386_QEMU:
			qemu = i386_qemu();
			break;
		case I386_NOEXEC:
			ck_assert_msg(!in_ci(), "no core of %s: %s", exe, why);
			printf("SKIP: no core of %s: %s\n", exe, why);
			return;
		default:
			ck_abort_msg("%s", why);
		}
	}
	core = qemu ? qemu_core_of(qemu, exe, corebuf, sizeof corebuf)
	            : gcore_of(exe, corebuf, sizeof corebuf);
	if (!core) {
		ck_assert_msg(!in_ci(), "no core of %s", exe);
		printf("SKIP: no core of %s (gcore, %s or core dumps missing)\n", exe,
		       qemu ? qemu : "qemu");
		return;
	}
	ck_assert_int_eq(sw_core_open(core, &k), SW_OK);
	ck_assert_int_eq(sw_core_arch(k), chains[c].arch);
	/* A static non-PIE program: ELF addresses are loaded addresses. */
	ck_assert_int_eq(sw_module_load_flags(exe, 0, SW_MODULE_ANALYZE, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_codemap_create(&nmap), SW_OK);
	ck_assert_int_eq(sw_codemap_create(&mmap), SW_OK);
	ck_assert_int_eq(sw_module_register(m, nmap), SW_OK);
	buf = module_image(m, &len);
	ck_assert_int_eq(sw_codemap_add_image(mmap, buf, len, 0, 0, &img), SW_OK);
	free(buf);
	vdso = core_vdso(k, nmap, mmap, &vimg);

	walk_core(k, nmap, SW_WALK_NATIVE_FRAMES, &native);
	walk_core(k, mmap, 0, &managed);
	printf("%s core: %u frames natively, %u through the managed path:", chains[c].name, native.n,
	       managed.n);
	for (unsigned i = 0; i < managed.n; i++)
		printf(" %s", managed.name[i] ? managed.name[i] : "?");
	printf("\n");
	ck_assert_uint_eq(native.n, managed.n);
	for (unsigned i = 0; i < native.n; i++)
		ck_assert_msg(native.pc[i] == managed.pc[i], "frame %u: %#" PRIx64 " natively, %#" PRIx64
		              " managed", i, native.pc[i], managed.pc[i]);
	/*
	 * i386 main realigns its stack: its CFA is [ebp - 8], which SWU cannot
	 * say, so both walks end in it (its return addresses are left out).
	 */
	for (const char *const *w = want; *w; w++)
		if (!(chains[c].arch == SW_ARCH_X86 && strcmp(*w, "main") == 0))
			ck_assert_msg(has_name(&managed, *w), "%s: %s not walked", chains[c].name, *w);
	ck_assert_uint_ge(managed.n, 5);

	sw_codemap_remove_image(mmap, img);
	sw_module_unregister(m, nmap);
	if (vdso) {
		sw_codemap_remove_image(mmap, vimg);
		sw_module_unregister(vdso, nmap);
	}
	sw_codemap_destroy(mmap);
	sw_codemap_destroy(nmap);
	sw_image_free(img);
	sw_image_free(vimg);
	sw_module_free(m);
	sw_module_free(vdso);
	sw_core_close(k);
	unlink(core);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("analyze");
	TCase *tc = tcase_create("analyze");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, analysis_matches_cfi, 0, NCHAINS);
	tcase_add_test(tc, stubs_without_cfi);
	tcase_add_loop_test(tc, plt_entries, 0, NCHAINS);
	tcase_add_loop_test(tc, image_round_trip, 0, NCHAINS);
	tcase_add_test(tc, hostile_images);
	tcase_add_test(tc, hostile_elf);
	tcase_add_loop_test(tc, core_walk_managed_path, 0, NCHAINS);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed;

	snprintf(tmpdir, sizeof tmpdir, "%s/swanalyze-XXXXXX", getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp");
	if (!mkdtemp(tmpdir))
		return 99;
	sr = srunner_create(suite());
	/* One process: the binaries are built once. */
	srunner_set_fork_status(sr, CK_NOFORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	rmdir(tmpdir);
	return failed ? 1 : 0;
}
