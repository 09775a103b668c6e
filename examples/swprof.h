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
#define MAX_DEPTH 128
#define BUFFER_WORDS (4u << 20)     /* prof.buf: raw samples, a header word, then IPs */

/*
 * The raw samples in prof.buf: a header word, the thread's kernel id, then
 * the frames' IPs, leaf first.  The header holds the depth, the CPU periods the sample stands
 * for, and why the walk stopped early (-SW_E_*) or 0.  A managed frame is
 * its method handle with MANAGED_TAG: no user-space address has that bit.
 */
#define HEADER(depth, ticks, status)                                            \
	((uint64_t)(depth) | (uint64_t)((ticks) < 0xffff ? (ticks) : 0xffff) << 16 | \
	 (uint64_t)(uint32_t)-(status) << 32)
#define HEADER_DEPTH(h) ((size_t)((h) & 0xffff))
#define HEADER_TICKS(h) ((unsigned long)(((h) >> 16) & 0xffff))
#define HEADER_STATUS(h) (-(sw_status)((h) >> 32))
#define SAMPLE_WORDS(h) (2 + HEADER_DEPTH(h))     /* a raw sample's words, header included */
#define SAMPLE_TID(s) ((pid_t)(s)[1])
#define SAMPLE_IPS(s) ((s) + 2)
#define MANAGED_TAG (UINT64_C(1) << 63)
/* A pseudo-frame where a walk stopped early: -SW_E_* in the low bits. */
#define STOPPED_TAG (UINT64_C(1) << 62)
/*
 * A native IP with a tag bit set is no user-space address (none reaches
 * bit 56 on any supported machine): garbage a frame-pointer walk read.
 * It is kept as this pseudo-frame, never mistaken for a tagged one.
 */
#define NOT_CODE_KEY (STOPPED_TAG | UINT64_C(0xffffffff))
#define NATIVE_KEY(ip) ((ip) & (MANAGED_TAG | STOPPED_TAG) ? NOT_CODE_KEY : (ip))

/* Native code a runtime generated and described (swprof_add_native_code), kept for its name. */
#define MAX_STUBS 1024
typedef struct runtime_stub {
	uint64_t start, size;
	char name[64];
} runtime_stub;

/*
 * A thread the samples came from, and its name as last read (the kernel's
 * comm: at most 15 bytes, the target's data).  swprof_threads.c.
 */
#define MAX_THREADS 8192        /* a power of two; three quarters of it are used */
#define THREAD_NAME_MAX 16
typedef struct thread_entry {
	pid_t tid;              /* 0: a free slot */
	uint8_t named;          /* name holds its name */
	uint8_t sampled;        /* sampled since its name was last read */
	uint8_t gone;           /* its name could not be read: it has ended */
	char name[THREAD_NAME_MAX];
} thread_entry;

/* A native module registered at start, and the addresses it was loaded at. */
typedef struct loaded_module {
	sw_module *m;
	char *path;
	uint64_t bias, lo, hi;
} loaded_module;

typedef struct profile {
	sw_registry *reg;
	sw_codemap *map;
	const sw_codemap *runtime_map;      /* a runtime's managed code (swprof_use_codemap) */
	const char *(*method_name)(void *method);
	/* Code in no module that a JIT described (attach mode's GDB JIT objects): its symbol, or NULL. */
	const char *(*jit_code_name)(uint64_t pc, uint64_t *offset);
	loaded_module modules[MAX_MODULES];
	unsigned nmodules;
	runtime_stub stubs[MAX_STUBS];      /* in the order added; read at exit */
	unsigned nstubs;                    /* under stubs_lock */
	pthread_mutex_t stubs_lock;
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
	int fold_threads;       /* SWPROF_THREADS, swprof --threads: folded lines start with the thread */
	thread_entry threads[MAX_THREADS];  /* by tid (hashed); the sampling thread's */
	unsigned nthreads;
	unsigned long thread_rounds;
	int threads_unread;     /* a thread was added (or sampled again once gone) since the last read */
} profile;

extern profile prof;

/* swprof.c */
void futex_wake_all(int *word);     /* set *word, wake its waiters */
int start_sampler(void);            /* 0 if the sampler thread could not start */
void stop_sampler(void);            /* no sample signal is sent after it returns */
void write_profile(void);           /* once per process (again after a failed exec) */

/*
 * One distinct frame: what it is (an address, MANAGED_TAG or STOPPED_TAG)
 * and the source-level frames at it: the calls inlined there, then the
 * function that holds the code (sw_names), or just one name.
 */
#define MAX_INLINED 16
typedef struct frame_entry {
	uint64_t key;           /* a caller's address is its return address less one */
	char *name;             /* the folded frames, root first: "function;inlined;..." */
	char *names[MAX_INLINED];   /* each folded-safe (no ';' or ' '), innermost first */
	uint32_t function[MAX_INLINED]; /* their indices into named_profile.functions */
	uint32_t nnames;        /* 1 or more */
	uint32_t module;        /* 1 + index into prof.modules, or 0 */
} frame_entry;

/* One distinct stack of raw samples. */
typedef struct profile_stack {
	size_t raw;             /* a sample of it in prof.buf */
	uint32_t *frames;       /* root first: indices into named_profile.frames */
	uint32_t depth;
	pid_t tid;              /* the thread it was sampled on */
	unsigned long samples, ticks;
} profile_stack;

/* The samples as the writers see them. */
typedef struct named_profile {
	frame_entry *frames;    /* by key */
	size_t nframes;
	const char **functions; /* the distinct names of every source-level frame, sorted */
	size_t nfunctions;
	profile_stack *stacks;
	size_t nstacks;
	uint32_t *frame_ids;    /* the stacks' frames */
	unsigned long ticks;    /* of all stacks */
	double naming_cpu_ms;   /* what building this cost */
} named_profile;

/* One sample's walk: its frames' IPs, leaf first (see the raw samples above). */
typedef struct walk_buf {
	uint64_t ip[MAX_DEPTH];
	unsigned n;
	int seed_only;          /* ip[0] is the initial native context */
	int native_until_unknown;   /* stop at the first native frame no module knows */
	int managed_only;       /* record managed frames only */
	sw_status stopped;      /* why the walk stopped before the outermost frame, or SW_OK */
	/* Where the outermost managed chain so far was called from native code. */
	sw_context native_caller;
	int has_native_caller;
	/* Where the native walk met code the modules do not know (managed, perhaps). */
	sw_context unknown_code;
	int has_unknown_code;
} walk_buf;

/* swprof_walk.c */
void walk_caches_init(void);    /* before the first walk_sample */
void walk_sample(const sw_sample *s, walk_buf *w);  /* may run while the target is stopped */
void record_sample(const walk_buf *w, unsigned ticks, pid_t tid);

/* swprof_threads.c: the sampled threads' names.  thread_sampled is signal-safe. */
void thread_sampled(pid_t tid);                 /* a sample of it was recorded */
void thread_named(pid_t tid, const char *name, size_t len);    /* its name is now this */
void read_thread_names(int all);    /* the target runs: read new threads' names (all: and renames) */
const char *thread_name(pid_t tid); /* its last name, or NULL if never read */
const thread_entry *thread_find(pid_t tid);     /* its entry in prof.threads, or NULL */
void forget_threads(void);          /* a forked child starts afresh */

/* swprof_deferred.c: samples walked again once the code they stopped in is imported */
int deferred_init(void);                    /* 0: out of memory (samples then stay stopped) */
int defer_sample(const sw_sample *s);       /* target stopped; 0: no room, record it as it is */
void walk_deferred(void);                   /* target running: import, walk, record */

/* swprof_names.c */
void folded_safe(char *name);           /* no ';', ' ' or control character */
int name_profile(named_profile *np);    /* 0: out of memory */
void free_named_profile(named_profile *np);

/* swprof_svg.c: an interactive flame graph of folded lines ("a;b;c" and a count each). */
int write_svg(const char *path, char **lines, size_t nlines, const unsigned long *counts,
              unsigned long total, const char *heading);

/* swprof_write.c: what write_profile_files wrote. */
typedef struct profile_written {
	size_t stacks, frames;      /* distinct folded stacks, distinct frames named */
	unsigned long ticks;        /* periods of all stacks */
	double naming_cpu_ms;
	int pprof;                  /* write_pprof's result, 0 if not asked for */
} profile_written;
/* An output name from a template: %p the pid (prof.pid), %% a percent sign. */
void output_name(const char *template, char *out, size_t size);
int write_profile_files(const char *folded, const char *svg, const char *pb, profile_written *w);

/* swprof_pprof.c: 1 if written, 0 with errno set; -1 if built without pprof support. */
int write_pprof(const char *path, const named_profile *np);

/* swprof_guard.c */
void die_of(int signo);
void guard_start(void);               /* the real functions found, SIGINT and SIGTERM hooked */
void fork_prepare(void);
void fork_parent(void);
void fork_child(void);
unsigned exec_generation_from_env(void);
void on_exit_status(int status, void *unused);
int find_own_text(struct dl_phdr_info *info, size_t size, void *data);
/* Whether `ip` is in the agent's own code: libswprof.so and the library linked into it. */
int agent_code(uint64_t ip);

#endif /* SWPROF_H */
