# The doubling array growth the module loader, the CFI import and the code
# analysis share (a header only).
libstackwalk_elf_la_SOURCES += lib/array_grow.h
