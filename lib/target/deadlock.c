/*
 * deadlock.c - the hang analysis: every thread's stack and state, the
 * locks they wait on, the wait-for graph and its cycles, and a class for
 * every thread.
 *
 * A thread waits on at most one lock and a lock has at most one owner, so
 * the wait-for graph (thread -> the owner of the lock it waits on) has at
 * most one edge out of each thread: every cycle is found by following the
 * edges from each thread not yet seen, in time linear in the threads.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "core_notes.h"
#include "hang_report.h"
#include "lock_wait.h"
#include "stack_set.h"
#include "thread_state.h"

#define DEFAULT_SAMPLE_MS 250
#define DEFAULT_BUSY_PERMILLE 500
#define DEFAULT_MAX_FRAMES 64

/* What the analysis gathers per thread before the graph is built. */
struct gathered {
	enum swi_wait_hint hint;
	uint64_t futex;
	const struct swi_thread_state *live;    /* NULL in a core */
};

struct analysis {
	sw_hang_report *r;
	const struct swi_target *t;
	sw_hang_options opt;
	struct gathered *g;
	int *tids;
	int *next;                              /* the wait-for edge: a thread index, or -1 */
};

static void options_or_defaults(const sw_hang_options *in, sw_hang_options *out)
{
	memset(out, 0, sizeof *out);
	out->sample_ms = DEFAULT_SAMPLE_MS;
	out->busy_permille = DEFAULT_BUSY_PERMILLE;
	out->max_frames = DEFAULT_MAX_FRAMES;
	if (!in)
		return;
	out->sample_ms = in->sample_ms;
	if (in->busy_permille)
		out->busy_permille = in->busy_permille;
	if (in->max_frames)
		out->max_frames = in->max_frames < SWI_HANG_MAX_FRAMES ? in->max_frames
		                                                       : SWI_HANG_MAX_FRAMES;
}

/* What /proc said of a thread before the attach, into its report. */
static sw_status copy_live_state(sw_hang_report *r, struct swi_hang_thread *th,
                                 const struct swi_thread_state *ls)
{
	int failed = 0;

	th->state = ls->state;
	th->syscall = ls->syscall;
	th->cpu_ns = ls->cpu_ns;
	th->cpu_permille = ls->cpu_permille;
	th->wchan = swi_hang_report_string(r, ls->wchan[0] ? ls->wchan : NULL, &failed);
	return failed ? SW_E_NOMEM : SW_OK;
}

/* Walk thread i, keep its frames and state, and note what it waits in. */
static sw_status gather_thread(struct analysis *a, swi_stack_set *set, unsigned i,
                               struct swi_frame *frames, const struct swi_thread_state *states,
                               size_t nstates)
{
	struct swi_hang_thread *th = &a->r->threads[i];
	sw_status st, walk_status;
	size_t count = 0;
	sw_context ctx;
	int tid = 0, failed = 0;

	if ((st = swi_stack_set_walk(set, i, &ctx, &tid, frames, a->opt.max_frames, &count,
	                             &walk_status)) != SW_OK) {
		th->walk_status = st;
		return SW_OK;   /* a thread without registers: no frames, class unknown */
	}
	th->tid = tid;
	th->walk_status = walk_status;
	th->first_frame = (uint32_t)a->r->nframes;
	for (size_t k = 0; k < count; k++) {
		struct swi_hang_frame f = { frames[k].pc, frames[k].offset, 0, 0 };

		f.function = swi_hang_report_string(a->r, frames[k].function, &failed);
		f.module = swi_hang_report_string(a->r, frames[k].module, &failed);
		if (failed || swi_hang_report_add_frame(a->r, &f) != SW_OK)
			return SW_E_NOMEM;
	}
	th->nframes = (uint32_t)count;
	a->tids[i] = tid;
	a->g[i].hint = swi_wait_hint(frames, count);
	if (states) {
		const struct swi_thread_state *ls = swi_thread_state_find(states, nstates, tid);

		/* A thread born after /proc was read has no state: it is not blocked for long. */
		a->g[i].live = ls;
		if (ls && copy_live_state(a->r, th, ls) != SW_OK)
			return SW_E_NOMEM;
	}
	if (a->g[i].hint >= SWI_WAIT_MUTEX && a->g[i].hint <= SWI_WAIT_RWLOCK_WRITE &&
	    (!states || a->g[i].live))
		a->g[i].futex = swi_futex_address(a->t->arch, &ctx, a->g[i].live);
	return SW_OK;
}

static int index_of_tid(const struct analysis *a, int tid)
{
	if (tid <= 0)
		return -1;
	for (size_t i = 0; i < a->r->nthreads; i++)
		if (a->tids[i] == tid)
			return (int)i;
	return -1;
}

/* Read each waited-on lock and its owner: the wait-for edges. */
static void read_locks(struct analysis *a)
{
	for (size_t i = 0; i < a->r->nthreads; i++) {
		struct swi_hang_thread *th = &a->r->threads[i];
		sw_lock_kind kind;
		uint64_t lock;
		int owner;

		a->next[i] = -1;
		if (!a->g[i].futex ||
		    swi_lock_read(a->t->mem, a->t->arch, a->g[i].hint, a->g[i].futex, a->tids,
		                  a->r->nthreads, &lock, &kind, &owner) != SW_OK)
			continue;
		th->lock_kind = kind;
		th->lock = lock;
		th->owner = owner;
		a->next[i] = index_of_tid(a, owner);
	}
}

/* Record the cycle through thread `start`, rotated to begin at its lowest thread id. */
static sw_status add_cycle(struct analysis *a, int start)
{
	sw_hang_report *r = a->r;
	size_t len = 0, lowest = 0, first = r->nmembers;
	struct swi_hang_cycle *c;
	uint32_t *m;
	uint64_t *l;
	int j = start;

	do {
		if (len == 0 || a->tids[j] < a->tids[lowest])
			lowest = (size_t)j;
		len++;
		j = a->next[j];
	} while (j != start);
	if (!(m = realloc(r->members, (first + len) * sizeof *m)))
		return SW_E_NOMEM;
	r->members = m;
	if (!(l = realloc(r->member_locks, (first + len) * sizeof *l)))
		return SW_E_NOMEM;
	r->member_locks = l;
	if (!(c = realloc(r->cycles, (r->ncycles + 1) * sizeof *c)))
		return SW_E_NOMEM;
	r->cycles = c;
	j = (int)lowest;
	for (size_t k = 0; k < len; k++, j = a->next[j]) {
		m[first + k] = (uint32_t)j;
		l[first + k] = r->threads[j].lock;
		r->threads[j].cycle = (int32_t)r->ncycles;
	}
	c[r->ncycles].first = (uint32_t)first;
	c[r->ncycles].length = (uint32_t)len;
	r->ncycles++;
	r->nmembers += len;
	return SW_OK;
}

/* Every cycle of the wait-for graph: each walk marks what it visits with its own number. */
static sw_status find_cycles(struct analysis *a)
{
	size_t n = a->r->nthreads;
	size_t *mark = calloc(n ? n : 1, sizeof *mark);
	sw_status st = SW_OK;

	if (!mark)
		return SW_E_NOMEM;
	for (size_t i = 0; i < n && st == SW_OK; i++) {
		int j = (int)i;

		while (j >= 0 && !mark[j]) {
			mark[j] = i + 1;
			j = a->next[j];
		}
		if (j >= 0 && mark[j] == i + 1)
			st = add_cycle(a, j);
	}
	free(mark);
	return st;
}

/* Cycles by their first (lowest) thread id, so the order does not depend on the target's. */
static void sort_cycles(sw_hang_report *r)
{
	for (size_t i = 1; i < r->ncycles; i++)
		for (size_t k = i; k > 0; k--) {
			struct swi_hang_cycle *c = r->cycles;
			struct swi_hang_cycle tmp;

			if (r->threads[r->members[c[k - 1].first]].tid <=
			    r->threads[r->members[c[k].first]].tid)
				break;
			tmp = c[k - 1];
			c[k - 1] = c[k];
			c[k] = tmp;
		}
	for (size_t i = 0; i < r->ncycles; i++)
		for (size_t k = 0; k < r->cycles[i].length; k++)
			r->threads[r->members[r->cycles[i].first + k]].cycle = (int32_t)i;
}

/*
 * A waiter in no cycle whose chain of owners reaches one is stuck behind
 * that deadlock.  Chains are at most as long as there are threads.
 */
static void mark_behind(struct analysis *a)
{
	size_t n = a->r->nthreads;

	for (size_t i = 0; i < n; i++) {
		int j = a->next[i];

		if (a->r->threads[i].cycle >= 0)
			continue;
		for (size_t steps = 0; j >= 0 && steps < n && a->r->threads[j].cycle < 0; steps++)
			j = a->next[j];
		if (j >= 0 && a->r->threads[j].cycle >= 0)
			a->r->threads[i].behind = a->r->threads[j].cycle;
	}
}

static sw_hang_class classify(const struct analysis *a, size_t i)
{
	const struct swi_hang_thread *th = &a->r->threads[i];
	const struct gathered *g = &a->g[i];

	if (th->cycle >= 0)
		return SW_HANG_DEADLOCKED;
	if (th->lock_kind != SW_LOCK_NONE)
		return a->next[i] >= 0 ? SW_HANG_LOCK_WAIT : SW_HANG_LOCK_NO_OWNER;
	if (g->live && th->cpu_permille >= a->opt.busy_permille)
		return SW_HANG_BUSY;
	if (g->live && th->state == 'D')
		return SW_HANG_IO_WAIT;
	if (g->live && th->state == 'R')
		return SW_HANG_RUNNING;
	if (g->hint == SWI_WAIT_IO)
		return SW_HANG_IO_WAIT;
	if (g->live || g->hint == SWI_WAIT_IDLE)
		return SW_HANG_IDLE;
	return SW_HANG_UNKNOWN;
}

/*
 * A thread the attach left running (sw_process_unstopped: it waits for its
 * vfork child, or sleeps uninterruptibly) goes into the report at `i` with what /proc says of it and
 * no frames: its walk could not be done safely (SW_E_UNSAFE).
 */
static sw_status add_unstopped(struct analysis *a, size_t i, int tid,
                               const struct swi_thread_state *states, size_t nstates)
{
	struct swi_hang_thread *th = &a->r->threads[i];
	const struct swi_thread_state *ls = swi_thread_state_find(states, nstates, tid);

	th->tid = tid;
	th->walk_status = SW_E_UNSAFE;
	a->tids[i] = tid;
	a->g[i].live = ls;
	return ls ? copy_live_state(a->r, th, ls) : SW_OK;
}

static sw_status analyze(const struct swi_target *t, const sw_process *proc,
                         const struct swi_thread_state *states, size_t nstates,
                         const sw_hang_options *opt, sw_hang_report **out)
{
	struct analysis a;
	struct swi_frame *frames = NULL;
	swi_stack_set *set = NULL;
	unsigned unstopped = sw_process_unstopped_count(proc), total = t->threads + unstopped;
	sw_status st;

	memset(&a, 0, sizeof a);
	a.t = t;
	options_or_defaults(opt, &a.opt);
	if (t->threads > SWI_HANG_MAX_THREADS || unstopped > SWI_HANG_MAX_THREADS)
		return SW_E_LIMIT;
	if ((st = swi_stack_set_open(t, &set)) != SW_OK)
		return st;
	a.r = swi_hang_report_new(t->arch, total);
	a.g = calloc(total + 1, sizeof *a.g);
	a.tids = calloc(total + 1, sizeof *a.tids);
	a.next = calloc(total + 1, sizeof *a.next);
	frames = malloc(a.opt.max_frames * sizeof *frames);
	st = a.r && a.g && a.tids && a.next && frames ? SW_OK : SW_E_NOMEM;
	for (unsigned i = 0; i < t->threads && st == SW_OK; i++)
		st = gather_thread(&a, set, i, frames, states, nstates);
	for (unsigned k = 0; k < unstopped && st == SW_OK; k++) {
		int tid = 0;

		sw_process_unstopped(proc, k, &tid, NULL);
		st = add_unstopped(&a, t->threads + k, tid, states, nstates);
	}
	if (st == SW_OK) {
		read_locks(&a);
		st = find_cycles(&a);
	}
	if (st == SW_OK) {
		sort_cycles(a.r);
		mark_behind(&a);
		for (size_t i = 0; i < a.r->nthreads; i++)
			a.r->threads[i].cls = classify(&a, i);
		*out = a.r;
		a.r = NULL;
	}
	sw_hang_report_free(a.r);
	free(frames);
	free(a.g);
	free(a.tids);
	free(a.next);
	swi_stack_set_close(set);
	return st;
}

sw_status sw_hang_analyze_core(const sw_core *core, const sw_hang_options *opt,
                               sw_hang_report **out)
{
	struct swi_target t;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!core)
		return SW_E_INVAL;
	swi_target_from_core(&t, core);
	return analyze(&t, NULL, NULL, 0, opt, out);
}

/* The vDSO's address from /proc/PID/auxv, or 0. */
static uint64_t process_vdso(int pid, sw_arch arch)
{
	unsigned char buf[4096];
	char path[64];
	uint64_t v = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/auxv", pid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n <= 0 || swi_auxv_find(sw_arch_pointer_size(arch), buf, (size_t)n, SWI_AT_SYSINFO_EHDR,
	                            &v) != SW_OK)
		return 0;
	return v;
}

sw_status sw_hang_analyze_process(int pid, const sw_hang_options *opt, sw_hang_report **out)
{
	struct swi_thread_state *states = NULL;
	struct swi_target t;
	sw_process *proc = NULL;
	size_t nstates = 0;
	sw_status st;
	int err;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (pid <= 0 || pid == getpid())
		return SW_E_INVAL;
	/* The kernel's view first: once traced, every thread's state is 't'. */
	if ((st = swi_thread_states_read(pid, opt ? opt->sample_ms : DEFAULT_SAMPLE_MS, &states,
	                                 &nstates)) != SW_OK)
		return st;
	if ((st = sw_process_attach(pid, &proc)) != SW_OK) {
		err = errno;
		free(states);
		errno = err;
		return st;
	}
	swi_target_from_process(&t, proc, process_vdso(pid, sw_process_arch(proc)));
	st = analyze(&t, proc, states, nstates, opt, out);
	if (sw_process_detach(proc) != SW_OK && st == SW_OK) {
		sw_hang_report_free(*out);
		*out = NULL;
		st = SW_E_BADADDR;
	}
	free(states);
	return st;
}
