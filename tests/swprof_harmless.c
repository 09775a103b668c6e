/*
 * swprof_harmless.c - a program that ends in each of the ways swprof must
 * survive unnoticed (tests/swprof-harmless.test runs it under swprof).
 * The first argument says how:
 *
 *   exec       works, then execs /bin/true
 *   fork-exec  forks; the child works, then execs this program "exit"
 *   exit       works, then returns from main
 *   _exit      works, then calls _exit(0)
 *   sigint     works, then sends itself SIGINT, as Ctrl-C does
 *   sigterm    works, then sends itself SIGTERM
 *   own-sigprof installs its own SIGPROF handler and an ITIMER_PROF timer,
 *              and exits 0 once the handler has run 20 times (1 if it
 *              does not within a bounded amount of work)
 *   threads    starts 2000 threads that each work a little and exit
 *
 * The work is a count of iterations, never a time: a loaded machine only
 * makes it slower.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

static volatile unsigned long sink;

static void __attribute__((noinline)) work(unsigned long n)
{
	for (unsigned long i = 0; i < n; i++)
		sink += i * i;
}

static volatile sig_atomic_t ticks;

static void on_prof(int signo)
{
	(void)signo;
	ticks++;
}

static void *short_thread(void *arg)
{
	(void)arg;
	work(20000);
	return NULL;
}

static int threads(void)
{
	enum { TOTAL = 2000, BATCH = 50 };

	for (int done = 0; done < TOTAL; done += BATCH) {
		pthread_t t[BATCH];

		for (int i = 0; i < BATCH; i++)
			if (pthread_create(&t[i], NULL, short_thread, NULL) != 0)
				return 1;
		for (int i = 0; i < BATCH; i++)
			pthread_join(t[i], NULL);
	}
	return 0;
}

static int own_sigprof(void)
{
	struct sigaction sa;
	struct itimerval it = { { 0, 1000 }, { 0, 1000 } };

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_prof;
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_RESTART;
	if (sigaction(SIGPROF, &sa, NULL) != 0 || setitimer(ITIMER_PROF, &it, NULL) != 0)
		return 1;
	/*
	 * Bounded by work, not time: 20 ticks take 20 ms of CPU time; the
	 * bound is some hundred times that, for a handler that never runs.
	 */
	for (int i = 0; i < 20000 && ticks < 20; i++)
		work(100000);
	if (ticks < 20) {
		printf("own handler ran %d times\n", (int)ticks);
		return 1;
	}
	printf("own handler ran\n");
	return 0;
}

int main(int argc, char **argv)
{
	const char *how = argc > 1 ? argv[1] : "exit";
	pid_t child;
	int status;

	if (!strcmp(how, "own-sigprof"))
		return own_sigprof();
	if (!strcmp(how, "threads"))
		return threads();
	if (!strcmp(how, "fork-exec")) {
		child = fork();
		if (child < 0)
			return 1;
		if (child == 0) {
			work(2000000);
			execl("/proc/self/exe", argv[0], "exit", (char *)NULL);
			_exit(127);
		}
		work(2000000);
		if (waitpid(child, &status, 0) != child)
			return 1;
		return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
	}
	work(5000000);
	if (!strcmp(how, "exec")) {
		execl("/bin/true", "true", (char *)NULL);
		return 127;
	}
	if (!strcmp(how, "_exit"))
		_exit(0);
	if (!strcmp(how, "sigint") || !strcmp(how, "sigterm")) {
		kill(getpid(), !strcmp(how, "sigint") ? SIGINT : SIGTERM);
		for (;;)
			pause();
	}
	return 0;
}
