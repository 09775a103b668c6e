/*
 * synth_internal.h - what the synthetic-stack files share.
 *
 * The generator (synth_gen.c) runs a model machine over the instructions it
 * invents and records, for every managed frame and every Frame it lays out,
 * what that machine saw.  The expectation (synth_expect.c) replays the
 * walk's rules over those records alone: it never decodes an SWU blob and
 * never reads the stack image, so a decoder or walker bug, or a corrupted
 * stack, shows up as a difference.
 *
 * Everything that differs per architecture is in one swi_synth_arch table
 * (synth_x64.c, synth_x86.c, synth_arm64.c); the rest reads it.
 */
#ifndef SW_LIB_SYNTH_INTERNAL_H
#define SW_LIB_SYNTH_INTERNAL_H

#include "util.h"
#include "arch.h"

/* Hard limits of the generator. */
#define SWI_SYNTH_MAX_FRAMES      4096  /* managed frames in one stack */
#define SWI_SYNTH_MAX_PROLOG_OPS  32    /* arm64: paciasp, 20 registers, alloc, frame */
#define SWI_SYNTH_MAX_EPILOGS     3
#define SWI_SYNTH_MAX_EPILOG_OPS  32    /* restores, free, pops, autiasp */
#define SWI_SYNTH_MAX_BODIES      (SWI_SYNTH_MAX_EPILOGS + 1)
#define SWI_SYNTH_MAX_BODY_OPS    64    /* x86 argument pushes, pops and calls */
#define SWI_SYNTH_MAX_REGIONS     2     /* holes for Frames in one method's area */
#define SWI_SYNTH_MAX_GC          24    /* GC live ranges of one method */
#define SWI_SYNTH_MAX_PROTECTED   6     /* slots one Frame protects */
#define SWI_SYNTH_RECORD_SIZE     (16 + 8 * SW_MAX_REGS)    /* a context record */

/* Register arrays are indexed by the arch's register numbers. */
#define SWI_SYNTH_NREGS SW_MAX_REGS

#define SWI_BIT(r) (1ULL << (r))

struct swi_synth_gen;
struct swi_synth_method;

/* What the generator, the expectation and the check need to know of an arch. */
struct swi_synth_arch {
	sw_arch arch;
	unsigned ptr;                   /* pointer (and stack slot) size */
	unsigned nregs;
	unsigned ip, sp, fp;            /* fp: the frame register Frames and quick unwinds keep */
	int lr;                         /* link register, or -1: a call pushes the return address */
	uint64_t value_mask;            /* register width */
	uint64_t ptrauth_mask;          /* where a signed return address keeps its code, or 0 */
	uint64_t callee_saved;          /* compared and unwound, with IP and SP */
	uint64_t float_regs;            /* among them (never GC roots in the model) */
	uint64_t volatile_regs;         /* anything after a call (the link register aside) */
	const uint8_t *block_regs;      /* TransitionFrame block, ascending; the RA follows */
	unsigned nblock_regs;
	unsigned insn_align;            /* 1 (variable length) or 4 (fixed) */
	/* Where things live in the target. */
	uint64_t window_hi;             /* end of the stack window */
	uint64_t code_base;
	uint64_t native_base, native_mask;
	uint64_t handle_base;           /* Frame method handles */
	/* Invent one method's instructions; leaf_ok: it need not be able to call. */
	void (*invent)(struct swi_synth_gen *g, struct swi_synth_method *m,
	               int want_region, int leaf_ok);
};

extern const struct swi_synth_arch swi_synth_x64, swi_synth_x86, swi_synth_arm64;

/* The table of `arch`, or NULL. */
const struct swi_synth_arch *swi_synth_arch_get(sw_arch arch);

/*
 * A Frame kind the generator puts in unmanaged blocks as a marker (no
 * return address: reported and passed over), forced or at random
 * (synth_gen.c: the debugger's markers, ExceptionFilterFrame,
 * ProtectByRefsFrame, ProtectValueClassFrame).
 */
int swi_synth_is_marker_type(uint32_t type);

/* Sizes of the Frames in target memory (frame.h layout). */
static inline unsigned swi_synth_frame_size(const struct swi_synth_arch *a, unsigned fields)
{
	return a->ptr + 8 + a->ptr * fields;
}

static inline uint64_t swi_synth_compared(const struct swi_synth_arch *a)
{
	return a->callee_saved | SWI_BIT(a->ip) | SWI_BIT(a->sp);
}

/* One instruction with an unwind effect, and the offset just past it. */
enum swi_synth_op_kind {
	SWI_OP_PUSH,            /* prolog: SP -= arg (0: a pointer); [SP] = reg */
	SWI_OP_PUSH_PAIR,       /* prolog: SP -= arg; [SP] = reg; [SP + 8] = reg2 */
	SWI_OP_ALLOC,           /* prolog: SP -= arg */
	SWI_OP_SET_FRAME,       /* prolog: reg = SP + arg */
	SWI_OP_SAVE,            /* prolog: [SP + arg] = reg */
	SWI_OP_SAVE_PAIR,       /* prolog: [SP + arg] = reg; [SP + arg + 8] = reg2 */
	SWI_OP_SIGN,            /* prolog: paciasp, lr signed */
	SWI_OP_RESTORE,         /* epilog: reg = its save slot */
	SWI_OP_RESTORE_PAIR,    /* epilog: reg, reg2 = their save slots */
	SWI_OP_FREE,            /* epilog: SP += arg */
	SWI_OP_SP_FROM_FRAME,   /* epilog: SP = fp + arg */
	SWI_OP_POP,             /* epilog: reg = [SP]; SP += arg (0: a pointer) */
	SWI_OP_POP_PAIR,        /* epilog: reg = [SP]; reg2 = [SP + 8]; SP += arg */
	SWI_OP_AUTH,            /* epilog: autiasp, lr plain again */
	SWI_OP_PUSH_ARGS,       /* body: SP -= arg */
	SWI_OP_POP_ARGS,        /* body: SP += arg */
	SWI_OP_CALL,            /* body: a call (no SP change once it returns) */
	SWI_OP_CALL_POPS        /* body: a call whose callee pops arg bytes: SP += arg */
};

struct swi_synth_op {
	uint8_t kind;           /* an swi_synth_op_kind */
	uint8_t reg, reg2;
	uint32_t end;           /* code offset just past the instruction */
	int64_t arg;            /* size or offset */
};

struct swi_synth_epilog {
	uint32_t start, end;    /* first instruction .. just past the ret */
	unsigned nops;
	struct swi_synth_op ops[SWI_SYNTH_MAX_EPILOG_OPS];
};

struct swi_synth_range {
	uint32_t lo, hi;        /* [lo, hi) */
};

/*
 * One GC live range: a stack slot at [CFA + cfa_offset] or a register
 * holds a reference at offsets [lo, hi).  A location may have several
 * ranges (in different bodies), always with the same flags.
 */
struct swi_synth_gc {
	uint8_t in_reg, reg;
	uint16_t flags;         /* SW_GC_* */
	int32_t cfa_offset;
	uint32_t lo, hi;
};

struct swi_synth_method {
	void *handle;
	uint64_t start;
	uint32_t size;
	uint32_t prolog_end;
	uint32_t alloc;         /* bytes the prolog allocates */
	int has_frame;          /* fp is a frame register */
	int can_call;           /* its bodies may call (arm64: lr is saved) */
	int saves_all;          /* it saves every integer callee-saved register */
	unsigned nops;
	struct swi_synth_op ops[SWI_SYNTH_MAX_PROLOG_OPS];
	unsigned nepilogs;
	struct swi_synth_epilog epilogs[SWI_SYNTH_MAX_EPILOGS];
	unsigned nbodies;
	struct swi_synth_range bodies[SWI_SYNTH_MAX_BODIES];
	unsigned nbody_ops;     /* ascending ends, all inside bodies */
	struct swi_synth_op body_ops[SWI_SYNTH_MAX_BODY_OPS];
	/* Holes for Frames in the allocated area, ascending offsets from the body's SP. */
	unsigned nregions;
	uint32_t regions[SWI_SYNTH_MAX_REGIONS];
	uint32_t code_flags;    /* SW_CODE_FUNCLET, SW_CODE_FILTER */
	unsigned parent;        /* a funclet's parent method (index) */
	unsigned ngc;
	struct swi_synth_gc gc[SWI_SYNTH_MAX_GC];
};

static inline int swi_synth_gc_live(const struct swi_synth_gc *gc, uint32_t off)
{
	return gc->lo <= off && off < gc->hi;
}

/*
 * Live at `off` or just before it.  The machine gives a reference to both,
 * because which one a walk reports depends on how it reaches the frame: an
 * active frame at its IP, a frame stopped at a call at its return address
 * minus one (see managed_roots in synth_expect.c).
 */
static inline int swi_synth_gc_live_near(const struct swi_synth_gc *gc, uint32_t off)
{
	return swi_synth_gc_live(gc, off) || (off && swi_synth_gc_live(gc, off - 1));
}

/* One managed frame on the stack, as the model machine saw it at its IP. */
struct swi_synth_inst {
	unsigned method;
	uint32_t offset;                        /* ip - method start */
	int in_body;
	uint64_t ip, sp;
	uint64_t cfa;                           /* the caller's SP at the call into it */
	uint64_t ra;                            /* the return address, unsigned */
	uint64_t ra_loc;                        /* its slot; 0 while it is in the link register */
	uint64_t regs[SWI_SYNTH_NREGS];         /* registers at ip */
	uint64_t caller_regs[SWI_SYNTH_NREGS];  /* registers at the call into it */
	uint64_t saved_at[SWI_SYNTH_NREGS];     /* slot of each caller value still saved */
	uint64_t gc_value[SWI_SYNTH_MAX_GC];    /* the reference in each live stack slot */
};

/*
 * One Frame and the context it establishes when its return address is
 * managed; or one exception tracker (type 0, ra the faulted IP) and the
 * faulted frame's context in its record.
 */
struct swi_synth_fr {
	uint64_t addr;
	uint32_t type;
	uint32_t attributes;
	int stale;                              /* below the seed's SP, or a tracker already dealt with */
	uint64_t method;                        /* ICF datum, TF method, ... */
	uint64_t ra;                            /* 0: inactive or not followed */
	unsigned nprotected;                    /* slots it protects (TF, HMF) */
	uint64_t protected_slot[SWI_SYNTH_MAX_PROTECTED];
	uint64_t protected_value[SWI_SYNTH_MAX_PROTECTED];
	uint64_t valid;
	uint64_t regs[SWI_SYNTH_NREGS];
	uint64_t locs[SWI_SYNTH_NREGS];
};

struct sw_synth {
	sw_arch arch;
	const struct swi_synth_arch *a;
	uint64_t seed;
	sw_synth_params params;
	sw_codemap *map;
	struct swi_synth_method *methods;       /* ascending start addresses */
	unsigned nmethods;
	struct swi_synth_inst *insts;           /* innermost first */
	unsigned ninsts;
	struct swi_synth_fr *frames;            /* ascending addresses: list order */
	unsigned nframes;
	struct swi_synth_fr *trackers;          /* exception trackers, ascending addresses */
	unsigned ntrackers;
	int native_seed;                        /* the seed IP is unmanaged */
	unsigned char *image;                   /* the stack image's storage */
	uint64_t image_lo;                      /* target address of image[0] */
	uint64_t head_slot, head;               /* Frame list head slot and its value */
	uint64_t exception_head_slot;           /* the tracker list's, or 0 without SW_SYNTH_TRACKERS */
	sw_memory mem;
	sw_thread thread;
	sw_context ctx;
};

/* splitmix64: small, fast, and the same sequence on every host. */
static inline uint64_t swi_synth_rand(uint64_t *state)
{
	uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* A uniform integer in [0, n); 0 when n is 0. */
static inline uint32_t swi_synth_below(uint64_t *state, uint32_t n)
{
	return (uint32_t)(((swi_synth_rand(state) >> 32) * n) >> 32);
}

/* Fill `s` (arch, seed, params set) with a generated stack. */
sw_status swi_synth_generate(sw_synth *s);

/* The expected GC roots of every frame of a walk. */
struct swi_synth_frame_roots {
	size_t first, count;        /* in swi_synth_roots.roots */
	sw_status status;           /* SW_OK or SW_E_NOREG */
};
struct swi_synth_roots {
	sw_gc_root *roots;
	size_t nroots, roots_cap;
	struct swi_synth_frame_roots *frames;
	size_t nframes, frames_cap;
	int nomem;
};

void swi_synth_roots_free(struct swi_synth_roots *r);

/*
 * Replay the walk with `flags` over the records; returns the number of
 * frames (out[] gets the first `cap`).  *consistent is cleared when the
 * records contradict themselves (a generator bug).  With `roots`, also
 * each frame's GC roots; with `err`, how the walk ends (status SW_OK, or
 * the error it must stop with and where).
 */
size_t swi_synth_expect(const sw_synth *s, unsigned flags, sw_synth_frame *out,
                        size_t cap, int *consistent, struct swi_synth_roots *roots,
                        sw_walk_error *err);

/* The method containing `addr`, or NULL. */
const struct swi_synth_method *swi_synth_method_at(const sw_synth *s, uint64_t addr);

/* A readable name of a frame state. */
const char *swi_synth_state_name(uint32_t state);

#endif /* SW_LIB_SYNTH_INTERNAL_H */
