# The code map's page nodes, and its memory: its entry and page-node
# allocator (size-segregated free lists over blocks) and the batches that
# retire unlinked objects.
lib_libsw_codemap_la_SOURCES += \
	lib/codemap/codemap_page.h \
	lib/codemap/codemap_page.c \
	lib/codemap/codemap_slab.h \
	lib/codemap/codemap_slab.c \
	lib/codemap/codemap_retire.h \
	lib/codemap/codemap_retire.c

# Code tables: a module's functions registered as one sorted array.
lib_libsw_codemap_la_SOURCES += \
	lib/codemap/codemap_table.h \
	lib/codemap/codemap_table.c \
	lib/codemap/codemap_table_build.c

check_PROGRAMS += tests/check_codetable
TESTS += tests/check_codetable
tests_check_codetable_SOURCES = tests/check_codetable.c
tests_check_codetable_CFLAGS = $(TEST_CFLAGS)
tests_check_codetable_LDADD = $(TEST_LIBS) -lpthread
