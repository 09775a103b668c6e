/*
 * swdeadlock - is a process (or a core) deadlocked, and who holds what?
 *
 *   swdeadlock [OPTIONS] -p PID
 *   swdeadlock [OPTIONS] --core CORE [--exe EXE]
 *
 * Runs the library's hang analysis (sw_hang_analyze_process or
 * sw_hang_analyze_core) and prints each deadlock on a line
 *
 *   deadlock: TID TID ...
 *
 * (the cycle's threads in wait-for order, from the lowest id), then what
 * each of its threads waits on and its stack, then every other thread's
 * class.  Exit status 0: no deadlock, 1: a deadlock, 2: an error, 3: no
 * deadlock found, but a thread's walk stopped early (its wait may have
 * been missed).  See swdeadlock(1).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stackwalk.h>
#include "frame_names.h"
#include "perf_map.h"
#include "target_errors.h"
#include "tool_options.h"

enum { EXIT_NO_DEADLOCK = 0, EXIT_DEADLOCK = 1, EXIT_ERROR = 2, EXIT_WALK_STOPPED = 3 };

static const char *progname = "swdeadlock";

struct options {
	const char *core, *exe, *debug_dirs;
	int pid, json, all;
	sw_hang_options hang;
	struct name_options names;
};

/* How frames and threads are named, after the analysis. */
struct naming {
	sw_names *names;                /* NULL: by the report's symbols only */
	const struct name_options *opt;
	int pid;                        /* a live process's, for its threads' names; 0 for a core */
	char core_name[16];             /* a core's process name (NT_PRPSINFO): its main thread's */
	int core_pid;
	struct perf_map perf;           /* a live process's /tmp/perf-PID.map, if it has one */
	char perf_path[64];
};

/*
 * A frame in no module that the process's perf map names (a JIT's code,
 * as perf names it): its name, and the offset of its PC in it.
 */
static const char *perf_map_frame(const struct naming *nm, const sw_hang_frame *f, int exact,
                                  uint64_t *offset)
{
	uint64_t at = exact || f->pc == 0 ? f->pc : f->pc - 1;
	const char *name;

	if (f->module || f->function || !(name = perf_map_name(&nm->perf, at, offset)))
		return NULL;
	*offset += f->pc - at;
	return name;
}

/* The module a frame is printed with: its file, the perf map that names it, or NULL. */
static const char *frame_module(const struct naming *nm, const sw_hang_frame *f, int exact)
{
	uint64_t off;

	return f->module ? f->module : perf_map_frame(nm, f, exact, &off) ? nm->perf_path : NULL;
}

/* The source-level frames at hang frame `f` (the innermost `exact`); 0 when unnamed. */
static size_t frame_names(const struct naming *nm, const sw_hang_frame *f, int exact,
                          struct named_frame *nf)
{
	size_t n = name_frames(nm->names, f->pc, exact, nm->opt, nf, NAMED_FRAMES_MAX);

	if (n == 0) {
		/* Not in the symbolizer's modules: the report's symbol, demangled, or the perf map's. */
		memset(nf, 0, sizeof *nf);
		nf->function = f->function && nm->names && !nm->opt->raw ?
		               sw_names_demangle(nm->names, f->function) : f->function;
		nf->offset = f->offset;
		nf->has_offset = f->function != NULL;
		if (!nf->function && (nf->function = perf_map_frame(nm, f, exact, &nf->offset)) != NULL)
			nf->has_offset = 1;
		n = 1;
	}
	return n;
}

/* A thread's name: a live one's comm, a core's main thread's NT_PRPSINFO name, or "". */
static void thread_name(const struct naming *nm, int tid, char *name, size_t len)
{
	name[0] = '\0';
	if (nm->pid)
		read_thread_name(nm->pid, tid, name, len);
	else if (nm->core_name[0] && tid == nm->core_pid)
		snprintf(name, len, "%s", nm->core_name);
}

static void print_thread_name(const struct naming *nm, int tid)
{
	char name[64];

	thread_name(nm, tid, name, sizeof name);
	if (!name[0])
		return;
	fputs(" \"", stdout);
	print_escaped(stdout, name);
	putchar('"');
}

/* ---- human output ------------------------------------------------------------ */

static void print_frames(const sw_hang_report *r, size_t i, const char *indent,
                         const struct naming *nm)
{
	int width = (int)sw_arch_pointer_size(sw_hang_report_arch(r)) * 2;
	sw_hang_thread t;
	size_t level = 0;

	if (sw_hang_report_thread(r, i, &t) != SW_OK)
		return;
	for (size_t k = 0; k < t.frames; k++) {
		struct named_frame nf[NAMED_FRAMES_MAX];
		sw_hang_frame f;
		size_t n;

		if (sw_hang_report_frame(r, i, k, &f) != SW_OK)
			break;
		n = frame_names(nm, &f, k == 0, nf);
		for (size_t j = 0; j < n; j++, level++) {
			printf("%s#%-2zu 0x%0*" PRIx64 " in ", indent, level, width, f.pc);
			print_function(stdout, nf[j].function, nf[j].has_offset, nf[j].offset);
			fputs(" (", stdout);
			print_escaped(stdout, frame_module(nm, &f, k == 0) ? frame_module(nm, &f, k == 0) : "??");
			printf(")%s", nf[j].inlined ? " inlined" : "");
			print_source(stdout, nf[j].file, nf[j].line, nf[j].column);
			putchar('\n');
		}
	}
	if (t.walk_status != SW_OK)
		printf("%sBacktrace stopped: %s\n", indent, sw_strerror(t.walk_status));
}

/* The first thread id of cycle `c`, or 0. */
static int cycle_first_tid(const sw_hang_report *r, int c)
{
	size_t first, len;
	sw_hang_thread t;

	if (c < 0 || sw_hang_report_cycle(r, (size_t)c, &first, NULL, 1, &len) != SW_OK ||
	    sw_hang_report_thread(r, first, &t) != SW_OK)
		return 0;
	return t.tid;
}

static void print_wait(const sw_hang_thread *t)
{
	if (t->lock_kind == SW_LOCK_NONE)
		return;
	printf(" waits on %s 0x%" PRIx64, sw_lock_kind_name(t->lock_kind), t->lock);
	if (t->owner && t->cls == SW_HANG_LOCK_NO_OWNER)
		printf(" held by %d, which is gone", t->owner);
	else if (t->owner)
		printf(" held by %d", t->owner);
	else
		printf(" with no owner%s", t->lock_kind == SW_LOCK_MUTEX ? "" : " (readers hold it)");
}

static void print_state(const sw_hang_thread *t)
{
	if (t->state)
		printf(" state %c", t->state);
	if (t->syscall >= 0)
		printf(" syscall %ld", t->syscall);
	if (t->wchan)
		printf(" wchan %s", t->wchan);
	if (t->state)
		printf(" cpu %.2fs (%u.%u%%)", (double)t->cpu_ns / 1e9, t->cpu_permille / 10,
		       t->cpu_permille % 10);
}

static void print_text(const sw_hang_report *r, const char *kind, const char *name, int all,
                       const struct naming *nm)
{
	size_t n = sw_hang_report_thread_count(r), ncycles = sw_hang_report_cycle_count(r);
	size_t *members = malloc((n ? n : 1) * sizeof *members);

	printf("%s %s (%s): %zu threads, %zu deadlock%s\n", kind, name,
	       sw_arch_name(sw_hang_report_arch(r)), n, ncycles, ncycles == 1 ? "" : "s");
	for (size_t c = 0; members && c < ncycles; c++) {
		size_t len = 0;

		if (sw_hang_report_cycle(r, c, members, NULL, n, &len) != SW_OK)
			continue;
		printf("deadlock:");
		for (size_t k = 0; k < len; k++) {
			sw_hang_thread t;

			if (sw_hang_report_thread(r, members[k], &t) == SW_OK)
				printf(" %d", t.tid);
		}
		printf("\n");
		for (size_t k = 0; k < len; k++) {
			sw_hang_thread t;

			if (sw_hang_report_thread(r, members[k], &t) != SW_OK)
				continue;
			printf("  thread %d", t.tid);
			print_thread_name(nm, t.tid);
			print_wait(&t);
			printf("\n");
			print_frames(r, members[k], "    ", nm);
		}
	}
	printf("threads:\n");
	for (size_t i = 0; i < n; i++) {
		sw_hang_thread t;

		if (sw_hang_report_thread(r, i, &t) != SW_OK)
			continue;
		printf("  %d %s", t.tid, sw_hang_class_name(t.cls));
		print_wait(&t);
		if (t.behind >= 0)
			printf(" (behind the deadlock of %d)", cycle_first_tid(r, t.behind));
		print_state(&t);
		if (t.walk_status != SW_OK)
			printf(" walk stopped: %s", sw_strerror(t.walk_status));
		print_thread_name(nm, t.tid);
		printf("\n");
		if (all || (t.cls != SW_HANG_DEADLOCKED && t.cls != SW_HANG_IDLE &&
		            t.cls != SW_HANG_RUNNING))
			print_frames(r, i, "    ", nm);
	}
	free(members);
}

/* ---- JSON -------------------------------------------------------------------- */

static void json_string(const char *s)
{
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;

		if (c == '"' || c == '\\')
			printf("\\%c", c);
		else if (c < 0x20)
			printf("\\u%04x", c);
		else
			putchar(c);
	}
	putchar('"');
}

static void json_uint_or_null(unsigned v)
{
	if (v)
		printf("%u", v);
	else
		fputs("null", stdout);
}

static void json_thread(const sw_hang_report *r, size_t i, const struct naming *nm)
{
	sw_hang_thread t;
	char name[64];
	size_t level = 0;

	if (sw_hang_report_thread(r, i, &t) != SW_OK)
		return;
	thread_name(nm, t.tid, name, sizeof name);
	printf("\n    {\"tid\": %d, \"name\": ", t.tid);
	json_string(name[0] ? name : NULL);
	printf(", \"class\": \"%s\", \"state\": ", sw_hang_class_name(t.cls));
	if (t.state)
		printf("\"%c\"", t.state);
	else
		printf("null");
	printf(", \"syscall\": %ld, \"wchan\": ", t.syscall);
	json_string(t.wchan);
	printf(", \"cpu_ns\": %" PRIu64 ", \"cpu_permille\": %u, \"lock\": ", t.cpu_ns,
	       t.cpu_permille);
	if (t.lock_kind != SW_LOCK_NONE)
		printf("{\"kind\": \"%s\", \"address\": \"0x%" PRIx64 "\", \"owner\": %d}",
		       sw_lock_kind_name(t.lock_kind), t.lock, t.owner);
	else
		printf("null");
	printf(", \"deadlock\": %d, \"behind_deadlock\": %d, \"walk_error\": ", t.cycle, t.behind);
	json_string(t.walk_status == SW_OK ? NULL : sw_strerror(t.walk_status));
	printf(", \"frames\": [");
	for (size_t k = 0; k < t.frames; k++) {
		struct named_frame nf[NAMED_FRAMES_MAX];
		sw_hang_frame f;
		size_t n;

		if (sw_hang_report_frame(r, i, k, &f) != SW_OK)
			break;
		n = frame_names(nm, &f, k == 0, nf);
		for (size_t j = 0; j < n; j++, level++) {
			printf("%s\n      {\"pc\": \"0x%" PRIx64 "\", \"function\": ", level ? "," : "", f.pc);
			json_string(nf[j].function);
			if (nf[j].function && nf[j].has_offset)
				printf(", \"offset\": %" PRIu64, nf[j].offset);
			printf(", \"module\": ");
			json_string(frame_module(nm, &f, k == 0));
			printf(", \"inlined\": %s, \"file\": ", nf[j].inlined ? "true" : "false");
			json_string(nf[j].file);
			printf(", \"line\": ");
			json_uint_or_null(nf[j].file ? nf[j].line : 0);
			printf(", \"column\": ");
			json_uint_or_null(nf[j].file ? nf[j].column : 0);
			printf("}");
		}
	}
	printf("%s]}", t.frames ? "\n    " : "");
}

static void print_json(const sw_hang_report *r, const char *kind, const char *name,
                       const struct naming *nm)
{
	size_t n = sw_hang_report_thread_count(r), ncycles = sw_hang_report_cycle_count(r);
	size_t *members = malloc((n ? n : 1) * sizeof *members);
	uint64_t *locks = malloc((n ? n : 1) * sizeof *locks);

	printf("{\"target\": \"%s\", \"name\": ", kind);
	json_string(name);
	printf(", \"arch\": \"%s\", \"deadlocks\": [", sw_arch_name(sw_hang_report_arch(r)));
	for (size_t c = 0; members && locks && c < ncycles; c++) {
		size_t len = 0;

		if (sw_hang_report_cycle(r, c, members, locks, n, &len) != SW_OK)
			continue;
		printf("%s\n    {\"threads\": [", c ? "," : "");
		for (size_t k = 0; k < len; k++) {
			sw_hang_thread t;

			sw_hang_report_thread(r, members[k], &t);
			printf("%s%d", k ? ", " : "", t.tid);
		}
		printf("], \"locks\": [");
		for (size_t k = 0; k < len; k++)
			printf("%s\"0x%" PRIx64 "\"", k ? ", " : "", locks[k]);
		printf("]}");
	}
	printf("%s], \"threads\": [", ncycles ? "\n  " : "");
	for (size_t i = 0; i < n; i++) {
		if (i)
			putchar(',');
		json_thread(r, i, nm);
	}
	printf("%s]}\n", n ? "\n  " : "");
	free(members);
	free(locks);
}

/* ---- main -------------------------------------------------------------------- */

/*
 * Whether a thread's stack is short: where no deadlock was found, one of
 * its waits may lie in the frames its walk did not reach.
 */
static int any_walk_stopped(const sw_hang_report *r)
{
	for (size_t i = 0; i < sw_hang_report_thread_count(r); i++) {
		sw_hang_thread t;

		if (sw_hang_report_thread(r, i, &t) == SW_OK && t.walk_status != SW_OK)
			return 1;
	}
	return 0;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [OPTIONS] -p PID\n"
	        "       %s [OPTIONS] --core CORE [--exe EXE]\n"
	        "Find deadlocks and hung threads in a process or a core file.\n"
	        "  -p, --pid PID        analyze the live process PID (ptrace)\n"
	        "  -c, --core CORE      analyze the core file CORE\n"
	        "  -e, --exe EXE        the program's executable (cores that do not name it: qemu-user's)\n"
	        "  -j, --json           print JSON\n"
	        "  -a, --all            print every thread's stack\n"
	        "      --sample MS      sample CPU time MS milliseconds apart (default 250; 0: not)\n"
	        "      --busy PERMILLE  the share of a CPU that makes a thread busy (default 500)\n"
	        "      --frames N       frames kept per thread (default 64)\n"
	        "      --raw            function names as the files have them, not demangled\n"
	        "      --no-inlines     no frames for inlined calls\n"
	        "      --no-source      no source file and line\n"
	        "      --debug-dir DIRS where separate debug files are (colon-separated;\n"
	        "                       default :.debug:/usr/lib/debug)\n"
	        "  -h, --help           print this help\n"
	        "      --version        print the version\n"
	        "Exit status: 0 no deadlock, 1 a deadlock, 2 an error, 3 no deadlock found but a\n"
	        "thread's walk stopped early.\n", progname, progname);
}

static int parse_uint(const char *s, unsigned max, unsigned *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	v = strtoul(s ? s : "", &end, 10);
	if (!s || !*s || *end || errno || v > max) {
		fprintf(stderr, "%s: bad number '%s'\n", progname, s ? s : "");
		return -1;
	}
	*out = (unsigned)v;
	return 0;
}

static int parse_args(int argc, char **argv, struct options *o)
{
	tool_standard_options(argc, argv, progname, usage);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		unsigned u;

		if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
			usage(stdout);
			exit(EXIT_NO_DEADLOCK);
		} else if (!strcmp(a, "-j") || !strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "-a") || !strcmp(a, "--all")) {
			o->all = 1;
		} else if (!strcmp(a, "--raw")) {
			o->names.raw = 1;
		} else if (!strcmp(a, "--no-inlines")) {
			o->names.no_inlines = 1;
		} else if (!strcmp(a, "--no-source")) {
			o->names.no_source = 1;
		} else if (!strcmp(a, "--debug-dir")) {
			if (!(o->debug_dirs = v))
				return -1;
			i++;
		} else if (!strcmp(a, "-p") || !strcmp(a, "--pid")) {
			if (parse_uint(v, 0x7fffffff, &u) != 0 || u == 0)
				return -1;
			o->pid = (int)u;
			i++;
		} else if (!strcmp(a, "-c") || !strcmp(a, "--core")) {
			if (!(o->core = v))
				return -1;
			i++;
		} else if (!strcmp(a, "-e") || !strcmp(a, "--exe")) {
			if (!(o->exe = v))
				return -1;
			i++;
		} else if (!strcmp(a, "--sample")) {
			if (parse_uint(v, 60000, &o->hang.sample_ms) != 0)
				return -1;
			i++;
		} else if (!strcmp(a, "--busy")) {
			if (parse_uint(v, 1000, &o->hang.busy_permille) != 0)
				return -1;
			i++;
		} else if (!strcmp(a, "--frames")) {
			if (parse_uint(v, 1024, &o->hang.max_frames) != 0)
				return -1;
			i++;
		} else {
			fprintf(stderr, "%s: unknown argument '%s'\n", progname, a);
			return -1;
		}
	}
	if ((o->pid != 0) == (o->core != NULL)) {
		fprintf(stderr, "%s: give one of -p PID and --core CORE\n", progname);
		return -1;
	}
	if (o->exe && !o->core) {
		fprintf(stderr, "%s: --exe goes with --core\n", progname);
		return -1;
	}
	return 0;
}

static sw_status analyze_core(const struct options *o, sw_hang_report **r, struct naming *nm)
{
	sw_core *core = NULL;
	const char *name, *why;
	sw_status st;

	errno = 0;      /* target_file_failure reads the cause from it */
	if ((st = sw_core_open(o->core, &core)) != SW_OK) {
		fprintf(stderr, "%s: %s: %s\n", progname, o->core, target_file_failure(st, 1));
		return st;
	}
	/* SW_E_EXISTS: the core names the executable already. */
	errno = 0;
	if (o->exe && (st = sw_core_add_executable(core, o->exe)) != SW_OK && st != SW_E_EXISTS) {
		fprintf(stderr, "%s: %s: %s\n", progname, o->exe, target_file_failure(st, 0));
		sw_core_close(core);
		return st;
	}
	/* The dynamic linker of a core that names no file (qemu's), as swstack adds it. */
	errno = 0;
	if (o->exe && st == SW_OK && (why = target_loader_failure(sw_core_add_loader(core, NULL))))
		fprintf(stderr, "%s: warning: %s: its dynamic linker is not loaded: %s\n", progname,
		        o->exe, why);
	/* Nor its shared libraries: those on the linker's list, as gdb finds them. */
	if (o->exe && st == SW_OK)
		target_add_libraries(core, NULL, progname);
	if ((st = sw_hang_analyze_core(core, &o->hang, r)) != SW_OK)
		fprintf(stderr, "%s: %s: %s\n", progname, o->core, sw_strerror(st));
	if ((name = sw_core_process_name(core, &nm->core_pid)) != NULL)
		snprintf(nm->core_name, sizeof nm->core_name, "%s", name);
	sw_core_close(core);
	return st;
}

int main(int argc, char **argv)
{
	struct options o;
	struct naming nm;
	sw_hang_report *r = NULL;
	char name[32];
	sw_status st;
	int rc;

	memset(&o, 0, sizeof o);
	memset(&nm, 0, sizeof nm);
	o.hang.sample_ms = 250;
	if (parse_args(argc, argv, &o) != 0) {
		usage(stderr);
		return EXIT_ERROR;
	}
	if (o.core) {
		st = analyze_core(&o, &r, &nm);
	} else {
		snprintf(name, sizeof name, "%d", o.pid);
		if ((st = sw_hang_analyze_process(o.pid, &o.hang, &r)) != SW_OK)
			fprintf(stderr, "%s: pid %d: %s\n", progname, o.pid, target_attach_failure(st, o.pid));
	}
	if (st != SW_OK)
		return EXIT_ERROR;
	/* Names are looked up after the analysis, which walked without them. */
	nm.opt = &o.names;
	nm.pid = o.pid;
	if (o.pid) {
		const char *why;

		snprintf(nm.perf_path, sizeof nm.perf_path, "/tmp/perf-%d.map", o.pid);
		if (access(nm.perf_path, F_OK) == 0 && perf_map_load(&nm.perf, nm.perf_path, &why) != 0)
			fprintf(stderr, "%s: warning: %s: %s\n", progname, nm.perf_path, why);
	}
	if (sw_names_create(o.debug_dirs, &nm.names) == SW_OK &&
	    (o.core ? sw_names_add_core(nm.names, o.core, o.exe) : sw_names_add_process(nm.names, o.pid)) != SW_OK) {
		sw_names_free(nm.names);
		nm.names = NULL;
	}
	if (o.json)
		print_json(r, o.core ? "core" : "process", o.core ? o.core : name, &nm);
	else
		print_text(r, o.core ? "core" : "process", o.core ? o.core : name, o.all, &nm);
	rc = sw_hang_report_cycle_count(r) ? EXIT_DEADLOCK :
	     any_walk_stopped(r) ? EXIT_WALK_STOPPED : EXIT_NO_DEADLOCK;
	sw_names_free(nm.names);
	perf_map_free(&nm.perf);
	sw_hang_report_free(r);
	if (fflush(stdout) != 0 || ferror(stdout))
		return EXIT_ERROR;
	return rc;
}
