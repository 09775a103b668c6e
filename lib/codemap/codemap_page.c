/*
 * codemap_page.c - the writer's operations on the code map's page nodes:
 * copy with a method added or without one, append in place, remove in
 * place (see codemap.c for why each is safe under lock-free readers).
 */
#include "codemap_page.h"

const struct codemap_page swi_codemap_tombstone = { .page = UINT64_MAX, .n = 0 };

/* A node for `n` items with room for a few more. */
static struct codemap_page *page_new(struct swi_slab *slab, uint64_t page, uint32_t n)
{
	uint32_t cap = (n + CODEMAP_NODE_ROOM - 1) / CODEMAP_NODE_ROOM * CODEMAP_NODE_ROOM;
	struct codemap_page *p = swi_slab_alloc(slab, CODEMAP_SLAB_PAGE, page_size(cap));

	if (p) {
		p->page = page;
		atomic_init(&p->n, n);
		p->dead = 0;
		p->cap = (uint16_t)cap;
	}
	return p;
}

int swi_codemap_page_can_append(const struct codemap_page *p, int32_t start)
{
	uint32_t n;

	if (!p)
		return 0;
	n = page_count(p);
	return n < p->cap && (n == 0 || p->item[n - 1].start < start);
}

void swi_codemap_page_append(struct codemap_page *p, const struct codemap_span *m)
{
	uint32_t n = page_count(p);
	struct codemap_item *it = &p->item[n];

	/* No reader looks past the count: the item is ours until it rises. */
	it->start = page_rel(p->page, m->start);
	atomic_store_explicit(&it->end, page_rel(p->page, m->end), memory_order_relaxed);
	it->entry = m->entry;
	atomic_store_explicit(&p->n, n + 1, memory_order_release);
}

/* Copy old's live items other than `skip` to `to`; how many. */
static uint32_t copy_live(struct codemap_item *to, const struct codemap_item *from, uint32_t n,
                          const struct codemap_entry *skip)
{
	uint32_t j = 0;

	for (uint32_t i = 0; i < n; i++) {
		if (from[i].entry == skip || item_dead(&from[i]))
			continue;
		to[j].start = from[i].start;
		atomic_init(&to[j].end, atomic_load_explicit(&from[i].end, memory_order_relaxed));
		to[j].entry = from[i].entry;
		j++;
	}
	return j;
}

struct codemap_page *swi_codemap_page_with(struct swi_slab *slab, const struct codemap_page *old,
                                           uint64_t page, const struct codemap_span *m)
{
	uint32_t n = old ? page_count(old) - old->dead : 0;
	struct codemap_page *p = page_new(slab, page, n + 1);
	int32_t start = page_rel(page, m->start);
	uint32_t at;

	if (!p)
		return NULL;
	if (old)
		copy_live(p->item, old->item, page_count(old), NULL);
	at = n;
	while (at > 0 && p->item[at - 1].start > start) {
		p->item[at] = p->item[at - 1];
		at--;
	}
	p->item[at].start = start;
	atomic_init(&p->item[at].end, page_rel(page, m->end));
	p->item[at].entry = m->entry;
	return p;
}

/* A copy of `old` without `e` and its dead items, or the tombstone when
 * nothing else lives in it. */
static const struct codemap_page *page_without(struct swi_slab *slab,
                                               const struct codemap_page *old,
                                               const struct codemap_entry *e)
{
	struct codemap_page *p;

	if (page_count(old) - old->dead <= 1)
		return &swi_codemap_tombstone;
	p = page_new(slab, old->page, page_count(old) - old->dead - 1);
	if (p)
		copy_live(p->item, old->item, page_count(old), e);
	return p;
}

int swi_codemap_page_overlaps(const struct codemap_page *p, uint64_t start, uint64_t end)
{
	int32_t s = page_rel(p->page, start), e = page_rel(p->page, end);
	/* Items do not overlap one another, so only the last live one
	 * starting before `end` can reach into [start, end). */
	long i = page_search(p, e - 1);

	while (i >= 0 && item_dead(&p->item[i]))
		i--;
	return i >= 0 && atomic_load_explicit(&p->item[i].end, memory_order_relaxed) > s;
}

/* (From the method's start, not its entry: the entry is cold.) */
struct codemap_item *swi_codemap_page_item_of(const struct codemap_page *p, uint64_t start)
{
	long i = page_search(p, page_rel(p->page, start));

	/* The node lists the method, so the search ends on it. */
	return (struct codemap_item *)&p->item[i];
}

const struct codemap_page *swi_codemap_page_after_remove(struct swi_slab *slab,
                                                         const struct codemap_page *p,
                                                         const struct codemap_entry *e,
                                                         int *failed)
{
	const struct codemap_page *q;
	uint32_t n = page_count(p);

	if (n - p->dead > 1 && (p->dead + 1u) * 2 <= n)
		return NULL;
	q = page_without(slab, p, e);
	*failed = !q;
	return q;
}

void swi_codemap_page_free(struct swi_slab *slab, const struct codemap_page *p)
{
	if (p && p != &swi_codemap_tombstone)
		swi_slab_free(slab, CODEMAP_SLAB_PAGE, (void *)p, page_size(p->cap));
}
