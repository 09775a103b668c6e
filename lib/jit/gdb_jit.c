/*
 * gdb_jit.c - the GDB JIT interface: one in-memory ELF object per method.
 *
 * The descriptor and the function gdb breaks on are process-wide; every
 * sw_gdbjit links its objects onto the one list, under one lock, and
 * calls __jit_debug_register_code after each change as gdb's manual
 * prescribes.  Each registrar also keeps its own objects, by code start,
 * so that a removal from its code map finds the object to unlink.
 */
#include <pthread.h>
#include <stdlib.h>
#include "util.h"
#include "jit_elf.h"
#include "jit_tool.h"

SW_API sw_gdbjit_descriptor __jit_debug_descriptor = { 1, SW_GDBJIT_NOACTION, NULL, NULL };

/*
 * gdb puts a breakpoint here.  It must stay a real call that the compiler
 * can neither inline nor drop, so it has a body it cannot see through.
 */
SW_API __attribute__((noinline, used)) void __jit_debug_register_code(void)
{
	__asm__ __volatile__("" ::: "memory");
}

/* Serializes every change to __jit_debug_descriptor. */
static pthread_mutex_t descriptor_lock = PTHREAD_MUTEX_INITIALIZER;

/* One registered object; `entry` first, so gdb's pointer is ours too. */
struct gdbjit_object {
	sw_gdbjit_entry entry;
	uint64_t start;
	struct gdbjit_object *next;     /* the registrar's own list */
	uint8_t *elf;
};

struct sw_gdbjit {
	struct swi_jit_tool tool;
	pthread_mutex_t lock;           /* objects (direct adds and the observer may race) */
	struct gdbjit_object *objects;
};

static void descriptor_link(struct gdbjit_object *o)
{
	pthread_mutex_lock(&descriptor_lock);
	o->entry.prev_entry = NULL;
	o->entry.next_entry = __jit_debug_descriptor.first_entry;
	if (o->entry.next_entry)
		o->entry.next_entry->prev_entry = &o->entry;
	__jit_debug_descriptor.first_entry = &o->entry;
	__jit_debug_descriptor.relevant_entry = &o->entry;
	__jit_debug_descriptor.action_flag = SW_GDBJIT_REGISTER;
	__jit_debug_register_code();
	__jit_debug_descriptor.action_flag = SW_GDBJIT_NOACTION;
	pthread_mutex_unlock(&descriptor_lock);
}

static void descriptor_unlink(struct gdbjit_object *o)
{
	pthread_mutex_lock(&descriptor_lock);
	/* gdb reads the entry while it is still on the list. */
	__jit_debug_descriptor.relevant_entry = &o->entry;
	__jit_debug_descriptor.action_flag = SW_GDBJIT_UNREGISTER;
	__jit_debug_register_code();
	if (o->entry.prev_entry)
		o->entry.prev_entry->next_entry = o->entry.next_entry;
	else
		__jit_debug_descriptor.first_entry = o->entry.next_entry;
	if (o->entry.next_entry)
		o->entry.next_entry->prev_entry = o->entry.prev_entry;
	__jit_debug_descriptor.relevant_entry = NULL;
	__jit_debug_descriptor.action_flag = SW_GDBJIT_NOACTION;
	pthread_mutex_unlock(&descriptor_lock);
}

static void object_free(struct gdbjit_object *o)
{
	free(o->elf);
	free(o);
}

SW_API sw_status sw_gdbjit_create(sw_gdbjit **out, sw_method_name_fn name, void *data)
{
	sw_gdbjit *g;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	g = calloc(1, sizeof(*g));
	if (!g)
		return SW_E_NOMEM;
	if (pthread_mutex_init(&g->lock, NULL) != 0) {
		free(g);
		return SW_E_NOMEM;
	}
	g->tool.name = name;
	g->tool.name_data = data;
	*out = g;
	return SW_OK;
}

SW_API sw_status sw_gdbjit_add(sw_gdbjit *g, const sw_code_info *info, const char *name)
{
	struct gdbjit_object *o;
	size_t size;
	sw_status st;

	if (!g || !info || !name || !info->unwind)
		return SW_E_INVAL;
	o = calloc(1, sizeof(*o));
	if (!o)
		return SW_E_NOMEM;
	st = swi_jit_elf_build(info, name, SWI_JIT_ELF_DEBUG_FRAME, &o->elf, &size);
	if (st != SW_OK) {
		free(o);
		return st;
	}
	o->entry.symfile_addr = (const char *)o->elf;
	o->entry.symfile_size = size;
	o->start = info->start;
	pthread_mutex_lock(&g->lock);
	for (struct gdbjit_object *p = g->objects; p; p = p->next) {
		if (p->start == info->start) {
			pthread_mutex_unlock(&g->lock);
			object_free(o);
			return SW_E_EXISTS;
		}
	}
	o->next = g->objects;
	g->objects = o;
	descriptor_link(o);
	pthread_mutex_unlock(&g->lock);
	return SW_OK;
}

SW_API sw_status sw_gdbjit_remove(sw_gdbjit *g, uint64_t start)
{
	struct gdbjit_object *o = NULL;

	if (!g)
		return SW_E_INVAL;
	pthread_mutex_lock(&g->lock);
	for (struct gdbjit_object **p = &g->objects; *p; p = &(*p)->next) {
		if ((*p)->start == start) {
			o = *p;
			*p = o->next;
			break;
		}
	}
	if (o)
		descriptor_unlink(o);
	pthread_mutex_unlock(&g->lock);
	if (!o)
		return SW_E_NOTFOUND;
	object_free(o);
	return SW_OK;
}

static void observe(void *data, sw_codemap_event event, const sw_code_info *info)
{
	sw_gdbjit *g = data;
	char name[256];
	sw_status st;

	if (event == SW_CODEMAP_ADDED) {
		swi_jit_tool_name(&g->tool, info, name, sizeof(name));
		st = sw_gdbjit_add(g, info, name);
	} else {
		st = sw_gdbjit_remove(g, info->start);
	}
	swi_jit_tool_failed(&g->tool, st);
}

SW_API sw_status sw_gdbjit_attach(sw_gdbjit *g, sw_codemap *map)
{
	return g ? swi_jit_tool_attach(&g->tool, map, observe, g) : SW_E_INVAL;
}

SW_API sw_status sw_gdbjit_detach(sw_gdbjit *g)
{
	return g ? swi_jit_tool_detach(&g->tool) : SW_E_INVAL;
}

SW_API sw_status sw_gdbjit_status(const sw_gdbjit *g)
{
	return g ? g->tool.status : SW_E_INVAL;
}

SW_API void sw_gdbjit_destroy(sw_gdbjit *g)
{
	if (!g)
		return;
	(void)swi_jit_tool_detach(&g->tool);
	while (g->objects) {
		struct gdbjit_object *o = g->objects;

		g->objects = o->next;
		descriptor_unlink(o);
		object_free(o);
	}
	pthread_mutex_destroy(&g->lock);
	free(g);
}
