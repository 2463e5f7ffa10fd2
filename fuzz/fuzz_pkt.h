/*
 * fuzz_pkt.h - body of the packet-decoder harnesses (fuzz_etm3_pkt.c,
 * fuzz_ptm_pkt.c). The input is a header (fuzz_common.h: registers, split)
 * and one source's bytes. The bytes are decoded twice: in one feed, and in
 * pieces chosen by the input. Checked without an oracle:
 *   - the return codes: 0 or CSD_EAGAIN while feeding, 0 then CSD_EEOS
 *     (for good) after csd_*_pkt_finish();
 *   - every packet lies inside the input, the packets tile it (each starts
 *     where the previous one ended, sizes add up to the input length) and
 *     raw[] holds the input bytes at the packet's offset;
 *   - fields are in their ranges (types, ISA, reasons, atom counts);
 *   - a truncated packet comes only after csd_*_pkt_finish(), as the
 *     last packet, ending at the last input byte;
 *   - both decodes give the same packets (splitting must not matter);
 *   - a third decode, in the same pieces, takes packets in brief
 *     (csd_*_pkt_next_brief, a cap chosen by the input) wherever it can
 *     and one by one otherwise: expanded, they are the same packets;
 *   - the work is bounded: at most one packet per input byte, plus two.
 */
#ifndef CSD_FUZZ_PKT_H
#define CSD_FUZZ_PKT_H

#include "fuzz_common.h"
#include "pkt_same.h"

struct fuzz_pkt_list {
	struct csd_packet *p;
	size_t n, cap;
};

struct fuzz_pkt_ops {
	void *(*make)(const struct csd_trace_config *cfg);
	void (*destroy)(void *dec);
	int (*feed)(void *dec, const struct csd_bytes *in);
	int (*next)(void *dec, struct csd_packet *pkt);
	int (*finish)(void *dec);
	int (*brief)(void *dec, struct csd_pkt_brief *out, size_t cap, uint64_t *base);
};

static void *fuzz_etm3_make(const struct csd_trace_config *cfg) { return csd_etm3_pkt_new(cfg); }
static void fuzz_etm3_destroy(void *d) { csd_etm3_pkt_free(d); }
static int fuzz_etm3_feed(void *d, const struct csd_bytes *in) { return csd_etm3_pkt_feed(d, in); }
static int fuzz_etm3_next(void *d, struct csd_packet *p) { return csd_etm3_pkt_next(d, p); }
static int fuzz_etm3_finish(void *d) { return csd_etm3_pkt_finish(d); }
static int fuzz_etm3_brief(void *d, struct csd_pkt_brief *o, size_t cap, uint64_t *base)
{
	return csd_etm3_pkt_next_brief(d, o, cap, base);
}
static void *fuzz_ptm_make(const struct csd_trace_config *cfg) { return csd_ptm_pkt_new(cfg); }
static void fuzz_ptm_destroy(void *d) { csd_ptm_pkt_free(d); }
static int fuzz_ptm_feed(void *d, const struct csd_bytes *in) { return csd_ptm_pkt_feed(d, in); }
static int fuzz_ptm_next(void *d, struct csd_packet *p) { return csd_ptm_pkt_next(d, p); }
static int fuzz_ptm_finish(void *d) { return csd_ptm_pkt_finish(d); }
static int fuzz_ptm_brief(void *d, struct csd_pkt_brief *o, size_t cap, uint64_t *base)
{
	return csd_ptm_pkt_next_brief(d, o, cap, base);
}

static const struct fuzz_pkt_ops fuzz_etm3_ops = {
	fuzz_etm3_make, fuzz_etm3_destroy, fuzz_etm3_feed, fuzz_etm3_next, fuzz_etm3_finish, fuzz_etm3_brief,
};
static const struct fuzz_pkt_ops fuzz_ptm_ops = {
	fuzz_ptm_make, fuzz_ptm_destroy, fuzz_ptm_feed, fuzz_ptm_next, fuzz_ptm_finish, fuzz_ptm_brief,
};

/* Field checks for one packet; `next_index` is where it must start. */
static void fuzz_pkt_check(const struct fuzz_stream *st, const struct csd_packet *p, size_t *next_index)
{
	FUZZ_CHECK(p->type >= CSD_PKT_NOSYNC && p->type < CSD_PKT_TYPE_COUNT);
	FUZZ_CHECK(p->size >= 1);
	long i = fuzz_stream_index(st, p->offset);
	FUZZ_CHECK(i >= 0);
	FUZZ_CHECK((size_t)i == *next_index);
	FUZZ_CHECK(p->size <= st->size - (size_t)i);
	size_t r = p->size < CSD_PKT_RAW_MAX ? p->size : CSD_PKT_RAW_MAX;
	FUZZ_CHECK(memcmp(p->raw, st->data + i, r) == 0);
	*next_index = (size_t)i + p->size;
	FUZZ_CHECK((p->type == CSD_PKT_ERROR || p->type == CSD_PKT_TRUNCATED) == (p->error != NULL));
	FUZZ_CHECK(p->isa <= CSD_ISA_JAZELLE);
	FUZZ_CHECK(p->reason <= CSD_REASON_DEBUG_EXIT);
	FUZZ_CHECK(p->atoms.num <= 32);
	FUZZ_CHECK(p->atoms.num == 32 || (p->atoms.en >> p->atoms.num) == 0);
	FUZZ_CHECK(p->atoms.format <= 4);
	FUZZ_CHECK(p->data_size == 0 || p->data_size == 1 || p->data_size == 2 || p->data_size == 4);
	FUZZ_CHECK(p->addr_bytes <= 5);
	FUZZ_CHECK(p->tag <= 15);
}

#define FUZZ_BRIEF_MAX 64

/* The next packet: in brief when brief_cap > 0 and the decoder has some
 * (kept in br[], *nbr of them, *ibr taken, offsets from *base), else one
 * by one. A brief packet is expanded and its raw bytes taken from the
 * stream. */
static int fuzz_pkt_take(const struct fuzz_pkt_ops *ops, void *dec, const struct fuzz_stream *st, size_t brief_cap,
			 struct csd_pkt_brief *br, int *nbr, int *ibr, uint64_t *base, struct csd_packet *pkt)
{
	if (brief_cap && *ibr >= *nbr) {
		*nbr = ops->brief(dec, br, brief_cap, base);
		*ibr = 0;
		FUZZ_CHECK(*nbr >= 0 && (size_t)*nbr <= brief_cap);
	}
	if (brief_cap && *ibr < *nbr) {
		const struct csd_pkt_brief *b = &br[(*ibr)++];
		FUZZ_CHECK(b->type == CSD_PKT_PHEADER || b->type == CSD_PKT_ATOM || b->type == CSD_PKT_BRANCH ||
			   b->type == CSD_PKT_CYCLE_COUNT || b->type == CSD_PKT_ISYNC ||
			   (b->type == CSD_PKT_TIMESTAMP && ops == &fuzz_etm3_ops));
		FUZZ_CHECK(b->num_atoms == 0 || b->type == CSD_PKT_PHEADER || b->type == CSD_PKT_ATOM);
		FUZZ_CHECK(csd_pkt_brief_expand(b, *base, pkt) == CSD_OK);
		long i = fuzz_stream_index(st, pkt->offset);
		FUZZ_CHECK(i >= 0 && pkt->size >= 1 && pkt->size <= st->size - (size_t)i);
		memcpy(pkt->raw, st->data + i, pkt->size < CSD_PKT_RAW_MAX ? pkt->size : CSD_PKT_RAW_MAX);
		return CSD_OK;
	}
	return ops->next(dec, pkt);
}

/* Decode the whole stream with pieces from `sp`; packets appended to out.
 * brief_cap > 0: packets in brief where the decoder gives them. */
static void fuzz_pkt_decode(const struct fuzz_pkt_ops *ops, const struct csd_trace_config *cfg,
			    const struct fuzz_stream *st, struct fuzz_split *sp, size_t brief_cap,
			    struct fuzz_pkt_list *out)
{
	struct csd_pkt_brief br[FUZZ_BRIEF_MAX];
	int nbr = 0, ibr = 0;
	uint64_t brbase = 0;
	void *dec = ops->make(cfg);
	if (!dec)
		return;
	size_t pos = 0, next_index = 0;
	size_t limit = st->size + 2; /* packets: each takes a byte, bar a final report */
	unsigned empty_feeds = 0;
	struct csd_packet pkt;
	int rc;
	while (pos < st->size) {
		size_t n = fuzz_split_next(sp, st->size - pos);
		if (n == 0 && ++empty_feeds > 64)
			n = 1;
		struct csd_bytes b = fuzz_stream_run(st, pos, n);
		FUZZ_CHECK(ops->feed(dec, &b) == CSD_OK);
		pos += n;
		while ((rc = fuzz_pkt_take(ops, dec, st, brief_cap, br, &nbr, &ibr, &brbase, &pkt)) == CSD_OK) {
			fuzz_pkt_check(st, &pkt, &next_index);
			/* Not past the bytes given so far; nothing cut before the end. */
			FUZZ_CHECK(next_index <= pos);
			FUZZ_CHECK(pkt.type != CSD_PKT_TRUNCATED);
			out->p = fuzz_grow(out->p, &out->cap, out->n + 1, sizeof(*out->p));
			out->p[out->n++] = pkt;
			FUZZ_CHECK(out->n <= limit);
		}
		FUZZ_CHECK(rc == CSD_EAGAIN);
	}
	FUZZ_CHECK(ops->finish(dec) == CSD_OK);
	int cut = 0;
	while ((rc = fuzz_pkt_take(ops, dec, st, brief_cap, br, &nbr, &ibr, &brbase, &pkt)) == CSD_OK) {
		FUZZ_CHECK(!cut); /* a truncated packet is the last */
		fuzz_pkt_check(st, &pkt, &next_index);
		cut = pkt.type == CSD_PKT_TRUNCATED;
		FUZZ_CHECK(!cut || next_index == st->size);
		out->p = fuzz_grow(out->p, &out->cap, out->n + 1, sizeof(*out->p));
		out->p[out->n++] = pkt;
		FUZZ_CHECK(out->n <= limit);
	}
	FUZZ_CHECK(rc == CSD_EEOS);
	FUZZ_CHECK(ops->next(dec, &pkt) == CSD_EEOS);
	/* Every byte is in exactly one packet. */
	FUZZ_CHECK(next_index == st->size);
	ops->destroy(dec);
}

static int fuzz_pkt_run(const struct fuzz_pkt_ops *ops, uint32_t protocol, const uint8_t *data, size_t size)
{
	struct fuzz_hdr h;
	if (!fuzz_hdr_parse(data, size, &h))
		return 0;
	struct csd_trace_config cfg = fuzz_hdr_config(&h, protocol);
	struct fuzz_stream st;
	if (!fuzz_stream_init(&st, data + FUZZ_HDR_SIZE, size - FUZZ_HDR_SIZE, (h.misc & FUZZ_MISC_SPREAD) != 0))
		return 0;
	struct fuzz_pkt_list whole = { NULL, 0, 0 }, split = { NULL, 0, 0 };
	struct fuzz_split sp;
	fuzz_split_init(&sp, 0, 0);
	fuzz_pkt_decode(ops, &cfg, &st, &sp, 0, &whole);
	fuzz_split_init(&sp, h.split_mode, h.split_seed);
	fuzz_pkt_decode(ops, &cfg, &st, &sp, 0, &split);
	FUZZ_CHECK(whole.n == split.n);
	for (size_t i = 0; i < whole.n; i++)
		FUZZ_CHECK(csd_test_pkt_same(&whole.p[i], &split.p[i]));
	/* In brief, in the same pieces; caps 1 .. FUZZ_BRIEF_MAX. */
	struct fuzz_pkt_list brief = { NULL, 0, 0 };
	fuzz_split_init(&sp, h.split_mode, h.split_seed);
	fuzz_pkt_decode(ops, &cfg, &st, &sp, 1 + h.split_seed % FUZZ_BRIEF_MAX, &brief);
	FUZZ_CHECK(whole.n == brief.n);
	for (size_t i = 0; i < whole.n; i++)
		FUZZ_CHECK(csd_test_pkt_same(&whole.p[i], &brief.p[i]));
	free(whole.p);
	free(split.p);
	free(brief.p);
	fuzz_stream_free(&st);
	return 0;
}

#endif
