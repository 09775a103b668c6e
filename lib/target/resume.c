/*
 * resume.c - sw_context_resume: load a register context into the calling
 * thread and jump to it (libunwind's unw_resume, the CLR's ResumeAtCatch,
 * which on Unix ends in RtlRestoreContext).  Host-only: it is the host's
 * registers that change.  x86-64 only so far; i686 and aarch64 are left.
 */
#include "util.h"
#include "arch.h"
#include <stackwalk/dispatch.h>

#if defined(__x86_64__)
/*
 * swi_resume_x64(regs): regs[] in DWARF order, rax..r15 then rip.  Every
 * value is read while the stack pointer still lies below the array (a
 * signal may overwrite memory beneath SP, and the array is in this
 * thread's current frame, beneath the target SP).  The target's rdi, rax
 * and rip go onto the target stack, 24 bytes beneath its SP, as
 * libunwind's x86-64 setcontext does; the last instruction is a ret, so
 * the flags are the only state not restored (and a CET shadow stack would
 * refuse the return: not supported).
 */
void swi_resume_x64(const uint64_t *regs) __attribute__((noreturn, visibility("hidden")));
__asm__(
	".text\n"
	".globl swi_resume_x64\n"
	".hidden swi_resume_x64\n"
	".type swi_resume_x64, @function\n"
	"swi_resume_x64:\n"
	"	.cfi_startproc\n"
	"	movq 56(%rdi), %rax\n"          /* the target SP */
	"	movq 128(%rdi), %rcx\n"
	"	movq %rcx, -8(%rax)\n"          /* rip: where ret goes */
	"	movq 0(%rdi), %rcx\n"
	"	movq %rcx, -16(%rax)\n"         /* rax */
	"	movq 40(%rdi), %rcx\n"
	"	movq %rcx, -24(%rax)\n"         /* rdi */
	"	movq 8(%rdi), %rdx\n"
	"	movq 24(%rdi), %rbx\n"
	"	movq 32(%rdi), %rsi\n"
	"	movq 48(%rdi), %rbp\n"
	"	movq 64(%rdi), %r8\n"
	"	movq 72(%rdi), %r9\n"
	"	movq 80(%rdi), %r10\n"
	"	movq 88(%rdi), %r11\n"
	"	movq 96(%rdi), %r12\n"
	"	movq 104(%rdi), %r13\n"
	"	movq 112(%rdi), %r14\n"
	"	movq 120(%rdi), %r15\n"
	"	movq 16(%rdi), %rcx\n"
	"	leaq -24(%rax), %rsp\n"
	"	popq %rdi\n"
	"	popq %rax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size swi_resume_x64, .-swi_resume_x64\n");
#endif

SW_API sw_status sw_context_resume(const sw_context *ctx)
{
	if (!ctx)
		return SW_E_INVAL;
#if defined(__x86_64__)
	if (ctx->arch == SW_ARCH_X64) {
		uint64_t regs[SW_X64_NREGS];
		const uint64_t need = (1ULL << SW_X64_RIP) | (1ULL << SW_X64_RSP);

		if ((ctx->valid & need) != need)
			return SW_E_NOREG;
		/* A register the context does not know is scratch at the target: zero it. */
		for (unsigned r = 0; r < SW_X64_NREGS; r++)
			regs[r] = (ctx->valid >> r) & 1 ? ctx->regs[r] : 0;
		swi_resume_x64(regs);
	}
#endif
	return SW_E_UNSUPPORTED;
}
