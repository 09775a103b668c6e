/*
 * vfork.c - a process with a thread blocked in vfork(): its child never
 * execs and never exits (it pauses until killed), so the thread cannot
 * enter ptrace-stop.  The main thread waits in pause().  See
 * swstack-vfork.test.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <unistd.h>
#include <sys/syscall.h>

static void *vforker(void *arg)
{
	(void)arg;
	/* Only system calls in the child: it shares the parent's memory. */
	if (vfork() == 0)
		for (;;)
			syscall(SYS_pause);
	return NULL;
}

int main(void)
{
	pthread_t t;

	if (pthread_create(&t, NULL, vforker, NULL) != 0)
		return 1;
	for (;;)
		pause();
}
