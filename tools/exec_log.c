/* exec_log.c - reader of `csdec gen --exec-log` logs (see exec_log.h). */
#include "exec_log.h"

#include <string.h>

#include "csdec.h"

void exec_log_reader_init_file(struct exec_log_reader *r, FILE *f)
{
	memset(r, 0, offsetof(struct exec_log_reader, chunk));
	r->file = f;
}

void exec_log_reader_init_mem(struct exec_log_reader *r, const char *text, size_t len)
{
	memset(r, 0, offsetof(struct exec_log_reader, chunk));
	r->src = text;
	r->src_len = len;
	r->at_end = 1;
}

/* The next line into r->line (without its newline); 0 at the end. */
static int read_line(struct exec_log_reader *r)
{
	r->line_len = 0;
	r->line_overlong = 0;
	int any = 0;
	for (;;) {
		if (r->src_pos == r->src_len) {
			if (r->at_end || !r->file)
				return any;
			size_t n = fread(r->chunk, 1, sizeof(r->chunk), r->file);
			if (n == 0) {
				if (ferror(r->file))
					r->read_error = 1;
				r->at_end = 1;
				return any;
			}
			r->src = r->chunk;
			r->src_len = n;
			r->src_pos = 0;
		}
		const char *p = r->src + r->src_pos;
		size_t left = r->src_len - r->src_pos;
		const char *nl = memchr(p, '\n', left);
		size_t take = nl ? (size_t)(nl - p) : left;
		any = 1;
		if (r->line_len + take > EXEC_LOG_LINE_MAX) {
			r->line_overlong = 1;
		} else {
			memcpy(r->line + r->line_len, p, take);
			r->line_len += take;
		}
		r->src_pos += take + (nl != NULL);
		if (nl)
			return 1;
	}
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* A hex number of 1 to max_digits digits at *p, then a blank or the end. */
static int hex_field(const char **p, unsigned max_digits, uint64_t *out)
{
	uint64_t v = 0;
	unsigned n = 0;
	const char *s = *p;
	for (;; s++, n++) {
		unsigned d;
		if (*s >= '0' && *s <= '9')
			d = (unsigned)(*s - '0');
		else if (*s >= 'a' && *s <= 'f')
			d = (unsigned)(*s - 'a' + 10);
		else if (*s >= 'A' && *s <= 'F')
			d = (unsigned)(*s - 'A' + 10);
		else
			break;
		if (n == max_digits)
			return 0;
		v = v << 4 | d;
	}
	if (n == 0 || (*s && !is_blank(*s)))
		return 0;
	*p = s;
	*out = v;
	return 1;
}

static const char *skip_blanks(const char *s)
{
	while (is_blank(*s))
		s++;
	return s;
}

static int bad(struct exec_log_reader *r, const char *why)
{
	r->bad_lines++;
	r->bad_line = r->lines;
	r->bad_reason = why;
	return EXEC_LOG_BAD_LINE;
}

static int parse(struct exec_log_reader *r, struct exec_log_item *it)
{
	const char *s = r->line;
	char kind = *s;
	memset(it, 0, sizeof(*it));
	it->line = r->lines;
	if (kind != 'I' && kind != 'R' && kind != 'W')
		return bad(r, "not an I, R or W line or a comment");
	if (!is_blank(s[1]))
		return bad(r, "no blank after the line's letter");
	s = skip_blanks(s + 1);
	uint64_t a;
	if (!hex_field(&s, 8, &a))
		return bad(r, "address is not 1-8 hex digits");
	it->addr = (uint32_t)a;
	s = skip_blanks(s);
	if (kind == 'I') {
		if (!strncmp(s, "A32", 3))
			it->isa = CSD_ISA_ARM;
		else if (!strncmp(s, "T32", 3))
			it->isa = CSD_ISA_THUMB;
		else
			return bad(r, "instruction set is not A32 or T32");
		if (*skip_blanks(s + 3))
			return bad(r, "text after the instruction set");
		if (it->isa == CSD_ISA_ARM ? (it->addr & 3) : (it->addr & 1))
			return bad(r, "instruction address not aligned for its instruction set");
		r->have_insn = 1;
		r->insns++;
		return EXEC_LOG_INSN;
	}
	if (!r->have_insn)
		return bad(r, "data access before any instruction");
	unsigned size = 0;
	if ((*s == '1' || *s == '2' || *s == '4' || *s == '8') && (!s[1] || is_blank(s[1])))
		size = (unsigned)(*s - '0');
	else
		return bad(r, "size is not 1, 2, 4 or 8");
	s = skip_blanks(s + 1);
	uint64_t v;
	if (!hex_field(&s, 16, &v))
		return bad(r, "value is not 1-16 hex digits");
	if (size < 8 && (v >> (8 * size)))
		return bad(r, "value wider than its size");
	if (*skip_blanks(s))
		return bad(r, "text after the value");
	it->dir = kind == 'R' ? 1 : 2;
	it->size = (uint8_t)size;
	it->value = v;
	r->accesses++;
	return EXEC_LOG_ACCESS;
}

int exec_log_next(struct exec_log_reader *r, struct exec_log_item *it)
{
	memset(it, 0, sizeof(*it));
	for (;;) {
		if (r->read_error)
			return EXEC_LOG_READ_ERROR;
		if (!read_line(r))
			return r->read_error ? EXEC_LOG_READ_ERROR : EXEC_LOG_END;
		r->lines++;
		if (r->line_overlong)
			return bad(r, "line too long");
		if (r->line_len && r->line[r->line_len - 1] == '\r')
			r->line_len--;
		if (memchr(r->line, '\0', r->line_len))
			return bad(r, "NUL byte in the line");
		r->line[r->line_len] = '\0';
		const char *s = skip_blanks(r->line);
		if (!*s || r->line[0] == '#')
			continue;
		return parse(r, it);
	}
}
