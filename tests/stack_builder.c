/* stack_builder.c - see stack_builder.h. */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include "stack_builder.h"

void sb_init(sb_world *w)
{
	memset(w, 0, sizeof *w);
	w->buf = calloc(1, SB_STACK_SIZE);
	ck_assert_ptr_nonnull(w->buf);
	ck_assert_int_eq(sw_memory_init_buffer(&w->mem, w->buf, SB_STACK_SIZE, SB_STACK_BASE), SW_OK);
	ck_assert_int_eq(sw_codemap_create(&w->map), SW_OK);
	ck_assert_int_eq(sw_thread_init(&w->thread, SW_ARCH_X64, w->map, &w->mem, SB_HEAD_SLOT,
	                                SB_STACK_BASE, SB_STACK_HI - 16), SW_OK);
	sw_context_init(&w->seed, SW_ARCH_X64);
}

void sb_fini(sb_world *w)
{
	sw_codemap_destroy(w->map);
	free(w->buf);
}

/* Plain checks: ck_assert costs a pipe write per call in fork mode. */
void sb_put(sb_world *w, uint64_t addr, uint64_t value)
{
	if (addr < SB_STACK_BASE || addr + 8 > SB_STACK_HI)
		ck_abort_msg("sb_put outside the stack: %#llx", (unsigned long long)addr);
	for (int i = 0; i < 8; i++)
		w->buf[addr - SB_STACK_BASE + i] = (unsigned char)(value >> (8 * i));
}

uint64_t sb_get(sb_world *w, uint64_t addr)
{
	uint64_t v = 0;

	if (addr < SB_STACK_BASE || addr + 8 > SB_STACK_HI)
		ck_abort_msg("sb_get outside the stack: %#llx", (unsigned long long)addr);
	for (int i = 7; i >= 0; i--)
		v = (v << 8) | w->buf[addr - SB_STACK_BASE + i];
	return v;
}

static void sb_register(sb_world *w, sw_swu_builder *b, uint64_t start, uint32_t size, void *handle)
{
	unsigned char blob[1024];
	size_t len = 0;
	sw_code_info ci;

	ck_assert_int_eq(sw_swu_finish(b, size, blob, sizeof blob, &len), SW_OK);
	memset(&ci, 0, sizeof ci);
	ci.method = handle;
	ci.start = start;
	ci.size = size;
	ci.unwind = blob;
	ci.unwind_size = (uint32_t)len;
	ck_assert_int_eq(sw_codemap_add(w->map, &ci), SW_OK);
	sw_swu_builder_destroy(b);
}

sb_method sb_add_method_a(sb_world *w, uint64_t start, void *handle)
{
	return sb_add_method_a_ex(w, start, handle, NULL);
}

sb_method sb_add_method_a_ex(sb_world *w, uint64_t start, void *handle, sb_extra_fn extra)
{
	sw_swu_builder *b;
	sb_method m = { start, 48, 25 };

	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 1, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_set_frame(b, 4, SW_X64_RBP, 0), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 5, SW_X64_RBX), SW_OK);
	ck_assert_int_eq(sw_swu_alloc_stack(b, 9, 72), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 9), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 40), SW_OK);
	ck_assert_int_eq(sw_swu_restore_sp_from_frame(b, 44, -8), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 45, SW_X64_RBX), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 46, SW_X64_RBP), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 47), SW_OK);
	if (extra)
		extra(b);
	sb_register(w, b, start, m.size, handle);
	return m;
}

sb_method sb_add_method_b(sb_world *w, uint64_t start, void *handle)
{
	return sb_add_method_b_ex(w, start, handle, NULL);
}

sb_method sb_add_method_b_ex(sb_world *w, uint64_t start, void *handle, sb_extra_fn extra)
{
	sw_swu_builder *b;
	sb_method m = { start, 40, 20 };

	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 2, SW_X64_R12), SW_OK);
	ck_assert_int_eq(sw_swu_push_reg(b, 3, SW_X64_RBX), SW_OK);
	ck_assert_int_eq(sw_swu_alloc_stack(b, 7, 16), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 7), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_begin(b, 30), SW_OK);
	ck_assert_int_eq(sw_swu_free_stack(b, 34, 16), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 35, SW_X64_RBX), SW_OK);
	ck_assert_int_eq(sw_swu_pop_reg(b, 37, SW_X64_R12), SW_OK);
	ck_assert_int_eq(sw_swu_epilog_end(b, 38), SW_OK);
	if (extra)
		extra(b);
	sb_register(w, b, start, m.size, handle);
	return m;
}

void sb_reregister(sb_world *w, uint64_t start, void *method, uint32_t flags, void *parent)
{
	sw_code_info ci;
	unsigned char blob[256];

	ck_assert_int_eq(sw_codemap_find(w->map, start, &ci), SW_OK);
	ck_assert_uint_le(ci.unwind_size, sizeof blob);
	memcpy(blob, ci.unwind, ci.unwind_size);
	ck_assert_int_eq(sw_codemap_remove(w->map, start), SW_OK);
	ci.unwind = blob;
	ci.method = method;
	ci.flags = flags;
	ci.parent = parent;
	ck_assert_int_eq(sw_codemap_add(w->map, &ci), SW_OK);
}

void sb_reflag(sb_world *w, uint64_t start, uint32_t flags)
{
	sw_code_info ci;

	ck_assert_int_eq(sw_codemap_find(w->map, start, &ci), SW_OK);
	sb_reregister(w, start, ci.method, flags, ci.parent);
}

void sb_frame(sb_world *w, uint64_t addr, uint64_t next, uint32_t type, uint32_t attrs,
              const uint64_t *fields, unsigned nfields)
{
	sb_put(w, addr, next);
	sb_put(w, addr + 8, (uint64_t)type | ((uint64_t)attrs << 32));
	for (unsigned i = 0; i < nfields; i++)
		sb_put(w, addr + 16 + 8 * i, fields[i]);
}
