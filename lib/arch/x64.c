/*
 * x64.c - the x86-64 backend (System V AMD64 ABI).
 *
 * Callee-saved: rbx, rbp, r12-r15.  A call pushes the return address, so at
 * a method's first instruction the CFA is RSP + 8 and the return address is
 * at CFA - 8.
 */
#include "util.h"
#include "arch.h"

static const char *const x64_reg_names[SW_X64_NREGS] = {
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp",
	"r8", "r9", "r10", "r11", "r12", "r13", "r14", "r15", "rip"
};

#define BIT(r) (1ULL << (r))
#define X64_CALLEE_SAVED (BIT(SW_X64_RBX) | BIT(SW_X64_RBP) | BIT(SW_X64_R12) | \
                          BIT(SW_X64_R13) | BIT(SW_X64_R14) | BIT(SW_X64_R15))

/*
 * The TransitionFrame block, as a stub builds it by pushing rbp, rbx, r12,
 * r13, r14, r15 right after the call that entered it: the lowest slot is
 * the last push, the highest the return address.
 */
static const unsigned x64_block_regs[] = {
	SW_X64_R15, SW_X64_R14, SW_X64_R13, SW_X64_R12, SW_X64_RBX, SW_X64_RBP, SW_X64_RIP
};

/*
 * The kernel's rt_sigframe, once the handler has returned into
 * __restore_rt: SP points at the ucontext (uc_flags, uc_link, a 24-byte
 * uc_stack), followed by the sigcontext's general registers in this order.
 */
static const unsigned x64_sigcontext_regs[] = {
	SW_X64_R8, SW_X64_R9, SW_X64_R10, SW_X64_R11, SW_X64_R12, SW_X64_R13,
	SW_X64_R14, SW_X64_R15, SW_X64_RDI, SW_X64_RSI, SW_X64_RBP, SW_X64_RBX,
	SW_X64_RDX, SW_X64_RAX, SW_X64_RCX, SW_X64_RSP, SW_X64_RIP
};
#define X64_UCONTEXT_STACK 16         /* after uc_flags, uc_link */
#define X64_UCONTEXT_MCONTEXT 40

static sw_status x64_signal_frame_restore(const sw_thread *t, uint64_t sp, uint64_t ip,
                                          sw_context *ctx, uint64_t *loc, struct swi_signal_stack *alt)
{
	sw_status st;

	SWI_UNUSED(ip);
	if ((st = swi_read_signal_stack(t, sp + X64_UCONTEXT_STACK, 8, alt)) != SW_OK)
		return st;
	return swi_restore_reg_block(t, sp + X64_UCONTEXT_MCONTEXT, 8, x64_sigcontext_regs,
	                             sizeof x64_sigcontext_regs / sizeof x64_sigcontext_regs[0],
	                             ctx, loc);
}

/* DWARF numbers every register, rip as the return address column (16). */
static const struct swi_dwarf_run x64_dwarf_runs[] = {
	{ 0, SW_X64_RAX, SW_X64_NREGS },
};

const struct swi_arch swi_arch_x64 = {
	.arch = SW_ARCH_X64,
	.name = "x64",
	.ptr_size = 8,
	.nregs = SW_X64_NREGS,
	.reg_names = x64_reg_names,
	.ip_reg = SW_X64_RIP,
	.sp_reg = SW_X64_RSP,
	.fp_reg = SW_X64_RBP,
	.lr_reg = -1,
	.callee_saved = X64_CALLEE_SAVED,
	.frame_regs = X64_CALLEE_SAVED,
	.entry_ra_in_lr = 0,
	.entry_ra_offset = -8,
	.entry_sp_offset = 8,
	.stack_align = 16,
	.has_light_unwind = 1,
	.transition_block_regs = x64_block_regs,
	.transition_block_slots = sizeof x64_block_regs / sizeof x64_block_regs[0],
	.signal_frame_restore = x64_signal_frame_restore,
	.dwarf_runs = x64_dwarf_runs,
	.ndwarf_runs = sizeof x64_dwarf_runs / sizeof x64_dwarf_runs[0],
	.dwarf_ra_column = SW_X64_RIP,
	.elf_machine = 62,              /* EM_X86_64 */
	.futex_syscalls = { 202 },
	.nfutex_syscalls = 1,
	.syscall_arg_regs = { SW_X64_RDI, SW_X64_RSI, SW_X64_RDX, SW_X64_R10, SW_X64_R8, SW_X64_R9 },
	.rwlock_cur_writer_offset = 24,
};
