/*
 * ptrace.c - another live process as a walk target.  Host-only: Linux
 * ptrace, /proc and process_vm_readv, for processes of the host's own
 * architecture (and i386 ones on an x86-64 host, whose registers the
 * kernel hands out in the 32-bit layout).
 *
 * Attaching stops every thread and snapshots what a walk needs besides
 * memory: registers and mappings.  Memory is read live (the threads are
 * stopped, so it holds still); each read is one system call.
 */
#define _GNU_SOURCE
#include "config.h"
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include "util.h"
#include "array_grow.h"
#include "core_notes.h"
#include "stopped_target.h"
#include "thread_state.h"

#if defined(__linux__)
#include <dirent.h>
#include <elf.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <sys/ptrace.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#endif

#if defined(__linux__) && defined(PTRACE_SEIZE) && defined(PTRACE_GETREGSET)
#define HAVE_SW_PTRACE 1
#endif

/* Hard limits: threads of one process, rounds of looking for new threads, maps bytes. */
#define PROC_MAX_THREADS   (1u << 16)
#define PROC_ATTACH_ROUNDS 64
#define PROC_MAPS_MAX      (64u << 20)
/*
 * Polls of a seized, interrupted thread that has not stopped, before it is
 * left running and reported: the first few yield, the rest are 1 ms apart.
 * A thread that waits for a vfork child is left at once; one running or
 * in an interruptible sleep stops at its next return to user mode, long
 * before this; one in an uninterruptible sleep (D: a hung NFS read) may not.
 */
#define PROC_STOP_POLLS    2000
#define PROC_STOP_YIELDS   16

struct proc_map {
	sw_mapped_file m;       /* m.path is NULL for anonymous mappings */
};

/* A thread left running; `seized` if it was seized before it could not stop. */
struct proc_unstopped {
	struct swi_thread_state ts;
	int seized;
};

struct sw_process {
	sw_memory mem;          /* ctx is the process */
	int pid;
	sw_arch arch;
	int mem_fd;             /* /proc/PID/mem, the fallback reader; -1 if none */
	int seize_errno;        /* why the first thread that refused did */
	int *refused;           /* threads that refused to be seized (exiting) */
	size_t nrefused;
	struct proc_unstopped *unstopped;       /* threads left running: sw_process_unstopped */
	size_t nunstopped, unstopped_cap;
	struct swi_thread_regs *threads;
	size_t nthreads, threads_cap;
	struct proc_map *maps;  /* every mapping, by address */
	size_t nmaps;
	size_t *modules;        /* indexes of the file-backed ones */
	size_t nmodules;
	char *maps_text;        /* /proc/PID/maps, which the paths point into */
};

#ifdef HAVE_SW_PTRACE

static sw_status process_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const sw_process *p = ctx;
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n;

	if (addr > UINTPTR_MAX || len > (size_t)SSIZE_MAX || addr + len < addr)
		return SW_E_BADADDR;
	n = process_vm_readv(p->pid, &local, 1, &remote, 1, 0);
	if (n == (ssize_t)len)
		return SW_OK;
	/* Kernels without it, or a policy that forbids it: the mem file. */
	if (p->mem_fd >= 0 && addr <= (uint64_t)INT64_MAX - len &&
	    pread(p->mem_fd, buf, len, (off_t)addr) == (ssize_t)len)
		return SW_OK;
	return SW_E_BADADDR;
}

/* ---- threads ------------------------------------------------------------ */

static int known_tid(const sw_process *p, int tid)
{
	for (size_t i = 0; i < p->nthreads; i++)
		if (p->threads[i].tid == tid)
			return 1;
	for (size_t i = 0; i < p->nrefused; i++)
		if (p->refused[i] == tid)
			return 1;
	for (size_t i = 0; i < p->nunstopped; i++)
		if (p->unstopped[i].ts.tid == tid)
			return 1;
	return 0;
}

/* Report thread ts as left running; `seized`: it is traced, and detach looks at it again. */
static sw_status add_unstopped(sw_process *p, const struct swi_thread_state *ts, int seized)
{
	if (p->nunstopped >= PROC_MAX_THREADS)
		return SW_E_LIMIT;
	if (swi_array_grow((void **)&p->unstopped, &p->unstopped_cap, p->nunstopped + 1,
	                   sizeof *p->unstopped) != SW_OK)
		return SW_E_NOMEM;
	p->unstopped[p->nunstopped].ts = *ts;
	p->unstopped[p->nunstopped++].seized = seized;
	return SW_OK;
}

/*
 * A thread waiting for its vfork child cannot stop until the child execs
 * or exits, which may be never: waiting for it would hold every thread
 * already stopped as long.  It is left alone, before PTRACE_SEIZE (a
 * seized thread can be let go only once stopped), and reported.  *left
 * says whether it was.  A thread that enters vfork() between this look
 * and its interrupt is caught by wait_stopped.
 */
static sw_status leave_if_unstoppable(sw_process *p, int tid, int *left)
{
	struct swi_thread_state ts;

	swi_thread_state_read_one(p->pid, tid, &ts);
	*left = swi_thread_waits_for_vfork(&ts);
	return *left ? add_unstopped(p, &ts, 0) : SW_OK;
}

/* The status of a stop or an end of `tid` if there is one (1), 0 if none yet, -1 if it is gone. */
static int poll_thread(int tid, int *status)
{
	pid_t r;

	while ((r = waitpid(tid, status, __WALL | WNOHANG)) < 0 && errno == EINTR)
		;
	return r < 0 ? -1 : r > 0;
}

/* The signal a stop reported by `status` holds for the thread: none for the interrupt's stop. */
static int stop_signal(int status)
{
	return (status >> 16) == PTRACE_EVENT_STOP ? 0 : WSTOPSIG(status);
}

static void pause_between_polls(unsigned poll)
{
	struct timespec ms = { 0, 1000000L };

	if (poll < PROC_STOP_YIELDS)
		sched_yield();
	else
		nanosleep(&ms, NULL);
}

/*
 * Wait until `tid`, seized and interrupted, stops.  Returns 1 when it is
 * stopped, 0 when it has gone, -1 when it cannot stop now: it entered
 * vfork() after leave_if_unstoppable looked (its state read between polls
 * says so), or it did not stop within PROC_STOP_POLLS polls; *ts then
 * holds its state.  Never a wait without bound: the threads already
 * stopped would be held as long.  A signal that stops it first is kept,
 * to be handed back at detach; the interrupt then stays pending and is
 * dropped at detach.
 */
static int wait_stopped(int pid, struct swi_thread_regs *t, struct swi_thread_state *ts)
{
	for (unsigned poll = 0;; poll++) {
		int status, r = poll_thread(t->tid, &status);

		if (r < 0)
			return 0;
		if (r > 0 && (WIFEXITED(status) || WIFSIGNALED(status)))
			return 0;
		if (r > 0 && WIFSTOPPED(status)) {
			t->pending_signal = stop_signal(status);
			return 1;
		}
		if (r > 0)
			continue;
		swi_thread_state_read_one(pid, t->tid, ts);
		if (swi_thread_waits_for_vfork(ts) || poll >= PROC_STOP_POLLS)
			return -1;
		pause_between_polls(poll);
	}
}

static sw_status seize_thread(sw_process *p, int tid)
{
	struct swi_thread_state ts;
	struct swi_thread_regs *t;
	sw_status st = swi_thread_regs_reserve(&p->threads, p->nthreads, &p->threads_cap,
	                                       PROC_MAX_THREADS);

	if (st != SW_OK)
		return st;
	/*
	 * A thread that refuses is exiting (EPERM) or gone (ESRCH): nothing to
	 * stop.  If all refuse, we may not trace the process: the first
	 * refusal's errno says why.
	 */
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0) {
		int *r;

		if (!p->seize_errno)
			p->seize_errno = errno;
		/* Remembered, so that it counts as new once, not in every pass. */
		if (p->nrefused >= PROC_MAX_THREADS)
			return SW_E_LIMIT;
		r = realloc(p->refused, (p->nrefused + 1) * sizeof *r);
		if (!r)
			return SW_E_NOMEM;
		p->refused = r;
		p->refused[p->nrefused++] = tid;
		return SW_OK;
	}
	t = &p->threads[p->nthreads];
	memset(t, 0, sizeof *t);
	t->tid = tid;
	if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0)
		return SW_OK;   /* it exited meanwhile: nothing to detach */
	switch (wait_stopped(p->pid, t, &ts)) {
	case 1:
		p->nthreads++;
		return SW_OK;
	case 0:
		return SW_OK;   /* it exited meanwhile: nothing to detach */
	default:
		return add_unstopped(p, &ts, 1);
	}
}

/* One pass over /proc/PID/task; *added counts the threads new to us. */
static sw_status seize_new_threads(sw_process *p, size_t *added)
{
	char dir[64];
	struct dirent *e;
	sw_status st = SW_OK;
	DIR *d;
	int left;

	snprintf(dir, sizeof dir, "/proc/%d/task", p->pid);
	d = opendir(dir);
	if (!d)
		return SW_E_BADADDR;
	*added = 0;
	while (st == SW_OK && (e = readdir(d)) != NULL) {
		char *end;
		long tid = strtol(e->d_name, &end, 10);

		if (*end != '\0' || tid <= 0 || tid > INT32_MAX || known_tid(p, (int)tid))
			continue;
		st = leave_if_unstoppable(p, (int)tid, &left);
		if (st == SW_OK && !left)
			st = seize_thread(p, (int)tid);
		/* A thread that came and went is counted; it makes us look again. */
		(*added)++;
	}
	closedir(d);
	return st;
}

/* Threads may start while we attach: look until a pass finds none new. */
static sw_status seize_all(sw_process *p)
{
	for (unsigned round = 0; round < PROC_ATTACH_ROUNDS; round++) {
		size_t added;
		sw_status st = seize_new_threads(p, &added);

		if (st != SW_OK)
			return st;
		if (added == 0 && p->nthreads == 0) {
			errno = p->seize_errno ? p->seize_errno : ESRCH;
			return SW_E_BADADDR;
		}
		if (added == 0)
			return SW_OK;
	}
	return SW_E_LIMIT;
}

/* Which layout the kernel handed out: the host's, or i386 on an x86-64 host. */
static sw_arch arch_of_regs(size_t len)
{
	if (len == swi_user_regs_size(sw_arch_host()))
		return sw_arch_host();
#if defined(__x86_64__)
	if (len == swi_user_regs_size(SW_ARCH_X86))
		return SW_ARCH_X86;
#endif
	return SW_ARCH_NONE;
}

static sw_status read_registers(sw_process *p, struct swi_thread_regs *t)
{
	unsigned char regs[1024], fp[1024];
	struct iovec iov = { regs, sizeof regs };
	sw_arch arch;
	sw_status st;

	if (ptrace(PTRACE_GETREGSET, t->tid, (void *)(uintptr_t)NT_PRSTATUS, &iov) != 0)
		return SW_E_BADADDR;
	arch = arch_of_regs(iov.iov_len);
	if (arch == SW_ARCH_NONE || (p->arch != SW_ARCH_NONE && arch != p->arch))
		return SW_E_UNSUPPORTED;
	p->arch = arch;
	st = swi_user_regs_decode(arch, regs, iov.iov_len, &t->ctx);
	if (st != SW_OK)
		return st;
	/* AArch64 d8-d15 (callee-saved); optional. */
	iov.iov_base = fp;
	iov.iov_len = sizeof fp;
	if (arch == SW_ARCH_ARM64 &&
	    ptrace(PTRACE_GETREGSET, t->tid, (void *)(uintptr_t)NT_PRFPREG, &iov) == 0)
		swi_prfpreg_decode(arch, fp, iov.iov_len, &t->ctx);
	return SW_OK;
}

/* ---- mappings ----------------------------------------------------------- */

static sw_status slurp(const char *path, char **text, size_t *len)
{
	size_t cap = 1 << 16, n = 0;
	char *buf = malloc(cap);
	int fd;

	if (!buf)
		return SW_E_NOMEM;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		free(buf);
		return SW_E_BADADDR;
	}
	for (;;) {
		ssize_t r;

		if (cap - n < 4096) {
			char *b = cap >= PROC_MAPS_MAX ? NULL : realloc(buf, 2 * cap);

			if (!b) {
				free(buf);
				close(fd);
				return cap >= PROC_MAPS_MAX ? SW_E_LIMIT : SW_E_NOMEM;
			}
			buf = b;
			cap *= 2;
		}
		r = read(fd, buf + n, cap - n - 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	close(fd);
	buf[n] = '\0';
	*text = buf;
	*len = n;
	return SW_OK;
}

/* "start-end perms offset dev inode   path" */
static int parse_map_line(char *line, struct proc_map *m)
{
	unsigned long long start, end, offset;
	char perms[8];
	int path_at = 0;

	memset(m, 0, sizeof *m);
	if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
	           &path_at) < 4 || start >= end)
		return 0;
	m->m.start = start;
	m->m.end = end;
	m->m.offset = offset;
	m->m.prot = (perms[0] == 'r' ? SW_PROT_READ : 0) |
	            (perms[1] == 'w' ? SW_PROT_WRITE : 0) |
	            (perms[2] == 'x' ? SW_PROT_EXEC : 0);
	if (path_at > 0 && line[path_at] == '/')
		m->m.path = line + path_at;
	return 1;
}

static sw_status read_maps(sw_process *p)
{
	char path[64], *line;
	size_t len, lines = 0;
	sw_status st;

	snprintf(path, sizeof path, "/proc/%d/maps", p->pid);
	st = slurp(path, &p->maps_text, &len);
	if (st != SW_OK)
		return st;
	for (size_t i = 0; i < len; i++)
		lines += p->maps_text[i] == '\n';
	p->maps = calloc(lines + 1, sizeof *p->maps);
	p->modules = calloc(lines + 1, sizeof *p->modules);
	if (!p->maps || !p->modules)
		return SW_E_NOMEM;
	line = p->maps_text;
	while (*line) {
		char *nl = strchr(line, '\n');

		if (nl)
			*nl = '\0';
		if (p->nmaps < lines + 1 && parse_map_line(line, &p->maps[p->nmaps])) {
			if (p->maps[p->nmaps].m.path)
				p->modules[p->nmodules++] = p->nmaps;
			p->nmaps++;
		}
		if (!nl)
			break;
		line = nl + 1;
	}
	return SW_OK;
}

/* ---- the API ------------------------------------------------------------ */

static sw_status attach(sw_process *p)
{
	char path[64];
	sw_status st = seize_all(p);

	for (size_t i = 0; st == SW_OK && i < p->nthreads; i++)
		st = read_registers(p, &p->threads[i]);
	if (st != SW_OK)
		return st;
	/* The group leader first, when it is alive. */
	for (size_t i = 1; i < p->nthreads; i++)
		if (p->threads[i].tid == p->pid) {
			struct swi_thread_regs tmp = p->threads[0];

			p->threads[0] = p->threads[i];
			p->threads[i] = tmp;
		}
	st = read_maps(p);
	if (st != SW_OK)
		return st;
	snprintf(path, sizeof path, "/proc/%d/mem", p->pid);
	p->mem_fd = open(path, O_RDONLY | O_CLOEXEC);
	p->mem.read = process_read;
	p->mem.ctx = p;
	return SW_OK;
}

SW_API sw_status sw_process_attach(int pid, sw_process **proc)
{
	sw_process *p;
	sw_status st;

	if (!proc)
		return SW_E_INVAL;
	*proc = NULL;
	if (pid <= 0 || pid == getpid())
		return SW_E_INVAL;
	p = calloc(1, sizeof *p);
	if (!p)
		return SW_E_NOMEM;
	p->pid = pid;
	p->mem_fd = -1;
	st = attach(p);
	if (st != SW_OK) {
		int saved = errno;

		sw_process_detach(p);
		errno = saved;
		return st;
	}
	*proc = p;
	return SW_OK;
}

SW_API sw_status sw_process_detach(sw_process *p)
{
	sw_status st = SW_OK;

	if (!p)
		return SW_OK;
	for (size_t i = 0; i < p->nthreads; i++) {
		struct swi_thread_regs *t = &p->threads[i];

		if (ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(uintptr_t)t->pending_signal) != 0 &&
		    errno != ESRCH)
			st = SW_E_BADADDR;
	}
	/*
	 * A seized thread that could not stop can be let go only once it has
	 * (its vfork child gone); otherwise it stays traced by this thread
	 * until this thread exits, and the kernel then drops its pending stop.
	 */
	for (size_t i = 0; i < p->nunstopped; i++) {
		int tid = p->unstopped[i].ts.tid, status;

		if (p->unstopped[i].seized && poll_thread(tid, &status) > 0 && WIFSTOPPED(status))
			ptrace(PTRACE_DETACH, tid, NULL, (void *)(uintptr_t)stop_signal(status));
	}
	if (p->mem_fd >= 0)
		close(p->mem_fd);
	free(p->threads);
	free(p->refused);
	free(p->unstopped);
	free(p->maps);
	free(p->modules);
	free(p->maps_text);
	free(p);
	return st;
}

#else /* !HAVE_SW_PTRACE */

SW_API sw_status sw_process_attach(int pid, sw_process **proc)
{
	SWI_UNUSED(pid);
	if (proc)
		*proc = NULL;
	return SW_E_UNSUPPORTED;
}

SW_API sw_status sw_process_detach(sw_process *p)
{
	SWI_UNUSED(p);
	return SW_OK;
}

#endif /* HAVE_SW_PTRACE */

SW_API sw_arch sw_process_arch(const sw_process *p)
{
	return p ? p->arch : SW_ARCH_NONE;
}

SW_API unsigned sw_process_thread_count(const sw_process *p)
{
	return p ? (unsigned)p->nthreads : 0;
}

SW_API unsigned sw_process_unstopped_count(const sw_process *p)
{
	return p ? (unsigned)p->nunstopped : 0;
}

SW_API sw_status sw_process_unstopped(const sw_process *p, unsigned index, int *tid, char *state)
{
	if (!p || index >= p->nunstopped)
		return SW_E_INVAL;
	if (tid)
		*tid = p->unstopped[index].ts.tid;
	if (state)
		*state = p->unstopped[index].ts.state;
	return SW_OK;
}

SW_API sw_status sw_process_thread(const sw_process *p, unsigned index, sw_context *ctx, int *tid)
{
	return p ? swi_thread_regs_get(p->threads, p->nthreads, index, ctx, tid) : SW_E_INVAL;
}

SW_API const sw_memory *sw_process_memory(const sw_process *p)
{
	return p ? &p->mem : NULL;
}

SW_API unsigned sw_process_module_count(const sw_process *p)
{
	return p ? (unsigned)p->nmodules : 0;
}

SW_API sw_status sw_process_module(const sw_process *p, unsigned index, sw_mapped_file *file)
{
	if (!p || !file || index >= p->nmodules)
		return SW_E_INVAL;
	*file = p->maps[p->modules[index]].m;
	return SW_OK;
}

SW_API sw_status sw_process_stack_bounds(const sw_process *p, uint64_t sp, uint64_t *lo,
                                         uint64_t *hi)
{
	const sw_mapped_file *m;

	if (!p || !lo || !hi)
		return SW_E_INVAL;
	/* /proc/PID/maps lists mappings by address. */
	m = swi_mapping_find(p->maps, p->nmaps, sizeof *p->maps, sp);
	if (!m)
		return SW_E_BADADDR;
	*lo = m->start;
	*hi = m->end;
	return SW_OK;
}
