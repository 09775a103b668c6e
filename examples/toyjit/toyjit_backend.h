/*
 * toyjit_backend.h - what the toy JIT's common part (toyjit.c) asks of the
 * host's back end (toyjit_x64.c, toyjit_x86.c, toyjit_arm64.c).
 *
 * The common part owns the code mapping, the method table, the SWU builder,
 * registration and runs; a back end says only what differs: how its prologs,
 * bodies and epilogs, its entry thunk and its stub look in machine code.
 */
#ifndef TOYJIT_BACKEND_H
#define TOYJIT_BACKEND_H

#include "toyjit.h"
#include "code_buf.h"

/* Emission state for one method: the buffer, the builder, the first error. */
struct tj_emit {
	toyjit *jit;
	toyjit_method *m;
	code_buf *b;
	sw_swu_builder *sb;
	size_t start;           /* the method's offset in the buffer */
	sw_status err;
};

/* Offset just past the last emitted instruction, relative to the method. */
static inline uint32_t tj_here(const struct tj_emit *e)
{
	return (uint32_t)(e->b->len - e->start);
}

/* Keep the first builder error. */
static inline void tj_note(struct tj_emit *e, sw_status st)
{
	if (st != SW_OK && e->err == SW_OK)
		e->err = st;
}

/* The call just emitted returns here, with `args` bytes of arguments pushed. */
void tj_call_site(struct tj_emit *e, uint32_t args);
/* The shadow entry was just published / just removed. */
void tj_shadow_pushed(struct tj_emit *e);
void tj_shadow_popped(struct tj_emit *e);

/* The P/Invoke target, which the back ends call (see toyjit.c). */
void toyjit_pinvoke_target(int32_t n, toyjit_entry_fn entry, toyjit *jit);
/* The exception dispatch the throw stub calls: runs the thrower's funclet. */
void toyjit_dispatch(toyjit *jit, sw_transition_frame *tf, uintptr_t establisher);
/* The payloads of method index k's objects A and B in the frame whose argument is n. */
uintptr_t toyjit_payload_a(unsigned k, int32_t n);
uintptr_t toyjit_payload_b(unsigned k, int32_t n);

struct toyjit_backend {
	toyjit_host host;
	const char *const *shape_names;         /* TOYJIT_NSHAPES of them */
	const unsigned char *shadow_regs;       /* DWARF numbers, in shadow entry order */
	unsigned nshadow_regs;
	size_t method_align;
	/* The registers (DWARF numbers) a shape saves and clobbers. */
	uint64_t (*saved_mask)(toyjit_shape shape);
	/* Native code: the entry thunk and the stub (set jit->thunk_*, stub_*). */
	void (*emit_thunk)(toyjit *jit, code_buf *b);
	void (*emit_stub)(toyjit *jit, code_buf *b);
	/* The leaf method, or NULL: prolog, body and epilog, described. */
	void (*emit_leaf)(struct tj_emit *e);
	/* Exceptions, or all NULL: the throw stub (sets jit->throw_stub_*), the thrower, its funclet. */
	void (*emit_throw_stub)(toyjit *jit, code_buf *b);
	void (*emit_thrower)(struct tj_emit *e);
	void (*emit_funclet)(struct tj_emit *e);
	/* Prolog of a shape, described; returns the SP-relative offset of its locals. */
	int32_t (*emit_prolog)(struct tj_emit *e, toyjit_shape shape);
	/* Body: clobber, shadow push, the calls (to `next`), shadow pop. */
	void (*emit_body)(struct tj_emit *e, int32_t locals, unsigned next);
	void (*emit_epilog)(struct tj_emit *e, toyjit_shape shape);
	/* Pad between methods up to `method_align` with a byte that traps. */
	void (*align)(code_buf *b, size_t align);
};

/*
 * Free bytes (traps) left after each piece of code: perf maps a method's
 * unwind tables right after its code (sw_perf(3)), and only where they
 * cover no other code.
 */
#define TOYJIT_CODE_GAP 160

/* Leave at least `gap` bytes of the back end's trap instruction, then align a method. */
void toyjit_leave_gap(code_buf *b, const struct toyjit_backend *be, size_t gap);

extern const struct toyjit_backend toyjit_backend_x64;
extern const struct toyjit_backend toyjit_backend_x86;
extern const struct toyjit_backend toyjit_backend_arm64;

#endif /* TOYJIT_BACKEND_H */
