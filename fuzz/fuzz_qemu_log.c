/*
 * fuzz_qemu_log.c - harness of the qemu exec log reader (tools/qemu_log.c,
 * the `csdec gen --qemu-log` input).
 *
 * Input: [0] bit 0: a filler line first; [1..2] little-endian: where the
 * FILE reading's chunk boundary falls in the log (with the filler); then
 * the log text (any bytes).
 *
 * The text is read twice: from memory (qemu_log_reader_init_mem) and as a
 * FILE (fmemopen) that starts with one filler line of F bytes, chosen so
 * that the reader's 16 KiB chunk boundary falls at an input-chosen byte of
 * the log (the FILE reader cannot be fed in pieces of the caller's
 * choosing; this moves its pieces instead). The filler is one bad line and
 * changes no reader state, so the FILE reading must give that bad line and
 * then exactly the memory reading, every line number one higher. Checked:
 *   - the reader ends: no more calls than lines + 2, then QEMU_LOG_END on
 *     every call;
 *   - counters: `insns` is the number of records returned, `bad_lines` the
 *     number of bad lines reported, `lines` the number of lines of the
 *     text, and every line is a record, a bad line or half of a cancelled
 *     pair (lines == insns + bad_lines + 2 * cancelled);
 *   - a bad line reports the current line, with a non-empty reason; bad
 *     line numbers and record line numbers each increase strictly;
 *   - a record is on a line at or before the current one, and is a valid
 *     A32 (4-aligned, no IT state) or T32 (2-aligned) instruction;
 *   - a model of the log written here from docs/qemu-log.md (the line
 *     formats, CR line ends, the 1024-byte limit, cancelling lines, the
 *     rules that make a Trace line bad) gives the same records (address,
 *     instruction set, IT state, line) and bad lines, in the same order,
 *     and the same number of cancelled ones;
 *   - a FILE that fails (a directory) gives QEMU_LOG_READ_ERROR once, then
 *     QEMU_LOG_END.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "../tools/qemu_log.h"

#define QLOG_HDR 3

struct qlog_event {
	int kind;               /* QEMU_LOG_INSN or QEMU_LOG_BAD_LINE */
	struct qemu_log_insn insn;
	uint64_t bad_line;
	const char *reason;
};

struct qlog_run {
	struct qlog_event *ev;
	size_t n, cap;
	uint64_t lines, insns, bad_lines, cancelled;
};

/* Lines of a text as the reader counts them: newline-terminated ones plus
 * a last one without a newline. */
static uint64_t qlog_count_lines(const uint8_t *t, size_t len)
{
	uint64_t n = 0;
	for (size_t i = 0; i < len; i++)
		n += t[i] == '\n';
	return n + (len && t[len - 1] != '\n');
}

static int qlog_hex(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* ---- a model of the log, from docs/qemu-log.md ---- */

struct qlog_cursor {
	const uint8_t *p, *end;
};

static int qlog_lit(struct qlog_cursor *c, const char *lit)
{
	size_t n = strlen(lit);
	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
		return 0;
	c->p += n;
	return 1;
}

/* 1 to max hex digits (max 16), or decimal with dec. */
static int qlog_num(struct qlog_cursor *c, unsigned max, int dec, uint64_t *v)
{
	unsigned n = 0;
	*v = 0;
	while (c->p < c->end) {
		int d = dec ? (*c->p >= '0' && *c->p <= '9' ? *c->p - '0' : -1) : qlog_hex(*c->p);
		if (d < 0)
			break;
		if (++n > max)
			return 0;
		*v = *v * (dec ? 10 : 16) + (uint64_t)d;
		c->p++;
	}
	return n > 0;
}

/* After "]": the end of the line or a space (then qemu's symbol name). */
static int qlog_tail(const struct qlog_cursor *c)
{
	return c->p == c->end || *c->p == ' ';
}

/* The events the reader must give for the text, in order. */
static void qlog_model(const uint8_t *t, size_t len, struct qlog_run *out)
{
	struct qemu_log_insn pending;
	uint64_t pending_host = 0, cpu = 0, line = 0;
	int has_pending = 0, cpu_known = 0;
	size_t pos = 0;

	memset(out, 0, sizeof(*out));
	memset(&pending, 0, sizeof(pending));
	while (pos < len) {
		const uint8_t *nl = memchr(t + pos, '\n', len - pos);
		size_t end = nl ? (size_t)(nl - t) : len;
		struct qlog_cursor c = { t + pos, t + end };
		int bad = 0;
		line++;
		pos = nl ? end + 1 : len;
		if (end - (size_t)(c.p - t) > QEMU_LOG_LINE_MAX) {
			bad = 1;
		} else {
			if (c.end > c.p && c.end[-1] == '\r')
				c.end--;
			struct qlog_cursor k = c;
			uint64_t tc, host, cs, pc, fl, cf;
			if (qlog_lit(&k, "Trace ") && qlog_num(&k, 9, 1, &tc) && qlog_lit(&k, ": 0x") &&
			    qlog_num(&k, 16, 0, &host) && qlog_lit(&k, " [") && qlog_num(&k, 16, 0, &cs) &&
			    qlog_lit(&k, "/") && qlog_num(&k, 16, 0, &pc) && qlog_lit(&k, "/") && qlog_num(&k, 8, 0, &fl) &&
			    qlog_lit(&k, "/") && qlog_num(&k, 8, 0, &cf) && qlog_lit(&k, "]") && qlog_tail(&k)) {
				struct qemu_log_insn rec = { (uint32_t)pc, (cs >> 23) & 1 ? CSD_ISA_THUMB : CSD_ISA_ARM,
							     (uint8_t)(cs >> 24), line };
				if ((cf & 0x1FF) != 1 || pc > 0xFFFFFFFFu || cs > 0xFFFFFFFFu || (cpu_known && tc != cpu) ||
				    (rec.isa == CSD_ISA_ARM && ((pc & 3) || rec.itstate)) ||
				    (rec.isa == CSD_ISA_THUMB && (pc & 1))) {
					bad = 1;
				} else {
					if (has_pending) {
						out->ev = fuzz_grow(out->ev, &out->cap, out->n + 1, sizeof(*out->ev));
						memset(&out->ev[out->n], 0, sizeof(out->ev[0]));
						out->ev[out->n].kind = QEMU_LOG_INSN;
						out->ev[out->n++].insn = pending;
					}
					pending = rec;
					pending_host = host;
					has_pending = 1;
					cpu_known = 1;
					cpu = tc;
				}
			} else if (k = c, qlog_lit(&k, "Stopped execution of TB chain before 0x") &&
					   qlog_num(&k, 16, 0, &host) && qlog_lit(&k, " [") && qlog_num(&k, 16, 0, &pc) &&
					   qlog_lit(&k, "]") && qlog_tail(&k)) {
				bad = !has_pending || pending.addr != pc || pending_host != host;
				if (!bad) {
					has_pending = 0;
					out->cancelled++;
				}
			} else if (k = c, qlog_lit(&k, "cpu_io_recompile: rewound execution of TB to ")) {
				bad = !qlog_num(&k, 16, 0, &pc) || !qlog_tail(&k) || !has_pending || pending.addr != pc;
				if (!bad) {
					has_pending = 0;
					out->cancelled++;
				}
			} else {
				bad = 1;
			}
		}
		if (bad) {
			out->ev = fuzz_grow(out->ev, &out->cap, out->n + 1, sizeof(*out->ev));
			memset(&out->ev[out->n], 0, sizeof(out->ev[0]));
			out->ev[out->n].kind = QEMU_LOG_BAD_LINE;
			out->ev[out->n++].bad_line = line;
		}
	}
	if (has_pending) {
		out->ev = fuzz_grow(out->ev, &out->cap, out->n + 1, sizeof(*out->ev));
		memset(&out->ev[out->n], 0, sizeof(out->ev[0]));
		out->ev[out->n].kind = QEMU_LOG_INSN;
		out->ev[out->n++].insn = pending;
	}
	out->lines = line;
}

/* Read to the end, checking what holds for any single reading. */
static void qlog_read(struct qemu_log_reader *r, struct qlog_run *out, uint64_t max_lines)
{
	struct qemu_log_insn in;
	uint64_t calls = 0, last_bad = 0, last_line = 0;
	int rc;

	memset(out, 0, sizeof(*out));
	while ((rc = qemu_log_next(r, &in)) != QEMU_LOG_END) {
		FUZZ_CHECK(++calls <= max_lines + 2);
		FUZZ_CHECK(rc == QEMU_LOG_INSN || rc == QEMU_LOG_BAD_LINE);
		out->ev = fuzz_grow(out->ev, &out->cap, out->n + 1, sizeof(*out->ev));
		struct qlog_event *e = &out->ev[out->n++];
		memset(e, 0, sizeof(*e));
		e->kind = rc;
		if (rc == QEMU_LOG_BAD_LINE) {
			FUZZ_CHECK(r->bad_line == r->lines && r->bad_line > last_bad);
			FUZZ_CHECK(r->bad_reason != NULL && r->bad_reason[0] != 0);
			last_bad = r->bad_line;
			e->bad_line = r->bad_line;
			e->reason = r->bad_reason;
			continue;
		}
		FUZZ_CHECK(in.line >= 1 && in.line <= r->lines && in.line > last_line);
		last_line = in.line;
		if (in.isa == CSD_ISA_ARM)
			FUZZ_CHECK((in.addr & 3) == 0 && in.itstate == 0);
		else
			FUZZ_CHECK(in.isa == CSD_ISA_THUMB && (in.addr & 1) == 0);
		e->insn = in;
	}
	for (int k = 0; k < 3; k++)
		FUZZ_CHECK(qemu_log_next(r, &in) == QEMU_LOG_END);
	out->lines = r->lines;
	out->insns = r->insns;
	out->bad_lines = r->bad_lines;
	out->cancelled = r->cancelled;
	size_t recs = 0;
	for (size_t i = 0; i < out->n; i++)
		recs += out->ev[i].kind == QEMU_LOG_INSN;
	FUZZ_CHECK(out->insns == recs && out->bad_lines == out->n - recs);
	FUZZ_CHECK(out->lines == out->insns + out->bad_lines + 2 * out->cancelled);
}

/* A FILE whose reads fail: READ_ERROR once, then the end. */
static void qlog_read_error_once(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	FILE *f = fopen("/", "r");
	if (!f)
		return;
	static struct qemu_log_reader r;
	struct qemu_log_insn in;
	qemu_log_reader_init_file(&r, f);
	FUZZ_CHECK(qemu_log_next(&r, &in) == QEMU_LOG_READ_ERROR);
	FUZZ_CHECK(qemu_log_next(&r, &in) == QEMU_LOG_END);
	FUZZ_CHECK(qemu_log_next(&r, &in) == QEMU_LOG_END);
	fclose(f);
	qemu_log_reader_init_file(&r, NULL);
	FUZZ_CHECK(qemu_log_next(&r, &in) == QEMU_LOG_END);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* About 18 KiB each: static, not on the stack. */
	static struct qemu_log_reader mem_reader, file_reader;

	qlog_read_error_once();
	if (size < QLOG_HDR)
		return 0;
	const uint8_t *text = data + QLOG_HDR;
	size_t len = size - QLOG_HDR;
	uint64_t lines = qlog_count_lines(text, len);

	struct qlog_run mem, file;
	qemu_log_reader_init_mem(&mem_reader, (const char *)text, len);
	qlog_read(&mem_reader, &mem, lines);
	FUZZ_CHECK(mem.lines == lines);

	/* The model: the same records and bad lines. */
	struct qlog_run model;
	qlog_model(text, len, &model);
	FUZZ_CHECK(model.lines == mem.lines && model.cancelled == mem.cancelled);
	FUZZ_CHECK(model.n == mem.n);
	for (size_t i = 0; i < mem.n; i++) {
		const struct qlog_event *a = &mem.ev[i], *b = &model.ev[i];
		if (a->kind != b->kind || (a->kind == QEMU_LOG_BAD_LINE && a->bad_line != b->bad_line) ||
		    (a->kind == QEMU_LOG_INSN && (a->insn.addr != b->insn.addr || a->insn.isa != b->insn.isa ||
						  a->insn.itstate != b->insn.itstate || a->insn.line != b->insn.line))) {
			fprintf(stderr, "event %zu: reader %s line %llu, model %s line %llu\n", i,
				a->kind == QEMU_LOG_INSN ? "record" : "bad", (unsigned long long)(a->kind == QEMU_LOG_INSN ? a->insn.line : a->bad_line),
				b->kind == QEMU_LOG_INSN ? "record" : "bad", (unsigned long long)(b->kind == QEMU_LOG_INSN ? b->insn.line : b->bad_line));
			FUZZ_CHECK(!"reader and model differ");
		}
	}
	free(model.ev);

	/* The FILE: filler line, then the text; byte `at` of the text lands
	 * on the start of the reader's second chunk. */
	size_t filler = 0;
	if (data[0] & 1) {
		size_t lim = len < QEMU_LOG_CHUNK - 1 ? len : QEMU_LOG_CHUNK - 1;
		size_t at = ((size_t)data[1] | (size_t)data[2] << 8) % (lim + 1);
		filler = QEMU_LOG_CHUNK - at;
	}
	size_t flen = filler + len;
	uint8_t *fbuf = malloc(flen ? flen : 1);
	FUZZ_CHECK(fbuf != NULL);
	if (filler) {
		memset(fbuf, 'x', filler - 1);
		fbuf[filler - 1] = '\n';
	}
	if (len)
		memcpy(fbuf + filler, text, len);
	FILE *f = flen ? fmemopen(fbuf, flen, "r") : fopen("/dev/null", "r");
	FUZZ_CHECK(f != NULL);
	qemu_log_reader_init_file(&file_reader, f);
	qlog_read(&file_reader, &file, lines + (filler != 0));
	fclose(f);
	free(fbuf);

	/* The same events, after the filler's bad line. */
	size_t skip = filler != 0;
	FUZZ_CHECK(file.lines == mem.lines + skip);
	FUZZ_CHECK(file.bad_lines == mem.bad_lines + skip);
	FUZZ_CHECK(file.insns == mem.insns && file.cancelled == mem.cancelled);
	FUZZ_CHECK(file.n == mem.n + skip);
	if (skip)
		FUZZ_CHECK(file.ev[0].kind == QEMU_LOG_BAD_LINE && file.ev[0].bad_line == 1);
	for (size_t i = 0; i < mem.n; i++) {
		const struct qlog_event *a = &mem.ev[i], *b = &file.ev[i + skip];
		FUZZ_CHECK(a->kind == b->kind);
		if (a->kind == QEMU_LOG_BAD_LINE) {
			FUZZ_CHECK(b->bad_line == a->bad_line + skip);
			FUZZ_CHECK(strcmp(a->reason, b->reason) == 0);
		} else {
			FUZZ_CHECK(a->insn.addr == b->insn.addr && a->insn.isa == b->insn.isa &&
				   a->insn.itstate == b->insn.itstate && b->insn.line == a->insn.line + skip);
		}
	}
	free(mem.ev);
	free(file.ev);
	return 0;
}
