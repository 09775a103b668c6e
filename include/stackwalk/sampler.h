/*
 * sampler.h - a registry of the runtime's threads and a sampler that stops
 * one of them with a signal, lets the caller walk it, and resumes it.
 *
 * Host-only (Linux).  The rules are the CLR profiler's for asynchronous
 * DoStackSnapshot, enforced instead of documented:
 *
 *   - only the registry's one sampler thread (the thread that called
 *     sw_sampler_start) suspends others, so two threads can never be
 *     suspending each other;
 *   - a thread unregistering itself, or exiting, waits for a walk of it in
 *     progress, so its stack and its sw_thread stay valid for the whole walk;
 *   - the registry's lock is never held across anything that may block
 *     (sending the signal, waiting for the target, the callback), and a
 *     thread holding it is never stopped;
 *   - a thread that is exiting, or that has said it holds a lock a walk
 *     may need (sw_registry_unsafe_enter), is not suspended: SW_E_UNSAFE.
 *
 * The stopped thread waits inside its signal handler on a futex; the
 * handler only copies registers and makes futex system calls.
 */
#ifndef STACKWALK_SAMPLER_H
#define STACKWALK_SAMPLER_H

#include <signal.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/context.h>
#include <stackwalk/codemap.h>
#include <stackwalk/frame.h>
#include <stackwalk/thread.h>
#include <stackwalk/walk.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_registry sw_registry;

/* sw_registry_create, sw_registry_destroy - a registry with no threads. */
SW_API sw_status sw_registry_create(sw_registry **out);
/* SW_E_STATE (and nothing freed) while threads are registered or the sampler runs. */
SW_API sw_status sw_registry_destroy(sw_registry *reg);

/*
 * sw_registry_add_self - register the calling thread: its sw_thread over
 * `map` and Frame list head `frame_head` (may be NULL), kept by the
 * registry.  *id receives its handle (never 0).  SW_E_EXISTS if the thread
 * is already registered.  Not async-signal-safe.
 */
SW_API sw_status sw_registry_add_self(sw_registry *reg, const sw_codemap *map,
                                      sw_frame **frame_head, uint64_t *id);

/*
 * sw_registry_remove_self - unregister the calling thread; waits for a walk
 * of it in progress.  Call it before the thread exits; a thread that exits
 * still registered is unregistered (with the same wait) by a thread-specific
 * data destructor.  SW_E_NOTFOUND if the thread is not registered.
 */
SW_API sw_status sw_registry_remove_self(sw_registry *reg);

/*
 * sw_registry_unsafe_enter, sw_registry_unsafe_leave - the calling thread
 * holds (releases) a lock the sampler's callback may need: until the
 * matching leave, sampling it gives SW_E_UNSAFE instead of a deadlock.
 * They nest, and count for every registry.  Async-signal-safe once the
 * thread has registered.
 */
SW_API void sw_registry_unsafe_enter(void);
SW_API void sw_registry_unsafe_leave(void);

/* sw_registry_count - how many threads are registered. */
SW_API unsigned sw_registry_count(sw_registry *reg);

typedef struct sw_sampler_options {
	int signo;                  /* the signal to stop threads with; 0: SIGPROF */
	unsigned timeout_ms;        /* how long to wait for a target to stop; 0: 1000 */
	uint64_t cpu_period_ns;     /* nonzero: CPU-time sampling, one tick per period of a
	                               thread's CPU time (see sw_sampler_wait) */
} sw_sampler_options;

/* One stopped thread, as the sampler's callback sees it. */
typedef struct sw_sample {
	uint64_t id;                /* the thread's registry handle */
	int32_t tid;                /* its kernel thread id */
	uint32_t walk_flags;        /* flags a walk of it should add (ALLOW_ASYNC_STACK_WALK, ...) */
	const sw_thread *thread;    /* its stack, memory, code map and Frame list */
	const sw_context *seed;     /* its registers where the signal stopped it */
	uint32_t ticks;             /* CPU periods the sample stands for (timer overruns
	                               add to it); 1 for a requested sample */
} sw_sample;

/*
 * Called on the sampler thread while the target is stopped.  Walk it here
 * (sw_snapshot with the seed, or sw_walk_frames with sample->walk_flags);
 * take no lock the target might hold and do not allocate.  Return
 * SW_CONTINUE; anything else stops sw_sampler_sample_all.
 */
typedef sw_walk_action (*sw_sampler_callback)(const sw_sample *sample, void *data);

/*
 * sw_sampler_start - make the calling thread the registry's sampler and
 * install the signal handler (options may be NULL).  SW_E_STATE if the
 * registry has a sampler; SW_E_EXISTS if another registry uses the signal.
 */
SW_API sw_status sw_sampler_start(sw_registry *reg, const sw_sampler_options *options);

/*
 * sw_sampler_sample - stop thread `id`, call `cb` with its context, resume
 * it.  Only the sampler thread may call it: SW_E_UNSAFE from any other, as
 * for the sampler itself, a thread exiting or inside unsafe_enter, or one
 * that did not stop in time.  SW_E_NOTFOUND for an unknown id, SW_E_STATE
 * without a sampler, SW_E_ABORTED when `cb` returned other than
 * SW_CONTINUE.
 */
SW_API sw_status sw_sampler_sample(sw_registry *reg, uint64_t id, sw_sampler_callback cb,
                                   void *data);

/*
 * sw_sampler_sample_all - sw_sampler_sample every registered thread but the
 * sampler, oldest first, skipping those that give SW_E_UNSAFE or
 * SW_E_NOTFOUND.  *sampled (may be NULL) counts the callbacks made.
 */
SW_API sw_status sw_sampler_sample_all(sw_registry *reg, sw_sampler_callback cb, void *data,
                                       unsigned *sampled);

/*
 * sw_sampler_wait - in CPU-time mode (options->cpu_period_ns), wait up to
 * `timeout_ms` for threads their CPU-time timers stopped, call `cb` for
 * each, and resume them.  Every registered thread has a timer on its own
 * CPU clock, delivered to that thread, from sw_sampler_start or its
 * registration until its unregistration or sw_sampler_stop: threads that
 * do not run are not sampled.  Sampler thread only (SW_E_UNSAFE); SW_E_STATE
 * without a sampler or in the other mode; SW_E_ABORTED as for
 * sw_sampler_sample.  *sampled (may be NULL) counts the callbacks made.
 */
SW_API sw_status sw_sampler_wait(sw_registry *reg, sw_sampler_callback cb, void *data,
                                 unsigned timeout_ms, unsigned *sampled);

/*
 * sw_sampler_stop - end sampling (from the sampler thread): restore the
 * previous handler of the signal.  SW_E_UNSAFE from another thread.
 */
SW_API sw_status sw_sampler_stop(sw_registry *reg);

/*
 * sw_sampler_chain_action - the action for `signo` signals the sampler did
 * not send (the program's own SIGPROF, say): the handler the sampler
 * installed passes them on to it.  It starts as the action installed
 * before the first sw_sampler_start on `signo`; a program, or an agent
 * interposing sigaction(2), sets it here instead of replacing the
 * sampler's handler.  `act` and `old` (either may be NULL) work as in
 * sigaction(2).  SW_E_STATE if no sampler ever installed its handler on
 * `signo`: use sigaction itself.
 */
SW_API sw_status sw_sampler_chain_action(int signo, const struct sigaction *act,
                                         struct sigaction *old);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_SAMPLER_H */
