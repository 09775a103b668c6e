# Synthetic stacks (sw_synth): the generator, the expectation and the checked
# walk; their Check suite, the swsynth tool and the manual pages.
lib_libsw_synth_la_SOURCES += \
	lib/synth/synth_internal.h \
	lib/synth/synth.c \
	lib/synth/synth_gen.h \
	lib/synth/synth_gen.c \
	lib/synth/synth_machine.c \
	lib/synth/synth_method.c \
	lib/synth/synth_x64.c \
	lib/synth/synth_x86.c \
	lib/synth/synth_arm64.c \
	lib/synth/synth_expect.c \
	lib/synth/synth_check.c

check_PROGRAMS += tests/check_synth
TESTS += tests/check_synth
tests_check_synth_SOURCES = tests/check_synth.c
tests_check_synth_CFLAGS = $(TEST_CFLAGS)
tests_check_synth_LDADD = $(TEST_LIBS)

bin_PROGRAMS += examples/swsynth
examples_swsynth_SOURCES = examples/swsynth.c \
	examples/tool_options.c examples/tool_options.h
examples_swsynth_LDADD = libstackwalk.la

dist_man_MANS += \
	man/sw_synth.3 \
	man/sw_synth_params_default.3 \
	man/sw_synth_create.3 \
	man/sw_synth_destroy.3 \
	man/sw_synth_thread.3 \
	man/sw_synth_context.3 \
	man/sw_synth_expected.3 \
	man/sw_synth_expected_error.3 \
	man/sw_synth_check.3 \
	man/sw_synth_expected_roots.3 \
	man/sw_synth_check_roots.3 \
	man/swsynth.1
