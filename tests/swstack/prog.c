/*
 * prog.c - the program tests/swstack-gdb.test builds for x86-64, i686 and
 * aarch64 at several optimisation levels, with and without frame pointers,
 * dumps to a core file and walks with both gdb and swstack.  Plain C and
 * POSIX only, so that it cross-builds statically.
 *
 *   prog wait    every thread blocks; "ready" on stdout, then main waits
 *                (the test takes the core with gdb's gcore, then kills it)
 *   prog abort   the same, but the signal handler calls abort() once every
 *                thread is in place: the kernel or qemu-user dumps core
 *
 * The threads, each in its own call chain:
 *   deep     a recursion DEPTH calls deep, blocked in read() at the bottom
 *   chain    chain_a -> chain_b (a variable-length array) -> chain_c -> chain_d, blocked in read()
 *   locked   locked_a -> locked_b, blocked in pthread_mutex_lock on a
 *            mutex main holds
 *   signal   spins in a leaf loop until main sends it SIGUSR1; the handler
 *            calls handler_a -> handler_b, which block in read() (wait) or
 *            call abort() (abort)
 *   main     joins the signal thread
 */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#define DEPTH 120
#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

static int never[2];                    /* a pipe nobody writes to */
static pthread_mutex_t held = PTHREAD_MUTEX_INITIALIZER;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cond = PTHREAD_COND_INITIALIZER;
static int in_place;                    /* threads that reached their wait */
static int do_abort;
static volatile int spinning, spin_stop;

/* Count this thread as in place (it is about to block). */
static void arrive(void)
{
	pthread_mutex_lock(&lock);
	in_place++;
	pthread_cond_broadcast(&cond);
	pthread_mutex_unlock(&lock);
}

static void wait_for(int n)
{
	pthread_mutex_lock(&lock);
	while (in_place < n)
		pthread_cond_wait(&cond, &lock);
	pthread_mutex_unlock(&lock);
}

/* Block for good in read(): the pipe's write end stays open. */
static NOIPA int block(volatile int *keep)
{
	char c;

	arrive();
	return (int)read(never[0], &c, 1) + *keep;
}

/* Every caller passes the address of a local, so no call is a tail call. */
static NOIPA int deep(int n, volatile int *up)
{
	volatile int here = n;

	if (n == 0)
		return block(&here) + *up;
	return deep(n - 1, &here) + here + *up;
}

static void *deep_main(void *arg)
{
	volatile int v = 1;

	return (void *)((long)deep(DEPTH, &v) + (long)arg);
}

static NOIPA int chain_d(volatile int *p)
{
	volatile int v = *p + 4;

	return block(&v) + v;
}

static NOIPA int chain_c(volatile int *p)
{
	volatile int v = *p + 3;

	return chain_d(&v) + v;
}

/* A variable-sized frame: the CFA is found through the frame pointer. */
static NOIPA int chain_b(volatile int *p)
{
	volatile char buf[(*p & 63) + 16];

	buf[0] = (char)*p;
	return chain_c(p) + buf[0];
}

static NOIPA int chain_a(volatile int *p)
{
	volatile int v = *p + 1;

	return chain_b(&v) + v;
}

static void *chain_main(void *arg)
{
	volatile int v = 7;

	return (void *)((long)chain_a(&v) + (long)arg);
}

static NOIPA int locked_b(volatile int *p)
{
	volatile int v = *p;

	arrive();
	pthread_mutex_lock(&held);
	pthread_mutex_unlock(&held);
	return v;
}

static NOIPA int locked_a(volatile int *p)
{
	volatile int v = *p + 1;

	return locked_b(&v) + v;
}

static void *locked_main(void *arg)
{
	volatile int v = 3;

	return (void *)((long)locked_a(&v) + (long)arg);
}

static NOIPA int handler_b(volatile int *p)
{
	volatile int v = *p + 2;

	if (do_abort) {
		arrive();
		abort();
	}
	return block(&v) + v;
}

static NOIPA int handler_a(int sig)
{
	volatile int v = sig;

	return handler_b(&v) + v;
}

static void on_signal(int sig, siginfo_t *si, void *uc)
{
	(void)si;
	(void)uc;
	handler_a(sig);
}

/* A leaf loop: the signal interrupts it at an arbitrary instruction. */
static NOIPA unsigned long spin(volatile unsigned long *count)
{
	spinning = 1;
	while (!spin_stop)
		(*count)++;
	return *count;
}

static NOIPA unsigned long spin_outer(void)
{
	volatile unsigned long count = 0;

	return spin(&count) + count;
}

static void *signal_main(void *arg)
{
	return (void *)(spin_outer() + (unsigned long)arg);
}

/* Small stacks keep the cores small. */
static void start(pthread_t *t, void *(*fn)(void *))
{
	pthread_attr_t attr;

	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 256 * 1024);
	if (pthread_create(t, &attr, fn, NULL) != 0) {
		perror("pthread_create");
		exit(2);
	}
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	pthread_t t[4];

	if (argc != 2 || (strcmp(argv[1], "wait") != 0 && strcmp(argv[1], "abort") != 0)) {
		fprintf(stderr, "usage: prog wait|abort\n");
		return 2;
	}
	do_abort = strcmp(argv[1], "abort") == 0;
#ifdef PR_SET_PTRACER
	/* Let gdb attach (for gcore) where Yama allows only ancestors to trace. */
	prctl(PR_SET_PTRACER, PR_SET_PTRACER_ANY, 0, 0, 0);
#endif
	if (pipe(never) != 0) {
		perror("pipe");
		return 2;
	}
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_signal;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, NULL);

	pthread_mutex_lock(&held);
	start(&t[0], deep_main);
	start(&t[1], chain_main);
	start(&t[2], locked_main);
	wait_for(3);
	start(&t[3], signal_main);
	while (!spinning)
		usleep(1000);
	usleep(20000);
	/* The handler blocks (or aborts) inside the interrupted spin loop. */
	pthread_kill(t[3], SIGUSR1);
	if (!do_abort) {
		wait_for(4);
		printf("ready\n");
		fflush(stdout);
	}
	pthread_join(t[3], NULL);
	return 0;
}
