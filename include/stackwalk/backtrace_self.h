/*
 * backtrace_self.h - the calling thread's stack in one call.
 *
 * The drop-in for glibc's backtrace() and libunwind's unw_backtrace():
 * no set-up.  The first call registers the process's loaded objects as
 * lazy modules (SW_MODULE_LAZY), later calls follow dlopen and dlclose,
 * and each walk imports the CFI of the functions it meets.  See
 * sw_backtrace_self(3).
 */
#ifndef STACKWALK_BACKTRACE_SELF_H
#define STACKWALK_BACKTRACE_SELF_H

#include <stackwalk/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * sw_backtrace_self - the return addresses of the calling thread's frames,
 * its caller's first, into buffer[0 .. size), as backtrace() gives them:
 * how many were stored (0 when none could be, or on bad arguments).  A
 * walk that stops early keeps what it found.  Not async-signal-safe (the
 * first call, a dlopen since the last one, and imports allocate and lock).
 */
SW_API int sw_backtrace_self(void **buffer, int size);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_BACKTRACE_SELF_H */
