/* etm3_internal.h - ETMv3 facts shared by the packet decoder (etm3_pkt.c)
 * and the packet encoder (etm3_enc.c): configuration derived from the
 * registers and the branch address layout (ARM IHI 0014Q chapter 7). */
#ifndef CSD_ETM3_INTERNAL_H
#define CSD_ETM3_INTERNAL_H

#include <stdint.h>

#include "csdec.h"

/* What the packet format depends on, derived from ETMCR/ETMCCER/ETMIDR.
 * The bits used and why are listed at the top of etm3_pkt.c. */
struct csdi_etm3_cfg {
	uint8_t minor;          /* x of ETMv3.x (0..5; higher treated as 5) */
	uint8_t cycle_acc;      /* ETMCR[12] */
	uint8_t cid_bytes;      /* ETMCR[15:14] -> 0, 1, 2, 4 */
	uint8_t data_value;     /* ETMCR[2]: data values traced */
	uint8_t data_addr;      /* ETMCR[3]: data addresses traced */
	uint8_t data_only;      /* ETMCR[20]: I-sync without instruction address */
	uint8_t alt_branch;     /* ETMIDR[20]: alternative branch address encoding */
	uint8_t ts64;           /* ETMCCER[29]: 64-bit timestamps (else 48) */
	uint8_t ts_gray;        /* ETMCCER[22] set and ETMCCER[28] clear: Gray-coded timestamps */
	uint8_t virt;           /* ETMCCER[26] on ETMv3.5: Hyp bits are present */
	uint8_t core_m;         /* core_profile == CSD_CORE_M */
};

/* Fill *out from a caller's configuration (any cfg->size accepted that
 * holds at least etmcr). CSD_EINVAL if cfg is unusable for ETMv3. */
int csdi_etm3_cfg_init(struct csdi_etm3_cfg *out, const struct csd_trace_config *cfg);

/* The address state that branch and I-sync packets update. */
struct csdi_etm3_istate {
	uint32_t addr;     /* last branch / I-sync address */
	uint8_t fam;       /* enum csdi_etm3_family */
	uint8_t altisa;
	uint8_t ns;
	uint8_t hyp;
};

/* Instruction set families as the branch address alignment sees them;
 * ThumbEE is the Thumb family with the AltISA bit set. */
enum csdi_etm3_family {
	CSDI_ETM3_FAM_ARM = 0,
	CSDI_ETM3_FAM_THUMB = 1,
	CSDI_ETM3_FAM_JAZELLE = 2,
	CSDI_ETM3_FAM_UNKNOWN = 3,   /* before any I-sync: aligned as ARM */
};

/* Address bit 0 lines up with packet bit `shift` removed: ARM addresses are
 * word aligned, Thumb halfword, Jazelle byte. */
static inline unsigned csdi_etm3_shift(unsigned fam)
{
	return fam == CSDI_ETM3_FAM_THUMB ? 1u : fam == CSDI_ETM3_FAM_JAZELLE ? 0u : 2u;
}

/* Address bits (before the alignment shift) carried by a branch address of
 * k = 1..4 bytes. Byte 1 has 6 (bit 0 is the branch marker), bytes 2-4 have
 * 7, except that in the alternative encoding a last byte 2-4 has 6 because
 * its bit 6 says whether exception information follows. */
static inline unsigned csdi_etm3_addr_bits(int alt_branch, unsigned k)
{
	static const uint8_t orig[5] = { 0, 6, 13, 20, 27 };
	static const uint8_t alt[5] = { 0, 6, 12, 19, 26 };
	return alt_branch ? alt[k] : orig[k];
}

/* Byte 5 of a branch address: b0E001AAA (ARM, A[31:29]), b0E01AAAA (Thumb,
 * A[31:28]), b0E1AAAAA (Jazelle, A[31:27]); E = exception bytes follow. */
static inline uint8_t csdi_etm3_byte5_tag(unsigned fam)
{
	return fam == CSDI_ETM3_FAM_THUMB ? 0x10 : fam == CSDI_ETM3_FAM_JAZELLE ? 0x20 : 0x08;
}
static inline uint8_t csdi_etm3_byte5_mask(unsigned fam)
{
	return fam == CSDI_ETM3_FAM_THUMB ? 0x0F : fam == CSDI_ETM3_FAM_JAZELLE ? 0x1F : 0x07;
}

static inline unsigned csdi_etm3_family_of(unsigned isa)
{
	switch (isa) {
	case CSD_ISA_ARM: return CSDI_ETM3_FAM_ARM;
	case CSD_ISA_THUMB:
	case CSD_ISA_THUMBEE: return CSDI_ETM3_FAM_THUMB;
	case CSD_ISA_JAZELLE: return CSDI_ETM3_FAM_JAZELLE;
	}
	return CSDI_ETM3_FAM_UNKNOWN;
}

static inline unsigned csdi_etm3_isa_of(unsigned fam, int altisa)
{
	switch (fam) {
	case CSDI_ETM3_FAM_ARM: return CSD_ISA_ARM;
	case CSDI_ETM3_FAM_THUMB: return altisa ? CSD_ISA_THUMBEE : CSD_ISA_THUMB;
	case CSDI_ETM3_FAM_JAZELLE: return CSD_ISA_JAZELLE;
	}
	return CSD_ISA_UNKNOWN;
}

/* Size in bytes of a data value with header size field SS. */
static inline unsigned csdi_etm3_value_size(unsigned ss)
{
	return ss == 3 ? 4u : ss;
}

/* Timestamp width in bits and the most payload bytes it takes. */
static inline unsigned csdi_etm3_ts_width(const struct csdi_etm3_cfg *c)
{
	return c->ts64 ? 64u : 48u;
}
static inline unsigned csdi_etm3_ts_max_bytes(const struct csdi_etm3_cfg *c)
{
	return c->ts64 ? 9u : 7u;
}

/*
 * Fast path for the flow decoder: the bytes of the current run of a
 * synchronised decoder with nothing staged, if the first is a P-header (0
 * otherwise). *hdr points at them in the run; (*is_phdr)[b] says whether
 * byte b is a P-header (1) and (*atoms)[b] are its atoms. The P-headers
 * at the front end at the first byte that is not one: the caller checks
 * each header it takes (not scanning ahead saves a pass over the bytes).
 * A P-header changes no decoder state, so the flow decoder may act on
 * them itself and then csdi_etm3_pkt_skip() them instead of pulling each
 * as a struct csd_packet. csdi_etm3_pkt_offset(k): capture offset of
 * byte k.
 */
size_t csdi_etm3_pkt_pheaders(const csd_etm3_pkt_decoder *dec, const uint8_t **hdr, const struct csd_atoms **atoms,
			      const uint8_t **is_phdr);
uint64_t csdi_etm3_pkt_offset(const csd_etm3_pkt_decoder *dec, size_t k);
struct csdi_sem;
/* The packet decoder's semantic state (struct csdi_sem, csdec_internal.h). */
void csdi_etm3_pkt_sem(const csd_etm3_pkt_decoder *dec, struct csdi_sem *s);
/* The same for all bytes at once: offset k is offsets[k], or base + k when
 * offsets is NULL. */
void csdi_etm3_pkt_offsets(const csd_etm3_pkt_decoder *dec, const uint64_t **offsets, uint64_t *base);
void csdi_etm3_pkt_skip(csd_etm3_pkt_decoder *dec, size_t n);

/*
 * The address bytes 1-4 of a branch address packet at p (n bytes; IHI 0014
 * 7.3.4): the payload bits gathered in *v, *bits of them. Returns the bytes
 * read, k (0 if cut short), with *more set when byte k has its
 * continuation bit (k is 4 and a fifth byte follows) and *exc when, in the
 * alternative encoding (alt), the last byte says exception information
 * follows. With `quick` (a constant), only the forms csdi_etm3_branch_quick
 * takes: 0 for exception information or a fifth byte as well. The one
 * reader of these bytes: the packet decoder's parse, the brief loop and
 * the flow decoder (through csdi_etm3_branch_quick).
 */
static inline __attribute__((always_inline)) unsigned csdi_etm3_branch_addr_bytes(const uint8_t *p, size_t n, int alt,
										    const int quick, uint32_t *v,
										    unsigned *bits, int *more, int *exc)
{
	uint32_t x = (uint32_t)(p[0] >> 1) & 0x3F;
	unsigned nb = 6, k = 1;
	int m = p[0] & 0x80, e = 0;
	while (m && k < 4) {
		if (k >= n)
			return 0;
		const uint8_t b = p[k++];
		m = b & 0x80;
		if (!m && alt) {
			e = b & 0x40;
			if (quick && e)
				return 0;
			x |= (uint32_t)(b & 0x3F) << nb;
			nb += 6;
		} else {
			x |= (uint32_t)(b & 0x7F) << nb;
			nb += 7;
		}
	}
	if (quick && m)
		return 0;
	*v = x;
	*bits = nb;
	*more = m;
	*exc = e;
	return k;
}

/*
 * A branch address packet of 1-4 address bytes without exception
 * information at p (whole in the n bytes; its first byte has bit 0 set):
 * its length (= its address bytes) and the new address in *addr, from
 * the previous address `prev` and the alignment shift `sh` of the
 * current instruction set; 0 for anything else (five address bytes,
 * exception information, cut short). These forms change nothing but the
 * address. alt: the alternative branch encoding (ETMIDR[20]). The rules
 * of parse_branch_addr() in etm3_pkt.c (IHI 0014 7.3.4).
 */
static inline size_t csdi_etm3_branch_quick(const uint8_t *p, size_t n, int alt, uint32_t prev, unsigned sh,
					    uint32_t *addr)
{
	uint32_t v;
	unsigned bits;
	int more, exc;
	const unsigned k = csdi_etm3_branch_addr_bytes(p, n, alt, 1, &v, &bits, &more, &exc);
	if (!k)
		return 0;               /* cut short, five address bytes, or exception information */
	const uint32_t mask = (1u << (bits + sh)) - 1;
	*addr = (prev & ~mask) | ((v << sh) & mask);
	return k;
}

/* The packet decoder's address state, read-only, and its branch encoding
 * (ETMIDR[20]), for the flow decoder's own parse of the quick forms
 * (csdi_etm3_branch_quick); it then sets the new address with
 * csdi_etm3_pkt_set_addr, which is all those forms change. */
const struct csdi_etm3_istate *csdi_etm3_pkt_addr_state(const csd_etm3_pkt_decoder *dec, int *alt_branch);
void csdi_etm3_pkt_set_addr(csd_etm3_pkt_decoder *dec, uint32_t addr);

/*
 * A branch address packet without exception information, whole at p (n
 * bytes): its length and fields in *b, or 0 for anything else (the packet
 * decoder then deals with it). Nothing changes until
 * csdi_etm3_branch_commit(), which updates the decoder's address state as
 * csd_etm3_pkt_next() would; the caller then csdi_etm3_pkt_skip()s it.
 * csdi_etm3_branch_fill(): the packet as csd_etm3_pkt_next() reports it
 * (without offset, size and raw bytes).
 */
struct csdi_etm3_branch {
	uint32_t addr;
	uint8_t isa;        /* enum csd_isa */
	uint8_t addr_bytes;
	uint8_t full;       /* five address bytes: the instruction set stated */
	uint8_t fam, altisa, ns, hyp; /* the packet decoder's state after it */
	uint8_t addr_only;  /* only the address changes (the common forms) */
};
size_t csdi_etm3_branch_packet(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n, struct csdi_etm3_branch *b);

/* The last packet other than a P-header the flow decoder's P-header loop
 * took, `len` bytes long: a branch packet (br) ending at byte branch_end
 * of the run, a cycle count packet (cc) ending at byte cc_end, or a
 * timestamp packet (ts, ts_bits) ending at ts_end (0: none). */
struct csdi_etm3_run_last {
	size_t branch_end;
	size_t cc_end;
	size_t ts_end;
	size_t len;
	struct csdi_etm3_branch br;
	uint32_t cc;
	uint8_t ts_bits;
	uint64_t ts;
};

/* An I-sync packet whole and good at p (n bytes), byte k of the packet
 * decoder's unread input: its length, *pkt as csd_etm3_pkt_next() gives
 * it, and the packet decoder's state updated the same way; 0 for
 * anything else (nothing changes; the packet decoder then deals with it).
 * The caller then csdi_etm3_pkt_skip()s it. */
size_t csdi_etm3_isync_packet(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n, size_t k, struct csd_packet *pkt);

/* A timestamp packet whole and good at p (n bytes): its length, its value
 * and the bits it gave in *ts / *bits, and the packet decoder's timestamp
 * state updated as csd_etm3_pkt_next() would; 0 for anything else
 * (nothing changes; the packet decoder then deals with it). */
size_t csdi_etm3_timestamp_packet(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n, uint64_t *ts,
				  uint8_t *bits);

/* The timestamp as traced (the Gray code if *gray) and in *known how many
 * of its low bits timestamp packets have given since the decoder started
 * (the bits above are 0): timestamp packets restate only the low bits
 * that changed (chunk.c). set_ts makes them raw and known. */
uint64_t csdi_etm3_pkt_ts(const csd_etm3_pkt_decoder *dec, unsigned *known, int *gray);
unsigned csdi_etm3_pkt_ts_known(const csd_etm3_pkt_decoder *dec);
void csdi_etm3_pkt_set_ts(csd_etm3_pkt_decoder *dec, uint64_t raw, unsigned known);
/* The decoder's byte input (pkt_state.c: whether its bytes are used up). */
struct csdi_input;
const struct csdi_input *csdi_etm3_pkt_input(const csd_etm3_pkt_decoder *dec);

/* The cycle count field at p (n bytes): 1-5 bytes of 7 bits with a
 * continuation bit, the fifth holding bits 31:28. Its length with *cc
 * set; 0 if cut short, -5 if the fifth byte has bits above bit 31 (*cc
 * then unchanged). The packet decoder's parse and the quick one below. */
static inline long csdi_etm3_cycle_count_field(const uint8_t *p, size_t n, uint32_t *cc)
{
	uint32_t v = 0;
	for (unsigned k = 0; k < 4; k++) {
		if (k >= n)
			return 0;
		v |= (uint32_t)(p[k] & 0x7F) << (7 * k);
		if (!(p[k] & 0x80)) {
			*cc = v;
			return (long)k + 1;
		}
	}
	if (n < 5)
		return 0;
	if (p[4] & 0xF0)
		return -5;
	*cc = v | (uint32_t)p[4] << 28;
	return 5;
}

/* A cycle count packet (header 0x04) whole and good at p (n bytes): its
 * length, the count in *cc; 0 otherwise (then it is the packet decoder's). */
static inline size_t csdi_etm3_cycle_count_quick(const uint8_t *p, size_t n, uint32_t *cc)
{
	const long r = n ? csdi_etm3_cycle_count_field(p + 1, n - 1, cc) : 0;
	return r > 0 ? (size_t)r + 1 : 0;
}

/* An I-sync packet's information byte (IHI 0014Q, I-sync packet): LSiP,
 * Reason[1:0], J, NS, AltISA (ETMv3.3 on), Hyp (with the virtualisation
 * extensions, not on M-profile), each 0 or 1 (reason 0-3). The general
 * parse and the plain one below read it here. */
struct csdi_etm3_isync_info {
	uint8_t lsip, reason, j, ns, altisa, hyp;
};
static inline void csdi_etm3_isync_info(const struct csdi_etm3_cfg *c, uint8_t info, struct csdi_etm3_isync_info *f)
{
	f->lsip = info >> 7;
	f->reason = (info >> 5) & 3;
	f->j = (info >> 4) & 1;
	f->ns = (info >> 3) & 1;
	f->altisa = c->minor >= 3 ? (info >> 2) & 1 : 0;
	f->hyp = c->virt && !c->core_m ? (info >> 1) & 1 : 0;
}

/* A plain I-sync: ARM or Thumb, without a context ID, LSiP, Jazelle,
 * AltISA or Hyp. */
struct csdi_etm3_isync_plain {
	uint32_t addr, cc;
	uint8_t fam, ns, reason, has_cc;
};

/* The plain I-sync whole at p (n bytes there) by parse_isync()'s rules into
 * *y: its length, or 0 for anything else (cut short, bad, another form),
 * which the general parse then takes. Nothing changes. (The
 * general parse clears and fills a whole struct csd_packet, several times
 * this one's work, and real sources send I-syncs often.) */
static inline size_t csdi_etm3_isync_plain(const struct csdi_etm3_cfg *c, const uint8_t *p, size_t n,
					   struct csdi_etm3_isync_plain *y)
{
	if (c->cid_bytes || c->data_only)
		return 0;
	size_t i = 1;
	uint32_t cc = 0;
	if (p[0] == 0x70) {
		const long r = csdi_etm3_cycle_count_field(p + 1, n - 1, &cc);
		i += r > 0 ? (size_t)r : n;
	}
	/* (Cut short: taken as LSiP, which the general parse takes.) */
	struct csdi_etm3_isync_info f;
	csdi_etm3_isync_info(c, i + 5 <= n ? p[i] : 0x80, &f);
	if (f.lsip | f.j | f.altisa | f.hyp)
		return 0;
	const uint32_t a = (uint32_t)p[i + 1] | (uint32_t)p[i + 2] << 8 | (uint32_t)p[i + 3] << 16 |
			   (uint32_t)p[i + 4] << 24;
	y->addr = a & ~1u;
	y->cc = cc;
	y->fam = (a & 1) ? CSDI_ETM3_FAM_THUMB : CSDI_ETM3_FAM_ARM;
	y->ns = f.ns;
	y->reason = f.reason;
	y->has_cc = p[0] == 0x70;
	return i + 5;
}

void csdi_etm3_branch_commit(csd_etm3_pkt_decoder *dec, const struct csdi_etm3_branch *b);
void csdi_etm3_branch_fill(const struct csdi_etm3_branch *b, struct csd_packet *pkt);

#endif
