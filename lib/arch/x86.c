/*
 * x86.c - the 32-bit x86 backend (i386 System V ABI, as the CLR uses it).
 *
 * Callee-saved: ebx, ebp, esi, edi.  A call pushes a 4-byte return address,
 * so at a method's first instruction the CFA is ESP + 4 and the return
 * address is at CFA - 4.  Only EBP serves as a frame register; a method
 * without one (an "ESP frame") moves ESP in its body when it pushes
 * outgoing arguments, which SWU describes with body operations.
 */
#include "util.h"
#include "arch.h"

static const char *const x86_reg_names[SW_X86_NREGS] = {
	"eax", "ecx", "edx", "ebx", "esp", "ebp", "esi", "edi", "eip"
};

#define BIT(r) (1ULL << (r))
#define X86_CALLEE_SAVED (BIT(SW_X86_EBX) | BIT(SW_X86_EBP) | BIT(SW_X86_ESI) | BIT(SW_X86_EDI))

/*
 * The TransitionFrame block, as a stub builds it by pushing ebp, ebx, esi,
 * edi right after the call that entered it: at ascending addresses edi,
 * esi, ebx, ebp, then the return address.
 */
static const unsigned x86_block_regs[] = { SW_X86_EDI, SW_X86_ESI, SW_X86_EBX, SW_X86_EBP, SW_X86_EIP };

/*
 * The kernel's signal frames.  The sigcontext starts gs, fs, es, ds, then
 * the registers below (and trapno, err before eip).  After the handler
 * returns, SP points at the signal number: for sigframe (the trampoline
 * starts with "pop eax", 0x58) the sigcontext follows it; for rt_sigframe
 * the next words are the siginfo and ucontext pointers, and the ucontext's
 * sigcontext is 20 bytes in (uc_flags, uc_link, a 12-byte uc_stack).  A
 * sigframe records no uc_stack: alt stays unknown.
 */
static const unsigned x86_sigcontext_regs[] = {
	SW_X86_EDI, SW_X86_ESI, SW_X86_EBP, SW_X86_ESP, SW_X86_EBX, SW_X86_EDX,
	SW_X86_ECX, SW_X86_EAX
};
#define X86_SIGCONTEXT_EDI 16       /* after gs, fs, es, ds */
#define X86_SIGCONTEXT_EIP 56       /* after trapno, err */
#define X86_UCONTEXT_STACK 8          /* after uc_flags, uc_link */
#define X86_UCONTEXT_MCONTEXT 20

static sw_status x86_signal_frame_restore(const sw_thread *t, uint64_t sp, uint64_t ip,
                                          sw_context *ctx, uint64_t *loc, struct swi_signal_stack *alt)
{
	static const unsigned eip[] = { SW_X86_EIP };
	unsigned char first = 0;
	uint64_t sc;
	sw_status st;

	if (swi_read(t->memory, ip, &first, 1) == SW_OK && first == 0x58) {
		sc = sp + 4;
	} else {
		if ((st = swi_read_ptr(t->memory, 4, sp + 8, &sc)) != SW_OK ||
		    (st = swi_read_signal_stack(t, sc + X86_UCONTEXT_STACK, 4, alt)) != SW_OK)
			return st;
		sc += X86_UCONTEXT_MCONTEXT;
	}
	if ((st = swi_restore_reg_block(t, sc + X86_SIGCONTEXT_EDI, 4, x86_sigcontext_regs,
	                                sizeof x86_sigcontext_regs / sizeof x86_sigcontext_regs[0],
	                                ctx, loc)) != SW_OK)
		return st;
	return swi_restore_reg_block(t, sc + X86_SIGCONTEXT_EIP, 4, eip, 1, ctx, loc);
}

/* DWARF numbers every register, eip as the return address column (8). */
static const struct swi_dwarf_run x86_dwarf_runs[] = {
	{ 0, SW_X86_EAX, SW_X86_NREGS },
};

const struct swi_arch swi_arch_x86 = {
	.arch = SW_ARCH_X86,
	.name = "x86",
	.ptr_size = 4,
	.nregs = SW_X86_NREGS,
	.reg_names = x86_reg_names,
	.ip_reg = SW_X86_EIP,
	.sp_reg = SW_X86_ESP,
	.fp_reg = SW_X86_EBP,
	.lr_reg = -1,
	.callee_saved = X86_CALLEE_SAVED,
	.frame_regs = BIT(SW_X86_EBP),
	.entry_ra_in_lr = 0,
	.entry_ra_offset = -4,
	.entry_sp_offset = 4,
	.stack_align = 16,
	.transition_block_regs = x86_block_regs,
	.transition_block_slots = sizeof x86_block_regs / sizeof x86_block_regs[0],
	.signal_frame_restore = x86_signal_frame_restore,
	.sp_move_align = 0,
	.slot_align = 0,
	.has_reg_pairs = 0,
	.has_ptrauth = 0,
	.dwarf_runs = x86_dwarf_runs,
	.ndwarf_runs = sizeof x86_dwarf_runs / sizeof x86_dwarf_runs[0],
	.dwarf_ra_column = SW_X86_EIP,
	.elf_machine = 3,               /* EM_386 */
	.futex_syscalls = { 240, 422 }, /* futex, futex_time64 */
	.nfutex_syscalls = 2,
	.syscall_arg_regs = { SW_X86_EBX, SW_X86_ECX, SW_X86_EDX, SW_X86_ESI, SW_X86_EDI, SW_X86_EBP },
	.rwlock_cur_writer_offset = 28,
};
