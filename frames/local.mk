# Frames: the base layout, push/pop, the type registry, one file per family.
libstackwalk_core_la_SOURCES += \
	frames/frame.c \
	frames/frame_registry.c \
	frames/inlined_call_frame.c \
	frames/transition_frame.c \
	frames/frames_internal.h
