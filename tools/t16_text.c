/* t16_text.c - the text of a 16-bit T32 encoding as capstone 4 writes it
 * (see t16_text.h). Encodings: ARM DDI 0406C, A6.2 "16-bit Thumb
 * instruction encoding" and the tables under it. */
#include <string.h>

#include "t16_text.h"

const char *t16_reg_name(unsigned r)
{
	static const char *const names[16] = { "r0", "r1", "r2",  "r3",  "r4",  "r5", "r6", "r7",
					       "r8", "r9", "r10", "r11", "r12", "sp", "lr", "pc" };
	return names[r & 15];
}

static const char *const cond_names[14] = { "eq", "ne", "hs", "lo", "mi", "pl", "vs",
					    "vc", "hi", "ls", "ge", "lt", "gt", "le" };

/* A text being written into a fixed buffer (cut at its end; terminated
 * by t16_text() when done). */
struct out {
	char *p;
	size_t cap, len;
};

static inline void put(struct out *o, const char *s)
{
	while (*s && o->len + 1 < o->cap)
		o->p[o->len++] = *s++;
}

static void put_reg(struct out *o, unsigned r)
{
	put(o, t16_reg_name(r));
}

/* "#n": decimal up to 9, hex above (capstone's threshold). */
static void put_imm(struct out *o, uint32_t v)
{
	char b[16];
	size_t k = sizeof(b);
	b[--k] = 0;
	if (v <= 9) {
		b[--k] = (char)('0' + v);
	} else {
		do {
			b[--k] = "0123456789abcdef"[v & 15];
			v >>= 4;
		} while (v);
		b[--k] = 'x';
		b[--k] = '0';
	}
	b[--k] = '#';
	put(o, b + k);
}

/* "r, r, r": up to three registers. */
static void put_regs(struct out *o, int n, unsigned a, unsigned b, unsigned c)
{
	put_reg(o, a);
	if (n > 1) {
		put(o, ", ");
		put_reg(o, b);
	}
	if (n > 2) {
		put(o, ", ");
		put_reg(o, c);
	}
}

/* "{r0, r2, lr}": the registers of the 8-bit list, and `extra` (lr or
 * pc; 0 for none) when bit 8 is set. */
static void put_list(struct out *o, unsigned list, unsigned extra)
{
	int first = 1;
	put(o, "{");
	for (unsigned r = 0; r < 8; r++) {
		if (!((list >> r) & 1))
			continue;
		if (!first)
			put(o, ", ");
		put_reg(o, r);
		first = 0;
	}
	if (extra && ((list >> 8) & 1)) {
		if (!first)
			put(o, ", ");
		put_reg(o, extra);
	}
	put(o, "}");
}

/* "[rn, rm]", "[rn, #imm]" */
static void put_mem_reg(struct out *o, unsigned rn, unsigned rm)
{
	put(o, "[");
	put_regs(o, 2, rn, rm, 0);
	put(o, "]");
}

/* "[rn, #imm]"; "[rn]" for an offset of 0 where `short0`. */
static void put_mem_imm(struct out *o, unsigned rn, uint32_t imm, int short0)
{
	put(o, "[");
	put_reg(o, rn);
	if (imm || !short0) {
		put(o, ", ");
		put_imm(o, imm);
	}
	put(o, "]");
}

/* 1011 xxxx: miscellaneous 16-bit instructions (A6.2.5). IT is not one
 * of them here (t16_text.h). */
static int t16_misc(uint16_t hw, uint32_t addr, struct out *m, struct out *o)
{
	const unsigned op = (hw >> 5) & 0x7F, rd = hw & 7, rm = (hw >> 3) & 7;
	if ((op & 0x78) == 0x00) { /* ADD, SUB (SP plus immediate) */
		put(m, (hw >> 7) & 1 ? "sub" : "add");
		put(o, "sp, ");
		put_imm(o, (hw & 0x7F) * 4u);
		return 1;
	}
	if ((op & 0x28) == 0x08) { /* CBZ, CBNZ */
		put(m, (hw >> 11) & 1 ? "cbnz" : "cbz");
		put_reg(o, rd);
		put(o, ", ");
		put_imm(o, addr + 4 + (((hw >> 9) & 1) << 6 | ((hw >> 3) & 31) << 1));
		return 1;
	}
	if ((op & 0x78) == 0x10) { /* SXTH, SXTB, UXTH, UXTB */
		static const char *const names[4] = { "sxth", "sxtb", "uxth", "uxtb" };
		put(m, names[(hw >> 6) & 3]);
		put_regs(o, 2, rd, rm, 0);
		return 1;
	}
	if ((op & 0x70) == 0x20 || (op & 0x70) == 0x60) { /* PUSH, POP */
		const int pop = (hw >> 11) & 1;
		if (!(hw & 0x1FF))
			return 0;
		put(m, pop ? "pop" : "push");
		put_list(o, hw & 0x1FF, pop ? 15 : 14);
		return 1;
	}
	if ((hw & 0xFFF7) == 0xB650) { /* SETEND */
		put(m, "setend");
		put(o, (hw >> 3) & 1 ? "be" : "le");
		return 1;
	}
	if ((hw & 0xFFE8) == 0xB660) { /* CPS */
		put(m, (hw >> 4) & 1 ? "cpsid" : "cpsie");
		put(o, (hw & 7) ? "" : "none");
		if (hw & 4)
			put(o, "a");
		if (hw & 2)
			put(o, "i");
		if (hw & 1)
			put(o, "f");
		return 1;
	}
	if ((op & 0x78) == 0x50) { /* REV, REV16, REVSH */
		static const char *const names[4] = { "rev", "rev16", NULL, "revsh" };
		const char *name = names[(hw >> 6) & 3];
		if (!name)
			return 0;
		put(m, name);
		put_regs(o, 2, rd, rm, 0);
		return 1;
	}
	if ((op & 0x78) == 0x70) { /* BKPT */
		put(m, "bkpt");
		put_imm(o, hw & 0xFF);
		return 1;
	}
	if ((op & 0x78) == 0x78 && !(hw & 0xF)) { /* hints */
		static const char *const names[5] = { "nop", "yield", "wfe", "wfi", "sev" };
		const unsigned h = (hw >> 4) & 15;
		if (h < 5) {
			put(m, names[h]);
		} else {
			put(m, "hint");
			put_imm(o, h);
		}
		return 1;
	}
	return 0;
}

static int t16_write(uint16_t hw, uint32_t addr, struct out *m, struct out *o)
{
	const unsigned rd = hw & 7, rn = (hw >> 3) & 7, rm = (hw >> 6) & 7;
	const unsigned imm5 = (hw >> 6) & 31, imm8 = hw & 0xFF, r8 = (hw >> 8) & 7;

	if (hw >= 0xE800)
		return 0;
	switch (hw >> 11) {
	case 0x00: /* LSL (immediate); MOVS for a shift of 0 */
		put(m, imm5 ? "lsls" : "movs");
		put_regs(o, 2, rd, rn, 0);
		if (imm5) {
			put(o, ", ");
			put_imm(o, imm5);
		}
		return 1;
	case 0x01: /* LSR, ASR (immediate): 0 means 32 */
	case 0x02:
		put(m, (hw >> 11) == 1 ? "lsrs" : "asrs");
		put_regs(o, 2, rd, rn, 0);
		put(o, ", ");
		put_imm(o, imm5 ? imm5 : 32);
		return 1;
	case 0x03: /* ADDS / SUBS, register or 3-bit immediate */
		put(m, (hw >> 9) & 1 ? "subs" : "adds");
		put_regs(o, 2, rd, rn, 0);
		put(o, ", ");
		if ((hw >> 10) & 1)
			put_imm(o, rm);
		else
			put_reg(o, rm);
		return 1;
	case 0x04: /* MOVS, CMP, ADDS, SUBS (8-bit immediate) */
	case 0x05:
	case 0x06:
	case 0x07: {
		static const char *const names[4] = { "movs", "cmp", "adds", "subs" };
		put(m, names[(hw >> 11) & 3]);
		put_reg(o, r8);
		put(o, ", ");
		put_imm(o, imm8);
		return 1;
	}
	case 0x08:
		if (!((hw >> 10) & 1)) {
			/* Data-processing, two low registers */
			static const char *const names[16] = { "ands", "eors", "lsls", "lsrs", "asrs", "adcs",
							       "sbcs", "rors", "tst",  "rsbs", "cmp",  "cmn",
							       "orrs", "muls", "bics", "mvns" };
			const unsigned op = (hw >> 6) & 15;
			put(m, names[op]);
			if (op == 9) {         /* RSBS rd, rn, #0 */
				put_regs(o, 2, rd, rn, 0);
				put(o, ", #0");
			} else if (op == 13) { /* MULS rdm, rn, rdm */
				put_regs(o, 3, rd, rn, rd);
			} else {
				put_regs(o, 2, rd, rn, 0);
			}
			return 1;
		}
		/* Special data processing and branch and exchange */
		{
			const unsigned dn = (hw >> 4 & 8) | rd, r = (hw >> 3) & 15;
			switch ((hw >> 8) & 3) {
			case 0: /* ADD (register): SP forms written with three operands */
				put(m, "add");
				if (r == 13)
					put_regs(o, 3, dn, 13, dn);
				else if (dn == 13)
					put_regs(o, r == 13 ? 3 : 2, 13, r, r);
				else
					put_regs(o, 2, dn, r, 0);
				return 1;
			case 1:
				put(m, "cmp");
				put_regs(o, 2, dn, r, 0);
				return 1;
			case 2:
				put(m, "mov");
				put_regs(o, 2, dn, r, 0);
				return 1;
			default:
				if ((hw >> 7) & 1) {
					if (hw & 7)
						return 0;
					put(m, "blx");
				} else {
					put(m, "bx");
				}
				put_reg(o, r);
				return 1;
			}
		}
	case 0x09: /* LDR (literal) */
		put(m, "ldr");
		put_reg(o, r8);
		put(o, ", ");
		put_mem_imm(o, 15, imm8 * 4, 0);
		return 1;
	case 0x0A:
	case 0x0B: { /* Load/store, register offset */
		static const char *const names[8] = { "str", "strh", "strb", "ldrsb", "ldr", "ldrh", "ldrb", "ldrsh" };
		put(m, names[(hw >> 9) & 7]);
		put_reg(o, rd);
		put(o, ", ");
		put_mem_reg(o, rn, rm);
		return 1;
	}
	case 0x0C: /* STR, LDR, STRB, LDRB, STRH, LDRH (immediate) */
	case 0x0D:
	case 0x0E:
	case 0x0F:
	case 0x10:
	case 0x11: {
		static const char *const names[6] = { "str", "ldr", "strb", "ldrb", "strh", "ldrh" };
		static const unsigned scale[6] = { 4, 4, 1, 1, 2, 2 };
		const unsigned k = (hw >> 11) - 0x0C;
		put(m, names[k]);
		put_reg(o, rd);
		put(o, ", ");
		put_mem_imm(o, rn, imm5 * scale[k], 1);
		return 1;
	}
	case 0x12: /* STR, LDR (SP-relative) */
	case 0x13:
		put(m, (hw >> 11) & 1 ? "ldr" : "str");
		put_reg(o, r8);
		put(o, ", ");
		put_mem_imm(o, 13, imm8 * 4, 1);
		return 1;
	case 0x14: /* ADR */
		put(m, "adr");
		put_reg(o, r8);
		put(o, ", ");
		put_imm(o, imm8 * 4);
		return 1;
	case 0x15: /* ADD (SP plus immediate) */
		put(m, "add");
		put_regs(o, 2, r8, 13, 0);
		put(o, ", ");
		put_imm(o, imm8 * 4);
		return 1;
	case 0x16:
	case 0x17: /* Miscellaneous 16-bit instructions */
		return t16_misc(hw, addr, m, o);
	case 0x18: /* STM (an empty list decodes to nothing) */
		if (!imm8)
			return 0;
		put(m, "stm");
		put_reg(o, r8);
		put(o, "!, ");
		put_list(o, imm8, 0);
		return 1;
	case 0x19: /* LDM: writeback unless the base is loaded */
		if (!imm8)
			return 0;
		put(m, "ldm");
		put_reg(o, r8);
		put(o, (imm8 >> r8) & 1 ? ", " : "!, ");
		put_list(o, imm8, 0);
		return 1;
	case 0x1A:
	case 0x1B: { /* B<c>, UDF, SVC */
		const unsigned cond = (hw >> 8) & 15;
		if (cond == 14) {
			put(m, imm8 == 0xFE ? "trap" : "udf");
			if (imm8 != 0xFE)
				put_imm(o, imm8);
			return 1;
		}
		if (cond == 15) {
			put(m, "svc");
			put_imm(o, imm8);
			return 1;
		}
		put(m, "b");
		put(m, cond_names[cond]);
		put_imm(o, addr + 4 + (uint32_t)((int32_t)(int8_t)imm8 * 2));
		return 1;
	}
	default: /* 0x1C: B */
		put(m, "b");
		put_imm(o, addr + 4 + (uint32_t)(((int32_t)((uint32_t)(hw & 0x7FF) << 21) >> 20)));
		return 1;
	}
}

int t16_text(uint16_t hw, uint32_t addr, char *mn, size_t mncap, char *ops, size_t opscap)
{
	struct out m = { mn, mncap, 0 }, o = { ops, opscap, 0 };
	const int ok = t16_write(hw, addr, &m, &o);
	/* Nothing for an encoding that decodes to nothing. */
	if (!ok)
		m.len = o.len = 0;
	if (mncap)
		mn[m.len] = 0;
	if (opscap)
		ops[o.len] = 0;
	return ok;
}

uint32_t t16_text_hash(const char *mn, const char *ops)
{
	/* FNV-1a over "mnemonic\toperands". */
	uint32_t h = 2166136261u;
	for (; *mn; mn++)
		h = (h ^ (uint8_t)*mn) * 16777619u;
	h = (h ^ '\t') * 16777619u;
	for (; *ops; ops++)
		h = (h ^ (uint8_t)*ops) * 16777619u;
	return h;
}
