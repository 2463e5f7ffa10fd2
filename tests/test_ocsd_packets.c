/*
 * Packet counts against OpenCSD: for every ETMv3 / PTM source of every
 * shared capture, the number of synchronised packets our decoders produce
 * must be within 2% of what OpenCSD's packet processors produce from the
 * same bytes and registers.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>

#include "check.h"
#include "ocsd_ref.h"

/* Our synchronised packet count for one source: frames -> packets. */
static uint64_t csdec_count(const uint8_t *buf, size_t len, uint32_t frame_format, const struct csd_trace_config *cfg,
			    uint64_t *errors)
{
	struct csd_frame_config fc = { .size = sizeof(fc), .format = frame_format, .raw_id = cfg->trace_id };
	csd_frame_decoder *fd = csd_frame_new(&fc);
	csd_etm3_pkt_decoder *e = cfg->protocol == CSD_PROTO_ETM3 ? csd_etm3_pkt_new(cfg) : NULL;
	csd_ptm_pkt_decoder *p = cfg->protocol == CSD_PROTO_PTM ? csd_ptm_pkt_new(cfg) : NULL;
	uint64_t count = 0;
	struct csd_frame_out fo;
	struct csd_packet pkt;
	CHECK(fd && (e || p));
	if (!fd || !(e || p))
		return 0;
	*errors = 0;
	/* Feed in uneven pieces so packets and frames straddle feeds. */
	size_t off = 0, piece = 1;
	int finishing = 0;
	for (;;) {
		if (off < len) {
			size_t n = len - off < piece ? len - off : piece;
			CHECK_EQ(csd_frame_feed(fd, buf + off, n, off), 0);
			off += n;
			piece = piece * 7 % 4093 + 1;
		} else if (!finishing) {
			csd_frame_finish(fd);
			finishing = 1;
		} else {
			break;
		}
		while (csd_frame_next(fd, &fo) == 0) {
			if (fo.event != CSD_FRAME_DATA || fo.bytes.id != cfg->trace_id)
				continue;
			CHECK_EQ(e ? csd_etm3_pkt_feed(e, &fo.bytes) : csd_ptm_pkt_feed(p, &fo.bytes), 0);
			while ((e ? csd_etm3_pkt_next(e, &pkt) : csd_ptm_pkt_next(p, &pkt)) == 0) {
				if (pkt.type == CSD_PKT_ERROR)
					(*errors)++;
				else if (pkt.type != CSD_PKT_NOSYNC)
					count++;
			}
		}
	}
	e ? csd_etm3_pkt_finish(e) : csd_ptm_pkt_finish(p);
	while ((e ? csd_etm3_pkt_next(e, &pkt) : csd_ptm_pkt_next(p, &pkt)) == 0) {
		if (pkt.type == CSD_PKT_ERROR)
			(*errors)++;
		else if (pkt.type != CSD_PKT_NOSYNC)
			count++;
	}
	csd_etm3_pkt_free(e);
	csd_ptm_pkt_free(p);
	csd_frame_free(fd);
	return count;
}

static void compare_snapshot(const char *name)
{
	char dir[1024], err[512];
	snprintf(dir, sizeof(dir), "%s/traces/%s", check_shared_dir(), name);
	csd_snapshot *snap = NULL;
	int rc = csd_snapshot_open(dir, &snap, err, sizeof(err));
	CHECK_EQ(rc, 0);
	if (rc) {
		fprintf(stderr, "%s: %s\n", dir, err);
		return;
	}
	for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++) {
		const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, b);
		size_t len = 0;
		uint8_t *data = check_read_file(buf->path, &len);
		CHECK(data != NULL);
		if (!data)
			continue;
		struct ocsd_ref_source ref[OCSD_REF_MAX_SOURCES];
		size_t nref = 0;
		memset(ref, 0, sizeof(ref));
		for (size_t s = 0; s < csd_snapshot_num_sources(snap) && nref < OCSD_REF_MAX_SOURCES; s++) {
			const struct csd_snapshot_source *src = csd_snapshot_source(snap, s);
			if (src->buffer != (int)b)
				continue;
			if (src->config.protocol != CSD_PROTO_ETM3 && src->config.protocol != CSD_PROTO_PTM)
				continue;
			ref[nref++].cfg = src->config;
		}
		CHECK(nref > 0);
		CHECK_EQ(ocsd_ref_count_packets(data, len, buf->frame_format, ref, nref), 0);
		for (size_t i = 0; i < nref; i++) {
			uint64_t errors = 0;
			uint64_t ours = csdec_count(data, len, buf->frame_format, &ref[i].cfg, &errors);
			uint64_t theirs = ref[i].packets;
			uint64_t diff = ours > theirs ? ours - theirs : theirs - ours;
			printf("%s id 0x%02x: csdec %llu packets (%llu errors), OpenCSD %llu (%llu errors)\n", name,
			       ref[i].cfg.trace_id, (unsigned long long)ours, (unsigned long long)errors,
			       (unsigned long long)theirs, (unsigned long long)ref[i].errors);
			CHECK(diff * 100 <= theirs * 2);
			CHECK_EQ(errors, ref[i].errors);
		}
		free(data);
	}
	csd_snapshot_free(snap);
}

int main(void)
{
	/* Every capture under traces/, so captures added later are checked
	 * the same way; TC2 and trace_cov_a15 at least. */
	char root[1024];
	snprintf(root, sizeof(root), "%s/traces", check_shared_dir());
	DIR *d = opendir(root);
	CHECK(d != NULL);
	int n = 0, tc2 = 0;
	struct dirent *de;
	while (d && (de = readdir(d))) {
		char ini[2048];
		snprintf(ini, sizeof(ini), "%s/%s/snapshot.ini", root, de->d_name);
		FILE *f = de->d_name[0] == '.' ? NULL : fopen(ini, "r");
		if (!f)
			continue;
		fclose(f);
		compare_snapshot(de->d_name);
		tc2 |= strcmp(de->d_name, "TC2") == 0;
		n++;
	}
	if (d)
		closedir(d);
	CHECK(n >= 2 && tc2);
	return check_done("test_ocsd_packets");
}
