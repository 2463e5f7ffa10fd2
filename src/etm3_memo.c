/*
 * etm3_memo.c - the ETMv3 segment memo's table (etm3_memo.h): making it,
 * growing it when the working set does not fit, and building an entry by
 * running the range loop on a scratch state.
 */
#include <stdlib.h>
#include <string.h>

#include "etm3_memo.h"
#include "zeroed.h"

/* A zeroed memo table of 2^log2 entries (zeroed.h); NULL if memory is
 * short. In 2 MiB pages where the system has them: lookups go anywhere in
 * it, and the TLB misses of small pages cost gen-etm3 1 - 3 %; a small
 * capture's first lookup then makes one page, zeroed by the system at
 * once, which measured cheaper than small pages faulted in here and
 * there. A grown table's pages are made at once: the trace has shown it
 * will fill them. (Both sizes, 2 and 4 MiB, are whole huge pages.) */
struct csdi_etm3_seg *csdi_etm3_memo_new(unsigned log2)
{
	return csdi_zeroed_new(((size_t)1 << log2) * sizeof(struct csdi_etm3_seg),
			       CSDI_ZEROED_HUGE | (log2 > SEG_SLOTS_LOG2 ? CSDI_ZEROED_POPULATE : 0));
}

void csdi_etm3_memo_free(struct csdi_etm3_seg *t, unsigned log2)
{
	csdi_zeroed_free(t, ((size_t)1 << log2) * sizeof(struct csdi_etm3_seg));
}

/* Twice the entries once at least 1024 lookups dropped an entry to make
 * room, and more than one in 128 did: the working set does not fit (the
 * 59 MB gen-etm3 input meets 11,978 distinct segments, TC2's sources a
 * few thousand, which fit). The old entries move to their slots in the
 * new table (making them again was 4 % of gen-etm3's instructions); where
 * both ways are taken, the one that comes later is dropped. */
void csdi_etm3_memo_grow(struct csdi_etm3_state *s)
{
	if (s->seg_misses >= 1024 && s->seg_log2 < SEG_SLOTS_LOG2_MAX && s->seg_misses > s->seg_lookups / 128) {
		struct csdi_etm3_seg *t = csdi_etm3_memo_new(s->seg_log2 + 1);
		if (t) {
			const size_t old_n = (size_t)1 << s->seg_log2;
			for (size_t k = 0; k < old_n; k++) {
				const struct csdi_etm3_seg *e = &s->segs[k];
				if (!e->gen)
					continue;
				struct csdi_etm3_seg *g = &t[seg_slot(e->key, e->bytes, s->seg_log2 + 1)];
				if (g->gen)
					g++;
				if (!g->gen)
					*g = *e;
			}
			csdi_etm3_memo_free(s->segs, s->seg_log2);
			s->segs = t;
			s->seg_log2++;
		}
	}
	s->seg_misses = s->seg_lookups = 0;
}

/* A range (a record, or the range left open) into *sr: 1, or 0 if a field
 * does not fit its width there (sr is filled all the same). */
static int seg_range_pack(struct csdi_seg_range *sr, uint64_t start, uint64_t last, uint64_t end, uint64_t count,
			  uint64_t cycles, uint64_t flags, uint8_t isa, uint8_t cond, uint64_t hdr)
{
	sr->start = (uint32_t)start;
	sr->last = (uint32_t)last;
	sr->end_delta = (uint8_t)(end - last);
	sr->count = (uint16_t)count;
	sr->cycles = (uint32_t)cycles;
	sr->flags = (uint16_t)flags;
	sr->isa = isa;
	sr->cond = cond;
	sr->hdr = (uint8_t)hdr;
	return cycles <= UINT32_MAX && hdr < SEG_LEN && count <= UINT16_MAX && flags <= UINT16_MAX &&
	       (uint32_t)(end - last) <= UINT8_MAX;
}

/*
 * Make memo entry g for the len headers h from the decoder's current
 * position: run the loop in build mode from a scratch state (nothing
 * waiting, a contiguous open range iff ext, queue offsets = header
 * indices), read off what it did, and put everything back. A header that
 * needs the general way ends the entry before it.
 */
void csdi_etm3_memo_build(csd_flow_decoder *dec, struct csdi_etm3_seg *g, const uint8_t *h, unsigned len,
			  const struct csd_atoms *tab, const uint8_t *ph, uint64_t key, const uint64_t *bytes, int ext,
			  csdi_etm3_memo_run run)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	const struct csdi_etm3_state s0 = *s;
	const struct csdi_open_range o0 = dec->open;
	const uint32_t addr0 = dec->addr;
	const uint8_t isa0 = dec->isa;
	const unsigned qlen0 = dec->qlen, qready0 = dec->qready;
	const int qmv0 = dec->qmark_valid;
	size_t done = len;

	memset(g, 0, sizeof(*g));
	g->key = key;
	memcpy(g->bytes, bytes, sizeof(g->bytes));
	g->gen = dec->img_gen;
	for (int pass = 0; pass < 3; pass++) {
		int aborted = 0;
		memset(&dec->open, 0, sizeof(dec->open));
		dec->open.active = ext;
		dec->open.start = dec->open.last = dec->open.end = addr0;
		dec->open.isa = isa0;
		s->pending_w = 0;
		s->prev_last = addr0;
		s->last_cycles = 0;
		s->cancelled = 0;
		s->blk = NULL;
		s->wait_branch = 0;
		dec->addr = addr0;
		dec->isa = isa0;
		dec->addr_valid = 1;
		dec->qlen = qlen0;
		dec->qready = qlen0;
		dec->qmark_valid = 0;
		done = run(dec, h, done, tab, ph, &aborted);
		if (aborted)
			continue;       /* again without the header it stopped in */
		if (dec->qlen - qlen0 > SEG_RECS) {
			/* Too many records: again up to the header where the
			 * first one that does not fit began (records close in
			 * order, so none before it closes later). */
			const struct csd_record *r = &dec->q[(dec->qhead + qlen0 + SEG_RECS) % CSDI_FLOW_QCAP];
			if (r->offset > 0 && r->offset < done) {
				done = (size_t)r->offset;
				continue;
			}
		}
		break;
	}
	unsigned nrec = dec->qlen - qlen0;
	int ok = done > 0 && nrec <= SEG_RECS && s->pending_w <= UINT32_MAX && s->last_cycles <= UINT32_MAX;
	for (unsigned k = 0; ok && k < nrec; k++) {
		const struct csd_record *r = &dec->q[(dec->qhead + qlen0 + k) % CSDI_FLOW_QCAP];
		ok = r->type == CSD_REC_RANGE && seg_range_pack(&g->rec[k], r->addr, r->last, r->end, r->count, r->cycles,
								  r->flags, r->isa, r->cond, r->offset);
	}
	if (dec->open.active) {
		const struct csdi_open_range *op = &dec->open;
		ok = seg_range_pack(&g->open, op->start, op->last, op->end, op->count, op->cycles, op->has_cycles != 0,
				    op->isa, 0, op->offset) && ok;
		g->open_active = 1;
	}
	unsigned natoms = 0, first = SEG_LEN, last = SEG_LEN;
	for (unsigned k = 0; k < done; k++) {
		if (tab[h[k]].num) {
			natoms += tab[h[k]].num;
			if (first == SEG_LEN)
				first = k;
			last = k;
		}
	}
	if (ok) {
		g->len = (uint8_t)done;
		g->nrec = (uint8_t)nrec;
		g->natoms = (uint8_t)(natoms < 2 ? natoms : 2);
		g->hold = (uint8_t)(dec->qready - qlen0);
		g->hold_late = last != first;
		g->last_atoms = done > 0 && tab[h[done - 1]].num;
		g->indirect = !dec->addr_valid;
		g->isa = dec->isa;
		g->addr = dec->addr;
		g->prev_last = s->prev_last;
		g->last_cycles = (uint32_t)s->last_cycles;
		g->pw = (uint32_t)s->pending_w;
	} else {
		g->len = 0;
	}
	/* Put everything back. */
	*s = s0;
	dec->open = o0;
	dec->addr = addr0;
	dec->isa = isa0;
	dec->addr_valid = 1;
	dec->qlen = qlen0;
	dec->qready = qready0;
	dec->qmark_valid = qmv0;
}
