/*
 * remote.h - a runtime's code map, seen from another address space.
 *
 * A runtime publishes its code map's methods and its threads' Frame list
 * heads in its own memory, at the layout below, found through one exported
 * symbol, sw_published_codemap (the GDB JIT interface's descriptor and
 * symbol are the model).  A debugger reads them through any sw_memory (a
 * stopped process, a core file) and walks managed frames and Frames as the
 * runtime itself would, with no help from the runtime at that moment.
 * stackwalk-remote(5) documents the layout and its version rule.
 *
 * Every field is a little-endian 64- or 32-bit integer, whatever the
 * target's pointer width, so that one layout serves every architecture:
 *
 *   descriptor (sw_published_codemap; 48 bytes)
 *     0  magic        u32  SW_REMOTE_MAGIC
 *     4  version      u32  SW_REMOTE_VERSION
 *     8  generation   u32  odd while the publisher writes a new snapshot
 *    12  header_size  u32  this descriptor's size in bytes (48 or more)
 *    16  snapshot     u64  address of the current snapshot, 0 for none
 *    24  arch         u32  the publisher's sw_arch
 *    28  reserved     u32
 *    32  reserved     u64 x 2
 *   snapshot
 *     0  nmethods     u32
 *     4  nthreads     u32
 *     8  method_size  u32  bytes per method record (56 or more)
 *    12  thread_size  u32  bytes per thread record (32 or more)
 *    16  method records, by ascending start, then thread records
 *   method record: start u64, size u64, handle u64, parent u64,
 *                  unwind u64 (address of the SWU blob), unwind_size u32,
 *                  flags u32 (SW_CODE_*), name u64 (NUL-terminated, or 0)
 *   thread record: tid u64, frame_head u64, exception_head u64, state u64
 *
 * The publisher never writes the snapshot `snapshot` points to: it builds
 * the next one in a spare buffer, points `snapshot` at it, and only then
 * frees or reuses the old one, with `generation` odd from the first write
 * to the last.  So the snapshot a reader finds is whole even in a core
 * taken mid-update, and a reader of a running process that sees the same
 * generation before and after its reads read one snapshot.
 */
#ifndef STACKWALK_REMOTE_H
#define STACKWALK_REMOTE_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>
#include <stackwalk/memory.h>
#include <stackwalk/codemap.h>

#ifdef __cplusplus
extern "C" {
#endif

#define SW_REMOTE_MAGIC 0x44525753u      /* "SWRD" in memory */
#define SW_REMOTE_VERSION 1u
#define SW_REMOTE_SYMBOL "sw_published_codemap"

/* The descriptor, at the symbol SW_REMOTE_SYMBOL names. */
typedef struct sw_remote_descriptor {
	uint32_t magic;
	uint32_t version;
	uint32_t generation;
	uint32_t header_size;
	uint64_t snapshot;
	uint32_t arch;
	uint32_t reserved0;
	uint64_t reserved[2];
} sw_remote_descriptor;

/* The one descriptor a process has; only a publisher writes it. */
SW_API extern sw_remote_descriptor sw_published_codemap;

/* ---- the runtime's side: publishing --------------------------------------------- */

typedef struct sw_publisher sw_publisher;

/*
 * sw_publisher_create - a publisher whose methods are named by `name`
 * (called with `data` when a method is added; NULL: no names).
 */
SW_API sw_status sw_publisher_create(sw_publisher **out, sw_method_name_fn name, void *data);

/* sw_publisher_destroy - detach, empty the descriptor, free everything. */
SW_API void sw_publisher_destroy(sw_publisher *p);

/*
 * sw_publisher_attach - publish every method `map` adds from now on (an
 * sw_codemap observer; attach before adding methods).  Native code
 * (SW_CODE_NATIVE: a module's functions) is left out: a debugger reads
 * modules from their files.  One publisher per process owns the
 * descriptor: SW_E_EXISTS if another is attached, or this one is.
 */
SW_API sw_status sw_publisher_attach(sw_publisher *p, sw_codemap *map);

/* sw_publisher_detach - stop observing the map and empty the descriptor. */
SW_API sw_status sw_publisher_detach(sw_publisher *p);

/*
 * sw_publisher_thread - publish (or update) thread `tid`: the address of
 * its Frame list head, of its exception tracker head (0: none) and of a
 * word of the runtime's own per-thread state (0: none).  A debugger walks
 * the thread with those heads.  Allocates: call it when a thread starts,
 * never on a walk's path.
 */
SW_API sw_status sw_publisher_thread(sw_publisher *p, uint64_t tid, uint64_t frame_head,
                                     uint64_t exception_head, uint64_t state);

/* sw_publisher_thread_remove - stop publishing thread `tid`; SW_E_NOTFOUND if not published. */
SW_API sw_status sw_publisher_thread_remove(sw_publisher *p, uint64_t tid);

/*
 * sw_publisher_status - SW_OK, or the first error publishing a change of
 * the attached map met (an observer cannot return one).
 */
SW_API sw_status sw_publisher_status(const sw_publisher *p);

/* ---- the debugger's side: reading ----------------------------------------------- */

/* A published method, as read. */
typedef struct sw_remote_method {
	uint64_t start, size;
	uint64_t handle;            /* the runtime's method handle */
	uint64_t parent;            /* a funclet's parent handle, else 0 */
	const uint8_t *unwind;      /* the SWU blob, copied out of the target */
	uint32_t unwind_size;
	uint32_t flags;             /* SW_CODE_* */
	const char *name;           /* copied out of the target; NULL if none */
} sw_remote_method;

/* A published thread. */
typedef struct sw_remote_thread {
	uint64_t tid;
	uint64_t frame_head;        /* target address of its Frame list head */
	uint64_t exception_head;    /* ... of its exception tracker head, or 0 */
	uint64_t state;             /* ... of the runtime's per-thread state word, or 0 */
} sw_remote_thread;

enum {
	/*
	 * The publisher was writing its next snapshot when the target
	 * stopped: what was read is the last whole one, which may lack the
	 * method being added or still hold the one being removed.
	 */
	SW_REMOTE_MID_UPDATE = 1
};

/* Hard limits on what a read accepts (hostile or corrupt targets). */
#define SW_REMOTE_MAX_METHODS (1u << 20)
#define SW_REMOTE_MAX_THREADS (1u << 16)
#define SW_REMOTE_MAX_UNWIND 65536u      /* bytes of one SWU blob */
#define SW_REMOTE_MAX_NAME 256u          /* bytes of one name, its NUL included */
#define SW_REMOTE_TRIES 16u              /* reads of a snapshot that changed meanwhile */

typedef struct sw_remote sw_remote;

/*
 * sw_remote_read - read the snapshot published at target address
 * `descriptor` (SW_REMOTE_SYMBOL's value) through `mem`, copying methods,
 * blobs, names and threads into this process.  SW_E_NOTFOUND: nothing is
 * published there; SW_E_UNSUPPORTED: another version of the layout;
 * SW_E_MISMATCH: published by another architecture than `arch`;
 * SW_E_BADMETA or SW_E_LIMIT: a corrupt snapshot; SW_E_UNSAFE: it changed
 * under every one of SW_REMOTE_TRIES reads; SW_E_BADADDR: unreadable.
 */
SW_API sw_status sw_remote_read(const sw_memory *mem, sw_arch arch, uint64_t descriptor,
                                sw_remote **out);

/* sw_remote_free - free what sw_remote_read made (unregister it from maps first). */
SW_API void sw_remote_free(sw_remote *r);

/* sw_remote_flags - SW_REMOTE_* facts about the read. */
SW_API unsigned sw_remote_flags(const sw_remote *r);

/* sw_remote_method_count, sw_remote_method_at - the methods read, by ascending start. */
SW_API size_t sw_remote_method_count(const sw_remote *r);
SW_API sw_status sw_remote_method_at(const sw_remote *r, size_t index, sw_remote_method *out);

/* sw_remote_find - the method whose code holds `ip`; SW_E_NOTFOUND if none. */
SW_API sw_status sw_remote_find(const sw_remote *r, uint64_t ip, sw_remote_method *out);

/* sw_remote_thread_find - the published thread `tid`; SW_E_NOTFOUND if none. */
SW_API sw_status sw_remote_thread_find(const sw_remote *r, uint64_t tid, sw_remote_thread *out);

/*
 * sw_remote_register - add every method read to `map` (its handle as the
 * method pointer), so that walks over the target's memory with that map
 * find them.  All or nothing: on an error none stays added.
 */
SW_API sw_status sw_remote_register(const sw_remote *r, sw_codemap *map);

/* sw_remote_unregister - remove them again (then sw_codemap_synchronize before sw_remote_free). */
SW_API sw_status sw_remote_unregister(const sw_remote *r, sw_codemap *map);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_REMOTE_H */
