/*
 * fuzz_core.c - the core-file reader over arbitrary bytes, in memory
 * (sw_core_open_memory, no files opened).
 *
 * Whatever opens is used the way swstack would: every thread's registers,
 * its stack bounds, reads of memory at its SP and IP, every mapped file;
 * and a short walk of each thread with an empty code map and the
 * frame-pointer fallback, so that the walker also reads through the core's
 * memory accessor.  Then the hang analysis of the core (sw_hang_analyze_core:
 * every thread's stack with its modules, the locks the threads wait on,
 * the wait-for cycles), and every part of its report.  Errors are fine; a
 * crash, a hang or a read outside the image is not.
 */
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "fuzz.h"

#define MAX_THREADS 16

static sw_walk_action count_cb(const sw_crawl_frame *cf, void *data)
{
	(void)cf;
	return ++*(unsigned *)data < 64 ? SW_CONTINUE : SW_ABORT;
}

static volatile size_t string_bytes;

/* Read back all of a hang report, as swdeadlock prints it. */
static void read_report(const sw_hang_report *r)
{
	size_t threads = sw_hang_report_thread_count(r), cycles = sw_hang_report_cycle_count(r);

	(void)sw_hang_report_arch(r);
	for (size_t i = 0; i < threads; i++) {
		sw_hang_thread th;

		if (sw_hang_report_thread(r, i, &th) != SW_OK)
			abort();
		if (th.wchan)
			string_bytes += strlen(th.wchan);
		(void)sw_hang_class_name(th.cls);
		(void)sw_lock_kind_name(th.lock_kind);
		for (size_t k = 0; k < th.frames; k++) {
			sw_hang_frame f;

			if (sw_hang_report_frame(r, i, k, &f) != SW_OK)
				abort();
			/* The strings belong to the report: read them (ASan sees a bad one). */
			string_bytes += (f.function ? strlen(f.function) : 0) + (f.module ? strlen(f.module) : 0);
		}
	}
	for (size_t c = 0; c < cycles; c++) {
		size_t members[8], length;
		uint64_t locks[8];

		if (sw_hang_report_cycle(r, c, members, locks, 8, &length) != SW_OK || length < 1)
			abort();
		for (size_t k = 0; k < length && k < 8; k++)
			if (members[k] >= threads)
				abort();
	}
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
	{
		sw_hang_options opt = { .max_frames = 32 };
		sw_hang_report *r;

		if (sw_hang_analyze_core(core, &opt, &r) == SW_OK) {
			read_report(r);
			sw_hang_report_free(r);
		}
	}
	sw_core_close(core);
	return 0;
}
