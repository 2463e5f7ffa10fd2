/*
 * fuzz_frame.c - libFuzzer harness for the frame demultiplexer (csd_frame_*).
 *
 * Input: [0] format (mod 3: raw, aligned, port), [1] raw ID, [2] split
 * mode, [3] split seed (fuzz_common.h), then the capture bytes. With bit 7
 * of [0] set, the bytes are not the capture but what a port capture without
 * FSYNC is built from (fuzz_build_port), so that the frame alignment has to
 * be inferred and often can be: chunks of one source's bytes, each led by a
 * control byte (source, length, an HSYNC or a flush after it), the bytes
 * with bit 7 set made even as P-headers and atoms are; [1] is then the
 * number of leading bytes cut off (low 4 bits).
 *
 * The capture is demultiplexed twice, in one feed and in pieces chosen by
 * the input, and both must give the same events and the same bytes with the
 * same IDs and offsets (so a port capture's inferred frame alignment must
 * not depend on how it was fed). Checked without an oracle:
 *   - return codes: 0 / CSD_EAGAIN while feeding, CSD_EEOS for good after
 *     csd_frame_finish(); csd_frame_feed() accepts input once drained;
 *   - every offset lies inside the capture; data bytes come out in capture
 *     order, each once, at most as many as the capture has;
 *   - a data byte is the capture byte at its offset, except that bit 0 of
 *     an even frame byte comes from the auxiliary byte (so aligned frames
 *     never deliver byte 15 and odd bytes exactly); raw format passes the
 *     input through untouched with the configured ID;
 *   - framed data carries a source ID (0x01-0x6F); errors carry a reason,
 *     and so does an inferred frame alignment (port format only);
 *   - bounded work: events per call of csd_frame_next() are limited.
 * A third decode, in the same pieces with CSD_FRAME_BY_ID, must give each
 * ID the same bytes and offsets, the same events in the same order, each
 * event after every data byte that precedes it in the capture and at most
 * 15 bytes (the rest of its frame) later, and batches of at most
 * CSD_FRAME_BATCH + 15 bytes.
 */
#include "fuzz_common.h"
#include "frame_enc.h"

#define FRAME_HDR 4
#define FRAME_BUILD 0x80        /* input [0]: build a port capture */

/* The port capture that build mode makes from payload p[0, n). */
struct fuzz_port_build {
	uint8_t *b;
	size_t n, cap;
};

static int fuzz_build_sink(void *ctx, const uint8_t *bytes, size_t n)
{
	struct fuzz_port_build *o = ctx;
	o->b = fuzz_grow(o->b, &o->cap, o->n + n, 1);
	memcpy(o->b + o->n, bytes, n);
	o->n += n;
	return 0;
}

/* Chunks: control byte c (source 0x01, 0x12, 0x23 or 0x34 by bits 1:0;
 * bits 5:2 + 1 bytes; bit 6: an HSYNC after it; bit 7: a flush after it),
 * then its bytes. The encoder's leading FSYNC and the first `cut` bytes
 * after it are dropped. */
static void fuzz_build_port(const uint8_t *p, size_t n, unsigned cut, struct fuzz_port_build *o)
{
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config ec;
	memset(&ec, 0, sizeof(ec));
	ec.format = CSD_FRAME_PORT;
	ec.id_every = 8;
	ec.sink = fuzz_build_sink;
	ec.ctx = o;
	o->n = 0;
	FUZZ_CHECK(csdi_frame_enc_init(&enc, &ec) == CSD_OK);
	size_t i = 0;
	while (i < n) {
		const uint8_t c = p[i++];
		uint8_t chunk[16];
		size_t len = ((c >> 2) & 15) + 1;
		if (len > n - i)
			len = n - i;
		for (size_t k = 0; k < len; k++)
			chunk[k] = p[i + k] & 0x80 ? (uint8_t)(p[i + k] & 0xFE) : p[i + k];
		i += len;
		if (len)
			FUZZ_CHECK(csdi_frame_enc_data(&enc, (uint8_t)(1 + (c & 3) * 0x11), chunk, len) == CSD_OK);
		if (c & 0x40)
			FUZZ_CHECK(csdi_frame_enc_hsync(&enc) == CSD_OK);
		if (c & 0x80)
			FUZZ_CHECK(csdi_frame_enc_flush(&enc) == CSD_OK);
	}
	FUZZ_CHECK(csdi_frame_enc_flush(&enc) == CSD_OK);
	/* The FSYNC the encoder starts with, and the cut. (Chunks without
	 * bytes write nothing: no buffer then.) */
	size_t drop = 4 + cut;
	if (drop > o->n)
		drop = o->n;
	if (drop)
		memmove(o->b, o->b + drop, o->n - drop);
	o->n -= drop;
}

/* One event or one data byte, flattened so that both decodes compare
 * regardless of how data was grouped into runs. */
struct frame_item {
	uint64_t offset;
	const char *reason;
	uint8_t event, id, byte;
};

struct frame_list {
	struct frame_item *v;
	size_t n, cap;
};

static void frame_add(struct frame_list *l, uint8_t event, uint8_t id, uint8_t byte, uint64_t off,
		      const char *reason)
{
	l->v = fuzz_grow(l->v, &l->cap, l->n + 1, sizeof(*l->v));
	struct frame_item *it = &l->v[l->n++];
	it->event = event;
	it->id = id;
	it->byte = byte;
	it->offset = off;
	it->reason = reason;
}

struct frame_run {
	uint32_t format;
	uint8_t raw_id;
	const uint8_t *cap;
	size_t size;
	uint64_t data_bytes;    /* data bytes delivered */
	uint64_t last_off;      /* offset of the last data byte + 1 */
	int by_id;              /* CSD_FRAME_BY_ID: offsets rise per ID only */
	uint64_t id_last_off[256];
};

static void frame_event(struct frame_run *r, const struct csd_frame_out *o, struct frame_list *l)
{
	FUZZ_CHECK(o->event == CSD_FRAME_DATA || o->event == CSD_FRAME_SYNC || o->event == CSD_FRAME_ERROR ||
		   o->event == CSD_FRAME_ALIGN_INFERRED || o->event == CSD_FRAME_TRUNCATED);
	if (o->event != CSD_FRAME_DATA) {
		FUZZ_CHECK(o->offset >= FUZZ_BASE && o->offset - FUZZ_BASE < r->size);
		FUZZ_CHECK((o->event != CSD_FRAME_ERROR && o->event != CSD_FRAME_TRUNCATED) || o->reason != NULL);
		FUZZ_CHECK(r->format != CSD_FRAME_RAW);
		if (o->event == CSD_FRAME_ALIGN_INFERRED)
			FUZZ_CHECK(r->format == CSD_FRAME_PORT && o->reason != NULL);
		frame_add(l, (uint8_t)o->event, 0, 0, o->offset, o->reason);
		return;
	}
	const struct csd_bytes *b = &o->bytes;
	FUZZ_CHECK(b->size > 0 && b->data != NULL);
	if (r->format == CSD_FRAME_RAW)
		FUZZ_CHECK(b->offsets == NULL && b->id == r->raw_id);
	else
		FUZZ_CHECK(b->offsets != NULL && b->base == b->offsets[0] && b->id >= 0x01 && b->id <= 0x6F);
	if (r->by_id && r->format != CSD_FRAME_RAW)
		FUZZ_CHECK(b->size <= CSD_FRAME_BATCH + 15);
	for (size_t i = 0; i < b->size; i++) {
		uint64_t off = b->offsets ? b->offsets[i] : b->base + i;
		FUZZ_CHECK(off >= FUZZ_BASE && off - FUZZ_BASE < r->size);
		if (r->by_id) {
			FUZZ_CHECK(off >= r->id_last_off[b->id]);
			r->id_last_off[b->id] = off + 1;
			if (off + 1 > r->last_off)
				r->last_off = off + 1;
		} else {
			FUZZ_CHECK(off >= r->last_off);
			r->last_off = off + 1;
		}
		size_t k = (size_t)(off - FUZZ_BASE);
		uint8_t diff = (uint8_t)(b->data[i] ^ r->cap[k]);
		if (r->format == CSD_FRAME_RAW)
			FUZZ_CHECK(diff == 0);
		else
			FUZZ_CHECK(diff <= 1);
		if (r->format == CSD_FRAME_ALIGNED) {
			FUZZ_CHECK(k % 16 != 15);
			FUZZ_CHECK(k % 2 == 0 || diff == 0);
		}
		frame_add(l, CSD_FRAME_DATA, b->id, b->data[i], off, NULL);
	}
	r->data_bytes += b->size;
	FUZZ_CHECK(r->data_bytes <= r->size);
}

static void frame_decode(struct frame_run *r, struct fuzz_split *sp, struct frame_list *l)
{
	struct csd_frame_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.format = r->format;
	cfg.raw_id = r->raw_id;
	cfg.flags = r->by_id ? CSD_FRAME_BY_ID : 0;
	csd_frame_decoder *dec = csd_frame_new(&cfg);
	FUZZ_CHECK(dec != NULL);
	r->data_bytes = 0;
	r->last_off = 0;
	memset(r->id_last_off, 0, sizeof(r->id_last_off));
	struct csd_frame_out o;
	size_t pos = 0;
	unsigned empty = 0;
	int rc;
	/* Events are data runs, syncs and errors: far fewer than 2 per byte. */
	size_t events = 0, limit = 2 * r->size + 8;
	while (pos < r->size) {
		size_t n = fuzz_split_next(sp, r->size - pos);
		if (n == 0 && ++empty > 64)
			n = 1;
		FUZZ_CHECK(csd_frame_feed(dec, r->cap + pos, n, FUZZ_BASE + pos) == CSD_OK);
		pos += n;
		while ((rc = csd_frame_next(dec, &o)) == CSD_OK) {
			frame_event(r, &o, l);
			FUZZ_CHECK(r->last_off <= FUZZ_BASE + pos);
			FUZZ_CHECK(++events <= limit);
		}
		FUZZ_CHECK(rc == CSD_EAGAIN);
	}
	FUZZ_CHECK(csd_frame_finish(dec) == CSD_OK);
	while ((rc = csd_frame_next(dec, &o)) == CSD_OK) {
		frame_event(r, &o, l);
		FUZZ_CHECK(++events <= limit);
	}
	FUZZ_CHECK(rc == CSD_EEOS);
	FUZZ_CHECK(csd_frame_next(dec, &o) == CSD_EEOS);
	/* Finished: no more input is accepted. */
	FUZZ_CHECK(csd_frame_feed(dec, r->cap, 0, FUZZ_BASE) == CSD_EINVAL);
	csd_frame_free(dec);
}

/* Indices of l's data items grouped by ID (counting sort: stable). */
static size_t *frame_group(const struct frame_list *l)
{
	size_t start[257] = { 0 };
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].event == CSD_FRAME_DATA)
			start[l->v[i].id + 1]++;
	for (unsigned id = 0; id < 256; id++)
		start[id + 1] += start[id];
	size_t *g = malloc((start[256] ? start[256] : 1) * sizeof(*g));
	FUZZ_CHECK(g != NULL);
	for (size_t i = 0; i < l->n; i++)
		if (l->v[i].event == CSD_FRAME_DATA)
			g[start[l->v[i].id]++] = i;
	return g;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < FRAME_HDR)
		return 0;
	struct frame_run r;
	struct fuzz_port_build built = { NULL, 0, 0 };
	memset(&r, 0, sizeof(r));
	r.format = data[0] % 3;
	r.raw_id = data[1];
	r.cap = data + FRAME_HDR;
	r.size = size - FRAME_HDR;
	if (data[0] & FRAME_BUILD) {
		fuzz_build_port(data + FRAME_HDR, size - FRAME_HDR, data[1] & 15, &built);
		r.format = CSD_FRAME_PORT;
		r.cap = built.b;
		r.size = built.n;
	}
	struct frame_list whole = { NULL, 0, 0 }, split = { NULL, 0, 0 };
	struct fuzz_split sp;
	fuzz_split_init(&sp, 0, 0);
	frame_decode(&r, &sp, &whole);
	fuzz_split_init(&sp, data[2], data[3]);
	frame_decode(&r, &sp, &split);
	FUZZ_CHECK(whole.n == split.n);
	for (size_t i = 0; i < whole.n; i++) {
		const struct frame_item *a = &whole.v[i], *b = &split.v[i];
		FUZZ_CHECK(a->event == b->event && a->id == b->id && a->byte == b->byte && a->offset == b->offset);
		FUZZ_CHECK(a->reason == b->reason || (a->reason && b->reason && strcmp(a->reason, b->reason) == 0));
	}
	/* By ID, in the same pieces. */
	struct frame_list by_id = { NULL, 0, 0 };
	r.by_id = 1;
	fuzz_split_init(&sp, data[2], data[3]);
	frame_decode(&r, &sp, &by_id);
	FUZZ_CHECK(by_id.n == whole.n);
	/* Events: same order; data bytes before each. */
	size_t ev_a = 0, ev_b = 0, data_a = 0, data_b = 0;
	for (;;) {
		while (ev_a < whole.n && whole.v[ev_a].event == CSD_FRAME_DATA) {
			ev_a++;
			data_a++;
		}
		while (ev_b < by_id.n && by_id.v[ev_b].event == CSD_FRAME_DATA) {
			ev_b++;
			data_b++;
		}
		FUZZ_CHECK((ev_a < whole.n) == (ev_b < by_id.n));
		if (ev_a >= whole.n)
			break;
		const struct frame_item *a = &whole.v[ev_a++], *b = &by_id.v[ev_b++];
		FUZZ_CHECK(a->event == b->event && a->offset == b->offset);
		FUZZ_CHECK(a->reason == b->reason || (a->reason && b->reason && strcmp(a->reason, b->reason) == 0));
		FUZZ_CHECK(data_b >= data_a && data_b <= data_a + 15);
	}
	/* Data: each ID's bytes in the same order (both lists' data grouped
	 * by ID, keeping order within an ID, then compared). */
	size_t *ga = frame_group(&whole), *gb = frame_group(&by_id);
	for (size_t k = 0; k < data_a; k++) {
		const struct frame_item *a = &whole.v[ga[k]], *b = &by_id.v[gb[k]];
		FUZZ_CHECK(a->id == b->id && a->byte == b->byte && a->offset == b->offset);
	}
	free(ga);
	free(gb);
	free(whole.v);
	free(split.v);
	free(by_id.v);
	free(built.b);
	return 0;
}
