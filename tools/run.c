/* run.c - the decode commands' runs: a snapshot, a capture file or a
 * perf.data file, serially or with worker threads (jobs.c) or chunks
 * (chunks.c); the pipeline's parts they share are in cli.c. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "chunks.h"
#include "jobs.h"
#include "merge.h"
#include "symbols.h"
#include "progress.h"

#define READ_CHUNK (1024 * 1024)

static void drain_frames(struct run_ctx *ctx, csd_frame_decoder *fd, struct jobs *jobs, struct chunks *chunks)
{
	struct csd_frame_out fo;
	while (csd_frame_next(fd, &fo) == 0) {
		if (fo.event == CSD_FRAME_ERROR || fo.event == CSD_FRAME_ALIGN_INFERRED ||
		    fo.event == CSD_FRAME_TRUNCATED) {
			if (jobs) {
				jobs_frame_note(jobs, &fo);
				continue;
			}
			if (chunks)
				chunks_sync(chunks);
			cli_report_frame_error(ctx, &fo);
			continue;
		}
		if (fo.event != CSD_FRAME_DATA || fo.bytes.id >= MAX_IDS)
			continue;
		ctx->id_bytes[fo.bytes.id] += fo.bytes.size;
		struct source_slot *s = ctx->slot[fo.bytes.id];
		if (!s)
			continue;
		if (chunks)
			chunks_data(chunks, &fo.bytes);
		else if (jobs)
			jobs_data(jobs, s, &fo.bytes);
		else if (cli_slot_feed(s, &fo.bytes) == 0)
			cli_drain_slot(ctx, s);
	}
}

/* After a formatted capture: trace of an ID no source has (a source the
 * snapshot names wrongly, a --trace-id that is not the capture's) is not
 * decoded, and a source whose ID the capture never carries decodes
 * nothing; either would pass without a word. */
static void warn_ids(struct run_ctx *ctx, const char *path)
{
	char ids[MAX_IDS * 6] = "";
	size_t len = 0;
	for (int id = 0; id < MAX_IDS; id++)
		if (ctx->id_bytes[id] && len + 6 < sizeof(ids))
			len += (size_t)snprintf(ids + len, sizeof(ids) - len, "%s0x%02x", len ? ", " : "", id);
	for (int id = 0; id < MAX_IDS; id++) {
		if (ctx->id_quiet[id])
			continue;
		if (ctx->id_bytes[id] && !ctx->slot[id])
			fprintf(stderr, "%s: warning: %s: %" PRIu64 " bytes of trace ID 0x%02x and no source with that ID: "
					"not decoded\n", prog, path, ctx->id_bytes[id], id);
		else if (!ctx->id_bytes[id] && ctx->slot[id] && ctx->warn_no_trace)
			fprintf(stderr, "%s: warning: %s: no trace of ID 0x%02x (the capture has %s)\n", prog, path, id,
				len ? ids : "no trace of any ID");
	}
}

/* Decode every slot of one capture file. Returns 0 or -1 on I/O error. */
static int run_buffer(struct run_ctx *ctx, const char *path, uint32_t frame_format, uint8_t raw_id,
		      int allow_stdin)
{
	FILE *f = cli_open_input(path, allow_stdin);
	if (!f)
		return -1;
	struct csd_frame_config fc = { .size = sizeof(fc), .format = frame_format, .raw_id = raw_id };
	/* Where nothing is printed in capture or time order (decode --format
	 * none, coverage, profile), each source's bytes come in batches:
	 * fewer calls, and each decoder's tables stay in the cache. */
	if (ctx->format == FMT_NONE || (ctx->on_record && !ctx->merge))
		fc.flags |= CSD_FRAME_BY_ID;
	csd_frame_decoder *fd = csd_frame_new(&fc);
	struct stat st;
	int64_t capture_size = fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) ? (int64_t)st.st_size : -1;
	/* A small capture's read buffer is its size and a byte (the read
	 * after it sees the end): a buffer of READ_CHUNK would be a mapping
	 * of its own, made and unmade for a few pages. */
	const size_t chunk_size = capture_size >= 0 && capture_size < READ_CHUNK ? (size_t)capture_size + 1 : READ_CHUNK;
	uint8_t *chunk = malloc(chunk_size);
	if (!fd || !chunk) {
		fprintf(stderr, "%s: out of memory\n", prog);
		if (f != stdin)
			fclose(f);
		csd_frame_free(fd);
		free(chunk);
		return -1;
	}
	/* One source: cut into chunks decoded on the threads (chunks.c).
	 * Several sources: each decoded on a worker (jobs.c). Either way the
	 * results are handed on here in the serial order. */
	struct chunks *chunks = ctx->jobs > 1 ? chunks_new(ctx, capture_size, frame_format != CSD_FRAME_RAW) : NULL;
	struct jobs *jobs = ctx->jobs > 1 && !chunks ? jobs_new(ctx, ctx->jobs, capture_size) : NULL;
	uint64_t off = 0;
	size_t n;
	int rc = 0;
	struct progress pg;
	progress_begin(&pg, f, path, ctx->format == FMT_NONE);
	/* read(), not fread(): from a pipe, decode what has arrived rather
	 * than wait for a whole chunk. */
	int in = fileno(f);
	for (;;) {
		ssize_t got = read(in, chunk, chunk_size);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0) {
			fprintf(stderr, "%s: %s: read error: %s\n", prog, path, strerror(errno));
			rc = -1;
			break;
		}
		if (got == 0)
			break;
		n = (size_t)got;
		csd_frame_feed(fd, chunk, n, off);
		drain_frames(ctx, fd, jobs, chunks);
		off += n;
		progress_update(&pg, off);
	}
	progress_end(&pg);
	csd_frame_finish(fd);
	drain_frames(ctx, fd, jobs, chunks);
	if (chunks) {
		chunks_finish(chunks);
	} else if (jobs) {
		jobs_finish(jobs);
	} else {
		for (int id = 0; id < MAX_IDS; id++) {
			struct source_slot *s = ctx->slot[id];
			if (s) {
				cli_slot_finish(s);
				cli_drain_slot(ctx, s);
			}
		}
	}
	if (ctx->merge)
		merge_flush(ctx->merge, ctx);
	cli_check_output(ctx);
	if (frame_format != CSD_FRAME_RAW && rc == 0)
		warn_ids(ctx, path);
	memset(ctx->id_bytes, 0, sizeof(ctx->id_bytes));
	csd_frame_free(fd);
	free(chunk);
	if (f != stdin)
		fclose(f);
	return rc;
}

/* Decode without a snapshot: one source in one file. */
static int run_trace_file(struct options *o, struct run_ctx *ctx)
{
	struct csd_trace_config cfg;
	memset(&cfg, 0, sizeof(cfg));
	cfg.size = sizeof(cfg);
	cfg.protocol = (uint32_t)o->protocol;
	cfg.etmcr = o->etmcr;
	cfg.etmccer = o->etmccer;
	/* Without ETMIDR, assume the newest version of each protocol. */
	cfg.etmidr = o->have_etmidr ? o->etmidr : (o->protocol == CSD_PROTO_PTM ? 0x411CF312u : 0x410CF250u);
	cfg.trace_id = (uint8_t)(o->trace_id > 0 ? o->trace_id : 0x10);
	cfg.core_profile = (uint8_t)(o->core_profile >= 0 ? o->core_profile : CSD_CORE_A);
	csd_image *img = csd_image_new();
	if (!img)
		die_io("out of memory");
	cli_load_extra_images(o, img);
	struct source_slot slot;
	if (cli_slot_init(&slot, SLOT_FLOW, &cfg, img, cli_slot_insn(o, ctx, &cfg)) < 0)
		die_io("cannot create a decoder for this configuration");
	ctx->slot[cfg.trace_id] = &slot;
	/* (A capture's other IDs, an ITM's say, are not asked for: only a
	 * missing one of its own is said.) */
	memset(ctx->id_quiet, 1, sizeof(ctx->id_quiet));
	ctx->id_quiet[cfg.trace_id] = 0;
	ctx->warn_no_trace = 1;
	ctx->chunk_ok = 1;
	int io = run_buffer(ctx, o->trace, o->frame_format, cfg.trace_id, 1) < 0;
	ctx->chunk_ok = 0;
	if (ctx->on_source_end)
		ctx->on_source_end(ctx, &slot);
	cli_add_totals(ctx, &slot);
	cli_slot_free(&slot);
	csd_image_free(img);
	return cli_finish_status(ctx, io, 1);
}

/* A source of buffer `buf` that cannot be told apart from the others is
 * skipped, with a warning: its trace would be lost without a word. */
static void skip_source(struct run_ctx *ctx, const struct csd_snapshot_source *src,
			const struct csd_snapshot_buffer *buf, const char *why)
{
	fprintf(stderr, "%s: warning: source %s (trace ID 0x%02x) in buffer %s skipped: %s\n", prog, src->name,
		src->config.trace_id, buf->name, why);
	ctx->skipped_sources++;
	if (src->config.trace_id < MAX_IDS)
		ctx->id_quiet[src->config.trace_id] = 1;
}

/* The next dump from index i on that csd_snapshot_load_image(snap, dev)
 * adds (dev NULL: every one); the number of dumps if none. */
static size_t next_dump(const csd_snapshot *snap, const char *dev, size_t i)
{
	size_t n = csd_snapshot_num_dumps(snap);
	while (i < n && dev && strcasecmp(csd_snapshot_dump(snap, i)->device, dev) != 0)
		i++;
	return i;
}

/* Would devices a and b load the same image (the same files, parts and
 * addresses, in the same order)? */
static int same_dumps(const csd_snapshot *snap, const char *a, const char *b)
{
	size_t n = csd_snapshot_num_dumps(snap);
	for (size_t i = next_dump(snap, a, 0), j = next_dump(snap, b, 0);; i = next_dump(snap, a, i + 1),
		    j = next_dump(snap, b, j + 1)) {
		if (i == n || j == n)
			return i == n && j == n;
		const struct csd_snapshot_dump *x = csd_snapshot_dump(snap, i), *y = csd_snapshot_dump(snap, j);
		if (x->address != y->address || x->offset != y->offset || x->length != y->length ||
		    strcmp(x->path, y->path) != 0)
			return 0;
	}
}

/* The images of a snapshot's cores, loaded once: cores with the same
 * dumps share one (an image is read by decoders on several threads at
 * once: csd_image_new). */
struct core_images {
	csd_image *img[MAX_IDS];
	const char *core[MAX_IDS];
	int n;
};

static csd_image *core_image(struct core_images *ci, const csd_snapshot *snap, const struct options *o,
			     const char *core)
{
	for (int i = 0; i < ci->n; i++)
		if (same_dumps(snap, ci->core[i], core))
			return ci->img[i];
	csd_image *img = csd_image_new();
	if (!img || ci->n == MAX_IDS)
		die_io("out of memory");
	int lr = csd_snapshot_load_image(snap, core, img);
	if (lr < 0)
		die_io("memory dump of %s: %s", core ? core : "?",
		       csd_image_error(img)[0] ? csd_image_error(img) : csd_errstr(lr));
	cli_load_extra_images(o, img);
	ci->img[ci->n] = img;
	ci->core[ci->n++] = core;
	return img;
}

static int run_snapshot(struct options *o, struct run_ctx *ctx, int kind)
{
	char err[512] = "";
	csd_snapshot *snap = NULL;
	int rc = csd_snapshot_open(o->dir, &snap, err, sizeof(err));
	if (rc < 0)
		die_io("%s", err[0] ? err : csd_errstr(rc));

	int io = 0, decoded_any = 0;
	struct core_images images = { .n = 0 };
	for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++) {
		const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, b);
		struct source_slot slots[MAX_IDS];
		const char *names[MAX_IDS];
		int nslots = 0;
		uint8_t raw_id = 0;
		memset(ctx->slot, 0, sizeof(ctx->slot));
		for (int id = 0; id < MAX_IDS; id++)
			ctx->id_quiet[id] = o->any_id && !o->want[id];
		/* The library reads a format it does not know as unformatted
		 * (csd_snapshot_buffer): a misspelt "coresight" would then be
		 * decoded as one source's raw bytes. Unformatted is source_data. */
		if (buf->frame_format == CSD_FRAME_RAW && *buf->format && strcasecmp(buf->format, "source_data") != 0)
			fprintf(stderr, "%s: warning: buffer %s: unknown format '%s' (source_data, coresight or "
					"dstream_coresight), read as source_data (unformatted)\n", prog, buf->name, buf->format);
		for (size_t si = 0; si < csd_snapshot_num_sources(snap); si++) {
			const struct csd_snapshot_source *src = csd_snapshot_source(snap, si);
			uint8_t id = src->config.trace_id;
			if (src->buffer != (int)b)
				continue;
			if (src->config.protocol != CSD_PROTO_ETM3 && src->config.protocol != CSD_PROTO_PTM)
				continue;
			if (o->any_id && !o->want[id])
				continue;
			char why[256];
			if (buf->frame_format != CSD_FRAME_RAW && (id == 0 || id >= 0x70)) {
				/* Formatter frames carry IDs 0x01-0x6f only. */
				skip_source(ctx, src, buf, id == 0 ? "ID 0 cannot appear in a formatted buffer (has its device file "
								     "no ETMTRACEIDR in its [regs]?)" :
								 "IDs 0x70-0x7f are reserved; a formatted buffer cannot carry them");
				continue;
			}
			if (buf->frame_format == CSD_FRAME_RAW && nslots) {
				snprintf(why, sizeof(why), "the buffer is unformatted, so it holds one source: %s", names[0]);
				skip_source(ctx, src, buf, why);
				continue;
			}
			if (ctx->slot[id]) {
				for (int k = 0; k < nslots; k++)
					if (&slots[k] == ctx->slot[id])
						snprintf(why, sizeof(why), "source %s has the same trace ID", names[k]);
				skip_source(ctx, src, buf, why);
				continue;
			}
			csd_image *img = kind == SLOT_FLOW ? core_image(&images, snap, o, src->core_name) : NULL;
			names[nslots] = src->name;
			if (cli_slot_init(&slots[nslots], kind, &src->config, img, cli_slot_insn(o, ctx, &src->config)) < 0)
				die_io("cannot create a decoder for source %s (protocol and ETMIDR 0x%08x disagree?)",
				       src->name, src->config.etmidr);
			ctx->slot[id] = &slots[nslots];
			nslots++;
			raw_id = id;
		}
		if (nslots == 0)
			continue;
		decoded_any = 1;
		ctx->chunk_ok = nslots == 1;
		if (run_buffer(ctx, buf->path, buf->frame_format, raw_id, 0) < 0)
			io = 1;
		ctx->chunk_ok = 0;
		for (int i = 0; i < nslots; i++) {
			if (ctx->on_source_end && kind == SLOT_FLOW)
				ctx->on_source_end(ctx, &slots[i]);
			cli_add_totals(ctx, &slots[i]);
			cli_slot_free(&slots[i]);
		}
	}
	for (int i = 0; i < images.n; i++)
		csd_image_free(images.img[i]);
	/* What the snapshot lacks, where it is not a source asked for or
	 * skipped: a section or key misspelt leaves nothing to decode. */
	char why[160] = "";
	if (!decoded_any && !o->any_id && !ctx->skipped_sources) {
		size_t nsrc = 0, linked = 0;
		for (size_t si = 0; si < csd_snapshot_num_sources(snap); si++) {
			const struct csd_snapshot_source *src = csd_snapshot_source(snap, si);
			if (src->config.protocol == CSD_PROTO_ETM3 || src->config.protocol == CSD_PROTO_PTM) {
				nsrc++;
				linked += src->buffer >= 0;
			}
		}
		if (!nsrc)
			snprintf(why, sizeof(why), " (no device file of class trace_source with an ETMv3 or PTM type%s)",
				 csd_snapshot_num_sources(snap) ? "" : "; is snapshot.ini's [device_list] there?");
		else if (!csd_snapshot_num_buffers(snap))
			snprintf(why, sizeof(why), " (no trace buffer: snapshot.ini's [trace] metadata= and its file's "
						   "[trace_buffers] buffers= name them)");
		else if (!linked)
			snprintf(why, sizeof(why), " (none is in a buffer: trace.ini's [source_buffers] links them)");
	}
	csd_snapshot_free(snap);
	if (!decoded_any) {
		fprintf(stderr, "%s: %s: no ETMv3 or PTM trace source%s%s\n", prog, o->dir,
			o->any_id ? " with the requested ID" : ctx->skipped_sources ? " that could be decoded" : "", why);
		return EXIT_USAGE;
	}
	return cli_finish_status(ctx, io, kind == SLOT_FLOW);
}


int cli_run(struct options *o, struct run_ctx *ctx, enum slot_kind kind)
{
	if (!ctx->out)
		ctx->out = stdout;
	ctx->jobs = o->jobs ? o->jobs : jobs_default();
	ctx->jobs_default = !o->jobs;
	/* The text listing is one line per instruction (with its mnemonic). */
	int listing = kind == SLOT_FLOW && ctx->format == FMT_TEXT && !ctx->on_record;
	struct symtab *syms = NULL;
	if (listing) {
		o->insn = 1;
		syms = cli_load_symbols(o);
		print_text_begin(syms);
	}
	/* (A perf.data file decoded as raw trace would be noise without an
	 * error: its records and images are what make it decodable.) */
	if (o->trace && strcmp(o->trace, "-") != 0 && cli_is_perf_data(o->trace))
		die_usage("%s is a perf.data file: give it without --trace (csdec decode %s)", o->trace, o->trace);
	int perf = !o->trace && cli_is_perf_data(o->dir);
	struct stat st;
	if (!o->trace && !perf && strcmp(o->dir, "-") == 0)
		die_usage("give a snapshot directory or a perf.data file; standard input is read with --trace -");
	if (!o->trace && !perf && stat(o->dir, &st) == 0 && !S_ISDIR(st.st_mode))
		die_usage("%s is neither a snapshot directory nor a perf.data file (a raw capture is given with --trace "
			  "%s --protocol etm3|ptm)", o->dir, o->dir);
	if (!perf && (o->symfs || o->buildid_dir || o->vmlinux))
		die_usage("%s is for perf.data input", o->symfs ? "--symfs" : o->buildid_dir ? "--buildid-dir" : "--vmlinux");
	int rc = o->trace ? run_trace_file(o, ctx) : perf ? cli_run_perf(o, ctx, kind) : run_snapshot(o, ctx, kind);
	if (listing) {
		print_text_end();
		symtab_free(syms);
	}
	return rc;
}
