/*
 * status.h - error codes.
 *
 * Every public function that can fail returns an sw_status: 0 on success or
 * a negative SW_E_* code.  sw_strerror() names a code.
 */
#ifndef STACKWALK_STATUS_H
#define STACKWALK_STATUS_H

#include <stackwalk/export.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef int sw_status;

enum {
	SW_OK            =   0,  /* success */
	SW_E_INVAL       =  -1,  /* an argument is invalid (NULL, out of range) */
	SW_E_NOMEM       =  -2,  /* out of memory (registration paths only) */
	SW_E_BADMETA     =  -3,  /* unwind metadata is corrupt or inconsistent */
	SW_E_TRUNCATED   =  -4,  /* unwind metadata ends before it should */
	SW_E_BADADDR     =  -5,  /* target memory could not be read or written */
	SW_E_BADSP       =  -6,  /* stack pointer outside the stack or not moving toward its base */
	SW_E_BADFRAME    =  -7,  /* a Frame is misaligned, outside the stack or of an unknown type */
	SW_E_FRAMECYCLE  =  -8,  /* the Frame list does not ascend the stack: a cycle or corruption */
	SW_E_NOTFOUND    =  -9,  /* no method contains that address */
	SW_E_EXISTS      = -10,  /* already registered, or overlaps a registered range */
	SW_E_UNSUPPORTED = -11,  /* architecture or feature not supported */
	SW_E_NOREG       = -12,  /* a register the unwind needs has no known value */
	SW_E_DEPTH       = -13,  /* the walk exceeded its frame limit */
	SW_E_BADIP       = -14,  /* an instruction pointer outside its method's code */
	SW_E_MISMATCH    = -15,  /* a checked walk differs from what was expected */
	SW_E_STATE       = -16,  /* called in the wrong state (iterator finished, builder order) */
	SW_E_READONLY    = -17,  /* target memory cannot be written (POPFRAMES) */
	SW_E_LIMIT       = -18,  /* a hard size limit was exceeded */
	SW_E_ABORTED     = -19,  /* a snapshot's callback stopped it */
	SW_E_UNMANAGED_CTX = -20, /* a snapshot's seed context is not in managed code */
	SW_E_UNSAFE      = -21,  /* the thread cannot be walked safely now */
	SW_E_IO          = -22,  /* a file could not be created or written (errno says why) */
	SW_E_NOTIMPORTED = -23,  /* the code's unwind rules are not imported yet (a lazy module) */
	SW_E_NOCALLER    = -24   /* code no unwind data describes: its caller cannot be found */
};

/* sw_strerror - a static, human-readable description of an sw_status. */
SW_API const char *sw_strerror(sw_status status);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_STATUS_H */
