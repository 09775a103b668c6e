# Hang and deadlock diagnosis (issue 10): the analysis of a process or a
# core (thread states, lock owners, wait-for cycles), the watchdog, the
# swdeadlock tool, their tests and manual pages.  Host-only (ptrace, /proc,
# fork): built into libstackwalk_elf.la.
libstackwalk_elf_la_SOURCES += \
	lib/target/stack_set.h \
	lib/target/stack_set.c \
	lib/target/thread_state.h \
	lib/target/thread_state.c \
	lib/target/lock_wait.h \
	lib/target/lock_wait.c \
	lib/target/hang_report.h \
	lib/target/hang_report.c \
	lib/target/deadlock.c \
	lib/watchdog.c
stackwalkinclude_HEADERS += include/stackwalk/deadlock.h include/stackwalk/watchdog.h

bin_PROGRAMS += examples/swdeadlock
examples_swdeadlock_SOURCES = examples/swdeadlock.c
examples_swdeadlock_LDADD = libstackwalk.la
