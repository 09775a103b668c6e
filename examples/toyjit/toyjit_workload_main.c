/*
 * toyjit_workload_main.c - toyjit-workload: several threads running toy-JIT
 * call chains for a few seconds, a program to profile.  Under swprof
 * (LD_PRELOAD=libswprof.so) it hands the agent its code map, the methods'
 * names and each thread's Frame list head, found with dlsym so that
 * nothing links against the agent.  See toyjit-workload(1).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include "toyjit_workload.h"

static void (*thread_frames)(sw_frame **head);
static int (*add_native_code)(const sw_code_info *info, const char *name);
static int (*remove_native_code)(uint64_t start);

/*
 * Each worker, before its first run: the profiler learns where its Frames
 * are, and the JIT's thunk and stubs (native code it described), through
 * which a walk goes on from the managed frames to the C code below.
 */
static void tell_profiler_thread(toyjit_worker *w, void *data)
{
	(void)data;
	if (thread_frames)
		thread_frames(&w->head);
	for (unsigned k = 0; add_native_code && k < w->jit->nnative; k++) {
		const toyjit_native_code *c = &w->jit->native[k];
		sw_code_info info = { NULL, c->start, c->size, c->swu, (uint32_t)c->swu_size,
		                      SW_CODE_NATIVE, NULL };

		add_native_code(&info, c->name);
	}
}

/* Each worker, before its JIT's code goes away. */
static void forget_profiler_thread(toyjit_worker *w, void *data)
{
	(void)data;
	for (unsigned k = 0; remove_native_code && k < w->jit->nnative; k++)
		remove_native_code(w->jit->native[k].start);
}

static void tell_profiler(const sw_codemap *map)
{
	void (*use)(const sw_codemap *, const char *(*)(void *));

	*(void **)&use = dlsym(RTLD_DEFAULT, "swprof_use_codemap");
	*(void **)&thread_frames = dlsym(RTLD_DEFAULT, "swprof_thread_frames");
	*(void **)&add_native_code = dlsym(RTLD_DEFAULT, "swprof_add_native_code");
	*(void **)&remove_native_code = dlsym(RTLD_DEFAULT, "swprof_remove_native_code");
	if (use)
		use(map, toyjit_workload_method_name);
}

static void usage(FILE *out)
{
	fprintf(out, "usage: toyjit-workload [-t SECONDS] [-j THREADS] [-d MAXDEPTH] [-s SPIN]\n"
	        "  -t SECONDS  how long to run (default 2)\n"
	        "  -j THREADS  worker threads, 1..%d (default 3)\n"
	        "  -d MAXDEPTH runs are 1..MAXDEPTH managed frames deep (default 12)\n"
	        "  -s SPIN     loop iterations the stub's helper burns per run (default 300)\n",
	        TOYJIT_WORKLOAD_MAX_THREADS);
}

int main(int argc, char **argv)
{
	toyjit_workload_options opt = {
		.threads = 3, .min_depth = 1, .max_depth = 12, .pinvoke = 1, .helper_spin = 300,
		.started = tell_profiler_thread, .stopping = forget_profiler_thread
	};
	static toyjit_workload load;
	double seconds = 2;
	struct timespec t;
	sw_codemap *map;
	uint64_t runs = 0;
	sw_status st;
	int c;

	while ((c = getopt(argc, argv, "t:j:d:s:h")) != -1) {
		switch (c) {
		case 't': seconds = atof(optarg); break;
		case 'j': opt.threads = (unsigned)atoi(optarg); break;
		case 'd': opt.max_depth = (unsigned)atoi(optarg); break;
		case 's': opt.helper_spin = (unsigned)atoi(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (seconds <= 0 || seconds > 3600) {
		usage(stderr);
		return 2;
	}
	if ((st = sw_codemap_create(&map)) != SW_OK) {
		fprintf(stderr, "toyjit-workload: %s\n", sw_strerror(st));
		return 1;
	}
	tell_profiler(map);
	if ((st = toyjit_workload_start(&load, map, &opt)) != SW_OK) {
		fprintf(stderr, "toyjit-workload: cannot start: %s\n", sw_strerror(st));
		return 1;
	}
	t.tv_sec = (time_t)seconds;
	t.tv_nsec = (long)((seconds - (double)t.tv_sec) * 1e9);
	while (nanosleep(&t, &t) != 0)
		;
	st = toyjit_workload_stop(&load);
	for (unsigned i = 0; i < opt.threads; i++)
		runs += load.workers[i].runs;
	printf("toyjit-workload: %u threads, %llu runs of 1..%u managed frames in %.1f s: %s\n",
	       opt.threads, (unsigned long long)runs, opt.max_depth, seconds,
	       st == SW_OK ? "OK" : sw_strerror(st));
	/*
	 * The JITs and the map stay until the process ends: a profiler names
	 * the methods at exit, through their handles.
	 */
	return st == SW_OK ? 0 : 1;
}
