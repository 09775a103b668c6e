# The code map's page nodes, and its memory: its entry and page-node
# allocator (size-segregated free lists over blocks) and the batches that
# retire unlinked objects.
libstackwalk_core_la_SOURCES += \
	lib/codemap_page.h \
	lib/codemap_page.c \
	lib/codemap_slab.h \
	lib/codemap_slab.c \
	lib/codemap_retire.h \
	lib/codemap_retire.c

# Code tables: a module's functions registered as one sorted array.
libstackwalk_core_la_SOURCES += \
	lib/codemap_table.h \
	lib/codemap_table.c \
	lib/codemap_table_build.c

check_PROGRAMS += tests/check_codetable
TESTS += tests/check_codetable
tests_check_codetable_SOURCES = tests/check_codetable.c
tests_check_codetable_CFLAGS = $(TEST_CFLAGS)
tests_check_codetable_LDADD = $(TEST_LIBS) -lpthread
