/*
 * synth_gen.h - the generator's state, shared by synth_gen.c (the stack
 * and its Frames), synth_machine.c (the model machine and the stack
 * image), synth_method.c (what every method has: layout helpers, the SWU
 * description, registration) and the per-arch method shapes (synth_x64.c,
 * synth_x86.c, synth_arm64.c).  Nothing outside the generator includes it.
 */
#ifndef SW_LIB_SYNTH_GEN_H
#define SW_LIB_SYNTH_GEN_H

#include "array_grow.h"
#include "synth_internal.h"

/* Where things live in the target, below the arch's window_hi. */
#define SYNTH_HEAD_AREA   64                         /* above the stack: the head slot */
#define SYNTH_MAX_IMAGE   (64u << 20)                /* a stack image never exceeds this */

/* The model machine: registers and which caller values sit in which slot. */
struct swi_synth_machine {
	uint64_t r[SWI_SYNTH_NREGS];
	uint64_t saved_at[SWI_SYNTH_NREGS];
};

struct swi_synth_gen {
	sw_synth *s;
	const struct swi_synth_arch *a;
	uint64_t rng;                   /* every decision */
	uint64_t junk;                  /* garbage bytes only, so image growth never shifts decisions */
	sw_swu_builder *builder;
	unsigned char *mem;             /* target [mem_lo, window_hi) */
	size_t mem_size;
	uint64_t mem_lo;
	uint64_t window_hi, stack_hi;
	uint64_t low;                   /* lowest stack address in use */
	uint64_t code_cursor;           /* next free code address */
	size_t methods_cap, insts_cap, frames_cap, trackers_cap;
	struct swi_synth_machine mc;
	unsigned pending_entry;         /* 1 + the UnmanagedToManagedFrame awaiting its method, or 0 */
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

/* Room in *arr (capacity *cap) for item number n; 0 after a failure, which g->err then names. */
static inline int grow(struct swi_synth_gen *g, void **arr, size_t *cap, size_t n, size_t size)
{
	if (swi_array_grow(arr, cap, n + 1, size) == SW_OK)
		return 1;
	fail(g, SW_E_NOMEM);
	return 0;
}

/* ---- the model machine and the stack image (synth_machine.c) ---------- */

/* Make [addr, window_hi) backed; new bytes are garbage.  0 after a failure. */
int swi_synth_reserve(struct swi_synth_gen *g, uint64_t addr);
/* The stack in use reaches down to addr. */
void swi_synth_stack_touch(struct swi_synth_gen *g, uint64_t addr);
/* Store `size` bytes, or a target pointer, little-endian. */
void swi_synth_store(struct swi_synth_gen *g, uint64_t addr, unsigned size, uint64_t v);
void swi_synth_store_ptr(struct swi_synth_gen *g, uint64_t addr, uint64_t v);
/* A random register value of the arch's width; new values for the registers in mask. */
uint64_t swi_synth_value(struct swi_synth_gen *g);
void swi_synth_randomize(struct swi_synth_gen *g, uint64_t mask);
/* A recognisable object reference of the arch's width. */
uint64_t swi_synth_object(struct swi_synth_gen *g);
/*
 * Execute `m` from its entry up to code offset `off` (the instructions that
 * end at or before it).  ra_view: `off` is the return address of a call in
 * progress, so a callee that pops its arguments has not done so yet.
 * *frame_sp gets the SP the prolog left.  Returns 1 when `off` lies in a body.
 */
int swi_synth_run_to(struct swi_synth_gen *g, const struct swi_synth_method *m, uint32_t off,
                     int ra_view, uint64_t *frame_sp);

/*
 * A method that calls unmanaged code through an InlinedCallFrame saves
 * every callee-saved register when references may live in them (as the
 * CLR's JIT does): the Frame gives back only IP, SP and the frame
 * register, so its callers' registers must be found in its frame.
 */
static inline int swi_synth_saves_all(const struct swi_synth_gen *g, int want_region)
{
	return want_region && (g->s->params.features & SW_SYNTH_GC_INFO);
}

/* ---- methods (synth_method.c) ------------------------------------------ */

/*
 * A method for the next frame (with a hole for an InlinedCallFrame when
 * want_region; able to call unless leaf_ok), perhaps a new one, registered
 * in the code map; 0 after a failure, which g->err then names.
 */
unsigned swi_synth_pick_method(struct swi_synth_gen *g, int want_region, int leaf_ok);
/* A funclet of method `parent` for the next frame, perhaps a new one. */
unsigned swi_synth_pick_funclet(struct swi_synth_gen *g, unsigned parent, int want_region,
                                int leaf_ok);

/* ---- building blocks of the per-arch method shapes (synth_method.c) ---- */

/* Shuffle n bytes in place. */
void swi_synth_shuffle(struct swi_synth_gen *g, uint8_t *a, unsigned n);

/* The offset past one more instruction (after an unrelated one, sometimes, with filler). */
uint32_t swi_synth_next_insn(struct swi_synth_gen *g, uint32_t *pc, int filler);

/* Append a prolog, epilog or body instruction ending at the next instruction boundary. */
void swi_synth_prolog_op(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc,
                         unsigned kind, unsigned reg, unsigned reg2, int64_t arg);
void swi_synth_epilog_op(struct swi_synth_gen *g, struct swi_synth_epilog *e, uint32_t *pc,
                         unsigned kind, unsigned reg, unsigned reg2, int64_t arg);
void swi_synth_body_op(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t end,
                       unsigned kind, int64_t arg);

/* The prolog ends at *pc (a trailing instruction without unwind effect, sometimes). */
void swi_synth_end_prolog(struct swi_synth_gen *g, struct swi_synth_method *m, uint32_t *pc);

/*
 * A body of random length at *pc, then `nepilogs` epilogs from emit(),
 * each followed by more body (always but after the last, sometimes).
 * `body` adds body operations to a body, or is NULL.
 */
typedef void (*swi_synth_epilog_fn)(struct swi_synth_gen *g, struct swi_synth_method *m,
                                    struct swi_synth_epilog *e, uint32_t *pc, void *ctx);
typedef void (*swi_synth_body_fn)(struct swi_synth_gen *g, struct swi_synth_method *m,
                                  uint32_t *pc);
void swi_synth_bodies_and_epilogs(struct swi_synth_gen *g, struct swi_synth_method *m,
                                  uint32_t *pc, swi_synth_body_fn body,
                                  swi_synth_epilog_fn emit, void *ctx);

/*
 * Choose up to `n` holes of an InlinedCallFrame's size in the body's frame
 * area that no save slot uses (among the lowest 4 KiB), into m->regions.
 */
void swi_synth_place_regions(struct swi_synth_gen *g, struct swi_synth_method *m, unsigned n);

#endif /* SW_LIB_SYNTH_GEN_H */
