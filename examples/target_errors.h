/*
 * target_errors.h - what swstack and swdeadlock say when the target
 * cannot be had: a core or an executable the library refused, a process
 * it could not attach to.  The library answers with an SW_E_* status and,
 * for a failed open() or ptrace(), leaves the cause in errno; a user wants
 * that cause ("No such file or directory"), not the status's generic text
 * ("invalid argument").
 */
#ifndef TARGET_ERRORS_H
#define TARGET_ERRORS_H

#include <stackwalk.h>

/*
 * target_file_failure - why sw_core_open (`core` nonzero),
 * sw_core_add_executable or sw_module_load (`core` zero) failed with `st`.  The caller sets
 * errno to 0 before the call, so that a stale errno is not taken for the
 * cause.
 */
const char *target_file_failure(sw_status st, int core);

/*
 * target_loader_failure - why sw_core_add_loader failed with `st`, or NULL
 * when there was nothing to add (no AT_BASE or PT_INTERP: a static
 * program; the core names the linker already).  errno as for
 * target_file_failure.
 */
const char *target_loader_failure(sw_status st);

/*
 * target_add_libraries - a core's shared libraries from its dynamic
 * linker's list (sw_core_add_libraries, for cores that name no file:
 * qemu's), read under `sysroot` (NULL: as named).  Warns on stderr, as
 * `progname`, of each library that cannot be added and of a list that
 * cannot be read; a program without one (static) is no news.  Returns
 * the count added.
 */
unsigned target_add_libraries(sw_core *core, const char *sysroot, const char *progname);

/*
 * target_attach_failure - why sw_process_attach or sw_hang_analyze_process
 * failed with `st` on process `pid`, from errno as the call left it and
 * the process's state (a zombie, say, rather than ptrace's EPERM).  The
 * text may live in a static buffer, valid until the next call.
 */
const char *target_attach_failure(sw_status st, int pid);

#endif /* TARGET_ERRORS_H */
