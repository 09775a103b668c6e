/*
 * arch.h - target architectures and their register numbers.
 *
 * The architecture is data: any host walks any target.  Register numbers
 * follow each architecture's DWARF numbering where it has one, so that
 * imported CFI maps onto them directly.
 */
#ifndef STACKWALK_ARCH_H
#define STACKWALK_ARCH_H

#include <stdint.h>
#include <stackwalk/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum sw_arch {
	SW_ARCH_NONE  = 0,
	SW_ARCH_X64   = 1,   /* x86-64, System V AMD64 ABI */
	SW_ARCH_X86   = 2,   /* 32-bit x86 (i386 System V) */
	SW_ARCH_ARM64 = 3    /* AArch64, AAPCS64 */
} sw_arch;

/* Room for the largest register file (arm64: x0-x30, sp, pc, d8-d15). */
#define SW_MAX_REGS 48

/* x86-64 registers (DWARF numbers). */
enum {
	SW_X64_RAX = 0, SW_X64_RDX = 1, SW_X64_RCX = 2, SW_X64_RBX = 3,
	SW_X64_RSI = 4, SW_X64_RDI = 5, SW_X64_RBP = 6, SW_X64_RSP = 7,
	SW_X64_R8  = 8, SW_X64_R9  = 9, SW_X64_R10 = 10, SW_X64_R11 = 11,
	SW_X64_R12 = 12, SW_X64_R13 = 13, SW_X64_R14 = 14, SW_X64_R15 = 15,
	SW_X64_RIP = 16,
	SW_X64_NREGS = 17
};

/* 32-bit x86 registers (DWARF numbers).  Callee-saved: ebx, ebp, esi, edi. */
enum {
	SW_X86_EAX = 0, SW_X86_ECX = 1, SW_X86_EDX = 2, SW_X86_EBX = 3,
	SW_X86_ESP = 4, SW_X86_EBP = 5, SW_X86_ESI = 6, SW_X86_EDI = 7,
	SW_X86_EIP = 8,
	SW_X86_NREGS = 9
};

/*
 * AArch64 registers.  x0-x30 and sp use their DWARF numbers; pc and the
 * low halves of the callee-saved d8-d15 follow (DWARF puts v8-v15 at
 * 72-79, beyond SW_MAX_REGS).  Callee-saved: x19-x28, fp (x29), d8-d15.
 */
enum {
	SW_ARM64_X0 = 0, SW_ARM64_X19 = 19, SW_ARM64_X20, SW_ARM64_X21, SW_ARM64_X22,
	SW_ARM64_X23, SW_ARM64_X24, SW_ARM64_X25, SW_ARM64_X26, SW_ARM64_X27,
	SW_ARM64_X28, SW_ARM64_FP = 29, SW_ARM64_LR = 30, SW_ARM64_SP = 31,
	SW_ARM64_PC = 32,
	SW_ARM64_D8 = 33, SW_ARM64_D9, SW_ARM64_D10, SW_ARM64_D11, SW_ARM64_D12,
	SW_ARM64_D13, SW_ARM64_D14, SW_ARM64_D15,
	SW_ARM64_NREGS = 41
};

/* sw_arch_name - "x64", "x86", "arm64", or NULL for an unknown value. */
SW_API const char *sw_arch_name(sw_arch arch);

/* sw_arch_pointer_size - the target's pointer width in bytes, 0 if unknown. */
SW_API unsigned sw_arch_pointer_size(sw_arch arch);

/* sw_arch_reg_name - the name of register `reg` of `arch`, or NULL. */
SW_API const char *sw_arch_reg_name(sw_arch arch, unsigned reg);

/* sw_arch_host - the architecture this library was compiled for. */
SW_API sw_arch sw_arch_host(void);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_ARCH_H */
