/*
 * bench_common.h - what the two benchmark harnesses (csdec_bench.c,
 * ocsd_bench.c) share, so that both read the same input the same way and
 * report alike: the snapshot's trace buffers mapped in READ_CHUNK windows
 * (one at a time, so that the resident size does not grow with the trace),
 * the process's CPU time around the decode loop only (snapshot parsing,
 * image loading and decoder creation are outside it; CPU time because
 * wall time on the shared 2-core benchmark machine varies by tens of
 * percent between identical runs), and one result line that bench_run.c
 * parses:
 *
 *   RESULT tool=T mode=M bytes=N insns=N items=N errors=N seconds=S image_bytes=N atoms=N huge_kb=N
 *
 * bytes: trace bytes read; insns: instructions decoded (flow modes);
 * items: packets (packet mode) or records / generic elements (flow modes);
 * image_bytes: program image the process holds in memory (subtracted from
 * its peak RSS by bench_run); huge_kb: its anonymous memory in huge pages,
 * the most seen right after a decode loop, while the decoders still hold
 * their tables (csdec asks for huge pages for its big ones; whether a host
 * grants them is one way hosts of a kind differ), 0 where not known.
 */
#ifndef CSD_BENCH_COMMON_H
#define CSD_BENCH_COMMON_H

#ifndef _DEFAULT_SOURCE
#define _DEFAULT_SOURCE /* MAP_POPULATE; this header comes first */
#endif

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csdec.h"

/* Both harnesses hand the decoders the capture in pieces of this size. */
#define BENCH_READ_CHUNK (1u << 20)

struct bench_result {
	uint64_t bytes, insns, items, errors;
	uint64_t atoms;         /* packets mode: atoms of all packets (every packet's fields are read) */
	uint64_t image_bytes;
	uint64_t huge_kb;       /* the most anonymous memory in huge pages seen after a decode loop */
	double seconds;
};

static inline double bench_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The process's anonymous memory in huge pages now, in KiB (0 where
 * /proc does not say). */
static inline uint64_t bench_huge_kb(void)
{
	FILE *f = fopen("/proc/self/smaps_rollup", "r");
	if (!f)
		return 0;
	char line[256];
	uint64_t kb = 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "AnonHugePages:", 14) == 0)
			kb = strtoull(line + 14, NULL, 10);
	fclose(f);
	return kb;
}

/* After a decode loop, before its decoders are freed: r->huge_kb kept up
 * to date (outside the timed part). */
static inline void bench_note_huge(struct bench_result *r)
{
	const uint64_t kb = bench_huge_kb();
	if (kb > r->huge_kb)
		r->huge_kb = kb;
}

static inline void bench_print_result(const char *tool, const char *mode, const struct bench_result *r)
{
	printf("RESULT tool=%s mode=%s bytes=%" PRIu64 " insns=%" PRIu64 " items=%" PRIu64 " errors=%" PRIu64
	       " seconds=%.6f image_bytes=%" PRIu64 " atoms=%" PRIu64 " huge_kb=%" PRIu64 "\n",
	       tool, mode, r->bytes, r->insns, r->items, r->errors, r->seconds, r->image_bytes, r->atoms,
	       r->huge_kb);
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

/* A trace buffer read as mapped windows of BENCH_READ_CHUNK bytes: the
 * decoders read the page cache where read() would first copy it (5 - 7 %
 * of csdec's packet decoding). Each window is unmapped before the next, so
 * the peak resident size stays one window. */
struct bench_reader {
	int fd;
	uint64_t size, pos;
	void *win;
	size_t win_len;
};

static inline void bench_open_buffer(const struct csd_snapshot_buffer *buf, struct bench_reader *r)
{
	struct stat st;
	memset(r, 0, sizeof(*r));
	r->fd = open(buf->path, O_RDONLY);
	if (r->fd < 0 || fstat(r->fd, &st) != 0) {
		fprintf(stderr, "%s: cannot open\n", buf->path);
		exit(2);
	}
	r->size = (uint64_t)st.st_size;
}

/* The next window (0 bytes at the end); valid until the next call. */
static inline size_t bench_read(struct bench_reader *r, const uint8_t **data)
{
	if (r->win)
		munmap(r->win, r->win_len);
	r->win = NULL;
	if (r->pos >= r->size)
		return 0;
	size_t len = r->size - r->pos < BENCH_READ_CHUNK ? (size_t)(r->size - r->pos) : BENCH_READ_CHUNK;
	void *m = mmap(NULL, len, PROT_READ, MAP_PRIVATE | MAP_POPULATE, r->fd, (off_t)r->pos);
	if (m == MAP_FAILED) {
		fprintf(stderr, "cannot map the trace buffer\n");
		exit(2);
	}
	r->win = m;
	r->win_len = len;
	r->pos += len;
	*data = m;
	return len;
}

static inline void bench_close_buffer(struct bench_reader *r)
{
	if (r->win)
		munmap(r->win, r->win_len);
	close(r->fd);
}

#endif
