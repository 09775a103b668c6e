# swimport: an ELF file's CFI (and instruction analysis) into an SWU image.
bin_PROGRAMS += examples/swimport
examples_swimport_SOURCES = examples/swimport.c examples/progress.c examples/progress.h \
	examples/escape.c examples/escape.h \
	examples/tool_options.c examples/tool_options.h
examples_swimport_LDADD = libstackwalk.la
dist_man_MANS += man/swimport.1 man/swu-image.5
