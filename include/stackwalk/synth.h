/*
 * synth.h - synthetic stacks.
 *
 * sw_synth generates, from a seed, random managed methods with their SWU
 * metadata, registers them in a code map, lays out a stack image in a
 * buffer (managed frames, Frames, unmanaged blocks) and records the frames
 * a correct walk must report.  Tests and fuzzers walk it and compare.
 * The expected frames come from simulating the generated instructions, not
 * from the decoder, so a decoder or walker bug shows as a mismatch.
 */
#ifndef STACKWALK_SYNTH_H
#define STACKWALK_SYNTH_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/context.h>
#include <stackwalk/thread.h>
#include <stackwalk/walk.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_synth sw_synth;

enum {
	SW_SYNTH_NATIVE_BLOCKS     = 0x1,   /* unmanaged runs entered through InlinedCallFrames */
	SW_SYNTH_TRANSITION_FRAMES = 0x2,   /* stubs with TransitionFrames */
	SW_SYNTH_INACTIVE_ICFS     = 0x4,   /* inactive InlinedCallFrames (skipped Frames) */
	SW_SYNTH_ANY_OFFSET        = 0x8,   /* the seed may stop in a prolog or an epilog */
	SW_SYNTH_NATIVE_SEED       = 0x10,  /* the seed may be in unmanaged code */
	SW_SYNTH_CONTEXT_FRAMES    = 0x20,  /* managed code interrupted: Frames with a context record */
	SW_SYNTH_HELPER_FRAMES     = 0x40,  /* runtime helpers with HelperMethodFrames */
	SW_SYNTH_ENTRY_FRAMES      = 0x80,  /* an UnmanagedToManagedFrame at each entry from native */
	SW_SYNTH_DEBUGGER_MARKERS  = 0x100, /* marker Frames in unmanaged blocks: the debugger's,
	                                     * ExceptionFilter, ProtectByRefs, ProtectValueClass */
	SW_SYNTH_FUNCLETS          = 0x200, /* funclets above their parents */
	SW_SYNTH_GC_INFO           = 0x400, /* GC tables, references in live slots, protected Frame slots */
	SW_SYNTH_TRACKERS          = 0x800, /* faults without a Frame: exception trackers (the CLR's ExInfo) */
	SW_SYNTH_ALL               = 0xfff,
	/* Not in SW_SYNTH_ALL: walks without DISABLE_MISSING_FRAME_DETECTION fail on them. */
	SW_SYNTH_STALE_FRAMES      = 0x1000 /* Frames left linked below an unmanaged seed's SP */
};

typedef struct sw_synth_params {
	unsigned min_frames;        /* managed frames, at least */
	unsigned max_frames;        /* and at most */
	unsigned features;          /* SW_SYNTH_* */
	uint32_t frame_type;        /* 0, or an SW_FRAME_* type every stack must contain */
} sw_synth_params;

/* One frame a correct walk reports. */
typedef struct sw_synth_frame {
	uint32_t state;             /* an sw_frame_state */
	uint32_t frame_type;        /* the Frame's type, for Frame states */
	void *method;
	uint64_t frame;             /* the Frame's address, for Frame states */
	uint64_t ip, sp;            /* managed frames */
	uint32_t is_first, is_interrupted, has_faulted, reserved;
	uint64_t valid;             /* registers whose value is known */
	uint64_t regs[SW_MAX_REGS];
	uint64_t locs[SW_MAX_REGS]; /* where each was restored from (0: live) */
	uint32_t is_funclet, is_filter_funclet, is_parent_of_funclet;
	uint32_t should_report_gc;  /* what sw_crawl_frame_should_report_gc says */
} sw_synth_frame;

/* sw_synth_params_default - 1 to 24 managed frames, every feature. */
SW_API void sw_synth_params_default(sw_synth_params *p);

/* sw_synth_create - generate the stack for (arch, seed); same inputs, same stack. */
SW_API sw_status sw_synth_create(sw_synth **out, sw_arch arch, uint64_t seed,
                                 const sw_synth_params *p);
SW_API void sw_synth_destroy(sw_synth *s);

/* The thread to walk (code map, buffer memory, Frame list) and its seed context. */
SW_API const sw_thread *sw_synth_thread(const sw_synth *s);
SW_API const sw_context *sw_synth_context(const sw_synth *s);

/*
 * sw_synth_expected - the frames a walk with `flags` must report, in order,
 * into out[0..cap); returns how many there are (which may exceed cap).
 */
SW_API size_t sw_synth_expected(const sw_synth *s, unsigned flags,
                                sw_synth_frame *out, size_t cap);

/*
 * sw_synth_expected_error - how a walk with `flags` must end: SW_OK when
 * it completes, else the error it must stop with (SW_E_BADFRAME at a stale
 * Frame).  *err (may be NULL) gets the status, the number of frames
 * reported before the failure, and the IP, SP and Frame sw_iter_error
 * must give; all 0 but the depth when the walk completes.  SW_E_INVAL for
 * a NULL s.
 */
SW_API sw_status sw_synth_expected_error(const sw_synth *s, unsigned flags, sw_walk_error *err);

/*
 * sw_synth_check - walk with `flags` and compare every frame with the
 * expectation, and how the walk ends with sw_synth_expected_error.  SW_OK
 * (also for a walk that fails exactly as expected), SW_E_MISMATCH (with a
 * description in msg), or the walk's own unexpected error.
 */
SW_API sw_status sw_synth_check(const sw_synth *s, unsigned flags, char *msg, size_t msg_size);

/*
 * sw_synth_expected_roots - the GC roots sw_crawl_frame_enum_gc_roots must
 * report for frame number `frame` of a walk with `flags`, in any order,
 * into out[0..cap); *count gets how many there are (which may exceed
 * cap).  SW_OK; SW_E_NOREG when the enumeration must fail with that error
 * (a live reference in a register the walk lost), *count then 0;
 * SW_E_INVAL for a NULL argument or a frame the walk does not report.
 */
SW_API sw_status sw_synth_expected_roots(const sw_synth *s, unsigned flags, size_t frame,
                                         sw_gc_root *out, size_t cap, size_t *count);

/*
 * sw_synth_check_roots - sw_synth_check, and for every frame also compare
 * its GC roots (as sets: address, value, register, flags) and its
 * should-report-GC mark with the expectation.
 */
SW_API sw_status sw_synth_check_roots(const sw_synth *s, unsigned flags, char *msg,
                                      size_t msg_size);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_SYNTH_H */
