/*
 * ptm_flow.c - PTM (PFT) decompression: packets + image -> instructions,
 * following the algorithm of IHI 0035B appendix B.3 (branch_no_excp,
 * branch_with_excp, analyze_atomheader, analyze_waypoint_update, ...).
 *
 * Waypoints are the instructions that can change the program flow (direct
 * and indirect branches, every other write of the PC), ISB, and DMB/DSB
 * when ETMCCER[24] says the PTM treats them as waypoints. Only waypoints
 * produce atoms; the instructions between them are implied.
 *
 * Cycle counts (cycle-accurate mode) belong to the waypoint whose atom or
 * branch packet carried them, as DS-5 attributes them; the instructions
 * between waypoints get 0.
 */
#include <string.h>

#include "flow.h"
#include "ptm_internal.h"
#include "walk_cache.h"

enum walk_kind {
	WALK_ATOM = 1,     /* to the next waypoint, which gets the atom */
	WALK_BRANCH,       /* to the next waypoint, taken to the branch packet's address */
	WALK_UPDATE,       /* through the instruction at walk_stop (waypoint update) */
};

static int ptm_init(csd_flow_decoder *dec)
{
	dec->ptm = csd_ptm_pkt_new(&dec->cfg.trace);
	if (!dec->ptm)
		return CSD_ENOMEM;
	dec->wp_flags = CSDI_INSNF_ISB;
	dec->open_cond = CSD_COND_UNKNOWN;
	if (dec->cfg.trace.etmccer & (1u << 24))
		dec->wp_flags |= CSDI_INSNF_DMB_DSB;
	dec->u.ptm.rstack_on = (dec->cfg.trace.etmcr >> 29) & 1;
	/* What came before the start is unknown: the stack too. */
	if (dec->u.ptm.rstack_on) {
		memset(dec->u.ptm.rstack_isa, CSDI_RS_UNKNOWN, sizeof(dec->u.ptm.rstack_isa));
		struct csdi_rs_uses *u = malloc(sizeof(*u));
		if (!u)
			return CSD_ENOMEM;
		atomic_init(&u->refs, 1);
		atomic_init(&u->count, 0);
		dec->u.ptm.rs_uses = u;
	}
	dec->u.ptm.walk_max_blocks = CSDI_WALK_MAX_BLOCKS;
	return CSD_OK;
}

static void ptm_fini(csd_flow_decoder *dec)
{
	csdi_walk_cache_free(dec->walk_cache);
	dec->walk_cache = NULL;
	csd_ptm_pkt_free(dec->ptm);
	dec->ptm = NULL;
	csdi_rs_uses_unref(dec->u.ptm.rs_uses);
	dec->u.ptm.rs_uses = NULL;
}

void csdi_ptm_flow_walk_cache(csd_flow_decoder *dec, int on, size_t max_bytes)
{
	if (!dec->ptm)
		return;
	struct csdi_ptm_state *s = &dec->u.ptm;
	csdi_walk_cache_free(dec->walk_cache);
	dec->walk_cache = NULL;
	s->walk_cache_off = !on;
	s->walk_cache_bytes = max_bytes;
}

void csdi_ptm_flow_walk_limit(csd_flow_decoder *dec, uint32_t blocks)
{
	if (dec->ptm && blocks >= 1 && blocks <= CSDI_WALK_MAX_BLOCKS)
		dec->u.ptm.walk_max_blocks = blocks;
}

static void lose_sync(csd_flow_decoder *dec)
{
	dec->synced = 0;
	dec->addr_valid = 0;
	/* A serial decoder's stack is empty here too: nothing unknown. */
	dec->u.ptm.rstack_n = 0;
	memset(dec->u.ptm.rstack_isa, 0, sizeof(dec->u.ptm.rstack_isa));
	dec->u.ptm.walk_active = 0;
}

static void rstack_push(struct csdi_ptm_state *s, uint32_t addr, uint8_t isa)
{
	s->rstack_top = (s->rstack_top + 1) % CSDI_RSTACK;
	s->rstack_addr[s->rstack_top] = addr;
	s->rstack_isa[s->rstack_top] = isa;
	if (s->rstack_n < CSDI_RSTACK)
		s->rstack_n++;
}

static int rstack_pop(struct csdi_ptm_state *s, uint32_t *addr, uint8_t *isa)
{
	if (!s->rstack_n) {
		/* Past the known entries, where one from before the start
		 * may lie: counted here, published by rs_publish. */
		s->rs_pops += s->rstack_isa[s->rstack_top] == CSDI_RS_UNKNOWN;
		return 0;
	}
	*addr = s->rstack_addr[s->rstack_top];
	*isa = s->rstack_isa[s->rstack_top];
	s->rstack_top = (s->rstack_top + CSDI_RSTACK - 1) % CSDI_RSTACK;
	s->rstack_n--;
	return 1;
}

static uint8_t insn_cond(csd_flow_decoder *dec, struct csdi_insn *insn)
{
	if (insn->isa != CSD_ISA_ARM) {
		csdi_insn_apply_it(insn, dec->itstate);
		dec->itstate = (insn->flags & CSDI_INSNF_IT) ? csdi_it_start(insn->opcode) : csdi_it_advance(dec->itstate);
	}
	return (insn->flags & CSDI_INSNF_COND) ? CSD_COND_UNKNOWN : CSD_COND_PASS;
}

/* Instruction mode: queue `n` instructions from `addr` as records; the
 * last one gets `last_cond` / `last_flags` / cycles when `with_last`. */
static void push_insns(csd_flow_decoder *dec, uint32_t addr, unsigned n, int with_last, uint8_t last_cond,
		       uint32_t last_flags, uint64_t cycles, int has_cycles, uint64_t offset)
{
	int ca = (dec->cfg.trace.etmcr >> 12) & 1;
	csdi_flow_flush(dec); /* a lost stretch before these instructions */
	for (unsigned i = 0; i < n; i++) {
		struct csdi_insn insn;
		if (csdi_flow_decode(dec, addr, dec->isa, &insn) < 0)
			return; /* the block said it was readable: cannot happen */
		struct csd_record *r = csdi_flow_push_raw(dec, CSD_REC_INSN, offset);
		r->addr = addr;
		r->size = insn.size;
		r->opcode = insn.opcode;
		r->isa = dec->isa;
		r->cond = insn_cond(dec, &insn);
		if (ca)
			r->flags |= CSD_RECF_CYCLES;
		if (dec->ns)
			r->flags |= CSD_RECF_NS;
		if (dec->hyp)
			r->flags |= CSD_RECF_HYP;
		if (with_last && i + 1 == n) {
			r->cond = last_cond;
			r->flags |= last_flags;
			if (has_cycles) {
				r->cycles = cycles;
				r->flags |= CSD_RECF_CYCLES;
			}
		}
		addr += insn.size;
	}
}

/* Emit `n` instructions of block b (from its start) as executed. */
static void emit_block_part(csd_flow_decoder *dec, const struct csdi_block *b, unsigned n, uint32_t end,
			    int with_last, uint8_t cond, uint32_t flags, uint64_t cycles, int has_cycles,
			    uint64_t offset)
{
	if (n == 0)
		return;
	if (dec->insn_mode) {
		push_insns(dec, b->start, n, with_last, cond, flags, cycles, has_cycles, offset);
		return;
	}
	/* Address of the last of the n instructions. */
	unsigned last_size = ((b->wide >> (n - 1)) & 1) ? 4 : 2;
	if (b->isa == CSD_ISA_ARM)
		last_size = 4;
	csdi_flow_range_add(dec, b->start, end - last_size, end, n, offset);
	if (with_last) {
		if (has_cycles) {
			dec->open.cycles += cycles;
			dec->open.has_cycles = 1;
		}
		csdi_flow_close_range(dec, cond, flags);
	}
}

/* Byte length of the first n instructions of a block. */
static uint32_t block_bytes(const struct csdi_block *b, unsigned n)
{
	if (b->isa == CSD_ISA_ARM)
		return 4u * n;
	uint64_t mask = n >= 64 ? ~UINT64_C(0) : (UINT64_C(1) << n) - 1;
	return 2u * n + 2u * (uint32_t)__builtin_popcountll(b->wide & mask);
}

/* The walk met code it cannot read or follow: the rest is lost. */
static void walk_blocked(csd_flow_decoder *dec, const struct csdi_block *b, int kind, uint64_t cycles, int has_cycles,
			 uint64_t offset)
{
	uint32_t at = b->next;
	if (b->end == CSDI_BLOCK_UNSUPPORTED) {
		struct csd_record *r = csdi_flow_push(dec, CSD_REC_ISA_UNSUPPORTED, offset);
		r->addr = at;
		r->isa = b->isa;
	}
	/* An atom spent in the unknown code is counted there. */
	csdi_flow_lose(dec, b->end == CSDI_BLOCK_NOMEM, at, kind == WALK_ATOM ? 1 : 0, cycles, has_cycles, offset);
	dec->addr_valid = 0;
}

/* walk_max_blocks blocks (CSDI_WALK_MAX_BLOCKS) from its start, the walk
 * has found no waypoint: it ends at dec->addr. */
static void walk_give_up(csd_flow_decoder *dec, uint64_t offset)
{
	struct csd_record *r = csdi_flow_push(dec, CSD_REC_ERROR, offset);
	r->addr = dec->addr;
	r->error = "no waypoint found: trace and image disagree";
	dec->addr_valid = 0;
	dec->u.ptm.walk_active = 0;
}

static int walk_decode(void *ctx, uint32_t addr, uint8_t isa, struct csdi_insn *insn)
{
	return csdi_flow_decode(ctx, addr, isa, insn);
}

/* (csdi_flow_decode fetches the bytes at its address and classifies them
 * when at least 4 are there, as the walk cache does with these.) */
static size_t walk_fetch(void *ctx, uint32_t addr, const uint8_t **p)
{
	csd_flow_decoder *dec = ctx;
	return csdi_image_fetch(dec->cfg.image, &dec->img_win, addr, p);
}

/* Condition of the last instruction a waypoint update names: PFT does not
 * say whether it passed - except for an SVC/SMC/..., which the PTM
 * upgrades to a waypoint only when it passes (IHI 0035B 5.3). */
static uint8_t update_cond(csd_flow_decoder *dec, uint32_t addr, uint8_t isa)
{
	struct csdi_insn last;
	if (csdi_flow_decode(dec, addr, isa, &last) > 0 && (last.flags & CSDI_INSNF_EXCEPTION))
		return CSD_COND_PASS;
	return CSD_COND_UNKNOWN;
}

/*
 * Range mode: the rest of a walk from dec->addr, which the walk has
 * reached through s->walk_count blocks without a waypoint, from the walk
 * cache instead of block by block: the same records as the loop in walk()
 * would make (consecutive blocks add to one open range, so a stretch of
 * them is one csdi_flow_range_add). known_only: only if the cache has
 * learnt the code at dec->addr. Returns 1 when the walk is over, 0 when
 * walk() goes on from dec->addr with s->walk_count blocks done (at the end
 * of the stretch, or where the cache knows no further), -1 when nothing
 * was done.
 */
static int walk_cached(csd_flow_decoder *dec, int kind, uint32_t stop, int known_only, uint64_t offset)
{
	struct csdi_ptm_state *s = &dec->u.ptm;
	if (!dec->walk_cache) {
		if (s->walk_cache_off)
			return -1;
		const struct csdi_walk_code code = { walk_decode, walk_fetch, dec, dec->wp_flags };
		dec->walk_cache = csdi_walk_cache_new(&code, s->walk_cache_bytes ? s->walk_cache_bytes : CSDI_WALK_CACHE_BYTES);
		if (!dec->walk_cache)
			return -1;
	}
	const uint32_t done = s->walk_count * CSDI_BLOCK_MAX;
	struct csdi_walk_span sp;
	csdi_walk_cache_span(dec->walk_cache, dec->img_gen, dec->addr, dec->isa,
			     s->walk_max_blocks * CSDI_BLOCK_MAX - done, kind == WALK_UPDATE, stop, CSDI_BLOCK_MAX,
			     known_only, &sp);
	if (sp.event == CSDI_WALK_NONE)
		return -1;
	if (sp.event == CSDI_WALK_CAP) {
		/* As the loop's limit of walk_max_blocks blocks. */
		csdi_flow_range_add(dec, dec->addr, sp.last, sp.end, sp.count, offset);
		dec->addr = sp.end;
		walk_give_up(dec, offset);
		return 1;
	}
	if (sp.event == CSDI_WALK_STOP) {
		/* The update names a plain instruction: executed up to and
		 * including it. */
		const uint8_t cond = update_cond(dec, sp.end, dec->isa);
		csdi_flow_range_add(dec, dec->addr, sp.end, sp.end + sp.size, sp.count + 1, offset);
		csdi_flow_close_range(dec, cond, 0);
		dec->addr = sp.end + sp.size;
		s->walk_active = 0;
		return 1;
	}
	if (sp.event == CSDI_WALK_TERM && kind == WALK_UPDATE && (done + sp.count) % CSDI_BLOCK_MAX != 0 &&
	    stop - sp.end < 4) {
		/* The update names the waypoint at the end: the walk stops in
		 * front of it, closing the range at the last instruction of the
		 * block that led there, as the loop does - unless that block
		 * began at the waypoint (then the range stays open). */
		const struct csdi_block *b = csdi_flow_block(dec, sp.end, dec->isa);
		if (b->end == CSDI_BLOCK_WAYPOINT && stop - b->start < b->next - b->start) {
			csdi_flow_range_add(dec, dec->addr, sp.last, sp.end, sp.count, offset);
			csdi_flow_close_range(dec, update_cond(dec, sp.last, dec->isa), 0);
			dec->addr = sp.end;
			s->walk_active = 0;
			return 1;
		}
	}
	/* TERM: the loop takes the block at the end; PART: the blocks after. */
	if (sp.count)
		csdi_flow_range_add(dec, dec->addr, sp.last, sp.end, sp.count, offset);
	dec->addr = sp.end;
	s->walk_count = (done + sp.count) / CSDI_BLOCK_MAX;
	return 0;
}

/*
 * Walk from dec->addr. Returns 1 when the walk finished (dec->addr and
 * dec->addr_valid say where execution continues; for WALK_BRANCH the
 * caller then sets the target), 0 when the queue is too full to go on
 * (instruction mode; call again with the same arguments).
 */
static int walk(csd_flow_decoder *dec, int kind, int atom, uint32_t stop, uint64_t cycles, int has_cycles,
		uint64_t offset)
{
	struct csdi_ptm_state *s = &dec->u.ptm;
	if (!s->walk_active) {
		s->walk_active = 1;
		s->walk_count = 0;
	}
	/* Range mode asks the walk cache once: at once in code it has learnt,
	 * otherwise after a few blocks without a waypoint. */
	int cache_asked = 0;
	if (dec->walk_cache && s->walk_count == 0 && !dec->insn_mode) {
		const int rc = walk_cached(dec, kind, stop, 1, offset);
		if (rc > 0)
			return 1;
		cache_asked = rc == 0;
	}
	for (;;) {
		if (dec->insn_mode && csdi_flow_room(dec) < CSDI_BLOCK_MAX + 8)
			return 0;
		if (++s->walk_count > s->walk_max_blocks) {
			walk_give_up(dec, offset);
			return 1;
		}
		const struct csdi_block *b = csdi_flow_block(dec, dec->addr, dec->isa);
		if (kind == WALK_UPDATE && stop >= b->start && stop < b->next) {
			/* Executed up to and including the instruction at stop. */
			unsigned n = 0;
			while (n < b->count && b->start + block_bytes(b, n + 1) <= stop)
				n++;
			n++; /* the instruction containing stop */
			if (b->end == CSDI_BLOCK_WAYPOINT && n == b->count) {
				/* Stop short of a waypoint: its own atom will come. */
				n--;
			}
			uint32_t end = b->start + block_bytes(b, n);
			/* The update names the last instruction executed. */
			uint8_t cond = n ? update_cond(dec, b->start + block_bytes(b, n - 1), b->isa) : CSD_COND_UNKNOWN;
			emit_block_part(dec, b, n, end, 1, cond, 0, 0, 0, offset);
			dec->addr = end;
			s->walk_active = 0;
			return 1;
		}
		if (b->end == CSDI_BLOCK_LIMIT) {
			emit_block_part(dec, b, b->count, b->next, 0, 0, 0, 0, 0, offset);
			dec->addr = b->next;
			if (s->walk_count == CSDI_WALK_CACHE_AFTER && !cache_asked && !dec->insn_mode) {
				cache_asked = 1;
				if (walk_cached(dec, kind, stop, 0, offset) > 0)
					return 1;
			}
			continue;
		}
		if (b->end != CSDI_BLOCK_WAYPOINT) {
			emit_block_part(dec, b, b->count, b->next, 0, 0, 0, 0, 0, offset);
			walk_blocked(dec, b, kind, cycles, has_cycles, offset);
			s->walk_active = 0;
			return 1;
		}
		if (kind == WALK_UPDATE) {
			/* A waypoint before the update address: stop in front of it. */
			emit_block_part(dec, b, b->count - 1u, b->wp_addr, 1, CSD_COND_UNKNOWN, 0, 0, 0, offset);
			struct csd_record *r = csdi_flow_push(dec, CSD_REC_ERROR, offset);
			r->addr = b->wp_addr;
			r->error = "waypoint update beyond an untraced waypoint";
			dec->addr = b->wp_addr;
			s->walk_active = 0;
			return 1;
		}
		const struct csdi_insn *wp = &b->wp;
		int taken = kind == WALK_BRANCH || atom;
		uint8_t cond = taken ? CSD_COND_PASS : CSD_COND_FAIL;
		uint32_t flags = csdi_flow_branch_flags(wp, taken);
		uint8_t isa_before = dec->isa;
		/* Direct branches with an atom continue at their target. */
		uint32_t next_addr = b->next;
		uint8_t next_isa = dec->isa;
		int next_valid = 1;
		if (kind == WALK_ATOM && atom) {
			if (wp->cls == CSDI_INSN_DIRECT) {
				next_addr = wp->target;
				next_isa = wp->target_isa;
			} else if (wp->cls == CSDI_INSN_INDIRECT) {
				/* A taken indirect branch traced by an atom alone
				 * was predicted by the return stack. */
				uint32_t ra;
				uint8_t risa;
				if (s->rstack_on && rstack_pop(s, &ra, &risa)) {
					next_addr = ra;
					next_isa = risa;
					flags |= CSD_RECF_RETURN_STACK;
				} else {
					next_valid = 0;
				}
			}
		}
		emit_block_part(dec, b, b->count, b->next, 1, cond, flags, cycles, has_cycles, offset);
		if (taken && s->rstack_on && (wp->flags & CSDI_INSNF_LINK) && wp->cls != CSDI_INSN_NORMAL)
			rstack_push(s, b->next, isa_before);
		if (taken && wp->cls != CSDI_INSN_NORMAL)
			dec->itstate = 0;
		dec->addr = next_addr;
		dec->isa = next_isa;
		dec->addr_valid = next_valid;
		s->walk_active = 0;
		return 1;
	}
}

/*
 * The common case of an atom in range mode, without the general walk: the
 * cached block at the current address ends in a waypoint and nothing is
 * pending, so the atom is one range record. Returns 0 when the general
 * walk must handle it.
 */
static inline __attribute__((always_inline)) int atom_fast_core(csd_flow_decoder *dec, int e, uint32_t cycles,
							   int has_cycles, uint64_t offset);

static int atom_fast(csd_flow_decoder *dec, int e, uint32_t cycles, int has_cycles, uint64_t offset)
{
	struct csdi_ptm_state *s = &dec->u.ptm;
	if (dec->insn_mode || dec->open.active || dec->lost.active || s->walk_active || csdi_flow_room(dec) < 2)
		return 0;
	return atom_fast_core(dec, e, cycles, has_cycles, offset);
}

/* atom_fast once its preconditions are known to hold. */
static inline __attribute__((always_inline)) int atom_fast_core(csd_flow_decoder *dec, int e, uint32_t cycles, int has_cycles, uint64_t offset)
{
	struct csdi_ptm_state *s = &dec->u.ptm;
	const struct csdi_block *b = csdi_flow_block(dec, dec->addr, dec->isa);
	if (b->end != CSDI_BLOCK_WAYPOINT)
		return 0;
	const struct csdi_insn *wp = &b->wp;
	uint32_t next_addr = b->next;
	uint8_t next_isa = dec->isa, isa_before = dec->isa;
	int next_valid = 1;
	uint32_t flags = 0;
	if (wp->cls != CSDI_INSN_NORMAL) {
		flags = CSD_RECF_BRANCH;
		if (wp->flags & CSDI_INSNF_LINK)
			flags |= CSD_RECF_LINK;
		if (e) {
			flags |= CSD_RECF_TAKEN;
			if (wp->cls == CSDI_INSN_DIRECT) {
				next_addr = wp->target;
				next_isa = wp->target_isa;
			} else {
				uint32_t ra;
				uint8_t risa;
				if (s->rstack_on && rstack_pop(s, &ra, &risa)) {
					next_addr = ra;
					next_isa = risa;
					flags |= CSD_RECF_RETURN_STACK;
				} else {
					next_valid = 0;
				}
			}
			if (s->rstack_on && (wp->flags & CSDI_INSNF_LINK))
				rstack_push(s, b->next, isa_before);
			dec->itstate = 0;
		}
	}
	struct csd_record *r = csdi_flow_push_raw(dec, CSD_REC_RANGE, offset);
	r->addr = b->start;
	r->last = b->wp_addr;
	r->end = b->next;
	r->count = b->count;
	r->isa = isa_before;
	r->cond = e ? CSD_COND_PASS : CSD_COND_FAIL;
	r->flags = flags | (dec->ns ? CSD_RECF_NS : 0) | (dec->hyp ? CSD_RECF_HYP : 0);
	if (has_cycles) {
		r->cycles = cycles;
		r->flags |= CSD_RECF_CYCLES;
	}
	dec->addr = next_addr;
	dec->isa = next_isa;
	dec->addr_valid = next_valid;
	return 1;
}

static void apply_security(csd_flow_decoder *dec, const struct csd_packet *p)
{
	if (p->flags & CSD_PKTF_SECURITY) {
		dec->ns = (p->flags & CSD_PKTF_NS) != 0;
		dec->hyp = (p->flags & CSD_PKTF_HYP) != 0;
	}
}

static void do_isync(csd_flow_decoder *dec, const struct csd_packet *p)
{
	int first = !dec->synced;
	int changed = first;
	if (p->flags & CSD_PKTF_CYCLE_COUNT) {
		/* Cycles since the last cycle count: the gap while trace was off. */
		struct csd_record *r = csdi_flow_push(dec, CSD_REC_CYCLE_COUNT, p->offset);
		r->cycles = p->cycle_count;
		r->flags |= CSD_RECF_CYCLES;
	}
	if (!first && p->reason == CSD_REASON_PERIODIC && dec->addr_valid &&
	    (dec->addr != p->addr || dec->isa != p->isa)) {
		struct csd_record *r = csdi_flow_push(dec, CSD_REC_ERROR, p->offset);
		r->addr = p->addr;
		r->error = "periodic I-sync address differs from the decoded address";
	}
	if (first || p->reason != CSD_REASON_PERIODIC) {
		struct csd_record *r = csdi_flow_push(dec, CSD_REC_TRACE_ON, p->offset);
		r->addr = p->addr;
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
	dec->addr = p->addr;
	dec->isa = p->isa;
	dec->addr_valid = dec->isa != CSD_ISA_UNKNOWN;
	dec->synced = 1;
	dec->itstate = 0;
	if (changed)
		csdi_flow_context(dec, p->offset, first);
}

/* A branch address packet: the trace went somewhere new. */
static void set_target(csd_flow_decoder *dec, const struct csd_packet *p)
{
	dec->addr = p->addr;
	dec->isa = p->isa;
	dec->addr_valid = 1;
	dec->itstate = 0;
	apply_security(dec, p);
}

/* The atom packet at p (len bytes) as dec->pkt, with atoms from `from` on
 * left for step_packet (the fast path could not take atom `from`). */
static __attribute__((noinline)) void atom_handover(csd_flow_decoder *dec, const uint8_t *p, size_t len,
						    uint64_t off, unsigned num, unsigned en, uint32_t count, int ca,
						    int active, unsigned from)
{
	struct csd_packet *pk = dec->pkt;
	csdi_pkt_clear(pk);
	pk->type = CSD_PKT_ATOM;
	pk->offset = off;
	pk->size = (uint32_t)len;
	memcpy(pk->raw, p, len);
	pk->atoms.num = (uint8_t)num;
	pk->atoms.en = en;
	if (ca) {
		pk->flags = CSD_PKTF_CYCLE_COUNT;
		pk->cycle_count = count;
	}
	dec->have_pkt = 1;
	dec->pkt_active = active;
	dec->u.ptm.atom_pos = active ? from : 0;
}

/*
 * One waypoint of the fast path: the block at *addr ends in a waypoint,
 * which an atom executes (e) or not, or which a branch packet took
 * (branch_pkt: the caller then sets the target); one range record.
 * Returns 0 if the block does not end in a waypoint (nothing done), -1 if
 * the atom was applied but where execution goes next is unknown, 1
 * otherwise.
 */
static inline __attribute__((always_inline)) int fast_waypoint(csd_flow_decoder *dec, uint32_t *addr,
								 uint8_t *isa, unsigned e, uint32_t cycles,
								 uint32_t secflags, uint64_t off, int branch_pkt)
{
	struct csdi_ptm_state *s = &dec->u.ptm;
	const struct csdi_block *b = csdi_flow_block(dec, *addr, *isa);
	if (b->end != CSDI_BLOCK_WAYPOINT)
		return 0;
	const struct csdi_insn *wp = &b->wp;
	uint32_t flags = b->wp_rflags[e] | secflags;
	uint32_t next = b->next;
	uint8_t next_isa = *isa;
	int ret = 1;
	if (branch_pkt) {
		/* The branch packet says where it went. */
		if (s->rstack_on && (wp->flags & CSDI_INSNF_LINK) && wp->cls != CSDI_INSN_NORMAL)
			rstack_push(s, b->next, *isa);
	} else if (e && wp->cls != CSDI_INSN_NORMAL) {
		if (wp->cls == CSDI_INSN_DIRECT) {
			next = wp->target;
			next_isa = wp->target_isa;
		} else if (s->rstack_on && rstack_pop(s, &next, &next_isa)) {
			/* A taken indirect branch traced by an atom alone was
			 * predicted by the return stack. */
			flags |= CSD_RECF_RETURN_STACK;
		} else {
			ret = -1;
		}
		if (s->rstack_on && (wp->flags & CSDI_INSNF_LINK))
			rstack_push(s, b->next, *isa);
		dec->itstate = 0;
	}
	struct csd_record *r = csdi_flow_slot(dec);
	csdi_rec_range(r, flags, off, b->start, b->wp_addr, b->next, cycles, b->count,
		       csdi_rec_misc(*isa, e ? CSD_COND_PASS : CSD_COND_FAIL, dec->cfg.trace.trace_id));
	*addr = next;
	*isa = next_isa;
	return ret;
}

/* A branch packet in range mode when nothing is pending and the block
 * at the current address ends in a waypoint: one range record, as walk()
 * would make it. Returns 0 when walk() must handle it. */
static int fast_branch(csd_flow_decoder *dec, const struct csd_packet *p)
{
	if (dec->insn_mode || dec->open.active || dec->lost.active || dec->u.ptm.walk_active ||
	    csdi_flow_room(dec) < 2)
		return 0;
	int has_cc = (p->flags & CSD_PKTF_CYCLE_COUNT) != 0;
	uint32_t secflags = (dec->ns ? CSD_RECF_NS : 0) | (dec->hyp ? CSD_RECF_HYP : 0) |
			    (has_cc ? CSD_RECF_CYCLES : 0);
	uint32_t addr = dec->addr;
	uint8_t isa = dec->isa;
	return fast_waypoint(dec, &addr, &isa, 1, has_cc ? p->cycle_count : 0, secflags, p->offset, 1);
}

static void step_packet(csd_flow_decoder *dec)
{
	struct csd_packet *p = dec->pkt;
	struct csdi_ptm_state *s = &dec->u.ptm;
	struct csd_record *r;
	int has_cc = (p->flags & CSD_PKTF_CYCLE_COUNT) != 0;

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
	case CSD_PKT_ATOM:
		if (!dec->synced)
			break;
		while (s->atom_pos < p->atoms.num) {
			int e = (p->atoms.en >> s->atom_pos) & 1;
			/* A cycle count belongs to the (single) cycle-accurate atom. */
			if (!dec->addr_valid) {
				csdi_flow_lose(dec, 0, 0, 1, p->cycle_count, has_cc, p->offset);
			} else if (atom_fast(dec, e, p->cycle_count, has_cc, p->offset)) {
				/* done */
			} else if (!walk(dec, WALK_ATOM, e, 0, p->cycle_count, has_cc, p->offset)) {
				return; /* resume this atom later */
			}
			s->atom_pos++;
		}
		s->atom_pos = 0;
		break;
	case CSD_PKT_BRANCH:
		if (!dec->synced)
			break;
		if ((p->flags & CSD_PKTF_EXCEPTION) && p->exception) {
			r = csdi_flow_push(dec, CSD_REC_EXCEPTION, p->offset);
			r->exception = p->exception;
			r->addr = dec->addr_valid ? dec->addr : 0;
			r->target = p->addr;
			r->isa = p->isa;
			if (has_cc) {
				r->cycles = p->cycle_count;
				r->flags |= CSD_RECF_CYCLES;
			}
			set_target(dec, p);
			break;
		}
		if (dec->addr_valid) {
			if (!fast_branch(dec, p) && !walk(dec, WALK_BRANCH, 1, 0, p->cycle_count, has_cc, p->offset))
				return;
		} else {
			/* Where the branch was taken from is unknown; its cycles
			 * join the lost stretch. */
			csdi_flow_lose(dec, 0, 0, 0, p->cycle_count, has_cc, p->offset);
		}
		set_target(dec, p);
		break;
	case CSD_PKT_WAYPOINT:
		if (!dec->synced)
			break;
		if (dec->addr_valid) {
			if (!walk(dec, WALK_UPDATE, 0, p->addr, 0, 0, p->offset))
				return;
		}
		break;
	case CSD_PKT_EXCEPTION_RETURN:
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
		r->size = csdi_ptm_pkt_ts_known(dec->ptm); /* (chunk.c) */
		if (has_cc) {
			r->cycles = p->cycle_count;
			r->flags |= CSD_RECF_CYCLES;
		}
		break;
	case CSD_PKT_TRIGGER:
		csdi_flow_push(dec, CSD_REC_TRIGGER, p->offset);
		break;
	default:
		break;
	}
	dec->pkt_active = 0;
}

/*
 * Atom packets straight from the packet decoder's input (p, n bytes; byte
 * k at capture offset offs[k] or base + k): the common case of range mode,
 * without a struct csd_packet per packet. An atom the fast path cannot
 * take leaves its packet in dec->pkt for step_packet to finish
 * (from that atom on). Stops at the first byte that is not a whole atom
 * packet, or when the queue runs short. Returns the bytes used (the caller
 * skips them in the packet decoder).
 */
/*
 * A branch address packet met by the atom loop: what step_packet
 * does with it through fast_branch and set_target, when the packet has no
 * exception information and the block at the current address ends in a
 * waypoint (one range record); the packet decoder's address state is
 * updated as its own parse would. Returns the packet's length, 0 to leave
 * it to the packet decoder and the general step (nothing changed then).
 */
static inline __attribute__((always_inline)) size_t fast_branch_packet(csd_flow_decoder *dec, const uint8_t *p,
									 size_t n, uint32_t *addr, uint8_t *isa,
									 uint32_t secflags, uint64_t off,
									 struct csdi_ptm_branch *br)
{
	size_t len = csdi_ptm_branch_packet(dec->ptm, p, n, br);
	if (!len || !fast_waypoint(dec, addr, isa, 1, br->cycle_count, secflags, off, 1))
		return 0;
	csdi_ptm_branch_commit(dec->ptm, br);
	*addr = br->addr;
	*isa = br->isa;
	dec->itstate = 0;
	return len;
}

/* The branch packet at p (len bytes) as dec->pkt, for csd_flow_last_packet(). */
static __attribute__((noinline)) void branch_handover(csd_flow_decoder *dec, const uint8_t *p, size_t len,
						      uint64_t off, const struct csdi_ptm_branch *br)
{
	struct csd_packet *pk = dec->pkt;
	csdi_ptm_branch_fill(br, pk);
	pk->offset = off;
	pk->size = (uint32_t)len;
	memcpy(pk->raw, p, len);
	dec->have_pkt = 1;
	dec->pkt_active = 0;
	dec->u.ptm.atom_pos = 0;
}

/* Atom packets taken straight from the packet decoder's input (n bytes
 * at p; atom tables and offsets as csdi_ptm_pkt_front and
 * csdi_ptm_pkt_offsets give them): one range record per atom while
 * nothing is pending, and plain branch address packets between them.
 * Returns the bytes used. */
static size_t atom_run(csd_flow_decoder *dec, const uint8_t *p, size_t n, const uint8_t *num_tab,
		       const uint8_t *en_tab, const uint64_t *offs, uint64_t base)
{
	const int ca = (dec->cfg.trace.etmcr >> 12) & 1;
	const uint32_t secflags = (dec->ns ? CSD_RECF_NS : 0) | (dec->hyp ? CSD_RECF_HYP : 0) |
				  (ca ? CSD_RECF_CYCLES : 0);
	size_t i = 0, len = 0;
	unsigned num = 0, en = 0;
	uint32_t count = 0;
	/* The last packet taken was a branch packet (br), not an atom packet. */
	int last_branch = 0;
	struct csdi_ptm_branch br;
	/* Where execution is; written back at the end. */
	uint32_t addr = dec->addr;
	uint8_t isa = dec->isa;

	if (dec->insn_mode || !dec->synced || !dec->addr_valid || dec->open.active || dec->lost.active ||
	    dec->u.ptm.walk_active)
		return 0;
	if (ca) {
		/* One atom per packet, with its cycle count. */
		while (i < n && csdi_flow_room(dec) >= 2) {
			/* (len, num, en and count stay the last taken packet's,
			 * for the report at the end: a failed parse leaves them
			 * alone.) */
			const size_t alen = csdi_ptm_atom_packet(p + i, n - i, 1, num_tab, en_tab, &num, &en, &count);
			uint64_t off = offs ? offs[i] : base + i;
			if (!alen) {
				const size_t blen = fast_branch_packet(dec, p + i, n - i, &addr, &isa, secflags, off, &br);
				if (!blen)
					break;
				len = blen;
				last_branch = 1;
				i += len;
				continue;
			}
			len = alen;
			last_branch = 0;
			int rc = fast_waypoint(dec, &addr, &isa, en, count, secflags, off, 0);
			if (rc <= 0) {
				atom_handover(dec, p + i, len, off, num, en, count, ca, rc == 0, 0);
				if (rc < 0)
					dec->addr_valid = 0;
				i += len;
				goto out;
			}
			i += len;
		}
	} else {
		while (i < n && csdi_flow_room(dec) >= 8) {
			const uint8_t h = p[i];
			uint64_t off = offs ? offs[i] : base + i;
			if (!num_tab[h]) {
				const size_t blen = fast_branch_packet(dec, p + i, n - i, &addr, &isa, secflags, off, &br);
				if (!blen)
					break;
				len = blen;
				last_branch = 1;
				i += len;
				continue;
			}
			num = num_tab[h];
			last_branch = 0;
			en = en_tab[h];
			len = 1;
			for (unsigned j = 0; j < num; j++) {
				int rc = fast_waypoint(dec, &addr, &isa, (en >> j) & 1, 0, secflags, off, 0);
				if (rc <= 0) {
					/* rc < 0: the atoms after j are lost, which
					 * the general step reports. */
					unsigned from = rc == 0 ? j : j + 1;
					atom_handover(dec, p + i, 1, off, num, en, 0, ca, from < num, from);
					if (rc < 0)
						dec->addr_valid = 0;
					i++;
					goto out;
				}
			}
			i++;
		}
	}
	if (i) {
		/* csd_flow_last_packet() reports the last atom packet. */
		size_t last = i - len;
		if (last_branch)
			branch_handover(dec, p + last, len, offs ? offs[last] : base + last, &br);
		else
			atom_handover(dec, p + last, len, offs ? offs[last] : base + last, num, en, count, ca, 0, 0);
	}
out:
	dec->addr = addr;
	dec->isa = isa;
	return i;
}

/* One step of the active packet; its records are ready at once (PTM has
 * no cancel to wait for). */
static void step(csd_flow_decoder *dec)
{
	step_packet(dec);
	dec->qready = dec->qlen;
}

/*
 * PTM fast path: atom packets (most of a PTM trace) taken from the packet
 * decoder's input and applied by atom_run; between runs of
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
		size_t used = atom_run(dec, p, n, num, en, offs, base);
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
		struct csd_packet *pk = csdi_flow_spare_pkt(dec);
		if (csd_ptm_pkt_next(dec->ptm, pk) != CSD_OK)
			return took;
		csdi_flow_take_pkt(dec, pk);
		step(dec);
		took = 1;
		if (dec->pkt_active)
			return took;    /* produce() goes on with it */
	}
}

/* The pops past the known entries, into the object the saved states
 * share: once per run or step, none in the loops. */
static inline void rs_publish(struct csdi_ptm_state *s)
{
	if (s->rs_pops != s->rs_published) {
		s->rs_published = s->rs_pops;
		atomic_store_explicit(&s->rs_uses->count, s->rs_pops, memory_order_relaxed);
	}
}

static int ptm_run(csd_flow_decoder *dec)
{
	const int took = ptm_atom_run(dec);
	rs_publish(&dec->u.ptm);
	return took;
}

static void ptm_step(csd_flow_decoder *dec)
{
	step(dec);
	rs_publish(&dec->u.ptm);
}

static int ptm_feed(csd_flow_decoder *dec, const struct csd_bytes *in)
{
	return csd_ptm_pkt_feed(dec->ptm, in);
}

static int ptm_finish(csd_flow_decoder *dec)
{
	return csd_ptm_pkt_finish(dec->ptm);
}

static int ptm_next_packet(csd_flow_decoder *dec, struct csd_packet *pkt)
{
	return csd_ptm_pkt_next(dec->ptm, pkt);
}

static void ptm_sem(const csd_flow_decoder *dec, struct csdi_sem *s)
{
	const struct csdi_ptm_state *p = &dec->u.ptm;
	csdi_ptm_pkt_sem(dec->ptm, s);
	/* The atoms of the current packet still to be walked. */
	csdi_sem_put(s, p->atom_pos);
	/* The return stack is compared on its own (rs_get). */
	/* A walk suspended on a full queue goes on where it stopped. */
	csdi_sem_put(s, (uint64_t)p->walk_active);
	if (p->walk_active) {
		csdi_sem_put(s, (uint64_t)p->walk_kind);
		csdi_sem_put(s, (uint64_t)p->walk_atom);
		csdi_sem_put(s, p->walk_stop);
		csdi_sem_put(s, p->walk_count);
	}
	/* Left out: rstack_on (the configuration), walk_max_blocks,
	 * walk_cache_bytes and walk_cache_off (settings, the same in
	 * decoders made alike); the walk cache (it only shortens walks). */
}

static void ptm_ts_get(const csd_flow_decoder *dec, struct csdi_flow_ts *ts)
{
	ts->raw = csdi_ptm_pkt_ts(dec->ptm, &ts->known, &ts->gray);
}

static void ptm_ts_set(csd_flow_decoder *dec, uint64_t raw, unsigned known)
{
	csdi_ptm_pkt_set_ts(dec->ptm, raw, known);
}

/* Where later returns go: the entries known, newest first. */
static void ptm_rs_get(const csd_flow_decoder *dec, struct csdi_flow_rs *rs)
{
	const struct csdi_ptm_state *p = &dec->u.ptm;
	rs->n = p->rstack_n;
	for (unsigned i = 0; i < p->rstack_n; i++) {
		unsigned k = (p->rstack_top + CSDI_RSTACK - i) % CSDI_RSTACK;
		rs->addr[i] = p->rstack_addr[k];
		rs->isa[i] = p->rstack_isa[k];
	}
	/* The unknown entries below: the slots still standing for one, down
	 * to the first that a push has overwritten since. */
	rs->room = 0;
	while (p->rstack_on && rs->n + rs->room < CSDI_RSTACK &&
	       p->rstack_isa[(p->rstack_top + 2 * CSDI_RSTACK - rs->n - rs->room) % CSDI_RSTACK] == CSDI_RS_UNKNOWN)
		rs->room++;
	rs->uses = p->rs_uses;
	rs->used = p->rs_pops;
}

static void ptm_rs_fill(csd_flow_decoder *dec, const uint32_t *addr, const uint8_t *isa, unsigned n)
{
	struct csdi_ptm_state *p = &dec->u.ptm;
	struct csdi_flow_rs now;
	ptm_rs_get(dec, &now);
	const unsigned u = n < now.room ? n : now.room;
	for (unsigned i = 0; i < u; i++) {
		unsigned k = (p->rstack_top + 2 * CSDI_RSTACK - p->rstack_n - i) % CSDI_RSTACK;
		p->rstack_addr[k] = addr[i];
		p->rstack_isa[k] = isa[i];
	}
	p->rstack_n += u;
	/* Nothing unknown is left below. */
	for (unsigned i = 0; i < CSDI_RSTACK; i++)
		if (p->rstack_isa[i] == CSDI_RS_UNKNOWN)
			p->rstack_isa[i] = 0;
}

const struct csdi_flow_ops csdi_ptm_flow_ops = {
	.init = ptm_init,
	.fini = ptm_fini,
	.feed = ptm_feed,
	.finish = ptm_finish,
	.next_packet = ptm_next_packet,
	.run = ptm_run,
	.step = ptm_step,
	.sem = ptm_sem,
	.ts_get = ptm_ts_get,
	.ts_set = ptm_ts_set,
	.rs_get = ptm_rs_get,
	.rs_fill = ptm_rs_fill,
};
