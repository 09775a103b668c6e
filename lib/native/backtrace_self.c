/*
 * backtrace_self.c - sw_backtrace_self: the calling thread's return
 * addresses in one call, as glibc's backtrace() gives them.
 *
 * What a caller would otherwise write (about 50 lines: a code map, the
 * loaded objects registered, the thread described, a context captured) is
 * done here once per process and once per thread.  Modules are lazy
 * (SW_MODULE_LAZY), so the first call costs each object's .eh_frame_hdr,
 * not its CFI.  Each call asks the loader for its counts of objects added
 * and removed (dl_iterate_phdr's dlpi_adds and dlpi_subs, one callback)
 * and only when they moved registers what dlopen added and drops what
 * dlclose removed.
 */
#define _GNU_SOURCE
#include <link.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <stackwalk.h>
#include "caller_context.h"

#define SELF_MAX_MODULES   4096
#define SELF_STACK_FRAMES  256          /* more than this are walked into the heap */

struct self_module {
	sw_module *m;
	uint64_t bias;
	char *path;
	bool seen;
};

/* The process's modules; everything here under `lock`. */
static struct {
	pthread_mutex_t lock;
	sw_codemap *map;
	struct self_module *mods;
	size_t n;
	unsigned long long adds, subs;  /* the loader's counts when the modules were last synced */
	bool synced;
} self = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* The calling thread, described once (its stack bounds do not change), and its rules between walks. */
static __thread struct {
	sw_thread t;
	sw_memory mem;
	sw_frame *head;
	sw_walk_cache cache;
	bool ready;
} self_thread;

/* The loader's counts: its first object is enough. */
static int read_counts(struct dl_phdr_info *info, size_t size, void *data)
{
	unsigned long long *c = data;

	if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
		c[0] = info->dlpi_adds;
		c[1] = info->dlpi_subs;
	}
	return 1;
}

static struct self_module *find_module(const char *path, uint64_t bias)
{
	for (size_t i = 0; i < self.n; i++)
		if (self.mods[i].bias == bias && strcmp(self.mods[i].path, path) == 0)
			return &self.mods[i];
	return NULL;
}

/* Register one loaded object (the program has no name; the vDSO no file). */
static int add_object(struct dl_phdr_info *info, size_t size, void *data)
{
	const char *path = info->dlpi_name && *info->dlpi_name ? info->dlpi_name : "/proc/self/exe";
	struct self_module *s;
	sw_module *m;

	(void)size;
	(void)data;
	if (strncmp(path, "linux-", 6) == 0)
		return 0;
	if ((s = find_module(path, info->dlpi_addr)) != NULL) {
		s->seen = true;
		return 0;
	}
	if (self.n == SELF_MAX_MODULES ||
	    sw_module_load_flags(path, info->dlpi_addr, SW_MODULE_LAZY, NULL, &m) != SW_OK)
		return 0;
	s = &self.mods[self.n];
	if (!(s->path = strdup(path)) || sw_module_register(m, self.map) != SW_OK) {
		free(s->path);
		sw_module_free(m);
		return 0;
	}
	*s = (struct self_module){ m, info->dlpi_addr, s->path, true };
	self.n++;
	return 0;
}

/* The modules as the loader has them now; lock held. */
static sw_status sync_modules(void)
{
	unsigned long long c[2] = { 0, 0 };
	size_t keep = 0;
	bool dropped = false;

	if (!self.map) {
		if (sw_codemap_create(&self.map) != SW_OK)
			return SW_E_NOMEM;
		if (!(self.mods = calloc(SELF_MAX_MODULES, sizeof *self.mods)))
			return SW_E_NOMEM;
	}
	dl_iterate_phdr(read_counts, c);
	if (self.synced && c[0] == self.adds && c[1] == self.subs)
		return SW_OK;
	for (size_t i = 0; i < self.n; i++)
		self.mods[i].seen = false;
	dl_iterate_phdr(add_object, NULL);
	/* What dlclose removed: unregistered, and freed once no walk can hold it. */
	for (size_t i = 0; i < self.n; i++) {
		if (!self.mods[i].seen) {
			sw_module_unregister(self.mods[i].m, self.map);
			dropped = true;
		}
	}
	if (dropped)
		sw_codemap_synchronize(self.map);
	for (size_t i = 0; i < self.n; i++) {
		if (self.mods[i].seen) {
			self.mods[keep++] = self.mods[i];
			continue;
		}
		sw_module_free(self.mods[i].m);
		free(self.mods[i].path);
	}
	self.n = keep;
	self.adds = c[0];
	self.subs = c[1];
	self.synced = true;
	return SW_OK;
}

/* The frames this file adds on top of its caller's: walk_from_here's and sw_backtrace_self's. */
#define SELF_OWN_FRAMES 2

/*
 * The walk from here, into ips (at most max).  Apart from
 * sw_backtrace_self, so that its frame is always there to leave out (and
 * getcontext, where it is used, returns twice: nothing of the caller's may
 * live across it).
 */
static __attribute__((noinline)) int walk_from_here(uint64_t *ips, size_t max)
{
	sw_context ctx;
#ifdef SWI_HAVE_CALLER_REGISTERS
	uintptr_t regs[SWI_CALLER_REGISTERS];

	/* Not getcontext: its signal mask costs a system call per backtrace. */
	swi_caller_registers(regs);
	if (swi_context_from_registers(&ctx, regs) != SW_OK)
		return 0;
#else
	ucontext_t uc;

	if (getcontext(&uc) != 0 || sw_context_from_ucontext(&ctx, &uc) != SW_OK)
		return 0;
#endif
	return sw_backtrace(&self_thread.t, &ctx, 0, SW_WALK_NATIVE_FRAMES, ips, NULL, max,
	                    &self_thread.cache, NULL);
}

/* Fill buffer from the walk's IPs, leaving out this file's own frames. */
static int copy_out(void **buffer, int size, const uint64_t *ips, int n)
{
	int k = 0;

	for (int i = SELF_OWN_FRAMES; i < n && k < size; i++)
		buffer[k++] = (void *)(uintptr_t)ips[i];
	return k;
}

SW_API __attribute__((noinline)) int sw_backtrace_self(void **buffer, int size)
{
	uint64_t local[SELF_STACK_FRAMES], *ips = local;
	size_t max = SELF_STACK_FRAMES;
	sw_status st;
	int n;

	if (!buffer || size <= 0)
		return 0;
	pthread_mutex_lock(&self.lock);
	st = sync_modules();
	pthread_mutex_unlock(&self.lock);
	if (st != SW_OK)
		return 0;
	if (!self_thread.ready) {
		if (sw_thread_init_self(&self_thread.t, self.map, &self_thread.mem, &self_thread.head) != SW_OK)
			return 0;
		sw_walk_cache_init(&self_thread.cache);
		self_thread.ready = true;
	}
	/* This file's own frames come first: room for them too. */
	if ((size_t)size > SELF_STACK_FRAMES - SELF_OWN_FRAMES) {
		max = (size_t)size + SELF_OWN_FRAMES;
		if (!(ips = malloc(max * sizeof *ips)))
			return 0;
	}
	n = walk_from_here(ips, max);
	n = n > 0 ? copy_out(buffer, size, ips, n) : 0;
	if (ips != local)
		free(ips);
	return n;
}
