/*
 * target_errors.c - the cause of a failure to open a target, for the tools
 * (see target_errors.h).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "target_errors.h"

const char *target_file_failure(sw_status st, int core)
{
	switch (st) {
	case SW_E_INVAL:
		/* The library's open() failed (errno), or the file is not a regular one (EINVAL). */
		if (errno == 0)
			break;
		return errno == EINVAL ? "not a regular file" : strerror(errno);
	case SW_E_TRUNCATED:
		return core ? "truncated core file" : "truncated ELF file";
	case SW_E_BADMETA:
		return core ? "corrupt core file" : "corrupt ELF file";
	case SW_E_NOTFOUND:
		/* sw_module_load's word for a file it cannot open. */
		return errno ? strerror(errno) : "cannot be opened";
	case SW_E_UNSUPPORTED:
		return core ? "not a core file of x86-64, i386 or AArch64"
		            : "not an ELF program of x86-64, i386 or AArch64";
	case SW_E_MISMATCH:
		return "not the core's architecture";
	default:
		break;
	}
	return sw_strerror(st);
}

const char *target_loader_failure(sw_status st)
{
	switch (st) {
	case SW_OK:
	case SW_E_NOTFOUND:
	case SW_E_EXISTS:
		return NULL;
	case SW_E_BADADDR:
		return "the core holds no memory at its AT_BASE";
	case SW_E_MISMATCH:
		return "its PT_INTERP file is not what the core holds at AT_BASE";
	case SW_E_LIMIT:
		return "its PT_INTERP path is too long";
	case SW_E_BADMETA:
		return "its PT_INTERP header is malformed";
	default:
		return target_file_failure(st, 0);
	}
}

/* sw_core_add_libraries' report of one library it could not add; errno is the failure's. */
static void library_skipped(void *arg, const char *path, sw_status why)
{
	fprintf(stderr, "%s: warning: %s: not loaded: %s\n", (const char *)arg, path,
	        why == SW_E_MISMATCH ? "not the core's architecture, or not the file the core holds there"
	                             : target_file_failure(why, 0));
	errno = 0;
}

unsigned target_add_libraries(sw_core *core, const char *sysroot, const char *progname)
{
	unsigned added = 0;
	sw_status st;

	errno = 0;
	st = sw_core_add_libraries(core, sysroot, library_skipped, (void *)progname, &added);
	if (st != SW_OK && st != SW_E_NOTFOUND)
		fprintf(stderr, "%s: warning: the dynamic linker's list of libraries: %s%s\n", progname,
		        sw_strerror(st), added ? " (the libraries before it were loaded)" : "");
	return added;
}

/* The state letter of /proc/PID/stat (after the parenthesized name), or 0. */
static char process_state(int pid)
{
	char path[64], line[512], *close;
	FILE *f;
	size_t n;

	snprintf(path, sizeof path, "/proc/%d/stat", pid);
	if (!(f = fopen(path, "r")))
		return 0;
	n = fread(line, 1, sizeof line - 1, f);
	fclose(f);
	line[n] = 0;
	close = strrchr(line, ')');
	return close && close[1] == ' ' ? close[2] : 0;
}

const char *target_attach_failure(sw_status st, int pid)
{
	static char buf[128];
	int err = errno;

	switch (st) {
	case SW_E_BADADDR:
		/* ENOENT: its /proc directory is gone (or never was). */
		if (err == ENOENT || err == ESRCH)
			return "no such process";
		/* ptrace answers EPERM for a zombie: the real cause is that it has exited. */
		if (err == EPERM) {
			char state = process_state(pid);

			if (state == 'Z' || state == 'X')
				return "a zombie: it has exited and has no stack, its parent has not waited for it";
		}
		snprintf(buf, sizeof buf, "cannot trace it: %s", strerror(err));
		return buf;
	case SW_E_INVAL:
		return "cannot trace itself";
	case SW_E_UNSUPPORTED:
		return "a process of an architecture this host cannot trace";
	default:
		break;
	}
	return sw_strerror(st);
}
