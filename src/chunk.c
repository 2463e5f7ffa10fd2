/*
 * chunk.c - what chunked decoding of one source needs (csdec.h, "Chunked
 * decoding of one source"): the cut points and the semantic state of a
 * flow decoder, saved and compared. It sits beside flow.c at the top of
 * the flow layers and reaches the protocols through their operations
 * table only (`sem`, `ts_get`/`ts_set`, `rs_get`/`rs_fill`).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"

int csd_sync_scan(const uint8_t *data, size_t size, size_t min_gap, size_t *cuts, size_t cap, size_t *count)
{
	if (!count || (!data && size) || (!cuts && cap))
		return CSD_EINVAL;
	size_t n = 0, zeros = 0, next = min_gap;
	for (size_t i = 0; i < size && n < cap; i++) {
		if (data[i] == 0x00) {
			zeros++;
			continue;
		}
		if (data[i] == 0x80 && zeros >= 5) {
			size_t at = i - zeros;
			if (at >= next && at > 0) {
				cuts[n++] = at;
				next = at + (min_gap ? min_gap : 1);
			}
		}
		zeros = 0;
	}
	*count = n;
	return CSD_OK;
}

struct csd_flow_state {
	uint32_t protocol;
	int insn_mode;
	int bad;
	uint64_t records;
	/* The timestamp, compared in its known bits only (csdi_flow_ts). */
	struct csdi_flow_ts ts;
	/* Set by csd_flow_state_join: the serial decoder's timestamp there. */
	int joined;
	struct csdi_flow_ts serial;
	/* The return stack (with rs_get): the decoder's, its `uses` held
	 * (counted after the point by the decoder), and at the join the
	 * serial decoder's (its `uses` not kept). */
	struct csdi_flow_rs rs, serial_rs;
	unsigned n;
	uint64_t w[];           /* the semantic state's n words */
};

/* The decoder's whole semantic state into *s (zeroed by the caller). */
static void flow_sem(const csd_flow_decoder *dec, struct csdi_sem *s)
{
	/* Only a drained decoder between packets is at a point. */
	if (dec->qready || dec->pkt_active || dec->finished)
		s->bad = 1;
	dec->ops->sem(dec, s);
	/* The last packet taken: kind and place (csd_flow_last_packet; its
	 * other members may be rebuilt in brief by the fast paths). */
	csdi_sem_put(s, (uint64_t)dec->have_pkt);
	if (dec->have_pkt) {
		csdi_sem_put(s, dec->pkt->type);
		csdi_sem_put(s, dec->pkt->offset);
	}
	/* Where execution is and in what context: the next atoms are
	 * followed from here, and CONTEXT records report changes to it. */
	csdi_sem_put(s, (uint64_t)dec->synced);
	csdi_sem_put(s, (uint64_t)dec->addr_valid);
	if (dec->addr_valid)
		csdi_sem_put(s, dec->addr);
	csdi_sem_put(s, dec->isa);
	csdi_sem_put(s, dec->itstate);
	csdi_sem_put(s, (uint64_t)dec->ns | (uint64_t)dec->hyp << 1 | (uint64_t)dec->have_context_id << 2 |
				(uint64_t)dec->have_vmid << 3);
	csdi_sem_put(s, dec->context_id);
	csdi_sem_put(s, dec->vmid);
	csdi_sem_put(s, dec->wp_flags);
	/* The range and the lost stretch being gathered into one record. */
	const struct csdi_open_range *o = &dec->open;
	csdi_sem_put(s, (uint64_t)o->active);
	if (o->active) {
		csdi_sem_put(s, o->start);
		csdi_sem_put(s, o->last);
		csdi_sem_put(s, o->end);
		csdi_sem_put(s, o->count);
		csdi_sem_put(s, o->cycles);
		csdi_sem_put(s, (uint64_t)o->has_cycles | (uint64_t)o->isa << 8);
		csdi_sem_put(s, o->offset);
	}
	csdi_sem_put(s, dec->open_cond);
	const struct csdi_lost *l = &dec->lost;
	csdi_sem_put(s, (uint64_t)l->active);
	if (l->active) {
		csdi_sem_put(s, (uint64_t)l->addr_known);
		csdi_sem_put(s, l->addr);
		csdi_sem_put(s, l->count);
		csdi_sem_put(s, l->cycles);
		csdi_sem_put(s, (uint64_t)l->has_cycles | (uint64_t)l->isa << 8);
		csdi_sem_put(s, l->offset);
	}
	/* Records made but held back (an ETMv3 cancel may still take one
	 * back), and where the hold ends. */
	csdi_sem_put(s, dec->qlen);
	for (unsigned k = 0; k < dec->qlen; k++)
		csdi_sem_rec(s, &dec->q[(dec->qhead + k) % CSDI_FLOW_QCAP]);
	csdi_sem_put(s, (uint64_t)dec->qmark_valid);
	csdi_sem_put(s, dec->qmark);
	/* Left out: cfg (the same in decoders of one source), the block
	 * cache and walk cache (they only save work), delivered (it is the
	 * count each chunk has of its own). */
}

int csd_flow_state_save(const csd_flow_decoder *dec, csd_flow_state **out)
{
	if (!dec || !out)
		return CSD_EINVAL;
	/* (A decoder whose reset failed has no packet decoder to ask.) */
	if (dec->dead)
		return CSD_ENOMEM;
	if (dec->qready || dec->finished)
		return CSD_EINVAL;
	/* Counted first, then written into a state of that size. */
	struct csdi_sem s;
	csdi_sem_into(&s, NULL, 0);
	flow_sem(dec, &s);
	csd_flow_state *st = malloc(sizeof(*st) + (size_t)s.n * sizeof(st->w[0]));
	if (!st)
		return CSD_ENOMEM;
	unsigned n = s.n;
	csdi_sem_into(&s, st->w, n);
	flow_sem(dec, &s);
	st->protocol = dec->cfg.trace.protocol;
	st->insn_mode = dec->insn_mode;
	st->bad = s.bad;
	st->records = dec->delivered;
	dec->ops->ts_get(dec, &st->ts);
	st->joined = 0;
	memset(&st->serial, 0, sizeof(st->serial));
	memset(&st->rs, 0, sizeof(st->rs));
	memset(&st->serial_rs, 0, sizeof(st->serial_rs));
	if (dec->ops->rs_get) {
		dec->ops->rs_get(dec, &st->rs);
		csdi_rs_uses_ref(st->rs.uses);
	}
	st->n = n;
	*out = st;
	return CSD_OK;
}

/*
 * The return stack: the serial decoder's (s) top entries are the chunk's
 * known ones (c) and no more of them lie below than can be there (c's
 * room; none for a stack whose bottom is known). Exact while the chunk's
 * decoder pops only known entries after the point: until then both
 * decoders push and pop alike, the serial one's entries below staying
 * untouched but for those its pushes drop (csd_flow_state_complete()).
 * Once it has popped past them (counted in c->uses) where the serial one
 * had entries, its records from there on are not the serial decode's.
 */
static int rs_match(const struct csdi_flow_rs *c, const struct csdi_flow_rs *s)
{
	if (c->n > s->n || s->n - c->n > c->room)
		return 0;
	for (unsigned i = 0; i < c->n; i++)
		if (c->addr[i] != s->addr[i] || c->isa[i] != s->isa[i])
			return 0;
	return s->n == c->n || !c->uses || atomic_load_explicit(&c->uses->count, memory_order_relaxed) == c->used;
}

int csd_flow_state_match(const csd_flow_decoder *dec, const csd_flow_state *st)
{
	if (!dec || !st)
		return CSD_EINVAL;
	if (dec->dead)
		return CSD_ENOMEM;
	if (dec->qready || st->protocol != dec->cfg.trace.protocol || st->insn_mode != dec->insn_mode)
		return CSD_EINVAL;
	if (st->bad)
		return 0;
	/* Word by word against the saved ones, nothing stored. */
	struct csdi_sem s;
	csdi_sem_against(&s, st->w, st->n);
	flow_sem(dec, &s);
	if (!csdi_sem_equal(&s))
		return 0;
	if (dec->ops->rs_get) {
		struct csdi_flow_rs r;
		dec->ops->rs_get(dec, &r);
		if (!rs_match(&st->rs, &r))
			return 0;
	}
	/* The timestamp: every bit st's decoder knew is known here too and
	 * the same. The bits it did not know, above, are what its later
	 * timestamps lack; csd_flow_state_join() keeps them. */
	struct csdi_flow_ts t;
	dec->ops->ts_get(dec, &t);
	return st->ts.known <= t.known && (t.raw & csdi_low_bits(st->ts.known)) == (st->ts.raw & csdi_low_bits(st->ts.known));
}

int csd_flow_state_join(csd_flow_state *st, const csd_flow_decoder *serial)
{
	const int m = csd_flow_state_match(serial, st);
	if (m == 1) {
		serial->ops->ts_get(serial, &st->serial);
		if (serial->ops->rs_get) {
			serial->ops->rs_get(serial, &st->serial_rs);
			st->serial_rs.uses = NULL;
		}
		st->joined = 1;
	}
	return m;
}

/* A timestamp record of the chunk, made at or after st's point (so known
 * to at least as many bits as there), completed; other records as they
 * are. One made before the point and held back there is left too: the
 * states were equal, so it is the serial decoder's already. */
static void rec_fill(const csd_flow_state *st, struct csd_record *r)
{
	if (r->type != CSD_REC_TIMESTAMP || r->size < st->ts.known)
		return;
	const unsigned known = r->size < 64 ? (unsigned)r->size : 64;
	r->timestamp = csdi_ts_fill(r->timestamp, known, st->serial.raw, st->serial.gray);
	if (st->serial.known > known)
		r->size = st->serial.known;
}

int csd_flow_state_complete(const csd_flow_state *st, csd_flow_decoder *dec)
{
	if (!st || !dec)
		return CSD_EINVAL;
	if (dec->dead)
		return CSD_ENOMEM;
	if (!st->joined || st->protocol != dec->cfg.trace.protocol || st->insn_mode != dec->insn_mode)
		return CSD_EINVAL;
	struct csdi_flow_ts t;
	dec->ops->ts_get(dec, &t);
	if (t.known < st->ts.known)
		return CSD_EINVAL; /* not st's decoder at or after its point */
	/* The return stack: the serial decoder's entries below the chunk's
	 * known ones at the point, those not dropped since (rs_fill keeps
	 * at most the room left: pushes past the depth drop the oldest, as
	 * the serial decoder's did). None is lost to a pop, as the join
	 * required none past the known ones; one since the join refuses. */
	struct csdi_flow_rs r;
	if (dec->ops->rs_get) {
		dec->ops->rs_get(dec, &r);
		if (r.uses != st->rs.uses)
			return CSD_EINVAL; /* not st's decoder (reset since) */
		if (st->serial_rs.n > st->rs.n && r.used != st->rs.used)
			return CSD_EINVAL; /* popped past its known entries since */
	}
	/* The packet decoder's, for the timestamps to come. */
	const uint64_t raw = csdi_ts_merge(t.raw, t.known, st->serial.raw);
	dec->ops->ts_set(dec, raw, t.known > st->serial.known ? t.known : st->serial.known);
	/* Records made but not yet delivered, and the last packet taken
	 * (csd_flow_last_packet). */
	for (unsigned k = 0; k < dec->qlen; k++)
		rec_fill(st, &dec->q[(dec->qhead + k) % CSDI_FLOW_QCAP]);
	if (dec->have_pkt && dec->pkt->type == CSD_PKT_TIMESTAMP)
		dec->pkt->timestamp = csdi_ts_fill(dec->pkt->timestamp, t.known, st->serial.raw, st->serial.gray);
	if (dec->ops->rs_fill)
		dec->ops->rs_fill(dec, &st->serial_rs.addr[st->rs.n], &st->serial_rs.isa[st->rs.n],
				  st->serial_rs.n - st->rs.n);
	return CSD_OK;
}

int csd_flow_state_complete_records(const csd_flow_state *st, struct csd_record *recs, size_t n)
{
	if (!st || (!recs && n) || !st->joined)
		return CSD_EINVAL;
	for (size_t i = 0; i < n; i++)
		rec_fill(st, &recs[i]);
	return CSD_OK;
}

uint64_t csd_flow_state_records(const csd_flow_state *st)
{
	return st ? st->records : 0;
}

void csd_flow_state_free(csd_flow_state *st)
{
	if (st)
		csdi_rs_uses_unref(st->rs.uses);
	free(st);
}
