/*
 * synth_gen.h - the generator's state, shared by synth_gen.c (the model
 * machine and the stack) and synth_method.c (inventing and registering
 * methods).  Nothing outside the generator includes it.
 */
#ifndef SW_LIB_SYNTH_GEN_H
#define SW_LIB_SYNTH_GEN_H

#include "synth_internal.h"

/* Where things live in the target. */
#define SYNTH_WINDOW_HI   0x7ffe00000000ULL          /* end of the memory window */
#define SYNTH_HEAD_AREA   64                         /* above the stack: the head slot */
#define SYNTH_STACK_HI    (SYNTH_WINDOW_HI - SYNTH_HEAD_AREA)
#define SYNTH_CODE_BASE   0x10000000ULL
#define SYNTH_NATIVE_BASE 0x7f0000000000ULL          /* unmanaged code addresses */
#define SYNTH_MAX_IMAGE   (64u << 20)                /* a stack image never exceeds this */

/* rbx, rbp, r12-r15 (defined in synth_method.c). */
extern const uint8_t swi_synth_callee_saved[6];

/* The model machine: registers and which caller values sit in which slot. */
struct swi_synth_machine {
	uint64_t r[SWI_SYNTH_NREGS];
	uint64_t saved_at[SWI_SYNTH_NREGS];
};

struct swi_synth_gen {
	sw_synth *s;
	uint64_t rng;                   /* every decision */
	uint64_t junk;                  /* garbage bytes only, so image growth never shifts decisions */
	sw_swu_builder *builder;
	unsigned char *mem;             /* target [mem_lo, SYNTH_WINDOW_HI) */
	size_t mem_size;
	uint64_t mem_lo;
	uint64_t low;                   /* lowest stack address in use */
	uint64_t code_cursor;           /* next free code address */
	unsigned methods_cap, insts_cap, frames_cap;
	struct swi_synth_machine mc;
	sw_status err;                  /* first failure; later steps become no-ops */
};

static inline uint32_t rnd(struct swi_synth_gen *g, uint32_t n)
{
	return swi_synth_below(&g->rng, n);
}

static inline uint64_t rnd64(struct swi_synth_gen *g)
{
	return swi_synth_rand(&g->rng);
}

static inline void fail(struct swi_synth_gen *g, sw_status st)
{
	if (g->err == SW_OK)
		g->err = st;
}

/*
 * A method for the next frame (with a hole for an InlinedCallFrame when
 * want_region), perhaps a new one, registered in the code map; 0 after a
 * failure, which g->err then names.
 */
unsigned swi_synth_pick_method(struct swi_synth_gen *g, int want_region);

#endif /* SW_LIB_SYNTH_GEN_H */
