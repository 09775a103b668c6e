/*
 * check_stress.c - the code map under concurrent change, with walks from
 * threads and from signal handlers.
 *
 * Writer threads remove and re-add methods continuously; walker threads
 * walk stacks made of those methods and look up random addresses (one at
 * a time and in batches), and a signaller interrupts the walkers with
 * SIGUSR1 at random moments, whose handler walks and looks up a batch too
 * (possibly inside an interrupted walk's or batch's read section).
 *
 * Every method has an identity a reader can check: method slot s lives at
 * CODE_BASE + s * SLOT_SPAN, and its n-th incarnation has a handle
 * encoding (s, n), a code size that depends on both, and an SWU blob
 * whose header repeats that size.  So whatever a lookup or a walk returns
 * must be the method at that address in some incarnation, with its own
 * blob: a freed blob (ASan reports it), another method's, or a wrong frame
 * fails the test.  The frame sizes depend on the slot only, so a walk is
 * exact until it meets a slot that is momentarily empty, where it stops:
 * every walk's frames are a prefix of the stack's frames.
 *
 * The test runs for STRESS_SECONDS (default 2) seconds.  It runs in every
 * make check, and alone under ThreadSanitizer in a --enable-tsan build.
 */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <stackwalk.h>

#define NSLOTS      96
#define SLOT_SPAN   0x1000u
#define CODE_BASE   0x0000100000000000ull
#define STACK_SIZE  0x10000u
#define STACK_BASE  0x0000200000000000ull
#define MAX_DEPTH   12
#define NWRITERS    2
#define NWALKERS    3
#define HANDLE_TAG  0x5157ull       /* in the top 16 bits of every handle */

/* ---- identities ------------------------------------------------------ */

static uint64_t slot_start(unsigned slot)
{
	return CODE_BASE + (uint64_t)slot * SLOT_SPAN;
}

static uint32_t slot_alloc(unsigned slot)
{
	return 8 * (2 + slot % 8);
}

/* Incarnation n of slot s: its code size (at least 64, below SLOT_SPAN). */
static uint32_t method_size(unsigned slot, uint32_t gen)
{
	return 64 + 16 * ((slot * 7u + gen * 13u) % 200);
}

static void *method_handle(unsigned slot, uint32_t gen)
{
	return (void *)(uintptr_t)(HANDLE_TAG << 48 | (uint64_t)slot << 32 | gen);
}

/* The offset of every frame's IP: in the body whatever the incarnation. */
static uint32_t body_offset(unsigned slot)
{
	return 8 + slot % 16;
}

/*
 * sub rsp, alloc (ends at 4) | body | add rsp, alloc; ret (the last 5
 * bytes).  At a body IP: CFA = rsp + alloc + 8, the return address at
 * CFA - 8.
 */
static size_t build_blob(sw_swu_builder *b, unsigned slot, uint32_t gen, uint8_t *buf, size_t cap)
{
	uint32_t size = method_size(slot, gen), alloc = slot_alloc(slot);
	size_t len = 0;

	sw_swu_builder_reset(b);
	if (sw_swu_alloc_stack(b, 4, alloc) != SW_OK || sw_swu_end_prolog(b, 4) != SW_OK ||
	    sw_swu_epilog_begin(b, size - 5) != SW_OK || sw_swu_free_stack(b, size - 1, alloc) != SW_OK ||
	    sw_swu_epilog_end(b, size) != SW_OK || sw_swu_finish(b, size, buf, cap, &len) != SW_OK)
		return 0;
	return len;
}

/* ---- what readers check ---------------------------------------------- */

/* Failures are counted; the first is described (from any thread or handler). */
static atomic_uint failures;
static atomic_flag described = ATOMIC_FLAG_INIT;
static char first_failure[256];

static void report(const char *what, uint64_t ip, uint64_t value)
{
	if (atomic_fetch_add(&failures, 1) == 0 && !atomic_flag_test_and_set(&described))
		snprintf(first_failure, sizeof first_failure, "%s (ip %#" PRIx64 ", %#" PRIx64 ")",
		         what, ip, value);
}

/* A lookup's result for `ip`: the method there, in some incarnation, with its own blob. */
static int check_info(uint64_t ip, const sw_code_info *ci)
{
	uint64_t h = (uintptr_t)ci->method;
	unsigned slot = (unsigned)(h >> 32 & 0xffff);
	uint32_t gen = (uint32_t)h;
	sw_swu_header hdr;

	if (h >> 48 != HANDLE_TAG || slot >= NSLOTS) {
		report("not a method handle", ip, h);
		return 0;
	}
	if (ci->start != slot_start(slot) || ci->size != method_size(slot, gen) ||
	    ip < ci->start || ip - ci->start >= ci->size) {
		report("a method that does not contain the address", ip, h);
		return 0;
	}
	if (sw_swu_decode_header(ci->unwind, ci->unwind_size, &hdr) != SW_OK ||
	    hdr.code_size != ci->size) {
		report("another method's SWU blob", ip, h);
		return 0;
	}
	return 1;
}

/* ---- the walked stacks ----------------------------------------------- */

struct walker {
	pthread_t tid;
	unsigned index;
	const sw_codemap *map;
	uint8_t *stack;
	sw_memory mem;
	sw_thread thread;
	sw_context seed;
	unsigned depth;
	uint64_t ip[MAX_DEPTH], sp[MAX_DEPTH];
	uint64_t rng;
	/* Counted by the walker and by its signal handler. */
	atomic_ulong walks, signal_walks, lookups, complete;
	/* IPs looked up in batches (sw_codemap_find_batch), and those found. */
	atomic_ulong batched, batch_found;
	/*
	 * sw_backtrace's rule tables, kept while the writer removes and adds
	 * methods under them: the walker's, and its signal handler's (which
	 * may interrupt a walk using the first).
	 */
	sw_walk_cache bt_cache[2];
	atomic_ulong bt_complete;
};

static uint64_t next_random(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static void put64(struct walker *w, uint64_t addr, uint64_t v)
{
	memcpy(w->stack + (addr - (STACK_BASE + w->index * (uint64_t)STACK_SIZE)), &v, 8);
}

/* An x64 stack of `depth` frames of random slots; the outermost returns to 0. */
static void build_stack(struct walker *w, sw_codemap *map)
{
	uint64_t base = STACK_BASE + w->index * (uint64_t)STACK_SIZE, sp = base + 512;

	w->stack = calloc(1, STACK_SIZE);
	ck_assert_ptr_nonnull(w->stack);
	w->map = map;
	w->depth = 4 + (unsigned)(next_random(&w->rng) % (MAX_DEPTH - 4));
	for (unsigned i = 0; i < w->depth; i++) {
		unsigned slot = (unsigned)(next_random(&w->rng) % NSLOTS);

		w->ip[i] = slot_start(slot) + body_offset(slot);
		w->sp[i] = sp;
		sp += slot_alloc(slot) + 8;         /* the caller's SP: this frame's CFA */
		if (i > 0)
			put64(w, w->sp[i - 1] + slot_alloc((unsigned)((w->ip[i - 1] - CODE_BASE) / SLOT_SPAN)),
			      w->ip[i]);
	}
	put64(w, sp - 8, 0);
	ck_assert_int_eq(sw_memory_init_buffer(&w->mem, w->stack, STACK_SIZE, base), SW_OK);
	ck_assert_int_eq(sw_thread_init(&w->thread, SW_ARCH_X64, map, &w->mem, 0, base,
	                                base + STACK_SIZE), SW_OK);
	sw_context_init(&w->seed, SW_ARCH_X64);
	sw_context_set(&w->seed, SW_X64_RIP, w->ip[0]);
	sw_context_set(&w->seed, SW_X64_RSP, w->sp[0]);
	sw_context_set(&w->seed, SW_X64_RBP, 0x1234);
}

struct walk_state {
	const struct walker *w;
	unsigned n;
};

/* Each frame must be the stack's next frame, with its own method. */
static sw_walk_action check_frame(const sw_crawl_frame *cf, void *data)
{
	struct walk_state *ws = data;
	const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);
	const sw_code_info *ci = sw_crawl_frame_code_info(cf);
	uint64_t ip = rd->cur.regs[SW_X64_RIP], sp = rd->cur.regs[SW_X64_RSP];

	if (sw_crawl_frame_state(cf) != SW_STATE_FRAMELESS) {
		/* The seed's method removed: the walk may report native code. */
		if (ws->n != 0 || sw_crawl_frame_state(cf) != SW_STATE_INITIAL_NATIVE)
			report("a frame of an unexpected kind", ip, sw_crawl_frame_state(cf));
		return SW_ABORT;
	}
	if (ws->n >= ws->w->depth || ip != ws->w->ip[ws->n] || sp != ws->w->sp[ws->n]) {
		report("a frame that is not on the stack", ip, sp);
		return SW_ABORT;
	}
	if (!ci || !check_info(ip, ci))
		return SW_ABORT;
	if (sw_crawl_frame_method(cf) != ci->method)
		report("the crawl frame's method is not its code info's", ip, (uintptr_t)ci->method);
	ws->n++;
	return SW_CONTINUE;
}

/* sw_backtrace of the same stack: a prefix of its frames, whatever the writer did meanwhile. */
static void backtrace_once(struct walker *w, int in_handler)
{
	uint64_t ip[MAX_DEPTH + 1], sp[MAX_DEPTH + 1];
	int n = sw_backtrace(&w->thread, &w->seed, 0, 0, ip, sp, MAX_DEPTH + 1,
	                     &w->bt_cache[in_handler != 0], NULL);

	if (n < 0 || n > (int)w->depth) {
		report("sw_backtrace gave an impossible count", (uint64_t)n, w->depth);
		return;
	}
	for (int i = 0; i < n; i++)
		if (ip[i] != w->ip[i] || sp[i] != w->sp[i]) {
			report("sw_backtrace gave a frame that is not on the stack", ip[i], sp[i]);
			return;
		}
	if (n == (int)w->depth)
		atomic_fetch_add(&w->bt_complete, 1);
}

static void walk_once(struct walker *w, int in_handler)
{
	struct walk_state ws = { w, 0 };
	sw_walk_error err;
	sw_walk_action r;

	r = sw_walk_frames(&w->thread, &w->seed, 0, check_frame, &ws, 0, &err);
	/* A walk that met an empty slot stops early (an error, or unmanaged code). */
	if (r == SW_CONTINUE && ws.n == w->depth)
		atomic_fetch_add(&w->complete, 1);
	backtrace_once(w, in_handler);
	atomic_fetch_add(in_handler ? &w->signal_walks : &w->walks, 1);
}

static void lookup_once(struct walker *w, uint64_t *rng)
{
	uint64_t ip = CODE_BASE + next_random(rng) % ((uint64_t)NSLOTS * SLOT_SPAN);
	unsigned token = sw_codemap_read_begin(w->map);
	sw_code_info ci;

	if (sw_codemap_find(w->map, ip, &ci) == SW_OK)
		(void)check_info(ip, &ci);
	sw_codemap_read_end(w->map, token);
	atomic_fetch_add(&w->lookups, 1);
}

/*
 * Random addresses in one sw_codemap_find_batch call: each one found must
 * be the method there, as a lone lookup's; one that is not may lie in a
 * slot that is empty just then.  The read section keeps the blobs to check.
 */
#define BATCH 24

static void batch_once(struct walker *w, uint64_t *rng)
{
	uint64_t ips[BATCH];
	sw_code_info out[BATCH];
	size_t found = 0, seen = 0;
	unsigned token;

	for (unsigned i = 0; i < BATCH; i++)
		ips[i] = CODE_BASE + next_random(rng) % ((uint64_t)NSLOTS * SLOT_SPAN);
	token = sw_codemap_read_begin(w->map);
	if (sw_codemap_find_batch(w->map, ips, BATCH, out, &found) != SW_OK)
		report("sw_codemap_find_batch failed", ips[0], 0);
	for (unsigned i = 0; i < BATCH; i++)
		if (out[i].size != 0 && check_info(ips[i], &out[i]))
			seen++;
	sw_codemap_read_end(w->map, token);
	if (seen != found)
		report("sw_codemap_find_batch counted another number of methods than it gave", seen, found);
	atomic_fetch_add(&w->batched, BATCH);
	atomic_fetch_add(&w->batch_found, found);
}

static _Thread_local struct walker *self;

static void on_sigusr1(int sig)
{
	(void)sig;
	if (self) {
		/* Its own sequence: the walker's may be half way through a step. */
		uint64_t rng = self->ip[0] ^ atomic_load(&self->signal_walks);

		walk_once(self, 1);
		batch_once(self, &rng);
	}
}

static atomic_int stop, stop_signals;

static void *walker_main(void *arg)
{
	struct walker *w = arg;
	uint64_t rng = 0xa11ce + w->index;

	self = w;
	while (!atomic_load(&stop)) {
		walk_once(w, 0);
		for (int i = 0; i < 8; i++)
			lookup_once(w, &rng);
		batch_once(w, &rng);
	}
	return NULL;
}

static void *signaller_main(void *arg)
{
	struct walker *ws = arg;
	uint64_t rng = 0x516e41;
	struct timespec ts = { 0, 0 };

	while (!atomic_load(&stop_signals)) {
		pthread_kill(ws[next_random(&rng) % NWALKERS].tid, SIGUSR1);
		ts.tv_nsec = (long)(next_random(&rng) % 200000);
		nanosleep(&ts, NULL);
	}
	return NULL;
}

/* ---- writers --------------------------------------------------------- */

struct writer {
	unsigned index;
	sw_codemap *map;
	uint32_t gen[NSLOTS];
	uint8_t present[NSLOTS];
	unsigned long adds, removes;
	sw_status error;
};

static sw_status add_method(sw_codemap *map, sw_swu_builder *b, unsigned slot, uint32_t gen)
{
	uint8_t blob[256];
	sw_code_info info;
	size_t len = build_blob(b, slot, gen, blob, sizeof blob);

	if (!len)
		return SW_E_BADMETA;
	memset(&info, 0, sizeof info);
	info.method = method_handle(slot, gen);
	info.start = slot_start(slot);
	info.size = method_size(slot, gen);
	info.unwind = blob;
	info.unwind_size = (uint32_t)len;
	/* The map copies the blob: scribble on ours so a missing copy shows. */
	{
		sw_status st = sw_codemap_add(map, &info);

		memset(blob, 0xa5, sizeof blob);
		return st;
	}
}

static void *writer_main(void *arg)
{
	struct writer *wr = arg;
	sw_swu_builder *b;
	uint64_t rng = 0x3717e5 + wr->index;
	unsigned long ops = 0;
	sw_status st = SW_OK;

	if (sw_swu_builder_create(&b, SW_ARCH_X64) != SW_OK) {
		wr->error = SW_E_NOMEM;
		return NULL;
	}
	while (!atomic_load(&stop) && st == SW_OK) {
		/* Each writer owns the slots congruent to its index. */
		unsigned slot = (unsigned)(next_random(&rng) % (NSLOTS / NWRITERS)) * NWRITERS + wr->index;

		if (wr->present[slot]) {
			st = sw_codemap_remove(wr->map, slot_start(slot));
			wr->present[slot] = 0;
			wr->removes++;
		}
		if (st == SW_OK && next_random(&rng) % 4) {
			st = add_method(wr->map, b, slot, ++wr->gen[slot]);
			wr->present[slot] = st == SW_OK;
			wr->adds++;
		}
		if (++ops % 64 == 0)
			sw_codemap_synchronize(wr->map);
	}
	wr->error = st;
	sw_swu_builder_destroy(b);
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

START_TEST(test_stress)
{
	static struct walker walkers[NWALKERS];
	static struct writer writers[NWRITERS];
	const char *env = getenv("STRESS_SECONDS");
	double seconds = env && *env ? atof(env) : 2.0, start;
	sw_codemap *map;
	sw_swu_builder *b;
	pthread_t wtid[NWRITERS], signaller;
	struct sigaction sa;
	unsigned long walks = 0, signal_walks = 0, lookups = 0, complete = 0, adds = 0, removes = 0;
	unsigned long batched = 0, batch_found = 0;
	unsigned long bt_complete = 0;

	if (sizeof(void *) != 8)
		return;         /* the handles encode 64-bit identities */
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_swu_builder_create(&b, SW_ARCH_X64), SW_OK);
	memset(writers, 0, sizeof writers);
	for (unsigned i = 0; i < NWRITERS; i++) {
		writers[i].index = i;
		writers[i].map = map;
	}
	/* Every slot present to start with. */
	for (unsigned s = 0; s < NSLOTS; s++) {
		struct writer *wr = &writers[s % NWRITERS];

		ck_assert_int_eq(add_method(map, b, s, ++wr->gen[s]), SW_OK);
		wr->present[s] = 1;
	}
	sw_swu_builder_destroy(b);

	memset(walkers, 0, sizeof walkers);
	for (unsigned i = 0; i < NWALKERS; i++) {
		struct walk_state ws = { &walkers[i], 0 };

		walkers[i].index = i;
		walkers[i].rng = 0x57ac4 + i;
		sw_walk_cache_init(&walkers[i].bt_cache[0]);
		sw_walk_cache_init(&walkers[i].bt_cache[1]);
		build_stack(&walkers[i], map);
		/* Quiet first: the walk is exact. */
		ck_assert_int_eq(sw_walk_frames(&walkers[i].thread, &walkers[i].seed, 0, check_frame,
		                                &ws, 0, NULL), SW_CONTINUE);
		ck_assert_uint_eq(ws.n, walkers[i].depth);
		ck_assert_uint_eq(atomic_load(&failures), 0);
	}

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_sigusr1;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	ck_assert_int_eq(sigaction(SIGUSR1, &sa, NULL), 0);

	for (unsigned i = 0; i < NWALKERS; i++)
		ck_assert_int_eq(pthread_create(&walkers[i].tid, NULL, walker_main, &walkers[i]), 0);
	for (unsigned i = 0; i < NWRITERS; i++)
		ck_assert_int_eq(pthread_create(&wtid[i], NULL, writer_main, &writers[i]), 0);
	ck_assert_int_eq(pthread_create(&signaller, NULL, signaller_main, walkers), 0);

	start = now();
	while (now() - start < seconds && atomic_load(&failures) == 0)
		usleep(20000);
	atomic_store(&stop_signals, 1);
	pthread_join(signaller, NULL);
	atomic_store(&stop, 1);
	for (unsigned i = 0; i < NWRITERS; i++)
		pthread_join(wtid[i], NULL);
	for (unsigned i = 0; i < NWALKERS; i++)
		pthread_join(walkers[i].tid, NULL);
	signal(SIGUSR1, SIG_DFL);

	for (unsigned i = 0; i < NWALKERS; i++) {
		walks += atomic_load(&walkers[i].walks);
		signal_walks += atomic_load(&walkers[i].signal_walks);
		lookups += atomic_load(&walkers[i].lookups);
		complete += atomic_load(&walkers[i].complete);
		bt_complete += atomic_load(&walkers[i].bt_complete);
		batched += atomic_load(&walkers[i].batched);
		batch_found += atomic_load(&walkers[i].batch_found);
	}
	for (unsigned i = 0; i < NWRITERS; i++) {
		adds += writers[i].adds;
		removes += writers[i].removes;
		ck_assert_msg(writers[i].error == SW_OK, "writer %u: %s", i,
		              sw_strerror(writers[i].error));
	}
	printf("stress: %.1f s: %lu adds, %lu removes; %lu walks (%lu complete), %lu in signal "
	       "handlers; %lu lookups, %lu in batches (%lu found); sw_backtrace complete %lu times\n",
	       now() - start, adds, removes, walks, complete, signal_walks, lookups, batched, batch_found,
	       bt_complete);
	ck_assert_msg(atomic_load(&failures) == 0, "%u failures; first: %s",
	              atomic_load(&failures), first_failure);
	/* It did stress something. */
	ck_assert_uint_gt(adds, 100);
	ck_assert_uint_gt(walks, 100);
	ck_assert_uint_gt(signal_walks, 10);
	ck_assert_uint_gt(complete, 0);
	ck_assert_uint_gt(bt_complete, 0);
	ck_assert_uint_gt(batch_found, 0);

	sw_codemap_destroy(map);
	for (unsigned i = 0; i < NWALKERS; i++)
		free(walkers[i].stack);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stress");
	TCase *tc = tcase_create("codemap");
	SRunner *sr;
	int failed;

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_stress);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
