/* flow.h - internals of the instruction-flow decoder. Three layers, each
 * using only the ones below it:
 *   flow.c        the public face (csd_flow_*): the pull loop, which drives
 *                 a protocol through its operations table (csdi_flow_ops);
 *   etm3_flow.c,  the protocols' state machines and fast paths, over their
 *   ptm_flow.c    packet decoders;
 *   flow_core.c   what both share: the record queue, the open range, lost
 *                 stretches and the block cache. */
#ifndef CSD_FLOW_H
#define CSD_FLOW_H

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "arm_isa.h"
#include "csdec.h"
#include "image.h"
#include "pkt_input.h"

/* Records queued between flow_next() calls. Producers check
 * csdi_flow_room() before each block so the queue never overflows. */
#define CSDI_FLOW_QCAP 256
/* ETMv3 holds records back for a possible cancel; only when fewer than this
 * many slots are left is everything released regardless. Producers stop
 * well before (a P-header yields at most ~20 records). */
#define CSDI_FLOW_QLOW 32
#define CSDI_FLOW_QPRODUCE (CSDI_FLOW_QLOW + 48)
/* Instructions per cached block; longer straight runs are chained. */
#define CSDI_BLOCK_MAX 64
/* Block cache entries: CSDI_BLOCK_CACHE_MIN to begin with, CSDI_BLOCK_CACHE
 * once the misses reach twice that: a small capture's blocks fit the small
 * table, and touch few pages (flow.c, cache_fit). */
#define CSDI_BLOCK_CACHE 16384
#define CSDI_BLOCK_CACHE_MIN 1024
/* Give up walking after this many blocks without reaching a waypoint
 * (a corrupt image or trace could otherwise walk for a very long time). */
#define CSDI_WALK_MAX_BLOCKS (1u << 16)
/* A PTM walk that has gone through this many blocks without a waypoint
 * asks the walk cache (walk_cache.h) where it ends; so does any walk
 * starting in code the cache has learnt. */
#define CSDI_WALK_CACHE_AFTER 4
/* Memory the walk cache of a PTM decoder may use: 8 KiB per 64 KiB of A32
 * code walked, 20 KiB per 64 KiB of T32 (66 MB of A32, 27 MB of T32). */
#define CSDI_WALK_CACHE_BYTES (8u << 20)

enum csdi_block_end {
	CSDI_BLOCK_WAYPOINT = 1, /* last instruction is a waypoint: `wp` */
	CSDI_BLOCK_LIMIT,        /* CSDI_BLOCK_MAX instructions, none a waypoint */
	CSDI_BLOCK_NOMEM,        /* the instruction at `next` is not readable */
	CSDI_BLOCK_UNSUPPORTED,  /* the instruction set cannot be followed */
};

/* Straight-line instructions from `start` up to and including the first
 * waypoint (as the protocol defines it). */
struct csdi_block {
	uint32_t start;
	uint32_t next;          /* address after the last instruction */
	uint32_t wp_addr;       /* WAYPOINT: address of the waypoint */
	uint64_t gen;           /* image generation + 1 when filled (0 = empty) */
	uint64_t wide;          /* bit i: instruction i is 4 bytes */
	struct csdi_insn wp;    /* WAYPOINT: the waypoint */
	uint32_t wp_rflags[2];  /* WAYPOINT: record flags of the waypoint not taken [0] / taken [1] */
	uint8_t isa;
	uint8_t end;            /* enum csdi_block_end */
	uint8_t count;          /* instructions, the waypoint included */
};

/* Instructions being gathered into one range record. */
struct csdi_open_range {
	int active;
	uint32_t start, last, end;
	uint32_t count;
	uint64_t cycles;
	int has_cycles;
	uint8_t isa;
	uint64_t offset;
};

/* Atoms spent where the instructions cannot be known: from `addr`, which
 * the image has no code for (addr_known), or from an unknown address. */
struct csdi_lost {
	int active;
	int addr_known;
	uint32_t addr;
	uint32_t count;
	uint64_t cycles;
	int has_cycles;
	uint8_t isa;            /* at the start of the stretch */
	uint64_t offset;
};

#define CSDI_RSTACK 16
#define CSDI_RS_UNKNOWN 0xFF    /* rstack_isa of a slot standing for an unknown entry */

/*
 * How often a decoder has popped its return stack when it held none of
 * the entries it knows while entries from before its start could lie
 * below them (a decoder that started at a cut): shared between the
 * decoder and the states saved from it (chunk.c), so that a join can see
 * whether the decoder needed such an entry after the state's point.
 * Counted, not flagged, so that a use before the point and one after it
 * are told apart; the decoder counts in its own state and copies the
 * count here after each run and step (rs_publish, ptm_flow.c).
 */
struct csdi_rs_uses {
	atomic_uint refs;
	atomic_uint_fast64_t count;
};

static inline void csdi_rs_uses_ref(struct csdi_rs_uses *u)
{
	if (u)
		atomic_fetch_add_explicit(&u->refs, 1, memory_order_relaxed);
}

static inline void csdi_rs_uses_unref(struct csdi_rs_uses *u)
{
	if (u && atomic_fetch_sub_explicit(&u->refs, 1, memory_order_acq_rel) == 1)
		free(u);
}

/* A decoder's return stack as chunk.c compares and completes it: the n
 * entries it knows, newest first, above at most `room` entries from before
 * its start that it does not know (0: nothing lies below them). */
struct csdi_flow_rs {
	unsigned n, room;
	uint32_t addr[CSDI_RSTACK];
	uint8_t isa[CSDI_RSTACK];
	struct csdi_rs_uses *uses;  /* the decoder's (not referenced) */
	uint64_t used;              /* the decoder's count of them then */
};

struct csdi_walk_cache;

struct csdi_ptm_state {
	uint32_t atom_pos;        /* next atom of the current packet */
	int rstack_on;            /* ETMCR[29] */
	uint32_t rstack_addr[CSDI_RSTACK];
	uint8_t rstack_isa[CSDI_RSTACK];
	unsigned rstack_top, rstack_n;
	/* Slots below the known entries whose rstack_isa is
	 * CSDI_RS_UNKNOWN stand for entries from before the decoder's start
	 * (all of them at the start: csdi_flow_rs): a push past the depth
	 * overwrites the oldest such slot as it drops that entry, and pops
	 * leave them alone, so they need no work of their own. */
	struct csdi_rs_uses *rs_uses;  /* with rstack_on */
	/* Pops past the known entries onto such a slot, and how many of
	 * them rs_uses has been told (after each run and step). */
	uint64_t rs_pops, rs_published;
	/* A suspended walk (instruction mode, queue full). */
	int walk_active;
	int walk_kind;
	int walk_atom;
	uint32_t walk_stop;
	uint32_t walk_count;
	uint32_t walk_max_blocks;  /* CSDI_WALK_MAX_BLOCKS (tests may lower it) */
	/* Range mode: the memory limit of the walk cache (csd_flow_decoder's
	 * walk_cache), 0 for the default. */
	size_t walk_cache_bytes;
	int walk_cache_off;       /* tests: walk block by block only */
};

struct csdi_etm3_state {
	uint64_t pending_w;       /* W atoms not yet attributed to an instruction */
	int wait_branch;          /* an indirect branch was taken: the address packet follows */
	int pending_insn;         /* instruction mode: `held` not yet queued (may be cancelled) */
	struct csd_record held;
	uint32_t prev_last;       /* open range: address of the instruction before `last` */
	uint64_t last_cycles;     /* range mode: cycles charged to the last instruction */
	int cancelled;            /* the last instruction was taken back already */
	/* Range mode cursor: instruction blk_idx of block blk (which starts at
	 * blk_start) is at address cur. */
	const struct csdi_block *blk;
	uint32_t blk_start, cur;
	unsigned blk_idx;
	int data_only;
	int await_gap;            /* a non-periodic I-sync without a cycle count: the gap's
				   cycle count packet may follow */
	uint64_t gap_w;           /* W atoms before that I-sync */
	/* Range mode: outcomes of short runs of P-headers from a code
	 * position (etm3_flow.c, "Segment memo"); NULL without one. */
	struct csdi_etm3_seg *segs;
	uint64_t seg_wait;        /* P-headers to run before the table is made */
	unsigned seg_log2;        /* the table has 2^seg_log2 entries */
	uint64_t seg_lookups, seg_misses; /* since it was made (seg_grow) */
	uint16_t seg_prev;        /* the last entry met, across calls: its successor hint
				   is the next lookup's first try */
	/* Data trace (ETMCR[3:2]): etm3_data.c; NULL when off. */
	struct csdi_etm3_data *data;
};

/* A decoder's timestamp as traced, `raw` (the Gray code when `gray`), of
 * which timestamp packets have given the low `known` bits since the
 * decoder started; the bits above are 0. Timestamp packets restate only
 * the low bits that changed, so decoders that started at different points
 * differ in the bits one of them was never given (chunk.c). */
struct csdi_flow_ts {
	uint64_t raw;
	unsigned known;
	int gray;
};

/*
 * A protocol's operations, chosen by csd_flow_new: flow.c calls the
 * protocol through these only, so that it depends on the protocols and
 * they on flow_core.c, never the other way.
 */
struct csdi_flow_ops {
	/* Make the packet decoder and the protocol state (CSD_OK or an
	 * error); fini releases both (also after a failed init). */
	int (*init)(csd_flow_decoder *dec);
	void (*fini)(csd_flow_decoder *dec);
	/* The packet decoder's feed, finish and next. */
	int (*feed)(csd_flow_decoder *dec, const struct csd_bytes *in);
	int (*finish)(csd_flow_decoder *dec);
	int (*next_packet)(csd_flow_decoder *dec, struct csd_packet *pkt);
	/* The fast path: packets taken straight from the packet decoder's
	 * input, with records made ready as step would; 0 if it took none. */
	int (*run)(csd_flow_decoder *dec);
	/* One step of dec->pkt, and the records that makes ready. */
	void (*step)(csd_flow_decoder *dec);
	/* The protocol's part of the semantic state (struct csdi_sem):
	 * its packet decoder's and its own (chunk.c adds the rest). */
	void (*sem)(const csd_flow_decoder *dec, struct csdi_sem *s);
	/* The packet decoder's timestamp (left out of sem), and setting it:
	 * raw (within the timestamp size) with its low `known` bits. */
	void (*ts_get)(const csd_flow_decoder *dec, struct csdi_flow_ts *ts);
	void (*ts_set)(csd_flow_decoder *dec, uint64_t raw, unsigned known);
	/* The return stack (left out of sem; NULL without one): rs_get as
	 * csdi_flow_rs; rs_fill puts below the known entries those of
	 * addr/isa (newest first, n of them) that are still there (up to
	 * the room rs_get gives), and leaves nothing unknown below. */
	void (*rs_get)(const csd_flow_decoder *dec, struct csdi_flow_rs *rs);
	void (*rs_fill)(csd_flow_decoder *dec, const uint32_t *addr, const uint8_t *isa, unsigned n);
};
extern const struct csdi_flow_ops csdi_etm3_flow_ops;
extern const struct csdi_flow_ops csdi_ptm_flow_ops;

/* The decoder's copy of its struct csd_flow_config, with the trace
 * config it points to copied in (members past the caller's size zero). */
struct csdi_flow_cfg {
	struct csd_trace_config trace;
	csd_image *image;
	uint32_t flags;
};

struct csd_flow_decoder {
	struct csdi_flow_cfg cfg;
	const struct csdi_flow_ops *ops;
	int insn_mode;
	int finished;
	int dead;                 /* a reset failed: only csd_flow_free() is left */
	csd_etm3_pkt_decoder *etm3;
	csd_ptm_pkt_decoder *ptm;
	/* The packet being processed / last processed: one of pkts[], the
	 * other taking the next attempt (a packet decoder that runs out of
	 * input may leave its output half written). */
	struct csd_packet *pkt;
	struct csd_packet pkts[2];
	int pkt_active;           /* pkt still has work (atoms) */
	int have_pkt;

	/* Architectural state the trace gives us. */
	int synced;               /* an I-sync was seen since the last loss */
	int addr_valid;           /* addr/isa say where the next instruction is */
	uint32_t addr;
	uint8_t isa;
	uint8_t itstate;
	int ns, hyp;
	uint32_t context_id;
	uint8_t vmid;
	int have_context_id, have_vmid;
	uint32_t wp_flags;        /* csdi_insn flags that make a waypoint */

	struct csdi_open_range open;
	/* Result of the last instruction of a range closed by something other
	 * than its own atom: ETMv3 closes ranges at failed instructions, so
	 * an open range passed; under PTM it is not known. */
	uint8_t open_cond;
	struct csdi_lost lost;

	/* Queue: qlen records from qhead; the first qready may be delivered
	 * (ETMv3 holds back the newest until the next packet, which may
	 * cancel an instruction); qmark = release point after this packet. */
	struct csd_record q[CSDI_FLOW_QCAP];
	unsigned qhead, qlen, qready, qmark;
	int qmark_valid;           /* the current packet ends the hold */
	uint64_t delivered;        /* records delivered so far (csd_flow_state_records) */

	struct csdi_block *cache;
	uint32_t cache_mask;      /* entries - 2: the first way of a set */
	uint32_t cache_misses;    /* since the cache had its size */
	uint64_t img_gen;         /* image generation + 1, as blocks are stamped */
	struct csdi_image_window img_win; /* this decoder's place in the (maybe shared) image */
	/* PTM range mode: where walks through long straight-line code end
	 * (made when first needed; walk_cache.h); NULL otherwise. Block
	 * fills use it to skip decoding code it has learnt. */
	struct csdi_walk_cache *walk_cache;

	union {
		struct csdi_ptm_state ptm;
		struct csdi_etm3_state etm3;
	} u;
};

/* Zero a record with a few vector stores, as csdi_pkt_clear (pkt_input.h)
 * does a packet: a memset() of the whole size may become `rep stos`, which
 * costs more than the rest of a range record's work. */
static inline void csdi_rec_clear(struct csd_record *r)
{
	memset(r, 0, 64);
	memset((unsigned char *)r + 64, 0, sizeof(*r) - 64);
}

/* The record bytes 80-87 of csdi_rec_range(): isa, cond, reason 0, vmid 0,
 * id, padding, exception 0 (little-endian). */
static inline uint64_t csdi_rec_misc(uint8_t isa, uint8_t cond, uint8_t id)
{
	return (uint64_t)isa | (uint64_t)cond << 8 | (uint64_t)id << 32;
}

/*
 * Write range record r whole. Where GCC's vector extensions are there (on
 * little-endian machines), in six 16-byte stores made in registers: the
 * clear and then the fields were about 17 stores a record, which bound
 * the range loops by their stores (gen-etm3 flow 4 % faster with six,
 * though the instructions are about as many). The layout this relies on
 * is checked here. misc: csdi_rec_misc(isa, cond, id).
 */
static inline __attribute__((always_inline)) void csdi_rec_range(struct csd_record *r, uint32_t flags,
								   uint64_t offset, uint32_t start, uint32_t last,
								   uint32_t end, uint64_t cycles, uint32_t count,
								   uint64_t misc)
{
#if defined(__GNUC__) && defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	_Static_assert(offsetof(struct csd_record, flags) == 4 && offsetof(struct csd_record, offset) == 8 &&
			       offsetof(struct csd_record, addr) == 16 && offsetof(struct csd_record, end) == 24 &&
			       offsetof(struct csd_record, last) == 32 && offsetof(struct csd_record, cycles) == 48 &&
			       offsetof(struct csd_record, count) == 64 && offsetof(struct csd_record, size) == 72 &&
			       offsetof(struct csd_record, isa) == 80 && offsetof(struct csd_record, cond) == 81 &&
			       offsetof(struct csd_record, id) == 84 && offsetof(struct csd_record, exception) == 86 &&
			       offsetof(struct csd_record, context_id) == 88 && offsetof(struct csd_record, error) == 96 &&
			       sizeof(struct csd_record) == 104,
		       "struct csd_record as csdi_rec_range() writes it");
	typedef uint64_t csdi_v2u64 __attribute__((vector_size(16)));
	const csdi_v2u64 w0 = { CSD_REC_RANGE | (uint64_t)flags << 32, offset };
	const csdi_v2u64 w1 = { start, end };
	const csdi_v2u64 w2 = { last, 0 };
	const csdi_v2u64 w3 = { cycles, 0 };
	const csdi_v2u64 w4 = { count, 0 };
	const csdi_v2u64 w5 = { misc, 0 };
	unsigned char *const b = (unsigned char *)r;
	memcpy(b, &w0, 16);
	memcpy(b + 16, &w1, 16);
	memcpy(b + 32, &w2, 16);
	memcpy(b + 48, &w3, 16);
	memcpy(b + 64, &w4, 16);
	memcpy(b + 80, &w5, 16);
	r->error = NULL;
#else
	csdi_rec_clear(r);
	r->type = CSD_REC_RANGE;
	r->flags = flags;
	r->offset = offset;
	r->addr = start;
	r->end = end;
	r->last = last;
	r->cycles = cycles;
	r->count = count;
	r->isa = (uint8_t)misc;
	r->cond = (uint8_t)(misc >> 8);
	r->id = (uint8_t)(misc >> 32);
#endif
}

/* Record r, every member, into a semantic state. */
static inline void csdi_sem_rec(struct csdi_sem *s, const struct csd_record *r)
{
	csdi_sem_put(s, (uint64_t)r->type | (uint64_t)r->flags << 32);
	csdi_sem_put(s, r->offset);
	csdi_sem_put(s, r->addr);
	csdi_sem_put(s, r->end);
	csdi_sem_put(s, r->last);
	csdi_sem_put(s, r->target);
	csdi_sem_put(s, r->cycles);
	csdi_sem_put(s, r->timestamp);
	csdi_sem_put(s, (uint64_t)r->count | (uint64_t)r->opcode << 32);
	csdi_sem_put(s, r->size);
	csdi_sem_put(s, (uint64_t)r->isa | (uint64_t)r->cond << 8 | (uint64_t)r->reason << 16 |
				(uint64_t)r->vmid << 24 | (uint64_t)r->id << 32 | (uint64_t)r->exception << 40);
	csdi_sem_put(s, r->context_id);
	/* Reasons are static strings: the same reason is the same pointer. */
	csdi_sem_put(s, (uint64_t)(uintptr_t)r->error);
}

/* ---- flow_core.c ---- */
/* Append a record (after flushing the open range and lost stretch). */
struct csd_record *csdi_flow_push(csd_flow_decoder *dec, uint32_t type, uint64_t offset);
/* Queue slots left. */
static inline unsigned csdi_flow_room(const csd_flow_decoder *dec)
{
	return CSDI_FLOW_QCAP - dec->qlen;
}
/* The next queue slot, not cleared (the caller has checked the room):
 * for the fast paths, which write range records whole (csdi_rec_range). */
static inline struct csd_record *csdi_flow_slot(csd_flow_decoder *dec)
{
	struct csd_record *r = &dec->q[(dec->qhead + dec->qlen) % CSDI_FLOW_QCAP];
	dec->qlen++;
	return r;
}
/* Queue an instruction record without flushing anything. */
struct csd_record *csdi_flow_push_raw(csd_flow_decoder *dec, uint32_t type, uint64_t offset);
/* Drop queued record k (counted from the head). */
void csdi_flow_remove(csd_flow_decoder *dec, unsigned k);
/* Close the open range as a record (cond / flags of its last instruction). */
void csdi_flow_close_range(csd_flow_decoder *dec, uint8_t cond, uint32_t flags);
/* Add `count` instructions [start .. last] (end = after last) to the open range. */
void csdi_flow_range_add(csd_flow_decoder *dec, uint32_t start, uint32_t last, uint32_t end, uint32_t count,
			 uint64_t offset);
/* Record atoms spent where instructions are unknown: addr_known, at addr,
 * which has no code in the image (a new stretch: execution reached addr
 * from a known place); else at an unknown address (added to the stretch
 * in progress, if any). */
void csdi_flow_lose(csd_flow_decoder *dec, int addr_known, uint32_t addr, uint32_t atoms, uint64_t cycles,
		    int has_cycles, uint64_t offset);
/* Emit the pending open range and lost stretch. */
void csdi_flow_flush(csd_flow_decoder *dec);
/* Decode the block at addr into cache slot b. */
void csdi_flow_block_fill(csd_flow_decoder *dec, struct csdi_block *b, uint32_t addr, uint8_t isa);
/* A miss in the two ways at b: the block made in the first, whose entry
 * moves to the second. */
const struct csdi_block *csdi_flow_block_miss(csd_flow_decoder *dec, struct csdi_block *b, uint32_t addr,
					      uint8_t isa);
/* The set of the block starting at addr in isa (before the mask). */
static inline uint32_t csdi_flow_block_hash(uint32_t addr, uint8_t isa)
{
	return (addr >> 1) ^ (addr >> 15) ^ isa;
}
/* The block starting at addr in isa (cached, two ways per set: direct
 * mapping refilled TC2's kernel blocks over and over; a hit is a few
 * operations, which is why this is inline). A block's slot may be given
 * to another block by any later lookup. */
static inline const struct csdi_block *csdi_flow_block(csd_flow_decoder *dec, uint32_t addr, uint8_t isa)
{
	struct csdi_block *b = &dec->cache[csdi_flow_block_hash(addr, isa) & dec->cache_mask];
	if (b->gen == dec->img_gen && b->start == addr && b->isa == isa)
		return b;
	if (b[1].gen == dec->img_gen && b[1].start == addr && b[1].isa == isa)
		return b + 1;
	return csdi_flow_block_miss(dec, b, addr, isa);
}
/* Decode the instruction at addr; returns its size or a negative error. */
int csdi_flow_decode(csd_flow_decoder *dec, uint32_t addr, uint8_t isa, struct csdi_insn *insn);
/* Record flags describing a waypoint / branch instruction. */
uint32_t csdi_flow_branch_flags(const struct csdi_insn *insn, int taken);
/* Emit a CONTEXT record if anything changed (or `force`). */
void csdi_flow_context(csd_flow_decoder *dec, uint64_t offset, int force);

/* The buffer the next packet is decoded into: not dec->pkt, which stays
 * the last packet taken (csd_flow_last_packet) until there is a new one
 * (a packet decoder that finds none may leave its output half written). */
static inline struct csd_packet *csdi_flow_spare_pkt(csd_flow_decoder *dec)
{
	return dec->pkt == &dec->pkts[0] ? &dec->pkts[1] : &dec->pkts[0];
}

/* Packet pk, just decoded into the spare buffer, is the one to process
 * now. Records before a packet that traces instructions or
 * resynchronises are final once it is processed (ETMv3: a later cancel
 * bit can only refer to its instructions); branch packets do not end
 * the hold, as several may follow one instruction, the last one with the
 * cancel bit. */
static inline void csdi_flow_take_pkt(csd_flow_decoder *dec, struct csd_packet *pk)
{
	dec->pkt = pk;
	dec->have_pkt = 1;
	dec->pkt_active = 1;
	dec->qmark_valid = (pk->type == CSD_PKT_PHEADER && pk->atoms.num) || pk->type == CSD_PKT_ISYNC ||
			   pk->type == CSD_PKT_NOSYNC || pk->type == CSD_PKT_ERROR || pk->type == CSD_PKT_TRUNCATED;
	if (dec->qmark_valid)
		dec->qmark = dec->qlen;
}

/* ---- ptm_flow.c / etm3_flow.c (test hooks) ---- */
/* Tests: the walk cache's memory limit (max_bytes) or, with on = 0, no
 * walk cache; before the first record is asked for. These two do nothing
 * to an ETMv3 decoder. */
void csdi_ptm_flow_walk_cache(csd_flow_decoder *dec, int on, size_t max_bytes);
/* Tests: walks give up after `blocks` blocks instead of
 * CSDI_WALK_MAX_BLOCKS (1 .. CSDI_WALK_MAX_BLOCKS), so that small images
 * reach the limit. */
void csdi_ptm_flow_walk_limit(csd_flow_decoder *dec, uint32_t blocks);
#endif
