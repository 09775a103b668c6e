/*
 * i386_host.h - how the C tests run i686 programs: natively where the
 * kernel execs i386 programs, else under qemu-i386.  tests/i386-host.sh
 * decides, for the shell tests as well.
 */
#ifndef SW_TESTS_I386_HOST_H
#define SW_TESTS_I386_HOST_H

enum i386_host {
	I386_NATIVE,    /* the kernel runs them */
	I386_QEMU,      /* it cannot; qemu-i386 runs them (no ptrace, qemu's own cores) */
	I386_NOEXEC,    /* it cannot, and qemu-i386 is missing or fails */
	I386_ERROR      /* the probe itself failed */
};

/*
 * Ask (tests/i386-host.sh with i686-linux-gnu-gcc and $QEMU_I386, once a
 * process); *why (optional) receives the script's explanation, "" for
 * I386_NATIVE.
 */
enum i386_host i386_host(const char **why);

/* The emulator's command: $QEMU_I386, or qemu-i386. */
const char *i386_qemu(void);

#endif /* SW_TESTS_I386_HOST_H */
