# The walker's own tests: basics, hand-built stacks and flags, hostile input,
# and the exported-symbol check.
check_PROGRAMS += tests/check_basics tests/check_walk tests/check_frames tests/check_snapshot tests/check_hostile \
	tests/check_backtrace
TESTS += tests/check_basics tests/check_walk tests/check_frames tests/check_snapshot tests/check_hostile \
	tests/check_backtrace tests/check_abi.sh

tests_check_basics_SOURCES = tests/check_basics.c
tests_check_basics_CFLAGS = $(TEST_CFLAGS)
tests_check_basics_LDADD = $(TEST_LIBS)

tests_check_walk_SOURCES = tests/check_walk.c tests/stack_builder.c tests/stack_builder.h
tests_check_walk_CFLAGS = $(TEST_CFLAGS)
tests_check_walk_LDADD = $(TEST_LIBS)

tests_check_frames_SOURCES = tests/check_frames.c tests/stack_builder.c tests/stack_builder.h
tests_check_frames_CFLAGS = $(TEST_CFLAGS)
tests_check_frames_LDADD = $(TEST_LIBS)

tests_check_snapshot_SOURCES = tests/check_snapshot.c tests/stack_builder.c tests/stack_builder.h
tests_check_snapshot_CFLAGS = $(TEST_CFLAGS)
tests_check_snapshot_LDADD = $(TEST_LIBS)

tests_check_backtrace_SOURCES = tests/check_backtrace.c tests/stack_builder.c tests/stack_builder.h
tests_check_backtrace_CFLAGS = $(TEST_CFLAGS)
tests_check_backtrace_LDADD = $(TEST_LIBS)

tests_check_hostile_SOURCES = tests/check_hostile.c tests/stack_builder.c tests/stack_builder.h
tests_check_hostile_CFLAGS = $(TEST_CFLAGS)
tests_check_hostile_LDADD = $(TEST_LIBS)

# The ABI check reads the built shared library and the installed headers.
# Check's default of 4 s per test is too short for a loaded machine (CI shares
# it): no test here is timed, so give them room rather than fail them.
AM_TESTS_ENVIRONMENT = top_srcdir='$(top_srcdir)'; top_builddir='$(top_builddir)'; \
	CK_DEFAULT_TIMEOUT=600; CK_TIMEOUT_MULTIPLIER=4; QEMU_I386='$(QEMU_I386)'; \
	export top_srcdir top_builddir CK_DEFAULT_TIMEOUT CK_TIMEOUT_MULTIPLIER QEMU_I386;
EXTRA_DIST += tests/check_abi.sh

# Whether the kernel execs i386 programs, or the tests run them under
# qemu-i386 ($(QEMU_I386)): one probe for the shell tests and, through
# tests/i386_host.c, the C tests.
EXTRA_DIST += tests/i386-host.sh

# Which part of the library may include which (doc/architecture.md).
TESTS += tests/include-rules.test
EXTRA_DIST += tests/include-rules.test

# swstack against gdb at every instruction of a lazy PLT stub and PLT0 (x86-64, i686, aarch64).
TESTS += tests/swstack-plt.test
EXTRA_DIST += tests/swstack-plt.test tests/swstack/plt.c tests/swstack/plt-lib.c
tests/swstack-plt.log: tests/swstack-gdb.env examples/swstack$(EXEEXT)
CLEANFILES += -r tests/swstack-plt.d

# swstack across alternate signal stacks (sigaltstack) and nested signals, against gdb.
TESTS += tests/swstack-altstack.test
EXTRA_DIST += tests/swstack-altstack.test tests/swstack/altstack.c
check_PROGRAMS += tests/check_altstack
TESTS += tests/check_altstack
tests_check_altstack_SOURCES = tests/check_altstack.c tests/stack_builder.c tests/stack_builder.h
tests_check_altstack_CFLAGS = $(TEST_CFLAGS)
tests_check_altstack_LDADD = $(TEST_LIBS)
tests/swstack-altstack.log: tests/swstack-gdb.env examples/swstack$(EXEEXT)

# swstack through code without unwind data (-Os without CFI, copied machine code), against gdb.
TESTS += tests/swstack-nocfi.test
EXTRA_DIST += tests/swstack-nocfi.test tests/swstack/nocfi.c tests/swstack/nocfi-ping.c
tests/swstack-nocfi.log: tests/swstack-gdb.env examples/swstack$(EXEEXT)
CLEANFILES += -r tests/swstack-nocfi.d

# Walks that stop early, reported by swstack, swdeadlock and swprof (issue 25).
check_PROGRAMS += tests/swprof_stopped
tests_swprof_stopped_SOURCES = tests/swprof_stopped.c
tests_swprof_stopped_LDADD = libstackwalk.la -ldl
tests_swprof_stopped_LDFLAGS = -no-install
TESTS += tests/swstack-stopped.test tests/swprof-stopped.test
EXTRA_DIST += tests/swstack-stopped.test tests/swstack/stopped.c tests/swprof-stopped.test
tests/swstack-stopped.log: tests/swstack-gdb.env examples/swstack$(EXEEXT) examples/swimport$(EXEEXT)
# swprof leaves its target unharmed and writes every process's profile (issue 26).
check_PROGRAMS += tests/swprof_harmless
tests_swprof_harmless_SOURCES = tests/swprof_harmless.c
tests_swprof_harmless_LDADD = -lpthread
TESTS += tests/swprof-harmless.test
EXTRA_DIST += tests/swprof-harmless.test
