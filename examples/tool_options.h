/*
 * tool_options.h - the options every tool answers as GNU tools do:
 * --help prints the usage on standard output and --version the tool's
 * name and the library's version, each exiting 0.  They are looked for
 * before a tool's own parsing (getopt, or its own words), which then
 * need not know them.
 */
#ifndef TOOL_OPTIONS_H
#define TOOL_OPTIONS_H

#include <stdio.h>

/*
 * tool_standard_options - answer --help (with usage(stdout)) or --version
 * and exit, if an argument before any "--" is one of them.
 */
void tool_standard_options(int argc, char **argv, const char *progname, void (*usage)(FILE *));

#endif /* TOOL_OPTIONS_H */
