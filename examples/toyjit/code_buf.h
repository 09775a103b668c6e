/*
 * code_buf.h - the byte buffer every toy-JIT encoder appends to.
 *
 * When the buffer is full an emitter sets `overflow` and stops writing, so
 * callers check once at the end instead of after every instruction.  Each
 * encoder calls code_insn() as it begins an instruction; with a bitmap
 * attached, that records every instruction boundary, which is what the
 * every-offset test plants its breakpoints on.
 */
#ifndef TOYJIT_CODE_BUF_H
#define TOYJIT_CODE_BUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct code_buf {
	uint8_t *code;      /* start of the buffer */
	size_t len;         /* bytes emitted so far: the next instruction's offset */
	size_t cap;
	int overflow;       /* set once an instruction did not fit */
	uint8_t *starts;    /* optional: bit i set when an instruction starts at offset i */
} code_buf;

void code_buf_init(code_buf *b, void *mem, size_t cap);
/* An instruction begins at b->len. */
void code_insn(code_buf *b);
/* 1 if an instruction was recorded as starting at `offset`. */
int code_is_insn_start(const code_buf *b, size_t offset);

void code_put(code_buf *b, const void *bytes, size_t n);
void code_put8(code_buf *b, uint8_t v);
void code_put16(code_buf *b, uint16_t v);
void code_put32(code_buf *b, uint32_t v);
void code_put64(code_buf *b, uint64_t v);
/* Overwrite 4 bytes at `offset` (little-endian); ignored past what was emitted. */
void code_patch32(code_buf *b, size_t offset, uint32_t v);
/* The 4 bytes at `offset`, little-endian (0 past what was emitted). */
uint32_t code_get32(const code_buf *b, size_t offset);

#endif /* TOYJIT_CODE_BUF_H */
