/*
 * fuzz_dispatch.c - sw_exception_dispatch over mutated EH clause tables
 * and stacks.
 *
 * The input lays out 1 to 4 frames of one x64 method shape (push rbp; mov
 * rbp,rsp; push rbx; sub rsp,72), each method with clauses the input
 * describes (kinds, try and handler ranges, tokens: many refused by the
 * builder, which then leaves them out), then patches bytes of the built
 * blobs (the EH section among them) before registering them, and words of
 * the stack, the seed and the tracker's address.  The runtime's callbacks
 * answer from the input too (match or not, filter yes, no or an error, a
 * continuation).  The dispatch may fail in any way; it must not crash,
 * hang or call back without bound, it must leave the tracker list head as
 * it found it, and a continuation it gives must sit on the stack.  Only
 * the public API is used.
 */
#include <stdlib.h>
#include <stackwalk.h>
#include "fuzz.h"

#define STACK_SIZE  0x4000u
#define STACK_BASE  0x7ffe00000000ull
#define STACK_HI    (STACK_BASE + STACK_SIZE)
#define EXC_SLOT    (STACK_HI - 8)
#define MAX_FRAMES  4
#define MAX_CLAUSES 8
#define CODE        48          /* the method's main body; funclets follow */
#define METHOD_AT(i) (0x500000ull + 0x1000ull * (i))
#define CFA(i)      (STACK_HI - 0x100 - 96ull * (i))
/* Calls the dispatch may make: every clause a blob may hold, in every frame, twice. */
#define MAX_CALLS   (2 * MAX_FRAMES * SW_SWU_MAX_EH_CLAUSES + 8)

static uint8_t stack[STACK_SIZE];
static int handles[MAX_FRAMES];

static void put(uint64_t addr, uint64_t v)
{
	if (addr >= STACK_BASE && addr + 8 <= STACK_HI)
		for (int i = 0; i < 8; i++)
			stack[addr - STACK_BASE + (uint64_t)i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get(uint64_t addr)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = (v << 8) | stack[addr - STACK_BASE + (uint64_t)i];
	return v;
}

/* One method: the prolog and epilog, the input's clauses, patched bytes. */
static void add_method(sw_codemap *map, unsigned i, struct fz *f)
{
	uint8_t blob[2048];
	size_t len = 0;
	sw_swu_builder *b;
	sw_code_info ci;
	unsigned n = fz_u8(f) % (MAX_CLAUSES + 1), patches;

	if (sw_swu_builder_create(&b, SW_ARCH_X64) != SW_OK)
		return;
	sw_swu_push_reg(b, 1, SW_X64_RBP);
	sw_swu_set_frame(b, 4, SW_X64_RBP, 0);
	sw_swu_push_reg(b, 5, SW_X64_RBX);
	sw_swu_alloc_stack(b, 9, 72);
	sw_swu_end_prolog(b, 9);
	sw_swu_epilog_begin(b, 40);
	sw_swu_restore_sp_from_frame(b, 44, -8);
	sw_swu_pop_reg(b, 45, SW_X64_RBX);
	sw_swu_pop_reg(b, 46, SW_X64_RBP);
	sw_swu_epilog_end(b, 47);
	for (unsigned k = 0; k < n; k++) {
		sw_eh_clause c;

		c.kind = fz_u8(f) % 5;
		c.flags = fz_u8(f) & 8;
		c.try_start = fz_u8(f) % 64;
		c.try_end = c.try_start + 1 + fz_u8(f) % 40;
		c.handler_start = CODE + fz_u8(f) % 128;
		c.handler_end = c.handler_start + 1 + fz_u8(f) % 32;
		c.filter_start = c.kind == SW_EH_FILTER ? c.handler_start - 1 - fz_u8(f) % 8 : 0;
		c.type_token = c.kind == SW_EH_CATCH ? fz_u8(f) % 3 : 0;
		sw_swu_eh_clause(b, &c);        /* refused or not */
	}
	if (sw_swu_finish(b, CODE, blob, sizeof blob, &len) != SW_OK || len == 0) {
		sw_swu_builder_destroy(b);
		return;
	}
	sw_swu_builder_destroy(b);
	patches = fz_u8(f) % 8;
	for (unsigned k = 0; k < patches; k++) {
		size_t at = fz_u16(f) % len;

		blob[at] = fz_u8(f);
	}
	ci = (sw_code_info){ 0 };
	ci.method = &handles[i];
	ci.start = METHOD_AT(i);
	ci.size = CODE;
	ci.unwind = blob;
	ci.unwind_size = (uint32_t)len;
	sw_codemap_add(map, &ci);       /* a blob it refuses is simply missing */
}

struct runtime {
	struct fz *f;
	unsigned calls;
};

static int type_matches(void *data, uint64_t exception, const sw_eh_site *site)
{
	struct runtime *rt = data;

	if (++rt->calls > MAX_CALLS)
		abort();
	(void)site;
	return (fz_u8(rt->f) & 1) ^ (exception == 7);
}

static int run_filter(void *data, uint64_t exception, const sw_eh_site *site)
{
	struct runtime *rt = data;
	uint8_t a = fz_u8(rt->f);

	if (++rt->calls > MAX_CALLS)
		abort();
	(void)exception;
	(void)site;
	return a == 0xff ? SW_E_ABORTED : a & 1;
}

static sw_status run_handler(void *data, uint64_t exception, const sw_eh_site *site,
                             uint64_t *resume_ip)
{
	struct runtime *rt = data;

	if (++rt->calls > MAX_CALLS)
		abort();
	(void)exception;
	if (fz_u8(rt->f) == 0xff)
		return SW_E_ABORTED;
	*resume_ip = site->code->start + fz_u8(rt->f);
	return SW_OK;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const sw_exception_ops ops = { type_matches, run_filter, run_handler };
	struct fz f;
	struct runtime rt;
	sw_memory mem;
	sw_codemap *map;
	sw_thread t;
	sw_context seed;
	sw_exception_result res;
	uint64_t tracker, old_head;
	unsigned nframes, edits;
	sw_status st;

	fz_init(&f, data, size);
	memset(stack, 0, sizeof stack);
	if (sw_memory_init_buffer(&mem, stack, sizeof stack, STACK_BASE) != SW_OK ||
	    sw_codemap_create(&map) != SW_OK)
		abort();
	nframes = 1 + fz_u8(&f) % MAX_FRAMES;
	for (unsigned i = 0; i < nframes; i++) {
		add_method(map, i, &f);
		put(CFA(i) - 8, i ? METHOD_AT(i - 1) + 25 : 0);
		put(CFA(i) - 16, i ? CFA(i - 1) - 16 : 0);
		put(CFA(i) - 24, 0x1000 + i);
	}
	/* Words of the stack anywhere: return addresses, saved registers, the old tracker head. */
	edits = fz_u8(&f) % 8;
	for (unsigned k = 0; k < edits; k++)
		put(STACK_BASE + (fz_u16(&f) % STACK_SIZE & ~7u), fz_u64(&f));
	old_head = get(EXC_SLOT);
	if (sw_thread_init(&t, SW_ARCH_X64, map, &mem, 0, STACK_BASE, EXC_SLOT) != SW_OK)
		abort();
	t.exception_head = EXC_SLOT;

	sw_context_init(&seed, SW_ARCH_X64);
	sw_context_set(&seed, SW_X64_RIP, METHOD_AT(nframes - 1) + fz_u8(&f) % 64);
	sw_context_set(&seed, SW_X64_RSP, CFA(nframes - 1) - 96);
	sw_context_set(&seed, SW_X64_RBP, CFA(nframes - 1) - 16);
	sw_context_set(&seed, SW_X64_RBX, 0x1000 + nframes - 1);
	tracker = fz_u8(&f) < 0xf0 ? CFA(nframes - 1) - 96 - 0x400 : fz_u64(&f);

	rt.f = &f;
	rt.calls = 0;
	st = sw_exception_dispatch(&t, &seed, fz_u8(&f) % 8, &ops, &rt, tracker, 0, &res);
	/* A dispatch that got as far as linking its tracker unlinks it. */
	if (get(EXC_SLOT) != old_head)
		abort();
	if (st == SW_OK) {
		uint64_t sp = sw_context_sp(&res.resume);

		if (sp < STACK_BASE || sp >= STACK_HI || res.frames == 0 || res.frames > nframes ||
		    sw_context_ip(&res.resume) < METHOD_AT(0))
			abort();
	}
	sw_codemap_destroy(map);
	return 0;
}
