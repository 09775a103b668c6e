/* code_buf.c - the toy JIT's code buffer (see code_buf.h). */
#include <string.h>
#include "code_buf.h"

void code_buf_init(code_buf *b, void *mem, size_t cap)
{
	b->code = mem;
	b->len = 0;
	b->cap = cap;
	b->overflow = 0;
	b->starts = NULL;
}

void code_insn(code_buf *b)
{
	if (b->starts && b->len < b->cap)
		b->starts[b->len / 8] |= (uint8_t)(1u << (b->len % 8));
}

int code_is_insn_start(const code_buf *b, size_t offset)
{
	return b->starts && offset < b->len && (b->starts[offset / 8] >> (offset % 8) & 1);
}

void code_put(code_buf *b, const void *bytes, size_t n)
{
	if (b->overflow || b->cap - b->len < n) {
		b->overflow = 1;
		return;
	}
	memcpy(b->code + b->len, bytes, n);
	b->len += n;
}

void code_put8(code_buf *b, uint8_t v)
{
	code_put(b, &v, 1);
}

void code_put16(code_buf *b, uint16_t v)
{
	uint8_t le[2] = { (uint8_t)v, (uint8_t)(v >> 8) };

	code_put(b, le, 2);
}

void code_put32(code_buf *b, uint32_t v)
{
	uint8_t le[4] = { (uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24) };

	code_put(b, le, 4);
}

void code_put64(code_buf *b, uint64_t v)
{
	code_put32(b, (uint32_t)v);
	code_put32(b, (uint32_t)(v >> 32));
}

void code_patch32(code_buf *b, size_t offset, uint32_t v)
{
	uint8_t *p;

	if (b->overflow || offset + 4 > b->len)
		return;
	p = b->code + offset;
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
	p[2] = (uint8_t)(v >> 16);
	p[3] = (uint8_t)(v >> 24);
}

uint32_t code_get32(const code_buf *b, size_t offset)
{
	const uint8_t *p = b->code + offset;

	if (offset + 4 > b->len)
		return 0;
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
