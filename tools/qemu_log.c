/*
 * qemu_log.c - reader of qemu-user's "-d exec,nochain" log of a
 * single-stepped AArch32 program (qemu_log.h; the line formats and what
 * they mean are in docs/qemu-log.md).
 */
#include "qemu_log.h"

#include <string.h>

/* TB cflags: bits 8:0 are the instruction limit of the translation block
 * (CF_COUNT_MASK); 1 under -singlestep. */
#define CFLAGS_COUNT_MASK 0x1FFu
/* cs_base holds the AArch32 TB flags since qemu 6.1: Thumb in bit 23,
 * CPSR.IT (CONDEXEC) in bits 31:24. */
#define CS_BASE_THUMB (1u << 23)
#define CS_BASE_IT_SHIFT 24

static const char TRACE_PREFIX[] = "Trace ";
static const char STOPPED_PREFIX[] = "Stopped execution of TB chain before ";
static const char LINKING_PREFIX[] = "Linking TBs ";
/* qemu-system with -icount: an instruction that touched a device register
 * is abandoned and translated again; the next Trace line repeats it. */
static const char REWOUND_PREFIX[] = "cpu_io_recompile: rewound execution of TB to ";

static void reader_init(struct qemu_log_reader *r)
{
	memset(r, 0, sizeof *r);
	r->bad_reason = "";
}

void qemu_log_reader_init_file(struct qemu_log_reader *r, FILE *f)
{
	reader_init(r);
	r->file = f;
	r->src = r->chunk;
	if (!f)
		r->at_end = 1;
}

void qemu_log_reader_init_mem(struct qemu_log_reader *r, const char *text, size_t len)
{
	reader_init(r);
	r->src = text ? text : "";
	r->src_len = text ? len : 0;
	r->at_end = 1;   /* nothing beyond the given text */
}

/* More bytes into src; 0 when there are none (end or error). */
static int refill(struct qemu_log_reader *r)
{
	size_t n;

	if (r->at_end)
		return 0;
	n = fread(r->chunk, 1, sizeof r->chunk, r->file);
	r->src = r->chunk;
	r->src_len = n;
	r->src_pos = 0;
	if (n == 0) {
		r->at_end = 1;
		r->read_error = ferror(r->file) != 0;
	}
	return n != 0;
}

/* The next line into r->line (without its newline; a final line without
 * one counts too). Bytes beyond QEMU_LOG_LINE_MAX are dropped and the line
 * is marked overlong. Returns 1 for a line, 0 at the end. Every call
 * consumes at least one byte or reaches the end. */
static int read_line(struct qemu_log_reader *r)
{
	int have_bytes = 0;

	r->line_len = 0;
	r->line_overlong = 0;
	for (;;) {
		const char *start, *nl;
		size_t avail, take, room;

		if (r->src_pos >= r->src_len && !refill(r))
			return have_bytes;
		start = r->src + r->src_pos;
		avail = r->src_len - r->src_pos;
		nl = memchr(start, '\n', avail);
		take = nl ? (size_t)(nl - start) : avail;
		room = QEMU_LOG_LINE_MAX - r->line_len;
		if (take > room) {
			r->line_overlong = 1;
			memcpy(r->line + r->line_len, start, room);
			r->line_len += room;
		} else {
			memcpy(r->line + r->line_len, start, take);
			r->line_len += take;
		}
		have_bytes = 1;
		r->src_pos += take;
		if (nl) {
			r->src_pos++;   /* the newline */
			return 1;
		}
	}
}

/* --- field parsing on [p, end) */

struct cursor {
	const char *p, *end;
};

static int take_literal(struct cursor *c, const char *lit)
{
	size_t n = strlen(lit);

	if ((size_t)(c->end - c->p) < n || memcmp(c->p, lit, n) != 0)
		return 0;
	c->p += n;
	return 1;
}

static int hex_value(char ch)
{
	if (ch >= '0' && ch <= '9')
		return ch - '0';
	if (ch >= 'a' && ch <= 'f')
		return ch - 'a' + 10;
	if (ch >= 'A' && ch <= 'F')
		return ch - 'A' + 10;
	return -1;
}

/* 1 to max_digits hex digits (max_digits <= 16). */
static int take_hex(struct cursor *c, unsigned max_digits, uint64_t *v)
{
	unsigned n = 0;
	uint64_t x = 0;
	int d;

	while (c->p < c->end && (d = hex_value(*c->p)) >= 0) {
		if (++n > max_digits)
			return 0;
		x = x << 4 | (uint64_t)d;
		c->p++;
	}
	*v = x;
	return n > 0;
}

/* 1 to 9 decimal digits. */
static int take_decimal(struct cursor *c, uint64_t *v)
{
	unsigned n = 0;
	uint64_t x = 0;

	while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
		if (++n > 9)
			return 0;
		x = x * 10 + (uint64_t)(*c->p - '0');
		c->p++;
	}
	*v = x;
	return n > 0;
}

/* A host pointer as glibc's %p prints it: 0x and hex digits. */
static int take_host_pointer(struct cursor *c, uint64_t *v)
{
	return take_literal(c, "0x") && take_hex(c, 16, v);
}

/* After the closing bracket: the end, or a space and qemu's symbol name
 * (possibly empty), which is not needed. */
static int at_line_tail(const struct cursor *c)
{
	return c->p == c->end || *c->p == ' ';
}

struct trace_fields {
	uint64_t cpu, host, cs_base, pc, flags, cflags;
};

/* "Trace CPU: HOST [CS_BASE/PC/FLAGS/CFLAGS] SYMBOL" */
static int parse_trace(struct cursor c, struct trace_fields *t)
{
	return take_literal(&c, TRACE_PREFIX) && take_decimal(&c, &t->cpu) &&
	       take_literal(&c, ": ") && take_host_pointer(&c, &t->host) &&
	       take_literal(&c, " [") && take_hex(&c, 16, &t->cs_base) &&
	       take_literal(&c, "/") && take_hex(&c, 16, &t->pc) &&
	       take_literal(&c, "/") && take_hex(&c, 8, &t->flags) &&
	       take_literal(&c, "/") && take_hex(&c, 8, &t->cflags) &&
	       take_literal(&c, "]") && at_line_tail(&c);
}

/* "Stopped execution of TB chain before HOST [PC] SYMBOL" */
static int parse_stopped(struct cursor c, uint64_t *host, uint64_t *pc)
{
	return take_literal(&c, STOPPED_PREFIX) && take_host_pointer(&c, host) &&
	       take_literal(&c, " [") && take_hex(&c, 16, pc) &&
	       take_literal(&c, "]") && at_line_tail(&c);
}

static int starts_with(const struct cursor *c, const char *lit)
{
	struct cursor probe = *c;
	return take_literal(&probe, lit);
}

static int bad(struct qemu_log_reader *r, const char *reason)
{
	r->bad_lines++;
	r->bad_line = r->lines;
	r->bad_reason = reason;
	return QEMU_LOG_BAD_LINE;
}

/* A Trace line: the new pending record, or why it is bad (NULL if good). */
static const char *take_trace(struct qemu_log_reader *r, const struct trace_fields *t,
                              struct qemu_log_insn *rec)
{
	uint32_t cs_base = (uint32_t)t->cs_base;

	if ((t->cflags & CFLAGS_COUNT_MASK) != 1)
		return "translation block of several instructions (run qemu with -singlestep)";
	if (t->pc > 0xFFFFFFFFu || t->cs_base > 0xFFFFFFFFu)
		return "address beyond 32 bits (not an AArch32 log)";
	if (r->cpu_known && t->cpu != r->cpu)
		return "a second CPU (threads are not supported)";
	rec->addr = (uint32_t)t->pc;
	rec->isa = (cs_base & CS_BASE_THUMB) ? CSD_ISA_THUMB : CSD_ISA_ARM;
	rec->itstate = (uint8_t)(cs_base >> CS_BASE_IT_SHIFT);
	rec->line = r->lines;
	if (rec->isa == CSD_ISA_ARM && (rec->addr & 3u))
		return "ARM instruction at an address that is not a multiple of 4";
	if (rec->isa == CSD_ISA_THUMB && (rec->addr & 1u))
		return "Thumb instruction at an odd address";
	if (rec->isa == CSD_ISA_ARM && rec->itstate)
		return "IT state in ARM state";
	r->cpu_known = 1;
	r->cpu = t->cpu;
	return NULL;
}

int qemu_log_next(struct qemu_log_reader *r, struct qemu_log_insn *insn)
{
	for (;;) {
		struct cursor c;
		struct trace_fields t;
		struct qemu_log_insn rec;
		uint64_t host, pc;
		const char *why;
		size_t len;

		if (!read_line(r)) {
			if (r->has_pending) {
				r->has_pending = 0;
				*insn = r->pending;
				r->insns++;
				return QEMU_LOG_INSN;
			}
			if (r->read_error) {
				r->read_error = 0;   /* reported once; then the end */
				r->bad_reason = "read error";
				return QEMU_LOG_READ_ERROR;
			}
			return QEMU_LOG_END;
		}
		r->lines++;
		if (r->line_overlong)
			return bad(r, "line too long");
		len = r->line_len;
		if (len > 0 && r->line[len - 1] == '\r')
			len--;   /* CRLF line ends */
		c.p = r->line;
		c.end = r->line + len;

		if (parse_trace(c, &t)) {
			why = take_trace(r, &t, &rec);
			if (why)
				return bad(r, why);
			if (r->has_pending) {
				*insn = r->pending;
				r->pending = rec;
				r->pending_host = t.host;
				r->insns++;
				return QEMU_LOG_INSN;
			}
			r->pending = rec;
			r->pending_host = t.host;
			r->has_pending = 1;
			continue;
		}
		if (parse_stopped(c, &host, &pc)) {
			/* qemu left the TB of the Trace line just before without
			 * executing it: that instruction did not run (yet). */
			if (!r->has_pending || r->pending.addr != pc || r->pending_host != host)
				return bad(r, "\"Stopped execution\" line without the Trace line of its block before it");
			r->has_pending = 0;
			r->cancelled++;
			continue;
		}
		if (starts_with(&c, REWOUND_PREFIX)) {
			struct cursor rc = c;
			if (!take_literal(&rc, REWOUND_PREFIX) || !take_hex(&rc, 16, &pc) || !at_line_tail(&rc) ||
			    !r->has_pending || r->pending.addr != pc)
				return bad(r, "\"rewound\" line without the Trace line of its instruction before it");
			r->has_pending = 0;
			r->cancelled++;
			continue;
		}
		if (starts_with(&c, LINKING_PREFIX))
			return bad(r, "chained translation blocks (run qemu with -d nochain)");
		if (starts_with(&c, TRACE_PREFIX) || starts_with(&c, STOPPED_PREFIX))
			return bad(r, "malformed exec log line");
		return bad(r, "not a qemu exec log line");
	}
}
