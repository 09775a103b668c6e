# base: what every part uses (util.h: memory reads, little-endian loads;
# array_grow.h), and the public objects a walk starts from: status codes,
# contexts, memory accessors, threads.
lib_libsw_base_la_SOURCES += \
	lib/base/util.h \
	lib/base/array_grow.h \
	lib/base/status.c \
	lib/base/context.c \
	lib/base/memory.c \
	lib/base/thread.c
