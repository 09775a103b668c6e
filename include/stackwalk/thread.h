/*
 * thread.h - sw_thread: what a walk needs to know about the walked thread.
 */
#ifndef STACKWALK_THREAD_H
#define STACKWALK_THREAD_H

#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>
#include <stackwalk/memory.h>
#include <stackwalk/codemap.h>
#include <stackwalk/frame.h>

#ifdef __cplusplus
extern "C" {
#endif

/*
 * The bounds [*lo, *hi) of the stack that holds address `sp` in the
 * target, SW_OK; or an error where no stack holds it.
 */
typedef sw_status (*sw_stack_bounds_fn)(const void *ctx, uint64_t sp, uint64_t *lo, uint64_t *hi);

typedef struct sw_thread {
	uint32_t arch;              /* an sw_arch */
	uint32_t reserved;
	const sw_codemap *codemap;  /* managed code */
	const sw_memory *memory;    /* the target's memory */
	/*
	 * Target address of the slot holding the newest Frame's address (the
	 * runtime's per-thread list head); 0 if the thread has no Frame list.
	 */
	uint64_t frame_head;
	/*
	 * The stack the walk starts on: the thread's own, or, when the walk
	 * starts in a signal handler running on an alternate signal stack
	 * (sigaltstack(2)), that stack or the memory segment that holds it.
	 */
	uint64_t stack_lo;          /* lowest address of the stack */
	uint64_t stack_hi;          /* one past its highest address (its base) */
	/*
	 * arm64 pointer authentication: bits cleared from a return address
	 * the metadata says was signed (paciasp).  sw_thread_init sets the
	 * user-space default, SW_ARM64_PTRAUTH_MASK; set it for other layouts.
	 */
	uint64_t ptrauth_mask;
	/*
	 * Target address of the slot holding the newest exception tracker
	 * (the CLR's ExInfo), 0 if none: set it after sw_thread_init.  A
	 * tracker, on the stack of the code handling an exception, holds the
	 * faulted managed frame's context where no Frame was pushed for it:
	 * next (P bytes), then the address of a context record (P bytes).
	 * The record's address is 8-aligned; its low bits are flags: with
	 * SW_TRACKER_AT_CALL the record's frame is stopped at a call (its IP
	 * a return address), not faulted: the frame an exception dispatch
	 * has unwound to (sw_exception_dispatch(3)), whose frames below it
	 * a walk does not report again.
	 */
	uint64_t exception_head;
	/*
	 * Where a walk goes on after a handler that ran on an alternate
	 * signal stack: the signal frame holds the interrupted SP, on
	 * another stack, and stack_bounds(stack_bounds_ctx, sp, ...) gives
	 * that stack's bounds.  NULL (sw_thread_init's default): the walk
	 * follows such a handler only back onto [stack_lo, stack_hi), where
	 * the alternate stack lies inside the thread's own.  It is called
	 * during the walk: where the walk must be async-signal-safe, so
	 * must it.
	 */
	sw_stack_bounds_fn stack_bounds;
	const void *stack_bounds_ctx;
} sw_thread;

/*
 * Flags in the low bits of an exception tracker's record address (see
 * exception_head).  SW_TRACKER_DISPATCH, with the record itself
 * SW_TRACKER_DISPATCH_RECORD bytes into the tracker: the tracker of a
 * dispatch in progress (sw_exception_dispatch(3)); a walk that unwinds
 * native frames (SW_WALK_NATIVE_FRAMES) up to the frame that holds it goes
 * on at its record, not through the frames in between, which are the
 * dispatch's own and those it has unwound.
 */
#define SW_TRACKER_AT_CALL    1u
#define SW_TRACKER_DISPATCH   2u
#define SW_TRACKER_FLAG_MASK  7u
#define SW_TRACKER_DISPATCH_RECORD 32

/* Bits 48-63 hold the authentication code of a 48-bit user-space address. */
#define SW_ARM64_PTRAUTH_MASK 0xffff000000000000ull

/* sw_thread_init - describe a thread of any target. */
SW_API sw_status sw_thread_init(sw_thread *t, sw_arch arch, const sw_codemap *map,
                                const sw_memory *mem, uint64_t frame_head,
                                uint64_t stack_lo, uint64_t stack_hi);

/*
 * sw_thread_init_self - describe the calling thread: its stack bounds, and
 * `mem` set up as local memory over that stack.  `head` is the runtime's
 * per-thread Frame list head.  Not async-signal-safe (it asks the C
 * library for the stack bounds): call it once per thread, ahead of time.
 */
SW_API sw_status sw_thread_init_self(sw_thread *t, const sw_codemap *map,
                                     sw_memory *mem, sw_frame **head);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_THREAD_H */
