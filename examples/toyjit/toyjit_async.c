/*
 * toyjit_async.c - every instruction of every method, stopped by a
 * breakpoint and walked from the signal context (see toyjit_async.h).
 *
 * Host-only: the ucontext layout and how far the trap moves the PC are
 * the host's.
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#include <unistd.h>
#include "toyjit_async.h"
#include "toyjit_check.h"

#define MAX_FLAGS 4

/* The one breakpoint in flight and what the handler saw there. */
static struct {
	toyjit *jit;
	const sw_thread *thread;
	unsigned flags[MAX_FLAGS];
	unsigned nflags;
	uint64_t addr;                  /* where the breakpoint is */
	uint8_t orig[4];                /* the bytes it replaced */
	size_t len;
	volatile sig_atomic_t hit;
	sw_status ctx_status;
	toyjit_walk *walks[MAX_FLAGS];
	toyjit_shadow_entry *shadow;    /* the shadow stack when it stopped */
	size_t depth;
	uint64_t head, sp;
	int head_in_call;
	int gc;                         /* collect at each stop */
	int gc_ran;
	sw_status gc_status;
	toyjit_async_stats *stats;
	/* sw_backtrace at each stop, against each walk; its table is kept from stop to stop. */
	sw_walk_cache bt_cache;
	sw_status bt_status[MAX_FLAGS];
	char bt_msg[MAX_FLAGS][256];
} g;

/* The instruction pointer the trap reports, and how to set it. */
static uint64_t trap_address(const ucontext_t *uc)
{
#if defined(__x86_64__)
	return (uint64_t)uc->uc_mcontext.gregs[REG_RIP] - 1;     /* int3 has executed */
#elif defined(__i386__)
	return (uint32_t)uc->uc_mcontext.gregs[REG_EIP] - 1;
#elif defined(__aarch64__)
	return uc->uc_mcontext.pc;                               /* brk has not */
#else
	(void)uc;
	return 0;
#endif
}

static void set_pc(ucontext_t *uc, uint64_t pc)
{
#if defined(__x86_64__)
	uc->uc_mcontext.gregs[REG_RIP] = (greg_t)pc;
#elif defined(__i386__)
	uc->uc_mcontext.gregs[REG_EIP] = (greg_t)pc;
#elif defined(__aarch64__)
	uc->uc_mcontext.pc = pc;
#else
	(void)uc;
	(void)pc;
#endif
}

/* Write register `reg` (DWARF number) of the context the thread resumes with; -1 if it cannot. */
static int set_reg(ucontext_t *uc, unsigned reg, uint64_t value)
{
#if defined(__x86_64__)
	static const int greg[17] = {
		REG_RAX, REG_RDX, REG_RCX, REG_RBX, REG_RSI, REG_RDI, REG_RBP, REG_RSP,
		REG_R8, REG_R9, REG_R10, REG_R11, REG_R12, REG_R13, REG_R14, REG_R15, REG_RIP
	};

	if (reg >= 17)
		return -1;
	uc->uc_mcontext.gregs[greg[reg]] = (greg_t)value;
	return 0;
#elif defined(__i386__)
	static const int greg[8] = {
		REG_EAX, REG_ECX, REG_EDX, REG_EBX, REG_UESP, REG_EBP, REG_ESI, REG_EDI
	};

	if (reg >= 8)
		return -1;
	uc->uc_mcontext.gregs[greg[reg]] = (greg_t)value;
	return 0;
#elif defined(__aarch64__)
	if (reg > 30)
		return -1;
	uc->uc_mcontext.regs[reg] = value;
	return 0;
#else
	(void)uc;
	(void)reg;
	(void)value;
	return -1;
#endif
}

/*
 * A collection from the stopped context, unless the method stopped inside
 * an allocation sequence (no safe point) or the run has a P/Invoke: the
 * toy JIT, unlike the CLR's, does not save every callee-saved register in
 * a method with an inlined P/Invoke, so references in registers of the
 * frames under the InlinedCallFrame cannot be found.
 */
static void collect_at_stop(ucontext_t *uc, const sw_context *ctx)
{
	const toyjit_method *m = toyjit_method_at(g.jit, g.addr);
	uint32_t off = m ? (uint32_t)(g.addr - m->start) : 0;
	sw_context moved = *ctx;

	if (!m || g.jit->run_pinvoke_at >= 0 ||
	    (off >= m->gc_unsafe_start && off < m->gc_unsafe_end)) {
		g.stats->gc_unsafe++;
		return;
	}
	g.gc_ran = 1;
	g.gc_status = toyjit_gc_collect(g.jit, g.thread, &moved, &g.stats->gc);
	for (unsigned r = 0; r < SW_MAX_REGS; r++)
		if ((moved.valid >> r & 1) && moved.regs[r] != ctx->regs[r] && set_reg(uc, r, moved.regs[r]) != 0)
			g.gc_status = SW_E_UNSUPPORTED;
}

static void die(const char *what)
{
	ssize_t r = write(STDERR_FILENO, what, strlen(what));

	(void)r;
	_exit(99);
}

/*
 * SIGTRAP: only async-signal-safe work here (the walk is).  Put the
 * instruction back first, so that nothing can trap twice.
 */
static void on_trap(int sig, siginfo_t *si, void *ucv)
{
	ucontext_t *uc = ucv;
	const toyjit_host *h = toyjit_host_info();
	sw_context ctx;

	(void)sig;
	(void)si;
	if (g.hit || trap_address(uc) != g.addr)
		die("toyjit_async: a trap at no planted breakpoint\n");
	if (toyjit_patch(g.jit, g.addr, g.orig, g.len) != SW_OK)
		die("toyjit_async: cannot restore the instruction\n");
	set_pc(uc, g.addr);

	g.ctx_status = sw_context_from_ucontext(&ctx, uc);
	if (g.ctx_status == SW_OK)
		g.ctx_status = sw_context_set(&ctx, h->ip_reg, g.addr);
	g.sp = sw_context_sp(&ctx);
	g.depth = toyjit_shadow_depth(g.jit);
	if (g.depth > TOYJIT_MAX_DEPTH)
		g.depth = TOYJIT_MAX_DEPTH;
	memcpy(g.shadow, g.jit->shadow, g.depth * sizeof(*g.shadow));
	g.head = (uint64_t)(uintptr_t)*g.jit->head;
	g.head_in_call = toyjit_frame_in_call(g.head);
	if (g.ctx_status == SW_OK)
		for (unsigned i = 0; i < g.nflags; i++) {
			toyjit_walk_record_from(g.thread, &ctx, g.flags[i], g.walks[i]);
			g.bt_status[i] = toyjit_backtrace_check(g.thread, &ctx, g.walks[i], &g.bt_cache,
			                                        g.bt_msg[i], sizeof(g.bt_msg[i]));
		}
	if (g.gc && g.ctx_status == SW_OK)
		collect_at_stop(uc, &ctx);
	g.hit = 1;
}

/*
 * A scenario that executes all of method k: frame k P/Invokes, frame k + n
 * calls the next method and frame k + 2n calls the stub.  The leaf runs in
 * every frame; the fallback covers anything else.
 */
static int scenario(const toyjit *jit, const toyjit_method *m, unsigned which,
                    unsigned *depth, int *pinvoke_at)
{
	unsigned n = jit->nmethods, k = m->leaf ? 0 : m->index;

	/* With a collector: runs without a P/Invoke first (see collect_at_stop). */
	if (g.gc)
		which = which < 2 ? which ^ 1 : which;
	switch (which) {
	case 0:
		*depth = k + 1 + 2 * n;
		*pinvoke_at = (int)k;
		return 1;
	case 1:
		*depth = 2 * n + 1;
		*pinvoke_at = -1;
		return 1;
	default:
		return 0;
	}
}

/* Stop at one offset; 1 if the breakpoint was hit, 0 if not, or an error. */
static int stop_at(const toyjit_method *m, uint32_t off)
{
	const toyjit_host *h = toyjit_host_info();
	unsigned depth;
	int pinvoke_at;
	sw_status st;

	g.addr = m->start + off;
	g.len = h->trap_len;
	memcpy(g.orig, (const void *)(uintptr_t)g.addr, g.len);
	g.hit = 0;
	if ((st = toyjit_patch(g.jit, g.addr, h->trap, h->trap_len)) != SW_OK)
		return st;
	g.gc_ran = 0;
	g.gc_status = SW_OK;
	for (unsigned which = 0; !g.hit && scenario(g.jit, m, which, &depth, &pinvoke_at); which++) {
		if ((st = toyjit_run(g.jit, depth, pinvoke_at)) != SW_OK)
			return st;
		/* Whatever the collector did, the program computes what it must. */
		g.stats->results++;
		if (g.jit->result != toyjit_expected_result(g.jit, depth, 0)) {
			g.stats->results_bad++;
			if (g.hit && g.gc_status == SW_OK)
				g.gc_status = SW_E_MISMATCH;
		}
	}
	if (!g.hit && (st = toyjit_patch(g.jit, g.addr, g.orig, g.len)) != SW_OK)
		return st;
	return g.hit;
}

static void report(FILE *log, unsigned *reported, unsigned max_report, const toyjit_method *m,
                   uint32_t off, unsigned flags, const char *msg)
{
	if (!log || (*reported)++ >= max_report)
		return;
	fprintf(log, "  %s %s+%#x (flags %#x): %s\n", sw_arch_name(toyjit_host_info()->arch),
	        m->name, off, flags, msg);
}

/* Check the walks the handler recorded at m + off. */
static void check_stop(const toyjit_method *m, uint32_t off, toyjit_async_stats *stats,
                       FILE *log, unsigned *reported, unsigned max_report)
{
	toyjit_point pt;
	char msg[512];

	memset(&pt, 0, sizeof(pt));
	pt.shadow = g.shadow;
	pt.depth = g.depth;
	pt.head = g.head;
	pt.head_in_call = g.head_in_call;
	pt.pc = g.addr;
	pt.sp = g.sp;
	if (g.gc_ran) {
		stats->gc_stops++;
		if (g.gc_status != SW_OK) {
			stats->failed++;
			snprintf(msg, sizeof(msg), "the collection at this stop: %s%s%s (%#llx)",
			         sw_strerror(g.gc_status), g.stats->gc.what ? ": " : "",
			         g.stats->gc.what ? g.stats->gc.what : "", g.stats->gc.value);
			report(log, reported, max_report, m, off, SW_WALK_GC_FUNCLET_REFERENCE_REPORTING, msg);
		}
	} else if (g.gc_status != SW_OK) {
		stats->failed++;
		report(log, reported, max_report, m, off, 0, "wrong result after a run without a collection");
	}
	for (unsigned i = 0; i < g.nflags; i++) {
		stats->walks++;
		if (g.ctx_status != SW_OK) {
			snprintf(msg, sizeof(msg), "no context: %s", sw_strerror(g.ctx_status));
		} else if (toyjit_walk_check_at(g.jit, &pt, g.walks[i], msg, sizeof(msg), NULL) == SW_OK) {
			if (g.bt_status[i] == SW_OK) {
				stats->passed++;
				continue;
			}
			snprintf(msg, sizeof(msg), "%s", g.bt_msg[i]);
		}
		stats->failed++;
		report(log, reported, max_report, m, off, g.flags[i], msg);
	}
}

static sw_status sweep_method(const toyjit_method *m, toyjit_async_stats *stats,
                              FILE *log, unsigned *reported, unsigned max_report)
{
	stats->methods++;
	for (uint32_t off = 0; off < m->size; off++) {
		int r;

		if (!toyjit_insn_start(g.jit, m->start + off))
			continue;
		stats->offsets++;
		r = stop_at(m, off);
		if (r < 0)
			return (sw_status)r;
		if (r == 0) {
			stats->unreached++;
			stats->failed++;
			report(log, reported, max_report, m, off, 0, "no scenario reached this instruction");
			continue;
		}
		check_stop(m, off, stats, log, reported, max_report);
	}
	return SW_OK;
}

static sw_status sweep_all(toyjit *jit, const sw_thread *t, const unsigned *flags,
                           unsigned nflags, FILE *log, unsigned max_report,
                           toyjit_async_stats *stats, int gc)
{
	struct sigaction sa, old;
	unsigned reported = 0;
	sw_status st = SW_OK;

	memset(stats, 0, sizeof(*stats));
	if (!toyjit_host_info())
		return SW_E_UNSUPPORTED;
	if (!jit || !t || !flags || nflags == 0 || nflags > MAX_FLAGS)
		return SW_E_INVAL;
	memset(&g, 0, sizeof(g));
	g.jit = jit;
	sw_walk_cache_init(&g.bt_cache);
	g.thread = t;
	g.nflags = nflags;
	g.gc = gc;
	g.stats = stats;
	memcpy(g.flags, flags, nflags * sizeof(*flags));
	g.shadow = calloc(TOYJIT_MAX_DEPTH, sizeof(*g.shadow));
	for (unsigned i = 0; i < nflags; i++)
		g.walks[i] = malloc(sizeof(*g.walks[i]));
	for (unsigned i = 0; i < nflags; i++)
		if (!g.walks[i])
			st = SW_E_NOMEM;
	if (!g.shadow)
		st = SW_E_NOMEM;

	memset(&sa, 0, sizeof(sa));
	sa.sa_sigaction = on_trap;
	sa.sa_flags = SA_SIGINFO;
	sigemptyset(&sa.sa_mask);
	if (st == SW_OK && sigaction(SIGTRAP, &sa, &old) != 0)
		st = SW_E_UNSUPPORTED;
	if (st == SW_OK) {
		if (jit->leaf.size)
			st = sweep_method(&jit->leaf, stats, log, &reported, max_report);
		for (unsigned k = 0; st == SW_OK && k < jit->nmethods; k++)
			st = sweep_method(&jit->methods[k], stats, log, &reported, max_report);
		sigaction(SIGTRAP, &old, NULL);
	}
	if (log && reported > max_report)
		fprintf(log, "  ... and %u more\n", reported - max_report);
	for (unsigned i = 0; i < nflags; i++)
		free(g.walks[i]);
	free(g.shadow);
	if (st == SW_OK && stats->failed)
		st = SW_E_MISMATCH;
	return st;
}

sw_status toyjit_async_check_all(toyjit *jit, const sw_thread *t, const unsigned *flags,
                                 unsigned nflags, FILE *log, unsigned max_report,
                                 toyjit_async_stats *stats)
{
	return sweep_all(jit, t, flags, nflags, log, max_report, stats, 0);
}

sw_status toyjit_async_gc_all(toyjit *jit, const sw_thread *t, const unsigned *flags,
                              unsigned nflags, FILE *log, unsigned max_report,
                              toyjit_async_stats *stats)
{
	return sweep_all(jit, t, flags, nflags, log, max_report, stats, 1);
}
