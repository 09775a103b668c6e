/*
 * iter.h (internal) - the iterator's state, which lives in the caller's
 * sw_iter storage, and the crawl frame it reports.
 */
#ifndef SW_LIB_ITER_H
#define SW_LIB_ITER_H

#include "util.h"
#include "arch.h"
#include "codemap_lookup.h"
#include "codemap_table.h"
#include "swu_format.h"

struct sw_crawl_frame {
	sw_frame_state state;
	uint32_t frame_type;
	/*
	 * A Frame's method.  A frame with code has its code's (crawl_frame.c
	 * reads it there, as it computes the offset in the code from ip):
	 * the fast step stores neither.
	 */
	void *method;
	uint64_t frame;                 /* Frame address, or 0 */
	const sw_code_info *code;       /* managed and native frames with code only */
	const sw_regdisplay *rd;
	const sw_thread *thread;
	uint32_t depth;
	uint8_t is_first, is_interrupted, has_faulted;
	uint8_t is_parent_of_funclet;
	uint8_t skip_gc_report;         /* parent of a funclet that reports for it */
	uint8_t trust;                  /* an sw_frame_trust */
	uint8_t sp_reg;                 /* the architecture's SP register in rd (sw_crawl_frame_sp) */
	/*
	 * A funclet's: its parent's CFA, read from its PSP slot (0 when it has
	 * none): the base of its SW_GC_PARENT_FRAME slots (gc_roots.c).
	 */
	uint64_t parent_cfa;
	/*
	 * A parent of a funclet (is_parent_of_funclet) whose funclet was a
	 * filter: that filter's blob, whose SW_GC_PARENT_FRAME slots this
	 * frame reports pinned (gc_roots.c).  Read only with that flag set.
	 */
	uint8_t parent_of_filter;
	const void *filter_unwind;
	uint32_t filter_unwind_size;
	/*
	 * rd->cur's IP, 0 when it is not known: what sw_crawl_frame_ip returns,
	 * set with the rest of the report, since a profiler's callback asks
	 * for it at every frame.
	 */
	uint64_t ip;
};

/*
 * Is the frame stopped at a call, its IP a return address (CoreCLR:
 * neither ActiveStackFrame nor a fault)?
 */
static inline int swi_stopped_at_call(const struct sw_crawl_frame *cf)
{
	return !cf->is_first && !cf->has_faulted && cf->trust != SW_TRUST_SIGNAL;
}

/* Where the iterator resumes on the next sw_iter_next call. */
enum swi_step {
	SWI_STEP_START,
	SWI_STEP_UNWIND,            /* rd.cur is a managed frame: unwind it */
	SWI_STEP_SKIPPED,           /* report Frames inside it, then it */
	SWI_STEP_AFTER_MANAGED,     /* move to its caller */
	SWI_STEP_FRAMES,            /* process the current Frame */
	SWI_STEP_AFTER_FRAME,       /* follow the Frame just reported */
	SWI_STEP_AFTER_TRACKER,     /* resume the faulted frame of the tracker just reported */
	SWI_STEP_DONE,
	SWI_STEP_FAILED
};

#define SWI_RECENT 4
#define SWI_RULES 16            /* a power of two */
#define SWI_SEEDS 8             /* a power of two, at most 32 */

/*
 * Where the unwind by a cached body rule reads: offsets lo to lo + width
 * from the CFA, for the walk's kept registers (iter_unwind.h:
 * swi_body_read_extent).
 */
struct swi_read_extent {
	int32_t lo;
	uint32_t width;
};

/*
 * That extent folded with the memory's direct window: the fast step works
 * it out when it caches a rule (iter.c: fast_rule_fill, by iter_unwind.h's
 * swi_read_span_in), so that a frame whose reads all lie in the window is
 * checked once, with one comparison, not at every read.  All the reads
 * from a CFA lie in the window when cfa + start <= room (modulo 2^64); see
 * swi_read_span_in.
 */
struct swi_read_span {
	uint64_t start, room;
};

/*
 * A rules[] slot's body rule as a walk that keeps IP, SP and FP alone
 * reads it (into arrays, ADDRESSES_ONLY: sw_backtrace): cut to what that
 * unwind needs and worked out once, when the rule is cached (iter.c:
 * fast_rule_fill, by iter_unwind.h's swi_quick_rule_of), so that no frame
 * searches saved[] or decides again where its CFA comes from.  16 bytes:
 * a run's rules stay in a few cache lines.
 */
struct swi_quick_rule {
	int32_t cfa_offset;             /* CFA = SP (or FP) + cfa_offset */
	int32_t ra_offset;              /* return address at [CFA + ra_offset] */
	int32_t fp_offset;              /* FP at [CFA + fp_offset] when SWI_QUICK_FP_SAVED */
	uint16_t bits;                  /* SWI_QUICK_* */
	uint8_t trust;                  /* swi_code_trust of the rule's code */
	uint8_t reserved;
};

enum {
	SWI_QUICK_CFA_FP = 1,           /* the CFA is FP + cfa_offset */
	SWI_QUICK_FP_SAVED = 2,         /* else FP keeps its value */
	SWI_QUICK_RA_SIGNED = 4,        /* strip the pointer-authentication bits */
	SWI_QUICK_NATIVE = 8,           /* native code (trust is not SW_TRUST_JIT) */
	SWI_QUICK_NO = 16,              /* needs more than IP, SP and FP: the full unwind takes it */
	SWI_QUICK_ONLY = 32,            /* the decoder's rule, not the body rule: quick steps alone take it */
	SWI_QUICK_GENERIC = 64,         /* no rule a fast step takes: the generic path's, kept as such */
	SWI_QUICK_JIT = 128,            /* JIT code: every rule a quick step takes has this or SWI_QUICK_NATIVE */
	/*
	 * A read lies outside [CFA - SWI_QUICK_NEAR, CFA - pointer size]: the
	 * run's loop that trusts its window for every such read
	 * (iter.c: quick_run) leaves it to the checked step.
	 */
	SWI_QUICK_FAR = 256
};

/* How far below its CFA a rule without SWI_QUICK_FAR reads (a saved FP or return address). */
#define SWI_QUICK_NEAR 4096

/*
 * rule_trust[] of a slot whose return address goes the generic way
 * (SWI_QUICK_GENERIC, with SWI_QUICK_NO), and of one whose rule is for
 * quick steps alone (SWI_QUICK_ONLY): the full fast step leaves both to
 * the generic path with one compare.
 */
#define SWI_TRUST_GENERIC 0xfeu
#define SWI_TRUST_QUICK_ONLY 0xffu

/* A rules[] slot of the fast step (struct swi_iter). */
struct swi_rule {
	uint64_t ra;                    /* 0: empty */
	struct swi_code_copy copy;
};

/*
 * The fast step's rules kept from one walk to the next, in a caller's
 * sw_walk_cache (sw_walk_frames_cached and sw_backtrace: every walk runs
 * the same step, so one table serves them).  The header says what the entries were made under: they
 * hold while the map's version (a removal), the walk flags they depend
 * on, the architecture and the kept registers stay the same (iter.c:
 * swi_iter_use_cache).  The memory may change: a rule keeps its extent,
 * and each walk folds it with its own window.  It also keeps the last
 * addresses the walk's look-ups did not find (struct swi_iter's missed[]),
 * which hold only while no method is added as well: those the map's
 * additions count stood at when the walk that missed them began.
 */
struct swi_rule_table {
	uint32_t magic;                 /* SWI_RULES_MAGIC */
	uint32_t arch;
	unsigned flags;                 /* of the walk flags, those a rule depends on (iter.c: SWI_RULE_FLAGS) */
	uint32_t held;                  /* a bit per slot of rule[] that holds a rule */
	const struct swi_rule_table *self;      /* where it was emptied: a copied cache is refused */
	const sw_codemap *map;
	uint64_t version;
	uint64_t keep;                  /* swi_body_unwind's */
	struct swi_rule rule[SWI_RULES];                /* ra 0 in a slot not held */
	struct swi_read_extent extent[SWI_RULES];
	struct swi_quick_rule quick[SWI_RULES];         /* swi_quick_rule_of each rule, its trust in it */
	uint8_t trust[SWI_RULES];                       /* the walks' rule_trust */
	uint8_t next[SWI_RULES + 2];                    /* the walks' rule_next */
	/*
	 * The last walk's rule_span, for the memory window [span_lo,
	 * span_last]: the next walk through the same window takes them as
	 * they are, and works them out from extent[] otherwise.
	 */
	uint64_t span_lo, span_last;
	struct swi_read_span span[SWI_RULES];
	uint64_t additions;             /* swi_codemap_additions when missed[] was made */
	uint64_t missed[2];
	uint8_t missed_valid;
	/*
	 * The seed's rule, by its exact IP, for walks into arrays (iter.c:
	 * quick_seed): a profiler's samples start from contexts, and the
	 * generic first step looks the IP up and decodes its blob at that
	 * offset at every walk.  seed_valid has a bit per entry.
	 */
	uint32_t seed_valid;
	struct {
		uint64_t ip;
		struct swi_quick_rule q;
		struct swi_code_copy code;
	} seed[SWI_SEEDS];
};

#define SWI_RULES_MAGIC 0x53575243u    /* "SWRC" */

struct swi_iter {
	uint32_t magic;
	uint32_t step;                  /* an swi_step */
	unsigned flags;                 /* SW_WALK_* */
	unsigned map_token;
	int in_read_section;
	int have_start;
	const sw_thread *thread;
	const struct swi_arch *arch;
	uint64_t frame;                 /* the current Frame, 0 when none is left */
	uint64_t kept_frame;            /* an IN_CALLER Frame the walk followed into its method */
	uint64_t reported_frame;        /* the Frame just reported as skipped: passed silently next */
	uint64_t tracker;               /* the next exception tracker, 0 when none is left */
	/*
	 * The InterpreterFrame whose interpreted methods rd.cur is in, 0 when
	 * it is in none: their unwind is the interpreter's (CoreCLR's
	 * InterpreterCodeManager; iter.c: unwind_frame), as CoreCLR's first
	 * argument register holds that Frame from
	 * SetContextToInterpMethodContextFrame on.  interp_ref_sp: once the
	 * last of them is unwound out of the interpreter, the caller SP its
	 * skipped Frames are ordered by, the InterpreterFrame's address, as
	 * CoreCLR's EnsureCallerContextIsValid leaves it (step_skipped).
	 */
	uint64_t interp_frame;
	uint64_t interp_ref_sp;
	sw_frame_view view;             /* the current Frame's header */
	const sw_frame_ops *ops;
	const sw_code_info *code;       /* the managed frame in rd.cur (swi_set_code) */
	int active;                     /* rd.cur's IP is exact, not a return address */
	uint8_t is_first, is_interrupted, has_faulted, reserved;
	/*
	 * Funclets: funclet_parent is the parent to flag as parent-of-funclet
	 * when it is reached: the frame whose caller SP is funclet_parent_sp
	 * (read from the funclet's PSP slot), or, when that is 0, the next
	 * frame of method funclet_parent.  While skip_to_parent is set
	 * (SKIPFUNCLETS, FUNCTIONSONLY, GC_FUNCLET_REFERENCE_REPORTING)
	 * nothing is reported until that parent.
	 */
	uint8_t skip_to_parent;
	void *funclet_parent;
	uint64_t funclet_parent_sp;
	uint8_t funclet_was_filter;     /* the funclet below funclet_parent was a filter */
	uint8_t trust;                  /* how rd.cur was found (sw_frame_trust) */
	uint8_t caller_trust;           /* how rd.caller was found */
	uint8_t native_dead_end;        /* a native frame that could not be unwound */
	uint8_t skip_to_tracker;        /* the frame just reported holds a dispatch's tracker: go on there */
	/*
	 * Why the walk cannot reach the thread's outermost frame from here
	 * (SW_OK while it can): a native frame that could not be unwound, or
	 * native code nothing describes.  A Frame that resumes the walk in
	 * code clears it; a walk that runs out of Frames with it set fails
	 * with it (iter.c: step_frames), rather than end as if complete.
	 */
	sw_status stopped_by;
	uint8_t caller_active;          /* rd.caller's IP is exact (a signal frame's) */
	uint8_t report_funclet;         /* this funclet frame is reported (GC rules) */
	/*
	 * Nobody reads the crawl frame but its state (sw_backtrace): a report
	 * fills in only that, and a Frame's method is not looked up unless
	 * FUNCTIONSONLY needs it.
	 */
	uint8_t quiet;
	uint8_t rules_ready;            /* rules[] is set for this walk (iter.c: fast_rules) */
	uint64_t rules_lo, rules_last;  /* the window rule_span[] was made for (fast_rules) */
	/*
	 * A caller's cache of rules (sw_walk_frames_cached), or NULL: the
	 * fast step starts from its rules, and the walk hands back those
	 * fast_rule_fill wrote (rules_filled, a bit per slot) when it ends
	 * (swi_iter_keep_rules).
	 */
	uint32_t rules_filled;
	uint32_t rules_in_cache;        /* a bit per slot whose code is still only the cache's (iter.c: fast_rule_code) */
	struct swi_rule_table *cache;
	uint8_t rules_turn;             /* a bit per pair of rules[]: the slot its next fill takes when both are full */
	uint32_t depth;                 /* frames reported so far */
	uint32_t steps;                 /* loop iterations, at most max_steps */
	uint32_t max_steps;             /* what the walk's stacks hold (iter.c: step_bound) */
	uint32_t recent_next;           /* the recent[] slot the next miss fills */
	/*
	 * The last two addresses the code map did not have (iter.c:
	 * cached_lookup), when missed_valid's bit is set: a walk that ends
	 * in code the map does not know asks for its return address from
	 * the fast step, then again from the generic step.  Like recent[],
	 * an answer holds for the walk; a walk's cache keeps them for the
	 * next walk while no method is added (struct swi_rule_table).
	 */
	uint64_t missed[2];
	uint8_t missed_valid, missed_next;
	uint8_t stack_switches;         /* off alternate signal stacks (iter.c: leave_alternate_stack) */
	uint64_t cache_additions;       /* the map's additions count when the walk took its cache */
	sw_walk_error err;
	sw_regdisplay rd;
	struct sw_crawl_frame cf;
	/*
	 * From here on sw_iter_init does not clear: it empties recent[] by
	 * its keys (rules[]: fast_rules), and the rest is written before it is
	 * read.
	 */
	/*
	 * After a signal frame took the walk off an alternate signal stack,
	 * thread points here: the walked thread, with the bounds of the stack
	 * the walk is now on (iter.c: leave_alternate_stack).
	 */
	sw_thread switched;
	/* code points here when its code came from a code table: a copy (codemap_table.h). */
	struct swi_code_copy code_copy;
	/*
	 * Stands for unknown native code stepped by its frame pointer
	 * (FRAME_POINTER_FALLBACK): native, no method, no SWU.
	 */
	struct swi_code_copy fp;
	/*
	 * The last few methods found (iter.c: cached_lookup).  Stacks repeat
	 * methods (recursion, loops of calls); a hit skips the code map's
	 * hash probe and search.  code points at the copy beside it (a lookup
	 * copies a method or a table's function out), which the next miss
	 * into that slot overwrites (swi_set_code copies it out); what the
	 * copy points at (the blob, the shape) stays valid for the whole
	 * walk: it holds a read section.
	 */
	struct {
		uint64_t start, size;
		const sw_code_info *code;
		struct swi_code_copy copy;
	} recent[SWI_RECENT];
	/*
	 * What a return address resolved to in the fast step (iter.c:
	 * fast_step): its code and body rule, by return address, in pairs of
	 * slots (two ways).  A hit skips the lookups and the checks that depend only on
	 * the address; like recent[], the entries stay valid for the walk (it
	 * holds a read section).  The fast step empties them when it first
	 * runs in a walk, or takes a cache's (cache, below).
	 * The code is copy.info, its rule copy.rule (copy.body points at it:
	 * iter.c's fast_rule_fill makes sure) and copy.saved.  On a
	 * 64-bit host an entry is 128 bytes, which makes its address a shift.
	 */
	struct swi_rule rules[SWI_RULES];
	struct swi_read_span rule_span[SWI_RULES];      /* of rules[i]'s rule, the kept registers, the window */
	/*
	 * swi_code_trust of rules[i]'s code, which says too whether it is
	 * native (not SW_TRUST_JIT); SWI_TRUST_QUICK_ONLY when the slot holds
	 * a rule for quick steps alone.
	 */
	uint8_t rule_trust[SWI_RULES];
	/*
	 * The slot of the rule that came after rules[i] when it was last
	 * stepped: stacks repeat (recursion, the same call paths), and a walk
	 * into arrays tries it before hashing the return address, so that
	 * finding the next frame's rule does not wait for the load of its
	 * return address (iter.c: fast_step).  A wrong guess costs a compare.
	 * Two more entries stand for the frames a run starts from, whose rule
	 * is not in a slot (SWI_SLOT_NONE, SWI_SLOT_CODE).
	 */
	uint8_t rule_next[SWI_RULES + 2];
	/*
	 * rules[i]'s rule as a walk that keeps IP, SP and FP alone reads it
	 * (iter_unwind.h); the two entries past them hold only the trust of
	 * the frame a quick run starts from (SWI_SLOT_NONE) and of the frame
	 * whose code a fill moved out of its slot (SWI_SLOT_CODE).
	 */
	struct swi_quick_rule rule_quick[SWI_RULES + 2];
};

#define SWI_ITER_MAGIC 0x53574954u     /* "SWIT" */

/*
 * A walk's loop steps are bounded by what its stack can hold (iter.c:
 * step_bound): at most SWI_STEPS_PER_RECORD for each frame, Frame and
 * exception tracker that fits in it, and never more than SWI_MAX_STEPS,
 * which stacks of megabytes reach.  sw_walk_frames(3) states the worst case.
 */
#define SWI_STEPS_PER_RECORD 4
#define SWI_MAX_STEPS (1u << 21)

/*
 * Hard bound on the stacks one walk may switch to, each across a signal
 * frame: a handler on an alternate stack, interrupted on another whose
 * handler ran on a third (SS_AUTODISARM lets a handler set one), and so on.
 */
#define SWI_MAX_STACK_SWITCHES 4

/*
 * Whether `code` is a copy in recent[] (iter.c: cached_lookup), which the
 * next lookup may overwrite.  Every code the walk finds is a copy in the
 * iterator (codemap.c copies methods out, codemap_table.c functions):
 * there, in rules[] (which only fast_rule_fill and fast_rules write, and
 * they keep the current frame's), in code_copy, or the frame-pointer
 * stand-in fp.
 */
static inline int swi_code_in_recent(const struct swi_iter *it, const sw_code_info *code)
{
	return (const char *)code >= (const char *)it->recent &&
	       (const char *)code < (const char *)(it->recent + SWI_RECENT);
}

/*
 * Make `code` the current frame's.  A copy in recent[] may be overwritten
 * by the next lookup: it->code then gets its own copy.
 */
static inline void swi_set_code(struct swi_iter *it, const sw_code_info *code)
{
	if (code && swi_code_in_recent(it, code)) {
		swi_code_copy_assign(&it->code_copy, (const struct swi_code_copy *)(const void *)code);
		code = &it->code_copy.info;
	}
	it->code = code;
}

/*
 * The body rule of code the walk found, and its saved[]: the one beside
 * its copy (lo == hi when there is none).
 */
static inline const struct swu_body_rule *swi_body_rule_of(const sw_code_info *code,
                                                           const uint32_t **saved)
{
	const struct swi_code_copy *c = (const struct swi_code_copy *)(const void *)code;

	*saved = c->saved;
	return c->body;
}

/* How a frame's callee's unwind information was made: the caller's trust. */
static inline uint8_t swi_code_trust(const sw_code_info *code)
{
	if (!(code->flags & SW_CODE_NATIVE))
		return SW_TRUST_JIT;
	return (code->flags & SW_CODE_ANALYZED) ? SW_TRUST_ANALYSIS : SW_TRUST_CFI;
}

/*
 * sw_iter_next for an iterator sw_iter_init set up (iter.c): sw_walk_frames
 * calls it directly, without the public entry's checks and PLT hop per frame.
 */
int swi_iter_next(struct swi_iter *it);

/* An empty rule table for a caller's cache (sw_walk_cache_init). */
void swi_rule_table_init(struct swi_rule_table *rt);

/*
 * Let the walk's fast step start from the rules of the caller's table
 * `rt` and hand back those it adds (sw_walk_frames_cached): after
 * sw_iter_init, before the first step, inside the read section, where the
 * map's version can vouch for what `rt` holds.  `rt` empties itself when
 * what its rules were made under changed.  SW_E_INVAL when `rt` is no
 * table or the walk has begun.
 */
sw_status swi_iter_use_cache(struct swi_iter *it, struct swi_rule_table *rt);

/*
 * Where a walk puts what it reports: a callback (sw_walk_frames), or the
 * IPs (and SPs, when sps is not NULL) of the frames with code, n of max
 * filled (sw_backtrace).
 */
struct swi_sink {
	sw_walk_callback cb;
	void *data;
	uint64_t *ips, *sps;
	size_t n, max;
};

/*
 * Run the walk sw_iter_init set up (and swi_iter_use_cache, if it has a
 * cache) into `sink`, to its end, and hand the rules it made to its cache:
 * 0 when the walk ended, 1 when the sink stopped it, or the walk's error.
 * Every walk but the iterator's runs here, on the iterator's own step.
 */
int swi_iter_run(struct swi_iter *it, struct swi_sink *sink);

/* Unwind the managed frame in it->rd.cur into it->rd.caller (iter_unwind.c). */
sw_status swi_unwind_managed(struct swi_iter *it);

#endif /* SW_LIB_ITER_H */
