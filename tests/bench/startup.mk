# Start-up costs (issue 25 parts 5 and 7), both part of `make bench`:
#   bench-startup: one walk of a process with libLLVM loaded, swstack -p
#     beside eu-stack -p and gdb; clang --version under libswprof.so beside
#     the bare run and perf record; BENCH_STARTUP_RUNS sets the runs per tool.
#   bench-backtrace-self: sw_backtrace_self cold and warm beside glibc's
#     backtrace() and libunwind's unw_backtrace().
EXTRA_DIST += tests/bench/bench-startup.sh
BENCH_TARGETS += bench-startup bench-backtrace-self
BENCH_STARTUP_RUNS = 5
bench-startup: examples/swstack$(EXEEXT) examples/libswprof.la
	$(SHELL) $(top_srcdir)/tests/bench/bench-startup.sh ./examples/swstack$(EXEEXT) $(BENCH_STARTUP_RUNS) \
		./examples/.libs/libswprof.so

noinst_PROGRAMS += tests/bench/bench-backtrace-self
tests_bench_bench_backtrace_self_SOURCES = tests/bench/bench_backtrace_self.c
tests_bench_bench_backtrace_self_LDADD = libstackwalk.la
if HAVE_LIBUNWIND
tests_bench_bench_backtrace_self_CFLAGS = $(AM_CFLAGS) $(LIBUNWIND_CFLAGS) -DHAVE_LIBUNWIND
tests_bench_bench_backtrace_self_LDADD += $(LIBUNWIND_LIBS)
endif
bench-backtrace-self: tests/bench/bench-backtrace-self$(EXEEXT)
	./tests/bench/bench-backtrace-self$(EXEEXT)
.PHONY: bench-startup bench-backtrace-self
