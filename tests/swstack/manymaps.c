/*
 * manymaps.c - a process that maps the first page of one ELF file (its own
 * executable) COUNT times, readable and executable, each a mapping of its
 * own, then prints "ready" and waits to be walked.  A tool that loads
 * every mapping of a file as a module spends time and memory in COUNT;
 * swstack and swdeadlock must load it once (swstack-manymaps.test).
 *
 *   manymaps COUNT
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

/* Where the walked thread waits: a frame of its own, for the walk to find. */
static __attribute__((noinline)) void wait_here(void)
{
	for (;;)
		pause();
}

int main(int argc, char **argv)
{
	long count = argc > 1 ? strtol(argv[1], NULL, 10) : 0;
	int fd = open("/proc/self/exe", O_RDONLY);
	/* One page a copy keeps the core small: the copies' number is the point. */
	size_t page = (size_t)sysconf(_SC_PAGESIZE);

	if (count <= 0 || fd < 0) {
		fprintf(stderr, "usage: manymaps COUNT\n");
		return 2;
	}
	for (long i = 0; i < count; i++)
		if (mmap(NULL, page, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0) ==
		    MAP_FAILED) {
			perror("mmap");
			return 1;
		}
	printf("ready\n");
	fflush(stdout);
	wait_here();
	return 0;
}
