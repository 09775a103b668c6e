/*
 * swstack - print every thread's backtrace of a live process or a core
 * file, native frames included, through the library's public API.
 *
 *   swstack [OPTIONS] -p PID
 *   swstack [OPTIONS] --core CORE [--exe EXE]
 *
 * Every file-backed mapping of the target is loaded once as a native
 * module (its CFI imported into SWU as walks need it, its symbols kept) at
 * the load bias the mapping gives, and the vDSO is loaded from a copy of
 * its image in the target's memory.  A file is loaded when a walk first
 * reaches its code (or up front with -v, which reports each load): the
 * thread is walked again with it until no walk reaches another, so that a
 * process that maps many big libraries pays for those its stacks run in.  Each thread is walked from its registers with
 * SW_WALK_NATIVE_FRAMES and, unless --no-fp, SW_WALK_FRAME_POINTER_FALLBACK,
 * and printed as gdb prints a backtrace, one "#N 0xPC" line per frame.
 *
 * With --image MODULE=IMAGE (repeatable) nothing is loaded as a native
 * module: each SWU image (written by swimport) is registered with
 * sw_codemap_add_image() as managed code at its module's load bias, and
 * the threads are walked through the managed path alone, without
 * SW_WALK_NATIVE_FRAMES; functions are named by the images' method records.
 * The vDSO's image is made from its copy in the target's memory, and a
 * signal trampoline nothing describes gets a managed entry of its own, so
 * that no thread is left out of the managed walk.  See swstack(1).
 *
 * Code a JIT registered for gdb (__jit_debug_descriptor: LLVM's lli, among
 * others) is read from the target as gdb reads it (sw_gdbjit_read): each
 * object joins the map as a module, which unwinds and names its frames.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>
#include <stackwalk.h>
#include "frame_names.h"
#include "remote_map.h"
#include "jit_lists.h"
#include "perf_map.h"
#include "module_layout.h"
#include "read_bounded.h"
#include "swstack_elf.h"
#include "target_errors.h"
#include "tool_options.h"

#define AT_SYSINFO_EHDR_TYPE 33         /* the vDSO's address, in the auxiliary vector */
#define MAX_TRAMPOLINES 16              /* signal trampolines found by their code */
#define MAX_REWALKS 4                   /* walks of one thread that find a new trampoline */
#define MAX_MODULES 4096                /* files loaded as modules: a hard limit, swstack(1) */

/* Exit codes (documented in swstack(1)). */
enum { EXIT_WALKED = 0, EXIT_TARGET = 1, EXIT_USAGE = 2, EXIT_WALK_FAILED = 3 };

static const char *progname = "swstack";

/* What a core and a process have in common, as seen by this tool. */
struct target {
	const char *kind;               /* "core" or "process" */
	const char *name;               /* the core's path, or the pid */
	sw_arch arch;
	unsigned threads, files;
	sw_status (*thread)(const void *t, unsigned i, sw_context *ctx, int *tid);
	sw_status (*file)(const void *t, unsigned i, sw_mapped_file *f);
	sw_status (*bounds)(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi);
	const sw_memory *mem;
	const void *handle;
	unsigned char *auxv;            /* the auxiliary vector, or NULL */
	size_t auxv_len;
	unsigned auxv_word;
};

/* One mapped file (or the vDSO) and the module loaded from it. */
struct module {
	char *path;
	uint64_t lo, hi;                /* the target addresses its mappings cover */
	int code;                       /* a mapping of it is executable, or the target does not say */
	int duplicate;                  /* another mapping of the same file is the one loaded */
	uint64_t bias;                  /* when module_layout placed it: */
	char *no_bias;                  /* why the file has no bias here (swstack_elf_file_bias), or NULL */
	sw_module *m;                   /* NULL if it could not be loaded (or is pending) */
	int pending;                    /* to be loaded when a walk reaches its code (load_reached) */
	int registered;
	sw_image *img;                  /* --image: its SWU image, registered as managed code */
	uint64_t m_bias;                /* --image: `m` (symbols only) is loaded at bias 0;
	                                 * its addresses are this much below the target's */
};

/* One --image MODULE=IMAGE. */
struct image_opt {
	char *module;                   /* a mapped path, or a file name (no '/') */
	const char *file;
	int used;
};

/* One frame as printed: a frame of the walk, or a call inlined into one. */
struct frame {
	uint64_t pc;
	const char *function;           /* NULL when nothing names it */
	uint64_t offset;                /* pc - the symbol's start, when has_offset */
	int has_offset;
	const char *module;             /* NULL when no module contains it */
	sw_frame_trust trust;
	int trampoline;                 /* the kernel's signal trampoline */
	uint64_t runtime_frame;         /* non-zero: not a frame but a runtime's Frame, at this address */
	uint32_t frame_type;            /* its SW_FRAME_* type */
	int exact;                      /* pc is where the frame is, not a return address */
	int inlined;                    /* a call inlined into the next frame's code */
	const char *file;               /* source file, NULL when unknown */
	unsigned line, column;
};

/* One thread's walk. */
struct walk {
	struct frame *frames;
	size_t count, cap;
	sw_walk_error err;
	int failed;
};

struct options {
	const char *core, *exe, *sysroot, *debug_dirs, *perf_map;
	int pid, json, no_fp, verbose;
	struct name_options names;
	struct image_opt *images;       /* --image, in the order given */
	size_t nimages;
};

struct tool {
	struct options opt;
	struct target t;
	sw_codemap *map;
	sw_names *names;                /* NULL with --image: the images name their methods */
	struct module *mods;
	size_t nmods, mods_cap;
	/* Trampolines registered from their code, and the records they point to. */
	sw_native_function tramp[MAX_TRAMPOLINES];
	unsigned ntramp;
	struct remote_map remote;       /* a runtime's published code map, when the target has one */
	struct jit_lists jit;           /* the objects JITs registered for gdb */
	struct perf_map perf;           /* names of code nothing else describes (a JIT's perf map) */
	char perf_path[64];             /* the process's own map: /tmp/perf-PID.map */
	const char *core_name;          /* a core's process name (NT_PRPSINFO), its main thread's */
	int core_pid;
	int exit_code;
};

/* ---- targets ------------------------------------------------------------------ */

static sw_status core_thread(const void *t, unsigned i, sw_context *c, int *tid)
{ return sw_core_thread(t, i, c, tid); }
static sw_status core_file(const void *t, unsigned i, sw_mapped_file *f)
{ return sw_core_module(t, i, f); }
static sw_status core_bounds(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi)
{ return sw_core_stack_bounds(t, sp, lo, hi); }
static sw_status proc_thread(const void *t, unsigned i, sw_context *c, int *tid)
{ return sw_process_thread(t, i, c, tid); }
static sw_status proc_file(const void *t, unsigned i, sw_mapped_file *f)
{ return sw_process_module(t, i, f); }
static sw_status proc_bounds(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi)
{ return sw_process_stack_bounds(t, sp, lo, hi); }

/* Read a whole (small) file such as /proc/PID/auxv; NULL on failure. */
static unsigned char *read_small_file(const char *path, size_t *len)
{
	size_t cap = 4096, n = 0;
	unsigned char *buf = malloc(cap);
	int fd = open(path, O_RDONLY);

	if (fd < 0 || !buf) {
		if (fd >= 0)
			close(fd);
		free(buf);
		return NULL;
	}
	for (;;) {
		ssize_t got = read(fd, buf + n, cap - n);

		if (got <= 0)
			break;
		n += (size_t)got;
		if (n == cap) {
			unsigned char *p = cap < (1u << 20) ? realloc(buf, cap * 2) : NULL;

			if (!p)
				break;
			buf = p;
			cap *= 2;
		}
	}
	close(fd);
	*len = n;
	return buf;
}

static int open_core(struct tool *tl, sw_core **core)
{
	const char *why;
	sw_status st;

	errno = 0;
	if ((st = sw_core_open(tl->opt.core, core)) != SW_OK) {
		fprintf(stderr, "%s: %s: %s\n", progname, tl->opt.core, target_file_failure(st, 1));
		return -1;
	}
	/* SW_E_EXISTS: the core names the executable already (gcore's and the kernel's do). */
	errno = 0;
	if (tl->opt.exe && (st = sw_core_add_executable(*core, tl->opt.exe)) != SW_OK &&
	    st != SW_E_EXISTS) {
		fprintf(stderr, "%s: %s: %s\n", progname, tl->opt.exe, target_file_failure(st, 0));
		sw_core_close(*core);
		*core = NULL;
		return -1;
	}
	/*
	 * A core that names no file (qemu's) names no dynamic linker either: the
	 * one the executable's PT_INTERP names, at AT_BASE.  Not there (a static
	 * program, a core that names it) is no news; a refusal is a warning, and
	 * a walk through the linker's code then stops with a reason.
	 */
	errno = 0;
	if (tl->opt.exe && st == SW_OK &&
	    (why = target_loader_failure(sw_core_add_loader(*core, tl->opt.sysroot))))
		fprintf(stderr, "%s: warning: %s: its dynamic linker is not loaded: %s\n", progname,
		        tl->opt.exe, why);
	/* Nor its shared libraries: those on the linker's list, as gdb finds them. */
	if (tl->opt.exe && st == SW_OK)
		target_add_libraries(*core, tl->opt.sysroot, progname);
	tl->t = (struct target){ "core", tl->opt.core, sw_core_arch(*core), sw_core_thread_count(*core),
	                         sw_core_module_count(*core), core_thread, core_file, core_bounds,
	                         sw_core_memory(*core), *core, NULL, 0, 0 };
	tl->t.auxv = swstack_core_auxv(tl->opt.core, &tl->t.auxv_len, &tl->t.auxv_word);
	tl->core_name = sw_core_process_name(*core, &tl->core_pid);
	return 0;
}

static int attach_process(struct tool *tl, sw_process **proc, char *name, size_t name_len)
{
	char path[64];
	sw_status st = sw_process_attach(tl->opt.pid, proc);

	snprintf(name, name_len, "%d", tl->opt.pid);
	if (st != SW_OK) {
		fprintf(stderr, "%s: pid %d: %s\n", progname, tl->opt.pid, target_attach_failure(st, tl->opt.pid));
		return -1;
	}
	tl->t = (struct target){ "process", name, sw_process_arch(*proc),
	                         sw_process_thread_count(*proc), sw_process_module_count(*proc),
	                         proc_thread, proc_file, proc_bounds, sw_process_memory(*proc),
	                         *proc, NULL, 0, 0 };
	/* Threads the library did not stop (vfork parents, long D sleeps): reported, not walked. */
	for (unsigned i = 0; i < sw_process_unstopped_count(*proc); i++) {
		int tid = 0;
		char state = '?';

		sw_process_unstopped(*proc, i, &tid, &state);
		fprintf(stderr, "%s: LWP %d (state %c) not stopped: it waits for its vfork child "
		        "or sleeps uninterruptibly; not walked\n", progname, tid, state);
		tl->exit_code = EXIT_WALK_FAILED;
	}
	snprintf(path, sizeof path, "/proc/%d/auxv", tl->opt.pid);
	tl->t.auxv = read_small_file(path, &tl->t.auxv_len);
	tl->t.auxv_word = sw_arch_pointer_size(tl->t.arch);
	return 0;
}

/* ---- modules ------------------------------------------------------------------ */

static struct module *add_module(struct tool *tl, const char *path, uint64_t lo, uint64_t hi)
{
	struct module *m;

	if (tl->nmods == tl->mods_cap) {
		size_t cap = tl->mods_cap ? tl->mods_cap * 2 : 32;
		struct module *p = realloc(tl->mods, cap * sizeof *p);

		if (!p)
			return NULL;
		tl->mods = p;
		tl->mods_cap = cap;
	}
	m = &tl->mods[tl->nmods];
	memset(m, 0, sizeof *m);
	if (!(m->path = strdup(path)))
		return NULL;
	m->lo = lo;
	m->hi = hi;
	tl->nmods++;
	return m;
}

/* The file to read for a target path: under --sysroot when it exists there. */
static const char *host_path(const struct tool *tl, const char *path, char *buf, size_t len)
{
	if (tl->opt.sysroot && (size_t)snprintf(buf, len, "%s%s", tl->opt.sysroot, path) < len &&
	    access(buf, R_OK) == 0)
		return buf;
	return path;
}

/*
 * A module that is not loaded: a warning when code may lie in it; a file
 * none of whose mappings is executable (locale archives, gconv's cache,
 * fonts) holds none a walk could need, and is listed only with -v.
 */
static void warn_module(const struct tool *tl, const struct module *m, const char *path,
                        const char *why)
{
	if (m && !m->code) {
		if (tl->opt.verbose)
			fprintf(stderr, "%s: %s: not loaded, no code mapped: %s\n", progname, path, why);
	} else if (tl->opt.verbose || !tl->opt.json) {
		fprintf(stderr, "%s: warning: %s: %s\n", progname, path, why);
	}
}

/* Load and register one module (m->m NULL when it cannot be loaded). */
static void load_module(struct tool *tl, struct module *m, const char *file, const void *image,
                        size_t size)
{
	sw_arch arch = SW_ARCH_NONE;
	sw_status st;

	errno = 0;
	st = image ? sw_module_load_image(image, size, m->bias, &arch, &m->m)
	           : sw_module_load_flags(file, m->bias, SW_MODULE_LAZY, &arch, &m->m);
	if (st != SW_OK) {
		m->m = NULL;
		warn_module(tl, m, m->path, target_file_failure(st, 0));
		return;
	}
	if (arch != tl->t.arch) {
		warn_module(tl, m, m->path, "not the target's architecture");
		sw_module_free(m->m);
		m->m = NULL;
		return;
	}
	if ((st = sw_module_register(m->m, tl->map)) != SW_OK) {
		warn_module(tl, m, m->path, sw_strerror(st));
		return;
	}
	m->registered = 1;
	if (tl->opt.verbose) {
		sw_module_import_stats s;

		if (sw_module_stats(m->m, &s) == SW_OK)
			fprintf(stderr, "%s: %s at 0x%" PRIx64 " (bias 0x%" PRIx64 "): %u of %u FDEs "
			        "imported, %u skipped, %u symbols\n", progname, m->path, m->lo, m->bias,
			        s.functions, s.fdes, s.skipped, s.symbols);
	}
}

/* The --image given for a mapped path: the same path, or its file name. */
static struct image_opt *image_for(const struct tool *tl, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	for (size_t i = 0; i < tl->opt.nimages; i++) {
		struct image_opt *o = &tl->opt.images[i];

		if (strcmp(o->module, path) == 0 || (!strchr(o->module, '/') && strcmp(o->module, base) == 0))
			return o;
	}
	return NULL;
}

/*
 * --image: register the module's SWU image as managed code (flags 0) at its
 * load bias.  A module without one is not loaded: its code is in no map.
 */
static void load_image(struct tool *tl, struct module *m)
{
	struct image_opt *o = image_for(tl, m->path);
	unsigned char *buf;
	const char *why;
	size_t len = 0;
	sw_status st;

	if (!o) {
		if (tl->opt.verbose)
			fprintf(stderr, "%s: %s: no image, not loaded\n", progname, m->path);
		return;
	}
	o->used = 1;
	if (!(buf = read_bounded(o->file, &len, &why)) || len == 0) {
		warn_module(tl, NULL, o->file, buf ? "empty" : why);
		free(buf);
		return;
	}
	st = sw_codemap_add_image(tl->map, buf, len, m->bias, 0, &m->img);
	free(buf);
	if (st != SW_OK) {
		m->img = NULL;
		warn_module(tl, NULL, o->file, sw_strerror(st));
		return;
	}
	if (sw_image_arch(m->img) != tl->t.arch) {
		warn_module(tl, NULL, o->file, "not the target's architecture");
		sw_codemap_remove_image(tl->map, m->img);
		sw_codemap_synchronize(tl->map);
		sw_image_free(m->img);
		m->img = NULL;
		return;
	}
	if (tl->opt.verbose) {
		const sw_image_method *ms;
		size_t n = 0;

		sw_image_methods(m->img, &ms, &n);
		fprintf(stderr, "%s: %s at 0x%" PRIx64 " (bias 0x%" PRIx64 "): image %s, %zu methods\n",
		        progname, m->path, m->lo, m->bias, o->file, n);
	}
}

/* module_layout's bias callback: the file's program headers, read under --sysroot. */
static const char *file_bias(void *arg, const char *path, uint64_t start, uint64_t offset,
                             uint64_t *bias, uint64_t *load_end)
{
	char buf[4096];

	return swstack_elf_file_bias(host_path(arg, path, buf, sizeof buf), start, offset, bias, load_end);
}

/* The modules of module_layout as this tool's, with the warnings for files mapped more than once. */
static int take_layout(struct tool *tl, struct module_layout *ml)
{
	for (size_t i = 0; i < ml->count; i++) {
		struct layout_module *l = &ml->mods[i];
		struct module *m = add_module(tl, l->path, l->lo, l->hi);

		if (!m)
			return -1;
		m->code = l->code;
		m->duplicate = l->duplicate;
		m->bias = l->bias;
		m->no_bias = l->no_bias;
		l->no_bias = NULL;
	}
	for (size_t i = 0; i < ml->count; i++) {
		const struct layout_module *l = ml->by_path[i];
		char why[96];

		if (l->duplicate || l->copies_with_code == 0)
			continue;
		snprintf(why, sizeof why, "mapped at %zu places; loaded at 0x%" PRIx64 " only", l->copies, l->lo);
		warn_module(tl, NULL, l->path, why);
	}
	return 0;
}

/*
 * The mapped files, grouped into modules (module_layout.c: a file mapped
 * at several places is loaded at one of them, with one warning per file),
 * each loaded at the bias its file's program headers give.
 */
static int load_files(struct tool *tl)
{
	sw_mapped_file *files = malloc((tl->t.files ? tl->t.files : 1) * sizeof *files);
	struct module_layout ml = { NULL, 0, NULL };
	size_t nfiles = 0, loaded = 0;
	int err;

	if (!files)
		return -1;
	for (unsigned i = 0; i < tl->t.files; i++)
		nfiles += tl->t.file(tl->t.handle, i, &files[nfiles]) == SW_OK;
	err = swi_module_layout_build(&ml, files, nfiles, MAX_MODULES, file_bias, tl);
	if (!err) {
		err = take_layout(tl, &ml);
		swi_module_layout_free(&ml);
	}
	free(files);
	if (err)
		return -1;
	for (size_t i = 0; i < tl->nmods; i++) {
		struct module *m = &tl->mods[i];
		const char *file, *why;
		char buf[4096];

		if (m->duplicate)
			continue;
		if (++loaded > MAX_MODULES) {
			snprintf(buf, sizeof buf, "over %d files mapped: this one and those above it "
			         "are not loaded", MAX_MODULES);
			warn_module(tl, NULL, m->path, buf);
			break;
		}
		file = host_path(tl, m->path, buf, sizeof buf);
		if ((why = m->no_bias) != NULL && strcmp(why, swstack_elf_jitdump) == 0) {
			if (tl->opt.verbose)
				fprintf(stderr, "%s: %s: not loaded: %s\n", progname, m->path, why);
		} else if (why) {
			warn_module(tl, m, m->path, why);
		}
		else if (tl->opt.nimages)
			load_image(tl, m);
		else if (!tl->opt.verbose)
			m->pending = 1;
		else
			load_module(tl, m, file, NULL, 0);
	}
	for (size_t i = 0; i < tl->opt.nimages; i++)
		if (!tl->opt.images[i].used)
			warn_module(tl, NULL, tl->opt.images[i].module, "the target maps no such module");
	return 0;
}

/*
 * --image: the vDSO has no file for swimport, so its SWU image is made here
 * the way swimport makes one (the CFI of the ELF image copied out of the
 * target, instruction analysis for the rest) and registered as managed
 * code like the others.  On i386 the threads blocked in a system call sit
 * in its __kernel_vsyscall, and its signal trampolines carry
 * SW_CODE_SIGNAL_TRAMPOLINE into the image.
 */
static void load_vdso_image(struct tool *tl, struct module *m, const unsigned char *elf, size_t size)
{
	sw_arch arch = SW_ARCH_NONE;
	sw_module *mod = NULL;
	unsigned char *buf = NULL;
	size_t len = 0;
	sw_status st;

	st = sw_module_load_image_flags(elf, size, 0, SW_MODULE_ANALYZE, &arch, &mod);
	if (st == SW_OK && arch != tl->t.arch) {
		warn_module(tl, m, m->path, "not the target's architecture");
		sw_module_free(mod);
		return;
	}
	if (st == SW_OK && (st = sw_module_write_image(mod, NULL, 0, &len)) == SW_E_LIMIT && len > 0)
		st = (buf = malloc(len)) ? sw_module_write_image(mod, buf, len, &len) : SW_E_NOMEM;
	if (st == SW_OK)
		st = sw_codemap_add_image(tl->map, buf, len, m->bias, 0, &m->img);
	free(buf);
	if (st != SW_OK) {
		sw_module_free(mod);
		m->img = NULL;
		warn_module(tl, m, m->path, sw_strerror(st));
		return;
	}
	/*
	 * Kept, not registered, for its symbols: the image names an entry by
	 * the symbol at its start, and the vDSO's trampolines' CFI starts a
	 * byte before theirs.  (Loaded at bias 0: symbolize() asks it for
	 * addresses less the bias.)
	 */
	m->m = mod;
	m->m_bias = m->bias;
	if (tl->opt.verbose) {
		const sw_image_method *ms;
		size_t n = 0;

		sw_image_methods(m->img, &ms, &n);
		fprintf(stderr, "%s: %s at 0x%" PRIx64 " (bias 0x%" PRIx64 "): image from memory, "
		        "%zu methods\n", progname, m->path, m->lo, m->bias, n);
	}
}

/* The vDSO: no file, so its image is copied out of the target's memory. */
static int load_vdso(struct tool *tl)
{
	unsigned char head[64], *image;
	uint64_t base, delta;
	struct module *m;
	size_t size;

	if (!tl->t.auxv || swstack_auxv_find(tl->t.auxv, tl->t.auxv_len, tl->t.auxv_word,
	                                     AT_SYSINFO_EHDR_TYPE, &base) != 0 || base == 0)
		return 0;
	if (sw_memory_read(tl->t.mem, base, head, sizeof head) != SW_OK ||
	    (size = swstack_elf_headers_size(head, sizeof head)) < sizeof head)
		return 0;
	if (!(image = malloc(size)))
		return -1;
	/* First the headers, to learn the image's extent; then all of it. */
	if (sw_memory_read(tl->t.mem, base, image, size) == SW_OK) {
		size_t whole = swstack_elf_image_size(image, size);
		unsigned char *p = whole > size ? realloc(image, whole) : image;

		if (!p) {
			free(image);
			return -1;
		}
		image = p;
		if (whole > size && sw_memory_read(tl->t.mem, base, image, whole) != SW_OK)
			whole = 0;
		if (whole >= size && swstack_elf_delta(image, whole, 0, &delta) == 0 &&
		    (m = add_module(tl, "[vdso]", base, base + whole)) != NULL) {
			m->bias = base - delta;
			m->code = 1;
			if (tl->opt.nimages)
				load_vdso_image(tl, m, image, whole);
			else
				load_module(tl, m, NULL, image, whole);
		}
	}
	free(image);
	return 0;
}

static const struct module *module_at(const struct tool *tl, uint64_t addr)
{
	for (size_t i = 0; i < tl->nmods; i++)
		if (addr >= tl->mods[i].lo && addr < tl->mods[i].hi)
			return &tl->mods[i];
	return NULL;
}

static void unload_modules(struct tool *tl)
{
	for (size_t i = 0; i < tl->nmods; i++) {
		if (tl->mods[i].img)
			sw_codemap_remove_image(tl->map, tl->mods[i].img);
		else if (tl->mods[i].registered)
			sw_module_unregister(tl->mods[i].m, tl->map);
	}
	for (unsigned i = 0; i < tl->ntramp; i++)
		sw_codemap_remove(tl->map, tl->tramp[i].start);
	sw_codemap_synchronize(tl->map);
	for (size_t i = 0; i < tl->nmods; i++) {
		sw_image_free(tl->mods[i].img);
		sw_module_free(tl->mods[i].m);
		free(tl->mods[i].path);
		free(tl->mods[i].no_bias);
	}
	free(tl->mods);
	tl->mods = NULL;
	tl->nmods = 0;
}

/* ---- a runtime's published code map ------------------------------------------ */

/*
 * The module that defines SW_REMOTE_SYMBOL (the library, or a program
 * linked with it) holds the runtime's published code map: its methods join
 * the map, its threads' Frame heads the walks (stackwalk-remote(5)).
 */
static void find_published(struct tool *tl)
{
	struct remote_map *rm = &tl->remote;
	sw_status st;

	for (size_t i = 0; i < tl->nmods && !rm->descriptor; i++) {
		char buf[4096];
		uint64_t value;

		if (tl->mods[i].path[0] != '[' &&
		    remote_map_symbol(host_path(tl, tl->mods[i].path, buf, sizeof buf), SW_REMOTE_SYMBOL,
		                      &value) == 0) {
			rm->descriptor = tl->mods[i].bias + value;
			rm->module = tl->mods[i].path;
		}
	}
	if (!rm->descriptor)
		return;
	st = remote_map_open(rm, tl->t.mem, tl->t.arch, tl->map);
	/* Nothing published (a program that links the library but publishes nothing) is no news. */
	if (st != SW_OK && (st != SW_E_NOTFOUND || tl->opt.verbose))
		fprintf(stderr, "%s: warning: the code map published in %s: %s\n", progname, rm->module,
		        sw_strerror(st));
	else if (st == SW_OK && tl->opt.verbose)
		fprintf(stderr, "%s: %s publishes a code map: %zu methods%s\n", progname, rm->module,
		        sw_remote_method_count(rm->r),
		        sw_remote_flags(rm->r) & SW_REMOTE_MID_UPDATE ? " (caught mid-update)" : "");
}

/* ---- code registered for gdb (the GDB JIT interface) ------------------------- */

/*
 * Every mapped file that defines __jit_debug_descriptor (LLVM's library,
 * a JIT's program, libstackwalk) has a list of its own, as gdb reads
 * them: each is read, its objects registered as modules.  Not with
 * --image, whose walks take managed code only.
 */
/*
 * The perf map that names code in no module: --perf-map's, or for a
 * process the one perf itself would read, /tmp/perf-PID.map, if there is
 * one.  Read once the process is stopped, so that it lists all the code
 * there is (a JIT writes a line before the code runs).
 */
static void load_perf_map(struct tool *tl)
{
	const char *path = tl->opt.perf_map, *why;

	if (!path && tl->opt.pid) {
		snprintf(tl->perf_path, sizeof tl->perf_path, "/tmp/perf-%d.map", tl->opt.pid);
		path = tl->perf_path;
		if (access(path, F_OK) != 0)
			return;
	}
	if (!path)
		return;
	if (perf_map_load(&tl->perf, path, &why) != 0) {
		fprintf(stderr, "%s: warning: %s: %s\n", progname, path, why);
		return;
	}
	if (tl->opt.verbose)
		fprintf(stderr, "%s: %s: %zu functions named, %zu lines skipped\n", progname, path,
		        tl->perf.count, tl->perf.skipped);
}

static void find_jit_lists(struct tool *tl)
{
	if (tl->opt.nimages)
		return;
	for (size_t i = 0; i < tl->nmods; i++) {
		const struct module *m = &tl->mods[i];
		char buf[4096];
		uint64_t value;
		size_t before;
		sw_status st;
		int quiet;

		if (m->path[0] == '[' || m->duplicate || (!m->m && !m->pending) ||
		    remote_map_symbol(host_path(tl, m->path, buf, sizeof buf), JIT_LISTS_SYMBOL, &value) != 0)
			continue;
		before = tl->jit.count;
		st = jit_lists_add(&tl->jit, tl->t.mem, tl->t.arch, m->bias + value, m->path, tl->map);
		/*
		 * A descriptor the target's memory does not hold (a core without
		 * the file's unwritten data pages) says nothing of JIT code: it is
		 * news with -v only, unless entries were read before the fault.
		 */
		quiet = st == SW_E_BADADDR && !tl->opt.verbose &&
		        (tl->jit.count == before || tl->jit.lists[before].objects == 0);
		if (st != SW_OK && !quiet)
			fprintf(stderr, "%s: warning: the GDB JIT list in %s: %s\n", progname, m->path,
			        sw_strerror(st));
	}
	for (size_t i = 0; i < tl->jit.count; i++) {
		const struct jit_list *l = &tl->jit.lists[i];

		if (l->loaded < l->objects)
			fprintf(stderr, "%s: warning: the GDB JIT list in %s: %zu of %zu objects not loaded\n",
			        progname, l->module, l->objects - l->loaded, l->objects);
		else if (tl->opt.verbose)
			fprintf(stderr, "%s: %s: a GDB JIT list of %zu objects\n", progname, l->module,
			        l->objects);
	}
}

/* ---- signal trampolines without CFI ------------------------------------------ */

/*
 * The rt_sigreturn sequences the kernel's and qemu-user's trampolines
 * consist of.  Most trampolines have CFI that marks them (glibc's x86-64
 * __restore_rt, the vDSO's); the module loader knows those in a file
 * without CFI by their code (glibc's i386 __restore_rt, sw_module(3));
 * qemu-user 7 puts arm64's in an anonymous page with none, and gdb
 * recognises it by these instructions, so this does too.
 */
static const struct sigreturn_code {
	sw_arch arch;
	unsigned len;
	unsigned char code[12];
} sigreturn_codes[] = {
	{ SW_ARCH_X64, 9, { 0x48, 0xc7, 0xc0, 0x0f, 0, 0, 0, 0x0f, 0x05 } },  /* mov $15,%rax; syscall */
	{ SW_ARCH_X86, 7, { 0xb8, 0xad, 0, 0, 0, 0xcd, 0x80 } },              /* mov $173,%eax; int $0x80 */
	{ SW_ARCH_ARM64, 8, { 0x68, 0x11, 0x80, 0xd2, 0x01, 0, 0, 0xd4 } },   /* mov x8,#139; svc #0 */
};

static const struct sigreturn_code *sigreturn_at(const struct tool *tl, uint64_t pc)
{
	for (size_t i = 0; i < sizeof sigreturn_codes / sizeof sigreturn_codes[0]; i++) {
		const struct sigreturn_code *s = &sigreturn_codes[i];
		unsigned char code[sizeof s->code];

		if (s->arch == tl->t.arch && sw_memory_read(tl->t.mem, pc, code, s->len) == SW_OK &&
		    memcmp(code, s->code, s->len) == 0)
			return s;
	}
	return NULL;
}

/*
 * Register a trampoline found at `pc`: no frame; the walker reads the signal
 * frame.  Native code normally; with --image managed code (flags without
 * SW_CODE_NATIVE), as the images' own trampolines are.  The handler
 * "returns" to the trampoline's first byte, and a managed walk looks a
 * return address up one byte back, in the call; so, as glibc's and the
 * kernel's trampolines do with a nop their CFI covers, the entry starts
 * one byte early when that byte is free.
 */
static int add_trampoline(struct tool *tl, uint64_t pc, unsigned len)
{
	uint32_t flags = tl->opt.nimages ? SW_CODE_SIGNAL_TRAMPOLINE
	                                 : SW_CODE_NATIVE | SW_CODE_SIGNAL_TRAMPOLINE;
	uint64_t start = pc, size = len;
	sw_swu_builder *b;
	unsigned char blob[64];
	size_t blob_len;
	sw_code_info info, prev;
	sw_native_function *fn;
	sw_status st;

	if (tl->opt.nimages && pc > 0 && sw_codemap_find(tl->map, pc - 1, &prev) == SW_E_NOTFOUND) {
		start = pc - 1;
		size = (uint64_t)len + 1;
	}
	if (tl->ntramp == MAX_TRAMPOLINES || sw_swu_builder_create(&b, tl->t.arch) != SW_OK)
		return -1;
	st = sw_swu_finish(b, (uint32_t)size, blob, sizeof blob, &blob_len);
	sw_swu_builder_destroy(b);
	if (st != SW_OK)
		return -1;
	fn = &tl->tramp[tl->ntramp];
	memset(fn, 0, sizeof *fn);
	fn->start = start;
	fn->size = size;
	fn->flags = SW_CODE_SIGNAL_TRAMPOLINE;
	info = (sw_code_info){ fn, start, size, blob, (uint32_t)blob_len, flags, NULL };
	if (sw_codemap_add(tl->map, &info) != SW_OK)
		return -1;
	tl->ntramp++;
	return 0;
}

/* ---- walking ------------------------------------------------------------------ */

static int is_trampoline(const struct tool *tl, uint64_t pc)
{
	sw_code_info c;

	return sw_codemap_find(tl->map, pc, &c) == SW_OK && (c.flags & SW_CODE_SIGNAL_TRAMPOLINE);
}

/* Name the frame: a return address is looked up one byte back, in its call. */
static void symbolize(const struct tool *tl, struct frame *f, int exact)
{
	uint64_t addr = exact || f->pc == 0 ? f->pc : f->pc - 1;
	const struct module *m = module_at(tl, addr);
	uint64_t off;

	f->function = NULL;
	f->module = m ? m->path : NULL;
	if ((f->function = remote_map_name(&tl->remote, addr, &off)) != NULL) {
		f->offset = off + (f->pc - addr);
		f->has_offset = 1;
		return;
	}
	if (m && m->img) {
		const sw_image_method *ms;
		size_t n = 0, lo = 0, hi;

		/* The method records are sorted by address: the last one starting at or before addr. */
		if (sw_image_methods(m->img, &ms, &n) != SW_OK)
			n = 0;
		hi = n;
		while (lo < hi) {
			size_t mid = lo + (hi - lo) / 2;

			if (ms[mid].start <= addr)
				lo = mid + 1;
			else
				hi = mid;
		}
		if (lo > 0 && addr - ms[lo - 1].start < ms[lo - 1].size && ms[lo - 1].name) {
			f->function = ms[lo - 1].name;
			f->offset = f->pc - ms[lo - 1].start;
			f->has_offset = 1;
		} else if (m->m && sw_module_symbolize(m->m, addr - m->m_bias, &f->function, &off) == SW_OK) {
			f->offset = off + (f->pc - addr);
			f->has_offset = 1;
		}
	} else if (m && m->m && sw_module_symbolize(m->m, addr, &f->function, &off) == SW_OK) {
		f->offset = off + (f->pc - addr);
		f->has_offset = 1;
	} else if (!m && (f->function = jit_lists_name(&tl->jit, addr, &off)) != NULL) {
		f->offset = off + (f->pc - addr);
		f->has_offset = 1;
	} else if (!m && (f->function = perf_map_name(&tl->perf, addr, &off)) != NULL) {
		/* Named by the map, which then stands for the module, as perf shows it. */
		f->module = tl->opt.perf_map ? tl->opt.perf_map : tl->perf_path;
		f->offset = off + (f->pc - addr);
		f->has_offset = 1;
	} else
		f->function = NULL;
}

static int push_frame(struct walk *w, const struct frame *f)
{
	if (w->count == w->cap) {
		size_t cap = w->cap ? w->cap * 2 : 64;
		struct frame *p = realloc(w->frames, cap * sizeof *p);

		if (!p)
			return -1;
		w->frames = p;
		w->cap = cap;
	}
	w->frames[w->count++] = *f;
	return 0;
}

/*
 * A walk that failed stopped in the frame at the error's IP, which it
 * could not unwind.  A managed walk (--image) reports a frame only once
 * it has unwound it, so that frame is added here: gdb prints it too,
 * before its "Backtrace stopped".  Its registers are the seed's, or came
 * from unwinding the frame below with its image's rules.
 */
static int add_stopped_frame(struct tool *tl, struct walk *w)
{
	struct frame f;

	if (w->err.ip == 0 || (w->count > 0 && w->frames[w->count - 1].pc == w->err.ip))
		return 0;
	memset(&f, 0, sizeof f);
	f.pc = w->err.ip;
	f.trust = w->count == 0 ? SW_TRUST_CONTEXT : tl->opt.nimages ? SW_TRUST_JIT : SW_TRUST_NONE;
	f.trampoline = is_trampoline(tl, f.pc);
	f.exact = w->count == 0 || f.trampoline;
	symbolize(tl, &f, f.exact);
	return push_frame(w, &f);
}

/*
 * Walk one thread from `ctx`.  The seed is reported as INITIAL_NATIVE when
 * nothing describes its code (without the frame-pointer fallback nothing
 * else would show it); when it is walked as a native frame after all, that
 * second report is the same frame and is dropped.
 */
static int walk_thread(struct tool *tl, const sw_thread *th, const sw_context *ctx, unsigned flags,
                       struct walk *w)
{
	sw_iter it;
	sw_status st;
	int rc, seen_seed = 0;
	uint64_t last_frame = 0;            /* the last Frame shown */

	w->count = 0;
	w->failed = 0;
	memset(&w->err, 0, sizeof w->err);
	flags |= SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT;
	if ((st = sw_iter_init(&it, th, ctx, 0, flags)) != SW_OK) {
		w->failed = 1;
		w->err.status = st;
		w->err.ip = sw_context_ip(ctx);
		w->err.sp = sw_context_sp(ctx);
		return add_stopped_frame(tl, w);
	}
	while ((rc = sw_iter_next(&it)) == 1) {
		const sw_crawl_frame *cf = sw_iter_frame(&it);
		sw_frame_state state = sw_crawl_frame_state(cf);
		const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);
		struct frame f;

		/*
		 * A runtime that publishes its threads' Frames has them shown,
		 * each once: an active InlinedCallFrame is reported as FRAME and
		 * again as SKIPPED_FRAME before its method (CoreCLR's rule).
		 */
		if ((state == SW_STATE_FRAME || state == SW_STATE_SKIPPED_FRAME) && tl->remote.r) {
			if (sw_crawl_frame_frame(cf) == last_frame)
				continue;
			last_frame = sw_crawl_frame_frame(cf);
			memset(&f, 0, sizeof f);
			f.runtime_frame = sw_crawl_frame_frame(cf);
			f.frame_type = sw_crawl_frame_frame_type(cf);
			if (push_frame(w, &f) != 0) {
				sw_iter_end(&it);
				return -1;
			}
			continue;
		}
		if (state != SW_STATE_NATIVE_FRAME && state != SW_STATE_INITIAL_NATIVE &&
		    state != SW_STATE_FRAMELESS)
			continue;
		if (state == SW_STATE_INITIAL_NATIVE) {
			seen_seed = 1;
		} else if (seen_seed && sw_crawl_frame_is_first(cf)) {
			seen_seed = 0;
			continue;
		}
		memset(&f, 0, sizeof f);
		f.pc = sw_context_ip(&rd->cur);
		f.trust = state == SW_STATE_INITIAL_NATIVE ? SW_TRUST_CONTEXT : sw_crawl_frame_trust(cf);
		f.trampoline = is_trampoline(tl, f.pc);
		f.exact = state == SW_STATE_INITIAL_NATIVE || sw_crawl_frame_is_first(cf) ||
		          sw_crawl_frame_is_interrupted(cf) || f.trampoline;
		symbolize(tl, &f, f.exact);
		if (push_frame(w, &f) != 0) {
			sw_iter_end(&it);
			return -1;
		}
	}
	if (rc < 0) {
		w->failed = 1;
		sw_iter_error(&it, &w->err);
	}
	sw_iter_end(&it);
	return w->failed ? add_stopped_frame(tl, w) : 0;
}

/* ---- modules loaded as walks reach them --------------------------------------- */

/* The module not loaded yet whose mappings hold pc, or NULL. */
static struct module *pending_at(const struct tool *tl, uint64_t pc)
{
	for (size_t i = 0; i < tl->nmods; i++)
		if (tl->mods[i].pending && pc >= tl->mods[i].lo && pc < tl->mods[i].hi)
			return &tl->mods[i];
	return NULL;
}

/* Load the pending module holding pc (a return address: or pc - 1); 1 if one was. */
static int load_pending(struct tool *tl, uint64_t pc)
{
	struct module *m = pending_at(tl, pc);
	char buf[4096];

	if (!m && pc > 0)
		m = pending_at(tl, pc - 1);
	if (!m)
		return 0;
	m->pending = 0;
	load_module(tl, m, host_path(tl, m->path, buf, sizeof buf), NULL, 0);
	if (m->m && tl->names && m->path[0] == '/')
		(void)sw_names_add_module(tl->names, host_path(tl, m->path, buf, sizeof buf), m->bias);
	return 1;
}

/*
 * Load every pending module the walk `w` reached: a frame's code, or the
 * code where it stopped.  Returns how many were loaded: then the thread
 * is walked again, its frames there unwound by their CFI.
 */
static size_t load_reached(struct tool *tl, const struct walk *w)
{
	size_t loaded = 0;

	for (size_t i = 0; i < w->count; i++)
		loaded += load_pending(tl, w->frames[i].pc);
	if (w->failed)
		loaded += load_pending(tl, w->err.ip);
	return loaded;
}

/*
 * The unmanaged return address where a managed walk (--image) leaves the
 * code map, from its native marker; 0 if it never does.
 */
static uint64_t managed_exit(const sw_thread *th, const sw_context *ctx)
{
	sw_iter it;
	uint64_t pc = 0;

	if (sw_iter_init(&it, th, ctx, 0, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS) != SW_OK)
		return 0;
	while (sw_iter_next(&it) == 1) {
		const sw_crawl_frame *cf = sw_iter_frame(&it);

		if (sw_crawl_frame_state(cf) == SW_STATE_NATIVE_MARKER) {
			pc = sw_context_ip(&sw_crawl_frame_regdisplay(cf)->cur);
			break;
		}
	}
	sw_iter_end(&it);
	return pc;
}

/*
 * Find the trampolines nothing describes and register them.  Natively: walk
 * with the frame-pointer fallback (it reaches them from the handler), and
 * walk again until no new one appears.  With --image: the managed walk
 * reaches the handler's return address by the handler's own unwind rules;
 * where that walk leaves the code map is checked the same way, again until
 * no new one appears.
 */
static int find_trampolines(struct tool *tl, const sw_thread *th, const sw_context *ctx,
                            struct walk *w)
{
	for (int round = 0; round < MAX_REWALKS; round++) {
		int added = 0;

		if (tl->opt.nimages) {
			uint64_t pc = managed_exit(th, ctx);
			const struct sigreturn_code *s = pc ? sigreturn_at(tl, pc) : NULL;

			added = s && add_trampoline(tl, pc, s->len) == 0;
		} else {
			if (walk_thread(tl, th, ctx,
			                SW_WALK_NATIVE_FRAMES | SW_WALK_FRAME_POINTER_FALLBACK, w) != 0)
				return -1;
			for (size_t i = 0; i < w->count; i++) {
				const struct sigreturn_code *s;
				sw_code_info c;

				/* Code of a file not loaded yet is its module's to describe. */
				if (sw_codemap_find(tl->map, w->frames[i].pc, &c) == SW_OK ||
				    pending_at(tl, w->frames[i].pc) || !(s = sigreturn_at(tl, w->frames[i].pc)))
					continue;
				if (add_trampoline(tl, w->frames[i].pc, s->len) == 0)
					added = 1;
			}
		}
		if (!added)
			break;
	}
	return 0;
}

/* ---- names -------------------------------------------------------------------- */

/*
 * Give the symbolizer every module loaded from a file, at its bias.  The
 * vDSO, read from the target's memory, keeps the names its sw_module has.
 */
static void add_names(struct tool *tl)
{
	char buf[4096];
	sw_status st;

	if (tl->opt.nimages)
		return;
	if ((st = sw_names_create(tl->opt.debug_dirs, &tl->names)) != SW_OK) {
		fprintf(stderr, "%s: warning: functions named by their symbols only: %s\n", progname,
		        sw_strerror(st));
		return;
	}
	for (size_t i = 0; i < tl->nmods; i++) {
		const struct module *m = &tl->mods[i];

		if (m->m && m->path[0] == '/' &&
		    sw_names_add_module(tl->names, host_path(tl, m->path, buf, sizeof buf), m->bias) != SW_OK &&
		    tl->opt.verbose)
			fprintf(stderr, "%s: %s: no source names\n", progname, m->path);
	}
}

/* Frame `f` once more as a source-level frame `nf` names. */
static struct frame named_frame_of(const struct frame *f, const struct named_frame *nf)
{
	struct frame g = *f;

	g.inlined = nf->inlined;
	if (nf->function || nf->inlined)
		g.function = nf->function;
	if (nf->inlined)
		g.has_offset = 0;
	else if (nf->has_offset) {
		g.offset = nf->offset;
		g.has_offset = 1;
	}
	g.file = nf->file;
	g.line = nf->line;
	g.column = nf->column;
	return g;
}

/*
 * The walk's frames named after it: each preceded by the calls inlined
 * into its code there, innermost first, as gdb and eu-stack -i list them.
 */
static int name_walk(const struct tool *tl, const struct walk *w, struct walk *out)
{
	out->count = 0;
	out->failed = w->failed;
	out->err = w->err;
	for (size_t i = 0; i < w->count; i++) {
		struct named_frame nf[NAMED_FRAMES_MAX];
		struct frame f = w->frames[i];
		size_t n = f.trampoline || f.runtime_frame ? 0 :
		           name_frames(tl->names, f.pc, f.exact, &tl->opt.names, nf, NAMED_FRAMES_MAX);

		if (n == 0 && f.function && tl->names && !tl->opt.names.raw)
			f.function = sw_names_demangle(tl->names, f.function);
		if (n == 0 && push_frame(out, &f) != 0)
			return -1;
		for (size_t k = 0; k < n; k++) {
			struct frame g = named_frame_of(&f, &nf[k]);

			if (push_frame(out, &g) != 0)
				return -1;
		}
	}
	return 0;
}

/* ---- output ------------------------------------------------------------------- */

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

static void print_text(const struct tool *tl, unsigned index, int tid, const char *name,
                       const struct walk *w)
{
	int width = (int)sw_arch_pointer_size(tl->t.arch) * 2;

	printf("%sThread %u (LWP %d):", index ? "\n" : "", index + 1, tid);
	if (name[0]) {
		fputs(" \"", stdout);
		print_escaped(stdout, name);
		putchar('"');
	}
	putchar('\n');
	for (size_t i = 0, level = 0; i < w->count; i++) {
		const struct frame *f = &w->frames[i];

		if (f->runtime_frame) {
			printf("    [Frame type %" PRIu32 " at 0x%" PRIx64 "]\n", f->frame_type, f->runtime_frame);
			continue;
		}
		printf("#%-2zu 0x%0*" PRIx64 " in ", level++, width, f->pc);
		print_function(stdout, f->function, f->has_offset, f->offset);
		fputs(" (", stdout);
		print_escaped(stdout, f->module ? f->module : "??");
		printf(") [%s]%s", sw_frame_trust_name(f->trust), f->inlined ? " inlined" : "");
		print_source(stdout, f->file, f->line, f->column);
		printf("%s\n", f->trampoline ? " <signal handler called>" : "");
	}
	if (w->failed)
		printf("Backtrace stopped: %s (ip 0x%" PRIx64 ", sp 0x%" PRIx64 ")\n",
		       sw_strerror(w->err.status), w->err.ip, w->err.sp);
}

static void json_uint_or_null(unsigned v)
{
	if (v)
		printf("%u", v);
	else
		fputs("null", stdout);
}

static void print_json(const struct tool *tl, unsigned index, int tid, const char *name,
                       const struct walk *w)
{
	printf("%s\n    {\"thread\": %u, \"lwp\": %d, \"name\": ", index ? "," : "", index + 1, tid);
	json_string(name[0] ? name : NULL);
	printf(", \"frames\": [");
	for (size_t i = 0, level = 0; i < w->count; i++) {
		const struct frame *f = &w->frames[i];

		if (f->runtime_frame)
			continue;       /* Frames are in the text output only */
		printf("%s\n      {\"level\": %zu, \"pc\": \"0x%" PRIx64 "\", \"function\": ",
		       level ? "," : "", level, f->pc);
		level++;
		json_string(f->function);
		if (f->function && f->has_offset)
			printf(", \"offset\": %" PRIu64, f->offset);
		printf(", \"module\": ");
		json_string(f->module);
		printf(", \"trust\": \"%s\", \"signal_trampoline\": %s, \"inlined\": %s, \"file\": ",
		       sw_frame_trust_name(f->trust), f->trampoline ? "true" : "false",
		       f->inlined ? "true" : "false");
		json_string(f->file);
		printf(", \"line\": ");
		json_uint_or_null(f->file ? f->line : 0);
		printf(", \"column\": ");
		json_uint_or_null(f->file ? f->column : 0);
		printf("}");
	}
	printf("%s], \"error\": ", w->count ? "\n    " : "");
	if (w->failed) {
		printf("{\"code\": %d, \"message\": ", (int)w->err.status);
		json_string(sw_strerror(w->err.status));
		printf(", \"depth\": %u, \"ip\": \"0x%" PRIx64 "\", \"sp\": \"0x%" PRIx64 "\"}",
		       (unsigned)w->err.depth, w->err.ip, w->err.sp);
	} else {
		printf("null");
	}
	printf("}");
	(void)tl;
}

/* Walk and print every thread. */
static int walk_all(struct tool *tl)
{
	unsigned flags = SW_WALK_NATIVE_FRAMES;
	struct walk w, named;
	char thread_name[64];
	int walked = 0, rc;

	if (tl->opt.nimages)
		flags = 0;      /* --image: the managed path alone */
	else if (!tl->opt.no_fp)
		flags |= SW_WALK_FRAME_POINTER_FALLBACK;
	memset(&w, 0, sizeof w);
	memset(&named, 0, sizeof named);
	if (tl->opt.json) {
		printf("{\"target\": ");
		json_string(tl->t.kind);
		printf(", \"name\": ");
		json_string(tl->t.name);
		printf(", \"arch\": ");
		json_string(sw_arch_name(tl->t.arch));
		printf(", \"threads\": [");
	}
	for (unsigned i = 0; i < tl->t.threads; i++) {
		sw_context ctx;
		sw_thread th;
		uint64_t lo = 0, hi = 0;
		sw_status st;
		int tid = 0;

		if ((st = tl->t.thread(tl->t.handle, i, &ctx, &tid)) != SW_OK) {
			fprintf(stderr, "%s: thread %u: %s\n", progname, i + 1, sw_strerror(st));
			tl->exit_code = EXIT_WALK_FAILED;
			continue;
		}
		/* A thread whose SP lies in no segment still has its first frame. */
		if (tl->t.bounds(tl->t.handle, sw_context_sp(&ctx), &lo, &hi) != SW_OK) {
			lo = sw_context_sp(&ctx);
			hi = lo + 1;
		}
		if ((st = sw_thread_init(&th, tl->t.arch, tl->map, tl->t.mem, 0, lo, hi)) != SW_OK) {
			fprintf(stderr, "%s: thread %u: %s\n", progname, i + 1, sw_strerror(st));
			tl->exit_code = EXIT_WALK_FAILED;
			continue;
		}
		remote_map_thread(&tl->remote, tid, &th);
		/* A handler on an alternate signal stack returns to a stack in another segment. */
		th.stack_bounds = tl->t.bounds;
		th.stack_bounds_ctx = tl->t.handle;
		/*
		 * Names are looked up after the walk, never during one.  Each walk
		 * that reaches a file not loaded yet loads it (at least one more
		 * each time, so at most one walk per file) and is done again.
		 */
		do
			rc = find_trampolines(tl, &th, &ctx, &w) != 0 ||
			     walk_thread(tl, &th, &ctx, flags, &w) != 0;
		while (rc == 0 && load_reached(tl, &w) > 0);
		if (rc != 0 || name_walk(tl, &w, &named) != 0) {
			fprintf(stderr, "%s: out of memory\n", progname);
			free(w.frames);
			free(named.frames);
			return -1;
		}
		if (w.failed)
			tl->exit_code = EXIT_WALK_FAILED;
		/* A core's notes name only the process (NT_PRPSINFO): its main thread. */
		thread_name[0] = '\0';
		if (tl->opt.pid)
			read_thread_name(tl->opt.pid, tid, thread_name, sizeof thread_name);
		else if (tl->core_name && tid == tl->core_pid)
			snprintf(thread_name, sizeof thread_name, "%s", tl->core_name);
		if (tl->opt.json)
			print_json(tl, (unsigned)walked, tid, thread_name, &named);
		else
			print_text(tl, (unsigned)walked, tid, thread_name, &named);
		walked++;
	}
	if (tl->opt.json)
		printf("%s]}\n", walked ? "\n  " : "");
	free(w.frames);
	free(named.frames);
	return walked > 0 || tl->t.threads == 0 ? 0 : -1;
}

/* ---- main --------------------------------------------------------------------- */

static void usage(FILE *f)
{
	fprintf(f, "usage: %s [OPTIONS] -p PID\n"
	        "       %s [OPTIONS] --core CORE [--exe EXE]\n"
	        "Print every thread's backtrace of a process or a core file.\n"
	        "  -p, --pid PID        attach to the process PID (ptrace)\n"
	        "  -c, --core CORE      read the core file CORE\n"
	        "  -e, --exe EXE        the program's executable (cores that do not name it: qemu-user's)\n"
	        "  -s, --sysroot DIR    read the target's files under DIR when they are there\n"
	        "  -j, --json           print JSON\n"
	        "      --no-fp          no frame-pointer fallback for code nothing describes\n"
	        "      --image MOD=IMG  walk the managed path only, MOD's code described by the SWU\n"
	        "                       image IMG (swimport); MOD is a mapped path or its file name;\n"
	        "                       repeatable\n"
	        "      --raw            function names as the files have them, not demangled\n"
	        "      --no-inlines     no frames for inlined calls\n"
	        "      --no-source      no source file and line\n"
	        "      --debug-dir DIRS where separate debug files are (colon-separated;\n"
	        "                       default :.debug:/usr/lib/debug)\n"
	        "      --perf-map FILE  name code in no module from this perf map (default\n"
	        "                       with -p: /tmp/perf-PID.map, if there is one)\n"
	        "  -v, --verbose        report each module loaded on standard error\n"
	        "  -h, --help           print this help\n"
	        "      --version        print the version\n", progname, progname);
}

/* The value of an option that takes one: "--opt VALUE" or "--opt=VALUE". */
static const char *opt_value(int argc, char **argv, int *i, const char *s, const char *l)
{
	size_t n = strlen(l);

	if (strcmp(argv[*i], s) == 0 || strcmp(argv[*i], l) == 0)
		return *i + 1 < argc ? argv[++*i] : NULL;
	if (strncmp(argv[*i], l, n) == 0 && argv[*i][n] == '=')
		return argv[*i] + n + 1;
	return NULL;
}

static int is_opt(const char *arg, const char *s, const char *l)
{
	size_t n = strlen(l);

	return strcmp(arg, s) == 0 || strcmp(arg, l) == 0 || (strncmp(arg, l, n) == 0 && arg[n] == '=');
}

static int parse_args(int argc, char **argv, struct options *o)
{
	tool_standard_options(argc, argv, progname, usage);
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i], *v;
		char *end;
		long pid;

		if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			usage(stdout);
			exit(EXIT_WALKED);
		} else if (strcmp(a, "-j") == 0 || strcmp(a, "--json") == 0) {
			o->json = 1;
		} else if (strcmp(a, "--no-fp") == 0) {
			o->no_fp = 1;
		} else if (strcmp(a, "--raw") == 0) {
			o->names.raw = 1;
		} else if (strcmp(a, "--no-inlines") == 0) {
			o->names.no_inlines = 1;
		} else if (strcmp(a, "--no-source") == 0) {
			o->names.no_source = 1;
		} else if (is_opt(a, "--debug-dir", "--debug-dir")) {
			if (!(o->debug_dirs = opt_value(argc, argv, &i, "--debug-dir", "--debug-dir")))
				return -1;
		} else if (strcmp(a, "-v") == 0 || strcmp(a, "--verbose") == 0) {
			o->verbose = 1;
		} else if (is_opt(a, "-p", "--pid")) {
			if (!(v = opt_value(argc, argv, &i, "-p", "--pid")))
				return -1;
			errno = 0;
			pid = strtol(v, &end, 10);
			if (errno || *end || pid <= 0 || pid > 0x7fffffff) {
				fprintf(stderr, "%s: bad pid '%s'\n", progname, v);
				return -1;
			}
			o->pid = (int)pid;
		} else if (is_opt(a, "--perf-map", "--perf-map")) {
			if (!(o->perf_map = opt_value(argc, argv, &i, "--perf-map", "--perf-map")))
				return -1;
		} else if (is_opt(a, "-c", "--core")) {
			if (!(o->core = opt_value(argc, argv, &i, "-c", "--core")))
				return -1;
		} else if (is_opt(a, "-e", "--exe")) {
			if (!(o->exe = opt_value(argc, argv, &i, "-e", "--exe")))
				return -1;
		} else if (is_opt(a, "--image", "--image")) {
			struct image_opt *p;
			const char *eq;

			if (!(v = opt_value(argc, argv, &i, "--image", "--image")))
				return -1;
			if (!(eq = strchr(v, '=')) || eq == v || !eq[1]) {
				fprintf(stderr, "%s: --image wants MODULE=IMAGE, not '%s'\n", progname, v);
				return -1;
			}
			if (!(p = realloc(o->images, (o->nimages + 1) * sizeof *p))) {
				fprintf(stderr, "%s: out of memory\n", progname);
				return -1;
			}
			o->images = p;
			if (!(p[o->nimages].module = malloc((size_t)(eq - v) + 1))) {
				fprintf(stderr, "%s: out of memory\n", progname);
				return -1;
			}
			memcpy(p[o->nimages].module, v, (size_t)(eq - v));
			p[o->nimages].module[eq - v] = '\0';
			p[o->nimages].file = eq + 1;
			p[o->nimages].used = 0;
			o->nimages++;
		} else if (is_opt(a, "-s", "--sysroot")) {
			if (!(o->sysroot = opt_value(argc, argv, &i, "-s", "--sysroot")))
				return -1;
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

int main(int argc, char **argv)
{
	struct tool tl;
	sw_core *core = NULL;
	sw_process *proc = NULL;
	char name[32];
	sw_status st;
	int rc;

	memset(&tl, 0, sizeof tl);
	if (parse_args(argc, argv, &tl.opt) != 0) {
		usage(stderr);
		return EXIT_USAGE;
	}
	if ((st = sw_codemap_create(&tl.map)) != SW_OK) {
		fprintf(stderr, "%s: %s\n", progname, sw_strerror(st));
		return EXIT_TARGET;
	}
	rc = tl.opt.core ? open_core(&tl, &core) : attach_process(&tl, &proc, name, sizeof name);
	if (rc == 0) {
		if (tl.t.arch == SW_ARCH_NONE || sw_arch_pointer_size(tl.t.arch) == 0) {
			fprintf(stderr, "%s: %s: unsupported architecture\n", progname, tl.t.name);
			rc = -1;
		} else if (load_files(&tl) != 0 || load_vdso(&tl) != 0) {
			fprintf(stderr, "%s: out of memory\n", progname);
			rc = -1;
		} else {
			find_published(&tl);
			find_jit_lists(&tl);
			load_perf_map(&tl);
			add_names(&tl);
			rc = walk_all(&tl);
		}
		fflush(stdout);
		remote_map_close(&tl.remote);
		jit_lists_close(&tl.jit);
		perf_map_free(&tl.perf);
		sw_names_free(tl.names);
		unload_modules(&tl);
		free(tl.t.auxv);
	}
	sw_core_close(core);
	if (proc && (st = sw_process_detach(proc)) != SW_OK) {
		fprintf(stderr, "%s: pid %d: detach: %s\n", progname, tl.opt.pid, sw_strerror(st));
		rc = -1;
	}
	sw_codemap_destroy(tl.map);
	for (size_t i = 0; i < tl.opt.nimages; i++)
		free(tl.opt.images[i].module);
	free(tl.opt.images);
	if (rc != 0)
		return EXIT_TARGET;
	return ferror(stdout) ? EXIT_TARGET : tl.exit_code;
}
