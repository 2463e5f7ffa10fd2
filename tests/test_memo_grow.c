/*
 * The ETMv3 segment memo grows (etm3_flow.c, seg_grow) when its working
 * set does not fit: a long cycle-accurate trace of real kernel code (the
 * TC2 DS-5 list of source 0x10, generated over and over, with periodic
 * I-syncs that cut the header runs at shifting places) must make the
 * table grow, and the records must stay exactly those of a decode without
 * the memo, before, across and after the growth.
 */
#include "byte_sink.h"
#include "check.h"
#include "ds5_dump.h"
#include "flow.h"
#include "flow_run.h"
#include "gen.h"

/* Decode all of bb in pieces of 64 KiB, the records into *fr; returns
 * the decoder (for its memo's state). */
static csd_flow_decoder *decode(const struct byte_sink *bb, const struct csd_trace_config *tc, csd_image *img,
				uint32_t flags, struct flow_run *fr)
{
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = tc;
	fc.image = img;
	fc.flags = flags;
	csd_flow_decoder *fd = csd_flow_new(&fc);
	CHECK(fd != NULL);
	if (!fd)
		return NULL;
	for (size_t off = 0; off < bb->n;) {
		const size_t piece = bb->n - off < 65536 ? bb->n - off : 65536;
		struct csd_bytes in = { .data = bb->data + off, .size = piece, .base = off };
		CHECK_EQ(csd_flow_feed(fd, &in), 0);
		off += piece;
		flow_run_drain(fd, fr, FLOW_RUN_NEXT);
	}
	csd_flow_finish(fd);
	flow_run_drain(fd, fr, FLOW_RUN_NEXT);
	return fd;
}

int main(void)
{
	const char *dir = getenv("CSD_SHARED");
	if (!dir) {
		fprintf(stderr, "CSD_SHARED is not set (run through make test)\n");
		return 1;
	}
	char path[4096];
	snprintf(path, sizeof(path), "%s/traces/TC2/kernel_dump.bin", dir);
	csd_image *img = csd_image_new();
	CHECK_EQ(csd_image_add_file(img, path, 0, 0, 0xC0008000u), 0);
	struct ds5_dump d;
	snprintf(path, sizeof(path), "%s/traces/TC2/ds5-dumps/etmv3_0x10.txt", dir);
	CHECK_EQ(ds5_load(path, &d), 0);

	/* TC2's ETM_0: cycle-accurate, timestamps. */
	struct csdi_gen_config gc;
	memset(&gc, 0, sizeof(gc));
	gc.trace.size = sizeof(gc.trace);
	gc.trace.protocol = CSD_PROTO_ETM3;
	gc.trace.etmcr = 0x10001000;
	gc.trace.etmccer = 0x344008F2;
	gc.trace.etmidr = 0x410CF250;
	gc.trace.trace_id = 0x10;
	gc.sync_period = 1000;
	gc.context_id = 0x4a5b6c7d;
	struct byte_sink bb = { 0 };
	struct csdi_gen *g = csdi_gen_new(&gc, img, byte_sink_append, &bb);
	CHECK(g != NULL);
	/* Passes over the list until 3 MiB of trace; a bounded number of
	 * them, and none after one that generated nothing or failed, so that
	 * a generator that stops producing fails the test instead of
	 * looping. */
	int gen_failed = 0;
	for (unsigned pass = 0; g && !gen_failed && bb.n < (size_t)3 << 20 && pass < 4096; pass++) {
		const size_t before = bb.n;
		for (size_t i = 0; i < d.n && !gen_failed; i++)
			if (d.rec[i].kind == DS5_INSN && csdi_gen_insn(g, d.rec[i].addr, CSD_ISA_THUMB) < 0)
				gen_failed = 1;
		if (bb.n == before)
			gen_failed = 1;
	}
	CHECK(!gen_failed);
	CHECK(bb.n >= (size_t)3 << 20);
	if (g)
		CHECK_EQ(csdi_gen_finish(g), 0);

	struct flow_run a = { 0 }, b = { 0 };
	csd_flow_decoder *with = decode(&bb, &gc.trace, img, CSD_FLOW_MEMO_AT_ONCE, &a);
	csd_flow_decoder *without = decode(&bb, &gc.trace, img, CSD_FLOW_NO_MEMO, &b);
	printf("%zu trace bytes, %zu / %zu records, memo of 2^%u entries at the end\n", bb.n, a.n, b.n,
	       with ? with->u.etm3.seg_log2 : 0);
	CHECK(with && with->u.etm3.segs != NULL && with->u.etm3.seg_log2 == 14);
	CHECK_EQ(a.n, b.n);
	size_t diff = 0;
	for (size_t i = 0; i < a.n && i < b.n; i++) {
		if (memcmp(&a.rec[i], &b.rec[i], sizeof(a.rec[i])) != 0 && diff++ < 3)
			fprintf(stderr, "record %zu differs: type %u at %llu / type %u at %llu\n", i, a.rec[i].type,
				(unsigned long long)a.rec[i].offset, b.rec[i].type, (unsigned long long)b.rec[i].offset);
	}
	CHECK_EQ(diff, 0);
	csd_flow_free(with);
	csd_flow_free(without);
	flow_run_free(&a);
	flow_run_free(&b);
	csdi_gen_free(g);
	free(bb.data);
	ds5_free(&d);
	csd_image_free(img);
	return check_done("test_memo_grow");
}
