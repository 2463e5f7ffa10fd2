/*
 * csdec_internal.h - library interfaces that are not part of the public API
 * (include/csdec.h): the benchmark, the tests and the fuzzers use them, and
 * they may change with the code. Not installed.
 *
 *   - Packets in brief: the packet decoders' batch form, 16 bytes a packet,
 *     for measuring the packet layer at speed (bench/csdec_bench.c) and for
 *     checking that the fast loops give the packets of the general parse
 *     (test_pkt_brief, the packet fuzzers).
 *   - CSD_FLOW_NO_MEMO, CSD_FLOW_MEMO_AT_ONCE: flow decoder flags
 *     (struct csd_flow_config `flags`) that turn the ETMv3 segment memo
 *     off, or on from the first header, so that tests and fuzzers can
 *     check that decoding with and without it gives the same records.
 */
#ifndef CSDEC_INTERNAL_H
#define CSDEC_INTERNAL_H

#include <string.h>

#include "csdec.h"

/* ETMv3 range mode: no memo of what runs of P-headers do at each code
 * position (etm3_memo.h). The records are the same; the speed and the
 * memory are not (BENCHMARKS.md). */
#define CSD_FLOW_NO_MEMO (1u << 1)
/* ETMv3 range mode: the segment memo from the first P-header, rather than
 * once the trace has shown it is not a small capture (etm3_memo.h,
 * SEG_MEMO_AFTER), so that the tests' and fuzzers' small inputs, decoded
 * with and without it, check it. (A high bit: the public flags grow from
 * the low ones.) */
#define CSD_FLOW_MEMO_AT_ONCE (1u << 30)

/** The atoms of one packet in brief (their number is `num_atoms`). */
struct csd_brief_atoms {
	uint16_t en;              /**< as in struct csd_atoms: at most 16 atoms (ETMv3 format-1 P-header) */
	uint8_t w;                /**< as in struct csd_atoms */
	uint8_t format;           /**< as in struct csd_atoms */
};

/** struct csd_pkt_brief `flags` bits 0-1. */
enum csd_brief_flag {
	CSD_BRIEF_ISA = 1u << 0,          /**< BRANCH: the instruction set is stated by this packet (CSD_PKTF_ISA); set in every ISYNC */
	CSD_BRIEF_CYCLE_COUNT = 1u << 1,  /**< `cycle_count` valid (CSD_PKTF_CYCLE_COUNT) */
};

/** BRANCH: the instruction set at the target; ISYNC: at its address (enum csd_isa). */
#define CSD_BRIEF_ISA_OF(b) (((unsigned)(b)->flags >> 2) & 7u)
/** BRANCH: the address bytes in the packet. */
#define CSD_BRIEF_ADDR_BYTES(b) ((unsigned)(b)->flags >> 5)
/** ISYNC: the reason (enum csd_sync_reason). */
#define CSD_BRIEF_REASON_OF(b) (((unsigned)(b)->flags >> 5) & 3u)
/** ISYNC: non-secure state (CSD_PKTF_NS). */
#define CSD_BRIEF_NS_OF(b) ((unsigned)(b)->flags >> 7)
/** TIMESTAMP (ETMv3): the timestamp, `addr` its low 32 bits and `cycle_count` its high ones. */
#define CSD_BRIEF_TIMESTAMP_OF(b) ((uint64_t)(b)->cycle_count << 32 | (b)->addr)
/** TIMESTAMP (ETMv3): the bits the packet gave (`ts_bits`, 1 - 64). */
#define CSD_BRIEF_TS_BITS_OF(b) (((unsigned)(b)->flags >> 2) + 1u)

/**
 * A packet in brief, 16 bytes: the kinds that make up most of a trace,
 * decoded, many per call (csd_etm3_pkt_next_brief(),
 * csd_ptm_pkt_next_brief()). The fields mean what they do in struct
 * csd_packet, packed: the capture offset is the call's base plus `offset`,
 * a branch's instruction set and address bytes are in `flags`
 * (CSD_BRIEF_ISA_OF, CSD_BRIEF_ADDR_BYTES), an I-sync's instruction set,
 * reason and security state too (CSD_BRIEF_ISA_OF, CSD_BRIEF_REASON_OF,
 * CSD_BRIEF_NS_OF; only I-syncs without context ID, Hyp, AltISA, LSiP or
 * data-only forms come in brief), an ETMv3 timestamp's value in `addr`
 * and `cycle_count` (CSD_BRIEF_TIMESTAMP_OF; no CSD_BRIEF_CYCLE_COUNT) and
 * its bits in `flags` (CSD_BRIEF_TS_BITS_OF), and `num_atoms` is zero but in
 * atom packets, so that atoms can be added up without looking at `type`.
 * The raw bytes are not kept (they are the `size` bytes of the input at
 * that offset). csd_pkt_brief_expand() gives the full packet.
 */
struct csd_pkt_brief {
	uint32_t offset;          /**< capture offset of the first byte, less the call's base */
	union {
		uint32_t addr;                /**< BRANCH: target address; ISYNC: the address */
		struct csd_brief_atoms atoms; /**< PHEADER / ATOM */
	};
	uint32_t cycle_count;     /**< with CSD_BRIEF_CYCLE_COUNT */
	uint8_t type;             /**< CSD_PKT_PHEADER, CSD_PKT_CYCLE_COUNT (ETMv3), CSD_PKT_TIMESTAMP (ETMv3), CSD_PKT_ATOM (PTM), CSD_PKT_BRANCH or CSD_PKT_ISYNC */
	uint8_t size;             /**< bytes in the packet */
	uint8_t num_atoms;        /**< PHEADER / ATOM: number of atoms (struct csd_atoms `num`); else 0 */
	uint8_t flags;            /**< bits 0-1: enum csd_brief_flag; BRANCH: bits 2-4 instruction set, 5-7 address bytes;
				       ISYNC: bits 2-4 instruction set, 5-6 reason, 7 non-secure; TIMESTAMP: bits 2-7 ts_bits - 1 */
};

/**
 * The full packet a brief one stands for, as csd_etm3_pkt_next() /
 * csd_ptm_pkt_next() would have given it, except that `raw` is left zero;
 * `base` is the one the call that gave it returned.
 * Errors: CSD_EINVAL (NULL argument).
 */
int csd_pkt_brief_expand(const struct csd_pkt_brief *brief, uint64_t base, struct csd_packet *pkt);

/**
 * Decode up to `cap` packets into out[] in brief, for speed: P-headers,
 * cycle counts, timestamps, branch address packets without exception
 * information and I-syncs of the plain form (see struct csd_pkt_brief), as long as they
 * follow one another whole in the bytes fed. Returns how
 * many (the next ones in the stream, in order) and sets *base, the capture
 * offset their `offset` fields count from; or 0 when the next packet is of
 * another kind, cut by the end of the fed bytes, or not yet synchronised:
 * take it with csd_etm3_pkt_next() (which also says CSD_EAGAIN /
 * CSD_EEOS), then call this again. Mixing both calls gives exactly the
 * packets of csd_etm3_pkt_next() alone.
 * Errors: CSD_EINVAL (dec or base NULL, or out NULL with cap > 0).
 */
int csd_etm3_pkt_next_brief(csd_etm3_pkt_decoder *dec, struct csd_pkt_brief *out, size_t cap, uint64_t *base);

/**
 * As csd_etm3_pkt_next_brief(), for atom packets, branch address
 * packets without exception information and I-syncs of the plain form.
 * Errors: CSD_EINVAL.
 */
int csd_ptm_pkt_next_brief(csd_ptm_pkt_decoder *dec, struct csd_pkt_brief *out, size_t cap, uint64_t *base);


/*
 * The semantic state of a decoder as a list of words (csd_flow_state_save,
 * src/chunk.c): everything that can change what later bytes decode to,
 * nothing that only makes decoding faster (caches, memo tables) or counts.
 * Two decoders with equal lists decode the same bytes to the same records.
 * `bad`: the decoder is not at a point where its state can be compared
 * (a packet begun but not ended); such a state equals none, which is
 * always safe (the caller then decodes on).
 */
struct csdi_sem {
	unsigned n;             /* words put so far */
	int bad;
	/* Saving: up to cap words into w (the rest only counted). Comparing
	 * (ref set): each word against ref[], differ set at the first that
	 * is not the same. */
	uint64_t *w;
	unsigned cap;
	const uint64_t *ref;
	unsigned ref_n;
	int differ;
};
/* A comparison of a decoder's words against the n saved in ref, and its
 * outcome: every word the same, as many, and the state comparable. */
static inline void csdi_sem_against(struct csdi_sem *s, const uint64_t *ref, unsigned n)
{
	memset(s, 0, sizeof(*s));
	s->ref = ref;
	s->ref_n = n;
}
static inline int csdi_sem_equal(const struct csdi_sem *s)
{
	return !s->bad && !s->differ && s->n == s->ref_n;
}
/* A saving of a decoder's words into w, room for cap of them (the rest
 * only counted in n). */
static inline void csdi_sem_into(struct csdi_sem *s, uint64_t *w, unsigned cap)
{
	memset(s, 0, sizeof(*s));
	s->w = w;
	s->cap = cap;
}
/* The low k bits (all for k >= 64). */
uint64_t csdi_low_bits(unsigned k);
/* Timestamp code raw, known in its low `known` bits, with serial_raw's
 * bits above them. */
static inline uint64_t csdi_ts_merge(uint64_t raw, unsigned known, uint64_t serial_raw)
{
	return (raw & csdi_low_bits(known)) | (serial_raw & ~csdi_low_bits(known));
}
/* A timestamp of a chunk's decoder (its code's low `known` bits known)
 * completed with the serial decoder's code above them (pkt_state.c). */
uint64_t csdi_ts_fill(uint64_t ts, unsigned known, uint64_t serial_raw, int gray);
static inline void csdi_sem_put(struct csdi_sem *s, uint64_t v)
{
	if (s->ref) {
		if (s->n >= s->ref_n || s->ref[s->n] != v)
			s->differ = 1;
	} else if (s->n < s->cap) {
		s->w[s->n] = v;
	}
	s->n++;
}
#endif
