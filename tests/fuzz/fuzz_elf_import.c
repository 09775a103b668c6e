/*
 * fuzz_elf_import.c - the CFI importer and instruction analysis over ELF
 * bytes, read from memory (elf_memory inside sw_module_load_image), never
 * through a temporary file.
 *
 * The input is an ELF image, as is: every function the module imports is
 * registered in a code map (which validates its SWU again), decoded at
 * every offset up to a bound, symbolized, and unregistered.  Loading must
 * give an error or a module; it must never crash, hang or read outside the
 * image.
 */
#include <stdlib.h>
#include <stackwalk.h>
#include "fuzz.h"

#define MAX_OFFSETS 64      /* offsets decoded per function: bounds the time per input */

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
			if (sw_module_register(m, map) == SW_OK)
				(void)sw_module_unregister(m, map);
			sw_codemap_destroy(map);
		}
		sw_module_free(m);
	}
	return 0;
}
