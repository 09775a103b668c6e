/*
 * read_bounded.c - a whole file, read within a hard limit (read_bounded.h).
 * The size comes from fstat() of the opened file and is checked before the
 * buffer is allocated; the reading stops at that size, so a file that
 * grows meanwhile cannot make it read more.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include "read_bounded.h"

unsigned char *read_bounded(const char *path, size_t *len, const char **why)
{
	/* O_NONBLOCK: opening a FIFO must not wait for a writer. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	unsigned char *buf = NULL;
	struct stat sb;
	size_t done = 0;

	*why = NULL;
	if (fd < 0) {
		*why = strerror(errno);
		return NULL;
	}
	if (fstat(fd, &sb) != 0)
		*why = strerror(errno);
	else if (!S_ISREG(sb.st_mode))
		*why = "not a regular file";
	else if ((unsigned long long)sb.st_size > READ_BOUNDED_MAX)
		*why = "larger than 1 GiB";
	else if (!(buf = malloc((size_t)sb.st_size + 1)))
		*why = strerror(ENOMEM);
	while (buf && done < (size_t)sb.st_size) {
		ssize_t n = read(fd, buf + done, (size_t)sb.st_size - done);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			*why = n < 0 ? strerror(errno) : "shorter than its size";
			free(buf);
			buf = NULL;
			break;
		}
		done += (size_t)n;
	}
	close(fd);
	*len = done;
	return buf;
}
