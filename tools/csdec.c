/*
 * csdec.c - the command-line tool. The only place in csdec that prints.
 *
 *   csdec packets <snapshot-dir> [--id ID]... [--format text|jsonl]
 *   csdec decode  <snapshot-dir> [--id ID]... [--format text|jsonl|none] [--insn]
 *   csdec decode  --trace FILE --protocol etm3|ptm [--formatted] [--trace-id ID]
 *                 [--reg NAME=VALUE]... [--image FILE@ADDR]... [--elf FILE[@BIAS]]...
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
#include <strings.h>

#include "csdec.h"

#define EXIT_CLEAN 0
#define EXIT_TRACE_ERRORS 1
#define EXIT_USAGE 2

#define MAX_IDS 128
#define MAX_LIST 64
#define READ_CHUNK (1024 * 1024)

enum out_format { FMT_TEXT, FMT_JSONL, FMT_NONE };

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
	if (p->size > CSD_PKT_RAW_MAX && sep)
		fputs(" ...", out);
}

/* Atoms as letters, oldest first; ETMv3 cycle-accurate headers show their
 * W (cycle) atoms where they fall (IHI 0014 table 7.3). */
static void atoms_string(const struct csd_packet *p, char *buf, size_t cap)
{
	const struct csd_atoms *a = &p->atoms;
	size_t k = 0;
	unsigned i;
#define PUT(c) do { if (k + 1 < cap) buf[k++] = (c); } while (0)
	if (p->type == CSD_PKT_PHEADER && a->format == 1 && a->w) {
		for (i = 0; i < a->num; i++) {
			PUT('W');
			PUT((a->en >> i) & 1 ? 'E' : 'N');
		}
	} else {
		for (i = 0; i < a->w; i++)
			PUT('W');
		for (i = 0; i < a->num; i++)
			PUT((a->en >> i) & 1 ? 'E' : 'N');
	}
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
	case CSD_PKT_CYCLE_COUNT:
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
	fputs("  [", out);
	print_hex_bytes(out, p, " ");
	fputs("]\n", out);
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
 * Record printing
 * ------------------------------------------------------------------- */

struct source_slot;
static void print_record_text(FILE *out, const struct source_slot *s, const struct csd_record *r);
static void print_record_json(FILE *out, const struct source_slot *s, const struct csd_record *r);

/* ---------------------------------------------------------------------
 * Sources: one decoder per trace ID of a capture buffer
 * ------------------------------------------------------------------- */

enum slot_kind { SLOT_PACKETS, SLOT_FLOW };

struct source_slot {
	int kind;
	uint8_t id;
	struct csd_trace_config cfg;
	csd_etm3_pkt_decoder *etm3;
	csd_ptm_pkt_decoder *ptm;
	csd_flow_decoder *flow;
	uint64_t items;
	uint64_t insns;
	uint64_t errors;
};

struct run_ctx {
	enum out_format format;
	FILE *out;
	struct source_slot *slot[MAX_IDS];
	uint64_t items;
	uint64_t insns;
	uint64_t errors;
	uint64_t frame_errors;
};

static int slot_feed(struct source_slot *s, const struct csd_bytes *b)
{
	if (s->flow)
		return csd_flow_feed(s->flow, b);
	return s->etm3 ? csd_etm3_pkt_feed(s->etm3, b) : csd_ptm_pkt_feed(s->ptm, b);
}

static void slot_finish(struct source_slot *s)
{
	if (s->flow)
		csd_flow_finish(s->flow);
	else if (s->etm3)
		csd_etm3_pkt_finish(s->etm3);
	else
		csd_ptm_pkt_finish(s->ptm);
}

static void drain_slot(struct run_ctx *ctx, struct source_slot *s)
{
	if (s->flow) {
		struct csd_record r;
		while (csd_flow_next(s->flow, &r) == 0) {
			s->items++;
			if (r.type == CSD_REC_INSN)
				s->insns++;
			else if (r.type == CSD_REC_RANGE)
				s->insns += r.count;
			else if (r.type == CSD_REC_ERROR)
				s->errors++;
			if (ctx->format == FMT_JSONL)
				print_record_json(ctx->out, s, &r);
			else if (ctx->format == FMT_TEXT)
				print_record_text(ctx->out, s, &r);
		}
		return;
	}
	struct csd_packet p;
	while ((s->etm3 ? csd_etm3_pkt_next(s->etm3, &p) : csd_ptm_pkt_next(s->ptm, &p)) == 0) {
		s->items++;
		if (p.type == CSD_PKT_ERROR)
			s->errors++;
		if (ctx->format == FMT_JSONL)
			print_packet_json(ctx->out, s->id, &p);
		else if (ctx->format == FMT_TEXT)
			print_packet_text(ctx->out, s->id, &p);
	}
}

static void report_frame_error(struct run_ctx *ctx, const struct csd_frame_out *fo)
{
	const char *why = fo->reason ? fo->reason : "bad frame";
	ctx->frame_errors++;
	if (ctx->format == FMT_JSONL)
		fprintf(ctx->out, "{\"type\":\"frame_error\",\"packet\":\"frame_error\",\"offset\":%" PRIu64
			",\"reason\":\"%s\"}\n", fo->offset, why);
	else if (ctx->format == FMT_TEXT)
		fprintf(ctx->out, "---- %8" PRIu64 "  frame_error  %s\n", fo->offset, why);
}

static void drain_frames(struct run_ctx *ctx, csd_frame_decoder *fd)
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
		if (s && slot_feed(s, &fo.bytes) == 0)
			drain_slot(ctx, s);
	}
}

/* Decode every slot of one capture file. Returns 0 or -1 on I/O error. */
static int run_buffer(struct run_ctx *ctx, const char *path, uint32_t frame_format, uint8_t raw_id)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "%s: %s: %s\n", prog, path, strerror(errno));
		return -1;
	}
	struct csd_frame_config fc = { .size = sizeof(fc), .format = frame_format, .raw_id = raw_id };
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
		fprintf(stderr, "%s: %s: read error\n", prog, path);
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
 * Record printing (needs struct source_slot)
 * ------------------------------------------------------------------- */

static const char *exc_name(const struct source_slot *s, unsigned n)
{
	return csd_exception_name(&s->cfg, n);
}

static void print_record_text(FILE *out, const struct source_slot *s, const struct csd_record *r)
{
	fprintf(out, "0x%02x ", s->id);
	switch (r->type) {
	case CSD_REC_INSN:
		fprintf(out, "  0x%08" PRIx64 "  %-3s  %0*" PRIx32 "  %-7s", r->addr, csd_isa_name(r->isa),
			r->size == 2 ? 4 : 8, r->opcode, csd_cond_name(r->cond));
		if (r->flags & CSD_RECF_CYCLES)
			fprintf(out, " cyc=%" PRIu64, r->cycles);
		if (r->flags & CSD_RECF_BRANCH)
			fprintf(out, " %s", r->flags & CSD_RECF_TAKEN ? "taken" : "not-taken");
		break;
	case CSD_REC_RANGE:
		fprintf(out, "range 0x%08" PRIx64 "-0x%08" PRIx64 " %4" PRIu32 " insns %-3s last=0x%08" PRIx64 " %s",
			r->addr, r->end, r->count, csd_isa_name(r->isa), r->last, csd_cond_name(r->cond));
		if (r->flags & CSD_RECF_CYCLES)
			fprintf(out, " cyc=%" PRIu64, r->cycles);
		if (r->flags & CSD_RECF_BRANCH)
			fprintf(out, " %s", r->flags & CSD_RECF_TAKEN ? "taken" : "not-taken");
		break;
	case CSD_REC_EXCEPTION:
		fprintf(out, "exception %s (%u) return=0x%08" PRIx64 " vector=0x%08" PRIx64 "%s", exc_name(s, r->exception),
			r->exception, r->addr, r->target, r->flags & CSD_RECF_CANCELLED ? " cancelled" : "");
		break;
	case CSD_REC_EXCEPTION_RETURN:
		fputs("exception return", out);
		break;
	case CSD_REC_TRACE_ON:
		fprintf(out, "trace on (%s) at 0x%08" PRIx64 " %s", csd_reason_name(r->reason), r->addr,
			csd_isa_name(r->isa));
		break;
	case CSD_REC_CONTEXT:
		fprintf(out, "context %s %s%s", csd_isa_name(r->isa), r->flags & CSD_RECF_NS ? "NS" : "S",
			r->flags & CSD_RECF_HYP ? " hyp" : "");
		if (r->flags & CSD_RECF_CONTEXT_ID)
			fprintf(out, " ctxid=0x%08" PRIx32, r->context_id);
		if (r->flags & CSD_RECF_VMID)
			fprintf(out, " vmid=%u", r->vmid);
		break;
	case CSD_REC_TIMESTAMP:
		fprintf(out, "timestamp %" PRIu64, r->timestamp);
		if (r->flags & CSD_RECF_CYCLES)
			fprintf(out, " cyc=%" PRIu64, r->cycles);
		break;
	case CSD_REC_CYCLE_COUNT:
		fprintf(out, "cycle count %" PRIu64, r->cycles);
		break;
	case CSD_REC_NO_MEMORY:
		if (r->error)
			fprintf(out, "unknown address: %" PRIu32 " atoms lost", r->count);
		else
			fprintf(out, "memory not accessible at 0x%08" PRIx64 " (%" PRIu32 " atoms)", r->addr, r->count);
		if (r->flags & CSD_RECF_CYCLES)
			fprintf(out, " cyc=%" PRIu64, r->cycles);
		break;
	case CSD_REC_NOSYNC:
		fprintf(out, "no sync: %" PRIu32 " bytes at offset %" PRIu64, r->size, r->offset);
		break;
	case CSD_REC_ISA_UNSUPPORTED:
		fprintf(out, "cannot follow %s code at 0x%08" PRIx64, csd_isa_name(r->isa), r->addr);
		break;
	case CSD_REC_ERROR:
		fprintf(out, "error at offset %" PRIu64 ": %s", r->offset, r->error ? r->error : "bad trace");
		break;
	case CSD_REC_TRIGGER:
		fputs("trigger", out);
		break;
	default:
		fprintf(out, "%s", csd_rec_type_name((int)r->type));
		break;
	}
	fputc('\n', out);
}

static void print_record_json(FILE *out, const struct source_slot *s, const struct csd_record *r)
{
	if (r->type == CSD_REC_INSN) {
		/* The hot path: keep it lean. */
		fprintf(out, "{\"type\":\"insn\",\"id\":%u,\"addr\":\"0x%08" PRIx64 "\",\"isa\":\"%s\",\"size\":%" PRIu32
			",\"opcode\":\"0x%0*" PRIx32 "\",\"cond\":\"%s\"",
			s->id, r->addr, csd_isa_name(r->isa), r->size, r->size == 2 ? 4 : 8, r->opcode,
			csd_cond_name(r->cond));
		if (r->flags & CSD_RECF_CYCLES)
			fprintf(out, ",\"cycles\":%" PRIu64, r->cycles);
		fputs("}\n", out);
		return;
	}
	fprintf(out, "{\"type\":\"%s\",\"id\":%u,\"offset\":%" PRIu64, csd_rec_type_name((int)r->type), s->id, r->offset);
	switch (r->type) {
	case CSD_REC_RANGE:
		fprintf(out, ",\"addr\":\"0x%08" PRIx64 "\",\"end\":\"0x%08" PRIx64 "\",\"last\":\"0x%08" PRIx64
			"\",\"count\":%" PRIu32 ",\"isa\":\"%s\",\"cond\":\"%s\"",
			r->addr, r->end, r->last, r->count, csd_isa_name(r->isa), csd_cond_name(r->cond));
		if (r->flags & CSD_RECF_BRANCH)
			json_bool(out, "taken", r->flags & CSD_RECF_TAKEN);
		break;
	case CSD_REC_EXCEPTION:
		fprintf(out, ",\"number\":%u,\"name\":\"%s\",\"return\":\"0x%08" PRIx64 "\",\"target\":\"0x%08" PRIx64 "\"",
			r->exception, exc_name(s, r->exception), r->addr, r->target);
		json_bool(out, "cancelled", r->flags & CSD_RECF_CANCELLED);
		break;
	case CSD_REC_TRACE_ON:
		fprintf(out, ",\"reason\":\"%s\",\"addr\":\"0x%08" PRIx64 "\",\"isa\":\"%s\"", csd_reason_name(r->reason),
			r->addr, csd_isa_name(r->isa));
		break;
	case CSD_REC_CONTEXT:
		fprintf(out, ",\"isa\":\"%s\"", csd_isa_name(r->isa));
		json_bool(out, "ns", r->flags & CSD_RECF_NS);
		json_bool(out, "hyp", r->flags & CSD_RECF_HYP);
		if (r->flags & CSD_RECF_CONTEXT_ID)
			fprintf(out, ",\"context_id\":\"0x%08" PRIx32 "\"", r->context_id);
		if (r->flags & CSD_RECF_VMID)
			fprintf(out, ",\"vmid\":%u", r->vmid);
		break;
	case CSD_REC_TIMESTAMP:
		fprintf(out, ",\"timestamp\":%" PRIu64, r->timestamp);
		break;
	case CSD_REC_NO_MEMORY:
		if (!r->error)
			fprintf(out, ",\"addr\":\"0x%08" PRIx64 "\"", r->addr);
		fprintf(out, ",\"count\":%" PRIu32, r->count);
		break;
	case CSD_REC_NOSYNC:
		fprintf(out, ",\"size\":%" PRIu32, r->size);
		break;
	case CSD_REC_ISA_UNSUPPORTED:
		fprintf(out, ",\"addr\":\"0x%08" PRIx64 "\",\"isa\":\"%s\"", r->addr, csd_isa_name(r->isa));
		break;
	case CSD_REC_ERROR:
		fprintf(out, ",\"reason\":\"%s\"", r->error ? r->error : "bad trace");
		break;
	default:
		break;
	}
	if (r->flags & CSD_RECF_CYCLES)
		fprintf(out, ",\"cycles\":%" PRIu64, r->cycles);
	fputs("}\n", out);
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
		"  decode  <snapshot-dir>   the executed instructions, with exceptions, cycles\n"
		"                           and context (also: decode --trace FILE ...)\n"
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

static void usage_decode(FILE *out)
{
	fprintf(out,
		"Usage: csdec decode <snapshot-dir> [--id ID]... [--format text|jsonl|none] [--insn]\n"
		"       csdec decode --trace FILE --protocol etm3|ptm [--formatted] [--trace-id ID]\n"
		"                    [--reg NAME=VALUE]... [--image FILE@ADDR]... [--elf FILE[@BIAS]]...\n"
		"\n"
		"Decode trace into the instructions the core executed, with exceptions,\n"
		"cycle counts, timestamps and context changes.\n"
		"\n"
		"  --id ID            only this trace ID; may be repeated\n"
		"  --format FMT       text (default), jsonl (one JSON object per record, with\n"
		"                     \"type\"), or none (decode all, print one summary line)\n"
		"  --insn             one record per instruction instead of ranges:\n"
		"                     {\"type\":\"insn\",\"addr\":\"0x...\",\"isa\":\"A32|T32|...\",\n"
		"                      \"size\":N,\"cond\":\"pass|fail|unknown\",\"cycles\":N}\n"
		"Without a snapshot:\n"
		"  --trace FILE       the captured trace\n"
		"  --protocol P       etm3 or ptm\n"
		"  --formatted        FILE holds 16-byte CoreSight formatter frames (ETB/ETR);\n"
		"                     --formatted=port for a TPIU/DSTREAM capture with syncs\n"
		"  --trace-id ID      the source's trace ID (default 0x10)\n"
		"  --reg NAME=VALUE   ETMCR, ETMCCER, ETMIDR (the registers during capture)\n"
		"Program image (with or without a snapshot):\n"
		"  --image FILE@ADDR  a raw binary loaded at ADDR; may be repeated\n"
		"  --elf FILE[@BIAS]  the PT_LOAD segments of an ELF file, moved by BIAS\n"
		"\n"
		"Exit status: 0 clean, 1 the trace had errors (everything decodable was\n"
		"still printed), 2 usage or I/O error.\n");
}

static uint64_t parse_number(const char *s, const char *what)
{
	char *end;
	errno = 0;
	unsigned long long v = strtoull(s, &end, 0);
	if (errno || *s == 0 || *end != 0 || *s == '-')
		die_usage("bad %s '%s'", what, s);
	return v;
}

static int parse_id(const char *s)
{
	uint64_t v = parse_number(s, "trace ID");
	if (v == 0 || v >= 0x70)
		die_usage("bad trace ID '%s' (expected 1..0x6f)", s);
	return (int)v;
}

static enum out_format parse_format(const char *s, int allow_none)
{
	if (strcmp(s, "text") == 0)
		return FMT_TEXT;
	if (strcmp(s, "jsonl") == 0)
		return FMT_JSONL;
	if (allow_none && strcmp(s, "none") == 0)
		return FMT_NONE;
	die_usage("unknown format '%s' (expected text, jsonl%s)", s, allow_none ? " or none" : "");
	return FMT_TEXT;
}

/* Options shared by packets and decode. */
struct options {
	const char *dir;
	int want[MAX_IDS];
	int any_id;
	enum out_format format;
	int insn;
	/* decode without a snapshot */
	const char *trace;
	int protocol;
	uint32_t frame_format;
	int trace_id;
	uint32_t etmcr, etmccer, etmidr;
	int have_etmidr;
	const char *images[MAX_LIST];
	int n_images;
	const char *elfs[MAX_LIST];
	int n_elfs;
};

/* "--name value" or "--name=value": returns the value or NULL. */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	const char *a = argv[*i];
	if (strncmp(a, name, n) != 0)
		return NULL;
	if (a[n] == '=')
		return a + n + 1;
	if (a[n] != 0)
		return NULL;
	if (*i + 1 >= argc)
		die_usage("%s needs a value", name);
	return argv[++*i];
}

static void parse_reg(struct options *o, const char *s)
{
	const char *eq = strchr(s, '=');
	if (!eq)
		die_usage("--reg expects NAME=VALUE, got '%s'", s);
	size_t n = (size_t)(eq - s);
	uint32_t v = (uint32_t)parse_number(eq + 1, "register value");
	if (n == 5 && strncasecmp(s, "ETMCR", 5) == 0)
		o->etmcr = v;
	else if (n == 7 && strncasecmp(s, "ETMCCER", 7) == 0)
		o->etmccer = v;
	else if (n == 6 && strncasecmp(s, "ETMIDR", 6) == 0) {
		o->etmidr = v;
		o->have_etmidr = 1;
	} else if (n == 11 && strncasecmp(s, "ETMTRACEIDR", 11) == 0)
		o->trace_id = (int)(v & 0x7f);
	else
		die_usage("unknown register in --reg '%s' (ETMCR, ETMCCER, ETMIDR, ETMTRACEIDR)", s);
}

static void parse_options(int argc, char **argv, struct options *o, int decode)
{
	const char *v;
	memset(o, 0, sizeof(*o));
	o->format = FMT_TEXT;
	o->trace_id = -1;
	o->frame_format = CSD_FRAME_RAW;
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
			decode ? usage_decode(stdout) : usage_packets(stdout);
			exit(EXIT_CLEAN);
		} else if ((v = opt_value(argc, argv, &i, "--id"))) {
			o->want[parse_id(v)] = 1;
			o->any_id = 1;
		} else if ((v = opt_value(argc, argv, &i, "--format"))) {
			o->format = parse_format(v, decode);
		} else if (decode && strcmp(a, "--insn") == 0) {
			o->insn = 1;
		} else if (decode && (v = opt_value(argc, argv, &i, "--trace"))) {
			o->trace = v;
		} else if (decode && (v = opt_value(argc, argv, &i, "--protocol"))) {
			if (strcasecmp(v, "etm3") == 0 || strcasecmp(v, "etmv3") == 0)
				o->protocol = CSD_PROTO_ETM3;
			else if (strcasecmp(v, "ptm") == 0 || strcasecmp(v, "pft") == 0)
				o->protocol = CSD_PROTO_PTM;
			else
				die_usage("unknown protocol '%s' (expected etm3 or ptm)", v);
		} else if (decode && strcmp(a, "--formatted") == 0) {
			o->frame_format = CSD_FRAME_ALIGNED;
		} else if (decode && strcmp(a, "--formatted=port") == 0) {
			o->frame_format = CSD_FRAME_PORT;
		} else if (decode && strcmp(a, "--formatted=aligned") == 0) {
			o->frame_format = CSD_FRAME_ALIGNED;
		} else if (decode && (v = opt_value(argc, argv, &i, "--trace-id"))) {
			o->trace_id = parse_id(v);
		} else if (decode && (v = opt_value(argc, argv, &i, "--reg"))) {
			parse_reg(o, v);
		} else if (decode && (v = opt_value(argc, argv, &i, "--image"))) {
			if (o->n_images == MAX_LIST)
				die_usage("too many --image options");
			if (!strchr(v, '@'))
				die_usage("--image expects FILE@ADDR, got '%s'", v);
			o->images[o->n_images++] = v;
		} else if (decode && (v = opt_value(argc, argv, &i, "--elf"))) {
			if (o->n_elfs == MAX_LIST)
				die_usage("too many --elf options");
			o->elfs[o->n_elfs++] = v;
		} else if (a[0] == '-' && a[1]) {
			die_usage("unknown option '%s'", a);
		} else if (!o->dir) {
			o->dir = a;
		} else {
			die_usage("unexpected argument '%s'", a);
		}
	}
	if (o->trace && o->dir)
		die_usage("give either a snapshot directory or --trace, not both");
	if (!o->trace && !o->dir)
		die_usage("%s: missing <snapshot-dir>%s", decode ? "decode" : "packets", decode ? " or --trace FILE" : "");
	if (o->trace && !o->protocol)
		die_usage("--trace needs --protocol etm3|ptm");
}

/* "FILE@NUMBER": split at the last '@'. */
static uint64_t split_at(const char *spec, char *path, size_t cap, const char *what, int required)
{
	const char *at = strrchr(spec, '@');
	if (!at) {
		if (required)
			die_usage("%s expects FILE@ADDR", what);
		snprintf(path, cap, "%s", spec);
		return 0;
	}
	size_t n = (size_t)(at - spec);
	if (n >= cap)
		die_usage("%s: path too long", what);
	memcpy(path, spec, n);
	path[n] = 0;
	return parse_number(at + 1, what);
}

static void load_extra_images(const struct options *o, csd_image *img)
{
	char path[4096];
	for (int i = 0; i < o->n_images; i++) {
		uint64_t addr = split_at(o->images[i], path, sizeof(path), "--image", 1);
		int rc = csd_image_add_file(img, path, 0, 0, addr);
		if (rc < 0)
			die_io("%s: %s", path, csd_errstr(rc));
	}
	for (int i = 0; i < o->n_elfs; i++) {
		uint64_t bias = split_at(o->elfs[i], path, sizeof(path), "--elf", 0);
		int rc = csd_image_add_elf(img, path, (int64_t)bias);
		if (rc < 0)
			die_io("%s: %s", path, csd_errstr(rc));
	}
}

static void slot_free(struct source_slot *s)
{
	csd_etm3_pkt_free(s->etm3);
	csd_ptm_pkt_free(s->ptm);
	csd_flow_free(s->flow);
}

static int slot_init(struct source_slot *s, int kind, const struct csd_trace_config *cfg, csd_image *img, int insn)
{
	memset(s, 0, sizeof(*s));
	s->kind = kind;
	s->cfg = *cfg;
	s->id = cfg->trace_id;
	if (kind == SLOT_FLOW) {
		struct csd_flow_config fc;
		memset(&fc, 0, sizeof(fc));
		fc.size = sizeof(fc);
		fc.trace = *cfg;
		fc.image = img;
		fc.flags = insn ? CSD_FLOW_INSN : 0;
		s->flow = csd_flow_new(&fc);
		return s->flow ? 0 : -1;
	}
	if (cfg->protocol == CSD_PROTO_ETM3)
		s->etm3 = csd_etm3_pkt_new(cfg);
	else
		s->ptm = csd_ptm_pkt_new(cfg);
	return s->etm3 || s->ptm ? 0 : -1;
}

static void add_totals(struct run_ctx *ctx, const struct source_slot *s)
{
	ctx->items += s->items;
	ctx->insns += s->insns;
	ctx->errors += s->errors;
}

static int finish_status(struct run_ctx *ctx, int io_failed, int decode)
{
	if (ctx->format == FMT_NONE)
		printf("%s%" PRIu64 " instructions, %" PRIu64 " records, %" PRIu64 " errors\n", decode ? "" : "",
		       ctx->insns, ctx->items, ctx->errors + ctx->frame_errors);
	if (fflush(stdout) != 0 || ferror(stdout)) {
		fprintf(stderr, "%s: write error\n", prog);
		return EXIT_USAGE;
	}
	if (io_failed)
		return EXIT_USAGE;
	return ctx->errors || ctx->frame_errors ? EXIT_TRACE_ERRORS : EXIT_CLEAN;
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
	csd_image *img = csd_image_new();
	if (!img)
		die_io("out of memory");
	load_extra_images(o, img);
	struct source_slot slot;
	if (slot_init(&slot, SLOT_FLOW, &cfg, img, o->insn) < 0)
		die_io("cannot create a decoder for this configuration");
	ctx->slot[cfg.trace_id] = &slot;
	int io = run_buffer(ctx, o->trace, o->frame_format, cfg.trace_id) < 0;
	add_totals(ctx, &slot);
	slot_free(&slot);
	csd_image_free(img);
	return finish_status(ctx, io, 1);
}

static int run_snapshot(struct options *o, struct run_ctx *ctx, int kind)
{
	char err[512] = "";
	csd_snapshot *snap = NULL;
	int rc = csd_snapshot_open(o->dir, &snap, err, sizeof(err));
	if (rc < 0)
		die_io("%s", err[0] ? err : csd_errstr(rc));

	int io = 0, decoded_any = 0;
	for (size_t b = 0; b < csd_snapshot_num_buffers(snap); b++) {
		const struct csd_snapshot_buffer *buf = csd_snapshot_buffer(snap, b);
		struct source_slot slots[MAX_IDS];
		csd_image *images[MAX_IDS];
		int nslots = 0;
		uint8_t raw_id = 0;
		memset(ctx->slot, 0, sizeof(ctx->slot));
		for (size_t si = 0; si < csd_snapshot_num_sources(snap); si++) {
			const struct csd_snapshot_source *src = csd_snapshot_source(snap, si);
			uint8_t id = src->config.trace_id;
			if (src->buffer != (int)b || id == 0 || id >= MAX_IDS || ctx->slot[id])
				continue;
			if (src->config.protocol != CSD_PROTO_ETM3 && src->config.protocol != CSD_PROTO_PTM)
				continue;
			if (o->any_id && !o->want[id])
				continue;
			csd_image *img = NULL;
			if (kind == SLOT_FLOW) {
				img = csd_image_new();
				if (!img)
					die_io("out of memory");
				int lr = csd_snapshot_load_image(snap, src->core_name, img);
				if (lr < 0)
					die_io("%s: memory dump of %s: %s", o->dir, src->core_name ? src->core_name : "?",
					       csd_errstr(lr));
				load_extra_images(o, img);
			}
			images[nslots] = img;
			if (slot_init(&slots[nslots], kind, &src->config, img, o->insn) < 0)
				die_io("cannot create a decoder for source %s", src->name);
			ctx->slot[id] = &slots[nslots];
			nslots++;
			raw_id = id;
		}
		if (nslots == 0)
			continue;
		decoded_any = 1;
		if (run_buffer(ctx, buf->path, buf->frame_format, raw_id) < 0)
			io = 1;
		for (int i = 0; i < nslots; i++) {
			add_totals(ctx, &slots[i]);
			slot_free(&slots[i]);
			csd_image_free(images[i]);
		}
	}
	csd_snapshot_free(snap);
	if (!decoded_any) {
		fprintf(stderr, "%s: %s: no ETMv3 or PTM trace source%s\n", prog, o->dir,
			o->any_id ? " with the requested ID" : "");
		return EXIT_USAGE;
	}
	return finish_status(ctx, io, kind == SLOT_FLOW);
}

static int cmd_packets(int argc, char **argv)
{
	struct options o;
	struct run_ctx ctx;
	parse_options(argc, argv, &o, 0);
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = o.format;
	ctx.out = stdout;
	return run_snapshot(&o, &ctx, SLOT_PACKETS);
}

static int cmd_decode(int argc, char **argv)
{
	struct options o;
	struct run_ctx ctx;
	parse_options(argc, argv, &o, 1);
	memset(&ctx, 0, sizeof(ctx));
	ctx.format = o.format;
	ctx.out = stdout;
	if (o.trace)
		return run_trace_file(&o, &ctx);
	return run_snapshot(&o, &ctx, SLOT_FLOW);
}

int main(int argc, char **argv)
{
	static char outbuf[1 << 16];
	setvbuf(stdout, outbuf, _IOFBF, sizeof(outbuf));
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
	if (strcmp(cmd, "decode") == 0)
		return cmd_decode(argc - 1, argv + 1);
	die_usage("unknown command '%s'", cmd);
	return EXIT_USAGE;
}
