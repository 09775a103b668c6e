/*
 * frame_names.c - the names the tools print for a frame (frame_names.h).
 */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "frame_names.h"

static const char *chosen_name(const struct name_options *o, const char *raw, const char *demangled)
{
	return o->raw && raw ? raw : demangled;
}

size_t name_frames(sw_names *n, uint64_t pc, int exact, const struct name_options *o,
                   struct named_frame *out, size_t max)
{
	sw_name_frame sf[NAMED_FRAMES_MAX];
	uint64_t addr = exact || pc == 0 ? pc : pc - 1;
	sw_name nm;
	size_t count, first = 0;

	if (!n || max == 0 || sw_names_lookup(n, addr, &nm, sf, NAMED_FRAMES_MAX) != SW_OK)
		return 0;
	count = nm.frames < NAMED_FRAMES_MAX ? nm.frames : NAMED_FRAMES_MAX;
	if (count == 0) {
		/* A module without symbols or lines: the caller names it as it can. */
		return 0;
	}
	/* Without inlines, or with more than fit, the function holding the code is kept. */
	if (o->no_inlines)
		first = count - 1;
	else if (count > max)
		first = count - max;
	for (size_t i = first; i < count; i++) {
		struct named_frame *nf = &out[i - first];

		memset(nf, 0, sizeof *nf);
		nf->function = chosen_name(o, sf[i].raw, sf[i].function);
		nf->inlined = sf[i].inlined;
		if (!o->no_source) {
			nf->file = sf[i].file;
			nf->line = sf[i].line;
			nf->column = sf[i].column;
		}
	}
	count -= first;
	/* A deeper chain than NAMED_FRAMES_MAX ends in an inlined frame: name its code by the symbol. */
	if (out[count - 1].inlined && nm.symbol) {
		out[count - 1].function = chosen_name(o, nm.symbol, nm.symbol_demangled);
		out[count - 1].inlined = 0;
	}
	if (!out[count - 1].function && nm.symbol)
		out[count - 1].function = chosen_name(o, nm.symbol, nm.symbol_demangled);
	if (nm.symbol) {
		out[count - 1].offset = pc - nm.symbol_start;
		out[count - 1].has_offset = 1;
	}
	return count;
}

void print_function(FILE *f, const char *name, int has_offset, uint64_t offset)
{
	if (!name) {
		fputs("??", f);
		return;
	}
	print_escaped(f, name);
	if (has_offset)
		fprintf(f, "+0x%" PRIx64, offset);
}

void print_source(FILE *f, const char *file, unsigned line, unsigned column)
{
	if (!file)
		return;
	fputs(" at ", f);
	print_escaped(f, file);
	if (line)
		fprintf(f, ":%u", line);
	if (line && column)
		fprintf(f, ":%u", column);
}

void read_thread_name(int pid, int tid, char *buf, size_t len)
{
	char path[64];
	FILE *f;
	size_t n = 0;

	buf[0] = '\0';
	snprintf(path, sizeof path, "/proc/%d/task/%d/comm", pid, tid);
	if (!(f = fopen(path, "r")))
		return;
	if (fgets(buf, (int)len, f))
		n = strcspn(buf, "\n");
	buf[n] = '\0';
	fclose(f);
}
