/* perf_data.c - Linux perf.data files with cs_etm AUX trace (csd_perf_*).
 *
 * File layout (perf's own headers define it; only little-endian files in
 * "file mode" are read): a 104-byte header naming the attribute section,
 * the data section (the records) and, behind the data, a table of feature
 * sections. Among the records, AUXTRACE_INFO carries the cs_etm metadata
 * (one block per traced CPU), AUXTRACE records carry the trace bytes
 * (their payload follows the 48-byte record and is not counted in its
 * size), and AUX records say which part of the AUX stream one sink session
 * wrote and with which flags (formatted or raw, truncated...).
 *
 * Nothing is held per record: the records are walked through a window of
 * the file. The AUX records that describe an AUXTRACE buffer may come
 * before or after it in the file, so a second cursor runs ahead of the
 * walk and keeps the AUX records it passes, in a pool of bounded size with
 * one chain per queue (a CPU, or a thread when perf recorded per thread),
 * until the buffer they describe has been handed out: matching a buffer
 * looks at its own queue's records only. Every size read
 * from the file is checked against the file before it is used, and any
 * allocation a size drives is capped.
 */
#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csdec.h"
#include "file.h"
#include "perf_data.h"

#define HEADER_SIZE 104u
#define HEADER_SIZE_OLD 72u            /* header without the feature bitmap */
#define PIPE_HEADER_SIZE 16u
#define WIN_SIZE (128u << 10)          /* a record is at most 64 KiB */
#define MAX_ATTRS_KEPT 64
/* Sample IDs of the attributes kept, for files whose events differ in
 * sample_type: a record's trailer then says its event by its last word. */
#define MAX_SAMPLE_IDS 4096
#define MAX_ATTRS (1u << 16)
#define MAX_STRING 4096                /* feature strings kept (longer ones are cut) */
#define MAX_BUILD_ID_NAMES (8u << 20)  /* bytes of build-ID table file names kept */
#define MAX_BUILD_IDS 65536
#define LOOKAHEAD_RECORDS 65536        /* records the AUX cursor passes per buffer beyond the walk */
#define MAX_CHAINS 256                 /* queues whose AUX records are kept */
#define WILDCARD MAX_CHAINS            /* the chain of AUX records that name no queue */
#define NO_ENTRY UINT32_MAX

/* Record types (perf_event.h; perf's user records from 64). */
enum {
	REC_MMAP = 1, REC_LOST = 2, REC_COMM = 3, REC_EXIT = 4, REC_FORK = 7, REC_SAMPLE = 9,
	REC_MMAP2 = 10, REC_AUX = 11, REC_ITRACE_START = 12, REC_LOST_SAMPLES = 13, REC_SWITCH = 14,
	REC_SWITCH_CPU_WIDE = 15, REC_AUX_OUTPUT_HW_ID = 21,
	REC_USER_FIRST = 64, REC_AUXTRACE_INFO = 70, REC_AUXTRACE = 71,
};

/* PERF_SAMPLE_* bits that put a field into the sample_id trailer. */
#define SAMPLE_TID (1u << 1)
#define SAMPLE_TIME (1u << 2)
#define SAMPLE_ID (1u << 6)
#define SAMPLE_CPU (1u << 7)
#define SAMPLE_STREAM_ID (1u << 9)
#define SAMPLE_IDENTIFIER (1u << 16)

#define MISC_CPUMODE 7u
#define MISC_SWITCH_OUT 0x2000u        /* also COMM_EXEC */
#define MISC_PREEMPT 0x4000u           /* also MMAP_BUILD_ID */
#define MISC_BUILD_ID_SIZE 0x8000u     /* build-ID table entry: size byte valid */

/* Feature bits. */
enum {
	FEAT_BUILD_ID = 2, FEAT_HOSTNAME = 3, FEAT_OSRELEASE = 4, FEAT_VERSION = 5, FEAT_ARCH = 6,
	FEAT_NRCPUS = 7, FEAT_CPUDESC = 8, FEAT_CPUID = 9, FEAT_CMDLINE = 11,
};

/* cs_etm metadata. */
#define AUXTRACE_CS_ETM 3u
#define MAGIC_ETM3 UINT64_C(0x3030303030303030)
#define MAGIC_ETM4 UINT64_C(0x4040404040404040)
#define MAGIC_ETE UINT64_C(0x5050505050505050)

struct window {
	uint8_t *buf;
	uint64_t off;                  /* file offset of buf[0] */
	size_t len;
};

/* A PERF_RECORD_AUX waiting for the trace it describes. */
struct aux_pending {
	uint64_t offset, size, flags;
	uint64_t done;                 /* stream position handed out up to */
	int32_t tid, pid;
	uint32_t seq;                  /* order of arrival */
	uint32_t next;                 /* in its chain or the free list */
	uint8_t has_tid;
};

/* The pending AUX records of one queue, oldest first. */
struct aux_chain {
	int32_t key;
	uint32_t head, tail;
};

/* The AUXTRACE buffer being handed out in pieces. */
struct current_buffer {
	int active;
	uint64_t record;               /* file offset of the record */
	uint64_t payload;              /* file offset of its bytes */
	uint64_t start, end;           /* its AUX stream range */
	uint64_t pos;                  /* handed out up to */
	int32_t cpu, tid;
	uint32_t idx;
	int matched;                   /* an AUX record covered some of it */
};

struct cursor {
	uint64_t pos;
	struct window win;
};

/* One record at a cursor, checked to lie inside the data section. */
struct record {
	uint64_t offset;
	uint32_t type;
	uint16_t misc, size;
	const uint8_t *p;              /* the record's bytes (size of them) */
	uint64_t payload;              /* AUXTRACE: bytes after the record */
};

struct csd_perf {
	char *path;
	int fd;                        /* -1 when reading memory */
	const uint8_t *mem;
	uint64_t file_size;
	uint64_t data_start, data_end;
	int data_truncated;            /* the header's data section passes the end of the file */
	uint64_t sample_type;
	int sample_id_all;
	unsigned trailer_size;
	struct csd_perf_info info;
	char *strings[7];              /* owned feature strings */
	char features_note[200];       /* info.features_cut */
	struct csd_perf_cpu *cpus;
	size_t ncpus;
	struct csd_perf_build_id *bids;
	size_t nbids;
	char *bid_names;
	struct cursor walk, ahead;
	int ahead_dead;                /* the AUX cursor met a record it cannot read */
	int walk_rc;                   /* error that ended the walk, or 0 */
	struct current_buffer cur;
	struct aux_pending *pool;
	uint32_t free_list;
	size_t pending;                /* pool entries in chains */
	struct aux_chain chains[MAX_CHAINS + 1]; /* [WILDCARD]: no queue named */
	size_t nchains;
	uint32_t seq;
	int per_thread;                /* AUX records are keyed by thread (else CPU) */
	int mode_known;
	char text[2][65536];           /* event strings */
	char err[512];
	struct {
		uint32_t type;
		uint64_t config;
		uint64_t sample_type;
	} attrs[MAX_ATTRS_KEPT];
	size_t nattrs_kept;
	int mixed;                     /* events differ in sample_type: look each record's up */
	struct {
		uint64_t id;
		uint32_t attr;
	} ids[MAX_SAMPLE_IDS];
	size_t nids;
};

static const char *const event_names[CSD_PERF_EVENT_COUNT] = {
	[CSD_PERF_AUX_DATA] = "aux_data",
	[CSD_PERF_AUX] = "aux",
	[CSD_PERF_MMAP] = "mmap",
	[CSD_PERF_COMM] = "comm",
	[CSD_PERF_ITRACE_START] = "itrace_start",
	[CSD_PERF_SWITCH] = "switch",
	[CSD_PERF_HW_ID] = "hw_id",
	[CSD_PERF_FORK] = "fork",
	[CSD_PERF_EXIT] = "exit",
	[CSD_PERF_LOST] = "lost",
};

const char *csd_perf_event_name(int type)
{
	if (type <= 0 || type >= CSD_PERF_EVENT_COUNT || !event_names[type])
		return "unknown";
	return event_names[type];
}

static uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | p[1] << 8);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint64_t le64(const uint8_t *p)
{
	return (uint64_t)le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* "PATH: offset 0xN: reason" into pd->err; returns rc. */
static int fail_at(csd_perf *pd, int rc, uint64_t offset, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 4, 5)))
#endif
	;
static int fail_at(csd_perf *pd, int rc, uint64_t offset, const char *fmt, ...)
{
	int n = snprintf(pd->err, sizeof(pd->err), "%s: offset 0x%" PRIx64 ": ", pd->path, offset);
	if (n > 0 && (size_t)n < sizeof(pd->err)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(pd->err + n, sizeof(pd->err) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	return rc;
}

/* The file ends inside its feature sections, at the one at `offset`
 * (info.features_cut, worded as fail_at's without the path): those from
 * there on are not read; the records are. */
static int features_cut(csd_perf *pd, uint64_t offset, const char *fmt, ...)
#if defined(__GNUC__)
	__attribute__((format(printf, 3, 4)))
#endif
	;
static int features_cut(csd_perf *pd, uint64_t offset, const char *fmt, ...)
{
	int n = snprintf(pd->features_note, sizeof(pd->features_note), "offset 0x%" PRIx64 ": ", offset);
	if (n > 0 && (size_t)n < sizeof(pd->features_note)) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(pd->features_note + n, sizeof(pd->features_note) - (size_t)n, fmt, ap);
		va_end(ap);
	}
	pd->info.features_cut = pd->features_note;
	return CSD_OK;
}

/* Read exactly n bytes at off, which the caller has checked lie in the
 * file. */
static int read_at(csd_perf *pd, uint64_t off, void *buf, size_t n)
{
	if (pd->fd < 0) {
		memcpy(buf, pd->mem + off, n);
		return CSD_OK;
	}
	uint8_t *b = buf;
	while (n) {
		ssize_t got = pread(pd->fd, b, n, (off_t)off);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			return fail_at(pd, CSD_EIO, off, "read error: %s", strerror(errno));
		if (got == 0)
			return fail_at(pd, CSD_EIO, off, "the file ends here (it shrank while being read?)");
		b += got;
		off += (uint64_t)got;
		n -= (size_t)got;
	}
	return CSD_OK;
}

/* Point *p at [off, off + n) of the file (n <= WIN_SIZE / 2, inside the
 * file), reading through the window. */
static int win_get(csd_perf *pd, struct window *w, uint64_t off, size_t n, const uint8_t **p)
{
	if (pd->fd < 0) {
		*p = pd->mem + off;
		return CSD_OK;
	}
	if (off < w->off || off + n > w->off + w->len) {
		uint64_t left = pd->file_size - off;
		size_t len = left < WIN_SIZE ? (size_t)left : WIN_SIZE;
		w->len = 0;
		int rc = read_at(pd, off, w->buf, len);
		if (rc < 0)
			return rc;
		w->off = off;
		w->len = len;
	}
	*p = w->buf + (off - w->off);
	return CSD_OK;
}

/* The record at c->pos. Returns 1 with *r filled, 0 at the end of the
 * data section, or an error naming the offset. */
static int record_at(csd_perf *pd, struct cursor *c, struct record *r)
{
	uint64_t off = c->pos;
	if (off >= pd->data_end)
		return 0;
	uint64_t avail = (pd->data_end < pd->file_size ? pd->data_end : pd->file_size);
	if (off >= avail)
		return fail_at(pd, CSD_EIO, off,
			       "the file ends here, inside the data section (its header says it ends at 0x%" PRIx64
			       "): the file is truncated", pd->data_end);
	if (avail - off < 8)
		return fail_at(pd, CSD_EIO, off, "the file ends inside a record header (%" PRIu64 " of 8 bytes)",
			       avail - off);
	const uint8_t *h;
	int rc = win_get(pd, &c->win, off, 8, &h);
	if (rc < 0)
		return rc;
	r->offset = off;
	r->type = le32(h);
	r->misc = le16(h + 4);
	r->size = le16(h + 6);
	r->payload = 0;
	if (r->size < 8)
		return fail_at(pd, CSD_EFORMAT, off, "record type %" PRIu32 " has size %u, less than its 8-byte header",
			       r->type, r->size);
	if (r->size > avail - off) {
		if (pd->data_end <= pd->file_size)
			return fail_at(pd, CSD_EFORMAT, off,
				       "record type %" PRIu32 " of %u bytes passes the end of the data section (0x%" PRIx64 ")",
				       r->type, r->size, pd->data_end);
		return fail_at(pd, CSD_EIO, off, "the file ends inside this record (type %" PRIu32 ", %u bytes): truncated",
			       r->type, r->size);
	}
	rc = win_get(pd, &c->win, off, r->size, &r->p);
	if (rc < 0)
		return rc;
	if (r->type == REC_AUXTRACE) {
		if (r->size < 48)
			return fail_at(pd, CSD_EFORMAT, off, "AUXTRACE record of %u bytes (at least 48 expected)", r->size);
		r->payload = le64(r->p + 8);
		uint64_t end = off + r->size;
		if (r->payload > avail - end) {
			if (pd->data_end <= pd->file_size || r->payload > pd->data_end - end)
				return fail_at(pd, CSD_EFORMAT, off,
					       "AUXTRACE record: its %" PRIu64 " bytes of trace pass the end of the data "
					       "section (0x%" PRIx64 ")", r->payload, pd->data_end);
			return fail_at(pd, CSD_EIO, off,
				       "AUXTRACE record: the file ends inside its %" PRIu64 " bytes of trace: truncated",
				       r->payload);
		}
	}
	return 1;
}

static void cursor_skip(struct cursor *c, const struct record *r)
{
	c->pos = r->offset + r->size + r->payload;
}

/* ------------------------------------------------------------------------
 * sample_id trailers and record fields
 * ---------------------------------------------------------------------- */

struct sample_id {
	int32_t pid, tid, cpu;
	uint64_t time;
	int has_time, has_tid, has_cpu;
};

static int has_trailer(const csd_perf *pd, uint32_t type)
{
	return pd->sample_id_all && type < REC_USER_FIRST && type != REC_SAMPLE;
}

static unsigned trailer_bytes(uint64_t st)
{
	unsigned tr = 0;
	uint64_t fields = SAMPLE_TID | SAMPLE_TIME | SAMPLE_ID | SAMPLE_STREAM_ID | SAMPLE_CPU | SAMPLE_IDENTIFIER;
	for (uint64_t b = st & fields; b; b &= b - 1)
		tr += 8;
	return tr;
}

/* The sample_type of record r's event and its trailer's size. With events
 * of one sample_type, theirs; else every event has the identifier as its
 * trailer's last word (as perf requires then), which names the event (0:
 * the first). -1 when it names none. */
static int record_trailer(const csd_perf *pd, const struct record *r, uint64_t *st, unsigned *tr)
{
	*st = pd->sample_type;
	*tr = has_trailer(pd, r->type) ? pd->trailer_size : 0;
	if (!pd->mixed || !*tr)
		return 0;
	if (r->size < 8)
		return -1;
	uint64_t id = le64(r->p + r->size - 8);
	if (id != 0) {
		size_t k = 0;
		while (k < pd->nids && pd->ids[k].id != id)
			k++;
		if (k == pd->nids)
			return -1;
		*st = pd->attrs[pd->ids[k].attr].sample_type;
	} else {
		*st = pd->attrs[0].sample_type;
	}
	*tr = trailer_bytes(*st);
	return 0;
}

/* The sample_id fields at the end of r; the fixed part needs `fixed`
 * bytes. */
static int parse_trailer(csd_perf *pd, const struct record *r, unsigned fixed, struct sample_id *sid)
{
	memset(sid, 0, sizeof(*sid));
	sid->pid = sid->tid = sid->cpu = -1;
	uint64_t st;
	unsigned tr;
	if (record_trailer(pd, r, &st, &tr) < 0)
		return fail_at(pd, CSD_EFORMAT, r->offset,
			       "record type %" PRIu32 ": its sample identifier names no event of the file", r->type);
	if ((unsigned)r->size < fixed + tr)
		return fail_at(pd, CSD_EFORMAT, r->offset,
			       "record type %" PRIu32 " of %u bytes is too short for its %u bytes of fields%s", r->type,
			       r->size, fixed + tr, tr ? " and sample_id" : "");
	if (!tr)
		return CSD_OK;
	const uint8_t *p = r->p + r->size - tr;
	if (st & SAMPLE_TID) {
		sid->pid = (int32_t)le32(p);
		sid->tid = (int32_t)le32(p + 4);
		sid->has_tid = 1;
		p += 8;
	}
	if (st & SAMPLE_TIME) {
		sid->time = le64(p);
		sid->has_time = 1;
		p += 8;
	}
	if (st & SAMPLE_ID)
		p += 8;
	if (st & SAMPLE_STREAM_ID)
		p += 8;
	if (st & SAMPLE_CPU) {
		sid->cpu = (int32_t)le32(p);
		sid->has_cpu = 1;
	}
	return CSD_OK;
}

/* A NUL-terminated string from [p, p + n) into out (at most its size). */
static const char *take_string(char *out, size_t cap, const uint8_t *p, size_t n)
{
	size_t k = 0;
	while (k < n && k + 1 < cap && p[k])
		k++;
	memcpy(out, p, k);
	out[k] = 0;
	return out;
}

/* ------------------------------------------------------------------------
 * Opening: header, attributes, features, metadata
 * ---------------------------------------------------------------------- */

static int read_attrs(csd_perf *pd, const uint8_t *h)
{
	uint64_t attr_size = le64(h + 16), off = le64(h + 24), size = le64(h + 32);
	if (size == 0)
		return CSD_OK;
	if (attr_size < 48 + 16 || attr_size > 65536)
		return fail_at(pd, CSD_EFORMAT, 16, "attribute entry size %" PRIu64 " (expected 80 - 65536)", attr_size);
	if (off > pd->file_size || size > pd->file_size - off)
		return fail_at(pd, CSD_EFORMAT, 24,
			       "attribute section [0x%" PRIx64 ", +0x%" PRIx64 ") passes the end of the file (0x%" PRIx64 ")",
			       off, size, pd->file_size);
	uint64_t n = size / attr_size;
	if (n > MAX_ATTRS)
		return fail_at(pd, CSD_EFORMAT, 32, "%" PRIu64 " attributes (at most %u are read)", n, MAX_ATTRS);
	pd->info.nr_attrs = (uint32_t)n;
	for (uint64_t i = 0; i < n; i++) {
		uint8_t a[48];
		uint64_t at = off + i * attr_size;
		int rc = read_at(pd, at, a, sizeof(a));
		if (rc < 0)
			return rc;
		uint64_t st = le64(a + 24);
		int id_all = (int)((le64(a + 40) >> 18) & 1);
		if (i == 0) {
			pd->sample_type = st;
			pd->sample_id_all = id_all;
		} else if (id_all != pd->sample_id_all) {
			return fail_at(pd, CSD_EFORMAT, at,
				       "attribute %" PRIu64 " has sample_id_all %d, attribute 0 %d: records cannot be read", i,
				       id_all, pd->sample_id_all);
		} else if (st != pd->sample_type) {
			/* Events may differ in what they sample as long as the
			 * identifier ends every trailer (perf's own rule). */
			if (!(st & SAMPLE_IDENTIFIER) || !(pd->sample_type & SAMPLE_IDENTIFIER))
				return fail_at(pd, CSD_EFORMAT, at,
					       "attribute %" PRIu64 " has sample_type 0x%" PRIx64 ", attribute 0 0x%" PRIx64
					       ", and not both have the sample identifier: records cannot be read", i, st,
					       pd->sample_type);
			if (i >= MAX_ATTRS_KEPT)
				return fail_at(pd, CSD_EFORMAT, at,
					       "attribute %" PRIu64 " of differing sample types (at most %u are read)", i,
					       MAX_ATTRS_KEPT);
			pd->mixed = 1;
		}
		if (pd->nattrs_kept < MAX_ATTRS_KEPT) {
			size_t k = pd->nattrs_kept++;
			pd->attrs[k].type = le32(a);
			pd->attrs[k].config = le64(a + 8);
			pd->attrs[k].sample_type = st;
			/* The event's sample IDs: {offset, size} after the attr. */
			uint8_t ids[16];
			rc = read_at(pd, at + attr_size - 16, ids, sizeof(ids));
			if (rc < 0)
				return rc;
			uint64_t ioff = le64(ids), isize = le64(ids + 8);
			if (ioff > pd->file_size || isize > pd->file_size - ioff)
				return fail_at(pd, CSD_EFORMAT, at + attr_size - 16,
					       "sample IDs of attribute %" PRIu64 " [0x%" PRIx64 ", +0x%" PRIx64
					       ") pass the end of the file", i, ioff, isize);
			for (uint64_t j = 0; j + 8 <= isize && pd->nids < MAX_SAMPLE_IDS; j += 8) {
				uint8_t w[8];
				rc = read_at(pd, ioff + j, w, 8);
				if (rc < 0)
					return rc;
				pd->ids[pd->nids].id = le64(w);
				pd->ids[pd->nids].attr = (uint32_t)k;
				pd->nids++;
			}
		}
	}
	pd->trailer_size = trailer_bytes(pd->sample_type);
	pd->info.sample_type = pd->sample_type;
	pd->info.sample_id_all = pd->sample_id_all;
	return CSD_OK;
}

/* A feature section {offset, size} (its table entry at `entry`),
 * checked to lie in the file. */
struct section {
	uint64_t entry, off, size;
};

/* A perf header string (u32 length, then the bytes) at *pos inside s,
 * kept up to MAX_STRING bytes; *pos moves past it. */
static int section_string(csd_perf *pd, const struct section *s, uint64_t *pos, char *out, size_t cap)
{
	uint8_t lb[4];
	if (s->size < 4 || *pos > s->size - 4)
		return fail_at(pd, CSD_EFORMAT, s->off + *pos, "feature string passes the end of its section");
	int rc = read_at(pd, s->off + *pos, lb, 4);
	if (rc < 0)
		return rc;
	uint32_t len = le32(lb);
	*pos += 4;
	if (len > s->size - *pos)
		return fail_at(pd, CSD_EFORMAT, s->off + *pos - 4,
			       "feature string of %" PRIu32 " bytes passes the end of its section (%" PRIu64 " bytes)", len,
			       s->size);
	size_t keep = len < cap - 1 ? len : cap - 1;
	rc = read_at(pd, s->off + *pos, out, keep);
	if (rc < 0)
		return rc;
	out[keep] = 0;
	out[strnlen(out, keep)] = 0;
	*pos += len;
	return CSD_OK;
}

static int feature_string(csd_perf *pd, const struct section *s, int slot, const char **dst)
{
	char *buf = malloc(MAX_STRING);
	if (!buf)
		return fail_at(pd, CSD_ENOMEM, s->off, "out of memory");
	pd->strings[slot] = buf;
	uint64_t pos = 0;
	int rc = section_string(pd, s, &pos, buf, MAX_STRING);
	if (rc < 0)
		return rc;
	*dst = buf;
	return CSD_OK;
}

static int feature_cmdline(csd_perf *pd, const struct section *s)
{
	uint8_t nb[4];
	if (s->size < 4)
		return fail_at(pd, CSD_EFORMAT, s->off, "command line section of %" PRIu64 " bytes", s->size);
	int rc = read_at(pd, s->off, nb, 4);
	if (rc < 0)
		return rc;
	uint32_t nr = le32(nb);
	char *buf = malloc(MAX_STRING), *word = malloc(MAX_STRING);
	pd->strings[6] = buf;
	if (!buf || !word) {
		free(word);
		return fail_at(pd, CSD_ENOMEM, s->off, "out of memory");
	}
	size_t n = 0;
	uint64_t pos = 4;
	buf[0] = 0;
	/* Each word takes at least 4 bytes of the section; words past the
	 * length kept are not read. */
	for (uint32_t i = 0; i < nr && rc == 0 && n + 2 < MAX_STRING; i++) {
		rc = section_string(pd, s, &pos, word, MAX_STRING);
		size_t wl = rc == 0 ? strlen(word) : 0;
		if (rc == 0 && n + wl + 2 < MAX_STRING) {
			if (n)
				buf[n++] = ' ';
			memcpy(buf + n, word, wl + 1);
			n += wl;
		}
	}
	free(word);
	if (rc < 0)
		return rc;
	pd->info.cmdline = buf;
	return CSD_OK;
}

static int feature_nrcpus(csd_perf *pd, const struct section *s)
{
	uint8_t b[8];
	if (s->size < 8)
		return fail_at(pd, CSD_EFORMAT, s->off, "NRCPUS section of %" PRIu64 " bytes (8 expected)", s->size);
	int rc = read_at(pd, s->off, b, 8);
	if (rc < 0)
		return rc;
	pd->info.nr_cpus_avail = le32(b);
	pd->info.nr_cpus_online = le32(b + 4);
	return CSD_OK;
}

/* The build-ID table: entries of {u32 type, u16 misc, u16 size, s32 pid,
 * u8 id[20], u8 id_size, u8 pad[3], file name} until the section ends.
 * The oldest files have no pid ({header, id[24], name}); perf tells them
 * by a first name that reads "nel.kallsyms]" in the newer layout. */
static int feature_build_ids(csd_perf *pd, const struct section *s)
{
	size_t cap = 0, names_cap = 0, names_n = 0;
	int old_layout = 0;
	uint64_t pos = 0;
	while (s->size - pos >= 8 && pd->nbids < MAX_BUILD_IDS) {
		uint8_t h[36];
		uint64_t at = s->off + pos;
		int rc = read_at(pd, at, h, 8);
		if (rc < 0)
			return rc;
		uint16_t misc = le16(h + 4), size = le16(h + 6);
		unsigned fixed = old_layout ? 32 : 36;
		if (size < fixed || size > s->size - pos)
			return fail_at(pd, CSD_EFORMAT, at,
				       "build-ID entry of %u bytes (at least %u, and inside its section of %" PRIu64 " bytes)",
				       size, fixed, s->size);
		rc = read_at(pd, at, h, fixed);
		if (rc < 0)
			return rc;
		uint8_t name[MAX_STRING];
		size_t nl = size - fixed < sizeof(name) - 1 ? size - fixed : sizeof(name) - 1;
		rc = read_at(pd, at + fixed, name, nl);
		if (rc < 0)
			return rc;
		name[nl] = 0;
		nl = strlen((char *)name);
		if (pos == 0 && !old_layout && strncmp((char *)name, "nel.kallsyms]", 13) == 0) {
			old_layout = 1;
			continue;
		}
		if (names_n + nl + 1 > MAX_BUILD_ID_NAMES)
			break;
		if (pd->nbids == cap) {
			size_t nc = cap ? cap * 2 : 16;
			struct csd_perf_build_id *nb = realloc(pd->bids, nc * sizeof(*nb));
			if (!nb)
				return fail_at(pd, CSD_ENOMEM, at, "out of memory");
			pd->bids = nb;
			cap = nc;
		}
		if (names_n + nl + 1 > names_cap) {
			size_t nc = names_cap ? names_cap * 2 : 4096;
			while (nc < names_n + nl + 1)
				nc *= 2;
			char *nn = realloc(pd->bid_names, nc);
			if (!nn)
				return fail_at(pd, CSD_ENOMEM, at, "out of memory");
			pd->bid_names = nn;
			names_cap = nc;
		}
		memcpy(pd->bid_names + names_n, name, nl + 1);
		struct csd_perf_build_id *b = &pd->bids[pd->nbids++];
		memset(b, 0, sizeof(*b));
		b->cpumode = misc & MISC_CPUMODE;
		if (old_layout) {
			b->pid = -1;
			memcpy(b->id, h + 8, 20);
			b->size = 20;
		} else {
			b->pid = (int32_t)le32(h + 8);
			memcpy(b->id, h + 12, 20);
			b->size = (misc & MISC_BUILD_ID_SIZE) && h[32] <= 20 ? h[32] : 20;
		}
		/* The name's place for now: the buffer may still move. */
		b->filename = (const char *)(uintptr_t)names_n;
		names_n += nl + 1;
		pos += size;
	}
	for (size_t i = 0; i < pd->nbids; i++)
		pd->bids[i].filename = pd->bid_names + (uintptr_t)pd->bids[i].filename;
	return CSD_OK;
}

static int popcount64(uint64_t v)
{
	int n = 0;
	for (; v; v &= v - 1)
		n++;
	return n;
}

/* The feature table at the end of the data section: one {offset, size}
 * per set bit of the header's bitmap, in bit order. */
static int read_features(csd_perf *pd, const uint8_t *h)
{
	uint64_t bits[4];
	for (int i = 0; i < 4; i++)
		bits[i] = le64(h + 72 + 8 * i);
	int total = 0;
	for (int i = 0; i < 4; i++)
		total += popcount64(bits[i]);
	if (total == 0)
		return CSD_OK;
	uint64_t table = pd->data_end;
	/* A file that ends in its features (after its records) is read as
	 * far as it goes, as one that ends in its records is: noted, and the
	 * features from there on are absent. */
	if (table > pd->file_size || (uint64_t)total * 16 > pd->file_size - table)
		return features_cut(pd, table, "the table of %d feature sections passes the end of the file (0x%" PRIx64 ")",
				    total, pd->file_size);
	static const struct {
		int bit;
		int slot;
	} strs[] = {
		{ FEAT_HOSTNAME, 0 }, { FEAT_OSRELEASE, 1 }, { FEAT_VERSION, 2 },
		{ FEAT_ARCH, 3 }, { FEAT_CPUDESC, 4 }, { FEAT_CPUID, 5 },
	};
	const char **dst[6] = { &pd->info.hostname, &pd->info.os_release, &pd->info.perf_version,
				&pd->info.arch, &pd->info.cpu_desc, &pd->info.cpuid };
	/* Every section must lie in the file, read or not: a file cut there
	 * is noted as cut, and nothing from that section on is read. */
	for (int bit = 0; bit < 256; bit++) {
		uint64_t word = bits[bit / 64], below = word & ((UINT64_C(1) << (bit % 64)) - 1);
		if (!((word >> (bit % 64)) & 1))
			continue;
		int index = popcount64(below);
		for (int w = 0; w < bit / 64; w++)
			index += popcount64(bits[w]);
		struct section s;
		uint8_t e[16];
		s.entry = table + 16 * (uint64_t)index;
		int rc = read_at(pd, s.entry, e, 16);
		if (rc < 0)
			return rc;
		s.off = le64(e);
		s.size = le64(e + 8);
		if (s.off > pd->file_size || s.size > pd->file_size - s.off)
			return features_cut(pd, s.entry,
					    "feature %d's section [0x%" PRIx64 ", +0x%" PRIx64 ") passes the end of the file (0x%" PRIx64
					    ")", bit, s.off, s.size, pd->file_size);
		int wanted = bit == FEAT_BUILD_ID || bit == FEAT_NRCPUS || bit == FEAT_CMDLINE;
		for (size_t k = 0; k < sizeof(strs) / sizeof(strs[0]); k++)
			wanted |= strs[k].bit == bit;
		if (!wanted)
			continue;
		if (bit == FEAT_BUILD_ID)
			rc = feature_build_ids(pd, &s);
		else if (bit == FEAT_NRCPUS)
			rc = feature_nrcpus(pd, &s);
		else if (bit == FEAT_CMDLINE)
			rc = feature_cmdline(pd, &s);
		else
			for (size_t k = 0; k < sizeof(strs) / sizeof(strs[0]); k++)
				if (strs[k].bit == bit)
					rc = feature_string(pd, &s, strs[k].slot, dst[k]);
		if (rc < 0)
			return rc;
	}
	return CSD_OK;
}

/* ETMIDR[11:8]: 2 ETMv3, 3 PTM (PFT 1.0 / 1.1: [7:4] 0 or 1). perf itself
 * takes bits 9:8 both set as PTM and everything else as ETMv3; an ID of 0
 * (not recorded) is taken as ETMv3 as perf does. */
static uint32_t v3_unit(uint32_t etmidr)
{
	unsigned major = (etmidr >> 8) & 0xF, minor = (etmidr >> 4) & 0xF;
	if (etmidr == 0 || major == 2)
		return CSD_PERF_UNIT_ETM3;
	if (major == 3 && minor <= 1)
		return CSD_PERF_UNIT_PTM;
	return CSD_PERF_UNIT_OTHER;
}

static void set_trace_id(struct csd_perf_cpu *c, unsigned id, uint32_t from)
{
	int ok = id >= 1 && id < 0x70;
	c->id_from = ok ? from : CSD_PERF_ID_NONE;
	if (c->unit == CSD_PERF_UNIT_ETM3 || c->unit == CSD_PERF_UNIT_PTM)
		c->config.trace_id = (uint8_t)id;
}

/* AUXTRACE_INFO of cs_etm: priv[0] header version, priv[1] PMU type << 32
 * | number of blocks, priv[2] snapshot mode, then the blocks. Version 0
 * blocks have a fixed length per kind; later versions give the number of
 * parameters in the third word. */
static int parse_metadata(csd_perf *pd, const struct record *r)
{
	uint64_t base = r->offset + 16;
	if (r->size < 16 + 24 || (r->size - 16) % 8)
		return fail_at(pd, CSD_EFORMAT, r->offset,
			       "cs_etm AUXTRACE_INFO of %u bytes (a 16-byte head and at least three 8-byte words)", r->size);
	size_t n = (r->size - 16u) / 8u;
	const uint8_t *w = r->p + 16;
#define W(i) le64(w + 8 * (size_t)(i))
	uint64_t version = W(0);
	if (version > 2)
		return fail_at(pd, CSD_EUNSUPPORTED, base,
			       "cs_etm header version %" PRIu64 " (versions 0, 1 and 2 are read)", version);
	pd->info.etm_version = (uint32_t)version;
	pd->info.pmu_type = (uint32_t)(W(1) >> 32);
	pd->info.snapshot = W(2) != 0;
	uint64_t nr = W(1) & 0xFFFFFFFFu;
	if (nr > (n - 3) / 3)
		return fail_at(pd, CSD_EFORMAT, base + 8,
			       "%" PRIu64 " CPU blocks announced, but the record has room for %zu words", nr, n - 3);
	pd->cpus = calloc(nr ? (size_t)nr : 1, sizeof(*pd->cpus));
	if (!pd->cpus)
		return fail_at(pd, CSD_ENOMEM, r->offset, "out of memory");
	size_t i = 3;
	for (uint64_t k = 0; k < nr; k++) {
		uint64_t at = base + 8 * (uint64_t)i;
		if (i + 2 > n)
			return fail_at(pd, CSD_EFORMAT, at, "CPU block %" PRIu64 " of %" PRIu64 " passes the end of the record",
				       k, nr);
		uint64_t magic = W(i), cpu = W(i + 1);
		struct csd_perf_cpu *c = &pd->cpus[pd->ncpus];
		memset(c, 0, sizeof(*c));
		c->offset = at;
		if (cpu >= (1u << 24))
			return fail_at(pd, CSD_EFORMAT, at + 8, "CPU number %" PRIu64 " (block %" PRIu64 ")", cpu, k);
		c->cpu = (int32_t)cpu;
		for (size_t j = 0; j < pd->ncpus; j++)
			if (pd->cpus[j].cpu == c->cpu)
				return fail_at(pd, CSD_EFORMAT, at + 8, "CPU %" PRIu64 " has a second metadata block", cpu);
		/* The parameters: p[0..np) from word `first`. */
		size_t first, np;
		if (magic == MAGIC_ETM3)
			c->unit = CSD_PERF_UNIT_ETM3;
		else if (magic == MAGIC_ETM4)
			c->unit = CSD_PERF_UNIT_ETM4;
		else if (magic == MAGIC_ETE && version > 0)
			c->unit = CSD_PERF_UNIT_ETE;
		else
			return fail_at(pd, CSD_EFORMAT, at, "CPU block %" PRIu64 ": unknown magic 0x%016" PRIx64 "%s", k, magic,
				       magic == MAGIC_ETE ? " (ETE in a version 0 header)" : "");
		if (version == 0) {
			first = i + 2;
			np = c->unit == CSD_PERF_UNIT_ETM3 ? 4 : 7;
		} else {
			if (i + 3 > n)
				return fail_at(pd, CSD_EFORMAT, at,
					       "CPU block %" PRIu64 " passes the end of the record", k);
			uint64_t v = W(i + 2);
			first = i + 3;
			if (v > n - first)
				return fail_at(pd, CSD_EFORMAT, at + 16,
					       "CPU block %" PRIu64 ": %" PRIu64 " parameters, but %zu words are left in the record",
					       k, v, n - first);
			np = (size_t)v;
		}
		if (first + np > n)
			return fail_at(pd, CSD_EFORMAT, at, "CPU block %" PRIu64 " (%zu words) passes the end of the record", k,
				       first + np - i);
#define P(j) ((j) < np ? W(first + (j)) : 0)
		/* Both layouts: [0] the control register, [1] the trace ID
		 * register; ETMv3/PTM then ETMCCER, ETMIDR. */
		c->traceidr = P(1);
		if (c->unit == CSD_PERF_UNIT_ETM3) {
			uint32_t idr = (uint32_t)P(3);
			c->unit = v3_unit(idr);
			if (c->unit != CSD_PERF_UNIT_OTHER) {
				c->config.size = sizeof(c->config);
				c->config.protocol = c->unit == CSD_PERF_UNIT_PTM ? CSD_PROTO_PTM : CSD_PROTO_ETM3;
				c->config.etmcr = (uint32_t)P(0);
				c->config.etmccer = (uint32_t)P(2);
				c->config.etmidr = idr;
				c->config.core_profile = CSD_CORE_A;
			}
		}
#undef P
		set_trace_id(c, (unsigned)(c->traceidr & 0x7F), CSD_PERF_ID_METADATA);
		pd->ncpus++;
		i = first + np;
	}
	if (i != n)
		return fail_at(pd, CSD_EFORMAT, base + 8 * (uint64_t)i,
			       "%zu words follow the last CPU block (the record must end there)", n - i);
#undef W
	return CSD_OK;
}

/* AUX_OUTPUT_HW_ID: bits 7:0 trace ID, 63:60 major version (0). */
static void apply_hw_id(csd_perf *pd, int32_t cpu, uint64_t hw_id)
{
	if (hw_id >> 60)
		return;
	for (size_t i = 0; i < pd->ncpus; i++)
		if (pd->cpus[i].cpu == cpu)
			set_trace_id(&pd->cpus[i], (unsigned)(hw_id & 0xFF), CSD_PERF_ID_HW_ID);
}

/* Find AUXTRACE_INFO (an error before it fails the open), then take the
 * trace IDs of the AUX_OUTPUT_HW_ID records that follow (a record that
 * cannot be read there is left for the walk to report). */
static int scan_records(csd_perf *pd)
{
	struct cursor c = { .pos = pd->data_start, .win = pd->walk.win };
	struct record r;
	int rc, found = 0;
	while ((rc = record_at(pd, &c, &r)) > 0) {
		cursor_skip(&c, &r);
		if (r.type == REC_AUXTRACE && !pd->mode_known) {
			pd->per_thread = (int32_t)le32(r.p + 40) == -1;
			pd->mode_known = 1;
		}
		if (r.type == REC_AUXTRACE_INFO) {
			if (r.size < 16)
				return fail_at(pd, CSD_EFORMAT, r.offset, "AUXTRACE_INFO of %u bytes", r.size);
			uint32_t kind = le32(r.p + 8);
			static const char *const kinds[] = { "unknown", "Intel PT", "Intel BTS", "CoreSight ETM", "Arm SPE",
							     "s390 CPU-MF", "HiSilicon PTT" };
			if (kind != AUXTRACE_CS_ETM)
				return fail_at(pd, CSD_EUNSUPPORTED, r.offset, "the AUX trace is %s (type %" PRIu32
					       "), not CoreSight ETM", kind < 7 ? kinds[kind] : "of an unknown kind", kind);
			rc = parse_metadata(pd, &r);
			if (rc < 0)
				return rc;
			found = 1;
			break;
		}
	}
	if (rc < 0)
		return rc;
	if (!found)
		return fail_at(pd, CSD_ENOENT, pd->data_start,
			       "no AUXTRACE_INFO record in the data section: the file holds no AUX trace "
			       "(was it recorded with -e cs_etm//?)");
	for (size_t i = 0; i < pd->nattrs_kept; i++)
		if (pd->attrs[i].type == pd->info.pmu_type) {
			pd->info.config = pd->attrs[i].config;
			break;
		}
	/* HW_ID records are rare: a walk over the headers. */
	char saved[sizeof(pd->err)];
	memcpy(saved, pd->err, sizeof(saved));
	while (record_at(pd, &c, &r) > 0) {
		cursor_skip(&c, &r);
		if (r.type == REC_AUXTRACE && !pd->mode_known) {
			pd->per_thread = (int32_t)le32(r.p + 40) == -1;
			pd->mode_known = 1;
		}
		if (r.type != REC_AUX_OUTPUT_HW_ID)
			continue;
		struct sample_id sid;
		if (parse_trailer(pd, &r, 16, &sid) < 0)
			break;
		if (sid.has_cpu)
			apply_hw_id(pd, sid.cpu, le64(r.p + 8));
	}
	memcpy(pd->err, saved, sizeof(saved));
	return CSD_OK;
}

static int open_common(csd_perf *pd)
{
	uint8_t h[HEADER_SIZE];
	if (pd->file_size < 16)
		return fail_at(pd, CSD_EFORMAT, 0, "%" PRIu64 " bytes, too short for a perf.data header", pd->file_size);
	int rc = read_at(pd, 0, h, 16);
	if (rc < 0)
		return rc;
	if (memcmp(h, "2ELIFREP", 8) == 0)
		return fail_at(pd, CSD_EUNSUPPORTED, 0, "a big-endian perf.data file (not supported)");
	if (memcmp(h, "PERFFILE", 8) == 0)
		return fail_at(pd, CSD_EUNSUPPORTED, 0, "a perf.data file of format version 1 (not supported)");
	if (memcmp(h, "PERFILE2", 8) != 0)
		return fail_at(pd, CSD_EFORMAT, 0, "not a perf.data file (no PERFILE2 magic)");
	uint64_t hsize = le64(h + 8);
	if (hsize == PIPE_HEADER_SIZE)
		return fail_at(pd, CSD_EUNSUPPORTED, 8,
			       "pipe-mode perf.data (perf record -o - writes it) is not supported: record to a file");
	if (hsize != HEADER_SIZE && hsize != HEADER_SIZE_OLD)
		return fail_at(pd, CSD_EFORMAT, 8, "header size %" PRIu64 " (104 expected)", hsize);
	if (pd->file_size < hsize)
		return fail_at(pd, CSD_EFORMAT, 0, "%" PRIu64 " bytes, shorter than the %" PRIu64 "-byte header",
			       pd->file_size, hsize);
	memset(h + 16, 0, sizeof(h) - 16);
	rc = read_at(pd, 16, h + 16, (size_t)hsize - 16);
	if (rc < 0)
		return rc;
	pd->data_start = le64(h + 40);
	uint64_t dsize = le64(h + 48);
	if (pd->data_start > pd->file_size)
		return fail_at(pd, CSD_EFORMAT, 40, "data section at 0x%" PRIx64 ", past the end of the file (0x%" PRIx64 ")",
			       pd->data_start, pd->file_size);
	if (dsize > UINT64_MAX - pd->data_start)
		return fail_at(pd, CSD_EFORMAT, 48, "data section size 0x%" PRIx64 " overflows", dsize);
	/* perf record stopped before it wrote the final header leaves
	 * size 0: the records run to the end of the file. */
	pd->data_end = dsize ? pd->data_start + dsize : pd->file_size;
	pd->data_truncated = pd->data_end > pd->file_size;
	pd->info.file_size = pd->file_size;
	pd->info.data_offset = pd->data_start;
	pd->info.data_size = pd->data_end - pd->data_start;
	rc = read_attrs(pd, h);
	if (rc < 0)
		return rc;
	if (hsize == HEADER_SIZE && dsize && !pd->data_truncated) {
		rc = read_features(pd, h);
		if (rc < 0)
			return rc;
	}
	pd->walk.win.buf = pd->fd >= 0 ? malloc(WIN_SIZE) : NULL;
	pd->ahead.win.buf = pd->fd >= 0 ? malloc(WIN_SIZE) : NULL;
	pd->pool = calloc(CSDI_PERF_AUX_PENDING, sizeof(*pd->pool));
	if ((pd->fd >= 0 && (!pd->walk.win.buf || !pd->ahead.win.buf)) || !pd->pool)
		return fail_at(pd, CSD_ENOMEM, 0, "out of memory");
	rc = scan_records(pd);
	if (rc < 0)
		return rc;
	return csd_perf_rewind(pd);
}

static csd_perf *perf_new(const char *path)
{
	csd_perf *pd = calloc(1, sizeof(*pd));
	if (!pd)
		return NULL;
	pd->fd = -1;
	pd->path = strdup(path);
	if (!pd->path) {
		free(pd);
		return NULL;
	}
	static const char empty[] = "";
	pd->info.hostname = pd->info.os_release = pd->info.perf_version = empty;
	pd->info.arch = pd->info.cpu_desc = pd->info.cpuid = pd->info.cmdline = empty;
	return pd;
}

static int open_finish(csd_perf *pd, int rc, csd_perf **out, char *errbuf, size_t errlen)
{
	if (rc < 0) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "%s", pd->err[0] ? pd->err : csd_errstr(rc));
		csd_perf_free(pd);
		*out = NULL;
		return rc;
	}
	pd->err[0] = 0;
	if (errbuf && errlen)
		errbuf[0] = 0;
	*out = pd;
	return CSD_OK;
}

int csd_perf_open(const char *path, csd_perf **out, char *errbuf, size_t errlen)
{
	if (out)
		*out = NULL;
	if (!path || !out) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "no path given");
		return CSD_EINVAL;
	}
	csd_perf *pd = perf_new(path);
	if (!pd) {
		if (errbuf && errlen)
			snprintf(errbuf, errlen, "out of memory");
		return CSD_ENOMEM;
	}
	const char *what;
	pd->fd = csdi_open_regular(path, &what);
	int rc;
	if (pd->fd < 0) {
		if (what)
			snprintf(pd->err, sizeof(pd->err), "%s: not a regular file (%s)", path, what);
		else
			snprintf(pd->err, sizeof(pd->err), "%s: %s", path, strerror(errno));
		rc = CSD_EIO;
	} else {
		struct stat st;
		if (fstat(pd->fd, &st) != 0) {
			snprintf(pd->err, sizeof(pd->err), "%s: %s", path, strerror(errno));
			rc = CSD_EIO;
		} else {
			pd->file_size = (uint64_t)st.st_size;
			rc = open_common(pd);
		}
	}
	return open_finish(pd, rc, out, errbuf, errlen);
}

int csdi_perf_open_mem(const void *data, size_t size, csd_perf **out, char *errbuf, size_t errlen)
{
	if (out)
		*out = NULL;
	if ((!data && size) || !out)
		return CSD_EINVAL;
	csd_perf *pd = perf_new("<memory>");
	if (!pd)
		return CSD_ENOMEM;
	static const uint8_t none[1];
	pd->mem = data ? data : none;
	pd->file_size = size;
	return open_finish(pd, open_common(pd), out, errbuf, errlen);
}

void csd_perf_free(csd_perf *pd)
{
	if (!pd)
		return;
	if (pd->fd >= 0)
		close(pd->fd);
	for (size_t i = 0; i < sizeof(pd->strings) / sizeof(pd->strings[0]); i++)
		free(pd->strings[i]);
	free(pd->cpus);
	free(pd->bids);
	free(pd->bid_names);
	free(pd->walk.win.buf);
	free(pd->ahead.win.buf);
	free(pd->pool);
	free(pd->path);
	free(pd);
}

const struct csd_perf_info *csd_perf_info(const csd_perf *pd)
{
	return pd ? &pd->info : NULL;
}

size_t csd_perf_num_cpus(const csd_perf *pd)
{
	return pd ? pd->ncpus : 0;
}

const struct csd_perf_cpu *csd_perf_cpu(const csd_perf *pd, size_t i)
{
	return pd && i < pd->ncpus ? &pd->cpus[i] : NULL;
}

size_t csd_perf_num_build_ids(const csd_perf *pd)
{
	return pd ? pd->nbids : 0;
}

const struct csd_perf_build_id *csd_perf_build_id(const csd_perf *pd, size_t i)
{
	return pd && i < pd->nbids ? &pd->bids[i] : NULL;
}

const char *csd_perf_error(const csd_perf *pd)
{
	return pd ? pd->err : "";
}

int csd_perf_read(csd_perf *pd, uint64_t offset, void *buf, size_t size)
{
	if (!pd || (!buf && size) || size > INT32_MAX)
		return CSD_EINVAL;
	if (offset > pd->file_size || size > pd->file_size - offset) {
		fail_at(pd, CSD_EINVAL, offset, "%zu bytes asked for, past the end of the file (0x%" PRIx64 ")", size,
			pd->file_size);
		return CSD_EINVAL;
	}
	int rc = read_at(pd, offset, buf, size);
	return rc < 0 ? rc : (int)size;
}

int csd_perf_rewind(csd_perf *pd)
{
	if (!pd)
		return CSD_EINVAL;
	pd->walk.pos = pd->ahead.pos = pd->data_start;
	pd->walk.win.len = pd->ahead.win.len = 0;
	pd->ahead_dead = 0;
	pd->walk_rc = 0;
	pd->free_list = NO_ENTRY;
	for (uint32_t i = CSDI_PERF_AUX_PENDING; i-- > 0;) {
		pd->pool[i].next = pd->free_list;
		pd->free_list = i;
	}
	pd->pending = 0;
	pd->nchains = 0;
	pd->chains[WILDCARD].head = pd->chains[WILDCARD].tail = NO_ENTRY;
	pd->seq = 0;
	memset(&pd->cur, 0, sizeof(pd->cur));
	pd->err[0] = 0;
	return CSD_OK;
}

/* ------------------------------------------------------------------------
 * AUX records and the buffers they describe
 * ---------------------------------------------------------------------- */

/* The chain of queue `key` (WILDCARD's own slot for -2), made if asked
 * and there is room: a table full of live queues keeps no more. */
static struct aux_chain *chain_of(csd_perf *pd, int64_t key, int create)
{
	if (key == -2)
		return &pd->chains[WILDCARD];
	struct aux_chain *empty = NULL;
	for (size_t i = 0; i < pd->nchains; i++) {
		struct aux_chain *c = &pd->chains[i];
		if (c->key == key)
			return c;
		if (c->head == NO_ENTRY && !empty)
			empty = c;
	}
	if (!create)
		return NULL;
	if (!empty && pd->nchains < MAX_CHAINS)
		empty = &pd->chains[pd->nchains++];
	if (empty) {
		empty->key = (int32_t)key;
		empty->head = empty->tail = NO_ENTRY;
	}
	return empty;
}

static void chain_pop(csd_perf *pd, struct aux_chain *c)
{
	uint32_t i = c->head;
	c->head = pd->pool[i].next;
	if (c->head == NO_ENTRY)
		c->tail = NO_ENTRY;
	pd->pool[i].next = pd->free_list;
	pd->free_list = i;
	pd->pending--;
}

/* The oldest pending record goes (the head of some chain). */
static void evict_oldest(csd_perf *pd)
{
	struct aux_chain *old = NULL;
	for (size_t i = 0; i <= MAX_CHAINS; i++) {
		struct aux_chain *c = &pd->chains[i];
		if ((i < pd->nchains || i == WILDCARD) && c->head != NO_ENTRY &&
		    (!old || pd->pool[c->head].seq - pd->pool[old->head].seq > UINT32_MAX / 2))
			old = c;
	}
	if (old)
		chain_pop(pd, old);
}

/* The queue an AUX record's sample_id names, or -2 when it names none.
 * perf records either per thread or per CPU; the first AUXTRACE record
 * says which. */
static int64_t aux_key(const csd_perf *pd, const struct sample_id *sid)
{
	if (pd->per_thread)
		return sid->has_tid ? sid->tid : -2;
	return sid->has_cpu ? sid->cpu : -2;
}

/* The stream range an AUX record describes: [offset, offset + size), or
 * in overwrite (snapshot) mode the `size` bytes ending at `offset`, at
 * most as many as the buffer holds. */
static void aux_range(const struct aux_pending *a, uint64_t buffer_size, uint64_t *s, uint64_t *e)
{
	if (a->flags & CSD_PERF_AUX_OVERWRITE) {
		uint64_t n = a->size < buffer_size ? a->size : buffer_size;
		*e = a->offset;
		*s = n < a->offset ? a->offset - n : 0;
	} else {
		*s = a->offset;
		*e = a->size <= UINT64_MAX - a->offset ? a->offset + a->size : UINT64_MAX;
	}
}

/* Does the newest record of chain c reach the end of the current buffer? */
static int chain_covers_end(const csd_perf *pd, const struct aux_chain *c)
{
	if (!c || c->tail == NO_ENTRY)
		return 0;
	uint64_t s, e;
	aux_range(&pd->pool[c->tail], pd->cur.end - pd->cur.start, &s, &e);
	return e >= pd->cur.end;
}

static int64_t buffer_key(const struct current_buffer *b)
{
	return b->cpu == -1 ? b->tid : b->cpu;
}

/* Move the AUX cursor on: at least past the current buffer's record, then
 * on until an AUX record of its queue reaches the buffer's end, the next
 * buffer of the same queue is met, or the lookahead limit or a full pool
 * stops it. */
static void look_ahead(csd_perf *pd)
{
	int64_t key = buffer_key(&pd->cur);
	int covered = chain_covers_end(pd, chain_of(pd, key, 0)) || chain_covers_end(pd, &pd->chains[WILDCARD]);
	unsigned passed = 0;
	char saved[sizeof(pd->err)];
	memcpy(saved, pd->err, sizeof(saved));
	while (!pd->ahead_dead) {
		int behind = pd->ahead.pos <= pd->cur.record;
		if (!behind && (covered || passed >= LOOKAHEAD_RECORDS || pd->pending == CSDI_PERF_AUX_PENDING))
			break;
		struct record r;
		int rc = record_at(pd, &pd->ahead, &r);
		if (rc <= 0) {
			pd->ahead_dead = 1;
			break;
		}
		cursor_skip(&pd->ahead, &r);
		if (!behind)
			passed++;
		if (r.type == REC_AUXTRACE && !behind && r.size >= 48 && (int32_t)le32(r.p + 40) == pd->cur.cpu &&
		    (pd->cur.cpu != -1 || (int32_t)le32(r.p + 36) == pd->cur.tid))
			break;
		if (r.type != REC_AUX)
			continue;
		struct sample_id sid;
		if (parse_trailer(pd, &r, 32, &sid) < 0) {
			pd->ahead_dead = 1;
			break;
		}
		uint64_t size = le64(r.p + 16);
		if (size == 0)
			continue;
		struct aux_chain *c = chain_of(pd, aux_key(pd, &sid), 1);
		if (!c)
			continue;
		if (pd->pending == CSDI_PERF_AUX_PENDING)
			evict_oldest(pd); /* full while catching up */
		uint32_t i = pd->free_list;
		if (i == NO_ENTRY)
			continue;
		struct aux_pending *a = &pd->pool[i];
		pd->free_list = a->next;
		memset(a, 0, sizeof(*a));
		a->offset = le64(r.p + 8);
		a->size = size;
		a->flags = le64(r.p + 24);
		a->pid = sid.pid;
		a->tid = sid.tid;
		a->has_tid = (uint8_t)sid.has_tid;
		a->seq = pd->seq++;
		a->next = NO_ENTRY;
		if (c->tail == NO_ENTRY)
			c->head = i;
		else
			pd->pool[c->tail].next = i;
		c->tail = i;
		pd->pending++;
		if (!covered && pd->cur.active && (c == &pd->chains[WILDCARD] || c->key == key))
			covered = chain_covers_end(pd, c);
	}
	/* The walk reports bad records when it gets there. */
	memcpy(pd->err, saved, sizeof(saved));
}

/* The head of chain c once the records wholly behind `pos` are dropped. */
static struct aux_pending *chain_front(csd_perf *pd, struct aux_chain *c, uint64_t pos, uint64_t bsize)
{
	while (c && c->head != NO_ENTRY) {
		struct aux_pending *a = &pd->pool[c->head];
		uint64_t s, e;
		aux_range(a, bsize, &s, &e);
		if (e > pos && e > a->done)
			return a;
		chain_pop(pd, c);
	}
	return NULL;
}

/* The next piece of the current buffer: 1 with ev filled, 0 when what is
 * left is the buffer's padding. */
static int next_piece(csd_perf *pd, struct csd_perf_event *ev)
{
	struct current_buffer *b = &pd->cur;
	uint64_t bsize = b->end - b->start;
	/* The older of the queue's and the unnamed records' first. */
	struct aux_chain *qc = chain_of(pd, buffer_key(b), 0), *wc = &pd->chains[WILDCARD];
	struct aux_pending *qa = chain_front(pd, qc, b->pos, bsize), *wa = chain_front(pd, wc, b->pos, bsize);
	struct aux_pending *hit = qa;
	struct aux_chain *hit_chain = qc;
	if (wa && (!qa || qa->seq - wa->seq < UINT32_MAX / 2)) {
		hit = wa;
		hit_chain = wc;
	}
	uint64_t hs = 0, he = 0;
	if (hit)
		aux_range(hit, bsize, &hs, &he);
	uint64_t start = b->pos, end = b->end;
	ev->aux_flags = 0;
	ev->flags = 0;
	if (hit) {
		uint64_t from = hs > hit->done ? hs : hit->done;
		if (from > start) {
			/* Bytes before the record's: no record covers them. */
			end = from < b->end ? from : b->end;
			hit = NULL;
		} else {
			end = he < b->end ? he : b->end;
			ev->aux_flags = hit->flags;
			if (start > hs)
				ev->flags |= CSD_PERF_EVF_CONTINUES;
			/* Per-thread: the AUX record's sample_id names the process. */
			if (b->cpu == -1 && hit->has_tid && hit->tid == b->tid)
				ev->pid = hit->pid;
			hit->done = end;
			if (end == he)
				chain_pop(pd, hit_chain);
		}
	}
	if (!hit && end == b->end && end - start < 8 && b->matched) {
		/* perf pads a buffer to 8 bytes; its AUX records end
		 * before the padding. */
		b->pos = b->end;
		b->active = 0;
		return 0;
	}
	if (hit)
		b->matched = 1;
	else
		ev->flags |= CSD_PERF_EVF_NO_AUX;
	if (ev->aux_flags & CSD_PERF_AUX_RAW)
		ev->flags |= CSD_PERF_EVF_RAW;
	ev->type = CSD_PERF_AUX_DATA;
	ev->record = REC_AUXTRACE;
	ev->offset = b->record;
	ev->cpu = b->cpu;
	ev->tid = b->tid;
	ev->idx = b->idx;
	ev->aux_offset = start;
	ev->data_offset = b->payload + (start - b->start);
	ev->data_size = end - start;
	b->pos = end;
	if (b->pos >= b->end)
		b->active = 0;
	return 1;
}

/* ------------------------------------------------------------------------
 * The walk
 * ---------------------------------------------------------------------- */

static void event_clear(struct csd_perf_event *ev)
{
	static const char empty[] = "";
	memset(ev, 0, sizeof(*ev));
	ev->cpu = ev->pid = ev->tid = -1;
	ev->next_prev_pid = ev->next_prev_tid = ev->ppid = ev->ptid = -1;
	ev->filename = ev->comm = empty;
}

static void take_sid(struct csd_perf_event *ev, const struct sample_id *sid)
{
	if (sid->has_tid) {
		ev->pid = sid->pid;
		ev->tid = sid->tid;
	}
	if (sid->has_cpu)
		ev->cpu = sid->cpu;
	if (sid->has_time) {
		ev->time = sid->time;
		ev->flags |= CSD_PERF_EVF_TIME;
	}
}

/* Fill ev from record r; 1 if it is an event, 0 to pass it over. */
static int decode_record(csd_perf *pd, const struct record *r, struct csd_perf_event *ev)
{
	struct sample_id sid;
	const uint8_t *p = r->p;
	uint64_t st_unused;
	unsigned tr;
	if (record_trailer(pd, r, &st_unused, &tr) < 0)
		tr = 0; /* parse_trailer below reports it */
	size_t body_end = r->size - (r->size >= tr ? tr : 0); /* end of the fields, before the trailer */
	int rc;
	ev->record = r->type;
	ev->offset = r->offset;
	ev->cpumode = r->misc & MISC_CPUMODE;
	switch (r->type) {
	case REC_MMAP:
	case REC_MMAP2: {
		unsigned fixed = r->type == REC_MMAP ? 40 : 72;
		if ((rc = parse_trailer(pd, r, fixed, &sid)) < 0)
			return rc;
		take_sid(ev, &sid);
		ev->type = CSD_PERF_MMAP;
		ev->pid = (int32_t)le32(p + 8);
		ev->tid = (int32_t)le32(p + 12);
		ev->addr = le64(p + 16);
		ev->len = le64(p + 24);
		ev->pgoff = le64(p + 32);
		if (r->type == REC_MMAP2) {
			if (r->misc & MISC_PREEMPT) {
				ev->build_id_size = p[40] <= 20 ? p[40] : 20;
				memcpy(ev->build_id, p + 44, 20);
				ev->flags |= CSD_PERF_EVF_BUILD_ID;
			}
			ev->prot = le32(p + 64);
			ev->mmap_flags = le32(p + 68);
		}
		ev->filename = take_string(pd->text[0], sizeof(pd->text[0]), p + fixed, body_end - fixed);
		return 1;
	}
	case REC_COMM:
		if ((rc = parse_trailer(pd, r, 16, &sid)) < 0)
			return rc;
		take_sid(ev, &sid);
		ev->type = CSD_PERF_COMM;
		ev->pid = (int32_t)le32(p + 8);
		ev->tid = (int32_t)le32(p + 12);
		if (r->misc & MISC_SWITCH_OUT)
			ev->flags |= CSD_PERF_EVF_EXEC;
		ev->comm = take_string(pd->text[1], sizeof(pd->text[1]), p + 16, body_end - 16);
		return 1;
	case REC_FORK:
	case REC_EXIT:
		if ((rc = parse_trailer(pd, r, 32, &sid)) < 0)
			return rc;
		take_sid(ev, &sid);
		ev->type = r->type == REC_FORK ? CSD_PERF_FORK : CSD_PERF_EXIT;
		ev->pid = (int32_t)le32(p + 8);
		ev->ppid = (int32_t)le32(p + 12);
		ev->tid = (int32_t)le32(p + 16);
		ev->ptid = (int32_t)le32(p + 20);
		ev->time = le64(p + 24);
		ev->flags |= CSD_PERF_EVF_TIME;
		return 1;
	case REC_ITRACE_START:
		if ((rc = parse_trailer(pd, r, 16, &sid)) < 0)
			return rc;
		take_sid(ev, &sid);
		ev->type = CSD_PERF_ITRACE_START;
		ev->pid = (int32_t)le32(p + 8);
		ev->tid = (int32_t)le32(p + 12);
		return 1;
	case REC_SWITCH:
	case REC_SWITCH_CPU_WIDE:
		if ((rc = parse_trailer(pd, r, r->type == REC_SWITCH ? 8 : 16, &sid)) < 0)
			return rc;
		take_sid(ev, &sid);
		ev->type = CSD_PERF_SWITCH;
		if (r->type == REC_SWITCH_CPU_WIDE) {
			ev->next_prev_pid = (int32_t)le32(p + 8);
			ev->next_prev_tid = (int32_t)le32(p + 12);
		}
		if (r->misc & MISC_SWITCH_OUT)
			ev->flags |= CSD_PERF_EVF_OUT;
		if (r->misc & MISC_PREEMPT)
			ev->flags |= CSD_PERF_EVF_PREEMPT;
		return 1;
	case REC_AUX:
		if ((rc = parse_trailer(pd, r, 32, &sid)) < 0)
			return rc;
		take_sid(ev, &sid);
		ev->type = CSD_PERF_AUX;
		ev->aux_offset = le64(p + 8);
		ev->aux_size = le64(p + 16);
		ev->aux_flags = le64(p + 24);
		return 1;
	case REC_AUX_OUTPUT_HW_ID:
		if ((rc = parse_trailer(pd, r, 16, &sid)) < 0)
			return rc;
		take_sid(ev, &sid);
		ev->type = CSD_PERF_HW_ID;
		ev->hw_id = le64(p + 8);
		return 1;
	case REC_LOST:
	case REC_LOST_SAMPLES: {
		unsigned fixed = r->type == REC_LOST ? 24 : 16;
		if ((rc = parse_trailer(pd, r, fixed, &sid)) < 0)
			return rc;
		take_sid(ev, &sid);
		ev->type = CSD_PERF_LOST;
		ev->lost = le64(p + fixed - 8);
		return 1;
	}
	default:
		return 0;
	}
}

/* The first (and current) layout of struct csd_perf_event ends here. */
#define EVENT_V1_SIZE (offsetof(struct csd_perf_event, lost) + sizeof(uint64_t))

static int perf_next(csd_perf *pd, struct csd_perf_event *ev);

int csd_perf_next(csd_perf *pd, struct csd_perf_event *ev)
{
	if (!pd || !ev || ev->size < EVENT_V1_SIZE)
		return CSD_EINVAL;
	/* Filled whole, then as much as the caller's struct holds. */
	struct csd_perf_event full;
	size_t n = ev->size < sizeof(full) ? ev->size : sizeof(full);
	int rc = perf_next(pd, &full);
	if (rc == CSD_OK) {
		full.size = ev->size;
		memcpy(ev, &full, n);
	}
	return rc;
}

static int perf_next(csd_perf *pd, struct csd_perf_event *ev)
{
	if (pd->walk_rc)
		return pd->walk_rc;
	for (;;) {
		event_clear(ev);
		if (pd->cur.active) {
			if (next_piece(pd, ev))
				return CSD_OK;
			continue;
		}
		struct record r;
		int rc = record_at(pd, &pd->walk, &r);
		if (rc == 0)
			return CSD_EEOS;
		if (rc < 0)
			return pd->walk_rc = rc;
		cursor_skip(&pd->walk, &r);
		if (r.type == REC_AUXTRACE) {
			const uint8_t *p = r.p;
			if (r.payload == 0)
				continue;
			struct current_buffer *b = &pd->cur;
			b->record = r.offset;
			b->payload = r.offset + r.size;
			b->start = le64(p + 16);
			if (r.payload > UINT64_MAX - b->start)
				return pd->walk_rc = fail_at(pd, CSD_EFORMAT, r.offset,
							     "AUXTRACE record: stream offset 0x%" PRIx64 " plus size 0x%" PRIx64
							     " overflows", b->start, r.payload);
			b->end = b->start + r.payload;
			b->pos = b->start;
			b->idx = le32(p + 32);
			b->tid = (int32_t)le32(p + 36);
			b->cpu = (int32_t)le32(p + 40);
			b->matched = 0;
			b->active = 1;
			look_ahead(pd);
			continue;
		}
		rc = decode_record(pd, &r, ev);
		if (rc < 0)
			return pd->walk_rc = rc;
		if (rc > 0)
			return CSD_OK;
	}
}
