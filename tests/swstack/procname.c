#define _GNU_SOURCE
#include <pthread.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <unistd.h>

static pthread_barrier_t named;

static void *worker(void *arg)
{
	prctl(PR_SET_NAME, "pn-worker");
	pthread_barrier_wait(&named);
	for (;;)
		pause();
	return arg;
}

int main(void)
{
	pthread_t t;

	prctl(PR_SET_NAME, "pn\033[1m-main");
	pthread_barrier_init(&named, NULL, 2);
	pthread_create(&t, NULL, worker, NULL);
	pthread_barrier_wait(&named);
	abort();
}
