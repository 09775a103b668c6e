# swverify: SWU checked against machine code (sw_unwind_verify) for an SWU
# image and its ELF file or code dump, and, where the toy JIT is built, for
# its methods in process as it emits them.
bin_PROGRAMS += examples/swverify
examples_swverify_SOURCES = examples/swverify.c examples/read_bounded.c examples/read_bounded.h \
	examples/progress.c examples/progress.h examples/escape.c examples/escape.h \
	examples/tool_options.c examples/tool_options.h
if TOYJIT_X64
examples_swverify_CPPFLAGS = $(AM_CPPFLAGS) -DSWVERIFY_TOYJIT -I$(top_srcdir)/examples/toyjit
examples_swverify_LDADD = examples/toyjit/libtoyjit.la libstackwalk.la
else
examples_swverify_LDADD = libstackwalk.la
endif
dist_man_MANS += man/swverify.1

# The toy JIT's methods on x86-64 (in process), i386 and arm64 (cross-built
# dumps verified here); needs the cross tools' list, like cross-toyjit.
if TOYJIT_X64
TESTS += tests/swverify-toyjit.test
tests/swverify-toyjit.log: tests/cross-toyjit.env examples/swverify$(EXEEXT)
endif
EXTRA_DIST += tests/swverify-toyjit.test tests/toyjit_dump.c

# The CFI importer's output for compiled test programs and C libraries.
TESTS += tests/swverify-elf.test
tests/swverify-elf.log: examples/swverify$(EXEEXT) examples/swimport$(EXEEXT)
EXTRA_DIST += tests/swverify-elf.test
