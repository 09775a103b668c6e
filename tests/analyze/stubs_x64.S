/*
 * stubs_x64.S - hand-written x86-64 functions without CFI, whose rules
 * check_analyze compares with the expectations written next to them.
 */
	.text
	.globl	asm_frame
	.type	asm_frame, @function
asm_frame:			/* CFA rsp+8 */
	push	%rbp		/* @0 */
	mov	%rsp, %rbp	/* @1: CFA rsp+16, rbp -16 */
	push	%rbx		/* @4: CFA rbp+16 */
	sub	$24, %rsp	/* @5: rbx -24 */
	call	asm_leaf	/* @9 */
	add	$24, %rsp	/* @14 */
	pop	%rbx		/* @18 */
	pop	%rbp		/* @19: rbx restored */
	ret			/* @20: CFA rsp+8, rbp restored */
	.size	asm_frame, .-asm_frame

	.globl	asm_leaf
	.type	asm_leaf, @function
asm_leaf:
	lea	(%rdi,%rdi), %rax	/* @0: CFA rsp+8 throughout */
	ret				/* @4 */
	.size	asm_leaf, .-asm_leaf

	.globl	asm_nofp
	.type	asm_nofp, @function
asm_nofp:
	push	%rbx		/* @0 */
	push	%r12		/* @1: CFA rsp+16, rbx -16 */
	sub	$8, %rsp	/* @3: CFA rsp+24, r12 -24 */
	test	%rdi, %rdi	/* @7: CFA rsp+32 */
	je	1f		/* @10 */
	call	asm_leaf	/* @12 */
1:	add	$8, %rsp	/* @17: CFA rsp+32 (both paths) */
	pop	%r12		/* @21: CFA rsp+24 */
	pop	%rbx		/* @23: CFA rsp+16, r12 restored */
	ret			/* @24: CFA rsp+8, rbx restored */
	.size	asm_nofp, .-asm_nofp

	.globl	asm_realign
	.type	asm_realign, @function
asm_realign:
	push	%rbp		/* @0 */
	mov	%rsp, %rbp	/* @1 */
	and	$-32, %rsp	/* @4: CFA rbp+16 (SP unknown from here) */
	sub	$64, %rsp	/* @8 */
	call	asm_leaf	/* @12 */
	leave			/* @17: CFA rbp+16 */
	ret			/* @18: CFA rsp+8 */
	.size	asm_realign, .-asm_realign

	.globl	asm_lost
	.type	asm_lost, @function
asm_lost:
	sub	%rdi, %rsp	/* @0: CFA rsp+8 */
	call	asm_leaf	/* @3: SP unknown, no frame register: left out */
	ret			/* @8 */
	.size	asm_lost, .-asm_lost
	.section .note.GNU-stack,"",@progbits
