/*
 * swprof_process.c - the process swprof -p profiles, seen without
 * stopping it (see swprof_process.h).
 *
 * Its modules are the ELF files /proc/PID/maps lists with code, each
 * loaded once at the bias its first mapping gives (as swstack -p loads
 * them) with SW_MODULE_LAZY: loading costs a module's .eh_frame_hdr, and
 * a function's CFI is imported the first time a sample's walk lands in
 * it.  Attach mode walks in its own process, after the fact, so a walk
 * may import.  The vDSO, which has no file, is copied out of the
 * process's memory once (/proc/PID/mem, which needs no ptrace stop).
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stackwalk.h>
#include "swprof.h"
#include "swprof_process.h"
#include "swstack_elf.h"

/* Hard limit on the lines of /proc/PID/maps read (a process may map a file thousands of times). */
#define MAX_MAPPINGS 65536

static void free_maps(process_mapping *maps, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (maps[i].fd >= 0)
			close(maps[i].fd);
		free(maps[i].path);
	}
	free(maps);
}

/* The lines of /proc/PID/maps, by address (the kernel lists them so). */
static int read_maps(pid_t pid, process_mapping **out, size_t *count)
{
	char name[64], *line = NULL;
	size_t cap = 0, n = 0, linecap = 0;
	process_mapping *maps = NULL;
	FILE *f;

	snprintf(name, sizeof name, "/proc/%ld/maps", (long)pid);
	if (!(f = fopen(name, "re")))
		return -1;
	while (n < MAX_MAPPINGS && getline(&line, &linecap, f) > 0) {
		unsigned long long start, end, offset;
		char perms[8];
		int at = 0;
		process_mapping *m;
		char *path;

		if (sscanf(line, "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset, &at) < 4 ||
		    at == 0)
			continue;
		if (n == cap) {
			process_mapping *grown = realloc(maps, (cap = cap ? 2 * cap : 64) * sizeof *maps);

			if (!grown)
				break;
			maps = grown;
		}
		path = line + at;
		path[strcspn(path, "\n")] = 0;
		m = &maps[n];
		memset(m, 0, sizeof *m);
		m->start = start;
		m->end = end;
		m->offset = offset;
		m->readable = perms[0] == 'r';
		m->writable = perms[1] == 'w';
		m->executable = perms[2] == 'x';
		m->fd = -1;
		if (!(m->path = strdup(path)))
			break;
		n++;
	}
	free(line);
	fclose(f);
	*out = maps;
	*count = n;
	return 0;
}

const process_mapping *process_mapping_at(const target_process *p, uint64_t addr)
{
	size_t lo = 0, hi = p->nmaps;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (addr < p->maps[mid].start)
			hi = mid;
		else if (addr >= p->maps[mid].end)
			lo = mid + 1;
		else
			return &p->maps[mid];
	}
	return NULL;
}

static int module_known(const char *path, uint64_t lo)
{
	for (unsigned i = 0; i < prof.nmodules; i++)
		if (prof.modules[i].lo == lo && strcmp(prof.modules[i].path, path) == 0)
			return 1;
	return 0;
}

/* Register a loaded module as prof.modules' next; frees it if it cannot be. */
static void add_module(sw_module *m, const char *path, uint64_t bias, uint64_t lo, uint64_t hi,
                       int verbose)
{
	loaded_module *lm = &prof.modules[prof.nmodules];
	sw_status st;

	if ((st = sw_module_register(m, prof.map)) != SW_OK || !(lm->path = strdup(path))) {
		if (verbose)
			fprintf(stderr, "swprof: %s: not loaded: %s\n", path,
			        st != SW_OK ? sw_strerror(st) : "out of memory");
		if (st == SW_OK)
			sw_module_unregister(m, prof.map);
		sw_module_free(m);
		return;
	}
	lm->m = m;
	lm->bias = bias;
	lm->lo = lo;
	lm->hi = hi;
	prof.nmodules++;
}

/* The file mapped from maps[first] on, its mappings [first, end): loaded if it has code. */
static void load_file(target_process *p, size_t first, size_t end, int verbose)
{
	const process_mapping *m = &p->maps[first];
	int code = 0;
	const char *why;
	uint64_t bias;
	sw_arch arch = SW_ARCH_NONE;
	sw_module *mod;
	sw_status st;

	for (size_t i = first; i < end; i++)
		code |= p->maps[i].executable;
	if (!code || module_known(m->path, m->start) || prof.nmodules == MAX_MODULES)
		return;
	if ((why = swstack_elf_file_bias(m->path, m->start, m->offset, &bias, NULL)) != NULL) {
		if (verbose)
			fprintf(stderr, "swprof: %s: not loaded: %s\n", m->path, why);
		return;
	}
	if ((st = sw_module_load_flags(m->path, bias, SW_MODULE_LAZY, &arch, &mod)) != SW_OK) {
		if (verbose)
			fprintf(stderr, "swprof: %s: not loaded: %s\n", m->path, sw_strerror(st));
		return;
	}
	if (p->arch == SW_ARCH_NONE)
		p->arch = arch;
	if (arch != p->arch) {
		sw_module_free(mod);
		return;
	}
	add_module(mod, m->path, bias, m->start, p->maps[end - 1].end, verbose);
}

/* The vDSO's bytes, copied once; its code is loaded like a file's. */
static void load_vdso(target_process *p, const process_mapping *m, int verbose)
{
	uint64_t len = m->end - m->start, delta;
	sw_arch arch = SW_ARCH_NONE;
	char name[64];
	sw_module *mod;
	int fd;

	if (p->vdso || len > SWSTACK_ELF_MAX_IMAGE || prof.nmodules == MAX_MODULES)
		return;
	snprintf(name, sizeof name, "/proc/%ld/mem", (long)p->pid);
	if ((fd = open(name, O_RDONLY | O_CLOEXEC)) < 0)
		return;
	if ((p->vdso = malloc(len)) && pread(fd, p->vdso, len, (off_t)m->start) == (ssize_t)len &&
	    swstack_elf_delta(p->vdso, len, 0, &delta) == 0 &&
	    sw_module_load_image(p->vdso, len, m->start - delta, &arch, &mod) == SW_OK) {
		p->vdso_start = m->start;
		p->vdso_len = len;
		if (arch == p->arch)
			add_module(mod, "[vdso]", m->start - delta, m->start, m->end, verbose);
		else
			sw_module_free(mod);
	} else {
		free(p->vdso);
		p->vdso = NULL;
	}
	close(fd);
}

/* Consecutive mappings of one file are one module, placed by its first mapping. */
static void load_modules(target_process *p, int verbose)
{
	size_t end;

	for (size_t i = 0; i < p->nmaps; i = end) {
		const char *path = p->maps[i].path;

		for (end = i + 1; end < p->nmaps && strcmp(p->maps[end].path, path) == 0; end++)
			;
		if (path[0] == '/' && !strstr(path, " (deleted)"))
			load_file(p, i, end, verbose);
		else if (strcmp(path, "[vdso]") == 0)
			load_vdso(p, &p->maps[i], verbose);
	}
}

int process_open(target_process *p, pid_t pid, int verbose)
{
	memset(p, 0, sizeof *p);
	p->pid = pid;
	if (read_maps(pid, &p->maps, &p->nmaps) != 0) {
		fprintf(stderr, "swprof: cannot read /proc/%ld/maps: %s\n", (long)pid,
		        errno == ENOENT ? "no such process" : strerror(errno));
		return -1;
	}
	/* The program's own file first: it says the process's architecture. */
	for (size_t i = 0; i < p->nmaps && p->arch == SW_ARCH_NONE; i++)
		if (p->maps[i].path[0] == '/' && p->maps[i].executable) {
			size_t first = i, end = i + 1;

			/*
			 * All of the file's consecutive mappings, as load_modules
			 * takes them: a module that ended at its first executable
			 * one (node: a page of code before 40 MB more) would
			 * leave the rest of its code unnamed.
			 */
			while (first > 0 && strcmp(p->maps[first - 1].path, p->maps[i].path) == 0)
				first--;
			while (end < p->nmaps && strcmp(p->maps[end].path, p->maps[i].path) == 0)
				end++;
			load_file(p, first, end, verbose);
		}
	if (p->arch != sw_arch_host()) {
		fprintf(stderr, "swprof: process %ld: %s\n", (long)pid, p->arch == SW_ARCH_NONE ?
		        "no ELF program mapped that swprof can read" :
		        "not of this machine's architecture: attach mode samples only those");
		return -1;
	}
	load_modules(p, verbose);
	return 0;
}

void process_rescan(target_process *p, int verbose)
{
	process_mapping *maps;
	size_t n;

	if (read_maps(p->pid, &maps, &n) != 0)
		return;
	free_maps(p->maps, p->nmaps);
	p->maps = maps;
	p->nmaps = n;
	p->rescans++;
	load_modules(p, verbose);
}

void process_close(target_process *p)
{
	for (unsigned i = 0; i < prof.nmodules; i++)
		sw_module_unregister(prof.modules[i].m, prof.map);
	if (prof.map)
		sw_codemap_synchronize(prof.map);
	for (unsigned i = 0; i < prof.nmodules; i++) {
		sw_module_free(prof.modules[i].m);
		free(prof.modules[i].path);
	}
	prof.nmodules = 0;
	free_maps(p->maps, p->nmaps);
	free(p->vdso);
	memset(p, 0, sizeof *p);
}

/* Outside the stack copy: the vDSO's bytes, or a read-only file mapping's from its file. */
static sw_status read_sample_memory(void *ctx, uint64_t addr, void *buf, size_t len)
{
	sample_memory *sm = ctx;
	target_process *p = sm->p;
	process_mapping *m;

	if (addr >= sm->mem.direct_hi && addr < sm->stack_hi)
		sm->past_copy = 1;
	if (p->vdso && addr >= p->vdso_start && len <= p->vdso_len &&
	    addr - p->vdso_start <= p->vdso_len - len) {
		memcpy(buf, p->vdso + (addr - p->vdso_start), len);
		return SW_OK;
	}
	m = (process_mapping *)process_mapping_at(p, addr);
	if (!m || m->writable || !m->readable || m->path[0] != '/' || len > m->end - addr)
		return SW_E_BADADDR;
	if (m->fd < 0 && (m->fd = open(m->path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY)) < 0)
		return SW_E_BADADDR;
	if (pread(m->fd, buf, len, (off_t)(m->offset + (addr - m->start))) != (ssize_t)len)
		return SW_E_BADADDR;
	return SW_OK;
}

void sample_memory_init(sample_memory *sm, target_process *p, const unsigned char *stack,
                        uint64_t sp, uint64_t len, uint64_t stack_hi)
{
	memset(sm, 0, sizeof *sm);
	sm->p = p;
	sm->stack_hi = stack_hi;
	sm->mem.read = read_sample_memory;
	sm->mem.ctx = sm;
	sm->mem.direct_lo = sp;
	sm->mem.direct_hi = sp + len;
	sm->mem.direct_host = (unsigned char *)stack;
}
