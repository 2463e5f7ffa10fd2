/* perf_data.h - the perf.data reader's internal entry points. */
#ifndef CSD_PERF_DATA_H
#define CSD_PERF_DATA_H

#include <stddef.h>

#include "csdec.h"

/*
 * csd_perf_open() on `size` bytes in memory instead of a file (the fuzz
 * harness and tests): the bytes must outlive the reader. Messages name
 * the file "<memory>".
 */
int csdi_perf_open_mem(const void *data, size_t size, csd_perf **out, char *errbuf, size_t errlen);

/* The most PERF_RECORD_AUX records held while waiting for the trace they
 * describe (tests reach it). */
#define CSDI_PERF_AUX_PENDING 4096

#endif
