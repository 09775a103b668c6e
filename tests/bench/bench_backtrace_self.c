/*
 * bench_backtrace_self.c - one-call backtraces of the calling thread,
 * cold and warm: sw_backtrace_self beside glibc's backtrace() and, where
 * it is installed, libunwind's unw_backtrace().
 *
 * Cold is a process's first call, which sets everything up (glibc loads
 * libgcc_s, libunwind reads its tables, sw_backtrace_self registers the
 * loaded objects): each is timed in a fresh process (this program run
 * again with --cold NAME), the median of RUNS.  Warm is the mean of many
 * calls at one depth, after a few.  Prints the times, sw_backtrace_self's
 * ratios to each peer's, and the load average: on a loaded machine one
 * timing says little.  Asserts nothing.
 */
#define _GNU_SOURCE
#include <execinfo.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stackwalk.h>
#ifdef HAVE_LIBUNWIND
#define UNW_LOCAL_ONLY
#include <libunwind.h>
#endif

#define DEPTH     30
#define MAX       128
#define RUNS      7
#define WARM_CALLS 20000

typedef int (*backtrace_fn)(void **, int);

#ifdef HAVE_LIBUNWIND
static int unw_bt(void **buf, int size)
{
	return unw_backtrace(buf, size);
}
#endif

static const struct peer {
	const char *name;
	backtrace_fn fn;
} peers[] = {
	{ "sw_backtrace_self", sw_backtrace_self },
	{ "glibc backtrace", backtrace },
#ifdef HAVE_LIBUNWIND
	{ "unw_backtrace", unw_bt },
#endif
};
#define NPEERS (sizeof peers / sizeof peers[0])

static double now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e9 + (double)ts.tv_nsec;
}

static volatile int sink;

/* At DEPTH frames below main, `calls` calls of fn; the mean ns of one. */
static __attribute__((noinline)) double at_depth(int depth, backtrace_fn fn, int calls)
{
	void *buf[MAX];
	double t0;

	if (depth > 0) {
		double t = at_depth(depth - 1, fn, calls);

		sink++;
		return t;
	}
	t0 = now_ns();
	for (int i = 0; i < calls; i++)
		sink += fn(buf, MAX);
	return (now_ns() - t0) / calls;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* The median first call of peer p, each in a process of its own. */
static double cold(const char *self, unsigned p)
{
	double t[RUNS];

	for (int r = 0; r < RUNS; r++) {
		char arg[16], out[64] = "";
		int fd[2];
		pid_t pid;
		ssize_t got;

		snprintf(arg, sizeof arg, "%u", p);
		if (pipe(fd) != 0 || (pid = fork()) < 0)
			return -1;
		if (pid == 0) {
			dup2(fd[1], 1);
			execl(self, self, "--cold", arg, (char *)NULL);
			_exit(127);
		}
		close(fd[1]);
		got = read(fd[0], out, sizeof out - 1);
		close(fd[0]);
		waitpid(pid, NULL, 0);
		t[r] = got > 0 ? atof(out) : -1;
	}
	qsort(t, RUNS, sizeof t[0], cmp_double);
	return t[RUNS / 2];
}

int main(int argc, char **argv)
{
	double c[NPEERS], w[NPEERS];
	char load[128] = "?";
	FILE *f;

	if (argc == 3 && strcmp(argv[1], "--cold") == 0) {
		unsigned p = (unsigned)atoi(argv[2]);

		if (p >= NPEERS)
			return 1;
		printf("%.0f\n", at_depth(DEPTH, peers[p].fn, 1));
		return 0;
	}
	for (unsigned p = 0; p < NPEERS; p++) {
		c[p] = cold("/proc/self/exe", p);
		at_depth(DEPTH, peers[p].fn, 100);             /* warm it */
		w[p] = at_depth(DEPTH, peers[p].fn, WARM_CALLS);
	}
	if ((f = fopen("/proc/loadavg", "r"))) {
		if (!fgets(load, sizeof load, f))
			strcpy(load, "?\n");
		fclose(f);
	}
	printf("one-call backtrace of %d+ frames: cold (a process's first call, median of %d) and warm\n",
	       DEPTH, RUNS);
	for (unsigned p = 0; p < NPEERS; p++)
		printf("  %-18s cold %10.0f ns   warm %8.0f ns\n", peers[p].name, c[p], w[p]);
	for (unsigned p = 1; p < NPEERS; p++)
		printf("  sw_backtrace_self / %s: cold %.2fx, warm %.2fx\n", peers[p].name, c[0] / c[p],
		       w[0] / w[p]);
	printf("  load average %s", load);
	if (NPEERS < 3)
		printf("  libunwind is not installed: unw_backtrace not measured\n");
	return 0;
}
