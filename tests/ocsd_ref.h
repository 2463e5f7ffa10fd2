/*
 * ocsd_ref.h - OpenCSD (Debian's libopencsd) as an independent second
 * opinion for tests and benchmarks. Header-only so that each test program
 * that wants it just includes it and links -lopencsd_c_api -lopencsd.
 */
#ifndef CSD_TEST_OCSD_REF_H
#define CSD_TEST_OCSD_REF_H

#include <stdint.h>

#include <opencsd/c_api/opencsd_c_api.h>

#include "csdec.h"
#include "ocsd_feed.h"

#define OCSD_REF_MAX_SOURCES 16

struct ocsd_ref_source {
	struct csd_trace_config cfg;   /* protocol, registers, trace ID */
	/* results */
	uint64_t packets;              /* synchronised packets (not NOTSYNC / incomplete-at-end) */
	uint64_t nosync;               /* NOTSYNC reports */
	uint64_t errors;               /* error packets */
};

static ocsd_datapath_resp_t ocsd_ref_pkt_cb(const void *ctx, const ocsd_datapath_op_t op,
					    const ocsd_trc_index_t index, const void *pkt)
{
	struct ocsd_ref_source *s = (struct ocsd_ref_source *)ctx;
	(void)index;
	if (op != OCSD_OP_DATA || !pkt)
		return OCSD_RESP_CONT;
	if (s->cfg.protocol == CSD_PROTO_ETM3) {
		ocsd_etmv3_pkt_type t = ((const ocsd_etmv3_pkt *)pkt)->type;
		if (t == ETM3_PKT_NOTSYNC)
			s->nosync++;
		else if (t == ETM3_PKT_INCOMPLETE_EOT)
			;
		else if (t >= ETM3_PKT_BAD_SEQUENCE)
			s->errors++;
		else
			s->packets++;
	} else {
		ocsd_ptm_pkt_type t = ((const ocsd_ptm_pkt *)pkt)->type;
		if (t == PTM_PKT_NOTSYNC)
			s->nosync++;
		else if (t == PTM_PKT_INCOMPLETE_EOT)
			;
		else if (t >= PTM_PKT_BAD_SEQUENCE)
			s->errors++;
		else
			s->packets++;
	}
	return OCSD_RESP_CONT;
}

/*
 * Run OpenCSD's packet processors over one capture buffer. frame_format is
 * an enum csd_frame_format. Returns 0, or -1 if OpenCSD refused something.
 */
static inline int ocsd_ref_count_packets(const uint8_t *buf, size_t len, uint32_t frame_format,
					 struct ocsd_ref_source *src, size_t nsrc)
{
	dcd_tree_handle_t tree = ocsd_feed_tree(frame_format);
	if (!tree)
		return -1;
	for (size_t i = 0; i < nsrc; i++) {
		struct ocsd_ref_source *s = &src[i];
		unsigned char csid = 0;
		if (ocsd_feed_add_decoder(tree, &s->cfg, OCSD_CREATE_FLG_PACKET_PROC, &csid) != OCSD_OK)
			goto fail;
		if (ocsd_dt_attach_packet_callback(tree, csid, OCSD_C_API_CB_PKT_SINK, ocsd_ref_pkt_cb, s) != OCSD_OK)
			goto fail;
	}
	/* (Until OpenCSD gives up on the buffer: counts so far stand.) */
	struct ocsd_feed_fatal fatal;
	for (size_t done = 0; done < len; done += 1u << 20) {
		const size_t piece = len - done > (1u << 20) ? (1u << 20) : len - done;
		if (ocsd_feed(tree, done, buf + done, piece, &fatal) != OCSD_FEED_OK)
			break;
	}
	ocsd_dt_process_data(tree, OCSD_OP_EOT, 0, 0, NULL, NULL);
	ocsd_destroy_dcd_tree(tree);
	return 0;
fail:
	ocsd_destroy_dcd_tree(tree);
	return -1;
}

#endif
