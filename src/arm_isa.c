/* arm_isa.c - A32 / T32 / ThumbEE instruction classifier (see arm_isa.h).
 *
 * Structure: a switch on the top opcode bits (the first-level tables of the
 * ARM ARM: A5.1 for ARM, A6.1/A6.3 for Thumb) picks an encoding space; the
 * irregular spaces are first-match {mask, value, kind} tables transcribed
 * from the ARM ARM decode tables, and the kind says which fields to look at
 * (destination registers, targets). Section numbers below are those of the
 * ARMv7-A/R ARM (DDI 0406C).
 *
 * Destination rule: an instruction that names the PC as a destination is
 * classified INDIRECT, and UNPREDICTABLE where the architecture says so
 * (MUL pc, ..., LDRB pc, ...), so the walker stops at it like the core
 * would if it wrote the PC. Base-register writeback to the PC is
 * UNPREDICTABLE in every encoding and is only flagged, not classified.
 */
#include "arm_isa.h"


/* What to do with an encoding once its table row is known. */
enum kind {
	K_NONE,        /* no effect on the flow */
	K_UNDEF,       /* UNDEFINED / unallocated */
	K_UNPRED,      /* UNPREDICTABLE, no PC write */
	K_RD12,        /* destination in bits 15:12; PC there is UNPREDICTABLE */
	K_RD16,        /* destination in bits 19:16 */
	K_RD16_12,     /* destinations in bits 19:16 and 15:12 */
	K_RD8,         /* T32: destination in bits 11:8 (second halfword) */
	K_RD12_8,      /* T32: destinations in bits 15:12 and 11:8 */
	K_LDRD_PAIR,   /* A32 LDREXD: Rt in 15:12 and Rt + 1 */
	K_BX,          /* BX Rm */
	K_BXJ,         /* BXJ Rm */
	K_BLX_REG,     /* BLX Rm */
	K_ERET,        /* ERET */
	K_BKPT,
	K_HVC,
	K_SMC,
	K_UDF,         /* permanently UNDEFINED (UDF) */
	K_DSB,
	K_DMB,
	K_ISB,
	K_RFE,
	K_BLX_IMM,     /* A32 BLX (immediate) */
};

struct row {
	uint32_t mask, value;
	uint8_t kind;
};

static unsigned match(const struct row *t, size_t n, uint32_t w)
{
	for (size_t i = 0; i < n; i++)
		if ((w & t[i].mask) == t[i].value)
			return t[i].kind;
	return K_UNDEF;
}

#define NROWS(t) (sizeof(t) / sizeof((t)[0]))

static inline uint32_t bits(uint32_t w, unsigned hi, unsigned lo)
{
	return (w >> lo) & ((2u << (hi - lo)) - 1u);
}

/* Sign-extend the low `n` bits of v. */
static inline uint32_t sext(uint32_t v, unsigned n)
{
	uint32_t m = 1u << (n - 1);
	v &= (m << 1) - 1u;
	return (v ^ m) - m;
}

static inline void pc_write(struct csdi_insn *o)
{
	o->cls = CSDI_INSN_INDIRECT;
}

/* A destination register where the PC is UNPREDICTABLE. */
static inline void dest_unpred(struct csdi_insn *o, uint32_t reg)
{
	if (reg == 15) {
		o->cls = CSDI_INSN_INDIRECT;
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
	}
}

static inline void direct(struct csdi_insn *o, uint32_t target, int isa)
{
	o->cls = CSDI_INSN_DIRECT;
	o->target = target;
	o->target_isa = (uint8_t)isa;
}

/* Things only an unconditional (AL) A32 instruction may be. */
static inline void must_be_al(struct csdi_insn *o)
{
	if (o->cond != CSDI_COND_AL)
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
}

/* Apply a table kind to instruction word w (A32, or T32 as hw1:hw2). */
static void apply(unsigned kind, uint32_t addr, uint32_t w, struct csdi_insn *o)
{
	switch (kind) {
	case K_NONE:
		break;
	case K_UNDEF:
		o->flags |= CSDI_INSNF_UNDEFINED;
		break;
	case K_UNPRED:
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
		break;
	case K_RD12:
		dest_unpred(o, bits(w, 15, 12));
		break;
	case K_RD16:
		dest_unpred(o, bits(w, 19, 16));
		break;
	case K_RD16_12:
		dest_unpred(o, bits(w, 19, 16));
		dest_unpred(o, bits(w, 15, 12));
		break;
	case K_RD8:
		dest_unpred(o, bits(w, 11, 8));
		break;
	case K_RD12_8:
		dest_unpred(o, bits(w, 15, 12));
		dest_unpred(o, bits(w, 11, 8));
		break;
	case K_LDRD_PAIR: {
		/* Rt must be even and not LR; Rt2 = Rt + 1 is the PC for Rt = 14. */
		uint32_t t = bits(w, 15, 12);
		if (t & 1)
			o->flags |= CSDI_INSNF_UNPREDICTABLE;
		if (t >= 14)
			dest_unpred(o, 15);
		break;
	}
	case K_BX:
		pc_write(o);
		break;
	case K_BXJ:
	case K_BLX_REG:
		pc_write(o);
		if (kind == K_BLX_REG)
			o->flags |= CSDI_INSNF_LINK;
		if (bits(w, 3, 0) == 15)
			o->flags |= CSDI_INSNF_UNPREDICTABLE;
		break;
	case K_ERET:
		pc_write(o);
		o->flags |= CSDI_INSNF_EXC_RETURN;
		break;
	case K_BKPT:
		o->flags |= CSDI_INSNF_EXCEPTION;
		must_be_al(o);
		break;
	case K_HVC:
		o->flags |= CSDI_INSNF_EXCEPTION;
		must_be_al(o);
		break;
	case K_SMC:
		o->flags |= CSDI_INSNF_EXCEPTION;
		break;
	case K_UDF:
		o->flags |= CSDI_INSNF_EXCEPTION | CSDI_INSNF_UNDEFINED;
		must_be_al(o);
		break;
	case K_DSB:
	case K_DMB:
		o->flags |= CSDI_INSNF_DMB_DSB;
		break;
	case K_ISB:
		o->flags |= CSDI_INSNF_ISB;
		break;
	case K_RFE:
		/* the low halfword is fixed: 0x0A00 in A32, 0xC000 in T32 */
		pc_write(o);
		o->flags |= CSDI_INSNF_EXC_RETURN;
		if (bits(w, 19, 16) == 15 || (w & 0xFFFF) != (o->isa == CSD_ISA_ARM ? 0x0A00u : 0xC000u))
			o->flags |= CSDI_INSNF_UNPREDICTABLE;
		break;
	case K_BLX_IMM:
		/* A32 BLX <label>: imm24:H:'0' from PC = addr + 8, into Thumb. */
		direct(o, addr + 8 + sext((bits(w, 23, 0) << 2) | (bits(w, 24, 24) << 1), 26),
		       CSD_ISA_THUMB);
		o->flags |= CSDI_INSNF_LINK;
		break;
	}
}

/* ------------------------------------------------------------------------
 * Coprocessor space, shared: A32 bits 27:25 = 11x, T32 hw1 = 111x 11xx.
 * Same field layout in the A32 word and in hw1:hw2 (A5.6, A6.3.18).
 * ---------------------------------------------------------------------- */

enum cp_mode { CP_A32, CP_A32_UNCOND, CP_T32 };

/* MCR encodings of the CP15 barrier operations (c7, ARMv6 and later):
 * opc1 = 0, CRn = c7, coproc = 15; any Rt. */
#define CP15_BARRIER_MASK 0x0FFF0FFFu
#define CP15_DSB 0x0E070F9Au   /* c7, c10, 4 */
#define CP15_DMB 0x0E070FBAu   /* c7, c10, 5 */
#define CP15_ISB 0x0E070F95u   /* c7, c5, 4 */

static void coproc(uint32_t w, enum cp_mode mode, struct csdi_insn *o)
{
	uint32_t op1 = bits(w, 25, 20);
	uint32_t cp = bits(w, 11, 8);
	int op = (int)bits(w, 4, 4);
	int load = (int)bits(w, 20, 20);

	if ((op1 & 0x30) == 0x30) {
		if (mode == CP_A32)
			o->flags |= CSDI_INSNF_EXCEPTION;           /* SVC */
		else if (mode == CP_A32_UNCOND)
			o->flags |= CSDI_INSNF_UNDEFINED;
		/* T32: Advanced SIMD data-processing. */
		return;
	}
	if ((op1 & 0x3E) == 0) {
		o->flags |= CSDI_INSNF_UNDEFINED;
		return;
	}
	if ((cp & 0xE) == 0xA) {
		/* Floating point / Advanced SIMD (A7.5 - A7.9). Only the
		 * transfers to core registers can name the PC. With cond 1111
		 * (A32) or hw1 bit 12 set (T32) these are ARMv8 additions
		 * (VSEL, VRINT...) or UNDEFINED: none writes a core register. */
		if (mode == CP_A32_UNCOND || (mode == CP_T32 && (w & 0x10000000u)))
			return;
		if ((op1 & 0x3E) == 0x04) {
			/* 64-bit transfer; VMOV to two core registers. */
			if (load)
				apply(K_RD16_12, 0, w, o);
		} else if ((op1 & 0x20) == 0) {
			/* VLDR/VSTR/VLDM/VSTM/VPUSH/VPOP: writeback to the PC. */
			if (bits(w, 21, 21) && bits(w, 19, 16) == 15)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
		} else if (op && load) {
			/* VMRS APSR_nzcv, FPSCR is the one legal Rt = 15. */
			if (!bits(w, 8, 8) && bits(w, 23, 21) == 7 && bits(w, 19, 16) == 1)
				return;
			apply(K_RD12, 0, w, o);
		}
		return;
	}
	if ((op1 & 0x20) == 0) {
		if (op1 == 0x05)
			apply(K_RD16_12, 0, w, o);                /* MRRC */
		else if (op1 != 0x04 && bits(w, 21, 21) && bits(w, 19, 16) == 15)
			o->flags |= CSDI_INSNF_UNPREDICTABLE;      /* LDC/STC writeback to PC */
		return;
	}
	if (!op)
		return;                                         /* CDP */
	if (load)
		return;                                         /* MRC: Rt = 15 is APSR */
	if (mode != CP_A32_UNCOND && !(mode == CP_T32 && (w & 0x10000000u))) {
		uint32_t k = w & CP15_BARRIER_MASK;
		if (k == CP15_DSB || k == CP15_DMB)
			o->flags |= CSDI_INSNF_DMB_DSB;
		else if (k == CP15_ISB)
			o->flags |= CSDI_INSNF_ISB;
	}
}

/* ------------------------------------------------------------------------
 * A32
 * ---------------------------------------------------------------------- */

/* A5.2.12 Miscellaneous instructions: bits 27:23 = 00010, 20 = 0, 7 = 0.
 * Keyed on op (22:21), B (9), op2 (6:4). */
static const struct row a32_misc[] = {
	{ 0x00200270, 0x00000200, K_RD12 },    /* MRS (banked register) */
	{ 0x00200270, 0x00200200, K_NONE },    /* MSR (banked register) */
	{ 0x00200270, 0x00000000, K_RD12 },    /* MRS */
	{ 0x00200270, 0x00200000, K_NONE },    /* MSR (register) */
	{ 0x00600070, 0x00200010, K_BX },      /* BX */
	{ 0x00600070, 0x00600010, K_RD12 },    /* CLZ */
	{ 0x00600070, 0x00200020, K_BXJ },     /* BXJ */
	{ 0x00600070, 0x00200030, K_BLX_REG }, /* BLX (register) */
	{ 0x00000070, 0x00000050, K_RD12 },    /* QADD, QSUB, QDADD, QDSUB */
	{ 0x00600070, 0x00600060, K_ERET },    /* ERET */
	{ 0x00600070, 0x00200070, K_BKPT },    /* BKPT */
	{ 0x00600070, 0x00400070, K_HVC },     /* HVC */
	{ 0x00600070, 0x00600070, K_SMC },     /* SMC */
};

/* A5.2.5 Multiply and multiply accumulate: bits 27:24 = 0000, 7:4 = 1001. */
static const struct row a32_mul[] = {
	{ 0x00E00000, 0x00000000, K_RD16 },    /* MUL */
	{ 0x00E00000, 0x00200000, K_RD16 },    /* MLA */
	{ 0x00F00000, 0x00400000, K_RD16_12 }, /* UMAAL */
	{ 0x00F00000, 0x00600000, K_RD16 },    /* MLS */
	{ 0x00800000, 0x00800000, K_RD16_12 }, /* UMULL, UMLAL, SMULL, SMLAL */
};

/* A5.2.10 Synchronization primitives: bits 27:24 = 0001, 7:4 = 1001. */
static const struct row a32_sync[] = {
	{ 0x00B00000, 0x00000000, K_RD12 },      /* SWP, SWPB */
	{ 0x00F00000, 0x00800000, K_RD12 },      /* STREX (status) */
	{ 0x00F00000, 0x00900000, K_RD12 },      /* LDREX */
	{ 0x00F00000, 0x00A00000, K_RD12 },      /* STREXD (status) */
	{ 0x00F00000, 0x00B00000, K_LDRD_PAIR }, /* LDREXD */
	{ 0x00C00000, 0x00C00000, K_RD12 },      /* STREXB/LDREXB/STREXH/LDREXH */
};

/* A5.4 Media instructions: bits 27:25 = 011, bit 4 = 1.
 * Keyed on op1 (24:20) and op2 (7:5). */
static const struct row a32_media[] = {
	/* A5.4.1/A5.4.2 parallel addition and subtraction */
	{ 0x01B00000, 0x00000000, K_UNDEF },
	{ 0x018000E0, 0x000000A0, K_UNDEF },
	{ 0x018000E0, 0x000000C0, K_UNDEF },
	{ 0x01800000, 0x00000000, K_RD12 },
	/* A5.4.3 packing, unpacking, saturation and reversal */
	{ 0x01F00020, 0x00800000, K_RD12 },    /* PKH */
	{ 0x01F000E0, 0x00800060, K_RD12 },    /* SXTAB16, SXTB16 */
	{ 0x01F000E0, 0x008000A0, K_RD12 },    /* SEL */
	{ 0x01E00020, 0x00A00000, K_RD12 },    /* SSAT */
	{ 0x01F000E0, 0x00A00020, K_RD12 },    /* SSAT16 */
	{ 0x01F000E0, 0x00A00060, K_RD12 },    /* SXTAB, SXTB */
	{ 0x01F000E0, 0x00B00020, K_RD12 },    /* REV */
	{ 0x01F000E0, 0x00B00060, K_RD12 },    /* SXTAH, SXTH */
	{ 0x01F000E0, 0x00B000A0, K_RD12 },    /* REV16 */
	{ 0x01F000E0, 0x00C00060, K_RD12 },    /* UXTAB16, UXTB16 */
	{ 0x01E00020, 0x00E00000, K_RD12 },    /* USAT */
	{ 0x01F000E0, 0x00E00020, K_RD12 },    /* USAT16 */
	{ 0x01F000E0, 0x00E00060, K_RD12 },    /* UXTAB, UXTB */
	{ 0x01F000E0, 0x00F00020, K_RD12 },    /* RBIT */
	{ 0x01F000E0, 0x00F00060, K_RD12 },    /* UXTAH, UXTH */
	{ 0x01F000E0, 0x00F000A0, K_RD12 },    /* REVSH */
	/* A5.4.4 signed multiplies, divide */
	{ 0x01F000C0, 0x01000000, K_RD16 },    /* SMLAD, SMUAD */
	{ 0x01F000C0, 0x01000040, K_RD16 },    /* SMLSD, SMUSD */
	{ 0x01F000E0, 0x01100000, K_RD16 },    /* SDIV */
	{ 0x01F000E0, 0x01300000, K_RD16 },    /* UDIV */
	{ 0x01F000C0, 0x01400000, K_RD16_12 }, /* SMLALD */
	{ 0x01F000C0, 0x01400040, K_RD16_12 }, /* SMLSLD */
	{ 0x01F000C0, 0x01500000, K_RD16 },    /* SMMLA, SMMUL */
	{ 0x01F000C0, 0x015000C0, K_RD16 },    /* SMMLS */
	/* the rest of A5.4 */
	{ 0x01F000E0, 0x01800000, K_RD16 },    /* USAD8, USADA8 */
	{ 0x01E00060, 0x01A00040, K_RD12 },    /* SBFX */
	{ 0x01E00060, 0x01C00000, K_RD12 },    /* BFC, BFI */
	{ 0x01F000E0, 0x01F000E0, K_UDF },     /* UDF */
	{ 0x01E00060, 0x01E00040, K_RD12 },    /* UBFX */
};

/* A5.7 Unconditional instructions (cond = 1111), before the coprocessor
 * space (bits 27:25 = 11x), which coproc() handles. */
static const struct row a32_uncond[] = {
	{ 0xFFF10020, 0xF1000000, K_NONE },    /* CPS */
	{ 0xFFF100F0, 0xF1010000, K_NONE },    /* SETEND */
	{ 0xFE000000, 0xF2000000, K_NONE },    /* Advanced SIMD data-processing */
	{ 0xFF100000, 0xF4000000, K_NONE },    /* Advanced SIMD element/structure load/store */
	{ 0xFF700000, 0xF4100000, K_NONE },    /* unallocated memory hint (NOP) */
	{ 0xFF700000, 0xF4500000, K_NONE },    /* PLI (immediate, literal) */
	{ 0xFF700000, 0xF5100000, K_NONE },    /* PLDW (immediate) */
	{ 0xFF700000, 0xF5500000, K_NONE },    /* PLD (immediate, literal) */
	{ 0xFFF000F0, 0xF5700010, K_NONE },    /* CLREX */
	{ 0xFFF000F0, 0xF5700040, K_DSB },     /* DSB */
	{ 0xFFF000F0, 0xF5700050, K_DMB },     /* DMB */
	{ 0xFFF000F0, 0xF5700060, K_ISB },     /* ISB */
	{ 0xFFF00000, 0xF5700000, K_UNPRED },
	{ 0xFFF00000, 0xF5300000, K_UNPRED },
	{ 0xFFB00000, 0xF5B00000, K_UNPRED },
	{ 0xFF700010, 0xF6100000, K_NONE },    /* unallocated memory hint (NOP) */
	{ 0xFF700010, 0xF6500000, K_NONE },    /* PLI (register) */
	{ 0xFF700010, 0xF7100000, K_NONE },    /* PLDW (register) */
	{ 0xFF700010, 0xF7500000, K_NONE },    /* PLD (register) */
	{ 0xFE300010, 0xF6300000, K_UNPRED },
	{ 0xF8000000, 0xF0000000, K_UNDEF },
	{ 0xFE500000, 0xF8400000, K_NONE },    /* SRS */
	{ 0xFE500000, 0xF8100000, K_RFE },     /* RFE */
	{ 0xFE000000, 0xFA000000, K_BLX_IMM }, /* BLX (immediate) */
};

/* A5.2.8 extra load/store, A5.2.9 unprivileged forms: bits 27:25 = 000,
 * bit 7 = 1, bit 4 = 1, op2 (6:5) != 00. */
static void a32_extra_ldst(uint32_t w, struct csdi_insn *o)
{
	uint32_t op2 = bits(w, 6, 5);
	int load = (int)bits(w, 20, 20), p = (int)bits(w, 24, 24), wb = (int)bits(w, 21, 21);
	uint32_t n = bits(w, 19, 16), t = bits(w, 15, 12);
	int wback = !p || wb;

	if (op2 == 1 || load) {
		/* STRH, LDRH, LDRSB, LDRSH (and their T forms) */
		if (load)
			dest_unpred(o, t);
	} else {
		/* LDRD (op2 = 10), STRD (op2 = 11); P = 0, W = 1 is UNPREDICTABLE */
		if ((!p && wb) || (t & 1))
			o->flags |= CSDI_INSNF_UNPREDICTABLE;
		if (op2 == 2 && t >= 14)
			dest_unpred(o, 15);
		else if (t >= 14)
			o->flags |= CSDI_INSNF_UNPREDICTABLE;  /* STRD of the PC */
		if (op2 == 2 && wback && (n == t || n == t + 1))
			o->flags |= CSDI_INSNF_UNPREDICTABLE;
	}
	if (wback && (n == 15 || (load && n == t)))
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
}

/* MOV and MVN have Rn should-be-zero. */
static inline void mov_rn_sbz(uint32_t w, struct csdi_insn *o)
{
	if ((w & 0x01A00000u) == 0x01A00000u && bits(w, 19, 16) != 0)
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
}

/* A5.2 Data-processing and miscellaneous instructions: bits 27:25 = 000. */
static void a32_dp_reg(uint32_t addr, uint32_t w, struct csdi_insn *o)
{
	uint32_t op1 = bits(w, 24, 20), op2 = bits(w, 7, 4);

	if ((op2 & 0x9) == 0x9) {
		if (op2 != 0x9)
			a32_extra_ldst(w, o);
		else if (op1 & 0x10)
			apply(match(a32_sync, NROWS(a32_sync), w), addr, w, o);
		else
			apply(match(a32_mul, NROWS(a32_mul), w), addr, w, o);
		return;
	}
	if ((op1 & 0x19) == 0x10) {
		if (op2 & 0x8) {
			/* A5.2.7 halfword multiply: SMLALxy has two destinations */
			apply(bits(w, 22, 21) == 2 ? K_RD16_12 : K_RD16, addr, w, o);
		} else {
			unsigned kind = match(a32_misc, NROWS(a32_misc), w);
			apply(kind, addr, w, o);
			/* should-be-one / should-be-zero fields of the branches */
			if ((kind == K_BX || kind == K_BXJ || kind == K_BLX_REG) &&
			    (w & 0x000FFF00u) != 0x000FFF00u)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
			if (kind == K_ERET && (w & 0x000FFF0Fu) != 0x0000000Eu)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
		}
		return;
	}
	/* A5.2.1 data-processing (register), A5.2.2 (register-shifted register).
	 * TST/TEQ/CMP/CMN (op 10xx, S = 1 here) write no register. */
	if ((op1 & 0x19) == 0x11)
		return;
	if (bits(w, 15, 12) != 15)
		return;
	if (op2 & 1) {
		dest_unpred(o, 15);
	} else {
		pc_write(o);
		if (bits(w, 20, 20))
			o->flags |= CSDI_INSNF_EXC_RETURN;   /* SUBS pc, lr and related */
		mov_rn_sbz(w, o);
	}
}

/* A5.2.3 data-processing (immediate), MOVW/MOVT, A5.2.11 MSR/hints:
 * bits 27:25 = 001. */
static void a32_dp_imm(uint32_t w, struct csdi_insn *o)
{
	uint32_t op1 = bits(w, 24, 20);

	if ((op1 & 0x19) == 0x11)
		return;                          /* TST, TEQ, CMP, CMN */
	if ((op1 & 0x1B) == 0x10) {
		dest_unpred(o, bits(w, 15, 12)); /* MOVW, MOVT */
		return;
	}
	if ((op1 & 0x1B) == 0x12)
		return;                          /* MSR (immediate), hints */
	if (bits(w, 15, 12) == 15) {
		pc_write(o);
		if (bits(w, 20, 20))
			o->flags |= CSDI_INSNF_EXC_RETURN;
		mov_rn_sbz(w, o);
	}
}

/* A5.3 load/store word and unsigned byte: bits 27:25 = 010, or 011 with
 * bit 4 = 0. */
static void a32_ldst(uint32_t w, struct csdi_insn *o)
{
	int load = (int)bits(w, 20, 20), byte = (int)bits(w, 22, 22);
	int p = (int)bits(w, 24, 24), wb = (int)bits(w, 21, 21);
	uint32_t n = bits(w, 19, 16), t = bits(w, 15, 12);
	int wback = !p || wb;

	if (load && t == 15) {
		/* LDR pc interworks (BXWritePC); LDRB/LDRT/LDRBT to the PC are
		 * UNPREDICTABLE. */
		pc_write(o);
		if (byte || (!p && wb))
			o->flags |= CSDI_INSNF_UNPREDICTABLE;
	}
	if (wback && (n == 15 || n == t))
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
	if (bits(w, 25, 25) && bits(w, 3, 0) == 15)
		o->flags |= CSDI_INSNF_UNPREDICTABLE;    /* register offset PC */
}

/* A5.5 LDM/STM: bits 27:25 = 100. */
static void a32_ldm_stm(uint32_t w, struct csdi_insn *o)
{
	int load = (int)bits(w, 20, 20), user = (int)bits(w, 22, 22), wb = (int)bits(w, 21, 21);
	uint32_t n = bits(w, 19, 16), list = bits(w, 15, 0);

	if (n == 15 || list == 0)
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
	if (!load) {
		if (user && wb)
			o->flags |= CSDI_INSNF_UNPREDICTABLE;
		return;
	}
	if (list & 0x8000) {
		pc_write(o);
		if (user)
			o->flags |= CSDI_INSNF_EXC_RETURN;   /* LDM (exception return) */
	} else if (user && wb) {
		o->flags |= CSDI_INSNF_UNPREDICTABLE;    /* LDM (user registers) */
	}
	if (wb && (list >> n) & 1)
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
}

void csdi_isa_decode_a32(uint32_t addr, uint32_t w, struct csdi_insn *o)
{
	uint32_t cond = w >> 28;

	o->opcode = w;
	o->target = 0;
	o->flags = 0;
	o->size = 4;
	o->isa = CSD_ISA_ARM;
	o->cls = CSDI_INSN_NORMAL;
	o->target_isa = CSD_ISA_ARM;
	if (cond == 15) {
		o->cond = CSDI_COND_AL;
		if ((w & 0x0C000000u) == 0x0C000000u)
			coproc(w, CP_A32_UNCOND, o);
		else
			apply(match(a32_uncond, NROWS(a32_uncond), w), addr, w, o);
		return;
	}
	o->cond = (uint8_t)cond;
	if (cond != CSDI_COND_AL)
		o->flags |= CSDI_INSNF_COND;

	switch ((w >> 25) & 7) {
	case 0:
		a32_dp_reg(addr, w, o);
		break;
	case 1:
		a32_dp_imm(w, o);
		break;
	case 2:
		a32_ldst(w, o);
		break;
	case 3:
		if (w & 0x10)
			apply(match(a32_media, NROWS(a32_media), w), addr, w, o);
		else
			a32_ldst(w, o);
		break;
	case 4:
		a32_ldm_stm(w, o);
		break;
	case 5:
		/* B, BL: imm24:'00' from PC = addr + 8 */
		direct(o, addr + 8 + sext(bits(w, 23, 0) << 2, 26), CSD_ISA_ARM);
		if (w & 0x01000000u)
			o->flags |= CSDI_INSNF_LINK;
		break;
	default:
		coproc(w, CP_A32, o);
		break;
	}
}

/* ------------------------------------------------------------------------
 * T32, 16-bit (A6.2) and the ThumbEE replacements (A9.2)
 * ---------------------------------------------------------------------- */

static void t16(uint32_t addr, uint32_t hw, int isa, struct csdi_insn *o)
{
	switch (hw >> 12) {
	case 0x4:
		if ((hw & 0x0C00) != 0x0400)
			break;
		/* A6.2.3 special data instructions and branch and exchange */
		switch (bits(hw, 9, 6)) {
		case 0x0: case 0x1: case 0x2: case 0x3: {
			/* ADD (register) T2: Rdn = DN:Rdn */
			uint32_t d = (bits(hw, 7, 7) << 3) | bits(hw, 2, 0);
			if (d == 15) {
				pc_write(o);
				if (bits(hw, 6, 3) == 15)
					o->flags |= CSDI_INSNF_UNPREDICTABLE;
			}
			break;
		}
		case 0x4:
			/* CMP with two low registers */
			o->flags |= CSDI_INSNF_UNPREDICTABLE;
			break;
		case 0x8: case 0x9: case 0xA: case 0xB:
			/* MOV (register) T1 */
			if (((bits(hw, 7, 7) << 3) | bits(hw, 2, 0)) == 15)
				pc_write(o);
			break;
		case 0xC: case 0xD:
			apply(K_BX, addr, hw, o);
			if (hw & 7)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
			break;
		case 0xE: case 0xF:
			apply(K_BLX_REG, addr, bits(hw, 6, 3), o);
			if (hw & 7)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
			break;
		default:
			break;        /* CMP (register) */
		}
		break;
	case 0xB:
		/* A6.2.5 miscellaneous 16-bit instructions */
		if ((hw & 0x0500) == 0x0100) {
			/* CBZ, CBNZ: i:imm5:'0' forward from PC = addr + 4 */
			direct(o, addr + 4 + ((bits(hw, 9, 9) << 6) | (bits(hw, 7, 3) << 1)), isa);
		} else if ((hw & 0x0E00) == 0x0C00) {
			/* POP */
			if (hw & 0x0100)
				pc_write(o);
			if ((hw & 0x01FF) == 0)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
		} else if ((hw & 0x0E00) == 0x0400) {
			/* PUSH */
			if ((hw & 0x01FF) == 0)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
		} else if ((hw & 0x0F00) == 0x0F00) {
			if (hw & 0x000F) {
				/* IT. UNPREDICTABLE: firstcond 1111, and firstcond
				 * AL with an 'E' (mask with more than one bit set). */
				o->flags |= CSDI_INSNF_IT;
				if (bits(hw, 7, 4) == 15 ||
				    (bits(hw, 7, 4) == 14 && (hw & (hw - 1) & 0xF) != 0))
					o->flags |= CSDI_INSNF_UNPREDICTABLE;
			}
			/* else NOP-compatible hints */
		} else if ((hw & 0x0F00) == 0x0E00) {
			apply(K_BKPT, addr, hw, o);
		} else if ((hw & 0x0FC0) == 0x0640) {
			/* SETEND (0110010), CPS (0110011) */
		} else if ((hw & 0x0F00) == 0x0600 || (hw & 0x0F00) == 0x0700 ||
		           (hw & 0x0F00) == 0x0800 || (hw & 0x0FC0) == 0x0A80) {
			o->flags |= CSDI_INSNF_UNDEFINED;
		}
		break;
	case 0xC:
		if (isa != CSD_ISA_THUMBEE)
			break;     /* LDM/STM with low registers */
		/* A9.2 ThumbEE: 1100 xxxx replaces 16-bit LDM/STM */
		switch (bits(hw, 11, 8)) {
		case 0x0:      /* HBP #imm3, #handler5 */
			pc_write(o);
			o->flags |= CSDI_INSNF_TEE_HANDLER;
			o->target = bits(hw, 4, 0) << 5;
			break;
		case 0x1:
			o->flags |= CSDI_INSNF_UNDEFINED;
			break;
		case 0x2: case 0x3: /* HB, HBL #handler8 */
			pc_write(o);
			o->flags |= CSDI_INSNF_TEE_HANDLER;
			if (hw & 0x0100)
				o->flags |= CSDI_INSNF_LINK;
			o->target = bits(hw, 7, 0) << 5;
			break;
		case 0x4: case 0x5: case 0x6: case 0x7: /* HBLP #imm5, #handler5 */
			pc_write(o);
			o->flags |= CSDI_INSNF_TEE_HANDLER | CSDI_INSNF_LINK;
			o->target = bits(hw, 4, 0) << 5;
			break;
		case 0xA: { /* CHKA Rn, Rm; Rn = N:Rn */
			uint32_t n = (bits(hw, 7, 7) << 3) | bits(hw, 2, 0);
			o->flags |= CSDI_INSNF_TEE_CHECK;
			if (n == 15 || bits(hw, 6, 3) == 15)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
			break;
		}
		default:       /* LDR/STR with R9/R10 and negative offsets */
			break;
		}
		break;
	case 0xD: {
		uint32_t cond = bits(hw, 11, 8);
		if (cond == 14) {
			apply(K_UDF, addr, hw, o);                   /* UDF */
		} else if (cond == 15) {
			o->flags |= CSDI_INSNF_EXCEPTION;            /* SVC */
		} else {
			/* B<c> T1: imm8:'0' */
			direct(o, addr + 4 + sext(bits(hw, 7, 0) << 1, 9), isa);
			o->cond = (uint8_t)cond;
			o->flags |= CSDI_INSNF_COND;
		}
		break;
	}
	case 0xE:
		/* B T2: imm11:'0' (only 11100 here: 11101 is 32-bit) */
		direct(o, addr + 4 + sext(bits(hw, 10, 0) << 1, 12), isa);
		break;
	default:
		break;
	}
}

/* ------------------------------------------------------------------------
 * T32, 32-bit (A6.3); w = hw1:hw2
 * ---------------------------------------------------------------------- */

/* A6.3.4 branches and miscellaneous control, hw2 bit 15 = 1, the
 * non-branch rows: op1 (hw2 14:12) = 0x0 and op (hw1 10:4) = x111xxx. */
static const struct row t32_misc_ctrl[] = {
	{ 0x07E05000, 0x03800000, K_NONE },    /* MSR (register), banked */
	{ 0x07F05000, 0x03A00000, K_NONE },    /* CPS, hints */
	{ 0x07F050F0, 0x03B00020, K_NONE },    /* CLREX */
	{ 0x07F050F0, 0x03B00040, K_DSB },     /* DSB */
	{ 0x07F050F0, 0x03B00050, K_DMB },     /* DMB */
	{ 0x07F050F0, 0x03B00060, K_ISB },     /* ISB */
	{ 0x07F05000, 0x03C00000, K_BXJ },     /* BXJ (Rm in hw1 3:0) */
	{ 0x07F05000, 0x03D00000, K_ERET },    /* SUBS pc, lr, #imm8 (ERET) */
	{ 0x07E05000, 0x03E00000, K_RD8 },     /* MRS, banked */
	{ 0x07F07000, 0x07E00000, K_HVC },     /* HVC (op1 = 000) */
	{ 0x07F07000, 0x07F00000, K_SMC },     /* SMC (op1 = 000) */
	{ 0x07F07000, 0x07F02000, K_UDF },     /* UDF (op1 = 010) */
};

/* A6.3.6 load/store dual, load/store exclusive, table branch:
 * hw1 = 1110 100x x1xx; op1 = hw1 8:7, op2 = hw1 5:4, op3 = hw2 7:4. */
static void t32_ldst_dual(uint32_t w, struct csdi_insn *o)
{
	uint32_t op1 = bits(w, 24, 23), op2 = bits(w, 21, 20), op3 = bits(w, 7, 4);
	uint32_t n = bits(w, 19, 16), t = bits(w, 15, 12), t2 = bits(w, 11, 8);

	if (op1 == 0 && op2 == 0) {
		dest_unpred(o, t2);                 /* STREX: status Rd in 11:8 */
	} else if (op1 == 0 && op2 == 1) {
		dest_unpred(o, t);                  /* LDREX */
	} else if ((op1 & 2) || (op2 & 2)) {
		/* LDRD / STRD (immediate, literal): P:U = op1, W:L = op2 */
		int wback = (int)bits(w, 21, 21);
		if (op2 & 1) {
			dest_unpred(o, t);
			dest_unpred(o, t2);
			if (t == t2)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
		}
		if (wback && (n == 15 || n == t || n == t2))
			o->flags |= CSDI_INSNF_UNPREDICTABLE;
	} else if (op2 == 0) {
		/* op1 = 01: STREXB, STREXH, STREXD; status Rd in 3:0 */
		if (op3 == 4 || op3 == 5 || op3 == 7)
			dest_unpred(o, bits(w, 3, 0));
		else
			o->flags |= CSDI_INSNF_UNDEFINED;
	} else if (op2 == 1) {
		/* op1 = 01 */
		if (op3 == 0 || op3 == 1) {
			pc_write(o);                    /* TBB, TBH */
			if (bits(w, 3, 0) == 15 || n == 13 || (w & 0xFF00) != 0xF000)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
		} else if (op3 == 4 || op3 == 5) {
			dest_unpred(o, t);              /* LDREXB, LDREXH */
		} else if (op3 == 7) {
			dest_unpred(o, t);              /* LDREXD */
			dest_unpred(o, t2);
		} else {
			o->flags |= CSDI_INSNF_UNDEFINED;
		}
	} else {
		o->flags |= CSDI_INSNF_UNDEFINED;
	}
}

/* A6.3.5 load/store multiple: hw1 = 1110 100x x0xx. */
static void t32_ldm_stm(uint32_t w, struct csdi_insn *o)
{
	uint32_t op = bits(w, 24, 23), n = bits(w, 19, 16), list = bits(w, 15, 0);
	int load = (int)bits(w, 20, 20), wb = (int)bits(w, 21, 21);

	if (op == 0 || op == 3) {
		if (load)
			apply(K_RFE, 0, w, o);          /* RFEDB, RFEIA */
		return;                             /* SRSDB, SRSIA */
	}
	/* STM/STMDB/PUSH, LDM/LDMDB/POP: no SP in the list, at least two
	 * registers, never both PC and LR; STM never stores the PC. */
	if (n == 15 || (list & 0x2000) || (list & (list - 1)) == 0)
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
	if (load) {
		if (list & 0x8000) {
			pc_write(o);
			if (list & 0x4000)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
		}
	} else if (list & 0x8000) {
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
	}
	if (wb && (list >> n) & 1)
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
}

/* A6.3.11 data-processing (shifted register) and A6.3.1 (modified
 * immediate): op = hw1 8:5, S = hw1 4, Rn = hw1 3:0, Rd = hw2 11:8.
 * `valid` has bit op set for the allocated opcodes. */
static void t32_dp(uint32_t w, uint32_t valid, struct csdi_insn *o)
{
	uint32_t op = bits(w, 24, 21), d = bits(w, 11, 8);

	if (!((valid >> op) & 1)) {
		o->flags |= CSDI_INSNF_UNDEFINED;
		return;
	}
	/* Rd = PC with S = 1 is TST (AND), TEQ (EOR), CMN (ADD), CMP (SUB) */
	if (d == 15 && bits(w, 20, 20) && (op == 0x0 || op == 0x4 || op == 0x8 || op == 0xD))
		return;
	dest_unpred(o, d);
}

/* AND BIC ORR ORN EOR PKH ADD ADC SBC SUB RSB */
#define T32_DP_SHIFTED_OPS 0x6D5Fu
/* as above without PKH */
#define T32_DP_MODIMM_OPS  0x6D1Fu

/* A6.3.3 data-processing (plain binary immediate): hw1 = 1111 0x11 xxxx. */
static void t32_dp_plain(uint32_t w, struct csdi_insn *o)
{
	uint32_t op = bits(w, 24, 20);

	/* ADDW 00000, MOVW 00100, SUBW 01010, MOVT 01100, SSAT 100x0, SBFX
	 * 10100, BFI/BFC 10110, USAT 110x0, UBFX 11100 */
	static const uint32_t valid = (1u << 0x00) | (1u << 0x04) | (1u << 0x0A) |
		(1u << 0x0C) | (1u << 0x10) | (1u << 0x12) | (1u << 0x14) |
		(1u << 0x16) | (1u << 0x18) | (1u << 0x1A) | (1u << 0x1C);
	if (!((valid >> op) & 1)) {
		o->flags |= CSDI_INSNF_UNDEFINED;
		return;
	}
	dest_unpred(o, bits(w, 11, 8));
}

/* A6.3.7 - A6.3.9 loads: hw1 = 1111 100x xxx1, size in hw1 6:5. */
static void t32_load(uint32_t w, struct csdi_insn *o)
{
	uint32_t size = bits(w, 22, 21), n = bits(w, 19, 16), t = bits(w, 15, 12);
	uint32_t op2 = bits(w, 11, 6);
	int sign = (int)bits(w, 24, 24), up = (int)bits(w, 23, 23);
	int wback = 0, unpriv = 0;

	if (size == 3 || (size == 2 && sign)) {
		o->flags |= CSDI_INSNF_UNDEFINED;
		return;
	}
	if (n != 15 && !up) {
		if ((op2 & 0x24) == 0x24) {
			wback = 1;                  /* imm8, post/pre-indexed */
		} else if ((op2 & 0x3C) == 0x38) {
			unpriv = 1;                 /* LDRT, LDRBT, ... */
		} else if ((op2 & 0x3C) != 0x30 && op2 != 0) {
			o->flags |= CSDI_INSNF_UNDEFINED;
			return;
		}
		if (op2 == 0 && (bits(w, 3, 0) == 15 || bits(w, 3, 0) == 13))
			o->flags |= CSDI_INSNF_UNPREDICTABLE;   /* LDR (register), Rm */
	}
	if (t == 15) {
		if (size == 2) {
			/* LDR pc (literal, imm12, imm8, register) interworks;
			 * LDRT pc is UNPREDICTABLE. */
			pc_write(o);
			if (unpriv)
				o->flags |= CSDI_INSNF_UNPREDICTABLE;
		} else if (wback || unpriv) {
			dest_unpred(o, t);
		}
		/* else PLD, PLDW, PLI or an unallocated memory hint */
	}
	if (wback && n == t)
		o->flags |= CSDI_INSNF_UNPREDICTABLE;
}

/* A6.3.17 long multiply, long multiply accumulate, divide:
 * hw1 = 1111 1011 1xxx. op1 = hw1 6:4, op2 = hw2 7:4. */
static void t32_long_mul(uint32_t w, struct csdi_insn *o)
{
	uint32_t op1 = bits(w, 22, 20), op2 = bits(w, 7, 4);

	if ((op1 == 1 || op1 == 3) && op2 == 0xF) {
		dest_unpred(o, bits(w, 11, 8));     /* SDIV, UDIV */
		return;
	}
	if ((op2 == 0 && (op1 == 0 || op1 == 2 || op1 == 4 || op1 == 6)) ||
	    (op1 == 4 && (op2 & 0xC) == 0x8) ||          /* SMLALxy */
	    ((op1 == 4 || op1 == 5) && (op2 & 0xE) == 0xC) || /* SMLALD, SMLSLD */
	    (op1 == 6 && op2 == 6)) {                     /* UMAAL */
		apply(K_RD12_8, 0, w, o);
		return;
	}
	o->flags |= CSDI_INSNF_UNDEFINED;
}

static void t32(uint32_t addr, uint32_t w, int isa, struct csdi_insn *o)
{
	uint32_t hw1 = w >> 16, hw2 = w & 0xFFFF;

	switch (bits(hw1, 12, 9)) {
	case 0x4:                  /* 1110 100x: ld/st multiple, dual, exclusive, TBB */
		if (hw1 & 0x0040)
			t32_ldst_dual(w, o);
		else
			t32_ldm_stm(w, o);
		break;
	case 0x5:                  /* 1110 101x: data-processing (shifted register) */
		t32_dp(w, T32_DP_SHIFTED_OPS, o);
		break;
	case 0x6: case 0x7:        /* 1110 11xx: coprocessor */
	case 0xE: case 0xF:        /* 1111 11xx */
		coproc(w, CP_T32, o);
		break;
	case 0x8: case 0x9: case 0xA: case 0xB:   /* 1111 0xxx */
		if (hw2 & 0x8000) {
			uint32_t op1 = bits(hw2, 14, 12);
			uint32_t s = bits(hw1, 10, 10);
			uint32_t i1 = 1u ^ bits(hw2, 13, 13) ^ s, i2 = 1u ^ bits(hw2, 11, 11) ^ s;
			uint32_t off25 = (s << 24) | (i1 << 23) | (i2 << 22) |
			                 (bits(hw1, 9, 0) << 12) | (bits(hw2, 10, 0) << 1);
			if (op1 & 1) {
				/* B T4, BL: S:I1:I2:imm10:imm11:'0' */
				direct(o, addr + 4 + sext(off25, 25), isa);
				if (op1 & 4)
					o->flags |= CSDI_INSNF_LINK;
			} else if (op1 & 4) {
				/* BLX (immediate) T2: to ARM from Align(PC, 4);
				 * UNDEFINED with H = 1 and in ThumbEE */
				direct(o, ((addr + 4) & ~3u) + sext(off25 & ~3u, 25), CSD_ISA_ARM);
				o->flags |= CSDI_INSNF_LINK;
				if ((hw2 & 1) || isa == CSD_ISA_THUMBEE) {
					o->cls = CSDI_INSN_NORMAL;
					o->target = 0;
					o->target_isa = (uint8_t)isa;
					o->flags = CSDI_INSNF_UNDEFINED;
				}
			} else if ((hw1 & 0x0380) != 0x0380) {
				/* B<c> T3: S:J2:J1:imm6:imm11:'0' */
				uint32_t off21 = (s << 20) | (bits(hw2, 11, 11) << 19) |
				                 (bits(hw2, 13, 13) << 18) | (bits(hw1, 5, 0) << 12) |
				                 (bits(hw2, 10, 0) << 1);
				direct(o, addr + 4 + sext(off21, 21), isa);
				o->cond = (uint8_t)bits(hw1, 9, 6);
				o->flags |= CSDI_INSNF_COND;
			} else if ((w & 0x07F050E0u) == 0x03B00000u) {
				/* LEAVEX (op 0000) / ENTERX (0001): PTM counts these
				 * state changes as direct branches to the next
				 * instruction (IHI 0035B table 2.3). */
				direct(o, addr + 4, (hw2 & 0x10) ? CSD_ISA_THUMBEE : CSD_ISA_THUMB);
				if ((w & 0x000F2F0Fu) != 0x000F0F0Fu)
					o->flags |= CSDI_INSNF_UNPREDICTABLE;
			} else {
				unsigned kind = match(t32_misc_ctrl, NROWS(t32_misc_ctrl), w);
				/* BXJ has Rm in hw1 3:0, where apply() looks in 3:0 */
				apply(kind, addr, kind == K_BXJ ? w >> 16 : w, o);
				/* fixed fields: BXJ hw2 = 10(0)0 1111 0000 0000,
				 * SUBS pc, lr: Rn = 1110, hw2 = 10(0)0 1111 imm8 */
				if ((kind == K_BXJ && (hw2 & 0x2FFF) != 0x0F00) ||
				    (kind == K_ERET && ((hw2 & 0x2F00) != 0x0F00 || (hw1 & 0xF) != 0xE)))
					o->flags |= CSDI_INSNF_UNPREDICTABLE;
			}
		} else if (hw1 & 0x0200) {
			t32_dp_plain(w, o);
		} else {
			t32_dp(w, T32_DP_MODIMM_OPS, o);
		}
		break;
	case 0xC:                  /* 1111 100x: single loads/stores, SIMD ld/st */
		if (hw1 & 0x0010)
			t32_load(w, o);
		else if (hw1 & 0x0100)
			;              /* Advanced SIMD element or structure load/store */
		else if (bits(hw1, 7, 5) == 3 || bits(hw1, 7, 5) == 7 || bits(hw1, 3, 0) == 15)
			o->flags |= CSDI_INSNF_UNDEFINED;    /* store: no such size / PC base */
		break;
	case 0xD:                  /* 1111 101x */
		if ((hw1 & 0x0100) == 0) {
			/* A6.3.12 data-processing (register): hw2 15:12 = 1111 */
			if ((hw2 & 0xF000) != 0xF000)
				o->flags |= CSDI_INSNF_UNDEFINED;
			else
				dest_unpred(o, bits(hw2, 11, 8));
		} else if ((hw1 & 0x0080) == 0) {
			/* A6.3.16 multiply, multiply accumulate, absolute difference */
			if (hw2 & 0x00C0)
				o->flags |= CSDI_INSNF_UNDEFINED;
			else
				dest_unpred(o, bits(hw2, 11, 8));
		} else {
			t32_long_mul(w, o);
		}
		break;
	default:
		/* 0x0-0x3 are 16-bit; 11101 with hw1 bits 12:9 = 0x4-0x7 above */
		break;
	}
}

int csdi_isa_decode_t32(uint32_t addr, uint16_t hw1, uint16_t hw2, int isa,
                        struct csdi_insn *o)
{
	o->target = 0;
	o->flags = 0;
	o->isa = (uint8_t)isa;
	o->cls = CSDI_INSN_NORMAL;
	o->cond = CSDI_COND_AL;
	o->target_isa = (uint8_t)isa;
	if (hw1 < 0xE800u) {
		o->opcode = hw1;
		o->size = 2;
		t16(addr, hw1, isa, o);
		return 2;
	}
	o->opcode = ((uint32_t)hw1 << 16) | hw2;
	o->size = 4;
	t32(addr, o->opcode, isa, o);
	return 4;
}

int csdi_isa_decode(uint32_t addr, const uint8_t *code, size_t avail, int isa,
                    struct csdi_insn *out)
{
	if (!code || !out)
		return CSD_EINVAL;
	switch (isa) {
	case CSD_ISA_ARM:
		if (avail < 4) {
			out->size = 4;
			return CSD_ENOMAP;
		}
		csdi_isa_decode_a32(addr, (uint32_t)code[0] | (uint32_t)code[1] << 8 |
		                    (uint32_t)code[2] << 16 | (uint32_t)code[3] << 24, out);
		return 4;
	case CSD_ISA_THUMB:
	case CSD_ISA_THUMBEE: {
		uint16_t hw1;
		if (avail < 2) {
			out->size = 2;
			return CSD_ENOMAP;
		}
		hw1 = (uint16_t)(code[0] | code[1] << 8);
		if (hw1 >= 0xE800u && avail < 4) {
			out->size = 4;
			return CSD_ENOMAP;
		}
		return csdi_isa_decode_t32(addr, hw1,
		                           hw1 >= 0xE800u ? (uint16_t)(code[2] | code[3] << 8) : 0,
		                           isa, out);
	}
	case CSD_ISA_JAZELLE:
		return CSD_EUNSUPPORTED;
	default:
		return CSD_EINVAL;
	}
}

void csdi_insn_apply_it(struct csdi_insn *insn, uint8_t itstate)
{
	uint32_t op = insn->opcode;
	unsigned cond;

	if (insn->isa == CSD_ISA_ARM || !csdi_it_active(itstate))
		return;
	/* Forbidden inside an IT block: IT, CBZ/CBNZ, B<c> (T1 and T3 carry
	 * their own condition). */
	if ((insn->flags & (CSDI_INSNF_IT | CSDI_INSNF_COND)) ||
	    (insn->size == 2 && (op & 0xF500) == 0xB100))
		insn->flags |= CSDI_INSNF_UNPREDICTABLE;
	/* A PC write must be the last instruction of the block. */
	if (insn->cls != CSDI_INSN_NORMAL && !csdi_it_last(itstate))
		insn->flags |= CSDI_INSNF_UNPREDICTABLE;
	/* BKPT executes whatever the IT condition */
	if (insn->size == 2 && (op & 0xFF00) == 0xBE00)
		return;
	cond = csdi_it_cond(itstate);
	insn->cond = (uint8_t)cond;
	if (cond != CSDI_COND_AL)
		insn->flags |= CSDI_INSNF_COND;
	else
		insn->flags &= ~(uint32_t)CSDI_INSNF_COND;
}

/* ------------------------------------------------------------------------
 * Data transfers (csdi_isa_mem). First-match tables over the load/store
 * encoding spaces of the ARM ARM: A32 A5.3 (word and unsigned byte), A5.2.8
 * (extra load/store), A5.2.10 (synchronization primitives), A5.5 (load/store
 * multiple), B6.1 (SRS, RFE); T32 A6.2.4 (16-bit load/store single), A6.2.5
 * (misc: PUSH, POP), A6.3.5 (load/store multiple), A6.3.6 (dual, exclusive,
 * table branch), A6.3.7-A6.3.10 (single data items); VFP A7.6 (extension
 * register load/store, both instruction sets); coprocessor loads and
 * stores LDC/STC (A5.6, A5.7, A6.3.18); Advanced SIMD element and
 * structure loads and stores VLDn/VSTn (A7.7, both instruction sets).
 * ---------------------------------------------------------------------- */

/* How a row counts its transfers. */
enum mcount {
	MC_ONE = 1,
	MC_TWO = 2,
	MC_NONE,       /* not a data transfer (hints, VMOV, unallocated) */
	MC_LIST16,     /* one per bit of bits 15:0 (register list) */
	MC_LIST8,      /* one per bit of bits 7:0 */
	MC_LIST8_R,    /* bits 7:0 and bit 8 (LR for PUSH, PC for POP) */
	MC_VFP,        /* A7.6: from P, U, W, the size bit and imm8 */
	MC_NEON,       /* A7.7: VLDn / VSTn, from A, type, size and N */
	MC_COPROC,     /* LDC / STC: words, as many as the coprocessor says */
};

/* LDC / STC: the coprocessor decides how many words move (ARM ARM, LDC
 * and STC; IHI 0014 4.11.2: they are traced as other loads and stores);
 * csdec takes at most this many data packets as the instruction's. */
#define COPROC_MAX_WORDS 16

struct mrow {
	uint32_t mask, value;
	uint8_t dir, size, count, flags;
};

#define LD CSDI_MEM_LOAD
#define ST CSDI_MEM_STORE
#define SGN CSDI_MEMF_SIGNED
#define EXC CSDI_MEMF_EXCLUSIVE
#define COP CSDI_MEMF_COPROC

/* A32 with a condition other than 0b1111. */
static const struct mrow a32_mem[] = {
	/* A5.2.10 */
	{ 0x0FF000F0u, 0x01000090u, CSDI_MEM_SWAP, 4, MC_TWO, 0 },  /* SWP */
	{ 0x0FF000F0u, 0x01400090u, CSDI_MEM_SWAP, 1, MC_TWO, 0 },  /* SWPB */
	{ 0x0FF000F0u, 0x01800090u, ST, 4, MC_ONE, EXC },           /* STREX */
	{ 0x0FF000F0u, 0x01900090u, LD, 4, MC_ONE, EXC },           /* LDREX */
	{ 0x0FF000F0u, 0x01A00090u, ST, 4, MC_TWO, EXC },           /* STREXD */
	{ 0x0FF000F0u, 0x01B00090u, LD, 4, MC_TWO, EXC },           /* LDREXD */
	{ 0x0FF000F0u, 0x01C00090u, ST, 1, MC_ONE, EXC },           /* STREXB */
	{ 0x0FF000F0u, 0x01D00090u, LD, 1, MC_ONE, EXC },           /* LDREXB */
	{ 0x0FF000F0u, 0x01E00090u, ST, 2, MC_ONE, EXC },           /* STREXH */
	{ 0x0FF000F0u, 0x01F00090u, LD, 2, MC_ONE, EXC },           /* LDREXH */
	{ 0x0F0000F0u, 0x01000090u, 0, 0, MC_NONE, 0 },
	/* A5.2.8 */
	{ 0x0E1000F0u, 0x000000B0u, ST, 2, MC_ONE, 0 },             /* STRH, STRHT */
	{ 0x0E1000F0u, 0x001000B0u, LD, 2, MC_ONE, 0 },             /* LDRH, LDRHT */
	{ 0x0E1000F0u, 0x000000D0u, LD, 4, MC_TWO, 0 },             /* LDRD */
	{ 0x0E1000F0u, 0x001000D0u, LD, 1, MC_ONE, SGN },           /* LDRSB, LDRSBT */
	{ 0x0E1000F0u, 0x000000F0u, ST, 4, MC_TWO, 0 },             /* STRD */
	{ 0x0E1000F0u, 0x001000F0u, LD, 2, MC_ONE, SGN },           /* LDRSH, LDRSHT */
	/* A5.3 */
	{ 0x0E500000u, 0x04000000u, ST, 4, MC_ONE, 0 },             /* STR, STRT (immediate) */
	{ 0x0E500000u, 0x04100000u, LD, 4, MC_ONE, 0 },             /* LDR, LDRT */
	{ 0x0E500000u, 0x04400000u, ST, 1, MC_ONE, 0 },             /* STRB, STRBT */
	{ 0x0E500000u, 0x04500000u, LD, 1, MC_ONE, 0 },             /* LDRB, LDRBT */
	{ 0x0E500010u, 0x06000000u, ST, 4, MC_ONE, 0 },             /* (register) */
	{ 0x0E500010u, 0x06100000u, LD, 4, MC_ONE, 0 },
	{ 0x0E500010u, 0x06400000u, ST, 1, MC_ONE, 0 },
	{ 0x0E500010u, 0x06500000u, LD, 1, MC_ONE, 0 },
	/* A5.5 */
	{ 0x0E100000u, 0x08000000u, ST, 4, MC_LIST16, 0 },          /* STM*, PUSH */
	{ 0x0E100000u, 0x08100000u, LD, 4, MC_LIST16, 0 },          /* LDM*, POP */
	/* A7.6 (coprocessors 10 and 11) */
	{ 0x0E000E00u, 0x0C000A00u, 0, 0, MC_VFP, 0 },
	/* A5.6: MCRR, MRRC; P = U = W = 0 is unallocated; LDC, STC */
	{ 0x0FE00000u, 0x0C400000u, 0, 0, MC_NONE, 0 },
	{ 0x0FA00000u, 0x0C000000u, 0, 0, MC_NONE, 0 },
	{ 0x0E100000u, 0x0C100000u, LD, 4, MC_COPROC, COP },        /* LDC, LDCL */
	{ 0x0E100000u, 0x0C000000u, ST, 4, MC_COPROC, COP },        /* STC, STCL */
};

/* A32 unconditional space (condition 0b1111). */
static const struct mrow a32u_mem[] = {
	{ 0xFE500000u, 0xF8400000u, ST, 4, MC_TWO, 0 },             /* SRS */
	{ 0xFE500000u, 0xF8100000u, LD, 4, MC_TWO, 0 },             /* RFE */
	/* A5.7.1 / A7.7: Advanced SIMD element or structure load/store */
	{ 0xFF100000u, 0xF4000000u, 0, 0, MC_NEON, 0 },
	/* A5.7: MCRR2, MRRC2; unallocated; LDC2, STC2 */
	{ 0xFFE00000u, 0xFC400000u, 0, 0, MC_NONE, 0 },
	{ 0xFFA00000u, 0xFC000000u, 0, 0, MC_NONE, 0 },
	{ 0xFE100000u, 0xFC100000u, LD, 4, MC_COPROC, COP },        /* LDC2, LDC2L */
	{ 0xFE100000u, 0xFC000000u, ST, 4, MC_COPROC, COP },        /* STC2, STC2L */
};

/* 16-bit T32. */
static const struct mrow t16_mem[] = {
	{ 0xFE00u, 0x5000u, ST, 4, MC_ONE, 0 },                     /* STR (register) */
	{ 0xFE00u, 0x5200u, ST, 2, MC_ONE, 0 },                     /* STRH */
	{ 0xFE00u, 0x5400u, ST, 1, MC_ONE, 0 },                     /* STRB */
	{ 0xFE00u, 0x5600u, LD, 1, MC_ONE, SGN },                   /* LDRSB */
	{ 0xFE00u, 0x5800u, LD, 4, MC_ONE, 0 },                     /* LDR */
	{ 0xFE00u, 0x5A00u, LD, 2, MC_ONE, 0 },                     /* LDRH */
	{ 0xFE00u, 0x5C00u, LD, 1, MC_ONE, 0 },                     /* LDRB */
	{ 0xFE00u, 0x5E00u, LD, 2, MC_ONE, SGN },                   /* LDRSH */
	{ 0xF800u, 0x4800u, LD, 4, MC_ONE, 0 },                     /* LDR (literal) */
	{ 0xF800u, 0x6000u, ST, 4, MC_ONE, 0 },                     /* STR (immediate) */
	{ 0xF800u, 0x6800u, LD, 4, MC_ONE, 0 },
	{ 0xF800u, 0x7000u, ST, 1, MC_ONE, 0 },                     /* STRB (immediate) */
	{ 0xF800u, 0x7800u, LD, 1, MC_ONE, 0 },
	{ 0xF800u, 0x8000u, ST, 2, MC_ONE, 0 },                     /* STRH (immediate) */
	{ 0xF800u, 0x8800u, LD, 2, MC_ONE, 0 },
	{ 0xF800u, 0x9000u, ST, 4, MC_ONE, 0 },                     /* STR (SP relative) */
	{ 0xF800u, 0x9800u, LD, 4, MC_ONE, 0 },
	{ 0xFE00u, 0xB400u, ST, 4, MC_LIST8_R, 0 },                 /* PUSH */
	{ 0xFE00u, 0xBC00u, LD, 4, MC_LIST8_R, 0 },                 /* POP */
	{ 0xF800u, 0xC000u, ST, 4, MC_LIST8, 0 },                   /* STM */
	{ 0xF800u, 0xC800u, LD, 4, MC_LIST8, 0 },                   /* LDM */
};

/* 32-bit T32, as hw1 << 16 | hw2. */
static const struct mrow t32_mem[] = {
	/* A6.3.5 */
	{ 0xFFD00000u, 0xE8000000u, ST, 4, MC_TWO, 0 },             /* SRSDB */
	{ 0xFFD00000u, 0xE8100000u, LD, 4, MC_TWO, 0 },             /* RFEDB */
	{ 0xFFD00000u, 0xE8800000u, ST, 4, MC_LIST16, 0 },          /* STM(IA) */
	{ 0xFFD00000u, 0xE8900000u, LD, 4, MC_LIST16, 0 },          /* LDM(IA), POP.W */
	{ 0xFFD00000u, 0xE9000000u, ST, 4, MC_LIST16, 0 },          /* STMDB, PUSH.W */
	{ 0xFFD00000u, 0xE9100000u, LD, 4, MC_LIST16, 0 },          /* LDMDB */
	{ 0xFFD00000u, 0xE9800000u, ST, 4, MC_TWO, 0 },             /* SRSIA */
	{ 0xFFD00000u, 0xE9900000u, LD, 4, MC_TWO, 0 },             /* RFEIA */
	/* A6.3.6 */
	{ 0xFFF00000u, 0xE8400000u, ST, 4, MC_ONE, EXC },           /* STREX */
	{ 0xFFF00000u, 0xE8500000u, LD, 4, MC_ONE, EXC },           /* LDREX */
	{ 0xFFF000F0u, 0xE8C00040u, ST, 1, MC_ONE, EXC },           /* STREXB */
	{ 0xFFF000F0u, 0xE8C00050u, ST, 2, MC_ONE, EXC },           /* STREXH */
	{ 0xFFF000F0u, 0xE8C00070u, ST, 4, MC_TWO, EXC },           /* STREXD */
	{ 0xFFF000F0u, 0xE8D00000u, LD, 1, MC_ONE, 0 },             /* TBB */
	{ 0xFFF000F0u, 0xE8D00010u, LD, 2, MC_ONE, 0 },             /* TBH */
	{ 0xFFF000F0u, 0xE8D00040u, LD, 1, MC_ONE, EXC },           /* LDREXB */
	{ 0xFFF000F0u, 0xE8D00050u, LD, 2, MC_ONE, EXC },           /* LDREXH */
	{ 0xFFF000F0u, 0xE8D00070u, LD, 4, MC_TWO, EXC },           /* LDREXD */
	{ 0xFFE00000u, 0xE8C00000u, 0, 0, MC_NONE, 0 },
	{ 0xFE500000u, 0xE8400000u, ST, 4, MC_TWO, 0 },             /* STRD */
	{ 0xFE500000u, 0xE8500000u, LD, 4, MC_TWO, 0 },             /* LDRD */
	/* A6.3.10 */
	{ 0xFF700000u, 0xF8000000u, ST, 1, MC_ONE, 0 },             /* STRB, STRBT */
	{ 0xFF700000u, 0xF8200000u, ST, 2, MC_ONE, 0 },             /* STRH, STRHT */
	{ 0xFF700000u, 0xF8400000u, ST, 4, MC_ONE, 0 },             /* STR, STRT */
	/* A6.3.7 - A6.3.9: Rt = PC in the byte and halfword spaces is a
	 * preload hint (or unallocated) */
	{ 0xFE70F000u, 0xF810F000u, 0, 0, MC_NONE, 0 },
	{ 0xFE70F000u, 0xF830F000u, 0, 0, MC_NONE, 0 },
	{ 0xFF700000u, 0xF8100000u, LD, 1, MC_ONE, 0 },             /* LDRB, LDRBT */
	{ 0xFF700000u, 0xF9100000u, LD, 1, MC_ONE, SGN },           /* LDRSB, LDRSBT */
	{ 0xFF700000u, 0xF8300000u, LD, 2, MC_ONE, 0 },             /* LDRH, LDRHT */
	{ 0xFF700000u, 0xF9300000u, LD, 2, MC_ONE, SGN },           /* LDRSH, LDRSHT */
	{ 0xFF700000u, 0xF8500000u, LD, 4, MC_ONE, 0 },             /* LDR, LDRT */
	/* A7.6 */
	{ 0xFE000E00u, 0xEC000A00u, 0, 0, MC_VFP, 0 },
	/* A6.3.18 / A7.7: Advanced SIMD element or structure load/store */
	{ 0xFF100000u, 0xF9000000u, 0, 0, MC_NEON, 0 },
	/* A6.3.18: MCRR(2), MRRC(2); unallocated; LDC(2), STC(2) */
	{ 0xEFE00000u, 0xEC400000u, 0, 0, MC_NONE, 0 },
	{ 0xEFA00000u, 0xEC000000u, 0, 0, MC_NONE, 0 },
	{ 0xEE100000u, 0xEC100000u, LD, 4, MC_COPROC, COP },
	{ 0xEE100000u, 0xEC000000u, ST, 4, MC_COPROC, COP },
};

#undef LD
#undef ST
#undef SGN
#undef EXC
#undef COP

static const struct mrow *mem_match(const struct mrow *t, size_t n, uint32_t w)
{
	for (size_t i = 0; i < n; i++)
		if ((w & t[i].mask) == t[i].value)
			return &t[i];
	return NULL;
}

static unsigned popcount16(uint32_t v)
{
	unsigned n = 0;
	for (v &= 0xFFFFu; v; v &= v - 1)
		n++;
	return n;
}

unsigned csdi_isa_mem(const struct csdi_insn *in, struct csdi_mem *out)
{
	out->dir = CSDI_MEM_NONE;
	out->count = out->size = out->flags = 0;
	if (!in || (in->flags & CSDI_INSNF_UNDEFINED))
		return 0;
	const uint32_t w = in->opcode;
	const struct mrow *r;
	if (in->isa == CSD_ISA_ARM)
		r = (w >> 28) == 0xFu ? mem_match(a32u_mem, NROWS(a32u_mem), w) : mem_match(a32_mem, NROWS(a32_mem), w);
	else if (in->size == 2)
		r = mem_match(t16_mem, NROWS(t16_mem), w & 0xFFFFu);
	else
		r = mem_match(t32_mem, NROWS(t32_mem), w);
	if (!r || r->count == MC_NONE)
		return 0;
	unsigned count, size = r->size, dir = r->dir;
	switch (r->count) {
	case MC_LIST16:
		count = popcount16(w);
		break;
	case MC_LIST8:
		count = popcount16(w & 0xFFu);
		break;
	case MC_LIST8_R:
		count = popcount16(w & 0x1FFu);
		break;
	case MC_VFP: {
		/* P (24), U (23), W (21), L (20), doubleword (8), imm8 (7:0). */
		unsigned p = (w >> 24) & 1, u = (w >> 23) & 1, wb = (w >> 21) & 1, dbl = (w >> 8) & 1;
		if (!p && !u)
			return 0;         /* 64-bit VMOV to / from core registers, or unallocated */
		if (p && u && wb)
			return 0;         /* unallocated */
		size = dbl ? 8 : 4;
		if (p && !wb) {
			count = 1;        /* VLDR, VSTR */
		} else {
			/* VLDM, VSTM, VPUSH, VPOP: imm8 words from register d.
			 * No registers, or past the last one, is UNPREDICTABLE;
			 * an odd count of doubleword words is FLDMX/FSTMX
			 * (deprecated, layout IMPLEMENTATION DEFINED). */
			unsigned imm8 = w & 0xFFu, vd = (w >> 12) & 0xFu, dbit = (w >> 22) & 1;
			unsigned d = dbl ? dbit << 4 | vd : vd << 1 | dbit;
			count = dbl ? imm8 / 2 : imm8;
			if ((dbl && (imm8 & 1)) || count == 0 || d + count > 32 || (dbl && count > 16))
				return 0;
		}
		dir = (w >> 20) & 1 ? CSDI_MEM_LOAD : CSDI_MEM_STORE;
		break;
	}
	case MC_NEON: {
		/* A7.7: A (23), L (21), type (11:8) or size:N (11:8), size
		 * (7:6). The transfers are the architecture's memory
		 * accesses: one per element in memory order, except that
		 * VLD1 / VST1 of whole registers move each D register as a
		 * doubleword, as VLDM / VSTM do. */
		const unsigned a = (w >> 23) & 1, sz = (w >> 6) & 3;
		const unsigned d = ((w >> 22) & 1) << 4 | ((w >> 12) & 0xFu);
		unsigned last;      /* the last D register of the list */
		dir = (w >> 21) & 1 ? CSDI_MEM_LOAD : CSDI_MEM_STORE;
		if (!a) {
			/* Multiple structures: registers and structure size n
			 * by type; 1011-1111 are unallocated. */
			static const uint8_t regs_of[11] = { 4, 4, 4, 4, 3, 3, 3, 1, 2, 2, 2 };
			static const uint8_t n_of[11] = { 4, 4, 1, 2, 3, 3, 1, 1, 2, 2, 1 };
			const unsigned type = (w >> 8) & 0xFu;
			if (type > 10)
				return 0;
			/* types 0001, 0101, 1001 take every second register */
			last = d + (regs_of[type] - 1u) * ((type & 3) == 1 ? 2u : 1u);
			if (n_of[type] == 1) {
				count = regs_of[type];
				size = 8;
			} else {
				if (sz == 3)
					return 0;   /* UNDEFINED */
				size = 1u << sz;
				count = regs_of[type] * 8u / size;
			}
		} else {
			/* One lane (size at 11:10), or all lanes (11:10 = 11,
			 * loads only): one element per structure member. */
			const unsigned lsz = (w >> 10) & 3, n = ((w >> 8) & 3) + 1;
			if (lsz != 3) {
				size = 1u << lsz;
				/* index_align (7:4) picks every second register */
				const unsigned inc = lsz == 1 ? ((w >> 5) & 1) + 1 : lsz == 2 ? ((w >> 6) & 1) + 1 : 1;
				last = d + (n - 1) * inc;
			} else {
				if (dir != CSDI_MEM_LOAD)
					return 0;   /* UNDEFINED */
				if (sz == 3 && (n != 4 || !((w >> 4) & 1)))
					return 0;   /* UNDEFINED */
				size = sz == 3 ? 4 : 1u << sz;
				/* T (5): two registers (VLD1) or every second one */
				const unsigned t = (w >> 5) & 1;
				last = n == 1 ? d + t : d + (n - 1) * (t + 1);
			}
			count = n;
		}
		if (last > 31)
			return 0;   /* UNPREDICTABLE: past D31 */
		break;
	}
	case MC_COPROC:
		count = COPROC_MAX_WORDS;
		break;
	default:
		count = r->count;
		break;
	}
	if (!count)
		return 0;
	out->dir = (uint8_t)dir;
	out->count = (uint8_t)count;
	out->size = (uint8_t)size;
	out->flags = r->flags;
	return count;
}
