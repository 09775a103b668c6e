/*
 * frames-demo - a runtime's side of libstackwalk, in plain C.
 *
 * An interpreter keeps one Frame per interpreted call on its thread's Frame
 * list, with a Frame type of its own.  The demo registers that type, pushes
 * Frames as it "calls", walks its own thread with the iterator, then copies
 * the stack into a buffer and walks the copy the way a post-mortem tool
 * would, and checks both walks agree.  At its deepest call it also holds a
 * value with two object references under a ProtectValueClassFrame, and
 * checks that both walks report exactly those two slots as GC roots.  Uses
 * only the public API.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <stddef.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>

/* The interpreter's Frame: field 0 is the interpreted method, field 1 the bytecode offset. */
#define INTERP_FRAME_TYPE SW_FRAME_TYPE_USER
typedef struct interp_frame {
	sw_frame base;
	uintptr_t method;
	uintptr_t bytecode_offset;
} interp_frame;

/* Interpreted calls never resume JIT code, so there is no return address. */
static sw_status interp_return_address(const sw_frame_view *f, uint64_t *ra)
{
	(void)f;
	*ra = 0;
	return SW_OK;
}

static sw_status interp_update_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
{
	(void)f; (void)rd;
	return SW_E_BADFRAME;       /* never called: no managed return address */
}

static sw_status interp_method(const sw_frame_view *f, void **method)
{
	uint64_t m;
	sw_status st = sw_frame_read_field(f, 0, &m);

	*method = (void *)(uintptr_t)m;
	return st;
}

/*
 * The runtime's filler for HelperMethodFrames whose machine state it
 * captures lazily (sw_frame_set_lazy_init).  It runs on the walk path,
 * maybe in a signal handler: no allocation, no lock, no system call.  This
 * interpreter pushes no HelperMethodFrame, so it leaves any state empty
 * and the walk reports such a Frame without following it.
 */
static sw_status fill_helper_state(const sw_frame_view *f, void *data)
{
	(void)f; (void)data;
	return SW_OK;
}

static const sw_frame_lazy_init lazy_helper_state = { fill_helper_state, NULL };

static const sw_frame_ops interp_ops = {
	.type = INTERP_FRAME_TYPE,
	.name = "InterpCallFrame",
	.return_address = interp_return_address,
	.update_regdisplay = interp_update_regdisplay,
	.method = interp_method,
};

static const char *const method_names[] = { "main", "Fib", "Fib", "Fib", "Print" };
#define NCALLS (sizeof method_names / sizeof method_names[0])

static sw_frame *frame_head;    /* the interpreter thread's Frame list */

/* A value the interpreter holds on its stack: two object references among other fields. */
struct held_value {
	long count;
	void *first;
	void *second;
	double weight;
};

/* What a walk found: the methods of its frames, the GC roots of its Frames. */
struct walk_result {
	uint64_t methods[NCALLS + 1];
	uint64_t roots[4];
	int nroots;
};

static sw_walk_action note_root(const sw_crawl_frame *cf, const sw_gc_root *root, void *data)
{
	struct walk_result *w = data;

	(void)cf;
	if (w->nroots < 4)
		w->roots[w->nroots] = root->addr;
	w->nroots++;
	return SW_CONTINUE;
}

/* One walk, printed; returns the number of frames or -1. */
static int walk_and_print(const char *title, const sw_thread *t, const sw_context *seed,
                          struct walk_result *out)
{
	unsigned p = sw_arch_pointer_size(t->arch);
	sw_iter it;
	int r, n = 0;

	printf("%s\n", title);
	if (sw_iter_init(&it, t, seed, 0, SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT) != SW_OK)
		return -1;
	while ((r = sw_iter_next(&it)) > 0) {
		const sw_crawl_frame *cf = sw_iter_frame(&it);
		uint64_t frame = sw_crawl_frame_frame(cf), offset = 0;
		const char *name = "?";

		if (sw_crawl_frame_state(cf) == SW_STATE_INITIAL_NATIVE) {
			printf("  #%u %-14s ip %#" PRIx64 " sp %#" PRIx64 "%s\n", sw_crawl_frame_depth(cf),
			       sw_frame_state_name(sw_crawl_frame_state(cf)), sw_crawl_frame_ip(cf),
			       sw_crawl_frame_sp(cf),
			       sw_crawl_frame_is_first(cf) ? " (active)" : "");
			continue;
		}
		/* An interpreted call's field 1, read through the same memory accessor. */
		if (sw_crawl_frame_frame_type(cf) == INTERP_FRAME_TYPE)
			sw_memory_read(t->memory, frame + p + 8 + p, &offset, p);
		/* The references the Frame protects, as a GC would ask. */
		if (sw_crawl_frame_enum_gc_roots(cf, note_root, out) != SW_OK)
			printf("  (its GC roots could not be enumerated)\n");
		for (unsigned i = 0; i < NCALLS; i++)
			if (sw_crawl_frame_method(cf) == (void *)method_names[i])
				name = method_names[i];
		printf("  #%u %-14s %-16s %-6s pc %-4" PRIu64 "%s%s%s\n", sw_crawl_frame_depth(cf),
		       sw_frame_state_name(sw_crawl_frame_state(cf)),
		       sw_frame_type_ops(sw_crawl_frame_frame_type(cf))->name, name, offset,
		       sw_crawl_frame_is_frameless(cf) ? " managed" : "",
		       sw_crawl_frame_is_interrupted(cf) || sw_crawl_frame_has_faulted(cf) ? " interrupted" : "",
		       sw_crawl_frame_is_native_marker(cf) ? " marker" : "");
		if (n < (int)NCALLS + 1)
			out->methods[n] = (uintptr_t)sw_crawl_frame_method(cf);
		n++;
	}
	if (r < 0) {
		sw_walk_error err;

		sw_iter_error(&it, &err);
		printf("  walk failed at frame %u: %s\n", err.depth, sw_strerror(err.status));
		n = -1;
	}
	sw_iter_end(&it);
	return n;
}

/*
 * Copy our own live stack byte by byte.  AddressSanitizer poisons the
 * redzones between other functions' locals; a dump tool reads them all
 * the same, so this copy is not instrumented.
 */
#if defined(__has_feature)
#if __has_feature(address_sanitizer)
#define NO_ASAN __attribute__((no_sanitize_address))
#endif
#endif
#if !defined(NO_ASAN) && defined(__SANITIZE_ADDRESS__)
#define NO_ASAN __attribute__((no_sanitize_address))
#endif
#ifndef NO_ASAN
#define NO_ASAN
#endif
static NO_ASAN void copy_stack(unsigned char *dst, uint64_t lo, size_t size)
{
	const volatile unsigned char *src = (const volatile unsigned char *)(uintptr_t)lo;

	for (size_t i = 0; i < size; i++)
		dst[i] = src[i];
}

/* Walk a copy of [lo, hi) of our stack, as a tool reading a dump would. */
static int walk_snapshot(const sw_codemap *map, uint64_t lo, uint64_t hi, struct walk_result *out)
{
	size_t size = (size_t)(hi - lo);
	unsigned char *copy = malloc(size + 8);
	uint64_t head = (uintptr_t)frame_head;
	sw_memory mem;
	sw_thread t;
	int n = -1;

	if (!copy)
		return -1;
	copy_stack(copy, lo, size);
	/* The list head lives outside the stack: keep it in the copy's last slot. */
	if (sw_memory_init_buffer(&mem, copy, size + 8, lo) == SW_OK &&
	    sw_memory_write(&mem, hi, &head, sizeof head) == SW_OK &&
	    sw_thread_init(&t, sw_arch_host(), map, &mem, hi, lo, hi) == SW_OK)
		n = walk_and_print("walk of a copy of the stack (buffer memory):", &t, NULL, out);
	free(copy);
	return n;
}

static int interpret(unsigned depth, const sw_thread *self, const sw_codemap *map)
{
	interp_frame f = { .method = (uintptr_t)method_names[depth], .bytecode_offset = 10 * depth + 3 };
	int ok;

	sw_frame_push(&frame_head, &f.base, INTERP_FRAME_TYPE, 0);
	if (depth + 1 < NCALLS) {
		ok = interpret(depth + 1, self, map);
	} else {
		struct walk_result live, copied;
		struct held_value v = { 3, &f, &live, 0.5 };
		/*
		 * The value's layout, on the stack too so that a copy of the
		 * stack holds it: one series of two slots from `first`.
		 */
		sw_value_layout layout = { 1, { { offsetof(struct held_value, first), 2, 0 } } };
		sw_value_class_info held = { NULL, (uintptr_t)&layout, (uintptr_t)&v };
		sw_protect_value_class_frame protect = { .values = (uintptr_t)&held };
		sw_context seed;
		/* SP lies at or below every local: below the newest Frame, too. */
		uintptr_t locals[] = { (uintptr_t)&seed, (uintptr_t)&protect, (uintptr_t)&held,
		                       (uintptr_t)&layout, (uintptr_t)&v };
		uint64_t here = UINTPTR_MAX;
		int n1, n2;

		for (size_t i = 0; i < sizeof locals / sizeof locals[0]; i++)
			if (locals[i] < here)
				here = locals[i];
		here &= ~(uint64_t)15;
		_Static_assert(offsetof(struct held_value, second) ==
		               offsetof(struct held_value, first) + sizeof(void *), "consecutive references");
		sw_frame_push(&frame_head, &protect.base, SW_FRAME_PROTECT_VALUE_CLASS, 0);
		memset(&live, 0, sizeof live);
		memset(&copied, 0, sizeof copied);
		/* The seed is this C function: unmanaged, so the walk starts at the Frames. */
		sw_context_init(&seed, sw_arch_host());
		sw_context_set(&seed, SW_X64_RIP, (uintptr_t)&interpret);
		sw_context_set(&seed, SW_X64_RSP, here);
		n1 = walk_and_print("walk of this thread (local memory):", self, &seed, &live);
		/* The copy starts at the seed's SP, below the newest Frame. */
		n2 = walk_snapshot(map, here, self->stack_hi, &copied);
		sw_frame_pop(&frame_head, &protect.base);
		printf("GC roots: %d and %d; the held value's references at %p and %p\n", live.nroots,
		       copied.nroots, (void *)&v.first, (void *)&v.second);
		ok = n1 == (int)NCALLS + 1 && n2 == (int)NCALLS + 1 &&
		     memcmp(live.methods, copied.methods, sizeof live.methods) == 0 &&
		     live.nroots == 2 && copied.nroots == 2 &&
		     live.roots[0] == (uintptr_t)&v.first && live.roots[1] == (uintptr_t)&v.second &&
		     memcmp(live.roots, copied.roots, sizeof live.roots) == 0;
	}
	sw_frame_pop(&frame_head, &f.base);
	return ok;
}

int main(void)
{
	pthread_attr_t attr;
	void *stack;
	size_t stack_size;
	sw_codemap *map;
	sw_memory mem;
	sw_thread self;
	sw_swu_builder *b;
	unsigned char blob[64];
	size_t len;
	unsigned token;
	sw_code_info ci;
	int ok;

	printf("frames-demo on %s (pointers of %u bytes)\n", sw_arch_name(sw_arch_host()),
	       sw_arch_pointer_size(sw_arch_host()));
	if (sw_arch_host() != SW_ARCH_X64) {
		printf("this demo's seed context is written for x64; skipping\n");
		return 0;
	}
	if (sw_frame_type_register(&interp_ops) != SW_OK ||
	    sw_frame_set_lazy_init(&lazy_helper_state) != SW_OK || sw_codemap_create(&map) != SW_OK)
		return 1;

	/* The interpreter's own JIT-compiled helper: a leaf with no frame. */
	if (sw_swu_builder_create(&b, SW_ARCH_X64) != SW_OK ||
	    sw_swu_finish(b, 16, blob, sizeof blob, &len) != SW_OK ||
	    sw_swu_validate(blob, len) != SW_OK)
		return 1;
	sw_swu_builder_destroy(b);
	ci = (sw_code_info){ .method = "helper", .start = 0x10000, .size = 16,
	                     .unwind = blob, .unwind_size = (uint32_t)len };
	if (sw_codemap_add(map, &ci) != SW_OK)
		return 1;
	token = sw_codemap_read_begin(map);
	if (sw_codemap_find(map, 0x10008, &ci) == SW_OK)
		printf("code map: %zu method(s); 0x10008 is in %s\n", sw_codemap_count(map),
		       (const char *)ci.method);
	sw_codemap_read_end(map, token);

	/* Describe this thread by hand: its stack, and the list head outside it. */
	if (pthread_getattr_np(pthread_self(), &attr) != 0 ||
	    pthread_attr_getstack(&attr, &stack, &stack_size) != 0)
		return 1;
	pthread_attr_destroy(&attr);
	if (sw_memory_init_local(&mem, (uintptr_t)stack, (uintptr_t)stack + stack_size, 0) != SW_OK ||
	    sw_memory_local_allow(&mem, (uintptr_t)&frame_head, (uintptr_t)(&frame_head + 1)) != SW_OK ||
	    sw_thread_init(&self, SW_ARCH_X64, map, &mem, (uintptr_t)&frame_head,
	                   (uintptr_t)stack, (uintptr_t)stack + stack_size) != SW_OK)
		return 1;

	ok = interpret(0, &self, map);
	printf("both walks agree: %s\n", ok ? "yes" : "NO");
	sw_codemap_destroy(map);
	return ok ? 0 : 1;
}
