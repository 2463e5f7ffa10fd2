/*
 * The ETMv3 segment memo grows (etm3_flow.c, seg_grow) when its working
 * set does not fit: a long cycle-accurate trace of real kernel code (the
 * TC2 DS-5 list of source 0x10, generated over and over, with periodic
 * I-syncs that cut the header runs at shifting places) must make the
 * table grow, and the records must stay exactly those of a decode without
 * the memo, before, across and after the growth.
 */
#include "check.h"
#include "ds5_dump.h"
#include "flow.h"
#include "gen.h"

struct bytes_buf {
	uint8_t *data;
	size_t n, cap;
};

static int sink(void *ctx, const uint8_t *b, size_t n)
{
	struct bytes_buf *bb = ctx;
	if (bb->n + n > bb->cap) {
		size_t ncap = (bb->cap + n) * 2;
		uint8_t *nd = realloc(bb->data, ncap);
		if (!nd)
			return CSD_ENOMEM;
		bb->data = nd;
		bb->cap = ncap;
	}
	memcpy(bb->data + bb->n, b, n);
	bb->n += n;
	return 0;
}

/* Decode all of bb in pieces of 64 KiB; records into *out (grown). */
static csd_flow_decoder *decode(const struct bytes_buf *bb, const struct csd_trace_config *tc, csd_image *img,
				uint32_t flags, struct csd_record **out, size_t *nout)
{
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = *tc;
	fc.image = img;
	fc.flags = flags;
	csd_flow_decoder *fd = csd_flow_new(&fc);
	CHECK(fd != NULL);
	if (!fd)
		return NULL;
	size_t cap = 1 << 16, n = 0, off = 0;
	struct csd_record *recs = malloc(cap * sizeof(*recs));
	CHECK(recs != NULL);
	for (;;) {
		if (off < bb->n) {
			size_t piece = bb->n - off < 65536 ? bb->n - off : 65536;
			struct csd_bytes in = { .data = bb->data + off, .size = piece, .base = off };
			CHECK_EQ(csd_flow_feed(fd, &in), 0);
			off += piece;
		} else {
			csd_flow_finish(fd);
		}
		struct csd_record r;
		int rc;
		while ((rc = csd_flow_next(fd, &r)) == 0) {
			if (n == cap) {
				cap *= 2;
				struct csd_record *nr = realloc(recs, cap * sizeof(*recs));
				CHECK(nr != NULL);
				if (!nr)
					break;
				recs = nr;
			}
			recs[n++] = r;
		}
		if (rc == CSD_EEOS)
			break;
	}
	*out = recs;
	*nout = n;
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
	struct bytes_buf bb = { 0 };
	struct csdi_gen *g = csdi_gen_new(&gc, img, sink, &bb);
	CHECK(g != NULL);
	while (g && bb.n < (size_t)3 << 20) {
		for (size_t i = 0; i < d.n; i++)
			if (d.rec[i].kind == DS5_INSN && csdi_gen_insn(g, d.rec[i].addr, CSD_ISA_THUMB) < 0)
				break;
	}
	if (g)
		CHECK_EQ(csdi_gen_finish(g), 0);

	struct csd_record *a = NULL, *b = NULL;
	size_t na = 0, nb = 0;
	csd_flow_decoder *with = decode(&bb, &gc.trace, img, 0, &a, &na);
	csd_flow_decoder *without = decode(&bb, &gc.trace, img, CSD_FLOW_NO_MEMO, &b, &nb);
	printf("%zu trace bytes, %zu / %zu records, memo of 2^%u entries at the end\n", bb.n, na, nb,
	       with ? with->u.etm3.seg_log2 : 0);
	CHECK(with && with->u.etm3.segs != NULL && with->u.etm3.seg_log2 == 14);
	CHECK_EQ(na, nb);
	size_t diff = 0;
	for (size_t i = 0; i < na && i < nb; i++) {
		if (memcmp(&a[i], &b[i], sizeof(a[i])) != 0 && diff++ < 3)
			fprintf(stderr, "record %zu differs: type %u at %llu / type %u at %llu\n", i, a[i].type,
				(unsigned long long)a[i].offset, b[i].type, (unsigned long long)b[i].offset);
	}
	CHECK_EQ(diff, 0);
	csd_flow_free(with);
	csd_flow_free(without);
	free(a);
	free(b);
	csdi_gen_free(g);
	free(bb.data);
	ds5_free(&d);
	csd_image_free(img);
	return check_done("test_memo_grow");
}
