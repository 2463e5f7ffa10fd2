/* chunks.h - one source's trace cut at sync points into chunks decoded on
 * worker threads (--jobs N, N >= 2), the records or packets handed on by the
 * calling thread exactly as a serial decode gives them. */
#ifndef CSD_TOOLS_CHUNKS_H
#define CSD_TOOLS_CHUNKS_H

#include <stddef.h>
#include <stdint.h>

#include "cli.h"

struct chunks;

/* Chunked decoding of the buffer's one source, its records or its packets
 * (ctx->chunk_ok: one source decoded from the file), or NULL (the caller
 * decodes as before):
 * with --jobs N >= 2, or by default on a capture of capture_size bytes (-1:
 * not known) of at least JOBS_MIN_CAPTURE whose records are printed or
 * counted, and threads and memory to be had. formatted: the bytes come
 * from formatter frames, each with its own capture offset; by default
 * such a source decodes on the calling thread until it has given 4 MiB
 * (the capture's size says little of one source's share). */
struct chunks *chunks_new(struct run_ctx *ctx, int64_t capture_size, int formatted);
/* Chunked decoding of slot s from here on (a perf.data source while it is
 * the only one: its decoder becomes the serial one, the threads start at
 * once), or NULL; formatted as above. */
struct chunks *chunks_new_slot(struct run_ctx *ctx, struct source_slot *s, int formatted);
/* The bytes a perf.data source is given on one thread before
 * chunks_new_slot() is worth its threads. */
size_t chunks_slot_after(void);
/* The source's next bytes (copied); records are handed on as ready. */
void chunks_data(struct chunks *c, const struct csd_bytes *b);
/* Everything given so far decoded and its records handed on (before a
 * frame note, which the serial pipeline prints after them). */
void chunks_sync(struct chunks *c);
/* End of the trace: everything decoded and handed on, the threads ended, c freed. */
void chunks_finish(struct chunks *c);
/* End of the chunks, not of the trace: everything given so far decoded
 * and handed on, the threads ended, c freed; the slot's decoder is then
 * the one that decoded it all (not finished), and decoding goes on
 * without chunks. */
void chunks_end(struct chunks *c);

#endif
