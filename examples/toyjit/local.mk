# The toy JIT (x86-64 hosts): a convenience library shared by the demo, its
# test and the benchmark, and the demo itself, which uses only the public API.
if TOYJIT_X64
noinst_LTLIBRARIES += examples/toyjit/libtoyjit.la
examples_toyjit_libtoyjit_la_SOURCES = \
	examples/toyjit/x64_emit.h \
	examples/toyjit/x64_emit.c \
	examples/toyjit/toyjit.h \
	examples/toyjit/toyjit.c \
	examples/toyjit/toyjit_check.h \
	examples/toyjit/toyjit_check.c

noinst_PROGRAMS += examples/toyjit-demo
examples_toyjit_demo_SOURCES = examples/toyjit/toyjit_demo.c
examples_toyjit_demo_LDADD = examples/toyjit/libtoyjit.la libstackwalk.la

check_PROGRAMS += tests/check_toyjit
TESTS += tests/check_toyjit
tests_check_toyjit_SOURCES = tests/check_toyjit.c
tests_check_toyjit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/toyjit
tests_check_toyjit_CFLAGS = $(TEST_CFLAGS)
tests_check_toyjit_LDADD = examples/toyjit/libtoyjit.la $(TEST_LIBS)
endif

dist_man_MANS += man/toyjit-demo.1
