/*
 * jitwalk.c - a JIT describes its methods' prolog with the SWU builder,
 * registers them in a code map, and walks a stack through them.
 */
#include <stdio.h>
#include <stackwalk.h>

static sw_walk_action show(const sw_crawl_frame *cf, void *data)
{
	const sw_code_info *ci = sw_crawl_frame_code_info(cf);

	(void)data;
	printf("#%u %s+%u\n", sw_crawl_frame_depth(cf), ci ? (const char *)ci->method : "?",
	       sw_crawl_frame_relative_offset(cf));
	return SW_CONTINUE;
}

int main(void)
{
	/* Compute's locals, saved rbp and return address into Main; Main's; no caller. */
	uint64_t stack[8] = { 0, 0, 0x7fd0, 0x10000 + 30, 0, 0, 0, 0 };
	uint8_t blob[64];
	size_t len;
	sw_swu_builder *b;
	sw_codemap *map;
	sw_memory mem;
	sw_thread t;
	sw_context ctx;
	sw_walk_error err;

	/* Both methods begin "push rbp; mov rbp, rsp; sub rsp, 16", described as emitted. */
	sw_swu_builder_create(&b, SW_ARCH_X64);
	sw_swu_push_reg(b, 1, SW_X64_RBP);
	sw_swu_set_frame(b, 4, SW_X64_RBP, 0);
	sw_swu_alloc_stack(b, 8, 16);
	sw_swu_end_prolog(b, 8);
	if (sw_swu_finish(b, 64, blob, sizeof blob, &len) != SW_OK)
		return 1;
	sw_swu_builder_destroy(b);
	sw_codemap_create(&map);
	sw_codemap_add(map, &(sw_code_info){ "Main", 0x10000, 64, blob, (uint32_t)len, 0, NULL });
	sw_codemap_add(map, &(sw_code_info){ "Compute", 0x20000, 64, blob, (uint32_t)len, 0, NULL });

	/* The stack of a thread stopped at Compute+20 (a buffer here; a process or core alike). */
	sw_memory_init_buffer(&mem, stack, sizeof stack, 0x7fa0);
	sw_thread_init(&t, SW_ARCH_X64, map, &mem, 0, 0x7fa0, 0x7fe0);
	sw_context_init(&ctx, SW_ARCH_X64);
	sw_context_set(&ctx, SW_X64_RIP, 0x20000 + 20);
	sw_context_set(&ctx, SW_X64_RSP, 0x7fa0);
	sw_context_set(&ctx, SW_X64_RBP, 0x7fb0);
	sw_walk_frames(&t, &ctx, 0, show, NULL, 0, &err);
	printf("walk: %s\n", sw_strerror(err.status));
	sw_codemap_destroy(map);
	return err.status == SW_OK ? 0 : 1;
}
