/*
 * escape.h - the one way the tools print a string read from their target
 * (a symbol, a module's path, a thread's name, a source file named by
 * DWARF): its control characters escaped, so that a hostile file cannot
 * drive the terminal, split a line of output in two or break a format
 * that other programs read.
 */
#ifndef ESCAPE_H
#define ESCAPE_H

#include <stdio.h>

/* print_escaped - `s` with bytes below 0x20 and 0x7f as \xNN. */
void print_escaped(FILE *f, const char *s);

#endif /* ESCAPE_H */
