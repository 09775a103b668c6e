/*
 * swprof_deferred.c - samples walked again once the code they stopped in
 * is imported.
 *
 * The agent registers the program's modules as placeholders, lazily and
 * signal-safely (SW_MODULE_PLACEHOLDER | SW_MODULE_LAZY_SIGNAL_SAFE):
 * registering a library costs its file's headers, not its symbols,
 * .eh_frame_hdr or CFI, so a program starts under the agent nearly as
 * fast as without it.  A walk that reaches a module not loaded yet, or a
 * function whose CFI is not imported yet, cannot load or import it while
 * the target is stopped (that allocates and locks, and the stopped thread
 * may hold malloc's lock): it notes the address and stops with
 * SW_E_NOTIMPORTED.
 *
 * Such a sample is not lost.  While the target is still stopped, its
 * registers and the top of its stack are copied into a slot allocated
 * at start (a copy, as perf's --call-graph dwarf takes with each sample).
 * Once the target runs again the sampler thread loads the modules and
 * imports the functions the walks noted and walks the copy again, as often as the walk goes further,
 * then records the sample.  A stack deeper than the copy, or a sample
 * with every slot taken, stops early and says why.
 */
#define _GNU_SOURCE
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "swprof.h"

#define DEFERRED_SLOTS 8                /* samples of one round (CPU mode: one per thread) */
#define DEFERRED_STACK (256u << 10)     /* bytes of stack copied above SP */
/* Walks of one sample: each imports at least one more function, or the sample is done. */
#define MAX_IMPORT_ROUNDS 64

typedef struct deferred_sample {
	sw_sample sample;       /* points at thread and seed below */
	sw_thread thread;       /* the sampled thread, its memory the copy */
	sw_memory memory;
	sw_context seed;
	uint64_t base, len;     /* the copy holds target bytes [base, base + len) */
	uint64_t head_addr;     /* the Frame list head's slot (0: none), and what it held */
	uint64_t head;
	unsigned char *stack;   /* DEFERRED_STACK bytes */
} deferred_sample;

static deferred_sample slots[DEFERRED_SLOTS];
static unsigned used;

/* The copy as the target's memory: its stack bytes and the Frame list head, nothing else. */
static sw_status read_copy(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const deferred_sample *d = ctx;

	if (addr >= d->base && len <= d->len && addr - d->base <= d->len - len) {
		memcpy(buf, d->stack + (addr - d->base), len);
		return SW_OK;
	}
	if (d->head_addr && addr == d->head_addr && len <= sizeof d->head) {
		memcpy(buf, &d->head, len);
		return SW_OK;
	}
	return SW_E_BADADDR;
}

int deferred_init(void)
{
	for (unsigned i = 0; i < DEFERRED_SLOTS; i++)
		if (!slots[i].stack && !(slots[i].stack = malloc(DEFERRED_STACK)))
			return 0;
	return 1;
}

int defer_sample(const sw_sample *s)
{
	const sw_thread *t = s->thread;
	uint64_t sp = sw_context_sp(s->seed), want;
	unsigned ptr = sw_arch_pointer_size((sw_arch)t->arch);
	deferred_sample *d;

	if (used == DEFERRED_SLOTS || !slots[used].stack || sp < t->stack_lo || sp >= t->stack_hi)
		return 0;
	d = &slots[used];
	/* A frame's saved registers and return address lie at or above SP. */
	d->base = sp & ~(uint64_t)(ptr - 1);
	want = t->stack_hi - d->base;
	d->len = want < DEFERRED_STACK ? want : DEFERRED_STACK;
	if (sw_memory_read(t->memory, d->base, d->stack, (size_t)d->len) != SW_OK)
		return 0;
	d->head_addr = t->frame_head;
	d->head = 0;
	if (d->head_addr && sw_memory_read(t->memory, d->head_addr, &d->head, ptr) != SW_OK)
		return 0;
	d->seed = *s->seed;
	d->thread = *t;
	/* The copy is all there is: no alternate signal stack is followed. */
	d->thread.stack_bounds = NULL;
	d->thread.stack_bounds_ctx = NULL;
	memset(&d->memory, 0, sizeof d->memory);
	d->memory.read = read_copy;
	d->memory.ctx = d;
	d->thread.memory = &d->memory;
	d->sample = *s;
	d->sample.thread = &d->thread;
	d->sample.seed = &d->seed;
	used++;
	return 1;
}

/* Load and import what walks noted in every module: how many modules and functions that made walkable. */
static size_t import_noted(void)
{
	size_t total = 0;

	for (unsigned i = 0; i < prof.nmodules; i++) {
		size_t n = 0;

		if (sw_module_import_noted(prof.modules[i].m, 0, &n) == SW_OK)
			total += n;
	}
	return total;
}

void walk_deferred(void)
{
	if (used == 0)
		return;
	import_noted();
	for (unsigned i = 0; i < used; i++) {
		walk_buf w;

		for (unsigned round = 0;; round++) {
			memset(&w, 0, sizeof w);
			walk_sample(&slots[i].sample, &w);
			if (w.stopped != SW_E_NOTIMPORTED || round == MAX_IMPORT_ROUNDS || import_noted() == 0)
				break;
		}
		record_sample(&w, slots[i].sample.ticks, slots[i].sample.tid);
	}
	used = 0;
}
