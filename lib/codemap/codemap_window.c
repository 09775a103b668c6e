/*
 * codemap_window.c - the writer's side of the code map's page window
 * (codemap_window.h): making, sizing and writing one.
 */
#include <stdlib.h>
#include "codemap_window.h"

struct codemap_window *swi_window_new(uint64_t lo, uint64_t len)
{
	struct codemap_window *w;

	if (len == 0 || len > CODEMAP_WINDOW_MAX_PAGES)
		return NULL;
	w = malloc(sizeof *w + sizeof w->word[0] * (size_t)len);
	if (!w)
		return NULL;
	w->lo = lo;
	w->len = len;
	for (uint64_t i = 0; i < len; i++)
		atomic_init(&w->word[i], 0);
	return w;
}

void swi_window_free(struct swi_epoch_node *n)
{
	free((struct codemap_window *)n);
}

void swi_window_set(struct codemap_window *w, uint64_t page, const struct codemap_page *p)
{
	uint64_t i;

	if (window_holds(w, page, &i))
		atomic_store_explicit(&w->word[i], window_word_of(p), memory_order_release);
}

int swi_window_range(uint64_t first, uint64_t last, uint64_t live, uint64_t *lo, uint64_t *len)
{
	uint64_t span = last - first + 1, room = span / 4 + 16, top = page_of(UINT64_MAX);

	if (last < first)
		return 0;
	/* A quarter more on each side, and a little for a small map. */
	*lo = first > room ? first - room : 0;
	*len = (last < top - room ? last + room : top) - *lo + 1;
	return *len <= CODEMAP_WINDOW_MAX_PAGES && *len <= CODEMAP_WINDOW_SPARSE * live + 256;
}
