/*
 * damaged_stack.h - the stack damaged to keep a walk going as long as
 * possible, for check_hostile's step-bound test and bench-damaged: every
 * byte is DAMAGE_BYTE, and the one method at DAMAGE_METHOD says its CFA
 * is SP + 1 with the return address at CFA - 8.  Each frame then returns
 * into the same method one byte higher, a frame no compiler makes.
 * x86-64, public API only.
 */
#ifndef SW_TESTS_DAMAGED_STACK_H
#define SW_TESTS_DAMAGED_STACK_H

#include <string.h>
#include <stackwalk.h>

#define DAMAGE_BYTE 0x42
#define DAMAGE_METHOD 0x4242424242424200ull     /* the stack's bytes, read as an address, fall in it */
#define DAMAGE_METHOD_SIZE 0x100

/* Register the one-byte-frame method in `map`: SW_OK or why not. */
static inline sw_status damaged_stack_method(sw_codemap *map)
{
	unsigned char blob[64];
	size_t len = 0;
	sw_swu_builder *b;
	sw_code_info ci;
	sw_status st;

	if ((st = sw_swu_builder_create(&b, SW_ARCH_X64)) != SW_OK)
		return st;
	if ((st = sw_swu_def_cfa_offset(b, 1, 1)) == SW_OK &&
	    (st = sw_swu_saved_at(b, 1, SW_X64_RIP, -8)) == SW_OK)
		st = sw_swu_finish(b, DAMAGE_METHOD_SIZE, blob, sizeof blob, &len);
	sw_swu_builder_destroy(b);
	if (st != SW_OK)
		return st;
	memset(&ci, 0, sizeof ci);
	ci.method = (void *)1;
	ci.start = DAMAGE_METHOD;
	ci.size = DAMAGE_METHOD_SIZE;
	ci.unwind = blob;
	ci.unwind_size = (uint32_t)len;
	return sw_codemap_add(map, &ci);
}

/* Damage `size` bytes of stack at `buf`, and seed a walk at its bottom (`lo`). */
static inline void damaged_stack_fill(unsigned char *buf, size_t size, uint64_t lo, sw_context *seed)
{
	memset(buf, DAMAGE_BYTE, size);
	sw_context_init(seed, SW_ARCH_X64);
	sw_context_set(seed, SW_X64_RIP, DAMAGE_METHOD + DAMAGE_BYTE);
	sw_context_set(seed, SW_X64_RSP, lo + 8);
	sw_context_set(seed, SW_X64_RBP, 0);
}

#endif /* SW_TESTS_DAMAGED_STACK_H */
