# arch: one table per architecture (registers, pointer size, conventions,
# signal frames, DWARF and syscall numbers): data, no host code.
lib_libsw_arch_la_SOURCES += \
	lib/arch/arch.c \
	lib/arch/arch.h \
	lib/arch/x64.c \
	lib/arch/x86.c \
	lib/arch/arm64.c
