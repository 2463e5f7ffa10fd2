/* etm3_memo.h - the ETMv3 range loop's segment memo (etm3_memo.c): what a run
 * of P-headers from one code position does, kept so that the next time it is
 * a table lookup and a few record copies. The lookup and the key, hash and
 * record helpers are inline here, as the range loop (etm3_flow.c) calls them
 * per segment; making, growing and building entries is in etm3_memo.c. */
#ifndef CSD_ETM3_MEMO_H
#define CSD_ETM3_MEMO_H

#include <stdint.h>
#include <string.h>

#include "flow.h"

/*
 * Segment memo (range mode). Code that runs again is traced again with the
 * same P-header bytes: a loop body, a function called from a loop. What a
 * run of up to SEG_LEN headers does, starting at one code position, is
 * therefore kept: the range records it closes, the open range it leaves,
 * where the walk ends, the W atoms left over. Applying it is a table
 * lookup and a few record copies instead of a branch per header, per atom
 * and per block, whose outcomes depend on the data and are mispredicted
 * (BENCHMARKS.md). Entries are made by the fast loop itself (build mode
 * of etm3_flow.c's run_range, on a scratch start state), so they cannot differ
 * from what it would do; what the start state adds (cycles waiting,
 * an open range that continues) is applied on top.
 */
#define SEG_LEN 32
#define SEG_WORDS (SEG_LEN / 8)
#define SEG_RECS 8
_Static_assert(SEG_RECS + 1 < CSDI_FLOW_QPRODUCE - CSDI_FLOW_QLOW, "a segment's records fit in the slack");
/* Entries: 2^13 to begin with (2 MiB, one huge page, made when first
 * touched), 2^14 once the working set shows it does not fit (seg_grow). */
#define SEG_SLOTS_LOG2 13
/* The table is made after this many P-headers in range mode: entries
 * pay for themselves only on code met again, and making one costs more
 * than running its headers once, so a small capture (an ETB/ETF buffer)
 * decodes without it; every header a long trace runs before the table
 * exists costs the full price, so the count is no higher than such a
 * capture needs. */
#define SEG_MEMO_AFTER 16384
#define SEG_SLOTS_LOG2_MAX 14
_Static_assert(SEG_SLOTS_LOG2_MAX <= 16, "an entry's index fits its successor hint (next)");

/* (20 bytes, so that an entry is four cache lines: the table's lines are
 * what a lookup waits for. Ranges whose fields do not fit these widths are
 * not kept: seg_build.) */
struct csdi_seg_range {
	uint32_t start, last;
	uint32_t cycles;
	uint16_t count;
	uint16_t flags;
	uint8_t isa, cond;      /* in this order: bytes 80-81 of the record (seg_record) */
	uint8_t end_delta;      /* end - last */
	uint8_t hdr;            /* the header (0..SEG_LEN-1) whose offset it has */
};

struct csdi_etm3_seg {
	uint64_t key;          /* start address, ISA, run length, context bits (seg_key) */
	uint64_t bytes[SEG_WORDS]; /* the headers, zero-padded */
	uint64_t gen;          /* image generation + 1 when made (0 = empty) */
	uint8_t len;           /* headers it covers (0: leave them to the loop) */
	uint8_t nrec;          /* range records it closes */
	uint8_t natoms;        /* instruction atoms (capped at 2: 0, 1 or more) */
	uint8_t hold;          /* records made before its last header with atoms */
	uint8_t hold_late;     /* that header is not its first with atoms */
	uint8_t last_atoms;    /* its last header has atoms */
	uint8_t indirect;      /* ends after a taken indirect branch */
	uint8_t open_active;   /* a range is open at the end */
	uint8_t isa;           /* where the walk ends */
	uint16_t next;         /* the entry looked up after it last time (a hint) */
	uint32_t addr;
	uint32_t prev_last;
	uint32_t last_cycles;  /* charged to the last instruction (without the start's W) */
	uint32_t pw;           /* W atoms not yet charged at the end (without the start's) */
	struct csdi_seg_range open;
	struct csdi_seg_range rec[SEG_RECS];
};
_Static_assert(sizeof(struct csdi_etm3_seg) == 256, "an entry is four cache lines");

/* What of the start state a memo entry depends on, besides the headers. */
static inline uint64_t seg_ctx(const csd_flow_decoder *dec)
{
	return (uint64_t)(dec->ns & 1) << 41 | (uint64_t)(dec->hyp & 1) << 42 | (uint64_t)dec->open_cond << 48;
}

/* Key layout: address in bits 0-31, ISA 32-35, ext 40, NS 41, Hyp 42,
 * the open range's condition 48-55, run length 56-62. */
_Static_assert(SEG_LEN < 128, "the run length fits its key bits");
/* (len 64 bits wide: where the caller spills it, a 32-bit store read back
 * by a 64-bit load is not forwarded either.) */
static inline uint64_t seg_key(uint64_t ctx, uint32_t addr, uint8_t isa, uint64_t len, int ext)
{
	return ctx | addr | (uint64_t)(isa & 15) << 32 | (uint64_t)ext << 40 | (uint64_t)len << 56;
}

/* The up to SEG_LEN bytes at h (n available) that have the P-header form
 * 1xxxxxx0, into bytes (zero beyond them); returns how many. */
static inline unsigned seg_bytes(const uint8_t *h, size_t n, uint64_t *bytes)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	if (n >= SEG_LEN) {
		unsigned len = 0;
		for (unsigned w = 0; w < SEG_WORDS; w++) {
			uint64_t x;
			memcpy(&x, h + 8 * w, 8);
			/* Non-zero in each byte that is not of the form. */
			const uint64_t m = (x & 0x8181818181818181ull) ^ 0x8080808080808080ull;
			if (m) {
				const unsigned k = (unsigned)__builtin_ctzll(m) / 8;
				bytes[w] = k ? x & (~0ull >> (64 - 8 * k)) : 0;
				return len + k;
			}
			bytes[w] = x;
			len += 8;
		}
		return len;
	}
#endif
	unsigned len = 0;
	while (len < n && len < SEG_LEN && (h[len] & 0x81) == 0x80) {
		bytes[len / 8] |= (uint64_t)h[len] << (8 * (len % 8));
		len++;
	}
	return len;
}

/* Record r from a memo entry's range rs at capture offset off. */
static inline __attribute__((always_inline)) void seg_record(struct csd_record *r, const struct csdi_seg_range *rs,
							       uint64_t off, uint64_t tid_misc)
{
	/* isa and cond as one 16-bit load, in place (little-endian; the
	 * byte order does not matter elsewhere). */
	uint16_t isa_cond;
	memcpy(&isa_cond, &rs->isa, 2);
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	const uint64_t misc = (uint64_t)isa_cond | tid_misc;
#else
	(void)isa_cond;
	const uint64_t misc = csdi_rec_misc(rs->isa, rs->cond, (uint8_t)(tid_misc >> 32));
#endif
	csdi_rec_range(r, rs->flags, off, rs->start, rs->last, rs->last + rs->end_delta, rs->cycles, rs->count, misc);
}

static inline int seg_match(const struct csdi_etm3_seg *g, uint64_t key, const uint64_t *bytes, uint64_t gen)
{
	uint64_t d = (g->key ^ key) | (g->gen ^ gen);
	for (unsigned w = 0; w < SEG_WORDS; w++) {
		uint64_t b = bytes[w];
#ifdef __GNUC__
		/* A word at a time, as seg_bytes() stores them: a vector load
		 * of two words just stored is not forwarded from the stores
		 * and waits for them to retire, on every lookup. */
		__asm__("" : "+r"(b));
#endif
		d |= g->bytes[w] ^ b;
	}
	return d == 0;
}

static inline unsigned seg_slot(uint64_t key, const uint64_t *bytes, unsigned log2)
{
	uint64_t x = bytes[0] ^ (key * 0x9e3779b97f4a7c15ull);
	for (unsigned w = 1; w < SEG_WORDS; w++)
		x ^= bytes[w] * 0xc2b2ae3d27d4eb4full;
	x *= 0xff51afd7ed558ccdull;
	return (unsigned)(x >> (64 - log2)) & ~1u;
}

/* A zeroed memo table of 2^log2 entries; NULL if memory is short. */
struct csdi_etm3_seg *csdi_etm3_memo_new(unsigned log2);
void csdi_etm3_memo_free(struct csdi_etm3_seg *t, unsigned log2);
/* Twice the entries when the working set does not fit (see etm3_memo.c);
 * resets the counts either way. */
void csdi_etm3_memo_grow(struct csdi_etm3_state *s);
/* The range loop in build mode (etm3_flow.c): the len headers at h from
 * the decoder's state, *aborted set where a header needs the general way. */
typedef size_t (*csdi_etm3_memo_run)(csd_flow_decoder *dec, const uint8_t *h, size_t len,
				     const struct csd_atoms *tab, const uint8_t *ph, int *aborted);
/* Make entry g for the len headers h (key, bytes, ext: as looked up) by
 * running `run` from a scratch state; the decoder's state is put back. */
void csdi_etm3_memo_build(csd_flow_decoder *dec, struct csdi_etm3_seg *g, const uint8_t *h, unsigned len,
			  const struct csd_atoms *tab, const uint8_t *ph, uint64_t key, const uint64_t *bytes, int ext,
			  csdi_etm3_memo_run run);

#endif
