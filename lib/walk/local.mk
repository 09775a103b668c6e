# walk: the iterator and its frame step, the callback walk, sw_backtrace,
# the crawl frame, GC roots, the profiler's snapshot; shadow stacks.
lib_libsw_walk_la_SOURCES += \
	lib/walk/iter.h \
	lib/walk/iter.c \
	lib/walk/iter_unwind.h \
	lib/walk/iter_unwind.c \
	lib/walk/call_site.h \
	lib/walk/call_site.c \
	lib/walk/crawl_frame.c \
	lib/walk/gc_roots.c \
	lib/walk/snapshot.c \
	lib/walk/walk.c

# Shadow stacks: a runtime's own record of the methods each
# thread is in, readable by a sampler at any time; their test and pages.
lib_libsw_walk_la_SOURCES += lib/walk/shadow.c
stackwalkinclude_HEADERS += include/stackwalk/shadow.h

check_PROGRAMS += tests/check_shadow
TESTS += tests/check_shadow
tests_check_shadow_SOURCES = tests/check_shadow.c
tests_check_shadow_CFLAGS = $(TEST_CFLAGS)
tests_check_shadow_LDADD = $(TEST_LIBS) -lpthread

dist_man_MANS += \
	man/sw_shadow.3 \
	man/sw_shadow_init.3 \
	man/sw_shadow_enter.3 \
	man/sw_shadow_leave.3 \
	man/sw_shadow_snapshot.3 \
	man/sw_shadow_overflows.3

# Exception dispatch: the two passes over the iterator and the tracker
# walks see (lib/target/resume.c jumps to the continuation); its test,
# whose expectations come from an interpreter of the same try program.
lib_libsw_walk_la_SOURCES += lib/walk/dispatch.c
stackwalkinclude_HEADERS += include/stackwalk/dispatch.h

check_PROGRAMS += tests/check_dispatch
TESTS += tests/check_dispatch
tests_check_dispatch_SOURCES = tests/check_dispatch.c tests/stack_builder.c tests/stack_builder.h
tests_check_dispatch_CPPFLAGS = $(AM_CPPFLAGS) -DDISPATCH_SRCDIR='"$(abs_top_srcdir)/tests/dispatch"'
tests_check_dispatch_CFLAGS = $(TEST_CFLAGS)
tests_check_dispatch_LDADD = $(TEST_LIBS)
EXTRA_DIST += tests/dispatch/personality.cpp tests/dispatch/plain.c
CLEANFILES += -r tests/check_dispatch.d

dist_man_MANS += \
	man/sw_exception_dispatch.3 \
	man/sw_context_resume.3
