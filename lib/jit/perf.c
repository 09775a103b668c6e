/*
 * perf.c - sw_perf: perf-PID.map and jit-PID.dump as methods come.
 *
 * The files themselves are perf_map.c's and jitdump.c's; this is the
 * object a runtime holds, its code map observer, and the lock that keeps
 * records whole when methods are registered from several threads.
 */
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>
#include "util.h"
#include "array_grow.h"
#include "perf_files.h"
#include "jit_tool.h"

/* Code written so far, by start: what a new method's mapping must not cover. */
struct code_range {
	uint64_t start, end;
};

struct sw_perf {
	unsigned what;                  /* SW_PERF_* */
	struct swi_perf_map map_file;
	struct swi_jitdump dump;
	struct swi_jit_tool tool;
	pthread_mutex_t lock;           /* the files */
	struct code_range *written;     /* sorted by start (under lock) */
	size_t nwritten, capwritten;
};

/* Index of the first range starting at or after `addr`. */
static size_t first_at_or_after(const sw_perf *p, uint64_t addr)
{
	size_t i;

	SWI_SEARCH(i, p->nwritten, mid, p->written[mid].start < addr);
	return i;
}

/*
 * Free bytes after the method's code rounded up to 8, up to the next code
 * written so far.  Code written later may still land there; a JIT that
 * wants perf to unwind its methods leaves room after each one.
 */
static uint64_t room_after(const sw_perf *p, const sw_code_info *info)
{
	uint64_t end = info->start + ((info->size + 7) & ~(uint64_t)7);
	size_t i = first_at_or_after(p, info->start + 1);

	if (i == p->nwritten)
		return UINT64_MAX;
	return p->written[i].start > end ? p->written[i].start - end : 0;
}

static sw_status remember_range(sw_perf *p, const sw_code_info *info)
{
	size_t i = first_at_or_after(p, info->start);

	if (swi_array_grow((void **)&p->written, &p->capwritten, p->nwritten + 1,
	                   sizeof *p->written) != SW_OK)
		return SW_E_NOMEM;
	memmove(&p->written[i + 1], &p->written[i], (p->nwritten - i) * sizeof(*p->written));
	p->written[i] = (struct code_range){ info->start, info->start + info->size };
	p->nwritten++;
	return SW_OK;
}

SW_API sw_status sw_perf_create(sw_perf **out, unsigned what, const char *dir,
                                sw_method_name_fn name, void *data)
{
	sw_perf *p;
	sw_status st = SW_OK;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!what || (what & ~(unsigned)(SW_PERF_MAP | SW_PERF_JITDUMP)))
		return SW_E_INVAL;
	if (!dir)
		dir = "/tmp";
	p = calloc(1, sizeof(*p));
	if (!p)
		return SW_E_NOMEM;
	if (pthread_mutex_init(&p->lock, NULL) != 0) {
		free(p);
		return SW_E_NOMEM;
	}
	p->what = what;
	p->tool.name = name;
	p->tool.name_data = data;
	if (what & SW_PERF_MAP)
		st = swi_perf_map_open(&p->map_file, dir, (long)getpid());
	if (st == SW_OK && (what & SW_PERF_JITDUMP))
		st = swi_jitdump_open(&p->dump, dir, (long)getpid());
	if (st != SW_OK) {
		sw_perf_destroy(p);
		return st;
	}
	*out = p;
	return SW_OK;
}

SW_API sw_status sw_perf_add(sw_perf *p, const sw_code_info *info, const char *name)
{
	sw_status st = SW_OK;

	if (!p || !info || !name || !info->size)
		return SW_E_INVAL;
	if ((p->what & SW_PERF_JITDUMP) && !info->unwind)
		return SW_E_INVAL;
	pthread_mutex_lock(&p->lock);
	if (p->what & SW_PERF_JITDUMP) {
		st = swi_jitdump_add(&p->dump, info, name, room_after(p, info));
		if (st == SW_OK)
			st = remember_range(p, info);
	}
	if (st == SW_OK && (p->what & SW_PERF_MAP))
		st = swi_perf_map_add(&p->map_file, info->start, info->size, name);
	pthread_mutex_unlock(&p->lock);
	return st;
}

static void observe(void *data, sw_codemap_event event, const sw_code_info *info)
{
	sw_perf *p = data;
	char name[256];

	/* perf has no record for code that went away; a later load at the
	 * same address supersedes the earlier one. */
	if (event != SW_CODEMAP_ADDED)
		return;
	swi_jit_tool_name(&p->tool, info, name, sizeof(name));
	swi_jit_tool_failed(&p->tool, sw_perf_add(p, info, name));
}

SW_API sw_status sw_perf_attach(sw_perf *p, sw_codemap *map)
{
	return p ? swi_jit_tool_attach(&p->tool, map, observe, p) : SW_E_INVAL;
}

SW_API sw_status sw_perf_detach(sw_perf *p)
{
	return p ? swi_jit_tool_detach(&p->tool) : SW_E_INVAL;
}

SW_API const char *sw_perf_path(const sw_perf *p, unsigned what)
{
	if (!p || !(p->what & what))
		return NULL;
	if (what == SW_PERF_MAP)
		return p->map_file.path;
	if (what == SW_PERF_JITDUMP)
		return p->dump.path;
	return NULL;
}

SW_API sw_status sw_perf_status(const sw_perf *p)
{
	return p ? p->tool.status : SW_E_INVAL;
}

SW_API void sw_perf_destroy(sw_perf *p)
{
	if (!p)
		return;
	(void)swi_jit_tool_detach(&p->tool);
	swi_perf_map_close(&p->map_file);
	swi_jitdump_close(&p->dump);
	free(p->written);
	pthread_mutex_destroy(&p->lock);
	free(p);
}
