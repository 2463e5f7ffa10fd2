/* etm3_pkt.c - ETMv3 (ETMv3.0 - ETMv3.5) packet decoder, ARM IHI 0014Q
 * chapter 7.
 *
 * Register bits used, and why (everything else is ignored):
 *   ETMCR[2]      data value tracing: data packets carry value bytes
 *   ETMCR[3]      data address tracing: data packets with the A bit carry
 *                 a compressed data address
 *   ETMCR[12]     cycle-accurate mode: selects the P-header table (7.3 vs 7.2)
 *   ETMCR[15:14]  context ID size 0/1/2/4 bytes, in I-sync and context ID
 *                 packets
 *   ETMCR[20]     data-only mode: I-sync packets carry no instruction address
 *   ETMCCER[22]   timestamps implemented; only then is ETMCCER[28] trusted
 *   ETMCCER[26]   virtualization extensions: Hyp bits exist (ETMv3.5)
 *   ETMCCER[28]   timestamp encoding: 1 natural binary, 0 Gray code
 *   ETMCCER[29]   timestamp size: 1 = 64 bits, 0 = 48 bits
 *   ETMIDR[11:8]  major architecture (2 = ETMv3); 0 register = not given
 *   ETMIDR[7:4]   minor version x of ETMv3.x: format 0 P-header (3.0 only),
 *                 format 4 and AltISA (3.3+), exception entry/exit (3.4+),
 *                 VMID, timestamps and Hyp (3.5). ETMIDR = 0 means ETMv3.5.
 *   ETMIDR[20]    alternative branch address encoding (ETMv3.4+)
 * The timestamp-enable (ETMCR[28]) and VMID-enable (ETMCR[30]) bits are not
 * needed: those packets are self-describing once the version allows them.
 * core_profile CSD_CORE_M: exception information byte 1 bit 5 is not Hyp.
 *
 * Packet conventions (struct csd_packet has no field for some facts):
 *   - BRANCH: isa is always the instruction set after the packet;
 *     CSD_PKTF_ISA only when the packet states it (5-byte address or
 *     exception information). CSD_PKTF_EXCEPTION whenever exception
 *     information bytes are present (exception may be 0: only a state
 *     change); NS/Hyp then come with CSD_PKTF_SECURITY. Hyp is kept when
 *     byte 1 is absent. The resume value (byte 2) is in `tag`.
 *   - The deprecated exception form of address byte 5 (original encoding,
 *     ARM only) is reported with the exception numbers of the information
 *     byte (table in deprecated_exception[]).
 *   - Data packets: addr_bytes = data address bytes; OOO_PLACEHOLDER also
 *     copies its data address to `addr`. The timestamp R bit is only in
 *     raw[0] (bit 2).
 *   - I-sync in Jazelle state: address bit 0 is the T bit and is kept.
 *
 * Decoding works on the contiguous view of pkt_input: a packet is parsed
 * from its first byte each time; when the view ends inside it, the bytes
 * are staged until the next feed (state only changes once a packet is
 * complete). Runs of 0x00 (A-sync) and 0x66 (ignore) can be arbitrarily
 * long and are counted instead of staged.
 */
#include <stddef.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "etm3_internal.h"
#include "pkt_input.h"
#include "zeroed.h"

/* What a header byte starts, for this configuration (see build_tables). */
enum hdr_kind {
	K_BAD = 0,        /* reserved or not allowed here: error, reason in bad[] */
	K_PHDR,
	K_BRANCH,
	K_ASYNC,
	K_CYCLE_COUNT,
	K_ISYNC,
	K_ISYNC_CC,
	K_TRIGGER,
	K_OOO_DATA,
	K_STORE_FAILED,
	K_OOO_PLACEHOLDER,
	K_VMID,
	K_NORMAL_DATA,
	K_TIMESTAMP,
	K_DATA_SUPPRESSED,
	K_IGNORE,
	K_VALUE_NOT_TRACED,
	K_CONTEXT_ID,
	K_EXC_EXIT,
	K_EXC_ENTRY,
};

struct csd_etm3_pkt_decoder {
	struct csdi_input in;
	struct csdi_etm3_cfg cfg;
	int synced;
	/* Pending run of 0x00 (A-sync) or 0x66 (ignore) bytes. */
	uint8_t run_byte;
	size_t run_len;           /* 0 = no run pending */
	uint64_t run_off;
	struct csdi_etm3_istate ist;
	uint32_t data_addr;
	uint8_t data_be;
	uint64_t ts_raw;          /* timestamp as traced (Gray if Gray-coded) */
	uint8_t ts_known;         /* its low bits given by timestamp packets since the start (the rest 0) */
	const char *err;          /* reason of the error a parser reported */
	uint8_t kind[256];
	uint8_t is_phdr[256];     /* kind == K_PHDR (for the flow decoder's fast path) */
	struct csd_atoms atoms[256];
	const char *bad[256];
	struct csd_pkt_brief brief[256]; /* K_PHDR: the brief packet but its offset */
};

/* Clearing by assignment lets the compiler use plain vector stores; a
 * memset of this size becomes "rep stos", which costs more than the
 * whole rest of decoding a P-header. */
static const struct csd_packet zero_packet;

/* ------------------------------------------------------------------------
 * Configuration
 * ---------------------------------------------------------------------- */

int csdi_etm3_cfg_init(struct csdi_etm3_cfg *out, const struct csd_trace_config *cfg)
{
	struct csd_trace_config c;

	if (!out || !cfg || cfg->size < offsetof(struct csd_trace_config, etmcr) + sizeof(cfg->etmcr))
		return CSD_EINVAL;
	memset(&c, 0, sizeof(c));
	memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	if (c.protocol != CSD_PROTO_ETM3)
		return CSD_EINVAL;
	memset(out, 0, sizeof(*out));
	if (c.etmidr == 0) {
		out->minor = 5;
	} else {
		if (((c.etmidr >> 8) & 0xF) != 2)
			return CSD_EINVAL; /* not an ETMv3 */
		out->minor = (c.etmidr >> 4) & 0xF;
		if (out->minor > 5)
			out->minor = 5;
		out->alt_branch = (c.etmidr >> 20) & 1;
	}
	static const uint8_t cid_sizes[4] = { 0, 1, 2, 4 };
	out->data_value = (c.etmcr >> 2) & 1;
	out->data_addr = (c.etmcr >> 3) & 1;
	out->cycle_acc = (c.etmcr >> 12) & 1;
	out->cid_bytes = cid_sizes[(c.etmcr >> 14) & 3];
	out->data_only = (c.etmcr >> 20) & 1;
	out->ts64 = (c.etmccer >> 29) & 1;
	out->ts_gray = ((c.etmccer >> 22) & 1) && !((c.etmccer >> 28) & 1);
	out->virt = out->minor >= 5 && ((c.etmccer >> 26) & 1);
	out->core_m = c.core_profile == CSD_CORE_M;
	return CSD_OK;
}

/* Atoms of P-header h, or NULL with *why set if h is not a valid P-header
 * here (IHI 0014Q tables 7.2 and 7.3). */
static int phdr_atoms(const struct csdi_etm3_cfg *c, uint8_t h, struct csd_atoms *a, const char **why)
{
	memset(a, 0, sizeof(*a));
	if (!c->cycle_acc) {
		if ((h & 0x83) == 0x80) {                 /* b1NEEEE00 */
			unsigned e = (h >> 2) & 0xF, nbit = (h >> 6) & 1;
			a->format = 1;
			a->num = (uint8_t)(e + nbit);
			a->en = (1u << e) - 1;            /* E atoms first, then the N */
			return 1;
		}
		if ((h & 0xF3) == 0x82) {                 /* b1000FF10 */
			a->format = 2;
			a->num = 2;
			a->en = (((h >> 3) & 1) ? 0 : 1u) | (((h >> 2) & 1) ? 0 : 2u);
			return 1;
		}
		*why = "reserved P-header encoding (non-cycle-accurate mode)";
		return 0;
	}
	if (h == 0x80) {                                  /* format 0: W */
		if (c->minor != 0) {
			*why = "format 0 P-header is reserved after ETMv3.0";
			return 0;
		}
		a->format = 0;
		a->w = 1;
		return 1;
	}
	if ((h & 0xA3) == 0x80) {                         /* b1N0EEE00 */
		unsigned e = (h >> 2) & 7, nbit = (h >> 6) & 1;
		a->format = 1;
		a->num = (uint8_t)(e + nbit);
		a->w = a->num;                            /* each atom in its own cycle */
		a->en = (1u << e) - 1;
		return 1;
	}
	if ((h & 0xA3) == 0xA0) {                         /* b1E1WWW00 */
		a->format = 3;
		a->w = (uint8_t)(((h >> 2) & 7) + 1);
		a->num = (h >> 6) & 1;
		a->en = a->num;
		return 1;
	}
	if ((h & 0xF3) == 0x82) {                         /* b1000FF10 */
		a->format = 2;
		a->w = 1;
		a->num = 2;
		a->en = (((h >> 3) & 1) ? 0 : 1u) | (((h >> 2) & 1) ? 0 : 2u);
		return 1;
	}
	if ((h & 0xFB) == 0x92) {                         /* b10010F10 */
		if (c->minor < 3) {
			*why = "format 4 P-header is reserved before ETMv3.3";
			return 0;
		}
		a->format = 4;
		a->num = 1;
		a->en = ((h >> 2) & 1) ? 0 : 1u;
		return 1;
	}
	*why = "reserved P-header encoding (cycle-accurate mode)";
	return 0;
}

/* Table 7.1 header encodings, resolved for this configuration. */
static void build_tables(struct csd_etm3_pkt_decoder *d)
{
	const struct csdi_etm3_cfg *c = &d->cfg;
	const int data_on = c->data_value || c->data_addr;
	static const char data_off[] = "data trace packet, but data tracing is off (ETMCR[3:2])";

	for (unsigned h = 0; h < 256; h++) {
		uint8_t k = K_BAD;
		const char *why = "reserved packet header";

		if (h & 1) {
			k = K_BRANCH;
		} else if (h & 0x80) {
			if (phdr_atoms(c, (uint8_t)h, &d->atoms[h], &why))
				k = K_PHDR;
		} else if (h == 0x00) {
			k = K_ASYNC;
		} else if (h == 0x04) {
			k = K_CYCLE_COUNT;
		} else if (h == 0x08) {
			k = K_ISYNC;
		} else if (h == 0x0C) {
			k = K_TRIGGER;
		} else if (h == 0x70) {
			k = K_ISYNC_CC;
		} else if (h == 0x66) {
			k = K_IGNORE;
		} else if (h == 0x6E) {
			if (c->cid_bytes)
				k = K_CONTEXT_ID;
			else
				why = "context ID packet, but context ID tracing is off (ETMCR[15:14])";
		} else if (h == 0x3C) {
			if (c->minor >= 5)
				k = K_VMID;
			else
				why = "VMID packet is reserved before ETMv3.5";
		} else if (h == 0x42 || h == 0x46) {
			if (c->minor >= 5)
				k = K_TIMESTAMP;
			else
				why = "timestamp packet is reserved before ETMv3.5";
		} else if (h == 0x76 || h == 0x7E) {
			if (c->minor >= 4)
				k = h == 0x76 ? K_EXC_EXIT : K_EXC_ENTRY;
			else
				why = "exception entry/exit packet is reserved before ETMv3.4";
		} else if (h == 0x50 || h == 0x62 || h == 0x6A || h == 0x7A
			   || (h & 0xD3) == 0x02 || ((h & 0xD3) == 0x50 && (h & 0x0C))) {
			/* store failed, data suppressed, value not traced, normal
			 * data b00A0SS10, out-of-order placeholder b01A1TT00 */
			if (data_on)
				k = h == 0x50 ? K_STORE_FAILED : h == 0x62 ? K_DATA_SUPPRESSED
				  : (h == 0x6A || h == 0x7A) ? K_VALUE_NOT_TRACED
				  : (h & 0xD3) == 0x02 ? K_NORMAL_DATA : K_OOO_PLACEHOLDER;
			else
				why = data_off;
		} else if ((h & 0x93) == 0x00 && (h & 0x60)) {
			/* out-of-order data b0TT0SS00: only a value */
			if (c->data_value)
				k = K_OOO_DATA;
			else
				why = "out-of-order data packet, but data value tracing is off (ETMCR[2])";
		}
		d->kind[h] = k;
		d->is_phdr[h] = k == K_PHDR;
		d->bad[h] = k == K_BAD ? why : NULL;
		memset(&d->brief[h], 0, sizeof(d->brief[h]));
		d->brief[h].type = CSD_PKT_PHEADER;
		d->brief[h].size = 1;
		d->brief[h].atoms.en = (uint16_t)d->atoms[h].en; /* at most 16 atoms */
		d->brief[h].num_atoms = d->atoms[h].num;
		d->brief[h].atoms.w = d->atoms[h].w;
		d->brief[h].atoms.format = d->atoms[h].format;
	}
}

/* ------------------------------------------------------------------------
 * Life cycle
 * ---------------------------------------------------------------------- */

static void reset_state(struct csd_etm3_pkt_decoder *d)
{
	csdi_in_reset(&d->in);
	d->synced = 0;
	d->run_len = 0;
	memset(&d->ist, 0, sizeof(d->ist));
	d->ist.fam = CSDI_ETM3_FAM_UNKNOWN;
	d->data_addr = 0;
	d->data_be = 0;
	d->ts_raw = 0;
	d->ts_known = 0;
	d->err = NULL;
}

csd_etm3_pkt_decoder *csd_etm3_pkt_new(const struct csd_trace_config *cfg)
{
	struct csdi_etm3_cfg c;

	if (csdi_etm3_cfg_init(&c, cfg) != CSD_OK)
		return NULL;
	csd_etm3_pkt_decoder *d = csdi_zeroed_new(sizeof(*d), 0);
	if (!d)
		return NULL;
	d->cfg = c;
	build_tables(d);
	reset_state(d);
	return d;
}

void csd_etm3_pkt_free(csd_etm3_pkt_decoder *dec)
{
	csdi_zeroed_free(dec, sizeof(*dec));
}

int csd_etm3_pkt_feed(csd_etm3_pkt_decoder *dec, const struct csd_bytes *in)
{
	if (!dec)
		return CSD_EINVAL;
	return csdi_in_feed(&dec->in, in);
}

int csd_etm3_pkt_finish(csd_etm3_pkt_decoder *dec)
{
	if (!dec)
		return CSD_EINVAL;
	dec->in.finished = 1;
	return CSD_OK;
}

void csdi_etm3_pkt_sem(const csd_etm3_pkt_decoder *dec, struct csdi_sem *s)
{
	csdi_in_sem(&dec->in, s);
	csdi_sem_put(s, (uint64_t)dec->synced);
	/* A run of 0x00 or 0x66 bytes spans the point. */
	csdi_sem_put(s, dec->run_byte);
	csdi_sem_put(s, dec->run_len);
	/* Decompression: branch addresses are deltas against ist.addr in
	 * the alignment of ist.fam; ns / hyp / altisa carry over to
	 * packets that do not restate them; data addresses are deltas
	 * too. */
	csdi_sem_put(s, dec->ist.addr);
	csdi_sem_put(s, dec->ist.fam);
	csdi_sem_put(s, dec->ist.altisa);
	csdi_sem_put(s, dec->ist.ns);
	csdi_sem_put(s, dec->ist.hyp);
	csdi_sem_put(s, dec->data_addr);
	csdi_sem_put(s, dec->data_be);
	/* Left out: the timestamp, which chunk.c compares in the bits known
	 * (csdi_etm3_pkt_ts); err (the reason of the packet just reported,
	 * set anew with each error), cfg and the header tables (made from
	 * the configuration). */
}

const struct csdi_input *csdi_etm3_pkt_input(const csd_etm3_pkt_decoder *dec)
{
	return &dec->in;
}

unsigned csdi_etm3_pkt_ts_known(const csd_etm3_pkt_decoder *dec)
{
	return dec->ts_known;
}

uint64_t csdi_etm3_pkt_ts(const csd_etm3_pkt_decoder *dec, unsigned *known, int *gray)
{
	*known = dec->ts_known;
	*gray = dec->cfg.ts_gray;
	return dec->ts_raw;
}

void csdi_etm3_pkt_set_ts(csd_etm3_pkt_decoder *dec, uint64_t raw, unsigned known)
{
	const unsigned width = csdi_etm3_ts_width(&dec->cfg);
	if (known > width)
		known = width;
	dec->ts_raw = width < 64 ? raw & (((uint64_t)1 << width) - 1) : raw;
	dec->ts_known = (uint8_t)known;
}

int csd_etm3_pkt_reset(csd_etm3_pkt_decoder *dec)
{
	if (!dec)
		return CSD_EINVAL;
	reset_state(dec);
	return CSD_OK;
}

/* ------------------------------------------------------------------------
 * Field parsers. Each returns the bytes used (> 0), 0 if the view ends
 * first, or minus the bytes that are bad (d->err says why).
 * ---------------------------------------------------------------------- */

static long fail(struct csd_etm3_pkt_decoder *d, size_t len, const char *why)
{
	d->err = why;
	return -(long)len;
}

/* Cycle count: csdi_etm3_cycle_count_field (shared with the flow
 * decoder's quick parse), with the reason for a bad fifth byte. */
static long parse_cycle_count(struct csd_etm3_pkt_decoder *d, const uint8_t *p, size_t n, uint32_t *out)
{
	const long r = csdi_etm3_cycle_count_field(p, n, out);
	return r < 0 ? fail(d, 5, "cycle count byte 5 has bits above bit 31") : r;
}

/* Compressed data address: 1-5 bytes of 7 bits, byte 5 holds A[31:28] and
 * the big-endian bit E in bit 4. Merged into the last data address. */
static long parse_data_addr(struct csd_etm3_pkt_decoder *d, const uint8_t *p, size_t n,
			    uint32_t *addr, uint8_t *be)
{
	uint32_t v = 0;
	for (unsigned k = 0; k < 4; k++) {
		if (k >= n)
			return 0;
		v |= (uint32_t)(p[k] & 0x7F) << (7 * k);
		if (!(p[k] & 0x80)) {
			uint32_t mask = (1u << (7 * (k + 1))) - 1;
			*addr = (d->data_addr & ~mask) | v;
			*be = d->data_be;
			return k + 1;
		}
	}
	if (n < 5)
		return 0;
	if (p[4] & 0xE0)
		return fail(d, 5, "data address byte 5 has reserved bits set");
	*addr = v | (uint32_t)(p[4] & 0x0F) << 28;
	*be = (p[4] >> 4) & 1;
	return 5;
}

/* Result of a branch-style address (branch packet, LSiP current address). */
struct baddr {
	struct csdi_etm3_istate st;      /* state after the address */
	uint8_t addr_bytes;
	uint8_t full;          /* 5-byte address: states the instruction set */
	uint8_t info;          /* exception information bytes present */
	uint8_t hyp_stated;    /* exception information byte 1 present */
	uint8_t deprecated;    /* exception given in byte 5 (original encoding) */
	uint8_t cancel;
	uint8_t resume_present;
	uint8_t resume;
	uint16_t exception;
};

/* Exception numbers of the deprecated byte-5 form (ARM state only), mapped
 * to the numbering of the exception information byte: reset, IRQ,
 * reserved, reserved, Jazelle, FIQ, asynchronous data abort, debug halt. */
static const int8_t deprecated_exception[8] = { 8, 14, -1, -1, 5, 15, 4, 1 };

/* A branch address of 1-5 bytes plus 0-3 exception information bytes
 * (IHI 0014Q 7.3.5), compressed against `base`. */
static long parse_branch_addr(struct csd_etm3_pkt_decoder *d, const uint8_t *p, size_t n,
			      const struct csdi_etm3_istate *base, int lsip, struct baddr *r)
{
	const struct csdi_etm3_cfg *c = &d->cfg;
	const int alt = c->alt_branch;
	uint32_t v;
	unsigned bits;
	int more, exc_follows;

	memset(r, 0, sizeof(*r));
	r->st = *base;
	unsigned k = csdi_etm3_branch_addr_bytes(p, n, alt, 0, &v, &bits, &more, &exc_follows);
	if (!k)
		return 0;
	unsigned fam = base->fam;
	if (more) {
		if (n < 5)
			return 0;
		uint8_t b = p[4];
		k = 5;
		r->full = 1;
		if (b & 0x80) {
			/* Exception in the address byte: original encoding,
			 * ARM state only, deprecated; b1CEEEAAA. */
			int e = deprecated_exception[(b >> 3) & 7];
			if (alt || lsip)
				return fail(d, 5, "branch address byte 5 has bit 7 set");
			if (e < 0)
				return fail(d, 5, "reserved exception in branch address byte 5");
			fam = CSDI_ETM3_FAM_ARM;
			v |= (uint32_t)(b & 7) << bits;
			r->deprecated = 1;
			r->exception = (uint16_t)e;
			r->cancel = (b >> 6) & 1;
		} else {
			exc_follows = b & 0x40;
			if ((b & 0x38) == 0x08)
				fam = CSDI_ETM3_FAM_ARM;
			else if ((b & 0x30) == 0x10)
				fam = CSDI_ETM3_FAM_THUMB;
			else if (b & 0x20)
				fam = CSDI_ETM3_FAM_JAZELLE;
			else
				return fail(d, 5, "reserved instruction set in branch address byte 5");
			v |= (uint32_t)(b & csdi_etm3_byte5_mask(fam)) << bits;
		}
		r->st.addr = v << csdi_etm3_shift(fam);
	} else {
		unsigned cover = bits + csdi_etm3_shift(fam);
		uint32_t mask = (1u << cover) - 1;
		r->st.addr = (base->addr & ~mask) | ((v << csdi_etm3_shift(fam)) & mask);
	}
	r->addr_bytes = (uint8_t)k;
	if (r->full && fam != base->fam)
		r->st.altisa = 0;   /* a new family starts without AltISA unless stated */
	r->st.fam = (uint8_t)fam;

	if (exc_follows) {
		size_t i = k;
		if (i >= n)
			return 0;
		uint8_t e = p[i++];
		r->info = 1;
		r->st.ns = e & 1;
		r->exception = (e >> 1) & 0xF;
		r->cancel = (e >> 5) & 1;
		if (c->minor >= 3)
			r->st.altisa = (e >> 6) & 1;
		if (e & 0x80) {
			if (i >= n)
				return 0;
			e = p[i++];
			if (!(e & 0x40)) {
				/* byte 1: exception [8:4], Hyp */
				r->exception |= (uint16_t)((e & 0x1F) << 4);
				r->hyp_stated = 1;
				if (c->virt && !c->core_m)
					r->st.hyp = (e >> 5) & 1;
				if (e & 0x80) {
					if (i >= n)
						return 0;
					e = p[i++];
					if (!(e & 0x40))
						return fail(d, i, "exception information byte 2 expected after byte 1");
				} else {
					return (long)i;
				}
			}
			/* byte 2: resume */
			if (e & 0x80)
				return fail(d, i, "continuation bit set in exception information byte 2");
			r->resume_present = 1;
			r->resume = e & 0xF;
		}
		return (long)i;
	}
	return (long)k;
}

/* ------------------------------------------------------------------------
 * Packet parsers: fill *pkt (already zeroed) and return the packet length,
 * 0 for more input, or minus the bad length. State is only changed once
 * the whole packet is there.
 * ---------------------------------------------------------------------- */

static void state_flags(const struct csdi_etm3_istate *st, struct csd_packet *pkt)
{
	pkt->flags |= CSD_PKTF_SECURITY;
	if (st->ns)
		pkt->flags |= CSD_PKTF_NS;
	if (st->hyp)
		pkt->flags |= CSD_PKTF_HYP;
}

static long parse_branch(struct csd_etm3_pkt_decoder *d, const uint8_t *p, size_t n, struct csd_packet *pkt)
{
	struct baddr r;
	long len = parse_branch_addr(d, p, n, &d->ist, 0, &r);
	if (len <= 0)
		return len;
	pkt->type = CSD_PKT_BRANCH;
	pkt->addr = r.st.addr;
	pkt->addr_bytes = r.addr_bytes;
	pkt->isa = (uint8_t)csdi_etm3_isa_of(r.st.fam, r.st.altisa);
	if (r.full || r.info)
		pkt->flags |= CSD_PKTF_ISA;
	if (r.info) {
		state_flags(&r.st, pkt);
		if (r.st.altisa)
			pkt->flags |= CSD_PKTF_ALTISA;
	}
	if (r.info || r.deprecated) {
		pkt->flags |= CSD_PKTF_EXCEPTION;
		pkt->exception = r.exception;
		if (r.cancel)
			pkt->flags |= CSD_PKTF_CANCEL;
		if (r.resume_present) {
			pkt->flags |= CSD_PKTF_RESUME;
			pkt->tag = r.resume; /* no resume field in struct csd_packet */
		}
	}
	d->ist = r.st;
	return len;
}

static long parse_isync(struct csd_etm3_pkt_decoder *d, const uint8_t *p, size_t n, struct csd_packet *pkt)
{
	const struct csdi_etm3_cfg *c = &d->cfg;
	size_t i = 1;
	uint32_t cc = 0;

	if (p[0] == 0x70) {
		long r = parse_cycle_count(d, p + 1, n - 1, &cc);
		if (r <= 0)
			return r < 0 ? r - 1 : 0;
		i += (size_t)r;
		pkt->flags |= CSD_PKTF_CYCLE_COUNT;
		pkt->cycle_count = cc;
	}
	if (i + c->cid_bytes + 1 > n)
		return 0;
	if (c->cid_bytes) {
		uint32_t cid = 0;
		for (unsigned k = 0; k < c->cid_bytes; k++)
			cid |= (uint32_t)p[i + k] << (8 * k);
		i += c->cid_bytes;
		pkt->flags |= CSD_PKTF_CONTEXT_ID;
		pkt->context_id = cid;
	}
	struct csdi_etm3_isync_info f;
	csdi_etm3_isync_info(c, p[i++], &f);
	struct csdi_etm3_istate st = d->ist;
	pkt->type = CSD_PKT_ISYNC;
	pkt->reason = f.reason;
	st.ns = f.ns;
	st.hyp = f.hyp;
	if (c->data_only) {
		pkt->flags |= CSD_PKTF_DATA_ONLY;
		state_flags(&st, pkt);
		d->ist.ns = st.ns;
		d->ist.hyp = st.hyp;
		return (long)i;
	}
	if (i + 4 > n)
		return 0;
	uint32_t a = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 | (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
	i += 4;
	unsigned t = a & 1;
	st.altisa = f.altisa;
	if (f.j) {
		if (st.altisa)
			return fail(d, i, "I-sync: reserved combination J=1 AltISA=1");
		st.fam = CSDI_ETM3_FAM_JAZELLE;
		st.addr = a;                       /* T is address bit 0 */
	} else if (t) {
		st.fam = CSDI_ETM3_FAM_THUMB;
		st.addr = a & ~1u;
	} else {
		if (st.altisa)
			return fail(d, i, "I-sync: reserved combination J=0 T=0 AltISA=1");
		st.fam = CSDI_ETM3_FAM_ARM;
		st.addr = a;
	}
	pkt->addr = st.addr;
	if (f.lsip) {
		/* LSiP: the current instruction address follows, compressed
		 * against the data instruction address. */
		struct baddr r;
		if (i >= n)
			return 0;
		long len = parse_branch_addr(d, p + i, n - i, &st, 1, &r);
		if (len <= 0)
			return len < 0 ? len - (long)i : 0;
		if (r.exception || r.cancel || r.resume)
			return fail(d, i + (size_t)len, "I-sync: exception in the LSiP address");
		i += (size_t)len;
		pkt->flags |= CSD_PKTF_LSIP;
		pkt->data_insn_addr = st.addr;
		pkt->addr_bytes = r.addr_bytes;
		pkt->addr = r.st.addr;
		st = r.st;
	}
	pkt->flags |= CSD_PKTF_ISA;
	pkt->isa = (uint8_t)csdi_etm3_isa_of(st.fam, st.altisa);
	if (st.altisa)
		pkt->flags |= CSD_PKTF_ALTISA;
	state_flags(&st, pkt);
	d->ist = st;
	return (long)i;
}

/* Timestamp: up to 7 (48-bit) or 9 (64-bit) bytes of 7 bits with a
 * continuation bit; the last possible byte carries the remaining 6 or 8. */
static long timestamp_fields(struct csd_etm3_pkt_decoder *d, const uint8_t *p, size_t n, uint64_t *ts_out,
			     uint8_t *bits_out)
{
	const struct csdi_etm3_cfg *c = &d->cfg;
	const unsigned maxb = csdi_etm3_ts_max_bytes(c), width = csdi_etm3_ts_width(c);
	uint64_t v = 0;
	unsigned bits = 0;
	size_t i = 1;

	for (unsigned k = 0;; k++) {
		if (i >= n)
			return 0;
		uint8_t b = p[i++];
		if (k + 1 == maxb) {
			unsigned last = width - bits;   /* 6 or 8 */
			if (last < 8 && (b >> last))
				return fail(d, i, "timestamp: last byte has bits above the timestamp size");
			v |= (uint64_t)b << bits;
			bits = width;
			break;
		}
		v |= (uint64_t)(b & 0x7F) << bits;
		bits += 7;
		if (!(b & 0x80))
			break;
	}
	uint64_t mask = bits >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << bits) - 1;
	uint64_t raw = (d->ts_raw & ~mask) | v;
	uint64_t ts = raw;
	if (c->ts_gray) {
		/* binary[n] = XOR of Gray[N:n] (IHI 0014Q 7.7.3) */
		for (unsigned s = 1; s < 64; s <<= 1)
			ts ^= ts >> s;
	}
	*ts_out = ts;
	*bits_out = (uint8_t)bits;
	d->ts_raw = raw;
	if (bits > d->ts_known)
		d->ts_known = (uint8_t)bits;
	return (long)i;
}

static long parse_timestamp(struct csd_etm3_pkt_decoder *d, const uint8_t *p, size_t n, struct csd_packet *pkt)
{
	uint64_t ts;
	uint8_t bits;
	const long r = timestamp_fields(d, p, n, &ts, &bits);
	if (r > 0) {
		pkt->type = CSD_PKT_TIMESTAMP;
		pkt->ts_bits = bits;
		pkt->timestamp = ts;
	}
	return r;
}

size_t csdi_etm3_timestamp_packet(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n, uint64_t *ts,
				  uint8_t *bits)
{
	if (!n || dec->kind[p[0]] != K_TIMESTAMP)
		return 0;
	const char *err = dec->err;
	const long r = timestamp_fields(dec, p, n, ts, bits);
	dec->err = err;
	return r > 0 ? (size_t)r : 0;
}

/* Normal data b00A0SS10, out-of-order data b0TT0SS00, out-of-order
 * placeholder b01A1TT00, value not traced b011A1010 (IHI 0014Q 7.4). */
static long parse_data(struct csd_etm3_pkt_decoder *d, const uint8_t *p, size_t n, unsigned kind,
		       struct csd_packet *pkt)
{
	const struct csdi_etm3_cfg *c = &d->cfg;
	const uint8_t h = p[0];
	size_t i = 1;
	uint32_t addr = d->data_addr;
	uint8_t be = d->data_be;
	int has_addr = 0, has_value = 0;
	unsigned size = 0;

	switch (kind) {
	case K_NORMAL_DATA:
		pkt->type = CSD_PKT_NORMAL_DATA;
		has_addr = (h & 0x20) && c->data_addr;
		size = csdi_etm3_value_size((h >> 2) & 3);
		has_value = c->data_value;
		if (size && !c->data_value)
			return fail(d, 1, "normal data packet has a value size, but data value tracing is off (ETMCR[2])");
		break;
	case K_OOO_DATA:
		pkt->type = CSD_PKT_OOO_DATA;
		pkt->tag = (h >> 5) & 3;
		size = csdi_etm3_value_size((h >> 2) & 3);
		has_value = 1;
		break;
	case K_OOO_PLACEHOLDER:
		pkt->type = CSD_PKT_OOO_PLACEHOLDER;
		pkt->tag = (h >> 2) & 3;
		has_addr = (h & 0x20) && c->data_addr;
		break;
	default: /* K_VALUE_NOT_TRACED */
		pkt->type = CSD_PKT_VALUE_NOT_TRACED;
		has_addr = (h & 0x10) && c->data_addr;
		break;
	}
	if (has_addr) {
		long r = parse_data_addr(d, p + 1, n - 1, &addr, &be);
		if (r <= 0)
			return r < 0 ? r - 1 : 0;
		i += (size_t)r;
		pkt->flags |= CSD_PKTF_DATA_ADDR;
		pkt->data_addr = addr;
		pkt->addr_bytes = (uint8_t)r;
		if (be)
			pkt->flags |= CSD_PKTF_BIG_ENDIAN;
		if (kind == K_OOO_PLACEHOLDER)
			pkt->addr = addr;
	}
	if (has_value) {
		if (i + size > n)
			return 0;
		uint32_t v = 0;
		for (unsigned k = 0; k < size; k++)
			v |= (uint32_t)p[i + k] << (8 * k);
		i += size;
		pkt->flags |= CSD_PKTF_DATA_VALUE;
		pkt->data_value = v;
		pkt->data_size = (uint8_t)size;
	}
	d->data_addr = addr;
	d->data_be = be;
	return (long)i;
}

/* Parse the packet starting at p[0] (a header in a synchronised stream). */
static long parse_packet(struct csd_etm3_pkt_decoder *d, const uint8_t *p, size_t n, struct csd_packet *pkt)
{
	const uint8_t h = p[0];
	const unsigned kind = d->kind[h];

	switch (kind) {
	case K_PHDR:
		pkt->type = CSD_PKT_PHEADER;
		pkt->atoms = d->atoms[h];
		return 1;
	case K_BRANCH:
		if (!(h & 0x80)) {
			/* 1-byte branch: A[6:1] (Thumb) etc. replace the low bits */
			unsigned fam = d->ist.fam, sh = csdi_etm3_shift(fam);
			uint32_t mask = (1u << (6 + sh)) - 1;
			d->ist.addr = (d->ist.addr & ~mask) | (((uint32_t)(h >> 1) & 0x3F) << sh);
			pkt->type = CSD_PKT_BRANCH;
			pkt->addr = d->ist.addr;
			pkt->addr_bytes = 1;
			pkt->isa = (uint8_t)csdi_etm3_isa_of(fam, d->ist.altisa);
			return 1;
		}
		return parse_branch(d, p, n, pkt);
	case K_ISYNC:
	case K_ISYNC_CC:
		return parse_isync(d, p, n, pkt);
	case K_CYCLE_COUNT: {
		uint32_t cc = 0;
		long r = parse_cycle_count(d, p + 1, n - 1, &cc);
		if (r <= 0)
			return r < 0 ? r - 1 : 0;
		pkt->type = CSD_PKT_CYCLE_COUNT;
		pkt->flags |= CSD_PKTF_CYCLE_COUNT;
		pkt->cycle_count = cc;
		return r + 1;
	}
	case K_CONTEXT_ID: {
		unsigned nb = d->cfg.cid_bytes;
		if (n < 1 + nb)
			return 0;
		uint32_t cid = 0;
		for (unsigned k = 0; k < nb; k++)
			cid |= (uint32_t)p[1 + k] << (8 * k);
		pkt->type = CSD_PKT_CONTEXT_ID;
		pkt->flags |= CSD_PKTF_CONTEXT_ID;
		pkt->context_id = cid;
		return 1 + (long)nb;
	}
	case K_VMID:
		if (n < 2)
			return 0;
		pkt->type = CSD_PKT_VMID;
		pkt->vmid = p[1];
		return 2;
	case K_TIMESTAMP:
		return parse_timestamp(d, p, n, pkt);
	case K_TRIGGER:
		pkt->type = CSD_PKT_TRIGGER;
		return 1;
	case K_EXC_EXIT:
		pkt->type = CSD_PKT_EXCEPTION_EXIT;
		return 1;
	case K_EXC_ENTRY:
		pkt->type = CSD_PKT_EXCEPTION_ENTRY;
		return 1;
	case K_STORE_FAILED:
		pkt->type = CSD_PKT_STORE_FAILED;
		return 1;
	case K_DATA_SUPPRESSED:
		pkt->type = CSD_PKT_DATA_SUPPRESSED;
		return 1;
	case K_NORMAL_DATA:
	case K_OOO_DATA:
	case K_OOO_PLACEHOLDER:
	case K_VALUE_NOT_TRACED:
		return parse_data(d, p, n, kind, pkt);
	}
	return fail(d, 1, d->bad[h]);
}

/* What a packet cut by the end of the stream was, from its header. */
static const char *truncated_reason(unsigned kind)
{
	switch (kind) {
	case K_BRANCH: return "truncated branch address packet at end of stream";
	case K_CYCLE_COUNT: return "truncated cycle count packet at end of stream";
	case K_ISYNC:
	case K_ISYNC_CC: return "truncated I-sync packet at end of stream";
	case K_CONTEXT_ID: return "truncated context ID packet at end of stream";
	case K_VMID: return "truncated VMID packet at end of stream";
	case K_TIMESTAMP: return "truncated timestamp packet at end of stream";
	case K_NORMAL_DATA:
	case K_OOO_DATA:
	case K_OOO_PLACEHOLDER:
	case K_VALUE_NOT_TRACED: return "truncated data packet at end of stream";
	}
	return "truncated packet at end of stream";
}

/* ------------------------------------------------------------------------
 * Runs: A-sync (0x00 ... 0x80) and ignore (0x66 ...)
 * ---------------------------------------------------------------------- */

static void run_packet(struct csd_etm3_pkt_decoder *d, uint32_t type, size_t size, struct csd_packet *pkt)
{
	pkt->type = type;
	pkt->offset = d->run_off;
	pkt->size = size;
	size_t r = size < CSD_PKT_RAW_MAX ? size : CSD_PKT_RAW_MAX;
	memset(pkt->raw, d->run_byte, r);
	if (type == CSD_PKT_ASYNC && size <= CSD_PKT_RAW_MAX)
		pkt->raw[size - 1] = 0x80;
	d->run_len = 0;
}

/* Continue a pending run. Returns 1 with *pkt set, 0 if input ran out. */
static int continue_run(struct csd_etm3_pkt_decoder *d, struct csd_packet *pkt)
{
	for (;;) {
		const uint8_t *p;
		size_t n = csdi_in_view(&d->in, &p), i = 0;
		while (i < n && p[i] == d->run_byte)
			i++;
		if (i == n) {
			d->run_len += n;
			csdi_in_consume(&d->in, n);
			if (n > 0)
				continue;
			if (!d->in.finished)
				return 0;
			/* end of stream inside the run */
			*pkt = zero_packet;
			if (d->run_byte == 0x66) {
				run_packet(d, CSD_PKT_IGNORE, d->run_len, pkt);
			} else {
				run_packet(d, CSD_PKT_TRUNCATED, d->run_len, pkt);
				pkt->error = "truncated A-sync packet at end of stream";
				d->synced = 0;
			}
			return 1;
		}
		d->run_len += i;
		*pkt = zero_packet;
		if (d->run_byte == 0x66) {
			csdi_in_consume(&d->in, i);
			run_packet(d, CSD_PKT_IGNORE, d->run_len, pkt);
		} else if (p[i] == 0x80 && d->run_len >= 5) {
			csdi_in_consume(&d->in, i + 1);
			run_packet(d, CSD_PKT_ASYNC, d->run_len + 1, pkt);
		} else {
			/* The zeros are bad; the byte after them is looked at
			 * again by the A-sync search. */
			csdi_in_consume(&d->in, i);
			run_packet(d, CSD_PKT_ERROR, d->run_len, pkt);
			pkt->error = p[i] == 0x80 ? "A-sync with fewer than five 0x00 bytes"
						  : "0x00 bytes not followed by 0x80 (bad A-sync)";
			d->synced = 0;
		}
		return 1;
	}
}

/* ------------------------------------------------------------------------
 * Main loop
 * ---------------------------------------------------------------------- */

#if defined(__GNUC__)
#define NOINLINE __attribute__((noinline))
#else
#define NOINLINE
#endif

/* Everything but a P-header in the current run: other whole packets in
 * the run, then (next_general) A-sync search, runs, staged packets,
 * errors, end of input. Kept out of line so that the P-header path, by
 * far the most common packet, needs no stack frame. */
static NOINLINE int next_packet(struct csd_etm3_pkt_decoder *d, struct csd_packet *pkt);
static NOINLINE int next_general(struct csd_etm3_pkt_decoder *d, struct csd_packet *pkt);

int csd_etm3_pkt_next(csd_etm3_pkt_decoder *dec, struct csd_packet *pkt)
{
	if (!dec || !pkt)
		return CSD_EINVAL;
	struct csdi_input *in = &dec->in;
	const size_t pos = in->pos;

	/* Synchronised, nothing staged, no 0x00 / 0x66 run being counted,
	 * and the next byte of the current run is a P-header. */
	if (in->have_run && !in->stage_len && dec->synced && !dec->run_len) {
		const uint8_t h = in->run.data[pos];
		if (dec->kind[h] == K_PHDR) {
			csdi_pkt_clear(pkt);
			pkt->type = CSD_PKT_PHEADER;
			pkt->atoms = dec->atoms[h];
			pkt->offset = in->run.offsets ? in->run.offsets[pos] : in->run.base + pos;
			pkt->size = 1;
			pkt->raw[0] = h;
			in->pos = pos + 1;
			in->have_run = pos + 1 < in->run.size;
			return CSD_OK;
		}
		return next_packet(dec, pkt);
	}
	/* The run is used up and no packet is cut: what next_general would
	 * find, without looking (once per run fed, so it matters). */
	if (!in->have_run && !in->stage_len && dec->synced && !dec->run_len)
		return in->finished ? CSD_EEOS : CSD_EAGAIN;
	return next_general(dec, pkt);
}

/* A packet other than a P-header that starts in the current run of a
 * synchronised decoder with nothing staged. */
static NOINLINE int next_packet(struct csd_etm3_pkt_decoder *d, struct csd_packet *pkt)
{
	struct csdi_input *in = &d->in;
	const size_t pos = in->pos;
	const uint8_t *p = in->run.data + pos;
	const uint8_t h = p[0];

	if (h != 0x00 && h != 0x66) {
		csdi_pkt_clear(pkt);
		long len = parse_packet(d, p, in->run.size - pos, pkt);
		if (len > 0) {
			pkt->offset = in->run.offsets ? in->run.offsets[pos] : in->run.base + pos;
			pkt->size = (uint32_t)len;
			memcpy(pkt->raw, p, (size_t)len < CSD_PKT_RAW_MAX ? (size_t)len : CSD_PKT_RAW_MAX);
			in->pos = pos + (size_t)len;
			in->have_run = in->pos < in->run.size;
			return CSD_OK;
		}
	}
	return next_general(d, pkt);
}

static NOINLINE int next_general(struct csd_etm3_pkt_decoder *d, struct csd_packet *pkt)
{
	if (!d->synced) {
		if (csdi_in_seek_async(&d->in, pkt)) {
			if (pkt->type == CSD_PKT_ASYNC)
				d->synced = 1;
			return CSD_OK;
		}
		return d->in.finished ? CSD_EEOS : CSD_EAGAIN;
	}
	if (d->run_len)
		return continue_run(d, pkt) ? CSD_OK : CSD_EAGAIN;

	const uint8_t *p;
	size_t n = csdi_in_view(&d->in, &p);
	if (n == 0)
		return d->in.finished ? CSD_EEOS : CSD_EAGAIN;
	if (p[0] == 0x00 || p[0] == 0x66) {
		d->run_byte = p[0];
		d->run_off = csdi_in_offset(&d->in, 0);
		d->run_len = 0;
		/* run_len == 0 with run_byte set: continue_run counts from p[0] */
		if (continue_run(d, pkt))
			return CSD_OK;
		return CSD_EAGAIN;
	}

	*pkt = zero_packet;
	long len = parse_packet(d, p, n, pkt);
	if (len > 0) {
		csdi_in_fill(&d->in, p, (size_t)len, pkt);
		csdi_in_consume(&d->in, (size_t)len);
		return CSD_OK;
	}
	if (len == 0) {
		if (!d->in.finished) {
			csdi_in_stash(&d->in);
			return CSD_EAGAIN;
		}
		*pkt = zero_packet;
		pkt->type = CSD_PKT_TRUNCATED;
		pkt->error = truncated_reason(d->kind[p[0]]);
		csdi_in_fill(&d->in, p, n, pkt);
		csdi_in_consume(&d->in, n);
		d->synced = 0;
		return CSD_OK;
	}
	size_t bad = (size_t)-len;
	*pkt = zero_packet;
	pkt->type = CSD_PKT_ERROR;
	pkt->error = d->err ? d->err : "bad packet";
	csdi_in_fill(&d->in, p, bad, pkt);
	csdi_in_consume(&d->in, bad);
	d->synced = 0;
	return CSD_OK;
}

/* ------------------------------------------------------------------------
 * Packets in brief
 * ---------------------------------------------------------------------- */

static NOINLINE size_t branch_packet_general(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n,
					    struct csdi_etm3_branch *b);

/* The decoder's address state after the plain I-sync y. */
static inline void isync_plain_commit(csd_etm3_pkt_decoder *dec, const struct csdi_etm3_isync_plain *y)
{
	dec->ist = (struct csdi_etm3_istate){ .addr = y->addr, .fam = y->fam, .ns = y->ns };
}

/* The I-sync at p (n bytes) parsed into *pkt (cleared first) for a fast
 * path: its length, or <= 0 as parse_isync() says; a failed parse's
 * reason is not kept (the packet decoder finds and reports it itself). */
static long isync_parse_quiet(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n, struct csd_packet *pkt)
{
	const char *err = dec->err;
	csdi_pkt_clear(pkt);
	const long r = parse_isync(dec, p, n, pkt);
	dec->err = err;
	return r;
}

/* The I-sync at p (n bytes there) in brief into *o: its length, or 0 when
 * it is cut short, bad or of a form a brief one cannot hold; then nothing
 * has changed and csd_etm3_pkt_next() takes it. (Out of line: one packet
 * in a few hundred, where the loop's registers matter per packet.) */
static NOINLINE size_t isync_brief(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n, struct csd_pkt_brief *o)
{
	struct csdi_etm3_isync_plain y;
	const size_t len = csdi_etm3_isync_plain(&dec->cfg, p, n, &y);
	if (len) {
		isync_plain_commit(dec, &y);
		csdi_isync_brief_fill(o, y.addr, y.cc, y.has_cc, (unsigned)csdi_etm3_isa_of(y.fam, 0), y.reason, y.ns);
		return len;
	}
	struct csd_packet pkt;
	const struct csdi_etm3_istate ist = dec->ist;
	const long r = isync_parse_quiet(dec, p, n, &pkt);
	if (r <= 0 || !csdi_isync_brief(&pkt, o)) {
		dec->ist = ist;
		return 0;
	}
	return (size_t)r;
}

/* The loop of csd_etm3_pkt_next_brief() for offsets given per byte
 * (has_offs) or as base + index, made once for each. Offsets are given as
 * 32-bit distances from the first packet's (b0): per-byte offsets end the
 * call where one would not fit. */
static inline __attribute__((always_inline)) int brief_loop(csd_etm3_pkt_decoder *dec, struct csd_pkt_brief *out,
							     size_t cap, uint64_t *b0, const int has_offs)
{
	struct csdi_input *in = &dec->in;
	const uint8_t *const p = in->run.data;
	const size_t end = in->run.size;
	const uint8_t *const kind = dec->kind;
	const struct csd_pkt_brief *const tmpl = dec->brief;
	const int alt = dec->cfg.alt_branch;
	size_t pos = in->pos, n = 0;
	/* offs[i] - base: the distance of byte i from the first packet. */
	const uint64_t *const offs = in->run.offsets;
	const uint64_t base = has_offs ? offs[pos] : in->run.base + pos;
	const size_t first = pos;
	*b0 = base;
#define BRIEF_DIST(i) (has_offs ? offs[i] - base : (uint64_t)((i) - first))
	/* The address state in locals; the forms taken here change only
	 * the address. */
	uint32_t addr = dec->ist.addr;
	unsigned sh = csdi_etm3_shift(dec->ist.fam);
	uint8_t isa = (uint8_t)csdi_etm3_isa_of(dec->ist.fam, dec->ist.altisa);
	while (n < cap && pos < end) {
		/* A run of P-headers: a table copy each. */
		const size_t lim = end - pos < cap - n ? end : pos + (cap - n);
		struct csd_pkt_brief *o = out + n;
		size_t i = pos;
		/* Four at a time (the loop's own count, compare and branch
		 * were a third of its instructions); the distances' high bits
		 * gathered and looked at once, after the loop. */
		uint64_t hi = 0;
		for (; lim - i >= 4; i += 4, o += 4) {
#define BRIEF_PHDR(t)                                   \
	do {                                                    \
		const uint8_t h_ = p[i + (t)];                  \
		if (kind[h_] != K_PHDR) {                       \
			i += (t);                               \
			o += (t);                               \
			goto phdr_end;                          \
		}                                               \
		const uint64_t d_ = BRIEF_DIST(i + (t));        \
		hi |= d_;                                       \
		o[t] = tmpl[h_];                                \
		o[t].offset = (uint32_t)d_;                     \
	} while (0)
			BRIEF_PHDR(0);
			BRIEF_PHDR(1);
			BRIEF_PHDR(2);
			BRIEF_PHDR(3);
#undef BRIEF_PHDR
		}
		for (; i < lim && kind[p[i]] == K_PHDR; i++, o++) {
			const uint64_t d = BRIEF_DIST(i);
			hi |= d;
			*o = tmpl[p[i]];
			o->offset = (uint32_t)d;
		}
phdr_end:
		if (has_offs && hi > UINT32_MAX) {
			/* Some distance does not fit: end the call at the
			 * first such packet (never with a demultiplexer's
			 * offsets, which stay close). */
			size_t j = pos;
			while (j < i && BRIEF_DIST(j) <= UINT32_MAX)
				j++;
			n += j - pos;
			pos = j;
			break;
		}
		n += i - pos;
		pos = i;
		if (pos == lim)
			continue;
		/* Branch address packets (without exception information) and
		 * cycle counts, when whole and good; no state changes until
		 * then (errors are the packet decoder's). Filled in place. */
		const uint8_t h = p[pos];
		const uint64_t d = BRIEF_DIST(pos);
		size_t len;
		if (has_offs && d > UINT32_MAX)
			break;
		memset(o, 0, sizeof(*o));
		if (kind[h] == K_BRANCH) {
			o->type = CSD_PKT_BRANCH;
			len = csdi_etm3_branch_quick(p + pos, end - pos, alt, addr, sh, &addr);
			if (len) {
				o->addr = addr;
				o->flags = (uint8_t)(len << 5 | isa << 2);
			} else {
				/* The other forms, as the flow decoder takes
				 * them (the quick parse just failed). */
				struct csdi_etm3_branch b;
				dec->ist.addr = addr;
				len = branch_packet_general(dec, p + pos, end - pos, &b);
				if (!len)
					break;
				csdi_etm3_branch_commit(dec, &b);
				addr = dec->ist.addr;
				sh = csdi_etm3_shift(dec->ist.fam);
				isa = (uint8_t)csdi_etm3_isa_of(dec->ist.fam, dec->ist.altisa);
				o->addr = b.addr;
				o->flags = (uint8_t)(b.addr_bytes << 5 | b.isa << 2 | (b.full ? CSD_BRIEF_ISA : 0));
			}
		} else if (kind[h] == K_CYCLE_COUNT) {
			uint32_t cc = 0;
			len = csdi_etm3_cycle_count_quick(p + pos, end - pos, &cc);
			if (!len)
				break;
			o->type = CSD_PKT_CYCLE_COUNT;
			o->flags = CSD_BRIEF_CYCLE_COUNT;
			o->cycle_count = cc;
		} else if (kind[h] == K_TIMESTAMP) {
			uint64_t ts;
			uint8_t bits;
			len = csdi_etm3_timestamp_packet(dec, p + pos, end - pos, &ts, &bits);
			if (!len)
				break;
			o->type = CSD_PKT_TIMESTAMP;
			o->addr = (uint32_t)ts;
			o->cycle_count = (uint32_t)(ts >> 32);
			o->flags = (uint8_t)((bits - 1u) << 2);
		} else if (kind[h] == K_ISYNC || kind[h] == K_ISYNC_CC) {
			/* (An LSiP I-sync's address is compressed against
			 * the state's.) */
			dec->ist.addr = addr;
			len = isync_brief(dec, p + pos, end - pos, o);
			if (!len)
				break;
			addr = dec->ist.addr;
			sh = csdi_etm3_shift(dec->ist.fam);
			isa = (uint8_t)csdi_etm3_isa_of(dec->ist.fam, dec->ist.altisa);
		} else {
			break;
		}
		o->offset = (uint32_t)d;
		o->size = (uint8_t)len;
		pos += len;
		n++;
	}
#undef BRIEF_DIST
	dec->ist.addr = addr;
	in->pos = pos;
	in->have_run = pos < end;
	return (int)n;
}

int csd_etm3_pkt_next_brief(csd_etm3_pkt_decoder *dec, struct csd_pkt_brief *out, size_t cap, uint64_t *base)
{
	if (!dec || !base || (cap && !out))
		return CSD_EINVAL;
	const struct csdi_input *in = &dec->in;
	/* What csd_etm3_pkt_next() takes straight from the run. */
	if (!in->have_run || in->stage_len || !dec->synced || dec->run_len)
		return 0;
	if (cap > CSDI_BRIEF_MAX)
		cap = CSDI_BRIEF_MAX;
	return in->run.offsets ? brief_loop(dec, out, cap, base, 1) : brief_loop(dec, out, cap, base, 0);
}

/* ------------------------------------------------------------------------
 * Fast path for the flow decoder (see csdi_etm3_pkt_pheaders)
 * ---------------------------------------------------------------------- */

size_t csdi_etm3_pkt_pheaders(const csd_etm3_pkt_decoder *dec, const uint8_t **hdr, const struct csd_atoms **atoms,
			      const uint8_t **is_phdr)
{
	const struct csdi_input *in = &dec->in;
	if (!in->have_run || in->stage_len || !dec->synced || dec->run_len)
		return 0;
	const uint8_t *p = in->run.data + in->pos;
	size_t avail = in->run.size - in->pos;
	if (!avail || !dec->is_phdr[p[0]])
		return 0;
	*hdr = p;
	*atoms = dec->atoms;
	*is_phdr = dec->is_phdr;
	return avail;
}

void csdi_etm3_pkt_offsets(const csd_etm3_pkt_decoder *dec, const uint64_t **offsets, uint64_t *base)
{
	const struct csdi_input *in = &dec->in;
	*offsets = in->run.offsets ? in->run.offsets + in->pos : NULL;
	*base = in->run.base + in->pos;
}

uint64_t csdi_etm3_pkt_offset(const csd_etm3_pkt_decoder *dec, size_t k)
{
	const struct csdi_input *in = &dec->in;
	return in->run.offsets ? in->run.offsets[in->pos + k] : in->run.base + in->pos + k;
}

size_t csdi_etm3_isync_packet(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n, size_t k, struct csd_packet *pkt)
{
	if (!n || (dec->kind[p[0]] != K_ISYNC && dec->kind[p[0]] != K_ISYNC_CC))
		return 0;
	struct csdi_etm3_isync_plain y;
	long r = (long)csdi_etm3_isync_plain(&dec->cfg, p, n, &y);
	if (r) {
		/* parse_isync()'s packet for the plain form. */
		csdi_pkt_clear(pkt);
		isync_plain_commit(dec, &y);
		pkt->type = CSD_PKT_ISYNC;
		pkt->flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY | (y.ns ? CSD_PKTF_NS : 0) |
			     (y.has_cc ? CSD_PKTF_CYCLE_COUNT : 0);
		pkt->cycle_count = y.cc;
		pkt->reason = y.reason;
		pkt->addr = y.addr;
		pkt->isa = (uint8_t)csdi_etm3_isa_of(y.fam, 0);
	} else {
		r = isync_parse_quiet(dec, p, n, pkt);
	}
	if (r <= 0)
		return 0;
	pkt->offset = csdi_etm3_pkt_offset(dec, k);
	pkt->size = (uint32_t)r;
	memcpy(pkt->raw, p, (size_t)r < CSD_PKT_RAW_MAX ? (size_t)r : CSD_PKT_RAW_MAX);
	return (size_t)r;
}

void csdi_etm3_pkt_skip(csd_etm3_pkt_decoder *dec, size_t n)
{
	struct csdi_input *in = &dec->in;
	in->pos += n;
	in->have_run = in->pos < in->run.size;
}

/* ------------------------------------------------------------------------
 * Branch address packets for the flow decoder's P-header runs
 * ---------------------------------------------------------------------- */

const struct csdi_etm3_istate *csdi_etm3_pkt_addr_state(const csd_etm3_pkt_decoder *dec, int *alt_branch)
{
	*alt_branch = dec->cfg.alt_branch;
	return &dec->ist;
}

void csdi_etm3_pkt_set_addr(csd_etm3_pkt_decoder *dec, uint32_t addr)
{
	dec->ist.addr = addr;
}

size_t csdi_etm3_branch_packet(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n, struct csdi_etm3_branch *b)
{
	if (!n || dec->kind[p[0]] != K_BRANCH)
		return 0;
	/* The common forms (1-4 address bytes, no exception information)
	 * the quick way; they leave everything but the address as it is.
	 * The rest out of line, so that this needs no stack frame. */
	uint32_t addr;
	size_t k = csdi_etm3_branch_quick(p, n, dec->cfg.alt_branch, dec->ist.addr, csdi_etm3_shift(dec->ist.fam), &addr);
	if (!k)
		return branch_packet_general(dec, p, n, b);
	b->addr = addr;
	b->isa = (uint8_t)csdi_etm3_isa_of(dec->ist.fam, dec->ist.altisa);
	b->addr_bytes = (uint8_t)k;
	b->full = 0;
	b->fam = dec->ist.fam;
	b->altisa = dec->ist.altisa;
	b->ns = dec->ist.ns;
	b->hyp = dec->ist.hyp;
	b->addr_only = 1;
	return k;
}

static NOINLINE size_t branch_packet_general(csd_etm3_pkt_decoder *dec, const uint8_t *p, size_t n,
					    struct csdi_etm3_branch *b)
{
	struct baddr r;
	const char *err = dec->err;
	long len = parse_branch_addr(dec, p, n, &dec->ist, 0, &r);
	dec->err = err; /* a failed parse is left to the packet decoder, which reports it */
	if (len <= 0 || r.info || r.deprecated)
		return 0;
	b->addr = r.st.addr;
	b->isa = (uint8_t)csdi_etm3_isa_of(r.st.fam, r.st.altisa);
	b->addr_bytes = r.addr_bytes;
	b->full = (uint8_t)r.full;
	b->fam = r.st.fam;
	b->altisa = r.st.altisa;
	b->ns = r.st.ns;
	b->hyp = r.st.hyp;
	b->addr_only = 0;
	return (size_t)len;
}

void csdi_etm3_branch_commit(csd_etm3_pkt_decoder *dec, const struct csdi_etm3_branch *b)
{
	dec->ist.addr = b->addr;
	/* (Copying the state bytes that were just stored one by one would
	 * read them back as one word: a store-forwarding stall.) */
	if (b->addr_only)
		return;
	dec->ist.fam = b->fam;
	dec->ist.altisa = b->altisa;
	dec->ist.ns = b->ns;
	dec->ist.hyp = b->hyp;
}

void csdi_etm3_branch_fill(const struct csdi_etm3_branch *b, struct csd_packet *pkt)
{
	csdi_pkt_clear(pkt);
	pkt->type = CSD_PKT_BRANCH;
	pkt->addr = b->addr;
	pkt->addr_bytes = b->addr_bytes;
	pkt->isa = b->isa;
	if (b->full)
		pkt->flags |= CSD_PKTF_ISA;
}
