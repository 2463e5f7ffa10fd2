/*
 * seedgen.c - writes the seed corpora of the fuzz harnesses into
 * OUTDIR/<harness>/ (run by `make fuzz-seeds`).
 *
 * Seeds come from two places, both made at run time so nothing of the
 * shared captures is copied into the repository:
 *   - the captures under $CSD_SHARED/traces (TC2: one formatted buffer with
 *     ETMv3 and PTM sources; trace_cov_a15: a raw PTM buffer): the whole
 *     capture and pieces of it for the frame harness, each source's byte
 *     stream (extracted with csd_frame_*) with its registers for the packet
 *     and flow harnesses, the snapshot texts for the snapshot harness;
 *   - the packet encoders: random packet streams under many register
 *     settings, aimed at the code image the flow harnesses map
 *     (fuzz_image.h), and formatter frames from the frame encoder (port
 *     format with FSYNC and HSYNC; TC2's data in port frames without FSYNC,
 *     as they are and as the frame harness's build mode input);
 *   - a small ELF file of that code image for the image harness;
 *   - operation streams for the merge harness (issue 17's three sources,
 *     sources in step, random ones);
 *   - for the tool's harnesses: qemu logs (by hand, and the start of the
 *     test programs' runs when $CSD_PROGRAMS / $CSD_PROGRAMS_M hold them),
 *     generator configurations with operations, and the packets and
 *     records of examples/sample ($CSD_FUZZ_SAMPLE) for the printers;
 *   - ELF files with symbols, mapping symbols and line tables (the sample
 *     program's, a made one, and both with section headers repeated) for
 *     the symbols harness;
 *   - the flow harnesses' inputs after an option byte, and made record
 *     streams, for the accum harness;
 *   - perf.data files (tests/perf_data_build.h) holding the sample's trace
 *     in the layouts perf writes, for the perf_data harness;
 *   - ETMv3 data trace for the etm3_flow harness: the trace generator
 *     (src/gen.c) running loads and stores of every kind (VLDn and LDC too) placed in the
 *     harness's extra code (A32 and T32), in each ETMCR[3:2] mode, in order
 *     and out of order, with and without instruction trace (ETMCR[20]).
 * Without CSD_SHARED only the encoder seeds are written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "csdec.h"
#include "frame_enc.h"
#include "fuzz_common.h"
#include "fuzz_image.h"
#include "fuzz_print.h"
#include "arm_isa.h"
#include "gen.h"
#include "../tests/perf_data_build.h"

#define MAX_STREAM (1u << 20)

static const char *out_root;
static unsigned seeds_written;

static void die(const char *what)
{
	fprintf(stderr, "seedgen: %s\n", what);
	exit(1);
}

static void make_dir(const char *path)
{
	if (mkdir(path, 0777) != 0 && errno != EEXIST) {
		perror(path);
		exit(1);
	}
}

/* Write head (may be NULL) followed by data as OUTDIR/<harness>/<name>. */
static void put_seed(const char *harness, const char *name, const uint8_t *head, size_t hn, const uint8_t *data,
		     size_t n)
{
	char path[1024];
	snprintf(path, sizeof(path), "%s/%s", out_root, harness);
	make_dir(path);
	snprintf(path, sizeof(path), "%s/%s/%s", out_root, harness, name);
	FILE *f = fopen(path, "wb");
	if (!f || (hn && fwrite(head, 1, hn, f) != hn) || (n && fwrite(data, 1, n, f) != n) || fclose(f) != 0)
		die(path);
	seeds_written++;
	/* fuzz_accum takes the flow harnesses' inputs after its option byte
	 * (options cycling through symbols, per-address costs, the limit). */
	int etm3 = strcmp(harness, "etm3_flow") == 0;
	if ((etm3 || strcmp(harness, "ptm_flow") == 0) && hn < 64) {
		static unsigned k;
		uint8_t h2[65];
		h2[0] = (uint8_t)((etm3 ? 0x40 : 0) | (k % 8) << 1 | (k & 8 ? 0x10 : 0) | (k % 16 == 5 ? 0x20 : 0));
		k++;
		char n2[256];
		memcpy(h2 + 1, head, hn);
		snprintf(n2, sizeof(n2), "%s-%s", etm3 ? "etm3" : "ptm", name);
		put_seed("accum", n2, h2, hn + 1, data, n);
	}
}

/* A packet or flow seed: the header for `cfg` and the stream bytes. */
static void put_trace_seed(const char *harness, const char *name, const struct csd_trace_config *cfg, uint8_t misc,
			   uint8_t split_mode, const uint8_t *data, size_t n)
{
	struct fuzz_hdr h;
	uint8_t head[FUZZ_HDR_SIZE];
	memset(&h, 0, sizeof(h));
	h.etmcr = cfg->etmcr;
	h.etmccer = cfg->etmccer;
	h.etmidr = cfg->etmidr;
	h.misc = (uint8_t)(misc | (cfg->core_profile == CSD_CORE_A ? 3 : cfg->core_profile));
	h.split_mode = split_mode;
	h.split_seed = (uint8_t)(n * 7 + split_mode);
	fuzz_hdr_write(head, &h);
	put_seed(harness, name, head, sizeof(head), data, n);
}

static uint8_t *read_file(const char *path, size_t *n)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	uint8_t *buf = malloc(MAX_STREAM);
	if (!buf)
		die("out of memory");
	*n = fread(buf, 1, MAX_STREAM, f);
	fclose(f);
	return buf;
}

/* ---- the shared captures ------------------------------------------------ */

/* Bytes of trace ID `id` in a capture. */
static size_t extract(const uint8_t *cap, size_t n, uint32_t format, uint8_t id, uint8_t *out)
{
	struct csd_frame_config fc = { .size = sizeof(fc), .format = format, .raw_id = id };
	csd_frame_decoder *fd = csd_frame_new(&fc);
	struct csd_frame_out o;
	size_t len = 0;
	if (!fd || csd_frame_feed(fd, cap, n, 0) != 0 || csd_frame_finish(fd) != 0)
		die("frame decoder");
	while (csd_frame_next(fd, &o) == 0)
		if (o.event == CSD_FRAME_DATA && o.bytes.id == id)
			for (size_t i = 0; i < o.bytes.size && len < MAX_STREAM; i++)
				out[len++] = o.bytes.data[i];
	csd_frame_free(fd);
	return len;
}

/* Offsets of the first A-sync patterns (five 0x00 then 0x80) in a stream. */
static size_t find_asyncs(const uint8_t *s, size_t n, size_t *at, size_t max)
{
	size_t k = 0, zeros = 0;
	for (size_t i = 0; i < n && k < max; i++) {
		if (s[i] == 0x80 && zeros >= 5)
			at[k++] = i - 5;
		zeros = s[i] == 0 ? zeros + 1 : 0;
	}
	return k;
}

/* The texts of a snapshot as the snapshot harness takes them: device files
 * renamed d0.ini, d1.ini ... in list order, buffer files trace.bin, dump
 * files dump.bin (with their length cut to dump.bin's 64 bytes if
 * `fit_dumps`). */
static void snapshot_seed(const char *dir, const char *name, int fit_dumps)
{
	char path[1024];
	static char out[1 << 20];
	size_t len = 0;
	char devices[16][256];
	size_t ndev = 0;
	for (int part = 0; part < 2 + 16; part++) {
		const char *file = part == 0 ? "snapshot.ini" : part == 1 ? "trace.ini" : NULL;
		if (part >= 2) {
			if ((size_t)(part - 2) >= ndev)
				break;
			file = devices[part - 2];
		}
		snprintf(path, sizeof(path), "%s/%s", dir, file);
		FILE *f = fopen(path, "r");
		if (!f)
			return;
		if (part > 0)
			len += (size_t)snprintf(out + len, sizeof(out) - len, "\n%%%%\n");
		char line[8192];
		int in_list = 0;
		while (fgets(line, sizeof(line), f) && len + sizeof(line) + 64 < sizeof(out)) {
			char *eq = strchr(line, '=');
			if (line[0] == '[')
				in_list = strncmp(line, "[device_list]", 13) == 0;
			if (part == 0 && in_list && eq && ndev < 12) {
				snprintf(devices[ndev], sizeof(devices[ndev]), "%.*s", (int)strcspn(eq + 1, "\r\n"),
					 eq + 1);
				len += (size_t)snprintf(out + len, sizeof(out) - len, "%.*s=d%zu.ini\n", (int)(eq - line),
							line, ndev);
				ndev++;
			} else if (part > 0 && strncmp(line, "file=", 5) == 0) {
				len += (size_t)snprintf(out + len, sizeof(out) - len, "file=%s\n",
							part == 1 ? "trace.bin" : "dump.bin");
			} else if (part > 1 && fit_dumps && strncmp(line, "length=", 7) == 0) {
				len += (size_t)snprintf(out + len, sizeof(out) - len, "length=0x40\n");
			} else {
				len += (size_t)snprintf(out + len, sizeof(out) - len, "%s", line);
			}
		}
		fclose(f);
	}
	put_seed("snapshot", name, NULL, 0, (const uint8_t *)out, len);
}

/* Seeds where the frame harness must infer the frame alignment: a
 * formatted capture's data runs, in capture order, as the payload of its
 * build mode (chunks of up to 16 bytes, led by a control byte naming one of
 * four sources by the run's ID), cut at a few offsets; and the port
 * capture that mode builds, given as it is. */
struct build_out {
	uint8_t *b;
	size_t n, cap;
};

static int build_sink(void *ctx, const uint8_t *bytes, size_t n)
{
	struct build_out *o = ctx;
	if (o->n + n > o->cap) {
		o->cap = (o->n + n) * 2;
		o->b = realloc(o->b, o->cap);
		if (!o->b)
			die("out of memory");
	}
	memcpy(o->b + o->n, bytes, n);
	o->n += n;
	return 0;
}

static void inference_seeds(const uint8_t *cap, size_t n, uint32_t format, const char *tag)
{
	struct csd_frame_config fc = { .size = sizeof(fc), .format = format };
	csd_frame_decoder *fd = csd_frame_new(&fc);
	struct csd_frame_out o;
	static uint8_t payload[8192];
	size_t len = 0;
	if (!fd || csd_frame_feed(fd, cap, n, 0) != 0 || csd_frame_finish(fd) != 0)
		die("frame decoder");
	while (csd_frame_next(fd, &o) == 0 && len < sizeof(payload) - 32) {
		if (o.event != CSD_FRAME_DATA)
			continue;
		for (size_t i = 0; i < o.bytes.size && len < sizeof(payload) - 32; i += 16) {
			size_t k = o.bytes.size - i < 16 ? o.bytes.size - i : 16;
			payload[len++] = (uint8_t)((o.bytes.id & 3) | (k - 1) << 2);
			memcpy(payload + len, o.bytes.data + i, k);
			len += k;
		}
	}
	csd_frame_free(fd);
	if (format != CSD_FRAME_ALIGNED || len < 1024)
		return;
	/* The same port capture the harness builds (bytes with bit 7 set
	 * made even), without its leading FSYNC. */
	struct build_out out = { NULL, 0, 0 };
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config ec;
	memset(&ec, 0, sizeof(ec));
	ec.format = CSD_FRAME_PORT;
	ec.id_every = 8;
	ec.sink = build_sink;
	ec.ctx = &out;
	if (csdi_frame_enc_init(&enc, &ec) != 0)
		die("frame encoder");
	for (size_t i = 0; i < len;) {
		const uint8_t c = payload[i++];
		uint8_t chunk[16];
		size_t k = ((c >> 2) & 15) + 1;
		for (size_t j = 0; j < k; j++)
			chunk[j] = payload[i + j] & 0x80 ? (uint8_t)(payload[i + j] & 0xFE) : payload[i + j];
		i += k;
		if (csdi_frame_enc_data(&enc, (uint8_t)(1 + (c & 3) * 0x11), chunk, k) != 0)
			die("frame encoder");
	}
	csdi_frame_enc_flush(&enc);
	char name[300];
	for (unsigned cut = 0; cut < 16; cut += 5) {
		uint8_t fh[4] = { 0x80 | CSD_FRAME_PORT, (uint8_t)cut, (uint8_t)(cut % 9), (uint8_t)(cut * 13) };
		snprintf(name, sizeof(name), "%s-build-cut%u", tag, cut);
		put_seed("frame", name, fh, 4, payload, len);
		fh[0] = CSD_FRAME_PORT;
		snprintf(name, sizeof(name), "%s-port-no-fsync-cut%u", tag, cut);
		put_seed("frame", name, fh, 4, out.b + 4 + cut, out.n - 4 - cut);
	}
	free(out.b);
}

struct capture_source {
	struct csd_trace_config cfg;
	uint8_t *bytes;
	size_t n;
};

/* Seeds from one snapshot directory of the shared captures. */
static void capture_seeds(const char *dir, const char *tag)
{
	char err[512], name[256];
	csd_snapshot *snap;
	if (csd_snapshot_open(dir, &snap, err, sizeof(err)) != 0) {
		fprintf(stderr, "seedgen: %s: %s (skipped)\n", dir, err);
		return;
	}
	snprintf(name, sizeof(name), "%s-snapshot", tag);
	snapshot_seed(dir, name, 0);
	snprintf(name, sizeof(name), "%s-snapshot-dumps", tag);
	snapshot_seed(dir, name, 1);
	for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++) {
		const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, b);
		size_t n;
		uint8_t *cap = read_file(buf->path, &n);
		if (!cap)
			continue;
		/* Frame harness: [format, raw ID, split mode, split seed]. */
		uint8_t fh[4] = { (uint8_t)buf->frame_format, 0, 0, 0 };
		for (size_t s = 0; s < csd_snapshot_num_sources(snap); s++)
			if (csd_snapshot_source(snap, s)->buffer == (int)b)
				fh[1] = csd_snapshot_source(snap, s)->config.trace_id;
		snprintf(name, sizeof(name), "%s-%s-whole", tag, buf->name);
		put_seed("frame", name, fh, 4, cap, n);
		snprintf(name, sizeof(name), "%s-%s", tag, buf->name);
		inference_seeds(cap, n, buf->frame_format, name);
		fh[2] = 9;
		fh[3] = 77;
		for (size_t off = 0, k = 0; off < n && k < 8; off += n / 8 + 16, k++) {
			size_t len = n - off < 2048 ? n - off : 2048;
			snprintf(name, sizeof(name), "%s-%s-piece%zu", tag, buf->name, k);
			put_seed("frame", name, fh, 4, cap + (off & ~(size_t)15), len);
		}

		uint8_t *stream = malloc(MAX_STREAM);
		if (!stream)
			die("out of memory");
		for (size_t s = 0; s < csd_snapshot_num_sources(snap); s++) {
			const struct csd_snapshot_source *src = csd_snapshot_source(snap, s);
			if (src->buffer != (int)b || src->config.protocol == CSD_PROTO_UNKNOWN)
				continue;
			const char *proto = src->config.protocol == CSD_PROTO_ETM3 ? "etm3" : "ptm";
			size_t len = extract(cap, n, buf->frame_format, src->config.trace_id, stream);
			if (!len)
				continue;
			char pkt_h[32], flow_h[32];
			snprintf(pkt_h, sizeof(pkt_h), "%s_pkt", proto);
			snprintf(flow_h, sizeof(flow_h), "%s_flow", proto);
			snprintf(name, sizeof(name), "%s-%s-whole", tag, src->name);
			put_trace_seed(pkt_h, name, &src->config, 0, 0, stream, len);
			put_trace_seed(flow_h, name, &src->config, 0, 0, stream, len);
			snprintf(name, sizeof(name), "%s-%s-split", tag, src->name);
			put_trace_seed(pkt_h, name, &src->config, FUZZ_MISC_SPREAD, 5, stream, len);
			/* Pieces from an A-sync on: short inputs that decode. */
			size_t at[6];
			size_t na = find_asyncs(stream, len, at, 6);
			for (size_t k = 0; k < na; k++) {
				size_t plen = len - at[k] < 1024 ? len - at[k] : 1024;
				snprintf(name, sizeof(name), "%s-%s-async%zu", tag, src->name, k);
				put_trace_seed(pkt_h, name, &src->config, 0, (uint8_t)(3 + k), stream + at[k], plen);
				put_trace_seed(flow_h, name, &src->config, k & 1 ? FUZZ_MISC_SPREAD : 0, (uint8_t)(3 + k),
					       stream + at[k], plen);
			}
		}
		free(stream);
		free(cap);
	}
	csd_snapshot_free(snap);
}

/* ---- encoder seeds ------------------------------------------------------ */

static uint32_t rng = 0x2545F491u;

static uint32_t rnd(void)
{
	return fuzz_rand(&rng);
}

/* An address in the built-in code image, aligned for isa. */
static uint32_t image_addr(int isa)
{
	if (isa == CSD_ISA_ARM)
		return FUZZ_IMAGE_A32_ADDR + 4u * (rnd() % (sizeof(fuzz_image_a32) / 4));
	return FUZZ_IMAGE_T32_ADDR + 2u * (rnd() % (sizeof(fuzz_image_t32) / 2));
}

static int image_isa(void)
{
	return rnd() & 1 ? CSD_ISA_ARM : CSD_ISA_THUMB;
}

static struct csd_packet pkt_of(uint32_t type)
{
	struct csd_packet p;
	memset(&p, 0, sizeof(p));
	p.type = type;
	return p;
}

typedef int (*enc_fn)(void *enc, const struct csd_packet *p, uint8_t *buf, size_t cap);

static int etm3_enc(void *e, const struct csd_packet *p, uint8_t *b, size_t c)
{
	return csd_etm3_enc_packet(e, p, b, c);
}

static int ptm_enc(void *e, const struct csd_packet *p, uint8_t *b, size_t c)
{
	return csd_ptm_enc_packet(e, p, b, c);
}

/* Append a packet; packets the configuration cannot carry are left out. */
static void add(enc_fn fn, void *enc, const struct csd_packet *p, uint8_t *buf, size_t *len, size_t cap)
{
	int r = fn(enc, p, buf + *len, cap - *len);
	if (r > 0)
		*len += (size_t)r;
}

static void etm3_stream(unsigned k)
{
	static uint8_t buf[16384];
	size_t len = 0;
	unsigned minor = 3 + rnd() % 3;
	struct csd_trace_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.protocol = CSD_PROTO_ETM3;
	cfg.etmcr = (rnd() & ((1u << 12) | (1u << 28) | 0xCu)) | ((rnd() % 4u) << 14);
	cfg.etmccer = (rnd() & ((1u << 29) | (1u << 28) | (1u << 22) | (1u << 26)));
	cfg.etmidr = 0x410CF200u | (minor << 4) | (rnd() & 1 ? 1u << 20 : 0);
	cfg.core_profile = (uint8_t)(k % 7 == 6 ? CSD_CORE_M : CSD_CORE_A);
	csd_etm3_encoder *enc = csd_etm3_enc_new(&cfg);
	if (!enc)
		die("ETMv3 encoder");
	const int ca = (cfg.etmcr >> 12) & 1;
	struct csd_packet p = pkt_of(CSD_PKT_ASYNC);
	add(etm3_enc, enc, &p, buf, &len, sizeof(buf));
	int isa = image_isa();
	for (int i = 0; i < 200 && len + 64 < sizeof(buf); i++) {
		switch (i == 0 ? 0 : rnd() % 10) {
		case 0:
			p = pkt_of(CSD_PKT_ISYNC);
			p.isa = (uint8_t)(isa = image_isa());
			p.addr = image_addr(isa);
			p.reason = (uint8_t)(i == 0 ? CSD_REASON_TRACE_ON : rnd() % 4);
			p.flags = CSD_PKTF_CONTEXT_ID | (rnd() & 1 ? CSD_PKTF_NS : 0);
			p.context_id = rnd() & 0xFF;
			if (ca) {
				p.flags |= CSD_PKTF_CYCLE_COUNT;
				p.cycle_count = rnd() % 1000;
			}
			break;
		case 1:
		case 2: {
			p = pkt_of(CSD_PKT_BRANCH);
			int want = rnd() % 4 ? isa : image_isa();
			p.isa = (uint8_t)want;
			p.addr = image_addr(want);
			if (rnd() % 5 == 0) {
				p.flags |= CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY;
				p.exception = (uint16_t)(rnd() % 16);
				p.flags |= rnd() & 1 ? CSD_PKTF_CANCEL : 0;
			}
			isa = want;
			break;
		}
		case 3:
		case 4:
		case 5:
			p = pkt_of(CSD_PKT_PHEADER);
			if (ca) {
				p.atoms.format = 1 + rnd() % 3;
				p.atoms.num = (uint8_t)(p.atoms.format == 2 ? 2 : p.atoms.format == 3 ? rnd() % 2 : 1 + rnd() % 4);
				p.atoms.w = (uint8_t)(p.atoms.format == 3 ? 1 + rnd() % 4 : p.atoms.format == 1 ? p.atoms.num : 1);
			} else {
				p.atoms.format = 1;
				p.atoms.num = (uint8_t)(1 + rnd() % 8);
			}
			p.atoms.en = rnd() & ((1u << p.atoms.num) - 1);
			break;
		case 6:
			p = pkt_of(CSD_PKT_CYCLE_COUNT);
			p.cycle_count = rnd() % 5000;
			break;
		case 7:
			p = pkt_of(CSD_PKT_TIMESTAMP);
			p.timestamp = ((uint64_t)rnd() << 16) | rnd();
			break;
		case 8:
			p = pkt_of(CSD_PKT_CONTEXT_ID);
			p.context_id = rnd() & 0xFF;
			break;
		default:
			p = pkt_of(rnd() & 1 ? CSD_PKT_TRIGGER : CSD_PKT_EXCEPTION_EXIT);
			break;
		}
		add(etm3_enc, enc, &p, buf, &len, sizeof(buf));
	}
	csd_etm3_enc_free(enc);
	char name[64];
	snprintf(name, sizeof(name), "enc-%02u", k);
	put_trace_seed("etm3_pkt", name, &cfg, 0, (uint8_t)(k % 5), buf, len);
	put_trace_seed("etm3_flow", name, &cfg, 0, (uint8_t)(k % 5), buf, len);
}

static void ptm_stream(unsigned k)
{
	static uint8_t buf[16384];
	size_t len = 0;
	struct csd_trace_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.protocol = CSD_PROTO_PTM;
	cfg.etmcr = (rnd() & ((1u << 12) | (1u << 28) | (1u << 29) | (1u << 30))) | ((rnd() % 4u) << 14);
	cfg.etmccer = 0x34C01AC2u ^ (rnd() & ((1u << 29) | (1u << 28) | (1u << 24)));
	cfg.etmidr = rnd() % 4 ? 0x411CF312u : 0x4100F300u;
	csd_ptm_encoder *enc = csd_ptm_enc_new(&cfg);
	if (!enc)
		die("PTM encoder");
	const int ca = (cfg.etmcr >> 12) & 1;
	const unsigned cid = (cfg.etmcr >> 14) & 3;
	struct csd_packet p = pkt_of(CSD_PKT_ASYNC);
	add(ptm_enc, enc, &p, buf, &len, sizeof(buf));
	int isa = image_isa();
	for (int i = 0; i < 200 && len + 64 < sizeof(buf); i++) {
		switch (i == 0 ? 0 : rnd() % 10) {
		case 0:
			p = pkt_of(CSD_PKT_ISYNC);
			p.isa = (uint8_t)(isa = image_isa());
			p.addr = image_addr(isa);
			p.reason = (uint8_t)(i == 0 ? CSD_REASON_TRACE_ON : rnd() % 4);
			p.flags = rnd() & 1 ? CSD_PKTF_NS : 0;
			if (cid) {
				p.flags |= CSD_PKTF_CONTEXT_ID;
				p.context_id = rnd() & 0xFF;
			}
			if (ca && p.reason != CSD_REASON_PERIODIC) {
				p.flags |= CSD_PKTF_CYCLE_COUNT;
				p.cycle_count = rnd() % 1000;
			}
			break;
		case 1:
		case 2: {
			p = pkt_of(CSD_PKT_BRANCH);
			int want = rnd() % 4 ? isa : image_isa();
			p.isa = (uint8_t)want;
			p.flags = CSD_PKTF_ISA;
			p.addr = image_addr(want);
			if (rnd() % 5 == 0) {
				p.flags |= CSD_PKTF_EXCEPTION | CSD_PKTF_SECURITY;
				p.exception = (uint16_t)(rnd() % 16);
			}
			if (ca) {
				p.flags |= CSD_PKTF_CYCLE_COUNT;
				p.cycle_count = rnd() % 300;
			}
			isa = want;
			break;
		}
		case 3:
		case 4:
		case 5:
			p = pkt_of(CSD_PKT_ATOM);
			p.atoms.num = (uint8_t)(ca ? 1 : 1 + rnd() % 5);
			p.atoms.en = rnd() & ((1u << p.atoms.num) - 1);
			if (ca) {
				p.flags |= CSD_PKTF_CYCLE_COUNT;
				p.cycle_count = rnd() % 100;
			}
			break;
		case 6:
			p = pkt_of(CSD_PKT_WAYPOINT);
			p.addr = image_addr(isa);
			break;
		case 7:
			p = pkt_of(CSD_PKT_TIMESTAMP);
			p.timestamp = ((uint64_t)rnd() << 16) | rnd();
			if (ca) {
				p.flags |= CSD_PKTF_CYCLE_COUNT;
				p.cycle_count = rnd() % 100;
			}
			break;
		case 8:
			p = pkt_of(rnd() & 1 ? CSD_PKT_VMID : CSD_PKT_CONTEXT_ID);
			p.vmid = (uint8_t)rnd();
			p.context_id = rnd() & 0xFF;
			break;
		default:
			p = pkt_of(rnd() & 1 ? CSD_PKT_EXCEPTION_RETURN : CSD_PKT_TRIGGER);
			break;
		}
		add(ptm_enc, enc, &p, buf, &len, sizeof(buf));
	}
	csd_ptm_enc_free(enc);
	char name[64];
	snprintf(name, sizeof(name), "enc-%02u", k);
	put_trace_seed("ptm_pkt", name, &cfg, 0, (uint8_t)(k % 5), buf, len);
	put_trace_seed("ptm_flow", name, &cfg, 0, (uint8_t)(k % 5), buf, len);
}

/* Port-format captures from the frame encoder: several sources, periodic
 * FSYNCs, HSYNCs inside frames. */
struct sink_buf {
	uint8_t data[8192];
	size_t len;
};

static int sink(void *ctx, const uint8_t *bytes, size_t n)
{
	struct sink_buf *s = ctx;
	if (n > sizeof(s->data) - s->len)
		return CSD_ENOSPC;
	memcpy(s->data + s->len, bytes, n);
	s->len += n;
	return 0;
}

static void frame_encoded(unsigned k, uint32_t format)
{
	static struct sink_buf out;
	out.len = 0;
	struct csdi_frame_enc enc;
	struct csdi_frame_enc_config c;
	memset(&c, 0, sizeof(c));
	c.format = format;
	c.fsync_every = format == CSD_FRAME_PORT ? 1 + k % 4 : 0;
	c.id_every = 8;
	c.sink = sink;
	c.ctx = &out;
	if (csdi_frame_enc_init(&enc, &c) != 0)
		die("frame encoder");
	for (int i = 0; i < 100 && out.len < sizeof(out.data) - 512; i++) {
		uint8_t data[40];
		size_t n = 1 + rnd() % sizeof(data);
		for (size_t j = 0; j < n; j++)
			data[j] = (uint8_t)rnd();
		if (csdi_frame_enc_data(&enc, (uint8_t)(0x10 + rnd() % 4), data, n) != 0)
			break;
		if (format == CSD_FRAME_PORT && rnd() % 4 == 0)
			csdi_frame_enc_hsync(&enc);
		if (rnd() % 16 == 0)
			csdi_frame_enc_fsync(&enc, format == CSD_FRAME_PORT ? 1 + rnd() % 3 : 4);
	}
	csdi_frame_enc_flush(&enc);
	uint8_t fh[4] = { (uint8_t)format, 0x10, (uint8_t)(k % 9), (uint8_t)k };
	char name[64];
	snprintf(name, sizeof(name), "enc-%s-%02u", format == CSD_FRAME_PORT ? "port" : "aligned", k);
	put_seed("frame", name, fh, 4, out.data, out.len);
}

/* A minimal snapshot in the harness's own layout: one PTM source, its core
 * with a dump, one buffer. */
static void minimal_snapshot(void)
{
	static const char text[] =
		"[snapshot]\nversion=1.0\n\n[device_list]\ndevice0=d0.ini\ndevice1=d1.ini\n\n"
		"[trace]\nmetadata=trace.ini\n"
		"\n%%\n"
		"[trace_buffers]\nbuffers=buffer0\n\n[buffer0]\nname=ETB_0\nfile=trace.bin\nformat=coresight\n\n"
		"[source_buffers]\nPTM_0=ETB_0\n\n[core_trace_sources]\ncpu_0=PTM_0\n"
		"\n%%\n"
		"[device]\nname=PTM_0\nclass=trace_source\ntype=PTM1.1\n\n[regs]\n"
		"ETMCR(0x000)=0x10001000\nETMIDR(0x079)=0x411CF312\nETMCCER(0x07A)=0x34C01AC2\n"
		"ETMTRACEIDR(0x080)=0x00000013\n"
		"\n%%\n"
		"[device]\nname=cpu_0\nclass=core\ntype=Cortex-A15\n\n[regs]\nR15=0x8000\n\n"
		"[dump]\nfile=dump.bin\naddress=0x8000\nlength=0x40\n";
	put_seed("snapshot", "minimal", NULL, 0, (const uint8_t *)text, sizeof(text) - 1);
}

/* Image harness: a little ELF file holding the built-in code as two PT_LOAD
 * segments, then operations (fuzz_image.c) that overlap it with buffers,
 * file ranges and the callback and read across all of them. */
static void image_seeds(void)
{
	static uint8_t in[4096];
	uint8_t *elf = in + 3;
	const size_t a32 = sizeof(fuzz_image_a32), t32 = sizeof(fuzz_image_t32);
	const size_t elf_len = 52 + 2 * 32 + a32 + t32;
	memset(in, 0, sizeof(in));
	in[0] = (uint8_t)elf_len;
	in[1] = (uint8_t)(elf_len >> 8);
	in[2] = 0; /* bias */
	memcpy(elf, "\177ELF\1\1\1", 7);
	elf[16] = 2;                    /* ET_EXEC */
	elf[18] = 40;                   /* EM_ARM */
	elf[20] = 1;                    /* EV_CURRENT */
	fuzz_put_le32(elf + 24, FUZZ_IMAGE_A32_ADDR);
	fuzz_put_le32(elf + 28, 52);    /* e_phoff */
	elf[40] = 52;                   /* e_ehsize */
	elf[42] = 32;                   /* e_phentsize */
	elf[44] = 2;                    /* e_phnum */
	for (int i = 0; i < 2; i++) {
		uint8_t *ph = elf + 52 + 32 * i;
		uint32_t off = (uint32_t)(52 + 64 + (i ? a32 : 0)), len = (uint32_t)(i ? t32 : a32);
		fuzz_put_le32(ph, 1);   /* PT_LOAD */
		fuzz_put_le32(ph + 4, off);
		fuzz_put_le32(ph + 8, i ? FUZZ_IMAGE_T32_ADDR : FUZZ_IMAGE_A32_ADDR);
		fuzz_put_le32(ph + 12, i ? FUZZ_IMAGE_T32_ADDR : FUZZ_IMAGE_A32_ADDR);
		fuzz_put_le32(ph + 16, len);
		fuzz_put_le32(ph + 20, len);
		fuzz_put_le32(ph + 24, 5);
		fuzz_put_le32(ph + 28, 4);
		memcpy(elf + off, i ? fuzz_image_t32 : fuzz_image_a32, len);
	}
	size_t n = 3 + elf_len;
	/* op, addr (3 bytes), length (10 bits), input offset (16 bits) */
	static const uint8_t ops[][8] = {
		{ 1, 0x00, 0x80, 0x00, 0x40, 0x00, 0, 0 },     /* read the ELF's A32 code */
		{ 0, 0x10, 0x80, 0x00, 0x20, 0x00, 3, 0 },     /* a buffer over part of it */
		{ 1, 0x00, 0x80, 0x00, 0x80, 0x00, 0, 0 },
		{ 2, 0x00, 0x90, 0x00, 0x00, 0x02, 0, 0 },     /* callback over the T32 code */
		{ 1, 0xF0, 0x8F, 0x00, 0x00, 0x02, 0, 0 },
		{ 3, 0x00, 0x00, 0x01, 0x00, 0x01, 9, 0 },     /* raw file range at 0x10000 */
		{ 1, 0x80, 0xFF, 0x00, 0x00, 0x02, 0, 0 },
		{ 6, 0, 0, 0, 0, 0, 0, 0 },                    /* callback off */
		{ 0, 0x00, 0xF0, 0x8F, 0x00, 0x03, 0, 0 },     /* a buffer up to 2^32 */
		{ 1, 0xF0, 0xFF, 0x8F, 0x20, 0x00, 0, 0 },
	};
	memcpy(in + n, ops, sizeof(ops));
	put_seed("image", "elf-and-ops", NULL, 0, in, n + sizeof(ops));
	in[2] = 0xF8; /* bias -8 pages */
	put_seed("image", "elf-bias", NULL, 0, in, n + sizeof(ops));
	in[0] = 0;
	in[1] = 0;
	put_seed("image", "ops-only", NULL, 0, in, n + sizeof(ops));
}

/* Merge harness (fuzz_merge.c): the op byte for `kind` on source `src`
 * of nsrc (kind in bits 5:3, source op % nsrc, bits 7:6 free). */
static uint8_t merge_op(unsigned kind, unsigned src, unsigned nsrc, unsigned high)
{
	for (unsigned op = kind << 3 | high << 6;; op++)
		if (op % nsrc == src)
			return (uint8_t)op;
}

/* Issue 17's sources (one stops at timestamp 100, one has 10 records at
 * 200, one thousands at 300), sources in step, and random streams. */
static void merge_seeds(void)
{
	static uint8_t in[3 * 512 + 2];
	size_t n = 0;
#define OP(kind, src, a, b) do { in[n++] = merge_op(kind, src, nsrc, 0); in[n++] = (uint8_t)(a); \
		in[n++] = (uint8_t)(b); } while (0)
	unsigned nsrc = 3;
	in[n++] = (uint8_t)(nsrc - 1);
	in[n++] = 0x0f;
	OP(0, 0, 3, 0);         /* trace on */
	OP(3, 0, 100, 0);       /* timestamp 100, then nothing */
	OP(0, 1, 3, 0);
	OP(3, 1, 200, 0);
	OP(6, 1, 9, 0);         /* 10 records */
	OP(0, 2, 3, 0);
	OP(3, 2, 300 & 0xff, 300 >> 8);
	for (int k = 0; k < 8; k++)
		OP(6, 2, 255, 0); /* 2048 records */
	put_seed("merge", "issue17", NULL, 0, in, n);

	n = 0;
	nsrc = 4;
	in[n++] = (uint8_t)(nsrc - 1);
	in[n++] = 0x40;
	for (unsigned round = 0; round < 40; round++)
		for (unsigned i = 0; i < nsrc; i++) {
			OP(3, i, 1 + (round * 7 + i) % 13, 0);
			OP(6, i, (round + i) % 40, 0);
		}
	OP(7, 0, 0, 1);         /* end of capture, then a second one */
	OP(3, 0, 50, 0);
	OP(6, 1, 200, 0);
	OP(4, 0, 20, 0);        /* back */
	put_seed("merge", "in-step", NULL, 0, in, n);

	for (unsigned k = 0; k < 8; k++) {
		n = 0;
		nsrc = 2 + k % 7;
		in[n++] = (uint8_t)(nsrc - 1);
		in[n++] = (uint8_t)rnd();
		while (n + 3 <= sizeof(in)) {
			unsigned kind = rnd() % 8, src = rnd() % nsrc;
			if (kind == 7 && rnd() % 4)
				kind = 3;
			in[n++] = merge_op(kind, src, nsrc, rnd() % 4);
			in[n++] = (uint8_t)rnd();
			in[n++] = (uint8_t)rnd();
		}
		char name[32];
		snprintf(name, sizeof(name), "random-%u", k);
		put_seed("merge", name, NULL, 0, in, n);
	}
#undef OP
}

/* ---- qemu log reader ----------------------------------------------------- */

/* [0] filler on, [1..2] where the FILE reader's chunk boundary falls. */
static void qemu_log_seed(const char *name, uint8_t filler, uint16_t at, const char *text, size_t n)
{
	uint8_t h[3] = { filler, (uint8_t)at, (uint8_t)(at >> 8) };
	put_seed("qemu_log", name, h, sizeof(h), (const uint8_t *)text, n);
}

/* Up to 12 KiB of a real log, cut after a line. */
static void qemu_log_file_seed(const char *dir, const char *file, const char *name)
{
	char path[2048];
	snprintf(path, sizeof(path), "%s/%s", dir, file);
	FILE *f = fopen(path, "rb");
	if (!f)
		return;
	static char buf[12288];
	size_t n = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	while (n && buf[n - 1] != '\n')
		n--;
	if (n) {
		qemu_log_seed(name, 0, 0, buf, n);
		snprintf(path, sizeof(path), "%s-chunk", name);
		qemu_log_seed(path, 1, (uint16_t)(n / 2), buf, n);
	}
}

static void qemu_log_seeds(void)
{
	/* Every kind of line the reader knows (docs/qemu-log.md). */
	static const char kinds[] =
		"Trace 0: 0x7f3e594a4500 [00000480/000103b4/00000000/00000201] main\n"
		"Trace 0: 0x7f3e594a4600 [00800480/000103b8/00000000/00000201] main\n"
		"Stopped execution of TB chain before 0x7f3e594a4600 [000103b8]\r\n"
		"Trace 0: 0x7f3e594a4700 [0c800480/00010504/00000000/00000201] \n"
		"Trace 0: 0x7f3e594a4800 [18800480/0000000000010506/00000000/00000201]\r\n"
		"cpu_io_recompile: rewound execution of TB to 00010506\n"
		"Trace 0: 0x7f3e594a4900 [00000480/00010508/00000000/00000201]\n"
		"Linking TBs 0x7f3e594a4900 [00010508] index 0 -> 0x7f3e594a4a00 [0001050c]\n"
		"Trace 0: 0x7f3e594a4a00 [00000480/0001050c/00000000/00000003] f\n"
		"Trace 1: 0x7f3e594a4b00 [00000480/00010510/00000000/00000201] g\n"
		"Trace 0: 0x7f3e594a4c00 [00000480/00010512/00000000/00000201] g\n"
		"Trace 0: 0x7f3e594a4c00 [00000480/100010514/00000000/00000201] g\n"
		"Trace 0 0x7f3e594a4d00 [00000480/00010518/00000000/00000201] g\n"
		"random text\n"
		"Trace 0: 0x7f3e594a4e00 [00000480/0001051c/00000000/00000201] last";
	qemu_log_seed("line-kinds", 0, 0, kinds, sizeof(kinds) - 1);
	qemu_log_seed("line-kinds-chunk", 1, 200, kinds, sizeof(kinds) - 1);
	/* A walk of the flow harnesses' code image as qemu logs it: A32 then
	 * T32 with IT states, symbol names of every length. */
	static char walk[16384];
	size_t n = 0;
	for (unsigned i = 0; i < 160 && n + 200 < sizeof(walk); i++) {
		int thumb = (i / 40) & 1;
		uint32_t pc = thumb ? FUZZ_IMAGE_T32_ADDR + 2 * (i % 40) : FUZZ_IMAGE_A32_ADDR + 4 * (i % 40);
		uint32_t cs = thumb ? 0x00800480u | (uint32_t)(i % 7 == 3 ? 0x18 : 0) << 24 : 0x480u;
		n += (size_t)snprintf(walk + n, sizeof(walk) - n, "Trace 0: 0x7f%08x [%08x/%08x/00000000/00000201] %.*s\n",
				      0x1000 * i, cs, pc, (int)(i % 23), "func_with_a_long_name_x");
	}
	qemu_log_seed("image-walk", 0, 0, walk, n);
	qemu_log_seed("image-walk-chunk", 1, (uint16_t)(n / 3), walk, n);
	/* Lines about the reader's longest (QEMU_LOG_LINE_MAX, 1024 bytes):
	 * Trace lines of 1023, 1024 and 1025 bytes, one of 1024 + CR. */
	static char longl[8192];
	n = 0;
	for (int k = 0; k < 4; k++) {
		int want = k == 3 ? 1024 : 1023 + k;
		int head = snprintf(longl + n, sizeof(longl) - n, "Trace 0: 0x7f00%04x [00000480/%08x/00000000/00000201] ",
				    k, FUZZ_IMAGE_A32_ADDR + 4 * k);
		memset(longl + n + head, 's', (size_t)(want - head));
		n += (size_t)want;
		if (k == 3)
			longl[n++] = '\r';
		longl[n++] = '\n';
	}
	qemu_log_seed("line-max", 0, 0, longl, n);
	qemu_log_seed("line-max-chunk", 1, 1500, longl, n);
	/* exec_log: every line kind, good and bad. */
	static const char elog[] = "# comment\nI 10000 A32\nR 20000 4 deadbeef\nW 20004 1 ff\n\n"
				   "I 10005 T32\nI 10006 T32\r\nR c00000 8 123456789abcdef0\nW 2 2 10000\n"
				   "R 0x10 4 1\nI 10002 A32\nI 1 X32\nW\t20\t2\tffff\nR 1 3 0\nI 123456789 A32\n";
	put_seed("exec_log", "line-kinds", NULL, 0, (const uint8_t *)elog, sizeof(elog) - 1);
	/* Real runs when the test programs were built (make programs). */
	const char *progs = getenv("CSD_PROGRAMS");
	if (progs && *progs) {
		qemu_log_file_seed(progs, "interwork-thumb-O2.log", "prog-interwork");
		qemu_log_file_seed(progs, "bare_mix-arm-O0.log", "prog-bare-mix");
	}
	const char *progs_m = getenv("CSD_PROGRAMS_M");
	if (progs_m && *progs_m)
		qemu_log_file_seed(progs_m, "cm3demo.log", "prog-cm3demo");
}

/* ---- trace generator ---------------------------------------------------- */

/* fuzz_gen.c's header for configuration `cfg` (its byte 0), then
 * operations that run the image's code with calls, exceptions, ISA
 * changes, unmapped calls and jumps. */
static void gen_seeds(void)
{
	static const uint8_t cfgs[] = {
		0x00, 0x02, 0x06, 0x0E, 0x12, 0x40, /* ETMv3: plain, CA, CID, TS, DMB */
		0x01, 0x03, 0x21, 0x23, 0x31, 0x35, 0x41, 0x2F, /* PTM: CA, RS, TS, CID */
		0x80, 0x82, 0x8A,                   /* Cortex-M */
	};
	static const uint8_t ops[] = {
		0x7F, 0x7F, 0x90, 0x07, 0x7F, 0xA0, 0x7F, 0xE2, 0x7F, 0xB0, 0x3F, 0xB0, 0x7F,
		0x81, 0x20, 0x00, 0x7F, 0xC3, 0xD0, 0x7F, 0x93, 0x11, 0x7F, 0x7F, 0xA0, 0x84, 0x05, 0x00,
		0x7F, 0x8B, 0x30, 0x00, 0x7F, 0xE5, 0x7F, 0x86, 0xF0, 0xFF, 0x7F, 0x7F,
	};
	for (size_t i = 0; i < sizeof(cfgs); i++) {
		uint8_t in[16 + 16 + sizeof(ops)];
		memset(in, 0, sizeof(in));
		in[0] = cfgs[i];
		in[1] = (cfgs[i] & 0x80) ? 4 : (cfgs[i] & 1) ? 1 : (uint8_t)(i % 2 ? 5 : 0xFF);
		in[2] = (uint8_t)(i % 3 == 0 ? 0 : 40 + 20 * i);      /* sync period */
		in[4] = (uint8_t)(i % 4 == 0 ? 0 : 3 + i);           /* timestamp interval */
		fuzz_put_le32(in + 5, 0x4A5B6C7Du);
		in[9] = (uint8_t)((cfgs[i] & 0x80) || (i & 1) ? 1 : 0);
		in[10] = (uint8_t)(i % 5);                           /* split mode */
		in[11] = (uint8_t)(7 * i);
		in[12] = (uint8_t)(13 * i + 1);
		in[13] = (uint8_t)(4 | (i % 3 == 1 ? 0x40 : 0) | (i % 4 == 2 ? 0x80 : 0));
		/* extra code: BL, BX LR, SVC, a DMB (A32) */
		static const uint32_t code[4] = { 0xEB000000u, 0xE12FFF1Eu, 0xEF000000u, 0xF57FF05Fu };
		for (int k = 0; k < 4; k++)
			fuzz_put_le32(in + 16 + 4 * k, code[k]);
		memcpy(in + 32, ops, sizeof(ops));
		char name[64];
		snprintf(name, sizeof(name), "cfg-%02x-%zu", cfgs[i], i);
		put_seed("gen", name, NULL, 0, in, sizeof(in));
	}
}

/* ---- ETMv3 data trace -------------------------------------------------- */

#define DATA_CODE_ADDR 0xA000u   /* fuzz_flow.h's FUZZ_CODE_ADDR */
#define DATA_T32_OFF 0x40u

/* One instruction of the data code and the accesses it makes. */
struct data_insn {
	uint32_t off;
	uint8_t isa, n, dir, size;   /* n accesses of `size` bytes (SWP: load then store) */
	uint8_t swap, cond, exclusive;
};

struct gen_buf {
	uint8_t b[16384];
	size_t n;
};

static int gen_buf_sink(void *ctx, const uint8_t *bytes, size_t n)
{
	struct gen_buf *g = ctx;
	if (g->n + n > sizeof(g->b))
		return CSD_ENOSPC;
	memcpy(g->b + g->n, bytes, n);
	g->n += n;
	return 0;
}

static void data_trace_seeds(void)
{
	/* A32 at DATA_CODE_ADDR: str, ldr, ldrd, stmia!, ldrb, strh, swp,
	 * strex, vldr d1, ldmia!, ldrne, vstr d1, vld2.16 {d0, d1}, ldc p5
	 * (two words), b back. T32 at
	 * DATA_T32_OFF: str, ldr, ldrd, stmia!, ldrb, strh, strex, vldr d1,
	 * ldmia!, b back. */
	static const uint32_t a32[] = { 0xE5801000u, 0xE5902004u, 0xE1C020D8u, 0xE8A0000Cu, 0xE5D03000u,
					0xE1C030B2u, 0xE1003091u, 0xE1803F91u, 0xED901B00u, 0xE8B0000Cu,
					0x15902000u, 0xED801B02u, 0xF420084Fu, 0xED900500u, 0xEAFFFFF0u };
	static const uint16_t t32[] = { 0x6001, 0x6842, 0xE9D0, 0x2302, 0xC00C, 0x7803, 0x8043,
					0xE840, 0x1300, 0xED90, 0x1B00, 0xC80C, 0 };
	static const struct data_insn prog[] = {
		{ 0x00, CSD_ISA_ARM, 1, CSDI_MEM_STORE, 4, 0, 0, 0 },
		{ 0x04, CSD_ISA_ARM, 1, CSDI_MEM_LOAD, 4, 0, 0, 0 },
		{ 0x08, CSD_ISA_ARM, 2, CSDI_MEM_LOAD, 4, 0, 0, 0 },
		{ 0x0C, CSD_ISA_ARM, 2, CSDI_MEM_STORE, 4, 0, 0, 0 },
		{ 0x10, CSD_ISA_ARM, 1, CSDI_MEM_LOAD, 1, 0, 0, 0 },
		{ 0x14, CSD_ISA_ARM, 1, CSDI_MEM_STORE, 2, 0, 0, 0 },
		{ 0x18, CSD_ISA_ARM, 2, CSDI_MEM_LOAD, 4, 1, 0, 0 },
		{ 0x1C, CSD_ISA_ARM, 1, CSDI_MEM_STORE, 4, 0, 0, 1 },
		{ 0x20, CSD_ISA_ARM, 1, CSDI_MEM_LOAD, 8, 0, 0, 0 },
		{ 0x24, CSD_ISA_ARM, 2, CSDI_MEM_LOAD, 4, 0, 0, 0 },
		{ 0x28, CSD_ISA_ARM, 1, CSDI_MEM_LOAD, 4, 0, 1, 0 },
		{ 0x2C, CSD_ISA_ARM, 1, CSDI_MEM_STORE, 8, 0, 0, 0 },
		{ 0x30, CSD_ISA_ARM, 8, CSDI_MEM_LOAD, 2, 0, 0, 0 },
		{ 0x34, CSD_ISA_ARM, 2, CSDI_MEM_LOAD, 4, 0, 0, 0 },
		{ 0x38, CSD_ISA_ARM, 0, 0, 0, 0, 0, 0 },
		{ 0x40, CSD_ISA_THUMB, 1, CSDI_MEM_STORE, 4, 0, 0, 0 },
		{ 0x42, CSD_ISA_THUMB, 1, CSDI_MEM_LOAD, 4, 0, 0, 0 },
		{ 0x44, CSD_ISA_THUMB, 2, CSDI_MEM_LOAD, 4, 0, 0, 0 },
		{ 0x48, CSD_ISA_THUMB, 2, CSDI_MEM_STORE, 4, 0, 0, 0 },
		{ 0x4A, CSD_ISA_THUMB, 1, CSDI_MEM_LOAD, 1, 0, 0, 0 },
		{ 0x4C, CSD_ISA_THUMB, 1, CSDI_MEM_STORE, 2, 0, 0, 0 },
		{ 0x4E, CSD_ISA_THUMB, 1, CSDI_MEM_STORE, 4, 0, 0, 1 },
		{ 0x52, CSD_ISA_THUMB, 1, CSDI_MEM_LOAD, 8, 0, 0, 0 },
		{ 0x56, CSD_ISA_THUMB, 2, CSDI_MEM_LOAD, 4, 0, 0, 0 },
		{ 0x58, CSD_ISA_THUMB, 0, 0, 0, 0, 0, 0 },
	};
	uint8_t code[4 * 32];
	memset(code, 0, sizeof(code));
	for (size_t i = 0; i < sizeof(a32) / sizeof(a32[0]); i++)
		fuzz_put_le32(code + 4 * i, a32[i]);
	for (size_t i = 0; i < sizeof(t32) / sizeof(t32[0]); i++) {
		uint16_t h = t32[i];
		if (h == 0) /* b.n back to the T32 start */
			h = (uint16_t)(0xE000u | (((DATA_T32_OFF - (DATA_T32_OFF + 2 * i + 4)) >> 1) & 0x7FFu));
		code[DATA_T32_OFF + 2 * i] = (uint8_t)h;
		code[DATA_T32_OFF + 2 * i + 1] = (uint8_t)(h >> 8);
	}
	csd_image *img = csd_image_new();
	if (!img || csd_image_add_buffer(img, DATA_CODE_ADDR, code, sizeof(code), 0) != 0)
		die("image");
	static const struct { uint32_t etmcr; int ooo; const char *name; } cfgs[] = {
		{ 0xC, 0, "both" }, { 0x8, 0, "address" }, { 0x4, 0, "value" },
		{ 0xC, 1, "both-ooo" }, { 0x4, 1, "value-ooo" },
		{ 0xC | 1u << 12, 0, "both-ca" }, { 0xC | 1u << 28 | 2u << 14, 1, "both-ts-cid-ooo" },
		{ 0xC | 1u << 20, 0, "only-both" }, { 0x8 | 1u << 20, 0, "only-address" },
		{ 0x4 | 1u << 20, 0, "only-value" }, { 0xC | 1u << 20, 1, "only-both-ooo" },
		{ 0x4 | 1u << 20 | 1u << 14, 1, "only-value-ooo-cid" },
	};
	static struct gen_buf out;
	for (size_t c = 0; c < sizeof(cfgs) / sizeof(cfgs[0]); c++) {
		for (int thumb = 0; thumb <= 1; thumb++) {
			struct csdi_gen_config gc;
			memset(&gc, 0, sizeof(gc));
			gc.trace.size = sizeof(gc.trace);
			gc.trace.protocol = CSD_PROTO_ETM3;
			gc.trace.etmcr = cfgs[c].etmcr;
			gc.trace.etmidr = 0x410CF250u;
			gc.trace.etmccer = 0x344008F2u;
			gc.sync_period = 96 + 32 * (uint32_t)c;
			gc.timestamp_every = 7;
			gc.context_id = 0x31;
			gc.data_out_of_order = cfgs[c].ooo;
			out.n = 0;
			struct csdi_gen *g = csdi_gen_new(&gc, img, gen_buf_sink, &out);
			if (!g)
				die("generator");
			uint32_t base = 0x20000u + 0x100u * (uint32_t)c;
			for (unsigned round = 0; round < 6; round++) {
				for (size_t i = 0; i < sizeof(prog) / sizeof(prog[0]); i++) {
					const struct data_insn *d = &prog[i];
					if ((d->isa == CSD_ISA_THUMB) != thumb)
						continue;
					csdi_gen_insn(g, DATA_CODE_ADDR + d->off, d->isa);
					/* A condition failing, a store-exclusive failing,
					 * every other round. */
					if ((d->cond || d->exclusive) && (round & 1))
						continue;
					uint32_t a = base + 8 * (uint32_t)i + 0x40u * round;
					for (unsigned k = 0; k < d->n; k++) {
						uint64_t v = rnd() % 3 == 0 ? rnd() & 0xFF : rnd();
						if (d->size == 8)
							v = v << 32 | rnd();
						else if (d->size < 4)
							v &= (1u << (8 * d->size)) - 1;
						unsigned dir = d->swap ? (k ? CSDI_MEM_STORE : CSDI_MEM_LOAD) : d->dir;
						csdi_gen_data(g, dir, d->swap ? a : a + d->size * k, d->size, v);
					}
				}
			}
			if (csdi_gen_finish(g) != 0)
				die("generator finish");
			csdi_gen_free(g);
			struct fuzz_hdr h;
			memset(&h, 0, sizeof(h));
			h.etmcr = gc.trace.etmcr;
			h.etmccer = gc.trace.etmccer;
			h.etmidr = gc.trace.etmidr;
			h.misc = FUZZ_MISC_PROFILE;
			h.split_mode = (uint8_t)(c % 5);
			h.split_seed = (uint8_t)(c * 11 + (unsigned)thumb);
			h.code_words = (uint8_t)(sizeof(code) / 4);
			uint8_t head[FUZZ_HDR_SIZE + sizeof(code)];
			fuzz_hdr_write(head, &h);
			memcpy(head + FUZZ_HDR_SIZE, code, sizeof(code));
			char name[64];
			snprintf(name, sizeof(name), "data-%s-%s", cfgs[c].name, thumb ? "t32" : "a32");
			put_seed("etm3_flow", name, head, sizeof(head), out.b, out.n);
		}
	}
	csd_image_free(img);
}

/* ---- printers ----------------------------------------------------------- */

/* Packets and records of the sample capture's sources, as the tool gets
 * them, in fuzz_print.h's layout; a few of each kind per seed. */
static void print_seeds(void)
{
	const char *dir = getenv("CSD_FUZZ_SAMPLE");
	if (!dir || !*dir)
		dir = "examples/sample";
	char err[512];
	csd_snapshot *snap;
	if (csd_snapshot_open(dir, &snap, err, sizeof(err)) != 0) {
		fprintf(stderr, "seedgen: %s: %s (no printer seeds from it)\n", dir, err);
		return;
	}
	csd_image *img = csd_image_new();
	if (!img || csd_snapshot_load_image(snap, NULL, img) < 0)
		die("sample image");
	static uint8_t out_buf[1 << 16];
	uint8_t *stream = malloc(MAX_STREAM);
	if (!stream)
		die("out of memory");
	for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++) {
		const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, b);
		size_t n;
		uint8_t *cap = read_file(buf->path, &n);
		if (!cap)
			continue;
		for (size_t si = 0; si < csd_snapshot_num_sources(snap); si++) {
			const struct csd_snapshot_source *src = csd_snapshot_source(snap, si);
			const struct csd_trace_config *cfg = &src->config;
			if (src->buffer != (int)b || cfg->protocol == CSD_PROTO_UNKNOWN)
				continue;
			size_t len = extract(cap, n, buf->frame_format, cfg->trace_id, stream);
			int core_m = cfg->core_profile == CSD_CORE_M;
			/* Packets: up to 4 of each type, then a bad stream's. */
			struct fuzz_print_out o = { out_buf, 0, sizeof(out_buf) };
			unsigned per_type[CSD_PKT_TYPE_COUNT] = { 0 };
			for (int pass = 0; pass < 2; pass++) {
				csd_etm3_pkt_decoder *e = cfg->protocol == CSD_PROTO_ETM3 ? csd_etm3_pkt_new(cfg) : NULL;
				csd_ptm_pkt_decoder *pd = cfg->protocol == CSD_PROTO_PTM ? csd_ptm_pkt_new(cfg) : NULL;
				uint8_t junk[64];
				for (size_t i = 0; i < sizeof(junk); i++)
					junk[i] = (uint8_t)(rnd() | 0x40);
				struct csd_bytes in = { .data = pass ? junk : stream, .size = pass ? sizeof(junk) : len };
				if ((!e && !pd) || (e ? csd_etm3_pkt_feed(e, &in) : csd_ptm_pkt_feed(pd, &in)) != 0)
					die("packet decoder");
				if (e)
					csd_etm3_pkt_finish(e);
				else
					csd_ptm_pkt_finish(pd);
				struct csd_packet p;
				while ((e ? csd_etm3_pkt_next(e, &p) : csd_ptm_pkt_next(pd, &p)) == 0)
					if (p.type < CSD_PKT_TYPE_COUNT && per_type[p.type]++ < 4)
						fuzz_print_put_packet(&o, cfg->trace_id, core_m, &p);
				csd_etm3_pkt_free(e);
				csd_ptm_pkt_free(pd);
			}
			char name[128];
			snprintf(name, sizeof(name), "sample-%s-packets", src->name);
			put_seed("print", name, NULL, 0, out_buf, o.n < o.cap ? o.n : o.cap);
			/* Records, ranges and instructions. */
			for (int insn = 0; insn < 2; insn++) {
				struct csd_flow_config fc = { .size = sizeof(fc), .trace = cfg, .image = img,
							      .flags = insn ? CSD_FLOW_INSN : 0 };
				csd_flow_decoder *fd = csd_flow_new(&fc);
				struct csd_bytes in = { .data = stream, .size = len };
				if (!fd || csd_flow_feed(fd, &in) != 0 || csd_flow_finish(fd) != 0)
					die("flow decoder");
				struct fuzz_print_out ro = { out_buf, 0, sizeof(out_buf) };
				unsigned per_rec[CSD_REC_TYPE_COUNT] = { 0 };
				struct csd_record r;
				while (csd_flow_next(fd, &r) == 0)
					if (r.type < CSD_REC_TYPE_COUNT && per_rec[r.type]++ < 6)
						fuzz_print_put_record(&ro, cfg->trace_id, core_m, &r);
				csd_flow_free(fd);
				snprintf(name, sizeof(name), "sample-%s-%s", src->name, insn ? "insns" : "ranges");
				put_seed("print", name, NULL, 0, out_buf, ro.n < ro.cap ? ro.n : ro.cap);
			}
		}
		free(cap);
	}
	free(stream);
	csd_image_free(img);
	csd_snapshot_free(snap);
	/* Every record and packet type with an error string from the input
	 * and all flags, Cortex-M exception names. */
	struct fuzz_print_out o = { out_buf, 0, sizeof(out_buf) };
	for (uint32_t t = 0; t <= CSD_REC_TYPE_COUNT; t++) {
		struct csd_record r;
		memset(&r, 0, sizeof(r));
		r.type = t;
		r.flags = 0x3FF;
		r.offset = 1000 + t;
		r.addr = 0x10000 + 4 * t;
		r.end = r.addr + 8;
		r.last = r.addr + 4;
		r.count = 2;
		r.size = 4;
		r.opcode = 0xE1A00000u;
		r.isa = CSD_ISA_ARM;
		r.exception = (uint16_t)(t * 3);
		size_t at = o.n;
		fuzz_print_put_record(&o, 0x10, t & 1, &r);
		if (at < o.cap)
			o.p[at] |= FUZZ_PRINT_ERR_INLINE << FUZZ_PRINT_ERR_SHIFT | (t & 2 ? FUZZ_PRINT_NEAR_SYMBOL : 0);
		fuzz_print_put(&o, 8, 1);
		for (unsigned i = 0; i < 8; i++)
			fuzz_print_put(&o, 'a' - 0x20 + i, 1);
	}
	for (uint32_t t = 0; t <= CSD_PKT_TYPE_COUNT; t++) {
		struct csd_packet p;
		memset(&p, 0, sizeof(p));
		p.type = t;
		p.flags = 0xFFFF;
		p.offset = 2000 + t;
		p.size = 30;
		p.atoms.num = 5;
		p.atoms.en = 0x15;
		p.atoms.w = 2;
		p.atoms.format = 1;
		p.data_size = 4;
		p.tag = 2;
		fuzz_print_put_packet(&o, 0x13, 0, &p);
	}
	put_seed("print", "every-type", NULL, 0, out_buf, o.n < o.cap ? o.n : o.cap);
}

/* Symbols harness: ELF files as they are, and with their section headers
 * repeated (the symbol table named 40 more times). */
static void symbol_seed(const char *name, const uint8_t *elf, size_t n)
{
	put_seed("symbols", name, NULL, 0, elf, n);
	if (n < 52)
		return;
	uint32_t shoff = fuzz_le32(elf + 32);
	unsigned shnum = (unsigned)(elf[48] | elf[49] << 8), sym = shnum;
	if (elf[46] != 40 || (uint64_t)shoff + 40u * shnum > n)
		return;
	for (unsigned i = 0; i < shnum; i++)
		if (fuzz_le32(elf + shoff + 40 * i + 4) == 2 /* SHT_SYMTAB */)
			sym = i;
	if (sym == shnum)
		return;
	size_t at = (n + 3) & ~(size_t)3, m = at + 40u * (shnum + 40);
	uint8_t *b = calloc(1, m);
	if (!b)
		die("out of memory");
	memcpy(b, elf, n);
	memcpy(b + at, elf + shoff, 40u * shnum);
	for (unsigned i = 0; i < 40; i++)
		memcpy(b + at + 40u * (shnum + i), elf + shoff + 40 * sym, 40);
	fuzz_put_le32(b + 32, (uint32_t)at);
	b[48] = (uint8_t)(shnum + 40);
	b[49] = (uint8_t)((shnum + 40) >> 8);
	char more[128];
	snprintf(more, sizeof(more), "%s-repeated", name);
	put_seed("symbols", more, NULL, 0, b, m);
	free(b);
}

/* A made ELF: a symbol table with functions (ARM and Thumb), mapping
 * symbols and data, its string table, no code. */
static void made_symbols(void)
{
	static const char strs[] = "\0main\0helper\0$a\0$t\0$d\0table\0.symtab\0.strtab\0.shstrtab";
	static const struct {
		uint32_t name, value, size;
		uint8_t info;
	} syms[] = {
		{ 1, 0x8000, 0x40, 0x12 }, { 6, 0x9001, 0x20, 0x12 }, { 13, 0x8000, 0, 0 },
		{ 16, 0x9000, 0, 0 },     { 19, 0x8040, 0, 0 },      { 22, 0x8040, 0x10, 0x11 },
	};
	uint8_t b[1024];
	size_t nsym = sizeof(syms) / sizeof(syms[0]) + 1, off_sym = 52, off_str = off_sym + 16 * nsym;
	size_t off_sh = (off_str + sizeof(strs) + 3) & ~(size_t)3;
	memset(b, 0, sizeof(b));
	memcpy(b, "\177ELF\1\1\1", 7);
	b[16] = 2;  /* ET_EXEC */
	b[18] = 40; /* EM_ARM */
	b[20] = 1;
	fuzz_put_le32(b + 32, (uint32_t)off_sh);
	b[40] = 52;
	b[46] = 40; /* e_shentsize */
	b[48] = 4;  /* e_shnum */
	b[50] = 3;  /* e_shstrndx */
	for (size_t i = 1; i < nsym; i++) {
		uint8_t *s = b + off_sym + 16 * i;
		fuzz_put_le32(s, syms[i - 1].name);
		fuzz_put_le32(s + 4, syms[i - 1].value);
		fuzz_put_le32(s + 8, syms[i - 1].size);
		s[12] = syms[i - 1].info;
		s[14] = 1; /* st_shndx */
	}
	memcpy(b + off_str, strs, sizeof(strs));
	uint8_t *sh = b + off_sh;
	fuzz_put_le32(sh + 40 + 0, 28);
	fuzz_put_le32(sh + 40 + 4, 2); /* SHT_SYMTAB */
	fuzz_put_le32(sh + 40 + 16, (uint32_t)off_sym);
	fuzz_put_le32(sh + 40 + 20, (uint32_t)(16 * nsym));
	fuzz_put_le32(sh + 40 + 24, 2); /* sh_link */
	fuzz_put_le32(sh + 40 + 36, 16);
	for (int i = 2; i < 4; i++) {
		fuzz_put_le32(sh + 40 * i + 0, i == 2 ? 36 : 44);
		fuzz_put_le32(sh + 40 * i + 4, 3); /* SHT_STRTAB */
		fuzz_put_le32(sh + 40 * i + 16, (uint32_t)off_str);
		fuzz_put_le32(sh + 40 * i + 20, sizeof(strs));
	}
	symbol_seed("made", b, off_sh + 4 * 40);
}

static void symbols_seeds(void)
{
	size_t n;
	uint8_t *elf = read_file("examples/sample/demo.elf", &n);
	if (elf)
		symbol_seed("demo", elf, n);
	else
		fprintf(stderr, "seedgen: examples/sample/demo.elf not found (run from the top directory)\n");
	free(elf);
	made_symbols();
}

/* Accum harness, records from the input: option byte (bit 0 set), image
 * seed, then 8-byte records of every kind over the regions. */
static void accum_record_seeds(void)
{
	static uint8_t b[1 + 1 + 8 * 512];
	for (unsigned k = 0; k < 16; k++) {
		size_t n = 2 + 8 * (16u + rnd() % 496u);
		b[0] = (uint8_t)(1 | (k % 8) << 1 | (k & 8 ? 0x10 : 0) | (k == 13 ? 0x20 : 0));
		b[1] = (uint8_t)rnd();
		for (size_t i = 2; i < n; i++)
			b[i] = (uint8_t)rnd();
		for (size_t i = 2; i + 8 <= n; i += 8) {
			b[i] = (uint8_t)((b[i] & 0xF8) | (rnd() % 4 ? rnd() % 4 : 4 + rnd() % 4));
			b[i + 3] = (uint8_t)(rnd() % 8 ? rnd() % 40 : 0x80 | rnd() % 64);
		}
		char name[32];
		snprintf(name, sizeof(name), "records-%02u", k);
		put_seed("accum", name, NULL, 0, b, n);
	}
}

/* perf.data files with the sample's trace (its first 2 KiB, formatted, or
 * each source's bytes raw): cs_etm header versions 0-2, ETMv4 and ETE
 * blocks, per-thread and per-CPU buffers, AUX records before and after
 * their data, truncated sessions, a buffer in two, snapshot mode, sideband
 * of every kind the reader takes, features. */
static void perf_data_seeds(void)
{
	const char *dir = getenv("CSD_FUZZ_SAMPLE");
	if (!dir || !*dir)
		dir = "examples/sample";
	char path[1024], err[256];
	csd_snapshot *snap = NULL;
	if (csd_snapshot_open(dir, &snap, err, sizeof(err)) != 0) {
		fprintf(stderr, "seedgen: %s: %s (no perf_data seeds)\n", dir, err);
		return;
	}
	struct csd_trace_config cfg[2];
	memset(cfg, 0, sizeof(cfg));
	for (size_t i = 0; i < csd_snapshot_num_sources(snap) && i < 2; i++)
		cfg[i] = csd_snapshot_source(snap, i)->config;
	csd_snapshot_free(snap);
	snprintf(path, sizeof(path), "%s/trace.bin", dir);
	size_t n;
	uint8_t *trace = read_file(path, &n);
	if (!trace)
		die(path);
	if (n > 2048)
		n = 2048;
	/* Each source's bytes alone. */
	uint8_t raw[2][2048];
	size_t raw_n[2] = { 0, 0 };
	struct csd_frame_config fc = { .size = sizeof(fc), .format = CSD_FRAME_ALIGNED };
	csd_frame_decoder *fd = csd_frame_new(&fc);
	struct csd_frame_out fo;
	csd_frame_feed(fd, trace, n, 0);
	csd_frame_finish(fd);
	while (csd_frame_next(fd, &fo) == 0)
		for (int c = 0; c < 2; c++)
			if (fo.event == CSD_FRAME_DATA && fo.bytes.id == cfg[c].trace_id && raw_n[c] + fo.bytes.size <= 2048) {
				memcpy(raw[c] + raw_n[c], fo.bytes.data, fo.bytes.size);
				raw_n[c] += fo.bytes.size;
			}
	csd_frame_free(fd);
	static const uint8_t id[20] = { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 };
	static const struct pdb_build_id bid = { -1, 2, { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20 },
						 20, "/demo.elf" };
	for (int k = 0; k < 8; k++) {
		struct pdb b;
		uint64_t st = 1 | PDB_SAMPLE_TID | PDB_SAMPLE_TIME | PDB_SAMPLE_CPU | 256 | PDB_SAMPLE_IDENTIFIER;
		if (k == 7)
			st = PDB_SAMPLE_TID | PDB_SAMPLE_ID | PDB_SAMPLE_CPU;
		pdb_init(&b, st, k != 6, k == 4 ? 0x1000 : 0);
		int version = k == 1 ? 0 : k == 2 ? 2 : 1;
		struct pdb_cpu cpus[4] = {
			{ PDB_MAGIC_ETM3, 0, cfg[0].etmcr, cfg[0].trace_id, cfg[0].etmccer, cfg[0].etmidr, 0 },
			{ PDB_MAGIC_ETM3, 1, cfg[1].etmcr, cfg[1].trace_id, cfg[1].etmccer, cfg[1].etmidr, 0 },
			{ PDB_MAGIC_ETM4, 2, 0x1, 0x30, 0, 0, 0 },
			{ PDB_MAGIC_ETE, 3, 0x1, 0x32, 0, 0, 0 },
		};
		if (version == 2) {
			cpus[0].traceidr = 0x20 | UINT64_C(1) << 31;
			cpus[1].traceidr = 0x22 | UINT64_C(1) << 31;
		}
		pdb_auxtrace_info(&b, version, k == 6, cpus, k == 1 ? 3 : k == 2 ? 4 : 2);
		struct pdb_sid d = { 42, 42, -1, 10, PDB_ID_DUMMY }, t = { 42, 42, -1, 20, 0 };
		pdb_comm(&b, 42, 42, "demo", 1, &d);
		pdb_mmap2(&b, 42, 42, 0x10000, 0x1000, 0, "/demo.elf", k % 2 ? id : NULL, 20, &d);
		if (k == 7) {
			pdb_mmap(&b, 42, 42, 0x20000, 0x1000, 0x1000, "/lib/libc.so", 0, &d);
			pdb_mmap(&b, -1, 0, 0xc0008000, 0x400000, 0xc0008000, "[kernel.kallsyms]_text", 1, &d);
			uint8_t fork_body[24] = { 43, 0, 0, 0, 42, 0, 0, 0, 43, 0, 0, 0, 42, 0, 0, 0, 30 };
			size_t at = pdb_begin(&b, 7, 0);
			pdb_put(&b, fork_body, sizeof(fork_body));
			pdb_trailer(&b, &d);
			pdb_end(&b, at);
			at = pdb_begin(&b, 4, 0);
			pdb_put(&b, fork_body, sizeof(fork_body));
			pdb_trailer(&b, &d);
			pdb_end(&b, at);
			uint8_t lost[16] = { 1, 0, 0, 0, 0, 0, 0, 0, 5 };
			at = pdb_begin(&b, 2, 0);
			pdb_put(&b, lost, sizeof(lost));
			pdb_trailer(&b, &d);
			pdb_end(&b, at);
		}
		if (version == 2) {
			struct pdb_sid h0 = { 42, 42, 0, 11, 0 }, h1 = { 42, 42, 1, 11, 0 };
			pdb_hw_id(&b, cfg[0].trace_id | UINT64_C(1) << 56, &h0);
			pdb_hw_id(&b, cfg[1].trace_id | UINT64_C(1) << 56, &h1);
		}
		if (k == 3) {
			for (int c = 0; c < 2; c++) {
				struct pdb_sid s = { 42, 42, c, 20, 0 };
				pdb_itrace_start(&b, 42, 42, &s);
				pdb_switch(&b, 1, 1, 7, 7, &s);
				s.pid = s.tid = 7;
				pdb_switch(&b, 1, 0, 42, 42, &s);
				pdb_switch(&b, 0, 1, 0, 0, &s);
			}
			for (int c = 0; c < 2; c++) {
				struct pdb_sid s = { 42, 42, c, 40, 0 };
				pdb_aux(&b, 0, raw_n[c], 0x100, &s);
				pdb_auxtrace(&b, 0, (uint32_t)c, 42, c, raw[c], raw_n[c]);
			}
		} else {
			pdb_itrace_start(&b, 42, 42, &t);
			if (k == 4) {
				size_t a = (n / 2) & ~(size_t)15;
				pdb_aux(&b, 0, a, 0, &t);
				pdb_auxtrace(&b, 0, 0, 42, -1, trace, n);
				pdb_aux(&b, a, n - a, 1 | 4 | 8, &t);
			} else if (k == 5) {
				pdb_aux(&b, 0, n, 0, &t);
				pdb_auxtrace(&b, 0, 0, 42, -1, trace, 1000);
				pdb_user(&b, 68, NULL, 0);
				pdb_auxtrace(&b, 1000, 0, 42, -1, trace + 1000, n - 1000);
			} else if (k == 6) {
				pdb_auxtrace(&b, 2 * n, 0, 42, -1, trace, n);
				pdb_aux(&b, 3 * n, n, 2, &t);
			} else {
				pdb_aux(&b, 0, n, 0, &t);
				pdb_auxtrace(&b, 0, 0, 42, -1, trace, n);
			}
		}
		pdb_user(&b, 68, NULL, 0);
		if (k != 5) {
			b.hostname = "board";
			b.arch = "armv7l";
			b.cpudesc = "ARMv7 Processor rev 5 (v7l)";
			b.nr_cpus = 4;
			b.cmdline[0] = "/usr/bin/perf";
			b.cmdline[1] = "record";
			b.bids = &bid;
			b.nbids = 1;
			b.index = 1;
		}
		pdb_finish(&b);
		char name[32];
		snprintf(name, sizeof(name), "sample-%d", k);
		put_seed("perf_data", name, NULL, 0, b.buf, b.n);
		pdb_free(&b);
	}
	/* A pipe-mode header and the other magics. */
	uint8_t h[16] = { 'P', 'E', 'R', 'F', 'I', 'L', 'E', '2', 16 };
	put_seed("perf_data", "pipe", NULL, 0, h, sizeof(h));
	free(trace);
}

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seedgen OUTDIR   (captures from $CSD_SHARED/traces)\n");
		return 2;
	}
	out_root = argv[1];
	make_dir(out_root);
	const char *names[] = { "frame", "etm3_pkt", "ptm_pkt", "etm3_flow", "ptm_flow", "snapshot", "image",
				"merge", "qemu_log", "gen", "print", "symbols", "accum", "perf_data" };
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		char path[1024];
		snprintf(path, sizeof(path), "%s/%s", out_root, names[i]);
		make_dir(path);
	}
	const char *shared = getenv("CSD_SHARED");
	if (shared && *shared) {
		char dir[1024];
		snprintf(dir, sizeof(dir), "%s/traces/TC2", shared);
		capture_seeds(dir, "tc2");
		snprintf(dir, sizeof(dir), "%s/traces/trace_cov_a15", shared);
		capture_seeds(dir, "a15");
	} else {
		fprintf(stderr, "seedgen: CSD_SHARED not set: encoder seeds only\n");
	}
	for (unsigned k = 0; k < 24; k++) {
		etm3_stream(k);
		ptm_stream(k);
	}
	for (unsigned k = 0; k < 8; k++) {
		frame_encoded(k, CSD_FRAME_PORT);
		frame_encoded(k, CSD_FRAME_ALIGNED);
	}
	minimal_snapshot();
	image_seeds();
	merge_seeds();
	qemu_log_seeds();
	gen_seeds();
	data_trace_seeds();
	print_seeds();
	symbols_seeds();
	accum_record_seeds();
	perf_data_seeds();
	printf("seedgen: %u seeds in %s\n", seeds_written, out_root);
	return 0;
}
