/*
 * array_grow.h - growing a malloc'd array by doubling, for the library's
 * files that build tables of unknown length (a module's symbols, the
 * functions and blobs a CFI import or a code analysis produces).
 */
#ifndef SW_LIB_ARRAY_GROW_H
#define SW_LIB_ARRAY_GROW_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <stackwalk/status.h>

#define SWI_ARRAY_GROW_FIRST 64         /* elements of a new array */

/*
 * Make room for `need` elements of `size` bytes in *arr, whose capacity is
 * *cap: the capacity doubles from SWI_ARRAY_GROW_FIRST (or from *cap)
 * until it is enough.  SW_E_NOMEM when realloc fails or the byte count would overflow;
 * *arr and *cap are then unchanged.
 */
static inline sw_status swi_array_grow(void **arr, size_t *cap, size_t need, size_t size)
{
	size_t ncap;
	void *p;

	if (need <= *cap)
		return SW_OK;
	ncap = *cap ? *cap : SWI_ARRAY_GROW_FIRST;
	while (ncap < need) {
		if (ncap > SIZE_MAX / 2)
			return SW_E_NOMEM;
		ncap *= 2;
	}
	if (size && ncap > SIZE_MAX / size)
		return SW_E_NOMEM;
	p = realloc(*arr, ncap * size);
	if (!p)
		return SW_E_NOMEM;
	*arr = p;
	*cap = ncap;
	return SW_OK;
}

#endif /* SW_LIB_ARRAY_GROW_H */
