/*
 * check_targets.c - the debugger targets on real programs: a live
 * multi-threaded process through ptrace, and core files of x86-64, i686
 * and aarch64 programs (written by gdb's gcore, by the kernel and by
 * qemu-user), read on this x86-64 host; then hostile core files.
 *
 * The program is tests/targets/victim.c: built natively by make check and
 * cross-built statically here.  It prints the address and value of a
 * global and of a marker on each thread's stack, which the tests read back
 * through the target's memory.  Where gdb, qemu-aarch64 or a cross
 * compiler is missing, that part is skipped with a message; under CI=true
 * it fails instead.
 *
 * i686 programs run natively where the kernel execs i386 programs, else
 * under qemu-i386 (tests/i386-host.sh decides, i386_host.c asks): then the
 * i686 cores are qemu's own, as arm64's, and the live i686 process is not
 * attached to (ptrace would see qemu), which the test says.
 */
#define _GNU_SOURCE
#include <check.h>
#include <dirent.h>
#include <elf.h>
#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <stackwalk.h>
#include "i386_host.h"

#define MAX_MARKERS 16

/* ---- the victim ---------------------------------------------------------- */

struct victim {
	pid_t pid;              /* the process we forked (qemu for arm64) */
	long target_pid;        /* what it printed */
	int to_child;           /* its stdin */
	FILE *from_child;       /* its stdout */
	uint64_t magic_addr, magic;
	int nmarkers;
	uint64_t marker_addr[MAX_MARKERS], marker_value[MAX_MARKERS];
};

enum core_mode { NO_CORE, KERNEL_CORE, QEMU_CORE };

static char tmpdir[256];

static const char *env_or(const char *name, const char *dflt)
{
	const char *v = getenv(name);

	return v && *v ? v : dflt;
}

static int in_ci(void)
{
	return strcmp(env_or("CI", ""), "true") == 0;
}

/* A tool the test needs: skip without it, but fail under CI. */
static int have_tool(const char *tool, const char *what)
{
	char cmd[512];

	snprintf(cmd, sizeof cmd, "command -v %s >/dev/null 2>&1", tool);
	if (system(cmd) == 0)
		return 1;
	if (in_ci())
		ck_abort_msg("%s: %s is missing, and CI must run this test", what, tool);
	printf("SKIP %s: %s is missing\n", what, tool);
	return 0;
}

static int run_quiet(char *const argv[])
{
	int status;
	pid_t pid = fork();

	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		int null = open("/dev/null", O_RDWR);

		dup2(null, 1);
		dup2(null, 2);
		execvp(argv[0], argv);
		_exit(127);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
}

static void spawn(struct victim *v, char *const argv[], enum core_mode mode)
{
	int in[2], out[2];
	char line[256];

	memset(v, 0, sizeof *v);
	ck_assert_int_eq(pipe(in), 0);
	ck_assert_int_eq(pipe(out), 0);
	v->pid = fork();
	ck_assert_int_ge(v->pid, 0);
	if (v->pid == 0) {
		struct rlimit rl = { 0, 0 };

		dup2(in[0], 0);
		dup2(out[1], 1);
		close(in[0]); close(in[1]); close(out[0]); close(out[1]);
		if (chdir(tmpdir) != 0)
			_exit(126);
		if (mode == NO_CORE) {
			setrlimit(RLIMIT_CORE, &rl);
		} else {
			getrlimit(RLIMIT_CORE, &rl);
			rl.rlim_cur = rl.rlim_max;
			setrlimit(RLIMIT_CORE, &rl);
		}
		if (mode == QEMU_CORE) {
			/* qemu writes the guest's core itself; keep the kernel's core of qemu tiny. */
			FILE *f = fopen("/proc/self/coredump_filter", "w");

			if (f) {
				fputs("0", f);
				fclose(f);
			}
		}
		execvp(argv[0], argv);
		_exit(127);
	}
	close(in[0]);
	close(out[1]);
	v->to_child = in[1];
	v->from_child = fdopen(out[0], "r");
	ck_assert_ptr_nonnull(v->from_child);
	while (fgets(line, sizeof line, v->from_child)) {
		unsigned long long a, b;
		int i;

		if (strcmp(line, "ready\n") == 0)
			return;
		if (sscanf(line, "pid %ld", &v->target_pid) == 1)
			continue;
		if (sscanf(line, "magic_addr %llx", &a) == 1)
			v->magic_addr = a;
		else if (sscanf(line, "magic %llx", &a) == 1)
			v->magic = a;
		else if (sscanf(line, "marker %d %llx %llx", &i, &a, &b) == 3 && i == v->nmarkers &&
		         i < MAX_MARKERS) {
			v->marker_addr[i] = a;
			v->marker_value[i] = b;
			v->nmarkers++;
		}
	}
	ck_abort_msg("%s did not start", argv[0]);
}

/* Let a "wait" victim finish; it must exit 0 after printing "done". */
static void finish(struct victim *v, int expect_done)
{
	char line[256];
	int status, done = 0;

	close(v->to_child);
	while (fgets(line, sizeof line, v->from_child))
		done |= strcmp(line, "done\n") == 0;
	fclose(v->from_child);
	ck_assert_int_eq(waitpid(v->pid, &status, 0), v->pid);
	if (expect_done) {
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		              "the victim did not exit normally (status 0x%x)", status);
		ck_assert_msg(done, "the victim did not finish its work");
	}
}

static char state_of(pid_t pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
	f = fopen(path, "r");
	if (!f)
		return '?';
	n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	p = strrchr(buf, ')');
	return p && p[1] == ' ' ? p[2] : '?';
}

static void wait_for_state(pid_t pid, char want)
{
	for (int i = 0; i < 500 && state_of(pid) != want; i++)
		usleep(10000);
	ck_assert_int_eq(state_of(pid), want);
}

/* The native victim and the cross-built ones (NULL when a tool is missing). */
static const char *native_victim(void)
{
	static char path[PATH_MAX];
	char rel[PATH_MAX];

	/* Absolute: the victims run in tmpdir. */
	snprintf(rel, sizeof rel, "%s/tests/targets/victim", env_or("top_builddir", "."));
	ck_assert_msg(realpath(rel, path) != NULL, "%s is missing", rel);
	return path;
}

static const char *cross_victim(const char *cc, const char *name)
{
	static char paths[2][512];
	char *path = paths[strcmp(name, "i686") == 0];
	char src[512];

	if (!have_tool(cc, name))
		return NULL;
	snprintf(path, 512, "%s/victim-%s", tmpdir, name);
	if (access(path, X_OK) == 0)
		return path;
	snprintf(src, sizeof src, "%s/tests/targets/victim.c", env_or("top_srcdir", "."));
	{
		char *argv[] = { (char *)cc, "-static", "-O1", "-g", "-o", path, src, "-lpthread", NULL };

		ck_assert_msg(run_quiet(argv) == 0, "%s could not build %s", cc, src);
	}
	return path;
}

/*
 * How this host runs i686 programs: 1 natively, 0 under qemu-i386; -1 (with
 * a message, or a failure under CI) where it cannot run them at all.
 */
static int i686_native(const char *what)
{
	const char *why;

	switch (i386_host(&why)) {
	case I386_NATIVE:
		return 1;
	case I386_QEMU:
		return 0;
	case I386_NOEXEC:
		ck_assert_msg(!in_ci(), "%s: %s, and CI must run this test", what, why);
		printf("SKIP %s: %s\n", what, why);
		return -1;
	default:
		ck_abort_msg("%s: %s", what, why);
		return -1;
	}
}

/* ---- one view of a core or a process --------------------------------------- */

struct view {
	sw_arch arch;
	unsigned threads, modules;
	sw_status (*thread)(const void *t, unsigned i, sw_context *ctx, int *tid);
	sw_status (*module)(const void *t, unsigned i, sw_mapped_file *f);
	sw_status (*bounds)(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi);
	const sw_memory *mem;
	const void *h;
};

static sw_status core_thread(const void *t, unsigned i, sw_context *c, int *tid)
{ return sw_core_thread(t, i, c, tid); }
static sw_status core_module(const void *t, unsigned i, sw_mapped_file *f)
{ return sw_core_module(t, i, f); }
static sw_status core_bounds(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi)
{ return sw_core_stack_bounds(t, sp, lo, hi); }
static sw_status proc_thread(const void *t, unsigned i, sw_context *c, int *tid)
{ return sw_process_thread(t, i, c, tid); }
static sw_status proc_module(const void *t, unsigned i, sw_mapped_file *f)
{ return sw_process_module(t, i, f); }
static sw_status proc_bounds(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi)
{ return sw_process_stack_bounds(t, sp, lo, hi); }

static struct view core_view(const sw_core *c)
{
	return (struct view){ sw_core_arch(c), sw_core_thread_count(c), sw_core_module_count(c),
	                      core_thread, core_module, core_bounds, sw_core_memory(c), c };
}

static struct view process_view(const sw_process *p)
{
	return (struct view){ sw_process_arch(p), sw_process_thread_count(p),
	                      sw_process_module_count(p), proc_thread, proc_module,
	                      proc_bounds, sw_process_memory(p), p };
}

static const sw_mapped_file *module_at(const struct view *v, uint64_t addr, sw_mapped_file *f)
{
	for (unsigned i = 0; i < v->modules; i++)
		if (v->module(v->h, i, f) == SW_OK && f->start <= addr && addr < f->end)
			return f;
	return NULL;
}

/* The code bytes at addr, as the mapped file holds them. */
static void check_code_from_file(const struct view *v, const sw_mapped_file *f, uint64_t addr)
{
	unsigned char a[16], b[16];
	size_t n = f->end - addr < sizeof a ? (size_t)(f->end - addr) : sizeof a;
	int fd = open(f->path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pread(fd, b, n, (off_t)(f->offset + (addr - f->start))), (ssize_t)n);
	close(fd);
	ck_assert_int_eq(sw_memory_read(v->mem, addr, a, n), SW_OK);
	ck_assert_msg(memcmp(a, b, n) == 0, "code at 0x%llx differs from %s",
	              (unsigned long long)addr, f->path);
}

/*
 * Everything a walk of this target needs: each thread's SP in a readable
 * segment, its PC in a mapped file (or, with pc_in_file 0, at least in
 * readable memory: i386 threads wait in the vDSO), and the victim's own
 * global and stack markers read back through the target's memory.
 */
static void check_view(const struct view *v, const struct victim *vic, sw_arch arch,
                       unsigned nthreads, int pc_in_file)
{
	unsigned ps = sw_arch_pointer_size(arch);
	int markers_seen = 0;

	ck_assert_int_eq(v->arch, arch);
	ck_assert_uint_eq(v->threads, nthreads);
	ck_assert_ptr_nonnull(v->mem);
	for (unsigned i = 0; i < v->threads; i++) {
		sw_context ctx;
		sw_mapped_file f;
		uint64_t sp, pc, lo, hi;
		unsigned char buf[64];
		int tid = 0;

		ck_assert_int_eq(v->thread(v->h, i, &ctx, &tid), SW_OK);
		ck_assert_int_gt(tid, 0);
		ck_assert_int_eq(ctx.arch, arch);
		sp = sw_context_sp(&ctx);
		pc = sw_context_ip(&ctx);
		ck_assert_int_eq(v->bounds(v->h, sp, &lo, &hi), SW_OK);
		ck_assert(lo <= sp && sp < hi);
		ck_assert_int_eq(sw_memory_read(v->mem, sp, buf, ps * 4), SW_OK);
		if (module_at(v, pc, &f)) {
			/* gcore leaves code out of the core: its rights are unknown (0). */
			ck_assert_msg(f.prot == 0 || (f.prot & SW_PROT_EXEC),
			              "pc 0x%llx in a non-executable mapping of %s",
			              (unsigned long long)pc, f.path);
			check_code_from_file(v, &f, pc);
		} else {
			ck_assert_msg(!pc_in_file, "thread %u: pc 0x%llx is in no mapped file", i,
			              (unsigned long long)pc);
			ck_assert_int_eq(sw_memory_read(v->mem, pc, buf, 1), SW_OK);
		}
		for (int m = 0; m < vic->nmarkers; m++)
			markers_seen += lo <= vic->marker_addr[m] && vic->marker_addr[m] < hi;
	}
	/* Each marker lies on the stack of one of the threads. */
	ck_assert_int_eq(markers_seen, vic->nmarkers);
	{
		uint64_t word = 0;

		ck_assert_int_eq(sw_memory_read(v->mem, vic->magic_addr, &word, 8), SW_OK);
		ck_assert_uint_eq(word, vic->magic);
		for (int m = 0; m < vic->nmarkers; m++) {
			ck_assert_int_eq(sw_memory_read(v->mem, vic->marker_addr[m], &word, 8), SW_OK);
			ck_assert_uint_eq(word, vic->marker_value[m]);
		}
	}
	/* Reads outside every mapping fail cleanly. */
	{
		unsigned char b[8];

		ck_assert_int_eq(sw_memory_read(v->mem, 8, b, 8), SW_E_BADADDR);
		ck_assert_int_eq(sw_memory_read(v->mem, UINT64_MAX - 3, b, 8), SW_E_BADADDR);
	}
}

/* ---- live processes -------------------------------------------------------- */

static void attach_and_check(struct victim *vic, sw_arch arch, unsigned nthreads, int pc_in_file)
{
	sw_process *p;
	struct view v;
	int tid;
	sw_context ctx;

	ck_assert_int_eq(sw_process_attach((int)vic->pid, &p), SW_OK);
	v = process_view(p);
	check_view(&v, vic, arch, nthreads, pc_in_file);
	ck_assert_int_eq(sw_process_thread(p, 0, &ctx, &tid), SW_OK);
	ck_assert_int_eq(tid, vic->pid);
	ck_assert_int_eq(sw_process_thread(p, nthreads, &ctx, &tid), SW_E_INVAL);
	ck_assert_uint_gt(sw_process_module_count(p), 0);
	ck_assert_int_eq(sw_process_detach(p), SW_OK);
}

START_TEST(process_running)
{
	char *argv[] = { (char *)native_victim(), "wait", "3", NULL };
	struct victim vic;

	spawn(&vic, argv, NO_CORE);
	attach_and_check(&vic, sw_arch_host(), 4, 1);
	/* Twice: a detached process can be attached again. */
	attach_and_check(&vic, sw_arch_host(), 4, 1);
	finish(&vic, 1);
}
END_TEST

START_TEST(process_stopped)
{
	char *argv[] = { (char *)native_victim(), "stop", "2", NULL };
	struct victim vic;

	spawn(&vic, argv, NO_CORE);
	wait_for_state(vic.pid, 'T');
	attach_and_check(&vic, sw_arch_host(), 3, 1);
	/* It was stopped before we came and stays so after we left. */
	usleep(50000);
	ck_assert_int_eq(state_of(vic.pid), 'T');
	kill(vic.pid, SIGCONT);
	finish(&vic, 1);
}
END_TEST

/* Threads come and go while we attach; every attach stops whatever is there. */
START_TEST(process_churn)
{
	char *argv[] = { (char *)native_victim(), "churn", "2", NULL };
	struct victim vic;

	spawn(&vic, argv, NO_CORE);
	for (int round = 0; round < 40; round++) {
		sw_process *p;

		ck_assert_int_eq(sw_process_attach((int)vic.pid, &p), SW_OK);
		ck_assert_uint_ge(sw_process_thread_count(p), 3);
		for (unsigned i = 0; i < sw_process_thread_count(p); i++) {
			sw_context ctx;
			uint64_t lo, hi, word;
			int tid;

			ck_assert_int_eq(sw_process_thread(p, i, &ctx, &tid), SW_OK);
			ck_assert_int_eq(sw_process_stack_bounds(p, sw_context_sp(&ctx), &lo, &hi), SW_OK);
			ck_assert_int_eq(sw_memory_read(sw_process_memory(p), sw_context_sp(&ctx), &word,
			                                sizeof word), SW_OK);
		}
		ck_assert_int_eq(sw_process_detach(p), SW_OK);
	}
	finish(&vic, 1);
}
END_TEST

START_TEST(process_i686)
{
	const char *exe = cross_victim("i686-linux-gnu-gcc", "i686");
	struct victim vic;
	const char *why;

	if (!exe)
		return;
	/* ptrace sees qemu, not the program it runs. */
	if (i386_host(&why) != I386_NATIVE) {
		ck_assert_msg(i386_host(&why) != I386_ERROR, "%s", why);
		printf("NOT RUN process_i686 (ptrace of a live i686 process): %s; "
		       "under qemu-i386 ptrace would see qemu, not the program\n", why);
		return;
	}
	{
		char *argv[] = { (char *)exe, "wait", "2", NULL };

		spawn(&vic, argv, NO_CORE);
	}
	attach_and_check(&vic, SW_ARCH_X86, 3, 0);
	finish(&vic, 1);
}
END_TEST

START_TEST(process_errors)
{
	sw_process *p = (sw_process *)1;
	pid_t child;
	int status;

	ck_assert_int_eq(sw_process_attach(getpid(), &p), SW_E_INVAL);
	ck_assert_ptr_null(p);
	ck_assert_int_eq(sw_process_attach(0, &p), SW_E_INVAL);
	ck_assert_int_eq(sw_process_attach(-5, &p), SW_E_INVAL);
	ck_assert_int_eq(sw_process_attach(1234, NULL), SW_E_INVAL);
	/* A pid that no longer exists. */
	child = fork();
	if (child == 0)
		_exit(0);
	waitpid(child, &status, 0);
	ck_assert_int_eq(sw_process_attach(child, &p), SW_E_BADADDR);
	ck_assert_int_eq(sw_process_detach(NULL), SW_OK);
	ck_assert_uint_eq(sw_process_thread_count(NULL), 0);
	ck_assert_ptr_null(sw_process_memory(NULL));
}
END_TEST

/* ---- core files -------------------------------------------------------------- */

/* The first file in tmpdir whose name starts with prefix, or NULL. */
static char *find_file(const char *prefix)
{
	static char path[512];
	struct dirent *e;
	DIR *d = opendir(tmpdir);
	char *found = NULL;

	ck_assert_ptr_nonnull(d);
	while (!found && (e = readdir(d)) != NULL)
		if (strncmp(e->d_name, prefix, strlen(prefix)) == 0) {
			snprintf(path, sizeof path, "%s/%s", tmpdir, e->d_name);
			found = path;
		}
	closedir(d);
	return found;
}

/* gcore a running victim; returns the core's path (static storage) or NULL. */
static const char *gcore_victim(const char *exe, const char *name, unsigned threads,
                                struct victim *vic)
{
	static char core[600];
	char prefix[512], pid[32], nt[16];

	if (!exe || !have_tool("gcore", name))
		return NULL;
	snprintf(nt, sizeof nt, "%u", threads);
	{
		char *argv[] = { (char *)exe, "wait", nt, NULL };

		spawn(vic, argv, NO_CORE);
	}
	snprintf(prefix, sizeof prefix, "%s/gcore-%s", tmpdir, name);
	snprintf(pid, sizeof pid, "%d", (int)vic->pid);
	{
		char *argv[] = { "gcore", "-o", prefix, pid, NULL };

		ck_assert_msg(run_quiet(argv) == 0, "gcore failed");
	}
	finish(vic, 1);
	snprintf(core, sizeof core, "%s.%d", prefix, (int)vic->pid);
	return core;
}

static void check_core_file(const char *path, const struct victim *vic, sw_arch arch,
                            unsigned nthreads, int pc_in_file)
{
	sw_core *c;
	struct view v;

	ck_assert_int_eq(sw_core_open(path, &c), SW_OK);
	v = core_view(c);
	check_view(&v, vic, arch, nthreads, pc_in_file);
	sw_core_close(c);
}

/*
 * qemu-user's core of `exe`, run as "QEMU EXE abort THREADS" in tmpdir: the
 * victim aborts once its threads are in place and qemu writes
 * qemu_EXE_DATE-PID.core there itself.  Its path (static storage), or NULL
 * where core dumps are disabled.
 */
static const char *qemu_core(const char *qemu, const char *exe, unsigned threads, struct victim *vic)
{
	static char core[600];
	const char *base = strrchr(exe, '/') ? strrchr(exe, '/') + 1 : exe, *found;
	char nt[16], prefix[300];
	struct rlimit rl;

	getrlimit(RLIMIT_CORE, &rl);
	if (rl.rlim_max == 0) {
		ck_assert_msg(!in_ci(), "core dumps are disabled (RLIMIT_CORE)");
		printf("SKIP %s core: core dumps are disabled\n", base);
		return NULL;
	}
	snprintf(nt, sizeof nt, "%u", threads);
	{
		char *argv[] = { (char *)qemu, (char *)exe, "abort", nt, NULL };

		spawn(vic, argv, QEMU_CORE);
	}
	finish(vic, 0);
	snprintf(prefix, sizeof prefix, "qemu_%s_", base);
	found = find_file(prefix);
	ck_assert_msg(found != NULL, "%s wrote no core file of %s", qemu, base);
	snprintf(core, sizeof core, "%s", found);
	/* The kernel's core of qemu itself, if any. */
	if ((found = find_file("core")) != NULL)
		unlink(found);
	return core;
}

/*
 * A core qemu-user wrote: no NT_FILE note, so the executable is added to
 * name the code (qemu-aarch64 7 leaves the code itself out too:
 * code_omitted; qemu-i386 7 dumps it); then everything a walk needs is
 * there.
 */
static void check_qemu_core(const char *path, const struct victim *vic, sw_arch arch,
                            unsigned nthreads, const char *exe, int code_omitted)
{
	struct view v;
	sw_context ctx;
	sw_core *c;
	unsigned char b[4];
	uint64_t lo, hi;

	ck_assert_int_eq(sw_core_open(path, &c), SW_OK);
	ck_assert_int_eq(sw_core_arch(c), arch);
	ck_assert_uint_eq(sw_core_module_count(c), 0);
	/* The code is in a segment, but maybe not in the core... */
	ck_assert_int_eq(sw_core_thread(c, 0, &ctx, NULL), SW_OK);
	ck_assert_int_eq(sw_core_stack_bounds(c, sw_context_ip(&ctx), &lo, &hi), SW_OK);
	if (code_omitted)
		ck_assert_int_eq(sw_memory_read(sw_core_memory(c), sw_context_ip(&ctx), b, 4),
		                 SW_E_BADADDR);
	/* ...until the executable supplies it; a file of another arch does not. */
	ck_assert_int_eq(sw_core_add_executable(c, native_victim()), SW_E_MISMATCH);
	ck_assert_int_eq(sw_core_add_executable(c, "/nonexistent/victim"), SW_E_INVAL);
	ck_assert_int_eq(sw_core_add_executable(c, exe), SW_OK);
	ck_assert_int_eq(sw_core_add_executable(c, exe), SW_E_EXISTS);
	v = core_view(c);
	check_view(&v, vic, arch, nthreads, 1);
	sw_core_close(c);
}

START_TEST(core_gcore_x64)
{
	struct victim vic;
	const char *core = gcore_victim(native_victim(), "x64", 3, &vic);

	if (core)
		check_core_file(core, &vic, SW_ARCH_X64, 4, 1);
}
END_TEST

/*
 * An i686 core: gcore's of the running victim (threads blocked in the
 * vDSO) where the kernel runs i386 programs; else qemu-i386's own, the
 * victim aborting (no vDSO: threads blocked in the executable's code).
 */
START_TEST(core_gcore_i686)
{
	const char *exe = cross_victim("i686-linux-gnu-gcc", "i686");
	struct victim vic;
	const char *core;
	int native;

	if (!exe || (native = i686_native("i686 core")) < 0)
		return;
	if (native) {
		if ((core = gcore_victim(exe, "i686", 2, &vic)) != NULL)
			check_core_file(core, &vic, SW_ARCH_X86, 3, 0);
		return;
	}
	if ((core = qemu_core(i386_qemu(), exe, 2, &vic)) != NULL) {
		check_qemu_core(core, &vic, SW_ARCH_X86, 3, exe, 0);
		unlink(core);
	}
}
END_TEST

/*
 * The kernel's own core: it omits the code of file mappings, which the
 * library then reads from the files its NT_FILE note names.
 */
START_TEST(core_kernel_x64)
{
	char *argv[] = { (char *)native_victim(), "abort", "2", NULL };
	char pattern[256] = "";
	struct rlimit rl;
	struct victim vic;
	const char *core;
	FILE *f = fopen("/proc/sys/kernel/core_pattern", "r");

	if (f) {
		if (!fgets(pattern, sizeof pattern, f))
			pattern[0] = '\0';
		fclose(f);
	}
	getrlimit(RLIMIT_CORE, &rl);
	if (strcmp(pattern, "core\n") != 0 || rl.rlim_max == 0) {
		printf("SKIP kernel core: core_pattern is not \"core\" or core dumps are disabled\n");
		return;
	}
	spawn(&vic, argv, KERNEL_CORE);
	finish(&vic, 0);
	core = find_file("core");
	ck_assert_msg(core != NULL, "the kernel wrote no core file");
	check_core_file(core, &vic, SW_ARCH_X64, 3, 1);
	unlink(core);
}
END_TEST

/*
 * qemu-user's core of an aarch64 program: no NT_FILE note and no code, so
 * the executable is added to supply both.
 */
START_TEST(core_qemu_arm64)
{
	const char *exe = cross_victim("aarch64-linux-gnu-gcc", "aarch64");
	struct victim vic;
	const char *core;

	if (!exe || !have_tool("qemu-aarch64", "aarch64 core"))
		return;
	if ((core = qemu_core("qemu-aarch64", exe, 3, &vic)) != NULL) {
		check_qemu_core(core, &vic, SW_ARCH_ARM64, 4, exe, 1);
		unlink(core);
	}
}
END_TEST

/* ---- hostile core files ------------------------------------------------------- */

static unsigned char *slurp(const char *path, size_t *size)
{
	struct stat sb;
	unsigned char *buf;
	int fd = open(path, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(fstat(fd, &sb), 0);
	*size = (size_t)sb.st_size;
	buf = malloc(*size ? *size : 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(read(fd, buf, *size), (ssize_t)*size);
	close(fd);
	return buf;
}

static void write_file(const char *path, const void *buf, size_t n)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, buf, n), (ssize_t)n);
	close(fd);
}

/* Whatever opened must answer every question without crashing. */
static void exercise(sw_core *c)
{
	const sw_memory *m = sw_core_memory(c);
	unsigned char buf[256];

	for (unsigned i = 0; i < sw_core_thread_count(c); i++) {
		sw_context ctx;
		uint64_t lo, hi, sp;

		ck_assert_int_eq(sw_core_thread(c, i, &ctx, NULL), SW_OK);
		sp = sw_context_sp(&ctx);
		if (sw_core_stack_bounds(c, sp, &lo, &hi) == SW_OK)
			ck_assert(lo <= sp && sp < hi);
		sw_memory_read(m, sp, buf, sizeof buf);
		sw_memory_read(m, sw_context_ip(&ctx), buf, 16);
	}
	for (unsigned i = 0; i < sw_core_module_count(c); i++) {
		sw_mapped_file f;

		ck_assert_int_eq(sw_core_module(c, i, &f), SW_OK);
		ck_assert(f.start < f.end);
		ck_assert_ptr_nonnull(f.path);
		ck_assert_uint_lt(strlen(f.path), 1u << 20);
		sw_memory_read(m, f.start, buf, sizeof buf);
		sw_memory_read(m, f.end - 8, buf, 16);
	}
}

/*
 * Where a core's headers and notes end (gdb's and the kernel's cores put
 * them first, the memory after): cut before, it is refused; after, it
 * opens with the memory it still holds.
 */
static size_t headers_end(const unsigned char *img, size_t size)
{
	int is64 = img[EI_CLASS] == ELFCLASS64;
	size_t phoff, phnum, entsize, end;

	ck_assert_uint_ge(size, sizeof(Elf64_Ehdr));
	if (is64) {
		const Elf64_Ehdr *eh = (const void *)img;

		phoff = eh->e_phoff, phnum = eh->e_phnum, entsize = sizeof(Elf64_Phdr);
	} else {
		const Elf32_Ehdr *eh = (const void *)img;

		phoff = eh->e_phoff, phnum = eh->e_phnum, entsize = sizeof(Elf32_Phdr);
	}
	end = phoff + phnum * entsize;
	ck_assert_uint_le(end, size);
	for (size_t i = 0; i < phnum; i++) {
		Elf64_Phdr ph64;
		Elf32_Phdr ph32;
		size_t type, off, filesz;

		if (is64) {
			memcpy(&ph64, img + phoff + i * entsize, sizeof ph64);
			type = ph64.p_type, off = ph64.p_offset, filesz = ph64.p_filesz;
		} else {
			memcpy(&ph32, img + phoff + i * entsize, sizeof ph32);
			type = ph32.p_type, off = ph32.p_offset, filesz = ph32.p_filesz;
		}
		if (type == PT_NOTE && off + filesz > end)
			end = off + filesz;
	}
	return end;
}

static void open_hostile(const unsigned char *img, size_t n, unsigned flags, int *errors)
{
	sw_core *c = NULL;
	sw_status st = sw_core_open_memory(img, n, flags, &c);

	if (st == SW_OK) {
		exercise(c);
		sw_core_close(c);
	} else {
		ck_assert_ptr_null(c);
		ck_assert_msg(st == SW_E_TRUNCATED || st == SW_E_BADMETA || st == SW_E_UNSUPPORTED ||
		              st == SW_E_LIMIT, "unexpected %s", sw_strerror(st));
		(*errors)++;
	}
}

static void hostile_image(const char *path)
{
	size_t size;
	unsigned char *img = slurp(path, &size);
	char trunc[600];
	int errors = 0;
	unsigned seed = (unsigned)time(NULL);

	size_t notes_end = headers_end(img, size);

	printf("hostile: %s (%zu bytes, headers and notes %zu), seed %u\n", path, size, notes_end,
	       seed);
	srand(seed);
	/*
	 * Truncated: every length through the headers and notes, which are
	 * refused, then a sample of those that cut the memory, which open
	 * (RLIMIT_CORE cuts kernel cores so, and gdb reads them).
	 */
	for (size_t n = 0; n < notes_end; n += n < 16384 ? 1 : size / 997 + 1) {
		int before = errors;

		open_hostile(img, n, 0, &errors);
		ck_assert_int_eq(errors, before + 1);
	}
	/* gdb writes its notes last: then no cut leaves them whole. */
	for (size_t n = notes_end; n < size; n += (size - notes_end) / 997 + 1) {
		sw_core *c = NULL;

		ck_assert_int_eq(sw_core_open_memory(img, n, SW_CORE_MAPPED_FILES, &c), SW_OK);
		exercise(c);
		sw_core_close(c);
	}
	/* The same through files, at a few lengths. */
	snprintf(trunc, sizeof trunc, "%s.trunc", path);
	for (size_t n = 0; n < size; n += size / 13 + 1) {
		sw_core *c = NULL;

		write_file(trunc, img, n);
		if (sw_core_open(trunc, &c) == SW_OK) {
			exercise(c);
			sw_core_close(c);
		}
	}
	unlink(trunc);
	/* Corrupted: random bytes, mostly in the headers and notes, then restored. */
	for (int iter = 0; iter < 4000; iter++) {
		size_t pos[8];
		unsigned char old[8];
		int k = 1 + rand() % 8;
		size_t hot = size < 16384 ? size : 16384;

		for (int j = 0; j < k; j++) {
			pos[j] = rand() % 10 ? (size_t)rand() % hot : (size_t)rand() % size;
			old[j] = img[pos[j]];
			img[pos[j]] = rand() % 4 ? (unsigned char)rand() : (rand() % 2 ? 0xff : 0);
		}
		open_hostile(img, size, iter % 50 == 0 ? SW_CORE_MAPPED_FILES : 0, &errors);
		for (int j = k; j-- > 0;)
			img[pos[j]] = old[j];
	}
	free(img);
}

START_TEST(core_hostile)
{
	struct victim vic;
	const char *core = gcore_victim(native_victim(), "hostile-x64", 1, &vic), *exe;
	int native;

	if (core)
		hostile_image(core);
	/* The i686 core: gcore's, or where i686 programs run under qemu-i386, qemu's. */
	exe = cross_victim("i686-linux-gnu-gcc", "i686");
	if (!exe || (native = i686_native("hostile i686 core")) < 0)
		return;
	core = native ? gcore_victim(exe, "hostile-i686", 1, &vic) : qemu_core(i386_qemu(), exe, 1, &vic);
	if (core) {
		hostile_image(core);
		if (!native)
			unlink(core);
	}
}
END_TEST

START_TEST(core_not_cores)
{
	char path[512];
	sw_core *c = (sw_core *)1;
	static const unsigned char elf_hdr_only[] = { 0x7f, 'E', 'L', 'F', 2, 1, 1, 0,
	                                              0, 0, 0, 0, 0, 0, 0, 0, 4, 0 };
	const char *i686 = cross_victim("i686-linux-gnu-gcc", "i686");

	/* An executable (64- and 32-bit): ELF, but not a core. */
	ck_assert_int_eq(sw_core_open(native_victim(), &c), SW_E_UNSUPPORTED);
	ck_assert_ptr_null(c);
	if (i686)
		ck_assert_int_eq(sw_core_open(i686, &c), SW_E_UNSUPPORTED);
	/* An empty file, a text file, a header cut short, a directory, nothing. */
	snprintf(path, sizeof path, "%s/empty", tmpdir);
	write_file(path, "", 0);
	ck_assert_int_eq(sw_core_open(path, &c), SW_E_TRUNCATED);
	write_file(path, "this is not a core file at all\n", 31);
	ck_assert_int_eq(sw_core_open(path, &c), SW_E_UNSUPPORTED);
	write_file(path, elf_hdr_only, sizeof elf_hdr_only);
	ck_assert_int_eq(sw_core_open(path, &c), SW_E_TRUNCATED);
	unlink(path);
	ck_assert_int_eq(sw_core_open(tmpdir, &c), SW_E_INVAL);
	ck_assert_int_eq(sw_core_open("/nonexistent/core", &c), SW_E_INVAL);
	ck_assert_int_eq(sw_core_open(NULL, &c), SW_E_INVAL);
	ck_assert_int_eq(sw_core_open("/dev/null", &c), SW_E_INVAL);
	ck_assert_int_eq(sw_core_open_memory(NULL, 0, 0, &c), SW_E_TRUNCATED);
	ck_assert_int_eq(sw_core_open_memory(elf_hdr_only, sizeof elf_hdr_only, 99, &c), SW_E_INVAL);
	/* NULL everywhere. */
	sw_core_close(NULL);
	ck_assert_int_eq(sw_core_arch(NULL), SW_ARCH_NONE);
	ck_assert_uint_eq(sw_core_thread_count(NULL), 0);
	ck_assert_ptr_null(sw_core_memory(NULL));
	ck_assert_int_eq(sw_core_add_executable(NULL, "x"), SW_E_INVAL);
}
END_TEST

/*
 * A core's NT_FILE note may name a FIFO: whatever reads the files it
 * names must not wait for a writer.  The executable's path in a real
 * core is replaced, wherever it occurs, by a FIFO's path of the same
 * length; opening that core, loading its modules and analyzing it for
 * hangs (which loads every mapped file) must all come back.  Each open of
 * the FIFO without O_NONBLOCK would block until the alarm ends the test.
 */
START_TEST(core_names_a_fifo)
{
	struct victim vic;
	const char *core = gcore_victim(native_victim(), "fifo", 1, &vic);
	const char *exe = native_victim();
	char fifo[PATH_MAX], patched[600];
	sw_hang_options opt = { 0 };
	sw_hang_report *r = NULL;
	unsigned char *img;
	size_t size, n = strlen(exe), replaced = 0;
	sw_core *c = NULL;
	sw_status st;

	if (!core)
		return;
	/* The same directory and length: the last letter changed. */
	snprintf(fifo, sizeof fifo, "%s", exe);
	fifo[n - 1] = fifo[n - 1] == 'F' ? 'G' : 'F';
	unlink(fifo);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	img = slurp(core, &size);
	for (size_t i = 0; i + n < size; i++)
		if (memcmp(img + i, exe, n + 1) == 0) {
			memcpy(img + i, fifo, n);
			replaced++;
		}
	ck_assert_uint_ge(replaced, 1);
	snprintf(patched, sizeof patched, "%s/fifo.core", tmpdir);
	write_file(patched, img, size);
	free(img);

	alarm(60);
	ck_assert_int_eq(sw_core_open(fifo, &c), SW_E_INVAL);
	ck_assert_int_eq(sw_core_open(patched, &c), SW_OK);
	ck_assert_int_eq(sw_core_add_executable(c, fifo), SW_E_INVAL);
	exercise(c);
	st = sw_hang_analyze_core(c, &opt, &r);
	ck_assert_msg(st == SW_OK, "sw_hang_analyze_core: %s", sw_strerror(st));
	ck_assert_uint_ge(sw_hang_report_thread_count(r), 1);
	sw_hang_report_free(r);
	sw_core_close(c);
	alarm(0);
	unlink(fifo);
	unlink(patched);
}
END_TEST

/* ---- the suite ------------------------------------------------------------------ */

static void make_tmpdir(void)
{
	snprintf(tmpdir, sizeof tmpdir, "%s/sw-targets.XXXXXX", env_or("TMPDIR", "/tmp"));
	if (!mkdtemp(tmpdir)) {
		perror("mkdtemp");
		exit(1);
	}
}

static void remove_tmpdir(void)
{
	char cmd[600];

	snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

int main(void)
{
	Suite *s = suite_create("targets");
	TCase *proc = tcase_create("process"), *core = tcase_create("core");
	SRunner *sr;
	int failed;

	make_tmpdir();
	tcase_set_timeout(proc, 60);
	tcase_set_timeout(core, 60);
	tcase_add_test(proc, process_running);
	tcase_add_test(proc, process_stopped);
	tcase_add_test(proc, process_churn);
	tcase_add_test(proc, process_i686);
	tcase_add_test(proc, process_errors);
	tcase_add_test(core, core_gcore_x64);
	tcase_add_test(core, core_gcore_i686);
	tcase_add_test(core, core_kernel_x64);
	tcase_add_test(core, core_qemu_arm64);
	tcase_add_test(core, core_not_cores);
	tcase_add_test(core, core_hostile);
	tcase_add_test(core, core_names_a_fifo);
	suite_add_tcase(s, proc);
	suite_add_tcase(s, core);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	remove_tmpdir();
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
