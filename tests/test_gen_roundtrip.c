/*
 * Generator round trip without an emulator: the instruction sequences that
 * DS-5 decoded from the TC2 capture (real Linux kernel code, with trace
 * gaps) are re-encoded by the trace generator under every configuration of
 * both protocols, decoded again, and must come back instruction for
 * instruction.
 */
#include "check.h"
#include "ds5_dump.h"
#include "byte_sink.h"
#include "gen.h"

/* csd_flow_last_packet() comparisons made, over all variants. */
static size_t total_last_checks;
/* Packet types (bit per enum csd_pkt_type) that ended a piece. */
static unsigned last_kinds;

struct variant {
	const char *name;
	uint32_t protocol, etmcr, etmccer, etmidr;
	uint32_t sync_period;
	uint32_t flow_flags;
};

static int pkt_next(csd_etm3_pkt_decoder *e, csd_ptm_pkt_decoder *p, struct csd_packet *pk)
{
	return e ? csd_etm3_pkt_next(e, pk) : csd_ptm_pkt_next(p, pk);
}

/*
 * csd_flow_last_packet() where every packet other than an atom packet or
 * P-header ends a piece fed: branch, cycle count, timestamp, I-sync ...
 * each is then the last packet taken, by whichever way the flow decoder
 * took it, and must be what the packet decoder gives.
 */
static void last_packet_at_ends(const struct byte_sink *bb, const struct csd_trace_config *cfg, csd_image *img,
				const struct variant *v)
{
	csd_etm3_pkt_decoder *e = cfg->protocol == CSD_PROTO_ETM3 ? csd_etm3_pkt_new(cfg) : NULL;
	csd_ptm_pkt_decoder *pd = cfg->protocol == CSD_PROTO_PTM ? csd_ptm_pkt_new(cfg) : NULL;
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = cfg;
	fc.image = img;
	fc.flags = v->flow_flags;
	csd_flow_decoder *fd = csd_flow_new(&fc);
	CHECK(fd != NULL && (e != NULL || pd != NULL));
	if (!fd || (!e && !pd))
		return;
	struct csd_bytes all = { .data = bb->data, .size = bb->n, .base = 0 };
	CHECK_EQ(e ? csd_etm3_pkt_feed(e, &all) : csd_ptm_pkt_feed(pd, &all), 0);
	if (e)
		csd_etm3_pkt_finish(e);
	else
		csd_ptm_pkt_finish(pd);
	size_t fed = 0, checks = 0, bad = 0;
	unsigned kinds = 0;
	struct csd_packet pk, got;
	struct csd_record r;
	while (pkt_next(e, pd, &pk) == 0) {
		if (pk.type == CSD_PKT_PHEADER || pk.type == CSD_PKT_ATOM)
			continue;
		const size_t end = (size_t)(pk.offset + pk.size);
		if (end <= fed || end > bb->n)
			continue;
		struct csd_bytes in = { .data = bb->data + fed, .size = end - fed, .base = fed };
		CHECK_EQ(csd_flow_feed(fd, &in), 0);
		fed = end;
		while (csd_flow_next(fd, &r) == 0)
			;
		checks++;
		kinds |= 1u << (pk.type & 31);
		CHECK_EQ(csd_flow_last_packet(fd, &got), 0);
		if (memcmp(&got, &pk, sizeof(pk)) != 0 && bad++ < 3)
			fprintf(stderr, "%s: packet type %u at %llu (%llu bytes) ending a piece: flow's last is type %u at %llu\n",
				v->name, pk.type, (unsigned long long)pk.offset, (unsigned long long)pk.size, got.type,
				(unsigned long long)got.offset);
	}
	CHECK(checks > 0);
	CHECK_EQ(bad, 0);
	total_last_checks += checks;
	last_kinds |= kinds;
	csd_flow_free(fd);
	csd_etm3_pkt_free(e);
	csd_ptm_pkt_free(pd);
}

static void roundtrip(const struct ds5_dump *d, csd_image *img, const struct variant *v)
{
	struct byte_sink bb = { 0 };
	struct csdi_gen_config gc;
	memset(&gc, 0, sizeof(gc));
	gc.trace.size = sizeof(gc.trace);
	gc.trace.protocol = v->protocol;
	gc.trace.etmcr = v->etmcr;
	gc.trace.etmccer = v->etmccer;
	gc.trace.etmidr = v->etmidr;
	gc.trace.trace_id = 0x21;
	gc.sync_period = v->sync_period;
	gc.context_id = 0x4a5b6c7d;
	struct csdi_gen *g = csdi_gen_new(&gc, img, byte_sink_append, &bb);
	CHECK(g != NULL);
	if (!g)
		return;
	size_t expected = 0;
	for (size_t i = 0; i < d->n; i++) {
		if (d->rec[i].kind != DS5_INSN)
			continue;
		CHECK_EQ(csdi_gen_insn(g, d->rec[i].addr, CSD_ISA_THUMB), 0);
		expected++;
	}
	CHECK_EQ(csdi_gen_finish(g), 0);
	const struct csdi_gen_stats *st = csdi_gen_stats(g);
	CHECK_EQ(st->traced, expected);

	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &gc.trace;
	fc.image = img;
	fc.flags = v->flow_flags;
	csd_flow_decoder *fd = csd_flow_new(&fc);
	CHECK(fd != NULL);
	/* A packet decoder fed the same pieces: after each piece, the flow
	 * decoder's last packet (csd_flow_last_packet) must be the last one
	 * this gives, whichever of the flow decoder's ways took it. */
	csd_etm3_pkt_decoder *ref3 = v->protocol == CSD_PROTO_ETM3 ? csd_etm3_pkt_new(&gc.trace) : NULL;
	csd_ptm_pkt_decoder *refp = v->protocol == CSD_PROTO_PTM ? csd_ptm_pkt_new(&gc.trace) : NULL;
	CHECK(ref3 != NULL || refp != NULL);
	struct csd_packet ref_last, flow_last;
	int have_ref = 0;
	size_t last_checks = 0, last_mismatches = 0;
	/* Feed in uneven pieces. */
	size_t off = 0, piece = 3, k = 0, mismatches = 0, errors = 0;
	uint64_t decoded = 0, cycles = 0;
	struct csd_record r;
	for (;;) {
		if (off < bb.n) {
			size_t n = bb.n - off < piece ? bb.n - off : piece;
			struct csd_bytes in = { .data = bb.data + off, .size = n, .base = off };
			CHECK_EQ(csd_flow_feed(fd, &in), 0);
			CHECK_EQ(ref3 ? csd_etm3_pkt_feed(ref3, &in) : csd_ptm_pkt_feed(refp, &in), 0);
			off += n;
			piece = piece * 5 % 251 + 1;
		} else {
			csd_flow_finish(fd);
			if (ref3)
				csd_etm3_pkt_finish(ref3);
			else
				csd_ptm_pkt_finish(refp);
		}
		int rc;
		while ((rc = csd_flow_next(fd, &r)) == 0) {
			if (r.type == CSD_REC_ERROR) {
				if (errors++ < 3)
					fprintf(stderr, "%s: error record at %llu: %s\n", v->name,
						(unsigned long long)r.offset, r.error);
			}
			if (r.flags & CSD_RECF_CYCLES)
				cycles += r.cycles;
			if (r.type != CSD_REC_INSN && r.type != CSD_REC_RANGE)
				continue;
			/* Expand ranges with the instruction sizes from the dump. */
			uint64_t a = r.addr;
			uint32_t count = r.type == CSD_REC_INSN ? 1 : r.count;
			for (uint32_t j = 0; j < count; j++) {
				while (k < d->n && d->rec[k].kind != DS5_INSN)
					k++;
				if (k >= d->n || d->rec[k].addr != a) {
					if (mismatches++ < 3)
						fprintf(stderr, "%s: decoded 0x%llx, expected 0x%x (DS-5 line %d)\n", v->name,
							(unsigned long long)a, k < d->n ? d->rec[k].addr : 0,
							k < d->n ? d->rec[k].line : -1);
				}
				unsigned size = k < d->n && d->rec[k].opcode > 0xFFFF ? 4 : 2;
				a += size;
				k++;
				decoded++;
			}
		}
		/* The flow decoder has taken every whole packet fed. */
		struct csd_packet pk;
		while ((ref3 ? csd_etm3_pkt_next(ref3, &pk) : csd_ptm_pkt_next(refp, &pk)) == 0) {
			ref_last = pk;
			have_ref = 1;
		}
		if (have_ref) {
			last_checks++;
			CHECK_EQ(csd_flow_last_packet(fd, &flow_last), 0);
			if (memcmp(&flow_last, &ref_last, sizeof(ref_last)) != 0 && last_mismatches++ < 3)
				fprintf(stderr, "%s: last packet at %llu: flow has type %u at %llu (%llu bytes)\n", v->name,
					(unsigned long long)ref_last.offset, flow_last.type,
					(unsigned long long)flow_last.offset, (unsigned long long)flow_last.size);
		}
		if (rc == CSD_EEOS)
			break;
	}
	CHECK(last_checks > 0);
	total_last_checks += last_checks;
	CHECK_EQ(last_mismatches, 0);
	csd_etm3_pkt_free(ref3);
	csd_ptm_pkt_free(refp);
	printf("%s: %zu instructions -> %zu trace bytes (%llu packets), decoded %llu, %zu mismatches\n", v->name,
	       expected, bb.n, (unsigned long long)st->packets, (unsigned long long)decoded, mismatches);
	CHECK_EQ(decoded, expected);
	CHECK_EQ(mismatches, 0);
	CHECK_EQ(errors, 0);
	/* Every cycle the trace reports is accounted for by some record. */
	CHECK_EQ(cycles, st->cycles);
	csd_flow_free(fd);
	last_packet_at_ends(&bb, &gc.trace, img, v);
	csdi_gen_free(g);
	free(bb.data);
}

int main(void)
{
	static const struct variant variants[] = {
		{ "ptm", CSD_PROTO_PTM, 0x00000000, 0x34C01AC2, 0x411CF312, 512, 0 },
		{ "ptm-ca-ts", CSD_PROTO_PTM, 0x10001000, 0x34C01AC2, 0x411CF312, 4096, CSD_FLOW_INSN },
		{ "ptm-rstack-cid4", CSD_PROTO_PTM, 0x2000C000, 0x34C01AC2, 0x411CF312, 300, 0 },
		{ "ptm-ca-rstack-cid1-dmb", CSD_PROTO_PTM, 0x30005000, 0x35C01AC2, 0x411CF312, 2000, CSD_FLOW_INSN },
		{ "etm3", CSD_PROTO_ETM3, 0x00000000, 0x344008F2, 0x410CF250, 512, 0 },
		{ "etm3-ca-ts", CSD_PROTO_ETM3, 0x10001000, 0x344008F2, 0x410CF250, 1000, CSD_FLOW_INSN },
		{ "etm3-ca-ts-ranges", CSD_PROTO_ETM3, 0x10001000, 0x344008F2, 0x410CF250, 1500, 0 },
		{ "etm3-ca-cid2", CSD_PROTO_ETM3, 0x00009000, 0x344008F2, 0x410CF250, 256, 0 },
		{ "etm3.2-ca", CSD_PROTO_ETM3, 0x00001000, 0x00000000, 0x410CF220, 700, CSD_FLOW_INSN },
	};
	char dir[1024], path[1200];
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	snprintf(path, sizeof(path), "%s/kernel_dump.bin", dir);
	csd_image *img = csd_image_new();
	CHECK_EQ(csd_image_add_file(img, path, 0, 0, 0xC0008000u), 0);
	static const char *dumps[] = { "etmv3_0x10.txt", "ptmv1_0x13.txt" };
	for (size_t f = 0; f < sizeof(dumps) / sizeof(dumps[0]); f++) {
		struct ds5_dump d;
		snprintf(path, sizeof(path), "%s/ds5-dumps/%s", dir, dumps[f]);
		CHECK_EQ(ds5_load(path, &d), 0);
		for (size_t i = 0; i < sizeof(variants) / sizeof(variants[0]); i++)
			roundtrip(&d, img, &variants[i]);
		ds5_free(&d);
	}
	csd_image_free(img);
	printf("csd_flow_last_packet checked %zu times\n", total_last_checks);
	CHECK(total_last_checks > 200);
	/* Those the flow decoder's fast paths take themselves among them. */
	CHECK(last_kinds & 1u << CSD_PKT_BRANCH);
	CHECK(last_kinds & 1u << CSD_PKT_CYCLE_COUNT);
	CHECK(last_kinds & 1u << CSD_PKT_TIMESTAMP);
	return check_done("test_gen_roundtrip");
}
