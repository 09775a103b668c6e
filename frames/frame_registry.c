/*
 * frame_registry.c - Frame types and their ops.  The built-in types are
 * there from the start; a runtime adds its own with sw_frame_type_register.
 * Lookups are one acquire load, so signal handlers may walk.
 */
#include "frames_internal.h"

static const sw_frame_ops *frame_types[SW_FRAME_TYPE_MAX + 1] = {
	[SW_FRAME_INLINED_CALL] = &swi_inlined_call_frame_ops,
	[SW_FRAME_TRANSITION] = &swi_transition_frame_ops,
	[SW_FRAME_FAULTING_EXCEPTION] = &swi_faulting_exception_frame_ops,
	[SW_FRAME_RESUMABLE] = &swi_resumable_frame_ops,
	[SW_FRAME_REDIRECTED_THREAD] = &swi_redirected_thread_frame_ops,
	[SW_FRAME_SOFTWARE_EXCEPTION] = &swi_software_exception_frame_ops,
	[SW_FRAME_HELPER_METHOD] = &swi_helper_method_frame_ops,
	[SW_FRAME_UNMANAGED_TO_MANAGED] = &swi_unmanaged_to_managed_frame_ops,
	[SW_FRAME_FUNC_EVAL] = &swi_func_eval_frame_ops,
	[SW_FRAME_DEBUGGER_CLASS_INIT] = &swi_debugger_class_init_frame_ops,
	[SW_FRAME_DEBUGGER_EXIT] = &swi_debugger_exit_frame_ops,
	[SW_FRAME_DEBUGGER_U2M_CATCH] = &swi_debugger_u2m_catch_frame_ops,
	[SW_FRAME_HIJACK] = &swi_hijack_frame_ops,
	[SW_FRAME_PROTECT_BYREFS] = &swi_protect_byrefs_frame_ops,
	[SW_FRAME_PROTECT_VALUE_CLASS] = &swi_protect_value_class_frame_ops,
	[SW_FRAME_TAIL_CALL] = &swi_tail_call_frame_ops,
	[SW_FRAME_EXCEPTION_FILTER] = &swi_exception_filter_frame_ops,
	[SW_FRAME_INTERPRETER] = &swi_interpreter_frame_ops,
};

SW_API sw_status sw_frame_type_register(const sw_frame_ops *ops)
{
	const sw_frame_ops *expected = NULL;

	if (!ops || ops->type < SW_FRAME_TYPE_USER || ops->type > SW_FRAME_TYPE_MAX ||
	    !ops->return_address || !ops->update_regdisplay)
		return SW_E_INVAL;
	if (!__atomic_compare_exchange_n(&frame_types[ops->type], &expected, ops, 0,
	                                 __ATOMIC_RELEASE, __ATOMIC_RELAXED))
		return SW_E_EXISTS;
	return SW_OK;
}

SW_API const sw_frame_ops *sw_frame_type_ops(uint32_t type)
{
	if (type > SW_FRAME_TYPE_MAX)
		return NULL;
	return __atomic_load_n(&frame_types[type], __ATOMIC_ACQUIRE);
}
