/*
 * toyjit.h - a toy JIT that emits real machine code for its host: x86-64,
 * 32-bit x86 or arm64 Linux.
 *
 * It emits a handful of managed methods, each with a different prolog
 * shape, describes every prolog and epilog (and, on x86, every outgoing
 * argument push) to the SWU builder as it emits them, and registers the
 * methods in an sw_codemap.  The methods call each other in a cycle,
 * counting an argument down; the last one calls a stub that pushes a
 * TransitionFrame and calls a C helper, where a test, the demo or the
 * benchmark walks the stack.  Every method also pushes itself on a shadow
 * stack, which is what a correct walk must find.
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
 * method back through a function pointer (a reverse P/Invoke).  On arm64
 * every method also calls a leaf method (one that never saves lr) first.
 *
 * The JIT records where each instruction starts, each call site and where
 * the shadow push and pop take effect, so that a test can stop the code at
 * any instruction (toyjit_async.h) and know what the stack holds there.
 *
 * Objects (x86-64 back end): every method allocates two objects from a toy
 * heap with an inline bump allocation, A (in a stack slot) and B (A's
 * reference field, and in a callee-saved register in most shapes), keeps
 * them across its calls and, once they return, adds their payloads to
 * jit->result; the innermost passes A to the stub, whose TransitionFrame
 * protects it.  The SWU GC information says where each reference lives at
 * every offset, so that a moving collector (toyjit_gc.h) can run at the
 * deepest point or at any instruction and the result stays right.
 *
 * Exceptions (x86-64 back end): toyjit_run_throw makes the innermost method
 * call a thrower, a method whose "try" calls a throw stub (a second
 * TransitionFrame stub) into C dispatch code, which runs the thrower's
 * catch funclet with the thrower's frame pointer (the establisher frame);
 * the funclet calls the ordinary stub, where the walk and the GC happen.
 * The funclet follows the thrower's code, and the thrower's SWU records
 * the catch clause (sw_swu_eh_clause) that names it.
 *
 * One instance serves one thread: the addresses of its shadow stack and of
 * the thread's Frame list head are built into the code.
 */
#ifndef TOYJIT_H
#define TOYJIT_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>

/*
 * The prolog shapes, per architecture; toyjit_create takes the host's.
 * Every architecture has TOYJIT_NSHAPES of them; each back end's prolog
 * and epilog code shows them instruction by instruction.
 */
typedef unsigned toyjit_shape;
enum {
	/* x86-64 (the comments give prolog ... epilog) */
	TOYJIT_RBP_FRAME = 0, /* push rbp; mov rbp,rsp; push rbx; sub rsp,56 ... lea rsp,[rbp-8]; pop rbx; pop rbp */
	TOYJIT_NO_FP,         /* push r15,r14,r13,r12,rbx; sub rsp,48 ... add rsp,48; pop x5 */
	TOYJIT_BIG_FRAME,     /* push rbp; mov rbp,rsp; probe 3 pages; sub rsp,0x3000 ... mov rsp,rbp; pop rbp */
	TOYJIT_MOV_SAVES,     /* sub rsp,88; mov [rsp+16],rbx; mov [rsp+24],r12 ... reload; add rsp,88 */
	TOYJIT_OFFSET_FP,     /* push rbp; push rbx; sub rsp,72; lea rbp,[rsp+32] ... lea rsp,[rbp+40]; pop rbx; pop rbp */
	TOYJIT_NSHAPES
};
enum {
	/* 32-bit x86: every method is stdcall (ret 4) and pushes its callees' arguments */
	TOYJIT_X86_EBP_FRAME = 0, /* push ebp; mov ebp,esp; push ebx; sub esp,36 ... lea esp,[ebp-4]; pop ebx; pop ebp */
	TOYJIT_X86_ESP_FRAME,     /* push ebx,esi,edi; sub esp,32 ... add esp,32; pop x3 */
	TOYJIT_X86_BIG_FRAME,     /* push ebp; mov ebp,esp; probe 3 pages; sub esp,0x3008 ... mov esp,ebp; pop ebp */
	TOYJIT_X86_MOV_SAVES,     /* sub esp,44; mov [esp+32],ebx; mov [esp+36],esi ... reload; add esp,44 */
	TOYJIT_X86_OFFSET_FP      /* push ebp; push ebx; sub esp,52; lea ebp,[esp+32] ... lea esp,[ebp+20]; pop ebx; pop ebp */
};
enum {
	/* arm64 */
	TOYJIT_ARM64_FP_PAIRS = 0, /* stp fp,lr,[sp,#-64]!; mov fp,sp; stp x19-x22 and d8,d9; sub sp,48 ... */
	TOYJIT_ARM64_PUSH_SIZED,   /* str x28,[sp,#-16]!; stp x25,x26,[sp,#-16]!; stp fp,lr,[sp,#-16]!; mov fp,sp; sub sp,48 ... */
	TOYJIT_ARM64_BIG_FRAME,    /* stp fp,lr,[sp,#-32]!; mov fp,sp; str x19,[sp,#16]; probe 3 pages; sub sp,0x3000 ... */
	TOYJIT_ARM64_PAC,          /* paciasp; stp fp,lr,[sp,#-48]!; mov fp,sp; stp x27,x28; stp d10,d11; sub sp,48 ... autiasp */
	TOYJIT_ARM64_FP_TOP        /* sub sp,96; stp fp,lr,[sp,#80]; add fp,sp,#80; stp x23,x24,[sp,#64] ... */
};

#define TOYJIT_MAX_METHODS 16
#define TOYJIT_MAX_DEPTH   1024
#define TOYJIT_MAX_CALLS   8        /* call sites in one method */
#define TOYJIT_SHADOW_REGS 11       /* callee-saved registers a shadow entry records */

/* The calling convention of managed entry points as C sees them (stdcall on x86). */
#if defined(__i386__)
#define TOYJIT_MANAGED_CC __attribute__((stdcall))
#else
#define TOYJIT_MANAGED_CC
#endif
typedef void (TOYJIT_MANAGED_CC *toyjit_entry_fn)(int32_t n);

struct toyjit;

/*
 * Native code the JIT emits but does not register in the code map (the
 * entry thunk, the stubs), with SWU describing it all the same, so that
 * debuggers and profilers can name it and unwind through it
 * (toyjit-demo -G and -j).  The x86-64 back end describes its own; the
 * others leave nnative at 0.  Every method and stub is followed by at
 * least TOYJIT_CODE_GAP free bytes, where perf maps its unwind tables.
 */
typedef struct toyjit_native_code {
	const char *name;
	uint64_t start;
	uint32_t size;
	uint8_t *swu;               /* malloc'ed */
	size_t swu_size;
} toyjit_native_code;
#define TOYJIT_MAX_NATIVE 4

/* A call site: the call returns to `ret_offset`; SP is then `args` bytes below the body's. */
typedef struct toyjit_call_site {
	uint32_t ret_offset;
	uint32_t args;              /* argument bytes still pushed while the callee runs */
} toyjit_call_site;

/* A method descriptor: its address is the method handle given to the code map. */
typedef struct toyjit_method {
	char name[40];
	unsigned index;             /* position in the method table */
	toyjit_shape shape;
	int native;                 /* 1: the P/Invoke target (C code, not registered) */
	int leaf;                   /* 1: the leaf method (arm64): no frame, lr never saved */
	uint64_t start;             /* code address */
	uint32_t size;              /* code size */
	uint32_t prolog_size;
	uint32_t shadow_push_end;   /* its shadow entry exists at offsets in [push_end, pop_end) */
	uint32_t shadow_pop_end;
	uint32_t ncalls;
	toyjit_call_site calls[TOYJIT_MAX_CALLS];
	uint64_t saved_regs;        /* bit r (DWARF number): this method saves and clobbers r */
	int allocates;              /* 1: allocates objects A and B (toyjit.h, Objects) */
	int gc_reg;                 /* the register holding B across the calls (DWARF), or -1 */
	uint32_t gc_unsafe_start;   /* the allocation sequence: no GC may stop the method there */
	uint32_t gc_unsafe_end;
	uint32_t code_flags;        /* SW_CODE_* it is registered with */
	const struct toyjit_method *parent;   /* a funclet's parent method */
	uint32_t try_start, try_end;  /* the thrower: the try region its catch funclet protects */
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
	uintptr_t sp;                           /* SP in the body, no arguments pushed */
	uintptr_t regs[TOYJIT_SHADOW_REGS];     /* in the order of toyjit_shadow_regs() */
} toyjit_shadow_entry;

/* Called by the stub with the TransitionFrame it pushed (already linked). */
typedef void (*toyjit_helper_fn)(struct toyjit *jit, sw_transition_frame *tf);
/* Called by the throw stub: the exception dispatch, with the thrower's frame pointer. */
typedef void (*toyjit_dispatch_fn)(struct toyjit *jit, sw_transition_frame *tf, uintptr_t establisher);

/* A heap object: TOYJIT_OBJ_WORDS pointer-sized words. */
enum {
	TOYJIT_OBJ_HEADER = 0,      /* 0, or the new address | 1 once the collector moved it */
	TOYJIT_OBJ_PAYLOAD = 1,     /* an integer */
	TOYJIT_OBJ_REF = 2,         /* a reference to another object, or 0 */
	TOYJIT_OBJ_WORDS = 4
};
#define TOYJIT_OBJ_SIZE ((int32_t)(TOYJIT_OBJ_WORDS * sizeof(uintptr_t)))
#define TOYJIT_HEAP_SIZE (256 * 1024)   /* bytes per semispace: a run of any depth fits */
#define TOYJIT_THROW_PAYLOAD 0x7e570000u /* the thrower's object */
#define TOYJIT_CATCH_TYPE 0x02000001u   /* the type token of the thrower's catch clause */

/* A root the collector found, kept until the walk is over. */
typedef struct toyjit_gc_root {
	uint64_t addr;              /* where it lives, or 0: in register reg of the seed context */
	uint64_t value;
	uint32_t reg;
	uint32_t kind;              /* an sw_frame_state: FRAMELESS (method) or FRAME */
} toyjit_gc_root;
#define TOYJIT_GC_MAX_ROOTS 8192

typedef struct toyjit {
	/* Read and written by the generated code (their addresses are in it). */
	toyjit_shadow_entry *shadow_top;        /* next free shadow stack entry */
	int32_t pinvoke_n;                      /* argument value at which a method P/Invokes */
	int32_t reserved;
	void *entries[TOYJIT_MAX_METHODS];      /* each method's entry point */
	void *stub_entry;
	toyjit_helper_fn helper;
	sw_frame **head;                        /* the thread's Frame list head */
	uintptr_t heap_alloc;                   /* the toy heap's next free byte (bump allocation) */
	uintptr_t result;                       /* the program's result: payloads the code added up */
	void *last_call;                        /* what the innermost method calls: stub or thrower */
	void *throw_stub_entry;                 /* the thrower's "throw": a stub into dispatch */
	toyjit_dispatch_fn dispatch;            /* what the throw stub calls */
	toyjit_shadow_entry shadow[TOYJIT_MAX_DEPTH + 8]; /* outermost first */

	void *user;                             /* for the helper */
	sw_codemap *map;
	sw_arch arch;                           /* the host's */
	toyjit_method methods[TOYJIT_MAX_METHODS];
	unsigned nmethods;
	toyjit_method leaf;                     /* arm64's leaf method (leaf.size == 0 elsewhere) */
	toyjit_method native_target;            /* the InlinedCallFrame's datum */
	uint64_t entry_regs[SW_MAX_REGS];       /* what the entry thunk loads (DWARF numbers) */
	uint64_t entry_regs_mask;               /* which of entry_regs it loads */
	uint8_t *code;                          /* the mapping (read + execute after create) */
	size_t code_cap;
	uint8_t *insn_starts;                   /* bit per code byte: an instruction starts there */
	uint64_t thunk_start, thunk_size;       /* native code: the entry thunk */
	uint64_t stub_start, stub_size;         /* native code: the stub */
	unsigned run_depth;                     /* depth of the current toyjit_run */
	int run_pinvoke_at;
	unsigned pinvoke_calls;                 /* bumped as the P/Invoke target enters and returns */
	toyjit_method thrower;                  /* the method with a catch funclet (thrower.size == 0: none) */
	toyjit_method funclet;                  /* its catch handler, registered as a funclet */
	uint64_t throw_stub_start, throw_stub_size; /* native code: the throw stub */
	int run_throw;                          /* the current run goes through the thrower */
	volatile int funclet_active;            /* the dispatcher is running the funclet */
	uint8_t *heap[2];                       /* the two semispaces */
	unsigned heap_cur;                      /* the one allocated from */
	toyjit_gc_root *gc_roots;               /* the collector's root buffer (allocated up front) */
	toyjit_native_code native[TOYJIT_MAX_NATIVE]; /* the thunk and stubs, described */
	unsigned nnative;
	/*
	 * The thread's exception tracker list head, right after its Frame
	 * list head (head + 1: a runtime's thread block holds them side by
	 * side), or NULL.  Set, the throw goes through sw_exception_dispatch
	 * (toyjit_dispatch) and resumes the thrower after its try; NULL, the
	 * dispatch calls the funclet and returns through the throw stub.
	 */
	uintptr_t *exception_head;
	sw_thread dispatch_thread;              /* the thread as the dispatch sees it */
	sw_memory dispatch_memory;
	unsigned dispatched;                    /* throws sw_exception_dispatch caught */
	sw_status dispatch_status;              /* the last dispatch's error, or SW_OK */
} toyjit;

/*
 * toyjit_create - emit one method per entry of shapes[0..n) (n <= 16; the
 * host's shapes) plus the entry thunk, the stub (and the leaf), and register
 * the methods in `map`.  `head` is the calling thread's Frame list head;
 * `helper` is what the stub calls.  SW_E_UNSUPPORTED on other hosts.
 */
sw_status toyjit_create(toyjit **out, sw_codemap *map, sw_frame **head,
                        const toyjit_shape *shapes, unsigned n,
                        toyjit_helper_fn helper, void *user);

/*
 * toyjit_set_emit_hook - have toyjit_create call `fn` for every method (the
 * leaf, the thrower and its funclet too) as soon as its code is emitted
 * and its SWU finished, before it is registered: `code` holds its m->size
 * bytes, m->swu its blob.  Where a JIT checks its metadata against its
 * code (swverify -t) or dumps both.  Process-wide; NULL removes it.
 */
typedef void (*toyjit_emit_fn)(const toyjit_method *m, const uint8_t *code, void *data);
void toyjit_set_emit_hook(toyjit_emit_fn fn, void *data);

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

/*
 * toyjit_run_throw - as toyjit_run without a P/Invoke, but the innermost
 * method calls the thrower, whose funclet calls the stub (and the helper,
 * with jit->funclet_active set).  SW_E_UNSUPPORTED when the back end has
 * no thrower; SW_E_INVAL when jit->exception_head is set but does not
 * follow jit->head.
 */
sw_status toyjit_run_throw(toyjit *jit, unsigned depth);

/*
 * toyjit_expected_result - what jit->result must be after a run of `depth`
 * frames (through the thrower when `throwing`), whatever the collector did
 * meanwhile.  0 when the back end allocates no objects.
 */
uintptr_t toyjit_expected_result(const toyjit *jit, unsigned depth, int throwing);

/* toyjit_shadow_depth - how many methods are on the shadow stack now. */
size_t toyjit_shadow_depth(const toyjit *jit);

/* toyjit_frame_method - the method that frame i (0 = outermost) of the current run runs. */
const toyjit_method *toyjit_frame_method(const toyjit *jit, unsigned i);

/* toyjit_method_of - the descriptor for a method handle, or NULL if it is not one of jit's. */
const toyjit_method *toyjit_method_of(const toyjit *jit, const void *handle);

/* toyjit_method_at - the managed method (or the leaf) whose code holds ip, or NULL. */
const toyjit_method *toyjit_method_at(const toyjit *jit, uint64_t ip);

/* toyjit_shape_name - "rbp_frame", "no_fp", ... (the host's shapes). */
const char *toyjit_shape_name(toyjit_shape shape);

/* toyjit_shadow_regs - the callee-saved registers a shadow entry records (DWARF numbers). */
const unsigned char *toyjit_shadow_regs(unsigned *n);

/* toyjit_shadow_reg - the value of register `reg` (SP or a recorded callee-saved) in e; 0 if not recorded. */
uint64_t toyjit_shadow_reg(const toyjit_shadow_entry *e, unsigned reg);

/* toyjit_clobber_value - what method `index` puts in register `reg` in its body (pointer-sized). */
uint64_t toyjit_clobber_value(unsigned index, unsigned reg);

/* toyjit_is_native - 1 if ip lies in the entry thunk or the stub. */
int toyjit_is_native(const toyjit *jit, uint64_t ip);

/* toyjit_insn_start - 1 if an instruction of the JIT's code starts at ip. */
int toyjit_insn_start(const toyjit *jit, uint64_t ip);

/* toyjit_call_site_at - the call site of m that returns to ip, or NULL. */
const toyjit_call_site *toyjit_call_site_at(const toyjit_method *m, uint64_t ip);

/*
 * toyjit_patch - write `len` bytes at code address `addr` (a breakpoint,
 * or the original bytes back) and make them visible to instruction fetch.
 * Async-signal-safe.  SW_E_INVAL outside the JIT's code.
 */
sw_status toyjit_patch(toyjit *jit, uint64_t addr, const void *bytes, size_t len);

/* The host's breakpoint instruction (int3, brk #0) and the registers walks report. */
typedef struct toyjit_host {
	sw_arch arch;
	uint8_t trap[4];
	size_t trap_len;
	unsigned ip_reg, sp_reg, fp_reg;
	uint64_t callee_saved;      /* general registers a walk must carry (the shadow's) */
} toyjit_host;

/* toyjit_host_info - what the host's back end says (NULL when there is none). */
const toyjit_host *toyjit_host_info(void);

#endif /* TOYJIT_H */
