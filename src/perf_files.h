/* perf_files.h - the mapped-file lookup's internal helper, shared with the
 * perf.data session's warnings. */
#ifndef CSD_PERF_FILES_H
#define CSD_PERF_FILES_H

#include <stddef.h>
#include <stdint.h>

/* The n (at most 20) bytes of a build ID as 2n lower-case hex digits and
 * a NUL, as the build-ID cache names them: out holds 2n + 1 bytes. */
void csdi_build_id_hex(char *out, const uint8_t *id, size_t n);

#endif
