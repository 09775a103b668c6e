/*
 * jit_lists.c - the GDB JIT lists of a target in a tool's code map (see
 * jit_lists.h).  An object whose code overlaps one registered already
 * (a JIT that registered the same code twice) stays out of the map and
 * still names its frames.
 */
#include <stdlib.h>
#include "jit_lists.h"

sw_status jit_lists_add(struct jit_lists *jl, const sw_memory *mem, sw_arch arch, uint64_t descriptor,
                        const char *module, sw_codemap *map)
{
	const sw_gdbjit_object *o;
	struct jit_list *l;
	sw_gdbjit_list *list = NULL;
	sw_status st;
	size_t n = 0;

	for (size_t i = 0; i < jl->count; i++)
		if (jl->lists[i].descriptor == descriptor)
			return jl->lists[i].status;
	if (jl->count == JIT_LISTS_MAX)
		return SW_E_LIMIT;
	st = sw_gdbjit_read(mem, arch, descriptor, 0, &list);
	if (!list)
		return st;
	l = &jl->lists[jl->count++];
	*l = (struct jit_list){ descriptor, module, list, NULL, st, 0, 0 };
	jl->map = map;
	sw_gdbjit_list_objects(list, &o, &n);
	if (n && !(l->registered = calloc(n, 1)))
		return SW_E_NOMEM;
	l->objects = n;
	for (size_t i = 0; i < n; i++) {
		if (!o[i].module)
			continue;
		l->loaded++;
		l->registered[i] = sw_module_register(o[i].module, map) == SW_OK;
	}
	return st;
}

const char *jit_lists_name(const struct jit_lists *jl, uint64_t pc, uint64_t *offset)
{
	const char *name;

	for (size_t i = 0; i < jl->count; i++)
		if (sw_gdbjit_list_symbolize(jl->lists[i].list, pc, &name, offset) == SW_OK)
			return name;
	return NULL;
}

void jit_lists_close(struct jit_lists *jl)
{
	for (size_t i = 0; i < jl->count; i++) {
		const sw_gdbjit_object *o;
		size_t n = 0;

		sw_gdbjit_list_objects(jl->lists[i].list, &o, &n);
		for (size_t k = 0; k < n; k++)
			if (jl->lists[i].registered && jl->lists[i].registered[k])
				sw_module_unregister(o[k].module, jl->map);
	}
	if (jl->map)
		sw_codemap_synchronize(jl->map);
	for (size_t i = 0; i < jl->count; i++) {
		sw_gdbjit_list_free(jl->lists[i].list);
		free(jl->lists[i].registered);
	}
	jl->count = 0;
	jl->map = NULL;
}
