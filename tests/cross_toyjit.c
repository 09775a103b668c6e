/*
 * cross_toyjit.c - the toy-JIT tests as a plain C program, for the hosts
 * `make check` cross-builds for (i386 run natively, or under qemu-i386
 * where the kernel cannot exec i386 programs; arm64 under qemu-user), where
 * there is no Check library.  See tests/cross-toyjit.sh.
 *
 * It runs the JIT's methods in several orders, walks from the stub's
 * helper with every flag set and checks each walk against the shadow stack;
 * then stops the code at every instruction of every method and checks a
 * walk from each stop.  The moving collector (toyjit_gc.h) runs in the
 * helper after the walks and, in a last sweep, at every instruction: every
 * run's result must be the expected one (where the back end allocates no
 * objects, the collections find no root and move nothing).  Each part prints "<arch> <part>: N passed, M failed";
 * the exit status is 0 only when nothing failed.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "toyjit.h"
#include "toyjit_check.h"
#include "toyjit_async.h"
#include "toyjit_gc.h"

static __thread sw_frame *frame_head;

struct tally {
	unsigned passed, failed, reported;
};

static struct {
	sw_thread thread;
	sw_memory memory;
	toyjit_walk *walk;
	struct tally *tally;
	const char *what;
	unsigned depth;
	int pinvoke_at;
} g;

static void fail(struct tally *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Count a failure; describe the first few. */
static void fail(struct tally *t, const char *fmt, ...)
{
	va_list ap;

	t->failed++;
	if (t->reported++ >= 10)
		return;
	printf("  FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

static const unsigned all_flags[] = {
	0,
	SW_WALK_FUNCTIONSONLY,
	SW_WALK_QUICKUNWIND,
	SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_FUNCTIONSONLY | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_QUICKUNWIND | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_LIGHTUNWIND,
	SW_WALK_ADDRESSES_ONLY | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_HANDLESKIPPEDFRAMES | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
};
#define NFLAGS (sizeof(all_flags) / sizeof(all_flags[0]))

/* The stub's helper: one walk per flag set, each checked at once (printing waits). */
static struct {
	sw_status status[NFLAGS];
	char msg[NFLAGS][512];
	sw_walk_cache bt_cache;    /* kept from run to run, as a profiler's */
	int calls;
	toyjit_gc_stats gc;
	sw_status gc_status;
} h;

static void helper(toyjit *jit, sw_transition_frame *tf)
{
	(void)tf;
	h.calls++;
	for (unsigned i = 0; i < NFLAGS; i++) {
		toyjit_walk_record(&g.thread, all_flags[i], g.walk);
		h.status[i] = toyjit_walk_check(jit, g.walk, h.msg[i], sizeof(h.msg[i]), NULL);
		/* The profiler's walk of the same stack gives the same frames. */
		if (h.status[i] == SW_OK)
			h.status[i] = toyjit_backtrace_check(&g.thread, NULL, g.walk, &h.bt_cache, h.msg[i],
			                                     sizeof(h.msg[i]));
	}
	/* The program's objects cannot reach the frames under an InlinedCallFrame: no GC then. */
	h.gc_status = jit->run_pinvoke_at < 0 ? toyjit_gc_collect(jit, &g.thread, NULL, &h.gc) : SW_OK;
}

static void run(toyjit *jit, unsigned depth, int pinvoke_at, const char *what, struct tally *t)
{
	int calls = h.calls;
	sw_status st = toyjit_run(jit, depth, pinvoke_at);

	if (st != SW_OK || h.calls != calls + 1 || frame_head != NULL) {
		fail(t, "%s, depth %u, P/Invoke at %d: %s", what, depth, pinvoke_at,
		     st != SW_OK ? sw_strerror(st) : "the helper did not run once, or a Frame stayed linked");
		return;
	}
	for (unsigned i = 0; i < NFLAGS; i++) {
		if (h.status[i] == SW_OK)
			t->passed++;
		else
			fail(t, "%s, depth %u, P/Invoke at %d, flags %#x: %s", what, depth, pinvoke_at,
			     all_flags[i], h.msg[i]);
	}
	if (h.gc_status != SW_OK)
		fail(t, "%s, depth %u: the collection: %s: %s (%#llx)", what, depth,
		     sw_strerror(h.gc_status), h.gc.what ? h.gc.what : "", h.gc.value);
	else if (jit->result != toyjit_expected_result(jit, depth, 0))
		fail(t, "%s, depth %u, P/Invoke at %d: result %#llx, expected %#llx", what, depth,
		     pinvoke_at, (unsigned long long)jit->result,
		     (unsigned long long)toyjit_expected_result(jit, depth, 0));
	else
		t->passed++;
}

static const toyjit_shape orders[][TOYJIT_NSHAPES] = {
	{ 0, 1, 2, 3, 4 },
	{ 4, 3, 2, 1, 0 },
	{ 1, 1, 3, 3, 2 },
	{ 3, 4, 0, 2, 1 },
};
#define NORDERS (sizeof(orders) / sizeof(orders[0]))

static toyjit *make_jit(sw_codemap *map, const toyjit_shape *shapes, unsigned n,
                        toyjit_helper_fn fn, struct tally *t)
{
	toyjit *jit = NULL;
	sw_status st = toyjit_create(&jit, map, &frame_head, shapes, n, fn, NULL);

	if (st != SW_OK) {
		fail(t, "toyjit_create: %s", sw_strerror(st));
		return NULL;
	}
	return jit;
}

/* Synchronous walks from the stub, and the metadata of every method. */
static void sync_walks(sw_codemap *map, struct tally *t)
{
	static const unsigned depths[] = { 1, 2, 3, 5, 10, 17, 64 };
	char what[64];

	for (size_t o = 0; o < NORDERS; o++) {
		toyjit *jit = make_jit(map, orders[o], TOYJIT_NSHAPES, helper, t);

		if (!jit)
			return;
		for (unsigned k = 0; k < jit->nmethods; k++) {
			const toyjit_method *m = &jit->methods[k];

			if (sw_swu_validate(m->swu, m->swu_size) == SW_OK)
				t->passed++;
			else
				fail(t, "%s: its SWU blob does not validate", m->name);
		}
		snprintf(what, sizeof(what), "order %zu", o);
		for (size_t i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
			unsigned d = depths[i];

			run(jit, d, -1, what, t);
			if (d >= 2) {
				run(jit, d, 0, what, t);
				run(jit, d, (int)(d - 2), what, t);
				run(jit, d, (int)(d - 1) / 2, what, t);
			}
		}
		toyjit_destroy(jit);
	}
}

static void quiet_helper(toyjit *jit, sw_transition_frame *tf)
{
	(void)jit;
	(void)tf;
}

/* Every instruction of every method, in two orders. */
static void every_offset(sw_codemap *map, struct tally *t, unsigned *offsets)
{
	static const unsigned flags[] = {
		SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
		SW_WALK_FUNCTIONSONLY,
	};

	for (size_t o = 0; o < 2; o++) {
		toyjit *jit = make_jit(map, orders[o], TOYJIT_NSHAPES, quiet_helper, t);
		toyjit_async_stats st;
		sw_status r;

		if (!jit)
			return;
		r = toyjit_async_check_all(jit, &g.thread, flags, 2, stdout, 10, &st);
		*offsets += st.offsets;
		t->passed += st.passed;
		t->failed += st.failed;
		if (r != SW_OK && r != SW_E_MISMATCH)
			fail(t, "the sweep stopped: %s", sw_strerror(r));
		toyjit_destroy(jit);
	}
}

/* A collection at every instruction of every method, in one order. */
static void every_offset_gc(sw_codemap *map, struct tally *t, toyjit_async_stats *st)
{
	static const unsigned flags[] = { SW_WALK_NOTIFY_ON_U2M_TRANSITIONS };
	toyjit *jit = make_jit(map, orders[0], TOYJIT_NSHAPES, quiet_helper, t);
	sw_status r;

	if (!jit)
		return;
	r = toyjit_async_gc_all(jit, &g.thread, flags, 1, stdout, 10, st);
	t->passed += st->passed;
	t->failed += st->failed + st->results_bad + st->gc.bad;
	if (r != SW_OK && r != SW_E_MISMATCH)
		fail(t, "the sweep stopped: %s", sw_strerror(r));
	toyjit_destroy(jit);
}

int main(void)
{
	const toyjit_host *host = toyjit_host_info();
	struct tally sync = { 0 }, async = { 0 }, gc = { 0 };
	toyjit_async_stats gst;
	const char *arch;
	sw_codemap *map = NULL;
	unsigned offsets = 0;
	sw_status st;

	sw_walk_cache_init(&h.bt_cache);

	if (!host) {
		printf("cross-toyjit: the toy JIT has no back end for this host\n");
		return 1;
	}
	arch = sw_arch_name(host->arch);
	g.walk = malloc(sizeof(*g.walk));
	if (!g.walk || (st = sw_codemap_create(&map)) != SW_OK ||
	    (st = sw_thread_init_self(&g.thread, map, &g.memory, &frame_head)) != SW_OK) {
		printf("cross-toyjit: setup failed: %s\n", g.walk ? sw_strerror(st) : "out of memory");
		return 1;
	}
	setvbuf(stdout, NULL, _IOLBF, 0);

	sync_walks(map, &sync);
	printf("%s toy-JIT walks from the stub: %u passed, %u failed\n", arch, sync.passed, sync.failed);
	every_offset(map, &async, &offsets);
	printf("%s toy-JIT every instruction offset (%u offsets): %u passed, %u failed\n",
	       arch, offsets, async.passed, async.failed);

	memset(&gst, 0, sizeof(gst));
	every_offset_gc(map, &gc, &gst);
	printf("%s toy-JIT every instruction offset with a collection (%u offsets, %u collections, "
	       "%u objects moved, %u roots updated, %u runs, %u wrong results): %u passed, %u failed\n",
	       arch, gst.offsets, gst.gc_stops, gst.gc.moved, gst.gc.roots, gst.results,
	       gst.results_bad, gc.passed, gc.failed);
	printf("%s toy-JIT collections from the stub: %u, %u objects moved, %u roots updated\n",
	       arch, h.gc.collections, h.gc.moved, h.gc.roots);

	sw_codemap_destroy(map);
	free(g.walk);
	return sync.failed || async.failed || gc.failed || sync.passed == 0 || async.passed == 0 ||
	       gc.passed == 0 ? 1 : 0;
}
