# swstack: every thread's backtrace of a process or a core file, native
# frames included, through the public API; and the test that compares it
# with gdb on real programs built for x86-64, i686 and aarch64.
bin_PROGRAMS += examples/swstack
examples_swstack_SOURCES = examples/swstack.c examples/swstack_elf.c examples/swstack_elf.h \
	examples/frame_names.c examples/frame_names.h examples/escape.c examples/escape.h \
	examples/tool_options.c examples/tool_options.h \
	examples/target_errors.c examples/target_errors.h examples/remote_map.c examples/remote_map.h \
	examples/jit_lists.c examples/jit_lists.h examples/perf_map.c examples/perf_map.h \
	lib/target/module_layout.c lib/target/module_layout.h \
	examples/read_bounded.c examples/read_bounded.h
examples_swstack_LDADD = libstackwalk.la
dist_man_MANS += man/swstack.1

TESTS += tests/swstack-gdb.test
EXTRA_DIST += tests/swstack-gdb.test tests/swstack/prog.c tests/swstack/common.sh
tests/swstack-gdb.log: tests/swstack-gdb.env examples/swstack$(EXEEXT) examples/swimport$(EXEEXT)

# swstack -p on live processes (x86-64, and i686 where the kernel runs it), against gdb -p, --json
# checked strictly, and the processes let go cleanly.
TESTS += tests/swstack-live.test
EXTRA_DIST += tests/swstack-live.test tests/swstack/live.c tests/swstack/json_check.py
tests/swstack-live.log: tests/swstack-gdb.env examples/swstack$(EXEEXT) examples/swimport$(EXEEXT)

# Truncated and corrupted cores and programs of the three arches, in
# process (tests/swstack/hostile, which also reads them as swstack does)
# and through the tool.
check_PROGRAMS += tests/swstack/hostile
tests_swstack_hostile_SOURCES = tests/swstack/hostile.c examples/swstack_elf.c examples/swstack_elf.h
tests_swstack_hostile_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples
tests_swstack_hostile_LDADD = libstackwalk.la
TESTS += tests/swstack-hostile.test
EXTRA_DIST += tests/swstack-hostile.test
tests/swstack-hostile.log: tests/swstack-gdb.env examples/swstack$(EXEEXT) examples/swimport$(EXEEXT) \
	tests/swstack/hostile$(EXEEXT)

# swstack -p through the code LLVM's lli (MCJIT, ORC, lazy ORC) registers
# with gdb (the GDB JIT interface), against gdb -p.
TESTS += tests/swstack-lli.test
EXTRA_DIST += tests/swstack-lli.test tests/swstack/lli-rec.c
tests/swstack-lli.log: tests/swstack-gdb.env examples/swstack$(EXEEXT)

# The tools the tests use; override on the make command line
# (CROSS_CC_I686, CROSS_CC_AARCH64, QEMU_AARCH64 and QEMU_I386 are the toy JIT's).
SWSTACK_GDB = gdb-multiarch
.PHONY: tests/swstack-gdb.env
tests/swstack-gdb.env:
	$(AM_V_GEN)$(MKDIR_P) tests && { \
	  echo "SWSTACK_CC='$(CC)'"; \
	  echo "CROSS_CC_I686='$(CROSS_CC_I686)'"; \
	  echo "CROSS_CC_AARCH64='$(CROSS_CC_AARCH64)'"; \
	  echo "QEMU_AARCH64='$(QEMU_AARCH64)'"; \
	  echo "QEMU_I386='$(QEMU_I386)'"; \
	  echo "GDB='$(SWSTACK_GDB)'"; \
	} >$@
CLEANFILES += tests/swstack-gdb.env
clean-local: clean-swstack-gdb
.PHONY: clean-swstack-gdb
clean-swstack-gdb:
	-rm -rf tests/swstack-gdb.d tests/swstack-live.d tests/swstack-hostile.d tests/swstack-lli.d
