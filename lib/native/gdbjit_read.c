/*
 * gdbjit_read.c - a debugger reads another process's GDB JIT list
 * (gdbjit.h: sw_gdbjit_read) and loads its objects as modules.
 *
 * The descriptor and its entries are gdb's layout at the target's pointer
 * width: {u32 version, u32 action, ptr relevant, ptr first} and
 * {ptr next, ptr prev, ptr symfile_addr, u64 symfile_size}, the u64
 * aligned to 4 bytes on i386 and 8 elsewhere.  Only `next` is followed,
 * as gdb does: a JIT stopped in the middle of linking an entry has its
 * `prev` pointers briefly out of step, and the list from first_entry is
 * whole all the same.
 *
 * Everything read is bounded: entries by SW_GDBJIT_MAX_ENTRIES, with every
 * entry's address remembered so that a list that comes back to one (a
 * cycle) ends with an error instead of going round; an object by
 * SW_GDBJIT_MAX_OBJECT, read in pieces so that the buffer grows only as
 * the target's memory yields bytes.
 *
 * Naming an address (sw_gdbjit_list_symbolize) goes through an index
 * built once the list is read: every function symbol of every object is
 * an interval, and the intervals are cut into disjoint pieces, each owned
 * by the object nearest the list's head among those with a symbol there
 * (a heap sweep, O(S log S) for S symbols; at most 2S + 1 pieces, so the
 * index is sized by the symbols read).  A lookup is a binary search for
 * the piece, then the owner's own symbol search: the answer the objects
 * would give if asked one after the other in list order, in O(log S).
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "array_grow.h"
#include "jit_object.h"
#include <stackwalk/gdbjit.h>

#define READ_PIECE ((size_t)64 << 10)   /* an object is read this much at a time */

/* A piece of the address space, [first, last], and the object that names it. */
struct piece {
	uint64_t first, last;
	size_t object;
};

struct sw_gdbjit_list {
	sw_gdbjit_object *objects;
	size_t count, cap;
	struct piece *pieces;           /* by address, disjoint */
	size_t npieces;
	uint64_t *seen;                 /* entry addresses, open addressing (0: free); cap a power of 2 */
	size_t seen_cap;
};

/* Remember `entry`; false if it was seen before. */
static sw_status remember(sw_gdbjit_list *l, uint64_t entry, bool *fresh)
{
	size_t mask, i;

	/* Kept at most half full; grown by rehashing. */
	if (2 * (l->count + 1) > l->seen_cap) {
		size_t cap = l->seen_cap ? 2 * l->seen_cap : 64;
		uint64_t *t = calloc(cap, sizeof *t);

		if (!t)
			return SW_E_NOMEM;
		for (size_t k = 0; k < l->seen_cap; k++) {
			if (!l->seen[k])
				continue;
			for (i = (size_t)(l->seen[k] * 0x9e3779b97f4a7c15u >> 32) & (cap - 1); t[i];
			     i = (i + 1) & (cap - 1))
				;
			t[i] = l->seen[k];
		}
		free(l->seen);
		l->seen = t;
		l->seen_cap = cap;
	}
	mask = l->seen_cap - 1;
	for (i = (size_t)(entry * 0x9e3779b97f4a7c15u >> 32) & mask; l->seen[i]; i = (i + 1) & mask) {
		if (l->seen[i] == entry) {
			*fresh = false;
			return SW_OK;
		}
	}
	l->seen[i] = entry;
	*fresh = true;
	return SW_OK;
}

/* The object file of one entry, copied out of the target: *buf (malloc'd) on SW_OK. */
static sw_status read_object(const sw_memory *mem, uint64_t addr, uint64_t size, unsigned char **buf)
{
	unsigned char *b = NULL;
	size_t cap = 0;
	sw_status st;

	*buf = NULL;
	if (size == 0 || addr == 0)
		return SW_E_BADMETA;
	if (size > SW_GDBJIT_MAX_OBJECT)
		return SW_E_LIMIT;
	if (addr + size < addr)
		return SW_E_BADADDR;
	for (size_t done = 0; done < size;) {
		size_t n = size - done < READ_PIECE ? (size_t)size - done : READ_PIECE;

		if ((st = swi_array_grow((void **)&b, &cap, done + n, 1)) != SW_OK ||
		    (st = swi_read(mem, addr + done, b + done, n)) != SW_OK) {
			free(b);
			return st;
		}
		done += n;
	}
	*buf = b;
	return SW_OK;
}

/* Load one object as a module at the addresses it gives (relocated first when it is ET_REL). */
static sw_status load_object(const sw_memory *mem, sw_arch arch, unsigned flags, sw_gdbjit_object *o)
{
	unsigned char *elf;
	sw_arch got = SW_ARCH_NONE;
	sw_status st;

	if ((st = read_object(mem, o->symfile_addr, o->symfile_size, &elf)) != SW_OK)
		return st;
	st = swi_jit_object_place(elf, (size_t)o->symfile_size);
	if (st == SW_OK)
		st = sw_module_load_image_flags(elf, (size_t)o->symfile_size, 0, flags, &got, &o->module);
	free(elf);
	if (st == SW_OK && got != arch) {
		sw_module_free(o->module);
		o->module = NULL;
		st = SW_E_UNSUPPORTED;
	}
	return st;
}

/* Read the entry at `entry`: its next entry in *next, its object loaded or its status kept. */
static sw_status read_entry(sw_gdbjit_list *l, const sw_memory *mem, sw_arch arch, unsigned flags,
                            uint64_t entry, uint64_t *next)
{
	unsigned ptr = sw_arch_pointer_size(arch);
	/* symfile_size: a u64 after three pointers, 4-aligned on i386 as i386 aligns it. */
	unsigned char b[32];
	size_t len = 3 * ptr + 8;
	sw_gdbjit_object *o;
	sw_status st;

	if ((st = swi_read(mem, entry, b, len)) != SW_OK)
		return st;
	if ((st = swi_array_grow((void **)&l->objects, &l->cap, l->count + 1, sizeof *l->objects)) != SW_OK)
		return st;
	o = &l->objects[l->count];
	memset(o, 0, sizeof *o);
	o->entry = entry;
	o->symfile_addr = swi_load_le(b + 2 * ptr, ptr);
	o->symfile_size = swi_load_le(b + 3 * ptr, 8);
	*next = swi_load_le(b, ptr);
	o->status = load_object(mem, arch, flags, o);
	if (o->status == SW_E_NOMEM)
		return SW_E_NOMEM;
	l->count++;
	return SW_OK;
}

static sw_status read_list(sw_gdbjit_list *l, const sw_memory *mem, sw_arch arch, uint64_t descriptor,
                           unsigned flags)
{
	unsigned ptr = sw_arch_pointer_size(arch);
	unsigned char d[24];
	uint64_t entry;
	sw_status st;

	if ((st = swi_read(mem, descriptor, d, 8 + 2 * ptr)) != SW_OK)
		return st;
	if (swi_load_le(d, 4) != 1)
		return SW_E_UNSUPPORTED;
	entry = swi_load_le(d + 8 + ptr, ptr);
	while (entry != 0) {
		bool fresh;

		if (l->count >= SW_GDBJIT_MAX_ENTRIES)
			return SW_E_LIMIT;
		if ((st = remember(l, entry, &fresh)) != SW_OK)
			return st;
		if (!fresh)
			return SW_E_BADMETA;
		if ((st = read_entry(l, mem, arch, flags, entry, &entry)) != SW_OK)
			return st;
	}
	return SW_OK;
}

/* A function symbol's interval, or a heap entry during the sweep; `object` orders priority. */
struct span {
	uint64_t first, last;
	size_t object;
};

static int by_first(const void *a, const void *b)
{
	const struct span *x = a, *y = b;

	return (x->first > y->first) - (x->first < y->first);
}

/* A min-heap of spans by object (the list's head first). */
static void heap_push(struct span *h, size_t *n, struct span v)
{
	size_t i = (*n)++;

	while (i > 0 && h[(i - 1) / 2].object > v.object) {
		h[i] = h[(i - 1) / 2];
		i = (i - 1) / 2;
	}
	h[i] = v;
}

static void heap_pop(struct span *h, size_t *n)
{
	struct span v = h[--*n];
	size_t i = 0;

	for (;;) {
		size_t c = 2 * i + 1;

		if (c >= *n)
			break;
		if (c + 1 < *n && h[c + 1].object < h[c].object)
			c++;
		if (h[c].object >= v.object)
			break;
		h[i] = h[c];
		i = c;
	}
	if (*n)
		h[i] = v;
}

/* Add [first, last] owned by `object` after the pieces so far, merged with the last when they touch. */
static void add_piece(sw_gdbjit_list *l, uint64_t first, uint64_t last, size_t object)
{
	struct piece *p = l->npieces ? &l->pieces[l->npieces - 1] : NULL;

	if (p && p->object == object && p->last + 1 == first)
		p->last = last;
	else
		l->pieces[l->npieces++] = (struct piece){ first, last, object };
}

/* Every object's function symbols as intervals (one that wraps past the top is two): *out, malloc'd. */
static sw_status collect_spans(const sw_gdbjit_list *l, struct span **out, size_t *count)
{
	struct span *v = NULL;
	size_t n = 0, cap = 0;
	sw_status st;

	for (size_t k = 0; k < l->count; k++) {
		uint64_t start, size;

		for (size_t i = 0; l->objects[k].module &&
		                   swi_module_symbol_span(l->objects[k].module, i, &start, &size); i++) {
			/* A symbol without a size names its first byte. */
			uint64_t last = start + (size ? size - 1 : 0);

			if ((st = swi_array_grow((void **)&v, &cap, n + 2, sizeof *v)) != SW_OK) {
				free(v);
				return st;
			}
			if (last < start) {
				v[n++] = (struct span){ start, UINT64_MAX, k };
				v[n++] = (struct span){ 0, last, k };
			} else {
				v[n++] = (struct span){ start, last, k };
			}
		}
	}
	*out = v;
	*count = n;
	return SW_OK;
}

/*
 * The pieces: a sweep over the intervals by address, the live ones in a
 * heap by priority.  Each step emits one piece, up to the end of the
 * winner's interval or the start of the next interval, whichever is first.
 */
static sw_status build_index(sw_gdbjit_list *l)
{
	struct span *v, *heap;
	size_t n, nheap = 0, next = 0;
	uint64_t at = 0;
	sw_status st;

	if ((st = collect_spans(l, &v, &n)) != SW_OK)
		return st;
	if (n == 0)
		return SW_OK;
	qsort(v, n, sizeof *v, by_first);
	heap = malloc(n * sizeof *heap);
	l->pieces = malloc((2 * n + 1) * sizeof *l->pieces);
	if (!heap || !l->pieces) {
		free(heap);
		free(v);
		return SW_E_NOMEM;
	}
	for (;;) {
		uint64_t last;

		if (nheap == 0) {
			if (next == n)
				break;
			at = v[next].first;
		}
		while (next < n && v[next].first <= at)
			heap_push(heap, &nheap, v[next++]);
		while (nheap && heap[0].last < at)
			heap_pop(heap, &nheap);
		if (nheap == 0)
			continue;
		last = heap[0].last;
		if (next < n && v[next].first - 1 < last)
			last = v[next].first - 1;
		add_piece(l, at, last, heap[0].object);
		if (last == UINT64_MAX)
			break;
		at = last + 1;
	}
	free(heap);
	free(v);
	return SW_OK;
}

SW_API sw_status sw_gdbjit_read(const sw_memory *mem, sw_arch arch, uint64_t descriptor,
                                unsigned flags, sw_gdbjit_list **out)
{
	sw_gdbjit_list *l;
	sw_status st;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!mem || descriptor == 0 || (sw_arch_pointer_size(arch) != 4 && sw_arch_pointer_size(arch) != 8))
		return SW_E_INVAL;
	if (!(l = calloc(1, sizeof *l)))
		return SW_E_NOMEM;
	st = read_list(l, mem, arch, descriptor, flags);
	/* A list cut short by the target keeps what came before; anything else is no list. */
	if (st != SW_OK && st != SW_E_BADADDR && st != SW_E_BADMETA && st != SW_E_LIMIT) {
		sw_gdbjit_list_free(l);
		return st;
	}
	free(l->seen);
	l->seen = NULL;
	l->seen_cap = 0;
	if (build_index(l) != SW_OK) {
		sw_gdbjit_list_free(l);
		return SW_E_NOMEM;
	}
	*out = l;
	return st;
}

SW_API sw_status sw_gdbjit_list_objects(const sw_gdbjit_list *l, const sw_gdbjit_object **objects,
                                        size_t *count)
{
	if (!l || !objects || !count)
		return SW_E_INVAL;
	*objects = l->objects;
	*count = l->count;
	return SW_OK;
}

SW_API sw_status sw_gdbjit_list_symbolize(const sw_gdbjit_list *l, uint64_t address, const char **name,
                                          uint64_t *offset)
{
	size_t lo;

	if (!l || !name)
		return SW_E_INVAL;
	/* The first piece past the address; the one before it may hold it. */
	SWI_SEARCH(lo, l->npieces, mid, l->pieces[mid].first <= address);
	if (lo == 0 || l->pieces[lo - 1].last < address)
		return SW_E_NOTFOUND;
	return sw_module_symbolize(l->objects[l->pieces[lo - 1].object].module, address, name, offset);
}

SW_API void sw_gdbjit_list_free(sw_gdbjit_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->count; i++)
		sw_module_free(l->objects[i].module);
	free(l->objects);
	free(l->pieces);
	free(l->seen);
	free(l);
}
