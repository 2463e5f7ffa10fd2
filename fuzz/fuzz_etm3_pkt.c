/*
 * fuzz_etm3_pkt.c - libFuzzer harness for the ETMv3 packet decoder. Input:
 * fuzz_common.h header (ETMCR, ETMCCER, ETMIDR, profile, feed split), then
 * one source's bytes; checks in fuzz_pkt.h.
 */
#include "fuzz_pkt.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_pkt_run(&fuzz_etm3_ops, CSD_PROTO_ETM3, data, size);
}
