/*
 * jitdump.c - jit-PID.dump, the file perf inject --jit reads.
 *
 * The format is perf's (tools/perf/Documentation/jitdump-specification.txt
 * in Linux): a 40-byte header, then records, each with a 16-byte prefix
 * (id, total size, timestamp), in the writer's byte order.  Per method:
 *
 *   JIT_CODE_UNWINDING_INFO  eh_frame + eh_frame_hdr from the SWU blob; perf
 *                            attaches it to the next code load
 *   JIT_CODE_LOAD            pid, tid, addresses, size, running index,
 *                            the name (NUL-terminated), then the code
 *
 * and JIT_CODE_CLOSE at the end.  perf record must see the file mapped
 * executable to know it exists (perf inject finds it by that mmap's path),
 * so its first page stays mapped until the dump is closed.  Timestamps are
 * CLOCK_MONOTONIC nanoseconds: perf inject matches them with samples taken
 * under `perf record -k mono`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include "util.h"
#include "array_grow.h"
#include "perf_files.h"
#include "swu_to_cfi.h"

#define JITDUMP_MAGIC   0x4A695444u     /* "JiTD" read as a native word */
#define JITDUMP_VERSION 1
#define JITDUMP_HEADER_SIZE 40
#define RECORD_PREFIX_SIZE 16

enum { JIT_CODE_LOAD = 0, JIT_CODE_CLOSE = 3, JIT_CODE_UNWINDING_INFO = 4 };

/* Records are put together in memory, then written with one call. */
struct record {
	uint8_t *buf;
	size_t len, cap;
	int failed;
};

static void rec_put(struct record *r, const void *p, size_t n)
{
	if (!r->failed && swi_array_grow((void **)&r->buf, &r->cap, r->len + n, 1) != SW_OK)
		r->failed = 1;
	if (r->failed)
		return;
	memcpy(r->buf + r->len, p, n);
	r->len += n;
}

static void rec_u32(struct record *r, uint32_t v) { rec_put(r, &v, 4); }
static void rec_u64(struct record *r, uint64_t v) { rec_put(r, &v, 8); }

static uint64_t monotonic_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The prefix, with a total size patched by rec_end. */
static void rec_begin(struct record *r, uint32_t id)
{
	r->len = 0;
	rec_u32(r, id);
	rec_u32(r, 0);
	rec_u64(r, monotonic_ns());
}

static sw_status rec_end(struct swi_jitdump *j, struct record *r)
{
	uint32_t total = (uint32_t)r->len;

	if (r->failed)
		return SW_E_NOMEM;
	if (r->len > UINT32_MAX)
		return SW_E_LIMIT;
	memcpy(r->buf + 4, &total, 4);
	if (fwrite(r->buf, 1, r->len, j->f) != r->len || fflush(j->f) != 0)
		return SW_E_IO;
	return SW_OK;
}

sw_status swi_jitdump_open(struct swi_jitdump *j, const char *dir, long pid)
{
	struct record r = { NULL, 0, 0, 0 };
	long page = sysconf(_SC_PAGESIZE);
	int n = snprintf(j->path, sizeof(j->path), "%s/jit-%ld.dump", dir, pid);
	sw_status st;
	int fd;

	j->f = NULL;
	j->marker = NULL;
	j->pid = pid;
	j->code_index = 0;
	if (n < 0 || (size_t)n >= sizeof(j->path)) {
		errno = ENAMETOOLONG;
		return SW_E_IO;
	}
	fd = open(j->path, O_CREAT | O_TRUNC | O_RDWR | O_CLOEXEC, 0644);
	if (fd < 0)
		return SW_E_IO;
	j->marker_size = page > 0 ? (size_t)page : 4096;
	j->marker = mmap(NULL, j->marker_size, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, 0);
	if (j->marker == MAP_FAILED) {
		j->marker = NULL;
		close(fd);
		return SW_E_IO;
	}
	j->f = fdopen(fd, "w");
	if (!j->f) {
		close(fd);
		swi_jitdump_close(j);
		return SW_E_IO;
	}
	rec_u32(&r, JITDUMP_MAGIC);
	rec_u32(&r, JITDUMP_VERSION);
	rec_u32(&r, JITDUMP_HEADER_SIZE);
	rec_u32(&r, swu_cfi_elf_machine(sw_arch_host()));
	rec_u32(&r, 0);
	rec_u32(&r, (uint32_t)pid);
	rec_u64(&r, monotonic_ns());
	rec_u64(&r, 0);                                 /* flags: no arch timestamps */
	st = r.failed ? SW_E_NOMEM : SW_OK;
	if (st == SW_OK && (fwrite(r.buf, 1, r.len, j->f) != r.len || fflush(j->f) != 0))
		st = SW_E_IO;
	free(r.buf);
	if (st != SW_OK)
		swi_jitdump_close(j);
	return st;
}

/*
 * The unwind tables perf inject puts after the method's code in its object.
 * perf maps that object over [code, code rounded up to 8 + mapped_size):
 * its DWARF unwinder reads the tables through that mapping, but a mapping
 * that spills over another method's code would take that code's samples
 * too.  So the tables are mapped only where `room` (the free bytes after
 * the rounded-up code) holds them; elsewhere mapped_size is 0, the object
 * still carries them, and names stay right.
 */
static sw_status unwinding_record(struct swi_jitdump *j, struct record *r, const sw_code_info *info,
                                  uint64_t room)
{
	struct swu_writer count = { NULL, 0, 0 }, w;
	size_t eh_size, padded;
	uint8_t *data;
	sw_status st;

	st = swu_cfi_eh_payload(info->unwind, info->unwind_size, info->start, &count, &eh_size);
	if (st != SW_OK)
		return st;
	data = malloc(count.len);
	if (!data)
		return SW_E_NOMEM;
	w = (struct swu_writer){ data, count.len, 0 };
	st = swu_cfi_eh_payload(info->unwind, info->unwind_size, info->start, &w, &eh_size);
	if (st == SW_OK) {
		padded = (w.len + 7) & ~(size_t)7;
		rec_begin(r, JIT_CODE_UNWINDING_INFO);
		rec_u64(r, w.len);                      /* unwinding_size */
		rec_u64(r, w.len - eh_size);            /* eh_frame_hdr_size */
		rec_u64(r, padded <= room ? padded : 0); /* mapped_size */
		rec_put(r, data, w.len);
		rec_put(r, "\0\0\0\0\0\0\0", padded - w.len);
		st = rec_end(j, r);
	}
	free(data);
	return st;
}

sw_status swi_jitdump_add(struct swi_jitdump *j, const sw_code_info *info, const char *name,
                          uint64_t room)
{
	struct record r = { NULL, 0, 0, 0 };
	sw_status st = SW_OK;

	if (info->unwind)
		st = unwinding_record(j, &r, info, room);
	if (st == SW_OK) {
		rec_begin(&r, JIT_CODE_LOAD);
		rec_u32(&r, (uint32_t)j->pid);
		rec_u32(&r, (uint32_t)syscall(SYS_gettid));
		rec_u64(&r, info->start);               /* vma */
		rec_u64(&r, info->start);               /* code address */
		rec_u64(&r, info->size);
		rec_u64(&r, j->code_index++);
		rec_put(&r, name, strlen(name) + 1);
		/* The code, as the JIT left it: this process's own memory. */
		rec_put(&r, (const void *)(uintptr_t)info->start, (size_t)info->size);
		st = rec_end(j, &r);
	}
	free(r.buf);
	return st;
}

void swi_jitdump_close(struct swi_jitdump *j)
{
	if (j->f) {
		struct record r = { NULL, 0, 0, 0 };

		rec_begin(&r, JIT_CODE_CLOSE);
		(void)rec_end(j, &r);
		free(r.buf);
		fclose(j->f);
		j->f = NULL;
	}
	if (j->marker)
		munmap(j->marker, j->marker_size);
	j->marker = NULL;
}
