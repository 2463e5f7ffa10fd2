/*
 * test_perf_enc.c - the perf.data writer (src/perf_enc.c), read back by the
 * tests' own reader (tests/perf_file.h, from the format as perf defines it):
 *   - layout: every record a multiple of 8 bytes, the walk ending exactly at
 *     the data's end, every AUX record inside an AUXTRACE buffer of the same
 *     thread, the AUXTRACE index naming exactly the AUXTRACE records, the
 *     cs_etm metadata (7-word ETMv3/PTM blocks) with each source's registers,
 *     trailers as the attributes' sample_type says, version 1 and 2;
 *   - contents: each AUX buffer deformatted on its own gives back the bytes
 *     of each source in order (buffers end only at sync points, and the
 *     next one restates the ID); a real program run traced by the generator
 *     decodes, one fresh decoder per AUX buffer, to exactly the run;
 *   - failures: bad configurations, write errors at every point, unknown
 *     trace IDs; the ELF reader against readelf and on broken files.
 */
#include <dirent.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "check.h"
#include "cli_run.h"
#include "gen.h"
#include "perf_enc.h"
#include "perf_file.h"
#include "../tools/qemu_log.c"

/* ------------------------------------------------------------------ */
/* A file in memory */

struct mem_file {
	uint8_t *d;
	size_t n, cap;
	long writes_left;   /* fail the write after this many (-1: never) */
	int failed;         /* a write was failed */
};

static int mem_write_at(void *ctx, uint64_t off, const void *buf, size_t n)
{
	struct mem_file *m = ctx;
	if (m->writes_left == 0) {
		m->failed = 1;
		return CSD_EIO;
	}
	if (m->writes_left > 0)
		m->writes_left--;
	if (off + n > m->cap) {
		size_t ncap = (size_t)(off + n) * 2 + 4096;
		uint8_t *nd = realloc(m->d, ncap);
		if (!nd)
			return CSD_ENOMEM;
		memset(nd + m->cap, 0, ncap - m->cap);
		m->d = nd;
		m->cap = ncap;
	}
	memcpy(m->d + off, buf, n);
	if (off + n > m->n)
		m->n = (size_t)(off + n);
	return 0;
}

static int mem_read_at(void *ctx, uint64_t off, void *buf, size_t n)
{
	struct mem_file *m = ctx;
	if (off > m->n || n > m->n - off)
		return CSD_EIO;
	memcpy(buf, m->d + off, n);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Writing */

static struct csdi_perf_elf test_elf = {
	.map = { { 0x10000, 0x2000, 0, 5 } }, .nmaps = 1, .build_id = { 1, 2, 3 }, .build_id_size = 20
};
static const char *const test_cmdline[] = { "/usr/bin/perf", "record", "-e", "cs_etm//u", "--per-thread", "/bin/prog" };

static void base_config(struct csdi_perf_enc_config *c, struct mem_file *m, unsigned version, unsigned nsrc)
{
	memset(c, 0, sizeof(*c));
	c->io.write_at = mem_write_at;
	c->io.read_at = mem_read_at;
	c->io.ctx = m;
	c->version = version;
	for (unsigned i = 0; i < nsrc; i++) {
		struct csd_trace_config *t = &c->sources[i];
		t->size = sizeof(*t);
		t->protocol = i % 2 ? CSD_PROTO_ETM3 : CSD_PROTO_PTM;
		t->etmcr = i % 2 ? 0x1000u : 0;
		t->etmidr = i % 2 ? 0x410CF250u : 0x411CF312u;
		t->etmccer = i % 2 ? 0x344008F2u : 0x34C01AC2u;
		t->trace_id = (uint8_t)(0x10 + 2 * i);
	}
	c->nsources = nsrc;
	c->exe_path = "/bin/prog";
	c->elf = &test_elf;
	c->comm = "a-rather-long-program-name";
	c->pid = 4321;
	c->tid = 4322;
	c->cmdline = test_cmdline;
	c->cmdline_n = 6;
	c->cpudesc = "ARMv7 Processor rev 1 (v7l)";
	c->arch = "armv7l";
}

/* Pseudo-random trace bytes of source s at step i. */
static uint8_t tbyte(unsigned s, size_t i)
{
	uint32_t h = (uint32_t)(i * 2654435761u) ^ (s * 0x9E3779B9u);
	return (uint8_t)(h >> 13);
}

/* Deformat each AUX buffer on its own; append each ID's bytes to got[]. */
static void deformat_buffers(const struct mem_file *m, const struct parsed *p, const uint8_t *ids, unsigned nids,
			     uint8_t **got, size_t *ngot)
{
	for (size_t b = 0; b < p->naux; b++) {
		struct csd_frame_config fc = { .size = sizeof(fc), .format = CSD_FRAME_ALIGNED };
		csd_frame_decoder *fd = csd_frame_new(&fc);
		CHECK(fd != NULL);
		CHECK_EQ(p->aux[b].aux_size % 16, 0);
		csd_frame_feed(fd, m->d + p->at[b].payload, (size_t)p->aux[b].aux_size, 0);
		csd_frame_finish(fd);
		struct csd_frame_out o;
		int errors = 0;
		while (csd_frame_next(fd, &o) == 0) {
			if (o.event == CSD_FRAME_ERROR)
				errors++;
			if (o.event != CSD_FRAME_DATA)
				continue;
			for (unsigned k = 0; k < nids; k++)
				if (o.bytes.id == ids[k]) {
					memcpy(got[k] + ngot[k], o.bytes.data, o.bytes.size);
					ngot[k] += o.bytes.size;
				}
		}
		CHECK_EQ(errors, 0);
		csd_frame_free(fd);
	}
}

/* Sources' bytes interleaved, sync points every `sync_every` bytes of the
 * first source; checks the file and that the bytes come back. */
static void test_bytes(unsigned version, unsigned nsrc, uint64_t aux_size, size_t len, size_t sync_every,
		       size_t min_buffers, size_t max_buffers)
{
	struct mem_file m = { .writes_left = -1 };
	struct csdi_perf_enc_config c;
	base_config(&c, &m, version, nsrc);
	c.aux_size = aux_size;
	int err = 0;
	struct csdi_perf_enc *e = csdi_perf_enc_new(&c, &err);
	CHECK(e != NULL);
	if (!e)
		return;
	uint8_t *want[CSDI_PERF_MAX_SOURCES], *got[CSDI_PERF_MAX_SOURCES], ids[CSDI_PERF_MAX_SOURCES];
	size_t ngot[CSDI_PERF_MAX_SOURCES] = { 0 };
	for (unsigned s = 0; s < nsrc; s++) {
		want[s] = malloc(len + 1);
		got[s] = malloc(len + 1);
		ids[s] = c.sources[s].trace_id;
		for (size_t i = 0; i < len; i++)
			want[s][i] = tbyte(s, i);
	}
	for (size_t i = 0; i < len;) {
		size_t step = 1 + (i * 7) % 23;
		if (step > len - i)
			step = len - i;
		for (unsigned s = 0; s < nsrc; s++)
			CHECK_EQ(csdi_perf_enc_trace(e, ids[s], want[s] + i, step), 0);
		size_t before = i;
		i += step;
		if (sync_every && i / sync_every != before / sync_every)
			CHECK_EQ(csdi_perf_enc_sync_point(e), 0);
	}
	CHECK_EQ(csdi_perf_enc_finish(e), 0);
	uint64_t buffers = csdi_perf_enc_buffers(e);
	CHECK(buffers >= min_buffers && buffers <= max_buffers);
	csdi_perf_enc_free(e);

	static struct parsed p;
	parse_perf(m.d, m.n, &p);
	CHECK_EQ(p.errors, 0);
	check_aux_layout(&p, c.tid);
	CHECK_EQ(p.errors, 0);
	CHECK_EQ(p.naux, buffers);
	/* A buffer ends at the first sync point with aux_size bytes in it
	 * (counting the frame being filled): every one but the last holds
	 * that much, and less than that plus what one step between sync
	 * points adds (23 bytes a source, with frame overhead). */
	for (size_t b = 0; b + 1 < p.naux; b++) {
		CHECK(p.aux[b].aux_size + 15 >= aux_size);
		CHECK(p.aux[b].aux_size <= aux_size + (sync_every + 23) * nsrc * 16 / 14 + 32);
	}
	deformat_buffers(&m, &p, ids, nsrc, got, ngot);
	for (unsigned s = 0; s < nsrc; s++) {
		CHECK_EQ(ngot[s], len);
		CHECK(ngot[s] == len && memcmp(got[s], want[s], len) == 0);
		free(want[s]);
		free(got[s]);
	}

	/* The metadata: header, then 7 words per CPU. */
	CHECK_EQ(p.ninfo, 3 + 7 * nsrc);
	CHECK_EQ(p.info[0], version);
	CHECK_EQ(p.info[1], (uint64_t)8 << 32 | nsrc);
	CHECK_EQ(p.info[2], 0);
	for (unsigned s = 0; s < nsrc && 3 + 7 * s + 6 < p.ninfo; s++) {
		const uint64_t *w = p.info + 3 + 7 * s;
		CHECK(w[0] == 0x3030303030303030ull);
		CHECK_EQ(w[1], s);
		CHECK_EQ(w[2], 4);
		CHECK_EQ(w[3], c.sources[s].etmcr);
		CHECK_EQ(w[4], c.sources[s].trace_id);
		CHECK_EQ(w[5], c.sources[s].etmccer);
		CHECK_EQ(w[6], c.sources[s].etmidr);
	}
	/* The events: cs_etm with the ETMCR options as config, and the
	 * tracking event; the CPU sampled only in version 2. */
	CHECK_EQ(p.nattr, 2);
	CHECK_EQ(p.attr_type[0], 8);
	CHECK_EQ(p.attr_config[0], nsrc > 1 ? 0x1000 : 0);
	CHECK_EQ(p.attr_type[1], 1);
	CHECK_EQ(p.attr_config[1], 9);
	CHECK_EQ(!!(p.sample_type[0] & (1u << 7)), version >= 2);
	CHECK_EQ(p.nhw, version >= 2 ? nsrc : 0);
	for (size_t i = 0; i < p.nhw; i++) {
		CHECK_EQ(p.hw_id[i] & 0xFF, c.sources[i].trace_id);
		CHECK_EQ(p.hw_id[i] >> 60, 0);
		CHECK_EQ((p.hw_id[i] >> 56) & 0xF, 1);
	}
	for (size_t i = 0; i < p.naux; i++)
		CHECK_EQ(p.aux[i].cpu, version >= 2 ? 0 : UINT32_MAX);
	CHECK_STR(p.comm, "a-rather-long-p");
	CHECK_STR(p.mmap_path, "/bin/prog");
	CHECK_EQ(p.nmmap, 1);
	CHECK_EQ(p.mmap_start, 0x10000);
	CHECK_EQ(p.mmap_len, 0x2000);
	CHECK_EQ(p.mmap_bid_size, 20);
	CHECK(memcmp(p.mmap_bid, test_elf.build_id, 20) == 0);
	CHECK_EQ(p.bid_feature_size, 20);
	CHECK(memcmp(p.bid_feature, test_elf.build_id, 20) == 0);
	CHECK_STR(p.bid_path, "/bin/prog");
	CHECK_STR(p.arch, "armv7l");
	CHECK_STR(p.cpudesc, "ARMv7 Processor rev 1 (v7l)");
	CHECK_EQ(p.ncmdline, 6);
	CHECK_STR(p.cmdline[3], "cs_etm//u");
	CHECK_EQ(p.nrcpus_avail, nsrc);
	CHECK_EQ(p.nrcpus_online, nsrc);
	free(m.d);
}

/* A write failing at every point in turn: an error, never a crash or a
 * file that claims success. */
static void test_write_errors(void)
{
	struct mem_file probe = { .writes_left = -1 };
	struct csdi_perf_enc_config c;
	base_config(&c, &probe, 2, 1);
	c.aux_size = 64;
	uint8_t b[100];
	for (size_t i = 0; i < sizeof(b); i++)
		b[i] = tbyte(0, i);
	long total = 0;
	for (long fail_at = 0;; fail_at++) {
		struct mem_file m = { .writes_left = fail_at };
		c.io.ctx = &m;
		int err = 0, rc = 0;
		struct csdi_perf_enc *e = csdi_perf_enc_new(&c, &err);
		if (!e) {
			CHECK_EQ(err, CSD_EIO);
		} else {
			for (int k = 0; k < 40 && rc == 0; k++) {
				rc = csdi_perf_enc_trace(e, 0x10, b, sizeof(b));
				if (rc == 0)
					rc = csdi_perf_enc_sync_point(e);
			}
			int fin = csdi_perf_enc_finish(e);
			if (rc)
				CHECK_EQ(rc, CSD_EIO);
			csdi_perf_enc_free(e);
			if (!m.failed) {
				/* Every write done: the whole file. */
				CHECK_EQ(fin, 0);
				total = fail_at;
				free(m.d);
				break;
			}
			CHECK_EQ(fin, CSD_EIO);
		}
		free(m.d);
		if (fail_at > 100000)
			break;
	}
	CHECK(total > 20);
}

static void test_bad_configs(void)
{
	struct mem_file m = { .writes_left = -1 };
	struct csdi_perf_enc_config c;
	int err = 0;
	base_config(&c, &m, 3, 1);
	CHECK(csdi_perf_enc_new(&c, &err) == NULL && err == CSD_EINVAL);
	base_config(&c, &m, 0, 1);
	CHECK(csdi_perf_enc_new(&c, &err) == NULL && err == CSD_EINVAL);
	base_config(&c, &m, 1, 2);
	c.sources[1].trace_id = c.sources[0].trace_id;
	CHECK(csdi_perf_enc_new(&c, &err) == NULL && err == CSD_EINVAL);
	base_config(&c, &m, 1, 1);
	c.sources[0].trace_id = 0x70;
	CHECK(csdi_perf_enc_new(&c, &err) == NULL && err == CSD_EINVAL);
	base_config(&c, &m, 1, 0);
	CHECK(csdi_perf_enc_new(&c, &err) == NULL && err == CSD_EINVAL);
	base_config(&c, &m, 1, 1);
	c.exe_path = "relative/prog";
	CHECK(csdi_perf_enc_new(&c, &err) == NULL && err == CSD_EINVAL);
	static char long_path[5000];
	memset(long_path, 'a', sizeof(long_path) - 1);
	long_path[0] = '/';
	c.exe_path = long_path;
	CHECK(csdi_perf_enc_new(&c, &err) == NULL && err == CSD_EINVAL);
	base_config(&c, &m, 1, 1);
	c.cmdline_n = 7;
	const char *cl[7] = { "a", "b", "c", "d", "e", "f", NULL };
	c.cmdline = cl;
	CHECK(csdi_perf_enc_new(&c, &err) == NULL && err == CSD_EINVAL);
	base_config(&c, &m, 1, 1);
	c.io.read_at = NULL;
	CHECK(csdi_perf_enc_new(&c, &err) == NULL && err == CSD_EINVAL);
	CHECK(csdi_perf_enc_new(NULL, &err) == NULL && err == CSD_EINVAL);
	CHECK_EQ(m.n, 0); /* nothing written for a refused setup */

	/* An unknown trace ID is refused; the file stays good. */
	base_config(&c, &m, 1, 1);
	struct csdi_perf_enc *e = csdi_perf_enc_new(&c, &err);
	CHECK(e != NULL);
	uint8_t b[3] = { 1, 2, 3 };
	CHECK_EQ(csdi_perf_enc_trace(e, 0x11, b, 3), CSD_EINVAL);
	CHECK_EQ(csdi_perf_enc_trace(e, 0x10, NULL, 3), CSD_EINVAL);
	CHECK_EQ(csdi_perf_enc_trace(e, 0x10, b, 3), 0);
	CHECK_EQ(csdi_perf_enc_finish(e), 0);
	csdi_perf_enc_free(e);
	static struct parsed p;
	parse_perf(m.d, m.n, &p);
	CHECK_EQ(p.errors, 0);
	CHECK_EQ(p.naux, 1);
	CHECK_EQ(p.naux ? p.aux[0].aux_size : 0, 16);
	free(m.d);

	/* No trace at all: no AUX buffer, an empty index. */
	memset(&m, 0, sizeof(m));
	m.writes_left = -1;
	base_config(&c, &m, 1, 1);
	e = csdi_perf_enc_new(&c, &err);
	CHECK_EQ(csdi_perf_enc_finish(e), 0);
	csdi_perf_enc_free(e);
	parse_perf(m.d, m.n, &p);
	CHECK_EQ(p.errors, 0);
	CHECK_EQ(p.naux, 0);
	CHECK_EQ(p.nindex, 0);
	free(m.d);
	CHECK_EQ(csdi_perf_enc_finish(NULL), CSD_EINVAL);
	CHECK_EQ(csdi_perf_enc_sync_point(NULL), CSD_EINVAL);
	csdi_perf_enc_free(NULL);
}

/* ------------------------------------------------------------------ */
/* A program run through the generator, each AUX buffer decoded alone */

struct gen_feed {
	struct csdi_perf_enc *e;
	uint8_t id;
};

static int feed_sink(void *ctx, const uint8_t *b, size_t n)
{
	struct gen_feed *f = ctx;
	return csdi_perf_enc_trace(f->e, f->id, b, n);
}

static int feed_sync(void *ctx)
{
	struct gen_feed *f = ctx;
	return csdi_perf_enc_sync_point(f->e);
}

static void test_program(const char *progdir, const char *prog, uint32_t protocol, uint32_t etmcr, unsigned version)
{
	char elf[2048], log[2100];
	snprintf(elf, sizeof(elf), "%s/%s", progdir, prog);
	snprintf(log, sizeof(log), "%s.log", elf);
	csd_image *img = csd_image_new();
	CHECK(csd_image_add_elf(img, elf, 0) > 0);
	struct csdi_perf_elf pe;
	char err[512];
	CHECK_EQ(csdi_perf_elf_read(elf, &pe, err, sizeof(err)), 0);

	struct mem_file m = { .writes_left = -1 };
	struct csdi_perf_enc_config c;
	base_config(&c, &m, version, 1);
	c.sources[0].protocol = protocol;
	c.sources[0].etmcr = etmcr;
	c.sources[0].etmidr = protocol == CSD_PROTO_PTM ? 0x411CF312u : 0x410CF250u;
	c.sources[0].etmccer = protocol == CSD_PROTO_PTM ? 0x34C01AC2u : 0x344008F2u;
	c.elf = &pe;
	c.aux_size = 512;
	int rc = 0;
	struct gen_feed f = { csdi_perf_enc_new(&c, &rc), c.sources[0].trace_id };
	CHECK(f.e != NULL);
	struct csdi_gen_config gc;
	memset(&gc, 0, sizeof(gc));
	gc.trace = c.sources[0];
	gc.sync_period = protocol == CSD_PROTO_PTM ? 1024 : 256;
	gc.sync_point = feed_sync;
	struct csdi_gen *g = csdi_gen_new(&gc, img, feed_sink, &f);
	CHECK(g != NULL);

	/* The run's instructions in the image (the expected decode). */
	size_t cap = 1 << 16, n = 0;
	uint32_t *want = malloc(cap * sizeof(*want));
	FILE *lf = fopen(log, "r");
	CHECK(lf != NULL);
	static struct qemu_log_reader rd;
	qemu_log_reader_init_file(&rd, lf);
	struct qemu_log_insn qi;
	int lr;
	while ((lr = qemu_log_next(&rd, &qi)) != QEMU_LOG_END) {
		if (lr != QEMU_LOG_INSN)
			continue;
		CHECK_EQ(csdi_gen_insn(g, qi.addr, qi.isa), 0);
		uint8_t byte;
		if (csd_image_read(img, qi.addr, &byte, 1) != 1)
			continue;
		if (n == cap)
			want = realloc(want, (cap *= 2) * sizeof(*want));
		want[n++] = qi.addr;
	}
	fclose(lf);
	CHECK_EQ(csdi_gen_finish(g), 0);
	csdi_gen_free(g);
	CHECK_EQ(csdi_perf_enc_finish(f.e), 0);
	uint64_t buffers = csdi_perf_enc_buffers(f.e);
	csdi_perf_enc_free(f.e);

	static struct parsed p;
	parse_perf(m.d, m.n, &p);
	CHECK_EQ(p.errors, 0);
	check_aux_layout(&p, c.tid);
	CHECK_EQ(p.errors, 0);
	CHECK(buffers >= 2);
	CHECK_EQ(p.naux, buffers);
	CHECK_EQ(p.mmap_start, pe.map[0].start);
	CHECK_EQ(p.mmap_bid_size, pe.build_id_size);

	/* Each buffer alone: a new demultiplexer and decoder. */
	size_t k = 0, bad = 0, errors = 0;
	for (size_t b = 0; b < p.naux; b++) {
		struct csd_frame_config frc = { .size = sizeof(frc), .format = CSD_FRAME_ALIGNED };
		csd_frame_decoder *frd = csd_frame_new(&frc);
		struct csd_flow_config fc;
		memset(&fc, 0, sizeof(fc));
		fc.size = sizeof(fc);
		fc.trace = &c.sources[0];
		fc.image = img;
		fc.flags = CSD_FLOW_INSN;
		csd_flow_decoder *fd = csd_flow_new(&fc);
		CHECK(frd && fd);
		csd_frame_feed(frd, m.d + p.at[b].payload, (size_t)p.aux[b].aux_size, 0);
		csd_frame_finish(frd);
		struct csd_frame_out o;
		struct csd_record r;
		for (int last = 0; !last;) {
			int fr = csd_frame_next(frd, &o);
			if (fr == 0 && (o.event != CSD_FRAME_DATA || o.bytes.id != f.id))
				continue;
			if (fr == 0)
				csd_flow_feed(fd, &o.bytes);
			else {
				csd_flow_finish(fd);
				last = 1;
			}
			while (csd_flow_next(fd, &r) == 0) {
				if (r.type == CSD_REC_ERROR || r.type == CSD_REC_NO_MEMORY || r.type == CSD_REC_NOSYNC)
					errors++;
				if (r.type != CSD_REC_INSN)
					continue;
				if (k >= n || want[k] != r.addr) {
					if (bad++ == 0)
						fprintf(stderr, "%s: buffer %zu: instruction %zu at 0x%x, the run has 0x%x\n",
							prog, b, k, (unsigned)r.addr, k < n ? want[k] : 0);
				}
				k++;
			}
		}
		csd_flow_free(fd);
		csd_frame_free(frd);
	}
	CHECK_EQ(bad, 0);
	CHECK_EQ(errors, 0);
	CHECK_EQ(k, n);
	printf("test_perf_enc: %s %s v%u: %zu instructions in %zu AUX buffers decoded alone, equal to the run\n", prog,
	       protocol == CSD_PROTO_PTM ? "PTM" : "ETMv3", version, k, p.naux);
	free(want);
	free(m.d);
	csd_image_free(img);
}

/* ------------------------------------------------------------------ */
/* ELF reader */

static void write_bytes(const char *path, const uint8_t *b, size_t n)
{
	FILE *f = fopen(path, "wb");
	CHECK(f != NULL);
	if (f) {
		CHECK_EQ(fwrite(b, 1, n, f), n);
		fclose(f);
	}
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

/* A minimal ELF: header, two program headers (PT_NOTE, PT_LOAD R+X),
 * then the note. */
static size_t tiny_elf(uint8_t *b, uint32_t namesz, uint32_t descsz, uint32_t vaddr)
{
	memset(b, 0, 512);
	memcpy(b, "\177ELF\1\1\1", 7);
	put_le32(b + 28, 52);             /* e_phoff */
	b[42] = 32;                       /* e_phentsize */
	b[44] = 2;                        /* e_phnum */
	uint8_t *ph = b + 52;
	put_le32(ph, 4);                  /* PT_NOTE */
	put_le32(ph + 4, 116);
	put_le32(ph + 16, 36);
	ph += 32;
	put_le32(ph, 1);                  /* PT_LOAD */
	put_le32(ph + 4, 0);
	put_le32(ph + 8, vaddr);
	put_le32(ph + 16, 400);
	put_le32(ph + 24, 5);             /* PF_R | PF_X */
	put_le32(b + 116, namesz);
	put_le32(b + 120, descsz);
	put_le32(b + 124, 3);             /* NT_GNU_BUILD_ID */
	memcpy(b + 128, "GNU", 4);
	for (int i = 0; i < 20; i++)
		b[132 + i] = (uint8_t)(0xA0 + i);
	return 400;
}

static void test_elf_reader(const char *progdir)
{
	char dir[] = "/tmp/csd_test_perf_enc_XXXXXX", path[256], err[512];
	CHECK(mkdtemp(dir) != NULL);
	struct csdi_perf_elf pe;
	uint8_t b[512];

	size_t n = tiny_elf(b, 4, 20, 0x8000);
	snprintf(path, sizeof(path), "%s/tiny", dir);
	write_bytes(path, b, n);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), 0);
	CHECK_EQ(pe.nmaps, 1);
	CHECK_EQ(pe.map[0].start, 0x8000);
	CHECK_EQ(pe.map[0].len, 0x1000);
	CHECK_EQ(pe.map[0].pgoff, 0);
	CHECK_EQ(pe.map[0].prot, 5);
	CHECK_EQ(pe.build_id_size, 20);
	CHECK_EQ(pe.build_id[19], 0xA0 + 19);

	/* A note whose sizes pass the segment: no build ID, no over-read. */
	tiny_elf(b, 4, 0xFFFFFFF0u, 0x8000);
	write_bytes(path, b, n);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), 0);
	CHECK_EQ(pe.build_id_size, 0);
	tiny_elf(b, 0xFFFFFFFFu, 20, 0x8000);
	write_bytes(path, b, n);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), 0);
	CHECK_EQ(pe.build_id_size, 0);
	/* A build ID longer than perf's 20 bytes is left out. */
	tiny_elf(b, 4, 24, 0x8000);
	write_bytes(path, b, n);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), 0);
	CHECK_EQ(pe.build_id_size, 0);
	/* Address and offset not congruent within a page. */
	tiny_elf(b, 4, 20, 0x8004);
	write_bytes(path, b, n);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), CSD_EFORMAT);
	CHECK(strstr(err, "program header 1 at offset 0x54") != NULL);
	/* Program headers past the end. */
	tiny_elf(b, 4, 20, 0x8000);
	b[44] = 200;
	write_bytes(path, b, n);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), CSD_EFORMAT);
	CHECK(strstr(err, "pass the end") != NULL);
	/* A segment past the end. */
	tiny_elf(b, 4, 20, 0x8000);
	put_le32(b + 52 + 32 + 16, 4000);
	write_bytes(path, b, n);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), CSD_EFORMAT);
	/* No executable segment. */
	tiny_elf(b, 4, 20, 0x8000);
	put_le32(b + 52 + 32 + 24, 4);
	write_bytes(path, b, n);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), CSD_ENOENT);
	/* Not ELF, short, 64-bit, a directory. */
	write_bytes(path, (const uint8_t *)"hello", 5);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), CSD_EFORMAT);
	tiny_elf(b, 4, 20, 0x8000);
	b[4] = 2;
	write_bytes(path, b, n);
	CHECK_EQ(csdi_perf_elf_read(path, &pe, err, sizeof(err)), CSD_EFORMAT);
	CHECK_EQ(csdi_perf_elf_read(dir, &pe, err, sizeof(err)), CSD_EIO);
	CHECK(strstr(err, "directory") != NULL);
	remove(path);
	rmdir(dir);

	/* A real program against readelf. */
	char elf[2048], cmd[4200], line[512];
	snprintf(elf, sizeof(elf), "%s/hello-arm-O2", progdir);
	CHECK_EQ(csdi_perf_elf_read(elf, &pe, err, sizeof(err)), 0);
	snprintf(cmd, sizeof(cmd), "readelf -n '%s' 2>/dev/null", elf);
	FILE *p = popen(cmd, "r");
	char hex[64] = "";
	while (p && fgets(line, sizeof(line), p)) {
		const char *s = strstr(line, "Build ID: ");
		if (s)
			sscanf(s + 10, "%63s", hex);
	}
	if (p)
		pclose(p);
	char mine[64] = "";
	for (unsigned i = 0; i < pe.build_id_size; i++)
		snprintf(mine + 2 * i, 3, "%02x", pe.build_id[i]);
	CHECK(hex[0] != 0);
	CHECK_STR(mine, hex);
	snprintf(cmd, sizeof(cmd), "readelf -lW '%s' 2>/dev/null", elf);
	p = popen(cmd, "r");
	unsigned long off = 0, va = 0, fsz = 0;
	int found = 0;
	while (p && fgets(line, sizeof(line), p)) {
		char flg[8] = "";
		if (sscanf(line, " LOAD 0x%lx 0x%lx 0x%*x 0x%lx 0x%*x %7[RWE ]", &off, &va, &fsz, flg) == 4 &&
		    strchr(flg, 'E') && !found) {
			found = 1;
			CHECK_EQ(pe.map[0].start, va & ~0xFFFul);
			CHECK_EQ(pe.map[0].pgoff, off & ~0xFFFul);
			CHECK_EQ(pe.map[0].len, ((va & 0xFFF) + fsz + 0xFFF) & ~0xFFFul);
		}
	}
	if (p)
		pclose(p);
	CHECK(found);
	CHECK_EQ(pe.nmaps, 1);
}

/* ------------------------------------------------------------------ */
/* csdec gen --perf-data */

static void test_tool(const char *progdir)
{
	const char *tool = getenv("CSD_TOOL");
	CHECK(tool != NULL);
	if (!tool)
		return;
	char dir[] = "/tmp/csd_test_perf_gen_XXXXXX", cmd[8192], out[4096], err[4096], errpath[128], file[128];
	CHECK(mkdtemp(dir) != NULL);
	snprintf(errpath, sizeof(errpath), "%s/err", dir);
	snprintf(file, sizeof(file), "%s/p.data", dir);
	char prog[2100];
	snprintf(prog, sizeof(prog), "%s/interwork-thumb-O2", progdir);
	static const struct {
		const char *opts, *message;
	} refused[] = {
		{ "--protocol ptm --perf-data %s -o %s.d", "either -o DIR or --perf-data FILE" },
		{ "--protocol ptm --perf-data %s --perf-data-version 3", "is not 1 or 2" },
		{ "--protocol etm3 --core cortex-m3 --perf-data %s", "not for a Cortex-M core" },
		{ "--protocol ptm --formatted=port --perf-data %s", "--formatted=port does not apply" },
		{ "--protocol ptm --perf-data %s --perf-aux-size 8", "out of range" },
		{ "--protocol ptm --perf-data /nonexistent/dir/p.data%.0s", "cannot write /nonexistent/dir/p.data" },
		/* options that would change nothing */
		{ "--protocol ptm --perf-aux-size 1024 -o %s.d", "--perf-aux-size is for --perf-data" },
		{ "--protocol ptm --perf-data-version 1 -o %s.d", "--perf-data-version is for --perf-data" },
		{ "--protocol ptm --protocol ptm --perf-data %s --perf-aux-size 1024", "is for one source" },
		{ "--protocol etm3 --return-stack --perf-data %s", "--return-stack is the PTM's" },
	};
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		char opts[512];
		snprintf(opts, sizeof(opts), refused[i].opts, file, file);
		snprintf(cmd, sizeof(cmd), "'%s' gen --qemu-log '%s.log' --elf '%s' %s", tool, prog, prog, opts);
		CHECK_EQ(cli_run_cmd(cmd, errpath, out, sizeof(out)), 2);
		cli_read_text(errpath, err, sizeof(err));
		CHECK(strstr(err, refused[i].message) != NULL);
		if (!strstr(err, refused[i].message))
			fprintf(stderr, "gen %s: %s", opts, err);
		CHECK(access(file, F_OK) != 0); /* nothing left behind */
	}

	/* A written file: what the tool says, and what the file holds. */
	snprintf(cmd, sizeof(cmd),
		 "'%s' gen --qemu-log '%s.log' --elf '%s' --protocol ptm --context-id-bytes 1 --perf-data %s "
		 "--perf-data-version 1 --perf-aux-size 2048",
		 tool, prog, prog, file);
	CHECK_EQ(cli_run_cmd(cmd, errpath, out, sizeof(out)), 0);
	cli_read_text(errpath, err, sizeof(err));
	CHECK(strstr(err, "AUX buffers of trace") != NULL);
	size_t n;
	uint8_t *d = check_read_file(file, &n);
	CHECK(d != NULL);
	static struct parsed p;
	if (d) {
		parse_perf(d, n, &p);
		CHECK_EQ(p.errors, 0);
		check_aux_layout(&p, 200);
		CHECK_EQ(p.errors, 0);
		CHECK(p.naux >= 2);
		CHECK_EQ(p.info[0], 1);
		CHECK_EQ(p.ninfo, 10);
		CHECK_EQ(p.info[3 + 3], 1u << 14);   /* ETMCR: 1-byte context IDs */
		CHECK_EQ(p.info[3 + 4], 0x10);       /* trace ID */
		CHECK_EQ(p.info[3 + 6], 0x411CF312u); /* a PTM's ETMIDR */
		CHECK_STR(p.comm, "interwork-thumb");
		CHECK(p.mmap_path[0] == '/' && strstr(p.mmap_path, "/interwork-thumb-O2") != NULL);
		CHECK_STR(p.bid_path, p.mmap_path);
		CHECK_EQ(p.ncmdline, 6);
		CHECK_STR(p.cmdline[5], p.mmap_path);
		free(d);
	}
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	CHECK_EQ(system(cmd), 0);
}

int main(void)
{
	const char *progdir = getenv("CSD_PROGRAMS");
	if (!progdir) {
		fprintf(stderr, "CSD_PROGRAMS not set (run through make test)\n");
		return 1;
	}
	/* One source: buffers end at sync points once 64 bytes are in. */
	test_bytes(1, 1, 64, 5000, 50, 5000 / 150, 5000 / 50 + 1);
	test_bytes(2, 1, 64, 5000, 50, 5000 / 150, 5000 / 50 + 1);
	test_bytes(1, 1, 65536, 5000, 50, 1, 1);
	test_bytes(1, 1, 16, 3000, 1, 3000 / 40, 3000); /* a buffer per step or two */
	/* Several sources never split (a sync point of one is not another's). */
	test_bytes(1, 3, 64, 3000, 50, 1, 1);
	test_bytes(2, 3, 64, 3000, 50, 1, 1);
	test_bad_configs();
	test_write_errors();
	test_elf_reader(progdir);
	test_tool(progdir);
	test_program(progdir, "switch-thumb-O0", CSD_PROTO_PTM, 0, 1);
	test_program(progdir, "interwork-arm-O2", CSD_PROTO_PTM, 0x20001000u, 2);
	test_program(progdir, "switch-thumb-O0", CSD_PROTO_ETM3, 0, 2);
	test_program(progdir, "longjmp-arm-O0", CSD_PROTO_ETM3, 0x1000u, 1);
	return check_done("test_perf_enc");
}
