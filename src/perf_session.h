/* perf_session.h - the perf.data session's internal entry point. */
#ifndef CSD_PERF_SESSION_H
#define CSD_PERF_SESSION_H

#include "csdec.h"

/*
 * csd_perf_session_new() on a reader already open (csdi_perf_open_mem for
 * the fuzz harness), which the session takes over (freed on failure too);
 * `name` starts its messages. cfg must be valid. Errors: CSD_ENOMEM.
 */
int csdi_perf_session_from_reader(csd_perf *pd, const char *name, const struct csd_perf_session_config *cfg,
				  csd_perf_session **out);

#endif
