# swprof: a sampling profiler to LD_PRELOAD (libswprof.so, installed in
# $(pkglibdir)), built on the thread registry and sampler; its test and
# manual page.
pkglib_LTLIBRARIES = examples/libswprof.la
examples_libswprof_la_SOURCES = examples/swprof.c examples/swprof_guard.c examples/swprof.h \
	examples/swprof_walk.c examples/swprof_deferred.c examples/swprof_threads.c examples/swprof_names.c examples/swprof_write.c examples/swprof_svg.c examples/swprof_pprof.c \
	examples/perf_map.c examples/perf_map.h examples/read_bounded.c examples/read_bounded.h
examples_libswprof_la_CFLAGS = $(AM_CFLAGS) -fvisibility=hidden
examples_libswprof_la_LDFLAGS = -module -avoid-version -shared
examples_libswprof_la_LIBADD = libstackwalk_elf.la $(LIBELF_LIBS) -ldl -lpthread
# pprof output: the encoder protoc-c generates from examples/profile.proto.
EXTRA_DIST += examples/profile.proto
if HAVE_PPROF
nodist_examples_libswprof_la_SOURCES = examples/profile.pb-c.c examples/profile.pb-c.h
examples_libswprof_la_CPPFLAGS = $(AM_CPPFLAGS) -DSWPROF_PPROF -Iexamples $(PPROF_CFLAGS)
examples_libswprof_la_LIBADD += $(PPROF_LIBS)
BUILT_SOURCES += examples/profile.pb-c.h
CLEANFILES += examples/profile.pb-c.c examples/profile.pb-c.h
examples/profile.pb-c.h: examples/profile.pb-c.c
examples/profile.pb-c.c: $(srcdir)/examples/profile.proto
	$(AM_V_GEN)$(MKDIR_P) examples && \
	$(PROTOC_C) --c_out=examples --proto_path=$(srcdir)/examples $(srcdir)/examples/profile.proto
endif

# swprof -p: the command that samples a running process with perf_event_open
# and unwinds the kernel's copies of its stacks with the same walk and writers.
bin_PROGRAMS += examples/swprof
examples_swprof_SOURCES = examples/swprof_main.c examples/swprof_attach.c examples/swprof_attach.h \
	examples/swprof_process.c examples/swprof_process.h examples/swprof_jit.c examples/swprof_jit.h \
	examples/swprof.h examples/swprof_walk.c examples/swprof_threads.c \
	examples/swprof_names.c examples/swprof_write.c examples/swprof_svg.c examples/swprof_pprof.c \
	examples/swstack_elf.c examples/swstack_elf.h examples/tool_options.c examples/tool_options.h \
	examples/escape.c examples/escape.h examples/remote_map.c examples/remote_map.h \
	examples/jit_lists.c examples/jit_lists.h \
	examples/perf_map.c examples/perf_map.h examples/read_bounded.c examples/read_bounded.h
examples_swprof_LDADD = libstackwalk.la $(LIBELF_LIBS)
if HAVE_PPROF
nodist_examples_swprof_SOURCES = examples/profile.pb-c.c examples/profile.pb-c.h
examples_swprof_CPPFLAGS = $(AM_CPPFLAGS) -DSWPROF_PPROF -Iexamples $(PPROF_CFLAGS)
examples_swprof_LDADD += $(PPROF_LIBS)
endif

# swprof -p on a running program, against perf record -p --call-graph dwarf.
check_PROGRAMS += tests/swprof/attach_victim
tests_swprof_attach_victim_SOURCES = tests/swprof/attach_victim.c
tests_swprof_attach_victim_CFLAGS = $(AM_CFLAGS) -O1 -g -fno-inline -fno-optimize-sibling-calls
tests_swprof_attach_victim_LDADD = -lpthread
TESTS += tests/swprof-attach.test tests/swprof-attach-denied.test
EXTRA_DIST += tests/swprof-attach.test tests/swprof-attach-denied.test

check_PROGRAMS += tests/swprof_victim
tests_swprof_victim_SOURCES = tests/swprof_victim.c
tests_swprof_victim_CFLAGS = $(AM_CFLAGS) -O1 -g -fno-omit-frame-pointer
tests_swprof_victim_LDADD = -lpthread
TESTS += tests/swprof.test
EXTRA_DIST += tests/swprof.test
dist_man_MANS += man/swprof.1

# Thread names and ids in the profiles (pprof labels, --threads/SWPROF_THREADS
# folded lines) against what the program, /proc and perf say.
check_PROGRAMS += tests/swprof/named_threads
tests_swprof_named_threads_SOURCES = tests/swprof/named_threads.c
tests_swprof_named_threads_CFLAGS = $(AM_CFLAGS) -O1 -g -fno-inline -fno-omit-frame-pointer
tests_swprof_named_threads_LDADD = -lpthread
TESTS += tests/swprof-threads.test
EXTRA_DIST += tests/swprof-threads.test
CLEANFILES += -r tests/swprof-threads.d

# swprof -p on JIT code: a runtime's published code map (toyjit-remote -b),
# read from the running process, against the runtime's own walk.
TESTS += tests/swprof-toyjit-attach.test tests/swprof-toyjit-torn.test
EXTRA_DIST += tests/swprof-toyjit-attach.test tests/swprof-toyjit-torn.test
CLEANFILES += -r tests/swprof-toyjit-attach.d tests/swprof-toyjit-torn.d

# swprof -p on LLVM's lli: JIT objects registered with gdb, read live, against gdb.
TESTS += tests/swprof-lli.test
EXTRA_DIST += tests/swprof-lli.test
CLEANFILES += -r tests/swprof-lli.d
