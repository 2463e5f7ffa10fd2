/*
 * fuzz_ptm_pkt.c - libFuzzer harness for the PTM (PFT) packet decoder.
 * Input: fuzz_common.h header (ETMCR, ETMCCER, ETMIDR, feed split), then one
 * source's bytes; checks in fuzz_pkt.h.
 */
#include "fuzz_pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_pkt_run(&fuzz_ptm_ops, CSD_PROTO_PTM, data, size);
}
