/*
 * toyjit_remote.c - the toy JIT seen from outside: a runtime that
 * publishes its code map and its thread's Frame list for debuggers
 * (remote.h, stackwalk-remote(5)), and stops where a debugger can look.
 *
 *   toyjit-remote [-d DEPTH] [-p FRAME | -P] [-m] [-a | -b]
 *
 * It runs a chain of DEPTH managed frames (P/Invoke at FRAME) and, in the
 * helper at the bottom, walks its own stack, checks the walk against the
 * shadow stack, prints what it found ("method NAME PC" and "frame TYPE
 * ADDRESS" lines, innermost first: what a debugger must find too) and
 * "ready PID TID", and then waits, forever, for the debugger to look
 * (swstack -p PID, or gcore and swstack --core) and for its end (a
 * signal).  Meanwhile a second thread adds and removes methods without
 * pause, so that the debugger reads a code map that is changing.  With
 * -m, that thread stops and the publisher is left as if stopped in the
 * middle of an update (its generation odd): a core then is one caught
 * mid-update.  With -t that thread instead moves the generation on
 * without pause, until SIGUSR1, so that a reader of the running process
 * finds every read torn until then.  With -a it aborts instead of waiting: under qemu-user,
 * where no debugger can attach to the program, qemu writes its core.
 * With -b it burns CPU in the helper instead, for a profiler (swprof -p)
 * to sample: every sample's stack is the one printed.
 * Every back end of the toy JIT (x86-64, i686, arm64) builds it; see
 * toyjit-remote(1).
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "toyjit.h"
#include "toyjit_check.h"

#define CHURN_BASE 0x100000000000ull    /* where the churning methods "are": no real code */
#define CHURN_SLOTS 64

static __thread sw_frame *frame_head;   /* the thread's Frame list */

struct remote {
	toyjit *jit;
	sw_codemap *map;
	sw_publisher *pub;
	sw_thread thread;
	sw_memory memory;
	toyjit_walk *walk;
	int mid_update;
	int tear;
	int abort_when_ready;
	int busy_when_ready;
	volatile int churn_stop;
};

/*
 * Published names: a toy-JIT method's handle is its descriptor, name first
 * (the publisher asks while toyjit_create registers them); the churning
 * methods have none and are named by address.
 */
static void method_name(void *data, const sw_code_info *info, char *buf, size_t cap)
{
	(void)data;
	if (info->method)
		snprintf(buf, cap, "%s", ((const toyjit_method *)info->method)->name);
	else
		snprintf(buf, cap, "churn_%" PRIx64, info->start);
}

static volatile sig_atomic_t tear_stop;

static void stop_tearing(int sig)
{
	(void)sig;
	tear_stop = 1;
}

/*
 * -t: as a publisher that never stops updating.  TEARERS threads move
 * the generation by two (its parity kept: the snapshot stays whole) as
 * fast as they run, so a reader's generation before and after differ.
 * Several, and some more methods to read (TEAR_METHODS), so that a read
 * is torn even when the machine is busy and each thread runs only now
 * and then; not so many methods that the reader's tries take seconds.
 */
#define TEARERS 4
#define TEAR_METHODS 256

static void *tear(void *arg)
{
	(void)arg;
	while (!tear_stop)
		__atomic_add_fetch(&sw_published_codemap.generation, 2, __ATOMIC_SEQ_CST);
	return NULL;
}

static int start_tearing(struct remote *r)
{
	const toyjit_method *model = &r->jit->methods[0];
	pthread_t t;

	if (signal(SIGUSR1, stop_tearing) == SIG_ERR)
		return -1;
	for (uint64_t i = 0; i < TEAR_METHODS; i++) {
		sw_code_info info = { NULL, CHURN_BASE + i * 0x1000, model->size, model->swu,
		                      (uint32_t)model->swu_size, 0, NULL };

		sw_codemap_add(r->map, &info);
	}
	for (int k = 0; k < TEARERS; k++)
		if (pthread_create(&t, NULL, tear, NULL) != 0)
			return -1;
	return 0;
}

/* Methods come and go all the time: a debugger reads the map while it changes. */
static void *churn(void *arg)
{
	struct remote *r = arg;
	const toyjit_method *model = &r->jit->methods[0];
	struct timespec pause_between = { 0, 200000 };
	unsigned i = 0;

	while (!r->churn_stop) {
		sw_code_info info = { NULL, CHURN_BASE + (uint64_t)(i % CHURN_SLOTS) * 0x1000, model->size,
		                      model->swu, (uint32_t)model->swu_size, 0, NULL };

		if (sw_codemap_add(r->map, &info) == SW_E_EXISTS)
			sw_codemap_remove(r->map, info.start);
		if (++i % CHURN_SLOTS == 0)
			sw_codemap_synchronize(r->map);
		/* Pacing, not timing: the machine is shared. */
		nanosleep(&pause_between, NULL);
	}
	return NULL;
}

/* What the runtime's own walk found: the answer a debugger's must give. */
static void print_walk(const struct remote *r)
{
	uint64_t last_frame = 0;

	for (size_t k = 0; k < r->walk->n && k < TOYJIT_WALK_MAX; k++) {
		const toyjit_walked *f = &r->walk->frames[k];
		const toyjit_method *m;

		if (f->state == SW_STATE_FRAMELESS) {
			m = toyjit_method_of(r->jit, f->method);
			printf("method %s 0x%" PRIx64 "\n", m ? m->name : "(unknown)", f->ip);
		} else if ((f->state == SW_STATE_FRAME || f->state == SW_STATE_SKIPPED_FRAME) &&
		           f->frame != last_frame) {
			/* An active InlinedCallFrame comes twice (FRAME, then SKIPPED): one line. */
			printf("frame %" PRIu32 " 0x%" PRIx64 "\n", f->frame_type, f->frame);
			last_frame = f->frame;
		}
	}
}

/* The stub calls this: walk, check, tell, and wait for the debugger. */
static void stop_helper(toyjit *jit, sw_transition_frame *tf)
{
	struct remote *r = jit->user;
	char msg[512];
	sw_status st;

	(void)tf;
	toyjit_walk_record(&r->thread, 0, r->walk);
	st = toyjit_walk_check(jit, r->walk, msg, sizeof msg, NULL);
	if (st != SW_OK) {
		printf("shadow check: MISMATCH: %s\n", msg);
		fflush(stdout);
		exit(1);
	}
	print_walk(r);
	if (r->mid_update) {
		r->churn_stop = 1;
		/* As if the publisher stopped between its first and last write. */
		__atomic_or_fetch(&sw_published_codemap.generation, 1, __ATOMIC_SEQ_CST);
	}
	printf("ready %ld %ld\n", (long)getpid(), (long)syscall(SYS_gettid));
	fflush(stdout);
	if (r->abort_when_ready)
		abort();
	if (r->busy_when_ready) {
		volatile uint64_t spins = 0;

		for (;;)
			spins++;
	}
	for (;;)
		pause();
}

static void usage(FILE *out)
{
	fprintf(out, "usage: toyjit-remote [-d DEPTH] [-p FRAME | -P] [-m | -t] [-a | -b]\n"
	        "  -d DEPTH  managed frames on the stack (default 12)\n"
	        "  -p FRAME  frame that makes the P/Invoke, 0 = outermost (default 4)\n"
	        "  -P        no P/Invoke\n"
	        "  -m        leave the published map as if caught mid-update\n"
	        "  -t        move the published generation on without pause until SIGUSR1\n"
	        "  -a        abort when ready (a core from qemu-user) instead of waiting\n"
	        "  -b        burn CPU in the helper when ready (for a profiler) instead of waiting\n");
}

int main(int argc, char **argv)
{
	toyjit_shape shapes[TOYJIT_NSHAPES];
	struct remote r;
	int depth = 12, pinvoke_at = 4, opt;
	pthread_t churner;
	sw_status st;

	/* Every shape of the host's back end, in order. */
	for (unsigned k = 0; k < TOYJIT_NSHAPES; k++)
		shapes[k] = k;
	memset(&r, 0, sizeof r);
	while ((opt = getopt(argc, argv, "d:p:Pmtabh")) != -1) {
		switch (opt) {
		case 'd': depth = atoi(optarg); break;
		case 'p': pinvoke_at = atoi(optarg); break;
		case 'P': pinvoke_at = -1; break;
		case 'm': r.mid_update = 1; break;
		case 't': r.tear = 1; break;
		case 'a': r.abort_when_ready = 1; break;
		case 'b': r.busy_when_ready = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	if (r.mid_update && r.tear) {
		usage(stderr);
		return 2;
	}
	if (depth < 1 || depth > TOYJIT_MAX_DEPTH || pinvoke_at >= depth - 1) {
		fprintf(stderr, "toyjit-remote: need 1 <= DEPTH <= %d and FRAME < DEPTH - 1\n",
		        TOYJIT_MAX_DEPTH);
		return 2;
	}
	/* Published before the JIT emits anything: the publisher hears of every method. */
	if (!(r.walk = malloc(sizeof *r.walk)) || (st = sw_codemap_create(&r.map)) != SW_OK ||
	    (st = sw_publisher_create(&r.pub, method_name, &r)) != SW_OK ||
	    (st = sw_publisher_attach(r.pub, r.map)) != SW_OK ||
	    (st = toyjit_create(&r.jit, r.map, &frame_head, shapes, TOYJIT_NSHAPES, stop_helper, &r)) != SW_OK ||
	    (st = sw_thread_init_self(&r.thread, r.map, &r.memory, &frame_head)) != SW_OK ||
	    (st = sw_publisher_thread(r.pub, (uint64_t)syscall(SYS_gettid),
	                              (uint64_t)(uintptr_t)&frame_head, 0, 0)) != SW_OK ||
	    (st = sw_publisher_status(r.pub)) != SW_OK) {
		fprintf(stderr, "toyjit-remote: setup failed: %s\n", r.walk ? sw_strerror(st) : "out of memory");
		return 1;
	}
	if (r.tear ? start_tearing(&r) != 0 : pthread_create(&churner, NULL, churn, &r) != 0) {
		fprintf(stderr, "toyjit-remote: no churning or tearing threads\n");
		return 1;
	}
	st = toyjit_run(r.jit, (unsigned)depth, pinvoke_at);
	/* The helper never returns: only a failed run gets here. */
	fprintf(stderr, "toyjit-remote: the run failed: %s\n", sw_strerror(st));
	return 1;
}
