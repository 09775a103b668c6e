/*
 * fuzz_core.c - the core-file reader over arbitrary bytes, in memory
 * (sw_core_open_memory, no files opened).
 *
 * Whatever opens is used the way swstack would: every thread's registers,
 * its stack bounds, reads of memory at its SP and IP, every mapped file;
 * and a short walk of each thread with an empty code map and the
 * frame-pointer fallback, so that the walker also reads through the core's
 * memory accessor.  Errors are fine; a crash, a hang or a read outside the
 * image is not.
 */
#include <stdlib.h>
#include <stackwalk.h>
#include "fuzz.h"

#define MAX_THREADS 16

static sw_walk_action count_cb(const sw_crawl_frame *cf, void *data)
{
	(void)cf;
	return ++*(unsigned *)data < 64 ? SW_CONTINUE : SW_ABORT;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static sw_codemap *map;
	sw_core *core;
	unsigned char buf[64];

	if (!map && sw_codemap_create(&map) != SW_OK)
		abort();
	if (sw_core_open_memory(data, size, 0, &core) != SW_OK)
		return 0;
	for (unsigned i = 0; i < sw_core_thread_count(core) && i < MAX_THREADS; i++) {
		sw_context ctx;
		sw_thread t;
		uint64_t lo, hi, sp, ip;
		unsigned n = 0;
		int tid;

		if (sw_core_thread(core, i, &ctx, &tid) != SW_OK)
			continue;
		sp = sw_context_sp(&ctx);
		ip = sw_context_ip(&ctx);
		(void)sw_memory_read(sw_core_memory(core), sp, buf, sizeof buf);
		(void)sw_memory_read(sw_core_memory(core), ip, buf, 16);
		if (sw_core_stack_bounds(core, sp, &lo, &hi) != SW_OK ||
		    sw_thread_init(&t, sw_core_arch(core), map, sw_core_memory(core), 0, lo, hi) != SW_OK)
			continue;
		(void)sw_walk_frames(&t, &ctx, 0, count_cb, &n,
		                     SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK, NULL);
	}
	for (unsigned i = 0; i < sw_core_module_count(core); i++) {
		sw_mapped_file f;

		if (sw_core_module(core, i, &f) == SW_OK)
			(void)sw_memory_read(sw_core_memory(core), f.start, buf, 4);
	}
	sw_core_close(core);
	return 0;
}
