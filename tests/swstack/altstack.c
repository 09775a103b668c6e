/*
 * altstack.c - the program tests/swstack-altstack.test builds for x86-64,
 * i686 and aarch64, dumps to a core file and walks with both gdb and
 * swstack: signal handlers on alternate signal stacks (sigaltstack), each
 * interrupted by a second, nested signal on the same stack.  Plain C and
 * POSIX only, so that it cross-builds statically.
 *
 *   altstack wait    every thread blocks; "ready" on stdout, then main
 *                    waits (the test takes the core with gdb's gcore)
 *   altstack abort   the same, but the last handler calls abort() once
 *                    every thread is in place: the kernel or qemu-user
 *                    dumps core
 *
 * Two threads, each on its own alternate stack:
 *   up     its alternate stack is an array in .bss, below the thread's
 *          stack: the walk leaves it upwards
 *   down   its alternate stack is mapped before the thread is created, so
 *          the thread's stack lies below it: the walk leaves it downwards
 * Each spins in spin_b until main sends it its first signal (up: SIGUSR1
 * with SA_SIGINFO; down: SIGUSR2 without, an i386 sigframe with no
 * uc_stack); that handler spins in outer_b until main sends SIGURG
 * (nested, on the same alternate stack), whose handler calls inner_a ->
 * inner_b, which blocks in read() (wait) or calls abort() (abort, the
 * last thread).  Main waits in sem_wait, then in read().
 */
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

#define ALT_SIZE 65536

static int never[2];                    /* a pipe nobody writes to */
static sem_t step;                      /* posted (async-signal-safe) at each stage */
static int do_abort;
static volatile int spin_stop, outer_stop;
static volatile int threads_in_place;
static char up_stack[ALT_SIZE] __attribute__((aligned(16)));

struct thread_arg {
	void *alt;
	int last;                       /* aborts, in abort mode */
};

static __thread int is_last;

/* Block for good in read(): the pipe's write end stays open. */
static NOIPA int inner_b(const volatile int *keep)
{
	char c;

	if (do_abort && is_last)
		abort();
	sem_post(&step);
	return (int)read(never[0], &c, 1) + *keep;
}

static NOIPA int inner_a(const volatile int *p)
{
	volatile int v = *p + 1;

	return inner_b(&v) + v;
}

/* The nested signal's handler, on the same alternate stack. */
static void nested_handler(int sig)
{
	volatile int v = sig;

	inner_a(&v);
}

static NOIPA int outer_b(const volatile int *p)
{
	volatile int v = *p + 2;

	sem_post(&step);
	while (!outer_stop)
		v++;
	return v;
}

static NOIPA int outer_a(const volatile int *p)
{
	volatile int v = *p + 1;

	return outer_b(&v) + v;
}

static void first_handler(int sig)
{
	volatile int v = sig;

	outer_a(&v);
}

static void first_action(int sig, siginfo_t *info, void *uc)
{
	(void)info;
	(void)uc;
	first_handler(sig);
}

static NOIPA int spin_b(const volatile int *p)
{
	volatile int v = *p;

	sem_post(&step);
	while (!spin_stop)
		v++;
	return v;
}

static NOIPA int spin_a(const volatile int *p)
{
	volatile int v = *p + 1;

	return spin_b(&v) + v;
}

static void *thread_main(void *arg)
{
	struct thread_arg *a = arg;
	stack_t ss;
	volatile int v = 5;

	memset(&ss, 0, sizeof ss);
	ss.ss_sp = a->alt;
	ss.ss_size = ALT_SIZE;
	if (sigaltstack(&ss, NULL) != 0) {
		perror("sigaltstack");
		exit(1);
	}
	is_last = a->last;
	return (void *)(long)spin_a(&v);
}

static void on_signal(int sig, int siginfo, int nested)
{
	struct sigaction sa;

	memset(&sa, 0, sizeof sa);
	sigemptyset(&sa.sa_mask);
	sa.sa_flags = SA_ONSTACK | (siginfo ? SA_SIGINFO : 0);
	if (siginfo)
		sa.sa_sigaction = first_action;
	else
		sa.sa_handler = nested ? nested_handler : first_handler;
	if (sigaction(sig, &sa, NULL) != 0) {
		perror("sigaction");
		exit(1);
	}
}

static void wait_step(void)
{
	while (sem_wait(&step) != 0)
		;
}

/* Start a thread on alternate stack alt and take it through both signals. */
static pthread_t start(struct thread_arg *a, int first_sig)
{
	pthread_t t;

	if (pthread_create(&t, NULL, thread_main, a) != 0) {
		perror("pthread_create");
		exit(1);
	}
	wait_step();                    /* spinning in spin_b */
	pthread_kill(t, first_sig);
	wait_step();                    /* its handler spins in outer_b */
	pthread_kill(t, SIGURG);
	if (!a->last || !do_abort)
		wait_step();            /* the nested handler is about to block */
	return t;
}

int main(int argc, char **argv)
{
	static struct thread_arg up = { up_stack, 0 }, down = { NULL, 1 };
	char c;

	do_abort = argc > 1 && strcmp(argv[1], "abort") == 0;
	if (pipe(never) != 0 || sem_init(&step, 0, 0) != 0)
		return 1;
	on_signal(SIGUSR1, 1, 0);
	on_signal(SIGUSR2, 0, 0);
	on_signal(SIGURG, 0, 1);
	/* Mapped before the thread's stack, which then lies below it. */
	down.alt = mmap(NULL, ALT_SIZE, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (down.alt == MAP_FAILED)
		return 1;
	start(&up, SIGUSR1);
	start(&down, SIGUSR2);
	threads_in_place = 2;
	printf("ready\n");
	fflush(stdout);
	return (int)read(never[0], &c, 1);
}
