/*
 * named_threads.c - what swprof-threads.test profiles: three threads
 * that name themselves (pthread_setname_np) and each burn CPU in a
 * function of its own, as the test's names say:
 *
 *   sw-alpha: alpha_outer -> spin_alpha
 *   sw-beta:  beta_outer -> spin_beta
 *   sw-gamma: gamma_outer -> spin_gamma
 *
 * Each prints "TID NAME" once named (its id from gettid, its name read
 * back from the kernel), then "ready" once all are.  With an argument N
 * each thread spins N rounds and the program exits; without one they
 * spin until killed.  The work is a count, never a time.  On SIGUSR1 the
 * sw-beta thread renames itself sw-beta2 and prints "renamed TID NAME".
 */
#define _GNU_SOURCE
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <sys/syscall.h>

#define SPIN 1000000

static volatile unsigned long sink;
static long rounds;     /* 0: forever */
static pthread_barrier_t named;
static pthread_mutex_t out = PTHREAD_MUTEX_INITIALIZER;
static volatile sig_atomic_t rename_asked;

static void on_usr1(int signo)
{
	(void)signo;
	rename_asked = 1;
}

/* Each different, so that no compiler folds them into one. */
__attribute__((noinline)) static void spin_alpha(void) { for (unsigned i = 0; i < SPIN; i++) sink += i; }
__attribute__((noinline)) static void spin_beta(void) { for (unsigned i = 0; i < SPIN; i++) sink += 2 * i; }
__attribute__((noinline)) static void spin_gamma(void) { for (unsigned i = 0; i < SPIN; i++) sink += 3 * i; }

__attribute__((noinline)) static void alpha_outer(void) { spin_alpha(); sink++; }
__attribute__((noinline)) static void beta_outer(void) { spin_beta(); sink++; }
__attribute__((noinline)) static void gamma_outer(void) { spin_gamma(); sink++; }

static const struct { const char *name; void (*burn)(void); } jobs[] = {
	{ "sw-alpha", alpha_outer }, { "sw-beta", beta_outer }, { "sw-gamma", gamma_outer },
};

static void *worker(void *arg)
{
	long j = (long)arg;
	char name[16];

	pthread_setname_np(pthread_self(), jobs[j].name);
	pthread_getname_np(pthread_self(), name, sizeof name);
	pthread_mutex_lock(&out);
	printf("%ld %s\n", (long)syscall(SYS_gettid), name);
	fflush(stdout);
	pthread_mutex_unlock(&out);
	pthread_barrier_wait(&named);
	for (long r = 0; rounds == 0 || r < rounds; r++) {
		jobs[j].burn();
		if (j == 1 && rename_asked == 1) {
			rename_asked = 2;
			pthread_setname_np(pthread_self(), "sw-beta2");
			pthread_getname_np(pthread_self(), name, sizeof name);
			printf("renamed %ld %s\n", (long)syscall(SYS_gettid), name);
			fflush(stdout);
		}
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[3];

	rounds = argc > 1 ? atol(argv[1]) : 0;
	signal(SIGUSR1, on_usr1);
	pthread_barrier_init(&named, NULL, 4);
	for (long j = 0; j < 3; j++)
		if (pthread_create(&t[j], NULL, worker, (void *)j) != 0)
			return 1;
	pthread_barrier_wait(&named);
	printf("ready\n");
	fflush(stdout);
	for (int j = 0; j < 3; j++)
		pthread_join(t[j], NULL);
	pthread_barrier_destroy(&named);
	return (int)(sink & 0);
}
