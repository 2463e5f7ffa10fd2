/* pkt_input.h - the byte input of a packet decoder: runs of one source's
 * bytes, reassembly of packets split across runs, and the search for the
 * A-sync pattern shared by ETMv3 and PTM (internal). */
#ifndef CSD_PKT_INPUT_H
#define CSD_PKT_INPUT_H

#include <string.h>

#include "csdec_internal.h"

/* Zero a packet with two fixed-size memsets, which become a few vector
 * stores; one memset of the whole struct may become `rep stos`, which
 * costs more than the rest of a short packet's work. The packet decoders
 * and the flow decoders' fast paths all clear packets with this. */
static inline void csdi_pkt_clear(struct csd_packet *p)
{
	memset(p, 0, 64);
	memset((unsigned char *)p + 64, 0, sizeof(*p) - 64);
}

/* Longest packet either protocol can produce, plus room: ETMv3 LSiP I-sync
 * with cycle count and a 6-byte address is 21 bytes. */
#define CSDI_STAGE_MAX 48
/* Most packets one csd_*_pkt_next_brief() call gives: with at most 15
 * bytes each, their offsets stay within 32 bits of the first one's. */
#define CSDI_BRIEF_MAX (1u << 28)

struct csdi_input {
	struct csd_bytes run;   /* bytes of the current feed */
	size_t pos;             /* run bytes consumed */
	int have_run;           /* a run was fed and not yet used up */
	int finished;           /* end of stream declared */
	/* Bytes of a packet that began in an earlier run. */
	uint8_t stage[CSDI_STAGE_MAX];
	uint64_t stage_off[CSDI_STAGE_MAX];
	size_t stage_len;       /* bytes kept from earlier runs */
	size_t view_len;        /* stage_len + run bytes copied in by the last view */
	/* A-sync search state (unsynchronised decoder). */
	uint64_t skipped;       /* bytes passed over, not yet reported (64-bit: captures pass 4 GiB) */
	uint64_t skip_off;
	uint8_t skip_raw[CSD_PKT_RAW_MAX];
	uint64_t zeros;         /* consecutive 0x00 bytes seen */
	uint64_t zero_off;      /* offset of the first of them */
	int async_ready;        /* an A-sync was found; report it next */
	uint64_t async_len;
};

/* A plain I-sync (address, cycle count if has_cc, instruction set isa
 * 0-7, reason 0-3, non-secure ns) in brief into *o (zeroed before). The
 * one encoding of both protocols' I-sync items, which
 * csd_pkt_brief_expand() undoes for either. */
static inline void csdi_isync_brief_fill(struct csd_pkt_brief *o, uint32_t addr, uint32_t cc, int has_cc,
					 unsigned isa, unsigned reason, int ns)
{
	o->type = CSD_PKT_ISYNC;
	o->addr = addr;
	o->cycle_count = cc;
	o->flags = (uint8_t)(CSD_BRIEF_ISA | (has_cc ? CSD_BRIEF_CYCLE_COUNT : 0) | isa << 2 | reason << 5 |
			     (ns ? 0x80u : 0));
}

/* I-sync packet pkt (decoded; offset and size aside) in brief into *o
 * (zeroed before): 1, or 0 if it has parts a brief one cannot hold
 * (context ID, Hyp, AltISA, LSiP, data-only). */
static inline int csdi_isync_brief(const struct csd_packet *pkt, struct csd_pkt_brief *o)
{
	const uint32_t plain = CSD_PKTF_ISA | CSD_PKTF_SECURITY | CSD_PKTF_NS | CSD_PKTF_CYCLE_COUNT;
	if ((pkt->flags & ~plain) || !(pkt->flags & CSD_PKTF_ISA) || !(pkt->flags & CSD_PKTF_SECURITY) ||
	    pkt->isa > 7 || pkt->reason > 3)
		return 0;
	csdi_isync_brief_fill(o, (uint32_t)pkt->addr, pkt->cycle_count, (pkt->flags & CSD_PKTF_CYCLE_COUNT) != 0,
			      pkt->isa, pkt->reason, (pkt->flags & CSD_PKTF_NS) != 0);
	return 1;
}

void csdi_in_reset(struct csdi_input *in);
/* Accept a new run; CSD_EINVAL if the previous one is not used up. */
int csdi_in_feed(struct csdi_input *in, const struct csd_bytes *b);
/* The unread bytes, contiguous: packet bytes kept from earlier runs followed
 * by (a prefix of) the current run. Returns how many; *p points at them. */
size_t csdi_in_view(struct csdi_input *in, const uint8_t **p);
/* Capture offset of byte k of the last view. */
uint64_t csdi_in_offset(const struct csdi_input *in, size_t k);
/* n bytes of the last view form a packet (or were skipped). */
void csdi_in_consume(struct csdi_input *in, size_t n);
/* The last view holds only the start of a packet: keep those bytes until
 * the next run arrives. */
void csdi_in_stash(struct csdi_input *in);
/* Fill pkt's offset, size and raw bytes from the first n view bytes. */
void csdi_in_fill(const struct csdi_input *in, const uint8_t *p, size_t n, struct csd_packet *pkt);

/*
 * Look for the A-sync pattern: at least five 0x00 bytes then 0x80.
 * Returns 1 with *pkt set to a CSD_PKT_NOSYNC packet (the bytes passed over
 * before the pattern, or everything at the end of the stream), or to the
 * CSD_PKT_ASYNC packet once found (the decoder is then synchronised);
 * returns 0 when more input is needed.
 */
int csdi_in_seek_async(struct csdi_input *in, struct csd_packet *pkt);

/* The input's part of a packet decoder's semantic state (struct csdi_sem). */
void csdi_in_sem(const struct csdi_input *in, struct csdi_sem *s);

#endif
