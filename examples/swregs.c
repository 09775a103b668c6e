/*
 * swregs - print the threads' registers and the mapped files of a core
 * file or of a live process, through the library's debugger targets.
 *
 *   swregs core FILE [EXECUTABLE]
 *   swregs pid PID
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "tool_options.h"
#include "escape.h"

/* What a core and a process have in common, as seen by this tool. */
struct target {
	sw_arch arch;
	unsigned threads, modules;
	sw_status (*thread)(const void *t, unsigned i, sw_context *ctx, int *tid);
	sw_status (*module)(const void *t, unsigned i, sw_mapped_file *f);
	sw_status (*bounds)(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi);
	const sw_memory *mem;
	const void *handle;
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

static void print_thread(const struct target *t, unsigned i)
{
	unsigned width = sw_arch_pointer_size(t->arch) * 2;
	uint64_t lo, hi, word;
	sw_context ctx;
	unsigned col = 0;
	int tid;

	if (t->thread(t->handle, i, &ctx, &tid) != SW_OK)
		return;
	printf("thread %u (tid %d)\n", i, tid);
	for (unsigned r = 0; r < SW_MAX_REGS; r++) {
		const char *name = sw_arch_reg_name(t->arch, r);

		if (!name || !(ctx.valid & (1ull << r)))
			continue;
		printf("  %-5s 0x%0*llx%s", name, (int)width, (unsigned long long)ctx.regs[r],
		       ++col % 3 == 0 ? "\n" : "");
	}
	if (col % 3)
		printf("\n");
	if (t->bounds(t->handle, sw_context_sp(&ctx), &lo, &hi) == SW_OK)
		printf("  stack [0x%llx, 0x%llx)", (unsigned long long)lo, (unsigned long long)hi);
	else
		printf("  stack: sp outside every mapping");
	word = 0;
	if (sw_memory_read(t->mem, sw_context_sp(&ctx), &word, sw_arch_pointer_size(t->arch)) == SW_OK)
		printf(", [sp] = 0x%llx\n", (unsigned long long)word);
	else
		printf(", [sp] unreadable\n");
}

static void print_modules(const struct target *t)
{
	for (unsigned i = 0; i < t->modules; i++) {
		sw_mapped_file f;

		if (t->module(t->handle, i, &f) != SW_OK)
			continue;
		printf("  %016llx-%016llx %c%c%c %08llx ", (unsigned long long)f.start,
		       (unsigned long long)f.end, f.prot & SW_PROT_READ ? 'r' : '-',
		       f.prot & SW_PROT_WRITE ? 'w' : '-', f.prot & SW_PROT_EXEC ? 'x' : '-',
		       (unsigned long long)f.offset);
		/* The target's own text: a path may hold any byte but '/' and NUL. */
		print_escaped(stdout, f.path);
		putchar('\n');
	}
}

static void print_target(const struct target *t)
{
	printf("arch %s, %u threads, %u mapped files\n", sw_arch_name(t->arch), t->threads,
	       t->modules);
	for (unsigned i = 0; i < t->threads; i++)
		print_thread(t, i);
	printf("mapped files:\n");
	print_modules(t);
}

static void print_usage(FILE *f)
{
	fprintf(f, "usage: swregs core FILE [EXECUTABLE]\n       swregs pid PID\n"
	        "       swregs --help | --version\n");
}

static int usage(void)
{
	print_usage(stderr);
	return 2;
}

int main(int argc, char **argv)
{
	struct target t;
	sw_status st;

	tool_standard_options(argc, argv, "swregs", print_usage);
	if (argc >= 3 && argc <= 4 && strcmp(argv[1], "core") == 0) {
		sw_core *core;

		st = sw_core_open(argv[2], &core);
		if (st == SW_OK && argc == 4) {
			st = sw_core_add_executable(core, argv[3]);
			if (st == SW_E_EXISTS)
				st = SW_OK;     /* the core names the program already */
		}
		if (st != SW_OK) {
			fprintf(stderr, "swregs: %s: %s\n", argv[argc - 1], sw_strerror(st));
			return 1;
		}
		t = (struct target){ sw_core_arch(core), sw_core_thread_count(core),
		                     sw_core_module_count(core), core_thread, core_module,
		                     core_bounds, sw_core_memory(core), core };
		print_target(&t);
		sw_core_close(core);
		return 0;
	}
	if (argc == 3 && strcmp(argv[1], "pid") == 0) {
		sw_process *proc;

		st = sw_process_attach(atoi(argv[2]), &proc);
		if (st != SW_OK) {
			fprintf(stderr, "swregs: pid %s: %s (%s)\n", argv[2], sw_strerror(st),
			        strerror(errno));
			return 1;
		}
		t = (struct target){ sw_process_arch(proc), sw_process_thread_count(proc),
		                     sw_process_module_count(proc), proc_thread, proc_module,
		                     proc_bounds, sw_process_memory(proc), proc };
		print_target(&t);
		return sw_process_detach(proc) == SW_OK ? 0 : 1;
	}
	return usage();
}
