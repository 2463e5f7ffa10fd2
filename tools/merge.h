/* merge.h - interleaving the records of several trace sources by their
 * timestamps (the decode command's default with several sources). */
#ifndef CSD_TOOLS_MERGE_H
#define CSD_TOOLS_MERGE_H

#include "cli.h"

/* The most records held per source (tests and the fuzz harness may set
 * a smaller one). */
#ifndef MERGE_QUEUE_MAX
#define MERGE_QUEUE_MAX 16384
#endif

struct merge;

/* r's text, when it was pushed with one, is text[0, len) (else text is
 * NULL); it is valid during the call only. */
typedef void (*merge_deliver_fn)(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r,
				 const char *text, size_t len);

/* The records of source s that follow may be out of time order, for
 * `reason` (a static string). `waiting` is the source whose timestamp lags
 * behind them, when one does (else NULL). */
typedef void (*merge_note_fn)(struct run_ctx *ctx, struct source_slot *s, const char *reason,
			      struct source_slot *waiting);

/* A merger delivering records through `deliver` and notes through `note`;
 * NULL if memory is short. */
struct merge *merge_new(merge_deliver_fn deliver, merge_note_fn note);
void merge_free(struct merge *m);

/* A record of source s, in that source's order. Delivers every record that
 * can no longer be preceded by one of another source. Every record pushed
 * is delivered exactly once, each source's in its order; at most
 * MERGE_QUEUE_MAX of a source are held. */
void merge_push(struct merge *m, struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r);
/* The same with r's printed text (made on another thread), which travels
 * with r and is delivered with it (copied: text need not outlive the
 * call). */
void merge_push_text(struct merge *m, struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r,
		     const char *text, size_t len);

/* End of the capture: deliver everything held, in timestamp order. */
/* Would a record of s that is not a timestamp be delivered at once by
 * merge_push(), with nothing else to say or change? (No other source is
 * in the merge and none of s's records is held: its stamp would be the
 * source's last timestamp, already delivered.) Such records may then be
 * printed without the merge. */
int merge_direct(const struct merge *m, const struct source_slot *s);
/* The same where more sources may come: s is the merge's only source so
 * far (it has pushed a record) and holds nothing, so a record of s that
 * is not a timestamp would be delivered at once, and what the merge
 * knows of s would not change. */
int merge_sole(const struct merge *m, const struct source_slot *s);
void merge_flush(struct merge *m, struct run_ctx *ctx);

#endif
