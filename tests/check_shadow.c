/*
 * check_shadow.c - shadow stacks: enter and leave, overflow counted, a
 * reader on another thread always sees a consistent prefix, and the shadow
 * stack as the oracle of sw_snapshot over synthetic stacks of every arch.
 */
#define _GNU_SOURCE
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stackwalk.h>
#include <stackwalk/shadow.h>

#define M(n) ((void *)(uintptr_t)(n))

START_TEST(enter_leave_overflow)
{
	sw_shadow_entry storage[4], out[8];
	sw_shadow_stack s;
	size_t n;
	uint32_t depth;

	ck_assert_int_eq(sw_shadow_init(&s, NULL, 4), SW_E_INVAL);
	ck_assert_int_eq(sw_shadow_init(&s, storage, 4), SW_OK);
	sw_shadow_leave(&s);    /* empty: nothing happens */
	ck_assert_int_eq(sw_shadow_snapshot(&s, out, 8, &n, &depth), SW_OK);
	ck_assert_uint_eq(n, 0);
	ck_assert_uint_eq(depth, 0);
	for (unsigned i = 1; i <= 6; i++)
		sw_shadow_enter(&s, M(i), 0x1000 - i * 16);
	ck_assert_uint_eq(sw_shadow_overflows(&s), 2);
	ck_assert_int_eq(sw_shadow_snapshot(&s, out, 8, &n, &depth), SW_OK);
	ck_assert_uint_eq(n, 4);
	ck_assert_uint_eq(depth, 6);
	for (unsigned i = 0; i < 4; i++) {
		ck_assert_ptr_eq(out[i].method, M(4 - i));     /* newest stored first */
		ck_assert_uint_eq(out[i].sp, 0x1000 - (4 - i) * 16);
	}
	ck_assert_int_eq(sw_shadow_snapshot(&s, out, 2, &n, NULL), SW_OK);
	ck_assert_uint_eq(n, 2);
	ck_assert_ptr_eq(out[0].method, M(4));
	for (unsigned i = 0; i < 3; i++)
		sw_shadow_leave(&s);    /* two unstored, then method 4 */
	ck_assert_int_eq(sw_shadow_snapshot(&s, out, 8, &n, &depth), SW_OK);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(depth, 3);
	ck_assert_ptr_eq(out[0].method, M(3));
	sw_shadow_enter(&s, M(9), 7);
	ck_assert_int_eq(sw_shadow_snapshot(&s, out, 8, &n, &depth), SW_OK);
	ck_assert_ptr_eq(out[0].method, M(9));
	ck_assert_int_eq(sw_shadow_snapshot(NULL, out, 8, &n, &depth), SW_E_INVAL);
	ck_assert_int_eq(sw_shadow_snapshot(&s, out, 8, NULL, &depth), SW_E_INVAL);
}
END_TEST

/*
 * The owner enters and leaves at random; every entry at index i has method
 * i + 1 and a tag that grows with each enter, so a consistent prefix has
 * (newest first) tags strictly decreasing and methods counting down.
 */
enum { CAP = 64 };
typedef struct race {
	sw_shadow_stack s;
	sw_shadow_entry storage[CAP];
	int stop;
} race;

static void *owner(void *arg)
{
	race *r = arg;
	uint32_t rng = 12345, depth = 0;
	uintptr_t tag = 1;

	for (unsigned i = 0; i < 5000000 && !__atomic_load_n(&r->stop, __ATOMIC_ACQUIRE); i++) {
		rng = rng * 1103515245u + 12345u;
		if (((rng >> 16) & 1) && depth < CAP + 8) {
			sw_shadow_enter(&r->s, M(depth + 1), tag++);
			depth++;
		} else if (depth) {
			sw_shadow_leave(&r->s);
			depth--;
		}
	}
	return NULL;
}

START_TEST(reader_sees_consistent_prefix)
{
	static race r;
	sw_shadow_entry out[CAP];
	pthread_t t;
	unsigned ok = 0;

	ck_assert_int_eq(sw_shadow_init(&r.s, r.storage, CAP), SW_OK);
	ck_assert_int_eq(pthread_create(&t, NULL, owner, &r), 0);
	for (unsigned k = 0; k < 20000; k++) {
		size_t n;
		uint32_t depth;

		if (sw_shadow_snapshot(&r.s, out, CAP, &n, &depth) != SW_OK)
			continue;
		ok++;
		ck_assert_uint_le(n, depth);
		for (size_t i = 0; i < n; i++) {
			ck_assert_ptr_eq(out[i].method, M(n - i));
			if (i + 1 < n)
				ck_assert_uint_gt(out[i].sp, out[i + 1].sp);
		}
	}
	__atomic_store_n(&r.stop, 1, __ATOMIC_RELEASE);
	pthread_join(t, NULL);
	ck_assert_uint_gt(ok, 0);
}
END_TEST

/* The oracle: what the runtime recorded on entry is what the snapshot finds. */
typedef struct seen {
	void *method[256];
	unsigned n;
} seen;

static sw_walk_action collect(const sw_snapshot_frame *f, void *data)
{
	seen *s = data;

	if (f->state == SW_STATE_FRAMELESS && s->n < 256)
		s->method[s->n++] = f->method;
	return SW_CONTINUE;
}

START_TEST(snapshot_matches_shadow_stack)
{
	static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };
	const unsigned flags = SW_WALK_FUNCTIONSONLY | SW_WALK_HANDLESKIPPEDFRAMES |
	                       SW_WALK_NOTIFY_ON_U2M_TRANSITIONS | SW_WALK_PROFILER_DO_STACK_SNAPSHOT;
	static sw_synth_frame expect[512];
	sw_shadow_entry storage[256], out[256];
	unsigned compared = 0;
	sw_synth_params p;

	sw_synth_params_default(&p);
	p.features &= ~(unsigned)SW_SYNTH_NATIVE_SEED;
	for (unsigned a = 0; a < 3; a++) {
		for (uint64_t seed = 1; seed <= 60; seed++) {
			sw_shadow_stack shadow;
			sw_synth *syn;
			seen got = { .n = 0 };
			size_t n, count;
			uint32_t depth;
			sw_status st;

			ck_assert_int_eq(sw_synth_create(&syn, arches[a], seed, &p), SW_OK);
			/* The runtime's view: it entered each managed method, root first. */
			n = sw_synth_expected(syn, flags, expect, 512);
			ck_assert_uint_le(n, 512);
			sw_shadow_init(&shadow, storage, 256);
			for (size_t i = n; i-- > 0;)
				if (expect[i].state == SW_STATE_FRAMELESS)
					sw_shadow_enter(&shadow, expect[i].method, (uintptr_t)expect[i].sp);
			st = sw_snapshot(sw_synth_thread(syn), sw_synth_context(syn), 0, collect, &got);
			ck_assert_msg(st == SW_OK, "arch %u seed %llu: %s", a,
			              (unsigned long long)seed, sw_strerror(st));
			ck_assert_int_eq(sw_shadow_snapshot(&shadow, out, 256, &count, &depth), SW_OK);
			ck_assert_uint_eq(count, depth);
			ck_assert_msg(got.n == count, "arch %u seed %llu: snapshot %u frames, shadow %zu",
			              a, (unsigned long long)seed, got.n, count);
			for (size_t i = 0; i < count; i++)
				ck_assert_ptr_eq(got.method[i], out[i].method);
			compared += got.n;
			sw_synth_destroy(syn);
		}
	}
	ck_assert_uint_gt(compared, 0);
}
END_TEST

static Suite *shadow_suite(void)
{
	Suite *s = suite_create("shadow");
	TCase *tc = tcase_create("shadow stacks");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, enter_leave_overflow);
	tcase_add_test(tc, reader_sees_consistent_prefix);
	tcase_add_test(tc, snapshot_matches_shadow_stack);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(shadow_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
