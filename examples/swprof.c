/*
 * swprof.c - a sampling profiler to LD_PRELOAD: libswprof.so registers
 * every thread of the program with an sw_registry, samples them all from
 * its own thread at SWPROF_HZ (default 1000) with sw_sampler_sample_all,
 * walks each stopped thread (native code through the CFI of the modules
 * it registers at start), and when the process ends (exit, _exit, exec,
 * SIGINT, SIGTERM) writes its profile (swprof_write.c) named after its
 * pid and prints a one-line summary.  A forked child gets a profile
 * of its own.  The program must not notice: see "harmless" below.  A sample whose walk stopped
 * before the thread's outermost frame keeps a "[stopped: reason]" frame in
 * place of the frames it could not reach.  See swprof(1).
 *
 * While a target is stopped the callback only copies IPs (and the
 * thread's id) into a buffer allocated ahead of time; everything else
 * happens after it resumes, the threads' names read then too
 * (swprof_threads.c).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <linux/futex.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <stackwalk.h>
#include "swprof.h"


profile prof;
static int (*real_pthread_create)(pthread_t *, const pthread_attr_t *, void *(*)(void *), void *);

/* --- the hook a runtime calls -------------------------------------------------------- */

/*
 * swprof_use_codemap - walk managed code through `map` too, and name its
 * methods with `name` (may be NULL: "method@0x...").  The toy JIT's demo
 * calls it, found with dlsym, when it runs under swprof.
 */
SWPROF_API void swprof_use_codemap(const sw_codemap *map, const char *(*name)(void *method));
SWPROF_API void swprof_use_codemap(const sw_codemap *map, const char *(*name)(void *method))
{
	__atomic_store_n(&prof.method_name, name, __ATOMIC_RELEASE);
	__atomic_store_n(&prof.runtime_map, map, __ATOMIC_RELEASE);
}

/*
 * swprof_thread_frames - the calling thread's Frame list head, so that a
 * sample stopped in native code called from managed code (below a
 * transition Frame) finds the managed frames under it.  Re-registers the
 * thread with the head; call it on each runtime thread, before it runs
 * managed code.
 */
SWPROF_API void swprof_thread_frames(sw_frame **head);
SWPROF_API void swprof_thread_frames(sw_frame **head)
{
	uint64_t id;

	if (!prof.started)
		return;
	sw_registry_remove_self(prof.reg);
	sw_registry_add_self(prof.reg, prof.map, head, &id);
}

/*
 * swprof_add_native_code - native code the runtime generated (a thunk into
 * managed code, a stub), described by its SWU: walks go through it to the
 * native code that called the managed code, and its frames are named
 * `name`.  swprof_remove_native_code before the code goes away.  Both
 * return an sw_status.
 */
SWPROF_API int swprof_add_native_code(const sw_code_info *info, const char *name);
SWPROF_API int swprof_add_native_code(const sw_code_info *info, const char *name)
{
	sw_code_info native;
	sw_status st;

	if (!info)
		return SW_E_INVAL;
	if (!prof.started)
		return SW_E_UNSUPPORTED;
	native = *info;
	native.flags |= SW_CODE_NATIVE;
	sw_registry_unsafe_enter();
	if ((st = sw_codemap_add(prof.map, &native)) == SW_OK && name) {
		pthread_mutex_lock(&prof.stubs_lock);
		if (prof.nstubs < MAX_STUBS) {
			runtime_stub *r = &prof.stubs[prof.nstubs];

			r->start = info->start;
			r->size = info->size;
			snprintf(r->name, sizeof r->name, "%s", name);
			__atomic_store_n(&prof.nstubs, prof.nstubs + 1, __ATOMIC_RELEASE);
		}
		pthread_mutex_unlock(&prof.stubs_lock);
	}
	sw_registry_unsafe_leave();
	return st;
}

SWPROF_API int swprof_remove_native_code(uint64_t start);
SWPROF_API int swprof_remove_native_code(uint64_t start)
{
	sw_status st;

	if (!prof.started)
		return SW_E_UNSUPPORTED;
	sw_registry_unsafe_enter();
	st = sw_codemap_remove(prof.map, start);
	sw_registry_unsafe_leave();
	return st;
}

/* --- sampling: runs while the target is stopped (the walk is swprof_walk.c's) ---------- */

static sw_walk_action on_sample(const sw_sample *s, void *data)
{
	walk_buf w;

	(void)data;
	memset(&w, 0, sizeof w);
	walk_sample(s, &w);
	/* Code not imported yet: walked again once it is (swprof_deferred.c). */
	if (w.stopped == SW_E_NOTIMPORTED && defer_sample(s))
		return SW_CONTINUE;
	record_sample(&w, s->ticks, s->tid);
	return SW_CONTINUE;
}

static void futex_wait_until(int *word, const struct timespec *deadline)
{
	/* FUTEX_WAIT_BITSET takes an absolute CLOCK_MONOTONIC time. */
	syscall(SYS_futex, word, FUTEX_WAIT_BITSET_PRIVATE, 0, deadline, NULL, FUTEX_BITSET_MATCH_ANY);
}

void futex_wake_all(int *word)
{
	__atomic_store_n(word, 1, __ATOMIC_RELEASE);
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}

static int sampling_goes_on(void)
{
	return !__atomic_load_n(&prof.stop, __ATOMIC_ACQUIRE) &&
	       !__atomic_load_n(&prof.fatal_signo, __ATOMIC_ACQUIRE);
}

/*
 * Wall-clock mode: every thread, running or not, once a period.  (CPU
 * mode is the library's: each thread's timer on its own CPU clock stops
 * it, and sw_sampler_wait walks it.)
 */
static void sample_wall_clock(void)
{
	long period = 1000000000L / (long)prof.hz;
	struct timespec next;

	clock_gettime(CLOCK_MONOTONIC, &next);
	while (sampling_goes_on()) {
		struct timespec now;

		sw_sampler_sample_all(prof.reg, on_sample, NULL, NULL);
		walk_deferred();
		read_thread_names(0);
		/* Keep the rate: the next tick is due one period after the last. */
		next.tv_nsec += period;
		while (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec + 1)
			next = now;     /* far behind (stopped, overloaded): do not burst */
		futex_wait_until(&prof.wake, &next);
	}
}

/* How long sw_sampler_wait may block: the latency of a stop request in CPU mode. */
#define CPU_WAIT_MS 10

static void *sampler_main(void *arg)
{
	sw_sampler_options opt = { .signo = prof.signo, .timeout_ms = 100 };
	int started;

	(void)arg;
	if (!prof.wall_clock)
		opt.cpu_period_ns = 1000000000u / prof.hz;
	walk_caches_init();
	started = sw_sampler_start(prof.reg, &opt) == SW_OK;
	futex_wake_all(&prof.ready);
	if (!started)
		return NULL;
	if (prof.wall_clock)
		sample_wall_clock();
	else
		while (sampling_goes_on()) {
			sw_sampler_wait(prof.reg, on_sample, NULL, CPU_WAIT_MS, NULL);
			walk_deferred();
			read_thread_names(0);
		}
	sw_sampler_stop(prof.reg);
	if (!__atomic_load_n(&prof.stop, __ATOMIC_ACQUIRE) && prof.fatal_signo) {
		write_profile();
		die_of(prof.fatal_signo);
	}
	return NULL;
}

/*
 * The sampler thread blocks every signal: the program's signals go to the
 * program's threads, as they would without it.  Returns once it samples,
 * so that a handler the program installs from now on meets the sampler's
 * and is chained to it, whatever the order the threads run in.
 */
int start_sampler(void)
{
	sigset_t all, old;
	int rc;

	__atomic_store_n(&prof.stop, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&prof.wake, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&prof.ready, 0, __ATOMIC_RELEASE);
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	rc = real_pthread_create(&prof.thread, NULL, sampler_main, NULL);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (rc != 0)
		return 0;
	/* Waiting here, the thread is in the agent's code: not a sample of the program. */
	sw_registry_unsafe_enter();
	while (!__atomic_load_n(&prof.ready, __ATOMIC_ACQUIRE))
		syscall(SYS_futex, &prof.ready, FUTEX_WAIT_PRIVATE, 0, NULL, NULL, 0);
	sw_registry_unsafe_leave();
	prof.sampling = 1;
	return 1;
}

/* End the sampler thread: no sample signal is sent after this returns. */
void stop_sampler(void)
{
	if (!prof.sampling)
		return;
	__atomic_store_n(&prof.stop, 1, __ATOMIC_RELEASE);
	futex_wake_all(&prof.wake);
	sw_registry_unsafe_enter();
	pthread_join(prof.thread, NULL);
	sw_registry_unsafe_leave();
	prof.sampling = 0;
}

/* --- threads ------------------------------------------------------------------------- */

typedef struct start_args {
	void *(*fn)(void *);
	void *arg;
} start_args;

static void unregister(void *unused)
{
	(void)unused;
	sw_registry_remove_self(prof.reg);
}

static void *thread_start(void *p)
{
	start_args a = *(start_args *)p;
	uint64_t id;
	void *ret;

	free(p);
	if (sw_registry_add_self(prof.reg, prof.map, NULL, &id) == SW_OK)
		__atomic_add_fetch(&prof.threads_seen, 1, __ATOMIC_RELAXED);
	pthread_cleanup_push(unregister, NULL);
	ret = a.fn(a.arg);
	pthread_cleanup_pop(1);
	return ret;
}

SWPROF_API int pthread_create(pthread_t *t, const pthread_attr_t *attr, void *(*fn)(void *),
                              void *arg)
{
	start_args *a;

	if (!real_pthread_create)
		real_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
		                               void *))dlsym(RTLD_NEXT, "pthread_create");
	if (!prof.started || !(a = malloc(sizeof *a)))
		return real_pthread_create(t, attr, fn, arg);
	a->fn = fn;
	a->arg = arg;
	return real_pthread_create(t, attr, thread_start, a);
}

/* --- start-up: the modules, the main thread, the sampler ----------------------------- */

/* The module's address range, from its loaded segments: which module an address is in. */
static void module_span(const struct dl_phdr_info *info, loaded_module *lm)
{
	lm->lo = UINT64_MAX;
	lm->hi = 0;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (start < lm->lo)
			lm->lo = start;
		if (start + ph->p_memsz > lm->hi)
			lm->hi = start + ph->p_memsz;
	}
}

static int add_module(struct dl_phdr_info *info, size_t size, void *data)
{
	char exe[4096];
	const char *path = info->dlpi_name;
	loaded_module *lm = &prof.modules[prof.nmodules];
	sw_module *m;

	(void)size; (void)data;
	if (!path || !*path) {
		ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);

		if (n <= 0)
			return 0;
		exe[n] = 0;
		path = exe;
	}
	/* The agent's own code is registered too: a thread's start runs through it. */
	if (strstr(path, "linux-vdso") || prof.nmodules == MAX_MODULES)
		return 0;
	/*
	 * A placeholder: start-up costs the file's headers; the sampler
	 * thread reads its symbols and .eh_frame_hdr once a walk lands in it
	 * (swprof_deferred.c), and most of a program's libraries never are.
	 */
	if (sw_module_load_flags(path, info->dlpi_addr, SW_MODULE_LAZY_SIGNAL_SAFE | SW_MODULE_PLACEHOLDER,
	                         NULL, &m) != SW_OK)
		return 0;
	if (sw_module_register(m, prof.map) != SW_OK || !(lm->path = strdup(path))) {
		sw_module_unregister(m, prof.map);
		sw_module_free(m);
		return 0;
	}
	lm->m = m;
	lm->bias = info->dlpi_addr;
	module_span(info, lm);
	prof.nmodules++;
	return 0;
}

__attribute__((constructor)) static void swprof_init(void)
{
	const char *hz = getenv("SWPROF_HZ"), *sig = getenv("SWPROF_SIGNAL");
	const char *clock = getenv("SWPROF_CLOCK");
	uint64_t id;

	prof.hz = hz && atoi(hz) > 0 && atoi(hz) <= 100000 ? (unsigned)atoi(hz) : 1000;
	prof.signo = sig && atoi(sig) > 0 ? atoi(sig) : SIGPROF;
	prof.wall_clock = clock && !strcmp(clock, "wall");
	prof.fold_threads = getenv("SWPROF_THREADS") && atoi(getenv("SWPROF_THREADS")) > 0;
	prof.pid = getpid();
	prof.exec_generation = exec_generation_from_env();
	pthread_mutex_init(&prof.stubs_lock, NULL);
	real_pthread_create = (int (*)(pthread_t *, const pthread_attr_t *, void *(*)(void *),
	                               void *))dlsym(RTLD_NEXT, "pthread_create");
	dl_iterate_phdr(find_own_text, (void *)(uintptr_t)swprof_init);
	prof.buf = malloc(BUFFER_WORDS * sizeof prof.buf[0]);
	if (!prof.buf || !deferred_init() || !real_pthread_create || sw_codemap_create(&prof.map) != SW_OK ||
	    sw_registry_create(&prof.reg) != SW_OK) {
		fprintf(stderr, "swprof: cannot start\n");
		return;
	}
	dl_iterate_phdr(add_module, NULL);
	if (sw_registry_add_self(prof.reg, prof.map, NULL, &id) == SW_OK)
		prof.threads_seen = 1;
	prof.started = 1;
	/* Registered before the C library's own exit work: it runs after every destructor. */
	on_exit(on_exit_status, NULL);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	guard_start();
	if (!start_sampler())
		prof.started = 0;
}
