/*
 * flow_run.h - run the instruction-flow decoder over one source of a
 * snapshot and collect its records (header-only helper for tests).
 */
#ifndef CSD_TEST_FLOW_RUN_H
#define CSD_TEST_FLOW_RUN_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csdec_internal.h"

struct flow_run {
	struct csd_record *rec;
	size_t n, cap;
};

static inline int flow_run_push(struct flow_run *fr, const struct csd_record *r)
{
	if (fr->n == fr->cap) {
		size_t ncap = fr->cap ? fr->cap * 2 : 4096;
		struct csd_record *nr = realloc(fr->rec, ncap * sizeof(*nr));
		if (!nr)
			return -1;
		fr->rec = nr;
		fr->cap = ncap;
	}
	fr->rec[fr->n++] = *r;
	return 0;
}

static inline void flow_run_free(struct flow_run *fr)
{
	free(fr->rec);
	memset(fr, 0, sizeof(*fr));
}

/* How records are taken from the decoder. */
enum flow_run_drain_mode {
	FLOW_RUN_NEXT = 0,  /* csd_flow_next() */
	FLOW_RUN_MIXED,     /* csd_flow_next_batch() and csd_flow_next() by turns */
};

static inline void flow_run_drain(csd_flow_decoder *fd, struct flow_run *fr, int mode)
{
	struct csd_record r;
	if (mode == FLOW_RUN_MIXED) {
		const struct csd_record *batch;
		int n;
		for (;;) {
			if ((n = csd_flow_next_batch(fd, &batch)) <= 0)
				return;
			for (int i = 0; i < n; i++)
				flow_run_push(fr, &batch[i]);
			if (csd_flow_next(fd, &r) != 0)
				return;
			flow_run_push(fr, &r);
		}
	}
	while (csd_flow_next(fd, &r) == 0)
		flow_run_push(fr, &r);
}

/* Records a and b are the same, field by field. */
static inline int flow_run_same(const struct csd_record *a, const struct csd_record *b)
{
	return a->type == b->type && a->flags == b->flags && a->offset == b->offset && a->addr == b->addr &&
	       a->end == b->end && a->last == b->last && a->target == b->target && a->cycles == b->cycles &&
	       a->timestamp == b->timestamp && a->count == b->count && a->size == b->size &&
	       a->opcode == b->opcode && a->context_id == b->context_id && a->exception == b->exception &&
	       a->isa == b->isa && a->cond == b->cond && a->reason == b->reason && a->vmid == b->vmid &&
	       a->id == b->id && a->error == b->error;
}

/*
 * Feed source `id` of buffer file `path` (frame format `fmt`) to decoder fd
 * in pieces of `piece` bytes (0: as large as fit), finish it and collect
 * its records. Returns 0, or CSD_EIO if the file cannot be read.
 */
static inline int flow_run_buffer(const char *path, uint32_t fmt, unsigned id, csd_flow_decoder *fd, size_t piece,
				  int mode, struct flow_run *fr)
{
	struct csd_frame_config frc = { .size = sizeof(frc), .format = fmt, .raw_id = (uint8_t)id };
	csd_frame_decoder *frd = csd_frame_new(&frc);
	FILE *f = fopen(path, "rb");
	int rc = (!frd || !f) ? CSD_EIO : 0;
	uint8_t *data = malloc(1 << 16);
	if (rc == 0 && data) {
		size_t got;
		uint64_t off = 0;
		size_t want = piece ? (piece < (1 << 16) ? piece : (1 << 16)) : (1 << 16);
		for (int last = 0; !last;) {
			got = fread(data, 1, want, f);
			if (got)
				csd_frame_feed(frd, data, got, off);
			else {
				csd_frame_finish(frd);
				last = 1;
			}
			off += got;
			struct csd_frame_out fo;
			while (csd_frame_next(frd, &fo) == 0) {
				if (fo.event != CSD_FRAME_DATA || fo.bytes.id != id)
					continue;
				csd_flow_feed(fd, &fo.bytes);
				flow_run_drain(fd, fr, mode);
			}
		}
		csd_flow_finish(fd);
		flow_run_drain(fd, fr, mode);
	} else if (!data) {
		rc = CSD_ENOMEM;
	}
	free(data);
	if (f)
		fclose(f);
	csd_frame_free(frd);
	return rc;
}

/*
 * Decode source `id` of the snapshot in `dir` with flow flags `flags`,
 * feeding the capture in pieces of `piece` bytes (0: all at once).
 * Returns 0, or a negative csd_error.
 */
static inline int flow_run_snapshot_mode(const char *dir, unsigned id, uint32_t flags, size_t piece, int mode,
					 struct flow_run *fr)
{
	char err[512];
	csd_snapshot *snap = NULL;
	int rc = csd_snapshot_open(dir, &snap, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s\n", err);
		return rc;
	}
	const struct csd_snapshot_source *src = NULL;
	for (size_t i = 0; i < csd_snapshot_num_sources(snap); i++)
		if (csd_snapshot_source(snap, i)->config.trace_id == id)
			src = csd_snapshot_source(snap, i);
	if (!src || src->buffer < 0) {
		csd_snapshot_free(snap);
		return CSD_ENOENT;
	}
	const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, (size_t)src->buffer);
	csd_image *img = csd_image_new();
	rc = csd_snapshot_load_image(snap, src->core_name, img);
	if (rc < 0)
		goto out;
	struct csd_flow_config fc;
	memset(&fc, 0, sizeof(fc));
	fc.size = sizeof(fc);
	fc.trace = &src->config;
	fc.image = img;
	fc.flags = flags;
	csd_flow_decoder *fd = csd_flow_new(&fc);
	rc = fd ? flow_run_buffer(buf->path, buf->frame_format, id, fd, piece, mode, fr) : CSD_ENOMEM;
	csd_flow_free(fd);
out:
	csd_image_free(img);
	csd_snapshot_free(snap);
	return rc;
}

static inline int flow_run_snapshot(const char *dir, unsigned id, uint32_t flags, size_t piece,
				    struct flow_run *fr)
{
	return flow_run_snapshot_mode(dir, id, flags, piece, FLOW_RUN_NEXT, fr);
}

#endif
