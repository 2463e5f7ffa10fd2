/*
 * merge.c - interleave the records of several sources by timestamp.
 *
 * Each record is stamped with the last timestamp its source reported before
 * it (0 before the first: such records wait for nothing). A source counts
 * as reporting timestamps once it gave one, or from its first record when
 * its ETMCR enables them. A record can be
 * delivered once no other source can still produce an earlier stamp: a
 * source's later records are stamped at least with its current timestamp,
 * so a record is safe when its stamp is not above the current timestamp of
 * every other source that reports timestamps. Equal stamps keep capture
 * order. Sources without timestamps never hold others back.
 *
 * Memory is bounded: a source holds at most MERGE_QUEUE_MAX records. When a
 * full queue gets one more, the earliest held records of all sources are
 * delivered until that queue has given one: in time order among themselves,
 * but perhaps before records that a lagging source has yet to give. Every
 * record still comes out exactly once, and each source's in its order.
 * Before the first record of a source that goes out so, a note says that
 * its records may be out of time order. The next note for that source comes
 * only once the order is known again: every source's timestamp has reached
 * the highest stamp delivered (and its own highest). One note per source
 * and episode, however long the run. A timestamp that goes back, and a
 * first timestamp below records already delivered, are noted the same way.
 *
 * A record may come with its text, printed by the thread that decoded it;
 * the texts of a source's held records wait in a byte queue of their own,
 * in the source's order, which is the order they leave in.
 */
#include <stdlib.h>
#include <string.h>

#include "merge.h"

/* The rings' and texts' reallocator (a test may make it fail) and the
 * rings' first size (a fuzz harness with a small cap makes it smaller, so
 * that rings grow). They grow in place where they can: a small capture's
 * records are all held until its end, and a copy to a new block touches
 * each page of it once more. */
#ifndef MERGE_REALLOC
#define MERGE_REALLOC realloc
#endif
#ifndef MERGE_QUEUE_MIN
#define MERGE_QUEUE_MIN 256
#endif

static const char reason_full[] = "queue full: records delivered before the time order was known";
static const char reason_nomem[] = "out of memory: records delivered before the time order was known";
static const char reason_back[] = "timestamp went back";
static const char reason_late[] = "first timestamp earlier than records already delivered";

struct held {
	struct csd_record r;
	uint64_t stamp;
	uint64_t seq;
	size_t text_len;
	uint8_t has_text;
};

struct queue {
	struct source_slot *s;
	struct held *h;
	size_t head, len, cap;
	uint64_t last_ts;
	uint64_t top_ts;        /* the highest timestamp the source reported */
	uint8_t has_ts;         /* reports timestamps: set up to (ETMCR[28]), or seen one */
	uint8_t seen_ts;        /* has reported one */
	uint8_t noted;          /* told out of order, and the order not known again since */
	/* The held records' texts, oldest first: text[text_head, text_end). */
	char *text;
	size_t text_head, text_end, text_cap;
};

struct merge {
	merge_deliver_fn deliver;
	merge_note_fn note;
	struct queue q[MAX_IDS];
	struct queue *active[MAX_IDS];  /* the queues with a source, in order of first use */
	int nactive;
	size_t held;                    /* records held in all queues */
	/* The first queue in `active` order that reports timestamps with the
	 * lowest last_ts, and the first such among the others (laggard());
	 * recomputed after a timestamp or a new source. */
	struct queue *low[2];
	int low_valid;
	/* first()'s answer, kept until a front changes (a record delivered,
	 * or one held by an empty queue). */
	struct queue *first;
	int first_valid;
	/* With first: the lowest stamp at the front of any other queue
	 * (UINT64_MAX: none). While first's next record has a lower one, it
	 * is still first: records between two timestamps share a stamp, so
	 * a source's run of them goes out without a scan each. */
	uint64_t runner_stamp;
	int unsettled;                  /* some queue is noted */
	uint64_t seq;
	uint64_t delivered_ts;          /* the highest stamp delivered */
};

struct merge *merge_new(merge_deliver_fn deliver, merge_note_fn note)
{
	struct merge *m = calloc(1, sizeof(*m));
	if (m) {
		m->deliver = deliver;
		m->note = note;
	}
	return m;
}

void merge_free(struct merge *m)
{
	if (!m)
		return;
	for (int i = 0; i < MAX_IDS; i++) {
		free(m->q[i].h);
		free(m->q[i].text);
	}
	free(m);
}

static struct held *front(const struct queue *q)
{
	return &q->h[q->head];
}

/* The queue whose oldest record comes first, or NULL if all are empty;
 * the lowest front stamp of the others into m->runner_stamp. */
static struct queue *first_scan(struct merge *m)
{
	struct queue *best = NULL;
	uint64_t runner = UINT64_MAX;
	for (int i = 0; i < m->nactive; i++) {
		struct queue *q = m->active[i];
		if (!q->len)
			continue;
		if (!best || front(q)->stamp < front(best)->stamp ||
		    (front(q)->stamp == front(best)->stamp && front(q)->seq < front(best)->seq)) {
			if (best && front(best)->stamp < runner)
				runner = front(best)->stamp;
			best = q;
		} else if (front(q)->stamp < runner) {
			runner = front(q)->stamp;
		}
	}
	m->runner_stamp = runner;
	return best;
}

static struct queue *first(struct merge *m)
{
	if (!m->first_valid) {
		m->first = first_scan(m);
		m->first_valid = 1;
	}
	return m->first;
}

/* The first source in `active` order other than `skip` that reports
 * timestamps and is furthest behind, or NULL. */
static struct queue *lowest(const struct merge *m, const struct queue *skip)
{
	struct queue *low = NULL;
	for (int i = 0; i < m->nactive; i++) {
		struct queue *q = m->active[i];
		if (q != skip && q->has_ts && (!low || q->last_ts < low->last_ts))
			low = q;
	}
	return low;
}

/* The source other than `from` that reports timestamps and is furthest
 * behind, or NULL: from the two lowest, kept until a timestamp or a new
 * source changes them (rather than a scan of every source per record). */
static struct queue *laggard(struct merge *m, const struct queue *from)
{
	if (!m->low_valid) {
		m->low[0] = lowest(m, NULL);
		m->low[1] = m->low[0] ? lowest(m, m->low[0]) : NULL;
		m->low_valid = 1;
	}
	return m->low[0] == from ? m->low[1] : m->low[0];
}

/* No source that reports timestamps can still go below this stamp? */
static int safe(struct merge *m, const struct queue *from, uint64_t stamp)
{
	const struct queue *low = laggard(m, from);
	return !low || low->last_ts >= stamp;
}

/* Say once per episode that q's records may be out of time order. */
static void tell(struct merge *m, struct run_ctx *ctx, struct queue *q, const char *reason, const struct queue *waiting)
{
	if (q->noted)
		return;
	q->noted = 1;
	m->unsettled = 1;
	m->note(ctx, q->s, reason, waiting ? waiting->s : NULL);
}

/* Deliver r of queue q, stamped `stamp`. With a reason it is forced out:
 * noted when a lagging source could still give an earlier record. */
static void deliver(struct merge *m, struct run_ctx *ctx, struct queue *q, const struct csd_record *r, uint64_t stamp,
		    const char *text, size_t len, const char *forced)
{
	if (forced) {
		const struct queue *low = laggard(m, q);
		if (low && low->last_ts < stamp)
			tell(m, ctx, q, forced, low);
	}
	if (stamp > m->delivered_ts)
		m->delivered_ts = stamp;
	m->deliver(ctx, q->s, r, text, len);
}

static void pop_deliver(struct merge *m, struct run_ctx *ctx, struct queue *q, const char *forced)
{
	const struct held *h = front(q);
	/* The callback does not come back into the merge: h and its text
	 * stay put. */
	const char *text = !h->has_text ? NULL : q->text ? q->text + q->text_head : "";
	deliver(m, ctx, q, &h->r, h->stamp, text, h->text_len, forced);
	q->text_head += h->text_len;
	q->head = (q->head + 1) % q->cap;
	m->held--;
	if (--q->len == 0)
		q->text_head = q->text_end = 0;
	/* (The other queues' fronts have not moved.) */
	if (!(m->first_valid && m->first == q && q->len && front(q)->stamp < m->runner_stamp))
		m->first_valid = 0;
}

/* Room for len more bytes of text in q: the held texts moved to the
 * start, or a larger buffer. 0 if memory is short. */
static int text_room(struct queue *q, size_t len)
{
	if (q->text_cap - q->text_end >= len)
		return 1;
	const size_t used = q->text_end - q->text_head;
	if (!(q->text_head && q->text_cap - used >= len && used <= q->text_cap / 2)) {
		size_t ncap = q->text_cap ? 2 * q->text_cap : 4096;
		while (ncap - used < len)
			ncap *= 2;
		char *nt = MERGE_REALLOC(q->text, ncap);
		if (!nt)
			return 0;
		q->text = nt;
		q->text_cap = ncap;
	}
	if (q->text_head)
		memmove(q->text, q->text + q->text_head, used);
	q->text_head = 0;
	q->text_end = used;
	return 1;
}

/* The order is known again once every source's timestamp has reached the
 * highest stamp delivered and its own highest: no record still to come can
 * go before one delivered. */
static void settle(struct merge *m)
{
	for (int i = 0; i < m->nactive; i++) {
		const struct queue *q = m->active[i];
		if (q->has_ts && (q->last_ts < m->delivered_ts || q->last_ts < q->top_ts))
			return;
	}
	for (int i = 0; i < m->nactive; i++)
		m->active[i]->noted = 0;
	m->unsettled = 0;
}

static int queue_grow(struct queue *q)
{
	size_t ncap = q->cap ? q->cap * 2 : MERGE_QUEUE_MIN;
	if (ncap > MERGE_QUEUE_MAX)
		ncap = MERGE_QUEUE_MAX;
	struct held *nh = MERGE_REALLOC(q->h, ncap * sizeof(*nh));
	if (!nh)
		return 0;
	/* Where the records wrap round the old end, those from head to it go
	 * to the new end. */
	if (q->head + q->len > q->cap) {
		const size_t tail = q->cap - q->head;
		memmove(nh + ncap - tail, nh + q->head, tail * sizeof(*nh));
		q->head = ncap - tail;
	}
	q->h = nh;
	q->cap = ncap;
	return 1;
}

/* Room in q for one more record: a larger ring, or else the earliest held
 * records of all sources go out until q has given one (the order among
 * everything held stays, and only a lagging source can still get ahead of
 * them). 0 if q cannot hold a record at all. */
static int make_room(struct merge *m, struct run_ctx *ctx, struct queue *q)
{
	if (q->len < q->cap || (q->cap < MERGE_QUEUE_MAX && queue_grow(q)))
		return 1;
	if (!q->cap)
		return 0;
	const char *why = q->cap < MERGE_QUEUE_MAX ? reason_nomem : reason_full;
	while (q->len == q->cap)
		pop_deliver(m, ctx, first(m), why);
	return 1;
}

static int nothing_held(const struct merge *m)
{
	return m->held == 0;
}

void merge_push(struct merge *m, struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r)
{
	merge_push_text(m, ctx, s, r, NULL, 0);
}

void merge_push_text(struct merge *m, struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r,
		     const char *text, size_t len)
{
	struct queue *q = &m->q[s->id % MAX_IDS];
	if (!q->s) {
		m->active[m->nactive++] = q;
		m->low_valid = 0;
		/* A source set up to give timestamps (ETMCR[28], both
		 * protocols) holds the others back from its first record on:
		 * its first timestamp may come after theirs in the capture. */
		if (s->cfg.etmcr & (1u << 28))
			q->has_ts = 1;
	}
	q->s = s;
	if (r->type == CSD_REC_TIMESTAMP) {
		if (q->seen_ts ? r->timestamp < q->last_ts : r->timestamp < m->delivered_ts)
			tell(m, ctx, q, q->seen_ts ? reason_back : reason_late, NULL);
		q->last_ts = r->timestamp;
		if (!q->seen_ts || r->timestamp > q->top_ts)
			q->top_ts = r->timestamp;
		q->has_ts = q->seen_ts = 1;
		m->low_valid = 0;
		if (m->unsettled)
			settle(m);
	}
	if (nothing_held(m) && safe(m, q, q->last_ts)) {
		/* It would be held and delivered at once: delivered without
		 * the copies. */
		m->seq++;
		deliver(m, ctx, q, r, q->last_ts, text, len, NULL);
		return;
	}
	if (!make_room(m, ctx, q) || (text && !text_room(q, len))) {
		/* Out of memory: r goes out now, after q's records held
		 * and what comes before them and it. */
		while (q->len)
			pop_deliver(m, ctx, first(m), reason_nomem);
		for (struct queue *f; (f = first(m)) && front(f)->stamp <= q->last_ts;)
			pop_deliver(m, ctx, f, reason_nomem);
		deliver(m, ctx, q, r, q->last_ts, text, len, reason_nomem);
	} else {
		struct held *h = &q->h[(q->head + q->len) % q->cap];
		h->r = *r;
		h->stamp = q->last_ts;
		h->seq = m->seq++;
		h->has_text = text != NULL;
		h->text_len = text ? len : 0;
		if (len) {
			memcpy(q->text + q->text_end, text, len);
			q->text_end += len;
		}
		if (!q->len)
			m->first_valid = 0;
		q->len++;
		m->held++;
	}
	for (struct queue *f; (f = first(m)) && safe(m, f, front(f)->stamp);)
		pop_deliver(m, ctx, f, NULL);
}

int merge_sole(const struct merge *m, const struct source_slot *s)
{
	return m->nactive == 1 && m->active[0]->s == s && !m->active[0]->len;
}

int merge_direct(const struct merge *m, const struct source_slot *s)
{
	for (int i = 0; i < m->nactive; i++)
		if (m->active[i]->s != s || m->active[i]->len)
			return 0;
	return 1;
}

void merge_flush(struct merge *m, struct run_ctx *ctx)
{
	for (struct queue *f; (f = first(m));)
		pop_deliver(m, ctx, f, NULL);
	for (int i = 0; i < m->nactive; i++) {
		struct queue *q = m->active[i];
		q->s = NULL;
		q->has_ts = q->seen_ts = 0;
		q->noted = 0;
		q->last_ts = 0;
		q->top_ts = 0;
	}
	m->nactive = 0;
	m->low_valid = 0;
	m->first_valid = 0;
	m->unsettled = 0;
	m->delivered_ts = 0;
}
