/*
 * sigreturn.S - signal trampolines without CFI, for check_cfi, built
 * -nostdlib -static for x86-64, i386 and arm64.
 *
 * sig_rt (and on i386 sig_plain) are the sigreturn sequences of glibc's
 * i386 __restore_rt and __restore and of musl's trampolines, laid out as
 * glibc lays out its own: a trampoline, a nop, the next one.  Like musl's
 * they have symbols with a size, which instruction analysis must leave
 * alone.  The library must register each as a signal trampoline starting
 * one byte early (the alignment padding before it belongs to no function).
 * The same instructions inside a function with CFI (_start), and on arm64
 * off the 4-byte instruction grid (as data), are no trampoline.
 */
#if defined(__x86_64__)
#define RT_SIGRETURN movq $15, %rax; syscall
#elif defined(__i386__)
#define RT_SIGRETURN movl $173, %eax; int $0x80
#define SIGRETURN popl %eax; movl $119, %eax; int $0x80
#elif defined(__aarch64__)
#define RT_SIGRETURN mov x8, #139; svc #0
#endif

	.text
	.globl _start
	.type _start, %function
_start:
	.cfi_startproc
	nop
	RT_SIGRETURN
	.cfi_endproc
	.size _start, .-_start

	.p2align 4
	.globl sig_rt
	.type sig_rt, %function
sig_rt:
	RT_SIGRETURN
	.size sig_rt, .-sig_rt
	nop
#ifdef SIGRETURN
	.globl sig_plain
	.type sig_plain, %function
sig_plain:
	SIGRETURN
	.size sig_plain, .-sig_plain
#endif

#ifdef __aarch64__
	.p2align 4
	.byte 0, 0
	.byte 0x68, 0x11, 0x80, 0xd2, 0x01, 0, 0, 0xd4  /* mov x8, #139; svc #0, two bytes off */
	.byte 0, 0
#endif
