/*
 * lazy-demo - a profiler's side of lazy modules, in plain C.
 *
 * A sampling profiler walks threads from a signal handler, where nothing
 * may allocate or lock, yet it should not pay for importing every
 * library's CFI at start-up.  The demo registers its process's modules
 * with SW_MODULE_LAZY_SIGNAL_SAFE (cheap: each module's .eh_frame_hdr),
 * takes "samples" of its own thread from a signal handler with
 * sw_backtrace, and between samples, outside the handler, imports what the
 * walks noted (sw_module_import_noted).  The first samples stop early with
 * SW_E_NOTIMPORTED, each a frame further; then every sample is whole.
 * Last, the same stack in one call outside a handler, sw_backtrace_self,
 * which sets all of this up by itself.  Uses only the public API; exits 0
 * when the last sample reached the end of the stack.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <link.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <stackwalk.h>

#define MAX_MODULES 64
#define MAX_FRAMES  64
#define MAX_SAMPLES 32

static sw_codemap *map;
static sw_module *modules[MAX_MODULES];
static size_t nmodules;

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
	sw_module *m;

	(void)size;
	(void)data;
	/* The vDSO has no file: a module from its image would be a full load; not needed here. */
	if (nmodules == MAX_MODULES || strstr(path, "linux-vdso") ||
	    sw_module_load_flags(path, info->dlpi_addr, SW_MODULE_LAZY_SIGNAL_SAFE, NULL, &m) != SW_OK)
		return 0;
	if (sw_module_register(m, map) != SW_OK) {
		sw_module_free(m);
		return 0;
	}
	modules[nmodules++] = m;
	return 0;
}

/* One sample: filled by the handler, read after it. */
static struct sample {
	sw_thread *thread;
	uint64_t ips[MAX_FRAMES];
	int n;
	sw_walk_error err;
} sample;

static void on_sample(int sig, siginfo_t *si, void *uc)
{
	sw_context ctx;

	(void)sig;
	(void)si;
	/* Async-signal-safe: no allocation, no lock, lazy modules included. */
	if (sw_context_from_ucontext(&ctx, uc) != SW_OK) {
		sample.n = -1;
		return;
	}
	sample.n = sw_backtrace(sample.thread, &ctx, 0, SW_WALK_NATIVE_FRAMES, sample.ips, NULL,
	                        MAX_FRAMES, NULL, &sample.err);
}

/* Some depth of the program's own, so that the samples go through it. */
static __attribute__((noinline)) int work(int depth)
{
	if (depth > 0)
		return work(depth - 1) + 1;
	raise(SIGPROF);
	return 0;
}

static void print_frames(const uint64_t *ips, int n)
{
	for (int i = 0; i < n; i++) {
		const char *name = NULL;
		uint64_t off = 0;

		for (size_t k = 0; k < nmodules && !name; k++)
			if (sw_module_symbolize(modules[k], ips[i] - (i > 0), &name, &off) != SW_OK)
				name = NULL;
		printf("  #%-2d 0x%016" PRIx64 " %s\n", i, ips[i], name ? name : "??");
	}
}

/* The one-call form: its caller's frame first, no set-up, not for a signal handler. */
static __attribute__((noinline)) void one_call(void)
{
	void *buf[MAX_FRAMES];
	uint64_t ips[MAX_FRAMES];
	int n = sw_backtrace_self(buf, MAX_FRAMES);

	for (int i = 0; i < n; i++)
		ips[i] = (uint64_t)(uintptr_t)buf[i];
	printf("sw_backtrace_self: %d frames\n", n);
	print_frames(ips, n);
}

int main(void)
{
	static sw_frame *head;
	struct sigaction sa;
	sw_memory mem;
	sw_thread t;
	int s;

	if (sw_codemap_create(&map) != SW_OK || sw_thread_init_self(&t, map, &mem, &head) != SW_OK)
		return 1;
	dl_iterate_phdr(add_module, NULL);
	printf("%zu modules registered lazily\n", nmodules);
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sample;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGPROF, &sa, NULL);
	sample.thread = &t;

	for (s = 1; s <= MAX_SAMPLES; s++) {
		size_t imported = 0;

		work(3);
		if (sample.n >= 0 && sample.err.status == SW_OK)
			break;
		if (sample.n < 0 || sample.err.status != SW_E_NOTIMPORTED) {
			printf("sample %d: %s\n", s, sample.n < 0 ? "no context" : sw_strerror(sample.err.status));
			return 1;
		}
		/* Outside the handler: import what the walk could not. */
		for (size_t k = 0; k < nmodules; k++) {
			size_t n = 0;

			sw_module_import_noted(modules[k], 0, &n);
			imported += n;
		}
		printf("sample %d: %d frames, then %s at 0x%" PRIx64 "; %zu function(s) imported\n", s,
		       sample.n, sw_strerror(sample.err.status), sample.err.ip, imported);
		if (imported == 0)
			return 1;
	}
	if (s > MAX_SAMPLES)
		return 1;
	printf("sample %d: %d frames, the whole stack:\n", s, sample.n);
	print_frames(sample.ips, sample.n);
	one_call();
	for (size_t k = 0; k < nmodules; k++)
		sw_module_unregister(modules[k], map);
	sw_codemap_synchronize(map);
	for (size_t k = 0; k < nmodules; k++)
		sw_module_free(modules[k]);
	sw_codemap_destroy(map);
	return 0;
}
