/*
 * The flow decoders on hand-made traces of the cases the captures do not
 * cover and that the text cases (tests/flow, test_flow_text.c) do not
 * express: Jazelle, and atoms after an indirect branch whose target is not
 * traced, compared between range and instruction mode. Each trace is written with the library's packet
 * encoders over a small hand-assembled image; the expected records follow
 * from the protocol rules (IHI 0014, IHI 0035), instruction by instruction.
 */
#include "check.h"
#include "csdec.h"
#include "a32_call.h"

struct trace {
	uint8_t b[1024];
	size_t n;
};

static struct csd_packet pk(uint32_t type)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = type;
	return p;
}

static void put(struct trace *t, csd_ptm_encoder *pe, csd_etm3_encoder *ee, const struct csd_packet *p)
{
	int n = pe ? csd_ptm_enc_packet(pe, p, t->b + t->n, sizeof(t->b) - t->n)
		   : csd_etm3_enc_packet(ee, p, t->b + t->n, sizeof(t->b) - t->n);
	CHECK(n > 0);
	if (n > 0)
		t->n += (size_t)n;
}

static void put_sync(struct trace *t, csd_ptm_encoder *pe, csd_etm3_encoder *ee, uint32_t addr, uint8_t isa)
{
	struct csd_packet a = pk(CSD_PKT_ASYNC);
	put(t, pe, ee, &a);
	struct csd_packet s = pk(CSD_PKT_ISYNC);
	s.addr = addr;
	s.isa = isa;
	s.reason = CSD_REASON_TRACE_ON;
	s.flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY;
	put(t, pe, ee, &s);
}

static void put_atoms(struct trace *t, csd_ptm_encoder *pe, csd_etm3_encoder *ee, const char *atoms)
{
	struct csd_packet p = pk(pe ? CSD_PKT_ATOM : CSD_PKT_PHEADER);
	for (unsigned i = 0; atoms[i]; i++) {
		if (atoms[i] == 'E')
			p.atoms.en |= 1u << i;
		p.atoms.num++;
	}
	/* ETMv3 (not cycle-accurate): format 1 is E..E with at most one N at
	 * the end; any other pair needs format 2. */
	const char *nat = strchr(atoms, 'N');
	p.atoms.format = pe ? 0 : (nat && nat[1]) ? 2 : 1;
	put(t, pe, ee, &p);
}

static void put_branch(struct trace *t, csd_ptm_encoder *pe, csd_etm3_encoder *ee, uint32_t addr, uint8_t isa,
		       unsigned exception, int cancel)
{
	struct csd_packet p = pk(CSD_PKT_BRANCH);
	p.addr = addr;
	p.isa = isa;
	p.flags = CSD_PKTF_ISA;
	if (exception || cancel) {
		p.flags |= CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY;
		p.exception = (uint16_t)exception;
		if (cancel)
			p.flags |= CSD_PKTF_CANCEL;
	}
	put(t, pe, ee, &p);
}

/* Decode t with the given configuration; records into out[]. */
static size_t decode(const struct trace *t, uint32_t protocol, uint32_t etmcr, csd_image *img, uint32_t flags,
		     struct csd_record *out, size_t cap)
{
	struct csd_trace_config tc;
	memset(&tc, 0, sizeof(tc));
	tc.size = sizeof(tc);
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &tc;
	tc.protocol = protocol;
	tc.etmcr = etmcr;
	tc.etmidr = protocol == CSD_PROTO_PTM ? 0x411CF312 : 0x410CF250;
	tc.etmccer = protocol == CSD_PROTO_PTM ? 0x34C01AC2 : 0x344008F2;
	fc.image = img;
	fc.flags = flags;
	csd_flow_decoder *d = csd_flow_new(&fc);
	CHECK(d != NULL);
	struct csd_bytes in = { .data = t->b, .size = t->n, .base = 0 };
	CHECK_EQ(csd_flow_feed(d, &in), 0);
	CHECK_EQ(csd_flow_finish(d), 0);
	size_t n = 0;
	struct csd_record r;
	while (csd_flow_next(d, &r) == 0) {
		if (r.type == CSD_REC_CONTEXT || r.type == CSD_REC_NOSYNC)
			continue; /* not what these cases are about */
		if (n < cap)
			out[n] = r;
		n++;
	}
	csd_flow_free(d);
	return n;
}

static void check_range(const struct csd_record *r, uint64_t start, uint64_t last, uint32_t count, uint8_t cond)
{
	CHECK_EQ(r->type, CSD_REC_RANGE);
	CHECK_EQ(r->addr, start);
	CHECK_EQ(r->last, last);
	CHECK_EQ(r->count, count);
	CHECK_EQ(r->cond, cond);
}

static csd_ptm_encoder *ptm_enc(uint32_t etmcr)
{
	struct csd_trace_config c = { .size = sizeof(c), .protocol = CSD_PROTO_PTM, .etmcr = etmcr,
				      .etmidr = 0x411CF312, .etmccer = 0x34C01AC2 };
	return csd_ptm_enc_new(&c);
}

static csd_etm3_encoder *etm3_enc(uint32_t etmcr)
{
	struct csd_trace_config c = { .size = sizeof(c), .protocol = CSD_PROTO_ETM3, .etmcr = etmcr,
				      .etmidr = 0x410CF250, .etmccer = 0x344008F2 };
	return csd_etm3_enc_new(&c);
}

/* Jazelle bytecodes cannot be followed: said explicitly, not guessed. */
static void etm3_jazelle(csd_image *img)
{
	struct trace t = { .n = 0 };
	csd_etm3_encoder *e = etm3_enc(0);
	put_sync(&t, NULL, e, 0x1001, CSD_ISA_JAZELLE);
	put_atoms(&t, NULL, e, "EE");
	put_branch(&t, NULL, e, 0x1000, CSD_ISA_ARM, 0, 0);
	put_atoms(&t, NULL, e, "E");
	struct csd_record r[16];
	size_t n = decode(&t, CSD_PROTO_ETM3, 0, img, 0, r, 16);
	CHECK_EQ(n, 4);
	CHECK_EQ(r[1].type, CSD_REC_ISA_UNSUPPORTED);
	CHECK_EQ(r[1].isa, CSD_ISA_JAZELLE);
	/* The bytecodes' addresses are not known. */
	CHECK_EQ(r[2].type, CSD_REC_ADDRESS_UNKNOWN);
	CHECK_EQ(r[2].count, 2);
	CHECK_EQ(r[2].isa, CSD_ISA_JAZELLE);
	check_range(&r[3], 0x1000, 0x1000, 1, CSD_COND_PASS);
	csd_etm3_enc_free(e);
}

/* The records of lost atoms, which must be the same as ranges and as
 * instructions: [0] the stretch at an unknown address, [1] the one at the
 * address without code. */
static void check_lost_pair(const struct csd_record *r, uint32_t unknown_count, uint32_t nomem_addr,
			    uint32_t nomem_count)
{
	CHECK_EQ(r[0].type, CSD_REC_ADDRESS_UNKNOWN);
	CHECK_EQ(r[0].addr, 0);
	CHECK_EQ(r[0].count, unknown_count);
	CHECK_EQ(r[0].isa, CSD_ISA_ARM);
	CHECK(r[0].error == NULL);
	CHECK_EQ(r[1].type, CSD_REC_NO_MEMORY);
	CHECK_EQ(r[1].addr, nomem_addr);
	CHECK_EQ(r[1].count, nomem_count);
	CHECK_EQ(r[1].isa, CSD_ISA_ARM);
	CHECK(r[1].error == NULL);
	CHECK_STR(csd_rec_type_name(CSD_REC_ADDRESS_UNKNOWN), "address_unknown");
}

/* An indirect branch whose target the trace never gives (a PTM without
 * the return stack sends a branch packet for a taken bx lr; here it is
 * missing): the atoms after it are of unknown address. A branch packet
 * then gives an address the image has no code at: that is no_memory,
 * naming it, a record of its own. */
static void ptm_address_unknown(csd_image *img)
{
	struct trace t = { .n = 0 };
	csd_ptm_encoder *e = ptm_enc(0);
	put_sync(&t, e, NULL, 0x1000, CSD_ISA_ARM);
	put_atoms(&t, e, NULL, "EEEE");   /* bl taken, bx lr taken (target unknown), 2 lost */
	put_branch(&t, e, NULL, 0x6000, CSD_ISA_ARM, 0, 0);
	put_atoms(&t, e, NULL, "EN");     /* at 0x6000: no code there */
	put_branch(&t, e, NULL, 0x1010, CSD_ISA_ARM, 0, 0);
	put_atoms(&t, e, NULL, "E");      /* nop, b 0x1000 */
	struct csd_record r[32];
	size_t n = decode(&t, CSD_PROTO_PTM, 0, img, 0, r, 32);
	CHECK_EQ(n, 6);
	if (n == 6) {
		CHECK_EQ(r[0].type, CSD_REC_TRACE_ON);
		check_range(&r[1], 0x1000, 0x100c, 4, CSD_COND_PASS);
		check_range(&r[2], 0x1020, 0x1024, 2, CSD_COND_PASS);
		check_lost_pair(&r[3], 2, 0x6000, 2);
		check_range(&r[5], 0x1010, 0x1014, 2, CSD_COND_PASS);
	}
	/* Instruction by instruction: the same lost records between the
	 * same instructions. */
	n = decode(&t, CSD_PROTO_PTM, 0, img, CSD_FLOW_INSN, r, 32);
	CHECK_EQ(n, 11);
	if (n == 11) {
		CHECK_EQ(r[6].type, CSD_REC_INSN);
		CHECK_EQ(r[6].addr, 0x1024);
		check_lost_pair(&r[7], 2, 0x6000, 2);
		CHECK_EQ(r[9].type, CSD_REC_INSN);
		CHECK_EQ(r[9].addr, 0x1010);
	}
	csd_ptm_enc_free(e);
}

/* The same with ETMv3: an atom per instruction; after the taken bx lr
 * the branch packet with its target is missing. */
static void etm3_address_unknown(csd_image *img)
{
	struct trace t = { .n = 0 };
	csd_etm3_encoder *e = etm3_enc(0);
	put_sync(&t, NULL, e, 0x1000, CSD_ISA_ARM);
	put_atoms(&t, NULL, e, "EEEEEE"); /* mov, add, ldr, bl; add, bx lr */
	put_atoms(&t, NULL, e, "EEE");    /* target unknown */
	put_branch(&t, NULL, e, 0x6000, CSD_ISA_ARM, 0, 0);
	put_atoms(&t, NULL, e, "E");      /* no code at 0x6000 */
	put_branch(&t, NULL, e, 0x1010, CSD_ISA_ARM, 0, 0);
	put_atoms(&t, NULL, e, "E");      /* nop */
	for (int insn = 0; insn < 2; insn++) {
		struct csd_record r[32];
		size_t n = decode(&t, CSD_PROTO_ETM3, 0, img, insn ? CSD_FLOW_INSN : 0, r, 32);
		const size_t lost = insn ? 7 : 3; /* trace on, 6 instructions or 2 ranges */
		CHECK_EQ(n, lost + 3);
		if (n != lost + 3)
			continue;
		check_lost_pair(&r[lost], 3, 0x6000, 1);
		CHECK_EQ(r[lost + 2].addr, 0x1010);
	}
	csd_etm3_enc_free(e);
}

int main(void)
{
	csd_image *img = a32_call_image();
	/* (The exception names of back-to-back exceptions, whose records
	 * are in tests/flow/ptm-back-to-back-exceptions.txt.) */
	CHECK_STR(csd_exception_name(&(struct csd_trace_config){ .protocol = CSD_PROTO_PTM }, 14), "IRQ");
	CHECK_STR(csd_exception_name(&(struct csd_trace_config){ .protocol = CSD_PROTO_PTM }, 15), "FIQ");
	etm3_jazelle(img);
	ptm_address_unknown(img);
	etm3_address_unknown(img);
	csd_image_free(img);
	return check_done("test_flow_cases");
}
