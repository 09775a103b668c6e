# The code map (IP -> method) and the epoch-based reclamation it reads under.
lib_libsw_codemap_la_SOURCES += \
	lib/codemap/codemap.c \
	lib/codemap/codemap_lookup.h \
	lib/codemap/codemap_window.h \
	lib/codemap/codemap_window.c \
	lib/codemap/codemap_shapes.h \
	lib/codemap/codemap_shapes.c \
	lib/codemap/codemap_validated.h \
	lib/codemap/codemap_validated.c \
	lib/codemap/huge_pages.h \
	lib/codemap/huge_pages.c \
	lib/codemap/body_shape.h \
	lib/codemap/epoch.h \
	lib/codemap/epoch.c \
	lib/codemap/codemap_publish.c \
	lib/codemap/codemap_eh.c

check_PROGRAMS += tests/check_codemap
TESTS += tests/check_codemap
tests_check_codemap_SOURCES = tests/check_codemap.c tests/rounds.h
tests_check_codemap_CFLAGS = $(TEST_CFLAGS)
tests_check_codemap_LDADD = $(TEST_LIBS) -lpthread

dist_man_MANS += \
	man/sw_codemap.3 \
	man/sw_codemap_create.3 \
	man/sw_codemap_destroy.3 \
	man/sw_codemap_add.3 \
	man/sw_codemap_remove.3 \
	man/sw_codemap_find.3 \
	man/sw_codemap_find_batch.3 \
	man/sw_codemap_read_begin.3 \
	man/sw_codemap_read_end.3 \
	man/sw_codemap_synchronize.3 \
	man/sw_codemap_count.3
