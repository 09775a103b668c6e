# The profiler's benchmark: sampling overhead and the cost of one sample.
# Built with the tree, never run as a test (no timing is asserted);
# `make bench-profiler` runs it, and so does `make bench` (BENCH_TARGETS).
BENCH_TARGETS += bench-profiler
if TOYJIT_X64
noinst_PROGRAMS += tests/bench/bench-profiler
tests_bench_bench_profiler_SOURCES = tests/bench/bench_profiler.c $(TOYJIT_WORKLOAD_FILES)
tests_bench_bench_profiler_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/toyjit
tests_bench_bench_profiler_CFLAGS = $(AM_CFLAGS)
tests_bench_bench_profiler_LDADD = examples/toyjit/libtoyjit.la libstackwalk.la -lpthread

bench-profiler: tests/bench/bench-profiler$(EXEEXT)
	./tests/bench/bench-profiler$(EXEEXT)
else
bench-profiler:
	@echo "bench-profiler: the benchmark needs an x86-64 host"
endif
.PHONY: bench-profiler

# bench-attach: one sample's unwinding in swprof -p beside perf report's
# of the same run's perf.data (tests/bench/bench-attach.sh).
EXTRA_DIST += tests/bench/bench-attach.sh
BENCH_TARGETS += bench-attach
BENCH_ATTACH_SECONDS = 5
bench-attach: examples/swprof$(EXEEXT) tests/swprof/attach_victim$(EXEEXT)
	$(SHELL) $(top_srcdir)/tests/bench/bench-attach.sh ./examples/swprof$(EXEEXT) \
		./tests/swprof/attach_victim$(EXEEXT) $(BENCH_ATTACH_SECONDS)
.PHONY: bench-attach
