/* test_etm3_roundtrip.c - ETMv3 encoder -> decoder: every packet kind and
 * field corner comes back as it went in, under several configurations.
 * Where the encoding length is checked, the expected length comes from
 * the bit layouts of ARM IHI 0014Q chapter 7 (quoted in comments). */
#define _DEFAULT_SOURCE /* MAP_ANONYMOUS, MAP_NORESERVE */
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>

#include "check.h"
#include "csdec.h"

#define IDR(x) (0x41000200u | ((x) << 4))
#define IDR_ALT (1u << 20)
#define CR_DVAL (1u << 2)
#define CR_DADDR (1u << 3)
#define CR_CA (1u << 12)
#define CR_CID(n) ((uint32_t)(n) << 14)
#define CR_DONLY (1u << 20)
#define CCER_TS (1u << 22)
#define CCER_VIRT (1u << 26)
#define CCER_NAT (1u << 28)
#define CCER_TS64 (1u << 29)

#define MAXP 4096

struct rt {
	struct csd_trace_config cfg;
	csd_etm3_encoder *enc;
	uint8_t buf[MAXP * 24];
	size_t len;
	struct csd_packet want[MAXP];
	uint32_t wlen[MAXP];
	int n;
};

static struct rt R;

static struct csd_trace_config cfg_of(uint32_t etmcr, uint32_t etmccer, uint32_t etmidr, int profile)
{
	struct csd_trace_config c;
	memset(&c, 0, sizeof(c));
	c.size = sizeof(c);
	c.protocol = CSD_PROTO_ETM3;
	c.etmcr = etmcr;
	c.etmccer = etmccer;
	c.etmidr = etmidr;
	c.core_profile = (uint8_t)profile;
	return c;
}

static struct csd_packet pk(uint32_t type)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = type;
	return p;
}

/* Encode p and remember what should come back. Returns the encoder's code. */
static int add(const struct csd_packet *p)
{
	int r = csd_etm3_enc_packet(R.enc, p, R.buf + R.len, sizeof(R.buf) - R.len);
	CHECK(r > 0);
	if (r <= 0 || R.n >= MAXP)
		return r;
	R.want[R.n] = *p;
	R.wlen[R.n] = (uint32_t)r;
	R.n++;
	R.len += (size_t)r;
	return r;
}

static void begin(struct csd_trace_config c)
{
	csd_etm3_enc_free(R.enc);
	R.cfg = c;
	R.enc = csd_etm3_enc_new(&c);
	CHECK(R.enc != NULL);
	R.len = 0;
	R.n = 0;
	struct csd_packet a = pk(CSD_PKT_ASYNC);
	add(&a);
}

static unsigned cid_bytes(void)
{
	static const unsigned sz[4] = { 0, 1, 2, 4 };
	return sz[(R.cfg.etmcr >> 14) & 3];
}

/* Info bytes are written for these flags (see etm3_enc.c). */
#define INFO_FLAGS (CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY | CSD_PKTF_CANCEL | CSD_PKTF_RESUME)

static void compare(int k, const struct csd_packet *w, const struct csd_packet *g)
{
	CHECK_EQ(g->type, w->type);
	CHECK_EQ(g->size, R.wlen[k]);
	if (g->type != w->type)
		return;
	switch (w->type) {
	case CSD_PKT_ASYNC:
	case CSD_PKT_IGNORE:
		CHECK_EQ(g->size, w->size ? w->size : (w->type == CSD_PKT_ASYNC ? 6u : 1u));
		break;
	case CSD_PKT_ISYNC:
		CHECK_EQ(g->reason, w->reason);
		CHECK_EQ(g->flags & (CSD_PKTF_NS | CSD_PKTF_HYP | CSD_PKTF_CYCLE_COUNT | CSD_PKTF_LSIP),
			 w->flags & (CSD_PKTF_NS | CSD_PKTF_HYP | CSD_PKTF_CYCLE_COUNT | CSD_PKTF_LSIP));
		if (w->flags & CSD_PKTF_CYCLE_COUNT)
			CHECK_EQ(g->cycle_count, w->cycle_count);
		if (cid_bytes())
			CHECK_EQ(g->context_id, w->context_id);
		if (R.cfg.etmcr & CR_DONLY) {
			CHECK(g->flags & CSD_PKTF_DATA_ONLY);
			break;
		}
		CHECK_EQ(g->isa, w->isa);
		CHECK_EQ(g->addr, w->addr);
		if (w->flags & CSD_PKTF_LSIP) {
			CHECK_EQ(g->data_insn_addr, w->data_insn_addr);
			CHECK(g->addr_bytes >= w->addr_bytes);
		}
		break;
	case CSD_PKT_BRANCH: {
		CHECK_EQ(g->addr, w->addr);
		if (w->isa != CSD_ISA_UNKNOWN)
			CHECK_EQ(g->isa, w->isa);
		CHECK(g->addr_bytes >= w->addr_bytes);
		int info = (w->flags & INFO_FLAGS) != 0;
		CHECK_EQ(!!(g->flags & CSD_PKTF_EXCEPTION), info);
		if (info) {
			CHECK_EQ(g->exception, (w->flags & CSD_PKTF_EXCEPTION) ? w->exception : 0);
			CHECK_EQ(g->flags & (CSD_PKTF_CANCEL | CSD_PKTF_RESUME), w->flags & (CSD_PKTF_CANCEL | CSD_PKTF_RESUME));
			if (w->flags & CSD_PKTF_RESUME)
				CHECK_EQ(g->tag, w->tag);
		}
		if (w->flags & CSD_PKTF_SECURITY)
			CHECK_EQ(g->flags & (CSD_PKTF_NS | CSD_PKTF_HYP), w->flags & (CSD_PKTF_NS | CSD_PKTF_HYP));
		break;
	}
	case CSD_PKT_PHEADER:
		CHECK_EQ(g->atoms.format, w->atoms.format);
		CHECK_EQ(g->atoms.num, w->atoms.num);
		CHECK_EQ(g->atoms.en, w->atoms.en);
		CHECK_EQ(g->atoms.w, w->atoms.w);
		break;
	case CSD_PKT_CYCLE_COUNT:
		CHECK_EQ(g->cycle_count, w->cycle_count);
		break;
	case CSD_PKT_CONTEXT_ID:
		CHECK_EQ(g->context_id, w->context_id);
		break;
	case CSD_PKT_VMID:
		CHECK_EQ(g->vmid, w->vmid);
		break;
	case CSD_PKT_TIMESTAMP:
		CHECK_EQ(g->timestamp, w->timestamp);
		CHECK(g->ts_bits >= w->ts_bits);
		break;
	case CSD_PKT_NORMAL_DATA:
	case CSD_PKT_OOO_DATA:
	case CSD_PKT_OOO_PLACEHOLDER:
	case CSD_PKT_VALUE_NOT_TRACED:
		CHECK_EQ(g->flags & (CSD_PKTF_DATA_ADDR | CSD_PKTF_BIG_ENDIAN), w->flags & (CSD_PKTF_DATA_ADDR | CSD_PKTF_BIG_ENDIAN));
		if (w->flags & CSD_PKTF_DATA_ADDR) {
			CHECK_EQ(g->data_addr, w->data_addr);
			CHECK(g->addr_bytes >= w->addr_bytes);
		}
		if (w->flags & CSD_PKTF_DATA_VALUE) {
			CHECK_EQ(g->data_value, w->data_value);
			CHECK_EQ(g->data_size, w->data_size);
		}
		if (w->type == CSD_PKT_OOO_DATA || w->type == CSD_PKT_OOO_PLACEHOLDER)
			CHECK_EQ(g->tag, w->tag);
		break;
	}
}

/* Decode what was encoded (in one piece, and byte by byte) and compare. */
static void finish(void)
{
	for (int bytewise = 0; bytewise < 2; bytewise++) {
		csd_etm3_pkt_decoder *d = csd_etm3_pkt_new(&R.cfg);
		CHECK(d != NULL);
		if (!d)
			return;
		int k = 0;
		uint64_t off = 0;
		size_t step = bytewise ? 1 : R.len;
		for (size_t pos = 0; pos < R.len || pos == 0; pos += step) {
			size_t n = R.len - pos < step ? R.len - pos : step;
			struct csd_bytes in = { R.buf + pos, n, NULL, pos, 0 };
			CHECK_EQ(csd_etm3_pkt_feed(d, &in), CSD_OK);
			if (pos + n >= R.len)
				csd_etm3_pkt_finish(d);
			struct csd_packet g;
			while (csd_etm3_pkt_next(d, &g) == CSD_OK) {
				CHECK(k < R.n);
				if (k >= R.n)
					break;
				CHECK_EQ(g.offset, off);
				compare(k, &R.want[k], &g);
				off += R.wlen[k];
				k++;
			}
			if (R.len == 0)
				break;
		}
		CHECK_EQ(k, R.n);
		csd_etm3_pkt_free(d);
	}
}

/* ------------------------------------------------------------------------ */

static struct csd_packet isync(int isa, uint32_t addr)
{
	struct csd_packet p = pk(CSD_PKT_ISYNC);
	p.isa = (uint8_t)isa;
	p.addr = addr;
	p.reason = CSD_REASON_TRACE_ON;
	return p;
}

static struct csd_packet branch(int isa, uint32_t addr)
{
	struct csd_packet p = pk(CSD_PKT_BRANCH);
	p.isa = (uint8_t)isa;
	p.addr = addr;
	return p;
}

/* Address bytes needed when the highest changed address bit is `bit`:
 * byte 1 carries 6 bits, bytes 2-4 carry 7 (6 for a last byte in the
 * alternative encoding), byte 5 the rest; ARM addresses start at A[2],
 * Thumb at A[1], Jazelle at A[0] (IHI 0014Q 7.3.5). */
static unsigned bytes_for_bit(int alt, int isa, unsigned bit)
{
	unsigned shift = isa == CSD_ISA_ARM ? 2 : isa == CSD_ISA_JAZELLE ? 0 : 1;
	unsigned covered[5] = { 6, alt ? 12u : 13u, alt ? 19u : 20u, alt ? 26u : 27u, 32 };
	for (unsigned k = 0; k < 5; k++)
		if (bit < covered[k] + shift)
			return k + 1;
	return 5;
}

/* Every compression length for every instruction set, both encodings. */
static void test_branch_lengths(void)
{
	static const int isas[] = { CSD_ISA_ARM, CSD_ISA_THUMB, CSD_ISA_THUMBEE, CSD_ISA_JAZELLE };
	for (int alt = 0; alt < 2; alt++) {
		for (size_t i = 0; i < 4; i++) {
			int isa = isas[i];
			unsigned shift = isa == CSD_ISA_ARM ? 2 : isa == CSD_ISA_JAZELLE ? 0 : 1;
			begin(cfg_of(0, 0, IDR(alt ? 4 : 5) | (alt ? IDR_ALT : 0), CSD_CORE_A));
			struct csd_packet s = isync(isa, 0x40000000);
			add(&s);
			uint32_t base = 0x40000000;
			for (unsigned bit = shift; bit < 32; bit++) {
				struct csd_packet b = branch(isa, base ^ (1u << bit));
				int len = add(&b);
				CHECK_EQ(len, (int)bytes_for_bit(alt, isa, bit));
				base = b.addr;
			}
			/* forced longer forms */
			for (unsigned k = 1; k <= 5; k++) {
				struct csd_packet b = branch(isa, base);
				b.addr_bytes = (uint8_t)k;
				CHECK_EQ(add(&b), (int)k);
			}
			finish();
		}
	}
}

/* Instruction set changes need the 5-byte form (byte 5 states ARM /
 * Thumb / Jazelle); Thumb <-> ThumbEE only needs the AltISA bit of an
 * exception information byte. */
static void test_branch_isa_changes(void)
{
	for (int alt = 0; alt < 2; alt++) {
		begin(cfg_of(0, 0, IDR(5) | (alt ? IDR_ALT : 0), CSD_CORE_A));
		struct csd_packet s = isync(CSD_ISA_ARM, 0x1000);
		add(&s);
		struct csd_packet b = branch(CSD_ISA_THUMB, 0x1002);
		CHECK_EQ(add(&b), 5);
		b = branch(CSD_ISA_JAZELLE, 0x1003);
		CHECK_EQ(add(&b), 5);
		b = branch(CSD_ISA_ARM, 0x1004);
		CHECK_EQ(add(&b), 5);
		b = branch(CSD_ISA_THUMBEE, 0x1006);
		b.flags = CSD_PKTF_EXCEPTION;   /* AltISA travels in the exception byte */
		CHECK_EQ(add(&b), 6);
		b = branch(CSD_ISA_THUMBEE, 0x1008);
		CHECK_EQ(add(&b), 1);           /* AltISA is kept */
		b = branch(CSD_ISA_THUMB, 0x100A);
		b.flags = CSD_PKTF_EXCEPTION;
		CHECK_EQ(add(&b), alt ? 3 : 6);
		b = branch(CSD_ISA_UNKNOWN, 0x100C); /* "same as before" */
		CHECK_EQ(add(&b), 1);
		finish();
	}
}

/* Exception information: byte 0 (exception [3:0], cancel, NS, AltISA),
 * byte 1 (exception [8:4], Hyp), byte 2 (resume): every form, every
 * exception number. */
static void test_branch_exceptions(void)
{
	static const struct {
		uint32_t idr, ccer;
		int profile;
	} cfgs[] = {
		{ IDR(5), CCER_VIRT, CSD_CORE_A },
		{ IDR(5) | IDR_ALT, CCER_VIRT, CSD_CORE_A },
		{ IDR(4) | IDR_ALT, 0, CSD_CORE_M },
		{ IDR(3), 0, CSD_CORE_R },
	};
	for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		const int alt = (cfgs[c].idr & IDR_ALT) != 0, virt = cfgs[c].ccer != 0;
		const int isa = cfgs[c].profile == CSD_CORE_M ? CSD_ISA_THUMB : CSD_ISA_ARM;
		begin(cfg_of(0, cfgs[c].ccer, cfgs[c].idr, cfgs[c].profile));
		struct csd_packet s = isync(isa, 0x2000);
		add(&s);
		for (unsigned e = 0; e < 512; e++) {
			struct csd_packet b = branch(isa, 0x2000 + 4 * (e & 0xF));
			b.flags = CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY;
			b.exception = (uint16_t)e;
			if (e & 0x10)
				b.flags |= CSD_PKTF_CANCEL;
			if (e & 0x20)
				b.flags |= CSD_PKTF_NS;
			if (e % 3 == 0) {
				b.flags |= CSD_PKTF_RESUME;
				b.tag = (uint8_t)(e % 16);
			}
			int len = add(&b);
			/* address bytes (>= 2, or 5 in the original encoding)
			 * + byte 0 + byte 1 if exception > 15 + byte 2 if resume */
			int addr = alt ? 2 : 5;
			CHECK_EQ(len, addr + 1 + (e > 15) + (e % 3 == 0));
		}
		if (virt) {
			/* Hyp needs byte 1; byte 1 without an exception above 15 */
			struct csd_packet b = branch(isa, 0x2100);
			b.flags = CSD_PKTF_SECURITY | CSD_PKTF_HYP | CSD_PKTF_NS;
			CHECK_EQ(add(&b), (alt ? 2 : 5) + 2);
			b.flags = CSD_PKTF_SECURITY;   /* leaving Hyp: byte 1 again */
			CHECK_EQ(add(&b), (alt ? 2 : 5) + 2);
		}
		/* a branch without exception bytes keeps the security state */
		struct csd_packet b = branch(isa, 0x2200);
		add(&b);
		finish();
	}
}

/* I-sync in every form: cycle count, context ID 0/1/2/4, LSiP with every
 * current-address length, data-only, each instruction set, reason, NS/Hyp. */
static void test_isync_forms(void)
{
	static const int isas[] = { CSD_ISA_ARM, CSD_ISA_THUMB, CSD_ISA_THUMBEE, CSD_ISA_JAZELLE };
	for (unsigned cid = 0; cid < 4; cid++) {
		begin(cfg_of(CR_CID(cid) | CR_CA, CCER_VIRT, IDR(5), CSD_CORE_A));
		for (size_t i = 0; i < 4; i++) {
			for (unsigned reason = 0; reason < 4; reason++) {
				struct csd_packet s = isync(isas[i], isas[i] == CSD_ISA_ARM ? 0x80000000u : 0x80000002u);
				if (isas[i] == CSD_ISA_JAZELLE)
					s.addr = 0x80000003;
				s.reason = (uint8_t)reason;
				s.context_id = 0xA1B2C3D4u & (cid == 3 ? 0xFFFFFFFFu : cid == 2 ? 0xFFFFu : cid == 1 ? 0xFFu : 0);
				s.flags = (reason & 1 ? CSD_PKTF_NS : 0) | (reason & 2 ? CSD_PKTF_HYP : 0);
				add(&s);
				s.flags |= CSD_PKTF_CYCLE_COUNT;
				s.cycle_count = reason * 1000u + 1;
				add(&s);
				/* LSiP: current address compressed against the data
				 * instruction address, every length */
				for (unsigned k = 1; k <= 5; k++) {
					struct csd_packet l = s;
					l.flags |= CSD_PKTF_LSIP;
					l.data_insn_addr = s.addr;
					l.addr = s.addr + 4;
					l.addr_bytes = (uint8_t)k;
					/* header, cycle count (1 byte up to 127, else 2),
					 * context ID, info, 4-byte data instruction
					 * address, k current address bytes (+4 changes
					 * only A[2], so k is never too small) */
					unsigned ccb = l.cycle_count > 127 ? 2 : 1;
					CHECK_EQ(add(&l), (int)(1 + ccb + cid_bytes() + 1 + 4 + k));
				}
			}
		}
		finish();
	}
	/* data-only mode */
	for (unsigned cid = 0; cid < 4; cid++) {
		begin(cfg_of(CR_CID(cid) | CR_DONLY | CR_DVAL, CCER_VIRT, IDR(5), CSD_CORE_A));
		struct csd_packet s = pk(CSD_PKT_ISYNC);
		s.flags = CSD_PKTF_NS;
		s.reason = CSD_REASON_OVERFLOW;
		s.context_id = cid ? 0x7F : 0;
		CHECK_EQ(add(&s), (int)(2 + cid_bytes()));
		finish();
	}
}

/* Every valid P-header of tables 7.2 and 7.3, through the encoder: of all
 * atom combinations tried, exactly as many encode as the tables have
 * valid headers, and each decodes back to the same atoms. */
static int try_add(const struct csd_packet *p)
{
	int r = csd_etm3_enc_packet(R.enc, p, R.buf + R.len, sizeof(R.buf) - R.len);
	if (r > 0 && R.n < MAXP) {
		R.want[R.n] = *p;
		R.wlen[R.n] = (uint32_t)r;
		R.n++;
		R.len += (size_t)r;
	}
	return r;
}

static void test_pheaders(void)
{
	static const struct {
		uint32_t cr, idr;
		int valid;
	} modes[] = {
		{ 0, IDR(5), 36 }, { CR_CA, IDR(5), 37 }, { CR_CA, IDR(2), 35 }, { CR_CA, IDR(0), 36 },
	};
	for (size_t m = 0; m < sizeof(modes) / sizeof(modes[0]); m++) {
		begin(cfg_of(modes[m].cr, 0, modes[m].idr, CSD_CORE_A));
		int ok = 0;
		for (unsigned fmt = 0; fmt <= 4; fmt++)
			for (unsigned num = 0; num <= 16; num++)
				for (unsigned w = 0; w <= 8; w++) {
					/* every E/N pattern of up to 2 atoms; for longer
					 * runs the "all E" and "E...E then N" shapes */
					uint32_t pats[4];
					unsigned np = 0;
					if (num <= 2) {
						for (uint32_t e = 0; e < (1u << num); e++)
							pats[np++] = e;
					} else {
						pats[np++] = (1u << num) - 1;
						pats[np++] = (1u << (num - 1)) - 1;
					}
					for (unsigned i = 0; i < np; i++) {
						struct csd_packet p = pk(CSD_PKT_PHEADER);
						p.atoms.format = (uint8_t)fmt;
						p.atoms.num = (uint8_t)num;
						p.atoms.w = (uint8_t)w;
						p.atoms.en = pats[i];
						int r = try_add(&p);
						if (r == 1)
							ok++;
						else
							CHECK_EQ(r, CSD_EBADPKT);
					}
				}
		CHECK_EQ(ok, modes[m].valid);
		finish();
	}
}

/* Cycle counts of every length: 7 bits per byte, 4 bits in byte 5. */
static void test_cycle_counts(void)
{
	static const struct {
		uint32_t v;
		int bytes;
	} cc[] = {
		{ 0, 1 }, { 1, 1 }, { 127, 1 }, { 128, 2 }, { 16383, 2 }, { 16384, 3 },
		{ (1u << 21) - 1, 3 }, { 1u << 21, 4 }, { (1u << 28) - 1, 4 }, { 1u << 28, 5 }, { 0xFFFFFFFFu, 5 },
	};
	begin(cfg_of(CR_CA, 0, IDR(5), CSD_CORE_A));
	for (size_t k = 0; k < sizeof(cc) / sizeof(cc[0]); k++) {
		struct csd_packet p = pk(CSD_PKT_CYCLE_COUNT);
		p.flags = CSD_PKTF_CYCLE_COUNT;
		p.cycle_count = cc[k].v;
		CHECK_EQ(add(&p), 1 + cc[k].bytes);
	}
	finish();
}

/* Timestamps of every length, 48 and 64 bits, binary and Gray. */
static void test_timestamps(void)
{
	for (int cfgi = 0; cfgi < 4; cfgi++) {
		int ts64 = cfgi & 1, gray = cfgi & 2;
		unsigned width = ts64 ? 64 : 48, maxb = ts64 ? 9 : 7;
		begin(cfg_of(0, CCER_TS | (gray ? 0 : CCER_NAT) | (ts64 ? CCER_TS64 : 0), IDR(5), CSD_CORE_A));
		uint64_t ts = 0;
		for (unsigned bit = 0; bit < width; bit++) {
			struct csd_packet p = pk(CSD_PKT_TIMESTAMP);
			ts ^= (uint64_t)1 << bit;
			p.timestamp = ts;
			int len = add(&p);
			if (!gray) {
				/* bytes: 7 bits each, the last possible one carries the rest */
				unsigned want = bit / 7 + 1;
				if (want > maxb)
					want = maxb;
				CHECK_EQ(len, (int)(1 + want));
			}
		}
		for (unsigned k = 1; k <= maxb; k++) {
			struct csd_packet p = pk(CSD_PKT_TIMESTAMP);
			p.timestamp = ts;
			p.ts_bits = (uint8_t)(k == maxb ? width : 7 * k);
			CHECK_EQ(add(&p), (int)(1 + k));
		}
		finish();
	}
}

static void test_misc_packets(void)
{
	for (unsigned cid = 1; cid < 4; cid++) {
		begin(cfg_of(CR_CID(cid), 0, IDR(5), CSD_CORE_A));
		static const uint32_t vals[] = { 0, 0x12, 0xFF, 0x1234, 0xFFFF, 0x12345678, 0xFFFFFFFF };
		for (size_t k = 0; k < sizeof(vals) / sizeof(vals[0]); k++) {
			struct csd_packet p = pk(CSD_PKT_CONTEXT_ID);
			p.flags = CSD_PKTF_CONTEXT_ID;
			p.context_id = vals[k];
			unsigned nb = cid == 3 ? 4 : cid;
			if (nb < 4 && vals[k] >> (8 * nb)) {
				uint8_t tmp[8];
				CHECK_EQ(csd_etm3_enc_packet(R.enc, &p, tmp, sizeof(tmp)), CSD_EBADPKT);
				continue;
			}
			CHECK_EQ(add(&p), (int)(1 + nb));
		}
		finish();
	}
	begin(cfg_of(0, 0, IDR(5), CSD_CORE_A));
	for (unsigned v = 0; v < 256; v += 51) {
		struct csd_packet p = pk(CSD_PKT_VMID);
		p.vmid = (uint8_t)v;
		CHECK_EQ(add(&p), 2);
	}
	static const uint32_t one_byte[] = { CSD_PKT_TRIGGER, CSD_PKT_EXCEPTION_ENTRY, CSD_PKT_EXCEPTION_EXIT };
	for (size_t k = 0; k < 3; k++) {
		struct csd_packet p = pk(one_byte[k]);
		CHECK_EQ(add(&p), 1);
	}
	for (uint32_t n = 1; n < 40; n += 7) {
		struct csd_packet p = pk(CSD_PKT_IGNORE);
		p.size = n;
		CHECK_EQ(add(&p), (int)n);
		struct csd_packet a = pk(CSD_PKT_ASYNC);
		a.size = n + 6;
		CHECK_EQ(add(&a), (int)n + 6);
	}
	finish();
}

/* Data packets: every data address length (7 bits per byte, byte 5 =
 * A[31:28] + endianness), every value size, tags 1-3. */
static void test_data(void)
{
	static const uint32_t modes[] = { CR_DVAL | CR_DADDR, CR_DADDR, CR_DVAL };
	for (size_t m = 0; m < 3; m++) {
		const int da = (modes[m] & CR_DADDR) != 0, dv = (modes[m] & CR_DVAL) != 0;
		begin(cfg_of(modes[m], 0, IDR(5), CSD_CORE_A));
		uint32_t base = 0;
		static const uint8_t sizes[] = { 0, 1, 2, 4 };
		for (unsigned bit = 0; bit < 32; bit++) {
			struct csd_packet p = pk(CSD_PKT_NORMAL_DATA);
			unsigned size = dv ? sizes[bit % 4] : 0;
			if (da) {
				p.flags |= CSD_PKTF_DATA_ADDR;
				p.data_addr = base ^ (1u << bit);
				base = p.data_addr;
			}
			if (dv) {
				p.flags |= CSD_PKTF_DATA_VALUE;
				p.data_size = (uint8_t)size;
				p.data_value = size == 4 ? 0xDEADBEEF : size ? (1u << (8 * size)) - 3 : 0;
			}
			int abytes = da ? (int)(bit / 7 + 1 > 5 ? 5 : bit / 7 + 1) : 0;
			CHECK_EQ(add(&p), 1 + abytes + (int)size);
		}
		if (da) {
			struct csd_packet p = pk(CSD_PKT_NORMAL_DATA);
			p.flags = CSD_PKTF_DATA_ADDR | CSD_PKTF_BIG_ENDIAN | (dv ? CSD_PKTF_DATA_VALUE : 0);
			p.data_addr = base;
			CHECK_EQ(add(&p), 6);     /* endianness change: full address */
			p.data_addr = base ^ 1;
			CHECK_EQ(add(&p), 2);     /* BE kept */
			for (unsigned k = 1; k <= 5; k++) {
				p.addr_bytes = (uint8_t)k;
				CHECK_EQ(add(&p), 1 + (int)k);
			}
			for (uint8_t tag = 1; tag <= 3; tag++) {
				struct csd_packet q = pk(CSD_PKT_OOO_PLACEHOLDER);
				q.tag = tag;
				q.flags = tag & 1 ? CSD_PKTF_DATA_ADDR | CSD_PKTF_BIG_ENDIAN : 0;
				q.data_addr = 0x100 * tag + base;
				add(&q);
			}
			struct csd_packet v = pk(CSD_PKT_VALUE_NOT_TRACED);
			v.flags = CSD_PKTF_DATA_ADDR | CSD_PKTF_BIG_ENDIAN;
			v.data_addr = 0x44;
			add(&v);
		}
		if (dv) {
			for (uint8_t tag = 1; tag <= 3; tag++) {
				struct csd_packet q = pk(CSD_PKT_OOO_DATA);
				q.tag = tag;
				q.flags = CSD_PKTF_DATA_VALUE;
				q.data_size = sizes[tag];
				q.data_value = tag;
				CHECK_EQ(add(&q), 1 + sizes[tag]);
			}
		}
		struct csd_packet v = pk(CSD_PKT_VALUE_NOT_TRACED);
		add(&v);
		v = pk(CSD_PKT_STORE_FAILED);
		add(&v);
		v = pk(CSD_PKT_DATA_SUPPRESSED);
		add(&v);
		finish();
	}
}

/* Packets the configuration cannot carry are refused, and a refused or
 * oversized packet leaves the encoder state as it was. */
static void test_refusals(void)
{
	uint8_t b[64];
	struct csd_trace_config c = cfg_of(0, 0, IDR(2), CSD_CORE_A);
	csd_etm3_encoder *e = csd_etm3_enc_new(&c);
	struct csd_packet p = pk(CSD_PKT_PHEADER);
	p.atoms.format = 4;
	p.atoms.num = 1;
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = isync(CSD_ISA_THUMBEE, 0x100);        /* AltISA needs ETMv3.3 */
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = isync(CSD_ISA_ARM, 0x100);
	p.flags = CSD_PKTF_HYP;                  /* no virtualization extensions */
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = pk(CSD_PKT_VMID);
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = pk(CSD_PKT_TIMESTAMP);
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = pk(CSD_PKT_EXCEPTION_EXIT);
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = pk(CSD_PKT_CONTEXT_ID);               /* context ID tracing off */
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = pk(CSD_PKT_NORMAL_DATA);              /* data tracing off */
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = pk(CSD_PKT_ATOM);                     /* PTM only */
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = pk(CSD_PKT_ERROR);
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = isync(CSD_ISA_ARM, 0x1000);
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), 6);
	p = branch(CSD_ISA_ARM, 0x1002);          /* not word aligned */
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = branch(CSD_ISA_ARM, 0x1000);
	p.addr_bytes = 6;
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	p = branch(CSD_ISA_ARM, 0x1000);
	p.flags = CSD_PKTF_EXCEPTION;
	p.exception = 512;
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	/* ENOSPC leaves the state alone: the next branch still compresses
	 * against 0x1000 */
	p = branch(CSD_ISA_ARM, 0x80000000);
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, 2), CSD_ENOSPC);
	p = branch(CSD_ISA_ARM, 0x1004);
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), 1);
	CHECK_EQ(csd_etm3_enc_packet(NULL, &p, b, sizeof(b)), CSD_EINVAL);
	CHECK_EQ(csd_etm3_enc_packet(e, NULL, b, sizeof(b)), CSD_EINVAL);
	p = pk(CSD_PKT_ASYNC);
	p.size = 3;
	CHECK_EQ(csd_etm3_enc_packet(e, &p, b, sizeof(b)), CSD_EBADPKT);
	/* A run longer than the return value can count is refused before
	 * anything is written, even where it would fit (pages mapped, never
	 * touched unless written). */
	const size_t big = (size_t)INT32_MAX + 2;
	uint8_t *huge = mmap(NULL, big, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	CHECK(huge != MAP_FAILED);
	if (huge != MAP_FAILED) {
		static const uint32_t runs[] = { CSD_PKT_ASYNC, CSD_PKT_IGNORE };
		for (size_t k = 0; k < 2; k++) {
			p = pk(runs[k]);
			p.size = (uint64_t)INT32_MAX + 1;
			CHECK_EQ(csd_etm3_enc_packet(e, &p, huge, big), CSD_EBADPKT);
			CHECK(huge[0] == 0 && huge[(size_t)INT32_MAX - 1] == 0 && huge[INT32_MAX] == 0);
		}
		munmap(huge, big);
	}
	csd_etm3_enc_free(e);
	csd_etm3_enc_free(NULL);
	CHECK(csd_etm3_enc_new(NULL) == NULL);
}

/* Random packet sequences under random configurations. */
static uint32_t seed = 0xC0FFEE;
static uint32_t rnd(void)
{
	seed ^= seed << 13;
	seed ^= seed >> 17;
	seed ^= seed << 5;
	return seed;
}

/* A random value of random width (sequenced: the order of two rnd() calls
 * in one expression would be unspecified). */
static uint32_t rnd_width(void)
{
	uint32_t v = rnd();
	return v >> (rnd() % 32);
}

static void test_random(void)
{
	for (int round = 0; round < 60; round++) {
		unsigned minor = rnd() % 6;
		uint32_t cr = rnd() & (CR_DVAL | CR_DADDR | CR_CA);
		cr |= CR_CID(rnd() % 4);
		uint32_t ccer = (rnd() & (CCER_TS64 | CCER_NAT)) | CCER_TS;
		if (minor == 5 && (rnd() & 1))
			ccer |= CCER_VIRT;
		uint32_t idr = IDR(minor) | (minor >= 4 && (rnd() & 1) ? IDR_ALT : 0);
		int profile = rnd() % 3;
		begin(cfg_of(cr, ccer, idr, profile));
		const int virt = (ccer & CCER_VIRT) && profile != CSD_CORE_M;
		struct csd_packet s = isync(CSD_ISA_ARM, 0x8000);
		add(&s);
		int isa = CSD_ISA_ARM;
		uint32_t addr = 0x8000;
		for (int k = 0; k < 300; k++) {
			struct csd_packet p;
			switch (rnd() % 8) {
			case 0: {
				static const int isas[] = { CSD_ISA_ARM, CSD_ISA_THUMB, CSD_ISA_THUMBEE, CSD_ISA_JAZELLE };
				int want = isas[rnd() % (minor >= 3 ? 4 : 2)];
				if (want == CSD_ISA_THUMBEE && minor < 3)
					want = CSD_ISA_THUMB;
				unsigned sh = want == CSD_ISA_ARM ? 2 : want == CSD_ISA_JAZELLE ? 0 : 1;
				uint32_t a = addr ^ rnd_width();
				a &= ~((1u << sh) - 1);
				p = branch(want, a);
				if ((want == CSD_ISA_THUMBEE) != (isa == CSD_ISA_THUMBEE) || rnd() % 4 == 0) {
					p.flags |= CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY;
					p.exception = (uint16_t)(rnd() % 512);
					p.flags |= rnd() & 1 ? CSD_PKTF_NS : 0;
					p.flags |= virt && (rnd() & 1) ? CSD_PKTF_HYP : 0;
					p.flags |= rnd() & 1 ? CSD_PKTF_CANCEL : 0;
					if (rnd() & 1) {
						p.flags |= CSD_PKTF_RESUME;
						p.tag = (uint8_t)(rnd() % 16);
					}
				}
				p.addr_bytes = (uint8_t)(rnd() % 6);
				add(&p);
				isa = want;
				addr = a;
				break;
			}
			case 1: {
				struct csd_atoms a;
				memset(&a, 0, sizeof(a));
				if (cr & CR_CA) {
					a.format = 3;
					a.w = (uint8_t)(1 + rnd() % 8);
					a.num = rnd() & 1;
					a.en = a.num;
				} else {
					a.format = 1;
					unsigned e = rnd() % 16, nb = rnd() & 1;
					a.num = (uint8_t)(e + nb);
					a.en = (1u << e) - 1;
				}
				p = pk(CSD_PKT_PHEADER);
				p.atoms = a;
				add(&p);
				break;
			}
			case 2:
				p = pk(CSD_PKT_CYCLE_COUNT);
				p.cycle_count = rnd_width();
				add(&p);
				break;
			case 3:
				if (minor == 5) {
					p = pk(CSD_PKT_TIMESTAMP);
					p.timestamp = (uint64_t)rnd_width() << 32;
					p.timestamp |= rnd_width();
					if (!(ccer & CCER_TS64))
						p.timestamp &= 0xFFFFFFFFFFFFull;
					add(&p);
				}
				break;
			case 4:
				if (cr & (CR_DVAL | CR_DADDR)) {
					p = pk(CSD_PKT_NORMAL_DATA);
					if (cr & CR_DADDR) {
						p.flags |= CSD_PKTF_DATA_ADDR | (rnd() & 1 ? CSD_PKTF_BIG_ENDIAN : 0);
						p.data_addr = rnd_width();
					}
					if (cr & CR_DVAL) {
						static const uint8_t sizes[] = { 0, 1, 2, 4 };
						p.flags |= CSD_PKTF_DATA_VALUE;
						p.data_size = sizes[rnd() % 4];
						p.data_value = p.data_size == 4 ? rnd() : rnd() % (1u << (8 * p.data_size));
					}
					add(&p);
				}
				break;
			case 5: {
				static const int isas[] = { CSD_ISA_ARM, CSD_ISA_THUMB, CSD_ISA_JAZELLE };
				isa = isas[rnd() % 3];
				addr = rnd() & (isa == CSD_ISA_ARM ? ~3u : isa == CSD_ISA_THUMB ? ~1u : ~0u);
				p = isync(isa, addr);
				p.reason = (uint8_t)(rnd() % 4);
				p.context_id = rnd() % 256;
				if (rnd() & 1) {
					p.flags |= CSD_PKTF_CYCLE_COUNT;
					p.cycle_count = rnd();
				}
				if (rnd() & 1) {
					p.flags |= CSD_PKTF_LSIP;
					p.data_insn_addr = addr;
					addr = (addr + 4 * (rnd() % 1000)) & (isa == CSD_ISA_ARM ? ~3u : ~1u);
					if (isa == CSD_ISA_JAZELLE)
						addr = p.data_insn_addr + rnd() % 1000;
					p.addr = addr;
					p.addr_bytes = (uint8_t)(rnd() % 6);
				}
				add(&p);
				break;
			}
			case 6:
				if (cid_bytes()) {
					p = pk(CSD_PKT_CONTEXT_ID);
					p.context_id = rnd() & (cid_bytes() == 4 ? ~0u : (1u << (8 * cid_bytes())) - 1);
					add(&p);
				}
				break;
			default:
				p = pk(CSD_PKT_IGNORE);
				p.size = 1 + rnd() % 3;
				add(&p);
				p = pk(CSD_PKT_TRIGGER);
				add(&p);
				break;
			}
		}
		finish();
	}
}

int main(void)
{
	test_branch_lengths();
	test_branch_isa_changes();
	test_branch_exceptions();
	test_isync_forms();
	test_pheaders();
	test_cycle_counts();
	test_timestamps();
	test_misc_packets();
	test_data();
	test_refusals();
	test_random();
	csd_etm3_enc_free(R.enc);
	return check_done("test_etm3_roundtrip");
}
