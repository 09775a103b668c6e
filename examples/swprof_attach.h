/*
 * swprof_attach.h - swprof -p: profile a running process with
 * perf_event_open, unwinding each sample's copy of the stack with
 * libstackwalk (swprof_attach.c).
 */
#ifndef SWPROF_ATTACH_H
#define SWPROF_ATTACH_H

#include <sys/types.h>

enum attach_format { FORMAT_ALL, FORMAT_FOLDED, FORMAT_PPROF, FORMAT_SVG };

typedef struct attach_options {
	pid_t pid;
	double seconds;             /* 0: until Ctrl-C, SIGTERM or the process's end */
	unsigned hz;                /* samples per second of a thread's CPU time */
	unsigned stack_bytes;       /* user stack copied with each sample */
	const char *out;            /* NULL: swprof.%p.<format> */
	enum attach_format format;
	int verbose;
	int threads;                /* --threads: folded stacks start with their thread */
} attach_options;

/* swprof_attach - profile o->pid, write the profile: the exit status (0, 1, or 2 for usage). */
int swprof_attach(const attach_options *o);

#endif /* SWPROF_ATTACH_H */
