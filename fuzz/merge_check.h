/*
 * merge_check.h - the invariants of the time-ordered merge (tools/merge.c)
 * against a model of the sources as pushed; shared by tests/test_merge.c
 * and fuzz/fuzz_merge.c, which include tools/merge.c first and define
 * MC_CHECK(cond) (count and go on, or abort).
 *
 * Records are numbered in push order (the number travels in the record's
 * offset). Checked:
 *   - every record pushed comes out exactly once, from its own source, each
 *     source's in push order, with the text it was pushed with (records
 *     are pushed with a text of their own number, of varying length, or
 *     none, in turns);
 *   - no source has more than MERGE_QUEUE_MAX records held, seen from
 *     outside (pushed minus delivered) and in the queues themselves;
 *   - a record that comes out before the end of the capture while another
 *     source's timestamp (as pushed so far) is below its stamp has a note
 *     for its source before it;
 *   - two records out of time order have a note for one of their sources
 *     before them: the stamps of records from sources without a note so far
 *     never go down, and of equal stamps the one pushed first comes first;
 *   - notes name a known reason and, if any, a lagging source other than
 *     their own that reports timestamps (or is set up to and has given a
 *     record: such a source holds the others back from then on); a source gets at most one note per
 *     timestamp pushed and per capture (an episode ends only at a timestamp
 *     or with the capture).
 */
#ifndef CSD_FUZZ_MERGE_CHECK_H
#define CSD_FUZZ_MERGE_CHECK_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MC_NSRC_MAX 8

struct mc_pushed {
	uint8_t src;            /* index into the sources */
	uint8_t stamped;        /* the source had reported a timestamp */
	uint64_t stamp;
};

static struct {
	struct source_slot slot[MC_NSRC_MAX];
	int nsrc;
	/* the sources as pushed so far in this capture */
	uint64_t last_ts[MC_NSRC_MAX];
	int has_ts[MC_NSRC_MAX];            /* reported a timestamp */
	int cfg_ts[MC_NSRC_MAX];            /* set up to give them (ETMCR[28]) */
	int active[MC_NSRC_MAX];            /* pushed a record this capture */
	uint64_t pushed_n[MC_NSRC_MAX], delivered_n[MC_NSRC_MAX];
	uint64_t timestamps, captures;
	/* every record pushed, by number */
	struct mc_pushed *p;
	size_t n, cap;
	uint8_t *seen;
	/* the output */
	int64_t last_serial[MC_NSRC_MAX];
	int noted[MC_NSRC_MAX];             /* a note for the source came, this capture */
	unsigned notes[MC_NSRC_MAX];
	const char *last_reason[MC_NSRC_MAX];
	int last_waiting[MC_NSRC_MAX];      /* source index, -1 none */
	uint64_t max_unnoted;               /* highest stamp out from a source without a note */
	int64_t max_unnoted_serial;         /* the last such record's number, at that stamp */
	int flushing;
	unsigned unsafe_out;                /* records out while another source could go before them */
} mc;

/* Does source k hold back a record stamped `stamp`? */
static int mc_holds_back(int k, uint64_t stamp)
{
	return (mc.has_ts[k] || (mc.cfg_ts[k] && mc.active[k])) && mc.last_ts[k] < stamp;
}

/* Over all runs: notes by reason (full, no memory, back, late), records out
 * ahead of a lagging source. */
static unsigned long mc_notes_by_reason[4], mc_unsafe_total;

static int mc_src_index(const struct source_slot *s)
{
	for (int i = 0; i < mc.nsrc; i++)
		if (&mc.slot[i] == s)
			return i;
	return -1;
}

/* The text record number k is pushed with (NULL: none), in buf. */
static const char *mc_text(uint64_t k, char *buf, size_t *len)
{
	if (k % 3 == 0)
		return NULL;
	/* Lengths 0 to 40: the number, then as many '.' as its last digits say. */
	size_t n = (size_t)snprintf(buf, 24, "%llu", (unsigned long long)k);
	size_t pad = (size_t)(k % 41);
	if (pad < n)
		n = pad;
	for (size_t i = n; i < pad; i++)
		buf[i] = '.';
	*len = pad;
	return buf;
}

static void mc_on_record(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r, const char *text,
			 size_t len)
{
	(void)ctx;
	int i = mc_src_index(s);
	MC_CHECK(i >= 0);
	MC_CHECK(r->offset < mc.n);
	if (i < 0 || r->offset >= mc.n)
		return;
	char want_buf[48];
	size_t want_len = 0;
	const char *want = mc_text(r->offset, want_buf, &want_len);
	MC_CHECK((text == NULL) == (want == NULL));
	if (text && want) {
		MC_CHECK(len == want_len);
		MC_CHECK(len != want_len || memcmp(text, want, len) == 0);
	}
	const struct mc_pushed *p = &mc.p[r->offset];
	MC_CHECK(p->src == i);
	MC_CHECK(mc.seen[r->offset] == 0);
	mc.seen[r->offset]++;
	mc.delivered_n[i]++;
	MC_CHECK((int64_t)r->offset > mc.last_serial[i]);
	mc.last_serial[i] = (int64_t)r->offset;
	if (!p->stamped)
		return;
	int unsafe = 0;
	for (int k = 0; k < mc.nsrc; k++)
		if (k != i && mc_holds_back(k, p->stamp))
			unsafe = 1;
	if (unsafe && !mc.flushing) {
		mc.unsafe_out++;
		mc_unsafe_total++;
		MC_CHECK(mc.noted[i]);
	}
	if (!mc.noted[i]) {
		MC_CHECK(p->stamp >= mc.max_unnoted);
		/* Equal stamps keep the order they were pushed in. */
		MC_CHECK(p->stamp > mc.max_unnoted || (int64_t)r->offset > mc.max_unnoted_serial);
		mc.max_unnoted = p->stamp;
		mc.max_unnoted_serial = (int64_t)r->offset;
	}
}

static void mc_on_note(struct run_ctx *ctx, struct source_slot *s, const char *reason, struct source_slot *waiting)
{
	(void)ctx;
	int i = mc_src_index(s);
	int k = reason == reason_full ? 0 : reason == reason_nomem ? 1 : reason == reason_back ? 2 : 3;
	MC_CHECK(i >= 0);
	MC_CHECK(k < 3 || reason == reason_late);
	mc_notes_by_reason[k]++;
	if (i < 0)
		return;
	mc.noted[i] = 1;
	mc.notes[i]++;
	mc.last_reason[i] = reason;
	mc.last_waiting[i] = waiting ? mc_src_index(waiting) : -1;
	if (waiting) {
		int w = mc_src_index(waiting);
		MC_CHECK(w >= 0 && w != i);
		MC_CHECK(w >= 0 && (mc.has_ts[w] || (mc.cfg_ts[w] && mc.active[w])));
	}
}

/* A merger for sources with these (distinct) IDs; bit i of cfg_ts: source
 * i is set up to give timestamps. */
static struct merge *mc_begin_cfg(int nsrc, const uint8_t *ids, unsigned cfg_ts)
{
	free(mc.p);
	free(mc.seen);
	memset(&mc, 0, sizeof(mc));
	mc.max_unnoted_serial = -1;
	mc.nsrc = nsrc;
	for (int i = 0; i < nsrc; i++) {
		mc.slot[i].id = ids[i];
		mc.cfg_ts[i] = (cfg_ts >> i) & 1;
		mc.slot[i].cfg.etmcr = mc.cfg_ts[i] ? 1u << 28 : 0;
		mc.last_serial[i] = -1;
		mc.last_waiting[i] = -1;
	}
	struct merge *m = merge_new(mc_on_record, mc_on_note);
	MC_CHECK(m != NULL);
	return m;
}


/* Push one record of source i: a timestamp (ts != NULL) or else `type`. */
static void mc_push_type(struct merge *m, int i, const uint64_t *ts, uint32_t type)
{
	struct csd_record r;
	memset(&r, 0, sizeof(r));
	if (mc.n == mc.cap) {
		mc.cap = mc.cap ? 2 * mc.cap : 4096;
		mc.p = realloc(mc.p, mc.cap * sizeof(*mc.p));
		mc.seen = realloc(mc.seen, mc.cap);
		if (!mc.p || !mc.seen)
			abort();
	}
	if (ts) {
		r.type = CSD_REC_TIMESTAMP;
		r.timestamp = *ts;
		mc.last_ts[i] = *ts;
		mc.has_ts[i] = 1;
		mc.timestamps++;
	} else {
		r.type = type;
		r.count = 1;
	}
	mc.active[i] = 1;
	r.offset = mc.n;
	mc.p[mc.n] = (struct mc_pushed){ .src = (uint8_t)i, .stamped = (uint8_t)mc.has_ts[i], .stamp = mc.last_ts[i] };
	mc.seen[mc.n] = 0;
	mc.n++;
	mc.pushed_n[i]++;
	char text_buf[48];
	size_t text_len = 0;
	const char *text = mc_text(r.offset, text_buf, &text_len);
	if (text)
		merge_push_text(m, NULL, &mc.slot[i], &r, text, text_len);
	else
		merge_push(m, NULL, &mc.slot[i], &r);
	/* Only the source pushed can hold more than before. */
	const struct queue *q = &m->q[mc.slot[i].id % MAX_IDS];
	MC_CHECK(mc.pushed_n[i] - mc.delivered_n[i] <= MERGE_QUEUE_MAX);
	MC_CHECK(q->len <= q->cap && q->cap <= MERGE_QUEUE_MAX);
}

static void mc_push(struct merge *m, int i, const uint64_t *ts)
{
	mc_push_type(m, i, ts, CSD_REC_RANGE);
}

/* End of a capture: everything out once; the next capture starts afresh
 * (the merge forgets the sources' timestamps and notes). */
static void mc_flush(struct merge *m)
{
	mc.flushing = 1;
	merge_flush(m, NULL);
	mc.flushing = 0;
	size_t once = 0;
	for (size_t k = 0; k < mc.n; k++)
		once += mc.seen[k] == 1;
	MC_CHECK(once == mc.n);
	for (int i = 0; i < mc.nsrc; i++) {
		MC_CHECK(mc.delivered_n[i] == mc.pushed_n[i]);
		MC_CHECK(mc.notes[i] <= 1 + mc.captures + mc.timestamps);
		mc.has_ts[i] = 0;
		mc.active[i] = 0;
		mc.last_ts[i] = 0;
		mc.noted[i] = 0;
	}
	mc.max_unnoted = 0;
	mc.max_unnoted_serial = -1;
	mc.captures++;
}

static void mc_end(struct merge *m)
{
	mc_flush(m);
	merge_free(m);
	free(mc.p);
	free(mc.seen);
	mc.p = NULL;
	mc.seen = NULL;
	mc.n = mc.cap = 0;
}

#endif
