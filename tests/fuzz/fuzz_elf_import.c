/*
 * fuzz_elf_import.c - the CFI importer and instruction analysis over ELF
 * bytes, read from memory (elf_memory inside sw_module_load_image), never
 * through a temporary file.
 *
 * The input is an ELF image, as is: every function the module imports is
 * decoded at every offset up to a bound and symbolized; the module is
 * registered in a code map (as one code table, or function by function
 * when they do not fit one), and so is the SWU image written from it, and
 * each must find every function at its first and last byte as the module
 * lists it (a broken promise aborts).  Loading must give an error or a
 * module; it must never crash, hang or read outside the image.
 */
#include <stdlib.h>
#include <string.h>
#include <stackwalk.h>
#include "fuzz.h"

#define MAX_OFFSETS 64      /* offsets decoded per function: bounds the time per input */

/*
 * Every function is found at its first and last byte with its own range
 * and blob (and, for the module's own registration, its record as the
 * method handle).
 */
static void check_found(const sw_codemap *map, const sw_native_function *fns, size_t n, int handles)
{
	for (size_t i = 0; i < n; i++) {
		const uint64_t at[2] = { fns[i].start, fns[i].start + fns[i].size - 1 };

		for (int k = 0; k < 2; k++) {
			sw_code_info ci;

			if (sw_codemap_find(map, at[k], &ci) != SW_OK || ci.start != fns[i].start ||
			    ci.size != fns[i].size || ci.unwind_size != fns[i].unwind_size ||
			    memcmp(ci.unwind, fns[i].unwind, ci.unwind_size) != 0 ||
			    (handles && ci.method != (const void *)&fns[i]))
				abort();
		}
	}
}

/* The module as an SWU image, registered in one call: the same functions. */
static void register_image(sw_codemap *map, const sw_module *m, const sw_native_function *fns, size_t n)
{
	sw_image *img = NULL;
	size_t len = 0;
	void *buf;

	if (sw_module_write_image(m, NULL, 0, &len) != SW_E_LIMIT || len == 0 || !(buf = malloc(len)))
		return;
	if (sw_module_write_image(m, buf, len, &len) == SW_OK &&
	    sw_codemap_add_image(map, buf, len, 0x10000, SW_CODE_NATIVE, &img) == SW_OK) {
		free(buf);
		buf = NULL;
		check_found(map, fns, n, 0);
		(void)sw_codemap_remove_image(map, img);
		sw_codemap_synchronize(map);
	}
	sw_image_free(img);
	free(buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const unsigned options[] = { 0, SW_MODULE_ANALYZE };
	const sw_native_function *fns;
	size_t n;

	for (unsigned o = 0; o < 2; o++) {
		sw_module *m = NULL;
		sw_codemap *map = NULL;
		sw_arch arch;

		if (sw_module_load_image_flags(data, size, 0x10000, options[o], &arch, &m) != SW_OK)
			continue;
		if (sw_module_functions(m, &fns, &n) == SW_OK) {
			for (size_t i = 0; i < n; i++) {
				const char *name;
				uint64_t off;
				sw_swu_rule r;

				for (uint32_t k = 0; k < fns[i].size && k < MAX_OFFSETS; k++)
					(void)sw_swu_decode(fns[i].unwind, fns[i].unwind_size, k, &r);
				(void)sw_module_symbolize(m, fns[i].start, &name, &off);
			}
		}
		if (sw_codemap_create(&map) == SW_OK) {
			if (sw_module_register(m, map) == SW_OK) {
				check_found(map, fns, n, 1);
				(void)sw_module_unregister(m, map);
			}
			register_image(map, m, fns, n);
			sw_codemap_synchronize(map);
			sw_codemap_destroy(map);
		}
		sw_module_free(m);
	}
	return 0;
}
