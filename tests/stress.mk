# The concurrency stress: writers add and remove methods while threads and
# signal handlers walk (tests/check_stress.c).  It runs in every make check;
# run-tests.sh also runs it alone in a --enable-tsan build.
check_PROGRAMS += tests/check_stress
TESTS += tests/check_stress
tests_check_stress_SOURCES = tests/check_stress.c
tests_check_stress_CFLAGS = $(TEST_CFLAGS)
tests_check_stress_LDADD = $(TEST_LIBS) -lpthread
