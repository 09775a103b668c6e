/*
 * toyjit.h - a toy JIT for x86-64 Linux that emits real machine code.
 *
 * It emits a handful of managed methods, each with a different prolog
 * shape, describes every prolog and epilog to the SWU builder as it emits
 * them, and registers the methods in an sw_codemap.  The methods call each
 * other in a cycle, counting an argument down; the last one calls a stub
 * that pushes a TransitionFrame and calls a C helper, where a test, the demo
 * or the benchmark walks the stack.  Every method also pushes itself on a
 * shadow stack, which is what a correct walk must find.
 *
 * The call chain for toyjit_run(jit, depth, pinvoke_at):
 *
 *   C caller -> entry thunk (native: loads known values into the callee-saved
 *   registers) -> M[0] -> M[1] -> ... -> M[depth-1] -> stub (native, pushes a
 *   TransitionFrame) -> helper (C)
 *
 * where frame i runs method i % nmethods.  When pinvoke_at >= 0, frame
 * pinvoke_at does not call the next method directly: it pushes an
 * InlinedCallFrame and calls a C function (a P/Invoke), which calls the next
 * method back through a function pointer (a reverse P/Invoke).
 *
 * One instance serves one thread: the addresses of its shadow stack and of
 * the thread's Frame list head are built into the code.
 */
#ifndef TOYJIT_H
#define TOYJIT_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>

/* The prolog shapes (the comments give prolog ... epilog). */
typedef enum toyjit_shape {
	TOYJIT_RBP_FRAME,   /* push rbp; mov rbp,rsp; push rbx; sub rsp,56 ... lea rsp,[rbp-8]; pop rbx; pop rbp */
	TOYJIT_NO_FP,       /* push r15,r14,r13,r12,rbx; sub rsp,48 ... add rsp,48; pop x5 */
	TOYJIT_BIG_FRAME,   /* push rbp; mov rbp,rsp; probe 3 pages; sub rsp,0x3000 ... mov rsp,rbp; pop rbp */
	TOYJIT_MOV_SAVES,   /* sub rsp,88; mov [rsp+16],rbx; mov [rsp+24],r12 ... reload; add rsp,88 */
	TOYJIT_OFFSET_FP,   /* push rbp; push rbx; sub rsp,72; lea rbp,[rsp+32] ... lea rsp,[rbp+40]; pop rbx; pop rbp */
	TOYJIT_NSHAPES
} toyjit_shape;

#define TOYJIT_MAX_METHODS 16
#define TOYJIT_MAX_DEPTH   1024

struct toyjit;

/* A method descriptor: its address is the method handle given to the code map. */
typedef struct toyjit_method {
	char name[40];
	unsigned index;             /* position in the method table */
	toyjit_shape shape;
	int native;                 /* 1: the P/Invoke target (C code, not registered) */
	uint64_t start;             /* code address */
	uint32_t size;              /* code size */
	uint32_t prolog_size;
	uint64_t saved_regs;        /* bit r (DWARF number): this method saves and clobbers r */
	uint8_t *swu;               /* its SWU blob (also copied into the code map) */
	size_t swu_size;
	struct toyjit *jit;
} toyjit_method;

/*
 * One shadow stack entry, written by the method's body right after it has
 * clobbered its registers, so it holds exactly what the method's registers
 * are at every call it makes: the oracle a walk is checked against.
 */
typedef struct toyjit_shadow_entry {
	const toyjit_method *method;
	uint64_t sp;                            /* rsp in the body (the frame's SP at its calls) */
	uint64_t rbx, rbp, r12, r13, r14, r15;
} toyjit_shadow_entry;

/* Called by the stub with the TransitionFrame it pushed (already linked). */
typedef void (*toyjit_helper_fn)(struct toyjit *jit, sw_transition_frame *tf);

typedef struct toyjit {
	/* Read and written by the generated code (their addresses are in it). */
	toyjit_shadow_entry *shadow_top;        /* next free shadow stack entry */
	int32_t pinvoke_n;                      /* argument value at which a method P/Invokes */
	int32_t reserved;
	void *entries[TOYJIT_MAX_METHODS];      /* each method's entry point */
	void *stub_entry;
	toyjit_helper_fn helper;
	sw_frame **head;                        /* the thread's Frame list head */
	toyjit_shadow_entry shadow[TOYJIT_MAX_DEPTH + 8]; /* outermost first */

	void *user;                             /* for the helper */
	sw_codemap *map;
	toyjit_method methods[TOYJIT_MAX_METHODS];
	unsigned nmethods;
	toyjit_method native_target;            /* the InlinedCallFrame's datum */
	uint64_t entry_regs[SW_X64_NREGS];      /* what the entry thunk loads (DWARF numbers) */
	uint64_t entry_regs_mask;               /* which of entry_regs it loads */
	uint8_t *code;                          /* the mapping (read + execute after create) */
	size_t code_cap;
	uint64_t thunk_start, thunk_size;       /* native code: the entry thunk */
	uint64_t stub_start, stub_size;         /* native code: the stub */
	unsigned run_depth;                     /* depth of the current toyjit_run */
	int run_pinvoke_at;
	unsigned pinvoke_calls;                 /* bumped as the P/Invoke target enters and returns */
} toyjit;

/*
 * toyjit_create - emit one method per entry of shapes[0..n) (n <= 16) plus
 * the entry thunk and the stub, and register the methods in `map`.  `head`
 * is the calling thread's Frame list head; `helper` is what the stub calls.
 */
sw_status toyjit_create(toyjit **out, sw_codemap *map, sw_frame **head,
                        const toyjit_shape *shapes, unsigned n,
                        toyjit_helper_fn helper, void *user);

/* toyjit_destroy - unregister the methods and free the code. */
void toyjit_destroy(toyjit *jit);

/*
 * toyjit_run - run a chain of `depth` managed frames (1 .. TOYJIT_MAX_DEPTH)
 * that ends in the stub; frame `pinvoke_at` (0 = outermost, < depth - 1)
 * makes the P/Invoke, or none when it is negative.  Returns SW_OK, or
 * SW_E_INVAL for bad arguments, or SW_E_MISMATCH when the shadow stack was
 * not balanced afterwards.
 */
sw_status toyjit_run(toyjit *jit, unsigned depth, int pinvoke_at);

/* toyjit_shadow_depth - how many methods are on the shadow stack now. */
size_t toyjit_shadow_depth(const toyjit *jit);

/* toyjit_frame_method - the method that frame i (0 = outermost) of the current run runs. */
const toyjit_method *toyjit_frame_method(const toyjit *jit, unsigned i);

/* toyjit_method_of - the descriptor for a method handle, or NULL if it is not one of jit's. */
const toyjit_method *toyjit_method_of(const toyjit *jit, const void *handle);

/* toyjit_shape_name - "rbp_frame", "no_fp", ... */
const char *toyjit_shape_name(toyjit_shape shape);

/* toyjit_shadow_reg - the value of DWARF register `reg` (sp or callee-saved) in entry e; 0 if not recorded. */
uint64_t toyjit_shadow_reg(const toyjit_shadow_entry *e, unsigned reg);

/* toyjit_clobber_value - what method `index` puts in DWARF register `reg` in its body. */
uint64_t toyjit_clobber_value(unsigned index, unsigned reg);

/* toyjit_is_native - 1 if ip lies in the entry thunk or the stub. */
int toyjit_is_native(const toyjit *jit, uint64_t ip);

#endif /* TOYJIT_H */
