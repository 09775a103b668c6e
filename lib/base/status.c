/* status.c - names for sw_status codes. */
#include "util.h"

SW_API const char *sw_strerror(sw_status status)
{
	switch (status) {
	case SW_OK:            return "success";
	case SW_E_INVAL:       return "invalid argument";
	case SW_E_NOMEM:       return "out of memory";
	case SW_E_BADMETA:     return "corrupt or inconsistent unwind metadata";
	case SW_E_TRUNCATED:   return "unwind metadata is truncated";
	case SW_E_BADADDR:     return "target memory cannot be accessed";
	case SW_E_BADSP:       return "stack pointer outside the stack or not moving toward its base";
	case SW_E_BADFRAME:    return "corrupt Frame";
	case SW_E_FRAMECYCLE:  return "Frame list does not ascend the stack (cycle or corruption)";
	case SW_E_NOTFOUND:    return "not found";
	case SW_E_EXISTS:      return "already registered or overlapping";
	case SW_E_UNSUPPORTED: return "not supported";
	case SW_E_NOREG:       return "a needed register has no known value";
	case SW_E_DEPTH:       return "too many frames";
	case SW_E_BADIP:       return "instruction pointer outside its method";
	case SW_E_MISMATCH:    return "walk differs from the expected frames";
	case SW_E_STATE:       return "called in the wrong state";
	case SW_E_READONLY:    return "target memory is read-only";
	case SW_E_LIMIT:       return "a size limit was exceeded";
	case SW_E_ABORTED:     return "the stack snapshot was stopped by its callback";
	case SW_E_UNMANAGED_CTX: return "the seed context is not in managed code";
	case SW_E_UNSAFE:      return "the thread cannot be walked safely now";
	case SW_E_IO:          return "a file could not be created or written";
	case SW_E_NOTIMPORTED: return "unwind rules not imported yet";
	case SW_E_NOCALLER:    return "no caller found for code without unwind data";
	default:               return "unknown error";
	}
}
