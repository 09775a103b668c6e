# names: symbols, source lines and inline chains of code addresses (sw_names),
# through elfutils' libdwfl and libiberty's demangler.  Never on a walk path.
lib_libsw_names_la_SOURCES += \
	lib/names/names.c \
	lib/names/demangled.c \
	lib/names/demangled.h \
	lib/names/scope_index.c \
	lib/names/scope_index.h
dist_man_MANS += \
	man/sw_names.3 \
	man/sw_names_create.3 \
	man/sw_names_free.3 \
	man/sw_names_add_module.3 \
	man/sw_names_add_process.3 \
	man/sw_names_add_core.3 \
	man/sw_names_lookup.3 \
	man/sw_names_symbol.3 \
	man/sw_names_demangle.3
