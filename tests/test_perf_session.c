/*
 * test_perf_session.c - the perf.data session (csd_perf_session_*) on
 * perf.data files written here: what each decoder is given and when.
 *
 * - Each trace ID's DATA bytes, joined, are exactly the bytes the formatter
 *   frames were made of; raw data goes whole to its CPU's decoder.
 * - Decoders: a SOURCE before a key's first DATA, DATA only to a live key,
 *   one END for each SOURCE, a CAPTURE_END after each capture's ENDs; each
 *   AUX record's data is a capture of its own.
 * - The trace-ID filter, the "no source" error after the warnings, the
 *   warning for a trace ID no CPU has, AUX records that lost trace.
 * - With CSD_PERF_SESSION_THREADS, a record that changes the thread table
 *   comes with a SETTLE handed out before the change is made (a decoder on
 *   another thread must not see it early); context IDs name processes.
 * - Images: each decoder's image holds the base's sections; a process's
 *   mapping is in its image once found under symfs.
 * - Bad arguments.
 */
#define _DEFAULT_SOURCE /* mkdtemp */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "csdec.h"
#include "frame_enc.h"
#include "perf_data_build.h"

#define PID 700
#define PID2 701
#define ID_A 0x10
#define ID_B 0x12
#define ID_UNKNOWN 0x33
#define MAP_ADDR 0x20000u

static char dir[64];

struct sink {
	uint8_t *buf;
	size_t n, cap;
};

static int sink_put(void *ctx, const uint8_t *p, size_t n)
{
	struct sink *s = ctx;
	if (s->n + n > s->cap) {
		s->cap = (s->n + n) * 2;
		s->buf = realloc(s->buf, s->cap);
		if (!s->buf)
			abort();
	}
	memcpy(s->buf + s->n, p, n);
	s->n += n;
	return 0;
}

/* Bytes of source `id` in piece `piece`: a pattern each (ID, piece)
 * gives differently. */
static void pattern(uint8_t *p, size_t n, unsigned id, unsigned piece)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(id * 7 + piece * 31 + i * 13 + (i >> 8));
}

/* Formatter frames of IDs A, B and (unknown) in turns of 37 bytes. */
static void frames_of(struct sink *out, unsigned piece, size_t per_id)
{
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config ec = { .format = CSD_FRAME_ALIGNED, .sink = sink_put, .ctx = out };
	CHECK_EQ(csdi_frame_enc_init(&enc, &ec), 0);
	uint8_t *a = malloc(per_id), *b = malloc(per_id), *u = malloc(per_id);
	pattern(a, per_id, ID_A, piece);
	pattern(b, per_id, ID_B, piece);
	pattern(u, per_id, ID_UNKNOWN, piece);
	for (size_t at = 0; at < per_id; at += 37) {
		size_t k = per_id - at < 37 ? per_id - at : 37;
		CHECK_EQ(csdi_frame_enc_data(&enc, ID_A, a + at, k), 0);
		CHECK_EQ(csdi_frame_enc_data(&enc, ID_UNKNOWN, u + at, k), 0);
		CHECK_EQ(csdi_frame_enc_data(&enc, ID_B, b + at, k), 0);
	}
	CHECK_EQ(csdi_frame_enc_flush(&enc), 0);
	free(a);
	free(b);
	free(u);
}

static const struct pdb_cpu cpus[2] = {
	/* PTM (PFT 1.0), ETMv3.5, with trace IDs A and B */
	{ PDB_MAGIC_ETM3, 0, 0x1000, ID_A, 0, 0x411CF300, 0 },
	{ PDB_MAGIC_ETM3, 1, 0x1000, ID_B, 0, 0x4114F250, 0 },
};

/* Two formatted AUX records of CPU 0's buffer (captures of their own, the
 * second says trace was truncated), a raw one of CPU 1, processes PID and
 * PID2 made known by COMM records between them, a mapping of PID's. */
static size_t per_id_bytes[2] = { 3000, 5000 };
static size_t raw_bytes = 2500;

static void build(struct pdb *b, const char *map_path)
{
	pdb_init(b, PDB_SAMPLE_TID | PDB_SAMPLE_TIME | PDB_SAMPLE_CPU, 1, 0);
	pdb_auxtrace_info(b, 1, 0, cpus, 2);
	struct pdb_sid s = { PID, PID, 0, 10, 0 };
	pdb_comm(b, PID, PID, "one", 1, &s);
	pdb_mmap2(b, PID, PID, MAP_ADDR, 0x1000, 0, map_path, NULL, 0, &s);
	uint64_t aux = 0;
	for (unsigned piece = 0; piece < 2; piece++) {
		struct sink f = { 0 };
		frames_of(&f, piece, per_id_bytes[piece]);
		s.time = 20 + piece;
		pdb_aux(b, aux, f.n, piece ? CSD_PERF_AUX_TRUNCATED : 0, &s);
		pdb_auxtrace(b, aux, 0, -1, 0, f.buf, f.n);
		aux += f.n;
		free(f.buf);
		if (!piece)
			pdb_comm(b, PID2, PID2, "two", 1, &s);
	}
	uint8_t *raw = malloc(raw_bytes);
	pattern(raw, raw_bytes, ID_B, 9);
	struct pdb_sid s1 = { PID2, PID2, 1, 30, 0 };
	pdb_aux(b, 0, raw_bytes, CSD_PERF_AUX_RAW, &s1);
	pdb_auxtrace(b, 0, 1, -1, 1, raw, raw_bytes);
	free(raw);
	pdb_finish(b);
}

struct walk {
	/* per decoder: bytes received in its capture */
	struct sink got[CSD_PERF_SESSION_KEYS];
	int live[CSD_PERF_SESSION_KEYS];
	unsigned sources, ends, captures, decoded_captures, aux_lost, warnings, skipped, settles, frame_errors;
	unsigned unknown_warnings;
	int order_ok;
	/* the thread table as seen at each SETTLE: PID2 known? */
	int pid2_known_at_settle, pid2_known_after;
	size_t base_sections, image_sections_min;
	int mapped_in_image;
	int rc;
};

static void walk(const char *path, const struct csd_perf_session_config *cfg, struct walk *w, int check_data)
{
	memset(w, 0, sizeof(*w));
	w->order_ok = 1;
	w->pid2_known_at_settle = -1;
	w->image_sections_min = SIZE_MAX;
	csd_perf_session *ps = NULL;
	char err[256];
	int rc = csd_perf_session_new(path, cfg, &ps, err, sizeof(err));
	CHECK_EQ(rc, 0);
	if (rc)
		return;
	CHECK(csd_perf_session_reader(ps) != NULL);
	struct csd_perf_action a = { .size = sizeof(a) };
	unsigned capture = 0;
	int ended_queue = -1;
	while ((rc = csd_perf_session_next(ps, &a)) == 0) {
		switch (a.type) {
		case CSD_PERF_ACT_SETTLE:
			w->settles++;
			if (w->pid2_known_at_settle < 0 && csd_perf_session_context_pid(ps, PID2) < 0)
				w->pid2_known_at_settle = 0;
			break;
		case CSD_PERF_ACT_WARNING:
			w->warnings++;
			w->skipped += (a.flags & CSD_PERF_ACTF_SKIPPED) != 0;
			CHECK(a.text && strncmp(a.text, path, strlen(path)) == 0);
			if (strstr(a.text, "trace ID 0x33 is no decodable CPU's"))
				w->unknown_warnings++;
			break;
		case CSD_PERF_ACT_SOURCE:
			CHECK(a.key < CSD_PERF_SESSION_KEYS);
			if (a.key >= CSD_PERF_SESSION_KEYS)
				break;
			w->order_ok &= !w->live[a.key];
			w->live[a.key] = 1;
			w->sources++;
			CHECK(a.source != NULL);
			CHECK_EQ(a.source->config.trace_id, a.key % 128);
			CHECK_EQ(a.cpu, a.source->cpu);
			CHECK(!(a.flags & CSD_PERF_ACTF_PER_THREAD));
			if (cfg->flags & CSD_PERF_SESSION_IMAGES) {
				CHECK(a.image != NULL);
				size_t n = csd_image_num_sections(a.image);
				if (n < w->image_sections_min)
					w->image_sections_min = n;
				uint8_t byte;
				if (csd_image_read(a.image, MAP_ADDR + 5, &byte, 1) == 1 && byte == 0xA5)
					w->mapped_in_image = 1;
			} else {
				CHECK(a.image == NULL);
			}
			break;
		case CSD_PERF_ACT_DATA:
			if (a.key >= CSD_PERF_SESSION_KEYS || !w->live[a.key]) {
				w->order_ok = 0;
				break;
			}
			CHECK_EQ(a.bytes.id, a.key % 128);
			if (check_data)
				sink_put(&w->got[a.key], a.bytes.data, a.bytes.size);
			break;
		case CSD_PERF_ACT_FRAME_ERROR:
			w->frame_errors++;
			break;
		case CSD_PERF_ACT_END:
			if (a.key >= CSD_PERF_SESSION_KEYS || !w->live[a.key]) {
				w->order_ok = 0;
				break;
			}
			w->live[a.key] = 0;
			w->ends++;
			ended_queue = (int)(a.key / 128);
			if (check_data) {
				/* The capture's bytes of this ID, whole. */
				unsigned id = a.key % 128;
				struct sink *g = &w->got[a.key];
				size_t n = capture == 2 ? raw_bytes : per_id_bytes[capture];
				uint8_t *want = malloc(n);
				pattern(want, n, id, capture == 2 ? 9 : capture);
				CHECK_EQ(g->n, n);
				CHECK(g->n == n && memcmp(g->buf, want, n) == 0);
				free(want);
				g->n = 0;
			}
			break;
		case CSD_PERF_ACT_CAPTURE_END:
			if (a.flags & CSD_PERF_ACTF_DECODED) {
				w->decoded_captures++;
				capture++;
			}
			w->captures++;
			/* No decoder outlives its capture. */
			for (unsigned k = 0; ended_queue >= 0 && k < 128; k++)
				w->order_ok &= !w->live[(unsigned)ended_queue * 128 + k];
			ended_queue = -1;
			break;
		case CSD_PERF_ACT_AUX_LOST:
			w->aux_lost++;
			CHECK(a.event && (a.event->aux_flags & CSD_PERF_AUX_TRUNCATED));
			break;
		default:
			CHECK(0);
		}
		if (w->pid2_known_at_settle == 0 && a.type != CSD_PERF_ACT_SETTLE &&
		    csd_perf_session_context_pid(ps, PID2) == PID2)
			w->pid2_known_after = 1;
	}
	w->rc = rc;
	if (rc == CSD_EEOS) {
		CHECK_STR(csd_perf_session_error(ps), "");
	} else {
		CHECK(strncmp(csd_perf_session_error(ps), path, strlen(path)) == 0);
	}
	/* The error stays. */
	CHECK_EQ(csd_perf_session_next(ps, &a), rc);
	for (unsigned i = 0; i < CSD_PERF_SESSION_KEYS; i++)
		free(w->got[i].buf);
	csd_perf_session_free(ps);
}

int main(void)
{
	strcpy(dir, "/tmp/csd_test_perf_session_XXXXXX");
	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	char path[128], map[128], map_rel[] = "/lib/code.bin";
	snprintf(path, sizeof(path), "%s/t.data", dir);
	snprintf(map, sizeof(map), "%s/lib", dir);
	CHECK_EQ(mkdir(map, 0700), 0);
	snprintf(map, sizeof(map), "%s%s", dir, map_rel);
	uint8_t code[0x1000];
	memset(code, 0xA5, sizeof(code));
	FILE *f = fopen(map, "wb");
	CHECK(f && fwrite(code, 1, sizeof(code), f) == sizeof(code));
	if (f)
		fclose(f);
	struct pdb b;
	build(&b, map_rel);
	CHECK_EQ(pdb_write(&b, path), 0);
	pdb_free(&b);

	static struct walk w;
	struct csd_perf_session_config cfg = { .size = sizeof(cfg) };

	/* Everything, by capture order. */
	walk(path, &cfg, &w, 1);
	CHECK_EQ(w.rc, CSD_EEOS);
	CHECK(w.order_ok);
	CHECK_EQ(w.sources, 5);         /* A and B twice, B raw */
	CHECK_EQ(w.ends, 5);
	CHECK_EQ(w.decoded_captures, 3);
	CHECK_EQ(w.aux_lost, 1);
	CHECK_EQ(w.unknown_warnings, 1);
	CHECK_EQ(w.settles, 0);         /* not asked for */
	CHECK_EQ(w.frame_errors, 0);

	/* By ID: the same bytes of each. */
	cfg.flags = CSD_PERF_SESSION_FRAMES_BY_ID;
	walk(path, &cfg, &w, 1);
	CHECK_EQ(w.rc, CSD_EEOS);
	CHECK(w.order_ok);
	CHECK_EQ(w.sources, 5);

	/* Trace ID A only. */
	uint8_t only_a = ID_A;
	cfg.flags = 0;
	cfg.ids = &only_a;
	cfg.num_ids = 1;
	walk(path, &cfg, &w, 0);
	CHECK_EQ(w.rc, CSD_EEOS);
	CHECK_EQ(w.sources, 2);
	CHECK_EQ(w.ends, 2);

	/* No CPU has the wanted ID: the error, after the CPUs' warnings. */
	uint8_t none = 0x44;
	cfg.ids = &none;
	csd_perf_session *ps = NULL;
	CHECK_EQ(csd_perf_session_new(path, &cfg, &ps, NULL, 0), 0);
	CHECK_EQ(csd_perf_session_num_sources(ps), 0);
	struct csd_perf_action a = { .size = sizeof(a) };
	CHECK_EQ(csd_perf_session_next(ps, &a), CSD_ENOENT);
	CHECK(strstr(csd_perf_session_error(ps), "no ETMv3 or PTM trace source with the requested ID") != NULL);
	csd_perf_session_free(ps);
	cfg.ids = NULL;
	cfg.num_ids = 0;

	/* Threads: PID2's COMM comes with a SETTLE before the table changes. */
	cfg.flags = CSD_PERF_SESSION_THREADS;
	walk(path, &cfg, &w, 1);
	CHECK_EQ(w.rc, CSD_EEOS);
	CHECK(w.order_ok);
	CHECK(w.settles >= 2);
	CHECK_EQ(w.pid2_known_at_settle, 0);
	CHECK_EQ(w.pid2_known_after, 1);

	/* Images: every decoder's image starts with the base's two sections;
	 * the mapping is there, found under symfs (the pieces' process is not
	 * known: the image of every mapping). */
	csd_image *base = csd_image_new();
	static const uint8_t k1[64], k2[32];
	CHECK_EQ(csd_image_add_buffer(base, 0xC0000000u, k1, sizeof(k1), 0), 0);
	CHECK_EQ(csd_image_add_buffer(base, 0xC0001000u, k2, sizeof(k2), 0), 0);
	cfg.flags = CSD_PERF_SESSION_IMAGES;
	cfg.base = base;
	cfg.symfs = dir;
	walk(path, &cfg, &w, 0);
	CHECK_EQ(w.rc, CSD_EEOS);
	CHECK(w.image_sections_min >= 2 && w.image_sections_min != SIZE_MAX);
	CHECK_EQ(w.mapped_in_image, 1);
	/* Without symfs the file is not found: a warning, no mapping. */
	cfg.symfs = "/nonexistent-symfs";
	walk(path, &cfg, &w, 0);
	CHECK_EQ(w.rc, CSD_EEOS);
	CHECK_EQ(w.mapped_in_image, 0);
	CHECK(w.warnings >= 2);
	csd_image_free(base);
	cfg.base = NULL;
	cfg.symfs = NULL;

	/* Context IDs: a pid, or pid << 8 | ASID, of a known process. */
	cfg.flags = 0;
	CHECK_EQ(csd_perf_session_new(path, &cfg, &ps, NULL, 0), 0);
	int rc;
	while ((rc = csd_perf_session_next(ps, &a)) == 0)
		;
	CHECK_EQ(rc, CSD_EEOS);
	CHECK_EQ(csd_perf_session_context_pid(ps, PID), PID);
	CHECK_EQ(csd_perf_session_context_pid(ps, (uint32_t)PID2 << 8 | 0x21), PID2);
	CHECK_EQ(csd_perf_session_context_pid(ps, 999), -1);
	CHECK_EQ(csd_perf_session_context_pid(NULL, PID), -1);

	/* Bad arguments. */
	a.size = sizeof(a) - 1;
	CHECK_EQ(csd_perf_session_next(ps, &a), CSD_EINVAL);
	CHECK_EQ(csd_perf_session_next(NULL, &a), CSD_EINVAL);
	CHECK_EQ(csd_perf_session_next(ps, NULL), CSD_EINVAL);
	csd_perf_session_free(ps);
	csd_perf_session_free(NULL);
	CHECK(csd_perf_session_reader(NULL) == NULL);
	CHECK_EQ(csd_perf_session_num_sources(NULL), 0);
	ps = (csd_perf_session *)1;
	CHECK_EQ(csd_perf_session_new(NULL, &cfg, &ps, NULL, 0), CSD_EINVAL);
	CHECK(ps == NULL);
	struct csd_perf_session_config small = cfg;
	small.size = sizeof(small) - 1;
	CHECK_EQ(csd_perf_session_new(path, &small, &ps, NULL, 0), CSD_EINVAL);
	char err[256];
	CHECK(csd_perf_session_new("/nonexistent/perf.data", &cfg, &ps, err, sizeof(err)) < 0 && ps == NULL);

	unlink(path);
	unlink(map);
	snprintf(map, sizeof(map), "%s/lib", dir);
	rmdir(map);
	rmdir(dir);
	printf("test_perf_session: %d checks\n", check_count);
	return check_done("test_perf_session");
}
