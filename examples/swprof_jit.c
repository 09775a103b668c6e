/*
 * swprof_jit.c - attach mode's JIT code.  A runtime that links the
 * library publishes its code map for debuggers (stackwalk-remote(5)); a
 * JIT such as LLVM's registers its objects for gdb (the GDB JIT
 * interface).  swstack reads both from a stopped process; swprof -p must
 * not stop it, so it reads them live (process_vm_readv: the publisher's
 * generation count and the readers' bounds make a torn read a retry or an
 * error, never a crash) and only when a sample's walk stops in anonymous
 * code: a process without JIT code pays nothing.
 *
 * What is read joins prof.map, where the samples' walks find it beside
 * the modules: a published method is walked by its SWU and recorded by
 * its handle (named through prof.method_name), a JIT object by its CFI
 * and named by its symbols (prof.jit_code_name).  The snapshots read
 * before stay until the end, unregistered, so that the methods sampled
 * then keep their names when a later read no longer lists them.  A read
 * that fails leaves the one before it registered; one that a busy
 * publisher tore is tried again at a later stop, 10 ms on at the
 * earliest.
 */
#define _GNU_SOURCE
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/uio.h>
#include <stackwalk.h>
#include "jit_lists.h"
#include "remote_map.h"
#include "swprof.h"
#include "swprof_jit.h"

#define KEPT_SNAPSHOTS 32       /* earlier code maps kept for their names */
#define UNRESOLVED 64           /* stops that a read did not explain, remembered */
#define TORN_PAUSE_NS 10000000ull   /* after a torn read, no read again for 10 ms */

static struct {
	pid_t pid;
	sw_memory mem;
	unsigned scanned;               /* prof.modules looked at for publishers */
	uint64_t remote_at;             /* the published code map's descriptor, or 0 */
	const char *remote_module;
	uint64_t lists_at[JIT_LISTS_MAX];   /* the GDB JIT descriptors found */
	const char *lists_module[JIT_LISTS_MAX];
	size_t nlists;
	struct remote_map remote;       /* the code map read last, registered */
	sw_remote *kept[KEPT_SNAPSHOTS];    /* earlier ones, newest last */
	size_t nkept;
	struct jit_lists jit;           /* the GDB JIT objects read last, registered */
	/*
	 * Where walks stopped in code that a read just after did not explain
	 * (an entry thunk described nowhere, code of a JIT that publishes
	 * nothing): no use reading again for them.  A ring, the oldest
	 * forgotten first.
	 */
	uint64_t unresolved[UNRESOLVED];
	unsigned nunresolved;
	uint64_t torn_until;            /* CLOCK_MONOTONIC ns: no read before, the last one torn */
} live;

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

/* The running process's memory: one process_vm_readv a read, the process never stopped. */
static sw_status read_live(void *ctx, uint64_t addr, void *buf, size_t len)
{
	struct iovec local = { buf, len }, remote = { (void *)(uintptr_t)addr, len };

	(void)ctx;
	return process_vm_readv(live.pid, &local, 1, &remote, 1, 0) == (ssize_t)len ? SW_OK : SW_E_BADADDR;
}

/* The published method whose handle is `method`, in the newest snapshot that has it. */
static const char *method_name(void *method)
{
	uint64_t handle = (uint64_t)(uintptr_t)method;
	sw_remote *snaps[KEPT_SNAPSHOTS + 1];
	size_t n = 0;

	if (live.remote.r)
		snaps[n++] = live.remote.r;
	for (size_t k = live.nkept; k-- > 0;)
		snaps[n++] = live.kept[k];
	for (size_t s = 0; s < n; s++)
		for (size_t i = 0, count = sw_remote_method_count(snaps[s]); i < count; i++) {
			sw_remote_method m;

			if (sw_remote_method_at(snaps[s], i, &m) == SW_OK && m.handle == handle)
				return m.name;
		}
	return NULL;
}

static const char *jit_code_name(uint64_t pc, uint64_t *offset)
{
	return jit_lists_name(&live.jit, pc, offset);
}

/* Look for publishers in the modules loaded since the last look. */
static void find_publishers(void)
{
	for (; live.scanned < prof.nmodules; live.scanned++) {
		const loaded_module *lm = &prof.modules[live.scanned];
		uint64_t value;

		if (lm->path[0] != '/')
			continue;
		if (!live.remote_at && remote_map_symbol(lm->path, SW_REMOTE_SYMBOL, &value) == 0) {
			live.remote_at = lm->bias + value;
			live.remote_module = lm->path;
		}
		if (live.nlists < JIT_LISTS_MAX && remote_map_symbol(lm->path, JIT_LISTS_SYMBOL, &value) == 0) {
			live.lists_at[live.nlists] = lm->bias + value;
			live.lists_module[live.nlists++] = lm->path;
		}
	}
}

/* The code map read last stops being registered; kept for its names.  1 if there was one. */
static int retire_remote(void)
{
	if (!live.remote.r)
		return 0;
	sw_remote_unregister(live.remote.r, prof.map);
	if (live.nkept == KEPT_SNAPSHOTS) {
		sw_remote_free(live.kept[0]);
		memmove(live.kept, live.kept + 1, (KEPT_SNAPSHOTS - 1) * sizeof live.kept[0]);
		live.nkept--;
	}
	live.kept[live.nkept++] = live.remote.r;
	live.remote.r = NULL;
	live.remote.map = NULL;
	return 1;
}

/* A read that failed leaves the one before it registered, as before the read. */
static void restore_remote(void)
{
	sw_remote *r = live.kept[live.nkept - 1];

	if (sw_remote_register(r, prof.map) == SW_OK) {
		live.remote.r = r;
		live.remote.map = prof.map;
		live.nkept--;
	}
}

int attach_jit_refresh(target_process *p, uint64_t pc, int verbose)
{
	sw_code_info ci;
	sw_status st;
	int torn = 0, retired;

	if (!live.pid) {
		live.pid = p->pid;
		live.mem.read = read_live;
		prof.method_name = method_name;
		prof.jit_code_name = jit_code_name;
	}
	find_publishers();
	if (!live.remote_at && live.nlists == 0)
		return 0;
	for (unsigned k = 0; k < UNRESOLVED && k < live.nunresolved; k++)
		if (live.unresolved[k] == pc)
			return 0;
	/*
	 * A publisher that keeps changing its map tears read after read: each
	 * costs the whole map, so the next waits a while.
	 */
	if (live.torn_until && monotonic_ns() < live.torn_until)
		return 0;
	live.torn_until = 0;
	retired = retire_remote();
	if (live.remote_at) {
		live.remote.descriptor = live.remote_at;
		live.remote.module = live.remote_module;
		st = remote_map_open(&live.remote, &live.mem, p->arch, prof.map);
		if (st != SW_OK && retired)
			restore_remote();
		if (st == SW_E_UNSAFE) {
			torn = 1;
			live.torn_until = monotonic_ns() + TORN_PAUSE_NS;
		}
		if (st != SW_OK && verbose)
			fprintf(stderr, "swprof: the code map published in %s: %s\n", live.remote_module,
			        sw_strerror(st));
	}
	jit_lists_close(&live.jit);
	memset(&live.jit, 0, sizeof live.jit);
	for (size_t i = 0; i < live.nlists; i++) {
		st = jit_lists_add(&live.jit, &live.mem, p->arch, live.lists_at[i], live.lists_module[i],
		                   prof.map);
		if (st != SW_OK && verbose)
			fprintf(stderr, "swprof: the GDB JIT list of %s: %s\n", live.lists_module[i],
			        sw_strerror(st));
	}
	/* What was unregistered must not be read by a walk: none runs now, so this returns at once. */
	sw_codemap_synchronize(prof.map);
	if (sw_codemap_find(prof.map, pc, &ci) == SW_OK)
		return 1;
	/*
	 * A read that the publisher tore (it changed the map under every one
	 * of the library's tries) says nothing about pc: the next stop there
	 * reads again.  Only a whole read that lacks pc settles it.
	 */
	if (!torn)
		live.unresolved[live.nunresolved++ % UNRESOLVED] = pc;
	return 0;
}

void attach_jit_close(void)
{
	if (!live.pid)
		return;
	retire_remote();
	jit_lists_close(&live.jit);
	sw_codemap_synchronize(prof.map);
	for (size_t k = 0; k < live.nkept; k++)
		sw_remote_free(live.kept[k]);
	prof.method_name = NULL;
	prof.jit_code_name = NULL;
	memset(&live, 0, sizeof live);
}
