/*
 * perf_enc.c - perf.data writer (see perf_enc.h).
 *
 * Layout written (offsets are file offsets):
 *   0     file header (104 bytes; written last, once sizes are known)
 *   104   the sample IDs of the two events, one u64 each
 *   120   two attribute entries of 144 bytes: perf_event_attr (128, the
 *         size perf 6.1 reads) and the file section of the event's ID
 *   408   data: ID_INDEX, AUXTRACE_INFO, THREAD_MAP, FINISHED_INIT,
 *         ITRACE_START, [AUX_OUTPUT_HW_ID], COMM, MMAP2 ..., then per AUX
 *         buffer: AUX, AUXTRACE + the frames, FINISHED_ROUND; EXIT last
 *   end   the feature table (one {offset, size} per feature bit set, in
 *         bit order) and the features' contents
 * Everything is little-endian, as on an ARMv7 board; every record is a
 * multiple of 8 bytes.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "file.h"
#include "frame_enc.h"
#include "perf_enc.h"

/* Record types (uapi perf_event.h; tools/lib/perf/include/perf/event.h). */
enum {
	REC_COMM = 3,
	REC_EXIT = 4,
	REC_MMAP2 = 10,
	REC_AUX = 11,
	REC_ITRACE_START = 12,
	REC_AUX_OUTPUT_HW_ID = 21,
	REC_FINISHED_ROUND = 68,
	REC_ID_INDEX = 69,
	REC_AUXTRACE_INFO = 70,
	REC_AUXTRACE = 71,
	REC_THREAD_MAP = 73,
	REC_FINISHED_INIT = 82,
};

#define MISC_USER 2u
#define MISC_COMM_EXEC 0x2000u
#define MISC_MMAP_BUILD_ID 0x4000u
#define MISC_BUILD_ID_SIZE 0x8000u      /* build ID feature entry: size byte valid */

#define SAMPLE_IP (1u << 0)
#define SAMPLE_TID (1u << 1)
#define SAMPLE_CPU (1u << 7)
#define SAMPLE_IDENTIFIER (1u << 16)

/* perf_event_attr flag bits (the u64 at offset 40). */
#define ATTR_DISABLED (1ull << 0)
#define ATTR_EXCLUDE_KERNEL (1ull << 5)
#define ATTR_EXCLUDE_HV (1ull << 6)
#define ATTR_MMAP (1ull << 8)
#define ATTR_COMM (1ull << 9)
#define ATTR_ENABLE_ON_EXEC (1ull << 12)
#define ATTR_TASK (1ull << 13)
#define ATTR_SAMPLE_ID_ALL (1ull << 18)
#define ATTR_MMAP2 (1ull << 23)
#define ATTR_COMM_EXEC (1ull << 24)
#define ATTR_BUILD_ID (1ull << 34)

#define PERF_TYPE_SOFTWARE 1u
#define PERF_COUNT_SW_DUMMY 9u

/* Feature bits (tools/perf/util/header.h). */
enum {
	FEAT_BUILD_ID = 2,
	FEAT_ARCH = 6,
	FEAT_NRCPUS = 7,
	FEAT_CPUDESC = 8,
	FEAT_CMDLINE = 11,
	FEAT_EVENT_DESC = 12,
	FEAT_PMU_MAPPINGS = 16,
	FEAT_AUXTRACE = 18,
};
static const unsigned feat_bits[] = { FEAT_BUILD_ID, FEAT_ARCH,	 FEAT_NRCPUS,	    FEAT_CPUDESC,
				      FEAT_CMDLINE,  FEAT_EVENT_DESC, FEAT_PMU_MAPPINGS, FEAT_AUXTRACE };
#define NFEAT (sizeof(feat_bits) / sizeof(feat_bits[0]))

#define FILE_HEADER_SIZE 104u
#define ATTR_SIZE 128u                  /* PERF_ATTR_SIZE_VER7: the largest perf 6.1 reads */
#define ATTR_ENTRY_SIZE (ATTR_SIZE + 16u)
#define NEVENTS 2u                      /* cs_etm//u and perf's dummy:u tracking event */
#define IDS_OFFSET FILE_HEADER_SIZE
#define ATTRS_OFFSET (IDS_OFFSET + 8u * NEVENTS)
#define DATA_OFFSET (ATTRS_OFFSET + ATTR_ENTRY_SIZE * NEVENTS)
#define AUXTRACE_HDR_SIZE 48u
#define STRING_ALIGN 64u                /* perf's strings: u32 length, padded to 64 */
#define NAME_MAX_LEN 4096u              /* PATH_MAX: longer names are refused */
#define COMM_LEN 16u                    /* TASK_COMM_LEN */

/* The events' sample IDs (any distinct non-zero values: the kernel counts
 * them up from 1). */
#define ID_CS_ETM 41u
#define ID_TRACKING 42u

#define AUXTRACE_CS_ETM 3u              /* enum auxtrace_type */
#define CS_ETMV3_MAGIC 0x3030303030303030ull
#define CS_ETMV3_NR_PARAMS 4u           /* ETMCR, ETMTRACEIDR, ETMCCER, ETMIDR */
#define CS_ETMV3_BLOCK_WORDS (3u + CS_ETMV3_NR_PARAMS)
/* AUX_OUTPUT_HW_ID (coresight-pmu.h): trace ID [7:0], sink ID [39:8],
 * minor version [59:56] (1: IDs are per sink), major [63:60] (0). */
#define HW_ID_MINOR 1ull
#define SINK_ID 0x45544231u             /* any stable value: one sink */

#define OUT_BUF_SIZE 65536u

struct csdi_perf_enc {
	struct csdi_perf_enc_config cfg;
	int err;
	uint64_t sample_type_etm, sample_type_tracking;

	/* Appended bytes not yet written, from file offset out_off. */
	uint8_t out[OUT_BUF_SIZE];
	size_t out_n;
	uint64_t out_off;

	struct csdi_frame_enc fenc;
	/* The AUX buffer being written: its AUX record is reserved at
	 * chunk_off, the AUXTRACE header follows, then chunk_bytes bytes. */
	int chunk_open;
	uint64_t chunk_off, chunk_bytes;
	uint64_t aux_pos;               /* AUX stream position: bytes of earlier buffers */
	uint64_t nchunks;
	uint64_t data_end;
	uint32_t trail_cpu;             /* the CPU the trailers name */
};

/* ------------------------------------------------------------------ */
/* Little-endian stores */

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint16_t get16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

static uint64_t align_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

/* ------------------------------------------------------------------ */
/* Output: appends are buffered, patches write at once */

static uint64_t out_pos(const struct csdi_perf_enc *e)
{
	return e->out_off + e->out_n;
}

static int out_flush(struct csdi_perf_enc *e)
{
	if (e->err)
		return e->err;
	if (e->out_n) {
		int rc = e->cfg.io.write_at(e->cfg.io.ctx, e->out_off, e->out, e->out_n);
		if (rc < 0)
			return e->err = rc;
		e->out_off += e->out_n;
		e->out_n = 0;
	}
	return 0;
}

static int emit(struct csdi_perf_enc *e, const void *p, size_t n)
{
	const uint8_t *b = p;
	while (n && !e->err) {
		size_t take = OUT_BUF_SIZE - e->out_n;
		if (take > n)
			take = n;
		memcpy(e->out + e->out_n, b, take);
		e->out_n += take;
		b += take;
		n -= take;
		if (e->out_n == OUT_BUF_SIZE)
			out_flush(e);
	}
	return e->err;
}

static int emit_zeros(struct csdi_perf_enc *e, size_t n)
{
	static const uint8_t zeros[64];
	while (n && !e->err) {
		size_t take = n < sizeof(zeros) ? n : sizeof(zeros);
		emit(e, zeros, take);
		n -= take;
	}
	return e->err;
}

/* Overwrite bytes written before (reserved space). */
static int patch(struct csdi_perf_enc *e, uint64_t off, const void *p, size_t n)
{
	if (out_flush(e) < 0)
		return e->err;
	int rc = e->cfg.io.write_at(e->cfg.io.ctx, off, p, n);
	if (rc < 0)
		e->err = rc;
	return e->err;
}

/* ------------------------------------------------------------------ */
/* Records */

static size_t rec_header(uint8_t *p, uint32_t type, uint16_t misc, size_t size)
{
	put32(p, type);
	put16(p + 4, misc);
	put16(p + 6, (uint16_t)size);
	return 8;
}

/* The sample_id_all trailer of a record of the cs_etm event (etm = 1) or
 * of the tracking event, in sample_type order: TID, CPU, IDENTIFIER. */
static size_t trailer(const struct csdi_perf_enc *e, uint8_t *p, int etm)
{
	uint64_t st = etm ? e->sample_type_etm : e->sample_type_tracking;
	size_t n = 0;
	put32(p + n, e->cfg.pid);
	put32(p + n + 4, e->cfg.tid);
	n += 8;
	if (st & SAMPLE_CPU) {
		put32(p + n, e->trail_cpu); /* the CPU the record comes from */
		put32(p + n + 4, 0);
		n += 8;
	}
	put64(p + n, etm ? ID_CS_ETM : ID_TRACKING);
	return n + 8;
}

static size_t trailer_size(const struct csdi_perf_enc *e, int etm)
{
	return (etm ? e->sample_type_etm : e->sample_type_tracking) & SAMPLE_CPU ? 24 : 16;
}

/* A record whose fields (after the 8-byte header) are body[0..n); the
 * trailer is added when `trail` is 0 or 1 (the event), not when -1. */
static int emit_record(struct csdi_perf_enc *e, uint32_t type, uint16_t misc, const uint8_t *body, size_t n,
		       int trail)
{
	uint8_t hdr[8], tr[32];
	size_t tn = trail >= 0 ? trailer(e, tr, trail) : 0;
	size_t size = 8 + n + tn;
	if (size > 0xFFFF || size % 8)
		return e->err = CSD_EINVAL;
	rec_header(hdr, type, misc, size);
	emit(e, hdr, 8);
	emit(e, body, n);
	return emit(e, tr, tn);
}

/* perf_event_attr, 128 bytes. */
static void make_attr(const struct csdi_perf_enc *e, uint8_t *a, int etm)
{
	memset(a, 0, ATTR_SIZE);
	uint64_t flags = ATTR_DISABLED | ATTR_EXCLUDE_KERNEL | ATTR_EXCLUDE_HV | ATTR_ENABLE_ON_EXEC |
			 ATTR_SAMPLE_ID_ALL;
	if (etm) {
		put32(a, e->cfg.pmu_type);
		/* perf 6.1 records the event's config as the ETMCR it asked for
		 * (cycle-accurate bit 12, context ID bits 14-15, timestamps bit
		 * 28, return stack bit 29); one config serves every CPU. */
		uint64_t config = 0;
		for (unsigned i = 0; i < e->cfg.nsources; i++)
			config |= e->cfg.sources[i].etmcr;
		put64(a + 8, config);
		put64(a + 24, e->sample_type_etm);
	} else {
		put32(a, PERF_TYPE_SOFTWARE);
		put64(a + 8, PERF_COUNT_SW_DUMMY);
		put64(a + 24, e->sample_type_tracking);
		flags |= ATTR_MMAP | ATTR_COMM | ATTR_TASK | ATTR_MMAP2 | ATTR_COMM_EXEC;
		if (e->cfg.elf && e->cfg.elf->build_id_size)
			flags |= ATTR_BUILD_ID;
	}
	put32(a + 4, ATTR_SIZE);
	put64(a + 16, 1);               /* sample_period */
	put64(a + 40, flags);
}

static size_t name_padded(const char *s, size_t align)
{
	return (size_t)align_up(strlen(s) + 1, align);
}

static int emit_front_records(struct csdi_perf_enc *e)
{
	const struct csdi_perf_enc_config *c = &e->cfg;
	uint8_t b[4096 + 128];
	size_t n;

	/* ID_INDEX: per event {id, mmap index, cpu (-1: per-thread), tid}. */
	put64(b, NEVENTS);
	for (unsigned i = 0; i < NEVENTS; i++) {
		uint8_t *p = b + 8 + 32 * i;
		put64(p, i == 0 ? ID_CS_ETM : ID_TRACKING);
		put64(p + 8, 0);
		put64(p + 16, UINT64_MAX);
		put64(p + 24, c->tid);
	}
	emit_record(e, REC_ID_INDEX, 0, b, 8 + 32 * NEVENTS, -1);

	/* AUXTRACE_INFO: type, reserved, then the cs_etm header and one
	 * ETMv3/PTM block per CPU (the v1 and v2 layout). */
	put32(b, AUXTRACE_CS_ETM);
	put32(b + 4, 0);
	n = 8;
	put64(b + n, c->version);
	put64(b + n + 8, (uint64_t)c->pmu_type << 32 | c->nsources);
	put64(b + n + 16, 0);           /* not snapshot mode */
	n += 24;
	for (unsigned i = 0; i < c->nsources; i++) {
		const struct csd_trace_config *t = &c->sources[i];
		uint64_t w[CS_ETMV3_BLOCK_WORDS] = { CS_ETMV3_MAGIC, i, CS_ETMV3_NR_PARAMS, t->etmcr,
						     t->trace_id, t->etmccer, t->etmidr };
		for (unsigned k = 0; k < CS_ETMV3_BLOCK_WORDS; k++, n += 8)
			put64(b + n, w[k]);
	}
	emit_record(e, REC_AUXTRACE_INFO, 0, b, n, -1);

	/* THREAD_MAP: the traced thread. */
	put64(b, 1);
	put64(b + 8, c->tid);
	memset(b + 16, 0, COMM_LEN);
	memcpy(b + 16, c->comm, strnlen(c->comm, COMM_LEN - 1));
	emit_record(e, REC_THREAD_MAP, 0, b, 16 + COMM_LEN, -1);

	emit_record(e, REC_FINISHED_INIT, 0, b, 0, -1);

	/* The event starts tracing when the program is exec'd. */
	put32(b, c->pid);
	put32(b + 4, c->tid);
	emit_record(e, REC_ITRACE_START, 0, b, 8, 1);
	if (c->version >= 2) {
		for (unsigned i = 0; i < c->nsources; i++) {
			/* Each CPU's ETM announces its own trace ID, from that CPU
			 * (metadata CPU i). */
			put64(b, HW_ID_MINOR << 56 | (uint64_t)SINK_ID << 8 | c->sources[i].trace_id);
			e->trail_cpu = i;
			emit_record(e, REC_AUX_OUTPUT_HW_ID, 0, b, 8, 1);
			e->trail_cpu = 0;
		}
	}

	/* COMM of the exec, then the program's executable mappings. */
	put32(b, c->pid);
	put32(b + 4, c->tid);
	size_t comm_len = strnlen(c->comm, COMM_LEN - 1);
	n = (size_t)align_up(comm_len + 1, 8);
	memset(b + 8, 0, n);
	memcpy(b + 8, c->comm, comm_len);
	emit_record(e, REC_COMM, MISC_COMM_EXEC, b, 8 + n, 0);

	size_t path_len = name_padded(c->exe_path, 8);
	for (unsigned m = 0; m < c->elf->nmaps; m++) {
		const struct csdi_perf_map *map = &c->elf->map[m];
		memset(b, 0, 64 + path_len);
		put32(b, c->pid);
		put32(b + 4, c->tid);
		put64(b + 8, map->start);
		put64(b + 16, map->len);
		put64(b + 24, map->pgoff);
		uint16_t misc = MISC_USER;
		if (c->elf->build_id_size) {
			misc |= MISC_MMAP_BUILD_ID;
			b[32] = c->elf->build_id_size;
			memcpy(b + 36, c->elf->build_id, c->elf->build_id_size);
		}
		put32(b + 56, map->prot);
		put32(b + 60, 2);       /* MAP_PRIVATE */
		memcpy(b + 64, c->exe_path, strlen(c->exe_path));
		emit_record(e, REC_MMAP2, misc, b, 64 + path_len, 0);
	}
	return e->err;
}

/* ------------------------------------------------------------------ */
/* AUX buffers */

static size_t aux_record_size(const struct csdi_perf_enc *e)
{
	return 8 + 24 + trailer_size(e, 1);
}

static int chunk_open(struct csdi_perf_enc *e)
{
	e->chunk_off = out_pos(e);
	e->chunk_bytes = 0;
	e->chunk_open = 1;
	/* Room for the AUX record and the AUXTRACE header, filled in when
	 * the buffer ends. */
	return emit_zeros(e, aux_record_size(e) + AUXTRACE_HDR_SIZE);
}

static int chunk_close(struct csdi_perf_enc *e)
{
	if (!e->chunk_open || e->err)
		return e->err;
	e->chunk_open = 0;
	uint64_t pad = align_up(e->chunk_bytes, 8) - e->chunk_bytes;
	emit_zeros(e, (size_t)pad);

	/* AUX: where the kernel put the data in the AUX area and how much;
	 * flags 0: not truncated, CoreSight frame-formatted. */
	uint8_t r[128];
	size_t asz = aux_record_size(e);
	rec_header(r, REC_AUX, 0, asz);
	put64(r + 8, e->aux_pos);
	put64(r + 16, e->chunk_bytes);
	put64(r + 24, 0);
	trailer(e, r + 32, 1);
	/* AUXTRACE: the same bytes as perf copied them out, padded to 8. */
	uint8_t *t = r + asz;
	rec_header(t, REC_AUXTRACE, 0, AUXTRACE_HDR_SIZE);
	put64(t + 8, e->chunk_bytes + pad);
	put64(t + 16, e->aux_pos);
	put64(t + 24, 0x6373646563000000ull + e->nchunks); /* reference: any value */
	put32(t + 32, 0);               /* mmap index */
	put32(t + 36, e->cfg.tid);
	put32(t + 40, UINT32_MAX);      /* per-thread: no CPU */
	put32(t + 44, 0);
	patch(e, e->chunk_off, r, asz + AUXTRACE_HDR_SIZE);

	e->aux_pos += e->chunk_bytes;
	e->nchunks++;
	return emit_record(e, REC_FINISHED_ROUND, 0, r, 0, -1);
}

static int frames_sink(void *ctx, const uint8_t *b, size_t n)
{
	struct csdi_perf_enc *e = ctx;
	if (!e->chunk_open && chunk_open(e) < 0)
		return e->err;
	e->chunk_bytes += n;
	return emit(e, b, n);
}

int csdi_perf_enc_trace(struct csdi_perf_enc *e, uint8_t trace_id, const uint8_t *bytes, size_t n)
{
	if (!e || (n && !bytes))
		return CSD_EINVAL;
	if (e->err)
		return e->err;
	unsigned i = 0;
	while (i < e->cfg.nsources && e->cfg.sources[i].trace_id != trace_id)
		i++;
	if (i == e->cfg.nsources)
		return CSD_EINVAL;
	int rc = csdi_frame_enc_data(&e->fenc, trace_id, bytes, n);
	if (rc < 0 && !e->err)
		e->err = rc;
	return e->err;
}

int csdi_perf_enc_sync_point(struct csdi_perf_enc *e)
{
	if (!e)
		return CSD_EINVAL;
	if (e->err || e->cfg.nsources != 1)
		return e->err;
	/* Bytes still in the formatter's frame count too. */
	if (e->chunk_bytes + e->fenc.slot < e->cfg.aux_size)
		return 0;
	int rc = csdi_frame_enc_restart(&e->fenc);
	if (rc < 0 && !e->err)
		e->err = rc;
	return chunk_close(e);
}

uint64_t csdi_perf_enc_buffers(const struct csdi_perf_enc *e)
{
	return e ? e->nchunks : 0;
}

/* ------------------------------------------------------------------ */
/* Features */

static int emit_string(struct csdi_perf_enc *e, const char *s)
{
	size_t len = strlen(s), padded = name_padded(s, STRING_ALIGN);
	uint8_t l[4];
	put32(l, (uint32_t)padded);
	emit(e, l, 4);
	emit(e, s, len);
	return emit_zeros(e, padded - len);
}

static int emit_u32(struct csdi_perf_enc *e, uint32_t v)
{
	uint8_t b[4];
	put32(b, v);
	return emit(e, b, 4);
}

static int emit_u64(struct csdi_perf_enc *e, uint64_t v)
{
	uint8_t b[8];
	put64(b, v);
	return emit(e, b, 8);
}

/* The AUXTRACE index: each AUXTRACE record's file offset, found by walking
 * the records written (nothing per buffer is kept in memory). */
static int emit_auxtrace_index(struct csdi_perf_enc *e)
{
	emit_u64(e, e->nchunks);
	if (out_flush(e) < 0)
		return e->err;
	uint64_t found = 0;
	/* Everything before here is in the file now; what is appended next
	 * lies past data_end, where the walk does not read. */
	for (uint64_t off = DATA_OFFSET; off < e->data_end && !e->err;) {
		uint8_t h[16];
		int rc = e->cfg.io.read_at(e->cfg.io.ctx, off, h, 8);
		if (rc < 0)
			return e->err = rc;
		uint16_t size = get16(h + 6);
		if (size < 8 || size % 8)
			return e->err = CSD_EFORMAT; /* not what was written */
		if (get32(h) != REC_AUXTRACE) {
			off += size;
			continue;
		}
		rc = e->cfg.io.read_at(e->cfg.io.ctx, off + 8, h + 8, 8);
		if (rc < 0)
			return e->err = rc;
		if (found++ == e->nchunks)
			return e->err = CSD_EFORMAT;
		emit_u64(e, off);
		emit_u64(e, AUXTRACE_HDR_SIZE);
		off += size + get64(h + 8);
	}
	if (!e->err && found != e->nchunks)
		e->err = CSD_EFORMAT;
	return e->err;
}

static int emit_feature(struct csdi_perf_enc *e, unsigned bit)
{
	const struct csdi_perf_enc_config *c = &e->cfg;
	uint8_t a[ATTR_SIZE];
	switch (bit) {
	case FEAT_BUILD_ID: {
		if (!c->elf->build_id_size)
			return 0;
		/* One entry: header {type 0, misc, size}, pid -1 (the host),
		 * the ID in 20 bytes, its size, 3 reserved, the name padded
		 * to 64. */
		uint8_t h[36];
		size_t name = name_padded(c->exe_path, STRING_ALIGN);
		memset(h, 0, sizeof(h));
		put16(h + 4, (uint16_t)(MISC_USER | MISC_BUILD_ID_SIZE));
		put16(h + 6, (uint16_t)(sizeof(h) + name));
		put32(h + 8, UINT32_MAX);
		memcpy(h + 12, c->elf->build_id, c->elf->build_id_size);
		h[32] = c->elf->build_id_size;
		emit(e, h, sizeof(h));
		emit(e, c->exe_path, strlen(c->exe_path));
		return emit_zeros(e, name - strlen(c->exe_path));
	}
	case FEAT_ARCH:
		return emit_string(e, c->arch);
	case FEAT_NRCPUS:
		emit_u32(e, c->nsources);       /* CPUs available */
		return emit_u32(e, c->nsources); /* CPUs online */
	case FEAT_CPUDESC:
		return emit_string(e, c->cpudesc);
	case FEAT_CMDLINE:
		emit_u32(e, c->cmdline_n);
		for (unsigned i = 0; i < c->cmdline_n; i++)
			emit_string(e, c->cmdline[i]);
		return e->err;
	case FEAT_EVENT_DESC:
		emit_u32(e, NEVENTS);
		emit_u32(e, ATTR_SIZE);
		for (unsigned i = 0; i < NEVENTS; i++) {
			make_attr(e, a, i == 0);
			emit(e, a, ATTR_SIZE);
			emit_u32(e, 1);
			emit_string(e, i == 0 ? "cs_etm//u" : "dummy:u");
			emit_u64(e, i == 0 ? ID_CS_ETM : ID_TRACKING);
		}
		return e->err;
	case FEAT_PMU_MAPPINGS: {
		static const struct {
			uint32_t type;
			const char *name;
		} fixed[] = { { 1, "software" }, { 2, "tracepoint" }, { 5, "breakpoint" } };
		emit_u32(e, 4);
		for (unsigned i = 0; i < 3; i++) {
			emit_u32(e, fixed[i].type);
			emit_string(e, fixed[i].name);
		}
		emit_u32(e, c->pmu_type);
		return emit_string(e, "cs_etm");
	}
	case FEAT_AUXTRACE:
		return emit_auxtrace_index(e);
	}
	return 0;
}

static int write_features(struct csdi_perf_enc *e, uint8_t bitmap[32])
{
	uint64_t table = out_pos(e);
	unsigned nset = 0;
	uint8_t sec[NFEAT][16];
	memset(bitmap, 0, 32);
	for (unsigned i = 0; i < NFEAT; i++) {
		if (feat_bits[i] == FEAT_BUILD_ID && !e->cfg.elf->build_id_size)
			continue;
		bitmap[feat_bits[i] / 8] |= (uint8_t)(1u << (feat_bits[i] % 8));
		nset++;
	}
	emit_zeros(e, 16u * nset);
	unsigned k = 0;
	for (unsigned i = 0; i < NFEAT; i++) {
		if (feat_bits[i] == FEAT_BUILD_ID && !e->cfg.elf->build_id_size)
			continue;
		uint64_t start = out_pos(e);
		if (emit_feature(e, feat_bits[i]) < 0)
			return e->err;
		put64(sec[k], start);
		put64(sec[k] + 8, out_pos(e) - start);
		k++;
	}
	return patch(e, table, sec, 16u * nset);
}

/* ------------------------------------------------------------------ */

static int config_ok(const struct csdi_perf_enc_config *c)
{
	if (!c->io.write_at || !c->io.read_at || (c->version != 1 && c->version != 2))
		return 0;
	if (c->nsources < 1 || c->nsources > CSDI_PERF_MAX_SOURCES)
		return 0;
	for (unsigned i = 0; i < c->nsources; i++) {
		uint8_t id = c->sources[i].trace_id;
		if (id < 1 || id > 0x6F)
			return 0;
		if (c->sources[i].protocol != CSD_PROTO_ETM3 && c->sources[i].protocol != CSD_PROTO_PTM)
			return 0;
		for (unsigned j = 0; j < i; j++)
			if (c->sources[j].trace_id == id)
				return 0;
	}
	if (!c->exe_path || c->exe_path[0] != '/' || strlen(c->exe_path) >= NAME_MAX_LEN)
		return 0;
	if (!c->elf || c->elf->nmaps < 1 || c->elf->nmaps > CSDI_PERF_MAX_MAPS ||
	    c->elf->build_id_size > CSDI_PERF_BUILD_ID_MAX)
		return 0;
	if (!c->comm || !c->cpudesc || !c->arch || (c->cmdline_n && !c->cmdline))
		return 0;
	if (strlen(c->cpudesc) >= NAME_MAX_LEN || strlen(c->arch) >= NAME_MAX_LEN)
		return 0;
	for (unsigned i = 0; i < c->cmdline_n; i++)
		if (!c->cmdline[i] || strlen(c->cmdline[i]) >= NAME_MAX_LEN)
			return 0;
	return 1;
}

struct csdi_perf_enc *csdi_perf_enc_new(const struct csdi_perf_enc_config *cfg, int *err)
{
	int dummy;
	if (!err)
		err = &dummy;
	if (!cfg || !config_ok(cfg)) {
		*err = CSD_EINVAL;
		return NULL;
	}
	struct csdi_perf_enc *e = calloc(1, sizeof(*e));
	if (!e) {
		*err = CSD_ENOMEM;
		return NULL;
	}
	e->cfg = *cfg;
	if (!e->cfg.pmu_type)
		e->cfg.pmu_type = 8;
	if (!e->cfg.aux_size)
		e->cfg.aux_size = CSDI_PERF_AUX_SIZE_DEFAULT;
	/* Version 2 readers take each CPU's trace ID from AUX_OUTPUT_HW_ID,
	 * whose sample must name the CPU: perf then samples the CPU of the
	 * cs_etm event, also per-thread. perf 6.1 does not, and its match of
	 * AUX records to per-thread buffers needs the CPU absent. */
	e->sample_type_etm = SAMPLE_IP | SAMPLE_TID | SAMPLE_IDENTIFIER | (cfg->version >= 2 ? SAMPLE_CPU : 0);
	e->sample_type_tracking = SAMPLE_IP | SAMPLE_TID | SAMPLE_IDENTIFIER;
	struct csdi_frame_enc_config fc = { .format = CSD_FRAME_ALIGNED, .id_every = 8, .sink = frames_sink, .ctx = e };
	csdi_frame_enc_init(&e->fenc, &fc);

	/* The IDs and attributes; the file header comes last. */
	uint8_t b[ATTR_ENTRY_SIZE];
	emit_zeros(e, FILE_HEADER_SIZE);
	emit_u64(e, ID_CS_ETM);
	emit_u64(e, ID_TRACKING);
	for (unsigned i = 0; i < NEVENTS; i++) {
		make_attr(e, b, i == 0);
		put64(b + ATTR_SIZE, IDS_OFFSET + 8u * i);
		put64(b + ATTR_SIZE + 8, 8);
		emit(e, b, ATTR_ENTRY_SIZE);
	}
	emit_front_records(e);
	if (e->err) {
		*err = e->err;
		free(e);
		return NULL;
	}
	return e;
}

int csdi_perf_enc_finish(struct csdi_perf_enc *e)
{
	if (!e)
		return CSD_EINVAL;
	if (e->err)
		return e->err;
	int rc = csdi_frame_enc_flush(&e->fenc);
	if (rc < 0 && !e->err)
		e->err = rc;
	chunk_close(e);

	uint8_t b[32];
	put32(b, e->cfg.pid);
	put32(b + 4, e->cfg.pid > 1 ? e->cfg.pid - 1 : 0); /* parent: the perf that started it */
	put32(b + 8, e->cfg.tid);
	put32(b + 12, e->cfg.pid > 1 ? e->cfg.pid - 1 : 0);
	put64(b + 16, 0);               /* time: not sampled */
	emit_record(e, REC_EXIT, 0, b, 24, 0);
	emit_record(e, REC_FINISHED_ROUND, 0, b, 0, -1);
	e->data_end = out_pos(e);

	uint8_t bitmap[32];
	write_features(e, bitmap);

	uint8_t h[FILE_HEADER_SIZE];
	memcpy(h, "PERFILE2", 8);
	put64(h + 8, FILE_HEADER_SIZE);
	put64(h + 16, ATTR_ENTRY_SIZE);
	put64(h + 24, ATTRS_OFFSET);
	put64(h + 32, ATTR_ENTRY_SIZE * NEVENTS);
	put64(h + 40, DATA_OFFSET);
	put64(h + 48, e->data_end - DATA_OFFSET);
	put64(h + 56, 0);
	put64(h + 64, 0);
	memcpy(h + 72, bitmap, 32);
	patch(e, 0, h, sizeof(h));
	out_flush(e);
	return e->err;
}

void csdi_perf_enc_free(struct csdi_perf_enc *e)
{
	free(e);
}

/* ------------------------------------------------------------------ */
/* ELF: executable segments and build ID */

#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	if (!err || !errlen)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

int csdi_perf_elf_read(const char *path, struct csdi_perf_elf *elf, char *err, size_t errlen)
{
	if (!path || !elf)
		return CSD_EINVAL;
	memset(elf, 0, sizeof(*elf));
	const char *what = NULL;
	int fd = csdi_open_regular(path, &what);
	if (fd < 0) {
		set_err(err, errlen, "%s: cannot open: %s", path, what ? what : strerror(errno));
		return CSD_EIO;
	}
	int rc = CSD_EFORMAT;
	off_t end = lseek(fd, 0, SEEK_END);
	uint64_t fsize = end < 0 ? 0 : (uint64_t)end;
	uint8_t eh[52];
	if (fsize < sizeof(eh) || csdi_pread_exact(fd, eh, sizeof(eh), 0) < 0) {
		set_err(err, errlen, "%s: not an ELF file: shorter than a 32-bit ELF header (52 bytes)", path);
		goto out;
	}
	if (memcmp(eh, "\177ELF", 4) != 0 || eh[4] != 1 || eh[5] != 1) {
		set_err(err, errlen, "%s: not a 32-bit little-endian ELF file (offsets 0-5)", path);
		goto out;
	}
	uint32_t phoff = get32(eh + 28);
	uint16_t phentsize = get16(eh + 42), phnum = get16(eh + 44);
	if (phnum && phentsize < 32) {
		set_err(err, errlen, "%s: program header size %u (offset 42) is below 32", path, phentsize);
		goto out;
	}
	if (phnum && (phoff > fsize || (uint64_t)phentsize * phnum > fsize - phoff)) {
		set_err(err, errlen, "%s: %u program headers at offset 0x%" PRIx32 " pass the end of the file", path,
			phnum, phoff);
		goto out;
	}
	for (unsigned i = 0; i < phnum; i++) {
		uint8_t ph[32];
		uint64_t at = phoff + (uint64_t)i * phentsize;
		if (csdi_pread_exact(fd, ph, sizeof(ph), at) < 0) {
			set_err(err, errlen, "%s: cannot read program header %u at offset 0x%" PRIx64, path, i, at);
			rc = CSD_EIO;
			goto out;
		}
		uint32_t type = get32(ph), off = get32(ph + 4), vaddr = get32(ph + 8), filesz = get32(ph + 16);
		uint32_t flags = get32(ph + 24);
		if ((uint64_t)off + filesz > fsize) {
			set_err(err, errlen, "%s: program header %u at offset 0x%" PRIx64 ": segment passes the end of the file",
				path, i, at);
			goto out;
		}
		if (type != 1 /* PT_LOAD */ || !(flags & 1) /* PF_X */ || filesz == 0)
			continue;
		if ((vaddr & 0xFFFu) != (off & 0xFFFu)) {
			set_err(err, errlen, "%s: program header %u at offset 0x%" PRIx64 ": address 0x%" PRIx32
				" and file offset 0x%" PRIx32 " differ within a page: not mappable", path, i, at, vaddr, off);
			goto out;
		}
		if (elf->nmaps == CSDI_PERF_MAX_MAPS) {
			set_err(err, errlen, "%s: more than %u executable segments", path, CSDI_PERF_MAX_MAPS);
			rc = CSD_EINVAL;
			goto out;
		}
		struct csdi_perf_map *m = &elf->map[elf->nmaps++];
		m->start = vaddr & ~0xFFFu;
		m->pgoff = off & ~0xFFFu;
		m->len = align_up((vaddr & 0xFFFu) + (uint64_t)filesz, 0x1000);
		m->prot = (flags & 4 ? 1u : 0) | (flags & 2 ? 2u : 0) | 4u;
	}
	if (!elf->nmaps) {
		set_err(err, errlen, "%s: no executable loadable segment", path);
		rc = CSD_ENOENT;
		goto out;
	}
	/* The build ID as perf.data's readers take it (perf_files.c). */
	const int bid = csd_elf_build_id(path, elf->build_id);
	elf->build_id_size = bid > 0 ? (uint8_t)bid : 0;
	rc = 0;
out:
	close(fd);
	return rc;
}
