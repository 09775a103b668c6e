/*
 * marker_frames.c - Frames that never resume managed code: the
 * unmanaged-to-managed entry Frame, where a native block ends, and the
 * debugger's markers, and the ExceptionFilterFrame.  The walk reports
 * them and moves to the next Frame.
 */
#include "frames_internal.h"

sw_status swi_frame_no_return_address(const sw_frame_view *f, uint64_t *ra)
{
	SWI_UNUSED(f);
	*ra = 0;
	return SW_OK;
}

/* Never called: the walk only asks a Frame with a managed return address. */
sw_status swi_frame_no_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
{
	SWI_UNUSED(f); SWI_UNUSED(rd);
	return SW_E_BADFRAME;
}

static sw_status u2m_method(const sw_frame_view *f, void **method)
{
	return swi_frame_method_field(f, SW_U2MF_METHOD, method);
}

static sw_transition u2m_transition(const sw_frame_view *f)
{
	SWI_UNUSED(f);
	return SW_TRANSITION_U2M;
}

const sw_frame_ops swi_unmanaged_to_managed_frame_ops = {
	.type = SW_FRAME_UNMANAGED_TO_MANAGED,
	.name = "UnmanagedToManagedFrame",
	.return_address = swi_frame_no_return_address,
	.update_regdisplay = swi_frame_no_regdisplay,
	.method = u2m_method,
	.transition = u2m_transition,
};

#define MARKER_FRAME_OPS(sym, kind, label)            \
	const sw_frame_ops sym = {                        \
		.type = kind,                                 \
		.name = label,                                \
		.return_address = swi_frame_no_return_address,          \
		.update_regdisplay = swi_frame_no_regdisplay,           \
	}

MARKER_FRAME_OPS(swi_debugger_class_init_frame_ops, SW_FRAME_DEBUGGER_CLASS_INIT, "DebuggerClassInitMarkFrame");
MARKER_FRAME_OPS(swi_debugger_exit_frame_ops, SW_FRAME_DEBUGGER_EXIT, "DebuggerExitFrame");
MARKER_FRAME_OPS(swi_debugger_u2m_catch_frame_ops, SW_FRAME_DEBUGGER_U2M_CATCH, "DebuggerU2MCatchHandlerFrame");

/*
 * ExceptionFilterFrame (vm/frames.h): it overrides only Pop, which marks
 * the filter done in the shadow SP slot its field names; as a Frame it
 * keeps the defaults: no return address (Frame::GetReturnAddressPtr is
 * 0, so the walk never follows it), no function, no references, no
 * transition.  The walk reports it and goes on to the next Frame.
 */
MARKER_FRAME_OPS(swi_exception_filter_frame_ops, SW_FRAME_EXCEPTION_FILTER, "ExceptionFilterFrame");
