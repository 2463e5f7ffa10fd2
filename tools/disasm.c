/* disasm.c - capstone behind a small interface, so the listing builds and
 * works (minus mnemonics) without it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csdec.h"
#include "disasm.h"
#include "t16_text.h"

#ifdef CSD_HAVE_CAPSTONE
#include <capstone.h>

#include "dynlib.h"

/* capstone is loaded when a listing first needs it, not linked: loading
 * it applies some 77,000 relocations to its tables, which was a third of
 * the page faults of a whole `csdec decode` of a small capture that
 * prints no instruction. CSD_CAPSTONE_LIB is the library's file name
 * (tools.mk). Without it, the listing is as without capstone. */
static struct {
	cs_err (*open)(cs_arch, cs_mode, csh *);
	cs_err (*option)(csh, cs_opt_type, size_t);
	bool (*disasm_iter)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *);
	cs_insn *(*malloc)(csh);
	void (*free)(cs_insn *, size_t);
	cs_err (*close)(csh *);
	unsigned (*version)(int *, int *);
	int ok;
} cs;

static int cs_load(void)
{
	static struct dynlib lib = { CSD_CAPSTONE_LIB, NULL, 0, "" };
	if (lib.tried)
		return cs.ok;
	if (!dynlib_load(&lib))
		return 0;
	cs.open = (cs_err (*)(cs_arch, cs_mode, csh *))dynlib_sym(&lib, "cs_open");
	cs.option = (cs_err (*)(csh, cs_opt_type, size_t))dynlib_sym(&lib, "cs_option");
	cs.disasm_iter = (bool (*)(csh, const uint8_t **, size_t *, uint64_t *, cs_insn *))dynlib_sym(&lib, "cs_disasm_iter");
	cs.malloc = (cs_insn * (*)(csh)) dynlib_sym(&lib, "cs_malloc");
	cs.free = (void (*)(cs_insn *, size_t))dynlib_sym(&lib, "cs_free");
	cs.close = (cs_err (*)(csh *))dynlib_sym(&lib, "cs_close");
	cs.version = (unsigned (*)(int *, int *))dynlib_sym(&lib, "cs_version");
	cs.ok = cs.open && cs.option && cs.disasm_iter && cs.malloc && cs.free && cs.close && cs.version;
	return cs.ok;
}

struct disasm {
	csh arm;
	csh thumb;
	cs_insn *insn;      /* cs_malloc'd scratch for cs_disasm_iter */
	int arm_ok, thumb_ok;
	/* Capstone's texts of every 16-bit T32 instruction (for a version
	 * t16_text does not write), "mnemonic\toperands\0" one after another
	 * in narrow_text, found by hash: slot i holds a text's offset + 1 (0:
	 * empty) and its hash. NULL until built. */
	uint32_t *narrow_off, *narrow_hash;
	char *narrow_text;
	size_t narrow_len, narrow_cap;
	int narrow_built;
	/* The loaded capstone is the version t16_text writes the texts of. */
	int own_t16;
};

static int open_mode(csh *h, cs_mode mode)
{
	if (cs.open(CS_ARCH_ARM, mode, h) != CS_ERR_OK)
		return 0;
	/* r9-r12 as r-numbers, as DS-5 writes them (not sb, sl, fp, ip). */
	cs.option(*h, CS_OPT_SYNTAX, CS_OPT_SYNTAX_NOREGNAME);
	return 1;
}

/* ---- ARM's notation (as DS-5 writes it) where capstone differs ---- */

/* Where a 32-bit T32 instruction is written with ".w": only where a 16-bit
 * encoding of the same text exists (UAL: .W forces the wide encoding;
 * without it an assembler picks the narrow one). For the capstone version
 * t16_text writes, the texts' hashes are a table made at build time
 * (tools/build/t16_narrow_gen.c); for another, its texts of every 16-bit
 * encoding, written on first use. */
#include "t16_narrow.inc"

/* A 16-bit encoding whose text t16_text writes as mn, ops. */
static int t16_narrow_has(const char *mn, const char *ops)
{
	const uint32_t h = t16_text_hash(mn, ops);
	size_t lo = 0, hi = T16_NARROW_COUNT;
	while (lo < hi) {
		const size_t mid = lo + (hi - lo) / 2;
		if (t16_narrow_hash[mid] < h)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < T16_NARROW_COUNT && t16_narrow_hash[lo] == h; lo++) {
		char m[CS_MNEMONIC_SIZE], o[160];
		if (t16_text(t16_narrow_hw[lo], 0x1000, m, sizeof(m), o, sizeof(o)) && strcmp(m, mn) == 0 &&
		    strcmp(o, ops) == 0)
			return 1;
	}
	return 0;
}

/* Capstone's texts of every 16-bit encoding (another version than
 * t16_text's), in a hash table of NARROW_SLOTS. */
#define NARROW_SLOTS (1u << 17)

static int narrow_find(struct disasm *d, const char *mn, const char *ops, int insert)
{
	const uint32_t h = t16_text_hash(mn, ops);
	const size_t mlen = strlen(mn);
	for (uint32_t i = 0; i < NARROW_SLOTS; i++) {
		const uint32_t k = (h + i) & (NARROW_SLOTS - 1);
		if (!d->narrow_off[k]) {
			if (insert) {
				const size_t olen = strlen(ops), need = mlen + olen + 2;
				if (d->narrow_len + need > d->narrow_cap) {
					size_t cap = d->narrow_cap ? 2 * d->narrow_cap : 1u << 20;
					while (cap < d->narrow_len + need)
						cap *= 2;
					char *t = cap < UINT32_MAX ? realloc(d->narrow_text, cap) : NULL;
					if (!t)
						return 0;
					d->narrow_text = t;
					d->narrow_cap = cap;
				}
				char *t = d->narrow_text + d->narrow_len;
				memcpy(t, mn, mlen);
				t[mlen] = '\t';
				memcpy(t + mlen + 1, ops, olen + 1);
				d->narrow_off[k] = (uint32_t)d->narrow_len + 1;
				d->narrow_hash[k] = h;
				d->narrow_len += need;
			}
			return 0;
		}
		const char *t = d->narrow_text + d->narrow_off[k] - 1;
		if (d->narrow_hash[k] == h && strncmp(t, mn, mlen) == 0 && t[mlen] == '\t' && strcmp(t + mlen + 1, ops) == 0)
			return 1;
	}
	return 0;
}

static int is_it(uint32_t hw)
{
	return (hw & 0xFF00u) == 0xBF00u && (hw & 0xFu) != 0;
}

static void build_narrow(struct disasm *d)
{
	d->narrow_off = calloc(NARROW_SLOTS, sizeof(*d->narrow_off));
	d->narrow_hash = malloc(NARROW_SLOTS * sizeof(*d->narrow_hash));
	if (!d->narrow_off || !d->narrow_hash) {
		free(d->narrow_off);
		free(d->narrow_hash);
		d->narrow_off = d->narrow_hash = NULL;
		return;
	}
	for (uint32_t hw = 0; hw < 0xE800u; hw++) {
		/* IT would put the handle into an IT block; it is never narrow-vs-wide anyway. */
		if (is_it(hw))
			continue;
		uint8_t b[2] = { (uint8_t)hw, (uint8_t)(hw >> 8) };
		const uint8_t *code = b;
		size_t n = 2;
		uint64_t a = 0x1000;
		if (cs.disasm_iter(d->thumb, &code, &n, &a, d->insn))
			narrow_find(d, d->insn->mnemonic, d->insn->op_str, 1);
	}
}

/* A 16-bit encoding written as mn, ops. */
static int narrow_text(struct disasm *d, const char *mn, const char *ops)
{
	if (d->own_t16)
		return t16_narrow_has(mn, ops);
	if (!d->narrow_built) {
		d->narrow_built = 1;
		build_narrow(d);
	}
	return d->narrow_off && narrow_find(d, mn, ops, 0);
}

static int has_narrow(struct disasm *d, const char *mn, const char *ops)
{
	if (narrow_text(d, mn, ops))
		return 1;
	/* The 16-bit data-processing forms are written with two operands
	 * when the destination is also the first source: "ands r0, r1". */
	const char *c1 = strchr(ops, ',');
	if (c1 && c1[1] == ' ') {
		size_t n = (size_t)(c1 - ops);
		if (strncmp(ops, c1 + 2, n) == 0 && c1[2 + n] == ',') {
			char two[192];
			snprintf(two, sizeof(two), "%.*s%s", (int)n, ops, c1 + 2 + n);
			return narrow_text(d, mn, two);
		}
	}
	return 0;
}

/* Encodable as an A32 modified immediate (8 bits rotated right by an even amount). */
static int a32_imm_ok(uint32_t v)
{
	for (unsigned r = 0; r < 32; r += 2)
		if (((v << r) | (r ? v >> (32 - r) : 0)) <= 0xFFu)
			return 1;
	return 0;
}

/* Encodable as a T32 modified immediate (ThumbExpandImm). */
static int t32_imm_ok(uint32_t v)
{
	uint32_t b = v & 0xFFu;
	if (v <= 0xFFu || v == (b | b << 16) || v == (b << 8 | b << 24) || v == b * 0x01010101u)
		return 1;
	for (unsigned r = 8; r < 32; r++) {
		uint32_t x = (v << r) | (v >> (32 - r));
		if (x >= 0x80u && x <= 0xFFu)
			return 1;
	}
	return 0;
}

/* The number after the last '#' of an operand string. */
static int last_imm(const char *ops, uint32_t *v)
{
	const char *h = strrchr(ops, '#');
	if (!h)
		return 0;
	char *end;
	*v = (uint32_t)strtoul(h + 1, &end, 0);
	return end != h + 1;
}

static int ends_with(const char *s, const char *t)
{
	size_t n = strlen(s), m = strlen(t);
	return n >= m && strcmp(s + n - m, t) == 0;
}

/* dst = the first n bytes of src and then all of tail (NULL: nothing),
 * cut to cap (> 0); what snprintf("%.*s%s") did, in a few instructions
 * rather than several hundred, on every instruction listed. */
static void text_join(char *dst, size_t cap, const char *src, size_t n, const char *tail)
{
	size_t t = tail ? strlen(tail) : 0;
	if (n > cap - 1)
		n = cap - 1;
	if (t > cap - 1 - n)
		t = cap - 1 - n;
	memmove(dst, src, n);
	if (t)
		memcpy(dst + n, tail, t);
	dst[n + t] = 0;
}

/*
 * Rewrite capstone's text the way ARM's own disassembler (DS-5) writes it:
 * single-register LDR/STR with SP writeback are POP/PUSH; MOVW/ADDW/SUBW
 * are MOV/ADD/SUB when the constant has no modified-immediate encoding
 * (an assembler then picks the W form itself); ADDW/SUBW of the PC are
 * ADR; SUBS PC, LR, #0 is not ERET on these cores; condition codes CS/CC
 * rather than HS/LO; "vldm"/"vstm" without the default IA; ".w" only
 * where it matters (see has_narrow(); branches: forward, or backward
 * within reach of the 16-bit encoding).
 */
static void arm_style(struct disasm *d, int thumb, uint64_t addr, uint32_t op, uint32_t size, char *mn, size_t mncap,
		      char *ops, size_t opscap)
{
	uint32_t hw1 = op >> 16, hw2 = op & 0xFFFFu, v;
	char base[CS_MNEMONIC_SIZE + 8];
	int wide = ends_with(mn, ".w");
	text_join(base, sizeof(base), mn, strlen(mn) - (wide ? 2 : 0), NULL);

	if (thumb && size == 4 && op == 0xF3DE8F00u) {
		snprintf(base, sizeof(base), "subs");
		snprintf(ops, opscap, "pc, lr, #0");
		wide = 0;
	} else if (thumb && size == 4 && (hw1 == 0xF85Du || hw1 == 0xF84Du) &&
		   (hw2 & 0x0FFFu) == (hw1 == 0xF85Du ? 0x0B04u : 0x0D04u)) {
		snprintf(base, sizeof(base), "%s", hw1 == 0xF85Du ? "pop" : "push");
		snprintf(ops, opscap, "{%s}", t16_reg_name(hw2 >> 12));
		wide = 1;
	} else if (!thumb && ((op & 0x0FFF0FFFu) == 0x049D0004u || (op & 0x0FFF0FFFu) == 0x052D0004u)) {
		int pop = (op & 0x0FFF0FFFu) == 0x049D0004u;
		/* keep the condition capstone appended to ldr/str */
		snprintf(base, sizeof(base), "%s%.2s", pop ? "pop" : "push", strlen(mn) > 3 ? mn + 3 : "");
		snprintf(ops, opscap, "{%s}", t16_reg_name(op >> 12));
	} else if ((strcmp(base, "addw") == 0 || strcmp(base, "subw") == 0) && strncmp(ops, "pc, ", 4) != 0 &&
		   strstr(ops, ", pc, #") && last_imm(ops, &v)) {
		/* ADR: the address is Align(PC, 4) +/- imm. */
		char rd[8];
		snprintf(rd, sizeof(rd), "%.*s", (int)strcspn(ops, ","), ops);
		uint32_t pc = (uint32_t)((addr + 4) & ~UINT64_C(3));
		uint32_t target = base[0] == 'a' ? pc + v : pc - v;
		snprintf(base, sizeof(base), "adr");
		snprintf(ops, opscap, "%s, #0x%x", rd, target);
		wide = mn[0] == 'a';
	} else if ((strcmp(base, "movw") == 0 || strcmp(base, "addw") == 0 || strcmp(base, "subw") == 0) &&
		   last_imm(ops, &v) && !(thumb ? t32_imm_ok(v) : a32_imm_ok(v))) {
		base[3] = 0;
	}

	size_t bl = strlen(base);
	if (bl > 2 && (ends_with(base, "lo") || ends_with(base, "hs")))
		memcpy(base + bl - 2, base[bl - 2] == 'l' ? "cc" : "cs", 2);
	if (strcmp(base, "vldmia") == 0 || strcmp(base, "vstmia") == 0)
		base[4] = 0;

	if (wide && thumb && size == 4 && strcmp(base, "adr") != 0) {
		int is_b = (hw1 & 0xF800u) == 0xF000u && ((hw2 & 0xD000u) == 0x9000u || (hw2 & 0xD000u) == 0x8000u);
		if (is_b && last_imm(ops, &v)) {
			/* Addresses are 32-bit: a record's wider one is cut as the
			 * core would (and cannot overflow the difference). */
			uint32_t pc = (uint32_t)addr;
			int64_t off = (int64_t)v - ((int64_t)pc + 4);
			int cond = (hw2 & 0xD000u) == 0x8000u;
			wide = v > pc || off > (cond ? -256 : -2048);
		} else {
			wide = has_narrow(d, base, ops);
		}
	}
	text_join(mn, mncap, base, strlen(base), wide ? ".w" : NULL);
}

/* IT{x{y{z}}} <firstcond>, written here so that capstone never enters an
 * IT block: each instruction is shown on its own, as DS-5 does. */
static void format_it(uint32_t hw, char *mn, size_t mncap, char *ops, size_t opscap)
{
	static const char *const cond[16] = { "eq", "ne", "cs", "cc", "mi", "pl", "vs", "vc",
					      "hi", "ls", "ge", "lt", "gt", "le", "al", "nv" };
	unsigned first = (hw >> 4) & 15, mask = hw & 15;
	char t[8] = "it";
	size_t k = 2;
	/* mask bits 3..1 above the trailing 1 say T (equal to firstcond[0]) or E */
	for (unsigned bit = 3; bit > 0 && (mask & ((1u << bit) - 1)); bit--)
		t[k++] = ((mask >> bit) & 1) == (first & 1) ? 't' : 'e';
	t[k] = 0;
	snprintf(mn, mncap, "%s", t);
	snprintf(ops, opscap, "%s", cond[first]);
}

struct disasm *disasm_new(void)
{
	if (!cs_load())
		return NULL;
	struct disasm *d = calloc(1, sizeof(*d));
	if (!d)
		return NULL;
	d->arm_ok = open_mode(&d->arm, CS_MODE_ARM);
	d->thumb_ok = open_mode(&d->thumb, CS_MODE_THUMB);
	if (d->arm_ok)
		d->insn = cs.malloc(d->arm);
	if (!d->arm_ok || !d->thumb_ok || !d->insn) {
		disasm_free(d);
		return NULL;
	}
	/* The 16-bit T32 texts of the capstone version test_t16_text checks
	 * are written without it (capstone takes several times as long); a
	 * test knob has capstone write them, as for another version
	 * (test_listing: the same listing either way). */
	int major = 0, minor = 0;
	cs.version(&major, &minor);
	const char *knob = getenv("CSD_TEST_T16_TEXT");
	d->own_t16 = major == T16_CAPSTONE_MAJOR && minor == T16_CAPSTONE_MINOR && !(knob && strcmp(knob, "capstone") == 0);
	return d;
}

void disasm_free(struct disasm *d)
{
	if (!d)
		return;
	free(d->narrow_off);
	free(d->narrow_hash);
	free(d->narrow_text);
	if (d->insn)
		cs.free(d->insn, 1);
	if (d->arm_ok)
		cs.close(&d->arm);
	if (d->thumb_ok)
		cs.close(&d->thumb);
	free(d);
}

int disasm_insn(struct disasm *d, int isa, uint64_t addr, uint32_t opcode, uint32_t size, char *mnemonic,
		size_t mnemonic_cap, char *operands, size_t operands_cap)
{
	uint8_t bytes[4];
	size_t n;
	csh h;
	if (mnemonic_cap)
		mnemonic[0] = 0;
	if (operands_cap)
		operands[0] = 0;
	if (!d)
		return -1;
	/* Memory order: A32 words and T32 halfwords are little-endian, the
	 * first halfword of a 32-bit T32 instruction comes first. */
	if (isa == CSD_ISA_ARM && size == 4) {
		h = d->arm;
		for (int i = 0; i < 4; i++)
			bytes[i] = (uint8_t)(opcode >> (8 * i));
		n = 4;
	} else if ((isa == CSD_ISA_THUMB || isa == CSD_ISA_THUMBEE) && (size == 2 || size == 4)) {
		h = d->thumb;
		if (size == 2 && is_it(opcode)) {
			format_it(opcode, mnemonic, mnemonic_cap, operands, operands_cap);
			return 0;
		}
		uint16_t hw[2] = { (uint16_t)(size == 4 ? opcode >> 16 : opcode), (uint16_t)opcode };
		for (size_t i = 0; i < size / 2; i++) {
			bytes[2 * i] = (uint8_t)hw[i];
			bytes[2 * i + 1] = (uint8_t)(hw[i] >> 8);
		}
		n = size;
	} else {
		return -1;
	}
	char mn[CS_MNEMONIC_SIZE + 8], ops[160 + 16];
	/* (t16_text takes 32-bit addresses: a wider one goes to capstone.) */
	if (!(h == d->thumb && size == 2 && d->own_t16 && addr <= UINT32_MAX &&
	      t16_text((uint16_t)opcode, (uint32_t)addr, mn, sizeof(mn), ops, sizeof(ops)))) {
		const uint8_t *code = bytes;
		uint64_t a = addr;
		if (!cs.disasm_iter(h, &code, &n, &a, d->insn) || d->insn->size != size)
			return -1;
		text_join(mn, sizeof(mn), d->insn->mnemonic, strlen(d->insn->mnemonic), NULL);
		text_join(ops, sizeof(ops), d->insn->op_str, strlen(d->insn->op_str), NULL);
	}
	arm_style(d, h == d->thumb, addr, opcode, size, mn, sizeof(mn), ops, sizeof(ops));
	if (mnemonic_cap)
		text_join(mnemonic, mnemonic_cap, mn, strlen(mn), NULL);
	if (operands_cap)
		text_join(operands, operands_cap, ops, strlen(ops), NULL);
	return 0;
}

#else /* no capstone */

struct disasm *disasm_new(void)
{
	return NULL;
}

void disasm_free(struct disasm *d)
{
	(void)d;
}

int disasm_insn(struct disasm *d, int isa, uint64_t addr, uint32_t opcode, uint32_t size, char *mnemonic,
		size_t mnemonic_cap, char *operands, size_t operands_cap)
{
	(void)d;
	(void)isa;
	(void)addr;
	(void)opcode;
	(void)size;
	if (mnemonic_cap)
		mnemonic[0] = 0;
	if (operands_cap)
		operands[0] = 0;
	return -1;
}

#endif
