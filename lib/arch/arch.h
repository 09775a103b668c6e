/*
 * arch.h (internal) - an architecture backend is data plus a few ops.
 *
 * The walker and the SWU decoder ask these tables for what differs per
 * architecture; they contain no per-architecture code of their own.
 */
#ifndef SW_LIB_ARCH_H
#define SW_LIB_ARCH_H

#include <stdint.h>
#include <stackwalk/arch.h>
#include <stackwalk/context.h>
#include <stackwalk/walk.h>

struct sw_thread;
struct swi_signal_stack;

/*
 * A run of registers whose DWARF numbers are consecutive: DWARF numbers
 * dwarf .. dwarf+count-1 are the library's registers reg .. reg+count-1.
 */
struct swi_dwarf_run {
	uint8_t dwarf, reg, count;
};

struct swi_arch {
	sw_arch arch;
	const char *name;
	unsigned ptr_size;              /* bytes */
	unsigned nregs;                 /* register numbers 0 .. nregs-1 are valid */
	const char *const *reg_names;
	unsigned ip_reg, sp_reg, fp_reg;
	int lr_reg;                     /* link register, or -1 */
	uint64_t callee_saved;          /* registers a callee must preserve (not SP, IP) */
	uint64_t float_regs;            /* the floating-point ones among them (arm64 d8-d15) */
	uint64_t frame_regs;            /* registers a method may use as its frame register */
	/* At a method's first instruction: the return address is at [CFA + entry_ra_offset]
	 * (entry_ra_in_lr == 0) or in the link register; SP = CFA - entry_sp_offset. */
	int entry_ra_in_lr;
	int32_t entry_ra_offset;
	int32_t entry_sp_offset;
	unsigned stack_align;           /* SP alignment at a call site */
	/*
	 * A TransitionFrame's block: the registers of its slots at ascending
	 * addresses, callee-saved registers then the return address (ip_reg);
	 * SP is the address above it.
	 */
	const unsigned *transition_block_regs;
	unsigned transition_block_slots;
	/* SWU: SP moves and save slots come in multiples of these (0: any size). */
	unsigned sp_move_align;
	unsigned slot_align;
	int has_reg_pairs;              /* stp/ldp: pairs, pre-indexed pushes, post-indexed pops */
	/*
	 * Does LIGHTUNWIND narrow the unwind to IP, SP and the frame pointer?
	 * CoreCLR defines HAS_LIGHTUNWIND for x64 alone (inc/eetwain.h); on
	 * other targets StackFrameIterator unwinds in full whatever the flag.
	 */
	int has_light_unwind;
	int has_ptrauth;                /* the return address in lr may be signed (paciasp) */
	/* Where a signed return address keeps its code, by Linux's user-space
	 * default (sw_thread's ptrauth_mask); 0 where has_ptrauth is not set. */
	uint64_t ptrauth_mask;
	/*
	 * The kernel's signal frame: the interrupted context, when the signal
	 * return trampoline is about to run with stack pointer `sp`.  Fills
	 * `ctx` (the arch's registers), `loc` (where each was read) and `alt`
	 * (the alternate signal stack the frame records).
	 */
	sw_status (*signal_frame_restore)(const struct sw_thread *t, uint64_t sp, uint64_t ip,
	                                  sw_context *ctx, uint64_t *loc,
	                                  struct swi_signal_stack *alt);
	/*
	 * DWARF register numbers, as the psABI assigns them.  The library's
	 * numbers are DWARF's wherever the architecture has one, but not all
	 * (arm64's d8-d15 are DWARF's v8-v15, and its pc has none), so CFI
	 * import and export translate through these runs (swi_dwarf_to_reg,
	 * swi_reg_to_dwarf).  dwarf_ra_column is the column that holds the
	 * return address (a CIE's return_address_register).
	 */
	const struct swi_dwarf_run *dwarf_runs;
	unsigned ndwarf_runs;
	unsigned dwarf_ra_column;
	uint16_t elf_machine;           /* ELF e_machine (EM_*) of its objects and cores */
	/*
	 * Linux system calls as a stopped thread shows them: futex's numbers
	 * (i386 has a second, futex_time64) and the registers that carry the
	 * arguments, in order (the kernel's convention, not the C ABI's).
	 */
	long futex_syscalls[2];
	unsigned nfutex_syscalls;
	unsigned syscall_arg_regs[6];
	/* glibc's pthread_rwlock_t: the offset of __cur_writer, the writer's
	 * thread id (i386 puts the flags before it). */
	unsigned rwlock_cur_writer_offset;
};

/*
 * The alternate signal stack (sigaltstack(2)) as the kernel records it in a
 * signal frame's ucontext (uc_stack): its settings when the signal came,
 * and in flags whether the interrupted code was running on it
 * (SWI_SS_ONSTACK) or there was none (SWI_SS_DISABLE).  A walk needs it to
 * follow a handler on that stack back to the stack it interrupted.
 * known is 0 where the frame records none (i386's non-RT sigframe).
 */
struct swi_signal_stack {
	uint64_t lo, hi;                /* ss_sp, ss_sp + ss_size */
	uint32_t flags;                 /* ss_flags */
	int known;
};
#define SWI_SS_ONSTACK 1u
#define SWI_SS_DISABLE 2u

/*
 * Read a uc_stack (stack_t: ss_sp, the int ss_flags, ss_size, each in a
 * pointer-sized slot) at `addr`.  A size that wraps is an error.
 */
sw_status swi_read_signal_stack(const struct sw_thread *t, uint64_t addr, unsigned ptr_size,
                                struct swi_signal_stack *alt);

/*
 * Restore registers listed in `regs` from consecutive slots of `size`
 * bytes at `base` (a kernel sigcontext): what every backend's
 * signal_frame_restore does once it has found the record.
 */
sw_status swi_restore_reg_block(const struct sw_thread *t, uint64_t base, unsigned size,
                                const unsigned *regs, unsigned n, sw_context *ctx,
                                uint64_t *loc);

/*
 * Registers whose caller values a method may save: callee-saved ones, and
 * the link register where the return address arrives in one.
 */
static inline uint64_t swi_savable_regs(const struct swi_arch *a)
{
	return a->callee_saved | (a->lr_reg >= 0 && a->lr_reg < 64 ? 1ULL << a->lr_reg : 0);
}

/* The library's register of DWARF number `dw`, or -1 if it has none. */
int swi_dwarf_to_reg(const struct swi_arch *a, uint64_t dw);

/* The DWARF number of library register `reg`, or -1 if it has none. */
int swi_reg_to_dwarf(const struct swi_arch *a, unsigned reg);

extern const struct swi_arch swi_arch_x64;
extern const struct swi_arch swi_arch_x86;
extern const struct swi_arch swi_arch_arm64;

/* The backend of `arch`, or NULL when there is none.  Inline: callbacks ask per frame (sw_context_ip). */
/* By sw_arch (arch.c); NULL for SW_ARCH_NONE. */
extern const struct swi_arch *const swi_arch_table[SW_ARCH_ARM64 + 1];

/*
 * A table, not a switch: sw_context_ip and its kind run once a frame in
 * many callbacks, and the switch cost them a third of their instructions.
 */
static inline const struct swi_arch *swi_arch_get(sw_arch arch)
{
	return (unsigned)arch <= SW_ARCH_ARM64 ? swi_arch_table[arch] : NULL;
}

/* sw_arch_pointer_size, inlined: Frame reads ask it for every field. */
static inline unsigned swi_pointer_size(sw_arch arch)
{
	const struct swi_arch *a = swi_arch_get(arch);

	return a ? a->ptr_size : 0;
}

/*
 * Does a walk with `flags`, of architecture `a`, keep only IP, SP and the
 * frame pointer?  With ADDRESSES_ONLY (the library's own), always.  With
 * LIGHTUNWIND where CoreCLR has its light unwind (has_light_unwind: x64).
 * With QUICKUNWIND only on a 32-bit target, as in CoreCLR: QUICKUNWIND
 * clears UpdateAllRegs (vm/stackwalk.cpp, StackFrameIterator::Init),
 * which only x86's unwinder reads (vm/eetwain.cpp); on 64-bit targets the
 * OS unwinder restores a whole CONTEXT whatever the flags say.  The walker
 * and sw_synth's model both ask here.
 */
static inline int swi_walk_addresses_only(unsigned flags, const struct swi_arch *a)
{
	return (flags & SW_WALK_ADDRESSES_ONLY) != 0 ||
	       ((flags & SW_WALK_LIGHTUNWIND) && a->has_light_unwind) ||
	       ((flags & SW_WALK_QUICKUNWIND) && a->ptr_size == 4);
}

#endif /* SW_LIB_ARCH_H */
