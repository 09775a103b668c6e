# The symbolizer's benchmark: naming 10,000 samples of a C++ program with
# sw_names beside eu-addr2line (issue 27).  Built with the tree, never run
# as a test; `make bench-names` runs it, and so does `make bench`.
BENCH_TARGETS += bench-names
noinst_PROGRAMS += tests/bench/bench-names
tests_bench_bench_names_SOURCES = tests/bench/bench_names.c
tests_bench_bench_names_LDADD = libstackwalk.la
EXTRA_DIST += tests/bench/bench-names.sh
bench-names: tests/bench/bench-names$(EXEEXT)
	$(SHELL) $(top_srcdir)/tests/bench/bench-names.sh ./tests/bench/bench-names$(EXEEXT) \
		tests/bench/bench-names.d
CLEANFILES += -r tests/bench/bench-names.d
.PHONY: bench-names
