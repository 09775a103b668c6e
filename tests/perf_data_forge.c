/*
 * perf_data_forge.c - the perf.data perf record would have written for a
 * run that left a jitdump, for machines where perf record cannot record.
 *
 *   perf_data_forge JITDUMP PERF.DATA
 *
 * reads the jitdump (its header's pid, each JIT_CODE_LOAD's timestamp,
 * address, size and name) and writes a perf.data ("PERFILE2") with one
 * software cpu-clock event on CLOCK_MONOTONIC, as `perf record -k mono`
 * would, and these records:
 *
 *   PERF_RECORD_COMM     the process
 *   PERF_RECORD_MMAP2    the jitdump, mapped executable: the marker perf
 *                        inject --jit looks for
 *   PERF_RECORD_SAMPLE   one in the middle of each loaded method, just
 *                        after its load
 *
 * so that perf inject --jit and perf report run on it exactly as on a
 * recorded file: the test still checks that the jitdump resolves names.
 * It prints each method it sampled.  Layout: tools/perf's perf.data
 * header (magic, sizes, attr, data and event-type sections, a feature
 * bitmap), the attr section (one perf_event_attr and its empty id list),
 * then the records; every non-sample record carries the sample_id
 * trailer (pid, tid, time) because sample_id_all is set.
 */
#define _GNU_SOURCE
#include <inttypes.h>
#include <limits.h>
#include <linux/perf_event.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define JITDUMP_MAGIC 0x4A695444u
#define JIT_CODE_LOAD 0
#define MAX_METHODS 256

struct method {
	uint64_t time, addr, size;
	char name[128];
};

static uint8_t out[1 << 20];
static size_t out_len;

static void put(const void *p, size_t n)
{
	if (out_len + n > sizeof(out)) {
		fprintf(stderr, "perf_data_forge: too much to write\n");
		exit(1);
	}
	memcpy(out + out_len, p, n);
	out_len += n;
}

static void put_u16(uint16_t v) { put(&v, 2); }
static void put_u32(uint32_t v) { put(&v, 4); }
static void put_u64(uint64_t v) { put(&v, 8); }

/* A record's header, its size patched by end_record. */
static size_t begin_record(uint32_t type, uint16_t misc)
{
	size_t at = out_len;

	put_u32(type);
	put_u16(misc);
	put_u16(0);
	return at;
}

static void end_record(size_t at)
{
	uint16_t size = (uint16_t)(out_len - at);

	memcpy(out + at + 6, &size, 2);
}

/* A NUL-terminated string padded to 8 bytes. */
static void put_string(const char *s)
{
	size_t n = strlen(s) + 1;

	put(s, n);
	while (n++ % 8)
		put("", 1);
}

/* What sample_id_all appends to non-sample records, for IP|TID|TIME|PERIOD: pid, tid, time. */
static void put_sample_id(uint32_t pid, uint64_t time)
{
	put_u32(pid);
	put_u32(pid);
	put_u64(time);
}

static int read_jitdump(const char *path, uint32_t *pid, uint64_t *start_time,
                        struct method *m, unsigned *n)
{
	FILE *f = fopen(path, "rb");
	uint8_t h[40], rec[16];

	uint32_t magic;

	if (!f || fread(h, 1, 40, f) != 40) {
		perror(path);
		if (f)
			fclose(f);
		return -1;
	}
	memcpy(&magic, h, 4);
	if (magic != JITDUMP_MAGIC) {
		fprintf(stderr, "%s: not a jitdump\n", path);
		fclose(f);
		return -1;
	}
	memcpy(pid, h + 20, 4);
	memcpy(start_time, h + 24, 8);
	*n = 0;
	while (fread(rec, 1, 16, f) == 16) {
		uint32_t id, total;
		uint64_t time;
		uint8_t body[40];

		memcpy(&id, rec, 4);
		memcpy(&total, rec + 4, 4);
		memcpy(&time, rec + 8, 8);
		if (total < 16)
			break;
		if (id == JIT_CODE_LOAD && total >= 16 + 40 && *n < MAX_METHODS) {
			struct method *k = &m[*n];
			size_t len = 0;
			int c;

			if (fread(body, 1, 40, f) != 40)
				break;
			k->time = time;
			memcpy(&k->addr, body + 16, 8);
			memcpy(&k->size, body + 24, 8);
			while ((c = fgetc(f)) > 0 && len + 1 < sizeof(k->name))
				k->name[len++] = (char)c;
			k->name[len] = '\0';
			(*n)++;
			if (fseek(f, (long)total - 16 - 40 - (long)len - 1, SEEK_CUR) != 0)
				break;
		} else if (fseek(f, (long)total - 16, SEEK_CUR) != 0) {
			break;
		}
	}
	fclose(f);
	return 0;
}

int main(int argc, char **argv)
{
	struct method m[MAX_METHODS];
	struct perf_event_attr attr;
	char dump[PATH_MAX];
	uint32_t pid;
	uint64_t t0, last = 0;
	unsigned n;
	size_t data_start, rec;
	FILE *f;

	if (argc != 3) {
		fprintf(stderr, "usage: perf_data_forge JITDUMP PERF.DATA\n");
		return 2;
	}
	if (!realpath(argv[1], dump) || read_jitdump(dump, &pid, &t0, m, &n) != 0)
		return 1;
	if (n == 0) {
		fprintf(stderr, "%s: no code load records\n", dump);
		return 1;
	}

	/* The file header, its sections filled in below. */
	put("PERFILE2", 8);
	put_u64(104);                                   /* header size */
	put_u64(sizeof(attr) + 16);                     /* one attr and its id section */
	put_u64(104);                                   /* attrs: offset, size */
	put_u64(sizeof(attr) + 16);
	put_u64(0);                                     /* data: patched */
	put_u64(0);
	put_u64(0);                                     /* event types: none */
	put_u64(0);
	for (int i = 0; i < 4; i++)
		put_u64(0);                             /* no header features */

	memset(&attr, 0, sizeof(attr));
	attr.type = PERF_TYPE_SOFTWARE;
	attr.size = sizeof(attr);
	attr.config = PERF_COUNT_SW_CPU_CLOCK;
	attr.sample_period = 250000;
	attr.sample_type = PERF_SAMPLE_IP | PERF_SAMPLE_TID | PERF_SAMPLE_TIME | PERF_SAMPLE_PERIOD;
	attr.exclude_kernel = 1;
	attr.mmap = 1;
	attr.comm = 1;
	attr.mmap2 = 1;
	attr.sample_id_all = 1;
	attr.use_clockid = 1;
	attr.clockid = CLOCK_MONOTONIC;
	put(&attr, sizeof(attr));
	put_u64(0);                                     /* ids: none (one event) */
	put_u64(0);

	data_start = out_len;
	rec = begin_record(PERF_RECORD_COMM, 0);
	put_u32(pid);
	put_u32(pid);
	put_string("toyjit-demo");
	put_sample_id(pid, t0);
	end_record(rec);

	/* The marker: the jitdump's first page, mapped executable. */
	rec = begin_record(PERF_RECORD_MMAP2, PERF_RECORD_MISC_USER);
	put_u32(pid);
	put_u32(pid);
	put_u64(0x7f0000000000ull);                     /* wherever it was mapped */
	put_u64(4096);
	put_u64(0);                                     /* pgoff */
	put_u32(0);                                     /* maj, min, ino, ino generation */
	put_u32(0);
	put_u64(0);
	put_u64(0);
	put_u32(5);                                     /* PROT_READ | PROT_EXEC */
	put_u32(2);                                     /* MAP_PRIVATE */
	put_string(dump);
	put_sample_id(pid, t0);
	end_record(rec);

	/* One sample in each method, after its load. */
	for (unsigned k = 0; k < n; k++) {
		uint64_t t = (m[k].time > last ? m[k].time : last) + 1000;

		last = t;
		rec = begin_record(PERF_RECORD_SAMPLE, PERF_RECORD_MISC_USER);
		put_u64(m[k].addr + m[k].size / 2);
		put_u32(pid);
		put_u32(pid);
		put_u64(t);
		put_u64(250000);
		end_record(rec);
		printf("sample at %#" PRIx64 " in %s\n", m[k].addr + m[k].size / 2, m[k].name);
	}
	{
		uint64_t off = data_start, size = out_len - data_start;

		memcpy(out + 40, &off, 8);
		memcpy(out + 48, &size, 8);
	}
	f = fopen(argv[2], "wb");
	if (!f || fwrite(out, 1, out_len, f) != out_len || fclose(f) != 0) {
		perror(argv[2]);
		return 1;
	}
	return 0;
}
