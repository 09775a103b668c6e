/*
 * lock_wait.h - what a blocked thread waits on, from its stack, its
 * registers and (live) the kernel's view of its system call; and, for a
 * glibc mutex or rwlock, the lock's address and owner read from the
 * lock itself.  Internal to the hang analysis.
 */
#ifndef SW_TARGET_LOCK_WAIT_H
#define SW_TARGET_LOCK_WAIT_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>
#include "stack_set.h"
#include "thread_state.h"

/* What a thread's stack says it is waiting in. */
enum swi_wait_hint {
	SWI_WAIT_NONE = 0,
	SWI_WAIT_MUTEX,                 /* pthread_mutex_lock, __lll_lock_wait, ... */
	SWI_WAIT_RWLOCK_READ,           /* pthread_rwlock_rdlock and its timed forms */
	SWI_WAIT_RWLOCK_WRITE,          /* pthread_rwlock_wrlock and its timed forms */
	SWI_WAIT_IO,                    /* read, poll, accept, ... */
	SWI_WAIT_IDLE                   /* a condition variable, a sleep, a join */
};

/* The innermost frame (of the first few) whose function says what the thread waits in. */
enum swi_wait_hint swi_wait_hint(const struct swi_frame *frames, size_t count);

/*
 * The futex a thread blocked in a lock waits on: live, the first argument
 * of its futex system call as /proc reported it (0 if it is in no futex
 * call); in a core (`live` NULL), the register that carries the first
 * system-call argument (the arch table's syscall_arg_regs[0]).
 */
uint64_t swi_futex_address(sw_arch arch, const sw_context *ctx,
                           const struct swi_thread_state *live);

/*
 * Read the lock a thread waits on in `hint`'s way at futex `futex`: the
 * lock's address (*lock), its kind and its owner thread id (0 if none).
 * `tids` are the target's threads (to tell an rwlock's two futex words
 * apart).  SW_E_BADADDR if the lock cannot be read.
 */
sw_status swi_lock_read(const sw_memory *mem, sw_arch arch, enum swi_wait_hint hint,
                        uint64_t futex, const int *tids, size_t ntids, uint64_t *lock,
                        sw_lock_kind *kind, int *owner);

#endif /* SW_TARGET_LOCK_WAIT_H */
