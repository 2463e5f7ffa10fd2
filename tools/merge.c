/*
 * merge.c - interleave the records of several sources by timestamp.
 *
 * Each record is stamped with the last timestamp its source reported before
 * it. A record can be delivered once no other source can still produce an
 * earlier stamp: a source's later records are stamped at least with its
 * current timestamp, so a record is safe when its stamp is not above the
 * current timestamp of every other source that reports timestamps. Equal
 * stamps keep capture order. Sources without timestamps never hold others
 * back. Memory is bounded: a queue that reaches QUEUE_MAX delivers its
 * oldest record regardless (the order then degrades to capture order).
 */
#include <stdlib.h>
#include <string.h>

#include "merge.h"

#define QUEUE_MAX 16384

struct held {
	struct csd_record r;
	uint64_t stamp;
	uint64_t seq;
};

struct queue {
	struct source_slot *s;
	struct held *h;
	size_t head, len, cap;
	uint64_t last_ts;
	int has_ts;
};

struct merge {
	merge_deliver_fn deliver;
	struct queue q[MAX_IDS];
	struct queue *active[MAX_IDS];  /* the queues with a source, in order of first use */
	int nactive;
	uint64_t seq;
};

struct merge *merge_new(merge_deliver_fn deliver)
{
	struct merge *m = calloc(1, sizeof(*m));
	if (m)
		m->deliver = deliver;
	return m;
}

void merge_free(struct merge *m)
{
	if (!m)
		return;
	for (int i = 0; i < MAX_IDS; i++)
		free(m->q[i].h);
	free(m);
}

static struct held *front(const struct queue *q)
{
	return &q->h[q->head];
}

/* The queue whose oldest record comes first, or NULL if all are empty. */
static struct queue *first(struct merge *m)
{
	struct queue *best = NULL;
	for (int i = 0; i < m->nactive; i++) {
		struct queue *q = m->active[i];
		if (!q->len)
			continue;
		if (!best || front(q)->stamp < front(best)->stamp ||
		    (front(q)->stamp == front(best)->stamp && front(q)->seq < front(best)->seq))
			best = q;
	}
	return best;
}

static void pop_deliver(struct merge *m, struct run_ctx *ctx, struct queue *q)
{
	struct held h = *front(q);
	q->head = (q->head + 1) % q->cap;
	q->len--;
	m->deliver(ctx, q->s, &h.r);
}

/* No source that reports timestamps can still go below this stamp? */
static int safe(const struct merge *m, const struct queue *from, uint64_t stamp)
{
	for (int i = 0; i < m->nactive; i++) {
		const struct queue *q = m->active[i];
		if (q != from && q->has_ts && q->last_ts < stamp)
			return 0;
	}
	return 1;
}

void merge_push(struct merge *m, struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	struct queue *q = &m->q[s->id % MAX_IDS];
	if (!q->s)
		m->active[m->nactive++] = q;
	q->s = s;
	if (r->type == CSD_REC_TIMESTAMP) {
		q->last_ts = r->timestamp;
		q->has_ts = 1;
	}
	if (q->len == q->cap) {
		if (q->cap == QUEUE_MAX) {
			pop_deliver(m, ctx, first(m) ? first(m) : q);
		} else {
			size_t ncap = q->cap ? q->cap * 2 : 256;
			struct held *nh = malloc(ncap * sizeof(*nh));
			if (!nh) {
				m->deliver(ctx, s, r); /* out of memory: no ordering */
				return;
			}
			for (size_t i = 0; i < q->len; i++)
				nh[i] = q->h[(q->head + i) % q->cap];
			free(q->h);
			q->h = nh;
			q->head = 0;
			q->cap = ncap;
		}
	}
	struct held *h = &q->h[(q->head + q->len) % q->cap];
	h->r = *r;
	h->stamp = q->last_ts;
	h->seq = m->seq++;
	q->len++;
	for (struct queue *f; (f = first(m)) && safe(m, f, front(f)->stamp);)
		pop_deliver(m, ctx, f);
}

void merge_flush(struct merge *m, struct run_ctx *ctx)
{
	for (struct queue *f; (f = first(m));)
		pop_deliver(m, ctx, f);
	for (int i = 0; i < m->nactive; i++) {
		m->active[i]->s = NULL;
		m->active[i]->has_ts = 0;
		m->active[i]->last_ts = 0;
	}
	m->nactive = 0;
}
