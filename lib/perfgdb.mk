# Tools JIT authors already use: perf (perf-PID.map, jitdump) and gdb (the
# JIT interface) see JIT methods.  CFI is derived from SWU in the core
# (unwindinfo/swu_to_cfi.c, no elfutils); the code map tells observers of
# every method it adds and removes.
libstackwalk_core_la_SOURCES += \
	lib/codemap_observer.h \
	lib/codemap_observer.c \
	unwindinfo/swu_to_cfi.h \
	unwindinfo/swu_to_cfi.c \
	lib/jit_elf.h \
	lib/jit_elf.c \
	lib/gdb_jit.c \
	lib/perf_files.h \
	lib/perf_map.c \
	lib/jitdump.c \
	lib/perf.c
stackwalkinclude_HEADERS += include/stackwalk/perf.h include/stackwalk/gdbjit.h
