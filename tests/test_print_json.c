/*
 * test_print_json.c - the tool's JSON Lines records and packets and its
 * text packet lines (tools/print.c, compiled in), which are built by hand
 * without printf, against the same lines made here with printf from the
 * formats the output is specified by: records and packets of every type
 * with random 64-bit fields and flags, as a plain source and as a
 * perf.data source (cpu, pid and tid, unknown ones too), and the numbers at the edges of put_dec's steps (9, 10, 99, 100,
 * 2^32 - 1, 2^32, 2^64 - 1); error reasons with characters to escape.
 */
/* (print.c's own, which it sets before its includes: these come first.) */
#define _DEFAULT_SOURCE
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "check.h"
#include "../tools/print.c"

/* ,"cpu":N[,"pid":N][,"tid":N] of a perf.data source: print.c's printf
 * form (json_perf), which the data records still print with. */
static void want_perf(FILE *f, const struct source_slot *s)
{
	json_perf(f, s);
}

static void want_bool(FILE *f, const char *key, int v)
{
	fprintf(f, ",\"%s\":%s", key, v ? "true" : "false");
}

/* ,"key":"str" with quotes, backslashes and control characters escaped
 * (JSON's rules, spelt out here apart from print.c's json_string, which
 * the lines under test escape with). */
static void want_string(FILE *f, const char *key, const char *str)
{
	char esc[4096];
	size_t n = 0;
	for (size_t i = 0; str[i] && n + 8 < sizeof(esc); i++) {
		const unsigned char c = (unsigned char)str[i];
		if (c >= 0x20 && c != '"' && c != '\\')
			esc[n++] = (char)c;
		else
			n += (size_t)snprintf(esc + n, sizeof(esc) - n, c >= 0x20 ? "\\%c" : "\\u%04x", c);
	}
	esc[n] = 0;
	fprintf(f, ",\"%s\":\"%s\"", key, esc);
}

/* The line of record r, by printf. (Instruction and data records keep
 * printers of their own: not here.) */
static void want_record(FILE *f, const struct source_slot *s, const struct csd_record *r)
{
	fprintf(f, "{\"type\":\"%s\",\"id\":%u", csd_rec_type_name((int)r->type), s->id);
	want_perf(f, s);
	fprintf(f, ",\"offset\":%" PRIu64, r->offset);
	switch (r->type) {
	case CSD_REC_RANGE:
		fprintf(f, ",\"addr\":\"0x%08" PRIx64 "\",\"end\":\"0x%08" PRIx64 "\",\"last\":\"0x%08" PRIx64
			   "\",\"count\":%" PRIu32 ",\"isa\":\"%s\",\"cond\":\"%s\"",
			r->addr, r->end, r->last, r->count, csd_isa_name(r->isa), csd_cond_name(r->cond));
		if (r->flags & CSD_RECF_BRANCH)
			want_bool(f, "taken", r->flags & CSD_RECF_TAKEN);
		break;
	case CSD_REC_EXCEPTION:
		fprintf(f, ",\"number\":%u,\"name\":\"%s\",\"return\":\"0x%08" PRIx64 "\",\"target\":\"0x%08" PRIx64 "\"",
			r->exception, csd_exception_name(&s->cfg, r->exception), r->addr, r->target);
		want_bool(f, "cancelled", r->flags & CSD_RECF_CANCELLED);
		break;
	case CSD_REC_TRACE_ON:
		fprintf(f, ",\"reason\":\"%s\",\"addr\":\"0x%08" PRIx64 "\",\"isa\":\"%s\"", csd_reason_name(r->reason),
			r->addr, csd_isa_name(r->isa));
		break;
	case CSD_REC_CONTEXT:
		fprintf(f, ",\"isa\":\"%s\"", csd_isa_name(r->isa));
		want_bool(f, "ns", r->flags & CSD_RECF_NS);
		want_bool(f, "hyp", r->flags & CSD_RECF_HYP);
		if (r->flags & CSD_RECF_CONTEXT_ID)
			fprintf(f, ",\"context_id\":\"0x%08" PRIx32 "\"", r->context_id);
		if (r->flags & CSD_RECF_VMID)
			fprintf(f, ",\"vmid\":%u", r->vmid);
		break;
	case CSD_REC_TIMESTAMP:
		fprintf(f, ",\"timestamp\":%" PRIu64, r->timestamp);
		break;
	case CSD_REC_NO_MEMORY:
		fprintf(f, ",\"addr\":\"0x%08" PRIx64 "\",\"count\":%" PRIu32, r->addr, r->count);
		break;
	case CSD_REC_ADDRESS_UNKNOWN:
		fprintf(f, ",\"count\":%" PRIu32 ",\"isa\":\"%s\"", r->count, csd_isa_name(r->isa));
		break;
	case CSD_REC_NOSYNC:
		fprintf(f, ",\"size\":%" PRIu64, r->size);
		break;
	case CSD_REC_ISA_UNSUPPORTED:
		fprintf(f, ",\"addr\":\"0x%08" PRIx64 "\",\"isa\":\"%s\"", r->addr, csd_isa_name(r->isa));
		break;
	case CSD_REC_ERROR:
		want_string(f, "reason", r->error ? r->error : "bad trace");
		break;
	case CSD_REC_TRUNCATED:
		fprintf(f, ",\"size\":%" PRIu64, r->size);
		want_string(f, "reason", r->error ? r->error : "packet cut by the end of the capture");
		break;
	case CSD_REC_DATA_LOST:
		if (r->last)
			fprintf(f, ",\"insn\":\"0x%08" PRIx64 "\"", r->last);
		break;
	default:
		break;
	}
	if (r->flags & CSD_RECF_CYCLES)
		fprintf(f, ",\"cycles\":%" PRIu64, r->cycles);
	fputs("}\n", f);
}

/* The line of packet p, by printf (its atoms as the text listing spells
 * them, atoms_string()). */
static void want_packet(FILE *f, uint8_t id, const struct source_slot *s, const struct csd_packet *p)
{
	char atoms[64];
	fprintf(f, "{\"packet\":\"%s\",\"id\":%u", csd_pkt_type_name((int)p->type), id);
	if (s)
		want_perf(f, s);
	fprintf(f, ",\"offset\":%" PRIu64 ",\"size\":%" PRIu64 ",\"bytes\":\"", p->offset, p->size);
	for (size_t i = 0; i < p->size && i < CSD_PKT_RAW_MAX; i++)
		fprintf(f, "%02x", p->raw[i]);
	fputc('"', f);
	switch (p->type) {
	case CSD_PKT_ISYNC:
		if (!(p->flags & CSD_PKTF_DATA_ONLY))
			fprintf(f, ",\"addr\":\"0x%08" PRIx32 "\"", p->addr);
		fprintf(f, ",\"reason\":\"%s\"", csd_reason_name(p->reason));
		if (p->flags & CSD_PKTF_LSIP)
			fprintf(f, ",\"lsip\":true,\"data_insn_addr\":\"0x%08" PRIx32 "\"", p->data_insn_addr);
		if (p->flags & CSD_PKTF_DATA_ONLY)
			want_bool(f, "data_only", 1);
		break;
	case CSD_PKT_PHEADER:
	case CSD_PKT_ATOM:
		atoms_string(p, atoms, sizeof(atoms));
		fprintf(f, ",\"atoms\":\"%s\",\"num\":%u", atoms, p->atoms.num);
		if (p->type == CSD_PKT_PHEADER)
			fprintf(f, ",\"w\":%u,\"format\":%u", p->atoms.w, p->atoms.format);
		break;
	case CSD_PKT_BRANCH:
	case CSD_PKT_WAYPOINT:
		fprintf(f, ",\"addr\":\"0x%08" PRIx32 "\",\"addr_bytes\":%u", p->addr, p->addr_bytes);
		if (p->flags & CSD_PKTF_EXCEPTION)
			fprintf(f, ",\"exception\":%u", p->exception);
		if (p->flags & CSD_PKTF_CANCEL)
			want_bool(f, "cancel", 1);
		if (p->flags & CSD_PKTF_RESUME)
			want_bool(f, "resume", 1);
		break;
	case CSD_PKT_CONTEXT_ID:
		fprintf(f, ",\"context_id\":\"0x%08" PRIx32 "\"", p->context_id);
		break;
	case CSD_PKT_VMID:
		fprintf(f, ",\"vmid\":%u", p->vmid);
		break;
	case CSD_PKT_TIMESTAMP:
		fprintf(f, ",\"timestamp\":%" PRIu64 ",\"ts_bits\":%u", p->timestamp, p->ts_bits);
		break;
	case CSD_PKT_NORMAL_DATA:
	case CSD_PKT_OOO_DATA:
	case CSD_PKT_OOO_PLACEHOLDER:
	case CSD_PKT_VALUE_NOT_TRACED:
		if (p->tag)
			fprintf(f, ",\"tag\":%u", p->tag);
		if (p->flags & CSD_PKTF_DATA_ADDR)
			fprintf(f, ",\"data_addr\":\"0x%08" PRIx32 "\"", p->data_addr);
		if (p->flags & CSD_PKTF_DATA_VALUE)
			fprintf(f, ",\"data_value\":\"0x%" PRIx32 "\",\"data_size\":%u", p->data_value, p->data_size);
		if (p->flags & CSD_PKTF_BIG_ENDIAN)
			want_bool(f, "big_endian", 1);
		break;
	case CSD_PKT_ERROR:
	case CSD_PKT_TRUNCATED:
		want_string(f, "reason", p->error ? p->error : "bad packet");
		break;
	default:
		break;
	}
	if ((p->flags & CSD_PKTF_ISA) && p->type != CSD_PKT_NOSYNC)
		fprintf(f, ",\"isa\":\"%s\"", csd_isa_name(p->isa));
	if (p->flags & CSD_PKTF_SECURITY) {
		want_bool(f, "ns", p->flags & CSD_PKTF_NS);
		want_bool(f, "hyp", p->flags & CSD_PKTF_HYP);
	}
	if (p->flags & CSD_PKTF_ALTISA)
		want_bool(f, "altisa", 1);
	if ((p->flags & CSD_PKTF_CONTEXT_ID) && p->type != CSD_PKT_CONTEXT_ID)
		fprintf(f, ",\"context_id\":\"0x%08" PRIx32 "\"", p->context_id);
	if (p->flags & CSD_PKTF_CYCLE_COUNT)
		fprintf(f, ",\"cycle_count\":%" PRIu32, p->cycle_count);
	fputs("}\n", f);
}

/* The text line of packet p, by printf: the formats `csdec packets`
 * prints with. */
static void want_packet_text(FILE *out, uint8_t id, const struct source_slot *s, const struct csd_packet *p)
{
	char atoms[64];
	if (s && s->perf)
		fprintf(out, "cpu%" PRId32 " ", s->cpu);
	fprintf(out, "0x%02x %8" PRIu64 "  %-12s", id, p->offset, csd_pkt_type_name((int)p->type));
	switch (p->type) {
	case CSD_PKT_NOSYNC:
	case CSD_PKT_ASYNC:
	case CSD_PKT_IGNORE:
		fprintf(out, " %" PRIu64 " bytes", p->size);
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
	case CSD_PKT_TRUNCATED:
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
	for (size_t i = 0; i < p->size && i < CSD_PKT_RAW_MAX; i++)
		fprintf(out, "%s%02x", i ? " " : "", p->raw[i]);
	if (p->size > CSD_PKT_RAW_MAX)
		fputs(" ...", out);
	fputs("]\n", out);
}

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* A random value, of a random size: small numbers and the edges of the
 * digit steps as often as large ones. */
static uint64_t value(void)
{
	static const uint64_t edges[] = { 0, 9, 10, 99, 100, 101, 999, 4294967295ull, 4294967296ull, 18446744073709551615ull };
	switch (next() % 4) {
	case 0:
		return edges[next() % (sizeof(edges) / sizeof(edges[0]))];
	case 1:
		return next() % 1000;
	case 2:
		return next() & 0xFFFFFFFFu;
	default:
		return next() >> (next() % 64);
	}
}

static long compared, differing;

/* r (else p, as JSON Lines or, text, as the text line) printed both ways:
 * the same line. */
static void compare(const struct source_slot *s, const struct csd_record *r, const struct csd_packet *p, int text)
{
	char got[1024], want[1024];
	FILE *g = fmemopen(got, sizeof(got), "w"), *w = fmemopen(want, sizeof(want), "w");
	CHECK(g && w);
	if (!g || !w)
		return;
	if (r) {
		print_record_json(g, s, r);
		want_record(w, s, r);
	} else {
		/* (A packet of no perf.data source has none.) */
		const struct source_slot *src = s->perf ? s : NULL;
		if (text) {
			print_packet_text_src(g, s->id, src, p);
			want_packet_text(w, s->id, src, p);
		} else {
			print_packet_json_src(g, s->id, src, p);
			want_packet(w, s->id, src, p);
		}
	}
	fputc(0, g);
	fputc(0, w);
	fclose(g);
	fclose(w);
	compared++;
	if (strcmp(got, want) != 0) {
		if (differing++ < 5)
			fprintf(stderr, "differs:\n  got  %s  want %s", got, want);
	}
}

int main(void)
{
	static const uint32_t types[] = {
		CSD_REC_RANGE,     CSD_REC_EXCEPTION,       CSD_REC_TRACE_ON,        CSD_REC_CONTEXT,
		CSD_REC_TIMESTAMP, CSD_REC_NO_MEMORY,       CSD_REC_ADDRESS_UNKNOWN, CSD_REC_NOSYNC,
		CSD_REC_ISA_UNSUPPORTED, CSD_REC_DATA_LOST, CSD_REC_TRIGGER,         CSD_REC_CYCLE_COUNT,
		CSD_REC_EXCEPTION_RETURN, CSD_REC_ERROR,    CSD_REC_TRUNCATED,
	};
	static const char *const errors[] = { NULL, "bad packet", "a \"quoted\" reason\\", "tab\there\x01" };
	struct source_slot s;
	for (long k = 0; k < 400000; k++) {
		memset(&s, 0, sizeof(s));
		s.id = (uint8_t)(next() % 0x70);
		s.cfg.core_profile = (uint8_t)(next() % 3);
		if (next() % 2) {
			s.perf = 1 + (int)(next() % 2);
			s.cpu = next() % 5 ? (int32_t)(next() % 300) : -1;
			s.pid = next() % 4 ? (int32_t)(value() & 0x7FFFFFFF) : -1;
			s.tid = next() % 4 ? (int32_t)(value() & 0x7FFFFFFF) : -1;
		}
		struct csd_record r;
		memset(&r, 0, sizeof(r));
		r.type = types[next() % (sizeof(types) / sizeof(types[0]))];
		r.offset = value();
		r.addr = value();
		r.end = value();
		r.last = value();
		r.target = value();
		r.count = (uint32_t)value();
		r.cycles = value();
		r.timestamp = value();
		r.size = value();
		r.isa = (uint8_t)(next() % 8);
		r.cond = (uint8_t)(next() % 4);
		r.reason = (uint8_t)(next() % 8);
		r.exception = (uint16_t)(next() % 600);
		r.context_id = (uint32_t)value();
		r.vmid = (uint8_t)next();
		r.flags = (uint32_t)next();
		r.error = errors[next() % 4];
		compare(&s, &r, NULL, 0);

		struct csd_packet p;
		memset(&p, 0, sizeof(p));
		p.type = 1 + (uint32_t)(next() % CSD_PKT_TRUNCATED);
		p.flags = (uint32_t)next();
		p.offset = value();
		p.size = next() % 4 ? next() % 40 : value();
		for (size_t i = 0; i < CSD_PKT_RAW_MAX; i++)
			p.raw[i] = (uint8_t)next();
		p.addr = (uint32_t)value();
		p.addr_bytes = (uint8_t)(next() % 6);
		p.isa = (uint8_t)(next() % 8);
		p.reason = (uint8_t)(next() % 8);
		p.vmid = (uint8_t)next();
		p.exception = (uint16_t)(next() % 600);
		p.ts_bits = (uint8_t)(next() % 65);
		p.data_size = (uint8_t)(next() % 4 ? next() % 5 : next()); /* (any byte: what no decoder gives, the fuzzer did) */
		p.cycle_count = (uint32_t)value();
		p.context_id = (uint32_t)value();
		p.timestamp = value();
		p.atoms.en = (uint32_t)next();
		p.atoms.num = (uint8_t)(next() % 40);
		p.atoms.w = (uint8_t)(next() % 6);
		p.atoms.format = (uint8_t)(next() % 5);
		p.data_insn_addr = (uint32_t)value();
		p.data_addr = (uint32_t)value();
		p.data_value = (uint32_t)value();
		p.tag = (uint8_t)(next() % 4);
		p.error = errors[next() % 4];
		compare(&s, NULL, &p, 0);
		compare(&s, NULL, &p, 1);
	}
	printf("test_print_json: %ld records and packets (JSON Lines, text) compared, %ld differ\n", compared, differing);
	CHECK(compared > 0);
	CHECK_EQ(differing, 0);
	return check_done("test_print_json");
}
