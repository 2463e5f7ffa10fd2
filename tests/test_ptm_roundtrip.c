/*
 * PTM encoder round trips: packets -> csd_ptm_enc_packet() -> bytes ->
 * csd_ptm_pkt decoder -> the same packets, for every packet kind and field
 * corner under several configurations; encoded lengths checked against
 * the field widths of IHI 0035B; real captures re-encoded byte for byte.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csdec.h"

#define ETMIDR_PFT11 0x411CF312u
#define ETMIDR_PFT10 0x4100F300u
#define ETMCCER_TS64_BIN 0x34C01AC2u
#define ETMCR_CA (1u << 12)
#define ETMCR_CID(n) ((uint32_t)(n) << 14)

#define MAXP 4096

static struct csd_trace_config cfg_of(uint32_t etmcr, uint32_t etmccer, uint32_t etmidr)
{
	struct csd_trace_config c;
	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.protocol = CSD_PROTO_PTM;
	c.etmcr = etmcr;
	c.etmccer = etmccer;
	c.etmidr = etmidr;
	return c;
}

static struct csd_packet dec_out[MAXP + 1];

/* Decode buf; returns the packet count. */
static size_t decode_all(const struct csd_trace_config *cfg, const uint8_t *buf, size_t n)
{
	csd_ptm_pkt_decoder *dec = csd_ptm_pkt_new(cfg);
	struct csd_bytes b = { .data = buf, .size = n };
	size_t np = 0;
	CHECK(dec != NULL);
	if (!dec)
		return 0;
	CHECK_EQ(csd_ptm_pkt_feed(dec, &b), 0);
	CHECK_EQ(csd_ptm_pkt_finish(dec), 0);
	while (csd_ptm_pkt_next(dec, &dec_out[np]) == 0)
		if (np < MAXP)
			np++;
	csd_ptm_pkt_free(dec);
	return np;
}

/* Flags that carry meaning (not the ones the decoder adds as facts). */
#define CMP_FLAGS (CSD_PKTF_EXCEPTION | CSD_PKTF_NS | CSD_PKTF_HYP | CSD_PKTF_CYCLE_COUNT | CSD_PKTF_CONTEXT_ID)

/* Does decoded packet d say what packet p said? */
static int same_meaning(const struct csd_packet *p, const struct csd_packet *d)
{
	if (p->type != d->type)
		return 0;
	/* A context ID packet always states its value; the flag is optional
	 * on the way in. */
	uint32_t cmp = p->type == CSD_PKT_CONTEXT_ID ? CMP_FLAGS & ~CSD_PKTF_CONTEXT_ID : CMP_FLAGS;
	if ((p->flags & cmp) != (d->flags & cmp))
		return 0;
	if ((p->flags & CSD_PKTF_CYCLE_COUNT) && p->cycle_count != d->cycle_count)
		return 0;
	switch (p->type) {
	case CSD_PKT_ISYNC:
		if (p->addr != d->addr || p->isa != d->isa || p->reason != d->reason)
			return 0;
		if ((p->flags & CSD_PKTF_CONTEXT_ID) && p->context_id != d->context_id)
			return 0;
		return 1;
	case CSD_PKT_BRANCH:
		if ((p->flags & CSD_PKTF_EXCEPTION) && p->exception != d->exception)
			return 0;
		/* fall through */
	case CSD_PKT_WAYPOINT:
		if (p->addr != d->addr)
			return 0;
		if ((p->flags & CSD_PKTF_ISA) && p->isa != d->isa)
			return 0;
		if (p->addr_bytes && d->addr_bytes < p->addr_bytes)
			return 0;
		return 1;
	case CSD_PKT_ATOM:
		return p->atoms.num == d->atoms.num && p->atoms.en == d->atoms.en;
	case CSD_PKT_TIMESTAMP:
		return p->timestamp == d->timestamp && d->ts_bits >= p->ts_bits;
	case CSD_PKT_CONTEXT_ID:
		return p->context_id == d->context_id;
	case CSD_PKT_VMID:
		return p->vmid == d->vmid;
	case CSD_PKT_ASYNC:
	case CSD_PKT_IGNORE:
		return d->size == (p->size ? p->size : (p->type == CSD_PKT_ASYNC ? 6u : 1u));
	default:
		return 1;
	}
}

/*
 * Encode pkts[0..n) into one stream, decode it, and check every packet
 * comes back with its meaning, at the offset and with the size the
 * encoder gave it. want_len[i] (if not NULL and nonzero) is the expected
 * encoded length.
 */
static void round_trip(const struct csd_trace_config *cfg, const struct csd_packet *pkts, size_t n,
		       const unsigned *want_len)
{
	static uint8_t buf[MAXP * 16];
	static uint32_t lens[MAXP];
	size_t used = 0;
	csd_ptm_encoder *enc = csd_ptm_enc_new(cfg);
	CHECK(enc != NULL);
	if (!enc)
		return;
	for (size_t i = 0; i < n; i++) {
		int r = csd_ptm_enc_packet(enc, &pkts[i], buf + used, sizeof(buf) - used);
		CHECK(r > 0);
		if (r <= 0) {
			fprintf(stderr, "packet %zu (%s) refused: %s\n", i, csd_pkt_type_name(pkts[i].type),
				csd_errstr(r));
			csd_ptm_enc_free(enc);
			return;
		}
		if (want_len && want_len[i])
			CHECK_EQ(r, want_len[i]);
		lens[i] = (uint32_t)r;
		used += (size_t)r;
	}
	csd_ptm_enc_free(enc);
	size_t got = decode_all(cfg, buf, used);
	CHECK_EQ(got, n);
	size_t off = 0;
	int ok = 1;
	for (size_t i = 0; i < n && i < got; i++) {
		int same = same_meaning(&pkts[i], &dec_out[i]) && dec_out[i].offset == off && dec_out[i].size == lens[i];
		if (!same && ok)
			fprintf(stderr, "packet %zu (%s) differs after the round trip\n", i,
				csd_pkt_type_name(pkts[i].type));
		ok &= same;
		off += lens[i];
	}
	CHECK(ok);
}

static struct csd_packet mk(uint32_t type)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = type;
	return p;
}

static struct csd_packet isync(uint32_t addr, unsigned isa, unsigned reason, uint32_t flags)
{
	struct csd_packet p = mk(CSD_PKT_ISYNC);
	p.addr = addr;
	p.isa = (uint8_t)isa;
	p.reason = (uint8_t)reason;
	p.flags = flags;
	return p;
}

static struct csd_packet branch(uint32_t addr, unsigned isa, uint32_t flags)
{
	struct csd_packet p = mk(CSD_PKT_BRANCH);
	p.addr = addr;
	p.isa = (uint8_t)isa;
	p.flags = flags | (isa ? CSD_PKTF_ISA : 0);
	return p;
}

/* ---- fixed corner cases with lengths from the field widths ---- */

/* Address bytes: ARM covers A[7:2], [13:2], [20:2], [27:2], all; Thumb
 * A[6:1], [12:1], [19:1], [26:1], all. */
static void test_address_lengths(void)
{
	struct csd_trace_config c = cfg_of(0, 0, ETMIDR_PFT11);
	struct csd_packet p[32];
	unsigned len[32];
	size_t n = 0;
	p[n] = mk(CSD_PKT_ASYNC), len[n++] = 6;
	p[n] = isync(0x80000000, CSD_ISA_ARM, CSD_REASON_TRACE_ON, 0), len[n++] = 6;
	static const struct {
		uint32_t addr;
		unsigned len;
	} arm[] = {
		{ 0x80000000, 1 }, { 0x80000080, 1 }, { 0x80000084, 1 }, { 0x80000100, 2 }, { 0x80002100, 2 },
		{ 0x80004000, 3 }, { 0x80100000, 3 }, { 0x80200000, 4 }, { 0x88000000, 4 }, { 0x90000000, 5 },
		{ 0x10000000, 5 },
	};
	for (size_t i = 0; i < sizeof(arm) / sizeof(arm[0]); i++)
		p[n] = branch(arm[i].addr, 0, 0), len[n++] = arm[i].len;
	/* To Thumb: five bytes, then Thumb widths. */
	p[n] = branch(0x10000000, CSD_ISA_THUMB, 0), len[n++] = 5;
	static const struct {
		uint32_t addr;
		unsigned len;
	} thumb[] = {
		{ 0x10000040, 1 }, { 0x10000080, 2 }, { 0x10001000, 2 }, { 0x10002000, 3 },
		{ 0x100FF002, 3 }, { 0x10100000, 4 }, { 0x14000000, 4 }, { 0x18000000, 5 },
	};
	for (size_t i = 0; i < sizeof(thumb) / sizeof(thumb[0]); i++)
		p[n] = branch(thumb[i].addr, 0, 0), len[n++] = thumb[i].len;
	/* Jazelle: byte aligned, A[5:0] in one byte. */
	p[n] = branch(0x18000001, CSD_ISA_JAZELLE, 0), len[n++] = 5;
	p[n] = branch(0x1800003F, 0, 0), len[n++] = 1;
	p[n] = branch(0x18000040, 0, 0), len[n++] = 2;
	/* addr_bytes asks for a longer form; the same address in 3 / 5 bytes. */
	p[n] = branch(0x18000040, 0, 0), p[n].addr_bytes = 3, len[n++] = 3;
	p[n] = branch(0x18000040, 0, 0), p[n].addr_bytes = 5, len[n++] = 5;
	round_trip(&c, p, n, len);
	CHECK_EQ(dec_out[n - 2].addr_bytes, 3);
	CHECK_EQ(dec_out[n - 1].addr_bytes, 5);
	CHECK_EQ(dec_out[n - 1].isa, CSD_ISA_JAZELLE);
}

/* Exception information: one byte up to exception 15, two with Hyp or a
 * larger number; at least two address bytes. */
static void test_exceptions(void)
{
	struct csd_trace_config c = cfg_of(0, 0, ETMIDR_PFT11);
	struct csd_packet p[16];
	unsigned len[16];
	size_t n = 0;
	p[n] = mk(CSD_PKT_ASYNC), len[n++] = 6;
	p[n] = isync(0x1000, CSD_ISA_THUMB, 0, CSD_PKTF_NS), len[n++] = 6;
	p[n] = branch(0x1000, 0, CSD_PKTF_EXCEPTION | CSD_PKTF_NS), p[n].exception = 14, len[n++] = 3;
	p[n] = branch(0x1000, 0, CSD_PKTF_EXCEPTION | CSD_PKTF_HYP), p[n].exception = 3, len[n++] = 4;
	p[n] = branch(0x1000, 0, CSD_PKTF_EXCEPTION), p[n].exception = 0x1FF, len[n++] = 4;
	p[n] = branch(0x1000, 0, CSD_PKTF_EXCEPTION), p[n].exception = 16, len[n++] = 4;
	/* Thumb <-> ThumbEE through the AltIS bit (exception 0). */
	p[n] = branch(0x1002, CSD_ISA_THUMBEE, CSD_PKTF_EXCEPTION), len[n++] = 3;
	p[n] = branch(0x1004, 0, 0), len[n++] = 1;
	p[n] = branch(0x1006, CSD_ISA_THUMB, CSD_PKTF_EXCEPTION), len[n++] = 3;
	/* To ARM with an exception: five bytes and the information byte. */
	p[n] = branch(0x0000001C, CSD_ISA_ARM, CSD_PKTF_EXCEPTION), p[n].exception = 15, len[n++] = 6;
	round_trip(&c, p, n, len);
	CHECK_EQ(dec_out[6].isa, CSD_ISA_THUMBEE);
	CHECK_EQ(dec_out[7].isa, CSD_ISA_THUMBEE);
	CHECK_EQ(dec_out[8].isa, CSD_ISA_THUMB);
}

/* Cycle counts: 4, 11, 18, 25, 32 bits in 1..5 bytes; on atoms, branches,
 * I-syncs and timestamps. */
static void test_cycle_counts(void)
{
	struct csd_trace_config c = cfg_of(ETMCR_CA, ETMCCER_TS64_BIN, ETMIDR_PFT11);
	static const struct {
		uint32_t v;
		unsigned bytes;
	} cc[] = {
		{ 0, 1 }, { 15, 1 }, { 16, 2 }, { 2047, 2 }, { 2048, 3 }, { (1u << 18) - 1, 3 },
		{ 1u << 18, 4 }, { (1u << 25) - 1, 4 }, { 1u << 25, 5 }, { 0xFFFFFFFFu, 5 },
	};
	const size_t ncc = sizeof(cc) / sizeof(cc[0]);
	struct csd_packet p[64];
	unsigned len[64];
	size_t n = 0;
	p[n] = mk(CSD_PKT_ASYNC), len[n++] = 6;
	p[n] = isync(0x2000, CSD_ISA_ARM, CSD_REASON_PERIODIC, 0), len[n++] = 6;
	for (size_t i = 0; i < ncc; i++) {
		p[n] = mk(CSD_PKT_ATOM);
		p[n].atoms.num = 1;
		p[n].atoms.en = (uint32_t)(i & 1);
		p[n].flags = CSD_PKTF_CYCLE_COUNT;
		p[n].cycle_count = cc[i].v;
		len[n++] = cc[i].bytes;
		p[n] = branch(0x2000 + 4 * (uint32_t)i, 0, CSD_PKTF_CYCLE_COUNT);
		p[n].cycle_count = cc[i].v;
		len[n++] = 1 + cc[i].bytes;
		p[n] = isync(0x2000 + 4 * (uint32_t)i, CSD_ISA_ARM, CSD_REASON_OVERFLOW, CSD_PKTF_CYCLE_COUNT);
		p[n].cycle_count = cc[i].v;
		len[n++] = 6 + cc[i].bytes;
		p[n] = mk(CSD_PKT_TIMESTAMP);
		p[n].timestamp = i;
		p[n].flags = CSD_PKTF_CYCLE_COUNT;
		p[n].cycle_count = cc[i].v;
		len[n++] = 2 + cc[i].bytes;
	}
	round_trip(&c, p, n, len);
}

/* Timestamps: 7 bits a byte, the last of 9 (64-bit) holding 8, of 7
 * (48-bit) 6; Gray or binary; ts_bits asks for more. */
static void test_timestamps(void)
{
	struct csd_trace_config bin64 = cfg_of(0, ETMCCER_TS64_BIN, ETMIDR_PFT11);
	struct csd_packet p[32];
	unsigned len[32];
	size_t n = 0;
	p[n] = mk(CSD_PKT_ASYNC), len[n++] = 6;
	static const struct {
		uint64_t ts;
		unsigned bytes;
	} t64[] = {
		{ 0, 2 }, { 1, 2 }, { 0x7F, 2 }, { 0x80, 3 }, { 0x3FFF, 3 }, { 0x4000, 4 },
		{ 1ull << 55, 9 }, { (1ull << 56) | (1ull << 55), 10 }, { ~0ull, 10 }, { ~0ull - 0x7F, 2 },
	};
	for (size_t i = 0; i < sizeof(t64) / sizeof(t64[0]); i++) {
		p[n] = mk(CSD_PKT_TIMESTAMP);
		p[n].timestamp = t64[i].ts;
		len[n++] = t64[i].bytes;
	}
	p[n] = mk(CSD_PKT_TIMESTAMP), p[n].timestamp = ~0ull - 0x7F, p[n].ts_bits = 64, len[n++] = 10;
	p[n] = mk(CSD_PKT_TIMESTAMP), p[n].timestamp = ~0ull - 0x7F, p[n].ts_bits = 15, len[n++] = 4;
	/* The R bit comes from raw[0]. */
	p[n] = mk(CSD_PKT_TIMESTAMP), p[n].timestamp = 5, p[n].size = 1, p[n].raw[0] = 0x46, len[n++] = 0;
	round_trip(&bin64, p, n, len);
	CHECK_EQ(dec_out[n - 1].raw[0], 0x46);

	/* 48-bit Gray: 5 -> Gray 0b111, 6 -> Gray 0b101 (only bit 1 changes:
	 * one byte); 2^47 -> Gray bit 47 set and bit 46 set: all 7 bytes. */
	struct csd_trace_config gray48 = cfg_of(0, 0, ETMIDR_PFT10);
	n = 0;
	p[n] = mk(CSD_PKT_ASYNC), len[n++] = 6;
	static const struct {
		uint64_t ts;
		unsigned bytes;
	} t48[] = {
		{ 5, 2 }, { 6, 2 }, { 1ull << 47, 8 }, { (1ull << 48) - 1, 8 }, { (1ull << 48) - 2, 2 },
	};
	for (size_t i = 0; i < sizeof(t48) / sizeof(t48[0]); i++) {
		p[n] = mk(CSD_PKT_TIMESTAMP);
		p[n].timestamp = t48[i].ts;
		len[n++] = t48[i].bytes;
	}
	round_trip(&gray48, p, n, len);
	/* Gray 5 = 0b111: the first timestamp's byte is 0x07. */
	csd_ptm_encoder *enc = csd_ptm_enc_new(&gray48);
	uint8_t b[16];
	struct csd_packet t = mk(CSD_PKT_TIMESTAMP);
	t.timestamp = 5;
	CHECK_EQ(csd_ptm_enc_packet(enc, &t, b, sizeof(b)), 2);
	CHECK_EQ(b[0], 0x42);
	CHECK_EQ(b[1], 0x07);
	t.timestamp = 1ull << 48; /* does not fit 48 bits */
	CHECK_EQ(csd_ptm_enc_packet(enc, &t, b, sizeof(b)), CSD_EBADPKT);
	t.timestamp = 1;
	t.ts_bits = 49;
	CHECK_EQ(csd_ptm_enc_packet(enc, &t, b, sizeof(b)), CSD_EBADPKT);
	csd_ptm_enc_free(enc);
}

/* Every kind under each configuration, and the context ID sizes. */
static void test_every_kind(void)
{
	static const struct {
		uint32_t etmcr, etmccer, etmidr;
	} cfgs[] = {
		{ 0, ETMCCER_TS64_BIN, ETMIDR_PFT11 },
		{ ETMCR_CA | ETMCR_CID(3), 0, ETMIDR_PFT11 },
		{ ETMCR_CA | ETMCR_CID(1), ETMCCER_TS64_BIN, ETMIDR_PFT11 },
		{ ETMCR_CID(2), 0, ETMIDR_PFT10 },
	};
	static const uint32_t cid_max[4] = { 0, 0xFF, 0xFFFF, 0xFFFFFFFF };
	for (size_t k = 0; k < sizeof(cfgs) / sizeof(cfgs[0]); k++) {
		struct csd_trace_config c = cfg_of(cfgs[k].etmcr, cfgs[k].etmccer, cfgs[k].etmidr);
		const int ca = (c.etmcr & ETMCR_CA) != 0;
		const unsigned cid = (c.etmcr >> 14) & 3;
		const uint32_t ccf = ca ? CSD_PKTF_CYCLE_COUNT : 0;
		struct csd_packet p[40];
		size_t n = 0;
		p[n] = mk(CSD_PKT_ASYNC), p[n++].size = 9;
		p[n] = isync(0xC0001234, CSD_ISA_THUMB, CSD_REASON_TRACE_ON, ccf | CSD_PKTF_NS | CSD_PKTF_HYP);
		p[n].cycle_count = 77;
		if (cid)
			p[n].flags |= CSD_PKTF_CONTEXT_ID, p[n].context_id = cid_max[cid];
		n++;
		p[n] = isync(0x00008000, CSD_ISA_ARM, CSD_REASON_PERIODIC, 0);
		if (cid)
			p[n].flags |= CSD_PKTF_CONTEXT_ID, p[n].context_id = 1;
		n++;
		p[n] = isync(0x00008001, CSD_ISA_JAZELLE, CSD_REASON_DEBUG_EXIT, ccf);
		if (cid)
			p[n].flags |= CSD_PKTF_CONTEXT_ID;
		n++;
		p[n] = isync(0x00008002, CSD_ISA_THUMBEE, CSD_REASON_OVERFLOW, ccf);
		if (cid)
			p[n].flags |= CSD_PKTF_CONTEXT_ID;
		n++;
		for (unsigned a = 1; a <= (ca ? 1u : 5u); a++) {
			p[n] = mk(CSD_PKT_ATOM);
			p[n].atoms.num = (uint8_t)a;
			p[n].atoms.en = (0x15u >> (5 - a)) & ((1u << a) - 1);
			p[n].flags = ccf;
			p[n++].cycle_count = 1000 * a;
		}
		p[n] = branch(0x00008004, 0, ccf), p[n++].cycle_count = 3;
		p[n] = branch(0xFFFFFFFC, CSD_ISA_ARM, ccf | CSD_PKTF_EXCEPTION), p[n].exception = 9, n++;
		p[n] = mk(CSD_PKT_WAYPOINT), p[n].addr = 0xFFFFFFF8, n++;
		p[n] = mk(CSD_PKT_WAYPOINT), p[n].addr = 0x00000100, p[n].isa = CSD_ISA_THUMB,
		p[n].flags = CSD_PKTF_ISA, n++;
		p[n] = mk(CSD_PKT_WAYPOINT), p[n].addr = 0x00000102, p[n].isa = CSD_ISA_THUMBEE,
		p[n].flags = CSD_PKTF_ISA, n++;
		p[n] = mk(CSD_PKT_WAYPOINT), p[n].addr = 0x00000104, n++;
		p[n] = mk(CSD_PKT_TIMESTAMP), p[n].timestamp = 0x123456789AULL, p[n].flags = ccf, n++;
		p[n] = mk(CSD_PKT_TRIGGER), n++;
		p[n] = mk(CSD_PKT_EXCEPTION_RETURN), n++;
		p[n] = mk(CSD_PKT_IGNORE), p[n++].size = 3;
		p[n] = mk(CSD_PKT_VMID), p[n++].vmid = 0xA5;
		if (cid)
			p[n] = mk(CSD_PKT_CONTEXT_ID), p[n++].context_id = cid_max[cid] - 1;
		p[n] = mk(CSD_PKT_ASYNC), n++;
		round_trip(&c, p, n, NULL);
	}
}

/* Pseudo-random packet streams: addresses, instruction sets, counts and
 * timestamps of random widths. */
static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
	rng_state = rng_state * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng_state >> 33);
}

static uint32_t rnd_bits(unsigned max_bits)
{
	unsigned b = rnd() % (max_bits + 1);
	return b == 0 ? 0 : (uint32_t)(((uint64_t)rnd() << 1 | (rnd() & 1)) & ((1ull << b) - 1));
}

static void test_random_streams(void)
{
	static const uint32_t etmcrs[] = { 0, ETMCR_CA, ETMCR_CA | ETMCR_CID(3), ETMCR_CID(1) };
	static struct csd_packet p[MAXP];
	for (size_t k = 0; k < 4; k++) {
		struct csd_trace_config c = cfg_of(etmcrs[k], k & 1 ? ETMCCER_TS64_BIN : 0, ETMIDR_PFT11);
		const int ca = (c.etmcr & ETMCR_CA) != 0;
		const unsigned cid_bytes = (unsigned[]){ 0, 1, 2, 4 }[(c.etmcr >> 14) & 3];
		const uint32_t ccf = ca ? CSD_PKTF_CYCLE_COUNT : 0;
		const uint64_t ts_mask = (k & 1) ? ~0ull : ((1ull << 48) - 1);
		unsigned isa = CSD_ISA_ARM;
		uint32_t addr = 0x8000;
		size_t n = 0;
		p[n++] = mk(CSD_PKT_ASYNC);
		p[n] = isync(addr, isa, CSD_REASON_TRACE_ON, ccf | (cid_bytes ? CSD_PKTF_CONTEXT_ID : 0));
		n++;
		while (n < 3000) {
			struct csd_packet q = mk(CSD_PKT_ATOM);
			unsigned what = rnd() % 10;
			if (what < 3) {
				q.atoms.num = (uint8_t)(ca ? 1 : 1 + rnd() % 5);
				q.atoms.en = rnd() & ((1u << q.atoms.num) - 1);
				q.flags = ccf;
				q.cycle_count = rnd_bits(32);
			} else if (what < 7) {
				q.type = (what == 6) ? CSD_PKT_WAYPOINT : CSD_PKT_BRANCH;
				unsigned nisa = isa;
				if (rnd() % 8 == 0)
					nisa = 1 + rnd() % 4;
				uint32_t change = rnd_bits(32);
				addr ^= change;
				addr &= ~((nisa == CSD_ISA_ARM ? 3u : nisa == CSD_ISA_JAZELLE ? 0u : 1u));
				q.addr = addr;
				q.isa = (uint8_t)nisa;
				q.flags = CSD_PKTF_ISA;
				int tee_change = (nisa == CSD_ISA_THUMBEE) != (isa == CSD_ISA_THUMBEE) &&
						 (nisa == CSD_ISA_THUMB || nisa == CSD_ISA_THUMBEE);
				if (q.type == CSD_PKT_BRANCH) {
					q.flags |= ccf;
					q.cycle_count = rnd_bits(32);
					if (tee_change || rnd() % 4 == 0) {
						q.flags |= CSD_PKTF_EXCEPTION | (rnd() & 1 ? CSD_PKTF_NS : 0) |
							   (rnd() & 1 ? CSD_PKTF_HYP : 0);
						q.exception = (uint16_t)rnd_bits(9);
					}
				}
				if (rnd() % 5 == 0)
					q.addr_bytes = (uint8_t)(1 + rnd() % 5);
				isa = nisa;
			} else if (what == 7) {
				q.type = CSD_PKT_TIMESTAMP;
				q.timestamp = (((uint64_t)rnd() << 32) | rnd()) & ts_mask;
				if (rnd() & 1)
					q.timestamp >>= rnd() % 48;
				q.flags = ccf;
				q.cycle_count = rnd_bits(32);
			} else if (what == 8) {
				isa = 1 + rnd() % 4;
				addr = rnd() & ~((isa == CSD_ISA_ARM ? 3u : isa == CSD_ISA_JAZELLE ? 0u : 1u));
				q = isync(addr, isa, rnd() % 4, (rnd() & 1 ? CSD_PKTF_NS : 0));
				if (ca && q.reason != CSD_REASON_PERIODIC)
					q.flags |= CSD_PKTF_CYCLE_COUNT, q.cycle_count = rnd_bits(32);
				if (cid_bytes)
					q.flags |= CSD_PKTF_CONTEXT_ID, q.context_id = rnd_bits(8 * cid_bytes);
			} else {
				static const uint32_t small[] = { CSD_PKT_TRIGGER, CSD_PKT_EXCEPTION_RETURN,
								  CSD_PKT_VMID, CSD_PKT_IGNORE, CSD_PKT_CONTEXT_ID };
				q.type = small[rnd() % (cid_bytes ? 5 : 4)];
				q.vmid = (uint8_t)rnd();
				q.context_id = rnd_bits(8 * cid_bytes);
				/* keep ignore runs apart: a neighbour would merge */
				if (q.type == CSD_PKT_IGNORE && p[n - 1].type == CSD_PKT_IGNORE)
					q.type = CSD_PKT_TRIGGER;
			}
			p[n++] = q;
		}
		round_trip(&c, p, n, NULL);
	}
}

/* Refusals: fields that cannot be encoded leave the encoder unchanged. */
static void test_refusals(void)
{
	struct csd_trace_config c = cfg_of(ETMCR_CID(1), 0, ETMIDR_PFT11);
	struct csd_trace_config ca = cfg_of(ETMCR_CA, 0, ETMIDR_PFT11);
	csd_ptm_encoder *e = csd_ptm_enc_new(&c);
	csd_ptm_encoder *eca = csd_ptm_enc_new(&ca);
	uint8_t b[64];
	struct csd_packet p;

	p = mk(CSD_PKT_ATOM), p.atoms.num = 0;
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p.atoms.num = 6;
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p.atoms.num = 2, p.atoms.en = 4; /* an atom bit above num */
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p.atoms.num = 2, p.atoms.en = 0, p.flags = CSD_PKTF_CYCLE_COUNT; /* no counts configured */
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	CHECK_EQ(csd_ptm_enc_packet(eca, &p, b, sizeof(b)), CSD_EBADPKT); /* one atom per packet */
	p.atoms.num = 1, p.flags = 0;
	CHECK_EQ(csd_ptm_enc_packet(eca, &p, b, sizeof(b)), CSD_EBADPKT); /* count missing */

	p = isync(0x1002, CSD_ISA_ARM, 0, CSD_PKTF_CONTEXT_ID); /* misaligned for ARM */
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = isync(0x1001, CSD_ISA_THUMB, 0, CSD_PKTF_CONTEXT_ID);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = isync(0x1000, CSD_ISA_UNKNOWN, 0, CSD_PKTF_CONTEXT_ID);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = isync(0x1000, CSD_ISA_ARM, 4, CSD_PKTF_CONTEXT_ID);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = isync(0x1000, CSD_ISA_ARM, 0, 0); /* context ID missing */
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = isync(0x1000, CSD_ISA_ARM, 0, CSD_PKTF_CONTEXT_ID);
	p.context_id = 0x100; /* does not fit one byte */
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = isync(0x1000, CSD_ISA_ARM, 1, 0); /* cycle-accurate, not periodic: count missing */
	CHECK_EQ(csd_ptm_enc_packet(eca, &p, b, sizeof(b)), CSD_EBADPKT);

	/* A too-short buffer leaves the state: the next encoding is the
	 * same as it would have been. */
	p = isync(0x1000, CSD_ISA_ARM, 0, CSD_PKTF_CONTEXT_ID);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, 6), CSD_ENOSPC);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, 7), 7);
	p = branch(0x1004, 0, 0);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, 0), CSD_ENOSPC);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), 1);
	CHECK_EQ(b[0], 0x03); /* A[7:2] = 1 */

	p = branch(0x1006, 0, 0); /* misaligned for ARM */
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = branch(0x1008, 0, CSD_PKTF_EXCEPTION), p.exception = 512;
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = branch(0x1008, 0, 0), p.addr_bytes = 6;
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = branch(0x1008, 7, 0);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	/* Thumb -> ThumbEE needs the AltIS bit of exception information. */
	p = branch(0x2000, CSD_ISA_THUMB, 0);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), 5);
	p = branch(0x2002, CSD_ISA_THUMBEE, 0);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);

	p = mk(CSD_PKT_CONTEXT_ID), p.context_id = 0x1FF;
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	CHECK_EQ(csd_ptm_enc_packet(eca, &p, b, sizeof(b)), CSD_EBADPKT); /* no context IDs configured */
	p = mk(CSD_PKT_ASYNC), p.size = 5;
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p.size = 100;
	CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_ENOSPC);
	static const uint32_t not_ptm[] = { CSD_PKT_NOSYNC, CSD_PKT_ERROR, CSD_PKT_PHEADER, CSD_PKT_CYCLE_COUNT,
					    CSD_PKT_EXCEPTION_ENTRY, CSD_PKT_NORMAL_DATA, 0, CSD_PKT_TYPE_COUNT };
	for (size_t i = 0; i < sizeof(not_ptm) / sizeof(not_ptm[0]); i++) {
		p = mk(not_ptm[i]);
		CHECK_EQ(csd_ptm_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	}
	CHECK_EQ(csd_ptm_enc_packet(NULL, &p, b, sizeof(b)), CSD_EINVAL);
	CHECK_EQ(csd_ptm_enc_packet(e, NULL, b, sizeof(b)), CSD_EINVAL);
	CHECK_EQ(csd_ptm_enc_packet(e, &p, NULL, 4), CSD_EINVAL);
	CHECK(csd_ptm_enc_new(NULL) == NULL);
	csd_ptm_enc_free(e);
	csd_ptm_enc_free(eca);
	csd_ptm_enc_free(NULL);
}

/*
 * Real bytes: decoding trace_cov_a15/PTM_0_2.bin and re-encoding every
 * packet gives the capture back byte for byte.
 */
static void test_real_capture(void)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/traces/trace_cov_a15/PTM_0_2.bin", check_shared_dir());
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	uint8_t d[256], out[256];
	size_t n = fread(d, 1, sizeof(d), f);
	fclose(f);
	struct csd_trace_config c = cfg_of(0x20000400, 0x34C01AC2, 0x411CF312);
	size_t np = decode_all(&c, d, n);
	CHECK_EQ(np, 11);
	csd_ptm_encoder *enc = csd_ptm_enc_new(&c);
	size_t used = 0;
	for (size_t i = 0; i < np; i++) {
		int r = csd_ptm_enc_packet(enc, &dec_out[i], out + used, sizeof(out) - used);
		CHECK_EQ(r, dec_out[i].size);
		if (r > 0)
			used += (size_t)r;
	}
	csd_ptm_enc_free(enc);
	CHECK_EQ(used, n);
	CHECK(memcmp(out, d, n) == 0);
}

int main(void)
{
	test_address_lengths();
	test_exceptions();
	test_cycle_counts();
	test_timestamps();
	test_every_kind();
	test_random_streams();
	test_refusals();
	test_real_capture();
	return check_done("test_ptm_roundtrip");
}
