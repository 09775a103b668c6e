/*
 * swprof.h - what the two halves of libswprof.so share: the profile of
 * this process (swprof.c samples and writes it) and the hooks that keep
 * the program unharmed (swprof_guard.c).  Internal to the agent.
 */
#ifndef SWPROF_H
#define SWPROF_H

#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include <stackwalk.h>

#define SWPROF_API __attribute__((visibility("default")))
#define MAX_MODULES 256

typedef struct profile {
	sw_registry *reg;
	sw_codemap *map;
	const sw_codemap *runtime_map;      /* a runtime's managed code (swprof_use_codemap) */
	const char *(*method_name)(void *method);
	sw_module *modules[MAX_MODULES];
	unsigned nmodules;
	uint64_t *buf;
	size_t used;
	unsigned long samples, dropped, failed, stopped, threads_seen;
	unsigned hz;
	int wall_clock;         /* SWPROF_CLOCK=wall: sample every thread, running or not */
	int signo;
	int started;            /* profiling was set up in this process */
	pid_t pid;              /* the process the samples belong to (not a vfork child) */
	unsigned exec_generation;   /* how many profiled images this pid ran before this one */
	int sampling;           /* the sampler thread runs */
	int stop;               /* atomic: the sampler thread is asked to end */
	int wake;               /* atomic, futex: wakes the sampler thread early */
	int ready;              /* atomic, futex: the sampler thread has started sampling */
	int fatal_signo;        /* atomic: SIGINT or SIGTERM arrived; the process is to die of it */
	pid_t fatal_tid;        /* the thread it arrived on */
	int written;            /* atomic: this process's profile is written */
	int write_failed;
	pthread_t thread;
} profile;

extern profile prof;

/* swprof.c */
void futex_wake_all(int *word);     /* set *word, wake its waiters */
int start_sampler(void);            /* 0 if the sampler thread could not start */
void stop_sampler(void);            /* no sample signal is sent after it returns */
void write_profile(void);           /* once per process (again after a failed exec) */

/* swprof_guard.c */
void die_of(int signo);
void guard_start(void);               /* the real functions found, SIGINT and SIGTERM hooked */
void fork_prepare(void);
void fork_parent(void);
void fork_child(void);
unsigned exec_generation_from_env(void);
void on_exit_status(int status, void *unused);
int find_own_text(struct dl_phdr_info *info, size_t size, void *data);

#endif /* SWPROF_H */
