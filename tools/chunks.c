/*
 * chunks.c - one source's trace cut at sync points into chunks decoded
 * on worker threads (--jobs N, N >= 2, with one source): its flow records
 * (decode, coverage, profile) or its packets (packets).
 *
 * The source's bytes are gathered until they hold a cut point (an A-sync,
 * csd_sync_scan) at least CHUNK_BYTES on; the bytes before it become a
 * chunk, queued for the threads. Every thread, the calling one included
 * while it has nothing to join, decodes chunks: each with a decoder of its
 * own taken from a pool (csd_flow_reset keeps the code it has classified,
 * so decoders stay warm) reading the source's one image, which all share
 * (csd_image_new: an image without a callback may be read by several
 * threads). A chunk's decoder saves its state at the first few sync points
 * inside the chunk and keeps what the records give: for --format none
 * only their counts; for a listing, the text of the records, printed on
 * the worker as the calling thread would print it, but for timestamps,
 * which are kept as records for the merge (merge.h: merge_direct); for
 * the commands that take records themselves (coverage, profile), the
 * records. A packet listing is kept as text, but for timestamp packets,
 * kept as packets (the join may complete their high bits).
 *
 * The calling thread joins the chunks in order, as include/csdec.h
 * describes: the decoder that has seen everything before the chunk (the
 * serial decoder) goes on into it up to each saved point; at the first
 * equal state the chunk's records from there on are handed on, and the
 * chunk's decoder becomes the serial one (the old one goes back to the
 * pool); with no equal state the serial decoder decodes the whole chunk.
 * Either way what is handed on is what a serial decode gives, in order, on
 * the calling thread (the merge, handlers and printers are not shared).
 *
 * From a formatted capture the source's bytes come with the capture offset
 * of each (the frames' other bytes lie between them); they are kept beside
 * the bytes, so that every decoder gives each record the offset a serial
 * decode gives it. A frame note (a bad frame, say) is printed where the
 * serial pipeline prints it: every byte before it decoded and its records
 * handed on first (chunks_sync). By default such a source decodes on the
 * calling thread until it has given DEFER_BYTES, as one source's share of
 * a formatted capture is not known from the capture's size.
 *
 * Memory is bounded: at most 2 * jobs + 1 chunks in flight, of about
 * chunk_bytes each (plus the bytes up to the next cut), and a chunk keeps
 * at most KEEP_BYTES of text or records: its decoder then stops, and after
 * a join by a matching state the serial decoder (that same decoder)
 * decodes the rest of the chunk on the calling thread. The distance
 * between cuts shrinks when chunks stop early (output denser than the
 * keep allows) and grows back when they keep little.
 */
#include <pthread.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chunks.h"
#include "jobs.h"
#include "merge.h"

#define SAVES 4                    /* states saved per chunk */
#define CHUNK_BYTES (256 * 1024)   /* the distance between cuts at most ... */
#define CHUNK_FIRST (32 * 1024)    /* ... at first where records are kept (they make
				    * many times the trace's bytes) */
#define CHUNK_MIN (8 * 1024)       /* ... and at least */
#define KEEP_BYTES (6u << 20)      /* text or records a chunk keeps before it stops */
#define KEEP_SLACK (1u << 20)      /* room past it for one feed step's text */
/* By default, one source of a formatted capture decodes on the calling
 * thread until it has given this many bytes: the capture's size says
 * little of one source's share, and threads lose on a small one. */
#define DEFER_BYTES (4u << 20)
/* A chunk is fed in steps, to stop in time: a step's text fits in the
 * slack (past it only from hostile trace, whose chunk then joins by the
 * serial decoder). */
#define FEED_STEP 1024
#define FEED_STEP_COUNTS 65536

enum keep_mode {
	KEEP_COUNTS,                    /* --format none: counts only */
	KEEP_TEXT,                      /* a listing: text, timestamps as records */
	KEEP_RECORDS,                   /* records for the command's handler */
};

/* What a chunk has made up to a point. */
struct tally {
	uint64_t items, insns, errors;  /* of the records not kept as records */
	size_t nrec;                    /* records kept */
	size_t ntext;                   /* text bytes */
};

/* perf.data: the process and thread a source's records print, and what
 * the listing last said of them (struct source_slot's fields). A chunk's
 * text is printed with its own copy, which the join compares with the
 * serial decode's. */
struct perf_view {
	int32_t pid, tid, shown_pid, shown_tid, taken_pid, taken_tid;
};

static struct perf_view view_of(const struct source_slot *s)
{
	return (struct perf_view){ s->pid, s->tid, s->shown_pid, s->shown_tid, s->taken_pid, s->taken_tid };
}

static void view_set(struct source_slot *s, const struct perf_view *v)
{
	s->pid = v->pid;
	s->tid = v->tid;
	s->shown_pid = v->shown_pid;
	s->shown_tid = v->shown_tid;
	s->taken_pid = v->taken_pid;
	s->taken_tid = v->taken_tid;
}

static int view_equal(const struct perf_view *a, const struct perf_view *b)
{
	return a->pid == b->pid && a->tid == b->tid && a->shown_pid == b->shown_pid && a->shown_tid == b->shown_tid &&
	       a->taken_pid == b->taken_pid && a->taken_tid == b->taken_tid;
}

/* A perf.data source's view after a record kept (a timestamp, printed at
 * the join), as cli_take_print_noted leaves it: the listing's thread line
 * said, and with the merge the record's process and thread noted. */
static void perf_view_kept(const struct run_ctx *ctx, struct source_slot *v)
{
	if (ctx->format == FMT_TEXT) {
		v->shown_pid = v->pid;
		v->shown_tid = v->tid;
	}
	if (ctx->merge) {
		v->taken_pid = v->pid;
		v->taken_tid = v->tid;
	}
}

/* A record or packet kept, and where in the text it goes (with a perf.data
 * source's view as it was before the record). */
struct kept {
	union {
		struct csd_record r;
		struct csd_packet p;
	} u;
	size_t text_at;
	struct perf_view pv;
};

/* A decoder of the source: a flow decoder, or for a packet listing a
 * packet decoder of its protocol. */
struct cdec {
	csd_flow_decoder *flow;
	csd_etm3_pkt_decoder *etm3;
	csd_ptm_pkt_decoder *ptm;
};

struct chunk {
	/* The chunk's bytes, and their capture offsets (NULL: base + i):
	 * buffers of the gathering size (struct chunks' cap, not this
	 * struct's) that were the gathering buffers (acc) until
	 * the chunk was cut off; the slot keeps them after the join, to
	 * gather in again (queue_chunk). */
	uint8_t *bytes;
	uint64_t *offs;
	size_t len;
	uint64_t base;                  /* capture offset of bytes[0] */
	struct cdec dec;
	/* Kept for the join; the buffers stay with the ring slot. */
	struct kept *rec;
	size_t cap;
	char *text;                     /* KEEP_BYTES + KEEP_SLACK */
	FILE *out;                      /* writes text while decoding */
	struct tally t;                 /* all it made (items, insns, errors: tally_now) */
	struct source_slot counts;      /* counts only (cli_count_record) */
	size_t fed;                     /* bytes its decoder was fed (len unless it stopped) */
	csd_flow_state *saved[SAVES];   /* (flow decoders) */
	csd_pkt_state *psaved[SAVES];   /* (packet decoders) */
	size_t at[SAVES];               /* where each was saved */
	struct tally mark[SAVES];       /* the tally there */
	struct perf_view mark_pv[SAVES]; /* (perf_text) the view there */
	size_t nsave;
	/* (perf_text) the source as this chunk's text prints it: the serial
	 * decode's when the chunk was queued, then as the records change it. */
	struct source_slot view;
	int broken;                     /* records were lost: it joins by the serial decoder */
	int state;                      /* CK_* */
};

enum { CK_QUEUED, CK_RUNNING, CK_DONE };

#define MAX_INFLIGHT 64

struct chunks {
	struct run_ctx *ctx;
	struct source_slot *s;
	struct csd_flow_config fc;
	int packets;                    /* packet decoders (else flow decoders) */
	enum keep_mode keep;
	int perf_text;                  /* a perf.data source's records as text (struct perf_view) */
	int nworkers;
	size_t chunk_bytes, chunk_max;
	int stats;                      /* CSDEC_TEST_CHUNK_BYTES given: the joins on stderr */
	uint64_t njoined, nmatched;
	/* Bytes not yet in a chunk, and their capture offsets (acc_off:
	 * formatted input; NULL: acc_base + i). */
	uint8_t *acc;
	uint64_t *acc_off;
	size_t n, cap;
	uint64_t acc_base;              /* capture offset of acc[0] */
	size_t scanned;                 /* acc[0 .. scanned) holds no cut */
	/* Chunks in flight: a ring, oldest (next to join) at head. */
	struct chunk ring[MAX_INFLIGHT];
	size_t head, count, inflight_max;
	size_t next_task;               /* ring index of the next chunk to decode */
	size_t queued;                  /* chunks not yet taken */
	struct cdec serial;
	/* Decoders not in use (the slot's own among them once it is let go). */
	struct cdec *pool;
	size_t npool, made;
	int stop;
	pthread_mutex_t mu;
	pthread_cond_t cv_work, cv_done;
	pthread_t *th;
	int started;
	/* By default on formatted input: the source's bytes so far, decoded
	 * serially until DEFER_BYTES (deferred 1), then threads start. */
	int deferred;
	uint64_t seen;
};

/* ---- a decoder of either kind ---- */

static int cdec_none(const struct cdec *d)
{
	return !d->flow && !d->etm3 && !d->ptm;
}

static int cdec_same(const struct cdec *a, const struct cdec *b)
{
	return a->flow == b->flow && a->etm3 == b->etm3 && a->ptm == b->ptm;
}

/* A new decoder (on the calling thread: csd_image_new's rule for a shared
 * image); none without memory. */
static struct cdec cdec_new(const struct chunks *c)
{
	struct cdec d = { 0 };
	if (!c->packets)
		d.flow = csd_flow_new(&c->fc);
	else if (c->s->etm3)
		d.etm3 = csd_etm3_pkt_new(&c->s->cfg);
	else
		d.ptm = csd_ptm_pkt_new(&c->s->cfg);
	return d;
}

static void cdec_free(struct cdec *d)
{
	csd_flow_free(d->flow);
	csd_etm3_pkt_free(d->etm3);
	csd_ptm_pkt_free(d->ptm);
	memset(d, 0, sizeof(*d));
}

static int cdec_reset(struct cdec *d)
{
	return d->flow ? csd_flow_reset(d->flow) : d->etm3 ? csd_etm3_pkt_reset(d->etm3) : csd_ptm_pkt_reset(d->ptm);
}

static int cdec_feed(struct cdec *d, const struct csd_bytes *b)
{
	return d->flow ? csd_flow_feed(d->flow, b) : d->etm3 ? csd_etm3_pkt_feed(d->etm3, b) : csd_ptm_pkt_feed(d->ptm, b);
}

static void cdec_finish(struct cdec *d)
{
	if (d->flow)
		csd_flow_finish(d->flow);
	else if (d->etm3)
		csd_etm3_pkt_finish(d->etm3);
	else
		csd_ptm_pkt_finish(d->ptm);
}

/* A packet decoder's next packet (0), or its end for now. */
static int cdec_packet(struct cdec *d, struct csd_packet *p)
{
	return d->etm3 ? csd_etm3_pkt_next(d->etm3, p) : csd_ptm_pkt_next(d->ptm, p);
}

/* What d has made, handed on as the serial decode's. */
static void deliver(struct chunks *c, struct cdec *d)
{
	if (!d->flow) {
		struct csd_packet p;
		while (cdec_packet(d, &p) == 0)
			cli_take_packet(c->ctx, c->s, &p);
		cli_check_output(c->ctx);
		return;
	}
	const struct csd_record *batch;
	int n;
	while ((n = csd_flow_next_batch(d->flow, &batch)) > 0) {
		for (int i = 0; i < n; i++)
			cli_take_record(c->ctx, c->s, &batch[i]);
		cli_check_output(c->ctx);
	}
}

/* bytes[from, to) of k, with their capture offsets. */
static struct csd_bytes chunk_span(const struct chunks *c, const struct chunk *k, size_t from, size_t to)
{
	struct csd_bytes b = { .data = k->bytes + from, .size = to - from, .base = k->base + from, .id = c->s->id };
	if (k->offs)
		b.offsets = k->offs + from;
	return b;
}

/* The serial decoder through b, its records handed on. */
static void serial_take(struct chunks *c, const struct csd_bytes *b)
{
	if (cdec_feed(&c->serial, b) == 0)
		deliver(c, &c->serial);
}

/* The serial decoder through bytes[from, to) of k, its records handed on. */
static void serial_feed(struct chunks *c, struct chunk *k, size_t from, size_t to)
{
	if (to <= from)
		return;
	struct csd_bytes b = chunk_span(c, k, from, to);
	serial_take(c, &b);
}

/* Keep a record or packet (at the text's end); its slot, NULL if there is
 * no room. */
static struct kept *keep_item(struct chunk *k)
{
	if (k->t.nrec == k->cap) {
		size_t cap = k->cap ? k->cap * 2 : 1024;
		struct kept *p = realloc(k->rec, cap * sizeof(*p));
		if (!p)
			return NULL;
		k->rec = p;
		k->cap = cap;
	}
	k->rec[k->t.nrec].text_at = k->t.ntext;
	return &k->rec[k->t.nrec++];
}

/* The text written so far (buffered part included); 0 if it is not known. */
static int text_now(struct chunk *k)
{
	long at = k->out ? ftell(k->out) : 0;
	if (at < 0 || (k->out && ferror(k->out)))
		return 0;
	k->t.ntext = (size_t)at;
	return 1;
}

static int keep_full(const struct chunk *k)
{
	return k->t.ntext + k->t.nrec * sizeof(struct kept) >= KEEP_BYTES;
}

/* Take the packets k's decoder has made: printed, but timestamps kept;
 * 0 once its keep is full (or broken). */
static int take_packets(struct chunks *c, struct chunk *k)
{
	struct csd_packet p;
	while (cdec_packet(&k->dec, &p) == 0) {
		/* (A packet kept is counted when it is handed on.) */
		if (p.type == CSD_PKT_TIMESTAMP) {
			struct kept *e = text_now(k) ? keep_item(k) : NULL;
			if (!e) {
				k->broken = 1;
				return 0;
			}
			e->u.p = p;
			continue;
		}
		k->counts.items++;
		k->counts.errors += p.type == CSD_PKT_ERROR;
		cli_print_packet(c->ctx, k->out, c->s, &p);
	}
	if (!text_now(k))
		k->broken = 1;
	return !k->broken && !keep_full(k);
}

/* k's tally, its counts brought up to date. */
static const struct tally *tally_now(struct chunk *k)
{
	k->t.items = k->counts.items;
	k->t.insns = k->counts.insns;
	k->t.errors = k->counts.errors;
	return &k->t;
}

/* Take what k's decoder has made; 0 once its keep is full (or broken). */
static int take(struct chunks *c, struct chunk *k)
{
	if (c->packets)
		return take_packets(c, k);
	const struct csd_record *batch;
	int n;
	while ((n = csd_flow_next_batch(k->dec.flow, &batch)) > 0) {
		if (c->keep == KEEP_COUNTS) {
			/* Only counted (--format none; perf_text is only with
			 * text kept): as the serial drain. */
			cli_count_records(&k->counts, batch, n);
			continue;
		}
		for (int i = 0; i < n; i++) {
			const struct csd_record *r = &batch[i];
			/* Timestamps are kept as records: the join may complete
			 * their high bits, and the merge takes them. */
			if (c->keep == KEEP_RECORDS || (c->keep == KEEP_TEXT && r->type == CSD_REC_TIMESTAMP)) {
				struct kept *e = text_now(k) ? keep_item(k) : NULL;
				if (e) {
					e->u.r = *r;
					if (c->perf_text) {
						e->pv = view_of(&k->view);
						perf_view_kept(c->ctx, &k->view);
					}
				} else {
					k->broken = 1;
				}
				continue;
			}
			cli_count_record(&k->counts, r);
			if (c->perf_text)
				cli_take_print_noted(c->ctx, k->out, &k->view, r);
			else if (c->keep == KEEP_TEXT)
				cli_print_record(c->ctx, k->out, c->s, r);
		}
		if (c->keep == KEEP_TEXT && !text_now(k))
			k->broken = 1;
		if (k->broken)
			return 0;
	}
	return !keep_full(k);
}

/* k's decoder through bytes[k->fed, to), in steps; 0 if it stopped. */
static int chunk_feed(struct chunks *c, struct chunk *k, size_t to)
{
	const size_t step = c->keep == KEEP_COUNTS ? FEED_STEP_COUNTS : FEED_STEP;
	while (k->fed < to) {
		size_t end = to - k->fed > step ? k->fed + step : to;
		struct csd_bytes b = chunk_span(c, k, k->fed, end);
		if (cdec_feed(&k->dec, &b) != 0) {
			k->broken = 1;
			return 0;
		}
		k->fed = end;
		if (!take(c, k))
			return 0;
	}
	return 1;
}

/* A chunk alone, from a reset decoder, its state saved at its first sync
 * points (not at its start: the cut itself is one). */
static void decode_chunk(struct chunks *c, struct chunk *k)
{
	if (cdec_reset(&k->dec) != 0) {
		k->broken = 1;
		return;
	}
	if (c->keep == KEEP_TEXT) {
		if (!k->text)
			k->text = malloc(KEEP_BYTES + KEEP_SLACK);
		k->out = k->text ? fmemopen(k->text, KEEP_BYTES + KEEP_SLACK, "w") : NULL;
		if (!k->out) {
			k->broken = 1;
			return;
		}
		/* The stream is this thread's alone: held once, not locked
		 * per call (with other threads running, each call locks). */
		flockfile(k->out);
	}
	size_t sync[SAVES + 1], nsync = 0;
	if (csd_sync_scan(k->bytes, k->len, 0, sync, SAVES + 1, &nsync) < 0)
		nsync = 0;
	for (size_t j = 0; j < nsync && k->nsave < SAVES; j++) {
		if (sync[j] == 0)
			continue;
		if (!chunk_feed(c, k, sync[j]))
			goto done;
		const int rc = k->dec.flow  ? csd_flow_state_save(k->dec.flow, &k->saved[k->nsave])
			       : k->dec.etm3 ? csd_etm3_pkt_state_save(k->dec.etm3, &k->psaved[k->nsave])
					     : csd_ptm_pkt_state_save(k->dec.ptm, &k->psaved[k->nsave]);
		if (rc == 0) {
			k->at[k->nsave] = sync[j];
			k->mark_pv[k->nsave] = view_of(&k->view);
			k->mark[k->nsave++] = *tally_now(k);
		}
	}
	chunk_feed(c, k, k->len);
done:
	if (k->out) {
		if (fflush(k->out) != 0)
			k->broken = 1;
		funlockfile(k->out);
	}
}

/* Decode the next queued chunk (mu held; released while decoding).
 * 0 if none was queued. */
static int run_one(struct chunks *c)
{
	if (!c->queued)
		return 0;
	struct chunk *k = &c->ring[c->next_task];
	c->next_task = (c->next_task + 1) % c->inflight_max;
	c->queued--;
	k->state = CK_RUNNING;
	pthread_mutex_unlock(&c->mu);
	decode_chunk(c, k);
	pthread_mutex_lock(&c->mu);
	k->state = CK_DONE;
	pthread_cond_broadcast(&c->cv_done);
	return 1;
}

/* The text listing's disassembler, per thread (made under mu: capstone's
 * loading is not for two threads at once). */
static int listing(const struct chunks *c)
{
	return !c->packets && c->keep == KEEP_TEXT && c->ctx->format == FMT_TEXT;
}

static void *worker_main(void *arg)
{
	struct chunks *c = arg;
	pthread_mutex_lock(&c->mu);
	if (listing(c))
		print_text_thread_begin();
	while (!c->stop) {
		if (!run_one(c))
			pthread_cond_wait(&c->cv_work, &c->mu);
	}
	if (listing(c))
		print_text_thread_end();
	pthread_mutex_unlock(&c->mu);
	return NULL;
}

/* A decoder for a chunk: from the pool, or a new one (made here, on the
 * calling thread: csd_image_new's rule for a shared image). */
static struct cdec pool_get(struct chunks *c)
{
	if (c->npool)
		return c->pool[--c->npool];
	struct cdec d = cdec_new(c);
	if (!cdec_none(&d))
		c->made++;
	return d;
}

static void pool_put(struct chunks *c, const struct cdec *d)
{
	c->pool[c->npool++] = *d;  /* room for every decoder made (chunks_new) */
}

/* k done with; the slot keeps its buffers for the next chunk. */
static void chunk_clear(struct chunk *k)
{
	for (size_t j = 0; j < k->nsave; j++) {
		csd_flow_state_free(k->saved[j]);
		csd_pkt_state_free(k->psaved[j]);
	}
	if (k->out)
		fclose(k->out);
	struct kept *rec = k->rec;
	size_t cap = k->cap;
	char *text = k->text;
	uint8_t *bytes = k->bytes;
	uint64_t *offs = k->offs;
	memset(k, 0, sizeof(*k));
	k->rec = rec;
	k->cap = cap;
	k->text = text;
	k->bytes = bytes;
	k->offs = offs;
}

/* Hand on what k kept from point m on. */
static void hand_on(struct chunks *c, struct chunk *k, const struct tally *m)
{
	struct source_slot *s = c->s;
	size_t at = m->ntext;
	for (size_t i = m->nrec; i < k->t.nrec; i++) {
		const struct kept *e = &k->rec[i];
		if (e->text_at > at && fwrite(k->text + at, 1, e->text_at - at, c->ctx->out) != e->text_at - at)
			cli_check_output(c->ctx);
		at = e->text_at > at ? e->text_at : at;
		if (c->packets) {
			cli_take_packet(c->ctx, s, &e->u.p);
		} else {
			if (c->perf_text)
				view_set(s, &e->pv);
			cli_take_record(c->ctx, s, &e->u.r);
		}
	}
	if (c->perf_text) {
		const struct perf_view v = view_of(&k->view);
		view_set(s, &v);
	}
	if (k->t.ntext > at && fwrite(k->text + at, 1, k->t.ntext - at, c->ctx->out) != k->t.ntext - at)
		cli_check_output(c->ctx);
	cli_check_output(c->ctx);
	const struct tally *t = tally_now(k);
	s->items += t->items - m->items;
	s->insns += t->insns - m->insns;
	s->errors += t->errors - m->errors;
}

/* Does the serial decoder, drained at k's saved point i, match the state
 * saved there (1)? */
static int state_join(struct chunks *c, struct chunk *k, size_t i)
{
	const struct cdec *d = &c->serial;
	return d->flow ? csd_flow_state_join(k->saved[i], d->flow)
	       : d->etm3 ? csd_etm3_pkt_state_join(k->psaved[i], d->etm3)
			 : csd_ptm_pkt_state_join(k->psaved[i], d->ptm);
}

/* After a join at k's point j: what k's decoder did not know given to it
 * and to what k kept from there on (csdec.h); 0 if it cannot take it. */
static int state_complete(struct chunk *k, size_t j)
{
	struct cdec *d = &k->dec;
	if (d->flow) {
		if (csd_flow_state_complete(k->saved[j], d->flow) != CSD_OK)
			return 0;
		for (size_t r = k->mark[j].nrec; r < k->t.nrec; r++)
			csd_flow_state_complete_records(k->saved[j], &k->rec[r].u.r, 1);
		return 1;
	}
	if ((d->etm3 ? csd_etm3_pkt_state_complete(k->psaved[j], d->etm3)
		     : csd_ptm_pkt_state_complete(k->psaved[j], d->ptm)) != CSD_OK)
		return 0;
	/* The packets kept are its timestamps, in order (the completion
	 * follows the bits they give). */
	for (size_t r = k->mark[j].nrec; r < k->t.nrec; r++)
		csd_pkt_state_complete_packets(k->psaved[j], &k->rec[r].u.p, 1);
	return 1;
}

/* Join the oldest chunk (decoded by now) to the serial decode. */
static void join_oldest(struct chunks *c)
{
	struct chunk *k = &c->ring[c->head];
	size_t pos = 0;
	int j = -1;
	for (size_t i = 0; i < k->nsave && j < 0 && !k->broken; i++) {
		serial_feed(c, k, pos, k->at[i]);
		pos = k->at[i];
		if (state_join(c, k, i) == 1) {
			/* (A perf.data source's text: printed with the same
			 * process, thread and thread line from here on.) */
			const struct perf_view v = view_of(c->s);
			if (!c->perf_text || view_equal(&v, &k->mark_pv[i]))
				j = (int)i;
		}
	}
	c->njoined++;


	/* Text goes out without the merge only while the merge would
	 * pass it straight on. */
	if (j >= 0 && c->keep == KEEP_TEXT && c->ctx->merge && !merge_direct(c->ctx->merge, c->s))
		j = -1;
	/* From the match on, the chunk's decode is the serial one, once given
	 * what it did not know: timestamp bits, return-stack entries
	 * (csdec.h); a decoder that cannot take them joins as no match. */
	if (j >= 0 && !state_complete(k, (size_t)j))
		j = -1;
	if (j >= 0) {
		hand_on(c, k, &k->mark[j]);
		c->nmatched++;
		pool_put(c, &c->serial);
		c->serial = k->dec;
		memset(&k->dec, 0, sizeof(k->dec));
		serial_feed(c, k, k->fed, k->len);
		/* Cuts further apart while chunks keep little, closer when
		 * they stopped early. */
		if (k->fed < k->len) {
			size_t fit = k->fed / 4 * 3;
			c->chunk_bytes = fit < CHUNK_MIN ? CHUNK_MIN : fit < c->chunk_bytes ? fit : c->chunk_bytes;
		}
		else if (k->fed == k->len && k->t.ntext + k->t.nrec * sizeof(struct kept) < KEEP_BYTES / 4 &&
			 c->chunk_bytes * 2 <= c->chunk_max)
			c->chunk_bytes *= 2;
	} else {
		serial_feed(c, k, pos, k->len);
		if (k->broken) {
			cdec_free(&k->dec);  /* it may not be usable again */
			c->made--;
		} else {
			pool_put(c, &k->dec);
		}
		memset(&k->dec, 0, sizeof(k->dec));
	}
	chunk_clear(k);
	c->head = (c->head + 1) % c->inflight_max;
	c->count--;
}

/* Join the oldest chunk, decoding queued chunks meanwhile if it is not done. */
static void join_next(struct chunks *c)
{
	struct chunk *k = &c->ring[c->head];
	pthread_mutex_lock(&c->mu);
	while (k->state != CK_DONE) {
		if (!run_one(c))
			pthread_cond_wait(&c->cv_done, &c->mu);
	}
	pthread_mutex_unlock(&c->mu);
	join_oldest(c);
}

/* acc[0 .. len) becomes a chunk, queued; the rest stays in acc. The
 * chunk takes the gathering buffers as they are, and the slot's buffers
 * from its last chunk (made the first time) gather the rest: only the
 * bytes past the cut are copied, never the chunk's (a copy would move,
 * from a formatted capture, nine bytes a byte of trace, on the calling
 * thread that every worker waits for). */
static int queue_chunk(struct chunks *c, size_t len)
{
	while (c->count >= c->inflight_max)
		join_next(c);
	size_t i = (c->head + c->count) % c->inflight_max;
	struct chunk *k = &c->ring[i];
	if (!k->bytes)
		k->bytes = malloc(c->cap);
	if (c->acc_off && !k->offs)
		k->offs = malloc(c->cap * sizeof(*k->offs));
	struct cdec d = pool_get(c);
	if (cdec_none(&d) || !k->bytes || (c->acc_off && !k->offs)) {
		if (!cdec_none(&d))
			pool_put(c, &d);
		return 0;
	}
	uint8_t *const bytes = c->acc;
	uint64_t *const offs = c->acc_off;
	memcpy(k->bytes, bytes + len, c->n - len);
	c->acc = k->bytes;
	if (offs) {
		memcpy(k->offs, offs + len, (c->n - len) * sizeof(*offs));
		c->acc_off = k->offs;
	}
	k->bytes = bytes;
	k->offs = offs;
	k->len = len;
	k->base = c->acc_base;
	k->dec = d;
	if (c->perf_text)
		k->view = *c->s;
	c->n -= len;
	c->acc_base += len;
	c->scanned = 0;
	pthread_mutex_lock(&c->mu);
	k->state = CK_QUEUED;
	c->count++;
	c->queued++;
	pthread_cond_signal(&c->cv_work);
	pthread_mutex_unlock(&c->mu);
	return 1;
}

/* The bytes gathered, serially (what cannot become a chunk). */
static void acc_serial(struct chunks *c)
{
	while (c->count)
		join_next(c);
	struct chunk k = { .bytes = c->acc, .offs = c->acc_off, .len = c->n, .base = c->acc_base };
	serial_feed(c, &k, 0, c->n);
	c->acc_base += c->n;
	c->n = 0;
	c->scanned = 0;
}

/* Cut what acc holds into chunks while it holds a cut past chunk_bytes. */
static void cut(struct chunks *c)
{
	for (;;) {
		if (c->n <= c->chunk_bytes)
			return;
		/* Resume the scan a sync sequence's length before where it
		 * stopped: a sequence may have been cut by the end. */
		size_t from = c->scanned > 16 ? c->scanned - 16 : 0;
		if (from < c->chunk_bytes)
			from = c->chunk_bytes;
		size_t at, found = 0;
		if (csd_sync_scan(c->acc + from, c->n - from, 0, &at, 1, &found) < 0 || !found) {
			c->scanned = c->n;
			return;
		}
		if (!queue_chunk(c, from + at)) {
			acc_serial(c);
			return;
		}
	}
}

static int start_workers(struct chunks *c);

void chunks_data(struct chunks *c, const struct csd_bytes *b)
{
	if (b->offsets && !c->acc_off && !c->deferred) {
		/* Offsets of its own where none were expected: serially,
		 * after the rest. */
		chunks_sync(c);
		serial_take(c, b);
		return;
	}
	if (c->deferred) {
		serial_take(c, b);
		c->seen += b->size;
		if (c->deferred == 1 && c->seen >= DEFER_BYTES && start_workers(c))
			c->deferred = 0;
		return;
	}
	size_t i = 0;
	while (i < b->size) {
		if (c->n == 0)
			c->acc_base = b->offsets ? b->offsets[i] : b->base + i;
		size_t take = b->size - i;
		if (take > c->cap - c->n)
			take = c->cap - c->n;
		memcpy(c->acc + c->n, b->data + i, take);
		if (c->acc_off && b->offsets) {
			memcpy(c->acc_off + c->n, b->offsets + i, take * sizeof(*c->acc_off));
		} else if (c->acc_off) {
			for (size_t j = 0; j < take; j++)
				c->acc_off[c->n + j] = b->base + i + j;
		}
		c->n += take;
		i += take;
		cut(c);
		if (c->n == c->cap)
			acc_serial(c);  /* no cut in a full buffer */
	}
}

/* c and all it holds, its threads ended (or never started). */
static void chunks_free(struct chunks *c)
{
	/* The slot keeps its own decoder (cli_slot_free frees it). */
	const struct cdec own = { .flow = c->s->flow, .etm3 = c->s->etm3, .ptm = c->s->ptm };
	if (!cdec_same(&c->serial, &own))
		cdec_free(&c->serial);
	for (size_t i = 0; c->pool && i < c->npool; i++)
		if (!cdec_same(&c->pool[i], &own))
			cdec_free(&c->pool[i]);
	for (size_t i = 0; i < MAX_INFLIGHT; i++) {
		free(c->ring[i].rec);
		free(c->ring[i].text);
		free(c->ring[i].bytes);
		free(c->ring[i].offs);
	}
	pthread_mutex_destroy(&c->mu);
	pthread_cond_destroy(&c->cv_work);
	pthread_cond_destroy(&c->cv_done);
	free(c->pool);
	free(c->th);
	free(c->acc);
	free(c->acc_off);
	free(c);
}

/* (CSDEC_TEST_CHUNK_BYTES given) the joins, for the tests. */
static void chunks_stats(const struct chunks *c)
{
	if (c->stats)
		fprintf(stderr, "csdec: chunks: %" PRIu64 " joined, %" PRIu64 " by a matching state\n", c->njoined,
			c->nmatched);
}

/* The worker threads ended (their chunks all joined before). */
static void stop_workers(struct chunks *c)
{
	pthread_mutex_lock(&c->mu);
	c->stop = 1;
	pthread_cond_broadcast(&c->cv_work);
	pthread_mutex_unlock(&c->mu);
	for (int i = 0; i < c->started; i++)
		pthread_join(c->th[i], NULL);
}

void chunks_sync(struct chunks *c)
{
	if (c->n)
		acc_serial(c);
	while (c->count)
		join_next(c);
}

void chunks_finish(struct chunks *c)
{
	if (c->n) {
		if (!queue_chunk(c, c->n))
			acc_serial(c);
	}
	while (c->count)
		join_next(c);
	cdec_finish(&c->serial);
	deliver(c, &c->serial);
	chunks_stats(c);
	stop_workers(c);
	chunks_free(c);
}

void chunks_end(struct chunks *c)
{
	chunks_sync(c);
	chunks_stats(c);
	stop_workers(c);
	/* The slot's decoder becomes the one that has decoded everything
	 * (chunks_free then frees its old one, now in the pool). */
	struct source_slot *s = c->s;
	s->flow = c->serial.flow;
	s->etm3 = c->serial.etm3;
	s->ptm = c->serial.ptm;
	chunks_free(c);
}

/* Chunks for slot s (its decoders and image as chunks_new() and
 * chunks_new_slot() say) or NULL; deferred: as chunks_new() says of a
 * formatted capture by default. */
static struct chunks *chunks_make(struct run_ctx *ctx, struct source_slot *s, int formatted, int deferred);

struct chunks *chunks_new(struct run_ctx *ctx, int64_t capture_size, int formatted)
{
	if (ctx->jobs < 2 || !ctx->chunk_ok)
		return NULL;
	/* The default takes chunks where they win: a capture of a few
	 * chunks at least, and records printed or counted by the workers
	 * (a command's handler runs on this thread for every record). */
	if (ctx->jobs_default && ((capture_size >= 0 && capture_size < JOBS_MIN_CAPTURE) || ctx->on_record))
		return NULL;
	struct source_slot *s = NULL;
	for (int id = 0; id < MAX_IDS; id++)
		if (ctx->slot[id]) {
			if (s)
				return NULL;
			s = ctx->slot[id];
		}
	if (!s)
		return NULL;
	return chunks_make(ctx, s, formatted, formatted && ctx->jobs_default);
}

struct chunks *chunks_new_slot(struct run_ctx *ctx, struct source_slot *s, int formatted)
{
	if (ctx->jobs < 2 || (ctx->jobs_default && ctx->on_record))
		return NULL;
	return chunks_make(ctx, s, formatted, 0);
}

size_t chunks_slot_after(void)
{
	const char *env = getenv("CSDEC_TEST_CHUNK_BYTES");
	if (env && atol(env) > 0)
		return (size_t)atol(env) * 2;
	/* As for one source of a formatted capture: a piece of a few MiB
	 * decodes at once with the next on the workers, which its chunks
	 * (decoders made anew, the pieces one after another) would lose. */
	return DEFER_BYTES;
}

static struct chunks *chunks_make(struct run_ctx *ctx, struct source_slot *s, int formatted, int deferred)
{
	/* A flow source with its image, or a packet listing's source. */
	if (s->flow ? !s->image : ctx->on_packet || (!s->etm3 && !s->ptm))
		return NULL;
	struct chunks *c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->ctx = ctx;
	c->s = s;
	c->fc.size = sizeof(c->fc);
	c->fc.trace = &s->cfg;
	c->fc.image = s->image;
	c->fc.flags = s->insn ? CSD_FLOW_INSN : 0;
	c->packets = !s->flow;
	c->keep = c->packets ? KEEP_TEXT : ctx->on_record ? KEEP_RECORDS : ctx->format == FMT_NONE ? KEEP_COUNTS : KEEP_TEXT;
	c->perf_text = s->perf && !c->packets && c->keep == KEEP_TEXT;
	c->serial = (struct cdec){ .flow = s->flow, .etm3 = s->etm3, .ptm = s->ptm };
	c->chunk_max = CHUNK_BYTES;
	c->chunk_bytes = c->keep == KEEP_COUNTS ? CHUNK_BYTES : CHUNK_FIRST;
	/* Test knob: a small distance between cuts gives small inputs many chunks. */
	const char *env = getenv("CSDEC_TEST_CHUNK_BYTES");
	if (env && atol(env) > 0) {
		c->chunk_bytes = c->chunk_max = (size_t)atol(env);
		c->stats = 1;
	}
	/* Enough in flight that every thread has one to decode while the
	 * oldest is joined. */
	c->inflight_max = (size_t)ctx->jobs * 2 + 1;
	if (c->inflight_max > MAX_INFLIGHT)
		c->inflight_max = MAX_INFLIGHT;
	/* Room for the bytes up to a cut at the largest distance. */
	c->cap = c->chunk_max * 4;
	c->acc = malloc(c->cap);
	if (formatted)
		c->acc_off = malloc(c->cap * sizeof(*c->acc_off));
	/* Decoders: one per chunk in flight, the serial one, and the slot's. */
	c->pool = calloc(c->inflight_max + 2, sizeof(*c->pool));
	c->nworkers = ctx->jobs - 1;
	c->th = calloc((size_t)c->nworkers, sizeof(*c->th));
	pthread_mutex_init(&c->mu, NULL);
	pthread_cond_init(&c->cv_work, NULL);
	pthread_cond_init(&c->cv_done, NULL);
	if (!c->acc || (formatted && !c->acc_off) || !c->pool || !c->th) {
		chunks_free(c);
		return NULL;
	}
	if (deferred) {
		c->deferred = 1;
		return c;
	}
	if (!start_workers(c)) {
		chunks_free(c);
		return NULL;
	}
	return c;
}

/* The worker threads; 0 if none could be started (then the caller decodes
 * serially). */
static int start_workers(struct chunks *c)
{
	for (; c->started < c->nworkers; c->started++)
		if (pthread_create(&c->th[c->started], NULL, worker_main, c) != 0)
			break;
	if (!c->started)
		c->deferred = 2;        /* (serial to the end) */
	return c->started > 0;
}
