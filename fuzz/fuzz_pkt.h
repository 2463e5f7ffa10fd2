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
 *   - the work is bounded: at most one packet per input byte, plus two;
 *   - cut at sync points (csd_sync_scan, a least distance chosen by the
 *     input) into chunks, each decoded by a fresh decoder that saves its
 *     state at the first sync points inside it, and joined as csdec.h
 *     says (csd_*_pkt_state_join, the chunk's timestamps completed): the
 *     same packets again.
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
	int (*save)(const void *dec, csd_pkt_state **out);
	int (*join)(csd_pkt_state *st, const void *serial);
	int (*complete)(const csd_pkt_state *st, void *dec);
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
static int fuzz_etm3_save(const void *d, csd_pkt_state **o) { return csd_etm3_pkt_state_save(d, o); }
static int fuzz_etm3_join(csd_pkt_state *st, const void *d) { return csd_etm3_pkt_state_join(st, d); }
static int fuzz_etm3_complete(const csd_pkt_state *st, void *d) { return csd_etm3_pkt_state_complete(st, d); }
static void *fuzz_ptm_make(const struct csd_trace_config *cfg) { return csd_ptm_pkt_new(cfg); }
static void fuzz_ptm_destroy(void *d) { csd_ptm_pkt_free(d); }
static int fuzz_ptm_feed(void *d, const struct csd_bytes *in) { return csd_ptm_pkt_feed(d, in); }
static int fuzz_ptm_next(void *d, struct csd_packet *p) { return csd_ptm_pkt_next(d, p); }
static int fuzz_ptm_finish(void *d) { return csd_ptm_pkt_finish(d); }
static int fuzz_ptm_brief(void *d, struct csd_pkt_brief *o, size_t cap, uint64_t *base)
{
	return csd_ptm_pkt_next_brief(d, o, cap, base);
}
static int fuzz_ptm_save(const void *d, csd_pkt_state **o) { return csd_ptm_pkt_state_save(d, o); }
static int fuzz_ptm_join(csd_pkt_state *st, const void *d) { return csd_ptm_pkt_state_join(st, d); }
static int fuzz_ptm_complete(const csd_pkt_state *st, void *d) { return csd_ptm_pkt_state_complete(st, d); }

static const struct fuzz_pkt_ops fuzz_etm3_ops = {
	fuzz_etm3_make, fuzz_etm3_destroy, fuzz_etm3_feed, fuzz_etm3_next, fuzz_etm3_finish, fuzz_etm3_brief,
	fuzz_etm3_save, fuzz_etm3_join, fuzz_etm3_complete,
};
static const struct fuzz_pkt_ops fuzz_ptm_ops = {
	fuzz_ptm_make, fuzz_ptm_destroy, fuzz_ptm_feed, fuzz_ptm_next, fuzz_ptm_finish, fuzz_ptm_brief,
	fuzz_ptm_save, fuzz_ptm_join, fuzz_ptm_complete,
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

/* Bytes [from, to) through dec, its packets appended to out. */
static void fuzz_pkt_span(const struct fuzz_pkt_ops *ops, void *dec, const struct fuzz_stream *st, size_t from,
			  size_t to, struct fuzz_pkt_list *out)
{
	if (to > from) {
		struct csd_bytes b = fuzz_stream_run(st, from, to - from);
		FUZZ_CHECK(ops->feed(dec, &b) == CSD_OK);
	}
	struct csd_packet pkt;
	int rc;
	while ((rc = ops->next(dec, &pkt)) == CSD_OK) {
		out->p = fuzz_grow(out->p, &out->cap, out->n + 1, sizeof(*out->p));
		out->p[out->n++] = pkt;
	}
	FUZZ_CHECK(rc == CSD_EAGAIN || rc == CSD_EEOS);
}

#define FUZZ_SAVES 3

/* The stream cut at sync points at least `gap` bytes apart into chunks,
 * joined as csdec.h says; the packets into out. */
static void fuzz_pkt_chunked(const struct fuzz_pkt_ops *ops, const struct csd_trace_config *cfg,
			     const struct fuzz_stream *st, size_t gap, struct fuzz_pkt_list *out)
{
	size_t ncut = 0, nsync = 0;
	size_t *cut = malloc((st->size + 2) * sizeof(*cut));
	size_t *sync = malloc((st->size + 1) * sizeof(*sync));
	FUZZ_CHECK(cut && sync);
	FUZZ_CHECK(csd_sync_scan(st->data, st->size, gap, cut + 1, st->size, &ncut) == CSD_OK);
	FUZZ_CHECK(csd_sync_scan(st->data, st->size, 0, sync, st->size, &nsync) == CSD_OK);
	cut[0] = 0;
	cut[++ncut] = st->size;
	void *prev = ops->make(cfg);
	if (!prev)
		goto out;
	fuzz_pkt_span(ops, prev, st, 0, cut[1], out);
	size_t si = 0;
	for (size_t k = 1; k < ncut; k++) {
		void *d = ops->make(cfg);
		if (!d)
			break;
		struct fuzz_pkt_list rk = { NULL, 0, 0 };
		csd_pkt_state *saved[FUZZ_SAVES];
		size_t at[FUZZ_SAVES], mark[FUZZ_SAVES], nsave = 0, pos = cut[k];
		while (si < nsync && sync[si] <= cut[k])
			si++;
		for (size_t j = si; j < nsync && sync[j] <= cut[k + 1] && nsave < FUZZ_SAVES; j++) {
			fuzz_pkt_span(ops, d, st, pos, sync[j], &rk);
			pos = sync[j];
			FUZZ_CHECK(ops->save(d, &saved[nsave]) == CSD_OK);
			mark[nsave] = rk.n;
			at[nsave++] = pos;
		}
		fuzz_pkt_span(ops, d, st, pos, cut[k + 1], &rk);
		size_t ppos = cut[k];
		int matched = 0;
		for (size_t j = 0; j < nsave && !matched; j++) {
			fuzz_pkt_span(ops, prev, st, ppos, at[j], out);
			ppos = at[j];
			const int m = ops->join(saved[j], prev);
			FUZZ_CHECK(m == 0 || m == 1);
			if (m != 1)
				continue;
			matched = 1;
			FUZZ_CHECK(csd_pkt_state_complete_packets(saved[j], rk.p + mark[j], rk.n - mark[j]) == CSD_OK);
			FUZZ_CHECK(ops->complete(saved[j], d) == CSD_OK);
			for (size_t i = mark[j]; i < rk.n; i++) {
				out->p = fuzz_grow(out->p, &out->cap, out->n + 1, sizeof(*out->p));
				out->p[out->n++] = rk.p[i];
			}
		}
		for (size_t j = 0; j < nsave; j++)
			csd_pkt_state_free(saved[j]);
		if (matched) {
			ops->destroy(prev);
			prev = d;
		} else {
			fuzz_pkt_span(ops, prev, st, ppos, cut[k + 1], out);
			ops->destroy(d);
		}
		free(rk.p);
	}
	FUZZ_CHECK(ops->finish(prev) == CSD_OK);
	fuzz_pkt_span(ops, prev, st, 0, 0, out);
	ops->destroy(prev);
out:
	free(cut);
	free(sync);
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
	/* In chunks: cuts at every sync point, or at least 1 .. 255 bytes apart. */
	struct fuzz_pkt_list chunked = { NULL, 0, 0 };
	fuzz_pkt_chunked(ops, &cfg, &st, h.split_seed % 257, &chunked);
	FUZZ_CHECK(whole.n == chunked.n);
	for (size_t i = 0; i < whole.n && i < chunked.n; i++)
		FUZZ_CHECK(csd_test_pkt_same(&whole.p[i], &chunked.p[i]));
	free(whole.p);
	free(split.p);
	free(brief.p);
	free(chunked.p);
	fuzz_stream_free(&st);
	return 0;
}

#endif
