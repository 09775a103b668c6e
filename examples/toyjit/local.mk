# The toy JIT (x86-64 hosts): a convenience library shared by the demo, its
# test and the benchmark, and the demo itself, which uses only the public API.
if TOYJIT_X64
noinst_LTLIBRARIES += examples/toyjit/libtoyjit.la
examples_toyjit_libtoyjit_la_SOURCES = \
	$(TOYJIT_COMMON_FILES) \
	examples/toyjit/x64_emit.h \
	examples/toyjit/x64_emit.c \
	examples/toyjit/toyjit_x64.c

noinst_PROGRAMS += examples/toyjit-demo
examples_toyjit_demo_SOURCES = examples/toyjit/toyjit_demo.c
examples_toyjit_demo_LDADD = examples/toyjit/libtoyjit.la libstackwalk.la

# The toy JIT publishing its code map, stopped for a debugger (tests/remote-toyjit.test).
noinst_PROGRAMS += examples/toyjit-remote
examples_toyjit_remote_SOURCES = examples/toyjit/toyjit_remote.c
examples_toyjit_remote_LDADD = examples/toyjit/libtoyjit.la libstackwalk.la -lpthread

check_PROGRAMS += tests/check_toyjit
TESTS += tests/check_toyjit
tests_check_toyjit_SOURCES = tests/check_toyjit.c
tests_check_toyjit_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_srcdir)/examples/toyjit
tests_check_toyjit_CFLAGS = $(TEST_CFLAGS)
tests_check_toyjit_LDADD = examples/toyjit/libtoyjit.la $(TEST_LIBS)

# The same tests on real i686 and arm64 code: the library's core, the toy
# JIT and a plain-C driver cross-built statically, the i686 one run natively
# (under qemu-i386 where the kernel cannot) and the arm64 one under
# qemu-aarch64 (see tests/cross-toyjit.sh).
TESTS += tests/cross-toyjit-i686.test tests/cross-toyjit-arm64.test
tests/cross-toyjit-i686.log tests/cross-toyjit-arm64.log: tests/cross-toyjit.env
endif

# Every back end's sources are distributed; the host's is built.
TOYJIT_COMMON_FILES = \
	examples/toyjit/code_buf.h \
	examples/toyjit/code_buf.c \
	examples/toyjit/toyjit.h \
	examples/toyjit/toyjit_backend.h \
	examples/toyjit/toyjit.c \
	examples/toyjit/toyjit_check.h \
	examples/toyjit/toyjit_check.c \
	examples/toyjit/toyjit_async.h \
	examples/toyjit/toyjit_async.c \
	examples/toyjit/toyjit_gc.h \
	examples/toyjit/toyjit_gc.c
TOYJIT_X86_FILES = examples/toyjit/x86_emit.h examples/toyjit/x86_emit.c examples/toyjit/toyjit_x86.c
TOYJIT_ARM64_FILES = examples/toyjit/arm64_emit.h examples/toyjit/arm64_emit.c examples/toyjit/toyjit_arm64.c
EXTRA_DIST += $(TOYJIT_COMMON_FILES) $(TOYJIT_X86_FILES) $(TOYJIT_ARM64_FILES) \
	tests/cross_toyjit.c tests/cross-toyjit.sh \
	tests/cross-toyjit-i686.test tests/cross-toyjit-arm64.test

# The cross tools; override on the make command line.  i686 programs run
# natively, or under QEMU_I386 where the kernel cannot exec i386 programs
# (tests/i386-host.sh).
CROSS_CC_I686 = i686-linux-gnu-gcc
CROSS_CC_AARCH64 = aarch64-linux-gnu-gcc
QEMU_AARCH64 = qemu-aarch64
QEMU_I386 = qemu-i386

# What the cross tests build, for tests/cross-toyjit.sh: written on every
# run, so that tools given on the make command line take effect.
.PHONY: tests/cross-toyjit.env
tests/cross-toyjit.env:
	$(AM_V_GEN)$(MKDIR_P) tests && { \
	  echo "CROSS_INCLUDES='$(SW_INC_all)'"; \
	  echo "CROSS_CORE_SOURCES='$(filter %.c,$(SW_CORE_FILES))'"; \
	  echo "CROSS_TOYJIT_SOURCES='$(filter %.c,$(TOYJIT_COMMON_FILES)) tests/cross_toyjit.c'"; \
	  echo "CROSS_TOYJIT_X86='$(filter %.c,$(TOYJIT_X86_FILES))'"; \
	  echo "CROSS_TOYJIT_ARM64='$(filter %.c,$(TOYJIT_ARM64_FILES))'"; \
	  echo "CROSS_CFLAGS='$(SW_CFLAGS)'"; \
	  echo "CROSS_CC_I686='$(CROSS_CC_I686)'"; \
	  echo "CROSS_CC_AARCH64='$(CROSS_CC_AARCH64)'"; \
	  echo "QEMU_AARCH64='$(QEMU_AARCH64)'"; \
	  echo "QEMU_I386='$(QEMU_I386)'"; \
	} >$@
CLEANFILES += tests/cross-toyjit.env \
	tests/cross-toyjit-i686 tests/cross-toyjit-i686.out \
	tests/cross-toyjit-arm64 tests/cross-toyjit-arm64.out

dist_man_MANS += man/toyjit-demo.1 man/toyjit-remote.1
