# Hang and deadlock diagnosis (issue 10): the analysis of a process or a
# core (thread states, lock owners, wait-for cycles), the watchdog, the
# swdeadlock tool, their tests and manual pages.  Host-only (ptrace, /proc,
# fork): built into libstackwalk_elf.la.
lib_libsw_target_la_SOURCES += \
	lib/target/stack_set.h \
	lib/target/stack_set.c \
	lib/target/thread_state.h \
	lib/target/thread_state.c \
	lib/target/lock_wait.h \
	lib/target/lock_wait.c \
	lib/target/hang_report.h \
	lib/target/hang_report.c \
	lib/target/deadlock.c \
	lib/target/watchdog.c
stackwalkinclude_HEADERS += include/stackwalk/deadlock.h include/stackwalk/watchdog.h

bin_PROGRAMS += examples/swdeadlock
examples_swdeadlock_SOURCES = examples/swdeadlock.c examples/target_errors.c examples/target_errors.h \
	examples/frame_names.c examples/frame_names.h examples/escape.c examples/escape.h \
	examples/tool_options.c examples/tool_options.h examples/perf_map.c examples/perf_map.h \
	examples/read_bounded.c examples/read_bounded.h
examples_swdeadlock_LDADD = libstackwalk.la

# How a runtime arms the watchdog for its main loop (a deliberate deadlock).
noinst_PROGRAMS += examples/swwatchdog
examples_swwatchdog_SOURCES = examples/swwatchdog.c examples/escape.c examples/escape.h \
	examples/tool_options.c examples/tool_options.h
examples_swwatchdog_LDADD = libstackwalk.la -lpthread

# Real deadlocked, spinning and healthy programs of each architecture
# (tests/deadlock/run.sh builds tests/deadlock/victim.c for each), and the
# watchdog's test: a watched thread that deadlocks.
TESTS += tests/deadlock-x86-64.test tests/deadlock-i686.test tests/deadlock-aarch64.test
EXTRA_DIST += tests/deadlock-x86-64.test tests/deadlock-i686.test tests/deadlock-aarch64.test \
	tests/deadlock/run.sh tests/deadlock/victim.c
tests/deadlock-x86-64.log tests/deadlock-i686.log tests/deadlock-aarch64.log: \
	tests/deadlock.env examples/swdeadlock$(EXEEXT)

# A deadlock in code LLVM's lli registered with gdb: swdeadlock -p names and
# walks its JIT frames as gdb does.
TESTS += tests/swdeadlock-lli.test
EXTRA_DIST += tests/swdeadlock-lli.test tests/deadlock/lli-abba.c
tests/swdeadlock-lli.log: examples/swdeadlock$(EXEEXT)

.PHONY: tests/deadlock.env
tests/deadlock.env:
	$(AM_V_GEN)$(MKDIR_P) tests && { \
	  echo "DEADLOCK_CC='$(CC)'"; \
	  echo "CROSS_CC_I686='$(CROSS_CC_I686)'"; \
	  echo "CROSS_CC_AARCH64='$(CROSS_CC_AARCH64)'"; \
	  echo "QEMU_AARCH64='$(QEMU_AARCH64)'"; \
	  echo "QEMU_I386='$(QEMU_I386)'"; \
	} >$@
CLEANFILES += tests/deadlock.env
clean-local: clean-deadlock
.PHONY: clean-deadlock
clean-deadlock:
	-rm -rf tests/deadlock-x86-64.d tests/deadlock-i686.d tests/deadlock-aarch64.d tests/swdeadlock-lli.d

check_PROGRAMS += tests/check_watchdog
TESTS += tests/check_watchdog
tests_check_watchdog_SOURCES = tests/deadlock/check_watchdog.c
tests_check_watchdog_LDADD = libstackwalk_elf.la -lpthread

# The stack set's grouping of mapped files into modules, on a made-up target.
check_PROGRAMS += tests/check_stack_set
TESTS += tests/check_stack_set
tests_check_stack_set_SOURCES = tests/deadlock/check_stack_set.c
tests_check_stack_set_CFLAGS = $(TEST_CFLAGS)
tests_check_stack_set_LDADD = $(TEST_LIBS)

dist_man_MANS += \
	man/swdeadlock.1 \
	man/sw_hang_report.3 \
	man/sw_hang_analyze_process.3 \
	man/sw_hang_analyze_core.3 \
	man/sw_hang_report_free.3 \
	man/sw_hang_report_arch.3 \
	man/sw_hang_report_thread_count.3 \
	man/sw_hang_report_thread.3 \
	man/sw_hang_report_frame.3 \
	man/sw_hang_report_cycle_count.3 \
	man/sw_hang_report_cycle.3 \
	man/sw_hang_class_name.3 \
	man/sw_lock_kind_name.3 \
	man/sw_watchdog.3 \
	man/sw_watchdog_create.3 \
	man/sw_watchdog_arm.3 \
	man/sw_watchdog_answer.3 \
	man/sw_watchdog_disarm.3 \
	man/sw_watchdog_destroy.3
