/*
 * stack_set.h - every thread's native stack of a live process or a core
 * file: the target's mapped files (and its vDSO) loaded as native modules
 * into one code map, each thread walked from its registers with native
 * frames, and each frame named by its module's symbols.
 *
 * Internal to the library: the hang analysis (deadlock.c) walks with it.
 */
#ifndef SW_TARGET_STACK_SET_H
#define SW_TARGET_STACK_SET_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>

/* What a core and a process have in common, as the stack set sees it. */
struct swi_target {
	sw_arch arch;
	const sw_memory *mem;
	unsigned threads, files;
	sw_status (*thread)(const void *t, unsigned i, sw_context *ctx, int *tid);
	sw_status (*file)(const void *t, unsigned i, sw_mapped_file *f);
	sw_status (*bounds)(const void *t, uint64_t sp, uint64_t *lo, uint64_t *hi);
	const void *handle;
	uint64_t vdso;                  /* the vDSO's address, or 0 */
};

void swi_target_from_core(struct swi_target *t, const sw_core *core);
void swi_target_from_process(struct swi_target *t, const sw_process *proc, uint64_t vdso);

/* One frame as walked and named. */
struct swi_frame {
	uint64_t pc;
	const char *function;           /* owned by the stack set; NULL when unknown */
	uint64_t offset;                /* pc - the function's start */
	const char *module;             /* owned by the stack set; NULL when unknown */
};

typedef struct swi_stack_set swi_stack_set;

/* Load the target's modules; SW_E_NOMEM, or SW_E_UNSUPPORTED for no arch. */
sw_status swi_stack_set_open(const struct swi_target *t, swi_stack_set **out);
void swi_stack_set_close(swi_stack_set *s);

/*
 * Walk thread `index`: at most `max` frames into `frames` (*count), its
 * id in *tid and its registers at the stop in *ctx.  *walk_status is
 * SW_OK or why the walk stopped early (the frames so far are kept).
 */
sw_status swi_stack_set_walk(swi_stack_set *s, unsigned index, sw_context *ctx, int *tid,
                             struct swi_frame *frames, size_t max, size_t *count,
                             sw_status *walk_status);

#endif /* SW_TARGET_STACK_SET_H */
