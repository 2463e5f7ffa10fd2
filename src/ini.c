/* ini.c - tokenizer for snapshot .ini files (see ini.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csdec.h"
#include "file.h"
#include "ini.h"

static void set_err(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (!err || !errlen)
		return;
	va_start(ap, fmt);
	vsnprintf(err, errlen, fmt, ap);
	va_end(ap);
}

static int lower(int c)
{
	return c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
}

int csdi_strcaseeq(const char *a, const char *b)
{
	while (*a && lower((unsigned char)*a) == lower((unsigned char)*b)) {
		a++;
		b++;
	}
	return *a == 0 && *b == 0;
}

int csdi_strcaseprefix(const char *s, const char *prefix)
{
	while (*prefix) {
		if (lower((unsigned char)*s) != lower((unsigned char)*prefix))
			return 0;
		s++;
		prefix++;
	}
	return 1;
}

int csdi_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;
	int digits = 0;

	if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
		for (s += 2; *s; s++, digits++) {
			int c = lower((unsigned char)*s), d;
			if (c >= '0' && c <= '9')
				d = c - '0';
			else if (c >= 'a' && c <= 'f')
				d = c - 'a' + 10;
			else
				return CSD_EFORMAT;
			if (v >> 60)
				return CSD_EFORMAT;
			v = v << 4 | (uint64_t)d;
		}
	} else {
		for (; *s; s++, digits++) {
			if (*s < '0' || *s > '9')
				return CSD_EFORMAT;
			unsigned d = (unsigned)(*s - '0');
			if (v > (UINT64_MAX - d) / 10)
				return CSD_EFORMAT;
			v = v * 10 + d;
		}
	}
	if (!digits)
		return CSD_EFORMAT;
	*out = v;
	return CSD_OK;
}

void csdi_ini_free(struct csdi_ini *ini)
{
	if (!ini)
		return;
	free(ini->text);
	free(ini->entries);
	free(ini->sections);
	memset(ini, 0, sizeof(*ini));
}

/* Read at most CSDI_INI_MAX_FILE bytes plus a terminating NUL, into a
 * buffer of about the file's size: a snapshot has dozens of small ini
 * files, whose text is kept while it is open, and a page-sized buffer
 * each would touch a page each. */
static int read_file(struct csdi_ini *ini, const char *path, const char *shown, char *err, size_t errlen)
{
	const char *what;
	const int fd = csdi_open_regular(path, &what);
	if (fd < 0) {
		if (what)
			set_err(err, errlen, "%s: cannot open: not a regular file (%s)", shown, what);
		else
			set_err(err, errlen, "%s: cannot open: %s", shown, strerror(errno));
		return CSD_EIO;
	}
	/* The size is only a hint: the file may change while it is read. */
	struct stat st;
	size_t cap = 256;
	if (fstat(fd, &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size < CSDI_INI_MAX_FILE)
		cap = (size_t)st.st_size + 2;
	size_t len = 0;
	char *buf = malloc(cap);
	int rc = buf ? CSD_OK : CSD_ENOMEM;
	while (rc == CSD_OK) {
		if (len + 1 == cap) {
			char *p = cap > CSDI_INI_MAX_FILE ? NULL : realloc(buf, cap * 2);
			if (!p) {
				rc = cap > CSDI_INI_MAX_FILE ? CSD_EFORMAT : CSD_ENOMEM;
				break;
			}
			buf = p;
			cap *= 2;
		}
		const ssize_t got = read(fd, buf + len, cap - 1 - len);
		if (got < 0 && errno == EINTR)
			continue;
		if (got < 0)
			rc = CSD_EIO;
		else if (got == 0)
			break;
		else
			len += (size_t)got;
	}
	const int saved = errno;
	close(fd);
	if (rc == CSD_OK && len > CSDI_INI_MAX_FILE)
		rc = CSD_EFORMAT;
	if (rc != CSD_OK) {
		free(buf);
		if (rc == CSD_EFORMAT)
			set_err(err, errlen, "%s: file too large (over %u bytes)", shown, (unsigned)CSDI_INI_MAX_FILE);
		else if (rc == CSD_EIO)
			set_err(err, errlen, "%s: cannot read: %s", shown, strerror(saved));
		else
			set_err(err, errlen, "%s: out of memory", shown);
		return rc;
	}
	buf[len] = 0;
	ini->text = buf;
	ini->size = len;
	return CSD_OK;
}

static int is_blank(char c)
{
	return c == ' ' || c == '\t';
}

/* Trim [s, e) of blanks in place; returns the start, NUL-terminated. */
static char *trim(char *s, char *e)
{
	while (s < e && is_blank(*s))
		s++;
	while (e > s && is_blank(e[-1]))
		e--;
	*e = 0;
	return s;
}

static int grow(void **arr, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap)
		return 0;
	/* (Small at first: an ini file of a snapshot has a few sections and
	 * entries, and its arrays are kept while the snapshot is open.) */
	size_t ncap = *cap ? *cap * 2 : 8;
	void *p = realloc(*arr, ncap * elem);
	if (!p)
		return -1;
	*arr = p;
	*cap = ncap;
	return 0;
}

struct entry_ref {
	const struct csdi_ini_entry *e;
};

static int cmp_entry(const void *a, const void *b)
{
	const struct csdi_ini_entry *x = ((const struct entry_ref *)a)->e;
	const struct csdi_ini_entry *y = ((const struct entry_ref *)b)->e;
	const char *p = x->key, *q = y->key;

	while (*p && lower((unsigned char)*p) == lower((unsigned char)*q)) {
		p++;
		q++;
	}
	int d = lower((unsigned char)*p) - lower((unsigned char)*q);
	if (d)
		return d;
	return x->line < y->line ? -1 : x->line > y->line;
}

/* A key given twice in one section is an error (which one would count?). */
static int check_duplicates(const struct csdi_ini *ini, const char *shown, char *err, size_t errlen)
{
	size_t most = 0;
	for (size_t s = 0; s < ini->n_sections; s++)
		if (ini->sections[s].count > most)
			most = ini->sections[s].count;
	if (most < 2)
		return CSD_OK;
	struct entry_ref *refs = malloc(most * sizeof(*refs));
	if (!refs) {
		set_err(err, errlen, "%s: out of memory", shown);
		return CSD_ENOMEM;
	}
	int rc = CSD_OK;
	for (size_t s = 0; s < ini->n_sections && rc == CSD_OK; s++) {
		const struct csdi_ini_section *sec = &ini->sections[s];
		for (size_t i = 0; i < sec->count; i++)
			refs[i].e = &ini->entries[sec->first + i];
		qsort(refs, sec->count, sizeof(*refs), cmp_entry);
		for (size_t i = 1; i < sec->count; i++) {
			if (csdi_strcaseeq(refs[i].e->key, refs[i - 1].e->key)) {
				set_err(err, errlen, "%s:%u: duplicate key '%s' in [%s] (first on line %u)",
					shown, refs[i].e->line, refs[i].e->key, sec->name, refs[i - 1].e->line);
				rc = CSD_EFORMAT;
				break;
			}
		}
	}
	free(refs);
	return rc;
}

static int parse(struct csdi_ini *ini, const char *shown, char *err, size_t errlen)
{
	size_t cap_e = 0, cap_s = 0;
	unsigned line = 0;
	char *p = ini->text, *end = ini->text + ini->size;

	/* A UTF-8 byte-order mark (editors on Windows write one) is not content. */
	if (ini->size >= 3 && memcmp(p, "\xEF\xBB\xBF", 3) == 0)
		p += 3;

	if (memchr(ini->text, 0, ini->size)) {
		size_t at = strlen(ini->text);
		unsigned l = 1;
		for (size_t i = 0; i < at; i++)
			l += ini->text[i] == '\n';
		set_err(err, errlen, "%s:%u: binary data (NUL byte)", shown, l);
		return CSD_EFORMAT;
	}
	while (p < end) {
		char *nl = memchr(p, '\n', (size_t)(end - p));
		char *eol = nl ? nl : end;
		line++;
		if (eol - p > CSDI_INI_MAX_LINE) {
			set_err(err, errlen, "%s:%u: line too long (over %u bytes)", shown, line,
				(unsigned)CSDI_INI_MAX_LINE);
			return CSD_EFORMAT;
		}
		/* Content ends at a comment or CR. */
		char *c = p;
		while (c < eol && *c != ';' && *c != '#' && *c != '\r') {
			if ((unsigned char)*c < 0x20 && *c != '\t') {
				set_err(err, errlen, "%s:%u: unexpected control character 0x%02x", shown, line,
					(unsigned)(unsigned char)*c);
				return CSD_EFORMAT;
			}
			c++;
		}
		char *s = trim(p, c);
		char *next = nl ? nl + 1 : end;
		size_t len = strlen(s);
		if (len == 0) {
			p = next;
			continue;
		}
		if (s[0] == '[') {
			if (s[len - 1] != ']') {
				set_err(err, errlen, "%s:%u: expected ']' at the end of the section header", shown, line);
				return CSD_EFORMAT;
			}
			char *name = trim(s + 1, s + len - 1);
			if (!*name) {
				set_err(err, errlen, "%s:%u: empty section name", shown, line);
				return CSD_EFORMAT;
			}
			if (grow((void **)&ini->sections, &cap_s, ini->n_sections, sizeof(*ini->sections)))
				goto nomem;
			ini->sections[ini->n_sections++] = (struct csdi_ini_section){ name, line, ini->n_entries, 0 };
			p = next;
			continue;
		}
		char *eq = strchr(s, '=');
		if (!eq || eq == s) {
			set_err(err, errlen, "%s:%u: expected key=value", shown, line);
			return CSD_EFORMAT;
		}
		if (!ini->n_sections) {
			set_err(err, errlen, "%s:%u: key=value before the first [section]", shown, line);
			return CSD_EFORMAT;
		}
		char *key = trim(s, eq);
		char *val = trim(eq + 1, s + len);
		size_t vlen = strlen(val);
		if (vlen >= 2 && (val[0] == '"' || val[0] == '\'') && val[vlen - 1] == val[0]) {
			val[vlen - 1] = 0;
			val++;
		}
		if (grow((void **)&ini->entries, &cap_e, ini->n_entries, sizeof(*ini->entries)))
			goto nomem;
		ini->entries[ini->n_entries++] = (struct csdi_ini_entry){ key, val, line,
									   (unsigned)(ini->n_sections - 1) };
		ini->sections[ini->n_sections - 1].count++;
		p = next;
	}
	return check_duplicates(ini, shown, err, errlen);
nomem:
	set_err(err, errlen, "%s: out of memory", shown);
	return CSD_ENOMEM;
}

int csdi_ini_load(struct csdi_ini *ini, const char *path, const char *shown, char *err, size_t errlen)
{
	memset(ini, 0, sizeof(*ini));
	int rc = read_file(ini, path, shown, err, errlen);
	if (rc == CSD_OK)
		rc = parse(ini, shown, err, errlen);
	if (rc != CSD_OK)
		csdi_ini_free(ini);
	return rc;
}

const struct csdi_ini_section *csdi_ini_section(const struct csdi_ini *ini, const char *name)
{
	for (size_t i = 0; i < ini->n_sections; i++)
		if (csdi_strcaseeq(ini->sections[i].name, name))
			return &ini->sections[i];
	return NULL;
}

const struct csdi_ini_entry *csdi_ini_get(const struct csdi_ini *ini, const struct csdi_ini_section *sec,
					  const char *key)
{
	if (!sec)
		return NULL;
	for (size_t i = 0; i < sec->count; i++)
		if (csdi_strcaseeq(ini->entries[sec->first + i].key, key))
			return &ini->entries[sec->first + i];
	return NULL;
}
