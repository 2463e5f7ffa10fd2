/*
 * Chunked decoding of one source (csdec.h, "Chunked decoding of one
 * source"): the source is cut at sync points (every one, and every few),
 * each chunk decoded by a fresh flow decoder that saves its state at the
 * first sync points inside it, and the chunks joined as the header says:
 * the previous decoder goes on into the next chunk until its state matches
 * one saved there, else through the whole chunk. The joined records must
 * equal the serial decode's, every field, in range and instruction mode,
 * for every source of the TC2 snapshot and of the generated round-trip
 * snapshots. The counts of matches and of fallbacks are checked too, so
 * that neither path goes untried.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flow_run.h"

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
};

/* Decode with a cut at every `step`-th sync point; the joined records into
 * *out. */
static void chunked(const struct ctx *c, const size_t *sync, size_t nsync, size_t step, struct flow_run *out,
		    struct stats *st)
{
	size_t ncut = 0;
	size_t *cut = malloc((nsync / step + 2) * sizeof(*cut));
	cut[ncut++] = 0;
	for (size_t i = step - 1; i < nsync; i += step)
		cut[ncut++] = sync[i];
	cut[ncut] = c->src->n;
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
			int m = csd_flow_state_match(prev, saved[j]);
			CHECK(m == 0 || m == 1);
			if (m == 1) {
				matched = 1;
				uint64_t from = csd_flow_state_records(saved[j]);
				CHECK(from <= rk.n);
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
	free(cut);
}

static void serial(const struct ctx *c, struct flow_run *out)
{
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
	for (int mode = 0; mode < 2; mode++) {
		struct ctx c = { .src = &src, .id = ss->config.trace_id };
		c.fc.size = sizeof(c.fc);
		c.fc.trace = &ss->config;
		c.fc.image = img;
		c.fc.flags = mode ? CSD_FLOW_INSN : 0;
		struct flow_run ser;
		memset(&ser, 0, sizeof(ser));
		serial(&c, &ser);
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

int main(void)
{
	scan_cases();
	struct stats tc2 = { 0 }, gen = { 0 };
	char dir[2048];
	snprintf(dir, sizeof(dir), "%s/traces/TC2", check_shared_dir());
	one_snapshot(dir, &tc2);
	printf("TC2: %zu cuts, %zu joins: %zu matched, %zu fell back; %zu saved states did not match\n", tc2.cuts,
	       tc2.joins, tc2.matched, tc2.fallback, tc2.mismatched_saves);
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
		one_snapshot(dir, &gen);
		snaps++;
	}
	if (dd)
		closedir(dd);
	printf("generated (%zu snapshots): %zu cuts, %zu joins: %zu matched, %zu fell back; %zu saved states did not match\n",
	       snaps, gen.cuts, gen.joins, gen.matched, gen.fallback, gen.mismatched_saves);
	CHECK(snaps > 0);
	CHECK(gen.matched > 0);
	CHECK(tc2.mismatched_saves + gen.mismatched_saves > 0);
	return check_done("test_chunks");
}
