@ start.S - entry of the data-trace test programs: a stack, VFP enabled
@ (CPACR, FPEXC), main(), then csd_done, where the emulator stops.
	.syntax unified
	.arch armv7-a
	.fpu vfpv3-d16
	.arm
	.global _start
	.global csd_done
_start:
	ldr	sp, =0x000f0000
	mrc	p15, 0, r0, c1, c0, 2
	orr	r0, r0, #0x00f00000
	mcr	p15, 0, r0, c1, c0, 2
	isb
	mov	r0, #0x40000000
	vmsr	fpexc, r0
	blx	main
csd_done:
	b	csd_done
	.section .note.GNU-stack,"",%progbits
