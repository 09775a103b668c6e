/*
 * synth_internal.h - what the synthetic-stack files share.
 *
 * The generator (synth_gen.c) runs a model machine over the instructions it
 * invents and records, for every managed frame and every Frame it lays out,
 * what that machine saw.  The expectation (synth_expect.c) replays the
 * walk's rules over those records alone: it never decodes an SWU blob and
 * never reads the stack image, so a decoder or walker bug, or a corrupted
 * stack, shows up as a difference.
 */
#ifndef SW_LIB_SYNTH_INTERNAL_H
#define SW_LIB_SYNTH_INTERNAL_H

#include "internal.h"

/* Hard limits of the generator. */
#define SWI_SYNTH_MAX_FRAMES      4096  /* managed frames in one stack */
#define SWI_SYNTH_MAX_PROLOG_OPS  16    /* 6 pushes, alloc, set frame, 6 saves */
#define SWI_SYNTH_MAX_EPILOGS     3
#define SWI_SYNTH_MAX_EPILOG_OPS  16    /* restores, free, pops */
#define SWI_SYNTH_MAX_BODIES      (SWI_SYNTH_MAX_EPILOGS + 1)
#define SWI_SYNTH_MAX_REGIONS     2     /* holes for Frames in one method's area */

#define SWI_SYNTH_NREGS SW_X64_NREGS

/* Sizes of the Frames in x64 target memory (frame.h layout, P = 8). */
#define SWI_SYNTH_ICF_SIZE (16 + 8 * SW_ICF_FIELDS)
#define SWI_SYNTH_TF_SIZE  (16 + 8 * SW_TF_FIELDS)
/* x64 transition block: r15, r14, r13, r12, rbx, rbp, return address. */
#define SWI_SYNTH_TB_SLOTS 7

/* The registers a walk report is compared on. */
#define SWI_BIT(r) (1ULL << (r))
#define SWI_SYNTH_CALLEE_SAVED \
	(SWI_BIT(SW_X64_RBX) | SWI_BIT(SW_X64_RBP) | SWI_BIT(SW_X64_R12) | \
	 SWI_BIT(SW_X64_R13) | SWI_BIT(SW_X64_R14) | SWI_BIT(SW_X64_R15))
#define SWI_SYNTH_COMPARED \
	(SWI_SYNTH_CALLEE_SAVED | SWI_BIT(SW_X64_RIP) | SWI_BIT(SW_X64_RSP))

/* One instruction with an unwind effect, and the offset just past it. */
enum swi_synth_op_kind {
	SWI_OP_PUSH,            /* prolog: SP -= 8; [SP] = reg */
	SWI_OP_ALLOC,           /* prolog: SP -= arg */
	SWI_OP_SET_FRAME,       /* prolog: RBP = SP + arg */
	SWI_OP_SAVE,            /* prolog: [SP + arg] = reg */
	SWI_OP_RESTORE,         /* epilog: reg = its save slot */
	SWI_OP_FREE,            /* epilog: SP += arg */
	SWI_OP_SP_FROM_FRAME,   /* epilog: SP = RBP + arg */
	SWI_OP_POP              /* epilog: reg = [SP]; SP += 8 */
};

struct swi_synth_op {
	uint8_t kind;           /* an swi_synth_op_kind */
	uint8_t reg;
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

struct swi_synth_method {
	void *handle;
	uint64_t start;
	uint32_t size;
	uint32_t prolog_end;
	uint32_t alloc;         /* bytes the prolog allocates */
	int has_frame;          /* RBP is a frame register */
	unsigned nops;
	struct swi_synth_op ops[SWI_SYNTH_MAX_PROLOG_OPS];
	unsigned nepilogs;
	struct swi_synth_epilog epilogs[SWI_SYNTH_MAX_EPILOGS];
	unsigned nbodies;
	struct swi_synth_range bodies[SWI_SYNTH_MAX_BODIES];
	/* Holes for Frames in the allocated area, ascending offsets from the body's SP. */
	unsigned nregions;
	uint32_t regions[SWI_SYNTH_MAX_REGIONS];
};

/* One managed frame on the stack, as the model machine saw it at its IP. */
struct swi_synth_inst {
	unsigned method;
	uint32_t offset;                        /* ip - method start */
	int in_body;
	uint64_t ip, sp;
	uint64_t ra_slot;                       /* entry SP; the CFA is ra_slot + 8 */
	uint64_t ra;                            /* the return address stored there */
	uint64_t regs[SWI_SYNTH_NREGS];         /* registers at ip */
	uint64_t caller_regs[SWI_SYNTH_NREGS];  /* registers at the call into it */
	uint64_t saved_at[SWI_SYNTH_NREGS];     /* slot of each caller value still saved */
};

/* One Frame and the context it establishes when its return address is managed. */
struct swi_synth_fr {
	uint64_t addr;
	uint32_t type;
	uint32_t attributes;
	uint64_t method;                        /* ICF datum, TF method */
	uint64_t ra;                            /* 0: inactive */
	uint64_t valid;
	uint64_t regs[SWI_SYNTH_NREGS];
	uint64_t locs[SWI_SYNTH_NREGS];
};

struct sw_synth {
	sw_arch arch;
	uint64_t seed;
	sw_synth_params params;
	sw_codemap *map;
	struct swi_synth_method *methods;       /* ascending start addresses */
	unsigned nmethods;
	struct swi_synth_inst *insts;           /* innermost first */
	unsigned ninsts;
	struct swi_synth_fr *frames;            /* ascending addresses: list order */
	unsigned nframes;
	int native_seed;                        /* the seed IP is unmanaged */
	unsigned char *image;                   /* the stack image's storage */
	uint64_t image_lo;                      /* target address of image[0] */
	uint64_t head_slot, head;               /* Frame list head slot and its value */
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

/*
 * Replay the walk with `flags` over the records; returns the number of
 * frames (out[] gets the first `cap`).  *consistent is cleared when the
 * records contradict themselves (a generator bug).
 */
size_t swi_synth_expect(const sw_synth *s, unsigned flags, sw_synth_frame *out,
                        size_t cap, int *consistent);

/* The method containing `addr`, or NULL. */
const struct swi_synth_method *swi_synth_method_at(const sw_synth *s, uint64_t addr);

/* A readable name of a frame state. */
const char *swi_synth_state_name(uint32_t state);

#endif /* SW_LIB_SYNTH_INTERNAL_H */
