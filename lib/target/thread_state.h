/*
 * thread_state.h - what the kernel says of each thread of a live process
 * (/proc/PID/task/TID/{stat,syscall,wchan}): its scheduling state, the
 * system call it is blocked in and that call's first argument, its wait
 * channel, and the CPU time it used, sampled twice to give a CPU share.
 *
 * Internal to the library: the hang analysis reads it before attaching
 * (a traced thread's state is 't', whatever it was doing).
 */
#ifndef SW_TARGET_THREAD_STATE_H
#define SW_TARGET_THREAD_STATE_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/status.h>

#define SWI_WCHAN_MAX 64
#define SWI_MAX_TASKS 65536             /* threads read from /proc/PID/task */

struct swi_thread_state {
	int tid;
	char state;                     /* R, S, D, T, t, Z, ...; 0 if unreadable */
	long syscall;                   /* the blocking system call; -1 for none or unknown */
	uint64_t arg0;                  /* its first argument */
	char wchan[SWI_WCHAN_MAX];      /* "" if none or hidden */
	uint64_t cpu_ns;                /* user + system time at the second sample */
	unsigned cpu_permille;          /* share of one CPU between the samples */
};

/*
 * Read every thread of `pid`, sampling CPU time `sample_ms` apart (0: one
 * sample, cpu_permille 0).  *out is malloc'd (free it).  SW_E_BADADDR if
 * /proc/PID/task cannot be read (errno says why), SW_E_NOMEM, SW_E_LIMIT.
 */
sw_status swi_thread_states_read(int pid, unsigned sample_ms, struct swi_thread_state **out,
                                 size_t *count);

/* One thread's state and system call (not its wait channel or CPU share). */
void swi_thread_state_read_one(int pid, int tid, struct swi_thread_state *ts);

/*
 * Is the thread blocked until a vfork child execs or exits?  Such a thread
 * (in vfork(), or in clone/clone3 with CLONE_VFORK, as posix_spawn calls
 * them) cannot enter ptrace-stop before then, which may be never.
 */
int swi_thread_waits_for_vfork(const struct swi_thread_state *ts);

/* The state of thread `tid` in `states`, or NULL. */
const struct swi_thread_state *swi_thread_state_find(const struct swi_thread_state *states,
                                                     size_t count, int tid);

#endif /* SW_TARGET_THREAD_STATE_H */
