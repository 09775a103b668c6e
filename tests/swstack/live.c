/*
 * live.c - the process tests/swstack-live.test attaches `swstack -p` (and
 * gdb) to: threads blocked in known call chains, which must go on and
 * finish normally once the tracers are gone.  Plain C and POSIX (and
 * Linux's /proc), so that it also cross-builds statically for i686.
 *
 *   live
 *
 * The threads, each blocked in its own call chain:
 *   deep     deep_main -> live_deep x (DEPTH + 1) -> live_block -> read()
 *   chain    chain_main -> chain_a -> chain_b -> chain_c -> live_block -> read()
 *   locked   locked_main -> locked_a -> locked_b -> pthread_mutex_lock() on
 *            a mutex main holds
 *   main     main -> wait_for_go -> read() of standard input
 *
 * Main prints "pid P", "read_nr N" (the read system call's number, for the
 * test to see main blocked in it through /proc/P/syscall) and "ready" only
 * once every other thread is blocked in its last system call (seen in
 * /proc/self/task/TID/syscall: the number and first argument), so that
 * what the test sees is deterministic.
 *
 * A line "go" on standard input releases everyone: main writes one byte per
 * reader to the pipe and unlocks the mutex, joins the threads and exits
 * with status 42 if every read() returned the byte it should have (a read
 * a tracer broke with EINTR or a short count would not) and 1 otherwise;
 * anything else on standard input, or its end, exits 1 too.
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define DEPTH 12
#define NTHREADS 3
#define EXIT_RELEASED 42
#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

static int pipefd[2];                   /* the readers block on pipefd[0] */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int arrived;

/* What each thread blocks in at the end: its tid, syscall and first argument. */
static struct blocked {
	long tid;
	long nr;
	uintptr_t arg0;
	int ok;                         /* its wait ended as it should */
} blocked[NTHREADS];

static void arrive(int i, long nr, uintptr_t arg0)
{
	pthread_mutex_lock(&lock);
	blocked[i].tid = syscall(SYS_gettid);
	blocked[i].nr = nr;
	blocked[i].arg0 = arg0;
	arrived++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

/* Block in read() until main releases this thread with one byte. */
static NOIPA int live_block(int i, volatile int *keep)
{
	char c = 0;

	arrive(i, SYS_read, (uintptr_t)pipefd[0]);
	blocked[i].ok = read(pipefd[0], &c, 1) == 1 && c == 'x';
	return blocked[i].ok + *keep;
}

/* Each caller passes the address of a local, so no call is a tail call. */
static NOIPA int live_deep(int n, volatile int *up)
{
	volatile int here = n;

	if (n == 0)
		return live_block(0, &here) + *up;
	return live_deep(n - 1, &here) + here + *up;
}

static NOIPA void *deep_main(void *arg)
{
	volatile int top = 1;

	return (void *)(intptr_t)(live_deep(DEPTH, &top) + (arg != NULL));
}

static NOIPA int chain_c(volatile int *up)
{
	volatile int here = 3;

	return live_block(1, &here) + *up;
}

static NOIPA int chain_b(volatile int *up)
{
	volatile int here = 2;

	return chain_c(&here) + *up;
}

static NOIPA int chain_a(volatile int *up)
{
	volatile int here = 1;

	return chain_b(&here) + *up;
}

static NOIPA void *chain_main(void *arg)
{
	volatile int top = 0;

	return (void *)(intptr_t)(chain_a(&top) + (arg != NULL));
}

static NOIPA int locked_b(volatile int *up)
{
	arrive(2, SYS_futex, (uintptr_t)&held);
	blocked[2].ok = pthread_mutex_lock(&held) == 0;
	pthread_mutex_unlock(&held);
	return *up;
}

static NOIPA int locked_a(volatile int *up)
{
	volatile int here = 1;

	return locked_b(&here) + *up;
}

static NOIPA void *locked_main(void *arg)
{
	volatile int top = 0;

	return (void *)(intptr_t)(locked_a(&top) + (arg != NULL));
}

/* The same call: a 32-bit C library may wait on a futex with futex_time64. */
static int same_syscall(long nr, long want)
{
#ifdef SYS_futex_time64
	if (want == SYS_futex && nr == SYS_futex_time64)
		return 1;
#endif
	return nr == want;
}

/* Is thread i in its last system call yet?  /proc says "NR ARG0 ..." in hex. */
static int in_place(int i)
{
	char path[64], line[256];
	unsigned long long arg0;
	long nr;
	FILE *f;
	int ok;

	snprintf(path, sizeof path, "/proc/self/task/%ld/syscall", blocked[i].tid);
	if (!(f = fopen(path, "r")))
		return 0;
	ok = fgets(line, sizeof line, f) && sscanf(line, "%ld %llx", &nr, &arg0) == 2 &&
	     same_syscall(nr, blocked[i].nr) && (uintptr_t)arg0 == blocked[i].arg0;
	fclose(f);
	return ok;
}

static NOIPA int wait_for_go(void)
{
	char line[16];
	ssize_t n = read(0, line, sizeof line - 1);

	if (n <= 0)
		return 0;
	line[n] = '\0';
	return strcmp(line, "go\n") == 0;
}

int main(void)
{
	void *(*mains[NTHREADS])(void *) = { deep_main, chain_main, locked_main };
	const struct timespec tick = { 0, 10 * 1000 * 1000 };
	pthread_t th[NTHREADS];
	int go, ok = 1;

	if (pipe(pipefd) != 0) {
		perror("pipe");
		return 1;
	}
	pthread_mutex_lock(&held);
	for (int i = 0; i < NTHREADS; i++) {
		if (pthread_create(&th[i], NULL, mains[i], NULL) != 0) {
			fprintf(stderr, "live: pthread_create failed\n");
			return 1;
		}
	}
	pthread_mutex_lock(&lock);
	while (arrived < NTHREADS)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
	for (int i = 0; i < NTHREADS; i++)
		while (!in_place(i))
			nanosleep(&tick, NULL);
	printf("pid %ld\nread_nr %ld\nready\n", (long)getpid(), (long)SYS_read);
	fflush(stdout);

	go = wait_for_go();
	/* Release the readers and the locked thread whatever came in, and join them. */
	if (write(pipefd[1], "xx", 2) != 2)
		ok = 0;
	pthread_mutex_unlock(&held);
	for (int i = 0; i < NTHREADS; i++) {
		pthread_join(th[i], NULL);
		ok = ok && blocked[i].ok;
	}
	printf("released %d %s\n", NTHREADS, go && ok ? "ok" : "broken");
	return go && ok ? EXIT_RELEASED : 1;
}
