/* test_frame.c - frame demultiplexer and frame encoder.
 *
 * Hand-built frames follow the CoreSight trace formatter rules: even bytes
 * are data (bit 0 from auxiliary byte 15, bit i for byte 2i) or an ID change
 * (bit 0 set, ID in 7:1; auxiliary bit 1 = the next byte still belongs to the
 * old ID); odd bytes are data; ID 0 is null trace, 0x7D trigger, 0x70-0x7F
 * otherwise reserved; FSYNC = FF FF FF 7F, HSYNC = FF 7F. */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "byte_sink.h"
#include "check.h"
#include "csdec.h"
#include "frame_enc.h"
#include "port_edit.h"
#include "../fuzz/pkt_same.h"

/* ---- collecting decoder output --------------------------------------- */

#define MAX_EV 256

struct ev {
	uint32_t event;
	uint64_t offset;
	const char *reason;
};

struct result {
	struct ev ev[MAX_EV];   /* SYNC and ERROR events in order */
	size_t n_ev;
	size_t n_ev_lost;       /* events beyond MAX_EV (garbage input) */
	size_t n_data_events;
	size_t n_bytes;         /* data bytes delivered so far, all IDs */
	size_t before[MAX_EV];  /* n_bytes when event i came */
	size_t max_item;        /* largest CSD_FRAME_DATA */
	uint8_t *bytes[128];
	uint64_t *offs[128];
	size_t len[128], cap[128];
	int bad;                /* API misbehaviour seen */
};

static void result_free(struct result *r)
{
	for (int i = 0; i < 128; i++) {
		free(r->bytes[i]);
		free(r->offs[i]);
	}
	memset(r, 0, sizeof(*r));
}

static void take(struct result *r, const struct csd_frame_out *o)
{
	if (o->event != CSD_FRAME_DATA) {
		if (o->event == CSD_FRAME_ERROR && !o->reason)
			r->bad++;
		if (r->n_ev < MAX_EV) {
			r->before[r->n_ev] = r->n_bytes;
			r->ev[r->n_ev++] = (struct ev){ o->event, o->offset, o->reason };
		}
		else
			r->n_ev_lost++;
		return;
	}
	const struct csd_bytes *b = &o->bytes;
	if (b->id >= 128 || b->size == 0 || !b->data) {
		r->bad++;
		return;
	}
	r->n_data_events++;
	unsigned id = b->id;
	if (r->len[id] + b->size > r->cap[id]) {
		size_t cap = (r->len[id] + b->size) * 2;
		r->bytes[id] = realloc(r->bytes[id], cap);
		r->offs[id] = realloc(r->offs[id], cap * sizeof(uint64_t));
		if (!r->bytes[id] || !r->offs[id])
			abort();
		r->cap[id] = cap;
	}
	for (size_t i = 0; i < b->size; i++) {
		r->bytes[id][r->len[id] + i] = b->data[i];
		r->offs[id][r->len[id] + i] = b->offsets ? b->offsets[i] : b->base + i;
	}
	if (b->offsets && b->base != b->offsets[0])
		r->bad++;
	r->len[id] += b->size;
	r->n_bytes += b->size;
	if (b->size > r->max_item)
		r->max_item = b->size;
}

static void drain(csd_frame_decoder *dec, struct result *r, int want)
{
	struct csd_frame_out o;
	int rc;

	for (int guard = 0; guard < 10000000; guard++) {
		rc = csd_frame_next(dec, &o);
		if (rc != 0)
			break;
		take(r, &o);
	}
	if (rc != want)
		r->bad++;
}

static void decode_split_flags(uint32_t format, uint32_t flags, const uint8_t *buf, size_t n, const size_t *splits,
			       size_t nsplits, uint64_t base, struct result *r)
{
	struct csd_frame_config cfg = { .size = sizeof(cfg), .format = format, .raw_id = 0x42, .flags = flags };
	csd_frame_decoder *dec = csd_frame_new(&cfg);
	size_t pos = 0;

	memset(r, 0, sizeof(*r));
	if (!dec) {
		r->bad++;
		return;
	}
	for (size_t s = 0; s <= nsplits; s++) {
		size_t end = s < nsplits ? splits[s] : n;
		if (end < pos || end > n)
			continue;
		if (csd_frame_feed(dec, buf + pos, end - pos, base + pos) != 0)
			r->bad++;
		drain(dec, r, CSD_EAGAIN);
		pos = end;
	}
	csd_frame_finish(dec);
	drain(dec, r, CSD_EEOS);
	csd_frame_free(dec);
}

/*
 * CSD_FRAME_BY_ID delivers the same bytes per ID, with the same offsets,
 * and the same events in the same order; each event comes after every
 * byte before it in the capture and at most the rest of its frame (15
 * bytes) later; no batch exceeds CSD_FRAME_BATCH + 15 bytes.
 */
static void check_by_id(const struct result *a, const struct result *b)
{
	CHECK_EQ(b->bad, a->bad);
	CHECK_EQ(b->n_ev, a->n_ev);
	CHECK_EQ(b->n_ev_lost, a->n_ev_lost);
	CHECK(b->max_item <= CSD_FRAME_BATCH + 15);
	for (size_t i = 0; i < a->n_ev && i < b->n_ev; i++) {
		CHECK_EQ(b->ev[i].event, a->ev[i].event);
		CHECK_EQ(b->ev[i].offset, a->ev[i].offset);
		CHECK(strcmp(a->ev[i].reason ? a->ev[i].reason : "", b->ev[i].reason ? b->ev[i].reason : "") == 0);
		CHECK(b->before[i] >= a->before[i] && b->before[i] <= a->before[i] + 15);
	}
	for (int id = 0; id < 128; id++) {
		CHECK_EQ(b->len[id], a->len[id]);
		if (a->len[id] && a->len[id] == b->len[id]) {
			CHECK(memcmp(a->bytes[id], b->bytes[id], a->len[id]) == 0);
			CHECK(memcmp(a->offs[id], b->offs[id], a->len[id] * sizeof(uint64_t)) == 0);
		}
	}
}

/* Decode buf, fed in pieces ending at the given split points; checked
 * against the decode with CSD_FRAME_BY_ID. */
static void decode_split(uint32_t format, const uint8_t *buf, size_t n, const size_t *splits,
			 size_t nsplits, uint64_t base, struct result *r)
{
	struct result by_id;
	decode_split_flags(format, 0, buf, n, splits, nsplits, base, r);
	decode_split_flags(format, CSD_FRAME_BY_ID, buf, n, splits, nsplits, base, &by_id);
	if (format != CSD_FRAME_RAW)
		check_by_id(r, &by_id);
	result_free(&by_id);
}

static void decode(uint32_t format, const uint8_t *buf, size_t n, struct result *r)
{
	decode_split(format, buf, n, NULL, 0, 0, r);
}

static int same_result(const struct result *a, const struct result *b)
{
	if (a->n_ev != b->n_ev || a->n_ev_lost || b->n_ev_lost || a->bad || b->bad)
		return 0;
	for (size_t i = 0; i < a->n_ev; i++)
		if (a->ev[i].event != b->ev[i].event || a->ev[i].offset != b->ev[i].offset ||
		    strcmp(a->ev[i].reason ? a->ev[i].reason : "", b->ev[i].reason ? b->ev[i].reason : ""))
			return 0;
	for (int id = 0; id < 128; id++) {
		if (a->len[id] != b->len[id])
			return 0;
		if (a->len[id] && (memcmp(a->bytes[id], b->bytes[id], a->len[id]) ||
				   memcmp(a->offs[id], b->offs[id], a->len[id] * sizeof(uint64_t))))
			return 0;
	}
	return 1;
}

static size_t total_bytes(const struct result *r)
{
	size_t t = 0;
	for (int id = 0; id < 128; id++)
		t += r->len[id];
	return t;
}

#define CHECK_BYTES(r, id, ...) do { \
	static const uint8_t exp_[] = { __VA_ARGS__ }; \
	CHECK_EQ((r)->len[id], sizeof(exp_)); \
	CHECK((r)->len[id] == sizeof(exp_) && memcmp((r)->bytes[id], exp_, sizeof(exp_)) == 0); \
} while (0)

#define CHECK_OFFS(r, id, ...) do { \
	static const uint64_t exp_[] = { __VA_ARGS__ }; \
	CHECK_EQ((r)->len[id], sizeof(exp_) / sizeof(exp_[0])); \
	CHECK((r)->len[id] == sizeof(exp_) / sizeof(exp_[0]) && \
	      memcmp((r)->offs[id], exp_, sizeof(exp_)) == 0); \
} while (0)

/* ---- hand-built frames ------------------------------------------------ */

/* Frame 0: ID 0x10 in byte 0 (immediate), then 14 data bytes; auxiliary bit
 * 1 gives byte 2 (0xA2) bit 0 = 1, so it decodes as 0xA3. */
static const uint8_t frame_a[16] = {
	0x21, 0xA1, 0xA2, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7,
	0xA8, 0xA9, 0xAA, 0xAB, 0xAC, 0xAD, 0xAE, 0x02,
};

/* Frame 1 (ID 0x10 current):
 *   byte 0  = ID 0x11, aux bit 0 = 1: byte 1 (0xB1) still belongs to 0x10
 *   byte 2  = data 0xB2 for 0x11, byte 3 = 0xB3
 *   byte 4  = data 0xB4, aux bit 2 = 1 -> 0xB5; byte 5 = 0xB5
 *   byte 6  = ID 0x12, aux bit 3 = 0: byte 7 (0xB7) belongs to 0x12
 *   byte 8  = ID 0x12 again, aux bit 4 = 1: no change, byte 9 (0xB9) to 0x12
 *   byte 10 = ID 0x00 (null), byte 11 and byte 12 are discarded
 *   byte 14 = ID 0x10: applies from the next frame
 * aux = b0000 0101 | bit 4 = 0x15. */
static const uint8_t frame_b[16] = {
	0x23, 0xB1, 0xB2, 0xB3, 0xB4, 0xB5, 0x25, 0xB7,
	0x25, 0xB9, 0x01, 0xBB, 0xBC, 0xBD, 0x21, 0x15,
};

/* Frame 2: all data for the ID set by byte 14 of frame 1 (0x10); aux 0x80
 * sets bit 0 of byte 14. */
static const uint8_t frame_c[16] = {
	0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7,
	0xC8, 0xC9, 0xCA, 0xCB, 0xCC, 0xCD, 0xCE, 0x80,
};

static void test_hand_frames(void)
{
	uint8_t buf[48];
	struct result r;

	memcpy(buf, frame_a, 16);
	memcpy(buf + 16, frame_b, 16);
	memcpy(buf + 32, frame_c, 16);
	decode(CSD_FRAME_ALIGNED, buf, sizeof(buf), &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 0);
	CHECK_BYTES(&r, 0x10, 0xA1, 0xA3, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB,
		    0xAC, 0xAD, 0xAE, /* frame 1 byte 1 */ 0xB1,
		    0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB,
		    0xCC, 0xCD, 0xCF);
	CHECK_OFFS(&r, 0x10, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 17,
		   32, 33, 34, 35, 36, 37, 38, 39, 40, 41, 42, 43, 44, 45, 46);
	CHECK_BYTES(&r, 0x11, 0xB2, 0xB3, 0xB5, 0xB5);
	CHECK_OFFS(&r, 0x11, 18, 19, 20, 21);
	CHECK_BYTES(&r, 0x12, 0xB7, 0xB9);
	CHECK_OFFS(&r, 0x12, 23, 25);
	CHECK_EQ(r.len[0], 0);
	CHECK_EQ(total_bytes(&r), 30 + 4 + 2);
	result_free(&r);

	/* The same frames at capture offset 1000. */
	decode_split(CSD_FRAME_ALIGNED, buf, sizeof(buf), NULL, 0, 1000, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.len[0x12], 2);
	if (r.len[0x12] == 2) {
		CHECK_EQ(r.offs[0x12][0], 1023);
		CHECK_EQ(r.offs[0x12][1], 1025);
	}
	result_free(&r);
}

/* Data before the first ID byte has no known source and is dropped. */
static void test_unknown_id_start(void)
{
	static const uint8_t f[16] = {
		0x50, 0x51, 0x52, 0x53, /* unknown source */
		0x31, 0x61,             /* ID 0x18, byte 5 for 0x18 (aux bit 2 = 0) */
		0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6A, 0x00,
	};
	struct result r;

	decode(CSD_FRAME_ALIGNED, f, 16, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 0);
	CHECK_EQ(total_bytes(&r), 10);
	CHECK_BYTES(&r, 0x18, 0x61, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6A);
	result_free(&r);

	/* A delayed change at the very start: the byte after the ID belongs to
	 * the (unknown) previous source and is dropped. */
	uint8_t g[16];
	memcpy(g, f, 16);
	g[15] = 0x04;           /* aux bit 2: the ID at byte 4 is delayed */
	decode(CSD_FRAME_ALIGNED, g, 16, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_BYTES(&r, 0x18, 0x62, 0x63, 0x64, 0x65, 0x66, 0x67, 0x68, 0x69, 0x6A);
	result_free(&r);
}

static void test_reserved_ids(void)
{
	/* ID 0x10, 1 byte; ID 0x71 (reserved: error, data dropped); ID 0x7D
	 * (trigger: dropped, no error); ID 0x10 again; ID 0x7F (byte 0xFF:
	 * reserved); byte 14 = ID 0x00 (null). */
	static const uint8_t f[16] = {
		0x21, 0x01, 0xE3, 0x02, 0xFB, 0x03, 0x21, 0x04,
		0x06, 0x07, 0xFF, 0x08, 0x0A, 0x0B, 0x01, 0x00,
	};
	/* Then a frame whose data belongs to null ID 0 (dropped) until ID 0x10
	 * in byte 6. */
	static const uint8_t g[16] = {
		0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x21, 0x11,
		0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18, 0x00,
	};
	uint8_t buf[32];
	struct result r;

	memcpy(buf, f, 16);
	memcpy(buf + 16, g, 16);
	decode(CSD_FRAME_ALIGNED, buf, 32, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 2);
	CHECK_EQ(r.ev[0].event, CSD_FRAME_ERROR);
	CHECK_EQ(r.ev[0].offset, 2);
	CHECK_EQ(r.ev[1].event, CSD_FRAME_ERROR);
	CHECK_EQ(r.ev[1].offset, 10);
	CHECK(r.ev[0].reason && strstr(r.ev[0].reason, "reserved"));
	CHECK_BYTES(&r, 0x10, 0x01, 0x04, 0x06, 0x07, 0x11, 0x12, 0x13, 0x14, 0x15, 0x16, 0x17, 0x18);
	CHECK_OFFS(&r, 0x10, 1, 7, 8, 9, 23, 24, 25, 26, 27, 28, 29, 30);
	CHECK_EQ(total_bytes(&r), 12);
	result_free(&r);
}

static void test_split_feeds(void)
{
	uint8_t buf[64];
	struct result whole, part;

	memcpy(buf, frame_a, 16);
	memcpy(buf + 16, frame_b, 16);
	memcpy(buf + 32, frame_c, 16);
	memcpy(buf + 48, frame_b, 16);
	decode(CSD_FRAME_ALIGNED, buf, sizeof(buf), &whole);
	CHECK_EQ(whole.bad, 0);
	int all_same = 1;
	for (size_t s = 0; s <= sizeof(buf); s++) {
		size_t splits[1] = { s };
		decode_split(CSD_FRAME_ALIGNED, buf, sizeof(buf), splits, 1, 0, &part);
		if (!same_result(&whole, &part))
			all_same = 0;
		result_free(&part);
	}
	CHECK(all_same);

	/* Byte by byte. */
	size_t splits[64];
	for (size_t i = 0; i < 64; i++)
		splits[i] = i;
	decode_split(CSD_FRAME_ALIGNED, buf, sizeof(buf), splits, 64, 0, &part);
	CHECK(same_result(&whole, &part));
	result_free(&part);
	result_free(&whole);
}

static void test_truncated(void)
{
	uint8_t buf[16 + 5];
	struct result r;

	memcpy(buf, frame_a, 16);
	memcpy(buf + 16, frame_c, 5);
	decode(CSD_FRAME_ALIGNED, buf, sizeof(buf), &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.len[0x10], 14);
	CHECK_EQ(r.n_ev, 1);
	CHECK_EQ(r.ev[0].event, CSD_FRAME_TRUNCATED);
	CHECK_EQ(r.ev[0].offset, 16);
	CHECK(r.ev[0].reason && strstr(r.ev[0].reason, "incomplete"));
	result_free(&r);
}

static const uint8_t fsync[4] = { 0xFF, 0xFF, 0xFF, 0x7F };

/* Aligned buffers: a frame of four FSYNCs separates discontinuous blocks. */
static void test_aligned_fsync_frame(void)
{
	uint8_t buf[16 * 5];
	struct result r;

	memcpy(buf, frame_a, 16);
	for (int i = 0; i < 8; i++)
		memcpy(buf + 16 + 4 * i, fsync, 4);     /* two FSYNC frames: one event */
	memcpy(buf + 48, frame_c, 16);                  /* no ID yet: dropped */
	memcpy(buf + 64, frame_a, 16);
	decode(CSD_FRAME_ALIGNED, buf, sizeof(buf), &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 1);
	CHECK_EQ(r.ev[0].event, CSD_FRAME_SYNC);
	CHECK_EQ(r.ev[0].offset, 16);
	CHECK_EQ(r.len[0x10], 28);
	CHECK_EQ(total_bytes(&r), 28);
	if (r.len[0x10] == 28) {
		CHECK_EQ(r.offs[0x10][13], 14);
		CHECK_EQ(r.offs[0x10][14], 65);
	}
	result_free(&r);
}

/* ---- port format ------------------------------------------------------ */

static size_t put(uint8_t *buf, size_t pos, const uint8_t *p, size_t n)
{
	memcpy(buf + pos, p, n);
	return pos + n;
}

static void test_port_basic(void)
{
	static const uint8_t garbage[3] = { 0xAA, 0xBB, 0xCC };
	static const uint8_t hsync[2] = { 0xFF, 0x7F };
	uint8_t buf[128];
	size_t n = 0;
	struct result r;

	n = put(buf, n, garbage, 3);            /* 0..2 */
	n = put(buf, n, fsync, 4);              /* 3..6 */
	n = put(buf, n, frame_a, 16);           /* 7..22 */
	n = put(buf, n, fsync, 4);              /* 23..26 */
	n = put(buf, n, fsync, 4);              /* 27..30: same run, no event */
	n = put(buf, n, frame_c, 2);            /* 31, 32 */
	n = put(buf, n, hsync, 2);              /* 33, 34 */
	n = put(buf, n, frame_c + 2, 6);        /* 35..40 */
	n = put(buf, n, hsync, 2);              /* 41, 42 */
	n = put(buf, n, hsync, 2);              /* 43, 44 */
	n = put(buf, n, frame_c + 8, 8);        /* 45..52 */
	n = put(buf, n, hsync, 2);              /* 53, 54: between frames */
	n = put(buf, n, fsync, 4);              /* 55..58 */
	decode(CSD_FRAME_PORT, buf, n, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 4);
	CHECK_EQ(r.ev[0].event, CSD_FRAME_ERROR);
	CHECK_EQ(r.ev[0].offset, 0);
	CHECK_EQ(r.ev[1].event, CSD_FRAME_SYNC);
	CHECK_EQ(r.ev[1].offset, 3);
	CHECK_EQ(r.ev[2].event, CSD_FRAME_SYNC);
	CHECK_EQ(r.ev[2].offset, 23);
	CHECK_EQ(r.ev[3].event, CSD_FRAME_SYNC);
	CHECK_EQ(r.ev[3].offset, 55);
	/* The periodic FSYNC keeps the current ID (0x10) for frame c. */
	CHECK_BYTES(&r, 0x10, 0xA1, 0xA3, 0xA3, 0xA4, 0xA5, 0xA6, 0xA7, 0xA8, 0xA9, 0xAA, 0xAB,
		    0xAC, 0xAD, 0xAE,
		    0xC0, 0xC1, 0xC2, 0xC3, 0xC4, 0xC5, 0xC6, 0xC7, 0xC8, 0xC9, 0xCA, 0xCB,
		    0xCC, 0xCD, 0xCF);
	CHECK_OFFS(&r, 0x10, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21,
		   31, 32, 35, 36, 37, 38, 39, 40, 45, 46, 47, 48, 49, 50, 51);
	CHECK_EQ(total_bytes(&r), 29);

	/* Every split position gives the same result. */
	int all_same = 1;
	for (size_t s = 0; s <= n; s++) {
		for (size_t t = s; t <= n; t += 3) {
			size_t splits[2] = { s, t };
			struct result part;
			decode_split(CSD_FRAME_PORT, buf, n, splits, 2, 0, &part);
			if (!same_result(&r, &part))
				all_same = 0;
			result_free(&part);
		}
	}
	CHECK(all_same);
	result_free(&r);
}

static void test_port_realign(void)
{
	uint8_t buf[128], frame_even[16];
	size_t n = 0;
	struct result r;

	/* A frame of even data bytes only for ID 0x10: with one byte lost it
	 * still parses as data, which is what a decoder cannot tell apart. */
	frame_even[0] = 0x21;
	for (int i = 1; i < 15; i++)
		frame_even[i] = (uint8_t)(0x20 + 2 * i);
	frame_even[15] = 0;
	n = put(buf, n, fsync, 4);              /* 0..3 */
	n = put(buf, n, frame_a, 16);           /* 4..19 */
	n = put(buf, n, frame_even, 5);         /* 20..24 */
	n = put(buf, n, frame_even + 6, 10);    /* 25..34: byte 5 lost */
	n = put(buf, n, fsync, 4);              /* 35..38: now off the grid */
	n = put(buf, n, frame_c, 16);           /* 39..54: ID unknown again, dropped */
	n = put(buf, n, frame_b, 16);           /* 55..70 */
	decode(CSD_FRAME_PORT, buf, n, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 3);
	CHECK_EQ(r.ev[0].event, CSD_FRAME_SYNC);
	CHECK_EQ(r.ev[0].offset, 0);
	CHECK_EQ(r.ev[1].event, CSD_FRAME_ERROR);
	CHECK_EQ(r.ev[1].offset, 35);
	CHECK_EQ(r.ev[2].event, CSD_FRAME_SYNC);
	CHECK_EQ(r.ev[2].offset, 35);
	/* Frame b after the realignment decodes exactly; frame c is dropped. */
	CHECK_BYTES(&r, 0x11, 0xB2, 0xB3, 0xB5, 0xB5);
	CHECK_OFFS(&r, 0x11, 57, 58, 59, 60);
	CHECK_BYTES(&r, 0x12, 0xB7, 0xB9);
	/* 14 bytes of frame a and 14 of the damaged frame, whose 16th byte
	 * was the first FF of the FSYNC, taken as its auxiliary byte. */
	CHECK_EQ(r.len[0x10], 14 + 14);
	result_free(&r);

	/* FSYNC in the middle of a frame, on the half-word grid. */
	n = 0;
	n = put(buf, n, fsync, 4);              /* 0..3 */
	n = put(buf, n, frame_a, 8);            /* 4..11 */
	n = put(buf, n, fsync, 4);              /* 12..15 */
	n = put(buf, n, frame_c, 16);           /* 16..31: ID forgotten, dropped */
	n = put(buf, n, frame_a, 16);           /* 32..47 */
	decode(CSD_FRAME_PORT, buf, n, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 3);
	CHECK_EQ(r.ev[1].event, CSD_FRAME_ERROR);
	CHECK_EQ(r.ev[1].offset, 4);
	CHECK_EQ(r.ev[2].event, CSD_FRAME_SYNC);
	CHECK_EQ(r.ev[2].offset, 12);
	CHECK_EQ(r.len[0x10], 14);
	if (r.len[0x10])
		CHECK_EQ(r.offs[0x10][0], 33);
	result_free(&r);

	/* 0xFF in an ID position: alignment lost until the next FSYNC. */
	uint8_t bad[16];
	memcpy(bad, frame_a, 16);
	bad[4] = 0xFF;
	bad[5] = 0x00;
	n = 0;
	n = put(buf, n, fsync, 4);              /* 0..3 */
	n = put(buf, n, bad, 16);               /* 4..19 */
	n = put(buf, n, frame_a, 16);           /* 20..35: not synchronised, dropped */
	n = put(buf, n, fsync, 4);              /* 36..39 */
	n = put(buf, n, frame_a, 16);           /* 40..55 */
	decode(CSD_FRAME_PORT, buf, n, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 3);
	CHECK_EQ(r.ev[1].event, CSD_FRAME_ERROR);
	CHECK_EQ(r.ev[1].offset, 8);
	CHECK_EQ(r.ev[2].event, CSD_FRAME_SYNC);
	CHECK_EQ(r.ev[2].offset, 36);
	CHECK_EQ(r.len[0x10], 14);
	result_free(&r);

	/* No FSYNC at all; and a truncated last frame. */
	decode(CSD_FRAME_PORT, frame_a, 16, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 1);
	CHECK_EQ(r.ev[0].event, CSD_FRAME_ERROR);
	CHECK_EQ(r.ev[0].offset, 0);
	CHECK_EQ(total_bytes(&r), 0);
	result_free(&r);

	n = 0;
	n = put(buf, n, fsync, 4);
	n = put(buf, n, frame_a, 16);
	n = put(buf, n, frame_c, 7);            /* 20..26 */
	decode(CSD_FRAME_PORT, buf, n, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 2);
	CHECK_EQ(r.ev[1].event, CSD_FRAME_TRUNCATED);
	CHECK_EQ(r.ev[1].offset, 20);
	CHECK_EQ(r.len[0x10], 14);
	result_free(&r);
}

static void test_raw(void)
{
	static const uint8_t data[5] = { 1, 2, 3, 4, 5 };
	struct csd_frame_config cfg = { .size = sizeof(cfg), .format = CSD_FRAME_RAW, .raw_id = 0x13 };
	csd_frame_decoder *dec = csd_frame_new(&cfg);
	struct csd_frame_out o;

	CHECK(dec != NULL);
	if (!dec)
		return;
	CHECK_EQ(csd_frame_next(dec, &o), CSD_EAGAIN);
	CHECK_EQ(csd_frame_feed(dec, data, 5, 500), 0);
	CHECK_EQ(csd_frame_feed(dec, data, 5, 500), CSD_EINVAL);    /* still pending */
	CHECK_EQ(csd_frame_next(dec, &o), 0);
	CHECK_EQ(o.event, CSD_FRAME_DATA);
	CHECK_EQ(o.bytes.id, 0x13);
	CHECK_EQ(o.bytes.size, 5);
	CHECK(o.bytes.data == data);
	CHECK(o.bytes.offsets == NULL);
	CHECK_EQ(o.bytes.base, 500);
	CHECK_EQ(csd_frame_next(dec, &o), CSD_EAGAIN);
	CHECK_EQ(csd_frame_feed(dec, NULL, 0, 505), 0);
	CHECK_EQ(csd_frame_next(dec, &o), CSD_EAGAIN);
	CHECK_EQ(csd_frame_finish(dec), 0);
	CHECK_EQ(csd_frame_next(dec, &o), CSD_EEOS);
	CHECK_EQ(csd_frame_next(dec, &o), CSD_EEOS);
	CHECK_EQ(csd_frame_feed(dec, data, 5, 0), CSD_EINVAL);      /* after finish */
	csd_frame_free(dec);
}

static void test_api(void)
{
	struct csd_frame_config cfg = { .size = sizeof(cfg), .format = 7 };
	struct csd_frame_out o;

	CHECK(csd_frame_new(NULL) == NULL);
	CHECK(csd_frame_new(&cfg) == NULL);
	cfg.format = CSD_FRAME_ALIGNED;
	cfg.size = 0;
	CHECK(csd_frame_new(&cfg) == NULL);
	/* An older, shorter struct (without raw_id) is accepted. */
	cfg.size = sizeof(size_t) + sizeof(uint32_t);
	csd_frame_decoder *dec = csd_frame_new(&cfg);
	CHECK(dec != NULL);
	CHECK_EQ(csd_frame_feed(NULL, frame_a, 16, 0), CSD_EINVAL);
	CHECK_EQ(csd_frame_feed(dec, NULL, 16, 0), CSD_EINVAL);
	CHECK_EQ(csd_frame_next(dec, NULL), CSD_EINVAL);
	CHECK_EQ(csd_frame_next(NULL, &o), CSD_EINVAL);
	CHECK_EQ(csd_frame_finish(NULL), CSD_EINVAL);
	CHECK_EQ(csd_frame_feed(dec, frame_a, 16, 0), 0);
	CHECK_EQ(csd_frame_next(dec, &o), 0);
	CHECK_EQ(o.event, CSD_FRAME_DATA);
	/* The data event was delivered but next() has not said EAGAIN yet. */
	CHECK_EQ(csd_frame_next(dec, &o), CSD_EAGAIN);
	CHECK_EQ(csd_frame_feed(dec, frame_a, 16, 16), 0);
	csd_frame_free(dec);
	csd_frame_free(NULL);
}

/* ---- encoder ---------------------------------------------------------- */

static void test_encoder_by_hand(void)
{
	struct byte_sink s = { 0 };
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config cfg = { CSD_FRAME_ALIGNED, 0, 0, byte_sink_append, &s };
	static const uint8_t d123[3] = { 1, 2, 3 }, d4[1] = { 4 }, d5[1] = { 5 };

	/* Immediate change at an even byte, null padding on flush. */
	CHECK_EQ(csdi_frame_enc_init(&enc, &cfg), 0);
	CHECK_EQ(csdi_frame_enc_data(&enc, 0x10, d123, 3), 0);
	CHECK_EQ(csdi_frame_enc_data(&enc, 0x20, d4, 1), 0);
	CHECK_EQ(s.n, 0);
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	static const uint8_t exp1[16] = { 0x21, 0x01, 0x02, 0x03, 0x41, 0x04, 0x01, 0, 0, 0, 0, 0, 0, 0, 0, 0x00 };
	CHECK_EQ(s.n, 16);
	CHECK(s.n == 16 && memcmp(s.data, exp1, 16) == 0);

	/* Change when the next free byte is odd: the even byte before it
	 * becomes the ID with its aux bit set and the old byte moves up. */
	s.n = 0;
	CHECK_EQ(csdi_frame_enc_init(&enc, &cfg), 0);
	CHECK_EQ(csdi_frame_enc_data(&enc, 0x10, d123, 2), 0);
	CHECK_EQ(csdi_frame_enc_data(&enc, 0x20, d5, 1), 0);
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	static const uint8_t exp2[16] = { 0x21, 0x01, 0x41, 0x02, 0x01, 0x05, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x06 };
	CHECK_EQ(s.n, 16);
	CHECK(s.n == 16 && memcmp(s.data, exp2, 16) == 0);

	/* Port format: FSYNC first; HSYNC lands on a half-word boundary. */
	s.n = 0;
	cfg.format = CSD_FRAME_PORT;
	CHECK_EQ(csdi_frame_enc_init(&enc, &cfg), 0);
	CHECK_EQ(csdi_frame_enc_data(&enc, 0x10, d123, 1), 0);     /* bytes 0, 1 */
	CHECK_EQ(csdi_frame_enc_data(&enc, 0x10, d123 + 1, 1), 0); /* byte 2 */
	CHECK_EQ(csdi_frame_enc_hsync(&enc), 0);                   /* before bytes 4, 5 */
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	static const uint8_t exp3[4 + 18] = { 0xFF, 0xFF, 0xFF, 0x7F,
		0x21, 0x01, 0x01, 0x02, 0xFF, 0x7F, 0x00, 0x00, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0x02 };
	CHECK_EQ(s.n, sizeof(exp3));
	CHECK(s.n == sizeof(exp3) && memcmp(s.data, exp3, sizeof(exp3)) == 0);

	/* Argument checks. */
	CHECK_EQ(csdi_frame_enc_data(&enc, 0, d123, 1), CSD_EINVAL);
	CHECK_EQ(csdi_frame_enc_data(&enc, 0x70, d123, 1), CSD_EINVAL);
	cfg.format = CSD_FRAME_ALIGNED;
	CHECK_EQ(csdi_frame_enc_init(&enc, &cfg), 0);
	CHECK_EQ(csdi_frame_enc_hsync(&enc), CSD_EINVAL);
	CHECK_EQ(csdi_frame_enc_fsync(&enc, 3), CSD_EINVAL);
	cfg.format = CSD_FRAME_RAW;
	CHECK_EQ(csdi_frame_enc_init(&enc, &cfg), CSD_EINVAL);
	free(s.data);
}

/* xorshift: reproducible pseudo-random streams. */
static uint32_t rng_state = 2463534242u;
static uint32_t rnd(void)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 17;
	rng_state ^= rng_state << 5;
	return rng_state;
}

#define RT_IDS 4
#define RT_MAX 6000

static void round_trip(uint32_t format, int seed)
{
	static const uint8_t ids[RT_IDS] = { 0x01, 0x10, 0x35, 0x6F };
	uint8_t *want[RT_IDS];
	size_t want_len[RT_IDS] = { 0 };
	struct byte_sink s = { 0 };
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config cfg = { format, (unsigned)(seed % 3) * 5, (unsigned)(seed % 2) * 8,
					     byte_sink_append, &s };
	int ok = 1;

	rng_state = 2463534242u + (uint32_t)seed * 7919u;
	for (int i = 0; i < RT_IDS; i++)
		want[i] = malloc(RT_MAX);
	CHECK_EQ(csdi_frame_enc_init(&enc, &cfg), 0);
	for (int step = 0; step < 1500; step++) {
		int which = (int)(rnd() % RT_IDS);
		size_t n = 1 + rnd() % 7;
		uint8_t chunk[8];
		if (want_len[which] + n > RT_MAX)
			continue;
		for (size_t k = 0; k < n; k++) {
			/* Bias towards the values that matter: FF, 7F, odd/even. */
			uint32_t v = rnd();
			chunk[k] = (v & 0x300) == 0 ? 0xFF : (v & 0x300) == 0x100 ? 0x7F : (uint8_t)v;
		}
		if (csdi_frame_enc_data(&enc, ids[which], chunk, n) != 0)
			ok = 0;
		memcpy(want[which] + want_len[which], chunk, n);
		want_len[which] += n;
		uint32_t r = rnd() % 100;
		if (format == CSD_FRAME_PORT && r < 10)
			ok &= csdi_frame_enc_hsync(&enc) == 0;
		else if (r == 10)
			ok &= csdi_frame_enc_flush(&enc) == 0;
		else if (r == 11)
			ok &= csdi_frame_enc_fsync(&enc, format == CSD_FRAME_PORT ? 1 + rnd() % 2 : 4) == 0;
	}
	ok &= csdi_frame_enc_flush(&enc) == 0;
	CHECK(ok);
	CHECK_EQ(enc.bytes_out, s.n);
	if (format == CSD_FRAME_ALIGNED)
		CHECK_EQ(s.n % 16, 0);

	/* Decode in random pieces. */
	size_t splits[64];
	size_t pos = 0;
	for (int i = 0; i < 64; i++) {
		pos += rnd() % (s.n / 32 + 2);
		splits[i] = pos < s.n ? pos : s.n;
	}
	struct result r;
	decode_split(format, s.data, s.n, splits, 64, 0, &r);
	CHECK_EQ(r.bad, 0);
	for (size_t e = 0; e < r.n_ev; e++)
		CHECK_EQ(r.ev[e].event, CSD_FRAME_SYNC);
	for (int i = 0; i < RT_IDS; i++) {
		unsigned id = ids[i];
		CHECK_EQ(r.len[id], want_len[i]);
		CHECK(r.len[id] == want_len[i] && memcmp(r.bytes[id], want[i], want_len[i]) == 0);
		/* Each byte's offset points at where it sits in the capture: the
		 * byte itself, or with bit 0 cleared in an even frame position. */
		int offs_ok = 1;
		for (size_t k = 0; k < r.len[id]; k++) {
			uint64_t o = r.offs[id][k];
			if (o >= s.n || (k && o <= r.offs[id][k - 1]) ||
			    (s.data[o] != r.bytes[id][k] && s.data[o] != (r.bytes[id][k] & 0xFE)))
				offs_ok = 0;
		}
		CHECK(offs_ok);
	}
	CHECK_EQ(total_bytes(&r), want_len[0] + want_len[1] + want_len[2] + want_len[3]);
	result_free(&r);
	for (int i = 0; i < RT_IDS; i++)
		free(want[i]);
	free(s.data);
}

static void test_round_trips(void)
{
	for (int seed = 0; seed < 12; seed++) {
		round_trip(CSD_FRAME_ALIGNED, seed);
		round_trip(CSD_FRAME_PORT, seed);
	}
}

/* Hostile input: random bytes must never crash and must account for every
 * byte as data, dropped or reported. */
static void test_random_garbage(void)
{
	uint8_t buf[4096];

	rng_state = 99;
	for (int round = 0; round < 20; round++) {
		for (size_t i = 0; i < sizeof(buf); i++) {
			uint32_t v = rnd();
			buf[i] = (v & 0x700) == 0 ? 0xFF : (v & 0x700) == 0x100 ? 0x7F : (uint8_t)v;
		}
		for (uint32_t fmt = CSD_FRAME_ALIGNED; fmt <= CSD_FRAME_PORT; fmt++) {
			size_t splits[8];
			for (int i = 0; i < 8; i++)
				splits[i] = (size_t)(i + 1) * (rnd() % 500);
			struct result r;
			decode_split(fmt, buf, sizeof(buf), splits, 8, 0, &r);
			CHECK_EQ(r.bad, 0);
			CHECK(r.n_ev + r.n_ev_lost > 0);
			CHECK(total_bytes(&r) <= sizeof(buf));
			result_free(&r);
		}
	}
}

/* ---- the TC2 capture -------------------------------------------------- */

static uint32_t fnv1a(const uint8_t *p, size_t n)
{
	uint32_t h = 0x811c9dc5u;
	for (size_t i = 0; i < n; i++)
		h = (h ^ p[i]) * 0x01000193u;
	return h;
}

static void test_tc2(void)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/traces/TC2/cstrace.bin", check_shared_dir());
	FILE *f = fopen(path, "rb");
	CHECK(f != NULL);
	if (!f)
		return;
	static uint8_t buf[32768];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	CHECK_EQ(n, 32768);

	/* Expected values from OpenCSD 1.3.3's deformatter (libopencsd_c_api,
	 * decode tree with OCSD_DFRMTR_FRAME_MEM_ALIGN and the unpacked raw
	 * frame printer), byte lists summed per ID by a throwaway program:
	 *   0x10: 10873 bytes, 0x11: 10619, 0x12: 3153, 0x13: 4533, 0x14: none;
	 *   plus 36 bytes of null ID 0x00 and 22 bytes before the first ID,
	 *   both of which csdec drops. FNV-1a over each ID's bytes and the
	 *   first bytes are from the same listing. */
	static const struct {
		uint8_t id;
		size_t len;
		uint32_t fnv;
		uint8_t first[8];
	} want[] = {
		{ 0x10, 10873, 0x23c4a014u, { 0x82, 0xa4, 0x84, 0xa4, 0x84, 0xbc, 0xb0, 0x84 } },
		{ 0x11, 10619, 0x2c4bb88du, { 0x70, 0x82, 0x9d, 0xc4, 0x01, 0x21, 0xa1, 0xca } },
		{ 0x12, 3153, 0x2369ca88u, { 0x70, 0x91, 0xef, 0x22, 0x21, 0xa1, 0xca, 0x00 } },
		{ 0x13, 4533, 0xb22d6206u, { 0x42, 0xa4, 0x59, 0x00, 0x81, 0x80, 0x80, 0x80 } },
	};
	size_t splits[40];
	for (int i = 0; i < 40; i++)
		splits[i] = (size_t)(i + 1) * 813;     /* feeds not frame aligned */
	struct result r;
	decode_split(CSD_FRAME_ALIGNED, buf, n, splits, 40, 0, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 0);
	size_t sum = 0;
	for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++) {
		unsigned id = want[i].id;
		CHECK_EQ(r.len[id], want[i].len);
		if (r.len[id] != want[i].len)
			continue;
		CHECK_EQ(fnv1a(r.bytes[id], r.len[id]), want[i].fnv);
		CHECK(memcmp(r.bytes[id], want[i].first, 8) == 0);
		sum += r.len[id];
	}
	CHECK_EQ(r.len[0x14], 0);
	CHECK_EQ(total_bytes(&r), sum);
	/* Frame 1 (offset 16) has ID 0x10 in byte 6 with auxiliary bit 3 set
	 * (aux byte 0x0B): byte 7 still belongs to the unknown previous ID, so
	 * 0x10's first byte is frame byte 8, capture offset 24. */
	if (r.len[0x10])
		CHECK_EQ(r.offs[0x10][0], 24);
	result_free(&r);
}

/* ---- frame alignment without FSYNC ------------------------------------ *
 *
 * A port capture whose FSYNCs are stripped and whose start is cut at any
 * byte decodes as the synced capture does. "As the synced capture" is read
 * here as: every byte delivered is the synced decode's byte of the same ID
 * at the same place (offsets mapped back through the edit); from the first
 * A-sync of each ID that lies wholly after the cut on, all of that ID's
 * bytes are delivered; and each source's packets from that A-sync on are
 * identical, offsets included. What the cut destroys (the partial frame at
 * the start, data whose ID byte was cut off) is dropped, never given to an
 * ID; so is a source's trace before its next A-sync, which its decoder could
 * not use anyway. */

/* Index in r's stream of `id` of the first A-sync (five zeros, 0x80)
 * starting at or after capture offset `from`; r->len[id] if none. */
static size_t first_async(const struct result *r, unsigned id, uint64_t from)
{
	const uint8_t *b = r->bytes[id];
	for (size_t i = 0; i + 6 <= r->len[id]; i++)
		if (r->offs[id][i] >= from && !b[i] && !b[i + 1] && !b[i + 2] && !b[i + 3] && !b[i + 4] &&
		    b[i + 5] == 0x80)
			return i;
	return r->len[id];
}

/* Packets compared with the synced decode's, for the record. */
static size_t packets_compared;

struct pkt_list {
	struct csd_packet *v;
	size_t n, cap;
};

/* The packets of one source's bytes (offsets given per byte). */
static void packets_of(const struct csd_trace_config *cfg, const uint8_t *b, const uint64_t *offs, size_t n,
		       struct pkt_list *l)
{
	csd_etm3_pkt_decoder *e = cfg->protocol == CSD_PROTO_ETM3 ? csd_etm3_pkt_new(cfg) : NULL;
	csd_ptm_pkt_decoder *p = cfg->protocol == CSD_PROTO_PTM ? csd_ptm_pkt_new(cfg) : NULL;
	struct csd_bytes in = { b, n, offs, n ? offs[0] : 0, cfg->trace_id };
	struct csd_packet pkt;

	memset(l, 0, sizeof(*l));
	if (!e && !p)
		return;
	CHECK_EQ(e ? csd_etm3_pkt_feed(e, &in) : csd_ptm_pkt_feed(p, &in), 0);
	for (int pass = 0; pass < 2; pass++) {
		while ((e ? csd_etm3_pkt_next(e, &pkt) : csd_ptm_pkt_next(p, &pkt)) == 0) {
			if (l->n == l->cap) {
				l->cap = l->cap * 2 + 64;
				l->v = realloc(l->v, l->cap * sizeof(*l->v));
				if (!l->v)
					abort();
			}
			l->v[l->n++] = pkt;
		}
		if (pass == 0) {
			if (e)
				csd_etm3_pkt_finish(e);
			else
				csd_ptm_pkt_finish(p);
		}
	}
	csd_etm3_pkt_free(e);
	csd_ptm_pkt_free(p);
}

/* One region of the original capture that the edited capture's decode
 * must reproduce: from each ID's first A-sync at or after from[ID] up to
 * original offset `to`. */
struct region {
	uint64_t from[128];
	uint64_t to;
};

/* Compares the decode e of edit ed with the synced decode o: every byte of
 * e is o's byte of the same ID at the same original offset, and in each
 * region e has all of o's bytes and the same packets (cfg[id] gives the
 * protocol; NULL: bytes only). Returns the number of problems, printing the
 * first few. */
static int compare_edit(const char *what, const struct result *o, const struct result *e, const struct edit *ed,
			const struct region *rg, size_t n_rg, const struct csd_trace_config *const *cfg)
{
	int problems = 0;
	for (unsigned id = 0; id < 128; id++) {
		if (!o->len[id] && !e->len[id])
			continue;
		/* e's offsets in the original capture. */
		uint64_t *mapped = malloc((e->len[id] ? e->len[id] : 1) * sizeof(uint64_t));
		if (!mapped)
			abort();
		size_t j = 0;
		for (size_t i = 0; i < e->len[id]; i++) {
			const uint64_t eo = e->offs[id][i];
			mapped[i] = eo < ed->n ? ed->from[eo] : UINT64_MAX;
			while (j < o->len[id] && o->offs[id][j] < mapped[i])
				j++;
			if (j == o->len[id] || o->offs[id][j] != mapped[i] || o->bytes[id][j] != e->bytes[id][i]) {
				if (problems++ < 3)
					fprintf(stderr, "%s: ID 0x%02x byte %zu (offset %llu) is not the synced decode's\n",
						what, id, i, (unsigned long long)eo);
				free(mapped);
				return problems;
			}
		}
		struct pkt_list po = { 0 }, pe = { 0 };
		if (cfg && cfg[id]) {
			packets_of(cfg[id], o->bytes[id], o->offs[id], o->len[id], &po);
			packets_of(cfg[id], e->bytes[id], mapped, e->len[id], &pe);
		}
		for (size_t r = 0; r < n_rg; r++) {
			const size_t a = first_async(o, id, rg[r].from[id]);
			if (a == o->len[id] || o->offs[id][a] >= rg[r].to)
				continue;
			const uint64_t lo = o->offs[id][a], hi = rg[r].to;
			size_t want = 0, have = 0;
			for (size_t k = a; k < o->len[id] && o->offs[id][k] < hi; k++)
				want++;
			for (size_t i = 0; i < e->len[id]; i++)
				have += mapped[i] >= lo && mapped[i] < hi;
			if (have != want && problems++ < 3)
				fprintf(stderr, "%s: ID 0x%02x: %zu of the synced decode's %zu bytes from offset %llu\n",
					what, id, have, want, (unsigned long long)lo);
			/* o's packets after the A-sync and before hi, but the last
			 * one (it may run on past hi, where e's bytes stop), are
			 * e's packets from there, in the same number. (The A-sync
			 * packet itself may start earlier in e: a decoder that
			 * joins mid-stream counts zeros before it, e.g. a branch
			 * packet's last byte, into its run.) */
			const uint64_t after = o->offs[id][a + 5];
			size_t x0 = 0, x1, y0 = 0;
			while (x0 < po.n && po.v[x0].offset <= after)
				x0++;
			for (x1 = x0; x1 < po.n && po.v[x1].offset < hi; x1++)
				;
			if (hi != UINT64_MAX && x1 > x0)
				x1--;
			const uint64_t lim = x1 < po.n ? po.v[x1].offset : UINT64_MAX;
			while (y0 < pe.n && pe.v[y0].offset <= after)
				y0++;
			for (size_t x = x0; x < x1; x++) {
				const size_t y = y0 + (x - x0);
				if (y >= pe.n || !csd_test_pkt_same(&po.v[x], &pe.v[y])) {
					if (problems++ < 3)
						fprintf(stderr, "%s: ID 0x%02x: packet at offset %llu differs\n", what, id,
							(unsigned long long)po.v[x].offset);
					break;
				}
			}
			const size_t y1 = y0 + (x1 - x0);
			if (y1 < pe.n && pe.v[y1].offset < lim && problems++ < 3)
				fprintf(stderr, "%s: ID 0x%02x: more packets than the synced decode's from offset %llu\n",
					what, id, (unsigned long long)lo);
			packets_compared += x1 - x0;
		}
		free(po.v);
		free(pe.v);
		free(mapped);
	}
	return problems;
}

/* Events of r of the given kind. */
static size_t count_events(const struct result *r, uint32_t event)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n_ev; i++)
		n += r->ev[i].event == event;
	return n;
}

/* Decodes edit ed (whole, and in pieces of `piece` bytes) and compares it
 * with o; it must say want_inferred times where frames start (each a frame
 * start of the original) and report want_errors errors. */
static void check_cut(const char *what, const struct result *o, const struct edit *ed, const struct frame_map *m,
		      const struct region *rg, size_t n_rg, const struct csd_trace_config *const *cfg,
		      size_t piece, size_t want_inferred, size_t want_errors)
{
	struct result e, part;
	size_t splits[64];
	size_t ns = 0;
	for (size_t p = piece; piece && p < ed->n && ns < 64; p += piece)
		splits[ns++] = p;
	decode(CSD_FRAME_PORT, ed->b, ed->n, &e);
	CHECK_EQ(e.bad, 0);
	CHECK_EQ(count_events(&e, CSD_FRAME_ALIGN_INFERRED), want_inferred);
	CHECK_EQ(count_events(&e, CSD_FRAME_ERROR), want_errors);
	for (size_t i = 0; i < e.n_ev; i++) {
		if (e.ev[i].event != CSD_FRAME_ALIGN_INFERRED)
			continue;
		CHECK(e.ev[i].reason && strstr(e.ev[i].reason, "inferred"));
		CHECK(e.ev[i].offset < ed->n && m->start[ed->from[e.ev[i].offset]]);
	}
	int problems = compare_edit(what, o, &e, ed, rg, n_rg, cfg);
	if (problems)
		fprintf(stderr, "%s: %d problems\n", what, problems);
	CHECK_EQ(problems, 0);
	decode_split(CSD_FRAME_PORT, ed->b, ed->n, splits, ns, 0, &part);
	CHECK(same_result(&e, &part));
	result_free(&part);
	result_free(&e);
}

/* The configurations of the sources of snapshot dir, by trace ID. */
struct src_cfgs {
	struct csd_trace_config cfg[128];
	const struct csd_trace_config *by_id[128];
};

static int read_cfgs(const char *dir, struct src_cfgs *sc)
{
	csd_snapshot *snap;
	memset(sc, 0, sizeof(*sc));
	if (csd_snapshot_open(dir, &snap, NULL, 0) != 0)
		return -1;
	for (size_t i = 0; i < csd_snapshot_num_sources(snap); i++) {
		const struct csd_snapshot_source *s = csd_snapshot_source(snap, i);
		unsigned id = s->config.trace_id;
		if (id < 128 && (s->config.protocol == CSD_PROTO_ETM3 || s->config.protocol == CSD_PROTO_PTM)) {
			sc->cfg[id] = s->config;
			sc->by_id[id] = &sc->cfg[id];
		}
	}
	csd_snapshot_free(snap);
	return 0;
}

/* The port capture cap, its FSYNCs stripped, cut at each of the 16 byte
 * offsets, decodes as cap does (fed whole and in pieces). */
static void check_cuts(const char *what, const uint8_t *cap, size_t n, const struct csd_trace_config *const *cfg)
{
	struct result o;
	char name[256];
	struct frame_map m = frame_map(cap, n);
	decode(CSD_FRAME_PORT, cap, n, &o);
	CHECK_EQ(o.bad, 0);
	CHECK_EQ(count_events(&o, CSD_FRAME_ERROR), 0);
	struct edit s = edit_strip_fsyncs(cap, n, n);
	CHECK(s.n < n);
	for (unsigned k = 0; k < 16; k++) {
		struct edit c = edit_cut(&s, k, 0, 0, NULL, 0);
		struct region rg;
		id_known_from(&m, c.from[0], rg.from);
		rg.to = UINT64_MAX;
		snprintf(name, sizeof(name), "%s cut %u", what, k);
		check_cut(name, &o, &c, &m, &rg, 1, cfg, 1 + (k * 997) % 5000, 1, 0);
		edit_free(&c);
	}
	edit_free(&s);
	result_free(&o);
	frame_map_free(&m);
}

/* TC2's capture (ETB, four sources) as a trace port would have sent it:
 * its data runs in capture order through the port encoder, FSYNCs every
 * `fsync_every` frames, with HSYNCs after about one run in `hsync_in`. */
static void tc2_as_port(unsigned fsync_every, unsigned hsync_in, struct byte_sink *out)
{
	char path[4096];
	size_t n;
	snprintf(path, sizeof(path), "%s/traces/TC2/cstrace.bin", check_shared_dir());
	uint8_t *tc2 = check_read_file(path, &n);
	CHECK(tc2 != NULL);
	memset(out, 0, sizeof(*out));
	if (!tc2)
		return;
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config ec = { CSD_FRAME_PORT, fsync_every, 8, byte_sink_append, out };
	struct csd_frame_config fc = { .size = sizeof(fc), .format = CSD_FRAME_ALIGNED };
	csd_frame_decoder *dec = csd_frame_new(&fc);
	struct csd_frame_out fo;
	CHECK_EQ(csdi_frame_enc_init(&enc, &ec), 0);
	rng_state = 12345;
	CHECK_EQ(csd_frame_feed(dec, tc2, n, 0), 0);
	while (csd_frame_next(dec, &fo) == 0) {
		if (fo.event != CSD_FRAME_DATA)
			continue;
		CHECK_EQ(csdi_frame_enc_data(&enc, fo.bytes.id, fo.bytes.data, fo.bytes.size), 0);
		for (unsigned h = 0; hsync_in && rnd() % hsync_in == 0 && h < 3; h++)
			CHECK_EQ(csdi_frame_enc_hsync(&enc), 0);
	}
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	csd_frame_free(dec);
	free(tc2);
}

static void test_infer_tc2(void)
{
	char dir[4096];
	struct src_cfgs sc;
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	CHECK_EQ(read_cfgs(dir, &sc), 0);
	for (unsigned hs = 0; hs < 2; hs++) {
		struct byte_sink port;
		tc2_as_port(64, hs ? 4 : 0, &port);
		CHECK(port.n > 30000);
		size_t before = packets_compared;
		check_cuts(hs ? "TC2 as port, HSYNCs" : "TC2 as port", port.data, port.n, sc.by_id);
		CHECK(packets_compared - before > 16 * 1000);
		free(port.data);
	}
}

/* `csdec gen --formatted=port` output (tests/gen-snapshots.sh, "multi":
 * PTM, ETMv3 and PTM with return stack in one capture). */
static void test_infer_gen(void)
{
	static const char *const progs[] = {
		"switch-thumb-O0", "recurse-arm-O0", "indirect-arm-O0", "longjmp-thumb-O2", "interwork-arm-O2",
		"itblock-thumb-O0", "hello-arm-O0", "bare_mix-arm-O2",
	};
	const char *gen = getenv("CSD_GEN_SNAPSHOTS");
	CHECK(gen != NULL);
	if (!gen)
		return;
	for (size_t p = 0; p < sizeof(progs) / sizeof(progs[0]); p++) {
		char dir[4096], path[4200];
		struct src_cfgs sc;
		size_t n;
		snprintf(dir, sizeof(dir), "%s/%s--multi", gen, progs[p]);
		snprintf(path, sizeof(path), "%s/trace.bin", dir);
		CHECK_EQ(read_cfgs(dir, &sc), 0);
		uint8_t *cap = check_read_file(path, &n);
		CHECK(cap != NULL);
		if (!cap)
			continue;
		size_t before = packets_compared;
		check_cuts(progs[p], cap, n, sc.by_id);
		CHECK(packets_compared - before > 16 * 50);
		free(cap);
	}

	/* Every generated port capture, cut at one offset each: the ones too
	 * short to tell (a few hundred bytes) give one error and no data,
	 * never wrong data. */
	DIR *d = opendir(gen);
	struct dirent *de;
	unsigned k = 0, inferred = 0, refused = 0;
	CHECK(d != NULL);
	while (d && (de = readdir(d)) != NULL) {
		size_t len = strlen(de->d_name), n;
		if (len < 8 || strcmp(de->d_name + len - 7, "--multi") != 0)
			continue;
		char dir[4096], path[4200];
		struct src_cfgs sc;
		snprintf(dir, sizeof(dir), "%s/%s", gen, de->d_name);
		snprintf(path, sizeof(path), "%s/trace.bin", dir);
		CHECK_EQ(read_cfgs(dir, &sc), 0);
		uint8_t *cap = check_read_file(path, &n);
		CHECK(cap != NULL);
		if (!cap)
			continue;
		struct frame_map m = frame_map(cap, n);
		struct result o, e;
		decode(CSD_FRAME_PORT, cap, n, &o);
		struct edit s = edit_strip_fsyncs(cap, n, n);
		struct edit c = edit_cut(&s, k % 16, 0, 0, NULL, 0);
		decode(CSD_FRAME_PORT, c.b, c.n, &e);
		if (count_events(&e, CSD_FRAME_ALIGN_INFERRED)) {
			struct region rg;
			id_known_from(&m, c.from[0], rg.from);
			rg.to = UINT64_MAX;
			check_cut(de->d_name, &o, &c, &m, &rg, 1, sc.by_id, 0, 1, 0);
			inferred++;
		} else {
			CHECK(c.n < 4096);
			CHECK_EQ(e.n_ev, 1);
			CHECK_EQ(total_bytes(&e), 0);
			refused++;
		}
		k++;
		result_free(&e);
		result_free(&o);
		edit_free(&c);
		edit_free(&s);
		frame_map_free(&m);
		free(cap);
	}
	if (d)
		closedir(d);
	CHECK(k >= 36);
	CHECK(inferred >= 28);
	printf("test_frame: generated port captures without FSYNC: %u inferred, %u too short to tell\n", inferred,
	       refused);
}

/* FSYNCs only from `keep_from` on (rare ones): inferred first, then
 * confirmed; an FSYNC inside the first window takes precedence as before. */
static void test_infer_rare_fsyncs(void)
{
	struct byte_sink port;
	struct src_cfgs sc;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	CHECK_EQ(read_cfgs(dir, &sc), 0);
	tc2_as_port(64, 8, &port);
	struct frame_map m = frame_map(port.data, port.n);
	struct result o;
	decode(CSD_FRAME_PORT, port.data, port.n, &o);
	for (unsigned k = 0; k < 16; k += 5) {
		/* FSYNCs from 20000 on: the first window (4 KiB) decides. */
		struct edit s = edit_strip_fsyncs(port.data, port.n, 20000);
		struct edit c = edit_cut(&s, k, 0, 0, NULL, 0);
		struct region rg;
		id_known_from(&m, c.from[0], rg.from);
		rg.to = UINT64_MAX;
		check_cut("TC2 as port, FSYNCs from 20000", &o, &c, &m, &rg, 1, sc.by_id, 777, 1, 0);
		struct result e;
		decode(CSD_FRAME_PORT, c.b, c.n, &e);
		CHECK(count_events(&e, CSD_FRAME_SYNC) > 0);
		result_free(&e);
		edit_free(&c);
		edit_free(&s);

		/* FSYNCs from 2000 on: the first one comes before the window is
		 * evaluated; the bytes before it are skipped, as they were. */
		s = edit_strip_fsyncs(port.data, port.n, 2000);
		c = edit_cut(&s, k, 0, 0, NULL, 0);
		size_t f = 0;
		while (f + 4 <= c.n && memcmp(c.b + f, fsync, 4) != 0)
			f++;
		CHECK(f > 1900 && f < 2100);
		id_known_from(&m, c.from[f], rg.from);
		check_cut("TC2 as port, FSYNCs from 2000", &o, &c, &m, &rg, 1, sc.by_id, 1000, 0, 1);
		decode(CSD_FRAME_PORT, c.b, c.n, &e);
		CHECK(e.n_ev > 1 && e.ev[0].event == CSD_FRAME_ERROR && e.ev[0].offset == 0 &&
		      strstr(e.ev[0].reason, "before the first frame synchronisation"));
		CHECK(e.n_ev > 1 && e.ev[1].event == CSD_FRAME_SYNC && e.ev[1].offset == f);
		result_free(&e);
		edit_free(&c);
		edit_free(&s);
	}
	result_free(&o);
	frame_map_free(&m);
	free(port.data);
}

/* Alignment lost mid-way (0xFF in an ID position, one byte gone) without
 * an FSYNC after it: found again from there. */
static void test_infer_lost_midway(void)
{
	static const uint8_t damage[2] = { 0xFF, 0x00 };
	struct byte_sink port;
	struct src_cfgs sc;
	char dir[4096];
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	CHECK_EQ(read_cfgs(dir, &sc), 0);
	tc2_as_port(64, 6, &port);
	struct frame_map m = frame_map(port.data, port.n);
	struct result o;
	decode(CSD_FRAME_PORT, port.data, port.n, &o);
	struct edit s = edit_strip_fsyncs(port.data, port.n, port.n);
	/* Inside the first window and well after it. */
	static const size_t near[2] = { 2500, 12000 };
	for (int w = 0; w < 2; w++) {
		for (unsigned k = 0; k < 16; k += 3) {
			/* A frame start near[w] bytes in, plus four: an ID
			 * position. Three bytes there become FF 00. */
			size_t p = near[w];
			while (!m.start[s.from[p]])
				p++;
			p += 4;
			CHECK(!m.start[s.from[p - 2]] && !m.start[s.from[p]]);
			struct edit c = edit_cut(&s, k, p, 3, damage, 2);
			struct region rg[2];
			id_known_from(&m, c.from[0], rg[0].from);
			rg[0].to = s.from[p - 4];
			id_known_from(&m, s.from[p + 3], rg[1].from);
			rg[1].to = UINT64_MAX;
			char name[128];
			snprintf(name, sizeof(name), "TC2 as port, damage at %zu, cut %u", p, k);
			check_cut(name, &o, &c, &m, rg, 2, sc.by_id, 333 + k, 2, 1);
			edit_free(&c);
		}
	}
	edit_free(&s);
	result_free(&o);
	frame_map_free(&m);
	free(port.data);
}

/* Decodes cap as a port capture; returns the data bytes delivered and
 * checks that exactly one error came, with `reason` in its text. */
static size_t one_error(const char *what, const uint8_t *cap, size_t n, const char *reason)
{
	struct result r;
	size_t splits[3] = { n / 3, n / 2, n - 7 };
	decode_split(CSD_FRAME_PORT, cap, n, splits, 3, 0, &r);
	CHECK_EQ(r.bad, 0);
	CHECK_EQ(r.n_ev, 1);
	CHECK(r.n_ev == 1 && r.ev[0].event == CSD_FRAME_ERROR && r.ev[0].reason &&
	      strstr(r.ev[0].reason, reason));
	if (r.n_ev != 1 || total_bytes(&r))
		fprintf(stderr, "%s: %zu events, %zu data bytes\n", what, r.n_ev, total_bytes(&r));
	size_t t = total_bytes(&r);
	result_free(&r);
	return t;
}

/* What gives no frames is reported once and delivers nothing: random bytes,
 * unformatted trace streams. */
static void test_infer_not_frames(void)
{
	static uint8_t buf[200000];
	rng_state = 4242;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)rnd();
	for (size_t n = 64; n <= sizeof(buf); n *= 5)
		CHECK_EQ(one_error("random bytes", buf, n, "no frame alignment gives valid frames"), 0);

	/* TC2's sources, and generated ones, unformatted. */
	struct result r;
	char path[4096];
	size_t n;
	snprintf(path, sizeof(path), "%s/traces/TC2/cstrace.bin", check_shared_dir());
	uint8_t *tc2 = check_read_file(path, &n);
	CHECK(tc2 != NULL);
	if (tc2) {
		decode(CSD_FRAME_ALIGNED, tc2, n, &r);
		for (unsigned id = 0x10; id <= 0x13; id++)
			CHECK_EQ(one_error("TC2 source, unformatted", r.bytes[id], r.len[id],
					   "no frame alignment gives valid frames"), 0);
		result_free(&r);
		free(tc2);
	}
	const char *gen = getenv("CSD_GEN_SNAPSHOTS");
	static const char *const raw[] = { "switch-thumb-O0--ptm", "recurse-arm-O0--etm3-ca", "indirect-arm-O0--ptm-rs",
					   "longjmp-thumb-O2--etm3" };
	for (size_t i = 0; gen && i < sizeof(raw) / sizeof(raw[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s/trace_0.bin", gen, raw[i]);
		uint8_t *b = check_read_file(path, &n);
		CHECK(b != NULL && n > 4096);
		if (b)
			CHECK_EQ(one_error(raw[i], b, n, "no frame alignment gives valid frames"), 0);
		free(b);
	}
}

/* Frames whose alignment the bytes cannot tell, and frames where a wrong
 * byte parity survives every structural check. */
static void test_infer_adversarial(void)
{
	struct byte_sink s = { 0 };
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config ec = { CSD_FRAME_PORT, 0, 8, byte_sink_append, &s };
	uint8_t chunk[64];

	/* Two sources of uniformly random bytes, FSYNC stripped: every
	 * grid of the right byte parity decodes without fault and scores
	 * alike. Nothing is delivered; one error says why. */
	rng_state = 777;
	CHECK_EQ(csdi_frame_enc_init(&enc, &ec), 0);
	for (int i = 0; i < 3000; i++) {
		size_t n = 1 + rnd() % 40;
		for (size_t k = 0; k < n; k++)
			chunk[k] = (uint8_t)rnd();
		CHECK_EQ(csdi_frame_enc_data(&enc, i % 3 ? 0x10 : 0x22, chunk, n), 0);
	}
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	CHECK(s.n > 65536);     /* more than the largest window */
	for (size_t k = 0; k < 16; k += 3) {
		struct edit st = edit_strip_fsyncs(s.data, s.n, s.n);
		CHECK_EQ(one_error("random payload", st.b + k, st.n - k, "no alignment stands out"), 0);
		edit_free(&st);
	}

	/* One source of even bytes only (ETMv3 P-headers and PTM atoms are
	 * even): a grid of the wrong byte parity meets no ID byte, hence no
	 * fault; the right one is still found. */
	s.n = 0;
	CHECK_EQ(csdi_frame_enc_init(&enc, &ec), 0);
	for (int i = 0; i < 400; i++) {
		for (size_t k = 0; k < 32; k++)
			chunk[k] = (uint8_t)(0x80 | (rnd() & 0x7E));
		if (i % 50 == 0)
			memcpy(chunk, "\0\0\0\0\0\x80", 6);     /* an A-sync now and then */
		CHECK_EQ(csdi_frame_enc_data(&enc, 0x31, chunk, 32), 0);
	}
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	check_cuts("even bytes only", s.data, s.n, NULL);
	free(s.data);
}

/* A Cortex-M capture: the ETM of the recorded cm3demo run (tests/
 * roundtrip_m.mk) and an ITM on another ID printing text through stimulus
 * port 0 (header 0x01 and one byte per character, a synchronisation packet
 * now and then), with HSYNCs where the port ran idle inside a frame. */
static void test_infer_cortex_m(void)
{
	static const char text[] = "count=%u, systick=%u: all is well\n";
	const char *gm = getenv("CSD_GEN_M");
	char dir[4096], path[4200];
	struct src_cfgs sc;
	size_t n;
	CHECK(gm != NULL);
	if (!gm)
		return;
	snprintf(dir, sizeof(dir), "%s/cm3demo--etm3-ca-tpiu", gm);
	snprintf(path, sizeof(path), "%s/trace.bin", dir);
	CHECK_EQ(read_cfgs(dir, &sc), 0);
	uint8_t *cap = check_read_file(path, &n);
	CHECK(cap != NULL);
	if (!cap)
		return;
	struct byte_sink port = { 0 };
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config ec = { CSD_FRAME_PORT, 64, 8, byte_sink_append, &port };
	struct csd_frame_config fc = { .size = sizeof(fc), .format = CSD_FRAME_PORT };
	csd_frame_decoder *dec = csd_frame_new(&fc);
	struct csd_frame_out fo;
	size_t itm = 0, runs = 0;
	CHECK_EQ(csdi_frame_enc_init(&enc, &ec), 0);
	rng_state = 31337;
	CHECK_EQ(csd_frame_feed(dec, cap, n, 0), 0);
	CHECK_EQ(csd_frame_finish(dec), 0);
	while (csd_frame_next(dec, &fo) == 0) {
		if (fo.event != CSD_FRAME_DATA)
			continue;
		for (size_t i = 0; i < fo.bytes.size;) {
			size_t m = 1 + rnd() % 48;
			if (m > fo.bytes.size - i)
				m = fo.bytes.size - i;
			CHECK_EQ(csdi_frame_enc_data(&enc, fo.bytes.id, fo.bytes.data + i, m), 0);
			i += m;
			if (++runs % 3)
				continue;
			uint8_t out[64];
			size_t k = 0;
			if (itm % 40 == 0) {
				memcpy(out, "\0\0\0\0\0\x80", 6);
				k = 6;
			}
			for (unsigned c = 0; c < 1 + rnd() % 12; c++, itm++) {
				out[k++] = 0x01;
				out[k++] = (uint8_t)text[itm % (sizeof(text) - 1)];
			}
			CHECK_EQ(csdi_frame_enc_data(&enc, 0x01, out, k), 0);
			if (rnd() % 4 == 0)
				CHECK_EQ(csdi_frame_enc_hsync(&enc), 0);
		}
	}
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	csd_frame_free(dec);
	CHECK(itm > 1000);
	size_t before = packets_compared;
	check_cuts("Cortex-M ETM and ITM", port.data, port.n, sc.by_id);
	CHECK(packets_compared - before > 16 * 1000);
	free(port.data);
	free(cap);
}

int main(void)
{
	test_hand_frames();
	test_unknown_id_start();
	test_reserved_ids();
	test_split_feeds();
	test_truncated();
	test_aligned_fsync_frame();
	test_port_basic();
	test_port_realign();
	test_raw();
	test_api();
	test_encoder_by_hand();
	test_round_trips();
	test_random_garbage();
	test_tc2();
	test_infer_tc2();
	test_infer_gen();
	test_infer_cortex_m();
	test_infer_rare_fsyncs();
	test_infer_lost_midway();
	test_infer_not_frames();
	test_infer_adversarial();
	return check_done("test_frame");
}
