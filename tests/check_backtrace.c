/*
 * check_backtrace.c - sw_backtrace against the walk it stands for.
 *
 * sw_backtrace must give, frame for frame, the IP and SP of every frame
 * with code that sw_walk_frames with ADDRESSES_ONLY reports, and fail where
 * and as that walk fails.  Its fast loop and its rule table are the risk,
 * so the reference here is always the callback walk, on thousands of
 * synthetic stacks of each architecture (loop test number _i is the arch
 * index), with and without a table kept across walks, and on hand-built
 * stacks whose methods are removed and added between walks.
 */
#include <check.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "stack_builder.h"

static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };

#define MAX_IPS 512
#define MAX_PRINTED 8

/* What a walk gave: the IPs and SPs of the frames with code, and how it ended. */
struct trace {
	uint64_t ip[MAX_IPS], sp[MAX_IPS];
	size_t n;
	sw_walk_error err;
};

static sw_walk_action record_code_frame(const sw_crawl_frame *cf, void *data)
{
	struct trace *t = data;
	sw_frame_state st = sw_crawl_frame_state(cf);
	const sw_regdisplay *rd = sw_crawl_frame_regdisplay(cf);

	if (st != SW_STATE_FRAMELESS && st != SW_STATE_NATIVE_FRAME)
		return SW_CONTINUE;
	if (t->n == MAX_IPS)
		return SW_ABORT;
	t->ip[t->n] = sw_context_ip(&rd->cur);
	t->sp[t->n] = sw_context_sp(&rd->cur);
	t->n++;
	return SW_CONTINUE;
}

/* The reference: the callback walk, ADDRESSES_ONLY; -1 when it could not start. */
static int reference(const sw_thread *t, const sw_context *start, uint64_t start_frame,
                     unsigned flags, struct trace *out)
{
	sw_walk_action a;

	memset(out, 0, sizeof *out);
	a = sw_walk_frames(t, start, start_frame, record_code_frame, out,
	                   flags | SW_WALK_ADDRESSES_ONLY, &out->err);
	if (a == SW_FAILED && out->err.status != SW_OK && out->n == 0 && out->err.depth == 0 &&
	    out->err.ip == 0 && out->err.sp == 0)
		return -1;      /* perhaps sw_iter_init refused it: sw_backtrace must too */
	return 0;
}

/*
 * sw_backtrace of the same walk, `max` at most; NULL on success, else what
 * differs (in msg).
 */
static const char *compare(const sw_thread *t, const sw_context *start, uint64_t start_frame,
                           unsigned flags, sw_walk_cache *cache, size_t max, char *msg,
                           size_t msg_size)
{
	struct trace want, got;
	int r, ref = reference(t, start, start_frame, flags, &want);

	memset(&got, 0, sizeof got);
	r = sw_backtrace(t, start, start_frame, flags, got.ip, got.sp, max, cache, &got.err);
	if (r < 0) {
		if (ref == 0 || r != (int)want.err.status) {
			snprintf(msg, msg_size, "sw_backtrace refused (%s), the walk %s (%s)",
			         sw_strerror(r), ref ? "also" : "did not", sw_strerror(want.err.status));
			return msg;
		}
		return NULL;
	}
	got.n = (size_t)r;
	if (want.n == MAX_IPS && max >= MAX_IPS) {
		/* Too deep to hold: compare what both hold. */
		got.err = want.err;
	} else if (want.n > max) {
		/* Truncated: the first max frames, and no error. */
		want.n = max;
		memset(&want.err, 0, sizeof want.err);
	}
	if (got.n != want.n) {
		snprintf(msg, msg_size, "%zu frames, the walk has %zu (max %zu; walk: %s at %u; bt: %s at %u)",
		         got.n, want.n, max, sw_strerror(want.err.status), want.err.depth,
		         sw_strerror(got.err.status), got.err.depth);
		return msg;
	}
	for (size_t i = 0; i < got.n; i++)
		if (got.ip[i] != want.ip[i] || got.sp[i] != want.sp[i]) {
			snprintf(msg, msg_size, "frame %zu: ip %#" PRIx64 " sp %#" PRIx64
			         ", the walk has ip %#" PRIx64 " sp %#" PRIx64, i, got.ip[i], got.sp[i],
			         want.ip[i], want.sp[i]);
			return msg;
		}
	if (memcmp(&got.err, &want.err, sizeof got.err) != 0) {
		snprintf(msg, msg_size, "ended with %s at depth %u (ip %#" PRIx64 " sp %#" PRIx64
		         " frame %#" PRIx64 "), the walk with %s at %u (ip %#" PRIx64 " sp %#" PRIx64
		         " frame %#" PRIx64 ")", sw_strerror(got.err.status), got.err.depth, got.err.ip,
		         got.err.sp, got.err.frame, sw_strerror(want.err.status), want.err.depth,
		         want.err.ip, want.err.sp, want.err.frame);
		return msg;
	}
	return NULL;
}

/* Flag sets: each changes what the walk reports, or how it treats native code. */
static const unsigned flag_sets[] = {
	0,
	SW_WALK_FUNCTIONSONLY,
	SW_WALK_SKIPFUNCLETS,
	SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT,
	SW_WALK_HANDLESKIPPEDFRAMES,
	SW_WALK_LIGHTUNWIND,
	SW_WALK_GC_FUNCLET_REFERENCE_REPORTING | SW_WALK_UNWIND_FLOATS,
};
#define NFLAG_SETS (sizeof flag_sets / sizeof flag_sets[0])

START_TEST(synthetic_stacks_agree)
{
	sw_arch arch = arches[_i];
	static sw_walk_cache shared;      /* kept across stacks (and maps) */
	sw_walk_cache own;
	unsigned failures = 0, compared = 0;
	char msg[512];

	sw_walk_cache_init(&shared);
	for (uint64_t seed = 0; seed < 300; seed++) {
		sw_synth_params p;
		sw_synth *s;

		sw_synth_params_default(&p);
		p.features = SW_SYNTH_ALL;
		p.max_frames = 4 + (unsigned)(seed % 40);
		ck_assert_int_eq(sw_synth_create(&s, arch, 0xb7000000ULL + seed, &p), SW_OK);
		sw_walk_cache_init(&own);
		for (unsigned k = 0; k < NFLAG_SETS; k++) {
			unsigned flags = flag_sets[k];
			const sw_thread *t = sw_synth_thread(s);
			const sw_context *c = sw_synth_context(s);
			/* From the seed and from the Frames; no table, a shared one, this stack's own (twice: warm). */
			struct { const sw_context *start; sw_walk_cache *cache; size_t max; } runs[] = {
				{ c, NULL, MAX_IPS }, { NULL, NULL, MAX_IPS }, { c, &shared, MAX_IPS },
				{ c, &own, MAX_IPS }, { c, &own, MAX_IPS }, { NULL, &own, MAX_IPS },
				{ c, &own, 1 }, { c, &own, 1 + seed % 7 }, { NULL, &shared, 2 },
			};

			for (unsigned r = 0; r < sizeof runs / sizeof runs[0]; r++) {
				const char *why = compare(t, runs[r].start, 0, flags, runs[r].cache, runs[r].max,
				                          msg, sizeof msg);

				compared++;
				if (why && failures++ < MAX_PRINTED)
					fprintf(stderr, "%s seed %#llx flags %#x run %u: %s\n", sw_arch_name(arch),
					        (unsigned long long)(0xb7000000ULL + seed), flags, r, why);
			}
		}
		sw_synth_destroy(s);
	}
	ck_assert_msg(failures == 0, "%s: %u of %u sw_backtrace runs differ from the walk",
	              sw_arch_name(arch), failures, compared);
}
END_TEST

/* A read outside the window: through the memory the synthetic stack came with. */
static sw_status read_through(void *ctx, uint64_t addr, void *buf, size_t len)
{
	return sw_memory_read(ctx, addr, buf, len);
}

/*
 * The window of direct reads covers part of the stack only: the top cut
 * off, or the part just above SP.  The host bytes outside it are garbage,
 * and the stack's true bytes there come through the read callback: a walk
 * that reads past its window without a check (sw_backtrace's loop over
 * the frames it guesses trusts the window for whole runs of frames) finds
 * the garbage and parts from the callback walk, whose every read is
 * checked.
 */
START_TEST(narrow_windows_agree)
{
	sw_arch arch = arches[_i];
	unsigned failures = 0, compared = 0;
	char msg[512];

	for (uint64_t seed = 0; seed < 40; seed++) {
		sw_synth_params p;
		sw_synth *s;
		const sw_thread *t;
		const sw_context *c;
		uint64_t lo, hi, sp;
		unsigned char *orig, *buf;
		size_t size;

		sw_synth_params_default(&p);
		p.max_frames = 8 + (unsigned)(seed % 40);
		ck_assert_int_eq(sw_synth_create(&s, arch, 0xc3000000ULL + seed, &p), SW_OK);
		t = sw_synth_thread(s);
		c = sw_synth_context(s);
		lo = t->stack_lo;
		hi = t->stack_hi;
		sp = sw_context_sp(c);
		size = (size_t)(hi - lo);
		ck_assert_uint_le(size, 1u << 24);
		/* A seed at the stack's very top has no stack to cut. */
		if (sp <= lo || sp >= hi) {
			sw_synth_destroy(s);
			continue;
		}
		orig = malloc(size);
		buf = malloc(size);
		ck_assert_ptr_nonnull(orig);
		ck_assert_ptr_nonnull(buf);
		ck_assert_int_eq(sw_memory_read(t->memory, lo, orig, size), SW_OK);
		{
			/* Where the window ends (top cut off) or starts (above SP). */
			const uint64_t cuts[] = { hi - 64, hi - 512, sp + (hi - sp) / 2, sp + 64, sp + 512 };

			for (unsigned k = 0; k < 2 * sizeof cuts / sizeof cuts[0]; k++) {
				uint64_t cut = cuts[k / 2], wlo = k & 1 ? cut : lo, whi = k & 1 ? hi : cut;
				sw_memory m = { 0 };
				sw_thread narrow = *t;
				sw_walk_cache cache;

				if (cut <= sp || cut >= hi)
					continue;
				memset(buf, 0xa5, size);
				memcpy(buf + (wlo - lo), orig + (wlo - lo), (size_t)(whi - wlo));
				m.read = read_through;
				m.ctx = (void *)(uintptr_t)t->memory;
				m.direct_lo = wlo;
				m.direct_hi = whi;
				m.direct_host = buf + (wlo - lo);
				narrow.memory = &m;
				sw_walk_cache_init(&cache);
				/* Cold, then warm (the loop takes guessed frames only), from the seed and from the Frames. */
				for (unsigned r = 0; r < 4; r++) {
					const char *why = compare(&narrow, r < 3 ? c : NULL, 0, 0, &cache, MAX_IPS, msg,
					                          sizeof msg);

					compared++;
					if (why && failures++ < MAX_PRINTED)
						fprintf(stderr, "%s seed %#llx window [%#llx, %#llx) run %u: %s\n",
						        sw_arch_name(arch), (unsigned long long)(0xc3000000ULL + seed),
						        (unsigned long long)wlo, (unsigned long long)whi, r, why);
				}
			}
		}
		free(orig);
		free(buf);
		sw_synth_destroy(s);
	}
	ck_assert_msg(failures == 0, "%s: %u of %u sw_backtrace runs with a narrow window differ from the walk",
	              sw_arch_name(arch), failures, compared);
}
END_TEST

/* ---- hand-built x64 stacks: B (the seed) called by A, called from native code ---- */

#define S0 (SB_STACK_HI - 0x800)
#define A_START 0x500000001000ull
#define B_START 0x500000002000ull

static int method_a, method_b;

static void lay_out(sb_world *w, sb_method *a, sb_method *b)
{
	*a = sb_add_method_a(w, A_START, &method_a);
	sb_put(w, S0, SB_NATIVE_IP);
	sb_put(w, S0 - 8, 0x1111);              /* the caller's rbp */
	sb_put(w, S0 - 16, 0x2222);             /* its rbx */
	*b = sb_add_method_b(w, B_START, &method_b);
	sb_put(w, S0 - 96, A_START + a->body);  /* A called B here */
	sb_put(w, S0 - 104, 0x3333);
	sb_put(w, S0 - 112, 0x4444);
	sw_context_set(&w->seed, SW_X64_RIP, B_START + b->body);
	sw_context_set(&w->seed, SW_X64_RSP, S0 - 128);
	sw_context_set(&w->seed, SW_X64_RBP, S0 - 8);
}

static size_t bt(sb_world *w, sw_walk_cache *c, uint64_t *ips)
{
	int n = sw_backtrace(&w->thread, &w->seed, 0, 0, ips, NULL, 16, c, NULL);

	ck_assert_int_ge(n, 0);
	return (size_t)n;
}

START_TEST(table_follows_the_code_map)
{
	sb_world w;
	sb_method a, b;
	sw_walk_cache c;
	uint64_t ips[16];
	char msg[512];
	const char *why;

	sb_init(&w);
	lay_out(&w, &a, &b);
	sw_walk_cache_init(&c);
	ck_assert_uint_eq(bt(&w, &c, ips), 2);
	ck_assert_uint_eq(bt(&w, &c, ips), 2);  /* warm */
	ck_assert_uint_eq(ips[0], B_START + b.body);
	ck_assert_uint_eq(ips[1], A_START + a.body);

	/* A is gone: its return address leads nowhere now, whatever the table held. */
	ck_assert_int_eq(sw_codemap_remove(w.map, A_START), SW_OK);
	ck_assert_uint_eq(bt(&w, &c, ips), 1);
	why = compare(&w.thread, &w.seed, 0, 0, &c, 16, msg, sizeof msg);
	ck_assert_msg(!why, "after removal: %s", why ? why : "");

	/* And back: the table learnt "no code there", which must not outlive the addition. */
	a = sb_add_method_a(&w, A_START, &method_a);
	ck_assert_uint_eq(bt(&w, &c, ips), 2);
	ck_assert_uint_eq(ips[1], A_START + a.body);

	/* The seed's method replaced by another shape at the same address (its rule changes). */
	ck_assert_int_eq(sw_codemap_remove(w.map, B_START), SW_OK);
	(void)sb_add_method_a(&w, B_START, &method_b);
	why = compare(&w.thread, &w.seed, 0, 0, &c, 16, msg, sizeof msg);
	ck_assert_msg(!why, "after replacing the seed's method: %s", why ? why : "");
	sb_fini(&w);
}
END_TEST

/*
 * The table learns that A's caller, SB_NATIVE_IP, has no code, and A's
 * rule leads there.  Code added there (nothing removed, so the map's
 * version stays) must be found on the next walk, however the loop
 * reaches that address: through A's rule, or as the walk's first rule.
 */
START_TEST(table_forgets_no_code_once_code_is_added)
{
	sb_world w;
	sb_method a, b, c;
	sw_walk_cache cache;
	uint64_t ips[16];
	char msg[512];
	const char *why;
	static int method_c;

	sb_init(&w);
	lay_out(&w, &a, &b);
	sw_walk_cache_init(&cache);
	ck_assert_uint_eq(bt(&w, &cache, ips), 2);
	ck_assert_uint_eq(bt(&w, &cache, ips), 2);      /* warm: A's rule leads to "no code" */

	c = sb_add_method_b(&w, SB_NATIVE_IP - b.body, &method_c);
	ck_assert_uint_eq(c.body, b.body);
	ck_assert_uint_ge(bt(&w, &cache, ips), 3);
	ck_assert_uint_eq(ips[2], SB_NATIVE_IP);
	why = compare(&w.thread, &w.seed, 0, 0, &cache, 16, msg, sizeof msg);
	ck_assert_msg(!why, "after the addition: %s", why ? why : "");
	sb_fini(&w);
}
END_TEST

START_TEST(table_is_checked_and_may_move)
{
	sb_world w;
	sb_method a, b;
	sw_walk_cache *c = malloc(sizeof *c), *moved = malloc(sizeof *moved);
	uint64_t ips[16], sps[16];
	sw_walk_error err;

	ck_assert_ptr_nonnull(c);
	ck_assert_ptr_nonnull(moved);
	sb_init(&w);
	lay_out(&w, &a, &b);
	/* Never initialized: refused, not trusted. */
	memset(c, 0xa5, sizeof *c);
	ck_assert_int_eq(sw_backtrace(&w.thread, &w.seed, 0, 0, ips, NULL, 16, c, &err), SW_E_INVAL);
	ck_assert_int_eq(sw_backtrace(&w.thread, &w.seed, 0, 0, NULL, NULL, 16, NULL, &err), SW_E_INVAL);
	ck_assert_int_eq(sw_backtrace(&w.thread, &w.seed, 0, 0, NULL, NULL, 0, NULL, &err), 0);
	ck_assert_int_eq(sw_backtrace(NULL, &w.seed, 0, 0, ips, NULL, 16, NULL, &err), SW_E_INVAL);
	ck_assert_int_eq(sw_backtrace(&w.thread, &w.seed, 0, ~0u, ips, NULL, 16, NULL, &err), SW_E_INVAL);

	sw_walk_cache_init(c);
	ck_assert_int_eq(sw_backtrace(&w.thread, &w.seed, 0, 0, ips, sps, 16, c, &err), 2);
	ck_assert_int_eq(err.status, SW_OK);
	ck_assert_uint_eq(sps[0], S0 - 128);
	ck_assert_uint_eq(sps[1], S0 - 88);
	/* A copy holds links into the original: it must empty itself, not follow them. */
	memcpy(moved, c, sizeof *c);
	memset(c, 0, sizeof *c);
	free(c);
	ck_assert_int_eq(sw_backtrace(&w.thread, &w.seed, 0, 0, ips, NULL, 16, moved, &err), 2);
	ck_assert_int_eq(sw_backtrace(&w.thread, &w.seed, 0, 0, ips, NULL, 1, moved, &err), 1);
	ck_assert_uint_eq(ips[0], B_START + b.body);

	/* A's frame pointer below its SP: the walk's error, and the frame before it. */
	sw_context_set(&w.seed, SW_X64_RBP, S0 - 200);
	ck_assert_int_eq(sw_backtrace(&w.thread, &w.seed, 0, 0, ips, NULL, 16, moved, &err), 1);
	ck_assert_int_eq(err.status, SW_E_BADSP);
	{
		char msg[512];
		const char *why = compare(&w.thread, &w.seed, 0, 0, moved, 16, msg, sizeof msg);

		ck_assert_msg(!why, "%s", why ? why : "");
	}
	free(moved);
	sb_fini(&w);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("backtrace");
	TCase *tc = tcase_create("backtrace");

	tcase_set_timeout(tc, 600);
	tcase_add_loop_test(tc, synthetic_stacks_agree, 0, (int)(sizeof arches / sizeof arches[0]));
	tcase_add_loop_test(tc, narrow_windows_agree, 0, (int)(sizeof arches / sizeof arches[0]));
	tcase_add_test(tc, table_follows_the_code_map);
	tcase_add_test(tc, table_forgets_no_code_once_code_is_added);
	tcase_add_test(tc, table_is_checked_and_may_move);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *r = srunner_create(suite());
	int failed;

	srunner_run_all(r, CK_NORMAL);
	failed = srunner_ntests_failed(r);
	srunner_free(r);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
