/*
 * shadow.c - shadow stacks, a seqlock in miniature: the owner publishes the
 * depth after writing an entry and counts every pop in a generation; a
 * reader copies between two reads of the generation and trusts the copy
 * only if no pop came in between (without a pop no slot below the depth
 * it read can be rewritten).  Only atomics: lock-free, signal-safe.
 */
#include "config.h"
#include "util.h"
#include <stackwalk/shadow.h>

/* A reader retries this often before telling the caller to come back later. */
#define SHADOW_READ_TRIES 8

SW_API sw_status sw_shadow_init(sw_shadow_stack *stack, sw_shadow_entry *storage,
                                uint32_t capacity)
{
	if (!stack || (!storage && capacity))
		return SW_E_INVAL;
	stack->entries = storage;
	stack->capacity = capacity;
	stack->generation = 0;
	stack->overflows = 0;
	__atomic_store_n(&stack->depth, 0, __ATOMIC_RELEASE);
	return SW_OK;
}

SW_API void sw_shadow_enter(sw_shadow_stack *stack, void *method, uintptr_t sp)
{
	uint32_t d = __atomic_load_n(&stack->depth, __ATOMIC_RELAXED);

	if (d < stack->capacity) {
		__atomic_store_n(&stack->entries[d].method, method, __ATOMIC_RELAXED);
		__atomic_store_n(&stack->entries[d].sp, sp, __ATOMIC_RELAXED);
	} else {
		__atomic_store_n(&stack->overflows, stack->overflows + 1, __ATOMIC_RELAXED);
	}
	/* The entry is visible before the depth that covers it. */
	__atomic_store_n(&stack->depth, d + 1, __ATOMIC_RELEASE);
}

SW_API void sw_shadow_leave(sw_shadow_stack *stack)
{
	uint32_t d = __atomic_load_n(&stack->depth, __ATOMIC_RELAXED);

	if (d == 0)
		return;
	__atomic_store_n(&stack->depth, d - 1, __ATOMIC_RELEASE);
	__atomic_store_n(&stack->generation, stack->generation + 1, __ATOMIC_RELAXED);
	/* The generation changes before the freed slot is written again. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
}

SW_API sw_status sw_shadow_snapshot(const sw_shadow_stack *stack, sw_shadow_entry *out,
                                    size_t cap, size_t *count, uint32_t *depth)
{
	if (!stack || !count || (!out && cap))
		return SW_E_INVAL;
	for (int tries = 0; tries < SHADOW_READ_TRIES; tries++) {
		uint32_t gen = __atomic_load_n(&stack->generation, __ATOMIC_ACQUIRE);
		uint32_t d = __atomic_load_n(&stack->depth, __ATOMIC_ACQUIRE);
		size_t top = d < stack->capacity ? d : stack->capacity;
		size_t n = top < cap ? top : cap;

		/* Newest first: down from the top of what is stored. */
		for (size_t i = 0; i < n; i++) {
			const sw_shadow_entry *e = &stack->entries[top - 1 - i];

			out[i].method = __atomic_load_n(&e->method, __ATOMIC_RELAXED);
			out[i].sp = __atomic_load_n(&e->sp, __ATOMIC_RELAXED);
		}
		__atomic_thread_fence(__ATOMIC_ACQUIRE);
		if (__atomic_load_n(&stack->generation, __ATOMIC_RELAXED) == gen) {
			*count = n;
			if (depth)
				*depth = d;
			return SW_OK;
		}
	}
	*count = 0;
	return SW_E_UNSAFE;
}

SW_API uint32_t sw_shadow_overflows(const sw_shadow_stack *stack)
{
	return stack ? __atomic_load_n(&stack->overflows, __ATOMIC_RELAXED) : 0;
}
