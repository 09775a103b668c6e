/*
 * toyjit_demo.c - the project's demo: run the toy JIT, walk the stack from
 * inside it, print the frames and check them against the shadow stack.
 * See toyjit-demo(1).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "toyjit.h"
#include "toyjit_check.h"

static __thread sw_frame *frame_head;   /* this thread's Frame list */

struct demo {
	sw_thread thread;
	sw_memory memory;
	unsigned flags;
	toyjit_walk *walk;
	sw_status check;
	unsigned managed;
	char msg[512];
};

static void print_frame(const toyjit *jit, const toyjit_walked *f, size_t k)
{
	const toyjit_method *m = f->method ? toyjit_method_of(jit, f->method) : NULL;
	const char *name = m ? m->name : f->method ? "(unknown)" : "";
	char where[64] = "";

	switch (f->state) {
	case SW_STATE_FRAME:
	case SW_STATE_SKIPPED_FRAME:
		snprintf(where, sizeof(where), "%s @%#llx",
		         f->frame_type == SW_FRAME_TRANSITION ? "TransitionFrame" :
		         f->frame_type == SW_FRAME_INLINED_CALL ? "InlinedCallFrame" : "Frame",
		         (unsigned long long)f->frame);
		printf("%3zu  %-14s %-22s %s\n", k, toyjit_state_name(f->state), name, where);
		return;
	case SW_STATE_NATIVE_MARKER:
		printf("%3zu  %-14s %-22s ip %#llx  sp %#llx  (%s)\n", k, toyjit_state_name(f->state),
		       "[native]", (unsigned long long)f->ip, (unsigned long long)f->sp,
		       toyjit_is_native(jit, f->ip) ? "the C caller's entry thunk" : "unmanaged code");
		return;
	default:
		printf("%3zu  %-14s %-22s ip %#llx  sp %#llx  +%#x\n", k, toyjit_state_name(f->state),
		       name, (unsigned long long)f->ip, (unsigned long long)f->sp, f->offset);
		return;
	}
}

/* The stub calls this with its TransitionFrame linked: walk, print, check. */
static void demo_helper(toyjit *jit, sw_transition_frame *tf)
{
	struct demo *d = jit->user;

	(void)tf;
	toyjit_walk_record(&d->thread, d->flags, d->walk);
	printf("  #  state          method                 where\n");
	for (size_t k = 0; k < d->walk->n && k < TOYJIT_WALK_MAX; k++)
		print_frame(jit, &d->walk->frames[k], k);
	if (d->walk->result != SW_CONTINUE)
		printf("walk stopped: %s at depth %u\n", sw_strerror(d->walk->err.status), d->walk->err.depth);
	d->check = toyjit_walk_check(jit, d->walk, d->msg, sizeof(d->msg), &d->managed);
}

static void usage(FILE *out)
{
	fprintf(out,
	        "usage: toyjit-demo [-d DEPTH] [-p FRAME | -P] [-q] [-f] [-v]\n"
	        "  -d DEPTH  managed frames on the stack (default 12)\n"
	        "  -p FRAME  frame that makes the P/Invoke, 0 = outermost (default 4,\n"
	        "            or DEPTH - 2 on shallower stacks)\n"
	        "  -P        no P/Invoke\n"
	        "  -q        walk with SW_WALK_QUICKUNWIND\n"
	        "  -f        walk with SW_WALK_FUNCTIONSONLY\n"
	        "  -v        also dump each method's SWU metadata\n");
}

int main(int argc, char **argv)
{
	static const toyjit_shape shapes[] = {
		TOYJIT_RBP_FRAME, TOYJIT_NO_FP, TOYJIT_BIG_FRAME, TOYJIT_MOV_SAVES, TOYJIT_OFFSET_FP
	};
	unsigned nshapes = sizeof(shapes) / sizeof(shapes[0]);
	int depth = 12, pinvoke_at = 4, pinvoke_given = 0, verbose = 0, opt;
	struct demo d;
	sw_codemap *map = NULL;
	toyjit *jit = NULL;
	sw_status st;

	memset(&d, 0, sizeof(d));
	d.flags = SW_WALK_NOTIFY_ON_U2M_TRANSITIONS;
	d.check = SW_E_STATE;
	snprintf(d.msg, sizeof(d.msg), "the stub never called the helper");
	while ((opt = getopt(argc, argv, "d:p:Pqfvh")) != -1) {
		switch (opt) {
		case 'd': depth = atoi(optarg); break;
		case 'p': pinvoke_at = atoi(optarg); pinvoke_given = 1; break;
		case 'P': pinvoke_at = -1; pinvoke_given = 1; break;
		case 'q': d.flags |= SW_WALK_QUICKUNWIND; break;
		case 'f': d.flags |= SW_WALK_FUNCTIONSONLY; break;
		case 'v': verbose = 1; break;
		case 'h': usage(stdout); return 0;
		default: usage(stderr); return 2;
		}
	}
	/* The default P/Invoke moves inward on shallow stacks, and goes on the shallowest. */
	if (!pinvoke_given && pinvoke_at >= depth - 1)
		pinvoke_at = depth - 2;
	if (depth < 1 || depth > TOYJIT_MAX_DEPTH || pinvoke_at >= depth - 1) {
		fprintf(stderr, "toyjit-demo: need 1 <= DEPTH <= %d and FRAME < DEPTH - 1\n", TOYJIT_MAX_DEPTH);
		return 2;
	}

	d.walk = malloc(sizeof(*d.walk));
	if (!d.walk || (st = sw_codemap_create(&map)) != SW_OK ||
	    (st = toyjit_create(&jit, map, &frame_head, shapes, nshapes, demo_helper, &d)) != SW_OK ||
	    (st = sw_thread_init_self(&d.thread, map, &d.memory, &frame_head)) != SW_OK) {
		fprintf(stderr, "toyjit-demo: setup failed: %s\n", d.walk ? sw_strerror(st) : "out of memory");
		return 1;
	}

	printf("toyjit-demo: %u methods at %#llx, %d managed frames, ", nshapes,
	       (unsigned long long)jit->methods[0].start, depth);
	if (pinvoke_at >= 0)
		printf("P/Invoke at frame %d\n", pinvoke_at);
	else
		printf("no P/Invoke\n");
	for (unsigned k = 0; k < nshapes; k++) {
		const toyjit_method *m = &jit->methods[k];

		printf("  %-14s %#llx..%#llx  prolog %u bytes, SWU %zu bytes\n", m->name,
		       (unsigned long long)m->start, (unsigned long long)(m->start + m->size),
		       m->prolog_size, m->swu_size);
		if (verbose)
			sw_swu_dump(stdout, m->swu, m->swu_size);
	}
	printf("walk from the stub's TransitionFrame, flags %#x:\n", d.flags);
	fflush(stdout);

	st = toyjit_run(jit, (unsigned)depth, pinvoke_at);
	if (st != SW_OK) {
		printf("toyjit-demo: the run left the shadow stack unbalanced\n");
		d.check = st;
	}
	if (d.check == SW_OK)
		printf("shadow stack check: OK (%u managed frames)\n", d.managed);
	else
		printf("shadow stack check: MISMATCH: %s\n", d.msg);

	toyjit_destroy(jit);
	sw_codemap_destroy(map);
	free(d.walk);
	return d.check == SW_OK ? 0 : 1;
}
