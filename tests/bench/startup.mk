# The start-up of one walk of a process with libLLVM loaded: swstack -p
# beside eu-stack -p and gdb (issue 25 part 5); `make bench-startup`, and
# part of `make bench`.  BENCH_STARTUP_RUNS sets the runs per tool.
EXTRA_DIST += tests/bench/bench-startup.sh
BENCH_TARGETS += bench-startup
BENCH_STARTUP_RUNS = 5
bench-startup: examples/swstack$(EXEEXT)
	$(SHELL) $(top_srcdir)/tests/bench/bench-startup.sh ./examples/swstack$(EXEEXT) $(BENCH_STARTUP_RUNS)
.PHONY: bench-startup
