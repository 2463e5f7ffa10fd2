/*
 * pkt_state.c - the semantic state of a packet decoder, saved and compared
 * for chunked packet decoding (csdec.h, "Chunked decoding of one source"),
 * and the completion of timestamps that a chunk's decoder knew only in
 * their low bits, which chunk.c uses for flow decoders too.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "etm3_internal.h"
#include "pkt_input.h"
#include "ptm_internal.h"

uint64_t csdi_low_bits(unsigned k)
{
	return k >= 64 ? ~(uint64_t)0 : ((uint64_t)1 << k) - 1;
}

/*
 * Timestamp ts, of whose code (the Gray code if gray) a decoder knew the
 * low `known` bits, with the bits above taken from serial_raw, the code
 * of the serial decoder's timestamp at the join. Exact for a timestamp
 * made at or after the point: packets restate low bits by replacing them
 * (no carries), so the bits above those the chunk's decoder had been
 * given when it made ts are those the serial decoder had at the cut, and
 * none of them has been given since (or they would be known). The Gray
 * code is turned back from binary with its inverse, exact for every
 * 64-bit value.
 */
uint64_t csdi_ts_fill(uint64_t ts, unsigned known, uint64_t serial_raw, int gray)
{
	uint64_t raw = csdi_ts_merge(gray ? ts ^ (ts >> 1) : ts, known, serial_raw);
	if (gray)
		for (unsigned sh = 1; sh < 64; sh <<= 1)
			raw ^= raw >> sh;
	return raw;
}

struct csd_pkt_state {
	uint32_t protocol;
	int bad;
	/* The timestamp's code and the low bits of it known (csdi_*_pkt_ts). */
	uint64_t ts_raw;
	unsigned ts_known;
	int gray;
	/* Set by a join: the serial decoder's timestamp code and known bits
	 * there; `seen` the known bits of the chunk's packets completed so
	 * far (csd_pkt_state_complete_packets, in order). */
	int joined;
	uint64_t serial_raw;
	unsigned serial_known;
	unsigned seen;
	unsigned n;
	uint64_t w[];           /* the semantic state's n words */
};

/* One decoder of either protocol, as the functions below see it. */
struct pkt_dec {
	uint32_t protocol;
	const csd_etm3_pkt_decoder *etm3;
	const csd_ptm_pkt_decoder *ptm;
};

static void dec_sem(const struct pkt_dec *d, struct csdi_sem *s)
{
	if (d->etm3)
		csdi_etm3_pkt_sem(d->etm3, s);
	else
		csdi_ptm_pkt_sem(d->ptm, s);
}

static uint64_t dec_ts(const struct pkt_dec *d, unsigned *known, int *gray)
{
	return d->etm3 ? csdi_etm3_pkt_ts(d->etm3, known, gray) : csdi_ptm_pkt_ts(d->ptm, known, gray);
}

static int state_save(const struct pkt_dec *d, const struct csdi_input *in, csd_pkt_state **out)
{
	if (!out || in->have_run || in->finished)
		return CSD_EINVAL;
	/* Counted first, then written into a state of that size. */
	struct csdi_sem s;
	csdi_sem_into(&s, NULL, 0);
	dec_sem(d, &s);
	const unsigned n = s.n;
	csd_pkt_state *st = malloc(sizeof(*st) + (size_t)n * sizeof(st->w[0]));
	if (!st)
		return CSD_ENOMEM;
	memset(st, 0, sizeof(*st));
	csdi_sem_into(&s, st->w, n);
	dec_sem(d, &s);
	st->protocol = d->protocol;
	st->bad = s.bad;
	st->ts_raw = dec_ts(d, &st->ts_known, &st->gray);
	st->seen = st->ts_known;
	st->n = n;
	*out = st;
	return CSD_OK;
}

/* 1 if d's state equals st's: every word, and every timestamp bit st's
 * decoder knew is known to d and the same (the bits above are what the
 * chunk's later timestamps lack; the join keeps d's). */
static int state_match(const struct pkt_dec *d, const struct csdi_input *in, const csd_pkt_state *st)
{
	if (st->bad || in->have_run)
		return 0;
	struct csdi_sem s;
	csdi_sem_against(&s, st->w, st->n);
	dec_sem(d, &s);
	if (!csdi_sem_equal(&s))
		return 0;
	unsigned known;
	int gray;
	const uint64_t raw = dec_ts(d, &known, &gray);
	return st->ts_known <= known && (raw & csdi_low_bits(st->ts_known)) == (st->ts_raw & csdi_low_bits(st->ts_known));
}

static int state_join(csd_pkt_state *st, const struct pkt_dec *serial, const struct csdi_input *in)
{
	if (!st || st->protocol != serial->protocol)
		return CSD_EINVAL;
	const int m = state_match(serial, in, st);
	if (m == 1) {
		int gray;
		st->serial_raw = dec_ts(serial, &st->serial_known, &gray);
		st->joined = 1;
	}
	return m;
}

int csd_etm3_pkt_state_save(const csd_etm3_pkt_decoder *dec, csd_pkt_state **out)
{
	if (!dec)
		return CSD_EINVAL;
	const struct pkt_dec d = { .protocol = CSD_PROTO_ETM3, .etm3 = dec };
	return state_save(&d, csdi_etm3_pkt_input(dec), out);
}

int csd_ptm_pkt_state_save(const csd_ptm_pkt_decoder *dec, csd_pkt_state **out)
{
	if (!dec)
		return CSD_EINVAL;
	const struct pkt_dec d = { .protocol = CSD_PROTO_PTM, .ptm = dec };
	return state_save(&d, csdi_ptm_pkt_input(dec), out);
}

int csd_etm3_pkt_state_join(csd_pkt_state *st, const csd_etm3_pkt_decoder *serial)
{
	if (!serial)
		return CSD_EINVAL;
	const struct pkt_dec d = { .protocol = CSD_PROTO_ETM3, .etm3 = serial };
	return state_join(st, &d, csdi_etm3_pkt_input(serial));
}

int csd_ptm_pkt_state_join(csd_pkt_state *st, const csd_ptm_pkt_decoder *serial)
{
	if (!serial)
		return CSD_EINVAL;
	const struct pkt_dec d = { .protocol = CSD_PROTO_PTM, .ptm = serial };
	return state_join(st, &d, csdi_ptm_pkt_input(serial));
}

/* The joined st's decoder (either protocol) given the serial decoder's
 * timestamp bits above those it knows. */
static int state_complete(const csd_pkt_state *st, csd_etm3_pkt_decoder *etm3, csd_ptm_pkt_decoder *ptm)
{
	const uint32_t protocol = etm3 ? CSD_PROTO_ETM3 : CSD_PROTO_PTM;
	if (!st || !st->joined || st->protocol != protocol)
		return CSD_EINVAL;
	const struct pkt_dec d = { .protocol = protocol, .etm3 = etm3, .ptm = ptm };
	unsigned known;
	int gray;
	uint64_t raw = dec_ts(&d, &known, &gray);
	if (known < st->ts_known)
		return CSD_EINVAL; /* not st's decoder at or after its point */
	raw = csdi_ts_merge(raw, known, st->serial_raw);
	if (st->serial_known > known)
		known = st->serial_known;
	if (etm3)
		csdi_etm3_pkt_set_ts(etm3, raw, known);
	else
		csdi_ptm_pkt_set_ts(ptm, raw, known);
	return CSD_OK;
}

int csd_etm3_pkt_state_complete(const csd_pkt_state *st, csd_etm3_pkt_decoder *dec)
{
	return dec ? state_complete(st, dec, NULL) : CSD_EINVAL;
}

int csd_ptm_pkt_state_complete(const csd_pkt_state *st, csd_ptm_pkt_decoder *dec)
{
	return dec ? state_complete(st, NULL, dec) : CSD_EINVAL;
}

int csd_pkt_state_complete_packets(csd_pkt_state *st, struct csd_packet *pkts, size_t n)
{
	if (!st || (!pkts && n) || !st->joined)
		return CSD_EINVAL;
	for (size_t i = 0; i < n; i++) {
		struct csd_packet *p = &pkts[i];
		if (p->type != CSD_PKT_TIMESTAMP)
			continue;
		/* The bits its decoder knew when it made p: those of the
		 * point, and those that timestamps since have given. */
		if (p->ts_bits > st->seen)
			st->seen = p->ts_bits;
		p->timestamp = csdi_ts_fill(p->timestamp, st->seen, st->serial_raw, st->gray);
	}
	return CSD_OK;
}

void csd_pkt_state_free(csd_pkt_state *st)
{
	free(st);
}
