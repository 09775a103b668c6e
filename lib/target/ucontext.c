/*
 * ucontext.c - the host's signal context as an sw_context.  Host-only: the
 * layout of ucontext_t is the C library's, per architecture.
 */
#define _GNU_SOURCE
#include "config.h"
#include <signal.h>
#include <ucontext.h>
#include "util.h"

SW_API sw_status sw_context_from_ucontext(sw_context *ctx, const void *ucontext)
{
	const ucontext_t *uc = ucontext;

	if (!ctx || !uc)
		return SW_E_INVAL;
#if defined(__x86_64__)
	{
		static const struct { unsigned sw, greg; } map[] = {
			{ SW_X64_RAX, REG_RAX }, { SW_X64_RDX, REG_RDX }, { SW_X64_RCX, REG_RCX },
			{ SW_X64_RBX, REG_RBX }, { SW_X64_RSI, REG_RSI }, { SW_X64_RDI, REG_RDI },
			{ SW_X64_RBP, REG_RBP }, { SW_X64_RSP, REG_RSP }, { SW_X64_R8, REG_R8 },
			{ SW_X64_R9, REG_R9 }, { SW_X64_R10, REG_R10 }, { SW_X64_R11, REG_R11 },
			{ SW_X64_R12, REG_R12 }, { SW_X64_R13, REG_R13 }, { SW_X64_R14, REG_R14 },
			{ SW_X64_R15, REG_R15 }, { SW_X64_RIP, REG_RIP },
		};
		sw_context_init(ctx, SW_ARCH_X64);
		for (unsigned i = 0; i < sizeof map / sizeof map[0]; i++)
			sw_context_set(ctx, map[i].sw, (uint64_t)uc->uc_mcontext.gregs[map[i].greg]);
	}
	return SW_OK;
#elif defined(__i386__)
	{
		static const struct { unsigned sw, greg; } map[] = {
			{ SW_X86_EAX, REG_EAX }, { SW_X86_ECX, REG_ECX }, { SW_X86_EDX, REG_EDX },
			{ SW_X86_EBX, REG_EBX }, { SW_X86_ESP, REG_ESP }, { SW_X86_EBP, REG_EBP },
			{ SW_X86_ESI, REG_ESI }, { SW_X86_EDI, REG_EDI }, { SW_X86_EIP, REG_EIP },
		};
		sw_context_init(ctx, SW_ARCH_X86);
		for (unsigned i = 0; i < sizeof map / sizeof map[0]; i++)
			sw_context_set(ctx, map[i].sw, (uint32_t)uc->uc_mcontext.gregs[map[i].greg]);
	}
	return SW_OK;
#elif defined(__aarch64__)
	sw_context_init(ctx, SW_ARCH_ARM64);
	for (unsigned r = 0; r <= 30; r++)
		sw_context_set(ctx, r, uc->uc_mcontext.regs[r]);
	sw_context_set(ctx, SW_ARM64_SP, uc->uc_mcontext.sp);
	sw_context_set(ctx, SW_ARM64_PC, uc->uc_mcontext.pc);
	/* d8-d15 live in the FP/SIMD record of __reserved; not needed to unwind. */
	return SW_OK;
#else
	SWI_UNUSED(uc);
	return SW_E_UNSUPPORTED;
#endif
}
