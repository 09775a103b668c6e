/*
 * jit_tool.h (internal) - what sw_perf and sw_gdbjit share: the code map
 * they observe, the runtime's names for methods, and the first error an
 * observed method met.
 */
#ifndef SW_LIB_JIT_TOOL_H
#define SW_LIB_JIT_TOOL_H

#include <inttypes.h>
#include <stdio.h>
#include <stackwalk/codemap.h>

struct swi_jit_tool {
	sw_method_name_fn name;
	void *name_data;
	sw_codemap *map;                /* attached to, or NULL */
	sw_codemap_observer observer;
	sw_status status;               /* the first error an observed method met */
};

/* The runtime's name for the method, or one made from its address. */
static inline void swi_jit_tool_name(const struct swi_jit_tool *t, const sw_code_info *info,
                                     char *buf, size_t cap)
{
	buf[0] = '\0';
	if (t->name)
		t->name(t->name_data, info, buf, cap);
	buf[cap - 1] = '\0';
	if (!buf[0])
		snprintf(buf, cap, "jit_%" PRIx64, info->start);
}

/* Keep st if it is the first error an observed method met. */
static inline void swi_jit_tool_failed(struct swi_jit_tool *t, sw_status st)
{
	if (st != SW_OK && t->status == SW_OK)
		t->status = st;
}

/* Observe map with notify(data, ...); SW_E_EXISTS when attached already. */
static inline sw_status swi_jit_tool_attach(struct swi_jit_tool *t, sw_codemap *map,
                                            void (*notify)(void *, sw_codemap_event,
                                                           const sw_code_info *),
                                            void *data)
{
	sw_status st;

	if (!map)
		return SW_E_INVAL;
	if (t->map)
		return SW_E_EXISTS;
	t->observer = (sw_codemap_observer){ notify, data, NULL };
	st = sw_codemap_observe(map, &t->observer);
	if (st == SW_OK)
		t->map = map;
	return st;
}

/* Stop observing; SW_E_NOTFOUND when not attached. */
static inline sw_status swi_jit_tool_detach(struct swi_jit_tool *t)
{
	sw_status st;

	if (!t->map)
		return SW_E_NOTFOUND;
	st = sw_codemap_unobserve(t->map, &t->observer);
	t->map = NULL;
	return st;
}

#endif /* SW_LIB_JIT_TOOL_H */
