/*
 * frame_names.h - what swstack and swdeadlock print for a frame's
 * address: the source-level frames sw_names finds there (each inlined
 * call, then the function), demangled or raw, with file:line, as the
 * options ask; and names read from the target printed with their control
 * characters escaped, so that a hostile file cannot drive the terminal.
 */
#ifndef FRAME_NAMES_H
#define FRAME_NAMES_H

#include <stdint.h>
#include <stdio.h>
#include <stackwalk.h>
#include "escape.h"             /* print_escaped */

#define NAMED_FRAMES_MAX 64     /* source-level frames kept per address */

/* What to print (each on by default; the tools' options turn it off). */
struct name_options {
	int raw;                /* names as the file has them, not demangled */
	int no_inlines;         /* no inlined frames: the function holding the code only */
	int no_source;          /* no file:line */
};

struct named_frame {
	const char *function;   /* NULL: unknown */
	uint64_t offset;        /* from the ELF symbol holding the address, when has_offset */
	int has_offset;
	const char *file;       /* NULL: unknown */
	unsigned line, column;
	int inlined;
};

/*
 * name_frames - the frames at `pc`, a return address unless `exact`
 * (named by the call, one byte back), innermost first: their count, at
 * most `max`; 0 when `n` knows no module there.  The last one is the
 * function that holds the code.
 */
size_t name_frames(sw_names *n, uint64_t pc, int exact, const struct name_options *o,
                   struct named_frame *out, size_t max);

/* print_function - "NAME+0xOFFSET" (the offset when has_offset), or "??" when NAME is NULL. */
void print_function(FILE *f, const char *name, int has_offset, uint64_t offset);

/* print_source - " at FILE:LINE[:COLUMN]" when the file is known (line, column 0: unknown). */
void print_source(FILE *f, const char *file, unsigned line, unsigned column);

/* read_thread_name - /proc/PID/task/TID/comm into buf (empty when unreadable). */
void read_thread_name(int pid, int tid, char *buf, size_t len);

#endif /* FRAME_NAMES_H */
