# Frames: the base layout, push/pop, the type registry, one file per family.
lib_libsw_frames_la_SOURCES += \
	frames/frame.c \
	frames/frame_registry.c \
	frames/inlined_call_frame.c \
	frames/transition_frame.c \
	frames/context_frame.c \
	frames/helper_method_frame.c \
	frames/marker_frames.c \
	frames/hijack_frame.c \
	frames/protect_frames.c \
	frames/tail_call_frame.c \
	frames/interpreter_frame.c \
	frames/frames_internal.h
