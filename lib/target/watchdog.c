/*
 * watchdog.c - ping a thread; if it does not answer in time, analyze the
 * whole process for hangs and deadlocks and hand the report to a callback.
 *
 * How the stacks are captured, and why this way.  Capturing from inside
 * the process (signal every thread and let each save its own registers,
 * as the sampler does) needs every thread to run a handler: a thread with
 * the signal blocked never answers, and the analysis would then run in
 * the hung process, where it allocates and opens files, so any lock a hung
 * thread holds (malloc's, stdio's, the runtime's own) could hang the
 * watchdog too.  Instead a helper process is forked when the watchdog
 * starts, while the process is healthy, and waits on a socket.  On a
 * timeout the watchdog's thread asks it for a report: the helper reads
 * /proc, attaches with ptrace (stopping the threads only while it reads
 * their registers, like a debugger), walks, detaches, and sends the
 * report back as bytes.  No thread of the hung process has to run any
 * code for the capture; the watched thread is never signalled, never
 * waited on and never has to take a lock (its answer is an atomic store);
 * and the watchdog's thread only waits on its socket.  The helper is
 * forked from the watchdog's thread, so PR_SET_PDEATHSIG ends it with
 * that thread, and the socket's end-of-file ends it too.
 */
#include "config.h"
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include "hang_report.h"

#define WATCHDOG_MIN_TIMEOUT_MS 10

struct sw_watchdog {
	sw_watchdog_callback cb;
	void *cb_arg;
	sw_hang_options opt;
	int has_opt;
	pthread_t thread;
	pthread_mutex_t lock;           /* the fields below, and the helper */
	pthread_cond_t cond;
	int started, stopping;
	int armed, tid;
	unsigned timeout_ms;
	sw_watchdog_ping ping;
	void *ping_arg;
	unsigned generation;            /* bumped by arm and disarm */
	unsigned ping_seq;              /* atomic: the latest ping */
	unsigned answer_seq;            /* atomic: the latest answer */
	int sock;                       /* our end of the helper's socket; -1 if none */
	pid_t helper;
	pid_t self;
	int start_status;               /* how starting the helper went */
};

/* ---- the helper process --------------------------------------------------- */

enum sock_way { SOCK_RECEIVE, SOCK_SEND };

/*
 * Send (or receive) all `len` bytes on the helper's socket, through
 * interrupted and short transfers: 0, or -1 when the other end has gone.
 */
static int sock_all(int fd, void *buf, size_t len, enum sock_way way)
{
	unsigned char *p = buf;

	while (len) {
		ssize_t n = way == SOCK_SEND ? send(fd, p, len, MSG_NOSIGNAL) : read(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/*
 * The helper holds no descriptor of the process but its socket: a pipe's
 * write end kept open here would keep the process's readers from ever
 * seeing end-of-file.  Standard input and output become /dev/null.
 */
static void close_other_fds(int keep)
{
	long max = sysconf(_SC_OPEN_MAX);
	int null = open("/dev/null", O_RDWR);

	if (max < 0 || max > 65536)
		max = 65536;
	for (int fd = 0; fd < 3; fd++)
		if (null >= 0 && fd != null && fd != keep)
			dup2(null, fd);
	for (int fd = 3; fd < (int)max; fd++)
		if (fd != keep)
			close(fd);
}

/* The helper: one report per request byte, until the socket closes.  Never returns. */
static void helper_main(int sock, pid_t target, const sw_hang_options *opt)
{
	unsigned char req;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (sock < 3) {
		int moved = fcntl(sock, F_DUPFD_CLOEXEC, 3);

		if (moved < 0)
			_exit(1);
		sock = moved;
	}
	close_other_fds(sock);
	/* The target may have died between fork and prctl. */
	if (getppid() != target)
		_exit(0);
	while (sock_all(sock, &req, 1, SOCK_RECEIVE) == 0) {
		sw_hang_report *r = NULL;
		unsigned char *buf = NULL;
		int64_t head[2] = { 0, 0 };
		size_t len = 0;
		sw_status st = sw_hang_analyze_process(target, opt, &r);

		if (st == SW_OK)
			st = swi_hang_report_serialize(r, &buf, &len);
		head[0] = st;
		head[1] = st == SW_OK ? (int64_t)len : 0;
		if (sock_all(sock, head, sizeof head, SOCK_SEND) != 0 ||
		    (len && sock_all(sock, buf, len, SOCK_SEND) != 0))
			_exit(1);
		free(buf);
		sw_hang_report_free(r);
	}
	_exit(0);
}

static sw_status start_helper(sw_watchdog *wd)
{
	int sv[2];
	pid_t pid;

	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) != 0)
		return SW_E_NOMEM;
	wd->self = getpid();
	pid = fork();
	if (pid < 0) {
		close(sv[0]);
		close(sv[1]);
		return SW_E_NOMEM;
	}
	if (pid == 0) {
		close(sv[0]);
		helper_main(sv[1], wd->self, wd->has_opt ? &wd->opt : NULL);
	}
	close(sv[1]);
	/* Under Yama's ptrace_scope 1 only an ancestor may trace: allow the helper. */
	prctl(PR_SET_PTRACER, (unsigned long)pid, 0, 0, 0);
	wd->sock = sv[0];
	wd->helper = pid;
	return SW_OK;
}

static void stop_helper(sw_watchdog *wd)
{
	if (wd->sock >= 0)
		close(wd->sock);
	wd->sock = -1;
	if (wd->helper > 0)
		while (waitpid(wd->helper, NULL, 0) < 0 && errno == EINTR)
			;
	wd->helper = 0;
}

/* Ask the helper for a report of the whole process. */
static sw_status request_report(sw_watchdog *wd, sw_hang_report **out)
{
	unsigned char req = 1, *buf;
	int64_t head[2];
	sw_status st;

	*out = NULL;
	if (wd->sock < 0)
		return SW_E_STATE;
	if (sock_all(wd->sock, &req, 1, SOCK_SEND) != 0 ||
	    sock_all(wd->sock, head, sizeof head, SOCK_RECEIVE) != 0)
		return SW_E_STATE;
	if (head[0] != SW_OK)
		return (sw_status)head[0];
	if (head[1] <= 0 || (uint64_t)head[1] > SWI_HANG_MAX_BYTES)
		return SW_E_BADMETA;
	if (!(buf = malloc((size_t)head[1])))
		return SW_E_NOMEM;
	if (sock_all(wd->sock, buf, (size_t)head[1], SOCK_RECEIVE) != 0) {
		free(buf);
		return SW_E_STATE;
	}
	st = swi_hang_report_deserialize(buf, (size_t)head[1], out);
	free(buf);
	return st;
}

/* ---- the watchdog's thread ------------------------------------------------ */

static void deadline_in(struct timespec *ts, unsigned ms)
{
	clock_gettime(CLOCK_MONOTONIC, ts);
	ts->tv_sec += ms / 1000;
	ts->tv_nsec += (long)(ms % 1000) * 1000000L;
	if (ts->tv_nsec >= 1000000000L) {
		ts->tv_sec++;
		ts->tv_nsec -= 1000000000L;
	}
}

static int answered(sw_watchdog *wd, unsigned seq)
{
	return __atomic_load_n(&wd->answer_seq, __ATOMIC_ACQUIRE) == seq;
}

/* Wait (lock held) until `deadline`, a change of arming, or stop; 1 if the arming changed. */
static int wait_until(sw_watchdog *wd, const struct timespec *deadline, unsigned generation)
{
	while (!wd->stopping && wd->generation == generation &&
	       pthread_cond_timedwait(&wd->cond, &wd->lock, deadline) != ETIMEDOUT)
		;
	return wd->stopping || wd->generation != generation;
}

/*
 * One watch: ping, then check for the answer every tenth of the timeout
 * until it comes (ping again half a timeout later) or the timeout passes
 * (fire once, then keep waiting for the answer).
 */
static void watch(sw_watchdog *wd)
{
	unsigned generation = wd->generation, seq, step = wd->timeout_ms / 10;
	struct timespec deadline;

	if (step == 0)
		step = 1;
	while (!wd->stopping && wd->generation == generation) {
		unsigned waited = 0;
		int fired = 0;

		seq = __atomic_add_fetch(&wd->ping_seq, 1, __ATOMIC_ACQ_REL);
		if (wd->ping) {
			sw_watchdog_ping ping = wd->ping;
			void *arg = wd->ping_arg;

			pthread_mutex_unlock(&wd->lock);
			ping(wd, arg);
			pthread_mutex_lock(&wd->lock);
		}
		while (!answered(wd, seq)) {
			deadline_in(&deadline, step);
			if (wait_until(wd, &deadline, generation))
				return;
			waited += step;
			if (!fired && waited >= wd->timeout_ms && !answered(wd, seq)) {
				sw_hang_report *r = NULL;
				sw_status st;
				int tid = wd->tid;

				fired = 1;
				pthread_mutex_unlock(&wd->lock);
				st = request_report(wd, &r);
				wd->cb(wd, tid, r, st, wd->cb_arg);
				sw_hang_report_free(r);
				pthread_mutex_lock(&wd->lock);
			}
		}
		deadline_in(&deadline, wd->timeout_ms / 2 ? wd->timeout_ms / 2 : 1);
		if (wait_until(wd, &deadline, generation))
			return;
	}
}

static void *watchdog_thread(void *arg)
{
	sw_watchdog *wd = arg;

	pthread_mutex_lock(&wd->lock);
	wd->start_status = start_helper(wd);
	wd->started = 1;
	pthread_cond_broadcast(&wd->cond);
	while (!wd->stopping && wd->start_status == SW_OK) {
		if (wd->armed)
			watch(wd);
		else
			pthread_cond_wait(&wd->cond, &wd->lock);
	}
	pthread_mutex_unlock(&wd->lock);
	return NULL;
}

/* ---- the API -------------------------------------------------------------- */

sw_status sw_watchdog_create(sw_watchdog_callback cb, void *arg, const sw_hang_options *opt,
                             sw_watchdog **out)
{
	pthread_condattr_t ca;
	sw_watchdog *wd;
	sw_status st;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!cb)
		return SW_E_INVAL;
	if (!(wd = calloc(1, sizeof *wd)))
		return SW_E_NOMEM;
	wd->cb = cb;
	wd->cb_arg = arg;
	wd->sock = -1;
	if (opt) {
		wd->opt = *opt;
		wd->has_opt = 1;
	}
	pthread_mutex_init(&wd->lock, NULL);
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&wd->cond, &ca);
	pthread_condattr_destroy(&ca);
	if (pthread_create(&wd->thread, NULL, watchdog_thread, wd) != 0) {
		pthread_cond_destroy(&wd->cond);
		pthread_mutex_destroy(&wd->lock);
		free(wd);
		return SW_E_NOMEM;
	}
	pthread_mutex_lock(&wd->lock);
	while (!wd->started)
		pthread_cond_wait(&wd->cond, &wd->lock);
	st = wd->start_status;
	pthread_mutex_unlock(&wd->lock);
	if (st != SW_OK) {
		sw_watchdog_destroy(wd);
		return st;
	}
	*out = wd;
	return SW_OK;
}

sw_status sw_watchdog_arm(sw_watchdog *wd, int tid, unsigned timeout_ms, sw_watchdog_ping ping,
                          void *ping_arg)
{
	if (!wd || tid < 0 || timeout_ms < WATCHDOG_MIN_TIMEOUT_MS)
		return SW_E_INVAL;
	pthread_mutex_lock(&wd->lock);
	wd->tid = tid ? tid : (int)syscall(SYS_gettid);
	wd->timeout_ms = timeout_ms;
	wd->ping = ping;
	wd->ping_arg = ping_arg;
	wd->armed = 1;
	wd->generation++;
	pthread_cond_broadcast(&wd->cond);
	pthread_mutex_unlock(&wd->lock);
	return SW_OK;
}

void sw_watchdog_answer(sw_watchdog *wd)
{
	if (wd)
		__atomic_store_n(&wd->answer_seq, __atomic_load_n(&wd->ping_seq, __ATOMIC_ACQUIRE),
		                 __ATOMIC_RELEASE);
}

sw_status sw_watchdog_disarm(sw_watchdog *wd)
{
	if (!wd)
		return SW_E_INVAL;
	pthread_mutex_lock(&wd->lock);
	wd->armed = 0;
	wd->generation++;
	pthread_cond_broadcast(&wd->cond);
	pthread_mutex_unlock(&wd->lock);
	return SW_OK;
}

void sw_watchdog_destroy(sw_watchdog *wd)
{
	if (!wd)
		return;
	pthread_mutex_lock(&wd->lock);
	wd->stopping = 1;
	pthread_cond_broadcast(&wd->cond);
	pthread_mutex_unlock(&wd->lock);
	pthread_join(wd->thread, NULL);
	stop_helper(wd);
	pthread_cond_destroy(&wd->cond);
	pthread_mutex_destroy(&wd->lock);
	free(wd);
}
