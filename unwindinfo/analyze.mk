# Instruction analysis (Capstone): unwind rules for native code that has no
# CFI, or CFI that SWU cannot express; SWU images of whole modules and their
# registration; their tests and manual pages.

lib_libsw_unwindinfo_elf_la_SOURCES += \
	unwindinfo/analyze.h \
	unwindinfo/analyze.c \
	unwindinfo/analyze_module.c
lib_libsw_native_la_SOURCES += \
	lib/native/image_format.h \
	lib/native/image.c

stackwalkinclude_HEADERS += include/stackwalk/image.h

check_PROGRAMS += tests/check_analyze
TESTS += tests/check_analyze
tests_check_analyze_SOURCES = tests/check_analyze.c tests/i386_host.c tests/i386_host.h
tests_check_analyze_CPPFLAGS = $(AM_CPPFLAGS) $(LIBELF_CFLAGS) $(LIBDW_CFLAGS) $(CAPSTONE_CFLAGS) \
	-DANALYZE_SRCDIR='"$(abs_top_srcdir)/tests/analyze"'
tests_check_analyze_CFLAGS = $(TEST_CFLAGS)
tests_check_analyze_LDADD = $(TEST_LIBS) $(LIBDW_LIBS) $(LIBELF_LIBS) $(CAPSTONE_LIBS)
EXTRA_DIST += tests/analyze/prog.c tests/analyze/stubs_x64.S
CLEANFILES += -r analyze-bin

dist_man_MANS += \
	man/sw_image.3 \
	man/sw_codemap_add_image.3 \
	man/sw_codemap_remove_image.3 \
	man/sw_image_validate.3 \
	man/sw_image_methods.3 \
	man/sw_image_arch.3 \
	man/sw_image_free.3 \
	man/sw_module_write_image.3 \
	man/sw_module_load_flags.3 \
	man/sw_module_load_image_flags.3 \
	man/sw_module_load_progress.3
