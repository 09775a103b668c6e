/*
 * swprof_process.h - attach mode's view of the profiled process, read
 * without stopping it: its mappings (/proc/PID/maps), its modules loaded
 * lazily into prof.map and prof.modules, and the memory a sample's walk
 * reads (the stack the kernel copied, the modules' files).
 */
#ifndef SWPROF_PROCESS_H
#define SWPROF_PROCESS_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <stackwalk.h>

/* One line of /proc/PID/maps. */
typedef struct process_mapping {
	uint64_t start, end, offset;
	unsigned readable : 1, writable : 1, executable : 1;
	int fd;                 /* the file, opened on the first read; -1 until then or if none */
	char *path;             /* a file's path, "[stack]", "[vdso]", or "" (anonymous) */
} process_mapping;

typedef struct target_process {
	pid_t pid;
	sw_arch arch;
	process_mapping *maps;  /* by address */
	size_t nmaps;
	unsigned char *vdso;    /* the vDSO's bytes, read from the process once */
	uint64_t vdso_start, vdso_len;
	unsigned long rescans;  /* how often the maps were read again (new code or stacks) */
} target_process;

/*
 * process_open - read the maps of `pid`, load its modules (at most
 * MAX_MODULES) lazily into prof.map and prof.modules.  0, or -1 with a
 * message printed.
 */
int process_open(target_process *p, pid_t pid, int verbose);

/* process_rescan - read the maps again and load the modules mapped since. */
void process_rescan(target_process *p, int verbose);

/* process_mapping_at - the mapping that holds `addr`, or NULL. */
const process_mapping *process_mapping_at(const target_process *p, uint64_t addr);

void process_close(target_process *p);

/*
 * The memory one sample's walk reads: the copy of the stack the kernel
 * took above SP (the direct window), the bytes of the read-only file
 * mappings (code and its constants) from the files, and the vDSO.
 * Nothing else: the rest of the target's memory may have changed since
 * the sample, and a walk that needs it stops there.
 */
typedef struct sample_memory {
	sw_memory mem;
	target_process *p;
	uint64_t stack_hi;      /* the stack mapping's end */
	int past_copy;          /* a read fell on the stack above the copy */
} sample_memory;

void sample_memory_init(sample_memory *sm, target_process *p, const unsigned char *stack,
                        uint64_t sp, uint64_t len, uint64_t stack_hi);

#endif /* SWPROF_PROCESS_H */
