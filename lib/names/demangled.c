/*
 * demangled.c - each distinct name demangled once (demangled.h).
 *
 * libiberty's cplus_demangle with DMGL_AUTO recognises C++ (Itanium ABI,
 * "_Z"), Rust legacy ("_ZN...17h<hash>E", the hash dropped as gdb drops
 * it) and Rust v0 ("_R"); DMGL_PARAMS and DMGL_ANSI give the parameter
 * list and its qualifiers, as eu-stack and gdb print them.
 */
#include <config.h>

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <libiberty/demangle.h>
#include "demangled.h"

struct swi_demangled_slot {
	char *name;             /* the key, owned */
	char *demangled;        /* owned; == name when it was not mangled */
};

#define DEMANGLE_OPTIONS (DMGL_PARAMS | DMGL_ANSI | DMGL_AUTO)

static size_t hash_name(const char *s)
{
	uint64_t h = 1469598103934665603ull;    /* FNV-1a */

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 1099511628211ull;
	return (size_t)h;
}

static struct swi_demangled_slot *slot_for(struct swi_demangled_slot *slots, size_t cap,
                                           const char *name)
{
	size_t i = hash_name(name) & (cap - 1);

	while (slots[i].name && strcmp(slots[i].name, name) != 0)
		i = (i + 1) & (cap - 1);
	return &slots[i];
}

/* Keep the table at most half full, so that a probe ends soon. */
static int grow(struct swi_demangled *t)
{
	size_t cap = t->cap ? t->cap * 2 : 256;
	struct swi_demangled_slot *slots = calloc(cap, sizeof *slots);

	if (!slots)
		return -1;
	for (size_t i = 0; i < t->cap; i++)
		if (t->slots[i].name)
			*slot_for(slots, cap, t->slots[i].name) = t->slots[i];
	free(t->slots);
	t->slots = slots;
	t->cap = cap;
	return 0;
}

static char *demangle(const char *name)
{
	/* Only the prefixes of the manglings named above: anything else
	 * ("main", "__libc_start_main") is a plain name. */
	if (name[0] != '_' || (name[1] != 'Z' && name[1] != 'R'))
		return NULL;
	return cplus_demangle(name, DEMANGLE_OPTIONS);
}

const char *swi_demangled_get(struct swi_demangled *t, const char *name)
{
	struct swi_demangled_slot *s;

	if ((t->used + 1) * 2 > t->cap && grow(t) != 0)
		return NULL;
	s = slot_for(t->slots, t->cap, name);
	if (s->name)
		return s->demangled;
	if (!(s->name = strdup(name)))
		return NULL;
	if (!(s->demangled = demangle(name)))
		s->demangled = s->name;
	t->used++;
	return s->demangled;
}

void swi_demangled_free(struct swi_demangled *t)
{
	for (size_t i = 0; i < t->cap; i++) {
		if (t->slots[i].demangled != t->slots[i].name)
			free(t->slots[i].demangled);
		free(t->slots[i].name);
	}
	free(t->slots);
	memset(t, 0, sizeof *t);
}
