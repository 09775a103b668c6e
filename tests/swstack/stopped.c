/*
 * stopped.c - a process one of whose threads cannot be walked to its end,
 * for tests/swstack-stopped.test.  The main thread clears the frame
 * pointer and then calls pause() in a loop from lost(), whose CFI (at -O0,
 * with a frame pointer) finds its caller's frame through that register:
 * unwinding lost() gives a stack pointer of 16, below the stack, and gdb
 * says "Backtrace stopped: previous frame inner to this frame".  Another
 * thread waits in pause() with an ordinary stack.  The program also maps
 * a file that is not ELF (argv[1]), as locale archives are mapped, which
 * swstack must pass over in silence.  A third thread clears the return
 * address in its own frame record and waits: its stack ends in a return
 * address of 0 that no outermost function gave (gdb shows a frame at PC
 * 0 and goes no further), an early stop too.
 *
 *   stopped DATAFILE      prints "ready" when both threads are in place
 */
#include <fcntl.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdio.h>
#include <sys/mman.h>
#include <unistd.h>

static sem_t started;

static void *idle(void *arg)
{
	(void)arg;
	sem_post(&started);
	for (;;)
		pause();
	return NULL;
}

__attribute__((noinline)) static void zeroed(void)
{
	/* At -O0 with a frame pointer the CFI reads the return address from the frame record. */
	((void *volatile *)__builtin_frame_address(0))[1] = NULL;
	sem_post(&started);
	for (;;)
		pause();
}

static void *zeroed_thread(void *arg)
{
	(void)arg;
	zeroed();
	return NULL;
}

__attribute__((noinline)) static void lost(void)
{
	puts("ready");
	fflush(stdout);
#if defined(__x86_64__)
	__asm__ volatile("xor %%ebp, %%ebp\n1:\tcall pause\n\tjmp 1b" ::: "rax", "rcx", "rdx", "rsi",
	                 "rdi", "r8", "r9", "r10", "r11", "memory");
#else
#error "x86-64 only"
#endif
}

__attribute__((noinline)) static void middle(void)
{
	lost();
	__asm__ volatile("");   /* not a tail call */
}

int main(int argc, char **argv)
{
	pthread_t t, z;
	int fd;

	if (argc != 2 || (fd = open(argv[1], O_RDONLY)) < 0 ||
	    mmap(NULL, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) {
		fprintf(stderr, "usage: stopped DATAFILE (a readable file of at least a page)\n");
		return 2;
	}
	sem_init(&started, 0, 0);
	if (pthread_create(&t, NULL, idle, NULL) != 0)
		return 2;
	sem_wait(&started);
	if (pthread_create(&z, NULL, zeroed_thread, NULL) != 0)
		return 2;
	sem_wait(&started);
	middle();
	return 0;
}
