/*
 * demangled.h - demangled names, each computed once and kept.
 *
 * libiberty's demangler returns a fresh string per call; a profile names
 * the same few thousand functions again and again, and callers want
 * strings that live as long as the symbolizer.  So each distinct name is
 * demangled once into a table that owns the result.
 */
#ifndef SW_NAMES_DEMANGLED_H
#define SW_NAMES_DEMANGLED_H

#include <stddef.h>

struct swi_demangled_slot;

struct swi_demangled {
	struct swi_demangled_slot *slots;       /* open addressing, a power of two */
	size_t cap, used;
};

/* `name` demangled (or `name`'s own copy when not mangled); NULL when out of memory. */
const char *swi_demangled_get(struct swi_demangled *t, const char *name);

void swi_demangled_free(struct swi_demangled *t);

#endif /* SW_NAMES_DEMANGLED_H */
