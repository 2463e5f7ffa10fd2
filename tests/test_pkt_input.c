/* Unit tests of the shared packet-decoder input: staging across runs and
 * the A-sync search. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csdec.h"
#include "pkt_input.h"

static void test_stage_across_runs(void)
{
	struct csdi_input in;
	csdi_in_reset(&in);
	const uint8_t a[] = { 1, 2, 3 };
	const uint8_t b[] = { 4, 5, 6, 7 };
	uint64_t boff[] = { 100, 101, 110, 111 };
	struct csd_bytes ra = { .data = a, .size = 3, .base = 10 };
	struct csd_bytes rb = { .data = b, .size = 4, .offsets = boff };
	const uint8_t *p;

	CHECK_EQ(csdi_in_feed(&in, &ra), 0);
	CHECK_EQ(csdi_in_view(&in, &p), 3);
	csdi_in_consume(&in, 1);                 /* packet "1" */
	CHECK_EQ(csdi_in_view(&in, &p), 2);
	CHECK_EQ(p[0], 2);
	CHECK_EQ(csdi_in_offset(&in, 0), 11);
	csdi_in_stash(&in);                      /* "2 3" needs more */
	CHECK_EQ(csdi_in_view(&in, &p), 2);      /* nothing new yet */
	CHECK_EQ(csdi_in_feed(&in, &rb), 0);
	CHECK_EQ(csdi_in_view(&in, &p), 6);
	CHECK_EQ(p[0], 2);
	CHECK_EQ(p[2], 4);
	CHECK_EQ(csdi_in_offset(&in, 1), 12);
	CHECK_EQ(csdi_in_offset(&in, 3), 101);
	csdi_in_consume(&in, 4);                 /* packet "2 3 4 5" */
	CHECK_EQ(csdi_in_view(&in, &p), 2);
	CHECK_EQ(p[0], 6);
	CHECK_EQ(csdi_in_offset(&in, 0), 110);
	csdi_in_consume(&in, 1);
	/* Consuming less than the staged part keeps the rest staged. */
	csdi_in_stash(&in);                      /* "7" */
	const uint8_t c[] = { 8 };
	struct csd_bytes rc = { .data = c, .size = 1, .base = 200 };
	CHECK_EQ(csdi_in_feed(&in, &rc), 0);
	CHECK_EQ(csdi_in_view(&in, &p), 2);
	csdi_in_consume(&in, 1);
	CHECK_EQ(csdi_in_view(&in, &p), 1);
	CHECK_EQ(p[0], 8);
	CHECK_EQ(csdi_in_offset(&in, 0), 200);
	csdi_in_consume(&in, 1);
	CHECK_EQ(csdi_in_view(&in, &p), 0);
	/* A new run is refused while the previous one is unread. */
	CHECK_EQ(csdi_in_feed(&in, &rb), 0);
	CHECK_EQ(csdi_in_feed(&in, &rb), CSD_EINVAL);
}

static void test_seek_async(void)
{
	struct csdi_input in;
	struct csd_packet pkt;
	csdi_in_reset(&in);
	/* 3 junk bytes, 4 zeros (too few), junk, then 6 zeros + 0x80 split over two runs. */
	const uint8_t a[] = { 0x12, 0x34, 0x56, 0, 0, 0, 0, 0x80, 0, 0, 0 };
	const uint8_t b[] = { 0, 0, 0, 0x80, 0x99 };
	struct csd_bytes ra = { .data = a, .size = sizeof(a), .base = 0 };
	struct csd_bytes rb = { .data = b, .size = sizeof(b), .base = 1000 };
	CHECK_EQ(csdi_in_feed(&in, &ra), 0);
	CHECK_EQ(csdi_in_seek_async(&in, &pkt), 0);
	CHECK_EQ(csdi_in_feed(&in, &rb), 0);
	CHECK_EQ(csdi_in_seek_async(&in, &pkt), 1);
	CHECK_EQ(pkt.type, CSD_PKT_NOSYNC);
	CHECK_EQ(pkt.offset, 0);
	CHECK_EQ(pkt.size, 8);
	CHECK_EQ(pkt.raw[7], 0x80);
	CHECK_EQ(csdi_in_seek_async(&in, &pkt), 1);
	CHECK_EQ(pkt.type, CSD_PKT_ASYNC);
	CHECK_EQ(pkt.offset, 8);
	CHECK_EQ(pkt.size, 7);
	CHECK_EQ(pkt.raw[6], 0x80);
	const uint8_t *p;
	CHECK_EQ(csdi_in_view(&in, &p), 1);
	CHECK_EQ(p[0], 0x99);

	/* End of stream with no A-sync: everything is one nosync packet. */
	csdi_in_reset(&in);
	const uint8_t c[] = { 0, 0, 7, 0, 0 };
	struct csd_bytes rcb = { .data = c, .size = sizeof(c), .base = 50 };
	CHECK_EQ(csdi_in_feed(&in, &rcb), 0);
	CHECK_EQ(csdi_in_seek_async(&in, &pkt), 0);
	in.finished = 1;
	CHECK_EQ(csdi_in_seek_async(&in, &pkt), 1);
	CHECK_EQ(pkt.type, CSD_PKT_NOSYNC);
	CHECK_EQ(pkt.offset, 50);
	CHECK_EQ(pkt.size, 5);
	CHECK_EQ(csdi_in_seek_async(&in, &pkt), 0);
}

/* A stretch without sync longer than 4 GiB is reported with its whole
 * size (a 5 GB capture of junk once came out as 4,294,967,295 bytes), by
 * both packet decoders and the flow decoder. */
static void test_long_nosync(void)
{
	enum { CHUNK = 8 << 20 };
	const uint64_t total = (UINT64_C(5) << 30) + 7;
	uint8_t *junk = malloc(CHUNK);
	CHECK(junk != NULL);
	if (!junk)
		return;
	memset(junk, 0x11, CHUNK);
	struct csd_trace_config cfg = { .size = sizeof(cfg), .protocol = CSD_PROTO_PTM };
	csd_ptm_pkt_decoder *ptm = csd_ptm_pkt_new(&cfg);
	cfg.protocol = CSD_PROTO_ETM3;
	csd_etm3_pkt_decoder *etm3 = csd_etm3_pkt_new(&cfg);
	csd_image *img = csd_image_new();
	struct csd_flow_config fc = { .size = sizeof(fc), .trace = &cfg, .image = img };
	csd_flow_decoder *flow = csd_flow_new(&fc);
	CHECK(ptm && etm3 && flow);
	struct csd_packet pp, pe;
	struct csd_record r;
	int np = 0, ne = 0, nr = 0;
	for (uint64_t off = 0; off < total; off += CHUNK) {
		struct csd_bytes in = { .data = junk, .size = total - off < CHUNK ? (size_t)(total - off) : CHUNK,
					.base = off };
		CHECK_EQ(csd_ptm_pkt_feed(ptm, &in), 0);
		CHECK_EQ(csd_etm3_pkt_feed(etm3, &in), 0);
		CHECK_EQ(csd_flow_feed(flow, &in), 0);
		while (csd_ptm_pkt_next(ptm, &pp) == 0)
			np++;
		while (csd_etm3_pkt_next(etm3, &pe) == 0)
			ne++;
		while (csd_flow_next(flow, &r) == 0)
			nr++;
	}
	CHECK_EQ(np + ne + nr, 0);      /* nothing before the end: the stretch goes on */
	csd_ptm_pkt_finish(ptm);
	csd_etm3_pkt_finish(etm3);
	csd_flow_finish(flow);
	CHECK_EQ(csd_ptm_pkt_next(ptm, &pp), 0);
	CHECK_EQ(pp.type, CSD_PKT_NOSYNC);
	CHECK(pp.size == total);
	CHECK_EQ(pp.offset, 0);
	CHECK_EQ(csd_etm3_pkt_next(etm3, &pe), 0);
	CHECK_EQ(pe.type, CSD_PKT_NOSYNC);
	CHECK(pe.size == total);
	CHECK_EQ(csd_flow_next(flow, &r), 0);
	CHECK_EQ(r.type, CSD_REC_NOSYNC);
	CHECK(r.size == total);
	csd_ptm_pkt_free(ptm);
	csd_etm3_pkt_free(etm3);
	csd_flow_free(flow);
	csd_image_free(img);
	free(junk);
}

int main(void)
{
	test_stage_across_runs();
	test_seek_async();
	test_long_nosync();
	CHECK_STR(csd_pkt_type_name(CSD_PKT_NOSYNC), "nosync");
	CHECK_STR(csd_pkt_type_name(0), "unknown");
	CHECK_STR(csd_errstr(CSD_EAGAIN), "more input needed");
	return check_done("test_pkt_input");
}
