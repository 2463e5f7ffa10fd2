/*
 * it_blocks.S - hand-written Thumb-2 for what the compiler may or may not
 * emit: IT blocks of one to four instructions with then/else mixes, a
 * conditional return as the last instruction of an IT block, and the
 * semihosting trap. Built into cm3demo.elf (see README).
 */
	.syntax unified
	.cpu	cortex-m3
	.thumb
	.text

/* u32 fold_it(u32 x, u32 lo, u32 hi): a deterministic mix of x whose
 * every step is conditional on a flag the previous step set. */
	.global	fold_it
	.type	fold_it, %function
	.thumb_func
fold_it:
	cmp	r0, r1
	it	lo
	movlo	r0, r1			@ one-instruction block
	cmp	r0, r2
	itte	hi
	subhi	r0, r0, r2		@ then, then, else
	addhi	r0, r0, r1
	eorls	r0, r0, #0x5a
	tst	r0, #1
	itete	eq
	addeq	r0, r0, #3		@ four instructions, alternating
	subne	r0, r0, #1
	lsleq	r3, r0, #1
	lsrne	r3, r0, #1
	eor	r0, r0, r3
	tst	r0, #6
	it	eq
	bxeq	lr			@ conditional return ending a block
	add	r0, r0, #7
	bx	lr
	.size	fold_it, . - fold_it

/* u32 semihost(u32 op, const void *arg): ARM semihosting call. On M
 * profile the trap is BKPT 0xAB (qemu -semihosting); r0 is the operation,
 * r1 its argument, r0 the result. */
	.global	semihost
	.type	semihost, %function
	.thumb_func
semihost:
	bkpt	0xab
	bx	lr
	.size	semihost, . - semihost

/* No executable stack wanted (silences the linker). */
	.section .note.GNU-stack,"",%progbits
