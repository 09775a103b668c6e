/*
 * resume_test.c - sw_context_resume on the host it is built for, a plain C
 * program (no Check library): `make check` runs it natively, and
 * tests/resume/run.sh cross-builds it for i686 and aarch64 and runs it
 * under qemu-user.
 *
 * - Every register: a context whose registers all hold distinct values is
 *   resumed into an assembly landing pad on a stack of its own, which
 *   saves every register and hands them to C; each must be the context's
 *   (aarch64's x16 holds the PC, as documented), SP exactly the target's,
 *   and no byte at or above the target SP may have changed.  A context
 *   that knows only SP and IP gives 0 in every other register.
 * - Out of a deep call chain: glibc's getcontext captures a point in
 *   deep_resumes(); a recursion of depth DEPTH then jumps back there,
 *   first with glibc's setcontext (the authority), then ROUNDS times with
 *   sw_context_resume.  Every landing must find the stack pointer where
 *   setcontext put it, and every recursion must reach the same depth at
 *   the same address: the stack the jump leaves is released.
 * - Refusals: a NULL context, another architecture, no SP, a bad SP.
 *
 * Prints "<arch> resume: N passed, M failed"; exits 0 only when nothing
 * failed.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <ucontext.h>
#include <stackwalk.h>

#if defined(__aarch64__)
#include <asm/sigcontext.h>
#endif

#define DEPTH 1000
#define ROUNDS 1000

static unsigned passed, failed;

static void check(int ok, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Count a result; describe the first failures. */
static void check(int ok, const char *fmt, ...)
{
	va_list ap;

	if (ok) {
		passed++;
		return;
	}
	if (failed++ >= 20)
		return;
	printf("  FAIL ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

/* ---- every register, into a landing pad ---- */

/*
 * The landing pad saves every register beneath the SP it lands with, in
 * a block indexed by the library's register numbers (SP's slot gets the
 * SP it landed with), and calls resume_test_landed(block).  i686's pushal
 * gives its own order, which resume_test_landed maps.
 */
void resume_test_landing(void);
void resume_test_landed(const uintptr_t *block) __attribute__((noreturn, used));

#if defined(__x86_64__)
#define ARCH SW_ARCH_X64
#define NREGS SW_X64_NREGS
#define REG_SP SW_X64_RSP
#define REG_IP SW_X64_RIP
__asm__(
	".text\n"
	".globl resume_test_landing\n"
	".type resume_test_landing, @function\n"
	"resume_test_landing:\n"
	"	leaq -136(%rsp), %rsp\n"
	"	movq %rax, 0(%rsp)\n"
	"	movq %rdx, 8(%rsp)\n"
	"	movq %rcx, 16(%rsp)\n"
	"	movq %rbx, 24(%rsp)\n"
	"	movq %rsi, 32(%rsp)\n"
	"	movq %rdi, 40(%rsp)\n"
	"	movq %rbp, 48(%rsp)\n"
	"	movq %r8, 64(%rsp)\n"
	"	movq %r9, 72(%rsp)\n"
	"	movq %r10, 80(%rsp)\n"
	"	movq %r11, 88(%rsp)\n"
	"	movq %r12, 96(%rsp)\n"
	"	movq %r13, 104(%rsp)\n"
	"	movq %r14, 112(%rsp)\n"
	"	movq %r15, 120(%rsp)\n"
	"	leaq 136(%rsp), %rax\n"
	"	movq %rax, 56(%rsp)\n"
	"	movq %rsp, %rdi\n"
	"	andq $-16, %rsp\n"
	"	call resume_test_landed\n"
	"	.size resume_test_landing, .-resume_test_landing\n");
#elif defined(__i386__)
#define ARCH SW_ARCH_X86
#define NREGS SW_X86_NREGS
#define REG_SP SW_X86_ESP
#define REG_IP SW_X86_EIP
__asm__(
	".text\n"
	".globl resume_test_landing\n"
	".type resume_test_landing, @function\n"
	"resume_test_landing:\n"
	"	pushal\n"                       /* upward: edi esi ebp esp ebx edx ecx eax */
	"	movl %esp, %eax\n"
	"	andl $-16, %esp\n"
	"	subl $12, %esp\n"
	"	pushl %eax\n"
	"	call resume_test_landed\n"
	"	.size resume_test_landing, .-resume_test_landing\n");
#elif defined(__aarch64__)
#define ARCH SW_ARCH_ARM64
#define NREGS SW_ARM64_NREGS
#define REG_SP SW_ARM64_SP
#define REG_IP SW_ARM64_PC
__asm__(
	".text\n"
	".globl resume_test_landing\n"
	".type resume_test_landing, %function\n"
	"resume_test_landing:\n"
	"	sub sp, sp, #336\n"
	"	stp x0, x1, [sp, #0]\n"
	"	stp x2, x3, [sp, #16]\n"
	"	stp x4, x5, [sp, #32]\n"
	"	stp x6, x7, [sp, #48]\n"
	"	stp x8, x9, [sp, #64]\n"
	"	stp x10, x11, [sp, #80]\n"
	"	stp x12, x13, [sp, #96]\n"
	"	stp x14, x15, [sp, #112]\n"
	"	stp x16, x17, [sp, #128]\n"
	"	stp x18, x19, [sp, #144]\n"
	"	stp x20, x21, [sp, #160]\n"
	"	stp x22, x23, [sp, #176]\n"
	"	stp x24, x25, [sp, #192]\n"
	"	stp x26, x27, [sp, #208]\n"
	"	stp x28, x29, [sp, #224]\n"
	"	str x30, [sp, #240]\n"
	"	add x0, sp, #336\n"
	"	str x0, [sp, #248]\n"
	"	stp d8, d9, [sp, #264]\n"
	"	stp d10, d11, [sp, #280]\n"
	"	stp d12, d13, [sp, #296]\n"
	"	stp d14, d15, [sp, #312]\n"
	"	mov x0, sp\n"
	"	bl resume_test_landed\n"
	"	.size resume_test_landing, .-resume_test_landing\n");
#else
#error "resume_test.c: no landing pad for this host"
#endif

static jmp_buf back;
static uint64_t seen[NREGS];

void resume_test_landed(const uintptr_t *block)
{
#if defined(__i386__)
	static const unsigned pushal_order[] = {
		SW_X86_EDI, SW_X86_ESI, SW_X86_EBP, SW_X86_ESP,
		SW_X86_EBX, SW_X86_EDX, SW_X86_ECX, SW_X86_EAX,
	};
	for (unsigned i = 0; i < 8; i++)
		seen[pushal_order[i]] = block[i];      /* esp: as it was before pushal */
#else
	for (unsigned r = 0; r < NREGS; r++)
		if (r != REG_IP)
			seen[r] = block[r];
#endif
	longjmp(back, 1);
}

/* A register's value in the first test: distinct, and using every bit width. */
static uint64_t pattern(unsigned r)
{
	uint64_t v = 0x9e3779b97f4a7c15ull * (r + 1);

	return sizeof(uintptr_t) == 4 ? (uint32_t)(v ^ (v >> 32)) : v;
}

/* Whether the resumed register r must hold `want` (aarch64's x16 is the PC). */
static uint64_t expected(unsigned r, uint64_t want)
{
#if defined(__aarch64__)
	if (r == 16)
		return (uintptr_t)resume_test_landing;
#else
	(void)r;
#endif
	return want;
}

#define LANDING_WORDS 4096
#define ABOVE_WORDS 64
static uintptr_t landing_stack[LANDING_WORDS] __attribute__((aligned(16)));

static void resume_into_landing(int all)
{
	static sw_context ctx;
	static uintptr_t top;
	sw_status st;

	/* The target SP, 16-aligned, ABOVE_WORDS of live stack above it. */
	top = (uintptr_t)&landing_stack[LANDING_WORDS - ABOVE_WORDS];
	for (unsigned i = 0; i < LANDING_WORDS; i++)
		landing_stack[i] = (uintptr_t)0xa5a5a5a5a5a5a5a5ull ^ i;
	sw_context_init(&ctx, ARCH);
	if (all)
		for (unsigned r = 0; r < NREGS; r++)
			sw_context_set(&ctx, r, pattern(r));
	sw_context_set(&ctx, REG_SP, top);
	sw_context_set(&ctx, REG_IP, (uintptr_t)resume_test_landing);
	memset(seen, 0xee, sizeof seen);
	if (setjmp(back) == 0) {
		st = sw_context_resume(&ctx);
		check(0, "sw_context_resume returned %d (%s)", st, sw_strerror(st));
		return;
	}
	for (unsigned r = 0; r < NREGS; r++) {
		uint64_t want;

		if (r == REG_IP)
			continue;
		want = r == REG_SP ? top : expected(r, all ? pattern(r) : 0);
		check(seen[r] == want, "%s: %s = %#llx, want %#llx", all ? "all set" : "none set",
		      sw_arch_reg_name(ARCH, r), (unsigned long long)seen[r], (unsigned long long)want);
	}
	for (unsigned i = LANDING_WORDS - ABOVE_WORDS; i < LANDING_WORDS; i++)
		check(landing_stack[i] == ((uintptr_t)0xa5a5a5a5a5a5a5a5ull ^ i),
		      "the live stack changed at SP+%u", (i - (LANDING_WORDS - ABOVE_WORDS)) * (unsigned)sizeof(uintptr_t));
}

/* ---- out of a deep call chain ---- */

static struct {
	ucontext_t uc;
	sw_context ctx;
	volatile unsigned round;                /* 0: setcontext's, then sw_context_resume's */
	volatile uintptr_t landed_sp, deepest;
	uintptr_t first_landed_sp, first_deepest;
	unsigned bad_landing, bad_depth;
} d;

/* The caller's stack pointer, give or take its own frame: the same from the same frame. */
static uintptr_t __attribute__((noinline)) frame_sp(void)
{
	return (uintptr_t)__builtin_frame_address(0);
}

static void __attribute__((noinline)) dive(unsigned depth)
{
	volatile char pad[48];

	pad[0] = (char)depth;
	if (depth > 0) {
		dive(depth - 1);
		pad[1] = pad[0];                /* not a tail call */
		return;
	}
	d.deepest = frame_sp();
	if (d.round == 0) {
		setcontext(&d.uc);
		check(0, "setcontext returned");
	} else {
		sw_status st = sw_context_resume(&d.ctx);
		check(0, "sw_context_resume from depth %u returned %d (%s)", DEPTH, st, sw_strerror(st));
	}
}

#if defined(__aarch64__)
/* d8-d15 as glibc's getcontext saved them, in the FP/SIMD record of __reserved. */
static void context_add_fp(sw_context *ctx, const ucontext_t *uc)
{
	const struct _aarch64_ctx *head = (const void *)uc->uc_mcontext.__reserved;

	if (head->magic != FPSIMD_MAGIC)
		return;
	for (unsigned r = 8; r <= 15; r++)
		sw_context_set(ctx, SW_ARM64_D8 + r - 8,
		               (uint64_t)((const struct fpsimd_context *)head)->vregs[r]);
}
#endif

static void __attribute__((noinline)) deep_resumes(void)
{
	memset(&d, 0, sizeof d);
	getcontext(&d.uc);
	/* Every jump lands here. */
	d.landed_sp = frame_sp();
	if (d.round == 0) {
		if (d.deepest == 0) {
			sw_status st = sw_context_from_ucontext(&d.ctx, &d.uc);

			check(st == SW_OK, "sw_context_from_ucontext: %s", sw_strerror(st));
#if defined(__aarch64__)
			context_add_fp(&d.ctx, &d.uc);
#endif
			dive(DEPTH);            /* setcontext jumps back */
			return;
		}
		d.first_landed_sp = d.landed_sp;
		d.first_deepest = d.deepest;
	} else {
		d.bad_landing += d.landed_sp != d.first_landed_sp;
		d.bad_depth += d.deepest != d.first_deepest;
	}
	if (d.round < ROUNDS) {
		d.round++;
		dive(DEPTH);
		return;
	}
	check(d.bad_landing == 0, "%u of %u resumes landed at another SP than setcontext's (%#llx)",
	      d.bad_landing, ROUNDS, (unsigned long long)d.first_landed_sp);
	check(d.bad_depth == 0, "%u of %u recursions reached another depth than the first (%#llx)",
	      d.bad_depth, ROUNDS, (unsigned long long)d.first_deepest);
	printf("%s resume: %u resumes out of a recursion %u deep, each landed where setcontext did (frame %#llx)\n",
	       sw_arch_name(ARCH), ROUNDS, DEPTH, (unsigned long long)d.first_landed_sp);
}

/* ---- refusals ---- */

static void refusals(void)
{
	sw_context ctx;
	sw_status st;

	check(sw_context_resume(NULL) == SW_E_INVAL, "NULL context");
	sw_context_init(&ctx, ARCH == SW_ARCH_ARM64 ? SW_ARCH_X64 : SW_ARCH_ARM64);
	sw_context_set(&ctx, 0, 1);
	check(sw_context_resume(&ctx) == SW_E_UNSUPPORTED, "another architecture");
	sw_context_init(&ctx, ARCH);
	sw_context_set(&ctx, REG_IP, (uintptr_t)resume_test_landing);
	st = sw_context_resume(&ctx);
	check(st == SW_E_NOREG, "no SP: %s", sw_strerror(st));
	sw_context_init(&ctx, ARCH);
	sw_context_set(&ctx, REG_SP, (uintptr_t)&landing_stack[LANDING_WORDS / 2]);
	st = sw_context_resume(&ctx);
	check(st == SW_E_NOREG, "no IP: %s", sw_strerror(st));
#if defined(__aarch64__)
	sw_context_set(&ctx, REG_IP, (uintptr_t)resume_test_landing);
	sw_context_set(&ctx, REG_SP, (uintptr_t)&landing_stack[LANDING_WORDS / 2] + 8);
	st = sw_context_resume(&ctx);
	check(st == SW_E_BADSP, "an SP not 16-aligned: %s", sw_strerror(st));
#elif defined(__i386__)
	sw_context_set(&ctx, REG_IP, (uintptr_t)resume_test_landing);
	sw_context_set(&ctx, SW_X86_EBX, 0x100000000ull);
	st = sw_context_resume(&ctx);
	check(st == SW_E_INVAL, "a register wider than 32 bits: %s", sw_strerror(st));
#endif
}

int main(void)
{
	resume_into_landing(1);
	resume_into_landing(0);
	deep_resumes();
	refusals();
	printf("%s resume: %u passed, %u failed\n", sw_arch_name(ARCH), passed, failed);
	return failed ? 1 : 0;
}
