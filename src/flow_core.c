/*
 * flow_core.c - what both protocols' flow decoders share, below them in
 * the layers: the record queue, the range gathered across packets, lost
 * stretches (atoms spent where the code is unknown) and the block cache.
 * It knows no protocol: etm3_flow.c and ptm_flow.c call it, flow.c
 * drives them through their operations table (flow.h).
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "walk_cache.h"


static struct csd_record *queue_slot(csd_flow_decoder *dec)
{
	if (dec->qlen >= CSDI_FLOW_QCAP)
		dec->qlen = CSDI_FLOW_QCAP - 1; /* cannot happen: producers check the room */
	struct csd_record *r = &dec->q[(dec->qhead + dec->qlen) % CSDI_FLOW_QCAP];
	dec->qlen++;
	csdi_rec_clear(r);
	r->id = dec->cfg.trace.trace_id;
	return r;
}

struct csd_record *csdi_flow_push_raw(csd_flow_decoder *dec, uint32_t type, uint64_t offset)
{
	struct csd_record *r = queue_slot(dec);
	r->type = type;
	r->offset = offset;
	return r;
}

static void emit_lost(csd_flow_decoder *dec)
{
	struct csdi_lost *l = &dec->lost;
	if (!l->active)
		return;
	l->active = 0;
	struct csd_record *r =
		csdi_flow_push_raw(dec, l->addr_known ? CSD_REC_NO_MEMORY : CSD_REC_ADDRESS_UNKNOWN, l->offset);
	r->addr = l->addr_known ? l->addr : 0;
	r->count = l->count;
	r->isa = l->isa;
	if (l->has_cycles) {
		r->cycles = l->cycles;
		r->flags |= CSD_RECF_CYCLES;
	}
}

void csdi_flow_remove(csd_flow_decoder *dec, unsigned k)
{
	for (unsigned j = k; j + 1 < dec->qlen; j++)
		dec->q[(dec->qhead + j) % CSDI_FLOW_QCAP] = dec->q[(dec->qhead + j + 1) % CSDI_FLOW_QCAP];
	dec->qlen--;
	if (k < dec->qmark)
		dec->qmark--;
	if (k < dec->qready)
		dec->qready--;
}

void csdi_flow_close_range(csd_flow_decoder *dec, uint8_t cond, uint32_t flags)
{
	struct csdi_open_range *o = &dec->open;
	if (!o->active)
		return;
	o->active = 0;
	struct csd_record *r = csdi_flow_push_raw(dec, CSD_REC_RANGE, o->offset);
	r->addr = o->start;
	r->last = o->last;
	r->end = o->end;
	r->count = o->count;
	r->isa = o->isa;
	r->cond = cond;
	r->flags = flags;
	if (o->has_cycles) {
		r->cycles = o->cycles;
		r->flags |= CSD_RECF_CYCLES;
	}
	if (dec->ns)
		r->flags |= CSD_RECF_NS;
	if (dec->hyp)
		r->flags |= CSD_RECF_HYP;
}

void csdi_flow_flush(csd_flow_decoder *dec)
{
	/* A range always precedes the lost stretch that follows it. */
	csdi_flow_close_range(dec, dec->open_cond, 0);
	emit_lost(dec);
}

struct csd_record *csdi_flow_push(csd_flow_decoder *dec, uint32_t type, uint64_t offset)
{
	csdi_flow_flush(dec);
	return csdi_flow_push_raw(dec, type, offset);
}

void csdi_flow_range_add(csd_flow_decoder *dec, uint32_t start, uint32_t last, uint32_t end, uint32_t count,
			 uint64_t offset)
{
	struct csdi_open_range *o = &dec->open;
	if (count == 0)
		return;
	if (dec->lost.active)
		emit_lost(dec);
	if (o->active && (o->end != start || o->isa != dec->isa))
		csdi_flow_close_range(dec, dec->open_cond, 0);
	if (!o->active) {
		memset(o, 0, sizeof(*o));
		o->active = 1;
		o->start = start;
		o->isa = dec->isa;
		o->offset = offset;
	}
	o->last = last;
	o->end = end;
	o->count += count;
}

void csdi_flow_lose(csd_flow_decoder *dec, int addr_known, uint32_t addr, uint32_t atoms, uint64_t cycles,
		    int has_cycles, uint64_t offset)
{
	struct csdi_lost *l = &dec->lost;
	csdi_flow_close_range(dec, dec->open_cond, 0);
	/* A known address means the trace gave one since the stretch in
	 * progress began: that one ends there (and names no address). */
	if (l->active && addr_known)
		emit_lost(dec);
	if (!l->active) {
		memset(l, 0, sizeof(*l));
		l->active = 1;
		l->addr_known = addr_known;
		l->addr = addr;
		l->isa = dec->isa;
		l->offset = offset;
	}
	l->count += atoms;
	if (has_cycles) {
		l->cycles += cycles;
		l->has_cycles = 1;
	}
}

uint32_t csdi_flow_branch_flags(const struct csdi_insn *insn, int taken)
{
	uint32_t f = 0;
	if (insn->cls != CSDI_INSN_NORMAL) {
		f |= CSD_RECF_BRANCH;
		if (taken)
			f |= CSD_RECF_TAKEN;
		if (insn->flags & CSDI_INSNF_LINK)
			f |= CSD_RECF_LINK;
	}
	return f;
}

void csdi_flow_context(csd_flow_decoder *dec, uint64_t offset, int force)
{
	(void)force;
	struct csd_record *r = csdi_flow_push(dec, CSD_REC_CONTEXT, offset);
	r->isa = dec->isa;
	r->context_id = dec->context_id;
	r->vmid = dec->vmid;
	if (dec->have_context_id)
		r->flags |= CSD_RECF_CONTEXT_ID;
	if (dec->have_vmid)
		r->flags |= CSD_RECF_VMID;
	if (dec->ns)
		r->flags |= CSD_RECF_NS;
	if (dec->hyp)
		r->flags |= CSD_RECF_HYP;
}

/* ------------------------------------------------------------------ */

int csdi_flow_decode(csd_flow_decoder *dec, uint32_t addr, uint8_t isa, struct csdi_insn *insn)
{
	const uint8_t *p;
	size_t n = csdi_image_fetch(dec->cfg.image, &dec->img_win, addr, &p);
	if (n == 0)
		return CSD_ENOMAP;
	int rc = csdi_isa_decode(addr, p, n, isa, insn);
	if (rc == CSD_ENOMAP && n < 4) {
		/* The instruction may continue in another section. */
		uint8_t buf[4];
		int got = csd_image_read(dec->cfg.image, addr, buf, sizeof(buf));
		if (got > 0)
			rc = csdi_isa_decode(addr, buf, (size_t)got, isa, insn);
	}
	return rc;
}

const struct csdi_block *csdi_flow_block_miss(csd_flow_decoder *dec, struct csdi_block *b, uint32_t addr,
					      uint8_t isa)
{
	b[1] = b[0];
	dec->cache_misses++;
	csdi_flow_block_fill(dec, b, addr, isa);
	return b;
}

void csdi_flow_block_fill(csd_flow_decoder *dec, struct csdi_block *b, uint32_t addr, uint8_t isa)
{
	uint32_t a = addr;
	memset(b, 0, sizeof(*b));
	b->start = addr;
	b->isa = isa;
	b->end = CSDI_BLOCK_LIMIT;
	/* Code that a PTM walk cache has learnt to be without waypoints
	 * needs no decoding (branch packets into it, in bulk, are hostile
	 * trace: a block for each). */
	if (dec->walk_cache &&
	    csdi_walk_cache_block(dec->walk_cache, dec->img_gen, addr, isa, CSDI_BLOCK_MAX, &b->next, &b->wide)) {
		b->count = CSDI_BLOCK_MAX;
		b->gen = dec->img_gen;
		return;
	}
	for (unsigned i = 0; i < CSDI_BLOCK_MAX; i++) {
		struct csdi_insn insn;
		int rc = csdi_flow_decode(dec, a, isa, &insn);
		if (rc < 0) {
			b->end = rc == CSD_EUNSUPPORTED ? CSDI_BLOCK_UNSUPPORTED : CSDI_BLOCK_NOMEM;
			break;
		}
		if (insn.size == 4)
			b->wide |= UINT64_C(1) << i;
		b->count++;
		if (insn.cls != CSDI_INSN_NORMAL || (insn.flags & dec->wp_flags)) {
			b->end = CSDI_BLOCK_WAYPOINT;
			b->wp = insn;
			b->wp_rflags[0] = csdi_flow_branch_flags(&insn, 0);
			b->wp_rflags[1] = csdi_flow_branch_flags(&insn, 1);
			b->wp_addr = a;
			a += insn.size;
			break;
		}
		a += insn.size;
	}
	b->next = a;
	b->gen = dec->img_gen;
}
