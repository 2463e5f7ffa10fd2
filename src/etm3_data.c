/*
 * etm3_data.c - ETMv3 data trace (IHI 0014Q section 7.4): each data packet
 * is one transfer of the most recently traced data instruction (7.4.2:
 * "Normal data packets correspond to the most recently-traced data
 * instruction"), which is the last load or store traced with an E atom.
 * Its transfers come in order, one packet per 32 bits (7.4: a doubleword
 * is two, low word first); the classifier (csdi_isa_mem) says how many,
 * their size and direction. A transfer without an address in its packet
 * is at the previous transfer's address plus its size (7.4.4, Tracing
 * LSMs: addresses after the first are given only where not sequential);
 * the packet decoder has already expanded compressed addresses against the
 * last data address (7.4.2). Out-of-order placeholders (7.4.3) make the
 * record at once, without its value; the Out-of-order data packet with the
 * same tag (1-3) fills the value in, and until then the records from the
 * placeholder's on are held back (a queue running short releases them,
 * and data that comes later then makes a record of its own). Store failed
 * (7.4.7) follows the STREX's data packet, no packet between, and takes
 * its record back.
 * Value not traced (7.4.5) skips a transfer. Data suppressed (7.4.6) is a
 * CSD_REC_DATA_LOST record and ends the instruction's transfers.
 *
 * Data-only mode (ETMCR[20], 7.4.10) traces no instructions: each transfer
 * packet is a record of its own, of one 32-bit transfer or less, flagged
 * CSD_RECF_DATA_NO_INSN, since neither its instruction nor its direction
 * nor its size is known. The address of a packet without one follows the
 * previous transfer's by a word (7.4.10: an address is output for every
 * transfer not sequential to the previous one; a doubleword's or an LSM's
 * transfers are words).
 */
#include <stdlib.h>

#include "etm3_data.h"

/* A placeholder whose data has not come after this many instructions and
 * records other than instruction records gives up holding its record back:
 * the same point in range and instruction decodes, and, since that bounds
 * the records held after it, well before the queue runs short (which
 * would release them at a point that depends on the mode, and with them
 * the instruction a cancel may take back). */
#define OOO_PATIENCE 96

struct ooo_slot {
	int used;
	int released;             /* its record left the queue before the data came */
	unsigned waited;          /* instructions and other records since the placeholder */
	unsigned scanned;         /* records after its own counted for `waited` (but data
				     records, which push_data counts) */
	unsigned slot;            /* queue ring position of its record */
	uint64_t offset;          /* the placeholder's capture offset (the record's) */
	uint32_t insn, opcode;
	uint8_t isa, size, store;
};

struct csdi_etm3_data {
	int addr_on, value_on;
	int data_only;            /* ETMCR[20]: no instruction is traced */
	/* The most recent data instruction and its next transfer. */
	int have_insn;
	uint32_t insn, opcode;
	uint8_t isa;
	struct csdi_mem mem;
	unsigned beat;            /* packets of it so far */
	int next_known;
	uint32_t next_addr;       /* where the next transfer is, if next_known */
	/* First half of a doubleword. */
	int lo_has_addr, lo_has_value;
	uint32_t lo_addr, lo_value;
	/* The last record made, for Store failed. */
	int last_valid;
	unsigned last_slot;
	uint64_t last_offset;
	struct ooo_slot ooo[4];   /* by tag 1-3 */
};

int csdi_etm3_data_new(csd_flow_decoder *dec)
{
	uint32_t cr = dec->cfg.trace.etmcr;
	dec->u.etm3.data = NULL;
	if (!((cr >> 2) & 3))
		return 0;
	struct csdi_etm3_data *d = calloc(1, sizeof(*d));
	if (!d)
		return CSD_ENOMEM;
	d->value_on = (cr >> 2) & 1;
	d->addr_on = (cr >> 3) & 1;
	d->data_only = (cr >> 20) & 1;
	dec->u.etm3.data = d;
	return 0;
}

void csdi_etm3_data_free(csd_flow_decoder *dec)
{
	free(dec->u.etm3.data);
	dec->u.etm3.data = NULL;
}

void csdi_etm3_data_reset(csd_flow_decoder *dec)
{
	struct csdi_etm3_data *d = dec->u.etm3.data;
	d->have_insn = 0;
	d->last_valid = 0;
	d->next_known = 0;
	for (unsigned t = 1; t <= 3; t++)
		d->ooo[t].used = 0;
}

void csdi_etm3_data_sem(const csd_flow_decoder *dec, struct csdi_sem *s)
{
	const struct csdi_etm3_data *d = dec->u.etm3.data;
	/* The data instruction whose transfers the next data packets are,
	 * and how far through them the trace is. */
	csdi_sem_put(s, (uint64_t)d->have_insn);
	if (d->have_insn) {
		csdi_sem_put(s, d->insn);
		csdi_sem_put(s, d->opcode);
		csdi_sem_put(s, d->isa);
		csdi_sem_put(s, (uint64_t)d->mem.dir | (uint64_t)d->mem.count << 8 | (uint64_t)d->mem.size << 16 |
					(uint64_t)d->mem.flags << 24);
		csdi_sem_put(s, d->beat);
		csdi_sem_put(s, (uint64_t)d->lo_has_addr | (uint64_t)d->lo_has_value << 1);
		csdi_sem_put(s, d->lo_addr);
		csdi_sem_put(s, d->lo_value);
	}
	csdi_sem_put(s, (uint64_t)d->next_known);
	if (d->next_known)
		csdi_sem_put(s, d->next_addr);
	/* The last record, which a Store failed packet takes back: its
	 * place counted from the queue's head (ring positions differ
	 * between decoders). */
	csdi_sem_put(s, (uint64_t)d->last_valid);
	if (d->last_valid) {
		csdi_sem_put(s, (d->last_slot + CSDI_FLOW_QCAP - dec->qhead) % CSDI_FLOW_QCAP);
		csdi_sem_put(s, d->last_offset);
	}
	/* Placeholders waiting for their data hold records back by ring
	 * position: such a state is not compared. */
	for (unsigned t = 1; t <= 3; t++)
		if (d->ooo[t].used)
			s->bad = 1;
	/* Left out: addr_on, value_on, data_only (the configuration). */
}

/* Time passes for the placeholders on wait. */
static void ooo_tick(struct csdi_etm3_data *d)
{
	for (unsigned t = 1; t <= 3; t++)
		if (d->ooo[t].used && !d->ooo[t].released && ++d->ooo[t].waited > OOO_PATIENCE)
			d->ooo[t].released = 1;
}

void csdi_etm3_data_insn(csd_flow_decoder *dec, uint32_t addr, uint8_t isa, int executed)
{
	struct csdi_etm3_data *d = dec->u.etm3.data;
	ooo_tick(d);
	if (!executed)
		return;     /* failed its condition: no transfers */
	struct csdi_insn in;
	struct csdi_mem m;
	if (csdi_flow_decode(dec, addr, isa, &in) < 0 || !csdi_isa_mem(&in, &m))
		return;
	d->have_insn = 1;
	d->insn = addr;
	d->opcode = in.opcode;
	d->isa = isa;
	d->mem = m;
	d->beat = 0;
	d->next_known = 0;
	d->last_valid = 0;
}

static void error(csd_flow_decoder *dec, uint64_t offset, const char *why)
{
	struct csd_record *r = csdi_flow_push(dec, CSD_REC_ERROR, offset);
	r->error = why;
}

/* Queue position (from the head) of the record at ring slot `slot` made at
 * `offset`, or -1 if it is no longer queued. */
static long queued_at(const csd_flow_decoder *dec, unsigned slot, uint64_t offset)
{
	unsigned rel = (slot + CSDI_FLOW_QCAP - dec->qhead) % CSDI_FLOW_QCAP;
	if (rel >= dec->qlen)
		return -1;
	const struct csd_record *r = &dec->q[slot];
	if (r->type != CSD_REC_DATA || r->offset != offset)
		return -1;
	return (long)rel;
}

static struct csd_record *push_data(csd_flow_decoder *dec, struct csdi_etm3_data *d, uint64_t offset,
				    uint32_t insn, uint32_t opcode, uint8_t isa, unsigned size, int store)
{
	ooo_tick(d);
	struct csd_record *r = csdi_flow_push(dec, CSD_REC_DATA, offset);
	r->last = insn;
	r->opcode = opcode;
	r->isa = isa;
	r->size = size;
	if (store)
		r->flags |= CSD_RECF_STORE;
	d->last_valid = 1;
	d->last_slot = (unsigned)(r - dec->q);
	d->last_offset = offset;
	return r;
}

static void placeholder(struct csdi_etm3_data *d, const struct csd_packet *p, uint8_t size, int store)
{
	struct ooo_slot *o = &d->ooo[p->tag & 3];
	o->used = 1;
	o->released = 0;
	o->waited = 0;
	o->scanned = 0;
	o->slot = d->last_slot;
	o->offset = p->offset;
	o->insn = d->insn;
	o->opcode = d->opcode;
	o->isa = d->isa;
	o->size = size;
	o->store = (uint8_t)store;
	d->last_valid = 0;
}

/* The address of a transfer packet's transfer: its own, or the one that
 * follows the previous transfer when that is known (0: not known). */
static int transfer_addr(const struct csdi_etm3_data *d, const struct csd_packet *p, uint32_t *addr)
{
	if (p->flags & CSD_PKTF_DATA_ADDR) {
		*addr = p->data_addr;
		return 1;
	}
	if (d->next_known) {
		*addr = d->next_addr;
		return 1;
	}
	return 0;
}

/* A transfer packet of a data-only trace: one record, its instruction
 * unknown. */
static void transfer_no_insn(csd_flow_decoder *dec, struct csdi_etm3_data *d, const struct csd_packet *p)
{
	uint32_t addr = 0;
	const int has_addr = transfer_addr(d, p, &addr);
	d->next_known = has_addr;
	d->next_addr = addr + 4;
	d->last_valid = 0;
	if (p->type == CSD_PKT_VALUE_NOT_TRACED)
		return;
	d->have_insn = 0;
	d->insn = 0;
	d->opcode = 0;
	d->isa = 0;
	struct csd_record *r = push_data(dec, d, p->offset, 0, 0, 0, 0, 0);
	r->flags |= CSD_RECF_DATA_NO_INSN;
	if (has_addr) {
		r->addr = addr;
		r->flags |= CSD_RECF_DATA_ADDR;
	}
	if (p->flags & CSD_PKTF_DATA_VALUE) {
		r->target = p->data_value;
		r->flags |= CSD_RECF_DATA_VALUE;
	}
	if (p->type == CSD_PKT_OOO_PLACEHOLDER)
		placeholder(d, p, 0, 0);
}

/* A transfer packet (Normal data, placeholder, Value not traced) of the
 * current data instruction. */
static void transfer(csd_flow_decoder *dec, struct csdi_etm3_data *d, const struct csd_packet *p)
{
	const unsigned per = d->mem.size == 8 ? 2 : 1;
	const unsigned total = (unsigned)d->mem.count * per;
	if (!d->have_insn || d->beat >= total) {
		d->last_valid = 0;
		error(dec, p->offset, "data packet with no load or store transfer left to match it");
		return;
	}
	const unsigned t = d->beat / per, half = d->beat % per;
	const unsigned beat_size = per == 2 ? 4 : d->mem.size;
	uint32_t addr = 0;
	const int has_addr = transfer_addr(d, p, &addr);
	d->next_known = has_addr;
	/* SWP: the store is at the load's address; else transfers follow on. */
	d->next_addr = d->mem.dir == CSDI_MEM_SWAP ? addr : addr + beat_size;
	d->beat++;
	const int store = d->mem.dir == CSDI_MEM_STORE || (d->mem.dir == CSDI_MEM_SWAP && t == 1);
	const int has_value = (p->flags & CSD_PKTF_DATA_VALUE) != 0;
	if (p->type == CSD_PKT_VALUE_NOT_TRACED) {
		d->last_valid = 0;
		d->lo_has_value = 0;
		d->lo_has_addr = 0;
		return;
	}
	if (per == 2 && half == 0) {
		d->lo_has_addr = has_addr;
		d->lo_addr = addr;
		d->lo_has_value = has_value;
		d->lo_value = p->data_value;
		d->last_valid = 0;
		return;
	}
	struct csd_record *r = push_data(dec, d, p->offset, d->insn, d->opcode, d->isa, d->mem.size, store);
	if (per == 2) {
		if (d->lo_has_addr) {
			r->addr = d->lo_addr;
			r->flags |= CSD_RECF_DATA_ADDR;
		}
		if (d->lo_has_value && has_value) {
			r->target = (uint64_t)p->data_value << 32 | d->lo_value;
			r->flags |= CSD_RECF_DATA_VALUE;
		}
	} else {
		if (has_addr) {
			r->addr = addr;
			r->flags |= CSD_RECF_DATA_ADDR;
		}
		if (has_value) {
			r->target = p->data_value;
			r->flags |= CSD_RECF_DATA_VALUE;
		}
	}
	if (p->type == CSD_PKT_OOO_PLACEHOLDER)
		placeholder(d, p, d->mem.size, store);
}

static void ooo_data(csd_flow_decoder *dec, struct csdi_etm3_data *d, const struct csd_packet *p)
{
	struct ooo_slot *o = &d->ooo[p->tag & 3];
	d->last_valid = 0;
	if (!o->used) {
		error(dec, p->offset, "out-of-order data packet with no placeholder for its tag");
		return;
	}
	o->used = 0;
	long k = o->released ? -1 : queued_at(dec, o->slot, o->offset);
	struct csd_record *r;
	if (k >= 0) {
		r = &dec->q[o->slot];
	} else {
		/* Its record has gone: the value comes as a record of its own. */
		r = push_data(dec, d, p->offset, o->insn, o->opcode, o->isa, o->size, o->store);
		if (d->data_only)
			r->flags |= CSD_RECF_DATA_NO_INSN;
	}
	r->target = p->data_value;
	r->flags |= CSD_RECF_DATA_VALUE;
	d->last_valid = 1;
	d->last_slot = (unsigned)(r - dec->q);
	d->last_offset = r->offset;
}

void csdi_etm3_data_other_packet(csd_flow_decoder *dec)
{
	dec->u.etm3.data->last_valid = 0;
}

/* The ring slot of the record at ring slot `slot` now that the record at
 * queue position k has been removed (dec->qlen is already one less);
 * *gone when it was that record. Slots of records no longer queued stay
 * as they are (queued_at finds them gone). */
static unsigned slot_after_remove(const csd_flow_decoder *dec, unsigned slot, unsigned k, int *gone)
{
	const unsigned rel = (slot + CSDI_FLOW_QCAP - dec->qhead) % CSDI_FLOW_QCAP;
	*gone = rel == k;
	return rel > k && rel <= dec->qlen ? (slot + CSDI_FLOW_QCAP - 1) % CSDI_FLOW_QCAP : slot;
}

void csdi_etm3_data_removed(csd_flow_decoder *dec, unsigned k)
{
	struct csdi_etm3_data *d = dec->u.etm3.data;
	int gone;
	if (d->last_valid) {
		d->last_slot = slot_after_remove(dec, d->last_slot, k, &gone);
		if (gone)
			d->last_valid = 0;
	}
	for (unsigned t = 1; t <= 3; t++) {
		struct ooo_slot *o = &d->ooo[t];
		if (!o->used || o->released)
			continue;
		const unsigned rel = (o->slot + CSDI_FLOW_QCAP - dec->qhead) % CSDI_FLOW_QCAP;
		if (k > rel && k <= rel + o->scanned)
			o->scanned--;
		o->slot = slot_after_remove(dec, o->slot, k, &gone);
		if (gone)
			o->released = 1;
	}
}

static void store_failed(csd_flow_decoder *dec, struct csdi_etm3_data *d, const struct csd_packet *p)
{
	long k = d->last_valid ? queued_at(dec, d->last_slot, d->last_offset) : -1;
	d->last_valid = 0;
	/* In a data-only trace the direction is not known: any transfer. */
	const uint32_t store_flags = CSD_RECF_STORE | CSD_RECF_DATA_NO_INSN;
	if (k < 0 || (unsigned)k < dec->qready || !(dec->q[d->last_slot].flags & store_flags)) {
		error(dec, p->offset, "store failed packet not right after a store's data packet");
		return;
	}
	csdi_flow_remove(dec, (unsigned)k);
	csdi_etm3_data_removed(dec, (unsigned)k);
}

void csdi_etm3_data_packet(csd_flow_decoder *dec, const struct csd_packet *p)
{
	struct csdi_etm3_data *d = dec->u.etm3.data;
	if (!dec->synced)
		return;
	/* Data-only: no P-header ends the hold of the records before a
	 * transfer (ETMv3 holds the newest until the next packet); a data
	 * packet does, except Store failed, which may take back the newest. */
	const int release = d->data_only && p->type != CSD_PKT_STORE_FAILED;
	if (release) {
		dec->qmark = dec->qlen;
		dec->qmark_valid = 1;
	}
	switch (p->type) {
	case CSD_PKT_NORMAL_DATA:
	case CSD_PKT_OOO_PLACEHOLDER:
	case CSD_PKT_VALUE_NOT_TRACED:
		if (d->data_only)
			transfer_no_insn(dec, d, p);
		else
			transfer(dec, d, p);
		break;
	case CSD_PKT_OOO_DATA:
		ooo_data(dec, d, p);
		break;
	case CSD_PKT_STORE_FAILED:
		store_failed(dec, d, p);
		break;
	case CSD_PKT_DATA_SUPPRESSED: {
		struct csd_record *r = csdi_flow_push(dec, CSD_REC_DATA_LOST, p->offset);
		r->last = d->have_insn ? d->insn : 0;
		r->isa = d->have_insn ? d->isa : dec->isa;
		d->have_insn = 0;
		d->last_valid = 0;
		break;
	}
	default:
		break;
	}
}

void csdi_etm3_data_hold(csd_flow_decoder *dec)
{
	struct csdi_etm3_data *d = dec->u.etm3.data;
	unsigned hold = dec->qlen;
	for (unsigned t = 1; t <= 3; t++) {
		struct ooo_slot *o = &d->ooo[t];
		if (!o->used || o->released)
			continue;
		long k = queued_at(dec, o->slot, o->offset);
		if (k < 0) {
			o->released = 1;
			continue;
		}
		/* The records made since the last look count as time too
		 * (instructions and data records have been counted as made). */
		for (unsigned pos = (unsigned)k + 1 + o->scanned; pos < dec->qlen && !o->released; pos++) {
			const uint32_t type = dec->q[(dec->qhead + pos) % CSDI_FLOW_QCAP].type;
			if (type != CSD_REC_INSN && type != CSD_REC_RANGE && type != CSD_REC_DATA &&
			    ++o->waited > OOO_PATIENCE)
				o->released = 1;
		}
		o->scanned = dec->qlen - 1 - (unsigned)k;
		if (o->released)
			continue;
		if ((unsigned)k < hold)
			hold = (unsigned)k;
	}
	if (dec->qready > hold)
		dec->qready = hold;
	if (dec->qmark_valid && dec->qmark > hold)
		dec->qmark = hold;
}
