# Benchmarks: built with the tree, never run as tests (no timing is asserted).
# `make bench` runs bench-walk, which runs bench-libgcc (libgcc's peers, in
# a program of their own so that libunwind does not interpose on them) and
# prints one table.  BENCH_ARGS passes options to bench-walk, e.g.
# BENCH_ARGS=--quick.
#
# Other benchmarks hook in from a fragment included after this one:
#   BENCH_TARGETS += bench-profiler
#   bench-profiler: tests/bench/bench-profiler$(EXEEXT)
#   	./tests/bench/bench-profiler$(EXEEXT)
#   .PHONY: bench-profiler
# `make bench` makes every BENCH_TARGETS target, then runs bench-walk.
BENCH_TARGETS =
if TOYJIT_X64
noinst_PROGRAMS += tests/bench/bench-walk tests/bench/bench-libgcc
tests_bench_bench_walk_SOURCES = tests/bench/bench_walk.c tests/bench/bench_svg.c \
	tests/bench/bench_svg.h tests/bench/bench_common.h
tests_bench_bench_walk_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/toyjit
# Frame pointers: the frame-pointer walk is a peer on the native stack too.
tests_bench_bench_walk_CFLAGS = $(AM_CFLAGS) -fno-omit-frame-pointer
tests_bench_bench_walk_LDADD = examples/toyjit/libtoyjit.la libstackwalk.la -lm -lpthread
if HAVE_LIBUNWIND
tests_bench_bench_walk_CFLAGS += $(LIBUNWIND_CFLAGS)
tests_bench_bench_walk_LDADD += $(LIBUNWIND_LIBS)
endif
tests_bench_bench_libgcc_SOURCES = tests/bench/bench_libgcc.c tests/bench/bench_common.h
tests_bench_bench_libgcc_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/toyjit
tests_bench_bench_libgcc_CFLAGS = $(AM_CFLAGS) -fno-omit-frame-pointer
tests_bench_bench_libgcc_LDADD = examples/toyjit/libtoyjit.la libstackwalk.la -lgcc_s

bench: tests/bench/bench-walk$(EXEEXT) tests/bench/bench-libgcc$(EXEEXT) $(BENCH_TARGETS)
	./tests/bench/bench-walk$(EXEEXT) --libgcc ./tests/bench/bench-libgcc$(EXEEXT) \
		--svg $(top_srcdir)/doc/bench $(BENCH_ARGS)
else
bench: $(BENCH_TARGETS)
	@echo "bench: the library's benchmarks need an x86-64 host"
endif
.PHONY: bench

# The walk's fast path (the body rule) against the decoder, at every
# offset it covers: a correctness test, part of make check.
check_PROGRAMS += tests/check_body_rule
TESTS += tests/check_body_rule
tests_check_body_rule_SOURCES = tests/bench/check_body_rule.c
tests_check_body_rule_CFLAGS = $(TEST_CFLAGS)
tests_check_body_rule_LDADD = $(TEST_LIBS)

# The worst case of one walk: a damaged 8 MB stack run to its step bound.
BENCH_TARGETS += bench-damaged
noinst_PROGRAMS += tests/bench/bench-damaged
tests_bench_bench_damaged_SOURCES = tests/bench/bench_damaged.c tests/damaged_stack.h
tests_bench_bench_damaged_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/tests
tests_bench_bench_damaged_LDADD = libstackwalk.la
bench-damaged: tests/bench/bench-damaged$(EXEEXT)
	./tests/bench/bench-damaged$(EXEEXT)
.PHONY: bench-damaged

# A throw caught 1, 10 and 100 frames up, through sw_exception_dispatch,
# beside C++'s throw/catch through as many frames (bench_throw_cxx.cpp,
# built here with g++ when there is one: configure knows no C++ compiler).
BENCH_TARGETS += bench-throw
noinst_PROGRAMS += tests/bench/bench-throw
tests_bench_bench_throw_SOURCES = tests/bench/bench_throw.c tests/bench/bench_common.h
tests_bench_bench_throw_LDADD = libstackwalk.la
EXTRA_DIST += tests/bench/bench_throw_cxx.cpp
CLEANFILES += tests/bench/bench-throw-cxx
bench-throw: tests/bench/bench-throw$(EXEEXT)
	@if command -v g++ >/dev/null 2>&1 && \
	    g++ -O2 -o tests/bench/bench-throw-cxx $(top_srcdir)/tests/bench/bench_throw_cxx.cpp; then \
		./tests/bench/bench-throw$(EXEEXT) --cxx ./tests/bench/bench-throw-cxx; \
	else \
		./tests/bench/bench-throw$(EXEEXT); \
	fi
.PHONY: bench-throw
