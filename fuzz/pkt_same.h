/*
 * pkt_same.h - whether two decoded packets are the same, field by field
 * (raw bytes up to CSD_PKT_RAW_MAX, the error reason by text). Shared by
 * the packet fuzzers (fuzz_pkt.h) and tests/test_pkt_brief.c.
 */
#ifndef CSD_FUZZ_PKT_SAME_H
#define CSD_FUZZ_PKT_SAME_H

#include <string.h>

#include "csdec.h"

static inline int csd_test_pkt_same(const struct csd_packet *a, const struct csd_packet *b)
{
	size_t r = a->size < CSD_PKT_RAW_MAX ? a->size : CSD_PKT_RAW_MAX;
	return a->type == b->type && a->flags == b->flags && a->offset == b->offset && a->size == b->size &&
	       memcmp(a->raw, b->raw, r) == 0 && a->addr == b->addr && a->addr_bytes == b->addr_bytes &&
	       a->isa == b->isa && a->reason == b->reason && a->vmid == b->vmid && a->exception == b->exception &&
	       a->ts_bits == b->ts_bits && a->data_size == b->data_size && a->cycle_count == b->cycle_count &&
	       a->context_id == b->context_id && a->timestamp == b->timestamp && a->atoms.en == b->atoms.en &&
	       a->atoms.num == b->atoms.num && a->atoms.w == b->atoms.w && a->atoms.format == b->atoms.format &&
	       a->data_insn_addr == b->data_insn_addr && a->data_addr == b->data_addr &&
	       a->data_value == b->data_value && a->tag == b->tag &&
	       (a->error == b->error || (a->error && b->error && strcmp(a->error, b->error) == 0));
}

#endif
