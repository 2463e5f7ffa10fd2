/*
 * Chunked decoding of one source (csdec.h, "Chunked decoding of one
 * source"): the source is cut at sync points (every one, and every few),
 * each chunk decoded by a fresh flow decoder that saves its state at the
 * first sync points inside it, and the chunks joined as the header says:
 * the previous decoder goes on into the next chunk until its state matches
 * one saved there (csd_flow_state_join, the chunk's timestamps completed),
 * else through the whole chunk. The joined records must equal the serial
 * decode's, every field, in range and instruction mode, for every source
 * of the TC2 snapshot and of the generated round-trip snapshots, and of
 * timestamped captures made here. The counts of matches and of fallbacks
 * are checked too, so that neither path goes untried, and timestamped
 * sources must mostly match. The packet decoders of the same sources are
 * chunked and joined alike (csd_*_pkt_state_*): their packets must equal
 * the serial decoder's, every field.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flow_run.h"
#include "a32_call.h"
#include "../fuzz/pkt_same.h"

/* States saved per chunk: the first sync points inside it. */
#define SAVES 4

struct source {
	uint8_t *data;
	uint64_t *off;
	size_t n, cap;
};

static void source_add(struct source *s, const struct csd_bytes *b)
{
	if (s->n + b->size > s->cap) {
		size_t c = s->cap ? s->cap : 65536;
		while (c < s->n + b->size)
			c *= 2;
		s->data = realloc(s->data, c);
		s->off = realloc(s->off, c * sizeof(*s->off));
		if (!s->data || !s->off)
			abort();
		s->cap = c;
	}
	for (size_t i = 0; i < b->size; i++) {
		s->data[s->n + i] = b->data[i];
		s->off[s->n + i] = b->offsets ? b->offsets[i] : b->base + i;
	}
	s->n += b->size;
}

/* The bytes of source id in buffer file path (deframed as fmt says). */
static int load_source(const char *path, int fmt, uint8_t id, struct source *s)
{
	size_t len;
	uint8_t *file = check_read_file(path, &len);
	if (!file)
		return -1;
	struct csd_frame_config frc = { .size = sizeof(frc), .format = fmt, .raw_id = id };
	csd_frame_decoder *frd = csd_frame_new(&frc);
	if (!frd) {
		free(file);
		return -1;
	}
	csd_frame_feed(frd, file, len, 0);
	csd_frame_finish(frd);
	struct csd_frame_out fo;
	while (csd_frame_next(frd, &fo) == 0)
		if (fo.event == CSD_FRAME_DATA && fo.bytes.id == id)
			source_add(s, &fo.bytes);
	csd_frame_free(frd);
	free(file);
	return 0;
}

struct ctx {
	const struct source *src;
	struct csd_flow_config fc;
	uint8_t id;
};

/* The decoding of src (its bytes of trace ID id) with tc, img and flags. */
static struct ctx ctx_of(const struct source *src, uint8_t id, const struct csd_trace_config *tc, csd_image *img,
			 uint32_t flags)
{
	struct ctx c = { .src = src, .id = id };
	c.fc.size = sizeof(c.fc);
	c.fc.trace = tc;
	c.fc.image = img;
	c.fc.flags = flags;
	return c;
}

static void feed(const struct ctx *c, csd_flow_decoder *d, size_t from, size_t to)
{
	if (to <= from)
		return;
	struct csd_bytes b = { .data = c->src->data + from, .size = to - from, .offsets = c->src->off + from,
			       .id = c->id };
	CHECK_EQ(csd_flow_feed(d, &b), 0);
}

struct stats {
	size_t joins, matched, fallback, mismatched_saves, cuts;
	/* Of those, the joins in sources with timestamp records. */
	size_t ts_sources, ts_joins, ts_matched;
	/* ... and in PTM sources with the return stack (ETMCR bit 29). */
	size_t rs_sources, rs_joins, rs_matched;
	/* Kept timestamp records that the join completed (changed). */
	size_t completed;
};

/* Decode with a cut at every `step`-th sync point; the joined records into
 * *out. */
static void chunked_at(const struct ctx *c, const size_t *sync, size_t nsync, const size_t *cut, size_t ncut,
		       struct flow_run *out, struct stats *st);

static void chunked(const struct ctx *c, const size_t *sync, size_t nsync, size_t step, struct flow_run *out,
		    struct stats *st)
{
	size_t ncut = 0;
	size_t *cut = malloc((nsync / step + 2) * sizeof(*cut));
	cut[ncut++] = 0;
	for (size_t i = step - 1; i < nsync; i += step)
		cut[ncut++] = sync[i];
	cut[ncut] = c->src->n;
	chunked_at(c, sync, nsync, cut, ncut, out, st);
	free(cut);
}

/* The same with the cuts given: cut[0] = 0 < cut[1] < ... < cut[ncut] =
 * the source's end. */
static void chunked_at(const struct ctx *c, const size_t *sync, size_t nsync, const size_t *cut, size_t ncut,
		       struct flow_run *out, struct stats *st)
{
	st->cuts += ncut - 1;
	csd_flow_decoder *prev = csd_flow_new(&c->fc);
	feed(c, prev, 0, cut[1]);
	flow_run_drain(prev, out, FLOW_RUN_NEXT);
	size_t si = 0; /* first sync point after the current cut */
	for (size_t k = 1; k < ncut; k++) {
		/* Chunk k alone, saving its state at its first sync points. */
		csd_flow_decoder *d = csd_flow_new(&c->fc);
		struct flow_run rk;
		memset(&rk, 0, sizeof(rk));
		csd_flow_state *saved[SAVES];
		size_t at[SAVES], nsave = 0, pos = cut[k];
		while (si < nsync && sync[si] <= cut[k])
			si++;
		for (size_t j = si; j < nsync && sync[j] <= cut[k + 1] && nsave < SAVES; j++) {
			feed(c, d, pos, sync[j]);
			flow_run_drain(d, &rk, FLOW_RUN_NEXT);
			pos = sync[j];
			CHECK_EQ(csd_flow_state_save(d, &saved[nsave]), 0);
			at[nsave++] = pos;
		}
		feed(c, d, pos, cut[k + 1]);
		flow_run_drain(d, &rk, FLOW_RUN_NEXT);
		/* The join: the previous decoder goes on into chunk k. */
		st->joins++;
		size_t ppos = cut[k];
		int matched = 0;
		for (size_t j = 0; j < nsave && !matched; j++) {
			feed(c, prev, ppos, at[j]);
			flow_run_drain(prev, out, FLOW_RUN_NEXT);
			ppos = at[j];
			int m = csd_flow_state_join(saved[j], prev);
			CHECK(m == 0 || m == 1);
			if (m == 1) {
				matched = 1;
				uint64_t from = csd_flow_state_records(saved[j]);
				CHECK(from <= rk.n);
				if (from > rk.n)
					from = rk.n;
				/* The chunk's timestamps completed: the records
				 * kept, then its decoder, which goes on. */
				const size_t keep = rk.n - (size_t)from;
				struct csd_record *was = malloc((keep + 1) * sizeof(*was));
				if (!was)
					abort();
				memcpy(was, rk.rec + from, keep * sizeof(*was));
				CHECK_EQ(csd_flow_state_complete_records(saved[j], rk.rec + from, keep), 0);
				for (size_t i = 0; i < keep; i++) {
					const int changed = !flow_run_same(&was[i], &rk.rec[from + i]);
					CHECK(!changed || was[i].type == CSD_REC_TIMESTAMP);
					st->completed += (size_t)changed;
				}
				free(was);
				CHECK_EQ(csd_flow_state_complete(saved[j], d), 0);
				for (size_t i = (size_t)from; i < rk.n; i++)
					flow_run_push(out, &rk.rec[i]);
			} else {
				st->mismatched_saves++;
			}
		}
		for (size_t j = 0; j < nsave; j++)
			csd_flow_state_free(saved[j]);
		if (matched) {
			st->matched++;
			csd_flow_free(prev);
			prev = d;
		} else {
			st->fallback++;
			feed(c, prev, ppos, cut[k + 1]);
			flow_run_drain(prev, out, FLOW_RUN_NEXT);
			csd_flow_free(d);
		}
		flow_run_free(&rk);
	}
	csd_flow_finish(prev);
	flow_run_drain(prev, out, FLOW_RUN_NEXT);
	csd_flow_free(prev);
}

/* The serial decode, every record into *out (emptied first). */
static void serial(const struct ctx *c, struct flow_run *out)
{
	memset(out, 0, sizeof(*out));
	csd_flow_decoder *d = csd_flow_new(&c->fc);
	feed(c, d, 0, c->src->n);
	flow_run_drain(d, out, FLOW_RUN_NEXT);
	csd_flow_finish(d);
	flow_run_drain(d, out, FLOW_RUN_NEXT);
	csd_flow_free(d);
}

static size_t compare(const struct flow_run *a, const struct flow_run *b)
{
	if (a->n != b->n)
		return a->n > b->n ? a->n - b->n : b->n - a->n;
	size_t bad = 0;
	for (size_t i = 0; i < a->n; i++)
		bad += !flow_run_same(&a->rec[i], &b->rec[i]);
	return bad;
}

/* ---- Packet decoders in chunks (csd_*_pkt_state_*) ---- */

/* A packet decoder of either protocol. */
struct pdec {
	csd_etm3_pkt_decoder *e;
	csd_ptm_pkt_decoder *p;
};

struct pkt_run {
	struct csd_packet *pkt;
	size_t n, cap;
};

static void pkt_push(struct pkt_run *r, const struct csd_packet *p)
{
	if (r->n == r->cap) {
		r->cap = r->cap ? r->cap * 2 : 4096;
		r->pkt = realloc(r->pkt, r->cap * sizeof(*r->pkt));
		if (!r->pkt)
			abort();
	}
	r->pkt[r->n++] = *p;
}

static struct pdec pdec_new(const struct csd_trace_config *tc)
{
	struct pdec d = { 0 };
	if (tc->protocol == CSD_PROTO_PTM)
		d.p = csd_ptm_pkt_new(tc);
	else
		d.e = csd_etm3_pkt_new(tc);
	CHECK(d.p || d.e);
	if (!d.p && !d.e)
		abort();
	return d;
}

static void pdec_free(struct pdec *d)
{
	csd_etm3_pkt_free(d->e);
	csd_ptm_pkt_free(d->p);
}

/* Bytes [from, to) of the source through d, its packets into *out. */
static void pdec_feed(const struct source *src, struct pdec *d, size_t from, size_t to, struct pkt_run *out)
{
	if (to > from) {
		struct csd_bytes b = { .data = src->data + from, .size = to - from, .offsets = src->off + from };
		CHECK_EQ(d->e ? csd_etm3_pkt_feed(d->e, &b) : csd_ptm_pkt_feed(d->p, &b), 0);
	}
	struct csd_packet p;
	int rc;
	while ((rc = d->e ? csd_etm3_pkt_next(d->e, &p) : csd_ptm_pkt_next(d->p, &p)) == 0)
		pkt_push(out, &p);
	CHECK(rc == CSD_EAGAIN || rc == CSD_EEOS);
}

static void pdec_finish(const struct source *src, struct pdec *d, struct pkt_run *out)
{
	CHECK_EQ(d->e ? csd_etm3_pkt_finish(d->e) : csd_ptm_pkt_finish(d->p), 0);
	pdec_feed(src, d, 0, 0, out);
}

/* Packets of the whole source from one decoder. */
static void pkt_serial(const struct source *src, const struct csd_trace_config *tc, struct pkt_run *out)
{
	memset(out, 0, sizeof(*out));
	struct pdec d = pdec_new(tc);
	pdec_feed(src, &d, 0, src->n, out);
	pdec_finish(src, &d, out);
	pdec_free(&d);
}

/* The packets of chunks cut at every step-th sync point, joined as
 * csdec.h says; the join counts into *st. */
static void pkt_chunked(const struct source *src, const struct csd_trace_config *tc, const size_t *sync,
			size_t nsync, size_t step, struct pkt_run *out, struct stats *st)
{
	memset(out, 0, sizeof(*out));
	size_t ncut = 0;
	size_t *cut = malloc((nsync / step + 2) * sizeof(*cut));
	if (!cut)
		abort();
	cut[ncut++] = 0;
	for (size_t i = step - 1; i < nsync; i += step)
		cut[ncut++] = sync[i];
	cut[ncut] = src->n;
	struct pdec prev = pdec_new(tc);
	pdec_feed(src, &prev, 0, cut[1], out);
	size_t si = 0;
	for (size_t k = 1; k < ncut; k++) {
		struct pdec d = pdec_new(tc);
		struct pkt_run rk = { 0 };
		csd_pkt_state *saved[SAVES];
		size_t at[SAVES], mark[SAVES], nsave = 0, pos = cut[k];
		while (si < nsync && sync[si] <= cut[k])
			si++;
		for (size_t j = si; j < nsync && sync[j] <= cut[k + 1] && nsave < SAVES; j++) {
			pdec_feed(src, &d, pos, sync[j], &rk);
			pos = sync[j];
			CHECK_EQ(d.e ? csd_etm3_pkt_state_save(d.e, &saved[nsave]) : csd_ptm_pkt_state_save(d.p, &saved[nsave]), 0);
			mark[nsave] = rk.n;
			at[nsave++] = pos;
		}
		pdec_feed(src, &d, pos, cut[k + 1], &rk);
		st->joins++;
		size_t ppos = cut[k];
		int matched = 0;
		for (size_t j = 0; j < nsave && !matched; j++) {
			pdec_feed(src, &prev, ppos, at[j], out);
			ppos = at[j];
			const int m = prev.e ? csd_etm3_pkt_state_join(saved[j], prev.e)
					     : csd_ptm_pkt_state_join(saved[j], prev.p);
			CHECK(m == 0 || m == 1);
			if (m != 1) {
				st->mismatched_saves++;
				continue;
			}
			matched = 1;
			/* In two calls, to show that the completion follows
			 * the timestamp bits across calls. */
			const size_t n = rk.n - mark[j], half = n / 2;
			struct csd_packet *was = malloc((n + 1) * sizeof(*was));
			if (!was)
				abort();
			memcpy(was, rk.pkt + mark[j], n * sizeof(*was));
			CHECK_EQ(csd_pkt_state_complete_packets(saved[j], rk.pkt + mark[j], half), 0);
			CHECK_EQ(csd_pkt_state_complete_packets(saved[j], rk.pkt + mark[j] + half, n - half), 0);
			for (size_t i = 0; i < n; i++) {
				const int changed = !csd_test_pkt_same(&was[i], &rk.pkt[mark[j] + i]);
				CHECK(!changed || was[i].type == CSD_PKT_TIMESTAMP);
				st->completed += (size_t)changed;
			}
			free(was);
			CHECK_EQ(d.e ? csd_etm3_pkt_state_complete(saved[j], d.e) : csd_ptm_pkt_state_complete(saved[j], d.p), 0);
			for (size_t i = mark[j]; i < rk.n; i++)
				pkt_push(out, &rk.pkt[i]);
		}
		for (size_t j = 0; j < nsave; j++)
			csd_pkt_state_free(saved[j]);
		if (matched) {
			st->matched++;
			pdec_free(&prev);
			prev = d;
		} else {
			st->fallback++;
			pdec_feed(src, &prev, ppos, cut[k + 1], out);
			pdec_free(&d);
		}
		free(rk.pkt);
	}
	pdec_finish(src, &prev, out);
	pdec_free(&prev);
	free(cut);
}

static size_t pkt_compare(const struct pkt_run *a, const struct pkt_run *b)
{
	if (a->n != b->n)
		return a->n > b->n ? a->n - b->n : b->n - a->n;
	size_t bad = 0;
	for (size_t i = 0; i < a->n; i++)
		bad += !csd_test_pkt_same(&a->pkt[i], &b->pkt[i]);
	return bad;
}

/* The packet state calls' refusals. */
static void pkt_state_args(void)
{
	const struct csd_trace_config ptm = { .size = sizeof(ptm), .protocol = CSD_PROTO_PTM, .etmidr = 0x411CF312 };
	const struct csd_trace_config etm3 = { .size = sizeof(etm3), .protocol = CSD_PROTO_ETM3, .etmidr = 0x410CF250 };
	csd_ptm_pkt_decoder *p = csd_ptm_pkt_new(&ptm);
	csd_etm3_pkt_decoder *e = csd_etm3_pkt_new(&etm3);
	CHECK(p && e);
	if (!p || !e)
		abort();
	static const uint8_t sync[] = { 0, 0, 0, 0, 0, 0x80, 0x08, 0x00, 0x20, 0, 0, 0x01 };
	csd_pkt_state *st = NULL, *se = NULL;
	CHECK_EQ(csd_ptm_pkt_state_save(NULL, &st), CSD_EINVAL);
	CHECK_EQ(csd_ptm_pkt_state_save(p, NULL), CSD_EINVAL);
	/* Bytes fed and not yet used. */
	struct csd_bytes b = { .data = sync, .size = sizeof(sync) };
	CHECK_EQ(csd_ptm_pkt_feed(p, &b), 0);
	CHECK_EQ(csd_ptm_pkt_state_save(p, &st), CSD_EINVAL);
	struct csd_packet pk;
	while (csd_ptm_pkt_next(p, &pk) == 0)
		;
	CHECK_EQ(csd_ptm_pkt_state_save(p, &st), 0);
	CHECK_EQ(csd_etm3_pkt_state_save(e, &se), 0);
	/* Other protocols, nothing joined yet, NULLs. */
	CHECK_EQ(csd_etm3_pkt_state_join(st, e), CSD_EINVAL);
	CHECK_EQ(csd_ptm_pkt_state_join(se, p), CSD_EINVAL);
	CHECK_EQ(csd_ptm_pkt_state_join(NULL, p), CSD_EINVAL);
	CHECK_EQ(csd_ptm_pkt_state_join(st, NULL), CSD_EINVAL);
	CHECK_EQ(csd_ptm_pkt_state_complete(st, p), CSD_EINVAL);
	CHECK_EQ(csd_pkt_state_complete_packets(st, &pk, 1), CSD_EINVAL);
	/* A fresh decoder is not in p's state (not synchronised, no
	 * address); p is. */
	csd_ptm_pkt_decoder *q = csd_ptm_pkt_new(&ptm);
	CHECK_EQ(csd_ptm_pkt_state_join(st, q), 0);
	CHECK_EQ(csd_ptm_pkt_state_join(st, p), 1);
	CHECK_EQ(csd_etm3_pkt_state_complete(st, e), CSD_EINVAL);
	CHECK_EQ(csd_pkt_state_complete_packets(st, NULL, 1), CSD_EINVAL);
	CHECK_EQ(csd_pkt_state_complete_packets(st, NULL, 0), 0);
	CHECK_EQ(csd_ptm_pkt_state_complete(st, p), 0);
	/* After the end of the stream: no state. */
	csd_pkt_state_free(st);
	CHECK_EQ(csd_ptm_pkt_finish(p), 0);
	CHECK_EQ(csd_ptm_pkt_state_save(p, &st), CSD_EINVAL);
	csd_pkt_state_free(se);
	csd_pkt_state_free(NULL);
	csd_ptm_pkt_free(p);
	csd_ptm_pkt_free(q);
	csd_etm3_pkt_free(e);
}

/* One source's packets cut at every sync point and at every third, against
 * the serial decode's. */
static void pkt_source(const char *name, const struct source *src, const struct csd_trace_config *tc,
		       const size_t *sync, size_t nsync, struct stats *st)
{
	struct pkt_run ser;
	pkt_serial(src, tc, &ser);
	for (size_t step = 1; step <= 3; step += 2) {
		struct pkt_run ch;
		pkt_chunked(src, tc, sync, nsync, step, &ch, st);
		const size_t bad = pkt_compare(&ser, &ch);
		if (bad)
			fprintf(stderr, "%s packets, step %zu: %zu of %zu packets differ (%zu chunked)\n", name, step, bad,
				ser.n, ch.n);
		CHECK_EQ(bad, 0);
		free(ch.pkt);
	}
	free(ser.pkt);
}

/* st[0]: the flow decoders' joins, st[1] the packet decoders'. */
static void one_source(const char *dir, const struct csd_snapshot *snap, const struct csd_snapshot_source *ss,
		       csd_image *img, struct stats *st)
{
	const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, (size_t)ss->buffer);
	struct source src;
	memset(&src, 0, sizeof(src));
	if (load_source(buf->path, buf->frame_format, ss->config.trace_id, &src) < 0) {
		CHECK(!"source bytes");
		return;
	}
	size_t nsync = 0;
	size_t *sync = malloc((src.n + 1) * sizeof(*sync));
	CHECK_EQ(csd_sync_scan(src.data, src.n, 0, sync, src.n + 1, &nsync), 0);
	/* (Only ETMv3 and PTM sources have packet decoders.) */
	if (ss->config.protocol == CSD_PROTO_ETM3 || ss->config.protocol == CSD_PROTO_PTM)
		pkt_source(dir, &src, &ss->config, sync, nsync, &st[1]);
	for (int mode = 0; mode < 2; mode++) {
		const struct ctx c = ctx_of(&src, ss->config.trace_id, &ss->config, img, mode ? CSD_FLOW_INSN : 0);
		struct flow_run ser;
		serial(&c, &ser);
		int has_ts = 0;
		for (size_t i = 0; i < ser.n && !has_ts; i++)
			has_ts = ser.rec[i].type == CSD_REC_TIMESTAMP;
		const size_t joins0 = st->joins, matched0 = st->matched;
		static const size_t steps[] = { 1, 3 };
		for (size_t s = 0; s < sizeof(steps) / sizeof(steps[0]); s++) {
			struct flow_run ch;
			memset(&ch, 0, sizeof(ch));
			chunked(&c, sync, nsync, steps[s], &ch, st);
			size_t bad = compare(&ser, &ch);
			if (bad)
				fprintf(stderr, "%s id %u %s step %zu: %zu of %zu records differ (%zu chunked)\n", dir,
					ss->config.trace_id, mode ? "insn" : "range", steps[s], bad, ser.n, ch.n);
			CHECK_EQ(bad, 0);
			flow_run_free(&ch);
		}
		if (ss->config.protocol == CSD_PROTO_PTM && (ss->config.etmcr >> 29 & 1)) {
			st->rs_sources++;
			st->rs_joins += st->joins - joins0;
			st->rs_matched += st->matched - matched0;
		}
		if (has_ts) {
			st->ts_sources++;
			st->ts_joins += st->joins - joins0;
			st->ts_matched += st->matched - matched0;
		}
		flow_run_free(&ser);
	}
	free(sync);
	free(src.data);
	free(src.off);
}

static void one_snapshot(const char *dir, struct stats *st)
{
	char err[512];
	csd_snapshot *snap = NULL;
	if (csd_snapshot_open(dir, &snap, err, sizeof(err)) < 0) {
		fprintf(stderr, "%s: %s\n", dir, err);
		CHECK(!"snapshot opens");
		return;
	}
	for (size_t i = 0; i < csd_snapshot_num_sources(snap); i++) {
		const struct csd_snapshot_source *ss = csd_snapshot_source(snap, i);
		if (ss->buffer < 0)
			continue;
		csd_image *img = csd_image_new();
		CHECK(csd_snapshot_load_image(snap, ss->core_name, img) >= 0);
		one_source(dir, snap, ss, img, st);
		csd_image_free(img);
	}
	csd_snapshot_free(snap);
}

/* csd_sync_scan on bytes made here. */
static void scan_cases(void)
{
	static const uint8_t b[] = { 0x08, 0, 0, 0, 0, 0, 0x80, 0x08, 0, 0, 0, 0, 0x80, 0, 0, 0, 0, 0, 0, 0, 0x80,
				     0x42, 0, 0, 0, 0, 0, 0x80 };
	size_t cuts[8], n = 99;
	CHECK_EQ(csd_sync_scan(b, sizeof(b), 0, cuts, 8, &n), 0);
	CHECK_EQ(n, 3);
	CHECK_EQ(cuts[0], 1);
	CHECK_EQ(cuts[1], 13);  /* four zeros at 8 are no A-sync; the run of seven starts at 13 */
	CHECK_EQ(cuts[2], 22);
	CHECK_EQ(csd_sync_scan(b, sizeof(b), 10, cuts, 8, &n), 0);
	CHECK_EQ(n, 1);         /* 1 is too near the start, 22 too near 13 */
	CHECK_EQ(cuts[0], 13);
	CHECK_EQ(csd_sync_scan(b, sizeof(b), 0, cuts, 1, &n), 0);
	CHECK_EQ(n, 1);
	CHECK_EQ(csd_sync_scan(b, sizeof(b), 0, NULL, 1, &n), CSD_EINVAL);
	CHECK_EQ(csd_sync_scan(NULL, 3, 0, cuts, 1, &n), CSD_EINVAL);
	CHECK_EQ(csd_sync_scan(b, sizeof(b), 0, cuts, 1, NULL), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_save(NULL, NULL), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_match(NULL, NULL), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_records(NULL), 0);
	csd_flow_state_free(NULL);
}

/* Captures made here with the encoders: PTM's or ETMv3's. */
struct enc {
	csd_ptm_encoder *pe;
	csd_etm3_encoder *ee;
};

static void put_any(const struct enc *e, struct source *s, const struct csd_packet *p)
{
	uint8_t b[64];
	int n = e->pe ? csd_ptm_enc_packet(e->pe, p, b, sizeof(b)) : csd_etm3_enc_packet(e->ee, p, b, sizeof(b));
	CHECK(n > 0);
	if (n <= 0)
		return;
	struct csd_bytes in = { .data = b, .size = (size_t)n, .base = s->n };
	source_add(s, &in);
}

static void put_pkt(csd_ptm_encoder *pe, struct source *s, const struct csd_packet *p)
{
	const struct enc e = { pe, NULL };
	put_any(&e, s, p);
}

/* A-sync and an A32 I-sync at addr. */
static void sync_at(const struct enc *e, struct source *s, uint32_t addr)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = CSD_PKT_ASYNC;
	put_any(e, s, &p);
	memset(&p, 0, sizeof(p));
	p.type = CSD_PKT_ISYNC;
	p.addr = addr;
	p.isa = CSD_ISA_ARM;
	p.reason = CSD_REASON_PERIODIC;
	p.flags = CSD_PKTF_ISA | CSD_PKTF_SECURITY;
	put_any(e, s, &p);
}

static void put_sync(csd_ptm_encoder *pe, struct source *s, uint32_t addr)
{
	const struct enc e = { pe, NULL };
	sync_at(&e, s, addr);
}

static void put_e(csd_ptm_encoder *pe, struct source *s)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = CSD_PKT_ATOM;
	p.atoms.num = 1;
	p.atoms.en = 1;
	put_pkt(pe, s, &p);
}

/*
 * PTM with the return stack, a call traced before a cut and its return (an
 * E atom with no address: the target is popped) after the next sync point.
 * At that sync point the chunk's decoder knows no return-stack entry where
 * the serial one has the return address, and nothing else differs: the
 * states match (the entry lies in the unknown bottom), unless the chunk's
 * decoder has since popped past its known entries (the return), which it
 * does once it decodes on: then the join is refused (its records, which
 * cannot know where the return goes, would be taken) and the chunk falls
 * back. A chunk that ends at that sync point joins by the match, and the
 * completion gives its decoder the return address for the return.
 */
static void return_stack_joins(void)
{
	const uint32_t etmcr = 1u << 29;
	struct csd_trace_config tc = { .size = sizeof(tc), .protocol = CSD_PROTO_PTM, .etmcr = etmcr,
				       .etmidr = 0x411CF312, .etmccer = 0x34C01AC2 };
	csd_ptm_encoder *pe = csd_ptm_enc_new(&tc);
	CHECK(pe != NULL);
	if (!pe)
		return;
	csd_image *img = a32_call_image();
	struct source src;
	memset(&src, 0, sizeof(src));
	put_sync(pe, &src, 0x1000);
	put_e(pe, &src);            /* bl 0x1020: 0x1010 pushed */
	put_sync(pe, &src, 0x1020); /* the cut (sync[0]) */
	put_sync(pe, &src, 0x1020); /* the chunk's first sync point (sync[1]) */
	put_e(pe, &src);            /* bx lr: to 0x1010, popped */
	put_e(pe, &src);            /* b 0x1000 */
	put_sync(pe, &src, 0x1000); /* sync[2] */
	put_e(pe, &src);
	csd_ptm_enc_free(pe);

	size_t sync[8], nsync = 0;
	CHECK_EQ(csd_sync_scan(src.data, src.n, 0, sync, 8, &nsync), 0);
	CHECK_EQ(nsync, 3);
	const struct ctx c = ctx_of(&src, 0, &tc, img, 0);
	struct flow_run ser;
	serial(&c, &ser);
	int popped = 0;
	for (size_t i = 0; i < ser.n; i++)
		if (ser.rec[i].type == CSD_REC_RANGE && ser.rec[i].last == 0x1024 &&
		    (ser.rec[i].flags & CSD_RECF_RETURN_STACK))
			popped = 1;
	CHECK(popped);

	/* At the first sync point after the cut the states match ... */
	csd_flow_decoder *prev = csd_flow_new(&c.fc), *d = csd_flow_new(&c.fc);
	struct flow_run junk;
	memset(&junk, 0, sizeof(junk));
	feed(&c, prev, 0, sync[1]);
	feed(&c, d, sync[0], sync[1]);
	flow_run_drain(prev, &junk, FLOW_RUN_NEXT);
	flow_run_drain(d, &junk, FLOW_RUN_NEXT);
	csd_flow_state *st = NULL, *st2 = NULL;
	CHECK_EQ(csd_flow_state_save(d, &st), 0);
	CHECK_EQ(csd_flow_state_match(prev, st), 1);
	CHECK_EQ(csd_flow_state_join(st, prev), 1);
	/* ... until the chunk's decoder pops the entry it does not know:
	 * then the match is refused, and so is the completion of a join
	 * made before. */
	feed(&c, d, sync[1], sync[2]);
	flow_run_drain(d, &junk, FLOW_RUN_NEXT);
	CHECK_EQ(csd_flow_state_save(d, &st2), 0);
	CHECK_EQ(csd_flow_state_match(prev, st), 0);
	CHECK_EQ(csd_flow_state_complete(st, d), CSD_EINVAL);
	/* A state saved after that pop compares as usual (here the chunk's
	 * address is lost to it, the serial decoder's is not). */
	feed(&c, prev, sync[1], sync[2]);
	flow_run_drain(prev, &junk, FLOW_RUN_NEXT);
	CHECK_EQ(csd_flow_state_match(prev, st2), 0);
	csd_flow_state_free(st);
	csd_flow_state_free(st2);
	csd_flow_free(d);
	csd_flow_free(prev);
	/* A state of a decoder that saw the same bytes matches. */
	prev = csd_flow_new(&c.fc);
	csd_flow_decoder *twin = csd_flow_new(&c.fc);
	feed(&c, prev, 0, sync[1]);
	feed(&c, twin, 0, sync[1]);
	flow_run_drain(prev, &junk, FLOW_RUN_NEXT);
	flow_run_drain(twin, &junk, FLOW_RUN_NEXT);
	CHECK_EQ(csd_flow_state_save(prev, &st), 0);
	CHECK_EQ(csd_flow_state_match(twin, st), 1);
	csd_flow_state_free(st);
	csd_flow_free(twin);
	csd_flow_free(prev);
	flow_run_free(&junk);

	/* Cut at every sync point: chunk 1 ends at sync[1] and joins by the
	 * match there, its decoder completed with the return address, which
	 * it then pops (chunk 2 falls back to it: its decoder lost the
	 * address to the unknown pop); chunk 3 has no sync point to join at.
	 * Every second one: chunk 1 from sync[1] pops before its only point
	 * (sync[2]), where its address differs. Every third: no point. */
	static const size_t steps[] = { 1, 2, 3 };
	static const size_t want_joins[] = { 3, 1, 1 }, want_matched[] = { 1, 0, 0 };
	for (size_t s = 0; s < 3; s++) {
		struct stats sts = { 0 };
		struct flow_run ch;
		memset(&ch, 0, sizeof(ch));
		chunked(&c, sync, nsync, steps[s], &ch, &sts);
		CHECK_EQ(compare(&ser, &ch), 0);
		CHECK_EQ(sts.joins, want_joins[s]);
		CHECK_EQ(sts.matched, want_matched[s]);
		CHECK_EQ(sts.fallback, sts.joins - sts.matched);
		flow_run_free(&ch);
	}
	/* One cut, at sync[0]: the chunk's state at sync[1] is refused (its
	 * decoder pops the return it does not know after it), the one at
	 * sync[2] differs (the chunk lost its address there), so the chunk
	 * falls back. */
	{
		const size_t cut[] = { 0, sync[0], src.n };
		struct stats sts = { 0 };
		struct flow_run ch;
		memset(&ch, 0, sizeof(ch));
		chunked_at(&c, sync, nsync, cut, 2, &ch, &sts);
		CHECK_EQ(compare(&ser, &ch), 0);
		CHECK_EQ(sts.joins, 1);
		CHECK_EQ(sts.matched, 0);
		CHECK_EQ(sts.mismatched_saves, 2);
		flow_run_free(&ch);
	}
	flow_run_free(&ser);
	csd_image_free(img);
	free(src.data);
	free(src.off);
}

/* ---- Timestamps joined: captures made here with the encoders ---- */

/* A-sync and I-sync at 0x2000 (the loop below). */
static void ts_sync(const struct enc *e, struct source *s)
{
	sync_at(e, s, 0x2000);
}

/* One pass through the loop: nop, b 0x2000. */
static void ts_iter(const struct enc *e, struct source *s)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	if (e->pe) {
		p.type = CSD_PKT_ATOM;
		p.atoms.num = 1;
		p.atoms.en = 1;
	} else {
		p.type = CSD_PKT_PHEADER;
		p.atoms.num = 2;
		p.atoms.en = 3;
		p.atoms.format = 1;
	}
	put_any(e, s, &p);
}

/* Timestamp ts, at least `bits` bits of it (0: those that changed). */
static void ts_stamp(const struct enc *e, struct source *s, uint64_t ts, unsigned bits)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = CSD_PKT_TIMESTAMP;
	p.timestamp = ts;
	p.ts_bits = (uint8_t)bits;
	put_any(e, s, &p);
}

static const uint32_t loop_code[] = {
	0xe1a00000, /* 0x2000 nop */
	0xeafffffd, /* 0x2004 b 0x2000 */
};

/* The state comparison in the timestamp bits known, on one configuration:
 * x saw a whole timestamp, y another one differing in its low bits, z only
 * what follows the second sync point (no timestamp). */
static void ts_match_cases(const struct csd_trace_config *tc, csd_image *img)
{
	const unsigned width = (tc->etmccer >> 29) & 1 ? 64 : 48;
	const uint64_t t0 = 0x0000654321ABCDEFull, t1 = t0 ^ 0x15;
	struct source x, y;
	memset(&x, 0, sizeof(x));
	memset(&y, 0, sizeof(y));
	for (int k = 0; k < 2; k++) {
		struct source *s = k ? &y : &x;
		struct enc e = { 0 };
		if (tc->protocol == CSD_PROTO_PTM)
			e.pe = csd_ptm_enc_new(tc);
		else
			e.ee = csd_etm3_enc_new(tc);
		CHECK(e.pe || e.ee);
		if (!e.pe && !e.ee)
			return;
		ts_sync(&e, s);
		ts_stamp(&e, s, k ? t1 : t0, width);
		ts_iter(&e, s);
		ts_sync(&e, s);
		ts_iter(&e, s);
		csd_ptm_enc_free(e.pe);
		csd_etm3_enc_free(e.ee);
	}
	CHECK_EQ(x.n, y.n);
	size_t sync[4], nsync = 0;
	CHECK_EQ(csd_sync_scan(x.data, x.n, 0, sync, 4, &nsync), 0);
	CHECK_EQ(nsync, 1);
	const struct ctx c = ctx_of(&x, 0, tc, img, 0), cy = ctx_of(&y, 0, tc, img, 0);
	csd_flow_decoder *dx = csd_flow_new(&c.fc), *dy = csd_flow_new(&c.fc), *dz = csd_flow_new(&c.fc);
	struct flow_run junk;
	memset(&junk, 0, sizeof(junk));
	feed(&c, dx, 0, x.n);
	feed(&cy, dy, 0, y.n);
	feed(&c, dz, sync[0], x.n);
	flow_run_drain(dx, &junk, FLOW_RUN_NEXT);
	flow_run_drain(dy, &junk, FLOW_RUN_NEXT);
	flow_run_drain(dz, &junk, FLOW_RUN_NEXT);
	csd_flow_state *sx = NULL, *sy = NULL, *sz = NULL;
	CHECK_EQ(csd_flow_state_save(dx, &sx), 0);
	CHECK_EQ(csd_flow_state_save(dy, &sy), 0);
	CHECK_EQ(csd_flow_state_save(dz, &sz), 0);
	/* All bits known to both and the low ones differ: no match. */
	CHECK_EQ(csd_flow_state_match(dx, sy), 0);
	CHECK_EQ(csd_flow_state_match(dy, sx), 0);
	/* z knows none: it matches x's state there, not the other way. */
	CHECK_EQ(csd_flow_state_match(dx, sz), 1);
	CHECK_EQ(csd_flow_state_match(dz, sx), 0);
	CHECK_EQ(csd_flow_state_match(dx, sx), 1);
	/* Completing before a join, and bad arguments. */
	struct csd_record r;
	memset(&r, 0, sizeof(r));
	CHECK_EQ(csd_flow_state_complete(sz, dz), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_complete_records(sz, &r, 1), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_join(NULL, dx), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_join(sz, NULL), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_join(sy, dx), 0);
	CHECK_EQ(csd_flow_state_complete(sy, dy), CSD_EINVAL); /* no match: not joined */
	CHECK_EQ(csd_flow_state_join(sz, dx), 1);
	CHECK_EQ(csd_flow_state_complete(NULL, dz), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_complete(sz, NULL), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_complete_records(NULL, &r, 1), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_complete_records(sz, NULL, 1), CSD_EINVAL);
	CHECK_EQ(csd_flow_state_complete_records(sz, NULL, 0), 0);
	/* A timestamp record z would make now: x's timestamp, all bits. */
	r.type = CSD_REC_TIMESTAMP;
	r.timestamp = 0;
	r.size = 0;
	CHECK_EQ(csd_flow_state_complete_records(sz, &r, 1), 0);
	CHECK_EQ(r.timestamp, t0);
	CHECK_EQ(r.size, width);
	/* z given x's timestamp: now its state is x's in every bit. */
	CHECK_EQ(csd_flow_state_complete(sz, dz), 0);
	CHECK_EQ(csd_flow_state_match(dz, sx), 1);
	csd_flow_state_free(sx);
	csd_flow_state_free(sy);
	csd_flow_state_free(sz);
	csd_flow_free(dx);
	csd_flow_free(dy);
	csd_flow_free(dz);
	flow_run_free(&junk);
	free(x.data);
	free(x.off);
	free(y.data);
	free(y.off);
}

/*
 * Timestamped captures joined: one full timestamp at the start, then
 * timestamps a little apart (the packets restate 7 or 14 low bits, with
 * carries out of the low byte now and then), and every fifth sync
 * interval a jump that changes high bits, so that in every position of a
 * chunk some chunk learns more bits after its cut and after its match
 * point. Cut at every sync point, every second and every third, in range
 * and instruction mode, binary and Gray-coded, 64 and 48 bits, ETMv3 and
 * PTM: the joined records equal the serial decode's, most joins match,
 * and kept records are completed.
 */
static void ts_joins(void)
{
	csd_image *img = a32_image(0x2000, loop_code, sizeof(loop_code) / sizeof(loop_code[0]));
	static const struct {
		uint32_t protocol, etmidr, etmccer;
		const char *name;
	} cfgs[] = {
		{ CSD_PROTO_PTM, 0x411CF312, 0x34C01AC2, "PTM binary 64" },
		{ CSD_PROTO_PTM, 0x411CF312, 0x04C01AC2, "PTM Gray 48" },
		{ CSD_PROTO_ETM3, 0x410CF250, 0x344008F2, "ETMv3 binary 64" },
		{ CSD_PROTO_ETM3, 0x410CF250, 0x044008F2, "ETMv3 Gray 48" },
	};
	for (size_t ci = 0; ci < sizeof(cfgs) / sizeof(cfgs[0]); ci++) {
		struct csd_trace_config tc = { .size = sizeof(tc), .protocol = cfgs[ci].protocol,
					       .etmcr = 1u << 28, .etmidr = cfgs[ci].etmidr,
					       .etmccer = cfgs[ci].etmccer };
		ts_match_cases(&tc, img);
		const unsigned width = (tc.etmccer >> 29) & 1 ? 64 : 48;
		struct enc e = { 0 };
		if (tc.protocol == CSD_PROTO_PTM)
			e.pe = csd_ptm_enc_new(&tc);
		else
			e.ee = csd_etm3_enc_new(&tc);
		CHECK(e.pe || e.ee);
		if (!e.pe && !e.ee)
			continue;
		struct source src;
		memset(&src, 0, sizeof(src));
		uint64_t t = 0x00007ABCDEF01234ull;
		ts_sync(&e, &src);
		ts_stamp(&e, &src, t, width);
		for (unsigned blk = 0; blk < 60; blk++) {
			ts_sync(&e, &src);
			for (unsigned j = 0; j < 4; j++) {
				ts_iter(&e, &src);
				t += 90 + 7 * j;
				ts_stamp(&e, &src, t, 0);
			}
			if (blk % 5 == 2) {
				/* High bits change (bit 30 and up). */
				t += (uint64_t)1 << (30 + blk % 13);
				ts_iter(&e, &src);
				ts_stamp(&e, &src, t, 0);
			}
			ts_iter(&e, &src);
		}
		csd_ptm_enc_free(e.pe);
		csd_etm3_enc_free(e.ee);
		size_t nsync = 0;
		size_t *sync = malloc((src.n + 1) * sizeof(*sync));
		CHECK_EQ(csd_sync_scan(src.data, src.n, 0, sync, src.n + 1, &nsync), 0);
		CHECK_EQ(nsync, 60);
		{
			/* The packets too: every join but the last matches,
			 * and cuts past the first timestamp complete some. */
			struct stats ps = { 0 };
			pkt_source(cfgs[ci].name, &src, &tc, sync, nsync, &ps);
			printf("%s packets: %zu joins, %zu matched, %zu packets completed\n", cfgs[ci].name, ps.joins,
			       ps.matched, ps.completed);
			CHECK(ps.matched + 2 >= ps.joins);
			CHECK(ps.completed > 0);
		}
		for (int mode = 0; mode < 2; mode++) {
			const struct ctx c = ctx_of(&src, 0, &tc, img, mode ? CSD_FLOW_INSN : 0);
			struct flow_run ser;
			serial(&c, &ser);
			size_t stamps = 0;
			for (size_t i = 0; i < ser.n; i++)
				if (ser.rec[i].type == CSD_REC_TIMESTAMP) {
					stamps++;
					CHECK_EQ(ser.rec[i].size, width);
				}
			CHECK_EQ(stamps, 1 + 60 * 4 + 12);
			for (size_t step = 1; step <= 3; step++) {
				struct stats st = { 0 };
				struct flow_run ch;
				memset(&ch, 0, sizeof(ch));
				chunked(&c, sync, nsync, step, &ch, &st);
				const size_t bad = compare(&ser, &ch);
				printf("%s %s, cut at every %zu sync point(s): %zu joins, %zu matched, %zu records completed%s\n",
				       cfgs[ci].name, mode ? "insn" : "range", step, st.joins, st.matched, st.completed,
				       bad ? ", DIFFERENT" : "");
				CHECK_EQ(bad, 0);
				/* Every chunk has a sync point after its cut; only
				 * the last may lack the timestamps to match. */
				CHECK(st.joins > 0);
				CHECK(st.matched + 1 >= st.joins);
				if (step > 1)
					CHECK(st.completed > 0);
				flow_run_free(&ch);
			}
			flow_run_free(&ser);
		}
		free(sync);
		free(src.data);
		free(src.off);
	}
	csd_image_free(img);
}

int main(void)
{
	scan_cases();
	pkt_state_args();
	return_stack_joins();
	ts_joins();
	struct stats tc2 = { 0 }, gen = { 0 }, tc2p[2] = { 0 }, genp[2] = { 0 };
	char dir[2048];
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	one_snapshot(dir, tc2p);
	tc2 = tc2p[0];
	printf("TC2: %zu cuts, %zu joins: %zu matched, %zu fell back; %zu saved states did not match; "
	       "timestamped (%zu source decodes): %zu joins, %zu matched, %zu records completed\n",
	       tc2.cuts, tc2.joins, tc2.matched, tc2.fallback, tc2.mismatched_saves, tc2.ts_sources, tc2.ts_joins,
	       tc2.ts_matched, tc2.completed);
	CHECK(tc2.matched > 0);
	const char *gdir = getenv("CSD_GEN_SNAPSHOTS");
	if (!gdir) {
		fprintf(stderr, "CSD_GEN_SNAPSHOTS not set (run through make test)\n");
		return 1;
	}
	DIR *dd = opendir(gdir);
	CHECK(dd != NULL);
	size_t snaps = 0;
	struct dirent *de;
	while (dd && (de = readdir(dd)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(dir, sizeof(dir), "%s/%s", gdir, de->d_name);
		one_snapshot(dir, genp);
		snaps++;
	}
	if (dd)
		closedir(dd);
	gen = genp[0];
	printf("packets: TC2 %zu joins, %zu matched, %zu fell back; generated %zu joins, %zu matched, %zu fell back, "
	       "%zu timestamp packets completed\n",
	       tc2p[1].joins, tc2p[1].matched, tc2p[1].fallback, genp[1].joins, genp[1].matched, genp[1].fallback,
	       genp[1].completed);
	CHECK(tc2p[1].matched > 0);
	CHECK(genp[1].matched * 10 >= genp[1].joins * 9);
	printf("generated (%zu snapshots): %zu cuts, %zu joins: %zu matched, %zu fell back; %zu saved states did not "
	       "match; timestamped (%zu source decodes): %zu joins, %zu matched, %zu records completed; "
	       "return stack (%zu source decodes): %zu joins, %zu matched\n",
	       snaps, gen.cuts, gen.joins, gen.matched, gen.fallback, gen.mismatched_saves, gen.ts_sources,
	       gen.ts_joins, gen.ts_matched, gen.completed, gen.rs_sources, gen.rs_joins, gen.rs_matched);
	CHECK(snaps > 0);
	CHECK(gen.matched > 0);
	/* Timestamped sources join by a match nearly always, timestamps
	 * being compared in the bits known, and their joins complete
	 * timestamps. */
	CHECK(gen.ts_sources > 0);
	CHECK(gen.ts_matched * 10 >= gen.ts_joins * 9);
	CHECK(gen.completed > 0);
	/* With the return stack too: the chunk's known entries are compared
	 * with the serial decoder's top ones, and the join completes the
	 * rest (the joins that fall back are of chunks without a sync point
	 * after their cut). */
	CHECK(gen.rs_sources > 0);
	CHECK(gen.rs_matched * 10 >= gen.rs_joins * 7);
	CHECK(tc2.mismatched_saves + gen.mismatched_saves > 0);
	return check_done("test_chunks");
}
