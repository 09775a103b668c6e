/*
 * check_signal_safety.c - the walk path calls no allocator and takes no
 * mutex, so a profiler may run it from a signal handler.
 *
 * This program defines malloc, calloc, realloc, free, pthread_mutex_lock
 * and pthread_mutex_unlock itself; each forwards to the next definition
 * (dlsym(RTLD_NEXT)) but, while the "forbidden" window is open, first
 * counts a violation and remembers which function was called.  The window
 * is opened around sw_walk_frames, sw_snapshot, sw_crawl_frame_enum_gc_roots,
 * sw_crawl_frame_is_gc_safe, sw_crawl_frame_relative_offset (a funclet's
 * looks its parent up in the code map), sw_crawl_frame_ambient_sp and
 * sw_codemap_find run from a signal handler
 * over synthetic stacks of every architecture and over the live thread,
 * and around the walks a sampler's callback makes of a stopped thread, and
 * around walks of the live thread through lazy modules that may not
 * import (SW_MODULE_LAZY_SIGNAL_SAFE).  Plain C (no Check, which
 * allocates); exit status 0 when nothing was called.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include <stackwalk/sampler.h>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define SANITIZED 1
#endif
#endif
#ifndef SANITIZED
#define SANITIZED 0
#endif

/* --- the interposed functions --------------------------------------------------- */

static volatile sig_atomic_t window_open;
static volatile sig_atomic_t violations;
static const char *volatile first_violation;

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void (*next_free)(void *);
static int (*next_lock)(pthread_mutex_t *);
static int (*next_unlock)(pthread_mutex_t *);

/* dlsym may itself allocate (calloc) before calloc is resolved: serve it from here. */
static unsigned char bootstrap[4096] __attribute__((aligned(16)));
static size_t bootstrap_used;
static int resolving;

static void note(const char *what)
{
	if (window_open) {
		if (!violations)
			first_violation = what;
		violations++;
	}
}

static void resolve(void)
{
	if (next_free || resolving)
		return;
	resolving = 1;
	next_malloc = (void *(*)(size_t))dlsym(RTLD_NEXT, "malloc");
	next_calloc = (void *(*)(size_t, size_t))dlsym(RTLD_NEXT, "calloc");
	next_realloc = (void *(*)(void *, size_t))dlsym(RTLD_NEXT, "realloc");
	next_lock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_lock");
	next_unlock = (int (*)(pthread_mutex_t *))dlsym(RTLD_NEXT, "pthread_mutex_unlock");
	next_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	resolving = 0;
}

static int from_bootstrap(const void *p)
{
	return (const unsigned char *)p >= bootstrap &&
	       (const unsigned char *)p < bootstrap + sizeof bootstrap;
}

static void *bootstrap_alloc(size_t n)
{
	void *p;

	n = (n + 15) & ~(size_t)15;
	if (bootstrap_used + n > sizeof bootstrap)
		return NULL;
	p = bootstrap + bootstrap_used;
	bootstrap_used += n;
	return p;
}

void *malloc(size_t n)
{
	note("malloc");
	resolve();
	return next_malloc ? next_malloc(n) : bootstrap_alloc(n);
}

void *calloc(size_t n, size_t size)
{
	note("calloc");
	resolve();
	if (!next_calloc) {
		void *p = size && n > (size_t)-1 / size ? NULL : bootstrap_alloc(n * size);

		if (p)
			memset(p, 0, n * size);
		return p;
	}
	return next_calloc(n, size);
}

void *realloc(void *p, size_t n)
{
	note("realloc");
	resolve();
	if (from_bootstrap(p)) {
		void *q = next_malloc ? next_malloc(n) : NULL;

		if (q)
			memcpy(q, p, n < 64 ? n : 64);  /* bootstrap blocks are tiny */
		return q;
	}
	return next_realloc ? next_realloc(p, n) : NULL;
}

void free(void *p)
{
	note("free");
	resolve();
	if (p && !from_bootstrap(p) && next_free)
		next_free(p);
}

int pthread_mutex_lock(pthread_mutex_t *m)
{
	note("pthread_mutex_lock");
	resolve();
	return next_lock ? next_lock(m) : 0;
}

int pthread_mutex_unlock(pthread_mutex_t *m)
{
	note("pthread_mutex_unlock");
	resolve();
	return next_unlock ? next_unlock(m) : 0;
}

/* --- the walk path, run inside the window ------------------------------------------ */

typedef struct walk_result {
	const sw_thread *thread;
	const sw_context *seed;     /* NULL: the live thread, from the handler's context */
	unsigned frames, roots, found, snapshot_frames;
	unsigned gc_safe;               /* frames sw_crawl_frame_is_gc_safe accepts: it decodes blobs */
	uint64_t queries;               /* the sum of the other queries' answers, kept */
	sw_walk_action act;
	sw_status snap;
	int native;                 /* a native walk of the live thread alone, its IPs kept */
	sw_walk_error err;
	uint64_t ips[64];
} walk_result;

static walk_result *volatile current;

static sw_walk_action count_root(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	(void)cf; (void)root;
	++*(unsigned *)data;
	return SW_CONTINUE;
}

static sw_walk_action on_frame(const sw_crawl_frame *cf, void *data)
{
	walk_result *r = data;
	sw_code_info ci;

	if (r->frames < sizeof r->ips / sizeof r->ips[0])
		r->ips[r->frames] = sw_crawl_frame_ip(cf);
	r->frames++;
	sw_crawl_frame_enum_gc_roots(cf, count_root, &r->roots);
	r->gc_safe += (unsigned)sw_crawl_frame_is_gc_safe(cf);
	r->queries += sw_crawl_frame_relative_offset(cf) + sw_crawl_frame_ambient_sp(cf);
	if (sw_codemap_find(r->thread->codemap, sw_context_ip(&sw_crawl_frame_regdisplay(cf)->cur),
	                    &ci) == SW_OK)
		r->found++;
	return SW_CONTINUE;
}

static sw_walk_action on_snapshot(const sw_snapshot_frame *f, void *data)
{
	(void)f;
	++*(unsigned *)data;
	return SW_CONTINUE;
}

static void walk_in_window(walk_result *r, const sw_context *seed, unsigned flags)
{
	window_open = 1;
	r->act = sw_walk_frames(r->thread, seed, 0, on_frame, r, flags, NULL);
	r->snap = sw_snapshot(r->thread, seed, SW_SNAPSHOT_REGISTER_CONTEXT, on_snapshot,
	                      &r->snapshot_frames);
	window_open = 0;
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	walk_result *r = current;
	sw_context ctx;

	(void)sig; (void)si;
	if (!r)
		return;
	if (r->native) {
		sw_context_from_ucontext(&ctx, uc);
		window_open = 1;
		r->act = sw_walk_frames(r->thread, &ctx, 0, on_frame, r, SW_WALK_NATIVE_FRAMES, &r->err);
		window_open = 0;
	} else if (r->seed) {
		walk_in_window(r, r->seed, SW_WALK_GC_FUNCLET_REFERENCE_REPORTING);
	} else {
		window_open = 1;
		sw_context_from_ucontext(&ctx, uc);
		window_open = 0;
		walk_in_window(r, &ctx, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT);
	}
}

/* --- the sampler: a stopped thread walked from the sampler's callback ----------------- */

static int worker_stop, worker_ready;
static sw_registry *registry;

static void *worker_main(void *arg)
{
	static sw_frame *head;
	uint64_t id;

	if (sw_registry_add_self(registry, arg, &head, &id) != SW_OK)
		abort();
	__atomic_store_n(&worker_ready, 1, __ATOMIC_RELEASE);
	while (!__atomic_load_n(&worker_stop, __ATOMIC_ACQUIRE))
		;
	sw_registry_remove_self(registry);
	return NULL;
}

static sw_walk_action on_sample(const sw_sample *s, void *data)
{
	walk_result *r = data;

	r->thread = s->thread;
	walk_in_window(r, s->seed, s->walk_flags | SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT);
	return SW_CONTINUE;
}

static int check(const char *what, const walk_result *r)
{
	if (violations) {
		printf("FAIL: %s: the walk path called %s (%d calls)\n", what, first_violation,
		       (int)violations);
		return 1;
	}
	if (r->frames == 0) {
		printf("FAIL: %s: nothing was walked\n", what);
		return 1;
	}
	return 0;
}

/* --- lazy modules: a walk that may not import stops, and says why ------------------ */

struct native_set {
	sw_codemap *map;
	unsigned flags;
	sw_module *m[2];            /* the program, the C library */
};

static int add_native(struct dl_phdr_info *info, size_t size, void *data)
{
	struct native_set *ns = data;
	const char *name = info->dlpi_name;
	int k = !name || !*name ? 0 : strstr(name, "/libc.so") ? 1 : -1;

	(void)size;
	if (k < 0 || ns->m[k])
		return 0;
	if (sw_module_load_flags(k ? name : "/proc/self/exe", info->dlpi_addr, ns->flags, NULL,
	                         &ns->m[k]) != SW_OK ||
	    sw_module_register(ns->m[k], ns->map) != SW_OK)
		return 1;
	return 0;
}

/* One native walk of this thread from a signal handler, from the same call site every time. */
static __attribute__((noinline)) void walk_native(walk_result *r)
{
	current = r;
	raise(SIGUSR1);
	current = NULL;
}

static int native_set_open(struct native_set *ns, unsigned flags, sw_thread *t, sw_memory *mem)
{
	static sw_frame *head;

	memset(ns, 0, sizeof *ns);
	ns->flags = flags;
	if (sw_codemap_create(&ns->map) != SW_OK || sw_thread_init_self(t, ns->map, mem, &head) != SW_OK)
		return -1;
	dl_iterate_phdr(add_native, ns);
	return ns->m[0] && ns->m[1] ? 0 : -1;
}

static void native_set_close(struct native_set *ns)
{
	for (int k = 0; k < 2; k++) {
		if (ns->m[k])
			sw_module_unregister(ns->m[k], ns->map);
	}
	sw_codemap_synchronize(ns->map);
	for (int k = 0; k < 2; k++)
		sw_module_free(ns->m[k]);
	sw_codemap_destroy(ns->map);
}

/*
 * The live thread through lazy modules that may not import: each walk stops
 * with SW_E_NOTIMPORTED in the first function not imported yet, calling
 * nothing it may not; imported outside the handler, the next goes further,
 * until it walks the whole stack, as the same walk through full loads does.
 */
static int lazy_walks(unsigned *walks)
{
	struct native_set lazy, full;
	walk_result r, want;
	sw_memory mem, full_mem;
	sw_thread t, full_t;
	unsigned rounds = 0, stops = 0;

	if (native_set_open(&lazy, SW_MODULE_LAZY_SIGNAL_SAFE, &t, &mem) != 0 ||
	    native_set_open(&full, 0, &full_t, &full_mem) != 0) {
		printf("FAIL: lazy modules: set-up\n");
		return 1;
	}
	/*
	 * One call site for every walk, the first through the full modules: the
	 * same return addresses (volatile: the compiler may not peel the first pass).
	 */
	for (volatile unsigned pass = 0;; pass++) {
		walk_result *x = pass == 0 ? &want : &r;
		size_t a = 0, b = 0;

		memset(x, 0, sizeof *x);
		x->thread = pass == 0 ? &full_t : &t;
		x->native = 1;
		walk_native(x);
		(*walks)++;
		if (pass == 0) {
			if (check("native walk, full modules", &want) || want.err.status != SW_OK) {
				printf("FAIL: native walk, full modules: %s\n", sw_strerror(want.err.status));
				return 1;
			}
			continue;
		}
		if (violations) {
			printf("FAIL: lazy walk: the walk path called %s\n", first_violation);
			return 1;
		}
		if (r.err.status == SW_OK)
			break;
		if (r.err.status != SW_E_NOTIMPORTED) {
			printf("FAIL: lazy walk %u: %s at 0x%llx\n", rounds, sw_strerror(r.err.status),
			       (unsigned long long)r.err.ip);
			return 1;
		}
		stops++;
		/* Outside the handler: import what the walk noted. */
		sw_module_import_noted(lazy.m[0], 0, &a);
		sw_module_import_noted(lazy.m[1], 0, &b);
		if (a + b == 0 || ++rounds == 64) {
			printf("FAIL: lazy walk %u: stopped at 0x%llx, and nothing more to import\n", rounds,
			       (unsigned long long)r.err.ip);
			return 1;
		}
	}
	if (stops == 0 || r.frames != want.frames ||
	    memcmp(r.ips, want.ips, sizeof r.ips) != 0) {
		printf("FAIL: lazy walk: %u frames after %u stops, %u through full modules\n", r.frames,
		       stops, want.frames);
		for (unsigned i = 0; i < r.frames || i < want.frames; i++)
			printf("  #%u 0x%llx 0x%llx\n", i, (unsigned long long)r.ips[i],
			       (unsigned long long)want.ips[i]);
		return 1;
	}
	printf("lazy modules: %u stops (SW_E_NOTIMPORTED), then the same %u frames as full loads\n",
	       stops, r.frames);
	native_set_close(&lazy);
	native_set_close(&full);
	return 0;
}

int main(void)
{
	static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };
	struct sigaction sa;
	sw_synth_params p;
	unsigned walks = 0, frames = 0, roots = 0, found = 0;
	int failed = 0;

	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);

	/* The interposition works: a call inside the window is caught. */
	window_open = 1;
	free(malloc(16));
	window_open = 0;
	if (violations != 2) {
		/* A sanitizer's runtime linked into the program defines them first. */
		if (SANITIZED) {
			printf("SKIP: the sanitizer's malloc takes precedence over the test's\n");
			return 77;
		}
		printf("FAIL: the interposed malloc/free were not called (%d)\n", (int)violations);
		return 1;
	}
	violations = 0;

	sw_synth_params_default(&p);
	for (unsigned a = 0; a < 3 && !failed; a++) {
		for (uint64_t seed = 1; seed <= 40 && !failed; seed++) {
			walk_result r = { 0 };
			sw_synth *s;

			if (sw_synth_create(&s, arches[a], seed, &p) != SW_OK) {
				printf("FAIL: sw_synth_create(%u, %llu)\n", a, (unsigned long long)seed);
				return 1;
			}
			r.thread = sw_synth_thread(s);
			r.seed = sw_synth_context(s);
			current = &r;
			raise(SIGUSR1);
			current = NULL;
			failed |= check("synthetic stack", &r);
			walks++;
			frames += r.frames;
			roots += r.roots;
			found += r.found;
			sw_synth_destroy(s);
		}
	}

	if (!failed) {
		/* The live thread, walked from its own signal handler. */
		static sw_frame *head;
		sw_codemap *map;
		sw_memory mem;
		sw_thread t;
		walk_result r = { 0 };

		if (sw_codemap_create(&map) != SW_OK || sw_thread_init_self(&t, map, &mem, &head) != SW_OK) {
			printf("FAIL: live thread set-up\n");
			return 1;
		}
		r.thread = &t;
		current = &r;
		raise(SIGUSR1);
		current = NULL;
		failed |= check("live thread", &r);
		walks++;

		/* Another thread, stopped by the sampler and walked from its callback. */
		if (!failed) {
			pthread_t th;
			walk_result rs = { 0 };

			if (sw_registry_create(&registry) != SW_OK ||
			    pthread_create(&th, NULL, worker_main, map) != 0)
				return 1;
			while (!__atomic_load_n(&worker_ready, __ATOMIC_ACQUIRE))
				sched_yield();
			sw_sampler_start(registry, NULL);
			for (int i = 0; i < 20; i++)
				sw_sampler_sample_all(registry, on_sample, &rs, NULL);
			sw_sampler_stop(registry);
			__atomic_store_n(&worker_stop, 1, __ATOMIC_RELEASE);
			pthread_join(th, NULL);
			sw_registry_destroy(registry);
			failed |= check("sampled thread", &rs);
			walks += 20;
		}
		sw_codemap_destroy(map);
	}
	if (!failed)
		failed |= lazy_walks(&walks);
	if (failed)
		return 1;
	printf("PASS: %u walks (%u frames, %u GC roots, %u code map hits) called no allocator or mutex\n",
	       walks, frames, roots, found);
	return 0;
}
