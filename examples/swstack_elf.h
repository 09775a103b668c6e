/*
 * swstack_elf.h - the little ELF reading swstack does itself: where a
 * mapped file's code lands (its load bias), where the vDSO is (the
 * auxiliary vector), and how large an ELF image is.  Little-endian ELF32
 * and ELF64 only, every offset checked: a corrupt core or file gives an
 * error, never a read out of bounds.
 */
#ifndef SWSTACK_ELF_H
#define SWSTACK_ELF_H

#include <stddef.h>
#include <stdint.h>

/* Hard limits against hostile input. */
#define SWSTACK_ELF_MAX_PHDRS 4096              /* program headers examined */
#define SWSTACK_ELF_MAX_NOTES (16u << 20)       /* bytes of PT_NOTE read from a core */
#define SWSTACK_ELF_MAX_IMAGE (4u << 20)        /* a vDSO is a few pages */

/*
 * swstack_elf_delta - (p_vaddr - p_offset) of the PT_LOAD segment that
 * holds file offset `off`, from an ELF header and program headers in
 * `buf` (`len` bytes from the start of the file).  A mapping of `off` at
 * address `start` then has load bias start - off - delta.  0 on success,
 * -1 for something that is not a little-endian ELF file or has no such
 * segment.
 */
int swstack_elf_delta(const unsigned char *buf, size_t len, uint64_t off, uint64_t *delta);

/*
 * swstack_elf_headers_size - how many bytes from the start of the ELF file
 * in `buf` (at least 64 bytes of it) its header and program headers take;
 * 0 if it is not an ELF file or they are beyond the hard limit.
 */
size_t swstack_elf_headers_size(const unsigned char *buf, size_t len);

/*
 * swstack_elf_image_size - the bytes an in-memory ELF image (the vDSO)
 * spans: its loaded segments and section headers, from the header and
 * program headers in `buf`.  0 if malformed or over the hard limit.
 */
size_t swstack_elf_image_size(const unsigned char *buf, size_t len);

/*
 * swstack_auxv_find - the value of entry `type` in an auxiliary vector of
 * `word`-byte (4 or 8) entries.  0 on success, -1 if absent.
 */
int swstack_auxv_find(const unsigned char *auxv, size_t len, unsigned word, uint64_t type,
                      uint64_t *value);

/*
 * swstack_core_auxv - read the NT_AUXV note of the ELF core file at `path`
 * into a malloc'd buffer (*len bytes, *word the entry size).  NULL when
 * the core has none or cannot be read.
 */
unsigned char *swstack_core_auxv(const char *path, size_t *len, unsigned *word);

/* swstack_core_auxv_image - the same from a core's bytes in memory. */
unsigned char *swstack_core_auxv_image(const unsigned char *core, size_t core_len, size_t *len,
                                       unsigned *word);

/* swstack_elf_file_bias's answer for a perf jitdump file, which no tool need warn about. */
extern const char swstack_elf_jitdump[];

/*
 * swstack_elf_file_bias - the load bias of the ELF file `file` mapped at
 * `start` from file offset `off`: NULL, or why there is none (the file
 * cannot be opened, is not a regular or an ELF file, is a jitdump file).
 * Where `end` is not NULL, *end is where its loaded segments end in the
 * target at that bias (the bias plus the highest PT_LOAD's vaddr + memsz).
 */
const char *swstack_elf_file_bias(const char *file, uint64_t start, uint64_t off, uint64_t *bias,
                                  uint64_t *end);

/* swstack_elf_load_end - the highest vaddr + memsz of the PT_LOAD segments; 0 or -1. */
int swstack_elf_load_end(const unsigned char *buf, size_t len, uint64_t *end);

#endif /* SWSTACK_ELF_H */
