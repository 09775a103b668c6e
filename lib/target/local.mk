# The host's own threads and ucontext_t, in the portable core.
lib_libsw_target_core_la_SOURCES += \
	lib/target/self.c \
	lib/target/ucontext.c \
	lib/target/resume.c

# Debugger targets: ELF core files (libelf) and live processes (ptrace), the
# swregs example, their test and manual pages.  Host-only code, kept out of
# the portable core: it is built into libstackwalk_elf.la.
lib_libsw_target_la_SOURCES += \
	lib/target/core_bytes.h \
	lib/target/core_bytes.c \
	lib/target/core_elf.h \
	lib/target/core_elf.c \
	lib/target/core_notes.h \
	lib/target/core_notes.c \
	lib/target/core_file.c \
	lib/target/module_layout.h \
	lib/target/module_layout.c \
	lib/target/ptrace.c \
	lib/target/regular_file.h \
	lib/target/regular_file.c \
	lib/target/stopped_target.h \
	lib/target/stopped_target.c

noinst_PROGRAMS += examples/swregs
examples_swregs_SOURCES = examples/swregs.c examples/escape.c examples/escape.h \
	examples/tool_options.c examples/tool_options.h
examples_swregs_LDADD = libstackwalk.la

# check_targets attaches to tests/targets/victim and reads its cores; it
# cross-builds the same program for i686 and aarch64 (see the test), and
# runs the i686 one under qemu-i386 where the kernel cannot (i386_host.c).
check_PROGRAMS += tests/check_targets tests/targets/victim
TESTS += tests/check_targets
tests_check_targets_SOURCES = tests/check_targets.c tests/i386_host.c tests/i386_host.h
tests_check_targets_CFLAGS = $(TEST_CFLAGS)
tests_check_targets_LDADD = $(TEST_LIBS)
tests_targets_victim_SOURCES = tests/targets/victim.c
tests_targets_victim_CFLAGS = $(AM_CFLAGS) -O1 -g

dist_man_MANS += \
	man/sw_core.3 \
	man/sw_core_open.3 \
	man/sw_core_open_memory.3 \
	man/sw_core_close.3 \
	man/sw_core_arch.3 \
	man/sw_core_thread_count.3 \
	man/sw_core_thread.3 \
	man/sw_core_memory.3 \
	man/sw_core_module_count.3 \
	man/sw_core_module.3 \
	man/sw_core_stack_bounds.3 \
	man/sw_core_add_executable.3 \
	man/sw_core_add_loader.3 \
	man/sw_core_add_libraries.3 \
	man/sw_core_process_name.3 \
	man/sw_mapped_file.3 \
	man/sw_process.3 \
	man/sw_process_attach.3 \
	man/sw_process_detach.3 \
	man/sw_process_arch.3 \
	man/sw_process_thread_count.3 \
	man/sw_process_thread.3 \
	man/sw_process_unstopped_count.3 \
	man/sw_process_unstopped.3 \
	man/sw_process_memory.3 \
	man/sw_process_module_count.3 \
	man/sw_process_module.3 \
	man/sw_process_stack_bounds.3 \
	man/swregs.1
