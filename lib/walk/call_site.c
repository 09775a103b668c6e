/*
 * call_site.c - the call before a return address, and jump stubs, decoded
 * from the few instruction forms that matter (call_site.h).
 */
#include "util.h"
#include "call_site.h"

#define X86_CALL_REL32   0xe8
#define X86_CALL_LEN     5
#define ARM64_INSN_LEN   4

static uint64_t arm64_bl_target(uint64_t at, uint32_t insn)
{
	/* bl: 100101 imm26, the offset in instructions, signed. */
	int64_t words = (int64_t)((uint64_t)(insn & 0x03ffffffu) << 38) >> 38;

	if ((insn & 0xfc000000u) != 0x94000000u)
		return 0;
	return at + (uint64_t)(words * ARM64_INSN_LEN);
}

uint64_t swi_direct_call_target(const sw_thread *t, uint64_t ra)
{
	unsigned char b[X86_CALL_LEN];

	switch ((sw_arch)t->arch) {
	case SW_ARCH_X64:
	case SW_ARCH_X86:
		if (ra < X86_CALL_LEN || swi_read(t->memory, ra - X86_CALL_LEN, b, sizeof b) != SW_OK ||
		    b[0] != X86_CALL_REL32)
			return 0;
		/* rel32 is from the end of the call; i386 addresses wrap at 4 GiB. */
		ra += (uint64_t)(int64_t)(int32_t)(uint32_t)swi_load_le(b + 1, 4);
		return t->arch == SW_ARCH_X86 ? ra & 0xffffffffu : ra;
	case SW_ARCH_ARM64:
		if (ra < ARM64_INSN_LEN || swi_read(t->memory, ra - ARM64_INSN_LEN, b, ARM64_INSN_LEN) != SW_OK)
			return 0;
		return arm64_bl_target(ra - ARM64_INSN_LEN, (uint32_t)swi_load_le(b, 4));
	default:
		return 0;
	}
}

/*
 * x86's call r/m (ff /2) that ends at `end`: its length follows from the
 * ModRM byte (and SIB): a register, or memory with a displacement of 0, 1
 * or 4 bytes.  A prefix (REX, segment) before the ff does not change it.
 */
static bool x86_indirect_call_before(const unsigned char *end)
{
	for (unsigned len = 2; len <= 7; len++) {
		const unsigned char *op = end - len;
		unsigned modrm = op[1], mod = modrm >> 6, rm = modrm & 7, n = 2;

		if (op[0] != 0xff || ((modrm >> 3) & 7) != 2)
			continue;
		if (mod != 3 && rm == 4 && ++n > len)
			continue;       /* its SIB byte would lie past the return address */
		if (mod == 1)
			n += 1;
		else if (mod == 2 || (mod == 0 && rm == 5) ||
		         (mod == 0 && rm == 4 && (op[2] & 7) == 5))
			n += 4;
		if (n == len)
			return true;
	}
	return false;
}

static bool arm64_call(uint32_t insn)
{
	return (insn & 0xfc000000u) == 0x94000000u ||   /* bl */
	       (insn & 0xfffffc1fu) == 0xd63f0000u ||   /* blr */
	       (insn & 0xfefff800u) == 0xd63f0800u;     /* blraa, blrab, blraaz, blrabz */
}

enum swi_call_before swi_follows_call(const sw_thread *t, uint64_t ra)
{
	unsigned char b[8];
	bool call;

	switch ((sw_arch)t->arch) {
	case SW_ARCH_X64:
	case SW_ARCH_X86:
		if (ra < sizeof b || swi_read(t->memory, ra - sizeof b, b, sizeof b) != SW_OK)
			return SWI_CALL_UNREADABLE;
		call = b[sizeof b - X86_CALL_LEN] == X86_CALL_REL32 || x86_indirect_call_before(b + sizeof b);
		break;
	case SW_ARCH_ARM64:
		if (ra < ARM64_INSN_LEN || swi_read(t->memory, ra - ARM64_INSN_LEN, b, ARM64_INSN_LEN) != SW_OK)
			return SWI_CALL_UNREADABLE;
		call = arm64_call((uint32_t)swi_load_le(b, 4));
		break;
	default:
		return SWI_CALL_UNREADABLE;
	}
	return call ? SWI_CALL_FOUND : SWI_CALL_NONE;
}

/* x86: endbr64/endbr32 (f3 0f 1e fa/fb), then a bnd prefix (f2), then jmp r/m (ff /4). */
static bool x86_jump_stub(const unsigned char *p)
{
	if (p[0] == 0xf3 && p[1] == 0x0f && p[2] == 0x1e && (p[3] == 0xfa || p[3] == 0xfb))
		p += 4;
	if (p[0] == 0xf2)
		p++;
	return p[0] == 0xff && ((p[1] >> 3) & 7) == 4;
}

/*
 * arm64: bti (hint #32..#38 even), then adrp x16 or x17, the PLT's way to
 * reach its GOT slot, or an indirect br.
 */
static bool arm64_jump_stub(const unsigned char *p)
{
	uint32_t insn = (uint32_t)swi_load_le(p, 4);

	if ((insn & 0xffffff3fu) == 0xd503241fu)
		insn = (uint32_t)swi_load_le(p + 4, 4);
	if ((insn & 0x9f00001eu) == 0x90000010u)        /* adrp x16/x17 */
		return true;
	return (insn & 0xfffffc1fu) == 0xd61f0000u;     /* br xN */
}

bool swi_is_jump_stub(const sw_thread *t, uint64_t addr)
{
	unsigned char b[8];

	if (swi_read(t->memory, addr, b, sizeof b) != SW_OK)
		return false;
	switch ((sw_arch)t->arch) {
	case SW_ARCH_X64:
	case SW_ARCH_X86:
		return x86_jump_stub(b);
	case SW_ARCH_ARM64:
		return arm64_jump_stub(b);
	default:
		return false;
	}
}
