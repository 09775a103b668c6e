/*
 * core_notes.h - the kernel's register and note layouts, per architecture,
 * shared by the core-file target and the ptrace target (PTRACE_GETREGSET
 * hands out the same user_regs_struct that NT_PRSTATUS embeds).
 *
 * Everything here decodes bytes: it works on any host, for any of the
 * three targets, and checks every length it is given.
 */
#ifndef SW_TARGET_CORE_NOTES_H
#define SW_TARGET_CORE_NOTES_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk.h>

/* Note types of Linux core files (<elf.h> may lack the newer ones). */
#define SWI_NT_PRSTATUS 1
#define SWI_NT_PRFPREG  2
#define SWI_NT_PRPSINFO 3
#define SWI_NT_AUXV     6
#define SWI_NT_FILE     0x46494c45      /* "FILE" */

#define SWI_AT_BASE     7               /* auxiliary vector: the dynamic linker's load address */
#define SWI_AT_ENTRY    9               /* auxiliary vector: the program's entry point */
#define SWI_AT_SYSINFO_EHDR 33          /* auxiliary vector: the vDSO's ELF header */

/* Hard limits against hostile notes. */
#define SWI_NT_FILE_MAX_ENTRIES (1u << 20)

/* Size of the kernel's user_regs_struct for `arch` (0 if unknown). */
size_t swi_user_regs_size(sw_arch arch);

/*
 * Fill `ctx` from a user_regs_struct of `arch` (`len` bytes, at least
 * swi_user_regs_size(arch)).  SW_E_TRUNCATED if it is shorter.
 */
sw_status swi_user_regs_decode(sw_arch arch, const unsigned char *regs, size_t len,
                               sw_context *ctx);

/* An NT_PRSTATUS descriptor: the thread's registers and id. */
sw_status swi_prstatus_decode(sw_arch arch, const unsigned char *desc, size_t len,
                              sw_context *ctx, int *tid);

/*
 * An NT_PRFPREG descriptor: adds what the walker needs of the FP state to
 * `ctx` (AArch64: d8-d15, the low halves of v8-v15).  Other arches: no-op.
 */
sw_status swi_prfpreg_decode(sw_arch arch, const unsigned char *desc, size_t len,
                             sw_context *ctx);

/*
 * An NT_FILE descriptor with `word`-byte fields (4 or 8): count and page
 * size, count (start, end, page offset) triples, then count NUL-terminated
 * paths.  With `out` NULL only counts into *count; otherwise fills out[0..
 * *count) (paths point into desc).  SW_E_BADMETA / SW_E_TRUNCATED /
 * SW_E_LIMIT for a malformed note.
 */
sw_status swi_nt_file_decode(unsigned word, const unsigned char *desc, size_t len,
                             sw_mapped_file *out, size_t *count);

/* The process's name as an NT_PRPSINFO note holds it (pr_fname: 15 bytes and a NUL at most). */
#define SWI_PRPSINFO_NAME 16

/*
 * An NT_PRPSINFO descriptor of `arch` (struct elf_prpsinfo): the process's
 * id and its name (pr_fname, the main thread's comm when it was dumped),
 * NUL-terminated into name[SWI_PRPSINFO_NAME].  SW_E_BADMETA unless it has
 * exactly the kernel's size for the architecture (the layouts differ:
 * i386's uid and gid fields are 16 bits wide).
 */
sw_status swi_prpsinfo_decode(sw_arch arch, const unsigned char *desc, size_t len,
                              char name[SWI_PRPSINFO_NAME], int *pid);

/* Look `type` up in an NT_AUXV descriptor; SW_E_NOTFOUND if absent. */
sw_status swi_auxv_find(unsigned word, const unsigned char *desc, size_t len,
                        uint64_t type, uint64_t *value);

struct sw_core;
/* swi_core_vdso - the vDSO's address (the core's AT_SYSINFO_EHDR), or 0. */
uint64_t swi_core_vdso(const struct sw_core *core);

#endif /* SW_TARGET_CORE_NOTES_H */
