/*
 * backtrace.c - sw_backtrace: the IPs of a QUICKUNWIND walk, into an array.
 *
 * A profiler that wants only where each frame is pays, in sw_walk_frames,
 * for a crawl frame, a regdisplay and a callback per frame.  Here the walk
 * runs on the iterator, but wherever a frame simply returns into a method
 * body (the common case: no Frame, tracker, funclet or trampoline in play)
 * a tight loop takes over.  It keeps IP, SP and the frame pointer in
 * locals and steps each frame by a compact rule found by return address in
 * a table: the CFA's base and offset, where the return address and the
 * frame pointer were saved.  When the loop meets anything else it hands
 * the iterator the state the generic steps would have reached, and the
 * generic path goes on from there.
 *
 * The table may outlive the walk (sw_backtrace_cache): a sampler walks the
 * same code again and again.  It holds code-map entries across read
 * sections, which is safe while the map's version (iter.h) stays the same.
 *
 * No allocation, lock or system call: a signal handler may run it.
 */
#include <limits.h>
#include "iter.h"
#include "swu_format.h"

#define BT_RULES 128            /* a power of two */
#define BT_SEEDS 16             /* a power of two, at most 64 */
#define BT_SENTINEL BT_RULES    /* rule[BT_SENTINEL] ends every chain: its key is 0, and it stops the loop */
#define BT_NO_FP INT32_MIN      /* the frame pointer is not saved: it keeps its value */

enum {
	BT_CFA_IS_FP = 1,               /* CFA = FP + cfa_offset, else SP + cfa_offset */
	BT_NATIVE = 2,                  /* native code (NATIVE_FRAMES) */
	BT_RA_SIGNED = 4,               /* strip the pointer-authentication bits */
	BT_OUTERMOST = 8,               /* the thread's first function: its caller is IP 0 */
	BT_UNKNOWN = 16,                /* no code at this return address (the rest is unused) */
	BT_STOP = 32,                   /* the sentinel: an IP of 0 matches its key, and it never steps */
	BT_U2M = 64                     /* native, under NOTIFY_ON_U2M_TRANSITIONS: a marker may come first */
};

/*
 * A body rule, cut to what a QUICKUNWIND step needs, by return address.
 * `next` is the rule of the frame that came after this one last time:
 * stacks repeat (recursion, the same call paths), so the loop tries it
 * first, and finding the next rule is one load that does not wait for the
 * return address this frame yields.  The loop checks the key before using
 * it.  Offsets are from the CFA's base register (SP or FP), so that each
 * read is one add from a register the loop has.
 */
struct bt_rule {
	uint64_t ra;                    /* the key; 0 only in the sentinel */
	const struct bt_rule *next;     /* in the same table; the sentinel when none */
	/*
	 * Where the code came from, for the iterator to copy it again when
	 * the loop hands over (bt_set_code): a lookup copies methods and
	 * functions out, and the copy does not outlive the next lookup.  A
	 * method's entry + BT_ENTRY_TAG, and in `at` the return address's
	 * offset in it; a code table's address + BT_TABLE_TAG, and in `at` the
	 * function's index.
	 */
	const void *code;
	int32_t cfa_offset;             /* CFA = base + cfa_offset */
	int32_t ra_offset;              /* return address at [base + ra_offset] */
	int32_t fp_offset;              /* saved FP at [base + fp_offset], or BT_NO_FP */
	uint8_t bits;                   /* BT_* */
	uint8_t at[3];                  /* little-endian */
};

#define BT_TABLE_TAG ((uintptr_t)1)
#define BT_ENTRY_TAG ((uintptr_t)2)
#define BT_TAGS      (BT_TABLE_TAG | BT_ENTRY_TAG)
#define BT_MAX_AT    ((UINT32_C(1) << 24) - 1)

#define BT_MAGIC 0x53574254u    /* "SWBT" */

/*
 * Two ways (bt_rule_for); valid[] has a bit per filled slot, so emptying
 * the table is a few stores.  A slot's key and rule always belong together: a rule is
 * built apart and copied in whole.  Every slot written under this
 * (map, version) holds an entry that is still registered.
 */
struct bt_cache {
	uint32_t magic;
	unsigned flags;                 /* the walk flags the rules were made under */
	const struct bt_cache *self;    /* where it was emptied: a copy's `next` points elsewhere */
	const sw_codemap *map;
	uint64_t version;
	uint64_t additions;             /* the map's additions when the unknown[] rules were made */
	uint64_t valid[BT_RULES / 64];
	uint64_t unknown[BT_RULES / 64];        /* valid slots that are BT_UNKNOWN */
	uint64_t older[BT_RULES / 128];         /* per pair of slots, the way a fill evicts */
	uint64_t seed_valid;
	/*
	 * The rule the loop found first last time: walks of one thread start
	 * the same way, most often at one Frame's return address, and the
	 * loop tries it before the table.  Its key is checked like any next.
	 */
	const struct bt_rule *first;
	struct bt_rule rule[BT_RULES + 1];
	/* Rules of seed IPs (an active frame, decoded at its exact offset), apart from return addresses'. */
	struct bt_rule seed[BT_SEEDS];
};

_Static_assert(BT_RULES % 128 == 0, "valid[] and older[] bits");
_Static_assert(sizeof(struct bt_cache) <= sizeof(sw_backtrace_cache), "sw_backtrace_cache too small");
_Static_assert(_Alignof(struct bt_cache) <= _Alignof(sw_backtrace_cache), "sw_backtrace_cache misaligned");

/* The flags a rule depends on (bt_fill, swi_body_return). */
#define BT_RULE_FLAGS (SW_WALK_NATIVE_FRAMES | SW_WALK_FUNCTIONSONLY | SW_WALK_NOTIFY_ON_U2M_TRANSITIONS)

static struct bt_cache *cache_of(sw_backtrace_cache *c)
{
	return (struct bt_cache *)(void *)c;
}

static void bt_reset(struct bt_cache *c, const sw_codemap *map, uint64_t version, unsigned flags)
{
	c->magic = BT_MAGIC;
	c->flags = flags & BT_RULE_FLAGS;
	c->self = c;
	c->map = map;
	c->version = version;
	memset(c->valid, 0, sizeof c->valid);
	memset(c->unknown, 0, sizeof c->unknown);
	memset(c->older, 0, sizeof c->older);
	c->additions = 0;
	c->seed_valid = 0;
	memset(&c->rule[BT_SENTINEL], 0, sizeof c->rule[BT_SENTINEL]);
	c->rule[BT_SENTINEL].next = &c->rule[BT_SENTINEL];
	c->rule[BT_SENTINEL].bits = BT_STOP;
	c->first = &c->rule[BT_SENTINEL];
}

SW_API void sw_backtrace_cache_init(sw_backtrace_cache *pub)
{
	if (pub)
		bt_reset(cache_of(pub), NULL, 0, 0);
}

static unsigned bt_slot(uint64_t ra)
{
	return (unsigned)((ra * 0x9e3779b97f4a7c15ull) >> 57) & (BT_RULES - 1);
}

/* cfa_offset + offset, when it fits the rule's field. */
static int from_base(int32_t cfa_offset, int32_t offset, int32_t *out)
{
	int64_t v = (int64_t)cfa_offset + offset;

	if (v <= INT32_MIN || v > INT32_MAX)
		return 0;
	*out = (int32_t)v;
	return 1;
}

/* Does a pointer at base + offset lie in the frame: at or above its base, below its CFA? */
static int in_frame(int32_t offset, int32_t cfa_offset, unsigned p)
{
	return offset >= 0 && (int64_t)offset + p <= cfa_offset;
}

/*
 * Fill a rule's fields; 0 when an offset from the CFA's base does not
 * fit, or when the return address or the saved frame pointer lies outside
 * the frame, between the CFA's base and the CFA (where compiled code keeps
 * them): the loop's reads need no check of their own then (bt_loop).
 * outermost: a rule that reads nothing.
 */
static int bt_make(const struct swi_iter *it, struct bt_cache *cache, uint64_t key,
                   const sw_code_info *code, unsigned cfa_reg, int32_t cfa_offset,
                   int32_t ra_offset, int fp_saved, int32_t fp_offset, int ra_signed,
                   int outermost, struct bt_rule *out)
{
	const struct swi_arch *a = it->arch;

	out->fp_offset = BT_NO_FP;
	if (!from_base(cfa_offset, ra_offset, &out->ra_offset) ||
	    (fp_saved && !from_base(cfa_offset, fp_offset, &out->fp_offset)))
		return 0;
	if (!outermost && (!in_frame(out->ra_offset, cfa_offset, a->ptr_size) ||
	                   (fp_saved && !in_frame(out->fp_offset, cfa_offset, a->ptr_size))))
		return 0;
	out->ra = key;
	out->next = &cache->rule[BT_SENTINEL];
	/* A copy does not outlive the lookup: keep where it came from. */
	{
		const struct swi_code_copy *c = (const struct swi_code_copy *)(const void *)code;
		uint64_t at;

		if (!c->table)
			return 0;       /* the frame-pointer stand-in: the generic path's */
		if (c->index != SWI_COPY_ENTRY) {
			out->code = (const void *)((uintptr_t)c->table + BT_TABLE_TAG);
			at = c->index;
		} else {
			out->code = (const void *)((uintptr_t)c->entry + BT_ENTRY_TAG);
			at = key - code->start;
		}
		if (at > BT_MAX_AT)
			return 0;
		out->at[0] = (uint8_t)at;
		out->at[1] = (uint8_t)(at >> 8);
		out->at[2] = (uint8_t)(at >> 16);
	}
	out->cfa_offset = cfa_offset;
	out->bits = (uint8_t)((cfa_reg == a->fp_reg ? BT_CFA_IS_FP : 0) |
	                      ((code->flags & SW_CODE_NATIVE) ? BT_NATIVE : 0) |
	                      ((code->flags & SW_CODE_NATIVE) &&
	                       (it->flags & SW_WALK_NOTIFY_ON_U2M_TRANSITIONS) ? BT_U2M : 0) |
	                      (ra_signed ? BT_RA_SIGNED : 0));
	return 1;
}

/*
 * The compact form of a rule the decoder gave: the CFA from SP or FP (not
 * through memory), the return address on the stack, FP (if saved) at a
 * CFA-relative slot.  0 otherwise.
 */
static int bt_from_decoded(struct swi_iter *it, struct bt_cache *cache, uint64_t key,
                           const sw_code_info *code, const sw_swu_rule *r, struct bt_rule *out)
{
	const struct swi_arch *a = it->arch;
	int fp_saved = (r->saved_mask >> a->fp_reg) & 1;

	if (r->arch != it->thread->arch || r->ra_in_reg || r->cfa_deref ||
	    (r->cfa_reg != a->sp_reg && r->cfa_reg != a->fp_reg) ||
	    (fp_saved && r->saved_base[a->fp_reg] != SW_SWU_BASE_CFA))
		return 0;
	return bt_make(it, cache, key, code, r->cfa_reg, r->cfa_offset, r->ra_offset, fp_saved,
	               fp_saved ? r->saved_offset[a->fp_reg] : 0, (int)r->ra_signed, 0, out);
}

/*
 * Code was added since the BT_UNKNOWN rules were made: they may be wrong
 * now.  Emptying their slots is not enough, since other rules' next (and
 * first) still lead to them, and the loop checks only the key there: each
 * becomes a sentinel, whose key an IP of 0 alone matches, and which stops
 * the loop.
 */
static void bt_forget_unknown(struct bt_cache *cache)
{
	for (unsigned i = 0; i < BT_RULES / 64; i++) {
		for (uint64_t m = cache->unknown[i]; m; m &= m - 1) {
			struct bt_rule *r = &cache->rule[i * 64 + (unsigned)__builtin_ctzll(m)];

			r->ra = 0;
			r->bits = BT_STOP;
			r->next = &cache->rule[BT_SENTINEL];
		}
		cache->valid[i] &= ~cache->unknown[i];
		cache->unknown[i] = 0;
	}
}

/*
 * The compact rule for return address ra, when the loop may step that
 * frame; 0 when the generic path must (see swi_return_code and
 * bt_from_decoded, and a native frame the flags do not let through).  The
 * body rule serves where it covers the address; elsewhere the decoder
 * runs once, and the table keeps its answer.
 */
static int bt_fill(struct swi_iter *it, struct bt_cache *cache, uint64_t ra, struct bt_rule *out)
{
	const struct swi_arch *a = it->arch;
	const struct swu_body_rule *br;
	const uint32_t *saved;
	const sw_code_info *code = swi_return_code(it, ra);
	uint64_t offset;
	sw_swu_rule r;

	if (!code || ((code->flags & SW_CODE_NATIVE) && (it->flags & SW_WALK_FUNCTIONSONLY)))
		return 0;
	/* Nothing called a thread's first function: its caller is IP 0 at the stack's top. */
	if (code->flags & SW_CODE_OUTERMOST) {
		if (!bt_make(it, cache, ra, code, a->sp_reg, 0, 0, 0, 0, 0, 1, out))
			return 0;
		out->bits |= BT_OUTERMOST;
		return 1;
	}
	offset = ra - code->start;
	br = swi_body_rule_of(code, &saved);
	if ((offset >= br->lo && offset < br->hi) || (offset >= br->lo2 && offset < br->hi2)) {
		int fp_saved = 0;
		int32_t fp_offset = 0;

		if (br->arch != it->thread->arch || br->ra_in_reg ||
		    (br->cfa_reg != a->sp_reg && br->cfa_reg != a->fp_reg))
			return 0;
		for (unsigned i = 0; i < br->nsaved; i++)
			if (swu_body_saved_reg(saved[i]) == a->fp_reg) {
				fp_saved = 1;
				fp_offset = swu_body_saved_offset(saved[i]);
			}
		return bt_make(it, cache, ra, code, br->cfa_reg, br->cfa_offset, br->ra_offset, fp_saved,
		               fp_offset, br->ra_signed, 0, out);
	}
	if (offset > code->size ||
	    sw_swu_decode_return_address(code->unwind, code->unwind_size, (uint32_t)offset, &r) != SW_OK)
		return 0;
	return bt_from_decoded(it, cache, ra, code, &r, out);
}

/*
 * The compact rule of a seed at its exact IP (an active frame: the full
 * decoder, prolog and epilogs included), when the loop's step applies to
 * it; 0 otherwise (and the iterator's first step takes it).
 */
static int bt_fill_seed(struct swi_iter *it, struct bt_cache *cache, uint64_t ip, struct bt_rule *out)
{
	const sw_code_info *code = swi_seed_code(it, ip);
	sw_swu_rule r;

	if (!code || ip - code->start > code->size ||
	    ((code->flags & SW_CODE_NATIVE) && (it->flags & SW_WALK_FUNCTIONSONLY)) ||
	    sw_swu_decode(code->unwind, code->unwind_size, (uint32_t)(ip - code->start), &r) != SW_OK)
		return 0;
	return bt_from_decoded(it, cache, ip, code, &r, out);
}

/* Is slot i of the table filled? */
static int bt_valid(const struct bt_cache *cache, unsigned i)
{
	return (cache->valid[i >> 6] >> (i & 63)) & 1;
}

/*
 * The rule the table holds for return address ip, for code that may be
 * stepped (not where it found none, nor a sentinel); NULL otherwise.
 */
static const struct bt_rule *bt_rule_held(const struct bt_cache *cache, uint64_t ip)
{
	unsigned slot = bt_slot(ip);

	for (unsigned way = 0; way < 2; way++, slot ^= 1)
		if (bt_valid(cache, slot) && cache->rule[slot].ra == ip && ip != 0 &&
		    !(cache->rule[slot].bits & (BT_UNKNOWN | BT_STOP)))
			return &cache->rule[slot];
	return NULL;
}

/*
 * The rule for return address ip, from the table or filled into it; NULL
 * when the loop cannot step that frame.  An address where the walk finds
 * no code at all gets a BT_UNKNOWN rule, kept while nothing is added to
 * the map: most walks end at one (the thread's entry has no caller the map
 * knows), and looking it up twice per walk would cost as much as a dozen
 * frames.
 *
 * Two ways: a return address may sit in its slot or the slot beside it.
 * A stack of a few dozen return addresses often has two that share a
 * slot, and direct mapped they would evict each other at every walk, each
 * time for a lookup and a fill.  A fill takes an empty way, else the one
 * not filled last (older[]: the bit of the pair's way to evict next).
 */
static struct bt_rule *bt_rule_for(struct swi_iter *it, struct bt_cache *cache, uint64_t ip)
{
	unsigned slot = bt_slot(ip), pair = slot >> 1;
	struct bt_rule fresh;
	uint64_t bit;

	if (bt_valid(cache, slot) && cache->rule[slot].ra == ip)
		return &cache->rule[slot];
	if (bt_valid(cache, slot ^ 1) && cache->rule[slot ^ 1].ra == ip)
		return &cache->rule[slot ^ 1];
	if (!bt_fill(it, cache, ip, &fresh)) {
		if (!swi_return_unknown(it, ip))
			return NULL;
		memset(&fresh, 0, sizeof fresh);
		fresh.ra = ip;
		fresh.next = &cache->rule[BT_SENTINEL];
		fresh.bits = BT_UNKNOWN;
	}
	if (bt_valid(cache, slot)) {
		if (!bt_valid(cache, slot ^ 1))
			slot ^= 1;
		else
			slot = (slot & ~1u) | (unsigned)((cache->older[pair >> 6] >> (pair & 63)) & 1);
	}
	/* The other way is evicted next. */
	if (slot & 1)
		cache->older[pair >> 6] &= ~(1ULL << (pair & 63));
	else
		cache->older[pair >> 6] |= 1ULL << (pair & 63);
	bit = 1ULL << (slot & 63);
	if (fresh.bits & BT_UNKNOWN)
		cache->unknown[slot >> 6] |= bit;
	else
		cache->unknown[slot >> 6] &= ~bit;
	cache->rule[slot] = fresh;
	cache->valid[slot >> 6] |= bit;
	return &cache->rule[slot];
}

/*
 * Where the loop is: the frame about to be stepped (QUICKUNWIND: IP, SP,
 * FP), and `code`, that of the last frame stepped (as its rule keeps
 * it, made the iterator's again by bt_commit), `native` whether that code
 * is native.  No register locations: nothing sw_backtrace gives shows them.
 */
struct bt_state {
	uint64_t ip, sp, fp;
	int fp_valid;
	int native;
	const void *code;               /* as a rule keeps it (struct bt_rule), or the iterator's */
	const struct bt_rule *rule;     /* the rule code came from, if the table still holds it */
};

/* One pointer of the target's stack, through its accessor; 0 when it cannot be read. */
static int bt_read_slow(const sw_memory *m, unsigned p, uint64_t addr, uint64_t *out)
{
	return swi_read_ptr(m, p, addr, out) == SW_OK;
}

/*
 * The stack, read in place when the loop may (direct): a pointer at any
 * address in [lo, end - p] is at host + (address - lo), which is bias +
 * address.
 */
struct bt_window {
	uint64_t lo, end;
	uintptr_t bias;
};

/*
 * One pointer at addr: in place through the window (direct), else through
 * the accessor.  0 when it cannot be read.  A direct read is never
 * checked here: bt_loop keeps every address it reads inside the window.
 */
static inline __attribute__((always_inline)) int bt_read(const sw_memory *m, uintptr_t bias, int direct,
                                                          unsigned p, uint64_t addr, uint64_t *out)
{
	if (direct) {
		*out = swi_load_le((const unsigned char *)(bias + (uintptr_t)addr), p);
		return 1;
	}
	return bt_read_slow(m, p, addr, out);
}

/*
 * Step frames while they return into method bodies, recording each; stops
 * before the first frame it cannot step as the generic path would (s stays
 * at that frame), or when `max` IPs are recorded, or where the walk ends
 * (*ends).  A frame's CFA must lie above its SP and at most at `hi`.
 * `p` (the pointer size), `direct` (the stack is in this process's memory,
 * little-endian) and, where direct, `with_sps` are constants in each
 * inlined copy.
 *
 * Direct, the caller (bt_run) has made sure that the window holds every
 * address from s->sp up to hi, that hi is below 2^63, and that the FP is
 * known: it stays known, as the loop ends at an outermost frame, the
 * only one that makes it unknown.  Every read lies
 * between the frame's CFA base and its CFA (bt_make), the base is SP or
 * an FP checked to lie in [SP, hi], and the CFA at most hi: so each read
 * lies in the window, and no CFA computed from a base at most hi wraps.
 *
 * Returns the new count; s->code becomes that of the last frame stepped.
 * The loop keeps few values live: each one more is a spill per frame.
 */
static inline __attribute__((always_inline)) size_t
bt_loop(struct swi_iter *it, struct bt_cache *cache, struct bt_state *s, unsigned p, int direct,
        int with_sps, uintptr_t bias, uint64_t hi, uint64_t *ips, uint64_t *sps, size_t n, size_t max,
        int *ends)
{
	const sw_memory *m = it->thread->memory;
	uint64_t ip = s->ip, sp = s->sp, fp = s->fp;
	uint64_t *out = ips + n, *const out_end = ips + max, *sp_out = with_sps ? sps + n : NULL;
	int fp_valid = s->fp_valid;
	/*
	 * prev_q: the rule of the last frame stepped, which tells its code
	 * and whether it is native; NULL when code and native below tell,
	 * as they do before the first frame and once a fill (which may
	 * overwrite the rule prev_q points at) has copied them out.
	 */
	const struct bt_rule *q = cache->first, *prev_q = NULL, *held_rule = NULL;
	const void *code = s->code;
	unsigned native = s->native ? BT_NATIVE : 0;

	while (out < out_end) {
		uint64_t base, cfa, ra, new_fp = fp;

		if (q->ra != ip) {
			struct bt_rule *found;

			if (prev_q) {
				code = prev_q->code;
				native = prev_q->bits & BT_NATIVE;
				held_rule = prev_q;
			}
			found = bt_rule_for(it, cache, ip);
			/* Learn the successor: next time this path is tried first. */
			if (found && prev_q)
				((struct bt_rule *)(uintptr_t)prev_q)->next = found;
			else if (found && out == ips + n)
				cache->first = found;
			prev_q = NULL;
			if (!found)
				break;
			q = found;
		}
		if (SWI_UNLIKELY(q->bits & (BT_STOP | BT_OUTERMOST | BT_UNKNOWN | BT_RA_SIGNED | BT_U2M))) {
			unsigned native_before = prev_q ? prev_q->bits & BT_NATIVE : native;
			int u2m = (it->flags & SW_WALK_NOTIFY_ON_U2M_TRANSITIONS) != 0;

			/* Leaving managed code for native code: the generic path reports the marker. */
			if ((q->bits & BT_STOP) || ((q->bits & BT_U2M) && !native_before))
				break;
			/*
			 * No code here: with no Frame or tracker left (and no
			 * marker to report) the walk ends, as the iterator
			 * would end it.
			 */
			if (q->bits & BT_UNKNOWN) {
				*ends = !it->frame && !it->tracker && !(u2m && !native_before);
				break;
			}
			if (q->bits & BT_OUTERMOST) {
				if (it->thread->stack_hi <= sp || it->thread->stack_hi > hi)
					break;
				*out++ = ip;
				if (sp_out)
					*sp_out++ = sp;
				ip = 0;
				sp = it->thread->stack_hi;
				fp_valid = 0;
				/* Nothing is found at IP 0: the loop would stop there anyway. */
				prev_q = q;
				break;
			}
		}
		if (q->bits & BT_CFA_IS_FP) {
			/* Direct, an FP in [SP, hi] keeps the frame's reads in the window. */
			if (direct ? fp < sp || fp > hi : !fp_valid)
				break;
			base = fp;
		} else {
			base = sp;
		}
		cfa = base + (uint64_t)(int64_t)q->cfa_offset;
		/*
		 * Up the stack and still on it, with no Frame passed.  Direct,
		 * the base is at least SP and the CFA above it (bt_make).
		 */
		if ((!direct && cfa <= sp) || cfa > hi)
			break;
		if (!bt_read(m, bias, direct, p, base + (uint64_t)(int64_t)q->ra_offset, &ra))
			break;
		if (q->fp_offset != BT_NO_FP) {
			if (!bt_read(m, bias, direct, p, base + (uint64_t)(int64_t)q->fp_offset, &new_fp))
				break;
			if (!direct)
				fp_valid = 1;
		}
		if (SWI_UNLIKELY(q->bits & BT_RA_SIGNED))
			ra &= ~it->thread->ptrauth_mask;
		*out++ = ip;
		if (sp_out)
			*sp_out++ = sp;
		ip = ra;
		sp = cfa;
		fp = new_fp;
		prev_q = q;
		q = q->next;
	}
	s->ip = ip, s->sp = sp;
	if (fp_valid)
		s->fp = fp;
	s->fp_valid = fp_valid;
	if (prev_q) {
		code = prev_q->code;
		native = prev_q->bits & BT_NATIVE;
		held_rule = prev_q;
	}
	s->code = code;
	s->native = native != 0;
	/* bt_set_code checks that it still holds the code. */
	s->rule = held_rule;
	return (size_t)(out - ips);
}

/*
 * The code rule q was made for (q->ra in it), copied out again into the
 * iterator's code_copy from where the rule keeps it came from.
 */
static const sw_code_info *bt_copy_code(struct swi_iter *it, const struct bt_rule *q)
{
	uintptr_t tag = (uintptr_t)q->code & BT_TAGS;
	const void *from = (const void *)((uintptr_t)q->code - tag);
	uint32_t at = (uint32_t)q->at[0] | (uint32_t)q->at[1] << 8 | (uint32_t)q->at[2] << 16;

	if (tag == BT_TABLE_TAG)
		swi_code_table_info(from, at, &it->code_copy);
	else
		swi_codemap_entry_copy(it->thread->codemap, from, q->ra - at, &it->code_copy);
	return &it->code_copy.info;
}

/*
 * Make the code of the last frame stepped, at last_ip (exact: the seed),
 * the iterator's.  s->code is the iterator's own, or its rule's: a
 * tagged entry or code table; then the method is copied out again from
 * what q, the rule, kept, when q still holds it (filling a slot may have
 * replaced it), and looked up again otherwise.  0 if it is not found
 * (it cannot be: the map's version has not moved since the rule was
 * made).
 */
static int bt_set_code(struct swi_iter *it, const struct bt_state *s, const struct bt_rule *q,
                       uint64_t last_ip, int exact)
{
	const void *code = s->code;
	uintptr_t tag = (uintptr_t)code & BT_TAGS;

	if (!tag) {
		swi_set_code(it, code);
		return 1;
	}
	if (q && q->code == code && q->ra == last_ip) {
		it->code = bt_copy_code(it, q);
		return 1;
	}
	code = exact ? swi_seed_code(it, last_ip) : swi_return_code(it, last_ip);
	swi_set_code(it, code);
	return code != NULL;
}

/*
 * Give the iterator the state the generic steps would have left after
 * reporting the k frames the loop stepped: the last of them current, its
 * caller (s) about to be stepped.  The current frame's registers and trust
 * are not written: the next step replaces them with the caller's before
 * anything reads them.
 */
static void bt_commit(struct swi_iter *it, const struct bt_state *s, size_t k, uint64_t last_ip,
                      int exact)
{
	const struct swi_arch *a = it->arch;
	sw_regdisplay *rd = &it->rd;

	if (SWI_UNLIKELY(!bt_set_code(it, s, s->rule, last_ip, exact))) {
		/* Cannot happen; end the walk rather than step unknown code. */
		it->depth += (uint32_t)k;
		it->step = SWI_STEP_DONE;
		return;
	}
	rd->caller.arch = rd->cur.arch;
	rd->caller.reserved = 0;
	rd->caller.valid = (1ULL << a->ip_reg) | (1ULL << a->sp_reg) | (s->fp_valid ? 1ULL << a->fp_reg : 0);
	rd->caller.regs[a->ip_reg] = s->ip;
	rd->caller.regs[a->sp_reg] = s->sp;
	rd->caller.regs[a->fp_reg] = s->fp;
	rd->caller_loc[a->ip_reg] = rd->caller_loc[a->sp_reg] = rd->caller_loc[a->fp_reg] = 0;
	rd->caller_valid = 1;
	it->caller_trust = swi_code_trust(it->code);
	it->active = it->caller_active = 0;
	it->is_first = it->is_interrupted = it->has_faulted = 0;
	if (!(it->code->flags & SW_CODE_NATIVE))
		it->report_funclet = 0;
	it->depth += (uint32_t)k;
	it->steps += 3 * (uint32_t)k;
	it->step = SWI_STEP_AFTER_MANAGED;
}

/* The direct window of the thread's memory, when the loop may read through it. */
static int bt_window_of(const sw_memory *m, unsigned p, struct bt_window *w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (m->direct_host && m->direct_hi > m->direct_lo && m->direct_hi - m->direct_lo >= p) {
		w->lo = m->direct_lo;
		w->end = m->direct_hi;
		w->bias = (uintptr_t)m->direct_host - (uintptr_t)m->direct_lo;
		return 1;
	}
#endif
	w->lo = w->end = 0;
	w->bias = 0;
	return 0;
}

static size_t bt_run(struct swi_iter *it, struct bt_cache *cache, struct bt_state *s, uint64_t *ips,
                     uint64_t *sps, size_t n, size_t max, const struct bt_rule *seed);

/*
 * The walk's first step, for a seed whose rule the table has (or gets):
 * what the iterator's start, unwind and report would do for it; then the
 * loop goes on from the seed's caller, and the iterator is handed the
 * state once, when the loop stops (bt_run).  Returns the new count; the
 * iterator is left as it was when the step does not apply.
 */
static size_t bt_seed(struct swi_iter *it, struct bt_cache *cache, uint64_t *ips, uint64_t *sps,
                      size_t n, size_t max)
{
	const struct swi_arch *a = it->arch;
	const sw_context *cur = &it->rd.cur;
	const sw_memory *m = it->thread->memory;
	uint64_t ip = cur->regs[a->ip_reg], sp = cur->regs[a->sp_reg];
	uint64_t fp_bit = 1ULL << a->fp_reg, limit = UINT64_MAX;
	unsigned slot = bt_slot(ip) & (BT_SEEDS - 1);
	struct bt_rule *q = &cache->seed[slot];
	struct bt_state s;
	uint64_t base, cfa;

	if (it->step != SWI_STEP_START || !it->have_start || ip == 0)
		return n;
	if (!((cache->seed_valid >> slot) & 1) || q->ra != ip) {
		struct bt_rule fresh;

		if (!bt_fill_seed(it, cache, ip, &fresh))
			return n;
		*q = fresh;
		cache->seed_valid |= 1ULL << slot;
	}
	/* The iterator reports a native seed's marker first: it counts in the depth. */
	if ((q->bits & BT_NATIVE) && (it->flags & SW_WALK_NOTIFY_ON_INITIAL_NATIVE_CONTEXT))
		return n;
	if (it->frame)
		limit = it->frame;
	if (it->tracker && it->tracker < limit)
		limit = it->tracker;
	if (q->bits & BT_CFA_IS_FP) {
		if (!(cur->valid & fp_bit))
			return n;
		base = cur->regs[a->fp_reg];
	} else {
		base = sp;
	}
	cfa = base + (uint64_t)(int64_t)q->cfa_offset;
	if (cfa <= sp || cfa > it->thread->stack_hi || cfa > limit)
		return n;
	if (!bt_read_slow(m, a->ptr_size, base + (uint64_t)(int64_t)q->ra_offset, &s.ip))
		return n;
	if (q->bits & BT_RA_SIGNED)
		s.ip &= ~it->thread->ptrauth_mask;
	s.fp_valid = (cur->valid & fp_bit) != 0;
	s.fp = cur->regs[a->fp_reg];
	if (q->fp_offset != BT_NO_FP) {
		if (!bt_read_slow(m, a->ptr_size, base + (uint64_t)(int64_t)q->fp_offset, &s.fp))
			return n;
		s.fp_valid = 1;
	}
	s.sp = cfa;
	s.code = q->code;
	s.native = (q->bits & BT_NATIVE) != 0;
	s.rule = q;
	ips[n] = ip;
	if (sps)
		sps[n] = sp;
	if (n + 1 < max)
		return bt_run(it, cache, &s, ips, sps, n + 1, max, q);
	bt_commit(it, &s, 1, ip, 1);
	return n + 1;
}

/*
 * Step on in the loop from s, the frame the iterator would step next, while
 * that is allowed, and give the iterator the state it would have reached.
 * seed: the seed's rule when the iterator has not been handed the seed's
 * own step yet (bt_seed: ips[n - 1] is the seed), NULL otherwise; then the
 * hand-back counts the seed too, and is the seed's own when the loop took
 * no frame.  Returns the new count.
 */
static size_t bt_run(struct swi_iter *it, struct bt_cache *cache, struct bt_state *s, uint64_t *ips,
                     uint64_t *sps, size_t n, size_t max, const struct bt_rule *seed)
{
	const struct swi_arch *a = it->arch;
	size_t pending = seed != NULL;
	/* The steps the generic path would have counted, the seed's three included. */
	uint32_t steps = it->steps + 3 * (uint32_t)pending;
	struct bt_window w;
	uint64_t hi;
	size_t got = n;
	int ends = 0, direct;

	/* The generic path takes three loop steps per frame: keep its bound. */
	if (steps >= SWI_MAX_STEPS)
		goto hand_back;
	if (max - n > (SWI_MAX_STEPS - steps) / 3)
		max = n + (SWI_MAX_STEPS - steps) / 3;
	/* A Frame or tracker inside the next frame takes the generic path: the CFA stays below it. */
	hi = it->thread->stack_hi;
	if (it->frame && it->frame < hi)
		hi = it->frame;
	if (it->tracker && it->tracker < hi)
		hi = it->tracker;
	/*
	 * Direct, the loop reads without checks: its stack, from SP to the
	 * highest CFA it accepts, must lie in the window.  A CFA beyond the
	 * window is the generic path's, which reads through the accessor.
	 * An unknown FP (rare: QUICKUNWIND keeps it) takes the checked loop.
	 */
	direct = bt_window_of(it->thread->memory, a->ptr_size, &w) && s->fp_valid && s->sp >= w.lo;
	if (direct && w.end < hi)
		hi = w.end;
	/* Then no CFA the loop computes from a base in [SP, hi] wraps. */
	if (s->sp > hi || hi > UINT64_MAX / 2)
		direct = 0;
	/*
	 * One inlined copy of the loop for each pointer size, way of reading
	 * and use of sps; and, direct, for a window at its own address (bias
	 * 0: the process's own memory, a profiler's), which frees a register.
	 */
#define BT_LOOP(p, direct, with_sps, bias) \
	bt_loop(it, cache, s, p, direct, with_sps, bias, hi, ips, sps, n, max, &ends)
	if (!direct)
		got = a->ptr_size == 8 ? BT_LOOP(8, 0, sps != NULL, 0) : BT_LOOP(4, 0, sps != NULL, 0);
	else if (a->ptr_size == 8)
		got = w.bias == 0 ? (sps ? BT_LOOP(8, 1, 1, 0) : BT_LOOP(8, 1, 0, 0))
		                  : (sps ? BT_LOOP(8, 1, 1, w.bias) : BT_LOOP(8, 1, 0, w.bias));
	else
		got = w.bias == 0 ? (sps ? BT_LOOP(4, 1, 1, 0) : BT_LOOP(4, 1, 0, 0))
		                  : (sps ? BT_LOOP(4, 1, 1, w.bias) : BT_LOOP(4, 1, 0, w.bias));
#undef BT_LOOP
hand_back:
	/* A walk that ends here needs no state to go on from, only its count. */
	if (ends) {
		it->depth += (uint32_t)(got - n + pending);
		it->step = SWI_STEP_DONE;
	} else if (got != n) {
		bt_commit(it, s, got - n + pending, ips[got - 1], 0);
	} else if (seed) {
		/* The loop took nothing: the seed's own step, as bt_seed made it. */
		s->code = seed->code;
		s->native = (seed->bits & BT_NATIVE) != 0;
		s->rule = seed;
		bt_commit(it, s, 1, ips[n - 1], 1);
	}
	return got;
}

/* Can the loop take the walk from the iterator at all? */
static int bt_may_take(const struct swi_iter *it)
{
	return !it->native_dead_end && !it->skip_to_parent && !it->funclet_parent &&
	       it->code && it->code != &it->fp.info;
}

/* The loop's state for the frame in ctx (QUICKUNWIND: IP, SP, FP); 0 without an IP and SP. */
static int bt_state_of(const struct swi_iter *it, const sw_context *ctx, struct bt_state *s)
{
	const struct swi_arch *a = it->arch;
	uint64_t need = (1ULL << a->ip_reg) | (1ULL << a->sp_reg);

	if ((ctx->valid & need) != need)
		return 0;
	s->ip = ctx->regs[a->ip_reg];
	s->sp = ctx->regs[a->sp_reg];
	s->fp_valid = (ctx->valid & (1ULL << a->fp_reg)) != 0;
	s->fp = s->fp_valid ? ctx->regs[a->fp_reg] : 0;
	s->rule = NULL;
	return 1;
}

/*
 * After the iterator reported a frame with code: step on in the loop from
 * its rd.caller while that is allowed.  Returns the new count.
 */
static size_t bt_fast(struct swi_iter *it, struct bt_cache *cache, uint64_t *ips, uint64_t *sps,
                      size_t n, size_t max)
{
	struct bt_state s;

	if (it->step != SWI_STEP_AFTER_MANAGED || !it->rd.caller_valid || it->caller_active ||
	    !bt_may_take(it) || !bt_state_of(it, &it->rd.caller, &s))
		return n;
	s.code = it->code;
	s.native = (it->code->flags & SW_CODE_NATIVE) != 0;
	return bt_run(it, cache, &s, ips, sps, n, max, NULL);
}

/*
 * After the iterator reported a Frame: let it resume from the Frame, and
 * when that leaves a managed frame at a return address to unwind, take
 * that frame in the loop too, instead of the iterator's generic unwind
 * and report.  Its frame before is the Frame: as for any frame after one,
 * no unmanaged-to-managed marker comes between (native_before).  Returns
 * the new count; an error stays in the iterator for swi_iter_next.
 */
static size_t bt_after_frame(struct swi_iter *it, struct bt_cache *cache, uint64_t *ips, uint64_t *sps,
                             size_t n, size_t max)
{
	const struct bt_rule *q;
	const sw_code_info *known = NULL;
	struct bt_state s;
	uint64_t ra;
	int have_ra = swi_iter_frame_return_address(it, &ra) == SW_OK;

	/*
	 * A rule the table holds for the return address says which code a
	 * lookup would find there (the map's version has not moved since it
	 * was made): its copy spares the iterator the lookup.  Not for a
	 * Frame that resumes at an exact IP, which the iterator looks up as
	 * such.
	 */
	if (have_ra && !(it->view.attributes & (SW_FRAME_ATTR_RESUMABLE | SW_FRAME_ATTR_EXCEPTION)) &&
	    (q = bt_rule_held(cache, ra)) != NULL)
		known = bt_copy_code(it, q);
	if (swi_iter_resume_from_frame(it, have_ra, ra, known) != 1 || it->active || !bt_may_take(it) ||
	    !bt_state_of(it, &it->rd.cur, &s))
		return n;
	s.code = it->code;
	s.native = 1;
	return bt_run(it, cache, &s, ips, sps, n, max, NULL);
}

SW_API int sw_backtrace(const sw_thread *t, const sw_context *start, uint64_t start_frame,
                        unsigned flags, uint64_t *ips, uint64_t *sps, size_t max,
                        sw_backtrace_cache *pub_cache, sw_walk_error *err)
{
	sw_iter pub;
	struct swi_iter *it;
	struct bt_cache local, *cache = &local;
	uint64_t version, additions;
	size_t n = 0;
	sw_status st;
	int r = 0;

	if (err)
		memset(err, 0, sizeof *err);
	if (!ips && max)
		return SW_E_INVAL;
	if (pub_cache) {
		cache = cache_of(pub_cache);
		if (cache->magic != BT_MAGIC)
			return SW_E_INVAL;
	}
	if (max > INT_MAX)
		max = INT_MAX;
	st = sw_iter_init(&pub, t, start, start_frame, flags | SW_WALK_QUICKUNWIND);
	if (st != SW_OK)
		return st;
	it = (struct swi_iter *)(void *)&pub;
	it->quiet = 1;
	/* Inside the read section: an unchanged version keeps every entry the table holds. */
	version = swi_codemap_version(t->codemap);
	if (cache == &local || cache->self != cache || cache->map != t->codemap ||
	    cache->version != version || cache->flags != (flags & BT_RULE_FLAGS))
		bt_reset(cache, t->codemap, version, flags);
	additions = swi_codemap_additions(t->codemap);
	if (cache->additions != additions) {
		bt_forget_unknown(cache);
		cache->additions = additions;
	}
	if (max > 0 && start)
		n = bt_seed(it, cache, ips, sps, n, max);
	while (n < max && (r = swi_iter_next(it)) > 0) {
		sw_frame_state state = it->cf.state;

		if (state != SW_STATE_FRAMELESS && state != SW_STATE_NATIVE_FRAME) {
			if (state == SW_STATE_FRAME)
				n = bt_after_frame(it, cache, ips, sps, n, max);
			continue;
		}
		ips[n] = it->rd.cur.regs[it->arch->ip_reg];
		if (sps)
			sps[n] = it->rd.cur.regs[it->arch->sp_reg];
		n++;
		if (n < max)
			n = bt_fast(it, cache, ips, sps, n, max);
	}
	if (r < 0 && err)
		sw_iter_error(&pub, err);
	sw_iter_end(&pub);
	return (int)n;
}
