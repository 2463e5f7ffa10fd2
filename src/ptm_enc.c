/*
 * ptm_enc.c - PTM (PFT 1.0 / 1.1) packet encoder: struct csd_packet ->
 * bytes, the inverse of ptm_pkt.c under the same configuration (see the
 * register list there). The encoder keeps the decoder's decompression
 * state - last address, its instruction set, last timestamp - so that
 * every packet it writes decodes back to the packet it was given.
 *
 * Choices where a packet can be written several ways:
 *   - addresses and timestamps take the fewest bytes that carry every
 *     changed bit; pkt->addr_bytes / pkt->ts_bits ask for at least that
 *     many bytes / bits;
 *   - a change of instruction set uses the five-byte address; a change
 *     between Thumb and ThumbEE needs the AltIS bit, so a branch must carry
 *     exception information (CSD_PKTF_EXCEPTION, exception 0 if none) and a
 *     waypoint update gets its information byte;
 *   - exception information is written when CSD_PKTF_EXCEPTION is set; the
 *     second byte only when Hyp is set or the number exceeds 15;
 *   - I-sync information bytes have bit 0 set and I-sync cycle counts bit
 *     7 of their first byte set, as PTM hardware writes them (the decoder
 *     ignores both bits);
 *   - a timestamp gets the R (clock changed) bit when pkt->raw[0] is 0x46,
 *     so decoded packets re-encode with it.
 * Cycle counts (CSD_PKTF_CYCLE_COUNT) and context IDs (CSD_PKTF_CONTEXT_ID)
 * must be present exactly where the configuration puts them.
 */
#include <stdlib.h>
#include <string.h>

#include "ptm_internal.h"

struct csd_ptm_encoder {
	struct csdi_ptm_cfg cfg;
	uint32_t addr;   /* last address, as the decoder holds it */
	uint8_t isa;
	uint64_t ts;     /* last timestamp, natural binary */
};

/* Longest packet: I-sync with a five-byte cycle count and a 4-byte
 * context ID is 15 bytes; a branch 1 + 4 + 2 + 5 = 12. */
#define PTM_ENC_MAX 16

csd_ptm_encoder *csd_ptm_enc_new(const struct csd_trace_config *cfg)
{
	struct csdi_ptm_cfg pc;
	if (csdi_ptm_cfg_init(cfg, &pc) != CSD_OK)
		return NULL;
	struct csd_ptm_encoder *enc = calloc(1, sizeof(*enc));
	if (!enc)
		return NULL;
	enc->cfg = pc;
	enc->isa = CSD_ISA_UNKNOWN;
	return enc;
}

void csd_ptm_enc_free(csd_ptm_encoder *enc)
{
	free(enc);
}

/* Cycle count bytes after `first` (the fixed bits of the first byte).
 * Returns the number written to out. */
static unsigned put_cycle_count(uint8_t *out, uint8_t first, uint32_t count)
{
	unsigned n = 1;
	if (count >= (1u << 4))
		n = 2;
	if (count >= (1u << 11))
		n = 3;
	if (count >= (1u << 18))
		n = 4;
	if (count >= (1u << 25))
		n = 5;
	out[0] = (uint8_t)(first | ((count & 0xF) << 2) | (n > 1 ? 0x40 : 0));
	for (unsigned i = 1; i < n; i++) {
		uint8_t b = (uint8_t)((count >> (4 + 7 * (i - 1))) & 0x7F);
		out[i] = (uint8_t)(b | (i + 1 < n ? 0x80 : 0));
	}
	return n;
}

/* Is a cycle count present exactly when the configuration wants one? */
static int cycle_count_ok(const struct csd_packet *pkt, int wanted)
{
	return ((pkt->flags & CSD_PKTF_CYCLE_COUNT) != 0) == (wanted != 0);
}

/* Instruction set families that share an address alignment; a change
 * between families needs a five-byte address. */
static int isa_family(unsigned isa)
{
	return isa == CSD_ISA_THUMBEE ? CSD_ISA_THUMB : (int)isa;
}

struct addr_plan {
	unsigned bytes;
	unsigned isa;
};

/*
 * Choose the address bytes for `pkt` (branch or waypoint update) against
 * the encoder's state. min_bytes: at least this many (exception
 * information needs 2, a waypoint information byte 5). Returns 0 or
 * CSD_EBADPKT.
 */
static int plan_address(const struct csd_ptm_encoder *enc, const struct csd_packet *pkt,
			unsigned min_bytes, struct addr_plan *plan)
{
	unsigned isa = (pkt->flags & CSD_PKTF_ISA) ? pkt->isa : enc->isa;
	if (isa > CSD_ISA_JAZELLE)
		return CSD_EBADPKT;
	if (pkt->addr_bytes > 5)
		return CSD_EBADPKT;
	unsigned shift = ptm_addr_shift(isa);
	if (pkt->addr & ((1u << shift) - 1u))
		return CSD_EBADPKT; /* misaligned for the instruction set */
	unsigned k = 1;
	if (isa_family(isa) != isa_family(enc->isa))
		k = 5;
	while (k < 5 && ptm_addr_merge(enc->addr, pkt->addr, ptm_addr_span(isa, k)) != pkt->addr)
		k++;
	if (k < min_bytes)
		k = min_bytes;
	if (k < pkt->addr_bytes)
		k = pkt->addr_bytes;
	if (k == 5 && isa == CSD_ISA_UNKNOWN)
		return CSD_EBADPKT; /* a full address states the instruction set */
	plan->bytes = k;
	plan->isa = isa;
	return 0;
}

/* Write the planned address bytes; byte 0 gets bit 0 set (the branch
 * header bit; waypoint updates use the same layout). */
static unsigned put_address(uint8_t *out, uint32_t addr, const struct addr_plan *plan, int info_follows)
{
	const unsigned k = plan->bytes;
	const uint32_t v = addr >> ptm_addr_shift(plan->isa);
	out[0] = (uint8_t)(0x01 | ((v & 0x3F) << 1) | (k > 1 ? 0x80 : 0));
	if (k < 5) {
		for (unsigned i = 1; i < k; i++) {
			uint32_t bits = v >> (6 + 7 * (i - 1));
			if (i + 1 < k)
				out[i] = (uint8_t)(0x80 | (bits & 0x7F));
			else
				out[i] = (uint8_t)((bits & 0x3F) | (info_follows ? 0x40 : 0));
		}
		return k;
	}
	for (unsigned i = 1; i < 4; i++)
		out[i] = (uint8_t)(0x80 | ((v >> (6 + 7 * (i - 1))) & 0x7F));
	uint8_t last;
	switch (plan->isa) {
	case CSD_ISA_ARM: last = (uint8_t)(0x08 | ((v >> 27) & 0x07)); break;
	case CSD_ISA_JAZELLE: last = (uint8_t)(0x20 | ((v >> 27) & 0x1F)); break;
	default: last = (uint8_t)(0x10 | ((v >> 27) & 0x0F)); break;
	}
	out[4] = (uint8_t)(last | (info_follows ? 0x40 : 0));
	return 5;
}

static int enc_branch(struct csd_ptm_encoder *enc, const struct csd_packet *pkt, uint8_t *out)
{
	const int exc = (pkt->flags & CSD_PKTF_EXCEPTION) != 0;
	struct addr_plan plan;
	if (plan_address(enc, pkt, exc ? 2 : 1, &plan) != 0)
		return CSD_EBADPKT;
	/* Without information bytes the AltIS state carries over. */
	int thumbee_change = (plan.isa == CSD_ISA_THUMBEE) != (enc->isa == CSD_ISA_THUMBEE) &&
			     isa_family(plan.isa) == CSD_ISA_THUMB;
	if (!exc && thumbee_change)
		return CSD_EBADPKT;
	if (exc && pkt->exception > 0x1FF)
		return CSD_EBADPKT;
	if (!cycle_count_ok(pkt, enc->cfg.cycle_acc))
		return CSD_EBADPKT;
	unsigned len = put_address(out, pkt->addr, &plan, exc);
	if (exc) {
		int two = pkt->exception > 0xF || (pkt->flags & CSD_PKTF_HYP);
		uint8_t e1 = (uint8_t)((pkt->exception & 0xF) << 1);
		if (pkt->flags & CSD_PKTF_NS)
			e1 |= 0x01;
		if (plan.isa == CSD_ISA_THUMBEE)
			e1 |= 0x40;
		if (two)
			e1 |= 0x80;
		out[len++] = e1;
		if (two)
			out[len++] = (uint8_t)(((pkt->exception >> 4) & 0x1F) | ((pkt->flags & CSD_PKTF_HYP) ? 0x20 : 0));
	}
	if (enc->cfg.cycle_acc)
		len += put_cycle_count(out + len, 0x00, pkt->cycle_count);
	enc->addr = pkt->addr;
	enc->isa = (uint8_t)plan.isa;
	return (int)len;
}

static int enc_waypoint(struct csd_ptm_encoder *enc, const struct csd_packet *pkt, uint8_t *out)
{
	unsigned isa = (pkt->flags & CSD_PKTF_ISA) ? pkt->isa : enc->isa;
	int info = isa_family(isa) == CSD_ISA_THUMB &&
		   (isa == CSD_ISA_THUMBEE || enc->isa == CSD_ISA_THUMBEE);
	struct addr_plan plan;
	if (plan_address(enc, pkt, info ? 5 : 1, &plan) != 0)
		return CSD_EBADPKT;
	if (pkt->flags & CSD_PKTF_CYCLE_COUNT)
		return CSD_EBADPKT;
	out[0] = PTM_HDR_WAYPOINT;
	unsigned len = 1 + put_address(out + 1, pkt->addr, &plan, info);
	if (info)
		out[len++] = plan.isa == CSD_ISA_THUMBEE ? 0x40 : 0x00;
	enc->addr = pkt->addr;
	enc->isa = (uint8_t)plan.isa;
	return (int)len;
}

static int enc_isync(struct csd_ptm_encoder *enc, const struct csd_packet *pkt, uint8_t *out)
{
	const struct csdi_ptm_cfg *cfg = &enc->cfg;
	uint32_t word = pkt->addr;
	uint8_t info = (uint8_t)(0x01 | ((pkt->reason & 3) << 5));
	if (pkt->reason > 3)
		return CSD_EBADPKT;
	switch (pkt->isa) {
	case CSD_ISA_ARM:
		if (word & 3)
			return CSD_EBADPKT;
		break;
	case CSD_ISA_THUMBEE:
		info |= 0x04;
		/* fall through */
	case CSD_ISA_THUMB:
		if (word & 1)
			return CSD_EBADPKT;
		word |= 1;
		break;
	case CSD_ISA_JAZELLE:
		info |= 0x10;
		break;
	default:
		return CSD_EBADPKT;
	}
	if (pkt->flags & CSD_PKTF_NS)
		info |= 0x08;
	if (pkt->flags & CSD_PKTF_HYP)
		info |= 0x02;
	const int cc = cfg->cycle_acc && pkt->reason != CSD_REASON_PERIODIC;
	if (!cycle_count_ok(pkt, cc))
		return CSD_EBADPKT;
	if (((pkt->flags & CSD_PKTF_CONTEXT_ID) != 0) != (cfg->cid_bytes != 0))
		return CSD_EBADPKT;
	if (cfg->cid_bytes && cfg->cid_bytes < 4 && (pkt->context_id >> (8 * cfg->cid_bytes)))
		return CSD_EBADPKT;
	out[0] = PTM_HDR_ISYNC;
	for (unsigned i = 0; i < 4; i++)
		out[1 + i] = (uint8_t)(word >> (8 * i));
	out[5] = info;
	unsigned len = 6;
	if (cc)
		len += put_cycle_count(out + len, 0x80, pkt->cycle_count);
	for (unsigned i = 0; i < cfg->cid_bytes; i++)
		out[len++] = (uint8_t)(pkt->context_id >> (8 * i));
	enc->addr = pkt->addr;
	enc->isa = pkt->isa;
	return (int)len;
}

static int enc_atom(struct csd_ptm_encoder *enc, const struct csd_packet *pkt, uint8_t *out)
{
	const unsigned num = pkt->atoms.num;
	if (!cycle_count_ok(pkt, enc->cfg.cycle_acc))
		return CSD_EBADPKT;
	if (enc->cfg.cycle_acc) {
		if (num != 1 || (pkt->atoms.en >> 1))
			return CSD_EBADPKT;
		uint8_t first = (uint8_t)(0x80 | ((pkt->atoms.en & 1) ? 0 : 0x02));
		return (int)put_cycle_count(out, first, pkt->cycle_count);
	}
	if (num < 1 || num > 5 || (pkt->atoms.en >> num))
		return CSD_EBADPKT;
	/* Stop bit above the atoms; atom i (0 = oldest) at bit num - i,
	 * 1 for N. */
	uint8_t h = (uint8_t)(0x80 | (1u << (num + 1)));
	for (unsigned i = 0; i < num; i++) {
		if (!((pkt->atoms.en >> i) & 1))
			h |= (uint8_t)(1u << (num - i));
	}
	out[0] = h;
	return 1;
}

static int enc_timestamp(struct csd_ptm_encoder *enc, const struct csd_packet *pkt, uint8_t *out)
{
	const unsigned bits = enc->cfg.ts_bits;
	const unsigned max = ptm_ts_max_bytes(bits);
	const uint64_t full = ptm_ts_mask(bits);
	if ((pkt->timestamp & ~full) || pkt->ts_bits > bits)
		return CSD_EBADPKT;
	if (!cycle_count_ok(pkt, enc->cfg.cycle_acc))
		return CSD_EBADPKT;
	uint64_t now = enc->cfg.ts_gray ? ptm_bin_to_gray(pkt->timestamp) : pkt->timestamp;
	uint64_t before = enc->cfg.ts_gray ? ptm_bin_to_gray(enc->ts) & full : enc->ts;
	uint64_t changed = now ^ before;
	unsigned n = 1;
	while (n < max && ((changed & ~ptm_ts_mask(ptm_ts_span(bits, n))) || ptm_ts_span(bits, n) < pkt->ts_bits))
		n++;
	int r_bit = pkt->size > 0 && pkt->raw[0] == (PTM_HDR_TIMESTAMP | PTM_HDR_TS_R);
	out[0] = (uint8_t)(PTM_HDR_TIMESTAMP | (r_bit ? PTM_HDR_TS_R : 0));
	unsigned len = 1;
	for (unsigned i = 1; i <= n; i++) {
		uint64_t part = now >> (7 * (i - 1));
		if (i == max)
			out[len++] = (uint8_t)(part & (bits == 64 ? 0xFF : 0x3F));
		else
			out[len++] = (uint8_t)((part & 0x7F) | (i < n ? 0x80 : 0));
	}
	if (enc->cfg.cycle_acc)
		len += put_cycle_count(out + len, 0x00, pkt->cycle_count);
	enc->ts = pkt->timestamp;
	return (int)len;
}

/* A-sync and ignore packets are runs of pkt->size bytes. */
static int enc_run(const struct csd_packet *pkt, uint8_t *buf, size_t cap)
{
	size_t n = pkt->size;
	if (pkt->type == CSD_PKT_ASYNC) {
		if (n == 0)
			n = 6;
		if (n < 6)
			return CSD_EBADPKT;
	} else if (n == 0) {
		n = 1;
	}
	if (n > (size_t)INT32_MAX)
		return CSD_EBADPKT;
	if (n > cap)
		return CSD_ENOSPC;
	if (pkt->type == CSD_PKT_ASYNC) {
		memset(buf, 0x00, n - 1);
		buf[n - 1] = 0x80;
	} else {
		memset(buf, PTM_HDR_IGNORE, n);
	}
	return (int)n;
}

int csd_ptm_enc_packet(csd_ptm_encoder *enc, const struct csd_packet *pkt, uint8_t *buf, size_t cap)
{
	if (!enc || !pkt || (!buf && cap))
		return CSD_EINVAL;
	if (pkt->type == CSD_PKT_ASYNC || pkt->type == CSD_PKT_IGNORE)
		return enc_run(pkt, buf, cap);

	/* Encode into a scratch copy of the state so that a refused packet
	 * (bad field or short buffer) leaves the encoder unchanged. */
	struct csd_ptm_encoder next = *enc;
	uint8_t out[PTM_ENC_MAX];
	int len;
	switch (pkt->type) {
	case CSD_PKT_ISYNC:
		len = enc_isync(&next, pkt, out);
		break;
	case CSD_PKT_ATOM:
		len = enc_atom(&next, pkt, out);
		break;
	case CSD_PKT_BRANCH:
		len = enc_branch(&next, pkt, out);
		break;
	case CSD_PKT_WAYPOINT:
		len = enc_waypoint(&next, pkt, out);
		break;
	case CSD_PKT_TIMESTAMP:
		len = enc_timestamp(&next, pkt, out);
		break;
	case CSD_PKT_CONTEXT_ID:
		if (!next.cfg.cid_bytes || (next.cfg.cid_bytes < 4 && (pkt->context_id >> (8 * next.cfg.cid_bytes))))
			return CSD_EBADPKT;
		out[0] = PTM_HDR_CONTEXT_ID;
		for (unsigned i = 0; i < next.cfg.cid_bytes; i++)
			out[1 + i] = (uint8_t)(pkt->context_id >> (8 * i));
		len = 1 + next.cfg.cid_bytes;
		break;
	case CSD_PKT_VMID:
		out[0] = PTM_HDR_VMID;
		out[1] = pkt->vmid;
		len = 2;
		break;
	case CSD_PKT_TRIGGER:
		out[0] = PTM_HDR_TRIGGER;
		len = 1;
		break;
	case CSD_PKT_EXCEPTION_RETURN:
		out[0] = PTM_HDR_ERET;
		len = 1;
		break;
	default:
		return CSD_EBADPKT; /* not a PTM packet (nosync, error, ETMv3 kinds) */
	}
	if (len < 0)
		return len;
	if ((size_t)len > cap)
		return CSD_ENOSPC;
	memcpy(buf, out, (size_t)len);
	*enc = next;
	return len;
}
