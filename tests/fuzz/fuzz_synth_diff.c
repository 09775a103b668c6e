/*
 * fuzz_synth_diff.c - differential: the walk of a synthetic stack must
 * report exactly the frames (and GC roots) the generator expects.
 *
 * The input chooses the architecture, the seed, the generator's
 * parameters and the walk flags.  sw_synth_check and sw_synth_check_roots
 * compare the walker with the generator's own model of the stack, which
 * never decodes SWU; any difference is a bug in one of them, and aborts
 * with the checker's description on stderr.
 */
#include <stdio.h>
#include <stdlib.h>
#include <stackwalk.h>
#include "fuzz.h"

/* The flags whose effect the expectation models, and those a walk only accepts. */
static const unsigned modelled[] = {
	SW_WALK_FUNCTIONSONLY, SW_WALK_SKIPFUNCLETS, SW_WALK_POPFRAMES, SW_WALK_QUICKUNWIND,
	SW_WALK_HANDLESKIPPEDFRAMES, SW_WALK_LIGHTUNWIND, SW_WALK_NOTIFY_ON_U2M_TRANSITIONS,
	SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT, SW_WALK_GC_FUNCLET_REFERENCE_REPORTING,
	SW_WALK_UNWIND_FLOATS, SW_WALK_ALLOW_ASYNC_STACK_WALK, SW_WALK_THREAD_IS_SUSPENDED,
	SW_WALK_ALLOW_INVALID_OBJECTS, SW_WALK_PROFILER_DO_STACK_SNAPSHOT,
	SW_WALK_SKIP_GSCOOKIE_CHECK
};

static void mismatch(const char *what, sw_arch arch, uint64_t seed, const sw_synth_params *p,
                     unsigned flags, sw_status st, const char *msg)
{
	fprintf(stderr, "fuzz_synth_diff: %s: %s (arch %s, seed %#llx, frames %u-%u, "
	        "features %#x, frame type %u, flags %#x): %s\n", what, sw_strerror(st),
	        sw_arch_name(arch), (unsigned long long)seed, p->min_frames, p->max_frames,
	        p->features, (unsigned)p->frame_type, flags, msg);
	abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct fz f;
	sw_synth_params p;
	sw_synth *s;
	sw_arch arch;
	uint64_t seed;
	uint32_t bits;
	unsigned flags = 0, lo, hi;
	char msg[1024];
	sw_status st;

	fz_init(&f, data, size);
	arch = (sw_arch)fz_arch(&f);
	seed = fz_u64(&f);
	lo = fz_u8(&f) % 48;
	hi = fz_u8(&f) % 48;
	sw_synth_params_default(&p);
	p.min_frames = lo < hi ? lo : hi;
	p.max_frames = lo < hi ? hi : lo;
	p.features = fz_u16(&f) & SW_SYNTH_ALL;
	p.frame_type = fz_u8(&f) % (SW_FRAME_DEBUGGER_U2M_CATCH + 8);
	if (p.frame_type > SW_FRAME_DEBUGGER_U2M_CATCH)
		p.frame_type = 0;       /* mostly any */
	bits = fz_u32(&f);
	for (unsigned i = 0; i < sizeof modelled / sizeof modelled[0]; i++)
		if (bits & (1u << i))
			flags |= modelled[i];
	/* LIGHTUNWIND promises that every IP is in a body. */
	if (flags & SW_WALK_LIGHTUNWIND)
		p.features &= ~(unsigned)SW_SYNTH_ANY_OFFSET;

	st = sw_synth_create(&s, arch, seed, &p);
	if (st == SW_E_STATE)
		mismatch("the generator contradicts itself", arch, seed, &p, flags, st, "");
	if (st != SW_OK)
		return 0;       /* a Frame type these features cannot produce, say */
	st = sw_synth_check(s, flags, msg, sizeof msg);
	if (st != SW_OK)
		mismatch("sw_synth_check", arch, seed, &p, flags, st, msg);
	st = sw_synth_check_roots(s, flags, msg, sizeof msg);
	if (st != SW_OK)
		mismatch("sw_synth_check_roots", arch, seed, &p, flags, st, msg);
	sw_synth_destroy(s);
	return 0;
}
