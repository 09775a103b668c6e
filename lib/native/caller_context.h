/*
 * caller_context.h - the calling function's registers without a system
 * call (caller_context.c), where the host's assembly is written: x86-64,
 * i386, AArch64 (SWI_HAVE_CALLER_REGISTERS).  Elsewhere getcontext(3).
 */
#ifndef SWI_CALLER_CONTEXT_H
#define SWI_CALLER_CONTEXT_H

#include <stdint.h>
#include <stackwalk.h>

#if defined(__x86_64__) || defined(__i386__) || defined(__aarch64__)
#define SWI_HAVE_CALLER_REGISTERS 1
#define SWI_CALLER_REGISTERS 13     /* words swi_caller_registers stores, at most */

/*
 * Store the caller's callee-saved registers, its stack pointer and its
 * instruction pointer as they are once this call returns, into
 * regs[SWI_CALLER_REGISTERS].  Async-signal-safe: no call, no system call.
 */
void swi_caller_registers(uintptr_t *regs);

/* The registers swi_caller_registers stored, as a walk's seed (the others unknown). */
sw_status swi_context_from_registers(sw_context *ctx, const uintptr_t *regs);
#endif

#endif /* SWI_CALLER_CONTEXT_H */
