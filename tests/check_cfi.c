/*
 * check_cfi.c - native modules: CFI imported into SWU, symbols, hostile ELF.
 *
 * tests/cfi/prog.c and lib.c are compiled for x86-64, i386 and arm64 at
 * every -O level, with and without frame pointers, with .debug_frame
 * only, and as a shared object.  Each binary is loaded with
 * sw_module_load(), and for every imported function and EVERY address in
 * it the SWU rule must be the one libdw computes there itself
 * (dwarf_cfi_addrframe, dwarf_frame_cfa, dwarf_frame_register): the CFA
 * register and offset, every saved register's slot, the return address.
 * Symbols are compared with nm's, and corrupted copies of the binaries
 * must give errors, never crashes.
 *
 * Signal trampolines without CFI (tests/cfi/sigreturn.S, and glibc's in
 * static programs: i386's __restore_rt and __restore) are found by their
 * instructions, and walks through the i386 ones, their signal frames laid
 * out as the kernel lays them out, restore the interrupted frame.
 *
 * A missing cross compiler skips its architecture with a message, or
 * fails under CI=true.
 */
#define _GNU_SOURCE 1   /* dl_iterate_phdr */
#include <check.h>
#include <link.h>
#include <dwarf.h>
#include <fcntl.h>
#include <gelf.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <elfutils/libdw.h>
#include <stackwalk.h>
#include "rounds.h"

#ifndef CFI_SRCDIR
#define CFI_SRCDIR "tests/cfi"
#endif
#define BIN_DIR "cfi-bin"

struct toolchain {
	const char *name;
	const char *cc;
	const char *nm;
	sw_arch arch;
	int available;
};

static struct toolchain chains[] = {
	{ "x64", "gcc", "nm", SW_ARCH_X64, 0 },
	{ "x86", "i686-linux-gnu-gcc", "i686-linux-gnu-nm", SW_ARCH_X86, 0 },
	{ "arm64", "aarch64-linux-gnu-gcc", "aarch64-linux-gnu-nm", SW_ARCH_ARM64, 0 },
};
#define NCHAINS (sizeof chains / sizeof chains[0])

struct variant {
	const char *tag;
	const char *flags;
	int shared;
};

static const struct variant variants[] = {
	{ "O0-fp", "-O0 -fno-omit-frame-pointer", 0 },
	{ "O0-nofp", "-O0 -fomit-frame-pointer", 0 },
	{ "O1-fp", "-O1 -fno-omit-frame-pointer", 0 },
	{ "O1-nofp", "-O1 -fomit-frame-pointer", 0 },
	{ "O2-fp", "-O2 -fno-omit-frame-pointer", 0 },
	{ "O2-nofp", "-O2 -fomit-frame-pointer", 0 },
	{ "O3-fp", "-O3 -fno-omit-frame-pointer", 0 },
	{ "O3-nofp", "-O3 -fomit-frame-pointer", 0 },
	{ "Os-fp", "-Os -fno-omit-frame-pointer", 0 },
	{ "Os-nofp", "-Os -fomit-frame-pointer", 0 },
	/* No unwind tables: the compiler's CFI goes to .debug_frame. */
	{ "O2-debugframe", "-O2 -g -fno-asynchronous-unwind-tables -fno-unwind-tables", 0 },
	{ "lib-O2", "-O2 -fPIC -shared", 1 },
};
#define NVARIANTS (sizeof variants / sizeof variants[0])

/* Functions of prog.c and lib.c that must be imported (none is inlined). */
static const char *const prog_functions[] = {
	"cfi_leaf", "cfi_many_regs", "cfi_alloca", "cfi_vla", "cfi_big_frame", "cfi_recurse",
	"cfi_varargs", "cfi_fail", "cfi_checked", "cfi_epilogs", "cfi_tail", "cfi_keep_double", NULL
};
static const char *const lib_functions[] = { "cfi_lib_exported", "cfi_lib_recurse", NULL };

static void bin_path(char *buf, size_t len, unsigned chain, unsigned variant)
{
	snprintf(buf, len, BIN_DIR "/%s-%s%s", chains[chain].name, variants[variant].tag,
	         variants[variant].shared ? ".so" : "");
}

/* Compile every variant for every toolchain there is, in parallel, once. */
static int build_all(void)
{
	FILE *sh;
	int rc;

	mkdir(BIN_DIR, 0777);
	sh = popen("/bin/sh", "w");
	if (!sh)
		return -1;
	for (unsigned c = 0; c < NCHAINS; c++) {
		char cmd[256];

		snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", chains[c].cc);
		chains[c].available = system(cmd) == 0;
		if (!chains[c].available)
			continue;
		for (unsigned v = 0; v < NVARIANTS; v++) {
			char out[256];

			bin_path(out, sizeof out, c, v);
			fprintf(sh, "%s %s -o %s %s/%s &\n", chains[c].cc, variants[v].flags, out,
			        CFI_SRCDIR, variants[v].shared ? "lib.c" : "prog.c");
		}
		/* A relocatable object, for the refusals. */
		fprintf(sh, "%s -O2 -c -o " BIN_DIR "/%s.o %s/prog.c &\n", chains[c].cc,
		        chains[c].name, CFI_SRCDIR);
		/* Signal trampolines without CFI: hand-written, and the static C library's. */
		fprintf(sh, "%s -nostdlib -static -o " BIN_DIR "/%s-sigreturn %s/sigreturn.S &\n",
		        chains[c].cc, chains[c].name, CFI_SRCDIR);
		fprintf(sh, "%s -O1 -static -o " BIN_DIR "/%s-static %s/prog.c &\n", chains[c].cc,
		        chains[c].name, CFI_SRCDIR);
	}
	fprintf(sh, "wait\n");
	rc = pclose(sh);
	return rc;
}

/* Is the toolchain there?  If not: skip with a message, or fail under CI. */
static int have_chain(unsigned c)
{
	const char *ci = getenv("CI");

	if (chains[c].available)
		return 1;
	if (ci && strcmp(ci, "true") == 0)
		ck_abort_msg("%s not found (CI=true: cross compilers are required)", chains[c].cc);
	printf("SKIP: %s not found: no %s binaries\n", chains[c].cc, chains[c].name);
	return 0;
}

/* ---- The oracle: libdw's rule, in the library's registers ---- */

static int oracle_reg(sw_arch arch, Dwarf_Word dw)
{
	switch (arch) {
	case SW_ARCH_X64:   return dw < SW_X64_NREGS ? (int)dw : -1;
	case SW_ARCH_X86:   return dw < SW_X86_NREGS ? (int)dw : -1;
	case SW_ARCH_ARM64:
		if (dw < 32)
			return (int)dw;
		return dw >= 72 && dw < 80 ? SW_ARM64_D8 + (int)(dw - 72) : -1;
	default:            return -1;
	}
}

struct expect {
	unsigned cfa_reg;
	int64_t cfa_offset;
	int cfa_deref;                  /* CFA = [cfa_reg + cfa_offset] */
	uint64_t mask;
	int64_t saved[SW_MAX_REGS];
	unsigned base[SW_MAX_REGS];     /* SW_SWU_BASE_CFA, or the register of [breg + off] */
	int ra_in_reg;
	int64_t ra_offset;
};

/* What libdw says at `addr`; 0, or -1 with a reason in *why. */
static int oracle(Dwarf_CFI *cfi, sw_arch arch, uint64_t addr, struct expect *e, const char **why)
{
	unsigned ip = arch == SW_ARCH_X64 ? SW_X64_RIP : arch == SW_ARCH_X86 ? SW_X86_EIP : SW_ARM64_PC;
	unsigned sp = arch == SW_ARCH_X64 ? SW_X64_RSP : arch == SW_ARCH_X86 ? SW_X86_ESP : SW_ARM64_SP;
	Dwarf_Frame *f;
	Dwarf_Op *ops;
	size_t n;
	int r;

	memset(e, 0, sizeof *e);
	for (unsigned i = 0; i < SW_MAX_REGS; i++)
		e->base[i] = SW_SWU_BASE_CFA;
	*why = "addrframe";
	if (dwarf_cfi_addrframe(cfi, addr, &f) != 0)
		return -1;
	*why = "CFA neither register + offset nor [breg + offset]";
	if (dwarf_frame_cfa(f, &ops, &n) != 0)
		goto fail;
	if (n == 1 && ops[0].atom == DW_OP_bregx) {
		r = oracle_reg(arch, ops[0].number);
		e->cfa_offset = (int64_t)ops[0].number2;
	} else if (n == 2 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31 &&
	           ops[1].atom == DW_OP_deref) {
		/* i386 stack realignment: DW_OP_breg<n> off; DW_OP_deref. */
		r = oracle_reg(arch, ops[0].atom - DW_OP_breg0);
		e->cfa_offset = (int64_t)ops[0].number;
		e->cfa_deref = 1;
	} else if (n == 9 && ops[0].atom >= DW_OP_breg0 && ops[0].atom <= DW_OP_breg31 &&
	           ops[1].atom >= DW_OP_breg0 && ops[1].atom <= DW_OP_breg31 &&
	           oracle_reg(arch, ops[1].atom - DW_OP_breg0) == (int)ip && ops[1].number == 0 &&
	           ops[2].atom == DW_OP_lit15 && ops[3].atom == DW_OP_and &&
	           ops[4].atom >= DW_OP_lit0 && ops[4].atom <= DW_OP_lit31 && ops[5].atom == DW_OP_ge &&
	           ops[6].atom >= DW_OP_lit0 && ops[6].atom <= DW_OP_lit31 && ops[7].atom == DW_OP_shl &&
	           ops[8].atom == DW_OP_plus) {
		/* GNU ld's x86 PLT: sp + k + (((ip & 15) >= N) << S), taken literally here. */
		r = oracle_reg(arch, ops[0].atom - DW_OP_breg0);
		e->cfa_offset = (int64_t)ops[0].number +
		                ((int64_t)((addr & 15) >= (uint64_t)(ops[4].atom - DW_OP_lit0))
		                 << (ops[6].atom - DW_OP_lit0));
	} else {
		goto fail;
	}
	if (r < 0)
		goto fail;
	e->cfa_reg = (unsigned)r;
	e->ra_in_reg = arch == SW_ARCH_ARM64;
	for (unsigned dw = 0; dw < 128; dw++) {
		Dwarf_Op mem[3];
		unsigned base = SW_SWU_BASE_CFA;
		int64_t off;

		if (dwarf_frame_register(f, (int)dw, mem, &ops, &n) != 0) {
			*why = "register";
			goto fail;
		}
		if (n == 1 && ops[0].atom == DW_OP_call_frame_cfa)
			off = 0;
		else if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa && ops[1].atom == DW_OP_plus_uconst)
			off = (int64_t)ops[1].number;
		else if (n == 2 && ops[0].atom == DW_OP_call_frame_cfa &&
		         ops[1].atom >= DW_OP_breg0 && ops[1].atom <= DW_OP_breg31) {
			/* DW_CFA_expression "DW_OP_breg<n> off": saved at [reg n + off]. */
			int b = oracle_reg(arch, ops[1].atom - DW_OP_breg0);

			*why = "an expression base the library cannot name";
			if (b < 0)
				goto fail;
			base = (unsigned)b;
			off = (int64_t)ops[1].number;
		} else
			continue;       /* same value, undefined; SP's val_offset(0) */
		r = oracle_reg(arch, dw);
		*why = "a register saved that the library cannot name";
		if (r < 0 || (unsigned)r == sp)
			goto fail;
		if ((unsigned)r == ip) {
			*why = "the return address saved relative to a register";
			if (base != SW_SWU_BASE_CFA)
				goto fail;
			e->ra_offset = off;     /* x64, x86: the return address column */
			continue;
		}
		e->mask |= 1ULL << r;
		e->saved[r] = off;
		e->base[r] = base;
		if (arch == SW_ARCH_ARM64 && r == SW_ARM64_LR) {
			e->ra_in_reg = 0;
			e->ra_offset = off;
		}
	}
	free(f);
	return 0;
fail:
	free(f);
	return -1;
}

/* Compare the SWU rule at `off` with libdw's at its address. */
static void compare(const sw_native_function *fn, sw_arch arch, Dwarf_CFI *cfi, uint64_t bias,
                    uint32_t off)
{
	struct expect e;
	sw_swu_rule r, ra, call;
	const char *why = "";
	uint64_t addr = fn->start - bias + off;

	ck_assert_msg(oracle(cfi, arch, addr, &e, &why) == 0, "%s+%u (%#" PRIx64 "): libdw: %s",
	              fn->name ? fn->name : "?", off, addr, why);
	ck_assert_int_eq(sw_swu_decode(fn->unwind, fn->unwind_size, off, &r), SW_OK);
	ck_assert_int_eq(sw_swu_decode_return_address(fn->unwind, fn->unwind_size, off, &ra), SW_OK);
	/* At a return address, the rule of the call: at off - 1. */
	ck_assert_int_eq(sw_swu_decode(fn->unwind, fn->unwind_size, off ? off - 1 : 0, &call), SW_OK);
	ck_assert_msg(memcmp(&call, &ra, sizeof r) == 0, "return-address rule differs at %u", off);
	ck_assert_uint_eq(r.arch, arch);
	ck_assert_msg(r.cfa_reg == e.cfa_reg && r.cfa_offset == e.cfa_offset,
	              "%s+%u: CFA %s%+d, libdw %s%+" PRId64, fn->name ? fn->name : "?", off,
	              sw_arch_reg_name(arch, r.cfa_reg), r.cfa_offset,
	              sw_arch_reg_name(arch, e.cfa_reg), e.cfa_offset);
	ck_assert_msg((int)r.cfa_deref == e.cfa_deref, "%s+%u: CFA deref %u, libdw %d",
	              fn->name ? fn->name : "?", off, r.cfa_deref, e.cfa_deref);
	ck_assert_msg(r.saved_mask == e.mask, "%s+%u: saved %#" PRIx64 ", libdw %#" PRIx64,
	              fn->name ? fn->name : "?", off, r.saved_mask, e.mask);
	for (unsigned i = 0; i < SW_MAX_REGS; i++)
		if (e.mask & (1ULL << i))
			ck_assert_msg(r.saved_offset[i] == e.saved[i], "%s+%u: %s at %d, libdw %" PRId64,
			              fn->name ? fn->name : "?", off, sw_arch_reg_name(arch, i),
			              r.saved_offset[i], e.saved[i]);
	for (unsigned i = 0; i < SW_MAX_REGS; i++)
		ck_assert_msg(r.saved_base[i] == ((e.mask & (1ULL << i)) ? e.base[i] : SW_SWU_BASE_CFA),
		              "%s+%u: %s based on %u, libdw %u", fn->name ? fn->name : "?", off,
		              sw_arch_reg_name(arch, i), r.saved_base[i], e.base[i]);
	ck_assert_msg((int)r.ra_in_reg == e.ra_in_reg, "%s+%u: ra in register %u",
	              fn->name ? fn->name : "?", off, r.ra_in_reg);
	if (r.ra_in_reg)
		ck_assert_uint_eq(r.ra_reg, SW_ARM64_LR);
	else
		ck_assert_msg(r.ra_offset == e.ra_offset, "%s+%u: ra at %d, libdw %" PRId64,
		              fn->name ? fn->name : "?", off, r.ra_offset, e.ra_offset);
	ck_assert_uint_eq(r.ra_signed, 0);
}

struct elf_file {
	int fd;
	Elf *elf;
	Dwarf *dw;
	Dwarf_CFI *eh, *debug;
};

static void open_oracle(const char *path, struct elf_file *f)
{
	elf_version(EV_CURRENT);
	f->fd = open(path, O_RDONLY);
	ck_assert_int_ge(f->fd, 0);
	f->elf = elf_begin(f->fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(f->elf);
	f->eh = dwarf_getcfi_elf(f->elf);
	f->dw = dwarf_begin_elf(f->elf, DWARF_C_READ, NULL);
	f->debug = f->dw ? dwarf_getcfi(f->dw) : NULL;
}

static void close_oracle(struct elf_file *f)
{
	if (f->eh)
		dwarf_cfi_end(f->eh);
	if (f->dw)
		dwarf_end(f->dw);
	elf_end(f->elf);
	close(f->fd);
}

static int has_function(const sw_native_function *fns, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (fns[i].name && strcmp(fns[i].name, name) == 0 && !fns[i].flags)
			return 1;
	return 0;
}

/* sw_module_skips: at most the skipped FDEs, each with a reason and its row inside it. */
static void check_skips(const sw_module *m, const sw_module_import_stats *s)
{
	const sw_module_skip *k;
	size_t nk;

	ck_assert_int_eq(sw_module_skips(m, &k, &nk), SW_OK);
	ck_assert_uint_le(nk, s->skipped);
	for (size_t i = 0; i < nk; i++) {
		ck_assert_ptr_nonnull(sw_module_skip_name(k[i].reason));
		ck_assert_uint_lt(k[i].where - k[i].start, k[i].size);
	}
}

/*
 * The skipped functions are named: x86-64 glibc's vfork keeps its return
 * address in rdi from its second byte (DW_CFA_register: r16 (rip) in r5
 * (rdi), as readelf --debug-dump=frames shows), a rule SWU cannot say.
 */
START_TEST(skips_named)
{
	static const char libc[] = "/lib/x86_64-linux-gnu/libc.so.6";
	const sw_module_skip *k;
	sw_module_import_stats s;
	sw_module *m;
	size_t nk;
	int found = 0;

	ck_assert_int_eq(sw_module_skips(NULL, &k, &nk), SW_E_INVAL);
	if (access(libc, R_OK) != 0)
		return;
	ck_assert_int_eq(sw_module_load(libc, 0x1000, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &s), SW_OK);
	check_skips(m, &s);
	ck_assert_int_eq(sw_module_skips(m, &k, &nk), SW_OK);
	for (size_t i = 0; i < nk; i++) {
		if (!k[i].name || (strcmp(k[i].name, "__vfork") != 0 && strcmp(k[i].name, "vfork") != 0))
			continue;
		ck_assert_uint_eq(k[i].reason, SW_SKIP_REGISTER_RULE);
		ck_assert_uint_eq(k[i].where, k[i].start + 1);
		ck_assert_uint_ge(k[i].start, 0x1000);       /* the load bias is applied */
		found = 1;
	}
	ck_assert_msg(found, "%s: vfork is not among the %zu skipped functions", libc, nk);
	sw_module_free(m);
}
END_TEST

/* What sw_module_load_progress reported, in order. */
struct progress_log {
	unsigned n, by_stage[2], last_stage;
	uint64_t last_done[2], total[2];
	int bad;                        /* a report out of order, backwards or past its total */
};

static void log_progress(void *data, unsigned stage, uint64_t done, uint64_t total)
{
	struct progress_log *l = data;

	if (stage > SW_MODULE_STAGE_ANALYSIS || (l->n && stage < l->last_stage) || done > total ||
	    (l->by_stage[stage] && (done < l->last_done[stage] || total != l->total[stage])))
		l->bad = 1;
	if (stage <= SW_MODULE_STAGE_ANALYSIS) {
		if (!l->by_stage[stage] && done != 0)
			l->bad = 1;             /* each stage starts at 0 */
		l->by_stage[stage]++;
		l->last_done[stage] = done;
		l->total[stage] = total;
	}
	l->last_stage = stage;
	l->n++;
}

/* The bytes of the sections the CFI stage counts, read with libelf. */
static uint64_t cfi_section_bytes(const char *path)
{
	uint64_t sum = 0;
	size_t shstrndx;
	Elf_Scn *scn = NULL;
	int fd = open(path, O_RDONLY);
	Elf *e;

	ck_assert_int_ge(fd, 0);
	elf_version(EV_CURRENT);
	e = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(e);
	ck_assert_int_eq(elf_getshdrstrndx(e, &shstrndx), 0);
	while ((scn = elf_nextscn(e, scn)) != NULL) {
		GElf_Shdr sh;
		const char *name;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
			continue;
		name = elf_strptr(e, shstrndx, sh.sh_name);
		if (name && (!strcmp(name, ".eh_frame") || !strcmp(name, ".debug_frame")))
			sum += sh.sh_size;
	}
	elf_end(e);
	close(fd);
	return sum;
}

/*
 * A full load reports both stages in order, each from 0 up to its total
 * without going back, the CFI's total the bytes libelf finds in
 * .eh_frame and .debug_frame; it loads what sw_module_load_flags loads.
 * A lazy load and a load that fails at once report nothing.
 */
START_TEST(load_progress)
{
	static const char libc[] = "/lib/x86_64-linux-gnu/libc.so.6";
	struct progress_log l;
	sw_module_import_stats with, without;
	sw_module *m;

	memset(&l, 0, sizeof l);
	ck_assert_int_eq(sw_module_load_progress("/nonexistent", 0, 0, log_progress, &l, NULL, &m),
	                 SW_E_NOTFOUND);
	ck_assert_uint_eq(l.n, 0);
	if (access(libc, R_OK) != 0)
		return;
	ck_assert_int_eq(sw_module_load_progress(libc, 0, 0, log_progress, &l, NULL, &m), SW_OK);
	ck_assert_msg(!l.bad, "a progress report out of order, backwards, or past its total");
	/* libc has some 3,000 FDEs: reported every 64, so dozens of times. */
	ck_assert_uint_gt(l.by_stage[SW_MODULE_STAGE_CFI], 10);
	ck_assert_uint_ge(l.by_stage[SW_MODULE_STAGE_ANALYSIS], 1);
	ck_assert_uint_eq(l.total[SW_MODULE_STAGE_CFI], cfi_section_bytes(libc));
	for (unsigned st = 0; st < 2; st++)
		ck_assert_uint_eq(l.last_done[st], l.total[st]);
	ck_assert_int_eq(sw_module_stats(m, &with), SW_OK);
	sw_module_free(m);
	ck_assert_int_eq(sw_module_load_flags(libc, 0, 0, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &without), SW_OK);
	sw_module_free(m);
	ck_assert_uint_eq(with.functions, without.functions);
	ck_assert_uint_eq(with.analyzed_entries, without.analyzed_entries);
	ck_assert_uint_eq(with.unwind_bytes, without.unwind_bytes);
	/* NULL: no callback at all. */
	ck_assert_int_eq(sw_module_load_progress(libc, 0, 0, NULL, NULL, NULL, &m), SW_OK);
	sw_module_free(m);

	memset(&l, 0, sizeof l);
	ck_assert_int_eq(sw_module_load_progress(libc, 0, SW_MODULE_LAZY, log_progress, &l, NULL, &m),
	                 SW_OK);
	ck_assert_uint_eq(l.n, 0);
	sw_module_free(m);
}
END_TEST

/* Every address of every imported function agrees with libdw. */
START_TEST(every_address)
{
	unsigned c = (unsigned)_i / NVARIANTS, v = (unsigned)_i % NVARIANTS;
	const sw_native_function *fns;
	sw_module_import_stats s;
	struct elf_file ef;
	char path[256], reasons[256] = "";
	uint64_t addresses = 0, derefs = 0;
	unsigned stride = test_stride();
	sw_module *m;
	sw_arch arch;
	size_t n;

	if (!have_chain(c))
		return;
	bin_path(path, sizeof path, c, v);
	ck_assert_msg(access(path, R_OK) == 0, "%s was not built", path);
	ck_assert_int_eq(sw_module_load(path, 0, &arch, &m), SW_OK);
	ck_assert_int_eq(arch, chains[c].arch);
	ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &s), SW_OK);
	/* Every load analyzes the PLT entries no FDE covers (AArch64's). */
	ck_assert_uint_eq(n, s.functions + s.outermost + s.analyzed_entries);
	ck_assert_uint_eq(s.fdes, s.functions + s.outermost + s.skipped + s.ignored);
	/* The compilers' CFI here is all expressible but for these reasons. */
	ck_assert_uint_eq(s.skipped_by[SW_SKIP_BAD_CFI], 0);
	ck_assert_uint_eq(s.skipped_by[SW_SKIP_LIMIT], 0);
	ck_assert_uint_eq(s.skipped_by[SW_SKIP_OVERLAP], 0);
	ck_assert_uint_eq(s.skipped_by[SW_SKIP_UNKNOWN_REGISTER], 0);
	for (const char *const *want = variants[v].shared ? lib_functions : prog_functions; *want; want++)
		ck_assert_msg(has_function(fns, n, *want), "%s: %s not imported", path, *want);
	if (strstr(path, "debugframe"))
		ck_assert_uint_gt(s.from_debug_frame, 8);
	/* i686 main realigns its stack: its CFI's expressions are imported now. */
	if (!variants[v].shared)
		ck_assert_msg(has_function(fns, n, "main"), "%s: main not imported", path);
	check_skips(m, &s);

	open_oracle(path, &ef);
	for (size_t i = 0; i < n; i++) {
		Dwarf_CFI *cfi = fns[i].source == SW_CFI_EH_FRAME ? ef.eh : ef.debug;

		ck_assert_int_eq(sw_swu_validate(fns[i].unwind, fns[i].unwind_size), SW_OK);
		ck_assert_ptr_eq(fns[i].module, m);
		if (i > 0)
			ck_assert_uint_ge(fns[i].start, fns[i - 1].start + fns[i - 1].size);
		if (fns[i].flags)
			continue;
		ck_assert_ptr_nonnull(cfi);
		for (uint32_t off = 0; off < fns[i].size; off += stride, addresses++) {
			sw_swu_rule r;

			compare(&fns[i], arch, cfi, 0, off);
			ck_assert_int_eq(sw_swu_decode(fns[i].unwind, fns[i].unwind_size, off, &r), SW_OK);
			derefs += r.cfa_deref;
		}
	}
	close_oracle(&ef);
	/* GCC's i386 main realigns its stack: CFA = [ebp - n], compared above. */
	if (arch == SW_ARCH_X86 && !variants[v].shared)
		ck_assert_msg(derefs > 0, "%s: no CFA read from memory", path);
	for (unsigned r = 0; r < SW_SKIP_COUNT; r++)
		if (s.skipped_by[r])
			snprintf(reasons + strlen(reasons), sizeof reasons - strlen(reasons), " %s %u",
			         sw_module_skip_name(r), s.skipped_by[r]);
	printf("%-24s %3u FDEs: %3u imported (%u .debug_frame), %u ignored, %u skipped%s%s; "
	       "%" PRIu64 " addresses compared, %u row ops, %" PRIu64 " SWU bytes\n",
	       path + sizeof BIN_DIR, s.fdes, s.functions, s.from_debug_frame, s.ignored, s.skipped,
	       s.skipped ? ":" : "", reasons, addresses, s.row_ops, s.unwind_bytes);
	sw_module_free(m);
}
END_TEST

/* ---- Symbols against nm ---- */

struct nm_sym {
	uint64_t addr, size;
	char name[128];
};

static size_t read_nm(const char *nm, const char *path, struct nm_sym *out, size_t cap)
{
	char cmd[512], line[512];
	size_t n = 0;
	FILE *p;

	snprintf(cmd, sizeof cmd, "%s -S --defined-only %s 2>/dev/null", nm, path);
	p = popen(cmd, "r");
	ck_assert_ptr_nonnull(p);
	while (fgets(line, sizeof line, p) && n < cap) {
		unsigned long long a, s;
		char type, name[128];

		/* Only symbols with a size: "addr size type name". */
		if (sscanf(line, "%llx %llx %c %127s", &a, &s, &type, name) != 4)
			continue;
		if (!strchr("TtWwi", type) || s == 0)
			continue;
		out[n].addr = a;
		out[n].size = s;
		snprintf(out[n].name, sizeof out[n].name, "%s", name);
		n++;
	}
	pclose(p);
	return n;
}

/* Is `name` one of nm's symbols at `addr`? */
static int nm_has(const struct nm_sym *syms, size_t n, uint64_t addr, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (syms[i].addr == addr && strcmp(syms[i].name, name) == 0)
			return 1;
	return 0;
}

START_TEST(symbols_match_nm)
{
	unsigned c = (unsigned)_i / NVARIANTS, v = (unsigned)_i % NVARIANTS;
	const uint64_t bias = 0x10000000;
	static struct nm_sym syms[4096];
	const sw_native_function *fns;
	const char *name;
	uint64_t off;
	char path[256], nm[64];
	sw_module *m;
	size_t n, nfns, named = 0;

	if (!have_chain(c))
		return;
	bin_path(path, sizeof path, c, v);
	/* The cross nm, or the host's, which reads any ELF. */
	snprintf(nm, sizeof nm, "command -v %s >/dev/null 2>&1", chains[c].nm);
	snprintf(nm, sizeof nm, "%s", system(nm) == 0 ? chains[c].nm : "nm");
	n = read_nm(nm, path, syms, sizeof syms / sizeof syms[0]);
	ck_assert_uint_ge(n, variants[v].shared ? 2 : 10);
	ck_assert_int_eq(sw_module_load(path, bias, NULL, &m), SW_OK);
	for (size_t i = 0; i < n; i++) {
		uint64_t last = syms[i].addr + syms[i].size - 1;

		ck_assert_msg(sw_module_symbolize(m, syms[i].addr + bias, &name, &off) == SW_OK,
		              "%s: no symbol at %s", path, syms[i].name);
		ck_assert_msg(off == 0 && nm_has(syms, n, syms[i].addr, name),
		              "%s: %s at %#" PRIx64 " symbolized as %s+%" PRIu64, path, syms[i].name,
		              syms[i].addr, name, off);
		ck_assert_int_eq(sw_module_symbolize(m, last + bias, &name, &off), SW_OK);
		ck_assert_msg(nm_has(syms, n, last - off, name), "%s: %#" PRIx64 " is %s+%" PRIu64,
		              path, last, name, off);
	}
	/* Below every symbol, and far beyond them. */
	ck_assert_int_eq(sw_module_symbolize(m, bias - 1, &name, &off), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_module_symbolize(m, UINT64_MAX, &name, &off), SW_E_NOTFOUND);
	/* Imported functions carry the name of the symbol at their start. */
	ck_assert_int_eq(sw_module_functions(m, &fns, &nfns), SW_OK);
	for (size_t i = 0; i < nfns; i++) {
		if (!fns[i].name)
			continue;
		named++;
		ck_assert_msg(nm_has(syms, n, fns[i].start - bias, fns[i].name) ||
		              sw_module_symbolize(m, fns[i].start, &name, &off) == SW_OK,
		              "%s: function %s", path, fns[i].name);
	}
	ck_assert_uint_ge(named, variants[v].shared ? 2 : 10);
	sw_module_free(m);
}
END_TEST

/* ---- Registration ---- */

START_TEST(register_in_codemap)
{
	const sw_native_function *fns;
	sw_codemap *map;
	sw_code_info info;
	char path[256];
	sw_module *m, *again;
	size_t n;

	if (!have_chain((unsigned)_i))
		return;
	bin_path(path, sizeof path, (unsigned)_i, 4);
	ck_assert_int_eq(sw_module_load(path, 0x400000, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_load(path, 0x400000, NULL, &again), SW_OK);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_module_register(m, map), SW_OK);
	ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
	ck_assert_uint_eq(sw_codemap_count(map), n);
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(sw_codemap_find(map, fns[i].start + fns[i].size - 1, &info), SW_OK);
		ck_assert_ptr_eq(info.method, &fns[i]);
		ck_assert_uint_eq(info.start, fns[i].start);
		ck_assert_uint_eq(info.flags, SW_CODE_NATIVE | fns[i].flags);
		ck_assert_int_eq(memcmp(info.unwind, fns[i].unwind, fns[i].unwind_size), 0);
	}
	/* The same code twice: refused, and nothing of the second stays. */
	ck_assert_int_eq(sw_module_register(again, map), SW_E_EXISTS);
	ck_assert_uint_eq(sw_codemap_count(map), n);
	ck_assert_int_eq(sw_module_unregister(m, map), SW_OK);
	ck_assert_uint_eq(sw_codemap_count(map), 0);
	ck_assert_int_eq(sw_module_register(again, map), SW_OK);
	ck_assert_uint_eq(sw_codemap_count(map), n);
	ck_assert_int_eq(sw_module_unregister(again, map), SW_OK);
	sw_codemap_synchronize(map);
	sw_codemap_destroy(map);
	sw_module_free(m);
	sw_module_free(again);
}
END_TEST

/* The C library this test runs with: a large module with many small, similar functions. */
static int find_libc(struct dl_phdr_info *info, size_t size, void *data)
{
	char *out = data;

	(void)size;
	if (info->dlpi_name && strstr(info->dlpi_name, "/libc.so.")) {
		snprintf(out, 4096, "%s", info->dlpi_name);
		return 1;
	}
	return 0;
}

static int by_blob(const void *pa, const void *pb)
{
	const sw_native_function *a = *(const sw_native_function *const *)pa;
	const sw_native_function *b = *(const sw_native_function *const *)pb;

	if (a->unwind_size != b->unwind_size)
		return a->unwind_size < b->unwind_size ? -1 : 1;
	return memcmp(a->unwind, b->unwind, a->unwind_size);
}

/*
 * Functions with the same unwind program share one copy of its blob, and
 * the module's SWU bytes are those of the distinct blobs.
 */
START_TEST(identical_programs_stored_once)
{
	static char libc[4096];
	const sw_native_function *fns, **v;
	sw_module_import_stats st;
	uint64_t distinct = 0, total = 0;
	size_t n, shared = 0;
	sw_module *m;

	ck_assert_int_eq(dl_iterate_phdr(find_libc, libc), 1);
	ck_assert_int_eq(sw_module_load(libc, 0, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &st), SW_OK);
	v = malloc(n * sizeof *v);
	ck_assert_ptr_nonnull(v);
	for (size_t i = 0; i < n; i++) {
		v[i] = &fns[i];
		total += fns[i].unwind_size;
	}
	qsort(v, n, sizeof *v, by_blob);
	for (size_t i = 0; i < n; i++) {
		if (i > 0 && by_blob(&v[i - 1], &v[i]) == 0) {
			ck_assert_msg(v[i - 1]->unwind == v[i]->unwind, "%s and %s: the same program, two copies",
			              v[i - 1]->name ? v[i - 1]->name : "?", v[i]->name ? v[i]->name : "?");
			shared++;
			continue;
		}
		distinct += v[i]->unwind_size;
	}
	ck_assert_uint_eq(st.unwind_bytes, distinct);
	ck_assert_msg(shared > n / 10, "only %zu of %zu functions share their program", shared, n);
	ck_assert_uint_lt(st.unwind_bytes, total);
	free(v);
	sw_module_free(m);
}
END_TEST

/* Observers hear of each function of a module registered as one table. */
static void count_event(void *data, sw_codemap_event event, const sw_code_info *info)
{
	long *counts = data;

	counts[event == SW_CODEMAP_ADDED ? 0 : 1]++;
	/* A removed function's blob may be gone: observers get none. */
	if (event == SW_CODEMAP_REMOVED && info->unwind)
		counts[2]++;
}

/*
 * libc, registered as one code table: every function is found at its
 * first, middle and last byte with what the module says of it (the blob
 * not copied), nothing between functions or around the module; its range
 * is refused to methods and to a second registration, and its index costs
 * 8 bytes a function and 4 a distinct blob.
 */
START_TEST(module_as_code_table)
{
	static char libc[4096];
	const sw_native_function *fns;
	sw_codemap_observer obs = { 0 };
	sw_module_import_stats st;
	sw_code_info info, method;
	long events[3] = { 0, 0, 0 };
	uint8_t blob[64];
	size_t n, len, gaps = 0;
	sw_codemap *map;
	sw_module *m;
	sw_swu_builder *b;

	ck_assert_int_eq(dl_iterate_phdr(find_libc, libc), 1);
	ck_assert_int_eq(sw_module_load(libc, 0x7f0000000000ull, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &st), SW_OK);
	ck_assert_uint_gt(n, 1000);
	ck_assert_uint_ge(st.index_bytes, 8 * n);
	ck_assert_uint_le(st.index_bytes, 12 * n + 256);

	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	obs.notify = count_event;
	obs.data = events;
	ck_assert_int_eq(sw_codemap_observe(map, &obs), SW_OK);
	ck_assert_int_eq(sw_module_register(m, map), SW_OK);
	ck_assert_int_eq(events[0], (long)n);
	ck_assert_uint_eq(sw_codemap_count(map), n);
	for (size_t i = 0; i < n; i++) {
		const uint64_t at[3] = { fns[i].start, fns[i].start + fns[i].size / 2,
		                         fns[i].start + fns[i].size - 1 };

		for (int k = 0; k < 3; k++) {
			ck_assert_int_eq(sw_codemap_find(map, at[k], &info), SW_OK);
			ck_assert_ptr_eq(info.method, &fns[i]);
			ck_assert_uint_eq(info.start, fns[i].start);
			ck_assert_uint_eq(info.size, fns[i].size);
			ck_assert_ptr_eq(info.unwind, fns[i].unwind);
			ck_assert_uint_eq(info.unwind_size, fns[i].unwind_size);
			ck_assert_uint_eq(info.flags, SW_CODE_NATIVE | fns[i].flags);
			ck_assert_ptr_null(info.parent);
		}
		/* Padding between functions belongs to none. */
		if (i + 1 < n && fns[i].start + fns[i].size < fns[i + 1].start) {
			ck_assert_int_eq(sw_codemap_find(map, fns[i].start + fns[i].size, &info), SW_E_NOTFOUND);
			ck_assert_int_eq(sw_codemap_find(map, fns[i + 1].start - 1, &info), SW_E_NOTFOUND);
			gaps++;
		}
	}
	ck_assert_uint_gt(gaps, 0);
	ck_assert_int_eq(sw_codemap_find(map, fns[0].start - 1, &info), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_codemap_find(map, fns[n - 1].start + fns[n - 1].size, &info), SW_E_NOTFOUND);
	/* A function of the table is not a method of its own. */
	ck_assert_int_eq(sw_codemap_remove(map, fns[1].start), SW_E_NOTFOUND);

	/* Methods: refused inside the module's range, gaps included; welcome outside. */
	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_finish(b, 16, blob, sizeof blob, &len), SW_OK);
	sw_swu_builder_destroy(b);
	method = (sw_code_info){ .method = &method, .size = 16, .unwind = blob,
	                         .unwind_size = (uint32_t)len };
	method.start = fns[n / 2].start;
	ck_assert_int_eq(sw_codemap_add(map, &method), SW_E_EXISTS);
	method.start = fns[0].start - 8;
	ck_assert_int_eq(sw_codemap_add(map, &method), SW_E_EXISTS);
	method.start = fns[0].start - 16;
	ck_assert_int_eq(sw_codemap_add(map, &method), SW_OK);
	ck_assert_int_eq(sw_codemap_find(map, fns[0].start - 1, &info), SW_OK);
	ck_assert_ptr_eq(info.method, &method);
	ck_assert_int_eq(sw_module_register(m, map), SW_E_EXISTS);

	ck_assert_int_eq(sw_module_unregister(m, map), SW_OK);
	ck_assert_int_eq(events[1], (long)n);
	ck_assert_int_eq(events[2], 0);
	ck_assert_uint_eq(sw_codemap_count(map), 1);
	ck_assert_int_eq(sw_codemap_find(map, fns[n / 2].start, &info), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_module_unregister(m, map), SW_E_NOTFOUND);
	/* A method inside the range keeps the module out until it goes. */
	method.start = fns[n / 2].start;
	ck_assert_int_eq(sw_codemap_add(map, &method), SW_OK);
	ck_assert_int_eq(sw_module_register(m, map), SW_E_EXISTS);
	ck_assert_int_eq(sw_codemap_remove(map, method.start), SW_OK);
	ck_assert_int_eq(sw_module_register(m, map), SW_OK);
	ck_assert_int_eq(sw_codemap_find(map, fns[n / 2].start, &info), SW_OK);
	ck_assert_ptr_eq(info.method, &fns[n / 2]);
	ck_assert_int_eq(sw_module_unregister(m, map), SW_OK);

	ck_assert_int_eq(sw_codemap_unobserve(map, &obs), SW_OK);
	sw_codemap_synchronize(map);
	sw_codemap_destroy(map);
	sw_module_free(m);
}
END_TEST

/* ---- Signal trampolines without CFI ---- */

/* The value of the symbol `name` in .symtab of the ELF file at `path`, or 0. */
static uint64_t elf_symbol(const char *path, const char *name)
{
	uint64_t value = 0;
	int fd = open(path, O_RDONLY);
	Elf *elf;

	ck_assert_msg(fd >= 0, "cannot open %s", path);
	ck_assert_int_ne(elf_version(EV_CURRENT), EV_NONE);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	for (Elf_Scn *scn = NULL; !value && (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || sh.sh_entsize == 0 ||
		    !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym sym;
			const char *n;

			if (gelf_getsym(d, (int)i, &sym) && (n = elf_strptr(elf, sh.sh_link, sym.st_name)) &&
			    strcmp(n, name) == 0) {
				value = sym.st_value;
				break;
			}
		}
	}
	elf_end(elf);
	close(fd);
	return value;
}

/* The function containing `addr`, or NULL. */
static const sw_native_function *function_at(const sw_native_function *fns, size_t n, uint64_t addr)
{
	for (size_t i = 0; i < n; i++)
		if (addr - fns[i].start < fns[i].size)
			return &fns[i];
	return NULL;
}

static unsigned count_source(const sw_native_function *fns, size_t n, uint32_t source)
{
	unsigned k = 0;

	for (size_t i = 0; i < n; i++)
		k += fns[i].source == source;
	return k;
}

/*
 * tests/cfi/sigreturn.S: each sigreturn sequence no CFI covers is a signal
 * trampoline, from the byte before it (padding, or the nop between two),
 * with a blob of no frame, with or without instruction analysis (which
 * leaves the trampolines' sized symbols alone); the same instructions in
 * _start (CFI) or off arm64's instruction grid are none.
 */
START_TEST(sigreturn_without_cfi)
{
	static const char *const names[2] = { "sig_rt", "sig_plain" };
	static const unsigned lens[NCHAINS][2] = { { 9, 0 }, { 7, 8 }, { 8, 0 } };
	const uint64_t bias = 0x200000;
	unsigned c = (unsigned)_i;
	char path[256];

	if (!have_chain(c))
		return;
	snprintf(path, sizeof path, BIN_DIR "/%s-sigreturn", chains[c].name);
	for (unsigned flags = 0; flags <= SW_MODULE_ANALYZE; flags += SW_MODULE_ANALYZE) {
		const sw_native_function *fns, *f;
		sw_module_import_stats s;
		unsigned want = 0;
		sw_module *m;
		size_t n;

		ck_assert_int_eq(sw_module_load_flags(path, bias, flags, NULL, &m), SW_OK);
		ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
		ck_assert_int_eq(sw_module_stats(m, &s), SW_OK);
		for (unsigned k = 0; k < 2 && lens[c][k]; k++, want++) {
			uint64_t at = elf_symbol(path, names[k]);

			ck_assert_msg(at != 0, "%s: no symbol %s", path, names[k]);
			at += bias;
			f = function_at(fns, n, at);
			ck_assert_msg(f != NULL, "%s: %s is in no function", path, names[k]);
			ck_assert_uint_eq(f->start, at - 1);
			ck_assert_uint_eq(f->size, lens[c][k] + 1);
			ck_assert_uint_eq(f->source, SW_CFI_SIGRETURN_CODE);
			ck_assert_uint_eq(f->flags, SW_CODE_SIGNAL_TRAMPOLINE);
			ck_assert_int_eq(sw_swu_validate(f->unwind, f->unwind_size), SW_OK);
		}
		ck_assert_uint_eq(count_source(fns, n, SW_CFI_SIGRETURN_CODE), want);
		ck_assert_uint_eq(s.sigreturn_code, want);
		ck_assert_uint_eq(s.signal_trampolines, 0);
		ck_assert_uint_eq(s.fdes, s.functions + s.outermost + s.skipped + s.ignored);
		ck_assert_uint_eq(n, s.functions + s.sigreturn_code + s.analyzed_entries + s.outermost);
		f = function_at(fns, n, elf_symbol(path, "_start") + bias);
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(f->source, SW_CFI_EH_FRAME);
		ck_assert_uint_eq(f->flags, 0);
		sw_module_free(m);
	}
}
END_TEST

/*
 * The static C library's trampolines: glibc's i386 __restore_rt and
 * __restore (its SA_RESTORER where there is no vDSO: qemu-user, vdso32=0)
 * have no CFI and are found by their code; x86-64's __restore_rt has CFI
 * that marks it; arm64's glibc has none (the vDSO's is used).
 */
START_TEST(sigreturn_static_glibc)
{
	static const char *const names[2] = { "__restore_rt", "__restore" };
	unsigned c = (unsigned)_i;
	const sw_native_function *fns, *f;
	sw_module_import_stats s;
	char path[256];
	sw_module *m;
	size_t n;

	if (!have_chain(c))
		return;
	snprintf(path, sizeof path, BIN_DIR "/%s-static", chains[c].name);
	ck_assert_int_eq(sw_module_load(path, 0, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &s), SW_OK);
	/* analyzed_entries: the .iplt's entries (IFUNC calls), which have no CFI. */
	ck_assert_uint_eq(n, s.functions + s.outermost + s.sigreturn_code + s.analyzed_entries);
	ck_assert_uint_eq(count_source(fns, n, SW_CFI_SIGRETURN_CODE), s.sigreturn_code);
	switch (chains[c].arch) {
	case SW_ARCH_X86:
		ck_assert_uint_eq(s.sigreturn_code, 2);
		for (unsigned k = 0; k < 2; k++) {
			uint64_t at = elf_symbol(path, names[k]);

			ck_assert_msg(at != 0, "%s: no symbol %s", path, names[k]);
			f = function_at(fns, n, at);
			ck_assert_msg(f != NULL, "%s: %s is in no function", path, names[k]);
			ck_assert_uint_eq(f->source, SW_CFI_SIGRETURN_CODE);
			ck_assert_uint_eq(f->flags, SW_CODE_SIGNAL_TRAMPOLINE);
			ck_assert_uint_eq(f->start, at - 1);
		}
		break;
	case SW_ARCH_X64:
		ck_assert_uint_eq(s.sigreturn_code, 0);
		f = function_at(fns, n, elf_symbol(path, "__restore_rt"));
		ck_assert_ptr_nonnull(f);
		ck_assert_uint_eq(f->source, SW_CFI_EH_FRAME);
		ck_assert_uint_eq(f->flags, SW_CODE_SIGNAL_TRAMPOLINE);
		break;
	default:
		ck_assert_uint_eq(s.sigreturn_code, 0);
		break;
	}
	printf("%s: %u signal trampolines from CFI, %u by their code\n", path, s.signal_trampolines,
	       s.sigreturn_code);
	sw_module_free(m);
}
END_TEST

struct sig_walk {
	unsigned n;
	uint64_t ip[8];
	int interrupted[8];
	sw_frame_trust trust[8];
	uint32_t code_flags[8];
	sw_regdisplay rd[8];
};

static sw_walk_action sig_walk_cb(const sw_crawl_frame *cf, void *data)
{
	struct sig_walk *w = data;
	sw_frame_state st = sw_crawl_frame_state(cf);
	const sw_code_info *ci = sw_crawl_frame_code_info(cf);

	if (st != SW_STATE_FRAMELESS && st != SW_STATE_NATIVE_FRAME)
		return SW_CONTINUE;
	if (w->n == 8)
		return SW_ABORT;
	w->rd[w->n] = *sw_crawl_frame_regdisplay(cf);
	w->ip[w->n] = sw_context_ip(&w->rd[w->n].cur);
	w->interrupted[w->n] = sw_crawl_frame_is_interrupted(cf);
	w->trust[w->n] = sw_crawl_frame_trust(cf);
	w->code_flags[w->n] = ci ? ci->flags : 0;
	w->n++;
	return SW_CONTINUE;
}

/* `len` bytes of the ELF file at `path` at address `addr`, from its sections. */
static void elf_code(const char *path, uint64_t addr, uint8_t *buf, size_t len)
{
	int fd = open(path, O_RDONLY), found = 0;
	Elf *elf;

	ck_assert_msg(fd >= 0, "cannot open %s", path);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	ck_assert_ptr_nonnull(elf);
	for (Elf_Scn *scn = NULL; !found && (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_PROGBITS && addr >= sh.sh_addr &&
		    addr + len <= sh.sh_addr + sh.sh_size && (d = elf_getdata(scn, NULL)) &&
		    d->d_size == sh.sh_size) {
			memcpy(buf, (const uint8_t *)d->d_buf + (addr - sh.sh_addr), len);
			found = 1;
		}
	}
	elf_end(elf);
	close(fd);
	ck_assert_msg(found, "%s: no code at %#" PRIx64, path, addr);
}

/* A stack and a few code bytes: the target memory of sigreturn_walk_i386. */
struct sig_memory {
	const uint8_t *stack;
	uint64_t stack_lo, stack_hi, code_at;
	uint8_t code[16];
};

static sw_status sig_memory_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const struct sig_memory *sm = ctx;

	if (addr >= sm->stack_lo && addr <= sm->stack_hi && len <= sm->stack_hi - addr) {
		memcpy(buf, sm->stack + (addr - sm->stack_lo), len);
		return SW_OK;
	}
	if (addr >= sm->code_at && addr <= sm->code_at + sizeof sm->code &&
	    len <= sm->code_at + sizeof sm->code - addr) {
		memcpy(buf, sm->code + (addr - sm->code_at), len);
		return SW_OK;
	}
	return SW_E_BADADDR;
}

static void put32(uint8_t *stack, uint64_t base, uint64_t addr, uint64_t v)
{
	uint32_t w = (uint32_t)v;

	memcpy(stack + (addr - base), &w, 4);
}

/*
 * Walks through glibc's i386 trampolines, their signal frames laid out as
 * the kernel (or qemu-user) lays them out: the handler (cfi_leaf, at its
 * first instruction) returns to __restore_rt with SP at the rt_sigframe's
 * signal number, then the siginfo and ucontext pointers; or to __restore
 * with SP at the sigframe's signal number, then the sigcontext.  The
 * interrupted frame comes back from the sigcontext (EIP, ESP, EBX with
 * the address it was read from), natively and through the module's SWU
 * image.
 */
START_TEST(sigreturn_walk_i386)
{
	enum { BASE = 0x10000, SIZE = 4096, SP = BASE + 0x100, INT_SP = BASE + 0x800 };
	const char *path = BIN_DIR "/x86-static";
	uint64_t leaf;

	if (!have_chain(1))
		return;
	leaf = elf_symbol(path, "cfi_leaf");
	ck_assert_uint_ne(leaf, 0);
	for (int rt = 0; rt <= 1; rt++) {
		uint64_t tramp = elf_symbol(path, rt ? "__restore_rt" : "__restore");
		/* Where the handler returns, SP + 4: the signal number, then... */
		uint64_t sc = rt ? SP + 4 + 12 + 128 + 20 : SP + 8;
		static uint8_t stack[SIZE];
		struct sig_memory sm = { stack, BASE, BASE + SIZE, tramp, { 0 } };
		void *image;
		size_t len = 0;
		sw_codemap *map;
		sw_module *m;
		sw_image *img;
		sw_memory mem;
		sw_thread t;
		sw_context ctx;

		ck_assert_uint_ne(tramp, 0);
		memset(stack, 0, sizeof stack);
		put32(stack, BASE, SP, tramp);
		put32(stack, BASE, SP + 4, 10);                         /* SIGUSR1 */
		if (rt) {
			put32(stack, BASE, SP + 8, SP + 16);            /* the siginfo */
			put32(stack, BASE, SP + 12, sc - 20);           /* the ucontext */
		}
		put32(stack, BASE, sc + 24, INT_SP + 0x40);             /* ebp */
		put32(stack, BASE, sc + 28, INT_SP);                    /* esp */
		put32(stack, BASE, sc + 32, 0x1234);                    /* ebx */
		put32(stack, BASE, sc + 56, leaf);                      /* eip */
		/*
		 * The interrupted cfi_leaf returns to 0: a managed walk ends
		 * there; a native one stops, since cfi_leaf is no thread's
		 * first function (SW_E_NOTFOUND at IP 0, gdb's "zero PC").
		 */
		put32(stack, BASE, INT_SP, 0);
		/* The stack, and the trampoline's code: its first byte tells the frames apart. */
		elf_code(path, tramp, sm.code, sizeof sm.code);
		ck_assert_int_eq(sw_memory_init_buffer(&mem, stack, sizeof stack, BASE), SW_OK);
		mem.read = sig_memory_read;
		mem.ctx = &sm;
		sw_context_init(&ctx, SW_ARCH_X86);
		sw_context_set(&ctx, SW_X86_EIP, leaf);
		sw_context_set(&ctx, SW_X86_ESP, SP);

		ck_assert_int_eq(sw_module_load(path, 0, NULL, &m), SW_OK);
		ck_assert_int_eq(sw_module_write_image(m, NULL, 0, &len), SW_E_LIMIT);
		image = malloc(len);
		ck_assert_ptr_nonnull(image);
		ck_assert_int_eq(sw_module_write_image(m, image, len, &len), SW_OK);
		for (int managed = 0; managed <= 1; managed++) {
			struct sig_walk w;
			sw_walk_error err;
			sw_walk_action end;

			ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
			if (managed)
				ck_assert_int_eq(sw_codemap_add_image(map, image, len, 0, 0, &img), SW_OK);
			else
				ck_assert_int_eq(sw_module_register(m, map), SW_OK);
			ck_assert_int_eq(sw_thread_init(&t, SW_ARCH_X86, map, &mem, 0, BASE, BASE + SIZE),
			                 SW_OK);
			memset(&w, 0, sizeof w);
			end = sw_walk_frames(&t, &ctx, 0, sig_walk_cb, &w, managed ? 0 : SW_WALK_NATIVE_FRAMES,
			                     &err);
			if (managed) {
				ck_assert_int_ne(end, SW_FAILED);
			} else {
				ck_assert_int_eq(end, SW_FAILED);
				ck_assert_int_eq(err.status, SW_E_NOTFOUND);
				ck_assert_uint_eq(err.ip, 0);
			}
			ck_assert_msg(w.n == 3, "%s, %s: %u frames", rt ? "__restore_rt" : "__restore",
			              managed ? "managed" : "native", w.n);
			ck_assert_uint_eq(w.ip[0], leaf);
			ck_assert_uint_eq(w.ip[1], tramp);
			ck_assert(w.code_flags[1] & SW_CODE_SIGNAL_TRAMPOLINE);
			ck_assert_uint_eq(w.ip[2], leaf);
			ck_assert_int_eq(w.interrupted[2], 1);
			ck_assert_int_eq(w.trust[2], SW_TRUST_SIGNAL);
			ck_assert_uint_eq(sw_context_sp(&w.rd[2].cur), INT_SP);
			ck_assert_uint_eq(w.rd[2].cur.regs[SW_X86_EBX], 0x1234);
			ck_assert_uint_eq(w.rd[2].cur_loc[SW_X86_EBX], sc + 32);
			ck_assert_uint_eq(w.rd[2].cur.regs[SW_X86_EBP], INT_SP + 0x40);
			if (managed) {
				sw_codemap_remove_image(map, img);
				sw_codemap_synchronize(map);
				sw_image_free(img);
			} else {
				ck_assert_int_eq(sw_module_unregister(m, map), SW_OK);
				sw_codemap_synchronize(map);
			}
			sw_codemap_destroy(map);
		}
		free(image);
		sw_module_free(m);
	}
}
END_TEST

/* ---- Refusals and hostile files ---- */

START_TEST(bad_files)
{
	static const char text[] = "not an ELF file at all\n";
	char path[256], obj[256];
	sw_module *m = (sw_module *)&m;
	unsigned char *buf;
	size_t len;
	FILE *f;

	ck_assert_int_eq(sw_module_load(NULL, 0, NULL, &m), SW_E_INVAL);
	ck_assert_ptr_null(m);
	ck_assert_int_eq(sw_module_load("/nonexistent/file", 0, NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_module_load("/nonexistent/file", 0, NULL, &m), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_module_load("/dev/null", 0, NULL, &m), SW_E_UNSUPPORTED);
	ck_assert_int_eq(sw_module_load("/", 0, NULL, &m), SW_E_UNSUPPORTED);
	/* A FIFO, as a core or a process's maps may name: refused at once, not waited on. */
	snprintf(path, sizeof path, "/tmp/sw-check-cfi-fifo.%d", (int)getpid());
	unlink(path);
	ck_assert_int_eq(mkfifo(path, 0600), 0);
	alarm(30);
	ck_assert_int_eq(sw_module_load(path, 0, NULL, &m), SW_E_UNSUPPORTED);
	alarm(0);
	unlink(path);
	ck_assert_int_eq(sw_module_load_image(text, sizeof text, 0, NULL, &m), SW_E_UNSUPPORTED);
	ck_assert_int_eq(sw_module_load_image(text, 0, 0, NULL, &m), SW_E_INVAL);
	ck_assert_int_eq(sw_module_load_image(NULL, 10, 0, NULL, &m), SW_E_INVAL);
	ck_assert_ptr_null(sw_module_skip_name(SW_SKIP_COUNT));
	ck_assert_str_eq(sw_module_skip_name(SW_SKIP_EXPRESSION), "expression");
	ck_assert_int_eq(sw_module_stats(NULL, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_module_register(NULL, NULL), SW_E_INVAL);
	sw_module_free(NULL);
	if (!have_chain(0))
		return;
	/* A relocatable object has no final addresses. */
	snprintf(obj, sizeof obj, BIN_DIR "/x64.o");
	ck_assert_int_eq(sw_module_load(obj, 0, NULL, &m), SW_E_UNSUPPORTED);
	/* A file cut inside its ELF header. */
	bin_path(path, sizeof path, 0, 4);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	buf = malloc(1 << 20);
	len = fread(buf, 1, 1 << 20, f);
	fclose(f);
	f = fopen(BIN_DIR "/cut", "wb");
	ck_assert_ptr_nonnull(f);
	fwrite(buf, 1, 40, f);
	fclose(f);
	ck_assert_int_eq(sw_module_load(BIN_DIR "/cut", 0, NULL, &m), SW_E_TRUNCATED);
	/* 64-bit x86 code claiming to be 32-bit. */
	buf[EI_CLASS] = ELFCLASS32;
	ck_assert_int_ne(sw_module_load_image(buf, len, 0, NULL, &m), SW_OK);
	free(buf);
}
END_TEST

static uint64_t rng = 0x9e3779b97f4a7c15ULL;

static uint64_t next_random(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* Whatever a corrupted file gives must be consistent and safe to use. */
static void load_hostile(const unsigned char *img, size_t len, unsigned *ok)
{
	const sw_native_function *fns;
	sw_module_import_stats s;
	sw_codemap *map;
	sw_module *m = NULL;
	const char *name;
	uint64_t off;
	size_t n;
	sw_status st = sw_module_load_image(img, len, 0, NULL, &m);

	if (st != SW_OK) {
		ck_assert_ptr_null(m);
		ck_assert_int_lt(st, 0);
		return;
	}
	(*ok)++;
	ck_assert_int_eq(sw_module_functions(m, &fns, &n), SW_OK);
	ck_assert_int_eq(sw_module_stats(m, &s), SW_OK);
	/* Every FDE counted once; outermost may add a _start symbol no FDE covers (analysis). */
	ck_assert_uint_le(s.fdes, s.functions + s.outermost + s.skipped + s.ignored);
	ck_assert_uint_le(s.functions + s.outermost + s.skipped + s.ignored, s.fdes + 1);
	for (size_t i = 0; i < n; i++) {
		sw_swu_rule r;
		uint64_t step = fns[i].size / 64 + 1;

		ck_assert_int_eq(sw_swu_validate(fns[i].unwind, fns[i].unwind_size), SW_OK);
		if (i > 0)
			ck_assert_uint_ge(fns[i].start, fns[i - 1].start + fns[i - 1].size);
		for (uint64_t o = 0; o <= fns[i].size; o += step)
			ck_assert_int_eq(sw_swu_decode(fns[i].unwind, fns[i].unwind_size, (uint32_t)o, &r),
			                 SW_OK);
		sw_module_symbolize(m, fns[i].start, &name, &off);
	}
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	/* Overlaps were dropped at load: registering must succeed. */
	ck_assert_int_eq(sw_module_register(m, map), SW_OK);
	ck_assert_int_eq(sw_module_unregister(m, map), SW_OK);
	sw_codemap_synchronize(map);
	sw_codemap_destroy(map);
	sw_module_free(m);
}

/* Where a section's bytes lie in the file, or 0 if it has none. */
static size_t section_at(const unsigned char *img, size_t len, const char *want, size_t *size)
{
	Elf *elf = elf_memory((char *)img, len);
	size_t shstrndx, off = 0;

	*size = 0;
	if (!elf)
		return 0;
	if (elf_getshdrstrndx(elf, &shstrndx) == 0) {
		for (Elf_Scn *scn = NULL; (scn = elf_nextscn(elf, scn)) != NULL;) {
			GElf_Shdr sh;
			const char *name;

			if (!gelf_getshdr(scn, &sh) || sh.sh_type == SHT_NOBITS)
				continue;
			name = elf_strptr(elf, shstrndx, sh.sh_name);
			if (name && strcmp(name, want) == 0 && sh.sh_offset + sh.sh_size <= len) {
				off = sh.sh_offset;
				*size = sh.sh_size;
			}
		}
	}
	elf_end(elf);
	return off;
}

START_TEST(hostile_elf)
{
	static const char *const sections[] = {
		".eh_frame", ".eh_frame_hdr", ".debug_frame", ".symtab", ".strtab", ".dynsym",
		".dynstr", NULL
	};
	unsigned c = (unsigned)_i, ok = 0, loads = 0;
	unsigned char *img, *bad;
	char path[256];
	size_t len;
	FILE *f;

	if (!have_chain(c))
		return;
	elf_version(EV_CURRENT);
	/* The .debug_frame variant has both kinds of CFI. */
	bin_path(path, sizeof path, c, 10);
	f = fopen(path, "rb");
	ck_assert_ptr_nonnull(f);
	img = malloc(1 << 20);
	bad = malloc(1 << 20);
	len = fread(img, 1, 1 << 20, f);
	fclose(f);
	ck_assert_uint_gt(len, 1000);
	ck_assert_uint_lt(len, 1 << 20);

	/* Every kind of truncation: an error, whatever is cut. */
	for (size_t cut = 1; cut < len; cut += cut < 128 ? 1 : cut < 4096 ? 61 : 397, loads++) {
		sw_module *m = NULL;

		memcpy(bad, img, cut);
		ck_assert_msg(sw_module_load_image(bad, cut, 0, NULL, &m) != SW_OK,
		              "%s cut to %zu bytes loads", path, cut);
		ck_assert_ptr_null(m);
	}
	/* Random bytes in each section, in the ELF header and the section headers. */
	for (const char *const *s = sections; *s; s++) {
		size_t size, at = section_at(img, len, *s, &size);

		if (!at || !size)
			continue;
		for (unsigned iter = 0; iter < test_rounds(150); iter++, loads++) {
			unsigned flips = 1 + (unsigned)(next_random() % 8);

			memcpy(bad, img, len);
			for (unsigned k = 0; k < flips; k++)
				bad[at + next_random() % size] = (unsigned char)next_random();
			load_hostile(bad, len, &ok);
		}
	}
	for (unsigned iter = 0; iter < test_rounds(300); iter++, loads++) {
		Elf64_Ehdr *eh64 = (Elf64_Ehdr *)(void *)bad;
		Elf32_Ehdr *eh32 = (Elf32_Ehdr *)(void *)bad;
		size_t shoff;

		memcpy(bad, img, len);
		shoff = img[EI_CLASS] == ELFCLASS64 ? eh64->e_shoff : eh32->e_shoff;
		if (iter % 2 == 0)
			bad[16 + next_random() % 48] = (unsigned char)next_random();
		else if (shoff < len)
			bad[shoff + next_random() % (len - shoff)] = (unsigned char)next_random();
		load_hostile(bad, len, &ok);
	}
	printf("hostile %s: %u corrupted images loaded, %u of them still usable\n",
	       chains[c].name, loads, ok);
	free(img);
	free(bad);
}
END_TEST

static void put64(uint8_t *stack, uint64_t base, uint64_t addr, uint64_t v)
{
	memcpy(stack + (addr - base), &v, 8);
}

/*
 * arm64's d8-d15 are restored in every caller, with or without
 * UNWIND_FLOATS, as CoreCLR's unwinding restores them (the OS unwinder
 * works on a whole CONTEXT: Thread::VirtualUnwindCallFrame).
 * cfi_keep_double keeps doubles across calls in d8 and d9, which gcc
 * saves; at each of its instructions where libdw says they are saved, a
 * stack is laid out as libdw says, and the walk's second frame must hold
 * each saved register's value, read from libdw's slot.
 */
START_TEST(arm64_floats_restored)
{
	enum { BASE = 0x10000, SIZE = 4096, SP = BASE + 0x100 };
	static const unsigned walk_flags[] = { 0, SW_WALK_UNWIND_FLOATS };
	static uint8_t stack[SIZE];
	const sw_native_function *fns;
	uint64_t fn, ra, checked = 0;
	size_t nfns, size = 0;
	Dwarf_CFI *cfi;
	char path[256];
	sw_codemap *map;
	sw_module *m;
	sw_memory mem;
	sw_thread t;
	Elf *elf;
	int fd;

	if (!have_chain(2))
		return;
	bin_path(path, sizeof path, 2, 5);                      /* arm64, -O2 without a frame pointer */
	ck_assert_str_eq(variants[5].tag, "O2-nofp");
	fn = elf_symbol(path, "cfi_keep_double");
	ra = elf_symbol(path, "main") + 8;                      /* any address of another function */
	ck_assert_uint_ne(fn, 0);
	ck_assert_int_eq(sw_module_load(path, 0, NULL, &m), SW_OK);
	ck_assert_int_eq(sw_module_functions(m, &fns, &nfns), SW_OK);
	for (size_t i = 0; i < nfns; i++)
		if (fns[i].start == fn)
			size = fns[i].size;
	ck_assert_uint_ne(size, 0);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_module_register(m, map), SW_OK);
	fd = open(path, O_RDONLY);
	ck_assert_int_ge(fd, 0);
	elf_version(EV_CURRENT);
	elf = elf_begin(fd, ELF_C_READ, NULL);
	cfi = dwarf_getcfi_elf(elf);
	ck_assert_ptr_nonnull(cfi);
	for (uint64_t ip = fn; ip < fn + size; ip += 4) {
		const uint64_t floats = 0xffULL << SW_ARM64_D8;
		struct expect e;
		const char *why;
		uint64_t cfa;

		/* Where the doubles are saved and the CFA is SP-relative. */
		if (oracle(cfi, SW_ARCH_ARM64, ip, &e, &why) != 0 || e.cfa_reg != SW_ARM64_SP ||
		    e.cfa_deref || !(e.mask & floats) || !(e.mask & (1ULL << SW_ARM64_LR)))
			continue;
		cfa = SP + (uint64_t)e.cfa_offset;
		memset(stack, 0, sizeof stack);
		for (unsigned r = 0; r < SW_MAX_REGS; r++)
			if (e.mask & (1ULL << r)) {
				ck_assert_uint_eq(e.base[r], SW_SWU_BASE_CFA);
				put64(stack, BASE, cfa + (uint64_t)e.saved[r],
				      r == SW_ARM64_LR ? ra : 0x4000000000000000ULL + r);
			}
		ck_assert_int_eq(sw_memory_init_buffer(&mem, stack, sizeof stack, BASE), SW_OK);
		ck_assert_int_eq(sw_thread_init(&t, SW_ARCH_ARM64, map, &mem, 0, BASE, BASE + SIZE), SW_OK);
		for (unsigned f = 0; f < 2; f++) {
			struct sig_walk w;
			sw_walk_error err;
			sw_context ctx;

			sw_context_init(&ctx, SW_ARCH_ARM64);
			sw_context_set(&ctx, SW_ARM64_PC, ip);
			sw_context_set(&ctx, SW_ARM64_SP, SP);
			memset(&w, 0, sizeof w);
			sw_walk_frames(&t, &ctx, 0, sig_walk_cb, &w, SW_WALK_NATIVE_FRAMES | walk_flags[f], &err);
			ck_assert_msg(w.n >= 2, "at %#" PRIx64 ": %u frames", ip, w.n);
			ck_assert_uint_eq(w.ip[1], ra);
			for (unsigned r = SW_ARM64_D8; r <= SW_ARM64_D15; r++) {
				if (!(e.mask & (1ULL << r)))
					continue;
				ck_assert_msg(w.rd[1].cur.valid & (1ULL << r), "at %#" PRIx64 ", flags %#x: d%u unknown in the caller",
				              ip, walk_flags[f], r - SW_ARM64_D8 + 8);
				ck_assert_uint_eq(w.rd[1].cur.regs[r], 0x4000000000000000ULL + r);
				ck_assert_uint_eq(w.rd[1].cur_loc[r], cfa + (uint64_t)e.saved[r]);
			}
		}
		checked++;
	}
	/* stp d8, d9 and the fmovs after it, up to the ldp. */
	ck_assert_uint_ge(checked, 5);
	dwarf_cfi_end(cfi);
	elf_end(elf);
	close(fd);
	ck_assert_int_eq(sw_module_unregister(m, map), SW_OK);
	sw_codemap_synchronize(map);
	sw_codemap_destroy(map);
	sw_module_free(m);
}
END_TEST

static Suite *cfi_suite(void)
{
	Suite *s = suite_create("cfi");
	TCase *tc = tcase_create("import");
	TCase *hz = tcase_create("hostile");

	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, every_address, 0, (int)(NCHAINS * NVARIANTS));
	tcase_add_loop_test(tc, symbols_match_nm, 0, (int)(NCHAINS * NVARIANTS));
	tcase_add_loop_test(tc, register_in_codemap, 0, (int)NCHAINS);
	tcase_add_test(tc, identical_programs_stored_once);
	tcase_add_test(tc, skips_named);
	tcase_add_test(tc, load_progress);
	tcase_add_test(tc, module_as_code_table);
	tcase_add_loop_test(tc, sigreturn_without_cfi, 0, (int)NCHAINS);
	tcase_add_loop_test(tc, sigreturn_static_glibc, 0, (int)NCHAINS);
	tcase_add_test(tc, sigreturn_walk_i386);
	tcase_add_test(tc, arm64_floats_restored);
	suite_add_tcase(s, tc);
	tcase_set_timeout(hz, 60);
	tcase_add_test(hz, bad_files);
	tcase_add_loop_test(hz, hostile_elf, 0, (int)NCHAINS);
	suite_add_tcase(s, hz);
	return s;
}

int main(void)
{
	SRunner *sr;
	int failed, rc;

	rc = build_all();
	if (rc != 0) {
		fprintf(stderr, "building the test programs failed (%d)\n", rc);
		return 1;
	}
	sr = srunner_create(cfi_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
