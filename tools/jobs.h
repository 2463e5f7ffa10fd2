/* jobs.h - decoding the sources of one capture on worker threads (--jobs),
 * with every packet, record and frame note handed on by the calling thread
 * in exactly the order the serial pipeline gives them. */
#ifndef CSD_TOOLS_JOBS_H
#define CSD_TOOLS_JOBS_H

#include "cli.h"

struct jobs;

/* Workers for the sources of ctx->slot (at most `jobs` threads; each
 * source belongs to one of them; one source gets a worker when ctx prints
 * or counts). NULL when that gives no second thread, when `jobs` is the
 * default and threads cannot win (nothing printed, one source, or a
 * capture of capture_size bytes under JOBS_MIN_CAPTURE; -1: not known), or threads or
 * memory cannot be had: the caller then decodes serially. */
struct jobs *jobs_new(struct run_ctx *ctx, int jobs, int64_t capture_size);

/* Below this capture size the default decodes on one thread. */
#define JOBS_MIN_CAPTURE (1024 * 1024)

/* A demultiplexer event, in capture order: trace bytes of source s
 * (copied), or a frame note (CSD_FRAME_ERROR, _ALIGN_INFERRED,
 * _TRUNCATED). What the workers decoded before it is handed on first, as
 * far as it is ready; the call blocks only to keep the queues bounded. */
void jobs_data(struct jobs *j, struct source_slot *s, const struct csd_bytes *b);
void jobs_frame_note(struct jobs *j, const struct csd_frame_out *fo);

/* End of the capture: every source finished (in trace ID order, as the
 * serial pipeline does), all that remains handed on, the workers ended and
 * freed. */
void jobs_finish(struct jobs *j);

/* The default of --jobs: the online cores (1 if not known). */
int jobs_default(void);

#endif
