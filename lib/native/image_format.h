/*
 * image_format.h (internal) - the layout of an SWU image (swu-image(5)).
 *
 * Little-endian, no alignment required:
 *
 *   header   40 bytes: "SWUI", version 1, arch, header size 40, flags 0,
 *            entry count, base (u64), blob bytes, string bytes, entry size
 *            24, reserved 0
 *   table    entry count x 24 bytes: RVA, size, blob offset, blob size,
 *            name offset (or SWI_IMAGE_NO_NAME), SW_CODE_* flags
 *   blobs    blob bytes: the SWU blobs
 *   strings  string bytes: NUL-terminated names
 */
#ifndef SW_LIB_IMAGE_FORMAT_H
#define SW_LIB_IMAGE_FORMAT_H

#include <stdint.h>
#include <stackwalk.h>

#define SWI_IMAGE_MAGIC       "SWUI"
#define SWI_IMAGE_VERSION     1
#define SWI_IMAGE_HEADER      40u
#define SWI_IMAGE_ENTRY       24u
#define SWI_IMAGE_NO_NAME     0xffffffffu
/* The SW_CODE_* flags an entry may carry. */
#define SWI_IMAGE_ENTRY_FLAGS (SW_CODE_ANALYZED | SW_CODE_SIGNAL_TRAMPOLINE | SW_CODE_OUTERMOST | \
                               SW_CODE_PERSONALITY)

/* What sw_module_write_image needs of a module (lib/module.c). */
void swi_module_image_info(const sw_module *m, sw_arch *arch, uint64_t *base, uint64_t *bias);

#endif /* SW_LIB_IMAGE_FORMAT_H */
