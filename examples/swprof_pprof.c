/*
 * swprof_pprof.c - the profile in pprof's format (profile.proto, gzip
 * compressed), which go tool pprof, Grafana Pyroscope, Parca and other
 * continuous profilers read.  The encoder is protoc-c's, generated from
 * examples/profile.proto at build time; zlib compresses.
 *
 * One Location per distinct frame (its address; a caller's is its return
 * address less one) with a Line for each call inlined there and one for
 * the function that holds the code, one Function per distinct name, one Mapping per
 * registered module, one Sample per distinct stack with two values: the
 * periods (count) and the time they stand for (nanoseconds of CPU, or of
 * real time in wall-clock mode).  Each sample is labelled with the thread
 * it was taken on, under the keys Google's perf_data_converter gives the
 * same facts (src/perf_data_converter.h, TidLabelKey and
 * ThreadCommLabelKey): "tid", a number, and "thread_comm", the thread's
 * name (/proc/PID/task/TID/comm), left out where the thread ended before
 * its name could be read.  go tool pprof -tags lists them, -tagfocus
 * and -tagshow select by them.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdlib.h>
#include "swprof.h"

#ifndef SWPROF_PPROF
int write_pprof(const char *path, const named_profile *np)
{
	(void)path; (void)np;
	return -1;
}
#else
#include <zlib.h>
#include "profile.pb-c.h"

typedef Perftools__Profiles__Profile pb_profile;
typedef Perftools__Profiles__ValueType pb_value_type;
typedef Perftools__Profiles__Sample pb_sample;
typedef Perftools__Profiles__Location pb_location;
typedef Perftools__Profiles__Line pb_line;
typedef Perftools__Profiles__Function pb_function;
typedef Perftools__Profiles__Mapping pb_mapping;
typedef Perftools__Profiles__Label pb_label;

/*
 * The string table: these first, then the modules' paths, then the
 * function names, then the threads' names.
 */
enum { STR_EMPTY, STR_SAMPLES, STR_COUNT, STR_CLOCK, STR_NANOSECONDS, STR_TID, STR_THREAD_COMM,
       STR_FIXED };

/* Every array the message points into, allocated at once and freed at once. */
typedef struct pprof_parts {
	char **strings;
	pb_sample *samples, **sample_ptrs;
	uint64_t *location_ids;
	int64_t *values;
	pb_location *locations, **location_ptrs;
	pb_line *lines, **line_ptrs;
	pb_function *functions, **function_ptrs;
	pb_mapping *mappings, **mapping_ptrs;
	pb_label *labels, **label_ptrs;     /* two a sample */
	int64_t *thread_str;        /* by slot of prof.threads: its name's string, or 0 */
} pprof_parts;

static int alloc_parts(pprof_parts *p, const named_profile *np, size_t nstrings, size_t nids)
{
	p->strings = calloc(nstrings, sizeof *p->strings);
	p->samples = calloc(np->nstacks + 1, sizeof *p->samples);
	p->sample_ptrs = calloc(np->nstacks + 1, sizeof *p->sample_ptrs);
	p->location_ids = calloc(nids + 1, sizeof *p->location_ids);
	p->values = calloc(2 * np->nstacks + 1, sizeof *p->values);
	p->locations = calloc(np->nframes + 1, sizeof *p->locations);
	p->location_ptrs = calloc(np->nframes + 1, sizeof *p->location_ptrs);
	p->lines = calloc(np->nframes * MAX_INLINED + 1, sizeof *p->lines);
	p->line_ptrs = calloc(np->nframes * MAX_INLINED + 1, sizeof *p->line_ptrs);
	p->functions = calloc(np->nfunctions + 1, sizeof *p->functions);
	p->function_ptrs = calloc(np->nfunctions + 1, sizeof *p->function_ptrs);
	p->mappings = calloc(prof.nmodules + 1, sizeof *p->mappings);
	p->mapping_ptrs = calloc(prof.nmodules + 1, sizeof *p->mapping_ptrs);
	p->labels = calloc(2 * np->nstacks + 1, sizeof *p->labels);
	p->label_ptrs = calloc(2 * np->nstacks + 1, sizeof *p->label_ptrs);
	p->thread_str = calloc(MAX_THREADS, sizeof *p->thread_str);
	return p->labels && p->label_ptrs && p->thread_str && p->strings && p->samples && p->sample_ptrs && p->location_ids && p->values &&
	       p->locations && p->location_ptrs && p->lines && p->line_ptrs && p->functions &&
	       p->function_ptrs && p->mappings && p->mapping_ptrs;
}

static void free_parts(pprof_parts *p)
{
	free(p->strings);
	free(p->samples);
	free(p->sample_ptrs);
	free(p->location_ids);
	free(p->values);
	free(p->locations);
	free(p->location_ptrs);
	free(p->lines);
	free(p->line_ptrs);
	free(p->functions);
	free(p->function_ptrs);
	free(p->mappings);
	free(p->mapping_ptrs);
	free(p->labels);
	free(p->label_ptrs);
	free(p->thread_str);
}

static void fill_mappings(pb_profile *pb, pprof_parts *p)
{
	for (unsigned i = 0; i < prof.nmodules; i++) {
		pb_mapping *m = &p->mappings[i];

		perftools__profiles__mapping__init(m);
		m->id = i + 1;
		m->memory_start = prof.modules[i].lo;
		m->memory_limit = prof.modules[i].hi;
		m->filename = STR_FIXED + (int64_t)i;
		m->has_functions = 1;
		p->strings[STR_FIXED + i] = prof.modules[i].path;
		p->mapping_ptrs[i] = m;
	}
	pb->n_mapping = prof.nmodules;
	pb->mapping = p->mapping_ptrs;
}

static void fill_functions(pb_profile *pb, pprof_parts *p, const named_profile *np)
{
	size_t first = STR_FIXED + prof.nmodules;

	for (size_t i = 0; i < np->nfunctions; i++) {
		pb_function *f = &p->functions[i];

		perftools__profiles__function__init(f);
		f->id = i + 1;
		f->name = f->system_name = (int64_t)(first + i);
		p->strings[first + i] = (char *)np->functions[i];
		p->function_ptrs[i] = f;
	}
	pb->n_function = np->nfunctions;
	pb->function = p->function_ptrs;
}

static void fill_locations(pb_profile *pb, pprof_parts *p, const named_profile *np)
{
	for (size_t i = 0; i < np->nframes; i++) {
		const frame_entry *fe = &np->frames[i];
		pb_location *l = &p->locations[i];

		pb_line **lines = &p->line_ptrs[i * MAX_INLINED];

		perftools__profiles__location__init(l);
		/* Inlined calls first, the function that holds the code last: pprof's order. */
		for (uint32_t k = 0; k < fe->nnames; k++) {
			pb_line *line = &p->lines[i * MAX_INLINED + k];

			perftools__profiles__line__init(line);
			line->function_id = fe->function[k] + 1;
			lines[k] = line;
		}
		l->id = i + 1;
		/* A method handle or a stopped walk has no address of its own. */
		l->address = fe->key & (MANAGED_TAG | STOPPED_TAG) ? 0 : fe->key;
		l->mapping_id = fe->module;
		l->n_line = fe->nnames;
		l->line = lines;
		p->location_ptrs[i] = l;
	}
	pb->n_location = np->nframes;
	pb->location = p->location_ptrs;
}

/* The names of the threads sampled, one string each, after `first`: how many. */
static size_t fill_thread_names(pprof_parts *p, size_t first)
{
	size_t n = 0;

	for (unsigned i = 0; i < MAX_THREADS; i++)
		if (prof.threads[i].tid && prof.threads[i].named) {
			p->thread_str[i] = (int64_t)(first + n);
			p->strings[first + n++] = prof.threads[i].name;
		}
	return n;
}

/* The sample's labels: its thread's id, and its name where known. */
static void label_sample(pb_sample *s, pprof_parts *p, size_t i, pid_t tid)
{
	const thread_entry *e = thread_find(tid);
	pb_label *l = &p->labels[2 * i];

	s->label = &p->label_ptrs[2 * i];
	perftools__profiles__label__init(&l[0]);
	l[0].key = STR_TID;
	l[0].num = tid;
	s->label[s->n_label++] = &l[0];
	if (e && p->thread_str[e - prof.threads]) {
		perftools__profiles__label__init(&l[1]);
		l[1].key = STR_THREAD_COMM;
		l[1].str = p->thread_str[e - prof.threads];
		s->label[s->n_label++] = &l[1];
	}
}

static void fill_samples(pb_profile *pb, pprof_parts *p, const named_profile *np)
{
	uint64_t *ids = p->location_ids;
	int64_t period = 1000000000 / (int64_t)prof.hz;

	for (size_t i = 0; i < np->nstacks; i++) {
		const profile_stack *st = &np->stacks[i];
		pb_sample *s = &p->samples[i];

		perftools__profiles__sample__init(s);
		/* pprof lists a stack leaf first. */
		s->location_id = ids;
		s->n_location_id = st->depth;
		for (uint32_t k = st->depth; k-- > 0;)
			*ids++ = st->frames[k] + 1;
		s->value = &p->values[2 * i];
		s->n_value = 2;
		s->value[0] = (int64_t)st->ticks;
		s->value[1] = (int64_t)st->ticks * period;
		label_sample(s, p, i, st->tid);
		p->sample_ptrs[i] = s;
	}
	pb->n_sample = np->nstacks;
	pb->sample = p->sample_ptrs;
}

static int write_gzip(const char *path, const uint8_t *data, size_t size)
{
	gzFile gz = gzopen(path, "wb");
	int ok;

	if (!gz)
		return 0;
	ok = size <= 0x7fffffffu && gzwrite(gz, data, (unsigned)size) == (int)size;
	return gzclose(gz) == Z_OK && ok;
}

int write_pprof(const char *path, const named_profile *np)
{
	size_t nstrings = STR_FIXED + prof.nmodules + np->nfunctions + prof.nthreads, nids = 0, size;
	pb_value_type types[2], period_type;
	pb_value_type *type_ptrs[2] = { &types[0], &types[1] };
	pprof_parts p = { 0 };
	pb_profile pb;
	uint8_t *buf = NULL;
	int ok = 0;

	for (size_t i = 0; i < np->nstacks; i++)
		nids += np->stacks[i].depth;
	if (!alloc_parts(&p, np, nstrings, nids)) {
		errno = ENOMEM;
		goto out;
	}
	perftools__profiles__profile__init(&pb);
	p.strings[STR_EMPTY] = (char *)"";
	p.strings[STR_SAMPLES] = (char *)"samples";
	p.strings[STR_COUNT] = (char *)"count";
	p.strings[STR_CLOCK] = (char *)(prof.wall_clock ? "wall" : "cpu");
	p.strings[STR_NANOSECONDS] = (char *)"nanoseconds";
	p.strings[STR_TID] = (char *)"tid";
	p.strings[STR_THREAD_COMM] = (char *)"thread_comm";
	for (int i = 0; i < 2; i++)
		perftools__profiles__value_type__init(&types[i]);
	types[0].type = STR_SAMPLES;
	types[0].unit = STR_COUNT;
	types[1].type = STR_CLOCK;
	types[1].unit = STR_NANOSECONDS;
	period_type = types[1];
	pb.n_sample_type = 2;
	pb.sample_type = type_ptrs;
	pb.period_type = &period_type;
	pb.period = 1000000000 / (int64_t)prof.hz;
	pb.default_sample_type = STR_CLOCK;
	fill_mappings(&pb, &p);
	fill_functions(&pb, &p, np);
	fill_locations(&pb, &p, np);
	/* Only the threads named: the table ends where their names do. */
	nstrings = STR_FIXED + prof.nmodules + np->nfunctions;
	nstrings += fill_thread_names(&p, nstrings);
	fill_samples(&pb, &p, np);
	pb.n_string_table = nstrings;
	pb.string_table = p.strings;
	size = perftools__profiles__profile__get_packed_size(&pb);
	buf = malloc(size + 1);
	if (!buf) {
		errno = ENOMEM;
		goto out;
	}
	perftools__profiles__profile__pack(&pb, buf);
	ok = write_gzip(path, buf, size);
out:
	free(buf);
	free_parts(&p);
	return ok;
}
#endif
