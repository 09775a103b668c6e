/*
 * codemap.h - sw_codemap: from an instruction pointer to its method.
 *
 * The CLR's code manager and nibble map in one hash table.  A JIT adds each
 * method as it emits it and removes it when the code is freed.  Lookups are
 * lock-free, allocate nothing and make no system call, so signal handlers
 * may run them; they stay correct while other threads add and remove
 * methods.  Removed entries are reclaimed once no reader can see them.
 */
#ifndef STACKWALK_CODEMAP_H
#define STACKWALK_CODEMAP_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct sw_codemap sw_codemap;

enum {
	SW_CODE_FUNCLET = 1,    /* a funclet (handler, finally, filter) of `parent` */
	SW_CODE_FILTER  = 2,    /* a filter funclet (with SW_CODE_FUNCLET) */
	SW_CODE_NATIVE  = 4,    /* native code (an ELF module's function): its SWU came from CFI */
	SW_CODE_ANALYZED = 8,   /* native code whose SWU came from instruction analysis, not CFI */
	SW_CODE_SIGNAL_TRAMPOLINE = 16, /* the kernel's signal return trampoline (__restore_rt) */
	SW_CODE_OUTERMOST = 32, /* a thread's first function (_start, clone's child): nothing called it */
	SW_CODE_NOT_IMPORTED = 64, /* a lazy module's function whose rules are not imported yet:
	                            * no blob; a walk stops there with SW_E_NOTIMPORTED */
	SW_CODE_PERSONALITY = 128 /* native code whose CFI names a personality routine with work
	                           * there (C++ destructors or catches, C cleanups): exception
	                           * dispatch cannot run it and stops (SW_E_UNSUPPORTED) */
};

/* What a lookup returns (the CLR's EECodeInfo). */
typedef struct sw_code_info {
	void *method;               /* the runtime's method handle (its MethodDesc) */
	uint64_t start;             /* first byte of the method's code (target address) */
	uint64_t size;              /* code size in bytes; non-zero */
	const uint8_t *unwind;      /* SWU blob (see swu(5)) */
	uint32_t unwind_size;       /* its size in bytes */
	uint32_t flags;             /* SW_CODE_* */
	void *parent;               /* for a funclet: the parent method's handle */
} sw_code_info;

/* sw_codemap_create - an empty code map. */
SW_API sw_status sw_codemap_create(sw_codemap **out);

/* sw_codemap_destroy - free the map; no reader may be using it. */
SW_API void sw_codemap_destroy(sw_codemap *map);

/*
 * sw_codemap_add - register a method.  The SWU blob is validated and copied
 * (the caller may free its own copy).  SW_E_EXISTS if [start, start + size)
 * overlaps a registered method; SW_E_BADMETA if the blob is invalid.
 */
SW_API sw_status sw_codemap_add(sw_codemap *map, const sw_code_info *info);

/*
 * sw_codemap_remove - unregister the method that starts at `start`.
 * Readers that already found it may go on using it until they leave their
 * read section; its memory is reclaimed later (see sw_codemap_synchronize).
 */
SW_API sw_status sw_codemap_remove(sw_codemap *map, uint64_t start);

/*
 * sw_codemap_find - the method containing `ip`, copied into `out`;
 * SW_E_NOTFOUND if none.  Async-signal-safe.  out->unwind stays valid until
 * the method is removed and a later sw_codemap_synchronize returns, or for
 * as long as the caller holds a read section.
 */
SW_API sw_status sw_codemap_find(const sw_codemap *map, uint64_t ip, sw_code_info *out);

/*
 * sw_codemap_find_batch - look up n IPs at once: out[i] is what
 * sw_codemap_find(map, ips[i], &out[i]) gives, or all zeros (size 0) when
 * no method holds ips[i].  *found, when found is not NULL, is how many were
 * found.  The lookups overlap their loads from memory, so that in a map
 * larger than the caches a batch costs a fraction of as many lone lookups
 * (a profiler resolving the IPs of its samples, say).  SW_E_INVAL for a
 * NULL map, or NULL ips or out with n > 0.  Async-signal-safe; out[i].unwind
 * stays valid as sw_codemap_find's does.
 */
SW_API sw_status sw_codemap_find_batch(const sw_codemap *map, const uint64_t *ips, size_t n,
                                       sw_code_info *out, size_t *found);

/*
 * sw_codemap_read_begin, sw_codemap_read_end - a read section: entries
 * found inside it are not reclaimed before it ends.  Async-signal-safe and
 * nestable; the token from begin is given back to end.  Walks hold one for
 * their whole length.
 */
SW_API unsigned sw_codemap_read_begin(const sw_codemap *map);
SW_API void sw_codemap_read_end(const sw_codemap *map, unsigned token);

/*
 * sw_codemap_synchronize - wait until every read section that began before
 * this call has ended, then free what was removed.  Must not be called
 * from inside a read section (a walk callback) of the same map.
 */
SW_API void sw_codemap_synchronize(sw_codemap *map);

/* sw_codemap_count - how many methods are registered. */
SW_API size_t sw_codemap_count(const sw_codemap *map);

/*
 * Observers: tools that must hear of every method as it comes and goes
 * (perf's map and jitdump files, gdb's JIT interface).  The map calls
 * `notify` after each successful add and remove, from the writer's
 * thread, with the writers' lock held: notifications arrive one at a
 * time, in the order of the changes, and an observer must not add or
 * remove methods of the same map.  For an add, info->unwind is the map's
 * copy of the blob; for a remove it is NULL.  Never on the walk path.
 */
typedef enum sw_codemap_event {
	SW_CODEMAP_ADDED = 1,
	SW_CODEMAP_REMOVED = 2
} sw_codemap_event;

typedef struct sw_codemap_observer {
	void (*notify)(void *data, sw_codemap_event event, const sw_code_info *info);
	void *data;
	struct sw_codemap_observer *next;       /* the map's link: leave it alone */
} sw_codemap_observer;

/*
 * sw_codemap_observe - start calling obs->notify on later changes (methods
 * already registered are not replayed).  The observer stays the caller's
 * and must live until sw_codemap_unobserve.  SW_E_EXISTS if already there.
 */
SW_API sw_status sw_codemap_observe(sw_codemap *map, sw_codemap_observer *obs);

/* sw_codemap_unobserve - stop; SW_E_NOTFOUND if obs was not observing. */
SW_API sw_status sw_codemap_unobserve(sw_codemap *map, sw_codemap_observer *obs);

/*
 * A method's name, for the tools that show one: write it, NUL-terminated,
 * into buf (cap bytes).  The runtime knows its names; the map does not.
 */
typedef void (*sw_method_name_fn)(void *data, const sw_code_info *info, char *buf, size_t cap);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_CODEMAP_H */
