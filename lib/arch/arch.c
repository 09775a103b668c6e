/* arch.c - the table of architecture backends and the public queries on it. */
#include "util.h"
#include "arch.h"

const struct swi_arch *const swi_arch_table[SW_ARCH_ARM64 + 1] = {
	[SW_ARCH_X64] = &swi_arch_x64,
	[SW_ARCH_X86] = &swi_arch_x86,
	[SW_ARCH_ARM64] = &swi_arch_arm64,
};

SW_API const char *sw_arch_name(sw_arch arch)
{
	const struct swi_arch *a = swi_arch_get(arch);

	return a ? a->name : NULL;
}

SW_API unsigned sw_arch_pointer_size(sw_arch arch)
{
	return swi_pointer_size(arch);
}

SW_API const char *sw_arch_reg_name(sw_arch arch, unsigned reg)
{
	const struct swi_arch *a = swi_arch_get(arch);

	if (!a || reg >= a->nregs)
		return NULL;
	return a->reg_names[reg];
}

/*
 * Register number `n` of one numbering (DWARF's if from_dwarf, else ours)
 * in the other, through the run that holds it; -1 if none does.
 */
static int through_dwarf_runs(const struct swi_arch *a, uint64_t n, int from_dwarf)
{
	for (unsigned i = 0; i < a->ndwarf_runs; i++) {
		const struct swi_dwarf_run *run = &a->dwarf_runs[i];
		unsigned from = from_dwarf ? run->dwarf : run->reg;
		unsigned to = from_dwarf ? run->reg : run->dwarf;

		if (n >= from && n - from < run->count)
			return (int)(to + (n - from));
	}
	return -1;
}

int swi_dwarf_to_reg(const struct swi_arch *a, uint64_t dw)
{
	return through_dwarf_runs(a, dw, 1);
}

int swi_reg_to_dwarf(const struct swi_arch *a, unsigned reg)
{
	return through_dwarf_runs(a, reg, 0);
}

SW_API sw_arch sw_arch_host(void)
{
#if defined(__x86_64__)
	return SW_ARCH_X64;
#elif defined(__i386__)
	return SW_ARCH_X86;
#elif defined(__aarch64__)
	return SW_ARCH_ARM64;
#else
	return SW_ARCH_NONE;
#endif
}

sw_status swi_read_signal_stack(const struct sw_thread *t, uint64_t addr, unsigned ptr_size,
                                struct swi_signal_stack *alt)
{
	uint64_t ss_sp, ss_size, ss_flags;
	sw_status st;

	if ((st = swi_read_ptr(t->memory, ptr_size, addr, &ss_sp)) != SW_OK ||
	    (st = swi_read_ptr(t->memory, 4, addr + ptr_size, &ss_flags)) != SW_OK ||
	    (st = swi_read_ptr(t->memory, ptr_size, addr + 2 * (uint64_t)ptr_size, &ss_size)) != SW_OK)
		return st;
	if (ss_sp + ss_size < ss_sp)
		return SW_E_BADSP;
	alt->lo = ss_sp;
	alt->hi = ss_sp + ss_size;
	alt->flags = (uint32_t)ss_flags;
	alt->known = 1;
	return SW_OK;
}

sw_status swi_restore_reg_block(const struct sw_thread *t, uint64_t base, unsigned size,
                                const unsigned *regs, unsigned n, sw_context *ctx,
                                uint64_t *loc)
{
	/*
	 * Read in blocks of up to 16 slots, not a read per register: every
	 * walk that leaves a TransitionFrame restores its block, and a read
	 * costs its window checks each time.
	 */
	unsigned char b[16 * 8];
	unsigned per_read = (unsigned)sizeof b / size;
	sw_status st;

	if (size != 4 && size != 8)
		return SW_E_INVAL;
	if (base > UINT64_MAX - (uint64_t)n * size)
		return SW_E_BADADDR;
	for (unsigned first = 0; first < n; first += per_read) {
		unsigned count = n - first < per_read ? n - first : per_read;
		uint64_t at = base + (uint64_t)first * size;

		if ((st = swi_read(t->memory, at, b, (size_t)count * size)) != SW_OK)
			return st;
		for (unsigned i = 0; i < count; i++) {
			unsigned r = regs[first + i];

			ctx->regs[r] = swi_load_le(b + (size_t)i * size, size);
			ctx->valid |= 1ULL << r;
			loc[r] = at + (uint64_t)i * size;
		}
	}
	return SW_OK;
}
