/*
 * call_site.h (internal) - what the machine code around a return address
 * says about the call that made it.  The frame-pointer fallback asks it
 * whether a frame record really belongs to the caller of the code it
 * steps: a direct call names its callee, and a callee that is known code
 * cannot be the unknown code the walk stands in.
 *
 * Code is read through sw_memory, which fails instead of faulting; nothing
 * allocates or locks (a walk may run in a signal handler).  Code that
 * cannot be read answers "unknown": a core file without the text, and in
 * a walk of this process code outside the accessor's windows unless it
 * probes (SW_MEMORY_PROBE, one process_vm_readv a read): without it these
 * checks make no syscall, and see less.
 */
#ifndef SW_WALK_CALL_SITE_H
#define SW_WALK_CALL_SITE_H

#include <stdbool.h>
#include <stdint.h>
#include <stackwalk.h>

/*
 * The target of the direct call that ends at `ra` (x86's call rel32,
 * arm64's bl), or 0 when the instruction before `ra` is no direct call or
 * cannot be read.  x86 has no instruction boundaries to go by: other bytes
 * may look like a call, so a caller trusts the answer only where it names
 * the exact start of known code.
 */
uint64_t swi_direct_call_target(const sw_thread *t, uint64_t ra);

/*
 * Whether the instruction before `ra` is a call (x86: call rel32, or
 * call r/m of the length its operand bytes give; arm64: bl, blr, blraa
 * and kin): what makes `ra` a return address where no unwind data says
 * so.  SWI_CALL_UNREADABLE when the code cannot be read.
 */
enum swi_call_before { SWI_CALL_NONE, SWI_CALL_FOUND, SWI_CALL_UNREADABLE };
enum swi_call_before swi_follows_call(const sw_thread *t, uint64_t ra);

/*
 * Whether the code at `addr` begins with an indirect jump (after a branch
 * target marker: endbr, bti): a PLT entry or a similar stub, whose callers
 * say nothing about where the call went on to.  False when unreadable.
 */
bool swi_is_jump_stub(const sw_thread *t, uint64_t addr);

#endif /* SW_WALK_CALL_SITE_H */
