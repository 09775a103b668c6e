/*
 * arm64.c - the AArch64 backend (AAPCS64).
 *
 * Callee-saved: x19-x28, fp (x29) and the low 64 bits of v8-v15 (d8-d15).
 * A call (bl) leaves the return address in lr (x30) and does not touch the
 * stack: at a method's first instruction the CFA is SP itself.  A method
 * that calls saves lr, usually with fp as a pair; until then the return
 * address is in lr.  SP stays 16-byte aligned, so every SP move is a
 * multiple of 16; slots are 8-byte registers at 8-aligned addresses.
 */
#include "util.h"
#include "arch.h"

static const char *const arm64_reg_names[SW_ARM64_NREGS] = {
	"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7",
	"x8", "x9", "x10", "x11", "x12", "x13", "x14", "x15",
	"x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23",
	"x24", "x25", "x26", "x27", "x28", "fp", "lr", "sp",
	"pc", "d8", "d9", "d10", "d11", "d12", "d13", "d14", "d15"
};

#define BIT(r) (1ULL << (r))
#define RANGE(lo, hi) ((BIT((hi) - (lo) + 1) - 1) << (lo))
#define ARM64_CALLEE_SAVED (RANGE(SW_ARM64_X19, SW_ARM64_FP) | RANGE(SW_ARM64_D8, SW_ARM64_D15))

/*
 * The TransitionFrame block, as a stub builds it right after the bl that
 * entered it:
 *
 *   stp x19, x20, [sp, #-96]!
 *   stp x21, x22, [sp, #16]
 *   stp x23, x24, [sp, #32]
 *   stp x25, x26, [sp, #48]
 *   stp x27, x28, [sp, #64]
 *   stp fp, lr, [sp, #80]
 *
 * so that at ascending addresses it holds x19-x28, fp, then lr, the return
 * address into the caller (last, where every TransitionFrame reads it): the
 * caller's pc.
 */
static const unsigned arm64_block_regs[] = {
	SW_ARM64_X19, SW_ARM64_X20, SW_ARM64_X21, SW_ARM64_X22, SW_ARM64_X23, SW_ARM64_X24,
	SW_ARM64_X25, SW_ARM64_X26, SW_ARM64_X27, SW_ARM64_X28, SW_ARM64_FP, SW_ARM64_PC
};

/*
 * The kernel's rt_sigframe at __kernel_rt_sigreturn: SP points at the
 * siginfo (128 bytes), then the ucontext, whose 16-byte-aligned sigcontext
 * lies 176 bytes in (uc_flags, uc_link, uc_stack, uc_sigmask and padding);
 * the sigcontext holds fault_address, x0-x30, sp and pc.
 */
#define ARM64_SIGFRAME_STACK (128 + 16)         /* after uc_flags, uc_link */
#define ARM64_SIGFRAME_SIGCONTEXT (128 + 176)

static sw_status arm64_signal_frame_restore(const sw_thread *t, uint64_t sp, uint64_t ip,
                                            sw_context *ctx, uint64_t *loc, struct swi_signal_stack *alt)
{
	unsigned regs[SW_ARM64_PC + 1];
	sw_status st;

	SWI_UNUSED(ip);
	if ((st = swi_read_signal_stack(t, sp + ARM64_SIGFRAME_STACK, 8, alt)) != SW_OK)
		return st;
	for (unsigned r = 0; r <= SW_ARM64_PC; r++)
		regs[r] = r;        /* x0-x30, then sp and pc, in our numbering */
	return swi_restore_reg_block(t, sp + ARM64_SIGFRAME_SIGCONTEXT + 8, 8, regs,
	                             SW_ARM64_PC + 1, ctx, loc);
}

/*
 * DWARF numbers x0-x30 and sp as we do, and v8-v15 at 72-79 (d8-d15 are
 * their low halves); pc has no DWARF number, lr is the return address
 * column.
 */
static const struct swi_dwarf_run arm64_dwarf_runs[] = {
	{ 0, SW_ARM64_X0, SW_ARM64_SP + 1 },
	{ 72, SW_ARM64_D8, SW_ARM64_D15 - SW_ARM64_D8 + 1 },
};

const struct swi_arch swi_arch_arm64 = {
	.arch = SW_ARCH_ARM64,
	.name = "arm64",
	.ptr_size = 8,
	.nregs = SW_ARM64_NREGS,
	.reg_names = arm64_reg_names,
	.ip_reg = SW_ARM64_PC,
	.sp_reg = SW_ARM64_SP,
	.fp_reg = SW_ARM64_FP,
	.lr_reg = SW_ARM64_LR,
	.callee_saved = ARM64_CALLEE_SAVED,
	.float_regs = 0xffULL << SW_ARM64_D8,
	.frame_regs = BIT(SW_ARM64_FP),
	.entry_ra_in_lr = 1,
	.entry_ra_offset = 0,
	.entry_sp_offset = 0,
	.stack_align = 16,
	.transition_block_regs = arm64_block_regs,
	.transition_block_slots = sizeof arm64_block_regs / sizeof arm64_block_regs[0],
	.signal_frame_restore = arm64_signal_frame_restore,
	.sp_move_align = 16,
	.slot_align = 8,
	.has_reg_pairs = 1,
	.has_ptrauth = 1,
	.ptrauth_mask = SW_ARM64_PTRAUTH_MASK,
	.dwarf_runs = arm64_dwarf_runs,
	.ndwarf_runs = sizeof arm64_dwarf_runs / sizeof arm64_dwarf_runs[0],
	.dwarf_ra_column = SW_ARM64_LR,
	.elf_machine = 183,             /* EM_AARCH64 */
	.futex_syscalls = { 98 },
	.nfutex_syscalls = 1,
	.syscall_arg_regs = { 0, 1, 2, 3, 4, 5 },       /* x0-x5 */
	.rwlock_cur_writer_offset = 24,
};
