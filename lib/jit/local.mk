# Tools JIT authors already use: perf (perf-PID.map, jitdump) and gdb (the
# JIT interface) see JIT methods.  CFI is derived from SWU in the core
# (unwindinfo/swu_to_cfi.c, no elfutils); the code map tells observers of
# every method it adds and removes.
lib_libsw_codemap_la_SOURCES += \
	lib/codemap/codemap_observer.h \
	lib/codemap/codemap_observer.c
lib_libsw_unwindinfo_la_SOURCES += \
	unwindinfo/swu_to_cfi.h \
	unwindinfo/swu_to_cfi.c
lib_libsw_jit_la_SOURCES += \
	lib/jit/jit_elf.h \
	lib/jit/jit_elf.c \
	lib/jit/jit_tool.h \
	lib/jit/gdb_jit.c \
	lib/jit/perf_files.h \
	lib/jit/perf_map.c \
	lib/jit/jitdump.c \
	lib/jit/perf.c \
	lib/jit/remote_read.c
stackwalkinclude_HEADERS += include/stackwalk/perf.h include/stackwalk/gdbjit.h \
	include/stackwalk/remote.h

# CFI read back with libdw against SWU at every offset (toy JIT and
# synthetic methods of every architecture), observers, perf's files, gdb's
# descriptor list.
if TOYJIT_X64
check_PROGRAMS += tests/check_jit_tools
TESTS += tests/check_jit_tools
tests_check_jit_tools_SOURCES = tests/check_jit_tools.c tests/rounds.h
tests_check_jit_tools_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/toyjit $(LIBELF_CFLAGS) $(LIBDW_CFLAGS)
tests_check_jit_tools_CFLAGS = $(TEST_CFLAGS)
tests_check_jit_tools_LDADD = examples/toyjit/libtoyjit.la $(TEST_LIBS) $(LIBDW_LIBS) $(LIBELF_LIBS)
endif

# perf names, and gdb backtraces through, the toy JIT's methods (x86-64).
# perf_data_forge stands in for perf record where it cannot record.
if TOYJIT_X64
check_PROGRAMS += tests/perf_data_forge
tests_perf_data_forge_SOURCES = tests/perf_data_forge.c
TESTS += tests/perf-jit.test tests/gdb-jit.test
tests/perf-jit.log: examples/toyjit-demo$(EXEEXT) tests/perf_data_forge$(EXEEXT)
tests/gdb-jit.log: examples/toyjit-demo$(EXEEXT)
endif
EXTRA_DIST += tests/perf-jit.test tests/gdb-jit.test
clean-local: clean-perfgdb
.PHONY: clean-perfgdb
clean-perfgdb:
	-rm -rf tests/perf-jit.d tests/gdb-jit.d

dist_man_MANS += \
	man/sw_codemap_observe.3 \
	man/sw_codemap_unobserve.3 \
	man/sw_perf.3 \
	man/sw_perf_create.3 \
	man/sw_perf_destroy.3 \
	man/sw_perf_attach.3 \
	man/sw_perf_detach.3 \
	man/sw_perf_add.3 \
	man/sw_perf_path.3 \
	man/sw_perf_status.3 \
	man/sw_gdbjit.3 \
	man/sw_gdbjit_create.3 \
	man/sw_gdbjit_destroy.3 \
	man/sw_gdbjit_attach.3 \
	man/sw_gdbjit_detach.3 \
	man/sw_gdbjit_add.3 \
	man/sw_gdbjit_remove.3 \
	man/sw_gdbjit_status.3 \
	man/sw_publisher.3 \
	man/sw_publisher_create.3 \
	man/sw_publisher_destroy.3 \
	man/sw_publisher_attach.3 \
	man/sw_publisher_detach.3 \
	man/sw_publisher_thread.3 \
	man/sw_publisher_thread_remove.3 \
	man/sw_publisher_status.3 \
	man/sw_remote.3 \
	man/sw_remote_read.3 \
	man/sw_remote_free.3 \
	man/sw_remote_flags.3 \
	man/sw_remote_method_count.3 \
	man/sw_remote_method_at.3 \
	man/sw_remote_find.3 \
	man/sw_remote_thread_find.3 \
	man/sw_remote_register.3 \
	man/sw_remote_unregister.3 \
	man/stackwalk-remote.5
