/*
 * check_body_rule.c - the body rule the code map keeps for each method
 * (swu_body_rule_decode, the walk's fast path for return addresses) must
 * be exactly what the decoder gives at every offset it claims to cover.
 *
 * Blobs: prolog/epilog blobs of several shapes from the builder (x86-64,
 * i386 and arm64, with and without epilogs and frame registers), and the
 * row blobs imported from the CFI of every module loaded in this process
 * (libc among them): thousands of compiled functions.
 */
#define _GNU_SOURCE
#include <link.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "util.h"
#include "swu_format.h"

static unsigned long blobs_checked, offsets_checked, with_rule, with_two;
static int failures;

static void check_rule(const char *what, const uint8_t *blob, size_t size,
                       const struct swu_body_rule *rule, const uint32_t *saved);

/*
 * Both ways to the body rule: the decoder's (swu_body_rule_decode) and
 * the validator's (swu_validate_body_rule, what the code map uses).
 */
static void check_blob(const char *what, const uint8_t *blob, size_t size)
{
	uint32_t saved[SWU_BODY_MAX_SAVED], saved2[SWU_BODY_MAX_SAVED];
	struct swu_body_rule br, br2;

	blobs_checked++;
	if (swu_body_rule_decode(blob, size, &br, saved) != SW_OK ||
	    swu_validate_body_rule(blob, size, &br2, saved2) != SW_OK) {
		printf("FAIL %s: a valid blob was refused\n", what);
		failures++;
		return;
	}
	if (br.lo < br.hi && (br2.lo != br.lo || br2.hi != br.hi || br2.lo2 != br.lo2 ||
	                      br2.hi2 != br.hi2)) {
		printf("FAIL %s: the validator's body rule covers [%u, %u) [%u, %u), the decoder's "
		       "[%u, %u) [%u, %u)\n", what, br2.lo, br2.hi, br2.lo2, br2.hi2,
		       br.lo, br.hi, br.lo2, br.hi2);
		failures++;
	}
	if (br.lo < br.hi)
		with_rule++;
	if (br.lo2 < br.hi2)
		with_two++;
	check_rule(what, blob, size, &br, saved);
	check_rule(what, blob, size, &br2, saved2);
}

static void check_rule(const char *what, const uint8_t *blob, size_t size,
                       const struct swu_body_rule *rule, const uint32_t *saved)
{
	struct swu_body_rule br = *rule;
	sw_swu_header h;

	if (br.lo >= br.hi)
		return;
	if (sw_swu_decode_header(blob, size, &h) != SW_OK || br.hi > h.code_size + 1) {
		printf("FAIL %s: the rule covers [%u, %u), past the code\n", what, br.lo, br.hi);
		failures++;
		return;
	}
	if (br.hi2 > h.code_size + 1 || (br.lo2 < br.hi2 && br.lo2 < br.hi && br.lo < br.hi2)) {
		printf("FAIL %s: the second run [%u, %u) is past the code or overlaps the first\n",
		       what, br.lo2, br.hi2);
		failures++;
		return;
	}
	for (uint32_t k = 0, off; k < (br.hi - br.lo) + (br.hi2 > br.lo2 ? br.hi2 - br.lo2 : 0); k++) {
		off = k < br.hi - br.lo ? br.lo + k : br.lo2 + (k - (br.hi - br.lo));
		sw_swu_rule r;
		int same;

		offsets_checked++;
		if (sw_swu_decode_return_address(blob, size, off, &r) != SW_OK) {
			printf("FAIL %s +%u: the decoder refuses an offset the body rule covers\n", what, off);
			failures++;
			return;
		}
		same = r.arch == br.arch && r.cfa_reg == br.cfa_reg && r.cfa_offset == br.cfa_offset &&
		       !r.cfa_deref && (r.ra_in_reg != 0) == br.ra_in_reg &&
		       (r.ra_in_reg ? r.ra_reg == br.ra_reg : r.ra_offset == br.ra_offset) &&
		       (r.ra_signed != 0) == br.ra_signed && r.saved_mask == br.saved_mask;
		for (unsigned i = 0; same && i < br.nsaved; i++) {
			unsigned reg = swu_body_saved_reg(saved[i]);

			same = (r.saved_mask >> reg & 1) && r.saved_base[reg] == SW_SWU_BASE_CFA &&
			       r.saved_offset[reg] == swu_body_saved_offset(saved[i]);
		}
		if (!same) {
			printf("FAIL %s +%u: the body rule [%u, %u) [%u, %u) differs from the decoder's\n",
			       what, off, br.lo, br.hi, br.lo2, br.hi2);
			failures++;
			return;
		}
	}
}

/* ---- builder blobs ---- */

static void finish(const char *what, sw_swu_builder *b, uint32_t code_size)
{
	uint8_t blob[512];
	size_t len;

	if (sw_swu_finish(b, code_size, blob, sizeof blob, &len) != SW_OK) {
		printf("FAIL %s: the builder refused it\n", what);
		failures++;
	} else {
		check_blob(what, blob, len);
	}
	sw_swu_builder_destroy(b);
}

static int built(sw_status st, const char *what)
{
	if (st != SW_OK) {
		printf("FAIL %s: %s\n", what, sw_strerror(st));
		failures++;
		return 0;
	}
	return 1;
}

static void builder_blobs(void)
{
	sw_swu_builder *b;

	/* x86-64: rbp frame, one epilog at the end. */
	if (sw_swu_builder_create(&b, SW_ARCH_X64) == SW_OK) {
		if (built(sw_swu_push_reg(b, 1, SW_X64_RBP), "x64 rbp") &&
		    built(sw_swu_set_frame(b, 4, SW_X64_RBP, 0), "x64 rbp") &&
		    built(sw_swu_push_reg(b, 5, SW_X64_RBX), "x64 rbp") &&
		    built(sw_swu_alloc_stack(b, 9, 40), "x64 rbp") &&
		    built(sw_swu_end_prolog(b, 9), "x64 rbp") &&
		    built(sw_swu_epilog_begin(b, 90), "x64 rbp") &&
		    built(sw_swu_free_stack(b, 94, 40), "x64 rbp") &&
		    built(sw_swu_pop_reg(b, 95, SW_X64_RBX), "x64 rbp") &&
		    built(sw_swu_pop_reg(b, 96, SW_X64_RBP), "x64 rbp") &&
		    built(sw_swu_epilog_end(b, 97), "x64 rbp"))
			finish("x64 rbp frame", b, 97);
		else
			sw_swu_builder_destroy(b);
	}
	/* x86-64: no frame pointer, two epilogs, the first in the middle. */
	if (sw_swu_builder_create(&b, SW_ARCH_X64) == SW_OK) {
		if (built(sw_swu_push_reg(b, 2, SW_X64_R15), "x64 nofp") &&
		    built(sw_swu_push_reg(b, 3, SW_X64_RBX), "x64 nofp") &&
		    built(sw_swu_alloc_stack(b, 7, 48), "x64 nofp") &&
		    built(sw_swu_end_prolog(b, 7), "x64 nofp") &&
		    built(sw_swu_epilog_begin(b, 40), "x64 nofp") &&
		    built(sw_swu_free_stack(b, 44, 48), "x64 nofp") &&
		    built(sw_swu_pop_reg(b, 45, SW_X64_RBX), "x64 nofp") &&
		    built(sw_swu_pop_reg(b, 47, SW_X64_R15), "x64 nofp") &&
		    built(sw_swu_epilog_end(b, 48), "x64 nofp") &&
		    built(sw_swu_epilog_begin(b, 70), "x64 nofp") &&
		    built(sw_swu_free_stack(b, 74, 48), "x64 nofp") &&
		    built(sw_swu_pop_reg(b, 75, SW_X64_RBX), "x64 nofp") &&
		    built(sw_swu_pop_reg(b, 77, SW_X64_R15), "x64 nofp") &&
		    built(sw_swu_epilog_end(b, 78), "x64 nofp"))
			finish("x64 no frame pointer", b, 78);
		else
			sw_swu_builder_destroy(b);
	}
	/* x86-64: the epilog starts where the prolog ends: no body rule. */
	if (sw_swu_builder_create(&b, SW_ARCH_X64) == SW_OK) {
		if (built(sw_swu_push_reg(b, 1, SW_X64_RBX), "x64 empty body") &&
		    built(sw_swu_end_prolog(b, 1), "x64 empty body") &&
		    built(sw_swu_epilog_begin(b, 1), "x64 empty body") &&
		    built(sw_swu_pop_reg(b, 2, SW_X64_RBX), "x64 empty body") &&
		    built(sw_swu_epilog_end(b, 3), "x64 empty body"))
			finish("x64 empty body", b, 3);
		else
			sw_swu_builder_destroy(b);
	}
	/* i386: ebp frame, body with no epilog (a method that never returns). */
	if (sw_swu_builder_create(&b, SW_ARCH_X86) == SW_OK) {
		if (built(sw_swu_push_reg(b, 1, SW_X86_EBP), "x86 ebp") &&
		    built(sw_swu_set_frame(b, 3, SW_X86_EBP, 0), "x86 ebp") &&
		    built(sw_swu_push_reg(b, 4, SW_X86_EBX), "x86 ebp") &&
		    built(sw_swu_end_prolog(b, 4), "x86 ebp"))
			finish("x86 ebp frame", b, 30);
		else
			sw_swu_builder_destroy(b);
	}
	/* arm64: frame record pair, callee-saved pair, one epilog. */
	if (sw_swu_builder_create(&b, SW_ARCH_ARM64) == SW_OK) {
		if (built(sw_swu_push_reg_pair(b, 4, SW_ARM64_FP, SW_ARM64_LR, 32), "arm64") &&
		    built(sw_swu_set_frame(b, 8, SW_ARM64_FP, 0), "arm64") &&
		    built(sw_swu_save_reg_pair(b, 12, SW_ARM64_X19, SW_ARM64_X20, 16), "arm64") &&
		    built(sw_swu_end_prolog(b, 12), "arm64") &&
		    built(sw_swu_epilog_begin(b, 40), "arm64") &&
		    built(sw_swu_restore_reg_pair(b, 44, SW_ARM64_X19, SW_ARM64_X20), "arm64") &&
		    built(sw_swu_pop_reg_pair(b, 48, SW_ARM64_FP, SW_ARM64_LR, 32), "arm64") &&
		    built(sw_swu_epilog_end(b, 52), "arm64"))
			finish("arm64 frame record", b, 52);
		else
			sw_swu_builder_destroy(b);
	}
}

/* ---- row blobs imported from this process's modules ---- */

static int check_module(struct dl_phdr_info *info, size_t size, void *data)
{
	char exe[4096], what[4300];
	const char *path = info->dlpi_name;
	const sw_native_function *fns;
	size_t n;
	sw_module *m;

	(void)size;
	(void)data;
	if (!path || !*path) {
		ssize_t len = readlink("/proc/self/exe", exe, sizeof exe - 1);

		if (len <= 0)
			return 0;
		exe[len] = 0;
		path = exe;
	}
	if (strstr(path, "linux-vdso") || sw_module_load(path, 0, NULL, &m) != SW_OK)
		return 0;
	if (sw_module_functions(m, &fns, &n) == SW_OK)
		for (size_t i = 0; i < n; i++) {
			snprintf(what, sizeof what, "%s:%s", path, fns[i].name ? fns[i].name : "?");
			check_blob(what, fns[i].unwind, fns[i].unwind_size);
		}
	sw_module_free(m);
	return 0;
}

int main(void)
{
	builder_blobs();
	dl_iterate_phdr(check_module, NULL);
	printf("%lu blobs, %lu with a body rule (%lu of them two runs), %lu offsets compared, "
	       "%d failures\n", blobs_checked, with_rule, with_two, offsets_checked, failures);
	/* A few hundred functions at least: libc alone has thousands. */
	if (with_rule < 100) {
		printf("FAIL: too few body rules to mean anything\n");
		return 1;
	}
	return failures ? 1 : 0;
}
