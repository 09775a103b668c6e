/*
 * core.h - ELF core files as walk targets, and the mapped-file record that
 * core files and live processes share.
 *
 * A core file holds what a walk needs of a dead process: per-thread
 * registers (NT_PRSTATUS notes), memory (PT_LOAD segments) and the files
 * that were mapped (the NT_FILE note).  Cores of x86-64, i386 and AArch64
 * Linux programs are read on any host, whatever wrote them: the kernel,
 * gdb's gcore, or qemu-user.
 */
#ifndef STACKWALK_CORE_H
#define STACKWALK_CORE_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>
#include <stackwalk/context.h>
#include <stackwalk/memory.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Access rights of a mapping (sw_mapped_file.prot). */
enum {
	SW_PROT_READ  = 1,
	SW_PROT_WRITE = 2,
	SW_PROT_EXEC  = 4
};

/* One file mapped into the target: [start, end) shows the file from offset. */
typedef struct sw_mapped_file {
	uint64_t start;         /* first target address of the mapping */
	uint64_t end;           /* one past its last */
	uint64_t offset;        /* file offset shown at start, in bytes */
	const char *path;       /* as the target named it; owned by the core or process */
	unsigned prot;          /* SW_PROT_* bits; 0 when the target does not say */
	unsigned reserved;
} sw_mapped_file;

typedef struct sw_core sw_core;

/* Flags of sw_core_open_memory. */
enum {
	/*
	 * Bytes a core omits (read-only file mappings: code, mostly) are read
	 * from the files its NT_FILE note names, opened when the core is.
	 */
	SW_CORE_MAPPED_FILES = 1
};

/*
 * sw_core_open - open the core file at `path` (with SW_CORE_MAPPED_FILES).
 * SW_E_INVAL if it cannot be opened or is not a regular file (errno says
 * why), SW_E_UNSUPPORTED for an ELF file that is not a little-endian core
 * of x86-64, i386 or AArch64, SW_E_TRUNCATED / SW_E_BADMETA for one cut
 * inside its headers or notes or corrupt, SW_E_LIMIT past a hard limit,
 * SW_E_NOMEM.  The core is read as needed, never mapped or read whole; one
 * cut inside its memory (RLIMIT_CORE) opens, and reads of what it lost
 * give SW_E_BADADDR.
 */
SW_API sw_status sw_core_open(const char *path, sw_core **core);

/*
 * sw_core_open_memory - a core file image already in memory (fuzzers,
 * tools that read cores from elsewhere).  The image is not copied: keep it
 * unchanged until sw_core_close.  `flags`: SW_CORE_MAPPED_FILES or 0.
 */
SW_API sw_status sw_core_open_memory(const void *image, size_t size, unsigned flags,
                                     sw_core **core);

/* sw_core_close - release a core; NULL is ignored. */
SW_API void sw_core_close(sw_core *core);

/* sw_core_arch - the architecture of the dumped program. */
SW_API sw_arch sw_core_arch(const sw_core *core);

/*
 * sw_core_process_name - the process's name as its NT_PRPSINFO note gives
 * it (at most 15 bytes: the main thread's name when it was dumped; the
 * target's data, which may hold any byte but NUL), and its id in *pid
 * (optional); NULL when the core has no such note.  Linux cores name no
 * other thread.  Valid until sw_core_close.
 */
SW_API const char *sw_core_process_name(const sw_core *core, int *pid);

/* sw_core_thread_count - the threads of the core (one NT_PRSTATUS each). */
SW_API unsigned sw_core_thread_count(const sw_core *core);

/*
 * sw_core_thread - thread `index` (0 is the one that received the fatal
 * signal in kernel cores): its registers in the library's numbering and
 * its thread id (`tid` may be NULL).  SW_E_INVAL for an index out of range.
 */
SW_API sw_status sw_core_thread(const sw_core *core, unsigned index, sw_context *ctx, int *tid);

/*
 * sw_core_memory - the dumped memory, valid until sw_core_close.  Reads
 * copy from the core (a pread system call, or the image); bytes the core
 * omitted come from the mapped files (a pread) or give SW_E_BADADDR, as
 * do bytes a truncated core lost.  Read-only.
 */
SW_API const sw_memory *sw_core_memory(const sw_core *core);

/* sw_core_module_count, sw_core_module - the mapped files, by address. */
SW_API unsigned sw_core_module_count(const sw_core *core);
SW_API sw_status sw_core_module(const sw_core *core, unsigned index, sw_mapped_file *file);

/*
 * sw_core_stack_bounds - the memory segment that contains `sp`: the stack
 * bounds to give sw_thread_init.  SW_E_BADADDR if no segment does.
 */
SW_API sw_status sw_core_stack_bounds(const sw_core *core, uint64_t sp, uint64_t *lo, uint64_t *hi);

/*
 * sw_core_add_executable - the program's executable, for cores that do not
 * name it (qemu-user writes no NT_FILE note, and omits the code): its
 * PT_LOAD segments, relocated by the entry point the core's auxiliary
 * vector records, become mapped files and supply the omitted bytes.
 * Mappings the core already names are kept; SW_E_EXISTS if it names all
 * of them (nothing was added: callers may treat it as success).
 * SW_E_MISMATCH if the file's architecture differs from the core's.
 */
SW_API sw_status sw_core_add_executable(sw_core *core, const char *path);

/*
 * sw_core_add_loader - the dynamic linker, for cores that do not name it
 * (qemu-user's): the file the executable added by sw_core_add_executable
 * names in its PT_INTERP, read under `sysroot` (NULL or "", or not found
 * there: as named),
 * becomes a mapped file at the load address the core's auxiliary vector
 * records (AT_BASE) and supplies its omitted bytes.  SW_E_NOTFOUND without
 * an added executable, an AT_BASE or a PT_INTERP (a static program);
 * SW_E_EXISTS if the core names a file there already; SW_E_BADADDR if no
 * segment of the core holds AT_BASE; SW_E_MISMATCH if the file's
 * architecture or ELF header differs from what the core holds there;
 * SW_E_LIMIT / SW_E_BADMETA for a PT_INTERP path over 4096 bytes or
 * malformed; SW_E_INVAL if the file cannot be opened (errno says why).
 */
SW_API sw_status sw_core_add_loader(sw_core *core, const char *sysroot);

/*
 * sw_core_add_libraries - the shared libraries, for cores that do not name
 * them (qemu-user's), as gdb finds them: the dynamic linker's list of
 * loaded objects (r_debug.r_map, through the DT_DEBUG entry of the
 * executable added by sw_core_add_executable), each file read under
 * `sysroot` at its l_addr.  Entries without a file (the executable, the
 * vDSO) or whose dynamic section the core maps already are passed over.
 * A file not found under `sysroot` is opened as named, where qemu-user
 * finds it too.
 * A library that cannot be added (missing, of another architecture, its
 * ELF header unlike the core's bytes) is reported to `skipped` (may be
 * NULL) with the reason, and the rest are still added.  *added (may be
 * NULL): the count added.  SW_E_NOTFOUND without an added executable or a
 * DT_DEBUG the linker filled; SW_E_BADADDR where the list's memory is not
 * in the core; SW_E_BADMETA for a list that loops; SW_E_LIMIT past 4,096
 * entries, a name over 4,096 bytes, or 256 files.
 */
typedef void sw_core_skipped_fn(void *arg, const char *path, sw_status why);
SW_API sw_status sw_core_add_libraries(sw_core *core, const char *sysroot, sw_core_skipped_fn *skipped,
                                       void *arg, unsigned *added);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_CORE_H */
