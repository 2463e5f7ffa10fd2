/*
 * fuzz_etm3_flow.c - libFuzzer harness for the ETMv3 instruction-flow
 * decoder (csd_flow_* with CSD_PROTO_ETM3). Input layout and checks:
 * fuzz_flow.h.
 */
#include "fuzz_flow.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	return fuzz_flow_run(CSD_PROTO_ETM3, data, size);
}
