/*
 * thread_state.c - per-thread scheduling state, system call, wait channel
 * and CPU time from /proc/PID/task.
 */
#include "config.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include "array_grow.h"
#include "thread_state.h"

/* Read a small /proc file into buf (NUL-terminated); its length, or -1. */
static ssize_t read_proc(int pid, int tid, const char *name, char *buf, size_t len)
{
	char path[96];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%d/task/%d/%s", pid, tid, name);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -1;
	n = read(fd, buf, len - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = '\0';
	return n;
}

/*
 * /proc/PID/task/TID/stat: "tid (comm) S ..." where comm may hold spaces
 * and parentheses, so the fields are counted from the last ')'.  utime and
 * stime are fields 14 and 15, the 12th and 13th after the state (field 3).
 */
static void read_stat(int pid, struct swi_thread_state *ts)
{
	char buf[1024], *p, *end;
	unsigned long long utime = 0, stime = 0;
	long ticks = sysconf(_SC_CLK_TCK);

	ts->state = 0;
	if (read_proc(pid, ts->tid, "stat", buf, sizeof buf) <= 0 || !(p = strrchr(buf, ')')))
		return;
	p++;
	while (*p == ' ')
		p++;
	ts->state = *p;
	for (int field = 3; *p && field < 14; field++) {
		p = strchr(p, ' ');
		if (!p)
			return;
		p++;
	}
	utime = strtoull(p, &end, 10);
	if (end != p)
		stime = strtoull(end, NULL, 10);
	if (ticks <= 0)
		ticks = 100;
	ts->cpu_ns = (uint64_t)(utime + stime) * (1000000000ull / (uint64_t)ticks);
}

/* /proc/PID/task/TID/syscall: "NR ARG0 ... SP PC", "-1 SP PC" or "running". */
static void read_syscall(int pid, struct swi_thread_state *ts)
{
	char buf[256], *end;
	long nr;

	ts->syscall = -1;
	ts->arg0 = 0;
	if (read_proc(pid, ts->tid, "syscall", buf, sizeof buf) <= 0)
		return;
	errno = 0;
	nr = strtol(buf, &end, 10);
	if (end == buf || errno || nr < 0)
		return;
	ts->syscall = nr;
	ts->arg0 = strtoull(end, NULL, 16);
}

static void read_wchan(int pid, struct swi_thread_state *ts)
{
	ssize_t n = read_proc(pid, ts->tid, "wchan", ts->wchan, sizeof ts->wchan);

	/* "0" when the thread is not blocked, or when the kernel hides it. */
	if (n <= 0 || strcmp(ts->wchan, "0") == 0)
		ts->wchan[0] = '\0';
}

/* The thread ids listed in /proc/PID/task, into a malloc'd array. */
static sw_status list_tasks(int pid, struct swi_thread_state **out, size_t *count)
{
	struct swi_thread_state *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *d;
	char path[64];
	DIR *dir;

	snprintf(path, sizeof path, "/proc/%d/task", pid);
	if (!(dir = opendir(path))) {
		/* No /proc/PID/task: no such process, as kill(2) would say. */
		if (errno == ENOENT)
			errno = ESRCH;
		return SW_E_BADADDR;
	}
	while ((d = readdir(dir)) != NULL) {
		char *end;
		long tid = strtol(d->d_name, &end, 10);

		if (*end || tid <= 0)
			continue;
		if (n == SWI_MAX_TASKS) {
			closedir(dir);
			free(v);
			return SW_E_LIMIT;
		}
		if (swi_array_grow((void **)&v, &cap, n + 1, sizeof *v) != SW_OK) {
			closedir(dir);
			free(v);
			return SW_E_NOMEM;
		}
		memset(&v[n], 0, sizeof v[n]);
		v[n++].tid = (int)tid;
	}
	closedir(dir);
	*out = v;
	*count = n;
	return SW_OK;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

sw_status swi_thread_states_read(int pid, unsigned sample_ms, struct swi_thread_state **out,
                                 size_t *count)
{
	struct swi_thread_state *v;
	uint64_t t0, elapsed;
	size_t n;
	sw_status st;

	*out = NULL;
	*count = 0;
	if ((st = list_tasks(pid, &v, &n)) != SW_OK)
		return st;
	t0 = now_ns();
	for (size_t i = 0; i < n; i++)
		read_stat(pid, &v[i]);
	if (sample_ms) {
		uint64_t *first = malloc((n ? n : 1) * sizeof *first);
		struct timespec d = { sample_ms / 1000, (long)(sample_ms % 1000) * 1000000L };

		if (!first) {
			free(v);
			return SW_E_NOMEM;
		}
		for (size_t i = 0; i < n; i++)
			first[i] = v[i].cpu_ns;
		while (nanosleep(&d, &d) != 0 && errno == EINTR)
			;
		elapsed = now_ns() - t0;
		for (size_t i = 0; i < n; i++) {
			read_stat(pid, &v[i]);
			if (elapsed && v[i].cpu_ns >= first[i])
				v[i].cpu_permille = (unsigned)((v[i].cpu_ns - first[i]) * 1000 / elapsed);
		}
		free(first);
	}
	/* Last, so that they describe the threads as they are when attached. */
	for (size_t i = 0; i < n; i++) {
		read_syscall(pid, &v[i]);
		read_wchan(pid, &v[i]);
	}
	*out = v;
	*count = n;
	return SW_OK;
}

const struct swi_thread_state *swi_thread_state_find(const struct swi_thread_state *states,
                                                     size_t count, int tid)
{
	for (size_t i = 0; i < count; i++)
		if (states[i].tid == tid)
			return &states[i];
	return NULL;
}

void swi_thread_state_read_one(int pid, int tid, struct swi_thread_state *ts)
{
	memset(ts, 0, sizeof *ts);
	ts->tid = tid;
	read_stat(pid, ts);
	read_syscall(pid, ts);
}

/*
 * The system calls that create a task, by the numbers of the thread's own
 * ABI as /proc/PID/task/TID/syscall gives them: the host's, and i386's on
 * an x86-64 host.  Creating a task blocks for long only with CLONE_VFORK,
 * and the kernel makes that wait uninterruptible (state D) until the
 * child execs or exits.  The flags of clone3 lie in memory, not in a
 * register: a thread blocked in any of these calls in state D is taken
 * for a vfork parent.
 */
int swi_thread_waits_for_vfork(const struct swi_thread_state *ts)
{
	static const long creating[] = {
#ifdef SYS_vfork
		SYS_vfork,
#endif
#ifdef SYS_clone
		SYS_clone,
#endif
#ifdef SYS_clone3
		SYS_clone3,
#endif
#if defined(__x86_64__)
		190, 120,       /* i386 vfork, clone */
#endif
	};

	if (ts->state != 'D' || ts->syscall < 0)
		return 0;
	for (size_t i = 0; i < sizeof creating / sizeof creating[0]; i++)
		if (ts->syscall == creating[i])
			return 1;
	return 0;
}
