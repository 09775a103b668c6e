/*
 * shadow.h - shadow stacks: a runtime's own always-current record of the
 * managed methods a thread is in, pushed on entry and popped on exit.
 *
 * The owner thread enters and leaves; any thread (a sampler, a signal
 * handler on the owner) may take a snapshot at any time and gets a
 * consistent prefix: entries are written before the depth that covers them
 * is published (release), read after the depth (acquire), and a pop bumps a
 * generation that tells a reader an entry it copied may have been reused.
 * Storage is the caller's and of fixed size: entering past it is counted,
 * not stored, so leaves stay balanced and nothing is overwritten.
 */
#ifndef STACKWALK_SHADOW_H
#define STACKWALK_SHADOW_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* One method activation. */
typedef struct sw_shadow_entry {
	void *method;               /* the method's handle */
	uintptr_t sp;               /* its stack pointer (or any caller-chosen tag) */
} sw_shadow_entry;

/* A thread's shadow stack; fields are read and written only through the functions. */
typedef struct sw_shadow_stack {
	sw_shadow_entry *entries;   /* caller storage, `capacity` entries, oldest first */
	uint32_t capacity;
	uint32_t depth;             /* activations entered, stored or not */
	uint32_t generation;        /* leaves so far (wrapping) */
	uint32_t overflows;         /* enters that found the storage full */
} sw_shadow_stack;

/* sw_shadow_init - an empty shadow stack over `storage` (capacity may be 0). */
SW_API sw_status sw_shadow_init(sw_shadow_stack *stack, sw_shadow_entry *storage,
                                uint32_t capacity);

/*
 * sw_shadow_enter, sw_shadow_leave - record entering `method` with stack
 * pointer `sp`, and leaving the newest activation (nothing if empty).
 * Owner thread only; lock-free and async-signal-safe.
 */
SW_API void sw_shadow_enter(sw_shadow_stack *stack, void *method, uintptr_t sp);
SW_API void sw_shadow_leave(sw_shadow_stack *stack);

/*
 * sw_shadow_snapshot - copy the stored activations, newest first (as
 * sw_snapshot reports), into out[0..cap); *count receives how many were
 * copied and *depth (may be NULL) the true depth, which exceeds the copied
 * count when the storage overflowed or `cap` was too small.  Any thread,
 * async-signal-safe.  SW_E_UNSAFE when the owner kept popping while it
 * copied (retry later); SW_E_INVAL for bad arguments.
 */
SW_API sw_status sw_shadow_snapshot(const sw_shadow_stack *stack, sw_shadow_entry *out,
                                    size_t cap, size_t *count, uint32_t *depth);

/* sw_shadow_overflows - how many enters found the storage full. */
SW_API uint32_t sw_shadow_overflows(const sw_shadow_stack *stack);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_SHADOW_H */
