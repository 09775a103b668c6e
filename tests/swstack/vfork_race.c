/*
 * vfork_race.c - a thread that enters vfork() over and over, so that an
 * attach's seize and interrupt land anywhere in its cycle.  Each child
 * looks at whether that thread is traced (TracerPid in its
 * /proc/TID/status).  If not, it exits at once and the loop goes on.  If
 * it is, an attach seized the thread before it could stop, and the thread
 * now waits for this child: the child writes its pid on a line of stdout
 * and pauses until killed, so that the thread cannot stop while it lives.
 * Each child is reaped once it is gone.
 * The main thread waits in pause().  See swstack-vfork.test.
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <sys/wait.h>

/* Only system calls and stack variables in the child: it runs on its parent's stack. */
static void child(const char *status_path)
{
	char buf[2048], line[24], *p;
	long fd = syscall(SYS_openat, AT_FDCWD, status_path, O_RDONLY), n = -1;
	long pid = syscall(SYS_getpid);
	size_t len = 0;

	if (fd >= 0) {
		n = syscall(SYS_read, fd, buf, sizeof buf - 1);
		syscall(SYS_close, fd);
	}
	if (n <= 0)
		_exit(1);
	buf[n] = '\0';
	p = strstr(buf, "TracerPid:\t");
	if (!p || p[sizeof "TracerPid:\t" - 1] == '0')
		_exit(0);
	for (long v = pid; v; v /= 10)
		len++;
	line[len] = '\n';
	for (size_t i = len; i > 0; i--, pid /= 10)
		line[i - 1] = (char)('0' + pid % 10);
	syscall(SYS_write, 1, line, len + 1);
	for (;;)
		syscall(SYS_pause);
}

static void *vforker(void *arg)
{
	char path[64];

	(void)arg;
	snprintf(path, sizeof path, "/proc/%ld/status", (long)syscall(SYS_gettid));
	for (;;) {
		pid_t pid = vfork();

		if (pid == 0)
			child(path);
		/* Reaped, or the zombies would fill the machine's process table. */
		if (pid > 0)
			waitpid(pid, NULL, 0);
	}
	return NULL;
}

int main(void)
{
	pthread_t t;

	setvbuf(stdout, NULL, _IONBF, 0);
	if (pthread_create(&t, NULL, vforker, NULL) != 0)
		return 1;
	for (;;)
		pause();
}
