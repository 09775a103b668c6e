/*
 * toyjit_demo.c - the project's demo: run the toy JIT, walk the stack from
 * inside it, print the frames and check them against the shadow stack.
 * See toyjit-demo(1).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "toyjit.h"
#include "toyjit_check.h"
#include "toyjit_gc.h"

static __thread sw_frame *frame_head;   /* this thread's Frame list */

struct demo {
	sw_thread thread;
	sw_memory memory;
	unsigned flags;
	toyjit_walk *walk;
	sw_status check;
	unsigned managed;
	char msg[512];
	int gc;                     /* -g: collect in the helper */
	int snapshot;               /* -S: also take a profiler's stack snapshot */
	int backtrace;              /* -b: also the IPs, as sw_backtrace gives them */
	toyjit_gc_stats gc_stats;
	sw_status gc_status;
	int quiet;                  /* the -r runs: the helper returns at once */
};

/* The funclet rules' view of a managed frame, as a tag. */
static const char *funclet_tag(const toyjit_walked *f)
{
	if (f->is_filter)
		return "  [filter funclet]";
	if (f->is_funclet)
		return "  [funclet]";
	if (f->is_parent_of_funclet)
		return f->report_gc ? "  [parent of funclet]" : "  [parent of funclet, no GC report]";
	return "";
}

static void print_frame(const toyjit *jit, const toyjit_walked *f, size_t k)
{
	const toyjit_method *m = f->method ? toyjit_method_of(jit, f->method) : NULL;
	const char *name = m ? m->name : f->method ? "(unknown)" : "";
	char where[64] = "";

	switch (f->state) {
	case SW_STATE_FRAME:
	case SW_STATE_SKIPPED_FRAME:
		snprintf(where, sizeof(where), "%s @%#llx",
		         f->frame_type == SW_FRAME_TRANSITION ? "TransitionFrame" :
		         f->frame_type == SW_FRAME_INLINED_CALL ? "InlinedCallFrame" : "Frame",
		         (unsigned long long)f->frame);
		printf("%3zu  %-14s %-22s %s\n", k, toyjit_state_name(f->state), name, where);
		return;
	case SW_STATE_NATIVE_MARKER:
		printf("%3zu  %-14s %-22s ip %#llx  sp %#llx  (%s)\n", k, toyjit_state_name(f->state),
		       "[native]", (unsigned long long)f->ip, (unsigned long long)f->sp,
		       toyjit_is_native(jit, f->ip) ? "the C caller's entry thunk" : "unmanaged code");
		return;
	default:
		printf("%3zu  %-14s %-22s ip %#llx  sp %#llx  +%#x  (%s)%s%s\n", k,
		       toyjit_state_name(f->state), name, (unsigned long long)f->ip,
		       (unsigned long long)f->sp, f->offset, sw_frame_trust_name((sw_frame_trust)f->trust),
		       f->no_frame_transition ? "  [no-frame transition]" : "", funclet_tag(f));
		return;
	}
}

/*
 * Under the thrower's funclet the shadow stack holds only the chain: check
 * what the funclet rules say instead.  The funclet must be reported as one
 * (unless the flags skip it) and the thrower as its parent.
 */
static sw_status check_funclet_walk(const toyjit *jit, struct demo *d)
{
	const toyjit_walk *w = d->walk;
	int funclet = 0, parent = 0;

	d->managed = 0;
	for (size_t k = 0; k < w->n && k < TOYJIT_WALK_MAX; k++) {
		const toyjit_walked *f = &w->frames[k];

		d->managed += f->state == SW_STATE_FRAMELESS;
		funclet += f->method == &jit->funclet && f->is_funclet;
		parent += f->method == &jit->thrower && f->is_parent_of_funclet;
	}
	if (w->result != SW_CONTINUE)
		snprintf(d->msg, sizeof(d->msg), "the walk did not complete");
	else if (parent != 1)
		snprintf(d->msg, sizeof(d->msg), "the thrower is not flagged as the funclet's parent");
	else if (funclet != !(d->flags & (SW_WALK_SKIPFUNCLETS | SW_WALK_FUNCTIONSONLY)))
		snprintf(d->msg, sizeof(d->msg), "the funclet is %sreported", funclet ? "" : "not ");
	else
		return SW_OK;
	return SW_E_MISMATCH;
}

/* A method handle is its toyjit_method: the name comes first. */
static const char *method_name(void *method)
{
	return method ? ((const toyjit_method *)method)->name : NULL;
}

/*
 * Under swprof (LD_PRELOAD=libswprof.so), hand it the code map so that the
 * samples walk the JIT's methods and name them; without it, nothing.
 */
static void tell_profiler(const sw_codemap *map)
{
	void (*use)(const sw_codemap *, const char *(*)(void *));

	*(void **)&use = dlsym(RTLD_DEFAULT, "swprof_use_codemap");
	if (use)
		use(map, method_name);
}

/* perf and gdb name a method from its handle: the descriptor's name. */
static void jit_method_name(void *data, const sw_code_info *info, char *buf, size_t cap)
{
	(void)data;
	snprintf(buf, cap, "%s", method_name(info->method));
}

/*
 * -j and -G: perf (perf-PID.map and jit-PID.dump in /tmp, or in
 * $SW_PERF_DIR) and gdb (the JIT interface) hear of every method the JIT
 * registers in the code map.  Attached before the JIT emits anything.
 */
static int attach_tools(sw_codemap *map, int perf, int gdb, sw_perf **pp, sw_gdbjit **gp)
{
	sw_status st;

	if (perf) {
		st = sw_perf_create(pp, SW_PERF_MAP | SW_PERF_JITDUMP, getenv("SW_PERF_DIR"),
		                    jit_method_name, NULL);
		if (st == SW_OK)
			st = sw_perf_attach(*pp, map);
		if (st != SW_OK) {
			fprintf(stderr, "toyjit-demo: perf files: %s\n", sw_strerror(st));
			return -1;
		}
	}
	if (gdb) {
		st = sw_gdbjit_create(gp, jit_method_name, NULL);
		if (st == SW_OK)
			st = sw_gdbjit_attach(*gp, map);
		if (st != SW_OK) {
			fprintf(stderr, "toyjit-demo: gdb JIT interface: %s\n", sw_strerror(st));
			return -1;
		}
	}
	return 0;
}

/*
 * The thunk and the stubs are not in the code map, but the JIT described
 * them: given directly, gdb's backtraces and perf's call graphs go on
 * through them to the C code below.
 */
static int add_native_code(const toyjit *jit, sw_perf *perf, sw_gdbjit *gdb)
{
	for (unsigned k = 0; k < jit->nnative; k++) {
		const toyjit_native_code *c = &jit->native[k];
		sw_code_info info;
		sw_status st = SW_OK;

		memset(&info, 0, sizeof(info));
		info.start = c->start;
		info.size = c->size;
		info.unwind = c->swu;
		info.unwind_size = (uint32_t)c->swu_size;
		info.flags = SW_CODE_NATIVE;
		if (perf)
			st = sw_perf_add(perf, &info, c->name);
		if (st == SW_OK && gdb)
			st = sw_gdbjit_add(gdb, &info, c->name);
		if (st != SW_OK) {
			fprintf(stderr, "toyjit-demo: %s: %s\n", c->name, sw_strerror(st));
			return -1;
		}
	}
	return 0;
}

/* How many methods the code map added and removed (-j, -G): a plain observer. */
struct registrations {
	unsigned added, removed;
};

static void count_registration(void *data, sw_codemap_event event, const sw_code_info *info)
{
	struct registrations *r = data;

	(void)info;
	if (event == SW_CODEMAP_ADDED)
		r->added++;
	else
		r->removed++;
}

/* Before the code goes away: the thunk and the stubs leave gdb. */
static void remove_native_code(const toyjit *jit, sw_gdbjit *gdb)
{
	for (unsigned k = 0; gdb && k < jit->nnative; k++)
		(void)sw_gdbjit_remove(gdb, jit->native[k].start);
}

/* Once the JIT has removed its methods (and gdb heard of it): stop observing. */
static void detach_tools(sw_codemap *map, sw_perf *perf, sw_gdbjit *gdb,
                         sw_codemap_observer *counter, const struct registrations *r)
{
	if (perf)
		(void)sw_perf_detach(perf);
	if (gdb)
		(void)sw_gdbjit_detach(gdb);
	if (counter->notify) {
		(void)sw_codemap_unobserve(map, counter);
		printf("tools: the code map added %u methods and removed %u\n", r->added, r->removed);
	}
}

/* What the tools met while the JIT registered its methods. */
static int tools_status(const toyjit *jit, sw_perf *perf, sw_gdbjit *gdb)
{
	sw_status st;

	if (add_native_code(jit, perf, gdb) != 0)
		return -1;
	if (perf) {
		if ((st = sw_perf_status(perf)) != SW_OK) {
			fprintf(stderr, "toyjit-demo: perf records: %s\n", sw_strerror(st));
			return -1;
		}
		printf("perf: %s, %s\n", sw_perf_path(perf, SW_PERF_MAP), sw_perf_path(perf, SW_PERF_JITDUMP));
	}
	if (gdb && (st = sw_gdbjit_status(gdb)) != SW_OK) {
		fprintf(stderr, "toyjit-demo: gdb JIT objects: %s\n", sw_strerror(st));
		return -1;
	}
	return 0;
}

/* A profiler's view: one line per managed method, one per unmanaged block. */
static sw_walk_action print_snapshot_frame(const sw_snapshot_frame *f, void *data)
{
	const toyjit *jit = data;
	const char *name = "[unmanaged]";

	for (unsigned i = 0; f->method && i < jit->nmethods; i++)
		if (f->method == (const void *)&jit->methods[i])
			name = jit->methods[i].name;
	if (f->method && !strcmp(name, "[unmanaged]"))
		name = "[Frame with a method]";
	printf("  %2u  %-22s ip 0x%" PRIx64 "\n", f->depth, name, f->ip);
	return SW_CONTINUE;
}

/*
 * -b: the profiler's walk, twice (the second with the rules the first left
 * in the table): printed, and checked against the walk just recorded.
 */
static sw_status backtrace_demo(struct demo *d, char *msg, size_t msg_size)
{
	static sw_walk_cache cache;
	uint64_t ips[TOYJIT_WALK_MAX];
	sw_walk_error err;
	sw_status st;
	int n;

	sw_walk_cache_init(&cache);
	if ((st = toyjit_backtrace_check(&d->thread, NULL, d->walk, &cache, msg, msg_size)) != SW_OK)
		return st;
	n = sw_backtrace(&d->thread, NULL, 0, d->flags, ips, NULL, TOYJIT_WALK_MAX, &cache, &err);
	if (n < 0)
		return (sw_status)n;
	printf("sw_backtrace: %d IPs (%s):", n, sw_strerror(err.status));
	for (int i = 0; i < n; i++)
		printf(" %#" PRIx64, ips[i]);
	printf("\n");
	/*
	 * And named, as a profiler names its samples: looked up together.  The
	 * walk began at the newest Frame, so every IP is a return address and
	 * is looked up at the byte before it (the call may end its method).
	 */
	{
		static sw_code_info found[TOYJIT_WALK_MAX];
		size_t hits;

		for (int i = 0; i < n; i++)
			ips[i] -= 1;
		if ((st = sw_codemap_find_batch(d->thread.codemap, ips, (size_t)n, found, &hits)) != SW_OK)
			return st;
		printf("sw_codemap_find_batch: %zu of %d found:", hits, n);
		for (int i = 0; i < n; i++)
			printf(" %s", found[i].size ? method_name(found[i].method) : "??");
		printf("\n");
	}
	return SW_OK;
}

/* The stub calls this with its TransitionFrame linked: walk, print, check, collect. */
static void demo_helper(toyjit *jit, sw_transition_frame *tf)
{
	struct demo *d = jit->user;

	(void)tf;
	if (d->quiet)
		return;
	toyjit_walk_record(&d->thread, d->flags, d->walk);
	printf("  #  state          method                 where\n");
	for (size_t k = 0; k < d->walk->n && k < TOYJIT_WALK_MAX; k++)
		print_frame(jit, &d->walk->frames[k], k);
	if (d->walk->result != SW_CONTINUE)
		printf("walk stopped: %s at depth %u\n", sw_strerror(d->walk->err.status), d->walk->err.depth);
	if (jit->funclet_active)
		d->check = check_funclet_walk(jit, d);
	else
		d->check = toyjit_walk_check(jit, d->walk, d->msg, sizeof(d->msg), &d->managed);
	if (d->backtrace && d->check == SW_OK)
		d->check = backtrace_demo(d, d->msg, sizeof(d->msg));
	if (d->snapshot) {
		sw_status st;

		printf("stack snapshot (DoStackSnapshot semantics):\n");
		st = sw_snapshot(&d->thread, NULL, 0, print_snapshot_frame, jit);
		if (st != SW_OK)
			printf("snapshot failed: %s\n", sw_strerror(st));
	}
	if (d->gc)
		d->gc_status = toyjit_gc_collect(jit, &d->thread, NULL, &d->gc_stats);
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: toyjit-demo [-d DEPTH] [-p FRAME | -P] [-e] [-g] [-q] [-f] [-s] [-S] [-b] [-v]\n"
	        "                   [-j] [-G] [-r RUNS]\n"
	        "  -d DEPTH  managed frames on the stack (default 12)\n"
	        "  -p FRAME  frame that makes the P/Invoke, 0 = outermost (default 4,\n"
	        "            or DEPTH - 2 on shallower stacks)\n"
	        "  -P        no P/Invoke\n"
	        "  -e        throw: the innermost method calls a thrower, whose catch\n"
	        "            funclet calls the stub (no P/Invoke)\n"
	        "  -g        run the moving collector after the walk and check the result\n"
	        "            (implies -P unless -e)\n"
	        "  -s        walk with SW_WALK_SKIPFUNCLETS\n"
	        "  -q        walk with SW_WALK_QUICKUNWIND\n"
	        "  -f        walk with SW_WALK_FUNCTIONSONLY\n"
	        "  -S        also print a profiler's stack snapshot (sw_snapshot)\n"
	        "  -b        also print the IPs sw_backtrace gives, named in one code map batch, and check them\n"
	        "  -v        also dump each method's SWU metadata\n"
	        "  -j        write /tmp/perf-PID.map and /tmp/jit-PID.dump for perf\n"
	        "            ($SW_PERF_DIR instead of /tmp for the jitdump)\n"
	        "  -G        register every method with gdb's JIT interface\n"
	        "  -r RUNS   then run the same chain RUNS more times without walking\n"
	        "            (something for a profiler to sample)\n");
}

int main(int argc, char **argv)
{
	static const toyjit_shape shapes[] = {
		TOYJIT_RBP_FRAME, TOYJIT_NO_FP, TOYJIT_BIG_FRAME, TOYJIT_MOV_SAVES, TOYJIT_OFFSET_FP
	};
	unsigned nshapes = sizeof(shapes) / sizeof(shapes[0]);
	int depth = 12, pinvoke_at = 4, pinvoke_given = 0, verbose = 0, throwing = 0, opt;
	int perf = 0, gdb = 0;
	long runs = 0;
	sw_perf *perf_files = NULL;
	sw_gdbjit *gdb_jit = NULL;
	struct registrations regs = { 0, 0 };
	sw_codemap_observer counter = { NULL, &regs, NULL };
	struct demo d;
	sw_codemap *map = NULL;
	toyjit *jit = NULL;
	sw_status st = SW_E_NOMEM;

	memset(&d, 0, sizeof(d));
	d.flags = SW_WALK_NOTIFY_ON_U2M_TRANSITIONS;
	d.check = SW_E_STATE;
	snprintf(d.msg, sizeof(d.msg), "the stub never called the helper");
	while ((opt = getopt(argc, argv, "d:p:PegqfsSbvjGr:h")) != -1) {
		switch (opt) {
		case 'd': depth = atoi(optarg); break;
		case 'p': pinvoke_at = atoi(optarg); pinvoke_given = 1; break;
		case 'P': pinvoke_at = -1; pinvoke_given = 1; break;
		case 'e': throwing = 1; break;
		case 'g': d.gc = 1; break;
		case 's': d.flags |= SW_WALK_SKIPFUNCLETS; break;
		case 'S': d.snapshot = 1; break;
		case 'b': d.backtrace = 1; break;
		case 'q': d.flags |= SW_WALK_QUICKUNWIND; break;
		case 'f': d.flags |= SW_WALK_FUNCTIONSONLY; break;
		case 'v': verbose = 1; break;
		case 'j': perf = 1; break;
		case 'G': gdb = 1; break;
		case 'r': runs = atol(optarg); break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	/*
	 * The collector needs a run without a P/Invoke: the toy JIT keeps
	 * references in callee-saved registers that an InlinedCallFrame loses.
	 */
	if (throwing || (d.gc && !pinvoke_given))
		pinvoke_at = -1, pinvoke_given = 1;
	if (d.gc && pinvoke_at >= 0) {
		fprintf(stderr, "toyjit-demo: -g needs a run without a P/Invoke (-P)\n");
		return 2;
	}
	/* The default P/Invoke moves inward on shallow stacks, and goes on the shallowest. */
	if (!pinvoke_given && pinvoke_at >= depth - 1)
		pinvoke_at = depth - 2;
	if (depth < 1 || depth > TOYJIT_MAX_DEPTH || pinvoke_at >= depth - 1) {
		fprintf(stderr, "toyjit-demo: need 1 <= DEPTH <= %d and FRAME < DEPTH - 1\n", TOYJIT_MAX_DEPTH);
		return 2;
	}

	d.walk = malloc(sizeof(*d.walk));
	if (d.walk && (st = sw_codemap_create(&map)) == SW_OK &&
	    attach_tools(map, perf, gdb, &perf_files, &gdb_jit) != 0)
		return 1;
	if (map && (perf || gdb)) {
		counter.notify = count_registration;
		if (sw_codemap_observe(map, &counter) != SW_OK)
			return 1;
	}
	if (!d.walk || !map ||
	    (st = toyjit_create(&jit, map, &frame_head, shapes, nshapes, demo_helper, &d)) != SW_OK ||
	    (st = sw_thread_init_self(&d.thread, map, &d.memory, &frame_head)) != SW_OK) {
		fprintf(stderr, "toyjit-demo: setup failed: %s\n", d.walk ? sw_strerror(st) : "out of memory");
		return 1;
	}
	tell_profiler(map);
	if (tools_status(jit, perf_files, gdb_jit) != 0)
		return 1;

	printf("toyjit-demo: %u methods at %#llx, %d managed frames, ", nshapes,
	       (unsigned long long)jit->methods[0].start, depth);
	if (throwing)
		printf("the innermost throws, its catch funclet calls the stub\n");
	else if (pinvoke_at >= 0)
		printf("P/Invoke at frame %d\n", pinvoke_at);
	else
		printf("no P/Invoke\n");
	for (unsigned k = 0; k < nshapes; k++) {
		const toyjit_method *m = &jit->methods[k];

		printf("  %-14s %#llx..%#llx  prolog %u bytes, SWU %zu bytes\n", m->name,
		       (unsigned long long)m->start, (unsigned long long)(m->start + m->size),
		       m->prolog_size, m->swu_size);
		if (verbose)
			sw_swu_dump(stdout, m->swu, m->swu_size);
	}
	printf("walk from the stub's TransitionFrame, flags %#x:\n", d.flags);
	fflush(stdout);

	st = throwing ? toyjit_run_throw(jit, (unsigned)depth) : toyjit_run(jit, (unsigned)depth, pinvoke_at);
	if (st != SW_OK) {
		printf("toyjit-demo: the run failed: %s\n", st == SW_E_MISMATCH ?
		       "it left the shadow stack unbalanced" : sw_strerror(st));
		d.check = st;
	}
	d.quiet = 1;
	for (long r = 0; r < runs && st == SW_OK; r++)
		st = throwing ? toyjit_run_throw(jit, (unsigned)depth) : toyjit_run(jit, (unsigned)depth, pinvoke_at);
	if (runs > 0)
		printf("%ld more runs: %s\n", runs, sw_strerror(st));
	if (d.check == SW_OK)
		printf("%s check: OK (%u managed frames)\n", throwing ? "funclet" : "shadow stack", d.managed);
	else
		printf("%s check: MISMATCH: %s\n", throwing ? "funclet" : "shadow stack", d.msg);
	if (d.gc) {
		uintptr_t want = toyjit_expected_result(jit, (unsigned)depth, throwing);

		printf("collector: %u objects moved, %u roots updated (%u stack slots, %u saved registers, "
		       "%u Frame slots), %u frame(s) not reporting\n", d.gc_stats.moved, d.gc_stats.roots,
		       d.gc_stats.slot_roots, d.gc_stats.saved_roots, d.gc_stats.frame_roots,
		       d.gc_stats.skipped);
		if (d.gc_status != SW_OK) {
			printf("collector: FAILED: %s%s%s\n", sw_strerror(d.gc_status),
			       d.gc_stats.what ? ": " : "", d.gc_stats.what ? d.gc_stats.what : "");
			d.check = d.gc_status;
		}
		printf("result: %#llx, expected %#llx: %s\n", (unsigned long long)jit->result,
		       (unsigned long long)want, jit->result == want ? "OK" : "WRONG");
		if (jit->result != want)
			d.check = SW_E_MISMATCH;
	}

	remove_native_code(jit, gdb_jit);
	toyjit_destroy(jit);
	detach_tools(map, perf_files, gdb_jit, &counter, &regs);
	sw_perf_destroy(perf_files);
	sw_gdbjit_destroy(gdb_jit);
	sw_codemap_destroy(map);
	free(d.walk);
	return d.check == SW_OK ? 0 : 1;
}
