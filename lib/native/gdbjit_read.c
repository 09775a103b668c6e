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
 */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include "util.h"
#include "array_grow.h"
#include "jit_object.h"
#include <stackwalk/gdbjit.h>

#define READ_PIECE ((size_t)64 << 10)   /* an object is read this much at a time */

struct sw_gdbjit_list {
	sw_gdbjit_object *objects;
	size_t count, cap;
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

SW_API void sw_gdbjit_list_free(sw_gdbjit_list *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->count; i++)
		sw_module_free(l->objects[i].module);
	free(l->objects);
	free(l->seen);
	free(l);
}
