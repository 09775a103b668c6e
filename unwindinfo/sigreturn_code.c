/*
 * sigreturn_code.c - signal trampolines that no CFI describes, known by
 * their instructions when a module is loaded.
 *
 * A signal handler "returns" into a trampoline that makes the sigreturn
 * system call; the walker unwinds code flagged SW_CODE_SIGNAL_TRAMPOLINE
 * from the signal frame the kernel pushed (the arch's
 * signal_frame_restore).  The vDSO's trampolines and glibc's x86-64
 * __restore_rt have CFI that marks them (the CIE's 'S' augmentation,
 * cfi_import.c).  Others have none: glibc's i386 __restore and
 * __restore_rt, which it installs as SA_RESTORER wherever there is no vDSO
 * (qemu-user, a kernel booted with vdso32=0), and musl's trampolines on
 * every architecture.  gdb knows them by their exact instructions, and so
 * does this: each sequence below, found in an executable section where no
 * FDE lies, becomes a function with SW_CODE_SIGNAL_TRAMPOLINE, an SWU blob
 * of no frame and source SW_CFI_SIGRETURN_CODE.
 *
 * The handler returns to the trampoline's first byte, and a managed walk
 * (an SWU image) looks a return address up one byte back, in its call; so
 * the function starts one byte early when that byte is no function's, as
 * the kernel's and glibc's CFI do with a nop before their trampolines.
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <gelf.h>
#include "util.h"
#include "cfi_import.h"

#define MAX_SIGRETURN_CODE 64           /* trampolines taken from one module */

static const struct sigreturn_seq {
	sw_arch arch;
	unsigned len;
	unsigned align;                 /* of the first instruction */
	uint8_t code[12];
} seqs[] = {
	/* i386 sigreturn (sigframe): popl %eax; movl $119, %eax; int $0x80 */
	{ SW_ARCH_X86, 8, 1, { 0x58, 0xb8, 0x77, 0, 0, 0, 0xcd, 0x80 } },
	/* i386 rt_sigreturn: movl $173, %eax; int $0x80 */
	{ SW_ARCH_X86, 7, 1, { 0xb8, 0xad, 0, 0, 0, 0xcd, 0x80 } },
	/* x86-64 rt_sigreturn: movq $15, %rax; syscall */
	{ SW_ARCH_X64, 9, 1, { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 } },
	/* AArch64 rt_sigreturn: mov x8, #139; svc #0 */
	{ SW_ARCH_ARM64, 8, 4, { 0x68, 0x11, 0x80, 0xd2, 0x01, 0, 0, 0xd4 } },
};

struct scan {
	struct swi_cfi_import *imp;
	size_t imported;                /* imp->fns[0 .. imported): sorted, from CFI */
	sw_arch arch;
};

/* Does [lo, hi) overlap a function or a skipped FDE? */
static bool taken(const struct scan *s, uint64_t lo, uint64_t hi)
{
	const struct swi_cfi_import *imp = s->imp;

	if (swi_cfi_overlaps(imp, s->imported, lo, hi))
		return true;
	/* The trampolines found so far, then the FDEs the importer skipped. */
	for (size_t i = s->imported; i < imp->nfns; i++)
		if (imp->fns[i].start < hi && lo < imp->fns[i].start + imp->fns[i].size)
			return true;
	for (size_t i = 0; i < imp->nskips; i++)
		if (imp->skips[i].start < hi && lo < imp->skips[i].start + imp->skips[i].size)
			return true;
	return false;
}

/* The trampoline of `len` bytes at ELF address `at`, in a section starting at `lo`. */
static sw_status add(struct scan *s, uint64_t at, unsigned len, uint64_t lo)
{
	uint64_t start = at;
	sw_status st;

	if (at > lo && !taken(s, at - 1, at))
		start = at - 1;
	/* No frame: the walker reads the signal frame. */
	st = swi_cfi_add_frameless(s->imp, s->arch, start, at + len - start, SW_CFI_SIGRETURN_CODE,
	                           SW_CODE_SIGNAL_TRAMPOLINE);
	if (st == SW_OK)
		s->imp->stats.sigreturn_code++;
	return st;
}

static sw_status scan_section(struct scan *s, const struct sigreturn_seq *q, uint64_t addr,
                              const uint8_t *data, size_t size)
{
	sw_status st;

	for (size_t off = 0; size >= q->len && off <= size - q->len; off++) {
		const uint8_t *p = memchr(data + off, q->code[0], size - q->len + 1 - off);

		if (!p)
			break;
		off = (size_t)(p - data);
		if ((addr + off) % q->align != 0 || memcmp(p, q->code, q->len) != 0 ||
		    taken(s, addr + off, addr + off + q->len))
			continue;
		if (s->imp->stats.sigreturn_code == MAX_SIGRETURN_CODE)
			return SW_OK;
		if ((st = add(s, addr + off, q->len, addr)) != SW_OK)
			return st;
		off += q->len - 1;
	}
	return SW_OK;
}

sw_status swi_find_sigreturn_code(Elf *elf, sw_arch arch, struct swi_cfi_import *imp)
{
	struct scan s = { imp, imp ? imp->nfns : 0, arch };
	sw_status st = SW_OK;

	if (!elf || !imp)
		return SW_E_INVAL;
	for (Elf_Scn *scn = NULL; st == SW_OK && (scn = elf_nextscn(elf, scn)) != NULL;) {
		GElf_Shdr sh;
		Elf_Data *d = swi_code_section_data(scn, &sh);

		if (!d)
			continue;
		for (size_t i = 0; i < sizeof seqs / sizeof seqs[0] && st == SW_OK; i++)
			if (seqs[i].arch == arch)
				st = scan_section(&s, &seqs[i], sh.sh_addr, d->d_buf, d->d_size);
	}
	/* Sorted again, as the importer leaves them. */
	if (imp->nfns > s.imported)
		qsort(imp->fns, imp->nfns, sizeof *imp->fns, swi_cfi_fn_cmp);
	/* Past a limit (SWU bytes), the trampolines found so far. */
	return st == SW_E_NOMEM ? st : SW_OK;
}
