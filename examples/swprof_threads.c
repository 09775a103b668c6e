/*
 * swprof_threads.c - the threads the samples came from, and their names.
 *
 * Each raw sample keeps its thread's kernel id (see swprof.h).
 * record_sample notes the id here, in a table of fixed size allocated
 * with the profile: a lookup, no allocation and no system call, so the
 * agent may note it while the target is stopped.  The names are read
 * later, once the target runs again: read_thread_names reads
 * /proc/PID/task/TID/comm (a bounded read of at most the kernel's 16
 * bytes) for each thread not named yet, and, every THREAD_REREAD
 * rounds and at the end, again for each thread sampled since, so that a
 * thread that renames itself (pthread_setname_np) is named as it was
 * last seen.  swprof -p also takes the name from the kernel's
 * PERF_RECORD_COMM records (thread_named).  A thread that ended before
 * its name could be read stays unnamed: the profile then shows its id
 * only, never a guess.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "swprof.h"

/* Rounds of sampling between two reads of a sampled thread's name. */
#define THREAD_REREAD 64

static thread_entry *thread_slot(pid_t tid, int add)
{
	unsigned h = ((uint32_t)tid * 2654435761u) & (MAX_THREADS - 1);

	if (tid <= 0)
		return NULL;
	for (unsigned n = 0; n < MAX_THREADS; n++, h = (h + 1) & (MAX_THREADS - 1)) {
		thread_entry *e = &prof.threads[h];

		if (e->tid == tid)
			return e;
		if (e->tid == 0) {
			/* A quarter left empty: a lookup of an unknown id ends soon. */
			if (!add || prof.nthreads >= MAX_THREADS / 4 * 3)
				return NULL;
			e->tid = tid;
			prof.nthreads++;
			prof.threads_unread = 1;
			return e;
		}
	}
	return NULL;
}

void thread_sampled(pid_t tid)
{
	thread_entry *e = thread_slot(tid, 1);

	if (e) {
		e->sampled = 1;
		prof.threads_unread |= e->gone;
		e->gone = 0;
	}
}

void thread_named(pid_t tid, const char *name, size_t len)
{
	thread_entry *e = thread_slot(tid, 1);

	if (!e)
		return;
	while (len > 0 && (name[len - 1] == '\n' || name[len - 1] == 0))
		len--;
	if (len >= sizeof e->name)
		len = sizeof e->name - 1;
	memcpy(e->name, name, len);
	e->name[len] = 0;
	e->named = 1;
}

const thread_entry *thread_find(pid_t tid)
{
	return thread_slot(tid, 0);
}

const char *thread_name(pid_t tid)
{
	const thread_entry *e = thread_slot(tid, 0);

	return e && e->named ? e->name : NULL;
}

/* The thread's name from /proc: 1 if read (a thread that has ended has none). */
static int read_comm(pid_t pid, pid_t tid)
{
	char path[64], buf[THREAD_NAME_MAX + 1];
	ssize_t n;
	int fd;

	snprintf(path, sizeof path, "/proc/%ld/task/%ld/comm", (long)pid, (long)tid);
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return 0;
	n = read(fd, buf, sizeof buf);
	close(fd);
	if (n <= 0)
		return 0;
	thread_named(tid, buf, (size_t)n);
	return 1;
}

void read_thread_names(int all)
{
	if (prof.thread_rounds++ % THREAD_REREAD == 0)
		all = 1;
	/* Most rounds: no thread new since the last read, nothing to look at. */
	if (!all && !prof.threads_unread)
		return;
	prof.threads_unread = 0;
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		thread_entry *e = &prof.threads[i];

		if (e->tid == 0 || (!(all && e->sampled) && (e->named || e->gone)))
			continue;
		e->gone = !read_comm(prof.pid, e->tid);
		e->sampled = 0;
	}
}

void forget_threads(void)
{
	memset(prof.threads, 0, sizeof prof.threads);
	prof.nthreads = 0;
	prof.thread_rounds = 0;
	prof.threads_unread = 0;
}
