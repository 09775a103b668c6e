/*
 * landing_pad.c - a program whose _start begins with a CET landing pad
 * (endbr64) and only then marks its return address undefined, as Node.js's
 * _start does, for tests/swstack-stopped.test.  gdb and eu-stack end the
 * walk at _start, complete; so must swstack.  Built with -nostartfiles:
 * ld.so has initialised libc before it jumps here.  x86-64 only.
 *
 *   landing_pad      prints "ready" and waits in pause()
 */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

__attribute__((noinline)) static void wait_here(void)
{
	puts("ready");
	fflush(stdout);
	for (;;)
		pause();
}

__attribute__((noinline, used)) void landing_pad_main(void)
{
	wait_here();
	exit(0);
}

__asm__(".globl _start\n"
        ".type _start, @function\n"
        "_start:\n"
        "\t.cfi_startproc\n"
        "\tendbr64\n"
        "\t.cfi_undefined rip\n"
        "\txor %ebp, %ebp\n"
        "\tand $-16, %rsp\n"
        "\tcall landing_pad_main\n"
        "\thlt\n"
        "\t.cfi_endproc\n"
        ".size _start, .-_start\n");
