/*
 * swprof_attach.c - swprof -p PID: profile a running process without
 * stopping or touching it, the way perf record --call-graph dwarf does,
 * with this library's unwinder.
 *
 * The kernel samples every thread of the process on its CPU clock
 * (perf_event_open, software cpu-clock event, one event per thread and
 * CPU, inherited by the threads they create): at each sample it copies the
 * thread's user registers (PERF_SAMPLE_REGS_USER) and the top of its user
 * stack (PERF_SAMPLE_STACK_USER) into a ring buffer per CPU.  swprof
 * reads the rings and walks each copy with walk_sample, over memory that
 * is the copy and the modules' files (swprof_process.c); a walk that
 * needs a byte above the copy stops there and says so under a
 * "[stopped: ...]" frame, like any early stop.  The target is never
 * stopped, traced or written: sampling needs no ptrace.
 *
 * The samples then go through the agent's writers (swprof_write.c), named
 * as the agent names them (swprof_names.c).
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <linux/perf_event.h>
#include <asm/perf_regs.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <stackwalk.h>
#include "escape.h"
#include "swprof.h"
#include "swprof_attach.h"
#include "swprof_jit.h"
#include "swprof_process.h"

profile prof;

/* Attach mode runs no agent: no frame is the agent's own. */
int agent_code(uint64_t ip)
{
	(void)ip;
	return 0;
}

/*
 * The user registers each sample copies, in the kernel's numbering
 * (asm/perf_regs.h), and the library's number for each: the general
 * registers and the IP, all a CFI rule may name.
 */
#if defined(__x86_64__)
static const struct { unsigned perf, sw; } sampled_regs[] = {
	{ PERF_REG_X86_AX, SW_X64_RAX }, { PERF_REG_X86_BX, SW_X64_RBX },
	{ PERF_REG_X86_CX, SW_X64_RCX }, { PERF_REG_X86_DX, SW_X64_RDX },
	{ PERF_REG_X86_SI, SW_X64_RSI }, { PERF_REG_X86_DI, SW_X64_RDI },
	{ PERF_REG_X86_BP, SW_X64_RBP }, { PERF_REG_X86_SP, SW_X64_RSP },
	{ PERF_REG_X86_IP, SW_X64_RIP }, { PERF_REG_X86_R8, SW_X64_R8 },
	{ PERF_REG_X86_R9, SW_X64_R9 }, { PERF_REG_X86_R10, SW_X64_R10 },
	{ PERF_REG_X86_R11, SW_X64_R11 }, { PERF_REG_X86_R12, SW_X64_R12 },
	{ PERF_REG_X86_R13, SW_X64_R13 }, { PERF_REG_X86_R14, SW_X64_R14 },
	{ PERF_REG_X86_R15, SW_X64_R15 },
};
#define SAMPLED_SP SW_X64_RSP
#elif defined(__aarch64__)
/* arm64's perf numbering is the library's: x0-x30, sp, pc. */
static const struct { unsigned perf, sw; } sampled_regs[] = {
#define R(n) { n, n }
	R(0), R(1), R(2), R(3), R(4), R(5), R(6), R(7), R(8), R(9), R(10), R(11), R(12), R(13),
	R(14), R(15), R(16), R(17), R(18), R(19), R(20), R(21), R(22), R(23), R(24), R(25),
	R(26), R(27), R(28), R(29), R(30), R(31), R(32),
#undef R
};
#define SAMPLED_SP SW_ARM64_SP
#else
#define NO_ATTACH_MODE
#endif

#ifdef NO_ATTACH_MODE
int swprof_attach(const attach_options *o)
{
	(void)o;
	fprintf(stderr, "swprof: -p is supported on x86-64 and arm64 Linux only\n");
	return 1;
}
#else
#define NREGS (sizeof sampled_regs / sizeof sampled_regs[0])

/* The bytes of a ring's data area, in pages: a few dozen samples of the largest stack copy. */
#define RING_PAGES_MAX 1024
#define RING_PAGES_MIN 8
#define POLL_MS 100

typedef struct ring {
	struct perf_event_mmap_page *meta;
	unsigned char *data;
	uint64_t size;              /* of data: a power of two */
	size_t mapped;
} ring;

typedef struct attach_state {
	const attach_options *o;
	target_process proc;
	int *fds;
	size_t nfds, cap;
	ring *rings;                /* one per CPU (the CPU's first event) */
	int *ring_fd;
	unsigned ncpus, *cpus;
	int exclude_kernel;
	unsigned long lost, past_copy, no_regs, kernel_samples, events;
	double walk_cpu_s;          /* CPU time of the samples' walks (and the maps reread for them) */
	int rescan;                 /* code was mapped: read the maps before the next sample */
	int rescanned;              /* the maps were read again this round */
	int jit_refreshed;          /* the published JIT code was read again this round */
	pid_t *tids;                /* threads sampled, sorted */
	size_t ntids, tids_cap;
	unsigned char *record;      /* one record, put together where it wraps */
} attach_state;

static volatile sig_atomic_t stop_signal;

static void on_stop_signal(int signo)
{
	stop_signal = signo;
}

static long perf_event_open(struct perf_event_attr *attr, pid_t pid, int cpu)
{
	return syscall(SYS_perf_event_open, attr, pid, cpu, -1, PERF_FLAG_FD_CLOEXEC);
}

/* The online CPUs (/sys/devices/system/cpu/online: "0-3,5"). */
static int online_cpus(attach_state *a)
{
	long n = sysconf(_SC_NPROCESSORS_CONF);
	unsigned lo, hi;
	char sep = ',';
	FILE *f;

	if (n < 1)
		n = 1;
	if (!(a->cpus = calloc((size_t)n, sizeof *a->cpus)))
		return -1;
	f = fopen("/sys/devices/system/cpu/online", "re");
	while (f && sep == ',' && fscanf(f, "%u", &lo) == 1) {
		hi = lo;
		if (fscanf(f, "%c", &sep) == 1 && sep == '-' && (fscanf(f, "%u", &hi) != 1 ||
		                                                 fscanf(f, "%c", &sep) != 1))
			sep = 0;
		for (unsigned c = lo; c <= hi && a->ncpus < (unsigned)n; c++)
			a->cpus[a->ncpus++] = c;
	}
	if (f)
		fclose(f);
	for (; a->ncpus == 0 && a->ncpus < (unsigned)n; a->ncpus++)
		a->cpus[a->ncpus] = a->ncpus;
	return 0;
}

static void event_attr(const attach_state *a, struct perf_event_attr *attr)
{
	memset(attr, 0, sizeof *attr);
	attr->size = sizeof *attr;
	attr->type = PERF_TYPE_SOFTWARE;
	attr->config = PERF_COUNT_SW_CPU_CLOCK;
	attr->sample_period = 1000000000ull / a->o->hz;     /* ns of the thread's CPU time */
	attr->sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_REGS_USER |
	                    PERF_SAMPLE_STACK_USER;
	for (size_t i = 0; i < NREGS; i++)
		attr->sample_regs_user |= 1ull << sampled_regs[i].perf;
	attr->sample_stack_user = a->o->stack_bytes;
	attr->disabled = 1;
	attr->inherit = 1;          /* threads the sampled ones create are sampled too */
	attr->exclude_kernel = (unsigned)a->exclude_kernel;
	attr->exclude_hv = 1;
	attr->mmap = 1;             /* code mapped later (dlopen) */
	attr->comm = 1;             /* threads renamed (pthread_setname_np), images exec'd */
	attr->watermark = 1;
	attr->wakeup_watermark = 64u << 10;
}

/* A sysctl's number (/proc/sys/...), or -99 where there is none. */
static int sysctl_level(const char *path)
{
	FILE *f = fopen(path, "re");
	int level = -99;

	if (f) {
		if (fscanf(f, "%d", &level) != 1)
			level = -99;
		fclose(f);
	}
	return level;
}

/*
 * Why the kernel refused, as far as its settings say.  Above 2 the
 * paranoid level lets no one but root (or CAP_PERFMON) sample; at 2 or
 * below a user samples the processes it may trace: its own, as
 * kernel.yama.ptrace_scope allows.
 */
static void not_permitted(pid_t pid, int err)
{
	int level = sysctl_level("/proc/sys/kernel/perf_event_paranoid");
	int scope = sysctl_level("/proc/sys/kernel/yama/ptrace_scope");

	fprintf(stderr, "swprof: sampling process %ld with perf_event_open is not permitted (%s).\n",
	        (long)pid, strerror(err));
	if (level > 2) {
		fprintf(stderr, "swprof: kernel.perf_event_paranoid is %d: only root (or CAP_PERFMON) may "
		        "sample.  To let users sample their own processes, as root:\n"
		        "    sysctl -w kernel.perf_event_paranoid=2\n", level);
		return;
	}
	fprintf(stderr, "swprof: a user may sample only the processes it may trace: its own");
	if (scope != -99)
		fprintf(stderr, " (kernel.yama.ptrace_scope is %d; 0 or 1 allow it)", scope);
	fprintf(stderr, ", or any with CAP_SYS_PTRACE and CAP_PERFMON, as root has.\n"
	        "swprof: run swprof as the process's user or as root; kernel.perf_event_paranoid is %d, "
	        "and must stay 2 or below (as root: sysctl -w kernel.perf_event_paranoid=2).\n", level);
}

static int add_fd(attach_state *a, int fd)
{
	if (a->nfds == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 64;
		int *grown = realloc(a->fds, cap * sizeof *grown);

		if (!grown)
			return -1;
		a->fds = grown;
		a->cap = cap;
	}
	a->fds[a->nfds++] = fd;
	return 0;
}

/* The ring of CPU slot `c`, mapped on its first event. */
static int map_ring(attach_state *a, unsigned c, int fd)
{
	long page = sysconf(_SC_PAGESIZE);
	unsigned pages = RING_PAGES_MAX;
	void *p = MAP_FAILED;

	/* A user's locked memory for perf is limited (perf_event_mlock_kb): fewer pages then. */
	for (; pages >= RING_PAGES_MIN && p == MAP_FAILED; pages /= 2)
		p = mmap(NULL, (size_t)(pages + 1) * (size_t)page, PROT_READ | PROT_WRITE, MAP_SHARED,
		         fd, 0);
	if (p == MAP_FAILED)
		return -1;
	pages *= 2;
	a->rings[c].meta = p;
	a->rings[c].data = (unsigned char *)p + page;
	a->rings[c].size = (uint64_t)pages * (uint64_t)page;
	a->rings[c].mapped = (size_t)(pages + 1) * (size_t)page;
	a->ring_fd[c] = fd;
	return 0;
}

/* Events on thread `tid`, one per CPU: 0, or the errno of the first that could not open. */
static int open_thread(attach_state *a, pid_t tid)
{
	struct perf_event_attr attr;

	event_attr(a, &attr);
	for (unsigned c = 0; c < a->ncpus; c++) {
		int fd = (int)perf_event_open(&attr, tid, (int)a->cpus[c]);

		if (fd < 0)
			return errno;
		if (add_fd(a, fd) != 0) {
			close(fd);
			return ENOMEM;
		}
		if (a->ring_fd[c] < 0 ? map_ring(a, c, fd) : ioctl(fd, PERF_EVENT_IOC_SET_OUTPUT,
		                                                   a->ring_fd[c]))
			return errno ? errno : ENOMEM;
	}
	return 0;
}

/*
 * Every thread the process has now.  A thread created from here on is
 * sampled through the event it inherits from its creator.
 */
static int open_events(attach_state *a)
{
	char name[64];
	struct dirent *d;
	DIR *dir;
	int err = 0, opened = 0;

	snprintf(name, sizeof name, "/proc/%ld/task", (long)a->o->pid);
	if (!(dir = opendir(name))) {
		fprintf(stderr, "swprof: no process %ld\n", (long)a->o->pid);
		return -1;
	}
	while ((d = readdir(dir)) != NULL) {
		pid_t tid = (pid_t)atol(d->d_name);
		int e;

		if (tid <= 0)
			continue;
		e = open_thread(a, tid);
		/* root may sample the kernel's side too; others only the user's (paranoid 2). */
		if ((e == EACCES || e == EPERM) && !a->exclude_kernel && opened == 0) {
			a->exclude_kernel = 1;
			e = open_thread(a, tid);
		}
		if (e == 0)
			opened++;
		else if (e != ESRCH && !err)
			err = e;        /* a thread that just ended is no error */
	}
	closedir(dir);
	if (opened > 0)
		return 0;
	if (err == EACCES || err == EPERM)
		not_permitted(a->o->pid, err);
	else
		fprintf(stderr, "swprof: cannot sample process %ld with perf_event_open: %s\n",
		        (long)a->o->pid, strerror(err ? err : ESRCH));
	return -1;
}

static void note_thread(attach_state *a, pid_t tid)
{
	size_t lo = 0, hi = a->ntids;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (a->tids[mid] == tid)
			return;
		if (a->tids[mid] < tid)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (a->ntids == a->tids_cap) {
		size_t cap = a->tids_cap ? 2 * a->tids_cap : 64;
		pid_t *grown = realloc(a->tids, cap * sizeof *grown);

		if (!grown)
			return;
		a->tids = grown;
		a->tids_cap = cap;
	}
	memmove(&a->tids[lo + 1], &a->tids[lo], (a->ntids - lo) * sizeof *a->tids);
	a->tids[lo] = tid;
	a->ntids++;
	prof.threads_seen = a->ntids;
}

/* A record's fields, in the order sample_type puts them; NULL past its end. */
static const unsigned char *take(const unsigned char *at, const unsigned char *end, void *out,
                                 size_t len)
{
	if (!at || (size_t)(end - at) < len)
		return NULL;
	memcpy(out, at, len);
	return at + len;
}

/* One PERF_RECORD_SAMPLE: walk the copy, keep the frames. */
/* Is `ip` in an executable mapping of no file (where a JIT puts its code)? */
static int in_anonymous_code(const attach_state *a, uint64_t ip)
{
	const process_mapping *m = process_mapping_at(&a->proc, ip);

	return m && m->executable && m->path[0] != '/' && m->path[0] != '[';
}

static void handle_sample(attach_state *a, const unsigned char *at, const unsigned char *end)
{
	uint64_t ip, abi = 0, regs[NREGS], size = 0, dyn = 0, sp;
	uint32_t ids[2];
	const unsigned char *stack = NULL;
	const process_mapping *m;
	sample_memory sm;
	sw_context ctx;
	sw_thread t;
	sw_sample s;
	walk_buf w;

	at = take(at, end, &ip, sizeof ip);
	at = take(at, end, ids, sizeof ids);
	at = take(at, end, &abi, sizeof abi);
	if (at && abi != PERF_SAMPLE_REGS_ABI_NONE)
		at = take(at, end, regs, sizeof regs);
	at = take(at, end, &size, sizeof size);
	if (at && size > 0 && size <= (uint64_t)(end - at)) {
		stack = at;
		at = take(at + size, end, &dyn, sizeof dyn);
	}
	if (!at || abi == PERF_SAMPLE_REGS_ABI_NONE || dyn > size) {
		a->no_regs++;       /* a thread with no user state (or a record cut short) */
		prof.failed++;
		return;
	}
	note_thread(a, (pid_t)ids[1]);
	sw_context_init(&ctx, a->proc.arch);
	for (size_t i = 0; i < NREGS; i++)
		sw_context_set(&ctx, sampled_regs[i].sw, regs[i]);
	if (ip != sw_context_ip(&ctx))
		a->kernel_samples++;        /* in a system call: walked from where user code made it */
	sp = 0;
	sw_context_get(&ctx, SAMPLED_SP, &sp);
	/* A thread created since the maps were read has a stack they do not show yet. */
	if (!(m = process_mapping_at(&a->proc, sp)) && !a->rescanned) {
		process_rescan(&a->proc, a->o->verbose);
		a->rescanned = 1;
		m = process_mapping_at(&a->proc, sp);
	}
	sample_memory_init(&sm, &a->proc, stack, sp, dyn, m ? m->end : sp + dyn);
	sw_thread_init(&t, a->proc.arch, prof.map, &sm.mem, 0, m ? m->start : sp, m ? m->end : sp + dyn);
	memset(&s, 0, sizeof s);
	s.tid = (int32_t)ids[1];
	s.walk_flags = SW_WALK_ALLOW_ASYNC_STACK_WALK;
	s.thread = &t;
	s.seed = &ctx;
	s.ticks = 1;
	memset(&w, 0, sizeof w);
	walk_sample(&s, &w);
	/*
	 * Stopped in anonymous code: JIT code, published perhaps since it was
	 * last read.  Read it again (once a round) and walk this sample again.
	 */
	if (w.stopped != SW_OK && w.n > 0 && !a->jit_refreshed && in_anonymous_code(a, w.ip[w.n - 1])) {
		a->jit_refreshed = 1;
		if (attach_jit_refresh(&a->proc, w.ip[w.n - 1], a->o->verbose)) {
			sample_memory_init(&sm, &a->proc, stack, sp, dyn, m ? m->end : sp + dyn);
			memset(&w, 0, sizeof w);
			walk_sample(&s, &w);
		}
	}
	if (w.stopped != SW_OK && sm.past_copy)
		a->past_copy++;
	record_sample(&w, 1, s.tid);
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void handle_record(attach_state *a, const struct perf_event_header *h,
                          const unsigned char *body, const unsigned char *end)
{
	uint64_t lost[2];

	switch (h->type) {
	case PERF_RECORD_SAMPLE: {
		double started = thread_cpu_s();

		a->events++;
		handle_sample(a, body, end);
		a->walk_cpu_s += thread_cpu_s() - started;
		break;
	}
	case PERF_RECORD_LOST:
		if (take(body, end, lost, sizeof lost))
			a->lost += lost[1];
		break;
	case PERF_RECORD_MMAP:
		a->rescan = 1;
		break;
	case PERF_RECORD_COMM: {
		/* pid, tid, then the new name, NUL-padded: bounded by the record. */
		uint32_t ids[2];
		const unsigned char *name = take(body, end, ids, sizeof ids);

		if (name && (pid_t)ids[0] == a->o->pid)
			thread_named((pid_t)ids[1], (const char *)name,
			             strnlen((const char *)name, (size_t)(end - name)));
		break;
	}
	default:
		break;
	}
}

/* Read what ring `r` holds, record by record, freeing each one's space as it goes. */
static void drain(attach_state *a, ring *r)
{
	uint64_t head = __atomic_load_n(&r->meta->data_head, __ATOMIC_ACQUIRE);
	uint64_t tail = r->meta->data_tail;

	while (tail < head) {
		struct perf_event_header h;
		uint64_t off = tail & (r->size - 1), first;

		if (head - tail < sizeof h)
			break;
		first = r->size - off < sizeof h ? r->size - off : sizeof h;
		memcpy(&h, r->data + off, first);
		memcpy((unsigned char *)&h + first, r->data, sizeof h - first);
		if (h.size < sizeof h || h.size > head - tail)
			break;      /* corrupt: nothing more can be trusted in this round */
		first = r->size - off < h.size ? r->size - off : h.size;
		memcpy(a->record, r->data + off, first);
		memcpy(a->record + first, r->data, h.size - first);
		if (a->rescan && h.type == PERF_RECORD_SAMPLE) {
			process_rescan(&a->proc, a->o->verbose);
			a->rescan = 0;
		}
		handle_record(a, &h, a->record + sizeof h, a->record + h.size);
		tail += h.size;
		__atomic_store_n(&r->meta->data_tail, tail, __ATOMIC_RELEASE);
	}
}

static void drain_all(attach_state *a)
{
	a->rescanned = a->jit_refreshed = 0;
	for (unsigned c = 0; c < a->ncpus; c++)
		if (a->rings[c].meta)
			drain(a, &a->rings[c]);
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

/*
 * Whether every thread of the process has ended (exited, or a zombie
 * whose parent has not reaped it yet), as /proc says: the rings may
 * still hold its last samples, and the events' POLLHUP is not needed.
 */
static int process_ended(pid_t pid)
{
	char name[64], path[64 + 256 + 8], buf[512];
	struct dirent *d;
	int live = 0;
	DIR *dir;

	snprintf(name, sizeof name, "/proc/%ld/task", (long)pid);
	if (!(dir = opendir(name)))
		return 1;
	while (!live && (d = readdir(dir)) != NULL) {
		const char *state;
		ssize_t n;
		int fd;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof path, "%s/%s/stat", name, d->d_name);
		if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
			continue;
		n = read(fd, buf, sizeof buf - 1);
		close(fd);
		if (n <= 0)
			continue;
		buf[n] = 0;
		/* "tid (comm) S ...": the state follows the last ')', the name may hold any. */
		state = strrchr(buf, ')');
		live = state && state[1] == ' ' && state[2] != 'Z' && state[2] != 'X';
	}
	closedir(dir);
	return !live;
}

/* Until -d's time is up, SIGINT or SIGTERM, or every thread of the process has ended. */
static void sample_until_done(attach_state *a)
{
	double deadline = a->o->seconds > 0 ? now_s() + a->o->seconds : 0;
	struct pollfd *pfd = calloc(a->nfds, sizeof *pfd);

	for (size_t i = 0; pfd && i < a->nfds; i++) {
		pfd[i].fd = a->fds[i];
		pfd[i].events = POLLIN;
	}
	for (size_t i = 0; i < a->nfds; i++)
		ioctl(a->fds[i], PERF_EVENT_IOC_ENABLE, 0);
	while (!stop_signal) {
		int timeout = POLL_MS, readable = 0;

		if (deadline) {
			double left = deadline - now_s();

			if (left <= 0)
				break;
			if (left * 1000 < timeout)
				timeout = (int)(left * 1000) + 1;
		}
		if (pfd && poll(pfd, a->nfds, timeout) > 0)
			for (size_t i = 0; i < a->nfds; i++)
				readable |= (pfd[i].revents & POLLIN) != 0;
		/* Woken with nothing to read (POLLHUP: threads ended): wait all the same. */
		if (!pfd || (!readable && !stop_signal))
			nap_ms(timeout);
		drain_all(a);
		read_thread_names(0);
		if (process_ended(a->o->pid))
			break;
	}
	for (size_t i = 0; i < a->nfds; i++)
		ioctl(a->fds[i], PERF_EVENT_IOC_DISABLE, 0);
	drain_all(a);
	free(pfd);
}

static const char *const extensions[] = { NULL, "folded", "pb.gz", "svg" };

/* -v: the threads sampled and their names (the target's strings: escaped). */
static void print_threads(void)
{
	for (unsigned i = 0; i < MAX_THREADS; i++) {
		const thread_entry *e = &prof.threads[i];

		if (!e->tid)
			continue;
		fprintf(stderr, "swprof: thread %ld ", (long)e->tid);
		if (e->named)
			print_escaped(stderr, e->name);
		else
			fputs("(ended before its name was read)", stderr);
		fputc('\n', stderr);
	}
}

/* The profile, in one format at o->out or in all three under swprof.PID.*. */
static int write_attached(const attach_state *a, double seconds)
{
	char paths[4][4096], tmpl[4096];
	const char *out[4] = { NULL, NULL, NULL, NULL };
	profile_written w;
	int ok;

	for (int f = FORMAT_FOLDED; f <= FORMAT_SVG; f++) {
		if (a->o->format != FORMAT_ALL && (int)a->o->format != f)
			continue;
		if (a->o->out)
			snprintf(tmpl, sizeof tmpl, "%s", a->o->out);
		else
			snprintf(tmpl, sizeof tmpl, "swprof.%%p.%s", extensions[f]);
		output_name(tmpl, paths[f], sizeof paths[f]);
		out[f] = paths[f];
	}
	errno = 0;
	ok = write_profile_files(out[FORMAT_FOLDED], out[FORMAT_SVG], out[FORMAT_PPROF], &w);
	if (!ok) {
		fprintf(stderr, "swprof: cannot write the profile: %s\n",
		        w.pprof < 0 ? "swprof was built without pprof support (libprotobuf-c, zlib)" :
		        errno ? strerror(errno) : "out of memory");
		return 1;
	}
	fprintf(stderr, "swprof: process %ld for %.1f s: %lu samples of %lu threads at %u Hz "
	        "(%lu unwalkable, %lu stopped early, %lu of them at the end of the %u-byte stack copy, "
	        "%lu lost by the kernel, %lu dropped), %zu distinct stacks, %zu distinct frames named "
	        "in %.1f ms CPU -> %s%s%s%s%s\n", (long)a->o->pid, seconds, prof.samples,
	        prof.threads_seen, prof.hz, prof.failed, prof.stopped, a->past_copy,
	        a->o->stack_bytes, a->lost, prof.dropped, w.stacks, w.frames, w.naming_cpu_ms,
	        out[FORMAT_FOLDED] ? out[FORMAT_FOLDED] : "",
	        out[FORMAT_FOLDED] && (out[FORMAT_SVG] || out[FORMAT_PPROF]) ? ", " : "",
	        out[FORMAT_SVG] ? out[FORMAT_SVG] : "",
	        out[FORMAT_SVG] && out[FORMAT_PPROF] ? ", " : "",
	        out[FORMAT_PPROF] ? out[FORMAT_PPROF] : "");
	if (a->o->verbose)
		fprintf(stderr, "swprof: %lu sample records, %lu with no user registers, %lu taken in "
		        "the kernel (walked from the system call), maps read %lu times again; "
		        "%.2f us CPU per sample walked\n", a->events, a->no_regs, a->kernel_samples,
		        a->proc.rescans, a->events ? a->walk_cpu_s * 1e6 / (double)a->events : 0.0);
	if (a->o->verbose)
		print_threads();
	return 0;
}

static void release(attach_state *a)
{
	for (unsigned c = 0; a->rings && c < a->ncpus; c++)
		if (a->rings[c].meta)
			munmap(a->rings[c].meta, a->rings[c].mapped);
	for (size_t i = 0; i < a->nfds; i++)
		close(a->fds[i]);
	free(a->fds);
	free(a->rings);
	free(a->ring_fd);
	free(a->cpus);
	free(a->tids);
	free(a->record);
}

int swprof_attach(const attach_options *o)
{
	struct sigaction sa;
	attach_state a;
	double started;
	int rc = 1;

	memset(&a, 0, sizeof a);
	a.o = o;
	prof.hz = o->hz;
	prof.pid = o->pid;
	prof.fold_threads = o->threads;
	prof.buf = malloc(BUFFER_WORDS * sizeof prof.buf[0]);
	a.record = malloc(1u << 16);        /* a record's size is 16 bits */
	if (!prof.buf || !a.record || online_cpus(&a) != 0 ||
	    !(a.rings = calloc(a.ncpus, sizeof *a.rings)) ||
	    !(a.ring_fd = malloc(a.ncpus * sizeof *a.ring_fd)) ||
	    sw_codemap_create(&prof.map) != SW_OK) {
		fprintf(stderr, "swprof: out of memory\n");
		goto out;
	}
	for (unsigned c = 0; c < a.ncpus; c++)
		a.ring_fd[c] = -1;
	walk_caches_init();
	/* The events first: where they are not permitted, that is what to say. */
	if (open_events(&a) != 0 || process_open(&a.proc, o->pid, o->verbose) != 0)
		goto out;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_stop_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	started = now_s();
	sample_until_done(&a);
	rc = write_attached(&a, now_s() - started);
out:
	release(&a);
	attach_jit_close();
	process_close(&a.proc);
	if (prof.map)
		sw_codemap_destroy(prof.map);
	free(prof.buf);
	return rc;
}
#endif /* NO_ATTACH_MODE */
