/*
 * nocfi.c - the program tests/swstack-nocfi.test builds for x86-64, i686
 * and aarch64, dumps to a core file and walks with both gdb and swstack:
 * code that no unwind data describes, between C frames that CFI does.
 * Plain C and POSIX only, so that it cross-builds statically.  Its name
 * says what it runs (argv[0] ends in one of):
 *
 *   -ping     main -> ping(5) -> ... -> ping(0) -> nocfi_stop: ping is
 *             nocfi-ping.c, built with neither CFI nor a frame pointer
 *   -jitfp    main -> outer -> [copied machine code that builds a frame
 *             record] -> callback -> nocfi_stop
 *   -jitnofp  the same, but the copied code keeps no frame pointer: a
 *             walk cannot know its caller
 *
 * The copied code lies at JIT_ADDR (fixed, for the test to find it) in
 * pages mapped at run time, registered nowhere, with no unwind data.
 * Above it, at COPY_ADDR, the program maps a page of its own file a
 * second time, as V8 maps node's embedded builtins next to its JIT code:
 * the copied code lies between two mappings of the program, in neither.
 *
 *   PROG wait    "ready" on stdout, then block in read() in nocfi_stop
 *                (the test takes the core with gdb's gcore)
 *   PROG abort   abort() in nocfi_stop: the kernel or qemu-user dumps core
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#if defined(__clang__)
#define NOIPA __attribute__((noinline))
#else
#define NOIPA __attribute__((noipa))
#endif

#define JIT_ADDR 0x10000000ul
#define COPY_ADDR (JIT_ADDR + 0x100000ul)
#define COPY_OFFSET 0x1000

int ping(int n);

static int do_abort;
static int never[2];                    /* a pipe nobody writes to */

NOIPA void nocfi_keep(volatile int *p)
{
	*p += 1;
}

NOIPA int nocfi_stop(int n)
{
	char c;

	if (do_abort)
		abort();
	puts("ready");
	fflush(stdout);
	return (int)read(never[0], &c, 1) + n;
}

static NOIPA int callback(void)
{
	return nocfi_stop(7) + 1;
}

/*
 * int code(int (*fn)(void)) { return fn(); }, by hand: with a frame
 * record (push the frame pointer and the return address, point the frame
 * pointer at them), or without one (the frame pointer keeps the caller's
 * value).  Each keeps the ABI's stack alignment at the call.
 */
#if defined(__x86_64__)
static const uint8_t code_fp[] = {
	0x55,                           /* push %rbp */
	0x48, 0x89, 0xe5,               /* mov %rsp,%rbp */
	0xff, 0xd7,                     /* call *%rdi */
	0x5d,                           /* pop %rbp */
	0xc3,                           /* ret */
};
static const uint8_t code_nofp[] = {
	0x48, 0x83, 0xec, 0x08,         /* sub $8,%rsp */
	0xff, 0xd7,                     /* call *%rdi */
	0x48, 0x83, 0xc4, 0x08,         /* add $8,%rsp */
	0xc3,                           /* ret */
};
#elif defined(__i386__)
static const uint8_t code_fp[] = {
	0x55,                           /* push %ebp */
	0x89, 0xe5,                     /* mov %esp,%ebp */
	0x83, 0xec, 0x08,               /* sub $8,%esp */
	0xff, 0x55, 0x08,               /* call *8(%ebp) */
	0xc9,                           /* leave */
	0xc3,                           /* ret */
};
static const uint8_t code_nofp[] = {
	0x83, 0xec, 0x0c,               /* sub $12,%esp */
	0xff, 0x54, 0x24, 0x10,         /* call *16(%esp) */
	0x83, 0xc4, 0x0c,               /* add $12,%esp */
	0xc3,                           /* ret */
};
#elif defined(__aarch64__)
static const uint32_t code_fp[] = {
	0xa9bf7bfd,                     /* stp x29, x30, [sp, #-16]! */
	0x910003fd,                     /* mov x29, sp */
	0xd63f0000,                     /* blr x0 */
	0xa8c17bfd,                     /* ldp x29, x30, [sp], #16 */
	0xd65f03c0,                     /* ret */
};
static const uint32_t code_nofp[] = {
	0xf81f0ffe,                     /* str x30, [sp, #-16]! */
	0xd63f0000,                     /* blr x0 */
	0xf84107fe,                     /* ldr x30, [sp], #16 */
	0xd65f03c0,                     /* ret */
};
#else
#error "x86-64, i386 or aarch64"
#endif

static NOIPA int outer(void *code)
{
	int (*jit)(int (*)(void)) = (int (*)(int (*)(void)))code;
	volatile int r = jit(callback);

	return r + 1;
}

/* The code copied to JIT_ADDR, executable. */
static void *jit_copy(const void *code, size_t size)
{
	void *p = mmap((void *)JIT_ADDR, 4096, PROT_READ | PROT_WRITE,
	               MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p != (void *)JIT_ADDR) {
		fprintf(stderr, "nocfi: cannot map at %#lx\n", JIT_ADDR);
		exit(2);
	}
	memcpy(p, code, size);
	if (mprotect(p, 4096, PROT_READ | PROT_EXEC) != 0) {
		perror("nocfi: mprotect");
		exit(2);
	}
	__builtin___clear_cache((char *)p, (char *)p + size);
	return p;
}

/* A page of the program's own file, past its first, mapped again above the copied code. */
static void map_self_again(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	void *p = fd < 0 ? MAP_FAILED
	                 : mmap((void *)COPY_ADDR, 4096, PROT_READ | PROT_EXEC, MAP_PRIVATE, fd, COPY_OFFSET);

	if (p != (void *)COPY_ADDR) {
		fprintf(stderr, "nocfi: cannot map the program again at %#lx\n", COPY_ADDR);
		exit(2);
	}
	close(fd);
}

static int ends_with(const char *s, const char *tail)
{
	size_t n = strlen(s), m = strlen(tail);

	return n >= m && strcmp(s + n - m, tail) == 0;
}

int main(int argc, char **argv)
{
	volatile int r;

	if (argc != 2 || (strcmp(argv[1], "wait") != 0 && strcmp(argv[1], "abort") != 0)) {
		fprintf(stderr, "usage: %s wait|abort\n", argv[0]);
		return 2;
	}
	do_abort = strcmp(argv[1], "abort") == 0;
	if (pipe(never) != 0)
		return 2;
	map_self_again();
	if (ends_with(argv[0], "-ping"))
		r = ping(5);
	else if (ends_with(argv[0], "-jitfp"))
		r = outer(jit_copy(code_fp, sizeof code_fp));
	else if (ends_with(argv[0], "-jitnofp"))
		r = outer(jit_copy(code_nofp, sizeof code_nofp));
	else
		return 2;
	return r;
}
