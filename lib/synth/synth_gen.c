/*
 * synth_gen.c - generate a synthetic stack, outermost frame first.
 *
 * Methods are invented as instruction lists (prolog, body, epilogs) by the
 * arch's shapes (synth_x64.c, synth_x86.c, synth_arm64.c), and their SWU
 * blobs built from the same lists (synth_method.c).  Here each frame is
 * called (its return address pushed, or left in the link register) and its
 * method *executed* on the model machine (synth_machine.c) up to its IP;
 * InlinedCallFrames, transition stubs with TransitionFrames and unmanaged
 * blocks are laid out between them.  What the machine saw at every frame
 * is recorded for synth_expect.c; nothing here ever decodes a blob, and
 * nothing here knows an architecture: the swi_synth_arch table says what
 * differs.
 */
#include <stdlib.h>
#include "synth_gen.h"

/* ---- values ---------------------------------------------------------- */

static uint64_t native_address(struct swi_synth_gen *g)
{
	return g->a->native_base + (rnd64(g) & g->a->native_mask);
}

static uint64_t handle_like(struct swi_synth_gen *g)
{
	return g->a->handle_base + ((rnd64(g) & 0xfffffULL) << 4);
}

/* Unmanaged code ran: every register may hold anything now. */
static void randomize_all(struct swi_synth_gen *g)
{
	swi_synth_randomize(g, g->a->callee_saved | g->a->volatile_regs);
	if (g->a->lr >= 0)
		g->mc.r[g->a->lr] = swi_synth_value(g);
}


static unsigned count_calls(const struct swi_synth_method *m)
{
	unsigned n = 0;

	for (unsigned i = 0; i < m->nbody_ops; i++)
		n += m->body_ops[i].kind == SWI_OP_CALL || m->body_ops[i].kind == SWI_OP_CALL_POPS;
	return n;
}

/*
 * A body offset at an instruction boundary; strictly inside a body for a
 * return address, and usually just past one of the body's calls when it
 * has any.
 */
static uint32_t body_offset(struct swi_synth_gen *g, const struct swi_synth_method *m, int call)
{
	const struct swi_synth_range *b = &m->bodies[rnd(g, m->nbodies)];
	unsigned unit = g->a->insn_align, calls = call ? count_calls(m) : 0;
	uint32_t n = (b->hi - b->lo) / unit;

	if (calls && rnd(g, 4)) {
		unsigned k = rnd(g, calls);

		for (unsigned i = 0; i < m->nbody_ops; i++) {
			const struct swi_synth_op *op = &m->body_ops[i];

			if ((op->kind == SWI_OP_CALL || op->kind == SWI_OP_CALL_POPS) && k-- == 0)
				return op->end;
		}
	}
	if (call)
		return b->lo + unit * (1 + rnd(g, n - 1));
	return b->lo + unit * rnd(g, n);
}

/*
 * Any offset, weighted toward the prolog and the epilogs: bodies are most
 * of the code, but the instructions that move SP are where unwinding is hard.
 */
static uint32_t any_offset(struct swi_synth_gen *g, const struct swi_synth_method *m)
{
	const struct swi_synth_epilog *e;
	unsigned unit = g->a->insn_align;

	switch (rnd(g, 4)) {
	case 0:
		return unit * rnd(g, m->size / unit);
	case 1:
		return unit * rnd(g, m->prolog_end / unit + 1);     /* prolog_end: the body's first */
	default:
		e = &m->epilogs[rnd(g, m->nepilogs)];
		return e->start + unit * rnd(g, (e->end - e->start) / unit);
	}
}

/* ---- Frames ------------------------------------------------------------ */

static uint64_t field_addr(const struct swi_synth_gen *g, uint64_t frame, unsigned index)
{
	return frame + g->a->ptr + 8 + (uint64_t)g->a->ptr * index;
}

static uint64_t align_down(uint64_t v, uint64_t to)
{
	return v & ~(to - 1);
}

static void call(struct swi_synth_gen *g, uint64_t ra);

static struct swi_synth_fr *new_frame(struct swi_synth_gen *g, uint64_t addr, uint32_t type)
{
	sw_synth *s = g->s;
	struct swi_synth_fr *f;

	if (!grow(g, (void **)&s->frames, &g->frames_cap, s->nframes, sizeof *s->frames))
		return NULL;
	f = &s->frames[s->nframes++];
	memset(f, 0, sizeof *f);
	f->addr = addr;
	f->type = type;
	/* next is linked once every Frame is known. */
	swi_synth_store_ptr(g, addr, 0);
	swi_synth_store(g, addr + g->a->ptr, 4, type);
	swi_synth_store(g, addr + g->a->ptr + 4, 4, 0);
	return f;
}

static void set_attributes(struct swi_synth_gen *g, struct swi_synth_fr *f, uint32_t attrs)
{
	f->attributes = attrs;
	swi_synth_store(g, f->addr + g->a->ptr + 4, 4, attrs);
}

static void set_field(struct swi_synth_gen *g, const struct swi_synth_fr *f, unsigned index,
                      uint64_t v)
{
	swi_synth_store_ptr(g, field_addr(g, f->addr, index), v);
}

/*
 * A context record (sw_context's layout, whatever the pointer width) at
 * addr: the registers in `valid`, garbage in the other slots.
 */
static void write_record(struct swi_synth_gen *g, uint64_t addr, uint64_t valid,
                         const uint64_t *regs)
{
	swi_synth_store(g, addr, 4, g->s->arch);
	swi_synth_store(g, addr + 4, 4, 0);
	swi_synth_store(g, addr + 8, 8, valid);
	for (unsigned r = 0; r < SW_MAX_REGS; r++)
		swi_synth_store(g, addr + 16 + 8 * (uint64_t)r, 8,
		                (valid & SWI_BIT(r)) ? regs[r] : swi_synth_rand(&g->junk));
}

/* The walk resumes with the record's registers, each located in its slot (SP aside). */
static void frame_from_record(const struct swi_synth_arch *a, struct swi_synth_fr *f,
                              uint64_t record, uint64_t valid, const uint64_t *regs)
{
	f->valid = valid;
	for (unsigned r = 0; r < SWI_SYNTH_NREGS; r++) {
		if (!(valid & SWI_BIT(r)))
			continue;
		f->regs[r] = regs[r];
		f->locs[r] = record + 16 + 8 * (uint64_t)r;
	}
	f->locs[a->sp] = 0;
}

/* Slots a Frame protects: objects below *sp, then the array of their addresses. */
struct protected_area {
	unsigned n;
	uint64_t array;
	uint64_t slot[SWI_SYNTH_MAX_PROTECTED], value[SWI_SYNTH_MAX_PROTECTED];
};

static void protect(struct swi_synth_gen *g, uint64_t *sp, struct protected_area *pa)
{
	unsigned p = g->a->ptr;

	memset(pa, 0, sizeof *pa);
	if (!(g->s->params.features & SW_SYNTH_GC_INFO))
		return;
	pa->n = rnd(g, 5);
	for (unsigned i = 0; i < pa->n; i++) {
		*sp -= (uint64_t)p * (1 + rnd(g, 3));
		pa->slot[i] = *sp;
		pa->value[i] = swi_synth_object(g);
		swi_synth_store_ptr(g, *sp, pa->value[i]);
	}
	if (!pa->n)
		return;
	*sp -= (uint64_t)p * pa->n;
	pa->array = *sp;
	for (unsigned i = 0; i < pa->n; i++)
		swi_synth_store_ptr(g, pa->array + (uint64_t)p * i, pa->slot[i]);
}

static void set_protected(struct swi_synth_gen *g, struct swi_synth_fr *f, unsigned array_field,
                          const struct protected_area *pa)
{
	set_field(g, f, array_field, pa->array);
	set_field(g, f, array_field + 1, pa->n);
	f->nprotected = pa->n;
	memcpy(f->protected_slot, pa->slot, sizeof pa->slot);
	memcpy(f->protected_value, pa->value, sizeof pa->value);
}

/* An InlinedCallFrame at addr; active (returning to ra) when ra != 0. */
static void write_icf(struct swi_synth_gen *g, uint64_t addr, uint64_t ra)
{
	const struct swi_synth_arch *a = g->a;
	struct swi_synth_fr *f = new_frame(g, addr, SW_FRAME_INLINED_CALL);
	uint64_t sp = g->mc.r[a->sp], fp = g->mc.r[a->fp];

	if (!f)
		return;
	f->method = rnd(g, 3) ? handle_like(g) : 0;
	f->ra = ra;
	if (!ra) {
		/* Stale fields of a call that has returned. */
		sp = rnd(g, 2) ? sp - a->ptr * rnd(g, 64) : swi_synth_value(g);
		fp = swi_synth_value(g);
	}
	swi_synth_store_ptr(g, field_addr(g, addr, SW_ICF_DATUM), f->method);
	/* An inactive one's datum is stale: it stands for no method (vm/frames.h, GetFunction). */
	if (!ra)
		f->method = 0;
	swi_synth_store_ptr(g, field_addr(g, addr, SW_ICF_CALL_SITE_SP), sp);
	swi_synth_store_ptr(g, field_addr(g, addr, SW_ICF_RETURN_ADDRESS), ra);
	swi_synth_store_ptr(g, field_addr(g, addr, SW_ICF_CALLEE_SAVED_FP), fp);
	f->valid = SWI_BIT(a->ip) | SWI_BIT(a->sp) | SWI_BIT(a->fp);
	f->regs[a->ip] = ra;
	f->locs[a->ip] = field_addr(g, addr, SW_ICF_RETURN_ADDRESS);
	f->regs[a->sp] = sp;
	f->regs[a->fp] = fp;
	f->locs[a->fp] = field_addr(g, addr, SW_ICF_CALLEE_SAVED_FP);
}

/*
 * The managed method at the top of the machine calls a stub that returns
 * to `ra`: the stub stores the transition block (the arch's callee-saved
 * registers, then the return address, ending at the caller's SP; on x86
 * and x64 that slot is where the call pushed it), perhaps slots holding
 * references it protects, and links a TransitionFrame below them.
 */
static void call_transition_stub(struct swi_synth_gen *g, uint64_t ra)
{
	const struct swi_synth_arch *a = g->a;
	struct swi_synth_machine *mc = &g->mc;
	uint64_t caller_sp = mc->r[a->sp];
	uint64_t block = caller_sp - (uint64_t)a->ptr * (a->nblock_regs + 1), addr, below = block;
	struct protected_area pa;
	struct swi_synth_fr *f;

	if (a->lr >= 0)
		mc->r[a->lr] = ra;
	for (unsigned i = 0; i < a->nblock_regs; i++)
		swi_synth_store_ptr(g, block + (uint64_t)a->ptr * i, mc->r[a->block_regs[i]]);
	swi_synth_store_ptr(g, block + (uint64_t)a->ptr * a->nblock_regs, ra);
	protect(g, &below, &pa);
	addr = align_down(below - swi_synth_frame_size(a, SW_TF_FIELDS) - a->ptr * rnd(g, 8), a->ptr);
	f = new_frame(g, addr, SW_FRAME_TRANSITION);
	if (!f)
		return;
	f->method = rnd(g, 4) ? handle_like(g) : 0;
	f->ra = ra;
	set_field(g, f, SW_TF_METHOD, f->method);
	set_field(g, f, SW_TF_TRANSITION_BLOCK, block);
	set_field(g, f, SW_TF_SUBTYPE, rnd(g, 5));
	set_protected(g, f, SW_TF_PROTECTED, &pa);
	f->valid = SWI_BIT(a->ip) | SWI_BIT(a->sp);
	f->regs[a->ip] = ra;
	f->locs[a->ip] = block + (uint64_t)a->ptr * a->nblock_regs;
	f->regs[a->sp] = caller_sp;
	for (unsigned i = 0; i < a->nblock_regs; i++) {
		unsigned r = a->block_regs[i];

		f->valid |= SWI_BIT(r);
		f->regs[r] = mc->r[r];
		f->locs[r] = block + (uint64_t)a->ptr * i;
	}
	mc->r[a->sp] = addr;
}

/*
 * The managed method at the top calls a runtime helper that returns to
 * `ra` and pushes a HelperMethodFrame whose machine state it has captured:
 * IP = ra, SP = the caller's after the return, its callee-saved registers.
 */
static void call_helper(struct swi_synth_gen *g, uint64_t ra)
{
	const struct swi_synth_arch *a = g->a;
	struct swi_synth_machine *mc = &g->mc;
	uint64_t regs[SWI_SYNTH_NREGS], valid = a->callee_saved | SWI_BIT(a->ip) | SWI_BIT(a->sp);
	uint64_t record, below, addr;
	struct protected_area pa;
	struct swi_synth_fr *f;

	memcpy(regs, mc->r, sizeof regs);
	regs[a->ip] = ra;
	call(g, ra);
	record = align_down(mc->r[a->sp] - a->ptr * rnd(g, 8) - SWI_SYNTH_RECORD_SIZE, 16);
	below = record;
	protect(g, &below, &pa);
	addr = align_down(below - swi_synth_frame_size(a, SW_HMF_FIELDS) - a->ptr * rnd(g, 4), a->ptr);
	f = new_frame(g, addr, SW_FRAME_HELPER_METHOD);
	if (!f)
		return;
	write_record(g, record, valid, regs);
	f->method = rnd(g, 4) ? handle_like(g) : 0;
	f->ra = ra;
	set_field(g, f, SW_HMF_METHOD, f->method);
	set_field(g, f, SW_HMF_MACHINE_STATE, record);
	set_protected(g, f, SW_HMF_PROTECTED, &pa);
	frame_from_record(a, f, record, valid, regs);
	mc->r[a->sp] = addr;
}

/* The attributes of the Frames that hold the interrupted frame's context. */
static uint32_t context_attributes(uint32_t type)
{
	switch (type) {
	case SW_FRAME_FAULTING_EXCEPTION:
		return SW_FRAME_ATTR_EXCEPTION | SW_FRAME_ATTR_FAULTED;
	case SW_FRAME_SOFTWARE_EXCEPTION:
		return SW_FRAME_ATTR_EXCEPTION;
	default:                        /* resumable, redirected, func-eval */
		return SW_FRAME_ATTR_RESUMABLE;
	}
}

static int is_context_type(uint32_t type)
{
	return type == SW_FRAME_FAULTING_EXCEPTION || type == SW_FRAME_RESUMABLE ||
	       type == SW_FRAME_REDIRECTED_THREAD || type == SW_FRAME_SOFTWARE_EXCEPTION ||
	       type == SW_FRAME_FUNC_EVAL;
}

static uint32_t context_type(struct swi_synth_gen *g)
{
	static const uint32_t types[5] = {
		SW_FRAME_FAULTING_EXCEPTION, SW_FRAME_RESUMABLE, SW_FRAME_REDIRECTED_THREAD,
		SW_FRAME_SOFTWARE_EXCEPTION, SW_FRAME_FUNC_EVAL
	};
	uint32_t forced = g->s->params.frame_type;

	return is_context_type(forced) ? forced : types[rnd(g, 5)];
}

/*
 * The managed method at the top of the machine is interrupted where it
 * stands (a fault, a suspension, a throw, a function evaluation): the
 * handler, below it, saves every register in a context record and links
 * a Frame of `type` pointing to it.
 */
static void interrupt(struct swi_synth_gen *g, uint32_t type)
{
	const struct swi_synth_arch *a = g->a;
	struct swi_synth_machine *mc = &g->mc;
	uint64_t valid = SWI_BIT(a->nregs) - 1, record, addr;
	struct swi_synth_fr *f;

	record = align_down(mc->r[a->sp] - 16 * (1 + rnd(g, 16)) - SWI_SYNTH_RECORD_SIZE, 16);
	addr = align_down(record - swi_synth_frame_size(a, SW_CTXF_FIELDS) - a->ptr * rnd(g, 4), a->ptr);
	f = new_frame(g, addr, type);
	if (!f)
		return;
	write_record(g, record, valid, mc->r);
	set_attributes(g, f, context_attributes(type));
	f->method = type == SW_FRAME_FUNC_EVAL ? handle_like(g) : 0;
	f->ra = mc->r[a->ip];
	set_field(g, f, SW_CTXF_CONTEXT, record);
	set_field(g, f, SW_CTXF_METHOD, f->method);
	frame_from_record(a, f, record, valid, mc->r);
	mc->r[a->sp] = addr;
}

/* ---- exception trackers --------------------------------------------------- */

/*
 * An exception tracker at addr: next (linked once every tracker is known),
 * then the address of its context record.
 */
static struct swi_synth_fr *new_tracker(struct swi_synth_gen *g, uint64_t addr, uint64_t record)
{
	sw_synth *s = g->s;
	struct swi_synth_fr *t;

	if (!grow(g, (void **)&s->trackers, &g->trackers_cap, s->ntrackers, sizeof *s->trackers))
		return NULL;
	t = &s->trackers[s->ntrackers++];
	memset(t, 0, sizeof *t);
	t->addr = addr;
	swi_synth_store_ptr(g, addr, 0);
	swi_synth_store_ptr(g, addr + g->a->ptr, record);
	return t;
}

/*
 * The managed method at the top of the machine faults where it stands and
 * no Frame is pushed (the CLR's way on x86): the exception-handling code
 * below it saves every register in a context record and keeps an exception
 * tracker pointing to it, the two in either order, among its own bytes.
 */
static void fault_with_tracker(struct swi_synth_gen *g)
{
	const struct swi_synth_arch *a = g->a;
	struct swi_synth_machine *mc = &g->mc;
	uint64_t valid = SWI_BIT(a->nregs) - 1, record, addr, below;
	struct swi_synth_fr *t;

	below = mc->r[a->sp] - 16 * (uint64_t)(1 + rnd(g, 16));
	if (rnd(g, 2)) {
		record = align_down(below - SWI_SYNTH_RECORD_SIZE, 16);
		addr = align_down(record - 2 * a->ptr - a->ptr * rnd(g, 8), a->ptr);
		below = addr;
	} else {
		addr = align_down(below - 2 * a->ptr, a->ptr);
		record = align_down(addr - a->ptr * rnd(g, 8) - SWI_SYNTH_RECORD_SIZE, 16);
		below = record;
	}
	write_record(g, record, valid, mc->r);
	t = new_tracker(g, addr, record);
	if (!t)
		return;
	t->ra = mc->r[a->ip];
	frame_from_record(a, t, record, valid, mc->r);
	mc->r[a->sp] = below;
}

/*
 * A tracker of an exception already dealt with, still linked: inside a
 * managed frame's area or deeper than a managed seed, below a managed
 * frame's caller SP, where the walk passes it without a word.  Its record
 * is never read: garbage.
 */
static void stale_tracker(struct swi_synth_gen *g, uint64_t addr)
{
	struct swi_synth_fr *t = new_tracker(g, addr, swi_synth_value(g));

	if (t)
		t->stale = 1;
}

/*
 * Frames an unmanaged seed left linked below its SP: an InlinedCallFrame
 * or a TransitionFrame of a call that has returned (the runtime should
 * have popped it).  Their fields are stale; only the header is ever read.
 */
static void stale_frames(struct swi_synth_gen *g)
{
	const struct swi_synth_arch *a = g->a;
	uint64_t addr = align_down(g->mc.r[a->sp], a->ptr);
	unsigned n = 1 + rnd(g, 2);

	for (unsigned i = 0; i < n && g->err == SW_OK; i++) {
		int icf = rnd(g, 2);
		struct swi_synth_fr *f;

		addr -= swi_synth_frame_size(a, icf ? SW_ICF_FIELDS : SW_TF_FIELDS) +
		        a->ptr * (uint64_t)(1 + rnd(g, 16));
		f = new_frame(g, addr, icf ? SW_FRAME_INLINED_CALL : SW_FRAME_TRANSITION);
		if (!f)
			return;
		f->stale = 1;
		f->method = rnd(g, 2) ? handle_like(g) : 0;
		if (icf) {
			/* The return address into the method that made the call, or already 0. */
			if (rnd(g, 2) && g->s->nmethods) {
				const struct swi_synth_method *m = &g->s->methods[rnd(g, g->s->nmethods)];

				f->ra = m->start + m->bodies[0].lo + a->insn_align;
			}
			set_field(g, f, SW_ICF_DATUM, f->method);
			if (!f->ra)
				f->method = 0;  /* a stale datum: no method (see write_icf) */
			set_field(g, f, SW_ICF_CALL_SITE_SP, addr - a->ptr * rnd(g, 64));
			set_field(g, f, SW_ICF_RETURN_ADDRESS, f->ra);
			set_field(g, f, SW_ICF_CALLEE_SAVED_FP, swi_synth_value(g));
		} else {
			set_field(g, f, SW_TF_METHOD, f->method);
			set_field(g, f, SW_TF_TRANSITION_BLOCK, addr - a->ptr * (1 + rnd(g, 64)));
			set_field(g, f, SW_TF_SUBTYPE, rnd(g, 5));
			set_field(g, f, SW_TF_PROTECTED, 0);
			set_field(g, f, SW_TF_PROTECTED_COUNT, 0);
		}
	}
	swi_synth_stack_touch(g, addr);
}

/* ---- the stack --------------------------------------------------------- */

enum synth_next {
	NEXT_CALL,      /* calls the next managed frame */
	NEXT_ICF,       /* calls unmanaged code through an active InlinedCallFrame */
	NEXT_TF,        /* calls a stub that pushes a TransitionFrame */
	NEXT_CTX,       /* is interrupted: a Frame with a context record */
	NEXT_HMF,       /* calls a runtime helper that pushes a HelperMethodFrame */
	NEXT_TRACKER,   /* faults: an exception tracker, no Frame */
	NEXT_SEED       /* is the top of the stack */
};

static int any_transition(const sw_synth *s)
{
	return (s->params.features & (SW_SYNTH_NATIVE_BLOCKS | SW_SYNTH_TRANSITION_FRAMES |
	                              SW_SYNTH_CONTEXT_FRAMES | SW_SYNTH_HELPER_FRAMES |
	                              SW_SYNTH_TRACKERS)) != 0 ||
	       s->params.frame_type != 0;
}

static enum synth_next choose_transition(struct swi_synth_gen *g)
{
	unsigned f = g->s->params.features, n = 0;
	uint32_t forced = g->s->params.frame_type;
	enum synth_next opts[5];

	if (forced == SW_FRAME_INLINED_CALL)
		return NEXT_ICF;
	if (forced == SW_FRAME_TRANSITION)
		return NEXT_TF;
	if (is_context_type(forced))
		return NEXT_CTX;
	if (forced == SW_FRAME_HELPER_METHOD)
		return NEXT_HMF;
	if (f & SW_SYNTH_NATIVE_BLOCKS)
		opts[n++] = NEXT_ICF;
	if (f & SW_SYNTH_TRANSITION_FRAMES)
		opts[n++] = NEXT_TF;
	if (f & SW_SYNTH_CONTEXT_FRAMES)
		opts[n++] = NEXT_CTX;
	if (f & SW_SYNTH_HELPER_FRAMES)
		opts[n++] = NEXT_HMF;
	if (f & SW_SYNTH_TRACKERS)
		opts[n++] = NEXT_TRACKER;
	if (n == 0)
		return NEXT_TF;         /* a forced kind that lives in native blocks */
	return n == 1 ? opts[0] : opts[rnd(g, n)];
}

static struct swi_synth_inst *new_inst(struct swi_synth_gen *g)
{
	sw_synth *s = g->s;

	if (!grow(g, (void **)&s->insts, &g->insts_cap, s->ninsts, sizeof *s->insts))
		return NULL;
	return &s->insts[s->ninsts++];
}

/* A call returning to ra: pushed (x86, x64) or left in the link register (arm64). */
static void call(struct swi_synth_gen *g, uint64_t ra)
{
	const struct swi_synth_arch *a = g->a;
	uint64_t *sp = &g->mc.r[a->sp];

	if (a->lr >= 0) {
		g->mc.r[a->lr] = ra;
		return;
	}
	*sp -= a->ptr;
	swi_synth_store_ptr(g, *sp, ra);
}

/* Does `m` keep a reference in a register at `off`? */
static int gc_register_live(const struct swi_synth_method *m, uint32_t off)
{
	for (unsigned i = 0; i < m->ngc; i++)
		if (m->gc[i].in_reg && swi_synth_gc_live_near(&m->gc[i], off))
			return 1;
	return 0;
}

/* The first return-address offset where no register holds a reference (or `off`). */
static uint32_t quiet_offset(const struct swi_synth_gen *g, const struct swi_synth_method *m,
                             uint32_t off)
{
	unsigned unit = g->a->insn_align;

	for (unsigned b = 0; b < m->nbodies; b++)
		for (uint32_t o = m->bodies[b].lo + unit; o < m->bodies[b].hi; o += unit)
			if (!gc_register_live(m, o))
				return o;
	return off;
}

/*
 * The machine calls a managed frame that returns to ra and runs it to its
 * IP; the frame is a funclet of method `parent` when that is not ~0u.
 */
static void managed_frame(struct swi_synth_gen *g, uint64_t ra, enum synth_next next,
                          unsigned parent)
{
	sw_synth *s = g->s;
	const struct swi_synth_arch *a = g->a;
	struct swi_synth_machine *mc = &g->mc;
	int exact = next == NEXT_SEED || next == NEXT_CTX || next == NEXT_TRACKER;
	unsigned mi = parent != ~0u ? swi_synth_pick_funclet(g, parent, next == NEXT_ICF, exact)
	                            : swi_synth_pick_method(g, next == NEXT_ICF, exact);
	const struct swi_synth_method *m;
	struct swi_synth_inst *in;
	uint64_t frame_sp;
	uint32_t off;
	unsigned nfree, lo_region = 0;
	uint32_t holes[SWI_SYNTH_MAX_REGIONS];

	if (g->err != SW_OK)
		return;
	m = &s->methods[mi];
	in = new_inst(g);
	if (!in)
		return;
	call(g, ra);
	memset(mc->saved_at, 0, sizeof mc->saved_at);
	mc->r[a->ip] = ra;
	in->method = mi;
	in->ra = ra;
	in->cfa = mc->r[a->sp] + (a->lr >= 0 ? 0 : a->ptr);
	in->ra_loc = a->lr >= 0 ? 0 : mc->r[a->sp];
	memcpy(in->caller_regs, mc->r, sizeof mc->r);

	if (exact) {
		off = (s->params.features & SW_SYNTH_ANY_OFFSET) && rnd(g, 2)
		      ? any_offset(g, m) : body_offset(g, m, 0);
		/*
		 * A context a Frame holds may be a call's return address (an
		 * exception thrown by a helper), which never is a method's
		 * first byte; the Frame's kind is picked later.
		 */
		if (next == NEXT_CTX && off == 0)
			off = a->insn_align;
	} else {
		off = body_offset(g, m, 1);
		/* An InlinedCallFrame gives back only IP, SP and fp: JITs spill references first. */
		for (unsigned t = 0; t < 4 && next == NEXT_ICF && gc_register_live(m, off); t++)
			off = body_offset(g, m, 1);
		if (next == NEXT_ICF && gc_register_live(m, off))
			off = quiet_offset(g, m, off);
	}
	in->offset = off;
	in->in_body = swi_synth_run_to(g, m, off, !exact, &frame_sp);
	mc->r[a->ip] = m->start + off;
	in->ip = m->start + off;
	in->sp = mc->r[a->sp];
	if (a->lr >= 0)
		in->ra_loc = mc->saved_at[a->lr];   /* 0: still (or again) in lr */
	memcpy(in->regs, mc->r, sizeof mc->r);
	memcpy(in->saved_at, mc->saved_at, sizeof mc->saved_at);

	/* The stack slots that hold a live reference here hold an object. */
	memset(in->gc_value, 0, sizeof in->gc_value);
	for (unsigned k = 0; k < m->ngc; k++) {
		if (m->gc[k].in_reg || !swi_synth_gc_live_near(&m->gc[k], off))
			continue;
		in->gc_value[k] = swi_synth_object(g);
		swi_synth_store_ptr(g, in->cfa + (uint64_t)(int64_t)m->gc[k].cfa_offset, in->gc_value[k]);
	}

	/* Frames inside this frame's area: the active ICF takes the lowest hole. */
	if (next == NEXT_ICF) {
		write_icf(g, frame_sp + m->regions[0], in->ip);
		lo_region = 1;
	}
	nfree = 0;
	for (unsigned k = lo_region; k < m->nregions; k++)
		holes[nfree++] = m->regions[k];
	if (in->in_body && nfree && (s->params.features & SW_SYNTH_INACTIVE_ICFS) && rnd(g, 4) == 0) {
		unsigned k = rnd(g, nfree);

		write_icf(g, frame_sp + holes[k], 0);
		holes[k] = holes[--nfree];
	}
	/* A tracker of an exception this frame (or a deeper one) has dealt with. */
	if (in->in_body && nfree && (s->params.features & SW_SYNTH_TRACKERS) && rnd(g, 6) == 0)
		stale_tracker(g, frame_sp + holes[rnd(g, nfree)]);

	/* The UnmanagedToManagedFrame of the native block below names this entry point. */
	if (g->pending_entry) {
		struct swi_synth_fr *f = &s->frames[g->pending_entry - 1];

		f->method = (uint64_t)(uintptr_t)m->handle & a->value_mask;
		set_field(g, f, SW_U2MF_METHOD, f->method);
		g->pending_entry = 0;
	}
}

/* ---- unmanaged blocks ---------------------------------------------------- */

/*
 * The Frames unmanaged code links that have no return address and resume
 * nothing, so a walk reports them and goes on: the debugger's markers,
 * and the runtime's ExceptionFilterFrame (only its Pop differs from
 * Frame's, vm/frames.h), ProtectByRefsFrame and ProtectValueClassFrame
 * (Frame's defaults but GcScanRoots, vm/frames.cpp).
 */
static const uint32_t marker_types[] = {
	SW_FRAME_DEBUGGER_CLASS_INIT, SW_FRAME_DEBUGGER_EXIT, SW_FRAME_DEBUGGER_U2M_CATCH,
	SW_FRAME_EXCEPTION_FILTER, SW_FRAME_PROTECT_BYREFS, SW_FRAME_PROTECT_VALUE_CLASS
};

int swi_synth_is_marker_type(uint32_t type)
{
	for (unsigned i = 0; i < sizeof marker_types / sizeof marker_types[0]; i++)
		if (type == marker_types[i])
			return 1;
	return 0;
}

static uint32_t marker_type(struct swi_synth_gen *g)
{
	uint32_t forced = g->s->params.frame_type;

	if (swi_synth_is_marker_type(forced))
		return forced;
	return marker_types[rnd(g, sizeof marker_types / sizeof marker_types[0])];
}

/*
 * A marker Frame's fields, below *top: an ExceptionFilterFrame's shadow SP
 * slot (its address, never read by a walk); a ProtectByRefsFrame's list
 * of ByRefInfo entries, none or one holding an object reference, which
 * its GcScanRoots reports (the slot the Frame protects); a
 * ProtectValueClassFrame's list, empty.
 */
static void marker_fields(struct swi_synth_gen *g, struct swi_synth_fr *fr, uint64_t node)
{
	unsigned p = g->a->ptr;

	switch (fr->type) {
	case SW_FRAME_EXCEPTION_FILTER:
		set_field(g, fr, SW_EFF_SHADOW_SP, fr->addr + 8ULL * p);
		break;
	case SW_FRAME_PROTECT_BYREFS:
		set_field(g, fr, SW_PBRF_BYREFS, node);
		if (!node)
			break;
		swi_synth_store_ptr(g, node, 0);
		swi_synth_store_ptr(g, node + p, SW_BYREF_OBJECT);
		swi_synth_store_ptr(g, node + 2ULL * p, 0);
		fr->nprotected = 1;
		fr->protected_slot[0] = node + 3ULL * p;
		fr->protected_value[0] = swi_synth_object(g);
		swi_synth_store_ptr(g, fr->protected_slot[0], fr->protected_value[0]);
		break;
	case SW_FRAME_PROTECT_VALUE_CLASS:
		set_field(g, fr, SW_PVCF_VALUES, 0);
		break;
	default:
		break;
	}
}

/*
 * A HelperMethodFrame whose helper has not captured its machine state yet
 * (valid mask 0, or no record): reported, never followed.  Below *top.
 */
static void uncaptured_helper(struct swi_synth_gen *g, uint64_t *top)
{
	const struct swi_synth_arch *a = g->a;
	uint64_t record = 0, below = *top, none[SWI_SYNTH_NREGS];
	struct protected_area pa;
	struct swi_synth_fr *f;

	memset(none, 0, sizeof none);
	if (rnd(g, 4)) {
		record = align_down(below - SWI_SYNTH_RECORD_SIZE, 16);
		below = record;
	}
	protect(g, &below, &pa);
	*top = align_down(below - swi_synth_frame_size(a, SW_HMF_FIELDS) - a->ptr * rnd(g, 4), a->ptr);
	f = new_frame(g, *top, SW_FRAME_HELPER_METHOD);
	if (!f)
		return;
	if (record)
		write_record(g, record, 0, none);
	f->method = rnd(g, 4) ? handle_like(g) : 0;
	set_field(g, f, SW_HMF_METHOD, f->method);
	set_field(g, f, SW_HMF_MACHINE_STATE, record);
	set_protected(g, f, SW_HMF_PROTECTED, &pa);
}

/*
 * Unmanaged code below the machine's SP: garbage bytes, any register
 * values, and the Frames unmanaged code pushes without resuming managed
 * code: debugger markers, helpers not captured yet and, when managed code
 * is entered from here (`entry`), an UnmanagedToManagedFrame just above
 * the managed frame it calls.  They lie below the Frame that led here, so
 * the walk meets them first.
 */
static void native_block(struct swi_synth_gen *g, int entry)
{
	const struct swi_synth_arch *a = g->a;
	unsigned f = g->s->params.features;
	uint32_t forced = g->s->params.frame_type;
	uint64_t *sp = &g->mc.r[a->sp], top = align_down(*sp, a->ptr);
	uint32_t types[3];
	unsigned n = 0;

	*sp = (*sp - 64 - 16 * rnd(g, rnd(g, 4) ? 64 : 256)) & ~15ULL;
	if (entry && ((f & SW_SYNTH_ENTRY_FRAMES) || forced == SW_FRAME_UNMANAGED_TO_MANAGED))
		types[n++] = SW_FRAME_UNMANAGED_TO_MANAGED;
	if (((f & SW_SYNTH_DEBUGGER_MARKERS) && rnd(g, 3) == 0) || swi_synth_is_marker_type(forced))
		types[n++] = marker_type(g);
	if (((f & SW_SYNTH_HELPER_FRAMES) && rnd(g, 5) == 0) ||
	    (forced == SW_FRAME_HELPER_METHOD && rnd(g, 2)))
		types[n++] = SW_FRAME_HELPER_METHOD;
	/* From the top down: the entry Frame ends up lowest. */
	while (n-- > 0) {
		struct swi_synth_fr *fr;

		top -= a->ptr * (uint64_t)rnd(g, 6);
		if (types[n] == SW_FRAME_HELPER_METHOD) {
			uncaptured_helper(g, &top);
			continue;
		}
		if (types[n] == SW_FRAME_UNMANAGED_TO_MANAGED) {
			top -= swi_synth_frame_size(a, SW_U2MF_FIELDS);
			fr = new_frame(g, top, types[n]);
			if (fr) {
				set_field(g, fr, SW_U2MF_METHOD, 0);
				g->pending_entry = g->s->nframes;
			}
			continue;
		}
		{
			/* A ByRefInfo entry (next, kind, layout, the copy) above the Frame. */
			uint64_t node = 0;

			if (types[n] == SW_FRAME_PROTECT_BYREFS && (f & SW_SYNTH_GC_INFO) && rnd(g, 2)) {
				top -= 4ULL * a->ptr;
				node = top;
			}
			top -= swi_synth_frame_size(a, 1);
			fr = new_frame(g, top, types[n]);
			if (fr)
				marker_fields(g, fr, node);
		}
	}
	if (*sp > top - 16)
		*sp = (top - 16 - 16 * rnd(g, 4)) & ~15ULL;
	swi_synth_stack_touch(g, *sp);
	randomize_all(g);
}

/* Sort a list of Frames or trackers by address and link it: newest (lowest) first. */
static uint64_t link_list(struct swi_synth_gen *g, struct swi_synth_fr *list, unsigned n)
{
	/* Insertion sort: a handful of entries. */
	for (unsigned i = 1; i < n; i++) {
		struct swi_synth_fr f = list[i];
		unsigned j = i;

		while (j > 0 && list[j - 1].addr > f.addr) {
			list[j] = list[j - 1];
			j--;
		}
		list[j] = f;
	}
	for (unsigned i = 0; i + 1 < n; i++)
		swi_synth_store_ptr(g, list[i].addr, list[i + 1].addr);
	return n ? list[0].addr : 0;
}

static void link_frames(struct swi_synth_gen *g)
{
	sw_synth *s = g->s;
	unsigned slots = SYNTH_HEAD_AREA / g->a->ptr, k;

	s->head = link_list(g, s->frames, s->nframes);
	k = rnd(g, slots);
	s->head_slot = g->stack_hi + g->a->ptr * k;
	swi_synth_store_ptr(g, s->head_slot, s->head);
	/* The tracker list's head, in another slot above the stack (holding 0 if none). */
	if (s->params.features & SW_SYNTH_TRACKERS) {
		unsigned j = rnd(g, slots - 1);

		j += j >= k;
		s->exception_head_slot = g->stack_hi + g->a->ptr * j;
		swi_synth_store_ptr(g, s->exception_head_slot, link_list(g, s->trackers, s->ntrackers));
	}
}

static void reverse_insts(sw_synth *s)
{
	for (unsigned i = 0, j = s->ninsts; i + 1 < j; i++, j--) {
		struct swi_synth_inst t = s->insts[i];

		s->insts[i] = s->insts[j - 1];
		s->insts[j - 1] = t;
	}
}

static void build_stack(struct swi_synth_gen *g)
{
	sw_synth *s = g->s;
	const struct swi_synth_arch *a = g->a;
	struct swi_synth_machine *mc = &g->mc;
	unsigned n = s->params.min_frames + rnd(g, s->params.max_frames - s->params.min_frames + 1);
	unsigned f = s->params.features;
	uint32_t forced = s->params.frame_type;
	int transitions = any_transition(s);
	unsigned force_at = forced && n ? rnd(g, n) : n;
	unsigned parent = ~0u, between = 0;     /* a funclet to come, and the frames before it */
	uint64_t ra;

	/* Stale Frames lie below an unmanaged seed: make those twice as frequent. */
	s->native_seed = n == 0 ||
		(transitions && (f & SW_SYNTH_NATIVE_SEED) &&
		 rnd(g, 4) < ((f & SW_SYNTH_STALE_FRAMES) ? 2u : 1u)) || force_at == n - 1;
	for (unsigned r = 0; r < a->nregs; r++)
		mc->r[r] = swi_synth_value(g);
	/* The outermost caller's SP at its call, 16-aligned. */
	mc->r[a->sp] = (g->stack_hi - 16 * rnd(g, 16)) & ~15ULL;
	ra = rnd(g, 2) && forced != SW_FRAME_UNMANAGED_TO_MANAGED ? 0 : native_address(g);
	/* Entered from unmanaged code: its Frames lie above the outermost managed frame. */
	if (ra && ((f & (SW_SYNTH_ENTRY_FRAMES | SW_SYNTH_DEBUGGER_MARKERS | SW_SYNTH_HELPER_FRAMES)) ||
	           forced))
		native_block(g, 1);
	for (unsigned i = 0; i < n && g->err == SW_OK; i++) {
		enum synth_next next;
		const struct swi_synth_inst *in;
		unsigned funclet_of = between == 0 ? parent : ~0u;

		if (i + 1 == n)
			next = s->native_seed ? choose_transition(g) : NEXT_SEED;
		else if (i == force_at)
			next = choose_transition(g);
		else if (transitions && parent != ~0u && between == 1 && rnd(g, 2))
			next = choose_transition(g);    /* the exception dispatcher calls the funclet */
		else
			next = transitions && rnd(g, 5) == 0 ? choose_transition(g) : NEXT_CALL;
		managed_frame(g, ra, next, funclet_of);
		if (g->err != SW_OK)
			return;
		in = &s->insts[s->ninsts - 1];
		if (funclet_of != ~0u) {
			parent = ~0u;
		} else if (parent != ~0u) {
			between--;
		} else if ((f & SW_SYNTH_FUNCLETS) && i + 1 < n &&
		           !s->methods[in->method].code_flags && rnd(g, 3) == 0) {
			/* A funclet of this method runs above it, over 0 to 3 frames. */
			parent = in->method;
			between = rnd(g, 4);
			if (between > n - i - 2)
				between = n - i - 2;
		}
		switch (next) {
		case NEXT_CALL:
			ra = in->ip;
			break;
		case NEXT_ICF:
			/* The unmanaged callee and its frames. */
			call(g, in->ip);
			native_block(g, i + 1 < n);
			ra = native_address(g);
			break;
		case NEXT_TF:
			call_transition_stub(g, in->ip);
			native_block(g, i + 1 < n);
			ra = native_address(g);
			break;
		case NEXT_CTX:
			interrupt(g, context_type(g));
			native_block(g, i + 1 < n);
			ra = native_address(g);
			break;
		case NEXT_HMF:
			call_helper(g, in->ip);
			native_block(g, i + 1 < n);
			ra = native_address(g);
			break;
		case NEXT_TRACKER:
			fault_with_tracker(g);
			native_block(g, i + 1 < n);
			ra = native_address(g);
			break;
		case NEXT_SEED:
			break;
		}
	}
	if (s->native_seed) {
		if (n == 0)
			native_block(g, 0);
		mc->r[a->ip] = native_address(g);
		if (f & SW_SYNTH_STALE_FRAMES)
			stale_frames(g);
	} else if ((f & SW_SYNTH_TRACKERS) && rnd(g, 4) == 0) {
		/* Deeper than a managed seed: its caller SP passes it. */
		uint64_t addr = align_down(mc->r[a->sp], a->ptr) - a->ptr * (uint64_t)(2 + rnd(g, 16));

		stale_tracker(g, addr);
		swi_synth_stack_touch(g, addr);
	}
	/* The seed SP is on the stack even where nothing was stored (an arm64 leaf). */
	swi_synth_stack_touch(g, mc->r[a->sp]);
}

sw_status swi_synth_generate(sw_synth *s)
{
	const struct swi_synth_arch *a = s->a;
	struct swi_synth_gen g;
	uint64_t stack_lo;
	sw_status st;

	memset(&g, 0, sizeof g);
	g.s = s;
	g.a = a;
	g.rng = s->seed ^ 0x5357796e74680001ULL;   /* "SWynth" */
	g.junk = ~s->seed * 0x9e3779b97f4a7c15ULL;
	g.window_hi = a->window_hi;
	g.stack_hi = a->window_hi - SYNTH_HEAD_AREA;
	g.low = g.stack_hi;
	g.mem_lo = g.window_hi;
	st = sw_swu_builder_create(&g.builder, s->arch);
	if (st != SW_OK)
		return st;
	g.code_cursor = a->code_base + 16 * (uint64_t)rnd(&g, 65536);
	swi_synth_reserve(&g, g.stack_hi);
	build_stack(&g);
	sw_swu_builder_destroy(g.builder);
	reverse_insts(s);
	link_frames(&g);
	/* A little room below the top SP (a red zone, say). */
	stack_lo = (g.low - a->ptr * rnd(&g, 64)) & ~15ULL;
	swi_synth_reserve(&g, stack_lo);
	s->image = g.mem;
	s->image_lo = g.mem_lo;
	if (g.err != SW_OK)
		return g.err;

	memset(&s->ctx, 0, sizeof s->ctx);
	s->ctx.arch = s->arch;
	s->ctx.valid = SWI_BIT(a->nregs) - 1;
	memcpy(s->ctx.regs, g.mc.r, sizeof s->ctx.regs);

	st = sw_memory_init_buffer(&s->mem, s->image + (stack_lo - s->image_lo),
	                           (size_t)(g.window_hi - stack_lo), stack_lo);
	if (st == SW_OK)
		st = sw_thread_init(&s->thread, s->arch, s->map, &s->mem, s->head_slot,
		                    stack_lo, g.stack_hi);
	s->thread.exception_head = s->exception_head_slot;
	return st;
}
