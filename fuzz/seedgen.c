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
 *   - a small ELF file of that code image for the image harness.
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

int main(int argc, char **argv)
{
	if (argc != 2) {
		fprintf(stderr, "usage: seedgen OUTDIR   (captures from $CSD_SHARED/traces)\n");
		return 2;
	}
	out_root = argv[1];
	make_dir(out_root);
	const char *names[] = { "frame", "etm3_pkt", "ptm_pkt", "etm3_flow", "ptm_flow", "snapshot", "image" };
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
	printf("seedgen: %u seeds in %s\n", seeds_written, out_root);
	return 0;
}
