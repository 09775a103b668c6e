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
