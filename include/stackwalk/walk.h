/*
 * walk.h - the stack walk: sw_iter, sw_walk_frames and the crawl frame.
 *
 * A walk starts from a register context (or from a Frame), finds each IP in
 * the code map, virtually unwinds managed frames with their SWU metadata,
 * crosses unmanaged code through the thread's Frames, and reports each frame
 * as the flags allow.  It takes no lock, allocates nothing and makes no
 * system call (with the built-in memory accessors, SW_MEMORY_PROBE unset),
 * so it may run in a signal handler.
 */
#ifndef STACKWALK_WALK_H
#define STACKWALK_WALK_H

#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/context.h>
#include <stackwalk/codemap.h>
#include <stackwalk/thread.h>
#include <stackwalk/swu.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Walk flags: the CLR's StackWalkFramesEx flags, same values and meanings. */
enum {
	SW_WALK_FUNCTIONSONLY        = 0x1,    /* report only frames with a method; no funclets */
	SW_WALK_SKIPFUNCLETS         = 0x2,    /* skip funclets and the frames up to their parent */
	SW_WALK_POPFRAMES            = 0x4,    /* unlink Frames from the thread's list as they are passed */
	SW_WALK_QUICKUNWIND          = 0x8,    /* x86: restore only IP, SP and the frame pointer;
	                                        * 64-bit targets: a full unwind, as CoreCLR's */
	SW_WALK_HANDLESKIPPEDFRAMES  = 0x10,   /* pass over skipped Frames silently */
	SW_WALK_LIGHTUNWIND          = 0x20,   /* ADDRESSES_ONLY, and assume every IP lies in a method body */
	SW_WALK_NOTIFY_ON_U2M_TRANSITIONS = 0x40,      /* report native markers */
	SW_WALK_DISABLE_MISSING_FRAME_DETECTION = 0x80, /* pass stale Frames instead of failing */
	SW_WALK_ALLOW_ASYNC_STACK_WALK = 0x100,        /* the walked thread is not the caller's */
	SW_WALK_THREAD_IS_SUSPENDED  = 0x200,  /* stopped anywhere: a RESUMABLE Frame into managed code fails (SW_E_UNSAFE) */
	SW_WALK_ALLOW_INVALID_OBJECTS = 0x400, /* accepted; objects are never examined */
	SW_WALK_THREAD_EXECUTING_MANAGED_CODE = 0x800, /* the caller says the seed is managed: check it */
	SW_WALK_PROFILER_DO_STACK_SNAPSHOT = 0x1000,   /* accepted; the walk serves a snapshot */
	SW_WALK_NOTIFY_ON_NO_FRAME_TRANSITIONS = 0x2000, /* report exception trackers */
	SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT = 0x4000, /* report a native seed context */
	SW_WALK_GC_FUNCLET_REFERENCE_REPORTING = 0x8000, /* GC rules for funclets and their parents */
	SW_WALK_SKIP_GSCOOKIE_CHECK  = 0x10000, /* accepted; there are no GS cookies to check */
	SW_WALK_UNWIND_FLOATS        = 0x20000, /* accepted; d8-d15 are restored anyway (sw_walk_frames(3)) */
	/* libstackwalk's own, above the CLR's: */
	SW_WALK_NATIVE_FRAMES        = 0x100000, /* unwind native code (SW_CODE_NATIVE) instead of only marking it */
	SW_WALK_FRAME_POINTER_FALLBACK = 0x200000, /* with NATIVE_FRAMES: step unknown code by its frame pointer */
	SW_WALK_ADDRESSES_ONLY       = 0x400000  /* restore only IP, SP and the frame pointer, on every target */
};
#define SW_WALK_KNOWN_FLAGS 0x73ffffU

/* Callback and walk results (the CLR's SWA_*). */
typedef enum sw_walk_action {
	SW_CONTINUE = 0,    /* go on; as a walk result: the walk reached the end */
	SW_ABORT    = 1,    /* the callback stopped the walk */
	SW_FAILED   = 2     /* the walk could not go on (see sw_walk_error) */
} sw_walk_action;

/* What kind of frame is being reported (the CLR's iterator states). */
typedef enum sw_frame_state {
	SW_STATE_FRAMELESS      = 1,    /* a managed method, unwound with its SWU */
	SW_STATE_FRAME          = 2,    /* an explicit Frame */
	SW_STATE_SKIPPED_FRAME  = 3,    /* a Frame inside the managed frame reported next */
	SW_STATE_NATIVE_MARKER  = 4,    /* managed code was called from unmanaged code here */
	SW_STATE_INITIAL_NATIVE = 5,    /* the seed context is in unmanaged code */
	SW_STATE_NO_FRAME_TRANSITION = 6, /* an exception tracker resumes a faulted frame, no Frame */
	SW_STATE_NATIVE_FRAME   = 7     /* a native function, unwound with SW_WALK_NATIVE_FRAMES */
} sw_frame_state;

/* How the walk found a frame's registers (as Breakpad's trust levels). */
typedef enum sw_frame_trust {
	SW_TRUST_NONE       = 0,    /* not a frame with registers (a Frame, a marker) */
	SW_TRUST_CONTEXT    = 1,    /* the seed context, or a context record */
	SW_TRUST_FRAME      = 2,    /* an explicit Frame's saved state */
	SW_TRUST_JIT        = 3,    /* unwinding its callee with JIT-emitted SWU */
	SW_TRUST_CFI        = 4,    /* unwinding its callee with SWU imported from CFI */
	SW_TRUST_ANALYSIS   = 5,    /* unwinding its callee with SWU from instruction analysis */
	SW_TRUST_SIGNAL     = 6,    /* the kernel's signal frame */
	SW_TRUST_FRAME_POINTER = 7  /* following its callee's frame pointer (a last resort) */
} sw_frame_trust;

/* sw_frame_state_name - "FRAMELESS", "FRAME", ...; "?" for an unknown value. */
SW_API const char *sw_frame_state_name(sw_frame_state state);

/* Where and why a walk failed. */
typedef struct sw_walk_error {
	sw_status status;   /* the SW_E_* code; SW_OK if the walk did not fail */
	uint32_t depth;     /* frames reported before the failure */
	uint64_t ip;        /* IP and SP of the frame being unwound (0 if unknown) */
	uint64_t sp;
	uint64_t frame;     /* the Frame being processed, or 0 */
} sw_walk_error;

/* The crawl frame: what the callback sees for one frame (opaque). */
typedef struct sw_crawl_frame sw_crawl_frame;

SW_API sw_frame_state sw_crawl_frame_state(const sw_crawl_frame *cf);
/* The method handle, or NULL (native marker, Frame without a method). */
SW_API void *sw_crawl_frame_method(const sw_crawl_frame *cf);
/* The Frame's target address, or 0 for a managed frame or a marker. */
SW_API uint64_t sw_crawl_frame_frame(const sw_crawl_frame *cf);
/* The Frame's type, or SW_FRAME_TYPE_NONE. */
SW_API uint32_t sw_crawl_frame_frame_type(const sw_crawl_frame *cf);
SW_API const sw_regdisplay *sw_crawl_frame_regdisplay(const sw_crawl_frame *cf);
/* The IP and SP of the regdisplay's current context (0 if unknown): sw_context_ip and sp of it, cheaper. */
SW_API uint64_t sw_crawl_frame_ip(const sw_crawl_frame *cf);
SW_API uint64_t sw_crawl_frame_sp(const sw_crawl_frame *cf);
SW_API int sw_crawl_frame_is_frameless(const sw_crawl_frame *cf);
/*
 * The active frame: the seed frame, or one resumed after a RESUMABLE
 * Frame; and, as CoreCLR's IsActiveFrame, whatever a walk reports before
 * it moves past anything (the initial native context, the first Frame of
 * a walk from the Frames).
 */
SW_API int sw_crawl_frame_is_first(const sw_crawl_frame *cf);
SW_API int sw_crawl_frame_is_interrupted(const sw_crawl_frame *cf);
SW_API int sw_crawl_frame_has_faulted(const sw_crawl_frame *cf);
SW_API int sw_crawl_frame_is_native_marker(const sw_crawl_frame *cf);
/* An exception tracker's transition to the faulted frame (NO_FRAME_TRANSITION). */
SW_API int sw_crawl_frame_is_no_frame_transition(const sw_crawl_frame *cf);
/* IP's offset from its method's start (managed frames), else 0. */
SW_API uint32_t sw_crawl_frame_relative_offset(const sw_crawl_frame *cf);
/*
 * The ambient SP (CoreCLR's GetAmbientSPFromCrawlFrame): on x86, a managed
 * frame's SP in its body with no call arguments pushed; 0 in a prolog or
 * an epilog, for other frames and on other architectures.
 */
SW_API uint64_t sw_crawl_frame_ambient_sp(const sw_crawl_frame *cf);
/*
 * A managed frame where a GC may stop its thread (CoreCLR's IsGcSafe): at
 * a call, or, for the active or a faulted frame, in its method's body,
 * past the prolog and outside the epilogs.  0 for any other frame.
 */
SW_API int sw_crawl_frame_is_gc_safe(const sw_crawl_frame *cf);
/* The code info of a managed frame, or NULL. */
SW_API const sw_code_info *sw_crawl_frame_code_info(const sw_crawl_frame *cf);
/* A funclet's frame; a filter funclet's. */
SW_API int sw_crawl_frame_is_funclet(const sw_crawl_frame *cf);
SW_API int sw_crawl_frame_is_filter_funclet(const sw_crawl_frame *cf);
/*
 * A method whose funclet was walked below it (it is suspended in that
 * funclet's call): the frame whose CFA the funclet's PSP slot holds, else
 * the nearest frame of the funclet's parent method.
 */
SW_API int sw_crawl_frame_is_parent_of_funclet(const sw_crawl_frame *cf);
/*
 * GC roots.  A root is a location holding an object reference: a stack slot
 * or a Frame's slot (addr = its target address, so a moving collector can
 * update it), or a register of the walk's seed context that still holds
 * the reference itself (addr = 0, reg = the register: update the thread's
 * context).  A reference in a register a callee saved is reported at the
 * slot the callee saved it to.
 */
typedef struct sw_gc_root {
	uint64_t addr;          /* where the reference is, or 0: in register `reg` of the seed */
	uint64_t value;         /* the reference, as read */
	uint32_t reg;           /* the register it was found in, if any (else ~0u) */
	uint32_t flags;         /* SW_GC_INTERIOR, SW_GC_PINNED, SW_GC_PARENT_FRAME */
} sw_gc_root;

typedef sw_walk_action (*sw_gc_root_callback)(const sw_crawl_frame *cf, const sw_gc_root *root,
                                              void *data);

/*
 * sw_crawl_frame_enum_gc_roots - report the frame's live references: a
 * managed frame's from its SWU GC information at its IP, a Frame's from its
 * ops.  Returns SW_OK, a walk error, or SW_E_STATE when the callback
 * stopped it.  Nothing is reported for a frame that should not report
 * (see sw_crawl_frame_should_report_gc).
 */
SW_API sw_status sw_crawl_frame_enum_gc_roots(const sw_crawl_frame *cf, sw_gc_root_callback cb,
                                              void *data);

/*
 * With GC_FUNCLET_REFERENCE_REPORTING, the parent of a (non-filter)
 * funclet does not report its references: the funclet, which shares its
 * frame, does (its SW_GC_PARENT_FRAME slots lie in the parent's frame).
 * 0 then, 1 otherwise.
 */
SW_API int sw_crawl_frame_should_report_gc(const sw_crawl_frame *cf);

/* How the frame's registers were found. */
SW_API sw_frame_trust sw_crawl_frame_trust(const sw_crawl_frame *cf);
/* sw_frame_trust_name - "context", "frame", "jit", "cfi", "analysis", "signal", "fp", "none". */
SW_API const char *sw_frame_trust_name(sw_frame_trust trust);
/* How many frames were reported before this one. */
SW_API uint32_t sw_crawl_frame_depth(const sw_crawl_frame *cf);

/* The iterator (the CLR's StackFrameIterator), in the caller's storage. */
#define SW_ITER_WORDS 704
typedef struct sw_iter {
	uint64_t opaque[SW_ITER_WORDS];
} sw_iter;

/*
 * sw_iter_init - prepare a walk of `t`.  With `start` it begins at that
 * context; without, at the Frame `start_frame` (0: the thread's newest
 * Frame).  It enters the code map's read section; sw_iter_end leaves it.
 */
SW_API sw_status sw_iter_init(sw_iter *it, const sw_thread *t, const sw_context *start,
                              uint64_t start_frame, unsigned flags);

/*
 * sw_iter_next - move to the next frame to report.  Returns 1 when
 * positioned on a frame, 0 when the walk is complete, or a negative SW_E_*
 * when it cannot go on.
 */
SW_API int sw_iter_next(sw_iter *it);

/* sw_iter_frame - the frame the iterator is positioned on. */
SW_API const sw_crawl_frame *sw_iter_frame(const sw_iter *it);

/* sw_iter_error - where and why the walk failed. */
SW_API void sw_iter_error(const sw_iter *it, sw_walk_error *err);

/* sw_iter_end - finish the walk (idempotent). */
SW_API void sw_iter_end(sw_iter *it);

typedef sw_walk_action (*sw_walk_callback)(const sw_crawl_frame *cf, void *data);

/*
 * sw_walk_frames - the CLR's StackWalkFramesEx.  Walks `t` from `start`
 * (or from `start_frame`, as sw_iter_init) and calls `cb` for each frame.
 * Returns SW_CONTINUE when the walk completed, SW_ABORT when the callback
 * asked to stop, SW_FAILED when it could not go on; `err` (may be NULL)
 * says where and why.
 */
SW_API sw_walk_action sw_walk_frames(const sw_thread *t, const sw_context *start,
                                     uint64_t start_frame, sw_walk_callback cb,
                                     void *data, unsigned flags, sw_walk_error *err);

/*
 * A table of unwind rules by return address, kept from one walk to the
 * next by sw_walk_frames_cached and sw_backtrace (like libunwind's
 * per-thread cache): a runtime walks the same threads at every GC, a
 * profiler the same code at every sample.  Any threads of one code map
 * may share it, but not at the same time; one per walking thread suits.
 * It empties itself when methods are removed from the map, or when a walk
 * differs from the last in map, architecture, or the flags and registers
 * its rules depend on (a QUICKUNWIND walk keeps fewer registers than a
 * full one: alternating them empties it each time).
 */
#define SW_WALK_CACHE_WORDS 640
typedef struct sw_walk_cache {
	uint64_t opaque[SW_WALK_CACHE_WORDS];
} sw_walk_cache;

/* sw_walk_cache_init - make `c` an empty table. */
SW_API void sw_walk_cache_init(sw_walk_cache *c);

/*
 * sw_walk_frames_cached - sw_walk_frames, with `cache` (may be NULL)
 * keeping the rules it resolved for the next walk.  The frames reported
 * are the same.  A `cache` sw_walk_cache_init never made fails the walk
 * with SW_E_INVAL.
 */
SW_API sw_walk_action sw_walk_frames_cached(const sw_thread *t, const sw_context *start,
                                            uint64_t start_frame, sw_walk_callback cb, void *data,
                                            unsigned flags, sw_walk_cache *cache, sw_walk_error *err);

/*
 * sw_backtrace - the IP (and, when `sps` is not NULL, the SP) of each frame
 * with code that a QUICKUNWIND walk of `t` from `start` (or `start_frame`,
 * as sw_iter_init) reports: methods, and native frames under
 * SW_WALK_NATIVE_FRAMES; leaf first, at most `max`.  The profiler's walk:
 * no callback, no crawl frame, on the same step as sw_walk_frames.
 * `cache` (may be NULL) keeps rules between calls, as sw_walk_frames_cached's
 * does; a `cache` sw_walk_cache_init never made gives SW_E_INVAL.  Returns how many were stored, or a negative SW_E_* when the walk
 * could not start.  A walk that fails later keeps what it stored; `err`
 * (may be NULL) then says why (status SW_OK: it reached the end of the
 * stack, or `max`).
 */
SW_API int sw_backtrace(const sw_thread *t, const sw_context *start, uint64_t start_frame,
                        unsigned flags, uint64_t *ips, uint64_t *sps, size_t max,
                        sw_walk_cache *cache, sw_walk_error *err);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_WALK_H */
