/*
 * ocsd_ref.h - OpenCSD (Debian's libopencsd) as an independent second
 * opinion for tests and benchmarks. Header-only so that each test program
 * that wants it just includes it and links -lopencsd_c_api -lopencsd.
 */
#ifndef CSD_TEST_OCSD_REF_H
#define CSD_TEST_OCSD_REF_H

#include <stdint.h>
#include <string.h>

#include <opencsd/c_api/opencsd_c_api.h>

#include "csdec.h"

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
	ocsd_dcd_tree_src_t tree_src = frame_format == CSD_FRAME_RAW ? OCSD_TRC_SRC_SINGLE
								      : OCSD_TRC_SRC_FRAME_FORMATTED;
	uint32_t frm_flags = frame_format == CSD_FRAME_ALIGNED ? OCSD_DFRMTR_FRAME_MEM_ALIGN
			   : frame_format == CSD_FRAME_PORT ? (OCSD_DFRMTR_HAS_FSYNCS | OCSD_DFRMTR_HAS_HSYNCS)
			   : 0;
	dcd_tree_handle_t tree = ocsd_create_dcd_tree(tree_src, frm_flags);
	if (!tree)
		return -1;
	for (size_t i = 0; i < nsrc; i++) {
		struct ocsd_ref_source *s = &src[i];
		unsigned char csid = 0;
		ocsd_err_t err;
		if (s->cfg.protocol == CSD_PROTO_ETM3) {
			ocsd_etmv3_cfg c;
			memset(&c, 0, sizeof(c));
			c.reg_idr = s->cfg.etmidr;
			c.reg_ctrl = s->cfg.etmcr;
			c.reg_ccer = s->cfg.etmccer;
			c.reg_trc_id = s->cfg.trace_id;
			c.arch_ver = ARCH_V7;
			c.core_prof = s->cfg.core_profile == CSD_CORE_M ? profile_CortexM : profile_CortexA;
			err = ocsd_dt_create_decoder(tree, OCSD_BUILTIN_DCD_ETMV3, OCSD_CREATE_FLG_PACKET_PROC, &c, &csid);
		} else {
			ocsd_ptm_cfg c;
			memset(&c, 0, sizeof(c));
			c.reg_idr = s->cfg.etmidr;
			c.reg_ctrl = s->cfg.etmcr;
			c.reg_ccer = s->cfg.etmccer;
			c.reg_trc_id = s->cfg.trace_id;
			c.arch_ver = ARCH_V7;
			c.core_prof = profile_CortexA;
			err = ocsd_dt_create_decoder(tree, OCSD_BUILTIN_DCD_PTM, OCSD_CREATE_FLG_PACKET_PROC, &c, &csid);
		}
		if (err != OCSD_OK)
			goto fail;
		if (ocsd_dt_attach_packet_callback(tree, csid, OCSD_C_API_CB_PKT_SINK, ocsd_ref_pkt_cb, s) != OCSD_OK)
			goto fail;
	}
	size_t done = 0;
	int stalls = 0;
	while (done < len) {
		uint32_t used = 0;
		size_t chunk = len - done > (1u << 20) ? (1u << 20) : len - done;
		ocsd_datapath_resp_t r = ocsd_dt_process_data(tree, OCSD_OP_DATA, done, (uint32_t)chunk, buf + done, &used);
		done += used;
		if (OCSD_DATA_RESP_IS_FATAL(r))
			break; /* OpenCSD gives up on this buffer; counts so far stand */
		if (used == 0 && ++stalls > 1000)
			break;
		if (OCSD_DATA_RESP_IS_WAIT(r))
			ocsd_dt_process_data(tree, OCSD_OP_FLUSH, 0, 0, NULL, NULL);
	}
	ocsd_dt_process_data(tree, OCSD_OP_EOT, 0, 0, NULL, NULL);
	ocsd_destroy_dcd_tree(tree);
	return 0;
fail:
	ocsd_destroy_dcd_tree(tree);
	return -1;
}

#endif
