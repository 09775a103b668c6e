/*
 * context.h - register contexts and the register display.
 *
 * sw_context holds register values with a mask saying which are known.
 * sw_regdisplay (the CLR's REGDISPLAY) holds the context of the frame being
 * reported, the target address each register's value was read from, and
 * the caller's context once the frame has been unwound.
 */
#ifndef STACKWALK_CONTEXT_H
#define STACKWALK_CONTEXT_H

#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_context {
	uint32_t arch;                  /* an sw_arch */
	uint32_t reserved;              /* zero */
	uint64_t valid;                 /* bit r set: regs[r] holds a known value */
	uint64_t regs[SW_MAX_REGS];     /* indexed by the arch's register numbers */
} sw_context;

typedef struct sw_regdisplay {
	sw_context cur;                 /* registers of the frame being reported */
	/*
	 * cur_loc[r]: target address that cur.regs[r] was restored from, or 0
	 * when the value never went through memory since the seed context
	 * (it is still live in the register) or is not known.
	 */
	uint64_t cur_loc[SW_MAX_REGS];
	sw_context caller;              /* the caller's registers, when caller_valid */
	uint64_t caller_loc[SW_MAX_REGS];
	int caller_valid;               /* non-zero once this frame has been unwound */
	int reserved;
} sw_regdisplay;

/* sw_context_init - empty context for `arch`: no register known. */
SW_API sw_status sw_context_init(sw_context *ctx, sw_arch arch);

/* sw_context_set - set register `reg` to `value` and mark it known. */
SW_API sw_status sw_context_set(sw_context *ctx, unsigned reg, uint64_t value);

/* sw_context_get - read register `reg`; SW_E_NOREG if it is not known. */
SW_API sw_status sw_context_get(const sw_context *ctx, unsigned reg, uint64_t *value);

/* sw_context_ip, sw_context_sp - the instruction and stack pointer (0 if unknown). */
SW_API uint64_t sw_context_ip(const sw_context *ctx);
SW_API uint64_t sw_context_sp(const sw_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_CONTEXT_H */
