# The multi-threaded toy-JIT workload (x86-64 hosts) and what uses it: the
# sampling accuracy test and the toyjit-workload example (a program to
# profile with swprof).
TOYJIT_WORKLOAD_FILES = examples/toyjit/toyjit_workload.h examples/toyjit/toyjit_workload.c
EXTRA_DIST += $(TOYJIT_WORKLOAD_FILES)
if TOYJIT_X64
check_PROGRAMS += tests/check_sampling_accuracy
TESTS += tests/check_sampling_accuracy
tests_check_sampling_accuracy_SOURCES = tests/check_sampling_accuracy.c $(TOYJIT_WORKLOAD_FILES)
tests_check_sampling_accuracy_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/toyjit
tests_check_sampling_accuracy_CFLAGS = $(TEST_CFLAGS)
tests_check_sampling_accuracy_LDADD = examples/toyjit/libtoyjit.la $(TEST_LIBS) -lpthread
endif

if TOYJIT_X64
noinst_PROGRAMS += examples/toyjit-workload
examples_toyjit_workload_SOURCES = examples/toyjit/toyjit_workload_main.c $(TOYJIT_WORKLOAD_FILES)
examples_toyjit_workload_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/toyjit
# Linked statically: a libtool wrapper script would be profiled too.
examples_toyjit_workload_LDADD = examples/toyjit/libtoyjit.la libstackwalk_elf.la -ldl -lpthread

# swprof on the toy JIT: the JIT's method names in the folded stacks and the SVG.
TESTS += tests/swprof-toyjit.test
endif
EXTRA_DIST += tests/swprof-toyjit.test
dist_man_MANS += man/toyjit-workload.1
