/*
 * fuzz_merge.c - libFuzzer harness for the tool's time-ordered merge of
 * several sources' records (tools/merge.c, compiled in with a queue cap of
 * MERGE_QUEUE_MAX = 64 so that short inputs overflow it, and rings that
 * start at 4 records so that they grow).
 *
 * Input: [0] the number of sources (1 + b % 8) and, bits 3-7, which of
 * the first five are set up to give timestamps (ETMCR[28]); IDs distinct, from [1];
 * then operations of 3 bytes [op][a][b], the source being op % sources:
 *   (op >> 3) % 8 == 0..2  one record (a type other than timestamp, by a)
 *                  3       timestamp: the source's last plus (a | b << 8)
 *                  4       timestamp: the last minus up to (a | b << 8)
 *                  5       timestamp (a | b << 8) << (16 * (op >> 6))
 *                  6       a run of 1 + a records (up to four times the cap)
 *                  7       b bit 0: end of capture (merge_flush, the merger
 *                          used again); bit 1: ring allocations fail from
 *                          now on, or succeed again
 * at most 2^12 records per input.
 *
 * Checked (fuzz/merge_check.h, against a model of the sources as pushed):
 * every record comes out exactly once, each source's in its order; no
 * source holds more than the cap; a record out before its source's
 * lagging rivals caught up has a note for its source before it; records
 * out of time order have a note for one of their sources before them;
 * notes name a known reason and a lagging source that reports timestamps;
 * at most one note per source per timestamp and capture.
 */
#include <stdint.h>
#include <stdlib.h>

#include "fuzz_common.h"

#define MERGE_QUEUE_MAX 64
#define MERGE_QUEUE_MIN 4
static int fuzz_merge_alloc_fail;
static void *fuzz_merge_realloc(void *p, size_t n)
{
	return fuzz_merge_alloc_fail ? NULL : realloc(p, n);
}
#define MERGE_REALLOC fuzz_merge_realloc
#include "../tools/merge.c"

#define MC_CHECK(cond) FUZZ_CHECK(cond)
#include "merge_check.h"

#define FUZZ_MERGE_MAX_RECORDS (1u << 12)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint32_t types[] = { CSD_REC_RANGE, CSD_REC_INSN, CSD_REC_EXCEPTION, CSD_REC_TRACE_ON,
					  CSD_REC_CONTEXT, CSD_REC_CYCLE_COUNT, CSD_REC_NO_MEMORY, CSD_REC_ERROR,
					  CSD_REC_ADDRESS_UNKNOWN, CSD_REC_TRUNCATED };
	const unsigned ntypes = sizeof(types) / sizeof(types[0]);
	if (size < 1)
		return 0;
	int nsrc = 1 + data[0] % MC_NSRC_MAX;
	uint8_t ids[MC_NSRC_MAX];
	for (int i = 0; i < nsrc; i++) {
		/* Distinct: 0x01 - 0x6f, stepping from a base the input picks. */
		unsigned base = size > 1 ? data[1] : 0;
		ids[i] = (uint8_t)(1 + (base + 13u * (unsigned)i) % 0x6f);
	}
	fuzz_merge_alloc_fail = 0;
	struct merge *m = mc_begin_cfg(nsrc, ids, data[0] >> 3);
	if (!m)
		return 0;
	uint64_t ts[MC_NSRC_MAX] = { 0 };
	for (size_t k = 2; k + 3 <= size && mc.n < FUZZ_MERGE_MAX_RECORDS; k += 3) {
		uint8_t op = data[k], a = data[k + 1], b = data[k + 2];
		int i = op % nsrc;
		unsigned v = a | (unsigned)b << 8;
		switch ((op >> 3) % 8) {
		case 3:
			ts[i] += v;
			mc_push(m, i, &ts[i]);
			break;
		case 4:
			ts[i] -= ts[i] < v ? ts[i] : v;
			mc_push(m, i, &ts[i]);
			break;
		case 5:
			ts[i] = (uint64_t)v << (16 * (op >> 6));
			mc_push(m, i, &ts[i]);
			break;
		case 6:
			for (unsigned n = 1u + a; n--;)
				mc_push(m, i, NULL);
			break;
		case 7:
			if (b & 1) {
				mc_flush(m);
				for (int s = 0; s < nsrc; s++)
					ts[s] = 0;
			}
			if (b & 2)
				fuzz_merge_alloc_fail = !fuzz_merge_alloc_fail;
			break;
		default:
			mc_push_type(m, i, NULL, types[a % ntypes]);
			break;
		}
	}
	mc_end(m);
	fuzz_merge_alloc_fail = 0;
	return 0;
}
