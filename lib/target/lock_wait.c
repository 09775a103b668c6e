/*
 * lock_wait.c - which lock a blocked thread waits on, and who owns it.
 *
 * glibc blocks a thread that cannot take a lock in a futex wait on a word
 * of the lock itself:
 *  - a mutex (struct __pthread_mutex_s): on __lock, its first word, with
 *    the owner's thread id in __owner, the third int (offset 8), on every
 *    architecture;
 *  - an rwlock (struct __pthread_rwlock_arch_t): a reader on
 *    __wrphase_futex (offset 8), a writer on __writers_futex (offset 12)
 *    while another writer holds the lock, or on __wrphase_futex while
 *    readers do.  __readers (offset 0) has PTHREAD_RWLOCK_WRLOCKED (2) set
 *    while a writer holds it, and that writer's id is __cur_writer (whose
 *    offset differs: the arch tables say it).
 * The futex word's address is the futex system call's first argument.
 */
#include "config.h"
#include <string.h>
#include "arch.h"
#include "lock_wait.h"

#define HINT_MAX_FRAMES 16              /* frames examined from the innermost */

#define RWLOCK_WRPHASE_FUTEX 8
#define RWLOCK_WRITERS_FUTEX 12
#define RWLOCK_WRLOCKED 2u
#define MUTEX_OWNER 8

/* The function name without glibc's decorations: "__GI___libc_read" -> "read". */
static const char *plain_name(const char *s)
{
	for (;;) {
		while (*s == '_')
			s++;
		if (strncmp(s, "GI_", 3) == 0)
			s += 3;
		else if (strncmp(s, "libc_", 5) == 0)
			s += 5;
		else
			return s;
	}
}

static int in_list(const char *name, const char *const *list)
{
	for (; *list; list++)
		if (strcmp(name, *list) == 0)
			return 1;
	return 0;
}

static enum swi_wait_hint hint_of(const char *fn)
{
	static const char *const io[] = {
		"read", "write", "pread64", "pwrite64", "readv", "writev", "preadv", "pwritev",
		"preadv2", "pwritev2", "poll", "ppoll", "select", "pselect", "pselect6",
		"epoll_wait", "epoll_pwait", "epoll_pwait2", "accept", "accept4", "recv",
		"recvfrom", "recvmsg", "recvmmsg", "send", "sendto", "sendmsg", "connect",
		"open", "open64", "openat", "openat64", "fsync", "fdatasync", "flock",
		"io_getevents", "msgrcv", "msgsnd", "wait4", "waitpid", "waitid", "splice",
		"sendfile", "sendfile64", NULL
	};
	static const char *const idle[] = {
		"nanosleep", "clock_nanosleep", "sleep", "usleep", "pause", "sigsuspend",
		"sigwait", "sigwaitinfo", "sigtimedwait", "pthread_join", "pthread_timedjoin_np",
		"pthread_clockjoin_np", "sem_wait", "sem_timedwait", "sem_clockwait", NULL
	};
	const char *n = plain_name(fn);

	if (strstr(n, "rwlock_")) {
		if (strstr(n, "wrlock"))
			return SWI_WAIT_RWLOCK_WRITE;
		if (strstr(n, "rdlock"))
			return SWI_WAIT_RWLOCK_READ;
	}
	if (strstr(n, "mutex_lock") || strstr(n, "mutex_timedlock") ||
	    strstr(n, "mutex_clocklock") || strstr(n, "mutex_cond_lock") ||
	    strcmp(n, "lll_lock_wait") == 0)
		return SWI_WAIT_MUTEX;
	if (strstr(n, "cond_wait") || strstr(n, "cond_timedwait") || strstr(n, "cond_clockwait") ||
	    in_list(n, idle))
		return SWI_WAIT_IDLE;
	if (in_list(n, io))
		return SWI_WAIT_IO;
	return SWI_WAIT_NONE;
}

enum swi_wait_hint swi_wait_hint(const struct swi_frame *frames, size_t count)
{
	for (size_t i = 0; i < count && i < HINT_MAX_FRAMES; i++) {
		enum swi_wait_hint h;

		if (frames[i].function && (h = hint_of(frames[i].function)) != SWI_WAIT_NONE)
			return h;
	}
	return SWI_WAIT_NONE;
}

/* Is system call `nr` futex, by one of the architecture's numbers for it? */
static int is_futex_call(const struct swi_arch *a, long nr)
{
	for (unsigned i = 0; i < a->nfutex_syscalls; i++)
		if (nr == a->futex_syscalls[i])
			return 1;
	return 0;
}

uint64_t swi_futex_address(sw_arch arch, const sw_context *ctx,
                           const struct swi_thread_state *live)
{
	const struct swi_arch *a = swi_arch_get(arch);
	uint64_t v = 0;

	if (!a)
		return 0;
	if (live)
		return is_futex_call(a, live->syscall) ? live->arg0 : 0;
	if (sw_context_get(ctx, a->syscall_arg_regs[0], &v) != SW_OK)
		return 0;
	return v;
}

static int read_u32(const sw_memory *mem, uint64_t addr, uint32_t *v)
{
	unsigned char b[4];

	if (sw_memory_read(mem, addr, b, sizeof b) != SW_OK)
		return -1;
	*v = (uint32_t)b[0] | (uint32_t)b[1] << 8 | (uint32_t)b[2] << 16 | (uint32_t)b[3] << 24;
	return 0;
}

static int known_tid(const int *tids, size_t n, uint32_t tid)
{
	for (size_t i = 0; i < n; i++)
		if ((uint32_t)tids[i] == tid && tid != 0)
			return 1;
	return 0;
}

/* The writer of the rwlock at `base`, 0 if none holds it; -1 if unreadable. */
static int rwlock_writer(const sw_memory *mem, sw_arch arch, uint64_t base, uint32_t *writer)
{
	const struct swi_arch *a = swi_arch_get(arch);
	uint32_t readers;

	if (!a || read_u32(mem, base, &readers) != 0 ||
	    read_u32(mem, base + a->rwlock_cur_writer_offset, writer) != 0)
		return -1;
	if (!(readers & RWLOCK_WRLOCKED))
		*writer = 0;
	return 0;
}

/* The rwlock whose __wrphase_futex is `futex`: the readers' futex, and a writer's behind readers. */
static sw_status rwlock_by_wrphase(const sw_memory *mem, sw_arch arch, uint64_t futex,
                                   sw_lock_kind k, uint64_t *lock, sw_lock_kind *kind, int *owner)
{
	uint32_t v;

	if (futex < RWLOCK_WRPHASE_FUTEX ||
	    rwlock_writer(mem, arch, futex - RWLOCK_WRPHASE_FUTEX, &v) != 0)
		return SW_E_BADADDR;
	*kind = k;
	*lock = futex - RWLOCK_WRPHASE_FUTEX;
	*owner = (int)v;
	return SW_OK;
}

sw_status swi_lock_read(const sw_memory *mem, sw_arch arch, enum swi_wait_hint hint,
                        uint64_t futex, const int *tids, size_t ntids, uint64_t *lock,
                        sw_lock_kind *kind, int *owner)
{
	uint32_t v = 0;

	*lock = 0;
	*kind = SW_LOCK_NONE;
	*owner = 0;
	if (!futex)
		return SW_E_BADADDR;
	switch (hint) {
	case SWI_WAIT_MUTEX:
		if (read_u32(mem, futex + MUTEX_OWNER, &v) != 0)
			return SW_E_BADADDR;
		*kind = SW_LOCK_MUTEX;
		*lock = futex;
		*owner = (int)v;
		return SW_OK;
	case SWI_WAIT_RWLOCK_WRITE:
		/*
		 * Behind a writer the futex is __writers_futex; behind readers,
		 * __wrphase_futex.  Both words look alike, so the first reading
		 * is taken only when it names a writer that is one of the
		 * target's threads.
		 */
		if (futex >= RWLOCK_WRITERS_FUTEX &&
		    rwlock_writer(mem, arch, futex - RWLOCK_WRITERS_FUTEX, &v) == 0 &&
		    known_tid(tids, ntids, v)) {
			*kind = SW_LOCK_RWLOCK_WRITE;
			*lock = futex - RWLOCK_WRITERS_FUTEX;
			*owner = (int)v;
			return SW_OK;
		}
		return rwlock_by_wrphase(mem, arch, futex, SW_LOCK_RWLOCK_WRITE, lock, kind, owner);
	case SWI_WAIT_RWLOCK_READ:
		return rwlock_by_wrphase(mem, arch, futex, SW_LOCK_RWLOCK_READ, lock, kind, owner);
	default:
		return SW_E_INVAL;
	}
}
