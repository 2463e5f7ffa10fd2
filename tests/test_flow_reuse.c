/*
 * A flow decoder used again after csd_flow_reset(), and flow decoders on
 * several threads at once sharing one image (csd_image_new: an image
 * without a callback may be read by decoders on several threads). Every
 * decode of every TC2 source, in range and instruction mode, must equal a
 * fresh decoder's with an image of its own, record for record: after a
 * reset that follows a whole decode, one that follows a decode cut off in
 * the middle, and one that follows another protocol's bytes fed as this
 * source's.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "flow_run.h"

#define MAX_SRC 8
#define THREADS 4

struct src {
	unsigned id;
	const char *path;
	uint32_t fmt;
	struct csd_trace_config cfg;
	struct flow_run ref[2];     /* range, insn */
};

static struct src srcs[MAX_SRC];
static size_t nsrc;
static csd_image *shared;

static const uint32_t mode_flags[2] = { 0, CSD_FLOW_INSN };

static int same_run(const struct flow_run *a, const struct flow_run *b)
{
	if (a->n != b->n)
		return 0;
	for (size_t i = 0; i < a->n; i++)
		if (!flow_run_same(&a->rec[i], &b->rec[i]))
			return 0;
	return 1;
}

static csd_flow_decoder *new_decoder(const struct src *s, int mode)
{
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &s->cfg;
	fc.image = shared;
	fc.flags = mode_flags[mode];
	return csd_flow_new(&fc);
}

/* Decode s with dec (fresh or reset) and compare with its reference. */
static int decode_same(csd_flow_decoder *dec, const struct src *s, int mode)
{
	struct flow_run fr = { 0 };
	int ok = flow_run_buffer(s->path, s->fmt, s->id, dec, 0, FLOW_RUN_MIXED, &fr) == 0 && same_run(&fr, &s->ref[mode]);
	flow_run_free(&fr);
	return ok;
}

/* Feed dec the first `n` bytes of file `path` as they are (no finish). */
static void feed_raw(csd_flow_decoder *dec, const char *path, size_t n)
{
	size_t len;
	uint8_t *data = check_read_file(path, &len);
	if (!data)
		return;
	if (n > len)
		n = len;
	struct csd_bytes b = { .data = data, .size = n, .base = 0, .id = 0 };
	csd_flow_feed(dec, &b);
	struct flow_run sink = { 0 };
	flow_run_drain(dec, &sink, FLOW_RUN_MIXED);
	flow_run_free(&sink);
	free(data);
}

static void reset_cases(void)
{
	CHECK_EQ(csd_flow_reset(NULL), CSD_EINVAL);
	int checked = 0;
	for (size_t i = 0; i < nsrc; i++) {
		for (int mode = 0; mode < 2; mode++) {
			csd_flow_decoder *dec = new_decoder(&srcs[i], mode);
			CHECK(dec != NULL);
			if (!dec)
				continue;
			/* A whole decode, finished: then again. */
			CHECK(decode_same(dec, &srcs[i], mode));
			CHECK_EQ(csd_flow_reset(dec), CSD_OK);
			CHECK(decode_same(dec, &srcs[i], mode));
			/* Cut off in the middle (packets half read, records held). */
			CHECK_EQ(csd_flow_reset(dec), CSD_OK);
			feed_raw(dec, srcs[i].path, 12345);
			CHECK_EQ(csd_flow_reset(dec), CSD_OK);
			CHECK(decode_same(dec, &srcs[i], mode));
			/* Another source's bytes, of the other protocol where there is one. */
			const struct src *other = &srcs[(i + 1) % nsrc];
			for (size_t k = 0; k < nsrc; k++)
				if (srcs[k].cfg.protocol != srcs[i].cfg.protocol)
					other = &srcs[k];
			CHECK_EQ(csd_flow_reset(dec), CSD_OK);
			feed_raw(dec, other->path, 1 << 20);
			CHECK_EQ(csd_flow_reset(dec), CSD_OK);
			CHECK(decode_same(dec, &srcs[i], mode));
			checked += 4;
			csd_flow_free(dec);
		}
	}
	printf("reset: %d decodes after csd_flow_reset compared\n", checked);
	CHECK(checked >= 16);
}

struct job {
	int t;
	int mode;
	csd_flow_decoder *dec[MAX_SRC];
	int ok;
};

/* Every source in turn from thread t's own decoders, all reading the one
 * image, twice (the second time after a reset). */
static void *thread_main(void *arg)
{
	struct job *j = arg;
	j->ok = 1;
	for (int round = 0; round < 2; round++)
		for (size_t k = 0; k < nsrc; k++) {
			size_t i = (k + (size_t)j->t) % nsrc;
			if (round && csd_flow_reset(j->dec[i]) != CSD_OK)
				j->ok = 0;
			if (!decode_same(j->dec[i], &srcs[i], j->mode))
				j->ok = 0;
		}
	return NULL;
}

static void shared_image_threads(void)
{
	for (int mode = 0; mode < 2; mode++) {
		struct job jobs[THREADS];
		pthread_t th[THREADS];
		memset(jobs, 0, sizeof(jobs));
		/* Decoders are made on this thread (the image's map is built
		 * by the first). */
		for (int t = 0; t < THREADS; t++) {
			jobs[t].t = t;
			jobs[t].mode = mode;
			for (size_t i = 0; i < nsrc; i++)
				CHECK((jobs[t].dec[i] = new_decoder(&srcs[i], mode)) != NULL);
		}
		for (int t = 0; t < THREADS; t++)
			CHECK_EQ(pthread_create(&th[t], NULL, thread_main, &jobs[t]), 0);
		for (int t = 0; t < THREADS; t++) {
			pthread_join(th[t], NULL);
			CHECK(jobs[t].ok);
			for (size_t i = 0; i < nsrc; i++)
				csd_flow_free(jobs[t].dec[i]);
		}
	}
	printf("shared image: %d threads x %zu sources x 2 rounds x 2 modes\n", THREADS, nsrc);
}

int main(void)
{
	const char *shared_dir = check_shared_dir();
	char dir[2048], err[512];
	size_t total = 0;
	snprintf(dir, sizeof(dir), "%s/traces/TC2", shared_dir);
	csd_snapshot *snap = NULL;
	CHECK_EQ(csd_snapshot_open(dir, &snap, err, sizeof(err)), CSD_OK);
	if (!snap)
		return check_done("test_flow_reuse");
	shared = csd_image_new();
	CHECK(shared != NULL);
	for (size_t i = 0; i < csd_snapshot_num_sources(snap) && nsrc < MAX_SRC; i++) {
		const struct csd_snapshot_source *ss = csd_snapshot_source(snap, i);
		if (ss->buffer < 0 || (ss->config.protocol != CSD_PROTO_ETM3 && ss->config.protocol != CSD_PROTO_PTM))
			continue;
		struct src *s = &srcs[nsrc++];
		const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, (size_t)ss->buffer);
		s->id = ss->config.trace_id;
		s->path = buf->path;
		s->fmt = buf->frame_format;
		s->cfg = ss->config;
		/* The references: a fresh decoder with an image of its own. */
		for (int mode = 0; mode < 2; mode++)
			CHECK_EQ(flow_run_snapshot_mode(dir, s->id, mode_flags[mode], 0, FLOW_RUN_MIXED, &s->ref[mode]), 0);
		CHECK(s->ref[1].n >= s->ref[0].n);
		total += s->ref[0].n;
	}
	CHECK(nsrc >= 4 && total > 1000);
	/* TC2's cores have the same dumps: one image serves every source. */
	CHECK(csd_snapshot_load_image(snap, NULL, shared) > 0);
	reset_cases();
	shared_image_threads();
	for (size_t i = 0; i < nsrc; i++)
		for (int mode = 0; mode < 2; mode++)
			flow_run_free(&srcs[i].ref[mode]);
	csd_image_free(shared);
	csd_snapshot_free(snap);
	return check_done("test_flow_reuse");
}
