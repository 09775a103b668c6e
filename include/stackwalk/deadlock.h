/*
 * deadlock.h - hang and deadlock diagnosis of a live process or a core.
 *
 * The analysis takes every thread's state (from /proc where the process
 * is live) and its native stack (the walker, with each mapped file loaded
 * as a native module), finds the threads blocked on a glibc mutex or
 * rwlock and the lock's owner, builds the wait-for graph (thread -> lock
 * -> owner thread), finds every cycle in it (a deadlock), and classifies
 * the other threads: busy at high CPU (a suspected infinite loop),
 * waiting on a lock whose owner is alive, on a lock with no owner, on
 * I/O, or idle.  Linux glibc programs of x86-64, i386 and AArch64.
 * See sw_hang_report(3).
 */
#ifndef STACKWALK_DEADLOCK_H
#define STACKWALK_DEADLOCK_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>
#include <stackwalk/core.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_hang_report sw_hang_report;

/* What a thread is doing, as the analysis sees it. */
typedef enum sw_hang_class {
	SW_HANG_UNKNOWN     = 0,    /* nothing says (a core's thread outside any known wait) */
	SW_HANG_RUNNING     = 1,    /* runnable, below the busy threshold */
	SW_HANG_BUSY        = 2,    /* at high CPU: a suspected infinite loop */
	SW_HANG_DEADLOCKED  = 3,    /* in a wait-for cycle */
	SW_HANG_LOCK_WAIT   = 4,    /* waits on a lock whose owner lives and is in no cycle with it */
	SW_HANG_LOCK_NO_OWNER = 5,  /* waits on a lock with no owner, a dead one, or readers only */
	SW_HANG_IO_WAIT     = 6,    /* blocked on I/O: read, poll, ..., or uninterruptible (D) */
	SW_HANG_IDLE        = 7     /* blocked on something else: a condition, a sleep */
} sw_hang_class;

/* The kind of lock a thread waits on. */
typedef enum sw_lock_kind {
	SW_LOCK_NONE   = 0,
	SW_LOCK_MUTEX  = 1,         /* pthread_mutex_t: its owner is __owner */
	SW_LOCK_RWLOCK_READ = 2,    /* pthread_rwlock_t, to read: its writer is __cur_writer */
	SW_LOCK_RWLOCK_WRITE = 3    /* pthread_rwlock_t, to write */
} sw_lock_kind;

/* Options of the analysis; NULL means the defaults. */
typedef struct sw_hang_options {
	unsigned sample_ms;         /* CPU sampling interval of a live process; 0: no sampling
	                             * (a NULL sw_hang_options samples 250 ms) */
	unsigned busy_permille;     /* share of one CPU that makes a thread busy (0: 500) */
	unsigned max_frames;        /* frames kept per thread (0: 64; at most 1024) */
	unsigned reserved;
} sw_hang_options;

/* One thread of the report; the strings and frames belong to the report. */
typedef struct sw_hang_thread {
	int tid;
	char state;                 /* the kernel's state letter (R, S, D, ...); 0 in a core */
	long syscall;               /* the system call it is blocked in; -1 none or unknown */
	const char *wchan;          /* the kernel's wait channel; NULL if none or unknown */
	uint64_t cpu_ns;            /* CPU time used (user + system); 0 in a core */
	unsigned cpu_permille;      /* share of one CPU while sampled; 0 if not sampled */
	sw_hang_class cls;
	sw_lock_kind lock_kind;     /* the lock it waits on, or SW_LOCK_NONE */
	uint64_t lock;              /* its address (the mutex or rwlock), or 0 */
	int owner;                  /* the lock's owner thread, 0 if none or unknown */
	int cycle;                  /* the index of its deadlock cycle, or -1 */
	int behind;                 /* not in a cycle: the cycle its chain of waits leads into, or -1 */
	size_t frames;              /* frames walked (sw_hang_report_frame) */
	sw_status walk_status;      /* SW_OK, or why its walk stopped early */
} sw_hang_thread;

/* One frame of a thread's stack. */
typedef struct sw_hang_frame {
	uint64_t pc;
	const char *function;       /* NULL when no symbol contains it */
	uint64_t offset;            /* pc - the function's start */
	const char *module;         /* the mapped file, NULL when none */
} sw_hang_frame;

/*
 * sw_hang_analyze_process - analyze live process `pid`: read each thread's
 * state twice, `sample_ms` apart, then attach with ptrace
 * (sw_process_attach), walk every thread, read the locks, detach.  The
 * process is stopped only while attached.  SW_E_INVAL for a bad pid,
 * SW_E_BADADDR if the process cannot be read or traced (errno says why),
 * SW_E_UNSUPPORTED, SW_E_NOMEM, SW_E_LIMIT.
 */
SW_API sw_status sw_hang_analyze_process(int pid, const sw_hang_options *opt,
                                         sw_hang_report **out);

/*
 * sw_hang_analyze_core - analyze an open core file (add its executable
 * first with sw_core_add_executable when the core does not name it).
 * Threads have no kernel state: a blocked thread is recognized by its
 * stack and registers.  The core stays the caller's.
 */
SW_API sw_status sw_hang_analyze_core(const sw_core *core, const sw_hang_options *opt,
                                      sw_hang_report **out);

/* sw_hang_report_free - release a report; NULL is ignored. */
SW_API void sw_hang_report_free(sw_hang_report *r);

/* sw_hang_report_arch - the analyzed program's architecture. */
SW_API sw_arch sw_hang_report_arch(const sw_hang_report *r);

/* sw_hang_report_thread_count, sw_hang_report_thread - the threads, in the target's order. */
SW_API size_t sw_hang_report_thread_count(const sw_hang_report *r);
SW_API sw_status sw_hang_report_thread(const sw_hang_report *r, size_t index, sw_hang_thread *out);

/* sw_hang_report_frame - frame `level` (0 innermost) of thread `index`. */
SW_API sw_status sw_hang_report_frame(const sw_hang_report *r, size_t index, size_t level,
                                      sw_hang_frame *out);

/*
 * sw_hang_report_cycle_count, sw_hang_report_cycle - the deadlocks.  Cycle
 * `index` has *length threads; member `i` is thread index threads[i]
 * (into the report's threads), which waits on lock locks[i], owned by
 * the next member (the last by the first).  A cycle starts at its lowest
 * thread id; cycles are sorted by that id.  `threads` and `locks` each
 * take `cap` entries (either may be NULL); *length is the whole length.
 */
SW_API size_t sw_hang_report_cycle_count(const sw_hang_report *r);
SW_API sw_status sw_hang_report_cycle(const sw_hang_report *r, size_t index, size_t *threads,
                                      uint64_t *locks, size_t cap, size_t *length);

/* sw_hang_class_name, sw_lock_kind_name - short names ("busy", "mutex"), or NULL. */
SW_API const char *sw_hang_class_name(sw_hang_class cls);
SW_API const char *sw_lock_kind_name(sw_lock_kind kind);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_DEADLOCK_H */
