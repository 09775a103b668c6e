# Installation: the installed copy is complete and an out-of-tree program
# builds against it through pkg-config.  make check installs the build tree
# with DESTDIR into a temporary directory; make installcheck (run by
# distcheck) checks the real prefix.
TESTS += tests/install.test
tests/install.log: libstackwalk.la libstackwalk.pc
EXTRA_DIST += tests/install.test examples/out-of-tree/jitwalk.c examples/out-of-tree/Makefile

installcheck-local:
	SW_INSTALLED='$(DESTDIR)$(prefix)' top_srcdir='$(top_srcdir)' top_builddir='$(top_builddir)' \
	MAKE='$(MAKE)' $(SHELL) $(top_srcdir)/tests/install.test
