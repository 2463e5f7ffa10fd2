/*
 * ocsd_feed.h - an OpenCSD decode tree for a snapshot's buffer, its
 * decoders, and trace bytes given to it: the one way the benchmark
 * (bench/ocsd_bench.c) and the tests that compare with OpenCSD
 * (ocsd_decode.h) both drive it.
 */
#ifndef CSD_TESTS_OCSD_FEED_H
#define CSD_TESTS_OCSD_FEED_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <opencsd/c_api/opencsd_c_api.h>

#include "csdec.h"

/* A decode tree for a buffer of frame format `frame_format` (enum
 * csd_frame_format); NULL if OpenCSD cannot make one. */
static inline dcd_tree_handle_t ocsd_feed_tree(uint32_t frame_format)
{
	const ocsd_dcd_tree_src_t src = frame_format == CSD_FRAME_RAW ? OCSD_TRC_SRC_SINGLE : OCSD_TRC_SRC_FRAME_FORMATTED;
	const uint32_t flags = frame_format == CSD_FRAME_ALIGNED ? OCSD_DFRMTR_FRAME_MEM_ALIGN
			     : frame_format == CSD_FRAME_PORT ? (OCSD_DFRMTR_HAS_FSYNCS | OCSD_DFRMTR_HAS_HSYNCS)
			     : 0;
	return ocsd_create_dcd_tree(src, flags);
}

/* The register fields that OpenCSD's ETMv3 and PTM configurations share
 * (two struct types), from source cfg. */
#define OCSD_FEED_REGS(c, cfg)                  \
	do {                                    \
		memset(&(c), 0, sizeof(c));     \
		(c).reg_idr = (cfg)->etmidr;    \
		(c).reg_ctrl = (cfg)->etmcr;    \
		(c).reg_ccer = (cfg)->etmccer;  \
		(c).reg_trc_id = (cfg)->trace_id; \
		(c).arch_ver = ARCH_V7;         \
	} while (0)

/* The decoder of source cfg (ETMv3 or PTM, from its registers) in tree,
 * made with OCSD_CREATE_FLG_* `flags`; its ID in *csid. */
static inline ocsd_err_t ocsd_feed_add_decoder(dcd_tree_handle_t tree, const struct csd_trace_config *cfg,
					       int flags, unsigned char *csid)
{
	if (cfg->protocol == CSD_PROTO_ETM3) {
		ocsd_etmv3_cfg c;
		OCSD_FEED_REGS(c, cfg);
		c.core_prof = cfg->core_profile == CSD_CORE_M ? profile_CortexM
			    : cfg->core_profile == CSD_CORE_R ? profile_CortexR : profile_CortexA;
		return ocsd_dt_create_decoder(tree, OCSD_BUILTIN_DCD_ETMV3, flags, &c, csid);
	}
	ocsd_ptm_cfg c;
	OCSD_FEED_REGS(c, cfg);
	c.core_prof = cfg->core_profile == CSD_CORE_R ? profile_CortexR : profile_CortexA;
	return ocsd_dt_create_decoder(tree, OCSD_BUILTIN_DCD_PTM, flags, &c, csid);
}

/* Where and why OpenCSD gave up. */
struct ocsd_feed_fatal {
	int err;                        /* ocsd_err_t */
	ocsd_trc_index_t index;
	uint8_t chan;
	char msg[256];
};

enum { OCSD_FEED_OK = 0, OCSD_FEED_FATAL = -1, OCSD_FEED_STUCK = -2 };

/* data[0, len) at capture index `index`, to the end of the data or until
 * OpenCSD gives up on the buffer (OCSD_FEED_FATAL, *fatal filled; what it
 * decoded so far stands) or stops taking bytes (OCSD_FEED_STUCK: the
 * callbacks never ask it to wait, so no progress means it is stuck). A
 * wait is answered with a flush. */
static inline int ocsd_feed(dcd_tree_handle_t tree, uint64_t index, const uint8_t *data, size_t len,
			    struct ocsd_feed_fatal *fatal)
{
	size_t done = 0;
	int stalls = 0;
	while (done < len) {
		uint32_t used = 0;
		const uint32_t n = len - done > UINT32_MAX ? UINT32_MAX : (uint32_t)(len - done);
		ocsd_datapath_resp_t r = ocsd_dt_process_data(tree, OCSD_OP_DATA, index + done, n, data + done, &used);
		done += used;
		if (OCSD_DATA_RESP_IS_FATAL(r)) {
			fatal->index = 0;
			fatal->chan = 0;
			fatal->msg[0] = 0;
			fatal->err = (int)ocsd_get_last_err(&fatal->index, &fatal->chan, fatal->msg, (int)sizeof(fatal->msg));
			return OCSD_FEED_FATAL;
		}
		if (OCSD_DATA_RESP_IS_WAIT(r))
			ocsd_dt_process_data(tree, OCSD_OP_FLUSH, 0, 0, NULL, NULL);
		if (used == 0 && ++stalls > 100)
			return OCSD_FEED_STUCK;
	}
	return OCSD_FEED_OK;
}

#endif
