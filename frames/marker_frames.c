/*
 * marker_frames.c - Frames that never resume managed code: the
 * unmanaged-to-managed entry Frame, where a native block ends, and the
 * debugger's markers.  The walk reports them and moves to the next Frame.
 */
#include "frames_internal.h"

static sw_status no_return_address(const sw_frame_view *f, uint64_t *ra)
{
	SWI_UNUSED(f);
	*ra = 0;
	return SW_OK;
}

/* Never called: the walk only asks a Frame with a managed return address. */
static sw_status no_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
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
	.return_address = no_return_address,
	.update_regdisplay = no_regdisplay,
	.method = u2m_method,
	.transition = u2m_transition,
};

#define MARKER_FRAME_OPS(sym, kind, label)            \
	const sw_frame_ops sym = {                        \
		.type = kind,                                 \
		.name = label,                                \
		.return_address = no_return_address,          \
		.update_regdisplay = no_regdisplay,           \
	}

MARKER_FRAME_OPS(swi_debugger_class_init_frame_ops, SW_FRAME_DEBUGGER_CLASS_INIT, "DebuggerClassInitMarkFrame");
MARKER_FRAME_OPS(swi_debugger_exit_frame_ops, SW_FRAME_DEBUGGER_EXIT, "DebuggerExitFrame");
MARKER_FRAME_OPS(swi_debugger_u2m_catch_frame_ops, SW_FRAME_DEBUGGER_U2M_CATCH, "DebuggerU2MCatchHandlerFrame");
