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

static struct swi_synth_fr *new_frame(struct swi_synth_gen *g, uint64_t addr, uint32_t type)
{
	sw_synth *s = g->s;
	struct swi_synth_fr *f;

	if (s->nframes == g->frames_cap) {
		unsigned cap = g->frames_cap ? 2 * g->frames_cap : 16;
		void *p = realloc(s->frames, cap * sizeof *s->frames);

		if (!p) {
			fail(g, SW_E_NOMEM);
			return NULL;
		}
		s->frames = p;
		g->frames_cap = cap;
	}
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
 * and x64 that slot is where the call pushed it) and links a
 * TransitionFrame below it.
 */
static void call_transition_stub(struct swi_synth_gen *g, uint64_t ra)
{
	const struct swi_synth_arch *a = g->a;
	struct swi_synth_machine *mc = &g->mc;
	uint64_t caller_sp = mc->r[a->sp];
	uint64_t block = caller_sp - (uint64_t)a->ptr * (a->nblock_regs + 1), addr;
	struct swi_synth_fr *f;

	if (a->lr >= 0)
		mc->r[a->lr] = ra;
	for (unsigned i = 0; i < a->nblock_regs; i++)
		swi_synth_store_ptr(g, block + (uint64_t)a->ptr * i, mc->r[a->block_regs[i]]);
	swi_synth_store_ptr(g, block + (uint64_t)a->ptr * a->nblock_regs, ra);
	addr = (block - swi_synth_frame_size(a, SW_TF_FIELDS) - a->ptr * rnd(g, 8)) & ~(uint64_t)(a->ptr - 1);
	f = new_frame(g, addr, SW_FRAME_TRANSITION);
	if (!f)
		return;
	f->method = rnd(g, 4) ? handle_like(g) : 0;
	f->ra = ra;
	swi_synth_store_ptr(g, field_addr(g, addr, SW_TF_METHOD), f->method);
	swi_synth_store_ptr(g, field_addr(g, addr, SW_TF_TRANSITION_BLOCK), block);
	swi_synth_store_ptr(g, field_addr(g, addr, SW_TF_SUBTYPE), rnd(g, 5));
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

/* ---- the stack --------------------------------------------------------- */

enum synth_next {
	NEXT_CALL,      /* calls the next managed frame */
	NEXT_ICF,       /* calls unmanaged code through an active InlinedCallFrame */
	NEXT_TF,        /* calls a stub that pushes a TransitionFrame */
	NEXT_SEED       /* is the top of the stack */
};

static enum synth_next choose_transition(struct swi_synth_gen *g)
{
	unsigned f = g->s->params.features;
	int icf = (f & SW_SYNTH_NATIVE_BLOCKS) != 0, tf = (f & SW_SYNTH_TRANSITION_FRAMES) != 0;

	if (icf && tf)
		return rnd(g, 2) ? NEXT_ICF : NEXT_TF;
	return icf ? NEXT_ICF : NEXT_TF;
}

static struct swi_synth_inst *new_inst(struct swi_synth_gen *g)
{
	sw_synth *s = g->s;

	if (s->ninsts == g->insts_cap) {
		unsigned cap = g->insts_cap ? 2 * g->insts_cap : 16;
		void *p = realloc(s->insts, cap * sizeof *s->insts);

		if (!p) {
			fail(g, SW_E_NOMEM);
			return NULL;
		}
		s->insts = p;
		g->insts_cap = cap;
	}
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

/* The machine calls a managed frame that returns to ra and runs it to its IP. */
static void managed_frame(struct swi_synth_gen *g, uint64_t ra, enum synth_next next)
{
	sw_synth *s = g->s;
	const struct swi_synth_arch *a = g->a;
	struct swi_synth_machine *mc = &g->mc;
	unsigned mi = swi_synth_pick_method(g, next == NEXT_ICF, next == NEXT_SEED);
	const struct swi_synth_method *m;
	struct swi_synth_inst *in;
	uint64_t frame_sp;
	uint32_t off;
	unsigned nfree, lo_region = 0;

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

	if (next == NEXT_SEED)
		off = (s->params.features & SW_SYNTH_ANY_OFFSET) && rnd(g, 2)
		      ? any_offset(g, m) : body_offset(g, m, 0);
	else
		off = body_offset(g, m, 1);
	in->offset = off;
	in->in_body = swi_synth_run_to(g, m, off, next != NEXT_SEED, &frame_sp);
	mc->r[a->ip] = m->start + off;
	in->ip = m->start + off;
	in->sp = mc->r[a->sp];
	if (a->lr >= 0)
		in->ra_loc = mc->saved_at[a->lr];   /* 0: still (or again) in lr */
	memcpy(in->regs, mc->r, sizeof mc->r);
	memcpy(in->saved_at, mc->saved_at, sizeof mc->saved_at);

	/* Frames inside this frame's area: the active ICF takes the lowest hole. */
	if (next == NEXT_ICF) {
		write_icf(g, frame_sp + m->regions[0], in->ip);
		lo_region = 1;
	}
	nfree = m->nregions - lo_region;
	if (in->in_body && nfree && (s->params.features & SW_SYNTH_INACTIVE_ICFS) && rnd(g, 4) == 0)
		write_icf(g, frame_sp + m->regions[lo_region + rnd(g, nfree)], 0);
}

/* Unmanaged code below the machine's SP: garbage bytes, any register values. */
static void native_block(struct swi_synth_gen *g)
{
	uint64_t *sp = &g->mc.r[g->a->sp];

	*sp = (*sp - 64 - 16 * rnd(g, rnd(g, 4) ? 64 : 256)) & ~15ULL;
	swi_synth_stack_touch(g, *sp);
	randomize_all(g);
}

static void link_frames(struct swi_synth_gen *g)
{
	sw_synth *s = g->s;

	/* Insertion sort: a handful of Frames, ascending addresses = newest first. */
	for (unsigned i = 1; i < s->nframes; i++) {
		struct swi_synth_fr f = s->frames[i];
		unsigned j = i;

		while (j > 0 && s->frames[j - 1].addr > f.addr) {
			s->frames[j] = s->frames[j - 1];
			j--;
		}
		s->frames[j] = f;
	}
	for (unsigned i = 0; i + 1 < s->nframes; i++)
		swi_synth_store_ptr(g, s->frames[i].addr, s->frames[i + 1].addr);
	s->head = s->nframes ? s->frames[0].addr : 0;
	s->head_slot = g->stack_hi + g->a->ptr * rnd(g, SYNTH_HEAD_AREA / g->a->ptr);
	swi_synth_store_ptr(g, s->head_slot, s->head);
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
	int transitions = (s->params.features & (SW_SYNTH_NATIVE_BLOCKS | SW_SYNTH_TRANSITION_FRAMES)) != 0;
	uint64_t ra;

	s->native_seed = n == 0 ||
		(transitions && (s->params.features & SW_SYNTH_NATIVE_SEED) && rnd(g, 4) == 0);
	for (unsigned r = 0; r < a->nregs; r++)
		mc->r[r] = swi_synth_value(g);
	/* The outermost caller's SP at its call, 16-aligned. */
	mc->r[a->sp] = (g->stack_hi - 16 * rnd(g, 16)) & ~15ULL;
	ra = rnd(g, 2) ? 0 : native_address(g);
	for (unsigned i = 0; i < n && g->err == SW_OK; i++) {
		enum synth_next next;
		const struct swi_synth_inst *in;

		if (i + 1 == n)
			next = s->native_seed ? choose_transition(g) : NEXT_SEED;
		else
			next = transitions && rnd(g, 5) == 0 ? choose_transition(g) : NEXT_CALL;
		managed_frame(g, ra, next);
		if (g->err != SW_OK)
			return;
		in = &s->insts[s->ninsts - 1];
		switch (next) {
		case NEXT_CALL:
			ra = in->ip;
			break;
		case NEXT_ICF:
			/* The unmanaged callee and its frames. */
			call(g, in->ip);
			native_block(g);
			ra = native_address(g);
			break;
		case NEXT_TF:
			call_transition_stub(g, in->ip);
			native_block(g);
			ra = native_address(g);
			break;
		case NEXT_SEED:
			break;
		}
	}
	if (s->native_seed) {
		if (n == 0)
			native_block(g);
		mc->r[a->ip] = native_address(g);
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
	return st;
}
