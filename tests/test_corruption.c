/*
 * Corruption tests: 200 damaged copies of the TC2 capture (seeded PRNG: bit
 * flips, byte runs overwritten with garbage, swapped frames, truncation,
 * inserted bytes, deleted bytes), each demultiplexed and decoded for every
 * source through the packet decoder and the flow decoder in range and in
 * instruction mode (range mode also without the ETMv3 segment memo).
 * Checked for every copy:
 *
 *   - the range records with and without the memo are identical;
 *   - bounded work: records per capture byte stay under RECORDS_PER_BYTE;
 *   - errors only where the damage can explain them: frame errors at or
 *     after the start of the first damaged frame; packet and flow errors at
 *     or after the start of the packet (of the undamaged decode) holding the
 *     first byte of the source's stream that the damage changed (a packet
 *     that began before the damage reports its error at its own start);
 *   - sources whose byte stream the damage did not change decode exactly
 *     as before;
 *   - recovery, for damage that overwrites bytes in place (bit flips,
 *     garbage runs, swapped frames), per source whose stream changed:
 *
 *       Damage inside capture bytes [d0, d1) can change which trace ID the
 *       bytes of later frames belong to, until an ID byte restates it. Let
 *       F be the first frame boundary at or after d1, and R the first ID
 *       byte at or after F; from R' = R + 2 on, every source's stream holds
 *       the same bytes at the same offsets as the undamaged one. Let A be
 *       the first A-sync packet of the source (undamaged decode) starting
 *       at or after R', and P the first I-sync after A. If the damaged
 *       packet decoder also reports an A-sync ending at A's last byte (it
 *       can miss it when the damage left it misaligned, inside a packet
 *       that swallows the A-sync's zeros), then every instruction of the
 *       damaged instruction-mode decode produced by a packet at or after P
 *       equals (address, instruction set, opcode, cycles) the undamaged
 *       decode's, in the same number; and the last that many instructions
 *       of the range-mode decodes, expanded through the image, are equal.
 *
 * Nothing of the capture is copied: the copies are made in memory from
 * ../shared (CSD_SHARED).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "csdec_internal.h"

#define COPIES 200
#define MAX_SOURCES 8
/* The undamaged capture decodes to about one record per capture byte (all
 * sources, both modes); a damaged one may send the decoders walking
 * through wrong code, which the walk limits bound (measured: at most 0.99
 * per byte over the 200 copies). */
#define RECORDS_PER_BYTE 16

/* ---- PRNG --------------------------------------------------------------- */

static uint64_t rng_state = 0x9E3779B97F4A7C15ull;

static uint32_t rnd(void)
{
	uint64_t x = rng_state;
	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	rng_state = x;
	return (uint32_t)((x * 0x2545F4914F6CDD1Dull) >> 32);
}

static uint32_t rnd_below(uint32_t n)
{
	return n ? rnd() % n : 0;
}

/* ---- growable arrays ---------------------------------------------------- */

static void *grow(void *p, size_t *cap, size_t need, size_t elem)
{
	if (need <= *cap)
		return p;
	size_t ncap = *cap ? *cap : 256;
	while (ncap < need)
		ncap *= 2;
	void *np = realloc(p, ncap * elem);
	if (!np) {
		fprintf(stderr, "out of memory\n");
		exit(1);
	}
	*cap = ncap;
	return np;
}

/* One source's bytes as the demultiplexer delivered them. */
struct stream {
	uint8_t *b;
	uint64_t *off;
	size_t n, cap, cap_off;
};

struct pkt {
	uint32_t type;
	uint64_t offset, last; /* capture offsets of the first and last byte */
	size_t index;          /* stream index of the first byte */
	uint32_t size;
};

struct pkts {
	struct pkt *v;
	size_t n, cap;
};

struct recs {
	struct csd_record *v;
	size_t n, cap;
};

/* Everything decoded from one capture. */
struct decode {
	struct stream s[MAX_SOURCES];
	struct pkts p[MAX_SOURCES];
	struct recs r[MAX_SOURCES][3]; /* [source][0 = ranges, 1 = instructions, 2 = ranges without memo] */
	uint64_t *frame_errors;
	size_t n_frame_errors, cap_frame_errors;
};

static void decode_free(struct decode *d)
{
	for (int i = 0; i < MAX_SOURCES; i++) {
		free(d->s[i].b);
		free(d->s[i].off);
		free(d->p[i].v);
		free(d->r[i][0].v);
		free(d->r[i][1].v);
		free(d->r[i][2].v);
	}
	free(d->frame_errors);
	memset(d, 0, sizeof(*d));
}

/* ---- the capture and its sources ---------------------------------------- */

struct source {
	struct csd_trace_config cfg;
};

static struct source sources[MAX_SOURCES];
static size_t n_sources;
static csd_image *image;
static uint8_t *capture;
static size_t capture_size;

static int load_capture(void)
{
	char dir[1024], err[512];
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	csd_snapshot *snap;
	if (csd_snapshot_open(dir, &snap, err, sizeof(err)) != 0) {
		fprintf(stderr, "%s\n", err);
		return -1;
	}
	image = csd_image_new();
	CHECK(csd_snapshot_load_image(snap, NULL, image) > 0);
	const char *path = NULL;
	for (size_t i = 0; i < csd_snapshot_num_sources(snap) && n_sources < MAX_SOURCES; i++) {
		const struct csd_snapshot_source *src = csd_snapshot_source(snap, i);
		if (src->config.protocol == CSD_PROTO_UNKNOWN || src->buffer < 0)
			continue;
		const struct csd_snapshot_buffer *b = csd_snapshot_buffer(snap, (size_t)src->buffer);
		CHECK_EQ(b->frame_format, CSD_FRAME_ALIGNED);
		path = b->path;
		sources[n_sources++].cfg = src->config;
	}
	FILE *f = path ? fopen(path, "rb") : NULL;
	if (f) {
		capture = malloc(1 << 20);
		capture_size = capture ? fread(capture, 1, 1 << 20, f) : 0;
		fclose(f);
	}
	csd_snapshot_free(snap);
	CHECK(n_sources >= 4);
	CHECK(capture_size > 0 && capture_size % 16 == 0);
	return capture_size ? 0 : -1;
}

static int source_of(uint8_t id)
{
	for (size_t i = 0; i < n_sources; i++)
		if (sources[i].cfg.trace_id == id)
			return (int)i;
	return -1;
}

/* ---- decoding ----------------------------------------------------------- */

static void demux(const uint8_t *cap, size_t n, struct decode *d)
{
	struct csd_frame_config fc = { .size = sizeof(fc), .format = CSD_FRAME_ALIGNED };
	csd_frame_decoder *fd = csd_frame_new(&fc);
	struct csd_frame_out o;
	int rc;
	CHECK(fd != NULL);
	if (!fd)
		return;
	CHECK_EQ(csd_frame_feed(fd, cap, n, 0), 0);
	CHECK_EQ(csd_frame_finish(fd), 0);
	while ((rc = csd_frame_next(fd, &o)) == 0) {
		if (o.event == CSD_FRAME_ERROR) {
			d->frame_errors = grow(d->frame_errors, &d->cap_frame_errors, d->n_frame_errors + 1,
					       sizeof(uint64_t));
			d->frame_errors[d->n_frame_errors++] = o.offset;
		}
		int s = o.event == CSD_FRAME_DATA ? source_of(o.bytes.id) : -1;
		if (s < 0)
			continue;
		struct stream *st = &d->s[s];
		st->b = grow(st->b, &st->cap, st->n + o.bytes.size, 1);
		st->off = grow(st->off, &st->cap_off, st->n + o.bytes.size, sizeof(uint64_t));
		memcpy(st->b + st->n, o.bytes.data, o.bytes.size);
		memcpy(st->off + st->n, o.bytes.offsets, o.bytes.size * sizeof(uint64_t));
		st->n += o.bytes.size;
	}
	CHECK_EQ(rc, CSD_EEOS);
	csd_frame_free(fd);
}

static struct csd_bytes stream_bytes(const struct stream *st)
{
	struct csd_bytes b;
	memset(&b, 0, sizeof(b));
	b.data = st->b;
	b.size = st->n;
	b.offsets = st->off;
	b.base = st->n ? st->off[0] : 0;
	return b;
}

static void decode_packets(int s, struct decode *d)
{
	const struct stream *st = &d->s[s];
	struct pkts *out = &d->p[s];
	const int ptm = sources[s].cfg.protocol == CSD_PROTO_PTM;
	void *dec = ptm ? (void *)csd_ptm_pkt_new(&sources[s].cfg) : (void *)csd_etm3_pkt_new(&sources[s].cfg);
	CHECK(dec != NULL);
	if (!dec)
		return;
	struct csd_bytes b = stream_bytes(st);
	CHECK_EQ(ptm ? csd_ptm_pkt_feed(dec, &b) : csd_etm3_pkt_feed(dec, &b), 0);
	CHECK_EQ(ptm ? csd_ptm_pkt_finish(dec) : csd_etm3_pkt_finish(dec), 0);
	struct csd_packet p;
	size_t index = 0;
	int rc;
	while ((rc = ptm ? csd_ptm_pkt_next(dec, &p) : csd_etm3_pkt_next(dec, &p)) == 0) {
		/* Packets tile the stream. */
		CHECK(index < st->n && st->off[index] == p.offset && p.size <= st->n - index);
		if (index >= st->n || p.size > st->n - index)
			break;
		out->v = grow(out->v, &out->cap, out->n + 1, sizeof(*out->v));
		struct pkt *k = &out->v[out->n++];
		k->type = p.type;
		k->offset = p.offset;
		k->index = index;
		k->size = p.size;
		k->last = st->off[index + p.size - 1];
		index += p.size;
	}
	CHECK_EQ(rc, CSD_EEOS);
	CHECK_EQ(index, st->n);
	if (ptm)
		csd_ptm_pkt_free(dec);
	else
		csd_etm3_pkt_free(dec);
}

/* mode: 0 range records (the ETMv3 segment memo from the first header),
 * 1 instruction records, 2 range records without the memo. */
static void decode_flow(int s, int mode, struct decode *d)
{
	static const uint32_t flags[3] = { CSD_FLOW_MEMO_AT_ONCE, CSD_FLOW_INSN, CSD_FLOW_NO_MEMO };
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &sources[s].cfg;
	fc.image = image;
	fc.flags = flags[mode];
	csd_flow_decoder *fd = csd_flow_new(&fc);
	CHECK(fd != NULL);
	if (!fd)
		return;
	struct recs *out = &d->r[s][mode];
	struct csd_bytes b = stream_bytes(&d->s[s]);
	struct csd_record r;
	int rc;
	CHECK_EQ(csd_flow_feed(fd, &b), 0);
	while ((rc = csd_flow_next(fd, &r)) == 0) {
		out->v = grow(out->v, &out->cap, out->n + 1, sizeof(*out->v));
		out->v[out->n++] = r;
	}
	CHECK_EQ(rc, CSD_EAGAIN);
	CHECK_EQ(csd_flow_finish(fd), 0);
	while ((rc = csd_flow_next(fd, &r)) == 0) {
		out->v = grow(out->v, &out->cap, out->n + 1, sizeof(*out->v));
		out->v[out->n++] = r;
	}
	CHECK_EQ(rc, CSD_EEOS);
	csd_flow_free(fd);
}

static void decode_all(const uint8_t *cap, size_t n, struct decode *d)
{
	memset(d, 0, sizeof(*d));
	demux(cap, n, d);
	for (size_t s = 0; s < n_sources; s++) {
		decode_packets((int)s, d);
		decode_flow((int)s, 0, d);
		decode_flow((int)s, 1, d);
		decode_flow((int)s, 2, d);
	}
}

/* ---- damage ------------------------------------------------------------- */

enum damage_kind { BIT_FLIPS, GARBAGE, SWAP_FRAMES, TRUNCATE, INSERT, DELETE, N_KINDS };
static const char *const kind_names[N_KINDS] = {
	"bit flips", "garbage run", "swapped frames", "truncation", "insertion", "deletion",
};

struct damage {
	int kind;
	size_t d0, d1;  /* damaged bytes [d0, d1) of the original capture */
};

/* Make a damaged copy of the capture in out (room for capture_size + 64). */
static size_t make_damage(int kind, uint8_t *out, struct damage *dm)
{
	size_t n = capture_size;
	memcpy(out, capture, n);
	dm->kind = kind;
	switch (kind) {
	case BIT_FLIPS: {
		size_t at = rnd_below((uint32_t)n - 8);
		unsigned flips = 1 + rnd_below(8);
		dm->d0 = n;
		dm->d1 = 0;
		for (unsigned i = 0; i < flips; i++) {
			size_t k = at + rnd_below(8);
			out[k] ^= (uint8_t)(1u << rnd_below(8));
			dm->d0 = k < dm->d0 ? k : dm->d0;
			dm->d1 = k + 1 > dm->d1 ? k + 1 : dm->d1;
		}
		return n;
	}
	case GARBAGE: {
		size_t len = 1 + rnd_below(64);
		size_t at = rnd_below((uint32_t)(n - len));
		for (size_t i = 0; i < len; i++)
			out[at + i] = (uint8_t)rnd();
		dm->d0 = at;
		dm->d1 = at + len;
		return n;
	}
	case SWAP_FRAMES: {
		size_t frames = n / 16;
		size_t a = rnd_below((uint32_t)frames), b = rnd_below((uint32_t)frames);
		if (a == b)
			b = (a + 1) % frames;
		memcpy(out + 16 * a, capture + 16 * b, 16);
		memcpy(out + 16 * b, capture + 16 * a, 16);
		dm->d0 = 16 * (a < b ? a : b);
		dm->d1 = 16 * (a < b ? b : a) + 16;
		return n;
	}
	case TRUNCATE:
		dm->d0 = dm->d1 = rnd_below((uint32_t)n);
		return dm->d0;
	case INSERT: {
		size_t len = 1 + rnd_below(16), at = rnd_below((uint32_t)n);
		memmove(out + at + len, out + at, n - at);
		for (size_t i = 0; i < len; i++)
			out[at + i] = (uint8_t)rnd();
		dm->d0 = dm->d1 = at;
		return n + len;
	}
	default: {
		size_t len = 1 + rnd_below(16), at = rnd_below((uint32_t)(n - len));
		memmove(out + at, out + at + len, n - at - len);
		dm->d0 = dm->d1 = at;
		return n - len;
	}
	}
}

/* ---- checks ------------------------------------------------------------- */

static struct decode ref;

/* Stream index of the first byte that differs (byte or offset) between the
 * reference and damaged stream of source s; the length if none. */
static size_t first_change(const struct stream *a, const struct stream *b)
{
	size_t n = a->n < b->n ? a->n : b->n;
	for (size_t i = 0; i < n; i++)
		if (a->b[i] != b->b[i] || a->off[i] != b->off[i])
			return i;
	return a->n == b->n ? (size_t)-1 : n;
}

/* Capture offset where errors of source s may begin in the damaged decode
 * d: the start of the reference packet holding stream byte k, the first
 * byte the damage changed. Its stream index is the same in both streams;
 * bytes before k have the same offsets in both, byte k may have moved
 * (inserted or deleted bytes shift the rest of the capture). */
static uint64_t error_bound(int s, size_t k, const struct decode *d)
{
	const struct pkts *p = &ref.p[s];
	if (p->n == 0)
		return 0;
	if (k >= ref.s[s].n)
		k = ref.s[s].n - 1;
	for (size_t i = 0; i < p->n; i++) {
		size_t at = p->v[i].index;
		if (k >= at && k < at + p->v[i].size)
			return at < d->s[s].n && d->s[s].off[at] < p->v[i].offset ? d->s[s].off[at] : p->v[i].offset;
	}
	return 0;
}

/* Every field the same (the memo must not change a record). */
static int identical_recs(const struct recs *a, const struct recs *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct csd_record *x = &a->v[i], *y = &b->v[i];
		if (x->type != y->type || x->flags != y->flags || x->offset != y->offset || x->addr != y->addr ||
		    x->end != y->end || x->last != y->last || x->target != y->target || x->cycles != y->cycles ||
		    x->timestamp != y->timestamp || x->count != y->count || x->size != y->size ||
		    x->opcode != y->opcode || x->context_id != y->context_id || x->exception != y->exception ||
		    x->isa != y->isa || x->cond != y->cond || x->reason != y->reason || x->vmid != y->vmid ||
		    x->id != y->id || x->error != y->error)
			return 0;
	}
	return 1;
}

static int same_recs(const struct recs *a, const struct recs *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++) {
		const struct csd_record *x = &a->v[i], *y = &b->v[i];
		if (x->type != y->type || x->offset != y->offset || x->addr != y->addr || x->end != y->end ||
		    x->count != y->count || x->cycles != y->cycles || x->flags != y->flags)
			return 0;
	}
	return 1;
}

/* Capture offset R' from which every stream is unaffected by damage that
 * ends before d1 (see the top of the file); SIZE_MAX if none. */
static uint64_t clean_from(size_t d1)
{
	for (size_t f = (d1 + 15) / 16 * 16; f + 16 <= capture_size; f += 16)
		for (size_t k = 0; k < 15; k += 2)
			if (capture[f + k] & 1)
				return f + k + 2;
	return UINT64_MAX;
}

/* Instruction addresses of a range-mode decode, expanded through the image. */
static size_t expand_ranges(const struct recs *r, uint32_t *out, size_t cap)
{
	size_t n = 0;
	for (size_t i = 0; i < r->n; i++) {
		const struct csd_record *x = &r->v[i];
		if (x->type != CSD_REC_RANGE)
			continue;
		uint64_t a = x->addr;
		for (uint32_t k = 0; k < x->count; k++) {
			uint8_t b[2] = { 0, 0 };
			unsigned size = 4;
			if (x->isa != CSD_ISA_ARM) {
				csd_image_read(image, a, b, 2);
				size = (b[1] >> 3) >= 0x1D ? 4 : 2;
			}
			if (n < cap)
				out[n] = (uint32_t)a;
			n++;
			a += size;
		}
	}
	return n;
}

struct stats {
	unsigned copies[N_KINDS];
	unsigned changed_sources, recovery_checked, no_sync_point, async_missed;
	double max_records_per_byte;
};

static struct stats stats;

static void check_recovery(int s, const struct damage *dm, const struct decode *d, int copy)
{
	const struct pkts *rp = &ref.p[s], *dp = &d->p[s];
	uint64_t r2 = clean_from(dm->d1);
	size_t a = 0;
	while (a < rp->n && !(rp->v[a].type == CSD_PKT_ASYNC && rp->v[a].offset >= r2))
		a++;
	size_t p = a;
	while (p < rp->n && rp->v[p].type != CSD_PKT_ISYNC)
		p++;
	if (a >= rp->n || p >= rp->n) {
		stats.no_sync_point++;
		return;
	}
	int seen = 0;
	for (size_t i = 0; i < dp->n && !seen; i++)
		seen = dp->v[i].type == CSD_PKT_ASYNC && dp->v[i].last == rp->v[a].last;
	if (!seen) {
		stats.async_missed++;
		return;
	}
	stats.recovery_checked++;
	const uint64_t sync = rp->v[p].offset;
	/* Instruction mode: the instructions from packets at or after P. */
	const struct recs *ri = &ref.r[s][1], *di = &d->r[s][1];
	size_t i = 0, j = 0, nu = 0, nd = 0;
	for (size_t k = 0; k < ri->n; k++)
		nu += ri->v[k].type == CSD_REC_INSN && ri->v[k].offset >= sync;
	for (size_t k = 0; k < di->n; k++)
		nd += di->v[k].type == CSD_REC_INSN && di->v[k].offset >= sync;
	CHECK_EQ(nd, nu);
	int equal = nd == nu;
	size_t first_i = 0;
	for (;;) {
		while (i < ri->n && !(ri->v[i].type == CSD_REC_INSN && ri->v[i].offset >= sync))
			i++;
		if (!first_i)
			first_i = i + 1;
		while (j < di->n && !(di->v[j].type == CSD_REC_INSN && di->v[j].offset >= sync))
			j++;
		if (i >= ri->n || j >= di->n)
			break;
		const struct csd_record *x = &ri->v[i++], *y = &di->v[j++];
		/* ETMv3 charges an instruction the W atoms since the previous
		 * one, so the first after P may carry cycles from before P,
		 * which the damaged decode lost with its synchronisation. */
		const int first = i == first_i;
		if (x->addr != y->addr || x->isa != y->isa || x->opcode != y->opcode || (!first && x->cycles != y->cycles)) {
			fprintf(stderr, "first difference: undamaged 0x%llx (%llu cycles), damaged 0x%llx (%llu cycles)\n",
				(unsigned long long)x->addr, (unsigned long long)x->cycles, (unsigned long long)y->addr,
				(unsigned long long)y->cycles);
			equal = 0;
			break;
		}
	}
	if (!equal)
		fprintf(stderr, "copy %d (%s at 0x%zx-0x%zx), source 0x%02x: instructions after the I-sync at "
			"0x%llx differ from the undamaged decode\n", copy, kind_names[dm->kind], dm->d0, dm->d1,
			sources[s].cfg.trace_id, (unsigned long long)sync);
	CHECK(equal);
	/* Range mode: the same number of instructions at the end. */
	static uint32_t ea[1 << 20], eb[1 << 20];
	size_t na = expand_ranges(&ref.r[s][0], ea, sizeof(ea) / sizeof(ea[0]));
	size_t nb = expand_ranges(&d->r[s][0], eb, sizeof(eb) / sizeof(eb[0]));
	CHECK(na >= nu && nb >= nu && na <= sizeof(ea) / sizeof(ea[0]) && nb <= sizeof(eb) / sizeof(eb[0]));
	if (na >= nu && nb >= nu && na <= sizeof(ea) / sizeof(ea[0]) && nb <= sizeof(eb) / sizeof(eb[0]))
		CHECK(memcmp(ea + na - nu, eb + nb - nu, nu * sizeof(ea[0])) == 0);
}

static void check_copy(const struct damage *dm, const struct decode *d, size_t size, int copy)
{
	const int in_place = dm->kind == BIT_FLIPS || dm->kind == GARBAGE || dm->kind == SWAP_FRAMES;
	const uint64_t frame0 = dm->d0 / 16 * 16;
	for (size_t i = 0; i < d->n_frame_errors; i++)
		CHECK(d->frame_errors[i] >= frame0);
	size_t records = 0;
	for (size_t s = 0; s < n_sources; s++) {
		records += d->r[s][0].n + d->r[s][1].n;
		CHECK(identical_recs(&d->r[s][0], &d->r[s][2]));
		size_t k = first_change(&ref.s[s], &d->s[s]);
		if (k == (size_t)-1) {
			/* Untouched stream: the same decode. */
			CHECK(same_recs(&ref.r[s][0], &d->r[s][0]));
			CHECK(same_recs(&ref.r[s][1], &d->r[s][1]));
			continue;
		}
		stats.changed_sources++;
		const uint64_t bound = error_bound((int)s, k, d);
		for (size_t i = 0; i < d->p[s].n; i++)
			if (d->p[s].v[i].type == CSD_PKT_ERROR && d->p[s].v[i].offset < bound) {
				fprintf(stderr, "copy %d (%s at 0x%zx), source 0x%02x: packet error at 0x%llx, before "
					"0x%llx (first change: stream byte %zu)\n", copy, kind_names[dm->kind], dm->d0,
					sources[s].cfg.trace_id, (unsigned long long)d->p[s].v[i].offset,
					(unsigned long long)bound, k);
				CHECK(d->p[s].v[i].offset >= bound);
			}
		for (int m = 0; m < 2; m++)
			for (size_t i = 0; i < d->r[s][m].n; i++) {
				const struct csd_record *r = &d->r[s][m].v[i];
				if (r->type == CSD_REC_ERROR && r->offset < bound) {
					fprintf(stderr, "copy %d (%s at 0x%zx), source 0x%02x: error \"%s\" at 0x%llx, before "
						"0x%llx\n", copy, kind_names[dm->kind], dm->d0, sources[s].cfg.trace_id,
						r->error, (unsigned long long)r->offset, (unsigned long long)bound);
					CHECK(r->offset >= bound);
				}
			}
		if (in_place)
			check_recovery((int)s, dm, d, copy);
	}
	double per_byte = (double)records / (double)(size ? size : 1);
	if (per_byte > stats.max_records_per_byte)
		stats.max_records_per_byte = per_byte;
	CHECK(records <= RECORDS_PER_BYTE * (size + 16));
}

int main(void)
{
	if (load_capture() != 0)
		return check_done("test_corruption");
	decode_all(capture, capture_size, &ref);
	/* The reference itself: errors-free, and one record per byte or so. */
	size_t ref_records = 0;
	for (size_t s = 0; s < n_sources; s++) {
		ref_records += ref.r[s][0].n + ref.r[s][1].n;
		CHECK(identical_recs(&ref.r[s][0], &ref.r[s][2]));
		for (size_t i = 0; i < ref.r[s][1].n; i++)
			CHECK(ref.r[s][1].v[i].type != CSD_REC_ERROR);
	}
	CHECK(ref_records > 1000);

	uint8_t *buf = malloc(capture_size + 64);
	CHECK(buf != NULL);
	for (int copy = 0; buf && copy < COPIES; copy++) {
		struct damage dm;
		int kind = copy % N_KINDS;
		size_t n = make_damage(kind, buf, &dm);
		stats.copies[kind]++;
		struct decode d;
		decode_all(buf, n, &d);
		check_copy(&dm, &d, n, copy);
		decode_free(&d);
	}
	free(buf);
	printf("test_corruption: %d copies (", COPIES);
	for (int k = 0; k < N_KINDS; k++)
		printf("%s%u %s", k ? ", " : "", stats.copies[k], kind_names[k]);
	printf("); %u changed source streams; recovery checked %u times, no sync point after the damage %u, "
	       "A-sync missed %u; at most %.2f records per capture byte\n", stats.changed_sources,
	       stats.recovery_checked, stats.no_sync_point, stats.async_missed, stats.max_records_per_byte);
	CHECK(stats.recovery_checked > 50);
	decode_free(&ref);
	csd_image_free(image);
	free(capture);
	return check_done("test_corruption");
}
