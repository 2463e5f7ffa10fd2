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
#include <stdlib.h>
#include <string.h>

#include "etm3_data.h"
#include "etm3_internal.h"
#include "flow.h"

#include "etm3_memo.h"

static int etm3_init(csd_flow_decoder *dec)
{
	dec->etm3 = csd_etm3_pkt_new(&dec->cfg.trace);
	if (!dec->etm3)
		return CSD_ENOMEM;
	dec->wp_flags = 0;
	dec->open_cond = CSD_COND_PASS;
	dec->u.etm3.data_only = (dec->cfg.trace.etmcr >> 20) & 1;
	/* Data trace: instruction by instruction (etm3_data.c); without
	 * memory for its state, data packets are ignored. */
	csdi_etm3_data_new(dec);
	/* Without the table the loop does the work itself (allocation
	 * failure costs speed, nothing else). It is made once the trace
	 * has shown it is not a small capture (run_range). */
	if (!dec->insn_mode && !(dec->cfg.flags & CSD_FLOW_NO_MEMO) && !dec->u.etm3.data) {
		if (dec->cfg.flags & CSD_FLOW_MEMO_AT_ONCE)
			dec->u.etm3.segs = csdi_etm3_memo_new(SEG_SLOTS_LOG2);
		else
			dec->u.etm3.seg_wait = SEG_MEMO_AFTER;
	}
	dec->u.etm3.seg_log2 = SEG_SLOTS_LOG2;
	return CSD_OK;
}

static void etm3_fini(csd_flow_decoder *dec)
{
	csdi_etm3_memo_free(dec->u.etm3.segs, dec->u.etm3.seg_log2);
	dec->u.etm3.segs = NULL;
	csdi_etm3_data_free(dec);
	csd_etm3_pkt_free(dec->etm3);
	dec->etm3 = NULL;
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
	if (dec->u.etm3.data)
		csdi_etm3_data_reset(dec);
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
		/* As a block of the range mode reads it: only code it cannot
		 * follow leaves the address unknown. */
		lose_atom(dec, rc != CSD_EUNSUPPORTED, dec->addr, cycles, has_cycles, offset);
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
	if (s->data)
		csdi_etm3_data_insn(dec, dec->addr, dec->isa, e);
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

static inline void apply_pheader(csd_flow_decoder *dec, const struct csd_atoms *a, uint64_t offset)
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
 * header by header through apply_pheader. */
static size_t pheader_run_general(csd_flow_decoder *dec, const uint8_t *h, size_t n, const struct csd_atoms *tab,
				  const uint8_t *ph, const uint64_t *offs, uint64_t base)
{
	size_t i = 0;
	/* The run starts with a P-header (and, in range mode, may take
	 * branch packets and I-syncs between headers): not data packets. */
	if (dec->u.etm3.data)
		csdi_etm3_data_other_packet(dec);
	/* A header yields at most 16 instruction records and a few others. */
	for (; i < n && ph[h[i]] && csdi_flow_room(dec) > CSDI_FLOW_QPRODUCE; i++) {
		const struct csd_atoms *a = &tab[h[i]];
		uint64_t off = offs ? offs[i] : base + i;
		/* Records before a header with atoms are final once it is
		 * applied (the hold rule of csd_flow_next). */
		if (a->num) {
			unsigned mark = dec->qlen;
			apply_pheader(dec, a, off);
			dec->qready = mark;
			dec->qmark_valid = 1;
			if (dec->u.etm3.data)
				csdi_etm3_data_hold(dec);
		} else {
			dec->qmark_valid = 0;
			apply_pheader(dec, a, off);
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
	if (o->has_cycles)
		flags |= CSD_RECF_CYCLES;
	if (dec->ns)
		flags |= CSD_RECF_NS;
	if (dec->hyp)
		flags |= CSD_RECF_HYP;
	csdi_rec_range(r, flags, o->offset, o->start, o->last, o->end, o->has_cycles ? o->cycles : 0, o->count,
		       csdi_rec_misc(o->isa, cond, dec->cfg.trace.trace_id));
}

/*
 * Range mode: the same as pheader_run_general, with the walk through the
 * code and the open range in a cursor of local variables (kept in
 * registers, where fields of dec would chain every instruction to the
 * store of the one before; records are written through uint8_t fields,
 * which may alias anything, so fields of dec would be reloaded after every
 * record). Per instruction atom this is a few operations; blocks are
 * looked up when the cursor leaves one. Anything out of the ordinary
 * (atoms while the address is unknown or the code unreadable, a lost
 * stretch pending) goes through insn_atom with the state written back.
 * cursor_load and cursor_store are the one place the cursor and the
 * decoder exchange that state.
 */
struct run_cursor {
	uint64_t pw;              /* W atoms not yet charged (pending_w) */
	uint32_t addr;
	uint8_t isa;
	int synced;
	int walkable;             /* addr_valid and no lost stretch pending */
	/* Instruction idx of block b is at addr (b NULL: look the block up
	 * at the next atom); the block's fields copied. */
	const struct csdi_block *b;
	unsigned idx, bcount;
	uint64_t bwide;
	int bwp;
	struct csdi_open_range o;
	uint32_t prev_last;
	uint64_t last_cycles;
	int cancelled;
	uint64_t ctx;             /* memo key bits that only the general way changes (seg_ctx) */
};

static inline __attribute__((always_inline)) void cursor_block(struct run_cursor *c, const struct csdi_block *b)
{
	c->b = b;
	c->bcount = b->count;
	c->bwide = c->isa == CSD_ISA_ARM ? ~(uint64_t)0 : b->wide;
	c->bwp = b->end == CSDI_BLOCK_WAYPOINT;
}

static inline __attribute__((always_inline)) void cursor_load(const csd_flow_decoder *dec, struct run_cursor *c)
{
	const struct csdi_etm3_state *s = &dec->u.etm3;
	c->pw = s->pending_w;
	c->addr = dec->addr;
	c->isa = dec->isa;
	c->synced = dec->synced;
	c->walkable = dec->addr_valid && !dec->lost.active;
	c->o = dec->open;
	c->prev_last = s->prev_last;
	c->last_cycles = s->last_cycles;
	c->cancelled = s->cancelled;
	c->ctx = seg_ctx(dec);
	c->b = NULL;
	c->idx = s->blk_idx;
	c->bcount = 0;
	c->bwide = 0;
	c->bwp = 0;
	/* The block kept may have lost its cache slot to another. */
	const struct csdi_block *b = s->blk;
	if (b && c->walkable && s->cur == c->addr && b->start == s->blk_start && b->isa == c->isa &&
	    c->idx < b->count)
		cursor_block(c, b);
}

static inline __attribute__((always_inline)) void cursor_store(csd_flow_decoder *dec, const struct run_cursor *c)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	s->pending_w = c->pw;
	dec->addr = c->addr;
	dec->isa = c->isa;
	dec->open = c->o;
	s->prev_last = c->prev_last;
	s->last_cycles = c->last_cycles;
	s->cancelled = c->cancelled;
	s->blk = c->b;
	if (c->b) {
		s->blk_start = c->b->start;
		s->cur = c->addr;
		s->blk_idx = c->idx;
	}
}

/* What the range loop reads that stays the same for a call. */
struct run_args {
	const uint8_t *h;           /* the bytes (n of them) */
	size_t n;
	const struct csd_atoms *tab; /* P-header atoms by byte */
	const uint8_t *ph;          /* ph[b]: byte b is a P-header */
	const uint64_t *offs;       /* capture offset of byte k: offs[k], or base + k */
	uint64_t base;
	int ca;                     /* cycle-accurate */
	struct csdi_etm3_seg *segs; /* the memo (NULL: none, or build mode) */
	unsigned seg_log2;
	size_t seg_mask;            /* a hint's index into segs */
	/* What branch packets between headers are parsed against (the packet
	 * decoder's state, read-only; the pointer stays valid). */
	const struct csdi_etm3_istate *ist;
	int alt;
};

static inline __attribute__((always_inline)) uint64_t run_offset(const struct run_args *a, size_t i)
{
	return a->offs ? a->offs[i] : a->base + i;
}

/* Memo entry g, found for the headers at i with the open range extended
 * (ext) or not, applied to the cursor: its records into the queue, with
 * what the start state adds (W atoms waiting, the open range it
 * continues) on top. */
static inline __attribute__((always_inline)) void memo_apply(csd_flow_decoder *dec, struct run_cursor *c,
							    const struct run_args *a, size_t i,
							    const struct csdi_etm3_seg *g, int ext)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	/* Waiting W atoms: charged to the next instruction in cycle-accurate
	 * mode only (else dropped). */
	const uint64_t pw_in = a->ca ? c->pw : 0;
	if (g->natoms) {
		const struct csdi_open_range oin = c->o;
		const unsigned qlen_in = dec->qlen;
		int closed_in = 0;
		if (c->o.active && !ext) {
			close_local(dec, &c->o, dec->open_cond, 0);
			closed_in = 1;
		}
		/* The queue position, the trace ID and the offsets' form in
		 * locals: the records' byte fields may alias the decoder's,
		 * which would be reloaded after each record. */
		const unsigned nrec = g->nrec;
		const unsigned q0 = dec->qhead + dec->qlen;
		const uint64_t tid = csdi_rec_misc(0, 0, dec->cfg.trace.trace_id);
		struct csd_record *const q = dec->q;
		const struct csdi_seg_range *rs = g->rec;
		const struct csdi_seg_range *const rend = rs + nrec;
		/* (A record pointer that wraps at the queue's end: cheaper per
		 * record than an index taken modulo the size.) */
		struct csd_record *const qend = q + CSDI_FLOW_QCAP;
		struct csd_record *w = &q[q0 % CSDI_FLOW_QCAP];
		if (a->offs) {
			const uint64_t *const offs = a->offs + i;
			for (; rs != rend; rs++) {
				seg_record(w, rs, offs[rs->hdr], tid);
				if (++w == qend)
					w = q;
			}
		} else {
			const uint64_t off = a->base + i;
			for (; rs != rend; rs++) {
				seg_record(w, rs, off + rs->hdr, tid);
				if (++w == qend)
					w = q;
			}
		}
		dec->qlen += nrec;
		if (nrec) {
			/* The first instruction's range takes the W atoms waiting
			 * before it and continues the open range if it was
			 * contiguous. */
			struct csd_record *r = &q[q0 % CSDI_FLOW_QCAP];
			r->cycles += pw_in;
			if (ext) {
				r->addr = oin.start;
				r->offset = oin.offset;
				r->count += oin.count;
				r->cycles += oin.cycles;
			}
		}
		if (g->open_active) {
			const struct csdi_seg_range *sr = &g->open;
			c->o.active = 1;
			c->o.start = sr->start;
			c->o.last = sr->last;
			c->o.end = sr->last + sr->end_delta;
			c->o.count = sr->count;
			c->o.cycles = sr->cycles;
			c->o.has_cycles = (int)sr->flags;
			c->o.isa = sr->isa;
			c->o.offset = run_offset(a, i + sr->hdr);
			if (!g->nrec) {
				c->o.cycles += pw_in;
				if (ext) {
					c->o.start = oin.start;
					c->o.offset = oin.offset;
					c->o.count += oin.count;
					c->o.cycles += oin.cycles;
				}
			}
		} else {
			c->o.active = 0;
		}
		c->addr = g->addr;
		c->isa = g->isa;
		c->pw = g->pw;
		c->cancelled = 0;
		c->last_cycles = g->last_cycles + (g->natoms == 1 ? pw_in : 0);
		c->prev_last = g->natoms == 1 && ext ? oin.last : g->prev_last;
		s->await_gap = 0;
		if (g->indirect) {
			dec->addr_valid = 0;
			c->walkable = 0;
			s->wait_branch = 1;
		}
		dec->qready = qlen_in + g->hold + (closed_in && g->hold_late);
	} else {
		c->pw += g->pw;
	}
	dec->qmark_valid = g->last_atoms;
	c->b = NULL;
}

static size_t run_build(csd_flow_decoder *dec, const uint8_t *h, size_t len, const struct csd_atoms *tab,
			const uint8_t *ph, int *aborted);

/*
 * The memo entry for the headers at i (a segment: up to SEG_LEN of them),
 * looked up, made on a miss, and applied to the cursor. Returns the
 * headers it covers (the loop goes on after them), or 0 when it covers
 * none: the byte at i is no P-header, or the entry leaves them to the
 * loop. (The room the loop checked is enough: a segment closes at most
 * SEG_RECS + 1 ranges, a few of the slack QPRODUCE leaves. Segments start
 * where the previous one ended, also across calls, so that the same trace
 * meets the same entries.)
 */
static inline __attribute__((always_inline)) unsigned memo_step(csd_flow_decoder *dec, struct run_cursor *c,
								const struct run_args *a, size_t i,
								struct csdi_etm3_seg **prev_g)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	struct csdi_etm3_seg *const segs = a->segs;
	const size_t seg_mask = a->seg_mask;
	/* The headers ahead: bytes 1xxxxxx0 (P-header encodings; an entry is
	 * made only of those is_phdr accepts). */
	uint64_t bytes[SEG_WORDS] = { 0 };
	const uint64_t len = seg_bytes(a->h + i, a->n - i, bytes);
	if (!len)
		return 0;
	const int ext = c->o.active & (c->o.end == c->addr) & (c->o.isa == c->isa);
	const uint64_t key = seg_key(c->ctx, c->addr, c->isa, len, ext);
	s->seg_lookups++;
	/* The entry met after the last one last time first: its place is
	 * known without the hash, so the loads of its records need not wait
	 * for key, hash and slot. */
	struct csdi_etm3_seg *g = &segs[(*prev_g)->next & seg_mask];
	int hit = seg_match(g, key, bytes, dec->img_gen);
	if (!hit) {
		g = &segs[seg_slot(key, bytes, a->seg_log2)];
		hit = seg_match(g, key, bytes, dec->img_gen);
		if (!hit)
			hit = seg_match(++g, key, bytes, dec->img_gen);
	}
	/* (A miss is rare once the table is warm: its work laid out of the
	 * way, gen-etm3 2 - 4 % less time.) */
	if (__builtin_expect(!hit, 0)) {
		/* Two ways: the newest entry goes first, the one it displaces
		 * second. */
		g--;
		/* (Counted for csdi_etm3_memo_grow when an entry is lost:
		 * filling empty slots says nothing about the table's size.) */
		s->seg_misses += g[1].gen != 0;
		g[1] = *g;
		cursor_store(dec, c);
		csdi_etm3_memo_build(dec, g, a->h + i, len, a->tab, a->ph, key, bytes, ext, run_build);
		/* It may have refilled the cursor's cache slot. */
		c->b = NULL;
	}
	/* The entry met after this one last time, fetched now (usually a
	 * branch packet comes between: the next lookup would wait on the
	 * table at the end of a chain of address, key and slot); and this one
	 * noted as the one after the last. */
	__builtin_prefetch(&segs[g->next & seg_mask]);
	(*prev_g)->next = (uint16_t)(g - segs);
	*prev_g = g;
	if (!g->len)
		return 0;
	memo_apply(dec, c, a, i, g, ext);
	return g->len;
}

/*
 * A packet between P-headers, taken here when it is whole and plain, as
 * the step would take it, so that headers, a branch, headers... are one
 * call instead of one per run: a cycle count packet (W atoms, unless it is
 * the count of a trace gap), a timestamp (a record after the open range is
 * closed, held like the step's), or a branch address packet without
 * exception information (the target of an indirect branch just traced,
 * say: only the next address). Returns its length, with *last saying
 * what it was; 0 to leave it to the packet decoder.
 */
static inline __attribute__((always_inline)) size_t take_between(csd_flow_decoder *dec, struct run_cursor *c,
								 const struct run_args *a, size_t i,
								 struct csdi_etm3_run_last *last)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	const uint8_t *const h = a->h;
	const size_t n = a->n;
	if (!(h[i] & 1)) {
		/* Not a branch packet (bit 0 clear). */
		uint32_t cc;
		const size_t clen = h[i] != 0x04 || s->await_gap ? 0 : csdi_etm3_cycle_count_quick(h + i, n - i, &cc);
		if (clen) {
			c->pw += cc;
			last->cc_end = i + clen;
			last->cc = cc;
			last->len = clen;
		} else {
			uint64_t ts;
			uint8_t tb;
			if (dec->lost.active || csdi_flow_room(dec) <= CSDI_FLOW_QPRODUCE)
				return 0;
			const uint64_t toff = run_offset(a, i);
			const size_t tlen = csdi_etm3_timestamp_packet(dec->etm3, h + i, n - i, &ts, &tb);
			if (!tlen)
				return 0;
			if (c->o.active)
				close_local(dec, &c->o, dec->open_cond, 0);
			struct csd_record *r = csdi_flow_push_raw(dec, CSD_REC_TIMESTAMP, toff);
			r->timestamp = ts;
			r->size = csdi_etm3_pkt_ts_known(dec->etm3); /* (chunk.c) */
			last->ts_end = i + tlen;
			last->ts = ts;
			last->ts_bits = tb;
			last->len = tlen;
		}
		dec->qmark_valid = 0;
		return last->len;
	}
	uint32_t baddr;
	size_t blen = csdi_etm3_branch_quick(h + i, n - i, a->alt, a->ist->addr, csdi_etm3_shift(a->ist->fam), &baddr);
	if (blen) {
		/* Only the address changes (csdi_etm3_branch_fill reports the
		 * packet from these). */
		last->br.addr = baddr;
		last->br.isa = (uint8_t)csdi_etm3_isa_of(a->ist->fam, a->ist->altisa);
		last->br.addr_bytes = (uint8_t)blen;
		last->br.full = 0;
		csdi_etm3_pkt_set_addr(dec->etm3, baddr);
	} else if ((blen = csdi_etm3_branch_packet(dec->etm3, h + i, n - i, &last->br))) {
		csdi_etm3_branch_commit(dec->etm3, &last->br);
	} else {
		return 0;
	}
	c->addr = last->br.addr;
	c->isa = last->br.isa;
	dec->addr_valid = c->isa != CSD_ISA_UNKNOWN;
	s->wait_branch = 0;
	dec->qmark_valid = 0;
	c->walkable = dec->addr_valid && !dec->lost.active;
	c->b = NULL;
	last->branch_end = i + blen;
	last->len = blen;
	return blen;
}

/* One instruction atom (e: executed) of the header at i: the cursor's
 * instruction added to the open range, the range closed at a failed
 * instruction or a waypoint, the walk on to the next instruction or the
 * branch target. Returns 1 when the atom needs the general way in build
 * mode (the memo entry then ends before this header). */
static inline __attribute__((always_inline)) int walk_atom(csd_flow_decoder *dec, struct run_cursor *c,
							   const struct run_args *a, int e, size_t i, const int build)
{
	if (c->b && c->idx >= c->bcount)
		c->b = NULL;
	if (!c->b && c->walkable) {
		c->idx = 0;
		cursor_block(c, csdi_flow_block(dec, c->addr, c->isa));
		if (!c->bcount)
			c->b = NULL;
	}
	if (!c->b) {
		if (build)
			return 1;
		/* The general way, from the state in dec. */
		cursor_store(dec, c);
		insn_atom(dec, e, c->pw, a->ca, run_offset(a, i));
		cursor_load(dec, c);
		c->pw = 0;
		return 0;
	}
	const uint32_t size = 2 + 2 * (uint32_t)((c->bwide >> c->idx) & 1);
	c->cancelled = 0;
	c->last_cycles = a->ca ? c->pw : 0;
	if (c->o.active && c->o.end == c->addr && c->o.isa == c->isa) {
		c->prev_last = c->o.last;
	} else {
		/* A new range (after closing one that ends elsewhere). */
		if (c->o.active)
			close_local(dec, &c->o, dec->open_cond, 0);
		c->o.active = 1;
		c->o.start = c->addr;
		c->o.count = 0;
		c->o.cycles = 0;
		c->o.has_cycles = 0;
		c->o.isa = c->isa;
		c->o.offset = run_offset(a, i);
		c->prev_last = c->addr;
	}
	c->o.last = c->addr;
	c->o.end = c->addr + size;
	c->o.count++;
	if (a->ca) {
		c->o.cycles += c->pw;
		c->o.has_cycles = 1;
	}
	c->pw = 0;
	c->idx++;
	c->addr += size;
	if (c->idx < c->bcount || !c->bwp) {
		/* Not a branch: on to the next instruction. */
		if (!e)
			close_local(dec, &c->o, CSD_COND_FAIL, 0);
		return 0;
	}
	const struct csdi_insn *wp = &c->b->wp;
	close_local(dec, &c->o, e ? CSD_COND_PASS : CSD_COND_FAIL, c->b->wp_rflags[e]);
	c->b = NULL;
	if (e && wp->cls == CSDI_INSN_DIRECT) {
		c->addr = wp->target;
		c->isa = wp->target_isa;
	} else if (e && wp->cls == CSDI_INSN_INDIRECT) {
		/* The branch packet with the target follows. */
		dec->addr_valid = 0;
		c->walkable = 0;
		dec->u.etm3.wait_branch = 1;
	}
	return 0;
}

/*
 * The loop: per byte, a memo entry where one applies, a packet between
 * headers (not in build mode), or the header's atoms. `build`: make a
 * memo entry (csdi_etm3_memo_build): no memo, no packets between headers,
 * *aborted set at an atom that needs the general way.
 */
static inline __attribute__((always_inline)) size_t run_range(csd_flow_decoder *dec, const uint8_t *h, size_t n,
								const struct csd_atoms *tab, const uint8_t *ph,
								const uint64_t *offs, uint64_t base, const int build,
								int *aborted, struct csdi_etm3_run_last *last)
{
	struct csdi_etm3_state *s = &dec->u.etm3;
	if (!build && s->segs && s->seg_misses >= 1024)
		csdi_etm3_memo_grow(s);

	/* (a's address must not escape: it is to stay in registers.) */
	int alt;
	const struct csdi_etm3_istate *const ist = csdi_etm3_pkt_addr_state(dec->etm3, &alt);
	const struct run_args a = { .h = h, .n = n, .tab = tab, .ph = ph, .offs = offs, .base = base,
				    .ca = cycle_accurate(dec), .segs = build ? NULL : s->segs,
				    .seg_log2 = s->seg_log2, .seg_mask = ((size_t)1 << s->seg_log2) - 1,
				    .ist = ist, .alt = alt };
	struct run_cursor c;
	cursor_load(dec, &c);
	/* The last memo entry met, also in the call before: a run that the
	 * packet decoder cut (an I-sync, the end of a demultiplexer's batch)
	 * goes on as it went on last time. (Its successor hint is only a
	 * hint: a wrong one costs the hashed lookup, no more.) */
	struct csdi_etm3_seg *prev_g = a.segs ? a.segs + (s->seg_prev & a.seg_mask) : NULL;
	size_t i = 0;
	while (i < n && csdi_flow_room(dec) > CSDI_FLOW_QPRODUCE) {
		if (a.segs && c.walkable && c.synced) {
			const unsigned k = memo_step(dec, &c, &a, i, &prev_g);
			if (k) {
				i += k;
				continue;
			}
		}
		if (!ph[h[i]]) {
			if (build || !last || !c.synced || (!dec->addr_valid && !s->wait_branch))
				break;
			const size_t k = take_between(dec, &c, &a, i, last);
			if (!k)
				break;
			i += k;
			/* On only if P-headers follow (anything else is the
			 * packet decoder's). */
			if (i == n || !ph[h[i]])
				break;
			continue;
		}
		const struct csd_atoms *at = &tab[h[i]];
		if (!at->num) {
			/* W atoms only (cycle-accurate): they wait for the next
			 * instruction. A run of them makes no records, so the
			 * room checked before the first still holds. */
			dec->qmark_valid = 0;
			if (!c.synced || !a.ca) {
				i++;
				continue;
			}
			for (;;) {
				if (at->format != 1)
					c.pw += at->w;
				if (++i == n || !ph[h[i]])
					break;
				at = &tab[h[i]];
				if (at->num)
					break;
			}
			if (i == n || !ph[h[i]])
				break;
		}
		const unsigned mark = dec->qlen;
		dec->qmark_valid = 1;
		if (!c.synced) {
			dec->qready = mark;
			i++;
			continue;
		}
		s->await_gap = 0;
		if (a.ca && at->format != 1)
			c.pw += at->w;
		const unsigned num = at->num;
		const uint32_t en = at->en;
		const int f1 = a.ca && at->format == 1;
		for (unsigned k = 0; k < num; k++) {
			if (f1)
				c.pw++;
			if (walk_atom(dec, &c, &a, (en >> k) & 1, i, build)) {
				/* A memo entry ends before this header. */
				*aborted = 1;
				cursor_store(dec, &c);
				return i;
			}
		}
		dec->qready = mark;
		i++;
	}
	cursor_store(dec, &c);
	if (a.segs)
		s->seg_prev = (uint16_t)(prev_g - a.segs);
	if (!build && s->seg_wait) {
		/* (The memo is made once SEG_MEMO_AFTER headers ran.) */
		if (s->seg_wait > i) {
			s->seg_wait -= i;
		} else {
			s->seg_wait = 0;
			s->segs = csdi_etm3_memo_new(SEG_SLOTS_LOG2);
		}
	}
	return i;
}

/* Build mode, for csdi_etm3_memo_build (out of line: a miss is rare). */
static __attribute__((noinline)) size_t run_build(csd_flow_decoder *dec, const uint8_t *h, size_t len,
						  const struct csd_atoms *tab, const uint8_t *ph, int *aborted)
{
	return run_range(dec, h, len, tab, ph, NULL, 0, 1, aborted, NULL);
}

static size_t pheader_run_range(csd_flow_decoder *dec, const uint8_t *h, size_t n, const struct csd_atoms *tab,
				const uint8_t *ph, const uint64_t *offs, uint64_t base, struct csdi_etm3_run_last *last)
{
	return run_range(dec, h, n, tab, ph, offs, base, 0, NULL, last);
}

/* The P-headers at the front of the n bytes h (ph[b]: byte b is one,
 * atoms from tab, capture offsets offs[k] or base + k), with the record
 * hold rule of csd_flow_next; stops at the first byte that is not a
 * P-header, or early when the queue runs short. In range mode, plain
 * branch address packets, cycle counts and timestamps between headers
 * are taken too; *last then says which was the last. Returns the bytes
 * used. */
static __attribute__((noinline)) size_t pheader_run(csd_flow_decoder *dec, const uint8_t *h, size_t n,
						   const struct csd_atoms *tab,
			  const uint8_t *ph, const uint64_t *offs, uint64_t base, struct csdi_etm3_run_last *last)
{
	last->branch_end = 0;
	last->cc_end = 0;
	last->ts_end = 0;
	if (dec->insn_mode || dec->u.etm3.data)
		return pheader_run_general(dec, h, n, tab, ph, offs, base);
	return pheader_run_range(dec, h, n, tab, ph, offs, base, last);
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
			if (s->data)
				csdi_etm3_data_removed(dec, k);
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
	if (p->flags & CSD_PKTF_DATA_ONLY) {
		/* Data-only mode (IHI 0014 7.4.10): no instruction address, no
		 * instruction trace; the data packets after it are decoded
		 * (etm3_data.c), so it synchronises them. */
		if (dec->u.etm3.data)
			dec->synced = 1;
		return;
	}
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

static void step_packet(csd_flow_decoder *dec)
{
	struct csd_packet *p = dec->pkt;
	struct csd_record *r;

	/* Store failed comes right after its data packet (IHI 0014 7.4.7);
	 * the data packet types are NORMAL_DATA .. DATA_SUPPRESSED. */
	if (dec->u.etm3.data && (p->type < CSD_PKT_NORMAL_DATA || p->type > CSD_PKT_DATA_SUPPRESSED) &&
	    p->type != CSD_PKT_IGNORE)
		csdi_etm3_data_other_packet(dec);

	switch (p->type) {
	case CSD_PKT_NOSYNC:
		r = csdi_flow_push(dec, CSD_REC_NOSYNC, p->offset);
		r->size = p->size;
		break;
	case CSD_PKT_ERROR:
	case CSD_PKT_TRUNCATED: /* the end of the stream cut a packet: the last record */
		r = csdi_flow_push(dec, p->type == CSD_PKT_ERROR ? CSD_REC_ERROR : CSD_REC_TRUNCATED, p->offset);
		r->error = p->error;
		r->size = p->size;
		lose_sync(dec);
		break;
	case CSD_PKT_ISYNC:
		do_isync(dec, p);
		break;
	case CSD_PKT_PHEADER:
		apply_pheader(dec, &p->atoms, p->offset);
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
		r->size = csdi_etm3_pkt_ts_known(dec->etm3); /* (chunk.c) */
		break;
	case CSD_PKT_TRIGGER:
		csdi_flow_push(dec, CSD_REC_TRIGGER, p->offset);
		break;
	case CSD_PKT_NORMAL_DATA:
	case CSD_PKT_OOO_DATA:
	case CSD_PKT_OOO_PLACEHOLDER:
	case CSD_PKT_STORE_FAILED:
	case CSD_PKT_VALUE_NOT_TRACED:
	case CSD_PKT_DATA_SUPPRESSED:
		if (dec->u.etm3.data)
			csdi_etm3_data_packet(dec, p);
		break;
	default:
		break;
	}
	if (dec->u.etm3.data)
		csdi_etm3_data_hold(dec);
	dec->pkt_active = 0;
}

/* The records held after the last P-header with atoms, for a cancel bit
 * that may yet take its last instruction back, are let go once
 * HOLD_OTHERS records that are not instructions have joined them (data
 * packets with nothing left to match, say): a bound the same in both
 * modes, reached well before the queue runs short, which would let them
 * go at a point that depends on the mode (instruction mode holds a record
 * per instruction). Placeholders' holds stay (csdi_etm3_data_hold). */
#define HOLD_OTHERS 96
/* Before the packet that reaches the bound, the hold is fewer than
 * HOLD_OTHERS others and the last P-header's records; that packet adds at
 * most a step's worth (CSDI_FLOW_QPRODUCE - CSDI_FLOW_QLOW), as does the
 * P-header: all under what makes the queue run short (csdi_flow_room
 * below CSDI_FLOW_QLOW). */
_Static_assert(HOLD_OTHERS + 2 * (CSDI_FLOW_QPRODUCE - CSDI_FLOW_QLOW) < CSDI_FLOW_QCAP - CSDI_FLOW_QLOW,
	       "the hold bound must come before the queue runs short");
static __attribute__((noinline)) void hold_bound_scan(csd_flow_decoder *dec)
{
	unsigned others = 0;
	for (unsigned k = dec->qready; k < dec->qlen; k++) {
		const uint32_t type = dec->q[(dec->qhead + k) % CSDI_FLOW_QCAP].type;
		others += type != CSD_REC_INSN && type != CSD_REC_RANGE;
	}
	if (others < HOLD_OTHERS)
		return;
	dec->qready = dec->qlen;
	if (dec->u.etm3.data)
		csdi_etm3_data_hold(dec);
}

static inline void hold_bound(csd_flow_decoder *dec)
{
	if (dec->qlen - dec->qready >= HOLD_OTHERS)
		hold_bound_scan(dec);
}

/* One step of the active packet, and the records that makes ready: those
 * before the hold mark, the rest staying held with the instruction before
 * them (a later cancel bit may take it back) up to hold_bound, or until
 * the queue runs short. */
static void step(csd_flow_decoder *dec)
{
	step_packet(dec);
	/* (A packet that sets the mark holds only its own few records.) */
	if (dec->qmark_valid)
		dec->qready = dec->qmark;
	else
		hold_bound(dec);
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
		size_t i = pheader_run(dec, h + used, n - used, tab, is_phdr,
				    offs ? offs + used : NULL, base + used, &rl);
		hold_bound(dec);
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
			struct csd_packet *pk = csdi_flow_spare_pkt(dec);
			const size_t slen = csdi_etm3_isync_packet(dec->etm3, h + used, n - used, used, pk);
			if (!slen)
				break;
			csdi_flow_take_pkt(dec, pk);
			step(dec);
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

static int etm3_feed(csd_flow_decoder *dec, const struct csd_bytes *in)
{
	return csd_etm3_pkt_feed(dec->etm3, in);
}

static int etm3_finish(csd_flow_decoder *dec)
{
	return csd_etm3_pkt_finish(dec->etm3);
}

static int etm3_next_packet(csd_flow_decoder *dec, struct csd_packet *pkt)
{
	return csd_etm3_pkt_next(dec->etm3, pkt);
}

static void etm3_sem(const csd_flow_decoder *dec, struct csdi_sem *s)
{
	const struct csdi_etm3_state *e = &dec->u.etm3;
	csdi_etm3_pkt_sem(dec->etm3, s);
	/* Cycle-accurate W atoms not yet charged, an indirect branch whose
	 * address packet is awaited, the held instruction record that a
	 * cancel may take back, and what a cancel or a cycle count packet
	 * after a gap would change. */
	csdi_sem_put(s, e->pending_w);
	csdi_sem_put(s, (uint64_t)e->wait_branch);
	csdi_sem_put(s, (uint64_t)e->pending_insn);
	if (e->pending_insn)
		csdi_sem_rec(s, &e->held);
	csdi_sem_put(s, e->prev_last);
	csdi_sem_put(s, e->last_cycles);
	csdi_sem_put(s, (uint64_t)e->cancelled);
	csdi_sem_put(s, (uint64_t)e->data_only);
	csdi_sem_put(s, (uint64_t)e->await_gap);
	csdi_sem_put(s, e->gap_w);
	if (e->data)
		csdi_etm3_data_sem(dec, s);
	/* Left out: the range cursor (blk, blk_start, cur, blk_idx), a
	 * shortcut into the block cache that is looked up again whenever it
	 * does not fit (cache_fit drops it); the segment memo (segs and its
	 * counters), which replays what the P-headers would do anyway. */
}

static void etm3_ts_get(const csd_flow_decoder *dec, struct csdi_flow_ts *ts)
{
	ts->raw = csdi_etm3_pkt_ts(dec->etm3, &ts->known, &ts->gray);
}

static void etm3_ts_set(csd_flow_decoder *dec, uint64_t raw, unsigned known)
{
	csdi_etm3_pkt_set_ts(dec->etm3, raw, known);
}

const struct csdi_flow_ops csdi_etm3_flow_ops = {
	.init = etm3_init,
	.fini = etm3_fini,
	.feed = etm3_feed,
	.finish = etm3_finish,
	.next_packet = etm3_next_packet,
	.run = etm3_pheader_run,
	.step = step,
	.sem = etm3_sem,
	.ts_get = etm3_ts_get,
	.ts_set = etm3_ts_set,
};
