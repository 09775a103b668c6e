# The code map's entry allocator (size-segregated free lists over blocks).
libstackwalk_core_la_SOURCES += \
	lib/codemap_slab.h \
	lib/codemap_slab.c
