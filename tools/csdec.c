/*
 * csdec.c - the command-line tool. The only place in csdec that prints.
 *
 *   csdec packets <snapshot-dir> [--id ID]... [--format text|jsonl]
 *
 * Exit status: 0 clean, 1 the trace had errors (everything decodable was
 * still printed), 2 usage or I/O error.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "csdec.h"

#define EXIT_CLEAN 0
#define EXIT_TRACE_ERRORS 1
#define EXIT_USAGE 2

#define MAX_IDS 128
#define READ_CHUNK (256 * 1024)

enum out_format { FMT_TEXT, FMT_JSONL };

static const char *prog = "csdec";

static void die_usage(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, "\nTry '%s --help'.\n", prog);
	va_end(ap);
	exit(EXIT_USAGE);
}

static void die_io(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fprintf(stderr, "%s: ", prog);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(EXIT_USAGE);
}

/* ---------------------------------------------------------------------
 * Packet printing
 * ------------------------------------------------------------------- */

static void print_hex_bytes(FILE *out, const struct csd_packet *p, const char *sep)
{
	size_t n = p->size < CSD_PKT_RAW_MAX ? p->size : CSD_PKT_RAW_MAX;
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%02x", i && sep ? sep : "", p->raw[i]);
	if (p->size > CSD_PKT_RAW_MAX)
		fprintf(out, "%s", sep ? " ..." : "");
}

/* Atoms as letters, oldest first: ETMv3 cycle-accurate headers interleave W. */
static void atoms_string(const struct csd_packet *p, char *buf, size_t cap)
{
	const struct csd_atoms *a = &p->atoms;
	size_t k = 0;
	unsigned w = a->w;
	unsigned i;
#define PUT(c) do { if (k + 1 < cap) buf[k++] = (c); } while (0)
	if (p->type == CSD_PKT_PHEADER && w) {
		switch (a->format) {
		case 1: /* W before every instruction atom */
			for (i = 0; i < a->num; i++) {
				PUT('W');
				PUT((a->en >> i) & 1 ? 'E' : 'N');
			}
			w = 0;
			break;
		case 2: /* one W, then two atoms */
		case 0:
		case 3: /* W..W then at most one atom */
			for (i = 0; i < w; i++)
				PUT('W');
			w = 0;
			for (i = 0; i < a->num; i++)
				PUT((a->en >> i) & 1 ? 'E' : 'N');
			break;
		default:
			break;
		}
		if (k) {
			buf[k] = 0;
			return;
		}
	}
	for (i = 0; i < a->num; i++)
		PUT((a->en >> i) & 1 ? 'E' : 'N');
	for (i = 0; i < w; i++)
		PUT('W');
	buf[k] = 0;
#undef PUT
}

static void print_packet_text(FILE *out, uint8_t id, const struct csd_packet *p)
{
	char atoms[64];
	fprintf(out, "0x%02x %8" PRIu64 "  %-12s", id, p->offset, csd_pkt_type_name((int)p->type));
	switch (p->type) {
	case CSD_PKT_NOSYNC:
	case CSD_PKT_ASYNC:
	case CSD_PKT_IGNORE:
		fprintf(out, " %" PRIu32 " bytes", p->size);
		break;
	case CSD_PKT_ISYNC:
		if (p->flags & CSD_PKTF_DATA_ONLY)
			fprintf(out, " data-only");
		else
			fprintf(out, " addr=0x%08" PRIx32, p->addr);
		if (p->flags & CSD_PKTF_LSIP)
			fprintf(out, " lsip data_insn=0x%08" PRIx32, p->data_insn_addr);
		fprintf(out, " reason=%s", csd_reason_name(p->reason));
		break;
	case CSD_PKT_PHEADER:
	case CSD_PKT_ATOM:
		atoms_string(p, atoms, sizeof(atoms));
		fprintf(out, " %s", atoms);
		if (p->type == CSD_PKT_PHEADER)
			fprintf(out, " (format %u)", p->atoms.format);
		break;
	case CSD_PKT_BRANCH:
	case CSD_PKT_WAYPOINT:
		fprintf(out, " addr=0x%08" PRIx32 " (%u bytes)", p->addr, p->addr_bytes);
		if (p->flags & CSD_PKTF_EXCEPTION)
			fprintf(out, " exception=%u", p->exception);
		if (p->flags & CSD_PKTF_CANCEL)
			fprintf(out, " cancel");
		if (p->flags & CSD_PKTF_RESUME)
			fprintf(out, " resume");
		break;
	case CSD_PKT_CONTEXT_ID:
		fprintf(out, " 0x%08" PRIx32, p->context_id);
		break;
	case CSD_PKT_VMID:
		fprintf(out, " %u", p->vmid);
		break;
	case CSD_PKT_TIMESTAMP:
		fprintf(out, " %" PRIu64 " (0x%" PRIx64 ", %u bits)", p->timestamp, p->timestamp, p->ts_bits);
		break;
	case CSD_PKT_NORMAL_DATA:
	case CSD_PKT_OOO_DATA:
	case CSD_PKT_OOO_PLACEHOLDER:
	case CSD_PKT_VALUE_NOT_TRACED:
		if (p->tag)
			fprintf(out, " tag=%u", p->tag);
		if (p->flags & CSD_PKTF_DATA_ADDR)
			fprintf(out, " daddr=0x%08" PRIx32, p->data_addr);
		if (p->flags & CSD_PKTF_DATA_VALUE)
			fprintf(out, " value=0x%0*" PRIx32, 2 * (p->data_size ? p->data_size : 1), p->data_value);
		if (p->flags & CSD_PKTF_BIG_ENDIAN)
			fprintf(out, " be");
		break;
	case CSD_PKT_ERROR:
		fprintf(out, " %s", p->error ? p->error : "bad packet");
		break;
	default:
		break;
	}
	if ((p->flags & CSD_PKTF_ISA) && p->type != CSD_PKT_NOSYNC)
		fprintf(out, " isa=%s", csd_isa_name(p->isa));
	if (p->flags & CSD_PKTF_SECURITY)
		fprintf(out, " %s%s", p->flags & CSD_PKTF_NS ? "NS" : "S", p->flags & CSD_PKTF_HYP ? " hyp" : "");
	if (p->flags & CSD_PKTF_ALTISA)
		fprintf(out, " altisa");
	if ((p->flags & CSD_PKTF_CONTEXT_ID) && p->type != CSD_PKT_CONTEXT_ID)
		fprintf(out, " ctxid=0x%08" PRIx32, p->context_id);
	if (p->flags & CSD_PKTF_CYCLE_COUNT)
		fprintf(out, " cc=%" PRIu32, p->cycle_count);
	fprintf(out, "  [");
	print_hex_bytes(out, p, " ");
	fprintf(out, "]\n");
}

static void json_bool(FILE *out, const char *key, int v)
{
	fprintf(out, ",\"%s\":%s", key, v ? "true" : "false");
}

static void print_packet_json(FILE *out, uint8_t id, const struct csd_packet *p)
{
	char atoms[64];
	fprintf(out, "{\"packet\":\"%s\",\"id\":%u,\"offset\":%" PRIu64 ",\"size\":%" PRIu32 ",\"bytes\":\"",
		csd_pkt_type_name((int)p->type), id, p->offset, p->size);
	print_hex_bytes(out, p, NULL);
	fputc('"', out);
	switch (p->type) {
	case CSD_PKT_ISYNC:
		if (!(p->flags & CSD_PKTF_DATA_ONLY))
			fprintf(out, ",\"addr\":\"0x%08" PRIx32 "\"", p->addr);
		fprintf(out, ",\"reason\":\"%s\"", csd_reason_name(p->reason));
		if (p->flags & CSD_PKTF_LSIP)
			fprintf(out, ",\"lsip\":true,\"data_insn_addr\":\"0x%08" PRIx32 "\"", p->data_insn_addr);
		if (p->flags & CSD_PKTF_DATA_ONLY)
			json_bool(out, "data_only", 1);
		break;
	case CSD_PKT_PHEADER:
	case CSD_PKT_ATOM:
		atoms_string(p, atoms, sizeof(atoms));
		fprintf(out, ",\"atoms\":\"%s\",\"num\":%u", atoms, p->atoms.num);
		if (p->type == CSD_PKT_PHEADER)
			fprintf(out, ",\"w\":%u,\"format\":%u", p->atoms.w, p->atoms.format);
		break;
	case CSD_PKT_BRANCH:
	case CSD_PKT_WAYPOINT:
		fprintf(out, ",\"addr\":\"0x%08" PRIx32 "\",\"addr_bytes\":%u", p->addr, p->addr_bytes);
		if (p->flags & CSD_PKTF_EXCEPTION)
			fprintf(out, ",\"exception\":%u", p->exception);
		if (p->flags & CSD_PKTF_CANCEL)
			json_bool(out, "cancel", 1);
		if (p->flags & CSD_PKTF_RESUME)
			json_bool(out, "resume", 1);
		break;
	case CSD_PKT_CONTEXT_ID:
		fprintf(out, ",\"context_id\":\"0x%08" PRIx32 "\"", p->context_id);
		break;
	case CSD_PKT_VMID:
		fprintf(out, ",\"vmid\":%u", p->vmid);
		break;
	case CSD_PKT_TIMESTAMP:
		fprintf(out, ",\"timestamp\":%" PRIu64 ",\"ts_bits\":%u", p->timestamp, p->ts_bits);
		break;
	case CSD_PKT_NORMAL_DATA:
	case CSD_PKT_OOO_DATA:
	case CSD_PKT_OOO_PLACEHOLDER:
	case CSD_PKT_VALUE_NOT_TRACED:
		if (p->tag)
			fprintf(out, ",\"tag\":%u", p->tag);
		if (p->flags & CSD_PKTF_DATA_ADDR)
			fprintf(out, ",\"data_addr\":\"0x%08" PRIx32 "\"", p->data_addr);
		if (p->flags & CSD_PKTF_DATA_VALUE)
			fprintf(out, ",\"data_value\":\"0x%" PRIx32 "\",\"data_size\":%u", p->data_value, p->data_size);
		if (p->flags & CSD_PKTF_BIG_ENDIAN)
			json_bool(out, "big_endian", 1);
		break;
	case CSD_PKT_ERROR:
		fprintf(out, ",\"reason\":\"%s\"", p->error ? p->error : "bad packet");
		break;
	default:
		break;
	}
	if ((p->flags & CSD_PKTF_ISA) && p->type != CSD_PKT_NOSYNC)
		fprintf(out, ",\"isa\":\"%s\"", csd_isa_name(p->isa));
	if (p->flags & CSD_PKTF_SECURITY) {
		json_bool(out, "ns", p->flags & CSD_PKTF_NS);
		json_bool(out, "hyp", p->flags & CSD_PKTF_HYP);
	}
	if (p->flags & CSD_PKTF_ALTISA)
		json_bool(out, "altisa", 1);
	if ((p->flags & CSD_PKTF_CONTEXT_ID) && p->type != CSD_PKT_CONTEXT_ID)
		fprintf(out, ",\"context_id\":\"0x%08" PRIx32 "\"", p->context_id);
	if (p->flags & CSD_PKTF_CYCLE_COUNT)
		fprintf(out, ",\"cycle_count\":%" PRIu32, p->cycle_count);
	fputs("}\n", out);
}

/* ---------------------------------------------------------------------
 * Per-source packet decoding over one capture buffer
 * ------------------------------------------------------------------- */

struct source_slot {
	int protocol;
	uint8_t id;
	csd_etm3_pkt_decoder *etm3;
	csd_ptm_pkt_decoder *ptm;
	uint64_t packets;
	uint64_t errors;
};

struct packets_ctx {
	enum out_format format;
	FILE *out;
	struct source_slot *slot[MAX_IDS];
	uint64_t errors;
	uint64_t frame_errors;
};

static int slot_feed(struct source_slot *s, const struct csd_bytes *b)
{
	return s->protocol == CSD_PROTO_ETM3 ? csd_etm3_pkt_feed(s->etm3, b) : csd_ptm_pkt_feed(s->ptm, b);
}

static int slot_next(struct source_slot *s, struct csd_packet *p)
{
	return s->protocol == CSD_PROTO_ETM3 ? csd_etm3_pkt_next(s->etm3, p) : csd_ptm_pkt_next(s->ptm, p);
}

static int slot_finish(struct source_slot *s)
{
	return s->protocol == CSD_PROTO_ETM3 ? csd_etm3_pkt_finish(s->etm3) : csd_ptm_pkt_finish(s->ptm);
}

static void drain_slot(struct packets_ctx *ctx, struct source_slot *s)
{
	struct csd_packet p;
	int rc;
	while ((rc = slot_next(s, &p)) == 0) {
		s->packets++;
		if (p.type == CSD_PKT_ERROR) {
			s->errors++;
			ctx->errors++;
		}
		if (ctx->format == FMT_JSONL)
			print_packet_json(ctx->out, s->id, &p);
		else
			print_packet_text(ctx->out, s->id, &p);
	}
}

static void report_frame_error(struct packets_ctx *ctx, const struct csd_frame_out *fo)
{
	ctx->frame_errors++;
	if (ctx->format == FMT_JSONL)
		fprintf(ctx->out, "{\"packet\":\"frame_error\",\"offset\":%" PRIu64 ",\"reason\":\"%s\"}\n",
			fo->offset, fo->reason ? fo->reason : "bad frame");
	else
		fprintf(ctx->out, "---- %8" PRIu64 "  frame_error  %s\n", fo->offset, fo->reason ? fo->reason : "bad frame");
}

static void drain_frames(struct packets_ctx *ctx, csd_frame_decoder *fd)
{
	struct csd_frame_out fo;
	while (csd_frame_next(fd, &fo) == 0) {
		if (fo.event == CSD_FRAME_ERROR) {
			report_frame_error(ctx, &fo);
			continue;
		}
		if (fo.event != CSD_FRAME_DATA || fo.bytes.id >= MAX_IDS)
			continue;
		struct source_slot *s = ctx->slot[fo.bytes.id];
		if (!s)
			continue;
		if (slot_feed(s, &fo.bytes) == 0)
			drain_slot(ctx, s);
	}
}

/* Decode every selected source of one buffer file. Returns 0 or -1 on I/O error. */
static int packets_buffer(struct packets_ctx *ctx, const struct csd_snapshot_buffer *buf, uint8_t raw_id)
{
	FILE *f = fopen(buf->path, "rb");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, buf->path, strerror(errno));
		return -1;
	}
	struct csd_frame_config fc = { .size = sizeof(fc), .format = buf->frame_format, .raw_id = raw_id };
	csd_frame_decoder *fd = csd_frame_new(&fc);
	uint8_t *chunk = malloc(READ_CHUNK);
	if (!fd || !chunk) {
		fprintf(stderr, "%s: out of memory\n", prog);
		fclose(f);
		csd_frame_free(fd);
		free(chunk);
		return -1;
	}
	uint64_t off = 0;
	size_t n;
	int rc = 0;
	while ((n = fread(chunk, 1, READ_CHUNK, f)) > 0) {
		csd_frame_feed(fd, chunk, n, off);
		drain_frames(ctx, fd);
		off += n;
	}
	if (ferror(f)) {
		fprintf(stderr, "%s: %s: read error\n", prog, buf->path);
		rc = -1;
	}
	csd_frame_finish(fd);
	drain_frames(ctx, fd);
	for (int id = 0; id < MAX_IDS; id++) {
		struct source_slot *s = ctx->slot[id];
		if (s) {
			slot_finish(s);
			drain_slot(ctx, s);
		}
	}
	csd_frame_free(fd);
	free(chunk);
	fclose(f);
	return rc;
}

/* ---------------------------------------------------------------------
 * Command line
 * ------------------------------------------------------------------- */

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: csdec <command> [options]\n"
		"\n"
		"Decode ARM CoreSight ETMv3 and PTM program-flow trace.\n"
		"\n"
		"Commands:\n"
		"  packets <snapshot-dir>   list every packet of every trace source\n"
		"\n"
		"Run 'csdec <command> --help' for the options of a command.\n"
		"  --version                print the version\n");
}

static void usage_packets(FILE *out)
{
	fprintf(out,
		"Usage: csdec packets <snapshot-dir> [--id ID]... [--format text|jsonl]\n"
		"\n"
		"List the packets of each ETMv3 / PTM trace source of a CoreSight snapshot,\n"
		"with the capture offset and raw bytes of each packet.\n"
		"\n"
		"  --id ID          only this trace ID (decimal or 0x hex); may be repeated\n"
		"  --format FMT     text (default): one line per packet\n"
		"                   jsonl: one JSON object per packet, with at least\n"
		"                   \"packet\" (kind), \"id\", \"offset\" and the decoded fields\n"
		"\n"
		"Exit status: 0 clean, 1 the trace had errors (all decodable packets were\n"
		"still printed), 2 usage or I/O error.\n");
}

static int parse_id(const char *s)
{
	char *end;
	errno = 0;
	unsigned long v = strtoul(s, &end, 0);
	if (errno || *s == 0 || *end != 0 || v == 0 || v >= 0x70)
		die_usage("bad trace ID '%s' (expected 1..0x6f)", s);
	return (int)v;
}

static enum out_format parse_format(const char *s)
{
	if (strcmp(s, "text") == 0)
		return FMT_TEXT;
	if (strcmp(s, "jsonl") == 0)
		return FMT_JSONL;
	die_usage("unknown format '%s' (expected text or jsonl)", s);
	return FMT_TEXT;
}

static int cmd_packets(int argc, char **argv)
{
	const char *dir = NULL;
	int want[MAX_IDS] = { 0 };
	int any_id = 0;
	struct packets_ctx ctx;
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = FMT_TEXT;
	ctx.out = stdout;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			usage_packets(stdout);
			return EXIT_CLEAN;
		} else if (strcmp(a, "--id") == 0) {
			if (++i >= argc)
				die_usage("--id needs a value");
			want[parse_id(argv[i])] = 1;
			any_id = 1;
		} else if (strncmp(a, "--id=", 5) == 0) {
			want[parse_id(a + 5)] = 1;
			any_id = 1;
		} else if (strcmp(a, "--format") == 0) {
			if (++i >= argc)
				die_usage("--format needs a value");
			ctx.format = parse_format(argv[i]);
		} else if (strncmp(a, "--format=", 9) == 0) {
			ctx.format = parse_format(a + 9);
		} else if (a[0] == '-' && a[1]) {
			die_usage("unknown option '%s'", a);
		} else if (!dir) {
			dir = a;
		} else {
			die_usage("unexpected argument '%s'", a);
		}
	}
	if (!dir)
		die_usage("packets: missing <snapshot-dir>");

	char err[512] = "";
	csd_snapshot *snap = NULL;
	int rc = csd_snapshot_open(dir, &snap, err, sizeof(err));
	if (rc < 0)
		die_io("%s", err[0] ? err : csd_errstr(rc));

	int status = EXIT_CLEAN;
	int decoded_any = 0;
	for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++) {
		const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, b);
		struct source_slot slots[MAX_IDS];
		int nslots = 0;
		uint8_t raw_id = 0;
		memset(ctx.slot, 0, sizeof(ctx.slot));
		for (size_t s = 0; s < csd_snapshot_num_sources(snap); s++) {
			const struct csd_snapshot_source *src = csd_snapshot_source(snap, s);
			uint8_t id = src->config.trace_id;
			if (src->buffer != (int)b || id >= MAX_IDS)
				continue;
			if (src->config.protocol != CSD_PROTO_ETM3 && src->config.protocol != CSD_PROTO_PTM)
				continue;
			if (any_id && !want[id])
				continue;
			if (ctx.slot[id])
				continue; /* two sources claim one ID: the first wins */
			struct source_slot *sl = &slots[nslots++];
			memset(sl, 0, sizeof(*sl));
			sl->protocol = (int)src->config.protocol;
			sl->id = id;
			if (sl->protocol == CSD_PROTO_ETM3)
				sl->etm3 = csd_etm3_pkt_new(&src->config);
			else
				sl->ptm = csd_ptm_pkt_new(&src->config);
			if (!sl->etm3 && !sl->ptm)
				die_io("cannot create a decoder for source %s", src->name);
			ctx.slot[id] = sl;
			raw_id = id;
		}
		if (nslots == 0)
			continue;
		decoded_any = 1;
		if (packets_buffer(&ctx, buf, raw_id) < 0)
			status = EXIT_USAGE;
		for (int i = 0; i < nslots; i++) {
			csd_etm3_pkt_free(slots[i].etm3);
			csd_ptm_pkt_free(slots[i].ptm);
		}
	}
	csd_snapshot_free(snap);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: write error\n", prog);
		return EXIT_USAGE;
	}
	if (!decoded_any) {
		fprintf(stderr, "%s: %s: no ETMv3 or PTM trace source%s\n", prog, dir, any_id ? " with the requested ID" : "");
		return EXIT_USAGE;
	}
	if (status == EXIT_CLEAN && (ctx.errors || ctx.frame_errors))
		status = EXIT_TRACE_ERRORS;
	return status;
}

int main(int argc, char **argv)
{
	if (argc < 2) {
		usage(stderr);
		return EXIT_USAGE;
	}
	const char *cmd = argv[1];
	if (strcmp(cmd, "--help") == 0 || strcmp(cmd, "-h") == 0 || strcmp(cmd, "help") == 0) {
		usage(stdout);
		return EXIT_CLEAN;
	}
	if (strcmp(cmd, "--version") == 0) {
		printf("csdec %s\n", csd_version());
		return EXIT_CLEAN;
	}
	if (strcmp(cmd, "packets") == 0)
		return cmd_packets(argc - 1, argv + 1);
	die_usage("unknown command '%s'", cmd);
	return EXIT_USAGE;
}
