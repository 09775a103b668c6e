/*
 * core_notes.c - decode the kernel's per-architecture register layouts and
 * the notes of Linux core files: NT_PRSTATUS, NT_PRFPREG, NT_FILE, NT_AUXV, NT_PRPSINFO.
 *
 * The layouts are the kernel's (struct elf_prstatus, user_regs_struct,
 * user_fpsimd_state), written down as offsets so that any host reads any
 * target's notes.  All targets are little-endian.
 */
#include "config.h"
#include <string.h>
#include "util.h"
#include "core_notes.h"

/*
 * struct elf_prstatus: elf_siginfo (12 bytes), pr_cursig (2, padded),
 * pr_sigpend and pr_sighold (one long each), pid, ppid, pgrp, sid (ints),
 * four struct timevals (two longs each), then pr_reg.  So with 8-byte longs
 * pr_pid is at 32 and pr_reg at 112; with 4-byte longs at 24 and 72.
 */
#define PRSTATUS_PID_OFF(word) ((word) == 8 ? 32u : 24u)
#define PRSTATUS_REG_OFF(word) ((word) == 8 ? 112u : 72u)

/* x86-64 user_regs_struct: 27 longs; where each of ours lives. */
static const unsigned char x64_slot[SW_X64_NREGS] = {
	[SW_X64_R15] = 0, [SW_X64_R14] = 1, [SW_X64_R13] = 2, [SW_X64_R12] = 3,
	[SW_X64_RBP] = 4, [SW_X64_RBX] = 5, [SW_X64_R11] = 6, [SW_X64_R10] = 7,
	[SW_X64_R9] = 8, [SW_X64_R8] = 9, [SW_X64_RAX] = 10, [SW_X64_RCX] = 11,
	[SW_X64_RDX] = 12, [SW_X64_RSI] = 13, [SW_X64_RDI] = 14,
	/* 15: orig_rax */
	[SW_X64_RIP] = 16,
	/* 17: cs, 18: eflags */
	[SW_X64_RSP] = 19,
	/* 20: ss, then fs_base, gs_base, ds, es, fs, gs */
};

/* i386 user_regs_struct: 17 longs of 4 bytes. */
static const unsigned char x86_slot[SW_X86_NREGS] = {
	[SW_X86_EBX] = 0, [SW_X86_ECX] = 1, [SW_X86_EDX] = 2, [SW_X86_ESI] = 3,
	[SW_X86_EDI] = 4, [SW_X86_EBP] = 5, [SW_X86_EAX] = 6,
	/* 7-10: ds, es, fs, gs; 11: orig_eax */
	[SW_X86_EIP] = 12,
	/* 13: cs, 14: eflags */
	[SW_X86_ESP] = 15,
	/* 16: ss */
};

/* Each arch's user_regs_struct: its longs, and the slot of each of our registers. */
static const struct user_regs_layout {
	unsigned slots;
	unsigned nregs;
	const unsigned char *slot;      /* NULL: register r is slot r */
} user_regs[SW_ARCH_ARM64 + 1] = {
	[SW_ARCH_X64] = { 27, SW_X64_NREGS, x64_slot },
	[SW_ARCH_X86] = { 17, SW_X86_NREGS, x86_slot },
	/* AArch64 user_pt_regs: x0-x30, sp, pc, pstate; x0-x30, sp, pc share our numbers. */
	[SW_ARCH_ARM64] = { 34, SW_ARM64_PC + 1, NULL },
};

static unsigned arch_word(sw_arch arch)
{
	return sw_arch_pointer_size(arch);
}

size_t swi_user_regs_size(sw_arch arch)
{
	return (unsigned)arch <= SW_ARCH_ARM64 ? user_regs[arch].slots * arch_word(arch) : 0;
}

sw_status swi_user_regs_decode(sw_arch arch, const unsigned char *regs, size_t len,
                               sw_context *ctx)
{
	size_t need = swi_user_regs_size(arch);
	unsigned w = arch_word(arch);

	if (need == 0)
		return SW_E_UNSUPPORTED;
	if (len < need)
		return SW_E_TRUNCATED;
	sw_context_init(ctx, arch);
	for (unsigned r = 0; r < user_regs[arch].nregs; r++) {
		const unsigned char *slot = user_regs[arch].slot;

		sw_context_set(ctx, r, swi_load_le(regs + (slot ? slot[r] : r) * w, w));
	}
	return SW_OK;
}

sw_status swi_prstatus_decode(sw_arch arch, const unsigned char *desc, size_t len,
                              sw_context *ctx, int *tid)
{
	unsigned w = arch_word(arch);

	if (w == 0)
		return SW_E_UNSUPPORTED;
	if (len < PRSTATUS_REG_OFF(w))
		return SW_E_TRUNCATED;
	*tid = (int)(uint32_t)swi_load_le(desc + PRSTATUS_PID_OFF(w), 4);
	return swi_user_regs_decode(arch, desc + PRSTATUS_REG_OFF(w),
	                            len - PRSTATUS_REG_OFF(w), ctx);
}

/*
 * struct elf_prpsinfo: four chars, pr_flag (a long), uid and gid, pid,
 * ppid, pgrp, sid, then pr_fname[16] and pr_psargs[80].  On i386 the long
 * is 4 bytes and uid and gid 2 each (__kernel_uid_t): 124 bytes, the name
 * at 28; on x86-64 and AArch64, 136 bytes and the name at 40.
 */
sw_status swi_prpsinfo_decode(sw_arch arch, const unsigned char *desc, size_t len,
                              char name[SWI_PRPSINFO_NAME], int *pid)
{
	unsigned w = arch_word(arch);
	size_t size = w == 4 ? 124 : 136, pid_off = w == 4 ? 12 : 24, name_off = w == 4 ? 28 : 40;

	if (w == 0)
		return SW_E_UNSUPPORTED;
	if (len != size)
		return SW_E_BADMETA;
	*pid = (int)(uint32_t)swi_load_le(desc + pid_off, 4);
	memcpy(name, desc + name_off, SWI_PRPSINFO_NAME - 1);
	name[SWI_PRPSINFO_NAME - 1] = '\0';
	return SW_OK;
}

/* AArch64 user_fpsimd_state: 32 128-bit vregs, fpsr, fpcr. */
#define ARM64_FPSIMD_SIZE (32 * 16 + 8)

sw_status swi_prfpreg_decode(sw_arch arch, const unsigned char *desc, size_t len,
                             sw_context *ctx)
{
	if (arch != SW_ARCH_ARM64)
		return SW_OK;   /* x87/SSE state: nothing the walker restores */
	if (len < ARM64_FPSIMD_SIZE)
		return SW_E_TRUNCATED;
	for (unsigned i = 0; i < 8; i++)
		sw_context_set(ctx, SW_ARM64_D8 + i, swi_load_le(desc + (8 + i) * 16, 8));
	return SW_OK;
}

sw_status swi_nt_file_decode(unsigned word, const unsigned char *desc, size_t len,
                             sw_mapped_file *out, size_t *count)
{
	uint64_t n, page_size;
	const char *path, *end;

	if (len < 2 * (size_t)word)
		return SW_E_TRUNCATED;
	n = swi_load_le(desc, word);
	page_size = swi_load_le(desc + word, word);
	if (n > SWI_NT_FILE_MAX_ENTRIES)
		return SW_E_LIMIT;
	/* n is bounded, so this cannot overflow. */
	if ((2 + 3 * n) * word > len)
		return SW_E_TRUNCATED;
	if (page_size == 0 || (page_size & (page_size - 1)) || page_size > (1u << 30))
		return SW_E_BADMETA;
	*count = (size_t)n;
	path = (const char *)desc + (2 + 3 * n) * word;
	end = (const char *)desc + len;
	for (size_t i = 0; i < n; i++) {
		const unsigned char *t = desc + (2 + 3 * i) * word;
		uint64_t start = swi_load_le(t, word);
		uint64_t stop = swi_load_le(t + word, word);
		uint64_t pgoff = swi_load_le(t + 2 * word, word);
		const char *nul = memchr(path, '\0', (size_t)(end - path));

		/* Every path is NUL-terminated inside the note. */
		if (!nul)
			return SW_E_TRUNCATED;
		if (start >= stop || pgoff > UINT64_MAX / page_size)
			return SW_E_BADMETA;
		if (out) {
			memset(&out[i], 0, sizeof out[i]);
			out[i].start = start;
			out[i].end = stop;
			out[i].offset = pgoff * page_size;
			out[i].path = path;
		}
		path = nul + 1;
	}
	return SW_OK;
}

sw_status swi_auxv_find(unsigned word, const unsigned char *desc, size_t len,
                        uint64_t type, uint64_t *value)
{
	for (size_t off = 0; off <= len && len - off >= 2 * (size_t)word; off += 2 * word) {
		uint64_t t = swi_load_le(desc + off, word);

		if (t == 0)     /* AT_NULL ends the vector */
			break;
		if (t == type) {
			*value = swi_load_le(desc + off + word, word);
			return SW_OK;
		}
	}
	return SW_E_NOTFOUND;
}
