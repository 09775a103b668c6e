/*
 * lli-abba.c - a deadlock in JIT code, for lli (tests/swdeadlock-lli.test):
 * jit_one and jit_two take two mutexes in opposite orders through
 * jit_take, both hold their first once the barrier lets main go on; main
 * then creates the file named by argv[1] and waits in pause().  Compiled
 * to IR with clang -O1 -fomit-frame-pointer: the JIT frames are unwound
 * by the CFI lli registers with gdb.
 */
#include <fcntl.h>
#include <pthread.h>
#include <unistd.h>

static pthread_mutex_t first = PTHREAD_MUTEX_INITIALIZER, second = PTHREAD_MUTEX_INITIALIZER;
static pthread_barrier_t both;

__attribute__((noinline)) void jit_take(pthread_mutex_t *m)
{
	pthread_mutex_lock(m);
}

__attribute__((noinline)) void *jit_one(void *p)
{
	jit_take(&first);
	pthread_barrier_wait(&both);
	jit_take(&second);
	return p;
}

__attribute__((noinline)) void *jit_two(void *p)
{
	jit_take(&second);
	pthread_barrier_wait(&both);
	jit_take(&first);
	return p;
}

int main(int argc, char **argv)
{
	pthread_t t1, t2;

	pthread_barrier_init(&both, 0, 3);
	pthread_create(&t1, 0, jit_one, 0);
	pthread_create(&t2, 0, jit_two, 0);
	pthread_barrier_wait(&both);
	if (argc > 1)
		close(creat(argv[1], 0644));
	for (;;)
		pause();
}
