/*
 * codemap_publish.c - a code map published for debuggers (remote.h,
 * stackwalk-remote(5)).
 *
 * The publisher observes one code map and keeps, on its own side, the
 * managed methods by start (each with a copy of its blob and its name)
 * and the published threads.  After every change it writes a whole new
 * snapshot into the spare of two buffers and swaps the descriptor's
 * pointer to it.  The buffer the descriptor points to is never written,
 * so a core taken at any instruction of an update holds a whole snapshot;
 * the generation, odd during the update, tells a reader of a running
 * process that what it read may have been rewritten under it.
 *
 * Each change rewrites the snapshot, in time linear in the methods: this
 * is for a debugger's view, and writers are never on a walk's path.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "array_grow.h"
#include <stackwalk/remote.h>

SW_API sw_remote_descriptor sw_published_codemap = {
	SW_REMOTE_MAGIC, SW_REMOTE_VERSION, 0, sizeof(sw_remote_descriptor), 0, 0, 0, { 0, 0 }
};

/* The on-target records, as the host writes them (every supported host is little-endian). */
struct published_method {
	uint64_t start, size, handle, parent, unwind;
	uint32_t unwind_size, flags;
	uint64_t name;
};
struct published_thread {
	uint64_t tid, frame_head, exception_head, state;
};
struct published_header {
	uint32_t nmethods, nthreads, method_size, thread_size;
};
_Static_assert(sizeof(struct published_method) == 56, "stackwalk-remote(5): method record");
_Static_assert(sizeof(struct published_thread) == 32, "stackwalk-remote(5): thread record");
_Static_assert(sizeof(struct published_header) == 16, "stackwalk-remote(5): snapshot header");
_Static_assert(sizeof(sw_remote_descriptor) == 48, "stackwalk-remote(5): descriptor");

/* A published method and the copy its record points into: its blob, then its name. */
struct method_entry {
	struct published_method rec;
	uint8_t *copy;
};

struct snapshot_buffer {
	unsigned char *bytes;
	size_t cap;
};

struct sw_publisher {
	sw_method_name_fn name;
	void *name_data;
	sw_codemap *map;                /* attached to, or NULL */
	sw_codemap_observer observer;
	pthread_mutex_t lock;           /* everything below: the observer and threads race */
	struct method_entry *methods;   /* by start */
	size_t nmethods, methods_cap;
	struct published_thread *threads;
	size_t nthreads, threads_cap;
	struct snapshot_buffer buf[2];
	unsigned current;               /* the buffer the descriptor points to, when it does */
	sw_status status;
};

/*
 * The publisher that owns sw_published_codemap, or NULL: set under
 * owner_lock, and by unpublish under the owner's lock too, so that a
 * publish() that finds itself the owner finishes before it is not.
 * Lock order: owner_lock, then the map's, then a publisher's.
 */
static sw_publisher *owner;
static pthread_mutex_t owner_lock = PTHREAD_MUTEX_INITIALIZER;

/*
 * Write the next snapshot into the spare buffer and point the descriptor at
 * it.  Publisher lock held; only the owner writes the descriptor.
 */
static sw_status publish(sw_publisher *p)
{
	struct published_header h = { (uint32_t)p->nmethods, (uint32_t)p->nthreads,
	                              sizeof(struct published_method), sizeof(struct published_thread) };
	size_t size = sizeof h + p->nmethods * sizeof(struct published_method) +
	              p->nthreads * sizeof *p->threads;
	struct snapshot_buffer *spare = &p->buf[p->current ^ 1];
	uint32_t gen;

	if (__atomic_load_n(&owner, __ATOMIC_ACQUIRE) != p)
		return SW_OK;
	/* The spare is no reader's current snapshot: it may be freed and replaced. */
	if (spare->cap < size) {
		unsigned char *bytes = malloc(size * 2);

		if (!bytes)
			return SW_E_NOMEM;
		free(spare->bytes);
		spare->bytes = bytes;
		spare->cap = size * 2;
	}
	gen = __atomic_load_n(&sw_published_codemap.generation, __ATOMIC_RELAXED);
	__atomic_store_n(&sw_published_codemap.generation, gen + 1, __ATOMIC_RELAXED);
	/* A reader that sees a byte written below sees the odd generation too. */
	__atomic_thread_fence(__ATOMIC_RELEASE);
	memcpy(spare->bytes, &h, sizeof h);
	for (size_t i = 0; i < p->nmethods; i++)
		memcpy(spare->bytes + sizeof h + i * sizeof(struct published_method), &p->methods[i].rec,
		       sizeof(struct published_method));
	if (p->nthreads)        /* no threads yet: no array to copy from */
		memcpy(spare->bytes + sizeof h + p->nmethods * sizeof(struct published_method),
		       p->threads, p->nthreads * sizeof *p->threads);
	__atomic_store_n(&sw_published_codemap.snapshot, (uint64_t)(uintptr_t)spare->bytes,
	                 __ATOMIC_RELEASE);
	__atomic_store_n(&sw_published_codemap.generation, gen + 2, __ATOMIC_RELEASE);
	p->current ^= 1;
	return SW_OK;
}

/* The first method whose start is >= start. */
static size_t method_index(const sw_publisher *p, uint64_t start)
{
	size_t i;

	SWI_SEARCH(i, p->nmethods, mid, p->methods[mid].rec.start < start);
	return i;
}

static sw_status method_added(sw_publisher *p, const sw_code_info *info)
{
	char name[SW_REMOTE_MAX_NAME] = "";
	size_t name_len, i;
	uint8_t *copy;

	if (p->name)
		p->name(p->name_data, info, name, sizeof name);
	name[sizeof name - 1] = '\0';
	name_len = strlen(name);
	if (swi_array_grow((void **)&p->methods, &p->methods_cap, p->nmethods + 1,
	                   sizeof *p->methods) != SW_OK)
		return SW_E_NOMEM;
	if (!(copy = malloc((size_t)info->unwind_size + name_len + 1)))
		return SW_E_NOMEM;
	memcpy(copy, info->unwind, info->unwind_size);
	memcpy(copy + info->unwind_size, name, name_len + 1);
	i = method_index(p, info->start);
	memmove(&p->methods[i + 1], &p->methods[i], (p->nmethods - i) * sizeof *p->methods);
	p->methods[i].rec = (struct published_method){
		info->start, info->size, (uint64_t)(uintptr_t)info->method,
		(uint64_t)(uintptr_t)info->parent, (uint64_t)(uintptr_t)copy, info->unwind_size,
		info->flags, name_len ? (uint64_t)(uintptr_t)(copy + info->unwind_size) : 0
	};
	p->methods[i].copy = copy;
	p->nmethods++;
	return publish(p);
}

static sw_status method_removed(sw_publisher *p, uint64_t start)
{
	size_t i = method_index(p, start);
	uint8_t *copy;
	sw_status st;

	if (i == p->nmethods || p->methods[i].rec.start != start)
		return SW_OK;   /* native code, never published */
	copy = p->methods[i].copy;
	memmove(&p->methods[i], &p->methods[i + 1], (p->nmethods - i - 1) * sizeof *p->methods);
	p->nmethods--;
	st = publish(p);
	/* Only the old snapshot, no longer current, could still point to it. */
	if (st == SW_OK)
		free(copy);
	return st;
}

static void notify(void *data, sw_codemap_event event, const sw_code_info *info)
{
	sw_publisher *p = data;
	sw_status st = SW_OK;

	if (info->flags & SW_CODE_NATIVE)
		return;
	pthread_mutex_lock(&p->lock);
	if (event == SW_CODEMAP_ADDED)
		st = method_added(p, info);
	else if (event == SW_CODEMAP_REMOVED)
		st = method_removed(p, info->start);
	if (st != SW_OK && p->status == SW_OK)
		p->status = st;
	pthread_mutex_unlock(&p->lock);
}

SW_API sw_status sw_publisher_create(sw_publisher **out, sw_method_name_fn name, void *data)
{
	sw_publisher *p;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!(p = calloc(1, sizeof *p)))
		return SW_E_NOMEM;
	p->name = name;
	p->name_data = data;
	p->observer.notify = notify;
	p->observer.data = p;
	pthread_mutex_init(&p->lock, NULL);
	*out = p;
	return SW_OK;
}

/* Empty the descriptor and give it up.  Owner lock held. */
static void unpublish(sw_publisher *p)
{
	pthread_mutex_lock(&p->lock);
	if (owner == p) {
		__atomic_store_n(&sw_published_codemap.snapshot, 0, __ATOMIC_RELEASE);
		__atomic_add_fetch(&sw_published_codemap.generation, 2, __ATOMIC_RELEASE);
		__atomic_store_n(&owner, NULL, __ATOMIC_RELEASE);
	}
	pthread_mutex_unlock(&p->lock);
}

SW_API sw_status sw_publisher_attach(sw_publisher *p, sw_codemap *map)
{
	sw_status st;

	if (!p || !map)
		return SW_E_INVAL;
	pthread_mutex_lock(&owner_lock);
	if (owner || p->map) {
		pthread_mutex_unlock(&owner_lock);
		return SW_E_EXISTS;
	}
	__atomic_store_n(&owner, p, __ATOMIC_RELEASE);
	sw_published_codemap.arch = sw_arch_host();
	pthread_mutex_lock(&p->lock);
	st = publish(p);
	pthread_mutex_unlock(&p->lock);
	if (st == SW_OK && (st = sw_codemap_observe(map, &p->observer)) == SW_OK)
		p->map = map;
	if (st != SW_OK)
		unpublish(p);
	pthread_mutex_unlock(&owner_lock);
	return st;
}

SW_API sw_status sw_publisher_detach(sw_publisher *p)
{
	if (!p)
		return SW_E_INVAL;
	if (!p->map)
		return SW_E_NOTFOUND;
	sw_codemap_unobserve(p->map, &p->observer);
	p->map = NULL;
	pthread_mutex_lock(&owner_lock);
	unpublish(p);
	pthread_mutex_unlock(&owner_lock);
	return SW_OK;
}

SW_API void sw_publisher_destroy(sw_publisher *p)
{
	if (!p)
		return;
	if (p->map)
		sw_publisher_detach(p);
	for (size_t i = 0; i < p->nmethods; i++)
		free(p->methods[i].copy);
	free(p->methods);
	free(p->threads);
	free(p->buf[0].bytes);
	free(p->buf[1].bytes);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

static size_t thread_index(const sw_publisher *p, uint64_t tid)
{
	size_t i = 0;

	while (i < p->nthreads && p->threads[i].tid != tid)
		i++;
	return i;
}

SW_API sw_status sw_publisher_thread(sw_publisher *p, uint64_t tid, uint64_t frame_head,
                                     uint64_t exception_head, uint64_t state)
{
	sw_status st = SW_OK;
	size_t i;

	if (!p)
		return SW_E_INVAL;
	pthread_mutex_lock(&p->lock);
	i = thread_index(p, tid);
	if (i == p->nthreads)
		st = swi_array_grow((void **)&p->threads, &p->threads_cap, p->nthreads + 1,
		                    sizeof *p->threads);
	if (st == SW_OK) {
		if (i == p->nthreads)
			p->nthreads++;
		p->threads[i] = (struct published_thread){ tid, frame_head, exception_head, state };
		st = publish(p);
	}
	pthread_mutex_unlock(&p->lock);
	return st;
}

SW_API sw_status sw_publisher_thread_remove(sw_publisher *p, uint64_t tid)
{
	sw_status st;
	size_t i;

	if (!p)
		return SW_E_INVAL;
	pthread_mutex_lock(&p->lock);
	i = thread_index(p, tid);
	if (i == p->nthreads) {
		st = SW_E_NOTFOUND;
	} else {
		p->threads[i] = p->threads[--p->nthreads];
		st = publish(p);
	}
	pthread_mutex_unlock(&p->lock);
	return st;
}

SW_API sw_status sw_publisher_status(const sw_publisher *p)
{
	return p ? p->status : SW_E_INVAL;
}
