/*
 * swprof_guard.c - what keeps libswprof.so out of the program's way: the
 * program ends as it would without the profiler (exit, _exit, exec, fork,
 * SIGINT, SIGTERM), and each of its processes and images writes its own
 * profile.  The agent interposes the C library's functions for that, as
 * gperftools' profiler does, finding the real ones with
 * dlsym(RTLD_NEXT).  See swprof(1), "THE PROGRAM IS NOT DISTURBED".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>
#include <stackwalk.h>
#include "swprof.h"

/*
 * The C library's functions, past the ones this library interposes: found
 * at start-up (guard_start), as dlsym may not be called from a signal
 * handler or a vfork child; on demand if called before.
 */
enum { REAL_SIGACTION, REAL_EXIT, REAL_EXIT_C99, REAL_EXECVE, REAL_EXECVPE, REAL_FEXECVE, NREAL };
static const char *const real_names[NREAL] = {
	"sigaction", "_exit", "_Exit", "execve", "execvpe", "fexecve"
};
static void *real_fns[NREAL];

static void *real_fn(int which)
{
	void *fn = __atomic_load_n(&real_fns[which], __ATOMIC_ACQUIRE);

	if (!fn) {
		fn = dlsym(RTLD_NEXT, real_names[which]);
		__atomic_store_n(&real_fns[which], fn, __ATOMIC_RELEASE);
	}
	return fn;
}

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static int real_sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
	sigaction_fn real = (sigaction_fn)real_fn(REAL_SIGACTION);

	if (!real) {
		errno = ENOSYS;
		return -1;
	}
	return real(signo, act, old);
}

/* This process's profile, if the process is profiled (a vfork child is not). */
static int profiled_here(void)
{
	return prof.started && getpid() == prof.pid;
}

/* Stop sampling and write the profile: the process ends. */
static void finish_profile(void)
{
	/* From here the thread runs the agent's code: no sample of it is taken. */
	sw_registry_unsafe_enter();
	if (!profiled_here()) {
		sw_registry_unsafe_leave();
		return;
	}
	stop_sampler();
	sw_registry_remove_self(prof.reg);
	sw_registry_unsafe_leave();
	write_profile();
}

/*
 * Runs after every destructor (on_exit was called before the C library
 * registered its own exit work).  A profile that could not be written
 * fails a run that would have succeeded: the user asked for it.
 */
void on_exit_status(int status, void *unused)
{
	(void)unused;
	finish_profile();
	if (profiled_here() && prof.write_failed && status == 0) {
		fflush(NULL);
		_exit(1);
	}
}

typedef void (*exit_fn)(int);

SWPROF_API void _exit(int status)
{
	exit_fn real = (exit_fn)real_fn(REAL_EXIT);

	finish_profile();
	real(status);
	__builtin_unreachable();
}

SWPROF_API void _Exit(int status)
{
	exit_fn real = (exit_fn)real_fn(REAL_EXIT_C99);

	finish_profile();
	real(status);
	__builtin_unreachable();
}

/*
 * SIGINT and SIGTERM, where the program left their default action: the
 * sampler thread writes the profile, then makes the process die of the
 * signal, as it would have.  The handler only records and wakes.
 */
static void on_fatal_signal(int signo, siginfo_t *si, void *uc)
{
	int saved_errno = errno;

	(void)si; (void)uc;
	if (!profiled_here() || !prof.sampling) {
		die_of(signo);
		errno = saved_errno;
		return;
	}
	prof.fatal_tid = (pid_t)syscall(SYS_gettid);
	__atomic_store_n(&prof.fatal_signo, signo, __ATOMIC_RELEASE);
	futex_wake_all(&prof.wake);
	errno = saved_errno;
}

static int is_fatal_handler(const struct sigaction *sa)
{
	return (sa->sa_flags & SA_SIGINFO) && sa->sa_sigaction == on_fatal_signal;
}

/* The default action again, and the signal again: on the thread it came to, if it is there. */
void die_of(int signo)
{
	struct sigaction dfl;
	sigset_t set;

	memset(&dfl, 0, sizeof dfl);
	dfl.sa_handler = SIG_DFL;
	real_sigaction(signo, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, signo);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	if (!prof.fatal_tid || syscall(SYS_tgkill, prof.pid, prof.fatal_tid, signo) != 0)
		kill(getpid(), signo);
}

static int is_fatal_signal(int signo)
{
	return signo == SIGINT || signo == SIGTERM;
}

/* The default action, as the agent carries it out: the profile first. */
static void fatal_action(struct sigaction *sa)
{
	memset(sa, 0, sizeof *sa);
	sa->sa_sigaction = on_fatal_signal;
	sa->sa_flags = SA_SIGINFO | SA_RESTART;
	sigemptyset(&sa->sa_mask);
}

void guard_start(void)
{
	static const int fatal[] = { SIGINT, SIGTERM };

	for (int i = 0; i < NREAL; i++)
		real_fn(i);

	for (size_t i = 0; i < sizeof fatal / sizeof fatal[0]; i++) {
		struct sigaction cur, sa;

		/* Ignored (a background job's SIGINT) or handled: the program's business. */
		if (real_sigaction(fatal[i], NULL, &cur) != 0 || (cur.sa_flags & SA_SIGINFO) ||
		    cur.sa_handler != SIG_DFL)
			continue;
		fatal_action(&sa);
		real_sigaction(fatal[i], &sa, NULL);
	}
}

/*
 * The program's handler for the sample signal goes behind the sampler's
 * (which passes it the signals the sampler did not send); asked for
 * SIGINT's or SIGTERM's action, the program sees the default it left.
 */
static int program_sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
	struct sigaction current;
	int rc;

	if (prof.started && signo == prof.signo && sw_sampler_chain_action(signo, act, old) == SW_OK)
		return 0;
	/*
	 * The default for SIGINT or SIGTERM (a shell setting it again, a
	 * handler that cleans up, then re-raises the signal with the default
	 * action): ours, which writes the profile, then carries it out.
	 */
	if (prof.started && is_fatal_signal(signo) && act && !(act->sa_flags & SA_SIGINFO) &&
	    act->sa_handler == SIG_DFL) {
		fatal_action(&current);
		act = &current;
	}
	rc = real_sigaction(signo, act, old);
	if (rc == 0 && old && is_fatal_handler(old)) {
		memset(old, 0, sizeof *old);
		old->sa_handler = SIG_DFL;
	}
	return rc;
}

/*
 * The library linked into this one (the sampler installing its handler,
 * or stepping aside for a default action) calls sigaction too: those
 * calls mean what they say.
 */
static uintptr_t own_text_start, own_text_end;

int find_own_text(struct dl_phdr_info *info, size_t size, void *data)
{
	uintptr_t self = (uintptr_t)data;

	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t start = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X) && self >= start &&
		    self < start + ph->p_memsz) {
			own_text_start = start;
			own_text_end = start + ph->p_memsz;
			return 1;
		}
	}
	return 0;
}

int agent_code(uint64_t ip)
{
	return ip >= own_text_start && ip < own_text_end;
}

SWPROF_API int sigaction(int signo, const struct sigaction *act, struct sigaction *old)
{
	if (agent_code((uintptr_t)__builtin_return_address(0)))
		return real_sigaction(signo, act, old);
	return program_sigaction(signo, act, old);
}

/* The C library's signal() does not call sigaction through the PLT. */
SWPROF_API __sighandler_t signal(int signo, __sighandler_t handler)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof sa);
	sa.sa_handler = handler;
	sa.sa_flags = SA_RESTART;
	sigemptyset(&sa.sa_mask);
	sigaddset(&sa.sa_mask, signo);
	if (program_sigaction(signo, &sa, &old) != 0)
		return SIG_ERR;
	return (old.sa_flags & SA_SIGINFO) ? (__sighandler_t)(void (*)(void))old.sa_sigaction
	                                   : old.sa_handler;
}

/*
 * Fork: the sampler pauses around it (its locks and its signals in flight
 * stay out of the child); the child starts a profile of its own.
 */
static int paused_for_fork;

void fork_prepare(void)
{
	sw_registry_unsafe_enter();     /* the agent's work, no sample of the program */
	paused_for_fork = profiled_here() && prof.sampling;
	if (paused_for_fork)
		stop_sampler();
	sw_registry_unsafe_leave();
}

void fork_parent(void)
{
	sw_registry_unsafe_enter();
	if (paused_for_fork)
		start_sampler();
	sw_registry_unsafe_leave();
}

void fork_child(void)
{
	uint64_t id;

	if (!paused_for_fork)
		return;
	/* The parent's registry lists the parent's threads: the child starts afresh. */
	prof.pid = getpid();
	prof.exec_generation = 0;
	prof.used = 0;
	forget_threads();
	prof.samples = prof.dropped = prof.failed = prof.stopped = 0;
	prof.threads_seen = 0;
	prof.fatal_tid = 0;
	__atomic_store_n(&prof.fatal_signo, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&prof.written, 0, __ATOMIC_RELEASE);
	if (sw_registry_create(&prof.reg) != SW_OK) {
		prof.started = 0;
		return;
	}
	if (sw_registry_add_self(prof.reg, prof.map, NULL, &id) == SW_OK)
		prof.threads_seen = 1;
	if (!start_sampler())
		prof.started = 0;
}

/*
 * Exec: write the profile, end the sampler and take every sample signal
 * still pending for this thread, so none reaches the new program (which
 * has no handler for it).  The new image learns from SWPROF_EXEC that it
 * is the next one in this pid, for its output names.
 */
#define EXEC_VAR "SWPROF_EXEC="

unsigned exec_generation_from_env(void)
{
	const char *v = getenv("SWPROF_EXEC");
	long pid;
	unsigned gen;

	if (v && sscanf(v, "%ld.%u", &pid, &gen) == 2 && pid == (long)getpid())
		return gen;
	return 0;
}

static int before_exec(void)
{
	struct timespec zero = { 0, 0 };
	sigset_t set, old;

	struct sigaction chained;

	if (!profiled_here() || !prof.sampling)
		return 0;
	stop_sampler();
	write_profile();
	/* An ignored signal stays ignored across exec: the program asked for that. */
	if (sw_sampler_chain_action(prof.signo, NULL, &chained) == SW_OK &&
	    !(chained.sa_flags & SA_SIGINFO) && chained.sa_handler == SIG_IGN)
		real_sigaction(prof.signo, &chained, NULL);
	sigemptyset(&set);
	sigaddset(&set, prof.signo);
	pthread_sigmask(SIG_BLOCK, &set, &old);
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return 1;
}

/* The exec failed: the program goes on, and so does its profile. */
static void after_failed_exec(int stopped, int saved_errno)
{
	if (stopped) {
		__atomic_store_n(&prof.written, 0, __ATOMIC_RELEASE);
		start_sampler();
	}
	errno = saved_errno;
}

/* `envp` with SWPROF_EXEC set for the next image; `envp` itself if out of memory. */
static char *const *tagged_env(char *const *envp, char *var, size_t size)
{
	size_t n = 0, k = 0;
	char **env;

	while (envp && envp[n])
		n++;
	env = malloc((n + 2) * sizeof *env);
	if (!env)
		return envp;
	snprintf(var, size, EXEC_VAR "%ld.%u", (long)prof.pid, prof.exec_generation + 1);
	for (size_t i = 0; i < n; i++)
		if (strncmp(envp[i], EXEC_VAR, sizeof EXEC_VAR - 1))
			env[k++] = envp[i];
	env[k++] = var;
	env[k] = NULL;
	return env;
}

typedef int (*execve_fn)(const char *, char *const[], char *const[]);
typedef int (*fexecve_fn)(int, char *const[], char *const[]);

/* Every exec* comes here: the C library's own call each other inside, out of reach. */
static int exec_with(const char *path, int fd, char *const argv[], char *const envp[],
                     int real_name)
{
	char var[64];
	/*
	 * A path that cannot be executed fails without ending the image: no
	 * profile is written for it (a PATH search tries many).
	 */
	int doomed = path && strchr(path, '/') && access(path, X_OK) != 0;
	int stopped = doomed ? 0 : before_exec(), rc, saved;
	char *const *env = stopped ? tagged_env(envp, var, sizeof var) : envp;
	void *real = real_fn(real_name);

	if (!real) {
		rc = -1;
		errno = ENOSYS;
	} else if (fd >= 0) {
		rc = ((fexecve_fn)real)(fd, argv, env);
	} else {
		rc = ((execve_fn)real)(path, argv, env);
	}
	saved = errno;
	if (env != envp)
		free((void *)env);
	after_failed_exec(stopped, saved);
	return rc;
}

SWPROF_API int execve(const char *path, char *const argv[], char *const envp[])
{
	return exec_with(path, -1, argv, envp, REAL_EXECVE);
}

SWPROF_API int execv(const char *path, char *const argv[])
{
	return exec_with(path, -1, argv, environ, REAL_EXECVE);
}

SWPROF_API int execvpe(const char *file, char *const argv[], char *const envp[])
{
	return exec_with(file, -1, argv, envp, REAL_EXECVPE);
}

SWPROF_API int execvp(const char *file, char *const argv[])
{
	return exec_with(file, -1, argv, environ, REAL_EXECVPE);
}

SWPROF_API int fexecve(int fd, char *const argv[], char *const envp[])
{
	return exec_with(NULL, fd, argv, envp, REAL_FEXECVE);
}

/* execl, execlp, execle: their arguments as an argv. */
#define MAX_EXECL_ARGS 4096

static int execl_common(const char *path, const char *arg, va_list ap, int with_env,
                        int real_name)
{
	char *argv[MAX_EXECL_ARGS + 1];
	char *const *envp = environ;
	size_t n = 0;

	argv[n++] = (char *)arg;
	while (arg && n < MAX_EXECL_ARGS && (argv[n] = va_arg(ap, char *)) != NULL)
		n++;
	if (n == MAX_EXECL_ARGS) {
		errno = E2BIG;
		return -1;
	}
	argv[n] = NULL;
	if (with_env)
		envp = va_arg(ap, char *const *);
	return exec_with(path, -1, argv, envp, real_name);
}

/* The three differ only in where the environment and the program come from. */
#define EXECL_INTERPOSER(name, with_env, real_name)                        \
	SWPROF_API int name(const char *path, const char *arg, ...)         \
	{                                                                   \
		va_list ap;                                                 \
		int rc;                                                     \
									    \
		va_start(ap, arg);                                          \
		rc = execl_common(path, arg, ap, with_env, real_name);      \
		va_end(ap);                                                 \
		return rc;                                                  \
	}

EXECL_INTERPOSER(execl, 0, REAL_EXECVE)
EXECL_INTERPOSER(execle, 1, REAL_EXECVE)
EXECL_INTERPOSER(execlp, 0, REAL_EXECVPE)
