/*
 * swsynth - generate synthetic stacks, print the frames a correct walk
 * reports, walk them and say whether the walk agreed.
 *
 *   swsynth [-a arch] [-s seed] [-f flags] [-n count] [-F features] [-t type] [-m min] [-M max]
 *           [-q] [-d] [-g]
 *
 * Used to reproduce a failing seed from the test suite.  Uses only the
 * public API.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <stackwalk.h>
#include "tool_options.h"

static const char *state_name(uint32_t state)
{
	return sw_frame_state_name((sw_frame_state)state);
}

static const char *frame_type_name(uint32_t type)
{
	const sw_frame_ops *ops = sw_frame_type_ops(type);

	return ops && ops->name ? ops->name : "?";
}

/* The callee-saved registers of arch, in register order; returns how many. */
static unsigned callee_saved(sw_arch arch, unsigned *regs)
{
	static const unsigned x64[] = {
		SW_X64_RBX, SW_X64_RBP, SW_X64_R12, SW_X64_R13, SW_X64_R14, SW_X64_R15
	};
	static const unsigned x86[] = { SW_X86_EBX, SW_X86_EBP, SW_X86_ESI, SW_X86_EDI };
	unsigned n = 0;

	switch (arch) {
	case SW_ARCH_X64:
		memcpy(regs, x64, sizeof x64);
		return 6;
	case SW_ARCH_X86:
		memcpy(regs, x86, sizeof x86);
		return 4;
	case SW_ARCH_ARM64:
		for (unsigned r = SW_ARM64_X19; r <= SW_ARM64_FP; r++)
			regs[n++] = r;
		for (unsigned r = SW_ARM64_D8; r <= SW_ARM64_D15; r++)
			regs[n++] = r;
		return n;
	default:
		return 0;
	}
}

static unsigned ip_reg(sw_arch arch)
{
	return arch == SW_ARCH_X86 ? SW_X86_EIP : arch == SW_ARCH_ARM64 ? SW_ARM64_PC : SW_X64_RIP;
}

static void print_frame(sw_arch arch, size_t i, const sw_synth_frame *f)
{
	unsigned regs[SW_MAX_REGS];
	unsigned nregs = callee_saved(arch, regs);

	printf("#%-3zu %-14s", i, state_name(f->state));
	switch (f->state) {
	case SW_STATE_FRAMELESS:
		printf(" method=%p ip=%#" PRIx64 " sp=%#" PRIx64, f->method, f->ip, f->sp);
		if (f->is_first)
			printf(" first");
		if (f->is_interrupted)
			printf(" interrupted");
		if (f->has_faulted)
			printf(" faulted");
		for (unsigned k = 0; k < nregs; k++) {
			unsigned r = regs[k];
			const char *name = sw_arch_reg_name(arch, r);

			if (!((f->valid >> r) & 1))
				continue;
			if (name)
				printf(" %s=%#" PRIx64, name, f->regs[r]);
			else
				printf(" r%u=%#" PRIx64, r, f->regs[r]);
			if (f->locs[r])
				printf("@%#" PRIx64, f->locs[r]);
		}
		if (f->locs[ip_reg(arch)])
			printf(" ra@%#" PRIx64, f->locs[ip_reg(arch)]);
		if (f->is_funclet)
			printf(f->is_filter_funclet ? " filter-funclet" : " funclet");
		if (f->is_parent_of_funclet)
			printf(" parent-of-funclet");
		if (!f->should_report_gc)
			printf(" no-gc");
		break;
	case SW_STATE_FRAME:
	case SW_STATE_SKIPPED_FRAME:
		printf(" frame=%#" PRIx64 " type=%u (%s) method=%p", f->frame, f->frame_type,
		       frame_type_name(f->frame_type), f->method);
		break;
	case SW_STATE_NO_FRAME_TRANSITION:
		printf(" tracker=%#" PRIx64 " ip=%#" PRIx64 " sp=%#" PRIx64, f->frame, f->ip, f->sp);
		break;
	default:
		printf(" ip=%#" PRIx64 " sp=%#" PRIx64, f->ip, f->sp);
		break;
	}
	putchar('\n');
}

/* The GC roots the walk must report for frame i. */
static void print_roots(const sw_synth *s, unsigned flags, size_t i)
{
	sw_gc_root roots[64];
	size_t n;
	sw_status st = sw_synth_expected_roots(s, flags, i, roots, 64, &n);

	if (st != SW_OK) {
		printf("      roots: %s\n", sw_strerror(st));
		return;
	}
	for (size_t k = 0; k < n && k < 64; k++) {
		printf("      root value=%#" PRIx64, roots[k].value);
		if (roots[k].addr)
			printf(" @%#" PRIx64, roots[k].addr);
		if (roots[k].reg != ~0u)
			printf(" reg=%s", sw_arch_reg_name(sw_synth_thread(s)->arch, roots[k].reg));
		if (roots[k].flags & SW_GC_INTERIOR)
			printf(" interior");
		if (roots[k].flags & SW_GC_PINNED)
			printf(" pinned");
		putchar('\n');
	}
}

static int parse_arch(const char *s, sw_arch *out)
{
	static const sw_arch arches[] = { SW_ARCH_X64, SW_ARCH_X86, SW_ARCH_ARM64 };

	for (unsigned i = 0; i < sizeof arches / sizeof arches[0]; i++) {
		if (strcmp(s, sw_arch_name(arches[i])) == 0) {
			*out = arches[i];
			return 1;
		}
	}
	return 0;
}

/* The SWU of each managed frame's method, once per method. */
static void dump_methods(const sw_synth *s, const sw_synth_frame *f, size_t n)
{
	const sw_thread *t = sw_synth_thread(s);

	for (size_t i = 0; i < n; i++) {
		sw_code_info ci;
		int seen = 0;

		if (f[i].state != SW_STATE_FRAMELESS)
			continue;
		for (size_t j = 0; j < i; j++)
			seen |= f[j].state == SW_STATE_FRAMELESS && f[j].method == f[i].method;
		if (seen || sw_codemap_find(t->codemap, f[i].ip - (f[i].is_first ? 0 : 1), &ci) != SW_OK)
			continue;
		printf("method %p: code [%#" PRIx64 ", %#" PRIx64 ")\n", ci.method, ci.start,
		       ci.start + ci.size);
		sw_swu_dump(stdout, ci.unwind, ci.unwind_size);
	}
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 0);
	return errno == 0 && end != s && *end == '\0';
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: swsynth [-a arch] [-s seed] [-f flags] [-n count] [-F features] [-t type]\n"
	        "               [-m min] [-M max] [-q] [-d] [-g]\n"
	        "  -a arch      x64, x86 or arm64 (default x64)\n"
	        "  -s seed      first seed (default 1)\n"
	        "  -f flags     walk flags, SW_WALK_* values (default 0)\n"
	        "  -n count     how many consecutive seeds (default 1)\n"
	        "  -F features  SW_SYNTH_* features (default 0xfff, all; 0x1000 stale Frames)\n"
	        "  -t type      an SW_FRAME_* type every stack must contain (default 0, none)\n"
	        "  -m min       fewest managed frames (default 1)\n"
	        "  -M max       most managed frames (default 24)\n"
	        "  -q           print only failures and the summary\n"
	        "  -d           also dump the SWU of each method on the stack\n"
	        "  -g           also print and check each frame's GC roots\n");
}

int main(int argc, char **argv)
{
	uint64_t seed = 1, flags = 0, count = 1, v;
	sw_arch arch = SW_ARCH_X64;
	sw_synth_params p;
	int quiet = 0, dump = 0, gc = 0, opt;
	unsigned failures = 0;

	sw_synth_params_default(&p);
	tool_standard_options(argc, argv, "swsynth", usage);
	while ((opt = getopt(argc, argv, "a:s:f:n:F:t:m:M:qdgh")) != -1) {
		switch (opt) {
		case 'a':
			if (!parse_arch(optarg, &arch))
				goto bad;
			break;
		case 's':
			if (!parse_u64(optarg, &seed))
				goto bad;
			break;
		case 'f':
			if (!parse_u64(optarg, &flags) || flags > UINT32_MAX)
				goto bad;
			break;
		case 'n':
			if (!parse_u64(optarg, &count))
				goto bad;
			break;
		case 'F':
			if (!parse_u64(optarg, &v) || v > UINT32_MAX)
				goto bad;
			p.features = (unsigned)v;
			break;
		case 't':
			if (!parse_u64(optarg, &v) || v > UINT32_MAX)
				goto bad;
			p.frame_type = (uint32_t)v;
			break;
		case 'm':
			if (!parse_u64(optarg, &v) || v > UINT32_MAX)
				goto bad;
			p.min_frames = (unsigned)v;
			break;
		case 'M':
			if (!parse_u64(optarg, &v) || v > UINT32_MAX)
				goto bad;
			p.max_frames = (unsigned)v;
			break;
		case 'q':
			quiet = 1;
			break;
		case 'd':
			dump = 1;
			break;
		case 'g':
			gc = 1;
			break;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind != argc)
		goto bad;

	for (uint64_t i = 0; i < count; i++) {
		uint64_t sd = seed + i;
		sw_synth *s;
		sw_synth_frame *f;
		size_t n;
		char msg[512];
		sw_walk_error want;
		sw_status st = sw_synth_create(&s, arch, sd, &p);

		if (st != SW_OK) {
			fprintf(stderr, "swsynth: %s seed %#" PRIx64 ": %s\n", sw_arch_name(arch), sd,
			        sw_strerror(st));
			return 1;
		}
		n = sw_synth_expected(s, (unsigned)flags, NULL, 0);
		f = calloc(n + 1, sizeof *f);
		if (!f) {
			fprintf(stderr, "swsynth: out of memory\n");
			return 1;
		}
		sw_synth_expected(s, (unsigned)flags, f, n);
		st = gc ? sw_synth_check_roots(s, (unsigned)flags, msg, sizeof msg)
		        : sw_synth_check(s, (unsigned)flags, msg, sizeof msg);
		if (!quiet || st != SW_OK) {
			const sw_context *c = sw_synth_context(s);

			printf("%s seed %#" PRIx64 " flags %#" PRIx64 " features %#x: %zu frames"
			       " from ip %#" PRIx64 " sp %#" PRIx64 "\n", sw_arch_name(arch),
			       sd, flags, p.features, n, sw_context_ip(c), sw_context_sp(c));
			for (size_t k = 0; k < n; k++) {
				print_frame(arch, k, &f[k]);
				if (gc)
					print_roots(s, (unsigned)flags, k);
			}
			if (sw_synth_expected_error(s, (unsigned)flags, &want) != SW_OK)
				printf("#%-3zu then the walk fails: %s at frame %#" PRIx64 " (ip %#" PRIx64
				       " sp %#" PRIx64 ")\n", n, sw_strerror(want.status), want.frame,
				       want.ip, want.sp);
			if (dump)
				dump_methods(s, f, n);
			if (st == SW_OK)
				printf("OK\n");
			else
				printf("%s: %s\n", st == SW_E_MISMATCH ? "MISMATCH" : "WALK FAILED", msg);
		}
		failures += st != SW_OK;
		free(f);
		sw_synth_destroy(s);
	}
	if (count > 1)
		printf("%" PRIu64 " stacks, %u failed\n", count, failures);
	return failures ? 1 : 0;

bad:
	usage(stderr);
	return 2;
}
