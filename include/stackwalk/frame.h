/*
 * frame.h - Frames: the runtime's explicit transition records.
 *
 * A runtime pushes a Frame on its thread's list at each transition (a
 * P/Invoke, a stub calling into the runtime) so that a walk can cross code
 * it cannot unwind.  Frames live inside their pusher's stack frame, so the
 * list ascends the stack.  Their layout in target memory is fixed, so a
 * debugger can read them from another process; with P the target's pointer
 * size:
 *
 *   offset 0     next        P bytes   the next (older) Frame, 0 at the end
 *   offset P     type        4 bytes   an SW_FRAME_* type
 *   offset P+4   attributes  4 bytes   SW_FRAME_ATTR_*
 *   offset P+8   field 0, field 1, ...  P bytes each, as the type defines
 *
 * The structures below have exactly that layout on the host.
 */
#ifndef STACKWALK_FRAME_H
#define STACKWALK_FRAME_H

#include <stdint.h>
#include <stackwalk/export.h>
#include <stackwalk/status.h>
#include <stackwalk/context.h>

#ifdef __cplusplus
extern "C" {
#endif

struct sw_thread;

typedef struct sw_frame {
	struct sw_frame *next;
	uint32_t type;
	uint32_t attributes;
} sw_frame;

/* Frame types (the CLR's Frame kinds).  Runtimes register their own from SW_FRAME_TYPE_USER up. */
enum {
	SW_FRAME_TYPE_NONE              = 0,
	SW_FRAME_INLINED_CALL           = 1,    /* P/Invoke from managed code */
	SW_FRAME_TRANSITION             = 2,    /* stub calling into the runtime (subtypes below) */
	SW_FRAME_FAULTING_EXCEPTION     = 3,    /* hardware fault: full context; EXCEPTION | FAULTED */
	SW_FRAME_RESUMABLE              = 4,    /* full context; RESUMABLE: the next frame is active */
	SW_FRAME_REDIRECTED_THREAD      = 5,    /* a thread redirected for suspension; RESUMABLE */
	SW_FRAME_SOFTWARE_EXCEPTION     = 6,    /* a managed throw: the thrower's context; EXCEPTION */
	SW_FRAME_HELPER_METHOD          = 7,    /* a runtime helper; machine state captured lazily */
	SW_FRAME_UNMANAGED_TO_MANAGED   = 8,    /* reverse P/Invoke entry: a native block ends here */
	SW_FRAME_FUNC_EVAL              = 9,    /* a debugger's function evaluation: full context */
	SW_FRAME_DEBUGGER_CLASS_INIT    = 10,   /* debugger marker: class initializer running */
	SW_FRAME_DEBUGGER_EXIT          = 11,   /* debugger marker: left managed code */
	SW_FRAME_DEBUGGER_U2M_CATCH     = 12,   /* debugger marker: unmanaged-to-managed catch handler */
	SW_FRAME_HIJACK                 = 13,   /* a hijacked return: resumes the method's caller */
	SW_FRAME_PROTECT_BYREFS         = 14,   /* copies of by-ref arguments: GC roots only */
	SW_FRAME_PROTECT_VALUE_CLASS    = 15,   /* value-type instances the runtime protects: GC roots only */
	SW_FRAME_TAIL_CALL              = 16,   /* a stub's tail call: resumes the caller from its saved block */
	SW_FRAME_EXCEPTION_FILTER       = 17,   /* around an exception filter: a marker */
	SW_FRAME_INTERPRETER            = 18,   /* interpreted methods: resumes the innermost one */
	SW_FRAME_TYPE_USER              = 64,   /* first type a runtime may register */
	SW_FRAME_TYPE_MAX               = 255
};

/* Frame attributes (the CLR's values). */
enum {
	SW_FRAME_ATTR_EXCEPTION = 1,  /* the next frame was interrupted */
	SW_FRAME_ATTR_FAULTED   = 4,  /* ... by a hardware fault */
	SW_FRAME_ATTR_RESUMABLE = 8   /* the next frame is active (treated as the first) */
};

/*
 * InlinedCallFrame: pushed by a managed method in its own frame around a
 * call to unmanaged code.  return_address is non-zero only while the call
 * is in progress; then the walk resumes in the method at return_address
 * with SP = call_site_sp and the frame pointer = callee_saved_fp.
 */
enum {
	SW_ICF_DATUM = 0, SW_ICF_CALL_SITE_SP = 1, SW_ICF_RETURN_ADDRESS = 2,
	SW_ICF_CALLEE_SAVED_FP = 3, SW_ICF_FIELDS = 4
};
typedef struct sw_inlined_call_frame {
	sw_frame base;
	uintptr_t datum;            /* the unmanaged target's method handle, or 0 */
	uintptr_t call_site_sp;
	uintptr_t return_address;
	uintptr_t callee_saved_fp;
} sw_inlined_call_frame;

/*
 * TransitionFrame: pushed by a stub that managed code called and that calls
 * into the runtime.  transition_block is the address where the stub saved
 * the caller's callee-saved registers followed by the return address; its
 * layout is per architecture (see sw_frame(3)).
 */
enum {
	SW_TF_METHOD = 0, SW_TF_TRANSITION_BLOCK = 1, SW_TF_SUBTYPE = 2,
	SW_TF_PROTECTED = 3, SW_TF_PROTECTED_COUNT = 4, SW_TF_FIELDS = 5
};
/* What kind of stub pushed a TransitionFrame (the CLR's FramedMethodFrame family). */
enum {
	SW_TF_GENERIC = 0,          /* any stub calling into the runtime */
	SW_TF_PRESTUB = 1,          /* PrestubMethodFrame: first call, before the method is compiled */
	SW_TF_STUB_DISPATCH = 2,    /* StubDispatchFrame: interface or virtual dispatch */
	SW_TF_EXTERNAL_METHOD = 3,  /* ExternalMethodFrame: a call through an import cell */
	SW_TF_DYNAMIC_HELPER = 4    /* DynamicHelperFrame: a generated helper */
};
typedef struct sw_transition_frame {
	sw_frame base;
	uintptr_t method;           /* the method being called, or 0 */
	uintptr_t transition_block;
	uintptr_t subtype;          /* SW_TF_* */
	uintptr_t protected_refs;   /* the arguments holding references: an array of slot addresses, or 0 */
	uintptr_t protected_count;
} sw_transition_frame;

/*
 * Frames that hold a whole register context point to a context record in
 * target memory with sw_context's layout, whatever the target's pointer
 * width: arch (4 bytes), reserved (4), valid mask (8), then SW_MAX_REGS
 * 8-byte register values, little-endian.  On the host an sw_context is one.
 *
 * FaultingExceptionFrame, ResumableFrame, RedirectedThreadFrame,
 * SoftwareExceptionFrame and FuncEvalFrame: field 0 is the context record;
 * the walk resumes at its IP with every register it marks valid.
 */
enum { SW_CTXF_CONTEXT = 0, SW_CTXF_METHOD = 1, SW_CTXF_FIELDS = 2 };
typedef struct sw_context_frame {
	sw_frame base;
	uintptr_t context;          /* address of an sw_context record */
	uintptr_t method;           /* FuncEvalFrame: the function evaluated; else 0 */
} sw_context_frame;

/*
 * HelperMethodFrame: pushed by a runtime helper that managed code called.
 * Its machine state (a context record of the managed caller at the call:
 * IP = return address, SP, callee-saved registers) may be captured lazily:
 * while its valid mask is 0 the Frame is reported but not followed, unless
 * a sw_frame_set_lazy_init hook fills it when a walk asks.  The
 * object-protecting variants list the stack slots holding the references
 * the helper protects.
 */
enum {
	SW_HMF_METHOD = 0, SW_HMF_MACHINE_STATE = 1, SW_HMF_PROTECTED = 2,
	SW_HMF_PROTECTED_COUNT = 3, SW_HMF_FIELDS = 4
};
typedef struct sw_helper_method_frame {
	sw_frame base;
	uintptr_t method;           /* the helper's method handle, or 0 */
	uintptr_t machine_state;    /* address of an sw_context record */
	uintptr_t protected_refs;   /* an array of protected_count slot addresses, or 0 */
	uintptr_t protected_count;
} sw_helper_method_frame;

/*
 * The unmanaged-to-managed entry Frame (UMEntryFrame): pushed where
 * unmanaged code calls into managed code (reverse P/Invoke, callbacks); it
 * returns to unmanaged code, so the walk goes on to the next Frame.
 * Debugger marker Frames have no fields and never resume managed code.
 */
enum { SW_U2MF_METHOD = 0, SW_U2MF_FIELDS = 1 };
typedef struct sw_unmanaged_to_managed_frame {
	sw_frame base;
	uintptr_t method;           /* the managed entry point's method handle */
} sw_unmanaged_to_managed_frame;

/*
 * HijackFrame: pushed by the stub a runtime put in place of a managed
 * method's return address to stop the thread (for a GC) when the method
 * returns.  return_address is the one the hijack replaced: the walk
 * resumes the caller there, at a call site, with the registers of the
 * context record `saved` (SP just above what the stub saved; the
 * callee-saved registers; the returned value).  gc_regs and byref_regs
 * are masks of the record's registers holding a returned object reference
 * and an interior pointer (the method's return kind), reported as roots.
 */
enum {
	SW_HJF_RETURN_ADDRESS = 0, SW_HJF_SAVED = 1, SW_HJF_GC_REGS = 2,
	SW_HJF_BYREF_REGS = 3, SW_HJF_FIELDS = 4
};
typedef struct sw_hijack_frame {
	sw_frame base;
	uintptr_t return_address;   /* the original return address */
	uintptr_t saved;            /* address of an sw_context record */
	uintptr_t gc_regs;          /* registers of the record holding object references */
	uintptr_t byref_regs;       /* ... holding interior pointers */
} sw_hijack_frame;

/*
 * The layout of a value type's references, in target memory, for the
 * Frames that protect values (ProtectByRefsFrame, ProtectValueClassFrame):
 * nseries (P bytes), then nseries series of three P-byte words: offset
 * (bytes from the value's start), slots (consecutive pointer-sized slots
 * from there, each holding a reference) and flags (0, or SW_GC_INTERIOR
 * for a by-ref-like value's interior pointers).  Reported in that order.
 * CoreCLR's ReportPointersFromValueType (vm/siginfo.cpp) reports a
 * by-ref-like type's by-ref fields first, then its GCDesc's series from
 * the highest, each series' offset less the MethodTable pointer: a
 * runtime that lists its series so reports exactly what CoreCLR does.
 */
typedef struct sw_gc_series {
	uintptr_t offset;
	uintptr_t slots;
	uintptr_t flags;            /* 0 or SW_GC_INTERIOR */
} sw_gc_series;
typedef struct sw_value_layout {
	uintptr_t nseries;
	sw_gc_series series[1];     /* nseries of them */
} sw_value_layout;

/*
 * ProtectByRefsFrame: the runtime copied by-ref arguments (of a call it
 * makes on managed code's behalf) into a list and protects the copies.
 * Field 0 is the list's first entry, or 0.  An entry, in target memory:
 * next (P bytes), kind (P: SW_BYREF_*), layout (P: an sw_value_layout for
 * SW_BYREF_VALUE, else unused), then the copy itself (data: a reference,
 * or the value's bytes).  CoreCLR (vm/frames.cpp,
 * ProtectByRefsFrame::GcScanRoots): nothing for a primitive type, the
 * data slot for a reference, the value's references by its layout.
 */
enum { SW_PBRF_BYREFS = 0, SW_PBRF_FIELDS = 1 };
enum {
	SW_BYREF_PRIMITIVE = 0,     /* CorIsPrimitiveType: nothing to report */
	SW_BYREF_OBJECT    = 1,     /* the data holds an object reference */
	SW_BYREF_VALUE     = 2      /* the data holds a value type, described by layout */
};
typedef struct sw_byref_info {
	struct sw_byref_info *next;
	uintptr_t kind;             /* SW_BYREF_* */
	uintptr_t layout;           /* address of an sw_value_layout, or 0 */
	uintptr_t data[1];          /* the copy; a value's bytes go on past it */
} sw_byref_info;
typedef struct sw_protect_byrefs_frame {
	sw_frame base;
	uintptr_t byrefs;           /* the first sw_byref_info, or 0 */
} sw_protect_byrefs_frame;

/*
 * ProtectValueClassFrame: value-type instances the runtime holds on its
 * stack.  Field 0 is the list's first entry, or 0.  An entry, in target
 * memory: next (P bytes), layout (P: an sw_value_layout, or 0 for none),
 * data (P: the value's address).  CoreCLR (vm/frames.cpp,
 * ProtectValueClassFrame::GcScanRoots): each value's references by its
 * type's layout.
 */
enum { SW_PVCF_VALUES = 0, SW_PVCF_FIELDS = 1 };
typedef struct sw_value_class_info {
	struct sw_value_class_info *next;
	uintptr_t layout;           /* address of an sw_value_layout, or 0 */
	uintptr_t data;             /* address of the value */
} sw_value_class_info;
typedef struct sw_protect_value_class_frame {
	sw_frame base;
	uintptr_t values;           /* the first sw_value_class_info, or 0 */
} sw_protect_value_class_frame;

/*
 * TailCallFrame: a stub making a tail call for managed code saved the
 * caller's callee-saved registers and return address inside the Frame.
 * Field 0 is the address the tail call was made from; fields 1 on are a
 * transition block, with the TransitionFrame's per-architecture layout
 * (sw_frame(3)): callee-saved registers, then the return address.  The
 * walk resumes the caller at that return address with SP just above it
 * (CoreCLR, x86 only: vm/frames.h, TailCallFrame;
 * TailCallFrame::UpdateRegDisplay_Impl, vm/i386/cgenx86.cpp).
 */
enum { SW_TCF_CALLER_ADDRESS = 0, SW_TCF_BLOCK = 1 };

/*
 * ExceptionFilterFrame: pushed around a call to an exception filter; its
 * pop marks the filter done in the method's shadow SP slot.  Field 0 is
 * that slot's address.  The walk reports it and goes on to the next Frame.
 */
enum { SW_EFF_SHADOW_SP = 0, SW_EFF_FIELDS = 1 };
typedef struct sw_exception_filter_frame {
	sw_frame base;
	uintptr_t shadow_sp;        /* address of the shadow SP slot, or 0 */
} sw_exception_filter_frame;

/*
 * InterpreterFrame: an interpreter running managed methods.  Field 0 is a
 * hint at the innermost interpreted method's context frame; field 1 the
 * transition block of the call into the interpreter (where the walk
 * returns after the interpreted methods, as CoreCLR's does).  A context frame, in
 * target memory: parent (P bytes: the calling method's context frame, or
 * 0), ip (P: where it executes, 0 while inactive), stack (P: its locals,
 * the frame pointer), next (P: the context frame of a method it called,
 * or 0).  The innermost active one is found from the hint as CoreCLR's
 * InterpreterFrame::GetTopInterpMethodContextFrame does (vm/frames.cpp),
 * and the walk resumes there: IP = ip, SP = the context frame's address,
 * FP = stack (InterpreterFrame::SetContextToInterpMethodContextFrame).
 * Each interpreted method then unwinds to its parent the same way, and the
 * last out through the transition block (vm/eetwain.cpp,
 * VirtualUnwindInterpreterCallFrame).  A parent lies above its child.
 */
enum { SW_INTF_TOP = 0, SW_INTF_TRANSITION_BLOCK = 1, SW_INTF_FIELDS = 2 };
enum { SW_IMCF_PARENT = 0, SW_IMCF_IP = 1, SW_IMCF_STACK = 2, SW_IMCF_NEXT = 3, SW_IMCF_WORDS = 4 };
typedef struct sw_interp_context_frame {
	struct sw_interp_context_frame *parent;
	uintptr_t ip;
	uintptr_t stack;
	struct sw_interp_context_frame *next;
} sw_interp_context_frame;
typedef struct sw_interpreter_frame {
	sw_frame base;
	uintptr_t top;              /* a hint: a context frame of this interpreter, or 0 */
	uintptr_t transition_block;
} sw_interpreter_frame;

/*
 * sw_frame_push - link `f` (type and attributes set here) as the newest
 * Frame of the list whose head is *head.  The head is published last, so a
 * walker interrupting this thread sees either the old list or the new one.
 */
SW_API void sw_frame_push(sw_frame **head, sw_frame *f, uint32_t type, uint32_t attributes);

/* sw_frame_pop - unlink `f`, which must be the newest Frame; SW_E_BADFRAME otherwise. */
SW_API sw_status sw_frame_pop(sw_frame **head, sw_frame *f);

/* One Frame in target memory, as the walker read it. */
typedef struct sw_frame_view {
	uint64_t addr;              /* target address of the Frame */
	uint64_t next;
	uint32_t type;
	uint32_t attributes;
	const struct sw_thread *thread;
} sw_frame_view;

/* sw_frame_field_address - target address of field `index`. */
SW_API uint64_t sw_frame_field_address(const sw_frame_view *f, unsigned index);
/* sw_frame_read_field - read field `index` (pointer-sized) through the thread's memory. */
SW_API sw_status sw_frame_read_field(const sw_frame_view *f, unsigned index, uint64_t *out);

/* The kind of transition a Frame records (the CLR's ETransitionType). */
typedef enum sw_transition {
	SW_TRANSITION_NONE = 0,
	SW_TRANSITION_M2U  = 1,     /* managed called unmanaged */
	SW_TRANSITION_U2M  = 2,     /* unmanaged called managed */
	SW_TRANSITION_INTERNAL_CALL = 3
} sw_transition;

enum {
	/*
	 * The Frame lies inside the stack frame of the managed method it
	 * returns to (an InlinedCallFrame): it stays current until that method
	 * is walked, and is reported a second time there, as a skipped Frame,
	 * unless SW_WALK_HANDLESKIPPEDFRAMES (CoreCLR's CheckForSkippedFrames).
	 */
	SW_FRAME_OPS_IN_CALLER = 1
};

/* What a Frame type does: the CLR's Frame virtual methods. */
typedef struct sw_frame_ops {
	uint32_t type;
	uint32_t flags;             /* SW_FRAME_OPS_* */
	const char *name;
	/* Return address into the code that pushed it, 0 if none (inactive). */
	sw_status (*return_address)(const sw_frame_view *f, uint64_t *ra);
	/*
	 * Set rd->cur (and rd->cur_loc) to the state in which execution
	 * resumes at the return address; registers it cannot tell are cleared
	 * from rd->cur.valid.  Called only when the return address is managed.
	 */
	sw_status (*update_regdisplay)(const sw_frame_view *f, sw_regdisplay *rd);
	/* The method the Frame stands for, or NULL.  May be NULL itself. */
	sw_status (*method)(const sw_frame_view *f, void **method);
	/* May be NULL: SW_TRANSITION_NONE. */
	sw_transition (*transition)(const sw_frame_view *f);
	/*
	 * May be NULL: the Frame protects no references.  Call `fn` with the
	 * target address of each slot holding an object reference the Frame
	 * protects; stop when it returns non-zero.
	 */
	sw_status (*gc_roots)(const sw_frame_view *f,
	                      int (*fn)(void *data, uint64_t slot, uint32_t flags), void *data);
} sw_frame_ops;

/*
 * sw_frame_type_register - add a Frame type (ops->type in
 * [SW_FRAME_TYPE_USER, SW_FRAME_TYPE_MAX]).  The ops table must outlive
 * every walk.  SW_E_EXISTS if the type is taken.
 */
SW_API sw_status sw_frame_type_register(const sw_frame_ops *ops);

/* sw_frame_type_ops - the ops of a type, or NULL if none is registered. */
SW_API const sw_frame_ops *sw_frame_type_ops(uint32_t type);

/*
 * sw_frame_set_lazy_init - let the runtime capture a HelperMethodFrame's
 * machine state when a walk needs it (CoreCLR's
 * HelperMethodFrame::InsureInit).  When a walk meets a HelperMethodFrame
 * whose state is not captured (no record, or a record without IP), it
 * calls hook->fill, which may fill the record (or point the Frame at one)
 * and returns SW_OK; the walk then reads the state again, and reports the
 * Frame without following it if it is still empty.  An error from fill
 * fails the walk.  fill runs on the walk path, maybe in a signal handler
 * of the walked process: it must not allocate, lock or make a system
 * call, must only write the Frame's own state, and may be called for the
 * same Frame more than once and by walks of several threads at a time.
 * `hook` must outlive every walk; NULL removes it.  SW_E_INVAL if its fill
 * is NULL.
 */
typedef struct sw_frame_lazy_init {
	sw_status (*fill)(const sw_frame_view *f, void *data);
	void *data;
} sw_frame_lazy_init;
SW_API sw_status sw_frame_set_lazy_init(const sw_frame_lazy_init *hook);

#ifdef __cplusplus
}
#endif
#endif /* STACKWALK_FRAME_H */
