/*
 * chunks.c - one source's trace cut at sync points into chunks decoded
 * on worker threads (--jobs N, N >= 2, with one source).
 *
 * The source's bytes (after deformatting, with their capture offsets) are
 * gathered in a window. When the window holds enough for a round, it is
 * cut with csd_sync_scan() into chunks; the worker threads decode every
 * chunk but the first, each with a fresh decoder and its own image
 * (images are not shared between threads), saving the decoder's state at
 * the first few sync points inside the chunk. Meanwhile the calling thread
 * feeds the first chunk to the decoder that has seen everything before it
 * (the serial decoder) and hands its records on. Then it joins each chunk
 * in order as include/csdec.h describes: the serial decoder goes on into
 * the chunk up to each saved point and at the first equal state the
 * chunk's records from there on are handed on and the chunk's decoder
 * becomes the serial one; with no equal state the serial decoder decodes
 * the whole chunk. Either way the records are those of a serial decode,
 * handed on by the calling thread in order.
 *
 * Memory is bounded: the window holds at most a round's bytes (with an
 * 8-byte offset each), and a chunk keeps at most CHUNK_RECORDS records;
 * a chunk that makes more drops them and joins by decoding it serially.
 */
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunks.h"

#define SAVES 4                    /* states saved per chunk */
#define CHUNK_BYTES (512 * 1024)   /* the least distance between cuts */
#define CHUNK_RECORDS (64 * 1024)  /* records a chunk keeps before giving up */

struct chunk {
	size_t from, to;                /* window positions */
	csd_flow_decoder *dec;
	csd_image *img;
	struct csd_record *rec;
	size_t nrec, cap;
	int overflow;
	csd_flow_state *saved[SAVES];
	size_t at[SAVES], nsave;
	int done;
};

struct chunks {
	struct run_ctx *ctx;
	struct source_slot *s;
	const struct options *o;
	struct csd_trace_config cfg;
	int insn;
	int nthreads;                  /* --jobs */
	int nworkers;
	size_t chunk_bytes;
	int stats;                     /* CSDEC_TEST_CHUNK_BYTES given: the joins on stderr */
	uint64_t chunks, matched;
	/* The window: bytes from the serial decoder's position on. */
	uint8_t *data;
	uint64_t *off;
	size_t n, cap;
	csd_flow_decoder *serial;      /* NULL: s->flow */
	csd_image *serial_img;         /* the image of serial when it came from a chunk */
	/* A round. */
	struct chunk *ck;
	size_t nck, next_task;
	int stop;
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done;
	pthread_t *th;
	int started;
};

static csd_flow_decoder *cur(struct chunks *c)
{
	return c->serial ? c->serial : c->s->flow;
}

static void feed(struct chunks *c, csd_flow_decoder *d, size_t from, size_t to)
{
	if (to <= from)
		return;
	struct csd_bytes b = { .data = c->data + from, .size = to - from, .offsets = c->off + from, .id = c->s->id };
	(void)csd_flow_feed(d, &b);
}

/* Hand on what the serial decoder has made. */
static void drain_serial(struct chunks *c)
{
	const struct csd_record *batch;
	int n;
	while ((n = csd_flow_next_batch(cur(c), &batch)) > 0) {
		for (int i = 0; i < n; i++)
			cli_take_record(c->ctx, c->s, &batch[i]);
		cli_check_output(c->ctx);
	}
}

static void keep(struct chunk *k)
{
	const struct csd_record *batch;
	int n;
	while ((n = csd_flow_next_batch(k->dec, &batch)) > 0) {
		if (k->overflow)
			continue;
		if (k->nrec + (size_t)n > CHUNK_RECORDS) {
			k->overflow = 1;
			continue;
		}
		if (k->nrec + (size_t)n > k->cap) {
			size_t cap = k->cap ? k->cap : 1024;
			while (cap < k->nrec + (size_t)n)
				cap *= 2;
			struct csd_record *p = realloc(k->rec, cap * sizeof(*p));
			if (!p) {
				k->overflow = 1;
				continue;
			}
			k->rec = p;
			k->cap = cap;
		}
		memcpy(k->rec + k->nrec, batch, (size_t)n * sizeof(*batch));
		k->nrec += (size_t)n;
	}
}

static csd_flow_decoder *new_decoder(struct chunks *c, csd_image **img)
{
	*img = csd_image_new();
	if (!*img)
		return NULL;
	if (c->ctx->chunk_snap && csd_snapshot_load_image(c->ctx->chunk_snap, c->ctx->chunk_core, *img) < 0)
		return NULL;
	cli_load_extra_images(c->o, *img);
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &c->cfg;
	fc.image = *img;
	fc.flags = c->insn ? CSD_FLOW_INSN : 0;
	return csd_flow_new(&fc);
}

/* A worker's part: chunk k alone, its states saved at its first sync points. */
static void decode_chunk(struct chunks *c, struct chunk *k)
{
	k->dec = new_decoder(c, &k->img);
	if (!k->dec) {
		k->overflow = 1;
		return;
	}
	size_t sync[SAVES + 1], nsync = 0;
	if (csd_sync_scan(c->data + k->from, k->to - k->from, 0, sync, SAVES + 1, &nsync) < 0)
		nsync = 0;
	size_t pos = k->from;
	for (size_t j = 0; j < nsync && k->nsave < SAVES; j++) {
		/* The cut itself is a sync point: the states meet after it. */
		if (sync[j] == 0)
			continue;
		size_t at = k->from + sync[j];
		feed(c, k->dec, pos, at);
		keep(k);
		pos = at;
		if (csd_flow_state_save(k->dec, &k->saved[k->nsave]) == 0)
			k->at[k->nsave++] = at;
	}
	feed(c, k->dec, pos, k->to);
	keep(k);
}

static void *worker_main(void *arg)
{
	struct chunks *c = arg;
	pthread_mutex_lock(&c->mu);
	for (;;) {
		if (c->stop)
			break;
		if (c->next_task >= c->nck) {
			pthread_cond_wait(&c->cv_work, &c->mu);
			continue;
		}
		struct chunk *k = &c->ck[c->next_task++];
		pthread_mutex_unlock(&c->mu);
		decode_chunk(c, k);
		pthread_mutex_lock(&c->mu);
		k->done = 1;
		pthread_cond_broadcast(&c->cv_done);
	}
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

static void free_chunk(struct chunk *k)
{
	for (size_t j = 0; j < k->nsave; j++)
		csd_flow_state_free(k->saved[j]);
	csd_flow_free(k->dec);
	csd_image_free(k->img);
	free(k->rec);
	memset(k, 0, sizeof(*k));
}

/* Decode window[0 .. end) with cuts at cut[0 .. ncut) (all inside it),
 * then drop those bytes from the window. */
static void round_run(struct chunks *c, const size_t *cut, size_t ncut, size_t end)
{
	pthread_mutex_lock(&c->mu);
	c->nck = ncut;
	for (size_t i = 0; i < ncut; i++) {
		c->ck[i].from = cut[i];
		c->ck[i].to = i + 1 < ncut ? cut[i + 1] : end;
	}
	c->next_task = 0;
	pthread_cond_broadcast(&c->cv_work);
	pthread_mutex_unlock(&c->mu);

	feed(c, cur(c), 0, ncut ? cut[0] : end);
	drain_serial(c);
	for (size_t i = 0; i < ncut; i++) {
		struct chunk *k = &c->ck[i];
		pthread_mutex_lock(&c->mu);
		while (!k->done)
			pthread_cond_wait(&c->cv_done, &c->mu);
		pthread_mutex_unlock(&c->mu);
		size_t pos = k->from;
		int matched = 0;
		for (size_t j = 0; j < k->nsave && !k->overflow && !matched; j++) {
			feed(c, cur(c), pos, k->at[j]);
			drain_serial(c);
			pos = k->at[j];
			if (csd_flow_state_match(cur(c), k->saved[j]) == 1) {
				matched = 1;
				uint64_t from = csd_flow_state_records(k->saved[j]);
				for (size_t r = (size_t)from; r < k->nrec; r++)
					cli_take_record(c->ctx, c->s, &k->rec[r]);
				cli_check_output(c->ctx);
			}
		}
		c->chunks++;
		c->matched += matched;
		if (matched) {
			csd_flow_free(c->serial);
			csd_image_free(c->serial_img);
			c->serial = k->dec;
			c->serial_img = k->img;
			k->dec = NULL;
			k->img = NULL;
		} else {
			feed(c, cur(c), pos, k->to);
			drain_serial(c);
		}
		free_chunk(k);
	}
	pthread_mutex_lock(&c->mu);
	c->nck = 0;
	c->next_task = 0;
	pthread_mutex_unlock(&c->mu);
	memmove(c->data, c->data + end, c->n - end);
	memmove(c->off, c->off + end, (c->n - end) * sizeof(*c->off));
	c->n -= end;
}

/* Cut the window; with `all`, decode all of it, else up to its last cut. */
static void round_cut(struct chunks *c, int all)
{
	size_t cut[64], ncut = 0, max = (size_t)c->nthreads * 2;
	if (max > 64)
		max = 64;
	if (csd_sync_scan(c->data, c->n, c->chunk_bytes, cut, max + 1, &ncut) < 0)
		ncut = 0;
	if (all) {
		if (ncut > max)
			ncut = max;
		round_run(c, cut, ncut, c->n);
		return;
	}
	if (ncut < 2)
		return;
	/* The last cut ends the round: the bytes after it wait for the next. */
	round_run(c, cut, ncut - 1, cut[ncut - 1]);
}

void chunks_data(struct chunks *c, const struct csd_bytes *b)
{
	size_t limit = c->chunk_bytes * ((size_t)c->nthreads * 2 + 2);
	size_t i = 0;
	while (i < b->size) {
		size_t take = b->size - i;
		if (take > c->cap - c->n)
			take = c->cap - c->n;
		memcpy(c->data + c->n, b->data + i, take);
		for (size_t k = 0; k < take; k++)
			c->off[c->n + k] = b->offsets ? b->offsets[i + k] : b->base + i + k;
		c->n += take;
		i += take;
		if (c->n >= limit) {
			size_t before = c->n;
			round_cut(c, 0);
			if (c->n == before) {
				/* No two cuts in a full window: it decodes serially. */
				feed(c, cur(c), 0, c->n);
				drain_serial(c);
				c->n = 0;
			}
		}
	}
}

void chunks_finish(struct chunks *c)
{
	while (c->n) {
		size_t before = c->n;
		round_cut(c, 0);
		if (c->n == before)
			break;
	}
	if (c->n)
		round_cut(c, 1);
	csd_flow_finish(cur(c));
	drain_serial(c);
	if (c->stats)
		fprintf(stderr, "csdec: chunks: %" PRIu64 " joined, %" PRIu64 " by a matching state\n", c->chunks,
			c->matched);
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->cv_work);
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < c->started; i++)
		pthread_join(c->th[i], NULL);
	/* s keeps its own decoder and image (nothing reads them after the
	 * records: the handlers see s->image, which has the same contents). */
	csd_flow_free(c->serial);
	csd_image_free(c->serial_img);
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv_work);
	pthread_cond_destroy(&c->cv_done);
	free(c->th);
	free(c->ck);
	free(c->data);
	free(c->off);
	free(c);
}

struct chunks *chunks_new(struct run_ctx *ctx)
{
	const struct options *o = ctx->chunk_opts;
	if (ctx->jobs_default || ctx->jobs < 2 || !o)
		return NULL;
	struct source_slot *s = NULL;
	for (int id = 0; id < MAX_IDS; id++)
		if (ctx->slot[id]) {
			if (s)
				return NULL;
			s = ctx->slot[id];
		}
	if (!s || !s->flow)
		return NULL;
	struct chunks *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ctx = ctx;
	c->s = s;
	c->o = o;
	c->cfg = s->cfg;
	c->insn = ctx->chunk_insn;
	c->nthreads = ctx->jobs;
	c->chunk_bytes = CHUNK_BYTES;
	/* Test knob: a small distance between cuts gives small inputs many chunks. */
	const char *env = getenv("CSDEC_TEST_CHUNK_BYTES");
	if (env && atol(env) > 0) {
		c->chunk_bytes = (size_t)atol(env);
		c->stats = 1;
	}
	c->cap = c->chunk_bytes * ((size_t)c->nthreads * 2 + 2);
	c->data = malloc(c->cap);
	c->off = malloc(c->cap * sizeof(*c->off));
	c->ck = calloc(65, sizeof(*c->ck));
	/* The calling thread decodes each round's first chunk, joins and
	 * prints: jobs - 1 workers besides it. */
	c->nworkers = c->nthreads - 1;
	c->th = calloc((size_t)c->nworkers, sizeof(*c->th));
	if (!c->data || !c->off || !c->ck || !c->th) {
		free(c->data);
		free(c->off);
		free(c->ck);
		free(c->th);
		free(c);
		return NULL;
	}
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv_work, NULL);
	pthread_cond_init(&c->cv_done, NULL);
	for (; c->started < c->nworkers; c->started++)
		if (pthread_create(&c->th[c->started], NULL, worker_main, c) != 0)
			break;
	if (!c->started) {
		pthread_mutex_destroy(&c->mu);
		pthread_cond_destroy(&c->cv_work);
		pthread_cond_destroy(&c->cv_done);
		free(c->data);
		free(c->off);
		free(c->ck);
		free(c->th);
		free(c);
		return NULL;
	}
	return c;
}
