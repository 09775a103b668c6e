# Verification (Capstone): SWU checked against the machine code it
# describes; the swverify tool, its tests and manual pages.

lib_libsw_unwindinfo_elf_la_SOURCES += \
	unwindinfo/verify_job.h \
	unwindinfo/verify.c \
	unwindinfo/verify_ops.c \
	unwindinfo/verify_rows.c

stackwalkinclude_HEADERS += include/stackwalk/verify.h

dist_man_MANS += \
	man/sw_unwind_verify.3 \
	man/sw_verify_reason_name.3

# Hand-assembled functions described right and wrong, hostile bytes, and
# the CFI of this test program and of its C library against their code.
check_PROGRAMS += tests/check_verify
TESTS += tests/check_verify
tests_check_verify_SOURCES = tests/check_verify.c
tests_check_verify_CFLAGS = $(TEST_CFLAGS)
tests_check_verify_LDADD = $(TEST_LIBS)
