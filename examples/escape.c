/*
 * escape.c - target strings printed with their control characters
 * escaped (escape.h).
 */
#include "escape.h"

void print_escaped(FILE *f, const char *s)
{
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c < 0x20 || c == 0x7f)
			fprintf(f, "\\x%02x", c);
		else
			putc(c, f);
	}
}
