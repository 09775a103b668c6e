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

tests_check_hostile_SOURCES = tests/check_hostile.c tests/stack_builder.c tests/stack_builder.h \
	tests/damaged_stack.h
tests_check_hostile_CFLAGS = $(TEST_CFLAGS)
tests_check_hostile_LDADD = $(TEST_LIBS)

# The ABI check reads the built shared library and the installed headers.
# Check's default of 4 s per test is too short for a loaded machine (CI shares
# it): no test here is timed, so give them room rather than fail them.
AM_TESTS_ENVIRONMENT = top_srcdir='$(top_srcdir)'; top_builddir='$(top_builddir)'; \
	CK_DEFAULT_TIMEOUT=600; CK_TIMEOUT_MULTIPLIER=4; QEMU_I386='$(QEMU_I386)'; \
	export top_srcdir top_builddir CK_DEFAULT_TIMEOUT CK_TIMEOUT_MULTIPLIER QEMU_I386;
EXTRA_DIST += tests/check_abi.sh

# Every test runs through tests/run-test.sh, which skips those in
# tests/heavy.list under SW_SKIP_HEAVY=1 (the ASan check and distcheck):
# they run once, in the plain make check.
LOG_COMPILER = $(SHELL) $(top_srcdir)/tests/run-test.sh
TEST_LOG_COMPILER = $(LOG_COMPILER)
EXTRA_DIST += tests/run-test.sh tests/heavy.list

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

# swstack against gdb on kernel cores cut short, as RLIMIT_CORE leaves them (x86-64).
TESTS += tests/swstack-truncated.test
EXTRA_DIST += tests/swstack-truncated.test
tests/swstack-truncated.log: tests/swstack-gdb.env examples/swstack$(EXEEXT)
CLEANFILES += -r tests/swstack-truncated.d

# swstack loads a mapped file only when a walk reaches it; frames against gdb (x86-64).
TESTS += tests/swstack-deferred.test
EXTRA_DIST += tests/swstack-deferred.test tests/swstack/deferred.c
tests/swstack-deferred.log: tests/swstack-gdb.env examples/swstack$(EXEEXT)
CLEANFILES += -r tests/swstack-deferred.d

# swstack on a sparse kernel core bigger than its ulimit -v, against gdb (x86-64).
TESTS += tests/swstack-bigcore.test
EXTRA_DIST += tests/swstack-bigcore.test tests/swstack/bigcore.c
tests/swstack-bigcore.log: tests/swstack-gdb.env examples/swstack$(EXEEXT)
CLEANFILES += -r tests/swstack-bigcore.d

# swstack on the kernel core of an AddressSanitizer process (terabyte
# PT_LOADs without file bytes), against gdb (x86-64).
TESTS += tests/swstack-asancore.test
EXTRA_DIST += tests/swstack-asancore.test tests/swstack/asancore.c
tests/swstack-asancore.log: tests/swstack-gdb.env examples/swstack$(EXEEXT)
CLEANFILES += -r tests/swstack-asancore.d

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
EXTRA_DIST += tests/swstack-stopped.test tests/swstack/stopped.c tests/swstack/landing_pad.c \
	tests/swprof-stopped.test
tests/swstack-stopped.log: tests/swstack-gdb.env examples/swstack$(EXEEXT) examples/swimport$(EXEEXT)
# swprof leaves its target unharmed and writes every process's profile (issue 26).
check_PROGRAMS += tests/swprof_harmless
tests_swprof_harmless_SOURCES = tests/swprof_harmless.c
tests_swprof_harmless_LDADD = -lpthread
TESTS += tests/swprof-harmless.test
EXTRA_DIST += tests/swprof-harmless.test

# The published code map read back as a debugger reads it, and over hostile memory.
check_PROGRAMS += tests/check_remote
TESTS += tests/check_remote
tests_check_remote_SOURCES = tests/check_remote.c tests/fuzz/remote_target.h
tests_check_remote_CFLAGS = $(TEST_CFLAGS)
tests_check_remote_LDADD = $(TEST_LIBS) -lpthread

# swstack -p and --core on the toy JIT that publishes its code map, against
# its own walk: x86-64, and i686 and arm64 cross-built (tests/remote-toyjit.sh).
if TOYJIT_X64
TESTS += tests/remote-toyjit-x86-64.test tests/remote-toyjit-i686.test tests/remote-toyjit-arm64.test
tests/remote-toyjit-x86-64.log tests/remote-toyjit-i686.log tests/remote-toyjit-arm64.log: \
	tests/swstack-gdb.env tests/cross-toyjit.env examples/swstack$(EXEEXT) examples/toyjit-remote$(EXEEXT)
endif
EXTRA_DIST += tests/remote-toyjit.sh tests/remote-toyjit-x86-64.test tests/remote-toyjit-i686.test \
	tests/remote-toyjit-arm64.test
CLEANFILES += -r tests/remote-toyjit-x86-64.d tests/remote-toyjit-i686.d tests/remote-toyjit-arm64.d
# Lazy modules (SW_MODULE_LAZY) against full loads of the same files, hostile .eh_frame_hdr tables.
check_PROGRAMS += tests/check_lazy
TESTS += tests/check_lazy
tests_check_lazy_SOURCES = tests/check_lazy.c
tests_check_lazy_CPPFLAGS = $(AM_CPPFLAGS) $(LIBELF_CFLAGS)
tests_check_lazy_CFLAGS = $(TEST_CFLAGS)
tests_check_lazy_LDADD = $(TEST_LIBS) $(LIBELF_LIBS)
CLEANFILES += lazy-hostile-* lazy-placeholder-*

# sw_backtrace_self against glibc's backtrace(), through a library dlopen'ed, closed and opened again.
check_PROGRAMS += tests/check_backtrace_self
TESTS += tests/check_backtrace_self
tests_check_backtrace_self_SOURCES = tests/check_backtrace_self.c
tests_check_backtrace_self_CFLAGS = $(TEST_CFLAGS)
tests_check_backtrace_self_LDADD = $(TEST_LIBS) -ldl
CLEANFILES += bt-self-lib.c bt-self-lib.so
# CPU-time sampling by default, wall time on request (issue 26).
check_PROGRAMS += tests/swprof_cputime
tests_swprof_cputime_LDADD = -lpthread
TESTS += tests/swprof-cputime.test
EXTRA_DIST += tests/swprof-cputime.test
# pprof output read back by go tool pprof; the interactive flame graph (issue 26).
TESTS += tests/swprof-pprof.test tests/swprof-names.test
EXTRA_DIST += tests/swprof-pprof.test tests/swprof-names.test tests/swprof/svg_check.js
# A deep stack in a shared library the agent registers as a placeholder, against perf (issue 26).
TESTS += tests/swprof-shlib.test
EXTRA_DIST += tests/swprof-shlib.test tests/swprof/deep_lib.c
CLEANFILES += -r tests/swprof-shlib.d
# sw_names: demangling, this process's code named with its lines, bad input (issue 27).
check_PROGRAMS += tests/check_names
TESTS += tests/check_names
tests_check_names_SOURCES = tests/check_names.c
tests_check_names_CFLAGS = $(TEST_CFLAGS)
tests_check_names_LDADD = $(TEST_LIBS)
# swstack's names, inline frames, source lines and thread names against eu-stack -i -s and
# gdb: a C++ and a Rust program, stripped with build-id and debuglink files, MiniDebugInfo.
TESTS += tests/swstack-names.test
EXTRA_DIST += tests/swstack-names.test tests/swstack/names.cc tests/swstack/names.rs \
	tests/swstack/names_compare.py
tests/swstack-names.log: examples/swstack$(EXEEXT) examples/swdeadlock$(EXEEXT)
# sw_names against eu-addr2line and llvm-symbolizer on 2,000 addresses of a
# generated C++ program, built with g++ and clang++ (its per-unit scope index).
TESTS += tests/names-addr2line.test
EXTRA_DIST += tests/names-addr2line.test tests/names-program.sh
tests/names-addr2line.log: tests/bench/bench-names$(EXEEXT)
# A file mapped 20,000 times is loaded once, live and from a core (issue 31).
TESTS += tests/swstack-manymaps.test
EXTRA_DIST += tests/swstack-manymaps.test tests/swstack/manymaps.c
tests/swstack-manymaps.log: tests/swstack-gdb.env examples/swstack$(EXEEXT) examples/swdeadlock$(EXEEXT)
CLEANFILES += -r tests/swstack-manymaps.d

# Cores with hostile counts (repeated NT_FILE entries, limits), synthesized (issue 31).
check_PROGRAMS += tests/check_core_limits
TESTS += tests/check_core_limits
tests_check_core_limits_SOURCES = tests/check_core_limits.c
tests_check_core_limits_CFLAGS = $(TEST_CFLAGS)
tests_check_core_limits_LDADD = $(TEST_LIBS)

# A thread blocked in vfork() is reported, not waited for, nor is one that
# enters vfork() while it is being seized (issue 31).
TESTS += tests/swstack-vfork.test
EXTRA_DIST += tests/swstack-vfork.test tests/swstack/vfork.c tests/swstack/vfork_race.c
tests/swstack-vfork.log: tests/swstack-gdb.env examples/swstack$(EXEEXT) examples/swdeadlock$(EXEEXT)
CLEANFILES += -r tests/swstack-vfork.d

# swstack --image and swverify refuse a directory or /dev/zero (issue 31).
TESTS += tests/tools-bounded-read.test
EXTRA_DIST += tests/tools-bounded-read.test
tests/tools-bounded-read.log: examples/swstack$(EXEEXT) examples/swverify$(EXEEXT)
CLEANFILES += -r tests/tools-bounded-read.d
# A zombie and a missing pid, named as such by swstack and swdeadlock (issue 27).
TESTS += tests/tools-target-errors.test
EXTRA_DIST += tests/tools-target-errors.test
tests/tools-target-errors.log: examples/swstack$(EXEEXT) examples/swdeadlock$(EXEEXT)
# A progress line only on a terminal or with --progress; target strings escaped (issue 27).
TESTS += tests/tools-progress-escape.test
EXTRA_DIST += tests/tools-progress-escape.test
tests/tools-progress-escape.log: examples/swimport$(EXEEXT) examples/swverify$(EXEEXT) examples/swregs$(EXEEXT)
CLEANFILES += -r tests/tools-progress-escape.d
# Node's JIT frames named from its perf map, as perf names them (issue 28).
TESTS += tests/perfmap-node.test
EXTRA_DIST += tests/perfmap-node.test
tests/perfmap-node.log: examples/swstack$(EXEEXT) examples/swprof$(EXEEXT) examples/swdeadlock$(EXEEXT)
CLEANFILES += -r tests/perfmap-node.d
# A core's main thread named from its NT_PRPSINFO note, as eu-readelf reads it (issue 27).
TESTS += tests/core-process-name.test
EXTRA_DIST += tests/core-process-name.test tests/swstack/procname.c
tests/core-process-name.log: tests/swstack-gdb.env examples/swstack$(EXEEXT) examples/swdeadlock$(EXEEXT)
CLEANFILES += -r tests/core-process-name.d

# sw_context_resume on every architecture it supports (tests/resume/resume_test.c):
# the host's run natively, i686 and aarch64 cross-built with the few parts
# of the library it needs and run under qemu-user (tests/resume/run.sh).
check_PROGRAMS += tests/resume/resume-test
TESTS += tests/resume/resume-test tests/resume-i686.test tests/resume-aarch64.test
tests_resume_resume_test_SOURCES = tests/resume/resume_test.c
tests_resume_resume_test_LDADD = libstackwalk.la
EXTRA_DIST += tests/resume/run.sh tests/resume-i686.test tests/resume-aarch64.test
tests/resume-i686.log tests/resume-aarch64.log: tests/resume.env

# What tests/resume/run.sh builds: written on every run, so that tools
# given on the make command line take effect.
.PHONY: tests/resume.env
tests/resume.env:
	$(AM_V_GEN)$(MKDIR_P) tests && { \
	  echo "RESUME_SOURCES='$(filter %.c,$(lib_libsw_base_la_SOURCES) $(lib_libsw_arch_la_SOURCES) $(lib_libsw_target_core_la_SOURCES))'"; \
	  echo "RESUME_CFLAGS='$(SW_CFLAGS)'"; \
	  echo "CROSS_CC_I686='$(CROSS_CC_I686)'"; \
	  echo "CROSS_CC_AARCH64='$(CROSS_CC_AARCH64)'"; \
	  echo "QEMU_AARCH64='$(QEMU_AARCH64)'"; \
	  echo "QEMU_I386='$(QEMU_I386)'"; \
	} >$@
CLEANFILES += tests/resume.env
clean-local: clean-resume
.PHONY: clean-resume
clean-resume:
	-rm -rf tests/resume-i686.d tests/resume-aarch64.d
