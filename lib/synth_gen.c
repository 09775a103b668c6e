/*
 * synth_gen.c - generate a synthetic x64 stack by running a model machine.
 *
 * Methods are invented as instruction lists (prolog, body, epilogs) in
 * synth_method.c, which builds their SWU blobs from the same lists through
 * the public builder.  The stack image is produced here by *executing*
 * those instructions on a model
 * machine (registers plus a byte image of the stack), outermost frame
 * first, exactly as the real code would have run: each push writes the
 * register's value, each call writes its return address.  What the machine
 * saw at every frame is recorded for synth_expect.c; nothing here ever
 * decodes a blob.
 */
#include <stdlib.h>
#include "synth_gen.h"

static const uint8_t synth_volatile[9] = {
	SW_X64_RAX, SW_X64_RDX, SW_X64_RCX, SW_X64_RSI, SW_X64_RDI,
	SW_X64_R8, SW_X64_R9, SW_X64_R10, SW_X64_R11
};

/* ---- the stack image ------------------------------------------------- */

/* Make [addr, SYNTH_WINDOW_HI) backed; new bytes are garbage. */
static int mem_reserve(struct swi_synth_gen *g, uint64_t addr)
{
	size_t need, size;
	unsigned char *m;

	if (addr >= g->mem_lo)
		return 1;
	if (addr < SYNTH_WINDOW_HI - SYNTH_MAX_IMAGE) {
		fail(g, SW_E_LIMIT);
		return 0;
	}
	need = (size_t)(SYNTH_WINDOW_HI - addr);
	size = g->mem_size ? g->mem_size : 16384;
	while (size < need)
		size *= 2;
	if (size > SYNTH_MAX_IMAGE)
		size = SYNTH_MAX_IMAGE;
	m = malloc(size);
	if (!m) {
		fail(g, SW_E_NOMEM);
		return 0;
	}
	for (size_t i = 0; i + 8 <= size - g->mem_size; i += 8) {
		uint64_t v = swi_synth_rand(&g->junk);

		memcpy(m + i, &v, 8);
	}
	if (g->mem_size)
		memcpy(m + (size - g->mem_size), g->mem, g->mem_size);
	free(g->mem);
	g->mem = m;
	g->mem_size = size;
	g->mem_lo = SYNTH_WINDOW_HI - size;
	return 1;
}

static void mem_store(struct swi_synth_gen *g, uint64_t addr, unsigned size, uint64_t v)
{
	if (addr + size > SYNTH_WINDOW_HI || !mem_reserve(g, addr)) {
		fail(g, SW_E_STATE);
		return;
	}
	swi_store_le(g->mem + (addr - g->mem_lo), size, v);
	if (addr < g->low)
		g->low = addr;
}

static uint64_t mem_load(struct swi_synth_gen *g, uint64_t addr)
{
	if (addr < g->mem_lo || addr + 8 > SYNTH_WINDOW_HI) {
		fail(g, SW_E_STATE);
		return 0;
	}
	return swi_load_le(g->mem + (addr - g->mem_lo), 8);
}

/* Move the stack pointer down over `size` garbage bytes (a native block, a gap). */
static void stack_skip(struct swi_synth_gen *g, uint64_t size)
{
	uint64_t sp = g->mc.r[SW_X64_RSP] - size;

	if (mem_reserve(g, sp)) {
		g->mc.r[SW_X64_RSP] = sp;
		if (sp < g->low)
			g->low = sp;
	}
}

/* ---- values ---------------------------------------------------------- */

static uint64_t native_address(struct swi_synth_gen *g)
{
	return SYNTH_NATIVE_BASE + (rnd64(g) & 0xfffffffffULL);
}

static uint64_t handle_like(struct swi_synth_gen *g)
{
	return 0x6b0000000000ULL + ((rnd64(g) & 0xffffffULL) << 4);
}


static void randomize_volatile(struct swi_synth_gen *g)
{
	for (unsigned i = 0; i < sizeof synth_volatile; i++)
		g->mc.r[synth_volatile[i]] = rnd64(g);
}

/* Unmanaged code ran: every register may hold anything now. */
static void randomize_callee_saved(struct swi_synth_gen *g)
{
	for (unsigned i = 0; i < sizeof swi_synth_callee_saved; i++)
		g->mc.r[swi_synth_callee_saved[i]] = rnd64(g);
	randomize_volatile(g);
}


/* ---- running a method on the model machine ---------------------------- */

static void exec_op(struct swi_synth_gen *g, const struct swi_synth_op *op)
{
	struct swi_synth_machine *mc = &g->mc;
	uint64_t *sp = &mc->r[SW_X64_RSP];

	switch (op->kind) {
	case SWI_OP_PUSH:
		*sp -= 8;
		mem_store(g, *sp, 8, mc->r[op->reg]);
		mc->saved_at[op->reg] = *sp;
		break;
	case SWI_OP_ALLOC:
		*sp -= (uint64_t)op->arg;
		if (mem_reserve(g, *sp) && *sp < g->low)
			g->low = *sp;
		break;
	case SWI_OP_SET_FRAME:
		mc->r[SW_X64_RBP] = *sp + (uint64_t)op->arg;
		break;
	case SWI_OP_SAVE:
		mem_store(g, *sp + (uint64_t)op->arg, 8, mc->r[op->reg]);
		mc->saved_at[op->reg] = *sp + (uint64_t)op->arg;
		break;
	case SWI_OP_RESTORE:
		if (!mc->saved_at[op->reg])
			fail(g, SW_E_STATE);
		mc->r[op->reg] = mem_load(g, mc->saved_at[op->reg]);
		mc->saved_at[op->reg] = 0;
		break;
	case SWI_OP_FREE:
		*sp += (uint64_t)op->arg;
		break;
	case SWI_OP_SP_FROM_FRAME:
		*sp = mc->r[SW_X64_RBP] + (uint64_t)op->arg;
		break;
	case SWI_OP_POP:
		/* Our epilogs mirror the prolog: the slot under SP must be this register's. */
		if (mc->saved_at[op->reg] != *sp)
			fail(g, SW_E_STATE);
		mc->r[op->reg] = mem_load(g, *sp);
		mc->saved_at[op->reg] = 0;
		*sp += 8;
		break;
	}
}

/*
 * Execute `m` from its entry up to code offset `off` (the instructions that
 * end at or before it).  Returns 1 when `off` lies in the body.
 */
static int run_to(struct swi_synth_gen *g, const struct swi_synth_method *m, uint32_t off)
{
	for (unsigned i = 0; i < m->nops; i++) {
		if (m->ops[i].end > off)
			return 0;
		exec_op(g, &m->ops[i]);
	}
	if (off < m->prolog_end)
		return 0;
	/* The body works: registers the method saved now hold its own values. */
	for (unsigned i = 0; i < sizeof swi_synth_callee_saved; i++) {
		unsigned r = swi_synth_callee_saved[i];

		if (g->mc.saved_at[r] && !(r == SW_X64_RBP && m->has_frame))
			g->mc.r[r] = rnd64(g);
	}
	randomize_volatile(g);
	for (unsigned k = 0; k < m->nepilogs; k++) {
		const struct swi_synth_epilog *e = &m->epilogs[k];

		if (off < e->start || off >= e->end)
			continue;
		for (unsigned i = 0; i < e->nops && e->ops[i].end <= off; i++)
			exec_op(g, &e->ops[i]);
		return 0;
	}
	return 1;
}

/* A body offset; strictly inside a body for a return address. */
static uint32_t body_offset(struct swi_synth_gen *g, const struct swi_synth_method *m, int call)
{
	const struct swi_synth_range *b = &m->bodies[rnd(g, m->nbodies)];

	if (call)
		return b->lo + 1 + rnd(g, b->hi - b->lo - 1);
	return b->lo + rnd(g, b->hi - b->lo);
}

/*
 * Any offset, weighted toward the prolog and the epilogs: bodies are most
 * of the code, but the instructions that move SP are where unwinding is hard.
 */
static uint32_t any_offset(struct swi_synth_gen *g, const struct swi_synth_method *m)
{
	const struct swi_synth_epilog *e;

	switch (rnd(g, 4)) {
	case 0:
		return rnd(g, m->size);
	case 1:
		return rnd(g, m->prolog_end + 1);       /* prolog_end itself: the body's first byte */
	default:
		e = &m->epilogs[rnd(g, m->nepilogs)];
		return e->start + rnd(g, e->end - e->start);
	}
}

/* ---- Frames ------------------------------------------------------------ */

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
	mem_store(g, addr, 8, 0);
	mem_store(g, addr + 8, 4, type);
	mem_store(g, addr + 12, 4, 0);
	return f;
}

static uint64_t field_addr(uint64_t frame, unsigned index)
{
	return frame + 16 + 8ULL * index;
}

/* An InlinedCallFrame at addr; active (returning to ra) when ra != 0. */
static void write_icf(struct swi_synth_gen *g, uint64_t addr, uint64_t ra)
{
	struct swi_synth_fr *f = new_frame(g, addr, SW_FRAME_INLINED_CALL);
	uint64_t sp = g->mc.r[SW_X64_RSP], fp = g->mc.r[SW_X64_RBP];

	if (!f)
		return;
	f->method = rnd(g, 3) ? handle_like(g) : 0;
	f->ra = ra;
	if (!ra) {
		/* Stale fields of a call that has returned. */
		sp = rnd(g, 2) ? sp - 8 * rnd(g, 64) : rnd64(g);
		fp = rnd64(g);
	}
	mem_store(g, field_addr(addr, SW_ICF_DATUM), 8, f->method);
	mem_store(g, field_addr(addr, SW_ICF_CALL_SITE_SP), 8, sp);
	mem_store(g, field_addr(addr, SW_ICF_RETURN_ADDRESS), 8, ra);
	mem_store(g, field_addr(addr, SW_ICF_CALLEE_SAVED_FP), 8, fp);
	f->valid = SWI_BIT(SW_X64_RIP) | SWI_BIT(SW_X64_RSP) | SWI_BIT(SW_X64_RBP);
	f->regs[SW_X64_RIP] = ra;
	f->locs[SW_X64_RIP] = field_addr(addr, SW_ICF_RETURN_ADDRESS);
	f->regs[SW_X64_RSP] = sp;
	f->regs[SW_X64_RBP] = fp;
	f->locs[SW_X64_RBP] = field_addr(addr, SW_ICF_CALLEE_SAVED_FP);
}

/*
 * The managed method at the top of the machine calls a stub at `ra`: the
 * call pushes ra, the stub pushes rbp, rbx, r12-r15 (the transition block
 * at B) and links a TransitionFrame below them.
 */
static void call_transition_stub(struct swi_synth_gen *g, uint64_t ra)
{
	static const uint8_t pushed[6] = {
		SW_X64_RBP, SW_X64_RBX, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15
	};
	struct swi_synth_machine *mc = &g->mc;
	uint64_t caller_sp = mc->r[SW_X64_RSP], block, addr;
	struct swi_synth_fr *f;

	mc->r[SW_X64_RSP] -= 8;
	mem_store(g, mc->r[SW_X64_RSP], 8, ra);
	for (unsigned i = 0; i < 6; i++) {
		mc->r[SW_X64_RSP] -= 8;
		mem_store(g, mc->r[SW_X64_RSP], 8, mc->r[pushed[i]]);
	}
	block = mc->r[SW_X64_RSP];
	addr = block - SWI_SYNTH_TF_SIZE - 8 * rnd(g, 8);
	f = new_frame(g, addr, SW_FRAME_TRANSITION);
	if (!f)
		return;
	f->method = rnd(g, 4) ? handle_like(g) : 0;
	f->ra = ra;
	mem_store(g, field_addr(addr, SW_TF_METHOD), 8, f->method);
	mem_store(g, field_addr(addr, SW_TF_TRANSITION_BLOCK), 8, block);
	f->valid = SWI_BIT(SW_X64_RIP) | SWI_BIT(SW_X64_RSP) | SWI_SYNTH_CALLEE_SAVED;
	f->regs[SW_X64_RIP] = ra;
	f->locs[SW_X64_RIP] = block + 48;
	f->regs[SW_X64_RSP] = caller_sp;
	for (unsigned i = 0; i < 6; i++) {
		f->regs[pushed[i]] = mc->r[pushed[i]];
		f->locs[pushed[i]] = block + 40 - 8 * i;
	}
	mc->r[SW_X64_RSP] = addr;
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

/* One managed frame entered with its return address at SP; runs it to its IP. */
static void managed_frame(struct swi_synth_gen *g, uint64_t ra, enum synth_next next)
{
	sw_synth *s = g->s;
	struct swi_synth_machine *mc = &g->mc;
	unsigned mi = swi_synth_pick_method(g, next == NEXT_ICF);
	const struct swi_synth_method *m;
	struct swi_synth_inst *in;
	uint32_t off;
	unsigned nfree, lo_region = 0;

	if (g->err != SW_OK)
		return;
	m = &s->methods[mi];
	in = new_inst(g);
	if (!in)
		return;
	mem_store(g, mc->r[SW_X64_RSP], 8, ra);
	memset(mc->saved_at, 0, sizeof mc->saved_at);
	mc->r[SW_X64_RIP] = ra;
	in->method = mi;
	in->ra = ra;
	in->ra_slot = mc->r[SW_X64_RSP];
	memcpy(in->caller_regs, mc->r, sizeof mc->r);

	if (next == NEXT_SEED)
		off = (s->params.features & SW_SYNTH_ANY_OFFSET) && rnd(g, 2)
		      ? any_offset(g, m) : body_offset(g, m, 0);
	else
		off = body_offset(g, m, 1);
	in->offset = off;
	in->in_body = run_to(g, m, off);
	mc->r[SW_X64_RIP] = m->start + off;
	in->ip = m->start + off;
	in->sp = mc->r[SW_X64_RSP];
	memcpy(in->regs, mc->r, sizeof mc->r);
	memcpy(in->saved_at, mc->saved_at, sizeof mc->saved_at);

	/* Frames inside this frame's area: the active ICF takes the lowest hole. */
	if (next == NEXT_ICF) {
		write_icf(g, in->sp + m->regions[0], in->ip);
		lo_region = 1;
	}
	nfree = m->nregions - lo_region;
	if (in->in_body && nfree && (s->params.features & SW_SYNTH_INACTIVE_ICFS) && rnd(g, 4) == 0)
		write_icf(g, in->sp + m->regions[lo_region + rnd(g, nfree)], 0);
}

/* Unmanaged code below the machine's SP: garbage bytes, any register values. */
static void native_block(struct swi_synth_gen *g)
{
	stack_skip(g, 64 + 16 * rnd(g, rnd(g, 4) ? 64 : 256));
	g->mc.r[SW_X64_RSP] &= ~15ULL;
	randomize_callee_saved(g);
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
		mem_store(g, s->frames[i].addr, 8, s->frames[i + 1].addr);
	s->head = s->nframes ? s->frames[0].addr : 0;
	s->head_slot = SYNTH_STACK_HI + 8 * rnd(g, SYNTH_HEAD_AREA / 8);
	mem_store(g, s->head_slot, 8, s->head);
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
	struct swi_synth_machine *mc = &g->mc;
	unsigned n = s->params.min_frames + rnd(g, s->params.max_frames - s->params.min_frames + 1);
	int transitions = (s->params.features & (SW_SYNTH_NATIVE_BLOCKS | SW_SYNTH_TRANSITION_FRAMES)) != 0;
	uint64_t ra;

	s->native_seed = n == 0 ||
		(transitions && (s->params.features & SW_SYNTH_NATIVE_SEED) && rnd(g, 4) == 0);
	for (unsigned r = 0; r < SWI_SYNTH_NREGS; r++)
		mc->r[r] = rnd64(g);
	/* The outermost return address slot, 8 mod 16 like any entry SP. */
	mc->r[SW_X64_RSP] = ((SYNTH_STACK_HI - 16 * rnd(g, 16)) & ~15ULL) - 8;
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
			mc->r[SW_X64_RSP] -= 8;
			break;
		case NEXT_ICF:
			/* The unmanaged callee's return address, then its frames. */
			mc->r[SW_X64_RSP] -= 8;
			mem_store(g, mc->r[SW_X64_RSP], 8, in->ip);
			native_block(g);
			ra = native_address(g);
			mc->r[SW_X64_RSP] -= 8;
			break;
		case NEXT_TF:
			call_transition_stub(g, in->ip);
			native_block(g);
			ra = native_address(g);
			mc->r[SW_X64_RSP] -= 8;
			break;
		case NEXT_SEED:
			break;
		}
	}
	if (s->native_seed) {
		if (n == 0)
			native_block(g);
		/* The last step pushed room for a return address nobody stored. */
		else
			mc->r[SW_X64_RSP] += 8;
		mc->r[SW_X64_RIP] = native_address(g);
		if (mc->r[SW_X64_RSP] < g->low)
			g->low = mc->r[SW_X64_RSP];
	}
}

sw_status swi_synth_generate(sw_synth *s)
{
	struct swi_synth_gen g;
	uint64_t stack_lo;
	sw_status st;

	memset(&g, 0, sizeof g);
	g.s = s;
	g.rng = s->seed ^ 0x5357796e74680001ULL;   /* "SWynth" */
	g.junk = ~s->seed * 0x9e3779b97f4a7c15ULL;
	g.low = SYNTH_STACK_HI;
	g.mem_lo = SYNTH_WINDOW_HI;
	st = sw_swu_builder_create(&g.builder, SW_ARCH_X64);
	if (st != SW_OK)
		return st;
	g.code_cursor = SYNTH_CODE_BASE + 16 * (uint64_t)rnd(&g, 65536);
	mem_reserve(&g, SYNTH_STACK_HI);
	build_stack(&g);
	sw_swu_builder_destroy(g.builder);
	reverse_insts(s);
	link_frames(&g);
	/* A little room below the top SP (a red zone, say). */
	stack_lo = (g.low - 8 * rnd(&g, 64)) & ~15ULL;
	mem_reserve(&g, stack_lo);
	s->image = g.mem;
	s->image_lo = g.mem_lo;
	if (g.err != SW_OK)
		return g.err;

	memset(&s->ctx, 0, sizeof s->ctx);
	s->ctx.arch = SW_ARCH_X64;
	s->ctx.valid = (1ULL << SWI_SYNTH_NREGS) - 1;
	memcpy(s->ctx.regs, g.mc.r, sizeof g.mc.r);

	st = sw_memory_init_buffer(&s->mem, s->image + (stack_lo - s->image_lo),
	                           (size_t)(SYNTH_WINDOW_HI - stack_lo), stack_lo);
	if (st == SW_OK)
		st = sw_thread_init(&s->thread, SW_ARCH_X64, s->map, &s->mem, s->head_slot,
		                    stack_lo, SYNTH_STACK_HI);
	return st;
}
