/*
 * core_bytes.h (internal) - a core file's bytes, read within bounds.
 *
 * A core may be far larger than the address space a debugger may use
 * (`ulimit -v`), sparse, or cut short by RLIMIT_CORE.  So it is never
 * mapped or read whole: every read is a bounded copy of the range asked
 * for, from the caller's image (sw_core_open_memory) or with pread() from
 * the file (sw_core_open).  Parsing reads headers and notes through a
 * window of fixed size, refilled as the parser moves on.
 */
#ifndef SW_LIB_TARGET_CORE_BYTES_H
#define SW_LIB_TARGET_CORE_BYTES_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>

struct swi_core_bytes {
	const unsigned char *image;     /* the caller's image, or NULL: read fd */
	int fd;                         /* -1 with an image */
	uint64_t size;                  /* the file's length when opened */
};

/*
 * Copy `len` bytes at file offset `off` into `buf`.  SW_E_TRUNCATED if any
 * of them lies past the end of the file (or the file shrank since it was
 * opened), SW_E_IO if the system cannot read them.  No allocation.
 */
sw_status swi_core_bytes_read(const struct swi_core_bytes *b, uint64_t off, void *buf,
                              size_t len);

/* The largest range swi_core_window_get hands out. */
#define SWI_CORE_WINDOW_SIZE 65536u

/* A window onto the file for the parser: the last range read, kept. */
struct swi_core_window {
	const struct swi_core_bytes *bytes;
	uint64_t off;                   /* file offset of buf[0] */
	size_t len;                     /* bytes valid in buf */
	unsigned char buf[SWI_CORE_WINDOW_SIZE];
};

void swi_core_window_init(struct swi_core_window *w, const struct swi_core_bytes *b);

/*
 * The `len` bytes (at most SWI_CORE_WINDOW_SIZE) at file offset `off`:
 * a pointer into the window, valid until the next call, or NULL with
 * *st set as swi_core_bytes_read says.
 */
const unsigned char *swi_core_window_get(struct swi_core_window *w, uint64_t off, size_t len,
                                         sw_status *st);

#endif
