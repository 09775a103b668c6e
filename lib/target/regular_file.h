/*
 * regular_file.h (internal) - opening a file a target names.
 *
 * Core files (their NT_FILE note) and live processes (/proc/PID/maps)
 * name the files their code came from, and sw_module_load reads what it
 * is given.  Such a path may lead to a FIFO, whose open() waits for a
 * writer forever, or to a terminal or a device: only a regular file is
 * read, and the open itself never blocks.
 */
#ifndef SW_LIB_TARGET_REGULAR_FILE_H
#define SW_LIB_TARGET_REGULAR_FILE_H

#include <sys/types.h>

/*
 * Open `path` read-only if it is a regular file: the descriptor, and its
 * size in *size (may be NULL).  -1 when it cannot be opened or examined
 * (errno from open() or fstat()), -2 when it is something else than a
 * regular file (a directory, a FIFO, a device: errno EINVAL).
 */
int swi_open_regular(const char *path, off_t *size);

#endif
