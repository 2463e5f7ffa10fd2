/*
 * PTM (PFT 1.0 / 1.1) packet decoder tests. Expected values are worked out
 * by hand from the encodings of ARM IHI 0035B chapter 4 (each case says
 * how), from OpenCSD's listing of the TC2 capture where noted, and for the
 * trace_cov_a15 capture from the program's own code (see
 * test_trace_cov_a15).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csdec.h"
#include "ptm_internal.h"

#define MAXP 512
#define BASE 1000 /* capture offset of the first byte in these tests */

/* Registers of the two real PTMs (TC2 device_8.ini, trace_cov_a15 device5.ini). */
#define ETMIDR_PFT11 0x411CF312u
#define ETMIDR_PFT10 0x4100F300u
#define ETMCCER_TS64_BIN 0x34C01AC2u
#define ETMCR_CA (1u << 12)
#define ETMCR_CID(n) ((uint32_t)(n) << 14) /* 1, 2, 3 = 1, 2, 4 bytes */

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

static struct csd_packet pk[MAXP];
static size_t npk;

/* Drain the decoder into pk[]; returns the last non-packet return code. */
static int drain(csd_ptm_pkt_decoder *dec)
{
	int r;
	while ((r = csd_ptm_pkt_next(dec, &pk[npk < MAXP ? npk : MAXP - 1])) == 0) {
		if (npk < MAXP)
			npk++;
	}
	return r;
}

/*
 * Decode d[0..n) fed as pieces that end at each cut (ascending, < n), then
 * the rest; finish and drain. Byte i has capture offset BASE + i.
 */
static size_t decode_cuts(const struct csd_trace_config *cfg, const uint8_t *d, size_t n, const size_t *cuts,
			  size_t ncuts)
{
	csd_ptm_pkt_decoder *dec = csd_ptm_pkt_new(cfg);
	CHECK(dec != NULL);
	npk = 0;
	if (!dec)
		return 0;
	size_t start = 0;
	for (size_t c = 0; c <= ncuts; c++) {
		size_t end = c < ncuts ? cuts[c] : n;
		struct csd_bytes b = { .data = d + start, .size = end - start, .base = BASE + start };
		CHECK_EQ(csd_ptm_pkt_feed(dec, &b), 0);
		CHECK_EQ(drain(dec), CSD_EAGAIN);
		start = end;
	}
	CHECK_EQ(csd_ptm_pkt_finish(dec), 0);
	CHECK_EQ(drain(dec), CSD_EEOS);
	CHECK_EQ(csd_ptm_pkt_next(dec, &pk[0 < MAXP ? MAXP - 1 : 0]), CSD_EEOS);
	csd_ptm_pkt_free(dec);
	return npk;
}

static size_t decode(const struct csd_trace_config *cfg, const uint8_t *d, size_t n)
{
	return decode_cuts(cfg, d, n, NULL, 0);
}

/* Check type, offset (relative to BASE) and size of packet i. */
#define CHECK_PKT(i, t, off, sz) do { CHECK((i) < npk); if ((i) < npk) { \
	CHECK_EQ(pk[i].type, (t)); CHECK_EQ(pk[i].offset, BASE + (off)); CHECK_EQ(pk[i].size, (sz)); } } while (0)

static const uint8_t ASYNC[] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x80 };

/* Build A-sync + body into buf; returns the length. */
static size_t with_async(uint8_t *buf, const uint8_t *body, size_t n)
{
	memcpy(buf, ASYNC, sizeof(ASYNC));
	memcpy(buf + sizeof(ASYNC), body, n);
	return sizeof(ASYNC) + n;
}

/* ---- I-sync: header 0x08, Address[31:0] with T in bit 0, information byte
 * x Reason[1:0] J NS AltIS Hyp x, cycle count (cycle-accurate, not
 * periodic), context ID (ETMCR[15:14] bytes). ---- */
static void test_isync(void)
{
	uint8_t buf[64];
	struct csd_trace_config c = cfg_of(0, 0, ETMIDR_PFT11);
	/* ARM, debug exit (reason 3), secure. */
	static const uint8_t arm[] = { 0x08, 0x58, 0x05, 0x00, 0x80, 0x61 };
	size_t n = with_async(buf, arm, sizeof(arm));
	CHECK_EQ(decode(&c, buf, n), 2);
	CHECK_PKT(0, CSD_PKT_ASYNC, 0, 6);
	CHECK_PKT(1, CSD_PKT_ISYNC, 6, 6);
	CHECK_EQ(pk[1].addr, 0x80000558);
	CHECK_EQ(pk[1].isa, CSD_ISA_ARM);
	CHECK_EQ(pk[1].reason, CSD_REASON_DEBUG_EXIT);
	CHECK_EQ(pk[1].flags & (CSD_PKTF_ISA | CSD_PKTF_SECURITY | CSD_PKTF_NS | CSD_PKTF_HYP | CSD_PKTF_ALTISA |
				CSD_PKTF_CYCLE_COUNT | CSD_PKTF_CONTEXT_ID),
		 CSD_PKTF_ISA | CSD_PKTF_SECURITY);
	CHECK_EQ(pk[1].raw[5], 0x61);

	/* Thumb (T = 1, address bit 0 cleared), periodic. */
	static const uint8_t thumb[] = { 0x08, 0x83, 0x8d, 0x01, 0xc0, 0x01 };
	n = with_async(buf, thumb, sizeof(thumb));
	CHECK_EQ(decode(&c, buf, n), 2);
	CHECK_EQ(pk[1].addr, 0xc0018d82);
	CHECK_EQ(pk[1].isa, CSD_ISA_THUMB);
	CHECK_EQ(pk[1].reason, CSD_REASON_PERIODIC);

	/* Jazelle: J = 1, bit 0 is address bit 0. */
	static const uint8_t jaz[] = { 0x08, 0x23, 0x01, 0x00, 0x00, 0x11 };
	n = with_async(buf, jaz, sizeof(jaz));
	CHECK_EQ(decode(&c, buf, n), 2);
	CHECK_EQ(pk[1].addr, 0x123);
	CHECK_EQ(pk[1].isa, CSD_ISA_JAZELLE);

	/* ThumbEE: T = 1 and AltIS = 1; trace on (reason 1), NS and Hyp. */
	static const uint8_t tee[] = { 0x08, 0x01, 0x20, 0x00, 0x00, 0x2F };
	n = with_async(buf, tee, sizeof(tee));
	CHECK_EQ(decode(&c, buf, n), 2);
	CHECK_EQ(pk[1].addr, 0x2000);
	CHECK_EQ(pk[1].isa, CSD_ISA_THUMBEE);
	CHECK_EQ(pk[1].reason, CSD_REASON_TRACE_ON);
	CHECK_EQ(pk[1].flags & (CSD_PKTF_NS | CSD_PKTF_HYP | CSD_PKTF_ALTISA),
		 CSD_PKTF_NS | CSD_PKTF_HYP | CSD_PKTF_ALTISA);

	/* Overflow reason (2). */
	static const uint8_t ovf[] = { 0x08, 0x00, 0x10, 0x00, 0x00, 0x41 };
	n = with_async(buf, ovf, sizeof(ovf));
	CHECK_EQ(decode(&c, buf, n), 2);
	CHECK_EQ(pk[1].reason, CSD_REASON_OVERFLOW);
	CHECK_EQ(pk[1].addr, 0x1000);

	/* AltIS with T = 0 (ARM) and with J = 1 are reserved combinations. */
	static const uint8_t bad1[] = { 0x08, 0x00, 0x10, 0x00, 0x00, 0x05, 0x84 };
	n = with_async(buf, bad1, sizeof(bad1));
	CHECK_EQ(decode(&c, buf, n), 3);
	CHECK_PKT(1, CSD_PKT_ERROR, 6, 6);
	CHECK(pk[1].error && strstr(pk[1].error, "AltIS"));
	CHECK_PKT(2, CSD_PKT_NOSYNC, 12, 1);
	static const uint8_t bad2[] = { 0x08, 0x00, 0x10, 0x00, 0x00, 0x15 };
	n = with_async(buf, bad2, sizeof(bad2));
	CHECK_EQ(decode(&c, buf, n), 2);
	CHECK_EQ(pk[1].type, CSD_PKT_ERROR);

	/* Context ID bytes per ETMCR[15:14]: 1, 2, 4, little-endian. */
	static const uint8_t cid[] = { 0x08, 0x00, 0x10, 0x00, 0x00, 0x21, 0x78, 0x56, 0x34, 0x12, 0x84 };
	static const uint32_t cid_val[4] = { 0, 0x78, 0x5678, 0x12345678 };
	static const unsigned cid_len[4] = { 0, 1, 2, 4 };
	for (unsigned s = 1; s <= 3; s++) {
		struct csd_trace_config cc = cfg_of(ETMCR_CID(s), 0, ETMIDR_PFT11);
		uint8_t b2[32];
		memcpy(b2, cid, 6 + cid_len[s]);
		b2[6 + cid_len[s]] = 0x84; /* an atom after the I-sync */
		n = with_async(buf, b2, 7 + cid_len[s]);
		CHECK_EQ(decode(&cc, buf, n), 3);
		CHECK_PKT(1, CSD_PKT_ISYNC, 6, 6 + cid_len[s]);
		CHECK(pk[1].flags & CSD_PKTF_CONTEXT_ID);
		CHECK_EQ(pk[1].context_id, cid_val[s]);
		CHECK_PKT(2, CSD_PKT_ATOM, 12 + cid_len[s], 1);
	}

	/* Cycle-accurate: a non-periodic I-sync carries a cycle count before
	 * the context ID (TC2 bytes; OpenCSD lists Cycles=51): cc 03 =
	 * 3 + 3 * 16. A periodic one has none. */
	struct csd_trace_config ca = cfg_of(ETMCR_CA | ETMCR_CID(3), 0, ETMIDR_PFT11);
	static const uint8_t ca_isync[] = { 0x08, 0xdf, 0x8d, 0x01, 0xc0, 0x21, 0xcc, 0x03, 0x44, 0x33, 0x22, 0x11,
					    0x08, 0x83, 0x8d, 0x01, 0xc0, 0x01, 0x01, 0x00, 0x00, 0x00 };
	n = with_async(buf, ca_isync, sizeof(ca_isync));
	CHECK_EQ(decode(&ca, buf, n), 3);
	CHECK_PKT(1, CSD_PKT_ISYNC, 6, 12);
	CHECK_EQ(pk[1].addr, 0xc0018dde);
	CHECK_EQ(pk[1].reason, CSD_REASON_TRACE_ON);
	CHECK(pk[1].flags & CSD_PKTF_CYCLE_COUNT);
	CHECK_EQ(pk[1].cycle_count, 51);
	CHECK_EQ(pk[1].context_id, 0x11223344);
	CHECK_PKT(2, CSD_PKT_ISYNC, 18, 10);
	CHECK(!(pk[2].flags & CSD_PKTF_CYCLE_COUNT));
	CHECK_EQ(pk[2].context_id, 1);
}

/* ---- Atoms. Outside cycle-accurate mode: 1, stop bit, then F for each
 * atom from the oldest down to bit 1, 0; F = 1 means N. In cycle-accurate
 * mode: 1 C Count[3:0] F 0 and more count bytes. ---- */
static void test_atoms(void)
{
	struct {
		uint8_t h;
		uint8_t num;
		uint32_t en; /* bit i = atom i (0 oldest), 1 = E */
	} t[] = {
		{ 0x84, 1, 0x1 },  /* 1000 0100: E */
		{ 0x86, 1, 0x0 },  /* 1000 0110: N */
		{ 0x88, 2, 0x3 },  /* 1000 1000: E E */
		{ 0x8A, 2, 0x1 },  /* 1000 1010: E (bit 2), N (bit 1) */
		{ 0x8C, 2, 0x2 },  /* 1000 1100: N, E */
		{ 0x90, 3, 0x7 },  /* 1001 0000: E E E */
		{ 0x9E, 3, 0x0 },  /* 1001 1110: N N N */
		{ 0x9C, 3, 0x4 },  /* 1001 1100: N N E */
		{ 0xA0, 4, 0xF },  /* 1010 0000: E E E E */
		{ 0xB2, 4, 0x6 },  /* 1011 0010: N E E N */
		{ 0xC0, 5, 0x1F }, /* 1100 0000: E E E E E */
		{ 0xD0, 5, 0x1D }, /* 1101 0000: E N E E E */
		{ 0xE2, 5, 0x0E }, /* 1110 0010: N E E E N */
		{ 0xFE, 5, 0x00 }, /* 1111 1110: N N N N N */
	};
	const size_t nt = sizeof(t) / sizeof(t[0]);
	uint8_t buf[64];
	struct csd_trace_config c = cfg_of(0, 0, ETMIDR_PFT11);
	memcpy(buf, ASYNC, 6);
	for (size_t i = 0; i < nt; i++)
		buf[6 + i] = t[i].h;
	CHECK_EQ(decode(&c, buf, 6 + nt), 1 + nt);
	for (size_t i = 0; i < nt; i++) {
		CHECK_PKT(1 + i, CSD_PKT_ATOM, 6 + i, 1);
		CHECK_EQ(pk[1 + i].atoms.num, t[i].num);
		CHECK_EQ(pk[1 + i].atoms.en, t[i].en);
		CHECK_EQ(pk[1 + i].atoms.format, 0);
		CHECK(!(pk[1 + i].flags & CSD_PKTF_CYCLE_COUNT));
	}
	/* 0x80 and 0x82 hold no atom outside cycle-accurate mode. */
	static const uint8_t none[] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x82, 0x84 };
	CHECK_EQ(decode(&c, none, sizeof(none)), 3);
	CHECK_PKT(1, CSD_PKT_ERROR, 6, 1);
	CHECK_PKT(2, CSD_PKT_NOSYNC, 7, 1);

	/* Cycle-accurate (TC2 bytes, OpenCSD: N 4; E 35; E 13; E 1). */
	struct csd_trace_config ca = cfg_of(ETMCR_CA, 0, ETMIDR_PFT11);
	static const uint8_t cat[] = { 0x92, 0xcc, 0x02, 0xb4, 0x84, 0x80,
				       /* five bytes: count = 0x7F << 25 */
				       0xC0, 0x80, 0x80, 0x80, 0x7F,
				       /* 1 + 0x7F << 4 + 1 << 11 */
				       0xC6, 0xFF, 0x01 };
	size_t n = with_async(buf, cat, sizeof(cat));
	CHECK_EQ(decode(&ca, buf, n), 8);
	static const uint32_t cc[] = { 4, 35, 13, 1, 0, 0xFE000000u, 1 + (0x7Fu << 4) + (1u << 11) };
	static const uint8_t en[] = { 0, 1, 1, 1, 1, 1, 0 };
	static const uint32_t off[] = { 6, 7, 9, 10, 11, 12, 17 };
	static const uint32_t sz[] = { 1, 2, 1, 1, 1, 5, 3 };
	for (size_t i = 0; i < 7; i++) {
		CHECK_PKT(1 + i, CSD_PKT_ATOM, off[i], sz[i]);
		CHECK_EQ(pk[1 + i].atoms.num, 1);
		CHECK_EQ(pk[1 + i].atoms.en, en[i]);
		CHECK(pk[1 + i].flags & CSD_PKTF_CYCLE_COUNT);
		CHECK_EQ(pk[1 + i].cycle_count, cc[i]);
	}
	/* A fifth count byte with its continuation bit set is impossible. */
	static const uint8_t bad[] = { 0xC0, 0x80, 0x80, 0x80, 0x80, 0x84 };
	n = with_async(buf, bad, sizeof(bad));
	CHECK_EQ(decode(&ca, buf, n), 3);
	CHECK_PKT(1, CSD_PKT_ERROR, 6, 5);
	CHECK(pk[1].error && strstr(pk[1].error, "cycle count"));
	CHECK_PKT(2, CSD_PKT_NOSYNC, 11, 1);
}

/* An A-sync and an I-sync to an ARM / Thumb address, for branch tests. */
static size_t arm_start(uint8_t *buf)
{
	static const uint8_t s[] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x08, 0x04, 0x05, 0x00, 0x80, 0x61 };
	memcpy(buf, s, sizeof(s));
	return sizeof(s); /* ISYNC 0x80000504 ARM */
}

static size_t thumb_start(uint8_t *buf)
{
	static const uint8_t s[] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x08, 0xaf, 0x8d, 0x01, 0xc0, 0x21 };
	memcpy(buf, s, sizeof(s));
	return sizeof(s); /* ISYNC 0xc0018dae Thumb */
}

/* ---- Branch address packets: C A[6:1] 1 (A = address bits above the
 * alignment: ARM from bit 2, Thumb 1, Jazelle 0), 7-bit middle bytes, a
 * last short byte C E A[5:0], a fifth byte 0 E 0 0 1 A[2:0] (ARM),
 * 0 E 0 1 A[3:0] (Thumb), 0 E 1 A[4:0] (Jazelle); exception bytes
 * C AltIS x Exc[3:0] NS and 0 x Hyp Exc[8:4]. ---- */
static void test_branch(void)
{
	uint8_t buf[128];
	struct csd_trace_config c = cfg_of(0, 0, ETMIDR_PFT11);
	size_t n = arm_start(buf);
	static const uint8_t b1[] = {
		0x2f,                               /* 1 byte: A[7:2] = 0x17 -> 0x8000055C */
		0xAD, 0x85, 0x80, 0x80, 0x0C,       /* ARM full: 0x80000558 */
		0xF9, 0xAC, 0xD1, 0x91, 0x11,       /* Thumb full: 0x12345678 */
		0x85, 0x40, 0x9D, 0x24,             /* Thumb, A[12:1] = 2; exception 14 + 4 * 16, NS, Hyp */
		0xF3, 0xD9, 0xA2, 0xA3, 0x22,       /* Jazelle full: 0x12345679 */
		0x81, 0x80, 0x80, 0x80, 0x48, 0x02, /* ARM full 0, exception 1 (debug halt) */
	};
	memcpy(buf + n, b1, sizeof(b1));
	n += sizeof(b1);
	CHECK_EQ(decode(&c, buf, n), 8);
	CHECK_PKT(2, CSD_PKT_BRANCH, 12, 1);
	CHECK_EQ(pk[2].addr, 0x8000055C);
	CHECK_EQ(pk[2].addr_bytes, 1);
	CHECK_EQ(pk[2].isa, CSD_ISA_ARM);
	CHECK(!(pk[2].flags & (CSD_PKTF_ISA | CSD_PKTF_EXCEPTION)));
	CHECK_PKT(3, CSD_PKT_BRANCH, 13, 5);
	CHECK_EQ(pk[3].addr, 0x80000558);
	CHECK_EQ(pk[3].addr_bytes, 5);
	CHECK(pk[3].flags & CSD_PKTF_ISA);
	CHECK_EQ(pk[3].isa, CSD_ISA_ARM);
	CHECK_PKT(4, CSD_PKT_BRANCH, 18, 5);
	CHECK_EQ(pk[4].addr, 0x12345678);
	CHECK_EQ(pk[4].isa, CSD_ISA_THUMB);
	CHECK(pk[4].flags & CSD_PKTF_ISA);
	CHECK_PKT(5, CSD_PKT_BRANCH, 23, 4);
	CHECK_EQ(pk[5].addr, 0x12344004); /* low 13 bits replaced */
	CHECK_EQ(pk[5].addr_bytes, 2);
	CHECK_EQ(pk[5].isa, CSD_ISA_THUMB);
	CHECK_EQ(pk[5].flags & (CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY | CSD_PKTF_NS | CSD_PKTF_HYP | CSD_PKTF_ALTISA),
		 CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY | CSD_PKTF_NS | CSD_PKTF_HYP);
	CHECK_EQ(pk[5].exception, 14 + 4 * 16);
	CHECK_PKT(6, CSD_PKT_BRANCH, 27, 5);
	CHECK_EQ(pk[6].addr, 0x12345679);
	CHECK_EQ(pk[6].isa, CSD_ISA_JAZELLE);
	CHECK_PKT(7, CSD_PKT_BRANCH, 32, 6);
	CHECK_EQ(pk[7].addr, 0);
	CHECK_EQ(pk[7].isa, CSD_ISA_ARM);
	CHECK_EQ(pk[7].exception, 1);
	CHECK_EQ(pk[7].flags & (CSD_PKTF_EXCEPTION | CSD_PKTF_NS | CSD_PKTF_HYP), CSD_PKTF_EXCEPTION);

	/* Address widths from a Thumb start 0xc0018dae: 2 and 4 bytes
	 * replace A[12:0] and A[26:0] (TC2 bytes; OpenCSD lists
	 * 0xC00185A2 cycles 378, 0xC02F5B3A cycles 1, 0xC0304480 cycles 481). */
	struct csd_trace_config ca = cfg_of(ETMCR_CA, ETMCCER_TS64_BIN, ETMIDR_PFT11);
	n = thumb_start(buf);
	buf[n++] = 0x84; /* cycle count of the I-sync: 1 */
	static const uint8_t b2[] = { 0xa3, 0x0b, 0x68, 0x17, 0xbb, 0xb6, 0xbd, 0x01, 0x04,
				      0x81, 0x89, 0xc1, 0x01, 0x44, 0x1e };
	memcpy(buf + n, b2, sizeof(b2));
	n += sizeof(b2);
	CHECK_EQ(decode(&ca, buf, n), 5);
	CHECK_EQ(pk[1].cycle_count, 1);
	CHECK_PKT(2, CSD_PKT_BRANCH, 13, 4);
	CHECK_EQ(pk[2].addr, 0xC00185A2);
	CHECK_EQ(pk[2].addr_bytes, 2);
	CHECK_EQ(pk[2].cycle_count, 378);
	CHECK_PKT(3, CSD_PKT_BRANCH, 17, 5);
	CHECK_EQ(pk[3].addr, 0xC02F5B3A);
	CHECK_EQ(pk[3].addr_bytes, 4);
	CHECK_EQ(pk[3].cycle_count, 1);
	CHECK_PKT(4, CSD_PKT_BRANCH, 22, 6);
	CHECK_EQ(pk[4].addr, 0xC0304480);
	CHECK_EQ(pk[4].addr_bytes, 4);
	CHECK_EQ(pk[4].cycle_count, 481);

	/* TC2: a five-byte ARM address with cycle count (0xB6EF6A1C, 397). */
	n = thumb_start(buf);
	buf[n++] = 0x84;
	static const uint8_t b3[] = { 0x8f, 0xea, 0xde, 0xdb, 0x0d, 0x74, 0x18 };
	memcpy(buf + n, b3, sizeof(b3));
	n += sizeof(b3);
	CHECK_EQ(decode(&ca, buf, n), 3);
	CHECK_EQ(pk[2].addr, 0xB6EF6A1C);
	CHECK_EQ(pk[2].isa, CSD_ISA_ARM);
	CHECK_EQ(pk[2].cycle_count, 397);

	/* The AltIS bit of exception information switches Thumb <-> ThumbEE;
	 * exception number 0 means the bytes only state the state. */
	n = thumb_start(buf);
	static const uint8_t b4[] = { 0x85, 0x40, 0x40, 0x87, 0x40, 0x00, 0x89, 0x00 };
	memcpy(buf + n, b4, sizeof(b4));
	n += sizeof(b4);
	CHECK_EQ(decode(&c, buf, n), 5);
	CHECK_EQ(pk[2].isa, CSD_ISA_THUMBEE);
	CHECK_EQ(pk[2].flags & (CSD_PKTF_ISA | CSD_PKTF_ALTISA | CSD_PKTF_EXCEPTION),
		 CSD_PKTF_ISA | CSD_PKTF_ALTISA | CSD_PKTF_EXCEPTION);
	CHECK_EQ(pk[2].exception, 0);
	CHECK_EQ(pk[3].isa, CSD_ISA_THUMB);
	CHECK_EQ(pk[4].isa, CSD_ISA_THUMB);
	CHECK_EQ(pk[4].addr, 0xc0018008); /* 2 bytes: A[12:1] = 4 */

	/* Impossible branches: fifth byte with C set, reserved instruction set
	 * bits, a third exception byte, AltIS in ARM state. */
	static const struct {
		uint8_t b[8];
		size_t n, err_size;
	} bad[] = {
		{ { 0x81, 0x80, 0x80, 0x80, 0x88, 0x84 }, 6, 5 },
		{ { 0x81, 0x80, 0x80, 0x80, 0x00, 0x84 }, 6, 5 },
		{ { 0x81, 0x80, 0x80, 0x80, 0x40, 0x00, 0x84 }, 7, 5 },
		{ { 0x85, 0x40, 0x80, 0x80, 0x00, 0x84 }, 6, 4 },
		{ { 0x85, 0x40, 0x40, 0x84 }, 4, 3 },
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		n = arm_start(buf);
		memcpy(buf + n, bad[i].b, bad[i].n);
		CHECK_EQ(decode(&c, buf, n + bad[i].n), 4);
		CHECK_PKT(2, CSD_PKT_ERROR, 12, bad[i].err_size);
		CHECK(pk[2].error != NULL);
		CHECK_EQ(pk[3].type, CSD_PKT_NOSYNC);
	}
}

/* ---- Waypoint update: 0x72 then address bytes as in a branch; a full
 * address may be followed by an information byte with AltIS in bit 6. ---- */
static void test_waypoint(void)
{
	uint8_t buf[64];
	struct csd_trace_config c = cfg_of(0, 0, ETMIDR_PFT11);
	size_t n = arm_start(buf);
	static const uint8_t w[] = {
		0x72, 0x2f,                               /* A[7:2] = 0x17: 0x8000055C */
		0x72, 0xA1, 0x0A,                         /* A[13:2]: 0x40 | 0xA00 -> 0x80000A40 */
		0x72, 0xF9, 0xAC, 0xD1, 0x91, 0x51, 0x40, /* Thumb 0x12345678 + AltIS: ThumbEE */
		0x72, 0x85, 0x01,                         /* A[12:1] = 2 | 1 << 7 */
	};
	memcpy(buf + n, w, sizeof(w));
	n += sizeof(w);
	CHECK_EQ(decode(&c, buf, n), 6);
	CHECK_PKT(2, CSD_PKT_WAYPOINT, 12, 2);
	CHECK_EQ(pk[2].addr, 0x8000055C);
	CHECK_EQ(pk[2].addr_bytes, 1);
	CHECK_PKT(3, CSD_PKT_WAYPOINT, 14, 3);
	CHECK_EQ(pk[3].addr, 0x80000A40);
	CHECK_EQ(pk[3].addr_bytes, 2);
	CHECK_PKT(4, CSD_PKT_WAYPOINT, 17, 7);
	CHECK_EQ(pk[4].addr, 0x12345678);
	CHECK_EQ(pk[4].isa, CSD_ISA_THUMBEE);
	CHECK(pk[4].flags & CSD_PKTF_ALTISA);
	CHECK_PKT(5, CSD_PKT_WAYPOINT, 24, 3);
	CHECK_EQ(pk[5].addr, 0x12344084);
	CHECK_EQ(pk[5].isa, CSD_ISA_THUMBEE);
	/* Bit 6 of the last byte of a short waypoint address is not defined. */
	static const uint8_t bad[] = { 0x72, 0x85, 0x41, 0x84 };
	n = arm_start(buf);
	memcpy(buf + n, bad, sizeof(bad));
	CHECK_EQ(decode(&c, buf, n + sizeof(bad)), 4);
	CHECK_PKT(2, CSD_PKT_ERROR, 12, 3);
}

/* ---- One-byte and fixed-size packets, context ID, VMID, runs. ---- */
static void test_small_packets(void)
{
	uint8_t buf[64];
	struct csd_trace_config c = cfg_of(ETMCR_CID(2), 0, ETMIDR_PFT11);
	static const uint8_t s[] = { 0x0C, 0x76, 0x66, 0x66, 0x66, 0x3C, 0x09, 0x6E, 0x34, 0x12, 0x66,
				     0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x84 };
	size_t n = with_async(buf, s, sizeof(s));
	CHECK_EQ(decode(&c, buf, n), 9);
	CHECK_PKT(1, CSD_PKT_TRIGGER, 6, 1);
	CHECK_PKT(2, CSD_PKT_EXCEPTION_RETURN, 7, 1);
	CHECK_PKT(3, CSD_PKT_IGNORE, 8, 3);
	CHECK_PKT(4, CSD_PKT_VMID, 11, 2);
	CHECK_EQ(pk[4].vmid, 9);
	CHECK_PKT(5, CSD_PKT_CONTEXT_ID, 13, 3);
	CHECK_EQ(pk[5].context_id, 0x1234);
	CHECK(pk[5].flags & CSD_PKTF_CONTEXT_ID);
	CHECK_PKT(6, CSD_PKT_IGNORE, 16, 1);
	CHECK_PKT(7, CSD_PKT_ASYNC, 17, 8); /* seven zeros and 0x80 */
	CHECK_EQ(pk[7].raw[7], 0x80);
	CHECK_PKT(8, CSD_PKT_ATOM, 25, 1);

	/* 1- and 4-byte context IDs; none configured is an error. */
	static const uint8_t c1[] = { 0x6E, 0xAB, 0x6E, 0xEF, 0xBE, 0xAD, 0xDE };
	struct csd_trace_config k1 = cfg_of(ETMCR_CID(1), 0, ETMIDR_PFT11);
	n = with_async(buf, c1, 2);
	CHECK_EQ(decode(&k1, buf, n), 2);
	CHECK_EQ(pk[1].context_id, 0xAB);
	struct csd_trace_config k4 = cfg_of(ETMCR_CID(3), 0, ETMIDR_PFT11);
	n = with_async(buf, c1 + 2, 5);
	CHECK_EQ(decode(&k4, buf, n), 2);
	CHECK_PKT(1, CSD_PKT_CONTEXT_ID, 6, 5);
	CHECK_EQ(pk[1].context_id, 0xDEADBEEF);
	struct csd_trace_config k0 = cfg_of(0, 0, ETMIDR_PFT11);
	n = with_async(buf, c1, 2);
	CHECK_EQ(decode(&k0, buf, n), 3);
	CHECK_PKT(1, CSD_PKT_ERROR, 6, 1);

	/* Bad A-sync runs: four zeros then 0x80; zeros then other bytes. */
	static const uint8_t z1[] = { 0x00, 0x00, 0x00, 0x00, 0x80, 0x84 };
	n = with_async(buf, z1, sizeof(z1));
	CHECK_EQ(decode(&c, buf, n), 3);
	CHECK_PKT(1, CSD_PKT_ERROR, 6, 5);
	CHECK_PKT(2, CSD_PKT_NOSYNC, 11, 1);
	static const uint8_t z2[] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x84 };
	n = with_async(buf, z2, sizeof(z2));
	CHECK_EQ(decode(&c, buf, n), 3);
	CHECK_PKT(1, CSD_PKT_ERROR, 6, 6);
	CHECK_PKT(2, CSD_PKT_NOSYNC, 12, 1);
}

/* ---- Timestamps: 0x42 / 0x46 (R), 7 bits a byte with C in bit 7, the
 * ninth (64-bit) byte 8 bits or the seventh (48-bit) 6 bits; compressed
 * against the previous value; Gray coded unless ETMCCER[28] (PFT 1.1). ---- */
static void test_timestamps(void)
{
	uint8_t buf[64];
	/* TC2 bytes, 64-bit binary, cycle-accurate; OpenCSD lists
	 * 0x82F9D18BCC, then 0x82F9D18CC8 with 14 bits, cycles 0. */
	struct csd_trace_config ca = cfg_of(ETMCR_CA, ETMCCER_TS64_BIN, ETMIDR_PFT11);
	static const uint8_t t1[] = { 0x42, 0xcc, 0x97, 0xc6, 0xce, 0xaf, 0x90, 0x80, 0x80, 0x00, 0x00,
				      0x42, 0xc8, 0x19, 0x00,
				      0x46, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x5C, 0x01 };
	size_t n = with_async(buf, t1, sizeof(t1));
	CHECK_EQ(decode(&ca, buf, n), 4);
	CHECK_PKT(1, CSD_PKT_TIMESTAMP, 6, 11);
	CHECK_EQ(pk[1].timestamp, 0x82F9D18BCCull);
	CHECK_EQ(pk[1].ts_bits, 64);
	CHECK_EQ(pk[1].cycle_count, 0);
	CHECK(pk[1].flags & CSD_PKTF_CYCLE_COUNT);
	CHECK_PKT(2, CSD_PKT_TIMESTAMP, 17, 4);
	CHECK_EQ(pk[2].timestamp, 0x82F9D18CC8ull);
	CHECK_EQ(pk[2].ts_bits, 14);
	CHECK_PKT(3, CSD_PKT_TIMESTAMP, 21, 12);
	CHECK_EQ(pk[3].timestamp, ~0ull);
	CHECK_EQ(pk[3].raw[0] & 0x04, 0x04); /* R bit */
	CHECK_EQ(pk[3].cycle_count, 7 + 16); /* 0101 1100: 7, C; then 1 */

	/* 48-bit Gray (PFT 1.0): Gray 0b111 = binary 5; then low 7 bits Gray
	 * 0b100 over Gray 0b111 = binary 7; all 48 Gray bits set = binary
	 * with every odd bit set. */
	struct csd_trace_config g = cfg_of(0, 0, ETMIDR_PFT10);
	static const uint8_t t2[] = { 0x42, 0x07, 0x42, 0x04, 0x42, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF };
	n = with_async(buf, t2, sizeof(t2));
	CHECK_EQ(decode(&g, buf, n), 4);
	CHECK_EQ(pk[1].timestamp, 5);
	CHECK_EQ(pk[1].ts_bits, 7);
	CHECK_EQ(pk[2].timestamp, 7);
	CHECK_PKT(3, CSD_PKT_TIMESTAMP, 10, 8);
	CHECK_EQ(pk[3].timestamp, 0xAAAAAAAAAAAAull);
	CHECK_EQ(pk[3].ts_bits, 48);
	/* PFT 1.1 with ETMCCER[29:28] = 0: also 48-bit Gray. */
	struct csd_trace_config g11 = cfg_of(0, 0, ETMIDR_PFT11);
	CHECK_EQ(decode(&g11, buf, n), 4);
	CHECK_EQ(pk[3].timestamp, 0xAAAAAAAAAAAAull);
	/* PFT 1.0 ignores ETMCCER[29:28]. */
	struct csd_trace_config g10 = cfg_of(0, ETMCCER_TS64_BIN, ETMIDR_PFT10);
	CHECK_EQ(decode(&g10, buf, n), 4);
	CHECK_EQ(pk[1].timestamp, 5);
}

/* ---- Reserved headers: every b0xxxxxx0 value not in table 4.1. ---- */
static void test_reserved_headers(void)
{
	static const uint8_t defined[] = { 0x00, 0x08, 0x0C, 0x3C, 0x42, 0x46, 0x66, 0x6E, 0x72, 0x76 };
	struct csd_trace_config c = cfg_of(ETMCR_CID(1), 0, ETMIDR_PFT11);
	unsigned reserved = 0;
	for (unsigned h = 0; h < 0x80; h += 2) {
		if (memchr(defined, (int)h, sizeof(defined)))
			continue;
		uint8_t buf[16];
		uint8_t body[] = { (uint8_t)h, 0x84, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x84 };
		size_t n = with_async(buf, body, sizeof(body));
		CHECK_EQ(decode(&c, buf, n), 5);
		CHECK_PKT(1, CSD_PKT_ERROR, 6, 1);
		CHECK_STR(pk[1].error, "reserved packet header");
		CHECK_EQ(pk[1].raw[0], h);
		/* resynchronised at the next A-sync */
		CHECK_PKT(2, CSD_PKT_NOSYNC, 7, 1);
		CHECK_PKT(3, CSD_PKT_ASYNC, 8, 6);
		CHECK_PKT(4, CSD_PKT_ATOM, 14, 1);
		reserved++;
	}
	CHECK_EQ(reserved, 64 - 10);
}

/* ---- Packets cut by the end of the stream: one truncated packet, the
 * last (decode() requires CSD_EEOS after it), naming what was cut. ---- */
static void test_truncation(void)
{
	static const struct {
		uint32_t etmcr;
		uint8_t b[16];
		size_t n;
		const char *what;
	} t[] = {
		{ 0, { 0x08, 0x00, 0x10, 0x00, 0x00 }, 5, "I-sync" },
		{ ETMCR_CA, { 0x08, 0x00, 0x10, 0x00, 0x00, 0x21, 0xC0 }, 7, "I-sync" },
		{ ETMCR_CID(3), { 0x08, 0x00, 0x10, 0x00, 0x00, 0x21, 0x01, 0x02, 0x03 }, 9, "I-sync" },
		{ 0, { 0x81, 0x80, 0x80 }, 3, "branch address" },
		{ 0, { 0x81, 0x80, 0x80, 0x80, 0x48, 0x82 }, 6, "branch address" },
		{ ETMCR_CA, { 0xA3, 0x0B }, 2, "branch address" },
		{ ETMCR_CA, { 0xC0, 0x80 }, 2, "atom" },
		{ 0, { 0x72 }, 1, "waypoint update" },
		{ 0, { 0x72, 0x81, 0x80, 0x80, 0x80, 0x50 }, 6, "waypoint update" },
		{ ETMCR_CID(2), { 0x6E, 0x01 }, 2, "context ID" },
		{ 0, { 0x3C }, 1, "VMID" },
		{ 0, { 0x42, 0x80, 0x80 }, 3, "timestamp" },
		{ ETMCR_CA, { 0x42, 0x01 }, 2, "timestamp" },
		{ 0, { 0x00, 0x00, 0x00 }, 3, "A-sync" },
		{ 0, { 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00 }, 7, "A-sync" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		uint8_t buf[32];
		char want[96];
		struct csd_trace_config c = cfg_of(t[i].etmcr, 0, ETMIDR_PFT11);
		size_t n = with_async(buf, t[i].b, t[i].n);
		CHECK_EQ(decode(&c, buf, n), 2);
		CHECK_PKT(1, CSD_PKT_TRUNCATED, 6, t[i].n);
		snprintf(want, sizeof(want), "truncated %s packet at end of stream", t[i].what);
		CHECK_STR(pk[1].error ? pk[1].error : "(none)", want);
		CHECK_EQ(pk[1].raw[0], t[i].b[0]);
	}
	/* Bytes that are bad whatever follows stay errors at the end too:
	 * a reserved header, five 0x00 bytes and a byte that is not 0x80. */
	static const uint8_t reserved[] = { 0x10 }, zeros[] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x12 };
	{
		uint8_t buf[32];
		struct csd_trace_config c = cfg_of(0, 0, ETMIDR_PFT11);
		CHECK_EQ(decode(&c, buf, with_async(buf, reserved, sizeof(reserved))), 2);
		CHECK_PKT(1, CSD_PKT_ERROR, 6, 1);
		CHECK(decode(&c, buf, with_async(buf, zeros, sizeof(zeros))) >= 2);
		CHECK_PKT(1, CSD_PKT_ERROR, 6, 5);
		for (size_t i = 0; i < npk; i++)
			CHECK(pk[i].type != CSD_PKT_TRUNCATED);
	}
	/* An ignore run at the end is complete, not truncated. */
	static const uint8_t ig[] = { 0x66, 0x66 };
	uint8_t buf[16];
	struct csd_trace_config c = cfg_of(0, 0, ETMIDR_PFT11);
	size_t n = with_async(buf, ig, sizeof(ig));
	CHECK_EQ(decode(&c, buf, n), 2);
	CHECK_PKT(1, CSD_PKT_IGNORE, 6, 2);
}

/* A stream using every packet kind (cycle-accurate, 2-byte context IDs,
 * 64-bit binary timestamps), garbage first and a bad header in the middle. */
static const uint8_t mixed[] = {
	0x12, 0x00, 0x34, 0x56, 0x78, 0x9A,                         /* garbage */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x80,                         /* A-sync */
	0x08, 0xdf, 0x8d, 0x01, 0xc0, 0x21, 0xcc, 0x03, 0x34, 0x12, /* I-sync */
	0x92, 0xcc, 0x02, 0x84,                                     /* atoms */
	0xa3, 0x0b, 0x68, 0x17,                                     /* branch */
	0x81, 0x89, 0xc1, 0x01, 0x44, 0x1e,                         /* branch */
	0x85, 0x40, 0x9D, 0x24, 0xC4, 0x80, 0x80, 0x80, 0x01,       /* branch + exception, 5-byte count */
	0x72, 0x8f, 0xea, 0xde, 0xdb, 0x0d,                         /* waypoint */
	0x42, 0xcc, 0x97, 0xc6, 0xce, 0xaf, 0x90, 0x80, 0x80, 0x00, 0x00, /* timestamp */
	0x66, 0x66, 0x0C, 0x76, 0x3C, 0x05, 0x6E, 0xCD, 0xAB,       /* ignore, trigger, eret, VMID, CID */
	0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,                   /* A-sync */
	0x10, 0x55, 0x00, 0x00, 0x00, 0x00, 0x00, 0x80,             /* reserved header, junk, A-sync */
	0x08, 0x00, 0x10, 0x00, 0x00, 0x01, 0x00, 0x00, 0x86,       /* periodic I-sync, atom */
	0x42, 0x01,                                                 /* truncated at the end */
};

static int same_packet(const struct csd_packet *a, const struct csd_packet *b)
{
	return a->type == b->type && a->offset == b->offset && a->size == b->size &&
	       memcmp(a->raw, b->raw, a->size < CSD_PKT_RAW_MAX ? a->size : CSD_PKT_RAW_MAX) == 0 &&
	       a->flags == b->flags && a->addr == b->addr && a->addr_bytes == b->addr_bytes && a->isa == b->isa &&
	       a->reason == b->reason && a->vmid == b->vmid && a->exception == b->exception &&
	       a->ts_bits == b->ts_bits && a->cycle_count == b->cycle_count && a->context_id == b->context_id &&
	       a->timestamp == b->timestamp && a->atoms.en == b->atoms.en && a->atoms.num == b->atoms.num &&
	       (a->error == b->error || (a->error && b->error && strcmp(a->error, b->error) == 0));
}

static void test_mixed_and_splits(void)
{
	struct csd_trace_config c = cfg_of(ETMCR_CA | ETMCR_CID(2), ETMCCER_TS64_BIN, ETMIDR_PFT11);
	const size_t n = sizeof(mixed);
	static const uint32_t types[] = {
		CSD_PKT_NOSYNC, CSD_PKT_ASYNC, CSD_PKT_ISYNC, CSD_PKT_ATOM, CSD_PKT_ATOM, CSD_PKT_ATOM,
		CSD_PKT_BRANCH, CSD_PKT_BRANCH, CSD_PKT_BRANCH, CSD_PKT_WAYPOINT, CSD_PKT_TIMESTAMP,
		CSD_PKT_IGNORE, CSD_PKT_TRIGGER, CSD_PKT_EXCEPTION_RETURN, CSD_PKT_VMID, CSD_PKT_CONTEXT_ID,
		CSD_PKT_ASYNC, CSD_PKT_ERROR, CSD_PKT_NOSYNC, CSD_PKT_ASYNC, CSD_PKT_ISYNC, CSD_PKT_ATOM,
		CSD_PKT_TRUNCATED,
	};
	static const uint32_t offs[] = { 0, 6, 12, 22, 23, 25, 26, 30, 36, 45, 51, 62, 64, 65, 66, 68, 71, 78, 79, 80,
					 86, 94, 95 };
	const size_t nt = sizeof(types) / sizeof(types[0]);
	CHECK_EQ(decode(&c, mixed, n), nt);
	for (size_t i = 0; i < nt && i < npk; i++) {
		CHECK_EQ(pk[i].type, types[i]);
		CHECK_EQ(pk[i].offset, BASE + offs[i]);
	}
	CHECK_EQ(pk[0].size, 6);
	CHECK_EQ(pk[8].exception, 78);
	CHECK_EQ(pk[8].cycle_count, 1 + (1u << 25)); /* C4: 1; then 0, 0, 0, 1 << 25 */
	CHECK_EQ(pk[9].addr, 0xB6EF6A1C);
	CHECK_EQ(pk[15].context_id, 0xABCD);
	CHECK_EQ(pk[18].size, 1);

	/* The same packets whatever the feed boundaries: one cut at every
	 * position, and one byte per feed. */
	static struct csd_packet ref[MAXP];
	size_t nref = npk;
	memcpy(ref, pk, sizeof(pk[0]) * nref);
	int all_same = 1;
	for (size_t cut = 1; cut < n; cut++) {
		size_t got = decode_cuts(&c, mixed, n, &cut, 1);
		if (got != nref) {
			all_same = 0;
			continue;
		}
		for (size_t i = 0; i < nref; i++)
			all_same &= same_packet(&ref[i], &pk[i]);
	}
	CHECK(all_same);
	size_t cuts[sizeof(mixed)];
	for (size_t i = 0; i + 1 < n; i++)
		cuts[i] = i + 1;
	CHECK_EQ(decode_cuts(&c, mixed, n, cuts, n - 1), nref);
	int bytewise_same = 1;
	for (size_t i = 0; i < nref && i < npk; i++)
		bytewise_same &= same_packet(&ref[i], &pk[i]);
	CHECK(bytewise_same);
}

/* Random bytes (with A-syncs, zero and ignore runs mixed in): whatever
 * they are, the packets cover every byte exactly once, in order, and do
 * not depend on how the bytes are split into feeds. */
static uint64_t rng = 0x243F6A8885A308D3ull;

static uint32_t rnd(void)
{
	rng = rng * 6364136223846793005ull + 1442695040888963407ull;
	return (uint32_t)(rng >> 33);
}

static void test_random_bytes(void)
{
	static const uint32_t etmcrs[] = { 0, ETMCR_CA, ETMCR_CA | ETMCR_CID(3), ETMCR_CID(1) };
	static struct csd_packet ref[MAXP];
	uint8_t d[400];
	int tiled = 1, same = 1;
	for (unsigned iter = 0; iter < 400; iter++) {
		struct csd_trace_config c = cfg_of(etmcrs[iter % 4], iter & 4 ? ETMCCER_TS64_BIN : 0, ETMIDR_PFT11);
		size_t n = 1 + rnd() % sizeof(d);
		for (size_t i = 0; i < n; i++) {
			unsigned k = rnd() % 16;
			if (k == 0 && i + 6 <= n) {
				memcpy(d + i, ASYNC, 6);
				i += 5;
			} else {
				d[i] = k == 1 ? 0x00 : k == 2 ? 0x66 : (uint8_t)rnd();
			}
		}
		size_t nref = decode(&c, d, n);
		memcpy(ref, pk, nref * sizeof(pk[0]));
		uint64_t next = BASE;
		for (size_t i = 0; i < nref; i++) {
			tiled &= ref[i].offset == next && ref[i].size > 0;
			next = ref[i].offset + ref[i].size;
		}
		tiled &= next == BASE + n;
		size_t cuts[3] = { rnd() % n, rnd() % n, rnd() % n };
		for (int a = 0; a < 3; a++)
			for (int b2 = a + 1; b2 < 3; b2++)
				if (cuts[b2] < cuts[a]) {
					size_t t = cuts[a];
					cuts[a] = cuts[b2];
					cuts[b2] = t;
				}
		size_t got = decode_cuts(&c, d, n, cuts, 3);
		same &= got == nref;
		for (size_t i = 0; i < got && i < nref; i++)
			same &= same_packet(&ref[i], &pk[i]);
		/* end of stream declared before anything is read */
		csd_ptm_pkt_decoder *dec = csd_ptm_pkt_new(&c);
		struct csd_bytes b = { .data = d, .size = n, .base = BASE };
		npk = 0;
		CHECK_EQ(csd_ptm_pkt_feed(dec, &b), 0);
		CHECK_EQ(csd_ptm_pkt_finish(dec), 0);
		CHECK_EQ(drain(dec), CSD_EEOS);
		csd_ptm_pkt_free(dec);
		same &= npk == nref;
		for (size_t i = 0; i < npk && i < nref; i++)
			same &= same_packet(&ref[i], &pk[i]);
	}
	CHECK(tiled);
	CHECK(same);
}

/* Offsets from a csd_bytes offsets[] table, and reset. */
static void test_offsets_and_reset(void)
{
	struct csd_trace_config c = cfg_of(0, 0, ETMIDR_PFT11);
	csd_ptm_pkt_decoder *dec = csd_ptm_pkt_new(&c);
	static const uint8_t d[] = { 0x00, 0x00, 0x00, 0x00, 0x00, 0x80, 0x81, 0x80 };
	static const uint64_t o[] = { 10, 11, 12, 13, 14, 15, 17, 19 };
	struct csd_bytes b = { .data = d, .size = sizeof(d), .offsets = o };
	struct csd_packet p;
	CHECK_EQ(csd_ptm_pkt_feed(dec, &b), 0);
	CHECK_EQ(csd_ptm_pkt_feed(dec, &b), CSD_EINVAL); /* previous input unread */
	CHECK_EQ(csd_ptm_pkt_next(dec, &p), 0);
	CHECK_EQ(p.type, CSD_PKT_ASYNC);
	CHECK_EQ(p.offset, 10);
	CHECK_EQ(csd_ptm_pkt_next(dec, &p), CSD_EAGAIN);
	static const uint8_t d2[] = { 0x80, 0x00, 0x08 };
	struct csd_bytes b2 = { .data = d2, .size = sizeof(d2), .base = 40 };
	CHECK_EQ(csd_ptm_pkt_feed(dec, &b2), 0);
	CHECK_EQ(csd_ptm_pkt_next(dec, &p), 0);
	CHECK_EQ(p.type, CSD_PKT_BRANCH);
	CHECK_EQ(p.offset, 17);
	CHECK_EQ(p.size, 4);
	CHECK_EQ(csd_ptm_pkt_next(dec, &p), CSD_EAGAIN); /* 0x08 waits */
	CHECK_EQ(csd_ptm_pkt_reset(dec), 0);
	static const uint8_t d3[] = { 0x84 };
	struct csd_bytes b3 = { .data = d3, .size = 1, .base = 50 };
	CHECK_EQ(csd_ptm_pkt_feed(dec, &b3), 0);
	CHECK_EQ(csd_ptm_pkt_finish(dec), 0);
	CHECK_EQ(csd_ptm_pkt_next(dec, &p), 0); /* unsynchronised again */
	CHECK_EQ(p.type, CSD_PKT_NOSYNC);
	CHECK_EQ(p.offset, 50);
	CHECK_EQ(csd_ptm_pkt_next(dec, &p), CSD_EEOS);
	csd_ptm_pkt_free(dec);

	/* Argument checks. */
	CHECK(csd_ptm_pkt_new(NULL) == NULL);
	struct csd_trace_config etm = cfg_of(0, 0, 0);
	etm.protocol = CSD_PROTO_ETM3;
	CHECK(csd_ptm_pkt_new(&etm) == NULL);
	struct csd_trace_config small = cfg_of(ETMCR_CA, 0, 0);
	small.size = offsetof(struct csd_trace_config, etmcr); /* older struct: no registers */
	dec = csd_ptm_pkt_new(&small);
	CHECK(dec != NULL);
	CHECK_EQ(csd_ptm_pkt_next(NULL, &p), CSD_EINVAL);
	CHECK_EQ(csd_ptm_pkt_next(dec, NULL), CSD_EINVAL);
	CHECK_EQ(csd_ptm_pkt_feed(dec, NULL), CSD_EINVAL);
	CHECK_EQ(csd_ptm_pkt_finish(NULL), CSD_EINVAL);
	CHECK_EQ(csd_ptm_pkt_reset(NULL), CSD_EINVAL);
	csd_ptm_pkt_free(dec);
	csd_ptm_pkt_free(NULL);
}

/*
 * trace_cov_a15/PTM_0_2.bin: raw PFT 1.1 bytes, ETMCR = 0x20000400 (return
 * stack on, not cycle-accurate, no context ID). The expected packets come
 * from the program in mem_Cortex-A15_0_1_RO_CODE.bin (at 0x80000278):
 *   0x80000558 bl 0x80000504  -> E; the core then halts (debug) and the
 *   PTM reports an exception branch to 0 with exception 1 (debug halt).
 *   Restart at 0x80000504 (I-sync, debug exit). The function calls
 *   f(r0, r1, r2) at 0x800004d8 four times with (0,0,1), (1,0,1),
 *   (0,1,0), (0,1,1); f does  cmp r0,#0; bne; cmp r1,#0; beq; cmp r2,#0;
 *   beq; ...; pop {r4,pc}. Waypoints per call (bl, bne, beq, [beq], pop
 *   returned through the return stack as an E atom):
 *     (0,0,1): E N E E      (1,0,1): E E N E
 *     (0,1,0): E N N E E    (0,1,1): E N N N E
 *   18 atoms: E N E E E | E N E E N | E N N N E ... packed 5,5,5,3.
 *   pop {pc} at 0x80000548 returns to 0x8000055C, which the empty return
 *   stack cannot supply: a branch address packet; then the halt again.
 */
static void test_trace_cov_a15(void)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/traces/trace_cov_a15/PTM_0_2.bin", check_shared_dir());
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	uint8_t d[256];
	size_t n = fread(d, 1, sizeof(d), f);
	fclose(f);
	CHECK_EQ(n, 36);
	struct csd_trace_config c = cfg_of(0x20000400, 0x34C01AC2, 0x411CF312);
	CHECK_EQ(decode(&c, d, n), 11);
	CHECK_PKT(0, CSD_PKT_ASYNC, 0, 6);
	CHECK_PKT(1, CSD_PKT_ISYNC, 6, 6);
	CHECK_EQ(pk[1].addr, 0x80000558);
	CHECK_EQ(pk[1].isa, CSD_ISA_ARM);
	CHECK_EQ(pk[1].reason, CSD_REASON_DEBUG_EXIT);
	CHECK_PKT(2, CSD_PKT_ATOM, 12, 1);
	CHECK_EQ(pk[2].atoms.num, 1);
	CHECK_EQ(pk[2].atoms.en, 1);
	CHECK_PKT(3, CSD_PKT_BRANCH, 13, 6);
	CHECK_EQ(pk[3].addr, 0);
	CHECK(pk[3].flags & CSD_PKTF_EXCEPTION);
	CHECK_EQ(pk[3].exception, 1);
	CHECK_PKT(4, CSD_PKT_ISYNC, 19, 6);
	CHECK_EQ(pk[4].addr, 0x80000504);
	/* E N E E E | E N E E N | N E E E N | N N E, oldest first */
	static const char *atoms[4] = { "ENEEE", "ENEEN", "NEEEN", "NNE" };
	for (size_t a = 0; a < 4; a++) {
		CHECK_PKT(5 + a, CSD_PKT_ATOM, 25 + a, 1);
		size_t na = strlen(atoms[a]);
		CHECK_EQ(pk[5 + a].atoms.num, na);
		uint32_t en = 0;
		for (size_t i = 0; i < na; i++)
			en |= (uint32_t)(atoms[a][i] == 'E') << i;
		CHECK_EQ(pk[5 + a].atoms.en, en);
	}
	CHECK_PKT(9, CSD_PKT_BRANCH, 29, 1);
	CHECK_EQ(pk[9].addr, 0x8000055C);
	CHECK_PKT(10, CSD_PKT_BRANCH, 30, 6);
	CHECK_EQ(pk[10].exception, 1);
}

#ifdef CSDI_PTM_BRANCH_WORD
/* The branch address readers that take the packet a word at a time
 * (csdi_ptm_branch_short in the brief loop, csdi_ptm_branch_word there and
 * in the flow decoder) against the byte readers (csdi_ptm_address, then
 * csdi_ptm_cycle_count), over every branch header byte and second byte,
 * sixteen kinds of third byte (continuation, exception and count
 * continuation bits, payload) with fourth and fifth bytes from the same
 * set, in every instruction set, cycle-accurate or not: each accepts
 * exactly its forms and reads them alike. */
static void test_branch_word_readers(void)
{
	static const uint8_t more[] = { 0x00, 0x15, 0x2a, 0x3f, 0x40, 0x55, 0x6a, 0x7f,
					 0x80, 0x95, 0xaa, 0xbf, 0xc0, 0xd5, 0xea, 0xff };
	const uint32_t prev = 0x9abcdef4u;
	long short_taken = 0, word_taken = 0, bad = 0;
	for (unsigned isa = CSD_ISA_UNKNOWN; isa <= CSD_ISA_JAZELLE; isa++) {
		for (int ca = 0; ca <= 1; ca++) {
			for (unsigned b0 = 1; b0 < 256; b0 += 2) {
				for (unsigned b1 = 0; b1 < 256; b1++) {
					for (unsigned k2 = 0; k2 < sizeof(more); k2++) {
						const uint8_t p[8] = { (uint8_t)b0, (uint8_t)b1, more[k2],
								       more[(k2 * 7 + b1) % sizeof(more)],
								       more[(k2 * 5 + b0) % sizeof(more)], 0x08, 0x1c, 0x22 };
						uint64_t w;
						memcpy(&w, p, 8);
						/* The byte readers' view. */
						struct csdi_ptm_addr_field a;
						const char *err = NULL;
						const int k = csdi_ptm_address(p, 8, isa, prev, &a, &err);
						uint32_t cc = 0;
						int clen = 0;
						if (k > 0 && ca)
							clen = csdi_ptm_cycle_count(p + k, 8 - (size_t)k, &cc);
						const int plain = k > 0 && k < 5 && !a.info_follows;
						const int short_form = plain && k <= 2 && (!ca || clen == 1);
						const int word_form = plain && (!ca || clen == 1 || clen == 2);
						const size_t want_len = (size_t)k + (ca ? (size_t)clen : 0);

						uint32_t addr = 0, count = 0;
						unsigned ab = 0;
						size_t len = csdi_ptm_branch_short((uint32_t)w, ca, prev, isa, &addr, &ab, &count);
						if (len != (short_form ? want_len : 0) ||
						    (len && (addr != a.addr || ab != (unsigned)k || (ca && count != cc))))
							bad++;
						short_taken += len != 0;
						addr = count = 0;
						ab = 0;
						len = csdi_ptm_branch_word(w, ca, prev, isa, &addr, &ab, &count);
						if (len != (word_form ? want_len : 0) ||
						    (len && (addr != a.addr || ab != (unsigned)k || (ca && count != cc))))
							bad++;
						word_taken += len != 0;
					}
				}
			}
		}
	}
	CHECK_EQ(bad, 0);
	/* Both took many packets (a reader that took none would agree with
	 * the byte readers on nothing). */
	CHECK(short_taken > 100000);
	CHECK(word_taken > short_taken);
}
#endif

int main(void)
{
	test_isync();
	test_atoms();
	test_branch();
	test_waypoint();
	test_small_packets();
	test_timestamps();
	test_reserved_headers();
	test_truncation();
	test_mixed_and_splits();
	test_random_bytes();
	test_offsets_and_reset();
	test_trace_cov_a15();
#ifdef CSDI_PTM_BRANCH_WORD
	test_branch_word_readers();
#endif
	return check_done("test_ptm_pkt");
}
