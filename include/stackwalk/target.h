/*
 * target.h - host-only helpers: turning what the operating system hands a
 * signal handler into a context the walker can start from.
 */
#ifndef STACKWALK_TARGET_H
#define STACKWALK_TARGET_H

#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/context.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * sw_context_from_ucontext - fill `ctx` from a ucontext_t (the third
 * argument of an SA_SIGINFO handler) of the host's architecture: x86-64,
 * i386 or AArch64 Linux.  Async-signal-safe.  SW_E_UNSUPPORTED on other hosts.
 */
SW_API sw_status sw_context_from_ucontext(sw_context *ctx, const void *ucontext);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_TARGET_H */
