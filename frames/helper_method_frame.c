/*
 * helper_method_frame.c - HelperMethodFrame: a runtime helper called from
 * managed code.  Its machine state, a context record of the managed caller
 * at the call, may be captured lazily (the CLR's LazyMachState): until the
 * helper fills it, its valid mask is 0 and the Frame has nothing to resume.
 */
#include "frames_internal.h"

/* The runtime's filler of machine states not captured yet, or NULL. */
static const sw_frame_lazy_init *lazy_init;

SW_API sw_status sw_frame_set_lazy_init(const sw_frame_lazy_init *hook)
{
	if (hook && !hook->fill)
		return SW_E_INVAL;
	__atomic_store_n(&lazy_init, hook, __ATOMIC_RELEASE);
	return SW_OK;
}

/*
 * CoreCLR captures the state lazily and completes it on the walk path
 * (vm/frames.h, HelperMethodFrame::InsureInit, which GetReturnAddress and
 * UpdateRegDisplay call): here the runtime's hook does, when one is set.
 * The walk asks for the return address first, so this is the one place.
 */
static sw_status hmf_return_address(const sw_frame_view *f, uint64_t *ra)
{
	const sw_frame_lazy_init *hook = __atomic_load_n(&lazy_init, __ATOMIC_ACQUIRE);
	sw_status st = swi_context_field_ip(f, SW_HMF_MACHINE_STATE, ra);

	if (st != SW_OK || *ra != 0 || !hook)
		return st;
	if ((st = hook->fill(f, hook->data)) != SW_OK)
		return st;
	return swi_context_field_ip(f, SW_HMF_MACHINE_STATE, ra);
}

static sw_status hmf_update_regdisplay(const sw_frame_view *f, sw_regdisplay *rd)
{
	return swi_context_field_restore(f, SW_HMF_MACHINE_STATE, rd);
}

static sw_status hmf_method(const sw_frame_view *f, void **method)
{
	return swi_frame_method_field(f, SW_HMF_METHOD, method);
}

static sw_transition hmf_transition(const sw_frame_view *f)
{
	SWI_UNUSED(f);
	return SW_TRANSITION_INTERNAL_CALL;
}

/* The object-protecting variants: the references the helper keeps alive. */
static sw_status hmf_gc_roots(const sw_frame_view *f,
                              int (*fn)(void *data, uint64_t slot, uint32_t flags), void *data)
{
	return swi_frame_protected_roots(f, SW_HMF_PROTECTED, SW_HMF_PROTECTED_COUNT, fn, data);
}

const sw_frame_ops swi_helper_method_frame_ops = {
	.type = SW_FRAME_HELPER_METHOD,
	.flags = 0,
	.name = "HelperMethodFrame",
	.return_address = hmf_return_address,
	.update_regdisplay = hmf_update_regdisplay,
	.method = hmf_method,
	.transition = hmf_transition,
	.gc_roots = hmf_gc_roots,
};
