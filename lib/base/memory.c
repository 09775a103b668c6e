/*
 * memory.c - the built-in memory accessors: this process, and a buffer.
 *
 * The walker reads the direct window inline (swi_read); these callbacks
 * handle everything outside it.
 */
#define _GNU_SOURCE
#include "config.h"
#include <unistd.h>
#ifdef HAVE_SYS_UIO_H
#include <sys/uio.h>
#endif
#include "util.h"

static int range_contains(uint64_t lo, uint64_t hi, uint64_t addr, size_t len)
{
	uint64_t end = addr + len;

	return end >= addr && addr >= lo && end <= hi;
}

/* Fault-safe read of our own memory: the kernel reports a bad address. */
static sw_status local_probe_read(uint64_t addr, void *buf, size_t len)
{
#ifdef HAVE_PROCESS_VM_READV
	struct iovec local = { buf, len };
	struct iovec remote = { (void *)(uintptr_t)addr, len };
	ssize_t n = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);

	return n == (ssize_t)len ? SW_OK : SW_E_BADADDR;
#else
	SWI_UNUSED(addr); SWI_UNUSED(buf); SWI_UNUSED(len);
	return SW_E_BADADDR;
#endif
}

static sw_status local_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	const sw_memory *m = ctx;

	if (range_contains(m->direct_lo, m->direct_hi, addr, len) ||
	    range_contains(m->extra_lo, m->extra_hi, addr, len)) {
		memcpy(buf, (const void *)(uintptr_t)addr, len);
		return SW_OK;
	}
	if (m->flags & SW_MEMORY_PROBE)
		return local_probe_read(addr, buf, len);
	return SW_E_BADADDR;
}

static sw_status local_write(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	const sw_memory *m = ctx;

	if (range_contains(m->direct_lo, m->direct_hi, addr, len) ||
	    range_contains(m->extra_lo, m->extra_hi, addr, len)) {
		memcpy((void *)(uintptr_t)addr, buf, len);
		return SW_OK;
	}
	return SW_E_READONLY;
}

/*
 * What both built-in accessors set up: `mem` is its own callbacks' context,
 * and [lo, hi), at host address `host`, is the window swi_read reads inline.
 */
static void memory_init(sw_memory *mem, sw_memory_read_fn read, sw_memory_write_fn write,
                        uint64_t lo, uint64_t hi, void *host)
{
	memset(mem, 0, sizeof *mem);
	mem->read = read;
	mem->write = write;
	mem->ctx = mem;
	mem->direct_lo = lo;
	mem->direct_hi = hi;
	mem->direct_host = host;
}

SW_API sw_status sw_memory_init_local(sw_memory *mem, uint64_t lo, uint64_t hi, unsigned flags)
{
	if (!mem || lo > hi || (flags & ~(unsigned)SW_MEMORY_PROBE))
		return SW_E_INVAL;
	if (hi > UINTPTR_MAX)
		return SW_E_INVAL;
	memory_init(mem, local_read, local_write, lo, hi, (void *)(uintptr_t)lo);
	mem->flags = flags;
	return SW_OK;
}

int swi_memory_is_local(const sw_memory *m)
{
	return m->read == local_read;
}

SW_API sw_status sw_memory_local_allow(sw_memory *mem, uint64_t lo, uint64_t hi)
{
	if (!mem || mem->read != local_read || lo > hi || hi > UINTPTR_MAX)
		return SW_E_INVAL;
	mem->extra_lo = lo;
	mem->extra_hi = hi;
	return SW_OK;
}

/* A buffer: the direct window covers all of it, so the callbacks only refuse. */
static sw_status buffer_read(void *ctx, uint64_t addr, void *buf, size_t len)
{
	SWI_UNUSED(ctx); SWI_UNUSED(addr); SWI_UNUSED(buf); SWI_UNUSED(len);
	return SW_E_BADADDR;
}

static sw_status buffer_write(void *ctx, uint64_t addr, const void *buf, size_t len)
{
	const sw_memory *m = ctx;

	if (!range_contains(m->direct_lo, m->direct_hi, addr, len))
		return SW_E_BADADDR;
	memcpy(m->direct_host + (addr - m->direct_lo), buf, len);
	return SW_OK;
}

SW_API sw_status sw_memory_init_buffer(sw_memory *mem, void *buf, size_t size, uint64_t base)
{
	if (!mem || (!buf && size) || base + size < base)
		return SW_E_INVAL;
	memory_init(mem, buffer_read, buffer_write, base, base + size, buf);
	return SW_OK;
}

SW_API sw_status sw_memory_read(const sw_memory *mem, uint64_t addr, void *buf, size_t len)
{
	if (!mem || (!buf && len))
		return SW_E_INVAL;
	return swi_read(mem, addr, buf, len);
}

SW_API sw_status sw_memory_write(const sw_memory *mem, uint64_t addr, const void *buf, size_t len)
{
	if (!mem || (!buf && len))
		return SW_E_INVAL;
	if (!mem->write)
		return SW_E_READONLY;
	return mem->write(mem->ctx, addr, buf, len);
}
