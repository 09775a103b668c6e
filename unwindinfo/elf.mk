# Native modules: ELF files whose DWARF CFI is imported into SWU, with their
# symbols (elfutils' libelf and libdw, so in the elf part of the library);
# their tests and manual pages.

lib_libsw_unwindinfo_elf_la_SOURCES += \
	unwindinfo/cfi_import.h \
	unwindinfo/cfi_import.c \
	unwindinfo/cfi_expr.h \
	unwindinfo/cfi_expr.c \
	unwindinfo/sigreturn_code.c
lib_libsw_native_la_SOURCES += lib/native/module.c lib/native/lazy_cfi.h lib/native/lazy_cfi.c \
	lib/native/backtrace_self.c lib/native/caller_context.h lib/native/caller_context.c
stackwalkinclude_HEADERS += include/stackwalk/backtrace_self.h

# Real programs of every architecture, compiled at check time from
# tests/cfi/ by the cross compilers, are loaded and compared with libdw.
check_PROGRAMS += tests/check_cfi
TESTS += tests/check_cfi
tests_check_cfi_SOURCES = tests/check_cfi.c tests/rounds.h
tests_check_cfi_CPPFLAGS = $(AM_CPPFLAGS) $(LIBELF_CFLAGS) $(LIBDW_CFLAGS) \
	-DCFI_SRCDIR='"$(abs_top_srcdir)/tests/cfi"'
tests_check_cfi_CFLAGS = $(TEST_CFLAGS)
tests_check_cfi_LDADD = $(TEST_LIBS) $(LIBDW_LIBS) $(LIBELF_LIBS)
EXTRA_DIST += tests/cfi/prog.c tests/cfi/lib.c tests/cfi/sigreturn.S
CLEANFILES += -r cfi-bin

dist_man_MANS += \
	man/sw_module.3 \
	man/sw_module_load.3 \
	man/sw_module_load_image.3 \
	man/sw_module_register.3 \
	man/sw_module_unregister.3 \
	man/sw_module_symbolize.3 \
	man/sw_module_functions.3 \
	man/sw_module_stats.3 \
	man/sw_module_skips.3 \
	man/sw_module_skip_name.3 \
	man/sw_module_free.3 \
	man/sw_module_import_noted.3 \
	man/sw_backtrace_self.3 \
	man/sw_swu_def_cfa.3 \
	man/sw_swu_def_cfa_offset.3 \
	man/sw_swu_saved_at.3 \
	man/sw_swu_same_value.3 \
	man/sw_swu_def_cfa_deref.3 \
	man/sw_swu_saved_at_reg.3

# A debugger's side of the GDB JIT interface: another process's list read
# through sw_memory, each object (placed at its sections' addresses when it
# is relocatable, as LLVM's are) loaded as a module.
lib_libsw_native_la_SOURCES += lib/native/jit_object.h lib/native/jit_object.c \
	lib/native/gdbjit_read.c
dist_man_MANS += man/sw_gdbjit_read.3 man/sw_gdbjit_list_objects.3 man/sw_gdbjit_list_symbolize.3 \
	man/sw_gdbjit_list_free.3
check_PROGRAMS += tests/check_gdbjit_read
TESTS += tests/check_gdbjit_read
tests_check_gdbjit_read_SOURCES = tests/check_gdbjit_read.c tests/gdbjit_object.h
tests_check_gdbjit_read_CFLAGS = $(TEST_CFLAGS)
tests_check_gdbjit_read_LDADD = $(TEST_LIBS)
