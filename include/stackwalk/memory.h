/*
 * memory.h - the sw_memory accessor: every read of target memory.
 *
 * The walker never dereferences a target address itself.  It reads through
 * an sw_memory, whose read callback returns an error instead of faulting.
 * A "direct window" lets the walker read a known-good range (the stack of
 * the thread being walked, a synthetic stack buffer) without a call.
 */
#ifndef STACKWALK_MEMORY_H
#define STACKWALK_MEMORY_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Read `len` bytes at target address `addr` into `buf`; SW_E_BADADDR if unreadable. */
typedef sw_status (*sw_memory_read_fn)(void *ctx, uint64_t addr, void *buf, size_t len);
/* Write `len` bytes to target address `addr`; SW_E_BADADDR or SW_E_READONLY on failure. */
typedef sw_status (*sw_memory_write_fn)(void *ctx, uint64_t addr, const void *buf, size_t len);

typedef struct sw_memory {
	sw_memory_read_fn read;         /* required */
	sw_memory_write_fn write;       /* NULL: target is read-only */
	void *ctx;                      /* passed to read and write */
	/*
	 * Direct window: target bytes [direct_lo, direct_hi) are readable at
	 * host address direct_host + (addr - direct_lo).  Empty when
	 * direct_lo == direct_hi.
	 */
	uint64_t direct_lo, direct_hi;
	unsigned char *direct_host;
	/*
	 * Local memory only: a second range read and written in place (the
	 * runtime's Frame list head, which lives outside the stack).
	 */
	uint64_t extra_lo, extra_hi;
	unsigned flags;                 /* SW_MEMORY_* */
	unsigned reserved;
} sw_memory;

enum {
	/*
	 * Local memory only: addresses outside the window are read with a
	 * fault-safe system call (process_vm_readv) instead of failing.  Such a
	 * read is a syscall: do not set this for walks from signal handlers.
	 */
	SW_MEMORY_PROBE = 1
};

/*
 * sw_memory_init_local - this process's memory.  [lo, hi) (normally the
 * walked thread's stack) is read directly; other addresses give
 * SW_E_BADADDR, or are probed safely with SW_MEMORY_PROBE.  Writes go
 * only to the window and the range given to sw_memory_local_allow.
 */
SW_API sw_status sw_memory_init_local(sw_memory *mem, uint64_t lo, uint64_t hi, unsigned flags);

/*
 * sw_memory_local_allow - let local memory also read and write [lo, hi) in
 * place (one such range; a second call replaces the first).
 */
SW_API sw_status sw_memory_local_allow(sw_memory *mem, uint64_t lo, uint64_t hi);

/*
 * sw_memory_init_buffer - a caller's buffer holding target bytes
 * [base, base + size).  Reads and writes outside it give SW_E_BADADDR.
 */
SW_API sw_status sw_memory_init_buffer(sw_memory *mem, void *buf, size_t size, uint64_t base);

/* sw_memory_read, sw_memory_write - access target memory through `mem`. */
SW_API sw_status sw_memory_read(const sw_memory *mem, uint64_t addr, void *buf, size_t len);
SW_API sw_status sw_memory_write(const sw_memory *mem, uint64_t addr, const void *buf, size_t len);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_MEMORY_H */
