/*
 * snapshot.h - sw_snapshot: a profiler's stack snapshot, with the meaning
 * of the CLR's ICorProfilerInfo2::DoStackSnapshot.
 */
#ifndef STACKWALK_SNAPSHOT_H
#define STACKWALK_SNAPSHOT_H

#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/context.h>
#include <stackwalk/thread.h>
#include <stackwalk/walk.h>

#ifdef __cplusplus
extern "C" {
#endif

/* What a snapshot reports for one frame, leaf first. */
typedef struct sw_snapshot_frame {
	void *method;               /* the managed method, or NULL for unmanaged code */
	uint64_t ip;                /* where it is (a return address but for the leaf) */
	const sw_context *context;  /* its registers, with SW_SNAPSHOT_REGISTER_CONTEXT; else NULL */
	const sw_code_info *code;   /* managed or native code info, or NULL */
	uint32_t state;             /* the walk's sw_frame_state for it */
	uint32_t depth;             /* reports before this one */
} sw_snapshot_frame;

/* Return SW_CONTINUE to go on; anything else ends the snapshot with SW_E_ABORTED. */
typedef sw_walk_action (*sw_snapshot_callback)(const sw_snapshot_frame *frame, void *data);

enum {
	SW_SNAPSHOT_REGISTER_CONTEXT = 1,   /* give each frame's registers */
	SW_SNAPSHOT_NATIVE_FRAMES = 2,      /* report native frames one by one (mixed mode) */
	SW_SNAPSHOT_ASYNC = 4               /* another thread, stopped (a sampler's callback): implied by a seed */
};

/*
 * sw_snapshot - walk `t` and report one frame per managed method and one
 * per contiguous block of unmanaged code (method NULL), leaf to root.
 * Without a seed it starts at the thread's newest Frame: the synchronous
 * use on the current thread, from inside the runtime, or with
 * SW_SNAPSHOT_ASYNC another thread that is stopped in native code below a
 * transition Frame (the CLR's preemptive mode).  With a seed, `t` may be
 * another, stopped thread, and the seed must be in managed code.  Returns SW_OK, SW_E_ABORTED when the callback
 * stopped it, SW_E_UNMANAGED_CTX for an unmanaged seed, or the walk's error.
 */
SW_API sw_status sw_snapshot(const sw_thread *t, const sw_context *seed, unsigned flags,
                             sw_snapshot_callback cb, void *data);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_SNAPSHOT_H */
