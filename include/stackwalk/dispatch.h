/*
 * dispatch.h - exception dispatch: the two passes over a thread's managed
 * frames that find the catching clause and run the handlers on the way,
 * and the jump that resumes the thread at the catch's continuation.
 *
 * It follows CoreCLR's managed dispatch (ExceptionHandling.cs: DispatchEx,
 * FindFirstPassHandler, InvokeSecondPass; the ExInfo of exinfo.h):
 *
 * - First pass: walk from the throw, and in each managed frame try the
 *   clauses that cover its offset, innermost first: a typed catch whose
 *   type matches, or a filter whose funclet says so, handles the
 *   exception.  Nothing is unwound; filters run on top of the stack.
 * - Second pass: walk again, and in each frame up to the handling one run
 *   the finally and fault funclets that cover its offset, innermost first
 *   (in the handling frame only those nested inside the catching clause),
 *   popping the Frames passed; then run the catch funclet, which gives
 *   the address to continue at in its method.
 * - Resume: the caller restores the handling frame's registers with that
 *   IP (sw_context_resume).
 *
 * The library walks and decides; the runtime runs code.  Its callbacks
 * match types, and run filter and handler funclets with whatever calling
 * convention its JIT uses (the frame's registers and caller SP are given).
 *
 * While the dispatch runs, an exception tracker (the CLR's ExInfo) in the
 * thread's stack is linked on the thread's exception list (sw_thread's
 * exception_head), so that a walk from inside a filter or a funclet (a
 * GC, a profiler's sample) passes over the frames the second pass has
 * already unwound and finds the funclet's parent where it is.
 *
 * A throw out of a funclet (a finally, fault or catch funclet, or a
 * filter), a rethrow included, is dispatched by another call from inside
 * the funclet while the older one is in progress.  Its walk leaves the
 * funclet for the frame the older dispatch stands at (the older tracker),
 * past the frames that one unwound, and searches that frame's clauses
 * after the funclet's own (CoreCLR's collided unwind: idxStart); one out of
 * a filter ends at the filter's frame (the filter then says no).  A catch
 * found pops every older tracker below the SP it resumes on.
 */
#ifndef STACKWALK_DISPATCH_H
#define STACKWALK_DISPATCH_H

#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/context.h>
#include <stackwalk/codemap.h>
#include <stackwalk/thread.h>
#include <stackwalk/swu_eh.h>
#include <stackwalk/walk.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The tracker's size in the target: next (P bytes, P the pointer size),
 * the record's address with its flags (P), the exception object (8 bytes
 * at offset 16), the pass (4 at 24), the clause whose funclet runs (4 at
 * 28, SW_TRACKER_NO_CLAUSE when none), and at offset 32 a context record
 * (sw_context's layout, frame.h): the frame the dispatch has reached.
 */
#define SW_EXCEPTION_TRACKER_SIZE (32 + 16 + 8 * SW_MAX_REGS)
#define SW_TRACKER_NO_CLAUSE 0xffffffffu

/*
 * The most exception trackers that may already be linked when a dispatch
 * starts (nested exceptions: a throw out of a funclet of a dispatch in
 * progress); one more is SW_E_LIMIT.
 */
#define SW_EXCEPTION_MAX_NESTING 64

/* Storage for a tracker in the calling thread's stack (sw_exception_dispatch's `tracker`). */
typedef struct sw_exception_tracker {
	uint64_t opaque[SW_EXCEPTION_TRACKER_SIZE / 8];
} sw_exception_tracker;

/* Where a clause applies, as the callbacks see it. */
typedef struct sw_eh_site {
	const sw_crawl_frame *frame;    /* the method's frame, valid during the callback */
	const sw_code_info *code;       /* its method */
	const sw_context *regs;         /* its registers where the exception left it */
	uint64_t caller_sp;             /* its caller's SP (CFA): the establisher frame */
	uint32_t offset;                /* the offset its clauses were matched at */
	uint32_t index;                 /* the clause's index in the method's table */
	sw_eh_clause clause;
	uint64_t funclet;               /* the funclet to run: the filter's, else the handler's */
	uint32_t pass;                  /* 1 or 2 */
	uint32_t reserved;
} sw_eh_site;

/*
 * The runtime's part.  Any callback may return a negative SW_E_* to stop
 * the dispatch with that error.
 */
typedef struct sw_exception_ops {
	/* Does the exception match the catch clause's type token?  1 yes, 0 no. */
	int (*type_matches)(void *data, uint64_t exception, const sw_eh_site *site);
	/*
	 * Run the filter funclet (first pass): 1 if it takes the exception,
	 * 0 if not.  A filter that throws does not take it (CoreCLR swallows
	 * the exception around the filter call in FindFirstPassHandler).
	 */
	int (*run_filter)(void *data, uint64_t exception, const sw_eh_site *site);
	/*
	 * Run a finally or fault funclet, or last the catch (or filter's)
	 * handler funclet, which sets *resume_ip to the address in its
	 * method where execution continues (SW_OK, or a negative SW_E_*).
	 */
	sw_status (*run_handler)(void *data, uint64_t exception, const sw_eh_site *site,
	                         uint64_t *resume_ip);
} sw_exception_ops;

/* What a dispatch that found a handler gives back. */
typedef struct sw_exception_result {
	sw_context resume;      /* the handling frame's registers, IP at the continuation */
	void *method;           /* the handling method */
	uint32_t clause;        /* the handling clause's index */
	uint32_t frames;        /* managed frames the second pass unwound, the handling one included */
} sw_exception_result;

/*
 * sw_exception_dispatch - dispatch `exception` thrown where `start` says
 * on the calling thread `t` (its memory the process's own, its
 * exception_head set): first pass, second pass, and the continuation in
 * `out`.  `tracker` is the target address of SW_EXCEPTION_TRACKER_SIZE
 * pointer-aligned bytes on t's stack below `start`'s SP (normally an
 * sw_exception_tracker local of the caller), linked while the dispatch
 * runs.  `flags`: walk flags added to the dispatch's own walks
 * (SW_WALK_NATIVE_FRAMES, SW_WALK_FRAME_POINTER_FALLBACK,
 * SW_WALK_UNWIND_FLOATS).  Returns SW_OK with `out` filled, for the caller
 * to resume with sw_context_resume; SW_E_NOTFOUND when no clause handles
 * the exception (no funclet then ran but filters: an unhandled
 * exception, as CoreCLR's, runs no second pass), or when the exception
 * was thrown out of a filter funclet (then the second pass has run the
 * finally and fault funclets up to the filter's frame, and the runtime
 * counts the filter as false); SW_E_LIMIT when
 * SW_EXCEPTION_MAX_NESTING trackers are already linked, SW_E_FRAMECYCLE
 * or SW_E_BADFRAME when their list does not ascend the stack;
 * SW_E_UNSUPPORTED for
 * a native frame flagged SW_CODE_PERSONALITY in the way (its cleanups
 * only its personality routine can run; found in the first pass, before
 * any funclet but filters ran); a walk's or a blob's error, or a
 * callback's.  Allocates nothing; funclets run
 * inside the code map's read section.
 */
SW_API sw_status sw_exception_dispatch(const sw_thread *t, const sw_context *start,
                                       uint64_t exception, const sw_exception_ops *ops,
                                       void *data, uint64_t tracker, unsigned flags,
                                       sw_exception_result *out);

/*
 * sw_context_resume - load the registers `ctx` marks valid into the
 * calling thread and jump to its IP, on its SP (unw_resume, the CLR's
 * ResumeAtCatch) on x86-64, i686 and aarch64; a few bytes beneath the
 * target SP are overwritten (sw_context_resume(3) says which).  Does not
 * return on success; SW_E_UNSUPPORTED when the context's architecture is
 * not the host's or the thread has an active shadow stack, SW_E_NOREG
 * when its IP or SP is not known.
 */
SW_API sw_status sw_context_resume(const sw_context *ctx);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_DISPATCH_H */
