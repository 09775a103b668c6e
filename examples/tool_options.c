/*
 * tool_options.c - --help and --version for every tool (tool_options.h).
 */
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "tool_options.h"

void tool_standard_options(int argc, char **argv, const char *progname, void (*usage)(FILE *))
{
	for (int i = 1; i < argc && strcmp(argv[i], "--") != 0; i++) {
		if (strcmp(argv[i], "--help") == 0) {
			usage(stdout);
			exit(0);
		}
		if (strcmp(argv[i], "--version") == 0) {
			printf("%s (libstackwalk) %d.%d.%d\n", progname, SW_VERSION_MAJOR,
			       SW_VERSION_MINOR, SW_VERSION_PATCH);
			exit(0);
		}
	}
}
