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
