/*
 * iter_unwind.h (internal) - the unwind of a frame by its body rule, the
 * walk's most frequent work, inlined into the loops that run it (iter.c's
 * fast step, iter_unwind.c's generic unwind).  Nothing here knows an
 * architecture: the rule and the swi_arch table say it all.
 */
#ifndef SW_LIB_ITER_UNWIND_H
#define SW_LIB_ITER_UNWIND_H

#include "iter.h"
#include "swu_format.h"

#ifndef BIT
#define BIT(r) (1ULL << (r))
#endif

/* The per-frame helpers below are inlined into every unwind path: calls cost more than they do. */
#define SWI_ALWAYS_INLINE inline __attribute__((always_inline))

/* Off the fast path: out of line (iter_unwind.c), so that it does not crowd the unwind's registers. */
sw_status swi_read_word_slow(const sw_memory *m, unsigned p, uint64_t addr, uint64_t *out);

/*
 * The rule that makes every walk end: a frame's caller lies higher on the
 * stack than the frame (its CFA, the caller's SP, above the frame's SP),
 * and still on it (at most hi), or bad metadata could loop.  may_stay: the
 * active frame is a leaf that has not touched the stack (its return
 * address still in a register), whose CFA may be its SP; a frame reached
 * by return address made a call, and so has a frame of its own.
 */
static inline int swi_cfa_moves_up(uint64_t cfa, uint64_t sp, uint64_t hi, int may_stay)
{
	return cfa <= hi && (cfa > sp || (may_stay && cfa == sp));
}

/* The registers the walk keeps at all. */
static SWI_ALWAYS_INLINE uint64_t swi_kept_registers(const struct swi_iter *it)
{
	const struct swi_arch *a = it->arch;
	uint64_t keep = a->callee_saved;

	/*
	 * Floating-point ones (arm64 d8-d15) too, whatever UNWIND_FLOATS says:
	 * CoreCLR unwinds a managed frame with the OS unwinder on a whole
	 * CONTEXT, which restores them always (vm/stackwalk.cpp,
	 * Thread::VirtualUnwindCallFrame); the flag governs only what a
	 * Frame does with them (frames.cpp, TransitionFrame::UpdateRegDisplay).
	 */
	if (swi_walk_addresses_only(it->flags, a))
		keep &= BIT(a->fp_reg);
	return keep;
}

/*
 * What a body-rule unwind reads at every frame, gathered once: in the
 * fast step's loop it stays in registers from one frame to the next, and
 * the values the unwind of a frame depends on (its IP, SP and frame
 * pointer) go from one frame's unwind to the next without a round trip
 * through the register display, which is only written.
 */
struct swi_body_unwind {
	/* The frame being unwound, as rd.cur holds it; then its caller, as rd.caller. */
	uint64_t ip, sp, fp, valid;
	/*
	 * The registers the last unwind wrote to rd.caller (IP, SP and those
	 * it restored): in place, the only ones where rd.caller and rd.cur
	 * differ afterwards.
	 */
	uint64_t written;
	uint64_t keep;                  /* swi_kept_registers */
	uint64_t stack_hi, ptrauth_mask;
	/* The memory's direct window: [lo, last] are the addresses a whole word may be read at. */
	uint64_t lo, last;
	const unsigned char *host;
	/* host - lo, as an integer: a word at addr in the window is at bias + addr. */
	uintptr_t bias;
	unsigned ptr_size, nregs, ip_reg, sp_reg, fp_reg, arch;
};

/*
 * The memory's direct window, as swi_body_unwind holds it: [*lo, *last]
 * are the addresses a whole word may be read at; lo > last when there is
 * none to read directly.
 */
static SWI_ALWAYS_INLINE void swi_body_window(const struct swi_iter *it, uint64_t *lo, uint64_t *last)
{
	const sw_memory *m = it->thread->memory;
	unsigned p = it->arch->ptr_size;

	*lo = m->direct_lo;
	*last = m->direct_hi - p;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (m->direct_hi - m->direct_lo >= p && m->direct_hi >= m->direct_lo && (p == 8 || p == 4))
		return;
#endif
	/* No window to read directly: every read goes the slow way. */
	*lo = 1;
	*last = 0;
}

/* Gather it for an unwind of rd.cur. */
static SWI_ALWAYS_INLINE void swi_body_unwind_init(const struct swi_iter *it, struct swi_body_unwind *u)
{
	const struct swi_arch *a = it->arch;
	const sw_memory *m = it->thread->memory;
	const sw_context *cur = &it->rd.cur;

	u->ip = cur->regs[a->ip_reg];
	u->sp = cur->regs[a->sp_reg];
	u->fp = cur->regs[a->fp_reg];
	u->valid = cur->valid;
	u->keep = swi_kept_registers(it);
	u->stack_hi = it->thread->stack_hi;
	u->ptrauth_mask = it->thread->ptrauth_mask;
	u->ptr_size = a->ptr_size;
	u->nregs = a->nregs;
	u->ip_reg = a->ip_reg;
	u->sp_reg = a->sp_reg;
	u->fp_reg = a->fp_reg;
	u->arch = it->thread->arch;
	u->host = m->direct_host;
	u->bias = (uintptr_t)m->direct_host - (uintptr_t)m->direct_lo;
	swi_body_window(it, &u->lo, &u->last);
}

static SWI_ALWAYS_INLINE sw_status swi_body_read(const struct swi_iter *it, const struct swi_body_unwind *u,
                                                 uint64_t addr, uint64_t *out)
{
	if (SWI_LIKELY(addr >= u->lo && addr <= u->last)) {
		*out = swi_load_le(u->host + (addr - u->lo), u->ptr_size);
		return SW_OK;
	}
	return swi_read_word_slow(it->thread->memory, u->ptr_size, addr, out);
}

/*
 * The offsets from the CFA at which a rule's unwind reads, for the kept
 * registers: the saved registers kept and the return address in memory,
 * from lo to lo + width (iter.h: swi_read_extent).  It does not depend on
 * the memory, so a cache of rules keeps it (iter.c: swi_iter_keep_rules).
 * A rule with no read at all gets [0, 0], which is harmless.
 */
static SWI_ALWAYS_INLINE struct swi_read_extent swi_body_read_extent(const struct swu_body_rule *br,
                                                                     const uint32_t *saved, uint64_t keep)
{
	uint64_t restored = br->saved_mask & keep;
	int32_t lo = INT32_MAX, hi = INT32_MIN;
	struct swi_read_extent e;

	for (unsigned i = 0; restored && i < br->nsaved; i++) {
		int32_t off = swu_body_saved_offset(saved[i]);

		if (!(restored & BIT(swu_body_saved_reg(saved[i]))))
			continue;
		lo = off < lo ? off : lo;
		hi = off > hi ? off : hi;
	}
	if (!br->ra_in_reg) {
		lo = br->ra_offset < lo ? br->ra_offset : lo;
		hi = br->ra_offset > hi ? br->ra_offset : hi;
	}
	if (lo > hi)
		lo = hi = 0;
	e.lo = lo;
	e.width = (uint32_t)((int64_t)hi - (int64_t)lo);
	return e;
}

/*
 * An extent's span in a window (iter.h: swi_read_span) that holds whole
 * words at [win_lo, win_last] (swi_body_unwind's lo and last).  With
 * size = win_last - win_lo: start = lo - win_lo and room = size - width,
 * so that cfa + start <= room puts cfa + o - win_lo, for every offset o
 * of the extent, between 0 and size without wrapping: every read is in
 * the window (addresses taken modulo 2^64, as the checked reads take
 * them).  Where it does not fit (no window, or one narrower than the
 * extent) start and room are 0, which no frame passes: its CFA lies above
 * its SP, so it is not 0.
 */
static SWI_ALWAYS_INLINE struct swi_read_span swi_read_span_in(struct swi_read_extent e, uint64_t win_lo,
                                                               uint64_t win_last)
{
	struct swi_read_span span = { 0, 0 };
	uint64_t size;

	if (win_last < win_lo)
		return span;
	size = win_last - win_lo;
	if (e.width > size)
		return span;
	span.start = (uint64_t)(int64_t)e.lo - win_lo;
	span.room = size - e.width;
	return span;
}

/* Do all the reads of span from this CFA lie in the window?  (swi_read_span_in) */
static SWI_ALWAYS_INLINE int swi_span_in_window(struct swi_read_span span, uint64_t cfa)
{
	return cfa + span.start <= span.room;
}

/*
 * A word the unwind reads: from the window without a check when the
 * frame's span was found inside it (checked == 0), else as swi_body_read.
 */
static SWI_ALWAYS_INLINE sw_status swi_body_read_as(const struct swi_iter *it, const struct swi_body_unwind *u,
                                                    uint64_t addr, uint64_t *out, int checked)
{
	if (!checked) {
		*out = swi_load_le((const unsigned char *)(u->bias + (uintptr_t)addr), u->ptr_size);
		return SW_OK;
	}
	return swi_body_read(it, u, addr, out);
}

/* Read the caller's register r from its slot in this frame. */
static SWI_ALWAYS_INLINE sw_status swi_restore_saved(struct swi_iter *it, struct swi_body_unwind *u, unsigned r,
                                                     uint64_t slot, uint64_t *fp, int checked)
{
	uint64_t v;
	sw_status st;

	if ((st = swi_body_read_as(it, u, slot, &v, checked)) != SW_OK)
		return st;
	it->rd.caller.regs[r] = v;
	it->rd.caller_loc[r] = slot;
	if (r == u->fp_reg)
		*fp = v;
	return SW_OK;
}

/*
 * The part of swi_unwind_body after the CFA, compiled twice: with a check
 * at every read, and without one for a frame whose reads all lie in the
 * window.  The saved registers come from saved[], or from the decoded
 * rule where there is one (its slots may be relative to a register).
 */
static SWI_ALWAYS_INLINE sw_status swi_unwind_body_reads(struct swi_iter *it, struct swi_body_unwind *u,
                                                         const struct swu_body_rule *br,
                                                         const uint32_t *saved, const sw_swu_rule *decoded,
                                                         uint64_t cfa, int in_place, int checked)
{
	sw_regdisplay *rd = &it->rd;
	uint64_t valid = u->valid, restored, fp = u->fp, ra, ra_loc, written, caller_valid;
	sw_status st;

	if (!in_place) {
		for (uint64_t m = valid & u->keep; m; m &= m - 1) {
			unsigned r = (unsigned)__builtin_ctzll(m);

			rd->caller.regs[r] = rd->cur.regs[r];
			rd->caller_loc[r] = rd->cur_loc[r];
		}
	}
	/* saved[] lists exactly the registers of saved_mask: those kept are all restored, or the unwind fails. */
	restored = br->saved_mask & u->keep;
	if (decoded) {
		for (uint64_t m = restored; m; m &= m - 1) {
			unsigned r = (unsigned)__builtin_ctzll(m), base = decoded->saved_base[r];
			uint64_t slot = cfa;

			/* A slot relative to a register's value in this frame, not the CFA. */
			if (base != SW_SWU_BASE_CFA) {
				if (base >= u->nregs || !(valid & BIT(base)))
					return SW_E_NOREG;
				slot = rd->cur.regs[base];
			}
			slot += (uint64_t)(int64_t)decoded->saved_offset[r];
			if ((st = swi_restore_saved(it, u, r, slot, &fp, checked)) != SW_OK)
				return st;
		}
	} else if (restored) {
		/* In a local: the stores below may alias the rule for all the compiler knows. */
		unsigned nsaved = br->nsaved;

		for (unsigned i = 0; i < nsaved; i++) {
			unsigned r = swu_body_saved_reg(saved[i]);
			uint64_t slot = cfa + (uint64_t)(int64_t)swu_body_saved_offset(saved[i]);

			if (!(restored & BIT(r)))
				continue;
			if ((st = swi_restore_saved(it, u, r, slot, &fp, checked)) != SW_OK)
				return st;
		}
	}
	if (br->ra_in_reg) {
		if (br->ra_reg >= u->nregs || !(valid & BIT(br->ra_reg)))
			return SW_E_NOREG;
		ra = rd->cur.regs[br->ra_reg];
		ra_loc = rd->cur_loc[br->ra_reg];
	} else {
		ra_loc = cfa + (uint64_t)(int64_t)br->ra_offset;
		if ((st = swi_body_read_as(it, u, ra_loc, &ra, checked)) != SW_OK)
			return st;
	}
	if (br->ra_signed)
		ra &= ~u->ptrauth_mask;
	rd->caller.regs[u->ip_reg] = ra;
	rd->caller_loc[u->ip_reg] = ra_loc;
	rd->caller.regs[u->sp_reg] = cfa;
	rd->caller_loc[u->sp_reg] = 0;
	written = restored | BIT(u->ip_reg) | BIT(u->sp_reg);
	caller_valid = (valid & u->keep) | written;
	rd->caller.valid = caller_valid;
	/* In place, these are already set (iter.c: fast_enter), as it was the caller before. */
	if (!in_place) {
		rd->caller.arch = rd->cur.arch;
		rd->caller.reserved = 0;
		rd->caller_valid = 1;
	}
	u->ip = ra;
	u->sp = cfa;
	u->fp = fp;
	u->valid = caller_valid;
	u->written = written;
	return SW_OK;
}

/*
 * Unwind rd.cur (u's ip, sp, fp and valid) by its rule br into rd.caller,
 * and u into the caller's values.  The rule is the body rule the code map
 * decoded when the method was registered, with its saved[], for a return
 * address in the body (the same rule sw_swu_decode gives there, without
 * replaying the prolog); or any rule the decoder gave (decoded, and br
 * its body form: swu_body_rule_fields), which may also read its CFA from
 * memory, find saved registers relative to a register, and for the active
 * frame, a leaf, leave the CFA at SP.  in_place: rd.caller's registers and
 * locations still hold those of rd.cur (iter.c's fast step just made it
 * the current frame from there), so the registers the method left alone
 * need no copy.  rule_checked: the caller made sure of the rule's
 * architecture and CFA register (iter.c: fast_rule_fill).  span: where
 * the unwind reads (swi_read_span_in of its extent under u->keep, for u's
 * window), or NULL to check every read.
 */
static SWI_ALWAYS_INLINE sw_status swi_unwind_body(struct swi_iter *it, struct swi_body_unwind *u,
                                                   const struct swu_body_rule *br, const uint32_t *saved,
                                                   const sw_swu_rule *decoded, const struct swi_read_span *span,
                                                   int in_place, int rule_checked)
{
	uint64_t cfa, base;
	int may_stay = 0;
	sw_status st;

	if (!rule_checked && (br->arch != u->arch || br->cfa_reg >= u->nregs))
		return SW_E_BADMETA;
	if (!(u->valid & BIT(br->cfa_reg)))
		return SW_E_NOREG;
	base = br->cfa_reg == u->sp_reg ? u->sp
	       : br->cfa_reg == u->fp_reg ? u->fp : it->rd.cur.regs[br->cfa_reg];
	cfa = base + (uint64_t)(int64_t)br->cfa_offset;
	if (decoded) {
		/* i386 stack realignment: the caller's SP was stored at [reg + offset]. */
		if (decoded->cfa_deref && (st = swi_body_read(it, u, cfa, &cfa)) != SW_OK)
			return st;
		/* An active leaf that has not touched the stack (its return address still in a register). */
		may_stay = br->ra_in_reg && it->active;
	}
	/* Any other frame's caller made a call, so the CFA lies above SP. */
	if (!swi_cfa_moves_up(cfa, u->sp, u->stack_hi, may_stay))
		return SW_E_BADSP;
	if (span && SWI_LIKELY(swi_span_in_window(*span, cfa)))
		return swi_unwind_body_reads(it, u, br, saved, decoded, cfa, in_place, 0);
	return swi_unwind_body_reads(it, u, br, saved, decoded, cfa, in_place, 1);
}

/* Does a quick rule read at CFA + offset outside [CFA - SWI_QUICK_NEAR, CFA - pointer size]?  (SWI_QUICK_FAR) */
static inline int swi_quick_far(int32_t offset, const struct swi_arch *a)
{
	return offset < -SWI_QUICK_NEAR || offset > -(int32_t)a->ptr_size;
}

/* The quick form of a body rule (iter.h: struct swi_quick_rule). */
static inline struct swi_quick_rule swi_quick_rule_of(const struct swu_body_rule *br, const uint32_t *saved,
                                                      uint8_t trust, const struct swi_arch *a)
{
	unsigned sp_reg = a->sp_reg, fp_reg = a->fp_reg;
	/* fp_offset is ra_offset until FP is found saved: swi_unwind_quick reads it either way. */
	struct swi_quick_rule q = { br->cfa_offset, br->ra_offset, br->ra_offset, 0, trust, 0 };

	/* A signed return address on an architecture without pointer authentication is garbage: the full unwind's. */
	if (br->ra_in_reg || (br->cfa_reg != sp_reg && br->cfa_reg != fp_reg) || (br->ra_signed && !a->has_ptrauth))
		q.bits |= SWI_QUICK_NO;
	if (br->cfa_reg == fp_reg)
		q.bits |= SWI_QUICK_CFA_FP;
	if (br->ra_signed)
		q.bits |= SWI_QUICK_RA_SIGNED;
	q.bits |= trust != SW_TRUST_JIT ? SWI_QUICK_NATIVE : SWI_QUICK_JIT;
	for (unsigned i = 0; i < br->nsaved; i++)
		if (swu_body_saved_reg(saved[i]) == fp_reg) {
			q.fp_offset = swu_body_saved_offset(saved[i]);
			q.bits |= SWI_QUICK_FP_SAVED;
		}
	if (swi_quick_far(q.ra_offset, a) || swi_quick_far(q.fp_offset, a))
		q.bits |= SWI_QUICK_FAR;
	return q;
}

/*
 * The quick form of a rule the decoder gave (a return address outside its
 * method's body rule): 0 when a quick step cannot take it (its CFA through
 * memory or from another register, its return address in a register, FP
 * saved relative to a register, a signed return address where the
 * architecture has none).
 */
static inline int swi_quick_rule_of_decoded(const sw_swu_rule *r, uint8_t trust, const struct swi_arch *a,
                                            struct swi_quick_rule *q)
{
	unsigned fp = a->fp_reg;
	int fp_saved = (r->saved_mask >> fp) & 1;

	if (r->arch != (uint32_t)a->arch || r->ra_in_reg || r->cfa_deref ||
	    (r->cfa_reg != a->sp_reg && r->cfa_reg != fp) || (fp_saved && r->saved_base[fp] != SW_SWU_BASE_CFA) ||
	    (r->ra_signed && !a->has_ptrauth))
		return 0;
	q->cfa_offset = r->cfa_offset;
	q->ra_offset = r->ra_offset;
	q->fp_offset = fp_saved ? r->saved_offset[fp] : r->ra_offset;
	q->bits = (uint16_t)(SWI_QUICK_ONLY | (r->cfa_reg == fp ? SWI_QUICK_CFA_FP : 0) |
	                     (fp_saved ? SWI_QUICK_FP_SAVED : 0) | (r->ra_signed ? SWI_QUICK_RA_SIGNED : 0) |
	                     (trust != SW_TRUST_JIT ? SWI_QUICK_NATIVE : SWI_QUICK_JIT) |
	                     (swi_quick_far(q->ra_offset, a) || swi_quick_far(q->fp_offset, a) ? SWI_QUICK_FAR : 0));
	q->trust = trust;
	q->reserved = 0;
	return 1;
}

/*
 * Where the unwind by a rules[] slot's rule reads (swi_read_extent): its
 * body rule's saved registers and return address, or for a rule kept for
 * quick steps alone, its return address and FP; nothing for a slot that
 * holds no rule.
 */
static inline struct swi_read_extent swi_rule_read_extent(const struct swi_code_copy *copy,
                                                          const struct swi_quick_rule *q, uint64_t keep)
{
	struct swi_read_extent e = { 0, 0 };
	int32_t lo = q->ra_offset, hi = q->fp_offset;

	if (q->bits & SWI_QUICK_GENERIC)
		return e;
	if (!(q->bits & SWI_QUICK_ONLY))
		return swi_body_read_extent(copy->body, copy->saved, keep);
	/* fp_offset is ra_offset where FP was not saved (swi_quick_rule_of_decoded). */
	if (hi < lo)
		lo = q->fp_offset, hi = q->ra_offset;
	e.lo = lo;
	e.width = (uint32_t)((int64_t)hi - (int64_t)lo);
	return e;
}

/*
 * The body unwind of a quick rule, when the walk keeps FP alone and FP is
 * known (the run checks both once: every unwind keeps them so): the
 * caller's CFA (its SP), return address and FP, or SW_E_BADSP when the
 * CFA is not above SP and at most hi (the stack's top, or a Frame or
 * tracker the frame must not reach), or the read's error.  Nothing is
 * written: the caller decides what the frame becomes.  It agrees with
 * swi_unwind_body on such a rule, which reports the errors.  in_window:
 * the caller knows that every read lies in u's window (iter.c:
 * quick_in_window, for a rule without SWI_QUICK_FAR), and span is not
 * looked at.
 */
static SWI_ALWAYS_INLINE sw_status swi_unwind_quick(struct swi_iter *it, const struct swi_body_unwind *u,
                                                    const struct swi_quick_rule *q, struct swi_read_span span,
                                                    uint64_t hi, int in_window, uint64_t *cfa_out,
                                                    uint64_t *ra_out, uint64_t *fp_out)
{
	uint64_t cfa = ((q->bits & SWI_QUICK_CFA_FP) ? u->fp : u->sp) + (uint64_t)(int64_t)q->cfa_offset;
	uint64_t ra, fp = u->fp;
	sw_status st;

	if (in_window) {
		/*
		 * The chain from one frame's FP to the next is the loop's
		 * speed: each read is addressed from the CFA's base register
		 * itself (the offsets added apart, off the chain), and the
		 * choices are branches, which the processor predicts, rather
		 * than selects, which would wait for both sides.
		 */
		int32_t ra_at = q->cfa_offset + q->ra_offset, fp_at = q->cfa_offset + q->fp_offset;
		uintptr_t bias = u->bias;

		if (q->bits & SWI_QUICK_CFA_FP) {
			cfa = u->fp + (uint64_t)(int64_t)q->cfa_offset;
			if (!swi_cfa_moves_up(cfa, u->sp, hi, 0))
				return SW_E_BADSP;
			ra = swi_load_le((const unsigned char *)(bias + (uintptr_t)u->fp + (uintptr_t)(intptr_t)ra_at),
			                 u->ptr_size);
			if (q->bits & SWI_QUICK_FP_SAVED)
				fp = swi_load_le((const unsigned char *)(bias + (uintptr_t)u->fp +
				                                         (uintptr_t)(intptr_t)fp_at), u->ptr_size);
		} else {
			cfa = u->sp + (uint64_t)(int64_t)q->cfa_offset;
			if (!swi_cfa_moves_up(cfa, u->sp, hi, 0))
				return SW_E_BADSP;
			ra = swi_load_le((const unsigned char *)(bias + (uintptr_t)u->sp + (uintptr_t)(intptr_t)ra_at),
			                 u->ptr_size);
			if (q->bits & SWI_QUICK_FP_SAVED)
				fp = swi_load_le((const unsigned char *)(bias + (uintptr_t)u->sp +
				                                         (uintptr_t)(intptr_t)fp_at), u->ptr_size);
		}
		if (SWI_UNLIKELY(q->bits & SWI_QUICK_RA_SIGNED))
			ra &= ~u->ptrauth_mask;
		*cfa_out = cfa;
		*ra_out = ra;
		*fp_out = fp;
		return SW_OK;
	}
	if (!swi_cfa_moves_up(cfa, u->sp, hi, 0))
		return SW_E_BADSP;
	if (SWI_LIKELY(swi_span_in_window(span, cfa))) {
		/* Every read in the window (swi_read_span_in): loads, no checks. */
		uint64_t saved_fp;

		ra = swi_load_le((const unsigned char *)(u->bias + (uintptr_t)(cfa + (uint64_t)(int64_t)q->ra_offset)),
		                 u->ptr_size);
		/*
		 * Where FP was not saved, fp_offset is ra_offset (a read known
		 * to be good): the load and the select need no branch, and FP
		 * stays in a register from one frame to the next.
		 */
		saved_fp = swi_load_le((const unsigned char *)(u->bias + (uintptr_t)(cfa + (uint64_t)(int64_t)q->fp_offset)),
		                       u->ptr_size);
		fp = (q->bits & SWI_QUICK_FP_SAVED) ? saved_fp : fp;
	} else {
		/* Out of the window: checked reads, into a temporary, so that ra and fp stay in registers. */
		uint64_t v;

		if ((st = swi_body_read(it, u, cfa + (uint64_t)(int64_t)q->ra_offset, &v)) != SW_OK)
			return st;
		ra = v;
		if (q->bits & SWI_QUICK_FP_SAVED) {
			if ((st = swi_body_read(it, u, cfa + (uint64_t)(int64_t)q->fp_offset, &v)) != SW_OK)
				return st;
			fp = v;
		}
	}
	if (SWI_UNLIKELY(q->bits & SWI_QUICK_RA_SIGNED))
		ra &= ~u->ptrauth_mask;
	*cfa_out = cfa;
	*ra_out = ra;
	*fp_out = fp;
	return SW_OK;
}

#endif /* SW_LIB_ITER_UNWIND_H */
