# The walker core: status, architectures, contexts, memory, threads, the walk.
libstackwalk_core_la_SOURCES += \
	lib/internal.h \
	lib/status.c \
	lib/arch.c \
	lib/arch/arch.h \
	lib/arch/x64.c \
	lib/arch/x86.c \
	lib/arch/arm64.c \
	lib/context.c \
	lib/memory.c \
	lib/thread.c \
	lib/target/self.c \
	lib/target/ucontext.c \
	lib/iter.h \
	lib/iter.c \
	lib/backtrace.c \
	lib/iter_unwind.h \
	lib/iter_unwind.c \
	lib/crawl_frame.c \
	lib/gc_roots.c \
	lib/snapshot.c \
	lib/walk.c
