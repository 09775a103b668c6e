/*
 * codemap.c - sw_codemap: from an instruction pointer to its method.
 *
 * The layout, and why:
 *
 *   - Key: the 4 KiB "page" of an address (ip >> CODEMAP_PAGE_SHIFT).  A
 *     lookup hashes the page once, so its cost does not depend on how many
 *     methods are registered.
 *
 *   - A page node lists, sorted by start, every method that overlaps its
 *     page (a method spanning several pages is listed in each).  Next to
 *     each method's entry pointer it keeps the method's start and end,
 *     relative to the page (16 bytes an item), so the search inside the
 *     node (codemap_page.h) reads one contiguous array and touches the
 *     entry only to return it.  The entry keeps only what the items and
 *     its body rule's shape (codemap_shapes.h) do not: a lookup copies the
 *     method out, start and size from the item (entry_copy).
 *
 *   - A writer adds to a page by building a new node and swapping it in
 *     with one release store (copy-on-write), so a reader sees the old list
 *     or the new one, never a half-edited one.  Nodes are made with room
 *     for a few more items, and a method that sorts after every item (a
 *     JIT allocates code upwards) is appended in place instead: the item
 *     is written past the count, then the count is raised with a release
 *     store, so a reader sees the method or not.  Removing is cheaper: the
 *     item's end is set to its start in place (one store; a reader sees
 *     the method or an empty range, and items never overlap, so no other
 *     item could have held the address).  Such dead items stay, sorted,
 *     until half of a node is dead; then it is copied without them, or
 *     replaced by a tombstone when nothing lives in it.  A removal thus
 *     allocates nothing most of the time and copies a node only rarely.
 *
 *   - The hash table is open-addressed with linear probing rather than
 *     chained: page nodes carry no chain link, so a resize copies only the
 *     slot array and reuses every node, and a lookup follows one pointer
 *     fewer.  A page that loses its last method leaves a tombstone (a
 *     static node whose page no address has) so that probes for pages
 *     beyond it still run through; tombstones are cleared when the table
 *     is rebuilt.  A table that has been replaced is never written again,
 *     so a reader that still holds it sees a consistent (older) map.
 *
 *   - Beside the table, a page window (codemap_window.h): an array indexed
 *     by page over the dense range where a JIT puts its code, each word
 *     a node's address with its count.  For a page it holds, a lookup
 *     reads the word instead of probing the table and reading the node's
 *     header; other pages, and maps whose code is too spread out for one
 *     (more than CODEMAP_WINDOW_SPARSE pages a node), use the table.
 *     Writers keep it as they keep the table (table_install), and make
 *     a larger one, copied from the table, when code grows past it.
 *
 *   - Writers serialize on a mutex.  Entries and page nodes come from
 *     their slab (codemap_slab.h): no per-object header, and freeing a
 *     removed entry does not coalesce with cold neighbours as free() does
 *     (which was most of the cost of a removal from a large map).  What
 *     writers unlink is retired in batches
 *     (codemap_retire.h) and goes back to the slab once no read section
 *     can hold it; a replaced table is retired to the epoch (epoch.h) on
 *     its own.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include "util.h"
#include "codemap_lookup.h"
#include "epoch.h"
#include "swu_format.h"
#include "codemap_observer.h"
#include "codemap_slab.h"
#include "codemap_retire.h"
#include "codemap_page.h"
#include "codemap_table.h"
#include "codemap_shapes.h"
#include "codemap_validated.h"
#include "codemap_window.h"

#define CODEMAP_MIN_SLOTS  16           /* smallest table, a power of two */
/* Nodes on the stack for the pages of one add or remove; more go to the heap. */
#define CODEMAP_SMALL_SPAN 8

/*
 * Writers look for reclaimable memory every CODEMAP_POLL_EVERY writes, not
 * at each: a poll costs a full fence and a second lock, which registering
 * a method one by one would otherwise pay every time.  Retired memory
 * waits a little longer; sw_codemap_synchronize still frees it all.
 */
#define CODEMAP_POLL_EVERY 16

/* A retired page node's address carries this tag; an entry's none. */
#define CODEMAP_RETIRED_PAGE ((uintptr_t)1)

struct codemap_table {
	struct swi_epoch_node retire;
	unsigned shift;                 /* 64 - log2(slots), for Fibonacci hashing */
	size_t mask;                    /* slots - 1 */
	size_t used;                    /* slots not empty: live nodes and tombstones (writer only) */
	size_t live;                    /* slots holding a live node (writer only) */
	_Atomic(const struct codemap_page *) slot[];
};

/* The registered code tables (codemap_table.h), sorted by address; copied on write. */
struct codemap_tables {
	struct swi_epoch_node retire;
	size_t n;
	const struct swi_code_table *t[];
};

struct sw_codemap {
	struct swi_epoch epoch;         /* first: it wants cache-line alignment */
	_Atomic(struct codemap_table *) table;
	_Atomic(const struct codemap_tables *) tables;  /* NULL when there are none */
	/* The page window (codemap_window.h), or NULL; window_off: never again. */
	_Atomic(struct codemap_window *) window;
	int window_off;
	atomic_size_t count;
	/*
	 * Grows by one before each entry is retired, from a start no other map
	 * of the process had: caches of entries kept across read sections
	 * (backtrace.c) compare it inside a section and drop what they hold
	 * when it moved, or when they were filled from another map.
	 */
	atomic_uint_fast64_t version;
	/* Grows by one after each method is added (swi_codemap_additions). */
	atomic_uint_fast64_t additions;
	unsigned unpolled;              /* writes since the last reclamation poll (writer lock) */
	struct swi_slab slab;           /* entries and page nodes (writer lock) */
	struct swi_shapes shapes;       /* the methods' body-rule shapes (added under the writer lock) */
	struct swi_retirer retire;      /* what writers unlinked (writer lock) */
	pthread_mutex_t lock;           /* serializes writers */
	sw_codemap_observer *observers; /* under lock (codemap_observer.c) */
};

/* Count a write; whether to poll after it.  Writer lock held. */
static int count_write(sw_codemap *map)
{
	return ++map->unpolled % CODEMAP_POLL_EVERY == 0;
}

/*
 * Readers only load the count; writers change it under their lock, so a
 * plain load and store do (no locked read-modify-write on every write).
 */
static void count_add(sw_codemap *map, size_t delta)
{
	atomic_store_explicit(&map->count,
	                      atomic_load_explicit(&map->count, memory_order_relaxed) + delta,
	                      memory_order_relaxed);
}

/*
 * Publish the next value of a counter readers check (version, additions):
 * a release store, so that a reader that sees it sees what came before.
 * Writers hold the lock, so a store does, not a locked add (that would
 * drain the stores before it).
 */
static void bump_release(atomic_uint_fast64_t *counter)
{
	atomic_store_explicit(counter, atomic_load_explicit(counter, memory_order_relaxed) + 1,
	                      memory_order_release);
}

static size_t page_hash(const struct codemap_table *t, uint64_t page)
{
	/* Fibonacci hashing: neighbouring pages spread over the table. */
	return (size_t)((page * UINT64_C(0x9E3779B97F4A7C15)) >> t->shift);
}

/* ---- memory ---- */

static void entry_free(sw_codemap *map, struct codemap_entry *e)
{
	swi_slab_free(&map->slab, CODEMAP_SLAB_ENTRY, e, entry_size(e));
}

/* The retirer's callback: a retired object no reader can hold any more. */
static void release_retired(void *ctx, uintptr_t obj)
{
	sw_codemap *map = ctx;

	if (obj & CODEMAP_RETIRED_PAGE)
		swi_codemap_page_free(&map->slab,
		                      (const struct codemap_page *)(obj & ~CODEMAP_RETIRED_PAGE));
	else
		entry_free(map, (struct codemap_entry *)obj);
}

static void free_table(struct swi_epoch_node *n)
{
	free((struct codemap_table *)n);
}

static void free_tables(struct swi_epoch_node *n)
{
	free((struct codemap_tables *)n);
}

_Static_assert(offsetof(struct codemap_table, retire) == 0, "retire link first");
_Static_assert(SWI_SHAPES_MAX <= CODEMAP_ENTRY_SHAPE, "a shape's number + 1 fits its bits");
_Static_assert(offsetof(struct codemap_tables, retire) == 0, "retire link first");
/* The slab's free lists link through an object's first word. */
_Static_assert(sizeof(struct codemap_entry) >= sizeof(void *), "room for the slab's link");
_Static_assert(sizeof(struct codemap_page) >= sizeof(void *), "room for the slab's link");
/* The retirer's tags live in the low bits of the addresses: entries and
 * nodes come from the slab, SWI_SLAB_GRAIN-aligned, or from malloc (at
 * least as aligned), whatever the types' own alignment (4 on i386). */
_Static_assert(CODEMAP_RETIRED_PAGE <= SWI_RETIRE_TAGS && SWI_RETIRE_TAGS < SWI_SLAB_GRAIN,
               "room for a tag");

/* ---- the read side ---- */

/*
 * Start loading the lines of node `p` beyond its header while the header
 * comes: the search's first item is on one of them, and in a map larger
 * than the caches each is a miss that would otherwise wait for the header
 * (the count decides which item is searched first).  A typical node (25
 * methods of 64 to 256 bytes in 4 KiB) spans 7 lines.  A prefetch never
 * faults, so lines past a small node's end cost only bandwidth.
 */
static inline void codemap_page_prefetch(const struct codemap_page *p)
{
	for (unsigned line = 1; line < 8; line++)
		__builtin_prefetch((const char *)p + 64 * line);
}

/*
 * The node of `page` in `t`, or NULL.  A table always keeps empty slots
 * (see table_wants_rebuild) and a replaced table is frozen, so the probe
 * ends at one; the bound guards against our own bugs, not a case that
 * happens.  Tombstones never match, so probes run through them.
 */
static inline const struct codemap_page *table_probe(const struct codemap_table *t, uint64_t page,
                                                     int prefetch)
{
	size_t i = page_hash(t, page);

	for (size_t probes = 0; probes <= t->mask; probes++) {
		const struct codemap_page *p =
			atomic_load_explicit(&t->slot[i], memory_order_acquire);

		if (prefetch && p)
			codemap_page_prefetch(p);
		if (!p || p->page == page)
			return p;
		i = (i + 1) & t->mask;
	}
	return NULL;
}

static const struct codemap_page *table_find(const struct codemap_table *t, uint64_t page)
{
	return table_probe(t, page, 0);
}

/*
 * table_find for a lookup or a removal, which search the node they find:
 * its lines load while its header does.  (Adding does not: it mostly
 * appends to the node it added to last, already in the cache.)
 */
static const struct codemap_page *table_find_to_search(const struct codemap_table *t, uint64_t page)
{
	return table_probe(t, page, 1);
}

/* The table of `l` whose range holds ip, or NULL. */
static const struct swi_code_table *tables_find(const struct codemap_tables *l, uint64_t ip)
{
	size_t lo = 0, n = l->n;

	/* The last table starting at or below ip. */
	while (n > 1) {
		size_t half = n / 2;

		if (l->t[lo + half]->lo <= ip)
			lo += half;
		n -= half;
	}
	return ip - l->t[lo]->lo < l->t[lo]->hi - l->t[lo]->lo ? l->t[lo] : NULL;
}

/* Method `e`, [start, start + size), as a lookup returns it. */
static inline void entry_info(const struct codemap_entry *e, uint64_t start, uint64_t size,
                              sw_code_info *out)
{
	out->method = e->method;
	out->start = start;
	out->size = size;
	out->unwind = entry_blob(e);
	out->unwind_size = e->unwind_size;
	out->flags = ((e->bits >> CODEMAP_ENTRY_FLAG_SHIFT) & CODEMAP_ENTRY_FLAG_MASK) |
	             ((e->bits & CODEMAP_ENTRY_PERSONALITY) ? SW_CODE_PERSONALITY : 0);
	out->parent = entry_parent(e);
}

/*
 * Method `e`, [start, start + size), copied out with its body rule: the
 * entry keeps only what its items and shape do not (codemap_page.h).
 */
static void entry_copy(const sw_codemap *map, const struct codemap_entry *e, uint64_t start,
                       uint64_t size, struct swi_code_copy *out)
{
	uint32_t bits = e->bits, shape = bits & CODEMAP_ENTRY_SHAPE;

	entry_info(e, start, size, &out->info);
	out->body = &out->rule;
	out->entry = e;
	out->index = SWI_COPY_ENTRY;
	if (!shape) {
		out->rule = swi_no_body_rule;
		out->saved = NULL;
		return;
	}
	{
		const struct swi_shape *sh = swi_shapes_get(&map->shapes, shape - 1);

		out->rule = sh->rule;
		out->saved = sh->saved;
	}
	if (bits & CODEMAP_ENTRY_RUNS) {
		uint32_t w[4];

		memcpy(w, entry_runs(e), sizeof w);
		out->rule.lo = w[0], out->rule.hi = w[1], out->rule.lo2 = w[2], out->rule.hi2 = w[3];
	} else {
		out->rule.lo = e->run[0], out->rule.hi = e->run[1];
		out->rule.lo2 = out->rule.hi2 = 0;
	}
}

/*
 * The method that node `p` (the node of ip's page) lists at `ip`: its
 * entry, with its start and size, or NULL.
 */
static inline const struct codemap_entry *node_method_in(const struct codemap_page *p, uint64_t page,
                                                         uint32_t n, uint64_t ip, uint64_t *start,
                                                         uint64_t *size)
{
	int32_t rel = (int32_t)(ip & CODEMAP_PAGE_MASK), end;
	long i = page_search_in(p, n, rel);

	if (i < 0)
		return NULL;
	/* Relaxed: a removal stores nothing the reader must see besides end
	 * itself; the entry stays valid as long as the read section lasts. */
	end = atomic_load_explicit(&p->item[i].end, memory_order_relaxed);
	if (rel >= end)
		return NULL;
	*start = (page << CODEMAP_PAGE_SHIFT) + (uint64_t)(int64_t)p->item[i].start;
	*size = (uint64_t)((int64_t)end - p->item[i].start);
	return p->item[i].entry;
}

/* node_method_in for a node found in the hash table: its page and count from its header. */
static inline const struct codemap_entry *node_method(const struct codemap_page *p, uint64_t ip,
                                                      uint64_t *start, uint64_t *size)
{
	/* Acquire: the items below the count are written before it is raised. */
	return node_method_in(p, p->page, atomic_load_explicit(&p->n, memory_order_acquire), ip, start, size);
}

/*
 * The method at ip among the map's methods (not its code tables'), or
 * NULL: through the window when it holds the page, else the hash table.
 */
static inline const struct codemap_entry *map_method(const sw_codemap *map, uint64_t ip, uint64_t *start,
                                                     uint64_t *size)
{
	const struct codemap_window *w = atomic_load_explicit(&map->window, memory_order_acquire);
	const struct codemap_page *p;
	uint64_t page = page_of(ip), i;

	if (window_holds(w, page, &i)) {
		uint64_t word = atomic_load_explicit(&w->word[i], memory_order_acquire);

		p = window_node(word);
		return p ? node_method_in(p, page, window_count(word), ip, start, size) : NULL;
	}
	p = table_find_to_search(atomic_load_explicit(&map->table, memory_order_acquire), page);
	return p ? node_method(p, ip, start, size) : NULL;
}

/*
 * The last live item of the map's node of `page` that starts at or below
 * `at` (an address in that page or above it): its entry and absolute
 * start, or NULL when the node has none or there is no node.  *budget
 * pays for each dead item passed over.
 */
static const struct codemap_entry *map_item_below(const sw_codemap *map, uint64_t page, uint64_t at,
                                                  uint64_t *start, unsigned *budget)
{
	const struct codemap_window *w = atomic_load_explicit(&map->window, memory_order_acquire);
	const struct codemap_page *p;
	uint64_t slot;
	uint32_t n;
	long i;

	if (window_holds(w, page, &slot)) {
		uint64_t word = atomic_load_explicit(&w->word[slot], memory_order_acquire);

		p = window_node(word);
		n = window_count(word);
	} else {
		p = table_find(atomic_load_explicit(&map->table, memory_order_acquire), page);
		n = p ? atomic_load_explicit(&p->n, memory_order_acquire) : 0;
	}
	if (!p)
		return NULL;
	for (i = page_search_in(p, n, page_rel(page, at)); i >= 0 && *budget; i--, --*budget) {
		if (!item_dead(&p->item[i])) {
			*start = (page << CODEMAP_PAGE_SHIFT) + (uint64_t)(int64_t)p->item[i].start;
			return p->item[i].entry;
		}
	}
	return NULL;
}

/*
 * The parent of a funclet as CoreCLR lays them out: a method's funclets
 * follow its main body in the same block of code, which is why
 * EECodeInfo::GetRelOffset (vm/codeman.cpp) measures a funclet's offsets
 * from the method's start, and an exception clause names its handler by
 * an offset from there (sw_codemap_check_eh).  Registered apart here,
 * the parent is the nearest method below the funclet, past the parent's
 * other funclets and unregistered gaps: the look-up steps down from item
 * to item, and from a page with nothing below to the page before it,
 * until it meets the parent (found), or any other method (not found).
 * It gives up after SWI_FUNCLET_PARENT_STEPS steps, items passed or
 * pages visited, so that hostile input costs a bounded search.
 */
uint64_t swi_codemap_funclet_parent(const sw_codemap *map, const sw_code_info *funclet)
{
	unsigned budget = SWI_FUNCLET_PARENT_STEPS;
	uint64_t at, start = 0;
	void *parent;

	if (!map || !funclet || !(funclet->flags & SW_CODE_FUNCLET) || !(parent = funclet->parent) ||
	    !funclet->start)
		return 0;
	at = funclet->start - 1;
	while (budget) {
		const struct codemap_entry *e;
		uint64_t page = page_of(at);

		budget--;
		e = map_item_below(map, page, at, &start, &budget);
		if (!e) {
			/* Nothing at or below `at` in this page: the page before. */
			if (!page)
				return 0;
			at = (page << CODEMAP_PAGE_SHIFT) - 1;
			continue;
		}
		if (!((e->bits >> CODEMAP_ENTRY_FLAG_SHIFT) & SW_CODE_FUNCLET))
			return e->method == parent ? start : 0;
		if (entry_parent(e) != parent || !start)
			return 0;
		at = start - 1;
	}
	return 0;
}

const sw_code_info *swi_codemap_lookup(const sw_codemap *map, uint64_t ip,
                                       struct swi_code_copy *scratch)
{
	const struct codemap_tables *l;
	const struct codemap_entry *e;
	uint64_t start, size;
	long i;

	if (SWI_UNLIKELY(!map))
		return NULL;
	/* The tables first: a short list, hot in the cache; no method lies in their ranges. */
	l = atomic_load_explicit(&map->tables, memory_order_acquire);
	if (l) {
		const struct swi_code_table *ct = tables_find(l, ip);

		if (ct) {
			i = swi_code_table_find(ct, ip);
			if (i < 0)
				return NULL;
			swi_code_table_info(ct, (uint32_t)i, scratch);
			return &scratch->info;
		}
	}
	if (!(e = map_method(map, ip, &start, &size)))
		return NULL;
	entry_copy(map, e, start, size, scratch);
	return &scratch->info;
}

uint64_t swi_codemap_version(const sw_codemap *map)
{
	return atomic_load(&((sw_codemap *)map)->version);
}

uint64_t swi_codemap_additions(const sw_codemap *map)
{
	return atomic_load_explicit(&((sw_codemap *)map)->additions, memory_order_acquire);
}

SW_API unsigned sw_codemap_read_begin(const sw_codemap *map)
{
	if (!map)
		return 0;
	/* The map is never const in memory; readers only touch the counters. */
	return swi_epoch_read_begin(&((sw_codemap *)map)->epoch);
}

SW_API void sw_codemap_read_end(const sw_codemap *map, unsigned token)
{
	if (map)
		swi_epoch_read_end(&((sw_codemap *)map)->epoch, token);
}

SW_API sw_status sw_codemap_find(const sw_codemap *map, uint64_t ip, sw_code_info *out)
{
	struct swi_code_copy scratch;
	const sw_code_info *ci;
	unsigned token;

	if (!map || !out)
		return SW_E_INVAL;
	token = sw_codemap_read_begin(map);
	ci = swi_codemap_lookup(map, ip, &scratch);
	if (ci)
		*out = *ci;
	sw_codemap_read_end(map, token);
	return ci ? SW_OK : SW_E_NOTFOUND;
}

/* ---- lookups in batches ---- */

/*
 * sw_codemap_find_batch runs its lookups as a pipeline.  A lone lookup in
 * a map larger than the caches waits for dependent misses, one after the
 * other: the page node's header (unless the window holds the page), the
 * items its search reads, the method's entry.  In a batch, each IP passes through the stages below
 * BATCH_AHEAD lookups apart, and every stage but the last only starts
 * loading what the next one will read, so that the misses of many
 * lookups are in flight at once instead of adding up (the "group
 * prefetching" of database hash joins):
 *
 *   0. hash the page, prefetch its slot;
 *   1. load the slot, prefetch the node's header;
 *   2. read the node's count, prefetch the items page_search looks at
 *      first (its guess and the guess's neighbours);
 *   3. search the node, prefetch the method's entry;
 *   4. copy the method out.
 *
 * A page the window holds (codemap_window.h) skips the header: stage 0
 * prefetches its word, stage 1 finds the node and its count in it, and
 * stage 2 prefetches the items without a load of its own.  (Prefetching
 * them at stage 1 already was slower at 1M methods: 14.4-14.9 against
 * 12.5-12.9 ns a lookup.)
 *
 * A stage reads what was asked for BATCH_AHEAD lookups earlier, which
 * must take longer than a load from memory: 20 lookups of 11-15 ns are
 * 220-300 ns, against 110-160 ns for a load on the machines measured
 * (tests/bench: 12 and 16 were a little slower with a million methods,
 * 32 no faster).  A prefetch never faults: a stage that prefetched the
 * wrong lines (another page's node, a count that changed) costs only
 * bandwidth, since the next stage reads what is there and checks it.
 */
#define BATCH_AHEAD   20
#define BATCH_STAGES  5
/* Lookups in flight from stage 1 to stage 4: a power of two above 3 * BATCH_AHEAD. */
#define BATCH_RING    64
/* IPs looked up in one read section, so that a long batch does not hold back reclamation. */
#define BATCH_SECTION 4096

_Static_assert(BATCH_RING > (BATCH_STAGES - 2) * BATCH_AHEAD && (BATCH_RING & (BATCH_RING - 1)) == 0,
               "the ring holds every lookup between stage 1 and stage 4");
/* entry_info reads the entry's first 16 bytes, which stage 3 prefetches. */
_Static_assert(offsetof(struct codemap_entry, bits) + sizeof(uint32_t) <= 16, "entry head in 16 bytes");

/* A lookup in flight. */
struct batch_lookup {
	const struct codemap_page *node;        /* stage 1: the node its slot held, NULL, or batch_in_table */
	const struct codemap_entry *entry;      /* stage 3: the method, or NULL */
	uint64_t start, size;                   /* stage 3: the method's range */
	uint32_t n;                             /* stage 1: the count from the window, or BATCH_HASHED */
};

/* A lookup that went through the hash table: the count is the node's. */
#define BATCH_HASHED UINT32_MAX

/*
 * Stage 1's node for an IP in a code table: no page has it (as no page
 * has the tombstone), so stages 2 and 3 pass it by, and stage 4 looks
 * the IP up alone (its count is BATCH_HASHED, as the hash table's).
 */
static const struct codemap_page batch_in_table = { .page = UINT64_MAX };

/* Stage 0. */
static inline void batch_slot(const struct codemap_window *w, const struct codemap_table *t, uint64_t ip)
{
	uint64_t i;

	if (window_holds(w, page_of(ip), &i))
		__builtin_prefetch(&w->word[i]);
	else
		__builtin_prefetch(&t->slot[page_hash(t, page_of(ip))]);
}

/* The items page_search_in looks at first in node p of n items. */
static inline void batch_prefetch_items(const struct codemap_page *p, uint32_t n, uint64_t ip)
{
	uint32_t g = (uint32_t)(((uint64_t)(ip & CODEMAP_PAGE_MASK) * n) >> CODEMAP_PAGE_SHIFT);

	__builtin_prefetch(&p->item[g ? g - 1 : 0]);
	__builtin_prefetch((const char *)&p->item[g + 1] + sizeof p->item[0] - 1);
}

/* Stage 1.  No method lies in a code table's range: those IPs skip the hash. */
static inline void batch_node(const struct codemap_tables *l, const struct codemap_window *w,
                              const struct codemap_table *t, uint64_t ip, struct batch_lookup *b)
{
	const struct codemap_page *p;
	uint64_t i;

	b->n = BATCH_HASHED;
	if (SWI_UNLIKELY(l && tables_find(l, ip))) {
		b->node = &batch_in_table;
		return;
	}
	if (window_holds(w, page_of(ip), &i)) {
		uint64_t word = atomic_load_explicit(&w->word[i], memory_order_acquire);

		b->node = window_node(word);
		b->n = window_count(word);
		return;
	}
	p = atomic_load_explicit(&t->slot[page_hash(t, page_of(ip))], memory_order_acquire);
	if (p) {
		__builtin_prefetch(p);
		__builtin_prefetch((const char *)p + sizeof *p - 1);
	}
	b->node = p;
}

/* Stage 2: the count is only a hint here; page_search reads it again. */
static inline void batch_items(uint64_t ip, const struct batch_lookup *b)
{
	const struct codemap_page *p = b->node;

	if (p)
		batch_prefetch_items(p, b->n == BATCH_HASHED ? atomic_load_explicit(&p->n, memory_order_relaxed) : b->n, ip);
}

/* Stage 3. */
static inline void batch_search(const struct codemap_table *t, uint64_t ip, struct batch_lookup *b)
{
	const struct codemap_page *p = b->node;

	b->entry = NULL;
	if (b->n != BATCH_HASHED) {
		if (!p || !(b->entry = node_method_in(p, page_of(ip), b->n, ip, &b->start, &b->size)))
			return;
	} else {
		if (p && p->page != page_of(ip)) {
			if (p == &batch_in_table)
				return;
			/* The slot held another page's node or a tombstone: probe on, alone. */
			p = table_find(t, page_of(ip));
		}
		if (!p || !(b->entry = node_method(p, ip, &b->start, &b->size)))
			return;
	}
	__builtin_prefetch(b->entry);
	__builtin_prefetch((const char *)b->entry + 15);
}

/* Stage 4; whether the IP was found. */
static inline int batch_out(const sw_codemap *map, uint64_t ip, const struct batch_lookup *b,
                            sw_code_info *out)
{
	if (SWI_LIKELY(b->entry)) {
		entry_info(b->entry, b->start, b->size, out);
		return 1;
	}
	if (b->node == &batch_in_table) {
		struct swi_code_copy scratch;
		const sw_code_info *ci = swi_codemap_lookup(map, ip, &scratch);

		if (ci) {
			*out = *ci;
			return 1;
		}
	}
	memset(out, 0, sizeof *out);
	return 0;
}

/* Up to BATCH_SECTION lookups in one read section; how many were found. */
static size_t batch_section(const sw_codemap *map, const uint64_t *ip, size_t n, sw_code_info *out)
{
	struct batch_lookup ring[BATCH_RING];
	unsigned token = sw_codemap_read_begin(map);
	const struct codemap_tables *l = atomic_load_explicit(&map->tables, memory_order_acquire);
	const struct codemap_table *t = atomic_load_explicit(&map->table, memory_order_acquire);
	const struct codemap_window *w = atomic_load_explicit(&map->window, memory_order_acquire);
	size_t found = 0;

	/*
	 * Step k runs stage s for IP k - s * BATCH_AHEAD.  The index is
	 * unsigned: before the pipeline has filled it wraps around, past n,
	 * like the indices past the end while it drains.
	 */
	for (size_t k = 0; k < n + (BATCH_STAGES - 1) * BATCH_AHEAD; k++) {
		size_t j;

		if (k < n)
			batch_slot(w, t, ip[k]);
		if ((j = k - BATCH_AHEAD) < n)
			batch_node(l, w, t, ip[j], &ring[j % BATCH_RING]);
		if ((j = k - 2 * BATCH_AHEAD) < n)
			batch_items(ip[j], &ring[j % BATCH_RING]);
		if ((j = k - 3 * BATCH_AHEAD) < n)
			batch_search(t, ip[j], &ring[j % BATCH_RING]);
		if ((j = k - 4 * BATCH_AHEAD) < n)
			found += (size_t)batch_out(map, ip[j], &ring[j % BATCH_RING], &out[j]);
	}
	sw_codemap_read_end(map, token);
	return found;
}

SW_API sw_status sw_codemap_find_batch(const sw_codemap *map, const uint64_t *ips, size_t n,
                                       sw_code_info *out, size_t *found)
{
	size_t hits = 0;

	if (found)
		*found = 0;
	if (!map || (n && (!ips || !out)))
		return SW_E_INVAL;
	for (size_t at = 0; at < n; at += BATCH_SECTION) {
		size_t len = n - at < BATCH_SECTION ? n - at : BATCH_SECTION;

		hits += batch_section(map, ips + at, len, out + at);
	}
	if (found)
		*found = hits;
	return SW_OK;
}

SW_API size_t sw_codemap_count(const sw_codemap *map)
{
	return map ? atomic_load_explicit(&map->count, memory_order_relaxed) : 0;
}

/* ---- the page window (codemap_window.h) ---- */

/* Replace the window with `w` (may be NULL), retiring the old.  Writer lock held. */
static void window_publish(sw_codemap *map, struct codemap_window *w)
{
	struct codemap_window *old = atomic_load_explicit(&map->window, memory_order_relaxed);

	/* Release: readers that load the new window see its words filled. */
	atomic_store_explicit(&map->window, w, memory_order_release);
	if (old)
		swi_epoch_retire(&map->epoch, &old->retire, swi_window_free);
}

/* A node the window cannot hold: no window for this map any more. */
static void window_turn_off(sw_codemap *map)
{
	map->window_off = 1;
	window_publish(map, NULL);
}

/*
 * A window of [lo, lo + len) filled from table `t`, published; nothing
 * changes when memory runs out (the hash table lists every page anyway).
 */
static void window_build(sw_codemap *map, const struct codemap_table *t, uint64_t lo, uint64_t len)
{
	struct codemap_window *w = swi_window_new(lo, len);

	if (!w)
		return;
	for (size_t i = 0; i <= t->mask; i++) {
		const struct codemap_page *p = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
		uint64_t k;

		if (!p || p == &swi_codemap_tombstone || !window_holds(w, p->page, &k))
			continue;
		if (!window_fits(p)) {
			free(w);
			window_turn_off(map);
			return;
		}
		atomic_init(&w->word[k], window_word_of(p));
	}
	window_publish(map, w);
}

/*
 * Before pages [first, last] get nodes: a window that holds them too, if
 * one that large is dense enough for the pages the map will have (`live`).
 * Else the window stays as it is, and those pages go through the hash.
 */
static void window_cover(sw_codemap *map, uint64_t first, uint64_t last, uint64_t live)
{
	const struct codemap_window *w = atomic_load_explicit(&map->window, memory_order_relaxed);
	uint64_t i, lo, len;

	if (map->window_off || (window_holds(w, first, &i) && window_holds(w, last, &i)))
		return;
	if (w) {
		uint64_t w_last = w->lo + w->len - 1;

		first = first < w->lo ? first : w->lo;
		last = last > w_last ? last : w_last;
	}
	if (swi_window_range(first, last, live, &lo, &len))
		window_build(map, atomic_load_explicit(&map->table, memory_order_relaxed), lo, len);
}

/*
 * After table `t` was rebuilt, perhaps because most methods went: a
 * window now too sparse for the pages left is made again for their
 * range, or dropped.
 */
static void window_refit(sw_codemap *map, const struct codemap_table *t)
{
	const struct codemap_window *w = atomic_load_explicit(&map->window, memory_order_relaxed);
	uint64_t first = UINT64_MAX, last = 0, lo, len;

	if (!w || w->len <= CODEMAP_WINDOW_SPARSE * t->live + 256)
		return;
	for (size_t i = 0; i <= t->mask; i++) {
		const struct codemap_page *p = atomic_load_explicit(&t->slot[i], memory_order_relaxed);

		if (p && p != &swi_codemap_tombstone) {
			first = p->page < first ? p->page : first;
			last = p->page > last ? p->page : last;
		}
	}
	if (t->live && swi_window_range(first, last, t->live, &lo, &len))
		window_build(map, t, lo, len);
	else
		window_publish(map, NULL);
}

/* ---- tables ---- */

static struct codemap_table *table_new(size_t slots)
{
	struct codemap_table *t;
	unsigned log2 = 0;

	while (((size_t)1 << log2) < slots)
		log2++;
	t = calloc(1, sizeof(*t) + sizeof(t->slot[0]) * slots);
	if (!t)
		return NULL;
	t->shift = 64 - log2;
	t->mask = slots - 1;
	for (size_t i = 0; i < slots; i++)
		atomic_init(&t->slot[i], NULL);
	return t;
}

static size_t slots_for(size_t live)
{
	size_t slots = CODEMAP_MIN_SLOTS;

	/* Aim for a load of at most 1/2 after a rebuild. */
	while (slots / 2 < live && slots < SIZE_MAX / 4)
		slots *= 2;
	return slots;
}

/*
 * Whether a table about to take `extra` more pages should be rebuilt first:
 * more than 3/4 of its slots would be used (live or tombstone), or it has
 * become eight times larger than its live pages need.
 */
static int table_wants_rebuild(const struct codemap_table *t, size_t extra)
{
	size_t slots = t->mask + 1;

	if (t->used + extra > slots / 4 * 3)
		return 1;
	return slots > CODEMAP_MIN_SLOTS && t->live + extra < slots / 16;
}

/* Place a node in a table nobody reads yet. */
static void table_place(struct codemap_table *t, const struct codemap_page *p)
{
	size_t i = page_hash(t, p->page);

	while (atomic_load_explicit(&t->slot[i], memory_order_relaxed))
		i = (i + 1) & t->mask;
	atomic_store_explicit(&t->slot[i], p, memory_order_relaxed);
	t->used++;
	t->live++;
}

/* Rebuild the table for `extra` more pages and publish it.  Writer lock held. */
static sw_status table_rebuild(sw_codemap *map, size_t extra)
{
	struct codemap_table *old = atomic_load_explicit(&map->table, memory_order_relaxed);
	struct codemap_table *t;

	if (extra > SIZE_MAX / 4 - old->live)
		return SW_E_NOMEM;
	t = table_new(slots_for(old->live + extra));
	if (!t)
		return SW_E_NOMEM;
	for (size_t i = 0; i <= old->mask; i++) {
		const struct codemap_page *p =
			atomic_load_explicit(&old->slot[i], memory_order_relaxed);

		if (p && p != &swi_codemap_tombstone)
			table_place(t, p);
	}
	/* Release: readers that load the new table see its slots filled. */
	atomic_store_explicit(&map->table, t, memory_order_release);
	swi_epoch_retire(&map->epoch, &old->retire, free_table);
	window_refit(map, t);
	return SW_OK;
}

/*
 * Install `fresh` for its page in the current table: replace the old node
 * (retiring it), fill a tombstone, or take the empty slot ending the probe.
 * Writer lock held; the table has room (rebuilt beforehand if needed), and
 * so has the retirer.
 */
static void table_install(sw_codemap *map, const struct codemap_page *fresh, uint64_t page)
{
	struct codemap_table *t = atomic_load_explicit(&map->table, memory_order_relaxed);
	size_t i = page_hash(t, page), tomb = SIZE_MAX;
	const struct codemap_page *old;

	/* The window first: a reader may find the page there or in the table, each up to date. */
	if (!map->window_off && !window_fits(fresh))
		window_turn_off(map);
	swi_window_set(atomic_load_explicit(&map->window, memory_order_relaxed), page, fresh);

	for (;;) {
		old = atomic_load_explicit(&t->slot[i], memory_order_relaxed);
		if (!old || old->page == page)
			break;
		if (old == &swi_codemap_tombstone && tomb == SIZE_MAX)
			tomb = i;
		i = (i + 1) & t->mask;
	}
	if (old) {
		/* Replace in place: the page keeps its slot. */
		atomic_store_explicit(&t->slot[i], fresh, memory_order_release);
		if (fresh == &swi_codemap_tombstone)
			t->live--;
		swi_retire_push(&map->retire, (uintptr_t)old | CODEMAP_RETIRED_PAGE);
		return;
	}
	/* A new page: reuse the first tombstone on its probe path if any.
	 * Slots before it stay non-empty, so no probe is cut short. */
	if (tomb != SIZE_MAX) {
		i = tomb;
	} else {
		t->used++;
	}
	t->live++;
	atomic_store_explicit(&t->slot[i], fresh, memory_order_release);
}

/* ---- adding ---- */

/*
 * Check what a method is registered with; the blob is validated, and its
 * body rule (for the walk's fast path) read in the same pass.
 */
static sw_status check_info(const sw_code_info *info, struct swu_body_rule *body, uint32_t *saved)
{
	if (!info || !info->unwind || info->unwind_size == 0 || info->size == 0)
		return SW_E_INVAL;
	if (info->size > UINT64_MAX - info->start)
		return SW_E_INVAL;      /* start + size would wrap */
	if (info->flags & ~(uint32_t)(SW_CODE_FUNCLET | SW_CODE_FILTER | SW_CODE_NATIVE |
	                              SW_CODE_ANALYZED | SW_CODE_SIGNAL_TRAMPOLINE |
	                              SW_CODE_OUTERMOST | SW_CODE_PERSONALITY))
		return SW_E_INVAL;
	/* A personality routine is native code's (CFI); managed code has EH clauses. */
	if ((info->flags & SW_CODE_PERSONALITY) && !(info->flags & SW_CODE_NATIVE))
		return SW_E_INVAL;
	/* No blob can describe more code than this; it also bounds the pages
	 * (and so the memory) one method can occupy. */
	if (info->size > SW_SWU_MAX_CODE_SIZE)
		return SW_E_LIMIT;
	/* The contract is one code for a bad blob, whatever the validator's
	 * finer diagnosis (truncated, a limit exceeded, ...); sw_swu_validate
	 * itself gives that to callers who want it. */
	if (swi_validate_cached(info->unwind, info->unwind_size, body, saved) != SW_OK)
		return SW_E_BADMETA;
	/* No body rule is no loss: the walk then decodes every frame. */
	if (body->lo >= body->hi)
		memset(body, 0, sizeof *body);
	return SW_OK;
}

/*
 * A new entry from the slab for `info`, whose body rule check_info read.
 * Writer lock held.  A shape the store cannot keep (full, or out of
 * memory) leaves the method without a body rule: its frames are then
 * decoded from the blob, as for a blob that has none.
 */
static struct codemap_entry *entry_new(sw_codemap *map, const sw_code_info *info,
                                       const struct swu_body_rule *body, const uint32_t *saved)
{
	uint32_t bits = (info->flags & CODEMAP_ENTRY_FLAG_MASK) << CODEMAP_ENTRY_FLAG_SHIFT, shape;
	const uint32_t run[4] = { body->lo, body->hi, body->lo2, body->hi2 };
	struct codemap_entry *e;
	size_t head = CODEMAP_ENTRY_HEAD;
	uint8_t *at;

	if (info->flags & SW_CODE_PERSONALITY)
		bits |= CODEMAP_ENTRY_PERSONALITY;
	if (body->lo < body->hi && swi_shapes_intern(&map->shapes, body, saved, &shape) == SW_OK) {
		bits |= shape + 1;
		if ((run[0] | run[1]) > 0xffff || run[2] != run[3])
			bits |= CODEMAP_ENTRY_RUNS;
	}
	if (info->parent)
		bits |= CODEMAP_ENTRY_PARENT;
	/* check_info bounds the size to 32 bits (SW_SWU_MAX_CODE_SIZE). */
	if (info->size != swi_blob_code_size(info->unwind, info->unwind + info->unwind_size))
		bits |= CODEMAP_ENTRY_SIZE;
	head += (bits & CODEMAP_ENTRY_PARENT) ? sizeof(void *) : 0;
	head += (bits & CODEMAP_ENTRY_SIZE) ? sizeof(uint32_t) : 0;
	head += (bits & CODEMAP_ENTRY_RUNS) ? sizeof run : 0;
	e = swi_slab_alloc(&map->slab, CODEMAP_SLAB_ENTRY, head + info->unwind_size);
	if (!e)
		return NULL;
	e->method = info->method;
	e->unwind_size = info->unwind_size;
	e->bits = bits;
	e->run[0] = (bits & CODEMAP_ENTRY_RUNS) ? 0 : (uint16_t)run[0];
	e->run[1] = (bits & CODEMAP_ENTRY_RUNS) ? 0 : (uint16_t)run[1];
	at = (uint8_t *)e + CODEMAP_ENTRY_HEAD;
	if (bits & CODEMAP_ENTRY_PARENT) {
		memcpy(at, &info->parent, sizeof info->parent);
		at += sizeof info->parent;
	}
	if (bits & CODEMAP_ENTRY_SIZE) {
		uint32_t size = (uint32_t)info->size;

		memcpy(at, &size, sizeof size);
		at += sizeof size;
	}
	if (bits & CODEMAP_ENTRY_RUNS) {
		memcpy(at, run, sizeof run);
		at += sizeof run;
	}
	memcpy(at, info->unwind, info->unwind_size);
	return e;
}

/* Allocate an array for `n` nodes: `small` if it fits. */
static const struct codemap_page **span_array(const struct codemap_page **small, uint64_t n)
{
	if (n <= CODEMAP_SMALL_SPAN)
		return small;
	return calloc((size_t)n, sizeof(*small));
}

static void span_free(sw_codemap *map, const struct codemap_page **span,
                      const struct codemap_page **small, uint64_t n)
{
	for (uint64_t k = 0; k < n; k++)
		swi_codemap_page_free(&map->slab, span[k]);
	if (span != small)
		free(span);
}

/* Whether [start, end) overlaps a registered table's range.  Writer lock held. */
static int tables_overlap(const sw_codemap *map, uint64_t start, uint64_t end)
{
	const struct codemap_tables *l = atomic_load_explicit(&map->tables, memory_order_relaxed);
	size_t lo = 0, n = l ? l->n : 0;

	/* Tables are apart: only the last one starting below end can reach start. */
	while (n > 0) {
		size_t half = n / 2;

		if (l->t[lo + half]->lo < end) {
			lo += half + 1;
			n -= half + 1;
		} else {
			n = half;
		}
	}
	return lo > 0 && l->t[lo - 1]->hi > start;
}

/* Add method `m` under the writer lock. */
static sw_status add_locked(sw_codemap *map, const struct codemap_span *m)
{
	uint64_t start = m->start, end = m->end;
	uint64_t first = page_of(start), pages = page_of(end - 1) - first + 1;
	const struct codemap_page *small[CODEMAP_SMALL_SPAN], **fresh;
	struct codemap_table *t = atomic_load_explicit(&map->table, memory_order_relaxed);
	sw_status st;

	if (tables_overlap(map, start, end))
		return SW_E_EXISTS;
	/* The current node of each page, kept for the copies below. */
	fresh = span_array(small, pages);
	if (!fresh)
		return SW_E_NOMEM;
	for (uint64_t k = 0; k < pages; k++) {
		const struct codemap_page *p = table_find(t, first + k);

		if (p && swi_codemap_page_overlaps(p, start, end)) {
			st = SW_E_EXISTS;
			goto out;
		}
		fresh[k] = p;
	}
	/* Room to retire the nodes replaced; and a rebuild moves the nodes to
	 * a new table, it does not change them. */
	st = swi_retire_reserve(&map->retire, (size_t)pages);
	if (st == SW_OK && table_wants_rebuild(t, (size_t)pages))
		st = table_rebuild(map, (size_t)pages);
	if (st != SW_OK)
		goto out;
	t = atomic_load_explicit(&map->table, memory_order_relaxed);
	window_cover(map, first, first + pages - 1, t->live + pages);
	/* Build every new node before publishing any, so that running out of
	 * memory leaves the map as it was.  A node the method can be appended
	 * to stays: fresh[k] is then the map's own node. */
	t = atomic_load_explicit(&map->table, memory_order_relaxed);
	for (uint64_t k = 0; k < pages; k++) {
		const struct codemap_page *copy;

		if (swi_codemap_page_can_append(fresh[k], page_rel(first + k, start)))
			continue;
		copy = swi_codemap_page_with(&map->slab, fresh[k], first + k, m);
		if (!copy) {
			for (uint64_t j = 0; j < k; j++)
				if (fresh[j] != table_find(t, first + j))
					swi_codemap_page_free(&map->slab, fresh[j]);
			st = SW_E_NOMEM;
			goto out;
		}
		fresh[k] = copy;
	}
	for (uint64_t k = 0; k < pages; k++) {
		const struct codemap_page *cur = table_find(t, first + k);

		if (fresh[k] == cur) {
			swi_codemap_page_append((struct codemap_page *)cur, m);
			swi_window_set(atomic_load_explicit(&map->window, memory_order_relaxed), first + k, cur);
		} else {
			table_install(map, fresh[k], first + k);
		}
	}
	count_add(map, 1);
	bump_release(&map->additions);
out:
	if (fresh != small)
		free(fresh);
	return st;
}

/*
 * End a method's add or removal, begun under the writer lock: tell the
 * observers of the method (when the write succeeded), release the lock,
 * and now and then reclaim what earlier removals retired (opportunistic:
 * it never waits).  Returns st.
 */
static sw_status method_write_end(sw_codemap *map, sw_status st, sw_codemap_event event,
                                  const sw_code_info *method)
{
	int poll = count_write(map);

	if (poll)
		swi_retire_flush(&map->retire);
	if (st == SW_OK && map->observers)
		swi_codemap_notify(map->observers, event, method);
	pthread_mutex_unlock(&map->lock);
	if (poll)
		swi_epoch_poll(&map->epoch);
	return st;
}

SW_API sw_status sw_codemap_add(sw_codemap *map, const sw_code_info *info)
{
	uint32_t saved[SWU_BODY_MAX_SAVED];
	struct swu_body_rule body;
	struct codemap_entry *e;
	sw_code_info added;
	sw_status st;

	if (!map)
		return SW_E_INVAL;
	st = check_info(info, &body, saved);
	if (st != SW_OK)
		return st;
	pthread_mutex_lock(&map->lock);
	swi_retire_drain(&map->retire);
	e = entry_new(map, info, &body, saved);
	if (e) {
		const struct codemap_span m = { info->start, info->start + info->size, e };

		st = add_locked(map, &m);
	} else {
		st = SW_E_NOMEM;
	}
	if (st != SW_OK && e)
		entry_free(map, e);     /* never published */
	/* Observers see the method as a lookup gives it: with the map's copy of the blob. */
	added = *info;
	if (st == SW_OK)
		added.unwind = entry_blob(e);
	return method_write_end(map, st, SW_CODEMAP_ADDED, &added);
}

/* ---- removing ---- */

static sw_status remove_locked(sw_codemap *map, uint64_t start)
{
	struct codemap_table *t = atomic_load_explicit(&map->table, memory_order_relaxed);
	const struct codemap_page *p, *small[CODEMAP_SMALL_SPAN], **fresh;
	const struct codemap_entry *e;
	uint64_t first = page_of(start), pages;
	int failed = 0;
	long i;

	p = table_find_to_search(t, first);
	if (!p)
		return SW_E_NOTFOUND;
	i = page_search(p, page_rel(first, start));
	if (i < 0 || p->item[i].start != page_rel(first, start) || item_dead(&p->item[i]))
		return SW_E_NOTFOUND;
	e = p->item[i].entry;
	/* The end from the item, not the entry: the entry is cold, the node is not. */
	pages = page_of((first << CODEMAP_PAGE_SHIFT) +
	                (uint64_t)(int64_t)atomic_load_explicit(&p->item[i].end,
	                                                        memory_order_relaxed) - 1) - first + 1;
	/* Room to retire the entry and a node for each page. */
	if (pages >= SIZE_MAX || swi_retire_reserve(&map->retire, (size_t)pages + 1) != SW_OK)
		return SW_E_NOMEM;

	/* Everything that may fail first, so that failing leaves the map as it was. */
	fresh = span_array(small, pages);
	if (!fresh)
		return SW_E_NOMEM;
	for (uint64_t k = 0; k < pages && !failed; k++) {
		const struct codemap_page *q = k ? table_find(t, first + k) : p;

		/* Every page a method spans lists it; this guards our own bugs. */
		fresh[k] = q ? swi_codemap_page_after_remove(&map->slab, q, e, &failed) : NULL;
		failed |= !q;
	}
	if (failed) {
		span_free(map, fresh, small, pages);
		return SW_E_NOMEM;
	}
	for (uint64_t k = 0; k < pages; k++) {
		if (fresh[k]) {
			table_install(map, fresh[k], first + k);
		} else {
			/* The first page's node and item are known: no second probe and search. */
			struct codemap_page *q = (struct codemap_page *)(k ? table_find(t, first + k) : p);
			struct codemap_item *it = k ? swi_codemap_page_item_of(q, start)
			                            : (struct codemap_item *)&p->item[i];

			atomic_store_explicit(&it->end, it->start, memory_order_release);
			q->dead++;
		}
	}
	if (fresh != small)
		free(fresh);
	/*
	 * Before the entry goes to the epoch (see swi_codemap_version): the
	 * fence of the reclamation poll that may free it comes after this
	 * store, which is what pairs with the reader's fence.
	 */
	bump_release(&map->version);
	swi_retire_push(&map->retire, (uintptr_t)e);
	count_add(map, (size_t)-1);

	/* Clear tombstones, or shrink after mass removal.  Failing to is
	 * harmless: the current table stays correct. */
	if (table_wants_rebuild(t, 0))
		(void)table_rebuild(map, 0);
	return SW_OK;
}

SW_API sw_status sw_codemap_remove(sw_codemap *map, uint64_t start)
{
	sw_code_info gone = { 0 };
	sw_status st;

	if (!map)
		return SW_E_INVAL;
	pthread_mutex_lock(&map->lock);
	/* What observers will hear of, read while the method is still there;
	 * its blob may be reclaimed once it is removed, so they get none. */
	if (map->observers && sw_codemap_find(map, start, &gone) == SW_OK)
		gone.unwind = NULL;
	swi_retire_drain(&map->retire);
	st = remove_locked(map, start);
	return method_write_end(map, st, SW_CODEMAP_REMOVED, &gone);
}

SW_API void sw_codemap_synchronize(sw_codemap *map)
{
	if (!map)
		return;
	pthread_mutex_lock(&map->lock);
	swi_retire_flush(&map->retire);
	pthread_mutex_unlock(&map->lock);
	swi_epoch_synchronize(&map->epoch);
	/* And give the memory back to the slab now, not at the next write. */
	pthread_mutex_lock(&map->lock);
	swi_retire_drain(&map->retire);
	pthread_mutex_unlock(&map->lock);
}

/* ---- code tables (codemap_table.h) ---- */

/* Whether a method lies in [lo, hi).  Writer lock held. */
static int methods_in(const sw_codemap *map, uint64_t lo, uint64_t hi)
{
	const struct codemap_table *t = atomic_load_explicit(&map->table, memory_order_relaxed);
	uint64_t first = page_of(lo), last = page_of(hi - 1);

	/* Whichever is fewer: the range's pages, or the table's slots. */
	if (last - first <= t->mask) {
		for (uint64_t page = first; page <= last; page++) {
			const struct codemap_page *p = table_find(t, page);

			if (p && swi_codemap_page_overlaps(p, lo, hi))
				return 1;
		}
		return 0;
	}
	for (size_t i = 0; i <= t->mask; i++) {
		const struct codemap_page *p = atomic_load_explicit(&t->slot[i], memory_order_relaxed);

		if (p && p != &swi_codemap_tombstone && p->page >= first && p->page <= last &&
		    swi_codemap_page_overlaps(p, lo, hi))
			return 1;
	}
	return 0;
}

/* Tell the observers of every function of `t`.  Writer lock held. */
static void notify_table(sw_codemap *map, sw_codemap_event event, const struct swi_code_table *t)
{
	struct swi_code_copy c;

	/* A table imported on demand is not read through here: that would import it all. */
	if (t->source)
		return;
	for (uint32_t i = 0; map->observers && i < t->nfn; i++) {
		swi_code_table_info(t, i, &c);
		/* As for a removed method: its blob may be reclaimed. */
		if (event == SW_CODEMAP_REMOVED)
			c.info.unwind = NULL;
		swi_codemap_notify(map->observers, event, &c.info);
	}
}

/* Publish `fresh` (NULL: no tables) as the list, retiring the old one.  Writer lock held. */
static void tables_publish(sw_codemap *map, struct codemap_tables *fresh)
{
	const struct codemap_tables *old = atomic_load_explicit(&map->tables, memory_order_relaxed);

	atomic_store_explicit(&map->tables, fresh, memory_order_release);
	if (old)
		swi_epoch_retire(&map->epoch, &((struct codemap_tables *)old)->retire, free_tables);
}

static sw_status add_table_locked(sw_codemap *map, const struct swi_code_table *t)
{
	const struct codemap_tables *old = atomic_load_explicit(&map->tables, memory_order_relaxed);
	size_t n = old ? old->n : 0, at = 0;
	struct codemap_tables *fresh;

	if (tables_overlap(map, t->lo, t->hi) || methods_in(map, t->lo, t->hi))
		return SW_E_EXISTS;
	fresh = malloc(sizeof(*fresh) + sizeof(fresh->t[0]) * (n + 1));
	if (!fresh)
		return SW_E_NOMEM;
	while (at < n && old->t[at]->lo < t->lo)
		at++;
	for (size_t k = 0; k < at; k++)
		fresh->t[k] = old->t[k];
	fresh->t[at] = t;
	for (size_t k = at; k < n; k++)
		fresh->t[k + 1] = old->t[k];
	fresh->n = n + 1;
	tables_publish(map, fresh);
	count_add(map, t->nfn);
	bump_release(&map->additions);
	return SW_OK;
}

sw_status swi_codemap_add_table(sw_codemap *map, const struct swi_code_table *t)
{
	sw_status st;

	if (!map)
		return SW_E_INVAL;
	if ((st = swi_code_table_check(t)) != SW_OK)
		return st;
	pthread_mutex_lock(&map->lock);
	st = add_table_locked(map, t);
	if (st == SW_OK)
		notify_table(map, SW_CODEMAP_ADDED, t);
	pthread_mutex_unlock(&map->lock);
	return st;
}

static sw_status remove_table_locked(sw_codemap *map, const struct swi_code_table *t)
{
	const struct codemap_tables *old = atomic_load_explicit(&map->tables, memory_order_relaxed);
	struct codemap_tables *fresh = NULL;
	size_t at = 0;

	while (old && at < old->n && old->t[at] != t)
		at++;
	if (!old || at == old->n)
		return SW_E_NOTFOUND;
	if (old->n > 1) {
		fresh = malloc(sizeof(*fresh) + sizeof(fresh->t[0]) * (old->n - 1));
		if (!fresh)
			return SW_E_NOMEM;
		for (size_t k = 0, j = 0; k < old->n; k++)
			if (k != at)
				fresh->t[j++] = old->t[k];
		fresh->n = old->n - 1;
	}
	atomic_store_explicit(&map->tables, fresh, memory_order_release);
	/* Before the old list goes to the epoch, as for a removed entry (swi_codemap_version). */
	bump_release(&map->version);
	swi_epoch_retire(&map->epoch, &((struct codemap_tables *)old)->retire, free_tables);
	count_add(map, (size_t)0 - t->nfn);
	return SW_OK;
}

sw_status swi_codemap_remove_table(sw_codemap *map, const struct swi_code_table *t)
{
	sw_status st;

	if (!map || !t)
		return SW_E_INVAL;
	pthread_mutex_lock(&map->lock);
	st = remove_table_locked(map, t);
	if (st == SW_OK)
		notify_table(map, SW_CODEMAP_REMOVED, t);
	pthread_mutex_unlock(&map->lock);
	return st;
}

/* ---- life cycle ---- */

/* Maps created so far in the process: each map's version starts apart. */
static atomic_uint_fast64_t codemap_instances = 1;

SW_API sw_status sw_codemap_create(sw_codemap **out)
{
	sw_codemap *map;
	struct codemap_table *t;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	/* The epoch's counters want their own cache lines. */
	map = aligned_alloc(_Alignof(sw_codemap), sizeof(*map));
	if (!map)
		return SW_E_NOMEM;
	t = table_new(CODEMAP_MIN_SLOTS);
	if (!t || swi_epoch_init(&map->epoch) != 0) {
		free(t);
		free(map);
		return SW_E_NOMEM;
	}
	if (pthread_mutex_init(&map->lock, NULL) != 0) {
		swi_epoch_destroy(&map->epoch);
		free(t);
		free(map);
		return SW_E_NOMEM;
	}
	atomic_init(&map->table, t);
	atomic_init(&map->tables, NULL);
	atomic_init(&map->window, NULL);
	map->window_off = !CODEMAP_WINDOW;
	atomic_init(&map->count, 0);
	/* 2^40 removals apart: a map that took a freed map's address starts elsewhere. */
	atomic_init(&map->version, atomic_fetch_add(&codemap_instances, 1) << 40);
	atomic_init(&map->additions, 0);
	map->unpolled = 0;
	swi_slab_init(&map->slab);
	swi_shapes_init(&map->shapes);
	swi_retire_init(&map->retire, &map->epoch, release_retired, map);
	map->observers = NULL;
	*out = map;
	return SW_OK;
}

SW_API void sw_codemap_destroy(sw_codemap *map)
{
	struct codemap_table *t;

	if (!map)
		return;
	/* What was retired: old tables, and batches of old page nodes and
	 * removed entries, handed back or not yet.  Freeing a node does not
	 * touch the entries it lists, so order does not matter; live entries
	 * are freed below, from the current table. */
	swi_epoch_destroy(&map->epoch);
	swi_retire_destroy(&map->retire);
	t = atomic_load_explicit(&map->table, memory_order_relaxed);
	for (size_t i = 0; i <= t->mask; i++) {
		const struct codemap_page *p =
			atomic_load_explicit(&t->slot[i], memory_order_relaxed);

		if (!p || p == &swi_codemap_tombstone)
			continue;
		/* Each entry is listed in every page it spans: free it from
		 * the page where it starts. */
		for (uint32_t k = 0; k < page_count(p); k++)
			if (p->item[k].start >= 0 && !item_dead(&p->item[k]))
				entry_free(map, (struct codemap_entry *)p->item[k].entry);
		swi_codemap_page_free(&map->slab, p);
	}
	free(t);
	free(atomic_load_explicit(&map->window, memory_order_relaxed));
	/* The tables are their owners'; only the list is the map's. */
	free((struct codemap_tables *)atomic_load_explicit(&map->tables, memory_order_relaxed));
	swi_slab_destroy(&map->slab);
	swi_shapes_destroy(&map->shapes);
	pthread_mutex_destroy(&map->lock);
	free(map);
}

/* ---- observers (the list itself is codemap_observer.c's) ---- */

SW_API sw_status sw_codemap_observe(sw_codemap *map, sw_codemap_observer *obs)
{
	sw_status st;

	if (!map || !obs || !obs->notify)
		return SW_E_INVAL;
	pthread_mutex_lock(&map->lock);
	st = swi_codemap_observer_link(&map->observers, obs);
	pthread_mutex_unlock(&map->lock);
	return st;
}

SW_API sw_status sw_codemap_unobserve(sw_codemap *map, sw_codemap_observer *obs)
{
	sw_status st;

	if (!map || !obs)
		return SW_E_INVAL;
	pthread_mutex_lock(&map->lock);
	st = swi_codemap_observer_unlink(&map->observers, obs);
	pthread_mutex_unlock(&map->lock);
	return st;
}
