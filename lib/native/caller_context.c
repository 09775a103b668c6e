/*
 * caller_context.c - the calling function's registers, as a walk's seed,
 * without a system call.
 *
 * getcontext(3) also saves the signal mask, a system call on every use:
 * on a virtual machine that was most of a warm sw_backtrace_self.  A walk
 * needs less: the registers a callee must preserve, the stack pointer and
 * the instruction pointer.  swi_caller_registers, a few instructions of
 * assembly per architecture, stores those of its caller as they are right
 * after the call returns (IP the return address, SP above the return
 * address); the caller's other registers are not known, which a walk
 * from a call site does not need.  Like libunwind's unw_getcontext.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include "caller_context.h"

/* The function's opening, hidden to the library; `kind` is @function (x86) or %function (AArch64). */
#define FUNCTION_BEGIN(align, kind)                             \
	".text\n"                                               \
	".p2align " #align "\n"                                 \
	".globl swi_caller_registers\n"                         \
	".hidden swi_caller_registers\n"                        \
	".type swi_caller_registers," #kind "\n"                \
	"swi_caller_registers:\n"
#define FUNCTION_END ".size swi_caller_registers, .-swi_caller_registers\n"

#if defined(__x86_64__)
/* rdi: uint64_t[8] <- rbx rbp r12 r13 r14 r15, the caller's rsp, its rip. */
__asm__(FUNCTION_BEGIN(4, @function)
        "\tmovq %rbx, 0(%rdi)\n"
        "\tmovq %rbp, 8(%rdi)\n"
        "\tmovq %r12, 16(%rdi)\n"
        "\tmovq %r13, 24(%rdi)\n"
        "\tmovq %r14, 32(%rdi)\n"
        "\tmovq %r15, 40(%rdi)\n"
        "\tleaq 8(%rsp), %rax\n"
        "\tmovq %rax, 48(%rdi)\n"
        "\tmovq (%rsp), %rax\n"
        "\tmovq %rax, 56(%rdi)\n"
        "\tret\n"
        FUNCTION_END);
static const unsigned saved[] = { SW_X64_RBX, SW_X64_RBP, SW_X64_R12, SW_X64_R13, SW_X64_R14,
                                  SW_X64_R15, SW_X64_RSP, SW_X64_RIP };
#define CALLER_ARCH SW_ARCH_X64
#elif defined(__i386__)
/* [esp+4]: uint32_t[6] <- ebx ebp esi edi, the caller's esp, its eip. */
__asm__(FUNCTION_BEGIN(4, @function)
        "\tmovl 4(%esp), %eax\n"
        "\tmovl %ebx, 0(%eax)\n"
        "\tmovl %ebp, 4(%eax)\n"
        "\tmovl %esi, 8(%eax)\n"
        "\tmovl %edi, 12(%eax)\n"
        "\tleal 4(%esp), %ecx\n"
        "\tmovl %ecx, 16(%eax)\n"
        "\tmovl (%esp), %ecx\n"
        "\tmovl %ecx, 20(%eax)\n"
        "\tret\n"
        FUNCTION_END);
static const unsigned saved[] = { SW_X86_EBX, SW_X86_EBP, SW_X86_ESI, SW_X86_EDI, SW_X86_ESP,
                                  SW_X86_EIP };
#define CALLER_ARCH SW_ARCH_X86
#elif defined(__aarch64__)
/* x0: uint64_t[14] <- x19..x28, fp, the caller's sp, its pc (lr). */
__asm__(FUNCTION_BEGIN(2, %function)
        "\thint 34\n"                   /* bti c: a no-op where BTI is off */
        "\tstp x19, x20, [x0, #0]\n"
        "\tstp x21, x22, [x0, #16]\n"
        "\tstp x23, x24, [x0, #32]\n"
        "\tstp x25, x26, [x0, #48]\n"
        "\tstp x27, x28, [x0, #64]\n"
        "\tmov x1, sp\n"
        "\tstp x29, x1, [x0, #80]\n"
        "\tstr x30, [x0, #96]\n"
        "\tret\n"
        FUNCTION_END);
static const unsigned saved[] = { SW_ARM64_X19, SW_ARM64_X20, SW_ARM64_X21, SW_ARM64_X22,
                                  SW_ARM64_X23, SW_ARM64_X24, SW_ARM64_X25, SW_ARM64_X26,
                                  SW_ARM64_X27, SW_ARM64_X28, SW_ARM64_FP, SW_ARM64_SP,
                                  SW_ARM64_PC };
#define CALLER_ARCH SW_ARCH_ARM64
#endif

#ifdef SWI_HAVE_CALLER_REGISTERS
sw_status swi_context_from_registers(sw_context *ctx, const uintptr_t *regs)
{
	sw_context_init(ctx, CALLER_ARCH);
	for (unsigned i = 0; i < sizeof saved / sizeof saved[0]; i++)
		sw_context_set(ctx, saved[i], (uint64_t)regs[i]);
	return SW_OK;
}
#endif
