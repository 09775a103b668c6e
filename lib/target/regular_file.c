/* regular_file.c - opening a file a target names (regular_file.h). */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include "regular_file.h"

int swi_open_regular(const char *path, off_t *size)
{
	struct stat sb;
	/* O_NONBLOCK: a FIFO opens at once instead of waiting for a writer; it
	 * changes nothing for a regular file.  O_NOCTTY: a terminal is never
	 * adopted as the controlling one. */
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);

	if (fd < 0)
		return -1;
	if (fstat(fd, &sb) != 0) {
		int e = errno;

		close(fd);
		errno = e;
		return -1;
	}
	if (!S_ISREG(sb.st_mode)) {
		close(fd);
		errno = EINVAL;
		return -2;
	}
	if (size)
		*size = sb.st_size;
	return fd;
}
