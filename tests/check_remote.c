/*
 * check_remote.c - the published code map (remote.h): a publisher in this
 * process read back through process_vm_readv as a debugger would; a
 * snapshot caught mid-update; a target whose generation never holds
 * still; readers racing a writer; and mutated target memory (no crash, no
 * hang, a bounded number of reads).
 *
 * No test asserts on time; the concurrent one is bounded by iterations.
 */
#include <check.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "fuzz/remote_target.h"

static uint8_t blob[256];
static size_t blob_len;

static void build_blob(void)
{
	sw_swu_builder *b;

	ck_assert_int_eq(sw_swu_builder_create(&b, sw_arch_host()), SW_OK);
	ck_assert_int_eq(sw_swu_end_prolog(b, 0), SW_OK);
	ck_assert_int_eq(sw_swu_finish(b, 64, blob, sizeof blob, &blob_len), SW_OK);
	sw_swu_builder_destroy(b);
}

static sw_code_info method(uint64_t start, uint64_t size)
{
	return (sw_code_info){ (void *)(uintptr_t)(start ^ 0x5a5a), start, size, blob,
	                       (uint32_t)blob_len, 0, NULL };
}

static sw_status add(sw_codemap *map, uint64_t start, uint64_t size)
{
	sw_code_info info = method(start, size);

	return sw_codemap_add(map, &info);
}

/* Names that say where the method is, so a reader can check one against its start. */
static void name_of(void *data, const sw_code_info *info, char *buf, size_t cap)
{
	(void)data;
	snprintf(buf, cap, "m_%" PRIx64, info->start);
}

/*
 * This process, read only through the fault-safe system call, like another
 * process.  (An sw_memory is its own context: it is set up in place.)
 */
static void self_memory(sw_memory *mem)
{
	ck_assert_int_eq(sw_memory_init_local(mem, 0, 0, SW_MEMORY_PROBE), SW_OK);
}

static uint64_t descriptor(void)
{
	return (uint64_t)(uintptr_t)&sw_published_codemap;
}

START_TEST(test_publish_and_read)
{
	sw_codemap *map, *copy;
	sw_publisher *p, *other;
	sw_remote *r;
	sw_remote_method m;
	sw_remote_thread t;
	sw_memory mem;
	sw_code_info found, funclet;
	void *head = NULL;

	build_blob();
	self_memory(&mem);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_publisher_create(&p, name_of, NULL), SW_OK);
	ck_assert_int_eq(sw_publisher_thread(p, 42, (uint64_t)(uintptr_t)&head, 0, 0), SW_OK);
	ck_assert_int_eq(sw_publisher_attach(p, map), SW_OK);
	ck_assert_int_eq(sw_publisher_attach(p, map), SW_E_EXISTS);
	ck_assert_int_eq(sw_publisher_create(&other, NULL, NULL), SW_OK);
	ck_assert_int_eq(sw_publisher_attach(other, map), SW_E_EXISTS);
	sw_publisher_destroy(other);

	ck_assert_int_eq(add(map, 0x20000, 0x100), SW_OK);
	ck_assert_int_eq(add(map, 0x10000, 0x80), SW_OK);
	funclet = method(0x30000, 0x40);
	funclet.flags = SW_CODE_FUNCLET;
	funclet.parent = (void *)(uintptr_t)0x1234;
	ck_assert_int_eq(sw_codemap_add(map, &funclet), SW_OK);
	ck_assert_int_eq(sw_publisher_status(p), SW_OK);

	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host(), descriptor(), &r), SW_OK);
	ck_assert_uint_eq(sw_remote_flags(r), 0);
	ck_assert_uint_eq(sw_remote_method_count(r), 3);
	ck_assert_int_eq(sw_remote_method_at(r, 0, &m), SW_OK);
	ck_assert_uint_eq(m.start, 0x10000);
	ck_assert_str_eq(m.name, "m_10000");
	ck_assert_int_eq(sw_remote_method_at(r, 3, &m), SW_E_INVAL);
	ck_assert_int_eq(sw_remote_find(r, 0x200ff, &m), SW_OK);
	ck_assert_uint_eq(m.start, 0x20000);
	ck_assert_uint_eq(m.handle, 0x20000 ^ 0x5a5a);
	ck_assert_uint_eq(m.unwind_size, blob_len);
	ck_assert_mem_eq(m.unwind, blob, blob_len);
	ck_assert_int_eq(sw_remote_find(r, 0x20100, &m), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_remote_find(r, 0xffff, &m), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_remote_find(r, 0x30010, &m), SW_OK);
	ck_assert_uint_eq(m.flags, SW_CODE_FUNCLET);
	ck_assert_uint_eq(m.parent, 0x1234);
	ck_assert_int_eq(sw_remote_thread_find(r, 42, &t), SW_OK);
	ck_assert_uint_eq(t.frame_head, (uint64_t)(uintptr_t)&head);
	ck_assert_int_eq(sw_remote_thread_find(r, 43, &t), SW_E_NOTFOUND);

	/* Into a debugger's own map: the walker's lookups find them. */
	ck_assert_int_eq(sw_codemap_create(&copy), SW_OK);
	ck_assert_int_eq(sw_remote_register(r, copy), SW_OK);
	ck_assert_int_eq(sw_codemap_find(copy, 0x10010, &found), SW_OK);
	ck_assert_ptr_eq(found.method, (void *)(uintptr_t)(0x10000 ^ 0x5a5a));
	/* All or nothing: a second registration overlaps the first at once. */
	ck_assert_int_eq(sw_remote_register(r, copy), SW_E_EXISTS);
	ck_assert_uint_eq(sw_codemap_count(copy), 3);
	ck_assert_int_eq(sw_remote_unregister(r, copy), SW_OK);
	ck_assert_uint_eq(sw_codemap_count(copy), 0);
	sw_codemap_synchronize(copy);
	sw_codemap_destroy(copy);
	sw_remote_free(r);

	/* A removal and a thread leaving are published too. */
	ck_assert_int_eq(sw_codemap_remove(map, 0x20000), SW_OK);
	ck_assert_int_eq(sw_publisher_thread_remove(p, 42), SW_OK);
	ck_assert_int_eq(sw_publisher_thread_remove(p, 42), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host(), descriptor(), &r), SW_OK);
	ck_assert_uint_eq(sw_remote_method_count(r), 2);
	ck_assert_int_eq(sw_remote_find(r, 0x20010, &m), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_remote_thread_find(r, 42, &t), SW_E_NOTFOUND);
	sw_remote_free(r);

	/* Another architecture's reader is told so. */
	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host() == SW_ARCH_X64 ? SW_ARCH_ARM64 : SW_ARCH_X64,
	                                descriptor(), &r), SW_E_MISMATCH);

	/* Detached: nothing published, and another publisher may take over. */
	ck_assert_int_eq(sw_publisher_detach(p), SW_OK);
	ck_assert_int_eq(sw_publisher_detach(p), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host(), descriptor(), &r), SW_OK);
	ck_assert_uint_eq(sw_remote_method_count(r), 0);
	sw_remote_free(r);
	sw_publisher_destroy(p);
	sw_codemap_destroy(map);

	ck_assert_int_eq(sw_remote_read(NULL, SW_ARCH_X64, 1, &r), SW_E_INVAL);
	ck_assert_int_eq(sw_remote_read(&mem, SW_ARCH_X64, 0, &r), SW_E_INVAL);
	ck_assert_int_eq(sw_remote_read(&mem, SW_ARCH_X64, 1, NULL), SW_E_INVAL);
	ck_assert_int_eq(sw_remote_read(&mem, SW_ARCH_X64, 8, &r), SW_E_BADADDR);
}
END_TEST

/*
 * A target stopped while its publisher wrote the next snapshot: the
 * generation is odd and stays so.  The current snapshot is whole; the
 * read says where it was caught.
 */
START_TEST(test_mid_update)
{
	sw_codemap *map;
	sw_publisher *p;
	sw_remote *r;
	sw_memory mem;

	build_blob();
	self_memory(&mem);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_publisher_create(&p, name_of, NULL), SW_OK);
	ck_assert_int_eq(sw_publisher_attach(p, map), SW_OK);
	ck_assert_int_eq(add(map, 0x10000, 0x80), SW_OK);
	sw_published_codemap.generation++;
	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host(), descriptor(), &r), SW_OK);
	ck_assert_uint_eq(sw_remote_flags(r), SW_REMOTE_MID_UPDATE);
	ck_assert_uint_eq(sw_remote_method_count(r), 1);
	sw_remote_free(r);
	sw_published_codemap.generation--;
	sw_publisher_destroy(p);
	sw_codemap_destroy(map);
}
END_TEST

/* ---- a synthetic target in a buffer, for the hostile tests ---- */

enum { BASE = 0x100000, SNAP = 64, NM = 6, NT = 2, BLOBS = 2048, NAMES = 3072, IMAGE = 4096 };

/* A published map of NM methods and NT threads, laid out as stackwalk-remote(5) says. */
static void build_image(unsigned char *img)
{
	size_t rec = SNAP + 16;

	memset(img, 0, IMAGE);
	remote_put(img, 0, SW_REMOTE_MAGIC, 4);
	remote_put(img, 4, SW_REMOTE_VERSION, 4);
	remote_put(img, 8, 6, 4);
	remote_put(img, 12, 48, 4);
	remote_put(img, 16, BASE + SNAP, 8);
	remote_put(img, 24, sw_arch_host(), 4);
	remote_put(img, SNAP, NM, 4);
	remote_put(img, SNAP + 4, NT, 4);
	remote_put(img, SNAP + 8, 56, 4);
	remote_put(img, SNAP + 12, 32, 4);
	memcpy(img + BLOBS, blob, blob_len);
	for (unsigned i = 0; i < NM; i++, rec += 56) {
		remote_put(img, rec, 0x400000 + i * 0x1000, 8);
		remote_put(img, rec + 8, 0x800, 8);
		remote_put(img, rec + 16, 0xbeef00 + i, 8);
		remote_put(img, rec + 32, BASE + BLOBS, 8);
		remote_put(img, rec + 40, blob_len, 4);
		remote_put(img, rec + 48, BASE + NAMES + i * 16, 8);
		snprintf((char *)img + NAMES + i * 16, 16, "method%u", i);
	}
	for (unsigned i = 0; i < NT; i++, rec += 32) {
		remote_put(img, rec, 100 + i, 8);
		remote_put(img, rec + 8, 0x7000 + i * 8, 8);
	}
}

#define READ_BOUND REMOTE_READ_BOUND(IMAGE)

START_TEST(test_synthetic_and_restless)
{
	unsigned char img[IMAGE];
	struct remote_target c;
	sw_memory mem;
	sw_remote *r;
	sw_remote_method m;

	build_blob();
	build_image(img);
	ck_assert_int_eq(remote_target_init(&c, &mem, img, IMAGE, BASE), SW_OK);
	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host(), BASE, &r), SW_OK);
	ck_assert_uint_eq(sw_remote_method_count(r), NM);
	ck_assert_int_eq(sw_remote_find(r, 0x402800, &m), SW_E_NOTFOUND);
	ck_assert_int_eq(sw_remote_find(r, 0x4027ff, &m), SW_OK);
	ck_assert_str_eq(m.name, "method2");
	sw_remote_free(r);

	/* A generation that moves under every read: a bounded number of tries, then a named error. */
	c.restless = 1;
	c.reads = 0;
	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host(), BASE, &r), SW_E_UNSAFE);
	ck_assert_uint_le(c.reads, READ_BOUND);

	/* A later version of the layout is refused, not guessed at. */
	c.restless = 0;
	remote_put(img, 4, SW_REMOTE_VERSION + 1, 4);
	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host(), BASE, &r), SW_E_UNSUPPORTED);
	remote_put(img, 4, SW_REMOTE_VERSION, 4);
	remote_put(img, 0, 0, 4);
	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host(), BASE, &r), SW_E_NOTFOUND);
	build_image(img);
	/* Counts past the hard limits allocate nothing for them. */
	remote_put(img, SNAP, SW_REMOTE_MAX_METHODS + 1, 4);
	ck_assert_int_eq(sw_remote_read(&mem, sw_arch_host(), BASE, &r), SW_E_LIMIT);
	build_image(img);
	remote_put(img, SNAP, 0xfffff, 4);     /* under the limit, but the records are not there */
	r = NULL;
	ck_assert_int_lt(sw_remote_read(&mem, sw_arch_host(), BASE, &r), 0);
	ck_assert_ptr_null(r);
}
END_TEST

/* Mutated target memory: every read ends, with a snapshot or an error, within the read bound. */
START_TEST(test_mutated)
{
	unsigned char img[IMAGE];
	struct remote_target c;
	sw_memory mem;
	uint64_t x = 0x9e3779b97f4a7c15ull;
	sw_codemap *map;

	build_blob();
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(remote_target_init(&c, &mem, img, IMAGE, BASE), SW_OK);
	for (unsigned round = 0; round < 20000; round++) {
		sw_remote *r = NULL;
		sw_status st;
		unsigned flips;

		build_image(img);
		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		flips = 1 + (unsigned)(x % 4);
		for (unsigned k = 0; k < flips; k++) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			/* Mostly the descriptor and records, where a flip matters most. */
			img[(x >> 8) % (x & 1 ? 256 : IMAGE)] ^= (unsigned char)(1u << ((x >> 20) % 8));
		}
		c.reads = 0;
		st = sw_remote_read(&mem, sw_arch_host(), BASE, &r);
		ck_assert_uint_le(c.reads, READ_BOUND);
		if (st != SW_OK) {
			ck_assert_ptr_null(r);
			ck_assert_int_lt(st, 0);
			continue;
		}
		for (size_t i = 1; i < sw_remote_method_count(r); i++) {
			sw_remote_method a, b;

			ck_assert_int_eq(sw_remote_method_at(r, i - 1, &a), SW_OK);
			ck_assert_int_eq(sw_remote_method_at(r, i, &b), SW_OK);
			ck_assert_uint_ge(b.start, a.start + a.size);
			ck_assert(!a.name || strlen(a.name) < SW_REMOTE_MAX_NAME);
		}
		/* What was read goes into a map (the map checks each blob) and out again. */
		if (sw_remote_register(r, map) == SW_OK)
			ck_assert_int_eq(sw_remote_unregister(r, map), SW_OK);
		ck_assert_uint_eq(sw_codemap_count(map), 0);
		sw_codemap_synchronize(map);
		sw_remote_free(r);
	}
	sw_codemap_destroy(map);
}
END_TEST

/* ---- a writer adding and removing while readers read ---- */

static volatile int stop_writer;

static void *writer(void *arg)
{
	sw_codemap *map = arg;
	unsigned i = 0;

	while (!stop_writer) {
		uint64_t start = 0x1000000 + (uint64_t)(i % 64) * 0x1000;

		if (add(map, start, 0x100) != SW_OK)
			sw_codemap_remove(map, start);
		if (++i % 256 == 0)
			sw_codemap_synchronize(map);
	}
	return NULL;
}

START_TEST(test_read_while_written)
{
	sw_codemap *map;
	sw_publisher *p;
	sw_memory mem;
	pthread_t w;
	unsigned ok = 0;

	build_blob();
	self_memory(&mem);
	ck_assert_int_eq(sw_codemap_create(&map), SW_OK);
	ck_assert_int_eq(sw_publisher_create(&p, name_of, NULL), SW_OK);
	ck_assert_int_eq(sw_publisher_attach(p, map), SW_OK);
	stop_writer = 0;
	ck_assert_int_eq(pthread_create(&w, NULL, writer, map), 0);
	for (unsigned round = 0; round < 2000; round++) {
		sw_remote *r;
		sw_status st = sw_remote_read(&mem, sw_arch_host(), descriptor(), &r);

		/* A writer faster than every one of the tries is the only excuse. */
		ck_assert_msg(st == SW_OK || st == SW_E_UNSAFE, "read: %s", sw_strerror(st));
		if (st != SW_OK)
			continue;
		ok++;
		/* One snapshot: every method whole, its name its own. */
		for (size_t i = 0; i < sw_remote_method_count(r); i++) {
			sw_remote_method m;
			char want[32];

			ck_assert_int_eq(sw_remote_method_at(r, i, &m), SW_OK);
			ck_assert_uint_eq(m.handle, m.start ^ 0x5a5a);
			ck_assert_uint_eq(m.unwind_size, blob_len);
			ck_assert_mem_eq(m.unwind, blob, blob_len);
			snprintf(want, sizeof want, "m_%" PRIx64, m.start);
			ck_assert_str_eq(m.name, want);
		}
		sw_remote_free(r);
	}
	stop_writer = 1;
	pthread_join(w, NULL);
	ck_assert_uint_gt(ok, 0);
	ck_assert_int_eq(sw_publisher_status(p), SW_OK);
	sw_publisher_destroy(p);
	sw_codemap_destroy(map);
}
END_TEST

static Suite *remote_suite(void)
{
	Suite *s = suite_create("remote");
	TCase *tc = tcase_create("basic");
	TCase *hostile = tcase_create("hostile");

	tcase_add_test(tc, test_publish_and_read);
	tcase_add_test(tc, test_mid_update);
	tcase_add_test(tc, test_read_while_written);
	suite_add_tcase(s, tc);
	tcase_set_timeout(hostile, 300);
	tcase_add_test(hostile, test_synthetic_and_restless);
	tcase_add_test(hostile, test_mutated);
	suite_add_tcase(s, hostile);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(remote_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
