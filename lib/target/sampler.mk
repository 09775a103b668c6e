# The thread registry and the signal-driven sampler (Linux, host-only: kept
# out of the portable core), its tests and manual pages.
lib_libsw_target_la_SOURCES += lib/target/sampler.c
stackwalkinclude_HEADERS += include/stackwalk/sampler.h

check_PROGRAMS += tests/check_sampler tests/check_signal_safety
TESTS += tests/check_sampler tests/check_signal_safety
tests_check_sampler_SOURCES = tests/check_sampler.c
tests_check_sampler_CFLAGS = $(TEST_CFLAGS)
tests_check_sampler_LDADD = $(TEST_LIBS) -lpthread

# It defines malloc, free and pthread_mutex_lock itself to catch the walk
# calling them: plain C, no Check (which allocates), -ldl for dlsym.
tests_check_signal_safety_SOURCES = tests/check_signal_safety.c
tests_check_signal_safety_LDADD = libstackwalk_elf.la -ldl -lpthread

dist_man_MANS += \
	man/sw_registry.3 \
	man/sw_registry_create.3 \
	man/sw_registry_destroy.3 \
	man/sw_registry_add_self.3 \
	man/sw_registry_remove_self.3 \
	man/sw_registry_unsafe_enter.3 \
	man/sw_registry_unsafe_leave.3 \
	man/sw_registry_count.3 \
	man/sw_sampler.3 \
	man/sw_sampler_start.3 \
	man/sw_sampler_sample.3 \
	man/sw_sampler_sample_all.3 \
	man/sw_sampler_stop.3 \
	man/sw_sampler_wait.3 \
	man/sw_sampler_chain_action.3

# The sampler's refusals made to happen on cue (it interposes the mutex
# functions: -ldl), and threads exiting while they are walked.
check_PROGRAMS += tests/check_sampler_rules
TESTS += tests/check_sampler_rules
tests_check_sampler_rules_SOURCES = tests/check_sampler_rules.c
tests_check_sampler_rules_CFLAGS = $(TEST_CFLAGS)
tests_check_sampler_rules_LDADD = $(TEST_LIBS) -ldl -lpthread
