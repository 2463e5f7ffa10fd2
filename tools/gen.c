/*
 * gen.c - `csdec gen`: turn a recorded program run (qemu-arm's execution
 * log plus the program's ELF file) into a CoreSight snapshot directory that
 * holds the trace an ETMv3 or PTM would have produced, the registers it was
 * configured with, and the program's memory - so that `csdec decode DIR`
 * (and other decoders, e.g. OpenCSD's trc_pkt_lister) read it unaided; or
 * into the perf.data file `perf record -e cs_etm//u --per-thread` would
 * have written on an ARMv7 board (src/perf_enc.c), which perf reads.
 *
 *   csdec gen --qemu-log LOG --elf ELF --protocol ptm|etm3 [--protocol ...]
 *             [--cycle-accurate] [--timestamps] [--return-stack]
 *             [--context-id-bytes N] [--sync-period BYTES]
 *             [--formatted[=port] [--trace-id ID]] -o DIR
 *   csdec gen --exec-log LOG --elf ELF --protocol etm3
 *             [--data-trace both|address|value] [--out-of-order] [--data-only] ... -o DIR
 *   csdec gen ... --perf-data FILE [--perf-data-version 1|2]
 *             [--perf-aux-size BYTES]
 *
 * Several --protocol options trace the same run with several sources (as
 * if several cores ran it), interleaved in one formatted buffer.
 */
/* (_XOPEN_SOURCE: realpath.) */
#define _XOPEN_SOURCE 700
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "csdec.h"
#include "frame_enc.h"
#include "gen.h"
#include "gen_cmd.h"
#include "perf_enc.h"
#include "exec_log.h"
#include "qemu_log.h"

#define MAX_SOURCES 8
/* The traced process of --perf-data. perf takes a context ID in the trace
 * for the thread ID (Linux can put the PID in CONTEXTIDR), so the trace's
 * context ID is this too, and it fits the 1-byte context ID. */
#define PERF_PID 200

struct gen_source {
	struct csdi_gen *gen;
	struct csdi_gen_config cfg;
	FILE *raw;                 /* unformatted: this source's own file */
	struct gen_ctx *ctx;
	char name[32];
	char file[64];
};

struct gen_ctx {
	struct gen_source src[MAX_SOURCES];
	int nsrc;
	int formatted;
	uint32_t frame_format;
	struct csdi_frame_enc fenc;
	FILE *fout;                /* formatted: the shared buffer file */
	const char *core_type;     /* device type of the traced core */
	uint64_t out_bytes;
	struct csdi_perf_enc *perf; /* --perf-data: the writer the sources feed */
};

static int write_file_bytes(void *ctx, const uint8_t *b, size_t n)
{
	FILE *f = ctx;
	return fwrite(b, 1, n, f) == n ? 0 : CSD_EIO;
}

static int source_sink(void *vctx, const uint8_t *b, size_t n)
{
	struct gen_source *s = vctx;
	if (s->ctx->perf)
		return csdi_perf_enc_trace(s->ctx->perf, s->cfg.trace.trace_id, b, n);
	if (!s->ctx->formatted)
		return write_file_bytes(s->raw, b, n);
	return csdi_frame_enc_data(&s->ctx->fenc, s->cfg.trace.trace_id, b, n);
}

/* The generator's sync points are where the perf writer may end an AUX
 * buffer. */
static int source_sync_point(void *vctx)
{
	struct gen_source *s = vctx;
	return s->ctx->perf ? csdi_perf_enc_sync_point(s->ctx->perf) : 0;
}

static int frames_sink(void *vctx, const uint8_t *b, size_t n)
{
	struct gen_ctx *c = vctx;
	c->out_bytes += n;
	return write_file_bytes(c->fout, b, n);
}

static void gen_usage(FILE *out)
{
	fprintf(out,
		"Usage: csdec gen --qemu-log LOG --elf ELF --protocol ptm|etm3 [options] -o DIR\n"
		"       csdec gen --qemu-log LOG --elf ELF --protocol ptm|etm3 [options] --perf-data FILE\n"
		"       csdec gen --exec-log LOG --elf ELF --protocol etm3|ptm [--data-trace MODE] [options] -o DIR|--perf-data FILE\n"
		"\n"
		"Write the trace an ETMv3 or PTM would have produced for a program run\n"
		"recorded by 'qemu-arm -singlestep -d exec,nochain -D LOG ./prog', as a\n"
		"CoreSight snapshot directory that 'csdec decode DIR' reads unaided, or as\n"
		"the perf.data file 'perf record -e cs_etm//u --per-thread ./prog' would have\n"
		"written on an ARMv7 board (one CPU per --protocol; the program under its\n"
		"absolute path; the trace in ETB-style formatter frames).\n"
		"\n"
		"  --qemu-log LOG          the execution log (one line per executed instruction)\n"
		"  --exec-log LOG          instead, a log of instructions and their data accesses:\n"
		"                          'I <pc> A32|T32', then 'R|W <addr> <size> <value>' per\n"
		"                          access (hex, size in decimal bytes), '#' comments\n"
		"  --data-trace MODE       ETMv3 data trace (ETMCR bits 3:2) of the --exec-log\n"
		"                          accesses: both (addresses and values), address, value\n"
		"  --out-of-order          data trace: every second single load's value comes\n"
		"                          out of order, after a placeholder packet\n"
		"  --data-only             data trace only, no instruction trace (ETMCR bit 20):\n"
		"                          data-only I-syncs and the data packets, nothing else\n"
		"                          (not with --cycle-accurate or --timestamps)\n"
		"  --elf ELF               the program (its PT_LOAD segments become the memory dumps)\n"
		"  --protocol P            ptm or etm3; repeat for several sources of one run\n"
		"  --cycle-accurate        cycle-accurate trace (ETMCR bit 12)\n"
		"  --timestamps            timestamp packets (ETMCR bit 28; not for Cortex-M)\n"
		"  --return-stack          PTM return stack (ETMCR bit 29)\n"
		"  --context-id-bytes N    context ID size in I-sync packets: 0, 1, 2 or 4\n"
		"  --sync-period BYTES     A-sync + I-sync about every BYTES bytes (default 1024)\n"
		"  --formatted[=port]      16-byte CoreSight formatter frames (ETB-style, or a\n"
		"                          TPIU capture with frame syncs with =port)\n"
		"  --trace-id ID           trace ID of the (first) source (default 0x10)\n"
		"  --core NAME             the traced core: cortex-a (default) or cortex-m3 / cortex-m4\n"
		"                          (ARMv7-M: ETMv3.4, exceptions from the vector table)\n"
		"  --repeat N              replay the run N times (large traces for benchmarks)\n"
		"  -o DIR                  output directory (created if needed)\n"
		"  --perf-data FILE        write a perf.data file instead of a directory\n"
		"  --perf-data-version V   its AUXTRACE_INFO version: 2 (default, as current perf\n"
		"                          writes it) or 1 (as perf 6.1 writes it; 6.1 reads no\n"
		"                          later version)\n"
		"  --perf-aux-size BYTES   end an AUX buffer at the first sync point after\n"
		"                          BYTES bytes of frames (default 65536), as when the\n"
		"                          sink is drained; one source only\n"
		"\n"
		"Exit status: 0 done, 2 usage or I/O error.\n");
}

static int write_text(const char *dir, const char *name, const char *text)
{
	char path[4096];
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	FILE *f = fopen(path, "w");
	if (!f)
		return -1;
	int ok = fputs(text, f) >= 0;
	return fclose(f) == 0 && ok ? 0 : -1;
}

/* Append printf-style text to a growing buffer. */
struct text {
	char buf[16384];
	size_t n;
};

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static void tprintf(struct text *t, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	if (t->n < sizeof(t->buf)) {
		int w = vsnprintf(t->buf + t->n, sizeof(t->buf) - t->n, fmt, ap);
		if (w > 0)
			t->n += (size_t)w;
	}
	va_end(ap);
}

/* snapshot.ini, the core with its memory dumps, one device per source,
 * trace.ini. */
static int write_snapshot_ini(const char *dir, struct gen_ctx *c, csd_image *img, const char *elf_name)
{
	struct text t = { .n = 0 };
	tprintf(&t, "; written by csdec gen from %s\n[snapshot]\nversion=1.0\n\n[device_list]\n", elf_name);
	for (int i = 0; i < c->nsrc; i++)
		tprintf(&t, "device%d=cpu_%d.ini\ndevice%d=%s.ini\n", 2 * i, i, 2 * i + 1, c->src[i].name);
	tprintf(&t, "\n[trace]\nmetadata=trace.ini\n");
	if (write_text(dir, "snapshot.ini", t.buf) < 0)
		return -1;

	/* One core per source (as if several cores ran the program), each
	 * with the program's memory: the same dump files. */
	struct text dumps = { .n = 0 };
	for (size_t i = 0; i < csd_image_num_sections(img); i++) {
		uint64_t addr, size;
		const uint8_t *data;
		char name[64], path[4096];
		if (csd_image_section(img, i, &addr, &size, &data) < 0)
			return -1;
		snprintf(name, sizeof(name), "mem_%zu.bin", i);
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		FILE *f = fopen(path, "wb");
		if (!f || fwrite(data, 1, (size_t)size, f) != size) {
			if (f)
				fclose(f);
			return -1;
		}
		if (fclose(f) != 0)
			return -1;
		tprintf(&dumps, "\n[dump%zu]\nfile=%s\naddress=0x%08" PRIx64 "\nlength=0x%" PRIx64 "\n", i + 1, name,
			addr, size);
	}
	for (int i = 0; i < c->nsrc; i++) {
		char file[32];
		t.n = 0;
		tprintf(&t, "[device]\nname=cpu_%d\nclass=core\ntype=%s\n\n[regs]\nR15=0x0\n%s", i, c->core_type,
			dumps.buf);
		snprintf(file, sizeof(file), "cpu_%d.ini", i);
		if (write_text(dir, file, t.buf) < 0)
			return -1;
	}

	for (int i = 0; i < c->nsrc; i++) {
		const struct csd_trace_config *tc = &c->src[i].cfg.trace;
		char file[80];
		t.n = 0;
		tprintf(&t,
			"[device]\nname=%s\nclass=trace_source\ntype=%s\n\n[regs]\n"
			"ETMCR(0x000)=0x%08" PRIX32 "\nETMIDR(0x079)=0x%08" PRIX32 "\nETMCCER(0x07A)=0x%08" PRIX32
			"\nETMTRACEIDR(0x080)=0x%08X\n",
			c->src[i].name, tc->protocol == CSD_PROTO_PTM ? "PTM1.1" : "ETM3.5", tc->etmcr, tc->etmidr,
			tc->etmccer, tc->trace_id);
		snprintf(file, sizeof(file), "%s.ini", c->src[i].name);
		if (write_text(dir, file, t.buf) < 0)
			return -1;
	}

	t.n = 0;
	tprintf(&t, "[trace_buffers]\nbuffers=");
	if (c->formatted) {
		tprintf(&t, "buffer0\n\n[buffer0]\nname=ETB_0\nfile=trace.bin\nformat=%s\n",
			c->frame_format == CSD_FRAME_PORT ? "dstream_coresight" : "coresight");
	} else {
		for (int i = 0; i < c->nsrc; i++)
			tprintf(&t, "%sbuffer%d", i ? "," : "", i);
		tprintf(&t, "\n");
		for (int i = 0; i < c->nsrc; i++)
			tprintf(&t, "\n[buffer%d]\nname=BUF_%d\nfile=%s\nformat=source_data\n", i, i, c->src[i].file);
	}
	tprintf(&t, "\n[source_buffers]\n");
	for (int i = 0; i < c->nsrc; i++) {
		if (c->formatted)
			tprintf(&t, "%s=ETB_0\n", c->src[i].name);
		else
			tprintf(&t, "%s=BUF_%d\n", c->src[i].name, i);
	}
	tprintf(&t, "\n[core_trace_sources]\n");
	for (int i = 0; i < c->nsrc; i++)
		tprintf(&t, "cpu_%d=%s\n", i, c->src[i].name);
	return write_text(dir, "trace.ini", t.buf);
}

static uint64_t gen_number(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || !*s || *end || *s == '-') {
		fprintf(stderr, "csdec gen: bad %s '%s'\n", what, s);
		exit(2);
	}
	return v;
}

static void gen_fail(const char *fmt, const char *arg)
{
	fprintf(stderr, "csdec gen: ");
	fprintf(stderr, fmt, arg);
	fputc('\n', stderr);
	exit(2);
}

/* --perf-data: the file and what the writer's strings point to. */
struct perf_out {
	FILE *f;
	char *exe;                 /* the ELF's absolute path */
};

static int perf_write_at(void *ctx, uint64_t off, const void *buf, size_t n)
{
	FILE *f = ctx;
	if (off > (uint64_t)INT64_MAX || fseeko(f, (off_t)off, SEEK_SET) != 0)
		return CSD_EIO;
	return fwrite(buf, 1, n, f) == n ? 0 : CSD_EIO;
}

static int perf_read_at(void *ctx, uint64_t off, void *buf, size_t n)
{
	FILE *f = ctx;
	if (off > (uint64_t)INT64_MAX || fseeko(f, (off_t)off, SEEK_SET) != 0)
		return CSD_EIO;
	return fread(buf, 1, n, f) == n ? 0 : CSD_EIO;
}

static void perf_open(struct gen_ctx *c, struct perf_out *po, const char *path, const char *elf, unsigned version,
		      uint64_t aux_size)
{
	static struct csdi_perf_elf pe;
	char err[512];
	if (csdi_perf_elf_read(elf, &pe, err, sizeof(err)) < 0)
		gen_fail("%s", err);
	po->exe = realpath(elf, NULL);
	if (!po->exe)
		gen_fail("cannot find the absolute path of %s", elf);
	/* The process name: the program's file name, as exec sets it. */
	static char comm[16];
	const char *base = strrchr(po->exe, '/');
	snprintf(comm, sizeof(comm), "%s", base ? base + 1 : po->exe);
	static const char *cmdline[6];
	cmdline[0] = "/usr/bin/perf";
	cmdline[1] = "record";
	cmdline[2] = "-e";
	cmdline[3] = "cs_etm//u";
	cmdline[4] = "--per-thread";
	cmdline[5] = po->exe;

	struct csdi_perf_enc_config pc;
	memset(&pc, 0, sizeof(pc));
	pc.version = version;
	for (int i = 0; i < c->nsrc; i++)
		pc.sources[i] = c->src[i].cfg.trace;
	pc.nsources = (unsigned)c->nsrc;
	pc.exe_path = po->exe;
	pc.elf = &pe;
	pc.comm = comm;
	pc.pid = pc.tid = PERF_PID;
	pc.cmdline = cmdline;
	pc.cmdline_n = 6;
	/* /proc/cpuinfo's "model name" on a 32-bit ARM kernel. */
	pc.cpudesc = "ARMv7 Processor rev 1 (v7l)";
	pc.arch = "armv7l";
	pc.aux_size = aux_size;

	po->f = fopen(path, "w+b");
	if (!po->f)
		gen_fail("cannot write %s", path);
	pc.io.write_at = perf_write_at;
	pc.io.read_at = perf_read_at;
	pc.io.ctx = po->f;
	int rc;
	c->perf = csdi_perf_enc_new(&pc, &rc);
	if (!c->perf) {
		fclose(po->f);
		remove(path);
		gen_fail("cannot write %s (the perf.data writer refused the setup or a write failed)", path);
	}
}

static void perf_close(struct gen_ctx *c, struct perf_out *po, const char *path, int ok)
{
	if (csdi_perf_enc_finish(c->perf) < 0)
		ok = 0;
	uint64_t buffers = csdi_perf_enc_buffers(c->perf);
	csdi_perf_enc_free(c->perf);
	c->perf = NULL;
	if (fclose(po->f) != 0)
		ok = 0;
	if (!ok) {
		remove(path);
		gen_fail("cannot write %s", path);
	}
	fprintf(stderr, "csdec gen: %s: %" PRIu64 " AUX buffer%s of trace\n", path, buffers, buffers == 1 ? "" : "s");
	free(po->exe);
}

int csd_cmd_gen(int argc, char **argv)
{
	const char *log = NULL, *exec_log = NULL, *elf = NULL, *outdir = NULL, *perf_path = NULL;
	unsigned perf_version = 2;
	uint64_t perf_aux_size = CSDI_PERF_AUX_SIZE_DEFAULT;
	const char *perf_only = NULL;  /* a perf.data option given (for the check below) */
	int protocols[MAX_SOURCES], nproto = 0;
	int ca = 0, ts = 0, rs = 0, cid_bytes = 0, trace_id = 0x10, mprof = 0, ooo = 0, data_only = 0;
	uint32_t data_bits = 0;   /* ETMCR[3:2] */
	const char *core_type = "Cortex-A15";
	uint64_t repeat = 1;
	uint32_t sync_period = 1024;
	struct gen_ctx *c = calloc(1, sizeof(*c));
	if (!c)
		gen_fail("%s", "out of memory");
	c->frame_format = CSD_FRAME_RAW;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		const char *v = i + 1 < argc ? argv[i + 1] : NULL;
		if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
			gen_usage(stdout);
			exit(0);
		} else if (!strcmp(a, "--qemu-log") && v) {
			log = v;
			i++;
		} else if (!strcmp(a, "--exec-log") && v) {
			exec_log = v;
			i++;
		} else if (!strcmp(a, "--data-trace") && v) {
			if (!strcmp(v, "both"))
				data_bits = 3;
			else if (!strcmp(v, "address"))
				data_bits = 2;
			else if (!strcmp(v, "value"))
				data_bits = 1;
			else
				gen_fail("unknown data trace mode '%s' (expected both, address or value)", v);
			i++;
		} else if (!strcmp(a, "--out-of-order")) {
			ooo = 1;
		} else if (!strcmp(a, "--data-only")) {
			data_only = 1;
		} else if (!strcmp(a, "--elf") && v) {
			elf = v;
			i++;
		} else if (!strcmp(a, "-o") && v) {
			outdir = v;
			i++;
		} else if (!strcmp(a, "--perf-data") && v) {
			perf_path = v;
			i++;
		} else if (!strcmp(a, "--perf-data-version") && v) {
			uint64_t pv = gen_number(v, "perf.data version");
			if (pv != 1 && pv != 2)
				gen_fail("perf.data version '%s' is not 1 or 2", v);
			perf_version = (unsigned)pv;
			perf_only = "--perf-data-version";
			i++;
		} else if (!strcmp(a, "--perf-aux-size") && v) {
			perf_aux_size = gen_number(v, "AUX buffer size");
			if (perf_aux_size < 16 || perf_aux_size > (1ull << 32))
				gen_fail("AUX buffer size '%s' out of range (16 .. 2^32)", v);
			perf_only = "--perf-aux-size";
			i++;
		} else if (!strcmp(a, "--protocol") && v) {
			if (nproto == MAX_SOURCES)
				gen_fail("%s", "too many --protocol options");
			if (!strcmp(v, "ptm"))
				protocols[nproto++] = CSD_PROTO_PTM;
			else if (!strcmp(v, "etm3"))
				protocols[nproto++] = CSD_PROTO_ETM3;
			else
				gen_fail("unknown protocol '%s' (expected ptm or etm3)", v);
			i++;
		} else if (!strcmp(a, "--cycle-accurate")) {
			ca = 1;
		} else if (!strcmp(a, "--timestamps")) {
			ts = 1;
		} else if (!strcmp(a, "--return-stack")) {
			rs = 1;
		} else if (!strcmp(a, "--context-id-bytes") && v) {
			cid_bytes = (int)gen_number(v, "context ID size");
			if (cid_bytes != 0 && cid_bytes != 1 && cid_bytes != 2 && cid_bytes != 4)
				gen_fail("context ID size must be 0, 1, 2 or 4, not '%s'", v);
			i++;
		} else if (!strcmp(a, "--sync-period") && v) {
			uint64_t p = gen_number(v, "sync period");
			if (p < 16 || p > (1u << 30))
				gen_fail("sync period '%s' out of range (16 .. 2^30)", v);
			sync_period = (uint32_t)p;
			i++;
		} else if (!strcmp(a, "--formatted") || !strcmp(a, "--formatted=aligned")) {
			c->formatted = 1;
			c->frame_format = CSD_FRAME_ALIGNED;
		} else if (!strcmp(a, "--formatted=port")) {
			c->formatted = 1;
			c->frame_format = CSD_FRAME_PORT;
		} else if (!strcmp(a, "--core") && v) {
			if (!strcasecmp(v, "cortex-m3") || !strcasecmp(v, "cortex-m4")) {
				mprof = 1;
				core_type = !strcasecmp(v, "cortex-m3") ? "Cortex-M3" : "Cortex-M4";
			} else if (strcasecmp(v, "cortex-a")) {
				gen_fail("unknown core '%s' (cortex-a, cortex-m3, cortex-m4)", v);
			}
			i++;
		} else if (!strcmp(a, "--repeat") && v) {
			repeat = gen_number(v, "repeat count");
			if (repeat < 1 || repeat > 100000)
				gen_fail("repeat count '%s' out of range (1 .. 100000)", v);
			i++;
		} else if (!strcmp(a, "--trace-id") && v) {
			uint64_t id = gen_number(v, "trace ID");
			if (id < 1 || id > 0x6F)
				gen_fail("trace ID '%s' out of range (1 .. 0x6f)", v);
			trace_id = (int)id;
			i++;
		} else {
			gen_fail("unknown or incomplete option '%s' (try --help)", a);
		}
	}
	if (outdir && perf_path)
		gen_fail("%s", "give either -o DIR or --perf-data FILE, not both");
	if (log && exec_log)
		gen_fail("%s", "give either --qemu-log or --exec-log, not both");
	if (exec_log)
		log = exec_log;
	if (!log || !elf || (!outdir && !perf_path) || !nproto)
		gen_fail("%s", "--qemu-log (or --exec-log), --elf, --protocol and -o (or --perf-data) are required (try --help)");
	if ((data_bits || ooo) && !exec_log)
		gen_fail("%s", "--data-trace and --out-of-order need the data accesses of --exec-log");
	if (ooo && !data_bits)
		gen_fail("%s", "--out-of-order needs --data-trace");
	/* (Options that would change nothing are refused: whoever gives one
	 * expects it to.) */
	if (ooo && data_bits == 2)
		gen_fail("%s", "--out-of-order moves data values: --data-trace address traces none");
	if (perf_only && !perf_path)
		gen_fail("%s is for --perf-data", perf_only);
	if (perf_only && !strcmp(perf_only, "--perf-aux-size") && nproto > 1)
		gen_fail("%s", "--perf-aux-size is for one source (one --protocol)");
	int any_ptm = 0;
	for (int i = 0; i < nproto; i++)
		any_ptm |= protocols[i] == CSD_PROTO_PTM;
	if (rs && !any_ptm)
		gen_fail("%s", "--return-stack is the PTM's (ETMCR bit 29): no --protocol ptm source has one");
	if (data_only && !data_bits)
		gen_fail("%s", "--data-only needs --data-trace");
	if (data_only && (ca || ts))
		gen_fail("%s", "--data-only traces no instructions: no cycles or timestamps to go with them");
	for (int i = 0; i < nproto; i++)
		if (data_bits && protocols[i] != CSD_PROTO_ETM3)
			gen_fail("%s", "data trace is an ETMv3 feature (--protocol etm3)");
	if (data_bits && mprof)
		gen_fail("%s", "data trace of a Cortex-M core is not generated (its DWT traces data)");
	if (perf_path && mprof)
		gen_fail("%s", "--perf-data records what Linux perf writes: not for a Cortex-M core");
	if (perf_path && c->frame_format == CSD_FRAME_PORT)
		gen_fail("%s", "--perf-data holds an ETB's frames: --formatted=port does not apply");
	if (trace_id + nproto - 1 > 0x6F)
		gen_fail("%s", "too many sources for that trace ID");
	for (int i = 0; i < nproto; i++)
		if (mprof && protocols[i] == CSD_PROTO_PTM)
			gen_fail("%s", "Cortex-M cores have an ETM (--protocol etm3), not a PTM");
	if (mprof && ts)
		gen_fail("%s", "the Cortex-M ETM (ETMv3.4) has no timestamps: drop --timestamps or --core");
	c->core_type = core_type;

	csd_image *img = csd_image_new();
	if (!img)
		gen_fail("%s", "out of memory");
	int rc = csd_image_add_elf(img, elf, 0);
	if (rc < 0)
		gen_fail("%s", csd_image_error(img));
	if (rc == 0)
		gen_fail("%s: no loadable segment with bytes in the file", elf);
	if (outdir && mkdir(outdir, 0777) != 0 && errno != EEXIST)
		gen_fail("cannot create %s", outdir);

	char path[4096];
	if (perf_path) {
		c->formatted = 1;
		c->frame_format = CSD_FRAME_ALIGNED;
	} else if (c->formatted) {
		snprintf(path, sizeof(path), "%s/trace.bin", outdir);
		c->fout = fopen(path, "wb");
		if (!c->fout)
			gen_fail("cannot write %s", path);
		struct csdi_frame_enc_config fc = { .format = c->frame_format, .fsync_every = 64, .id_every = 8,
						    .sink = frames_sink, .ctx = c };
		csdi_frame_enc_init(&c->fenc, &fc);
	}
	for (int i = 0; i < nproto; i++) {
		struct gen_source *s = &c->src[i];
		int ptm = protocols[i] == CSD_PROTO_PTM;
		s->ctx = c;
		s->cfg.trace.size = sizeof(s->cfg.trace);
		s->cfg.trace.protocol = (uint32_t)protocols[i];
		s->cfg.trace.etmcr = (uint32_t)ca << 12 | (uint32_t)ts << 28 | (uint32_t)(ptm && rs) << 29 |
				     (uint32_t)(cid_bytes == 4 ? 3 : cid_bytes) << 14 | data_bits << 2 |
				     (uint32_t)data_only << 20;
		s->cfg.data_out_of_order = ooo;
		/* ID and configuration registers as a Cortex-A15 PTM / Cortex-A7
		 * ETM report them (the TC2 capture's values). */
		s->cfg.trace.etmidr = ptm ? 0x411CF312u : 0x410CF250u;
		s->cfg.trace.etmccer = ptm ? 0x34C01AC2u : 0x344008F2u;
		if (mprof) {
			/* An ETMv3.4 as on Cortex-M3/M4: no timestamps. */
			s->cfg.trace.etmidr = 0x410CF240u;
			s->cfg.trace.etmccer = 0;
			s->cfg.trace.core_profile = CSD_CORE_M;
		}
		s->cfg.trace.trace_id = (uint8_t)(trace_id + i);
		s->cfg.sync_period = sync_period;
		s->cfg.context_id = perf_path ? PERF_PID : 0x2a;
		s->cfg.sync_point = source_sync_point;
		snprintf(s->name, sizeof(s->name), "%s_%d", ptm ? "PTM" : "ETM", i);
		if (!c->formatted) {
			snprintf(s->file, sizeof(s->file), "trace_%d.bin", i);
			snprintf(path, sizeof(path), "%s/%s", outdir, s->file);
			s->raw = fopen(path, "wb");
			if (!s->raw)
				gen_fail("cannot write %s", path);
		}
		s->gen = csdi_gen_new(&s->cfg, img, source_sink, s);
		if (!s->gen)
			gen_fail("%s", "cannot set up the generator");
	}
	c->nsrc = nproto;
	struct perf_out po = { NULL, NULL };
	if (perf_path)
		perf_open(c, &po, perf_path, elf, perf_version, perf_aux_size);

	uint64_t bad_lines = 0;
	for (uint64_t r = 0; exec_log && r < repeat; r++) {
		FILE *lf = cli_open_input(log, repeat == 1);
		if (!lf)
			exit(2);
		static struct exec_log_reader rd;
		exec_log_reader_init_file(&rd, lf);
		struct exec_log_item it;
		int lr;
		while ((lr = exec_log_next(&rd, &it)) != EXEC_LOG_END) {
			if (lr == EXEC_LOG_READ_ERROR)
				gen_fail("%s: read error", log);
			if (lr == EXEC_LOG_BAD_LINE) {
				if (r == 0 && rd.bad_lines <= 8)
					fprintf(stderr, "csdec gen: %s:%llu: %s\n", log, (unsigned long long)rd.bad_line,
						rd.bad_reason);
				if (r == 0)
					bad_lines++;
				continue;
			}
			for (int i = 0; i < c->nsrc; i++) {
				int grc = lr == EXEC_LOG_INSN ? csdi_gen_insn(c->src[i].gen, it.addr, it.isa)
							      : csdi_gen_data(c->src[i].gen, it.dir, it.addr, it.size, it.value);
				if (grc == CSD_EINVAL) {
					char msg[160];
					snprintf(msg, sizeof(msg), "line %llu: more than %d data accesses for one instruction",
						 (unsigned long long)it.line, CSDI_GEN_DATA_MAX);
					gen_fail("%s", msg);
				}
				if (grc < 0)
					gen_fail("%s", "trace generation failed (write error?)");
			}
		}
		if (lf != stdin)
			fclose(lf);
	}
	for (uint64_t r = 0; !exec_log && r < repeat; r++) {
		/* Standard input ("-") can be read once only. */
		FILE *lf = cli_open_input(log, repeat == 1);
		if (!lf)
			exit(2);
		static struct qemu_log_reader rd;
		qemu_log_reader_init_file(&rd, lf);
		struct qemu_log_insn qi;
		int lr;
		while ((lr = qemu_log_next(&rd, &qi)) != QEMU_LOG_END) {
			if (lr == QEMU_LOG_READ_ERROR)
				gen_fail("%s: read error", log);
			if (lr == QEMU_LOG_BAD_LINE) {
				/* qemu-system logs other lines too (-d int: exception
				 * entries, semihosting): counted, not fatal. */
				if (r == 0)
					bad_lines++;
				continue;
			}
			for (int i = 0; i < c->nsrc; i++) {
				if (csdi_gen_insn(c->src[i].gen, qi.addr, qi.isa) < 0)
					gen_fail("%s", "trace generation failed (write error?)");
			}
		}
		if (lf != stdin)
			fclose(lf);
	}
	if (bad_lines)
		fprintf(stderr, "csdec gen: %s: %llu lines that are not executed instructions skipped\n", log,
			(unsigned long long)bad_lines);

	int ok = 1;
	for (int i = 0; i < c->nsrc; i++) {
		if (csdi_gen_finish(c->src[i].gen) < 0)
			ok = 0;
		/* A log that is not the program's (or not such a log at all)
		 * would give a trace of nothing, or of trace on and off. */
		const struct csdi_gen_stats *gs = csdi_gen_stats(c->src[i].gen);
		char why[1024];
		if (i == 0 && gs->insns == 0) {
			snprintf(why, sizeof(why), "%s: no executed instruction in it (%s)", log,
				 exec_log ? "'I <pc> A32|T32' lines" : "recorded with qemu-arm -singlestep -d exec,nochain?");
			gen_fail("%s", why);
		}
		if (i == 0 && gs->traced == 0) {
			snprintf(why, sizeof(why), "none of the %" PRIu64 " instructions of %s is in %s's code: is the log of "
				 "this program?", gs->insns, log, elf);
			gen_fail("%s", why);
		}
		if (i == 0 && gs->traced < gs->insns / 2)
			fprintf(stderr, "csdec gen: warning: only %" PRIu64 " of the %" PRIu64 " instructions of %s are in "
					"%s's code; the rest is not traced (a log of another program, or libraries not in "
					"the ELF?)\n", gs->traced, gs->insns, log, elf);
		const struct csdi_gen_stats *st = csdi_gen_stats(c->src[i].gen);
		fprintf(stderr, "csdec gen: %s (trace ID 0x%02x): %" PRIu64 " instructions, %" PRIu64
			" traced, %" PRIu64 " bytes, %" PRIu64 " packets\n",
			c->src[i].name, c->src[i].cfg.trace.trace_id, st->insns, st->traced, st->bytes, st->packets);
		if (c->src[i].raw && fclose(c->src[i].raw) != 0)
			ok = 0;
	}
	if (perf_path) {
		perf_close(c, &po, perf_path, ok);
	} else {
		if (c->formatted) {
			if (csdi_frame_enc_flush(&c->fenc) < 0 || fclose(c->fout) != 0)
				ok = 0;
		}
		const char *slash = strrchr(elf, '/');
		if (!ok || write_snapshot_ini(outdir, c, img, slash ? slash + 1 : elf) < 0)
			gen_fail("cannot write the snapshot in %s", outdir);
	}
	for (int i = 0; i < c->nsrc; i++)
		csdi_gen_free(c->src[i].gen);
	csd_image_free(img);
	free(c);
	return 0;
}
