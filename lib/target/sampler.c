/*
 * sampler.c - the thread registry and the signal-driven sampler.
 * Host-only: Linux signals, tgkill and futexes.
 *
 * One sample of thread T by the sampler S goes through T's `state` word:
 *
 *   S: IDLE -> REQUESTED, tgkill(T)
 *   T (handler): REQUESTED -> STOPPED after saving its registers, or
 *                REQUESTED -> REFUSED when it is exiting or unsafe
 *   S: walks T through the callback, then STOPPED -> RESUME
 *   T (handler): RESUME -> IDLE, returns
 *
 * Each side waits for the other with a futex on that word, so the handler
 * takes no lock.  A request T does not answer in time is withdrawn with
 * REQUESTED -> IDLE; the signal, if it arrives later, finds IDLE and the
 * handler returns at once.  `busy` is set while S works on T, outside the
 * registry lock; T's unregistration waits for it to clear.
 *
 * In CPU-time mode T also stops itself: a timer on T's own CPU clock
 * signals T, whose handler goes IDLE -> TICKING -> TICKED (registers
 * saved) and counts a tick for S; S, in sw_sampler_wait, walks each
 * TICKED thread, then TICKED -> RESUME.  A tick that finds T in any other
 * state is dropped: a sample of T is under way already.
 */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#ifdef __linux__
#include <linux/futex.h>
#include <sys/syscall.h>
#endif
#include "util.h"
#include <stackwalk/target.h>
#include <stackwalk/sampler.h>

enum { ST_IDLE, ST_REQUESTED, ST_STOPPED, ST_RESUME, ST_REFUSED, ST_TICKING, ST_TICKED };

typedef struct reg_entry {
	struct reg_entry *next;
	uint64_t id;
	pid_t tid;
	int exiting;                /* atomic: remove_self has begun */
	int busy;                   /* atomic, futex: the sampler is working on it */
	int state;                  /* atomic, futex: ST_* */
	const int *unsafe_depth;    /* the thread's unsafe_enter count */
	sw_thread thread;
	sw_memory memory;
	sw_context seed;            /* written by the handler while REQUESTED or TICKING */
	uint32_t ticks;             /* CPU periods the tick that stopped it stands for */
	pthread_t self;             /* for its CPU clock */
	struct sw_registry *reg;
	int has_timer;              /* under the registry lock */
	timer_t timer;              /* on its CPU clock, when has_timer */
} reg_entry;

struct sw_registry {
	pthread_mutex_t lock;       /* guards the list, next_id and the sampler fields */
	pthread_key_t exit_key;     /* set while a thread is registered: its exit unregisters it */
	reg_entry *threads;         /* oldest first */
	reg_entry *unused;          /* removed entries, kept for reuse until destroy */
	uint64_t next_id;
	unsigned count;
	int sampling;               /* a sampler runs */
	pthread_t sampler;
	int signo;
	unsigned timeout_ms;
	uint64_t cpu_period_ns;     /* nonzero: each thread has a CPU-time timer */
	int ticks;                  /* atomic, futex: threads stopped by their timers since the last look */
	reg_entry *target;          /* atomic: the entry being asked to stop */
};

/* The registry that owns each signal, for the handler. */
static sw_registry *signal_owner[65];
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;
/* The sample signals' mark in si_value: an address no one else sends. */
static const char sample_cookie;
/* The CPU-time timers' mark. */
static const char tick_cookie;
/*
 * Per signal, the program's action for signals not ours.  Two slots and
 * an index, so that a handler reading one is not torn by an update
 * writing the other.
 */
static struct sigaction chained[65][2];
static int chained_slot[65];
static int handler_installed[65];
static __thread int thread_unsafe_depth __attribute__((tls_model("initial-exec")));
/* The calling thread's registration, for its timer's handler (the latest, if several). */
static __thread reg_entry *own_entry __attribute__((tls_model("initial-exec")));

/* glibc's <signal.h> names the thread of SIGEV_THREAD_ID only inside a union. */
#ifndef sigev_notify_thread_id
#define sigev_notify_thread_id _sigev_un._tid
#endif

#ifdef __linux__
static pid_t current_tid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

static void futex_wait(int *word, int expected, const struct timespec *timeout)
{
	syscall(SYS_futex, word, FUTEX_WAIT_PRIVATE, expected, timeout, NULL, 0);
}

static void futex_wake(int *word)
{
	syscall(SYS_futex, word, FUTEX_WAKE_PRIVATE, 0x7fffffff, NULL, NULL, 0);
}
#endif

static int load(const int *p)
{
	return __atomic_load_n(p, __ATOMIC_ACQUIRE);
}

static void store(int *p, int v)
{
	__atomic_store_n(p, v, __ATOMIC_RELEASE);
}

static int cas(int *p, int from, int to)
{
	return __atomic_compare_exchange_n(p, &from, to, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
}

SW_API void sw_registry_unsafe_enter(void)
{
	__atomic_add_fetch(&thread_unsafe_depth, 1, __ATOMIC_SEQ_CST);
}

SW_API void sw_registry_unsafe_leave(void)
{
	__atomic_sub_fetch(&thread_unsafe_depth, 1, __ATOMIC_SEQ_CST);
}

/* The registry lock is the walker's own: a thread holding it is unsafe to stop. */
static void registry_lock(sw_registry *reg)
{
	sw_registry_unsafe_enter();
	pthread_mutex_lock(&reg->lock);
}

static void registry_unlock(sw_registry *reg)
{
	pthread_mutex_unlock(&reg->lock);
	sw_registry_unsafe_leave();
}

#ifdef __linux__
/*
 * A timer on the thread's own CPU clock, signalling that thread: it
 * fires only while the thread runs, once per period of CPU time it uses.
 * Under the registry lock.  A thread that cannot have one is sampled
 * less, never harmed.
 */
static void arm_cpu_timer(sw_registry *reg, reg_entry *e)
{
	struct sigevent sev;
	struct itimerspec its;
	clockid_t clock;

	if (!reg->sampling || !reg->cpu_period_ns || e->has_timer ||
	    pthread_getcpuclockid(e->self, &clock) != 0)
		return;
	memset(&sev, 0, sizeof sev);
	sev.sigev_notify = SIGEV_THREAD_ID;
	sev.sigev_signo = reg->signo;
	sev.sigev_value.sival_ptr = (void *)&tick_cookie;
	sev.sigev_notify_thread_id = e->tid;
	if (timer_create(clock, &sev, &e->timer) != 0)
		return;
	its.it_value.tv_sec = (time_t)(reg->cpu_period_ns / 1000000000u);
	its.it_value.tv_nsec = (long)(reg->cpu_period_ns % 1000000000u);
	its.it_interval = its.it_value;
	if (timer_settime(e->timer, 0, &its, NULL) != 0) {
		timer_delete(e->timer);
		return;
	}
	e->has_timer = 1;
}

/* Under the registry lock.  A tick already queued finds the thread's entry gone, or IDLE. */
static void disarm_cpu_timer(reg_entry *e)
{
	if (!e->has_timer)
		return;
	timer_delete(e->timer);
	e->has_timer = 0;
}
#endif

/*
 * A thread that exits still registered (a runtime that forgot, or a
 * thread cancelled) unregisters here, before its stack goes away: so its
 * exit, too, waits for a walk of it in progress, and a later thread given
 * the same kernel id is never mistaken for it.
 */
static void unregister_at_exit(void *reg)
{
	sw_registry_remove_self(reg);
}

SW_API sw_status sw_registry_create(sw_registry **out)
{
	sw_registry *reg;

	if (!out)
		return SW_E_INVAL;
	reg = calloc(1, sizeof *reg);
	if (!reg)
		return SW_E_NOMEM;
	if (pthread_key_create(&reg->exit_key, unregister_at_exit) != 0) {
		free(reg);
		return SW_E_NOMEM;
	}
	pthread_mutex_init(&reg->lock, NULL);
	reg->next_id = 1;
	*out = reg;
	return SW_OK;
}

SW_API sw_status sw_registry_destroy(sw_registry *reg)
{
	int in_use;

	if (!reg)
		return SW_OK;
	registry_lock(reg);
	in_use = reg->threads != NULL || reg->sampling;
	registry_unlock(reg);
	if (in_use)
		return SW_E_STATE;
	pthread_key_delete(reg->exit_key);
	while (reg->unused) {
		reg_entry *e = reg->unused;

		reg->unused = e->next;
		free(e);
	}
	pthread_mutex_destroy(&reg->lock);
	free(reg);
	return SW_OK;
}

SW_API unsigned sw_registry_count(sw_registry *reg)
{
	unsigned n;

	if (!reg)
		return 0;
	registry_lock(reg);
	n = reg->count;
	registry_unlock(reg);
	return n;
}

static reg_entry *find_tid(sw_registry *reg, pid_t tid)
{
	for (reg_entry *e = reg->threads; e; e = e->next)
		if (e->tid == tid)
			return e;
	return NULL;
}

/* Put an entry that never was linked back for reuse. */
static void retire(sw_registry *reg, reg_entry *e)
{
	registry_lock(reg);
	__atomic_store_n(&e->tid, 0, __ATOMIC_RELEASE);
	e->next = reg->unused;
	reg->unused = e;
	registry_unlock(reg);
}

SW_API sw_status sw_registry_add_self(sw_registry *reg, const sw_codemap *map,
                                      sw_frame **frame_head, uint64_t *id)
{
#ifdef __linux__
	reg_entry *e, **tail;
	sw_status st;

	if (!reg || !map || !id)
		return SW_E_INVAL;
	registry_lock(reg);
	e = reg->unused;
	if (e)
		reg->unused = e->next;
	registry_unlock(reg);
	if (!e)
		e = calloc(1, sizeof *e);
	if (!e)
		return SW_E_NOMEM;
	e->next = NULL;
	store(&e->exiting, 0);
	store(&e->state, ST_IDLE);
	/* Asks the C library for the stack: done here, never in the handler. */
	st = sw_thread_init_self(&e->thread, map, &e->memory, frame_head);
	if (st != SW_OK) {
		retire(reg, e);
		return st;
	}
	__atomic_store_n(&e->tid, current_tid(), __ATOMIC_RELEASE);
	e->unsafe_depth = &thread_unsafe_depth;
	e->self = pthread_self();
	e->reg = reg;
	e->has_timer = 0;
	registry_lock(reg);
	if (find_tid(reg, e->tid)) {
		registry_unlock(reg);
		retire(reg, e);
		return SW_E_EXISTS;
	}
	e->id = reg->next_id++;
	for (tail = &reg->threads; *tail; tail = &(*tail)->next)
		;
	*tail = e;
	reg->count++;
	*id = e->id;
	__atomic_store_n(&own_entry, e, __ATOMIC_RELEASE);
	arm_cpu_timer(reg, e);
	registry_unlock(reg);
	pthread_setspecific(reg->exit_key, reg);
	return SW_OK;
#else
	SWI_UNUSED(reg); SWI_UNUSED(map); SWI_UNUSED(frame_head); SWI_UNUSED(id);
	return SW_E_UNSUPPORTED;
#endif
}

SW_API sw_status sw_registry_remove_self(sw_registry *reg)
{
#ifdef __linux__
	reg_entry *e, **link;
	pid_t tid = current_tid();
	int busy;

	if (!reg)
		return SW_E_INVAL;
	registry_lock(reg);
	e = find_tid(reg, tid);
	if (e) {
		store(&e->exiting, 1);
		disarm_cpu_timer(e);
		if (own_entry == e)
			__atomic_store_n(&own_entry, NULL, __ATOMIC_RELEASE);
	}
	registry_unlock(reg);
	if (!e)
		return SW_E_NOTFOUND;
	/* A walk of this thread may be in progress: wait for it, holding no lock. */
	while ((busy = load(&e->busy)) != 0)
		futex_wait(&e->busy, busy, NULL);
	registry_lock(reg);
	for (link = &reg->threads; *link != e; link = &(*link)->next)
		;
	*link = e->next;
	reg->count--;
	/*
	 * No new walk can start: the entry is unlinked and busy was clear.  It
	 * is kept, not freed, because a late signal's handler may still read it.
	 */
	__atomic_store_n(&e->tid, 0, __ATOMIC_RELEASE);
	e->next = reg->unused;
	reg->unused = e;
	registry_unlock(reg);
	pthread_setspecific(reg->exit_key, NULL);
	return SW_OK;
#else
	SWI_UNUSED(reg);
	return SW_E_UNSUPPORTED;
#endif
}

#ifdef __linux__
static int is_sample_signal(const siginfo_t *si)
{
	return si && si->si_code == SI_QUEUE && si->si_pid == getpid() &&
	       si->si_value.sival_ptr == (void *)&sample_cookie;
}

/* Signals whose default action is to do nothing. */
static int ignored_by_default(int signo)
{
	return signo == SIGCHLD || signo == SIGURG || signo == SIGWINCH || signo == SIGCONT;
}

/*
 * What the program would have seen without the sampler: its handler, or
 * the default action (which, for SIGPROF or a real-time signal, ends the
 * process: the handler steps aside, unblocks the signal and raises it).
 */
static void run_chained_action(int signo, siginfo_t *si, void *uc)
{
	const struct sigaction *a =
		&chained[signo][__atomic_load_n(&chained_slot[signo], __ATOMIC_ACQUIRE)];
	struct sigaction dfl, mine;
	sigset_t set;

	if (a->sa_flags & SA_SIGINFO) {
		if (a->sa_sigaction)
			a->sa_sigaction(signo, si, uc);
		return;
	}
	if (a->sa_handler == SIG_IGN || (a->sa_handler == SIG_DFL && ignored_by_default(signo)))
		return;
	if (a->sa_handler != SIG_DFL) {
		a->sa_handler(signo);
		return;
	}
	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	sigaction(signo, &dfl, &mine);
	sigemptyset(&set);
	sigaddset(&set, signo);
	raise(signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	/* Still here (a stop signal, continued): the sampler's handler again. */
	sigaction(signo, &mine, NULL);
}

static int is_cpu_tick(const siginfo_t *si)
{
	return si && si->si_code == SI_TIMER && si->si_value.sival_ptr == (void *)&tick_cookie;
}

/* Stopped (on request or on a tick): wait until the sampler is done, then back to IDLE. */
static void wait_for_resume(reg_entry *e)
{
	int s;

	while ((s = load(&e->state)) == ST_STOPPED || s == ST_TICKED)
		futex_wait(&e->state, s, NULL);
	if (cas(&e->state, ST_RESUME, ST_IDLE))
		futex_wake(&e->state);
}

/*
 * The thread's CPU-time timer fired: it stops itself for the sampler.
 * After TICKED it looks at the owner again, and sw_sampler_stop looks at
 * the states after clearing the owner (both sequentially consistent), so
 * a tick racing with the end of sampling is either served or withdrawn,
 * never left waiting.
 */
static void on_cpu_tick(int signo, const siginfo_t *si, void *uc)
{
	reg_entry *e = __atomic_load_n(&own_entry, __ATOMIC_ACQUIRE);
	sw_registry *reg = __atomic_load_n(&signal_owner[signo], __ATOMIC_ACQUIRE);

	if (!e || !reg || e->reg != reg || load(&e->exiting) || load(e->unsafe_depth) > 0)
		return;
	if (!cas(&e->state, ST_IDLE, ST_TICKING))
		return;
	sw_context_from_ucontext(&e->seed, uc);
	/* Ticks that came while the signal was pending are counted, not lost. */
	e->ticks = 1 + (si->si_overrun > 0 ? (uint32_t)si->si_overrun : 0);
	__atomic_store_n(&e->state, ST_TICKED, __ATOMIC_SEQ_CST);
	if (__atomic_load_n(&signal_owner[signo], __ATOMIC_SEQ_CST) != reg &&
	    cas(&e->state, ST_TICKED, ST_IDLE))
		return;
	__atomic_add_fetch(&reg->ticks, 1, __ATOMIC_RELEASE);
	futex_wake(&reg->ticks);
	wait_for_resume(e);
}

/*
 * The target's side.  Only atomics, register copying and futex calls:
 * async-signal-safe.  A signal meant for nobody here (a stale one after a
 * withdrawn request, another thread's) returns at once.
 */
static void on_sample_signal(int signo, siginfo_t *si, void *uc)
{
	int saved_errno = errno;
	sw_registry *reg;
	reg_entry *e;

	if (signo <= 0 || signo >= (int)(sizeof signal_owner / sizeof signal_owner[0]))
		goto out;
	if (is_cpu_tick(si)) {
		on_cpu_tick(signo, si, uc);
		goto out;
	}
	if (!is_sample_signal(si)) {
		errno = saved_errno;
		run_chained_action(signo, si, uc);
		goto out;
	}
	reg = __atomic_load_n(&signal_owner[signo], __ATOMIC_ACQUIRE);
	if (!reg)
		goto out;
	e = __atomic_load_n(&reg->target, __ATOMIC_ACQUIRE);
	if (!e || __atomic_load_n(&e->tid, __ATOMIC_ACQUIRE) != current_tid() ||
	    load(&e->state) != ST_REQUESTED)
		goto out;
	if (load(&e->exiting) || load(e->unsafe_depth) > 0) {
		if (cas(&e->state, ST_REQUESTED, ST_REFUSED))
			futex_wake(&e->state);
		goto out;
	}
	sw_context_from_ucontext(&e->seed, uc);
	if (!cas(&e->state, ST_REQUESTED, ST_STOPPED))
		goto out;       /* the sampler gave up on us */
	futex_wake(&e->state);
	wait_for_resume(e);
out:
	errno = saved_errno;
}

static int is_sampler(sw_registry *reg)
{
	int yes;

	registry_lock(reg);
	yes = reg->sampling && pthread_equal(reg->sampler, pthread_self());
	registry_unlock(reg);
	return yes;
}

/* Wait while *word == value, up to the deadline; 0 on timeout. */
static int wait_while(int *word, int value, const struct timespec *deadline)
{
	int v;

	while ((v = load(word)) == value) {
		struct timespec now, left;

		clock_gettime(CLOCK_MONOTONIC, &now);
		left.tv_sec = deadline->tv_sec - now.tv_sec;
		left.tv_nsec = deadline->tv_nsec - now.tv_nsec;
		if (left.tv_nsec < 0) {
			left.tv_nsec += 1000000000L;
			left.tv_sec--;
		}
		if (left.tv_sec < 0)
			return 0;
		futex_wait(word, v, &left);
	}
	return 1;
}

/* Queue the signal to one thread, marked as the sampler's. */
static int send_sample_signal(int signo, pid_t tid)
{
	siginfo_t si;

	memset(&si, 0, sizeof si);
	si.si_signo = signo;
	si.si_code = SI_QUEUE;
	si.si_pid = getpid();
	si.si_uid = getuid();
	si.si_value.sival_ptr = (void *)&sample_cookie;
	return (int)syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, signo, &si);
}

/* `e` is stopped (busy set by the caller): call back, resume it. */
static sw_status serve_entry(reg_entry *e, sw_sampler_callback cb, void *data, uint32_t ticks)
{
	sw_sample sample;
	sw_walk_action act;

	memset(&sample, 0, sizeof sample);
	sample.id = e->id;
	sample.tid = e->tid;
	sample.walk_flags = SW_WALK_ALLOW_ASYNC_STACK_WALK | SW_WALK_THREAD_IS_SUSPENDED;
	sample.thread = &e->thread;
	sample.seed = &e->seed;
	sample.ticks = ticks;
	act = cb ? cb(&sample, data) : SW_CONTINUE;
	store(&e->state, ST_RESUME);
	futex_wake(&e->state);
	return act == SW_CONTINUE ? SW_OK : SW_E_ABORTED;
}

/* Stop `e` (busy already set by the caller), call back, resume it. */
static sw_status sample_entry(sw_registry *reg, reg_entry *e, sw_sampler_callback cb, void *data)
{
	struct timespec deadline;
	int s;

	clock_gettime(CLOCK_MONOTONIC, &deadline);
	deadline.tv_sec += reg->timeout_ms / 1000;
	deadline.tv_nsec += (long)(reg->timeout_ms % 1000) * 1000000L;
	if (deadline.tv_nsec >= 1000000000L) {
		deadline.tv_nsec -= 1000000000L;
		deadline.tv_sec++;
	}
	/*
	 * The previous sample's handler may still be on its way out, or its
	 * CPU-time tick may be stopping it: then that stop serves.
	 */
	while ((s = load(&e->state)) != ST_IDLE || !cas(&e->state, ST_IDLE, ST_REQUESTED)) {
		if (s == ST_TICKED)
			return serve_entry(e, cb, data, e->ticks);
		if (s != ST_IDLE && !wait_while(&e->state, s, &deadline))
			return SW_E_UNSAFE;
	}
	__atomic_store_n(&reg->target, e, __ATOMIC_RELEASE);
	if (send_sample_signal(reg->signo, e->tid) != 0) {
		store(&e->state, ST_IDLE);
		return SW_E_UNSAFE;
	}
	if (!wait_while(&e->state, ST_REQUESTED, &deadline) &&
	    cas(&e->state, ST_REQUESTED, ST_IDLE))
		return SW_E_UNSAFE;     /* withdrawn: it has signals blocked, or is stuck */
	if (load(&e->state) == ST_REFUSED) {
		store(&e->state, ST_IDLE);
		return SW_E_UNSAFE;
	}
	/* ST_STOPPED: the target waits in its handler until we say so. */
	return serve_entry(e, cb, data, 1);
}

static void release_entry(reg_entry *e)
{
	store(&e->busy, 0);
	futex_wake(&e->busy);
}

/*
 * Find the thread to sample (by id, or the first after `after` when id is
 * 0) and mark it busy, under the lock; the signal and the wait come later.
 */
static sw_status claim(sw_registry *reg, uint64_t id, uint64_t after, int ticked_only,
                       reg_entry **out, uint64_t *found)
{
	pid_t self = current_tid();
	reg_entry *e;

	registry_lock(reg);
	for (e = reg->threads; e; e = e->next)
		if ((id ? e->id == id : e->id > after) &&
		    (!ticked_only || load(&e->state) == ST_TICKED))
			break;
	if (!e) {
		registry_unlock(reg);
		return SW_E_NOTFOUND;
	}
	*out = e;
	*found = e->id;
	if (e->tid == self || load(&e->exiting)) {
		registry_unlock(reg);
		return SW_E_UNSAFE;
	}
	store(&e->busy, 1);
	registry_unlock(reg);
	return SW_OK;
}

/*
 * Starting and stopping change which registry owns a signal: the owner
 * table's lock, then the registry's, always in that order.
 */
static void owner_lock_take(sw_registry *reg)
{
	sw_registry_unsafe_enter();
	pthread_mutex_lock(&owner_lock);
	pthread_mutex_lock(&reg->lock);
}

static void owner_lock_drop(sw_registry *reg)
{
	pthread_mutex_unlock(&reg->lock);
	pthread_mutex_unlock(&owner_lock);
	sw_registry_unsafe_leave();
}

/* May this thread ask for samples now: is the registry sampling, and is this its sampler? */
static sw_status may_sample(sw_registry *reg)
{
	sw_status st;

	registry_lock(reg);
	st = reg->sampling ? SW_OK : SW_E_STATE;
	registry_unlock(reg);
	if (st == SW_OK && !is_sampler(reg))
		st = SW_E_UNSAFE;
	return st;
}
#endif

SW_API sw_status sw_sampler_start(sw_registry *reg, const sw_sampler_options *options)
{
#ifdef __linux__
	struct sigaction sa, old;
	int signo = options && options->signo ? options->signo : SIGPROF;
	sw_status st = SW_OK;

	if (!reg || signo <= 0 || signo >= (int)(sizeof signal_owner / sizeof signal_owner[0]) ||
	    signo == SIGKILL || signo == SIGSTOP)
		return SW_E_INVAL;
	owner_lock_take(reg);
	if (reg->sampling)
		st = SW_E_STATE;
	else if (signal_owner[signo])
		st = SW_E_EXISTS;
	if (st == SW_OK) {
		memset(&sa, 0, sizeof sa);
		sa.sa_sigaction = on_sample_signal;
		sa.sa_flags = SA_SIGINFO | SA_RESTART;
		/* Nothing but a fault interrupts a stopped thread's wait. */
		sigfillset(&sa.sa_mask);
		sigdelset(&sa.sa_mask, SIGSEGV);
		sigdelset(&sa.sa_mask, SIGBUS);
		sigdelset(&sa.sa_mask, SIGILL);
		sigdelset(&sa.sa_mask, SIGFPE);
		reg->signo = signo;
		reg->timeout_ms = options && options->timeout_ms ? options->timeout_ms : 1000;
		reg->cpu_period_ns = options ? options->cpu_period_ns : 0;
		store(&reg->ticks, 0);
		reg->sampler = pthread_self();
		__atomic_store_n(&signal_owner[signo], reg, __ATOMIC_RELEASE);
		if (sigaction(signo, &sa, &old) != 0) {
			__atomic_store_n(&signal_owner[signo], NULL, __ATOMIC_RELEASE);
			st = SW_E_INVAL;
		} else {
			/* Started before: what was there is our own handler, not the program's. */
			if (!handler_installed[signo])
				chained[signo][load(&chained_slot[signo])] = old;
			__atomic_store_n(&handler_installed[signo], 1, __ATOMIC_RELEASE);
			reg->sampling = 1;
			for (reg_entry *e = reg->threads; e; e = e->next)
				if (!load(&e->exiting))
					arm_cpu_timer(reg, e);
		}
	}
	owner_lock_drop(reg);
	return st;
#else
	SWI_UNUSED(reg); SWI_UNUSED(options);
	return SW_E_UNSUPPORTED;
#endif
}

SW_API sw_status sw_sampler_stop(sw_registry *reg)
{
#ifdef __linux__
	if (!reg)
		return SW_E_INVAL;
	if (!is_sampler(reg))
		return SW_E_UNSAFE;
	owner_lock_take(reg);
	/*
	 * Our handler stays installed: a withdrawn request's signal may still
	 * be pending, and the old action (SIGPROF's default kills) must not
	 * see it.  With no owner the handler just returns; signals not ours
	 * still go to the program's action.
	 */
	__atomic_store_n(&signal_owner[reg->signo], NULL, __ATOMIC_SEQ_CST);
	__atomic_store_n(&reg->target, NULL, __ATOMIC_RELEASE);
	/* No tick after this; a thread its last tick stopped goes on (see on_cpu_tick). */
	for (reg_entry *e = reg->threads; e; e = e->next) {
		disarm_cpu_timer(e);
		if (__atomic_load_n(&e->state, __ATOMIC_SEQ_CST) == ST_TICKED &&
		    cas(&e->state, ST_TICKED, ST_RESUME))
			futex_wake(&e->state);
	}
	reg->sampling = 0;
	reg->cpu_period_ns = 0;
	owner_lock_drop(reg);
	return SW_OK;
#else
	SWI_UNUSED(reg);
	return SW_E_UNSUPPORTED;
#endif
}

SW_API sw_status sw_sampler_chain_action(int signo, const struct sigaction *act,
                                         struct sigaction *old)
{
#ifdef __linux__
	int slot;

	if (signo <= 0 || signo >= (int)(sizeof signal_owner / sizeof signal_owner[0]))
		return SW_E_INVAL;
	if (!__atomic_load_n(&handler_installed[signo], __ATOMIC_ACQUIRE))
		return SW_E_STATE;
	/*
	 * No lock: sigaction is async-signal-safe, and programs call it from
	 * their handlers.  Two threads setting the same signal's action at
	 * once is the one race left.
	 */
	slot = load(&chained_slot[signo]);
	if (old)
		*old = chained[signo][slot];
	if (act) {
		chained[signo][!slot] = *act;
		store(&chained_slot[signo], !slot);
	}
	return SW_OK;
#else
	SWI_UNUSED(signo); SWI_UNUSED(act); SWI_UNUSED(old);
	return SW_E_UNSUPPORTED;
#endif
}

SW_API sw_status sw_sampler_sample(sw_registry *reg, uint64_t id, sw_sampler_callback cb,
                                   void *data)
{
#ifdef __linux__
	reg_entry *e;
	sw_status st;

	if (!reg || !id)
		return SW_E_INVAL;
	if ((st = may_sample(reg)) != SW_OK)
		return st;
	st = claim(reg, id, 0, 0, &e, &id);
	if (st != SW_OK)
		return st;
	st = sample_entry(reg, e, cb, data);
	release_entry(e);
	return st;
#else
	SWI_UNUSED(reg); SWI_UNUSED(id); SWI_UNUSED(cb); SWI_UNUSED(data);
	return SW_E_UNSUPPORTED;
#endif
}

SW_API sw_status sw_sampler_sample_all(sw_registry *reg, sw_sampler_callback cb, void *data,
                                       unsigned *sampled)
{
#ifdef __linux__
	uint64_t after = 0;
	unsigned n = 0;
	sw_status st = SW_OK;

	if (sampled)
		*sampled = 0;
	if (!reg)
		return SW_E_INVAL;
	if ((st = may_sample(reg)) != SW_OK)
		return st;
	for (;;) {
		reg_entry *e = NULL;

		st = claim(reg, 0, after, 0, &e, &after);
		if (st == SW_E_NOTFOUND) {
			st = SW_OK;     /* past the newest thread */
			break;
		}
		if (st == SW_E_UNSAFE)
			continue;
		st = sample_entry(reg, e, cb, data);
		release_entry(e);
		if (st == SW_OK)
			n++;
		else if (st == SW_E_ABORTED) {
			n++;
			break;
		}
		st = SW_OK;
	}
	if (sampled)
		*sampled = n;
	return st;
#else
	SWI_UNUSED(reg); SWI_UNUSED(cb); SWI_UNUSED(data);
	if (sampled)
		*sampled = 0;
	return SW_E_UNSAFE;
#endif
}

SW_API sw_status sw_sampler_wait(sw_registry *reg, sw_sampler_callback cb, void *data,
                                 unsigned timeout_ms, unsigned *sampled)
{
#ifdef __linux__
	struct timespec timeout = { (time_t)(timeout_ms / 1000), (long)(timeout_ms % 1000) * 1000000L };
	uint64_t after = 0;
	unsigned n = 0;
	sw_status st;

	if (sampled)
		*sampled = 0;
	if (!reg)
		return SW_E_INVAL;
	if ((st = may_sample(reg)) != SW_OK)
		return st;
	if (!reg->cpu_period_ns)
		return SW_E_STATE;
	if (__atomic_exchange_n(&reg->ticks, 0, __ATOMIC_ACQ_REL) == 0) {
		futex_wait(&reg->ticks, 0, &timeout);
		store(&reg->ticks, 0);
	}
	/* Every stopped thread, not only as many as were counted: none waits for the next tick. */
	for (;;) {
		reg_entry *e = NULL;

		sw_status found = claim(reg, 0, after, 1, &e, &after);

		if (found == SW_E_NOTFOUND)
			break;
		if (found != SW_OK)
			continue;
		st = serve_entry(e, cb, data, e->ticks);
		release_entry(e);
		n++;
		if (st == SW_E_ABORTED)
			break;
	}
	if (sampled)
		*sampled = n;
	return st == SW_E_ABORTED ? st : SW_OK;
#else
	SWI_UNUSED(reg); SWI_UNUSED(cb); SWI_UNUSED(data); SWI_UNUSED(timeout_ms);
	if (sampled)
		*sampled = 0;
	return SW_E_UNSUPPORTED;
#endif
}
