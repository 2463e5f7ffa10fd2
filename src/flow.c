/*
 * flow.c - the instruction-flow decoder's public face and the machinery both
 * protocols share: the record queue, ranges gathered across packets, lost
 * stretches (atoms spent where the code is unknown) and the block cache.
 *
 * Pull model: csd_flow_next() drains the queue; when it is empty it lets the
 * protocol state machine work on the current packet (which may take several
 * steps when one packet yields many instruction records) or pulls the next
 * packet from the packet decoder.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "etm3_internal.h"
#include "flow.h"
#include "ptm_internal.h"
#include "walk_cache.h"

static const char *const rec_names[CSD_REC_TYPE_COUNT] = {
	[CSD_REC_RANGE] = "range",
	[CSD_REC_INSN] = "insn",
	[CSD_REC_EXCEPTION] = "exception",
	[CSD_REC_EXCEPTION_RETURN] = "exception_return",
	[CSD_REC_TRACE_ON] = "trace_on",
	[CSD_REC_CONTEXT] = "context",
	[CSD_REC_TIMESTAMP] = "timestamp",
	[CSD_REC_CYCLE_COUNT] = "cycle_count",
	[CSD_REC_NO_MEMORY] = "no_memory",
	[CSD_REC_NOSYNC] = "nosync",
	[CSD_REC_ISA_UNSUPPORTED] = "isa_unsupported",
	[CSD_REC_ERROR] = "error",
	[CSD_REC_TRIGGER] = "trigger",
	[CSD_REC_TRUNCATED] = "truncated",
	[CSD_REC_ADDRESS_UNKNOWN] = "address_unknown",
	[CSD_REC_DATA] = "data",
	[CSD_REC_DATA_LOST] = "data_lost",
};

const char *csd_rec_type_name(int type)
{
	if (type <= 0 || type >= CSD_REC_TYPE_COUNT || !rec_names[type])
		return "unknown";
	return rec_names[type];
}

const char *csd_cond_name(int cond)
{
	switch (cond) {
	case CSD_COND_PASS: return "pass";
	case CSD_COND_FAIL: return "fail";
	}
	return "unknown";
}

/* Exception numbers as the exception information bytes of ETMv3 and PTM
 * branch packets give them on A and R profile cores (the same table in
 * IHI 0014 and IHI 0035). */
static const char *const ar_exceptions[16] = {
	"none", "Debug halt", "SMC", "Hyp", "Asynchronous Data Abort", "Jazelle/ThumbEE check",
	"reserved", "reserved", "Reset", "Undefined Instruction", "SVC", "Prefetch Abort",
	"Data Abort", "Generic", "IRQ", "FIQ",
};

/* ARMv7-M exceptions as ETMv3.4+ traces them (the traced value is not the
 * exception number: IRQ0 is 8, IRQ1-7 are 1-7, IRQ8 onwards from 24). */
static const char *const m_exceptions[24] = {
	"none", "IRQ1", "IRQ2", "IRQ3", "IRQ4", "IRQ5", "IRQ6", "IRQ7",
	"IRQ0", "UsageFault", "NMI", "SVC", "DebugMonitor", "MemManage", "PendSV", "SysTick",
	"reserved", "Reset", "reserved", "HardFault", "reserved", "BusFault", "reserved", "reserved",
};

const char *csd_exception_name(const struct csd_trace_config *cfg, unsigned number)
{
	if (cfg && cfg->core_profile == CSD_CORE_M) {
		if (number < 24)
			return m_exceptions[number];
		if (number < 512)
			return "IRQ"; /* IRQ(number - 16): the caller prints the number */
		return "reserved";
	}
	return number < 16 ? ar_exceptions[number] : "reserved";
}

/* ------------------------------------------------------------------ */

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
	size_t n = csdi_image_fetch(dec->cfg.image, addr, &p);
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
	if (dec->ptm && dec->u.ptm.walk_cache &&
	    csdi_walk_cache_block(dec->u.ptm.walk_cache, dec->img_gen, addr, isa, CSDI_BLOCK_MAX, &b->next, &b->wide)) {
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

/* ------------------------------------------------------------------ */

csd_flow_decoder *csd_flow_new(const struct csd_flow_config *cfg)
{
	if (!cfg || cfg->size < sizeof(size_t) + sizeof(struct csd_trace_config) + sizeof(void *))
		return NULL;
	struct csd_flow_config c;
	memset(&c, 0, sizeof(c));
	memcpy(&c, cfg, cfg->size < sizeof(c) ? cfg->size : sizeof(c));
	/* The embedded trace config has its own size: members past it read
	 * as zero, as for a trace config passed alone. */
	size_t tsize = c.trace.size;
	if (tsize < offsetof(struct csd_trace_config, protocol) + sizeof(c.trace.protocol) || tsize > sizeof(c.trace))
		return NULL;
	memset((unsigned char *)&c.trace + tsize, 0, sizeof(c.trace) - tsize);
	c.trace.size = sizeof(c.trace);
	if (!c.image || (c.trace.protocol != CSD_PROTO_ETM3 && c.trace.protocol != CSD_PROTO_PTM))
		return NULL;
	csd_flow_decoder *dec = calloc(1, sizeof(*dec));
	if (!dec)
		return NULL;
	dec->cfg = c;
	dec->pkt = &dec->pkts[0];
	dec->insn_mode = (c.flags & CSD_FLOW_INSN) != 0;
	/* Zeroed here, page by page, rather than by calloc's fresh pages
	 * on first touch: that was a page fault in the middle of the
	 * decoding loops for every 4 KiB of the cache (about 1,000 on TC2's
	 * flow decode, 5 % of its time). (malloc + memset would be made
	 * calloc again by the compiler; aligned_alloc is not.) */
	const size_t cache_size = CSDI_BLOCK_CACHE * sizeof(*dec->cache);
	_Static_assert(CSDI_BLOCK_CACHE * sizeof(struct csdi_block) % 64 == 0, "aligned_alloc takes whole lines");
	dec->cache = aligned_alloc(64, cache_size);
	if (dec->cache)
		memset(dec->cache, 0, cache_size);
	if (c.trace.protocol == CSD_PROTO_ETM3)
		dec->etm3 = csd_etm3_pkt_new(&dec->cfg.trace);
	else
		dec->ptm = csd_ptm_pkt_new(&dec->cfg.trace);
	if (!dec->cache || (!dec->etm3 && !dec->ptm)) {
		csd_flow_free(dec);
		return NULL;
	}
	if (dec->ptm)
		csdi_ptm_flow_init(dec);
	else
		csdi_etm3_flow_init(dec);
	return dec;
}

void csd_flow_free(csd_flow_decoder *dec)
{
	if (!dec)
		return;
	if (dec->etm3)
		csdi_etm3_flow_fini(dec);
	else if (dec->ptm)
		csdi_ptm_flow_fini(dec);
	csd_etm3_pkt_free(dec->etm3);
	csd_ptm_pkt_free(dec->ptm);
	free(dec->cache);
	free(dec);
}

int csd_flow_feed(csd_flow_decoder *dec, const struct csd_bytes *in)
{
	if (!dec || !in || dec->finished)
		return CSD_EINVAL;
	return dec->etm3 ? csd_etm3_pkt_feed(dec->etm3, in) : csd_ptm_pkt_feed(dec->ptm, in);
}

int csd_flow_finish(csd_flow_decoder *dec)
{
	if (!dec)
		return CSD_EINVAL;
	dec->finished = 1;
	return dec->etm3 ? csd_etm3_pkt_finish(dec->etm3) : csd_ptm_pkt_finish(dec->ptm);
}

int csd_flow_last_packet(const csd_flow_decoder *dec, struct csd_packet *pkt)
{
	if (!dec || !pkt)
		return CSD_EINVAL;
	if (!dec->have_pkt)
		return CSD_ENOENT;
	*pkt = *dec->pkt;
	return CSD_OK;
}

/* The buffer the next packet is decoded into: not dec->pkt, which stays
 * the last packet taken (csd_flow_last_packet) until there is a new one
 * (a packet decoder that finds none may leave its output half written). */
static inline struct csd_packet *spare_pkt(csd_flow_decoder *dec)
{
	return dec->pkt == &dec->pkts[0] ? &dec->pkts[1] : &dec->pkts[0];
}

/* Packet pk, just decoded into the spare buffer, is the one to process
 * now. Records before a packet that traces instructions or
 * resynchronises are final once it is processed (ETMv3: a later cancel
 * bit can only refer to its instructions); branch packets do not end
 * the hold, as several may follow one instruction, the last one with the
 * cancel bit. */
static inline void take_pkt(csd_flow_decoder *dec, struct csd_packet *pk)
{
	dec->pkt = pk;
	dec->have_pkt = 1;
	dec->pkt_active = 1;
	dec->qmark_valid = (pk->type == CSD_PKT_PHEADER && pk->atoms.num) || pk->type == CSD_PKT_ISYNC ||
			   pk->type == CSD_PKT_NOSYNC || pk->type == CSD_PKT_ERROR || pk->type == CSD_PKT_TRUNCATED;
	if (dec->qmark_valid)
		dec->qmark = dec->qlen;
}

/* One step of the active packet, and the records that makes ready: all
 * (PTM), or (ETMv3) those before the hold mark, the rest staying held
 * with the instruction before them unless the queue runs short. */
static inline void step_pkt(csd_flow_decoder *dec)
{
	if (dec->ptm) {
		csdi_ptm_flow_step(dec);
		dec->qready = dec->qlen;
		return;
	}
	csdi_etm3_flow_step(dec);
	if (dec->qmark_valid)
		dec->qready = dec->qmark;
	if (csdi_flow_room(dec) < CSDI_FLOW_QLOW)
		dec->qready = dec->qlen;
}

/*
 * ETMv3 fast path: most of the trace is P-headers, one byte each, which
 * change no packet-decoder state. Take the run of them at the front of the
 * input straight from the packet decoder and apply their atoms, without a
 * struct csd_packet per header. Same record hold rule as for packets (see
 * csd_flow_next). In range mode a branch address packet between runs is
 * taken too when it has no exception information (then it only says where
 * the next instruction is: do_branch's set_target, no record, and the hold
 * stays). Returns 0 if there was nothing to take.
 */
static int etm3_pheader_run(csd_flow_decoder *dec)
{
	const uint8_t *h, *is_phdr;
	const struct csd_atoms *tab;
	size_t n = csdi_etm3_pkt_pheaders(dec->etm3, &h, &tab, &is_phdr);
	if (!n)
		return 0;
	const uint64_t *offs;
	uint64_t base;
	csdi_etm3_pkt_offsets(dec->etm3, &offs, &base);
	size_t used = 0, last = 0, last_len = 0;
	struct csdi_etm3_branch br;
	int last_branch = 0;    /* 1: a branch, 2: a cycle count, 3: a timestamp packet */
	uint32_t last_cc = 0;
	uint64_t last_ts = 0;
	uint8_t last_ts_bits = 0;
	for (;;) {
		struct csdi_etm3_run_last rl;
		size_t i = csdi_etm3_flow_pheader_run(dec, h + used, n - used, tab, is_phdr,
						      offs ? offs + used : NULL, base + used, &rl);
		if (csdi_flow_room(dec) < CSDI_FLOW_QLOW)
			dec->qready = dec->qlen;
		if (i) {
			if (rl.branch_end == i) {
				/* It ended with a branch packet it took. */
				last = used + i - rl.len;
				last_len = rl.len;
				last_branch = 1;
				br = rl.br;
			} else if (rl.cc_end == i || rl.ts_end == i) {
				/* Or with a cycle count or timestamp packet. */
				last = used + i - rl.len;
				last_len = rl.len;
				last_branch = rl.cc_end == i ? 2 : 3;
				last_cc = rl.cc;
				last_ts = rl.ts;
				last_ts_bits = rl.ts_bits;
			} else {
				last = used + i - 1;
				last_len = 1;
				last_branch = 0;
			}
			used += i;
		}
		if (used == n || dec->insn_mode || !dec->synced || csdi_flow_room(dec) <= CSDI_FLOW_QPRODUCE ||
		    (!dec->addr_valid && !dec->u.etm3.wait_branch))
			break;
		if (h[used] == 0x08 || h[used] == 0x70) {
			/* An I-sync (trace turned on again after a filtered
			 * stretch, say): taken here as produce() would take it,
			 * into the spare buffer, so that P-headers after it stay
			 * in this call. */
			struct csd_packet *pk = spare_pkt(dec);
			const size_t slen = csdi_etm3_isync_packet(dec->etm3, h + used, n - used, used, pk);
			if (!slen)
				break;
			take_pkt(dec, pk);
			step_pkt(dec);
			last_len = 0;   /* dec->pkt holds it */
			used += slen;
			if (used == n || !is_phdr[h[used]])
				break;
			continue;
		}
		size_t blen = csdi_etm3_branch_packet(dec->etm3, h + used, n - used, &br);
		if (!blen)
			break;
		csdi_etm3_branch_commit(dec->etm3, &br);
		dec->addr = br.addr;
		dec->isa = br.isa;
		dec->addr_valid = br.isa != CSD_ISA_UNKNOWN;
		dec->u.etm3.wait_branch = 0;
		dec->qmark_valid = 0;
		last = used;
		last_len = blen;
		last_branch = 1;
		used += blen;
		if (used == n || !is_phdr[h[used]])
			break;
	}
	if (!used)
		return 0;
	if (!last_len) {
		/* The last was an I-sync, in dec->pkt already. */
		csdi_etm3_pkt_skip(dec->etm3, used);
		return 1;
	}
	/* csd_flow_last_packet() reports the last header, branch, cycle count or
	 * timestamp packet taken. */
	if (last_branch == 1) {
		csdi_etm3_branch_fill(&br, dec->pkt);
	} else if (last_branch == 2) {
		csdi_pkt_clear(dec->pkt);
		dec->pkt->type = CSD_PKT_CYCLE_COUNT;
		dec->pkt->flags = CSD_PKTF_CYCLE_COUNT;
		dec->pkt->cycle_count = last_cc;
	} else if (last_branch == 3) {
		csdi_pkt_clear(dec->pkt);
		dec->pkt->type = CSD_PKT_TIMESTAMP;
		dec->pkt->ts_bits = last_ts_bits;
		dec->pkt->timestamp = last_ts;
	} else {
		csdi_pkt_clear(dec->pkt);
		dec->pkt->type = CSD_PKT_PHEADER;
		dec->pkt->atoms = tab[h[last]];
	}
	dec->pkt->offset = csdi_etm3_pkt_offset(dec->etm3, last);
	dec->pkt->size = (uint32_t)last_len;
	memcpy(dec->pkt->raw, h + last, last_len);
	dec->have_pkt = 1;
	csdi_etm3_pkt_skip(dec->etm3, used);
	return 1;
}

/*
 * PTM fast path: atom packets (most of a PTM trace) taken from the packet
 * decoder's input and applied by csdi_ptm_flow_atom_run; between runs of
 * them, I-syncs and timestamps (trace turned on again, and the time of
 * it) are taken here as produce() would take them, so that the atoms
 * after one stay in this call. Returns 0 if nothing was taken.
 */
static int ptm_atom_run(csd_flow_decoder *dec)
{
	int took = 0;
	for (;;) {
		const uint8_t *p, *num, *en;
		size_t n = csdi_ptm_pkt_front(dec->ptm, &p, &num, &en);
		if (!n)
			return took;
		const uint64_t *offs;
		uint64_t base;
		csdi_ptm_pkt_offsets(dec->ptm, &offs, &base);
		size_t used = csdi_ptm_flow_atom_run(dec, p, n, num, en, offs, base);
		if (used) {
			csdi_ptm_pkt_skip(dec->ptm, used);
			dec->qready = dec->qlen;
			took = 1;
			/* (An atom packet handed over unfinished is the
			 * step's, in produce(), first.) */
			if (used == n || dec->pkt_active)
				return took;
		}
		const uint8_t h = p[used];
		if (dec->insn_mode || !dec->synced || csdi_flow_room(dec) <= CSDI_FLOW_QPRODUCE ||
		    (h != 0x08 && h != 0x42 && h != 0x46))
			return took;
		struct csd_packet *pk = spare_pkt(dec);
		if (csd_ptm_pkt_next(dec->ptm, pk) != CSD_OK)
			return took;
		take_pkt(dec, pk);
		step_pkt(dec);
		took = 1;
		if (dec->pkt_active)
			return took;    /* produce() goes on with it */
	}
}

/* Work until records are ready to deliver and the queue is well filled
 * (0; filling it saves calls per record), or until the input is used up
 * with nothing ready (CSD_EAGAIN / CSD_EEOS). */
static int produce(csd_flow_decoder *dec)
{
	/* Cached blocks are valid for this image generation only (the
	 * image may gain sections between calls, never during one). */
	dec->img_gen = csdi_image_generation(dec->cfg.image) + 1;
	for (;;) {
		if (dec->qready && csdi_flow_room(dec) <= CSDI_FLOW_QPRODUCE)
			return CSD_OK;
		if (dec->pkt_active) {
			step_pkt(dec);
			continue;
		}
		if (dec->etm3 ? etm3_pheader_run(dec) : ptm_atom_run(dec))
			continue;
		struct csd_packet *spare = spare_pkt(dec);
		int rc = dec->etm3 ? csd_etm3_pkt_next(dec->etm3, spare) : csd_ptm_pkt_next(dec->ptm, spare);
		if (rc == CSD_OK) {
			take_pkt(dec, spare);
			continue;
		}
		if (rc == CSD_EEOS) {
			/* End of trace: what was held back is final now. */
			if (dec->etm3)
				csdi_etm3_flow_end(dec);
			csdi_flow_flush(dec);
			dec->qready = dec->qlen;
		}
		return dec->qready ? CSD_OK : rc;
	}
}

/* n ready records leave the head of the queue. */
static inline void dequeue(csd_flow_decoder *dec, unsigned n)
{
	dec->qhead = (dec->qhead + n) % CSDI_FLOW_QCAP;
	dec->qlen -= n;
	dec->qready -= n;
	dec->qmark = dec->qmark > n ? dec->qmark - n : 0;
}

int csd_flow_next(csd_flow_decoder *dec, struct csd_record *rec)
{
	if (!dec || !rec)
		return CSD_EINVAL;
	if (!dec->qready) {
		int rc = produce(dec);
		if (rc < 0)
			return rc;
	}
	*rec = dec->q[dec->qhead];
	dequeue(dec, 1);
	return CSD_OK;
}

int csd_flow_next_batch(csd_flow_decoder *dec, const struct csd_record **recs)
{
	if (!dec || !recs)
		return CSD_EINVAL;
	if (!dec->qready) {
		int rc = produce(dec);
		if (rc < 0)
			return rc;
	}
	/* The ready records up to the end of the ring (the rest next time). */
	unsigned n = dec->qready;
	if (n > CSDI_FLOW_QCAP - dec->qhead)
		n = CSDI_FLOW_QCAP - dec->qhead;
	*recs = &dec->q[dec->qhead];
	dequeue(dec, n);
	return (int)n;
}
