/* context.c - register contexts. */
#include "util.h"
#include "arch.h"

SW_API sw_status sw_context_init(sw_context *ctx, sw_arch arch)
{
	if (!ctx || !swi_arch_get(arch))
		return SW_E_INVAL;
	memset(ctx, 0, sizeof *ctx);
	ctx->arch = arch;
	return SW_OK;
}

SW_API sw_status sw_context_set(sw_context *ctx, unsigned reg, uint64_t value)
{
	const struct swi_arch *a;

	if (!ctx || !(a = swi_arch_get(ctx->arch)) || reg >= a->nregs)
		return SW_E_INVAL;
	ctx->regs[reg] = value;
	ctx->valid |= 1ULL << reg;
	return SW_OK;
}

SW_API sw_status sw_context_get(const sw_context *ctx, unsigned reg, uint64_t *value)
{
	const struct swi_arch *a;

	if (!ctx || !value || !(a = swi_arch_get(ctx->arch)) || reg >= a->nregs)
		return SW_E_INVAL;
	if (!(ctx->valid & (1ULL << reg)))
		return SW_E_NOREG;
	*value = ctx->regs[reg];
	return SW_OK;
}

static uint64_t context_reg_or_zero(const sw_context *ctx, int want_ip)
{
	const struct swi_arch *a;
	unsigned r;

	if (!ctx || !(a = swi_arch_get(ctx->arch)))
		return 0;
	r = want_ip ? a->ip_reg : a->sp_reg;
	return (ctx->valid & (1ULL << r)) ? ctx->regs[r] : 0;
}

SW_API uint64_t sw_context_ip(const sw_context *ctx)
{
	return context_reg_or_zero(ctx, 1);
}

SW_API uint64_t sw_context_sp(const sw_context *ctx)
{
	return context_reg_or_zero(ctx, 0);
}
