/*
 * etm3_flow.c - ETMv3 decompression: packets + image -> instructions.
 *
 * ETMv3 gives an atom to every instruction (E: executed and passed its
 * condition, N: failed it), so the walk is instruction by instruction: a
 * taken direct branch continues at its encoded target, a taken indirect
 * branch at the address of the branch packet that follows it. A branch
 * packet with exception information is an exception; its cancel bit says
 * that the last traced instruction did not complete, which is why records
 * are only released once the next packet has been seen (csd_flow_next).
 *
 * Cycle-accurate mode: every W atom is a cycle. An instruction is charged
 * the W atoms since the previous instruction atom; in a format 1 P-header
 * each instruction is preceded by its own W, in the other formats the W
 * atoms come first (IHI 0014 tables 7.3). This is DS-5's attribution.
 */
#include <string.h>

#include "flow.h"

void csdi_etm3_flow_init(csd_flow_decoder *dec)
{
	dec->wp_flags = 0;
	dec->open_cond = CSD_COND_PASS;
	dec->u.etm3.data_only = (dec->cfg.trace.etmcr >> 20) & 1;
}

static int cycle_accurate(const csd_flow_decoder *dec)
{
	return (dec->cfg.trace.etmcr >> 12) & 1;
}

/* An atom spent where the instruction is unknown: it is the last traced
 * instruction now, and a cancel cannot take back what is not known. */
static void lose_atom(csd_flow_decoder *dec, int addr_known, uint32_t addr, uint64_t cycles, int has_cycles,
		      uint64_t offset)
{
	csdi_flow_lose(dec, addr_known, addr, 1, cycles, has_cycles, offset);
	dec->u.etm3.cancelled = 1;
}

static void lose_sync(csd_flow_decoder *dec)
{
	dec->u.etm3.cancelled = 1;
	dec->synced = 0;
	dec->addr_valid = 0;
	dec->u.etm3.wait_branch = 0;
	dec->u.etm3.pending_w = 0;
}

/* Instruction mode: decode the instruction for its opcode. */
static void insn_atom_record(csd_flow_decoder *dec, int e, uint64_t cycles, int has_cycles, uint64_t offset)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	struct csdi_insn insn;
	int rc = csdi_flow_decode(dec, dec->addr, dec->isa, &insn);
	if (rc < 0) {
		if (rc == CSD_EUNSUPPORTED) {
			struct csd_record *r = csdi_flow_push(dec, CSD_REC_ISA_UNSUPPORTED, offset);
			r->addr = dec->addr;
			r->isa = dec->isa;
		}
		lose_atom(dec, rc == CSD_ENOMAP, dec->addr, cycles, has_cycles, offset);
		dec->addr_valid = 0;
		return;
	}
	struct csd_record *r = csdi_flow_push(dec, CSD_REC_INSN, offset);
	s->cancelled = 0;
	r->addr = dec->addr;
	r->size = insn.size;
	r->opcode = insn.opcode;
	r->isa = dec->isa;
	r->cond = e ? CSD_COND_PASS : CSD_COND_FAIL;
	r->flags = csdi_flow_branch_flags(&insn, e);
	if (has_cycles) {
		r->cycles = cycles;
		r->flags |= CSD_RECF_CYCLES;
	}
	if (dec->ns)
		r->flags |= CSD_RECF_NS;
	if (dec->hyp)
		r->flags |= CSD_RECF_HYP;
	dec->addr += insn.size;
	if (e && insn.cls == CSDI_INSN_DIRECT) {
		dec->addr = insn.target;
		dec->isa = insn.target_isa;
	} else if (e && insn.cls == CSDI_INSN_INDIRECT) {
		/* The branch packet with the target follows. */
		dec->addr_valid = 0;
		s->wait_branch = 1;
	}
}

/*
 * One instruction atom. Range mode walks a cursor through the cached block
 * at the current address, so an atom costs a few operations rather than an
 * instruction decode; the open range grows in place.
 */
static inline void insn_atom(csd_flow_decoder *dec, int e, uint64_t cycles, int has_cycles, uint64_t offset)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	if (!dec->addr_valid) {
		lose_atom(dec, 0, 0, cycles, has_cycles, offset);
		return;
	}
	if (dec->insn_mode) {
		insn_atom_record(dec, e, cycles, has_cycles, offset);
		return;
	}
	const struct csdi_block *b = s->blk;
	unsigned idx = s->blk_idx;
	/* The cache slot may have been refilled for another block. */
	if (!b || s->cur != dec->addr || b->start != s->blk_start || b->isa != dec->isa || idx >= b->count) {
		b = csdi_flow_block(dec, dec->addr, dec->isa);
		idx = 0;
		s->blk = b;
		s->blk_start = dec->addr;
		if (b->count == 0) {
			if (b->end == CSDI_BLOCK_UNSUPPORTED) {
				struct csd_record *r = csdi_flow_push(dec, CSD_REC_ISA_UNSUPPORTED, offset);
				r->addr = dec->addr;
				r->isa = dec->isa;
			}
			lose_atom(dec, b->end == CSDI_BLOCK_NOMEM, dec->addr, cycles, has_cycles, offset);
			dec->addr_valid = 0;
			s->blk = NULL;
			return;
		}
	}
	uint32_t addr = dec->addr;
	uint32_t size = (b->isa == CSD_ISA_ARM || ((b->wide >> idx) & 1)) ? 4 : 2;
	s->cancelled = 0;
	s->last_cycles = has_cycles ? cycles : 0;
	struct csdi_open_range *o = &dec->open;
	if (o->active && o->end == addr && o->isa == dec->isa && !dec->lost.active) {
		s->prev_last = o->last;
		o->last = addr;
		o->end = addr + size;
		o->count++;
	} else {
		csdi_flow_range_add(dec, addr, addr, addr + size, 1, offset);
		s->prev_last = addr;
	}
	if (has_cycles) {
		o->cycles += cycles;
		o->has_cycles = 1;
	}
	if (idx + 1 < b->count || b->end != CSDI_BLOCK_WAYPOINT) {
		/* Not a branch: on to the next instruction. */
		if (!e)
			csdi_flow_close_range(dec, CSD_COND_FAIL, 0);
		dec->addr = addr + size;
		s->cur = dec->addr;
		s->blk_idx = idx + 1;
		return;
	}
	const struct csdi_insn *wp = &b->wp;
	csdi_flow_close_range(dec, e ? CSD_COND_PASS : CSD_COND_FAIL, csdi_flow_branch_flags(wp, e));
	s->blk = NULL;
	dec->addr = addr + size;
	if (e && wp->cls == CSDI_INSN_DIRECT) {
		dec->addr = wp->target;
		dec->isa = wp->target_isa;
	} else if (e && wp->cls == CSDI_INSN_INDIRECT) {
		/* The branch packet with the target follows. */
		dec->addr_valid = 0;
		s->wait_branch = 1;
	}
}

inline void csdi_etm3_flow_pheader(csd_flow_decoder *dec, const struct csd_atoms *a, uint64_t offset)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	int ca = cycle_accurate(dec);
	if (!dec->synced)
		return;
	if (a->num)
		s->await_gap = 0;
	if (ca && a->format != 1)
		s->pending_w += a->w;
	for (unsigned i = 0; i < a->num; i++) {
		if (ca && a->format == 1)
			s->pending_w++;
		insn_atom(dec, (a->en >> i) & 1, s->pending_w, ca, offset);
		s->pending_w = 0;
	}
}

/* Instruction mode, or anything else the fast loop below does not take:
 * header by header through csdi_etm3_flow_pheader. */
static size_t pheader_run_general(csd_flow_decoder *dec, const uint8_t *h, size_t n, const struct csd_atoms *tab,
				  const uint64_t *offs, uint64_t base)
{
	size_t i = 0;
	/* A header yields at most 16 instruction records and a few others. */
	for (; i < n && csdi_flow_room(dec) > CSDI_FLOW_QPRODUCE; i++) {
		const struct csd_atoms *a = &tab[h[i]];
		uint64_t off = offs ? offs[i] : base + i;
		/* Records before a header with atoms are final once it is
		 * applied (the hold rule of csd_flow_next). */
		if (a->num) {
			unsigned mark = dec->qlen;
			csdi_etm3_flow_pheader(dec, a, off);
			dec->qready = mark;
			dec->qmark_valid = 1;
		} else {
			dec->qmark_valid = 0;
			csdi_etm3_flow_pheader(dec, a, off);
		}
	}
	return i;
}

/* The open range as a record (what csdi_flow_close_range does, from the
 * copy the fast loop keeps in local variables). */
static inline __attribute__((always_inline)) void close_local(csd_flow_decoder *dec, struct csdi_open_range *o,
							       uint8_t cond, uint32_t flags)
{
	o->active = 0;
	struct csd_record *r = csdi_flow_slot(dec);
	r->type = CSD_REC_RANGE;
	r->offset = o->offset;
	r->addr = o->start;
	r->last = o->last;
	r->end = o->end;
	r->count = o->count;
	r->isa = o->isa;
	r->cond = cond;
	if (o->has_cycles) {
		r->cycles = o->cycles;
		flags |= CSD_RECF_CYCLES;
	}
	if (dec->ns)
		flags |= CSD_RECF_NS;
	if (dec->hyp)
		flags |= CSD_RECF_HYP;
	r->flags = flags;
}

/*
 * Range mode: the same as pheader_run_general, with the walk through the
 * code and the open range in local variables (kept in registers, where
 * fields of dec would chain every instruction to the store of the one
 * before). Per instruction atom this is a few operations; blocks are
 * looked up when the cursor leaves one. Anything out of the ordinary
 * (atoms while the address is unknown or the code unreadable, a lost
 * stretch pending) goes through insn_atom with the state written back.
 */
static size_t pheader_run_range(csd_flow_decoder *dec, const uint8_t *h, size_t n, const struct csd_atoms *tab,
				const uint64_t *offs, uint64_t base)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	const int ca = cycle_accurate(dec);
	uint64_t pw = s->pending_w;
	uint32_t addr = dec->addr;
	/* Copies of decoder fields that only the general way (insn_atom) and
	 * an indirect branch change: records are written through uint8_t
	 * fields, which may alias anything, so fields of dec would be
	 * reloaded after every record. */
	uint8_t isa = dec->isa;
	int synced = dec->synced;
	int walkable = dec->addr_valid && !dec->lost.active;
	/* The cursor: instruction idx of block b is at addr (b NULL: look
	 * the block up at the next atom); the block's fields copied. */
	const struct csdi_block *b = s->blk;
	unsigned idx = s->blk_idx;
	unsigned bcount = 0;
	uint64_t bwide = 0;
	int bwp = 0;
	struct csdi_open_range o = dec->open;
	uint32_t prev_last = s->prev_last;
	uint64_t last_cycles = s->last_cycles;
	int cancelled = s->cancelled;
	size_t i = 0;

	if (b && (!walkable || s->cur != addr || b->start != s->blk_start || b->isa != isa || idx >= b->count))
		b = NULL;
	if (b) {
		bcount = b->count;
		bwide = isa == CSD_ISA_ARM ? ~(uint64_t)0 : b->wide;
		bwp = b->end == CSDI_BLOCK_WAYPOINT;
	}
	for (; i < n && csdi_flow_room(dec) > CSDI_FLOW_QPRODUCE; i++) {
		const struct csd_atoms *a = &tab[h[i]];
		if (!a->num) {
			/* W atoms only (cycle-accurate): they wait for the
			 * next instruction. A run of them makes no records,
			 * so the room checked before the first still holds. */
			dec->qmark_valid = 0;
			if (!synced || !ca)
				continue;
			for (;;) {
				if (a->format != 1)
					pw += a->w;
				if (++i == n)
					goto done;
				a = &tab[h[i]];
				if (a->num)
					break;
			}
		}
		const unsigned mark = dec->qlen;
		dec->qmark_valid = 1;
		if (!synced) {
			dec->qready = mark;
			continue;
		}
		/* The header's offset, wanted only when a range starts. */
#define HDR_OFFSET (offs ? offs[i] : base + i)
		s->await_gap = 0;
		if (ca && a->format != 1)
			pw += a->w;
		const unsigned num = a->num;
		const uint32_t en = a->en;
		const int f1 = ca && a->format == 1;
		for (unsigned k = 0; k < num; k++) {
			const int e = (en >> k) & 1;
			if (f1)
				pw++;
			if (b && idx >= bcount)
				b = NULL;
			if (!b && walkable) {
				b = csdi_flow_block(dec, addr, isa);
				idx = 0;
				bcount = b->count;
				bwide = isa == CSD_ISA_ARM ? ~(uint64_t)0 : b->wide;
				bwp = b->end == CSDI_BLOCK_WAYPOINT;
				if (!bcount)
					b = NULL;
			}
			if (!b) {
				/* The general way, from the state in dec. */
				dec->addr = addr;
				dec->isa = isa;
				dec->open = o;
				s->prev_last = prev_last;
				s->last_cycles = last_cycles;
				s->cancelled = cancelled;
				s->blk = NULL;
				insn_atom(dec, e, pw, ca, HDR_OFFSET);
				pw = 0;
				addr = dec->addr;
				isa = dec->isa;
				synced = dec->synced;
				walkable = dec->addr_valid && !dec->lost.active;
				o = dec->open;
				prev_last = s->prev_last;
				last_cycles = s->last_cycles;
				cancelled = s->cancelled;
				b = s->blk;
				idx = s->blk_idx;
				if (b && (s->cur != addr || idx >= b->count || !walkable))
					b = NULL;
				if (b) {
					bcount = b->count;
					bwide = isa == CSD_ISA_ARM ? ~(uint64_t)0 : b->wide;
					bwp = b->end == CSDI_BLOCK_WAYPOINT;
				}
				continue;
			}
			const uint32_t size = 2 + 2 * (uint32_t)((bwide >> idx) & 1);
			cancelled = 0;
			last_cycles = ca ? pw : 0;
			if (o.active && o.end == addr && o.isa == isa) {
				prev_last = o.last;
			} else {
				/* A new range (after closing one that ends elsewhere). */
				if (o.active)
					close_local(dec, &o, dec->open_cond, 0);
				o.active = 1;
				o.start = addr;
				o.count = 0;
				o.cycles = 0;
				o.has_cycles = 0;
				o.isa = isa;
				o.offset = HDR_OFFSET;
				prev_last = addr;
			}
			o.last = addr;
			o.end = addr + size;
			o.count++;
			if (ca) {
				o.cycles += pw;
				o.has_cycles = 1;
			}
			pw = 0;
			idx++;
			addr += size;
			if (idx < bcount || !bwp) {
				/* Not a branch: on to the next instruction. */
				if (!e)
					close_local(dec, &o, CSD_COND_FAIL, 0);
				continue;
			}
			const struct csdi_insn *wp = &b->wp;
			close_local(dec, &o, e ? CSD_COND_PASS : CSD_COND_FAIL, b->wp_rflags[e]);
			b = NULL;
			if (e && wp->cls == CSDI_INSN_DIRECT) {
				addr = wp->target;
				isa = wp->target_isa;
			} else if (e && wp->cls == CSDI_INSN_INDIRECT) {
				/* The branch packet with the target follows. */
				dec->addr_valid = 0;
				walkable = 0;
				s->wait_branch = 1;
			}
		}
#undef HDR_OFFSET
		dec->qready = mark;
	}
done:
	s->pending_w = pw;
	dec->addr = addr;
	dec->isa = isa;
	dec->open = o;
	s->prev_last = prev_last;
	s->last_cycles = last_cycles;
	s->cancelled = cancelled;
	s->blk = b;
	if (b) {
		s->blk_start = b->start;
		s->cur = addr;
		s->blk_idx = idx;
	}
	return i;
}

size_t csdi_etm3_flow_pheader_run(csd_flow_decoder *dec, const uint8_t *h, size_t n, const struct csd_atoms *tab,
				  const uint64_t *offs, uint64_t base)
{
	if (dec->insn_mode)
		return pheader_run_general(dec, h, n, tab, offs, base);
	return pheader_run_range(dec, h, n, tab, offs, base);
}

/* The last traced instruction did not complete: take it back. Returns 1
 * with its address and the cycles it was charged, 0 if there is nothing
 * to take back. Only one instruction can be cancelled: of several branch
 * packets after an instruction only the last counts (IHI 0014 7.3.5), and
 * each instruction is taken back at most once. */
static int cancel_last(csd_flow_decoder *dec, uint32_t *addr, uint64_t *cycles, int *has_cycles)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	struct csdi_open_range *o = &dec->open;
	if (s->cancelled)
		return 0;
	*cycles = 0;
	*has_cycles = 0;
	if (o->active) {
		s->cancelled = 1;
		*addr = o->last;
		*cycles = s->last_cycles;
		*has_cycles = o->has_cycles;
		if (o->count <= 1) {
			o->active = 0;
		} else {
			o->end = o->last;
			o->last = s->prev_last;
			o->count--;
			o->cycles -= s->last_cycles;
		}
		return 1;
	}
	/* The instruction is the newest instruction record not yet released. */
	for (unsigned k = dec->qlen; k-- > dec->qready;) {
		struct csd_record *r = &dec->q[(dec->qhead + k) % CSDI_FLOW_QCAP];
		if (r->type != CSD_REC_INSN && r->type != CSD_REC_RANGE)
			continue;
		s->cancelled = 1;
		*has_cycles = (r->flags & CSD_RECF_CYCLES) != 0;
		if (r->type == CSD_REC_INSN || r->count <= 1) {
			*addr = (uint32_t)(r->type == CSD_REC_INSN ? r->addr : r->last);
			*cycles = r->cycles;
			csdi_flow_remove(dec, k);
		} else {
			*addr = (uint32_t)r->last;
			*cycles = s->last_cycles;
			r->end = r->last;
			r->last = s->prev_last;
			r->count--;
			r->cycles -= s->last_cycles;
			r->flags &= ~(uint32_t)(CSD_RECF_BRANCH | CSD_RECF_TAKEN | CSD_RECF_LINK);
			r->cond = CSD_COND_PASS;
		}
		return 1;
	}
	return 0;
}

static void set_target(csd_flow_decoder *dec, const struct csd_packet *p)
{
	dec->addr = p->addr;
	dec->isa = p->isa;
	dec->addr_valid = dec->isa != CSD_ISA_UNKNOWN;
	dec->u.etm3.wait_branch = 0;
	if (p->flags & CSD_PKTF_SECURITY) {
		dec->ns = (p->flags & CSD_PKTF_NS) != 0;
		dec->hyp = (p->flags & CSD_PKTF_HYP) != 0;
	}
}

static void do_branch(csd_flow_decoder *dec, const struct csd_packet *p)
{
	if (!dec->synced)
		return;
	if ((p->flags & CSD_PKTF_EXCEPTION) && (p->exception || (p->flags & CSD_PKTF_CANCEL))) {
		uint32_t ret = dec->addr;
		int ret_known = dec->addr_valid;
		uint64_t cyc = 0;
		int has_cyc = 0, cancelled = 0;
		if (p->flags & CSD_PKTF_CANCEL) {
			uint32_t a;
			if (cancel_last(dec, &a, &cyc, &has_cyc)) {
				ret = a;
				ret_known = 1;
				cancelled = 1;
			}
		}
		struct csd_record *r = csdi_flow_push(dec, CSD_REC_EXCEPTION, p->offset);
		r->exception = p->exception;
		r->addr = ret_known ? ret : 0;
		r->target = p->addr;
		r->isa = p->isa;
		if (p->flags & CSD_PKTF_CANCEL)
			r->flags |= CSD_RECF_CANCELLED;
		if (cancelled && has_cyc) {
			/* The cycles the cancelled instruction was charged. */
			r->cycles = cyc;
			r->flags |= CSD_RECF_CYCLES;
		}
	} else if (!dec->addr_valid && !dec->u.etm3.wait_branch) {
		/* Atoms were lost before this address; close that stretch. */
		csdi_flow_flush(dec);
	}
	set_target(dec, p);
}

static void do_isync(csd_flow_decoder *dec, const struct csd_packet *p)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	int first = !dec->synced;
	int changed = first;
	if (p->flags & CSD_PKTF_DATA_ONLY)
		return;
	s->await_gap = 0;
	/* Nothing traced before an I-sync can be cancelled after it. */
	s->cancelled = 1;
	if (p->flags & CSD_PKTF_CYCLE_COUNT) {
		/* Cycles since the last P-header: the gap while trace was off,
		 * plus the W atoms after the last instruction (DS-5's count). */
		struct csd_record *r = csdi_flow_push(dec, CSD_REC_CYCLE_COUNT, p->offset);
		r->cycles = p->cycle_count + s->pending_w;
		r->flags |= CSD_RECF_CYCLES;
		s->pending_w = 0;
	} else if (p->reason != CSD_REASON_PERIODIC && cycle_accurate(dec)) {
		/* IHI 0014 7.10.5: the gap's count may come in a cycle count
		 * packet before the next non-periodic I-sync. */
		s->await_gap = 1;
		s->gap_w = s->pending_w;
		s->pending_w = 0;
	}
	uint32_t target = (p->flags & CSD_PKTF_LSIP) ? p->data_insn_addr : p->addr;
	if (!first && p->reason == CSD_REASON_PERIODIC && dec->addr_valid &&
	    (dec->addr != target || dec->isa != p->isa)) {
		struct csd_record *r = csdi_flow_push(dec, CSD_REC_ERROR, p->offset);
		r->addr = target;
		r->error = "periodic I-sync address differs from the decoded address";
	}
	if (first || p->reason != CSD_REASON_PERIODIC) {
		struct csd_record *r = csdi_flow_push(dec, CSD_REC_TRACE_ON, p->offset);
		r->addr = target;
		r->isa = p->isa;
		r->reason = p->reason;
	}
	int ns = (p->flags & CSD_PKTF_NS) != 0, hyp = (p->flags & CSD_PKTF_HYP) != 0;
	if (ns != dec->ns || hyp != dec->hyp || p->isa != dec->isa)
		changed = 1;
	if ((p->flags & CSD_PKTF_CONTEXT_ID) && (!dec->have_context_id || dec->context_id != p->context_id)) {
		dec->context_id = p->context_id;
		dec->have_context_id = 1;
		changed = 1;
	}
	dec->ns = ns;
	dec->hyp = hyp;
	dec->isa = p->isa;
	dec->synced = 1;
	s->wait_branch = 0;
	if (changed)
		csdi_flow_context(dec, p->offset, first);
	dec->addr = target;
	dec->addr_valid = dec->isa != CSD_ISA_UNKNOWN;
	if (p->flags & CSD_PKTF_LSIP) {
		/* The data instruction was executing when trace started: it is
		 * implied executed, then tracing goes on at the current address. */
		insn_atom(dec, 1, 0, 0, p->offset);
		dec->addr = p->addr;
		dec->addr_valid = dec->isa != CSD_ISA_UNKNOWN;
		s->wait_branch = 0;
	}
}

void csdi_etm3_flow_step(csd_flow_decoder *dec)
{
	struct csd_packet *p = &dec->pkt;
	struct csd_record *r;

	switch (p->type) {
	case CSD_PKT_NOSYNC:
		r = csdi_flow_push(dec, CSD_REC_NOSYNC, p->offset);
		r->size = p->size;
		break;
	case CSD_PKT_ERROR:
		r = csdi_flow_push(dec, CSD_REC_ERROR, p->offset);
		r->error = p->error;
		r->size = p->size;
		lose_sync(dec);
		break;
	case CSD_PKT_ISYNC:
		do_isync(dec, p);
		break;
	case CSD_PKT_PHEADER:
		csdi_etm3_flow_pheader(dec, &p->atoms, p->offset);
		break;
	case CSD_PKT_CYCLE_COUNT:
		if (!dec->synced)
			break;
		if (dec->u.etm3.await_gap) {
			/* The count that belongs to the last I-sync. */
			r = csdi_flow_push(dec, CSD_REC_CYCLE_COUNT, p->offset);
			r->cycles = p->cycle_count + dec->u.etm3.gap_w;
			r->flags |= CSD_RECF_CYCLES;
			dec->u.etm3.await_gap = 0;
		} else {
			/* Elsewhere it is a run of W atoms (IHI 0014 table 7.3). */
			dec->u.etm3.pending_w += p->cycle_count;
		}
		break;
	case CSD_PKT_BRANCH:
		do_branch(dec, p);
		break;
	case CSD_PKT_EXCEPTION_EXIT:
		if (dec->synced)
			csdi_flow_push(dec, CSD_REC_EXCEPTION_RETURN, p->offset);
		break;
	case CSD_PKT_CONTEXT_ID:
		if (!dec->have_context_id || dec->context_id != p->context_id) {
			dec->context_id = p->context_id;
			dec->have_context_id = 1;
			if (dec->synced)
				csdi_flow_context(dec, p->offset, 0);
		}
		break;
	case CSD_PKT_VMID:
		if (!dec->have_vmid || dec->vmid != p->vmid) {
			dec->vmid = p->vmid;
			dec->have_vmid = 1;
			if (dec->synced)
				csdi_flow_context(dec, p->offset, 0);
		}
		break;
	case CSD_PKT_TIMESTAMP:
		r = csdi_flow_push(dec, CSD_REC_TIMESTAMP, p->offset);
		r->timestamp = p->timestamp;
		break;
	case CSD_PKT_TRIGGER:
		csdi_flow_push(dec, CSD_REC_TRIGGER, p->offset);
		break;
	default:
		break;
	}
	dec->pkt_active = 0;
}

void csdi_etm3_flow_end(csd_flow_decoder *dec)
{
	(void)dec;
}
