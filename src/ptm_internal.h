/* ptm_internal.h - what the PTM (PFT 1.0 / 1.1) packet decoder and encoder
 * share: packet header values, the configuration they derive from the
 * registers, and the address / timestamp arithmetic both sides must agree
 * on (internal). Encodings follow ARM IHI 0035B chapter 4. */
#ifndef CSD_PTM_INTERNAL_H
#define CSD_PTM_INTERNAL_H

#include <stdint.h>

#include "csdec.h"

/* Header bytes (IHI 0035B table 4.1). Atoms are b1xxxxxx0, branch
 * addresses bxxxxxxx1; everything else is one exact value. */
#define PTM_HDR_ASYNC      0x00
#define PTM_HDR_ISYNC      0x08
#define PTM_HDR_TRIGGER    0x0C
#define PTM_HDR_VMID       0x3C
#define PTM_HDR_TIMESTAMP  0x42 /* 0x46 with the R (clock changed) bit */
#define PTM_HDR_TS_R       0x04
#define PTM_HDR_IGNORE     0x66
#define PTM_HDR_CONTEXT_ID 0x6E
#define PTM_HDR_WAYPOINT   0x72
#define PTM_HDR_ERET       0x76

/* Register bits the packet layer reads (see the top of ptm_pkt.c). */
#define PTM_ETMCR_CYCLE_ACC   (1u << 12)
#define PTM_ETMCR_CID_SHIFT   14
#define PTM_ETMCCER_TS_BINARY (1u << 28)
#define PTM_ETMCCER_TS_64BIT  (1u << 29)

/* What the registers mean for the byte format. */
struct csdi_ptm_cfg {
	uint8_t cycle_acc;  /* ETMCR[12]: cycle counts in atoms, branches, I-syncs, timestamps */
	uint8_t cid_bytes;  /* ETMCR[15:14]: 0, 1, 2 or 4 context ID bytes */
	uint8_t ts_bits;    /* 48 or 64: ETMCCER[29], PFT 1.1 only */
	uint8_t ts_gray;    /* timestamps Gray coded: ETMCCER[28] clear, or PFT 1.0 */
	uint8_t pft_minor;  /* ETMIDR[7:4]: 0 = PFT 1.0, 1 = PFT 1.1 */
};

/* Derive the format from a caller's configuration (which may be an older,
 * shorter struct). Returns CSD_OK or CSD_EINVAL. */
int csdi_ptm_cfg_init(const struct csd_trace_config *cfg, struct csdi_ptm_cfg *out);

/*
 * Address bytes: byte 0 carries 6 address bits in [6:1] (bit 0 is the
 * branch header bit); middle bytes 7 bits; the last byte of a 2-4 byte
 * address 6 bits (its bit 6 flags following information bytes); a fifth
 * byte 3 (ARM), 4 (Thumb) or 5 (Jazelle) bits. The bits start at bit
 * `shift` of the address: 2 for ARM, 1 for Thumb, 0 for Jazelle.
 */
static inline unsigned ptm_addr_shift(unsigned isa)
{
	switch (isa) {
	case CSD_ISA_ARM: return 2;
	case CSD_ISA_JAZELLE: return 0;
	default: return 1; /* Thumb, ThumbEE, and unknown before the first I-sync */
	}
}

/* Address bits (counted from bit 0, alignment bits included) that an
 * address of k bytes (1..5) replaces. */
static inline unsigned ptm_addr_span(unsigned isa, unsigned k)
{
	static const unsigned payload[5] = { 6, 12, 19, 26, 0 };
	if (k >= 5)
		return 32;
	return payload[k - 1] + ptm_addr_shift(isa);
}

/* Replace the low `span` bits of `prev` by those of `val`. */
static inline uint32_t ptm_addr_merge(uint32_t prev, uint32_t val, unsigned span)
{
	uint32_t mask = span >= 32 ? 0xFFFFFFFFu : ((1u << span) - 1u);
	return (prev & ~mask) | (val & mask);
}

/* Timestamp bits supplied by n timestamp bytes (7 each; the last possible
 * byte holds the remaining 6 or 8 bits). */
static inline unsigned ptm_ts_max_bytes(unsigned ts_bits)
{
	return ts_bits == 64 ? 9 : 7;
}

static inline unsigned ptm_ts_span(unsigned ts_bits, unsigned n)
{
	return n >= ptm_ts_max_bytes(ts_bits) ? ts_bits : 7 * n;
}

static inline uint64_t ptm_ts_mask(unsigned bits)
{
	return bits >= 64 ? ~0ull : ((1ull << bits) - 1u);
}

static inline uint64_t ptm_bin_to_gray(uint64_t v)
{
	return v ^ (v >> 1);
}

static inline uint64_t ptm_gray_to_bin(uint64_t g)
{
	for (unsigned s = 1; s < 64; s <<= 1)
		g ^= g >> s;
	return g;
}

/*
 * The cycle count field at p (n bytes available, n >= 1), IHI 0035B 4.3.2:
 * the first byte holds count[3:0] in bits 5:2 and a continuation bit 6,
 * up to four more bytes 7 bits each (10:4, 17:11, ...) with continuation
 * bit 7. Its length (1-5) with *count set; 0 if it runs past the n bytes;
 * -5 if the fifth byte says more follow (the 32 bits are complete). The
 * one reader of the field: atom, branch, I-sync and timestamp packets of
 * the general parser, csd_ptm_pkt_next's atom path, the brief loop and
 * the flow decoder's atom run (csdi_ptm_atom_packet).
 */
static inline __attribute__((always_inline)) int csdi_ptm_cycle_count(const uint8_t *p, size_t n, uint32_t *count)
{
	uint32_t c = (p[0] >> 2) & 0xF;
	int len = 1;
	if (p[0] & 0x40) {
		uint8_t b;
		do {
			if (len == 5)
				return -5;
			if ((size_t)len >= n)
				return 0;
			b = p[len];
			c |= (uint32_t)(b & 0x7F) << (4 + 7 * (len - 1));
			len++;
		} while (b & 0x80);
	}
	*count = c;
	return len;
}

/*
 * The cycle count field's word form, for a reader holding the packet in a
 * little-endian word: c holds the field's first two bytes (byte 0 in bits
 * 7:0). csdi_ptm_cycle_count()'s meaning for a count of one or two bytes:
 * its length with *count set; 0 for a longer one (csdi_ptm_cycle_count()
 * then reads it). No loop: the brief loop's branches, where TC2's counts
 * often take a second byte.
 */
static inline __attribute__((always_inline)) unsigned csdi_ptm_cycle_count_word(uint32_t c, uint32_t *count)
{
	uint32_t cc = c >> 2 & 0xF;
	unsigned len = 1;
	if (c & 0x40) {
		const uint32_t c1 = c >> 8 & 0xFF;
		if (c1 & 0x80)
			return 0;
		cc |= (c1 & 0x7F) << 4;
		len++;
	}
	*count = cc;
	return len;
}

/*
 * Branch address and waypoint update address field (IHI 0035B chapter
 * 4): 1-5 bytes, read by csdi_ptm_address() a byte at a time and by
 * csdi_ptm_branch_word() eight bytes at a time; both take a fifth byte's
 * meaning from csdi_ptm_addr_fifth() and four bytes' payload from the
 * layout ptm_addr_span() describes.
 */

/* The payload bits of address bytes 0-3 held in a little-endian word lo,
 * every byte's bits in place (a last byte's bit 6 must be clear, bytes
 * past the last are cut off by the caller's mask). */
static inline uint32_t csdi_ptm_addr_payload_word(uint32_t lo)
{
	return (lo >> 1 & 0x3Fu) | (lo >> 2 & 0x1FC0u) | (lo >> 3 & 0xFE000u) | (lo >> 4 & 0x7F00000u);
}

/* The fifth address byte: 0 E 1 a a a a a (Jazelle), 0 E 0 1 a a a a
 * (Thumb, ThumbEE if cur_isa is), 0 E 0 0 1 a a a (ARM). Its payload bits
 * put in place into *v and the instruction set into *isa; 0 for the
 * reserved encoding. */
static inline int csdi_ptm_addr_fifth(uint8_t last, unsigned cur_isa, uint32_t *v, unsigned *isa)
{
	if (last & 0x20) {
		*isa = CSD_ISA_JAZELLE;
		*v |= (uint32_t)(last & 0x1F) << 27;
	} else if (last & 0x10) {
		*isa = cur_isa == CSD_ISA_THUMBEE ? CSD_ISA_THUMBEE : CSD_ISA_THUMB;
		*v |= (uint32_t)(last & 0x0F) << 27;
	} else if (last & 0x08) {
		*isa = CSD_ISA_ARM;
		*v |= (uint32_t)(last & 0x07) << 27;
	} else {
		return 0;
	}
	return 1;
}

/* Result of reading the address bytes shared by branch address and
 * waypoint update packets. */
struct csdi_ptm_addr_field {
	unsigned bytes;     /* 1..5 */
	unsigned isa;       /* instruction set the bits are in */
	int isa_stated;     /* a fifth byte named it */
	int info_follows;   /* bit 6 of a last byte of 2..5 */
	uint32_t addr;      /* merged address */
};

/* Read 1..5 address bytes starting at p[0] (whose bit 0 is not address).
 * cur_isa is the instruction set before the packet. Returns the bytes
 * used, 0 if they run past n, or -5 with *err set. */
static inline int csdi_ptm_address(const uint8_t *p, size_t n, unsigned cur_isa, uint32_t prev,
				   struct csdi_ptm_addr_field *a, const char **err)
{
	unsigned k = 1;
	while (p[k - 1] & 0x80) {
		if (k == 5) {
			*err = "address: continuation bit set in the fifth byte";
			return -5;
		}
		if (k >= n)
			return 0;
		k++;
	}
	const uint8_t last = p[k - 1];
	uint32_t v = (p[0] >> 1) & 0x3F;
	unsigned isa = cur_isa;
	a->isa_stated = 0;
	a->info_follows = k > 1 && (last & 0x40);
	if (k < 5) {
		for (unsigned i = 1; i < k; i++) {
			uint32_t bits = (i == k - 1) ? (p[i] & 0x3Fu) : (p[i] & 0x7Fu);
			v |= bits << (6 + 7 * (i - 1));
		}
	} else {
		for (unsigned i = 1; i < 4; i++)
			v |= (uint32_t)(p[i] & 0x7F) << (6 + 7 * (i - 1));
		if (!csdi_ptm_addr_fifth(last, cur_isa, &v, &isa)) {
			*err = "address: reserved instruction set encoding in the fifth byte";
			return -5;
		}
		a->isa_stated = 1;
	}
	unsigned shift = ptm_addr_shift(isa);
	a->bytes = k;
	a->isa = isa;
	a->addr = ptm_addr_merge(prev, (uint32_t)((uint64_t)v << shift), ptm_addr_span(isa, k));
	return (int)k;
}

/* An I-sync packet's address word and information byte (IHI 0035B
 * chapter 4; information byte x Reason[1:0] J NS AltIS Hyp x), read by the
 * general parser and the brief loop. Returns 0 for a reserved combination
 * of J, T and AltIS. */
struct csdi_ptm_isync {
	uint32_t addr;
	uint8_t isa, reason, ns, hyp, altis;
};
static inline int csdi_ptm_isync_fields(uint32_t word, uint8_t info, struct csdi_ptm_isync *y)
{
	const int j = (info >> 4) & 1, t = word & 1, altis = (info >> 2) & 1;
	unsigned isa;
	if (j)
		isa = CSD_ISA_JAZELLE;
	else if (t)
		isa = altis ? CSD_ISA_THUMBEE : CSD_ISA_THUMB;
	else
		isa = CSD_ISA_ARM;
	if (altis && isa != CSD_ISA_THUMBEE)
		return 0;
	y->isa = (uint8_t)isa;
	/* In Jazelle state the T bit position is address bit 0. */
	y->addr = isa == CSD_ISA_JAZELLE ? word : (word & ~1u);
	y->reason = (info >> 5) & 3;
	y->ns = (info >> 3) & 1;
	y->hyp = (info >> 1) & 1;
	y->altis = (uint8_t)altis;
	return 1;
}

#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define CSDI_PTM_BRANCH_WORD 1
/* Address bits a branch address packet of 1-4 address bytes replaces:
 * [instruction set & 7][address bytes]: ptm_addr_span() as a table, and
 * ptm_addr_shift() as one (A32 2, Jazelle 0, else 1), for the word-at-a-
 * time readers. */
#define CSDI_PTM_MASK(shift)                                                                          \
	{ 0, (1u << (6 + (shift))) - 1u, (1u << (12 + (shift))) - 1u, (1u << (19 + (shift))) - 1u, \
	  (1u << (26 + (shift))) - 1u }
static const uint32_t csdi_ptm_mask_tab[8][5] = { CSDI_PTM_MASK(1), CSDI_PTM_MASK(2), CSDI_PTM_MASK(1),
					 CSDI_PTM_MASK(1), CSDI_PTM_MASK(0), CSDI_PTM_MASK(1),
					 CSDI_PTM_MASK(1), CSDI_PTM_MASK(1) };
static const uint8_t csdi_ptm_shift_tab[8] = { 1, 2, 1, 1, 0, 1, 1, 1 };
#undef CSDI_PTM_MASK

/* csdi_ptm_address() and, when cycle-accurate (ca), the cycle count after
 * it for the first eight bytes of a branch address packet in w, without a
 * loop (the byte-at-a-time one, with its spills and its exit on the
 * address length, was the bulk of the brief loop's work on generated PTM
 * trace): its length and fields, or 0 for the forms it leaves to
 * csdi_ptm_address(): five address bytes, exception information and a
 * cycle count of more than two bytes. */
static inline __attribute__((always_inline)) size_t csdi_ptm_branch_word(uint64_t w, int ca, uint32_t prev,
									unsigned isa, uint32_t *addr,
									unsigned *addr_bytes, uint32_t *count)
{
	const uint32_t lo = (uint32_t)w;
	/* The last address byte is the first without bit 7; top is that
	 * bit's number. */
	const uint32_t stops = ~lo & 0x80808080u;
	if (!stops)
		return 0;
	const unsigned top = (unsigned)__builtin_ctz(stops);
	/* Exception information follows: bit 6 of a last byte after the
	 * first (the first byte's bit 6 is an address bit, cleared here). */
	if ((lo & ~0x40u) >> (top - 1) & 1)
		return 0;
	const unsigned k = top / 8 + 1;
	size_t len = k;
	uint32_t cc = 0;
	if (ca) {
		/* (The count's second byte, byte k + 1, is at most byte 5 of
		 * the eight.) */
		const unsigned c = csdi_ptm_cycle_count_word((uint32_t)(w >> (top + 1)), &cc);
		if (!c)
			return 0;
		len += c;
	}
	/* Every byte's payload in place; those past the last are cut off by
	 * the mask, and a last byte's bit 6 is clear. */
	const uint32_t v = csdi_ptm_addr_payload_word(lo);
	const uint32_t mask = csdi_ptm_mask_tab[isa & 7][k];
	*addr = (prev & ~mask) | ((v << csdi_ptm_shift_tab[isa & 7]) & mask);
	*addr_bytes = k;
	*count = cc;
	return len;
}

/* csdi_ptm_branch_word() for the commonest forms alone, one or two
 * address bytes and, when ca, a count of one byte, from the packet's
 * first three bytes in w: its length, or 0 for the other forms. Without a
 * branch on the number of address bytes, and in few enough registers to
 * sit inside the brief loop, where a call to the general one cost more
 * than its work. */
static inline __attribute__((always_inline)) size_t csdi_ptm_branch_short(uint32_t w, int ca, uint32_t prev,
									 unsigned isa, uint32_t *addr,
									 unsigned *addr_bytes, uint32_t *count)
{
	/* A second address byte (byte 0's bit 7), whose bits 7 (a third) and
	 * 6 (exception information) must be clear. */
	const uint32_t two = w >> 7 & 1;
	if (w & (0xC000u & -two))
		return 0;
	if (ca) {
		/* The count's byte after the address, without more. */
		const uint32_t c = w >> (8 + 8 * two);
		if (c & 0x40)
			return 0;
		*count = c >> 2 & 0xF;
	}
	/* Both bytes' payload; the mask of one address byte cuts byte 1's. */
	const uint32_t v = (w >> 1 & 0x3Fu) | (w >> 2 & 0xFC0u);
	const uint32_t mask = csdi_ptm_mask_tab[isa & 7][1 + two];
	*addr = (prev & ~mask) | ((v << csdi_ptm_shift_tab[isa & 7]) & mask);
	*addr_bytes = 1 + two;
	return 1 + two + (ca ? 1u : 0u);
}
#endif

/*
 * Fast path for the flow decoder: the unread bytes of the current run of a
 * synchronised decoder with nothing staged and no run being counted (0
 * otherwise). Atom packets change no decoder state, so the flow decoder may
 * parse the atom packets at the front itself (csdi_ptm_atom_packet) and then
 * csdi_ptm_pkt_skip() their bytes. Byte k's capture offset is offsets[k],
 * or base + k when offsets is NULL. *num / *en: the atom tables of
 * non-cycle-accurate headers (count, E bits oldest first; count 0: not an
 * atom packet).
 */
size_t csdi_ptm_pkt_front(const struct csd_ptm_pkt_decoder *dec, const uint8_t **p, const uint8_t **num,
			  const uint8_t **en);
void csdi_ptm_pkt_offsets(const struct csd_ptm_pkt_decoder *dec, const uint64_t **offsets, uint64_t *base);
void csdi_ptm_pkt_skip(struct csd_ptm_pkt_decoder *dec, size_t n);
struct csdi_sem;
/* The packet decoder's semantic state (struct csdi_sem, csdec_internal.h). */
void csdi_ptm_pkt_sem(const struct csd_ptm_pkt_decoder *dec, struct csdi_sem *s);
/* The timestamp as traced (the Gray code if *gray) and in *known how many
 * of its low bits timestamp packets have given since the decoder started
 * (the bits above are 0): timestamp packets restate only the low bits
 * that changed (chunk.c). set_ts makes them raw and known. */
uint64_t csdi_ptm_pkt_ts(const struct csd_ptm_pkt_decoder *dec, unsigned *known, int *gray);
unsigned csdi_ptm_pkt_ts_known(const struct csd_ptm_pkt_decoder *dec);
void csdi_ptm_pkt_set_ts(struct csd_ptm_pkt_decoder *dec, uint64_t raw, unsigned known);
/* The decoder's byte input (pkt_state.c: whether its bytes are used up). */
struct csdi_input;
const struct csdi_input *csdi_ptm_pkt_input(const struct csd_ptm_pkt_decoder *dec);

/*
 * The atom packet at p (n bytes available): its length, its atoms (*num,
 * *en: bit i = atom i, oldest first, 1 = E) and, in cycle-accurate mode,
 * its cycle count. Returns 0 when p does not start a whole, valid atom
 * packet (another packet, or one cut by the end of the bytes): the packet
 * decoder then deals with it. Encoding: IHI 0035B 4.3.2 (the same rules
 * as parse_atom in ptm_pkt.c).
 */
static inline size_t csdi_ptm_atom_packet(const uint8_t *p, size_t n, int cycle_acc, const uint8_t *num_tab,
					  const uint8_t *en_tab, unsigned *num, unsigned *en, uint32_t *count)
{
	const uint8_t h = p[0];
	if ((h & 0x81) != 0x80)
		return 0;
	if (!cycle_acc) {
		*num = num_tab[h];
		*en = en_tab[h];
		*count = 0;
		return *num ? 1 : 0;
	}
	/* 1 C count[3:0] F 0: one atom, F = 1 for N, the header the
	 * cycle count's first byte. */
	const int len = csdi_ptm_cycle_count(p, n, count);
	if (len <= 0)
		return 0;
	*num = 1;
	*en = (h & 0x02) ? 0 : 1;
	return (size_t)len;
}

/*
 * A branch address packet without exception information, whole at p (n
 * bytes): its length and fields in *b, or 0 for anything else (the packet
 * decoder then deals with it). Nothing changes until
 * csdi_ptm_branch_commit(), which updates the decoder's address state as
 * csd_ptm_pkt_next() would; the caller then csdi_ptm_pkt_skip()s it.
 * csdi_ptm_branch_fill(): the packet as csd_ptm_pkt_next() reports it
 * (without offset, size and raw bytes).
 */
struct csdi_ptm_branch {
	uint32_t addr;
	uint32_t cycle_count;
	uint8_t isa;
	uint8_t addr_bytes;
	uint8_t isa_stated;
	uint8_t has_cc;
};
size_t csdi_ptm_branch_packet(const struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
			      struct csdi_ptm_branch *b);
void csdi_ptm_branch_commit(struct csd_ptm_pkt_decoder *dec, const struct csdi_ptm_branch *b);
void csdi_ptm_branch_fill(const struct csdi_ptm_branch *b, struct csd_packet *pkt);

#endif
