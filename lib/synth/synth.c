/*
 * synth.c - sw_synth: synthetic stacks with a known right answer.
 *
 * The public face: parameters, create and destroy, the thread and seed
 * context to walk, and the expected frames.  Generation is in synth_gen.c
 * and synth_method.c with the per-arch method shapes in synth_x64.c,
 * synth_x86.c and synth_arm64.c; the expectation is in synth_expect.c, the
 * checked walk in synth_check.c.
 */
#include <stdlib.h>
#include "synth_internal.h"

const struct swi_synth_arch *swi_synth_arch_get(sw_arch arch)
{
	static const struct swi_synth_arch *const table[SW_ARCH_ARM64 + 1] = {
		[SW_ARCH_X64] = &swi_synth_x64, [SW_ARCH_X86] = &swi_synth_x86,
		[SW_ARCH_ARM64] = &swi_synth_arm64,
	};

	return (unsigned)arch <= SW_ARCH_ARM64 ? table[arch] : NULL;
}

SW_API void sw_synth_params_default(sw_synth_params *p)
{
	if (!p)
		return;
	p->min_frames = 1;
	p->max_frames = 24;
	p->features = SW_SYNTH_ALL;
	p->frame_type = 0;
}

static sw_status check_params(const sw_synth_params *p)
{
	if (p->min_frames > p->max_frames ||
	    (p->features & ~(unsigned)(SW_SYNTH_ALL | SW_SYNTH_STALE_FRAMES)))
		return SW_E_INVAL;
	if (p->max_frames > SWI_SYNTH_MAX_FRAMES)
		return SW_E_LIMIT;
	/* A forced Frame kind must be a built-in one the generator makes. */
	if (p->frame_type > SW_FRAME_DEBUGGER_U2M_CATCH && !swi_synth_is_marker_type(p->frame_type))
		return SW_E_INVAL;
	return SW_OK;
}

SW_API sw_status sw_synth_create(sw_synth **out, sw_arch arch, uint64_t seed,
                                 const sw_synth_params *p)
{
	sw_synth *s;
	sw_status st;
	int consistent = 0;

	if (!out)
		return SW_E_INVAL;
	*out = NULL;
	if (!swi_synth_arch_get(arch))
		return SW_E_INVAL;
	s = calloc(1, sizeof *s);
	if (!s)
		return SW_E_NOMEM;
	s->arch = arch;
	s->a = swi_synth_arch_get(arch);
	s->seed = seed;
	if (p)
		s->params = *p;
	else
		sw_synth_params_default(&s->params);
	st = check_params(&s->params);
	if (st == SW_OK)
		st = sw_codemap_create(&s->map);
	if (st == SW_OK)
		st = swi_synth_generate(s);
	if (st == SW_OK) {
		/*
		 * The records must tell one story: every frame reached, every
		 * pass-through register unchanged, exactly the stale Frames
		 * below SP.  If not, the generator is wrong.
		 */
		swi_synth_expect(s, SW_WALK_DISABLE_MISSING_FRAME_DETECTION, NULL, 0, &consistent,
		                 NULL, NULL);
		if (!consistent)
			st = SW_E_STATE;
	}
	if (st != SW_OK) {
		sw_synth_destroy(s);
		return st;
	}
	*out = s;
	return SW_OK;
}

SW_API void sw_synth_destroy(sw_synth *s)
{
	if (!s)
		return;
	if (s->map)
		sw_codemap_destroy(s->map);
	free(s->methods);
	free(s->insts);
	free(s->frames);
	free(s->trackers);
	free(s->image);
	free(s);
}

SW_API const sw_thread *sw_synth_thread(const sw_synth *s)
{
	return s ? &s->thread : NULL;
}

SW_API const sw_context *sw_synth_context(const sw_synth *s)
{
	return s ? &s->ctx : NULL;
}

SW_API size_t sw_synth_expected(const sw_synth *s, unsigned flags, sw_synth_frame *out, size_t cap)
{
	if (!s)
		return 0;
	if (!out)
		cap = 0;
	return swi_synth_expect(s, flags, out, cap, NULL, NULL, NULL);
}

SW_API sw_status sw_synth_expected_error(const sw_synth *s, unsigned flags, sw_walk_error *err)
{
	sw_walk_error end;

	if (err)
		memset(err, 0, sizeof *err);
	if (!s)
		return SW_E_INVAL;
	swi_synth_expect(s, flags, NULL, 0, NULL, NULL, &end);
	if (err)
		*err = end;
	return end.status;
}

SW_API sw_status sw_synth_expected_roots(const sw_synth *s, unsigned flags, size_t frame,
                                         sw_gc_root *out, size_t cap, size_t *count)
{
	struct swi_synth_roots r;
	const struct swi_synth_frame_roots *fr;
	sw_status st;

	if (count)
		*count = 0;
	if (!s || !count || (!out && cap))
		return SW_E_INVAL;
	memset(&r, 0, sizeof r);
	swi_synth_expect(s, flags, NULL, 0, NULL, &r, NULL);
	if (r.nomem) {
		swi_synth_roots_free(&r);
		return SW_E_NOMEM;
	}
	if (frame >= r.nframes) {
		swi_synth_roots_free(&r);
		return SW_E_INVAL;
	}
	fr = &r.frames[frame];
	st = fr->status;
	*count = fr->count;
	for (size_t i = 0; i < fr->count && i < cap; i++)
		out[i] = r.roots[fr->first + i];
	swi_synth_roots_free(&r);
	return st;
}
