/*
 * fuzz_print.c - harness of the tool's printers (tools/print.c):
 * print_packet_text / _json and print_record_text / _json.
 *
 * Input: items of fuzz_print.h, each a packet or a record with every field
 * from the input (any type number, flags, sizes, 64-bit values; error
 * strings from the decoders' list or from the input, printable ASCII with
 * quotes and backslashes). Each item is printed in both formats to a
 * memory stream. The text listing runs as `csdec decode` runs it: with
 * capstone when the tool is built with it, and with the symbols of
 * examples/sample/demo.elf (path from CSD_FUZZ_PRINT_ELF, else that file
 * relative to the working directory; without it, no symbols); bit 2 of a
 * record's kind byte moves its address into one of those functions.
 * Checked:
 *   - each call prints exactly one line, ending in a newline; the text
 *     line starts with "0x" and holds only printable ASCII;
 *   - each JSON line is one valid JSON value (RFC 8259, checked strictly
 *     here: grammar, escapes, no control characters, UTF-8, no duplicate
 *     key), an object whose "packet" (packets) or "type" (records) is the
 *     type's name, whose "id" is the trace ID and whose "offset" is the
 *     packet's or record's (instruction records have no offset);
 *   - no crash, no ASan / UBSan finding.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz_common.h"
#include "fuzz_print.h"
#include "../tools/cli.h"
#include "../tools/symbols.h"

#define FPRINT_MAX_ITEMS 256
#define FPRINT_JSON_DEPTH 32
#define FPRINT_MAX_KEYS 64

/* ---- a strict JSON syntax checker ---- */

struct fprint_json {
	const char *s;
	size_t n, pos;
	/* Top-level object members: key and value spans. */
	size_t nkeys;
	size_t key_at[FPRINT_MAX_KEYS], key_len[FPRINT_MAX_KEYS];
	size_t val_at[FPRINT_MAX_KEYS], val_len[FPRINT_MAX_KEYS];
};

static int fprint_json_value(struct fprint_json *j, int depth);

static void fprint_json_ws(struct fprint_json *j)
{
	while (j->pos < j->n && (j->s[j->pos] == ' ' || j->s[j->pos] == '\t' || j->s[j->pos] == '\n' ||
				 j->s[j->pos] == '\r'))
		j->pos++;
}

static int fprint_hexdigit(char c)
{
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F');
}

/* One UTF-8 sequence at pos (not ASCII): its length, or 0 if invalid
 * (overlong forms, surrogates and values past U+10FFFF included). */
static size_t fprint_utf8(const struct fprint_json *j)
{
	const unsigned char *u = (const unsigned char *)j->s + j->pos;
	size_t left = j->n - j->pos, len;
	uint32_t cp, min;
	if (u[0] >= 0xC2 && u[0] <= 0xDF)
		len = 2, cp = u[0] & 0x1F, min = 0x80;
	else if (u[0] >= 0xE0 && u[0] <= 0xEF)
		len = 3, cp = u[0] & 0x0F, min = 0x800;
	else if (u[0] >= 0xF0 && u[0] <= 0xF4)
		len = 4, cp = u[0] & 0x07, min = 0x10000;
	else
		return 0;
	if (left < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((u[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (u[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

static int fprint_json_string(struct fprint_json *j)
{
	if (j->pos >= j->n || j->s[j->pos] != '"')
		return 0;
	j->pos++;
	while (j->pos < j->n) {
		unsigned char c = (unsigned char)j->s[j->pos];
		if (c == '"') {
			j->pos++;
			return 1;
		}
		if (c < 0x20)
			return 0;
		if (c == '\\') {
			if (j->pos + 1 >= j->n)
				return 0;
			char e = j->s[j->pos + 1];
			if (e == 'u') {
				if (j->pos + 6 > j->n)
					return 0;
				for (size_t i = 2; i < 6; i++)
					if (!fprint_hexdigit(j->s[j->pos + i]))
						return 0;
				j->pos += 6;
				continue;
			}
			if (!strchr("\"\\/bfnrt", e) || e == 0)
				return 0;
			j->pos += 2;
			continue;
		}
		if (c >= 0x80) {
			size_t len = fprint_utf8(j);
			if (!len)
				return 0;
			j->pos += len;
			continue;
		}
		j->pos++;
	}
	return 0;
}

static int fprint_digits(struct fprint_json *j)
{
	size_t start = j->pos;
	while (j->pos < j->n && j->s[j->pos] >= '0' && j->s[j->pos] <= '9')
		j->pos++;
	return j->pos > start;
}

static int fprint_json_number(struct fprint_json *j)
{
	if (j->pos < j->n && j->s[j->pos] == '-')
		j->pos++;
	if (j->pos < j->n && j->s[j->pos] == '0')
		j->pos++;
	else if (!fprint_digits(j))
		return 0;
	if (j->pos < j->n && j->s[j->pos] == '.') {
		j->pos++;
		if (!fprint_digits(j))
			return 0;
	}
	if (j->pos < j->n && (j->s[j->pos] == 'e' || j->s[j->pos] == 'E')) {
		j->pos++;
		if (j->pos < j->n && (j->s[j->pos] == '+' || j->s[j->pos] == '-'))
			j->pos++;
		if (!fprint_digits(j))
			return 0;
	}
	return 1;
}

static int fprint_json_literal(struct fprint_json *j, const char *lit)
{
	size_t n = strlen(lit);
	if (j->n - j->pos < n || memcmp(j->s + j->pos, lit, n) != 0)
		return 0;
	j->pos += n;
	return 1;
}

/* An object or array; depth 0 records the members' spans. */
static int fprint_json_container(struct fprint_json *j, int depth)
{
	char close = j->s[j->pos] == '{' ? '}' : ']';
	j->pos++;
	fprint_json_ws(j);
	if (j->pos < j->n && j->s[j->pos] == close) {
		j->pos++;
		return 1;
	}
	for (;;) {
		if (close == '}') {
			size_t k = j->pos;
			if (!fprint_json_string(j))
				return 0;
			if (depth == 0) {
				FUZZ_CHECK(j->nkeys < FPRINT_MAX_KEYS);
				for (size_t i = 0; i < j->nkeys; i++)
					if (j->key_len[i] == j->pos - k && memcmp(j->s + j->key_at[i], j->s + k, j->pos - k) == 0)
						return 0; /* duplicate key */
				j->key_at[j->nkeys] = k;
				j->key_len[j->nkeys] = j->pos - k;
			}
			fprint_json_ws(j);
			if (j->pos >= j->n || j->s[j->pos] != ':')
				return 0;
			j->pos++;
			fprint_json_ws(j);
			size_t v = j->pos;
			if (!fprint_json_value(j, depth + 1))
				return 0;
			if (depth == 0) {
				j->val_at[j->nkeys] = v;
				j->val_len[j->nkeys] = j->pos - v;
				j->nkeys++;
			}
		} else if (!fprint_json_value(j, depth + 1)) {
			return 0;
		}
		fprint_json_ws(j);
		if (j->pos >= j->n)
			return 0;
		if (j->s[j->pos] == close) {
			j->pos++;
			return 1;
		}
		if (j->s[j->pos] != ',')
			return 0;
		j->pos++;
		fprint_json_ws(j);
	}
}

static int fprint_json_value(struct fprint_json *j, int depth)
{
	if (depth > FPRINT_JSON_DEPTH || j->pos >= j->n)
		return 0;
	switch (j->s[j->pos]) {
	case '{':
	case '[':
		return fprint_json_container(j, depth);
	case '"':
		return fprint_json_string(j);
	case 't':
		return fprint_json_literal(j, "true");
	case 'f':
		return fprint_json_literal(j, "false");
	case 'n':
		return fprint_json_literal(j, "null");
	default:
		return fprint_json_number(j);
	}
}

/* The top-level member `key`'s value span, or NULL. */
static const char *fprint_json_member(const struct fprint_json *j, const char *key, size_t *len)
{
	size_t kl = strlen(key);
	for (size_t i = 0; i < j->nkeys; i++)
		if (j->key_len[i] == kl + 2 && memcmp(j->s + j->key_at[i] + 1, key, kl) == 0) {
			*len = j->val_len[i];
			return j->s + j->val_at[i];
		}
	return NULL;
}

static void fprint_fail_line(const char *what, const char *line, size_t len)
{
	fprintf(stderr, "%s: %.*s\n", what, (int)len, line);
}

/* A JSON line: one object, then the newline; the member checks. */
static void fprint_check_json(const char *line, size_t len, const char *type_key, const char *type_name, unsigned id,
			      int have_offset, uint64_t offset)
{
	struct fprint_json j;
	memset(&j, 0, sizeof(j));
	j.s = line;
	j.n = len;
	int ok = len > 0 && line[len - 1] == '\n' && line[0] == '{';
	if (ok) {
		j.n = len - 1;
		ok = fprint_json_value(&j, 0) && j.pos == j.n;
	}
	if (!ok)
		fprint_fail_line("invalid JSON", line, len);
	FUZZ_CHECK(ok);
	char want[64];
	size_t vl;
	const char *v = fprint_json_member(&j, type_key, &vl);
	snprintf(want, sizeof(want), "\"%s\"", type_name);
	if (!v || vl != strlen(want) || memcmp(v, want, vl) != 0)
		fprint_fail_line("bad type member", line, len);
	FUZZ_CHECK(v && vl == strlen(want) && memcmp(v, want, vl) == 0);
	v = fprint_json_member(&j, "id", &vl);
	snprintf(want, sizeof(want), "%u", id);
	FUZZ_CHECK(v && vl == strlen(want) && memcmp(v, want, vl) == 0);
	v = fprint_json_member(&j, "offset", &vl);
	if (have_offset) {
		snprintf(want, sizeof(want), "%llu", (unsigned long long)offset);
		FUZZ_CHECK(v && vl == strlen(want) && memcmp(v, want, vl) == 0);
	}
}

static void fprint_check_text(const char *line, size_t len)
{
	int ok = len >= 3 && line[len - 1] == '\n' && memcmp(line, "0x", 2) == 0;
	for (size_t i = 0; ok && i + 1 < len; i++)
		ok = line[i] >= 0x20 && line[i] <= 0x7E;
	if (!ok)
		fprint_fail_line("bad text line", line, len);
	FUZZ_CHECK(ok);
}

/* ---- the harness ---- */

static struct symtab *fprint_syms;

static void fprint_init(void)
{
	static int done;
	if (done)
		return;
	done = 1;
	const char *path = getenv("CSD_FUZZ_PRINT_ELF");
	if (!path || !*path)
		path = "examples/sample/demo.elf";
	char err[256];
	struct symtab *st = symtab_new();
	FUZZ_CHECK(st != NULL);
	if (symtab_add_elf(st, path, 0, err, sizeof(err)) > 0) {
		symtab_finish(st);
		fprint_syms = st;
	} else {
		symtab_free(st);
	}
	print_text_begin(fprint_syms);
}

/* The bytes the stream got since `from` (after a flush). */
struct fprint_stream {
	FILE *f;
	char *buf;
	size_t size;
};

static const char *fprint_since(struct fprint_stream *ms, size_t from, size_t *len)
{
	FUZZ_CHECK(fflush(ms->f) == 0);
	FUZZ_CHECK(ms->size >= from);
	*len = ms->size - from;
	/* Exactly one line: one newline, at the end; no NUL. */
	FUZZ_CHECK(*len > 0 && ms->buf[ms->size - 1] == '\n');
	FUZZ_CHECK(memchr(ms->buf + from, '\n', *len - 1) == NULL);
	FUZZ_CHECK(memchr(ms->buf + from, 0, *len) == NULL);
	return ms->buf + from;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	fprint_init();
	struct fuzz_print_in in = { data, size, 0 };
	struct fprint_stream ms = { NULL, NULL, 0 };
	ms.f = open_memstream(&ms.buf, &ms.size);
	FUZZ_CHECK(ms.f != NULL);
	char errbuf[256];

	for (unsigned items = 0; in.pos < in.n && items < FPRINT_MAX_ITEMS; items++) {
		unsigned kind = (unsigned)fuzz_print_get(&in, 1);
		struct source_slot slot;
		memset(&slot, 0, sizeof(slot));
		slot.id = (uint8_t)fuzz_print_get(&in, 1);
		slot.cfg.size = sizeof(slot.cfg);
		slot.cfg.protocol = CSD_PROTO_ETM3;
		slot.cfg.core_profile = kind & FUZZ_PRINT_CORE_M ? CSD_CORE_M : CSD_CORE_A;
		size_t from, len;
		const char *line;

		FUZZ_CHECK(fflush(ms.f) == 0);
		if (kind & FUZZ_PRINT_RECORD) {
			struct csd_record r;
			fuzz_print_get_record(&in, &r);
			r.error = fuzz_print_get_error(&in, kind, errbuf);
			if ((kind & FUZZ_PRINT_NEAR_SYMBOL) && fprint_syms && symtab_num_funcs(fprint_syms)) {
				const struct sym_func *f =
					symtab_func(fprint_syms, (size_t)(r.addr >> 32) % symtab_num_funcs(fprint_syms));
				r.addr = f->start + (r.addr & 0xFFFFFFFFu) % (f->end - f->start + 8);
			}
			from = ms.size;
			print_record_text(ms.f, &slot, &r);
			line = fprint_since(&ms, from, &len);
			fprint_check_text(line, len);
			from = ms.size;
			print_record_json(ms.f, &slot, &r);
			line = fprint_since(&ms, from, &len);
			fprint_check_json(line, len, "type", csd_rec_type_name((int)r.type), slot.id,
					  r.type != CSD_REC_INSN && r.type != CSD_REC_DATA, r.offset);
		} else {
			struct csd_packet p;
			fuzz_print_get_packet(&in, &p);
			p.error = fuzz_print_get_error(&in, kind, errbuf);
			from = ms.size;
			print_packet_text(ms.f, slot.id, &p);
			line = fprint_since(&ms, from, &len);
			fprint_check_text(line, len);
			from = ms.size;
			print_packet_json(ms.f, slot.id, &p);
			line = fprint_since(&ms, from, &len);
			fprint_check_json(line, len, "packet", csd_pkt_type_name((int)p.type), slot.id, 1, p.offset);
		}
	}
	fclose(ms.f);
	free(ms.buf);
	return 0;
}
