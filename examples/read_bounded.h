/*
 * read_bounded.h - read a whole input file of the tools (an SWU image, an
 * ELF file or code dump) into memory, within a hard limit: never a buffer
 * sized by what the path says about itself unchecked.  A directory, a
 * device such as /dev/zero or a FIFO is refused before anything is read.
 */
#ifndef READ_BOUNDED_H
#define READ_BOUNDED_H

#include <stddef.h>

/* The largest file the tools read whole (documented in swstack(1), swverify(1)). */
#define READ_BOUNDED_MAX ((size_t)1 << 30)

/*
 * read_bounded - the regular file at `path`, at most READ_BOUNDED_MAX
 * bytes, in a malloc'd buffer of *len bytes (one byte more is allocated:
 * an empty file gives a non-NULL buffer).  NULL on failure, with *why
 * saying why: strerror(errno), "not a regular file", "larger than 1 GiB".
 */
unsigned char *read_bounded(const char *path, size_t *len, const char **why);

#endif /* READ_BOUNDED_H */
