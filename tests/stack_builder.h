/*
 * stack_builder.h - hand-built x64 stacks in a buffer, for tests that need
 * a precise picture (the synthetic generator covers the random ones).
 */
#ifndef SW_TESTS_STACK_BUILDER_H
#define SW_TESTS_STACK_BUILDER_H

#include <stackwalk.h>

#define SB_STACK_SIZE 0x10000u
#define SB_STACK_BASE 0x7fff00000000ull     /* lowest address of the buffer */
#define SB_STACK_HI   (SB_STACK_BASE + SB_STACK_SIZE)
#define SB_HEAD_SLOT  (SB_STACK_HI - 8)     /* the Frame list head, at the very top */
#define SB_NATIVE_IP  0x00007f0000dead00ull /* unmanaged code, never registered */

typedef struct sb_world {
	unsigned char *buf;
	sw_memory mem;
	sw_codemap *map;
	sw_thread thread;
	sw_context seed;
} sb_world;

/* A method shape: the two used by the hand-built tests (see stack_builder.c). */
typedef struct sb_method {
	uint64_t start;
	uint32_t size;
	uint32_t body;      /* an offset inside the body */
} sb_method;

void sb_init(sb_world *w);
void sb_fini(sb_world *w);
void sb_put(sb_world *w, uint64_t addr, uint64_t value);
uint64_t sb_get(sb_world *w, uint64_t addr);

/*
 * "A": push rbp; mov rbp,rsp; push rbx; sub rsp,72 | body | lea rsp,[rbp-8];
 * pop rbx; pop rbp; ret.  At a body IP: CFA = rbp + 16, rbp saved at
 * CFA-16, rbx at CFA-24, SP = CFA - 96.
 */
sb_method sb_add_method_a(sb_world *w, uint64_t start, void *handle);
/*
 * "B": push r12; push rbx; sub rsp,16 | body | add rsp,16; pop rbx; pop r12;
 * ret.  At a body IP: CFA = SP + 40, r12 at CFA-16, rbx at CFA-24.
 */
sb_method sb_add_method_b(sb_world *w, uint64_t start, void *handle);

/* The same, with more described (GC information) before the blob is finished. */
typedef void (*sb_extra_fn)(sw_swu_builder *b);
sb_method sb_add_method_a_ex(sb_world *w, uint64_t start, void *handle, sb_extra_fn extra);
sb_method sb_add_method_b_ex(sb_world *w, uint64_t start, void *handle, sb_extra_fn extra);

/* Register the method at `start` again, the same code and blob, with this handle, flags, parent. */
void sb_reregister(sb_world *w, uint64_t start, void *method, uint32_t flags, void *parent);
/* The same, keeping its handle and parent: other SW_CODE_* flags only. */
void sb_reflag(sb_world *w, uint64_t start, uint32_t flags);

/* Write a Frame header at addr and its fields (pointer-sized). */
void sb_frame(sb_world *w, uint64_t addr, uint64_t next, uint32_t type, uint32_t attrs,
              const uint64_t *fields, unsigned nfields);

#endif
