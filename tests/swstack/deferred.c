/*
 * deferred.c - a process for tests/swstack-deferred.test: it maps the
 * file argv[1] executable (a library cut short, which no module loader
 * takes) but never runs it, says "ready", and waits in pause() until it
 * is killed.  swstack loads a mapped file only when a walk reaches its
 * code: it must walk this process without a word about that file.
 */
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/stat.h>

int main(int argc, char **argv)
{
	struct stat sb;
	void *p;
	int fd;

	if (argc != 2 || (fd = open(argv[1], O_RDONLY)) < 0 || fstat(fd, &sb) != 0)
		return 2;
	p = mmap(NULL, (size_t)sb.st_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (p == MAP_FAILED)
		return 2;
	printf("ready %p\n", p);
	fflush(stdout);
	for (;;)
		pause();
}
