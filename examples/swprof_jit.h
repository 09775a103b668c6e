/*
 * swprof_jit.h - attach mode's JIT code: what a runtime publishes for
 * debuggers (its code map, stackwalk-remote(5); the GDB JIT interface's
 * objects), read from the running process without stopping it, and
 * registered in prof.map beside the modules.
 */
#ifndef SWPROF_JIT_H
#define SWPROF_JIT_H

#include <stdint.h>
#include "swprof_process.h"

/*
 * attach_jit_refresh - a walk stopped in anonymous code: read again what
 * the process publishes (looking for the publishers in the modules loaded
 * since the last call) and register it in prof.map in place of what was
 * read before.  Returns 1 if the code at `pc` is now known, else 0.
 */
int attach_jit_refresh(target_process *p, uint64_t pc, int verbose);

/* attach_jit_close - unregister and free all that was read. */
void attach_jit_close(void);

#endif /* SWPROF_JIT_H */
