# Benchmarks: built with the tree, never run as tests (no timing is asserted).
# `make bench` runs them.
if TOYJIT_X64
noinst_PROGRAMS += tests/bench/bench-walk
tests_bench_bench_walk_SOURCES = tests/bench/bench_walk.c
tests_bench_bench_walk_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/toyjit
tests_bench_bench_walk_CFLAGS = $(AM_CFLAGS)
tests_bench_bench_walk_LDADD = examples/toyjit/libtoyjit.la libstackwalk.la
if HAVE_LIBUNWIND
tests_bench_bench_walk_CFLAGS += $(LIBUNWIND_CFLAGS)
tests_bench_bench_walk_LDADD += $(LIBUNWIND_LIBS)
endif

bench: tests/bench/bench-walk$(EXEEXT)
	./tests/bench/bench-walk$(EXEEXT)
else
bench:
	@echo "bench: the benchmarks need an x86-64 host"
endif
.PHONY: bench
