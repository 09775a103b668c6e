/*
 * swprof_stopped.c - a program whose samples stop early, for
 * tests/swprof-stopped.test: run under libswprof.so, it tells the agent
 * its own code map (swprof_use_codemap), in which one function, lost_spin,
 * is described as managed code whose frame is 64 MiB deep, deeper than
 * the stack.  Every sample taken in it must fail to unwind it
 * (SW_E_BADSP), and the profile must keep those samples apart, under a
 * "[stopped: ...]" frame, instead of folding them into a one-frame stack.
 *
 * (Aligned: the agent tags a method handle in its low bit.)
 *
 * lost_spin spins until it has been sampled SAMPLES times, which it sees
 * by the signal frames the kernel writes below its stack pointer (a
 * canary there is overwritten), so the test waits for samples, not for a
 * time; a cap on the work (minutes of it) keeps it from spinning forever
 * without an agent.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stackwalk.h>

#define SAMPLES 5
#define FRAME_DEPTH (64u << 20)         /* beyond any thread's stack */

#if defined(__x86_64__)
/*
 * rdi: samples to wait for; rsi: the cap on loop turns.  Returns the
 * samples seen.  The 16 KiB below the red zone are filled with a canary
 * and checked every 256 bytes: the kernel's signal frame (its size
 * depends on the CPU's xsave state) lands somewhere in them.
 */
__asm__(".text\n.p2align 4\n.globl lost_spin\n.type lost_spin,@function\nlost_spin:\n"
        "\tnop\n"                                       /* the "prolog", offset 0 */
        "\tmov %edi, %r8d\n\txor %r9d, %r9d\n"
        "\tmovabs $0x5a5a5a5a5a5a5a5a, %rax\n"
        "1:\tlea -16384(%rsp), %rdi\n\tmov $2032, %ecx\n\tcld\n\trep stosq\n"
        "2:\tdec %rsi\n\tjz 4f\n\tmov $-16384, %r10\n"
        "3:\tcmp %rax, (%rsp,%r10)\n\tjne 5f\n\tadd $256, %r10\n\tcmp $-128, %r10\n\tjl 3b\n"
        "\tjmp 2b\n"
        "5:\tinc %r9d\n\tcmp %r8d, %r9d\n\tjb 1b\n"
        "4:\tmov %r9d, %eax\n\tret\n.globl lost_spin_end\nlost_spin_end:\n"
        ".size lost_spin, lost_spin_end - lost_spin\n");
unsigned lost_spin(unsigned samples, uint64_t cap);
extern char lost_spin_end[];

static const char *method_name(void *method)
{
	return method == (void *)lost_spin ? "lost_spin" : NULL;
}

int main(void)
{
	void (*use)(const sw_codemap *, const char *(*)(void *));
	uint64_t start = (uint64_t)(uintptr_t)lost_spin;
	uint64_t size = (uint64_t)(uintptr_t)lost_spin_end - start;
	unsigned char blob[64];
	size_t blob_len = 0;
	sw_swu_builder *b;
	sw_codemap *map;
	sw_code_info info;
	unsigned seen;

	*(void **)&use = dlsym(RTLD_DEFAULT, "swprof_use_codemap");
	if (!use) {
		fprintf(stderr, "swprof_stopped: not under libswprof.so\n");
		return 2;
	}
	/* After the nop, the frame is FRAME_DEPTH bytes deep: a lie the walk must catch. */
	if (sw_codemap_create(&map) != SW_OK || sw_swu_builder_create(&b, SW_ARCH_X64) != SW_OK ||
	    sw_swu_alloc_stack(b, 1, FRAME_DEPTH) != SW_OK || sw_swu_end_prolog(b, 1) != SW_OK ||
	    sw_swu_finish(b, (uint32_t)size, blob, sizeof blob, &blob_len) != SW_OK) {
		fprintf(stderr, "swprof_stopped: cannot describe lost_spin\n");
		return 2;
	}
	sw_swu_builder_destroy(b);
	info = (sw_code_info){ (void *)lost_spin, start, size, blob, (uint32_t)blob_len, 0, NULL };
	if (sw_codemap_add(map, &info) != SW_OK) {
		fprintf(stderr, "swprof_stopped: cannot register lost_spin\n");
		return 2;
	}
	use(map, method_name);
	seen = lost_spin(SAMPLES, 2000000000ull);
	printf("lost_spin: sampled %u times\n", seen);
	/* The agent keeps the map until it exits, after main returns: not destroyed here. */
	return seen == SAMPLES ? 0 : 1;
}
#else
int main(void)
{
	puts("swprof_stopped: x86-64 only");
	return 77;
}
#endif
