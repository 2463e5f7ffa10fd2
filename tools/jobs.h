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

/* Workers for sources made and ended as decoding goes (perf.data's
 * queues, each piece of trace a source of its own): `jobs` threads; each
 * source's `worker` (any number, taken modulo the workers) says which
 * thread decodes it; `listing`: the records are
 * printed as the text listing (the workers take disassemblers). NULL as
 * jobs_new() says (nsources: the sources that may decode at once, which
 * the default takes as the number of sources), and when fewer than two
 * threads would decode. */
struct jobs *jobs_new_sources(struct run_ctx *ctx, int jobs, int nsources, int64_t capture_size, int listing);

/* Below this capture size the default decodes on one thread. */
#define JOBS_MIN_CAPTURE (1024 * 1024)

/* A demultiplexer event, in capture order: trace bytes of source s
 * (copied), or a frame note (CSD_FRAME_ERROR, _ALIGN_INFERRED,
 * _TRUNCATED). What the workers decoded before it is handed on first, as
 * far as it is ready; the call blocks only to keep the queues bounded. */
void jobs_data(struct jobs *j, struct source_slot *s, const struct csd_bytes *b);
void jobs_frame_note(struct jobs *j, const struct csd_frame_out *fo);

/* A flush of ctx->merge, in the sequence: done when everything given
 * before it has been handed on. */
void jobs_merge_flush(struct jobs *j);

/* The end of source s (jobs_new_sources): its worker finishes it, and its
 * last records are handed on in the sequence; s is the worker's until a
 * jobs_call() given after this one runs (or jobs_sync returns). */
void jobs_source_end(struct jobs *j, struct source_slot *s);

/* fn(arg) on the calling thread, in the sequence: once everything given
 * before it has been handed on. */
void jobs_call(struct jobs *j, void (*fn)(void *arg), void *arg);

/* Hand on what is ready, or wait until a worker has done something
 * (nothing if everything given is handed on). */
void jobs_wait(struct jobs *j);

/* Wait until everything given so far is decoded and handed on: then no
 * worker uses a source or its image, and the caller may finish, free or
 * make sources, add to images, or change what the handlers read. */
void jobs_sync(struct jobs *j);

/* jobs_sync(), then the workers ended and freed; the sources are left as
 * they are (finished or not). */
void jobs_end(struct jobs *j);

/* End of the capture: every source finished (in trace ID order, as the
 * serial pipeline does), all that remains handed on, the workers ended and
 * freed. */
void jobs_finish(struct jobs *j);

/* The default of --jobs: the online cores (1 if not known). */
int jobs_default(void);

#endif
