/* core_bytes.c - a core file's bytes, read within bounds (core_bytes.h). */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "core_bytes.h"

sw_status swi_core_bytes_read(const struct swi_core_bytes *b, uint64_t off, void *buf,
                              size_t len)
{
	unsigned char *out = buf;

	if (off > b->size || b->size - off < len)
		return SW_E_TRUNCATED;
	if (b->image) {
		memcpy(out, b->image + off, len);
		return SW_OK;
	}
	while (len > 0) {
		ssize_t got = pread(b->fd, out, len, (off_t)off);

		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return SW_E_IO;
		/* Someone cut the file after it was opened. */
		if (got == 0)
			return SW_E_TRUNCATED;
		out += got;
		off += (uint64_t)got;
		len -= (size_t)got;
	}
	return SW_OK;
}

void swi_core_window_init(struct swi_core_window *w, const struct swi_core_bytes *b)
{
	w->bytes = b;
	w->off = 0;
	w->len = 0;
}

const unsigned char *swi_core_window_get(struct swi_core_window *w, uint64_t off, size_t len,
                                         sw_status *st)
{
	const struct swi_core_bytes *b = w->bytes;
	size_t fill;

	if (len > SWI_CORE_WINDOW_SIZE) {
		*st = SW_E_LIMIT;
		return NULL;
	}
	if (off >= w->off && off - w->off <= w->len && w->len - (off - w->off) >= len)
		return w->buf + (off - w->off);
	if (off > b->size || b->size - off < len) {
		*st = SW_E_TRUNCATED;
		return NULL;
	}
	/* Refill from `off` on: parsers move forward. */
	fill = b->size - off < SWI_CORE_WINDOW_SIZE ? (size_t)(b->size - off) : SWI_CORE_WINDOW_SIZE;
	w->len = 0;
	*st = swi_core_bytes_read(b, off, w->buf, fill);
	if (*st != SW_OK)
		return NULL;
	w->off = off;
	w->len = fill;
	return w->buf;
}
