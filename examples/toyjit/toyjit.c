/*
 * toyjit.c - the toy JIT's common part: the code mapping, the method table,
 * the SWU builder around each method, registration, runs and patching.  What
 * the machine code looks like is the host back end's (toyjit_backend.h).
 */
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include "toyjit_backend.h"

#define CODE_CAP        (64 * 1024)

/* The page size, read once (sysconf is not async-signal-safe; toyjit_patch must be). */
static uintptr_t page_size;

static const struct toyjit_backend *host_backend(void)
{
#if defined(__x86_64__)
	return &toyjit_backend_x64;
#elif defined(__i386__)
	return &toyjit_backend_x86;
#elif defined(__aarch64__)
	return &toyjit_backend_arm64;
#else
	return NULL;
#endif
}

const toyjit_host *toyjit_host_info(void)
{
	const struct toyjit_backend *be = host_backend();

	return be ? &be->host : NULL;
}

const char *toyjit_shape_name(toyjit_shape shape)
{
	const struct toyjit_backend *be = host_backend();

	return be && shape < TOYJIT_NSHAPES ? be->shape_names[shape] : "?";
}

const unsigned char *toyjit_shadow_regs(unsigned *n)
{
	const struct toyjit_backend *be = host_backend();

	*n = be ? be->nshadow_regs : 0;
	return be ? be->shadow_regs : NULL;
}

uint64_t toyjit_clobber_value(unsigned index, unsigned reg)
{
	return (uint64_t)(uintptr_t)(0x7a17000000000000ull | (uint64_t)index << 16 |
	                             (uint64_t)reg << 8 | 0xc5);
}

void tj_call_site(struct tj_emit *e, uint32_t args)
{
	toyjit_method *m = e->m;

	if (m->ncalls >= TOYJIT_MAX_CALLS) {
		tj_note(e, SW_E_LIMIT);
		return;
	}
	m->calls[m->ncalls].ret_offset = tj_here(e);
	m->calls[m->ncalls].args = args;
	m->ncalls++;
}

void tj_shadow_pushed(struct tj_emit *e)
{
	e->m->shadow_push_end = tj_here(e);
}

void tj_shadow_popped(struct tj_emit *e)
{
	e->m->shadow_pop_end = tj_here(e);
}

/*
 * The P/Invoke target: unmanaged code that calls managed code back (a
 * reverse P/Invoke).  The store after the call keeps the compiler from
 * turning it into a tail call, which would hide this native frame.
 */
void toyjit_pinvoke_target(int32_t n, toyjit_entry_fn entry, toyjit *jit)
{
	jit->pinvoke_calls++;
	entry(n);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	jit->pinvoke_calls++;
}

/* The runtime's part of sw_exception_dispatch: the toy's types are its tokens. */
static int toyjit_type_matches(void *data, uint64_t exception, const sw_eh_site *site)
{
	(void)data;
	return site->clause.type_token == exception;
}

/* The toy JIT emits no filters. */
static int toyjit_run_filter(void *data, uint64_t exception, const sw_eh_site *site)
{
	(void)data; (void)exception; (void)site;
	return 0;
}

/*
 * Run the catch funclet with the establisher frame (the thrower's frame
 * pointer), through which it reaches the thrower's locals; the thrower
 * goes on after its try.  The store after the call keeps it from being a
 * tail call, which would hide this frame.
 */
static sw_status toyjit_run_handler(void *data, uint64_t exception, const sw_eh_site *site,
                                    uint64_t *resume_ip)
{
	toyjit *jit = data;
	void (*funclet)(uintptr_t) = (void (*)(uintptr_t))(uintptr_t)site->funclet;

	(void)exception;
	if (site->clause.kind != SW_EH_CATCH || site->code->method != &jit->thrower)
		return SW_E_UNSUPPORTED;
	jit->funclet_active = 1;
	funclet((uintptr_t)site->regs->regs[SW_X64_RBP]);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	jit->funclet_active = 0;
	*resume_ip = site->code->start + jit->thrower.try_end;
	return SW_OK;
}

static const sw_exception_ops toyjit_exception_ops = {
	toyjit_type_matches, toyjit_run_filter, toyjit_run_handler
};

/*
 * The exception dispatch: the throw stub's TransitionFrame is linked, so a
 * walk from the funclet crosses this C code.  With an exception tracker
 * list, sw_exception_dispatch walks from the throw stub (through its
 * TransitionFrame to the thrower), runs the catch funclet and resumes the
 * thrower after its try: the stub never returns.  Without one, like the
 * CLR's second pass it calls the funclet with the establisher frame and
 * returns through the stub.
 */
void toyjit_dispatch(toyjit *jit, sw_transition_frame *tf, uintptr_t establisher)
{
	void (*funclet)(uintptr_t) = (void (*)(uintptr_t))(uintptr_t)jit->funclet.start;

	if (jit->exception_head && jit->arch == SW_ARCH_X64) {
		sw_exception_tracker tracker;
		sw_exception_result res;
		sw_context at;

		/* The throw as the stub sees it: native code, its TransitionFrame just above. */
		sw_context_init(&at, jit->arch);
		sw_context_set(&at, SW_X64_RIP, jit->throw_stub_start);
		sw_context_set(&at, SW_X64_RSP, (uintptr_t)tf);
		jit->dispatch_status = sw_exception_dispatch(&jit->dispatch_thread, &at, TOYJIT_CATCH_TYPE,
		                                             &toyjit_exception_ops, jit,
		                                             (uintptr_t)&tracker, 0, &res);
		if (jit->dispatch_status == SW_OK) {
			jit->dispatched++;
			jit->dispatch_status = sw_context_resume(&res.resume);
		}
		return;
	}
	jit->funclet_active = 1;
	funclet(establisher);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	jit->funclet_active = 0;
}

uintptr_t toyjit_payload_a(unsigned k, int32_t n)
{
	return (uintptr_t)(uint32_t)n + ((uintptr_t)(k + 1) << 12);
}

uintptr_t toyjit_payload_b(unsigned k, int32_t n)
{
	return (uintptr_t)(uint32_t)n + ((uintptr_t)(k + 1) << 20);
}

static toyjit_emit_fn emit_hook;
static void *emit_hook_data;

void toyjit_set_emit_hook(toyjit_emit_fn fn, void *data)
{
	emit_hook = fn;
	emit_hook_data = data;
}

/* The method's code ends here. */
static void end_code(struct tj_emit *e)
{
	e->m->start = (uintptr_t)(e->b->code + e->start);
	e->m->size = tj_here(e);
}

/* Encode the description into m->swu, and show the method to the hook. */
static sw_status finish_method(struct tj_emit *e)
{
	toyjit_method *m = e->m;
	uint8_t blob[1024];
	size_t blob_len = 0;

	if (e->b->overflow)
		return SW_E_LIMIT;
	if (e->err != SW_OK)
		return e->err;
	tj_note(e, sw_swu_finish(e->sb, m->size, blob, sizeof(blob), &blob_len));
	if (e->err != SW_OK)
		return e->err;
	m->swu = malloc(blob_len);
	if (!m->swu)
		return SW_E_NOMEM;
	memcpy(m->swu, blob, blob_len);
	m->swu_size = blob_len;
	if (emit_hook)
		emit_hook(m, e->b->code + e->start, emit_hook_data);
	return SW_OK;
}

void toyjit_leave_gap(code_buf *b, const struct toyjit_backend *be, size_t gap)
{
	size_t want = b->len + gap;

	be->align(b, be->method_align);
	while (b->len < want && !b->overflow)
		code_put(b, be->host.trap, be->host.trap_len);
	be->align(b, be->method_align);
}

static void begin_method(struct tj_emit *e, const struct toyjit_backend *be)
{
	if (e->b->len)
		toyjit_leave_gap(e->b, be, TOYJIT_CODE_GAP);
	be->align(e->b, be->method_align);
	e->start = e->b->len;
	sw_swu_builder_reset(e->sb);
}

static sw_status emit_method(toyjit *jit, const struct toyjit_backend *be, code_buf *b,
                             sw_swu_builder *sb, unsigned k)
{
	toyjit_method *m = &jit->methods[k];
	struct tj_emit e = { jit, m, b, sb, 0, SW_OK };
	int32_t locals;
	sw_status st;

	begin_method(&e, be);
	locals = be->emit_prolog(&e, m->shape);
	tj_note(&e, sw_swu_end_prolog(sb, tj_here(&e)));
	m->prolog_size = tj_here(&e);
	be->emit_body(&e, locals, (k + 1) % jit->nmethods);
	be->emit_epilog(&e, m->shape);
	end_code(&e);
	if ((st = finish_method(&e)) != SW_OK)
		return st;
	jit->entries[k] = (void *)(uintptr_t)m->start;
	return SW_OK;
}

/* A method emitted by one back-end call: the leaf, the thrower, the funclet. */
static sw_status emit_whole(toyjit *jit, const struct toyjit_backend *be, code_buf *b,
                            sw_swu_builder *sb, toyjit_method *m, void (*fn)(struct tj_emit *))
{
	struct tj_emit e = { jit, m, b, sb, 0, SW_OK };

	begin_method(&e, be);
	fn(&e);
	end_code(&e);
	return finish_method(&e);
}

/*
 * The thrower and its catch funclet.  The funclet follows the thrower's
 * code, as CoreCLR lays funclets out after their method's main body
 * (src/coreclr/vm/exceptionhandling.cpp), and the thrower's catch clause
 * names it by offset: the thrower's blob is finished once the funclet is
 * emitted, the funclet described meanwhile by a builder of its own.
 */
static sw_status emit_thrower(toyjit *jit, const struct toyjit_backend *be, code_buf *b,
                              sw_swu_builder *sb)
{
	toyjit_method *t = &jit->thrower, *f = &jit->funclet;
	struct tj_emit e = { jit, t, b, sb, 0, SW_OK };
	sw_swu_builder *fb = NULL;
	sw_eh_clause clause;
	sw_status st;

	begin_method(&e, be);
	be->emit_thrower(&e);
	end_code(&e);
	st = sw_swu_builder_create(&fb, be->host.arch);
	if (st == SW_OK)
		st = emit_whole(jit, be, b, fb, f, be->emit_funclet);
	sw_swu_builder_destroy(fb);
	if (st != SW_OK)
		return st;
	memset(&clause, 0, sizeof clause);
	clause.kind = SW_EH_CATCH;
	clause.try_start = t->try_start;
	clause.try_end = t->try_end;
	clause.handler_start = (uint32_t)(f->start - t->start);
	clause.handler_end = clause.handler_start + f->size;
	clause.type_token = TOYJIT_CATCH_TYPE;
	tj_note(&e, sw_swu_eh_clause(sb, &clause));
	return finish_method(&e);
}

static sw_status add_method(toyjit *jit, const toyjit_method *m)
{
	sw_code_info info;

	memset(&info, 0, sizeof(info));
	info.method = (void *)(uintptr_t)m;
	info.start = m->start;
	info.size = m->size;
	info.unwind = m->swu;
	info.unwind_size = (uint32_t)m->swu_size;
	info.flags = m->code_flags;
	info.parent = (void *)(uintptr_t)m->parent;
	return sw_codemap_add(jit->map, &info);
}

static sw_status register_methods(toyjit *jit)
{
	const toyjit_method *all[TOYJIT_MAX_METHODS + 3];
	unsigned n = 0;
	sw_status st;

	for (unsigned k = 0; k < jit->nmethods; k++)
		all[n++] = &jit->methods[k];
	if (jit->leaf.size)
		all[n++] = &jit->leaf;
	if (jit->thrower.size) {
		all[n++] = &jit->thrower;
		all[n++] = &jit->funclet;
	}
	for (unsigned i = 0; i < n; i++) {
		st = add_method(jit, all[i]);
		if (st != SW_OK) {
			while (i-- > 0)
				sw_codemap_remove(jit->map, all[i]->start);
			return st;
		}
	}
	/* The catch clause's funclet is registered where the clause says. */
	if (jit->thrower.size && (st = sw_codemap_check_eh(jit->map, jit->thrower.start, NULL)) != SW_OK) {
		for (unsigned i = 0; i < n; i++)
			sw_codemap_remove(jit->map, all[i]->start);
		return st;
	}
	return SW_OK;
}

static void free_blobs(toyjit *jit)
{
	for (unsigned k = 0; k < jit->nmethods; k++)
		free(jit->methods[k].swu);
	free(jit->leaf.swu);
	free(jit->thrower.swu);
	free(jit->funclet.swu);
	for (unsigned k = 0; k < jit->nnative; k++)
		free(jit->native[k].swu);
}

static sw_status emit_all(toyjit *jit, const struct toyjit_backend *be, void *mem)
{
	sw_swu_builder *sb = NULL;
	code_buf b;
	sw_status st;

	code_buf_init(&b, mem, CODE_CAP);
	b.starts = jit->insn_starts;
	be->emit_thunk(jit, &b);
	be->emit_stub(jit, &b);
	if (be->emit_throw_stub)
		be->emit_throw_stub(jit, &b);
	st = sw_swu_builder_create(&sb, be->host.arch);
	if (st == SW_OK && be->emit_leaf)
		st = emit_whole(jit, be, &b, sb, &jit->leaf, be->emit_leaf);
	for (unsigned k = 0; st == SW_OK && k < jit->nmethods; k++)
		st = emit_method(jit, be, &b, sb, k);
	if (st == SW_OK && be->emit_thrower && be->emit_funclet)
		st = emit_thrower(jit, be, &b, sb);
	sw_swu_builder_destroy(sb);
	if (st == SW_OK && b.overflow)
		st = SW_E_LIMIT;
	return st;
}

static void init_descriptors(toyjit *jit, const toyjit_shape *shapes, unsigned n,
                             const struct toyjit_backend *be)
{
	snprintf(jit->native_target.name, sizeof(jit->native_target.name), "toyjit_pinvoke_target");
	jit->native_target.native = 1;
	jit->native_target.jit = jit;
	jit->native_target.start = (uintptr_t)toyjit_pinvoke_target;
	snprintf(jit->leaf.name, sizeof(jit->leaf.name), "leaf");
	jit->leaf.leaf = 1;
	jit->leaf.index = TOYJIT_MAX_METHODS;
	jit->leaf.jit = jit;
	jit->leaf.gc_reg = -1;
	snprintf(jit->thrower.name, sizeof(jit->thrower.name), "thrower");
	jit->thrower.index = TOYJIT_MAX_METHODS + 1;
	jit->thrower.jit = jit;
	jit->thrower.gc_reg = -1;
	snprintf(jit->funclet.name, sizeof(jit->funclet.name), "thrower$catch");
	jit->funclet.index = TOYJIT_MAX_METHODS + 2;
	jit->funclet.jit = jit;
	jit->funclet.gc_reg = -1;
	jit->funclet.code_flags = SW_CODE_FUNCLET;
	jit->funclet.parent = &jit->thrower;
	for (unsigned k = 0; k < n; k++) {
		toyjit_method *m = &jit->methods[k];

		m->index = k;
		m->shape = shapes[k];
		m->jit = jit;
		m->gc_reg = -1;
		m->saved_regs = be->saved_mask(shapes[k]);
		snprintf(m->name, sizeof(m->name), "M%u_%s", k, be->shape_names[shapes[k]]);
	}
}

sw_status toyjit_create(toyjit **out, sw_codemap *map, sw_frame **head,
                        const toyjit_shape *shapes, unsigned n,
                        toyjit_helper_fn helper, void *user)
{
	const struct toyjit_backend *be = host_backend();
	toyjit *jit;
	sw_status st;
	void *mem;

	if (!be)
		return SW_E_UNSUPPORTED;
	if (!page_size)
		page_size = (uintptr_t)sysconf(_SC_PAGESIZE);
	if (!out || !map || !head || !shapes || n == 0 || n > TOYJIT_MAX_METHODS || !helper)
		return SW_E_INVAL;
	for (unsigned k = 0; k < n; k++)
		if (shapes[k] >= TOYJIT_NSHAPES)
			return SW_E_INVAL;
	jit = calloc(1, sizeof(*jit));
	if (!jit)
		return SW_E_NOMEM;
	jit->insn_starts = calloc(CODE_CAP / 8, 1);
	jit->heap[0] = malloc(2 * TOYJIT_HEAP_SIZE);
	jit->heap[1] = jit->heap[0] ? jit->heap[0] + TOYJIT_HEAP_SIZE : NULL;
	jit->gc_roots = calloc(TOYJIT_GC_MAX_ROOTS, sizeof(*jit->gc_roots));
	mem = mmap(NULL, CODE_CAP, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (mem == MAP_FAILED || !jit->insn_starts || !jit->heap[0] || !jit->gc_roots) {
		if (mem != MAP_FAILED)
			munmap(mem, CODE_CAP);
		free(jit->insn_starts);
		free(jit->heap[0]);
		free(jit->gc_roots);
		free(jit);
		return SW_E_NOMEM;
	}
	jit->heap_alloc = (uintptr_t)jit->heap[0];
	jit->code = mem;
	jit->code_cap = CODE_CAP;
	jit->map = map;
	jit->head = head;
	jit->helper = helper;
	jit->user = user;
	jit->nmethods = n;
	jit->arch = be->host.arch;
	jit->shadow_top = jit->shadow;
	jit->pinvoke_n = -1;
	init_descriptors(jit, shapes, n, be);

	st = emit_all(jit, be, mem);
	if (st == SW_OK && mprotect(mem, CODE_CAP, PROT_READ | PROT_EXEC) != 0)
		st = SW_E_NOMEM;
	__builtin___clear_cache((char *)mem, (char *)mem + CODE_CAP);
	if (st == SW_OK)
		st = register_methods(jit);
	if (st != SW_OK) {
		free_blobs(jit);
		munmap(mem, CODE_CAP);
		free(jit->insn_starts);
		free(jit->heap[0]);
		free(jit->gc_roots);
		free(jit);
		return st;
	}
	*out = jit;
	return SW_OK;
}

void toyjit_destroy(toyjit *jit)
{
	if (!jit)
		return;
	for (unsigned k = 0; k < jit->nmethods; k++)
		sw_codemap_remove(jit->map, jit->methods[k].start);
	if (jit->leaf.size)
		sw_codemap_remove(jit->map, jit->leaf.start);
	if (jit->thrower.size) {
		sw_codemap_remove(jit->map, jit->thrower.start);
		sw_codemap_remove(jit->map, jit->funclet.start);
	}
	free_blobs(jit);
	/* No walk may still be looking at the code once it is unmapped. */
	sw_codemap_synchronize(jit->map);
	munmap(jit->code, jit->code_cap);
	free(jit->insn_starts);
	free(jit->heap[0]);
	free(jit->gc_roots);
	free(jit);
}

sw_status toyjit_run(toyjit *jit, unsigned depth, int pinvoke_at)
{
	void (*thunk)(int32_t, void *);

	if (!jit || depth == 0 || depth > TOYJIT_MAX_DEPTH)
		return SW_E_INVAL;
	if (pinvoke_at >= 0 && (unsigned)pinvoke_at >= depth - 1)
		return SW_E_INVAL;
	/* Frame i runs with n = depth - 1 - i. */
	jit->pinvoke_n = pinvoke_at >= 0 ? (int32_t)(depth - 1 - (unsigned)pinvoke_at) : -1;
	jit->run_depth = depth;
	jit->run_pinvoke_at = pinvoke_at;
	jit->shadow_top = jit->shadow;
	/* Every run starts with an empty heap and a zero result. */
	jit->heap_alloc = (uintptr_t)jit->heap[jit->heap_cur];
	jit->result = 0;
	if (!jit->run_throw)
		jit->last_call = jit->stub_entry;
	thunk = (void (*)(int32_t, void *))(uintptr_t)jit->thunk_start;
	thunk((int32_t)(depth - 1), jit->entries[0]);
	return jit->shadow_top == jit->shadow ? SW_OK : SW_E_MISMATCH;
}

sw_status toyjit_run_throw(toyjit *jit, unsigned depth)
{
	sw_status st;

	if (!jit)
		return SW_E_INVAL;
	if (!jit->thrower.size)
		return SW_E_UNSUPPORTED;
	if (jit->exception_head) {
		/* The dispatch's view of this thread, made now: it asks the C library for the stack. */
		if ((void *)jit->exception_head != (void *)(jit->head + 1))
			return SW_E_INVAL;
		if ((st = sw_thread_init_self(&jit->dispatch_thread, jit->map, &jit->dispatch_memory,
		                              jit->head)) != SW_OK ||
		    (st = sw_memory_local_allow(&jit->dispatch_memory, (uintptr_t)jit->head,
		                                (uintptr_t)(jit->exception_head + 1))) != SW_OK)
			return st;
		jit->dispatch_thread.exception_head = (uintptr_t)jit->exception_head;
	}
	jit->dispatch_status = SW_OK;
	jit->run_throw = 1;
	jit->last_call = (void *)(uintptr_t)jit->thrower.start;
	st = toyjit_run(jit, depth, -1);
	jit->run_throw = 0;
	jit->last_call = jit->stub_entry;
	return st;
}

uintptr_t toyjit_expected_result(const toyjit *jit, unsigned depth, int throwing)
{
	uintptr_t sum = 0;

	for (unsigned i = 0; i < depth; i++) {
		const toyjit_method *m = toyjit_frame_method(jit, i);
		int32_t n = (int32_t)(depth - 1 - i);

		if (!m->allocates)
			continue;
		/* A, then B through A's reference field, then B through the register. */
		sum += toyjit_payload_a(m->index, n) + toyjit_payload_b(m->index, n);
		if (m->gc_reg >= 0)
			sum += toyjit_payload_b(m->index, n);
		/* The innermost passes A to the stub, which adds it; the thrower ignores it. */
		if (n == 0 && !throwing)
			sum += toyjit_payload_a(m->index, n);
	}
	/* The thrower's object: added by the stub, the funclet and the thrower. */
	if (throwing && jit->thrower.allocates)
		sum += 3 * (uintptr_t)TOYJIT_THROW_PAYLOAD;
	return sum;
}

size_t toyjit_shadow_depth(const toyjit *jit)
{
	return (size_t)(jit->shadow_top - jit->shadow);
}

uint64_t toyjit_shadow_reg(const toyjit_shadow_entry *e, unsigned reg)
{
	const struct toyjit_backend *be = host_backend();

	if (!be)
		return 0;
	if (reg == be->host.sp_reg)
		return e->sp;
	for (unsigned i = 0; i < be->nshadow_regs; i++)
		if (be->shadow_regs[i] == reg)
			return e->regs[i];
	return 0;
}

const toyjit_method *toyjit_frame_method(const toyjit *jit, unsigned i)
{
	return &jit->methods[i % jit->nmethods];
}

const toyjit_method *toyjit_method_of(const toyjit *jit, const void *handle)
{
	for (unsigned k = 0; k < jit->nmethods; k++)
		if (handle == &jit->methods[k])
			return &jit->methods[k];
	if (handle == &jit->native_target)
		return &jit->native_target;
	if (handle == &jit->leaf && jit->leaf.size)
		return &jit->leaf;
	if (handle == &jit->thrower && jit->thrower.size)
		return &jit->thrower;
	if (handle == &jit->funclet && jit->funclet.size)
		return &jit->funclet;
	return NULL;
}

static int in_method(const toyjit_method *m, uint64_t ip)
{
	return m->size && ip >= m->start && ip < m->start + m->size;
}

const toyjit_method *toyjit_method_at(const toyjit *jit, uint64_t ip)
{
	for (unsigned k = 0; k < jit->nmethods; k++)
		if (in_method(&jit->methods[k], ip))
			return &jit->methods[k];
	if (in_method(&jit->thrower, ip))
		return &jit->thrower;
	if (in_method(&jit->funclet, ip))
		return &jit->funclet;
	return in_method(&jit->leaf, ip) ? &jit->leaf : NULL;
}

int toyjit_is_native(const toyjit *jit, uint64_t ip)
{
	return (ip >= jit->thunk_start && ip < jit->thunk_start + jit->thunk_size) ||
	       (ip >= jit->stub_start && ip < jit->stub_start + jit->stub_size) ||
	       (ip >= jit->throw_stub_start && ip < jit->throw_stub_start + jit->throw_stub_size);
}

int toyjit_insn_start(const toyjit *jit, uint64_t ip)
{
	uint64_t base = (uintptr_t)jit->code;

	if (ip < base || ip - base >= jit->code_cap)
		return 0;
	ip -= base;
	return jit->insn_starts[ip / 8] >> (ip % 8) & 1;
}

const toyjit_call_site *toyjit_call_site_at(const toyjit_method *m, uint64_t ip)
{
	for (uint32_t i = 0; i < m->ncalls; i++)
		if (ip == m->start + m->calls[i].ret_offset)
			return &m->calls[i];
	return NULL;
}

sw_status toyjit_patch(toyjit *jit, uint64_t addr, const void *bytes, size_t len)
{
	uint64_t base = (uintptr_t)jit->code;
	uintptr_t page = page_size;
	uintptr_t lo, hi;

	if (addr < base || addr - base > jit->code_cap || len > jit->code_cap - (addr - base))
		return SW_E_INVAL;
	lo = (uintptr_t)addr & ~(page - 1);
	hi = ((uintptr_t)addr + len + page - 1) & ~(page - 1);
	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_WRITE | PROT_EXEC) != 0)
		return SW_E_NOMEM;
	/* Byte by byte: memcpy may not be async-signal-safe everywhere. */
	for (size_t i = 0; i < len; i++)
		((volatile uint8_t *)(uintptr_t)addr)[i] = ((const uint8_t *)bytes)[i];
	if (mprotect((void *)lo, hi - lo, PROT_READ | PROT_EXEC) != 0)
		return SW_E_NOMEM;
	__builtin___clear_cache((char *)(uintptr_t)addr, (char *)(uintptr_t)(addr + len));
	return SW_OK;
}
