/*
 * ptm_pkt.c - PTM (Program Flow Trace, PFT 1.0 and 1.1) packet decoder:
 * one source's bytes -> struct csd_packet. Encodings: ARM IHI 0035B,
 * chapter 4 (packets).
 *
 * Registers used (struct csd_trace_config):
 *   ETMCR[12]     cycle-accurate: atoms carry a cycle count (one atom per
 *                 packet), and branch address, timestamp and non-periodic
 *                 I-sync packets end in one
 *   ETMCR[15:14]  context ID size: 0, 1, 2 or 4 bytes in I-sync and
 *                 context ID packets
 *   ETMCCER[29]   timestamp size 48 / 64 bits (PFT 1.1; 48 in PFT 1.0)
 *   ETMCCER[28]   timestamp natural binary (1) or Gray coded (0) (PFT 1.1;
 *                 Gray in PFT 1.0)
 *   ETMIDR[7:4]   PFT minor version; ETMIDR = 0 (not given) means PFT 1.1
 * Not used, because they do not change the byte format: ETMCR[28]
 * (timestamp enable), [29] (return stack), [30] (VMID enable) and [8]
 * (branch broadcast) - their packets are decoded whenever they appear.
 *
 * Conventions of the output:
 *   - addr is the full address: the bits a branch address, waypoint update
 *     packet supplies are merged into the last address of any of those or
 *     an I-sync (which sets all 32 bits). Before the first I-sync the
 *     instruction set is unknown and compressed addresses are read with
 *     Thumb (halfword) alignment.
 *   - CSD_PKTF_ISA marks packets that state the instruction set: I-sync,
 *     five-byte addresses, and addresses followed by information bytes
 *     (whose AltIS bit selects Thumb / ThumbEE). `isa` always holds the
 *     instruction set the packet's address is in.
 *   - A branch with exception information bytes has CSD_PKTF_EXCEPTION,
 *     `exception` = the encoded number (0 = no exception: the bytes only
 *     state NS / Hyp / AltIS) and CSD_PKTF_SECURITY with NS and HYP (Hyp is
 *     0 when the second information byte is absent).
 *   - Consecutive ignore bytes are one CSD_PKT_IGNORE packet; a run of
 *     0x00 bytes ended by 0x80 is one CSD_PKT_ASYNC packet.
 *   - Atoms: bit i of atoms.en is atom i, oldest first, 1 = E. In a
 *     non-cycle-accurate atom header the oldest atom is the bit just below
 *     the highest set bit of [6:2] and the newest is bit 1 (checked against
 *     the program flow of the trace_cov_a15 capture).
 *   - Waypoint update: only a five-byte address may be followed by the
 *     information byte (AltIS in bit 6), as OpenCSD reads it; bit 6 set in
 *     the last byte of a shorter address is reported as an error.
 *   - Bits the decoder ignores: I-sync information byte bits 7 and 0
 *     (hardware writes 0 and 1), bits 7 and 1:0 of a cycle count's first
 *     byte outside atoms, bit 5 of exception information byte 1, bits 7:6
 *     of a 48-bit timestamp's last byte.
 *   - The timestamp R bit (clock frequency changed) is bit 2 of raw[0].
 *   - Bad bytes give one CSD_PKT_ERROR packet from the packet's first byte
 *     up to the impossible one (reserved J/T/AltIS combinations, reserved
 *     headers, continuation past the last possible byte, ...); the decoder
 *     then waits for the next A-sync. At the end of the stream a partial
 *     packet (a run of 0x00 bytes included) is CSD_PKT_TRUNCATED, "truncated
 *     ... at end of stream", the last packet.
 */
#include <limits.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "pkt_input.h"
#include "ptm_internal.h"
#include "zeroed.h"

/* What a header byte starts (table-driven dispatch). */
enum hdr_kind {
	K_RESERVED = 0,
	K_ASYNC,
	K_ISYNC,
	K_ATOM,
	K_ATOM_NONE,     /* b1000 00x0 outside cycle-accurate mode: no atoms */
	K_BRANCH,
	K_WAYPOINT,
	K_TRIGGER,
	K_CONTEXT_ID,
	K_VMID,
	K_TIMESTAMP,
	K_ERET,
	K_IGNORE,
};

/* A run of identical bytes being counted across feeds. */
enum run_kind {
	RUN_NONE = 0,
	RUN_ZEROS,       /* A-sync 0x00 bytes, waiting for the 0x80 */
	RUN_IGNORE,
};

/* What a header starts, for the packets in brief. */
enum { BK_OTHER, BK_ATOM, BK_ATOM_MORE, BK_BRANCH };

struct csd_ptm_pkt_decoder {
	struct csdi_input in;
	struct csdi_ptm_cfg cfg;
	uint8_t kind[256];
	/* Non-cycle-accurate atom headers: count and E bits (bit i = atom i,
	 * oldest first). */
	uint8_t atom_num[256];
	uint8_t atom_en[256];
	/* Packets in brief: what each header starts (BK_*) and, for atoms,
	 * the brief packet but its offset (and, with BK_ATOM_MORE, the high
	 * bits of its cycle count and its size). */
	uint8_t brief_kind[256];
	struct csd_pkt_brief brief[256];
	int synced;
	/* Decompression state. */
	uint32_t addr;          /* last address (branch, waypoint, I-sync) */
	uint8_t isa;            /* enum csd_isa of that address */
	uint64_t ts;            /* last timestamp, natural binary */
	uint8_t ts_known;       /* low bits of it as traced given since the start (the rest 0) */
	/* Run being counted. */
	int run;
	uint64_t run_len;
	uint64_t run_off;
};

/* Copied over each output packet: compilers turn this into a few vector
 * stores, where memset() of the size may become a slow `rep stos`. */
static const struct csd_packet zero_packet;

/* Outcome of parsing the bytes at the start of a view. */
#define PARSE_MORE 0    /* the packet continues past the view */

int csdi_ptm_cfg_init(const struct csd_trace_config *cfg, struct csdi_ptm_cfg *out)
{
	struct csd_trace_config c;
	static const uint8_t cid_sizes[4] = { 0, 1, 2, 4 };

	if (!cfg || !out || cfg->size < offsetof(struct csd_trace_config, protocol) + sizeof(cfg->protocol))
		return CSD_EINVAL;
	memset(&c, 0, sizeof(c));
	memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	if (c.protocol != CSD_PROTO_PTM)
		return CSD_EINVAL;
	/* ETMIDR[11:8] is 3 for PFTv1, [7:4] its minor version 0 or 1
	 * (IHI 0035B 3.16.28); anything else is another protocol. */
	if (c.etmidr && (((c.etmidr >> 8) & 0xF) != 3 || ((c.etmidr >> 4) & 0xF) > 1))
		return CSD_EINVAL;
	memset(out, 0, sizeof(*out));
	out->cycle_acc = (c.etmcr & PTM_ETMCR_CYCLE_ACC) != 0;
	out->cid_bytes = cid_sizes[(c.etmcr >> PTM_ETMCR_CID_SHIFT) & 3];
	out->pft_minor = c.etmidr ? (uint8_t)((c.etmidr >> 4) & 0xF) : 1;
	if (out->pft_minor >= 1) {
		out->ts_bits = (c.etmccer & PTM_ETMCCER_TS_64BIT) ? 64 : 48;
		out->ts_gray = (c.etmccer & PTM_ETMCCER_TS_BINARY) == 0;
	} else {
		out->ts_bits = 48;
		out->ts_gray = 1;
	}
	return CSD_OK;
}

static void build_table(struct csd_ptm_pkt_decoder *dec)
{
	for (unsigned h = 0; h < 256; h++) {
		if (h & 1)
			dec->kind[h] = K_BRANCH;
		else if (h & 0x80)
			dec->kind[h] = K_ATOM;
		else
			dec->kind[h] = K_RESERVED;
	}
	/* Outside cycle-accurate mode the highest set bit of [6:2] marks the
	 * first atom; 0x80 and 0x82 hold none. */
	if (!dec->cfg.cycle_acc)
		dec->kind[0x80] = dec->kind[0x82] = K_ATOM_NONE;
	/* 1 [stop bit] F(oldest) .. F(newest, bit 1) 0: up to five atoms
	 * below the highest set bit of [6:2]; F = 1 for N. */
	for (unsigned h = 0x84; h < 0x100; h += 2) {
		unsigned num = 5;
		while (!(h & (1u << (num + 1))))
			num--;
		unsigned en = 0;
		for (unsigned i = 0; i < num; i++) {
			/* atom i (0 = oldest) is header bit num - i */
			if (!(h & (1u << (num - i))))
				en |= 1u << i;
		}
		dec->atom_num[h] = (uint8_t)num;
		dec->atom_en[h] = (uint8_t)en;
	}
	dec->kind[PTM_HDR_ASYNC] = K_ASYNC;
	dec->kind[PTM_HDR_ISYNC] = K_ISYNC;
	dec->kind[PTM_HDR_TRIGGER] = K_TRIGGER;
	dec->kind[PTM_HDR_VMID] = K_VMID;
	dec->kind[PTM_HDR_TIMESTAMP] = K_TIMESTAMP;
	dec->kind[PTM_HDR_TIMESTAMP | PTM_HDR_TS_R] = K_TIMESTAMP;
	dec->kind[PTM_HDR_IGNORE] = K_IGNORE;
	dec->kind[PTM_HDR_CONTEXT_ID] = K_CONTEXT_ID;
	dec->kind[PTM_HDR_WAYPOINT] = K_WAYPOINT;
	dec->kind[PTM_HDR_ERET] = K_ERET;
	for (unsigned h = 0; h < 256; h++) {
		struct csd_pkt_brief *b = &dec->brief[h];
		memset(b, 0, sizeof(*b));
		dec->brief_kind[h] = dec->kind[h] == K_BRANCH ? BK_BRANCH : BK_OTHER;
		if (dec->kind[h] != K_ATOM)
			continue;
		b->type = CSD_PKT_ATOM;
		b->size = 1;
		if (!dec->cfg.cycle_acc) {
			b->num_atoms = dec->atom_num[h];
			b->atoms.en = dec->atom_en[h];
			dec->brief_kind[h] = BK_ATOM;
		} else {
			/* 1 C count[3:0] F 0; with C, count bytes follow. */
			b->num_atoms = 1;
			b->atoms.en = (h & 0x02) ? 0 : 1;
			b->flags = CSD_BRIEF_CYCLE_COUNT;
			b->cycle_count = (h >> 2) & 0xF;
			dec->brief_kind[h] = (h & 0x40) ? BK_ATOM_MORE : BK_ATOM;
			/* (The brief loop's two-byte form; longer ones set
			 * their own.) */
			b->size = (h & 0x40) ? 2 : 1;
		}
	}
}

static void reset_state(struct csd_ptm_pkt_decoder *dec)
{
	csdi_in_reset(&dec->in);
	dec->synced = 0;
	dec->addr = 0;
	dec->isa = CSD_ISA_UNKNOWN;
	dec->ts = 0;
	dec->ts_known = 0;
	dec->run = RUN_NONE;
	dec->run_len = 0;
	dec->run_off = 0;
}

csd_ptm_pkt_decoder *csd_ptm_pkt_new(const struct csd_trace_config *cfg)
{
	struct csdi_ptm_cfg pc;
	if (csdi_ptm_cfg_init(cfg, &pc) != CSD_OK)
		return NULL;
	struct csd_ptm_pkt_decoder *dec = csdi_zeroed_new(sizeof(*dec), 0);
	if (!dec)
		return NULL;
	dec->cfg = pc;
	build_table(dec);
	reset_state(dec);
	return dec;
}

void csd_ptm_pkt_free(csd_ptm_pkt_decoder *dec)
{
	csdi_zeroed_free(dec, sizeof(*dec));
}

int csd_ptm_pkt_feed(csd_ptm_pkt_decoder *dec, const struct csd_bytes *in)
{
	if (!dec || !in)
		return CSD_EINVAL;
	return csdi_in_feed(&dec->in, in);
}

int csd_ptm_pkt_finish(csd_ptm_pkt_decoder *dec)
{
	if (!dec)
		return CSD_EINVAL;
	dec->in.finished = 1;
	return CSD_OK;
}

void csdi_ptm_pkt_sem(const csd_ptm_pkt_decoder *dec, struct csdi_sem *s)
{
	csdi_in_sem(&dec->in, s);
	csdi_sem_put(s, (uint64_t)dec->synced);
	/* Decompression: the next branch address is a delta against these
	 * (the timestamp, one too, chunk.c compares in the bits known:
	 * csdi_ptm_pkt_ts). */
	csdi_sem_put(s, dec->addr);
	csdi_sem_put(s, dec->isa);
	/* A run of bytes being counted (A-sync zeros) spans the point. */
	csdi_sem_put(s, (uint64_t)dec->run);
	csdi_sem_put(s, dec->run_len);
	/* Left out: cfg and the header tables (made from the configuration,
	 * the same in any two decoders compared). */
}

const struct csdi_input *csdi_ptm_pkt_input(const csd_ptm_pkt_decoder *dec)
{
	return &dec->in;
}

unsigned csdi_ptm_pkt_ts_known(const csd_ptm_pkt_decoder *dec)
{
	return dec->ts_known;
}

uint64_t csdi_ptm_pkt_ts(const csd_ptm_pkt_decoder *dec, unsigned *known, int *gray)
{
	*known = dec->ts_known;
	*gray = dec->cfg.ts_gray;
	return dec->cfg.ts_gray ? ptm_bin_to_gray(dec->ts) & ptm_ts_mask(dec->cfg.ts_bits) : dec->ts;
}

void csdi_ptm_pkt_set_ts(csd_ptm_pkt_decoder *dec, uint64_t raw, unsigned known)
{
	raw &= ptm_ts_mask(dec->cfg.ts_bits);
	dec->ts = dec->cfg.ts_gray ? ptm_gray_to_bin(raw) : raw;
	dec->ts_known = (uint8_t)(known < dec->cfg.ts_bits ? known : dec->cfg.ts_bits);
}

int csd_ptm_pkt_reset(csd_ptm_pkt_decoder *dec)
{
	if (!dec)
		return CSD_EINVAL;
	reset_state(dec);
	return CSD_OK;
}

/* ---- field parsers: each reads from p[0..n) and returns the bytes used,
 * PARSE_MORE if they run past n, or -(bytes up to and including the
 * impossible one) with *err set. ---- */

/* Cycle count (csdi_ptm_cycle_count), PARSE_MORE if it has not begun. */
static inline int parse_cycle_count(const uint8_t *p, size_t n, uint32_t *count)
{
	_Static_assert(PARSE_MORE == 0, "csdi_ptm_cycle_count's 0 is PARSE_MORE");
	return n < 1 ? PARSE_MORE : csdi_ptm_cycle_count(p, n, count);
}

/* The cycle count at p[at]: its length, PARSE_MORE, or the negative length
 * of the packet up to the bad byte. */
static int cycle_count_field(const uint8_t *p, size_t n, size_t at, struct csd_packet *pkt, const char **err)
{
	int c = parse_cycle_count(p + at, n - at, &pkt->cycle_count);
	if (c < 0) {
		*err = "cycle count continues past its fifth byte";
		return c - (int)at;
	}
	if (c > 0)
		pkt->flags |= CSD_PKTF_CYCLE_COUNT;
	return c;
}

/* Little-endian value of `bytes` bytes. */
static uint32_t get_le(const uint8_t *p, unsigned bytes)
{
	uint32_t v = 0;
	for (unsigned i = 0; i < bytes; i++)
		v |= (uint32_t)p[i] << (8 * i);
	return v;
}

/* Apply the AltIS bit of an information byte to the instruction set. */
static int apply_altis(unsigned *isa, int altis, const char **err)
{
	if (*isa == CSD_ISA_THUMB || *isa == CSD_ISA_THUMBEE) {
		*isa = altis ? CSD_ISA_THUMBEE : CSD_ISA_THUMB;
		return 0;
	}
	if (altis && *isa != CSD_ISA_UNKNOWN) {
		*err = "AltIS bit set outside Thumb state";
		return -1;
	}
	return 0;
}

/* A branch address or waypoint update packet's address field a, in the
 * instruction set isa (a's, or as exception information changed it), into
 * *pkt and the decoder's address state. */
static void address_packet(struct csd_ptm_pkt_decoder *dec, struct csd_packet *pkt, uint32_t type,
			   const struct csdi_ptm_addr_field *a, unsigned isa)
{
	if (a->isa_stated)
		pkt->flags |= CSD_PKTF_ISA;
	pkt->type = type;
	pkt->addr = a->addr;
	pkt->addr_bytes = (uint8_t)a->bytes;
	pkt->isa = (uint8_t)isa;
	dec->addr = a->addr;
	dec->isa = (uint8_t)isa;
}

static int parse_branch(struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
			struct csd_packet *pkt, const char **err)
{
	struct csdi_ptm_addr_field a;
	int r = csdi_ptm_address(p, n, dec->isa, dec->addr, &a, err);
	if (r <= 0)
		return r;
	size_t len = (size_t)r;
	unsigned isa = a.isa;
	if (a.info_follows) {
		/* Exception information: C AltIS x Exc[3:0] NS, then
		 * 0 x Hyp Exc[8:4]. */
		if (len >= n)
			return PARSE_MORE;
		uint8_t e1 = p[len++];
		uint8_t e2 = 0;
		if (e1 & 0x80) {
			if (len >= n)
				return PARSE_MORE;
			e2 = p[len++];
			if (e2 & 0x80) {
				*err = "more than two exception information bytes";
				return -(int)len;
			}
		}
		if (apply_altis(&isa, (e1 & 0x40) != 0, err) < 0)
			return -(int)len;
		pkt->flags |= CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY | CSD_PKTF_ISA;
		if (e1 & 0x01)
			pkt->flags |= CSD_PKTF_NS;
		if (e1 & 0x40)
			pkt->flags |= CSD_PKTF_ALTISA;
		if (e2 & 0x20)
			pkt->flags |= CSD_PKTF_HYP;
		pkt->exception = (uint16_t)(((e1 >> 1) & 0xF) | ((e2 & 0x1F) << 4));
	}
	if (dec->cfg.cycle_acc) {
		int c = cycle_count_field(p, n, len, pkt, err);
		if (c <= 0)
			return c;
		len += (size_t)c;
	}
	address_packet(dec, pkt, CSD_PKT_BRANCH, &a, isa);
	return (int)len;
}

static int parse_waypoint(struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
			  struct csd_packet *pkt, const char **err)
{
	if (n < 2)
		return PARSE_MORE;
	struct csdi_ptm_addr_field a;
	int r = csdi_ptm_address(p + 1, n - 1, dec->isa, dec->addr, &a, err);
	if (r <= 0)
		return r < 0 ? r - 1 : r;
	size_t len = 1 + (size_t)r;
	unsigned isa = a.isa;
	if (a.info_follows) {
		/* Only a full address may be followed by the AltIS byte. */
		if (a.bytes < 5) {
			*err = "waypoint update: bit 6 set in the last byte of a short address";
			return -(int)len;
		}
		if (len >= n)
			return PARSE_MORE;
		uint8_t info = p[len++];
		if (apply_altis(&isa, (info & 0x40) != 0, err) < 0)
			return -(int)len;
		pkt->flags |= CSD_PKTF_ISA;
		if (info & 0x40)
			pkt->flags |= CSD_PKTF_ALTISA;
	}
	address_packet(dec, pkt, CSD_PKT_WAYPOINT, &a, isa);
	return (int)len;
}

static int parse_isync(struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
		       struct csd_packet *pkt, const char **err)
{
	if (n < 6)
		return PARSE_MORE;
	struct csdi_ptm_isync y;
	if (!csdi_ptm_isync_fields(get_le(p + 1, 4), p[5], &y)) {
		*err = "I-sync: reserved combination of J, T and AltIS bits";
		return -6;
	}
	const unsigned reason = y.reason;
	size_t len = 6;
	/* A non-periodic I-sync marks a gap, so in cycle-accurate mode it
	 * carries the cycles since the last atom. */
	if (dec->cfg.cycle_acc && reason != CSD_REASON_PERIODIC) {
		int c = cycle_count_field(p, n, len, pkt, err);
		if (c <= 0)
			return c;
		len += (size_t)c;
	}
	if (dec->cfg.cid_bytes) {
		if (n - len < dec->cfg.cid_bytes)
			return PARSE_MORE;
		pkt->context_id = get_le(p + len, dec->cfg.cid_bytes);
		len += dec->cfg.cid_bytes;
		pkt->flags |= CSD_PKTF_CONTEXT_ID;
	}
	pkt->type = CSD_PKT_ISYNC;
	pkt->flags |= CSD_PKTF_ISA | CSD_PKTF_SECURITY;
	if (y.ns)
		pkt->flags |= CSD_PKTF_NS;
	if (y.hyp)
		pkt->flags |= CSD_PKTF_HYP;
	if (y.altis)
		pkt->flags |= CSD_PKTF_ALTISA;
	pkt->reason = (uint8_t)reason;
	pkt->isa = y.isa;
	pkt->addr = y.addr;
	dec->addr = pkt->addr;
	dec->isa = y.isa;
	return (int)len;
}

static int parse_atom(struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
		      struct csd_packet *pkt, const char **err)
{
	uint8_t h = p[0];
	pkt->type = CSD_PKT_ATOM;
	if (dec->cfg.cycle_acc) {
		/* 1 C count[3:0] F 0: one atom, F = 1 for N; the header is the
		 * first cycle count byte. */
		int c = cycle_count_field(p, n, 0, pkt, err);
		if (c <= 0)
			return c;
		pkt->atoms.num = 1;
		pkt->atoms.en = (h & 0x02) ? 0 : 1;
		return c;
	}
	pkt->atoms.num = dec->atom_num[h];
	pkt->atoms.en = dec->atom_en[h];
	return 1;
}

static int parse_timestamp(struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
			   struct csd_packet *pkt, const char **err)
{
	const unsigned max = ptm_ts_max_bytes(dec->cfg.ts_bits);
	uint64_t v = 0;
	unsigned i = 1;
	for (;;) {
		if (i >= n)
			return PARSE_MORE;
		uint8_t b = p[i];
		if (i == max) {
			v |= (uint64_t)b << (7 * (i - 1)); /* last byte: 6 or 8 bits */
			break;
		}
		v |= (uint64_t)(b & 0x7F) << (7 * (i - 1));
		if (!(b & 0x80))
			break;
		i++;
	}
	size_t len = i + 1;
	if (dec->cfg.cycle_acc) {
		int c = cycle_count_field(p, n, len, pkt, err);
		if (c <= 0)
			return c;
		len += (size_t)c;
	}
	unsigned span = ptm_ts_span(dec->cfg.ts_bits, i);
	uint64_t full = ptm_ts_mask(dec->cfg.ts_bits);
	v &= ptm_ts_mask(span);
	uint64_t ts;
	if (dec->cfg.ts_gray) {
		/* Unchanged high bits are those of the previous Gray code. */
		uint64_t g = ptm_bin_to_gray(dec->ts) & full;
		g = (g & ~ptm_ts_mask(span)) | v;
		ts = ptm_gray_to_bin(g);
	} else {
		ts = (dec->ts & ~ptm_ts_mask(span)) | v;
	}
	pkt->type = CSD_PKT_TIMESTAMP;
	pkt->timestamp = ts;
	pkt->ts_bits = (uint8_t)span;
	dec->ts = ts;
	if (span > dec->ts_known)
		dec->ts_known = (uint8_t)span;
	return (int)len;
}

/*
 * Parse the packet at the start of the view. Returns its length, or
 * PARSE_MORE, or -(length) of an impossible packet with *err set.
 * Decoder state changes only when a packet is complete.
 */
static int parse_packet(struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
			struct csd_packet *pkt, const char **err)
{
	switch (dec->kind[p[0]]) {
	case K_ATOM:
		return parse_atom(dec, p, n, pkt, err);
	case K_BRANCH:
		return parse_branch(dec, p, n, pkt, err);
	case K_ISYNC:
		return parse_isync(dec, p, n, pkt, err);
	case K_WAYPOINT:
		return parse_waypoint(dec, p, n, pkt, err);
	case K_TIMESTAMP:
		return parse_timestamp(dec, p, n, pkt, err);
	case K_CONTEXT_ID:
		if (!dec->cfg.cid_bytes) {
			*err = "context ID packet while context ID tracing is off (ETMCR[15:14] = 0)";
			return -1;
		}
		if (n < 1u + dec->cfg.cid_bytes)
			return PARSE_MORE;
		pkt->type = CSD_PKT_CONTEXT_ID;
		pkt->flags |= CSD_PKTF_CONTEXT_ID;
		pkt->context_id = get_le(p + 1, dec->cfg.cid_bytes);
		return 1 + dec->cfg.cid_bytes;
	case K_VMID:
		if (n < 2)
			return PARSE_MORE;
		pkt->type = CSD_PKT_VMID;
		pkt->vmid = p[1];
		return 2;
	case K_TRIGGER:
		pkt->type = CSD_PKT_TRIGGER;
		return 1;
	case K_ERET:
		pkt->type = CSD_PKT_EXCEPTION_RETURN;
		return 1;
	case K_ATOM_NONE:
		*err = "atom header without atoms";
		return -1;
	default:
		*err = "reserved packet header";
		return -1;
	}
}

static const char *truncated_reason(unsigned kind)
{
	switch (kind) {
	case K_ISYNC: return "truncated I-sync packet at end of stream";
	case K_ATOM: return "truncated atom packet at end of stream";
	case K_BRANCH: return "truncated branch address packet at end of stream";
	case K_WAYPOINT: return "truncated waypoint update packet at end of stream";
	case K_CONTEXT_ID: return "truncated context ID packet at end of stream";
	case K_VMID: return "truncated VMID packet at end of stream";
	case K_TIMESTAMP: return "truncated timestamp packet at end of stream";
	case K_ASYNC: return "truncated A-sync packet at end of stream";
	}
	return "truncated packet at end of stream";
}

/* An error packet for the first n bytes of the view; the decoder then
 * looks for the next A-sync. */
static void error_packet(struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
			 const char *reason, struct csd_packet *pkt)
{
	*pkt = zero_packet;
	csdi_in_fill(&dec->in, p, n, pkt);
	pkt->type = CSD_PKT_ERROR;
	pkt->error = reason;
	csdi_in_consume(&dec->in, n);
	dec->synced = 0;
}

/* Packet for a finished run of zeros / ignore bytes. */
static void run_packet(struct csd_ptm_pkt_decoder *dec, uint32_t type, uint64_t len, struct csd_packet *pkt)
{
	*pkt = zero_packet;
	pkt->type = type;
	pkt->offset = dec->run_off;
	pkt->size = len;
	size_t r = len < CSD_PKT_RAW_MAX ? (size_t)len : CSD_PKT_RAW_MAX;
	memset(pkt->raw, type == CSD_PKT_IGNORE ? PTM_HDR_IGNORE : 0, r);
	if (type == CSD_PKT_ASYNC && len <= CSD_PKT_RAW_MAX)
		pkt->raw[len - 1] = 0x80;
	dec->run = RUN_NONE;
	dec->run_len = 0;
}

/*
 * Continue (or start) a run at the start of the view. Returns 1 with *pkt
 * set when the run ended in a packet, 0 when all view bytes were taken.
 */
static int continue_run(struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n, struct csd_packet *pkt)
{
	const uint8_t want = dec->run == RUN_ZEROS ? 0x00 : PTM_HDR_IGNORE;
	size_t i = 0;
	while (i < n && p[i] == want)
		i++;
	if (dec->run_len == 0)
		dec->run_off = csdi_in_offset(&dec->in, 0);
	dec->run_len += i;
	if (i == n) {
		csdi_in_consume(&dec->in, n);
		return 0;
	}
	if (dec->run == RUN_IGNORE) {
		csdi_in_consume(&dec->in, i);
		run_packet(dec, CSD_PKT_IGNORE, dec->run_len, pkt);
		return 1;
	}
	/* Zeros ended: an A-sync needs at least five of them and 0x80. */
	if (p[i] == 0x80 && dec->run_len >= 5) {
		csdi_in_consume(&dec->in, i + 1);
		run_packet(dec, CSD_PKT_ASYNC, dec->run_len + 1, pkt);
		return 1;
	}
	uint64_t zeros = dec->run_len;
	int with_end = p[i] == 0x80;
	csdi_in_consume(&dec->in, i + (with_end ? 1 : 0));
	run_packet(dec, CSD_PKT_ERROR, zeros + (with_end ? 1 : 0), pkt);
	pkt->error = with_end ? "A-sync with fewer than five 0x00 bytes"
			      : "0x00 bytes not followed by 0x80 (bad A-sync)";
	if (with_end && pkt->size <= CSD_PKT_RAW_MAX)
		pkt->raw[pkt->size - 1] = 0x80;
	dec->synced = 0;
	return 1;
}

/*
 * csdi_in_seek_async(), correcting its last NOSYNC packet when the stream
 * ends in 0x00 bytes: pkt_input.c then reports them with the offset and
 * raw bytes of an earlier stretch (skip_off / skip_raw are only set for
 * non-zero bytes). Remove once pkt_input.c sets them itself.
 */
static int seek_async(struct csdi_input *in, struct csd_packet *pkt)
{
	const int finished = in->finished;
	in->finished = 0; /* first use up the bytes, then report the tail */
	int r = csdi_in_seek_async(in, pkt);
	in->finished = finished;
	if (r || !finished)
		return r;
	if (in->zeros) {
		if (in->skipped == 0)
			in->skip_off = in->zero_off;
		for (size_t i = in->skipped; i < in->skipped + in->zeros && i < CSD_PKT_RAW_MAX; i++)
			in->skip_raw[i] = 0x00;
	}
	return csdi_in_seek_async(in, pkt);
}

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

static NOINLINE int next_packet(struct csd_ptm_pkt_decoder *dec, struct csd_packet *pkt);
static NOINLINE int next_general(struct csd_ptm_pkt_decoder *dec, struct csd_packet *pkt);

int csd_ptm_pkt_next(csd_ptm_pkt_decoder *dec, struct csd_packet *pkt)
{
	if (!dec || !pkt)
		return CSD_EINVAL;
	struct csdi_input *in = &dec->in;
	const size_t pos = in->pos;

	/* The most common packet, a one-byte atom packet in the current run
	 * of a synchronised decoder with nothing staged, needs no stack
	 * frame; everything else goes the general way. */
	if (in->have_run && !in->stage_len && dec->synced && dec->run == RUN_NONE) {
		const uint8_t h = in->run.data[pos];
		if (dec->kind[h] == K_ATOM) {
			const uint8_t *q = in->run.data + pos;
			size_t len = 1;
			if (!dec->cfg.cycle_acc) {
				csdi_pkt_clear(pkt);
				pkt->atoms.num = dec->atom_num[h];
				pkt->atoms.en = dec->atom_en[h];
			} else {
				/* 1 C count[3:0] F 0: one atom, the header the
				 * cycle count's first byte. */
				uint32_t count;
				const int clen = csdi_ptm_cycle_count(q, in->run.size - pos, &count);
				if (clen <= 0)
					return next_packet(dec, pkt); /* cut by the run end, or bad */
				len = (size_t)clen;
				csdi_pkt_clear(pkt);
				pkt->flags = CSD_PKTF_CYCLE_COUNT;
				pkt->cycle_count = count;
				pkt->atoms.num = 1;
				pkt->atoms.en = (h & 0x02) ? 0 : 1;
			}
			pkt->type = CSD_PKT_ATOM;
			pkt->offset = in->run.offsets ? in->run.offsets[pos] : in->run.base + pos;
			pkt->size = (uint32_t)len;
			for (size_t i = 0; i < len; i++)
				pkt->raw[i] = q[i];
			in->pos = pos + len;
			in->have_run = pos + len < in->run.size;
			return CSD_OK;
		}
		return next_packet(dec, pkt);
	}
	/* The run is used up and no packet is cut: what next_general would
	 * find, without looking (once per run fed, so it matters). */
	if (!in->have_run && !in->stage_len && dec->synced && dec->run == RUN_NONE)
		return in->finished ? CSD_EEOS : CSD_EAGAIN;
	return next_general(dec, pkt);
}

/* Any other packet that starts in the current run of a synchronised
 * decoder with nothing staged: parsed in place when it is whole. */
static NOINLINE int next_packet(struct csd_ptm_pkt_decoder *dec, struct csd_packet *pkt)
{
	struct csdi_input *in = &dec->in;
	const size_t pos = in->pos;
	const uint8_t *q = in->run.data + pos;

	if (q[0] != PTM_HDR_ASYNC && q[0] != PTM_HDR_IGNORE) {
		const char *err = NULL;
		csdi_pkt_clear(pkt);
		int r = parse_packet(dec, q, in->run.size - pos, pkt, &err);
		if (r > 0) {
			pkt->offset = in->run.offsets ? in->run.offsets[pos] : in->run.base + pos;
			pkt->size = (uint32_t)r;
			for (int i = 0; i < r; i++) /* r <= 15 < CSD_PKT_RAW_MAX */
				pkt->raw[i] = q[i];
			in->pos = pos + (size_t)r;
			in->have_run = in->pos < in->run.size;
			return CSD_OK;
		}
		/* errors and packets cut by the run end: general path */
	}
	return next_general(dec, pkt);
}

/* csd_ptm_pkt_next() for everything else: A-sync search, runs, staging,
 * errors and the end of the stream (and whole packets in the run, for
 * the calls that arrive here with one). */
static NOINLINE int next_general(struct csd_ptm_pkt_decoder *dec, struct csd_packet *pkt)
{
	for (;;) {
		if (!dec->synced) {
			if (seek_async(&dec->in, pkt)) {
				if (pkt->type == CSD_PKT_ASYNC)
					dec->synced = 1;
				return CSD_OK;
			}
			return dec->in.finished ? CSD_EEOS : CSD_EAGAIN;
		}
		/* Fast path: a whole packet inside the current run, nothing
		 * staged and no run of 0x00 / 0x66 being counted. */
		struct csdi_input *in = &dec->in;
		if (in->stage_len == 0 && in->have_run && dec->run == RUN_NONE) {
			const uint8_t *q = in->run.data + in->pos;
			if (q[0] != PTM_HDR_ASYNC && q[0] != PTM_HDR_IGNORE) {
				const char *err = NULL;
				csdi_pkt_clear(pkt);
				int r = parse_packet(dec, q, in->run.size - in->pos, pkt, &err);
				if (r > 0) {
					pkt->offset = in->run.offsets ? in->run.offsets[in->pos] : in->run.base + in->pos;
					pkt->size = (uint32_t)r;
					for (int i = 0; i < r; i++) /* r <= 15 < CSD_PKT_RAW_MAX */
						pkt->raw[i] = q[i];
					in->pos += (size_t)r;
					if (in->pos >= in->run.size)
						in->have_run = 0;
					return CSD_OK;
				}
				/* errors and packets cut by the run end: general path */
			}
		}
		const uint8_t *p;
		size_t n = csdi_in_view(in, &p);
		if (n == 0) {
			if (!dec->in.finished)
				return CSD_EAGAIN;
			if (dec->run == RUN_IGNORE) {
				run_packet(dec, CSD_PKT_IGNORE, dec->run_len, pkt);
				return CSD_OK;
			}
			if (dec->run == RUN_ZEROS) {
				run_packet(dec, CSD_PKT_TRUNCATED, dec->run_len, pkt);
				pkt->error = truncated_reason(K_ASYNC);
				dec->synced = 0;
				return CSD_OK;
			}
			return CSD_EEOS;
		}
		if (dec->run == RUN_NONE) {
			if (p[0] == PTM_HDR_ASYNC)
				dec->run = RUN_ZEROS;
			else if (p[0] == PTM_HDR_IGNORE)
				dec->run = RUN_IGNORE;
		}
		if (dec->run != RUN_NONE) {
			if (continue_run(dec, p, n, pkt))
				return CSD_OK;
			continue;
		}
		const char *err = NULL;
		*pkt = zero_packet;
		int r = parse_packet(dec, p, n, pkt, &err);
		if (r > 0) {
			csdi_in_fill(&dec->in, p, (size_t)r, pkt);
			csdi_in_consume(&dec->in, (size_t)r);
			return CSD_OK;
		}
		if (r < 0) {
			error_packet(dec, p, (size_t)-r, err, pkt);
			return CSD_OK;
		}
		if (dec->in.finished) {
			/* Everything left is the start of one packet, cut by
			 * the end of the stream. */
			error_packet(dec, p, n, truncated_reason(dec->kind[p[0]]), pkt);
			pkt->type = CSD_PKT_TRUNCATED;
			return CSD_OK;
		}
		/* The view held every byte fed: wait for the next run. */
		csdi_in_stash(&dec->in);
		return CSD_EAGAIN;
	}
}

/* ------------------------------------------------------------------------
 * Packets in brief
 * ---------------------------------------------------------------------- */


/* brief_branch() where the 8-byte parse cannot be used: the general
 * parse of the address, limited to the forms brief_branch() takes. */
static inline size_t brief_branch_bytes(const uint8_t *p, size_t n, int ca, uint32_t prev, unsigned isa,
					uint32_t *addr, unsigned *addr_bytes, uint32_t *count)
{
	struct csdi_ptm_addr_field a;
	const char *err = NULL;
	const int r = csdi_ptm_address(p, n, isa, prev, &a, &err);
	if (r <= 0 || a.info_follows || a.bytes == 5)
		return 0;
	size_t len = (size_t)r;
	uint32_t cc = 0;
	if (ca) {
		const int c = parse_cycle_count(p + len, n - len, &cc);
		if (c <= 0)
			return 0;
		len += (size_t)c;
	}
	*addr = a.addr;
	*addr_bytes = a.bytes;
	*count = cc;
	return len;
}


/* A branch address packet of 1-4 address bytes without exception
 * information (the instruction set unchanged) at p, whole in n bytes,
 * with its cycle count when cycle-accurate: its length and fields, or 0
 * (then branch_packet_general() or the packet decoder deal with it). The
 * same rules as csdi_ptm_address(). */
static inline size_t brief_branch(const uint8_t *p, size_t n, int ca, uint32_t prev, unsigned isa,
				  uint32_t *addr, unsigned *addr_bytes, uint32_t *count)
{
#ifdef CSDI_PTM_BRANCH_WORD
	if (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		const size_t len = csdi_ptm_branch_word(w, ca, prev, isa, addr, addr_bytes, count);
		if (len)
			return len;
	}
#endif
	return brief_branch_bytes(p, n, ca, prev, isa, addr, addr_bytes, count);
}

static size_t branch_packet_general(const struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
				    struct csdi_ptm_branch *b);

/* The I-sync at p (n bytes there) in brief into *o: its length, or 0 when
 * it is cut short, bad or of a form a brief one cannot hold; then nothing
 * has changed and csd_ptm_pkt_next() takes it. (Out of line, as it is
 * rare against the loop's atoms.) */
static NOINLINE size_t isync_brief(csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n, struct csd_pkt_brief *o)
{
	/* ARM and Thumb without a context ID, AltIS or Hyp, straight into the
	 * item by parse_isync()'s rules (as for ETMv3: the struct csd_packet
	 * way cost about 130 instructions per I-sync). */
	struct csdi_ptm_isync y;
	if (!dec->cfg.cid_bytes && n >= 6 && !(p[5] & 0x16) && csdi_ptm_isync_fields(get_le(p + 1, 4), p[5], &y)) {
		const unsigned reason = y.reason;
		size_t len = 6;
		uint32_t cc = 0;
		const int has_cc = dec->cfg.cycle_acc && reason != CSD_REASON_PERIODIC;
		if (has_cc) {
			const int c = parse_cycle_count(p + 6, n - 6, &cc);
			len = c > 0 ? len + (size_t)c : 0;
		}
		if (len) {
			dec->addr = y.addr;
			dec->isa = y.isa;
			csdi_isync_brief_fill(o, y.addr, cc, has_cc, y.isa, reason, y.ns);
			return len;
		}
	}
	struct csd_packet pkt;
	const uint32_t addr = dec->addr;
	const uint8_t isa = dec->isa;
	const char *err = NULL;
	memset(&pkt, 0, sizeof(pkt));
	const int r = parse_isync(dec, p, n, &pkt, &err);
	if (r <= 0 || !csdi_isync_brief(&pkt, o)) {
		dec->addr = addr;
		dec->isa = isa;
		return 0;
	}
	return (size_t)r;
}

/* The brief item of a branch address packet from brief_branch()'s
 * results. */
static inline void brief_branch_fill(struct csd_pkt_brief *o, uint32_t to, size_t len, unsigned ab, uint8_t isa,
				     int ca, uint32_t cc)
{
	/* Every byte of the item but its offset. */
	o->addr = to;
	o->cycle_count = cc;
	o->type = CSD_PKT_BRANCH;
	o->size = (uint8_t)len;
	o->num_atoms = 0;
	o->flags = (uint8_t)(ab << 5 | isa << 2 | (ca ? CSD_BRIEF_CYCLE_COUNT : 0));
}

/* brief_branch_item() a byte at a time (near the end of the bytes, or
 * for the forms csdi_ptm_branch_word() leaves). */
static NOINLINE size_t brief_branch_item_bytes(csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
					       struct csd_pkt_brief *o, const int ca)
{
	uint32_t to, cc;
	unsigned ab;
	const uint8_t isa = dec->isa;
	const size_t len = brief_branch_bytes(p, n, ca, dec->addr, isa, &to, &ab, &cc);
	if (!len)
		return 0;
	dec->addr = to;
	brief_branch_fill(o, to, len, ab, isa, ca, cc);
	return len;
}

#ifdef CSDI_PTM_BRANCH_WORD
/* The item but its offset, in two stores; tail is its last word (type,
 * size, num_atoms, flags). */
static inline void brief_branch_store_tail(struct csd_pkt_brief *o, uint32_t to, uint32_t cc, uint32_t tail)
{
	const uint64_t addr_cc = (uint64_t)cc << 32 | to;
	_Static_assert(offsetof(struct csd_pkt_brief, cycle_count) == 8 && offsetof(struct csd_pkt_brief, type) == 12 &&
			       offsetof(struct csd_pkt_brief, flags) == 15,
		       "struct csd_pkt_brief as brief_branch_store_tail() writes it");
	memcpy((unsigned char *)o + 4, &addr_cc, 8);
	memcpy((unsigned char *)o + 12, &tail, 4);
}

static inline void brief_branch_store(struct csd_pkt_brief *o, uint32_t to, uint32_t cc, size_t len, unsigned flags)
{
	brief_branch_store_tail(o, to, cc, (uint32_t)CSD_PKT_BRANCH | (uint32_t)len << 8 | (uint32_t)flags << 24);
}

/* brief_branch_item() for five address bytes (a whole address, which
 * states the instruction set) in w: csdi_ptm_address()'s rules, without
 * exception information and with a cycle count of one byte; else 0. (Out
 * of line: a rare form, which the general way made costly.) */
static NOINLINE size_t brief_branch_item_full(csd_ptm_pkt_decoder *dec, uint64_t w, struct csd_pkt_brief *o,
					      const int ca)
{
	const uint32_t lo = (uint32_t)w;
	const uint8_t last = (uint8_t)(w >> 32);
	/* Fifth byte 0 E x x x x x x: E (exception information) set, or
	 * bit 7, goes the general way. */
	if (last & 0xC0)
		return 0;
	uint32_t v = csdi_ptm_addr_payload_word(lo);
	unsigned isa;
	if (!csdi_ptm_addr_fifth(last, dec->isa, &v, &isa))
		return 0;
	size_t len = 5;
	uint32_t cc = 0;
	if (ca) {
		/* A count of one byte (more go the general way). */
		if (csdi_ptm_cycle_count_word((uint32_t)(w >> 40), &cc) != 1)
			return 0;
		len++;
	}
	const uint32_t to = v << ptm_addr_shift(isa);
	dec->addr = to;
	dec->isa = (uint8_t)isa;
	brief_branch_store(o, to, cc, len, 5u << 5 | isa << 2 | CSD_BRIEF_ISA | (ca ? CSD_BRIEF_CYCLE_COUNT : 0));
	return len;
}
#endif

/* A branch address packet of the forms the brief loop's word readers
 * leave (five address bytes, exception information, longer counts), or
 * one near the end of the bytes. */
static inline __attribute__((always_inline)) size_t brief_branch_item(csd_ptm_pkt_decoder *dec, const uint8_t *p,
								      size_t n, struct csd_pkt_brief *o,
								      const int ca)
{
#ifdef CSDI_PTM_BRANCH_WORD
	if (n >= 8) {
		uint64_t w;
		memcpy(&w, p, 8);
		if (!(~(uint32_t)w & 0x80808080u))
			return brief_branch_item_full(dec, w, o, ca);
	}
#endif
	return brief_branch_item_bytes(dec, p, n, o, ca);
}

/* brief_branch_item() out of line (rare forms, whose temporaries inside
 * the loop pushed the atom path's values onto the stack), in two forms as
 * ca is a constant in the loop. (The packet at p[i] of p[0..end), as the
 * loop has them: p + i there would be an instruction on each atom.) */
static NOINLINE size_t brief_branch_item_ca(csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t i, size_t end,
					    struct csd_pkt_brief *o)
{
	return brief_branch_item(dec, p + i, end - i, o, 1);
}

static NOINLINE size_t brief_branch_item_nca(csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t i, size_t end,
					     struct csd_pkt_brief *o)
{
	return brief_branch_item(dec, p + i, end - i, o, 0);
}

#ifdef CSDI_PTM_BRANCH_WORD
/* The last word of the brief item of a branch address packet that
 * csdi_ptm_branch_short() or csdi_ptm_branch_word() read (type, size,
 * num_atoms, flags), but the size:
 * [cycle-accurate][instruction set & 7][address bytes - 1]. */
#define BRIEF_TAIL(ca, isa, ab)                                                      \
	((uint32_t)CSD_PKT_BRANCH |                                                          \
	 (uint32_t)((ab) << 5 | (isa) << 2 | ((ca) ? CSD_BRIEF_CYCLE_COUNT : 0)) << 24)
#define BRIEF_TAIL_ISA(ca, isa) \
	{ BRIEF_TAIL(ca, isa, 1), BRIEF_TAIL(ca, isa, 2), BRIEF_TAIL(ca, isa, 3), BRIEF_TAIL(ca, isa, 4) }
#define BRIEF_TAIL_CA(ca)                                                                          \
	{ BRIEF_TAIL_ISA(ca, 0), BRIEF_TAIL_ISA(ca, 1), BRIEF_TAIL_ISA(ca, 2), BRIEF_TAIL_ISA(ca, 3), \
	  BRIEF_TAIL_ISA(ca, 4), BRIEF_TAIL_ISA(ca, 5), BRIEF_TAIL_ISA(ca, 6), BRIEF_TAIL_ISA(ca, 7) }
static const uint32_t brief_branch_tail[2][8][4] = { BRIEF_TAIL_CA(0), BRIEF_TAIL_CA(1) };
#undef BRIEF_TAIL_CA
#undef BRIEF_TAIL_ISA
#undef BRIEF_TAIL
#endif

/* The loop of csd_ptm_pkt_next_brief(), made once for each combination of
 * the constants ca (cycle-accurate) and has_offs (offsets array or base),
 * so that neither is tested per packet. Offsets are 32-bit distances from
 * the first packet's (b0); per-byte offsets end the call where one would
 * not fit. */
static inline __attribute__((always_inline)) int brief_loop(csd_ptm_pkt_decoder *dec, struct csd_pkt_brief *out,
							     size_t cap, uint64_t *b0, const int ca, const int has_offs)
{
	struct csdi_input *in = &dec->in;
	/* Bytes and offsets from the call's first packet on, indexed by its
	 * distance from it (so that the distance is the index, for
	 * BRIEF_DIST, and needs no instruction of its own). (The tables are
	 * read in place: as arrays inside *dec they need no register, where
	 * pointers to them were spilled.) */
	const uint8_t *p = in->run.data + in->pos;
#ifdef __GNUC__
	/* (One register: GCC otherwise adds the two up at each byte.) */
	__asm__("" : "+r"(p));
#endif
	const size_t end = in->run.size - in->pos;
	const uint64_t *const offs = has_offs ? in->run.offsets + in->pos : NULL;
	const uint64_t base = has_offs ? offs[0] : in->run.base + in->pos;
	*b0 = base;
#define BRIEF_DIST(i) (has_offs ? offs[i] - base : (uint64_t)(i))
	size_t pos = 0, n = 0;
	/* The address state stays in *dec, read and written by the branch
	 * packets only: as locals, its values took registers from the atom
	 * path, which then kept its output pointer on the stack. */
	while (n < cap && pos < end) {
		/* A run of atom packets of one byte, and of two in
		 * cycle-accurate mode (a table copy each), and of branch
		 * address packets of the quick forms. Every packet takes a
		 * byte at least, so below lim the items fit in out[] too:
		 * one bound to test. The atoms' distances are gathered in
		 * hi and looked at after the run (and before each branch,
		 * which changes the address state). */
		struct csd_pkt_brief *o = out + n;
		const size_t lim = end - pos < cap - n ? end : pos + (cap - n);
		size_t i = pos;
		uint64_t hi = 0;
		while (i < lim) {
			const uint8_t a = p[i];
			const uint64_t d = BRIEF_DIST(i);
			const uint8_t k = dec->brief_kind[a];
			/* (Said to be the likely case, one-byte atoms are laid
			 * out straight through instead of behind a taken jump
			 * and a jump back: gen-ptm packets 6 % less time.) */
			if (__builtin_expect(k == BK_ATOM, 1)) {
				hi |= d;
				*o = dec->brief[a];
				o->offset = (uint32_t)d;
				o++;
				i++;
				continue;
			}
			if (ca && k == BK_ATOM_MORE) {
				/* One count byte more (its size in the table).
				 * Both bytes below lim, else the slow part
				 * takes it: one bound in the loop's registers. */
				if (i + 1 >= lim)
					goto run_end;
				const uint8_t c1 = p[i + 1];
				if (c1 & 0x80)
					goto run_end;
				hi |= d;
				/* (The count from the table, not read back from
				 * the item just stored: a load from the middle of
				 * a 16-byte store waits for it.) */
				const uint32_t cc = dec->brief[a].cycle_count | (uint32_t)c1 << 4;
				*o = dec->brief[a];
				o->offset = (uint32_t)d;
				o->cycle_count = cc;
				o++;
				i += 2;
				continue;
			}
			if (k != BK_BRANCH || (has_offs && (hi | d) > UINT32_MAX))
				goto run_end;
			size_t len = 0;
#ifdef CSDI_PTM_BRANCH_WORD
			if (i + 8 <= end) {
				uint32_t to, cc = 0;
				unsigned ab;
				uint64_t w;
				memcpy(&w, p + i, 8);
				const uint8_t isa = dec->isa;
				len = csdi_ptm_branch_short((uint32_t)w, ca, dec->addr, isa, &to, &ab, &cc);
				if (!len)
					len = csdi_ptm_branch_word(w, ca, dec->addr, isa, &to, &ab, &cc);
				if (len) {
					dec->addr = to;
					/* (The item's last word from a table: type and
					 * flags took a dozen instructions.) */
					brief_branch_store_tail(o, to, cc,
								brief_branch_tail[ca][isa & 7][ab - 1] | (uint32_t)len << 8);
				}
			}
#endif
			if (!len) {
				len = ca ? brief_branch_item_ca(dec, p, i, end, o) : brief_branch_item_nca(dec, p, i, end, o);
				if (!len)
					goto run_end;
			}
			o->offset = (uint32_t)d;
			o++;
			i += len;
		}
		/* Out of room before the bytes' end (the packets were longer
		 * than a byte): the next run has more. */
		if (!(has_offs && hi > UINT32_MAX) && i < end && o < out + cap) {
			n = (size_t)(o - out);
			pos = i;
			continue;
		}
run_end:
		if (has_offs && hi > UINT32_MAX) {
			/* Some atom's distance does not fit: the call ends at
			 * the first such packet (never with a demultiplexer's
			 * offsets, which stay close). Only atoms, which change
			 * no state, can be past it. */
			struct csd_pkt_brief *q = out + n;
			size_t j = pos;
			while (q < o && BRIEF_DIST(j) <= UINT32_MAX)
				j += q++->size;
			n = (size_t)(q - out);
			pos = j;
			break;
		}
		n = (size_t)(o - out);
		pos = i;
		if (n == cap || pos == end)
			break;
		/* Atoms with more cycle count bytes and branch address packets
		 * (without exception information), when whole and good; none
		 * or cut short: the packet decoder's. Filled in place (a local
		 * copied over would be read back in vectors right after its
		 * byte stores: a stall). */
		const uint8_t h = p[pos];
		const uint64_t d = BRIEF_DIST(pos);
		size_t len;
		if (has_offs && d > UINT32_MAX)
			break;
		if (ca && dec->brief_kind[h] == BK_ATOM_MORE) {
			uint32_t c;
			const int clen = csdi_ptm_cycle_count(p + pos, end - pos, &c);
			if (clen <= 0)
				goto out;
			len = (size_t)clen;
			*o = dec->brief[h];
			o->cycle_count = c;
		} else if (dec->brief_kind[h] == BK_BRANCH) {
			/* Five address bytes near the end of the bytes (or
			 * without the 8-byte parse), or cut short: as the
			 * flow decoder takes them (the quick parse just
			 * failed). */
			struct csdi_ptm_branch b;
			len = branch_packet_general(dec, p + pos, end - pos, &b);
			if (!len)
				break;
			csdi_ptm_branch_commit(dec, &b);
			memset(o, 0, sizeof(*o));
			o->type = CSD_PKT_BRANCH;
			o->addr = b.addr;
			o->flags = (uint8_t)(b.addr_bytes << 5 | b.isa << 2 | (b.isa_stated ? CSD_BRIEF_ISA : 0) |
					     (b.has_cc ? CSD_BRIEF_CYCLE_COUNT : 0));
			o->cycle_count = b.cycle_count;
		} else if (dec->kind[h] == K_ISYNC) {
			/* A plain I-sync (else the packet decoder's); here, not
			 * in the atom loop, whose speed depends on where its
			 * code falls. */
			memset(o, 0, sizeof(*o));
			len = isync_brief(dec, p + pos, end - pos, o);
			if (!len)
				break;
		} else {
			break;
		}
		o->offset = (uint32_t)d;
		o->size = (uint8_t)len;
		n++;
		pos += len;
	}
out:
#undef BRIEF_DIST
	in->pos += pos;
	in->have_run = in->pos < in->run.size;
	return (int)n;
}

/* The loop in its four forms. (A plain I-sync is taken in the loop's slow
 * part, where it does not move the atom loop's code: placed before the loop,
 * as it once was, gen-ptm took 5 - 13 % longer.) */
int csd_ptm_pkt_next_brief(csd_ptm_pkt_decoder *dec, struct csd_pkt_brief *out, size_t cap, uint64_t *base)
{
	if (!dec || !base || (cap && !out))
		return CSD_EINVAL;
	const struct csdi_input *in = &dec->in;
	/* What csd_ptm_pkt_next() takes straight from the run. */
	if (!in->have_run || in->stage_len || !dec->synced || dec->run != RUN_NONE)
		return 0;
	if (cap > CSDI_BRIEF_MAX)
		cap = CSDI_BRIEF_MAX;
	if (dec->cfg.cycle_acc)
		return in->run.offsets ? brief_loop(dec, out, cap, base, 1, 1) : brief_loop(dec, out, cap, base, 1, 0);
	return in->run.offsets ? brief_loop(dec, out, cap, base, 0, 1) : brief_loop(dec, out, cap, base, 0, 0);
}

/* ------------------------------------------------------------------------
 * Fast path for the flow decoder (see csdi_ptm_pkt_front)
 * ---------------------------------------------------------------------- */

size_t csdi_ptm_pkt_front(const csd_ptm_pkt_decoder *dec, const uint8_t **p, const uint8_t **num,
			  const uint8_t **en)
{
	const struct csdi_input *in = &dec->in;
	if (!in->have_run || in->stage_len || !dec->synced || dec->run != RUN_NONE)
		return 0;
	*p = in->run.data + in->pos;
	*num = dec->atom_num;
	*en = dec->atom_en;
	return in->run.size - in->pos;
}

void csdi_ptm_pkt_offsets(const csd_ptm_pkt_decoder *dec, const uint64_t **offsets, uint64_t *base)
{
	const struct csdi_input *in = &dec->in;
	*offsets = in->run.offsets ? in->run.offsets + in->pos : NULL;
	*base = in->run.base + in->pos;
}

void csdi_ptm_pkt_skip(csd_ptm_pkt_decoder *dec, size_t n)
{
	struct csdi_input *in = &dec->in;
	in->pos += n;
	in->have_run = in->pos < in->run.size;
}

/* ------------------------------------------------------------------------
 * Branch address packets for the flow decoder's atom loop
 * ---------------------------------------------------------------------- */

size_t csdi_ptm_branch_packet(const struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
			      struct csdi_ptm_branch *b)
{
	if (!n || dec->kind[p[0]] != K_BRANCH)
		return 0;
	/* The common forms (1-4 address bytes, no exception information)
	 * the quick way. */
	unsigned ab;
	size_t k = brief_branch(p, n, dec->cfg.cycle_acc, dec->addr, dec->isa, &b->addr, &ab,
				&b->cycle_count);
	if (!k)
		return branch_packet_general(dec, p, n, b);
	b->isa = dec->isa;
	b->addr_bytes = (uint8_t)ab;
	b->isa_stated = 0;
	b->has_cc = (uint8_t)(dec->cfg.cycle_acc != 0);
	return k;
}

static size_t branch_packet_general(const struct csd_ptm_pkt_decoder *dec, const uint8_t *p, size_t n,
				    struct csdi_ptm_branch *b)
{
	struct csdi_ptm_addr_field a;
	const char *err = NULL;
	int r = csdi_ptm_address(p, n, dec->isa, dec->addr, &a, &err);
	if (r <= 0 || a.info_follows)
		return 0;
	size_t len = (size_t)r;
	b->cycle_count = 0;
	b->has_cc = 0;
	if (dec->cfg.cycle_acc) {
		int c = parse_cycle_count(p + len, n - len, &b->cycle_count);
		if (c <= 0)
			return 0;
		len += (size_t)c;
		b->has_cc = 1;
	}
	b->addr = a.addr;
	b->isa = (uint8_t)a.isa;
	b->addr_bytes = (uint8_t)a.bytes;
	b->isa_stated = (uint8_t)a.isa_stated;
	return len;
}

void csdi_ptm_branch_commit(struct csd_ptm_pkt_decoder *dec, const struct csdi_ptm_branch *b)
{
	dec->addr = b->addr;
	dec->isa = b->isa;
}

void csdi_ptm_branch_fill(const struct csdi_ptm_branch *b, struct csd_packet *pkt)
{
	csdi_pkt_clear(pkt);
	pkt->type = CSD_PKT_BRANCH;
	if (b->isa_stated)
		pkt->flags |= CSD_PKTF_ISA;
	if (b->has_cc) {
		pkt->flags |= CSD_PKTF_CYCLE_COUNT;
		pkt->cycle_count = b->cycle_count;
	}
	pkt->addr = b->addr;
	pkt->addr_bytes = b->addr_bytes;
	pkt->isa = b->isa;
}
