/*
 * flow.c - the instruction-flow decoder's public face (csd_flow_*), the top
 * of its three layers (flow.h). It knows no protocol: csd_flow_new picks
 * the protocol's operations table, and everything protocol-specific,
 * fast paths included, is behind it.
 *
 * Pull model: csd_flow_next() drains the queue; when it is empty it lets the
 * protocol state machine work on the current packet (which may take several
 * steps when one packet yields many instruction records), lets the
 * protocol's fast path take what it can from the packet decoder's input,
 * or pulls the next packet from the packet decoder.
 */
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "flow.h"
#include "walk_cache.h"
#include "zeroed.h"

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
	/* (A configuration older than core_profile is a Cortex-A's.) */
	if (cfg && cfg->size >= offsetof(struct csd_trace_config, core_profile) + sizeof(cfg->core_profile) &&
	    cfg->core_profile == CSD_CORE_M) {
		if (number < 24)
			return m_exceptions[number];
		if (number < 512)
			return "IRQ"; /* IRQ(number - 16): the caller prints the number */
		return "reserved";
	}
	return number < 16 ? ar_exceptions[number] : "reserved";
}

/* ------------------------------------------------------------------ */

csd_flow_decoder *csd_flow_new(const struct csd_flow_config *cfg)
{
	if (!cfg || cfg->size < offsetof(struct csd_flow_config, image) + sizeof(cfg->image))
		return NULL;
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	memcpy(&fc, cfg, cfg->size < sizeof(fc) ? cfg->size : sizeof(fc));
	if (!fc.trace)
		return NULL;
	/* The trace config has its own size: members past it read as zero,
	 * as for a trace config passed alone. */
	size_t tsize = fc.trace->size;
	struct csdi_flow_cfg c;
	memset(&c, 0, sizeof(c));
	if (tsize < offsetof(struct csd_trace_config, protocol) + sizeof(c.trace.protocol) || tsize > sizeof(c.trace))
		return NULL;
	memcpy(&c.trace, fc.trace, tsize);
	c.trace.size = sizeof(c.trace);
	c.image = fc.image;
	c.flags = fc.flags;
	if (!c.image || (c.trace.protocol != CSD_PROTO_ETM3 && c.trace.protocol != CSD_PROTO_PTM))
		return NULL;
	/* Lookups then only read the image, which decoders on other
	 * threads may share (csd_image_new). */
	if (csdi_image_prepare(c.image) < 0)
		return NULL;
	/* The decoder, its block cache and its packet decoder are zeroed
	 * tables (zeroed.h): a decode's tables share a huge page rather
	 * than each taking a page fault per 4 KiB. */
	csd_flow_decoder *dec = csdi_zeroed_new(sizeof(*dec), 0);
	if (!dec)
		return NULL;
	dec->cfg = c;
	dec->pkt = &dec->pkts[0];
	dec->insn_mode = (c.flags & CSD_FLOW_INSN) != 0;
	/* Small to begin with: a small capture's blocks fit (cache_fit). */
	dec->cache = csdi_zeroed_new(CSDI_BLOCK_CACHE_MIN * sizeof(*dec->cache), 0);
	dec->cache_mask = CSDI_BLOCK_CACHE_MIN - 2;
	dec->ops = c.trace.protocol == CSD_PROTO_ETM3 ? &csdi_etm3_flow_ops : &csdi_ptm_flow_ops;
	if (!dec->cache || dec->ops->init(dec) != CSD_OK) {
		csd_flow_free(dec);
		return NULL;
	}
	return dec;
}

void csd_flow_free(csd_flow_decoder *dec)
{
	if (!dec)
		return;
	if (dec->ops)
		dec->ops->fini(dec);
	csdi_zeroed_free(dec->cache, ((size_t)dec->cache_mask + 2) * sizeof(*dec->cache));
	csdi_zeroed_free(dec, sizeof(*dec));
}

int csd_flow_reset(csd_flow_decoder *dec)
{
	if (!dec)
		return CSD_EINVAL;
	if (dec->dead)
		return CSD_ENOMEM;
	/* Kept: the block cache (stamped with the image generation) and the
	 * PTM walk cache (which calls back with dec, which stays where it is). */
	const struct csdi_flow_cfg cfg = dec->cfg;
	const struct csdi_flow_ops *ops = dec->ops;
	struct csdi_block *cache = dec->cache;
	const uint32_t cache_mask = dec->cache_mask, cache_misses = dec->cache_misses;
	struct csdi_walk_cache *walk_cache = dec->walk_cache;
	dec->walk_cache = NULL;
	ops->fini(dec);
	memset(dec, 0, sizeof(*dec));
	dec->cfg = cfg;
	dec->ops = ops;
	dec->pkt = &dec->pkts[0];
	dec->insn_mode = (cfg.flags & CSD_FLOW_INSN) != 0;
	dec->cache = cache;
	dec->cache_mask = cache_mask;
	dec->cache_misses = cache_misses;
	if (ops->init(dec) != CSD_OK) {
		ops->fini(dec);
		csdi_walk_cache_free(walk_cache);
		dec->dead = 1;
		dec->finished = 1;
		return CSD_ENOMEM;
	}
	dec->walk_cache = walk_cache;
	return CSD_OK;
}

int csd_flow_feed(csd_flow_decoder *dec, const struct csd_bytes *in)
{
	if (dec && dec->dead)
		return CSD_ENOMEM;
	if (!dec || !in || dec->finished)
		return CSD_EINVAL;
	return dec->ops->feed(dec, in);
}

int csd_flow_finish(csd_flow_decoder *dec)
{
	if (!dec)
		return CSD_EINVAL;
	if (dec->dead)
		return CSD_ENOMEM;
	dec->finished = 1;
	return dec->ops->finish(dec);
}

int csd_flow_last_packet(const csd_flow_decoder *dec, struct csd_packet *pkt)
{
	if (!dec || !pkt)
		return CSD_EINVAL;
	if (dec->dead)
		return CSD_ENOMEM;
	if (!dec->have_pkt)
		return CSD_ENOENT;
	*pkt = *dec->pkt;
	return CSD_OK;
}

/* The block cache at its full size once the misses since it was made
 * reach twice its entries: the trace has shown that it is not a small
 * capture. Its blocks move to their slots in the new table (where both
 * ways are taken, the later is dropped); its pages are made at once, as
 * the trace will fill them. Only here, between calls, where no block
 * pointer is held but the ETMv3 range cursor, which is let go. */
static void cache_fit(csd_flow_decoder *dec)
{
	const size_t n = (size_t)dec->cache_mask + 2;
	if (dec->cache_misses < 2 * n || n >= CSDI_BLOCK_CACHE)
		return;
	dec->cache_misses = 0;
	struct csdi_block *t = csdi_zeroed_new(CSDI_BLOCK_CACHE * sizeof(*t), CSDI_ZEROED_POPULATE);
	if (!t)
		return;         /* the cache keeps its size */
	const uint32_t mask = CSDI_BLOCK_CACHE - 2;
	for (size_t k = 0; k < n; k++) {
		const struct csdi_block *b = &dec->cache[k];
		if (!b->gen)
			continue;
		struct csdi_block *g = &t[csdi_flow_block_hash(b->start, b->isa) & mask];
		if (g->gen)
			g++;
		if (!g->gen)
			*g = *b;
	}
	csdi_zeroed_free(dec->cache, n * sizeof(*t));
	dec->cache = t;
	dec->cache_mask = mask;
	if (dec->cfg.trace.protocol == CSD_PROTO_ETM3)
		dec->u.etm3.blk = NULL;
}

/* Work until records are ready to deliver and the queue is well filled
 * (0; filling it saves calls per record), or until the input is used up
 * with nothing ready (CSD_EAGAIN / CSD_EEOS). */
static int produce(csd_flow_decoder *dec)
{
	if (dec->dead)
		return CSD_ENOMEM;
	/* Cached blocks are valid for this image generation only (the
	 * image may gain sections between calls, never during one). */
	dec->img_gen = csdi_image_generation(dec->cfg.image) + 1;
	cache_fit(dec);
	for (;;) {
		if (dec->qready && csdi_flow_room(dec) <= CSDI_FLOW_QPRODUCE)
			return CSD_OK;
		if (dec->pkt_active) {
			dec->ops->step(dec);
			continue;
		}
		if (dec->ops->run(dec))
			continue;
		struct csd_packet *spare = csdi_flow_spare_pkt(dec);
		int rc = dec->ops->next_packet(dec, spare);
		if (rc == CSD_OK) {
			csdi_flow_take_pkt(dec, spare);
			continue;
		}
		if (rc == CSD_EEOS) {
			/* End of trace: what was held back is final now. */
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
	dec->delivered += n;
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
