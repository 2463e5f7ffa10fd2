/*
 * bench_common.h - what the two benchmark harnesses (csdec_bench.c,
 * ocsd_bench.c) share, so that both read the same input the same way and
 * report alike: the snapshot's trace buffers read in READ_CHUNK pieces,
 * the process's CPU time around the decode loop only (snapshot parsing,
 * image loading and decoder creation are outside it; CPU time because
 * wall time on the shared 2-core benchmark machine varies by tens of
 * percent between identical runs), and one result line that bench_run.c
 * parses:
 *
 *   RESULT tool=T mode=M bytes=N insns=N items=N errors=N seconds=S image_bytes=N
 *
 * bytes: trace bytes read; insns: instructions decoded (flow modes);
 * items: packets (packet mode) or records / generic elements (flow modes);
 * image_bytes: program image the process holds in memory (subtracted from
 * its peak RSS by bench_run).
 */
#ifndef CSD_BENCH_COMMON_H
#define CSD_BENCH_COMMON_H

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "csdec.h"

/* Both harnesses hand the decoders the capture in pieces of this size. */
#define BENCH_READ_CHUNK (1u << 20)

struct bench_result {
	uint64_t bytes, insns, items, errors;
	uint64_t atoms;         /* packets mode: atoms of all packets (every packet's fields are read) */
	uint64_t image_bytes;
	double seconds;
};

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static inline void bench_print_result(const char *tool, const char *mode, const struct bench_result *r)
{
	printf("RESULT tool=%s mode=%s bytes=%" PRIu64 " insns=%" PRIu64 " items=%" PRIu64 " errors=%" PRIu64
	       " seconds=%.6f image_bytes=%" PRIu64 " atoms=%" PRIu64 "\n",
	       tool, mode, r->bytes, r->insns, r->items, r->errors, r->seconds, r->image_bytes, r->atoms);
	fflush(stdout);
}

/* Open the snapshot or exit with a message. */
static inline csd_snapshot *bench_open_snapshot(const char *dir)
{
	char err[512] = "";
	csd_snapshot *snap = NULL;
	int rc = csd_snapshot_open(dir, &snap, err, sizeof(err));
	if (rc < 0) {
		fprintf(stderr, "%s: %s\n", dir, err[0] ? err : csd_errstr(rc));
		exit(2);
	}
	return snap;
}

/* Sources of buffer b that both decoders handle (ETMv3 / PTM with a trace ID). */
static inline int bench_source_wanted(const struct csd_snapshot_source *src, size_t b)
{
	return src->buffer == (int)b && src->config.trace_id > 0 && src->config.trace_id < 0x70 &&
	       (src->config.protocol == CSD_PROTO_ETM3 || src->config.protocol == CSD_PROTO_PTM);
}

static inline FILE *bench_open_buffer(const struct csd_snapshot_buffer *buf)
{
	FILE *f = fopen(buf->path, "rb");
	if (!f) {
		fprintf(stderr, "%s: cannot open\n", buf->path);
		exit(2);
	}
	return f;
}

static inline uint8_t *bench_chunk_buffer(void)
{
	uint8_t *p = malloc(BENCH_READ_CHUNK);
	if (!p) {
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

#endif
