/*
 * test_pkt_brief.c - packets in brief (csd_etm3_pkt_next_brief,
 * csd_ptm_pkt_next_brief) against the one-by-one decoders.
 *
 * Every ETMv3 / PTM source of every shared capture, of the shipped sample
 * and of the generated round-trip snapshots is decoded twice: with
 * csd_*_pkt_next() alone in one feed, and in pieces of varying size taking
 * packets in brief (caps 1, 7, 256 by turns) wherever the decoder offers
 * them. Expanded (csd_pkt_brief_expand) and given their raw bytes, the
 * packets must be the same, field for field. The same holds for copies
 * with bits flipped, bytes dropped and garbage inserted, and with offsets
 * far apart. The brief path
 * must carry most packets of the real captures (else it is not used).
 */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csdec_internal.h"
#include "../fuzz/pkt_same.h"

struct stream {
	uint8_t *data;
	uint64_t *off;
	size_t n, cap;
};

static void stream_put(struct stream *s, uint8_t b, uint64_t off)
{
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 4096;
		s->data = realloc(s->data, s->cap);
		s->off = realloc(s->off, s->cap * sizeof(*s->off));
		if (!s->data || !s->off)
			abort();
	}
	s->data[s->n] = b;
	s->off[s->n++] = off;
}

struct pkts {
	struct csd_packet *p;
	size_t n, cap;
	size_t brief;           /* of them, taken in brief */
};

static void pkts_put(struct pkts *l, const struct csd_packet *p)
{
	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 4096;
		l->p = realloc(l->p, l->cap * sizeof(*l->p));
		if (!l->p)
			abort();
	}
	l->p[l->n++] = *p;
}

struct dec {
	csd_etm3_pkt_decoder *e;
	csd_ptm_pkt_decoder *p;
};

static int dec_feed(struct dec *d, const struct csd_bytes *b)
{
	return d->e ? csd_etm3_pkt_feed(d->e, b) : csd_ptm_pkt_feed(d->p, b);
}
static int dec_next(struct dec *d, struct csd_packet *pkt)
{
	return d->e ? csd_etm3_pkt_next(d->e, pkt) : csd_ptm_pkt_next(d->p, pkt);
}
static int dec_brief(struct dec *d, struct csd_pkt_brief *o, size_t cap, uint64_t *base)
{
	return d->e ? csd_etm3_pkt_next_brief(d->e, o, cap, base) : csd_ptm_pkt_next_brief(d->p, o, cap, base);
}

static const size_t caps[] = { 1, 7, 256 };

/* Index of the byte at capture offset off (offsets rise strictly). */
static size_t find_index(const struct stream *s, uint64_t off)
{
	size_t lo = 0, hi = s->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->off[mid] < off)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* Decode s; pieces == 0: one feed, one by one; else pieces of 1..pieces
 * bytes and packets in brief where offered. */
static void decode(const struct csd_trace_config *cfg, const struct stream *s, size_t pieces, struct pkts *out)
{
	struct dec d = { NULL, NULL };
	if (cfg->protocol == CSD_PROTO_ETM3)
		d.e = csd_etm3_pkt_new(cfg);
	else
		d.p = csd_ptm_pkt_new(cfg);
	CHECK(d.e || d.p);
	if (!d.e && !d.p)
		return;
	struct csd_pkt_brief br[256];
	unsigned turn = 0;
	uint32_t rnd = 12345;
	size_t pos = 0;
	struct csd_packet pkt;
	int rc;
	for (;;) {
		if (pos < s->n) {
			size_t k = s->n - pos;
			if (pieces) {
				rnd = rnd * 1103515245u + 12345u;
				size_t want = 1 + (rnd >> 8) % pieces;
				if (k > want)
					k = want;
			}
			struct csd_bytes b = { .data = s->data + pos, .size = k, .offsets = s->off + pos,
					       .base = s->off[pos] };
			CHECK_EQ(dec_feed(&d, &b), CSD_OK);
			pos += k;
		} else {
			CHECK_EQ(d.e ? csd_etm3_pkt_finish(d.e) : csd_ptm_pkt_finish(d.p), CSD_OK);
		}
		for (;;) {
			if (pieces) {
				size_t cap = caps[turn++ % 3];
				uint64_t base = 0;
				int n = dec_brief(&d, br, cap, &base);
				CHECK(n >= 0 && (size_t)n <= cap);
				if (n > 0) {
					for (int i = 0; i < n; i++) {
						CHECK_EQ(csd_pkt_brief_expand(&br[i], base, &pkt), CSD_OK);
						/* raw: the stream bytes at the packet's offset */
						size_t j = find_index(s, pkt.offset);
						CHECK(j < s->n && s->off[j] == pkt.offset && j + pkt.size <= s->n);
						for (size_t r = 0; r < pkt.size && r < CSD_PKT_RAW_MAX && j + r < s->n; r++)
							pkt.raw[r] = s->data[j + r];
						pkts_put(out, &pkt);
					}
					out->brief += (size_t)n;
					continue;
				}
			}
			if ((rc = dec_next(&d, &pkt)) != CSD_OK)
				break;
			pkts_put(out, &pkt);
		}
		if (pos >= s->n && rc == CSD_EEOS)
			break;
		CHECK(rc == CSD_EAGAIN || (pos >= s->n && rc == CSD_EEOS));
		if (rc != CSD_EAGAIN && rc != CSD_EEOS)
			break;
	}
	csd_etm3_pkt_free(d.e);
	csd_ptm_pkt_free(d.p);
}

static size_t total_packets, total_brief;

/* Compare both decodes of s; returns the share of packets taken in brief. */
static double compare(const char *what, const struct csd_trace_config *cfg, const struct stream *s)
{
	struct pkts one = { 0 }, brief = { 0 };
	decode(cfg, s, 0, &one);
	decode(cfg, s, 97, &brief);
	CHECK_EQ(brief.n, one.n);
	size_t bad = 0;
	for (size_t i = 0; i < one.n && i < brief.n; i++) {
		if (!csd_test_pkt_same(&one.p[i], &brief.p[i])) {
			if (!bad)
				fprintf(stderr, "%s: packet %zu (%s at %llu) differs in brief\n", what, i,
					csd_pkt_type_name((int)one.p[i].type), (unsigned long long)one.p[i].offset);
			bad++;
		}
	}
	CHECK_EQ(bad, 0);
	double share = one.n ? (double)brief.brief / (double)one.n : 0;
	total_packets += one.n;
	total_brief += brief.brief;
	free(one.p);
	free(brief.p);
	return share;
}

/* Damaged copies: bit flips, a dropped stretch, inserted garbage; and an
 * undamaged copy whose offsets leap by 2^31 every 50 bytes (brief offsets
 * are 32-bit distances from the call's base: the calls must end before one
 * would not fit). */
static void compare_damaged(const char *what, const struct csd_trace_config *cfg, const struct stream *s)
{
	uint32_t rnd = 777;
	for (int kind = 0; kind < 4 && s->n > 64; kind++) {
		struct stream d = { 0 };
		for (size_t i = 0; i < s->n; i++) {
			rnd = rnd * 1103515245u + 12345u;
			uint8_t b = s->data[i];
			if (kind == 0 && (rnd >> 16) % 200 == 0)
				b ^= (uint8_t)(1u << ((rnd >> 8) & 7));
			if (kind == 1 && i > s->n / 3 && i < s->n / 3 + 37)
				continue;
			stream_put(&d, b, s->off[i]);
			if (kind == 2 && (rnd >> 16) % 500 == 0)
				for (int g = 0; g < 5; g++)
					stream_put(&d, (uint8_t)(rnd >> (g * 3)), s->off[i]);
		}
		/* Offsets must stay unique for the raw-byte lookup: renumber. */
		for (size_t i = 0; i < d.n; i++)
			d.off[i] = 1000 + i + (kind == 3 ? (uint64_t)(i / 50) << 31 : 0);
		compare(what, cfg, &d);
		free(d.data);
		free(d.off);
	}
}

/* Random bytes after an A-sync, with an A-sync every few hundred bytes so
 * that the decoders keep coming back: every packet form and length, the
 * odd ones (short-address branches with exception information, Jazelle
 * addresses, long cycle counts) included, which real and generated trace
 * have few of, at every distance from the end of the bytes fed. */
static void compare_random(void)
{
	/* ETMCR: plain, cycle-accurate, and with a 4-byte context ID; the
	 * last two ETMv3 only: an ETMv3.5 with the Hyp bit (ETMCCER[26]) and
	 * an ETMv3.2 (ETMIDR minor 2: no AltISA bit), cycle-accurate, for
	 * the I-sync info bits each reads. */
	static const struct {
		uint32_t etmcr, etmccer, etmidr;
	} cfgs[] = { { 0, 0, 0 },
		     { 1u << 12, 0, 0 },
		     { 1u << 12 | 3u << 14, 0, 0 },
		     { 1u << 12, 1u << 26, 0x4100F250 },
		     { 1u << 12, 0, 0x4100F220 } };
	uint32_t rnd = 4242;
	for (int proto = 0; proto < 2; proto++) {
		for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]) - (proto ? 2 : 0); c++) {
			const uint32_t etmcr = cfgs[c].etmcr;
			struct csd_trace_config cfg = { .size = sizeof(cfg), .trace_id = 0x10,
							.protocol = proto ? CSD_PROTO_PTM : CSD_PROTO_ETM3,
							.etmcr = etmcr, .etmccer = cfgs[c].etmccer,
							.etmidr = cfgs[c].etmidr };
			struct stream s = { 0 };
			while (s.n < 200000) {
				for (int k = 0; k < 5; k++)
					stream_put(&s, 0x00, s.n);
				stream_put(&s, 0x80, s.n);
				rnd = rnd * 1103515245u + 12345u;
				if (proto && (rnd >> 12) % 2) {
					/* A PTM I-sync into a random instruction
					 * set (ThumbEE too, which random bytes
					 * hardly reach: J x T x AltIS). */
					const unsigned isa = (rnd >> 20) % 4;
					const uint32_t addr = (rnd & ~1u) | (isa >= 2);
					stream_put(&s, 0x08, s.n);
					for (int k = 0; k < 4; k++)
						stream_put(&s, (uint8_t)(addr >> (8 * k)), s.n);
					/* Reason, NS and Hyp at random; a reason
					 * other than periodic brings a cycle count
					 * in cycle-accurate mode. */
					const unsigned reason = (rnd >> 8) % 4, ns = (rnd >> 10) & 1,
						       hyp = (rnd >> 11) % 4 == 0;
					stream_put(&s,
						   (uint8_t)(reason << 5 | (isa == 0) << 4 | ns << 3 | (isa == 3) << 2 |
							     hyp << 1),
						   s.n);
					if ((etmcr & 1u << 12) && reason != CSD_REASON_PERIODIC)
						stream_put(&s, (uint8_t)(rnd >> 1 & 0x3F), s.n);
					for (unsigned k = 0; k < (etmcr >> 14 & 3 ? 4u : 0u); k++)
						stream_put(&s, 0x5A, s.n);
					/* A whole Thumb-form address, which keeps
					 * ThumbEE, with a one-byte cycle count. */
					static const uint8_t full[] = { 0x81, 0x80, 0x80, 0x80, 0x10 };
					for (size_t k = 0; k < sizeof(full); k++)
						stream_put(&s, full[k], s.n);
					if (etmcr & 1u << 12)
						stream_put(&s, 0x04, s.n);
				}
				if (!proto && (rnd >> 12) % 4) {
					/* An ETMv3 I-sync with random info bits
					 * (LSiP, J, AltISA, Hyp, NS, reason) and
					 * address, with a cycle count (header 0x70)
					 * or not: random bytes reach few, as most
					 * of them end in an error and a wait for
					 * the next A-sync. */
					const int cc = (etmcr & 1u << 12) && (rnd >> 14) % 2;
					stream_put(&s, cc ? 0x70 : 0x08, s.n);
					if (cc)
						stream_put(&s, (uint8_t)(rnd >> 3 & 0x7F), s.n);
					for (unsigned k = 0; k < (etmcr >> 14 & 3 ? 4u : 0u); k++)
						stream_put(&s, 0x5A, s.n);
					rnd = rnd * 1103515245u + 12345u;
					stream_put(&s, (uint8_t)(rnd >> 24), s.n);
					rnd = rnd * 1103515245u + 12345u;
					for (int k = 0; k < 4; k++)
						stream_put(&s, (uint8_t)(rnd >> (8 * k)), s.n);
				}
				size_t run = 50 + (rnd >> 16) % 700;
				for (size_t k = 0; k < run; k++) {
					rnd = rnd * 1103515245u + 12345u;
					stream_put(&s, (uint8_t)(rnd >> 16), s.n);
				}
			}
			char what[64];
			snprintf(what, sizeof(what), "random %s config %zu", proto ? "PTM" : "ETMv3", c);
			compare(what, &cfg, &s);
			free(s.data);
			free(s.off);
		}
	}
}

/* Every source of every buffer of one snapshot. Returns the sources done. */
static int snapshot(const char *dir, int damaged, double *min_share)
{
	char err[512] = "";
	csd_snapshot *snap = NULL;
	if (csd_snapshot_open(dir, &snap, err, sizeof(err)) < 0)
		return 0;
	int done = 0;
	for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++) {
		const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, b);
		size_t len = 0;
		uint8_t *cap = check_read_file(buf->path, &len);
		CHECK(cap != NULL);
		if (!cap)
			continue;
		for (size_t i = 0; i < csd_snapshot_num_sources(snap); i++) {
			const struct csd_snapshot_source *src = csd_snapshot_source(snap, i);
			if (src->buffer != (int)b || (src->config.protocol != CSD_PROTO_ETM3 &&
						      src->config.protocol != CSD_PROTO_PTM))
				continue;
			struct csd_frame_config fc = { .size = sizeof(fc), .format = buf->frame_format,
						       .raw_id = src->config.trace_id };
			csd_frame_decoder *fd = csd_frame_new(&fc);
			struct stream s = { 0 };
			struct csd_frame_out o;
			csd_frame_feed(fd, cap, len, 0);
			csd_frame_finish(fd);
			while (csd_frame_next(fd, &o) == CSD_OK)
				if (o.event == CSD_FRAME_DATA && o.bytes.id == src->config.trace_id)
					for (size_t k = 0; k < o.bytes.size; k++)
						stream_put(&s, o.bytes.data[k],
							   o.bytes.offsets ? o.bytes.offsets[k] : o.bytes.base + k);
			csd_frame_free(fd);
			if (s.n) {
				char what[600];
				snprintf(what, sizeof(what), "%s %s", dir, src->name);
				double share = compare(what, &src->config, &s);
				if (share < *min_share)
					*min_share = share;
				if (damaged)
					compare_damaged(what, &src->config, &s);
				done++;
			}
			free(s.data);
			free(s.off);
		}
		free(cap);
	}
	csd_snapshot_free(snap);
	return done;
}

int main(void)
{
	char path[4096];
	double min_share = 1.0;
	int sources = 0;

	/* The shared captures: every packet kind real hardware sent. */
	snprintf(path, sizeof(path), "%s/traces", check_shared_dir());
	DIR *d = opendir(path);
	CHECK(d != NULL);
	struct dirent *e;
	while (d && (e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		char dir[4400];
		snprintf(dir, sizeof(dir), "%s/%s", path, e->d_name);
		sources += snapshot(dir, 1, &min_share);
	}
	if (d)
		closedir(d);
	CHECK(sources >= 4);
	/* Most packets of real trace come in brief. */
	CHECK(min_share > 0.5);
	printf("test_pkt_brief: %d shared sources, at least %.0f%% of each one's packets in brief\n", sources,
	       100 * min_share);

	compare_random();

	/* The shipped sample and the generated snapshots (every generator
	 * configuration: cycle-accurate, timestamps, return stack...). */
	sources += snapshot("examples/sample", 1, &min_share);
	const char *gen = getenv("CSD_GEN_SNAPSHOTS");
	int gen_sources = 0;
	if (gen && (d = opendir(gen))) {
		while ((e = readdir(d))) {
			if (e->d_name[0] == '.')
				continue;
			char dir[4400];
			snprintf(dir, sizeof(dir), "%s/%s", gen, e->d_name);
			gen_sources += snapshot(dir, 0, &min_share);
		}
		closedir(d);
	}
	printf("test_pkt_brief: %d generated sources; %zu packets, %zu in brief\n", gen_sources, total_packets,
	       total_brief);
	return check_done("test_pkt_brief");
}
