/*
 * remote_map.h - a tool finds a runtime's published code map (remote.h,
 * stackwalk-remote(5)) in a process or core, and uses it: the methods in
 * the tool's code map, the threads' Frame list heads, the methods' names.
 */
#ifndef REMOTE_MAP_H
#define REMOTE_MAP_H

#include <stdint.h>
#include <stackwalk.h>

/* Hard limit on the dynamic symbol and string tables read from one file. */
#define REMOTE_MAP_MAX_TABLE (64u << 20)

struct remote_map {
	uint64_t descriptor;        /* where SW_REMOTE_SYMBOL is in the target, or 0 */
	const char *module;         /* the mapped file that defines it */
	sw_remote *r;               /* what was read, or NULL */
	sw_codemap *map;            /* where its methods are registered, or NULL */
};

/*
 * remote_map_symbol - the value of the dynamic symbol `name` that the ELF
 * file `path` defines, or else of that symbol in its symbol table (a
 * static program's); little-endian ELF32 or ELF64.  0 on success, -1 if
 * the file does not define it or is not such a file.
 */
int remote_map_symbol(const char *path, const char *name, uint64_t *value);

/*
 * remote_map_open - read what is published at rm->descriptor and register
 * its methods in `map`.  SW_OK, or why not (sw_remote_read's errors).
 */
sw_status remote_map_open(struct remote_map *rm, const sw_memory *mem, sw_arch arch, sw_codemap *map);

/* remote_map_close - unregister and free (the map synchronized first). */
void remote_map_close(struct remote_map *rm);

/* remote_map_thread - set t's Frame and exception tracker heads if thread `tid` is published. */
void remote_map_thread(const struct remote_map *rm, int tid, sw_thread *t);

/* remote_map_name - the name of the published method holding pc, and pc's offset in it; NULL if none. */
const char *remote_map_name(const struct remote_map *rm, uint64_t pc, uint64_t *offset);

#endif /* REMOTE_MAP_H */
