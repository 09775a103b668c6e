/*
 * swu_to_cfi.h (internal) - DWARF call frame information from SWU.
 *
 * Tools that do not read SWU (gdb through its JIT interface, perf through
 * the jitdump's unwinding records) unwind JIT code with DWARF CFI: one CIE
 * and one FDE per method, whose rows are SWU's rules at every offset.  The
 * bytes are written here by hand, so the core library needs no elfutils.
 *
 * Two flavours, the same rows:
 *   .debug_frame  absolute addresses (pointer-sized), CIE id 0xffffffff;
 *   .eh_frame     augmentation "zR", FDE addresses pc-relative sdata4
 *                 (the FDE must lie within 2 GiB of its code), ended by a
 *                 zero terminator.
 */
#ifndef SW_UNWINDINFO_SWU_TO_CFI_H
#define SW_UNWINDINFO_SWU_TO_CFI_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/swu.h>
#include "swu_format.h"
#include "arch.h"

enum swu_cfi_kind {
	SWU_CFI_DEBUG_FRAME = 0,
	SWU_CFI_EH_FRAME = 1
};

/* DWARF numbers the CIE uses (gdb, libdw and perf know them per ELF machine). */
#define SWU_CFI_MAX_DWARF_REG 127

/*
 * swu_to_cfi - append a CIE and one FDE describing the method of `blob`,
 * whose code starts at `pc`, to `w` (which counts what does not fit, as
 * every swu_writer does).  For SWU_CFI_EH_FRAME, `section_addr` is the
 * address the section's first byte (w's position on entry) will have: the
 * FDE's address is relative to it.  *fde_offset (optional) receives the
 * FDE's offset from that first byte.  SW_E_BADMETA for an invalid blob,
 * SW_E_UNSUPPORTED for a rule DWARF CFI cannot say, SW_E_LIMIT when an
 * eh_frame FDE lies too far from its code, SW_E_NOMEM.
 */
sw_status swu_to_cfi(const void *blob, size_t size, enum swu_cfi_kind kind, uint64_t pc,
                     uint64_t section_addr, struct swu_writer *w, size_t *fde_offset);

/*
 * swu_cfi_eh_frame_hdr - append an .eh_frame_hdr with a one-entry search
 * table to `w`: the header will be at `hdr_addr`, the .eh_frame at
 * `eh_frame_addr`, its FDE at `fde_addr`, describing code from `pc`.
 * Every address is written relative (pcrel or datarel, sdata4), so the
 * bytes need no relocation wherever the three keep their distances.
 * 20 bytes.  SW_E_LIMIT when a distance does not fit in 32 bits.
 */
#define SWU_CFI_EH_FRAME_HDR_SIZE 20
sw_status swu_cfi_eh_frame_hdr(struct swu_writer *w, uint64_t hdr_addr, uint64_t eh_frame_addr,
                               uint64_t fde_addr, uint64_t pc);

/*
 * swu_cfi_eh_payload - what a jitdump's JIT_CODE_UNWINDING_INFO record
 * carries for the method of `blob` at `pc`: an .eh_frame (*eh_frame_size
 * bytes) and its .eh_frame_hdr right after it, addressed for the layout
 * perf inject gives its synthesized object: .eh_frame at the code's end
 * rounded up to 8 bytes.
 */
sw_status swu_cfi_eh_payload(const void *blob, size_t size, uint64_t pc, struct swu_writer *w,
                             size_t *eh_frame_size);

/* The DWARF number of library register `reg` of `arch`, or -1 if it has none. */
int swu_cfi_dwarf_reg(sw_arch arch, unsigned reg);

/* The ELF machine (EM_*) of an architecture, 0 if none. */
unsigned swu_cfi_elf_machine(sw_arch arch);

#endif /* SW_UNWINDINFO_SWU_TO_CFI_H */
