/*
 * watchdog.h - a hang watchdog a runtime arms for one of its threads.
 *
 * The watchdog's own thread pings the watched thread (the runtime's ping
 * function posts a message to that thread's loop, or the thread simply
 * answers every ping it finds); the thread answers with
 * sw_watchdog_answer().  A ping left unanswered for the timeout makes the
 * watchdog capture every thread's stack and run the hang analysis
 * (deadlock.h) on the whole process, and hand the report to a callback.
 *
 * The capture is done by a helper process, forked when the watchdog
 * starts, that attaches to this process with ptrace: no thread of the
 * hung process has to run any code for it, so it works whatever the hung
 * threads hold or block.  See sw_watchdog(3).
 */
#ifndef STACKWALK_WATCHDOG_H
#define STACKWALK_WATCHDOG_H

#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/deadlock.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_watchdog sw_watchdog;

/*
 * Called on the watchdog's thread when the watched thread `tid` left a
 * ping unanswered past the timeout: `report` is the analysis of the
 * whole process (NULL when it failed; `status` says why).  The report is
 * freed when the callback returns.  Called once per hang: again only
 * after the thread has answered.
 */
typedef void (*sw_watchdog_callback)(sw_watchdog *wd, int tid, const sw_hang_report *report,
                                     sw_status status, void *arg);

/* Posts a ping to the watched thread (its event loop); must not block. */
typedef void (*sw_watchdog_ping)(sw_watchdog *wd, void *arg);

/*
 * sw_watchdog_create - start a watchdog: its thread, and its helper
 * process (allowed to trace this one with PR_SET_PTRACER where Yama
 * asks for it).  `opt` (may be NULL) is given to the analysis.
 * SW_E_INVAL, SW_E_NOMEM, SW_E_UNSUPPORTED where the host has no ptrace.
 */
SW_API sw_status sw_watchdog_create(sw_watchdog_callback cb, void *arg,
                                    const sw_hang_options *opt, sw_watchdog **out);

/*
 * sw_watchdog_arm - watch thread `tid` (0: the calling thread): ping it,
 * and expect an answer within `timeout_ms` (at least 10).  `ping` (may
 * be NULL: the thread then answers from its loop without being told) is
 * called on the watchdog's thread for every ping.  Re-arming replaces
 * the watched thread.
 */
SW_API sw_status sw_watchdog_arm(sw_watchdog *wd, int tid, unsigned timeout_ms,
                                 sw_watchdog_ping ping, void *ping_arg);

/*
 * sw_watchdog_answer - the watched thread answers the latest ping.  Two
 * atomic operations: no lock, no system call, async-signal-safe.
 */
SW_API void sw_watchdog_answer(sw_watchdog *wd);

/* sw_watchdog_disarm - stop watching (a callback under way completes). */
SW_API sw_status sw_watchdog_disarm(sw_watchdog *wd);

/* sw_watchdog_destroy - stop the watchdog's thread and helper; NULL is ignored. */
SW_API void sw_watchdog_destroy(sw_watchdog *wd);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_WATCHDOG_H */
