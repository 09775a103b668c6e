/*
 * perf_map.c - a perf map's functions, sorted for lookup (perf_map.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "perf_map.h"
#include "read_bounded.h"

/* How many entries before pc's are looked at for one written later that holds it. */
#define OVERLAP_SCAN 64

/* A hex number ("0x" allowed) ending in a blank; the text after it, or NULL. */
static char *parse_hex(char *s, uint64_t *v)
{
	char *end;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X'))
		s += 2;
	if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f') || (*s >= 'A' && *s <= 'F')))
		return NULL;
	errno = 0;
	*v = strtoull(s, &end, 16);
	if (errno || (*end != ' ' && *end != '\t'))
		return NULL;
	while (*end == ' ' || *end == '\t')
		end++;
	return end;
}

static int by_start_then_line(const void *a, const void *b)
{
	const struct perf_map_entry *x = a, *y = b;

	if (x->start != y->start)
		return x->start < y->start ? -1 : 1;
	return x->line < y->line ? -1 : x->line > y->line;
}

int perf_map_load(struct perf_map *pm, const char *path, const char **why)
{
	size_t len, cap = 0, line = 0;
	char *p, *end;

	memset(pm, 0, sizeof *pm);
	if (!(pm->text = (char *)read_bounded(path, &len, why)))
		return -1;
	pm->text[len] = '\0';           /* read_bounded leaves a byte for it */
	for (p = pm->text, end = pm->text + len; p < end; line++) {
		char *nl = memchr(p, '\n', (size_t)(end - p)), *name;
		struct perf_map_entry e;

		if (nl)
			*nl = '\0';
		e.line = line;
		if (!(name = parse_hex(p, &e.start)) || !(name = parse_hex(name, &e.size)) || !*name ||
		    e.size == 0 || e.start + e.size < e.start) {
			pm->skipped++;
		} else {
			if (pm->count == cap) {
				/* Doubling: the entries are bounded by the file, itself bounded. */
				size_t ncap = cap ? cap * 2 : 256;
				struct perf_map_entry *n = realloc(pm->entries, ncap * sizeof *n);

				if (!n) {
					*why = strerror(ENOMEM);
					perf_map_free(pm);
					return -1;
				}
				pm->entries = n;
				cap = ncap;
			}
			e.name = name;
			pm->entries[pm->count++] = e;
		}
		p = nl ? nl + 1 : end;
	}
	qsort(pm->entries, pm->count, sizeof *pm->entries, by_start_then_line);
	return 0;
}

const char *perf_map_name(const struct perf_map *pm, uint64_t pc, uint64_t *offset)
{
	const struct perf_map_entry *best = NULL;
	size_t lo = 0, hi = pm->count;

	/* The first entry starting above pc; those before it may hold it. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pm->entries[mid].start <= pc)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (size_t i = lo, seen = 0; i > 0 && seen < OVERLAP_SCAN; i--, seen++) {
		const struct perf_map_entry *e = &pm->entries[i - 1];

		if (pc - e->start < e->size && (!best || e->line > best->line))
			best = e;
	}
	if (!best)
		return NULL;
	*offset = pc - best->start;
	return best->name;
}

void perf_map_free(struct perf_map *pm)
{
	free(pm->entries);
	free(pm->text);
	memset(pm, 0, sizeof *pm);
}
