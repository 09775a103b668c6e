/*
 * standalone_main.c - run a fuzz target without libFuzzer (any compiler),
 * as `make check` does.
 *
 *   TARGET FILE|DIR...   run each file (each file of each directory) once
 *   TARGET               replay $top_srcdir/tests/fuzz/corpus/TARGET/, then
 *                        random inputs from a fixed seed: half fresh bytes,
 *                        half corpus entries mutated as libFuzzer would
 *                        (flips, overwrites, inserts, truncations).
 *
 * TARGET is this program's name.  The random phase stops after
 * SW_FUZZ_ITERATIONS inputs (default 20000) or SW_FUZZ_SECONDS seconds
 * (default 3), whichever comes first; SW_FUZZ_SEED changes the seed.  If an
 * input crashes the target (a signal, or a sanitizer report), it is written
 * to TARGET-crash.bin in the current directory first, for replaying.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "fuzz.h"

#define SW_FUZZ_MAX_INPUT  4096
#define SW_FUZZ_MAX_CORPUS 4096

struct input {
	uint8_t *data;
	size_t size;
};

static char name[128];
static char crash_path[160];
static const uint8_t *volatile current;
static volatile size_t current_size;

/* Save the input in flight (async-signal-safe: open, write, close). */
static void save_current(void)
{
	const uint8_t *p = current;
	size_t n = current_size;
	int fd;

	if (!p)
		return;
	fd = open(crash_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0)
		return;
	while (n) {
		ssize_t w = write(fd, p, n);

		if (w <= 0)
			break;
		p += w;
		n -= (size_t)w;
	}
	close(fd);
}

static void on_crash(int sig)
{
	static const char msg[] = "fuzz: crashed; the input is in the -crash.bin file\n";

	save_current();
	(void)!write(2, msg, sizeof msg - 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Sanitizer builds report through their own handlers; they call this before exiting. */
extern void __sanitizer_set_death_callback(void (*cb)(void)) __attribute__((weak));

static void install_crash_handlers(void)
{
	static const int sigs[] = { SIGSEGV, SIGBUS, SIGILL, SIGFPE, SIGABRT };

	if (__sanitizer_set_death_callback) {
		__sanitizer_set_death_callback(save_current);
		return;
	}
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		signal(sigs[i], on_crash);
}

/* Run one input from a buffer of exactly its size, so that overreads are caught. */
static void run(const uint8_t *data, size_t size)
{
	uint8_t *copy = malloc(size ? size : 1);

	if (!copy) {
		fprintf(stderr, "%s: out of memory\n", name);
		exit(1);
	}
	memcpy(copy, data, size);
	current = copy;
	current_size = size;
	LLVMFuzzerTestOneInput(copy, size);
	current = NULL;
	free(copy);
}

static int read_file(const char *path, struct input *in)
{
	FILE *f = fopen(path, "rb");
	long n;

	in->data = NULL;
	in->size = 0;
	if (!f)
		return -1;
	if (fseek(f, 0, SEEK_END) != 0 || (n = ftell(f)) < 0 || fseek(f, 0, SEEK_SET) != 0) {
		fclose(f);
		return -1;
	}
	in->data = malloc(n ? (size_t)n : 1);
	if (!in->data || fread(in->data, 1, (size_t)n, f) != (size_t)n) {
		free(in->data);
		in->data = NULL;
		fclose(f);
		return -1;
	}
	in->size = (size_t)n;
	fclose(f);
	return 0;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Load every regular file of `dir` (sorted by name, so runs repeat) into corpus[]. */
static size_t load_dir(const char *dir, struct input *corpus, size_t cap)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char *names[SW_FUZZ_MAX_CORPUS];
	size_t n = 0, loaded = 0;

	if (!d)
		return 0;
	while ((e = readdir(d)) && n < SW_FUZZ_MAX_CORPUS)
		if (e->d_name[0] != '.')
			names[n++] = strdup(e->d_name);
	closedir(d);
	qsort(names, n, sizeof *names, by_name);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		if (names[i] && loaded < cap &&
		    snprintf(path, sizeof path, "%s/%s", dir, names[i]) < (int)sizeof path &&
		    stat(path, &st) == 0 && S_ISREG(st.st_mode) && read_file(path, &corpus[loaded]) == 0)
			loaded++;
		free(names[i]);
	}
	return loaded;
}

static uint64_t rng;

static uint64_t next_random(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static size_t below(size_t n)
{
	return n ? (size_t)(next_random() % n) : 0;
}

/* A random input: fresh bytes, or a corpus entry with a few mutations. */
static size_t make_input(uint8_t *buf, const struct input *corpus, size_t ncorpus)
{
	size_t size, edits;

	if (!ncorpus || below(2)) {
		size = below(4) ? below(64) : below(SW_FUZZ_MAX_INPUT);
		for (size_t i = 0; i < size; i++)
			buf[i] = (uint8_t)next_random();
		return size;
	}
	{
		const struct input *in = &corpus[below(ncorpus)];

		size = in->size < SW_FUZZ_MAX_INPUT ? in->size : SW_FUZZ_MAX_INPUT;
		memcpy(buf, in->data, size);
	}
	edits = 1 + below(8);
	for (size_t i = 0; i < edits; i++) {
		size_t at = below(size + 1);

		switch (below(5)) {
		case 0:         /* flip a bit */
			if (size)
				buf[at % size] ^= (uint8_t)(1u << below(8));
			break;
		case 1:         /* overwrite a byte */
			if (size)
				buf[at % size] = (uint8_t)next_random();
			break;
		case 2:         /* an interesting value */
			if (size) {
				static const uint8_t interesting[] = { 0, 1, 0x7f, 0x80, 0xff, 8, 16 };

				buf[at % size] = interesting[below(sizeof interesting)];
			}
			break;
		case 3:         /* insert a byte */
			if (size < SW_FUZZ_MAX_INPUT) {
				memmove(buf + at + 1, buf + at, size - at);
				buf[at] = (uint8_t)next_random();
				size++;
			}
			break;
		default:        /* truncate */
			size = at;
			break;
		}
	}
	return size;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static unsigned long env_ulong(const char *var, unsigned long dflt)
{
	const char *v = getenv(var);

	return v && *v ? strtoul(v, NULL, 0) : dflt;
}

int main(int argc, char **argv)
{
	static struct input corpus[SW_FUZZ_MAX_CORPUS];
	static uint8_t buf[SW_FUZZ_MAX_INPUT];
	const char *base = strrchr(argv[0], '/');
	const char *srcdir = getenv("top_srcdir");
	char dir[4096];
	size_t ncorpus, n = 0;
	unsigned long iterations, i;
	double start, seconds;

	base = base ? base + 1 : argv[0];
	if (strncmp(base, "lt-", 3) == 0)
		base += 3;
	snprintf(name, sizeof name, "%s", base);
	snprintf(crash_path, sizeof crash_path, "%s-crash.bin", name);
	install_crash_handlers();

	if (argc > 1) {
		for (int a = 1; a < argc; a++) {
			struct stat st;
			struct input in;

			if (stat(argv[a], &st) == 0 && S_ISDIR(st.st_mode)) {
				ncorpus = load_dir(argv[a], corpus, SW_FUZZ_MAX_CORPUS);
				for (size_t k = 0; k < ncorpus; k++) {
					run(corpus[k].data, corpus[k].size);
					free(corpus[k].data);
				}
				n += ncorpus;
			} else if (read_file(argv[a], &in) == 0) {
				run(in.data, in.size);
				free(in.data);
				n++;
			} else {
				fprintf(stderr, "%s: cannot read %s\n", name, argv[a]);
				return 1;
			}
		}
		printf("%s: ran %zu inputs\n", name, n);
		return 0;
	}

	snprintf(dir, sizeof dir, "%s/tests/fuzz/corpus/%s", srcdir ? srcdir : ".", name);
	start = now();
	ncorpus = load_dir(dir, corpus, SW_FUZZ_MAX_CORPUS);
	for (size_t k = 0; k < ncorpus; k++)
		run(corpus[k].data, corpus[k].size);
	printf("%s: replayed %zu corpus inputs from %s in %.2f s\n", name, ncorpus, dir, now() - start);

	iterations = env_ulong("SW_FUZZ_ITERATIONS", 20000);
	seconds = (double)env_ulong("SW_FUZZ_SECONDS", 3);
	rng = env_ulong("SW_FUZZ_SEED", 0x5357467a7a2d31ULL);
	start = now();
	for (i = 0; i < iterations; i++) {
		size_t size = make_input(buf, corpus, ncorpus);

		run(buf, size);
		if ((i & 15) == 15 && now() - start > seconds)
			break;
	}
	printf("%s: ran %lu random inputs in %.2f s\n", name, i < iterations ? i + 1 : i,
	       now() - start);
	for (size_t k = 0; k < ncorpus; k++)
		free(corpus[k].data);
	return 0;
}
