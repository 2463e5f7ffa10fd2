/* etm3_enc.c - ETMv3 packet encoder: struct csd_packet -> bytes, the exact
 * inverse of etm3_pkt.c. The encoder keeps the same compression state as
 * the decoder (last instruction address and instruction set, NS/Hyp,
 * last data address and endianness, last timestamp), so its output decodes
 * back to the packets it was given.
 *
 * Choices where the protocol allows several encodings:
 *   - addresses, data addresses and timestamps use the fewest bytes unless
 *     pkt->addr_bytes (addresses) or pkt->ts_bits (timestamps) asks for
 *     more; cycle counts always use the fewest bytes;
 *   - branch exception information bytes are written when the packet has
 *     CSD_PKTF_EXCEPTION, CSD_PKTF_SECURITY, CSD_PKTF_CANCEL or
 *     CSD_PKTF_RESUME, or when the AltISA bit must change (ThumbEE <->
 *     Thumb); byte 1 when the exception number is above 15 or Hyp changes;
 *     byte 2 with CSD_PKTF_RESUME (resume value in pkt->tag, 0..15);
 *   - the deprecated exception form of branch address byte 5 is never
 *     written; timestamp headers have R = 0.
 */
#include <stdlib.h>
#include <string.h>

#include "etm3_internal.h"

/* Longest packet the encoder writes: LSiP I-sync with a 5-byte cycle
 * count, 4-byte context ID and 5-byte current address = 20 bytes. */
#define ENC_MAX 32

struct enc_istate {
	uint32_t addr;
	uint8_t fam;
	uint8_t altisa;
	uint8_t ns;
	uint8_t hyp;
};

struct csd_etm3_encoder {
	struct csdi_etm3_cfg cfg;
	struct enc_istate ist;
	uint32_t data_addr;
	uint8_t data_be;
	uint64_t ts_raw;
};

csd_etm3_encoder *csd_etm3_enc_new(const struct csd_trace_config *cfg)
{
	struct csdi_etm3_cfg c;

	if (csdi_etm3_cfg_init(&c, cfg) != CSD_OK)
		return NULL;
	csd_etm3_encoder *e = calloc(1, sizeof(*e));
	if (!e)
		return NULL;
	e->cfg = c;
	e->ist.fam = CSDI_ETM3_FAM_UNKNOWN;
	return e;
}

void csd_etm3_enc_free(csd_etm3_encoder *enc)
{
	free(enc);
}

/* Cycle count: fewest bytes of 7 bits, the fifth holds bits [31:28]. */
static size_t put_cycle_count(uint8_t *o, uint32_t v)
{
	size_t k = 0;
	while (k < 4) {
		uint8_t b = v & 0x7F;
		v >>= 7;
		if (v == 0) {
			o[k++] = b;
			return k;
		}
		o[k++] = b | 0x80;
	}
	o[k++] = (uint8_t)v;
	return k;
}

static int fits(uint32_t v, unsigned bytes)
{
	return bytes >= 4 || v < (1u << (8 * bytes));
}

static size_t put_le(uint8_t *o, uint32_t v, unsigned bytes)
{
	for (unsigned k = 0; k < bytes; k++)
		o[k] = (uint8_t)(v >> (8 * k));
	return bytes;
}

/* Exception information wanted after a branch-style address. */
struct exc_info {
	int present;
	uint16_t exception;
	uint8_t cancel;
	uint8_t resume_present;
	uint8_t resume;
	uint8_t ns;
	uint8_t hyp;
};

/* Branch-style address of `fam` for addr, compressed against *base
 * (IHI 0014Q 7.3.5). want_alt is the AltISA state wanted afterwards.
 * Writes into o (>= 8 bytes) and the state the decoder will have into
 * *after. Returns bytes written or CSD_EBADPKT. `lsip`: no exception. */
static int put_branch_addr(const struct csdi_etm3_cfg *c, const struct enc_istate *base,
			   uint32_t addr, unsigned fam, int want_alt, struct exc_info *x,
			   unsigned min_bytes, uint8_t *o, struct enc_istate *after, unsigned *addr_bytes)
{
	const int alt = c->alt_branch;
	const unsigned sh = csdi_etm3_shift(fam);

	if (min_bytes > 5)
		return CSD_EBADPKT;
	if (addr & ((1u << sh) - 1))
		return CSD_EBADPKT;            /* not aligned for the instruction set */
	if (want_alt && (fam != CSDI_ETM3_FAM_THUMB || c->minor < 3))
		return CSD_EBADPKT;

	int full = fam != base->fam;
	unsigned implied_alt = full ? 0 : base->altisa;
	if (fam == CSDI_ETM3_FAM_THUMB && (unsigned)want_alt != implied_alt)
		x->present = 1;
	if (x->present && x->hyp != base->hyp && !(c->virt && !c->core_m))
		return CSD_EBADPKT;            /* no Hyp bit in this configuration */
	if (x->present && (x->exception > 0x1FF || x->resume > 15))
		return CSD_EBADPKT;

	unsigned k = 5;
	if (!full) {
		for (k = 1; k < 5; k++)
			if (((addr ^ base->addr) >> (csdi_etm3_addr_bits(alt, k) + sh)) == 0)
				break;
	}
	if (x->present && !alt)
		k = 5;                         /* original encoding: E bit only in byte 5 */
	if (x->present && k < 2)
		k = 2;
	if (k < min_bytes)
		k = min_bytes;
	if (k == 5 && fam == CSDI_ETM3_FAM_UNKNOWN)
		return CSD_EBADPKT;            /* byte 5 must state the instruction set */

	uint32_t v = addr >> sh;
	size_t i = 0;
	unsigned pos = 6;
	o[i++] = (uint8_t)(0x01 | ((v & 0x3F) << 1) | (k > 1 ? 0x80 : 0));
	for (unsigned j = 1; j < k && j < 4; j++) {
		int last = j == k - 1;
		if (last && alt) {
			o[i++] = (uint8_t)(((v >> pos) & 0x3F) | (x->present ? 0x40 : 0));
			pos += 6;
		} else {
			o[i++] = (uint8_t)(((v >> pos) & 0x7F) | (last ? 0 : 0x80));
			pos += 7;
		}
	}
	if (k == 5)
		o[i++] = (uint8_t)(csdi_etm3_byte5_tag(fam) | ((v >> 27) & csdi_etm3_byte5_mask(fam))
				   | (x->present ? 0x40 : 0));
	*addr_bytes = k;

	*after = *base;
	after->addr = addr;
	after->fam = (uint8_t)fam;
	after->altisa = (uint8_t)implied_alt;
	if (x->present) {
		int byte1 = x->exception > 15 || x->hyp != base->hyp;
		int byte2 = x->resume_present;
		o[i++] = (uint8_t)((byte1 || byte2 ? 0x80 : 0) | (c->minor >= 3 && want_alt ? 0x40 : 0)
				   | (x->cancel ? 0x20 : 0) | ((x->exception & 0xF) << 1) | (x->ns & 1));
		if (byte1)
			o[i++] = (uint8_t)((byte2 ? 0x80 : 0) | (x->hyp ? 0x20 : 0) | ((x->exception >> 4) & 0x1F));
		if (byte2)
			o[i++] = (uint8_t)(0x40 | (x->resume & 0xF));
		after->altisa = (uint8_t)(c->minor >= 3 && want_alt);
		after->ns = x->ns & 1;
		if (byte1)
			after->hyp = x->hyp & 1;
	}
	return (int)i;
}

/* The instruction set family a packet asks for; the current one if it
 * does not say. */
static unsigned pkt_family(const struct enc_istate *st, const struct csd_packet *pkt)
{
	unsigned fam = csdi_etm3_family_of(pkt->isa);
	return fam == CSDI_ETM3_FAM_UNKNOWN ? st->fam : fam;
}

static int enc_branch(struct csd_etm3_encoder *e, const struct csd_packet *pkt, uint8_t *o)
{
	struct exc_info x;
	struct enc_istate after;
	unsigned nb;

	memset(&x, 0, sizeof(x));
	x.present = (pkt->flags & (CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY | CSD_PKTF_CANCEL | CSD_PKTF_RESUME)) != 0;
	x.exception = (pkt->flags & CSD_PKTF_EXCEPTION) ? pkt->exception : 0;
	x.cancel = (pkt->flags & CSD_PKTF_CANCEL) != 0;
	x.resume_present = (pkt->flags & CSD_PKTF_RESUME) != 0;
	x.resume = x.resume_present ? pkt->tag : 0;
	if (pkt->flags & CSD_PKTF_SECURITY) {
		x.ns = (pkt->flags & CSD_PKTF_NS) != 0;
		x.hyp = (pkt->flags & CSD_PKTF_HYP) != 0;
	} else {
		x.ns = e->ist.ns;
		x.hyp = e->ist.hyp;
	}
	int r = put_branch_addr(&e->cfg, &e->ist, pkt->addr, pkt_family(&e->ist, pkt),
				pkt->isa == CSD_ISA_THUMBEE, &x, pkt->addr_bytes, o, &after, &nb);
	if (r < 0)
		return r;
	e->ist = after;
	return r;
}

static int enc_isync(struct csd_etm3_encoder *e, const struct csd_packet *pkt, uint8_t *o)
{
	const struct csdi_etm3_cfg *c = &e->cfg;
	size_t i = 0;
	const int lsip = (pkt->flags & CSD_PKTF_LSIP) != 0;
	const unsigned ns = (pkt->flags & CSD_PKTF_NS) != 0, hyp = (pkt->flags & CSD_PKTF_HYP) != 0;

	if (pkt->reason > 3 || (hyp && !(c->virt && !c->core_m)))
		return CSD_EBADPKT;
	if (pkt->flags & CSD_PKTF_CYCLE_COUNT) {
		o[i++] = 0x70;
		i += put_cycle_count(o + i, pkt->cycle_count);
	} else {
		o[i++] = 0x08;
	}
	if (c->cid_bytes) {
		if (!fits(pkt->context_id, c->cid_bytes))
			return CSD_EBADPKT;
		i += put_le(o + i, pkt->context_id, c->cid_bytes);
	}
	uint8_t info = (uint8_t)(pkt->reason << 5 | ns << 3 | hyp << 1);
	if (c->data_only) {
		if (lsip)
			return CSD_EBADPKT;
		o[i++] = info;
		e->ist.ns = (uint8_t)ns;
		e->ist.hyp = (uint8_t)hyp;
		return (int)i;
	}
	unsigned fam = csdi_etm3_family_of(pkt->isa);
	int alt = pkt->isa == CSD_ISA_THUMBEE;
	if (fam == CSDI_ETM3_FAM_UNKNOWN || (alt && c->minor < 3))
		return CSD_EBADPKT;
	uint32_t a = lsip ? pkt->data_insn_addr : pkt->addr;
	if (fam == CSDI_ETM3_FAM_THUMB) {
		if (a & 1)
			return CSD_EBADPKT;
		a |= 1;                                /* T bit */
	} else if (fam == CSDI_ETM3_FAM_ARM && (a & 1)) {
		return CSD_EBADPKT;
	}
	info |= (uint8_t)((lsip ? 0x80 : 0) | (fam == CSDI_ETM3_FAM_JAZELLE ? 0x10 : 0) | (alt ? 0x04 : 0));
	o[i++] = info;
	i += put_le(o + i, a, 4);

	struct enc_istate st = { .addr = fam == CSDI_ETM3_FAM_THUMB ? a & ~1u : a, .fam = (uint8_t)fam,
				 .altisa = (uint8_t)alt, .ns = (uint8_t)ns, .hyp = (uint8_t)hyp };
	if (lsip) {
		struct exc_info x;
		struct enc_istate after;
		unsigned nb;
		memset(&x, 0, sizeof(x));
		x.ns = (uint8_t)ns;
		x.hyp = (uint8_t)hyp;
		int r = put_branch_addr(c, &st, pkt->addr, fam, alt, &x, pkt->addr_bytes, o + i, &after, &nb);
		if (r < 0)
			return r;
		i += (size_t)r;
		st = after;
	}
	e->ist = st;
	return (int)i;
}

/* P-header from atoms (IHI 0014Q tables 7.2 and 7.3). */
static int enc_pheader(const struct csdi_etm3_cfg *c, const struct csd_atoms *a, uint8_t *o)
{
	const unsigned num = a->num, w = a->w;
	const uint32_t en = a->en;

	if (num > 16 || (num < 32 && (en >> num)))
		return CSD_EBADPKT;
	switch (a->format) {
	case 0:
		if (!c->cycle_acc || c->minor != 0 || num != 0 || w != 1)
			return CSD_EBADPKT;
		o[0] = 0x80;
		return 1;
	case 1: {
		/* E atoms then at most one N */
		unsigned nbit = num > 0 && !((en >> (num - 1)) & 1);
		unsigned ecount = num - nbit;
		if (en != (1u << ecount) - 1)
			return CSD_EBADPKT;
		if (!c->cycle_acc) {
			if (w != 0 || ecount > 15)
				return CSD_EBADPKT;
		} else if (w != num || num == 0 || ecount > 7) {
			return CSD_EBADPKT;
		}
		o[0] = (uint8_t)(0x80 | nbit << 6 | ecount << 2);
		return 1;
	}
	case 2:
		if (num != 2 || w != (c->cycle_acc ? 1u : 0u))
			return CSD_EBADPKT;
		o[0] = (uint8_t)(0x82 | ((en & 1) ? 0 : 0x08) | ((en & 2) ? 0 : 0x04));
		return 1;
	case 3:
		if (!c->cycle_acc || w < 1 || w > 8 || num > 1 || en != num)
			return CSD_EBADPKT;        /* 1-8 W, then at most one E */
		o[0] = (uint8_t)(0xA0 | num << 6 | (w - 1) << 2);
		return 1;
	case 4:
		if (!c->cycle_acc || c->minor < 3 || num != 1 || w != 0)
			return CSD_EBADPKT;
		o[0] = (uint8_t)(0x92 | ((en & 1) ? 0 : 0x04));
		return 1;
	}
	return CSD_EBADPKT;
}

static int enc_timestamp(struct csd_etm3_encoder *e, const struct csd_packet *pkt, uint8_t *o)
{
	const struct csdi_etm3_cfg *c = &e->cfg;
	const unsigned width = csdi_etm3_ts_width(c), maxb = csdi_etm3_ts_max_bytes(c);
	uint64_t ts = pkt->timestamp;

	if (c->minor < 5 || pkt->ts_bits > width || (width < 64 && (ts >> width)))
		return CSD_EBADPKT;
	uint64_t raw = c->ts_gray ? ts ^ (ts >> 1) : ts;
	uint64_t diff = raw ^ e->ts_raw;
	unsigned k = 1;
	for (;; k++) {
		unsigned bits = k == maxb ? width : 7 * k;
		if (bits >= 64 || ((diff >> bits) == 0 && bits >= pkt->ts_bits))
			break;
	}
	size_t i = 0;
	o[i++] = 0x42;
	for (unsigned j = 0; j < k; j++) {
		if (j == maxb - 1)
			o[i++] = (uint8_t)(raw >> (7 * j));
		else
			o[i++] = (uint8_t)(((raw >> (7 * j)) & 0x7F) | (j + 1 < k ? 0x80 : 0));
	}
	e->ts_raw = raw;
	return (int)i;
}

/* Data address compressed against the last one; byte 5 holds A[31:28] and
 * the big-endian bit. */
static size_t put_data_addr(struct csd_etm3_encoder *e, uint32_t a, int be, unsigned min_bytes, uint8_t *o)
{
	unsigned k = 1;
	while (k < 5 && ((a ^ e->data_addr) >> (7 * k)) != 0)
		k++;
	if (be != e->data_be)
		k = 5;
	if (k < min_bytes)
		k = min_bytes;
	for (unsigned j = 0; j < k && j < 4; j++)
		o[j] = (uint8_t)(((a >> (7 * j)) & 0x7F) | (j + 1 < k ? 0x80 : 0));
	if (k == 5)
		o[4] = (uint8_t)(((a >> 28) & 0x0F) | (be ? 0x10 : 0));
	e->data_addr = a;
	if (k == 5)
		e->data_be = (uint8_t)be;
	return k;
}

static int size_code(unsigned size)
{
	switch (size) {
	case 0: return 0;
	case 1: return 1;
	case 2: return 2;
	case 4: return 3;
	}
	return -1;
}

static int enc_data(struct csd_etm3_encoder *e, const struct csd_packet *pkt, uint8_t *o)
{
	const struct csdi_etm3_cfg *c = &e->cfg;
	const int has_addr = (pkt->flags & CSD_PKTF_DATA_ADDR) != 0;
	const int has_value = (pkt->flags & CSD_PKTF_DATA_VALUE) != 0;
	const unsigned size = has_value ? pkt->data_size : 0;
	const int ss = size_code(size);
	size_t i = 1;

	if (!c->data_value && !c->data_addr)
		return CSD_EBADPKT;
	if ((has_addr && !c->data_addr) || (has_value && !c->data_value) || ss < 0
	    || (has_value && !fits(pkt->data_value, size)) || pkt->addr_bytes > 5)
		return CSD_EBADPKT;
	switch (pkt->type) {
	case CSD_PKT_NORMAL_DATA:
		o[0] = (uint8_t)(0x02 | (has_addr ? 0x20 : 0) | ss << 2);
		break;
	case CSD_PKT_OOO_DATA:
		if (!has_value || has_addr || pkt->tag < 1 || pkt->tag > 3)
			return CSD_EBADPKT;
		o[0] = (uint8_t)(pkt->tag << 5 | ss << 2);
		break;
	case CSD_PKT_OOO_PLACEHOLDER:
		if (has_value || pkt->tag < 1 || pkt->tag > 3)
			return CSD_EBADPKT;
		o[0] = (uint8_t)(0x50 | (has_addr ? 0x20 : 0) | pkt->tag << 2);
		break;
	default: /* CSD_PKT_VALUE_NOT_TRACED */
		if (has_value)
			return CSD_EBADPKT;
		o[0] = has_addr ? 0x7A : 0x6A;
		break;
	}
	if (has_addr)
		i += put_data_addr(e, pkt->data_addr, (pkt->flags & CSD_PKTF_BIG_ENDIAN) != 0, pkt->addr_bytes, o + i);
	i += put_le(o + i, pkt->data_value, size);
	return (int)i;
}

int csd_etm3_enc_packet(csd_etm3_encoder *enc, const struct csd_packet *pkt, uint8_t *buf, size_t cap)
{
	if (!enc || !pkt || (!buf && cap))
		return CSD_EINVAL;

	const struct csdi_etm3_cfg *c = &enc->cfg;
	/* Encode into a copy so that a failed or oversized packet leaves
	 * the encoder state untouched. */
	struct csd_etm3_encoder saved = *enc;
	uint8_t tmp[ENC_MAX];
	int n;

	switch (pkt->type) {
	case CSD_PKT_ASYNC: {
		/* (Checked before buf is written, as any refused packet.) */
		const uint64_t len = pkt->size ? pkt->size : 6;
		if (len < 6 || len > INT32_MAX)
			return CSD_EBADPKT;
		if (len > cap)
			return CSD_ENOSPC;
		memset(buf, 0, (size_t)len - 1);
		buf[len - 1] = 0x80;
		return (int)len;
	}
	case CSD_PKT_IGNORE: {
		const uint64_t len = pkt->size ? pkt->size : 1;
		if (len > INT32_MAX)
			return CSD_EBADPKT;
		if (len > cap)
			return CSD_ENOSPC;
		memset(buf, 0x66, (size_t)len);
		return (int)len;
	}
	case CSD_PKT_ISYNC:
		n = enc_isync(enc, pkt, tmp);
		break;
	case CSD_PKT_PHEADER:
		n = enc_pheader(c, &pkt->atoms, tmp);
		break;
	case CSD_PKT_BRANCH:
		n = enc_branch(enc, pkt, tmp);
		break;
	case CSD_PKT_CYCLE_COUNT:
		tmp[0] = 0x04;
		n = 1 + (int)put_cycle_count(tmp + 1, pkt->cycle_count);
		break;
	case CSD_PKT_CONTEXT_ID:
		if (!c->cid_bytes || !fits(pkt->context_id, c->cid_bytes))
			return CSD_EBADPKT;
		tmp[0] = 0x6E;
		n = 1 + (int)put_le(tmp + 1, pkt->context_id, c->cid_bytes);
		break;
	case CSD_PKT_VMID:
		if (c->minor < 5)
			return CSD_EBADPKT;
		tmp[0] = 0x3C;
		tmp[1] = pkt->vmid;
		n = 2;
		break;
	case CSD_PKT_TIMESTAMP:
		n = enc_timestamp(enc, pkt, tmp);
		break;
	case CSD_PKT_TRIGGER:
		tmp[0] = 0x0C;
		n = 1;
		break;
	case CSD_PKT_EXCEPTION_ENTRY:
	case CSD_PKT_EXCEPTION_EXIT:
		if (c->minor < 4)
			return CSD_EBADPKT;
		tmp[0] = pkt->type == CSD_PKT_EXCEPTION_ENTRY ? 0x7E : 0x76;
		n = 1;
		break;
	case CSD_PKT_STORE_FAILED:
	case CSD_PKT_DATA_SUPPRESSED:
		if (!c->data_value && !c->data_addr)
			return CSD_EBADPKT;
		tmp[0] = pkt->type == CSD_PKT_STORE_FAILED ? 0x50 : 0x62;
		n = 1;
		break;
	case CSD_PKT_NORMAL_DATA:
	case CSD_PKT_OOO_DATA:
	case CSD_PKT_OOO_PLACEHOLDER:
	case CSD_PKT_VALUE_NOT_TRACED:
		n = enc_data(enc, pkt, tmp);
		break;
	default:
		return CSD_EBADPKT;
	}
	if (n < 0 || (size_t)n > cap) {
		*enc = saved;
		return n < 0 ? n : CSD_ENOSPC;
	}
	memcpy(buf, tmp, (size_t)n);
	return n;
}
