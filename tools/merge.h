/* merge.h - interleaving the records of several trace sources by their
 * timestamps (the decode command's default with several sources). */
#ifndef CSD_TOOLS_MERGE_H
#define CSD_TOOLS_MERGE_H

#include "cli.h"

struct merge;

typedef void (*merge_deliver_fn)(struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r);

/* A merger delivering through `deliver`; NULL if memory is short. */
struct merge *merge_new(merge_deliver_fn deliver);
void merge_free(struct merge *m);

/* A record of source s, in that source's order. Delivers every record that
 * can no longer be preceded by one of another source. */
void merge_push(struct merge *m, struct run_ctx *ctx, struct source_slot *s, const struct csd_record *r);

/* End of the capture: deliver everything held, in timestamp order. */
void merge_flush(struct merge *m, struct run_ctx *ctx);

#endif
