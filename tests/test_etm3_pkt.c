/* test_etm3_pkt.c - ETMv3 packet decoder against byte tables built from
 * ARM IHI 0014Q chapter 7: the spec's own P-header examples (examples 7.1,
 * 7.2, table 7.4), header encodings (table 7.1), branch address layout
 * (7.3.5), I-sync forms (7.10.5, table 7.20), data packets (7.4),
 * timestamps (7.7), plus errors, truncation, resync and split feeds.
 * Expected values are worked out by hand from the bit layouts quoted in
 * the comments, not taken from the decoder. */
#include <stdint.h>
#include <string.h>

#include "check.h"
#include "csdec.h"

#define MAXP 512

/* ETMIDR of an ETMv3.x (major 2 in [11:8], minor in [7:4]); ALT = [20]. */
#define IDR(x) (0x41000200u | ((x) << 4))
#define IDR_ALT (1u << 20)
#define CR_DVAL (1u << 2)
#define CR_DADDR (1u << 3)
#define CR_CA (1u << 12)
#define CR_CID1 (1u << 14)
#define CR_CID2 (2u << 14)
#define CR_CID4 (3u << 14)
#define CR_DONLY (1u << 20)
#define CCER_TS (1u << 22)
#define CCER_VIRT (1u << 26)
#define CCER_NAT (1u << 28)
#define CCER_TS64 (1u << 29)

static const uint8_t ASYNC[] = { 0, 0, 0, 0, 0, 0x80 };

struct result {
	struct csd_packet p[MAXP];
	int n;
};

static struct csd_trace_config cfg_of(uint32_t etmcr, uint32_t etmccer, uint32_t etmidr)
{
	struct csd_trace_config c;
	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.protocol = CSD_PROTO_ETM3;
	c.etmcr = etmcr;
	c.etmccer = etmccer;
	c.etmidr = etmidr;
	c.trace_id = 0x10;
	return c;
}

static void drain(csd_etm3_pkt_decoder *d, struct result *r)
{
	struct csd_packet p;
	int rc;
	while ((rc = csd_etm3_pkt_next(d, &p)) == CSD_OK) {
		if (r->n < MAXP)
			r->p[r->n++] = p;
	}
	CHECK(rc == CSD_EAGAIN || rc == CSD_EEOS);
}

/* Decode b[0..len) fed in pieces split at the positions in cuts[] (sorted,
 * ncuts of them), offsets starting at 1000, then finish. */
static void decode_split(const struct csd_trace_config *cfg, const uint8_t *b, size_t len,
			 const size_t *cuts, size_t ncuts, struct result *r)
{
	csd_etm3_pkt_decoder *d = csd_etm3_pkt_new(cfg);
	size_t start = 0;
	r->n = 0;
	CHECK(d != NULL);
	if (!d)
		return;
	for (size_t i = 0; i <= ncuts; i++) {
		size_t end = i < ncuts ? cuts[i] : len;
		struct csd_bytes in = { b + start, end - start, NULL, 1000 + start, 0x10 };
		CHECK_EQ(csd_etm3_pkt_feed(d, &in), CSD_OK);
		drain(d, r);
		start = end;
	}
	CHECK_EQ(csd_etm3_pkt_finish(d), CSD_OK);
	drain(d, r);
	struct csd_packet p;
	CHECK_EQ(csd_etm3_pkt_next(d, &p), CSD_EEOS);
	csd_etm3_pkt_free(d);
}

static void decode(const struct csd_trace_config *cfg, const uint8_t *b, size_t len, struct result *r)
{
	decode_split(cfg, b, len, NULL, 0, r);
}

/* A-sync then the given packet bytes; returns the packets after the A-sync. */
static int decode_synced(const struct csd_trace_config *cfg, const uint8_t *b, size_t len, struct result *r)
{
	uint8_t buf[256];
	memcpy(buf, ASYNC, sizeof(ASYNC));
	memcpy(buf + sizeof(ASYNC), b, len);
	decode(cfg, buf, sizeof(ASYNC) + len, r);
	CHECK(r->n >= 1);
	if (r->n < 1)
		return 0;
	CHECK_EQ(r->p[0].type, CSD_PKT_ASYNC);
	CHECK_EQ(r->p[0].size, 6);
	memmove(r->p, r->p + 1, (size_t)(r->n - 1) * sizeof(r->p[0]));
	r->n--;
	return r->n;
}

/* One packet expected from b after an A-sync. */
static struct csd_packet one(const struct csd_trace_config *cfg, const uint8_t *b, size_t len)
{
	static struct result r;
	struct csd_packet none;
	memset(&none, 0, sizeof(none));
	decode_synced(cfg, b, len, &r);
	CHECK_EQ(r.n, 1);
	if (r.n < 1)
		return none;
	CHECK_EQ(r.p[0].size, len);
	CHECK_EQ(r.p[0].offset, 1000 + sizeof(ASYNC));
	return r.p[0];
}

/* ------------------------------------------------------------------------ */

static void check_atoms(struct csd_packet p, unsigned fmt, unsigned num, uint32_t en, unsigned w)
{
	CHECK_EQ(p.type, CSD_PKT_PHEADER);
	CHECK_EQ(p.atoms.format, fmt);
	CHECK_EQ(p.atoms.num, num);
	CHECK_EQ(p.atoms.en, en);
	CHECK_EQ(p.atoms.w, w);
}

static void test_pheader_examples(void)
{
	struct csd_trace_config nca = cfg_of(0, 0, IDR(5)), ca = cfg_of(CR_CA, 0, IDR(5));
	uint8_t h;

	/* Example 7.1: b11001000 non-CA = E E N (format 1) */
	h = 0xC8;
	check_atoms(one(&nca, &h, 1), 1, 3, 0x3, 0);
	/* Example 7.1: b10001010 non-CA = N E (format 2; bit 3 first) */
	h = 0x8A;
	check_atoms(one(&nca, &h, 1), 2, 2, 0x2, 0);
	/* Example 7.2: b11001000 CA = W E W E W N */
	h = 0xC8;
	check_atoms(one(&ca, &h, 1), 1, 3, 0x3, 3);
	/* Example 7.2: b10001010 CA = W N E */
	h = 0x8A;
	check_atoms(one(&ca, &h, 1), 2, 2, 0x2, 1);
	/* Example 7.2: b11101000 CA = W W W E (format 3) */
	h = 0xE8;
	check_atoms(one(&ca, &h, 1), 3, 1, 0x1, 3);
	/* Table 7.4: b10000100 = W E; b10010010 = E (format 4, ETMv3.3+) */
	h = 0x84;
	check_atoms(one(&ca, &h, 1), 1, 1, 0x1, 1);
	h = 0x92;
	check_atoms(one(&ca, &h, 1), 4, 1, 0x1, 0);
	h = 0x96; /* F = 1: N */
	check_atoms(one(&ca, &h, 1), 4, 1, 0x0, 0);
	/* Format 1 non-CA b10111100: 15 E, no N; b11111100: 15 E then N */
	h = 0xBC;
	check_atoms(one(&nca, &h, 1), 1, 15, 0x7FFF, 0);
	h = 0xFC;
	check_atoms(one(&nca, &h, 1), 1, 16, 0x7FFF, 0);
	/* Format 3 b10111100 CA: 8 W, no E; format 1 CA b11011100: 7 WE + WN */
	h = 0xBC;
	check_atoms(one(&ca, &h, 1), 3, 0, 0, 8);
	h = 0xDC;
	check_atoms(one(&ca, &h, 1), 1, 8, 0x7F, 8);
	/* Format 0 b10000000 CA: W, ETMv3.0 only */
	struct csd_trace_config ca30 = cfg_of(CR_CA, 0, IDR(0));
	h = 0x80;
	check_atoms(one(&ca30, &h, 1), 0, 0, 0, 1);
	struct csd_packet p = one(&ca, &h, 1);
	CHECK_EQ(p.type, CSD_PKT_ERROR);
	CHECK(p.error && strstr(p.error, "format 0"));
	/* Format 4 is reserved before ETMv3.3 */
	struct csd_trace_config ca32 = cfg_of(CR_CA, 0, IDR(2));
	h = 0x92;
	p = one(&ca32, &h, 1);
	CHECK_EQ(p.type, CSD_PKT_ERROR);
	CHECK(p.error && strstr(p.error, "format 4"));
	h = 0x8A; /* format 2 still fine on ETMv3.2 */
	check_atoms(one(&ca32, &h, 1), 2, 2, 0x2, 1);
}

/* Every P-header value (b1xxxxxx0) against tables 7.2 / 7.3: how many are
 * valid in each mode, and that the rest are errors. */
static void test_pheader_tables(void)
{
	struct {
		uint32_t etmcr, etmidr;
		int valid;
	} modes[] = {
		/* non-CA: format 1 b1NEEEE00 (32) + format 2 b1000FF10 (4) */
		{ 0, IDR(5), 36 },
		{ 0, IDR(0), 36 },
		/* CA v3.3+: format 1 b1N0EEE00 minus b10000000 (15), format 2 (4),
		 * format 3 b1E1WWW00 (16), format 4 b10010F10 (2) */
		{ CR_CA, IDR(5), 37 },
		{ CR_CA, IDR(3), 37 },
		/* CA v3.1/3.2: no format 4, no format 0 */
		{ CR_CA, IDR(1), 35 },
		/* CA v3.0: format 0 instead of format 4 */
		{ CR_CA, IDR(0), 36 },
	};
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		struct csd_trace_config c = cfg_of(modes[m].etmcr, 0, modes[m].etmidr);
		int valid = 0;
		for (unsigned h = 0x80; h < 0x100; h += 2) {
			uint8_t b = (uint8_t)h;
			struct csd_packet p = one(&c, &b, 1);
			if (p.type == CSD_PKT_PHEADER)
				valid++;
			else
				CHECK_EQ(p.type, CSD_PKT_ERROR);
		}
		CHECK_EQ(valid, modes[m].valid);
	}
}

/* Table 7.1 reserved rows are errors (with every optional feature on). */
static void test_reserved_headers(void)
{
	struct csd_trace_config c = cfg_of(CR_DVAL | CR_DADDR | CR_CID4, CCER_TS | CCER_VIRT, IDR(5));
	static const struct {
		uint8_t mask, value;
	} reserved[] = {
		{ 0xD3, 0x12 },  /* b00x1xx10 */
		{ 0xF3, 0x10 },  /* b0001xx00 */
		{ 0xFB, 0x30 },  /* b00110x00 */
		{ 0xF7, 0x30 },  /* b0011x000 */
		{ 0xF3, 0x52 },  /* b0101xx10 */
		{ 0xEB, 0x4A },  /* b010x1x10 */
	};
	int count = 0;
	for (unsigned h = 0; h < 0x80; h++) {
		for (size_t k = 0; k < sizeof(reserved) / sizeof(reserved[0]); k++) {
			if ((h & reserved[k].mask) != reserved[k].value)
				continue;
			uint8_t b = (uint8_t)h;
			struct result r;
			decode_synced(&c, &b, 1, &r);
			CHECK(r.n >= 1);
			if (r.n >= 1) {
				CHECK_EQ(r.p[0].type, CSD_PKT_ERROR);
				CHECK_EQ(r.p[0].size, 1);
				CHECK_EQ(r.p[0].offset, 1006);
				CHECK(r.p[0].error && strstr(r.p[0].error, "reserved"));
			}
			count++;
			break;
		}
	}
	CHECK_EQ(count, 8 + 4 + 2 + 1 + 4 + 2);  /* distinct reserved bytes */
	/* Version rules of table 7.1 */
	struct csd_trace_config v34 = cfg_of(CR_DVAL, CCER_TS, IDR(4));
	struct csd_trace_config v33 = cfg_of(0, 0, IDR(3));
	uint8_t b = 0x3C; /* VMID: ETMv3.5 */
	CHECK_EQ(one(&v34, &b, 1).type, CSD_PKT_ERROR);
	b = 0x42;         /* timestamp: ETMv3.5 */
	CHECK_EQ(one(&v34, &b, 1).type, CSD_PKT_ERROR);
	b = 0x76;         /* exception exit: ETMv3.4 */
	CHECK_EQ(one(&v34, &b, 1).type, CSD_PKT_EXCEPTION_EXIT);
	CHECK_EQ(one(&v33, &b, 1).type, CSD_PKT_ERROR);
	b = 0x7E;
	CHECK_EQ(one(&v34, &b, 1).type, CSD_PKT_EXCEPTION_ENTRY);
	b = 0x0C;
	CHECK_EQ(one(&v33, &b, 1).type, CSD_PKT_TRIGGER);
	/* Data packets need data tracing (ETMCR[3:2]); context ID packets a
	 * context ID size (ETMCR[15:14]). */
	struct csd_trace_config plain = cfg_of(0, 0, IDR(5));
	static const uint8_t data_hdrs[] = { 0x02, 0x50, 0x54, 0x62, 0x6A, 0x20 };
	for (size_t k = 0; k < sizeof(data_hdrs); k++) {
		struct csd_packet p = one(&plain, &data_hdrs[k], 1);
		CHECK_EQ(p.type, CSD_PKT_ERROR);
		CHECK(p.error && strstr(p.error, "data"));
	}
	b = 0x6E;
	CHECK_EQ(one(&plain, &b, 1).type, CSD_PKT_ERROR);
}

/* ------------------------------------------------------------------------ */

/* I-sync: header, [cycle count], context ID (ETMCR[15:14]), information
 * byte (bit7 LSiP, [6:5] reason, [4] J, [3] NS, [2] AltISA, [1] Hyp),
 * 4-byte address with T in bit 0 (7.10.5, table 7.20). */
static void test_isync(void)
{
	struct csd_trace_config c = cfg_of(CR_CID4, CCER_VIRT, IDR(5));
	struct csd_packet p;

	/* Normal, context ID 0x12345678, reason 01 trace on, NS, Thumb at 0x80001234 */
	static const uint8_t thumb[] = { 0x08, 0x78, 0x56, 0x34, 0x12, 0x28, 0x35, 0x12, 0x00, 0x80 };
	p = one(&c, thumb, sizeof(thumb));
	CHECK_EQ(p.type, CSD_PKT_ISYNC);
	CHECK_EQ(p.reason, CSD_REASON_TRACE_ON);
	CHECK_EQ(p.addr, 0x80001234);
	CHECK_EQ(p.isa, CSD_ISA_THUMB);
	CHECK_EQ(p.context_id, 0x12345678);
	CHECK_EQ(p.flags, CSD_PKTF_ISA | CSD_PKTF_SECURITY | CSD_PKTF_NS | CSD_PKTF_CONTEXT_ID);

	/* Each row of table 7.20 */
	static const struct {
		uint8_t info;     /* J, AltISA bits */
		uint8_t t;
		int isa;          /* 0 = reserved */
		uint32_t addr;
	} rows[] = {
		{ 0x00, 0, CSD_ISA_ARM, 0x80001000 },
		{ 0x04, 0, 0, 0 },
		{ 0x00, 1, CSD_ISA_THUMB, 0x80001000 },
		{ 0x04, 1, CSD_ISA_THUMBEE, 0x80001000 },
		{ 0x10, 0, CSD_ISA_JAZELLE, 0x80001000 },
		{ 0x10, 1, CSD_ISA_JAZELLE, 0x80001001 },   /* T is address bit 0 */
		{ 0x14, 0, 0, 0 },
		{ 0x14, 1, 0, 0 },
	};
	for (size_t k = 0; k < sizeof(rows) / sizeof(rows[0]); k++) {
		uint8_t b[] = { 0x08, 0, 0, 0, 0, (uint8_t)(0x60 | rows[k].info), (uint8_t)(0x00 | rows[k].t), 0x10, 0x00, 0x80 };
		p = one(&c, b, sizeof(b));
		if (!rows[k].isa) {
			CHECK_EQ(p.type, CSD_PKT_ERROR);
			CHECK(p.error && strstr(p.error, "reserved combination"));
			continue;
		}
		CHECK_EQ(p.type, CSD_PKT_ISYNC);
		CHECK_EQ(p.reason, CSD_REASON_DEBUG_EXIT);
		CHECK_EQ(p.isa, rows[k].isa);
		CHECK_EQ(p.addr, rows[k].addr);
		CHECK_EQ(!!(p.flags & CSD_PKTF_ALTISA), rows[k].isa == CSD_ISA_THUMBEE);
	}
	/* Before ETMv3.3 bit 2 is not AltISA: Thumb stays Thumb */
	struct csd_trace_config v32 = cfg_of(0, 0, IDR(2));
	static const uint8_t pre33[] = { 0x08, 0x04, 0x01, 0x10, 0x00, 0x80 };
	p = one(&v32, pre33, sizeof(pre33));
	CHECK_EQ(p.isa, CSD_ISA_THUMB);
	/* Hyp bit [1] needs ETMv3.5 with the virtualization extensions */
	static const uint8_t hyp[] = { 0x08, 0x0A, 0x00, 0x10, 0x00, 0x80 };
	struct csd_trace_config virt = cfg_of(0, CCER_VIRT, IDR(5)), novirt = cfg_of(0, 0, IDR(5));
	p = one(&virt, hyp, sizeof(hyp));
	CHECK_EQ(p.flags & (CSD_PKTF_SECURITY | CSD_PKTF_NS | CSD_PKTF_HYP), CSD_PKTF_SECURITY | CSD_PKTF_NS | CSD_PKTF_HYP);
	p = one(&novirt, hyp, sizeof(hyp));
	CHECK_EQ(p.flags & (CSD_PKTF_NS | CSD_PKTF_HYP), CSD_PKTF_NS);

	/* Context ID sizes 0/1/2 */
	static const uint8_t cid1[] = { 0x08, 0xAB, 0x00, 0x00, 0x10, 0x00, 0x80 };
	struct csd_trace_config c1 = cfg_of(CR_CID1, 0, IDR(5));
	p = one(&c1, cid1, sizeof(cid1));
	CHECK_EQ(p.context_id, 0xAB);
	CHECK_EQ(p.addr, 0x80001000);
	static const uint8_t cid2[] = { 0x08, 0xCD, 0xAB, 0x00, 0x00, 0x10, 0x00, 0x80 };
	struct csd_trace_config c2 = cfg_of(CR_CID2, 0, IDR(5));
	p = one(&c2, cid2, sizeof(cid2));
	CHECK_EQ(p.context_id, 0xABCD);
	CHECK_EQ(p.addr, 0x80001000);
	static const uint8_t cid0[] = { 0x08, 0x00, 0x00, 0x10, 0x00, 0x80 };
	p = one(&novirt, cid0, sizeof(cid0));
	CHECK(!(p.flags & CSD_PKTF_CONTEXT_ID));

	/* I-sync with cycle count (0x70): count 300 = 0xAC 0x02 (7 bits per
	 * byte, bit 7 = more), overflow reason */
	static const uint8_t icc[] = { 0x70, 0xAC, 0x02, 0x40, 0x00, 0x10, 0x00, 0x80 };
	p = one(&novirt, icc, sizeof(icc));
	CHECK_EQ(p.type, CSD_PKT_ISYNC);
	CHECK_EQ(p.reason, CSD_REASON_OVERFLOW);
	CHECK(p.flags & CSD_PKTF_CYCLE_COUNT);
	CHECK_EQ(p.cycle_count, 300);
	CHECK_EQ(p.addr, 0x80001000);

	/* LSiP: data instruction ARM 0x80001000, current address compressed
	 * against it: one byte b0 000011 1 -> A[7:2] = 3 -> 0x8000100C. */
	static const uint8_t lsip1[] = { 0x08, 0xA0, 0x00, 0x10, 0x00, 0x80, 0x07 };
	p = one(&novirt, lsip1, sizeof(lsip1));
	CHECK_EQ(p.type, CSD_PKT_ISYNC);
	CHECK(p.flags & CSD_PKTF_LSIP);
	CHECK_EQ(p.data_insn_addr, 0x80001000);
	CHECK_EQ(p.addr, 0x8000100C);
	CHECK_EQ(p.addr_bytes, 1);
	CHECK_EQ(p.isa, CSD_ISA_ARM);
	/* LSiP with cycle count, 4-byte context ID and a 5-byte current
	 * address (Thumb 0xC0123456: D7 E8 C8 80 1C) = 16 bytes */
	static const uint8_t lsip5[] = { 0x70, 0x05, 0x01, 0x02, 0x03, 0x04, 0xA0, 0x00, 0x10, 0x00, 0x80,
					 0xD7, 0xE8, 0xC8, 0x80, 0x1C };
	p = one(&c, lsip5, sizeof(lsip5));
	CHECK_EQ(p.cycle_count, 5);
	CHECK_EQ(p.context_id, 0x04030201);
	CHECK_EQ(p.data_insn_addr, 0x80001000);
	CHECK_EQ(p.addr, 0xC0123456);
	CHECK_EQ(p.addr_bytes, 5);
	CHECK_EQ(p.isa, CSD_ISA_THUMB);
	/* 6-byte LSiP address: byte 5 with E set and one information byte
	 * changing the security state (NS = 1) */
	static const uint8_t lsip6[] = { 0x08, 0xA0, 0x00, 0x10, 0x00, 0x80,
					 0xD7, 0xE8, 0xC8, 0x80, 0x5C, 0x01 };
	p = one(&novirt, lsip6, sizeof(lsip6));
	CHECK_EQ(p.type, CSD_PKT_ISYNC);
	CHECK_EQ(p.addr, 0xC0123456);
	CHECK(p.flags & CSD_PKTF_NS);

	/* Data-only mode: no address, info byte only */
	struct csd_trace_config donly = cfg_of(CR_DONLY | CR_DVAL | CR_CID1, 0, IDR(5));
	static const uint8_t dis[] = { 0x08, 0x42, 0x28 };
	p = one(&donly, dis, sizeof(dis));
	CHECK_EQ(p.type, CSD_PKT_ISYNC);
	CHECK(p.flags & CSD_PKTF_DATA_ONLY);
	CHECK(!(p.flags & CSD_PKTF_ISA));
	CHECK_EQ(p.context_id, 0x42);
	CHECK_EQ(p.reason, CSD_REASON_TRACE_ON);
	CHECK(p.flags & CSD_PKTF_NS);
}

/* ------------------------------------------------------------------------ */

/* Branch addresses (7.3.5): byte 1 b C AAAAAA 1, bytes 2-4 b C AAAAAAA,
 * byte 5 b0E001AAA (ARM), b0E01AAAA (Thumb), b0E1AAAAA (Jazelle); fewer
 * bytes replace only the low bits of the previous address. */
static void test_branch_original(void)
{
	struct csd_trace_config c = cfg_of(0, 0, IDR(5));
	struct result r;
	/* I-sync ARM 0x80001000, then:
	 *  4B        b0 100101 1: A[7:2] = 0x25 -> 0x80001094
	 *  81 05     A[7:2] = 0, A[14:8] = 5 -> 0x80000500
	 *  87 F0 DB AE 0C  ARM 0x8BADF00C (5 bytes)
	 *  D7 E8 C8 80 1C  Thumb 0xC0123456
	 *  03        Thumb 1 byte: A[6:1] = 1 -> 0xC0123402
	 *  E3 FB E6 AB 33  Jazelle 0x9ABCDEF1
	 *  FF FF 7F  Jazelle 3 bytes: A[19:0] all ones -> 0x9ABFFFFF */
	static const uint8_t b[] = { 0x08, 0x00, 0x00, 0x10, 0x00, 0x80,
				     0x4B, 0x81, 0x05, 0x87, 0xF0, 0xDB, 0xAE, 0x0C, 0xD7, 0xE8, 0xC8, 0x80, 0x1C,
				     0x03, 0xE3, 0xFB, 0xE6, 0xAB, 0x33, 0xFF, 0xFF, 0x7F };
	static const struct {
		uint32_t addr;
		int bytes, isa, isa_flag;
	} want[] = {
		{ 0x80001094, 1, CSD_ISA_ARM, 0 },
		{ 0x80000500, 2, CSD_ISA_ARM, 0 },
		{ 0x8BADF00C, 5, CSD_ISA_ARM, 1 },
		{ 0xC0123456, 5, CSD_ISA_THUMB, 1 },
		{ 0xC0123402, 1, CSD_ISA_THUMB, 0 },
		{ 0x9ABCDEF1, 5, CSD_ISA_JAZELLE, 1 },
		{ 0x9ABFFFFF, 3, CSD_ISA_JAZELLE, 0 },
	};
	decode_synced(&c, b, sizeof(b), &r);
	CHECK_EQ(r.n, 1 + 7);
	for (int k = 0; k < 7 && k + 1 < r.n; k++) {
		const struct csd_packet *p = &r.p[k + 1];
		CHECK_EQ(p->type, CSD_PKT_BRANCH);
		CHECK_EQ(p->addr, want[k].addr);
		CHECK_EQ(p->addr_bytes, want[k].bytes);
		CHECK_EQ(p->size, want[k].bytes);
		CHECK_EQ(p->isa, want[k].isa);
		CHECK_EQ(!!(p->flags & CSD_PKTF_ISA), want[k].isa_flag);
		CHECK(!(p->flags & CSD_PKTF_EXCEPTION));
	}
	/* Byte 5 b0E000AAA is reserved */
	static const uint8_t bad5[] = { 0x81, 0x80, 0x80, 0x80, 0x07 };
	struct csd_packet p = one(&c, bad5, sizeof(bad5));
	CHECK_EQ(p.type, CSD_PKT_ERROR);
	CHECK(p.error && strstr(p.error, "byte 5"));
}

/* Exception information bytes: byte 0 b C AltISA Cancel EEEE NS, byte 1
 * b C 0 Hyp EEEEE (exception [8:4]), byte 2 b0 1 xx RRRR (resume). */
static void test_branch_exceptions(void)
{
	struct csd_trace_config c = cfg_of(0, CCER_VIRT, IDR(5));
	struct csd_packet p;
	/* ARM 0x8BADF00C with E set in byte 5 (0x4C), info byte 0x1C:
	 * exception 14 (IRQ), secure, no cancel */
	static const uint8_t e1[] = { 0x87, 0xF0, 0xDB, 0xAE, 0x4C, 0x1C };
	p = one(&c, e1, sizeof(e1));
	CHECK_EQ(p.type, CSD_PKT_BRANCH);
	CHECK_EQ(p.addr, 0x8BADF00C);
	CHECK_EQ(p.addr_bytes, 5);
	CHECK(p.flags & CSD_PKTF_EXCEPTION);
	CHECK_EQ(p.exception, 14);
	CHECK_EQ(p.flags & (CSD_PKTF_SECURITY | CSD_PKTF_NS | CSD_PKTF_CANCEL), CSD_PKTF_SECURITY);
	/* info 0xA3: more, cancel, exception 1, NS; byte 1 0x21: Hyp,
	 * exception [8:4] = 1 -> 17 */
	static const uint8_t e2[] = { 0x87, 0xF0, 0xDB, 0xAE, 0x4C, 0xA3, 0x21 };
	p = one(&c, e2, sizeof(e2));
	CHECK_EQ(p.exception, 17);
	CHECK_EQ(p.flags & (CSD_PKTF_NS | CSD_PKTF_HYP | CSD_PKTF_CANCEL), CSD_PKTF_NS | CSD_PKTF_HYP | CSD_PKTF_CANCEL);
	/* byte 0 then byte 2 directly (bit 6 set): resume 9 */
	static const uint8_t e3[] = { 0x87, 0xF0, 0xDB, 0xAE, 0x4C, 0x90, 0x49 };
	p = one(&c, e3, sizeof(e3));
	CHECK_EQ(p.exception, 8);
	CHECK(p.flags & CSD_PKTF_RESUME);
	CHECK_EQ(p.tag, 9);
	/* all three bytes: Cortex-M exception 0x1FF (9 bits), resume 3 */
	struct csd_trace_config m = cfg_of(0, 0, IDR(4));
	m.core_profile = CSD_CORE_M;
	static const uint8_t e4[] = { 0xD7, 0xE8, 0xC8, 0x80, 0x5C, 0x9E, 0x9F, 0x43 };
	p = one(&m, e4, sizeof(e4));
	CHECK_EQ(p.addr, 0xC0123456);
	CHECK_EQ(p.isa, CSD_ISA_THUMB);
	CHECK_EQ(p.exception, 0x1FF);
	CHECK_EQ(p.tag, 3);
	CHECK(!(p.flags & CSD_PKTF_HYP));
	/* byte 1 continuing into something that is not byte 2 */
	static const uint8_t bad[] = { 0x87, 0xF0, 0xDB, 0xAE, 0x4C, 0x80, 0x80, 0x00 };
	p = one(&c, bad, sizeof(bad));
	CHECK_EQ(p.type, CSD_PKT_ERROR);
	/* AltISA in byte 0 turns Thumb into ThumbEE (ETMv3.3+) */
	static const uint8_t tee[] = { 0xD7, 0xE8, 0xC8, 0x80, 0x5C, 0x40 };
	p = one(&c, tee, sizeof(tee));
	CHECK_EQ(p.isa, CSD_ISA_THUMBEE);
	CHECK(p.flags & CSD_PKTF_ALTISA);
	/* Deprecated exception in byte 5 (original encoding, ARM):
	 * b1 C EEE AAA = 1 1 101 100: cancel, exception code 5 (FIQ -> 15) */
	static const uint8_t dep[] = { 0x87, 0xF0, 0xDB, 0xAE, 0xEC };
	p = one(&c, dep, sizeof(dep));
	CHECK_EQ(p.type, CSD_PKT_BRANCH);
	CHECK_EQ(p.addr, 0x8BADF00C);
	CHECK_EQ(p.exception, 15);
	CHECK(p.flags & CSD_PKTF_CANCEL);
}

/* Alternative encoding (ETMIDR[20]): a last byte 2-4 has bit 6 = E and
 * six address bits. */
static void test_branch_alternative(void)
{
	struct csd_trace_config c = cfg_of(0, 0, IDR(4) | IDR_ALT);
	struct result r;
	/* I-sync ARM 0x80001000; 81 45 1C: A[7:2] = 0, A[13:8] = 5 -> 0x80000500
	 * plus exception 14; 81 05: same without E: 0x80000500 again; 81 85 3F
	 * (3 bytes): A[14:8] = 5, A[20:15] = 0x3F -> 0x801F8500 */
	static const uint8_t b[] = { 0x08, 0x00, 0x00, 0x10, 0x00, 0x80, 0x81, 0x45, 0x1C, 0x81, 0x05, 0x81, 0x85, 0x3F };
	decode_synced(&c, b, sizeof(b), &r);
	CHECK_EQ(r.n, 4);
	if (r.n == 4) {
		CHECK_EQ(r.p[1].addr, 0x80000500);
		CHECK_EQ(r.p[1].addr_bytes, 2);
		CHECK_EQ(r.p[1].size, 3);
		CHECK_EQ(r.p[1].exception, 14);
		CHECK(r.p[1].flags & CSD_PKTF_EXCEPTION);
		CHECK_EQ(r.p[2].addr, 0x80000500);
		CHECK(!(r.p[2].flags & CSD_PKTF_EXCEPTION));
		CHECK_EQ(r.p[3].addr, 0x801F8500);
	}
	/* The same two bytes in the original encoding: 81 45 is
	 * A[14:8] = 0x45, and there is no exception information */
	struct csd_trace_config o = cfg_of(0, 0, IDR(4));
	decode_synced(&o, b, 8, &r);
	CHECK_EQ(r.n, 2);
	if (r.n == 2) {
		CHECK_EQ(r.p[1].addr, 0x80004500);
		CHECK(!(r.p[1].flags & CSD_PKTF_EXCEPTION));
	}
	/* Byte 5 bit 7 is not the deprecated exception form here */
	static const uint8_t dep[] = { 0x87, 0xF0, 0xDB, 0xAE, 0xEC };
	CHECK_EQ(one(&c, dep, sizeof(dep)).type, CSD_PKT_ERROR);
}

/* ------------------------------------------------------------------------ */

static void test_simple_packets(void)
{
	struct csd_trace_config c = cfg_of(CR_CID2 | CR_CA, CCER_TS, IDR(5));
	struct csd_packet p;
	/* Cycle count 1..5 bytes: 7 bits per byte, byte 5 has bits [31:28] */
	static const struct {
		uint8_t b[6];
		size_t n;
		uint32_t v;
	} cc[] = {
		{ { 0x04, 0x01 }, 2, 1 },
		{ { 0x04, 0xFF, 0x7F }, 3, 0x3FFF },
		{ { 0x04, 0x80, 0x80, 0x01 }, 4, 1u << 14 },
		{ { 0x04, 0x81, 0x80, 0x80, 0x01 }, 5, (1u << 21) | 1 },
		{ { 0x04, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F }, 6, 0xFFFFFFFF },
	};
	for (size_t k = 0; k < sizeof(cc) / sizeof(cc[0]); k++) {
		p = one(&c, cc[k].b, cc[k].n);
		CHECK_EQ(p.type, CSD_PKT_CYCLE_COUNT);
		CHECK_EQ(p.cycle_count, cc[k].v);
		CHECK(p.flags & CSD_PKTF_CYCLE_COUNT);
	}
	static const uint8_t ccbad[] = { 0x04, 0xFF, 0xFF, 0xFF, 0xFF, 0x10 };
	CHECK_EQ(one(&c, ccbad, sizeof(ccbad)).type, CSD_PKT_ERROR);
	/* Context ID, 2 bytes little-endian */
	static const uint8_t cid[] = { 0x6E, 0x34, 0x12 };
	p = one(&c, cid, sizeof(cid));
	CHECK_EQ(p.type, CSD_PKT_CONTEXT_ID);
	CHECK_EQ(p.context_id, 0x1234);
	/* VMID */
	static const uint8_t vmid[] = { 0x3C, 0xA5 };
	p = one(&c, vmid, sizeof(vmid));
	CHECK_EQ(p.type, CSD_PKT_VMID);
	CHECK_EQ(p.vmid, 0xA5);
	/* Trigger, exception exit/entry: header only */
	static const uint8_t misc[] = { 0x0C, 0x76, 0x7E };
	struct result r;
	decode_synced(&c, misc, sizeof(misc), &r);
	CHECK_EQ(r.n, 3);
	CHECK_EQ(r.p[0].type, CSD_PKT_TRIGGER);
	CHECK_EQ(r.p[1].type, CSD_PKT_EXCEPTION_EXIT);
	CHECK_EQ(r.p[2].type, CSD_PKT_EXCEPTION_ENTRY);
	CHECK_EQ(r.p[2].offset, 1008);
	/* A run of ignore bytes is one packet; so is a longer A-sync */
	static const uint8_t ign[] = { 0x66, 0x66, 0x66, 0x0C, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x66 };
	decode_synced(&c, ign, sizeof(ign), &r);
	CHECK_EQ(r.n, 4);
	CHECK_EQ(r.p[0].type, CSD_PKT_IGNORE);
	CHECK_EQ(r.p[0].size, 3);
	CHECK_EQ(r.p[1].type, CSD_PKT_TRIGGER);
	CHECK_EQ(r.p[2].type, CSD_PKT_ASYNC);
	CHECK_EQ(r.p[2].size, 8);
	CHECK_EQ(r.p[2].offset, 1010);
	CHECK_EQ(r.p[2].raw[7], 0x80);
	CHECK_EQ(r.p[3].type, CSD_PKT_IGNORE);
	CHECK_EQ(r.p[3].size, 1);
}

/* Timestamps (7.7.4): 7 bits per byte with a continuation bit; 48-bit:
 * at most 7 bytes, the 7th has 6 bits; 64-bit: at most 9, the 9th has 8.
 * Unsent high bits keep their previous value. */
static void test_timestamps(void)
{
	struct csd_trace_config c48 = cfg_of(0, CCER_TS | CCER_NAT, IDR(5));
	struct csd_trace_config c64 = cfg_of(0, CCER_TS | CCER_NAT | CCER_TS64, IDR(5));
	struct result r;
	static const uint8_t t48[] = {
		0x42, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x3F,   /* full: all 48 bits set */
		0x46, 0x00,                                        /* low 7 bits cleared */
		0x42, 0x81, 0x00,                                  /* low 14 bits = 1 */
	};
	decode_synced(&c48, t48, sizeof(t48), &r);
	CHECK_EQ(r.n, 3);
	CHECK_EQ(r.p[0].timestamp, 0xFFFFFFFFFFFFull);
	CHECK_EQ(r.p[0].ts_bits, 48);
	CHECK_EQ(r.p[0].size, 8);
	CHECK_EQ(r.p[1].timestamp, 0xFFFFFFFFFF80ull);
	CHECK_EQ(r.p[1].ts_bits, 7);
	CHECK_EQ(r.p[2].timestamp, 0xFFFFFFFFC001ull);
	CHECK_EQ(r.p[2].ts_bits, 14);
	static const uint8_t bad48[] = { 0x42, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x7F };
	CHECK_EQ(one(&c48, bad48, sizeof(bad48)).type, CSD_PKT_ERROR);
	static const uint8_t t64[] = { 0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0xFF };
	struct csd_packet p = one(&c64, t64, sizeof(t64));
	CHECK_EQ(p.timestamp, 0xFF00000000000000ull);
	CHECK_EQ(p.ts_bits, 64);
	/* Gray code (ETMCCER[28] = 0): Gray 110 is binary 100 */
	struct csd_trace_config gray = cfg_of(0, CCER_TS, IDR(5));
	static const uint8_t tg[] = { 0x42, 0x06 };
	p = one(&gray, tg, sizeof(tg));
	CHECK_EQ(p.timestamp, 4);
}

/* Data packets (7.4): normal b00A0SS10 [address] [value of SS bytes],
 * out-of-order b0TT0SS00 value, placeholder b01A1TT00 [address],
 * value not traced b011A1010 [address]. Data addresses: 7 bits per byte,
 * byte 5 = A[31:28] and the big-endian bit 4, compressed against the
 * previous data address. */
static void test_data(void)
{
	struct csd_trace_config c = cfg_of(CR_DVAL | CR_DADDR, 0, IDR(5));
	struct result r;
	static const uint8_t b[] = {
		0x2E, 0xF8, 0xFF, 0xFF, 0xFF, 0x1F, 0x78, 0x56, 0x34, 0x12, /* addr 0xFFFFFFF8 BE, 4-byte value */
		0x2A, 0x04, 0xCD, 0xAB,                                  /* addr low 7 bits = 4, 2-byte value */
		0x02,                                                     /* no address, value 0 */
		0x64, 0x99,                                               /* OOO data tag 3, 1 byte */
		0x78, 0x10,                                               /* placeholder tag 2 with address */
		0x54,                                                     /* placeholder tag 1, no address */
		0x7A, 0x81, 0x01,                                         /* value not traced, 2-byte address */
		0x6A, 0x50, 0x62,                                         /* VNT no address, store failed, suppressed */
	};
	decode_synced(&c, b, sizeof(b), &r);
	CHECK_EQ(r.n, 10);
	if (r.n != 10)
		return;
	CHECK_EQ(r.p[0].type, CSD_PKT_NORMAL_DATA);
	CHECK_EQ(r.p[0].data_addr, 0xFFFFFFF8);
	CHECK_EQ(r.p[0].addr_bytes, 5);
	CHECK(r.p[0].flags & CSD_PKTF_BIG_ENDIAN);
	CHECK_EQ(r.p[0].data_value, 0x12345678);
	CHECK_EQ(r.p[0].data_size, 4);
	CHECK_EQ(r.p[1].data_addr, 0xFFFFFF84);
	CHECK_EQ(r.p[1].data_value, 0xABCD);
	CHECK_EQ(r.p[1].data_size, 2);
	CHECK(r.p[1].flags & CSD_PKTF_BIG_ENDIAN);
	CHECK(!(r.p[2].flags & CSD_PKTF_DATA_ADDR));
	CHECK(r.p[2].flags & CSD_PKTF_DATA_VALUE);
	CHECK_EQ(r.p[2].data_size, 0);
	CHECK_EQ(r.p[3].type, CSD_PKT_OOO_DATA);
	CHECK_EQ(r.p[3].tag, 3);
	CHECK_EQ(r.p[3].data_value, 0x99);
	CHECK_EQ(r.p[4].type, CSD_PKT_OOO_PLACEHOLDER);
	CHECK_EQ(r.p[4].tag, 2);
	CHECK_EQ(r.p[4].data_addr, 0xFFFFFF90);
	CHECK_EQ(r.p[5].tag, 1);
	CHECK(!(r.p[5].flags & CSD_PKTF_DATA_ADDR));
	CHECK_EQ(r.p[6].type, CSD_PKT_VALUE_NOT_TRACED);
	CHECK_EQ(r.p[6].data_addr, 0xFFFFC081);
	CHECK_EQ(r.p[7].type, CSD_PKT_VALUE_NOT_TRACED);
	CHECK_EQ(r.p[8].type, CSD_PKT_STORE_FAILED);
	CHECK_EQ(r.p[9].type, CSD_PKT_DATA_SUPPRESSED);
	/* Address-only tracing: the A bit brings an address, no value; a value
	 * size is impossible */
	struct csd_trace_config ao = cfg_of(CR_DADDR, 0, IDR(5));
	static const uint8_t aonly[] = { 0x22, 0x05 };
	struct csd_packet p = one(&ao, aonly, sizeof(aonly));
	CHECK_EQ(p.data_addr, 5);
	CHECK(!(p.flags & CSD_PKTF_DATA_VALUE));
	static const uint8_t aval[] = { 0x26, 0x05, 0x00, 0x00 };
	CHECK_EQ(one(&ao, aval, 1).type, CSD_PKT_ERROR);
	/* Value-only tracing: the A bit is set but no address follows */
	struct csd_trace_config vo = cfg_of(CR_DVAL, 0, IDR(5));
	static const uint8_t vonly[] = { 0x26, 0x05 };
	p = one(&vo, vonly, sizeof(vonly));
	CHECK_EQ(p.data_value, 5);
	CHECK(!(p.flags & CSD_PKTF_DATA_ADDR));
	/* OOO data needs data values */
	static const uint8_t ooo[] = { 0x20 };
	CHECK_EQ(one(&ao, ooo, 1).type, CSD_PKT_ERROR);
}

/* ------------------------------------------------------------------------ */

static void test_sync_and_errors(void)
{
	struct csd_trace_config c = cfg_of(0, 0, IDR(5));
	struct result r;

	/* Garbage, then A-sync: one NOSYNC for the garbage */
	static const uint8_t g[] = { 0x12, 0x34, 0x00, 0x00, 0x56, 0, 0, 0, 0, 0, 0, 0x80, 0x0C };
	decode(&c, g, sizeof(g), &r);
	CHECK_EQ(r.n, 3);
	CHECK_EQ(r.p[0].type, CSD_PKT_NOSYNC);
	CHECK_EQ(r.p[0].offset, 1000);
	CHECK_EQ(r.p[0].size, 5);
	CHECK_EQ(r.p[1].type, CSD_PKT_ASYNC);
	CHECK_EQ(r.p[1].offset, 1005);
	CHECK_EQ(r.p[1].size, 7);
	CHECK_EQ(r.p[2].type, CSD_PKT_TRIGGER);

	/* A reserved header: error at its offset, then unsynchronised until
	 * the next A-sync (the bytes in between are NOSYNC) */
	static const uint8_t e[] = { 0, 0, 0, 0, 0, 0x80, 0x0C, 0x10, 0x0C, 0x0C, 0, 0, 0, 0, 0, 0x80, 0x0C };
	decode(&c, e, sizeof(e), &r);
	CHECK_EQ(r.n, 6);
	CHECK_EQ(r.p[2].type, CSD_PKT_ERROR);
	CHECK_EQ(r.p[2].offset, 1007);
	CHECK_EQ(r.p[2].size, 1);
	CHECK_EQ(r.p[2].raw[0], 0x10);
	CHECK_EQ(r.p[3].type, CSD_PKT_NOSYNC);
	CHECK_EQ(r.p[3].size, 2);
	CHECK_EQ(r.p[4].type, CSD_PKT_ASYNC);
	CHECK_EQ(r.p[5].type, CSD_PKT_TRIGGER);

	/* Bad A-sync in a synchronised stream */
	static const uint8_t ba[] = { 0, 0, 0, 0, 0, 0x80, 0, 0, 0, 0x80, 0x0C };
	decode(&c, ba, sizeof(ba), &r);
	CHECK_EQ(r.n, 3);
	CHECK_EQ(r.p[1].type, CSD_PKT_ERROR);
	CHECK_EQ(r.p[1].offset, 1006);
	CHECK_EQ(r.p[1].size, 3);
	CHECK_EQ(r.p[2].type, CSD_PKT_NOSYNC);

	/* Packets cut by the end of the stream: one truncated packet, the
	 * last, naming what was cut (decode() then requires CSD_EEOS). */
	static const struct {
		uint8_t b[8];
		size_t n;
		const char *what;
	} trunc[] = {
		{ { 0x08, 0x00, 0x00 }, 3, "truncated I-sync packet" },
		{ { 0x81, 0x80 }, 2, "truncated branch address packet" },
		{ { 0x04, 0x80 }, 2, "truncated cycle count packet" },
		{ { 0x42, 0x80, 0x80 }, 3, "truncated timestamp packet" },
		{ { 0x00, 0x00 }, 2, "truncated A-sync packet" },
		{ { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 }, 7, "truncated A-sync packet" },
		{ { 0x87, 0xF0, 0xDB, 0xAE, 0x4C }, 5, "truncated branch address packet" },
		{ { 0xC8, 0x87, 0xF0 }, 3, "truncated branch address packet" },
	};
	for (size_t k = 0; k < sizeof(trunc) / sizeof(trunc[0]); k++) {
		struct csd_trace_config t = cfg_of(0, CCER_TS, IDR(5));
		decode_synced(&t, trunc[k].b, trunc[k].n, &r);
		const int lead = trunc[k].b[0] == 0xC8; /* a whole P-header first */
		CHECK_EQ(r.n, 1 + lead);
		if (r.n != 1 + lead)
			continue;
		CHECK_EQ(r.p[lead].type, CSD_PKT_TRUNCATED);
		CHECK_EQ(r.p[lead].offset, 1006 + lead);
		CHECK_EQ(r.p[lead].size, trunc[k].n - lead);
		CHECK(r.p[lead].error && strstr(r.p[lead].error, trunc[k].what) == r.p[lead].error);
		CHECK_STR(csd_pkt_type_name((int)r.p[lead].type), "truncated");
	}
	/* Bytes that are bad whatever follows stay errors at the end too. */
	static const uint8_t bad_end[][2] = { { 0x10 }, { 0x00, 0x44 } };
	for (size_t k = 0; k < 2; k++) {
		struct csd_trace_config t = cfg_of(0, CCER_TS, IDR(5));
		decode_synced(&t, bad_end[k], k + 1, &r);
		CHECK(r.n >= 1);
		if (r.n >= 1)
			CHECK_EQ(r.p[0].type, CSD_PKT_ERROR);
		for (int i = 0; i < r.n; i++)
			CHECK(r.p[i].type != CSD_PKT_TRUNCATED);
	}
	/* Nothing synchronises: everything is one NOSYNC, then EEOS */
	static const uint8_t nothing[] = { 1, 2, 3, 0, 0, 0 };
	decode(&c, nothing, sizeof(nothing), &r);
	CHECK_EQ(r.n, 1);
	CHECK_EQ(r.p[0].type, CSD_PKT_NOSYNC);
	CHECK_EQ(r.p[0].size, 6);

	/* Reset forgets the synchronisation */
	csd_etm3_pkt_decoder *d = csd_etm3_pkt_new(&c);
	struct csd_bytes in = { ASYNC, sizeof(ASYNC), NULL, 0, 0 };
	struct csd_packet p;
	CHECK_EQ(csd_etm3_pkt_feed(d, &in), CSD_OK);
	CHECK_EQ(csd_etm3_pkt_next(d, &p), CSD_OK);
	CHECK_EQ(p.type, CSD_PKT_ASYNC);
	CHECK_EQ(csd_etm3_pkt_reset(d), CSD_OK);
	static const uint8_t trig = 0x0C;
	struct csd_bytes in2 = { &trig, 1, NULL, 6, 0 };
	CHECK_EQ(csd_etm3_pkt_feed(d, &in2), CSD_OK);
	CHECK_EQ(csd_etm3_pkt_finish(d), CSD_OK);
	CHECK_EQ(csd_etm3_pkt_next(d, &p), CSD_OK);
	CHECK_EQ(p.type, CSD_PKT_NOSYNC);
	CHECK_EQ(csd_etm3_pkt_next(d, &p), CSD_EEOS);
	csd_etm3_pkt_free(d);
}

static void test_api(void)
{
	struct csd_trace_config c = cfg_of(0, 0, IDR(5));
	struct csd_packet p;
	CHECK(csd_etm3_pkt_new(NULL) == NULL);
	struct csd_trace_config small = c;
	small.size = 4;
	CHECK(csd_etm3_pkt_new(&small) == NULL);
	struct csd_trace_config ptm = cfg_of(0, 0, 0x411CF312);
	CHECK(csd_etm3_pkt_new(&ptm) == NULL);        /* PFT ETMIDR */
	/* An older, shorter struct is fine: missing members read as zero */
	struct csd_trace_config old = c;
	old.size = offsetof(struct csd_trace_config, etmccer);
	csd_etm3_pkt_decoder *d = csd_etm3_pkt_new(&old);
	CHECK(d != NULL);
	CHECK_EQ(csd_etm3_pkt_next(d, &p), CSD_EAGAIN);
	CHECK_EQ(csd_etm3_pkt_next(d, NULL), CSD_EINVAL);
	CHECK_EQ(csd_etm3_pkt_next(NULL, &p), CSD_EINVAL);
	CHECK_EQ(csd_etm3_pkt_feed(d, NULL), CSD_EINVAL);
	CHECK_EQ(csd_etm3_pkt_feed(NULL, NULL), CSD_EINVAL);
	CHECK_EQ(csd_etm3_pkt_finish(NULL), CSD_EINVAL);
	CHECK_EQ(csd_etm3_pkt_reset(NULL), CSD_EINVAL);
	/* feeding again before the previous run is consumed */
	struct csd_bytes in = { ASYNC, sizeof(ASYNC), NULL, 0, 0 };
	CHECK_EQ(csd_etm3_pkt_feed(d, &in), CSD_OK);
	CHECK_EQ(csd_etm3_pkt_feed(d, &in), CSD_EINVAL);
	csd_etm3_pkt_free(d);
	csd_etm3_pkt_free(NULL);
}

/* A stream with every packet kind: split into two feeds at every
 * position, and fed byte by byte, it must decode exactly as in one piece. */
static void test_split_feeds(void)
{
	struct csd_trace_config c = cfg_of(CR_DVAL | CR_DADDR | CR_CID4 | CR_CA,
					   CCER_TS | CCER_VIRT | CCER_NAT | CCER_TS64, IDR(5));
	static const uint8_t s[] = {
		0x55, 0x00, 0x00,                                   /* garbage */
		0, 0, 0, 0, 0, 0, 0x80,                             /* A-sync */
		0x70, 0x85, 0x01, 0x78, 0x56, 0x34, 0x12, 0x28, 0x35, 0x12, 0x00, 0x80,  /* I-sync + cc */
		0x08, 0x01, 0x02, 0x03, 0x04, 0xA0, 0x00, 0x10, 0x00, 0x80, 0xD7, 0xE8, 0xC8, 0x80, 0x1C, /* LSiP */
		0xC8, 0x8A, 0xE8, 0x92,                             /* P-headers */
		0x4B, 0x87, 0xF0, 0xDB, 0xAE, 0x4C, 0xA3, 0x21,     /* branches */
		0x04, 0x81, 0x80, 0x80, 0x01,                       /* cycle count */
		0x6E, 0x01, 0x02, 0x03, 0x04, 0x3C, 0x07,           /* context ID, VMID */
		0x42, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x01, /* 64-bit timestamp */
		0x66, 0x66, 0x66, 0x66,                             /* ignore run */
		0x2E, 0xF8, 0xFF, 0xFF, 0xFF, 0x1F, 0x78, 0x56, 0x34, 0x12, 0x64, 0x99, 0x78, 0x10,
		0x0C, 0x76, 0x7E, 0x50, 0x62,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0x80,                    /* long A-sync */
		0x10,                                               /* reserved -> error */
		0x33, 0x44,                                         /* nosync */
		0, 0, 0, 0, 0, 0x80, 0x87, 0xF0,                    /* truncated at the end */
	};
	static struct result whole, part;
	decode(&c, s, sizeof(s), &whole);
	/* nosync, async, 2 isync, 4 pheader, 2 branch, cycle count, context ID,
	 * VMID, timestamp, ignore, 3 data, trigger, exit, entry, store failed,
	 * suppressed, async, error, nosync, async, truncated */
	CHECK_EQ(whole.n, 28);
	int n_err = 0;
	for (int k = 0; k < whole.n; k++)
		n_err += whole.p[k].type == CSD_PKT_ERROR;
	CHECK_EQ(n_err, 1);
	CHECK_EQ(whole.p[whole.n - 1].type, CSD_PKT_TRUNCATED);
	CHECK_EQ(whole.p[whole.n - 1].size, 2);
	for (size_t cut = 1; cut < sizeof(s); cut++) {
		decode_split(&c, s, sizeof(s), &cut, 1, &part);
		CHECK_EQ(part.n, whole.n);
		if (part.n == whole.n)
			CHECK(memcmp(part.p, whole.p, sizeof(part.p[0]) * (size_t)whole.n) == 0);
	}
	size_t cuts[sizeof(s)];
	for (size_t k = 0; k + 1 < sizeof(s); k++)
		cuts[k] = k + 1;
	decode_split(&c, s, sizeof(s), cuts, sizeof(s) - 1, &part);
	CHECK_EQ(part.n, whole.n);
	if (part.n == whole.n)
		CHECK(memcmp(part.p, whole.p, sizeof(part.p[0]) * (size_t)whole.n) == 0);
}

/* Arbitrary bytes never crash, never loop, and every byte is accounted
 * for exactly once (packet offsets and sizes tile the input). */
static void test_random_bytes(void)
{
	uint32_t seed = 12345;
	static uint8_t buf[4096];
	static const uint32_t crs[] = { 0, CR_CA, CR_DVAL | CR_DADDR | CR_CID4, CR_CA | CR_DONLY | CR_DVAL };
	for (int round = 0; round < 40; round++) {
		for (size_t k = 0; k < sizeof(buf); k++) {
			seed = seed * 1103515245u + 12345u;
			uint8_t v = (uint8_t)(seed >> 16);
			/* sprinkle A-syncs so that the decoder gets in sync */
			buf[k] = (seed >> 8) % 97 == 0 ? 0 : v;
		}
		for (size_t k = 0; k + 6 < sizeof(buf); k += 300 + (size_t)round) {
			memcpy(buf + k, ASYNC, sizeof(ASYNC));
		}
		struct csd_trace_config c = cfg_of(crs[round % 4], CCER_TS | (round & 1 ? CCER_TS64 : 0),
						   IDR((unsigned)round % 6) | (round & 2 ? IDR_ALT : 0));
		csd_etm3_pkt_decoder *d = csd_etm3_pkt_new(&c);
		struct csd_bytes in = { buf, sizeof(buf), NULL, 0, 0 };
		CHECK_EQ(csd_etm3_pkt_feed(d, &in), CSD_OK);
		CHECK_EQ(csd_etm3_pkt_finish(d), CSD_OK);
		uint64_t next_off = 0;
		int ok = 1, count = 0, rc;
		struct csd_packet p;
		while ((rc = csd_etm3_pkt_next(d, &p)) == CSD_OK && count < 100000) {
			if (p.offset != next_off || p.size == 0)
				ok = 0;
			next_off = p.offset + p.size;
			count++;
		}
		CHECK_EQ(rc, CSD_EEOS);
		CHECK(ok);
		CHECK_EQ(next_off, sizeof(buf));
		csd_etm3_pkt_free(d);
	}
}

int main(void)
{
	test_pheader_examples();
	test_pheader_tables();
	test_reserved_headers();
	test_isync();
	test_branch_original();
	test_branch_exceptions();
	test_branch_alternative();
	test_simple_packets();
	test_timestamps();
	test_data();
	test_sync_and_errors();
	test_api();
	test_split_feeds();
	test_random_bytes();
	return check_done("test_etm3_pkt");
}
