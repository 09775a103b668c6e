/*
 * fuzz_frames.c - the walker over Frame lists, context records and
 * exception trackers the input makes up.
 *
 * A stack buffer is laid out from a list of commands: Frames of any type
 * (built-in, a user type registered here, unknown) with any attributes
 * and fields, context records, exception trackers, raw pointer-sized
 * values.  Fields are drawn from values likely to mean something (buffer
 * addresses, code addresses of real methods, small numbers) as well as
 * raw ones.  The Frames are linked in the order given or sorted (a list
 * that ascends the stack, as the walker expects), and the walk starts from
 * the newest Frame or from a context.  The methods are those of a small
 * synthetic stack (built once per architecture), so Frames that return to
 * managed code are followed into real SWU.  The walk must give an error
 * or succeed; it must never crash, hang or read outside the buffer.
 */
#include <stdlib.h>
#include <stackwalk.h>
#include "fuzz.h"

#define STACK_SIZE   8192u
#define STACK_BASE   0x00200000u         /* valid for every pointer width */
#define MAX_CMDS     64
#define MAX_LISTED   32
#define MAX_CODE     64

struct arch_world {
	sw_synth *s;                    /* its code map holds the methods */
	uint64_t code[MAX_CODE];        /* IPs inside them */
	unsigned ncode;
};

static struct arch_world worlds[4];

static const struct arch_world *arch_world(sw_arch arch)
{
	struct arch_world *w = &worlds[arch];
	sw_synth_params p;
	sw_synth_frame fr[MAX_CODE];
	size_t n;

	if (w->s)
		return w;
	sw_synth_params_default(&p);
	p.min_frames = 8;
	p.max_frames = 16;
	if (sw_synth_create(&w->s, arch, 0x46524d53u + (unsigned)arch, &p) != SW_OK)
		abort();        /* a fixed, known-good stack: the generator is broken */
	n = sw_synth_expected(w->s, 0, fr, MAX_CODE);
	for (size_t i = 0; i < n && i < MAX_CODE; i++)
		if (fr[i].state == SW_STATE_FRAMELESS)
			w->code[w->ncode++] = fr[i].ip;
	return w;
}

/* A runtime's own Frame type: its fields say everything. */
static sw_status user_ra(const sw_frame_view *f, uint64_t *ra)
{
	return sw_frame_read_field(f, 0, ra);
}

static sw_status user_update(const sw_frame_view *f, sw_regdisplay *rd)
{
	uint64_t sp, ip;
	sw_status st = sw_frame_read_field(f, 1, &sp);

	if (st == SW_OK)
		st = sw_frame_read_field(f, 0, &ip);
	if (st != SW_OK)
		return st;
	rd->cur.valid = 0;
	/* Register numbers of IP and SP differ per arch; the walker validates them. */
	switch (rd->cur.arch) {
	case SW_ARCH_X64:
		sw_context_set(&rd->cur, SW_X64_RIP, ip);
		sw_context_set(&rd->cur, SW_X64_RSP, sp);
		break;
	case SW_ARCH_X86:
		sw_context_set(&rd->cur, SW_X86_EIP, ip);
		sw_context_set(&rd->cur, SW_X86_ESP, sp);
		break;
	default:
		sw_context_set(&rd->cur, SW_ARM64_PC, ip);
		sw_context_set(&rd->cur, SW_ARM64_SP, sp);
		break;
	}
	return SW_OK;
}

static sw_status user_gc(const sw_frame_view *f, int (*fn)(void *data, uint64_t slot,
                                                            uint32_t flags), void *data)
{
	uint64_t slot;

	for (unsigned i = 2; i < 4; i++)
		if (sw_frame_read_field(f, i, &slot) == SW_OK && slot && fn(data, slot, 0))
			break;
	return SW_OK;
}

static const sw_frame_ops user_ops = {
	SW_FRAME_TYPE_USER, 0, "FuzzFrame", user_ra, user_update, NULL, NULL, user_gc
};

struct world {
	sw_arch arch;
	unsigned ptr;
	const struct arch_world *aw;
	uint8_t stack[STACK_SIZE];
	uint64_t frames[MAX_LISTED], trackers[MAX_LISTED];
	unsigned nframes, ntrackers;
};

static void put(struct world *w, uint64_t addr, unsigned size, uint64_t v)
{
	for (unsigned i = 0; i < size; i++)
		if (addr + i >= STACK_BASE && addr + i < STACK_BASE + STACK_SIZE)
			w->stack[addr + i - STACK_BASE] = (uint8_t)(v >> (8 * i));
}

static uint64_t slot_addr(struct world *w, struct fz *f)
{
	return STACK_BASE + ((fz_u16(f) % STACK_SIZE) & ~(uint64_t)(w->ptr - 1));
}

static uint64_t some_value(struct world *w, struct fz *f)
{
	switch (fz_u8(f) % 6) {
	case 0:
	case 1:
		return slot_addr(w, f);
	case 2:
		return w->aw->ncode ? w->aw->code[fz_u8(f) % w->aw->ncode] : 0;
	case 3:
		return fz_u8(f);
	case 4:
		return 0;
	default:
		return fz_u64(f);
	}
}

static uint32_t frame_type(struct fz *f)
{
	uint8_t t = fz_u8(f);

	if (t < 0xe0)
		return 1 + t % SW_FRAME_INTERPRETER;
	if (t < 0xf0)
		return SW_FRAME_TYPE_USER;
	return t;       /* unknown, or none */
}

static void command(struct world *w, struct fz *f)
{
	uint64_t at, mask;
	unsigned n;

	switch (fz_u8(f) % 5) {
	case 0:         /* a Frame: header, then fields */
		at = slot_addr(w, f);
		put(w, at + w->ptr, 4, frame_type(f));
		put(w, at + w->ptr + 4, 4, fz_u8(f) & 0x0f);
		n = fz_u8(f) % 7;
		for (unsigned i = 0; i < n; i++)
			put(w, at + w->ptr + 8 + w->ptr * i, w->ptr, some_value(w, f));
		if (w->nframes < MAX_LISTED)
			w->frames[w->nframes++] = at;
		break;
	case 1:         /* a context record */
		at = slot_addr(w, f);
		put(w, at, 4, fz_u8(f) < 0xf0 ? w->arch : fz_u8(f));
		put(w, at + 4, 4, 0);
		mask = fz_u8(f) & 1 ? fz_u64(f) : ~0ULL >> (64 - SW_MAX_REGS);
		put(w, at + 8, 8, mask);
		n = fz_u8(f) % 12;
		for (unsigned i = 0; i < n; i++)
			put(w, at + 16 + 8 * (uint64_t)(fz_u8(f) % SW_MAX_REGS), 8, some_value(w, f));
		break;
	case 2:         /* an exception tracker: next, context record */
		at = slot_addr(w, f);
		put(w, at + w->ptr, w->ptr, some_value(w, f));
		if (w->ntrackers < MAX_LISTED)
			w->trackers[w->ntrackers++] = at;
		break;
	default:        /* anything, anywhere */
		at = slot_addr(w, f);
		put(w, at, w->ptr, some_value(w, f));
		break;
	}
}

static int by_address(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return (x > y) - (x < y);
}

/* Link a list through the first pointer of each entry; the head goes in head_slot. */
static void link_list(struct world *w, uint64_t *items, unsigned n, int sorted, uint64_t head_slot)
{
	if (sorted)
		qsort(items, n, sizeof *items, by_address);
	for (unsigned i = 0; i < n; i++)
		put(w, items[i], w->ptr, i + 1 < n ? items[i + 1] : 0);
	put(w, head_slot, w->ptr, n ? items[0] : 0);
}

static sw_walk_action count_root(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	(void)cf;
	(void)root;
	return ++*(unsigned *)data > 100000 ? SW_ABORT : SW_CONTINUE;
}

static sw_walk_action on_frame(const sw_crawl_frame *cf, void *data)
{
	const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);
	volatile uint64_t sink;

	sink = sw_crawl_frame_frame(cf) + (uintptr_t)sw_crawl_frame_method(cf) +
	       sw_crawl_frame_relative_offset(cf) + (uint64_t)sw_crawl_frame_state(cf);
	if (rd)
		sink += rd->cur.valid;
	(void)sink;
	(void)sw_crawl_frame_enum_gc_roots(cf, count_root, data);
	return SW_CONTINUE;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int registered;
	static struct world w;
	struct fz f;
	sw_memory mem;
	sw_thread t;
	sw_context ctx;
	sw_walk_error err;
	unsigned flags, mode, ncmds, roots = 0;
	uint64_t head_slot, tracker_slot;

	if (!registered) {
		registered = 1;
		(void)sw_frame_type_register(&user_ops);
	}
	fz_init(&f, data, size);
	memset(&w, 0, sizeof w);
	w.arch = (sw_arch)fz_arch(&f);
	w.ptr = sw_arch_pointer_size(w.arch);
	w.aw = arch_world(w.arch);
	flags = fz_u32(&f) & SW_WALK_KNOWN_FLAGS;
	mode = fz_u8(&f);
	/* The list heads sit at the top of the buffer, above the stack proper. */
	head_slot = STACK_BASE + STACK_SIZE - w.ptr;
	tracker_slot = head_slot - w.ptr;
	ncmds = fz_u8(&f) % MAX_CMDS;
	for (unsigned i = 0; i < ncmds && f.n; i++)
		command(&w, &f);
	link_list(&w, w.frames, w.nframes, mode & 1, head_slot);
	link_list(&w, w.trackers, w.ntrackers, mode & 2, tracker_slot);

	sw_memory_init_buffer(&mem, w.stack, STACK_SIZE, STACK_BASE);
	if (sw_thread_init(&t, w.arch, sw_synth_thread(w.aw->s)->codemap, &mem, head_slot,
	                   STACK_BASE, tracker_slot) != SW_OK)
		abort();
	if (mode & 4)
		t.exception_head = tracker_slot;
	sw_context_init(&ctx, w.arch);
	for (unsigned r = 0; r < SW_MAX_REGS && f.n; r++)
		if (fz_u8(&f) & 1)
			sw_context_set(&ctx, r, some_value(&w, &f));
	/* Walk from the newest Frame, from the context, or from a Frame of the input. */
	if (mode & 8)
		(void)sw_walk_frames(&t, NULL, (mode & 16) && w.nframes ? w.frames[(mode >> 5) % w.nframes] : 0,
		                     on_frame, &roots, flags, &err);
	else
		(void)sw_walk_frames(&t, &ctx, 0, on_frame, &roots, flags, &err);
	return 0;
}
