/*
 * process.h - another live process as a walk target, through ptrace.
 *
 * Attaching stops every thread of the process; while attached, its
 * registers, memory and mappings hold still for walks; detaching lets each
 * thread go on exactly as before.  Linux only, and the host's architecture
 * only (on an x86-64 host, i386 processes too).
 */
#ifndef STACKWALK_PROCESS_H
#define STACKWALK_PROCESS_H

#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>
#include <stackwalk/context.h>
#include <stackwalk/memory.h>
#include <stackwalk/core.h>     /* sw_mapped_file */

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_process sw_process;

/*
 * sw_process_attach - stop every thread of process `pid` (PTRACE_SEIZE and
 * PTRACE_INTERRUPT each one listed in /proc/PID/task, until no new thread
 * appears) and read their registers and the process's mappings.
 * SW_E_INVAL for a bad pid or this process itself, SW_E_BADADDR if the
 * process cannot be traced (errno says why: EPERM, ESRCH),
 * SW_E_UNSUPPORTED on a host without ptrace or for a process of another
 * architecture, SW_E_LIMIT, SW_E_NOMEM.  Not thread-safe: ptrace ties a
 * tracee to the thread that attached, so call every sw_process function of
 * one process from that thread.
 */
SW_API sw_status sw_process_attach(int pid, sw_process **proc);

/*
 * sw_process_detach - let every thread go (PTRACE_DETACH, handing back any
 * signal that arrived while attached) and release `proc`; NULL is ignored.
 * A process that was stopped (SIGSTOP) stays stopped.  A thread seized but
 * left running (sw_process_unstopped: it entered vfork() during the
 * attach) is let go if it has stopped by now; otherwise it stays traced by
 * the calling thread until that thread exits.
 */
SW_API sw_status sw_process_detach(sw_process *proc);

/* sw_process_arch - the process's architecture. */
SW_API sw_arch sw_process_arch(const sw_process *proc);

/* sw_process_thread_count - the threads stopped by sw_process_attach. */
SW_API unsigned sw_process_thread_count(const sw_process *proc);

/*
 * sw_process_unstopped_count, sw_process_unstopped - the threads
 * sw_process_attach left running rather than wait for them without bound:
 * a thread blocked in vfork() (or clone with CLONE_VFORK, as posix_spawn
 * calls it) cannot stop until its child execs or exits, whether it was
 * blocked before the attach looked at it or entered vfork() after; nor
 * can one that stays in an uninterruptible sleep.  They are not
 * among sw_process_thread's and have no registers; thread `index`'s id
 * and its scheduling state as /proc gives it ('D') into `tid` and
 * `state`, either of which may be NULL.  SW_E_INVAL for a bad index.
 */
SW_API unsigned sw_process_unstopped_count(const sw_process *proc);
SW_API sw_status sw_process_unstopped(const sw_process *proc, unsigned index, int *tid,
                                      char *state);

/*
 * sw_process_thread - thread `index` (0 is the thread group leader when it
 * is alive): its registers as read at attach (PTRACE_GETREGSET
 * NT_PRSTATUS) and its thread id (`tid` may be NULL).
 */
SW_API sw_status sw_process_thread(const sw_process *proc, unsigned index, sw_context *ctx,
                                   int *tid);

/*
 * sw_process_memory - the process's memory while attached: each read is a
 * process_vm_readv system call (falling back to /proc/PID/mem).  Read-only.
 */
SW_API const sw_memory *sw_process_memory(const sw_process *proc);

/*
 * sw_process_module_count, sw_process_module - the file-backed mappings
 * of /proc/PID/maps as read at attach, by address, with their access rights.
 */
SW_API unsigned sw_process_module_count(const sw_process *proc);
SW_API sw_status sw_process_module(const sw_process *proc, unsigned index, sw_mapped_file *file);

/*
 * sw_process_stack_bounds - the mapping that contains `sp` (as read at
 * attach): the stack bounds to give sw_thread_init.  SW_E_BADADDR if none.
 */
SW_API sw_status sw_process_stack_bounds(const sw_process *proc, uint64_t sp, uint64_t *lo,
                                         uint64_t *hi);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_PROCESS_H */
