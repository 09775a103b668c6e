/*
 * resume.c - sw_context_resume: load a register context into the calling
 * thread and jump to it (libunwind's unw_resume, the CLR's ResumeAtCatch,
 * which on Unix ends in RtlRestoreContext).  Host-only: it is the host's
 * registers that change.  x86-64, i686 and aarch64.
 *
 * One way on the three: the C side copies the context into an array in
 * its own frame (a register the context does not know is set to 0), and
 * an assembly routine stores the few values it cannot keep in a register
 * beneath the target SP, loads every other register from the array, moves
 * SP to those values and pops them, then returns to the target IP.  Every
 * read of the array happens while SP still lies below it (a signal may
 * overwrite memory beneath SP, and the array is in this thread's current
 * frame, beneath the target SP); the values beneath the target SP are
 * written while SP lies below them too, and popped last.  What is lost:
 *
 *   x86-64  the 24 bytes beneath the target SP (rdi, rax, rip), the flags
 *   i686    the 8 bytes beneath the target SP (eax, eip), the flags
 *   aarch64 the 16 bytes beneath the target SP (x0, x17), x16 (it holds
 *           the target PC at the return), NZCV and FPCR/FPSR
 *
 * The jump is a return (ret, and ret x16 on aarch64), never an indirect
 * branch: BTI checks indirect branches for a landing pad, which a catch's
 * continuation does not have, and does not check returns.  A shadow
 * stack, on the other hand, checks returns: with x86's CET shadow stack
 * or arm64's GCS active, the frames released would have to be popped off
 * it too, and the context does not say how many there are; the resume is
 * refused before anything changes (Linux has no shadow stack for 32-bit
 * x86 processes).
 */
#include "util.h"
#include "arch.h"
#include <stackwalk/dispatch.h>

#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
/*
 * Copy the registers of ctx into regs[0..n-1], 0 for those it does not
 * know; SW_E_NOREG unless it knows the IP and the SP.
 */
static sw_status resume_regs(const sw_context *ctx, unsigned n, unsigned ip, unsigned sp,
                             uint64_t *regs)
{
	const uint64_t need = (1ULL << ip) | (1ULL << sp);

	if ((ctx->valid & need) != need)
		return SW_E_NOREG;
	for (unsigned r = 0; r < n; r++)
		regs[r] = (ctx->valid >> r) & 1 ? ctx->regs[r] : 0;
	return SW_OK;
}
#endif

#if defined(__x86_64__)
/*
 * swi_resume_x64(regs): regs[] in DWARF order, rax..r15 then rip.  The
 * target's rip, rax and rdi go onto the target stack, 24 bytes beneath
 * its SP, as libunwind's x86-64 setcontext does.
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

/*
 * Whether this thread runs with a CET shadow stack: rdsspq reads its
 * pointer, and is a no-op that leaves the register alone where there is
 * none (an older CPU, or the kernel or C library did not enable it).
 */
static int shadow_stack_active(void)
{
	uint64_t ssp = 0;

	__asm__ volatile("rdsspq %0" : "+r"(ssp));
	return ssp != 0;
}

static sw_status resume_host(const sw_context *ctx)
{
	uint64_t regs[SW_X64_NREGS];
	sw_status st = resume_regs(ctx, SW_X64_NREGS, SW_X64_RIP, SW_X64_RSP, regs);

	if (st != SW_OK)
		return st;
	if (shadow_stack_active())
		return SW_E_UNSUPPORTED;
	swi_resume_x64(regs);
}

#elif defined(__i386__)
/*
 * swi_resume_x86(regs): regs[] in DWARF order, eax..edi then eip, and
 * last the target SP less 8, where the target's eax and eip are put (the
 * slot lets the final read of the array load esp itself, so that no
 * register is needed to hold it).
 */
void swi_resume_x86(const uint32_t *regs) __attribute__((noreturn, visibility("hidden")));
__asm__(
	".text\n"
	".globl swi_resume_x86\n"
	".hidden swi_resume_x86\n"
	".type swi_resume_x86, @function\n"
	"swi_resume_x86:\n"
	"	.cfi_startproc\n"
	"	movl 4(%esp), %eax\n"           /* regs */
	"	movl 16(%eax), %ecx\n"          /* the target SP */
	"	movl 32(%eax), %edx\n"
	"	movl %edx, -4(%ecx)\n"          /* eip: where ret goes */
	"	movl 0(%eax), %edx\n"
	"	movl %edx, -8(%ecx)\n"          /* eax */
	"	movl 4(%eax), %ecx\n"
	"	movl 8(%eax), %edx\n"
	"	movl 12(%eax), %ebx\n"
	"	movl 20(%eax), %ebp\n"
	"	movl 24(%eax), %esi\n"
	"	movl 28(%eax), %edi\n"
	"	movl 36(%eax), %esp\n"          /* the target SP less 8 */
	"	popl %eax\n"
	"	ret\n"
	"	.cfi_endproc\n"
	"	.size swi_resume_x86, .-swi_resume_x86\n");

static sw_status resume_host(const sw_context *ctx)
{
	uint64_t regs[SW_X86_NREGS];
	uint32_t regs32[SW_X86_NREGS + 1];
	sw_status st = resume_regs(ctx, SW_X86_NREGS, SW_X86_EIP, SW_X86_ESP, regs);

	if (st != SW_OK)
		return st;
	for (unsigned r = 0; r < SW_X86_NREGS; r++) {
		if (regs[r] > UINT32_MAX)
			return SW_E_INVAL;
		regs32[r] = (uint32_t)regs[r];
	}
	regs32[SW_X86_NREGS] = regs32[SW_X86_ESP] - 8;
	swi_resume_x86(regs32);
}

#elif defined(__aarch64__)
/*
 * swi_resume_arm64(regs): regs[] in the library's order, x0..x30, sp, pc,
 * d8..d15, and last the target SP less 16, where the target's x0 and x17
 * are put.  x16 carries the PC to the final ret: it is the one register
 * not restored (IP0, which a veneer or a PLT stub may clobber at any
 * call, so compiled code keeps nothing in it across one).
 */
void swi_resume_arm64(const uint64_t *regs) __attribute__((noreturn, visibility("hidden")));
__asm__(
	".text\n"
	".globl swi_resume_arm64\n"
	".hidden swi_resume_arm64\n"
	".type swi_resume_arm64, %function\n"
	"swi_resume_arm64:\n"
	"	.cfi_startproc\n"
	"	ldr x16, [x0, #328]\n"          /* the target SP less 16 */
	"	ldr x17, [x0, #0]\n"
	"	str x17, [x16]\n"               /* x0 */
	"	ldr x17, [x0, #136]\n"
	"	str x17, [x16, #8]\n"           /* x17 */
	"	ldp d8, d9, [x0, #264]\n"
	"	ldp d10, d11, [x0, #280]\n"
	"	ldp d12, d13, [x0, #296]\n"
	"	ldp d14, d15, [x0, #312]\n"
	"	ldr x1, [x0, #8]\n"
	"	ldp x2, x3, [x0, #16]\n"
	"	ldp x4, x5, [x0, #32]\n"
	"	ldp x6, x7, [x0, #48]\n"
	"	ldp x8, x9, [x0, #64]\n"
	"	ldp x10, x11, [x0, #80]\n"
	"	ldp x12, x13, [x0, #96]\n"
	"	ldp x14, x15, [x0, #112]\n"
	"	ldp x18, x19, [x0, #144]\n"
	"	ldp x20, x21, [x0, #160]\n"
	"	ldp x22, x23, [x0, #176]\n"
	"	ldp x24, x25, [x0, #192]\n"
	"	ldp x26, x27, [x0, #208]\n"
	"	ldp x28, x29, [x0, #224]\n"
	"	ldr x30, [x0, #240]\n"
	"	mov x17, x16\n"
	"	ldr x16, [x0, #256]\n"          /* pc: the last read of the array */
	"	mov sp, x17\n"
	"	ldp x0, x17, [sp], #16\n"
	"	ret x16\n"
	"	.cfi_endproc\n"
	"	.size swi_resume_arm64, .-swi_resume_arm64\n");

/*
 * Whether this thread runs with a Guarded Control Stack: chkfeat x16
 * (hint #40, a no-op where the CPU has no such instruction) clears bit 0
 * of x16 when GCS is enabled.
 */
static int shadow_stack_active(void)
{
	register uint64_t x16 __asm__("x16") = 1;

	__asm__ volatile("hint #40" : "+r"(x16));
	return (x16 & 1) == 0;
}

static sw_status resume_host(const sw_context *ctx)
{
	uint64_t regs[SW_ARM64_NREGS + 1];
	sw_status st = resume_regs(ctx, SW_ARM64_NREGS, SW_ARM64_PC, SW_ARM64_SP, regs);

	if (st != SW_OK)
		return st;
	/* AAPCS64: SP is 16-aligned wherever it is used to reach memory. */
	if (regs[SW_ARM64_SP] & 15)
		return SW_E_BADSP;
	if (shadow_stack_active())
		return SW_E_UNSUPPORTED;
	regs[SW_ARM64_NREGS] = regs[SW_ARM64_SP] - 16;
	swi_resume_arm64(regs);
}
#endif

SW_API sw_status sw_context_resume(const sw_context *ctx)
{
	if (!ctx)
		return SW_E_INVAL;
#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
	if (ctx->arch == (uint32_t)sw_arch_host())
		return resume_host(ctx);
#endif
	return SW_E_UNSUPPORTED;
}
