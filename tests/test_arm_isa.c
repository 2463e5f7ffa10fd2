/* test_arm_isa.c - the A32/T32/ThumbEE instruction classifier.
 *
 * 1. Hand-written tables: one or more encodings of every class and flag,
 *    expected values worked out from the ARM ARM (ARMv7-A/R) encoding
 *    diagrams and pseudocode (branch offsets computed by hand in comments).
 * 2. Capstone 4 as an independent oracle on real code: the Thumb-2 Linux
 *    kernel of the TC2 snapshot, and a small C program cross-compiled
 *    (ARM and Thumb, -O0 and -O2, static with libc) here at test time.
 * 3. Capstone on random encodings: every 16-bit T32 halfword, and millions
 *    of A32 words and 32-bit T32 instructions from fixed seeds.
 * Compared: size, PC write (capstone groups JUMP/CALL/RET, implicit PC
 * write, PC operand written), direct targets, link, condition (T32 inside
 * IT blocks as well). Where capstone is wrong or differs by design, a
 * disagreement is accepted only through cs_exception() below, each rule
 * with its reason; the counts of each are printed. Also checked: what we
 * flag UNDEFINED capstone rejects (UDF aside).
 * Environment: ISA_SHOW_EXC=1 lists the accepted disagreements,
 * ISA_SHOW_UNDEF=1 the UNDEFINED encodings capstone decodes.
 */
#include "arm_isa.h"
#include "check.h"

#include <capstone/capstone.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define F_LINK CSDI_INSNF_LINK
#define F_COND CSDI_INSNF_COND
#define F_ERET CSDI_INSNF_EXC_RETURN
#define F_EXC CSDI_INSNF_EXCEPTION
#define F_DSB CSDI_INSNF_DMB_DSB
#define F_ISB CSDI_INSNF_ISB
#define F_UNDEF CSDI_INSNF_UNDEFINED
#define F_UNP CSDI_INSNF_UNPREDICTABLE
#define F_IT CSDI_INSNF_IT
#define F_TEEH CSDI_INSNF_TEE_HANDLER
#define F_TEEC CSDI_INSNF_TEE_CHECK

enum { N = CSDI_INSN_NORMAL, D = CSDI_INSN_DIRECT, I = CSDI_INSN_INDIRECT };
enum { ARM = CSD_ISA_ARM, THUMB = CSD_ISA_THUMB, TEE = CSD_ISA_THUMBEE };

/* ------------------------------------------------------------------------
 * 1. Hand-written encodings
 * ---------------------------------------------------------------------- */

struct hand {
	int isa;
	uint32_t addr;
	uint32_t op;        /* A32 word; T32 16-bit, or hw1 << 16 | hw2 */
	uint8_t cls;
	uint32_t flags;     /* exact flag set expected */
	uint32_t target;    /* DIRECT / TEE handler offset */
	int target_isa;     /* DIRECT: 0 = same as isa */
	unsigned cond;      /* 14 = AL */
};

#define AL 14
static const struct hand hand[] = {
	/* --- A32 direct branches: target = addr + 8 + SignExtend(imm24:'00') */
	{ ARM, 0x8000, 0xEA000000, D, 0, 0x8008, 0, AL },            /* B +0 */
	{ ARM, 0x8000, 0xEAFFFFFE, D, 0, 0x8000, 0, AL },            /* B . (imm24 = -2) */
	{ ARM, 0x8000, 0xEB000010, D, F_LINK, 0x8048, 0, AL },       /* BL, 0x10 << 2 = 0x40 */
	{ ARM, 0x8000, 0x0A000000, D, F_COND, 0x8008, 0, 0 },        /* BEQ */
	{ ARM, 0x8000, 0x1AFFFFFE, D, F_COND, 0x8000, 0, 1 },        /* BNE . */
	{ ARM, 0x8000, 0xEA800000, D, 0, 0xFE008008, 0, AL },        /* B, imm24 = -2^23 words */
	{ ARM, 0x8000, 0xFA000010, D, F_LINK, 0x8048, THUMB, AL },   /* BLX imm, H = 0 */
	{ ARM, 0x8000, 0xFB000010, D, F_LINK, 0x804A, THUMB, AL },   /* BLX imm, H = 1: +2 */
	/* --- A32 indirect */
	{ ARM, 0x8000, 0xE12FFF1E, I, 0, 0, 0, AL },                 /* BX lr */
	{ ARM, 0x8000, 0x012FFF1E, I, F_COND, 0, 0, 0 },             /* BXEQ lr */
	{ ARM, 0x8000, 0xE12FFF3C, I, F_LINK, 0, 0, AL },            /* BLX ip */
	{ ARM, 0x8000, 0xE12FFF3F, I, F_LINK | F_UNP, 0, 0, AL },    /* BLX pc */
	{ ARM, 0x8000, 0xE12FFF2C, I, 0, 0, 0, AL },                 /* BXJ ip */
	{ ARM, 0x8000, 0xE1A0F00E, I, 0, 0, 0, AL },                 /* MOV pc, lr */
	{ ARM, 0x8000, 0xE3A0F000, I, 0, 0, 0, AL },                 /* MOV pc, #0 */
	{ ARM, 0x8000, 0xE08FF100, I, 0, 0, 0, AL },                 /* ADD pc, pc, r0, LSL #2 */
	{ ARM, 0x8000, 0xE08FF310, I, F_UNP, 0, 0, AL },             /* ADD pc, pc, r0, LSL r3 */
	{ ARM, 0x8000, 0xE1B0F00E, I, F_ERET, 0, 0, AL },            /* MOVS pc, lr */
	{ ARM, 0x8000, 0xE25EF004, I, F_ERET, 0, 0, AL },            /* SUBS pc, lr, #4 */
	{ ARM, 0x8000, 0xE160006E, I, F_ERET, 0, 0, AL },            /* ERET */
	{ ARM, 0x8000, 0xF8BD0A00, I, F_ERET, 0, 0, AL },            /* RFEIA sp! */
	{ ARM, 0x8000, 0xE59FF004, I, 0, 0, 0, AL },                 /* LDR pc, [pc, #4] */
	{ ARM, 0x8000, 0xE49DF004, I, 0, 0, 0, AL },                 /* LDR pc, [sp], #4 (POP) */
	{ ARM, 0x8000, 0xE79FF100, I, 0, 0, 0, AL },                 /* LDR pc, [pc, r0, LSL #2] */
	{ ARM, 0x8000, 0xE5DFF000, I, F_UNP, 0, 0, AL },             /* LDRB pc, [pc] */
	{ ARM, 0x8000, 0xE4BFF004, I, F_UNP, 0, 0, AL },             /* LDRT pc, [pc], #4 */
	{ ARM, 0x8000, 0xE1D0F0B0, I, F_UNP, 0, 0, AL },             /* LDRH pc, [r0] */
	{ ARM, 0x8000, 0xE1C0E0D0, I, F_UNP, 0, 0, AL },             /* LDRD lr, pc, [r0] */
	{ ARM, 0x8000, 0xE8BD8000, I, 0, 0, 0, AL },                 /* LDM sp!, {pc} */
	{ ARM, 0x8000, 0xE8BD8FF0, I, 0, 0, 0, AL },                 /* POP {r4-r11, pc} */
	{ ARM, 0x8000, 0xE8FD8000, I, F_ERET, 0, 0, AL },            /* LDM sp!, {pc}^ */
	{ ARM, 0x8000, 0xE00F0190, I, F_UNP, 0, 0, AL },             /* MUL pc, r0, r1 */
	{ ARM, 0x8000, 0xE300F000, I, F_UNP, 0, 0, AL },             /* MOVW pc, #0 */
	{ ARM, 0x8000, 0xE6EFF070, I, F_UNP, 0, 0, AL },             /* UXTB pc, r0 */
	{ ARM, 0x8000, 0xEC5F0B10, I, F_UNP, 0, 0, AL },             /* VMOV r0, pc, d0 */
	{ ARM, 0x8000, 0xEE10FA10, I, F_UNP, 0, 0, AL },             /* VMOV pc, s0 */
	/* --- A32 not branches */
	{ ARM, 0x8000, 0xE1A00001, N, 0, 0, 0, AL },                 /* MOV r0, r1 */
	{ ARM, 0x8000, 0xC0810002, N, F_COND, 0, 0, 12 },            /* ADDGT r0, r1, r2 */
	{ ARM, 0x8000, 0xE35F0000, N, 0, 0, 0, AL },                 /* CMP pc, #0 */
	{ ARM, 0x8000, 0xE8BD4010, N, 0, 0, 0, AL },                 /* POP {r4, lr} */
	{ ARM, 0x8000, 0xE92D4010, N, 0, 0, 0, AL },                 /* PUSH {r4, lr} */
	{ ARM, 0x8000, 0xE59F0000, N, 0, 0, 0, AL },                 /* LDR r0, [pc] */
	{ ARM, 0x8000, 0xE5BF0004, N, F_UNP, 0, 0, AL },             /* LDR r0, [pc, #4]! */
	{ ARM, 0x8000, 0xE1C020D0, N, 0, 0, 0, AL },                 /* LDRD r2, r3, [r0] */
	{ ARM, 0x8000, 0xE58FF000, N, 0, 0, 0, AL },                 /* STR pc, [pc] */
	{ ARM, 0x8000, 0xEE17FF7E, N, 0, 0, 0, AL },                 /* MRC p15, 0, APSR_nzcv, c7, c14, 3 */
	{ ARM, 0x8000, 0xEEF1FA10, N, 0, 0, 0, AL },                 /* VMRS APSR_nzcv, FPSCR */
	{ ARM, 0x8000, 0xEC510B10, N, 0, 0, 0, AL },                 /* VMOV r0, r1, d0 */
	{ ARM, 0x8000, 0xECBD8B02, N, 0, 0, 0, AL },                 /* VPOP {d8} */
	{ ARM, 0x8000, 0xE320F000, N, 0, 0, 0, AL },                 /* NOP */
	{ ARM, 0x8000, 0xF1010200, N, 0, 0, 0, AL },                 /* SETEND BE */
	{ ARM, 0x8000, 0xF5D0F000, N, 0, 0, 0, AL },                 /* PLD [r0] */
	/* --- A32 barriers, exceptions, undefined */
	{ ARM, 0x8000, 0xF57FF04F, N, F_DSB, 0, 0, AL },             /* DSB SY */
	{ ARM, 0x8000, 0xF57FF05F, N, F_DSB, 0, 0, AL },             /* DMB SY */
	{ ARM, 0x8000, 0xF57FF06F, N, F_ISB, 0, 0, AL },             /* ISB SY */
	{ ARM, 0x8000, 0xEE070F9A, N, F_DSB, 0, 0, AL },             /* MCR p15, 0, r0, c7, c10, 4 */
	{ ARM, 0x8000, 0xEE070FBA, N, F_DSB, 0, 0, AL },             /* MCR p15, 0, r0, c7, c10, 5 */
	{ ARM, 0x8000, 0xEE070F95, N, F_ISB, 0, 0, AL },             /* MCR p15, 0, r0, c7, c5, 4 */
	{ ARM, 0x8000, 0xEF000000, N, F_EXC, 0, 0, AL },             /* SVC #0 */
	{ ARM, 0x8000, 0x1F000000, N, F_EXC | F_COND, 0, 0, 1 },     /* SVCNE #0 */
	{ ARM, 0x8000, 0xE1200070, N, F_EXC, 0, 0, AL },             /* BKPT #0 */
	{ ARM, 0x8000, 0x01200070, N, F_EXC | F_COND | F_UNP, 0, 0, 0 }, /* BKPT with EQ */
	{ ARM, 0x8000, 0xE1600070, N, F_EXC, 0, 0, AL },             /* SMC #0 */
	{ ARM, 0x8000, 0xE1400070, N, F_EXC, 0, 0, AL },             /* HVC #0 */
	{ ARM, 0x8000, 0xE7F000F0, N, F_EXC | F_UNDEF, 0, 0, AL },   /* UDF #0 */
	{ ARM, 0x8000, 0xE6000010, N, F_UNDEF, 0, 0, AL },           /* media op1 = 00000 */
	{ ARM, 0x8000, 0xE0500090, N, F_UNDEF, 0, 0, AL },           /* multiply op 0101 */
	{ ARM, 0x8000, 0xE1000050, N, 0, 0, 0, AL },                 /* QADD r0, r0, r0 (op2 101) */
	{ ARM, 0x8000, 0xE1000040, N, F_UNDEF, 0, 0, AL },           /* misc op2 = 100 */
	{ ARM, 0x8000, 0xFF000000, N, F_UNDEF, 0, 0, AL },           /* cond 1111, 1111 xxxx */

	/* --- T32 16-bit: targets from PC = addr + 4 */
	{ THUMB, 0x10000, 0x4770, I, 0, 0, 0, AL },                  /* BX lr */
	{ THUMB, 0x10000, 0x47F0, I, F_LINK, 0, 0, AL },             /* BLX lr */
	{ THUMB, 0x10000, 0x47F8, I, F_LINK | F_UNP, 0, 0, AL },     /* BLX pc */
	{ THUMB, 0x10000, 0x4778, I, 0, 0, 0, AL },                  /* BX pc (to ARM) */
	{ THUMB, 0x10000, 0x4687, I, 0, 0, 0, AL },                  /* MOV pc, r0 */
	{ THUMB, 0x10000, 0x46F7, I, 0, 0, 0, AL },                  /* MOV pc, lr */
	{ THUMB, 0x10000, 0x4487, I, 0, 0, 0, AL },                  /* ADD pc, r0 */
	{ THUMB, 0x10000, 0x44FF, I, F_UNP, 0, 0, AL },              /* ADD pc, pc */
	{ THUMB, 0x10000, 0xBD00, I, 0, 0, 0, AL },                  /* POP {pc} */
	{ THUMB, 0x10000, 0xBDF0, I, 0, 0, 0, AL },                  /* POP {r4-r7, pc} */
	{ THUMB, 0x10000, 0xBC01, N, 0, 0, 0, AL },                  /* POP {r0} */
	{ THUMB, 0x10000, 0xB110, D, 0, 0x10008, 0, AL },            /* CBZ r0: imm5 = 2 -> +4 */
	{ THUMB, 0x10000, 0xBB18, D, 0, 0x1004A, 0, AL },            /* CBNZ r0: i:imm5 = 1:00011 -> +70 */
	{ THUMB, 0x10000, 0xD0FE, D, F_COND, 0x10000, 0, 0 },        /* BEQ . (imm8 = -2) */
	{ THUMB, 0x10000, 0xD180, D, F_COND, 0xFF04, 0, 1 },         /* BNE, imm8 = -128 -> -256 */
	{ THUMB, 0x10000, 0xDC7F, D, F_COND, 0x10102, 0, 12 },       /* BGT, imm8 = 127 -> +254 */
	{ THUMB, 0x10000, 0xE7FE, D, 0, 0x10000, 0, AL },            /* B . */
	{ THUMB, 0x10000, 0xE400, D, 0, 0xF804, 0, AL },             /* B, imm11 = -1024 -> -2048 */
	{ THUMB, 0x10000, 0xDE00, N, F_EXC | F_UNDEF, 0, 0, AL },    /* UDF #0 */
	{ THUMB, 0x10000, 0xDF00, N, F_EXC, 0, 0, AL },              /* SVC #0 */
	{ THUMB, 0x10000, 0xBE00, N, F_EXC, 0, 0, AL },              /* BKPT #0 */
	{ THUMB, 0x10000, 0xBF08, N, F_IT, 0, 0, AL },               /* IT EQ */
	{ THUMB, 0x10000, 0xBFF8, N, F_IT | F_UNP, 0, 0, AL },       /* IT with firstcond 1111 */
	{ THUMB, 0x10000, 0xBFEC, N, F_IT | F_UNP, 0, 0, AL },       /* ITE AL */
	{ THUMB, 0x10000, 0xBFE4, N, F_IT, 0, 0, AL },               /* ITT AL */
	{ THUMB, 0x10000, 0xBF00, N, 0, 0, 0, AL },                  /* NOP */
	{ THUMB, 0x10000, 0xB650, N, 0, 0, 0, AL },                  /* SETEND LE */
	{ THUMB, 0x10000, 0xB700, N, F_UNDEF, 0, 0, AL },            /* misc 0111xxx */
	{ THUMB, 0x10000, 0xC025, N, 0, 0, 0, AL },                  /* STMIA r0!, {r0, r2, r5} */
	{ THUMB, 0x10000, 0x4800, N, 0, 0, 0, AL },                  /* LDR r0, [pc] */
	/* --- T32 32-bit */
	{ THUMB, 0x10000, 0xF000F800, D, F_LINK, 0x10004, 0, AL },   /* BL +0 (I1 = I2 = 0) */
	{ THUMB, 0x10000, 0xF7FFFFFE, D, F_LINK, 0x10000, 0, AL },   /* BL . (offset -4) */
	{ THUMB, 0x10000, 0xF400D000, D, F_LINK, 0xFF010004, 0, AL },/* BL, S = 1, J1 = J2 = 0 -> -2^24 */
	{ THUMB, 0x10000, 0xF3FFD7FF, D, F_LINK, 0x1010002, 0, AL }, /* BL, S = 0, J1 = J2 = 0 -> 2^24 - 2 */
	{ THUMB, 0x10000, 0xF000E800, D, F_LINK, 0x10004, ARM, AL }, /* BLX imm +0 */
	{ THUMB, 0x10002, 0xF000E800, D, F_LINK, 0x10004, ARM, AL }, /* BLX imm at 2 mod 4: Align(PC, 4) */
	{ THUMB, 0x10000, 0xF000E801, N, F_UNDEF, 0, 0, AL },        /* BLX imm with H = 1 */
	{ THUMB, 0x10000, 0xF7FFBFFE, D, 0, 0x10000, 0, AL },        /* B.W . */
	{ THUMB, 0x10000, 0xF000B800, D, 0, 0x10004, 0, AL },        /* B.W +0 */
	{ THUMB, 0x10000, 0xF43FAFFE, D, F_COND, 0x10000, 0, 0 },    /* BEQ.W . */
	{ THUMB, 0x10000, 0xF0408000, D, F_COND, 0x10004, 0, 1 },    /* BNE.W +0 */
	{ THUMB, 0x10000, 0xF03FAFFF, D, F_COND, 0x110002, 0, 0 },   /* BEQ.W, S = 0, J1 = J2 = 1 -> 2^20 - 2 */
	{ THUMB, 0x10000, 0xE8BD8010, I, 0, 0, 0, AL },              /* POP.W {r4, pc} */
	{ THUMB, 0x10000, 0xE8BDC000, I, F_UNP, 0, 0, AL },          /* POP.W {lr, pc} */
	{ THUMB, 0x10000, 0xE8BD8000, I, F_UNP, 0, 0, AL },          /* LDM.W sp!, {pc}: one register */
	{ THUMB, 0x10000, 0xE8BD4010, N, 0, 0, 0, AL },              /* POP.W {r4, lr} */
	{ THUMB, 0x10000, 0xE92D4010, N, 0, 0, 0, AL },              /* PUSH.W {r4, lr} */
	{ THUMB, 0x10000, 0xF85DFB04, I, 0, 0, 0, AL },              /* LDR pc, [sp], #4 */
	{ THUMB, 0x10000, 0xF8DFF004, I, 0, 0, 0, AL },              /* LDR.W pc, [pc, #4] */
	{ THUMB, 0x10000, 0xF85FF000, I, 0, 0, 0, AL },              /* LDR.W pc, [pc, #-0] */
	{ THUMB, 0x10000, 0xF850F020, I, 0, 0, 0, AL },              /* LDR.W pc, [r0, r0, LSL #2] */
	{ THUMB, 0x10000, 0xF8D0F000, I, 0, 0, 0, AL },              /* LDR.W pc, [r0] */
	{ THUMB, 0x10000, 0xF850FE04, I, F_UNP, 0, 0, AL },          /* LDRT pc, [r0, #4] */
	{ THUMB, 0x10000, 0xF810FF04, I, F_UNP, 0, 0, AL },          /* LDRB pc, [r0, #4]! */
	{ THUMB, 0x10000, 0xF890F000, N, 0, 0, 0, AL },              /* PLD [r0] */
	{ THUMB, 0x10000, 0xF830FC04, N, 0, 0, 0, AL },              /* PLDW [r0, #-4] */
	{ THUMB, 0x10000, 0xF990F000, N, 0, 0, 0, AL },              /* PLI [r0] */
	{ THUMB, 0x10000, 0xE8D0F001, I, 0, 0, 0, AL },              /* TBB [r0, r1] */
	{ THUMB, 0x10000, 0xE8DFF011, I, 0, 0, 0, AL },              /* TBH [pc, r1, LSL #1] */
	{ THUMB, 0x10000, 0xF3DE8F04, I, F_ERET, 0, 0, AL },         /* SUBS pc, lr, #4 */
	{ THUMB, 0x10000, 0xF3DE8F00, I, F_ERET, 0, 0, AL },         /* ERET */
	{ THUMB, 0x10000, 0xE810C000, I, F_ERET, 0, 0, AL },         /* RFEDB r0 */
	{ THUMB, 0x10000, 0xE99DC000, I, F_ERET, 0, 0, AL },         /* RFEIA sp */
	{ THUMB, 0x10000, 0xF3C08F00, I, 0, 0, 0, AL },              /* BXJ r0 */
	{ THUMB, 0x10000, 0xF3CF8F00, I, F_UNP, 0, 0, AL },          /* BXJ pc */
	{ THUMB, 0x10000, 0xEA4F0F00, I, F_UNP, 0, 0, AL },          /* MOV.W pc, r0 */
	{ THUMB, 0x10000, 0xFB00FF01, I, F_UNP, 0, 0, AL },          /* MUL pc, r0, r1 */
	{ THUMB, 0x10000, 0xFBA0F001, I, F_UNP, 0, 0, AL },          /* UMULL pc, r0, r0, r1 */
	{ THUMB, 0x10000, 0xFB90F0F1, N, 0, 0, 0, AL },              /* SDIV r0, r0, r1 (15:12 is SBO) */
	{ THUMB, 0x10000, 0xEBB00F01, N, 0, 0, 0, AL },              /* CMP.W r0, r1 */
	{ THUMB, 0x10000, 0xF0100F01, N, 0, 0, 0, AL },              /* TST.W r0, #1 */
	{ THUMB, 0x10000, 0xF3BF8F4F, N, F_DSB, 0, 0, AL },          /* DSB SY */
	{ THUMB, 0x10000, 0xF3BF8F5F, N, F_DSB, 0, 0, AL },          /* DMB SY */
	{ THUMB, 0x10000, 0xF3BF8F6F, N, F_ISB, 0, 0, AL },          /* ISB SY */
	{ THUMB, 0x10000, 0xEE070F95, N, F_ISB, 0, 0, AL },          /* MCR p15, 0, r0, c7, c5, 4 */
	{ THUMB, 0x10000, 0xF7F0A000, N, F_EXC | F_UNDEF, 0, 0, AL },/* UDF.W #0 */
	{ THUMB, 0x10000, 0xF7F08000, N, F_EXC, 0, 0, AL },          /* SMC #0 */
	{ THUMB, 0x10000, 0xF7E08000, N, F_EXC, 0, 0, AL },          /* HVC #0 */
	{ THUMB, 0x10000, 0xF3BF8F1F, D, 0, 0x10004, TEE, AL },      /* ENTERX */
	{ THUMB, 0x10000, 0xF3BF8F0F, D, 0, 0x10004, THUMB, AL },    /* LEAVEX (no change in Thumb) */
	{ THUMB, 0x10000, 0xEEF1FA10, N, 0, 0, 0, AL },              /* VMRS APSR_nzcv, FPSCR */
	{ THUMB, 0x10000, 0xF3EF8000, N, 0, 0, 0, AL },              /* MRS r0, CPSR */
	{ THUMB, 0x10000, 0xF3EF8F00, I, F_UNP, 0, 0, AL },          /* MRS pc, CPSR */
	/* --- ThumbEE (A9): handler offsets handler << 5 from TEEHBR */
	{ TEE, 0x10000, 0xC025, I, F_TEEH, 0xA0, 0, AL },            /* HBP #1, #5 */
	{ TEE, 0x10000, 0xC212, I, F_TEEH, 0x240, 0, AL },           /* HB #0x12 */
	{ TEE, 0x10000, 0xC312, I, F_TEEH | F_LINK, 0x240, 0, AL },  /* HBL #0x12 */
	{ TEE, 0x10000, 0xC4A5, I, F_TEEH | F_LINK, 0xA0, 0, AL },   /* HBLP #5, #5 */
	{ TEE, 0x10000, 0xC100, N, F_UNDEF, 0, 0, AL },              /* 1100 0001: UNDEFINED */
	{ TEE, 0x10000, 0xCA08, N, F_TEEC, 0, 0, AL },               /* CHKA r0, r1 */
	{ TEE, 0x10000, 0xF000E800, N, F_UNDEF, 0, 0, AL },          /* BLX imm: UNDEFINED in ThumbEE */
	{ TEE, 0x10000, 0xF3BF8F0F, D, 0, 0x10004, THUMB, AL },      /* LEAVEX */
	{ TEE, 0x10000, 0xE7FE, D, 0, 0x10000, 0, AL },              /* B . stays in ThumbEE */
	{ TEE, 0x10000, 0x4770, I, 0, 0, 0, AL },                    /* BX lr */
};

static void put_le(uint8_t *b, uint32_t v, int n)
{
	for (int i = 0; i < n; i++)
		b[i] = (uint8_t)(v >> (8 * i));
}

/* Bytes of an instruction as they sit in memory. */
static size_t encode(int isa, uint32_t op, uint8_t *b)
{
	if (isa == ARM) {
		put_le(b, op, 4);
		return 4;
	}
	if (op <= 0xFFFF) {
		put_le(b, op, 2);
		return 2;
	}
	put_le(b, op >> 16, 2);
	put_le(b + 2, op & 0xFFFF, 2);
	return 4;
}

static void test_hand(void)
{
	for (size_t i = 0; i < sizeof hand / sizeof hand[0]; i++) {
		const struct hand *h = &hand[i];
		uint8_t b[4];
		struct csdi_insn in;
		size_t n = encode(h->isa, h->op, b);
		int r = csdi_isa_decode(h->addr, b, n, h->isa, &in);
		int bad = 0;
		CHECK_EQ(r, (int)n);
		bad |= r != (int)n || in.size != n || in.opcode != h->op || in.isa != h->isa;
		bad |= in.cls != h->cls || in.flags != h->flags || in.cond != h->cond;
		if (h->cls == D || (h->flags & F_TEEH))
			bad |= in.target != h->target;
		if (h->cls == D)
			bad |= in.target_isa != (h->target_isa ? h->target_isa : h->isa);
		check_count++;
		if (bad) {
			check_failures++;
			fprintf(stderr, "hand[%zu] %s %08x: got size %u cls %u flags %#x target %#x isa %u cond %u; "
			        "want cls %u flags %#x target %#x cond %u\n", i, csd_isa_name(h->isa), h->op,
			        in.size, in.cls, in.flags, in.target, in.target_isa, in.cond,
			        h->cls, h->flags, h->target, h->cond);
		}
	}
}

/* Data transfers of hand-picked encodings (fields worked out from the
 * ARM ARM encoding diagrams). */
static void test_mem_hand(void)
{
	static const struct {
		int isa;
		uint32_t op;
		uint8_t dir, count, size, flags;
	} t[] = {
		{ ARM, 0xE5901004, CSDI_MEM_LOAD, 1, 4, 0 },                    /* ldr r1, [r0, #4] */
		{ ARM, 0xE1D010F2, CSDI_MEM_LOAD, 1, 2, CSDI_MEMF_SIGNED },     /* ldrsh r1, [r0, #2] */
		{ ARM, 0xE1C020F0, CSDI_MEM_STORE, 2, 4, 0 },                   /* strd r2, r3, [r0] */
		{ ARM, 0xE92D4030, CSDI_MEM_STORE, 3, 4, 0 },                   /* push {r4, r5, lr} */
		{ ARM, 0xE1002091, CSDI_MEM_SWAP, 2, 4, 0 },                    /* swp r2, r1, [r0] */
		{ ARM, 0xE1C02F91, CSDI_MEM_STORE, 1, 1, CSDI_MEMF_EXCLUSIVE }, /* strexb r2, r1, [r0] */
		{ ARM, 0xED900B00, CSDI_MEM_LOAD, 1, 8, 0 },                    /* vldr d0, [r0] */
		{ ARM, 0xECA00A04, CSDI_MEM_STORE, 4, 4, 0 },                   /* vstmia r0!, {s0-s3} */
		{ ARM, 0xF5D0F000, CSDI_MEM_NONE, 0, 0, 0 },                    /* pld [r0] */
		{ ARM, 0xED900500, CSDI_MEM_LOAD, 16, 4, CSDI_MEMF_COPROC },    /* ldc p5, c0, [r0] */
		{ ARM, 0xFC800501, CSDI_MEM_STORE, 16, 4, CSDI_MEMF_COPROC },   /* stc2 p5, c0, [r0], {1} */
		{ ARM, 0xEC400B10, CSDI_MEM_NONE, 0, 0, 0 },                    /* vmov d0, r0, r0 */
		{ ARM, 0xEC410510, CSDI_MEM_NONE, 0, 0, 0 },                    /* mcrr p5, 1, r0, r1, c0 */
		{ ARM, 0xF423070F, CSDI_MEM_LOAD, 1, 8, 0 },                    /* vld1.8 {d0}, [r3] */
		{ ARM, 0xF42302EF, CSDI_MEM_LOAD, 4, 8, 0 },                    /* vld1.64 {d0-d3}, [r3:128] */
		{ ARM, 0xF423084F, CSDI_MEM_LOAD, 8, 2, 0 },                    /* vld2.16 {d0, d1}, [r3] */
		{ ARM, 0xF423040F, CSDI_MEM_LOAD, 24, 1, 0 },                   /* vld3.8 {d0-d2}, [r3] */
		{ ARM, 0xF4A30B8F, CSDI_MEM_LOAD, 4, 4, 0 },                    /* vld4.32 {d0[1]-d3[1]}, [r3] */
		{ ARM, 0xF4A30CBF, CSDI_MEM_LOAD, 1, 4, 0 },                    /* vld1.32 {d0[], d1[]}, [r3:32] */
		{ ARM, 0xF4A30D0F, CSDI_MEM_LOAD, 2, 1, 0 },                    /* vld2.8 {d0[], d1[]}, [r3] */
		{ ARM, 0xF483064F, CSDI_MEM_STORE, 3, 2, 0 },                   /* vst3.16 {d0[1]-d2[1]}, [r3] */
		{ ARM, 0xF4030A81, CSDI_MEM_STORE, 2, 8, 0 },                   /* vst1.32 {d0, d1}, [r3], r1 */
		{ ARM, 0xE0810002, CSDI_MEM_NONE, 0, 0, 0 },                    /* add r0, r1, r2 */
		{ THUMB, 0xB530, CSDI_MEM_STORE, 3, 4, 0 },                     /* push {r4, r5, lr} */
		{ THUMB, 0xBD30, CSDI_MEM_LOAD, 3, 4, 0 },                      /* pop {r4, r5, pc} */
		{ THUMB, 0x5E08, CSDI_MEM_LOAD, 1, 2, CSDI_MEMF_SIGNED },       /* ldrsh r0, [r1, r0] */
		{ THUMB, 0xE9D02300, CSDI_MEM_LOAD, 2, 4, 0 },                  /* ldrd r2, r3, [r0] */
		{ THUMB, 0xE8D0F000, CSDI_MEM_LOAD, 1, 1, 0 },                  /* tbb [r0, r0] */
		{ THUMB, 0xF810F001, CSDI_MEM_NONE, 0, 0, 0 },                  /* pld [r0, r1] */
		{ THUMB, 0xF923084D, CSDI_MEM_LOAD, 8, 2, 0 },                  /* vld2.16 {d0, d1}, [r3]! */
		{ THUMB, 0xF9830B8F, CSDI_MEM_STORE, 4, 4, 0 },                 /* vst4.32 {d0[1]-d3[1]}, [r3] */
		{ THUMB, 0xED900500, CSDI_MEM_LOAD, 16, 4, CSDI_MEMF_COPROC },  /* ldc p5, c0, [r0] */
	};
	for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
		uint8_t b[4];
		struct csdi_insn in;
		struct csdi_mem m;
		size_t n = encode(t[i].isa, t[i].op, b);
		CHECK_EQ(csdi_isa_decode(0x8000, b, n, t[i].isa, &in), (int)n);
		CHECK_EQ(csdi_isa_mem(&in, &m), t[i].count);
		CHECK_EQ(m.dir, t[i].dir);
		CHECK_EQ(m.count, t[i].count);
		CHECK_EQ(m.size, t[i].size);
		CHECK_EQ(m.flags, t[i].flags);
	}
}

static void test_api(void)
{
	uint8_t b[4] = { 0x00, 0xF0, 0x00, 0xF8 };   /* BL in T32 */
	struct csdi_insn in;

	memset(&in, 0, sizeof in);
	CHECK_EQ(csdi_isa_decode(0, b, 3, ARM, &in), CSD_ENOMAP);
	CHECK_EQ(in.size, 4);
	CHECK_EQ(csdi_isa_decode(0, b, 2, THUMB, &in), CSD_ENOMAP);   /* 32-bit needs 4 */
	CHECK_EQ(in.size, 4);
	CHECK_EQ(csdi_isa_decode(0, b, 1, THUMB, &in), CSD_ENOMAP);
	CHECK_EQ(in.size, 2);
	CHECK_EQ(csdi_isa_decode(0, b, 0, TEE, &in), CSD_ENOMAP);
	CHECK_EQ(csdi_isa_decode(0, b, 4, CSD_ISA_JAZELLE, &in), CSD_EUNSUPPORTED);
	CHECK_EQ(csdi_isa_decode(0, b, 4, CSD_ISA_UNKNOWN, &in), CSD_EINVAL);
	CHECK_EQ(csdi_isa_decode(0, b, 4, 99, &in), CSD_EINVAL);
	CHECK_EQ(csdi_isa_decode(0, NULL, 4, ARM, &in), CSD_EINVAL);
	CHECK_EQ(csdi_isa_decode(0, b, 4, ARM, NULL), CSD_EINVAL);
	b[1] = 0x47;                                  /* 0x4700: BX r0, 16-bit */
	b[0] = 0x00;
	CHECK_EQ(csdi_isa_decode(0, b, 2, THUMB, &in), 2);
	CHECK_EQ(in.cls, I);
	/* size rule: 32-bit iff bits 15:11 are 11101, 11110, 11111 */
	CHECK_EQ(csdi_t32_size(0xE7FF), 2);
	CHECK_EQ(csdi_t32_size(0xE800), 4);
	CHECK_EQ(csdi_t32_size(0xF000), 4);
	CHECK_EQ(csdi_t32_size(0xFFFF), 4);
	CHECK_EQ(csdi_t32_size(0x0000), 2);
	/* wrap-around of targets is modulo 2^32: B . - 8 at 0 */
	CHECK_EQ(csdi_isa_decode(0, (const uint8_t *)"\xFC\xFF\xFF\xEA", 4, ARM, &in), 4);
	CHECK_EQ(in.target, 0xFFFFFFF8u);   /* imm24 = -4 words: 0 + 8 - 16 = -8 */
}

/* ITSTATE sequences worked out from ITAdvance() in the ARM ARM. */
static void test_it(void)
{
	/* ITTET LT = firstcond 1011, mask 1011 (x = T: 1, y = E: 0, z = T: 1,
	 * then the terminating 1): conditions LT LT GE LT. */
	static const unsigned want[] = { 11, 11, 10, 11 };
	uint8_t st = csdi_it_start(0xBFBB);
	struct csdi_insn in;

	CHECK_EQ(st, 0xBB);
	for (int i = 0; i < 4; i++) {
		CHECK(csdi_it_active(st));
		CHECK_EQ(csdi_it_cond(st), want[i]);
		CHECK_EQ(csdi_it_last(st), i == 3);
		st = csdi_it_advance(st);
	}
	CHECK(!csdi_it_active(st));
	CHECK_EQ(st, 0);
	CHECK_EQ(csdi_it_advance(0), 0);

	/* ITE EQ (BF0C): EQ then NE, last */
	st = csdi_it_start(0xBF0C);
	CHECK_EQ(csdi_it_cond(st), 0);
	st = csdi_it_advance(st);
	CHECK_EQ(st, 0x18);
	CHECK_EQ(csdi_it_cond(st), 1);
	CHECK(csdi_it_last(st));

	/* MOV r0, r1 inside an IT NE block: gets NE */
	csdi_isa_decode_t32(0, 0x4608, 0, THUMB, &in);
	csdi_insn_apply_it(&in, 0x18);
	CHECK_EQ(in.cond, 1);
	CHECK_EQ(in.flags, F_COND);
	/* ... with AL from an ITT AL block: no COND */
	csdi_isa_decode_t32(0, 0x4608, 0, THUMB, &in);
	csdi_insn_apply_it(&in, 0xE4);
	CHECK_EQ(in.cond, AL);
	CHECK_EQ(in.flags, 0);
	/* outside a block nothing changes */
	csdi_isa_decode_t32(0, 0xD0FE, 0, THUMB, &in);
	csdi_insn_apply_it(&in, 0);
	CHECK_EQ(in.flags, F_COND);
	CHECK_EQ(in.cond, 0);
	/* B<c> inside a block, BX lr not last, CBZ and IT inside: UNPREDICTABLE */
	csdi_insn_apply_it(&in, 0x18);
	CHECK(in.flags & F_UNP);
	csdi_isa_decode_t32(0, 0x4770, 0, THUMB, &in);
	csdi_insn_apply_it(&in, 0x0C);               /* first of ITE */
	CHECK(in.flags & F_UNP);
	csdi_isa_decode_t32(0, 0x4770, 0, THUMB, &in);
	csdi_insn_apply_it(&in, 0x18);               /* last: fine, conditional NE */
	CHECK_EQ(in.flags, F_COND);
	CHECK_EQ(in.cls, I);
	csdi_isa_decode_t32(0, 0xB110, 0, THUMB, &in);
	csdi_insn_apply_it(&in, 0x18);
	CHECK(in.flags & F_UNP);
	csdi_isa_decode_t32(0, 0xBF08, 0, THUMB, &in);
	csdi_insn_apply_it(&in, 0x18);
	CHECK(in.flags & F_UNP);
	/* BKPT is unconditional inside IT blocks too */
	csdi_isa_decode_t32(0, 0xBE01, 0, THUMB, &in);
	csdi_insn_apply_it(&in, 0x18);
	CHECK_EQ(in.cond, AL);
	CHECK_EQ(in.flags, F_EXC);
	/* A32 is never touched */
	csdi_isa_decode_a32(0, 0xE1A00001, &in);
	csdi_insn_apply_it(&in, 0x18);
	CHECK_EQ(in.cond, AL);
	CHECK_EQ(in.flags, 0);
}

/* ------------------------------------------------------------------------
 * 2./3. Capstone oracle
 * ---------------------------------------------------------------------- */

struct theirs {
	int size;
	int writes_pc;
	int direct;          /* PC-relative branch with a known target */
	uint32_t target;
	int link;
	unsigned cond;       /* 0-15, 14 = AL */
	unsigned id;
};

static void cs_facts(const cs_insn *ci, struct theirs *t)
{
	const cs_detail *d = ci->detail;
	const cs_arm *a = &d->arm;

	memset(t, 0, sizeof *t);
	t->size = ci->size;
	t->id = ci->id;
	for (int g = 0; g < d->groups_count; g++) {
		if (d->groups[g] == CS_GRP_JUMP || d->groups[g] == CS_GRP_CALL ||
		    d->groups[g] == CS_GRP_RET)
			t->writes_pc = 1;
		if (d->groups[g] == CS_GRP_BRANCH_RELATIVE)
			t->direct = 1;
	}
	for (int r = 0; r < d->regs_write_count; r++)
		if (d->regs_write[r] == ARM_REG_PC)
			t->writes_pc = 1;
	for (int o = 0; o < a->op_count; o++) {
		const cs_arm_op *op = &a->operands[o];
		if (op->type == ARM_OP_REG && op->reg == ARM_REG_PC && (op->access & CS_AC_WRITE))
			t->writes_pc = 1;
		if (op->type == ARM_OP_IMM && t->direct)
			t->target = (uint32_t)op->imm;
	}
	t->link = ci->id == ARM_INS_BL || ci->id == ARM_INS_BLX;
	t->cond = a->cc == ARM_CC_INVALID ? CSDI_COND_AL : (unsigned)a->cc - 1;
}

/* Accepted disagreements: each rule matches the encodings it is about
 * exactly, and says why capstone and we differ there. */
enum { R_RFE, R_IT_CC, R_WB_PC, R_MRRC, R_HVC_COND, R_BANKED, R_IT_UNPRED, R_NREASONS };
static const char *const reason_text[R_NREASONS] = {
	[R_RFE] = "RFE loads PC and CPSR; capstone 4 reports no PC write for it",
	[R_IT_CC] = "IT is unconditional; capstone gives it its firstcond as condition",
	[R_WB_PC] = "LDM/STM/VLDM/VSTM writeback to base PC: UNPREDICTABLE, flagged only; capstone marks the PC written",
	[R_MRRC] = "MRRC/MRRC2 to PC (UNPREDICTABLE): capstone 4 gives MRRC destinations read access",
	[R_HVC_COND] = "HVC with cond != AL is UNPREDICTABLE; capstone ignores the cond field",
	[R_BANKED] = "MRS/MSR (banked register): capstone 4 decodes the wrong condition",
	[R_IT_UNPRED] = "after an UNPREDICTABLE IT (nested, firstcond 1111, AL with else) the conditions are not defined",
};
static unsigned long reason_count[R_NREASONS];

enum { FLD_SIZE, FLD_PC, FLD_DIRECT, FLD_TARGET, FLD_LINK, FLD_COND };
static const char *const field_name[] = { "size", "pc-write", "direct", "target", "link", "cond" };

/* it_taint: the instruction follows an UNPREDICTABLE IT closely enough
 * for either IT block to cover it. */
static int cs_exception(const struct csdi_insn *in, int field, int it_taint)
{
	uint32_t w = in->opcode;
	int a32 = in->isa == ARM;

	/* RFE: A32 1111 100x x0x1; T32 1110 100x x0x1 with op (hw1 8:7) 00 or 11 */
	if (field == FLD_PC && in->cls == I && (in->flags & F_ERET) &&
	    (a32 ? (w & 0xFE500000u) == 0xF8100000u
	         : in->size == 4 && (w & 0xFE500000u) == 0xE8100000u &&
	           ((w >> 23) & 3) != 1 && ((w >> 23) & 3) != 2))
		return R_RFE;
	if (field == FLD_COND && (in->flags & F_IT))
		return R_IT_CC;
	/* block transfers (bits 27:25 = 100) and coprocessor loads/stores
	 * (110) with W = 1 and Rn = PC; T32 hw1 1110 100x / 1110 110x lines up */
	if (field == FLD_PC && in->cls == N && (in->flags & F_UNP) && in->size == 4 &&
	    ((w >> 25) & 5) == 4 && (w & 0x00200000u) && ((w >> 16) & 15) == 15)
		return R_WB_PC;
	if (field == FLD_PC && in->cls == I && (in->flags & F_UNP) && in->size == 4 &&
	    (w & 0x0FF00000u) == 0x0C500000u)
		return R_MRRC;
	if (field == FLD_COND && a32 && (w & 0x0FF000F0u) == 0x01400070u && in->cond != AL)
		return R_HVC_COND;
	if (field == FLD_COND && a32 && (w & 0x0F9002F0u) == 0x01000200u)
		return R_BANKED;
	if (field == FLD_COND && it_taint)
		return R_IT_UNPRED;
	return -1;
}

struct tally {
	unsigned long compared, agreed, excepted, failed, cs_invalid, ours_undef_cs_valid;
	unsigned long by_field[6];
};

static int shown;

/* --- data transfers (csdi_isa_mem) against capstone's mnemonic and
 * operands: direction, transfer count, size, sign extension, exclusive. */

struct mem_tally {
	unsigned long compared, agreed, transfers, skipped, failed, vfp_unpred, neon_unpred;
	unsigned long neon_agreed, coproc_agreed;
};

/* A VLDM/VSTM (A32 or T32, same bit positions) whose register list is
 * UNPREDICTABLE, or an FLDMX/FSTMX (odd doubleword count). */
static int vfp_list_unpredictable(uint32_t w)
{
	unsigned p = (w >> 24) & 1, u = (w >> 23) & 1, wb = (w >> 21) & 1, dbl = (w >> 8) & 1;
	if ((w & 0x0E000E00u) != 0x0C000A00u || (!p && !u) || (p && !wb))
		return 0;
	unsigned imm8 = w & 0xFFu, vd = (w >> 12) & 0xFu, dbit = (w >> 22) & 1;
	unsigned d = dbl ? dbit << 4 | vd : vd << 1 | dbit, regs = dbl ? imm8 / 2 : imm8;
	return (dbl && (imm8 & 1)) || regs == 0 || d + regs > 32 || (dbl && regs > 16);
}
static struct mem_tally mem_all;
static int mem_shown;

/* NEON VLDn / VSTn from capstone's mnemonic ("vld3"), element size
 * (vector_size, bits), D registers and their text: "d0[]" all lanes, "d0[1]"
 * one lane, else whole registers. One transfer per element; VLD1 / VST1 of
 * whole registers one doubleword per register. */
static void cs_neon(const cs_insn *ci, unsigned dregs, struct csdi_mem *m)
{
	/* A list past D31 (UNPREDICTABLE) shows other registers' names, or
	 * wraps round to D0. */
	const cs_arm *a = &ci->detail->arm;
	int prev = -1;
	for (int o = 0; o < a->op_count && a->operands[o].type != ARM_OP_MEM; o++) {
		const int r = a->operands[o].type == ARM_OP_REG ? (int)a->operands[o].reg : -1;
		if (r < ARM_REG_D0 || r > ARM_REG_D31 || r <= prev) {
			m->flags = 0xFF;
			return;
		}
		prev = r;
	}
	const unsigned n = (unsigned)(ci->mnemonic[3] - '0'), esize = (unsigned)ci->detail->arm.vector_size / 8;
	const char *list_end = strchr(ci->op_str, '}');
	const char *br = strchr(ci->op_str, '[');
	const int lanes = br && list_end && br < list_end;
	m->dir = ci->mnemonic[1] == 'l' ? CSDI_MEM_LOAD : CSDI_MEM_STORE;
	if (lanes) {
		m->count = (uint8_t)n;
		m->size = (uint8_t)esize;
	} else if (n == 1) {
		m->count = (uint8_t)dregs;
		m->size = 8;
	} else {
		m->count = (uint8_t)(esize ? dregs * 8 / esize : 0);
		m->size = (uint8_t)esize;
	}
}

/* Capstone's view; returns 0 for instructions it is not compared on: the
 * ARMv8 acquire/release forms (UNDEFINED in ARMv7). LDC / STC have no
 * transfer count in the encoding: direction, word size and the flag are
 * compared, the count is csdec's bound. */
static int cs_mem(const cs_insn *ci, struct csdi_mem *m)
{
	const cs_arm *a = &ci->detail->arm;
	unsigned id = ci->id, regs = 0, dregs = 0;
	memset(m, 0, sizeof *m);
	for (int o = 0; o < a->op_count; o++)
		if (a->operands[o].type == ARM_OP_REG) {
			regs++;
			if (a->operands[o].reg >= ARM_REG_D0 && a->operands[o].reg <= ARM_REG_D31)
				dregs++;
		}
#define SET(d, n, s, f) (m->dir = (d), m->count = (uint8_t)(n), m->size = (s), m->flags = (f))
	switch (id) {
	case ARM_INS_LDC: case ARM_INS_LDCL: case ARM_INS_LDC2: case ARM_INS_LDC2L:
		SET(CSDI_MEM_LOAD, 16, 4, CSDI_MEMF_COPROC); break;
	case ARM_INS_STC: case ARM_INS_STCL: case ARM_INS_STC2: case ARM_INS_STC2L:
		SET(CSDI_MEM_STORE, 16, 4, CSDI_MEMF_COPROC); break;
	case ARM_INS_VLD1: case ARM_INS_VLD2: case ARM_INS_VLD3: case ARM_INS_VLD4:
	case ARM_INS_VST1: case ARM_INS_VST2: case ARM_INS_VST3: case ARM_INS_VST4:
		cs_neon(ci, dregs, m);
		break;
	case ARM_INS_LDA: case ARM_INS_LDAB: case ARM_INS_LDAH: case ARM_INS_LDAEX: case ARM_INS_LDAEXB:
	case ARM_INS_LDAEXH: case ARM_INS_LDAEXD: case ARM_INS_STL: case ARM_INS_STLB: case ARM_INS_STLH:
	case ARM_INS_STLEX: case ARM_INS_STLEXB: case ARM_INS_STLEXH: case ARM_INS_STLEXD:
		return 0;
	case ARM_INS_LDR: case ARM_INS_LDRT: SET(CSDI_MEM_LOAD, 1, 4, 0); break;
	case ARM_INS_LDRB: case ARM_INS_LDRBT: SET(CSDI_MEM_LOAD, 1, 1, 0); break;
	case ARM_INS_LDRH: case ARM_INS_LDRHT: SET(CSDI_MEM_LOAD, 1, 2, 0); break;
	case ARM_INS_LDRSB: case ARM_INS_LDRSBT: SET(CSDI_MEM_LOAD, 1, 1, CSDI_MEMF_SIGNED); break;
	case ARM_INS_LDRSH: case ARM_INS_LDRSHT: SET(CSDI_MEM_LOAD, 1, 2, CSDI_MEMF_SIGNED); break;
	case ARM_INS_LDRD: SET(CSDI_MEM_LOAD, 2, 4, 0); break;
	case ARM_INS_LDREX: SET(CSDI_MEM_LOAD, 1, 4, CSDI_MEMF_EXCLUSIVE); break;
	case ARM_INS_LDREXB: SET(CSDI_MEM_LOAD, 1, 1, CSDI_MEMF_EXCLUSIVE); break;
	case ARM_INS_LDREXH: SET(CSDI_MEM_LOAD, 1, 2, CSDI_MEMF_EXCLUSIVE); break;
	case ARM_INS_LDREXD: SET(CSDI_MEM_LOAD, 2, 4, CSDI_MEMF_EXCLUSIVE); break;
	case ARM_INS_STR: case ARM_INS_STRT: SET(CSDI_MEM_STORE, 1, 4, 0); break;
	case ARM_INS_STRB: case ARM_INS_STRBT: SET(CSDI_MEM_STORE, 1, 1, 0); break;
	case ARM_INS_STRH: case ARM_INS_STRHT: SET(CSDI_MEM_STORE, 1, 2, 0); break;
	case ARM_INS_STRD: SET(CSDI_MEM_STORE, 2, 4, 0); break;
	/* STREX Rd, Rt, [Rn]: capstone lists the status register first */
	case ARM_INS_STREX: SET(CSDI_MEM_STORE, 1, 4, CSDI_MEMF_EXCLUSIVE); break;
	case ARM_INS_STREXB: SET(CSDI_MEM_STORE, 1, 1, CSDI_MEMF_EXCLUSIVE); break;
	case ARM_INS_STREXH: SET(CSDI_MEM_STORE, 1, 2, CSDI_MEMF_EXCLUSIVE); break;
	case ARM_INS_STREXD: SET(CSDI_MEM_STORE, 2, 4, CSDI_MEMF_EXCLUSIVE); break;
	case ARM_INS_SWP: SET(CSDI_MEM_SWAP, 2, 4, 0); break;
	case ARM_INS_SWPB: SET(CSDI_MEM_SWAP, 2, 1, 0); break;
	case ARM_INS_TBB: SET(CSDI_MEM_LOAD, 1, 1, 0); break;
	case ARM_INS_TBH: SET(CSDI_MEM_LOAD, 1, 2, 0); break;
	case ARM_INS_RFEDA: case ARM_INS_RFEDB: case ARM_INS_RFEIA: case ARM_INS_RFEIB:
		SET(CSDI_MEM_LOAD, 2, 4, 0); break;
	case ARM_INS_SRSDA: case ARM_INS_SRSDB: case ARM_INS_SRSIA: case ARM_INS_SRSIB:
		SET(CSDI_MEM_STORE, 2, 4, 0); break;
	/* register lists: the base register is the first operand */
	case ARM_INS_LDM: case ARM_INS_LDMDA: case ARM_INS_LDMDB: case ARM_INS_LDMIB:
		SET(CSDI_MEM_LOAD, regs - 1, 4, 0); break;
	case ARM_INS_STM: case ARM_INS_STMDA: case ARM_INS_STMDB: case ARM_INS_STMIB:
		SET(CSDI_MEM_STORE, regs - 1, 4, 0); break;
	case ARM_INS_POP: SET(CSDI_MEM_LOAD, regs, 4, 0); break;
	case ARM_INS_PUSH: SET(CSDI_MEM_STORE, regs, 4, 0); break;
	case ARM_INS_VLDR: SET(CSDI_MEM_LOAD, 1, dregs ? 8 : 4, 0); break;
	case ARM_INS_VSTR: SET(CSDI_MEM_STORE, 1, dregs ? 8 : 4, 0); break;
	case ARM_INS_VLDMIA: case ARM_INS_VLDMDB: SET(CSDI_MEM_LOAD, regs - 1, dregs ? 8 : 4, 0); break;
	case ARM_INS_VSTMIA: case ARM_INS_VSTMDB: SET(CSDI_MEM_STORE, regs - 1, dregs ? 8 : 4, 0); break;
	case ARM_INS_VPOP: SET(CSDI_MEM_LOAD, regs, dregs ? 8 : 4, 0); break;
	case ARM_INS_VPUSH: SET(CSDI_MEM_STORE, regs, dregs ? 8 : 4, 0); break;
	default: break;   /* no data transfer (PLD, PLI and PLDW included) */
	}
#undef SET
	return 1;
}

static void mem_compare(const struct csdi_insn *in, const cs_insn *ci, const char *where)
{
	struct csdi_mem ours, th;
	/* UNDEFINED / UNPREDICTABLE encodings transfer nothing certain. */
	if ((in->flags & (F_UNDEF | F_UNP)) || !cs_mem(ci, &th)) {
		mem_all.skipped++;
		return;
	}
	csdi_isa_mem(in, &ours);
	mem_all.compared++;
	if (ours.dir == th.dir && ours.count == th.count && ours.size == th.size && ours.flags == th.flags) {
		mem_all.agreed++;
		mem_all.transfers += ours.count;
		mem_all.coproc_agreed += (ours.flags & CSDI_MEMF_COPROC) != 0;
		mem_all.neon_agreed += ci->id == ARM_INS_VLD1 || ci->id == ARM_INS_VLD2 || ci->id == ARM_INS_VLD3 ||
				       ci->id == ARM_INS_VLD4 || ci->id == ARM_INS_VST1 || ci->id == ARM_INS_VST2 ||
				       ci->id == ARM_INS_VST3 || ci->id == ARM_INS_VST4;
		return;
	}
	if (ours.count == 0 && th.flags == 0xFF) {
		/* NEON list past D31: UNPREDICTABLE (ARM ARM, VLDn / VSTn),
		 * capstone names other registers. */
		mem_all.neon_unpred++;
		return;
	}
	if (ours.count == 0 && vfp_list_unpredictable(in->opcode) &&
	    (th.count != 0 || ci->id == ARM_INS_VPOP || ci->id == ARM_INS_VPUSH)) {
		/* ARM ARM A8.8.332: regs == 0, regs > 16 doublewords or
		 * d + regs > 32 is UNPREDICTABLE; capstone shows a list cut
		 * at the last register. */
		mem_all.vfp_unpred++;
		return;
	}
	mem_all.failed++;
	if (mem_shown++ < 40)
		fprintf(stderr, "%s: mem %#llx %s %0*x \"%s %s\": ours dir %u count %u size %u flags %u;"
		        " capstone dir %u count %u size %u flags %u\n",
		        where, (unsigned long long)ci->address, csd_isa_name(in->isa), in->size * 2, in->opcode,
		        ci->mnemonic, ci->op_str, ours.dir, ours.count, ours.size, ours.flags, th.dir, th.count,
		        th.size, th.flags);
}

/* Compare one instruction; return 1 if it agreed (or was excepted). */
static int compare(struct tally *ty, const struct csdi_insn *in, const cs_insn *ci, const char *where,
                   int it_taint)
{
	struct theirs th;
	int field = -1;

	cs_facts(ci, &th);
	mem_compare(in, ci, where);
	ty->compared++;
	if ((in->flags & F_UNDEF) && ci->id != ARM_INS_UDF && ci->id != ARM_INS_TRAP) {
		ty->ours_undef_cs_valid++;
		if (getenv("ISA_SHOW_UNDEF"))
			fprintf(stderr, "UNDEF %s %0*x %s %s\n", where, in->size * 2, in->opcode, ci->mnemonic, ci->op_str);
	}
	if (th.size != in->size)
		field = FLD_SIZE;
	else if (th.writes_pc != (in->cls != N))
		field = FLD_PC;
	else if (th.direct != (in->cls == D))
		field = FLD_DIRECT;
	else if (th.direct && th.target != in->target)
		field = FLD_TARGET;
	else if (th.link != !!(in->flags & F_LINK))
		field = FLD_LINK;
	else if (th.cond != in->cond)
		field = FLD_COND;
	if (field < 0) {
		ty->agreed++;
		return 1;
	}
	int r = cs_exception(in, field, it_taint);
	if (r >= 0) {
		if (getenv("ISA_SHOW_EXC"))
			fprintf(stderr, "EXC %d %s %s %s\n", r, where, ci->mnemonic, ci->op_str);
		reason_count[r]++;
		ty->excepted++;
		return 1;
	}
	ty->failed++;
	ty->by_field[field]++;
	if (shown++ < 60)
		fprintf(stderr, "%s: %#llx %s %0*x \"%s %s\": %s differs: ours cls %u flags %#x target %#x cond %u;"
		        " capstone pc %d direct %d target %#x link %d cond %u\n",
		        where, (unsigned long long)ci->address, csd_isa_name(in->isa), in->size * 2, in->opcode, ci->mnemonic, ci->op_str,
		        field_name[field], in->cls, in->flags, in->target, in->cond,
		        th.writes_pc, th.direct, th.target, th.link, th.cond);
	return 0;
}

static void report(const char *what, const struct tally *ty)
{
	printf("  %-34s %9lu compared, %9lu agree, %7lu excepted, %lu differ (capstone invalid %lu;"
	       " ours UNDEFINED but capstone valid, not UDF: %lu)\n", what, ty->compared, ty->agreed,
	       ty->excepted, ty->failed, ty->cs_invalid, ty->ours_undef_cs_valid);
	/* what we call UNDEFINED, capstone must reject (UDF aside) */
	CHECK_EQ(ty->ours_undef_cs_valid, 0);
	if (ty->failed)
		printf("    differing: size %lu, pc-write %lu, direct %lu, target %lu, link %lu, cond %lu\n",
		       ty->by_field[0], ty->by_field[1], ty->by_field[2], ty->by_field[3],
		       ty->by_field[4], ty->by_field[5]);
}

static csh cs_a32, cs_thumb;

/* Walk `len` bytes at `addr` linearly in one instruction set, comparing
 * every instruction capstone decodes; on a capstone failure skip one
 * halfword (T32) or word (A32) and restart the IT state. */
static void walk(struct tally *ty, const uint8_t *code, size_t len, uint32_t addr, int isa,
                 const char *where)
{
	csh h = isa == ARM ? cs_a32 : cs_thumb;
	cs_insn *ci = cs_malloc(h);
	size_t off = 0;
	uint8_t it = 0;
	int taint = 0;

	while (off + (isa == ARM ? 4 : 2) <= len) {
		const uint8_t *p = code + off;
		size_t left = len - off;
		uint64_t a = addr + off;
		struct csdi_insn in;
		int n = csdi_isa_decode((uint32_t)(addr + off), code + off, len - off, isa, &in);

		if (n < 0)
			break;    /* a 32-bit T32 instruction cut by the end */
		if (!cs_disasm_iter(h, &p, &left, &a, ci)) {
			ty->cs_invalid++;
			off += isa == ARM ? 4 : 2;
			it = 0;
			taint = 0;
			/* capstone keeps its IT state across calls: clear it
			 * by decoding a NOP outside this range */
			if (isa != ARM) {
				const uint8_t *np = (const uint8_t *)"\x00\xbf";
				size_t nl = 2;
				uint64_t na = 0;
				for (int k = 0; k < 4; k++) {
					np = (const uint8_t *)"\x00\xbf";
					nl = 2;
					cs_disasm_iter(h, &np, &nl, &na, ci);
				}
			}
			continue;
		}
		if (taint)
			taint--;
		if (isa != ARM) {
			csdi_insn_apply_it(&in, it);
			it = (in.flags & F_IT) ? csdi_it_start(in.opcode) : csdi_it_advance(it);
			if ((in.flags & F_IT) && (in.flags & F_UNP))
				taint = 5;   /* this IT and up to 4 after it */
		}
		compare(ty, &in, ci, where, taint);
		off += (size_t)n;
	}
	cs_free(ci, 1);
}

static uint8_t *read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf = NULL;
	long sz;

	if (!f)
		return NULL;
	if (fseek(f, 0, SEEK_END) == 0 && (sz = ftell(f)) > 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)sz);
		if (buf && fread(buf, 1, (size_t)sz, f) != (size_t)sz) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)sz;
	}
	fclose(f);
	return buf;
}

/* The TC2 kernel is a Thumb-2 kernel: its entry (head.S) is two ARM
 * instructions, "add r9, pc, #1; bx r9", then Thumb code and data. */
static void test_kernel(void)
{
	char path[4096];
	size_t len = 0;
	uint8_t *img;
	struct tally ty = { 0 };

	snprintf(path, sizeof path, "%s/traces/TC2/kernel_dump.bin", check_shared_dir());
	img = read_file(path, &len);
	CHECK(img != NULL);
	if (!img)
		return;
	CHECK(len > 8);
	walk(&ty, img, 8, 0xC0008000u, ARM, "kernel");
	walk(&ty, img + 8, len - 8, 0xC0008008u, THUMB, "kernel");
	report("TC2 Thumb-2 kernel (linear walk)", &ty);
	CHECK(ty.compared > 50000);
	CHECK_EQ(ty.failed, 0);

	/* speed: the whole image classified repeatedly */
	{
		struct timespec t0, t1;
		unsigned long insns = 0, branches = 0;
		clock_gettime(CLOCK_MONOTONIC, &t0);
		for (int rep = 0; rep < 20; rep++) {
			size_t off = 8;
			struct csdi_insn in;
			while (off + 2 <= len) {
				int n = csdi_isa_decode(0xC0008000u + (uint32_t)off, img + off, len - off,
				                        THUMB, &in);
				if (n < 0)
					break;
				insns++;
				branches += in.cls != N;
				off += (size_t)n;
			}
		}
		clock_gettime(CLOCK_MONOTONIC, &t1);
		double ns = ((double)(t1.tv_sec - t0.tv_sec) * 1e9 + (double)(t1.tv_nsec - t0.tv_nsec));
		printf("  speed: %lu T32 instructions in %.1f ms, %.2f ns each (%lu branches)\n",
		       insns, ns / 1e6, ns / (double)insns, branches);
	}
	free(img);
}

/* --- cross-compiled programs: ELF32 little-endian, walk executable
 * sections by mapping symbols ($a ARM, $t Thumb, $d data). */

static uint32_t rd32(const uint8_t *p) { return p[0] | p[1] << 8 | p[2] << 16 | (uint32_t)p[3] << 24; }
static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }

struct mapsym { uint32_t addr; char kind; };

static int cmp_map(const void *a, const void *b)
{
	const struct mapsym *x = a, *y = b;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void walk_elf(struct tally *ty, const uint8_t *f, size_t len, const char *name)
{
	uint32_t shoff, shnum, shentsize;
	const uint8_t *symtab = NULL, *strtab = NULL;
	size_t nsym = 0, strsize = 0;
	struct mapsym *maps;
	size_t nmaps = 0;

	CHECK(len > 52 && memcmp(f, "\177ELF\1\1", 6) == 0);
	if (len <= 52 || memcmp(f, "\177ELF\1\1", 6) != 0)
		return;
	shoff = rd32(f + 32);
	shentsize = rd16(f + 46);
	shnum = rd16(f + 48);
	CHECK(shentsize == 40 && shoff + (uint64_t)shnum * 40 <= len);
	if (shentsize != 40 || shoff + (uint64_t)shnum * 40 > len)
		return;
	for (uint32_t i = 0; i < shnum; i++) {
		const uint8_t *sh = f + shoff + i * 40;
		if (rd32(sh + 4) == 2) {           /* SHT_SYMTAB */
			uint32_t off = rd32(sh + 16), size = rd32(sh + 20), link = rd32(sh + 24);
			const uint8_t *ls = f + shoff + link * 40;
			if (link < shnum && off + (uint64_t)size <= len &&
			    rd32(ls + 16) + (uint64_t)rd32(ls + 20) <= len) {
				symtab = f + off;
				nsym = size / 16;
				strtab = f + rd32(ls + 16);
				strsize = rd32(ls + 20);
			}
		}
	}
	CHECK(symtab != NULL);
	if (!symtab)
		return;
	maps = malloc(nsym * sizeof *maps);
	if (!maps)
		return;
	for (size_t i = 0; i < nsym; i++) {
		const uint8_t *s = symtab + i * 16;
		uint32_t nm = rd32(s);
		if (nm + 3 <= strsize && strtab[nm] == '$' && strchr("atd", strtab[nm + 1]) &&
		    (strtab[nm + 2] == 0 || strtab[nm + 2] == '.')) {
			maps[nmaps].addr = rd32(s + 4);
			maps[nmaps].kind = (char)strtab[nm + 1];
			nmaps++;
		}
	}
	qsort(maps, nmaps, sizeof *maps, cmp_map);
	for (uint32_t i = 0; i < shnum; i++) {
		const uint8_t *sh = f + shoff + i * 40;
		uint32_t type = rd32(sh + 4), flags = rd32(sh + 8), addr = rd32(sh + 12);
		uint32_t off = rd32(sh + 16), size = rd32(sh + 20);
		if (type != 1 || !(flags & 4) || off + (uint64_t)size > len)
			continue;                     /* PROGBITS, SHF_EXECINSTR */
		for (size_t m = 0; m < nmaps; m++) {
			uint32_t start = maps[m].addr, end = m + 1 < nmaps ? maps[m + 1].addr : addr + size;
			if (maps[m].kind == 'd' || start < addr || start >= addr + size)
				continue;
			if (end > addr + size)
				end = addr + size;
			if (end > start)
				walk(ty, f + off + (start - addr), end - start, start,
				     maps[m].kind == 'a' ? ARM : THUMB, name);
		}
	}
	free(maps);
}

static void test_compiled(void)
{
	static const char *const variants[][2] = {
		{ "arm-O0", "-marm -O0" }, { "arm-O2", "-marm -O2" },
		{ "thumb-O0", "-mthumb -O0" }, { "thumb-O2", "-mthumb -O2" },
	};
	char dir[] = "/tmp/csdec-isa-XXXXXX";
	char cmd[4096], src[1100], out[1100];
	struct tally all = { 0 };
	char cwd[1024];

	if (!getcwd(cwd, sizeof cwd) || !mkdtemp(dir)) {
		CHECK(!"cannot make a temporary directory");
		return;
	}
	/* make test runs from the top of the tree */
	snprintf(src, sizeof src, "%s/tests/data/isa/prog.c", cwd);
	for (size_t v = 0; v < sizeof variants / sizeof variants[0]; v++) {
		struct tally ty = { 0 };
		size_t len = 0;
		uint8_t *elf;
		snprintf(out, sizeof out, "%s/%s", dir, variants[v][0]);
		snprintf(cmd, sizeof cmd, "arm-linux-gnueabihf-gcc -static %s -o %s %s",
		         variants[v][1], out, src);
		CHECK_EQ(system(cmd), 0);
		elf = read_file(out, &len);
		CHECK(elf != NULL);
		if (elf) {
			walk_elf(&ty, elf, len, variants[v][0]);
			free(elf);
		}
		remove(out);
		snprintf(cmd, sizeof cmd, "static %s + libc", variants[v][0]);
		report(cmd, &ty);
		CHECK(ty.compared > 50000);
		CHECK_EQ(ty.failed, 0);
		all.compared += ty.compared;
	}
	rmdir(dir);
	CHECK(all.compared > 200000);
}

/* --- random encodings (xorshift64*, fixed seeds) */

static uint64_t rng_state;
static uint32_t rnd(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return (uint32_t)((rng_state * 0x2545F4914F6CDD1DULL) >> 32);
}

static void one(struct tally *ty, int isa, uint32_t op, uint32_t addr, const char *where)
{
	uint8_t b[4];
	size_t n = encode(isa, op, b);
	struct csdi_insn in;
	cs_insn *ci;
	size_t c;
	int r = csdi_isa_decode(addr, b, n, isa, &in);

	/* invariants that hold for every bit pattern */
	CHECK_EQ(r, (int)n);
	if (in.cls == D && in.target_isa != CSD_ISA_ARM && (in.target & 1))
		CHECK(!"odd Thumb target");
	if (in.cls == D && in.target_isa == CSD_ISA_ARM && (in.target & 3))
		CHECK(!"unaligned ARM target");
	if ((in.flags & F_LINK) && in.cls == N)
		CHECK(!"link without a branch");
	if (isa == TEE)
		return;    /* capstone has no ThumbEE */
	c = cs_disasm(isa == ARM ? cs_a32 : cs_thumb, b, n, addr, 1, &ci);
	if (!c) {
		ty->cs_invalid++;
		return;
	}
	compare(ty, &in, ci, where, 0);
	cs_free(ci, c);
}

static void test_random(void)
{
	static const uint64_t seeds[] = { 0x0123456789ABCDEFull, 42, 0xC0FFEE, 0x5EED5EED5EEDull };
	struct tally t16 = { 0 }, ta = { 0 }, tt = { 0 }, tee = { 0 };
	long per_seed = 1000000;

	/* every 16-bit T32 encoding, at two alignments mod 4 */
	for (uint32_t hw = 0; hw < 0xE800; hw++) {
		one(&t16, THUMB, hw, 0x20000, "t16");
		one(&t16, THUMB, hw, 0x20002, "t16");
		one(&tee, TEE, hw, 0x20000, "tee16");
	}
	for (size_t s = 0; s < sizeof seeds / sizeof seeds[0]; s++) {
		rng_state = seeds[s];
		for (long i = 0; i < per_seed; i++) {
			uint32_t w = rnd(), addr = rnd() & ~1u;
			one(&ta, ARM, w, addr & ~3u, "a32");
			/* 32-bit T32: first halfword forced into 0xE800-0xFFFF */
			w = (w & 0x07FFFFFFu) | 0xE8000000u;
			if (w >> 16 < 0xE800)
				w |= 0x10000000u;
			one(&tt, THUMB, w, addr, "t32");
			if ((i & 15) == 0)
				one(&tee, TEE, w, addr, "tee32");
		}
	}
	report("T32 16-bit, exhaustive", &t16);
	report("A32 random", &ta);
	report("T32 32-bit random", &tt);
	CHECK_EQ(t16.failed, 0);
	CHECK_EQ(ta.failed, 0);
	CHECK_EQ(tt.failed, 0);
	CHECK(ta.compared > 2000000);
	CHECK(tt.compared > 1000000);
}

int main(void)
{
	test_hand();
	test_mem_hand();
	test_api();
	test_it();

	if (cs_open(CS_ARCH_ARM, CS_MODE_ARM, &cs_a32) != CS_ERR_OK ||
	    cs_open(CS_ARCH_ARM, CS_MODE_THUMB, &cs_thumb) != CS_ERR_OK) {
		CHECK(!"capstone");
		return check_done("test_arm_isa");
	}
	cs_option(cs_a32, CS_OPT_DETAIL, CS_OPT_ON);
	cs_option(cs_thumb, CS_OPT_DETAIL, CS_OPT_ON);
	printf("capstone %d.%d as oracle:\n", CS_API_MAJOR, CS_API_MINOR);
	test_kernel();
	test_compiled();
	test_random();
	printf("  data transfers: %lu compared, %lu agree (%lu transfers; %lu VLDn/VSTn, %lu LDC/STC), %lu differ,"
	       " %lu VLDM/VSTM lists UNPREDICTABLE (capstone clamps them), %lu VLDn/VSTn lists past D31"
	       " (UNPREDICTABLE), %lu not compared (UNDEFINED/UNPREDICTABLE, ARMv8)\n",
	       mem_all.compared, mem_all.agreed, mem_all.transfers, mem_all.neon_agreed, mem_all.coproc_agreed,
	       mem_all.failed, mem_all.vfp_unpred, mem_all.neon_unpred, mem_all.skipped);
	CHECK_EQ(mem_all.failed, 0);
	CHECK(mem_all.agreed > 1000000);
	CHECK(mem_all.neon_agreed > 1000 && mem_all.coproc_agreed > 10000);
	printf("  accepted disagreements:\n");
	for (int r = 0; r < R_NREASONS; r++)
		if (reason_count[r])
			printf("    %8lu  %s\n", reason_count[r], reason_text[r]);
	cs_close(&cs_a32);
	cs_close(&cs_thumb);
	return check_done("test_arm_isa");
}
