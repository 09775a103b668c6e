/*
 * image.h - SWU images: a module's unwind data in one file, registered in
 * one call.
 *
 * As a ReadyToRun image carries its methods' unwind data, an SWU image
 * carries, for each function of a native module, its range (relative to
 * the image's base), its SWU blob and its name.  swimport(1) writes one
 * from an ELF file (sw_module_write_image); sw_codemap_add_image registers
 * every entry as a method, so that compiled code is walked through the
 * managed path, by the same decoder as JIT code.  The format is in
 * swu-image(5).
 */
#ifndef STACKWALK_IMAGE_H
#define STACKWALK_IMAGE_H

#include <stddef.h>
#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/arch.h>
#include <stackwalk/codemap.h>
#include <stackwalk/module.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Hard limits against hostile images. */
#define SW_IMAGE_MAX_ENTRIES  (1u << 20)
#define SW_IMAGE_MAX_BLOBS    (1u << 30)        /* bytes of SWU in one image */
#define SW_IMAGE_MAX_STRINGS  (1u << 28)        /* bytes of names in one image */

typedef struct sw_image sw_image;

/*
 * One registered entry.  Its method handle in the code map points to this
 * record, owned by the sw_image.
 */
typedef struct sw_image_method {
	const sw_image *image;
	const char *name;               /* the function's name (owned by the image), or NULL */
	uint64_t start;                 /* loaded address: base + RVA + load bias */
	uint64_t size;                  /* code bytes */
	uint32_t flags;                 /* SW_CODE_* it was registered with */
	uint32_t index;                 /* its entry in the image's table */
} sw_image_method;

/*
 * sw_image_validate - check an image in memory: header, table, every blob
 * (sw_swu_validate), names, limits.  Never reads outside [image, image + size).
 */
SW_API sw_status sw_image_validate(const void *image, size_t size);

/*
 * sw_codemap_add_image - validate the image and register every entry, at
 * base + RVA + load_bias, as a method (managed unless `flags` has
 * SW_CODE_NATIVE, the only flag allowed there) with the entry's own flags.
 * All or nothing.  The image is not kept: blobs are copied by the code map
 * and names by the sw_image returned in *out, which owns the method
 * handles.  SW_E_BADMETA or SW_E_TRUNCATED for a bad image, SW_E_EXISTS
 * when an entry overlaps registered code, SW_E_INVAL for a load bias that
 * wraps an address around.
 */
SW_API sw_status sw_codemap_add_image(sw_codemap *map, const void *image, size_t size,
                                      uint64_t load_bias, uint32_t flags, sw_image **out);

/* sw_codemap_remove_image - remove every entry the image registered. */
SW_API sw_status sw_codemap_remove_image(sw_codemap *map, sw_image *img);

/* sw_image_methods - the registered entries, by ascending address. */
SW_API sw_status sw_image_methods(const sw_image *img, const sw_image_method **methods,
                                  size_t *count);

/* sw_image_arch - the image's architecture. */
SW_API sw_arch sw_image_arch(const sw_image *img);

/*
 * sw_image_free - free it: remove it from the code map, and let the map
 * reclaim the entries (sw_codemap_synchronize), first.
 */
SW_API void sw_image_free(sw_image *img);

/*
 * sw_module_write_image - the module's functions as an SWU image, into buf
 * (capacity cap).  *len receives the image's size; SW_E_LIMIT when cap is
 * too small (*len says how much is needed) or when the module does not
 * fit the format.
 */
SW_API sw_status sw_module_write_image(const sw_module *m, void *buf, size_t cap, size_t *len);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_IMAGE_H */
